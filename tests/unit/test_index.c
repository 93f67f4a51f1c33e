/*
 * test_index.c - golden tests of shape inference and FLOP/byte counts for
 * the scans, scatters and losses (ir/fam_index.c).
 *
 * Every expected number is worked out by hand here from the formulas in
 * fam_index.c's cost comment (a transcendental is RL_FLOPS_TRANS, data
 * movement 0, each input read and each output written once unless the
 * formula says otherwise); nothing is taken from the code under test.
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
	G = tu_graph_new(17, NULL);
}

static void teardown(void)
{
	rl_graph_free(G);
	G = NULL;
}

TestSuite(index, .init = setup, .fini = teardown);

Test(index, cumsum_counts_one_add_per_element)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 6));
	uint32_t n = tu_add(G, RL_OP_CumSum, "y", 1, 2, x, tu_scalar_i64(G, "axis", 1));
	tu_infer(G);
	cr_assert(rl_shape_equal(&G->values[G->nodes[n].out[0]].shape, &G->values[x].shape));
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 24);
	TU_EQ(c.bytes_read, 24 * 4);  /* the axis scalar is not charged */
	TU_EQ(c.bytes_write, 24 * 4);
}

Test(index, nll_gathers_one_element_per_term)
{
	/* input (3, 5, 2), target (3, 2): m = 6 terms, mean reduction */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 3, 5, 2));
	uint32_t t = tu_input(G, "t", RL_DT_INT64, TU_SHAPE(2, 3, 2));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(1, 5));
	uint32_t n = tu_add(G, RL_OP_NegativeLogLikelihoodLoss, "loss", 1, 3, x, t, w);
	tu_infer(G);
	cr_assert_eq(G->values[G->nodes[n].out[0]].shape.rank, 0);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 6 * 3 + 6);
	TU_EQ(c.bytes_read, 6 * 8 + 5 * 4 + 6 * 4); /* target, weight, 6 gathered */
	TU_EQ(c.bytes_write, 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(index, sce_none_with_log_prob)
{
	/* scores (2, 4), labels (2), reduction none: loss (2), log_prob (2, 4) */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 2, 4));
	uint32_t t = tu_input(G, "t", RL_DT_INT64, TU_SHAPE(1, 2));
	uint32_t n = tu_add(G, RL_OP_SoftmaxCrossEntropyLoss, "loss", 2, 2, x, t);
	tu_attr_s(G, n, "reduction", "none");
	tu_infer(G);
	const struct rl_shape *s0 = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(s0->rank == 1 && s0->d[0].v == 2);
	cr_assert(rl_shape_equal(&G->values[G->nodes[n].out[1]].shape, &G->values[x].shape));
	struct rl_counts c = tu_count(G, n);
	double T = RL_FLOPS_TRANS;
	TU_EQ(c.flops, 2 * 3 + 8 * (4 + T) + 2 * T);
	TU_EQ(c.bytes_read, 8 * 4 + 2 * 8);
	TU_EQ(c.bytes_write, 2 * 4 + 8 * 4);
}

Test(index, scatter_nd_add_and_topk)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 4, 4, 4));
	uint32_t i = tu_input(G, "i", RL_DT_INT64, TU_SHAPE(2, 2, 1));
	uint32_t u = tu_input(G, "u", RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 4));
	uint32_t n = tu_add(G, RL_OP_ScatterND, "y", 1, 3, x, i, u);
	tu_attr_s(G, n, "reduction", "add");
	/* TopK of (3, 10) along the last axis, K = 4 (a constant) */
	uint32_t v = tu_input(G, "v", RL_DT_FLOAT, TU_SHAPE(2, 3, 10));
	struct rl_shape ks = TU_SHAPE(1, 1);
	uint32_t k = rl_graph_add_value(G, "k", RL_DT_INT64, &ks);
	int64_t *kp = rl_graph_own(G, 8);
	*kp = 4;
	rl_value_set_data(G, k, kp, 8);
	uint32_t tk = tu_add(G, RL_OP_TopK, "top", 2, 2, v, k);
	tu_attr_i(G, tk, "axis", -1);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 32);                              /* one add per update */
	TU_EQ(c.bytes_read, 64 * 4 + 2 * 8 + 32 * 4);
	TU_EQ(c.bytes_write, 64 * 4 + 32 * 4);           /* Y, then the updated places */
	const struct rl_shape *ts = &G->values[G->nodes[tk].out[1]].shape;
	cr_assert(ts->rank == 2 && ts->d[0].v == 3 && ts->d[1].v == 4);
	cr_assert_eq(G->values[G->nodes[tk].out[1]].dtype, RL_DT_INT64);
	c = tu_count(G, tk);
	TU_EQ(c.flops, 30 + 12 * 4);
	TU_EQ(c.bytes_read, 30 * 4);
	TU_EQ(c.bytes_write, 12 * 4 + 12 * 8);
}

Test(index, rms_normalization_rows)
{
	/* X (2, 3, 5), axis 1: rows of 15, 2 rows */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 5));
	uint32_t s = tu_input(G, "s", RL_DT_FLOAT, TU_SHAPE(2, 3, 5));
	uint32_t n = tu_add(G, RL_OP_RMSNormalization, "y", 1, 2, x, s);
	tu_attr_i(G, n, "axis", 1);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 30 * 4 + 2 * (2 + RL_FLOPS_TRANS));
	TU_EQ(c.bytes_read, 30 * 4 + 15 * 4);
	TU_EQ(c.bytes_write, 30 * 4);
}

Test(index, loss_target_mismatch_is_an_error)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 3, 5));
	uint32_t t = tu_input(G, "t", RL_DT_INT64, TU_SHAPE(1, 4));
	tu_add(G, RL_OP_NegativeLogLikelihoodLoss, "loss", 1, 2, x, t);
	cr_assert_neq(rl_graph_infer(G), RL_OK);
	cr_assert(strstr(G->err, "target"), "%s", G->err);
}

Test(index, resize_linear_counts_taps_of_resized_axes)
{
	/* X (1, 1, 4, 4), constant scales (1, 1, 2, 2), linear: Y (1, 1, 8, 8);
	 * 2 taps on each of the 2 resized axes, a multiply-add per tap */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 1, 4, 4));
	struct rl_shape ss = TU_SHAPE(1, 4);
	uint32_t sc = rl_graph_add_value(G, "scales", RL_DT_FLOAT, &ss);
	float *p = rl_graph_own(G, 16);
	p[0] = p[1] = 1;
	p[2] = p[3] = 2;
	rl_value_set_data(G, sc, p, 16);
	uint32_t n = tu_add(G, RL_OP_Resize, "y", 1, 3, x, RL_NONE, sc);
	tu_attr_s(G, n, "mode", "linear");
	tu_infer(G);
	const struct rl_shape *sy = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(sy->rank == 4 && sy->d[2].v == 8 && sy->d[3].v == 8);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 2 * 64 * 4);
	TU_EQ(c.bytes_read, 16 * 4);  /* the scales are not charged */
	TU_EQ(c.bytes_write, 64 * 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(index, einsum_and_window_counts)
{
	/* bij,bjk->bik with b=5, i=2, j=3, k=4: 120 iterations of 2 operands */
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(3, 5, 2, 3));
	uint32_t b = tu_input(G, "b", RL_DT_FLOAT, TU_SHAPE(3, 5, 3, 4));
	uint32_t n = tu_add(G, RL_OP_Einsum, "y", 1, 2, a, b);
	tu_attr_s(G, n, "equation", "bij, bjk -> bik");
	/* a Hann window of a constant size 10 */
	uint32_t w = tu_add(G, RL_OP_HannWindow, "w", 1, 1, tu_scalar_i64(G, "size", 10));
	tu_infer(G);
	const struct rl_shape *sy = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(sy->rank == 3 && sy->d[0].v == 5 && sy->d[1].v == 2 && sy->d[2].v == 4);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 2 * 2 * 120);
	TU_EQ(c.bytes_read, (30 + 60) * 4);
	TU_EQ(c.bytes_write, 40 * 4);
	const struct rl_shape *sw = &G->values[G->nodes[w].out[0]].shape;
	cr_assert(sw->rank == 1 && sw->d[0].v == 10);
	c = tu_count(G, w);
	TU_EQ(c.flops, 10 * (2 + RL_FLOPS_TRANS));
	TU_EQ(c.bytes_read, 0);
	TU_EQ(c.bytes_write, 10 * 4);
}

Test(index, grid_sample_linear_counts)
{
	/* X (1, 2, 3, 2), grid (1, 2, 4, 2): Y (1, 2, 2, 4); 2x2 taps each */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 2, 3, 2));
	uint32_t gr = tu_input(G, "grid", RL_DT_FLOAT, TU_SHAPE(4, 1, 2, 4, 2));
	uint32_t n = tu_add(G, RL_OP_GridSample, "y", 1, 2, x, gr);
	tu_attr_s(G, n, "mode", "linear");
	tu_infer(G);
	const struct rl_shape *sy = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(sy->rank == 4 && sy->d[1].v == 2 && sy->d[2].v == 2 && sy->d[3].v == 4);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 2 * 16 * 4);
	TU_EQ(c.bytes_read, (12 + 16) * 4);
	TU_EQ(c.bytes_write, 16 * 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}
