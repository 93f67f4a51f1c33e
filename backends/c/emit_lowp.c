/*
 * emit_lowp.c - low-precision dtypes in generated C: the conversion helpers
 * (written into a model's file only when it uses them), Cast and CastLike
 * to and from float8, float4, int4 and int2 kinds, Identity on them, and
 * BitCast between any two dtypes of one width.
 *
 * Storage is one element a byte (ir/lowp.c). The helpers are the same
 * algorithms as ir/lowp.c, which constant evaluation uses:
 * tests/unit/test_lowp.c compiles these and checks them against those on
 * every byte and on float inputs around every rounding boundary, so a model
 * computes the same bits whether a Cast folds or runs.
 *
 * Generated helpers, by name:
 *   rl_lp_dec / rl_lp_enc     a minifloat with m mantissa bits and a bias,
 *                             decode and encode (round to nearest even)
 *   rl_<t>_to_f, rl_f_to_<t>  per dtype, with its special codes
 *   rl_f_to_f8e8m0            exponent-only float8 with round_mode
 *   rl_to_i4 ... rl_to_u2     integer wrap (Cast); rl_sat_* clamp (for
 *                             quantization)
 *   rl_d2f_odd                double to float rounding to odd, so that a
 *                             double casts to float8 with one rounding
 */
#include "emit_lowp.h"

#include <string.h>

/* short names of the dtypes RL_DT_FLOAT8E4M3FN .. RL_DT_INT2 */
static const char *const lp_name[10] = {
	"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "u4",
	"i4",       "f4e2m1",     "f8e8m0", "u2",         "i2",
};

/* helper bits in cg->need_lowp */
#define LP_TO(t) (1u << ((t) - RL_DT_FLOAT8E4M3FN))         /* rl_<t>_to_f */
#define LP_FROM(t) (1u << (10 + (t) - RL_DT_FLOAT8E4M3FN))  /* rl_f_to_<t>, rl_to_<t> */
#define LP_D2F (1u << 20)                                   /* rl_d2f_odd */
#define LP_SAT(t) (1u << (21 + (t) - RL_DT_FLOAT8E4M3FN))   /* rl_sat_<t> (ints) */

static bool lp_int(enum rl_dtype t)
{
	return t == RL_DT_INT4 || t == RL_DT_UINT4 || t == RL_DT_INT2 || t == RL_DT_UINT2;
}

static bool lp_mini(enum rl_dtype t)
{
	return rl_dtype_is_lowp(t) && !lp_int(t) && t != RL_DT_FLOAT8E8M0;
}

static char *lbuf(void)
{
	static char bufs[8][1024];
	static int k;
	k = (k + 1) % 8;
	return bufs[k];
}

const char *cg_lowp_to_float(struct rl_cgen *cg, enum rl_dtype t, const char *e)
{
	if (!rl_dtype_is_lowp(t))
		return NULL;
	char *b = lbuf();
	if (lp_int(t)) {
		snprintf(b, 1024, "(float)%s", e);
		return b;
	}
	cg->need_lowp |= LP_TO(t);
	snprintf(b, 1024, "rl_%s_to_f(%s)", lp_name[t - RL_DT_FLOAT8E4M3FN], e);
	return b;
}

const char *cg_lowp_from_float(struct rl_cgen *cg, enum rl_dtype t, const char *v, bool sat,
                               int round_mode)
{
	if (!rl_dtype_is_lowp(t))
		return NULL;
	char *b = lbuf();
	const char *nm = lp_name[t - RL_DT_FLOAT8E4M3FN];
	if (lp_int(t) && sat) {
		cg->need_lowp |= LP_SAT(t);
		snprintf(b, 1024, "rl_sat_%s(%s)", nm, v);
	} else if (lp_int(t)) {
		cg->need_lowp |= LP_FROM(t);
		snprintf(b, 1024, "rl_to_%s((int64_t)(%s))", nm, v);
	} else if (t == RL_DT_FLOAT8E8M0) {
		cg->need_lowp |= LP_FROM(t);
		snprintf(b, 1024, "rl_f_to_%s(%s, %d, %d)", nm, v, sat, round_mode);
	} else {
		cg->need_lowp |= LP_FROM(t);
		snprintf(b, 1024, "rl_f_to_%s(%s, %d)", nm, v, sat);
	}
	return b;
}

/* ---- the helper text ----------------------------------------------------- */

static const char lp_dec_src[] =
	"/* minifloat with m mantissa bits and exponent bias `bias`, sign bit sbit */\n"
	"static float rl_lp_dec(unsigned b, int m, int bias, unsigned sbit)\n{\n"
	"    unsigned a = b & (sbit - 1), e = a >> m, f = a & ((1u << m) - 1);\n"
	"    float v = e ? ldexpf((float)(f | (1u << m)), (int)e - bias - m)\n"
	"                : ldexpf((float)f, 1 - bias - m);\n"
	"    return (b & sbit) ? -v : v;\n}\n\n";

static const char lp_enc_src[] =
	"/* float to a minifloat code, round to nearest even; maxc is the largest\n"
	" * finite magnitude, ovf and nanc the codes overflow (without saturation)\n"
	" * and NaN take, signed when sspec; nuz: no negative zero */\n"
	"static unsigned rl_lp_enc(float x, int m, int bias, unsigned maxc, unsigned sbit,\n"
	"                          unsigned ovf, unsigned nanc, int sspec, int nuz, int sat)\n{\n"
	"    uint32_t u, a;\n    unsigned s, code;\n"
	"    memcpy(&u, &x, 4);\n"
	"    s = (u >> 31) ? sbit : 0;\n    a = u & 0x7fffffffu;\n"
	"    if (a > 0x7f800000u)\n        return nanc ^ (sspec ? s : 0);\n"
	"    if (a == 0x7f800000u) {\n        code = maxc + 1;\n"
	"    } else if (a < 0x00800000u) {\n        code = 0;\n"
	"    } else {\n"
	"        int e = (int)(a >> 23) - 127, emin = 1 - bias;\n"
	"        uint32_t man = (a & 0x7fffffu) | 0x800000u, q, rem, half;\n"
	"        int sh = 23 - m + (e < emin ? emin - e : 0);\n"
	"        if (sh > 31)\n            sh = 31;\n"
	"        q = man >> sh;\n        rem = man & ((1u << sh) - 1);\n        half = 1u << (sh - 1);\n"
	"        if (rem > half || (rem == half && (q & 1u)))\n            q++;\n"
	"        code = e >= emin ? ((unsigned)(e + bias - 1) << m) + q : q;\n    }\n"
	"    if (code > maxc)\n        return sat ? (maxc | s) : (ovf | (sspec ? s : 0));\n"
	"    return code == 0 && nuz ? 0 : code | s;\n}\n\n";

static const char d2f_src[] =
	"/* double to float by truncation with a sticky last bit (round to odd):\n"
	" * rounding that once more to float8 equals rounding the double once */\n"
	"static float rl_d2f_odd(double x)\n{\n"
	"    float f = (float)x;\n    uint32_t u;\n"
	"    if (x != x || isinf(f) || (double)f == x)\n        return f;\n"
	"    if (fabs((double)f) > fabs(x))\n        f = nextafterf(f, 0.0f);\n"
	"    memcpy(&u, &f, 4);\n    u |= 1u;\n    memcpy(&f, &u, 4);\n    return f;\n}\n\n";

/* per dtype: the decoder's body and the encoder's rl_lp_enc arguments */
static const struct {
	const char *to_f;    /* return expression of rl_<t>_to_f(uint8_t b) */
	const char *enc;     /* rl_lp_enc arguments after x, before sat */
} lp_mini_src[10] = {
	[0] = {"(b & 0x7f) == 0x7f ? NAN : rl_lp_dec(b, 3, 7, 0x80)",
	       "3, 7, 0x7e, 0x80, 0x7f, 0x7f, 1, 0"},
	[1] = {"b == 0x80 ? NAN : rl_lp_dec(b, 3, 8, 0x80)",
	       "3, 8, 0x7f, 0x80, 0x80, 0x80, 0, 1"},
	[2] = {"(b & 0x7f) > 0x7c ? NAN : (b & 0x7f) == 0x7c ? ((b & 0x80) ? -INFINITY : INFINITY)\n"
	       "         : rl_lp_dec(b, 2, 15, 0x80)",
	       "2, 15, 0x7b, 0x80, 0x7c, 0x7e, 1, 0"},
	[3] = {"b == 0x80 ? NAN : rl_lp_dec(b, 2, 16, 0x80)",
	       "2, 16, 0x7f, 0x80, 0x80, 0x80, 0, 1"},
	[6] = {"rl_lp_dec(b & 15u, 1, 1, 0x8)",
	       "1, 1, 0x7, 0x8, 0x7, 0x8, 1, 0"},
};

static const char e8m0_src_to[] =
	"static float rl_f8e8m0_to_f(uint8_t b)\n{\n"
	"    return b == 0xff ? NAN : ldexpf(1.0f, (int)b - 127);\n}\n\n";

static const char e8m0_src_from[] =
	"/* float8e8m0: the exponent of x; mode 0 rounds up, 1 down, 2 to nearest\n"
	" * (onnx.numpy_helper.to_float8e8m0); the sign is ignored */\n"
	"static uint8_t rl_f_to_f8e8m0(float x, int sat, int mode)\n{\n"
	"    uint32_t u;\n    unsigned e;\n    int up = 0;\n"
	"    memcpy(&u, &x, 4);\n    e = (u >> 23) & 0xffu;\n"
	"    if (e == 0xffu)\n        return 0xff;\n"
	"    if (mode == 2)\n"
	"        up = (u & 0x400000u) && ((u & 0x200000u) || (u & 0x1fffffu) || e > 0);\n"
	"    else if (mode == 0)\n        up = (u & 0x7fffffu) != 0;\n"
	"    if (up && sat && e == 0xfeu)\n        up = 0;\n"
	"    return (uint8_t)(e + (unsigned)up);\n}\n\n";

void rl_emit_lowp_helpers(struct rl_buf *b, unsigned need)
{
	if (!need)
		return;
	rl_buf_printf(b, "/* low-precision dtypes, one element a byte (rlopt emit_lowp.c) */\n");
	bool dec = false, enc = false;
	for (int t = RL_DT_FLOAT8E4M3FN; t <= RL_DT_INT2; t++) {
		if (lp_mini((enum rl_dtype)t) && (need & LP_TO(t)))
			dec = true;
		if (lp_mini((enum rl_dtype)t) && (need & LP_FROM(t)))
			enc = true;
	}
	if (dec)
		rl_buf_printf(b, "%s", lp_dec_src);
	if (enc)
		rl_buf_printf(b, "%s", lp_enc_src);
	if (need & LP_D2F)
		rl_buf_printf(b, "%s", d2f_src);
	for (int t = RL_DT_FLOAT8E4M3FN; t <= RL_DT_INT2; t++) {
		int k = t - RL_DT_FLOAT8E4M3FN;
		const char *nm = lp_name[k];
		if (lp_mini((enum rl_dtype)t)) {
			if (need & LP_TO(t))
				rl_buf_printf(b, "static float rl_%s_to_f(uint8_t b)\n{\n    return %s;\n}\n\n",
				              nm, lp_mini_src[k].to_f);
			if (need & LP_FROM(t))
				rl_buf_printf(b, "static uint8_t rl_f_to_%s(float x, int sat)\n{\n"
				              "    return (uint8_t)rl_lp_enc(x, %s, sat);\n}\n\n",
				              nm, lp_mini_src[k].enc);
		} else if (t == RL_DT_FLOAT8E8M0) {
			if (need & LP_TO(t))
				rl_buf_printf(b, "%s", e8m0_src_to);
			if (need & LP_FROM(t))
				rl_buf_printf(b, "%s", e8m0_src_from);
		} else {
			int bits = t == RL_DT_INT4 || t == RL_DT_UINT4 ? 4 : 2;
			bool sgn = t == RL_DT_INT4 || t == RL_DT_INT2;
			int lo = sgn ? -(1 << (bits - 1)) : 0, hi = sgn ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
			const char *ct = sgn ? "int8_t" : "uint8_t";
			if ((need & LP_FROM(t)) && sgn)
				rl_buf_printf(b, "static int8_t rl_to_%s(int64_t v)\n{\n"
				              "    return (int8_t)((int)(((uint64_t)v & %uu) ^ %uu) - %d);\n}\n\n",
				              nm, (1u << bits) - 1, 1u << (bits - 1), 1 << (bits - 1));
			else if (need & LP_FROM(t))
				rl_buf_printf(b, "static uint8_t rl_to_%s(int64_t v)\n{\n"
				              "    return (uint8_t)((uint64_t)v & %uu);\n}\n\n",
				              nm, (1u << bits) - 1);
			if (need & LP_SAT(t))
				rl_buf_printf(b, "static %s rl_sat_%s(double v)\n{\n"
				              "    return v != v ? 0 : v < %d ? %d : v > %d ? %d : (%s)v;\n}\n\n",
				              ct, nm, lo, lo, hi, hi, ct);
		}
	}
}

/* ---- Cast, CastLike, Identity, BitCast ----------------------------------- */

bool cg_lowp_node(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	if (n->op == RL_OP_BitCast)
		return true;
	for (int k = 0; k < n->nin; k++) {
		const struct rl_value *v = cg_in(cg, node, k);
		if (v && rl_dtype_is_lowp(v->dtype))
			return true;
	}
	for (int k = 0; k < n->nout; k++) {
		const struct rl_value *v = cg_out(cg, node, k);
		if (v && rl_dtype_is_lowp(v->dtype))
			return true;
	}
	return false;
}

enum src_kind { SK_FLOAT, SK_DOUBLE, SK_INT };

/* Element expression of X0[o] of dtype `from` in its compute form. */
static const char *cast_src(struct rl_cgen *cg, enum rl_dtype from, enum src_kind *k)
{
	if (lp_int(from) || rl_dtype_is_int(from) || from == RL_DT_BOOL) {
		*k = SK_INT;
		return "X0[o]";
	}
	if (from == RL_DT_DOUBLE) {
		*k = SK_DOUBLE;
		return "X0[o]";
	}
	*k = SK_FLOAT;
	if (rl_dtype_is_lowp(from))
		return cg_lowp_to_float(cg, from, "X0[o]");
	return cg_load(cg, from, "X0[o]");
}

/* `src` (of kind k) converted to the storage of dtype `to`. */
static const char *cast_dst(struct rl_cgen *cg, enum rl_dtype to, const char *src,
                            enum src_kind k, bool sat, int mode)
{
	char *b = lbuf(), f[1024];
	if (lp_mini(to) && k == SK_DOUBLE) {
		cg->need_lowp |= LP_D2F;
		snprintf(f, sizeof(f), "rl_d2f_odd(%s)", src);
		return cg_lowp_from_float(cg, to, f, sat, mode);
	}
	if (rl_dtype_is_lowp(to) && !lp_int(to)) {
		snprintf(f, sizeof(f), "%s%s", k == SK_FLOAT ? "" : "(float)", src);
		return cg_lowp_from_float(cg, to, f, sat, mode);
	}
	if (lp_int(to)) /* truncate, then wrap: the saturate attribute is float8's */
		return cg_lowp_from_float(cg, to, src, false, mode);
	switch (to) {
	case RL_DT_FLOAT: snprintf(b, 1024, "(float)%s", src); return b;
	case RL_DT_DOUBLE: snprintf(b, 1024, "(double)%s", src); return b;
	case RL_DT_FLOAT16: case RL_DT_BFLOAT16:
		snprintf(f, sizeof(f), "(float)%s", src);
		return cg_store(cg, to, f);
	case RL_DT_BOOL: snprintf(b, 1024, "(uint8_t)(%s != 0)", src); return b;
	default: break;
	}
	/* an ordinary integer: from a float truncate through a wider signed
	 * integer, as emit_elemwise.c's casts do */
	if (k == SK_INT)
		snprintf(b, 1024, "(%s)%s", cg_ctype(to), src);
	else if (rl_dtype_size(to) <= 2)
		snprintf(b, 1024, "(%s)(int32_t)%s", cg_ctype(to), src);
	else if (to == RL_DT_UINT32)
		snprintf(b, 1024, "(uint32_t)(int64_t)%s", src);
	else
		snprintf(b, 1024, "(%s)%s", cg_ctype(to), src);
	return b;
}

static int round_mode_of(const struct rl_node *n)
{
	const char *m = rl_node_attr_str(n, "round_mode", "up");
	return !strcmp(m, "down") ? RL_LOWP_ROUND_DOWN
	       : !strcmp(m, "nearest") ? RL_LOWP_ROUND_NEAREST : RL_LOWP_ROUND_UP;
}

static bool castable(enum rl_dtype t)
{
	return rl_dtype_is_numeric(t) || rl_dtype_is_lowp(t);
}

static enum rl_status emit_lowp_cast(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	enum rl_dtype to = y->dtype;
	const char *m = rl_node_attr_str(n, "round_mode", "up");
	if (strcmp(m, "up") && strcmp(m, "down") && strcmp(m, "nearest"))
		return cg_error(cg, node, "round_mode '%s' is not up, down or nearest", m);
	if (!castable(x->dtype) || !castable(to))
		return cg_error(cg, node, "%s from %s to %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(x->dtype), rl_dtype_name(to));
	int64_t ne = rl_shape_numel(&y->shape);
	cg_line(cg, "/* %s %s -> %s */", rl_op_table[n->op].name, rl_dtype_name(x->dtype),
	        rl_dtype_name(to));
	if (ne == 0)
		return RL_OK;
	if (x->dtype == to) {
		cg_line(cg, "memcpy(Y0, X0, %lld);", (long long)ne);
		return RL_OK;
	}
	enum src_kind k;
	const char *src = cast_src(cg, x->dtype, &k);
	bool sat = rl_node_attr_int(n, "saturate", 1) != 0;
	cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)ne);
	cg_line(cg, "    Y0[o] = %s;", cast_dst(cg, to, src, k, sat, round_mode_of(n)));
	return RL_OK;
}

/* BitCast: the same bits. Memory holds sub-byte kinds one a byte (int4 and
 * int2 sign-extended), so those move through their low bits; a byte
 * reinterpreted as bool is true when nonzero. */
static enum rl_status emit_bitcast(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int bits = rl_dtype_bits(x->dtype);
	if (bits != rl_dtype_bits(y->dtype) || !castable(x->dtype) || !castable(y->dtype))
		return cg_error(cg, node, "BitCast from %s to %s is not supported",
		                rl_dtype_name(x->dtype), rl_dtype_name(y->dtype));
	int64_t ne = rl_shape_numel(&y->shape);
	cg_line(cg, "/* BitCast %s -> %s */", rl_dtype_name(x->dtype), rl_dtype_name(y->dtype));
	if (ne == 0)
		return RL_OK;
	bool sgn_out = y->dtype == RL_DT_INT4 || y->dtype == RL_DT_INT2;
	if (bits >= 8 && y->dtype != RL_DT_BOOL) {
		cg_line(cg, "memcpy(Y0, X0, %lld);", (long long)ne * (bits / 8));
	} else if (y->dtype == RL_DT_BOOL) {
		cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)ne);
		cg_line(cg, "    Y0[o] = (uint8_t)(X0[o] != 0);");
	} else if (sgn_out) {
		unsigned mask = (1u << bits) - 1, s = 1u << (bits - 1);
		cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)ne);
		cg_line(cg, "    Y0[o] = (int8_t)((int)(((unsigned)X0[o] & %uu) ^ %uu) - %u);", mask, s, s);
	} else {
		cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)ne);
		cg_line(cg, "    Y0[o] = (uint8_t)((unsigned)X0[o] & %uu);", (1u << bits) - 1);
	}
	return RL_OK;
}

enum rl_status rl_emit_c_lowp(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (!x || !y)
		return cg_error(cg, node, "%s: missing input or output", rl_op_table[n->op].name);
	switch (n->op) {
	case RL_OP_Identity: {
		int64_t ne = rl_shape_numel(&y->shape);
		cg_line(cg, "/* Identity */");
		if (ne > 0)
			cg_line(cg, "memcpy(Y0, X0, %lld);", (long long)(ne * (int64_t)rl_dtype_size(y->dtype)));
		return RL_OK;
	}
	case RL_OP_Cast: case RL_OP_CastLike:
		return emit_lowp_cast(cg, node);
	case RL_OP_BitCast:
		return emit_bitcast(cg, node);
	default:
		return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(rl_dtype_is_lowp(x->dtype) ? x->dtype : y->dtype));
	}
}
