/*
 * scalar.c - the scalar semantics of the elementwise operators (see
 * scalar.h and the table in scalar.def), shared by constant evaluation
 * (eval.c) and folding (passes/fold.c).
 *
 * The reference is the C backend's scalar table (backends/c/
 * emit_elemwise.c), not libm's best answer: a folded node must hold what
 * the node would have computed at run time, or folding changes results.
 * So float tanh and erf are the rational approximations the generated
 * code defines as rl_tanhf and rl_erff (emit.c), Mod of floats maps a NaN
 * to 0 unless fmod=1, integer arithmetic wraps at the width the generated
 * code computes in (32 bits for types up to 4 bytes, else 64), integer
 * division by zero gives 0 (flagged RL_SCALAR_UNDEF: ONNX leaves it
 * undefined, and the evaluator declines such nodes), and float literals
 * (attributes, the Gelu constants) are rounded as the backend prints them
 * ("%.9g" then the compiler's rounding to float). tests/unit/test_scalar.c
 * holds the generated code to this file on random and edge inputs.
 *
 * The float cases are written once in scalar_float.inc and instantiated
 * for float and double; integer and bool cases are below.
 */
#include "scalar.h"
#include "approx.h"

#include "cost.h"
#include "infer_impl.h"
#include "machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table ---------------------------------------------------------- */

#define T RL_FLOPS_TRANS
#define SM_NONE (-1)
#define SM_DIV RL_MATH_DIV
#define SM_SQRT RL_MATH_SQRT
#define SM_EXP RL_MATH_EXP
#define SM_LOG RL_MATH_LOG
#define SM_TANH RL_MATH_TANH
#define SM_SIGMOID RL_MATH_SIGMOID
#define SM_ERF RL_MATH_ERF
#define F RL_SCF_F
#define I RL_SCF_I
#define B RL_SCF_B
#define CALC RL_SCF_CALC

const struct rl_scalar_info rl_scalar_table[RL_OP_COUNT_] = {
#define RL_SCALAR(op, flops_, m0, m1, m2, kinds, ulp_, abs_) \
	[RL_OP_##op] = {.present = true, .flops = (flops_), \
	                .math = {SM_##m0, SM_##m1, SM_##m2}, .flags = (kinds), \
	                .ulp = (ulp_), .abs = (abs_)},
#include "scalar.def"
#undef RL_SCALAR
};

#undef T
#undef F
#undef I
#undef B
#undef CALC


const struct rl_scalar_info *rl_scalar_info(enum rl_op op)
{
	if ((unsigned)op >= RL_OP_COUNT_ || !rl_scalar_table[op].present)
		return NULL;
	return &rl_scalar_table[op];
}

/* ---- elements ----------------------------------------------------------- */

union rl_scv rl_scalar_load(const void *p, enum rl_dtype t, int64_t i)
{
	union rl_scv r;
	r.u = 0;
	switch (t) {
	case RL_DT_FLOAT: r.f = ((const float *)p)[i]; break;
	case RL_DT_FLOAT16: r.f = rl_half_to_float(((const uint16_t *)p)[i]); break;
	case RL_DT_BFLOAT16: r.f = rl_bf16_to_float(((const uint16_t *)p)[i]); break;
	case RL_DT_DOUBLE: r.d = ((const double *)p)[i]; break;
	case RL_DT_INT8: r.i = ((const int8_t *)p)[i]; break;
	case RL_DT_INT16: r.i = ((const int16_t *)p)[i]; break;
	case RL_DT_INT32: r.i = ((const int32_t *)p)[i]; break;
	case RL_DT_INT64: r.i = ((const int64_t *)p)[i]; break;
	case RL_DT_UINT8: r.i = ((const uint8_t *)p)[i]; break;
	case RL_DT_UINT16: r.i = ((const uint16_t *)p)[i]; break;
	case RL_DT_UINT32: r.i = ((const uint32_t *)p)[i]; break;
	case RL_DT_UINT64: r.u = ((const uint64_t *)p)[i]; break;
	case RL_DT_BOOL: r.i = ((const uint8_t *)p)[i] != 0; break;
	default: break;
	}
	return r;
}

void rl_scalar_store(void *p, enum rl_dtype t, int64_t i, union rl_scv v)
{
	switch (t) {
	case RL_DT_FLOAT: ((float *)p)[i] = v.f; break;
	case RL_DT_FLOAT16: ((uint16_t *)p)[i] = rl_float_to_half(v.f); break;
	case RL_DT_BFLOAT16: ((uint16_t *)p)[i] = rl_float_to_bf16(v.f); break;
	case RL_DT_DOUBLE: ((double *)p)[i] = v.d; break;
	case RL_DT_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v.u; break;
	case RL_DT_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v.u; break;
	case RL_DT_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v.u; break;
	case RL_DT_INT64: ((int64_t *)p)[i] = v.i; break;
	case RL_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v.u; break;
	case RL_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v.u; break;
	case RL_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v.u; break;
	case RL_DT_UINT64: ((uint64_t *)p)[i] = v.u; break;
	case RL_DT_BOOL: ((uint8_t *)p)[i] = v.i != 0; break;
	default: break;
	}
}

/* ---- attributes --------------------------------------------------------- */

/* x as the C backend writes it in a float literal (cg_lit: "%.9g" + "f"),
 * rounded to float as the compiler reads it. */
static float lit_f(double x)
{
	char b[64];
	if (!isfinite(x))
		return (float)x;
	snprintf(b, sizeof(b), "%.9g", x);
	return strtof(b, NULL);
}

void rl_scalar_attrs(const struct rl_node *n, struct rl_scalar_attrs *p)
{
	memset(p, 0, sizeof(*p));
	switch (n->op) {
	case RL_OP_LeakyRelu: p->alpha = rl_node_attr_float(n, "alpha", 0.01); break;
	case RL_OP_ThresholdedRelu: case RL_OP_Elu: case RL_OP_Celu:
		p->alpha = rl_node_attr_float(n, "alpha", 1.0);
		break;
	case RL_OP_Selu:
		p->alpha = rl_node_attr_float(n, "alpha", 1.67326319217681884765625);
		p->gamma = rl_node_attr_float(n, "gamma", 1.05070102214813232421875);
		break;
	case RL_OP_HardSigmoid:
		p->alpha = rl_node_attr_float(n, "alpha", 0.2);
		p->beta = rl_node_attr_float(n, "beta", 0.5);
		break;
	case RL_OP_Shrink:
		p->lambd = rl_node_attr_float(n, "lambd", 0.5);
		p->bias = rl_node_attr_float(n, "bias", 0.0);
		break;
	case RL_OP_Gelu: {
		const char *ap = rl_node_attr_str(n, "approximate", "none");
		p->mode = !strcmp(ap, "tanh") ? 1 : !strcmp(ap, "none") ? 0 : -1;
		break;
	}
	case RL_OP_IsInf:
		p->mode = (rl_node_attr_int(n, "detect_positive", 1) != 0) |
		          (rl_node_attr_int(n, "detect_negative", 1) != 0) << 1;
		break;
	case RL_OP_Mod: p->mode = rl_node_attr_int(n, "fmod", 0) != 0; break;
	case RL_OP_BitShift: {
		const char *dir = rl_node_attr_str(n, "direction", "");
		p->mode = !strcmp(dir, "LEFT") ? 1 : !strcmp(dir, "RIGHT") ? 2 : 0;
		break;
	}
	default:
		break;
	}
	p->alpha_f = lit_f(p->alpha);
	p->beta_f = lit_f(p->beta);
	p->gamma_f = lit_f(p->gamma);
	p->lambd_f = lit_f(p->lambd);
	p->bias_f = lit_f(p->bias);
	p->nlambd_f = lit_f(-p->lambd);
}

/* ---- float and double --------------------------------------------------- */

/* The generated code's rl_tanhf and rl_erff (backends/c/emit.c, tanh_helper
 * and erf_helper), operation for operation: the forms of ir/approx.h. */
static float rl_sc_tanhf(float x)
{
	const float a0 = fabsf(x), a = a0 > RL_TANH_CLAMP ? RL_TANH_CLAMP : a0;
	const float s = a * a, s2 = s * s;
	const float p = RL_TANH_P(s, s2), q = RL_TANH_Q(s, s2);
	const float t = a * p / q;
	return copysignf(t > 1.0f ? 1.0f : t, x);
}

static float rl_sc_erff(float x)
{
	const float a0 = fabsf(x), a = a0 > RL_ERF_CLAMP ? RL_ERF_CLAMP : a0;
	const float s = a * a, s2 = s * s;
	const float p = RL_ERF_P(s, s2), q = RL_ERF_Q(s, s2);
	const float t = a * (p / q);
	return copysignf(t > 1.0f ? 1.0f : t, x);
}

#define T float
#define M(fn) fn##f
#define SFX(name) name##_f32
#define TANH_FN rl_sc_tanhf
#define ERF_FN rl_sc_erff
#define K(name) p->name##_f
#define SHRINK_NLAMBD p->nlambd_f
/* cg_lit's "%.9g" of 0.70710678118654752440, 0.79788456080286535588, 0.044715 */
#define KERF 0.707106781f
#define KGELU1 0.797884561f
#define KGELU2 0.044715f
#include "scalar_float.inc"
#undef T
#undef M
#undef SFX
#undef TANH_FN
#undef ERF_FN
#undef K
#undef SHRINK_NLAMBD
#undef KERF
#undef KGELU1
#undef KGELU2

#define T double
#define M(fn) fn
#define SFX(name) name##_f64
#define TANH_FN tanh
#define ERF_FN erf
#define K(name) p->name
#define SHRINK_NLAMBD (-p->lambd)
#define KERF 0.70710678118654752440
#define KGELU1 0.79788456080286535588
#define KGELU2 0.044715
#include "scalar_float.inc"
#undef T
#undef M
#undef SFX
#undef TANH_FN
#undef ERF_FN
#undef K
#undef SHRINK_NLAMBD
#undef KERF
#undef KGELU1
#undef KGELU2

/* ---- integers and bool -------------------------------------------------- */

/* Signed integer types hold sign-extended values in i; unsigned ones
 * zero-extended in u. The generated code computes in the C type of the
 * dtype (promoted to int) or, where it must wrap, in uint32_t for types of
 * up to 4 bytes and uint64_t for 8 (wrap_type in emit_elemwise.c); results
 * are narrowed by the store. */

static bool dt_signed(enum rl_dtype dt)
{
	return rl_dtype_is_signed(dt);
}

/* The smallest value of a signed type, as int64. */
static int64_t smin(enum rl_dtype dt)
{
	return rl_dtype_size(dt) == 8 ? INT64_MIN : -((int64_t)1 << (rl_dtype_size(dt) * 8 - 1));
}

/* a to the power b with the generated code's exponentiation by squaring in
 * the wrap type (W bits), a negative exponent giving the truncated
 * 1 / a^|b|. */
static uint64_t ipow(uint64_t a, int64_t b, bool b_signed, int wbits)
{
	uint64_t mask = wbits == 64 ? ~(uint64_t)0 : ((uint64_t)1 << wbits) - 1;
	uint64_t r = 1, pw = a & mask;
	if (b_signed && b < 0)
		return pw == 1 ? 1 : pw == mask ? ((b & 1) ? mask : 1) : 0;
	for (uint64_t k = (uint64_t)b; k != 0; k >>= 1) {
		if (k & 1)
			r = (r * pw) & mask;
		pw = (pw * pw) & mask;
	}
	return r;
}

static enum rl_scalar_status int_unary(enum rl_op op, const struct rl_scalar_attrs *p,
                                       enum rl_dtype dt, union rl_scv a, union rl_scv *r)
{
	bool sg = dt_signed(dt);
	switch (op) {
	case RL_OP_Identity: *r = a; return RL_SCALAR_OK;
	case RL_OP_Abs: r->u = sg && a.i < 0 ? 0 - a.u : a.u; return RL_SCALAR_OK;
	case RL_OP_Neg:
		if (!sg)
			return RL_SCALAR_NO;
		r->u = 0 - a.u;
		return RL_SCALAR_OK;
	case RL_OP_Relu: r->i = sg && a.i < 0 ? 0 : a.i; return RL_SCALAR_OK;
	case RL_OP_Sign: r->i = sg ? (a.i > 0) - (a.i < 0) : a.u > 0; return RL_SCALAR_OK;
	case RL_OP_BitwiseNot: r->u = ~a.u; return RL_SCALAR_OK;
	case RL_OP_Shrink: {
		/* computed in double, converted back by C (truncation); out of
		 * the type's range the conversion is undefined */
		double t = sg ? (double)a.i : (double)a.u;
		double y = t < -p->lambd ? t + p->bias : (t > p->lambd ? t - p->bias : 0.0);
		double lo = sg ? (double)smin(dt) : 0.0;
		double hi = rl_dtype_size(dt) == 8 ? (sg ? 9223372036854774784.0 : 18446744073709549568.0)
		                                   : ldexp(1.0, (int)rl_dtype_size(dt) * 8 - sg) - 1;
		if (isnan(y) || trunc(y) < lo || trunc(y) > hi)
			return RL_SCALAR_UNDEF;
		if (sg)
			r->i = (int64_t)y;
		else
			r->u = (uint64_t)y;
		return RL_SCALAR_OK;
	}
	default:
		return RL_SCALAR_NO;
	}
}

static enum rl_scalar_status int_binary(enum rl_op op, const struct rl_scalar_attrs *p,
                                        enum rl_dtype dt, union rl_scv a, union rl_scv b,
                                        union rl_scv *r)
{
	bool sg = dt_signed(dt);
	int bits = (int)rl_dtype_size(dt) * 8, wbits = bits == 64 ? 64 : 32;
	/* comparisons: signed values compare as int64, unsigned as uint64 */
	int lt = sg ? a.i < b.i : a.u < b.u, eq = a.u == b.u;
	switch (op) {
	case RL_OP_Add: r->u = a.u + b.u; return RL_SCALAR_OK;
	case RL_OP_Sub: r->u = a.u - b.u; return RL_SCALAR_OK;
	case RL_OP_Mul: r->u = a.u * b.u; return RL_SCALAR_OK;
	case RL_OP_Div:
		if (b.u == 0) {
			r->u = 0;
			return RL_SCALAR_UNDEF;
		}
		if (sg && b.i == -1) {
			r->u = 0 - a.u; /* wraps for the smallest value, as numpy */
			return a.i == smin(dt) ? RL_SCALAR_UNDEF : RL_SCALAR_OK;
		}
		if (sg)
			r->i = a.i / b.i;
		else
			r->u = a.u / b.u;
		return RL_SCALAR_OK;
	case RL_OP_Mod:
		if (b.u == 0) {
			r->u = 0;
			return RL_SCALAR_UNDEF;
		}
		if (!sg) {
			r->u = a.u % b.u;
			return RL_SCALAR_OK;
		}
		r->i = b.i == -1 ? 0 : a.i % b.i;
		/* C's % has the dividend's sign (fmod = 1); Python's (fmod = 0)
		 * the divisor's */
		if (!p->mode && r->i != 0 && (r->i < 0) != (b.i < 0))
			r->i += b.i;
		return RL_SCALAR_OK;
	case RL_OP_Pow:
		r->u = ipow(a.u, b.i, sg, wbits);
		return RL_SCALAR_OK;
	case RL_OP_PRelu:
		r->u = !sg || a.i > 0 ? a.u : a.u * b.u;
		return RL_SCALAR_OK;
	case RL_OP_BitShift:
		if (sg || !p->mode)
			return RL_SCALAR_NO;
		/* a shift by the width or more gives 0, like numpy */
		if (b.u >= (uint64_t)bits)
			r->u = 0;
		else
			r->u = p->mode == 1 ? a.u << b.u : a.u >> b.u;
		return RL_SCALAR_OK;
	case RL_OP_BitwiseAnd: r->u = a.u & b.u; return RL_SCALAR_OK;
	case RL_OP_BitwiseOr: r->u = a.u | b.u; return RL_SCALAR_OK;
	case RL_OP_BitwiseXor: r->u = a.u ^ b.u; return RL_SCALAR_OK;
	case RL_OP_Min: *r = lt ? a : b; return RL_SCALAR_OK;
	case RL_OP_Max: *r = lt ? b : a; return RL_SCALAR_OK;
	case RL_OP_Equal: r->i = eq; return RL_SCALAR_OK;
	case RL_OP_Less: r->i = lt; return RL_SCALAR_OK;
	case RL_OP_LessOrEqual: r->i = lt || eq; return RL_SCALAR_OK;
	case RL_OP_Greater: r->i = !lt && !eq; return RL_SCALAR_OK;
	case RL_OP_GreaterOrEqual: r->i = !lt; return RL_SCALAR_OK;
	default:
		return RL_SCALAR_NO;
	}
}

static enum rl_scalar_status bool_op(enum rl_op op, union rl_scv a, union rl_scv b,
                                     union rl_scv *r)
{
	int64_t x = a.i != 0, y = b.i != 0;
	switch (op) {
	case RL_OP_Identity: r->i = x; break;
	case RL_OP_Not: r->i = !x; break;
	case RL_OP_And: r->i = x & y; break;
	case RL_OP_Or: r->i = x | y; break;
	case RL_OP_Xor: r->i = x ^ y; break;
	case RL_OP_Equal: r->i = x == y; break;
	case RL_OP_Less: r->i = x < y; break;
	case RL_OP_LessOrEqual: r->i = x <= y; break;
	case RL_OP_Greater: r->i = x > y; break;
	case RL_OP_GreaterOrEqual: r->i = x >= y; break;
	default: return RL_SCALAR_NO;
	}
	return RL_SCALAR_OK;
}

/* ---- dispatch ----------------------------------------------------------- */

static bool is_unary(enum rl_op op)
{
	return rl_op_table[op].flags & RL_OPF_UNARY;
}

enum rl_scalar_status rl_scalar_apply(enum rl_op op, const struct rl_scalar_attrs *p,
                                      enum rl_dtype dt, union rl_scv a, union rl_scv b,
                                      union rl_scv *r)
{
	const struct rl_scalar_info *s = rl_scalar_info(op);
	if (!s || !(s->flags & RL_SCF_CALC))
		return RL_SCALAR_NO;
	union rl_scv o;
	o.u = 0;
	enum rl_scalar_status st;
	if (dt == RL_DT_BOOL) {
		if (!(s->flags & RL_SCF_B))
			return RL_SCALAR_NO;
		st = bool_op(op, a, b, &o);
	} else if (rl_dtype_is_int(dt)) {
		if (!(s->flags & RL_SCF_I))
			return RL_SCALAR_NO;
		st = is_unary(op) ? int_unary(op, p, dt, a, &o) : int_binary(op, p, dt, a, b, &o);
	} else if (dt == RL_DT_FLOAT || dt == RL_DT_FLOAT16 || dt == RL_DT_BFLOAT16) {
		if (!(s->flags & RL_SCF_F) || (op == RL_OP_Gelu && p->mode < 0))
			return RL_SCALAR_NO;
		int64_t bit = 0;
		st = is_unary(op) ? unary_f32(op, p, a.f, &o.f, &bit)
		                  : binary_f32(op, p, a.f, b.f, &o.f, &bit);
		if (rl_op_table[op].flags & RL_OPF_CMP)
			o.i = bit;
	} else if (dt == RL_DT_DOUBLE) {
		if (!(s->flags & RL_SCF_F) || (op == RL_OP_Gelu && p->mode < 0))
			return RL_SCALAR_NO;
		int64_t bit = 0;
		st = is_unary(op) ? unary_f64(op, p, a.d, &o.d, &bit)
		                  : binary_f64(op, p, a.d, b.d, &o.d, &bit);
		if (rl_op_table[op].flags & RL_OPF_CMP)
			o.i = bit;
	} else {
		return RL_SCALAR_NO;
	}
	if (st != RL_SCALAR_NO)
		*r = o;
	return st;
}

/* ---- tensors ------------------------------------------------------------ */

#define RL_SCALAR_MAX_IN 16 /* inputs of a variadic node (the C backend's limit) */

enum rl_scalar_status rl_scalar_node(const struct rl_graph *g, const struct rl_node *n,
                                     void *out)
{
	const struct rl_scalar_info *s = rl_scalar_info(n->op);
	if (!s || !(s->flags & RL_SCF_CALC) || n->nout < 1 || n->out[0] == RL_NONE || n->nin < 1 ||
	    n->nin > RL_SCALAR_MAX_IN)
		return RL_SCALAR_NO;
	unsigned fl = rl_op_table[n->op].flags;
	int nin = n->nin;
	if (((fl & RL_OPF_UNARY) && nin != 1) || ((fl & RL_OPF_BINARY) && nin != 2))
		return RL_SCALAR_NO;
	const struct rl_value *y = &g->values[n->out[0]];
	enum rl_dtype dt = RL_DT_UNDEFINED;
	const struct rl_value *in[RL_SCALAR_MAX_IN];
	for (int k = 0; k < nin; k++) {
		if (n->in[k] == RL_NONE)
			return RL_SCALAR_NO;
		in[k] = &g->values[n->in[k]];
		if (k == 0)
			dt = in[k]->dtype;
		int64_t ne = rl_shape_numel(&in[k]->shape);
		if (in[k]->dtype != dt || !rl_shape_is_static(&in[k]->shape) ||
		    (ne > 0 && (!in[k]->data || in[k]->nbytes < (size_t)ne * rl_dtype_size(dt))))
			return RL_SCALAR_NO;
	}
	bool cmp = fl & RL_OPF_CMP;
	if (y->dtype != (cmp ? RL_DT_BOOL : dt) || !rl_shape_is_static(&y->shape) ||
	    y->shape.rank > RL_MAX_RANK)
		return RL_SCALAR_NO;
	/* strides of each input read through the broadcast to y (0 on the
	 * broadcast axes), walked incrementally */
	int rank = y->shape.rank;
	int64_t st[RL_SCALAR_MAX_IN][RL_MAX_RANK], off[RL_SCALAR_MAX_IN] = {0}, idx[RL_MAX_RANK] = {0};
	for (int k = 0; k < nin; k++) {
		const struct rl_shape *is = &in[k]->shape;
		int64_t acc = 1;
		if (is->rank > rank)
			return RL_SCALAR_NO;
		for (int i = rank - 1; i >= 0; i--) {
			int j = i - (rank - is->rank);
			if (j < 0) {
				st[k][i] = 0;
				continue;
			}
			if (is->d[j].v != 1 && is->d[j].v != y->shape.d[i].v)
				return RL_SCALAR_NO;
			st[k][i] = is->d[j].v == 1 ? 0 : acc;
			acc *= is->d[j].v;
		}
	}
	struct rl_scalar_attrs p;
	rl_scalar_attrs(n, &p);
	enum rl_scalar_status worst = RL_SCALAR_OK;
	int64_t ne = rl_shape_numel(&y->shape);
	for (int64_t o = 0; o < ne; o++) {
		union rl_scv acc = rl_scalar_load(in[0]->data, dt, off[0]), r;
		if (nin == 1) {
			enum rl_scalar_status sst = rl_scalar_apply(n->op, &p, dt, acc, acc, &r);
			if (sst == RL_SCALAR_NO)
				return sst;
			if (sst == RL_SCALAR_UNDEF)
				worst = sst;
			acc = r;
		}
		for (int k = 1; k < nin; k++) {
			enum rl_scalar_status sst =
				rl_scalar_apply(n->op, &p, dt, acc, rl_scalar_load(in[k]->data, dt, off[k]), &r);
			if (sst == RL_SCALAR_NO)
				return sst;
			if (sst == RL_SCALAR_UNDEF)
				worst = sst;
			acc = r;
		}
		if (n->op == RL_OP_Mean && nin > 1) {
			if (dt == RL_DT_DOUBLE)
				acc.d /= (double)nin;
			else
				acc.f /= (float)nin;
		}
		rl_scalar_store(out, y->dtype, o, acc);
		for (int i = rank - 1; i >= 0; i--) {
			idx[i]++;
			for (int k = 0; k < nin; k++)
				off[k] += st[k][i];
			if (idx[i] < y->shape.d[i].v)
				break;
			for (int k = 0; k < nin; k++)
				off[k] -= st[k][i] * idx[i];
			idx[i] = 0;
		}
	}
	return worst;
}
