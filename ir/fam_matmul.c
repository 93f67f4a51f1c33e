/*
 * fam_matmul.c - shape and dtype inference for MatMul and Gemm.
 *
 * MatMul follows numpy.matmul: a 1-D first operand is promoted to 1xK and a
 * 1-D second operand to Kx1, and the promoted axis is dropped from the
 * result; the leading (batch) dims of both broadcast multidirectionally.
 * Gemm takes exactly rank-2 A and B, optionally transposed, and a C that
 * broadcasts unidirectionally to MxN (C is optional from opset 11).
 */
#include "infer_impl.h"
#include "qweights.h"

static enum rl_status infer_matmul(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *a = rl_infer_in(g, n, 0), *b = rl_infer_in(g, n, 1);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	enum rl_status st = rl_infer_dtype_same(g, node, 0, 1);
	if (st != RL_OK)
		return st;
	struct rl_shape out = {.rank = -1};
	const struct rl_shape *sa = &a->shape, *sb = &b->shape;
	char ba[RL_SSTR], bb[RL_SSTR];
	if (sa->rank == 0 || sb->rank == 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "MatMul of %s by %s: operands must have rank >= 1",
		                      rl_sstr(sa, ba), rl_sstr(sb, bb));
	if (sa->rank < 0 || sb->rank < 0)
		return rl_infer_set(g, node, 0, a->dtype, &out);
	/* promote 1-D operands to matrices */
	struct rl_shape pa = *sa, pb = *sb;
	if (pa.rank == 1) {
		pa.rank = 2;
		pa.d[1] = pa.d[0];
		pa.d[0] = rl_dim_num(1);
	}
	if (pb.rank == 1) {
		pb.rank = 2;
		pb.d[1] = rl_dim_num(1);
	}
	struct rl_dim k1 = pa.d[pa.rank - 1], k2 = pb.d[pb.rank - 2];
	if (rl_dim_differ(k1, k2))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "MatMul of %s by %s: inner dimensions %lld and %lld "
		                      "differ", rl_sstr(sa, ba), rl_sstr(sb, bb),
		                      (long long)k1.v, (long long)k2.v);
	struct rl_shape ta = pa, tb = pb, batch;
	ta.rank -= 2;
	tb.rank -= 2;
	if (!rl_shape_broadcast(&ta, &tb, &batch))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "MatMul of %s by %s: batch dimensions do not broadcast",
		                      rl_sstr(sa, ba), rl_sstr(sb, bb));
	out = batch;
	if (sa->rank >= 2)
		out.d[out.rank++] = pa.d[pa.rank - 2];
	if (sb->rank >= 2)
		out.d[out.rank++] = pb.d[pb.rank - 1];
	return rl_infer_set(g, node, 0, a->dtype, &out);
}

static enum rl_status infer_gemm(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *a = rl_infer_in(g, n, 0), *b = rl_infer_in(g, n, 1);
	struct rl_value *c = rl_infer_in(g, n, 2);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	enum rl_status st = rl_infer_dtype_same(g, node, 0, 1);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 2);
	if (st != RL_OK)
		return st;
	char ba[RL_SSTR], bb[RL_SSTR], bc[RL_SSTR];
	const struct rl_shape *sa = &a->shape, *sb = &b->shape;
	struct rl_shape out = {.rank = -1};
	if (sa->rank < 0 || sb->rank < 0)
		return rl_infer_set(g, node, 0, a->dtype, &out);
	if (sa->rank != 2 || sb->rank != 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "Gemm of %s by %s: A and B must be matrices (rank 2)",
		                      rl_sstr(sa, ba), rl_sstr(sb, bb));
	bool ta = rl_node_attr_int(n, "transA", 0) != 0;
	bool tb = rl_node_attr_int(n, "transB", 0) != 0;
	struct rl_dim m = sa->d[ta ? 1 : 0], ka = sa->d[ta ? 0 : 1];
	struct rl_dim kb = sb->d[tb ? 1 : 0], nn = sb->d[tb ? 0 : 1];
	if (rl_dim_differ(ka, kb))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "Gemm of %s%s by %s%s: inner dimensions %lld and %lld "
		                      "differ", rl_sstr(sa, ba), ta ? " (transposed)" : "",
		                      rl_sstr(sb, bb), tb ? " (transposed)" : "",
		                      (long long)ka.v, (long long)kb.v);
	out.rank = 2;
	out.d[0] = m;
	out.d[1] = nn;
	if (c && c->shape.rank >= 0) {
		const struct rl_shape *sc = &c->shape;
		bool ok = sc->rank <= 2;
		for (int i = 0; ok && i < sc->rank; i++) {
			struct rl_dim d = sc->d[i], o = out.d[2 - sc->rank + i];
			ok = d.v == 1 || !rl_dim_differ(d, o);
		}
		if (!ok)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "Gemm bias C of shape %s does not broadcast to the "
			                      "%s product", rl_sstr(sc, bc), rl_sstr(&out, ba));
	}
	return rl_infer_set(g, node, 0, a->dtype, &out);
}

enum rl_status rl_infer_matmul(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_MatMul: return infer_matmul(g, node);
	case RL_OP_Gemm: return infer_gemm(g, node);
	case RL_OP_QuantMatMul: return rl_infer_quant_matmul(g, node); /* ir/qweights.c */
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no matmul shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * MatMul: every output element is a K-long dot product, so
 *   MACs = numel(Y) * K,  FLOPs = 2 * MACs
 * with K the last dim of A (of the 1-D A itself); numel(Y) already holds the
 * broadcast batch dims and drops promoted axes, so [2,1,M,K] x [3,K,N] counts
 * 2*3*M*N*K MACs.
 * Gemm, Y = alpha * op(A) op(B) + beta * C with Y of M x N:
 *   MACs = M*N*K,  FLOPs = 2*M*N*K + M*N (alpha != 1) + M*N (C present)
 *                                   + M*N (C present and beta != 1)
 * Bytes are the baseline: A, B (the weight) and C read once, Y written once.
 */
#include "cost_impl.h"

bool rl_count_matmul(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double mn = rl_cnt_out(g, n, 0), k;
	uint32_t a = rl_node_in(n, 0);
	if (n->op == RL_OP_QuantMatMul)
		return rl_count_quant_matmul(g, node, c); /* ir/qweights.c */
	int ra = g->values[a].shape.rank;
	if (n->op == RL_OP_MatMul) {
		k = rl_cnt_dim(g, n, 0, ra - 1);
		c->macs = mn * k;
		c->flops = 2 * c->macs;
		return true;
	}
	if (n->op != RL_OP_Gemm || ra != 2)
		return false;
	k = rl_cnt_dim(g, n, 0, rl_node_attr_int(n, "transA", 0) ? 0 : 1);
	c->macs = mn * k;
	c->flops = 2 * c->macs;
	if (rl_node_attr_float(n, "alpha", 1.0) != 1.0)
		c->flops += mn;
	if (rl_node_in(n, 2) != RL_NONE) {
		c->flops += mn;
		if (rl_node_attr_float(n, "beta", 1.0) != 1.0)
			c->flops += mn;
	}
	return true;
}
