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

TestSuite(seq, .init = setup, .fini = teardown);

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
	uint32_t in[16], o[8];
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
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(5), L(2), L(3)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(3, L(1), L(16), L(3)));
	uint32_t r = input("r", RL_DT_FLOAT, shp(3, L(1), L(16), L(4)));
	uint32_t n = add(RL_OP_LSTM, "y", 2, 3, x, w, r);
	attr_i(n, "hidden_size", 4);
	infer();
	want_shape(oshape(n, 0), 4, (int64_t[]){5, 1, 2, 4});
	want_shape(oshape(n, 1), 3, (int64_t[]){1, 2, 4});
	struct rl_counts c = count(n);
	/* D S B (2 G H (I + H) + (5 T + 12) H) = 10 (224 + 52 * 4) */
	EQ(c.flops, 10 * (2 * 4 * 4 * 7 + (5 * 8 + 12) * 4));
	EQ(c.macs, 10 * 4 * 4 * 7);
	EQ(c.bytes_read, (30 + 48 + 64) * 4);
	EQ(c.bytes_write, (40 + 8) * 4);
}

Test(seq, gru_bidirectional_batch_first)
{
	/* layout 1: X (batch 1, seq 3, input 2), two directions, hidden 2 */
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(1), L(3), L(2)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(3, L(2), L(6), L(2)));
	uint32_t r = input("r", RL_DT_FLOAT, shp(3, L(2), L(6), L(2)));
	uint32_t n = add(RL_OP_GRU, "y", 2, 3, x, w, r);
	attr_s(n, "direction", "bidirectional");
	attr_i(n, "layout", 1);
	infer();
	want_shape(oshape(n, 0), 4, (int64_t[]){1, 3, 2, 2});
	want_shape(oshape(n, 1), 3, (int64_t[]){1, 2, 2});
	struct rl_counts c = count(n);
	/* D S B (2 G H (I + H) + (3 T + 9) H) = 6 (48 + 33 * 2) */
	EQ(c.flops, 6 * (2 * 3 * 2 * 4 + (3 * 8 + 9) * 2));
}

Test(seq, rnn_wrong_gate_rows_is_an_error)
{
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(2), L(1), L(3)));
	uint32_t w = input("w", RL_DT_FLOAT, shp(3, L(1), L(8), L(3))); /* 2 gates of 4 */
	uint32_t r = input("r", RL_DT_FLOAT, shp(3, L(1), L(4), L(4)));
	add(RL_OP_RNN, "y", 1, 3, x, w, r);
	cr_assert_eq(rl_graph_infer(G), RL_ERR_SHAPE);
	cr_assert(strstr(G->err, "hidden_size"), "%s", G->err);
}

Test(seq, dft_onesided_constant_axis_and_length)
{
	/* x (2, 6, 1) real, axis 1 (an input at opset 20), length 8 (pads):
	 * one-sided output 8 / 2 + 1 = 5 bins of (re, im) */
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(2), L(6), L(1)));
	uint32_t n = add(RL_OP_DFT, "y", 1, 3, x, scalar("len", 8), scalar("axis", 1));
	G->nodes[n].opset = 20;
	attr_i(n, "onesided", 1);
	infer();
	want_shape(oshape(n, 0), 3, (int64_t[]){2, 5, 2});
	struct rl_counts c = count(n);
	/* 8 n L per line: n = 6 inputs, L = 5 outputs, 2 lines */
	EQ(c.flops, 8 * 6 * 5 * 2);
	EQ(c.bytes_read, 12 * 4); /* the scalars are not charged */
	EQ(c.bytes_write, 20 * 4);
}

Test(seq, dft_irfft_default_length)
{
	/* opset 17, axis attribute 1: 4 one-sided bins give 2 * (4 - 1) = 6 reals */
	uint32_t x = input("x", RL_DT_FLOAT, shp(3, L(3), L(4), L(2)));
	uint32_t n = add(RL_OP_DFT, "y", 1, 1, x);
	G->nodes[n].opset = 17;
	attr_i(n, "onesided", 1);
	attr_i(n, "inverse", 1);
	infer();
	want_shape(oshape(n, 0), 3, (int64_t[]){3, 6, 1});
}

Test(seq, stft_frames_and_det)
{
	/* 100 samples, window 16, step 8: 1 + 84 / 8 = 11 frames of 9 bins */
	uint32_t s = input("s", RL_DT_FLOAT, shp(3, L(1), L(100), L(1)));
	uint32_t win = input("w", RL_DT_FLOAT, shp(1, L(16)));
	uint32_t n = add(RL_OP_STFT, "y", 1, 3, s, scalar("step", 8), win);
	uint32_t m = input("m", RL_DT_FLOAT, shp(3, L(3), L(4), L(4)));
	uint32_t d = add(RL_OP_Det, "det", 1, 1, m);
	infer();
	want_shape(oshape(n, 0), 4, (int64_t[]){1, 11, 9, 2});
	want_shape(oshape(d, 0), 1, (int64_t[]){3});
	struct rl_counts c = count(n);
	EQ(c.flops, 11 * (8 * 16 * 9 + 16));
	c = count(d);
	EQ(c.flops, 3 * (2.0 / 3.0 * 64 + 16));
}

Test(seq, adam_counts_per_updated_element)
{
	/* two tensors of 3 and 4 elements: 7 updates of 12 + T */
	uint32_t in[10];
	in[0] = input("r", RL_DT_FLOAT, shp(0));
	in[1] = input("t", RL_DT_INT64, shp(0));
	const char *nm[] = {"x", "g", "v", "h"};
	for (int k = 0; k < 4; k++) {
		char a[8], b[8];
		snprintf(a, sizeof(a), "%s1", nm[k]);
		snprintf(b, sizeof(b), "%s2", nm[k]);
		in[2 + k * 2] = input(a, RL_DT_FLOAT, shp(1, L(3)));
		in[3 + k * 2] = input(b, RL_DT_FLOAT, shp(2, L(2), L(2)));
	}
	uint32_t n = add(RL_OP_Adam, "o", 6, 10, in[0], in[1], in[2], in[3], in[4], in[5], in[6],
	                 in[7], in[8], in[9]);
	G->nodes[n].domain = "ai.onnx.preview.training";
	G->nodes[n].opset = 1;
	infer();
	want_shape(oshape(n, 5), 2, (int64_t[]){2, 2});
	struct rl_counts c = count(n);
	EQ(c.flops, 7 * (12 + 8));
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
