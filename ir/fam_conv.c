/*
 * fam_conv.c - shape and dtype inference for Conv and ConvTranspose, and
 * the window arithmetic (kernel, strides, dilations, pads, auto_pad,
 * ceil_mode) that the pools share.
 *
 * Layout is ONNX's: X is N x C x D1..Dn; Conv's W is M x C/group x k1..kn,
 * ConvTranspose's W is C x M/group x k1..kn. Output sizes per spatial axis,
 * with the dilated kernel ek = (k-1)*d + 1:
 *   explicit pads:  (in + pb + pe - ek) / s + 1, dividing as C does (ceil for pools
 *                   with ceil_mode, dropping a last window that would start
 *                   inside the end padding, as the ONNX reference and
 *                   onnxruntime do)
 *   SAME_UPPER/LOWER: ceil(in / s);  VALID: explicit pads of zero
 *   transposed:     s*(in-1) + output_padding + ek - pb - pe; with SAME
 *                   min(in*s, s*(in-1) + output_padding + ek) (padding is
 *                   never negative; onnxruntime's rule, which the ONNX
 *                   text's plain in*s glosses over); output_shape when given.
 * Pads together with a SAME/VALID auto_pad are only accepted when all zero.
 */
#include "infer_impl.h"

#include <string.h>

/* Bound on kernel, stride, dilation, output_padding and group: with dims
 * <= 2^40 it keeps (k-1)*d + 1, s*(in-1) and channels*group far from int64
 * overflow, and no real model comes near it. */
#define RL_WIN_MAX ((int64_t)1 << 20)

static enum rl_status read_list(struct rl_graph *g, uint32_t node,
                                const char *name, int want, int64_t def,
                                int64_t lo, int64_t hi, int64_t *out)
{
	struct rl_node *n = &g->nodes[node];
	const int64_t *a;
	int cnt = rl_node_attr_ints(n, name, &a);
	if (cnt < 0) {
		for (int i = 0; i < want; i++)
			out[i] = def;
		return RL_OK;
	}
	if (cnt != want)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "attribute '%s' has %d entries; %d expected for the "
		                      "spatial axes", name, cnt, want);
	for (int i = 0; i < cnt; i++) {
		if (a[i] < lo || a[i] > hi)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "attribute '%s' entry %d is %lld; it must be in "
			                      "[%lld, %lld]", name, i, (long long)a[i],
			                      (long long)lo, (long long)hi);
		out[i] = a[i];
	}
	return RL_OK;
}

enum rl_status rl_window_read(struct rl_graph *g, uint32_t node, int nsp,
                              const struct rl_shape *w, struct rl_window *win)
{
	struct rl_node *n = &g->nodes[node];
	memset(win, 0, sizeof(*win));
	win->nsp = nsp;
	enum rl_status st;
	const int64_t *ks;
	if (rl_node_attr_ints(n, "kernel_shape", &ks) >= 0) {
		st = read_list(g, node, "kernel_shape", nsp, 1, 1, RL_WIN_MAX, win->k);
		if (st != RL_OK)
			return st;
		if (w && w->rank == nsp + 2)
			for (int i = 0; i < nsp; i++)
				if (w->d[2 + i].v >= 0 && w->d[2 + i].v != win->k[i]) {
					char b[RL_SSTR];
					return rl_graph_error(g, n, RL_ERR_SHAPE,
					                      "kernel_shape entry %d is %lld but the "
					                      "weight of shape %s has %lld", i,
					                      (long long)win->k[i], rl_sstr(w, b),
					                      (long long)w->d[2 + i].v);
				}
	} else if (w) {
		for (int i = 0; i < nsp; i++) {
			win->k[i] = w->d[2 + i].v; /* -1 when symbolic */
			if (win->k[i] > RL_WIN_MAX)
				return rl_graph_error(g, n, RL_ERR_SHAPE, "kernel too large");
		}
	} else {
		return rl_graph_error(g, n, RL_ERR_SHAPE, "attribute 'kernel_shape' is missing");
	}
	if ((st = read_list(g, node, "strides", nsp, 1, 1, RL_WIN_MAX, win->s)) ||
	    (st = read_list(g, node, "dilations", nsp, 1, 1, RL_WIN_MAX, win->d)))
		return st;
	int64_t pads[2 * RL_MAX_RANK];
	if ((st = read_list(g, node, "pads", 2 * nsp, 0, 0, RL_DIM_LIMIT, pads)))
		return st;
	bool any_pad = false;
	for (int i = 0; i < nsp; i++) {
		win->pb[i] = pads[i];
		win->pe[i] = pads[nsp + i];
		any_pad |= pads[i] || pads[nsp + i];
	}
	const char *ap = rl_node_attr_str(n, "auto_pad", "NOTSET");
	if (!*ap || strcmp(ap, "NOTSET") == 0)
		win->autopad = RL_PAD_NOTSET;
	else if (strcmp(ap, "SAME_UPPER") == 0)
		win->autopad = RL_PAD_SAME_UPPER;
	else if (strcmp(ap, "SAME_LOWER") == 0)
		win->autopad = RL_PAD_SAME_LOWER;
	else if (strcmp(ap, "VALID") == 0)
		win->autopad = RL_PAD_VALID;
	else
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER "
		                      "or VALID", ap);
	if (win->autopad != RL_PAD_NOTSET && any_pad)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "non-zero pads cannot be combined with auto_pad=%s", ap);
	win->ceil_mode = rl_node_attr_int(n, "ceil_mode", 0) != 0;
	return RL_OK;
}

enum rl_status rl_window_out(struct rl_graph *g, uint32_t node,
                             const struct rl_window *w, int i, struct rl_dim in,
                             int axis, struct rl_dim *out)
{
	int64_t k = w->k[i], s = w->s[i], d = w->d[i];
	bool same = w->autopad == RL_PAD_SAME_UPPER || w->autopad == RL_PAD_SAME_LOWER;
	int64_t pb = w->autopad == RL_PAD_NOTSET ? w->pb[i] : 0;
	int64_t pe = w->autopad == RL_PAD_NOTSET ? w->pe[i] : 0;
	if (in.v < 0 || k < 0) {
		/* a symbol passes when the window keeps the size whatever it is */
		bool keeps = in.v < 0 && s == 1 &&
		             (same || (k >= 0 && (k - 1) * d + 1 - pb - pe == 1));
		*out = keeps ? in : rl_dim_unk(g, node, 0, axis);
		return RL_OK;
	}
	int64_t x = in.v;
	if (same) {
		*out = rl_dim_num((x + s - 1) / s);
		return RL_OK;
	}
	/* q may be negative when the padded input is shorter than the kernel
	 * extent. For pools, ONNX's own inference and onnxruntime both divide
	 * with C's truncation there (a window hanging over the end still counts
	 * while q > -s), so this does too and only a negative size is an
	 * error; Conv needs the padded input to span the kernel. */
	int64_t ek = (k - 1) * d + 1, tot = x + pb + pe, q = tot - ek, o;
	if (w->ceil_mode) {
		o = (q >= 0 ? (q + s - 1) / s : q / s) + 1;
		if (o > 0 && (o - 1) * s >= x + pb)
			o--; /* the last window would start in the end padding */
	} else {
		o = q / s + 1;
	}
	if (o < 0 || (w->must_cover && q < 0))
		return rl_graph_error(g, &g->nodes[node], RL_ERR_SHAPE,
		                      "spatial axis %d: input size %lld (%lld with padding) is "
		                      "smaller than the kernel extent %lld", i, (long long)x,
		                      (long long)tot, (long long)ek);
	*out = rl_dim_num(o);
	return RL_OK;
}

static enum rl_status infer_conv(struct rl_graph *g, uint32_t node, bool transposed)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *wv = rl_infer_in(g, n, 1);
	struct rl_value *bv = rl_infer_in(g, n, 2);
	/* input 0 is checked against the tc column of ops.def (ir/infer.c) */
	enum rl_status st = rl_infer_dtype_same(g, node, 0, 1);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 0, 2);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape, *sw = &wv->shape;
	char bx[RL_SSTR], bw[RL_SSTR], bb[RL_SSTR];
	struct rl_shape out = {.rank = -1};
	if (sx->rank >= 0 && sx->rank < 3)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input of shape %s needs rank >= 3 (N x C x spatial)",
		                      rl_sstr(sx, bx));
	if (sx->rank >= 0 && sw->rank >= 0 && sw->rank != sx->rank)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "weight of shape %s must have the rank of the input %s",
		                      rl_sstr(sw, bw), rl_sstr(sx, bx));
	if (sx->rank < 0 || sw->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, &out);
	int nsp = sx->rank - 2;
	int64_t group = rl_node_attr_int(n, "group", 1);
	if (group < 1 || group > RL_WIN_MAX)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "group %lld must be in [1, 2^20]",
		                      (long long)group);
	struct rl_dim c = sx->d[1];
	struct rl_dim cin = transposed ? sw->d[0] : sw->d[1];
	struct rl_dim m = transposed ? sw->d[1] : sw->d[0];
	/* channel checks: Conv W is M x C/group; ConvTranspose W is C x M/group */
	if (!transposed && c.v >= 0 && cin.v >= 0 && cin.v * group != c.v)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input %s has %lld channels but weight %s with group "
		                      "%lld expects %lld", rl_sstr(sx, bx), (long long)c.v,
		                      rl_sstr(sw, bw), (long long)group,
		                      (long long)(cin.v * group));
	if (transposed && rl_dim_differ(c, cin))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "input %s has %lld channels but weight %s expects %lld",
		                      rl_sstr(sx, bx), (long long)c.v, rl_sstr(sw, bw),
		                      (long long)cin.v);
	if (!transposed && m.v >= 0 && m.v % group != 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "%lld output channels do not divide into %lld groups",
		                      (long long)m.v, (long long)group);
	if (transposed && c.v >= 0 && c.v % group != 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "%lld input channels do not divide into %lld groups",
		                      (long long)c.v, (long long)group);
	struct rl_dim mout = m;
	if (transposed && group != 1)
		mout = m.v >= 0 ? rl_dim_num(m.v * group) : rl_dim_unk(g, node, 0, 1);
	if (bv && bv->shape.rank >= 0) {
		if (bv->shape.rank != 1 || rl_dim_differ(bv->shape.d[0], mout))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "bias of shape %s must be 1-D with one entry per "
			                      "output channel (%lld)", rl_sstr(&bv->shape, bb),
			                      (long long)mout.v);
	}
	struct rl_window w;
	st = rl_window_read(g, node, nsp, sw, &w);
	if (st != RL_OK)
		return st;
	w.must_cover = true;
	out.rank = sx->rank;
	out.d[0] = sx->d[0];
	out.d[1] = mout;
	if (!transposed) {
		for (int i = 0; i < nsp && st == RL_OK; i++)
			st = rl_window_out(g, node, &w, i, sx->d[2 + i], 2 + i, &out.d[2 + i]);
		if (st != RL_OK)
			return st;
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}

	int64_t opad[RL_MAX_RANK];
	st = read_list(g, node, "output_padding", nsp, 0, 0, RL_WIN_MAX, opad);
	if (st != RL_OK)
		return st;
	const int64_t *os;
	int nos = rl_node_attr_ints(n, "output_shape", &os);
	if (nos >= 0) {
		/* spatial sizes; a full N x C x ... shape is accepted too */
		if (nos != nsp && nos != nsp + 2)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "output_shape has %d entries; %d expected", nos, nsp);
		for (int i = 0; i < nsp; i++) {
			int64_t o = os[nos - nsp + i];
			if (o < 0 || o > RL_DIM_LIMIT)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "output_shape entry %d is %lld", i, (long long)o);
			/* it implies pads s*(in-1) + op + ek - o; onnxruntime takes
			 * them as 0 when negative and accepts the shape while the
			 * input size still comes back, i.e. o < full + s */
			struct rl_dim in = sx->d[2 + i];
			if (in.v >= 0 && w.k[i] >= 0) {
				int64_t full = w.s[i] * (in.v - 1) + opad[i] + (w.k[i] - 1) * w.d[i] + 1;
				if (o > full + w.s[i] - 1)
					return rl_graph_error(g, n, RL_ERR_SHAPE,
					                      "output_shape entry %d is %lld but input size "
					                      "%lld gives at most %lld", i, (long long)o,
					                      (long long)in.v, (long long)(full + w.s[i] - 1));
			}
			out.d[2 + i] = rl_dim_num(o);
		}
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	bool same = w.autopad == RL_PAD_SAME_UPPER || w.autopad == RL_PAD_SAME_LOWER;
	for (int i = 0; i < nsp; i++) {
		struct rl_dim in = sx->d[2 + i];
		int64_t k = w.k[i], s = w.s[i];
		int64_t pb = w.autopad == RL_PAD_NOTSET ? w.pb[i] : 0;
		int64_t pe = w.autopad == RL_PAD_NOTSET ? w.pe[i] : 0;
		if (in.v < 0 || k < 0) {
			bool keeps = in.v < 0 && s == 1 &&
			             (same || (k >= 0 && (k - 1) * w.d[i] + 1 + opad[i] - pb - pe == 1));
			out.d[2 + i] = keeps ? in : rl_dim_unk(g, node, 0, 2 + i);
			continue;
		}
		/* SAME pads toward in*s, but padding is never negative, so a
		 * kernel narrower than the stride gives less (onnxruntime's rule) */
		int64_t full = s * (in.v - 1) + opad[i] + (k - 1) * w.d[i] + 1;
		int64_t o = same ? (full < in.v * s ? full : in.v * s) : full - pb - pe;
		if (o <= 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "spatial axis %d: output size would be %lld", i,
			                      (long long)o);
		out.d[2 + i] = rl_dim_num(o);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

enum rl_status rl_infer_conv(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_Conv: return infer_conv(g, node, false);
	case RL_OP_ConvTranspose: return infer_conv(g, node, true);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no conv shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * Conv (W is M x C/group x k1..kn): each output element is a dot product over
 * its group's C/group channels and the kernel window, padding included (the
 * emitted loops skip padded taps, but every runtime we compare with counts
 * them, and the difference is at the border only):
 *   MACs = numel(Y) * (C/group) * k1*..*kn = numel(Y) * numel(W) / M
 * ConvTranspose (W is C x M/group x k1..kn): each input element scatters into
 * its group's M/group channels over the window:
 *   MACs = numel(X) * (M/group) * k1*..*kn = numel(X) * numel(W) / C
 * FLOPs = 2 * MACs, plus numel(Y) for the bias add when B is given.
 * Strides and dilations change numel(Y), not the per-element work. Bytes are
 * the baseline: X, W and B read once, Y written once (no im2col copy).
 */
#include "cost_impl.h"

bool rl_count_conv(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double wn = rl_cnt_in(g, n, 1), lead = rl_cnt_dim(g, n, 1, 0);
	if (lead <= 0) {
		c->macs = 0; /* empty weight: nothing to multiply */
	} else if (n->op == RL_OP_Conv) {
		c->macs = rl_cnt_out(g, n, 0) * (wn / lead);
	} else if (n->op == RL_OP_ConvTranspose) {
		c->macs = rl_cnt_in(g, n, 0) * (wn / lead);
	} else {
		return false;
	}
	c->flops = 2 * c->macs;
	if (rl_node_in(n, 2) != RL_NONE)
		c->flops += rl_cnt_out(g, n, 0);
	return true;
}
