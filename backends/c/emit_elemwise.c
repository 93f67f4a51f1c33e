/*
 * emit_elemwise.c - C kernels for the elementwise family: unary math and
 * activations, casts, binary arithmetic/comparison/logic with numpy
 * broadcasting, the variadic Min/Max/Sum/Mean and Where.
 *
 * Every kernel is one loop nest over the output (cg_bcast_open merges
 * contiguous dims, so a same-shape op is a single loop). Float32 unary,
 * binary, variadic and Clip kernels whose operands are contiguous, scalar or
 * broadcast along rows/columns go through the fused group's vector loop
 * instead (cg_elemwise_vec_single, emit_fused.c): RL_VW lanes per step with
 * the vector expression table at the end of this file (cg_elemwise_vexpr,
 * on the vector math of emit_math.c), threads over the outer loop, and
 * the scalar table under `#else`.
 * Each element is loaded into its compute type (float for float16, bfloat16
 * and float32, double for float64, the integer type itself otherwise), the
 * op is applied to the locals `a` (and `b`), and the result is converted to
 * the output's storage type.
 *
 * Numerics follow the ONNX reference implementation (onnx/reference/ops):
 * - NaN propagates through Min/Max/Relu/Clip/HardSigmoid like numpy's
 *   minimum/maximum/clip, so comparisons are written to keep a NaN operand;
 * - integer Div truncates toward zero, integer Mod (fmod=0) takes the sign
 *   of the divisor like Python, and a zero divisor gives 0 instead of a trap;
 * - signed integer Add/Sub/Mul/Neg wrap like numpy (computed in unsigned);
 * - Pow's result has the base's dtype (np.power(a, b).astype(a.dtype));
 * - Cast from a float to an integer truncates like numpy's astype (narrow
 *   integers go through int32/int64 so out-of-range values wrap, not trap).
 */
#include "emit_impl.h"
#include "emit_lowp.h"
#include "scalar.h"

#include <math.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

/* Rotating buffers for expressions built here (cg_load/cg_store have their
 * own; expressions nest at most a few deep). */
static char *ebuf(void)
{
	static char bufs[8][1024];
	static int k;
	k = (k + 1) % 8;
	return bufs[k];
}

/* libm name for the compute type of dt: "expf" for float, "exp" for double */
static const char *mf(enum rl_dtype dt, const char *name)
{
	char *b = ebuf();
	snprintf(b, 1024, "%s%s", name, dt == RL_DT_DOUBLE ? "" : "f");
	return b;
}

/* Literal in the compute type of a float dtype */
static const char *flit(enum rl_dtype dt, double x)
{
	return cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT, x);
}

static bool is_signed_int(enum rl_dtype t)
{
	return rl_dtype_is_int(t) && rl_dtype_is_signed(t);
}

static bool is_unsigned_int(enum rl_dtype t)
{
	return rl_dtype_is_int(t) && !rl_dtype_is_signed(t);
}

/* Unsigned type wide enough to do wrapping integer arithmetic for t. */
static const char *wrap_type(enum rl_dtype t)
{
	return rl_dtype_size(t) == 8 ? "uint64_t" : "uint32_t";
}

/* Exact C literal for an integer constant of dtype t. */
static const char *ilit(enum rl_dtype t, int64_t x)
{
	char *b = ebuf();
	if (t == RL_DT_UINT64)
		snprintf(b, 1024, "UINT64_C(%llu)", (unsigned long long)x);
	else if (t == RL_DT_INT64 && x == INT64_MIN)
		snprintf(b, 1024, "INT64_MIN");
	else if (t == RL_DT_INT64)
		snprintf(b, 1024, "INT64_C(%lld)", (long long)x);
	else if (t == RL_DT_UINT32)
		snprintf(b, 1024, "%lluu", (unsigned long long)(uint32_t)x);
	else if (t == RL_DT_INT32 && x == INT32_MIN)
		snprintf(b, 1024, "INT32_MIN");
	else
		snprintf(b, 1024, "%lld", (long long)x);
	return b;
}

/* Literal for element 0 of constant value v, in the compute type of dt. */
static const char *const_lit(struct rl_cgen *cg, uint32_t v, enum rl_dtype dt)
{
	if (rl_dtype_is_float(dt))
		return flit(dt, rl_value_get_float(cg->g, v, 0));
	return ilit(dt, rl_value_get_int(cg->g, v, 0));
}

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

/* Open `for (size_t o = 0; o < n; o++) {` over a flat tensor. */
static void flat_open(struct rl_cgen *cg, int64_t n)
{
	cg_line(cg, "for (size_t o = 0; o < %lld; o++) {", (long long)n);
	cg->indent++;
}

static void block_close(struct rl_cgen *cg)
{
	cg->indent--;
	cg_line(cg, "}");
}

/* ---- unary ops ---------------------------------------------------------- */

/* Unary ops the scalar table defines for floats only: no I or B in their
 * ir/scalar.def row (ir/scalar.c mirrors the expressions below). */
static bool float_only(enum rl_op op)
{
	const struct rl_scalar_info *si = rl_scalar_info(op);
	return si && !(si->flags & (RL_SCF_I | RL_SCF_B));
}

/* Unary ops that are one libm call in the compute type: "sqrt" is sqrtf for
 * float, float16 and bfloat16, sqrt for double. Round is half to even, the
 * default rounding mode's nearbyint. */
static const struct {
	enum rl_op op;
	const char *fn;
} libm_unary[] = {
	{RL_OP_Sqrt, "sqrt"},   {RL_OP_Exp, "exp"},     {RL_OP_Log, "log"},
	{RL_OP_Sin, "sin"},     {RL_OP_Cos, "cos"},     {RL_OP_Tan, "tan"},
	{RL_OP_Asin, "asin"},   {RL_OP_Acos, "acos"},   {RL_OP_Atan, "atan"},
	{RL_OP_Sinh, "sinh"},   {RL_OP_Cosh, "cosh"},   {RL_OP_Asinh, "asinh"},
	{RL_OP_Acosh, "acosh"}, {RL_OP_Atanh, "atanh"},
	{RL_OP_Floor, "floor"}, {RL_OP_Ceil, "ceil"},   {RL_OP_Round, "nearbyint"},
};

/* tanh and erf in the compute type: for float the vectorizable rational
 * approximations of ir/approx.h the driver emits as rl_tanhf and rl_erff
 * (within 6 and 7 ulp; libm's are calls that keep a loop from vectorizing),
 * libm's for double. */
static const char *tanh_fn(struct rl_cgen *cg, enum rl_dtype dt)
{
	if (dt == RL_DT_DOUBLE)
		return "tanh";
	cg->need_tanh = 1;
	return "rl_tanhf";
}

static const char *erf_fn(struct rl_cgen *cg, enum rl_dtype dt)
{
	if (dt == RL_DT_DOUBLE)
		return "erf";
	cg->need_erf = 1;
	return "rl_erff";
}

/*
 * Write into e the expression for unary op n on `a`, an expression in the
 * compute type of dt (an identifier or literal: it may be used twice).
 * Statements it needs first (temporaries, named with `tag` appended) are
 * written with cg_line. Returns false (with *why set) for a dtype or
 * attribute not handled.
 */
static bool unary_expr(struct rl_cgen *cg, const struct rl_node *n, enum rl_dtype dt,
                       const char *a, const char *tag, char *e, size_t len, const char **why)
{
	const char *ct = cg_comptype(dt);
	bool isf = rl_dtype_is_float(dt);
#define L(x) flit(dt, (x))
#define ATTR(name, def) rl_node_attr_float(n, name, def)
	if (float_only(n->op) && !isf) {
		*why = "defined for floating-point inputs only";
		return false;
	}
	for (size_t i = 0; i < sizeof(libm_unary) / sizeof(libm_unary[0]); i++) {
		if (libm_unary[i].op == n->op) {
			snprintf(e, len, "%s(%s)", mf(dt, libm_unary[i].fn), a);
			return true;
		}
	}
	switch (n->op) {
	case RL_OP_Identity:
		snprintf(e, len, "%s", a);
		return true;
	case RL_OP_Abs:
		if (isf)
			snprintf(e, len, "%s(%s)", mf(dt, "fabs"), a);
		else if (is_signed_int(dt))
			snprintf(e, len, "%s < 0 ? (%s)0 - (%s)%s : (%s)%s", a, wrap_type(dt),
			         wrap_type(dt), a, wrap_type(dt), a);
		else
			snprintf(e, len, "%s", a);
		return true;
	case RL_OP_Neg:
		if (isf)
			snprintf(e, len, "-%s", a);
		else if (is_signed_int(dt))
			snprintf(e, len, "(%s)0 - (%s)%s", wrap_type(dt), wrap_type(dt), a);
		else {
			*why = "defined for signed inputs only";
			return false;
		}
		return true;
	case RL_OP_Tanh: snprintf(e, len, "%s(%s)", tanh_fn(cg, dt), a); return true;
	case RL_OP_Erf: snprintf(e, len, "%s(%s)", erf_fn(cg, dt), a); return true;
	case RL_OP_Reciprocal: snprintf(e, len, "%s / %s", L(1), a); return true;
	case RL_OP_Sigmoid:
		snprintf(e, len, "%s / (%s + %s(-%s))", L(1), L(1), mf(dt, "exp"), a);
		return true;
	case RL_OP_Relu: /* a < 0 keeps a NaN, like np.maximum */
		if (isf)
			snprintf(e, len, "%s < %s ? %s : %s", a, L(0), L(0), a);
		else if (is_signed_int(dt))
			snprintf(e, len, "%s < 0 ? 0 : %s", a, a);
		else
			snprintf(e, len, "%s", a);
		return true;
	case RL_OP_LeakyRelu:
		snprintf(e, len, "%s > %s ? %s : %s * %s", a, L(0), a, L(ATTR("alpha", 0.01)), a);
		return true;
	case RL_OP_ThresholdedRelu:
		snprintf(e, len, "%s > %s ? %s : %s", a, L(ATTR("alpha", 1.0)), a, L(0));
		return true;
	case RL_OP_Elu:
		snprintf(e, len, "%s > %s ? %s : %s * %s(%s)", a, L(0), a, L(ATTR("alpha", 1.0)),
		         mf(dt, "expm1"), a);
		return true;
	case RL_OP_Selu: {
		double alpha = ATTR("alpha", 1.67326319217681884765625);
		double gamma = ATTR("gamma", 1.05070102214813232421875);
		snprintf(e, len, "%s > %s ? %s * %s : %s * (%s * %s(%s) - %s)", a, L(0), L(gamma), a,
		         L(gamma), L(alpha), mf(dt, "exp"), a, L(alpha));
		return true;
	}
	case RL_OP_Celu: {
		/* max(0,a) + min(0, alpha*(exp(a/alpha)-1)): one of the two is 0 */
		double alpha = ATTR("alpha", 1.0);
		snprintf(e, len, "%s > %s ? %s : %s * %s(%s / %s)", a, L(0), a, L(alpha),
		         mf(dt, "expm1"), a, L(alpha));
		return true;
	}
	case RL_OP_HardSigmoid:
		cg_line(cg, "const %s t%s = %s * %s + %s;", ct, tag, L(ATTR("alpha", 0.2)), a,
		        L(ATTR("beta", 0.5)));
		snprintf(e, len, "t%s < %s ? %s : (t%s > %s ? %s : t%s)", tag, L(0), L(0), tag, L(1),
		         L(1), tag);
		return true;
	case RL_OP_HardSwish:
		cg_line(cg, "const %s t%s = %s / %s + %s;", ct, tag, a, L(6), L(0.5));
		snprintf(e, len, "%s * (t%s < %s ? %s : (t%s > %s ? %s : t%s))", a, tag, L(0), L(0), tag,
		         L(1), L(1), tag);
		return true;
	case RL_OP_Softplus: /* log(1 + exp(a)) without overflow */
		snprintf(e, len, "%s > %s ? %s + %s(%s(-%s)) : %s(%s(%s))", a, L(0), a,
		         mf(dt, "log1p"), mf(dt, "exp"), a, mf(dt, "log1p"), mf(dt, "exp"), a);
		return true;
	case RL_OP_Softsign:
		snprintf(e, len, "%s / (%s + %s(%s))", a, L(1), mf(dt, "fabs"), a);
		return true;
	case RL_OP_Mish: /* a * tanh(softplus(a)) */
		cg_line(cg, "const %s sp%s = %s > %s ? %s + %s(%s(-%s)) : %s(%s(%s));", ct, tag, a,
		        L(0), a, mf(dt, "log1p"), mf(dt, "exp"), a, mf(dt, "log1p"), mf(dt, "exp"), a);
		snprintf(e, len, "%s * %s(sp%s)", a, mf(dt, "tanh"), tag);
		return true;
	case RL_OP_Gelu: {
		const char *ap = rl_node_attr_str(n, "approximate", "none");
		if (strcmp(ap, "none") == 0) {
			snprintf(e, len, "%s * %s * (%s + %s(%s * %s))", L(0.5), a, L(1), erf_fn(cg, dt), a,
			         L(0.70710678118654752440));
		} else if (strcmp(ap, "tanh") == 0) {
			snprintf(e, len, "%s * %s * (%s + %s(%s * (%s + %s * %s * %s * %s)))", L(0.5), a,
			         L(1), mf(dt, "tanh"), L(0.79788456080286535588), a, L(0.044715), a, a, a);
		} else {
			*why = "approximate must be 'none' or 'tanh'";
			return false;
		}
		return true;
	}
	case RL_OP_Sign:
		if (isf) /* NaN stays NaN, like np.sign */
			snprintf(e, len, "%s > %s ? %s : (%s < %s ? %s : %s)", a, L(0), L(1), a, L(0),
			         L(-1), a);
		else if (is_signed_int(dt))
			snprintf(e, len, "(%s > 0) - (%s < 0)", a, a);
		else
			snprintf(e, len, "%s > 0", a);
		return true;
	case RL_OP_IsNaN:
		snprintf(e, len, "isnan(%s)", a);
		return true;
	case RL_OP_IsInf: {
		bool pos = rl_node_attr_int(n, "detect_positive", 1) != 0;
		bool neg = rl_node_attr_int(n, "detect_negative", 1) != 0;
		if (pos && neg)
			snprintf(e, len, "isinf(%s)", a);
		else if (pos)
			snprintf(e, len, "%s == INFINITY", a);
		else if (neg)
			snprintf(e, len, "%s == -INFINITY", a);
		else
			snprintf(e, len, "0");
		return true;
	}
	case RL_OP_Not:
		if (dt != RL_DT_BOOL) {
			*why = "defined for bool inputs only";
			return false;
		}
		snprintf(e, len, "!%s", a);
		return true;
	case RL_OP_BitwiseNot:
		if (!rl_dtype_is_int(dt)) {
			*why = "defined for integer inputs only";
			return false;
		}
		snprintf(e, len, "~%s", a);
		return true;
	case RL_OP_Shrink: {
		double lambd = ATTR("lambd", 0.5), bias = ATTR("bias", 0.0);
		if (isf) {
			snprintf(e, len, "%s < %s ? %s + %s : (%s > %s ? %s - %s : %s)", a, L(-lambd), a,
			         L(bias), a, L(lambd), a, L(bias), L(0));
		} else {
			/* integers: computed in double, truncated back like astype */
			cg_line(cg, "const double t%s = (double)%s;", tag, a);
			snprintf(e, len, "t%s < %s ? t%s + %s : (t%s > %s ? t%s - %s : 0.0)", tag,
			         cg_lit(RL_DT_DOUBLE, -lambd), tag, cg_lit(RL_DT_DOUBLE, bias), tag,
			         cg_lit(RL_DT_DOUBLE, lambd), tag, cg_lit(RL_DT_DOUBLE, bias));
		}
		return true;
	}
	default:
		*why = "not a unary op";
		return false;
	}
#undef L
#undef ATTR
}

static enum rl_status emit_unary(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	char e[1024];
	const char *why = NULL;
	int64_t ne = numel(y);
	cg_line(cg, "/* %s, elementwise over %lld values */", rl_op_table[n->op].name,
	        (long long)ne);
	if (ne == 0)
		return RL_OK;
	enum rl_status vst;
	if (cg_elemwise_vec_single(cg, node, &vst))
		return vst;
	flat_open(cg, ne);
	cg_line(cg, "const %s a = %s;", cg_comptype(x->dtype), cg_load(cg, x->dtype, "X0[o]"));
	if (!unary_expr(cg, n, x->dtype, "a", "", e, sizeof(e), &why))
		return cg_error(cg, node, "%s on %s: %s", rl_op_table[n->op].name,
		                rl_dtype_name(x->dtype), why);
	cg_line(cg, "Y0[o] = %s;", cg_assign(cg, y->dtype, e));
	block_close(cg);
	return RL_OK;
}

/* ---- copies: Identity, Dropout (inference) ------------------------------ */

static void emit_copy(struct rl_cgen *cg, const struct rl_value *y)
{
	if (y->nbytes || numel(y) > 0)
		cg_line(cg, "memcpy(Y0, X0, %zu);",
		        (size_t)numel(y) * rl_dtype_size(y->dtype));
}

/* Y = X and, when asked for, a mask of ones (bool, or T before opset 10). */
static void dropout_identity(struct rl_cgen *cg, const struct rl_value *y,
                             const struct rl_value *mask)
{
	emit_copy(cg, y);
	if (mask && numel(mask) > 0) {
		int64_t ne = numel(mask);
		if (rl_dtype_size(mask->dtype) == 1) {
			cg_line(cg, "memset(Y1, 1, %lld);", (long long)ne);
		} else {
			flat_open(cg, ne);
			cg_line(cg, "Y1[o] = %s;", cg_assign(cg, mask->dtype, flit(mask->dtype, 1)));
			block_close(cg);
		}
	}
}

/*
 * Dropout. At inference (no training_mode, or a constant false, or a
 * constant ratio of 0) it is a copy. When training_mode may be true at run
 * time, the kernel checks it and the ratio, and drops values with a
 * splitmix64 generator seeded from the `seed` attribute: a valid random
 * mask, though not numpy's.
 */
static enum rl_status emit_dropout(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	const struct rl_value *y = cg_out(cg, node, 0), *mask = cg_out(cg, node, 1);
	uint32_t ratio = rl_node_in(n, 1), train = rl_node_in(n, 2);
	bool training = false;
	if (n->opset >= 12 && train != RL_NONE) {
		training = !rl_value_is_const(cg->g, train) || rl_value_get_int(cg->g, train, 0) != 0;
		if (ratio != RL_NONE && rl_value_is_const(cg->g, ratio) &&
		    rl_value_get_float(cg->g, ratio, 0) == 0.0)
			training = false;
	}
	if (!training) {
		cg_line(cg, "/* Dropout at inference: Y = X%s */", mask ? ", mask all true" : "");
		dropout_identity(cg, y, mask);
		return RL_OK;
	}
	if (!rl_dtype_is_float(x->dtype) || (mask && mask->dtype != RL_DT_BOOL))
		return cg_error(cg, node, "Dropout in training mode on %s is not supported",
		                rl_dtype_name(x->dtype));
	int64_t ne = numel(y);
	const char *ct = cg_comptype(x->dtype);
	cg_line(cg, "/* Dropout: a copy unless training_mode is true and ratio > 0; then");
	cg_line(cg, " * Y = mask * X / (1 - ratio) with a splitmix64 mask */");
	const struct rl_value *rv = ratio == RL_NONE ? NULL : &cg->g->values[ratio];
	if (!rv)
		cg_line(cg, "const float ratio = 0.5f;");
	else if (rl_value_is_const(cg->g, ratio))
		cg_line(cg, "const float ratio = %s;",
		        flit(RL_DT_FLOAT, rl_value_get_float(cg->g, ratio, 0)));
	else
		cg_line(cg, "const float ratio = (float)%s;", cg_load(cg, rv->dtype, "X1[0]"));
	if (rl_value_is_const(cg->g, train))
		cg_line(cg, "const int training = 1;");
	else
		cg_line(cg, "const int training = X2[0] != 0;");
	cg_line(cg, "if (!training || ratio == 0.0f) {");
	cg->indent++;
	dropout_identity(cg, y, mask);
	cg_line(cg, "return;");
	block_close(cg);
	if (ne == 0)
		return RL_OK;
	cg_line(cg, "static uint64_t state = UINT64_C(%llu);",
	        (unsigned long long)rl_node_attr_int(n, "seed", 0));
	cg_line(cg, "const %s scale = %s / (%s - (%s)ratio);", ct, flit(x->dtype, 1),
	        flit(x->dtype, 1), ct);
	flat_open(cg, ne);
	cg_line(cg, "uint64_t z = (state += UINT64_C(0x9e3779b97f4a7c15));");
	cg_line(cg, "z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);");
	cg_line(cg, "z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);");
	cg_line(cg, "z ^= z >> 31;");
	cg_line(cg, "const int keep = (float)(z >> 40) * 0x1p-24f >= ratio;");
	cg_line(cg, "const %s a = %s;", ct, cg_load(cg, x->dtype, "X0[o]"));
	cg_line(cg, "Y0[o] = %s;", cg_assign(cg, y->dtype, "keep ? a * scale : 0"));
	if (mask)
		cg_line(cg, "Y1[o] = (uint8_t)keep;");
	block_close(cg);
	return RL_OK;
}

/* ---- Cast / CastLike ---------------------------------------------------- */

/* Expression converting `v`, an expression in the compute type of `from`,
 * to the storage of dtype `to`. */
static const char *cast_comp(struct rl_cgen *cg, enum rl_dtype from, enum rl_dtype to,
                             const char *v)
{
	char *b = ebuf();
	if (to == RL_DT_FLOAT16 || to == RL_DT_BFLOAT16) {
		char t[1024];
		snprintf(t, sizeof(t), "(float)%s", v);
		snprintf(b, 1024, "%s", cg_store(cg, to, from == RL_DT_FLOAT || from == RL_DT_FLOAT16 ||
		                                          from == RL_DT_BFLOAT16 ? v : t));
	} else if (rl_dtype_is_int(to) && rl_dtype_is_float(from)) {
		/* truncation toward zero; narrow types through a wider signed
		 * integer so out-of-range values wrap as numpy's astype does */
		size_t sz = rl_dtype_size(to);
		if (sz <= 2)
			snprintf(b, 1024, "(%s)(int32_t)%s", cg_ctype(to), v);
		else if (to == RL_DT_UINT32)
			snprintf(b, 1024, "(uint32_t)(int64_t)%s", v);
		else
			snprintf(b, 1024, "(%s)%s", cg_ctype(to), v);
	} else if ((to == RL_DT_FLOAT || to == RL_DT_DOUBLE) && strcmp(cg_comptype(from), cg_ctype(to)) == 0) {
		snprintf(b, 1024, "%s", v); /* float16 -> float: rl_h2f gave a float already */
	} else {
		snprintf(b, 1024, "%s", cg_store(cg, to, v));
	}
	return b;
}

/* Expression converting element expression `x` (storage) of dtype `from` to
 * the storage of dtype `to`. */
static const char *cast_expr(struct rl_cgen *cg, enum rl_dtype from, enum rl_dtype to,
                             const char *x)
{
	if (from == to) {
		char *b = ebuf();
		snprintf(b, 1024, "%s", x);
		return b;
	}
	return cast_comp(cg, from, to, cg_load(cg, from, x));
}

/* Target dtype of a Cast/CastLike node; RL_DT_UNDEFINED (with *why) if the
 * C backend cannot compute it. */
static enum rl_dtype cast_target(struct rl_cgen *cg, uint32_t node, const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype to = y->dtype;
	if (n->op == RL_OP_Cast) {
		int64_t t = rl_node_attr_int(n, "to", (int64_t)y->dtype);
		if (t <= 0 || t >= RL_DT_COUNT_ || !rl_dtype_is_numeric((enum rl_dtype)t)) {
			*why = "target dtype not supported";
			return RL_DT_UNDEFINED;
		}
		to = (enum rl_dtype)t;
	}
	if (!rl_dtype_is_numeric(x->dtype) || !rl_dtype_is_numeric(to) || to != y->dtype) {
		*why = "dtype combination not supported";
		return RL_DT_UNDEFINED;
	}
	return to;
}

static enum rl_status emit_cast(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype to = y->dtype;
	if (n->op == RL_OP_Cast) {
		int64_t t = rl_node_attr_int(n, "to", (int64_t)y->dtype);
		if (t <= 0 || t >= RL_DT_COUNT_ || !rl_dtype_is_numeric((enum rl_dtype)t))
			return cg_error(cg, node, "Cast to ONNX dtype %lld is not supported",
			                (long long)t);
		to = (enum rl_dtype)t;
	}
	if (!rl_dtype_is_numeric(x->dtype) || !rl_dtype_is_numeric(to) || to != y->dtype)
		return cg_error(cg, node, "%s from %s to %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(x->dtype), rl_dtype_name(to));
	int64_t ne = numel(y);
	cg_line(cg, "/* %s %s -> %s */", rl_op_table[n->op].name, rl_dtype_name(x->dtype),
	        rl_dtype_name(to));
	if (x->dtype == to) {
		emit_copy(cg, y);
		return RL_OK;
	}
	if (ne == 0)
		return RL_OK;
	flat_open(cg, ne);
	cg_line(cg, "Y0[o] = %s;", cast_expr(cg, x->dtype, to, "X0[o]"));
	block_close(cg);
	return RL_OK;
}

/* ---- Clip --------------------------------------------------------------- */

/*
 * The bounds of a Clip node: for opset < 11 literals from the attributes
 * written to lo/hi (empty when absent), from opset 11 the present inputs 1
 * and 2 (*has_lo and *has_hi; lo and hi are left to the caller). False with *why for a
 * dtype or bound that is not handled.
 */
static bool clip_bounds(struct rl_cgen *cg, const struct rl_node *n, enum rl_dtype dt,
                        char *lo, char *hi, size_t len, bool *has_lo, bool *has_hi,
                        const char **why)
{
	*has_lo = *has_hi = false;
	lo[0] = hi[0] = 0;
	if (!rl_dtype_is_float(dt) && !rl_dtype_is_int(dt)) {
		*why = "dtype not supported";
		return false;
	}
	if (n->opset < 11) {
		const struct rl_attr *alo = rl_node_attr(n, "min"), *ahi = rl_node_attr(n, "max");
		if (!rl_dtype_is_float(dt)) {
			*why = "Clip before opset 11 is defined for floats only";
			return false;
		}
		if (alo) {
			snprintf(lo, len, "%s", flit(dt, alo->f));
			*has_lo = true;
		}
		if (ahi) {
			snprintf(hi, len, "%s", flit(dt, ahi->f));
			*has_hi = true;
		}
		return true;
	}
	for (int k = 1; k <= 2; k++) {
		uint32_t v = rl_node_in(n, k);
		if (v == RL_NONE)
			continue;
		const struct rl_value *val = &cg->g->values[v];
		if (val->dtype != dt) {
			*why = k == 1 ? "min has another dtype than the input"
			              : "max has another dtype than the input";
			return false;
		}
		if (numel(val) != 1) {
			*why = k == 1 ? "min must be a scalar" : "max must be a scalar";
			return false;
		}
		*(k == 1 ? has_lo : has_hi) = true;
	}
	return true;
}

/* min(max(a, lo), hi) with either bound optional (NULL); a NaN passes
 * through because each comparison is false for it. */
static void clip_expr(struct rl_cgen *cg, enum rl_dtype dt, const char *a, const char *lo,
                      const char *hi, const char *tag, char *e, size_t len)
{
	if (lo && hi) {
		cg_line(cg, "const %s c%s = %s < %s ? %s : %s;", cg_comptype(dt), tag, a, lo, lo, a);
		snprintf(e, len, "c%s > %s ? %s : c%s", tag, hi, hi, tag);
	} else if (lo) {
		snprintf(e, len, "%s < %s ? %s : %s", a, lo, lo, a);
	} else if (hi) {
		snprintf(e, len, "%s > %s ? %s : %s", a, hi, hi, a);
	} else {
		snprintf(e, len, "%s", a);
	}
}

static enum rl_status emit_clip(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype dt = x->dtype;
	const char *ct = cg_comptype(dt);
	bool has_lo, has_hi;
	char lo[128], hi[128], e[1024];
	const char *why = NULL;
	int64_t ne = numel(y);
	if (!clip_bounds(cg, n, dt, lo, hi, sizeof(lo), &has_lo, &has_hi, &why))
		return cg_error(cg, node, "Clip on %s: %s", rl_dtype_name(dt), why);
	cg_line(cg, "/* Clip: Y = min(max(X, lo), hi)%s */",
	        rl_dtype_is_float(dt) ? "; a NaN passes through" : "");
	if (ne > 0) {
		enum rl_status vst;
		if (cg_elemwise_vec_single(cg, node, &vst))
			return vst;
	}
	if (n->opset < 11) {
		if (has_lo)
			cg_line(cg, "const %s lo = %s;", ct, lo);
		if (has_hi)
			cg_line(cg, "const %s hi = %s;", ct, hi);
	} else {
		for (int k = 1; k <= 2; k++) {
			uint32_t v = rl_node_in(n, k);
			if (v == RL_NONE)
				continue;
			const char *nm = k == 1 ? "lo" : "hi";
			if (rl_value_is_const(cg->g, v))
				cg_line(cg, "const %s %s = %s;", ct, nm, const_lit(cg, v, dt));
			else
				cg_line(cg, "const %s %s = %s;", ct, nm,
				        cg_load(cg, dt, k == 1 ? "X1[0]" : "X2[0]"));
		}
	}
	if (ne == 0)
		return RL_OK;
	flat_open(cg, ne);
	cg_line(cg, "const %s a = %s;", ct, cg_load(cg, dt, "X0[o]"));
	clip_expr(cg, dt, "a", has_lo ? "lo" : NULL, has_hi ? "hi" : NULL, "", e, sizeof(e));
	cg_line(cg, "Y0[o] = %s;", cg_assign(cg, dt, e));
	block_close(cg);
	return RL_OK;
}

/* ---- binary ops --------------------------------------------------------- */

/* Expression for a + b, a - b or a * b in dtype dt without signed overflow
 * (numpy wraps; C would be undefined). */
static void arith(enum rl_dtype dt, char opch, const char *a, const char *b, char *e, size_t len)
{
	bool wrap = dt == RL_DT_INT32 || dt == RL_DT_INT64 || (opch == '*' && dt == RL_DT_UINT16);
	if (rl_dtype_is_int(dt) && wrap)
		snprintf(e, len, "(%s)%s %c (%s)%s", wrap_type(dt), a, opch, wrap_type(dt), b);
	else
		snprintf(e, len, "%s %c %s", a, opch, b);
}

/*
 * Binary op on `a` (dtype da) and `b` (dtype db), expressions in their
 * compute types (identifiers or literals); the result is stored as dtype
 * dy. May write statements first (temporaries named with `tag` appended).
 * False with *why when the combination is not handled.
 */
static bool binary_expr(struct rl_cgen *cg, const struct rl_node *n, enum rl_dtype da,
                        enum rl_dtype db, enum rl_dtype dy, const char *a, const char *b,
                        const char *tag, char *e, size_t len, const char **why)
{
	bool isf = rl_dtype_is_float(da), isi = rl_dtype_is_int(da);
	const char *ct = cg_comptype(da);
	(void)dy;
	if (n->op != RL_OP_Pow && da != db) {
		*why = "inputs have different dtypes";
		return false;
	}
	switch (n->op) {
	case RL_OP_Add: case RL_OP_Sub: case RL_OP_Mul:
		if (!isf && !isi) {
			*why = "defined for numbers only";
			return false;
		}
		arith(da, n->op == RL_OP_Add ? '+' : n->op == RL_OP_Sub ? '-' : '*', a, b, e, len);
		return true;
	case RL_OP_Div:
		if (isf) {
			snprintf(e, len, "%s / %s", a, b);
		} else if (is_signed_int(da)) {
			/* C truncates toward zero like the reference; b = 0 gives 0,
			 * b = -1 negates with wraparound instead of trapping */
			snprintf(e, len, "%s == 0 ? 0 : (%s == -1 ? (%s)0 - (%s)%s : (%s)(%s / %s))", b, b,
			         wrap_type(da), wrap_type(da), a, wrap_type(da), a, b);
		} else if (isi) {
			snprintf(e, len, "%s == 0 ? 0 : %s / %s", b, a, b);
		} else {
			*why = "defined for numbers only";
			return false;
		}
		return true;
	case RL_OP_Mod: {
		bool fm = rl_node_attr_int(n, "fmod", 0) != 0;
		if (isf) {
			/* the reference uses np.fmod for floats whatever fmod says,
			 * with NaN mapped to 0 when fmod = 0 */
			if (fm) {
				snprintf(e, len, "%s(%s, %s)", mf(da, "fmod"), a, b);
			} else {
				cg_line(cg, "const %s r%s = %s(%s, %s);", ct, tag, mf(da, "fmod"), a, b);
				snprintf(e, len, "isnan(r%s) ? %s : r%s", tag, flit(da, 0), tag);
			}
		} else if (is_signed_int(da)) {
			/* C's % has the dividend's sign (fmod = 1); Python's
			 * (fmod = 0) has the divisor's: fix up when they differ */
			cg_line(cg, "%s r%s = %s == 0 || %s == -1 ? 0 : (%s)(%s %% %s);", ct, tag, b, b, ct,
			        a, b);
			if (!fm) {
				cg_line(cg, "if (r%s != 0 && (r%s < 0) != (%s < 0))", tag, tag, b);
				cg_line(cg, "    r%s = (%s)(r%s + %s);", tag, ct, tag, b);
			}
			snprintf(e, len, "r%s", tag);
		} else if (isi) {
			snprintf(e, len, "%s == 0 ? 0 : %s %% %s", b, a, b);
		} else {
			*why = "defined for numbers only";
			return false;
		}
		return true;
	}
	case RL_OP_Pow:
		if (isf && rl_dtype_is_float(db)) {
			if (da == RL_DT_DOUBLE || db == RL_DT_DOUBLE)
				snprintf(e, len, "pow((double)%s, (double)%s)", a, b);
			else
				snprintf(e, len, "powf(%s, %s)", a, b);
		} else if (isf && rl_dtype_is_int(db)) {
			snprintf(e, len, "%s(%s, (%s)%s)", mf(da, "pow"), a, ct, b);
		} else if (isi && rl_dtype_is_float(db)) {
			/* np.power(int, float) is computed in double, then astype */
			snprintf(e, len, "pow((double)%s, (double)%s)", a, b);
		} else if (isi && rl_dtype_is_int(db)) {
			/* exponentiation by squaring, wrapping like numpy; a negative
			 * exponent gives the truncated 1 / a^|b| */
			const char *w = wrap_type(da);
			cg_line(cg, "%s r%s = 1, p%s = (%s)%s;", w, tag, tag, w, a);
			if (is_signed_int(db)) {
				cg_line(cg, "if (%s < 0) {", b);
				cg_line(cg, "    r%s = p%s == 1 ? 1 : (p%s == (%s)-1 ? ((%s & 1) ? (%s)-1 : 1) : 0);",
				        tag, tag, tag, w, b, w);
				cg_line(cg, "} else {");
				cg->indent++;
			}
			cg_line(cg, "for (uint64_t k%s = (uint64_t)%s; k%s != 0; k%s >>= 1) {", tag, b, tag,
			        tag);
			cg_line(cg, "    if (k%s & 1)", tag);
			cg_line(cg, "        r%s *= p%s;", tag, tag);
			cg_line(cg, "    p%s *= p%s;", tag, tag);
			cg_line(cg, "}");
			if (is_signed_int(db)) {
				cg->indent--;
				cg_line(cg, "}");
			}
			snprintf(e, len, "r%s", tag);
		} else {
			*why = "unsupported dtype combination";
			return false;
		}
		return true;
	case RL_OP_PRelu:
		if (!isf && !isi) {
			*why = "defined for numbers only";
			return false;
		}
		if (is_unsigned_int(da)) {
			/* the slope is read and unused: (void) keeps -Wall quiet */
			snprintf(e, len, "((void)%s, %s)", b, a);
		} else {
			char m[256];
			arith(da, '*', a, b, m, sizeof(m));
			snprintf(e, len, "%s > 0 ? %s : (%s)(%s)", a, a, ct, m);
		}
		return true;
	case RL_OP_BitShift: {
		const char *dir = rl_node_attr_str(n, "direction", "");
		int bits = (int)rl_dtype_size(da) * 8;
		if (!is_unsigned_int(da)) {
			*why = "defined for unsigned integers only";
			return false;
		}
		/* shifting by the width or more gives 0, like numpy */
		if (strcmp(dir, "LEFT") == 0)
			snprintf(e, len, "%s < %d ? (%s)%s << %s : 0", b, bits, wrap_type(da), a, b);
		else if (strcmp(dir, "RIGHT") == 0)
			snprintf(e, len, "%s < %d ? %s >> %s : 0", b, bits, a, b);
		else {
			*why = "direction must be LEFT or RIGHT";
			return false;
		}
		return true;
	}
	case RL_OP_BitwiseAnd: case RL_OP_BitwiseOr: case RL_OP_BitwiseXor:
		if (!isi) {
			*why = "defined for integers only";
			return false;
		}
		snprintf(e, len, "%s %s %s", a, n->op == RL_OP_BitwiseAnd ? "&" :
		                                n->op == RL_OP_BitwiseOr ? "|" : "^", b);
		return true;
	case RL_OP_Equal: snprintf(e, len, "%s == %s", a, b); return true;
	case RL_OP_Less: snprintf(e, len, "%s < %s", a, b); return true;
	case RL_OP_LessOrEqual: snprintf(e, len, "%s <= %s", a, b); return true;
	case RL_OP_Greater: snprintf(e, len, "%s > %s", a, b); return true;
	case RL_OP_GreaterOrEqual: snprintf(e, len, "%s >= %s", a, b); return true;
	case RL_OP_And: case RL_OP_Or: case RL_OP_Xor:
		if (da != RL_DT_BOOL) {
			*why = "defined for bool inputs only";
			return false;
		}
		snprintf(e, len, "%s %s %s", a, n->op == RL_OP_And ? "&" : n->op == RL_OP_Or ? "|" : "^",
		         b);
		return true;
	default:
		*why = "not a binary op";
		return false;
	}
}

/* What a reader of the kernel should know about the integer semantics. */
static const char *binary_note(const struct rl_node *n, enum rl_dtype da, enum rl_dtype db)
{
	if (!rl_dtype_is_int(da))
		return n->op == RL_OP_Mod && rl_node_attr_int(n, "fmod", 0) == 0
		       ? ": fmod, NaN mapped to 0 like the ONNX reference" : "";
	switch (n->op) {
	case RL_OP_Div:
		return ": truncates toward zero; x / 0 = 0";
	case RL_OP_Mod:
		return rl_node_attr_int(n, "fmod", 0)
		       ? ": C remainder (sign of the dividend); x % 0 = 0"
		       : ": Python remainder (sign of the divisor); x % 0 = 0";
	case RL_OP_Pow:
		return rl_dtype_is_int(db) ? ": power by squaring, wrapping on overflow"
		                           : ": computed in double, truncated";
	case RL_OP_BitShift:
		return ": a shift by the bit width or more gives 0";
	case RL_OP_Add: case RL_OP_Sub: case RL_OP_Mul:
		return da == RL_DT_INT32 || da == RL_DT_INT64 ? ": wraps on overflow" : "";
	default:
		return "";
	}
}

static enum rl_status emit_binary(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *a = cg_in(cg, node, 0), *b = cg_in(cg, node, 1);
	const struct rl_value *y = cg_out(cg, node, 0);
	const struct rl_shape *ins[2] = {&a->shape, &b->shape};
	char e[1024];
	const char *why = NULL;
	cg_line(cg, "/* %s with numpy broadcasting%s */", rl_op_table[n->op].name,
	        binary_note(n, a->dtype, b->dtype));
	if (numel(y) == 0)
		return RL_OK;
	enum rl_status vst;
	if (cg_elemwise_vec_single(cg, node, &vst))
		return vst;
	int depth = cg_bcast_open(cg, &y->shape, 2, ins);
	cg_line(cg, "const %s a = %s;", cg_comptype(a->dtype), cg_load(cg, a->dtype, "X0[i0]"));
	cg_line(cg, "const %s b = %s;", cg_comptype(b->dtype), cg_load(cg, b->dtype, "X1[i1]"));
	if (!binary_expr(cg, n, a->dtype, b->dtype, y->dtype, "a", "b", "", e, sizeof(e), &why))
		return cg_error(cg, node, "%s on %s and %s: %s", rl_op_table[n->op].name,
		                rl_dtype_name(a->dtype), rl_dtype_name(b->dtype), why);
	cg_line(cg, "Y0[o] = %s;", cg_assign(cg, y->dtype, e));
	cg_loops_close(cg, depth);
	return RL_OK;
}

/* ---- variadic Min/Max/Sum/Mean ------------------------------------------ */

/* Min/Max/Sum/Mean of in[0..nin) in dtype dt; Min/Max go through a running
 * temporary so that a NaN operand wins like np.minimum/np.maximum. */
static bool variadic_expr(struct rl_cgen *cg, const struct rl_node *n, enum rl_dtype dt,
                          const char *const *in, int nin, const char *tag, char *e,
                          size_t len, const char **why)
{
	bool isf = rl_dtype_is_float(dt);
	if ((n->op == RL_OP_Sum || n->op == RL_OP_Mean) ? !isf : !(isf || rl_dtype_is_int(dt))) {
		*why = "dtype not supported";
		return false;
	}
	if (n->op == RL_OP_Min || n->op == RL_OP_Max) {
		const char *cmp = n->op == RL_OP_Min ? "<" : ">";
		cg_line(cg, "%s m%s = %s;", cg_comptype(dt), tag, in[0]);
		for (int k = 1; k < nin; k++) {
			if (isf)
				cg_line(cg, "m%s = %s %s m%s || isnan(%s) ? %s : m%s;", tag, in[k], cmp, tag,
				        in[k], in[k], tag);
			else
				cg_line(cg, "m%s = %s %s m%s ? %s : m%s;", tag, in[k], cmp, tag, in[k], tag);
		}
		snprintf(e, len, "m%s", tag);
		return true;
	}
	size_t p = (size_t)snprintf(e, len, "%s", nin > 1 && n->op == RL_OP_Mean ? "(" : "");
	for (int k = 0; k < nin && p < len; k++)
		p += (size_t)snprintf(e + p, len - p, "%s%s", k ? " + " : "", in[k]);
	if (nin > 1 && n->op == RL_OP_Mean && p < len)
		snprintf(e + p, len - p, ") / %s", flit(dt, nin));
	return true;
}

static enum rl_status emit_variadic(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	enum rl_dtype dt = y->dtype;
	const char *ct = cg_comptype(dt);
	const struct rl_shape *ins[16];
	int nin = n->nin;
	bool isf = rl_dtype_is_float(dt);
	if (nin < 1 || nin > 16)
		return cg_error(cg, node, "%s with %d inputs is not supported (1 to 16)",
		                rl_op_table[n->op].name, nin);
	if ((n->op == RL_OP_Sum || n->op == RL_OP_Mean) ? !isf : !(isf || rl_dtype_is_int(dt)))
		return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(dt));
	for (int k = 0; k < nin; k++) {
		const struct rl_value *x = cg_in(cg, node, k);
		if (!x || x->dtype != dt)
			return cg_error(cg, node, "%s: input %d is missing or not %s",
			                rl_op_table[n->op].name, k, rl_dtype_name(dt));
		ins[k] = &x->shape;
	}
	cg_line(cg, "/* %s of %d inputs with numpy broadcasting%s */", rl_op_table[n->op].name, nin,
	        isf && (n->op == RL_OP_Min || n->op == RL_OP_Max) ? "; NaN propagates" : "");
	if (numel(y) == 0)
		return RL_OK;
	enum rl_status vst;
	if (cg_elemwise_vec_single(cg, node, &vst))
		return vst;
	int depth = cg_bcast_open(cg, &y->shape, nin, ins);
	char names[16][8], e[1024];
	const char *in[16];
	const char *why = NULL;
	for (int k = 0; k < nin; k++) {
		char x[32];
		snprintf(x, sizeof(x), "X%d[i%d]", k, k);
		snprintf(names[k], sizeof(names[k]), "x%d", k);
		in[k] = names[k];
		cg_line(cg, "const %s x%d = %s;", ct, k, cg_load(cg, dt, x));
	}
	if (!variadic_expr(cg, n, dt, in, nin, "", e, sizeof(e), &why))
		return cg_error(cg, node, "%s: %s", rl_op_table[n->op].name, why);
	cg_line(cg, "Y0[o] = %s;", cg_assign(cg, dt, e));
	cg_loops_close(cg, depth);
	return RL_OK;
}

/* ---- Where -------------------------------------------------------------- */

static enum rl_status emit_where(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *c = cg_in(cg, node, 0), *a = cg_in(cg, node, 1),
	                      *b = cg_in(cg, node, 2), *y = cg_out(cg, node, 0);
	const struct rl_shape *ins[3] = {&c->shape, &a->shape, &b->shape};
	if (c->dtype != RL_DT_BOOL || a->dtype != y->dtype || b->dtype != y->dtype)
		return cg_error(cg, node, "Where: condition must be bool and both branches %s",
		                rl_dtype_name(y->dtype));
	cg_line(cg, "/* Where: Y = C ? A : B with numpy broadcasting */");
	if (numel(y) == 0)
		return RL_OK;
	int depth = cg_bcast_open(cg, &y->shape, 3, ins);
	cg_line(cg, "Y0[o] = X0[i0] ? X1[i1] : X2[i2];");
	cg_loops_close(cg, depth);
	return RL_OK;
}

/* ---- the expression table ---------------------------------------------- */

bool cg_elemwise_has_expr(enum rl_op op)
{
	if (op >= RL_OP_COUNT_ || rl_op_table[op].family != RL_FAM_ELEMWISE)
		return false;
	return op != RL_OP_Dropout && op != RL_OP_BitCast;
}

/*
 * The per-element C expression of elementwise node `node` (see emit.h):
 * in[k] is input k's value in its compute type, NULL for an absent optional
 * input; the result is in the compute type the op produces (the output's,
 * or a wider one that storing converts). CastLike's second input is not
 * read.
 */
bool cg_elemwise_expr(struct rl_cgen *cg, uint32_t node, const char *const *in,
                      const char *tag, char *e, size_t len, const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	unsigned fl = rl_op_table[n->op].flags;
	if (!cg_elemwise_has_expr(n->op)) {
		*why = "not an elementwise expression";
		return false;
	}
	if (!x || !y || !in[0]) {
		*why = "missing input or output";
		return false;
	}
	for (int k = 0; k < n->nin; k++) {
		const struct rl_value *v = cg_in(cg, node, k);
		if (v && !rl_dtype_is_numeric(v->dtype)) {
			*why = "dtype not supported";
			return false;
		}
	}
	switch (n->op) {
	case RL_OP_Cast: case RL_OP_CastLike: {
		enum rl_dtype to = cast_target(cg, node, why);
		if (to == RL_DT_UNDEFINED)
			return false;
		/* float16, bfloat16 and bool: the value before rounding, which
		 * storing (or the fused kernel's rounding of its locals) applies */
		if (to == x->dtype)
			snprintf(e, len, "%s", in[0]);
		else if ((to == RL_DT_FLOAT16 || to == RL_DT_BFLOAT16) && x->dtype != RL_DT_DOUBLE &&
		         !rl_dtype_is_int(x->dtype) && x->dtype != RL_DT_BOOL)
			snprintf(e, len, "%s", in[0]);
		else if (to == RL_DT_FLOAT16 || to == RL_DT_BFLOAT16)
			snprintf(e, len, "(float)%s", in[0]);
		else if (to == RL_DT_BOOL)
			snprintf(e, len, "%s != 0", in[0]);
		else
			snprintf(e, len, "%s", cg_load(cg, to, cast_comp(cg, x->dtype, to, in[0])));
		return true;
	}
	case RL_OP_Clip: {
		char lo[128], hi[128];
		bool has_lo, has_hi;
		if (!clip_bounds(cg, n, x->dtype, lo, hi, sizeof(lo), &has_lo, &has_hi, why))
			return false;
		if (n->opset >= 11) {
			if ((has_lo && !in[1]) || (has_hi && !in[2])) {
				*why = "missing bound";
				return false;
			}
			snprintf(lo, sizeof(lo), "%s", has_lo ? in[1] : "");
			snprintf(hi, sizeof(hi), "%s", has_hi ? in[2] : "");
		}
		clip_expr(cg, x->dtype, in[0], has_lo ? lo : NULL, has_hi ? hi : NULL, tag, e, len);
		return true;
	}
	case RL_OP_Where: {
		const struct rl_value *a = cg_in(cg, node, 1), *b = cg_in(cg, node, 2);
		if (!a || !b || !in[1] || !in[2] || x->dtype != RL_DT_BOOL || a->dtype != y->dtype ||
		    b->dtype != y->dtype) {
			*why = "condition must be bool and both branches the output's dtype";
			return false;
		}
		snprintf(e, len, "%s ? %s : %s", in[0], in[1], in[2]);
		return true;
	}
	default:
		break;
	}
	if (fl & RL_OPF_UNARY)
		return unary_expr(cg, n, x->dtype, in[0], tag, e, len, why);
	if (fl & RL_OPF_BINARY) {
		const struct rl_value *b = cg_in(cg, node, 1);
		if (!b || !in[1]) {
			*why = "missing input";
			return false;
		}
		return binary_expr(cg, n, x->dtype, b->dtype, y->dtype, in[0], in[1], tag, e, len, why);
	}
	if (fl & RL_OPF_VARIADIC) {
		if (n->nin < 1 || n->nin > 16) {
			*why = "1 to 16 inputs";
			return false;
		}
		for (int k = 0; k < n->nin; k++) {
			const struct rl_value *v = cg_in(cg, node, k);
			if (!v || !in[k] || v->dtype != y->dtype) {
				*why = "an input is missing or has another dtype";
				return false;
			}
		}
		return variadic_expr(cg, n, y->dtype, in, n->nin, tag, e, len, why);
	}
	*why = "not an elementwise expression";
	return false;
}

/* ---- dispatch ----------------------------------------------------------- */

enum rl_status rl_emit_c_elemwise(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	if (!y)
		return cg_error(cg, node, "%s: missing output", rl_op_table[n->op].name);
	if (cg_lowp_node(cg, node)) /* float8, int4, ... and BitCast */
		return rl_emit_c_lowp(cg, node);
	for (int k = 0; k < n->nin; k++) {
		const struct rl_value *x = cg_in(cg, node, k);
		if (x && !rl_dtype_is_numeric(x->dtype))
			return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
			                rl_dtype_name(x->dtype));
	}
	if (!cg_in(cg, node, 0) && n->op != RL_OP_Constant)
		return cg_error(cg, node, "%s: missing input", rl_op_table[n->op].name);
	switch (n->op) {
	case RL_OP_Identity:
		cg_line(cg, "/* Identity */");
		emit_copy(cg, y);
		return RL_OK;
	case RL_OP_Dropout:
		return emit_dropout(cg, node);
	case RL_OP_Cast: case RL_OP_CastLike:
		return emit_cast(cg, node);
	case RL_OP_Clip:
		return emit_clip(cg, node);
	case RL_OP_Where:
		return emit_where(cg, node);
	default:
		break;
	}
	unsigned fl = rl_op_table[n->op].flags;
	if (fl & RL_OPF_UNARY)
		return emit_unary(cg, node);
	if (fl & RL_OPF_BINARY)
		return emit_binary(cg, node);
	if (fl & RL_OPF_VARIADIC)
		return emit_variadic(cg, node);
	return cg_error(cg, node, "%s is not an elementwise op", rl_op_table[n->op].name);
}

/* ---- the vector expression table (float32, RL_VW lanes) ----------------- */

/* c in every lane, as an rl_vf expression */
static const char *vsplat(double c)
{
	char *b = ebuf();
	snprintf(b, 1024, "((rl_vf){0} + %s)", flit(RL_DT_FLOAT, c));
	return b;
}

/* Define `rl_vf NAME = COND ? A : B` lane by lane (COND "X op Y", op one of
 * < > <= >= == != between spaces, X and Y rl_vf or float expressions, A and
 * B rl_vf expressions): the vector form of the table's `?:`, through rl_vif
 * (a comparison written on rl_vf is scalarized by GCC 12 in the narrower
 * clones, see emit_rt.c). */
static void vsel_line(struct rl_cgen *cg, const char *name, const char *cond, const char *a,
                      const char *b)
{
	static const struct { const char *tok, *op; } ops[] = {
		{" <= ", "RL_LE"}, {" >= ", "RL_GE"}, {" == ", "RL_EQ"},
		{" != ", "RL_NE"}, {" < ", "RL_LT"},  {" > ", "RL_GT"},
	};
	const char *at = NULL, *op = NULL;
	size_t tl = 0;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !at; i++) {
		at = strstr(cond, ops[i].tok);
		op = ops[i].op;
		tl = strlen(ops[i].tok);
	}
	RL_ASSERT(at);
	cg_line(cg, "rl_vf %s;", name);
	/* A pick that is Y itself (Relu: x < 0 ? 0 : x) passes d_ again: GCC 12
	 * then vectorizes the lane loop of rl_vif into one compare and blend in
	 * the x86-64-v3 clone; with a separate equal p_ it left a two-iteration
	 * loop through the stack there (store-forwarding stalls: the
	 * elementwise_chain kernel ran 10.9 ms instead of 3.8 in that clone). */
	char ys[160];
	snprintf(ys, sizeof(ys), "((rl_vf){0} + %s)", at + tl);
	bool pa = !strcmp(a, ys), pb = !pa && !strcmp(b, ys);
	cg_line(cg, "{ const rl_vf c_ = (%.*s) + (rl_vf){0}, d_ = (%s) + (rl_vf){0}%s%s%s%s;",
	        (int)(at - cond), cond, at + tl, pa ? "" : ", p_ = ", pa ? "" : a,
	        pb ? "" : ", q_ = ", pb ? "" : b);
	cg_line(cg, "  rl_vif(&%s, %s, &c_, &d_, %s, %s); }", name, op, pa ? "&d_" : "&p_",
	        pb ? "&d_" : "&q_");
}

/* `rl_vf NAME; FN(&NAME, &ARG);` for a vector math function */
static void vcall_line(struct rl_cgen *cg, unsigned need, const char *fn, const char *name,
                       const char *arg)
{
	cg_vmath_need(cg, need);
	cg_line(cg, "rl_vf %s;", name);
	cg_line(cg, "%s(&%s, &%s);", fn, name, arg);
}

/* Float32 literal value of input k of node n when it is a constant scalar. */
static bool const_input(struct rl_cgen *cg, const struct rl_node *n, int k, double *x)
{
	uint32_t v = rl_node_in(n, k);
	if (v == RL_NONE || !rl_value_is_const(cg->g, v) || !cg->g->values[v].data ||
	    rl_shape_numel(&cg->g->values[v].shape) != 1)
		return false;
	*x = rl_value_get_float(cg->g, v, 0);
	return true;
}

bool cg_elemwise_vexpr(struct rl_cgen *cg, uint32_t node, const char *const *in,
                       const char *tag, char *e, size_t len, const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	char t1[64], t2[64], t3[64], c[512];
#define ATTR(name, def) rl_node_attr_float(n, name, def)
#define L(x) flit(RL_DT_FLOAT, (x))
	*why = "no vector form";
	if (!y || y->dtype != RL_DT_FLOAT || !in[0])
		return false;
	for (int k = 0; k < n->nin; k++) {
		const struct rl_value *v = cg_in(cg, node, k);
		if (v && v->dtype != RL_DT_FLOAT)
			return false;
	}
	const char *a = in[0], *b = n->nin > 1 ? in[1] : NULL;
	snprintf(t1, sizeof(t1), "t%s", tag);
	snprintf(t2, sizeof(t2), "u%s", tag);
	snprintf(t3, sizeof(t3), "w%s", tag);
	switch (n->op) {
	case RL_OP_Identity:
		snprintf(e, len, "%s", a);
		return true;
	case RL_OP_Cast: case RL_OP_CastLike: /* float32 to float32 */
		snprintf(e, len, "%s", a);
		return true;
	case RL_OP_Abs:
		vcall_line(cg, RL_VM_BASE, "rl_vabs", t1, a);
		snprintf(e, len, "%s", t1);
		return true;
	case RL_OP_Neg:
		snprintf(e, len, "-%s", a);
		return true;
	case RL_OP_Exp: case RL_OP_Log: case RL_OP_Sqrt: case RL_OP_Tanh: case RL_OP_Sigmoid:
	case RL_OP_Erf: {
		static const struct { enum rl_op op; unsigned need; const char *fn; } f[] = {
			{RL_OP_Exp, RL_VM_EXP, "rl_vexp"},     {RL_OP_Log, RL_VM_LOG, "rl_vlog"},
			{RL_OP_Sqrt, RL_VM_SQRT, "rl_vsqrt"},  {RL_OP_Tanh, RL_VM_TANH, "rl_vtanh"},
			{RL_OP_Sigmoid, RL_VM_SIGMOID, "rl_vsigmoid"}, {RL_OP_Erf, RL_VM_ERF, "rl_verf"},
		};
		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
			if (f[i].op == n->op)
				vcall_line(cg, f[i].need, f[i].fn, t1, a);
		snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_Reciprocal:
		snprintf(e, len, "1.0f / %s", a);
		return true;
	case RL_OP_Relu: /* a < 0 keeps a NaN, like the scalar table */
		snprintf(c, sizeof(c), "%s < 0.0f", a);
		vsel_line(cg, t1, c, vsplat(0), a);
		snprintf(e, len, "%s", t1);
		return true;
	case RL_OP_LeakyRelu: {
		char p[128];
		snprintf(c, sizeof(c), "%s > 0.0f", a);
		snprintf(p, sizeof(p), "%s * %s", L(ATTR("alpha", 0.01)), a);
		vsel_line(cg, t1, c, a, p);
		snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_ThresholdedRelu:
		snprintf(c, sizeof(c), "%s > %s", a, L(ATTR("alpha", 1.0)));
		vsel_line(cg, t1, c, a, vsplat(0));
		snprintf(e, len, "%s", t1);
		return true;
	case RL_OP_Softsign:
		vcall_line(cg, RL_VM_BASE, "rl_vabs", t1, a);
		snprintf(e, len, "%s / (1.0f + %s)", a, t1);
		return true;
	case RL_OP_Elu: case RL_OP_Celu: {
		double alpha = ATTR("alpha", 1.0);
		char p[128];
		if (n->op == RL_OP_Celu)
			cg_line(cg, "const rl_vf %s = %s / %s;", t3, a, L(alpha));
		else
			cg_line(cg, "const rl_vf %s = %s;", t3, a);
		vcall_line(cg, RL_VM_EXPM1, "rl_vexpm1", t2, t3);
		snprintf(c, sizeof(c), "%s > 0.0f", a);
		snprintf(p, sizeof(p), "%s * %s", L(alpha), t2);
		vsel_line(cg, t1, c, a, p);
		snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_Selu: {
		double alpha = ATTR("alpha", 1.67326319217681884765625);
		double gamma = ATTR("gamma", 1.05070102214813232421875);
		char p[256], q[256];
		vcall_line(cg, RL_VM_EXP, "rl_vexp", t2, a);
		snprintf(c, sizeof(c), "%s > 0.0f", a);
		snprintf(p, sizeof(p), "%s * %s", L(gamma), a);
		snprintf(q, sizeof(q), "%s * (%s * %s - %s)", L(gamma), L(alpha), t2, L(alpha));
		vsel_line(cg, t1, c, p, q);
		snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_HardSigmoid: case RL_OP_HardSwish: {
		char cl[128];
		if (n->op == RL_OP_HardSigmoid)
			cg_line(cg, "const rl_vf %s = %s * %s + %s;", t3, L(ATTR("alpha", 0.2)), a,
			        L(ATTR("beta", 0.5)));
		else
			cg_line(cg, "const rl_vf %s = %s / 6.0f + 0.5f;", t3, a);
		snprintf(c, sizeof(c), "%s < 0.0f", t3);
		vsel_line(cg, t2, c, vsplat(0), t3);
		snprintf(c, sizeof(c), "%s > 1.0f", t2);
		snprintf(cl, sizeof(cl), "%s", t1);
		vsel_line(cg, cl, c, vsplat(1), t2);
		if (n->op == RL_OP_HardSwish)
			snprintf(e, len, "%s * %s", a, t1);
		else
			snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_Softplus: case RL_OP_Mish: {
		/* log(1 + e^a) = max(a, 0) + log1p(e^-|a|), as the scalar table */
		char p[128], sp[64];
		vcall_line(cg, RL_VM_BASE, "rl_vabs", t3, a);
		cg_line(cg, "%s = -%s;", t3, t3);
		vcall_line(cg, RL_VM_EXP, "rl_vexp", t2, t3);
		snprintf(sp, sizeof(sp), "l%s", tag);
		vcall_line(cg, RL_VM_LOG1P, "rl_vlog1p", sp, t2);
		snprintf(c, sizeof(c), "%s > 0.0f", a);
		snprintf(p, sizeof(p), "%s + %s", a, sp);
		vsel_line(cg, t1, c, p, sp);
		if (n->op == RL_OP_Softplus) {
			snprintf(e, len, "%s", t1);
		} else {
			snprintf(sp, sizeof(sp), "h%s", tag);
			vcall_line(cg, RL_VM_TANH, "rl_vtanh", sp, t1);
			snprintf(e, len, "%s * %s", a, sp);
		}
		return true;
	}
	case RL_OP_Gelu:
		if (strcmp(rl_node_attr_str(n, "approximate", "none"), "none") == 0) {
			/* as the scalar table: 0.5 a (1 + erf(a / sqrt 2)) */
			cg_line(cg, "const rl_vf %s = %s * %s;", t3, a, L(0.70710678118654752440));
			vcall_line(cg, RL_VM_ERF, "rl_verf", t2, t3);
			snprintf(e, len, "0.5f * %s * (1.0f + %s)", a, t2);
			return true;
		}
		if (strcmp(rl_node_attr_str(n, "approximate", "none"), "tanh") != 0)
			return false;
		cg_line(cg, "const rl_vf %s = %s * (%s + %s * %s * %s * %s);", t3,
		        L(0.79788456080286535588), a, L(0.044715), a, a, a);
		vcall_line(cg, RL_VM_TANH, "rl_vtanh", t2, t3);
		snprintf(e, len, "0.5f * %s * (1.0f + %s)", a, t2);
		return true;
	case RL_OP_Add: case RL_OP_Sub: case RL_OP_Mul: case RL_OP_Div:
		if (!b)
			return false;
		snprintf(e, len, "%s %c %s", a, n->op == RL_OP_Add ? '+' : n->op == RL_OP_Sub ? '-' :
		                                n->op == RL_OP_Mul ? '*' : '/', b);
		return true;
	case RL_OP_Pow: {
		double p;
		if (!b || !const_input(cg, n, 1, &p) || p != 2.0)
			return false; /* powf per lane */
		snprintf(e, len, "%s * %s", a, a);
		return true;
	}
	case RL_OP_PRelu: {
		char p[128];
		if (!b)
			return false;
		snprintf(c, sizeof(c), "%s > 0.0f", a);
		snprintf(p, sizeof(p), "%s * %s", a, b);
		vsel_line(cg, t1, c, a, p);
		snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_Min: case RL_OP_Max: {
		/* a NaN operand wins, like np.minimum/np.maximum */
		const char *cmp = n->op == RL_OP_Min ? "RL_LT" : "RL_GT";
		if (n->nin > 16)
			return false;
		cg_line(cg, "rl_vf %s = %s;", t1, a);
		for (int k = 1; k < n->nin; k++) {
			if (!in[k])
				return false;
			/* two selects of different values (GCC 12 scalarizes an | of
			 * masks): a NaN input gives the NaN in + m */
			cg_line(cg, "{ const rl_vf n_ = %s + %s; rl_vif(&%s, %s, &%s, &%s, &%s, &%s);",
			        in[k], t1, t1, cmp, in[k], t1, in[k], t1);
			cg_line(cg, "  rl_vif(&%s, RL_NE, &%s, &%s, &n_, &%s); }", t1, in[k], in[k], t1);
		}
		snprintf(e, len, "%s", t1);
		return true;
	}
	case RL_OP_Sum: case RL_OP_Mean: {
		size_t p = (size_t)snprintf(e, len, "%s", n->nin > 1 && n->op == RL_OP_Mean ? "(" : "");
		for (int k = 0; k < n->nin && p < len; k++) {
			if (!in[k])
				return false;
			p += (size_t)snprintf(e + p, len - p, "%s%s", k ? " + " : "", in[k]);
		}
		if (n->nin > 1 && n->op == RL_OP_Mean && p < len)
			snprintf(e + p, len - p, ") / %s", L(n->nin));
		return true;
	}
	case RL_OP_Clip: {
		char lo[128], hi[128], lv[160], hv[160];
		bool has_lo, has_hi;
		if (!clip_bounds(cg, n, RL_DT_FLOAT, lo, hi, sizeof(lo), &has_lo, &has_hi, why))
			return false;
		if (n->opset >= 11) {
			if ((has_lo && !in[1]) || (has_hi && !in[2]))
				return false;
			snprintf(lv, sizeof(lv), "%s", has_lo ? in[1] : "");
			snprintf(hv, sizeof(hv), "%s", has_hi ? in[2] : "");
		} else {
			snprintf(lv, sizeof(lv), "%s", has_lo ? vsplat(rl_node_attr(n, "min")->f) : "");
			snprintf(hv, sizeof(hv), "%s", has_hi ? vsplat(rl_node_attr(n, "max")->f) : "");
		}
		cg_line(cg, "rl_vf %s = %s;", t1, a);
		if (has_lo) {
			cg_line(cg, "{ const rl_vf l_ = %s; rl_vif(&%s, RL_LT, &%s, &l_, &l_, &%s); }",
			        lv, t1, t1, t1);
		}
		if (has_hi) {
			cg_line(cg, "{ const rl_vf h_ = %s; rl_vif(&%s, RL_GT, &%s, &h_, &h_, &%s); }",
			        hv, t1, t1, t1);
		}
		snprintf(e, len, "%s", t1);
		return true;
	}
	default:
		return false;
	}
#undef ATTR
#undef L
}
