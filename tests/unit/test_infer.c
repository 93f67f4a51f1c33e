/*
 * test_infer.c - unit tests for dtype/shape inference (ir/infer.c,
 * ir/fam_*.c) and compile-time evaluation (ir/eval.c).
 *
 * Every test builds a small graph by hand with the ir.h API, runs
 * rl_graph_infer() and checks shapes as strings ("2x3x4", "batchx12",
 * "scalar"), dtypes, evaluated data, or the one-line error. Helpers are
 * static so this file links next to any shared test utilities.
 */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* ---- helpers ------------------------------------------------------------ */

/* Parse "2x3xbatch" / "scalar" / "?" into a shape; symbols go to the arena. */
static struct rl_shape S(struct rl_graph *g, const char *s)
{
	struct rl_shape sh;
	memset(&sh, 0, sizeof(sh));
	if (strcmp(s, "?") == 0) {
		sh.rank = -1;
		return sh;
	}
	if (strcmp(s, "scalar") == 0)
		return sh;
	const char *p = s;
	while (*p) {
		const char *e = strchr(p, 'x');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char tok[64];
		cr_assert(len < sizeof(tok));
		memcpy(tok, p, len);
		tok[len] = 0;
		char *end;
		long long v = strtoll(tok, &end, 10);
		if (*end == 0 && len > 0)
			sh.d[sh.rank] = (struct rl_dim){v, NULL};
		else
			sh.d[sh.rank] = (struct rl_dim){RL_DIM_SYMBOLIC, rl_arena_strdup(g, tok)};
		sh.rank++;
		p = e ? e + 1 : p + len;
	}
	return sh;
}

static void push(uint32_t **arr, uint32_t *n, uint32_t v)
{
	*arr = realloc(*arr, (*n + 1) * sizeof(**arr));
	cr_assert(*arr);
	(*arr)[(*n)++] = v;
}

static uint32_t input(struct rl_graph *g, const char *name, enum rl_dtype dt,
                      const char *shape)
{
	struct rl_shape s = S(g, shape);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	g->values[v].flags |= RL_VAL_INPUT;
	push(&g->inputs, &g->ninputs, v);
	return v;
}

/* A produced value with no type yet. */
static uint32_t tmp(struct rl_graph *g, const char *name)
{
	return rl_graph_add_value(g, name, RL_DT_UNDEFINED, NULL);
}

static void output(struct rl_graph *g, uint32_t v)
{
	g->values[v].flags |= RL_VAL_OUTPUT;
	push(&g->outputs, &g->noutputs, v);
}

/* An initializer with data copied into graph-owned memory. */
static uint32_t konst(struct rl_graph *g, const char *name, enum rl_dtype dt,
                      const char *shape, const void *data)
{
	struct rl_shape s = S(g, shape);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	size_t nb = (size_t)rl_shape_numel(&s) * rl_dtype_size(dt);
	void *p = rl_graph_own(g, nb);
	memcpy(p, data, nb);
	rl_value_set_data(g, v, p, nb);
	return v;
}

static uint32_t ints1(struct rl_graph *g, const char *name, int n, const int64_t *v)
{
	char shape[16];
	snprintf(shape, sizeof(shape), "%d", n);
	return konst(g, name, RL_DT_INT64, n ? shape : "0", v);
}

static uint32_t node(struct rl_graph *g, enum rl_op op, int opset,
                     const uint32_t *in, int nin, const uint32_t *out, int nout)
{
	uint32_t id = rl_graph_add_node(g, op, NULL, in, nin, out, nout);
	g->nodes[id].opset = opset;
	return id;
}

/* Single-output node convenience: returns the output value. */
static uint32_t op1(struct rl_graph *g, enum rl_op op, int opset, const char *out,
                    int nin, ...)
{
	uint32_t in[8];
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, uint32_t);
	va_end(ap);
	uint32_t o = tmp(g, out);
	node(g, op, opset, in, nin, &o, 1);
	return o;
}

static uint32_t last_node(struct rl_graph *g)
{
	return g->nnodes - 1;
}

static void attr_i(struct rl_graph *g, uint32_t nd, const char *name, int64_t v)
{
	rl_node_add_attr(g, nd, name, RL_ATTR_INT)->i = v;
}

static void attr_f(struct rl_graph *g, uint32_t nd, const char *name, double v)
{
	rl_node_add_attr(g, nd, name, RL_ATTR_FLOAT)->f = v;
}

static void attr_s(struct rl_graph *g, uint32_t nd, const char *name, const char *s)
{
	struct rl_attr *a = rl_node_add_attr(g, nd, name, RL_ATTR_STRING);
	a->s = rl_arena_strdup(g, s);
	a->n = (int)strlen(s);
}

static void attr_ints(struct rl_graph *g, uint32_t nd, const char *name, int n, ...)
{
	struct rl_attr *a = rl_node_add_attr(g, nd, name, RL_ATTR_INTS);
	a->n = n;
	a->ints = rl_arena_alloc(g, (size_t)(n ? n : 1) * sizeof(int64_t));
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		a->ints[i] = va_arg(ap, int64_t);
	va_end(ap);
}

static const char *shape_of(struct rl_graph *g, uint32_t v)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	return rl_shape_str(&g->values[v].shape, buf[k], sizeof(buf[k]));
}

#define I64(x) ((int64_t)(x))

#define INFER_OK(g)                                                            \
	do {                                                                   \
		enum rl_status st_ = rl_graph_infer(g);                        \
		cr_assert_eq(st_, RL_OK, "infer failed: %s", (g)->err);        \
	} while (0)

#define INFER_FAILS(g, status, substr)                                         \
	do {                                                                   \
		enum rl_status st_ = rl_graph_infer(g);                        \
		cr_assert_eq(st_, status, "status %d, err: %s", st_, (g)->err);\
		cr_assert(strstr((g)->err, substr), "error '%s' lacks '%s'",   \
		          (g)->err, substr);                                   \
	} while (0)

#define SHAPE_IS(g, v, s) cr_assert_str_eq(shape_of(g, v), s)

static struct rl_graph *G;

static void setup(void)
{
	G = rl_graph_new();
	cr_assert(G);
}

static void teardown(void)
{
	rl_graph_free(G);
	G = NULL;
}

TestSuite(infer, .init = setup, .fini = teardown);

/* ---- elementwise -------------------------------------------------------- */

Test(infer, broadcast_rank0_to_rank6)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "scalar");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "2x1x3x1x5x1");
	uint32_t c = input(G, "c", RL_DT_FLOAT, "4x1x6");
	uint32_t y = op1(G, RL_OP_Add, 17, "y", 2, a, b);
	uint32_t z = op1(G, RL_OP_Mul, 17, "z", 2, y, c);
	INFER_OK(G);
	SHAPE_IS(G, y, "2x1x3x1x5x1");
	SHAPE_IS(G, z, "2x1x3x4x5x6");
	cr_assert_eq(G->values[z].dtype, RL_DT_FLOAT);
}

Test(infer, broadcast_mismatch_message)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "2x3");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "4x3");
	op1(G, RL_OP_Sub, 17, "y", 2, a, b);
	INFER_FAILS(G, RL_ERR_SHAPE, "shapes 2x3 and 4x3 do not broadcast");
}

Test(infer, binary_dtype_mismatch)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "3");
	uint32_t b = input(G, "b", RL_DT_INT64, "3");
	op1(G, RL_OP_Add, 17, "y", 2, a, b);
	INFER_FAILS(G, RL_ERR_SHAPE, "must have the same dtype");
}

Test(infer, float_only_op_on_int)
{
	uint32_t a = input(G, "a", RL_DT_INT32, "3");
	op1(G, RL_OP_Sqrt, 17, "y", 1, a);
	INFER_FAILS(G, RL_ERR_SHAPE, "floating-point");
}

Test(infer, compare_gives_bool_and_variadic_broadcast)
{
	uint32_t a = input(G, "a", RL_DT_INT64, "3x1");
	uint32_t b = input(G, "b", RL_DT_INT64, "4");
	uint32_t c = input(G, "c", RL_DT_INT64, "2x1x1");
	uint32_t e = op1(G, RL_OP_Equal, 17, "e", 2, a, b);
	uint32_t s = op1(G, RL_OP_Max, 17, "s", 3, a, b, c);
	uint32_t n = op1(G, RL_OP_Not, 17, "n", 1, e);
	INFER_OK(G);
	SHAPE_IS(G, e, "3x4");
	cr_assert_eq(G->values[e].dtype, RL_DT_BOOL);
	cr_assert_eq(G->values[n].dtype, RL_DT_BOOL);
	SHAPE_IS(G, s, "2x3x4");
	cr_assert_eq(G->values[s].dtype, RL_DT_INT64);
}

Test(infer, variadic_no_broadcast_before_opset8)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "3x4");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "4");
	op1(G, RL_OP_Max, 7, "y", 2, a, b);
	INFER_FAILS(G, RL_ERR_SHAPE, "does not broadcast");
}

Test(infer, where_three_way_broadcast)
{
	uint32_t c = input(G, "c", RL_DT_BOOL, "2x1");
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x3");
	uint32_t y = input(G, "y", RL_DT_FLOAT, "scalar");
	uint32_t w = op1(G, RL_OP_Where, 16, "w", 3, c, x, y);
	INFER_OK(G);
	SHAPE_IS(G, w, "2x3");
	cr_assert_eq(G->values[w].dtype, RL_DT_FLOAT);
}

Test(infer, where_needs_bool_condition)
{
	uint32_t c = input(G, "c", RL_DT_FLOAT, "2");
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2");
	op1(G, RL_OP_Where, 16, "w", 3, c, x, x);
	INFER_FAILS(G, RL_ERR_SHAPE, "bool");
}

Test(infer, cast_and_castlike)
{
	uint32_t x = input(G, "x", RL_DT_INT64, "2x3");
	uint32_t h = input(G, "h", RL_DT_FLOAT16, "1");
	uint32_t c = op1(G, RL_OP_Cast, 17, "c", 1, x);
	attr_i(G, last_node(G), "to", RL_DT_FLOAT);
	uint32_t l = op1(G, RL_OP_CastLike, 17, "l", 2, x, h);
	INFER_OK(G);
	cr_assert_eq(G->values[c].dtype, RL_DT_FLOAT);
	SHAPE_IS(G, c, "2x3");
	cr_assert_eq(G->values[l].dtype, RL_DT_FLOAT16);
}

Test(infer, cast_to_unknown_dtype_is_unsupported)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2");
	op1(G, RL_OP_Cast, 19, "c", 1, x);
	attr_i(G, last_node(G), "to", 27); /* past every dtype rlopt knows */
	INFER_FAILS(G, RL_ERR_UNSUPPORTED, "cast to dtype 27");
}

Test(infer, cast_to_float8_and_bitcast_widths)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2");
	uint32_t c = op1(G, RL_OP_Cast, 19, "c", 1, x);
	attr_i(G, last_node(G), "to", RL_DT_FLOAT8E4M3FN);
	uint32_t b = op1(G, RL_OP_BitCast, 26, "b", 1, c);
	attr_i(G, last_node(G), "to", RL_DT_UINT8);
	INFER_OK(G);
	cr_assert_eq(G->values[c].dtype, RL_DT_FLOAT8E4M3FN);
	cr_assert_eq(G->values[b].dtype, RL_DT_UINT8);
}

Test(infer, bitcast_needs_equal_widths)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2");
	op1(G, RL_OP_BitCast, 26, "b", 1, x);
	attr_i(G, last_node(G), "to", RL_DT_INT4);
	INFER_FAILS(G, RL_ERR_SHAPE, "the widths must be equal");
}

Test(infer, clip_inputs_and_dropout_mask)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3");
	float lo = 0, hi = 6;
	uint32_t mn = konst(G, "mn", RL_DT_FLOAT, "scalar", &lo);
	uint32_t mx = konst(G, "mx", RL_DT_FLOAT, "scalar", &hi);
	uint32_t c = op1(G, RL_OP_Clip, 13, "c", 3, x, mn, mx);
	uint32_t outs[2] = {tmp(G, "d"), tmp(G, "mask")};
	node(G, RL_OP_Dropout, 13, &c, 1, outs, 2);
	uint32_t outs9[2] = {tmp(G, "d9"), tmp(G, "mask9")};
	node(G, RL_OP_Dropout, 9, &c, 1, outs9, 2);
	INFER_OK(G);
	SHAPE_IS(G, c, "2x3");
	cr_assert_eq(G->values[outs[1]].dtype, RL_DT_BOOL);
	cr_assert_eq(G->values[outs9[1]].dtype, RL_DT_FLOAT); /* T before 10 */
	SHAPE_IS(G, outs[1], "2x3");
}

Test(infer, clip_bound_must_be_scalar)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3");
	uint32_t lo = input(G, "lo", RL_DT_FLOAT, "3");
	op1(G, RL_OP_Clip, 13, "c", 2, x, lo);
	INFER_FAILS(G, RL_ERR_SHAPE, "must be a scalar");
}

Test(infer, clip_takes_one_input_before_opset11)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2");
	uint32_t lo = input(G, "lo", RL_DT_FLOAT, "scalar");
	op1(G, RL_OP_Clip, 10, "c", 2, x, lo);
	INFER_FAILS(G, RL_ERR_INVALID, "Clip-10 takes 1");
}

Test(infer, prelu_slope_is_unidirectional)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x3x4x4");
	uint32_t s = input(G, "s", RL_DT_FLOAT, "3x1x1");
	uint32_t bad = input(G, "bad", RL_DT_FLOAT, "2x3x1x1");
	uint32_t y = op1(G, RL_OP_PRelu, 16, "y", 2, x, s);
	INFER_OK(G);
	SHAPE_IS(G, y, "1x3x4x4");
	op1(G, RL_OP_PRelu, 16, "y2", 2, x, bad);
	INFER_FAILS(G, RL_ERR_SHAPE, "does not broadcast to input");
}

/* ---- matmul ------------------------------------------------------------- */

Test(infer, matmul_1d_promotion)
{
	uint32_t v = input(G, "v", RL_DT_FLOAT, "4");
	uint32_t m = input(G, "m", RL_DT_FLOAT, "4x5");
	uint32_t n = input(G, "n", RL_DT_FLOAT, "3x4");
	uint32_t a = op1(G, RL_OP_MatMul, 13, "a", 2, v, m);
	uint32_t b = op1(G, RL_OP_MatMul, 13, "b", 2, n, v);
	uint32_t c = op1(G, RL_OP_MatMul, 13, "c", 2, v, v);
	INFER_OK(G);
	SHAPE_IS(G, a, "5");
	SHAPE_IS(G, b, "3");
	SHAPE_IS(G, c, "scalar");
}

Test(infer, matmul_batched_broadcast)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "2x1x3x4");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "5x4x6");
	uint32_t w = input(G, "w", RL_DT_FLOAT, "4x6");
	uint32_t y = op1(G, RL_OP_MatMul, 13, "y", 2, a, b);
	uint32_t z = op1(G, RL_OP_MatMul, 13, "z", 2, a, w);
	INFER_OK(G);
	SHAPE_IS(G, y, "2x5x3x6");
	SHAPE_IS(G, z, "2x1x3x6");
}

Test(infer, matmul_inner_mismatch_message)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "3x4");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "5x6");
	op1(G, RL_OP_MatMul, 13, "y", 2, a, b);
	INFER_FAILS(G, RL_ERR_SHAPE, "MatMul of 3x4 by 5x6: inner dimensions 4 and 5 differ");
}

Test(infer, gemm_transposes_and_bias)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "4x3");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "5x4");
	uint32_t c = input(G, "c", RL_DT_FLOAT, "5");
	uint32_t y = op1(G, RL_OP_Gemm, 13, "y", 3, a, b, c);
	attr_i(G, last_node(G), "transA", 1);
	attr_i(G, last_node(G), "transB", 1);
	INFER_OK(G);
	SHAPE_IS(G, y, "3x5");
	uint32_t bad = input(G, "bad", RL_DT_FLOAT, "3");
	op1(G, RL_OP_Gemm, 13, "y2", 3, a, b, bad);
	attr_i(G, last_node(G), "transA", 1);
	attr_i(G, last_node(G), "transB", 1);
	INFER_FAILS(G, RL_ERR_SHAPE, "does not broadcast");
}

Test(infer, gemm_without_trans_mismatch)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "4x3");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "5x4");
	op1(G, RL_OP_Gemm, 13, "y", 2, a, b);
	INFER_FAILS(G, RL_ERR_SHAPE, "inner dimensions 3 and 5 differ");
}

/* ---- conv and pool ------------------------------------------------------ */

Test(infer, conv_pads_strides_dilations_groups)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x4x10x10");
	uint32_t w = input(G, "w", RL_DT_FLOAT, "8x2x3x3");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "8");
	uint32_t y = op1(G, RL_OP_Conv, 11, "y", 3, x, w, b);
	uint32_t n = last_node(G);
	attr_i(G, n, "group", 2);
	attr_ints(G, n, "pads", 4, I64(1), I64(1), I64(1), I64(1));
	attr_ints(G, n, "strides", 2, I64(2), I64(2));
	uint32_t z = op1(G, RL_OP_Conv, 11, "z", 2, x, w);
	n = last_node(G);
	attr_i(G, n, "group", 2);
	attr_ints(G, n, "dilations", 2, I64(2), I64(3));
	INFER_OK(G);
	SHAPE_IS(G, y, "1x8x5x5");  /* (10 + 2 - 3) / 2 + 1 */
	SHAPE_IS(G, z, "1x8x6x4");  /* 10 - 5 + 1, 10 - 7 + 1 */
}

Test(infer, conv_auto_pad_same_upper)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x11x7");
	uint32_t w = input(G, "w", RL_DT_FLOAT, "16x3x3x3");
	uint32_t y = op1(G, RL_OP_Conv, 11, "y", 2, x, w);
	attr_s(G, last_node(G), "auto_pad", "SAME_UPPER");
	attr_ints(G, last_node(G), "strides", 2, I64(2), I64(2));
	uint32_t v = op1(G, RL_OP_Conv, 11, "v", 2, x, w);
	attr_s(G, last_node(G), "auto_pad", "VALID");
	INFER_OK(G);
	SHAPE_IS(G, y, "2x16x6x4");
	SHAPE_IS(G, v, "2x16x9x5");
}

Test(infer, conv_group_channel_mismatch)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x3x8x8");
	uint32_t w = input(G, "w", RL_DT_FLOAT, "8x2x3x3");
	op1(G, RL_OP_Conv, 11, "y", 2, x, w);
	INFER_FAILS(G, RL_ERR_SHAPE, "has 3 channels but weight 8x2x3x3 with group 1 expects 2");
}

Test(infer, conv_kernel_larger_than_input)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x1x3x2");
	uint32_t w = input(G, "w", RL_DT_FLOAT, "1x1x3x3");
	op1(G, RL_OP_Conv, 11, "y", 2, x, w);
	INFER_FAILS(G, RL_ERR_SHAPE,
	            "spatial axis 1: input size 2 (2 with padding) is smaller than the kernel extent 3");
}

Test(infer, conv_transpose_output_padding_and_shape)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x3x5x5");
	uint32_t w = input(G, "w", RL_DT_FLOAT, "3x2x3x3");
	uint32_t y = op1(G, RL_OP_ConvTranspose, 11, "y", 2, x, w);
	uint32_t n = last_node(G);
	attr_ints(G, n, "strides", 2, I64(2), I64(2));
	attr_ints(G, n, "pads", 4, I64(1), I64(1), I64(1), I64(1));
	attr_ints(G, n, "output_padding", 2, I64(1), I64(0));
	uint32_t z = op1(G, RL_OP_ConvTranspose, 11, "z", 2, x, w);
	attr_ints(G, last_node(G), "strides", 2, I64(2), I64(2));
	attr_ints(G, last_node(G), "output_shape", 2, I64(10), I64(11));
	uint32_t s = op1(G, RL_OP_ConvTranspose, 11, "s", 2, x, w);
	attr_ints(G, last_node(G), "strides", 2, I64(3), I64(3));
	attr_s(G, last_node(G), "auto_pad", "SAME_LOWER");
	INFER_OK(G);
	/* 2*(5-1) + op + 3 - 2 */
	SHAPE_IS(G, y, "1x2x10x9");
	SHAPE_IS(G, z, "1x2x10x11");
	SHAPE_IS(G, s, "1x2x15x15");
}

Test(infer, maxpool_ceil_mode_and_indices)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x1x5x5");
	uint32_t fl = op1(G, RL_OP_MaxPool, 12, "fl", 1, x);
	attr_ints(G, last_node(G), "kernel_shape", 2, I64(2), I64(2));
	attr_ints(G, last_node(G), "strides", 2, I64(2), I64(2));
	uint32_t outs[2] = {tmp(G, "ce"), tmp(G, "ix")};
	node(G, RL_OP_MaxPool, 12, &x, 1, outs, 2);
	attr_ints(G, last_node(G), "kernel_shape", 2, I64(2), I64(2));
	attr_ints(G, last_node(G), "strides", 2, I64(2), I64(2));
	attr_i(G, last_node(G), "ceil_mode", 1);
	INFER_OK(G);
	SHAPE_IS(G, fl, "1x1x2x2");
	SHAPE_IS(G, outs[0], "1x1x3x3");
	SHAPE_IS(G, outs[1], "1x1x3x3");
	cr_assert_eq(G->values[outs[1]].dtype, RL_DT_INT64);
}

Test(infer, pool_ceil_mode_drops_window_starting_in_padding)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x1x2x2");
	uint32_t y = op1(G, RL_OP_AveragePool, 11, "y", 1, x);
	uint32_t n = last_node(G);
	attr_ints(G, n, "kernel_shape", 2, I64(1), I64(1));
	attr_ints(G, n, "strides", 2, I64(2), I64(2));
	attr_ints(G, n, "pads", 4, I64(1), I64(1), I64(1), I64(1));
	attr_i(G, n, "ceil_mode", 1);
	INFER_OK(G);
	/* ceil((2+2-1)/2)+1 = 3, but the third window would start at 4 >= 2+1 */
	SHAPE_IS(G, y, "1x1x2x2");
}

Test(infer, pool_window_hanging_over_the_end)
{
	/* (2 - 3) / 2 truncates to 0: one window, as ONNX and onnxruntime
	 * compute it; a pool is not required to cover its kernel */
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x1x2");
	uint32_t y = op1(G, RL_OP_MaxPool, 12, "y", 1, x);
	attr_ints(G, last_node(G), "kernel_shape", 1, I64(3));
	attr_ints(G, last_node(G), "strides", 1, I64(2));
	INFER_OK(G);
	SHAPE_IS(G, y, "1x1x1");
}

Test(infer, global_pool_and_missing_kernel)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x8x7x7");
	uint32_t y = op1(G, RL_OP_GlobalAveragePool, 11, "y", 1, x);
	INFER_OK(G);
	SHAPE_IS(G, y, "2x8x1x1");
	op1(G, RL_OP_MaxPool, 12, "z", 1, x);
	INFER_FAILS(G, RL_ERR_SHAPE, "kernel_shape");
}

/* ---- norm --------------------------------------------------------------- */

Test(infer, softmax_axis_by_opset)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	uint32_t a = op1(G, RL_OP_Softmax, 10, "a", 1, x);
	attr_i(G, last_node(G), "axis", 3); /* a valid split point before 11 */
	uint32_t b = op1(G, RL_OP_Hardmax, 13, "b", 1, x); /* default axis -1 */
	uint32_t c = op1(G, RL_OP_LogSoftmax, 11, "c", 1, x); /* default axis 1 */
	INFER_OK(G);
	SHAPE_IS(G, a, "2x3x4");
	SHAPE_IS(G, b, "2x3x4");
	SHAPE_IS(G, c, "2x3x4");
	op1(G, RL_OP_LogSoftmax, 11, "d", 1, x);
	attr_i(G, last_node(G), "axis", 3);
	INFER_FAILS(G, RL_ERR_SHAPE, "axis 3 is out of range");
}

Test(infer, layernorm_outputs)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT16, "2x5x8");
	uint32_t s = input(G, "s", RL_DT_FLOAT16, "5x8");
	uint32_t outs[3] = {tmp(G, "y"), tmp(G, "mean"), tmp(G, "inv")};
	uint32_t in[2] = {x, s};
	node(G, RL_OP_LayerNormalization, 17, in, 2, outs, 3);
	attr_i(G, last_node(G), "axis", -2);
	INFER_OK(G);
	SHAPE_IS(G, outs[0], "2x5x8");
	SHAPE_IS(G, outs[1], "2x1x1");
	cr_assert_eq(G->values[outs[0]].dtype, RL_DT_FLOAT16);
	cr_assert_eq(G->values[outs[2]].dtype, RL_DT_FLOAT); /* stash_type */
}

Test(infer, batchnorm_param_size)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x3x4x4");
	uint32_t p3 = input(G, "p3", RL_DT_FLOAT, "3");
	uint32_t p4 = input(G, "p4", RL_DT_FLOAT, "4");
	uint32_t y = op1(G, RL_OP_BatchNormalization, 15, "y", 5, x, p3, p3, p3, p3);
	INFER_OK(G);
	SHAPE_IS(G, y, "1x3x4x4");
	op1(G, RL_OP_BatchNormalization, 15, "z", 5, x, p3, p4, p3, p3);
	INFER_FAILS(G, RL_ERR_SHAPE, "expected 3");
}

Test(infer, batchnorm7_per_activation_and_outputs)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	uint32_t p = input(G, "p", RL_DT_FLOAT, "3x4");
	uint32_t in[5] = {x, p, p, p, p};
	uint32_t out[5] = {tmp(G, "y"), tmp(G, "m"), tmp(G, "v"), tmp(G, "sm"), tmp(G, "sv")};
	node(G, RL_OP_BatchNormalization, 7, in, 5, out, 5);
	attr_i(G, last_node(G), "spatial", 0);
	INFER_OK(G);
	SHAPE_IS(G, out[0], "2x3x4");
	SHAPE_IS(G, out[4], "3x4");
}

/* ---- reduce ------------------------------------------------------------- */

Test(infer, reduce_keepdims_and_axes_input)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	int64_t ax1[] = {1};
	uint32_t axes = ints1(G, "axes", 1, ax1);
	uint32_t s = op1(G, RL_OP_ReduceSum, 13, "s", 2, x, axes);
	attr_i(G, last_node(G), "keepdims", 0);
	uint32_t m = op1(G, RL_OP_ReduceMean, 13, "m", 1, x);
	attr_ints(G, last_node(G), "axes", 1, I64(-1));
	uint32_t m18 = op1(G, RL_OP_ReduceMax, 18, "m18", 2, x, axes);
	uint32_t all = op1(G, RL_OP_ReduceL2, 13, "all", 1, x);
	attr_i(G, last_node(G), "keepdims", 0);
	uint32_t noop = op1(G, RL_OP_ReduceSum, 13, "noop", 1, x);
	attr_i(G, last_node(G), "noop_with_empty_axes", 1);
	uint32_t dyn_axes = input(G, "dyn", RL_DT_INT64, "2");
	uint32_t dyn = op1(G, RL_OP_ReduceSum, 13, "dyn", 2, x, dyn_axes);
	attr_i(G, last_node(G), "keepdims", 0);
	INFER_OK(G);
	SHAPE_IS(G, s, "2x4");
	SHAPE_IS(G, m, "2x3x1");
	SHAPE_IS(G, m18, "2x1x4");
	SHAPE_IS(G, all, "scalar");
	SHAPE_IS(G, noop, "2x3x4");
	cr_assert_eq(G->values[dyn].shape.rank, 1); /* 3 - 2 axes */
}

Test(infer, reduce_repeated_axis)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3");
	op1(G, RL_OP_ReduceMean, 13, "m", 1, x);
	attr_ints(G, last_node(G), "axes", 2, I64(1), I64(-1));
	INFER_FAILS(G, RL_ERR_SHAPE, "repeated");
}

Test(infer, argmax_keepdims)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	uint32_t a = op1(G, RL_OP_ArgMax, 13, "a", 1, x);
	attr_i(G, last_node(G), "axis", 1);
	attr_i(G, last_node(G), "keepdims", 0);
	uint32_t b = op1(G, RL_OP_ArgMin, 13, "b", 1, x);
	attr_i(G, last_node(G), "axis", -1);
	attr_i(G, last_node(G), "select_last_index", 1);
	INFER_OK(G);
	SHAPE_IS(G, a, "2x4");
	SHAPE_IS(G, b, "2x3x1");
	cr_assert_eq(G->values[a].dtype, RL_DT_INT64);
}

/* ---- shape ops ---------------------------------------------------------- */

Test(infer, reshape_zero_and_minus_one)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	int64_t t1[] = {0, -1}, t2[] = {-1}, t3[] = {4, 0, 2};
	uint32_t a = op1(G, RL_OP_Reshape, 13, "a", 2, x, ints1(G, "t1", 2, t1));
	uint32_t b = op1(G, RL_OP_Reshape, 13, "b", 2, x, ints1(G, "t2", 1, t2));
	uint32_t c = op1(G, RL_OP_Reshape, 13, "c", 2, x, ints1(G, "t3", 3, t3));
	INFER_OK(G);
	SHAPE_IS(G, a, "2x12");
	SHAPE_IS(G, b, "24");
	SHAPE_IS(G, c, "4x3x2");
}

Test(infer, reshape_bad_count)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	int64_t t[] = {5, 5};
	op1(G, RL_OP_Reshape, 13, "a", 2, x, ints1(G, "t", 2, t));
	INFER_FAILS(G, RL_ERR_SHAPE, "cannot reshape 24 elements into 5x5");
}

Test(infer, reshape_allowzero)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "0x3");
	int64_t t[] = {3, 0};
	uint32_t a = op1(G, RL_OP_Reshape, 14, "a", 2, x, ints1(G, "t", 2, t));
	attr_i(G, last_node(G), "allowzero", 1);
	INFER_OK(G);
	SHAPE_IS(G, a, "3x0");
}

Test(infer, reshape_needs_shape_input_from_opset5)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3");
	op1(G, RL_OP_Reshape, 13, "a", 1, x);
	INFER_FAILS(G, RL_ERR_INVALID, "Reshape-13 takes 2");
}

Test(infer, squeeze_unsqueeze_opset11_attrs)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "3x1x4x1");
	uint32_t s = op1(G, RL_OP_Squeeze, 11, "s", 1, x);
	attr_ints(G, last_node(G), "axes", 1, I64(-1));
	uint32_t all = op1(G, RL_OP_Squeeze, 11, "all", 1, x);
	uint32_t u = op1(G, RL_OP_Unsqueeze, 11, "u", 1, all);
	attr_ints(G, last_node(G), "axes", 2, I64(0), I64(-1));
	INFER_OK(G);
	SHAPE_IS(G, s, "3x1x4");
	SHAPE_IS(G, all, "3x4");
	SHAPE_IS(G, u, "1x3x4x1");
}

Test(infer, squeeze_unsqueeze_opset13_inputs)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "3x1x4");
	int64_t a1[] = {1}, a2[] = {1, 3};
	uint32_t s = op1(G, RL_OP_Squeeze, 13, "s", 2, x, ints1(G, "a1", 1, a1));
	uint32_t u = op1(G, RL_OP_Unsqueeze, 13, "u", 2, s, ints1(G, "a2", 2, a2));
	INFER_OK(G);
	SHAPE_IS(G, s, "3x4");
	SHAPE_IS(G, u, "3x1x4x1");
}

Test(infer, squeeze_non_unit_axis_fails)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "3x2");
	int64_t a[] = {1};
	op1(G, RL_OP_Squeeze, 13, "s", 2, x, ints1(G, "a", 1, a));
	INFER_FAILS(G, RL_ERR_SHAPE, "cannot squeeze axis 1 of size 2");
}

Test(infer, slice_opset9_attrs)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "4x10x6");
	uint32_t y = op1(G, RL_OP_Slice, 9, "y", 1, x);
	uint32_t n = last_node(G);
	attr_ints(G, n, "starts", 2, I64(1), I64(-4));
	attr_ints(G, n, "ends", 2, I64(1000), I64(-1));
	attr_ints(G, n, "axes", 2, I64(1), I64(2));
	INFER_OK(G);
	SHAPE_IS(G, y, "4x9x3");
}

Test(infer, slice_opset13_negative_steps)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "5x10");
	int64_t st[] = {-1, 8}, en[] = {INT64_MIN, 1}, ax[] = {0, 1}, sp[] = {-1, -3};
	uint32_t y = op1(G, RL_OP_Slice, 13, "y", 5, x, ints1(G, "st", 2, st),
	                 ints1(G, "en", 2, en), ints1(G, "ax", 2, ax), ints1(G, "sp", 2, sp));
	INFER_OK(G);
	/* axis 0 reversed whole; axis 1: 8, 5, 2 */
	SHAPE_IS(G, y, "5x3");
}

Test(infer, slice_evaluates_constants)
{
	int64_t data[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	uint32_t d = ints1(G, "d", 10, data);
	int64_t st[] = {8}, en[] = {2}, sp[] = {-3};
	uint32_t y = op1(G, RL_OP_Slice, 13, "y", 5, d, ints1(G, "st", 1, st),
	                 ints1(G, "en", 1, en), RL_NONE, ints1(G, "sp", 1, sp));
	INFER_OK(G);
	SHAPE_IS(G, y, "2");
	cr_assert(rl_value_is_const(G, y));
	cr_assert_eq(rl_value_get_int(G, y, 0), 8);
	cr_assert_eq(rl_value_get_int(G, y, 1), 5);
}

Test(infer, slice_zero_step_fails)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "5");
	int64_t z[] = {0};
	op1(G, RL_OP_Slice, 13, "y", 5, x, ints1(G, "a", 1, z), ints1(G, "b", 1, z),
	    ints1(G, "c", 1, z), ints1(G, "d", 1, z));
	INFER_FAILS(G, RL_ERR_SHAPE, "step 0 is zero");
}

Test(infer, split_attr_input_even_and_num_outputs)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x10");
	uint32_t o11[2] = {tmp(G, "a"), tmp(G, "b")};
	node(G, RL_OP_Split, 11, &x, 1, o11, 2);
	attr_i(G, last_node(G), "axis", 1);
	attr_ints(G, last_node(G), "split", 2, I64(3), I64(7));
	int64_t sz[] = {4, 6};
	uint32_t in13[2] = {x, ints1(G, "sz", 2, sz)};
	uint32_t o13[2] = {tmp(G, "c"), tmp(G, "d")};
	node(G, RL_OP_Split, 13, in13, 2, o13, 2);
	attr_i(G, last_node(G), "axis", -1);
	uint32_t oeven[5];
	for (int i = 0; i < 5; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "e%d", i);
		oeven[i] = tmp(G, nm);
	}
	node(G, RL_OP_Split, 13, &x, 1, oeven, 5);
	attr_i(G, last_node(G), "axis", 1);
	uint32_t o18[4];
	for (int i = 0; i < 4; i++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "f%d", i);
		o18[i] = tmp(G, nm);
	}
	node(G, RL_OP_Split, 18, &x, 1, o18, 4);
	attr_i(G, last_node(G), "axis", 1);
	attr_i(G, last_node(G), "num_outputs", 4);
	INFER_OK(G);
	SHAPE_IS(G, o11[0], "2x3");
	SHAPE_IS(G, o11[1], "2x7");
	SHAPE_IS(G, o13[0], "2x4");
	SHAPE_IS(G, o13[1], "2x6");
	SHAPE_IS(G, oeven[4], "2x2");
	SHAPE_IS(G, o18[0], "2x3");
	SHAPE_IS(G, o18[3], "2x1");
}

Test(infer, split_uneven_without_sizes_fails)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "10");
	uint32_t o[3] = {tmp(G, "a"), tmp(G, "b"), tmp(G, "c")};
	node(G, RL_OP_Split, 13, &x, 1, o, 3);
	INFER_FAILS(G, RL_ERR_SHAPE, "does not split evenly into 3 outputs");
}

Test(infer, concat_negative_axis_and_mismatch)
{
	uint32_t a = input(G, "a", RL_DT_FLOAT, "2x3");
	uint32_t b = input(G, "b", RL_DT_FLOAT, "2x5");
	uint32_t c = op1(G, RL_OP_Concat, 13, "c", 2, a, b);
	attr_i(G, last_node(G), "axis", -1);
	INFER_OK(G);
	SHAPE_IS(G, c, "2x8");
	op1(G, RL_OP_Concat, 13, "d", 2, a, b);
	attr_i(G, last_node(G), "axis", 0);
	INFER_FAILS(G, RL_ERR_SHAPE, "does not match");
}

Test(infer, gather_shapes_and_bounds)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "5x4x3");
	int64_t ix[] = {0, -1, 2, 3};
	uint32_t i22 = konst(G, "i", RL_DT_INT64, "2x2", ix);
	uint32_t y = op1(G, RL_OP_Gather, 13, "y", 2, x, i22);
	attr_i(G, last_node(G), "axis", 1);
	int64_t sc = 2;
	uint32_t s = op1(G, RL_OP_Gather, 13, "s", 2, x, konst(G, "sc", RL_DT_INT64, "scalar", &sc));
	uint32_t ge = op1(G, RL_OP_GatherElements, 13, "ge", 2, x,
	                  input(G, "gi", RL_DT_INT64, "5x2x3"));
	INFER_OK(G);
	SHAPE_IS(G, y, "5x2x2x3");
	SHAPE_IS(G, s, "4x3");
	SHAPE_IS(G, ge, "5x2x3");
	op1(G, RL_OP_Gather, 13, "bad", 2, x, i22); /* axis 0: index 3 ok, but... */
	attr_i(G, last_node(G), "axis", 2);         /* axis 2 has size 3 */
	INFER_FAILS(G, RL_ERR_SHAPE, "index 3 is out of range for axis 2 of size 3");
}

Test(infer, gather_evaluates_negative_index)
{
	int64_t data[] = {10, 20, 30};
	int64_t m1 = -1;
	uint32_t d = ints1(G, "d", 3, data);
	uint32_t y = op1(G, RL_OP_Gather, 13, "y", 2, d, konst(G, "i", RL_DT_INT64, "scalar", &m1));
	INFER_OK(G);
	SHAPE_IS(G, y, "scalar");
	cr_assert(rl_value_is_const(G, y));
	cr_assert_eq(rl_value_get_int(G, y, 0), 30);
}

Test(infer, transpose_default_and_perm)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	uint32_t a = op1(G, RL_OP_Transpose, 13, "a", 1, x);
	uint32_t b = op1(G, RL_OP_Transpose, 13, "b", 1, x);
	attr_ints(G, last_node(G), "perm", 3, I64(1), I64(0), I64(2));
	INFER_OK(G);
	SHAPE_IS(G, a, "4x3x2");
	SHAPE_IS(G, b, "3x2x4");
	op1(G, RL_OP_Transpose, 13, "c", 1, x);
	attr_ints(G, last_node(G), "perm", 3, I64(1), I64(1), I64(2));
	INFER_FAILS(G, RL_ERR_SHAPE, "not a permutation");
}

Test(infer, transpose_evaluates)
{
	int64_t data[] = {1, 2, 3, 4, 5, 6};
	uint32_t d = konst(G, "d", RL_DT_INT64, "2x3", data);
	uint32_t t = op1(G, RL_OP_Transpose, 13, "t", 1, d);
	INFER_OK(G);
	SHAPE_IS(G, t, "3x2");
	int64_t want[] = {1, 4, 2, 5, 3, 6};
	for (int i = 0; i < 6; i++)
		cr_assert_eq(rl_value_get_int(G, t, i), want[i]);
}

Test(infer, flatten_axes)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4x5");
	uint32_t a = op1(G, RL_OP_Flatten, 13, "a", 1, x);
	attr_i(G, last_node(G), "axis", 2);
	uint32_t b = op1(G, RL_OP_Flatten, 13, "b", 1, x);
	attr_i(G, last_node(G), "axis", 0);
	uint32_t c = op1(G, RL_OP_Flatten, 13, "c", 1, x);
	attr_i(G, last_node(G), "axis", -1);
	uint32_t d = op1(G, RL_OP_Flatten, 13, "d", 1, x);
	attr_i(G, last_node(G), "axis", 4);
	INFER_OK(G);
	SHAPE_IS(G, a, "6x20");
	SHAPE_IS(G, b, "1x120");
	SHAPE_IS(G, c, "24x5");
	SHAPE_IS(G, d, "120x1");
}

Test(infer, expand_tile_pad)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "3x1");
	int64_t es[] = {2, 1, 4}, rp[] = {2, 3}, pd[] = {1, 0, 2, 3};
	uint32_t e = op1(G, RL_OP_Expand, 13, "e", 2, x, ints1(G, "es", 3, es));
	uint32_t t = op1(G, RL_OP_Tile, 13, "t", 2, x, ints1(G, "rp", 2, rp));
	uint32_t p = op1(G, RL_OP_Pad, 13, "p", 2, x, ints1(G, "pd", 4, pd));
	uint32_t p2 = op1(G, RL_OP_Pad, 10, "p2", 1, x);
	attr_ints(G, last_node(G), "pads", 4, I64(0), I64(1), I64(0), I64(1));
	INFER_OK(G);
	SHAPE_IS(G, e, "2x3x4");
	SHAPE_IS(G, t, "6x3");
	SHAPE_IS(G, p, "6x4");
	SHAPE_IS(G, p2, "3x3");
}

Test(infer, pad_opset18_axes)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "3x4x5");
	int64_t pd[] = {1, 2}, ax[] = {-1};
	float zero = 0;
	uint32_t p = op1(G, RL_OP_Pad, 18, "p", 4, x, ints1(G, "pd", 2, pd),
	                 konst(G, "cv", RL_DT_FLOAT, "scalar", &zero), ints1(G, "ax", 1, ax));
	INFER_OK(G);
	SHAPE_IS(G, p, "3x4x8");
}

Test(infer, tile_dim_over_limit)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1024");
	int64_t rp[] = {I64(1) << 31};
	op1(G, RL_OP_Tile, 13, "t", 2, x, ints1(G, "rp", 1, rp));
	INFER_FAILS(G, RL_ERR_SHAPE, "over the limit of 2^40");
}

Test(infer, depth_to_space_and_back)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "1x8x3x5");
	uint32_t d = op1(G, RL_OP_DepthToSpace, 13, "d", 1, x);
	attr_i(G, last_node(G), "blocksize", 2);
	attr_s(G, last_node(G), "mode", "CRD");
	uint32_t s = op1(G, RL_OP_SpaceToDepth, 13, "s", 1, d);
	attr_i(G, last_node(G), "blocksize", 2);
	INFER_OK(G);
	SHAPE_IS(G, d, "1x2x6x10");
	SHAPE_IS(G, s, "1x8x3x5");
}

Test(infer, shape_start_end_and_size)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4x5");
	uint32_t a = op1(G, RL_OP_Shape, 15, "a", 1, x);
	attr_i(G, last_node(G), "start", 1);
	attr_i(G, last_node(G), "end", -1);
	uint32_t n = op1(G, RL_OP_Size, 13, "n", 1, x);
	INFER_OK(G);
	SHAPE_IS(G, a, "2");
	cr_assert(rl_value_is_const(G, a));
	cr_assert_eq(rl_value_get_int(G, a, 0), 3);
	cr_assert_eq(rl_value_get_int(G, a, 1), 4);
	SHAPE_IS(G, n, "scalar");
	cr_assert_eq(rl_value_get_int(G, n, 0), 120);
}

/* ---- constant evaluation ------------------------------------------------ */

Test(infer, shape_gather_unsqueeze_concat_reshape_chain)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	uint32_t sh = op1(G, RL_OP_Shape, 13, "sh", 1, x);
	int64_t zero = 0, minus1[] = {-1}, ax0[] = {0};
	uint32_t b = op1(G, RL_OP_Gather, 13, "b", 2, sh,
	                 konst(G, "i0", RL_DT_INT64, "scalar", &zero));
	uint32_t ub = op1(G, RL_OP_Unsqueeze, 13, "ub", 2, b, ints1(G, "ax", 1, ax0));
	uint32_t tgt = op1(G, RL_OP_Concat, 13, "tgt", 2, ub, ints1(G, "m1", 1, minus1));
	attr_i(G, last_node(G), "axis", 0);
	uint32_t y = op1(G, RL_OP_Reshape, 13, "y", 2, x, tgt);
	output(G, y);
	INFER_OK(G);
	cr_assert(rl_value_is_const(G, tgt));
	cr_assert_eq(rl_value_get_int(G, tgt, 0), 2);
	cr_assert_eq(rl_value_get_int(G, tgt, 1), -1);
	SHAPE_IS(G, y, "2x12");
	cr_assert(!rl_value_is_const(G, y)); /* x is a runtime input */
	cr_assert_eq(rl_graph_verify(G), RL_OK, "%s", G->err);
}

Test(infer, constant_attrs_build_tensors)
{
	uint32_t a = tmp(G, "a"), b = tmp(G, "b"), c = tmp(G, "c");
	node(G, RL_OP_Constant, 13, NULL, 0, &a, 1);
	attr_ints(G, last_node(G), "value_ints", 3, I64(4), I64(-1), I64(7));
	node(G, RL_OP_Constant, 13, NULL, 0, &b, 1);
	attr_f(G, last_node(G), "value_float", 0.5);
	float tv[2] = {1.5f, -2.0f};
	uint32_t t = konst(G, "t", RL_DT_FLOAT, "1x2", tv);
	node(G, RL_OP_Constant, 13, NULL, 0, &c, 1);
	rl_node_add_attr(G, last_node(G), "value", RL_ATTR_TENSOR)->tensor = t;
	INFER_OK(G);
	SHAPE_IS(G, a, "3");
	cr_assert_eq(G->values[a].dtype, RL_DT_INT64);
	cr_assert_eq(rl_value_get_int(G, a, 2), 7);
	SHAPE_IS(G, b, "scalar");
	cr_assert_float_eq(rl_value_get_float(G, b, 0), 0.5, 1e-9);
	SHAPE_IS(G, c, "1x2");
	cr_assert_float_eq(rl_value_get_float(G, c, 1), -2.0, 1e-9);
	cr_assert_eq(G->values[c].data, G->values[t].data); /* borrowed */
}

Test(infer, big_constant_node_keeps_its_tensor)
{
	static float w[300 * 300];
	w[300 * 300 - 1] = 7;
	uint32_t t = konst(G, "t", RL_DT_FLOAT, "300x300", w);
	uint32_t c = tmp(G, "c");
	node(G, RL_OP_Constant, 13, NULL, 0, &c, 1);
	rl_node_add_attr(G, last_node(G), "value", RL_ATTR_TENSOR)->tensor = t;
	uint32_t r = op1(G, RL_OP_Relu, 14, "r", 1, c);
	INFER_OK(G);
	cr_assert(rl_value_is_const(G, c));
	cr_assert_float_eq(rl_value_get_float(G, c, 300 * 300 - 1), 7.0, 1e-9);
	SHAPE_IS(G, r, "300x300");
	cr_assert(!rl_value_is_const(G, r)); /* Relu is never folded here */
}

Test(infer, arithmetic_evaluation_semantics)
{
	int64_t a[] = {7, -7, 7, -7}, b[] = {2, 2, -2, -2};
	uint32_t va = ints1(G, "a", 4, a), vb = ints1(G, "b", 4, b);
	uint32_t q = op1(G, RL_OP_Div, 13, "q", 2, va, vb);
	uint32_t m = op1(G, RL_OP_Mod, 13, "m", 2, va, vb);
	uint32_t f = op1(G, RL_OP_Mod, 13, "f", 2, va, vb);
	attr_i(G, last_node(G), "fmod", 1);
	uint32_t lt = op1(G, RL_OP_Less, 13, "lt", 2, va, vb);
	INFER_OK(G);
	int64_t wq[] = {3, -3, -3, 3}, wm[] = {1, 1, -1, -1}, wf[] = {1, -1, 1, -1};
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(rl_value_get_int(G, q, i), wq[i], "div %d", i);
		cr_assert_eq(rl_value_get_int(G, m, i), wm[i], "mod %d", i);
		cr_assert_eq(rl_value_get_int(G, f, i), wf[i], "fmod %d", i);
	}
	cr_assert_eq(G->values[lt].dtype, RL_DT_BOOL);
	cr_assert_eq(rl_value_get_int(G, lt, 2), 0);
	cr_assert_eq(rl_value_get_int(G, lt, 1), 1);
}

Test(infer, float_evaluation_in_float32_and_half)
{
	float a = 16777216.0f, one = 1.0f;
	uint32_t va = konst(G, "a", RL_DT_FLOAT, "scalar", &a);
	uint32_t v1 = konst(G, "one", RL_DT_FLOAT, "scalar", &one);
	uint32_t s = op1(G, RL_OP_Add, 13, "s", 2, va, v1);
	uint16_t h[2] = {rl_float_to_half(1.5f), rl_float_to_half(2.25f)};
	uint32_t vh = konst(G, "h", RL_DT_FLOAT16, "2", h);
	uint32_t hh = op1(G, RL_OP_Mul, 13, "hh", 2, vh, vh);
	uint32_t sq = op1(G, RL_OP_Sqrt, 13, "sq", 1, hh);
	INFER_OK(G);
	/* 2^24 + 1 rounds back to 2^24 in float, not in double */
	cr_assert_eq(((const float *)G->values[s].data)[0], 16777216.0f);
	cr_assert_eq(G->values[hh].dtype, RL_DT_FLOAT16);
	cr_assert_eq(G->values[hh].nbytes, 4);
	cr_assert_float_eq(rl_value_get_float(G, hh, 1), 5.0625, 1e-6);
	cr_assert_float_eq(rl_value_get_float(G, sq, 0), 1.5, 1e-6);
}

Test(infer, cast_evaluation)
{
	int64_t v[] = {1, -2, 300};
	uint32_t c = ints1(G, "c", 3, v);
	uint32_t f = op1(G, RL_OP_Cast, 13, "f", 1, c);
	attr_i(G, last_node(G), "to", RL_DT_FLOAT);
	uint32_t u8 = op1(G, RL_OP_Cast, 13, "u8", 1, c);
	attr_i(G, last_node(G), "to", RL_DT_UINT8);
	uint32_t b = op1(G, RL_OP_Cast, 13, "b", 1, c);
	attr_i(G, last_node(G), "to", RL_DT_BOOL);
	INFER_OK(G);
	cr_assert_float_eq(rl_value_get_float(G, f, 1), -2.0, 1e-9);
	cr_assert_eq(rl_value_get_int(G, u8, 1), 254); /* wraps */
	cr_assert_eq(rl_value_get_int(G, u8, 2), 44);
	cr_assert_eq(rl_value_get_int(G, b, 1), 1);
}

Test(infer, range_constant_of_shape_where_reduce_eval)
{
	int64_t s0 = 0, l = 10, d = 3;
	uint32_t r = op1(G, RL_OP_Range, 13, "r", 3, konst(G, "s", RL_DT_INT64, "scalar", &s0),
	                 konst(G, "l", RL_DT_INT64, "scalar", &l),
	                 konst(G, "d", RL_DT_INT64, "scalar", &d));
	int64_t shp[] = {2, 3};
	uint32_t cs = op1(G, RL_OP_ConstantOfShape, 13, "cs", 1, ints1(G, "shp", 2, shp));
	int64_t one = 1;
	uint32_t t = konst(G, "t", RL_DT_INT64, "1", &one);
	rl_node_add_attr(G, last_node(G), "value", RL_ATTR_TENSOR)->tensor = t;
	uint8_t cond[] = {1, 0, 1, 0};
	uint32_t vc = konst(G, "cond", RL_DT_BOOL, "4", cond);
	uint32_t w = op1(G, RL_OP_Where, 16, "w", 3, vc, r, ints1(G, "neg", 1, (int64_t[]){-1}));
	uint32_t rs = op1(G, RL_OP_ReduceSum, 13, "rs", 1, cs);
	attr_i(G, last_node(G), "keepdims", 0);
	uint32_t rm = op1(G, RL_OP_ReduceMax, 13, "rm", 1, r);
	INFER_OK(G);
	SHAPE_IS(G, r, "4");
	cr_assert_eq(rl_value_get_int(G, r, 3), 9);
	SHAPE_IS(G, cs, "2x3");
	cr_assert_eq(G->values[cs].dtype, RL_DT_INT64);
	cr_assert_eq(rl_value_get_int(G, cs, 5), 1);
	cr_assert_eq(rl_value_get_int(G, w, 0), 0);
	cr_assert_eq(rl_value_get_int(G, w, 1), -1);
	cr_assert_eq(rl_value_get_int(G, w, 2), 6);
	SHAPE_IS(G, rs, "scalar");
	cr_assert_eq(rl_value_get_int(G, rs, 0), 6);
	cr_assert_eq(rl_value_get_int(G, rm, 0), 9);
}

Test(infer, big_outputs_are_not_evaluated)
{
	int64_t shp[] = {300, 300};
	uint32_t cs = op1(G, RL_OP_ConstantOfShape, 13, "cs", 1, ints1(G, "shp", 2, shp));
	INFER_OK(G);
	SHAPE_IS(G, cs, "300x300");
	cr_assert(!rl_value_is_const(G, cs));
}

/* ---- symbols ------------------------------------------------------------ */

Test(infer, symbolic_batch_propagates_and_binds)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "batchx3x4");
	float wv[20] = {0};
	uint32_t w = konst(G, "w", RL_DT_FLOAT, "4x5", wv);
	uint32_t r = op1(G, RL_OP_Relu, 14, "r", 1, x);
	uint32_t m = op1(G, RL_OP_MatMul, 13, "m", 2, r, w);
	int64_t t[] = {0, -1};
	uint32_t y = op1(G, RL_OP_Reshape, 13, "y", 2, m, ints1(G, "t", 2, t));
	output(G, y);
	INFER_OK(G);
	SHAPE_IS(G, r, "batchx3x4");
	SHAPE_IS(G, m, "batchx3x5");
	SHAPE_IS(G, y, "batchx15");
	int bound = rl_graph_bind_dim(G, NULL, 8);
	cr_assert_eq(bound, 4, "bound %d dims", bound); /* x, r, m, y */
	INFER_OK(G);
	SHAPE_IS(G, y, "8x15");
	cr_assert(rl_shape_is_static(&G->values[y].shape));
}

Test(infer, symbolic_shape_chain_keeps_symbols)
{
	/* Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(Shape(x), 1)), [12, 64])) */
	uint32_t x = input(G, "x", RL_DT_FLOAT, "batchxseqx768");
	uint32_t sh = op1(G, RL_OP_Shape, 13, "sh", 1, x);
	int64_t i0 = 0, i1 = 1, ax0[] = {0}, tail[] = {12, 64};
	uint32_t g0 = op1(G, RL_OP_Gather, 13, "g0", 2, sh, konst(G, "i0", RL_DT_INT64, "scalar", &i0));
	uint32_t g1 = op1(G, RL_OP_Gather, 13, "g1", 2, sh, konst(G, "i1", RL_DT_INT64, "scalar", &i1));
	uint32_t ax = ints1(G, "ax", 1, ax0);
	uint32_t u0 = op1(G, RL_OP_Unsqueeze, 13, "u0", 2, g0, ax);
	uint32_t u1 = op1(G, RL_OP_Unsqueeze, 13, "u1", 2, g1, ax);
	uint32_t tgt = op1(G, RL_OP_Concat, 13, "tgt", 3, u0, u1, ints1(G, "tail", 2, tail));
	attr_i(G, last_node(G), "axis", 0);
	uint32_t y = op1(G, RL_OP_Reshape, 13, "y", 2, x, tgt);
	uint32_t z = op1(G, RL_OP_Reshape, 13, "z", 2, y, ints1(G, "flat", 2, (int64_t[]){-1, 768}));
	/* the static part of a symbolic shape folds to a constant */
	uint32_t sl = op1(G, RL_OP_Slice, 13, "sl", 3, sh, ints1(G, "s", 1, (int64_t[]){-1}),
	                  ints1(G, "e", 1, (int64_t[]){INT64_MAX}));
	output(G, y);
	INFER_OK(G);
	SHAPE_IS(G, y, "batchxseqx12x64");
	cr_assert(G->values[z].shape.d[0].v < 0); /* batch*seq is unknown */
	cr_assert(strncmp(shape_of(G, z), "unk_", 4) == 0, "%s", shape_of(G, z));
	cr_assert(rl_value_is_const(G, sl));
	cr_assert_eq(rl_value_get_int(G, sl, 0), 768);
	/* bind both, re-infer: everything static */
	cr_assert_eq(rl_graph_bind_dim(G, "seq", 128), 2); /* x and y */
	cr_assert_eq(rl_graph_bind_dim(G, "batch", 2), 2);
	INFER_OK(G);
	SHAPE_IS(G, y, "2x128x12x64");
	SHAPE_IS(G, z, "256x768");
	cr_assert(rl_value_is_const(G, tgt));
}

Test(infer, symbolic_expand_minus_one_and_attention_scale)
{
	/* torch x.expand(batch, -1, -1): Where(Equal(shape, -1), 1, shape) */
	uint32_t x = input(G, "x", RL_DT_FLOAT, "batchx1x4");
	uint32_t p = input(G, "p", RL_DT_FLOAT, "1x5x6");
	uint32_t sh = op1(G, RL_OP_Shape, 13, "sh", 1, x);
	int64_t zero = 0, two = 2, m1 = -1;
	uint32_t b = op1(G, RL_OP_Gather, 13, "b", 2, sh, konst(G, "i0", RL_DT_INT64, "scalar", &zero));
	uint32_t ub = op1(G, RL_OP_Unsqueeze, 13, "ub", 2, b, ints1(G, "ax", 1, (int64_t[]){0}));
	uint32_t shp = op1(G, RL_OP_Concat, 13, "shp", 2, ub, ints1(G, "mm", 2, (int64_t[]){-1, -1}));
	attr_i(G, last_node(G), "axis", 0);
	uint32_t eq = op1(G, RL_OP_Equal, 13, "eq", 2, shp, konst(G, "m1", RL_DT_INT64, "scalar", &m1));
	uint32_t ones = op1(G, RL_OP_ConstantOfShape, 13, "ones", 1, ints1(G, "three", 1, (int64_t[]){3}));
	int64_t one = 1;
	rl_node_add_attr(G, last_node(G), "value", RL_ATTR_TENSOR)->tensor =
		konst(G, "one", RL_DT_INT64, "1", &one);
	uint32_t tgt = op1(G, RL_OP_Where, 16, "tgt", 3, eq, ones, shp);
	uint32_t e = op1(G, RL_OP_Expand, 13, "e", 2, p, tgt);
	/* the attention scale sqrt(head_dim) from a symbolic tensor's shape */
	uint32_t hd = op1(G, RL_OP_Gather, 13, "hd", 2, sh, konst(G, "i2", RL_DT_INT64, "scalar", &two));
	uint32_t hf = op1(G, RL_OP_Cast, 13, "hf", 1, hd);
	attr_i(G, last_node(G), "to", RL_DT_FLOAT);
	uint32_t sc = op1(G, RL_OP_Sqrt, 13, "sc", 1, hf);
	INFER_OK(G);
	cr_assert(rl_value_is_const(G, eq));
	cr_assert_eq(rl_value_get_int(G, eq, 0), 0);
	cr_assert_eq(rl_value_get_int(G, eq, 1), 1);
	SHAPE_IS(G, e, "batchx5x6");
	cr_assert(rl_value_is_const(G, sc));
	cr_assert_float_eq(rl_value_get_float(G, sc, 0), 2.0, 1e-9);
}

Test(infer, bind_input_checks)
{
	input(G, "x", RL_DT_FLOAT, "batchx3");
	uint32_t y = input(G, "y", RL_DT_FLOAT, "batchx5");
	struct rl_shape s = S(G, "4x3");
	cr_assert_eq(rl_graph_bind_input(G, "nope", &s), RL_ERR_INVALID);
	cr_assert(strstr(G->err, "no graph input named nope"));
	struct rl_shape r3 = S(G, "4x3x1");
	cr_assert_eq(rl_graph_bind_input(G, "x", &r3), RL_ERR_SHAPE);
	struct rl_shape bad = S(G, "4x2");
	cr_assert_eq(rl_graph_bind_input(G, "x", &bad), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "fixed at 3"), "%s", G->err);
	cr_assert_eq(rl_graph_bind_input(G, "x", &s), RL_OK);
	/* the shared symbol is bound in the other input too */
	SHAPE_IS(G, y, "4x5");
}

Test(infer, declared_output_conflict)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "3x2");
	struct rl_shape d = S(G, "2x3");
	uint32_t y = rl_graph_add_value(G, "y", RL_DT_FLOAT, &d);
	node(G, RL_OP_Relu, 14, &x, 1, &y, 1);
	output(G, y);
	INFER_FAILS(G, RL_ERR_SHAPE, "declared with shape 2x3 but inferred 3x2");
}

Test(infer, declared_output_fills_unknown_dims)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "6");
	uint32_t t = input(G, "t", RL_DT_INT64, "2"); /* a runtime shape */
	struct rl_shape d = S(G, "2xn");
	uint32_t y = rl_graph_add_value(G, "y", RL_DT_FLOAT, &d);
	uint32_t in[2] = {x, t};
	node(G, RL_OP_Reshape, 13, in, 2, &y, 1);
	output(G, y);
	INFER_OK(G);
	SHAPE_IS(G, y, "2xn");
}

Test(infer, reinfer_is_idempotent)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2x3x4");
	uint32_t sh = op1(G, RL_OP_Shape, 13, "sh", 1, x);
	uint32_t y = op1(G, RL_OP_Reshape, 13, "y", 2, x, sh);
	uint32_t f = op1(G, RL_OP_Flatten, 13, "f", 1, y);
	output(G, f);
	INFER_OK(G);
	char first[64];
	snprintf(first, sizeof(first), "%s", shape_of(G, f));
	cr_assert(rl_value_is_const(G, sh));
	const void *data = G->values[sh].data;
	uint32_t owned = G->nowned;
	INFER_OK(G);
	cr_assert_str_eq(shape_of(G, f), first);
	cr_assert(rl_value_is_const(G, sh));
	cr_assert_eq(rl_value_get_int(G, sh, 2), 4);
	/* the second run reuses the first run's blocks */
	cr_assert_eq(G->values[sh].data, data);
	cr_assert_eq(G->nowned, owned);
}

Test(infer, cycle_and_old_opset_rejected)
{
	uint32_t x = input(G, "x", RL_DT_FLOAT, "2");
	uint32_t a = tmp(G, "a"), b = tmp(G, "b");
	uint32_t in1[2] = {x, b}, in2[1] = {a};
	node(G, RL_OP_Add, 13, in1, 2, &a, 1);
	node(G, RL_OP_Relu, 13, in2, 1, &b, 1);
	INFER_FAILS(G, RL_ERR_INVALID, "cycle");
	rl_graph_free(G);
	G = rl_graph_new();
	x = input(G, "x", RL_DT_FLOAT, "2");
	op1(G, RL_OP_Relu, 6, "r", 1, x);
	INFER_FAILS(G, RL_ERR_UNSUPPORTED, "opset 6");
}

/* ---- robustness --------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A random value: runtime input or small constant, any rank up to 4. */
static uint32_t random_value(struct rl_graph *g, int k)
{
	static const enum rl_dtype dts[] = {RL_DT_FLOAT, RL_DT_INT64, RL_DT_INT32, RL_DT_BOOL,
	                                    RL_DT_FLOAT16, RL_DT_UINT8, RL_DT_DOUBLE,
	                                    RL_DT_INT64, RL_DT_INT64};
	struct rl_shape s;
	memset(&s, 0, sizeof(s));
	s.rank = (int)rnd(6) - 1;
	for (int i = 0; i < s.rank; i++)
		s.d[i] = rnd(8) == 0 ? (struct rl_dim){RL_DIM_SYMBOLIC, "n"}
		                     : (struct rl_dim){(int64_t)rnd(6), NULL};
	enum rl_dtype dt = dts[rnd(9)];
	char name[32];
	snprintf(name, sizeof(name), "in%d_%u", k, g->nvalues);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	int64_t ne = rl_shape_numel(&s);
	if (ne >= 0 && ne <= 64 && rnd(2)) {
		size_t es = rl_dtype_size(dt);
		uint8_t *p = rl_graph_own(g, (size_t)ne * es + 1);
		for (int64_t i = 0; i < ne; i++) {
			int64_t x = (int64_t)rnd(9) - 3;
			switch (dt) {
			case RL_DT_FLOAT: ((float *)p)[i] = (float)x; break;
			case RL_DT_DOUBLE: ((double *)p)[i] = (double)x; break;
			case RL_DT_FLOAT16: ((uint16_t *)p)[i] = rl_float_to_half((float)x); break;
			case RL_DT_INT64: ((int64_t *)p)[i] = x; break;
			case RL_DT_INT32: ((int32_t *)p)[i] = (int32_t)x; break;
			default: p[i] = (uint8_t)(x & 1); break;
			}
		}
		rl_value_set_data(g, v, p, (size_t)ne * es);
	} else {
		g->values[v].flags |= RL_VAL_INPUT;
		push(&g->inputs, &g->ninputs, v);
	}
	return v;
}

static void random_attrs(struct rl_graph *g, uint32_t nd)
{
	static const char *ia[] = {"axis", "keepdims", "group", "to", "blocksize", "transA",
	                           "transB", "allowzero", "ceil_mode", "num_outputs",
	                           "noop_with_empty_axes", "start", "end", "fmod", "size",
	                           "select_last_index", "stash_type", "p", "dtype", "k",
	                           "value_int"};
	static const char *la[] = {"axes", "perm", "pads", "strides", "kernel_shape",
	                           "dilations", "split", "starts", "ends", "output_padding",
	                           "output_shape", "shape", "value_ints"};
	static const char *sa[] = {"auto_pad", "mode", "direction"};
	static const char *sv[] = {"SAME_UPPER", "VALID", "NOTSET", "bogus", "CRD", "LEFT",
	                           "reflect"};
	int na = (int)rnd(5);
	for (int i = 0; i < na; i++) {
		switch (rnd(4)) {
		case 0:
			attr_i(g, nd, ia[rnd(sizeof(ia) / sizeof(ia[0]))], (int64_t)rnd(10) - 3);
			break;
		case 1: {
			struct rl_attr *a = rl_node_add_attr(g, nd, la[rnd(sizeof(la) / sizeof(la[0]))],
			                                     RL_ATTR_INTS);
			a->n = (int)rnd(5);
			a->ints = rl_arena_alloc(g, 8 * sizeof(int64_t));
			for (int k = 0; k < a->n; k++)
				a->ints[k] = (int64_t)rnd(9) - 3;
			break;
		}
		case 2:
			attr_s(g, nd, sa[rnd(3)], sv[rnd(7)]);
			break;
		default: {
			/* a tensor attribute, sometimes pointing nowhere */
			struct rl_attr *a = rl_node_add_attr(g, nd, "value", RL_ATTR_TENSOR);
			a->tensor = rnd(g->nvalues + 2);
			break;
		}
		}
	}
}

/* Random nodes of every operator with random inputs and attributes: each
 * must infer or fail with a message, never crash (the sanitizer build
 * checks memory), and a graph that infers must re-infer to the same
 * shapes. */
Test(infer, random_graphs_never_crash)
{
	static const int opsets[] = {7, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19};
	for (int iter = 0; iter < 4000; iter++) {
		struct rl_graph *g = rl_graph_new();
		uint32_t prev_out = RL_NONE;
		int nnodes = 1 + (int)rnd(2);
		for (int k = 0; k < nnodes; k++) {
			enum rl_op op = (enum rl_op)rnd(RL_OP_COUNT_);
			const struct rl_op_info *oi = &rl_op_table[op];
			int nin = oi->in_max < 0 ? 1 + (int)rnd(4)
			                         : oi->in_min + (int)rnd((uint32_t)(oi->in_max - oi->in_min + 1));
			int nout = oi->out_max < 0 ? 1 + (int)rnd(4)
			                           : oi->out_min + (int)rnd((uint32_t)(oi->out_max - oi->out_min + 1));
			uint32_t in[16], out[16]; /* QLinearConv takes 9 inputs */
			for (int i = 0; i < nin; i++) {
				if (i > 0 && rnd(10) == 0)
					in[i] = RL_NONE;
				else if (prev_out != RL_NONE && rnd(2))
					in[i] = prev_out;
				else
					in[i] = random_value(g, i);
			}
			for (int i = 0; i < nout; i++) {
				char nm[32];
				snprintf(nm, sizeof(nm), "out%d_%d", k, i);
				out[i] = tmp(g, nm);
			}
			uint32_t nd = node(g, op, opsets[rnd(11)], in, nin, out, nout);
			random_attrs(g, nd);
			prev_out = out[0];
		}
		output(g, prev_out);
		enum rl_status st = rl_graph_infer(g);
		if (st != RL_OK) {
			cr_assert(g->err[0], "status %d without a message", st);
			cr_assert(!strchr(g->err, '\n'));
		} else {
			char before[256], after[256];
			rl_shape_str(&g->values[prev_out].shape, before, sizeof(before));
			enum rl_dtype dt = g->values[prev_out].dtype;
			st = rl_graph_infer(g);
			cr_assert_eq(st, RL_OK, "re-infer failed: %s", g->err);
			rl_shape_str(&g->values[prev_out].shape, after, sizeof(after));
			cr_assert_str_eq(before, after, "iteration %d", iter);
			cr_assert_eq(dt, g->values[prev_out].dtype);
			cr_assert_neq(dt, RL_DT_UNDEFINED, "iteration %d: %s has no dtype", iter,
			              rl_op_table[g->nodes[g->nnodes - 1].op].name);
		}
		rl_graph_free(g);
	}
}
