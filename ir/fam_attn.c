/*
 * fam_attn.c - shape inference and counting for the attention family: the
 * sequence-model operators of opsets 20 to 27 that the transformer and
 * state-space exporters write (Attention, RotaryEmbedding, LinearAttention,
 * FlexAttention, CausalConvWithState) and the few row-wise or grid ops that
 * travel with them (GroupNormalization, Swish, TensorScatter, AffineGrid).
 *
 * Layouts (as the ONNX schemas give them; backends/c/emit_attn.c follows):
 * - Attention: Q, K, V are 4-D [B, H, S, D] or 3-D [B, S, H*D] with the head
 *   counts in q_num_heads / kv_num_heads. Y takes Q's layout with V's head
 *   size; present_key/present_value are 4-D [B, Hkv, P+S, D] (past_key's P
 *   rows, then K's); qk_matmul_output is [B, Hq, Sq, P+S].
 * - LinearAttention: 3-D [B, T, H*D] in, output [B, T, Hq*Dv] and the state
 *   [B, Hkv, Dk, Dv].
 * - FlexAttention: 4-D only. One with a score_mod or prob_mod graph never
 *   reaches here: the reader writes it out as MatMul, the modifier, Softmax
 *   and MatMul (frontends/onnx/onnx_subgraph.c).
 * - CausalConvWithState: input [B, C, L], depthwise weight [C, 1, K], the
 *   output like the input and the state [B, C, K-1].
 * - AffineGrid: the output size comes from the `size` input; when it is not
 *   constant the spatial dims stay unknown and the declared output type (the
 *   node tests declare it) fills them.
 * A dim that is symbolic where a number is needed gives an unknown output
 * dim (rl_dim_unk), as elsewhere.
 */
#include "cost_impl.h"
#include "infer_impl.h"

#include <math.h>
#include <string.h>

static struct rl_dim dim_div(struct rl_graph *g, uint32_t node, int out, int axis,
                             struct rl_dim d, int64_t by)
{
	if (d.v >= 0 && by > 0)
		return rl_dim_num(d.v / by);
	return rl_dim_unk(g, node, out, axis);
}

static struct rl_dim dim_add(struct rl_graph *g, uint32_t node, int out, int axis,
                             struct rl_dim a, struct rl_dim b)
{
	if (a.v >= 0 && b.v >= 0)
		return rl_dim_num(a.v + b.v);
	return rl_dim_unk(g, node, out, axis);
}

static enum rl_status need_rank(struct rl_graph *g, uint32_t node, int slot, int lo, int hi,
                                const char *what)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *v = rl_infer_in(g, n, slot);
	char b[RL_SSTR];
	if (v && v->shape.rank >= 0 && (v->shape.rank < lo || v->shape.rank > hi))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "%s '%s' has shape %s; expected rank %d to %d",
		                      what, v->name, rl_sstr(&v->shape, b), lo, hi);
	return RL_OK;
}

/* ---- Attention ------------------------------------------------------------ */

static enum rl_status infer_attention(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = RL_OK;
	for (int i = 0; i < 3 && st == RL_OK; i++)
		st = rl_infer_dtype_in(g, node, i, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 1, 2);
	for (int i = 0; i < 3 && st == RL_OK; i++)
		st = need_rank(g, node, i, 3, 4, i == 0 ? "Q" : i == 1 ? "K" : "V");
	if (st != RL_OK)
		return st;
	struct rl_value *q = rl_infer_in(g, n, 0), *k = rl_infer_in(g, n, 1),
	                *v = rl_infer_in(g, n, 2), *pk = rl_infer_in(g, n, 4);
	struct rl_value *msk = rl_infer_in(g, n, 3);
	if (msk && !rl_dtype_is_float(msk->dtype) && msk->dtype != RL_DT_BOOL)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "attn_mask '%s' must be bool or float, not %s",
		                      msk->name, rl_dtype_name(msk->dtype));
	if (rl_infer_in(g, n, 6) && rl_infer_in(g, n, 6)->dtype != RL_DT_INT64)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "nonpad_kv_seqlen must be int64");
	int r = q->shape.rank;
	if (r < 0 || k->shape.rank < 0 || v->shape.rank < 0) {
		struct rl_shape unk = {.rank = -1};
		for (int o = 0; o < n->nout; o++)
			if ((st = rl_infer_set(g, node, o, o == 1 ? k->dtype : o == 2 ? v->dtype : q->dtype,
			                       &unk)) != RL_OK)
				return st;
		return RL_OK;
	}
	if (k->shape.rank != r || v->shape.rank != r)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "Q, K and V must have the same rank (%d, %d, %d)",
		                      r, k->shape.rank, v->shape.rank);
	int64_t hq = rl_node_attr_int(n, "q_num_heads", 0), hkv = rl_node_attr_int(n, "kv_num_heads", 0);
	struct rl_dim B = q->shape.d[0], Sq, Skv, Hq, Hkv, Dk, Dv;
	if (r == 3) {
		if (hq <= 0 || hkv <= 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "3-D inputs need positive q_num_heads and "
			                      "kv_num_heads attributes");
		Sq = q->shape.d[1];
		Skv = k->shape.d[1];
		Hq = rl_dim_num(hq);
		Hkv = rl_dim_num(hkv);
		Dk = dim_div(g, node, 1, 3, k->shape.d[2], hkv);
		Dv = dim_div(g, node, 2, 3, v->shape.d[2], hkv);
	} else {
		Hq = q->shape.d[1];
		Sq = q->shape.d[2];
		Hkv = k->shape.d[1];
		Skv = k->shape.d[2];
		Dk = k->shape.d[3];
		Dv = v->shape.d[3];
	}
	if (Hq.v > 0 && Hkv.v > 0 && Hq.v % Hkv.v != 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "q heads (%lld) must be a multiple of kv heads "
		                      "(%lld)", (long long)Hq.v, (long long)Hkv.v);
	struct rl_dim T = Skv;
	if (pk) {
		if (pk->shape.rank != 4)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "past_key must be 4-D");
		T = dim_add(g, node, 1, 2, pk->shape.d[2], Skv);
	}
	struct rl_shape y = {.rank = r};
	y.d[0] = B;
	if (r == 3) {
		y.d[1] = Sq;
		y.d[2] = Dv.v >= 0 ? rl_dim_num(Dv.v * hq) : rl_dim_unk(g, node, 0, 2);
	} else {
		y.d[1] = Hq;
		y.d[2] = Sq;
		y.d[3] = Dv;
	}
	if ((st = rl_infer_set(g, node, 0, q->dtype, &y)) != RL_OK)
		return st;
	struct rl_shape pks = {.rank = 4, .d = {B, Hkv, T, Dk}};
	struct rl_shape pvs = {.rank = 4, .d = {B, Hkv, T, Dv}};
	struct rl_shape qks = {.rank = 4, .d = {B, Hq, Sq, T}};
	if (n->nout > 1 && (st = rl_infer_set(g, node, 1, k->dtype, &pks)) != RL_OK)
		return st;
	if (n->nout > 2 && (st = rl_infer_set(g, node, 2, v->dtype, &pvs)) != RL_OK)
		return st;
	if (n->nout > 3 && (st = rl_infer_set(g, node, 3, q->dtype, &qks)) != RL_OK)
		return st;
	return RL_OK;
}

static enum rl_status infer_flex(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = RL_OK;
	for (int i = 0; i < 3 && st == RL_OK; i++)
		st = rl_infer_dtype_in(g, node, i, RL_TC_FLOAT);
	for (int i = 0; i < 3 && st == RL_OK; i++)
		st = need_rank(g, node, i, 4, 4, i == 0 ? "Q" : i == 1 ? "K" : "V");
	if (st != RL_OK)
		return st;
	struct rl_value *q = rl_infer_in(g, n, 0), *v = rl_infer_in(g, n, 2);
	struct rl_shape y = q->shape;
	if (y.rank == 4 && v->shape.rank == 4)
		y.d[3] = v->shape.d[3];
	return rl_infer_set(g, node, 0, v->dtype, &y);
}

/* ---- LinearAttention ------------------------------------------------------ */

static enum rl_status infer_linear_attention(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = RL_OK;
	for (int i = 0; i < 6 && st == RL_OK; i++)
		st = rl_infer_dtype_in(g, node, i, RL_TC_FLOAT);
	for (int i = 0; i < 3 && st == RL_OK; i++)
		st = need_rank(g, node, i, 3, 3, i == 0 ? "query" : i == 1 ? "key" : "value");
	if (st != RL_OK)
		return st;
	int64_t hq = rl_node_attr_int(n, "q_num_heads", 0), hkv = rl_node_attr_int(n, "kv_num_heads", 0);
	if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "q_num_heads (%lld) must be a positive multiple "
		                      "of kv_num_heads (%lld)", (long long)hq, (long long)hkv);
	struct rl_value *q = rl_infer_in(g, n, 0), *v = rl_infer_in(g, n, 2);
	struct rl_shape y = {.rank = -1}, s = {.rank = -1};
	if (q->shape.rank == 3 && v->shape.rank == 3) {
		struct rl_dim dk = dim_div(g, node, 1, 2, q->shape.d[2], hq);
		struct rl_dim dv = dim_div(g, node, 1, 3, v->shape.d[2], hkv);
		y.rank = 3;
		y.d[0] = q->shape.d[0];
		y.d[1] = q->shape.d[1];
		y.d[2] = dv.v >= 0 ? rl_dim_num(dv.v * hq) : rl_dim_unk(g, node, 0, 2);
		s.rank = 4;
		s.d[0] = q->shape.d[0];
		s.d[1] = rl_dim_num(hkv);
		s.d[2] = dk;
		s.d[3] = dv;
	}
	if ((st = rl_infer_set(g, node, 0, q->dtype, &y)) != RL_OK)
		return st;
	struct rl_value *ps = rl_infer_in(g, n, 3);
	if (n->nout > 1)
		st = rl_infer_set(g, node, 1, ps ? ps->dtype : q->dtype, &s);
	return st;
}

/* ---- CausalConvWithState -------------------------------------------------- */

static enum rl_status infer_causal_conv(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = RL_OK;
	for (int i = 0; i < 4 && st == RL_OK; i++)
		st = rl_infer_dtype_in(g, node, i, RL_TC_FLOAT);
	if (st == RL_OK)
		st = need_rank(g, node, 0, 3, 3, "input");
	if (st == RL_OK)
		st = need_rank(g, node, 1, 3, 3, "weight");
	if (st != RL_OK)
		return st;
	const char *act = rl_node_attr_str(n, "activation", "none");
	if (strcmp(act, "none") && strcmp(act, "silu") && strcmp(act, "swish"))
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "activation '%s' is not one of none, "
		                      "silu, swish", act);
	struct rl_value *x = rl_infer_in(g, n, 0), *w = rl_infer_in(g, n, 1);
	if ((st = rl_infer_set(g, node, 0, x->dtype, &x->shape)) != RL_OK)
		return st;
	if (n->nout < 2)
		return RL_OK;
	struct rl_shape s = {.rank = -1};
	if (x->shape.rank == 3 && w->shape.rank == 3) {
		s.rank = 3;
		s.d[0] = x->shape.d[0];
		s.d[1] = x->shape.d[1];
		s.d[2] = w->shape.d[2].v >= 1 ? rl_dim_num(w->shape.d[2].v - 1)
		                              : rl_dim_unk(g, node, 1, 2);
	}
	return rl_infer_set(g, node, 1, x->dtype, &s);
}

/* ---- AffineGrid ----------------------------------------------------------- */

static enum rl_status infer_affine_grid(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK)
		st = need_rank(g, node, 0, 3, 3, "theta");
	if (st != RL_OK)
		return st;
	struct rl_value *th = rl_infer_in(g, n, 0), *sz = rl_infer_in(g, n, 1);
	int nd = sz->shape.rank == 1 && sz->shape.d[0].v >= 0 ? (int)sz->shape.d[0].v : -1;
	if (nd < 0 && th->shape.rank == 3 && th->shape.d[1].v >= 0)
		nd = (int)th->shape.d[1].v + 2;
	if (nd != -1 && nd != 4 && nd != 5)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "size must have 4 (2-D) or 5 (3-D) entries");
	struct rl_shape y = {.rank = -1};
	if (nd > 0) {
		int64_t sv[5];
		int known = rl_value_get_ints(g, rl_node_in(n, 1), sv, 5);
		/* [N, (D,) H, W, nd - 2] from size = (N, C, (D,) H, W) */
		y.rank = nd;
		y.d[0] = th->shape.d[0];
		for (int i = 1; i < nd - 1; i++)
			y.d[i] = known == nd && sv[i + 1] >= 0 ? rl_dim_num(sv[i + 1])
			                                       : rl_dim_unk(g, node, 0, i);
		y.d[nd - 1] = rl_dim_num(nd - 2);
	}
	return rl_infer_set(g, node, 0, th->dtype, &y);
}

/* ---- the rest: output shaped like input 0 ---------------------------------- */

static enum rl_status infer_same(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = RL_OK;
	struct rl_value *x = rl_infer_in(g, n, 0);
	switch (n->op) {
	case RL_OP_RotaryEmbedding:
		st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
		if (st == RL_OK)
			st = rl_infer_dtype_same(g, node, 1, 2);
		if (st == RL_OK)
			st = rl_infer_dtype_in(g, node, 3, RL_TC_INDEX);
		if (st == RL_OK)
			st = need_rank(g, node, 0, 3, 4, "input");
		break;
	case RL_OP_GroupNormalization:
		st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
		if (st == RL_OK && x->shape.rank >= 0 && x->shape.rank < 2)
			st = rl_graph_error(g, n, RL_ERR_SHAPE, "input needs rank >= 2 (N x C x ...)");
		if (st == RL_OK && rl_node_attr_int(n, "num_groups", 0) <= 0)
			st = rl_graph_error(g, n, RL_ERR_SHAPE, "num_groups must be positive");
		break;
	case RL_OP_Swish:
		st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
		break;
	case RL_OP_TensorScatter:
		st = rl_infer_dtype_same(g, node, 0, 1);
		if (st == RL_OK)
			st = rl_infer_dtype_in(g, node, 2, RL_TC_INDEX);
		break;
	default:
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "not an attention-family op");
	}
	if (st != RL_OK)
		return st;
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

enum rl_status rl_infer_attn(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_Attention: return infer_attention(g, node);
	case RL_OP_FlexAttention: return infer_flex(g, node);
	case RL_OP_LinearAttention: return infer_linear_attention(g, node);
	case RL_OP_CausalConvWithState: return infer_causal_conv(g, node);
	case RL_OP_AffineGrid: return infer_affine_grid(g, node);
	default: return infer_same(g, node);
	}
}

/* ---- cost ------------------------------------------------------------------ */

/* Dims of value v as doubles (0 past the rank). */
static double vdim(const struct rl_graph *g, uint32_t v, int d)
{
	if (v == RL_NONE || d >= g->values[v].shape.rank)
		return 0;
	return (double)g->values[v].shape.d[d].v;
}

/*
 * Attention-style ops: per (batch, q head, query row) and key row one dot
 * product of Dk MACs and one row of Dv MACs against V, plus the softmax
 * (max, subtract, exp, sum, scale: 4 FLOPs and an exp per score); a causal
 * row i scores only its first i + P + 1 keys, as the kernel does. Bytes
 * stay the baseline: K and V rows of a head are read once per head from
 * cache, and the kernel writes only its outputs.
 */
bool rl_count_attn(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double t = RL_FLOPS_TRANS;
	uint32_t y = n->out[0];
	double ne = rl_cnt_out(g, n, 0);
	switch (n->op) {
	case RL_OP_Attention:
	case RL_OP_FlexAttention: {
		uint32_t qv = rl_node_in(n, 0), kv = rl_node_in(n, 1), vv = rl_node_in(n, 2);
		bool three = g->values[qv].shape.rank == 3;
		double hq = three ? (double)rl_node_attr_int(n, "q_num_heads", 1) : vdim(g, qv, 1);
		double hkv = three ? (double)rl_node_attr_int(n, "kv_num_heads", 1) : vdim(g, kv, 1);
		double sq = vdim(g, qv, three ? 1 : 2);
		double dk = three ? vdim(g, kv, 2) / hkv : vdim(g, kv, 3);
		double dv = three ? vdim(g, vv, 2) / hkv : vdim(g, vv, 3);
		double tot = vdim(g, kv, three ? 1 : 2) + vdim(g, rl_node_in(n, 4), 2);
		double past = vdim(g, rl_node_in(n, 4), 2), row = sq * tot;
		if (n->op == RL_OP_Attention && rl_node_attr_int(n, "is_causal", 0)) {
			/* query row i scores keys [0, min(T, i + P + 1)): rows below the
			 * diagonal's end see i + P + 1 keys, the rest all T */
			double m = fmin(sq, tot - past);
			row = m * (past + 1) + m * (m - 1) / 2 + (sq - m) * tot;
		}
		double scores = vdim(g, qv, 0) * hq * row;
		c->macs = scores * (dk + dv);
		c->flops = 2 * c->macs + scores * (4 + t);
		if (n->op == RL_OP_Attention && rl_node_attr_float(n, "softcap", 0) > 0)
			c->flops += scores * (2 + t);
		return true;
	}
	case RL_OP_LinearAttention: {
		uint32_t qv = rl_node_in(n, 0);
		double hq = (double)rl_node_attr_int(n, "q_num_heads", 1);
		double hkv = (double)rl_node_attr_int(n, "kv_num_heads", 1);
		double steps = vdim(g, qv, 0) * vdim(g, qv, 1);
		double dk = vdim(g, qv, 2) / hq, dv = vdim(g, rl_node_in(n, 2), 2) / hkv;
		/* per step and kv head: decay (Dk*Dv), retrieve (Dk*Dv MACs), the
		 * rank-1 update (Dk*Dv MACs); per q head the read (Dk*Dv MACs) */
		c->macs = steps * dk * dv * (2 * hkv + hq);
		c->flops = 2 * c->macs + steps * hkv * dk * (dv + t);
		return true;
	}
	case RL_OP_CausalConvWithState: {
		double k = vdim(g, rl_node_in(n, 1), 2);
		c->macs = ne * k;
		c->flops = 2 * c->macs;
		if (strcmp(rl_node_attr_str(n, "activation", "none"), "none") != 0)
			c->flops += ne * (3 + t);
		return true;
	}
	case RL_OP_RotaryEmbedding:
		c->flops = ne * 3;
		c->access = RL_ACCESS_GATHER;
		return true;
	case RL_OP_GroupNormalization:
		c->flops = ne * 7 + vdim(g, y, 0) * (double)rl_node_attr_int(n, "num_groups", 1) * (3 + t);
		return true;
	case RL_OP_Swish:
		c->flops = ne * (3 + t);
		return true;
	case RL_OP_TensorScatter: {
		/* copies past_cache (unless in place) and writes the update rows */
		c->access = RL_ACCESS_GATHER;
		return true;
	}
	case RL_OP_AffineGrid: {
		/* each output element: nd multiply-adds (coordinates and translation) */
		double nd = vdim(g, y, g->values[y].shape.rank - 1);
		c->flops = ne * 2 * nd;
		return true;
	}
	default:
		return false;
	}
}
