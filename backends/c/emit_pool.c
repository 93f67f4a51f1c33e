/*
 * emit_pool.c - C kernels for MaxPool, AveragePool, LpPool and the global
 * pools.
 *
 * Float/double MaxPool (without Indices) and AveragePool over one or two
 * spatial axes take the row form (emit_rows): whole output rows at a time,
 * as contiguous loops that plain -O2 vectorizes in the RL_TARGETS clones;
 * MaxPool is separable there (rows, then windows, then the stride), at
 * strides 1 and 2 in the vector form (loops of exactly 16 lanes, no scalar
 * tails; see max_vec_ok). AveragePool, and MaxPool at stride 1 on short
 * rows, take the flat form where they can (emit_flat: padded phase planes,
 * taps combined in whole 16-lane vectors over the plane as one flat row,
 * the same bits as the gather form); the row form's loops of 28 or 14
 * lanes ran scalar at -O2 (Inception-v2's 3x3/1 pools 5-8x onnxruntime's
 * time, 1.9 ms of 38). The depthwise Conv uses the same fill (cg_flat_*). The other windowed pools are a gather loop per
 * output element over the kernel taps x = o*s + k*d - pb, skipping taps outside the input. Every
 * pool splits its planes (image x channel) across the thread pool, a whole
 * plane per iteration, so results do not depend on the thread count. The
 * rules follow the ONNX reference:
 *   - MaxPool keeps the first largest value; the optional Indices output is
 *     the flat index into X (batch and channel included), row-major, or
 *     column-major over the spatial axes with storage_order = 1;
 *   - AveragePool divides by the taps inside the input, or with
 *     count_include_pad by the taps inside the padded input [-pb, in + pe)
 *     (a ceil_mode window reaching past the end padding does not count the
 *     overhang);
 *   - LpPool is (sum |x|^p)^(1/p) over the taps inside the input.
 * Pads: explicit, VALID, or SAME_UPPER/SAME_LOWER splitting the total
 * (out-1)*s + (k-1)*d + 1 - in with the odd pixel at the end (UPPER) or the
 * beginning (LOWER). Output sizes (ceil_mode included) come from inference.
 * Sums run in float for float32/float16/bfloat16 and in double for float64;
 * GlobalAveragePool (and an AveragePool whose one window is the whole
 * plane) sums each plane as eight interleaved partial sums (a fixed order,
 * so the same bits everywhere) so that -O2 vectorizes it.
 */
#include "emit_impl.h"

#include <string.h>

struct pool_win {
	int nsp;
	int64_t in[RL_MAX_RANK], out[RL_MAX_RANK];
	int64_t k[RL_MAX_RANK], s[RL_MAX_RANK], d[RL_MAX_RANK];
	int64_t pb[RL_MAX_RANK], pe[RL_MAX_RANK];
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

static bool pool_win_read(struct rl_cgen *cg, uint32_t node, struct pool_win *w,
                          const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_shape *sx = &cg_in(cg, node, 0)->shape;
	const struct rl_shape *sy = &cg_out(cg, node, 0)->shape;
	int nsp = sx->rank - 2;
	memset(w, 0, sizeof(*w));
	w->nsp = nsp;
	if (nsp < 1 || sy->rank != sx->rank) {
		*why = "input and output must have the same rank >= 3";
		return false;
	}
	int64_t pads[2 * RL_MAX_RANK];
	if (!read_ints(n, "kernel_shape", nsp, -1, w->k) || w->k[0] < 1) {
		*why = "kernel_shape is missing or has the wrong length";
		return false;
	}
	if (!read_ints(n, "strides", nsp, 1, w->s) || !read_ints(n, "dilations", nsp, 1, w->d) ||
	    !read_ints(n, "pads", 2 * nsp, 0, pads)) {
		*why = "a window attribute has the wrong number of entries";
		return false;
	}
	const char *ap = rl_node_attr_str(n, "auto_pad", "NOTSET");
	bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
	bool valid = strcmp(ap, "VALID") == 0;
	if (!same_upper && !same_lower && !valid && *ap && strcmp(ap, "NOTSET") != 0) {
		*why = "unknown auto_pad";
		return false;
	}
	for (int i = 0; i < nsp; i++) {
		w->in[i] = sx->d[2 + i].v;
		w->out[i] = sy->d[2 + i].v;
		if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1) {
			*why = "kernel, strides and dilations must be >= 1";
			return false;
		}
		int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
		if (same_upper || same_lower) {
			int64_t total = (w->out[i] - 1) * w->s[i] + ek - w->in[i];
			if (total < 0)
				total = 0;
			w->pb[i] = same_upper ? total / 2 : total - total / 2;
			w->pe[i] = total - w->pb[i];
		} else if (!valid) {
			w->pb[i] = pads[i];
			w->pe[i] = pads[nsp + i];
		}
	}
	return true;
}

static void flat_expr(char *b, size_t n, const char *var, int nsp, const int64_t *dims,
                      bool colmajor)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < nsp; i++) {
		int64_t st = 1;
		if (colmajor)
			for (int j = 0; j < i; j++)
				st *= dims[j];
		else
			for (int j = i + 1; j < nsp; j++)
				st *= dims[j];
		p += (size_t)snprintf(b + p, n - p, "%s(size_t)%s%d * %lld", i ? " + " : "", var, i,
		                      (long long)st);
	}
}

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* Lowest value of a compute type, as a literal (max pooling's start). */
static const char *lowest(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_FLOAT: case RL_DT_FLOAT16: case RL_DT_BFLOAT16: return "-INFINITY";
	case RL_DT_DOUBLE: return "-(double)INFINITY";
	case RL_DT_INT8: return "INT8_MIN";
	case RL_DT_INT16: return "INT16_MIN";
	case RL_DT_INT32: return "INT32_MIN";
	case RL_DT_INT64: return "INT64_MIN";
	default: return "0";
	}
}

/*
 * Threads: planes (image x channel) split across the pool, each a whole
 * plane per iteration, so results do not depend on the thread count. A
 * chunk gets at least a grain of work (outputs x taps) so a small pool does
 * not pay the claim and a worker's wake-up (a few microseconds on a 2-core
 * host) for nothing: POOL_GRAIN taps for the scalar gather form,
 * POOL_GRAIN_VEC for the vectorized row and global forms, whose taps cost
 * about a tenth (65536 taps: 4-7 us of one core there, single-thread
 * figures on the shared host; ResNet-50's final 7x7 AveragePool, 7 us in
 * all, now runs on one thread).
 */
#define POOL_GRAIN 16384
#define POOL_GRAIN_VEC 65536
/* what a plane costs the row and flat forms besides its taps (loops, the
 * flat form's fill and copy-out), in taps: DenseNet's 2x2/2 AveragePool on
 * 512 x 14x14 (196 taps a plane) runs 37 ns a plane, about 490 taps' time;
 * without it the pool's 19 us stayed on one thread */
#define POOL_PLANE_TAPS 256

static void pool_par(struct rl_cgen *cg, int64_t planes, int64_t work_per_plane, int64_t grain)
{
	cg->par_n = planes;
	cg->par_grain = work_per_plane >= grain ? 1 : grain / (work_per_plane ? work_per_plane : 1);
	/* an odd count of chunks below the pool's 8 for two threads is one
	 * fewer (then as many per thread): squeezenet's 3x3/2 MaxPool of 256
	 * planes of 27x27 was 5 chunks, 3 planes' shares against 2 */
	int64_t most = cg->par_grain > 1 ? planes / cg->par_grain : 0;
	if (most >= 3 && most < 8 && most % 2)
		cg->par_grain = -(most - 1);
}

/* The interior [a, b) of one axis: outputs whose taps all lie inside the input. */
static void pool_interior(const struct pool_win *w, int i, int64_t *a, int64_t *b)
{
	int64_t lo = 0, hi = w->out[i];
	while (lo < hi && lo * w->s[i] - w->pb[i] < 0)
		lo++;
	while (hi > lo && (hi - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] - w->pb[i] >= w->in[i])
		hi--;
	*a = lo;
	*b = hi;
}

/*
 * `for (size_t j = a; j < b; j++) BODY` as a main loop whose trip count is a
 * multiple of 16 and a scalar tail: gcc -O2 vectorizes only loops it can
 * cover without an epilogue, and 16 suits every RL_TARGETS clone's width.
 */
static void split_for(struct rl_cgen *cg, int64_t a, int64_t b, const char *body)
{
	int64_t n = b - a, m = n >= 16 ? n / 16 * 16 : n;
	if (m > 0) {
		cg_line(cg, "for (size_t j = %lld; j < %lld; j++) {", (long long)a, (long long)(a + m));
		cg_line(cg, "    %s", body);
		cg_line(cg, "}");
	}
	if (n > m) {
		cg_line(cg, "for (size_t j = %lld; j < %lld; j++) {", (long long)(a + m), (long long)b);
		cg_line(cg, "    %s", body);
		cg_line(cg, "}");
	}
}

#define POOL_ROW_MAX 512 /* widest input row of the separable MaxPool (two stack rows) */

/*
 * Open the loop over the edge columns of an output row (those with a tap in
 * the padding: all but the interior [a, b)), one output ow at a time, with
 * iw0 its first tap's input column; the caller writes the body and closes
 * the loop (indent--, "}").
 */
static void edges_open(struct rl_cgen *cg, const char *what, int64_t OW, int64_t SW, int64_t PL,
                       int64_t a, int64_t b)
{
	cg_line(cg, "/* edge columns: %s */", what);
	cg_line(cg, "for (size_t ow = 0; ow < %lld; ow++) {", (long long)OW);
	cg->indent++;
	if (b > a) {
		cg_line(cg, "if (ow == %lld)", (long long)a);
		cg_line(cg, "    ow = %lld; /* skip the interior */", (long long)b);
		cg_line(cg, "if (ow >= %lld)", (long long)OW);
		cg_line(cg, "    break;");
	}
	cg_line(cg, "const long long iw0 = (long long)(ow * %lld) - %lld;", (long long)SW,
	        (long long)PL);
}

/* Edge columns (a tap in the padding), from v, one output at a time. */
static void emit_max_edges(struct rl_cgen *cg, const char *T, const struct pool_win *w,
                           int64_t a, int64_t b)
{
	int64_t W = w->in[1], OW = w->out[1], KW = w->k[1], SW = w->s[1], DW = w->d[1];
	int64_t PL = w->pb[1];
	if (a == 0 && b >= OW)
		return;
	edges_open(cg, "the taps inside, one by one", OW, SW, PL, a, b);
	cg_line(cg, "%s m = %s;", T, cg_zero(T));
	cg_line(cg, "int any = 0;");
	cg_line(cg, "for (long long kw = 0; kw < %lld; kw++) {", (long long)KW);
	cg_line(cg, "    const long long iw = iw0 + kw * %lld;", (long long)DW);
	cg_line(cg, "    if (iw >= 0 && iw < %lld && (!any || v[iw] > m)) {", (long long)W);
	cg_line(cg, "        m = v[iw];");
	cg_line(cg, "        any = 1;");
	cg_line(cg, "    }");
	cg_line(cg, "}");
	cg_line(cg, "yr[ow] = m;");
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * Separable MaxPool body for one output row (inside emit_rows' loops, with
 * yr, ih0, kh0 and kh1 defined): v = the max over the kernel rows, column
 * by column; r = the max over each window of v's columns; the outputs pick
 * r at their stride. Every pass is a contiguous loop that -O2 vectorizes,
 * where the per-tap form reads with the stride. Max is exact, so only the
 * order among equal values (+0 and -0) or NaN could differ from the gather
 * form, which ONNX leaves open.
 */
static void emit_max_sep(struct rl_cgen *cg, const char *T, const struct pool_win *w, int64_t a,
                         int64_t b)
{
	int64_t W = w->in[1], OW = w->out[1], KW = w->k[1], SW = w->s[1], DW = w->d[1];
	int64_t PL = w->pb[1];
	char l[200];
	cg_line(cg, "if (kh0 == kh1) { /* no tap inside: 0, as the gather form */");
	cg_line(cg, "    memset(yr, 0, %lld * sizeof(%s));", (long long)OW, T);
	cg_line(cg, "    continue;");
	cg_line(cg, "}");
	cg_line(cg, "/* v: max over the kernel rows, per input column */");
	cg_scratch_array(cg, T, "v", W, 0);
	cg_line(cg, "memcpy(v, xc + (size_t)(ih0 + kh0 * %lld) * %lld, %lld * sizeof(*v));",
	        (long long)w->d[0], (long long)W, (long long)W);
	cg_line(cg, "for (long long kh = kh0 + 1; kh < kh1; kh++) {");
	cg->indent++;
	cg_line(cg, "const %s *restrict xr = xc + (size_t)(ih0 + kh * %lld) * %lld;", T,
	        (long long)w->d[0], (long long)W);
	split_for(cg, 0, W, "v[j] = xr[j] > v[j] ? xr[j] : v[j];");
	cg->indent--;
	cg_line(cg, "}");
	if (b > a) {
		/* r[j] = max over the window starting at input column j */
		int64_t ja = a * SW - PL, jb = (b - 1) * SW - PL + 1;
		cg_line(cg, "/* r[j]: max over the window of columns from j */");
		cg_scratch_array(cg, T, "r", jb, 0);
		snprintf(l, sizeof(l), "r[j] = v[j];");
		split_for(cg, ja, jb, l);
		for (int64_t kw = 1; kw < KW; kw++) {
			snprintf(l, sizeof(l), "r[j] = v[j + %lld] > r[j] ? v[j + %lld] : r[j];",
			         (long long)(kw * DW), (long long)(kw * DW));
			split_for(cg, ja, jb, l);
		}
		cg_line(cg, "for (size_t ow = %lld; ow < %lld; ow++)", (long long)a, (long long)b);
		if (SW == 1 && PL == 0)
			cg_line(cg, "    yr[ow] = r[ow];");
		else if (SW == 1)
			cg_line(cg, "    yr[ow] = r[ow - %lld];", (long long)PL);
		else
			cg_line(cg, "    yr[ow] = r[ow * %lld - %lld];", (long long)SW, (long long)PL);
	}
	emit_max_edges(cg, T, w, a, b);
}

/*
 * The vector form of a 2-D MaxPool row (float or double, dilation 1 along
 * the row, stride 1, or stride 2 with a kernel of at least 2; rows of at
 * most POOL_ROW_MAX): every pass is a loop of exactly 16 lanes that plain
 * -O2 vectorizes (its "very cheap" cost model takes no loop with a scalar
 * epilogue), so no row has a scalar tail:
 *   - v, the max over the kernel rows inside the input, column by column, in
 *     chunks of 16 columns with the last chunk moved back to end at the row's
 *     end (it recomputes some columns: max is idempotent); one pass over all
 *     the kernel rows where they are all inside (the interior rows);
 *   - stride 1: each chunk of 16 outputs is the max of KW shifted loads of v;
 *   - stride 2: r[j] = max of the KW - 1 columns from j (r = v when KW = 2),
 *     then output ow = max(r[2 ow], r[2 ow + 1]): a pair of interleaved loads
 *     (no gap), which gcc turns into two loads and two permutes per 16
 *     outputs. A stride-2 load with a gap (v[2 ow + 2] on its own) is not
 *     vectorized at -O2, hence the pairs;
 *   - the last chunk of outputs is moved back too; a row of fewer than 16
 *     interior outputs is computed into m[16] and stored whole where the
 *     extra lanes stay inside the plane (outputs written later), copied in
 *     the plane's last rows. v past the row and
 *     r past what the outputs read are zero-filled padding, so the discarded
 *     lanes read defined values.
 * Max is exact; only the order among equal values (+0, -0) or NaN could
 * differ from the gather form, which ONNX leaves open.
 */
static bool max_vec_ok(const struct pool_win *w)
{
	return w->d[1] == 1 && (w->s[1] == 1 || (w->s[1] == 2 && w->k[1] >= 2)) &&
	       w->in[1] <= POOL_ROW_MAX;
}

/* v's length (and the stride-2 r's) for the interior outputs [a, b) */
static void max_vec_sizes(const struct pool_win *w, int64_t a, int64_t b, int64_t *vn,
                          int64_t *rn)
{
	int64_t W = w->in[1], KW = w->k[1], S = w->s[1], PL = w->pb[1];
	int64_t n = b - a, ja = a * S - PL, need = W;
	*rn = 0;
	if (n > 0 && S == 1) {
		/* a chunk of 16 outputs from ob reads v[ob - PL + t + c] */
		int64_t ob = n >= 16 ? b - 16 : a;
		if (ob - PL + 15 + KW > need)
			need = ob - PL + 15 + KW;
	} else if (n > 0) {
		/* r[i] = max v[ja + i .. ja + i + KW - 2]; the chunks read r[2(ob - a) + 0..31] */
		int64_t used = 2 * (n >= 16 ? n : 16);
		*rn = (used + 15) / 16 * 16;
		if (KW > 2 && ja + *rn + KW - 2 > need)
			need = ja + *rn + KW - 2;
		if (KW == 2 && ja + *rn > need)
			need = ja + *rn;
	}
	*vn = (need + 15) / 16 * 16;
}

/* `for j in [0, W)` in chunks of 16, the last one ending at W (W >= 16) */
static void chunk_open(struct rl_cgen *cg, const char *var, int64_t a, int64_t b)
{
	if ((b - a) % 16 == 0) {
		cg_line(cg, "for (size_t %s = %lld; %s < %lld; %s += 16) {", var, (long long)a, var,
		        (long long)b, var);
	} else {
		cg_line(cg, "for (size_t %s = %lld;; %s += 16) {", var, (long long)a, var);
		cg_line(cg, "    if (%s > %lld)", var, (long long)(b - 16));
		cg_line(cg, "        %s = %lld; /* the last chunk ends at the end */", var,
		        (long long)(b - 16));
	}
	cg->indent++;
}

static void chunk_close(struct rl_cgen *cg, const char *var, int64_t a, int64_t b)
{
	if ((b - a) % 16 != 0) {
		cg_line(cg, "if (%s == %lld)", var, (long long)(b - 16));
		cg_line(cg, "    break;");
	}
	cg->indent--;
	cg_line(cg, "}");
}

/* The vertical pass: v[j] over the kernel rows [kh0, kh1), j in [0, W). */
/*
 * Whether the interior rows compute stride 2's r straight from the input
 * rows (kernel rows and KW - 1 columns per lane), not from v: r's loads of
 * v at j + 1 straddle two of v's 16-lane stores just made, which stalls on
 * store forwarding (30% of the 111x111 3x3/2 pool's samples). Needs at
 * least 16 of r's columns (the chunks stay inside the row) and no edge
 * columns (v is then not needed at all on those rows).
 */
static bool max_r_direct(const struct pool_win *w, int64_t a, int64_t b)
{
	return w->s[1] == 2 && w->k[1] > 2 && w->k[0] <= 8 && w->k[1] <= 8 && 2 * (b - a) >= 16 &&
	       a == 0 && b == w->out[1];
}

static void emit_max_vert(struct rl_cgen *cg, const char *T, const struct pool_win *w,
                          int64_t a, int64_t b)
{
	int64_t W = w->in[1], KH = w->k[0], DH = w->d[0];
	cg_line(cg, "const %s *restrict x0 = xc + (size_t)(ih0 + kh0 * %lld) * %lld;", T,
	        (long long)DH, (long long)W);
	/* the loop over v's columns: chunks of 16, or plain for a short row */
	const char *jv = W >= 16 ? "jb + t" : "t";
	if (max_r_direct(w, a, b)) {
		int64_t ja = a * 2 - w->pb[1], nr = 2 * (b - a);
		cg_line(cg, "int rdone = 0; /* r made straight from the rows */");
		cg_line(cg, "if (kh1 - kh0 == %lld) {", (long long)KH);
		cg->indent++;
		cg_line(cg, "/* r[i]: max over the kernel rows and %lld columns from %lld + i */",
		        (long long)(w->k[1] - 1), (long long)ja);
		chunk_open(cg, "ib", 0, nr);
		cg_line(cg, "for (size_t t = 0; t < 16; t++) {");
		cg_line(cg, "    const %s *xq = x0 + %lld + ib + t;", T, (long long)ja);
		cg_line(cg, "    %s m = xq[0];", T);
		for (int64_t kh = 0; kh < KH; kh++)
			for (int64_t c = 0; c < w->k[1] - 1; c++)
				if (kh || c)
					cg_line(cg, "    m = xq[%lld] > m ? xq[%lld] : m;",
					        (long long)(kh * DH * W + c), (long long)(kh * DH * W + c));
		cg_line(cg, "    r[ib + t] = m;");
		cg_line(cg, "}");
		chunk_close(cg, "ib", 0, nr);
		cg_line(cg, "rdone = 1;");
		cg->indent--;
		cg_line(cg, "} else {");
		cg->indent++;
	} else if (KH > 1 && KH <= 8) {
		cg_line(cg, "if (kh1 - kh0 == %lld) { /* every kernel row inside: one pass */",
		        (long long)KH);
		cg->indent++;
		if (W >= 16) {
			chunk_open(cg, "jb", 0, W);
			cg_line(cg, "for (size_t t = 0; t < 16; t++) {");
		} else {
			cg_line(cg, "for (size_t t = 0; t < %lld; t++) {", (long long)W);
		}
		cg_line(cg, "    %s m = x0[%s];", T, jv);
		for (int64_t kh = 1; kh < KH; kh++)
			cg_line(cg, "    m = x0[%s + %lld] > m ? x0[%s + %lld] : m;", jv,
			        (long long)(kh * DH * W), jv, (long long)(kh * DH * W));
		cg_line(cg, "    v[%s] = m;", jv);
		cg_line(cg, "}");
		if (W >= 16)
			chunk_close(cg, "jb", 0, W);
		cg->indent--;
		cg_line(cg, "} else {");
		cg->indent++;
	}
	if (W >= 16) {
		chunk_open(cg, "jb", 0, W);
		cg_line(cg, "for (size_t t = 0; t < 16; t++)");
	} else {
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "for (size_t t = 0; t < %lld; t++)", (long long)W);
	}
	cg_line(cg, "    v[%s] = x0[%s];", jv, jv);
	cg_line(cg, "for (long long kh = kh0 + 1; kh < kh1; kh++) {");
	cg_line(cg, "    const %s *restrict xr = x0 + (size_t)((kh - kh0) * %lld) * %lld;", T,
	        (long long)DH, (long long)W);
	cg_line(cg, "    for (size_t t = 0; t < %d; t++)", W >= 16 ? 16 : (int)W);
	cg_line(cg, "        v[%s] = xr[%s] > v[%s] ? xr[%s] : v[%s];", jv, jv, jv, jv, jv);
	cg_line(cg, "}");
	if (W >= 16) {
		chunk_close(cg, "jb", 0, W);
	} else {
		cg->indent--;
		cg_line(cg, "}");
	}
	if (max_r_direct(w, a, b) || (KH > 1 && KH <= 8)) {
		cg->indent--;
		cg_line(cg, "}");
	}
}

/* The interior outputs [a, b) of one row from v (and r), in chunks of 16. */
static void emit_max_horiz(struct rl_cgen *cg, const char *T, const struct pool_win *w,
                           int64_t a, int64_t b, int64_t rn)
{
	int64_t KW = w->k[1], S = w->s[1], PL = w->pb[1], n = b - a, ja = a * S - PL;
	if (n <= 0)
		return;
	bool direct = S == 2 && KW > 2 && max_r_direct(w, a, b);
	if (S == 2 && KW > 2) {
		cg_line(cg, "/* r[i]: the max of v's %lld columns from %lld + i */", (long long)(KW - 1),
		        (long long)ja);
		if (direct) {
			/* r made from the rows: 8 outputs from each 16-column chunk of r,
			 * loaded as it was stored (the 16-output chunks below load r[16..31]
			 * across the last chunk's store, moved back to end at the row's
			 * end, and wait for it to reach L1: SqueezeNet's 3x3/2 on 256 x
			 * 27x27, one thread, alone, thread CPU minimum: 45 -> 34 us) */
			int64_t nr = 2 * n;
			cg_line(cg, "if (rdone) {");
			cg->indent++;
			chunk_open(cg, "ib", 0, nr);
			cg_line(cg, "for (size_t t = 0; t < 8; t++) {");
			cg_line(cg, "    const %s e = r[ib + 2 * t], o = r[ib + 2 * t + 1];", T);
			cg_line(cg, "    yr[%lld + ib / 2 + t] = o > e ? o : e;", (long long)a);
			cg_line(cg, "}");
			chunk_close(cg, "ib", 0, nr);
			cg->indent--;
			cg_line(cg, "} else {");
			cg->indent++;
		}
		cg_line(cg, "for (size_t ib = 0; ib < %lld; ib += 16)", (long long)rn);
		cg_line(cg, "    for (size_t t = 0; t < 16; t++) {");
		cg_line(cg, "        const %s *vq = v + %lld + ib + t;", T, (long long)ja);
		cg_line(cg, "        %s m = vq[0];", T);
		for (int64_t c = 1; c < KW - 1; c++)
			cg_line(cg, "        m = vq[%lld] > m ? vq[%lld] : m;", (long long)c, (long long)c);
		cg_line(cg, "        r[ib + t] = m;");
		cg_line(cg, "    }");
	}
	cg_line(cg, "/* interior outputs [%lld, %lld), 16 at a time */", (long long)a, (long long)b);
	if (n >= 16)
		chunk_open(cg, "ob", a, b);
	else {
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "const size_t ob = %lld;", (long long)a);
	}
	cg_line(cg, "%s m[16];", T);
	if (S == 1) {
		cg_line(cg, "const %s *vq = v + ob - %lld;", T, (long long)PL);
		cg_line(cg, "for (size_t t = 0; t < 16; t++) {");
		cg_line(cg, "    %s u = vq[t];", T);
		for (int64_t c = 1; c < KW; c++)
			cg_line(cg, "    u = vq[t + %lld] > u ? vq[t + %lld] : u;", (long long)c,
			        (long long)c);
		cg_line(cg, "    m[t] = u;");
		cg_line(cg, "}");
	} else {
		if (KW > 2)
			cg_line(cg, "const %s *rq = r + 2 * (ob - %lld);", T, (long long)a);
		else
			cg_line(cg, "const %s *rq = v + 2 * ob - %lld;", T, (long long)PL);
		cg_line(cg, "for (size_t t = 0; t < 16; t++) {");
		cg_line(cg, "    const %s e = rq[2 * t], o = rq[2 * t + 1];", T);
		cg_line(cg, "    m[t] = o > e ? o : e;");
		cg_line(cg, "}");
	}
	if (n >= 16) {
		cg_line(cg, "for (size_t t = 0; t < 16; t++)");
		cg_line(cg, "    yr[ob + t] = m[t];");
		chunk_close(cg, "ob", a, b);
	} else {
		/* all 16 lanes stored where they stay inside the plane: the lanes past
		 * the row land on outputs of this row or the next ones, which this
		 * iteration writes later (a copy of n lanes through memory stalled on
		 * store forwarding: 59 -> 45 us on 256x27x27, 3x3/2) */
		int64_t OW = w->out[1], lim = w->out[0] * OW - a - 16;
		if (lim >= 0) {
			cg_line(cg, "if (oh <= %lld) {", (long long)(lim / OW));
			cg_line(cg, "    for (size_t t = 0; t < 16; t++)");
			cg_line(cg, "        yr[ob + t] = m[t];");
			cg_line(cg, "} else {");
			cg->indent++;
		}
		cg_line(cg, "for (size_t t = 0; t < %lld; t++)", (long long)n);
		cg_line(cg, "    yr[ob + t] = m[t];");
		if (lim >= 0) {
			cg->indent--;
			cg_line(cg, "}");
		}
		cg->indent--;
		cg_line(cg, "}");
	}
	if (direct) {
		cg->indent--;
		cg_line(cg, "}");
	}
}

/*
 * The flat form of AveragePool and MaxPool (float or double, one or two
 * spatial axes, any strides, dilations and pads; MaxPool pads with -inf
 * and keeps no count): per plane and band of output rows,
 *   1. the input rows the band reads are copied, zero-padded, into S0 x S1
 *      phase planes of Pq columns (padded row r and column c land in plane
 *      (r % S0, c % S1) at row r / S0, column c / S1), so every tap of output
 *      (oh, ow) reads the same plane offset from flat index j = oh * Pq + ow:
 *      a stride becomes a change of plane, never a strided load;
 *   2. the sums run over j in chunks of exactly 16 lanes (gcc -O2's "very
 *      cheap" vectorizer takes no loop with a scalar epilogue; a 28-wide row
 *      loop ran scalar, 3 ns an output on Inception's 3x3 pools), the
 *      columns past OW computed and thrown away;
 *   3. each sum is divided by its count (a literal when every output has the
 *      same, else a table made here), and the band's rows copied out.
 * The taps are added in the gather form's order (rows, then columns; from
 * 0) with the padding's zeros in between, and x + 0 = x for every x the sum
 * can hold (it starts at +0, so it is never -0): the same bits as the
 * gather form. Returns false (the row form then) when an output has no tap
 * inside, or the scratch would not fit POOL_FLAT_XP bytes for one band row,
 * or the count table would be over POOL_FLAT_TAB entries.
 */
#define POOL_FLAT_XP 32768 /* bytes of phase planes a band (L1-sized) */
#define POOL_FLAT_SB 16384 /* bytes of sums a band */
#define POOL_FLAT_PIPE 8192 /* bytes of one plane's phase planes, at most, to pipeline (two are kept) */
#define POOL_FLAT_TAB 65536 /* entries of a count table (exact in T; read once a plane, as the plane is) */

/* Taps of output o along one axis that count: inside the input, or with
 * count_include_pad inside the padded input (the gather form's rule). */
static int64_t avg_axis_count(const struct pool_win *w, int i, int64_t o, bool include_pad)
{
	int64_t c = 0;
	for (int64_t k = 0; k < w->k[i]; k++) {
		int64_t x = o * w->s[i] + k * w->d[i] - w->pb[i];
		c += include_pad ? x < w->in[i] + w->pe[i] : x >= 0 && x < w->in[i];
	}
	return c;
}

/* n elements from q on set to the padding value (memset for zeros) */
static void flat_pad(struct rl_cgen *cg, const char *q, int64_t n, const char *pad)
{
	if (strchr(pad, 'I')) /* an infinity */
		cg_line(cg, "for (size_t i = 0; i < %lld; i++) (%s)[i] = %s;", (long long)n, q, pad);
	else
		cg_line(cg, "memset(%s, 0, %lld * sizeof(*xp));", q, (long long)n);
}

/* Where tap (kh, kw) reads in xp, from output j = oh * Pq + ow's index */
int64_t cg_flat_off(const struct cg_flat *f, int64_t d0, int64_t d1, int64_t kh, int64_t kw)
{
	return (((kh * d0) % f->S0 * f->S1 + (kw * d1) % f->S1) * f->NRq + kh * d0 / f->S0) * f->Pq +
	       kw * d1 / f->S1;
}

/*
 * The scratch of the flat form: xp, the phase planes and past them what the
 * last chunk of 16 outputs reads with the farthest tap (zeroed once a
 * range), and sb, the NJr sums.
 */
void cg_flat_scratch(struct rl_cgen *cg, const char *T, const struct cg_flat *f, int64_t d0,
                     int64_t d1, int64_t KH, int64_t KW, int64_t NJr)
{
	int64_t planes = f->S0 * f->S1 * f->NRq * f->Pq, maxoff = 0;
	for (int64_t kh = 0; kh < KH; kh++)
		for (int64_t kw = 0; kw < KW; kw++) {
			int64_t off = cg_flat_off(f, d0, d1, kh, kw);
			if (off > maxoff)
				maxoff = off;
		}
	int64_t XN = planes > NJr + maxoff ? planes : NJr + maxoff;
	cg_scratch_array(cg, T, "xp", XN, 0);
	cg_scratch_array(cg, T, "sb", NJr, 0);
	if (XN > planes)
		cg_line(cg, "memset(xp + %lld, 0, %lld * sizeof(*xp)); /* read past the planes, never used */",
		        (long long)planes, (long long)(XN - planes));
}

int64_t cg_flat_buf(const struct cg_flat *f, int64_t d0, int64_t d1, int64_t KH, int64_t KW,
                    int64_t NJr)
{
	int64_t planes = f->S0 * f->S1 * f->NRq * f->Pq, maxoff = 0;
	for (int64_t kh = 0; kh < KH; kh++)
		for (int64_t kw = 0; kw < KW; kw++)
			if (cg_flat_off(f, d0, d1, kh, kw) > maxoff)
				maxoff = cg_flat_off(f, d0, d1, kh, kw);
	int64_t XN = planes > NJr + maxoff ? planes : NJr + maxoff;
	return (XN + 15) / 16 * 16;
}

int64_t cg_flat_pairs(int64_t W, int64_t PL)
{
	return (W - 2 + PL) / 2 + 1 - (PL + 1) / 2;
}

void cg_flat_pipe_open(struct rl_cgen *cg, const char *T, const struct cg_flat *f, int64_t XN,
                       int64_t NJr)
{
	cg_scratch_array(cg, T, "xpb", 2 * XN, 0);
	cg_scratch_array(cg, T, "sbb", 2 * NJr, 0);
	cg_line(cg, "memset(xpb, 0, sizeof(xpb[0]) * %lld); /* past the planes: read, never used */",
	        (long long)(2 * XN));
	cg_line(cg, "for (int64_t it = lo; it <= hi; it++) {");
	cg->indent++;
	/* the fill of plane it + 1 (of plane lo first) */
	cg_line(cg, "for (int64_t f = it == lo ? lo : it + 1; f <= it + 1 && f < hi; f++) {");
	cg->indent++;
	cg_line(cg, "const %s *restrict xc = X0 + (size_t)f * %lld;", T, (long long)(f->H * f->W));
	cg_line(cg, "const size_t ob = 0;");
	cg_line(cg, "%s *restrict xp = xpb + (size_t)(f & 1) * %lld;", T, (long long)XN);
	cg_flat_fill(cg, T, f);
	cg->indent--;
	cg_line(cg, "}");
	/* the sums of plane it */
	cg_line(cg, "if (it < hi) {");
	cg->indent++;
	cg_line(cg, "const %s *restrict xp = xpb + (size_t)(it & 1) * %lld;", T, (long long)XN);
	cg_line(cg, "%s *restrict sb = sbb + (size_t)(it & 1) * %lld;", T, (long long)NJr);
}

void cg_flat_pipe_out(struct rl_cgen *cg, const char *T, int64_t NJr, int64_t OHW)
{
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "if (it > lo) {");
	cg->indent++;
	cg_line(cg, "%s *restrict yc = Y0 + (size_t)(it - 1) * %lld;", T, (long long)OHW);
	cg_line(cg, "const %s *restrict sb = sbb + (size_t)((it - 1) & 1) * %lld;", T, (long long)NJr);
}

void cg_flat_copy_cols2(struct rl_cgen *cg, const struct cg_flat *f, int64_t OH, int64_t OW)
{
	cg_line(cg, "for (size_t r = 0; r < %lld; r++) /* columns 2 ow */", (long long)OH);
	cg_line(cg, "    for (size_t ow = 0; ow < %lld; ow++)", (long long)OW);
	cg_line(cg, "        yc[r * %lld + ow] = sb[r * %lld + 2 * ow];", (long long)OW, (long long)f->Pq);
}

void cg_flat_copy_out(struct rl_cgen *cg, const struct cg_flat *f, int64_t OB, int64_t OH,
                      int64_t OW)
{
	if (OB < OH)
		cg_line(cg, "for (size_t r = 0; r < %lld && ob + r < %lld; r++)", (long long)OB,
		        (long long)OH);
	else
		cg_line(cg, "for (size_t r = 0; r < %lld; r++)", (long long)OH);
	cg_line(cg, "    memcpy(yc + (ob + r) * %lld, sb + r * %lld, %lld * sizeof(*sb));", (long long)OW,
	        (long long)f->Pq, (long long)OW);
}

/*
 * The fill of the flat form (emit_flat here, the depthwise Conv's in
 * emit_conv.c): inside a loop whose `ob` is the band's first output row and
 * `xc` the input plane, the rows the band reads copied into `xp`'s S0 x S1
 * phase planes of NRq rows x Pq columns, padded with f->pad.
 */
void cg_flat_fill(struct rl_cgen *cg, const char *T, const struct cg_flat *f)
{
	int64_t H = f->H, W = f->W, S0 = f->S0, S1 = f->S1, PT = f->PT, PL = f->PL;
	int64_t NRq = f->NRq, Pq = f->Pq, NP = S0 * S1;
	const char *pad = f->pad;
	if (NP > 1)
		cg_line(cg, "/* the phase planes: padded row (ob + rq) * %lld + pr, column q * %lld + p */",
		        (long long)S0, (long long)S1);
	else
		cg_line(cg, "/* the padded rows */");
	cg_line(cg, "for (size_t rq = 0; rq < %lld; rq++) {", (long long)NRq);
	cg->indent++;
	for (int64_t pr = 0; pr < S0; pr++) {
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "const long long ih = (long long)((ob + rq) * %lld + %lld) - %lld;",
		        (long long)S0, (long long)pr, (long long)PT);
		for (int64_t p = 0; p < S1; p++)
			cg_line(cg, "%s *restrict q%lld = xp + %lld + rq * %lld;", T, (long long)p,
			        (long long)((pr * S1 + p) * NRq * Pq), (long long)Pq);
		cg_line(cg, "if (ih < 0 || ih >= %lld) {", (long long)H);
		cg->indent++;
		for (int64_t p = 0; p < S1; p++) {
			char q[32];
			snprintf(q, sizeof(q), "q%lld", (long long)p);
			flat_pad(cg, q, Pq, pad);
		}
		cg->indent--;
		cg_line(cg, "} else {");
		cg->indent++;
		cg_line(cg, "const %s *restrict xr = xc + (size_t)ih * %lld;", T, (long long)W);
		if (S1 == 1) {
			int64_t qa = PL < Pq ? PL : Pq, qb = PL + W < Pq ? PL + W : Pq;
			if (qa < 0)
				qa = 0;
			if (qa > 0)
				flat_pad(cg, "q0", qa, pad);
			if (qb > qa)
				cg_line(cg, "memcpy(q0 + %lld, xr + %lld, %lld * sizeof(*xp));", (long long)qa,
				        (long long)(qa - PL), (long long)(qb - qa));
			if (qb < Pq) {
				char q[40];
				snprintf(q, sizeof(q), "q0 + %lld", (long long)(qb < qa ? qa : qb));
				flat_pad(cg, q, Pq - (qb < qa ? qa : qb), pad);
			}
		} else {
			/* interior [qa, qb): every phase's column inside the row */
			int64_t qa = (PL + S1 - 1) / S1, qb = (W - S1 + PL) / S1 + 1;
			if (W - S1 + PL < 0)
				qb = 0;
			if (qb > Pq)
				qb = Pq;
			bool vec = S1 == 2 && qb - qa >= 16;
			if (vec) {
				cg_line(cg, "/* columns [%lld, %lld): both phases inside, 16 pairs at a time */",
				        (long long)qa, (long long)qb);
				chunk_open(cg, "qb", qa, qb);
				cg_line(cg, "const %s *xs = xr + 2 * qb - %lld;", T, (long long)PL);
				cg_line(cg, "for (size_t t = 0; t < 16; t++) {");
				cg_line(cg, "    const %s e = xs[2 * t], o = xs[2 * t + 1];", T);
				cg_line(cg, "    q0[qb + t] = e;");
				cg_line(cg, "    q1[qb + t] = o;");
				cg_line(cg, "}");
				chunk_close(cg, "qb", qa, qb);
			}
			cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)Pq);
			cg->indent++;
			if (vec) {
				cg_line(cg, "if (q == %lld)", (long long)qa);
				cg_line(cg, "    q = %lld; /* done above */", (long long)qb);
				cg_line(cg, "if (q >= %lld)", (long long)Pq);
				cg_line(cg, "    break;");
			}
			for (int64_t p = 0; p < S1; p++) {
				cg_line(cg, "{");
				cg_line(cg, "    const long long iw = (long long)(q * %lld + %lld) - %lld;",
				        (long long)S1, (long long)p, (long long)PL);
				cg_line(cg, "    q%lld[q] = iw >= 0 && iw < %lld ? xr[iw] : %s;", (long long)p,
				        (long long)W, pad);
				cg_line(cg, "}");
			}
			cg->indent--;
			cg_line(cg, "}");
		}
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent--;
	cg_line(cg, "}");
}


/*
 * MaxPool takes the flat form at stride 1 along the row where its rows are
 * short (at most POOL_FLAT_MAX_OW outputs): the vector form spends whole
 * 16-lane chunks on each row's few outputs there (Inception-v2's 3x3/1 on
 * 7x7: 92 -> 37 us, onnxruntime 18). Longer rows keep the vector form, which
 * reads each input row once and needs no copy, and so does stride 2, whose
 * phase split costs more than the vector form loses (its 3x3/2 from 56x56
 * and 28x28: 124 -> 138 and 61 -> 100 us in the flat form). -inf is the padding: a max
 * over it and the taps inside is the max over the taps inside, and the
 * first of equal values is kept as in the gather form (NaN aside, which
 * ONNX leaves open, as the vector form does).
 */
#define POOL_FLAT_MAX_OW 32
static bool flat_max_ok(const struct pool_win *w)
{
	return w->s[1] == 1 && w->out[1] <= POOL_FLAT_MAX_OW;
}

static bool emit_flat(struct rl_cgen *cg, const char *T, const struct pool_win *w, bool is_max,
                      bool include_pad)
{
	int64_t H = w->in[0], W = w->in[1], OH = w->out[0], OW = w->out[1];
	int64_t KH = w->k[0], KW = w->k[1], S0 = w->s[0], S1 = w->s[1], D0 = w->d[0], D1 = w->d[1];
	int64_t PT = w->pb[0], PL = w->pb[1], es = strcmp(T, "double") ? 4 : 8;
	int64_t Pq = OW + (KW - 1) * D1 / S1, NP = S0 * S1, extra = (KH - 1) * D0 / S0;
	/* stride 2 on rows too short for the fill to split columns in 16-pair
	 * chunks (a scalar split: DenseNet's 2x2/2 AveragePools from 28x28 and
	 * 14x14): rows split in phases (whole rows copied), columns reduced at
	 * stride 1 and every other one kept, where every output divides by the
	 * same count and the plane is pipelined (as the depthwise Conv's flat
	 * form, emit_conv.c). One thread, alone, thread CPU minimum, 2x2/2 on
	 * 512 x 14x14: 38 -> 33 us pipelined, -> 16 us so (onnxruntime 22) */
	/* the counts: one for all (c0), or a table (made below) */
	int64_t c0 = -1;
	bool same = true;
	for (int64_t oh = 0; oh < OH; oh++) {
		int64_t ch = avg_axis_count(w, 0, oh, include_pad && !is_max);
		for (int64_t ow = 0; ow < OW; ow++) {
			int64_t c = ch * avg_axis_count(w, 1, ow, include_pad && !is_max);
			if (c <= 0)
				return false;
			if (c0 < 0)
				c0 = c;
			same = same && c == c0;
		}
	}
	int64_t CS = 1;
	if (S1 == 2 && D1 == 1 && cg_flat_pairs(W, PL) < 16) {
		int64_t Pq2 = 2 * (OW - 1) + 1 + (KW - 1);
		if ((is_max || same) && S0 * (OH + extra) * Pq2 * es <= POOL_FLAT_PIPE) {
			S1 = 1;
			NP = S0;
			Pq = Pq2;
			CS = 2;
		}
	}
	/* the largest band that fits */
	int64_t br = OH;
	while (br > 0 && (NP * (br + extra) * Pq * es > POOL_FLAT_XP ||
	                  (br * Pq + 15) / 16 * 16 * es > POOL_FLAT_SB))
		br--;
	if (br < 1)
		return false;
	int64_t nb = (OH + br - 1) / br;
	if (CS > 1 && nb != 1)
		return false; /* only whole planes take the stride-1 columns (pipelined) */
	br = (OH + nb - 1) / nb; /* bands of even size */
	int64_t NRq = br + extra, NJr = (br * Pq + 15) / 16 * 16;
	const char *pad = is_max ? (es == 8 ? "-(double)INFINITY" : "-INFINITY") : cg_zero(T);
	struct cg_flat fl = {H, W, S0, S1, PT, PL, NRq, Pq, pad};
	/* the count table: 1 past the outputs */
	int64_t ntab = (nb - 1) * br * Pq + NJr;
	if (!is_max && !same && ntab > POOL_FLAT_TAB)
		return false;
	if (!is_max && !same) {
		rl_buf_printf(&cg->statics, "/* %s: the taps each output divides by, at oh * %lld + ow */\n",
		              cg->kname, (long long)Pq);
		rl_buf_printf(&cg->statics, "static const %s %s_cnt[%lld] = {", T, cg->kname,
		              (long long)ntab);
		for (int64_t i = 0; i < ntab; i++) {
			int64_t oh = i / Pq, ow = i % Pq, c = 1;
			if (oh < OH && ow < OW)
				c = avg_axis_count(w, 0, oh, include_pad) * avg_axis_count(w, 1, ow, include_pad);
			rl_buf_printf(&cg->statics, "%s%s%lld", i ? "," : "", i % 32 ? "" : "\n    ",
			              (long long)c);
		}
		rl_buf_printf(&cg->statics, "\n};\n");
	}

	cg_line(cg, "/* %s, flat form: per band of %lld output rows, the rows it reads copied %s-padded into %lld phase plane%s of %lld columns; %s in chunks of 16 over j = oh * %lld + %s; planes split across threads */",
	        is_max ? "MaxPool" : "AveragePool", (long long)br, is_max ? "-inf" : "zero",
	        (long long)NP, NP > 1 ? "s" : "", (long long)Pq, is_max ? "maxima" : "sums",
	        (long long)Pq, CS > 1 ? "column (stride 2 along the rows: every other column kept)" : "ow");
	/* whole planes of at most POOL_FLAT_PIPE bytes: pipelined across the
	 * range's planes, as the depthwise Conv's flat form (emit_conv.c,
	 * dw_flat_pipelined, which says why) */
	const bool pipe = nb == 1 && NP * NRq * Pq * es <= POOL_FLAT_PIPE;
	if (pipe) {
		cg_line(cg, "/* pipelined: plane it + 1 filled while plane it's %s are made and plane it - 1's copied out */",
		        is_max ? "maxima" : "sums");
		cg_flat_pipe_open(cg, T, &fl, cg_flat_buf(&fl, D0, D1, KH, KW, NJr), NJr);
		if (!is_max && !same)
			cg_line(cg, "const size_t ob = 0;");
	} else {
		cg_flat_scratch(cg, T, &fl, D0, D1, KH, KW, NJr);
		cg_line(cg, "for (size_t nc = (size_t)lo; nc < (size_t)hi; nc++) {");
		cg->indent++;
		cg_line(cg, "const %s *restrict xc = X0 + nc * %lld;", T, (long long)(H * W));
		cg_line(cg, "%s *restrict yc = Y0 + nc * %lld;", T, (long long)(OH * OW));
		cg_line(cg, "for (size_t ob = 0; ob < %lld; ob += %lld) {", (long long)OH, (long long)br);
		cg->indent++;
		cg_flat_fill(cg, T, &fl);
	}
	/* the tap offsets from j, rows then columns */
	char offs[64][24];
	int noff = 0;
	if (KH * KW <= 64)
		for (int64_t kh = 0; kh < KH; kh++)
			for (int64_t kw = 0; kw < KW; kw++)
				snprintf(offs[noff++], sizeof(offs[0]), "%lld",
				         (long long)cg_flat_off(&fl, D0, D1, kh, kw));
	char loopoff[300];
	snprintf(loopoff, sizeof(loopoff),
	         "((kh * %lld %% %lld * %lld + kw * %lld %% %lld) * %lld + kh * %lld / %lld) * %lld + kw * %lld / %lld",
	         (long long)D0, (long long)S0, (long long)S1, (long long)D1, (long long)S1,
	         (long long)NRq, (long long)D0, (long long)S0, (long long)Pq, (long long)D1,
	         (long long)S1);
	char div[160];
	if (same)
		snprintf(div, sizeof(div), "%s", cg_lit(es == 8 ? RL_DT_DOUBLE : RL_DT_FLOAT, (double)c0));
	cg_line(cg, is_max ? "/* the maxima: taps in rows-then-columns order, the first of equals kept */"
	                   : "/* the sums: taps in rows-then-columns order, from 0 */");
	/* float: whole rl_vf vectors (every clone gets full registers), the
	 * 16-lane loop under #else; double: the 16-lane loop alone */
	bool vf = es == 4;
	for (int pass = vf ? 0 : 1; pass < 2; pass++) {
		bool vec = pass == 0;
		if (vec)
			rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
		else if (vf)
			rl_buf_printf(&cg->body, "#else\n");
		cg_line(cg, "for (size_t j = 0; j < %lld; j += 16) {", (long long)NJr);
		cg->indent++;
		if (!vec) {
			cg_line(cg, "for (size_t t = 0; t < 16; t++) {");
			cg->indent++;
		}
		char first[80];
		snprintf(first, sizeof(first), vec ? "*(const rl_vfu *)(xq + %s)" : "xq[%s]",
		         noff ? offs[0] : "0");
		cg_line(cg, vec ? "const float *xq = xp + j;" : "const %s *xq = xp + j + t;", T);
		if (is_max)
			cg_line(cg, vec ? "rl_vf s = %s, v;" : "%s s = %s;", vec ? first : T, first);
		else if (vec)
			cg_line(cg, "rl_vf s = {0};");
		else
			cg_line(cg, "%s s = %s;", T, cg_zero(T));
		static const char *const vmax[] = {"v = *(const rl_vfu *)(xq + %s);",
		                                   "rl_vif(&s, RL_GT, &v, &s, &v, &s);"};
		static const char *const vsum[] = {"s += *(const rl_vfu *)(xq + %s);"};
		static const char *const smax[] = {"s = xq[%s] > s ? xq[%s] : s;"};
		static const char *const ssum[] = {"s += xq[%s];"};
		const char *const *tl = is_max ? (vec ? vmax : smax) : (vec ? vsum : ssum);
		int ntl = is_max && vec ? 2 : 1;
		if (noff) {
			for (int i = is_max ? 1 : 0; i < noff; i++)
				for (int l = 0; l < ntl; l++)
					cg_line(cg, tl[l], offs[i], offs[i]);
		} else {
			cg_line(cg, "for (size_t kh = 0; kh < %lld; kh++)", (long long)KH);
			cg_line(cg, "    for (size_t kw = 0; kw < %lld; kw++) {", (long long)KW);
			for (int l = 0; l < ntl; l++) {
				char ln[400];
				snprintf(ln, sizeof(ln), "        %s", tl[l]);
				cg_line(cg, ln, loopoff, loopoff);
			}
			cg_line(cg, "    }");
		}
		const char *to = vec ? "*(rl_vfu *)(sb + j)" : "sb[j + t]";
		if (is_max)
			cg_line(cg, "%s = s;", to);
		else if (same)
			cg_line(cg, "%s = s / %s;", to, div);
		else if (vec)
			cg_line(cg, "%s = s / *(const rl_vfu *)(%s_cnt + ob * %lld + j);", to, cg->kname,
			        (long long)Pq);
		else
			cg_line(cg, "%s = s / %s_cnt[ob * %lld + j + t];", to, cg->kname, (long long)Pq);
		if (!vec) {
			cg->indent--;
			cg_line(cg, "}");
		}
		cg->indent--;
		cg_line(cg, "}");
	}
	if (vf)
		rl_buf_printf(&cg->body, "#endif\n");
	if (pipe) { /* plane it - 1 out */
		cg_flat_pipe_out(cg, T, NJr, OH * OW);
		if (CS == 1)
			cg_line(cg, "const size_t ob = 0;");
	}
	if (CS > 1)
		cg_flat_copy_cols2(cg, &fl, OH, OW);
	else
		cg_flat_copy_out(cg, &fl, br, OH, OW);
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return true;
}

/*
 * Row form for float/double MaxPool (no Indices) and AveragePool with one or
 * two spatial axes: per output row, the rows of taps inside the input are
 * combined tap by tap into the whole output row, so the interior columns
 * (all taps inside) are plain loops the compiler vectorizes: max as
 * `v > y ? v : y`, which is what MAXPS does, so no flag is needed. The few
 * edge columns take the per-element form. Every output sees its taps in the
 * gather form's order (rows, then columns; first tap first), so the results
 * are the same bits.
 */
static enum rl_status emit_rows(struct rl_cgen *cg, uint32_t node, const struct pool_win *w0,
                                int64_t NC, bool include_pad)
{
	const struct rl_node *n = &cg->g->nodes[node];
	enum rl_dtype dt = cg_in(cg, node, 0)->dtype;
	const char *T = cg_ctype(dt);
	bool is_max = n->op == RL_OP_MaxPool;
	/* a 1-D pool is a 2-D one with a single row */
	struct pool_win w = *w0;
	if (w.nsp == 1) {
		w.in[1] = w.in[0], w.out[1] = w.out[0], w.k[1] = w.k[0], w.s[1] = w.s[0];
		w.d[1] = w.d[0], w.pb[1] = w.pb[0], w.pe[1] = w.pe[0];
		w.in[0] = w.out[0] = w.k[0] = w.s[0] = w.d[0] = 1;
		w.pb[0] = w.pe[0] = 0;
		w.nsp = 2;
	}
	int64_t H = w.in[0], W = w.in[1], OH = w.out[0], OW = w.out[1], KH = w.k[0], KW = w.k[1];
	int64_t a, b;
	pool_interior(&w, 1, &a, &b);
	pool_par(cg, NC, OH * OW * KH * KW + POOL_PLANE_TAPS, POOL_GRAIN_VEC);
	cg->simd = 1;
	if ((!is_max || flat_max_ok(&w)) && emit_flat(cg, T, &w, is_max, include_pad))
		return RL_OK;
	cg_line(cg, "/* %s, row form: the taps of each output row combined row by row into it; planes split across threads */",
	        rl_op_table[n->op].name);
	cg_line(cg, "for (size_t nc = (size_t)lo; nc < (size_t)hi; nc++) {");
	cg->indent++;
	cg_line(cg, "const %s *restrict xc = X0 + nc * %lld;", T, (long long)(H * W));
	bool vec = is_max && max_vec_ok(&w);
	if (vec) {
		int64_t vn, rn;
		max_vec_sizes(&w, a, b, &vn, &rn);
		cg_scratch_array(cg, T, "v", vn, 0);
		if (vn > W)
			cg_line(cg, "memset(v + %lld, 0, %lld * sizeof(*v)); /* padding: read, never used */",
			        (long long)W, (long long)(vn - W));
		if (rn > 0 && w.k[1] > 2) /* 2 taps: the pairs come straight from v */
			cg_scratch_array(cg, T, "r", rn, 0);
		if (max_r_direct(&w, a, b) && rn > 2 * (b - a))
			cg_line(cg, "memset(r + %lld, 0, %lld * sizeof(*r)); /* padding: read, never used */",
			        (long long)(2 * (b - a)), (long long)(rn - 2 * (b - a)));
	}
	cg_line(cg, "for (size_t oh = 0; oh < %lld; oh++) {", (long long)OH);
	cg->indent++;
	cg_line(cg, "%s *restrict yr = Y0 + (nc * %lld + oh) * %lld;", T, (long long)OH,
	        (long long)OW);
	cg_line(cg, "/* the kernel rows inside the input: [kh0, kh1) */");
	cg_line(cg, "const long long ih0 = (long long)(oh * %lld) - %lld;", (long long)w.s[0],
	        (long long)w.pb[0]);
	cg_line(cg, "long long kh0 = 0, kh1 = %lld;", (long long)KH);
	cg_line(cg, "while (kh0 < kh1 && ih0 + kh0 * %lld < 0)", (long long)w.d[0]);
	cg_line(cg, "    kh0++;");
	cg_line(cg, "while (kh1 > kh0 && ih0 + (kh1 - 1) * %lld >= %lld)", (long long)w.d[0],
	        (long long)H);
	cg_line(cg, "    kh1--;");
	if (include_pad) {
		cg_line(cg, "/* rows counted: inside the padded input, ih < %lld */", (long long)(H + w.pe[0]));
		cg_line(cg, "long long nh = 0;");
		cg_line(cg, "for (long long kh = 0; kh < %lld; kh++)", (long long)KH);
		cg_line(cg, "    nh += ih0 + kh * %lld < %lld;", (long long)w.d[0], (long long)(H + w.pe[0]));
	} else if (!is_max) {
		cg_line(cg, "const long long nh = kh1 - kh0;");
	}
	if (vec) {
		int64_t vn, rn;
		max_vec_sizes(&w, a, b, &vn, &rn);
		cg_line(cg, "if (kh0 == kh1) { /* no tap inside: 0, as the gather form */");
		cg_line(cg, "    memset(yr, 0, %lld * sizeof(%s));", (long long)OW, T);
		cg_line(cg, "    continue;");
		cg_line(cg, "}");
		cg_line(cg, "/* v: max over the kernel rows, per input column */");
		emit_max_vert(cg, T, &w, a, b);
		emit_max_horiz(cg, T, &w, a, b, rn);
		emit_max_edges(cg, T, &w, a, b);
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		return RL_OK;
	}
	if (is_max && W <= POOL_ROW_MAX) {
		emit_max_sep(cg, T, &w, a, b);
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		return RL_OK;
	}
	if (b > a) {
		cg_line(cg, "/* interior columns [%lld, %lld): every tap inside the row */", (long long)a,
		        (long long)b);
		if (!is_max) {
			cg_line(cg, "for (size_t ow = %lld; ow < %lld; ow++)", (long long)a, (long long)b);
			cg_line(cg, "    yr[ow] = 0;");
		}
		cg_line(cg, "for (long long kh = kh0; kh < kh1; kh++) {");
		cg->indent++;
		cg_line(cg, "const %s *restrict xr = xc + (size_t)(ih0 + kh * %lld) * %lld;", T,
		        (long long)w.d[0], (long long)W);
		cg_line(cg, "for (size_t kw = 0; kw < %lld; kw++) {", (long long)KW);
		cg->indent++;
		cg_line(cg, "const %s *xs = xr + kw * %lld - %lld;", T, (long long)w.d[1],
		        (long long)w.pb[1]);
		const char *ld = w.s[1] == 1 ? "xs[ow]" : NULL;
		char lb[64];
		if (!ld) {
			snprintf(lb, sizeof(lb), "xs[ow * %lld]", (long long)w.s[1]);
			ld = lb;
		}
		if (is_max) {
			cg_line(cg, "if (kh == kh0 && kw == 0)");
			cg_line(cg, "    for (size_t ow = %lld; ow < %lld; ow++)", (long long)a, (long long)b);
			cg_line(cg, "        yr[ow] = %s;", ld);
			cg_line(cg, "else");
			cg_line(cg, "    for (size_t ow = %lld; ow < %lld; ow++) {", (long long)a,
			        (long long)b);
			cg_line(cg, "        const %s v = %s;", T, ld);
			cg_line(cg, "        yr[ow] = v > yr[ow] ? v : yr[ow];");
			cg_line(cg, "    }");
		} else {
			cg_line(cg, "for (size_t ow = %lld; ow < %lld; ow++)", (long long)a, (long long)b);
			cg_line(cg, "    yr[ow] += %s;", ld);
		}
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		if (is_max) {
			cg_line(cg, "if (kh0 == kh1) /* no tap inside: 0, as the gather form */");
			cg_line(cg, "    for (size_t ow = %lld; ow < %lld; ow++)", (long long)a, (long long)b);
			cg_line(cg, "        yr[ow] = 0;");
		} else {
			cg_line(cg, "if (nh > 0) {");
			cg_line(cg, "    const %s cnt = (%s)(int)(nh * %lld);", T, T, (long long)KW);
			cg_line(cg, "    for (size_t ow = %lld; ow < %lld; ow++)", (long long)a, (long long)b);
			cg_line(cg, "        yr[ow] = yr[ow] / cnt;");
			cg_line(cg, "}");
		}
	}
	if (a > 0 || b < OW) {
		edges_open(cg, "taps checked one by one", OW, w.s[1], w.pb[1], a, b);
		if (is_max) {
			cg_line(cg, "%s m = %s;", T, cg_zero(T));
			cg_line(cg, "int any = 0;");
		} else {
			cg_line(cg, "%s s = %s;", T, cg_zero(T));
			cg_line(cg, "long long nw = 0;");
			cg_line(cg, "for (long long kw = 0; kw < %lld; kw++) {", (long long)KW);
			cg_line(cg, "    const long long iw = iw0 + kw * %lld;", (long long)w.d[1]);
			if (include_pad)
				cg_line(cg, "    nw += iw < %lld;", (long long)(W + w.pe[1]));
			else
				cg_line(cg, "    nw += iw >= 0 && iw < %lld;", (long long)W);
			cg_line(cg, "}");
		}
		cg_line(cg, "for (long long kh = kh0; kh < kh1; kh++) {");
		cg->indent++;
		cg_line(cg, "const %s *restrict xr = xc + (size_t)(ih0 + kh * %lld) * %lld;", T,
		        (long long)w.d[0], (long long)W);
		cg_line(cg, "for (long long kw = 0; kw < %lld; kw++) {", (long long)KW);
		cg->indent++;
		cg_line(cg, "const long long iw = iw0 + kw * %lld;", (long long)w.d[1]);
		cg_line(cg, "if (iw < 0 || iw >= %lld)", (long long)W);
		cg_line(cg, "    continue;");
		if (is_max) {
			cg_line(cg, "const %s v = xr[iw];", T);
			cg_line(cg, "if (!any || v > m)");
			cg_line(cg, "    m = v;");
			cg_line(cg, "any = 1;");
		} else {
			cg_line(cg, "s += xr[iw];");
		}
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		if (is_max)
			cg_line(cg, "yr[ow] = m;");
		else
			cg_line(cg, "yr[ow] = nh * nw != 0 ? s / (%s)(int)(nh * nw) : 0;", T);
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

static enum rl_status emit_global(struct rl_cgen *cg, uint32_t node);

static enum rl_status emit_window(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	const struct rl_value *I = cg_out(cg, node, 1);
	enum rl_dtype dt = X->dtype;
	bool is_max = n->op == RL_OP_MaxPool, is_avg = n->op == RL_OP_AveragePool;
	bool is_lp = n->op == RL_OP_LpPool;
	bool int_ok = is_max && (dt == RL_DT_INT8 || dt == RL_DT_UINT8);
	if ((!rl_dtype_is_float(dt) && !int_ok) || Y->dtype != dt)
		return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(dt));
	if (I && I->dtype != RL_DT_INT64)
		return cg_error(cg, node, "MaxPool Indices must be int64");
	struct pool_win w;
	const char *why = NULL;
	if (!pool_win_read(cg, node, &w, &why))
		return cg_error(cg, node, "%s", why);
	int nsp = w.nsp;
	bool include_pad = is_avg && rl_node_attr_int(n, "count_include_pad", 0) != 0;
	int64_t storage = rl_node_attr_int(n, "storage_order", 0);
	int64_t p = is_lp ? rl_node_attr_int(n, "p", 2) : 0;
	if (is_lp && p < 1)
		return cg_error(cg, node, "LpPool p=%lld is not supported", (long long)p);
	int64_t NC = X->shape.d[0].v * X->shape.d[1].v;
	int64_t is = prod(w.in, nsp), os = prod(w.out, nsp);
	if (NC * os == 0)
		return RL_OK;
	const char *acc = dt == RL_DT_DOUBLE ? "double" : cg_comptype(dt);
	const char *fs = dt == RL_DT_DOUBLE ? "" : "f"; /* math suffix */
	char e[1024], e2[1024], xe[1100];

	/* one window over each whole plane (ResNet's final 7x7 AveragePool on
	 * 7x7): the global kernel, a vectorized sum, instead of the row form's
	 * per-element edge loops (rows shorter than a vector) */
	bool whole = is_avg;
	for (int i = 0; i < nsp && whole; i++)
		whole = w.out[i] == 1 && w.k[i] == w.in[i] && w.d[i] == 1 && w.pb[i] == 0 &&
		        w.pe[i] == 0;
	if (whole)
		return emit_global(cg, node);
	if (!I && !is_lp && (dt == RL_DT_FLOAT || dt == RL_DT_DOUBLE) && nsp <= 2)
		return emit_rows(cg, node, &w, NC, include_pad);
	cg_line(cg, "/* %s: gather over the kernel taps inside the input%s */",
	        rl_op_table[n->op].name,
	        include_pad ? "; divide by the taps inside the padded input" : "");
	pool_par(cg, NC, os * prod(w.k, nsp), POOL_GRAIN);
	cg_line(cg, "for (size_t nc = (size_t)lo; nc < (size_t)hi; nc++) {");
	cg->indent++;
	cg_line(cg, "const %s *restrict xc = X0 + nc * %lld;", cg_ctype(dt), (long long)is);
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t o%d = 0; o%d < %lld; o%d++) {", i, i, (long long)w.out[i], i);
		cg->indent++;
	}
	if (is_max) {
		cg_line(cg, "%s m = %s;", acc, lowest(dt));
		cg_line(cg, "long long at = -1;");
	} else {
		cg_line(cg, "%s s = %s;", acc, cg_zero(acc));
		cg_line(cg, "int cnt = 0;");
	}
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t k%d = 0; k%d < %lld; k%d++) {", i, i, (long long)w.k[i], i);
		cg->indent++;
		cg_line(cg, "const long long x%d = (long long)(o%d * %lld + k%d * %lld) - %lld;", i, i,
		        (long long)w.s[i], i, (long long)w.d[i], (long long)w.pb[i]);
		if (include_pad) {
			cg_line(cg, "if (x%d >= %lld)", i, (long long)(w.in[i] + w.pe[i]));
			cg_line(cg, "    continue;");
		} else {
			cg_line(cg, "if (x%d < 0 || x%d >= %lld)", i, i, (long long)w.in[i]);
			cg_line(cg, "    continue;");
		}
	}
	if (include_pad) {
		/* counted as a tap even when it reads padding */
		cg_line(cg, "cnt++;");
		e[0] = 0;
		size_t q = 0;
		for (int i = 0; i < nsp; i++)
			q += (size_t)snprintf(e + q, sizeof(e) - q, "%sx%d < 0 || x%d >= %lld",
			                      i ? " || " : "", i, i, (long long)w.in[i]);
		cg_line(cg, "if (%s)", e);
		cg_line(cg, "    continue;");
	}
	flat_expr(e, sizeof(e), "x", nsp, w.in, false);
	snprintf(xe, sizeof(xe), "xc[%s]", e);
	cg_line(cg, "const %s v = %s;", acc, cg_load(cg, dt, xe));
	if (is_max) {
		flat_expr(e2, sizeof(e2), "x", nsp, w.in, storage != 0);
		cg_line(cg, "if (at < 0 || v > m) {");
		cg_line(cg, "    m = v;");
		cg_line(cg, "    at = (long long)(%s);", e2);
		cg_line(cg, "}");
	} else if (is_lp) {
		if (p == 1)
			cg_line(cg, "s += fabs%s(v);", fs);
		else if (p == 2)
			cg_line(cg, "s += v * v;");
		else
			cg_line(cg, "s += pow%s(fabs%s(v), %s);", fs, fs, cg_lit(dt == RL_DT_DOUBLE ?
			        RL_DT_DOUBLE : RL_DT_FLOAT, (double)p));
	} else {
		cg_line(cg, "s += v;");
		if (!include_pad)
			cg_line(cg, "cnt++;");
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	flat_expr(e, sizeof(e), "o", nsp, w.out, false);
	cg_line(cg, "const size_t oi = nc * %lld + %s;", (long long)os, e);
	if (is_max) {
		cg_line(cg, "Y0[oi] = %s;", cg_assign(cg, dt, "at < 0 ? 0 : m"));
		if (I)
			cg_line(cg, "Y1[oi] = at < 0 ? -1 : (int64_t)(nc * %lld) + at;", (long long)is);
	} else if (is_lp) {
		cg_line(cg, "(void)cnt;");
		if (p == 1)
			cg_line(cg, "Y0[oi] = %s;", cg_assign(cg, dt, "s"));
		else if (p == 2)
			cg_line(cg, "Y0[oi] = %s;", cg_assign(cg, dt, dt == RL_DT_DOUBLE ? "sqrt(s)" : "sqrtf(s)"));
		else {
			char r[200];
			snprintf(r, sizeof(r), "pow%s(s, %s)", fs,
			         cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT, 1.0 / (double)p));
			cg_line(cg, "Y0[oi] = %s;", cg_assign(cg, dt, r));
		}
	} else {
		cg_line(cg, "Y0[oi] = %s;", cg_assign(cg, dt, "cnt ? s / cnt : 0"));
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

static enum rl_status emit_global(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	enum rl_dtype dt = X->dtype;
	bool is_max = n->op == RL_OP_GlobalMaxPool;
	if (!rl_dtype_is_float(dt) || Y->dtype != dt || X->shape.rank < 3)
		return cg_error(cg, node, "%s on %s of rank %d is not supported",
		                rl_op_table[n->op].name, rl_dtype_name(dt), X->shape.rank);
	int64_t NC = X->shape.d[0].v * X->shape.d[1].v;
	int64_t is = rl_shape_numel(&X->shape) / (NC ? NC : 1);
	const char *acc = dt == RL_DT_DOUBLE ? "double" : "float";
	if (NC == 0)
		return RL_OK;
	pool_par(cg, NC, is, POOL_GRAIN_VEC);
	cg->simd = 1;
	cg_line(cg, "/* %s over each %lld-element plane, planes split across threads */",
	        rl_op_table[n->op].name, (long long)is);
	cg_line(cg, "for (size_t nc = (size_t)lo; nc < (size_t)hi; nc++) {");
	cg->indent++;
	cg_line(cg, "const %s *restrict xc = X0 + nc * %lld;", cg_ctype(dt), (long long)is);
	if (is_max) {
		cg_line(cg, "%s m = %s;", acc, lowest(dt));
		cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)is);
		cg_line(cg, "    const %s v = %s;", acc, cg_load(cg, dt, "xc[q]"));
		cg_line(cg, "    m = q == 0 || v > m ? v : m;");
		cg_line(cg, "}");
		cg_line(cg, "Y0[nc] = %s;", cg_assign(cg, dt, "m"));
	} else {
		int64_t q8 = is / 8 * 8;
		char r[100];
		if (q8 >= 16) {
			/* eight interleaved partial sums (a fixed order: the same result
			 * on every machine and thread count) so that -O2 vectorizes */
			cg_line(cg, "%s p[8] = {0, 0, 0, 0, 0, 0, 0, 0};", acc);
			cg_line(cg, "for (size_t q = 0; q < %lld; q += 8)", (long long)q8);
			cg_line(cg, "    for (size_t j = 0; j < 8; j++)");
			cg_line(cg, "        p[j] += %s;", cg_load(cg, dt, "xc[q + j]"));
			cg_line(cg, "%s s = ((p[0] + p[4]) + (p[2] + p[6])) + ((p[1] + p[5]) + (p[3] + p[7]));",
			        acc);
		} else {
			q8 = 0;
			cg_line(cg, "%s s = %s;", acc, cg_zero(acc));
		}
		if (is > q8) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)q8, (long long)is);
			cg_line(cg, "    s += %s;", cg_load(cg, dt, "xc[q]"));
		}
		snprintf(r, sizeof(r), "s / %s", cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT,
		                                        (double)(is ? is : 1)));
		cg_line(cg, "Y0[nc] = %s;", cg_assign(cg, dt, r));
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

enum rl_status rl_emit_c_pool(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_MaxPool: case RL_OP_AveragePool: case RL_OP_LpPool:
		return emit_window(cg, node);
	case RL_OP_GlobalAveragePool: case RL_OP_GlobalMaxPool:
		return emit_global(cg, node);
	default:
		return cg_error(cg, node, "not a pooling operator");
	}
}
