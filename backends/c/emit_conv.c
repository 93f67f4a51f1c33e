/*
 * emit_conv.c - C kernels for Conv and ConvTranspose.
 *
 * Conv on float32/float64 with one or two spatial axes is a direct
 * convolution that never materializes im2col: a block of up to four output
 * channels walks the output rows; for each input channel and kernel row the
 * input row (copied with its zero padding into a small stack array when the
 * window reaches past an edge) is streamed against every kernel column into
 * the block's output rows. The innermost loop runs over contiguous output
 * columns with a literal trip count, split into a multiple of four plus a
 * short tail so that gcc -O2 vectorizes it too. A 1x1 convolution with unit
 * strides and no padding is the same code over the flattened spatial plane,
 * which makes it a GEMM over channels (rows of output columns, i-k-j).
 *
 * Everything else (three or more spatial axes, float16/bfloat16, very wide
 * padded rows) takes a gather loop per output element with the sum in float
 * (double for float64). ConvTranspose is always the gather form: output
 * position o receives input i through kernel tap k when o = i*s + k*d - pb.
 *
 * Pads follow ONNX: explicit pads, VALID (none), or SAME_UPPER/SAME_LOWER
 * with the total (out-1)*s + (k-1)*d + 1 - in split so that the extra pixel
 * goes to the end (UPPER) or the beginning (LOWER). Output sizes come from
 * shape inference; only the begin pads are needed here.
 */
#include "emit.h"

#include <string.h>

#define CONV_MB 4        /* output channels per block */
#define CONV_ROW_MAX 8192 /* longest padded input row kept on the stack */
#define CONV_PLANE_MAX 4096 /* elements of the stack planes in plane mode */

bool rl_emit_c_conv_supports(enum rl_op op)
{
	return op == RL_OP_Conv || op == RL_OP_ConvTranspose;
}

/* The window of one node, spatial axes only. */
struct conv_win {
	int nsp;
	int64_t in[RL_MAX_RANK], out[RL_MAX_RANK];
	int64_t k[RL_MAX_RANK], s[RL_MAX_RANK], d[RL_MAX_RANK];
	int64_t pb[RL_MAX_RANK];
};

static bool read_ints(const struct rl_node *n, const char *name, int want, int64_t def,
                      int64_t *out)
{
	const int64_t *a;
	int cnt = rl_node_attr_ints(n, name, &a);
	for (int i = 0; i < want; i++)
		out[i] = def;
	if (cnt < 0)
		return true;
	if (cnt != want)
		return false;
	memcpy(out, a, sizeof(int64_t) * (size_t)want);
	return true;
}

/* Read kernel, strides, dilations and begin pads; false with a message. */
static bool conv_win_read(struct rl_cgen *cg, uint32_t node, bool transposed,
                          struct conv_win *w, const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_shape *sx = &cg_in(cg, node, 0)->shape;
	const struct rl_shape *sw = &cg_in(cg, node, 1)->shape;
	const struct rl_shape *sy = &cg_out(cg, node, 0)->shape;
	int nsp = sx->rank - 2;
	memset(w, 0, sizeof(*w));
	w->nsp = nsp;
	if (nsp < 1 || sw->rank != sx->rank || sy->rank != sx->rank) {
		*why = "input, weight and output must have the same rank >= 3";
		return false;
	}
	for (int i = 0; i < nsp; i++) {
		w->in[i] = sx->d[2 + i].v;
		w->out[i] = sy->d[2 + i].v;
		w->k[i] = sw->d[2 + i].v;
	}
	int64_t ks[RL_MAX_RANK], pads[2 * RL_MAX_RANK], opad[RL_MAX_RANK];
	if (!read_ints(n, "kernel_shape", nsp, -1, ks) || !read_ints(n, "strides", nsp, 1, w->s) ||
	    !read_ints(n, "dilations", nsp, 1, w->d) || !read_ints(n, "pads", 2 * nsp, 0, pads) ||
	    !read_ints(n, "output_padding", nsp, 0, opad)) {
		*why = "a window attribute has the wrong number of entries";
		return false;
	}
	for (int i = 0; i < nsp; i++) {
		if (ks[i] >= 0 && ks[i] != w->k[i]) {
			*why = "kernel_shape differs from the weight's shape";
			return false;
		}
		if (w->s[i] < 1 || w->d[i] < 1) {
			*why = "strides and dilations must be >= 1";
			return false;
		}
	}
	const char *ap = rl_node_attr_str(n, "auto_pad", "NOTSET");
	bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
	bool valid = strcmp(ap, "VALID") == 0;
	if (!same_upper && !same_lower && !valid && *ap && strcmp(ap, "NOTSET") != 0) {
		*why = "unknown auto_pad";
		return false;
	}
	bool has_os = rl_node_attr(n, "output_shape") != NULL;
	for (int i = 0; i < nsp; i++) {
		int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
		if (transposed && (has_os || same_upper || same_lower)) {
			/* the reference's Python floor division: total may be negative
			 * when output_shape asks for more than the natural size */
			int64_t total = w->s[i] * (w->in[i] - 1) + opad[i] + ek - w->out[i];
			int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
			w->pb[i] = same_upper ? half : total - half;
		} else if (same_upper || same_lower) {
			int64_t total = (w->out[i] - 1) * w->s[i] + ek - w->in[i];
			if (total < 0)
				total = 0;
			w->pb[i] = same_upper ? total / 2 : total - total / 2;
		} else if (valid) {
			w->pb[i] = 0;
		} else {
			w->pb[i] = pads[i];
		}
	}
	return true;
}

static void line_open(struct rl_cgen *cg, const char *fmt, long long a, long long b)
{
	char s[256];
	snprintf(s, sizeof(s), fmt, a, b);
	cg_line(cg, "%s", s);
	cg->indent++;
}

static void line_close(struct rl_cgen *cg)
{
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * `for (size_t VAR = 0; VAR < n; VAR++) { body }` with a literal trip count
 * that is a multiple of 4 plus a scalar tail, so gcc's -O2 vectorizer (which
 * takes only loops it can cover without an epilogue) accepts the main part.
 */
static void emit_split_loop(struct rl_cgen *cg, const char *var, int64_t n,
                            const char *const *body, int nbody)
{
	int64_t n4 = n >= 8 ? n / 4 * 4 : n;
	char h[200];
	if (n4 > 0) {
		snprintf(h, sizeof(h), "for (size_t %s = 0; %s < %lld; %s++) {", var, var,
		         (long long)n4, var);
		cg_line(cg, "%s", h);
		for (int i = 0; i < nbody; i++)
			cg_line(cg, "    %s", body[i]);
		cg_line(cg, "}");
	}
	if (n > n4) {
		snprintf(h, sizeof(h), "for (size_t %s = %lld; %s < %lld; %s++) {", var,
		         (long long)n4, var, (long long)n, var);
		cg_line(cg, "%s", h);
		for (int i = 0; i < nbody; i++)
			cg_line(cg, "    %s", body[i]);
		cg_line(cg, "}");
	}
}

/*
 * Direct 2-D convolution (1-D as H = 1), float or double, accumulating in
 * the output rows. Dims: N, C, H, W in; M, OH, OW out; KH x KW kernel.
 */
struct conv2d {
	int64_t N, C, H, W, M, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, G;
	bool bias;
};

static void emit_conv2d(struct rl_cgen *cg, const char *T, const struct conv2d *p)
{
	int64_t CG = p->C / p->G, MG = p->M / p->G;
	int mb = MG % CONV_MB == 0 ? CONV_MB : MG % 2 == 0 ? 2 : 1;
	int64_t kk = p->KH * p->KW;
	/* the input row positions a row of outputs reads: [-PL, -PL + WP) */
	int64_t wp = (p->OW - 1) * p->SW + (p->KW - 1) * p->DW + 1;
	bool hpad = p->PL > 0 || wp - p->PL > p->W;
	bool vpad = p->PT > 0 || (p->OH - 1) * p->SH + (p->KH - 1) * p->DH - p->PT >= p->H;
	char b[512];

	line_open(cg, "for (size_t n = 0; n < %lld; n++) {", p->N, 0);
	line_open(cg, "for (size_t mo = 0; mo < %lld; mo += %lld) {", p->M, mb);
	if (p->G > 1)
		cg_line(cg, "const size_t g = mo / %lld;", (long long)MG);
	else
		cg_line(cg, "const size_t g = 0;");
	snprintf(b, sizeof(b), "const %s *restrict xg = X0 + (n * %lld + g * %lld) * %lld;", T,
	         (long long)p->C, (long long)CG, (long long)(p->H * p->W));
	cg_line(cg, "%s", b);
	line_open(cg, "for (size_t oh = 0; oh < %lld; oh++) {", p->OH, 0);
	for (int r = 0; r < mb; r++)
		cg_line(cg, "%s *restrict y%d = Y0 + ((n * %lld + mo + %d) * %lld + oh) * %lld;", T, r,
		        (long long)p->M, r, (long long)p->OH, (long long)p->OW);
	{
		char lines[CONV_MB][160];
		const char *body[CONV_MB];
		for (int r = 0; r < mb; r++) {
			if (p->bias)
				snprintf(lines[r], sizeof(lines[r]), "y%d[ow] = X2[mo + %d];", r, r);
			else
				snprintf(lines[r], sizeof(lines[r]), "y%d[ow] = 0;", r);
			body[r] = lines[r];
		}
		emit_split_loop(cg, "ow", p->OW, body, mb);
	}
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", CG, 0);
	cg_line(cg, "const %s *restrict xc = xg + c * %lld;", T, (long long)(p->H * p->W));
	cg_line(cg, "const %s *restrict wc = X1 + (mo * %lld + c) * %lld;", T, (long long)CG,
	        (long long)kk);
	line_open(cg, "for (size_t kh = 0; kh < %lld; kh++) {", p->KH, 0);
	if (vpad) {
		cg_line(cg, "const long long ih = (long long)(oh * %lld + kh * %lld) - %lld;",
		        (long long)p->SH, (long long)p->DH, (long long)p->PT);
		cg_line(cg, "if (ih < 0 || ih >= %lld)", (long long)p->H);
		cg_line(cg, "    continue;");
		cg_line(cg, "const %s *restrict xr = xc + (size_t)ih * %lld;", T, (long long)p->W);
	} else {
		cg_line(cg, "const %s *restrict xr = xc + (oh * %lld + kh * %lld - %lld) * %lld;", T,
		        (long long)p->SH, (long long)p->DH, (long long)p->PT, (long long)p->W);
	}
	const char *src = "xr";
	if (hpad) {
		/* zero-padded copy of the row: row[q] = x[q - PL] */
		int64_t lo = p->PL < wp ? p->PL : wp;
		int64_t hi = p->PL + p->W < wp ? p->PL + p->W : wp;
		cg_line(cg, "%s row[%lld];", T, (long long)wp);
		if (lo > 0) {
			cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)lo);
			cg_line(cg, "    row[q] = 0;");
		}
		if (hi > lo) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)lo, (long long)hi);
			cg_line(cg, "    row[q] = xr[q - %lld];", (long long)p->PL);
		}
		if (wp > hi) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)hi, (long long)wp);
			cg_line(cg, "    row[q] = 0;");
		}
		src = "row";
	}
	line_open(cg, "for (size_t kw = 0; kw < %lld; kw++) {", p->KW, 0);
	for (int r = 0; r < mb; r++)
		cg_line(cg, "const %s w%d = wc[%lld + kh * %lld + kw];", T, r, (long long)(r * CG * kk),
		        (long long)p->KW);
	cg_line(cg, "const %s *xs = %s + kw * %lld;", T, src, (long long)p->DW);
	{
		char lines[CONV_MB + 1][160];
		const char *body[CONV_MB + 1];
		if (p->SW == 1)
			snprintf(lines[0], sizeof(lines[0]), "const %s xv = xs[ow];", T);
		else
			snprintf(lines[0], sizeof(lines[0]), "const %s xv = xs[ow * %lld];", T,
			         (long long)p->SW);
		body[0] = lines[0];
		for (int r = 0; r < mb; r++) {
			snprintf(lines[r + 1], sizeof(lines[r + 1]), "y%d[ow] += w%d * xv;", r, r);
			body[r + 1] = lines[r + 1];
		}
		emit_split_loop(cg, "ow", p->OW, body, mb + 1);
	}
	line_close(cg); /* kw */
	line_close(cg); /* kh */
	line_close(cg); /* c */
	/* the block's output rows are final: a fused epilogue runs on them now */
	if (cg->epi) {
		char yr[260], base[200];
		cg_line(cg, "for (size_t er = 0; er < %d; er++) {", mb);
		cg->indent++;
		snprintf(base, sizeof(base), "((n * %lld + mo + er) * %lld + oh) * %lld",
		         (long long)p->M, (long long)p->OH, (long long)p->OW);
		snprintf(yr, sizeof(yr), "Y0 + %s", base);
		cg_epilogue(cg, yr, base, p->OW, p->OW);
		line_close(cg);
	}
	line_close(cg); /* oh */
	line_close(cg); /* mo */
	line_close(cg); /* n */
}

/*
 * Plane mode for small output planes: the input channel is first copied to
 * a zero-padded (or, for a strided 1x1, subsampled) plane xp on the stack
 * with row pitch WP, and the block's outputs accumulate in stack planes of
 * the same pitch. Each kernel tap is then one contiguous sweep over the
 * whole plane, acc[t] += w * xp[t + tap offset], instead of many short rows;
 * the WP - OW extra columns per row are computed and dropped.
 */
struct conv_plane {
	int64_t HP, WP;  /* padded/subsampled plane */
	int64_t xpn;     /* xp elements: HP*WP plus the last tap's overhang */
	int64_t plane;   /* accumulator elements: OH*WP */
	bool subsample;  /* 1x1 with strides: xp[r][q] = x[r*SH][q*SW] */
};

static bool conv_plane_plan(const struct conv2d *p, struct conv_plane *q)
{
	memset(q, 0, sizeof(*q));
	if (p->SH == 1 && p->SW == 1) {
		q->WP = p->OW + (p->KW - 1) * p->DW;
		q->HP = p->OH + (p->KH - 1) * p->DH;
		q->xpn = q->HP * q->WP + (p->KW - 1) * p->DW;
	} else if (p->KH == 1 && p->KW == 1) {
		q->subsample = true;
		q->WP = p->OW;
		q->HP = p->OH;
		q->xpn = q->HP * q->WP;
	} else {
		return false;
	}
	q->plane = p->OH * q->WP;
	return CONV_MB * q->plane <= CONV_PLANE_MAX && q->xpn <= CONV_PLANE_MAX;
}

static void emit_conv_plane(struct rl_cgen *cg, const char *T, const struct conv2d *p,
                            const struct conv_plane *q)
{
	int64_t CG = p->C / p->G, MG = p->M / p->G;
	int mb = MG % CONV_MB == 0 ? CONV_MB : MG % 2 == 0 ? 2 : 1;
	int64_t kk = p->KH * p->KW;
	char lines[CONV_MB + 1][200];
	const char *body[CONV_MB + 1];
	for (int r = 0; r <= CONV_MB; r++)
		body[r] = lines[r];

	line_open(cg, "for (size_t n = 0; n < %lld; n++) {", p->N, 0);
	line_open(cg, "for (size_t mo = 0; mo < %lld; mo += %lld) {", p->M, mb);
	if (p->G > 1)
		cg_line(cg, "const size_t g = mo / %lld;", (long long)MG);
	else
		cg_line(cg, "const size_t g = 0;");
	for (int r = 0; r < mb; r++)
		cg_line(cg, "%s acc%d[%lld];", T, r, (long long)q->plane);
	for (int r = 0; r < mb; r++)
		snprintf(lines[r], sizeof(lines[r]), "acc%d[t] = 0;", r);
	emit_split_loop(cg, "t", q->plane, body, mb);
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", CG, 0);
	cg_line(cg, "const %s *restrict xc = X0 + (n * %lld + g * %lld + c) * %lld;", T,
	        (long long)p->C, (long long)CG, (long long)(p->H * p->W));
	cg_line(cg, "%s xp[%lld];", T, (long long)q->xpn);
	if (q->subsample) {
		cg_line(cg, "for (size_t r = 0; r < %lld; r++)", (long long)q->HP);
		cg_line(cg, "    for (size_t s = 0; s < %lld; s++)", (long long)q->WP);
		cg_line(cg, "        xp[r * %lld + s] = xc[r * %lld + s * %lld];", (long long)q->WP,
		        (long long)(p->SH * p->W), (long long)p->SW);
	} else {
		/* rows [r0, r1) and columns [s0, s1) of xp hold input; the rest is 0 */
		int64_t r0 = p->PT, r1 = p->PT + p->H, s0 = p->PL, s1 = p->PL + p->W;
		if (r1 > q->HP)
			r1 = q->HP;
		if (s1 > q->WP)
			s1 = q->WP;
		bool full = r0 == 0 && s0 == 0 && r1 == q->HP && s1 == q->WP && q->xpn == q->HP * q->WP;
		if (!full) {
			snprintf(lines[0], sizeof(lines[0]), "xp[t] = 0;");
			emit_split_loop(cg, "t", q->xpn, body, 1);
		}
		if (r1 > r0 && s1 > s0) {
			cg_line(cg, "for (size_t r = %lld; r < %lld; r++)", (long long)r0, (long long)r1);
			cg_line(cg, "    for (size_t s = %lld; s < %lld; s++)", (long long)s0, (long long)s1);
			cg_line(cg, "        xp[r * %lld + s] = xc[(r - %lld) * %lld + s - %lld];",
			        (long long)q->WP, (long long)r0, (long long)p->W, (long long)s0);
		}
	}
	cg_line(cg, "const %s *restrict wc = X1 + (mo * %lld + c) * %lld;", T, (long long)CG,
	        (long long)kk);
	line_open(cg, "for (size_t kh = 0; kh < %lld; kh++) {", p->KH, 0);
	line_open(cg, "for (size_t kw = 0; kw < %lld; kw++) {", p->KW, 0);
	for (int r = 0; r < mb; r++)
		cg_line(cg, "const %s w%d = wc[%lld + kh * %lld + kw];", T, r, (long long)(r * CG * kk),
		        (long long)p->KW);
	cg_line(cg, "const %s *xs = xp + kh * %lld + kw * %lld;", T,
	        (long long)(p->DH * q->WP), (long long)p->DW);
	snprintf(lines[0], sizeof(lines[0]), "const %s xv = xs[t];", T);
	for (int r = 0; r < mb; r++)
		snprintf(lines[r + 1], sizeof(lines[r + 1]), "acc%d[t] += w%d * xv;", r, r);
	emit_split_loop(cg, "t", q->plane, body, mb + 1);
	line_close(cg); /* kw */
	line_close(cg); /* kh */
	line_close(cg); /* c */
	/* drop the pitch columns, add the bias */
	line_open(cg, "for (size_t oh = 0; oh < %lld; oh++) {", p->OH, 0);
	for (int r = 0; r < mb; r++) {
		if (p->bias)
			snprintf(lines[r], sizeof(lines[r]),
			         "Y0[((n * %lld + mo + %d) * %lld + oh) * %lld + ow] = acc%d[oh * %lld + ow] + X2[mo + %d];",
			         (long long)p->M, r, (long long)p->OH, (long long)p->OW, r, (long long)q->WP, r);
		else
			snprintf(lines[r], sizeof(lines[r]),
			         "Y0[((n * %lld + mo + %d) * %lld + oh) * %lld + ow] = acc%d[oh * %lld + ow];",
			         (long long)p->M, r, (long long)p->OH, (long long)p->OW, r, (long long)q->WP);
	}
	emit_split_loop(cg, "ow", p->OW, body, mb);
	if (cg->epi) {
		char yr[260], base[200];
		cg_line(cg, "for (size_t er = 0; er < %d; er++) {", mb);
		cg->indent++;
		snprintf(base, sizeof(base), "((n * %lld + mo + er) * %lld + oh) * %lld",
		         (long long)p->M, (long long)p->OH, (long long)p->OW);
		snprintf(yr, sizeof(yr), "Y0 + %s", base);
		cg_epilogue(cg, yr, base, p->OW, p->OW);
		line_close(cg);
	}
	line_close(cg); /* oh */
	line_close(cg); /* mo */
	line_close(cg); /* n */
}

/* Flat index expression sum(var_i * stride_i) over nsp axes. */
static void flat_expr(char *b, size_t n, const char *var, int nsp, const int64_t *dims)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < nsp; i++) {
		int64_t st = 1;
		for (int j = i + 1; j < nsp; j++)
			st *= dims[j];
		p += (size_t)snprintf(b + p, n - p, "%s%s%d * %lld", i ? " + " : "", var, i,
		                      (long long)st);
	}
	if (!nsp)
		snprintf(b, n, "0");
}

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/*
 * Gather form, one output element at a time, any spatial rank and float
 * type: Conv sums x[i] * w[k] over i = o*s + k*d - pb inside the input;
 * ConvTranspose over i = (o + pb - k*d) / s when that divides exactly.
 */
static void emit_gather(struct rl_cgen *cg, uint32_t node, bool transposed,
                        const struct conv_win *w, int64_t N, int64_t C, int64_t M, int64_t G,
                        bool bias)
{
	enum rl_dtype dt = cg_in(cg, node, 0)->dtype;
	const char *acc = dt == RL_DT_DOUBLE ? "double" : "float";
	int nsp = w->nsp;
	int64_t CG = C / G, MG = M / G;
	int64_t ks = prod(w->k, nsp), is = prod(w->in, nsp), os = prod(w->out, nsp);
	char e[1024], e2[1024];
	line_open(cg, "for (size_t n = 0; n < %lld; n++) {", N, 0);
	line_open(cg, "for (size_t mo = 0; mo < %lld; mo++) {", M, 0);
	cg_line(cg, "const size_t g = mo / %lld, m = mo %% %lld;", (long long)MG, (long long)MG);
	cg_line(cg, "(void)g;");
	cg_line(cg, "(void)m;");
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t o%d = 0; o%d < %lld; o%d++) {", i, i, (long long)w->out[i], i);
		cg->indent++;
	}
	if (bias)
		cg_line(cg, "%s acc = %s;", acc, cg_load(cg, dt, "X2[mo]"));
	else
		cg_line(cg, "%s acc = 0;", acc);
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", CG, 0);
	cg_line(cg, "const size_t ci = g * %lld + c;", (long long)CG);
	if (transposed)
		cg_line(cg, "const %s *restrict wk = X1 + (ci * %lld + m) * %lld;",
		        cg_ctype(dt), (long long)MG, (long long)ks);
	else
		cg_line(cg, "const %s *restrict wk = X1 + (mo * %lld + c) * %lld;",
		        cg_ctype(dt), (long long)CG, (long long)ks);
	cg_line(cg, "const %s *restrict xc = X0 + (n * %lld + ci) * %lld;", cg_ctype(dt),
	        (long long)C, (long long)is);
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t k%d = 0; k%d < %lld; k%d++) {", i, i, (long long)w->k[i], i);
		cg->indent++;
		if (!transposed) {
			cg_line(cg, "const long long x%d = (long long)(o%d * %lld + k%d * %lld) - %lld;", i,
			        i, (long long)w->s[i], i, (long long)w->d[i], (long long)w->pb[i]);
		} else {
			cg_line(cg, "const long long t%d = (long long)o%d + %lld - (long long)(k%d * %lld);",
			        i, i, (long long)w->pb[i], i, (long long)w->d[i]);
			if (w->s[i] != 1) {
				cg_line(cg, "if (t%d < 0 || t%d %% %lld != 0)", i, i, (long long)w->s[i]);
				cg_line(cg, "    continue;");
			}
			cg_line(cg, "const long long x%d = t%d / %lld;", i, i, (long long)w->s[i]);
		}
		cg_line(cg, "if (x%d < 0 || x%d >= %lld)", i, i, (long long)w->in[i]);
		cg_line(cg, "    continue;");
	}
	flat_expr(e, sizeof(e), "x", nsp, w->in);
	flat_expr(e2, sizeof(e2), "k", nsp, w->k);
	{
		char xe[1100], we[1100];
		snprintf(xe, sizeof(xe), "xc[%s]", e);
		snprintf(we, sizeof(we), "wk[%s]", e2);
		char l1[1200];
		snprintf(l1, sizeof(l1), "%s", cg_load(cg, dt, xe));
		cg_line(cg, "acc += %s * %s;", l1, cg_load(cg, dt, we));
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	line_close(cg); /* c */
	flat_expr(e, sizeof(e), "o", nsp, w->out);
	cg_line(cg, "Y0[(n * %lld + mo) * %lld + %s] = %s;", (long long)M, (long long)os, e,
	        cg_store(cg, dt, "acc"));
	if (cg->epi) {
		char yr[1300], base[1200];
		snprintf(base, sizeof(base), "(n * %lld + mo) * %lld + %s", (long long)M, (long long)os, e);
		snprintf(yr, sizeof(yr), "Y0 + %s", base);
		cg_epilogue(cg, yr, base, 1, 1);
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	line_close(cg); /* mo */
	line_close(cg); /* n */
}

enum rl_status rl_emit_c_conv(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	bool transposed = n->op == RL_OP_ConvTranspose;
	const struct rl_value *X = cg_in(cg, node, 0), *W = cg_in(cg, node, 1);
	const struct rl_value *B = cg_in(cg, node, 2), *Y = cg_out(cg, node, 0);
	enum rl_dtype dt = X->dtype;
	if (!rl_dtype_is_float(dt) || W->dtype != dt || Y->dtype != dt || (B && B->dtype != dt))
		return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(dt));
	struct conv_win w;
	const char *why = NULL;
	if (!conv_win_read(cg, node, transposed, &w, &why))
		return cg_error(cg, node, "%s", why);
	int64_t G = rl_node_attr_int(n, "group", 1);
	int64_t N = X->shape.d[0].v, C = X->shape.d[1].v, M = Y->shape.d[1].v;
	if (G < 1 || C % G || M % G)
		return cg_error(cg, node, "group %lld does not divide the channels", (long long)G);
	if (transposed ? W->shape.d[0].v != C || W->shape.d[1].v * G != M
	               : W->shape.d[0].v != M || W->shape.d[1].v * G != C)
		return cg_error(cg, node, "weight shape does not match the channels and group");
	if (B && (B->shape.rank != 1 || B->shape.d[0].v != M))
		return cg_error(cg, node, "bias must hold one value per output channel");
	if (rl_shape_numel(&Y->shape) == 0)
		return RL_OK;
	int nsp = w.nsp;
	int64_t ks = prod(w.k, nsp);
	bool fast = !transposed && (dt == RL_DT_FLOAT || dt == RL_DT_DOUBLE) && ks > 0 &&
	            prod(w.in, nsp) > 0;
	struct conv2d p = {.N = N, .C = C, .M = M, .G = G, .bias = B != NULL};
	bool pointwise = true;
	for (int i = 0; i < nsp; i++)
		pointwise &= w.k[i] == 1 && w.s[i] == 1 && w.pb[i] == 0 && w.in[i] == w.out[i];
	if (fast && pointwise) {
		/* 1x1: the flattened plane, cut into rows whose width is a multiple
		 * of 4 where one divides it (so the column loop vectorizes) */
		int64_t P = prod(w.in, nsp), rw = 0;
		for (int64_t q = 512; q >= 4 && !rw; q -= 4)
			if (P % q == 0)
				rw = q;
		if (!rw || (P <= 2048 && P % 4 != 0))
			rw = P;
		if (rw > 2048)
			for (rw = 2048; P % rw; rw--)
				;
		p.H = p.OH = P / rw;
		p.W = p.OW = rw;
		p.KH = p.KW = p.SH = p.SW = p.DH = p.DW = 1;
	} else if (fast && nsp <= 2) {
		int a = nsp == 2 ? 0 : -1; /* index of the H axis, -1 for 1-D */
		p.H = a < 0 ? 1 : w.in[0];
		p.OH = a < 0 ? 1 : w.out[0];
		p.KH = a < 0 ? 1 : w.k[0];
		p.SH = a < 0 ? 1 : w.s[0];
		p.DH = a < 0 ? 1 : w.d[0];
		p.PT = a < 0 ? 0 : w.pb[0];
		p.W = w.in[nsp - 1];
		p.OW = w.out[nsp - 1];
		p.KW = w.k[nsp - 1];
		p.SW = w.s[nsp - 1];
		p.DW = w.d[nsp - 1];
		p.PL = w.pb[nsp - 1];
		int64_t wp = (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;
		if (wp > CONV_ROW_MAX)
			fast = false;
	} else {
		fast = false;
	}
	char sh[64];
	struct conv_plane pl;
	if (transposed) {
		cg_line(cg, "/* ConvTranspose, gather form: y[o] = b + sum x[i] * w[k] over o = i*s + k*d - pads */");
		emit_gather(cg, node, true, &w, N, C, M, G, B != NULL);
	} else if (fast && !pointwise && conv_plane_plan(&p, &pl)) {
		cg_line(cg, "/* Conv, plane mode: each input channel padded into a stack plane; every kernel tap is one contiguous sweep accumulating into blocks of output channels */");
		emit_conv_plane(cg, cg_ctype(dt), &p, &pl);
	} else if (fast) {
		snprintf(sh, sizeof(sh), "%s", pointwise ? "1x1 as a GEMM over channels, " : "");
		cg_line(cg, "/* Conv, direct: %sblocks of output channels; each (zero-padded) input row is streamed into the block's output rows */",
		        sh);
		emit_conv2d(cg, cg_ctype(dt), &p);
	} else {
		cg_line(cg, "/* Conv, gather form: y[o] = b + sum x[o*s + k*d - pads] * w[k] */");
		emit_gather(cg, node, false, &w, N, C, M, G, B != NULL);
	}
	return RL_OK;
}
