/*
 * fam_norm.c - shape and dtype inference for normalizations and the
 * row-wise softmax family.
 *
 * - BatchNormalization: Y is X; scale, B, mean, var are 1-D of C entries
 *   (shaped like X without N under opset 7's spatial=0).
 *   Before opset 14 the optional outputs are mean, var, saved_mean,
 *   saved_var (all [C]); from 14 they are running_mean and running_var.
 *   From opset 15 the statistics may have their own dtype (T2), which the
 *   mean/var outputs take.
 * - LayerNormalization (17): Y is X; the optional Mean and InvStdDev are X's
 *   shape with the normalized axes [axis, rank) set to 1, in the stash_type
 *   dtype (float by default).
 * - InstanceNormalization, LRN: Y is X.
 * - MeanVarianceNormalization (9, a function op): Y is X; `axes` (default
 *   [0, 2, 3]) are distinct axes of X, which then needs rank >= 4 for the
 *   default; the statistics are over those axes.
 * - Softmax, LogSoftmax, Hardmax: Y is X. Before opset 13 the input is
 *   coerced to 2-D at `axis` (default 1) for the computation; from 13 the
 *   op works along `axis` (default -1). The shape is the same either way;
 *   the axis is validated against the rank.
 */
#include "infer_impl.h"

/* A parameter that must be 1-D with `c` entries. */
static enum rl_status need_vec(struct rl_graph *g, uint32_t node, int slot,
                               struct rl_dim c, const char *what)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *v = rl_infer_in(g, n, slot);
	if (!v || v->shape.rank < 0)
		return RL_OK;
	if (v->shape.rank == 1 && !rl_dim_differ(v->shape.d[0], c))
		return RL_OK;
	char b[RL_SSTR];
	if (c.v >= 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "%s '%s' has shape %s; expected %lld (one per channel)",
		                      what, v->name, rl_sstr(&v->shape, b), (long long)c.v);
	return rl_graph_error(g, n, RL_ERR_SHAPE, "%s '%s' has shape %s; expected 1-D",
	                      what, v->name, rl_sstr(&v->shape, b));
}

static enum rl_status infer_batchnorm(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	static const char *what[5] = {"X", "scale", "B", "mean", "var"};
	enum rl_status st = RL_OK;
	for (int i = 0; i < 5 && st == RL_OK; i++)
		st = rl_infer_dtype_in(g, node, i, RL_TC_FLOAT);
	if (st == RL_OK && n->opset < 15)
		for (int i = 1; i < 5 && st == RL_OK; i++)
			st = rl_infer_dtype_same(g, node, 0, i);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 1, 2);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 3, 4);
	if (st != RL_OK)
		return st;
	char b[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank < 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input of shape %s needs rank >= 2 (N x C x ...)",
		                      rl_sstr(&x->shape, b));
	struct rl_dim c = x->shape.rank >= 2 ? x->shape.d[1] : (struct rl_dim){RL_DIM_SYMBOLIC, NULL};
	/* BatchNormalization-7 with spatial=0 keeps statistics per activation:
	 * the parameters are shaped like X[1:] rather than [C] */
	bool per_activation = n->opset < 9 && rl_node_attr_int(n, "spatial", 1) == 0;
	for (int i = 1; i < 5 && st == RL_OK; i++) {
		struct rl_value *p = rl_infer_in(g, n, i);
		if (!per_activation) {
			st = need_vec(g, node, i, c, what[i]);
			continue;
		}
		bool ok = p->shape.rank < 0 || x->shape.rank < 0 ||
		          p->shape.rank == x->shape.rank - 1;
		for (int d = 0; ok && p->shape.rank >= 0 && d < p->shape.rank; d++)
			ok = !rl_dim_differ(p->shape.d[d], x->shape.d[d + 1]);
		if (!ok)
			st = rl_graph_error(g, n, RL_ERR_SHAPE,
			                    "%s '%s' has shape %s; spatial=0 needs X's shape "
			                    "without N", what[i], p->name, rl_sstr(&p->shape, b));
	}
	if (st != RL_OK)
		return st;
	st = rl_infer_set(g, node, 0, x->dtype, &x->shape);
	/* the statistics outputs are [C]; take C from scale when X lacks it */
	struct rl_shape vs = {.rank = 1};
	vs.d[0] = c;
	if (c.v < 0 && rl_infer_in(g, n, 1)->shape.rank == 1)
		vs.d[0] = rl_infer_in(g, n, 1)->shape.d[0];
	if (per_activation)
		vs = rl_infer_in(g, n, 1)->shape;
	enum rl_dtype sdt = rl_infer_in(g, n, 3)->dtype;
	for (int k = 1; k < n->nout && st == RL_OK; k++)
		st = rl_infer_set(g, node, k, sdt, &vs);
	return st;
}

static enum rl_status infer_layernorm(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	enum rl_status st = rl_infer_dtype_same(g, node, 0, 1);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 1, 2);
	if (st != RL_OK)
		return st;
	int64_t stash = rl_node_attr_int(n, "stash_type", RL_DT_FLOAT);
	if (stash != RL_DT_FLOAT && stash != RL_DT_DOUBLE && stash != RL_DT_FLOAT16 &&
	    stash != RL_DT_BFLOAT16)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "stash_type %lld is not a floating-point dtype",
		                      (long long)stash);
	const struct rl_shape *sx = &x->shape;
	char bx[RL_SSTR], bs[RL_SSTR];
	struct rl_shape stat = {.rank = -1};
	if (sx->rank >= 0) {
		int axis;
		int64_t a = rl_node_attr_int(n, "axis", -1);
		if (!rl_axis_norm(a, sx->rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)a, rl_sstr(sx, bx));
		/* Scale and B broadcast unidirectionally to X[axis:] */
		struct rl_shape tail = {.rank = sx->rank - axis};
		for (int i = axis; i < sx->rank; i++)
			tail.d[i - axis] = sx->d[i];
		for (int k = 1; k < 3; k++) {
			struct rl_value *p = rl_infer_in(g, n, k);
			if (!p || p->shape.rank < 0)
				continue;
			struct rl_shape bc;
			bool ok = p->shape.rank <= tail.rank &&
			          rl_shape_broadcast(&tail, &p->shape, &bc) &&
			          bc.rank == tail.rank;
			for (int i = 0; ok && i < tail.rank; i++)
				ok = !rl_dim_differ(bc.d[i], tail.d[i]);
			if (!ok)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "%s of shape %s does not broadcast to the "
				                      "normalized dims %s of %s", k == 1 ? "Scale" : "B",
				                      rl_sstr(&p->shape, bs), rl_sstr(&tail, bx),
				                      x->name);
		}
		stat = *sx;
		for (int i = axis; i < sx->rank; i++)
			stat.d[i] = rl_dim_num(1);
	}
	st = rl_infer_set(g, node, 0, x->dtype, sx);
	if (st == RL_OK)
		st = rl_infer_set(g, node, 1, (enum rl_dtype)stash, &stat);
	if (st == RL_OK)
		st = rl_infer_set(g, node, 2, (enum rl_dtype)stash, &stat);
	return st;
}

static enum rl_status infer_instnorm(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = RL_OK;
	for (int i = 0; i < 3 && st == RL_OK; i++) {
		st = rl_infer_dtype_in(g, node, i, RL_TC_FLOAT);
		if (st == RL_OK)
			st = rl_infer_dtype_same(g, node, 0, i);
	}
	if (st != RL_OK)
		return st;
	char b[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank < 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input of shape %s needs rank >= 3 (N x C x spatial)",
		                      rl_sstr(&x->shape, b));
	struct rl_dim c = x->shape.rank >= 2 ? x->shape.d[1] : (struct rl_dim){RL_DIM_SYMBOLIC, NULL};
	st = need_vec(g, node, 1, c, "scale");
	if (st == RL_OK)
		st = need_vec(g, node, 2, c, "B");
	if (st != RL_OK)
		return st;
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

static enum rl_status infer_lrn(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	const struct rl_attr *sz = rl_node_attr(n, "size");
	if (!sz || sz->kind != RL_ATTR_INT || sz->i < 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "attribute 'size' is missing or not positive");
	char b[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank < 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input of shape %s needs rank >= 2 (N x C x ...)",
		                      rl_sstr(&x->shape, b));
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

static enum rl_status infer_softmax(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	if (x->shape.rank >= 0) {
		/* before 13: coerced to 2-D at axis (default 1); from 13: one axis
		 * (default -1), in [-r, r-1]. */
		int64_t a = rl_node_attr_int(n, "axis", n->opset < 13 ? 1 : -1);
		int axis;
		char b[RL_SSTR];
		/* opsets 1-10 coerce at a split point, where axis == rank is
		 * valid; 11 and later take [-r, r-1] */
		bool ok = rl_axis_norm(a, x->shape.rank, n->opset < 11, &axis);
		if (!ok)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)a, rl_sstr(&x->shape, b));
	}
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

/* MeanVarianceNormalization's reduced axes, normalized; the count, or -1
 * with an error in g->err. */
int rl_mvn_axes(struct rl_graph *g, uint32_t node, bool axis[RL_MAX_RANK])
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_value *x = &g->values[n->in[0]];
	static const int64_t def[3] = {0, 2, 3};
	const int64_t *ax = def;
	int na = rl_node_attr_ints(n, "axes", &ax);
	if (na < 0) {
		ax = def;
		na = 3;
	}
	for (int d = 0; d < RL_MAX_RANK; d++)
		axis[d] = false;
	for (int i = 0; i < na; i++) {
		int a;
		char b[RL_SSTR];
		if (!rl_axis_norm(ax[i], x->shape.rank, false, &a) || axis[a]) {
			rl_graph_error(g, n, RL_ERR_SHAPE, "axes: %lld is out of range or repeated "
			               "for input %s", (long long)ax[i], rl_sstr(&x->shape, b));
			return -1;
		}
		axis[a] = true;
	}
	return na;
}

static enum rl_status infer_mvn(struct rl_graph *g, uint32_t node)
{
	struct rl_value *x = rl_infer_in(g, &g->nodes[node], 0);
	if (!x)
		return rl_graph_error(g, &g->nodes[node], RL_ERR_SHAPE, "input X is missing");
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	bool axis[RL_MAX_RANK];
	if (x->shape.rank >= 0 && rl_mvn_axes(g, node, axis) < 0)
		return RL_ERR_SHAPE;
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

enum rl_status rl_infer_norm(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_BatchNormalization: return infer_batchnorm(g, node);
	case RL_OP_LayerNormalization: return infer_layernorm(g, node);
	case RL_OP_InstanceNormalization: return infer_instnorm(g, node);
	case RL_OP_LRN: return infer_lrn(g, node);
	case RL_OP_MeanVarianceNormalization: return infer_mvn(g, node);
	case RL_OP_Softmax:
	case RL_OP_LogSoftmax:
	case RL_OP_Hardmax:
		return infer_softmax(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no norm shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * With n = numel(X), r the number of rows (groups normalized together) and
 * T = RL_FLOPS_TRANS:
 *   Softmax     n * (4 + T)          max, subtract, exp, sum, divide per elem
 *   LogSoftmax  n * (4 + T) + r * T  the same with the divide replaced by a
 *                                    subtract, plus one log per row
 *   Hardmax     n                    one compare per element
 *   LayerNormalization  n * (6 + [B]) + r * (3 + T)
 *               per element: mean add, center, square-add (2), normalize,
 *               scale, and the bias add when B is given; per row: two
 *               divides (mean, variance), + epsilon, one rsqrt
 *   InstanceNormalization  n * 7 + N*C * (3 + T)  (LayerNorm per (n, c))
 *   BatchNormalization (inference)  2n + p * (4 + T)
 *               y = x * a + b with, per channel (p = numel(scale)),
 *               a = scale / sqrt(var + eps) and b = B - mean * a
 *   LRN         n * (2 * size + 3 + T)  size multiply-adds of squares, scale
 *               and bias (2), one pow, one divide
 *   MeanVarianceNormalization  n * 5 + g * (5 + T)
 *               per element: sum and square-add (3), subtract, divide; per
 *               group (g = n / the product of the reduced dims): two
 *               divides, square, subtract, sqrt, + epsilon
 * Rows: Softmax family before opset 13 coerces X to 2-D at `axis` (default
 * 1), so a row is X[axis:]; from 13 a row is X[axis] (default -1).
 * LayerNormalization's rows are X[:axis] (axis default -1). Bytes are the
 * baseline (X and the parameters read once, Y and the optional statistics
 * written once).
 */
#include "cost_impl.h"

/* Elements per row from axis on (through the end when to_end), so rows = n / it. */
static double norm_row_len(const struct rl_value *x, int64_t axis, bool to_end)
{
	int r = x->shape.rank;
	if (r <= 0)
		return 1;
	if (axis < 0)
		axis += r;
	if (axis < 0)
		axis = 0;
	if (axis > r)
		axis = r;
	double len = 1;
	for (int i = (int)axis; i < r && (to_end || i == axis); i++)
		len *= (double)x->shape.d[i].v;
	return len;
}

bool rl_count_norm(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	const struct rl_value *x = &g->values[rl_node_in(n, 0)];
	double ne = rl_cnt_numel(g, rl_node_in(n, 0)), t = RL_FLOPS_TRANS;
	switch (n->op) {
	case RL_OP_Softmax:
	case RL_OP_LogSoftmax: {
		bool old = n->opset < 13;
		double len = norm_row_len(x, rl_node_attr_int(n, "axis", old ? 1 : -1), old);
		double rows = len > 0 ? ne / len : 0;
		c->flops = ne * (4 + t) + (n->op == RL_OP_LogSoftmax ? rows * t : 0);
		c->rows = rows;
		return true;
	}
	case RL_OP_Hardmax:
		c->flops = ne;
		return true;
	case RL_OP_LayerNormalization: {
		double len = norm_row_len(x, rl_node_attr_int(n, "axis", -1), true);
		double rows = len > 0 ? ne / len : 0;
		bool bias = rl_node_in(n, 2) != RL_NONE;
		c->flops = ne * (6 + (bias ? 1 : 0)) + rows * (3 + t);
		c->rows = rows;
		return true;
	}
	case RL_OP_InstanceNormalization: {
		double inst = rl_cnt_dim(g, n, 0, 0) * rl_cnt_dim(g, n, 0, 1);
		c->flops = ne * 7 + inst * (3 + t);
		c->rows = inst;
		return true;
	}
	case RL_OP_BatchNormalization:
		c->flops = 2 * ne + rl_cnt_in(g, n, 1) * (4 + t);
		return true;
	case RL_OP_LRN:
		c->flops = ne * (2 * (double)rl_node_attr_int(n, "size", 1) + 3 + t);
		return true;
	case RL_OP_MeanVarianceNormalization: {
		static const int64_t def[3] = {0, 2, 3};
		const int64_t *ax = def;
		int na = rl_node_attr_ints(n, "axes", &ax);
		if (na < 0) {
			ax = def;
			na = 3;
		}
		double red = 1;
		for (int i = 0; i < na; i++) {
			int64_t a = ax[i] < 0 ? ax[i] + x->shape.rank : ax[i];
			if (a >= 0 && a < x->shape.rank && x->shape.d[a].v > 0)
				red *= (double)x->shape.d[a].v;
		}
		c->flops = ne * 5 + (ne / red) * (5 + t);
		c->rows = ne / red;
		return true;
	}
	default:
		return false;
	}
}
