/*
 * test_seq.c - golden tests of shape inference and FLOP/byte counts for the
 * recurrent and signal family (ir/fam_seq.c), and the lookup of operators
 * by domain (ai.onnx.ml, ai.onnx.preview.training).
 *
 * Every expected number is worked out by hand here from the formulas in
 * fam_seq.c's cost comment (a transcendental is RL_FLOPS_TRANS = 8, each
 * input read and each output written once unless the formula says
 * otherwise); nothing is taken from the code under test.
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

TestSuite(seq, .init = setup, .fini = teardown);

static const struct rl_shape *oshape(uint32_t n, int k)
{
	return &G->values[G->nodes[n].out[k]].shape;
}

static void want_shape(const struct rl_shape *s, int rank, const int64_t *d)
{
	cr_assert_eq(s->rank, rank, "rank %d, want %d", s->rank, rank);
	for (int i = 0; i < rank; i++)
		cr_assert_eq(s->d[i].v, d[i], "dim %d is %lld, want %lld", i, (long long)s->d[i].v,
		             (long long)d[i]);
}

Test(seq, lstm_shapes_and_counts)
{
	/* seq 5, batch 2, input 3, hidden 4: G = 4 gates */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 5, 2, 3));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(3, 1, 16, 3));
	uint32_t r = tu_input(G, "r", RL_DT_FLOAT, TU_SHAPE(3, 1, 16, 4));
	uint32_t n = tu_add(G, RL_OP_LSTM, "y", 2, 3, x, w, r);
	tu_attr_i(G, n, "hidden_size", 4);
	tu_infer(G);
	want_shape(oshape(n, 0), 4, (int64_t[]){5, 1, 2, 4});
	want_shape(oshape(n, 1), 3, (int64_t[]){1, 2, 4});
	struct rl_counts c = tu_count(G, n);
	/* D S B (2 G H (I + H) + (5 T + 12) H) = 10 (224 + 52 * 4) */
	TU_EQ(c.flops, 10 * (2 * 4 * 4 * 7 + (5 * 8 + 12) * 4));
	TU_EQ(c.macs, 10 * 4 * 4 * 7);
	TU_EQ(c.bytes_read, (30 + 48 + 64) * 4);
	TU_EQ(c.bytes_write, (40 + 8) * 4);
}

Test(seq, gru_bidirectional_batch_first)
{
	/* layout 1: X (batch 1, seq 3, input 2), two directions, hidden 2 */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 1, 3, 2));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(3, 2, 6, 2));
	uint32_t r = tu_input(G, "r", RL_DT_FLOAT, TU_SHAPE(3, 2, 6, 2));
	uint32_t n = tu_add(G, RL_OP_GRU, "y", 2, 3, x, w, r);
	tu_attr_s(G, n, "direction", "bidirectional");
	tu_attr_i(G, n, "layout", 1);
	tu_infer(G);
	want_shape(oshape(n, 0), 4, (int64_t[]){1, 3, 2, 2});
	want_shape(oshape(n, 1), 3, (int64_t[]){1, 2, 2});
	struct rl_counts c = tu_count(G, n);
	/* D S B (2 G H (I + H) + (3 T + 9) H) = 6 (48 + 33 * 2) */
	TU_EQ(c.flops, 6 * (2 * 3 * 2 * 4 + (3 * 8 + 9) * 2));
}

Test(seq, rnn_wrong_gate_rows_is_an_error)
{
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 1, 3));
	uint32_t w = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(3, 1, 8, 3)); /* 2 gates of 4 */
	uint32_t r = tu_input(G, "r", RL_DT_FLOAT, TU_SHAPE(3, 1, 4, 4));
	tu_add(G, RL_OP_RNN, "y", 1, 3, x, w, r);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "hidden_size"), "%s", G->err);
}

Test(seq, dft_onesided_constant_axis_and_length)
{
	/* x (2, 6, 1) real, axis 1 (an input at opset 20), length 8 (pads):
	 * one-sided output 8 / 2 + 1 = 5 bins of (re, im) */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 6, 1));
	uint32_t n = tu_add(G, RL_OP_DFT, "y", 1, 3, x, tu_scalar_i64(G, "len", 8),
	                    tu_scalar_i64(G, "axis", 1));
	G->nodes[n].opset = 20;
	tu_attr_i(G, n, "onesided", 1);
	tu_infer(G);
	want_shape(oshape(n, 0), 3, (int64_t[]){2, 5, 2});
	struct rl_counts c = tu_count(G, n);
	/* 8 n L per line: n = 6 inputs, L = 5 outputs, 2 lines */
	TU_EQ(c.flops, 8 * 6 * 5 * 2);
	TU_EQ(c.bytes_read, 12 * 4); /* the scalars are not charged */
	TU_EQ(c.bytes_write, 20 * 4);
}

Test(seq, dft_irfft_default_length)
{
	/* opset 17, axis attribute 1: 4 one-sided bins give 2 * (4 - 1) = 6 reals */
	uint32_t x = tu_input(G, "x", RL_DT_FLOAT, TU_SHAPE(3, 3, 4, 2));
	uint32_t n = tu_add(G, RL_OP_DFT, "y", 1, 1, x);
	G->nodes[n].opset = 17;
	tu_attr_i(G, n, "onesided", 1);
	tu_attr_i(G, n, "inverse", 1);
	tu_infer(G);
	want_shape(oshape(n, 0), 3, (int64_t[]){3, 6, 1});
}

Test(seq, stft_frames_and_det)
{
	/* 100 samples, window 16, step 8: 1 + 84 / 8 = 11 frames of 9 bins */
	uint32_t s = tu_input(G, "s", RL_DT_FLOAT, TU_SHAPE(3, 1, 100, 1));
	uint32_t win = tu_input(G, "w", RL_DT_FLOAT, TU_SHAPE(1, 16));
	uint32_t n = tu_add(G, RL_OP_STFT, "y", 1, 3, s, tu_scalar_i64(G, "step", 8), win);
	uint32_t m = tu_input(G, "m", RL_DT_FLOAT, TU_SHAPE(3, 3, 4, 4));
	uint32_t d = tu_add(G, RL_OP_Det, "det", 1, 1, m);
	tu_infer(G);
	want_shape(oshape(n, 0), 4, (int64_t[]){1, 11, 9, 2});
	want_shape(oshape(d, 0), 1, (int64_t[]){3});
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 11 * (8 * 16 * 9 + 16));
	c = tu_count(G, d);
	TU_EQ(c.flops, 3 * (2.0 / 3.0 * 64 + 16));
}

Test(seq, adam_counts_per_updated_element)
{
	/* two tensors of 3 and 4 elements: 7 updates of 12 + T */
	uint32_t in[10];
	in[0] = tu_input(G, "r", RL_DT_FLOAT, TU_SHAPE(0));
	in[1] = tu_input(G, "t", RL_DT_INT64, TU_SHAPE(0));
	const char *nm[] = {"x", "g", "v", "h"};
	for (int k = 0; k < 4; k++) {
		char a[8], b[8];
		snprintf(a, sizeof(a), "%s1", nm[k]);
		snprintf(b, sizeof(b), "%s2", nm[k]);
		in[2 + k * 2] = tu_input(G, a, RL_DT_FLOAT, TU_SHAPE(1, 3));
		in[3 + k * 2] = tu_input(G, b, RL_DT_FLOAT, TU_SHAPE(2, 2, 2));
	}
	uint32_t n = tu_add(G, RL_OP_Adam, "o", 6, 10, in[0], in[1], in[2], in[3], in[4], in[5], in[6],
	                 in[7], in[8], in[9]);
	G->nodes[n].domain = "ai.onnx.preview.training";
	G->nodes[n].opset = 1;
	tu_infer(G);
	want_shape(oshape(n, 5), 2, (int64_t[]){2, 2});
	struct rl_counts c = tu_count(G, n);
	TU_EQ(c.flops, 7 * (12 + 8));
}

Test(seq, ops_are_looked_up_by_domain)
{
	cr_assert_eq(rl_op_lookup("Binarizer"), RL_OP_COUNT_);
	cr_assert_eq(rl_op_lookup_domain("ai.onnx.ml", "Binarizer"), RL_OP_Binarizer);
	cr_assert_eq(rl_op_lookup_domain("ai.onnx.ml", "LSTM"), RL_OP_COUNT_);
	cr_assert_eq(rl_op_lookup_domain("ai.onnx", "LSTM"), RL_OP_LSTM);
	cr_assert_eq(rl_op_lookup_domain("", "TfIdfVectorizer"), RL_OP_TfIdfVectorizer);
	cr_assert_str_eq(rl_op_domain(RL_OP_Momentum), "ai.onnx.preview.training");
	cr_assert_str_eq(rl_op_domain(RL_OP_TreeEnsemble), "ai.onnx.ml");
	cr_assert_str_eq(rl_op_domain(RL_OP_DFT), "");
}
