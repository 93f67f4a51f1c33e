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

TestSuite(index, .init = setup, .fini = teardown);

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

/* A constant int64 scalar. */
static uint32_t scalar(const char *name, int64_t x)
{
	struct rl_shape s = shp(0);
	uint32_t v = rl_graph_add_value(G, name, RL_DT_INT64, &s);
	int64_t *p = rl_graph_own(G, 8);
	*p = x;
	rl_value_set_data(G, v, p, 8);
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
	return rl_graph_add_node(G, op, out, in, nin, o, nout);
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

static struct rl_counts count(uint32_t node)
{
	struct rl_counts c;
	cr_assert(rl_count_node(G, node, &c), "node %u not counted", node);
	return c;
}

#define EQ(got, want) cr_assert(fabs((double)(got) - (double)(want)) < 1e-9 * fmax(1, fabs((double)(want))), \
                                "%s = %.17g, want %.17g", #got, (double)(got), (double)(want))

Test(index, cumsum_counts_one_add_per_element)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(2, L(4), L(6)));
	uint32_t n = add(RL_OP_CumSum, "y", 1, 2, x, scalar("axis", 1));
	infer();
	cr_assert(rl_shape_equal(&G->values[G->nodes[n].out[0]].shape, &G->values[x].shape));
	struct rl_counts c = count(n);
	EQ(c.flops, 24);
	EQ(c.bytes_read, 24 * 4);  /* the axis scalar is not charged */
	EQ(c.bytes_write, 24 * 4);
}

Test(index, nll_gathers_one_element_per_term)
{
	/* input (3, 5, 2), target (3, 2): m = 6 terms, mean reduction */
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(3), L(5), L(2)));
	uint32_t t = input("t", RL_DT_INT64, shp(2, L(3), L(2)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(1, L(5)));
	uint32_t n = add(RL_OP_NegativeLogLikelihoodLoss, "loss", 1, 3, x, t, w);
	infer();
	cr_assert_eq(G->values[G->nodes[n].out[0]].shape.rank, 0);
	struct rl_counts c = count(n);
	EQ(c.flops, 6 * 3 + 6);
	EQ(c.bytes_read, 6 * 8 + 5 * 4 + 6 * 4); /* target, weight, 6 gathered */
	EQ(c.bytes_write, 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(index, sce_none_with_log_prob)
{
	/* scores (2, 4), labels (2), reduction none: loss (2), log_prob (2, 4) */
	uint32_t x = input("x", RL_DT_FLOAT, shp(2, L(2), L(4)));
	uint32_t t = input("t", RL_DT_INT64, shp(1, L(2)));
	uint32_t n = add(RL_OP_SoftmaxCrossEntropyLoss, "loss", 2, 2, x, t);
	attr_s(n, "reduction", "none");
	infer();
	const struct rl_shape *s0 = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(s0->rank == 1 && s0->d[0].v == 2);
	cr_assert(rl_shape_equal(&G->values[G->nodes[n].out[1]].shape, &G->values[x].shape));
	struct rl_counts c = count(n);
	double T = RL_FLOPS_TRANS;
	EQ(c.flops, 2 * 3 + 8 * (4 + T) + 2 * T);
	EQ(c.bytes_read, 8 * 4 + 2 * 8);
	EQ(c.bytes_write, 2 * 4 + 8 * 4);
}

Test(index, scatter_nd_add_and_topk)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(4), L(4), L(4)));
	uint32_t i = input("i", RL_DT_INT64, shp(2, L(2), L(1)));
	uint32_t u = input("u", RL_DT_FLOAT, shp(3, L(2), L(4), L(4)));
	uint32_t n = add(RL_OP_ScatterND, "y", 1, 3, x, i, u);
	attr_s(n, "reduction", "add");
	/* TopK of (3, 10) along the last axis, K = 4 (a constant) */
	uint32_t v = input("v", RL_DT_FLOAT, shp(2, L(3), L(10)));
	struct rl_shape ks = shp(1, L(1));
	uint32_t k = rl_graph_add_value(G, "k", RL_DT_INT64, &ks);
	int64_t *kp = rl_graph_own(G, 8);
	*kp = 4;
	rl_value_set_data(G, k, kp, 8);
	uint32_t tk = add(RL_OP_TopK, "top", 2, 2, v, k);
	attr_i(tk, "axis", -1);
	infer();
	struct rl_counts c = count(n);
	EQ(c.flops, 32);                              /* one add per update */
	EQ(c.bytes_read, 64 * 4 + 2 * 8 + 32 * 4);
	EQ(c.bytes_write, 64 * 4 + 32 * 4);           /* Y, then the updated places */
	const struct rl_shape *ts = &G->values[G->nodes[tk].out[1]].shape;
	cr_assert(ts->rank == 2 && ts->d[0].v == 3 && ts->d[1].v == 4);
	cr_assert_eq(G->values[G->nodes[tk].out[1]].dtype, RL_DT_INT64);
	c = count(tk);
	EQ(c.flops, 30 + 12 * 4);
	EQ(c.bytes_read, 30 * 4);
	EQ(c.bytes_write, 12 * 4 + 12 * 8);
}

Test(index, rms_normalization_rows)
{
	/* X (2, 3, 5), axis 1: rows of 15, 2 rows */
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(2), L(3), L(5)));
	uint32_t s = input("s", RL_DT_FLOAT, shp(2, L(3), L(5)));
	uint32_t n = add(RL_OP_RMSNormalization, "y", 1, 2, x, s);
	attr_i(n, "axis", 1);
	infer();
	struct rl_counts c = count(n);
	EQ(c.flops, 30 * 4 + 2 * (2 + RL_FLOPS_TRANS));
	EQ(c.bytes_read, 30 * 4 + 15 * 4);
	EQ(c.bytes_write, 30 * 4);
}

Test(index, loss_target_mismatch_is_an_error)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(2, L(3), L(5)));
	uint32_t t = input("t", RL_DT_INT64, shp(1, L(4)));
	add(RL_OP_NegativeLogLikelihoodLoss, "loss", 1, 2, x, t);
	cr_assert_neq(rl_graph_infer(G), RL_OK);
	cr_assert(strstr(G->err, "target"), "%s", G->err);
}

Test(index, resize_linear_counts_taps_of_resized_axes)
{
	/* X (1, 1, 4, 4), constant scales (1, 1, 2, 2), linear: Y (1, 1, 8, 8);
	 * 2 taps on each of the 2 resized axes, a multiply-add per tap */
	uint32_t x = input("x", RL_DT_FLOAT, shp(4, L(1), L(1), L(4), L(4)));
	struct rl_shape ss = shp(1, L(4));
	uint32_t sc = rl_graph_add_value(G, "scales", RL_DT_FLOAT, &ss);
	float *p = rl_graph_own(G, 16);
	p[0] = p[1] = 1;
	p[2] = p[3] = 2;
	rl_value_set_data(G, sc, p, 16);
	uint32_t n = add(RL_OP_Resize, "y", 1, 3, x, RL_NONE, sc);
	attr_s(n, "mode", "linear");
	infer();
	const struct rl_shape *sy = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(sy->rank == 4 && sy->d[2].v == 8 && sy->d[3].v == 8);
	struct rl_counts c = count(n);
	EQ(c.flops, 2 * 64 * 4);
	EQ(c.bytes_read, 16 * 4);  /* the scales are not charged */
	EQ(c.bytes_write, 64 * 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(index, einsum_and_window_counts)
{
	/* bij,bjk->bik with b=5, i=2, j=3, k=4: 120 iterations of 2 operands */
	uint32_t a = input("a", RL_DT_FLOAT, shp(3, L(5), L(2), L(3)));
	uint32_t b = input("b", RL_DT_FLOAT, shp(3, L(5), L(3), L(4)));
	uint32_t n = add(RL_OP_Einsum, "y", 1, 2, a, b);
	attr_s(n, "equation", "bij, bjk -> bik");
	/* a Hann window of a constant size 10 */
	uint32_t w = add(RL_OP_HannWindow, "w", 1, 1, scalar("size", 10));
	infer();
	const struct rl_shape *sy = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(sy->rank == 3 && sy->d[0].v == 5 && sy->d[1].v == 2 && sy->d[2].v == 4);
	struct rl_counts c = count(n);
	EQ(c.flops, 2 * 2 * 120);
	EQ(c.bytes_read, (30 + 60) * 4);
	EQ(c.bytes_write, 40 * 4);
	const struct rl_shape *sw = &G->values[G->nodes[w].out[0]].shape;
	cr_assert(sw->rank == 1 && sw->d[0].v == 10);
	c = count(w);
	EQ(c.flops, 10 * (2 + RL_FLOPS_TRANS));
	EQ(c.bytes_read, 0);
	EQ(c.bytes_write, 10 * 4);
}

Test(index, grid_sample_linear_counts)
{
	/* X (1, 2, 3, 2), grid (1, 2, 4, 2): Y (1, 2, 2, 4); 2x2 taps each */
	uint32_t x = input("x", RL_DT_FLOAT, shp(4, L(1), L(2), L(3), L(2)));
	uint32_t gr = input("grid", RL_DT_FLOAT, shp(4, L(1), L(2), L(4), L(2)));
	uint32_t n = add(RL_OP_GridSample, "y", 1, 2, x, gr);
	attr_s(n, "mode", "linear");
	infer();
	const struct rl_shape *sy = &G->values[G->nodes[n].out[0]].shape;
	cr_assert(sy->rank == 4 && sy->d[1].v == 2 && sy->d[2].v == 2 && sy->d[3].v == 4);
	struct rl_counts c = count(n);
	EQ(c.flops, 2 * 16 * 4);
	EQ(c.bytes_read, (12 + 16) * 4);
	EQ(c.bytes_write, 16 * 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}
