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

TestSuite(detect, .init = setup, .fini = teardown);

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

/* A constant 1-D int64 tensor. */
static uint32_t ints(const char *name, int n, const int64_t *x)
{
	struct rl_shape s = shp(1, L(n));
	uint32_t v = rl_graph_add_value(G, name, RL_DT_INT64, &s);
	int64_t *p = rl_graph_own(G, (size_t)n * 8);
	memcpy(p, x, (size_t)n * 8);
	rl_value_set_data(G, v, p, (size_t)n * 8);
	return v;
}

/* Node op(in...) with `nout` outputs named out, out1, ...; graph outputs
 * when `graph_out`. */
static uint32_t addn(enum rl_op op, const char *out, bool graph_out, int nout, int nin, ...)
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
		if (graph_out) {
			G->values[o[i]].flags |= RL_VAL_OUTPUT;
			push(&G->outputs, &G->noutputs, o[i]);
		}
	}
	uint32_t nd = rl_graph_add_node(G, op, out, in, nin, o, nout);
	G->nodes[nd].opset = 22;
	return nd;
}

static void attr_i(uint32_t nd, const char *name, int64_t v)
{
	rl_node_add_attr(G, nd, name, RL_ATTR_INT)->i = v;
}

static void attr_ints(uint32_t nd, const char *name, int n, const int64_t *v)
{
	struct rl_attr *a = rl_node_add_attr(G, nd, name, RL_ATTR_INTS);
	a->ints = rl_arena_alloc(G, (size_t)n * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
	a->n = n;
}

static void infer(void)
{
	cr_assert_eq(rl_graph_toposort(G), RL_OK, "%s", G->err);
	enum rl_status st = rl_graph_infer(G);
	cr_assert_eq(st, RL_OK, "infer: %s", G->err);
}

static const struct rl_value *out(uint32_t nd, int k)
{
	return &G->values[G->nodes[nd].out[k]];
}

static void expect_shape(const struct rl_value *v, int rank, const int64_t *d)
{
	cr_assert_eq(v->shape.rank, rank, "'%s' has rank %d, want %d", v->name, v->shape.rank, rank);
	for (int i = 0; i < rank; i++)
		cr_assert_eq(v->shape.d[i].v, d[i], "'%s' dim %d is %lld, want %lld", v->name, i,
		             (long long)v->shape.d[i].v, (long long)d[i]);
}

static struct rl_counts count(uint32_t node)
{
	struct rl_counts c;
	cr_assert(rl_count_node(G, node, &c), "node %u not counted", node);
	return c;
}

#define EQ(got, want) cr_assert(fabs((double)(got) - (double)(want)) < 1e-9 * fmax(1, fabs((double)(want))), \
                                "%s = %.17g, want %.17g", #got, (double)(got), (double)(want))

Test(detect, nms_bound_follows_a_constant_max_output)
{
	/* 1 batch, 2 classes, 5 boxes, at most 2 per class: at most 4 rows */
	uint32_t b = input("boxes", RL_DT_FLOAT, shp(3, L(1), L(5), L(4)));
	uint32_t s = input("scores", RL_DT_FLOAT, shp(3, L(1), L(2), L(5)));
	int64_t two = 2;
	uint32_t n = addn(RL_OP_NonMaxSuppression, "sel", true, 1, 3, b, s, ints("max", 1, &two));
	infer();
	expect_shape(out(n, 0), 2, (int64_t[]){4, 3});
	cr_assert_eq(out(n, 0)->dtype, RL_DT_INT64);
	cr_assert_eq(out(n, 0)->extent_axis, 1); /* axis 0 is data-dependent */
	struct rl_counts c = count(n);
	EQ(c.flops, 2 * (5 * log2(5.0) + 25.0 / 2 * 20)); /* per class: sort + pairwise IoU */
	EQ(c.bytes_read, 20 * 4 + 10 * 4 + 8);
	EQ(c.bytes_write, 4 * 3 * 8);
}

Test(detect, nms_without_max_output_selects_nothing)
{
	uint32_t b = input("boxes", RL_DT_FLOAT, shp(3, L(2), L(6), L(4)));
	uint32_t s = input("scores", RL_DT_FLOAT, shp(3, L(2), L(3), L(6)));
	uint32_t n = addn(RL_OP_NonMaxSuppression, "sel", true, 1, 2, b, s);
	infer();
	expect_shape(out(n, 0), 2, (int64_t[]){0, 3});
}

Test(detect, declared_dim_on_a_data_dependent_axis_gives_way_to_the_bound)
{
	/* the model declares the output of one run, (2, 2); the buffer needs (3, 2) */
	uint32_t x = input("x", RL_DT_FLOAT, shp(2, L(3), L(2)));
	uint32_t c = input("cond", RL_DT_BOOL, shp(1, L(3)));
	uint32_t n = addn(RL_OP_Compress, "y", true, 1, 2, x, c);
	attr_i(n, "axis", 0);
	struct rl_shape dec = shp(2, L(2), L(2));
	G->values[G->nodes[n].out[0]].shape = dec;
	G->values[G->nodes[n].out[0]].dtype = RL_DT_FLOAT;
	infer();
	expect_shape(out(n, 0), 2, (int64_t[]){3, 2});
	cr_assert_eq(out(n, 0)->extent_axis, 1);
}

Test(detect, compress_without_axis_and_shorter_condition)
{
	uint32_t x = input("x", RL_DT_INT32, shp(2, L(3), L(2)));
	uint32_t c = input("cond", RL_DT_BOOL, shp(1, L(5)));
	uint32_t n = addn(RL_OP_Compress, "y", true, 1, 2, x, c);
	infer();
	expect_shape(out(n, 0), 1, (int64_t[]){5}); /* at most the condition's length */
	cr_assert_eq(out(n, 0)->extent_axis, 1);
}

Test(detect, compress_condition_longer_than_the_axis_is_an_error)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(2, L(3), L(2)));
	uint32_t c = input("cond", RL_DT_BOOL, shp(1, L(3)));
	uint32_t n = addn(RL_OP_Compress, "y", true, 1, 2, x, c);
	attr_i(n, "axis", 1);
	cr_assert_eq(rl_graph_toposort(G), RL_OK);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "condition has 3 entries"), "%s", G->err);
}

Test(detect, a_reader_of_a_data_dependent_extent_is_named)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(2, L(2), L(3)));
	uint32_t nz = addn(RL_OP_NonZero, "nz", false, 1, 1, x);
	uint32_t nzo = G->nodes[nz].out[0];
	uint32_t r = addn(RL_OP_Neg, "reader", true, 1, 1, nzo);
	(void)r;
	cr_assert_eq(rl_graph_toposort(G), RL_OK);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_UNSUPPORTED);
	cr_assert(strstr(G->err, "reader"), "%s", G->err);
	cr_assert(strstr(G->err, "data-dependent extent along axis 1"), "%s", G->err);
	cr_assert(strstr(G->err, "NonZero 'nz'"), "%s", G->err);
}

Test(detect, nonzero_and_unique_bounds)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(2), L(4), L(2)));
	uint32_t nz = addn(RL_OP_NonZero, "nz", true, 1, 1, x);
	uint32_t u = addn(RL_OP_Unique, "u", true, 4, 1, x);
	attr_i(u, "axis", -2);
	infer();
	expect_shape(out(nz, 0), 2, (int64_t[]){3, 16});
	cr_assert_eq(out(nz, 0)->extent_axis, 2);
	expect_shape(out(u, 0), 3, (int64_t[]){2, 4, 2});
	cr_assert_eq(out(u, 0)->extent_axis, 2); /* the axis: 4 slices at most */
	expect_shape(out(u, 1), 1, (int64_t[]){4});
	cr_assert_eq(out(u, 1)->extent_axis, 1);
	expect_shape(out(u, 2), 1, (int64_t[]){4});
	cr_assert_eq(out(u, 2)->extent_axis, 0); /* one per input slice: exact */
	cr_assert_eq(out(u, 3)->extent_axis, 1);
	EQ(count(nz).flops, 16);
	EQ(count(u).flops, 16 * 2); /* 16 elements, log2(4) comparisons each */
}

Test(detect, col2im_shape_from_constant_sizes_and_cost)
{
	/* 2 channels of 2x2 blocks, 9 block positions, into 4x4 images */
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(1), L(8), L(9)));
	uint32_t n = addn(RL_OP_Col2Im, "y", true, 1, 3, x, ints("img", 2, (int64_t[]){4, 4}),
	                  ints("blk", 2, (int64_t[]){2, 2}));
	infer();
	expect_shape(out(n, 0), 4, (int64_t[]){1, 2, 4, 4});
	struct rl_counts c = count(n);
	EQ(c.flops, 72); /* one add per input element */
	EQ(c.bytes_write, 32 * 4);
}

Test(detect, maxunpool_shape_from_the_window)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(4, L(1), L(3), L(2), L(3)));
	uint32_t i = input("i", RL_DT_INT64, shp(4, L(1), L(3), L(2), L(3)));
	uint32_t n = addn(RL_OP_MaxUnpool, "y", true, 1, 2, x, i);
	attr_ints(n, "kernel_shape", 2, (int64_t[]){2, 3});
	attr_ints(n, "strides", 2, (int64_t[]){2, 2});
	attr_ints(n, "pads", 4, (int64_t[]){0, 1, 0, 0});
	infer();
	/* (in - 1) * s - pads + k: 1*2 - 0 + 2 = 4, 2*2 - 1 + 3 = 6 */
	expect_shape(out(n, 0), 4, (int64_t[]){1, 3, 4, 6});
	struct rl_counts c = count(n);
	EQ(c.flops, 0);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(detect, deform_conv_and_roi_align_counts)
{
	/* DeformConv: X (1,4,5,5), W (6,2,3,3), group 2, offset_group 2, 3x3 out */
	uint32_t x = input("x", RL_DT_FLOAT, shp(4, L(1), L(4), L(5), L(5)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(4, L(6), L(2), L(3), L(3)));
	uint32_t of = input("off", RL_DT_FLOAT, shp(4, L(1), L(36), L(3), L(3)));
	uint32_t d = addn(RL_OP_DeformConv, "y", true, 1, 3, x, w, of);
	attr_i(d, "group", 2);
	attr_i(d, "offset_group", 2);
	/* RoiAlign: X (1,3,8,8), 2 rois, 2x2 bins of 2x2 samples */
	uint32_t fx = input("fx", RL_DT_FLOAT, shp(4, L(1), L(3), L(8), L(8)));
	uint32_t rois = input("rois", RL_DT_FLOAT, shp(2, L(2), L(4)));
	uint32_t bi = input("bi", RL_DT_INT64, shp(1, L(2)));
	uint32_t ra = addn(RL_OP_RoiAlign, "r", true, 1, 3, fx, rois, bi);
	attr_i(ra, "output_height", 2);
	attr_i(ra, "output_width", 2);
	attr_i(ra, "sampling_ratio", 2);
	infer();
	expect_shape(out(d, 0), 4, (int64_t[]){1, 6, 3, 3});
	struct rl_counts c = count(d);
	EQ(c.macs, 54 * 18);                      /* numel(Y) * C/group * 3 * 3 */
	EQ(c.flops, 2 * 54 * 18 + 12 * 4 * 9 * 9); /* + one sample per channel, tap, position */
	expect_shape(out(ra, 0), 4, (int64_t[]){2, 3, 2, 2});
	c = count(ra);
	EQ(c.flops, 24 * 4 * 16);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(detect, nonzero_and_compress_of_constants_fold_to_exact_values)
{
	/* NonZero([[1, 0], [0, 3]]) = [[0, 1], [0, 1]]; a reader is fine then */
	struct rl_shape s = shp(2, L(2), L(2));
	uint32_t x = rl_graph_add_value(G, "x", RL_DT_FLOAT, &s);
	float *xp = rl_graph_own(G, 16);
	memcpy(xp, (float[]){1, 0, 0, 3}, 16);
	rl_value_set_data(G, x, xp, 16);
	uint32_t nz = addn(RL_OP_NonZero, "nz", false, 1, 1, x);
	uint32_t r = addn(RL_OP_Neg, "reader", true, 1, 1, G->nodes[nz].out[0]);
	/* Compress(x, [0, 1], axis 1) = [[0], [3]] */
	struct rl_shape cs = shp(1, L(2));
	uint32_t c = rl_graph_add_value(G, "c", RL_DT_BOOL, &cs);
	uint8_t *cp = rl_graph_own(G, 2);
	cp[0] = 0;
	cp[1] = 1;
	rl_value_set_data(G, c, cp, 2);
	uint32_t cm = addn(RL_OP_Compress, "cm", true, 1, 2, x, c);
	attr_i(cm, "axis", 1);
	infer();
	const struct rl_value *v = out(nz, 0);
	expect_shape(v, 2, (int64_t[]){2, 2});
	cr_assert_eq(v->extent_axis, 0);
	cr_assert(v->flags & RL_VAL_CONST);
	const int64_t *d = v->data;
	cr_assert(d[0] == 0 && d[1] == 1 && d[2] == 0 && d[3] == 1);
	expect_shape(out(r, 0), 2, (int64_t[]){2, 2});
	v = out(cm, 0);
	expect_shape(v, 2, (int64_t[]){2, 1});
	cr_assert_eq(v->extent_axis, 0);
	const float *f = v->data;
	cr_assert(f[0] == 0 && f[1] == 3);
	/* inference again (as after a pass): same values, no error */
	infer();
	cr_assert_eq(out(cm, 0)->shape.d[0].v, 2);
}
