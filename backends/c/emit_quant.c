/*
 * emit_quant.c - C kernels for the quantization family: QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv. Semantics are the ONNX reference's, and the
 * same as ir/fam_quant.c computes on the host for folding (see ir/quant.h; the quantize pass's packed weights are ir/qweights.h).
 *
 * Rounding without libm: a quotient is clamped to +-2^22 (far beyond any
 * 16-bit range; NaN goes to the low end) and rounded half to even by
 * adding and subtracting 1.5 * 2^23, exact in float under the default
 * rounding mode; the requantization of the products does the same in
 * double with 1.5 * 2^52. Both loops stay branch-free and vectorize.
 *
 * float <-> quantized conversions go through qc_types, one row per
 * quantized dtype with a store hook (quotient and zero point to storage)
 * and a load hook (storage minus zero point as a number). int4/uint4 and
 * int2/uint2 live one element a byte and take the integer hooks; the
 * float8 kinds and float4e2m1 convert through emit_lowp.h's helpers.
 *
 * The integer products (MatMulInteger, QLinearMatMul) are blocked: a task
 * is 4 rows of A by a block of up to 256 columns of B, whose int32 sums
 * stay in four arrays in L1 while K is swept; each step loads 4 values of A
 * and streams one contiguous run of B's row, the innermost loop a literal
 * trip count over columns that compilers vectorize (widening loads, 32-bit
 * multiply-adds, in the per-ISA clones of RL_TARGETS). Sums wrap in uint32
 * (int32 overflow, like numpy, without undefined behaviour). Tasks are
 * split across threads. Zero points are subtracted as the operands are
 * loaded (scalar, per row of A, per column of B).
 *
 * ConvInteger and QLinearConv run the direct (gather) convolution with
 * int32 sums: they are rare outside tests, and a model that uses them for
 * its heavy layers would want the im2col path the float Conv has.
 */
#include "emit_impl.h"
#include "emit_lowp.h"
#include "quant.h"

#include <string.h>

static void line_open(struct rl_cgen *cg, const char *s)
{
	cg_line(cg, "%s", s);
	cg->indent++;
}

static void line_close(struct rl_cgen *cg)
{
	cg->indent--;
	cg_line(cg, "}");
}

/* ---- per-dtype conversion hooks ---------------------------------------- */

struct qc_type {
	enum rl_dtype dt;
	long long qmin, qmax;
	bool fl; /* float8/float4: zero points are float codes (cg_lowp_to_float) */
	/* statements storing quotient `q` (an identifier of type float, or
	 * double when prec is double) with zero point `zp` (an int32
	 * expression; for fl a float expression) into lvalue `dst`; sat is
	 * QuantizeLinear's saturate attribute */
	void (*store)(struct rl_cgen *cg, const struct qc_type *t, const char *dst, const char *q,
	              const char *zp, enum rl_dtype prec, bool sat);
	/* expression: element `src` minus zero point `zp` (an int32 expression)
	 * as a number of C type `ct` ("float" or "double") */
	void (*load)(struct rl_cgen *cg, const struct qc_type *t, const char *src, const char *zp,
	             const char *ct, char *e, size_t n);
};

/* int8 ... uint16, and int4/uint4/int2/uint2 in their one-byte storage */
static void qc_store_int(struct rl_cgen *cg, const struct qc_type *t, const char *dst,
                         const char *q, const char *zp, enum rl_dtype prec, bool sat)
{
	(void)sat;
	bool dbl = prec == RL_DT_DOUBLE;
	const char *f = dbl ? "" : "f";
	cg_line(cg, "%s = %s > -4194304.0%s ? %s : -4194304.0%s;", q, q, f, q, f);
	cg_line(cg, "%s = %s < 4194304.0%s ? %s : 4194304.0%s;", q, q, f, q, f);
	if (dbl)
		cg_line(cg, "const int32_t r = (int32_t)(%s + 6755399441055744.0 - 6755399441055744.0) + %s;",
		        q, zp);
	else
		cg_line(cg, "const int32_t r = (int32_t)(%s + 12582912.0f - 12582912.0f) + %s;", q, zp);
	cg_line(cg, "%s = (%s)(r < %lld ? %lld : r > %lld ? %lld : r);", dst, cg_ctype(t->dt),
	        t->qmin, t->qmin, t->qmax, t->qmax);
}

static void qc_load_int(struct rl_cgen *cg, const struct qc_type *t, const char *src,
                        const char *zp, const char *ct, char *e, size_t n)
{
	(void)cg;
	if (t->dt == RL_DT_INT32) /* numpy: float32(x) - zp, in float64 */
		snprintf(e, n, "((double)(float)%s - (double)%s)", src, zp);
	else /* exact in float: |x - zp| < 2^17 */
		snprintf(e, n, "(%s)((int32_t)%s - %s)", ct, src, zp);
}

/*
 * float8 and float4e2m1 (ir/fam_quant.c): float8 casts q (zero point
 * ignored, as the reference does) with the saturate attribute; float4
 * casts q + zero point, summed in the compute precision, always
 * saturating. A double goes to float rounding to odd first (ir/lowp.c's
 * d2f_odd), so the minifloat sees one rounding as on the host.
 */
static void qc_store_float(struct rl_cgen *cg, const struct qc_type *t, const char *dst,
                           const char *q, const char *zp, enum rl_dtype prec, bool sat)
{
	bool dbl = prec == RL_DT_DOUBLE;
	const char *ct = dbl ? "double" : "float";
	const char *w = q;
	if (t->dt == RL_DT_FLOAT4E2M1) {
		char sum[300];
		snprintf(sum, sizeof(sum), "%s + (%s)%s", q, ct, zp);
		if (prec == RL_DT_FLOAT16 || prec == RL_DT_BFLOAT16)
			cg_line(cg, "const float w = %s;", cg_load(cg, prec, cg_store(cg, prec, sum)));
		else
			cg_line(cg, "const %s w = %s;", ct, sum);
		w = "w";
		sat = true;
	}
	if (dbl) {
		cg_line(cg, "float wf = (float)%s;", w);
		cg_line(cg, "if (%s == %s && !isinf(wf) && (double)wf != %s) { /* round to odd */", w, w, w);
		cg->indent++;
		cg_line(cg, "uint32_t u;");
		cg_line(cg, "memcpy(&u, &wf, 4);");
		cg_line(cg, "if (%s > 0 ? (double)wf > %s : (double)wf < %s)", w, w, w);
		cg_line(cg, "    u--;");
		cg_line(cg, "u |= 1u;");
		cg_line(cg, "memcpy(&wf, &u, 4);");
		line_close(cg);
		w = "wf";
	}
	cg_line(cg, "%s = %s;", dst, cg_lowp_from_float(cg, t->dt, w, sat, 0));
}

/* float(x) (the zero point is ignored, as the reference does) */
static void qc_load_float(struct rl_cgen *cg, const struct qc_type *t, const char *src,
                          const char *zp, const char *ct, char *e, size_t n)
{
	(void)zp;
	snprintf(e, n, "(%s)%s", ct, cg_lowp_to_float(cg, t->dt, src));
}

static const struct qc_type qc_types[] = {
	{RL_DT_INT8, -128, 127, false, qc_store_int, qc_load_int},
	{RL_DT_UINT8, 0, 255, false, qc_store_int, qc_load_int},
	{RL_DT_INT16, -32768, 32767, false, qc_store_int, qc_load_int},
	{RL_DT_UINT16, 0, 65535, false, qc_store_int, qc_load_int},
	{RL_DT_INT32, -2147483647LL - 1, 2147483647LL, false, NULL, qc_load_int},
	{RL_DT_INT4, -8, 7, false, qc_store_int, qc_load_int},
	{RL_DT_UINT4, 0, 15, false, qc_store_int, qc_load_int},
	{RL_DT_INT2, -2, 1, false, qc_store_int, qc_load_int},
	{RL_DT_UINT2, 0, 3, false, qc_store_int, qc_load_int},
	{RL_DT_FLOAT8E4M3FN, 0, 0, true, qc_store_float, qc_load_float},
	{RL_DT_FLOAT8E4M3FNUZ, 0, 0, true, qc_store_float, qc_load_float},
	{RL_DT_FLOAT8E5M2, 0, 0, true, qc_store_float, qc_load_float},
	{RL_DT_FLOAT8E5M2FNUZ, 0, 0, true, qc_store_float, qc_load_float},
	{RL_DT_FLOAT4E2M1, 0, 0, true, qc_store_float, qc_load_float},
};

static const struct qc_type *qc_type_of(enum rl_dtype dt)
{
	for (size_t k = 0; k < sizeof(qc_types) / sizeof(qc_types[0]); k++)
		if (qc_types[k].dt == dt)
			return &qc_types[k];
	return NULL;
}

static bool is_scale_dt(enum rl_dtype t)
{
	return t == RL_DT_FLOAT || t == RL_DT_FLOAT16 || t == RL_DT_BFLOAT16 || t == RL_DT_DOUBLE;
}

/* ---- QuantizeLinear / DequantizeLinear ---------------------------------- */

/* Open the loops over the input as [outer, dim, inner]; in the body `e` is
 * the flat index and `kq` the scale index. Returns the depth. */
static int qdq_loops(struct rl_cgen *cg, const struct rl_qlayout *l, int64_t ne)
{
	char b[256];
	if (l->kind == RL_QK_TENSOR) {
		snprintf(b, sizeof(b), "for (size_t e = 0; e < %lld; e++) {", (long long)ne);
		line_open(cg, b);
		cg_line(cg, "const size_t kq = 0;");
		return 1;
	}
	int depth = 0;
	const char *o = "0";
	if (l->outer > 1) {
		snprintf(b, sizeof(b), "for (size_t o = 0; o < %lld; o++) {", (long long)l->outer);
		line_open(cg, b);
		depth++;
		o = "o";
	}
	snprintf(b, sizeof(b), "for (size_t d = 0; d < %lld; d++) {", (long long)l->dim);
	line_open(cg, b);
	depth++;
	if (l->kind == RL_QK_BLOCK) {
		if (l->outer > 1)
			cg_line(cg, "const size_t kb = (o * %lld + d / %lld) * %lld;", (long long)l->nblocks,
			        (long long)l->block, (long long)l->inner);
		else
			cg_line(cg, "const size_t kb = d / %lld * %lld;", (long long)l->block,
			        (long long)l->inner);
	}
	snprintf(b, sizeof(b), "for (size_t i = 0; i < %lld; i++) {", (long long)l->inner);
	line_open(cg, b);
	depth++;
	if (l->outer > 1)
		cg_line(cg, "const size_t e = (%s * %lld + d) * %lld + i;", o, (long long)l->dim,
		        (long long)l->inner);
	else
		cg_line(cg, "const size_t e = d * %lld + i;", (long long)l->inner);
	cg_line(cg, "const size_t kq = %s;", l->kind == RL_QK_AXIS ? "d" : "kb + i");
	return depth;
}

static enum rl_status emit_qdq(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *S = cg_in(cg, node, 1);
	const struct rl_value *Z = cg_in(cg, node, 2), *Y = cg_out(cg, node, 0);
	bool q = n->op == RL_OP_QuantizeLinear;
	struct rl_qlayout l;
	char why[256];
	if (!rl_qlayout_of(cg->g, n, &l, why, sizeof(why)))
		return cg_error(cg, node, "%s", why);
	const struct qc_type *qt = qc_type_of(q ? Y->dtype : X->dtype);
	if (!qt || (q && !qt->store) || !is_scale_dt(S->dtype) || (Z && !qc_type_of(Z->dtype)))
		return cg_error(cg, node, "%s from %s to %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(X->dtype), rl_dtype_name(Y->dtype));
	int64_t ne = rl_shape_numel(&X->shape);
	if (ne <= 0)
		return RL_OK;
	char e[1600], zp[160];
	if (qt->fl && q)
		snprintf(zp, sizeof(zp), "%s", Z ? cg_lowp_to_float(cg, Z->dtype, "X2[kq]") : "0.0f");
	else
		snprintf(zp, sizeof(zp), "%s", Z ? "(int32_t)X2[kq]" : "0");
	if (q) {
		enum rl_dtype prec = X->dtype;
		if (n->opset >= 23 && rl_node_attr_int(n, "precision", 0))
			prec = (enum rl_dtype)rl_node_attr_int(n, "precision", 0);
		if (!rl_dtype_is_float(X->dtype) || !is_scale_dt(prec))
			return cg_error(cg, node, "QuantizeLinear of %s in %s is not supported",
			                rl_dtype_name(X->dtype), rl_dtype_name(prec));
		bool dbl = prec == RL_DT_DOUBLE;
		const char *ct = dbl ? "double" : "float";
		cg_line(cg, "/* QuantizeLinear: y = %s, %s */",
		        !qt->fl ? "saturate(round_half_even(x / scale) + zero_point)"
		        : Y->dtype == RL_DT_FLOAT4E2M1 ? "float4e2m1(x / scale + zero_point)"
		        : "float8(x / scale), the zero point ignored",
		        l.kind == RL_QK_TENSOR ? "per tensor" : l.kind == RL_QK_AXIS ? "per axis"
		        : "blocked");
		int depth = qdq_loops(cg, &l, ne);
		char xs[64], xv[200], sv[200];
		snprintf(xs, sizeof(xs), "X0[e]");
		snprintf(xv, sizeof(xv), "%s", cg_load_as(cg, X->dtype, xs, ct));
		snprintf(sv, sizeof(sv), "%s", cg_load_as(cg, S->dtype, "X1[kq]", ct));
		bool half = prec == RL_DT_FLOAT16 || prec == RL_DT_BFLOAT16;
		if (half && prec != X->dtype) {
			/* the precision attribute casts both operands first */
			char t[200];
			snprintf(t, sizeof(t), "%s", cg_load(cg, prec, cg_store(cg, prec, xv)));
			snprintf(xv, sizeof(xv), "%s", t);
			if (S->dtype != prec) {
				snprintf(t, sizeof(t), "%s", cg_load(cg, prec, cg_store(cg, prec, sv)));
				snprintf(sv, sizeof(sv), "%s", t);
			}
		}
		if (half) {
			/* numpy divides half by half in float and rounds to half */
			char t[420];
			snprintf(t, sizeof(t), "%s / %s", xv, sv);
			snprintf(e, sizeof(e), "%s", cg_load(cg, prec, cg_store(cg, prec, t)));
		} else {
			snprintf(e, sizeof(e), "%s / %s", xv, sv);
		}
		cg_line(cg, "%s v = %s;", ct, e);
		qt->store(cg, qt, "Y0[e]", "v", zp, prec,
		          n->opset < 19 || rl_node_attr_int(n, "saturate", 1) != 0);
		cg_loops_close(cg, depth);
		return RL_OK;
	}
	if (!is_scale_dt(Y->dtype))
		return cg_error(cg, node, "DequantizeLinear to %s is not supported",
		                rl_dtype_name(Y->dtype));
	bool dbl = X->dtype == RL_DT_INT32 || S->dtype == RL_DT_DOUBLE;
	const char *ct = dbl ? "double" : "float";
	cg_line(cg, "/* DequantizeLinear: y = %s * scale, %s */",
	        qt->fl ? "float(x)" : "(x - zero_point)",
	        l.kind == RL_QK_TENSOR ? "per tensor" : l.kind == RL_QK_AXIS ? "per axis"
	        : "blocked");
	int depth = qdq_loops(cg, &l, ne);
	char d[600], t[1400];
	qt->load(cg, qt, "X0[e]", zp, ct, d, sizeof(d));
	snprintf(t, sizeof(t), "%s * %s", d, cg_load_as(cg, S->dtype, "X1[kq]", ct));
	if (Y->dtype == RL_DT_FLOAT || Y->dtype == RL_DT_DOUBLE) /* the assignment converts */
		cg_line(cg, "Y0[e] = %s;", t);
	else {
		char f[1500];
		snprintf(f, sizeof(f), "(float)(%s)", t);
		cg_line(cg, "Y0[e] = %s;", cg_assign(cg, Y->dtype, f));
	}
	cg_loops_close(cg, depth);
	return RL_OK;
}

/* ---- DynamicQuantizeLinear ---------------------------------------------- */

static enum rl_status emit_dynq(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *X = cg_in(cg, node, 0);
	if (X->dtype != RL_DT_FLOAT)
		return cg_error(cg, node, "DynamicQuantizeLinear of %s is not supported",
		                rl_dtype_name(X->dtype));
	int64_t ne = rl_shape_numel(&X->shape);
	const struct qc_type *qt = qc_type_of(RL_DT_UINT8);
	cg_line(cg, "/* DynamicQuantizeLinear: scale from the range of x and 0, zero point");
	cg_line(cg, " * rounded into [0, 255], then QuantizeLinear to uint8 (ONNX reference) */");
	if (ne == 0) {
		cg_line(cg, "Y1[0] = 1.0f / 255.0f;");
		cg_line(cg, "Y2[0] = 0;");
		return RL_OK;
	}
	cg_line(cg, "float mx = 0.0f, mn = 0.0f;");
	cg_line(cg, "for (size_t e = 0; e < %lld; e++) {", (long long)ne);
	cg_line(cg, "    mx = X0[e] > mx ? X0[e] : mx;");
	cg_line(cg, "    mn = X0[e] < mn ? X0[e] : mn;");
	cg_line(cg, "}");
	cg_line(cg, "const float sc = (mx == mn ? 1.0f : mx - mn) / 255.0f;");
	cg_line(cg, "float zf = 0.0f - mn / sc;");
	cg_line(cg, "zf = zf > 0.0f ? zf : 0.0f;");
	cg_line(cg, "zf = zf < 255.0f ? zf : 255.0f;");
	cg_line(cg, "const int32_t zp = (int32_t)(zf + 12582912.0f - 12582912.0f);");
	cg_line(cg, "for (size_t e = 0; e < %lld; e++) {", (long long)ne);
	cg->indent++;
	cg_line(cg, "float v = X0[e] / sc;");
	qt->store(cg, qt, "Y0[e]", "v", "zp", RL_DT_FLOAT, true);
	line_close(cg);
	cg_line(cg, "Y1[0] = sc;");
	cg_line(cg, "Y2[0] = (uint8_t)zp;");
	return RL_OK;
}

/* ---- requantization (QLinearMatMul, QLinearConv) ------------------------ */

/*
 * The multiplier a_scale * b_scale / y_scale as the reference computes it:
 * in float, or rounded to half after each step when the scales are half.
 * `as` and `bs` index expressions for the first two scales.
 */
static void mult_expr(struct rl_cgen *cg, enum rl_dtype sdt, int sa, const char *ia, int sb,
                      const char *ib, int sy, char *e, size_t n)
{
	char a[64], b[64], y[64];
	snprintf(a, sizeof(a), "X%d[%s]", sa, ia);
	snprintf(b, sizeof(b), "X%d[%s]", sb, ib);
	snprintf(y, sizeof(y), "X%d[0]", sy);
	char la[128], lb[128], ly[128];
	snprintf(la, sizeof(la), "%s", cg_load(cg, sdt, a));
	snprintf(lb, sizeof(lb), "%s", cg_load(cg, sdt, b));
	snprintf(ly, sizeof(ly), "%s", cg_load(cg, sdt, y));
	if (sdt == RL_DT_FLOAT16 || sdt == RL_DT_BFLOAT16) {
		char p[400], q[900];
		snprintf(p, sizeof(p), "%s * %s", la, lb);
		snprintf(q, sizeof(q), "%s / %s", cg_load(cg, sdt, cg_store(cg, sdt, p)), ly);
		snprintf(e, n, "(double)%s", cg_load(cg, sdt, cg_store(cg, sdt, q)));
	} else if (sdt == RL_DT_DOUBLE) {
		snprintf(e, n, "(%s * %s / %s)", la, lb, ly);
	} else {
		snprintf(e, n, "(double)(%s * %s / %s)", la, lb, ly);
	}
}

/* Statement storing int32 sum `acc` requantized with multiplier `m` (a
 * double expression) and zero point `zy` (a double) to `dst` of dtype t. */
static void requant(struct rl_cgen *cg, enum rl_dtype t, const char *dst, const char *acc,
                    const char *m)
{
	const struct qc_type *qt = qc_type_of(t);
	cg_line(cg, "double v = (double)(int32_t)%s * %s + zy;", acc, m);
	cg_line(cg, "v = v >= %lld.0 ? v : %lld.0;", qt->qmin, qt->qmin);
	cg_line(cg, "v = v <= %lld.0 ? v : %lld.0;", qt->qmax, qt->qmax);
	cg_line(cg, "%s = (%s)(int32_t)(v + 6755399441055744.0 - 6755399441055744.0);", dst,
	        cg_ctype(t));
}

/* ---- MatMulInteger / QLinearMatMul -------------------------------------- */

#define QMM_MR 4    /* rows of A per task */
#define QMM_JB 256  /* columns of B per task */
#define QMM_PAR_MIN (64 * 64 * 32) /* multiply-adds below which one thread runs */

/* How a zero point or scale indexes: absent, one value, per row/column. */
enum qparam { QP_NONE, QP_SCALAR, QP_VEC, QP_VEC_MOD };

struct qmm {
	bool ql;                   /* QLinearMatMul */
	int xa, xb, xza, xzb;      /* kernel parameter numbers of A, B, zero points */
	int xsa, xsb, xsy, xzy;    /* QLinearMatMul scales and y zero point */
	enum rl_dtype ta, tb, ty, sdt;
	int64_t M, N, K;           /* one product (batch rows of A folded into M when B has none) */
	int64_t Mrow;              /* rows of one A matrix (per-row parameters repeat by it) */
	int64_t nbatch;            /* products with their own B */
	int nbd;                   /* batch dims of the output */
	int64_t bd[RL_MAX_RANK], bsa[RL_MAX_RANK], bsb[RL_MAX_RANK];
	enum qparam za, zb, sa, sb;
	int64_t W, WT;             /* column block, and the last block's width (0: none) */
	bool hoisted;              /* scalar zero points are the locals za, zb */
};

/* Kind of a per-row (rows: M or Mrow entries) or per-column parameter. */
static bool qparam_of(const struct rl_value *v, int64_t per, int64_t per_mod, enum qparam *k)
{
	if (!v) {
		*k = QP_NONE;
		return true;
	}
	int64_t ne = rl_shape_numel(&v->shape);
	if (ne == 1)
		*k = QP_SCALAR;
	else if (ne == per)
		*k = QP_VEC;
	else if (per_mod > 0 && ne == per_mod)
		*k = QP_VEC_MOD;
	else
		return false;
	return true;
}

/* Parameter X<x> of kind k at row/column expression i: its value as int32
 * (is_int), else the index to read it at. */
static void qparam_expr(const struct qmm *q, enum qparam k, int x, const char *i, char *e,
                        size_t n, bool is_int)
{
	char idx[128];
	switch (k) {
	case QP_VEC: snprintf(idx, sizeof(idx), "%s", i); break;
	case QP_VEC_MOD: snprintf(idx, sizeof(idx), "(%s) %% %lld", i, (long long)q->Mrow); break;
	default: snprintf(idx, sizeof(idx), "0"); break;
	}
	if (!is_int)
		snprintf(e, n, "%s", idx);
	else if (k == QP_NONE)
		snprintf(e, n, "0");
	else if (k == QP_SCALAR && q->hoisted)
		snprintf(e, n, "%s", x == q->xza ? "za" : "zb");
	else
		snprintf(e, n, "(int32_t)X%d[%s]", x, idx);
}

/* "R + r" (R itself for r == 0) */
static void row_expr(const char *R, int r, char *b, size_t n)
{
	if (r)
		snprintf(b, n, "%s + %d", R, r);
	else
		snprintf(b, n, "%s", R);
}

/* One tile: `rows` rows from row expression R, W columns from j0, in the
 * caller's block. */
static void qmm_tile(struct rl_cgen *cg, const struct qmm *q, int rows, const char *R, int64_t W)
{
	char b[512], za[200], zb[200], rr[64];
	for (int r = 0; r < rows; r++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "acc%d", r);
		cg_scratch_array(cg, "uint32_t", nm, W, 0);
	}
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++)", (long long)W);
	cg_line(cg, "%s", b);
	size_t m = 0;
	char l[256];
	for (int r = 0; r < rows; r++)
		m += (size_t)snprintf(l + m, sizeof(l) - m, "acc%d[j] = ", r);
	cg_line(cg, "    %s0;", l);
	snprintf(b, sizeof(b), "for (size_t k = 0; k < %lld; k++) {", (long long)q->K);
	line_open(cg, b);
	for (int r = 0; r < rows; r++) {
		row_expr(R, r, rr, sizeof(rr));
		qparam_expr(q, q->za, q->xza, rr, za, sizeof(za), true);
		cg_line(cg, "const uint32_t a%d = (uint32_t)((int32_t)a[%s%s%s * %lld + k] - %s);", r,
		        r ? "(" : "", rr, r ? ")" : "", (long long)q->K, za);
	}
	cg_line(cg, "const %s *restrict br = b + k * %lld + j0;", cg_ctype(q->tb), (long long)q->N);
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++) {", (long long)W);
	line_open(cg, b);
	qparam_expr(q, q->zb, q->xzb, "j0 + j", zb, sizeof(zb), true);
	cg_line(cg, "const uint32_t bv = (uint32_t)((int32_t)br[j] - %s);", zb);
	for (int r = 0; r < rows; r++)
		cg_line(cg, "acc%d[j] += a%d * bv;", r, r);
	line_close(cg);
	line_close(cg);
	for (int r = 0; r < rows; r++) {
		snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++) {", (long long)W);
		line_open(cg, b);
		char dst[160], acc[32];
		row_expr(R, r, rr, sizeof(rr));
		snprintf(dst, sizeof(dst), "y[%s%s%s * %lld + j0 + j]", r ? "(" : "", rr, r ? ")" : "",
		         (long long)q->N);
		snprintf(acc, sizeof(acc), "acc%d[j]", r);
		if (!q->ql) {
			cg_line(cg, "%s = (int32_t)%s;", dst, acc);
		} else {
			char m2[600], ia[200], ib[200];
			if (q->sa == QP_SCALAR && q->sb == QP_SCALAR) {
				snprintf(m2, sizeof(m2), "mult");
			} else {
				qparam_expr(q, q->sa, q->xsa, rr, ia, sizeof(ia), false);
				qparam_expr(q, q->sb, q->xsb, "j0 + j", ib, sizeof(ib), false);
				mult_expr(cg, q->sdt, q->xsa, ia, q->xsb, ib, q->xsy, m2, sizeof(m2));
			}
			requant(cg, q->ty, dst, acc, m2);
		}
		line_close(cg);
	}
}

/* The tiles of a task: full row groups, then the last rows one at a time. */
static void qmm_rows(struct rl_cgen *cg, const struct qmm *q, int64_t W)
{
	if (q->M % QMM_MR == 0) {
		qmm_tile(cg, q, QMM_MR, "r0", W);
		return;
	}
	char b[200];
	snprintf(b, sizeof(b), "if (r0 + %d <= %lld) {", QMM_MR, (long long)q->M);
	line_open(cg, b);
	qmm_tile(cg, q, QMM_MR, "r0", W);
	line_close(cg);
	snprintf(b, sizeof(b), "else for (size_t r = r0; r < %lld; r++) {", (long long)q->M);
	line_open(cg, b);
	qmm_tile(cg, q, 1, "r", W);
	line_close(cg);
}

static enum rl_status emit_qmm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	struct qmm q;
	memset(&q, 0, sizeof(q));
	q.ql = n->op == RL_OP_QLinearMatMul;
	q.xa = 0;
	q.xb = q.ql ? 3 : 1;
	q.xza = q.ql ? 2 : 2;
	q.xzb = q.ql ? 5 : 3;
	q.xsa = 1;
	q.xsb = 4;
	q.xsy = 6;
	q.xzy = 7;
	const struct rl_value *A = cg_in(cg, node, q.xa), *B = cg_in(cg, node, q.xb);
	const struct rl_value *Y = cg_out(cg, node, 0);
	q.ta = A->dtype;
	q.tb = B->dtype;
	q.ty = Y->dtype;
	const struct rl_shape *sa = &A->shape, *sb = &B->shape, *sy = &Y->shape;
	if (sa->rank < 1 || sb->rank < 1)
		return cg_error(cg, node, "operands must have rank >= 1");
	q.K = sa->d[sa->rank - 1].v;
	q.Mrow = sa->rank >= 2 ? sa->d[sa->rank - 2].v : 1;
	q.N = sb->rank >= 2 ? sb->d[sb->rank - 1].v : 1;
	int64_t ny = rl_shape_numel(sy);
	if (ny == 0)
		return RL_OK;
	int64_t sbk = sb->rank >= 2 ? sb->d[sb->rank - 2].v : sb->d[0].v;
	if (sbk != q.K)
		return cg_error(cg, node, "inner dimensions differ");
	if (sb->rank <= 2) {
		q.nbatch = 1;
		q.M = rl_shape_numel(sa) / (q.K ? q.K : 1);
		if (q.K == 0)
			q.M = ny / q.N;
	} else {
		q.M = q.Mrow;
		/* batch dims of the output, and each operand's stride on them */
		int ra = sa->rank >= 2 ? sa->rank - 2 : 0, rb = sb->rank - 2;
		q.nbd = sy->rank - (sa->rank >= 2) - 1;
		int64_t stA = q.M * q.K, stB = q.K * q.N;
		q.nbatch = 1;
		for (int i = q.nbd - 1; i >= 0; i--) {
			int iA = i - (q.nbd - ra), iB = i - (q.nbd - rb);
			int64_t dA = iA >= 0 ? sa->d[iA].v : 1, dB = iB >= 0 ? sb->d[iB].v : 1;
			q.bd[i] = sy->d[i].v;
			q.bsa[i] = dA == 1 ? 0 : stA;
			q.bsb[i] = dB == 1 ? 0 : stB;
			stA *= dA;
			stB *= dB;
			q.nbatch *= q.bd[i];
		}
	}
	/* zero points and scales: scalars, per row of A, per column of B */
	int64_t Mall = q.M;
	bool ok = qparam_of(cg_in(cg, node, q.xza), Mall, q.Mrow != Mall ? q.Mrow : -1, &q.za) &&
	          qparam_of(cg_in(cg, node, q.xzb), q.N, -1, &q.zb);
	if (q.ql) {
		const struct rl_value *SA = cg_in(cg, node, 1), *SB = cg_in(cg, node, 4);
		const struct rl_value *SY = cg_in(cg, node, 6);
		q.sdt = SA->dtype;
		ok = ok && qparam_of(SA, Mall, q.Mrow != Mall ? q.Mrow : -1, &q.sa) &&
		     qparam_of(SB, q.N, -1, &q.sb) && rl_shape_numel(&SY->shape) == 1 &&
		     rl_shape_numel(&cg_in(cg, node, 7)->shape) == 1 && SB->dtype == q.sdt &&
		     SY->dtype == q.sdt && (q.sa != QP_NONE && q.sb != QP_NONE);
	}
	if (!ok)
		return cg_error(cg, node, "zero points and scales must be scalars, or 1-D per row "
		                "of A / per column of B");
	if (q.K == 0) {
		/* empty sums: every output is the requantized zero */
		cg_line(cg, "/* %s with K = 0: empty sums */", rl_op_table[n->op].name);
		if (q.ql) {
			char m2[600];
			mult_expr(cg, q.sdt, 1, "0", 4, "0", 6, m2, sizeof(m2));
			cg_line(cg, "const double zy = (double)X7[0];");
			cg_line(cg, "int32_t y0;");
			line_open(cg, "{");
			requant(cg, q.ty, "y0", "0u", m2);
			line_close(cg);
			cg_line(cg, "for (size_t e = 0; e < %lld; e++)", (long long)ny);
			cg_line(cg, "    Y0[e] = (%s)y0;", cg_ctype(q.ty));
		} else {
			cg_line(cg, "for (size_t e = 0; e < %lld; e++)", (long long)ny);
			cg_line(cg, "    Y0[e] = 0;");
		}
		return RL_OK;
	}
	q.W = q.N <= QMM_JB ? q.N : QMM_JB;
	q.WT = q.N % q.W;
	int64_t RG = (q.M + QMM_MR - 1) / QMM_MR, CB = (q.N + q.W - 1) / q.W;
	int64_t tasks = q.nbatch * RG * CB;
	cg_line(cg, "/* %s: int32 sums of (a - a_zero_point)(b - b_zero_point), %lld x %lld by %lld"
	        "%s;", rl_op_table[n->op].name, (long long)q.M, (long long)q.K, (long long)q.N,
	        q.nbatch > 1 ? " per batch entry" : "");
	cg_line(cg, " * tasks of %d rows x %lld columns (sums in L1 while K is swept)%s */",
	        QMM_MR, (long long)q.W, q.ql ? ", requantized to the output's scale" : "");
	cg->simd = 1; /* the column loops vectorize in the per-ISA clones */
	q.hoisted = true;
	if (q.za == QP_SCALAR)
		cg_line(cg, "const int32_t za = (int32_t)X%d[0];", q.xza);
	if (q.zb == QP_SCALAR)
		cg_line(cg, "const int32_t zb = (int32_t)X%d[0];", q.xzb);
	double work = (double)q.nbatch * (double)q.M * (double)q.N * (double)q.K;
	if (q.ql) {
		cg_line(cg, "const double zy = (double)X7[0];");
		if (q.sa == QP_SCALAR && q.sb == QP_SCALAR) {
			char m2[600];
			mult_expr(cg, q.sdt, 1, "0", 4, "0", 6, m2, sizeof(m2));
			cg_line(cg, "const double mult = %s;", m2);
		}
	}
	if (work >= QMM_PAR_MIN && tasks > 1) {
		cg->par_n = tasks;
		cg->par_grain = 1;
		line_open(cg, "for (int64_t t = lo; t < hi; t++) {");
	} else {
		char b[128];
		snprintf(b, sizeof(b), "for (int64_t t = 0; t < %lld; t++) {", (long long)tasks);
		line_open(cg, b);
	}
	cg_line(cg, "const size_t r0 = (size_t)(t / %lld %% %lld) * %d, j0 = (size_t)(t %% %lld) * %lld;",
	        (long long)CB, (long long)RG, QMM_MR, (long long)CB, (long long)q.W);
	const char *ca = cg_ctype(q.ta), *cb = cg_ctype(q.tb), *cy = cg_ctype(q.ty);
	if (q.nbatch > 1) {
		cg_line(cg, "int64_t rem = t / %lld, ao = 0, bo = 0, ix;", (long long)(RG * CB));
		for (int i = q.nbd - 1; i >= 0; i--) {
			cg_line(cg, "ix = rem %% %lld;", (long long)q.bd[i]);
			if (i)
				cg_line(cg, "rem /= %lld;", (long long)q.bd[i]);
			if (q.bsa[i])
				cg_line(cg, "ao += ix * %lld;", (long long)q.bsa[i]);
			if (q.bsb[i])
				cg_line(cg, "bo += ix * %lld;", (long long)q.bsb[i]);
		}
		cg_line(cg, "const %s *restrict a = X%d + ao;", ca, q.xa);
		cg_line(cg, "const %s *restrict b = X%d + bo;", cb, q.xb);
		cg_line(cg, "%s *restrict y = Y0 + t / %lld * %lld;", cy, (long long)(RG * CB),
		        (long long)(q.M * q.N));
	} else {
		cg_line(cg, "const %s *restrict a = X%d;", ca, q.xa);
		cg_line(cg, "const %s *restrict b = X%d;", cb, q.xb);
		cg_line(cg, "%s *restrict y = Y0;", cy);
	}
	if (q.WT) {
		char b[128];
		snprintf(b, sizeof(b), "if (j0 + %lld <= %lld) {", (long long)q.W, (long long)q.N);
		line_open(cg, b);
		qmm_rows(cg, &q, q.W);
		line_close(cg);
		line_open(cg, "else {");
		qmm_rows(cg, &q, q.WT);
		line_close(cg);
	} else {
		qmm_rows(cg, &q, q.W);
	}
	line_close(cg);
	return RL_OK;
}

/* ---- ConvInteger / QLinearConv ------------------------------------------ */

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

static enum rl_status emit_qconv(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	bool ql = n->op == RL_OP_QLinearConv;
	int xw = ql ? 3 : 1, xzx = 2, xzw = ql ? 5 : 3;
	const struct rl_value *X = cg_in(cg, node, 0), *Wv = cg_in(cg, node, xw);
	const struct rl_value *Y = cg_out(cg, node, 0);
	const struct rl_shape *sx = &X->shape, *sw = &Wv->shape, *sy = &Y->shape;
	int nsp = sx->rank - 2;
	if (nsp < 1 || sw->rank != sx->rank || sy->rank != sx->rank)
		return cg_error(cg, node, "input, weight and output must have the same rank >= 3");
	int64_t N = sx->d[0].v, C = sx->d[1].v, M = sy->d[1].v;
	int64_t G = rl_node_attr_int(n, "group", 1);
	if (G < 1 || C % G || M % G)
		return cg_error(cg, node, "group %lld does not divide the channels", (long long)G);
	int64_t in[RL_MAX_RANK], out[RL_MAX_RANK], k[RL_MAX_RANK], s[RL_MAX_RANK], d[RL_MAX_RANK];
	int64_t pads[2 * RL_MAX_RANK], pb[RL_MAX_RANK];
	if (!read_ints(n, "strides", nsp, 1, s) || !read_ints(n, "dilations", nsp, 1, d) ||
	    !read_ints(n, "pads", 2 * nsp, 0, pads))
		return cg_error(cg, node, "a window attribute has the wrong number of entries");
	const char *ap = rl_node_attr_str(n, "auto_pad", "NOTSET");
	bool su = strcmp(ap, "SAME_UPPER") == 0, sl = strcmp(ap, "SAME_LOWER") == 0;
	bool valid = strcmp(ap, "VALID") == 0;
	int64_t is = 1, os = 1, ks = 1;
	for (int i = 0; i < nsp; i++) {
		in[i] = sx->d[2 + i].v;
		out[i] = sy->d[2 + i].v;
		k[i] = sw->d[2 + i].v;
		if (s[i] < 1 || d[i] < 1)
			return cg_error(cg, node, "strides and dilations must be >= 1");
		int64_t ek = (k[i] - 1) * d[i] + 1;
		if (su || sl) {
			int64_t tot = (out[i] - 1) * s[i] + ek - in[i];
			tot = tot < 0 ? 0 : tot;
			pb[i] = su ? tot / 2 : tot - tot / 2;
		} else {
			pb[i] = valid ? 0 : pads[i];
		}
		is *= in[i];
		os *= out[i];
		ks *= k[i];
	}
	int64_t CG = C / G, MG = M / G;
	enum qparam zx, zw, sws = QP_SCALAR;
	struct qmm q; /* for qparam_expr */
	memset(&q, 0, sizeof(q));
	bool ok = qparam_of(cg_in(cg, node, xzx), -1, -1, &zx) &&
	          qparam_of(cg_in(cg, node, xzw), M, -1, &zw);
	const struct rl_value *Bv = ql ? cg_in(cg, node, 8) : NULL;
	enum rl_dtype sdt = RL_DT_FLOAT;
	if (ql) {
		const struct rl_value *SX = cg_in(cg, node, 1), *SW = cg_in(cg, node, 4);
		sdt = SX->dtype;
		ok = ok && rl_shape_numel(&SX->shape) == 1 && qparam_of(SW, M, -1, &sws) &&
		     rl_shape_numel(&cg_in(cg, node, 6)->shape) == 1 &&
		     rl_shape_numel(&cg_in(cg, node, 7)->shape) == 1 && SW->dtype == sdt &&
		     cg_in(cg, node, 6)->dtype == sdt && sws != QP_NONE &&
		     (!Bv || rl_shape_numel(&Bv->shape) == M);
	}
	if (!ok)
		return cg_error(cg, node, "zero points and scales must be scalars, or 1-D per output "
		                "channel for the weight");
	if (rl_shape_numel(sy) == 0)
		return RL_OK;
	cg_line(cg, "/* %s, gather form: int32 sums of (x - x_zero_point)(w - w_zero_point)%s */",
	        rl_op_table[n->op].name, ql ? ", requantized to the output's scale" : "");
	char zxe[64], zwe[64], b[512];
	qparam_expr(&q, zx, xzx, "0", zxe, sizeof(zxe), true);
	qparam_expr(&q, zw, xzw, "mo", zwe, sizeof(zwe), true);
	cg_line(cg, "const int32_t zx = %s;", zxe);
	if (ql)
		cg_line(cg, "const double zy = (double)X7[0];");
	snprintf(b, sizeof(b), "for (size_t n = 0; n < %lld; n++) {", (long long)N);
	line_open(cg, b);
	snprintf(b, sizeof(b), "for (size_t mo = 0; mo < %lld; mo++) {", (long long)M);
	line_open(cg, b);
	cg_line(cg, "const size_t g = mo / %lld;", (long long)MG);
	cg_line(cg, "const int32_t zw = %s;", zwe);
	if (ql) {
		char m2[600];
		mult_expr(cg, sdt, 1, "0", 4, sws == QP_VEC ? "mo" : "0", 6, m2, sizeof(m2));
		cg_line(cg, "const double m = %s;", m2);
	}
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t o%d = 0; o%d < %lld; o%d++) {", i, i, (long long)out[i], i);
		cg->indent++;
	}
	cg_line(cg, "uint32_t acc = %s;", Bv ? "(uint32_t)X8[mo]" : "0");
	snprintf(b, sizeof(b), "for (size_t c = 0; c < %lld; c++) {", (long long)CG);
	line_open(cg, b);
	cg_line(cg, "const %s *restrict wk = X%d + (mo * %lld + c) * %lld;", cg_ctype(Wv->dtype), xw,
	        (long long)CG, (long long)ks);
	cg_line(cg, "const %s *restrict xc = X0 + (n * %lld + g * %lld + c) * %lld;",
	        cg_ctype(X->dtype), (long long)C, (long long)CG, (long long)is);
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t k%d = 0; k%d < %lld; k%d++) {", i, i, (long long)k[i], i);
		cg->indent++;
		cg_line(cg, "const long long x%d = (long long)(o%d * %lld + k%d * %lld) - %lld;", i, i,
		        (long long)s[i], i, (long long)d[i], (long long)pb[i]);
		cg_line(cg, "if (x%d < 0 || x%d >= %lld)", i, i, (long long)in[i]);
		cg_line(cg, "    continue;");
	}
	char xi[512] = "", ki[512] = "";
	size_t lx = 0, lk = 0;
	for (int i = 0; i < nsp; i++) {
		int64_t stx = 1, stk = 1;
		for (int j = i + 1; j < nsp; j++) {
			stx *= in[j];
			stk *= k[j];
		}
		lx += (size_t)snprintf(xi + lx, sizeof(xi) - lx, "%s(size_t)x%d * %lld", i ? " + " : "", i,
		                       (long long)stx);
		lk += (size_t)snprintf(ki + lk, sizeof(ki) - lk, "%sk%d * %lld", i ? " + " : "", i,
		                       (long long)stk);
	}
	cg_line(cg, "acc += (uint32_t)(((int32_t)xc[%s] - zx) * ((int32_t)wk[%s] - zw));", xi, ki);
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	line_close(cg); /* c */
	char oi[512] = "";
	size_t lo = 0;
	for (int i = 0; i < nsp; i++) {
		int64_t st = 1;
		for (int j = i + 1; j < nsp; j++)
			st *= out[j];
		lo += (size_t)snprintf(oi + lo, sizeof(oi) - lo, " + o%d * %lld", i, (long long)st);
	}
	snprintf(b, sizeof(b), "Y0[(n * %lld + mo) * %lld%s]", (long long)M, (long long)os, oi);
	if (!ql) {
		cg_line(cg, "%s = (int32_t)acc;", b);
	} else {
		line_open(cg, "{");
		requant(cg, Y->dtype, b, "acc", "m");
		line_close(cg);
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	line_close(cg); /* mo */
	line_close(cg); /* n */
	return RL_OK;
}

enum rl_status rl_emit_c_quant(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_QuantizeLinear: case RL_OP_DequantizeLinear: return emit_qdq(cg, node);
	case RL_OP_DynamicQuantizeLinear: return emit_dynq(cg, node);
	case RL_OP_MatMulInteger: case RL_OP_QLinearMatMul: return emit_qmm(cg, node);
	case RL_OP_ConvInteger: case RL_OP_QLinearConv: return emit_qconv(cg, node);
	default: return cg_error(cg, node, "not a quantization operator");
	}
}
