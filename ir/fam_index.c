/*
 * fam_index.c - shape and dtype inference, FLOPs and bytes for scans,
 * scatters and gathers, losses, row norms, resampling and small shape ops:
 * CumSum, CumProd, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss,
 * ScatterElements, Scatter, ScatterND, GatherND, OneHot, TopK,
 * RMSNormalization, LpNormalization, Resize, Upsample, CenterCropPad,
 * ReverseSequence, Einsum.
 *
 * These rows sit in the SHAPE family of ops.def for now (ir/cost.c and the
 * report hold one table entry per family, and are being rewritten); the
 * shape family's entry points hand them to rl_infer_index() and
 * rl_count_index() here, so the counts below are what the roofline sees.
 *
 * Sizes given as inputs (CumSum's axis, TopK's K, OneHot's depth, Resize's
 * scales or sizes, CenterCropPad's shape) are used when constant; otherwise
 * the affected dims become unk_* symbols and the model's declared output
 * shape (merged by rl_infer_set) fixes them, as the node tests declare.
 * The losses follow the ONNX spec's shapes: input (N, C, d1..dk), target
 * (N, d1..dk) of integers, an optional weight (C); reduction "none" gives
 * the target's shape, "sum" and "mean" a scalar. SoftmaxCrossEntropyLoss
 * can also return log_prob, which has the scores' shape.
 */
#include "infer_impl.h"

#include <math.h>
#include <string.h>

/* ---- CumSum, CumProd ----------------------------------------------------- */

static enum rl_status infer_cum(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *ax = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	char b[RL_SSTR];
	if (ax->shape.rank > 1 || (ax->shape.rank == 1 && ax->shape.d[0].v >= 0 &&
	                           ax->shape.d[0].v != 1))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "axis of shape %s must be a scalar",
		                      rl_sstr(&ax->shape, b));
	if (x->shape.rank == 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input must have rank >= 1, not a scalar");
	if (rl_value_is_const(g, n->in[1]) && ax->data && x->shape.rank > 0 &&
	    rl_shape_numel(&ax->shape) == 1) {
		int64_t a = rl_value_get_int(g, n->in[1], 0);
		int axis;
		if (!rl_axis_norm(a, x->shape.rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for input %s",
			                      (long long)a, rl_sstr(&x->shape, b));
	}
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------------------ */

/* reduction attribute: 0 none, 1 sum, 2 mean; -1 for an unknown word. */
int rl_loss_reduction(const struct rl_node *n)
{
	const char *r = rl_node_attr_str(n, "reduction", "mean");
	if (strcmp(r, "none") == 0)
		return 0;
	if (strcmp(r, "sum") == 0)
		return 1;
	if (strcmp(r, "mean") == 0)
		return 2;
	return -1;
}

static enum rl_status infer_loss(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *t = rl_infer_in(g, n, 1);
	struct rl_value *w = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 2);
	if (st != RL_OK)
		return st;
	int red = rl_loss_reduction(n);
	if (red < 0)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "attribute reduction='%s' is not none, sum or mean",
		                      rl_node_attr_str(n, "reduction", ""));
	char b1[RL_SSTR], b2[RL_SSTR];
	const struct rl_shape *sx = &x->shape, *stg = &t->shape;
	if (sx->rank >= 0 && sx->rank < 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s must be (N, C, d1..dk)",
		                      rl_sstr(sx, b1));
	if (sx->rank >= 0 && stg->rank >= 0) {
		bool ok = stg->rank == sx->rank - 1;
		for (int i = 0; ok && i < stg->rank; i++)
			ok = !rl_dim_differ(stg->d[i], sx->d[i ? i + 1 : 0]);
		if (!ok)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "target %s does not match input %s (N, C, d1..dk): it "
			                      "must be (N, d1..dk)", rl_sstr(stg, b2), rl_sstr(sx, b1));
	}
	if (w && sx->rank >= 0 &&
	    (w->shape.rank != 1 || rl_dim_differ(w->shape.d[0], sx->d[1])))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "weight %s must be (C) for input %s",
		                      rl_sstr(&w->shape, b2), rl_sstr(sx, b1));
	struct rl_shape out = {.rank = 0};
	if (red == 0) {
		if (stg->rank >= 0) {
			out = *stg;
		} else if (sx->rank >= 0) {
			out.rank = sx->rank - 1;
			out.d[0] = sx->d[0];
			for (int i = 2; i < sx->rank; i++)
				out.d[i - 1] = sx->d[i];
		} else {
			out.rank = -1;
		}
	}
	st = rl_infer_set(g, node, 0, x->dtype, &out);
	if (st == RL_OK && n->op == RL_OP_SoftmaxCrossEntropyLoss)
		st = rl_infer_set(g, node, 1, x->dtype, sx);
	return st;
}

/* ---- ScatterElements, Scatter, ScatterND, GatherND ----------------------- */

/* reduction attribute of the scatters: 0 none, 1 add, 2 mul, 3 max, 4 min,
 * -1 for an unknown word. */
int rl_scatter_reduction(const struct rl_node *n)
{
	static const char *const names[] = {"none", "add", "mul", "max", "min"};
	const char *r = rl_node_attr_str(n, "reduction", "none");
	for (int i = 0; i < 5; i++)
		if (strcmp(r, names[i]) == 0)
			return i;
	return -1;
}

static enum rl_status infer_scatter(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *ind = rl_infer_in(g, n, 1);
	struct rl_value *upd = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 2);
	if (st != RL_OK)
		return st;
	if (rl_scatter_reduction(n) < 0)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "attribute reduction='%s' is not none, add, mul, max or min",
		                      rl_node_attr_str(n, "reduction", ""));
	char b1[RL_SSTR], b2[RL_SSTR], b3[RL_SSTR];
	const struct rl_shape *sx = &x->shape, *si = &ind->shape, *su = &upd->shape;
	if (n->op != RL_OP_ScatterND) {
		if (si->rank >= 0 && su->rank >= 0 && !rl_shape_equal(si, su) &&
		    rl_shape_is_static(si) && rl_shape_is_static(su))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "indices %s and updates %s must have one shape",
			                      rl_sstr(si, b1), rl_sstr(su, b2));
		if (sx->rank >= 0 && si->rank >= 0 && sx->rank != si->rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "indices %s must have the rank of the data %s",
			                      rl_sstr(si, b1), rl_sstr(sx, b2));
		int axis;
		int64_t a = rl_node_attr_int(n, "axis", 0);
		if (sx->rank >= 0 && !rl_axis_norm(a, sx->rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for data %s",
			                      (long long)a, rl_sstr(sx, b1));
	} else if (sx->rank >= 0 && si->rank >= 1 && su->rank >= 0) {
		int64_t k = si->d[si->rank - 1].v;
		if (k > sx->rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "indices %s address %lld axes of data %s",
			                      rl_sstr(si, b1), (long long)k, rl_sstr(sx, b2));
		if (k >= 0 && su->rank != si->rank - 1 + sx->rank - k)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "updates %s must be indices[:-1] + data[%lld:] for "
			                      "indices %s and data %s", rl_sstr(su, b3), (long long)k,
			                      rl_sstr(si, b1), rl_sstr(sx, b2));
	}
	return rl_infer_set(g, node, 0, x->dtype, sx);
}

static enum rl_status infer_gather_nd(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *ind = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape, *si = &ind->shape;
	struct rl_shape out = {.rank = -1};
	int64_t b = rl_node_attr_int(n, "batch_dims", 0);
	char b1[RL_SSTR], b2[RL_SSTR];
	if (sx->rank >= 0 && si->rank >= 0) {
		if (si->rank < 1 || b < 0 || b >= si->rank || b >= sx->rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "batch_dims %lld does not fit indices %s and data %s",
			                      (long long)b, rl_sstr(si, b1), rl_sstr(sx, b2));
		int64_t k = si->d[si->rank - 1].v;
		if (k < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "the last dim of indices %s must be static",
			                      rl_sstr(si, b1));
		if (k < 1 || b + k > sx->rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "indices %s address %lld axes of data %s after %lld "
			                      "batch dims", rl_sstr(si, b1), (long long)k,
			                      rl_sstr(sx, b2), (long long)b);
		out.rank = 0;
		for (int i = 0; i < si->rank - 1; i++)
			out.d[out.rank++] = si->d[i];
		for (int i = (int)(b + k); i < sx->rank; i++) {
			if (out.rank >= RL_MAX_RANK)
				return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
				                      "output rank is over rlopt's limit of %d", RL_MAX_RANK);
			out.d[out.rank++] = sx->d[i];
		}
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- OneHot, TopK --------------------------------------------------------- */

/* A scalar (or one-element) constant input as a number; false if unknown. */
static bool const_scalar(struct rl_graph *g, uint32_t v, double *out)
{
	if (v == RL_NONE || !rl_value_is_const(g, v) || !g->values[v].data ||
	    rl_shape_numel(&g->values[v].shape) != 1)
		return false;
	*out = rl_value_get_float(g, v, 0);
	return true;
}

static enum rl_status infer_onehot(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *ind = rl_infer_in(g, n, 0), *val = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_NUM);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR];
	if (val->shape.rank >= 0 && rl_shape_numel(&val->shape) >= 0 &&
	    rl_shape_numel(&val->shape) != 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "values %s must hold two elements",
		                      rl_sstr(&val->shape, b1));
	const struct rl_shape *si = &ind->shape;
	struct rl_shape out = {.rank = -1};
	if (si->rank >= 0) {
		if (si->rank + 1 > RL_MAX_RANK)
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                      "output rank is over rlopt's limit of %d", RL_MAX_RANK);
		int axis;
		int64_t a = rl_node_attr_int(n, "axis", -1);
		if (!rl_axis_norm(a, si->rank + 1, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for indices %s",
			                      (long long)a, rl_sstr(si, b1));
		double depth;
		struct rl_dim dd = rl_dim_unk(g, node, 0, axis);
		if (const_scalar(g, n->in[1], &depth)) {
			if (depth < 1 || depth > (double)RL_DIM_LIMIT)
				return rl_graph_error(g, n, RL_ERR_SHAPE, "depth %g must be positive",
				                      depth);
			dd = rl_dim_num((int64_t)depth);
		}
		out.rank = si->rank + 1;
		for (int i = 0, j = 0; i < out.rank; i++)
			out.d[i] = i == axis ? dd : si->d[j++];
	}
	return rl_infer_set(g, node, 0, val->dtype, &out);
}

static enum rl_status infer_topk(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	char b1[RL_SSTR];
	if (sx->rank >= 0) {
		int axis;
		int64_t a = rl_node_attr_int(n, "axis", -1);
		if (sx->rank == 0 || !rl_axis_norm(a, sx->rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for input %s",
			                      (long long)a, rl_sstr(sx, b1));
		out = *sx;
		double k;
		bool known = n->nin < 2 ? (k = (double)rl_node_attr_int(n, "k", -1), k >= 0)
		                        : const_scalar(g, n->in[1], &k);
		if (!known) {
			out.d[axis] = rl_dim_unk(g, node, 0, axis);
		} else {
			if (k < 0 || (sx->d[axis].v >= 0 && k > (double)sx->d[axis].v))
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "k %g is out of range for axis %d of input %s", k,
				                      axis, rl_sstr(sx, b1));
			out.d[axis] = rl_dim_num((int64_t)k);
		}
	}
	st = rl_infer_set(g, node, 0, x->dtype, &out);
	if (st == RL_OK) {
		/* the indices share the values' dims (a declared dim included) */
		struct rl_shape sv = n->out[0] != RL_NONE ? g->values[n->out[0]].shape : out;
		st = rl_infer_set(g, node, 1, RL_DT_INT64, &sv);
	}
	return st;
}

/* ---- RMSNormalization, LpNormalization ------------------------------------ */

static enum rl_status infer_rownorm(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK && n->op == RL_OP_RMSNormalization)
		st = rl_infer_dtype_same(g, node, 0, 1);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR];
	int axis;
	int64_t a = rl_node_attr_int(n, "axis", -1);
	if (x->shape.rank >= 0 && !rl_axis_norm(a, x->shape.rank, false, &axis))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for input %s",
		                      (long long)a, rl_sstr(&x->shape, b1));
	if (n->op == RL_OP_LpNormalization) {
		int64_t p = rl_node_attr_int(n, "p", 2);
		if (p != 1 && p != 2)
			return rl_graph_error(g, n, RL_ERR_INVALID, "attribute p=%lld is not 1 or 2",
			                      (long long)p);
	}
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

/* ---- Resize, Upsample ------------------------------------------------------ */

/*
 * Which input holds what, by opset: Upsample-7 has a scales attribute,
 * Upsample-9 and Resize-10 take (X, scales), Resize-11 on (X, roi, scales,
 * sizes) where an empty scales tensor means "use sizes". Slots are -1 when
 * absent.
 */
void rl_resize_slots(const struct rl_graph *g, const struct rl_node *n, int *roi, int *scales,
                     int *sizes)
{
	*roi = *scales = *sizes = -1;
	if (n->op == RL_OP_Upsample || n->opset < 11) {
		if (rl_node_in(n, 1) != RL_NONE)
			*scales = 1;
		return;
	}
	if (rl_node_in(n, 1) != RL_NONE)
		*roi = 1;
	uint32_t sc = rl_node_in(n, 2), sz = rl_node_in(n, 3);
	if (sc != RL_NONE && rl_shape_numel(&g->values[sc].shape) != 0)
		*scales = 2;
	if (sz != RL_NONE && rl_shape_numel(&g->values[sz].shape) != 0)
		*sizes = 3;
}

static enum rl_status infer_resize(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	int roi, sc, sz;
	rl_resize_slots(g, n, &roi, &sc, &sz);
	const struct rl_shape *sx = &x->shape;
	char b1[RL_SSTR];
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, sx);
	int r = sx->rank;
	/* the axes the scales or sizes name (default: all) */
	int ax[RL_MAX_RANK], nax = r;
	const int64_t *av = NULL;
	int na = rl_node_attr_ints(n, "axes", &av);
	if (na > 0) {
		if (na > r)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axes has %d entries for input %s",
			                      na, rl_sstr(sx, b1));
		nax = na;
		for (int i = 0; i < na; i++)
			if (!rl_axis_norm(av[i], r, false, &ax[i]))
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "axis %lld is out of range for input %s",
				                      (long long)av[i], rl_sstr(sx, b1));
	} else {
		for (int i = 0; i < r; i++)
			ax[i] = i;
	}
	struct rl_shape out = *sx;
	double f[RL_MAX_RANK];
	bool known = false;
	const char *policy = rl_node_attr_str(n, "keep_aspect_ratio_policy", "stretch");
	if (n->op == RL_OP_Upsample && n->opset < 9) {
		const struct rl_attr *a = rl_node_attr(n, "scales");
		if (!a || a->kind != RL_ATTR_FLOATS || a->n != r)
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "attribute scales must hold %d floats", r);
		for (int i = 0; i < r; i++)
			f[i] = a->floats[i];
		known = true;
	} else if (sc >= 0) {
		uint32_t v = n->in[sc];
		int64_t ne = rl_shape_numel(&g->values[v].shape);
		if (ne >= 0 && ne != nax)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "scales has %lld entries for %d axes", (long long)ne, nax);
		if (rl_value_is_const(g, v) && g->values[v].data) {
			for (int i = 0; i < nax; i++)
				f[i] = rl_value_get_float(g, v, i);
			known = true;
		}
	}
	if (sc >= 0 || (n->op == RL_OP_Upsample && n->opset < 9)) {
		for (int i = 0; i < nax; i++) {
			int d = ax[i];
			if (!known || sx->d[d].v < 0) {
				out.d[d] = rl_dim_unk(g, node, 0, d);
				continue;
			}
			if (!(f[i] > 0))
				return rl_graph_error(g, n, RL_ERR_SHAPE, "scale %g must be positive", f[i]);
			out.d[d] = rl_dim_num((int64_t)floor((double)sx->d[d].v * f[i]));
		}
	} else if (sz >= 0) {
		uint32_t v = n->in[sz];
		int64_t ne = rl_shape_numel(&g->values[v].shape);
		if (ne >= 0 && ne != nax)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "sizes has %lld entries for %d axes", (long long)ne, nax);
		bool c = rl_value_is_const(g, v) && g->values[v].data;
		bool stretch = strcmp(policy, "stretch") == 0;
		double s = strcmp(policy, "not_larger") == 0 ? 1e300 : 0;
		for (int i = 0; c && !stretch && i < nax; i++) {
			if (sx->d[ax[i]].v <= 0) {
				c = false;
				break;
			}
			double q = (double)rl_value_get_int(g, v, i) / (double)sx->d[ax[i]].v;
			s = strcmp(policy, "not_larger") == 0 ? (q < s ? q : s) : (q > s ? q : s);
		}
		for (int i = 0; i < nax; i++) {
			int d = ax[i];
			if (!c)
				out.d[d] = rl_dim_unk(g, node, 0, d);
			else if (stretch)
				out.d[d] = rl_dim_num(rl_value_get_int(g, v, i));
			else
				out.d[d] = rl_dim_num((int64_t)floor(s * (double)sx->d[d].v + 0.5));
		}
	} else {
		return rl_graph_error(g, n, RL_ERR_INVALID, "neither scales nor sizes is given");
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- CenterCropPad, ReverseSequence --------------------------------------- */

static enum rl_status infer_center_crop_pad(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape;
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, sx);
	char b1[RL_SSTR];
	int ax[RL_MAX_RANK], nax = sx->rank;
	const int64_t *av = NULL;
	int na = rl_node_attr_ints(n, "axes", &av);
	if (na > sx->rank)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "axes has %d entries for input %s", na,
		                      rl_sstr(sx, b1));
	if (na > 0) {
		nax = na;
		for (int i = 0; i < na; i++)
			if (!rl_axis_norm(av[i], sx->rank, false, &ax[i]))
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "axis %lld is out of range for input %s",
				                      (long long)av[i], rl_sstr(sx, b1));
	} else {
		for (int i = 0; i < nax; i++)
			ax[i] = i;
	}
	uint32_t sv = n->in[1];
	int64_t ne = rl_shape_numel(&g->values[sv].shape);
	if (ne >= 0 && ne != nax)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "shape has %lld entries for %d axes",
		                      (long long)ne, nax);
	bool c = rl_value_is_const(g, sv) && g->values[sv].data;
	struct rl_shape out = *sx;
	for (int i = 0; i < nax; i++) {
		if (!c) {
			out.d[ax[i]] = rl_dim_unk(g, node, 0, ax[i]);
			continue;
		}
		int64_t v = rl_value_get_int(g, sv, i);
		if (v < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "shape entry %d is negative (%lld)", i,
			                      (long long)v);
		out.d[ax[i]] = rl_dim_num(v);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_reverse_sequence(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *l = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	int64_t ba = rl_node_attr_int(n, "batch_axis", 1), ta = rl_node_attr_int(n, "time_axis", 0);
	char b1[RL_SSTR], b2[RL_SSTR];
	if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
		return rl_graph_error(g, n, RL_ERR_INVALID,
		                      "batch_axis %lld and time_axis %lld must be 0 and 1 in some "
		                      "order", (long long)ba, (long long)ta);
	if (x->shape.rank >= 0 && x->shape.rank < 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s must have rank >= 2",
		                      rl_sstr(&x->shape, b1));
	if (x->shape.rank >= 2 && l->shape.rank >= 0 &&
	    (l->shape.rank != 1 || rl_dim_differ(l->shape.d[0], x->shape.d[ba])))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "sequence_lens %s must be (batch) for input %s",
		                      rl_sstr(&l->shape, b2), rl_sstr(&x->shape, b1));
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

/* ---- Einsum ----------------------------------------------------------------- */

/* One term ("bij", "...ii", "") into labels; nell = axes the ellipsis covers
 * (-1: no ellipsis in the term). Returns the letters and fills lab[]. */
static bool einsum_term(const char *t, size_t len, int rank, int maxell, char *lab, int *nell,
                        char *why, size_t whylen)
{
	int nlet = 0;
	bool ell = false;
	for (size_t i = 0; i < len; i++) {
		if (t[i] == ' ')
			continue;
		if (t[i] == '.') {
			if (ell || i + 2 >= len + 0 || t[i + 1] != '.' || t[i + 2] != '.') {
				snprintf(why, whylen, "malformed ellipsis");
				return false;
			}
			ell = true;
			i += 2;
			continue;
		}
		if (!((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z'))) {
			snprintf(why, whylen, "'%c' is not a letter", t[i]);
			return false;
		}
		nlet++;
	}
	int ne = ell ? (rank >= 0 ? rank - nlet : maxell) : 0;
	if (ne < 0 || (rank >= 0 && !ell && nlet != rank)) {
		snprintf(why, whylen, "a term has %d letters for rank %d", nlet, rank);
		return false;
	}
	if (nlet + ne > RL_MAX_RANK) {
		snprintf(why, whylen, "a term has more than %d axes", RL_MAX_RANK);
		return false;
	}
	*nell = ell ? ne : -1;
	int k = 0;
	for (size_t i = 0; i < len; i++) {
		if (t[i] == ' ')
			continue;
		if (t[i] == '.') {
			for (int j = 0; j < ne; j++)
				lab[k++] = (char)('0' + (maxell - ne) + j);
			i += 2;
			continue;
		}
		lab[k++] = t[i];
	}
	return true;
}

bool rl_einsum_parse(const char *eq, int nin, const int *ranks, struct rl_einsum *e,
                     char *why, size_t whylen)
{
	memset(e, 0, sizeof(*e));
	if (nin < 1 || nin > RL_EINSUM_MAX_IN) {
		snprintf(why, whylen, "%d operands (1 to %d handled)", nin, RL_EINSUM_MAX_IN);
		return false;
	}
	const char *arrow = strstr(eq, "->");
	size_t lhs = arrow ? (size_t)(arrow - eq) : strlen(eq);
	/* the ellipsis width: the most axes any operand's ellipsis covers */
	int maxell = 0, nterm = 0;
	const char *p = eq;
	for (int i = 0; i < nin; i++) {
		const char *end = memchr(p, ',', lhs - (size_t)(p - eq));
		size_t len = end ? (size_t)(end - p) : lhs - (size_t)(p - eq);
		int nlet = 0;
		for (size_t k = 0; k < len; k++)
			nlet += (p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z');
		if (memchr(p, '.', len) && ranks[i] - nlet > maxell)
			maxell = ranks[i] - nlet;
		nterm++;
		if (!end) {
			if (i != nin - 1) {
				snprintf(why, whylen, "the equation has %d terms for %d operands", nterm, nin);
				return false;
			}
			break;
		}
		p = end + 1;
		if (i == nin - 1) {
			snprintf(why, whylen, "the equation has more terms than the %d operands", nin);
			return false;
		}
	}
	e->nin = nin;
	p = eq;
	for (int i = 0; i < nin; i++) {
		const char *end = memchr(p, ',', lhs - (size_t)(p - eq));
		size_t len = end ? (size_t)(end - p) : lhs - (size_t)(p - eq);
		int nell;
		if (!einsum_term(p, len, ranks[i], maxell, e->lab[i], &nell, why, whylen))
			return false;
		e->rank[i] = ranks[i];
		p = end ? end + 1 : p + len;
	}
	if (arrow) {
		int nell;
		const char *o = arrow + 2;
		if (!einsum_term(o, strlen(o), -1, maxell, e->olab, &nell, why, whylen))
			return false;
		int k = 0;
		for (const char *c = o; *c; c++)
			k += (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');
		e->orank = k + (nell > 0 ? nell : 0);
		for (int i = 0; i < e->orank; i++) {
			bool found = false;
			for (int j = 0; j < nin && !found; j++)
				found = memchr(e->lab[j], e->olab[i], (size_t)e->rank[j]) != NULL;
			if (!found) {
				snprintf(why, whylen, "output label '%c' is in no operand", e->olab[i]);
				return false;
			}
		}
		return true;
	}
	/* implicit output: ellipsis axes, then letters used once, sorted */
	for (int j = 0; j < maxell; j++)
		e->olab[e->orank++] = (char)('0' + j);
	for (int c = 'A'; c <= 'z'; c++) {
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			continue;
		int uses = 0;
		for (int i = 0; i < nin; i++)
			for (int k = 0; k < e->rank[i]; k++)
				uses += e->lab[i][k] == c;
		if (uses == 1 && e->orank < RL_MAX_RANK)
			e->olab[e->orank++] = (char)c;
	}
	return true;
}

static enum rl_status infer_einsum(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	int ranks[RL_EINSUM_MAX_IN];
	if (n->nin > RL_EINSUM_MAX_IN)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "%d operands (at most %d handled)",
		                      n->nin, RL_EINSUM_MAX_IN);
	struct rl_value *x = rl_infer_in(g, n, 0);
	for (int i = 0; i < n->nin; i++) {
		enum rl_status st = rl_infer_dtype_same(g, node, 0, i);
		if (st != RL_OK)
			return st;
		ranks[i] = g->values[n->in[i]].shape.rank;
		if (ranks[i] < 0) {
			struct rl_shape unk = {.rank = -1};
			return rl_infer_set(g, node, 0, x->dtype, &unk);
		}
	}
	struct rl_einsum e;
	char why[160];
	const char *eq = rl_node_attr_str(n, "equation", NULL);
	if (!eq)
		return rl_graph_error(g, n, RL_ERR_INVALID, "attribute equation is missing");
	if (!rl_einsum_parse(eq, n->nin, ranks, &e, why, sizeof(why)))
		return rl_graph_error(g, n, RL_ERR_INVALID, "equation '%s': %s", eq, why);
	struct rl_shape out = {.rank = e.orank};
	for (int k = 0; k < e.orank; k++) {
		struct rl_dim d = rl_dim_unk(g, node, 0, k);
		for (int i = 0; i < n->nin; i++)
			for (int a = 0; a < e.rank[i]; a++) {
				struct rl_dim da = g->values[n->in[i]].shape.d[a];
				if (e.lab[i][a] != e.olab[k])
					continue;
				if (rl_dim_differ(d, da) && d.v != 1 && da.v != 1)
					return rl_graph_error(g, n, RL_ERR_SHAPE,
					                      "label '%c' has sizes %lld and %lld", e.olab[k],
					                      (long long)d.v, (long long)da.v);
				if (d.v < 0 || d.v == 1)
					d = da;
			}
		out.d[k] = d;
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- GridSample ------------------------------------------------------------- */

static enum rl_status infer_grid_sample(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *gr = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_FLOAT);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape, *sg = &gr->shape;
	struct rl_shape out = {.rank = -1};
	char b1[RL_SSTR], b2[RL_SSTR];
	if (sx->rank >= 0 && sg->rank >= 0) {
		int r = sx->rank - 2;
		if (r < 1 || sg->rank != sx->rank || rl_dim_differ(sg->d[0], sx->d[0]) ||
		    rl_dim_differ(sg->d[sg->rank - 1], rl_dim_num(r)))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "grid %s does not fit input %s: it must be (N, D1..Dr, r)",
			                      rl_sstr(sg, b2), rl_sstr(sx, b1));
		out.rank = sx->rank;
		out.d[0] = sx->d[0];
		out.d[1] = sx->d[1];
		for (int i = 0; i < r; i++)
			out.d[2 + i] = sg->d[1 + i];
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

enum rl_status rl_infer_index(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_CumSum:
	case RL_OP_CumProd:
		return infer_cum(g, node);
	case RL_OP_NegativeLogLikelihoodLoss:
	case RL_OP_SoftmaxCrossEntropyLoss:
		return infer_loss(g, node);
	case RL_OP_ScatterElements:
	case RL_OP_Scatter:
	case RL_OP_ScatterND:
		return infer_scatter(g, node);
	case RL_OP_GatherND: return infer_gather_nd(g, node);
	case RL_OP_OneHot: return infer_onehot(g, node);
	case RL_OP_TopK: return infer_topk(g, node);
	case RL_OP_RMSNormalization:
	case RL_OP_LpNormalization:
		return infer_rownorm(g, node);
	case RL_OP_Resize:
	case RL_OP_Upsample:
		return infer_resize(g, node);
	case RL_OP_CenterCropPad: return infer_center_crop_pad(g, node);
	case RL_OP_ReverseSequence: return infer_reverse_sequence(g, node);
	case RL_OP_Einsum: return infer_einsum(g, node);
	case RL_OP_GridSample: return infer_grid_sample(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * With n = numel(X), m = numel(target) (one loss term per element of it),
 * C the class count and T = RL_FLOPS_TRANS:
 *   CumSum, CumProd  n            one add or multiply per element; the axis
 *                                 input is not charged
 *   NegativeLogLikelihoodLoss  m * 3 (+ m with reduction)
 *                    per term: compare with ignore_index, negate, weight
 *                    multiply; sum/mean add one accumulate per term (and
 *                    the weight sum for mean, counted in the same add).
 *                    Bytes: the target, the weight, and only the m gathered
 *                    elements of X (access gathered), the output written.
 *   SoftmaxCrossEntropyLoss  n * (4 + T) + (n / C) * T + the NLL part
 *                    a LogSoftmax over C (max, subtract, exp, sum, subtract
 *                    per element, one log per row), then NLL on it; bytes
 *                    are the baseline (X read whole, log_prob written when
 *                    asked for).
 *   ScatterElements, Scatter, ScatterND  u = numel(updates): u reduction
 *                    ops (0 for reduction none); X copied to Y, indices
 *                    and updates read once, u elements of Y written again
 *                    at gathered places (access gathered)
 *   GatherND         0 FLOPs; the indices and only the gathered numel(Y)
 *                    elements of X read, Y written (access gathered)
 *   OneHot           numel(Y) compares; indices and values read, Y written
 *                    (depth is not charged)
 *   TopK             n + numel(Y) * K: one compare with the current K-th
 *                    value per element, and at worst K compare-and-moves
 *                    per kept one (the insertion the kernel runs); X read,
 *                    the values and int64 indices written
 *   RMSNormalization n * 4 + r * (2 + T): square-add, normalize, scale per
 *                    element; a divide, + epsilon and one rsqrt per row
 *   LpNormalization  n * 3 + r * (1 + T [p = 2]): abs or square-add, a
 *                    divide per element; one sqrt per row for p = 2
 *                    (r rows = n / the normalized length)
 *   Resize, Upsample p = numel(Y): nearest 0 FLOPs (a gathered copy);
 *                    linear 2 * p * 2^a and cubic 2 * p * 4^a multiply-adds
 *                    for the a resized axes (antialias widens the taps by
 *                    1 / scale on a downscaled axis); X read once, Y
 *                    written, the roi, scales and sizes not charged;
 *                    access gathered
 *   CenterCropPad, ReverseSequence  0 FLOPs; X read once (at most the
 *                    part kept), Y written; the shape and sequence_lens
 *                    inputs are read but small
 *   Einsum           2 * nin * the product of every label's size: the loop
 *                    nest the kernel runs, with nin - 1 multiplies and one
 *                    add per iteration, counted as nin multiply-adds;
 *                    operands read once, Y written
 *   GridSample       2 * numel(Y) * k^r multiply-adds for k taps per
 *                    spatial axis (nearest 1, linear 2, cubic 4) on the r
 *                    spatial axes; X and the grid read once, Y written;
 *                    access gathered
 */
#include "cost_impl.h"

bool rl_count_index(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double t = RL_FLOPS_TRANS;
	switch (n->op) {
	case RL_OP_CumSum:
	case RL_OP_CumProd:
		c->flops = rl_cnt_in(g, n, 0);
		c->bytes_read -= rl_cnt_bytes(g, rl_node_in(n, 1));
		if (rl_value_is_const(g, rl_node_in(n, 1)))
			c->weight_bytes -= rl_cnt_bytes(g, rl_node_in(n, 1));
		return true;
	case RL_OP_NegativeLogLikelihoodLoss:
	case RL_OP_SoftmaxCrossEntropyLoss: {
		double m = rl_cnt_in(g, n, 1), ne = rl_cnt_in(g, n, 0);
		double cls = rl_cnt_dim(g, n, 0, 1);
		c->flops = m * 3 + (rl_loss_reduction(n) ? m : 0);
		if (n->op == RL_OP_SoftmaxCrossEntropyLoss) {
			c->flops += ne * (4 + t) + (cls > 0 ? ne / cls : 0) * t;
			return true;
		}
		uint32_t x = rl_node_in(n, 0);
		double xb = rl_cnt_bytes(g, x), gb = m * (double)rl_dtype_size(g->values[x].dtype);
		c->bytes_read += gb - xb;
		if (rl_value_is_const(g, x))
			c->weight_bytes += gb - xb;
		return true;
	}
	case RL_OP_ScatterElements:
	case RL_OP_Scatter:
	case RL_OP_ScatterND: {
		double u = rl_cnt_in(g, n, 2);
		uint32_t y = n->out[0];
		c->flops = rl_scatter_reduction(n) > 0 ? u : 0;
		c->bytes_write += u * (double)rl_dtype_size(g->values[y].dtype);
		c->access = RL_ACCESS_GATHER;
		return true;
	}
	case RL_OP_GatherND: {
		uint32_t x = rl_node_in(n, 0);
		double xb = rl_cnt_bytes(g, x);
		double gb = rl_cnt_out(g, n, 0) * (double)rl_dtype_size(g->values[x].dtype);
		c->bytes_read += gb - xb;
		if (rl_value_is_const(g, x))
			c->weight_bytes += gb - xb;
		c->access = RL_ACCESS_GATHER;
		return true;
	}
	case RL_OP_OneHot:
		c->flops = rl_cnt_out(g, n, 0);
		c->bytes_read -= rl_cnt_bytes(g, rl_node_in(n, 1));
		if (rl_value_is_const(g, rl_node_in(n, 1)))
			c->weight_bytes -= rl_cnt_bytes(g, rl_node_in(n, 1));
		return true;
	case RL_OP_TopK: {
		int r = g->values[n->out[0]].shape.rank;
		int64_t a = rl_node_attr_int(n, "axis", -1);
		if (r <= 0)
			return false;
		if (a < 0)
			a += r;
		double k = (double)g->values[n->out[0]].shape.d[a].v;
		c->flops = rl_cnt_in(g, n, 0) + rl_cnt_out(g, n, 0) * k;
		c->bytes_read -= rl_cnt_bytes(g, rl_node_in(n, 1));
		if (rl_value_is_const(g, rl_node_in(n, 1)))
			c->weight_bytes -= rl_cnt_bytes(g, rl_node_in(n, 1));
		return true;
	}
	case RL_OP_RMSNormalization:
	case RL_OP_LpNormalization: {
		const struct rl_shape *sx = &g->values[rl_node_in(n, 0)].shape;
		int64_t a = rl_node_attr_int(n, "axis", -1);
		if (a < 0)
			a += sx->rank;
		double len = 1, ne = rl_cnt_in(g, n, 0);
		bool rms = n->op == RL_OP_RMSNormalization;
		for (int i = (int)a; i < sx->rank && (rms || i == a); i++)
			len *= (double)sx->d[i].v;
		double rows = len > 0 ? ne / len : 0;
		if (rms)
			c->flops = ne * 4 + rows * (2 + t);
		else
			c->flops = ne * 3 + rows * (1 + (rl_node_attr_int(n, "p", 2) == 2 ? t : 0));
		return true;
	}
	case RL_OP_CenterCropPad: {
		uint32_t x = rl_node_in(n, 0);
		double kept = fmin(rl_cnt_numel(g, x), rl_cnt_out(g, n, 0));
		double xb = rl_cnt_bytes(g, x), kb = kept * (double)rl_dtype_size(g->values[x].dtype);
		c->bytes_read += kb - xb;
		if (rl_value_is_const(g, x))
			c->weight_bytes += kb - xb;
		return true;
	}
	case RL_OP_ReverseSequence:
		return true;
	case RL_OP_GridSample: {
		const char *mode = rl_node_attr_str(n, "mode", "linear");
		double k = strcmp(mode, "nearest") == 0 ? 1 : strcmp(mode, "cubic") == 0 ||
		           strcmp(mode, "bicubic") == 0 ? 4 : 2;
		int r = g->values[rl_node_in(n, 0)].shape.rank - 2;
		c->flops = 2 * rl_cnt_out(g, n, 0) * pow(k, r > 0 ? r : 0);
		c->access = RL_ACCESS_GATHER;
		return true;
	}
	case RL_OP_Einsum: {
		int ranks[RL_EINSUM_MAX_IN];
		if (n->nin > RL_EINSUM_MAX_IN)
			return false;
		for (int i = 0; i < n->nin; i++)
			ranks[i] = g->values[n->in[i]].shape.rank;
		struct rl_einsum e;
		char why[160];
		if (!rl_einsum_parse(rl_node_attr_str(n, "equation", ""), n->nin, ranks, &e, why,
		                     sizeof(why)))
			return false;
		double iters = 1;
		for (int ch = 0; ch < 128; ch++) {
			double sz = 0;
			for (int i = 0; i < n->nin; i++)
				for (int a = 0; a < e.rank[i]; a++)
					if (e.lab[i][a] == ch && g->values[n->in[i]].shape.d[a].v > sz)
						sz = (double)g->values[n->in[i]].shape.d[a].v;
			if (sz > 0)
				iters *= sz;
		}
		c->flops = 2 * (double)n->nin * iters;
		return true;
	}
	case RL_OP_Resize:
	case RL_OP_Upsample: {
		const struct rl_shape *sx = &g->values[rl_node_in(n, 0)].shape;
		const struct rl_shape *sy = &g->values[n->out[0]].shape;
		const char *mode = rl_node_attr_str(n, "mode", "nearest");
		bool aa = rl_node_attr_int(n, "antialias", 0) != 0;
		double taps = 1, base = strcmp(mode, "cubic") == 0 ? 4 : strcmp(mode, "linear") == 0 ? 2 : 0;
		for (int d = 0; base > 0 && d < sx->rank; d++) {
			if (sx->d[d].v == sy->d[d].v)
				continue;
			double t = base;
			if (aa && sy->d[d].v < sx->d[d].v && sy->d[d].v > 0)
				t = base * ceil((double)sx->d[d].v / (double)sy->d[d].v);
			taps *= t;
		}
		c->flops = base > 0 ? 2 * rl_cnt_out(g, n, 0) * taps : 0;
		for (int i = 1; i < n->nin; i++) {
			uint32_t v = rl_node_in(n, i);
			c->bytes_read -= rl_cnt_bytes(g, v);
			if (rl_value_is_const(g, v))
				c->weight_bytes -= rl_cnt_bytes(g, v);
		}
		c->access = RL_ACCESS_GATHER;
		return true;
	}
	default:
		return false;
	}
}
