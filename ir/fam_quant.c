/*
 * fam_quant.c - the quantization family: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear and the integer products MatMulInteger,
 * QLinearMatMul, ConvInteger and QLinearConv. Shape and dtype inference,
 * FLOPs and bytes, and the host-side semantics of QuantizeLinear and
 * DequantizeLinear that constant evaluation and folding use (see quant.h).
 *
 * Dtypes: quantized tensors are int8, uint8, int16, uint16, int4, uint4,
 * int2, uint2 (and int32 as a DequantizeLinear input), and the float8
 * kinds (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) and float4e2m1, stored one
 * element a byte (ir/lowp.c); scales are float32, float16, bfloat16 or
 * float64. The integer kinds saturate to their range; float8 casts x /
 * scale with the `saturate` attribute and ignores the zero point, float4
 * casts x / scale + zero point (always saturating), as the reference does;
 * DequantizeLinear of float8/float4 is float(x) * scale. The products
 * take int8/uint8 operands, accumulate in int32 and (QLinear*) requantize
 * with
 *   y = saturate(round_half_even(acc * (a_scale * b_scale / y_scale) + y_zero_point))
 * where the multiplier is computed in the scales' precision and the
 * product in double, as the ONNX reference does. Zero points: scalars, or
 * per row of A / per column of B (per output channel of W).
 */
#include "infer_impl.h"
#include "cost_impl.h"
#include "quant.h"

#include <math.h>
#include <string.h>

/* ---- per-dtype hooks ---------------------------------------------------- */

double rl_quant_round_sat(double v, double lo, double hi)
{
	if (!(v >= lo))
		return lo;
	if (v > hi)
		return hi;
	return nearbyint(v); /* the default rounding mode: half to even */
}

#define QLOAD(T, name)                                                         \
	static double qload_##name(const void *p, int64_t i)                   \
	{                                                                      \
		return (double)((const T *)p)[i];                              \
	}
QLOAD(int8_t, i8) /* int4 and int2 too: sign-extended bytes */
QLOAD(uint8_t, u8) /* uint4 and uint2 too */
QLOAD(int16_t, i16)
QLOAD(uint16_t, u16)
QLOAD(int32_t, i32)
#undef QLOAD

/* x / scale rounded, plus the zero point, saturated: the integer rule. The
 * quotient is clamped to +-2^22 first (beyond any 16-bit range), exactly
 * what the generated code does. */
#define QSTORE(T, name, lo, hi)                                                \
	static void qstore_##name(void *p, int64_t i, double q, double zp,     \
	                          bool saturate, enum rl_dtype prec)           \
	{                                                                      \
		(void)saturate;                                                \
		(void)prec;                                                    \
		double r = rl_quant_round_sat(q, -4194304.0, 4194304.0) + zp;  \
		((T *)p)[i] = (T)rl_quant_round_sat(r, lo, hi);                \
	}
QSTORE(int8_t, i8, -128, 127)
QSTORE(uint8_t, u8, 0, 255)
QSTORE(int16_t, i16, -32768, 32767)
QSTORE(uint16_t, u16, 0, 65535)
QSTORE(int32_t, i32, INT32_MIN, INT32_MAX)
QSTORE(int8_t, i4, -8, 7)
QSTORE(uint8_t, u4, 0, 15)
QSTORE(int8_t, i2, -2, 1)
QSTORE(uint8_t, u2, 0, 3)
#undef QSTORE

/* v rounded to half or bfloat16 t (other t: v) */
static double to_prec(enum rl_dtype t, double v)
{
	if (t == RL_DT_FLOAT16)
		return rl_half_to_float(rl_float_to_half((float)v));
	if (t == RL_DT_BFLOAT16)
		return rl_bf16_to_float(rl_float_to_bf16((float)v));
	return v;
}

/* v rounded to precision t (the sum x / scale + zero point of float4) */
static double in_prec(enum rl_dtype t, double v)
{
	return t == RL_DT_DOUBLE ? v : t == RL_DT_FLOAT16 || t == RL_DT_BFLOAT16 ? to_prec(t, v)
	                                                                          : (float)v;
}

/* float8: the code of x / scale as Cast rounds it (to nearest even; with
 * saturate, beyond the largest finite and inf become it); the reference
 * ignores the zero point (which the standard requires to be 0).
 * float4e2m1: (x / scale + zero point) in the compute precision, then the
 * always saturating cast. */
#define QFLOAT(name, DT)                                                       \
	static double qload_##name(const void *p, int64_t i)                   \
	{                                                                      \
		return rl_lowp_to_double(DT, ((const uint8_t *)p)[i]);         \
	}                                                                      \
	static void qstore_##name(void *p, int64_t i, double q, double zp,     \
	                          bool saturate, enum rl_dtype prec)           \
	{                                                                      \
		if (DT == RL_DT_FLOAT4E2M1) {                                  \
			q = in_prec(prec, q + zp);                             \
			saturate = true;                                       \
		}                                                              \
		((uint8_t *)p)[i] = rl_lowp_from_double(DT, q, saturate,       \
		                                        RL_LOWP_ROUND_NEAREST); \
	}
QFLOAT(f8e4m3fn, RL_DT_FLOAT8E4M3FN)
QFLOAT(f8e4m3fnuz, RL_DT_FLOAT8E4M3FNUZ)
QFLOAT(f8e5m2, RL_DT_FLOAT8E5M2)
QFLOAT(f8e5m2fnuz, RL_DT_FLOAT8E5M2FNUZ)
QFLOAT(f4e2m1, RL_DT_FLOAT4E2M1)
#undef QFLOAT

static const struct rl_qtype qtypes[] = {
	{RL_DT_INT8, true, -128, 127, qload_i8, qstore_i8},
	{RL_DT_UINT8, true, 0, 255, qload_u8, qstore_u8},
	{RL_DT_INT16, true, -32768, 32767, qload_i16, qstore_i16},
	{RL_DT_UINT16, true, 0, 65535, qload_u16, qstore_u16},
	{RL_DT_INT32, true, INT32_MIN, INT32_MAX, qload_i32, qstore_i32},
	{RL_DT_INT4, true, -8, 7, qload_i8, qstore_i4},
	{RL_DT_UINT4, true, 0, 15, qload_u8, qstore_u4},
	{RL_DT_INT2, true, -2, 1, qload_i8, qstore_i2},
	{RL_DT_UINT2, true, 0, 3, qload_u8, qstore_u2},
	{RL_DT_FLOAT8E4M3FN, false, 0, 0, qload_f8e4m3fn, qstore_f8e4m3fn},
	{RL_DT_FLOAT8E4M3FNUZ, false, 0, 0, qload_f8e4m3fnuz, qstore_f8e4m3fnuz},
	{RL_DT_FLOAT8E5M2, false, 0, 0, qload_f8e5m2, qstore_f8e5m2},
	{RL_DT_FLOAT8E5M2FNUZ, false, 0, 0, qload_f8e5m2fnuz, qstore_f8e5m2fnuz},
	{RL_DT_FLOAT4E2M1, false, 0, 0, qload_f4e2m1, qstore_f4e2m1},
};

const struct rl_qtype *rl_qtype_of(enum rl_dtype dt)
{
	for (size_t k = 0; k < sizeof(qtypes) / sizeof(qtypes[0]); k++)
		if (qtypes[k].dt == dt)
			return &qtypes[k];
	return NULL;
}

/* ---- layouts ------------------------------------------------------------ */

static bool scale_dtype_ok(enum rl_dtype t)
{
	return t == RL_DT_FLOAT || t == RL_DT_FLOAT16 || t == RL_DT_BFLOAT16 || t == RL_DT_DOUBLE;
}

bool rl_qlayout_of(const struct rl_graph *g, const struct rl_node *n, struct rl_qlayout *l,
                   char *why, size_t whylen)
{
	const struct rl_shape *sx = &g->values[n->in[0]].shape;
	const struct rl_shape *ss = &g->values[n->in[1]].shape;
	uint32_t zv = rl_node_in(n, 2);
	memset(l, 0, sizeof(*l));
	l->outer = l->dim = l->inner = 1;
	if (zv != RL_NONE && g->values[zv].shape.rank >= 0 && ss->rank >= 0 &&
	    !rl_shape_equal(&g->values[zv].shape, ss) &&
	    !(rl_shape_numel(&g->values[zv].shape) == 1 && rl_shape_numel(ss) == 1)) {
		snprintf(why, whylen, "zero point and scale shapes differ");
		return false;
	}
	int64_t bs = n->opset >= 21 ? rl_node_attr_int(n, "block_size", 0) : 0;
	int64_t ns = rl_shape_numel(ss);
	if (sx->rank < 0 || ss->rank < 0)
		return true;
	if (bs < 0) {
		snprintf(why, whylen, "block_size %lld is negative", (long long)bs);
		return false;
	}
	if (bs == 0 && ss->rank <= 1 && ns == 1) {
		/* one run over every element */
		l->kind = RL_QK_TENSOR;
		l->dim = rl_shape_numel(sx);
		return true;
	}
	int ax;
	if (!rl_axis_norm(rl_node_attr_int(n, "axis", 1), sx->rank, false, &ax)) {
		snprintf(why, whylen, "axis %lld is out of range for rank %d",
		         (long long)rl_node_attr_int(n, "axis", 1), sx->rank);
		return false;
	}
	l->axis = ax;
	for (int i = 0; i < sx->rank; i++) {
		int64_t d = sx->d[i].v;
		if (i < ax)
			l->outer *= d;
		else if (i == ax)
			l->dim = d;
		else
			l->inner *= d;
	}
	char b1[RL_SSTR], b2[RL_SSTR];
	if (bs == 0) {
		if (ss->rank != 1 || (ss->d[0].v >= 0 && sx->d[ax].v >= 0 &&
		                      ss->d[0].v != sx->d[ax].v)) {
			snprintf(why, whylen, "scale of shape %s does not fit input %s on axis %d",
			         rl_sstr(ss, b1), rl_sstr(sx, b2), ax);
			return false;
		}
		l->kind = RL_QK_AXIS;
		return true;
	}
	l->kind = RL_QK_BLOCK;
	l->block = bs;
	bool ok = ss->rank == sx->rank;
	for (int i = 0; ok && i < sx->rank; i++) {
		int64_t d = sx->d[i].v, s = ss->d[i].v;
		if (d < 0 || s < 0)
			continue;
		ok = i == ax ? s == (d + bs - 1) / bs : s == d;
	}
	if (!ok) {
		snprintf(why, whylen, "blocked scale of shape %s does not fit input %s with "
		         "block_size %lld on axis %d", rl_sstr(ss, b1), rl_sstr(sx, b2),
		         (long long)bs, ax);
		return false;
	}
	l->nblocks = ss->d[ax].v;
	return true;
}

enum rl_dtype rl_quant_out_dtype(const struct rl_graph *g, const struct rl_node *n)
{
	uint32_t zv = rl_node_in(n, 2);
	if (zv != RL_NONE)
		return g->values[zv].dtype;
	int64_t od = n->opset >= 21 ? rl_node_attr_int(n, "output_dtype", 0) : 0;
	return od ? (enum rl_dtype)od : RL_DT_UINT8;
}

/* ---- inference ---------------------------------------------------------- */

static enum rl_status infer_qdq(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_value *x = rl_infer_in(g, n, 0), *s = rl_infer_in(g, n, 1);
	const struct rl_value *z = rl_infer_in(g, n, 2);
	bool q = n->op == RL_OP_QuantizeLinear;
	if (!scale_dtype_ok(s->dtype))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "scale has dtype %s; a float type is "
		                      "required", rl_dtype_name(s->dtype));
	enum rl_dtype out;
	if (q) {
		if (!rl_dtype_is_float(x->dtype) && x->dtype != RL_DT_INT32)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input has dtype %s; QuantizeLinear "
			                      "takes a float or int32 input", rl_dtype_name(x->dtype));
		out = rl_quant_out_dtype(g, n);
		int64_t od = n->opset >= 21 ? rl_node_attr_int(n, "output_dtype", 0) : 0;
		if (z && od && od != (int64_t)z->dtype)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "output_dtype %lld differs from the "
			                      "zero point's dtype %s", (long long)od,
			                      rl_dtype_name(z->dtype));
	} else {
		if (z && z->dtype != x->dtype)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "zero point has dtype %s but the "
			                      "input %s", rl_dtype_name(z->dtype),
			                      rl_dtype_name(x->dtype));
		int64_t od = n->opset >= 23 ? rl_node_attr_int(n, "output_dtype", 0) : 0;
		out = od ? (enum rl_dtype)od : s->dtype;
		if (!scale_dtype_ok(out))
			return rl_graph_error(g, n, RL_ERR_SHAPE, "output_dtype %lld is not a float "
			                      "type", (long long)od);
	}
	char why[256];
	struct rl_qlayout l;
	if (!rl_qlayout_of(g, n, &l, why, sizeof(why)))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "%s", why);
	return rl_infer_set(g, node, 0, out, &x->shape);
}

static enum rl_status infer_dynq(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_value *x = rl_infer_in(g, n, 0);
	if (x->dtype != RL_DT_FLOAT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input has dtype %s; "
		                      "DynamicQuantizeLinear takes float32", rl_dtype_name(x->dtype));
	struct rl_shape sc = {.rank = 0};
	enum rl_status st = rl_infer_set(g, node, 0, RL_DT_UINT8, &x->shape);
	if (st == RL_OK)
		st = rl_infer_set(g, node, 1, RL_DT_FLOAT, &sc);
	if (st == RL_OK)
		st = rl_infer_set(g, node, 2, RL_DT_UINT8, &sc);
	return st;
}

static bool is_q8(enum rl_dtype t)
{
	return t == RL_DT_INT8 || t == RL_DT_UINT8;
}

/* numpy.matmul's shape rule for operands in slots ia and ib. */
static enum rl_status mm_shape(struct rl_graph *g, uint32_t node, int ia, int ib,
                               struct rl_shape *out)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_shape *sa = &rl_infer_in(g, n, ia)->shape;
	const struct rl_shape *sb = &rl_infer_in(g, n, ib)->shape;
	char ba[RL_SSTR], bb[RL_SSTR];
	out->rank = -1;
	if (sa->rank == 0 || sb->rank == 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "product of %s by %s: operands must "
		                      "have rank >= 1", rl_sstr(sa, ba), rl_sstr(sb, bb));
	if (sa->rank < 0 || sb->rank < 0)
		return RL_OK;
	struct rl_shape pa = *sa, pb = *sb;
	if (pa.rank == 1) {
		pa.rank = 2;
		pa.d[1] = pa.d[0];
		pa.d[0] = rl_dim_num(1);
	}
	if (pb.rank == 1) {
		pb.rank = 2;
		pb.d[1] = rl_dim_num(1);
	}
	if (rl_dim_differ(pa.d[pa.rank - 1], pb.d[pb.rank - 2]))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "product of %s by %s: inner dimensions "
		                      "differ", rl_sstr(sa, ba), rl_sstr(sb, bb));
	struct rl_shape ta = pa, tb = pb;
	ta.rank -= 2;
	tb.rank -= 2;
	if (!rl_shape_broadcast(&ta, &tb, out))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "product of %s by %s: batch dimensions "
		                      "do not broadcast", rl_sstr(sa, ba), rl_sstr(sb, bb));
	if (sa->rank >= 2)
		out->d[out->rank++] = pa.d[pa.rank - 2];
	if (sb->rank >= 2)
		out->d[out->rank++] = pb.d[pb.rank - 1];
	return RL_OK;
}

/* A scale or zero point of a product: a scalar or a 1-D tensor of `len`
 * entries (per row / per column); len < 0 accepts any 1-D length. */
static enum rl_status check_param(struct rl_graph *g, uint32_t node, int slot, const char *what,
                                  bool scale, enum rl_dtype want)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_value *v = rl_infer_in(g, n, slot);
	if (!v)
		return RL_OK;
	if (scale ? !scale_dtype_ok(v->dtype) : v->dtype != want)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "%s has dtype %s; %s expected", what,
		                      rl_dtype_name(v->dtype),
		                      scale ? "a float type" : rl_dtype_name(want));
	return RL_OK;
}

static enum rl_status infer_mm(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	bool ql = n->op == RL_OP_QLinearMatMul;
	int ia = 0, ib = ql ? 3 : 1;
	enum rl_dtype ta = rl_infer_in(g, n, ia)->dtype, tb = rl_infer_in(g, n, ib)->dtype;
	if (!is_q8(ta) || !is_q8(tb))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "operands are %s and %s; int8 or uint8 "
		                      "expected", rl_dtype_name(ta), rl_dtype_name(tb));
	enum rl_status st = RL_OK;
	enum rl_dtype out = RL_DT_INT32;
	if (ql) {
		const struct rl_value *yz = rl_infer_in(g, n, 7);
		out = yz->dtype;
		st = check_param(g, node, 1, "a_scale", true, ta);
		if (st == RL_OK)
			st = check_param(g, node, 2, "a_zero_point", false, ta);
		if (st == RL_OK)
			st = check_param(g, node, 4, "b_scale", true, tb);
		if (st == RL_OK)
			st = check_param(g, node, 5, "b_zero_point", false, tb);
		if (st == RL_OK)
			st = check_param(g, node, 6, "y_scale", true, out);
		if (st == RL_OK && !is_q8(out))
			st = rl_graph_error(g, n, RL_ERR_SHAPE, "y_zero_point has dtype %s; int8 or "
			                    "uint8 expected", rl_dtype_name(out));
	} else {
		st = check_param(g, node, 2, "a_zero_point", false, ta);
		if (st == RL_OK)
			st = check_param(g, node, 3, "b_zero_point", false, tb);
	}
	if (st != RL_OK)
		return st;
	struct rl_shape s;
	st = mm_shape(g, node, ia, ib, &s);
	if (st != RL_OK)
		return st;
	return rl_infer_set(g, node, 0, out, &s);
}

static enum rl_status infer_conv(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	bool ql = n->op == RL_OP_QLinearConv;
	int iw = ql ? 3 : 1;
	const struct rl_value *x = rl_infer_in(g, n, 0), *w = rl_infer_in(g, n, iw);
	if (!is_q8(x->dtype) || !is_q8(w->dtype))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input and weight are %s and %s; int8 or "
		                      "uint8 expected", rl_dtype_name(x->dtype),
		                      rl_dtype_name(w->dtype));
	enum rl_dtype out = RL_DT_INT32;
	enum rl_status st = RL_OK;
	if (ql) {
		out = rl_infer_in(g, n, 7)->dtype;
		st = check_param(g, node, 1, "x_scale", true, x->dtype);
		if (st == RL_OK)
			st = check_param(g, node, 2, "x_zero_point", false, x->dtype);
		if (st == RL_OK)
			st = check_param(g, node, 4, "w_scale", true, w->dtype);
		if (st == RL_OK)
			st = check_param(g, node, 5, "w_zero_point", false, w->dtype);
		if (st == RL_OK)
			st = check_param(g, node, 6, "y_scale", true, out);
		if (st == RL_OK)
			st = check_param(g, node, 8, "B", false, RL_DT_INT32);
		if (st == RL_OK && !is_q8(out))
			st = rl_graph_error(g, n, RL_ERR_SHAPE, "y_zero_point has dtype %s; int8 or "
			                    "uint8 expected", rl_dtype_name(out));
	} else {
		st = check_param(g, node, 2, "x_zero_point", false, x->dtype);
		if (st == RL_OK)
			st = check_param(g, node, 3, "w_zero_point", false, w->dtype);
	}
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape, *sw = &w->shape;
	struct rl_shape s = {.rank = -1};
	if (sx->rank < 0 || sw->rank < 0)
		return rl_infer_set(g, node, 0, out, &s);
	char bx[RL_SSTR], bw[RL_SSTR];
	int nsp = sx->rank - 2;
	if (nsp < 1 || sw->rank != sx->rank)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s and weight %s must have the "
		                      "same rank >= 3", rl_sstr(sx, bx), rl_sstr(sw, bw));
	int64_t group = rl_node_attr_int(n, "group", 1);
	if (group < 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "group %lld must be >= 1",
		                      (long long)group);
	struct rl_dim c = sx->d[1], m = sw->d[0], cin = sw->d[1];
	if (c.v >= 0 && cin.v >= 0 && cin.v * group != c.v)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input %s has %lld channels but weight %s "
		                      "with group %lld expects %lld", rl_sstr(sx, bx), (long long)c.v,
		                      rl_sstr(sw, bw), (long long)group, (long long)(cin.v * group));
	if (m.v >= 0 && m.v % group != 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "%lld output channels do not divide "
		                      "into %lld groups", (long long)m.v, (long long)group);
	struct rl_window win;
	st = rl_window_read(g, node, nsp, sw, &win);
	if (st != RL_OK)
		return st;
	win.must_cover = true;
	s.rank = sx->rank;
	s.d[0] = sx->d[0];
	s.d[1] = m;
	for (int i = 0; i < nsp && st == RL_OK; i++)
		st = rl_window_out(g, node, &win, i, sx->d[2 + i], 2 + i, &s.d[2 + i]);
	if (st != RL_OK)
		return st;
	return rl_infer_set(g, node, 0, out, &s);
}

enum rl_status rl_infer_quant(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_QuantizeLinear: case RL_OP_DequantizeLinear: return infer_qdq(g, node);
	case RL_OP_DynamicQuantizeLinear: return infer_dynq(g, node);
	case RL_OP_MatMulInteger: case RL_OP_QLinearMatMul: return infer_mm(g, node);
	case RL_OP_ConvInteger: case RL_OP_QLinearConv: return infer_conv(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no quantization shape rule for this operator");
	}
}

/* ---- host semantics of QuantizeLinear / DequantizeLinear ---------------- */

static double load_num(const void *p, enum rl_dtype t, int64_t i)
{
	switch (t) {
	case RL_DT_FLOAT: return ((const float *)p)[i];
	case RL_DT_DOUBLE: return ((const double *)p)[i];
	case RL_DT_FLOAT16: return rl_half_to_float(((const uint16_t *)p)[i]);
	case RL_DT_BFLOAT16: return rl_bf16_to_float(((const uint16_t *)p)[i]);
	default: {
		const struct rl_qtype *q = rl_qtype_of(t);
		return q ? q->load(p, i) : 0;
	}
	}
}

static void store_float(void *p, enum rl_dtype t, int64_t i, double v)
{
	switch (t) {
	case RL_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case RL_DT_DOUBLE: ((double *)p)[i] = v; break;
	case RL_DT_FLOAT16: ((uint16_t *)p)[i] = rl_float_to_half((float)v); break;
	case RL_DT_BFLOAT16: ((uint16_t *)p)[i] = rl_float_to_bf16((float)v); break;
	default: break;
	}
}

/* x / s in precision t, as numpy computes it; the `precision` attribute
 * (cast) converts both operands to t first */
static double quotient(enum rl_dtype t, double x, double s, bool cast)
{
	if (cast) {
		x = to_prec(t, x);
		s = to_prec(t, s);
	}
	switch (t) {
	case RL_DT_DOUBLE: return x / s;
	case RL_DT_FLOAT16: case RL_DT_BFLOAT16: return to_prec(t, (float)x / (float)s);
	default: return (float)x / (float)s;
	}
}

bool rl_quant_compute(const struct rl_graph *g, uint32_t node, void *out)
{
	const struct rl_node *n = &g->nodes[node];
	const struct rl_value *x = &g->values[n->in[0]], *s = &g->values[n->in[1]];
	uint32_t zv = rl_node_in(n, 2);
	const struct rl_value *z = zv == RL_NONE ? NULL : &g->values[zv];
	const struct rl_value *y = &g->values[n->out[0]];
	struct rl_qlayout l;
	char why[256];
	if (!rl_qlayout_of(g, n, &l, why, sizeof(why)) || !rl_shape_is_static(&x->shape) ||
	    (x->nbytes && !x->data) || !s->data || (z && !z->data))
		return false;
	bool q = n->op == RL_OP_QuantizeLinear;
	const struct rl_qtype *qt = rl_qtype_of(q ? y->dtype : x->dtype);
	if (!qt || (z && !rl_qtype_of(z->dtype)))
		return false;
	enum rl_dtype prec = x->dtype;
	if (q && n->opset >= 23 && rl_node_attr_int(n, "precision", 0))
		prec = (enum rl_dtype)rl_node_attr_int(n, "precision", 0);
	if (q && !rl_dtype_is_float(prec))
		return false;
	bool cast = prec != x->dtype;
	bool sat = n->opset < 19 || rl_node_attr_int(n, "saturate", 1) != 0;
	/* DequantizeLinear of float8/float4 ignores the zero point, as the
	 * reference does (the standard requires it to be 0) */
	bool use_zp = z && (q || qt->integer);
	bool wide = !q && (x->dtype == RL_DT_INT32 || s->dtype == RL_DT_DOUBLE);
	for (int64_t o = 0, e = 0; o < l.outer; o++)
		for (int64_t d = 0; d < l.dim; d++)
			for (int64_t i = 0; i < l.inner; i++, e++) {
				int64_t k = rl_qlayout_index(&l, o, d, i);
				double sc = load_num(s->data, s->dtype, k);
				double zp = use_zp ? load_num(z->data, z->dtype, k) : 0;
				double xv = load_num(x->data, x->dtype, e);
				if (q) {
					qt->store(out, e, quotient(prec, xv, sc, cast), zp, sat, prec);
				} else if (wide) {
					/* numpy: float32(x) - zp in float64, times the scale */
					store_float(out, y->dtype, e, ((double)(float)xv - zp) * sc);
				} else {
					/* 2..16-bit and float8/float4 (zp 0): the
					 * difference is exact in float */
					store_float(out, y->dtype, e, (float)(xv - zp) * (float)sc);
				}
			}
	return true;
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * QuantizeLinear: a division, a rounding and a clamp per element (3 FLOPs);
 * DequantizeLinear: a subtraction and a multiplication (2);
 * DynamicQuantizeLinear: a min/max pass (2) and the quantization (3), its
 * input read twice.
 * MatMulInteger, QLinearMatMul: MACs = numel(Y) * K as MatMul; QLinearMatMul
 * adds the requantization, 3 FLOPs per output.
 * ConvInteger, QLinearConv: MACs = numel(Y) * (numel(W) / M) as Conv;
 * QLinearConv adds 3 FLOPs per output.
 * Bytes are the baseline at the real (narrow) dtypes.
 */
bool rl_count_quant(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	double ny = rl_cnt_out(g, n, 0);
	switch (n->op) {
	case RL_OP_QuantizeLinear: c->flops = 3 * ny; return true;
	case RL_OP_DequantizeLinear: c->flops = 2 * ny; return true;
	case RL_OP_DynamicQuantizeLinear:
		c->flops = 5 * ny;
		c->bytes_read += rl_cnt_bytes(g, rl_node_in(n, 0));
		return true;
	case RL_OP_MatMulInteger: case RL_OP_QLinearMatMul: {
		uint32_t a = rl_node_in(n, 0);
		int ra = g->values[a].shape.rank;
		c->macs = ny * rl_cnt_dim(g, n, 0, ra - 1);
		c->flops = 2 * c->macs + (n->op == RL_OP_QLinearMatMul ? 3 * ny : 0);
		return true;
	}
	case RL_OP_ConvInteger: case RL_OP_QLinearConv: {
		int iw = n->op == RL_OP_QLinearConv ? 3 : 1;
		double wn = rl_cnt_in(g, n, iw), lead = rl_cnt_dim(g, n, iw, 0);
		c->macs = lead > 0 ? ny * (wn / lead) : 0;
		c->flops = 2 * c->macs + (n->op == RL_OP_QLinearConv ? 3 * ny : 0);
		return true;
	}
	default: return false;
	}
}
