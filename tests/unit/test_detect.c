/*
 * test_detect.c - shape inference, data-dependent extents and FLOP/byte
 * counts of the detection family (ir/fam_detect.c).
 *
 * The node tests run these operators end to end; what they do not reach is
 * checked here: the upper bounds of data-dependent outputs (and that a
 * declared dim on such an axis does not conflict with the bound), the error
 * for a node that reads such an output, shapes from constant size inputs,
 * and the cost formulas. Expected numbers are worked out by hand from
 * fam_detect.c's cost comment.
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
	G = tu_graph_new(22, NULL);
}

static void teardown(void)
{
	rl_graph_free(G);
	G = NULL;
}

TestSuite(detect, .init = setup, .fini = teardown);

static void infer(void)
{
	cr_assert_eq(rl_graph_toposort(G), RL_OK, "%s", G->err);
	tu_infer(G);
}

static void expect_shape(const struct rl_value *v, int rank, const int64_t *d)
{
	cr_assert_eq(v->shape.rank, rank, "'%s' has rank %d, want %d", v->name, v->shape.rank, rank);
	for (int i = 0; i < rank; i++)
		cr_assert_eq(v->shape.d[i].v, d[i], "'%s' dim %d is %lld, want %lld", v->name, i,
		             (long long)v->shape.d[i].v, (long long)d[i]);
}

Test(detect, nms_bound_follows_a_constant_max_output)
{
	/* 1 batch, 2 classes, 5 boxes, at most 2 per class: at most 4 rows */
	uint32_t b = tu_input(G, "boxes", RL_DT_FLOAT, TU_SHAPE(3, 1, 5, 4));
	uint32_t s = tu_input(G, "scores", RL_DT_FLOAT, TU_SHAPE(3, 1, 2, 5));
	int64_t two = 2;
	uint32_t n = tu_add(G, RL_OP_NonMaxSuppression, "sel", 1, 3, b, s, tu_ints(G, "max", 1, &two));
	infer();
	expect_shape(tu_out(G, n, 0), 2, (int64_t[]){4, 3});
	cr_assert_eq(tu_out(G, n, 0)->dtype, RL_DT_INT64);
	cr_assert_eq(tu_out(G, n, 0)->extent_axis, 1); /* axis 0 is data-dependent */
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 2 * (5 * log2(5.0) + 25.0 / 2 * 20)); /* per class: sort + pairwise IoU */
	TU_EQ(c.bytes_read, 20 * 4 + 10 * 4 + 8);
	TU_EQ(c.bytes_write, 4 * 3 * 8);
}

Test(detect, nms_without_max_output_selects_nothing)
{
	uint32_t b = tu_input(G, "boxes", RL_DT_FLOAT, TU_SHAPE(3, 2, 6, 4));
	uint32_t s = tu_input(G, "scores", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 6));
	uint32_t n = tu_add(G, RL_OP_NonMaxSuppression, "sel", 1, 2, b, s);
	infer();
	expect_shape(tu_out(G, n, 0), 2, (int64_t[]){0, 3});
}

Test(detect, declared_dim_on_a_data_dependent_axis_gives_way_to_the_bound)
{
	/* the model declares the output of one run, (2, 2); the buffer needs (3, 2) */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 3, 2));
	uint32_t c = tu_input(G, "cond", RL_DT_BOOL, TU_SHAPE(1, 3));
	uint32_t n = tu_add(G, RL_OP_Compress, "y", 1, 2, x, c);
	tu_attr_i(G, n, "axis", 0);
	struct rl_shape dec = TU_SHAPE(2, 2, 2);
	G->values[G->nodes[n].out[0]].shape = dec;
	G->values[G->nodes[n].out[0]].dtype = RL_DT_FLOAT;
	infer();
	expect_shape(tu_out(G, n, 0), 2, (int64_t[]){3, 2});
	cr_assert_eq(tu_out(G, n, 0)->extent_axis, 1);
}

Test(detect, compress_without_axis_and_shorter_condition)
{
	uint32_t x = tu_input(G, "x", RL_DT_INT32, TU_SHAPE(2, 3, 2));
	uint32_t c = tu_input(G, "cond", RL_DT_BOOL, TU_SHAPE(1, 5));
	uint32_t n = tu_add(G, RL_OP_Compress, "y", 1, 2, x, c);
	infer();
	expect_shape(tu_out(G, n, 0), 1, (int64_t[]){5}); /* at most the condition's length */
	cr_assert_eq(tu_out(G, n, 0)->extent_axis, 1);
}

Test(detect, compress_condition_longer_than_the_axis_is_an_error)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 3, 2));
	uint32_t c = tu_input(G, "cond", RL_DT_BOOL, TU_SHAPE(1, 3));
	uint32_t n = tu_add(G, RL_OP_Compress, "y", 1, 2, x, c);
	tu_attr_i(G, n, "axis", 1);
	cr_assert_eq(rl_graph_toposort(G), RL_OK);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "condition has 3 entries"), "%s", G->err);
}

Test(detect, a_reader_of_a_data_dependent_extent_is_named)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 2, 3));
	uint32_t nz = tu_node(G, RL_OP_NonZero, "nz", 1, 1, x);
	uint32_t nzo = G->nodes[nz].out[0];
	uint32_t r = tu_add(G, RL_OP_Neg, "reader", 1, 1, nzo);
	(void)r;
	cr_assert_eq(rl_graph_toposort(G), RL_OK);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_UNSUPPORTED);
	cr_assert(strstr(G->err, "reader"), "%s", G->err);
	cr_assert(strstr(G->err, "data-dependent extent along axis 1"), "%s", G->err);
	cr_assert(strstr(G->err, "NonZero 'nz'"), "%s", G->err);
}

Test(detect, nonzero_and_unique_bounds)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 4, 2));
	uint32_t nz = tu_add(G, RL_OP_NonZero, "nz", 1, 1, x);
	uint32_t u = tu_add(G, RL_OP_Unique, "u", 4, 1, x);
	tu_attr_i(G, u, "axis", -2);
	infer();
	expect_shape(tu_out(G, nz, 0), 2, (int64_t[]){3, 16});
	cr_assert_eq(tu_out(G, nz, 0)->extent_axis, 2);
	expect_shape(tu_out(G, u, 0), 3, (int64_t[]){2, 4, 2});
	cr_assert_eq(tu_out(G, u, 0)->extent_axis, 2); /* the axis: 4 slices at most */
	expect_shape(tu_out(G, u, 1), 1, (int64_t[]){4});
	cr_assert_eq(tu_out(G, u, 1)->extent_axis, 1);
	expect_shape(tu_out(G, u, 2), 1, (int64_t[]){4});
	cr_assert_eq(tu_out(G, u, 2)->extent_axis, 0); /* one per input slice: exact */
	cr_assert_eq(tu_out(G, u, 3)->extent_axis, 1);
	TU_EQ(tu_count(G, nz).flops, 16);
	TU_EQ(tu_count(G, u).flops, 16 * 2); /* 16 elements, log2(4) comparisons each */
}

Test(detect, col2im_shape_from_constant_sizes_and_cost)
{
	/* 2 channels of 2x2 blocks, 9 block positions, into 4x4 images */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 1, 8, 9));
	uint32_t n = tu_add(G, RL_OP_Col2Im, "y", 1, 3, x, tu_ints(G, "img", 2, (int64_t[]){4, 4}),
	                  tu_ints(G, "blk", 2, (int64_t[]){2, 2}));
	infer();
	expect_shape(tu_out(G, n, 0), 4, (int64_t[]){1, 2, 4, 4});
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 72); /* one add per input element */
	TU_EQ(c.bytes_write, 32 * 4);
}

Test(detect, maxunpool_shape_from_the_window)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 3, 2, 3));
	uint32_t i = tu_input(G, "i", RL_DT_INT64, TU_SHAPE(4, 1, 3, 2, 3));
	uint32_t n = tu_add(G, RL_OP_MaxUnpool, "y", 1, 2, x, i);
	tu_attr_ints(G, n, "kernel_shape", 2, (int64_t[]){2, 3});
	tu_attr_ints(G, n, "strides", 2, (int64_t[]){2, 2});
	tu_attr_ints(G, n, "pads", 4, (int64_t[]){0, 1, 0, 0});
	infer();
	/* (in - 1) * s - pads + k: 1*2 - 0 + 2 = 4, 2*2 - 1 + 3 = 6 */
	expect_shape(tu_out(G, n, 0), 4, (int64_t[]){1, 3, 4, 6});
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 0);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(detect, deform_conv_and_roi_align_counts)
{
	/* DeformConv: X (1,4,5,5), W (6,2,3,3), group 2, offset_group 2, 3x3 out */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 4, 5, 5));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(4, 6, 2, 3, 3));
	uint32_t of = tu_input(G, "off", RL_DT_FLOAT, TU_SHAPE(4, 1, 36, 3, 3));
	uint32_t d = tu_add(G, RL_OP_DeformConv, "y", 1, 3, x, w, of);
	tu_attr_i(G, d, "group", 2);
	tu_attr_i(G, d, "offset_group", 2);
	/* RoiAlign: X (1,3,8,8), 2 rois, 2x2 bins of 2x2 samples */
	uint32_t fx = tu_input(G, "fx", RL_DT_FLOAT, TU_SHAPE(4, 1, 3, 8, 8));
	uint32_t rois = tu_input(G, "rois", RL_DT_FLOAT, TU_SHAPE(2, 2, 4));
	uint32_t bi = tu_input(G, "bi", RL_DT_INT64, TU_SHAPE(1, 2));
	uint32_t ra = tu_add(G, RL_OP_RoiAlign, "r", 1, 3, fx, rois, bi);
	tu_attr_i(G, ra, "output_height", 2);
	tu_attr_i(G, ra, "output_width", 2);
	tu_attr_i(G, ra, "sampling_ratio", 2);
	infer();
	expect_shape(tu_out(G, d, 0), 4, (int64_t[]){1, 6, 3, 3});
	struct rl_counts c = tu_count(G, d);
	TU_EQ(c.macs, 54 * 18);                      /* numel(Y) * C/group * 3 * 3 */
	TU_EQ(c.flops, 2 * 54 * 18 + 12 * 4 * 9 * 9); /* + one sample per channel, tap, position */
	expect_shape(tu_out(G, ra, 0), 4, (int64_t[]){2, 3, 2, 2});
	c = tu_count(G, ra);
	TU_EQ(c.flops, 24 * 4 * 16);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(detect, nonzero_and_compress_of_constants_fold_to_exact_values)
{
	/* NonZero([[1, 0], [0, 3]]) = [[0, 1], [0, 1]]; a reader is fine then */
	struct rl_shape s = TU_SHAPE(2, 2, 2);
	uint32_t x = rl_graph_add_value(G, "x", RL_DT_FLOAT, &s);
	float *xp = rl_graph_own(G, 16);
	memcpy(xp, (float[]){1, 0, 0, 3}, 16);
	rl_value_set_data(G, x, xp, 16);
	uint32_t nz = tu_node(G, RL_OP_NonZero, "nz", 1, 1, x);
	uint32_t r = tu_add(G, RL_OP_Neg, "reader", 1, 1, G->nodes[nz].out[0]);
	/* Compress(x, [0, 1], axis 1) = [[0], [3]] */
	struct rl_shape cs = TU_SHAPE(1, 2);
	uint32_t c = rl_graph_add_value(G, "c", RL_DT_BOOL, &cs);
	uint8_t *cp = rl_graph_own(G, 2);
	cp[0] = 0;
	cp[1] = 1;
	rl_value_set_data(G, c, cp, 2);
	uint32_t cm = tu_add(G, RL_OP_Compress, "cm", 1, 2, x, c);
	tu_attr_i(G, cm, "axis", 1);
	infer();
	const struct rl_value *v = tu_out(G, nz, 0);
	expect_shape(v, 2, (int64_t[]){2, 2});
	cr_assert_eq(v->extent_axis, 0);
	cr_assert(v->flags & RL_VAL_CONST);
	const int64_t *d = v->data;
	cr_assert(d[0] == 0 && d[1] == 1 && d[2] == 0 && d[3] == 1);
	expect_shape(tu_out(G, r, 0), 2, (int64_t[]){2, 2});
	v = tu_out(G, cm, 0);
	expect_shape(v, 2, (int64_t[]){2, 1});
	cr_assert_eq(v->extent_axis, 0);
	const float *f = v->data;
	cr_assert(f[0] == 0 && f[1] == 3);
	/* inference again (as after a pass): same values, no error */
	infer();
	cr_assert_eq(tu_out(G, cm, 0)->shape.d[0].v, 2);
}
