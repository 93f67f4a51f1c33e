/*
 * fam_reduce.c - shape and dtype inference for reductions (Reduce*) and
 * ArgMax/ArgMin.
 *
 * Where the axes come from moved across opsets: an `axes` attribute until
 * ReduceSum-13 and the other Reduce*-18, an optional second input after.
 * With the input versions, `noop_with_empty_axes=1` turns an empty or absent
 * axes list into the identity; otherwise (and always with the attribute)
 * no axes means every axis. `keepdims` (default 1) keeps reduced axes as 1.
 * Axes may be negative; a repeated axis is an error. When the axes input is
 * not constant the output rank is still known with keepdims, or from the
 * length of the axes input without it.
 * ArgMax/ArgMin reduce one `axis` (default 0) and return int64;
 * select_last_index (opset 12) does not change the shape.
 */
#include "infer_impl.h"

#include <string.h>

/* The opset at which the op's axes became an input. */
static int axes_input_since(enum rl_op op)
{
	return op == RL_OP_ReduceSum ? 13 : 18;
}

enum rl_status rl_reduce_plan(struct rl_graph *g, uint32_t node,
                              struct rl_reduce_plan *p)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	int rank = x->shape.rank;
	memset(p, 0, sizeof(*p));
	p->keepdims = rl_node_attr_int(n, "keepdims", 1) != 0;
	p->naxes_input = -1;
	int since = axes_input_since(n->op);
	enum rl_status st = RL_OK;
	int64_t axes[2 * RL_MAX_RANK];
	int cnt = rl_infer_list(g, node, "axes", 1, since, axes, 2 * RL_MAX_RANK, &st);
	if (cnt == RL_LIST_ERROR)
		return st;
	if (cnt == RL_LIST_UNKNOWN) {
		struct rl_value *av = rl_infer_in(g, n, 1);
		int64_t ne = rl_shape_numel(&av->shape);
		p->naxes_input = ne >= 0 && ne <= RL_MAX_RANK ? (int)ne : -1;
		return RL_OK;
	}
	if (cnt <= 0) {
		bool noop = n->opset >= since && rl_node_attr_int(n, "noop_with_empty_axes", 0);
		p->known = true;
		p->noop = noop;
		for (int i = 0; !noop && i < rank; i++)
			p->axis[i] = true;
		return RL_OK;
	}
	if (rank < 0)
		return RL_OK; /* cannot place the axes */
	for (int i = 0; i < cnt; i++) {
		int a;
		char b[RL_SSTR];
		if (!rl_axis_norm(axes[i], rank, false, &a))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)axes[i], rl_sstr(&x->shape, b));
		if (p->axis[a])
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is repeated",
			                      (long long)axes[i]);
		p->axis[a] = true;
	}
	p->known = true;
	return RL_OK;
}

static enum rl_status infer_reduce(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c):
	 * numeric, and bool too for ReduceMax/ReduceMin */
	struct rl_reduce_plan p;
	enum rl_status st = rl_reduce_plan(g, node, &p);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	if (sx->rank < 0) {
		/* nothing to say */
	} else if (!p.known) {
		/* which axes is unknown; with keepdims each dim is itself or 1 */
		if (p.keepdims || p.naxes_input >= 0) {
			out.rank = p.keepdims ? sx->rank : sx->rank - p.naxes_input;
			if (out.rank < 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "%d axes given for a rank-%d input",
				                      p.naxes_input, sx->rank);
			for (int i = 0; i < out.rank; i++)
				out.d[i] = p.keepdims && sx->d[i].v == 1 ? sx->d[i]
				                                          : rl_dim_unk(g, node, 0, i);
		}
	} else if (p.noop) {
		out = *sx;
	} else {
		out.rank = 0;
		for (int i = 0; i < sx->rank; i++) {
			if (!p.axis[i])
				out.d[out.rank++] = sx->d[i];
			else if (p.keepdims)
				out.d[out.rank++] = rl_dim_num(1);
		}
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_arg(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	bool keep = rl_node_attr_int(n, "keepdims", 1) != 0;
	if (sx->rank >= 0) {
		int64_t a = rl_node_attr_int(n, "axis", 0);
		int axis;
		char b[RL_SSTR];
		if (!rl_axis_norm(a, sx->rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)a, rl_sstr(sx, b));
		if (sx->d[axis].v == 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "cannot take %s over the empty axis %d of %s",
			                      rl_op_table[n->op].name, axis, rl_sstr(sx, b));
		out.rank = 0;
		for (int i = 0; i < sx->rank; i++) {
			if (i != axis)
				out.d[out.rank++] = sx->d[i];
			else if (keep)
				out.d[out.rank++] = rl_dim_num(1);
		}
	}
	return rl_infer_set(g, node, 0, RL_DT_INT64, &out);
}

enum rl_status rl_infer_reduce(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_ArgMax:
	case RL_OP_ArgMin:
		return infer_arg(g, node);
	case RL_OP_ReduceMean: case RL_OP_ReduceSum: case RL_OP_ReduceMax:
	case RL_OP_ReduceMin: case RL_OP_ReduceProd: case RL_OP_ReduceL1:
	case RL_OP_ReduceL2: case RL_OP_ReduceSumSquare: case RL_OP_ReduceLogSum:
	case RL_OP_ReduceLogSumExp:
		return infer_reduce(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no reduce shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * With n = numel(X), m = numel(Y) and T = RL_FLOPS_TRANS (one accumulate per
 * input element, the identity start value not counted separately):
 *   ReduceSum, ReduceMax, ReduceMin, ReduceProd, ArgMax, ArgMin   n
 *   ReduceMean        n + m         (adds, one divide per output)
 *   ReduceL1          2n            (abs, add)
 *   ReduceSumSquare   2n            (multiply-add)
 *   ReduceL2          2n + m*T      (multiply-add, one sqrt per output)
 *   ReduceLogSum      n + m*T       (adds, one log per output)
 *   ReduceLogSumExp   n*(3 + T) + m*(1 + T)
 *                     max, subtract, exp, add per input; log, add back the
 *                     max per output
 * Bytes are the baseline (X read once, Y written once).
 */
#include "cost_impl.h"

bool rl_count_reduce(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double x = rl_cnt_in(g, n, 0), y = rl_cnt_out(g, n, 0), t = RL_FLOPS_TRANS;
	switch (n->op) {
	case RL_OP_ReduceSum: case RL_OP_ReduceMax: case RL_OP_ReduceMin:
	case RL_OP_ReduceProd: case RL_OP_ArgMax: case RL_OP_ArgMin:
		c->flops = x;
		return true;
	case RL_OP_ReduceMean:
		c->flops = x + y;
		return true;
	case RL_OP_ReduceL1: case RL_OP_ReduceSumSquare:
		c->flops = 2 * x;
		return true;
	case RL_OP_ReduceL2:
		c->flops = 2 * x + y * t;
		return true;
	case RL_OP_ReduceLogSum:
		c->flops = x + y * t;
		return true;
	case RL_OP_ReduceLogSumExp:
		c->flops = x * (3 + t) + y * (1 + t);
		return true;
	default:
		return false;
	}
}
