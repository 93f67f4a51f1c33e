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
#include "testutil.h"

static struct rl_graph *G;

static void setup(void)
{
	G = tu_graph_new(27, NULL);
}

static void teardown(void)
{
	rl_graph_free(G);
	G = NULL;
}

TestSuite(attn, .init = setup, .fini = teardown);

static void out_is(uint32_t nd, int k, enum rl_dtype dt, struct rl_shape want)
{
	const struct rl_value *v = &G->values[G->nodes[nd].out[k]];
	char a[64], b[64];
	cr_assert(rl_shape_equal(&v->shape, &want), "output %d is %s, want %s", k,
	          rl_shape_str(&v->shape, a, sizeof(a)), rl_shape_str(&want, b, sizeof(b)));
	cr_assert_eq(v->dtype, dt);
}

Test(attn, gqa_3d_with_past_gives_present_and_qk_shapes)
{
	/* 9 q heads over 3 kv heads of 8; 4 queries, 6 new keys after 12 past */
	uint32_t q = tu_input(G, "q", RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 72));
	uint32_t k = tu_input(G, "k", RL_DT_FLOAT, TU_SHAPE(3, 2, 6, 24));
	uint32_t v = tu_input(G, "v", RL_DT_FLOAT, TU_SHAPE(3, 2, 6, 24));
	uint32_t pk = tu_input(G, "pk", RL_DT_FLOAT, TU_SHAPE(4, 2, 3, 12, 8));
	uint32_t pv = tu_input(G, "pv", RL_DT_FLOAT, TU_SHAPE(4, 2, 3, 12, 8));
	uint32_t n = tu_add(G, RL_OP_Attention, "y", 4, 6, q, k, v, RL_NONE, pk, pv);
	tu_attr_i(G, n, "q_num_heads", 9);
	tu_attr_i(G, n, "kv_num_heads", 3);
	tu_infer(G);
	out_is(n, 0, RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 72));
	out_is(n, 1, RL_DT_FLOAT, TU_SHAPE(4, 2, 3, 18, 8));
	out_is(n, 2, RL_DT_FLOAT, TU_SHAPE(4, 2, 3, 18, 8));
	out_is(n, 3, RL_DT_FLOAT, TU_SHAPE(4, 2, 9, 4, 18));
	/* 2 * 9 * 4 * 18 = 1296 scores, each 8 + 8 MACs and a softmax term */
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 1296 * 16);
	TU_EQ(c.flops, 2 * 1296 * 16 + 1296 * (4 + RL_FLOPS_TRANS));
}

Test(attn, causal_counts_only_keys_up_to_the_diagonal)
{
	/* 4 queries, 6 keys: rows see 1, 2, 3, 4 keys = 10 scores of 8 + 8 MACs */
	uint32_t q = tu_input(G, "q", RL_DT_FLOAT, TU_SHAPE(4, 1, 1, 4, 8));
	uint32_t k = tu_input(G, "k", RL_DT_FLOAT, TU_SHAPE(4, 1, 1, 6, 8));
	uint32_t v = tu_input(G, "v", RL_DT_FLOAT, TU_SHAPE(4, 1, 1, 6, 8));
	uint32_t n = tu_add(G, RL_OP_Attention, "y", 1, 3, q, k, v);
	tu_attr_i(G, n, "is_causal", 1);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 10 * 16);
	TU_EQ(c.flops, 2 * 10 * 16 + 10 * (4 + RL_FLOPS_TRANS));
}

Test(attn, diff_head_sizes_4d_take_v_head_size)
{
	uint32_t q = tu_input(G, "q", RL_DT_FLOAT16, TU_SHAPE(4, 1, 2, 5, 8));
	uint32_t k = tu_input(G, "k", RL_DT_FLOAT16, TU_SHAPE(4, 1, 2, 7, 8));
	uint32_t v = tu_input(G, "v", RL_DT_FLOAT16, TU_SHAPE(4, 1, 2, 7, 10));
	uint32_t n = tu_add(G, RL_OP_Attention, "y", 1, 3, q, k, v);
	tu_infer(G);
	out_is(n, 0, RL_DT_FLOAT16, TU_SHAPE(4, 1, 2, 5, 10));
}

Test(attn, heads_that_do_not_divide_are_an_error)
{
	uint32_t q = tu_input(G, "q", RL_DT_FLOAT, TU_SHAPE(4, 1, 4, 5, 8));
	uint32_t k = tu_input(G, "k", RL_DT_FLOAT, TU_SHAPE(4, 1, 3, 7, 8));
	uint32_t v = tu_input(G, "v", RL_DT_FLOAT, TU_SHAPE(4, 1, 3, 7, 8));
	tu_add(G, RL_OP_Attention, "y", 1, 3, q, k, v);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "multiple"), "%s", G->err);
}

Test(attn, linear_attention_state_and_counts)
{
	/* 8 q heads over 4 kv heads, d_k = d_v = 8, 3 steps of batch 2 */
	uint32_t q = tu_input(G, "q", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 64));
	uint32_t k = tu_input(G, "k", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 32));
	uint32_t v = tu_input(G, "v", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 32));
	uint32_t n = tu_add(G, RL_OP_LinearAttention, "y", 2, 3, q, k, v);
	tu_attr_i(G, n, "q_num_heads", 8);
	tu_attr_i(G, n, "kv_num_heads", 4);
	tu_attr_s(G, n, "update_rule", "linear");
	tu_infer(G);
	out_is(n, 0, RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 64));
	out_is(n, 1, RL_DT_FLOAT, TU_SHAPE(4, 2, 4, 8, 8));
	/* 6 steps x 64 state entries x (2 * 4 kv heads + 8 q heads) MACs */
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 6 * 64 * 16);
	TU_EQ(c.flops, 2 * 6 * 64 * 16 + 6 * 4 * 8 * (8 + RL_FLOPS_TRANS));
}

Test(attn, causal_conv_state_keeps_k_minus_one_steps)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 9));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(3, 4, 1, 3));
	uint32_t n = tu_add(G, RL_OP_CausalConvWithState, "y", 2, 2, x, w);
	tu_attr_s(G, n, "activation", "silu");
	tu_infer(G);
	out_is(n, 0, RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 9));
	out_is(n, 1, RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 2));
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 72 * 3);
	TU_EQ(c.flops, 2 * 72 * 3 + 72 * (3 + RL_FLOPS_TRANS));
}

Test(attn, causal_conv_rejects_unknown_activation)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 9));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(3, 4, 1, 3));
	uint32_t n = tu_add(G, RL_OP_CausalConvWithState, "y", 1, 2, x, w);
	tu_attr_s(G, n, "activation", "gelu");
	cr_assert_eq(rl_graph_infer(G), RL_ERR_UNSUPPORTED);
}

Test(attn, affine_grid_takes_constant_size)
{
	uint32_t th = tu_input(G, "theta", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 4));
	struct rl_shape s5 = TU_SHAPE(1, 5);
	uint32_t sz = rl_graph_add_value(G, "size", RL_DT_INT64, &s5);
	int64_t *p = rl_graph_own(G, 5 * sizeof(int64_t));
	const int64_t dims[5] = {2, 1, 4, 5, 6};
	memcpy(p, dims, sizeof(dims));
	rl_value_set_data(G, sz, p, sizeof(dims));
	uint32_t n = tu_add(G, RL_OP_AffineGrid, "grid", 1, 2, th, sz);
	tu_infer(G);
	out_is(n, 0, RL_DT_FLOAT, TU_SHAPE(5, 2, 4, 5, 6, 3));
	/* 720 output elements, each theta's row against (x, y, z, 1): 3
	 * multiply-adds */
	TU_EQ(tu_count(G, n).flops, 720 * 6);
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
