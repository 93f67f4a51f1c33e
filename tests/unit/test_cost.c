/*
 * test_cost.c - golden tests of the cost model (ir/cost.c and the "cost"
 * sections of ir/fam_*.c) and of the report renderers (backends/report).
 *
 * Every expected FLOP and byte count below is worked out by hand in the test,
 * from the conventions in ir/cost.h (a multiply-add counts 2, a
 * transcendental RL_FLOPS_TRANS, data movement 0; every input read once,
 * every output written once, at its dtype) and the per-operator formulas
 * documented in the family files. Shapes are built with the ir.h API and
 * inferred; the counts never come from the code under test.
 */
#include <criterion/criterion.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "backends/report/report.h"
#include "passes/pass.h"
#include "cost.h"
#include "ir.h"
#include "machine.h"
#include "testutil.h"

/* ---- graph building ------------------------------------------------------ */

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

TestSuite(cost, .init = setup, .fini = teardown);

/* A constant filled with small values (graph-owned). */
static uint32_t weight(const char *name, enum rl_dtype dt, struct rl_shape s)
{
	uint32_t v = rl_graph_add_value(G, name, dt, &s);
	size_t n = (size_t)rl_shape_numel(&s), nb = n * rl_dtype_size(dt);
	unsigned char *p = rl_graph_own(G, nb ? nb : 1);
	memset(p, 0, nb);
	if (dt == RL_DT_FLOAT)
		for (size_t i = 0; i < n; i++)
			((float *)p)[i] = (float)(i % 7) * 0.125f;
	rl_value_set_data(G, v, p, nb);
	return v;
}

/* ---- matrix products -------------------------------------------------------- */

Test(cost, matmul_batched)
{
	/* A [2,3,4,5] x B [5,6] (a weight) -> Y [2,3,4,6] */
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(4, 2, 3, 4, 5));
	uint32_t b = weight("b", RL_DT_FLOAT, TU_SHAPE(2, 5, 6));
	uint32_t n = tu_add(G, RL_OP_MatMul, "y", 1, 2, a, b);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	/* 2*3*4 matrices of 4x6 outputs, each a 5-long dot product */
	TU_EQ(c.macs, 2 * 3 * 4 * 6 * 5);        /* 720 */
	TU_EQ(c.flops, 2 * 720);
	TU_EQ(c.bytes_read, 2 * 3 * 4 * 5 * 4 + 5 * 6 * 4); /* 480 + 120 */
	TU_EQ(c.weight_bytes, 5 * 6 * 4);
	TU_EQ(c.bytes_write, 2 * 3 * 4 * 6 * 4); /* 576 */
	cr_assert_eq(c.access, RL_ACCESS_CONTIGUOUS);
}

Test(cost, matmul_broadcast_batch)
{
	/* A [2,1,4,5] x B [3,5,6] -> Y [2,3,4,6]: the batch dims broadcast */
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(4, 2, 1, 4, 5));
	uint32_t b = tu_input(G, "b", RL_DT_FLOAT, TU_SHAPE(3, 3, 5, 6));
	uint32_t n = tu_add(G, RL_OP_MatMul, "y", 1, 2, a, b);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 2 * 3 * 4 * 6 * 5);
	TU_EQ(c.bytes_read, (2 * 4 * 5 + 3 * 5 * 6) * 4);
	TU_EQ(c.weight_bytes, 0);
}

Test(cost, gemm_trans_alpha_beta_c)
{
	/* A is K x M = 8 x 4 (transA), B is N x K = 3 x 8 (transB), C [3] */
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(2, 8, 4));
	uint32_t b = weight("b", RL_DT_FLOAT, TU_SHAPE(2, 3, 8));
	uint32_t cc = weight("c", RL_DT_FLOAT, TU_SHAPE(1, 3));
	uint32_t n = tu_add(G, RL_OP_Gemm, "y", 1, 3, a, b, cc);
	tu_attr_i(G, n, "transA", 1);
	tu_attr_i(G, n, "transB", 1);
	tu_attr_f(G, n, "alpha", 0.5);
	tu_attr_f(G, n, "beta", 2.0);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	/* Y is 4 x 3: 12 dot products of length 8 */
	TU_EQ(c.macs, 4 * 3 * 8);
	/* 2 per MAC, + alpha*AB (12), + C (12), + beta*C (12) */
	TU_EQ(c.flops, 2 * 96 + 12 + 12 + 12);
	TU_EQ(c.bytes_read, 8 * 4 * 4 + 3 * 8 * 4 + 3 * 4); /* 128 + 96 + 12 */
	TU_EQ(c.weight_bytes, 96 + 12);
	TU_EQ(c.bytes_write, 4 * 3 * 4);
}

Test(cost, gemm_plain)
{
	/* alpha = beta = 1, no C: just the product */
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(2, 5, 7));
	uint32_t b = weight("b", RL_DT_FLOAT, TU_SHAPE(2, 7, 2));
	uint32_t n = tu_add(G, RL_OP_Gemm, "y", 1, 2, a, b);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 5 * 2 * 7);
	TU_EQ(c.flops, 2 * 70);
}

/* ---- convolution --------------------------------------------------------- */

Test(cost, conv_grouped_strided_bias)
{
	/* X [1,4,9,9], W [6,2,3,3] with group 2, B [6], stride 2, pads 1:
	 * out = floor((9 + 2 - 3) / 2) + 1 = 5, so Y [1,6,5,5] */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 4, 9, 9));
	uint32_t w = weight("w", RL_DT_FLOAT, TU_SHAPE(4, 6, 2, 3, 3));
	uint32_t b = weight("bias", RL_DT_FLOAT, TU_SHAPE(1, 6));
	uint32_t n = tu_add(G, RL_OP_Conv, "y", 1, 3, x, w, b);
	tu_attr_i(G, n, "group", 2);
	tu_attr_ints(G, n, "strides", 2, (const int64_t[]){2, 2});
	tu_attr_ints(G, n, "pads", 4, (const int64_t[]){1, 1, 1, 1});
	tu_infer(G);
	cr_assert_eq(rl_shape_numel(&G->values[G->nodes[n].out[0]].shape), 150);
	struct rl_counts c = tu_count(G, n);
	/* each of 150 outputs: 2 input channels (4 / group 2) x 3x3 taps */
	TU_EQ(c.macs, 150 * 2 * 9);             /* 2700 */
	TU_EQ(c.flops, 2 * 2700 + 150);         /* + the bias add */
	TU_EQ(c.bytes_read, (4 * 81 + 6 * 2 * 9 + 6) * 4); /* 1296 + 432 + 24 */
	TU_EQ(c.weight_bytes, (108 + 6) * 4);
	TU_EQ(c.bytes_write, 150 * 4);
}

Test(cost, conv_depthwise_no_bias)
{
	/* depthwise: X [2,8,6,6], W [8,1,3,3], group 8, VALID: Y [2,8,4,4] */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 2, 8, 6, 6));
	uint32_t w = weight("w", RL_DT_FLOAT, TU_SHAPE(4, 8, 1, 3, 3));
	uint32_t n = tu_add(G, RL_OP_Conv, "y", 1, 2, x, w);
	tu_attr_i(G, n, "group", 8);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 2 * 8 * 4 * 4 * 9);
	TU_EQ(c.flops, 2 * c.macs);
}

/* ---- pooling ---------------------------------------------------------------- */

Test(cost, maxpool)
{
	/* X [1,2,8,8], 2x2 windows, stride 2: Y [1,2,4,4] (32 outputs) */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 2, 8, 8));
	uint32_t n = tu_add(G, RL_OP_MaxPool, "y", 1, 1, x);
	tu_attr_ints(G, n, "kernel_shape", 2, (const int64_t[]){2, 2});
	tu_attr_ints(G, n, "strides", 2, (const int64_t[]){2, 2});
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 32 * 4);     /* one compare per tap */
	TU_EQ(c.macs, 0);
	TU_EQ(c.bytes_read, 128 * 4);
	TU_EQ(c.bytes_write, 32 * 4);
}

Test(cost, averagepool_padded)
{
	/* 3x3 windows, stride 1, pads 1: Y [1,2,8,8] (128 outputs) */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 2, 8, 8));
	uint32_t n = tu_add(G, RL_OP_AveragePool, "y", 1, 1, x);
	tu_attr_ints(G, n, "kernel_shape", 2, (const int64_t[]){3, 3});
	tu_attr_ints(G, n, "pads", 4, (const int64_t[]){1, 1, 1, 1});
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 128 * (9 + 1)); /* 9 adds and a divide per output */
	TU_EQ(c.bytes_read, 512);
	TU_EQ(c.bytes_write, 512);
}

Test(cost, global_average_pool)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 2, 8, 8));
	uint32_t n = tu_add(G, RL_OP_GlobalAveragePool, "y", 1, 1, x);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 128 + 2); /* every element added, one divide per channel */
	TU_EQ(c.bytes_read, 512);
	TU_EQ(c.bytes_write, 8);
}

/* ---- normalizations and reductions ------------------------------------------ */

Test(cost, softmax)
{
	/* X [4,10], axis -1: per element max, subtract, exp, sum, divide */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 10));
	uint32_t n = tu_add(G, RL_OP_Softmax, "y", 1, 1, x);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 40 * (4 + RL_FLOPS_TRANS));
	TU_EQ(c.bytes_read, 160);
	TU_EQ(c.bytes_write, 160);
}

Test(cost, layernorm)
{
	/* X [2,3,8], axis -1, Scale [8], B [8]: 48 elements in 6 rows of 8 */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 8));
	uint32_t s = weight("s", RL_DT_FLOAT, TU_SHAPE(1, 8));
	uint32_t b = weight("b", RL_DT_FLOAT, TU_SHAPE(1, 8));
	uint32_t n = tu_add(G, RL_OP_LayerNormalization, "y", 1, 3, x, s, b);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	/* per element: mean add, center, square-add (2), normalize, scale, bias
	 * = 7; per row: two divides, + epsilon, rsqrt = 3 + T */
	TU_EQ(c.flops, 48 * 7 + 6 * (3 + RL_FLOPS_TRANS));
	TU_EQ(c.bytes_read, 48 * 4 + 8 * 4 + 8 * 4);
	TU_EQ(c.weight_bytes, 64);
	TU_EQ(c.bytes_write, 48 * 4);
}

Test(cost, mean_variance_normalization)
{
	/* X [2,3,4,5], default axes [0,2,3]: 120 elements in 3 groups of 40 (one
	 * per channel). Per element: sum, square-add (2), subtract, divide = 5;
	 * per group: two divides, square, subtract, + epsilon, sqrt = 5 + T */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 2, 3, 4, 5));
	uint32_t n = tu_add(G, RL_OP_MeanVarianceNormalization, "y", 1, 1, x);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 120 * 5 + 3 * (5 + RL_FLOPS_TRANS));
	TU_EQ(c.bytes_read, 480);
	TU_EQ(c.bytes_write, 480);
	/* axes [1]: 40 groups of 3 */
	uint32_t m = tu_add(G, RL_OP_MeanVarianceNormalization, "y2", 1, 1, x);
	tu_attr_ints(G, m, "axes", 1, (const int64_t[]){1});
	tu_infer(G);
	c = tu_count(G, m);
	TU_EQ(c.flops, 120 * 5 + 40 * (5 + RL_FLOPS_TRANS));
}

Test(cost, mel_weight_matrix)
{
	/* num_mel_bins 8, dft_length 16: Y [9, 8] float; per band edge (10) one
	 * pow and 6 FLOPs, per element at most 2; inputs are 5 scalars */
	int64_t bins = 8, len = 16, rate = 8192;
	uint32_t a = tu_ints(G, "bins", 1, &bins), b = tu_ints(G, "len", 1, &len), r = tu_ints(G, "rate", 1, &rate);
	uint32_t lo = tu_input(G, "lo", RL_DT_FLOAT, TU_SHAPE(0)), hi = tu_input(G, "hi", RL_DT_FLOAT, TU_SHAPE(0));
	G->values[a].shape.rank = G->values[b].shape.rank = G->values[r].shape.rank = 0;
	uint32_t n = tu_add(G, RL_OP_MelWeightMatrix, "y", 1, 5, a, b, r, lo, hi);
	tu_infer(G);
	cr_assert_eq(G->values[G->nodes[n].out[0]].shape.rank, 2);
	cr_assert_eq(G->values[G->nodes[n].out[0]].shape.d[0].v, 9);
	cr_assert_eq(G->values[G->nodes[n].out[0]].shape.d[1].v, 8);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 10 * (6 + RL_FLOPS_TRANS) + 2 * 72);
	TU_EQ(c.bytes_write, 72 * 4);
}

Test(cost, reduce_mean)
{
	/* X [4,6], axes [1] (attribute at opset 17), keepdims: Y [4,1] */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 6));
	uint32_t n = tu_add(G, RL_OP_ReduceMean, "y", 1, 1, x);
	tu_attr_ints(G, n, "axes", 1, (const int64_t[]){1});
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 24 + 4); /* 24 adds, 4 divides */
	TU_EQ(c.bytes_read, 96);
	TU_EQ(c.bytes_write, 16);
}

Test(cost, reduce_sum_axes_input)
{
	/* ReduceSum-13: axes as a constant input [0]; X [4,6] -> Y [1,6] */
	int64_t ax[1] = {0};
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 6));
	uint32_t a = tu_ints(G, "axes", 1, ax);
	uint32_t n = tu_add(G, RL_OP_ReduceSum, "y", 1, 2, x, a);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 24);
	/* the baseline reads every input: X (96 bytes) and the int64 axes (8) */
	TU_EQ(c.bytes_read, 96 + 8);
	TU_EQ(c.bytes_write, 6 * 4);
}

/* ---- elementwise, data movement --------------------------------------------- */

Test(cost, add_broadcast)
{
	/* [8,1,16] + [4,1] -> [8,4,16]: 512 outputs, each input read once */
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(3, 8, 1, 16));
	uint32_t b = tu_input(G, "b", RL_DT_FLOAT, TU_SHAPE(2, 4, 1));
	uint32_t n = tu_add(G, RL_OP_Add, "y", 1, 2, a, b);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 8 * 4 * 16);
	TU_EQ(c.bytes_read, 8 * 16 * 4 + 4 * 4); /* 512 + 16 */
	TU_EQ(c.bytes_write, 8 * 4 * 16 * 4);    /* 2048 */
}

Test(cost, unary_transcendental)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 3, 5));
	uint32_t n = tu_add(G, RL_OP_Tanh, "y", 1, 1, x);
	tu_infer(G);
	TU_EQ(tu_count(G, n).flops, 15 * RL_FLOPS_TRANS);
}

Test(cost, gather_embedding)
{
	/* a [100,16] table (weight) gathered by int64 indices [2,5] -> [2,5,16] */
	uint32_t d = weight("table", RL_DT_FLOAT, TU_SHAPE(2, 100, 16));
	uint32_t i = tu_input(G, "idx", RL_DT_INT64, TU_SHAPE(2, 2, 5));
	uint32_t n = tu_add(G, RL_OP_Gather, "y", 1, 2, d, i);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 0);
	/* the indices (10 x 8 bytes) and only the 10 rows gathered (160 x 4) */
	TU_EQ(c.bytes_read, 10 * 8 + 160 * 4);
	TU_EQ(c.weight_bytes, 160 * 4);
	TU_EQ(c.bytes_write, 160 * 4);
	cr_assert_eq(c.access, RL_ACCESS_GATHER);
}

Test(cost, reshape_is_free)
{
	int64_t to[2] = {6, 4};
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 4));
	uint32_t s = tu_ints(G, "shape", 2, to);
	uint32_t n = tu_add(G, RL_OP_Reshape, "y", 1, 2, x, s);
	tu_infer(G);
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 0);
	TU_EQ(c.bytes_read, 0);
	TU_EQ(c.bytes_write, 0);
}

Test(cost, transpose_strided_slice_reads_kept)
{
	int64_t st[1] = {1}, en[1] = {3}, ax[1] = {1};
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 10));
	uint32_t t = tu_add(G, RL_OP_Transpose, "t", 1, 1, x);
	uint32_t sl = tu_add(G, RL_OP_Slice, "s", 1, 4, x, tu_ints(G, "st", 1, st),
	                     tu_ints(G, "en", 1, en), tu_ints(G, "ax", 1, ax));
	tu_infer(G);
	struct rl_counts c = tu_count(G, t);
	cr_assert_eq(c.access, RL_ACCESS_STRIDED);
	TU_EQ(c.bytes_read, 160);
	c = tu_count(G, sl);
	/* keeps columns 1..2 of 4 rows: 8 elements read, 8 written */
	TU_EQ(c.bytes_read, 8 * 4);
	TU_EQ(c.bytes_write, 8 * 4);
}

Test(cost, unpriced_when_symbolic)
{
	struct rl_shape s = TU_SHAPE(2, 0, 8);
	s.d[0].v = RL_DIM_SYMBOLIC;
	s.d[0].sym = "batch";
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, s);
	uint32_t n = tu_add(G, RL_OP_Relu, "y", 1, 1, x);
	tu_infer(G);
	struct rl_counts c;
	cr_assert(!rl_count_node(G, n, &c));
}

/* ---- bound classification -------------------------------------------------- */

static void load_machine(const char *name, struct rl_machine *m)
{
	char err[512];
	cr_assert(rl_machine_load(name, m, err, sizeof(err)) == RL_OK, "%s", err);
}

/* fp32 MatMul [M,K] x [K,N] with both operands inputs (no data needed). */
static uint32_t big_matmul(int64_t mm, int64_t k, int64_t nn)
{
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(2, mm, k));
	uint32_t b = tu_input(G, "b", RL_DT_FLOAT, TU_SHAPE(2, k, nn));
	uint32_t n = tu_add(G, RL_OP_MatMul, "y", 1, 2, a, b);
	tu_infer(G);
	return n;
}

/* The balance from the profile, computed here: fp32 peak (matrix unit where
 * the part has one for fp32, else vector) over main-memory read bandwidth at
 * contiguous efficiency. */
static double balance_of(const struct rl_machine *m)
{
	double peak = m->peak_matrix[RL_PREC_FP32] > m->peak_vector[RL_PREC_FP32]
	                      ? m->peak_matrix[RL_PREC_FP32]
	                      : m->peak_vector[RL_PREC_FP32];
	const struct rl_mem_level *d = &m->level[m->nlevels - 1];
	return peak / (d->read_bw * m->eff_contiguous);
}

static void check_bound(const char *machine, int64_t mm, int64_t k, int64_t nn,
                        enum rl_bound want)
{
	struct rl_machine m;
	load_machine(machine, &m);
	uint32_t n = big_matmul(mm, k, nn);
	/* intensity by hand: 2MNK FLOPs over (MK + KN + MN) * 4 bytes */
	double flops = 2.0 * (double)mm * (double)nn * (double)k;
	double bytes = 4.0 * ((double)mm * (double)k + (double)k * (double)nn + (double)mm * (double)nn);
	double in = flops / bytes, bal = balance_of(&m);
	cr_assert(rl_cost_node(G, n, &m));
	const struct rl_cost *c = &G->nodes[n].cost;
	TU_EQ(c->flops, flops);
	TU_EQ(c->bytes, bytes);
	TU_EQ(c->intensity, in);
	TU_EQ(rl_cost_balance(&m, RL_PREC_FP32, true), bal);
	cr_assert_eq(c->bound, (int)want, "%s %lldx%lldx%lld: bound %s, intensity %g, balance %g",
	             machine, (long long)mm, (long long)k, (long long)nn,
	             rl_bound_name((enum rl_bound)c->bound), in, bal);
	/* the classification agrees with intensity against the balance */
	if (want == RL_BOUND_MEMORY)
		cr_assert_lt(in, bal);
	else
		cr_assert_gt(in, bal);
	/* and the time is the larger roof plus the launch latency */
	double peak = rl_machine_peak(&m, RL_PREC_FP32, true);
	const struct rl_mem_level *d = &m.level[m.nlevels - 1];
	double tm = flops * 0 + (4.0 * ((double)mm * (double)k + (double)k * (double)nn)) /
	                        (d->read_bw * m.eff_contiguous) +
	            4.0 * (double)mm * (double)nn / (d->write_bw * m.eff_contiguous);
	double tc = flops / peak;
	TU_EQ(c->time_s, fmax(tm, tc) + m.launch_latency + m.fork_latency);
}

Test(cost, batch1_matmul_memory_bound_h100)
{
	check_bound("h100", 1, 4096, 4096, RL_BOUND_MEMORY);
}

Test(cost, batch1_matmul_memory_bound_cpu)
{
	/* 402 MB of weights: more than the 384 MB of L3, so main memory */
	check_bound("epyc9654", 1, 12288, 8192, RL_BOUND_MEMORY);
}

/* y = a + b over two float inputs of n elements; the node */
static uint32_t add_of_inputs(int64_t n)
{
	uint32_t a = tu_input(G, "a", RL_DT_FLOAT, TU_SHAPE(1, n));
	uint32_t b = tu_input(G, "b", RL_DT_FLOAT, TU_SHAPE(1, n));
	return tu_add(G, RL_OP_Add, "y", 1, 2, a, b);
}

Test(cost, cpu_working_set_in_cache_priced_at_its_level)
{
	/* Add over 2 x 256 KiB in, 256 KiB out: 65536 elements, which the
	 * runtime splits into 2 chunks of 32768, so 2 of epyc9654's 96 cores
	 * work and have 2/96 of its private levels: 768 KiB is more than their
	 * L1 (64 KiB) and fits their L2 (2 MiB), so L2, at 2/96 of the chip's
	 * L2 bandwidth and peak. Add(c, c) over 12M floats on all cores moves
	 * 144 MiB, more than L2 (96 MiB) holds and less than L3 (384 MiB). */
	struct rl_machine m;
	load_machine("epyc9654", &m);
	uint32_t n = add_of_inputs(65536);
	uint32_t c = tu_input(G, "c", RL_DT_FLOAT, TU_SHAPE(1, 12 << 20));
	uint32_t n2 = tu_add(G, RL_OP_Add, "y2", 1, 2, c, c);
	tu_infer(G);
	cr_assert(rl_cost_node(G, n, &m));
	double ws = 3.0 * 65536 * 4;
	cr_assert_gt(ws, m.level[0].capacity * 2 / m.cores);
	cr_assert_leq(ws, m.level[1].capacity * 2 / m.cores);
	cr_assert_eq(G->nodes[n].cost.level, 1, "768 KiB on 2 cores: %d", G->nodes[n].cost.level);
	const struct rl_mem_level *l2 = &m.level[1];
	double share = m.cores / 2.0;
	TU_EQ(G->nodes[n].cost.time_s,
	   share * fmax(2.0 * 65536 * 4 / (l2->read_bw * m.eff_contiguous) +
	                65536.0 * 4 / (l2->write_bw * m.eff_contiguous),
	                65536.0 / rl_machine_peak(&m, RL_PREC_FP32, false)) +
	       m.launch_latency + m.fork_latency);
	cr_assert(rl_cost_node(G, n2, &m));
	cr_assert_eq(G->nodes[n2].cost.level, 2, "144 MiB: %d", G->nodes[n2].cost.level);
	/* a GPU prices at device memory whatever the size */
	load_machine("h100", &m);
	cr_assert(rl_cost_node(G, n, &m));
	cr_assert_eq(G->nodes[n].cost.level, m.nlevels - 1);
}

Test(cost, cpu_one_core_priced_at_its_own_bandwidth)
{
	/* Add over 2 x 4 KiB in, 4 KiB out runs on one thread (too small to
	 * split): without one core's rate in the profile it gets 1/96 of the
	 * chip's L1 bandwidth; with core_read_bw/core_write_bw, those. */
	struct rl_machine m;
	load_machine("epyc9654", &m);
	uint32_t n = add_of_inputs(1024);
	tu_infer(G);
	const struct rl_mem_level *l1 = &m.level[0];
	double e = m.eff_contiguous, tc = m.cores * 1024.0 / rl_machine_peak(&m, RL_PREC_FP32, false);
	cr_assert(rl_cost_node(G, n, &m));
	cr_assert_eq(G->nodes[n].cost.level, 0);
	double tm = m.cores * (8192.0 / (l1->read_bw * e) + 4096.0 / (l1->write_bw * e));
	TU_EQ(G->nodes[n].cost.time_s, fmax(tm, tc) + m.launch_latency);
	m.level[0].core_read_bw = 100e9;
	m.level[0].core_write_bw = 50e9;
	cr_assert(rl_cost_node(G, n, &m));
	tm = 8192.0 / (100e9 * e) + 4096.0 / (50e9 * e);
	TU_EQ(G->nodes[n].cost.time_s, fmax(tm, tc) + m.launch_latency);
	/* never more than the whole chip's */
	m.level[0].core_read_bw = 1e15;
	cr_assert(rl_cost_node(G, n, &m));
	tm = 8192.0 / (l1->read_bw * e) + 4096.0 / (50e9 * e);
	TU_EQ(G->nodes[n].cost.time_s, fmax(tm, tc) + m.launch_latency);
}

Test(cost, cpu_weights_priced_where_the_run_footprint_leaves_them)
{
	/* Two batch-1 products of 1 MiB of weights each on a one-core profile
	 * with a 32 KiB L1 and a 1.5 MiB L2: each kernel's working set fits L2, but every run
	 * reads both weights, 2 MiB, so a weight is gone from L2 by the time
	 * the next run reads it: L3. On its own (rl_cost_node: no footprint
	 * known) the same product is priced at L2. */
	struct rl_machine m;
	load_machine("epyc9654", &m);
	m.cores = 1;
	m.level[0].capacity = 32768;
	m.level[1].capacity = 1.5 * 1048576;
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 1, 512));
	static float wz[512 * 512];
	uint32_t w1 = tu_const(G, "w1", RL_DT_FLOAT, TU_SHAPE(2, 512, 512), wz);
	uint32_t w2 = tu_const(G, "w2", RL_DT_FLOAT, TU_SHAPE(2, 512, 512), wz);
	uint32_t m1 = tu_add(G, RL_OP_MatMul, "h", 1, 2, x, w1);
	uint32_t h = G->nodes[m1].out[0];
	uint32_t m2 = tu_add(G, RL_OP_MatMul, "y", 1, 2, h, w2);
	tu_infer(G);
	cr_assert(rl_cost_node(G, m1, &m));
	cr_assert_eq(G->nodes[m1].cost.level, 1, "alone: %d", G->nodes[m1].cost.level);
	double alone = G->nodes[m1].cost.time_s;
	struct rl_cost_total t;
	rl_cost_graph(G, &m, &t);
	cr_assert_eq(G->nodes[m1].cost.level, 2, "in the run: %d", G->nodes[m1].cost.level);
	cr_assert_eq(G->nodes[m2].cost.level, 2, "in the run: %d", G->nodes[m2].cost.level);
	/* the weights' bytes at L3's bandwidth, the 2 KiB of x and y at L2's */
	const struct rl_mem_level *l2 = &m.level[1], *l3 = &m.level[2];
	double e = m.eff_contiguous, wb = 512.0 * 512 * 4;
	double tm = wb / (l3->read_bw * e) + 2048.0 / (l2->read_bw * e) + 2048.0 / (l2->write_bw * e);
	cr_assert_gt(G->nodes[m1].cost.time_s, alone);
	TU_EQ(G->nodes[m1].cost.time_s, tm + m.launch_latency);
}

Test(cost, big_matmul_compute_bound_h100)
{
	check_bound("h100", 8192, 8192, 8192, RL_BOUND_COMPUTE);
}

Test(cost, big_matmul_compute_bound_cpu)
{
	check_bound("epyc9654", 8192, 8192, 8192, RL_BOUND_COMPUTE);
}

Test(cost, tiny_node_latency_bound_h100)
{
	struct rl_machine m;
	load_machine("h100", &m);
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 16));
	uint32_t n = tu_add(G, RL_OP_Relu, "y", 1, 1, x);
	tu_infer(G);
	cr_assert(rl_cost_node(G, n, &m));
	cr_assert_eq(G->nodes[n].cost.bound, RL_BOUND_LATENCY);
}

Test(cost, graph_totals_skip_views)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	int64_t to[1] = {24};
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 6));
	uint32_t r = tu_add(G, RL_OP_Relu, "r", 1, 1, x);
	uint32_t rv = G->nodes[r].out[0];
	G->values[rv].flags &= ~(unsigned)RL_VAL_OUTPUT;
	G->noutputs = 0;
	tu_add(G, RL_OP_Reshape, "y", 1, 2, rv, tu_ints(G, "to", 1, to));
	tu_infer(G);
	struct rl_cost_total t;
	rl_cost_graph(G, &m, &t);
	cr_assert_eq(t.nodes, 1); /* the Reshape runs no kernel */
	TU_EQ(t.flops, 24);
	TU_EQ(t.bytes, 192);
	TU_EQ(t.time_s, G->nodes[r].cost.time_s);
}

Test(cost, weights_filled_from_constants_priced_once_at_init_on_cpu)
{
	/* y = x W with W = ConstantOfShape([256, 512]), as the onnx light models
	 * make their weights (past ir/eval.c's 65536 elements: inference leaves
	 * it to run, as it does with a real model's weights): on a CPU the C backend's NAME_init fills W once,
	 * so a run costs the product alone; on a GPU profile (the CUDA backend
	 * fills it every launch) the fill is priced per run */
	int64_t dims[2] = {256, 512};
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 256));
	uint32_t f = tu_add(G, RL_OP_ConstantOfShape, "fill", 1, 1, tu_ints(G, "dims", 2, dims));
	uint32_t mm = tu_add(G, RL_OP_MatMul, "mm", 1, 2, x, G->nodes[f].out[0]);
	G->values[G->nodes[f].out[0]].flags &= ~(unsigned)RL_VAL_OUTPUT;
	tu_infer(G);
	cr_assert(!rl_value_is_const(G, G->nodes[f].out[0]));
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	struct rl_cost_total t;
	rl_cost_graph(G, &m, &t);
	cr_expect(G->nodes[f].cost.at_init);
	cr_expect_eq(G->nodes[f].cost.time_s, 0);
	cr_expect_eq(t.init_nodes, 1);
	TU_EQ(t.init_bytes, 4.0 * 256 * 512);
	cr_expect_eq(t.nodes, 1);
	TU_EQ(t.time_s, G->nodes[mm].cost.time_s);
	struct rl_kernels ks;
	cr_assert(rl_cost_kernels(G, &m, NULL, &ks));
	cr_expect_eq(ks.nk, 1);
	cr_expect_eq(ks.of[f], -1);
	cr_expect_eq(ks.t.init_nodes, 1);
	rl_kernels_free(&ks);
	load_machine("h100", &m);
	rl_cost_graph(G, &m, &t);
	cr_expect(!G->nodes[f].cost.at_init);
	cr_expect_gt(G->nodes[f].cost.time_s, 0);
	cr_expect_eq(t.init_nodes, 0);
	cr_expect_eq(t.nodes, 2);
}

/* ---- kernels: fused groups priced as they run ------------------------------ */

/* Value v is an intermediate: not a graph output. */
static void internal(uint32_t node)
{
	uint32_t v = G->nodes[node].out[0];
	G->values[v].flags &= ~(unsigned)RL_VAL_OUTPUT;
	uint32_t k = 0;
	for (uint32_t i = 0; i < G->noutputs; i++)
		if (G->outputs[i] != v)
			G->outputs[k++] = G->outputs[i];
	G->noutputs = k;
}

Test(cost, kernel_elementwise_group_one_pass)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 1024));
	uint32_t a = tu_add(G, RL_OP_Relu, "a", 1, 1, x);
	uint32_t b = tu_add(G, RL_OP_Neg, "b", 1, 1, G->nodes[a].out[0]);
	uint32_t c = tu_add(G, RL_OP_Exp, "c", 1, 1, G->nodes[b].out[0]);
	internal(a);
	internal(b);
	tu_infer(G);
	G->nodes[a].group = G->nodes[b].group = G->nodes[c].group = 0;
	struct rl_kernels ks;
	cr_assert(rl_cost_kernels(G, &m, NULL, &ks));
	cr_assert_eq(ks.nk, 1);
	const struct rl_kernel *k = &ks.k[0];
	cr_assert_eq(k->n, 3);
	cr_assert_eq(k->anchor, RL_NONE);
	/* x read once, c written once; a and b never touch memory */
	TU_EQ(k->c.bytes_read, 4096);
	TU_EQ(k->c.bytes_write, 4096);
	TU_EQ(k->cost.bytes, 8192);
	TU_EQ(k->cost.flops, 1024 + 1024 + RL_FLOPS_TRANS * 1024);
	struct rl_cost want;
	rl_cost_price(&m, &k->c, RL_PREC_FP32, false, &want);
	TU_EQ(k->cost.time_s, want.time_s);
	cr_assert_eq(ks.t.nodes, 1);
	TU_EQ(ks.t.bytes, 8192);
	TU_EQ(ks.t.time_s, want.time_s);
	cr_assert(ks.of[a] == 0 && ks.of[b] == 0 && ks.of[c] == 0);
	/* the per-node view is unchanged: each node its own baseline */
	TU_EQ(G->nodes[b].cost.bytes, 8192);
	rl_kernels_free(&ks);
}

static uint32_t epilogue_graph(uint32_t *mm, uint32_t *ad, uint32_t *re)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 64));
	uint32_t w = weight("w", RL_DT_FLOAT, TU_SHAPE(2, 64, 32));
	uint32_t bias = weight("bias", RL_DT_FLOAT, TU_SHAPE(1, 32));
	*mm = tu_add(G, RL_OP_MatMul, "y", 1, 2, x, w);
	*ad = tu_add(G, RL_OP_Add, "z", 1, 2, G->nodes[*mm].out[0], bias);
	*re = tu_add(G, RL_OP_Relu, "r", 1, 1, G->nodes[*ad].out[0]);
	internal(*ad);
	return x;
}

Test(cost, kernel_epilogue_group)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	uint32_t mm, ad, re;
	epilogue_graph(&mm, &ad, &re);
	internal(mm);
	tu_infer(G);
	G->nodes[mm].group = G->nodes[ad].group = G->nodes[re].group = 3;
	struct rl_kernels ks;
	cr_assert(rl_cost_kernels(G, &m, NULL, &ks));
	cr_assert_eq(ks.nk, 1);
	const struct rl_kernel *k = &ks.k[0];
	cr_assert_eq(k->anchor, mm);
	cr_assert_eq(k->node, mm);
	cr_assert_eq(k->group, 3);
	TU_EQ(k->c.macs, 4.0 * 64 * 32);
	TU_EQ(k->cost.flops, 2.0 * 4 * 64 * 32 + 4 * 32 + 4 * 32);
	TU_EQ(k->c.bytes_read, 4.0 * (4 * 64 + 64 * 32 + 32));
	TU_EQ(k->c.weight_bytes, 4.0 * (64 * 32 + 32));
	TU_EQ(k->c.bytes_write, 4.0 * 4 * 32);
	rl_kernels_free(&ks);
}

Test(cost, kernel_group_that_cannot_run_as_one_is_priced_node_by_node)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	uint32_t mm, ad, re;
	epilogue_graph(&mm, &ad, &re); /* the product's output is also a graph output */
	tu_infer(G);
	G->nodes[mm].group = G->nodes[ad].group = G->nodes[re].group = 0;
	struct rl_kernels ks;
	cr_assert(rl_cost_kernels(G, &m, NULL, &ks));
	cr_assert_eq(ks.nk, 3);
	double t = G->nodes[mm].cost.time_s + G->nodes[ad].cost.time_s + G->nodes[re].cost.time_s;
	TU_EQ(ks.t.time_s, t);
	rl_kernels_free(&ks);
}

/* A schedule's traffic, by hand: level 0 carries 64x the main-memory bytes,
 * the middle levels 2x, main memory what the kernel reads and writes once. */
static void fake_traffic(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                         double *b)
{
	struct rl_counts c;
	rl_count_node(g, node, &c);
	double ext = c.bytes_read + c.bytes_write;
	for (int i = 0; i < m->nlevels; i++)
		b[i] = i == 0 ? 64 * ext : i == m->nlevels - 1 ? ext : 2 * ext;
}

Test(cost, kernel_priced_level_by_level)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	cr_assert_geq(m.nlevels, 2);
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 1 << 20));
	uint32_t r = tu_add(G, RL_OP_Relu, "r", 1, 1, x);
	tu_infer(G);
	struct rl_kernels ks;
	/* no schedule: main memory only, as the node */
	cr_assert(rl_cost_kernels(G, &m, fake_traffic, &ks));
	cr_assert(!ks.k[0].tiled);
	TU_EQ(ks.k[0].cost.time_s, G->nodes[r].cost.time_s);
	rl_kernels_free(&ks);
	G->nodes[r].tile.kind = RL_TILE_STRIP;
	G->nodes[r].tile.strip = 1024;
	cr_assert(rl_cost_kernels(G, &m, fake_traffic, &ks));
	const struct rl_kernel *k = &ks.k[0];
	cr_assert(k->tiled);
	double ext = 8.0 * (1 << 20), eff = m.eff_contiguous;
	const struct rl_mem_level *d = &m.level[m.nlevels - 1];
	double t_last = 4.0 * (1 << 20) / (d->read_bw * eff) + 4.0 * (1 << 20) / (d->write_bw * eff);
	double tmax = t_last;
	int lvl = m.nlevels - 1;
	for (int i = 0; i < m.nlevels - 1; i++) {
		double t = (i == 0 ? 64 : 2) * ext / (m.level[i].read_bw * eff);
		if (t > tmax) {
			tmax = t;
			lvl = i;
		}
	}
	double tc = (1 << 20) / rl_machine_peak(&m, RL_PREC_FP32, false);
	TU_EQ(k->bytes_level[0], 64 * ext);
	TU_EQ(k->cost.bytes, ext);
	TU_EQ(k->cost.time_s, fmax(tmax, tc) + m.launch_latency + m.fork_latency);
	cr_assert_eq(k->cost.bound, RL_BOUND_MEMORY);
	cr_assert_eq(k->bound_level, lvl);
	char buf[64], want[64];
	snprintf(want, sizeof(want), "memory (%s)", m.level[lvl].name);
	cr_assert_str_eq(rl_kernel_bound_str(k, &m, buf, sizeof(buf)), want);
	TU_EQ(ks.t.time_s, k->cost.time_s);
	rl_kernels_free(&ks);
}

/* A 1024^3 fp32 GEMM tiled by the tile pass on generic-cpu (three caches: the
 * A block in L2, the B panel in L3), priced from its tiles. The bytes per
 * level, by hand from the tile's fields in the BLIS loop order: C is read
 * and written once per kc block at every level; at L1 A is streamed once per
 * nr column sliver and B once per mr row sliver; A stays in L2 across the nr
 * slivers of an nc panel, so beyond L2 it streams once per nc panel; B stays
 * in L3 across the mc blocks, so main memory reads it once. */
Test(cost, kernel_tiled_gemm_bytes_per_level_by_hand)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	cr_assert_eq(m.nlevels, 4);
	const int64_t M = 1024, K = 1024, N = 1024;
	uint32_t n = big_matmul(M, K, N);
	struct rl_pass_ctx ctx;
	rl_pass_ctx_init(&ctx, &m, 2);
	cr_assert_eq(rl_pass_tile(G, &ctx), RL_OK);
	rl_pass_ctx_free(&ctx);
	const struct rl_tile *t = &G->nodes[n].tile;
	cr_assert_eq(t->kind, RL_TILE_GEMM);
	double cN = ceil((double)N / t->nr), cM = ceil((double)M / t->mr);
	double nN = ceil((double)N / t->nc), nM = ceil((double)M / t->mc);
	double nK = ceil((double)K / t->kc), MK = (double)M * K, KN = (double)K * N;
	double C = 2.0 * M * N * nK;
	double want[4] = {4 * (MK * cN + KN * cM + C), 4 * (MK * cN + KN * nM + C),
	                  4 * (MK * nN + KN * nM + C), 4 * (MK * nN + KN + C)};
	struct rl_kernels ks;
	cr_assert(rl_cost_kernels(G, &m, rl_tile_traffic, &ks));
	cr_assert_eq(ks.nk, 1);
	const struct rl_kernel *k = &ks.k[0];
	cr_assert(k->tiled);
	for (int i = 0; i < 4; i++)
		TU_EQ(k->bytes_level[i], want[i]);
	/* the slowest level or the compute roof, plus one launch */
	double ext = 4 * (MK + KN) + 4.0 * M * N, eff = m.eff_contiguous;
	const struct rl_mem_level *d = &m.level[3];
	double tl[4];
	for (int i = 0; i < 3; i++)
		tl[i] = want[i] / (m.level[i].read_bw * eff);
	tl[3] = (4 * (MK + KN) / (d->read_bw * eff) + 4.0 * M * N / (d->write_bw * eff)) *
	        want[3] / ext;
	double tm = fmax(fmax(tl[0], tl[1]), fmax(tl[2], tl[3]));
	double tc = 2.0 * M * N * K / rl_machine_peak(&m, RL_PREC_FP32, true);
	TU_EQ(k->cost.time_s, fmax(tm, tc) + m.launch_latency + m.fork_latency);
	TU_EQ(k->cost.bytes, want[3]);
	rl_kernels_free(&ks);
}

/* ---- report ------------------------------------------------------------------ */

/* A small JSON validator (RFC 8259 grammar, no semantics). */
struct js { const char *p; };
static void js_ws(struct js *j)
{
	while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')
		j->p++;
}
static bool js_value(struct js *j);
static bool js_string(struct js *j)
{
	if (*j->p != '"')
		return false;
	for (j->p++; *j->p != '"'; j->p++) {
		if ((unsigned char)*j->p < 0x20)
			return false;
		if (*j->p == '\\') {
			j->p++;
			if (*j->p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!isxdigit((unsigned char)j->p[i]))
						return false;
				j->p += 4;
			} else if (!strchr("\"\\/bfnrt", *j->p) || !*j->p) {
				return false;
			}
		}
	}
	j->p++;
	return true;
}
static bool js_number(struct js *j)
{
	const char *s = j->p;
	if (*j->p == '-')
		j->p++;
	if (!isdigit((unsigned char)*j->p))
		return false;
	if (*j->p == '0')
		j->p++;
	else
		while (isdigit((unsigned char)*j->p))
			j->p++;
	if (*j->p == '.') {
		j->p++;
		if (!isdigit((unsigned char)*j->p))
			return false;
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!isdigit((unsigned char)*j->p))
			return false;
		while (isdigit((unsigned char)*j->p))
			j->p++;
	}
	return j->p > s;
}
static bool js_value(struct js *j)
{
	js_ws(j);
	switch (*j->p) {
	case '{':
		j->p++;
		js_ws(j);
		if (*j->p == '}') {
			j->p++;
			return true;
		}
		for (;;) {
			js_ws(j);
			if (!js_string(j))
				return false;
			js_ws(j);
			if (*j->p++ != ':' || !js_value(j))
				return false;
			js_ws(j);
			if (*j->p == '}') {
				j->p++;
				return true;
			}
			if (*j->p++ != ',')
				return false;
		}
	case '[':
		j->p++;
		js_ws(j);
		if (*j->p == ']') {
			j->p++;
			return true;
		}
		for (;;) {
			if (!js_value(j))
				return false;
			js_ws(j);
			if (*j->p == ']') {
				j->p++;
				return true;
			}
			if (*j->p++ != ',')
				return false;
		}
	case '"': return js_string(j);
	case 't': return strncmp(j->p, "true", 4) == 0 && (j->p += 4);
	case 'f': return strncmp(j->p, "false", 5) == 0 && (j->p += 5);
	case 'n': return strncmp(j->p, "null", 4) == 0 && (j->p += 4);
	default: return js_number(j);
	}
}
static bool json_valid(const char *s)
{
	struct js j = {s};
	if (!js_value(&j))
		return false;
	js_ws(&j);
	return *j.p == 0;
}

/* A two-node model (Gemm with a weight, Relu), priced on h100. */
static void small_model(void)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 2, 8));
	uint32_t w = weight("w", RL_DT_FLOAT, TU_SHAPE(2, 8, 4));
	uint32_t g = tu_add(G, RL_OP_Gemm, "fc", 1, 2, x, w);
	uint32_t h = G->nodes[g].out[0];
	G->values[h].flags &= ~(unsigned)RL_VAL_OUTPUT;
	G->noutputs = 0;
	tu_add(G, RL_OP_Relu, "act<&\">", 1, 1, h);
	tu_infer(G);
}

static char *render(enum rl_report_format f, const struct rl_machine *m, size_t *len)
{
	struct rl_report_series se = {.batch = 2, .g = G};
	struct rl_report r = {.model = "m.onnx", .m = m, .series = &se, .nseries = 1};
	char *buf, err[256];
	cr_assert(rl_report_render(&r, f, &buf, len, err, sizeof(err)) == RL_OK, "%s", err);
	cr_assert_eq(strlen(buf), *len);
	return buf;
}

Test(cost, report_json_parses)
{
	struct rl_machine m;
	load_machine("h100", &m);
	small_model();
	size_t len;
	char *s = render(RL_REPORT_JSON, &m, &len);
	cr_assert(json_valid(s), "invalid JSON:\n%s", s);
	static const char *keys[] = {
		"\"machine\": {\"name\": \"h100\"", "\"balance\":", "\"nodes\": [", "\"name\": \"fc\"",
		"\"op\": \"Gemm\"", "\"flops\": 128", "\"macs\": 64", "\"bytes\":", "\"intensity\":",
		"\"bound\": \"latency\"", "\"time_s\":", "\"total\": {\"flops\":", "\"crossings\":",
		"\"sweep\":", "\"name\": \"act<&\\\">\"",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		cr_assert(strstr(s, keys[i]), "JSON lacks %s:\n%s", keys[i], s);
	free(s);
}

static int count_titled_circles(xmlNodePtr n)
{
	int k = 0;
	for (xmlNodePtr c = n->children; c; c = c->next) {
		if (c->type != XML_ELEMENT_NODE)
			continue;
		if (strcmp((const char *)c->name, "title") == 0 &&
		    strcmp((const char *)n->name, "circle") == 0)
			k++;
		k += count_titled_circles(c);
	}
	return k;
}

Test(cost, report_svg_well_formed)
{
	struct rl_machine m;
	load_machine("h100", &m);
	small_model();
	size_t len;
	char *s = render(RL_REPORT_SVG, &m, &len);
	xmlDocPtr doc = xmlReadMemory(s, (int)len, "report.svg", NULL, XML_PARSE_NONET);
	cr_assert(doc, "SVG does not parse");
	xmlNodePtr root = xmlDocGetRootElement(doc);
	cr_assert_str_eq((const char *)root->name, "svg");
	/* one point per kernel with FLOPs: a circle carrying a <title> */
	int titled = count_titled_circles(root);
	cr_assert_eq(titled, 2, "%d titled points", titled);
	xmlFreeDoc(doc);
	free(s);
}

Test(cost, report_html_and_text)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	small_model();
	size_t len;
	char *s = render(RL_REPORT_HTML, &m, &len);
	cr_assert(strstr(s, "<svg"));
	cr_assert(strstr(s, "class=\"sortable\""));
	cr_assert(strstr(s, "act&lt;&amp;&quot;&gt;"), "node name not escaped");
	free(s);
	s = render(RL_REPORT_TEXT, &m, &len);
	cr_assert(strstr(s, "fc "));
	cr_assert(strstr(s, "balance"));
	free(s);
}

Test(cost, report_write_nothing_on_error)
{
	struct rl_machine m;
	load_machine("generic-cpu", &m);
	small_model();
	struct rl_report_series se = {.batch = 0, .g = G};
	struct rl_report r = {.model = "m.onnx", .m = &m, .series = &se, .nseries = 1};
	char err[512];
	char *dir = tu_tmpdir();
	char path[1024];
	snprintf(path, sizeof(path), "%s/missing/report.json", dir);
	cr_assert(rl_report_write(&r, RL_REPORT_JSON, path, err, sizeof(err)) != RL_OK);
	struct stat st;
	cr_assert(stat(path, &st) != 0);
	snprintf(path, sizeof(path), "%s/report.svg", dir);
	cr_assert(rl_report_write(&r, RL_REPORT_SVG, path, err, sizeof(err)) == RL_OK, "%s", err);
	cr_assert(stat(path, &st) == 0 && st.st_size > 0);
	tu_rmtree(dir);
	free(dir);
}

Test(cost, report_format_names)
{
	enum rl_report_format f;
	cr_assert(rl_report_format_from_path("a/b.json", &f) && f == RL_REPORT_JSON);
	cr_assert(rl_report_format_from_path("x.svg", &f) && f == RL_REPORT_SVG);
	cr_assert(rl_report_format_from_path("x.html", &f) && f == RL_REPORT_HTML);
	cr_assert(rl_report_format_from_path("x.txt", &f) && f == RL_REPORT_TEXT);
	cr_assert(!rl_report_format_from_path("x.pdf", &f));
	cr_assert(!rl_report_format_from_path("dir.json/x", &f));
	cr_assert(!rl_report_format_parse("yaml", &f));
}

Test(cost, crossing_batch_matches_formula)
{
	/* two bindings of X [b,1024] x W [1024,1024] (weight as an input here:
	 * the formula needs the counts, weighted() needs a constant, so build
	 * it with a real constant of 4 MiB) */
	struct rl_machine m;
	load_machine("h100", &m);
	struct rl_graph *g[2];
	int64_t bs[2] = {4, 32};
	rl_graph_free(G);
	for (int k = 0; k < 2; k++) {
		G = rl_graph_new();
		uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, bs[k], 1024));
		uint32_t w = weight("w", RL_DT_FLOAT, TU_SHAPE(2, 1024, 1024));
		tu_add(G, RL_OP_MatMul, "mm", 1, 2, x, w);
		tu_infer(G);
		g[k] = G;
	}
	G = NULL;
	struct rl_report_crossing *x;
	int n = rl_report_crossings(g[0], bs[0], g[1], bs[1], &m, &x);
	cr_assert_eq(n, 1);
	/* flops = f*b with f = 2*1024*1024; bytes = w + a*b with w = 4 MiB and
	 * a = (1024 + 1024) * 4; B = peak / (bw * eff); b* = B*w / (f - B*a) */
	double f = 2.0 * 1024 * 1024, w = 4.0 * 1024 * 1024, a = 2048.0 * 4;
	double B = balance_of(&m);
	TU_EQ(x[0].f, f);
	TU_EQ(x[0].w, w);
	TU_EQ(x[0].a, a);
	cr_assert_eq(x[0].kind, RL_CROSS_AT);
	cr_assert(fabs(x[0].batch - B * w / (f - B * a)) < 1e-6 * x[0].batch, "%g vs %g",
	          x[0].batch, B * w / (f - B * a));
	free(x);
	rl_graph_free(g[0]);
	rl_graph_free(g[1]);
}

/* ---- calibrated compute ---------------------------------------------------- */

/* epyc9654 with made-up rates of the emitted code */
static void calibrate(struct rl_machine *m, double exp_rate)
{
	load_machine("epyc9654", m);
	for (int k = 0; k < RL_MATH_COUNT_; k++)
		m->calib[k] = 4e9;
	m->calib[RL_MATH_EXP] = exp_rate;
	m->calib[RL_MATH_GEMM] = 8e10;
}

Test(cost, calibrated_math_classes)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 1000));
	uint32_t e = tu_add(G, RL_OP_Exp, "e", 1, 1, x);
	uint32_t s = tu_add(G, RL_OP_Softplus, "s", 1, 1, x);
	uint32_t d = tu_add(G, RL_OP_Div, "d", 1, 2, x, x);
	uint32_t a = tu_add(G, RL_OP_Add, "a", 1, 2, x, x);
	tu_infer(G);
	struct rl_counts c = tu_count(G, e);
	TU_EQ(c.math[RL_MATH_EXP], 1000);
	TU_EQ(c.math[RL_MATH_BASIC], 0);
	c = tu_count(G, s);
	TU_EQ(c.math[RL_MATH_EXP], 1000);
	TU_EQ(c.math[RL_MATH_LOG], 1000);
	c = tu_count(G, d);
	TU_EQ(c.math[RL_MATH_DIV], 1000);
	TU_EQ(c.math[RL_MATH_BASIC], 0);
	c = tu_count(G, a);
	TU_EQ(c.math[RL_MATH_BASIC], 1000);
	TU_EQ(c.math[RL_MATH_EXP], 0);
}

Test(cost, calibrated_exp_is_compute_bound_when_slow)
{
	/* 1M floats of Exp: 8 MB moved. On the peak (8 FLOPs each at 10+
	 * TFLOP/s) it is memory-bound; at a calibrated 1e7 exp/s per core it
	 * takes 1e6 / (1e7 x cores) seconds of arithmetic and is compute-bound. */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 1 << 20));
	uint32_t e = tu_add(G, RL_OP_Exp, "e", 1, 1, x);
	tu_infer(G);
	struct rl_machine m;
	load_machine("epyc9654", &m);
	cr_assert(rl_cost_node(G, e, &m));
	cr_assert_eq(G->nodes[e].cost.bound, RL_BOUND_MEMORY);
	calibrate(&m, 1e7);
	cr_assert(rl_cost_node(G, e, &m));
	cr_assert_eq(G->nodes[e].cost.bound, RL_BOUND_COMPUTE);
	/* 1M elements split in chunks of 32768: 32 of the 96 cores work */
	TU_EQ(G->nodes[e].cost.time_s, (double)(1 << 20) / (1e7 * 32) + m.launch_latency + m.fork_latency);
	/* a fast exp leaves it memory-bound */
	calibrate(&m, 1e12);
	cr_assert(rl_cost_node(G, e, &m));
	cr_assert_eq(G->nodes[e].cost.bound, RL_BOUND_MEMORY);
}

Test(cost, calibrated_gemm_rate)
{
	uint32_t n = big_matmul(512, 512, 512);
	struct rl_machine m;
	calibrate(&m, 1e9);
	cr_assert(rl_cost_node(G, n, &m));
	double flops = 2.0 * 512 * 512 * 512;
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.math[RL_MATH_GEMM], flops);
	bool cal = false;
	TU_EQ(rl_cost_compute_s(&m, &c, 1, &cal), flops / (8e10 * m.cores));
	cr_assert(cal);
}

Test(cost, gpu_launch_mode_prices_graph_replay)
{
	/* 4096 floats of Relu on an H200: 32 KB moved in ~7 ns at HBM speed, so
	 * the fixed per-kernel cost decides. Replayed from a CUDA graph (the
	 * CUDA backend's default) it is the profile's 0.81 us (measured on an
	 * H200); launched eagerly, 4 us. Both are latency-bound and differ by
	 * exactly the two figures. */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 4096));
	uint32_t r = tu_add(G, RL_OP_Relu, "r", 1, 1, x);
	tu_infer(G);
	struct rl_machine m;
	load_machine("h200", &m);
	cr_assert_eq(m.launch_mode, RL_LAUNCH_GRAPH);
	cr_assert(rl_cost_node(G, r, &m));
	cr_assert_eq(G->nodes[r].cost.bound, RL_BOUND_LATENCY);
	double tg = G->nodes[r].cost.time_s;
	cr_assert(rl_machine_set_launch(&m, RL_LAUNCH_EAGER));
	cr_assert(rl_cost_node(G, r, &m));
	cr_assert_eq(G->nodes[r].cost.bound, RL_BOUND_LATENCY);
	double te = G->nodes[r].cost.time_s;
	TU_EQ(te - tg, 4e-6 - 0.81e-6);
	cr_assert(tg > 0.81e-6 && tg < 0.9e-6, "graph-mode time %g", tg);
}

Test(cost, small_cpu_kernels_priced_on_the_cores_they_run_on)
{
	/* The C runtime splits an elementwise loop only from 2 x 32768 elements,
	 * in chunks of at least 32768 (backends/c/emit_rt.c): on the 96-core
	 * epyc9654 an Add of 4096 floats runs on one core, of 131072 on 4, of
	 * 16M on all 96. GPUs and products are priced on every core/SM. */
	uint32_t a = tu_input(G, "p", RL_DT_FLOAT, TU_SHAPE(1, 4096));
	uint32_t b = tu_input(G, "q", RL_DT_FLOAT, TU_SHAPE(1, 131072));
	uint32_t c = tu_input(G, "r", RL_DT_FLOAT, TU_SHAPE(1, 16 << 20));
	uint32_t ya = tu_add(G, RL_OP_Relu, "ya", 1, 1, a);
	uint32_t yb = tu_add(G, RL_OP_Relu, "yb", 1, 1, b);
	uint32_t yc = tu_add(G, RL_OP_Relu, "yc", 1, 1, c);
	uint32_t mm = big_matmul(4, 64, 64);
	tu_infer(G);
	struct rl_machine m;
	load_machine("epyc9654", &m);
	struct rl_counts k;
	cr_assert(rl_count_node(G, ya, &k));
	cr_assert_eq(rl_cost_threads(&m, &k), 1);
	cr_assert(rl_count_node(G, yb, &k));
	cr_assert_eq(rl_cost_threads(&m, &k), 4);
	cr_assert(rl_count_node(G, yc, &k));
	cr_assert_eq(rl_cost_threads(&m, &k), m.cores);
	cr_assert(rl_count_node(G, mm, &k));
	cr_assert_eq(rl_cost_threads(&m, &k), m.cores);
	/* the one-core kernel: its working set (32 KiB) is L1-resident; one
	 * core's share of the chip's L1 bandwidth */
	cr_assert(rl_cost_node(G, ya, &m));
	const struct rl_mem_level *l1 = &m.level[0];
	double e = m.eff_contiguous;
	double tm = m.cores * (4096.0 * 4 / (l1->read_bw * e) + 4096.0 * 4 / (l1->write_bw * e));
	double tc = m.cores * 4096.0 / rl_machine_peak(&m, RL_PREC_FP32, false);
	TU_EQ(G->nodes[ya].cost.time_s, fmax(tm, tc) + m.launch_latency);
	struct rl_machine h;
	load_machine("h200", &h);
	cr_assert(rl_count_node(G, ya, &k));
	cr_assert_eq(rl_cost_threads(&h, &k), h.cores);
}

/* ---- kernel forms the cost model reads off the tile (issue 10) ------------- */

Test(cost, plain_product_priced_at_the_plain_rate)
{
	/* a product the tile pass left PLAIN runs the plain loop, priced at the
	 * profile's matmul_plain rate; a profile without it uses the GEMM's */
	uint32_t n = big_matmul(16, 64, 192);
	G->nodes[n].tile.kind = RL_TILE_PLAIN;
	G->nodes[n].tile.par = 1;
	struct rl_machine m;
	calibrate(&m, 1e9);
	m.calib[RL_MATH_MMPLAIN] = 2e10;
	struct rl_counts c = tu_count(G, n);
	double flops = 2.0 * 16 * 64 * 192;
	TU_EQ(c.math[RL_MATH_MMPLAIN], flops);
	TU_EQ(c.math[RL_MATH_GEMM], 0);
	TU_EQ(rl_cost_compute_s(&m, &c, 1, NULL), flops / (2e10 * m.cores));
	m.calib[RL_MATH_MMPLAIN] = 0;
	cr_assert(rl_machine_calibrated(&m), "matmul_plain is optional");
	TU_EQ(rl_cost_compute_s(&m, &c, 1, NULL), flops / (8e10 * m.cores));
}

Test(cost, gemm_tile_pads_columns_not_rows)
{
	/* N = 200 on 32 columns computes 224: work x 1.12 (hand-computed); M =
	 * 16 on a 12-row tile computes 16 rows (12 + an exact 4-row edge,
	 * emit_gemm.c cg_gemm_finish) */
	uint32_t n = big_matmul(16, 256, 200);
	struct rl_tile *t = &G->nodes[n].tile;
	t->kind = RL_TILE_GEMM;
	t->mr = 12;
	t->nr = 32;
	t->par = 1;
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.math[RL_MATH_GEMM], 2.0 * 16 * 256 * 200 * (224.0 / 200));
	TU_EQ(c.flops, 2.0 * 16 * 256 * 200); /* the useful FLOPs stay as counted */
}

Test(cost, tiled_product_priced_on_its_blocks)
{
	/* a GEMM with one block runs on one core; with three blocks on two
	 * cores the busier core runs two of them: 4/3 of an even split */
	uint32_t n = big_matmul(256, 256, 256);
	struct rl_tile *t = &G->nodes[n].tile;
	t->kind = RL_TILE_GEMM;
	t->mr = 8;
	t->nr = 32;
	struct rl_machine m;
	calibrate(&m, 1e9);
	m.cores = 2;
	t->par = 1;
	struct rl_counts c = tu_count(G, n);
	cr_assert_eq(rl_cost_threads(&m, &c), 1);
	cr_assert(rl_cost_node(G, n, &m));
	double one = G->nodes[n].cost.time_s - m.launch_latency;
	TU_EQ(one, 2.0 * 256 * 256 * 256 / 8e10);
	t->par = 3;
	c = tu_count(G, n);
	cr_assert_eq(rl_cost_threads(&m, &c), 2);
	cr_assert(rl_cost_node(G, n, &m));
	/* split: + the profile's fork/join */
	TU_EQ(G->nodes[n].cost.time_s - m.launch_latency - m.fork_latency, one * 2 / 3);
	t->par = 64;
	cr_assert(rl_cost_node(G, n, &m));
	TU_EQ(G->nodes[n].cost.time_s - m.launch_latency - m.fork_latency, one / 2);
}

/* ---- the split across threads, as rl_parallel_for runs it (issue 10) ------- */

Test(cost, split_share_replays_the_runtime)
{
	int used = 0;
	/* 3 equal chunks on 2 threads: one thread runs two, 2/3 of the work */
	TU_EQ(rl_split_share(3, 3, 2, &used), 2.0 / 3);
	cr_assert_eq(used, 2);
	TU_EQ(rl_split_share(8, 8, 2, &used), 0.5);
	cr_assert_eq(used, 2);
	/* one chunk: the caller alone */
	TU_EQ(rl_split_share(8, 1, 2, &used), 1);
	cr_assert_eq(used, 1);
	/* 8 chunks on 16 threads: 8 work, each 1/8 */
	TU_EQ(rl_split_share(8, 8, 16, &used), 1.0 / 8);
	cr_assert_eq(used, 8);
	/* no cap but the runtime's 4 per thread: 100 iterations on 2 threads are
	 * 8 chunks of 12, 13, 12, 13, ...; each thread runs its own four: 50 and
	 * 50 (claimed in turn as the threads came free, 48 and 52) */
	TU_EQ(rl_split_share(100, 0, 2, &used), 0.5);
	/* 10 in 8 chunks, 1,1,1,2 | 1,1,1,2: 5 and 5 (in turn: 6 and 4) */
	TU_EQ(rl_split_share(10, 8, 2, &used), 0.5);
	/* 11 in 8 chunks, 1,1,2,1 | 1,2,1,2: thread 0 ends its own at 5, takes
	 * nothing (thread 1 has started its last), thread 1 ends at 6 */
	TU_EQ(rl_split_share(11, 8, 2, &used), 6.0 / 11);
	/* 5 in 5 chunks on 2 threads: own ranges 0-1 and 2-4; thread 0, done at
	 * 2, takes chunk 4 from the back while thread 1 runs chunk 3: 3 and 2 */
	TU_EQ(rl_split_share(5, 5, 2, &used), 3.0 / 5);
	/* 7 in 7 chunks on 3 threads: own 0-1, 2-3, 4-6; at 2 thread 0 takes 6,
	 * thread 1 has only its own: 3, 2, 2 */
	TU_EQ(rl_split_share(7, 7, 3, &used), 3.0 / 7);
	cr_assert_eq(used, 3);
	/* 5 in 3 chunks (1, 2, 2) on 2 threads: thread 1 claims chunk 1 as it
	 * starts and leaves chunk 2 to whoever is free first: thread 0, done
	 * with chunk 0 at 1, ends at 3 as thread 1 does (had thread 1 claimed
	 * its whole share at once: 4) */
	TU_EQ(rl_split_share(5, 3, 2, &used), 3.0 / 5);
	/* one thread: everything */
	TU_EQ(rl_split_share(100, 0, 1, &used), 1);
	cr_assert_eq(used, 1);
}

Test(cost, conv_priced_on_its_chunks)
{
	/* 1x1 16->12 on 32x32: 196608 multiply-adds = 3 chunks of 65536. On two
	 * threads one thread runs two of them: 2/3 of the one-thread time, not
	 * 1/2, plus the fork/join (hand-computed: 393216 FLOP at 8e10 FLOP/s per
	 * core = 4.9152 us on one thread, 3.2768 us on two, + 1 us) */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 16, 32, 32));
	uint32_t w = weight("w", RL_DT_FLOAT, TU_SHAPE(4, 12, 16, 1, 1));
	uint32_t n = tu_add(G, RL_OP_Conv, "y", 1, 2, x, w);
	tu_infer(G);
	struct rl_machine m;
	calibrate(&m, 1e9);
	m.cores = 2;
	m.fork_latency = 1e-6;
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.macs, 196608);
	TU_EQ(c.par_tasks, 3);
	TU_EQ(c.par_chunks, 3);
	cr_assert_eq(rl_cost_threads(&m, &c), 2);
	cr_assert(rl_cost_node(G, n, &m));
	cr_assert_eq(G->nodes[n].cost.bound, RL_BOUND_COMPUTE);
	double t2 = G->nodes[n].cost.time_s - m.launch_latency;
	TU_EQ(t2, 2 * 196608.0 / 8e10 * 2 / 3 + 1e-6);
	/* on one thread: the whole work, no fork/join */
	m.run_threads = 1;
	cr_assert(rl_cost_node(G, n, &m));
	TU_EQ(G->nodes[n].cost.time_s - m.launch_latency, 2 * 196608.0 / 8e10);
	/* the tile pass's record wins over the rule: one chunk, the caller alone */
	m.run_threads = 0;
	G->nodes[n].tile.chunks = 1;
	c = tu_count(G, n);
	cr_assert_eq(rl_cost_threads(&m, &c), 1);
	cr_assert(rl_cost_node(G, n, &m));
	TU_EQ(G->nodes[n].cost.time_s - m.launch_latency, 2 * 196608.0 / 8e10);
}

Test(cost, elementwise_split_in_uneven_chunks)
{
	/* Relu over 3 x 32768 floats: three chunks of 32768; on two threads the
	 * slower runs two (2/3 of the one-thread time), on four, three threads
	 * work, one chunk each */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(1, 3 * 32768));
	uint32_t r = tu_add(G, RL_OP_Relu, "r", 1, 1, x);
	tu_infer(G);
	struct rl_machine m;
	calibrate(&m, 1e9);
	m.cores = 4;
	m.fork_latency = 0;
	struct rl_counts c = tu_count(G, r);
	cr_assert_eq(rl_cost_threads(&m, &c), 3);
	m.run_threads = 2;
	cr_assert_eq(rl_cost_threads(&m, &c), 2);
	int used;
	TU_EQ(rl_split_share(c.par_elems, 3, 2, &used), 2.0 / 3);
}

Test(cost, row_kernels_pay_per_row)
{
	/* Softmax over 64 rows of 16 and LayerNorm over 16 rows of 64: one ROW
	 * evaluation per row; a profile without the rate prices rows as free */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(2, 64, 16));
	uint32_t s = tu_add(G, RL_OP_Softmax, "s", 1, 1, x);
	uint32_t z = tu_input(G, "z", RL_DT_FLOAT, TU_SHAPE(2, 16, 64));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(1, 64));
	uint32_t l = tu_add(G, RL_OP_LayerNormalization, "l", 1, 2, z, w);
	tu_infer(G);
	struct rl_counts c = tu_count(G, s);
	TU_EQ(c.math[RL_MATH_ROW], 64);
	TU_EQ(c.math[RL_MATH_EXP], 64 * 16);
	c = tu_count(G, l);
	TU_EQ(c.math[RL_MATH_ROW], 16);
	struct rl_machine m;
	calibrate(&m, 1e9);
	m.calib[RL_MATH_ROW] = 0;
	double t0 = rl_cost_compute_s(&m, &c, 1, NULL);
	m.calib[RL_MATH_ROW] = 1e7;
	TU_EQ(rl_cost_compute_s(&m, &c, 1, NULL) - t0, 16 / (1e7 * m.cores));
}
