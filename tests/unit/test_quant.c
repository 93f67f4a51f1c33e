/*
 * test_quant.c - the quantization family (ir/fam_quant.c): shape and dtype
 * inference with its errors, the scale layouts (per tensor, per axis,
 * blocked), QuantizeLinear/DequantizeLinear evaluated on constants (round
 * half to even, saturation, blocked zero points), and golden FLOP and byte
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
