/*
 * fam_pool.c - shape and dtype inference for windowed pools (MaxPool,
 * AveragePool, LpPool) and global pools.
 *
 * The window arithmetic is fam_conv.c's (rl_window_read/rl_window_out).
 * Attributes that arrived in later opsets (MaxPool ceil_mode and dilations
 * at 10, AveragePool ceil_mode at 10 and dilations at 19, LpPool both at 18)
 * are read whenever present: a model that carries them before their opset
 * is invalid anyway, and honouring them gives the shape it meant.
 * MaxPool's optional second output (Indices, opset 8) is int64 with Y's
 * shape. MaxPool takes int8/uint8 from opset 12; the others are float only.
 */
#include "infer_impl.h"

static enum rl_status infer_window_pool(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st;
	if (n->op == RL_OP_MaxPool && n->opset >= 12 &&
	    (x->dtype == RL_DT_INT8 || x->dtype == RL_DT_UINT8))
		st = RL_OK;
	else
		st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st != RL_OK)
		return st;
	if (n->op == RL_OP_LpPool && rl_node_attr_int(n, "p", 2) < 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "p must be >= 1");
	if (n->op == RL_OP_MaxPool && rl_node_attr_int(n, "storage_order", 0) != 0 &&
	    rl_node_attr_int(n, "storage_order", 0) != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "storage_order must be 0 or 1");
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	char b[RL_SSTR];
	if (sx->rank >= 0 && sx->rank < 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input of shape %s needs rank >= 3 (N x C x spatial)",
		                      rl_sstr(sx, b));
	if (sx->rank >= 0) {
		int nsp = sx->rank - 2;
		struct rl_window w;
		st = rl_window_read(g, node, nsp, NULL, &w);
		if (st != RL_OK)
			return st;
		out = *sx;
		for (int i = 0; i < nsp && st == RL_OK; i++)
			st = rl_window_out(g, node, &w, i, sx->d[2 + i], 2 + i, &out.d[2 + i]);
		if (st != RL_OK)
			return st;
	}
	st = rl_infer_set(g, node, 0, x->dtype, &out);
	if (st == RL_OK && n->op == RL_OP_MaxPool)
		st = rl_infer_set(g, node, 1, RL_DT_INT64, &out);
	return st;
}

static enum rl_status infer_global_pool(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	struct rl_shape out = x->shape;
	char b[RL_SSTR];
	if (out.rank >= 0 && out.rank < 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input of shape %s needs rank >= 2 (N x C x spatial)",
		                      rl_sstr(&x->shape, b));
	for (int i = 2; i < out.rank; i++)
		out.d[i] = rl_dim_num(1);
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

enum rl_status rl_infer_pool(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_MaxPool:
	case RL_OP_AveragePool:
	case RL_OP_LpPool:
		return infer_window_pool(g, node);
	case RL_OP_GlobalAveragePool:
	case RL_OP_GlobalMaxPool:
		return infer_global_pool(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no pool shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * With K = k1*..*kn the window size (kernel_shape) and every window tap
 * counted, padding included:
 *   MaxPool            numel(Y) * K          (one compare per tap)
 *   AveragePool        numel(Y) * (K + 1)    (K adds, one divide)
 *   LpPool  p = 1      numel(Y) * 2K         (abs, add)
 *           p = 2      numel(Y) * (2K + T)   (multiply-add, one sqrt)
 *           other p    numel(Y) * ((T + 1) K + T)  (pow, add; the root)
 *   GlobalAveragePool  numel(X) + numel(Y)   (adds, one divide per channel)
 *   GlobalMaxPool      numel(X)
 * where T = RL_FLOPS_TRANS. Bytes are the baseline: X read once (overlapping
 * windows re-read from cache), Y (and MaxPool's Indices) written once.
 */
#include "cost_impl.h"

bool rl_count_pool(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double x = rl_cnt_in(g, n, 0), y = rl_cnt_out(g, n, 0);
	if (n->op == RL_OP_GlobalAveragePool) {
		c->flops = x + y;
		return true;
	}
	if (n->op == RL_OP_GlobalMaxPool) {
		c->flops = x;
		return true;
	}
	const int64_t *ks;
	int nk = rl_node_attr_ints(n, "kernel_shape", &ks);
	double k = 1;
	for (int i = 0; i < nk; i++)
		k *= (double)ks[i];
	switch (n->op) {
	case RL_OP_MaxPool:
		c->flops = y * k;
		return true;
	case RL_OP_AveragePool:
		c->flops = y * (k + 1);
		return true;
	case RL_OP_LpPool: {
		int64_t p = rl_node_attr_int(n, "p", 2);
		if (p == 1)
			c->flops = y * 2 * k;
		else if (p == 2)
			c->flops = y * (2 * k + RL_FLOPS_TRANS);
		else
			c->flops = y * ((RL_FLOPS_TRANS + 1) * k + RL_FLOPS_TRANS);
		return true;
	}
	default:
		return false;
	}
}
