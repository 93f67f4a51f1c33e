/*
 * emit_image.c - C kernels for image resampling: Resize (opset 10 on),
 * Upsample (7, 9) and GridSample (16 on; described at its kernel below).
 *
 * Resampling is separable: output coordinate o on axis d reads a few input
 * positions ("taps") of that axis with weights, and an output element is
 * the sum, over the product of every axis's taps, of the input times the
 * product of the weights. So the kernel has two parts:
 *
 * 1. Per resized axis, a tap table: for each output index, up to T input
 *    indices and weights (T = 1 nearest, 2 linear, 4 cubic, wider with
 *    antialias on a downscaled axis), and whether the coordinate falls
 *    outside the crop box (tf_crop_and_resize's extrapolation). The tables
 *    are built when the kernel runs, by one helper function, because the
 *    scales, sizes and roi are inputs that may only be known then; an axis
 *    whose table comes out as the identity is walked with one tap.
 * 2. A loop nest over the output that, for each element, walks the taps of
 *    the resized axes and accumulates in double. Axes the node does not
 *    resize (not in `axes`) are plain copies of the index.
 *
 * The coordinate transforms, nearest rounding modes, the Keys cubic kernel
 * with coefficient a, exclude_outside (outside taps get weight 0 and the
 * rest are renormalized), antialias (the filter stretched by 1 / scale when
 * downscaling, normalized) and keep_aspect_ratio_policy follow the ONNX
 * operator description. Indices past the edge are clamped to it (edge
 * padding). Float inputs only (float16, bfloat16, float, double).
 */
#include "emit_index.h"

#include <string.h>

/* The tap helper, once per kernel (named <kname>_taps). Transform codes:
 * 0 half_pixel, 1 half_pixel_symmetric, 2 pytorch_half_pixel,
 * 3 align_corners, 4 asymmetric, 5 tf_crop_and_resize. Mode: 0 nearest,
 * 1 linear, 2 cubic. Nearest mode: 0 round_prefer_floor, 1
 * round_prefer_ceil, 2 floor, 3 ceil. Returns the taps used per output. */
static void emit_taps_helper(struct rl_cgen *cg)
{
	struct rl_buf *b = &cg->statics;
	const char *k = cg->kname;
	rl_buf_printf(b,
	"static double %s_keys(double d, double a)\n"
	"{\n"
	"    if (d <= 1)\n"
	"        return ((a + 2) * d - (a + 3)) * d * d + 1;\n"
	"    if (d < 2)\n"
	"        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;\n"
	"    return 0;\n"
	"}\n\n", k);
	rl_buf_printf(b,
	"static int %s_taps(double scale, double rs, double re, int ctm, int mode, int nmode,\n"
	"                   double a, int excl, int aa, int64_t in, int64_t out, int T,\n"
	"                   int64_t *ix, double *w, unsigned char *ext)\n"
	"{\n"
	"    int nt = 1, ident = in == out;\n"
	"    for (int64_t o = 0; o < out; o++) {\n"
	"        /* fr: the resized length before rounding, scale * in */\n"
	"        const double fo = (double)o, fi = (double)in, fn = (double)out, fr = scale * fi;\n"
	"        double x;\n"
	"        switch (ctm) {\n"
	"        case 0: x = (fo + 0.5) / scale - 0.5; break;\n"
	"        case 1: x = fi * 0.5 * (1 - fn / fr) + (fo + 0.5) / scale - 0.5; break;\n"
	"        case 2: x = fr > 1 ? (fo + 0.5) / scale - 0.5 : 0; break;\n"
	"        case 3: x = fr > 1 ? fo * (fi - 1) / (fr - 1) : 0; break;\n"
	"        case 4: x = fo / scale; break;\n"
	"        default:\n"
	"            x = fr > 1 ? rs * (fi - 1) + fo * (re - rs) * (fi - 1) / (fr - 1)\n"
	"                       : 0.5 * (rs + re) * (fi - 1);\n"
	"        }\n"
	"        ext[o] = ctm == 5 && (x < 0 || x > fi - 1);\n"
	"        int64_t *io = ix + o * T;\n"
	"        double *wo = w + o * T;\n"
	"        for (int t = 0; t < T; t++) {\n"
	"            io[t] = 0;\n"
	"            wo[t] = 0;\n"
	"        }\n"
	"        const double fl = floor(x), r = x - fl;\n"
	"        if (mode == 0) {\n"
	"            double kk;\n"
	"            switch (nmode) {\n"
	"            case 0: kk = r <= 0.5 ? fl : fl + 1; break;\n"
	"            case 1: kk = r < 0.5 ? fl : fl + 1; break;\n"
	"            case 2: kk = fl; break;\n"
	"            default: kk = ceil(x); break;\n"
	"            }\n"
	"            io[0] = kk < 0 ? 0 : kk > fi - 1 ? in - 1 : (int64_t)kk;\n"
	"            wo[0] = 1;\n"
	"            ident &= io[0] == o;\n"
	"            continue;\n"
	"        }\n"
	"        const double s = aa && scale < 1 ? scale : 1;\n"
	"        int start = (int)floor((mode == 1 ? -1 : -2) / s) + 1, n = 2 - 2 * start;\n"
	"        if (n > T) { /* never with the table size the generator chose */\n"
	"            start += (n - T) / 2;\n"
	"            n = T;\n"
	"        }\n"
	"        double sum = 0;\n"
	"        for (int t = 0; t < n; t++) {\n"
	"            const int64_t p = (int64_t)fl + start + t;\n"
	"            const double d = fabs(((double)(start + t) - r) * s);\n"
	"            double c = mode == 1 ? (d < 1 ? 1 - d : 0) : %s_keys(d, a);\n"
	"            if (excl && (p < 0 || p >= in))\n"
	"                c = 0;\n"
	"            io[t] = p < 0 ? 0 : p >= in ? in - 1 : p;\n"
	"            wo[t] = c;\n"
	"            sum += c;\n"
	"        }\n"
	"        if (sum != 0)\n"
	"            for (int t = 0; t < n; t++)\n"
	"                wo[t] /= sum;\n"
	"        int one = -1;\n"
	"        for (int t = 0; t < n; t++)\n"
	"            if (wo[t] != 0)\n"
	"                one = one == -1 && wo[t] == 1 && io[t] == o ? t : -2;\n"
	"        ident &= one >= 0 && !ext[o];\n"
	"        if (n > nt)\n"
	"            nt = n;\n"
	"    }\n"
	"    if (!ident)\n"
	"        return nt;\n"
	"    /* the identity: one tap, this output's own index */\n"
	"    for (int64_t o = 0; o < out; o++) {\n"
	"        ix[o * T] = o;\n"
	"        w[o * T] = 1;\n"
	"    }\n"
	"    return 1;\n"
	"}\n\n", k, k);
}

static int name_index(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

enum rl_status rl_emit_c_resize(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype dt = x->dtype;
	if (!rl_dtype_is_float(dt))
		return cg_error(cg, node, "input dtype %s is not supported (float types only)",
		                rl_dtype_name(dt));
	static const char *const modes[] = {"nearest", "linear", "cubic"};
	static const char *const ctms[] = {"half_pixel", "half_pixel_symmetric",
	                                   "pytorch_half_pixel", "align_corners", "asymmetric",
	                                   "tf_crop_and_resize"};
	static const char *const nmodes[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
	                                     "ceil"};
	static const char *const policies[] = {"stretch", "not_larger", "not_smaller"};
	bool old = nd->op == RL_OP_Upsample || nd->opset < 11;
	const char *ms = rl_node_attr_str(nd, "mode", "nearest");
	int mode = name_index(ms, modes, 3);
	if (old && strcmp(ms, "bilinear") == 0)
		mode = 1;
	if (mode < 0 || (old && mode == 2))
		return cg_error(cg, node, "attribute mode='%s' is not supported", ms);
	const char *cs = rl_node_attr_str(nd, "coordinate_transformation_mode",
	                                  old ? "asymmetric" : "half_pixel");
	int ctm = name_index(cs, ctms, 6);
	if (ctm < 0)
		return cg_error(cg, node, "attribute coordinate_transformation_mode='%s' is not "
		                "supported", cs);
	const char *ns = rl_node_attr_str(nd, "nearest_mode", old ? "floor" : "round_prefer_floor");
	int nmode = name_index(ns, nmodes, 4);
	if (nmode < 0)
		return cg_error(cg, node, "attribute nearest_mode='%s' is not supported", ns);
	const char *ps = rl_node_attr_str(nd, "keep_aspect_ratio_policy", "stretch");
	int policy = name_index(ps, policies, 3);
	if (policy < 0)
		return cg_error(cg, node, "attribute keep_aspect_ratio_policy='%s' is not supported",
		                ps);
	double ca = rl_node_attr_float(nd, "cubic_coeff_a", -0.75);
	int excl = rl_node_attr_int(nd, "exclude_outside", 0) != 0;
	int aa = rl_node_attr_int(nd, "antialias", 0) != 0 && mode != 0;
	double extrap = rl_node_attr_float(nd, "extrapolation_value", 0);
	int r = x->shape.rank;
	/* input slots, by opset (see rl_resize_slots in ir/fam_index.c) */
	int roi = -1, sc = -1, sz = -1;
	if (old) {
		if (rl_node_in(nd, 1) != RL_NONE)
			sc = 1;
	} else {
		if (rl_node_in(nd, 1) != RL_NONE)
			roi = 1;
		if (cg_in(cg, node, 2) && rl_shape_numel(&cg_in(cg, node, 2)->shape) != 0)
			sc = 2;
		if (cg_in(cg, node, 3) && rl_shape_numel(&cg_in(cg, node, 3)->shape) != 0)
			sz = 3;
	}
	const double *sattr = NULL;
	if (nd->op == RL_OP_Upsample && nd->opset < 9) {
		const struct rl_attr *a = rl_node_attr(nd, "scales");
		if (!a || a->kind != RL_ATTR_FLOATS || a->n != r)
			return cg_error(cg, node, "attribute scales must hold %d floats", r);
		sattr = a->floats;
	} else if (sc < 0 && sz < 0) {
		return cg_error(cg, node, "neither scales nor sizes is given");
	}
	if (sc >= 0 && cg_in(cg, node, sc)->dtype != RL_DT_FLOAT)
		return cg_error(cg, node, "scales must be float, not %s",
		                rl_dtype_name(cg_in(cg, node, sc)->dtype));
	if (sz >= 0 && cg_in(cg, node, sz)->dtype != RL_DT_INT64)
		return cg_error(cg, node, "sizes must be int64, not %s",
		                rl_dtype_name(cg_in(cg, node, sz)->dtype));
	if (roi >= 0 && ctm == 5 && !rl_dtype_is_float(cg_in(cg, node, roi)->dtype))
		return cg_error(cg, node, "roi must be a float tensor");
	/* the axes scales/sizes/roi refer to, and each axis's position in them */
	int pos[RL_MAX_RANK], nax = r;
	for (int d = 0; d < r; d++)
		pos[d] = old ? d : -1;
	const int64_t *av = NULL;
	int na = old ? -1 : rl_node_attr_ints(nd, "axes", &av);
	if (na > 0) {
		nax = na;
		for (int i = 0; i < na; i++) {
			int64_t a = av[i] < 0 ? av[i] + r : av[i];
			if (a < 0 || a >= r)
				return cg_error(cg, node, "axis %lld is out of range for rank %d",
				                (long long)av[i], r);
			pos[a] = i;
		}
	} else if (!old) {
		for (int d = 0; d < r; d++)
			pos[d] = d;
	}
	if (sc >= 0 && rl_shape_numel(&cg_in(cg, node, sc)->shape) != nax)
		return cg_error(cg, node, "scales must have %d entries", nax);
	if (sz >= 0 && rl_shape_numel(&cg_in(cg, node, sz)->shape) != nax)
		return cg_error(cg, node, "sizes must have %d entries", nax);
	if (roi >= 0 && ctm == 5 && rl_shape_numel(&cg_in(cg, node, roi)->shape) != 2 * nax)
		return cg_error(cg, node, "roi must have %d entries", 2 * nax);
	if (rl_shape_numel(&y->shape) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	/* taps per output index on each resized axis (the table's row length) */
	int T[RL_MAX_RANK];
	for (int d = 0; d < r; d++) {
		int64_t in = x->shape.d[d].v, out = y->shape.d[d].v;
		T[d] = 0;
		if (pos[d] < 0)
			continue;
		if (in < 1)
			return cg_error(cg, node, "axis %d of the input is empty", d);
		T[d] = mode == 0 ? 1 : mode == 1 ? 2 : 4;
		if (aa && out < in) {
			/* scale >= (out - 0.5) / in, the smallest the shapes allow */
			double smin = ((double)out - 0.5) / (double)in;
			if (smin < 1e-3)
				smin = 1e-3;
			double half = mode == 1 ? 1 : 2;
			T[d] = 2 * (int)(half / smin + 2);
		}
	}
	emit_taps_helper(cg);
	const char *k = cg->kname;
	/* nearest without tf_crop_and_resize's extrapolation: a copy (below) */
	bool copy = mode == 0 && ctm != 5;
	cg_line(cg, "/* %s, %s, %s%s%s; tap tables for the resized axes, then the sum over "
	        "their product */", modes[mode], ctms[ctm], mode == 0 ? nmodes[nmode] : "",
	        aa ? "antialias" : "", excl ? ", exclude_outside" : "");
	if (policy > 0 && sz >= 0) {
		cg_line(cg, "double keep = %s;", policy == 1 ? "1e300" : "0");
		for (int d = 0; d < r; d++) {
			if (pos[d] < 0)
				continue;
			cg_line(cg, "{");
			cg_line(cg, "    const double q = (double)X%d[%d] / %lld.0;", sz, pos[d],
			        (long long)x->shape.d[d].v);
			cg_line(cg, "    keep = q %s keep ? q : keep;", policy == 1 ? "<" : ">");
			cg_line(cg, "}");
		}
	}
	for (int d = 0; d < r; d++) {
		if (pos[d] < 0)
			continue;
		int64_t in = x->shape.d[d].v, out = y->shape.d[d].v;
		rl_buf_printf(&cg->statics, "static int64_t %s_i%d[%lld];\nstatic double %s_w%d[%lld];\n"
		              "static unsigned char %s_e%d[%lld];\n", k, d,
		              (long long)(out * T[d]), k, d, (long long)(out * T[d]), k, d,
		              (long long)out);
		char scale[96];
		if (sattr)
			snprintf(scale, sizeof(scale), "%.17g", sattr[d]);
		else if (sc >= 0)
			snprintf(scale, sizeof(scale), "(double)X%d[%d]", sc, pos[d]);
		else if (policy > 0)
			snprintf(scale, sizeof(scale), "keep");
		else
			snprintf(scale, sizeof(scale), "(double)X%d[%d] / %lld.0", sz, pos[d],
			         (long long)in);
		char rs[48] = "0", re[48] = "1";
		if (roi >= 0 && ctm == 5) {
			snprintf(rs, sizeof(rs), "(double)X%d[%d]", roi, pos[d]);
			snprintf(re, sizeof(re), "(double)X%d[%d]", roi, pos[d] + nax);
		}
		cg_line(cg, "const int nt%d = %s_taps(%s, %s, %s, %d, %d, %d, %.17g, %d, %d, %lld, %lld, "
		        "%d, %s_i%d, %s_w%d, %s_e%d);", d, k, scale, rs, re, ctm, mode, nmode, ca, excl,
		        aa, (long long)in, (long long)out, T[d], k, d, k, d, k, d);
		if (copy)
			cg_line(cg, "(void)nt%d; /* nearest: one tap */", d);
	}
	/* the loop nest: output axes in order; after each resized axis's loop,
	 * its extrapolation flag is or-ed in */
	int64_t xs[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	cg_line(cg, "size_t y = 0;");
	char ext[RL_MAX_RANK * 40] = "";
	size_t ep = 0;
	for (int d = 0; d < r; d++) {
		cg_line(cg, "for (size_t o%d = 0; o%d < %lld; o%d++) {", d, d,
		        (long long)y->shape.d[d].v, d);
		cg->indent++;
		if (pos[d] >= 0 && ctm == 5)
			ep += (size_t)snprintf(ext + ep, sizeof(ext) - ep, "%s%s_e%d[o%d]", ep ? " | " : "",
			                       k, d, d);
	}
	if (copy) {
		/* nearest: one tap of weight 1 on each resized axis, so each output
		 * is one input element, copied (the sum below in double per output
		 * took 3.3 ns an element: ppocrv4_det's 2x nearest upsampling of
		 * 1x96x40x40 2.03 ms, one thread, Zen 3). The bases are written in
		 * the innermost loop; the compiler hoists each to its own axis. */
		char prev[16] = "0";
		for (int d = 0; d < r; d++) {
			char ix[64];
			if (pos[d] >= 0)
				snprintf(ix, sizeof(ix), "(size_t)%s_i%d[o%d]", k, d, d);
			else
				snprintf(ix, sizeof(ix), "o%d", d);
			if (d == r - 1)
				cg_line(cg, "Y0[y++] = X0[%s + %s * %lld];", prev, ix, (long long)xs[d]);
			else
				cg_line(cg, "const size_t b%d = %s + %s * %lld;", d, prev, ix, (long long)xs[d]);
			snprintf(prev, sizeof(prev), "b%d", d);
		}
		cg_loops_close(cg, r);
		return RL_OK;
	}
	cg_line(cg, "double acc = 0.0;");
	int depth = r;
	if (ep) {
		cg_line(cg, "if (%s)", ext);
		cg_line(cg, "    acc = %.17g;", extrap);
		cg_line(cg, "else");
	}
	cg_line(cg, "{");
	cg->indent++;
	depth++;
	char prevb[16] = "0", prevw[16] = "1";
	for (int d = 0; d < r; d++) {
		char b[16];
		snprintf(b, sizeof(b), "b%d", d);
		if (pos[d] < 0) {
			cg_line(cg, "const size_t b%d = %s + o%d * %lld;", d, prevb, d, (long long)xs[d]);
		} else {
			cg_line(cg, "for (int t%d = 0; t%d < nt%d; t%d++) {", d, d, d, d);
			cg->indent++;
			depth++;
			cg_line(cg, "const size_t b%d = %s + (size_t)%s_i%d[o%d * %d + (size_t)t%d] * %lld;",
			        d, prevb, k, d, d, T[d], d, (long long)xs[d]);
			cg_line(cg, "const double w%d = %s%s%s_w%d[o%d * %d + (size_t)t%d];", d,
			        strcmp(prevw, "1") ? prevw : "", strcmp(prevw, "1") ? " * " : "", k, d, d,
			        T[d], d);
			snprintf(prevw, sizeof(prevw), "w%d", d);
		}
		snprintf(prevb, sizeof(prevb), "%s", b);
	}
	char xe[48];
	snprintf(xe, sizeof(xe), "X0[%s]", prevb);
	if (strcmp(prevw, "1") == 0)
		cg_line(cg, "acc += (double)%s;", cg_load(cg, dt, xe));
	else
		cg_line(cg, "acc += %s * (double)%s;", prevw, cg_load(cg, dt, xe));
	/* close the tap loops and the accumulation block, then store */
	cg_loops_close(cg, depth - r);
	char e[64];
	snprintf(e, sizeof(e), "(%s)acc", cg_comptype(dt));
	cg_line(cg, "Y0[y++] = %s;", cg_assign(cg, dt, e));
	cg_loops_close(cg, r);
	return RL_OK;
}

/* ---- GridSample -------------------------------------------------------------- */

/*
 * Y[n, c, o] = the input sampled at grid[n, o] (normalized to [-1, 1]; the
 * grid's last entry order is the reverse of the spatial axes: x is the last
 * axis). Coordinates follow the PyTorch convention the ONNX description
 * cites: unnormalized by align_corners; for nearest and linear, "border"
 * clips the coordinate and "reflection" reflects it about the edges (the
 * centers of the edge pixels with align_corners, their outer borders
 * without) and clips; cubic applies the padding to each of its 4 taps
 * instead. With "zeros", taps outside the input read 0. Nearest rounds half
 * to even.
 */
enum rl_status rl_emit_c_grid_sample(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *gr = cg_in(cg, node, 1);
	const struct rl_value *y = cg_out(cg, node, 0);
	static const char *const pads[] = {"zeros", "border", "reflection"};
	const char *ms = rl_node_attr_str(nd, "mode", nd->opset < 20 ? "bilinear" : "linear");
	int mode = strcmp(ms, "nearest") == 0 ? 0
	           : strcmp(ms, "linear") == 0 || strcmp(ms, "bilinear") == 0 ? 1
	           : strcmp(ms, "cubic") == 0 || strcmp(ms, "bicubic") == 0 ? 2 : -1;
	if (mode < 0)
		return cg_error(cg, node, "attribute mode='%s' is not supported", ms);
	const char *ps = rl_node_attr_str(nd, "padding_mode", "zeros");
	int pmode = name_index(ps, pads, 3);
	if (pmode < 0)
		return cg_error(cg, node, "attribute padding_mode='%s' is not supported", ps);
	int ac = rl_node_attr_int(nd, "align_corners", 0) != 0;
	int r = x->shape.rank - 2;
	if (r < 1 || gr->shape.rank != r + 2)
		return cg_error(cg, node, "input and grid ranks do not fit");
	if (rl_shape_numel(&y->shape) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	int k = mode == 0 ? 1 : mode == 1 ? 2 : 4;
	const char *kn = cg->kname;
	if (mode != 2 || pmode != 0) /* cubic with zeros padding never clips */
		rl_buf_printf(&cg->statics,
	"/* %s: a coordinate with border or reflection padding (PyTorch's rule) */\n"
	"static double %s_pad(double x, double size, int pmode, int ac)\n"
	"{\n"
	"    if (pmode == 2) {\n"
	"        const double lo = ac ? 0 : -0.5, span = ac ? size - 1 : size;\n"
	"        if (span <= 0)\n"
	"            return 0;\n"
	"        const double t = fabs(x - lo), extra = fmod(t, span);\n"
	"        const double flips = floor(t / span);\n"
	"        x = fmod(flips, 2) == 0 ? lo + extra : lo + span - extra;\n"
	"    }\n"
	"    if (pmode != 0)\n"
	"        x = x < 0 ? 0 : x > size - 1 ? size - 1 : x;\n"
	"    return x;\n"
	"}\n\n", kn, kn);
	if (mode == 2)
		rl_buf_printf(&cg->statics,
		"static double %s_cubic(double d)\n"
		"{\n"
		"    const double a = -0.75;\n"
		"    d = fabs(d);\n"
		"    if (d <= 1)\n"
		"        return ((a + 2) * d - (a + 3)) * d * d + 1;\n"
		"    if (d < 2)\n"
		"        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a;\n"
		"    return 0;\n"
		"}\n\n", kn);
	int64_t nb = x->shape.d[0].v, ch = x->shape.d[1].v, in_sp = 1, out_sp = 1;
	int64_t dims[RL_MAX_RANK];
	for (int d = 0; d < r; d++) {
		dims[d] = x->shape.d[2 + d].v;
		in_sp *= dims[d];
		out_sp *= y->shape.d[2 + d].v;
	}
	int64_t xs[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	char b1[RL_MAX_RANK * 24];
	size_t p = 0;
	for (int d = 0; d < r; d++)
		p += (size_t)snprintf(b1 + p, sizeof(b1) - p, "%s%lld", d ? ", " : "", (long long)dims[d]);
	cg_line(cg, "/* grid sample, %s, padding %s, align_corners %d */", ms, ps, ac);
	cg_line(cg, "static const int64_t dims[%d] = {%s};", r, b1);
	cg_line(cg, "for (size_t n = 0; n < %lld; n++) {", (long long)nb);
	cg_line(cg, "    for (size_t o = 0; o < %lld; o++) {", (long long)out_sp);
	cg->indent += 2;
	cg_line(cg, "int64_t ti[%d][%d];", r, k);
	cg_line(cg, "double tw[%d][%d];", r, k);
	cg_line(cg, "for (int d = 0; d < %d; d++) {", r);
	cg->indent++;
	char ge[96];
	snprintf(ge, sizeof(ge), "X1[(n * %lld + o) * %d + (size_t)(%d - d)]", (long long)out_sp, r,
	         r - 1);
	cg_line(cg, "const double g = (double)%s, sz = (double)dims[d];", cg_load(cg, gr->dtype, ge));
	cg_line(cg, "double c = %s;", ac ? "(g + 1) / 2 * (sz - 1)" : "((g + 1) * sz - 1) / 2");
	if (mode != 2)
		cg_line(cg, "c = %s_pad(c, sz, %d, %d);", kn, pmode, ac);
	if (mode == 0) {
		cg_line(cg, "const double f = nearbyint(c);");
		cg_line(cg, "const double tc[1] = {f}, wc[1] = {1};");
	} else if (mode == 1) {
		cg_line(cg, "const double f = floor(c), t = c - f;");
		cg_line(cg, "const double tc[2] = {f, f + 1}, wc[2] = {1 - t, t};");
	} else {
		cg_line(cg, "const double f = floor(c), t = c - f;");
		cg_line(cg, "const double tc[4] = {f - 1, f, f + 1, f + 2};");
		cg_line(cg, "const double wc[4] = {%s_cubic(1 + t), %s_cubic(t), %s_cubic(1 - t), "
		        "%s_cubic(2 - t)};", kn, kn, kn, kn);
	}
	cg_line(cg, "for (int j = 0; j < %d; j++) {", k);
	cg->indent++;
	if (mode == 2 && pmode != 0)
		cg_line(cg, "const double q = %s_pad(tc[j], sz, %d, %d);", kn, pmode, ac);
	else
		cg_line(cg, "const double q = tc[j];");
	cg_line(cg, "const int in = q >= 0 && q <= sz - 1;");
	cg_line(cg, "ti[d][j] = in ? (int64_t)q : 0;");
	cg_line(cg, "tw[d][j] = in ? wc[j] : 0;");
	cg_loops_close(cg, 2);
	cg_line(cg, "for (size_t c = 0; c < %lld; c++) {", (long long)ch);
	cg->indent++;
	cg_line(cg, "const size_t base = (n * %lld + c) * %lld;", (long long)ch, (long long)in_sp);
	cg_line(cg, "double acc = 0.0;");
	char prevb[16] = "base", prevw[16] = "1";
	for (int d = 0; d < r; d++) {
		cg_line(cg, "for (int j%d = 0; j%d < %d; j%d++) {", d, d, k, d);
		cg->indent++;
		cg_line(cg, "const size_t b%d = %s + (size_t)ti[%d][j%d] * %lld;", d, prevb, d, d,
		        (long long)xs[2 + d]);
		cg_line(cg, "const double w%d = %s * tw[%d][j%d];", d, prevw, d, d);
		snprintf(prevb, sizeof(prevb), "b%d", d);
		snprintf(prevw, sizeof(prevw), "w%d", d);
	}
	char xe[48];
	snprintf(xe, sizeof(xe), "X0[%s]", prevb);
	cg_line(cg, "acc += %s * (double)%s;", prevw, cg_load(cg, x->dtype, xe));
	cg_loops_close(cg, r);
	char e[64];
	snprintf(e, sizeof(e), "(%s)acc", cg_comptype(y->dtype));
	cg_line(cg, "Y0[(n * %lld + c) * %lld + o] = %s;", (long long)ch, (long long)out_sp,
	        cg_assign(cg, y->dtype, e));
	cg_loops_close(cg, 3);
	return RL_OK;
}
