/*
 * lowp.c - the low-precision dtypes: float8 (e4m3fn, e4m3fnuz, e5m2,
 * e5m2fnuz, e8m0), float4e2m1, int4/uint4 and int2/uint2.
 *
 * In memory every element takes one byte: float8 and float4 codes as they
 * are (a float4 code in the low 4 bits), int4/int2 sign-extended into an
 * int8_t, uint4/uint2 in a uint8_t. So every pass, constant and buffer
 * keeps "one element, rl_dtype_size bytes" and only the ONNX files see
 * the packed form (two 4-bit or four 2-bit elements a byte, the first in
 * the low bits): the reader unpacks, the writers pack.
 *
 * The scalar conversions here are ONNX Cast's (onnx 1.22 reference, which
 * uses ml_dtypes): floats round to nearest even at the target's precision
 * (subnormals included); with saturate (the default) a value beyond the
 * largest finite, and infinity, become that largest finite; without it
 * they become inf (e5m2) or NaN (the others). fnuz kinds have no negative
 * zero and one NaN, 0x80. float4e2m1 has neither inf nor NaN and always
 * saturates; a NaN becomes 0x8 (-0), a negative NaN 0, as ml_dtypes does. float8e8m0 keeps
 * the exponent only, rounded by round_mode like onnx.numpy_helper's
 * to_float8e8m0. Integers truncate toward zero and wrap to the width.
 * backends/c/emit_lowp.c writes the same routines into generated code;
 * tests/unit/test_lowp.c checks the two against each other on every input
 * byte and many floats, and tests/py/test_lowp.py checks both against
 * ml_dtypes.
 */
#include "infer_impl.h"

#include <math.h>
#include <string.h>

bool rl_dtype_is_lowp(enum rl_dtype t)
{
	return t >= RL_DT_FLOAT8E4M3FN && t <= RL_DT_INT2;
}

int rl_dtype_bits(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_UINT4: case RL_DT_INT4: case RL_DT_FLOAT4E2M1: return 4;
	case RL_DT_UINT2: case RL_DT_INT2: return 2;
	default: return 8 * (int)rl_dtype_size(t);
	}
}

size_t rl_dtype_packed_size(enum rl_dtype t, int64_t numel)
{
	int bits = rl_dtype_bits(t);
	if (bits >= 8)
		return (size_t)numel * (size_t)(bits / 8);
	int per = 8 / bits;
	return (size_t)((numel + per - 1) / per);
}

static bool lowp_signed_int(enum rl_dtype t)
{
	return t == RL_DT_INT4 || t == RL_DT_INT2;
}

void rl_lowp_unpack(enum rl_dtype t, const uint8_t *src, int64_t n, uint8_t *dst)
{
	int bits = rl_dtype_bits(t);
	if (bits >= 8) {
		memcpy(dst, src, (size_t)n);
		return;
	}
	int per = 8 / bits;
	unsigned mask = (1u << bits) - 1, sign = 1u << (bits - 1);
	for (int64_t i = 0; i < n; i++) {
		unsigned c = (src[i / per] >> (bits * (int)(i % per))) & mask;
		if (lowp_signed_int(t))
			c = (uint8_t)(int8_t)((int)(c ^ sign) - (int)sign);
		dst[i] = (uint8_t)c;
	}
}

void rl_lowp_pack(enum rl_dtype t, const uint8_t *src, int64_t n, uint8_t *dst)
{
	int bits = rl_dtype_bits(t);
	if (bits >= 8) {
		memcpy(dst, src, (size_t)n);
		return;
	}
	int per = 8 / bits;
	unsigned mask = (1u << bits) - 1;
	memset(dst, 0, rl_dtype_packed_size(t, n));
	for (int64_t i = 0; i < n; i++)
		dst[i / per] |= (uint8_t)((src[i] & mask) << (bits * (int)(i % per)));
}

/* ---- minifloats ---------------------------------------------------------- */

/* One minifloat format: m mantissa bits, exponent bias, the largest finite
 * magnitude code, the sign bit, the codes (without sign) that overflow
 * without saturate and NaN become, and whether those take the sign. */
struct rl_mini {
	int m, bias;
	unsigned maxc, sbit, ovf, nan;
	bool signed_special; /* ovf and nan codes take the sign */
	bool nuz;            /* no negative zero */
};

static bool mini_of(enum rl_dtype t, struct rl_mini *f)
{
	switch (t) {
	case RL_DT_FLOAT8E4M3FN:
		*f = (struct rl_mini){3, 7, 0x7e, 0x80, 0x7f, 0x7f, true, false};
		return true;
	case RL_DT_FLOAT8E4M3FNUZ:
		*f = (struct rl_mini){3, 8, 0x7f, 0x80, 0x80, 0x80, false, true};
		return true;
	case RL_DT_FLOAT8E5M2:
		*f = (struct rl_mini){2, 15, 0x7b, 0x80, 0x7c, 0x7e, true, false};
		return true;
	case RL_DT_FLOAT8E5M2FNUZ:
		*f = (struct rl_mini){2, 16, 0x7f, 0x80, 0x80, 0x80, false, true};
		return true;
	case RL_DT_FLOAT4E2M1:
		*f = (struct rl_mini){1, 1, 0x7, 0x8, 0x7, 0x8, true, false};
		return true;
	default:
		return false;
	}
}

static double mini_decode(const struct rl_mini *f, enum rl_dtype t, unsigned b)
{
	unsigned mag = b & (f->sbit - 1);
	bool neg = (b & f->sbit) != 0;
	switch (t) {
	case RL_DT_FLOAT8E4M3FN:
		if (mag == 0x7f)
			return NAN;
		break;
	case RL_DT_FLOAT8E5M2:
		if (mag > 0x7c)
			return NAN;
		if (mag == 0x7c)
			return neg ? -INFINITY : INFINITY;
		break;
	case RL_DT_FLOAT8E4M3FNUZ: case RL_DT_FLOAT8E5M2FNUZ:
		if (b == 0x80)
			return NAN;
		break;
	default:
		break;
	}
	int e = (int)(mag >> f->m);
	unsigned man = mag & ((1u << f->m) - 1);
	double v = e ? ldexp((double)(man | (1u << f->m)), e - f->bias - f->m)
	             : ldexp((double)man, 1 - f->bias - f->m);
	return neg ? -v : v;
}

/* float32 bits to a minifloat code, round to nearest even. */
static unsigned mini_encode(const struct rl_mini *f, uint32_t u, bool sat)
{
	unsigned s = (u >> 31) ? f->sbit : 0;
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u) /* float4's "NaN" 0x8 turns to 0 for a negative NaN */
		return f->nan ^ (f->signed_special ? s : 0);
	unsigned code;
	if (a == 0x7f800000u) {
		code = f->maxc + 1; /* overflows below */
	} else if (a < 0x00800000u) {
		code = 0; /* float32 subnormals are far below every format here */
	} else {
		int e = (int)(a >> 23) - 127, emin = 1 - f->bias;
		uint32_t man = (a & 0x7fffffu) | 0x800000u;
		int shift = 23 - f->m + (e < emin ? emin - e : 0);
		if (shift > 31)
			shift = 31;
		uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (q & 1)))
			q++;
		/* a normal's q carries the implicit bit, so the sum steps into the
		 * next exponent when rounding carries; a subnormal's q is the code */
		code = e >= emin ? ((unsigned)(e + f->bias - 1) << f->m) + q : q;
	}
	if (code > f->maxc) {
		if (sat)
			return f->maxc | s;
		return f->ovf | (f->signed_special ? s : 0);
	}
	if (code == 0 && f->nuz)
		return 0;
	return code | s;
}

/* Round a double to float by truncation with a sticky last bit (round to
 * odd), so that rounding it once more to a narrower format is the same as
 * rounding the double directly. */
static float d2f_odd(double x)
{
	float f = (float)x;
	if (isnan(x) || isinf(f) || (double)f == x)
		return f;
	if (fabs((double)f) > fabs(x))
		f = nextafterf(f, 0.0f);
	uint32_t u;
	memcpy(&u, &f, 4);
	u |= 1;
	memcpy(&f, &u, 4);
	return f;
}

/* float8e8m0 as onnx.numpy_helper.to_float8e8m0 computes it. */
static uint8_t e8m0_encode(uint32_t u, bool sat, int round_mode)
{
	unsigned e = (u >> 23) & 0xff;
	if (e == 0xff)
		return 0xff;
	bool up = false;
	if (round_mode == RL_LOWP_ROUND_NEAREST) {
		bool g = (u & 0x400000u) != 0, r = (u & 0x200000u) != 0,
		     st = (u & 0x1fffffu) != 0, lsb = e > 0;
		up = g && (r || st || lsb);
	} else if (round_mode == RL_LOWP_ROUND_UP) {
		up = (u & 0x7fffffu) != 0;
	}
	if (up && sat && e == 0xfe)
		up = false;
	return (uint8_t)(e + up);
}

/* ---- scalars ------------------------------------------------------------- */

double rl_lowp_to_double(enum rl_dtype t, uint8_t b)
{
	struct rl_mini f;
	if (mini_of(t, &f))
		return mini_decode(&f, t, b);
	switch (t) {
	case RL_DT_FLOAT8E8M0: return b == 0xff ? NAN : ldexp(1.0, (int)b - 127);
	case RL_DT_INT4: case RL_DT_INT2: return (double)(int8_t)b;
	default: return (double)b;
	}
}

static uint8_t int_wrap(enum rl_dtype t, int64_t x, bool sat)
{
	int bits = rl_dtype_bits(t);
	if (lowp_signed_int(t)) {
		int64_t lo = -(INT64_C(1) << (bits - 1)), hi = -lo - 1;
		if (sat)
			x = x < lo ? lo : x > hi ? hi : x;
		unsigned c = (unsigned)((uint64_t)x & ((1u << bits) - 1));
		return (uint8_t)(int8_t)((int)(c ^ (1u << (bits - 1))) - (1 << (bits - 1)));
	}
	if (sat)
		x = x < 0 ? 0 : x > (1 << bits) - 1 ? (1 << bits) - 1 : x;
	return (uint8_t)((uint64_t)x & ((1u << bits) - 1));
}

uint8_t rl_lowp_from_double(enum rl_dtype t, double x, bool saturate, int round_mode)
{
	struct rl_mini f;
	float xf = d2f_odd(x);
	uint32_t u;
	memcpy(&u, &xf, 4);
	if (mini_of(t, &f))
		return (uint8_t)mini_encode(&f, u, saturate);
	if (t == RL_DT_FLOAT8E8M0) {
		memcpy(&u, &(float){(float)x}, 4);
		return e8m0_encode(u, saturate, round_mode);
	}
	return int_wrap(t, (int64_t)x, saturate);
}

uint8_t rl_lowp_from_int(enum rl_dtype t, int64_t x, bool saturate)
{
	if (t == RL_DT_INT4 || t == RL_DT_UINT4 || t == RL_DT_INT2 || t == RL_DT_UINT2)
		return int_wrap(t, x, saturate);
	return rl_lowp_from_double(t, (double)(float)x, saturate, RL_LOWP_ROUND_UP);
}

/* ---- arrays -------------------------------------------------------------- */

static bool is_lowp_int(enum rl_dtype t)
{
	return t == RL_DT_INT4 || t == RL_DT_UINT4 || t == RL_DT_INT2 || t == RL_DT_UINT2;
}

/* element i of a numeric or low-precision array: as an integer when the
 * dtype is one (*isint), else as a double */
static void get_elem(const void *p, enum rl_dtype t, int64_t i, int64_t *iv, double *dv,
                     bool *isint)
{
	*isint = true;
	switch (t) {
	case RL_DT_INT8: *iv = ((const int8_t *)p)[i]; return;
	case RL_DT_UINT8: *iv = ((const uint8_t *)p)[i]; return;
	case RL_DT_BOOL: *iv = ((const uint8_t *)p)[i] != 0; return;
	case RL_DT_INT16: *iv = ((const int16_t *)p)[i]; return;
	case RL_DT_UINT16: *iv = ((const uint16_t *)p)[i]; return;
	case RL_DT_INT32: *iv = ((const int32_t *)p)[i]; return;
	case RL_DT_UINT32: *iv = ((const uint32_t *)p)[i]; return;
	case RL_DT_INT64: *iv = ((const int64_t *)p)[i]; return;
	case RL_DT_UINT64: *iv = (int64_t)((const uint64_t *)p)[i]; return;
	default: break;
	}
	if (is_lowp_int(t)) {
		*iv = (int64_t)rl_lowp_to_double(t, ((const uint8_t *)p)[i]);
		return;
	}
	*isint = false;
	switch (t) {
	case RL_DT_FLOAT: *dv = ((const float *)p)[i]; break;
	case RL_DT_DOUBLE: *dv = ((const double *)p)[i]; break;
	case RL_DT_FLOAT16: *dv = rl_half_to_float(((const uint16_t *)p)[i]); break;
	case RL_DT_BFLOAT16: *dv = rl_bf16_to_float(((const uint16_t *)p)[i]); break;
	default: *dv = rl_lowp_to_double(t, ((const uint8_t *)p)[i]); break;
	}
}

bool rl_lowp_cast(const void *src, enum rl_dtype from, void *dst, enum rl_dtype to,
                  int64_t n, bool saturate, int round_mode)
{
	bool ok_from = rl_dtype_is_numeric(from) || rl_dtype_is_lowp(from);
	bool ok_to = rl_dtype_is_numeric(to) || rl_dtype_is_lowp(to);
	if (!ok_from || !ok_to || (!rl_dtype_is_lowp(from) && !rl_dtype_is_lowp(to)))
		return false;
	for (int64_t i = 0; i < n; i++) {
		int64_t iv = 0;
		double dv = 0;
		bool isint;
		get_elem(src, from, i, &iv, &dv, &isint);
		if (rl_dtype_is_lowp(to)) {
			if (isint && is_lowp_int(to))
				((uint8_t *)dst)[i] = rl_lowp_from_int(to, iv, saturate);
			else if (isint)
				((uint8_t *)dst)[i] = rl_lowp_from_double(to, (double)(float)iv, saturate,
				                                          round_mode);
			else if (is_lowp_int(to) && !(fabs(dv) < 9.2e18))
				return false;
			else
				((uint8_t *)dst)[i] = rl_lowp_from_double(to, dv, saturate, round_mode);
			continue;
		}
		/* from a low-precision dtype to an ordinary one */
		if (isint)
			dv = (double)iv;
		switch (to) {
		case RL_DT_FLOAT: ((float *)dst)[i] = (float)dv; continue;
		case RL_DT_DOUBLE: ((double *)dst)[i] = dv; continue;
		case RL_DT_FLOAT16: ((uint16_t *)dst)[i] = rl_float_to_half((float)dv); continue;
		case RL_DT_BFLOAT16: ((uint16_t *)dst)[i] = rl_float_to_bf16((float)dv); continue;
		case RL_DT_BOOL: ((uint8_t *)dst)[i] = dv != 0; continue;
		default: break;
		}
		/* to an integer: floats truncate, only where ONNX defines it */
		if (!isint) {
			if (!(fabs(dv) < 2147483648.0))
				return false;
			iv = (int64_t)dv;
		}
		switch (to) {
		case RL_DT_INT8: ((int8_t *)dst)[i] = (int8_t)(uint8_t)(uint64_t)iv; break;
		case RL_DT_UINT8: ((uint8_t *)dst)[i] = (uint8_t)(uint64_t)iv; break;
		case RL_DT_INT16: ((int16_t *)dst)[i] = (int16_t)(uint16_t)(uint64_t)iv; break;
		case RL_DT_UINT16: ((uint16_t *)dst)[i] = (uint16_t)(uint64_t)iv; break;
		case RL_DT_INT32: ((int32_t *)dst)[i] = (int32_t)(uint32_t)(uint64_t)iv; break;
		case RL_DT_UINT32: ((uint32_t *)dst)[i] = (uint32_t)(uint64_t)iv; break;
		case RL_DT_INT64: ((int64_t *)dst)[i] = iv; break;
		case RL_DT_UINT64: ((uint64_t *)dst)[i] = (uint64_t)iv; break;
		default: return false;
		}
	}
	return true;
}

/* ---- BitCast ------------------------------------------------------------- */

enum rl_status rl_infer_bitcast_to(struct rl_graph *g, uint32_t node, enum rl_dtype *to)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_attr *a = rl_node_attr(n, "to");
	if (!a || a->kind != RL_ATTR_INT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "attribute 'to' is missing");
	enum rl_dtype t = a->i > 0 && a->i < RL_DT_COUNT_ ? (enum rl_dtype)a->i : RL_DT_UNDEFINED;
	bool ok_t = rl_dtype_is_numeric(t) || rl_dtype_is_lowp(t);
	bool ok_x = rl_dtype_is_numeric(x->dtype) || rl_dtype_is_lowp(x->dtype);
	if (!ok_t || !ok_x)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "BitCast from %s to dtype %lld is "
		                      "not supported", rl_dtype_name(x->dtype), (long long)a->i);
	if (rl_dtype_bits(t) != rl_dtype_bits(x->dtype))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "BitCast from %s (%d bits) to %s (%d bits): "
		                      "the widths must be equal", rl_dtype_name(x->dtype),
		                      rl_dtype_bits(x->dtype), rl_dtype_name(t), rl_dtype_bits(t));
	*to = t;
	return RL_OK;
}
