/*
 * test_attn.c - golden tests of shape inference and FLOP counts for the
 * attention family (ir/fam_attn.c), and of the preview-domain lookup.
 *
 * The numerics of the kernels are checked by the ONNX node tests
 * (tests/py/test_conformance.py); these cover what they do not: the shapes
 * of the optional outputs, the counts (worked out by hand from the formulas
 * in fam_attn.c's cost comment, RL_FLOPS_TRANS per transcendental) and the
 * errors for malformed nodes.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "ir.h"

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

TestSuite(attn, .init = setup, .fini = teardown);

static struct rl_shape shp(int rank, ...)
{
	struct rl_shape s;
	memset(&s, 0, sizeof(s));
	s.rank = rank;
	va_list ap;
	va_start(ap, rank);
	for (int i = 0; i < rank; i++)
		s.d[i].v = va_arg(ap, int64_t);
	va_end(ap);
	return s;
}
#define L(x) ((int64_t)(x))

static void push(uint32_t **arr, uint32_t *n, uint32_t v)
{
	*arr = realloc(*arr, (*n + 1) * sizeof(**arr));
	cr_assert(*arr);
	(*arr)[(*n)++] = v;
}

static uint32_t input(const char *name, enum rl_dtype dt, struct rl_shape s)
{
	uint32_t v = rl_graph_add_value(G, name, dt, &s);
	G->values[v].flags |= RL_VAL_INPUT;
	push(&G->inputs, &G->ninputs, v);
	return v;
}

/* Node op(in...) with `nout` fresh graph outputs named out, out1, ... */
static uint32_t add(enum rl_op op, const char *out, int nout, int nin, ...)
{
	uint32_t in[8], o[4];
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, uint32_t);
	va_end(ap);
	for (int i = 0; i < nout; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), i ? "%s%d" : "%s", out, i);
		o[i] = rl_graph_add_value(G, nm, RL_DT_UNDEFINED, NULL);
		G->values[o[i]].flags |= RL_VAL_OUTPUT;
		push(&G->outputs, &G->noutputs, o[i]);
	}
	uint32_t nd = rl_graph_add_node(G, op, out, in, nin, o, nout);
	G->nodes[nd].opset = 27;
	return nd;
}

static void attr_i(uint32_t nd, const char *name, int64_t v)
{
	rl_node_add_attr(G, nd, name, RL_ATTR_INT)->i = v;
}

static void attr_s(uint32_t nd, const char *name, const char *s)
{
	struct rl_attr *a = rl_node_add_attr(G, nd, name, RL_ATTR_STRING);
	a->s = rl_arena_strdup(G, s);
	a->n = (int)strlen(s);
}

static void infer(void)
{
	enum rl_status st = rl_graph_infer(G);
	cr_assert_eq(st, RL_OK, "infer: %s", G->err);
}

static void out_is(uint32_t nd, int k, enum rl_dtype dt, struct rl_shape want)
{
	const struct rl_value *v = &G->values[G->nodes[nd].out[k]];
	char a[64], b[64];
	cr_assert(rl_shape_equal(&v->shape, &want), "output %d is %s, want %s", k,
	          rl_shape_str(&v->shape, a, sizeof(a)), rl_shape_str(&want, b, sizeof(b)));
	cr_assert_eq(v->dtype, dt);
}

static struct rl_counts count(uint32_t node)
{
	struct rl_counts c;
	cr_assert(rl_count_node(G, node, &c), "node %u not counted", node);
	return c;
}

#define EQ(got, want) cr_assert(fabs((double)(got) - (double)(want)) < 1e-9 * fmax(1, fabs((double)(want))), \
                                "%s = %.17g, want %.17g", #got, (double)(got), (double)(want))

Test(attn, gqa_3d_with_past_gives_present_and_qk_shapes)
{
	/* 9 q heads over 3 kv heads of 8; 4 queries, 6 new keys after 12 past */
	uint32_t q = input("q", RL_DT_FLOAT, shp(3, L(2), L(4), L(72)));
	uint32_t k = input("k", RL_DT_FLOAT, shp(3, L(2), L(6), L(24)));
	uint32_t v = input("v", RL_DT_FLOAT, shp(3, L(2), L(6), L(24)));
	uint32_t pk = input("pk", RL_DT_FLOAT, shp(4, L(2), L(3), L(12), L(8)));
	uint32_t pv = input("pv", RL_DT_FLOAT, shp(4, L(2), L(3), L(12), L(8)));
	uint32_t n = add(RL_OP_Attention, "y", 4, 6, q, k, v, RL_NONE, pk, pv);
	attr_i(n, "q_num_heads", 9);
	attr_i(n, "kv_num_heads", 3);
	infer();
	out_is(n, 0, RL_DT_FLOAT, shp(3, L(2), L(4), L(72)));
	out_is(n, 1, RL_DT_FLOAT, shp(4, L(2), L(3), L(18), L(8)));
	out_is(n, 2, RL_DT_FLOAT, shp(4, L(2), L(3), L(18), L(8)));
	out_is(n, 3, RL_DT_FLOAT, shp(4, L(2), L(9), L(4), L(18)));
	/* 2 * 9 * 4 * 18 = 1296 scores, each 8 + 8 MACs and a softmax term */
	struct rl_counts c = count(n);
	EQ(c.macs, 1296 * 16);
	EQ(c.flops, 2 * 1296 * 16 + 1296 * (4 + RL_FLOPS_TRANS));
}

Test(attn, causal_counts_only_keys_up_to_the_diagonal)
{
	/* 4 queries, 6 keys: rows see 1, 2, 3, 4 keys = 10 scores of 8 + 8 MACs */
	uint32_t q = input("q", RL_DT_FLOAT, shp(4, L(1), L(1), L(4), L(8)));
	uint32_t k = input("k", RL_DT_FLOAT, shp(4, L(1), L(1), L(6), L(8)));
	uint32_t v = input("v", RL_DT_FLOAT, shp(4, L(1), L(1), L(6), L(8)));
	uint32_t n = add(RL_OP_Attention, "y", 1, 3, q, k, v);
	attr_i(n, "is_causal", 1);
	infer();
	struct rl_counts c = count(n);
	EQ(c.macs, 10 * 16);
	EQ(c.flops, 2 * 10 * 16 + 10 * (4 + RL_FLOPS_TRANS));
}

Test(attn, diff_head_sizes_4d_take_v_head_size)
{
	uint32_t q = input("q", RL_DT_FLOAT16, shp(4, L(1), L(2), L(5), L(8)));
	uint32_t k = input("k", RL_DT_FLOAT16, shp(4, L(1), L(2), L(7), L(8)));
	uint32_t v = input("v", RL_DT_FLOAT16, shp(4, L(1), L(2), L(7), L(10)));
	uint32_t n = add(RL_OP_Attention, "y", 1, 3, q, k, v);
	infer();
	out_is(n, 0, RL_DT_FLOAT16, shp(4, L(1), L(2), L(5), L(10)));
}

Test(attn, heads_that_do_not_divide_are_an_error)
{
	uint32_t q = input("q", RL_DT_FLOAT, shp(4, L(1), L(4), L(5), L(8)));
	uint32_t k = input("k", RL_DT_FLOAT, shp(4, L(1), L(3), L(7), L(8)));
	uint32_t v = input("v", RL_DT_FLOAT, shp(4, L(1), L(3), L(7), L(8)));
	add(RL_OP_Attention, "y", 1, 3, q, k, v);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "multiple"), "%s", G->err);
}

Test(attn, linear_attention_state_and_counts)
{
	/* 8 q heads over 4 kv heads, d_k = d_v = 8, 3 steps of batch 2 */
	uint32_t q = input("q", RL_DT_FLOAT, shp(3, L(2), L(3), L(64)));
	uint32_t k = input("k", RL_DT_FLOAT, shp(3, L(2), L(3), L(32)));
	uint32_t v = input("v", RL_DT_FLOAT, shp(3, L(2), L(3), L(32)));
	uint32_t n = add(RL_OP_LinearAttention, "y", 2, 3, q, k, v);
	attr_i(n, "q_num_heads", 8);
	attr_i(n, "kv_num_heads", 4);
	attr_s(n, "update_rule", "linear");
	infer();
	out_is(n, 0, RL_DT_FLOAT, shp(3, L(2), L(3), L(64)));
	out_is(n, 1, RL_DT_FLOAT, shp(4, L(2), L(4), L(8), L(8)));
	/* 6 steps x 64 state entries x (2 * 4 kv heads + 8 q heads) MACs */
	struct rl_counts c = count(n);
	EQ(c.macs, 6 * 64 * 16);
	EQ(c.flops, 2 * 6 * 64 * 16 + 6 * 4 * 8 * (8 + RL_FLOPS_TRANS));
}

Test(attn, causal_conv_state_keeps_k_minus_one_steps)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(2), L(4), L(9)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(3, L(4), L(1), L(3)));
	uint32_t n = add(RL_OP_CausalConvWithState, "y", 2, 2, x, w);
	attr_s(n, "activation", "silu");
	infer();
	out_is(n, 0, RL_DT_FLOAT, shp(3, L(2), L(4), L(9)));
	out_is(n, 1, RL_DT_FLOAT, shp(3, L(2), L(4), L(2)));
	struct rl_counts c = count(n);
	EQ(c.macs, 72 * 3);
	EQ(c.flops, 2 * 72 * 3 + 72 * (3 + RL_FLOPS_TRANS));
}

Test(attn, causal_conv_rejects_unknown_activation)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(2), L(4), L(9)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(3, L(4), L(1), L(3)));
	uint32_t n = add(RL_OP_CausalConvWithState, "y", 1, 2, x, w);
	attr_s(n, "activation", "gelu");
	cr_assert_eq(rl_graph_infer(G), RL_ERR_UNSUPPORTED);
}

Test(attn, affine_grid_takes_constant_size)
{
	uint32_t th = input("theta", RL_DT_FLOAT, shp(3, L(2), L(3), L(4)));
	struct rl_shape s5 = shp(1, L(5));
	uint32_t sz = rl_graph_add_value(G, "size", RL_DT_INT64, &s5);
	int64_t *p = rl_graph_own(G, 5 * sizeof(int64_t));
	const int64_t dims[5] = {2, 1, 4, 5, 6};
	memcpy(p, dims, sizeof(dims));
	rl_value_set_data(G, sz, p, sizeof(dims));
	uint32_t n = add(RL_OP_AffineGrid, "grid", 1, 2, th, sz);
	infer();
	out_is(n, 0, RL_DT_FLOAT, shp(5, L(2), L(4), L(5), L(6), L(3)));
	/* 720 output elements, each theta's row against (x, y, z, 1): 3
	 * multiply-adds */
	EQ(count(n).flops, 720 * 6);
}

Test(attn, flexattention_lives_in_the_preview_domain)
{
	cr_assert_str_eq(rl_op_domain(RL_OP_FlexAttention), "ai.onnx.preview");
	cr_assert(rl_op_in_domain(RL_OP_FlexAttention, "ai.onnx.preview"));
	cr_assert(!rl_op_in_domain(RL_OP_FlexAttention, ""));
	cr_assert(rl_op_in_domain(RL_OP_Attention, "ai.onnx"));
	cr_assert(rl_op_in_domain(RL_OP_Attention, ""));
	cr_assert(!rl_op_in_domain(RL_OP_Attention, "ai.onnx.preview"));
	cr_assert(!rl_op_in_domain(RL_OP_COUNT_, ""));
}
