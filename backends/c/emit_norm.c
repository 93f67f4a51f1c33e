/*
 * emit_norm.c - C kernels for the norm family: BatchNormalization,
 * LayerNormalization, InstanceNormalization, LRN, Softmax, LogSoftmax,
 * Hardmax and MeanVarianceNormalization.
 *
 * All of them work on floats only (float16 and bfloat16 computed in float,
 * float64 in double). The normalizations fold their per-channel algebra into
 * one multiply-add per element, y = x * a + b, with a and b computed once per
 * channel (inference BatchNormalization) or once per normalized row (the
 * statistics-based ones: two passes for mean and variance, then the apply).
 *
 * Softmax-like ops see the input as [outer, D, inner] and normalize along D.
 * Before opset 13 the input is coerced to 2-D at `axis` (inner = 1, D = the
 * product of the trailing dims); from 13 the op runs along one axis. With
 * inner = 1 every row is contiguous and the kernel uses scalars; otherwise it
 * walks tiles of up to RL_NORM_TILE neighbouring rows at once, with one
 * running max and sum per lane, so every inner loop is contiguous. The max is
 * subtracted before exp, as numerically stable softmax requires.
 *
 * Float32 Softmax/LogSoftmax over contiguous rows and float32 LayerNorm
 * with a full Scale are vectorized (softmax_vec, layernorm_vec): rows across
 * threads, each row in one thread, rl_vexp for the exponentials.
 *
 * BatchNormalization in training mode (opset >= 14, training_mode=1) uses
 * the batch's own mean and (population) variance, as the ONNX reference
 * does, and writes the running mean and variance when they are requested.
 * Before opset 14 only the inference form (a single output) is emitted.
 */
#include "emit_impl.h"
#include "cost.h"

#include <string.h>

#define RL_NORM_TILE 256 /* lanes of a tiled softmax */
#define RL_NORM_MIN_PAR (1 << 15) /* elements per thread at least */
_Static_assert(RL_NORM_MIN_PAR == RL_COST_PAR_MIN_ELEMS, "ir/cost.h prices the split made here");
#define VW 16 /* RL_VW, floats per vector in the generated code */

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

static const char *mfn(const char *ct, const char *f)
{
	static char b[8][16];
	static int k;
	k = (k + 1) % 8;
	snprintf(b[k], sizeof(b[k]), "%s%s", f, strcmp(ct, "float") == 0 ? "f" : "");
	return b[k];
}

/* compute-type literal */
static const char *lit(const char *ct, double x)
{
	return cg_lit(strcmp(ct, "double") == 0 ? RL_DT_DOUBLE : RL_DT_FLOAT, x);
}

/* load of element `e` of input k as compute type (a copy, safe to keep) */
static const char *ld(struct rl_cgen *cg, enum rl_dtype dt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static const char *ld(struct rl_cgen *cg, enum rl_dtype dt, const char *fmt, ...)
{
	static char b[8][256];
	static int k;
	char e[192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e, sizeof(e), fmt, ap);
	va_end(ap);
	k = (k + 1) % 8;
	snprintf(b[k], sizeof(b[k]), "%s", cg_load(cg, dt, e));
	return b[k];
}

static enum rl_status need_float(struct rl_cgen *cg, uint32_t node, const struct rl_value *v)
{
	if (!rl_dtype_is_float(v->dtype))
		return cg_error(cg, node, "%s needs a float input, not %s",
		                rl_op_table[cg->g->nodes[node].op].name, rl_dtype_name(v->dtype));
	return RL_OK;
}

/* Batch, channels and the spatial size of an (N, C, ...) tensor; false when
 * the rank is below 2. */
static bool nchw_split(const struct rl_shape *s, int64_t *N, int64_t *C, int64_t *S)
{
	if (s->rank < 2)
		return false;
	*N = s->d[0].v;
	*C = s->d[1].v;
	*S = 1;
	for (int d = 2; d < s->rank; d++)
		*S *= s->d[d].v;
	return true;
}

/* ---- BatchNormalization -------------------------------------------------- */

static enum rl_status emit_batchnorm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype dt = x->dtype;
	const char *ct = cg_comptype(dt);
	int64_t N, C, S;
	if (!nchw_split(&x->shape, &N, &C, &S))
		return cg_error(cg, node, "input must have rank >= 2 (N, C, ...)");
	for (int k = 1; k < 5; k++) {
		const struct rl_value *p = cg_in(cg, node, k);
		if (!p)
			return cg_error(cg, node, "input %d is missing", k);
		if (numel(p) != C)
			return cg_error(cg, node, "input %d has %lld elements, expected one per channel "
			                "(%lld)%s", k, (long long)numel(p), (long long)C,
			                n->opset < 9 ? " (spatial=0 is not supported)" : "");
		if (!rl_dtype_is_float(p->dtype))
			return cg_error(cg, node, "input %d must be float", k);
	}
	bool train = n->opset >= 14 && rl_node_attr_int(n, "training_mode", 0);
	const struct rl_value *rm = NULL, *rv = NULL;
	if (train) {
		rm = cg_out(cg, node, 1);
		rv = cg_out(cg, node, 2);
	} else {
		for (int k = 1; k < n->nout; k++)
			if (cg_out(cg, node, k))
				return cg_error(cg, node, "training outputs (output %d) are only supported "
				                "with training_mode=1 from opset 14", k);
	}
	double eps = rl_node_attr_float(n, "epsilon", 1e-5);
	double mom = rl_node_attr_float(n, "momentum", 0.9);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	enum rl_dtype sdt = cg_in(cg, node, 1)->dtype, bdt = cg_in(cg, node, 2)->dtype;
	enum rl_dtype mdt = cg_in(cg, node, 3)->dtype, vdt = cg_in(cg, node, 4)->dtype;
	cg_line(cg, "/* y = (x - mean) / sqrt(var + eps) * scale + B, folded per channel into "
	        "y = x * a + b%s */", train ? "; mean and var from the batch" : "");
	cg_line(cg, "for (size_t c = 0; c < %lld; c++) {", (long long)C);
	cg->indent++;
	const char *mean = NULL, *var = NULL;
	if (train) {
		int64_t cnt = N * S;
		cg_line(cg, "double sum = 0.0, sq = 0.0;");
		cg_line(cg, "for (size_t n = 0; n < %lld; n++)", (long long)N);
		cg_line(cg, "    for (size_t s = 0; s < %lld; s++)", (long long)S);
		cg_line(cg, "        sum += (double)%s;", ld(cg, dt, "X0[(n * %lld + c) * %lld + s]",
		                                          (long long)C, (long long)S));
		cg_line(cg, "const double mu = sum / %lld.0;", (long long)cnt);
		cg_line(cg, "for (size_t n = 0; n < %lld; n++)", (long long)N);
		cg_line(cg, "    for (size_t s = 0; s < %lld; s++) {", (long long)S);
		cg_line(cg, "        const double d = (double)%s - mu;",
		        ld(cg, dt, "X0[(n * %lld + c) * %lld + s]", (long long)C, (long long)S));
		cg_line(cg, "        sq += d * d;");
		cg_line(cg, "    }");
		cg_line(cg, "const double va = sq / %lld.0;", (long long)cnt);
		mean = "mu";
		var = "va";
	}
	/* a and b of the channel */
	if (train) {
		cg_line(cg, "const %s a = (%s)(%s / sqrt(%s + %s));", ct, ct, ld(cg, sdt, "X1[c]"), var,
		        cg_lit(RL_DT_DOUBLE, eps));
		cg_line(cg, "const %s b = (%s)(%s - %s * (double)a);", ct, ct, ld(cg, bdt, "X2[c]"),
		        mean);
	} else {
		cg_line(cg, "const %s a = %s / %s(%s + %s);", ct, ld(cg, sdt, "X1[c]"), mfn(ct, "sqrt"),
		        ld(cg, vdt, "X4[c]"), lit(ct, eps));
		cg_line(cg, "const %s b = %s - %s * a;", ct, ld(cg, bdt, "X2[c]"), ld(cg, mdt, "X3[c]"));
	}
	bool nl = N > 1;
	if (nl) {
		cg_line(cg, "for (size_t n = 0; n < %lld; n++) {", (long long)N);
		cg->indent++;
		cg_line(cg, "const size_t base = (n * %lld + c) * %lld;", (long long)C, (long long)S);
	} else {
		cg_line(cg, "const size_t base = c * %lld;", (long long)S);
	}
	char e[128];
	snprintf(e, sizeof(e), "%s * a + b", ld(cg, dt, "X0[base + s]"));
	cg_line(cg, "for (size_t s = 0; s < %lld; s++)", (long long)S);
	cg_line(cg, "    Y0[base + s] = %s;", cg_assign(cg, y->dtype, e));
	if (nl) {
		cg->indent--;
		cg_line(cg, "}");
	}
	if (train) {
		char b[256];
		if (rm) {
			snprintf(b, sizeof(b), "%s * %s + mu * %s", ld(cg, mdt, "X3[c]"),
			         cg_lit(RL_DT_DOUBLE, mom), cg_lit(RL_DT_DOUBLE, 1.0 - mom));
			cg_line(cg, "Y1[c] = %s; /* running mean */", cg_assign(cg, rm->dtype, b));
		}
		if (rv) {
			snprintf(b, sizeof(b), "%s * %s + va * %s", ld(cg, vdt, "X4[c]"),
			         cg_lit(RL_DT_DOUBLE, mom), cg_lit(RL_DT_DOUBLE, 1.0 - mom));
			cg_line(cg, "Y2[c] = %s; /* running variance */", cg_assign(cg, rv->dtype, b));
		}
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- LayerNormalization and InstanceNormalization ------------------------- */

/* Mean and inverse std of the D elements at X0[base ...]: defines mean, inv. */
static void emit_row_stats(struct rl_cgen *cg, enum rl_dtype dt, const char *ct, int64_t D,
                           double eps)
{
	cg_line(cg, "%s sum = %s;", ct, cg_zero(ct));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)D);
	cg_line(cg, "    sum += %s;", ld(cg, dt, "X0[base + i]"));
	cg_line(cg, "const %s mean = sum / %s;", ct, lit(ct, (double)D));
	cg_line(cg, "%s sq = %s;", ct, cg_zero(ct));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)D);
	cg_line(cg, "    const %s d = %s - mean;", ct, ld(cg, dt, "X0[base + i]"));
	cg_line(cg, "    sq += d * d;");
	cg_line(cg, "}");
	cg_line(cg, "const %s inv = %s / %s(sq / %s + %s);", ct, lit(ct, 1.0), mfn(ct, "sqrt"),
	        lit(ct, (double)D), lit(ct, eps));
}

/*
 * Float32 LayerNormalization over contiguous rows of D >= RL_VW with a full
 * Scale (and B) of D elements: rows split across threads (each row in one
 * thread); per row a vector pass for the sum, one for the squared
 * deviations (two-pass variance, as the scalar code), and the apply
 * y = (x - mean) * inv * Scale + B. Sums run lane-wise over whole vectors
 * in eight interleaved half-vector accumulators (rl_vh, 8 floats: half
 * vector i to accumulator i mod 8 in runs of eight, the rest to the first
 * two), combined pairwise, then across the lanes, the short tail in order
 * after them. The
 * scalar code under #else is the original loop.
 */
static void layernorm_vec(struct rl_cgen *cg, int64_t R, int64_t D, double eps, bool bias,
                          bool ym, bool yi)
{
	const int64_t nv = D / VW * VW;
	cg_vmath_need(cg, RL_VM_BASE);
	cg->simd = 1;
	cg_rows_open(cg, "r", R, D, RL_NORM_MIN_PAR);
	cg_line(cg, "const float *x = X0 + r * %lld;", (long long)D);
	cg_line(cg, "float *y = Y0 + r * %lld;", (long long)D);
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	/* eight half-vector accumulators (rl_vh: a 16-float one stays in memory
	 * in the AVX2 clone, see emit_rt.c); one would chain every add behind
	 * the last (3-4 cycles each), running a row's sum at a fraction of the
	 * add rate */
	cg_line(cg, "rl_vh h0 = {0}, h1 = {0}, h2 = {0}, h3 = {0}, h4 = {0}, h5 = {0}, h6 = {0}, "
	        "h7 = {0};");
	cg_line(cg, "size_t i = 0;");
	cg_line(cg, "for (; i + 8 * RL_VH <= %lld; i += 8 * RL_VH) {", (long long)nv);
	for (int k = 0; k < 8; k++)
		cg_line(cg, "    h%d += *(const rl_vhu *)(x + i%s);", k, cg_vh_off(k));
	cg_line(cg, "}");
	cg_line(cg, "for (; i < %lld; i += 2 * RL_VH) {", (long long)nv);
	cg_line(cg, "    h0 += *(const rl_vhu *)(x + i);");
	cg_line(cg, "    h1 += *(const rl_vhu *)(x + i + RL_VH);");
	cg_line(cg, "}");
	cg_line(cg, "h0 = ((h0 + h1) + (h2 + h3)) + ((h4 + h5) + (h6 + h7));");
	cg_line(cg, "float sum = 0.0f;");
	cg_line(cg, "for (int l = 0; l < RL_VH; l++)");
	cg_line(cg, "    sum += h0[l];");
	if (nv < D) {
		cg_line(cg, "for (size_t i = %lld; i < %lld; i++)", (long long)nv, (long long)D);
		cg_line(cg, "    sum += x[i];");
	}
	cg_line(cg, "const float mean = sum / %s;", cg_lit(RL_DT_FLOAT, (double)D));
	cg_line(cg, "h0 = h1 = h2 = h3 = h4 = h5 = h6 = h7 = (rl_vh){0};");
	cg_line(cg, "for (i = 0; i + 8 * RL_VH <= %lld; i += 8 * RL_VH) {", (long long)nv);
	for (int k = 0; k < 8; k++)
		cg_line(cg, "    const rl_vh d%d = *(const rl_vhu *)(x + i%s) - mean;", k, cg_vh_off(k));
	for (int k = 0; k < 8; k++)
		cg_line(cg, "    h%d += d%d * d%d;", k, k, k);
	cg_line(cg, "}");
	cg_line(cg, "for (; i < %lld; i += 2 * RL_VH) {", (long long)nv);
	cg_line(cg, "    const rl_vh d0 = *(const rl_vhu *)(x + i) - mean;");
	cg_line(cg, "    const rl_vh d1 = *(const rl_vhu *)(x + i + RL_VH) - mean;");
	cg_line(cg, "    h0 += d0 * d0;");
	cg_line(cg, "    h1 += d1 * d1;");
	cg_line(cg, "}");
	cg_line(cg, "h0 = ((h0 + h1) + (h2 + h3)) + ((h4 + h5) + (h6 + h7));");
	cg_line(cg, "float sq = 0.0f;");
	cg_line(cg, "for (int l = 0; l < RL_VH; l++)");
	cg_line(cg, "    sq += h0[l];");
	if (nv < D) {
		cg_line(cg, "for (size_t i = %lld; i < %lld; i++)", (long long)nv, (long long)D);
		cg_line(cg, "    sq += (x[i] - mean) * (x[i] - mean);");
	}
	cg_line(cg, "const float inv = 1.0f / sqrtf(sq / %s + %s);", cg_lit(RL_DT_FLOAT, (double)D),
	        cg_lit(RL_DT_FLOAT, eps));
	{
		char nvs[32], ex[200];
		snprintf(nvs, sizeof(nvs), "%lld", (long long)nv);
		snprintf(ex, sizeof(ex), "(*(const rl_vfu *)(x + i) - mean) * inv * *(const rl_vfu *)(X1 + i)%s",
		         bias ? " + *(const rl_vfu *)(X2 + i)" : "");
		cg_row_pass(cg, "y", ex, nvs);
	}
	if (nv < D) {
		cg_line(cg, "for (size_t i = %lld; i < %lld; i++)", (long long)nv, (long long)D);
		cg_line(cg, "    y[i] = (x[i] - mean) * inv * X1[i]%s;", bias ? " + X2[i]" : "");
	}
	rl_buf_printf(&cg->body, "#else\n");
	cg_line(cg, "float sum = 0.0f;");
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)D);
	cg_line(cg, "    sum += x[i];");
	cg_line(cg, "const float mean = sum / %s;", cg_lit(RL_DT_FLOAT, (double)D));
	cg_line(cg, "float sq = 0.0f;");
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)D);
	cg_line(cg, "    sq += (x[i] - mean) * (x[i] - mean);");
	cg_line(cg, "const float inv = 1.0f / sqrtf(sq / %s + %s);", cg_lit(RL_DT_FLOAT, (double)D),
	        cg_lit(RL_DT_FLOAT, eps));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)D);
	cg_line(cg, "    y[i] = (x[i] - mean) * inv * X1[i]%s;", bias ? " + X2[i]" : "");
	rl_buf_printf(&cg->body, "#endif\n");
	if (ym)
		cg_line(cg, "Y1[r] = mean;");
	if (yi)
		cg_line(cg, "Y2[r] = inv;");
	cg->indent--;
	cg_line(cg, "}");
}

static enum rl_status emit_layernorm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	const struct rl_value *sc = cg_in(cg, node, 1), *bi = cg_in(cg, node, 2);
	enum rl_dtype dt = x->dtype;
	int r = x->shape.rank;
	int64_t axis = rl_node_attr_int(n, "axis", -1);
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r)
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(n, "axis", -1), r);
	if (!sc)
		return cg_error(cg, node, "Scale is missing");
	const char *ct = dt == RL_DT_DOUBLE || rl_node_attr_int(n, "stash_type", 1) == 11
	                         ? "double" : "float";
	double eps = rl_node_attr_float(n, "epsilon", 1e-5);
	int64_t R = 1, D = 1;
	struct rl_shape ns = {.rank = r - (int)axis};
	for (int d = 0; d < r; d++) {
		if (d < axis)
			R *= x->shape.d[d].v;
		else {
			D *= x->shape.d[d].v;
			ns.d[d - axis] = x->shape.d[d];
		}
	}
	if (sc->shape.rank > ns.rank || (bi && bi->shape.rank > ns.rank))
		return cg_error(cg, node, "Scale and B must broadcast to the normalized shape");
	struct rl_shape chk;
	if (!rl_shape_broadcast(&ns, &sc->shape, &chk) || !rl_shape_equal(&chk, &ns) ||
	    (bi && (!rl_shape_broadcast(&ns, &bi->shape, &chk) || !rl_shape_equal(&chk, &ns))))
		return cg_error(cg, node, "Scale and B must broadcast to the normalized shape");
	const struct rl_value *ym = cg_out(cg, node, 1), *yi = cg_out(cg, node, 2);
	if (numel(y) == 0 || D == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* %lld rows of %lld: y = (x - mean) / sqrt(var + eps) * Scale + B */",
	        (long long)R, (long long)D);
	if (dt == RL_DT_FLOAT && y->dtype == RL_DT_FLOAT && strcmp(ct, "float") == 0 && D >= VW &&
	    numel(sc) == D && sc->dtype == RL_DT_FLOAT && (!bi || (numel(bi) == D &&
	    bi->dtype == RL_DT_FLOAT)) && (!ym || ym->dtype == RL_DT_FLOAT) &&
	    (!yi || yi->dtype == RL_DT_FLOAT)) {
		layernorm_vec(cg, R, D, eps, bi != NULL, ym != NULL, yi != NULL);
		return RL_OK;
	}
	cg_line(cg, "for (size_t r = 0; r < %lld; r++) {", (long long)R);
	cg->indent++;
	cg_line(cg, "const size_t base = r * %lld;", (long long)D);
	emit_row_stats(cg, dt, ct, D, eps);
	if (ym)
		cg_line(cg, "Y1[r] = %s;", cg_assign(cg, ym->dtype, "mean"));
	if (yi)
		cg_line(cg, "Y2[r] = %s;", cg_assign(cg, yi->dtype, "inv"));
	const struct rl_shape *ins[3] = {&ns, &sc->shape, bi ? &bi->shape : NULL};
	int depth = cg_bcast_open(cg, &ns, bi ? 3 : 2, ins);
	char e[512];
	snprintf(e, sizeof(e), "(%s - mean) * inv * %s%s%s", ld(cg, dt, "X0[base + o]"),
	         ld(cg, sc->dtype, "X1[i1]"), bi ? " + " : "", bi ? ld(cg, bi->dtype, "X2[i2]") : "");
	cg_line(cg, "Y0[base + o] = %s;", cg_assign(cg, y->dtype, e));
	cg_loops_close(cg, depth);
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

static enum rl_status emit_instancenorm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype dt = x->dtype;
	const char *ct = cg_comptype(dt);
	int64_t N, C, S;
	if (!nchw_split(&x->shape, &N, &C, &S))
		return cg_error(cg, node, "input must have rank >= 2 (N, C, ...)");
	for (int k = 1; k < 3; k++)
		if (!cg_in(cg, node, k) || numel(cg_in(cg, node, k)) != C)
			return cg_error(cg, node, "input %d must have one element per channel", k);
	double eps = rl_node_attr_float(n, "epsilon", 1e-5);
	if (numel(y) == 0 || S == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* per (n, c): y = (x - mean) / sqrt(var + eps) * scale[c] + B[c] */");
	cg_line(cg, "for (size_t n = 0; n < %lld; n++) {", (long long)N);
	cg_line(cg, "    for (size_t c = 0; c < %lld; c++) {", (long long)C);
	cg->indent += 2;
	cg_line(cg, "const size_t base = (n * %lld + c) * %lld;", (long long)C, (long long)S);
	emit_row_stats(cg, dt, ct, S, eps);
	cg_line(cg, "const %s a = inv * %s;", ct, ld(cg, cg_in(cg, node, 1)->dtype, "X1[c]"));
	cg_line(cg, "const %s b = %s - mean * a;", ct, ld(cg, cg_in(cg, node, 2)->dtype, "X2[c]"));
	char e[256];
	snprintf(e, sizeof(e), "%s * a + b", ld(cg, dt, "X0[base + i]"));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)S);
	cg_line(cg, "    Y0[base + i] = %s;", cg_assign(cg, y->dtype, e));
	cg->indent -= 2;
	cg_line(cg, "    }");
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- LRN ----------------------------------------------------------------- */

static enum rl_status emit_lrn(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype dt = x->dtype;
	const char *ct = cg_comptype(dt);
	int64_t N, C, S;
	if (!nchw_split(&x->shape, &N, &C, &S))
		return cg_error(cg, node, "input must have rank >= 2 (N, C, ...)");
	int64_t size = rl_node_attr_int(n, "size", 0);
	if (size <= 0)
		return cg_error(cg, node, "LRN needs a positive 'size'");
	double alpha = rl_node_attr_float(n, "alpha", 1e-4);
	double beta = rl_node_attr_float(n, "beta", 0.75);
	double bias = rl_node_attr_float(n, "bias", 1.0);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	int64_t before = (size - 1) / 2, after = size / 2; /* floor and ceil of (size-1)/2 */
	int64_t tile = S < RL_NORM_TILE ? S : RL_NORM_TILE;
	bool tiled = S > tile;
	cg_line(cg, "/* y = x / (bias + alpha/size * sum of x^2 over channels [c-%lld, c+%lld])"
	        "^beta */", (long long)before, (long long)after);
	cg_line(cg, "for (size_t n = 0; n < %lld; n++) {", (long long)N);
	cg_line(cg, "    for (size_t c = 0; c < %lld; c++) {", (long long)C);
	cg->indent += 2;
	cg_line(cg, "const size_t lo = c < %lld ? 0 : c - %lld;", (long long)before,
	        (long long)before);
	cg_line(cg, "const size_t hi = c + %lld < %lld ? c + %lld : %lld;", (long long)after,
	        (long long)C, (long long)after, (long long)(C - 1));
	const char *w = "w", *cs = " + s0";
	char wl[32];
	if (tiled) {
		cg_line(cg, "for (size_t s0 = 0; s0 < %lld; s0 += %lld) {", (long long)S,
		        (long long)tile);
		cg->indent++;
		cg_line(cg, "const size_t w = %lld - s0 < %lld ? %lld - s0 : %lld;", (long long)S,
		        (long long)tile, (long long)S, (long long)tile);
	} else {
		snprintf(wl, sizeof(wl), "%lld", (long long)S);
		w = wl;
		cs = "";
	}
	cg_scratch_array(cg, ct, "acc", tile, 0);
	cg_line(cg, "for (size_t t = 0; t < %s; t++) acc[t] = %s;", w, cg_zero(ct));
	cg_line(cg, "for (size_t i = lo; i <= hi; i++) {");
	cg_line(cg, "    const size_t src = (n * %lld + i) * %lld%s;", (long long)C, (long long)S, cs);
	cg_line(cg, "    for (size_t t = 0; t < %s; t++) {", w);
	cg_line(cg, "        const %s v = %s;", ct, ld(cg, dt, "X0[src + t]"));
	cg_line(cg, "        acc[t] += v * v;");
	cg_line(cg, "    }");
	cg_line(cg, "}");
	cg_line(cg, "const size_t dst = (n * %lld + c) * %lld%s;", (long long)C, (long long)S, cs);
	char e[256];
	snprintf(e, sizeof(e), "%s / %s(%s + %s * acc[t], %s)", ld(cg, dt, "X0[dst + t]"),
	         mfn(ct, "pow"), lit(ct, bias), lit(ct, alpha / (double)size), lit(ct, beta));
	cg_line(cg, "for (size_t t = 0; t < %s; t++)", w);
	cg_line(cg, "    Y0[dst + t] = %s;", cg_assign(cg, y->dtype, e));
	if (tiled) {
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent -= 2;
	cg_line(cg, "    }");
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- Softmax, LogSoftmax, Hardmax ----------------------------------------- */

/*
 * The exp-and-sum and scaling passes of a softmax row, on 16-float rl_vf
 * where the CPU has AVX-512 and on 8-float rl_wf below it (RL_VNARROW, as
 * the elementwise kernels: emit_math.c, vm_nbase). In the x86-64-v3 clone an
 * rl_vf is two registers, and the rl_vfh union that splits it for the sums,
 * and each unaligned 64-byte store, went through the stack as four 16-byte
 * moves: Softmax over 256 x 4096, one thread, Zen 3, took 1.16 ms against
 * onnxruntime's 0.48. The rl_wf loop takes 16 floats per step as two
 * halves, the first summed into s0 and the second into s1, as the rl_vf
 * loop does: the same sums in the same order, the same bits.
 */
void cg_exp_sum_pass(struct rl_cgen *cg, const char *src, const char *dst, const char *nv)
{
	cg->vnarrow = 1;
	cg_vmath_need(cg, RL_VM_EXPZ);
	rl_buf_printf(&cg->body, "#ifdef RL_VNARROW\n");
	cg_line(cg, "if (!rl_cpu_v4()) {");
	cg_line(cg, "    for (size_t i = 0; i < %s; i += RL_VW) {", nv);
	cg_line(cg, "        const rl_wf t0 = *(const rl_wfu *)(%s + i) - m;", src);
	cg_line(cg, "        const rl_wf t1 = *(const rl_wfu *)(%s + i + RL_WW) - m;", src);
	cg_line(cg, "        rl_wf e0, e1;");
	cg_line(cg, "        rl_wexpz(&e0, &t0);");
	cg_line(cg, "        rl_wexpz(&e1, &t1);");
	if (dst) {
		cg_line(cg, "        *(rl_wfu *)(%s + i) = e0;", dst);
		cg_line(cg, "        *(rl_wfu *)(%s + i + RL_WW) = e1;", dst);
	}
	cg_line(cg, "        s0 += e0;");
	cg_line(cg, "        s1 += e1;");
	cg_line(cg, "    }");
	cg_line(cg, "} else");
	rl_buf_printf(&cg->body, "#endif\n");
	cg_line(cg, "for (size_t i = 0; i < %s; i += RL_VW) {", nv);
	cg_line(cg, "    const rl_vf t = *(const rl_vfu *)(%s + i) - m;", src);
	cg_line(cg, "    rl_vfh e;");
	cg_line(cg, "    rl_vexpz(&e.f, &t);");
	if (dst)
		cg_line(cg, "    *(rl_vfu *)(%s + i) = e.f;", dst);
	cg_line(cg, "    s0 += e.h[0];");
	cg_line(cg, "    s1 += e.h[1];");
	cg_line(cg, "}");
}

void cg_row_pass(struct rl_cgen *cg, const char *dst, const char *expr, const char *nv)
{
	char body[400];
	snprintf(body, sizeof(body), "*(rl_vfu *)(%s + i) = %s;", dst, expr);
	cg_vloop(cg, "i", nv, body);
}

/*
 * Float32 Softmax/LogSoftmax over contiguous rows of D >= RL_VW: rows split
 * across threads (each row in one thread, so any thread count gives the same
 * bits); per row three vector passes that stay in L1/L2: the max, then
 * e = exp(x - max) with rl_vexpz (stored for Softmax; no denormal results,
 * which cost a microcode assist per lane: emit_math.c) and its sum, then
 * the scaling (Softmax: y = e / sum as e * (1 / sum); LogSoftmax:
 * y = x - max - log(sum), logf once per row). The last short vector of a row is padded
 * (-inf for the max, 0 lanes for the sum) so it gets the same math. The
 * scalar code under #else is the original one-row-at-a-time loop.
 */
static void softmax_vec(struct rl_cgen *cg, enum rl_op op, int64_t outer, int64_t D)
{
	bool tail = D % VW != 0, soft = op == RL_OP_Softmax;
	cg_vmath_need(cg, RL_VM_EXPZ);
	cg->simd = 1;
	cg_rows_open(cg, "a", outer, D, RL_NORM_MIN_PAR);
	cg_line(cg, "const float *x = X0 + a * %lld;", (long long)D);
	cg_line(cg, "float *y = Y0 + a * %lld;", (long long)D);
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	const int64_t nv = D / VW * VW; /* elements in whole vectors */
	/* running maximum and sum in half vectors (rl_vh: a 16-float one stays
	 * in memory in the AVX2 clone, see emit_rt.c) */
	cg_line(cg, "rl_vh m0 = *(const rl_vhu *)x, m1 = *(const rl_vhu *)(x + RL_VH);");
	cg_line(cg, "for (size_t d = RL_VW; d < %lld; d += RL_VW) {", (long long)nv);
	cg_line(cg, "    const rl_vh v0 = *(const rl_vhu *)(x + d), v1 = *(const rl_vhu *)(x + d + RL_VH);");
	cg_line(cg, "    rl_vhif(&m0, RL_GT, &v0, &m0, &v0, &m0);");
	cg_line(cg, "    rl_vhif(&m1, RL_GT, &v1, &m1, &v1, &m1);");
	cg_line(cg, "}");
	if (tail) {
		cg_line(cg, "rl_vfh xt = {.f = (rl_vf){0} - INFINITY}; /* padded: -inf does not win */");
		cg_line(cg, "memcpy(&xt, x + %lld, %lld * sizeof(float));", (long long)nv,
		        (long long)(D - nv));
		cg_line(cg, "rl_vhif(&m0, RL_GT, &xt.h[0], &m0, &xt.h[0], &m0);");
		cg_line(cg, "rl_vhif(&m1, RL_GT, &xt.h[1], &m1, &xt.h[1], &m1);");
	}
	cg_line(cg, "rl_vhif(&m0, RL_GT, &m1, &m0, &m1, &m0);");
	cg_line(cg, "float m = m0[0];");
	cg_line(cg, "for (int l = 1; l < RL_VH; l++)");
	cg_line(cg, "    m = m0[l] > m ? m0[l] : m;");
	cg_line(cg, "rl_vh s0 = {0}, s1 = {0};");
	char nvs[32];
	snprintf(nvs, sizeof(nvs), "%lld", (long long)nv);
	cg_exp_sum_pass(cg, "x", soft ? "y" : NULL, nvs);
	if (tail) {
		cg_line(cg, "{");
		cg_line(cg, "    const rl_vf t = xt.f - m; /* -inf lanes give 0 */");
		cg_line(cg, "    rl_vfh e;");
		cg_line(cg, "    rl_vexpz(&e.f, &t);");
		if (soft)
			cg_line(cg, "    memcpy(y + %lld, &e, %lld * sizeof(float));", (long long)nv,
			        (long long)(D - nv));
		cg_line(cg, "    s0 += e.h[0];");
		cg_line(cg, "    s1 += e.h[1];");
		cg_line(cg, "}");
	}
	cg_line(cg, "s0 += s1;");
	cg_line(cg, "float s = 0.0f;");
	cg_line(cg, "for (int l = 0; l < RL_VH; l++)");
	cg_line(cg, "    s += s0[l];");
	if (soft) {
		cg_line(cg, "const float r = 1.0f / s;");
		cg_row_pass(cg, "y", "*(const rl_vfu *)(y + i) * r", nvs);
		if (tail) {
			cg_line(cg, "for (size_t d = %lld; d < %lld; d++)", (long long)nv, (long long)D);
			cg_line(cg, "    y[d] *= r;");
		}
	} else {
		cg_line(cg, "const float ls = logf(s);");
		cg_row_pass(cg, "y", "*(const rl_vfu *)(x + i) - m - ls", nvs);
		if (tail) {
			cg_line(cg, "for (size_t d = %lld; d < %lld; d++)", (long long)nv, (long long)D);
			cg_line(cg, "    y[d] = x[d] - m - ls;");
		}
	}
	rl_buf_printf(&cg->body, "#else\n");
	cg_line(cg, "float m = x[0];");
	cg_line(cg, "for (size_t d = 1; d < %lld; d++)", (long long)D);
	cg_line(cg, "    if (x[d] > m) m = x[d];");
	cg_line(cg, "float s = 0.0f;");
	cg_line(cg, "for (size_t d = 0; d < %lld; d++) {", (long long)D);
	cg_line(cg, "    const float e = expf(x[d] - m);");
	if (soft)
		cg_line(cg, "    y[d] = e;");
	cg_line(cg, "    s += e;");
	cg_line(cg, "}");
	if (soft) {
		cg_line(cg, "const float r = 1.0f / s;");
		cg_line(cg, "for (size_t d = 0; d < %lld; d++)", (long long)D);
		cg_line(cg, "    y[d] *= r;");
	} else {
		cg_line(cg, "const float ls = logf(s);");
		cg_line(cg, "for (size_t d = 0; d < %lld; d++)", (long long)D);
		cg_line(cg, "    y[d] = x[d] - m - ls;");
	}
	rl_buf_printf(&cg->body, "#endif\n");
	cg->indent--;
	cg_line(cg, "}");
}

/* The per-lane loop `lane` (empty for a scalar row) around a few
 * statements: a block only where there is a loop (no `for (...) { { ... } }`) */
static void lane_open(struct rl_cgen *cg, const char *lane)
{
	if (*lane) {
		cg_line(cg, "%s{", lane);
		cg->indent++;
	}
}

static void lane_close(struct rl_cgen *cg, const char *lane)
{
	if (*lane) {
		cg->indent--;
		cg_line(cg, "}");
	}
}

static enum rl_status emit_softmax(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype dt = x->dtype;
	const char *ct = cg_comptype(dt);
	int r = x->shape.rank;
	bool v13 = n->opset >= 13;
	int64_t axis = rl_node_attr_int(n, "axis", v13 ? -1 : 1);
	if (axis < 0)
		axis += r;
	if (r == 0 ? axis != 0 : (axis < 0 || axis >= r))
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(n, "axis", v13 ? -1 : 1), r);
	int64_t outer = 1, D = 1, inner = 1;
	for (int d = 0; d < r; d++) {
		int64_t v = x->shape.d[d].v;
		if (d < axis)
			outer *= v;
		else if (d == axis || !v13)
			D *= v;
		else
			inner *= v;
	}
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	const char *opn = rl_op_table[n->op].name;
	cg_line(cg, "/* %s over %lld elements (stride %lld) for %lld x %lld rows%s */", opn,
	        (long long)D, (long long)inner, (long long)outer, (long long)inner,
	        n->op == RL_OP_Hardmax ? "" : "; the row max is subtracted before exp");
	if (inner == 1 && dt == RL_DT_FLOAT && y->dtype == RL_DT_FLOAT && D >= VW &&
	    n->op != RL_OP_Hardmax) {
		softmax_vec(cg, n->op, outer, D);
		return RL_OK;
	}
	/* names that let one code path serve scalar rows and tiled lanes */
	bool vec = inner > 1;
	int64_t tile = inner < RL_NORM_TILE ? inner : RL_NORM_TILE;
	bool tiled = inner > tile;
	const char *M = vec ? "m[t]" : "m", *S = vec ? "s[t]" : "s", *B = vec ? "bi[t]" : "bi";
	char lane[64] = "", xi[96], x0[96];
	if (tiled)
		snprintf(lane, sizeof(lane), "for (size_t t = 0; t < w; t++) ");
	else if (vec)
		snprintf(lane, sizeof(lane), "for (size_t t = 0; t < %lld; t++) ", (long long)inner);
	const char *tc = tiled ? " + c" : "";
	bool lo = outer > 1;
	if (lo) {
		cg_line(cg, "for (size_t a = 0; a < %lld; a++) {", (long long)outer);
		cg->indent++;
		cg_line(cg, "const size_t b = a * %lld;", (long long)(D * inner));
	} else {
		cg_line(cg, "const size_t b = 0;");
	}
	if (tiled) {
		cg_line(cg, "for (size_t c = 0; c < %lld; c += %lld) {", (long long)inner,
		        (long long)tile);
		cg->indent++;
		cg_line(cg, "const size_t w = %lld - c < %lld ? %lld - c : %lld;", (long long)inner,
		        (long long)tile, (long long)inner, (long long)tile);
	}
	snprintf(x0, sizeof(x0), "X0[b%s%s]", tc, vec ? " + t" : "");
	snprintf(xi, sizeof(xi), vec ? "X0[b + d * %lld%s + t]" : "X0[b + d]", (long long)inner, tc);
	/* pass 1: the max (and its first index for Hardmax) */
	if (vec) {
		cg_scratch_array(cg, ct, "m", tile, 0);
		cg_line(cg, "%sm[t] = %s;", lane, cg_load(cg, dt, x0));
		if (n->op == RL_OP_Hardmax) {
			cg_scratch_array(cg, "size_t", "bi", tile, 0);
			cg_line(cg, "%sbi[t] = 0;", lane);
		}
	} else {
		cg_line(cg, "%s m = %s;", ct, cg_load(cg, dt, x0));
		if (n->op == RL_OP_Hardmax)
			cg_line(cg, "size_t bi = 0;");
	}
	if (D > 1) {
		cg_line(cg, "for (size_t d = 1; d < %lld; d++) {", (long long)D);
		cg->indent++;
		lane_open(cg, lane);
		cg_line(cg, "const %s v = %s;", ct, cg_load(cg, dt, xi));
		if (n->op == RL_OP_Hardmax)
			cg_line(cg, "if (v > %s) { %s = v; %s = d; }", M, M, B);
		else
			cg_line(cg, "if (v > %s) %s = v;", M, M);
		lane_close(cg, lane);
		cg->indent--;
		cg_line(cg, "}");
	}
	if (n->op == RL_OP_Hardmax)
		cg_line(cg, "(void)m;");
	char yi[96];
	snprintf(yi, sizeof(yi), vec ? "Y0[b + d * %lld%s + t]" : "Y0[b + d]", (long long)inner, tc);
	bool same = strcmp(ct, cg_ctype(y->dtype)) == 0; /* Y0 can hold exp() */
	if (n->op == RL_OP_Hardmax) {
		cg_line(cg, "for (size_t d = 0; d < %lld; d++)", (long long)D);
		char one[64], zero[64];
		/* literals of the compute type: float and double need no cast */
		snprintf(one, sizeof(one), "%s", cg_assign(cg, y->dtype, lit(ct, 1)));
		snprintf(zero, sizeof(zero), "%s", cg_assign(cg, y->dtype, lit(ct, 0)));
		cg_line(cg, "    %s%s = d == %s ? %s : %s;", lane, yi, B, one, zero);
	} else {
		if (vec) {
			cg_scratch_array(cg, ct, "s", tile, 0);
			cg_line(cg, "%ss[t] = %s;", lane, cg_zero(ct));
		} else {
			cg_line(cg, "%s s = %s;", ct, cg_zero(ct));
		}
		cg_line(cg, "for (size_t d = 0; d < %lld; d++) {", (long long)D);
		cg->indent++;
		lane_open(cg, lane);
		cg_line(cg, "const %s e = %s(%s - %s);", ct, mfn(ct, "exp"), cg_load(cg, dt, xi), M);
		if (n->op == RL_OP_Softmax && same)
			cg_line(cg, "%s = e;", yi);
		cg_line(cg, "%s += e;", S);
		lane_close(cg, lane);
		cg->indent--;
		cg_line(cg, "}");
		char e[256];
		if (n->op == RL_OP_Softmax) {
			cg_line(cg, "%s%s = %s / %s;", lane, S, lit(ct, 1), S);
			if (same)
				snprintf(e, sizeof(e), "%s * %s", yi, S);
			else
				snprintf(e, sizeof(e), "%s(%s - %s) * %s", mfn(ct, "exp"), cg_load(cg, dt, xi),
				         M, S);
		} else {
			cg_line(cg, "%s%s = %s(%s);", lane, S, mfn(ct, "log"), S);
			snprintf(e, sizeof(e), "%s - %s - %s", cg_load(cg, dt, xi), M, S);
		}
		cg_line(cg, "for (size_t d = 0; d < %lld; d++)", (long long)D);
		cg_line(cg, "    %s%s = %s;", lane, yi, cg_assign(cg, y->dtype, e));
	}
	if (tiled) {
		cg->indent--;
		cg_line(cg, "}");
	}
	if (lo) {
		cg->indent--;
		cg_line(cg, "}");
	}
	return RL_OK;
}

/* ---- MeanVarianceNormalization ------------------------------------------- */

/* ONNX's function body, computed in double: per group of the axes not in
 * `axes` (default [0, 2, 3]), mean = E[x], std = sqrt(E[x^2] - mean^2), and
 * y = (x - mean) / (std + 1e-9). One nest of loops over X's axes in order
 * (so X and Y stream) with k, the group, from the kept axes' indices; the
 * two sums per group are a static array (the generated code runs one model
 * call at a time). */
static enum rl_status emit_mvn(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	bool red[RL_MAX_RANK] = {false};
	static const int64_t def[3] = {0, 2, 3};
	const int64_t *ax = def;
	int na = rl_node_attr_ints(n, "axes", &ax);
	if (na < 0) {
		ax = def;
		na = 3;
	}
	for (int i = 0; i < na; i++) {
		int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
		if (a < 0 || a >= r || red[a])
			return cg_error(cg, node, "axes: %lld is out of range or repeated",
			                (long long)ax[i]);
		red[a] = true;
	}
	int64_t groups = 1, R = 1, kst[RL_MAX_RANK];
	for (int d = r - 1; d >= 0; d--) {
		kst[d] = red[d] ? 0 : groups;
		if (red[d])
			R *= x->shape.d[d].v;
		else
			groups *= x->shape.d[d].v;
	}
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	if (r < 1)
		return cg_error(cg, node, "input must have rank >= 1");
	/* the flat index of X and the group index, from the loop indices */
	char fx[640] = "i0", kx[640] = "", t[640];
	for (int d = 1; d < r; d++) {
		snprintf(t, sizeof(t), "(%.400s) * %lld + i%d", fx, (long long)x->shape.d[d].v, d);
		snprintf(fx, sizeof(fx), "%s", t);
	}
	for (int d = 0; d < r; d++)
		if (!red[d]) {
			snprintf(t, sizeof(t), "%.400s%si%d * %lld", kx, *kx ? " + " : "", d,
			         (long long)kst[d]);
			snprintf(kx, sizeof(kx), "%s", t);
		}
	if (!*kx)
		snprintf(kx, sizeof(kx), "0");
	cg_line(cg, "/* per group of the axes not reduced (%lld groups of %lld): "
	        "y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) */", (long long)groups, (long long)R);
	cg_line(cg, "static double acc[%lld];", (long long)(2 * groups));
	cg_line(cg, "memset(acc, 0, sizeof(acc));");
	for (int pass = 0; pass < 2; pass++) {
		for (int d = 0; d < r; d++)
			cg_line(cg, "%*sfor (size_t i%d = 0; i%d < %lld; i%d++)", 4 * d, "", d, d,
			        (long long)x->shape.d[d].v, d);
		cg_line(cg, "%*s{", 4 * r, "");
		cg->indent += r + 1;
		cg_line(cg, "const size_t f = %s, k = %s;", fx, kx);
		cg_line(cg, "const double v = %s;", ld(cg, x->dtype, "X0[f]"));
		if (pass == 0) {
			cg_line(cg, "acc[2 * k] += v;");
			cg_line(cg, "acc[2 * k + 1] += v * v;");
		} else {
			cg_line(cg, "Y0[f] = %s;", cg_assign(cg, y->dtype,
			        "(v - acc[2 * k]) / acc[2 * k + 1]"));
		}
		cg->indent -= r + 1;
		cg_line(cg, "%*s}", 4 * r, "");
		if (pass == 0) {
			cg_line(cg, "for (size_t k = 0; k < %lld; k++) {", (long long)groups);
			cg_line(cg, "    const double mean = acc[2 * k] / %lld.0;", (long long)R);
			cg_line(cg, "    const double var = acc[2 * k + 1] / %lld.0 - mean * mean;",
			        (long long)R);
			cg_line(cg, "    acc[2 * k] = mean;");
			cg_line(cg, "    acc[2 * k + 1] = sqrt(var) + 1e-9;");
			cg_line(cg, "}");
		}
	}
	return RL_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

enum rl_status rl_emit_c_norm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	if (!x || !cg_out(cg, node, 0))
		return cg_error(cg, node, "missing input or output");
	enum rl_status st = need_float(cg, node, x);
	if (st != RL_OK)
		return st;
	switch (n->op) {
	case RL_OP_BatchNormalization: return emit_batchnorm(cg, node);
	case RL_OP_LayerNormalization: return emit_layernorm(cg, node);
	case RL_OP_InstanceNormalization: return emit_instancenorm(cg, node);
	case RL_OP_LRN: return emit_lrn(cg, node);
	case RL_OP_MeanVarianceNormalization: return emit_mvn(cg, node);
	case RL_OP_Softmax: case RL_OP_LogSoftmax: case RL_OP_Hardmax:
		return emit_softmax(cg, node);
	default:
		return cg_error(cg, node, "%s is not a norm-family op", rl_op_table[n->op].name);
	}
}
