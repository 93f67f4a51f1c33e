/*
 * emit_detect.c - C kernels for the detection family (ir/fam_detect.c):
 * RoiAlign, NonMaxSuppression, DeformConv, Col2Im, MaxUnpool, NonZero,
 * Compress and Unique; and the generated API for outputs whose extent is
 * data-dependent (emit_detect.h).
 *
 * Semantics follow the ONNX reference implementation:
 * - RoiAlign: each output bin averages (or, mode max, takes the largest of)
 *   a grid of bilinear samples; a sample outside [-1, H] x [-1, W] counts as
 *   0, one inside is clamped to the image. The taps of a sample are computed
 *   once and applied to every channel.
 * - NonMaxSuppression: per batch and class, candidates above the score
 *   threshold (when given) in descending score order, ties to the lower box
 *   index (a stable merge sort), each kept unless its IoU with a kept box
 *   exceeds the threshold, at most max_output_boxes_per_class per class.
 *   The box arithmetic is in the boxes' dtype, like the reference.
 * - DeformConv (2-D): the input is sampled bilinearly (zeros outside) at
 *   each kernel tap moved by its offset, times the mask when given; each
 *   sample is taken once and multiplied into every output channel of its
 *   group.
 * - Col2Im: block_shape is read when the kernel runs (the image size is the
 *   output's static shape); an image_shape other than that, or a block
 *   shape that does not fit the static sizes, leaves the output zero rather
 *   than read out of bounds. MaxUnpool's output_shape input likewise.
 * - MaxUnpool: the indices address the unpooled tensor of the shape
 *   inferred from X and the attributes; with output_shape, that tensor is
 *   placed at the start of every axis of the output (zeros elsewhere).
 *   Indices out of range are dropped.
 * - NonZero, Compress, Unique write the actual extent densely and report it
 *   (see emit_detect.h). Unique compares slices along the axis
 *   lexicographically (numpy's order), sorts stably so each group's first
 *   index comes first, and with sorted=0 orders groups by first occurrence.
 *
 * Scratch arrays that scale with the input (NMS candidates, Unique's
 * permutation) are file-scope statics of the kernel: one run at a time, as
 * the generated API promises.
 */
#include "emit_detect.h"

#include <string.h>

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

static bool is_f32_f64(enum rl_dtype t)
{
	return t == RL_DT_FLOAT || t == RL_DT_DOUBLE;
}

/* Declare the extent variable of output k when it has one; returns its
 * name in buf, or false when output k is absent or exact. */
static bool extent_var(struct rl_cgen *cg, uint32_t node, int k, char *buf, size_t n)
{
	const struct rl_value *v = cg_out(cg, node, k);
	if (!v || !v->extent_axis)
		return false;
	snprintf(buf, n, "%s_n%d", cg->kname, k);
	rl_buf_printf(&cg->statics, "static int64_t %s; /* extent of output %d in the last run */\n",
	              buf, k);
	return true;
}

/* ---- RoiAlign ------------------------------------------------------------ */

static enum rl_status emit_roi_align(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (!is_f32_f64(x->dtype))
		return cg_error(cg, node, "RoiAlign on %s is not handled (float32 and float64 are)",
		                rl_dtype_name(x->dtype));
	const char *t = cg_ctype(x->dtype);
	int64_t N = x->shape.d[0].v, C = x->shape.d[1].v, H = x->shape.d[2].v, W = x->shape.d[3].v;
	int64_t R = y->shape.d[0].v, oh = y->shape.d[2].v, ow = y->shape.d[3].v;
	int64_t sr = rl_node_attr_int(nd, "sampling_ratio", 0);
	bool maxm = !strcmp(rl_node_attr_str(nd, "mode", "avg"), "max");
	/* opset 10 has no coordinate_transformation_mode and behaves as
	 * output_half_pixel; the default became half_pixel at 16 */
	bool half = !strcmp(rl_node_attr_str(nd, "coordinate_transformation_mode",
	                                     nd->opset >= 16 ? "half_pixel" : "output_half_pixel"),
	                    "half_pixel");
	double scale = rl_node_attr_float(nd, "spatial_scale", 1.0);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* %s of %s bilinear samples per bin, %s coordinates */", maxm ? "max" : "mean",
	        sr > 0 ? "a fixed grid of" : "an adaptive grid of", half ? "half_pixel" : "output_half_pixel");
	cg_line(cg, "for (int64_t r = 0; r < %lld; r++) {", (long long)R);
	cg->indent++;
	cg_line(cg, "%s *yr = Y0 + r * %lld;", t, (long long)(C * oh * ow));
	cg_line(cg, "const int64_t b = (int64_t)X2[r];");
	cg_line(cg, "if (b < 0 || b >= %lld) { /* no such image: zeros */", (long long)N);
	cg_line(cg, "    memset(yr, 0, %lld * sizeof(*yr));", (long long)(C * oh * ow));
	cg_line(cg, "    continue;");
	cg_line(cg, "}");
	cg_line(cg, "const %s *xb = X0 + b * %lld;", t, (long long)(C * H * W));
	cg_line(cg, "const double off = %s;", half ? "0.5" : "0.0");
	cg_line(cg, "const double x0 = (double)X1[r * 4] * %.17g - off, y0 = (double)X1[r * 4 + 1] * "
	        "%.17g - off;", scale, scale);
	cg_line(cg, "double rw = (double)X1[r * 4 + 2] * %.17g - off - x0, rh = (double)X1[r * 4 + 3] * "
	        "%.17g - off - y0;", scale, scale);
	if (!half) {
		cg_line(cg, "rw = rw > 1 ? rw : 1; /* malformed boxes become 1x1 */");
		cg_line(cg, "rh = rh > 1 ? rh : 1;");
	}
	cg_line(cg, "const double bh = rh / %lld, bw = rw / %lld;", (long long)oh, (long long)ow);
	if (sr > 0)
		cg_line(cg, "const int64_t gh = %lld, gw = %lld;", (long long)sr, (long long)sr);
	else
		cg_line(cg, "const int64_t gh = (int64_t)ceil(rh / %lld), gw = (int64_t)ceil(rw / %lld);",
		        (long long)oh, (long long)ow);
	cg_line(cg, "const double cnt = gh * gw > 1 ? (double)(gh * gw) : 1;");
	cg_line(cg, "for (int64_t ph = 0; ph < %lld; ph++) {", (long long)oh);
	cg_line(cg, "    for (int64_t pw = 0; pw < %lld; pw++) {", (long long)ow);
	cg->indent += 2;
	cg_line(cg, "%s *yp = yr + ph * %lld + pw;", t, (long long)ow);
	cg_line(cg, "for (int64_t c = 0; c < %lld; c++)", (long long)C);
	cg_line(cg, "    yp[c * %lld] = 0;", (long long)(oh * ow));
	cg_line(cg, "for (int64_t iy = 0; iy < gh; iy++) {");
	cg_line(cg, "    for (int64_t ix = 0; ix < gw; ix++) {");
	cg->indent += 2;
	cg_line(cg, "double yy = y0 + ph * bh + (iy + 0.5) * bh / gh;");
	cg_line(cg, "double xx = x0 + pw * bw + (ix + 0.5) * bw / gw;");
	cg_line(cg, "int64_t p1 = 0, p2 = 0, p3 = 0, p4 = 0;");
	cg_line(cg, "double w1 = 0, w2 = 0, w3 = 0, w4 = 0;");
	cg_line(cg, "if (!(yy < -1.0 || yy > %lld || xx < -1.0 || xx > %lld)) {", (long long)H,
	        (long long)W);
	cg->indent++;
	cg_line(cg, "yy = yy > 0 ? yy : 0;");
	cg_line(cg, "xx = xx > 0 ? xx : 0;");
	cg_line(cg, "int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;");
	cg_line(cg, "if (yl >= %lld) {", (long long)(H - 1));
	cg_line(cg, "    yh = yl = %lld;", (long long)(H - 1));
	cg_line(cg, "    yy = (double)yl;");
	cg_line(cg, "} else {");
	cg_line(cg, "    yh = yl + 1;");
	cg_line(cg, "}");
	cg_line(cg, "if (xl >= %lld) {", (long long)(W - 1));
	cg_line(cg, "    xh = xl = %lld;", (long long)(W - 1));
	cg_line(cg, "    xx = (double)xl;");
	cg_line(cg, "} else {");
	cg_line(cg, "    xh = xl + 1;");
	cg_line(cg, "}");
	cg_line(cg, "const double ly = yy - yl, lx = xx - xl, hy = 1 - ly, hx = 1 - lx;");
	cg_line(cg, "w1 = hy * hx;");
	cg_line(cg, "w2 = hy * lx;");
	cg_line(cg, "w3 = ly * hx;");
	cg_line(cg, "w4 = ly * lx;");
	cg_line(cg, "p1 = yl * %lld + xl;", (long long)W);
	cg_line(cg, "p2 = yl * %lld + xh;", (long long)W);
	cg_line(cg, "p3 = yh * %lld + xl;", (long long)W);
	cg_line(cg, "p4 = yh * %lld + xh;", (long long)W);
	cg_loops_close(cg, 1);
	cg_line(cg, "for (int64_t c = 0; c < %lld; c++) {", (long long)C);
	cg->indent++;
	cg_line(cg, "const %s *xc = xb + c * %lld;", t, (long long)(H * W));
	if (maxm) {
		cg_line(cg, "double v = w1 * xc[p1], v2 = w2 * xc[p2], v3 = w3 * xc[p3], v4 = w4 * xc[p4];");
		cg_line(cg, "v = v2 > v ? v2 : v;");
		cg_line(cg, "v = v3 > v ? v3 : v;");
		cg_line(cg, "v = v4 > v ? v4 : v;");
		cg_line(cg, "if ((iy == 0 && ix == 0) || v > yp[c * %lld])", (long long)(oh * ow));
		cg_line(cg, "    yp[c * %lld] = (%s)v;", (long long)(oh * ow), t);
	} else {
		cg_line(cg, "yp[c * %lld] += (%s)((w1 * xc[p1] + w2 * xc[p2] + w3 * xc[p3] + "
		        "w4 * xc[p4]) / cnt);", (long long)(oh * ow), t);
	}
	cg_loops_close(cg, 5);
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- NonMaxSuppression --------------------------------------------------- */

static enum rl_status emit_nms(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *bx = cg_in(cg, node, 0), *sc = cg_in(cg, node, 1),
	                      *y = cg_out(cg, node, 0);
	if (!is_f32_f64(bx->dtype))
		return cg_error(cg, node, "NonMaxSuppression on %s is not handled (float32 and "
		                "float64 are)", rl_dtype_name(bx->dtype));
	const char *t = cg_ctype(bx->dtype), *k = cg->kname;
	int64_t B = sc->shape.d[0].v, C = sc->shape.d[1].v, N = sc->shape.d[2].v;
	int64_t bound = y->shape.d[0].v;
	bool cpb = rl_node_attr_int(nd, "center_point_box", 0) == 1;
	char nv[96];
	extent_var(cg, node, 0, nv, sizeof(nv));
	const struct rl_value *mx = cg_in(cg, node, 2), *it = cg_in(cg, node, 3),
	                      *st = cg_in(cg, node, 4);
	/* an empty tensor stands for an absent input, as in the reference */
	mx = mx && numel(mx) > 0 ? mx : NULL;
	it = it && numel(it) > 0 ? it : NULL;
	st = st && numel(st) > 0 ? st : NULL;
	cg_line(cg, "int64_t cnt = 0;");
	if (!mx || bound == 0 || N == 0) {
		cg_line(cg, "/* %s: nothing is selected */",
		        !mx ? "no max_output_boxes_per_class" : "no boxes");
		cg_line(cg, "%s = cnt;", nv);
		return RL_OK;
	}
	struct rl_buf *b = &cg->statics;
	rl_buf_printf(b, "static int64_t %s_cand[%lld], %s_tmp[%lld], %s_sel[%lld];\n", k,
	              (long long)N, k, (long long)N, k, (long long)N);
	/* stable merge sort of candidate indices by descending score */
	rl_buf_printf(b,
	"static void %s_sort(int64_t *a, int64_t *tmp, int64_t n, const %s *s)\n"
	"{\n"
	"    for (int64_t w = 1; w < n; w *= 2) {\n"
	"        for (int64_t lo = 0; lo < n; lo += 2 * w) {\n"
	"            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;\n"
	"            int64_t i = lo, j = mid, o = lo;\n"
	"            while (i < mid && j < hi)\n"
	"                tmp[o++] = s[a[j]] > s[a[i]] ? a[j++] : a[i++];\n"
	"            while (i < mid)\n"
	"                tmp[o++] = a[i++];\n"
	"            while (j < hi)\n"
	"                tmp[o++] = a[j++];\n"
	"        }\n"
	"        memcpy(a, tmp, (size_t)n * sizeof(*a));\n"
	"    }\n"
	"}\n\n", k, t);
	/* the reference's suppress_by_iou, in the boxes' dtype */
	rl_buf_printf(b, "static int %s_iou(const %s *p, const %s *q, %s thr)\n{\n", k, t, t, t);
	if (cpb)
		rl_buf_printf(b,
		"    const %s x1a = p[0] - p[2] / 2, x1b = p[0] + p[2] / 2, x2a = q[0] - q[2] / 2,\n"
		"          x2b = q[0] + q[2] / 2;\n"
		"    const %s y1a = p[1] - p[3] / 2, y1b = p[1] + p[3] / 2, y2a = q[1] - q[3] / 2,\n"
		"          y2b = q[1] + q[3] / 2;\n", t, t);
	else
		rl_buf_printf(b,
		"    const %s x1a = p[1] < p[3] ? p[1] : p[3], x1b = p[1] < p[3] ? p[3] : p[1];\n"
		"    const %s x2a = q[1] < q[3] ? q[1] : q[3], x2b = q[1] < q[3] ? q[3] : q[1];\n"
		"    const %s y1a = p[0] < p[2] ? p[0] : p[2], y1b = p[0] < p[2] ? p[2] : p[0];\n"
		"    const %s y2a = q[0] < q[2] ? q[0] : q[2], y2b = q[0] < q[2] ? q[2] : q[0];\n",
		t, t, t, t);
	rl_buf_printf(b,
	"    const %s ixa = x1a > x2a ? x1a : x2a, ixb = x1b < x2b ? x1b : x2b;\n"
	"    const %s iya = y1a > y2a ? y1a : y2a, iyb = y1b < y2b ? y1b : y2b;\n"
	"    if (ixb <= ixa || iyb <= iya)\n"
	"        return 0;\n"
	"    const %s inter = (ixb - ixa) * (iyb - iya);\n"
	"    const %s a1 = (x1b - x1a) * (y1b - y1a), a2 = (x2b - x2a) * (y2b - y2a);\n"
	"    const %s uni = a1 + a2 - inter;\n"
	"    if (inter <= 0 || a1 <= 0 || a2 <= 0 || uni <= 0)\n"
	"        return 0;\n"
	"    return inter / uni > thr;\n"
	"}\n\n", t, t, t, t, t);
	cg_line(cg, "/* at most %lld boxes per class: min of the input and the box count */",
	        (long long)N);
	cg_line(cg, "int64_t mo = X2[0] > 0 ? (int64_t)X2[0] : 0;");
	cg_line(cg, "if (mo > %lld)", (long long)N);
	cg_line(cg, "    mo = %lld;", (long long)N);
	cg_line(cg, "const %s thr = %s;", t, it ? "X3[0]" : "0");
	if (st)
		cg_line(cg, "const %s sthr = X4[0];", t);
	cg_line(cg, "for (int64_t b = 0; b < %lld; b++) {", (long long)B);
	cg_line(cg, "    for (int64_t c = 0; c < %lld; c++) {", (long long)C);
	cg->indent += 2;
	cg_line(cg, "const %s *s = X1 + (b * %lld + c) * %lld, *bb = X0 + b * %lld;", t, (long long)C,
	        (long long)N, (long long)(N * 4));
	cg_line(cg, "int64_t m = 0, kept = 0;");
	cg_line(cg, "for (int64_t i = 0; i < %lld; i++)", (long long)N);
	if (st) {
		cg_line(cg, "    if (s[i] > sthr)");
		cg_line(cg, "        %s_cand[m++] = i;", k);
	} else {
		cg_line(cg, "    %s_cand[m++] = i;", k);
	}
	cg_line(cg, "%s_sort(%s_cand, %s_tmp, m, s);", k, k, k);
	cg_line(cg, "for (int64_t j = 0; j < m && kept < mo && cnt < %lld; j++) {", (long long)bound);
	cg->indent++;
	cg_line(cg, "const int64_t i = %s_cand[j];", k);
	cg_line(cg, "int ok = 1;");
	cg_line(cg, "for (int64_t q = 0; q < kept && ok; q++)");
	cg_line(cg, "    ok = !%s_iou(bb + i * 4, bb + %s_sel[q] * 4, thr);", k, k);
	cg_line(cg, "if (!ok)");
	cg_line(cg, "    continue;");
	cg_line(cg, "%s_sel[kept++] = i;", k);
	cg_line(cg, "Y0[cnt * 3] = b;");
	cg_line(cg, "Y0[cnt * 3 + 1] = c;");
	cg_line(cg, "Y0[cnt * 3 + 2] = i;");
	cg_line(cg, "cnt++;");
	cg_loops_close(cg, 3);
	cg_line(cg, "%s = cnt;", nv);
	return RL_OK;
}

/* ---- DeformConv ---------------------------------------------------------- */

static enum rl_status emit_deform_conv(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *w = cg_in(cg, node, 1),
	                      *of = cg_in(cg, node, 2), *bias = cg_in(cg, node, 3),
	                      *mask = cg_in(cg, node, 4), *y = cg_out(cg, node, 0);
	if (!is_f32_f64(x->dtype))
		return cg_error(cg, node, "DeformConv on %s is not handled (float32 and float64 are)",
		                rl_dtype_name(x->dtype));
	if (x->shape.rank != 4)
		return cg_error(cg, node, "only 2-D DeformConv (rank-4 X) is handled, not rank %d",
		                x->shape.rank);
	const char *t = cg_ctype(x->dtype);
	int64_t N = x->shape.d[0].v, C = x->shape.d[1].v, H = x->shape.d[2].v, W = x->shape.d[3].v;
	int64_t M = w->shape.d[0].v, cg_ = w->shape.d[1].v, KH = w->shape.d[2].v, KW = w->shape.d[3].v;
	int64_t OH = y->shape.d[2].v, OW = y->shape.d[3].v;
	int64_t grp = rl_node_attr_int(nd, "group", 1), og = rl_node_attr_int(nd, "offset_group", 1);
	const int64_t *a;
	int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pd[4] = {0, 0, 0, 0};
	if (rl_node_attr_ints(nd, "strides", &a) == 2)
		memcpy(st, a, sizeof(st));
	if (rl_node_attr_ints(nd, "dilations", &a) == 2)
		memcpy(dl, a, sizeof(dl));
	if (rl_node_attr_ints(nd, "pads", &a) == 4)
		memcpy(pd, a, sizeof(pd));
	int nk = rl_node_attr_ints(nd, "kernel_shape", &a);
	if (nk >= 0 && (nk != 2 || a[0] != KH || a[1] != KW))
		return cg_error(cg, node, "kernel_shape does not match W's dims");
	int64_t K = KH * KW;
	if (C != cg_ * grp || M % grp || C % og || of->shape.d[1].v != og * K * 2 ||
	    of->shape.d[2].v != OH || of->shape.d[3].v != OW ||
	    (mask && (mask->shape.d[1].v != og * K || mask->shape.d[2].v != OH ||
	              mask->shape.d[3].v != OW)) ||
	    (bias && numel(bias) != M))
		return cg_error(cg, node, "shapes of X, W, offset, B and mask do not fit group %lld "
		                "and offset_group %lld", (long long)grp, (long long)og);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	int64_t P = OH * OW, mg = M / grp;
	cg_line(cg, "/* each input channel sampled once per tap and position, then multiplied "
	        "into the %lld output channels of its group */", (long long)mg);
	cg_line(cg, "for (int64_t n = 0; n < %lld; n++) {", (long long)N);
	cg->indent++;
	cg_line(cg, "%s *yn = Y0 + n * %lld;", t, (long long)(M * P));
	cg_line(cg, "for (int64_t m = 0; m < %lld; m++)", (long long)M);
	cg_line(cg, "    for (int64_t p = 0; p < %lld; p++)", (long long)P);
	cg_line(cg, "        yn[m * %lld + p] = %s;", (long long)P, bias ? "X3[m]" : "0");
	cg_line(cg, "for (int64_t ci = 0; ci < %lld; ci++) {", (long long)C);
	cg->indent++;
	cg_line(cg, "const int64_t g = ci / %lld, o = ci / %lld;", (long long)cg_, (long long)(C / og));
	cg_line(cg, "const %s *xc = X0 + (n * %lld + ci) * %lld;", t, (long long)C, (long long)(H * W));
	cg_line(cg, "for (int64_t k = 0; k < %lld; k++) {", (long long)K);
	cg->indent++;
	cg_line(cg, "const %s *oy = X2 + ((n * %lld + o) * %lld + k * 2) * %lld, *ox = oy + %lld;", t,
	        (long long)og, (long long)(K * 2), (long long)P, (long long)P);
	if (mask)
		cg_line(cg, "const %s *mk = X4 + ((n * %lld + o) * %lld + k) * %lld;", t, (long long)og,
		        (long long)K, (long long)P);
	cg_line(cg, "for (int64_t i = 0; i < %lld; i++) {", (long long)OH);
	cg_line(cg, "    for (int64_t j = 0; j < %lld; j++) {", (long long)OW);
	cg->indent += 2;
	cg_line(cg, "const int64_t p = i * %lld + j;", (long long)OW);
	cg_line(cg, "const double yy = (double)(i * %lld - %lld + (k / %lld) * %lld) + oy[p];",
	        (long long)st[0], (long long)pd[0], (long long)KW, (long long)dl[0]);
	cg_line(cg, "const double xx = (double)(j * %lld - %lld + (k %% %lld) * %lld) + ox[p];",
	        (long long)st[1], (long long)pd[1], (long long)KW, (long long)dl[1]);
	cg_line(cg, "const double fy = floor(yy), fx = floor(xx), ly = yy - fy, lx = xx - fx;");
	cg_line(cg, "const int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;");
	cg_line(cg, "double v = 0;");
	cg_line(cg, "for (int dy = 0; dy < 2; dy++)");
	cg_line(cg, "    for (int dx = 0; dx < 2; dx++) {");
	cg_line(cg, "        const int64_t yi = y0 + dy, xi = x0 + dx;");
	cg_line(cg, "        if (yi >= 0 && yi < %lld && xi >= 0 && xi < %lld)", (long long)H, (long long)W);
	cg_line(cg, "            v += (dy ? ly : 1 - ly) * (dx ? lx : 1 - lx) * xc[yi * %lld + xi];",
	        (long long)W);
	cg_line(cg, "    }");
	if (mask)
		cg_line(cg, "v *= mk[p];");
	cg_line(cg, "for (int64_t m = g * %lld; m < (g + 1) * %lld; m++)", (long long)mg, (long long)mg);
	cg_line(cg, "    yn[m * %lld + p] += (%s)(X1[(m * %lld + ci %% %lld) * %lld + k] * v);",
	        (long long)P, t, (long long)cg_, (long long)cg_, (long long)K);
	cg_loops_close(cg, 5);
	return RL_OK;
}

/* ---- Col2Im -------------------------------------------------------------- */

static enum rl_status emit_col2im(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int nsp = y->shape.rank - 2;
	enum rl_dtype dt = x->dtype;
	int64_t N = x->shape.d[0].v, CP = x->shape.d[1].v, L = x->shape.d[2].v, C = y->shape.d[1].v;
	int64_t st[RL_MAX_RANK], dl[RL_MAX_RANK], pd[2 * RL_MAX_RANK];
	const int64_t *a;
	int k;
	for (int i = 0; i < nsp; i++) {
		st[i] = dl[i] = 1;
		pd[i] = pd[nsp + i] = 0;
	}
	if ((k = rl_node_attr_ints(nd, "strides", &a)) == nsp)
		memcpy(st, a, (size_t)nsp * sizeof(*a));
	else if (k >= 0)
		return cg_error(cg, node, "strides has %d entries; %d expected", k, nsp);
	if ((k = rl_node_attr_ints(nd, "dilations", &a)) == nsp)
		memcpy(dl, a, (size_t)nsp * sizeof(*a));
	else if (k >= 0)
		return cg_error(cg, node, "dilations has %d entries; %d expected", k, nsp);
	if ((k = rl_node_attr_ints(nd, "pads", &a)) == 2 * nsp)
		memcpy(pd, a, (size_t)(2 * nsp) * sizeof(*a));
	else if (k >= 0)
		return cg_error(cg, node, "pads has %d entries; %d expected", k, 2 * nsp);
	if (C <= 0 || CP % C)
		return cg_error(cg, node, "input dim 1 (%lld) is not a multiple of the output's "
		                "channels (%lld)", (long long)CP, (long long)C);
	int64_t P = CP / C, img = 1;
	for (int i = 0; i < nsp; i++)
		img *= y->shape.d[2 + i].v;
	cg_line(cg, "memset(Y0, 0, %lld * sizeof(*Y0));", (long long)numel(y));
	if (numel(y) == 0 || numel(x) == 0)
		return RL_OK;
	char csv[4][256];
	for (int q = 0; q < 4; q++) {
		size_t o = 0;
		for (int i = 0; i < (q == 3 ? 2 * nsp : nsp); i++) {
			int64_t v = q == 0 ? y->shape.d[2 + i].v : q == 1 ? st[i] : q == 2 ? dl[i] : pd[i];
			o += (size_t)snprintf(csv[q] + o, sizeof(csv[q]) - o, "%s%lld", i ? ", " : "",
			                      (long long)v);
		}
	}
	cg_line(cg, "static const int64_t img[%d] = {%s}, st[%d] = {%s}, dl[%d] = {%s};", nsp, csv[0],
	        nsp, csv[1], nsp, csv[2]);
	cg_line(cg, "static const int64_t pb[%d] = {%s}; /* begins, then ends */", 2 * nsp, csv[3]);
	cg_line(cg, "/* the block shape is an input: the blocks per axis follow from it */");
	cg_line(cg, "int64_t bk[%d], nb[%d], p = 1, l = 1;", nsp, nsp);
	cg_line(cg, "for (int i = 0; i < %d; i++) {", nsp);
	cg_line(cg, "    if (X1[i] != img[i])");
	cg_line(cg, "        return; /* image_shape is not the output's: zeros */");
	cg_line(cg, "    bk[i] = (int64_t)X2[i];");
	cg_line(cg, "    const int64_t span = img[i] + pb[i] + pb[%d + i] - dl[i] * (bk[i] - 1) - 1;", nsp);
	cg_line(cg, "    nb[i] = bk[i] > 0 && span >= 0 ? span / st[i] + 1 : 0;");
	cg_line(cg, "    p *= bk[i];");
	cg_line(cg, "    l *= nb[i];");
	cg_line(cg, "}");
	cg_line(cg, "if (p != %lld || l != %lld)", (long long)P, (long long)L);
	cg_line(cg, "    return; /* block_shape does not fit the tensor sizes */");
	cg_line(cg, "for (int64_t nc = 0; nc < %lld; nc++) {", (long long)(N * C));
	cg_line(cg, "    for (int64_t kk = 0; kk < %lld; kk++) {", (long long)P);
	cg_line(cg, "        for (int64_t col = 0; col < %lld; col++) {", (long long)L);
	cg->indent += 3;
	cg_line(cg, "int64_t o = 0, s = 1, rk = kk, rc = col, ok = 1;");
	cg_line(cg, "for (int i = %d; i >= 0; i--) {", nsp - 1);
	cg_line(cg, "    const int64_t pos = (rc %% nb[i]) * st[i] - pb[i] + (rk %% bk[i]) * dl[i];");
	cg_line(cg, "    rk /= bk[i];");
	cg_line(cg, "    rc /= nb[i];");
	cg_line(cg, "    ok &= pos >= 0 && pos < img[i];");
	cg_line(cg, "    o += pos * s;");
	cg_line(cg, "    s *= img[i];");
	cg_line(cg, "}");
	cg_line(cg, "if (!ok)");
	cg_line(cg, "    continue;");
	char e[128], f[128];
	snprintf(e, sizeof(e), "Y0[nc * %lld + o]", (long long)img);
	snprintf(f, sizeof(f), "X0[(nc * %lld + kk) * %lld + col]", (long long)P, (long long)L);
	char sum[512];
	snprintf(sum, sizeof(sum), "%s + %s", cg_load(cg, dt, e), cg_load(cg, dt, f));
	cg_line(cg, "%s = %s;", e, cg_assign(cg, dt, sum));
	cg_loops_close(cg, 3);
	return RL_OK;
}

/* ---- MaxUnpool ----------------------------------------------------------- */

static enum rl_status emit_max_unpool(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank, nsp = r - 2;
	const int64_t *ks, *ss, *ps;
	int nk = rl_node_attr_ints(nd, "kernel_shape", &ks);
	int ns = rl_node_attr_ints(nd, "strides", &ss);
	int np = rl_node_attr_ints(nd, "pads", &ps);
	if (nk != nsp || (ns >= 0 && ns != nsp) || (np >= 0 && np != 2 * nsp))
		return cg_error(cg, node, "kernel_shape, strides and pads must have %d, %d and %d "
		                "entries", nsp, nsp, 2 * nsp);
	if (y->shape.rank != r)
		return cg_error(cg, node, "output rank %d differs from the input's %d", y->shape.rank, r);
	/* the unpooled shape the indices address */
	struct rl_shape u = x->shape;
	for (int i = 0; i < nsp; i++)
		u.d[2 + i].v = (x->shape.d[2 + i].v - 1) * (ns > 0 ? ss[i] : 1) -
		               (np > 0 ? ps[i] + ps[nsp + i] : 0) + ks[i];
	cg_line(cg, "memset(Y0, 0, %lld * sizeof(*Y0));", (long long)numel(y));
	if (numel(y) == 0 || numel(x) == 0)
		return RL_OK;
	if (cg_in(cg, node, 2)) {
		char os[256];
		size_t o = 0;
		for (int i = 0; i < r; i++)
			o += (size_t)snprintf(os + o, sizeof(os) - o, "%s%lld", i ? ", " : "",
			                      (long long)y->shape.d[i].v);
		cg_line(cg, "static const int64_t os[%d] = {%s};", r, os);
		cg_line(cg, "for (int d = 0; d < %d; d++)", r);
		cg_line(cg, "    if (X2[d] != os[d])");
		cg_line(cg, "        return; /* output_shape is not the output's: zeros */");
	}
	int64_t un = rl_shape_numel(&u);
	if (rl_shape_equal(&u, &y->shape)) {
		cg_line(cg, "for (int64_t e = 0; e < %lld; e++) {", (long long)numel(x));
		cg_line(cg, "    const int64_t i = (int64_t)X1[e];");
		cg_line(cg, "    if (i >= 0 && i < %lld)", (long long)un);
		cg_line(cg, "        Y0[i] = X0[e];");
		cg_line(cg, "}");
		return RL_OK;
	}
	char ud[256], yd[256];
	size_t o1 = 0, o2 = 0;
	for (int i = 0; i < r; i++) {
		o1 += (size_t)snprintf(ud + o1, sizeof(ud) - o1, "%s%lld", i ? ", " : "", (long long)u.d[i].v);
		o2 += (size_t)snprintf(yd + o2, sizeof(yd) - o2, "%s%lld", i ? ", " : "",
		                       (long long)y->shape.d[i].v);
	}
	cg_line(cg, "/* the unpooled %s tensor placed at the start of each axis */", ud);
	cg_line(cg, "static const int64_t ud[%d] = {%s}, yd[%d] = {%s};", r, ud, r, yd);
	cg_line(cg, "for (int64_t e = 0; e < %lld; e++) {", (long long)numel(x));
	cg->indent++;
	cg_line(cg, "int64_t i = (int64_t)X1[e], o = 0, s = 1, ok = i >= 0 && i < %lld;", (long long)un);
	cg_line(cg, "for (int d = %d; d >= 0 && ok; d--) {", r - 1);
	cg_line(cg, "    const int64_t c = i %% ud[d];");
	cg_line(cg, "    i /= ud[d];");
	cg_line(cg, "    ok = c < yd[d];");
	cg_line(cg, "    o += c * s;");
	cg_line(cg, "    s *= yd[d];");
	cg_line(cg, "}");
	cg_line(cg, "if (ok)");
	cg_line(cg, "    Y0[o] = X0[e];");
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- NonZero, Compress, Unique ------------------------------------------- */

static enum rl_status emit_nonzero(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0);
	int r = x->shape.rank;
	int64_t ne = numel(x);
	char nv[96];
	extent_var(cg, node, 0, nv, sizeof(nv));
	cg_line(cg, "int64_t cnt = 0;");
	if (ne > 0) {
		char e[64];
		snprintf(e, sizeof(e), "%s", cg_load(cg, x->dtype, "X0[i]"));
		cg_line(cg, "for (int64_t i = 0; i < %lld; i++)", (long long)ne);
		cg_line(cg, "    cnt += %s != 0;", e);
		if (r > 0) {
			cg_line(cg, "/* row d of the %d x cnt result: coordinate d of each non-zero */", r);
			cg_line(cg, "for (int64_t i = 0, j = 0; i < %lld; i++) {", (long long)ne);
			cg->indent++;
			cg_line(cg, "if (!(%s != 0))", e);
			cg_line(cg, "    continue;");
			cg_line(cg, "int64_t rest = i;");
			for (int d = r - 1; d >= 0; d--) {
				int64_t dim = x->shape.d[d].v;
				if (d > 0) {
					cg_line(cg, "Y0[%d * cnt + j] = rest %% %lld;", d, (long long)dim);
					cg_line(cg, "rest /= %lld;", (long long)dim);
				} else {
					cg_line(cg, "Y0[j] = rest;");
				}
			}
			cg_line(cg, "j++;");
			cg_loops_close(cg, 1);
		}
	}
	cg_line(cg, "%s = cnt;", nv);
	return RL_OK;
}

static enum rl_status emit_compress(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *c = cg_in(cg, node, 1);
	int64_t len = numel(c), outer = 1, dim = numel(x), inner = 1;
	const struct rl_attr *aa = rl_node_attr(nd, "axis");
	if (aa) {
		int r = x->shape.rank, axis = (int)(aa->i < 0 ? aa->i + r : aa->i);
		dim = x->shape.d[axis].v;
		for (int i = 0; i < axis; i++)
			outer *= x->shape.d[i].v;
		for (int i = axis + 1; i < r; i++)
			inner *= x->shape.d[i].v;
	}
	char nv[96];
	extent_var(cg, node, 0, nv, sizeof(nv));
	cg_line(cg, "int64_t cnt = 0;");
	if (len > 0) {
		cg_line(cg, "for (int64_t i = 0; i < %lld; i++)", (long long)len);
		cg_line(cg, "    cnt += X1[i] != 0;");
		if (outer * inner > 0) {
			cg_line(cg, "/* the selected slices, outer %lld x cnt x inner %lld */",
			        (long long)outer, (long long)inner);
			cg_line(cg, "int64_t j = 0;");
			cg_line(cg, "for (int64_t o = 0; o < %lld; o++)", (long long)outer);
			cg_line(cg, "    for (int64_t i = 0; i < %lld; i++)", (long long)len);
			cg_line(cg, "        if (X1[i] != 0)");
			if (inner == 1)
				cg_line(cg, "            Y0[j++] = X0[o * %lld + i];", (long long)dim);
			else
				cg_line(cg, "            memcpy(Y0 + (j++) * %lld, X0 + (o * %lld + i) * %lld, "
				        "%lld * sizeof(*Y0));", (long long)inner, (long long)dim,
				        (long long)inner, (long long)inner);
		}
	}
	cg_line(cg, "%s = cnt;", nv);
	return RL_OK;
}

static enum rl_status emit_unique(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	const char *k = cg->kname;
	int64_t outer = 1, n = numel(x), inner = 1;
	const struct rl_attr *aa = rl_node_attr(nd, "axis");
	if (aa) {
		int r = x->shape.rank, axis = (int)(aa->i < 0 ? aa->i + r : aa->i);
		n = x->shape.d[axis].v;
		for (int i = 0; i < axis; i++)
			outer *= x->shape.d[i].v;
		for (int i = axis + 1; i < r; i++)
			inner *= x->shape.d[i].v;
	}
	bool sorted = rl_node_attr_int(nd, "sorted", 1) != 0;
	char nv[4][96];
	bool has[4];
	for (int q = 0; q < 4; q++)
		has[q] = q != 2 && extent_var(cg, node, q, nv[q], sizeof(nv[q]));
	cg_line(cg, "int64_t m = 0; /* distinct slices */");
	if (n > 0 && outer * inner > 0) {
		enum rl_dtype dt = x->dtype;
		struct rl_buf *b = &cg->statics;
		rl_buf_printf(b, "static int64_t %s_perm[%lld], %s_grp[%lld], %s_first[%lld], "
		              "%s_cnts[%lld];\n", k, (long long)n, k, (long long)n, k, (long long)n, k,
		              (long long)n);
		if (n > 1 || !sorted) /* the merge buffer; the order of first occurrence */
			rl_buf_printf(b, "static int64_t %s_tmp[%lld];\n", k, (long long)n);
		/* slices a and b compared lexicographically: -1, 0, 1 (one slice
		 * needs no comparison, and an unused static function warns) */
		if (n > 1) {
			rl_buf_printf(b, "static int %s_cmp(const %s *x, int64_t a, int64_t b)\n{\n", k,
			              cg_ctype(dt));
			struct rl_buf fb = {0}; /* the body, tidied (outer or inner may be 1) */
			rl_buf_printf(&fb, "    for (int64_t o = 0; o < %lld; o++)\n", (long long)outer);
			rl_buf_printf(&fb, "        for (int64_t i = 0; i < %lld; i++) {\n", (long long)inner);
			char ea[96], eb[96];
			snprintf(ea, sizeof(ea), "x[(o * %lld + a) * %lld + i]", (long long)n, (long long)inner);
			snprintf(eb, sizeof(eb), "x[(o * %lld + b) * %lld + i]", (long long)n, (long long)inner);
			rl_buf_printf(&fb, "            const %s u = %s;\n", cg_comptype(dt), cg_load(cg, dt, ea));
			rl_buf_printf(&fb, "            const %s v = %s;\n", cg_comptype(dt), cg_load(cg, dt, eb));
			if (rl_dtype_is_float(dt)) /* NaNs sort last and equal each other, as numpy's */
				rl_buf_printf(&fb, "            if (u != v && (u == u || v == v))\n"
				                   "                return u != u ? 1 : v != v || u < v ? -1 : 1;\n"
				                   "        }\n    return 0;\n");
			else
				rl_buf_printf(&fb, "            if (u != v)\n                return u < v ? -1 : 1;\n"
				                   "        }\n    return 0;\n");
			cg_tidy(&fb);
			rl_buf_printf(b, "%s}\n\n", fb.s ? fb.s : "");
			rl_buf_free(&fb);
		}
		cg_line(cg, "int64_t *perm = %s_perm, *grp = %s_grp, *first = %s_first, *cnts = %s_cnts;",
		        k, k, k, k);
		if (n > 1 || !sorted)
			cg_line(cg, "int64_t *tmp = %s_tmp;", k);
		cg_line(cg, "for (int64_t i = 0; i < %lld; i++)", (long long)n);
		cg_line(cg, "    perm[i] = i;");
		if (n > 1) { /* one slice is sorted and makes one group */
			cg_line(cg, "/* stable merge sort: equal slices keep their input order */");
			cg_line(cg, "for (int64_t w = 1; w < %lld; w *= 2) {", (long long)n);
			cg_line(cg, "    for (int64_t lo = 0; lo < %lld; lo += 2 * w) {", (long long)n);
			cg->indent += 2;
			cg_line(cg, "int64_t mid = lo + w < %lld ? lo + w : %lld, hi = lo + 2 * w < %lld ? "
			        "lo + 2 * w : %lld;", (long long)n, (long long)n, (long long)n, (long long)n);
			cg_line(cg, "int64_t i = lo, j = mid, o = lo;");
			cg_line(cg, "while (i < mid && j < hi)");
			cg_line(cg, "    tmp[o++] = %s_cmp(X0, perm[j], perm[i]) < 0 ? perm[j++] : perm[i++];", k);
			cg_line(cg, "while (i < mid)");
			cg_line(cg, "    tmp[o++] = perm[i++];");
			cg_line(cg, "while (j < hi)");
			cg_line(cg, "    tmp[o++] = perm[j++];");
			cg->indent--;
			cg_line(cg, "}");
			cg_line(cg, "memcpy(perm, tmp, sizeof(%s_perm));", k);
			cg->indent--;
			cg_line(cg, "}");
			cg_line(cg, "/* groups in sorted order: first[g] is the group's lowest index */");
			cg_line(cg, "for (int64_t i = 0; i < %lld; i++) {", (long long)n);
			cg_line(cg, "    if (i == 0 || %s_cmp(X0, perm[i - 1], perm[i]) != 0) {", k);
			cg_line(cg, "        first[m] = perm[i];");
			cg_line(cg, "        cnts[m++] = 0;");
			cg_line(cg, "    }");
			cg_line(cg, "    grp[perm[i]] = m - 1;");
			cg_line(cg, "    cnts[m - 1]++;");
			cg_line(cg, "}");
		} else {
			cg_line(cg, "first[0] = 0;");
			cg_line(cg, "cnts[0] = 1;");
			cg_line(cg, "grp[0] = 0;");
			cg_line(cg, "m = 1;");
		}
		const char *ord = "q", *inv = "grp[i]";
		if (!sorted) {
			cg_line(cg, "/* sorted=0: output q is the q-th group to occur (tmp[q]); perm[g] "
			        "is group g's output position */");
			cg_line(cg, "for (int64_t i = 0, q = 0; i < %lld; i++)", (long long)n);
			cg_line(cg, "    if (first[grp[i]] == i) {");
			cg_line(cg, "        tmp[q] = grp[i];");
			cg_line(cg, "        perm[grp[i]] = q++;");
			cg_line(cg, "    }");
			ord = "tmp[q]";
			inv = "perm[grp[i]]";
		}
		if (has[0] || has[1] || has[3]) {
			cg_line(cg, "for (int64_t q = 0; q < m; q++) {");
			cg->indent++;
			cg_line(cg, "const int64_t g = %s;", ord);
			if (has[0] && outer == 1 && inner == 1) {
				cg_line(cg, "Y0[q] = X0[first[g]];");
			} else if (has[0]) {
				cg_line(cg, "for (int64_t o = 0; o < %lld; o++)", (long long)outer);
				cg_line(cg, "    memcpy(Y0 + (o * m + q) * %lld, X0 + (o * %lld + first[g]) * %lld, "
				        "%lld * sizeof(*Y0));", (long long)inner, (long long)n, (long long)inner,
				        (long long)inner);
			}
			if (has[1])
				cg_line(cg, "Y1[q] = first[g];");
			if (has[3])
				cg_line(cg, "Y3[q] = cnts[g];");
			cg_loops_close(cg, 1);
		}
		if (cg_out(cg, node, 2)) {
			cg_line(cg, "for (int64_t i = 0; i < %lld; i++)", (long long)n);
			cg_line(cg, "    Y2[i] = %s;", inv);
		}
	}
	for (int q = 0; q < 4; q++)
		if (has[q])
			cg_line(cg, "%s = m;", nv[q]);
	return RL_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

enum rl_status rl_emit_c_detect(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_RoiAlign: return emit_roi_align(cg, node);
	case RL_OP_NonMaxSuppression: return emit_nms(cg, node);
	case RL_OP_DeformConv: return emit_deform_conv(cg, node);
	case RL_OP_Col2Im: return emit_col2im(cg, node);
	case RL_OP_MaxUnpool: return emit_max_unpool(cg, node);
	case RL_OP_NonZero: return emit_nonzero(cg, node);
	case RL_OP_Compress: return emit_compress(cg, node);
	case RL_OP_Unique: return emit_unique(cg, node);
	default:
		return cg_error(cg, node, "%s has no detect-family kernel",
		                rl_op_table[cg->g->nodes[node].op].name);
	}
}

/* ---- the generated API for data-dependent extents -------------------------- */

static bool output_bounded(const struct rl_graph *g, uint32_t i)
{
	return g->values[g->outputs[i]].extent_axis != 0;
}

bool cg_extent_any(const struct rl_graph *g)
{
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (output_bounded(g, i))
			return true;
	return false;
}

void cg_extent_decls(const struct rl_graph *g, const char *prefix, struct rl_buf *c)
{
	for (uint32_t i = 0; i < g->noutputs; i++) {
		if (!output_bounded(g, i))
			continue;
		const struct rl_shape *s = &g->values[g->outputs[i]].shape;
		rl_buf_printf(c, "static long long %s_run_dims%u[%d] = {", prefix, i,
		              s->rank ? s->rank : 1);
		for (int k = 0; k < s->rank; k++)
			rl_buf_printf(c, "%s%lld", k ? ", " : "", (long long)s->d[k].v);
		rl_buf_printf(c, "}; /* output %u in the last run */\n", i);
	}
	rl_buf_printf(c, "\n");
}

void cg_extent_after(const struct rl_graph *g, const char *prefix, uint32_t node,
                     const char *kname, struct rl_buf *c)
{
	const struct rl_node *n = &g->nodes[node];
	for (int q = 0; q < n->nout; q++) {
		uint32_t v = n->out[q];
		if (v == RL_NONE || !g->values[v].extent_axis)
			continue;
		for (uint32_t i = 0; i < g->noutputs; i++)
			if (g->outputs[i] == v)
				rl_buf_printf(c, "    %s_run_dims%u[%d] = %s_n%d;\n", prefix, i,
				              g->values[v].extent_axis - 1, kname, q);
	}
}

void cg_extent_func(const struct rl_graph *g, const char *prefix, const char *upper,
                    struct rl_buf *c)
{
	rl_buf_printf(c, "\nconst long long *%s_run_dims(int i)\n{\n", prefix);
	rl_buf_printf(c, "    if (i < 0 || i >= %s_NUM_OUTPUTS)\n        return NULL;\n", upper);
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (output_bounded(g, i))
			rl_buf_printf(c, "    if (i == %u)\n        return %s_run_dims%u;\n", i, prefix, i);
	rl_buf_printf(c, "    return %s_outputs[i].dims;\n}\n", prefix);
}

void cg_extent_header(const struct rl_graph *g, const char *prefix, const char *upper,
                      struct rl_buf *h)
{
	rl_buf_printf(h, "/*\n * Outputs whose size depends on the input values:");
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (output_bounded(g, i))
			rl_buf_printf(h, " %u (axis %d)", i, g->values[g->outputs[i]].extent_axis - 1);
	rl_buf_printf(h, ".\n"
	              " * Their dims in %s_outputs[] are upper bounds that size the buffers.\n"
	              " * After a successful run, %s_run_dims(i) gives output i's dims in that\n"
	              " * run, and its data is the first product-of-those-dims elements of the\n"
	              " * buffer, row-major over those dims. For any other output it gives the\n"
	              " * dims of the table.\n */\n", prefix, prefix);
	rl_buf_printf(h, "#define %s_DYNAMIC_OUTPUTS 1\n", upper);
	rl_buf_printf(h, "const long long *%s_run_dims(int i);\n", prefix);
}
