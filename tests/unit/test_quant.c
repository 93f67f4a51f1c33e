/*
 * test_quant.c - the quantization family (ir/fam_quant.c): shape and dtype
 * inference with its errors, the scale layouts (per tensor, per axis,
 * blocked), QuantizeLinear/DequantizeLinear evaluated on constants (round
 * half to even, saturation, blocked zero points; float8, float4, int4 and
 * uint2 codes worked out by hand), and golden FLOP and byte
 * counts worked out by hand from the formulas in fam_quant.c.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "ir.h"
#include "quant.h"

static struct rl_graph *G;

static void setup(void)
{
	G = rl_graph_new();
	cr_assert(G);
	G->opset = 21;
}

static void teardown(void)
{
	rl_graph_free(G);
	G = NULL;
}

TestSuite(quant, .init = setup, .fini = teardown);

static struct rl_shape shp(int rank, const int64_t *d)
{
	struct rl_shape s;
	memset(&s, 0, sizeof(s));
	s.rank = rank;
	for (int i = 0; i < rank; i++)
		s.d[i].v = d[i];
	return s;
}

static uint32_t input(const char *name, enum rl_dtype dt, int rank, const int64_t *d)
{
	struct rl_shape s = shp(rank, d);
	uint32_t v = rl_graph_add_value(G, name, dt, &s);
	G->values[v].flags |= RL_VAL_INPUT;
	G->inputs = realloc(G->inputs, (G->ninputs + 1) * sizeof(uint32_t));
	G->inputs[G->ninputs++] = v;
	return v;
}

/* A constant of dtype dt with the given bytes (copied, graph-owned). */
static uint32_t constant(const char *name, enum rl_dtype dt, int rank, const int64_t *d,
                         const void *data)
{
	struct rl_shape s = shp(rank, d);
	uint32_t v = rl_graph_add_value(G, name, dt, &s);
	size_t nb = (size_t)rl_shape_numel(&s) * rl_dtype_size(dt);
	void *p = rl_graph_own(G, nb ? nb : 1);
	memcpy(p, data, nb);
	rl_value_set_data(G, v, p, nb);
	return v;
}

static uint32_t add(enum rl_op op, const char *out, int nin, const uint32_t *in)
{
	uint32_t o = rl_graph_add_value(G, out, RL_DT_UNDEFINED, NULL);
	uint32_t n = rl_graph_add_node(G, op, out, in, nin, &o, 1);
	G->nodes[n].opset = 21;
	G->values[o].flags |= RL_VAL_OUTPUT;
	G->outputs = realloc(G->outputs, (G->noutputs + 1) * sizeof(uint32_t));
	G->outputs[G->noutputs++] = o;
	return n;
}

static void attr_i(uint32_t nd, const char *name, int64_t v)
{
	rl_node_add_attr(G, nd, name, RL_ATTR_INT)->i = v;
}

#define EQ(got, want) cr_assert(fabs((double)(got) - (double)(want)) < 1e-9 * fmax(1, fabs((double)(want))), \
                                "%s = %.17g, want %.17g", #got, (double)(got), (double)(want))

Test(quant, quantize_rounds_half_even_and_saturates)
{
	const int64_t d6[] = {10}, d0[] = {0};
	const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000.0f, -1000.0f, NAN, 3.49f, -2.5f};
	const float s = 1.0f;
	const int8_t z = 0;
	uint32_t in[3] = {constant("x", RL_DT_FLOAT, 1, d6, x), constant("s", RL_DT_FLOAT, 0, d0, &s),
	                  constant("z", RL_DT_INT8, 0, d0, &z)};
	uint32_t n = add(RL_OP_QuantizeLinear, "y", 3, in);
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[n].out[0]];
	cr_assert_eq(y->dtype, RL_DT_INT8);
	cr_assert(rl_value_is_const(G, G->nodes[n].out[0]), "QuantizeLinear of constants evaluated");
	const int8_t want[] = {0, 2, 2, 0, -2, 127, -128, -128, 3, -2};
	for (int i = 0; i < 10; i++)
		cr_assert_eq(((const int8_t *)y->data)[i], want[i], "element %d: %d, want %d", i,
		             ((const int8_t *)y->data)[i], want[i]);
}

Test(quant, quantize_default_uint8_with_zero_point_per_axis)
{
	const int64_t dx[] = {2, 3}, ds[] = {3};
	const float x[] = {-1.0f, 0.0f, 1.0f, 100.0f, -100.0f, 0.25f};
	const float s[] = {0.5f, 1.0f, 0.25f};
	const uint8_t z[] = {10, 128, 250};
	uint32_t in[3] = {constant("x", RL_DT_FLOAT, 2, dx, x), constant("s", RL_DT_FLOAT, 1, ds, s),
	                  constant("z", RL_DT_UINT8, 1, ds, z)};
	uint32_t n = add(RL_OP_QuantizeLinear, "y", 3, in);
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[n].out[0]];
	/* -1/0.5+10 = 8; 0+128; 1/0.25+250 = 254; 100/0.5+10 = 210; -100+128 = 28;
	 * 0.25/0.25+250 = 251 */
	const uint8_t want[] = {8, 128, 254, 210, 28, 251};
	for (int i = 0; i < 6; i++)
		cr_assert_eq(((const uint8_t *)y->data)[i], want[i], "element %d", i);
}

/* QuantizeLinear node of constant x [n] with scalar scale s, zero point
 * (dtype zt, NULL: none), evaluated; its output's bytes. */
static const uint8_t *qconst(const float *x, int64_t n, float s, enum rl_dtype zt,
                             const void *z, int64_t out_dtype, int64_t saturate)
{
	const int64_t dx[] = {n}, d0[] = {0};
	uint32_t in[3] = {constant("x", RL_DT_FLOAT, 1, dx, x), constant("s", RL_DT_FLOAT, 0, d0, &s),
	                  z ? constant("z", zt, 0, d0, z) : RL_NONE};
	uint32_t nd = add(RL_OP_QuantizeLinear, "y", z ? 3 : 2, in);
	if (out_dtype)
		attr_i(nd, "output_dtype", out_dtype);
	if (saturate >= 0)
		attr_i(nd, "saturate", saturate);
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[nd].out[0]];
	cr_assert(rl_value_is_const(G, G->nodes[nd].out[0]), "QuantizeLinear to %s evaluated",
	          rl_dtype_name(y->dtype));
	cr_assert_eq(y->dtype, z ? zt : (enum rl_dtype)out_dtype);
	return y->data;
}

#define CODES(got, want, n)                                                    \
	for (int i = 0; i < (n); i++)                                          \
		cr_assert_eq(((const uint8_t *)(got))[i], (uint8_t)(want)[i],  \
		             "element %d: %#x, want %#x", i, ((const uint8_t *)(got))[i], \
		             (uint8_t)(want)[i])

Test(quant, quantize_float8e4m3fn_rounds_even_and_saturates)
{
	/* e4m3fn: 1 = 0x38; 0.3 -> 0.3125 = 0x2a; 17 and 19 are ties between
	 * 16 (0x58), 18 (0x59) and 20 (0x5a): even mantissas; beyond 448 and
	 * inf saturate to 0x7e; NaN 0x7f; -0 keeps its sign (the zero point
	 * is ignored) */
	const float x[] = {1.0f, 0.3f, 17.0f, 19.0f, 1000.0f, -1000.0f, INFINITY, NAN, -0.0f};
	const uint8_t z = 0;
	const uint8_t want[] = {0x38, 0x2a, 0x58, 0x5a, 0x7e, 0xfe, 0x7e, 0x7f, 0x80};
	CODES(qconst(x, 9, 1.0f, RL_DT_FLOAT8E4M3FN, &z, 0, -1), want, 9);
}

Test(quant, quantize_float8e4m3fn_without_saturation)
{
	/* saturate=0: beyond the largest finite and inf become NaN (no inf) */
	const float x[] = {2.0f, 1000.0f, -1000.0f, INFINITY};
	const uint8_t want[] = {0x38, 0x7f, 0xff, 0x7f};
	CODES(qconst(x, 4, 2.0f, RL_DT_UNDEFINED, NULL, RL_DT_FLOAT8E4M3FN, 0), want, 4);
}

Test(quant, quantize_float4e2m1_adds_the_zero_point)
{
	/* x / 2 + 0: -0 becomes +0 (the reference adds the zero point in
	 * float); 0.4 -> 0.2 -> 0; 10.2 -> 5.1 -> 6 (0x7); 1000 saturates to 6 */
	const float x[] = {-0.0f, 0.4f, 10.2f, 1000.0f, -3.0f};
	const uint8_t want[] = {0x0, 0x0, 0x7, 0x7, 0xb /* -1.5 */};
	CODES(qconst(x, 5, 2.0f, RL_DT_UNDEFINED, NULL, RL_DT_FLOAT4E2M1, -1), want, 5);
	/* with zero point 1.0 (0x2): 1.5 + 1 = 2.5, a tie -> 2 (0x4) */
	rl_graph_free(G);
	setup();
	const float x2[] = {3.0f, -14.0f};
	const uint8_t z = 0x2, want2[] = {0x4, 0xf /* -7 + 1 = -6 */};
	CODES(qconst(x2, 2, 2.0f, RL_DT_FLOAT4E2M1, &z, 0, -1), want2, 2);
}

Test(quant, quantize_int4_rounds_half_even_and_saturates)
{
	/* x / 0.5 = {5, -7, 200, -200, 2.5, 15}, rounded half to even, + 1,
	 * clamped to [-8, 7]; int4 is stored sign-extended in a byte */
	const float x[] = {2.5f, -3.5f, 100.0f, -100.0f, 1.25f, 7.5f};
	const int8_t z = 1;
	const int8_t want[] = {6, -6, 7, -8, 3, 7};
	CODES(qconst(x, 6, 0.5f, RL_DT_INT4, &z, 0, -1), want, 6);
}

Test(quant, quantize_uint2_default_zero_point)
{
	const float x[] = {-1.0f, 0.5f, 1.5f, 2.6f, 9.0f};
	const uint8_t want[] = {0, 0, 2, 3, 3};
	CODES(qconst(x, 5, 1.0f, RL_DT_UNDEFINED, NULL, RL_DT_UINT2, -1), want, 5);
}

Test(quant, dequantize_int4_and_float8e5m2)
{
	const int64_t dx[] = {4}, d0[] = {0};
	const int8_t x[] = {-8, 7, 0, -1}, z = -1;
	const float s = 0.5f;
	uint32_t in[3] = {constant("x", RL_DT_INT4, 1, dx, x), constant("s", RL_DT_FLOAT, 0, d0, &s),
	                  constant("z", RL_DT_INT4, 0, d0, &z)};
	uint32_t n = add(RL_OP_DequantizeLinear, "y", 3, in);
	/* e5m2: 1.0 = 0x3c, inf 0x7c, -0 0x80, 0x01 the smallest subnormal 2^-16;
	 * the zero point (0) is not subtracted, so -0 stays -0 */
	const uint8_t x8[] = {0x3c, 0x7c, 0x80, 0x01}, z8 = 0;
	const float s8 = 2.0f;
	uint32_t in8[3] = {constant("x8", RL_DT_FLOAT8E5M2, 1, dx, x8),
	                   constant("s8", RL_DT_FLOAT, 0, d0, &s8),
	                   constant("z8", RL_DT_FLOAT8E5M2, 0, d0, &z8)};
	uint32_t n8 = add(RL_OP_DequantizeLinear, "y8", 3, in8);
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[n].out[0]];
	const struct rl_value *y8 = &G->values[G->nodes[n8].out[0]];
	cr_assert(rl_value_is_const(G, G->nodes[n].out[0]) && rl_value_is_const(G, G->nodes[n8].out[0]));
	cr_assert_eq(y->dtype, RL_DT_FLOAT);
	const float want[] = {-3.5f, 4.0f, 0.5f, 0.0f};
	for (int i = 0; i < 4; i++)
		EQ(((const float *)y->data)[i], want[i]);
	const float *f = y8->data;
	EQ(f[0], 2.0);
	cr_assert(isinf(f[1]) && f[1] > 0);
	cr_assert(f[2] == 0 && signbit(f[2]));
	EQ(f[3], ldexp(1.0, -15));
}

Test(quant, dequantize_blocked_with_remainder_block)
{
	/* x [2, 5] blocked along axis 1 by 2: blocks {0,1} {2,3} {4} */
	const int64_t dx[] = {2, 5}, ds[] = {2, 3};
	const int8_t x[] = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
	const float s[] = {1.0f, 0.5f, 2.0f, 0.25f, 4.0f, 8.0f};
	const int8_t z[] = {0, 1, -1, 0, 2, 3};
	uint32_t in[3] = {constant("x", RL_DT_INT8, 2, dx, x), constant("s", RL_DT_FLOAT, 2, ds, s),
	                  constant("z", RL_DT_INT8, 2, ds, z)};
	uint32_t n = add(RL_OP_DequantizeLinear, "y", 3, in);
	attr_i(n, "axis", 1);
	attr_i(n, "block_size", 2);
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[n].out[0]];
	cr_assert_eq(y->dtype, RL_DT_FLOAT);
	const float want[] = {1, 2, 1, 1.5f, 12, -0.25f, -0.5f, -20, -24, -64};
	for (int i = 0; i < 10; i++)
		EQ(((const float *)y->data)[i], want[i]);
}

Test(quant, blocked_scale_of_wrong_shape_is_an_error)
{
	const int64_t dx[] = {4, 70}, ds[] = {4, 2};
	uint32_t in[2] = {input("x", RL_DT_INT8, 2, dx), input("s", RL_DT_FLOAT, 2, ds)};
	uint32_t n = add(RL_OP_DequantizeLinear, "y", 2, in);
	attr_i(n, "axis", 1);
	attr_i(n, "block_size", 32); /* 70 needs 3 blocks */
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "block_size 32"), "message: %s", G->err);
}

Test(quant, zero_point_dtype_must_match)
{
	const int64_t dx[] = {4}, d0[] = {0};
	uint32_t in[3] = {input("x", RL_DT_INT8, 1, dx), input("s", RL_DT_FLOAT, 0, d0),
	                  input("z", RL_DT_UINT8, 0, d0)};
	add(RL_OP_DequantizeLinear, "y", 3, in);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "zero point"), "message: %s", G->err);
}

Test(quant, layout_index_of_each_kind)
{
	struct rl_qlayout l = {.kind = RL_QK_BLOCK, .outer = 3, .dim = 10, .inner = 4,
	                       .block = 4, .nblocks = 3};
	/* scale shape [3, 3, 4]: element (o=2, d=9, i=1) -> block 2 */
	cr_assert_eq(rl_qlayout_index(&l, 2, 9, 1), (2 * 3 + 2) * 4 + 1);
	l.kind = RL_QK_AXIS;
	cr_assert_eq(rl_qlayout_index(&l, 2, 9, 1), 9);
	l.kind = RL_QK_TENSOR;
	cr_assert_eq(rl_qlayout_index(&l, 2, 9, 1), 0);
	cr_assert_eq(rl_quant_round_sat(2.5, -8, 7), 2);
	cr_assert_eq(rl_quant_round_sat(-3.5, -8, 7), -4);
	cr_assert_eq(rl_quant_round_sat(NAN, -8, 7), -8);
	cr_assert_eq(rl_quant_round_sat(99, -8, 7), 7);
}

Test(quant, qlinear_matmul_shape_and_cost)
{
	/* a uint8 [2,3,64] x b int8 [64,32] -> uint8 [2,3,32]
	 * MACs = numel(Y) * K = 192 * 64 = 12288; FLOPs = 2 * MACs + 3 * 192 = 25152
	 * read: a 384 + b 2048 + three float scales 12 + three zero points 3 = 2447 bytes;
	 * written: 192 bytes */
	const int64_t da[] = {2, 3, 64}, db[] = {64, 32}, d1[] = {1};
	uint32_t in[8] = {input("a", RL_DT_UINT8, 3, da), input("as", RL_DT_FLOAT, 1, d1),
	                  input("az", RL_DT_UINT8, 1, d1), input("b", RL_DT_INT8, 2, db),
	                  input("bs", RL_DT_FLOAT, 1, d1), input("bz", RL_DT_INT8, 1, d1),
	                  input("ys", RL_DT_FLOAT, 1, d1), input("yz", RL_DT_UINT8, 1, d1)};
	uint32_t n = add(RL_OP_QLinearMatMul, "y", 8, in);
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[n].out[0]];
	cr_assert_eq(y->dtype, RL_DT_UINT8);
	cr_assert_eq(y->shape.rank, 3);
	cr_assert_eq(y->shape.d[2].v, 32);
	struct rl_counts c;
	cr_assert(rl_count_node(G, n, &c));
	EQ(c.macs, 12288);
	EQ(c.flops, 25152);
	EQ(c.bytes_read, 2447);
	EQ(c.bytes_write, 192);
	cr_assert_eq(rl_node_prec(G, n), RL_PREC_INT8);
}

Test(quant, conv_integer_shape_and_cost)
{
	/* x uint8 [1,4,8,8], w uint8 [6,2,3,3], group 2, pads 1 -> int32 [1,6,8,8]
	 * MACs = numel(Y) * (numel(W) / M) = 384 * 18 = 6912; FLOPs 13824
	 * read 256 + 108 = 364 bytes; written 384 * 4 = 1536 */
	const int64_t dx[] = {1, 4, 8, 8}, dw[] = {6, 2, 3, 3};
	uint32_t in[2] = {input("x", RL_DT_UINT8, 4, dx), input("w", RL_DT_UINT8, 4, dw)};
	uint32_t n = add(RL_OP_ConvInteger, "y", 2, in);
	attr_i(n, "group", 2);
	struct rl_attr *a = rl_node_add_attr(G, n, "pads", RL_ATTR_INTS);
	a->n = 4;
	a->ints = rl_arena_alloc(G, 4 * sizeof(int64_t));
	for (int i = 0; i < 4; i++)
		a->ints[i] = 1;
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	const struct rl_value *y = &G->values[G->nodes[n].out[0]];
	cr_assert_eq(y->dtype, RL_DT_INT32);
	cr_assert_eq(y->shape.d[1].v, 6);
	cr_assert_eq(y->shape.d[3].v, 8);
	struct rl_counts c;
	cr_assert(rl_count_node(G, n, &c));
	EQ(c.macs, 6912);
	EQ(c.flops, 13824);
	EQ(c.bytes_read, 364);
	EQ(c.bytes_write, 1536);
}

Test(quant, dynamic_quantize_outputs)
{
	const int64_t dx[] = {3, 5};
	uint32_t x = input("x", RL_DT_FLOAT, 2, dx);
	uint32_t o[3];
	o[0] = rl_graph_add_value(G, "q", RL_DT_UNDEFINED, NULL);
	o[1] = rl_graph_add_value(G, "s", RL_DT_UNDEFINED, NULL);
	o[2] = rl_graph_add_value(G, "z", RL_DT_UNDEFINED, NULL);
	uint32_t n = rl_graph_add_node(G, RL_OP_DynamicQuantizeLinear, "dq", &x, 1, o, 3);
	G->nodes[n].opset = 21;
	cr_assert_eq(rl_graph_infer(G), RL_OK, "%s", G->err);
	cr_assert_eq(G->values[o[0]].dtype, RL_DT_UINT8);
	cr_assert_eq(G->values[o[1]].dtype, RL_DT_FLOAT);
	cr_assert_eq(G->values[o[1]].shape.rank, 0);
	cr_assert_eq(G->values[o[2]].dtype, RL_DT_UINT8);
	struct rl_counts c;
	cr_assert(rl_count_node(G, n, &c));
	/* 5 FLOPs per element; x read twice (60 + 60 bytes) */
	EQ(c.flops, 75);
	EQ(c.bytes_read, 120);
	EQ(c.bytes_write, 15 + 4 + 1);
}
