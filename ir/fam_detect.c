/*
 * fam_detect.c - shape inference and cost for the detection family:
 * RoiAlign, NonMaxSuppression, DeformConv, Col2Im and MaxUnpool, and the
 * data-dependent selections NonZero, Compress and Unique.
 *
 * Four of these (NonZero, Compress, Unique, NonMaxSuppression) produce an
 * output whose extent along one axis depends on the input values: how many
 * elements are non-zero, how many conditions hold, how many distinct
 * values there are, how many boxes survive. rlopt generates static-shape C,
 * so such an output is given its static upper bound along that axis (every
 * element non-zero, every condition true, every value distinct, no box
 * suppressed) and the value records the axis in extent_axis. The generated
 * code sizes the buffer for the bound, writes the data of the actual extent
 * densely at its start, and reports the extent of each run (see
 * backends/c/emit_detect.c and the README's section on the generated API).
 *
 * A dim the model declares on such an axis describes one run of the model,
 * not the buffer, and is replaced by the bound. Only a graph output may
 * carry a bounded extent: rl_detect_check_inputs() rejects, with a message
 * naming the node, any node that reads one (its own shape would depend on
 * the values too). When every input of NonZero or Compress is constant
 * (and small), inference evaluates the node instead: the output is then an
 * exact constant that any node may read.
 *
 * Sizes given as inputs (Col2Im's image_shape and block_shape, MaxUnpool's
 * output_shape) give static dims when constant; otherwise the dims stay
 * unknown and the model's declared output shape fixes them.
 */
#include "infer_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Set output k with `axis` bounded (see above). */
static enum rl_status set_bounded(struct rl_graph *g, uint32_t node, int k, enum rl_dtype dt,
                                  const struct rl_shape *s, int axis)
{
	struct rl_node *n = &g->nodes[node];
	if (k >= n->nout || n->out[k] == RL_NONE)
		return RL_OK;
	struct rl_value *val = &g->values[n->out[k]];
	if (s->rank >= 0 && val->shape.rank == s->rank)
		val->shape.d[axis] = s->d[axis]; /* a declared dim counts one run only */
	enum rl_status st = rl_infer_set(g, node, k, dt, s);
	if (st == RL_OK)
		val->extent_axis = (uint8_t)(axis + 1);
	return st;
}

enum rl_status rl_detect_check_inputs(struct rl_graph *g, uint32_t node)
{
	const struct rl_node *n = &g->nodes[node];
	for (int i = 0; i < n->nin; i++) {
		uint32_t v = n->in[i];
		if (v == RL_NONE || !g->values[v].extent_axis)
			continue;
		const struct rl_value *val = &g->values[v];
		uint32_t p = val->producer;
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "input '%s' has a data-dependent extent along axis %d "
		                      "(from %s '%s'); rlopt generates static-shape C, which "
		                      "passes such a tensor out only as a graph output",
		                      val->name, val->extent_axis - 1,
		                      p == RL_NONE ? "?" : rl_op_table[g->nodes[p].op].name,
		                      p == RL_NONE ? "?" : g->nodes[p].name);
	}
	return RL_OK;
}

/* Every present input constant and at most 64Ki elements. */
static bool foldable(const struct rl_graph *g, const struct rl_node *n)
{
	for (int i = 0; i < n->nin; i++) {
		uint32_t v = n->in[i];
		if (v == RL_NONE)
			continue;
		int64_t ne = rl_shape_numel(&g->values[v].shape);
		if (!rl_value_is_const(g, v) || ne < 0 || ne > 65536)
			return false;
	}
	return true;
}

/* Set output k to the exact shape s and the constant `bytes` (reusing the
 * block of the previous inference run when it is the same). */
static enum rl_status set_folded(struct rl_graph *g, uint32_t node, int k, enum rl_dtype dt,
                                 const struct rl_shape *s, const void *bytes, size_t nbytes)
{
	enum rl_status st = rl_infer_set(g, node, k, dt, s);
	if (st != RL_OK)
		return st;
	uint32_t v = g->nodes[node].out[k];
	g->values[v].extent_axis = 0;
	size_t pn = 0;
	const void *prev = rl_infer_prev_data(v, &pn);
	if (!prev || pn != nbytes || (nbytes && memcmp(prev, bytes, nbytes))) {
		void *p = rl_graph_own(g, nbytes ? nbytes : 1);
		if (!p)
			return rl_graph_error(g, &g->nodes[node], RL_ERR_NOMEM, "out of memory");
		if (nbytes)
			memcpy(p, bytes, nbytes);
		prev = p;
	}
	rl_value_set_data(g, v, prev, nbytes);
	return RL_OK;
}

/* Scalar (or one-element) constant input i as a double; false otherwise. */
static bool const_scalar(const struct rl_graph *g, const struct rl_node *n, int i, double *x)
{
	uint32_t v = rl_node_in(n, i);
	if (v == RL_NONE || !rl_value_is_const(g, v) || rl_shape_numel(&g->values[v].shape) != 1)
		return false;
	*x = rl_value_get_float(g, v, 0);
	return true;
}

/* ---- RoiAlign ------------------------------------------------------------ */

static enum rl_status infer_roi_align(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *r = rl_infer_in(g, n, 1),
	                *bi = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 1);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 2, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR], b2[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank != 4)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "X of shape %s is not N x C x H x W",
		                      rl_sstr(&x->shape, b1));
	if ((r->shape.rank >= 0 && (r->shape.rank != 2 || rl_dim_differ(r->shape.d[1],
	                                                               rl_dim_num(4)))) ||
	    (bi->shape.rank >= 0 && bi->shape.rank != 1) ||
	    (r->shape.rank == 2 && bi->shape.rank == 1 &&
	     rl_dim_differ(r->shape.d[0], bi->shape.d[0])))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "rois %s and batch_indices %s are not R x 4 and R",
		                      rl_sstr(&r->shape, b1), rl_sstr(&bi->shape, b2));
	const char *mode = rl_node_attr_str(n, "mode", "avg");
	if (strcmp(mode, "avg") && strcmp(mode, "max"))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "mode '%s' is not avg or max", mode);
	const char *ctm = rl_node_attr_str(n, "coordinate_transformation_mode", "half_pixel");
	if (strcmp(ctm, "half_pixel") && strcmp(ctm, "output_half_pixel"))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "coordinate_transformation_mode '%s' is not half_pixel or "
		                      "output_half_pixel", ctm);
	int64_t oh = rl_node_attr_int(n, "output_height", 1), ow = rl_node_attr_int(n, "output_width", 1);
	if (oh < 1 || ow < 1 || rl_node_attr_int(n, "sampling_ratio", 0) < 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "output_height %lld, output_width %lld and sampling_ratio "
		                      "must be positive", (long long)oh, (long long)ow);
	struct rl_shape out = {.rank = 4};
	out.d[0] = bi->shape.rank == 1 ? bi->shape.d[0]
	           : r->shape.rank == 2 ? r->shape.d[0] : rl_dim_unk(g, node, 0, 0);
	out.d[1] = x->shape.rank == 4 ? x->shape.d[1] : rl_dim_unk(g, node, 0, 1);
	out.d[2] = rl_dim_num(oh);
	out.d[3] = rl_dim_num(ow);
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- NonMaxSuppression --------------------------------------------------- */

static enum rl_status infer_nms(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *bx = rl_infer_in(g, n, 0), *sc = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 1);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 2, RL_TC_INDEX);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 3, RL_TC_FLOAT);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 4, RL_TC_FLOAT);
	if (st != RL_OK)
		return st;
	int64_t cpb = rl_node_attr_int(n, "center_point_box", 0);
	if (cpb != 0 && cpb != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "center_point_box %lld is not 0 or 1",
		                      (long long)cpb);
	char b1[RL_SSTR], b2[RL_SSTR];
	const struct rl_shape *sb = &bx->shape, *ss = &sc->shape;
	if ((sb->rank >= 0 && (sb->rank != 3 || rl_dim_differ(sb->d[2], rl_dim_num(4)))) ||
	    (ss->rank >= 0 && ss->rank != 3) ||
	    (sb->rank == 3 && ss->rank == 3 &&
	     (rl_dim_differ(sb->d[0], ss->d[0]) || rl_dim_differ(sb->d[1], ss->d[2]))))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "boxes %s and scores %s are not B x N x 4 and B x C x N",
		                      rl_sstr(sb, b1), rl_sstr(ss, b2));
	struct rl_shape out = {.rank = 2};
	out.d[1] = rl_dim_num(3);
	out.d[0] = rl_dim_unk(g, node, 0, 0);
	if (ss->rank == 3 && rl_shape_is_static(ss)) {
		int64_t nb = ss->d[2].v;
		double m;
		if (n->nin < 3 || n->in[2] == RL_NONE || rl_shape_numel(&g->values[n->in[2]].shape) == 0)
			nb = 0; /* no max_output_boxes_per_class: nothing is selected */
		else if (const_scalar(g, n, 2, &m) && m < (double)nb)
			nb = m < 0 ? 0 : (int64_t)m;
		out.d[0] = rl_dim_num(ss->d[0].v * ss->d[1].v * nb);
	}
	return set_bounded(g, node, 0, RL_DT_INT64, &out, 0);
}

/* ---- DeformConv ---------------------------------------------------------- */

static enum rl_status infer_deform_conv(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *w = rl_infer_in(g, n, 1),
	                *off = rl_infer_in(g, n, 2);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
	for (int i = 1; i < 5 && st == RL_OK; i++)
		st = rl_infer_dtype_same(g, node, 0, i);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR], b2[RL_SSTR];
	const struct rl_shape *sx = &x->shape, *sw = &w->shape, *so = &off->shape;
	if (sx->rank >= 0 && sx->rank < 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "X of shape %s is not N x C x spatial",
		                      rl_sstr(sx, b1));
	if (sx->rank >= 0 && ((sw->rank >= 0 && sw->rank != sx->rank) ||
	                      (so->rank >= 0 && so->rank != sx->rank)))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "W %s and offset %s must have X's rank %d",
		                      rl_sstr(sw, b1), rl_sstr(so, b2), sx->rank);
	int64_t grp = rl_node_attr_int(n, "group", 1), og = rl_node_attr_int(n, "offset_group", 1);
	if (grp < 1 || og < 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "group %lld and offset_group %lld must be >= 1",
		                      (long long)grp, (long long)og);
	struct rl_shape out = {.rank = -1};
	int r = sx->rank >= 0 ? sx->rank : so->rank;
	if (r >= 3) {
		out.rank = r;
		out.d[0] = sx->rank >= 0 ? sx->d[0] : so->d[0];
		out.d[1] = sw->rank >= 0 ? sw->d[0] : rl_dim_unk(g, node, 0, 1);
		for (int i = 2; i < r; i++)
			out.d[i] = so->rank >= 0 ? so->d[i] : rl_dim_unk(g, node, 0, i);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- Col2Im -------------------------------------------------------------- */

static enum rl_status infer_col2im(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *is = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 2, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank != 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input of shape %s is not N x C*prod(block) x L",
		                      rl_sstr(&x->shape, b1));
	if (is->shape.rank != 1 || is->shape.d[0].v < 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "image_shape must be a 1-D tensor of known "
		                      "length, not %s", rl_sstr(&is->shape, b1));
	int nsp = (int)is->shape.d[0].v;
	if (nsp + 2 > RL_MAX_RANK)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "%d spatial axes are too many", nsp);
	int64_t img[RL_MAX_RANK], blk[RL_MAX_RANK];
	int ni = rl_value_get_ints(g, n->in[1], img, RL_MAX_RANK);
	int nbk = rl_value_get_ints(g, n->in[2], blk, RL_MAX_RANK);
	struct rl_shape out = {.rank = nsp + 2};
	out.d[0] = x->shape.rank == 3 ? x->shape.d[0] : rl_dim_unk(g, node, 0, 0);
	out.d[1] = rl_dim_unk(g, node, 0, 1);
	if (nbk == nsp && x->shape.rank == 3 && x->shape.d[1].v >= 0) {
		int64_t p = 1;
		for (int i = 0; i < nsp; i++)
			p *= blk[i] > 0 ? blk[i] : 0;
		if (p <= 0 || x->shape.d[1].v % p)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input dim 1 (%lld) is not a multiple "
			                      "of the block size %lld", (long long)x->shape.d[1].v,
			                      (long long)p);
		out.d[1] = rl_dim_num(x->shape.d[1].v / p);
	}
	for (int i = 0; i < nsp; i++)
		out.d[2 + i] = ni == nsp ? rl_dim_num(img[i]) : rl_dim_unk(g, node, 0, 2 + i);
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- MaxUnpool ----------------------------------------------------------- */

static enum rl_status infer_max_unpool(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *ix = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 2, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR], b2[RL_SSTR];
	const struct rl_shape *sx = &x->shape;
	if (sx->rank >= 0 && sx->rank < 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "X of shape %s is not N x C x spatial",
		                      rl_sstr(sx, b1));
	if (sx->rank >= 0 && ix->shape.rank >= 0 && ix->shape.rank != sx->rank)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "I %s must have X's shape %s",
		                      rl_sstr(&ix->shape, b1), rl_sstr(sx, b2));
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, sx);
	int nsp = sx->rank - 2;
	struct rl_shape out = *sx;
	int64_t os[RL_MAX_RANK];
	if (n->nin >= 3 && n->in[2] != RL_NONE) {
		int k = rl_value_get_ints(g, n->in[2], os, RL_MAX_RANK);
		if (k >= 0 && k != sx->rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "output_shape has %d entries; %d "
			                      "expected", k, sx->rank);
		for (int i = 0; i < sx->rank; i++)
			out.d[i] = k == sx->rank ? rl_dim_num(os[i]) : rl_dim_unk(g, node, 0, i);
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	const int64_t *ks, *ss, *ps;
	int nk = rl_node_attr_ints(n, "kernel_shape", &ks);
	int ns = rl_node_attr_ints(n, "strides", &ss);
	int np = rl_node_attr_ints(n, "pads", &ps);
	if (nk != nsp || (ns >= 0 && ns != nsp) || (np >= 0 && np != 2 * nsp))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "kernel_shape, strides and pads must "
		                      "have %d, %d and %d entries", nsp, nsp, 2 * nsp);
	for (int i = 0; i < nsp; i++) {
		struct rl_dim in = sx->d[2 + i];
		if (in.v < 0) {
			out.d[2 + i] = rl_dim_unk(g, node, 0, 2 + i);
			continue;
		}
		int64_t s = ns > 0 ? ss[i] : 1, pb = np > 0 ? ps[i] : 0, pe = np > 0 ? ps[nsp + i] : 0;
		int64_t o = (in.v - 1) * s - pb - pe + ks[i];
		if (o < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "spatial axis %d: output size would "
			                      "be %lld", i, (long long)o);
		out.d[2 + i] = rl_dim_num(o);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- NonZero, Compress, Unique ------------------------------------------- */

static enum rl_status infer_nonzero(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUMBOOL);
	if (st != RL_OK)
		return st;
	struct rl_shape out = {.rank = 2};
	out.d[0] = rl_dim_num(x->shape.rank >= 0 ? x->shape.rank : 0);
	out.d[1] = rl_dim_unk(g, node, 0, 1);
	if (x->shape.rank < 0)
		out.d[0] = rl_dim_unk(g, node, 0, 0);
	int64_t ne = rl_shape_numel(&x->shape);
	if (ne >= 0)
		out.d[1] = rl_dim_num(ne);
	if (!foldable(g, n) || n->nout < 1 || n->out[0] == RL_NONE)
		return set_bounded(g, node, 0, RL_DT_INT64, &out, 1);
	int r = x->shape.rank;
	int64_t *y = malloc((size_t)(r * ne + 1) * sizeof(*y)), cnt = 0;
	if (!y)
		return rl_graph_error(g, n, RL_ERR_NOMEM, "out of memory");
	for (int64_t i = 0; i < ne; i++)
		cnt += rl_value_get_float(g, n->in[0], i) != 0;
	for (int64_t i = 0, j = 0; i < ne; i++) {
		if (rl_value_get_float(g, n->in[0], i) == 0)
			continue;
		int64_t rest = i;
		for (int d = r - 1; d >= 0; d--) {
			y[d * cnt + j] = rest % x->shape.d[d].v;
			rest /= x->shape.d[d].v;
		}
		j++;
	}
	out.d[1] = rl_dim_num(cnt);
	st = set_folded(g, node, 0, RL_DT_INT64, &out, y, (size_t)(r * cnt) * sizeof(*y));
	free(y);
	return st;
}

static enum rl_status infer_compress(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *c = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_ANY);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_BOOL);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR];
	if (c->shape.rank >= 0 && c->shape.rank != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "condition of shape %s is not 1-D",
		                      rl_sstr(&c->shape, b1));
	const struct rl_attr *aa = rl_node_attr(n, "axis");
	struct rl_dim len = c->shape.rank == 1 ? c->shape.d[0] : rl_dim_unk(g, node, 0, 0);
	struct rl_shape out = {.rank = 1};
	int axis = 0;
	struct rl_dim full;
	if (aa) {
		if (x->shape.rank < 0)
			return rl_infer_set(g, node, 0, x->dtype, &x->shape);
		if (!rl_axis_norm(aa->i, x->shape.rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for input %s",
			                      (long long)aa->i, rl_sstr(&x->shape, b1));
		out = x->shape;
		full = x->shape.d[axis];
	} else {
		int64_t ne = rl_shape_numel(&x->shape);
		full = ne >= 0 ? rl_dim_num(ne) : rl_dim_unk(g, node, 0, 0);
	}
	/* np.compress: the condition may be shorter than the axis, never longer */
	if (len.v >= 0 && full.v >= 0 && len.v > full.v)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "condition has %lld entries, more than "
		                      "the %lld it selects from", (long long)len.v, (long long)full.v);
	out.d[axis] = len.v >= 0 && full.v >= 0 ? rl_dim_num(len.v) : rl_dim_unk(g, node, 0, axis);
	if (!foldable(g, n) || n->nout < 1 || n->out[0] == RL_NONE || !rl_dtype_size(x->dtype))
		return set_bounded(g, node, 0, x->dtype, &out, axis);
	/* constant: copy the selected slices, (outer, dim, inner) with `inner`
	 * elements per slice */
	int64_t outer = 1, inner = 1, cnt = 0, esz = (int64_t)rl_dtype_size(x->dtype);
	if (aa) {
		for (int i = 0; i < axis; i++)
			outer *= x->shape.d[i].v;
		for (int i = axis + 1; i < x->shape.rank; i++)
			inner *= x->shape.d[i].v;
	}
	for (int64_t i = 0; i < len.v; i++)
		cnt += rl_value_get_int(g, n->in[1], i) != 0;
	size_t nb = (size_t)(outer * cnt * inner * esz);
	unsigned char *y = malloc(nb + 1);
	if (!y)
		return rl_graph_error(g, n, RL_ERR_NOMEM, "out of memory");
	const unsigned char *src = x->data;
	size_t o = 0;
	for (int64_t a = 0; a < outer; a++)
		for (int64_t i = 0; i < len.v; i++)
			if (rl_value_get_int(g, n->in[1], i) != 0) {
				memcpy(y + o, src + ((a * full.v + i) * inner) * esz, (size_t)(inner * esz));
				o += (size_t)(inner * esz);
			}
	out.d[axis] = rl_dim_num(cnt);
	st = set_folded(g, node, 0, x->dtype, &out, y, nb);
	free(y);
	return st;
}

static enum rl_status infer_unique(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUM);
	if (st != RL_OK)
		return st;
	char b1[RL_SSTR];
	int64_t sorted = rl_node_attr_int(n, "sorted", 1);
	if (sorted != 0 && sorted != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "sorted %lld is not 0 or 1", (long long)sorted);
	const struct rl_attr *aa = rl_node_attr(n, "axis");
	struct rl_shape y = {.rank = 1}, v1 = {.rank = 1};
	int axis = 0;
	if (aa) {
		if (x->shape.rank < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input rank must be known with axis");
		if (!rl_axis_norm(aa->i, x->shape.rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for input %s",
			                      (long long)aa->i, rl_sstr(&x->shape, b1));
		y = x->shape;
		v1.d[0] = x->shape.d[axis];
	} else {
		int64_t ne = rl_shape_numel(&x->shape);
		v1.d[0] = ne >= 0 ? rl_dim_num(ne) : rl_dim_unk(g, node, 0, 0);
	}
	y.d[axis] = v1.d[0];
	st = set_bounded(g, node, 0, x->dtype, &y, axis);
	if (st == RL_OK)
		st = set_bounded(g, node, 1, RL_DT_INT64, &v1, 0);
	if (st == RL_OK)
		st = rl_infer_set(g, node, 2, RL_DT_INT64, &v1); /* one per input slice: exact */
	if (st == RL_OK)
		st = set_bounded(g, node, 3, RL_DT_INT64, &v1, 0);
	return st;
}

enum rl_status rl_infer_detect(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_RoiAlign: return infer_roi_align(g, node);
	case RL_OP_NonMaxSuppression: return infer_nms(g, node);
	case RL_OP_DeformConv: return infer_deform_conv(g, node);
	case RL_OP_Col2Im: return infer_col2im(g, node);
	case RL_OP_MaxUnpool: return infer_max_unpool(g, node);
	case RL_OP_NonZero: return infer_nonzero(g, node);
	case RL_OP_Compress: return infer_compress(g, node);
	case RL_OP_Unique: return infer_unique(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no detect-family shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * Counted on the static shapes, so a bounded output is priced at its bound
 * (the most the kernel can write). Per op:
 *   RoiAlign: each output element averages (or takes the max of) S samples,
 *     S = sampling_ratio^2 (or, adaptive, the bin's input area ~ H*W /
 *     (oh*ow)); a sample is a bilinear blend of 4 taps: 4 multiplies and 4
 *     adds, plus ~8 FLOPs of coordinates. FLOPs = numel(Y) * S * 16.
 *   NonMaxSuppression: per batch and class, sorting N scores (N log2 N
 *     comparisons) and, at worst, an IoU test of every pair (N^2 / 2 tests of
 *     ~20 FLOPs).
 *   DeformConv: the convolution's MACs (numel(Y) * C/group * prod(k)) plus a
 *     bilinear sample (~12 FLOPs with the mask) of each input channel at each
 *     kernel tap and output position: N * C * prod(k) * prod(out spatial).
 *   Col2Im: one add per input element. MaxUnpool: no arithmetic; Y is
 *     zeroed and X scattered (gathered access).
 *   NonZero: one compare per element. Compress: none (a copy). Unique: a
 *     sort, n log2 n comparisons of slices of the input (n along the axis,
 *     each comparison up to a slice long).
 * Bytes are the baseline: inputs read once, outputs written once.
 */
#include "cost_impl.h"

static double log2p(double x)
{
	return x > 1 ? log2(x) : 1;
}

bool rl_count_detect(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	switch (n->op) {
	case RL_OP_RoiAlign: {
		double sr = (double)rl_node_attr_int(n, "sampling_ratio", 0);
		double oh = (double)rl_node_attr_int(n, "output_height", 1);
		double ow = (double)rl_node_attr_int(n, "output_width", 1);
		double s = sr > 0 ? sr * sr : ceil(rl_cnt_dim(g, n, 0, 2) / oh) *
		                                  ceil(rl_cnt_dim(g, n, 0, 3) / ow);
		c->flops = rl_cnt_out(g, n, 0) * (s > 1 ? s : 1) * 16;
		return true;
	}
	case RL_OP_NonMaxSuppression: {
		double bc = rl_cnt_dim(g, n, 1, 0) * rl_cnt_dim(g, n, 1, 1), nb = rl_cnt_dim(g, n, 1, 2);
		c->flops = bc * (nb * log2p(nb) + nb * nb / 2 * 20);
		return true;
	}
	case RL_OP_DeformConv: {
		double oc = rl_cnt_dim(g, n, 1, 0), wn = rl_cnt_in(g, n, 1);
		double k = rl_cnt_dim(g, n, 1, 1) > 0 ? wn / oc / rl_cnt_dim(g, n, 1, 1) : 0;
		c->macs = oc > 0 ? rl_cnt_out(g, n, 0) * (wn / oc) : 0;
		double osp = oc > 0 && rl_cnt_dim(g, n, 0, 0) > 0
		                     ? rl_cnt_out(g, n, 0) / oc / rl_cnt_dim(g, n, 0, 0) : 0;
		c->flops = 2 * c->macs + 12 * rl_cnt_dim(g, n, 0, 0) * rl_cnt_dim(g, n, 0, 1) * k * osp;
		if (rl_node_in(n, 3) != RL_NONE)
			c->flops += rl_cnt_out(g, n, 0);
		return true;
	}
	case RL_OP_Col2Im: c->flops = rl_cnt_in(g, n, 0); return true;
	case RL_OP_MaxUnpool: c->flops = 0; return true;
	case RL_OP_NonZero: c->flops = rl_cnt_in(g, n, 0); return true;
	case RL_OP_Compress: c->flops = 0; return true;
	case RL_OP_Unique: {
		double m = rl_cnt_out(g, n, 2), ne = rl_cnt_in(g, n, 0);
		c->flops = m > 0 ? ne * log2p(m) : 0;
		return true;
	}
	default:
		return false;
	}
}
