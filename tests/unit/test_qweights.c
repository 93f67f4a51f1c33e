/*
 * test_qweights.c - packed weights (ir/qweights.c) and the quantize pass
 * (passes/quantize.c).
 *
 * Layout: every code is checked at the byte and nibble ir/qweights.h promises
 * (the kernels read exactly those); rounding, scales and zero points against
 * values computed here by hand; all-zero blocks give scale 0 and no NaN.
 * Pass: which nodes it rewrites under each mode, the bytes and predicted
 * times in the remarks against the cost model's formula on a shipped
 * profile, and the nodes it must leave alone (NaN weights, compute-bound
 * under auto, over budget).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "ir.h"
#include "machine.h"
#include "passes/pass.h"
#include "qweights.h"

static struct rl_qweight pack(enum rl_qscheme sc, int64_t K, int64_t N, int64_t bs,
                              const float *w /* [K][N] */)
{
	struct rl_qweight q;
	rl_qweight_geometry(&q, sc, K, N, bs);
	q.q = malloc((size_t)(N * q.rowbytes));
	q.s = malloc((size_t)(N * q.nb) * sizeof(float));
	q.z = sc == RL_Q_INT4_ASYM ? malloc((size_t)(N * q.nb)) : NULL;
	cr_assert(q.q && q.s);
	rl_qweight_pack(&q, w, N, 1);
	return q;
}

static void unpack_free(struct rl_qweight *q)
{
	free(q->q), free(q->s), free(q->z);
}

Test(quant, geometry)
{
	struct rl_qweight q;
	/* int8 per channel: one scale, rows padded to 64 codes */
	cr_expect_eq(rl_qweight_geometry(&q, RL_Q_INT8_CHANNEL, 100, 3, 32), 3 * (128 + 4));
	cr_expect_eq(q.nb, 1);
	cr_expect_eq(q.block, 100);
	/* int4 blocks of 32 over K = 100: 4 blocks, 128 codes = 64 bytes per row */
	cr_expect_eq(rl_qweight_geometry(&q, RL_Q_INT4_SYM, 100, 3, 32), 3 * (64 + 4 * 4));
	cr_expect_eq(q.nb, 4);
	cr_expect_eq(rl_qweight_geometry(&q, RL_Q_INT4_ASYM, 256, 2, 128), 2 * (128 + 2 * 5));
	cr_expect_eq(rl_qweight_geometry(&q, RL_Q_INT8_BLOCK, 64, 1, 64), 64 + 4);
}

Test(quant, int8_layout_and_rounding)
{
	/* one channel, K = 70: units of 32 codes, 3 of them (the last padded),
	 * one group of L = 3 lanes: code k of unit i = k / 32, j = k % 32, at
	 * byte (j / 4) * 4L + 4i + j % 4; w = k - 35 scaled so that max |w| = 35
	 * maps to 127 */
	enum { K = 70 };
	float w[K];
	for (int k = 0; k < K; k++)
		w[k] = (float)(k - 35);
	struct rl_qweight q = pack(RL_Q_INT8_CHANNEL, K, 1, 32, w);
	cr_expect_float_eq(q.s[0], 35.0f / 127.0f, 1e-7);
	for (int k = 0; k < K; k++) {
		int want = (int)lround((k - 35) * 127.0 / 35.0);
		int64_t at = (k % 32) / 4 * 12 + 4 * (k / 32) + k % 4;
		cr_expect_eq((int8_t)q.q[at], want, "k=%d", k);
		cr_expect_eq(rl_qweight_code(&q, k, 0), want);
	}
	/* padding past K is code 0 */
	cr_expect_eq(q.rowbytes, 96);
	for (int k = K; k < 96; k++)
		cr_expect_eq(q.q[(k % 32) / 4 * 12 + 4 * (k / 32) + k % 4], 0);
	float col[K];
	rl_qweight_column(&q, 0, col);
	for (int k = 0; k < K; k++)
		cr_expect(fabsf(col[k] - w[k]) <= 0.5f * q.s[0] + 1e-5f, "k=%d", k);
	unpack_free(&q);
}

Test(quant, int4_scale_search)
{
	/* one large weight among small ones: the plain range (scale 10/7) puts
	 * every small weight on code 0; shrinking the scale cannot make the
	 * squared error worse than the plain range's */
	enum { K = 32 };
	float w[K];
	for (int k = 0; k < K; k++)
		w[k] = k == 5 ? 10.0f : 0.3f * (float)((k % 7) - 3);
	struct rl_qweight q = pack(RL_Q_INT4_SYM, K, 1, 32, w);
	float col[K];
	rl_qweight_column(&q, 0, col);
	double e = 0, e0 = 0, s0 = 10.0 / 7.0;
	for (int k = 0; k < K; k++) {
		double r = s0 * (double)lround(w[k] / s0);
		e += (col[k] - w[k]) * (col[k] - w[k]);
		e0 += (r - w[k]) * (r - w[k]);
	}
	cr_expect(e <= e0 + 1e-9, "searched %g > plain %g", e, e0);
	/* the largest weight is positive: a negative scale puts it on code -8 */
	cr_expect(q.s[0] < 0 && -q.s[0] <= s0 * 72 / 64 + 1e-6 && -q.s[0] >= s0 * 50 / 64 - 1e-6,
	          "%g", q.s[0]);
	unpack_free(&q);
}

Test(quant, int4_layout_symmetric)
{
	/* two channels, K = 128 in blocks (units) of 32: one group of L = 4
	 * lanes; code k of unit i = k / 32, j = k % 32, at byte (j / 8) * 4L +
	 * 4i + j % 4, in the high nibble when j % 8 >= 4 */
	enum { K = 128, N = 2 };
	float w[K * N];
	for (int k = 0; k < K; k++)
		for (int n = 0; n < N; n++)
			w[k * N + n] = n ? (float)((k % 15) - 7) : 0.0f; /* channel 0: all zero */
	struct rl_qweight q = pack(RL_Q_INT4_SYM, K, N, 32, w);
	for (int b = 0; b < 4; b++) {
		cr_expect_eq(q.s[b], 0.0f);                   /* all-zero blocks: scale 0 */
		cr_expect_float_eq(q.s[4 + b], 1.0f, 1e-6);   /* max |w| = 7 -> scale 1 */
	}
	for (int k = 0; k < K; k++) {
		int i = k / 32, j = k % 32;
		uint8_t byte = q.q[q.rowbytes + j / 8 * 16 + 4 * i + j % 4];
		int code = j % 8 >= 4 ? byte >> 4 : byte & 15;
		cr_expect_eq(code, (k % 15) - 7 + 8, "k=%d", k);
		cr_expect_eq(rl_qweight_code(&q, k, 0), 8); /* zero point: worth 0 */
	}
	float col[K];
	rl_qweight_column(&q, 0, col);
	for (int k = 0; k < K; k++)
		cr_expect(col[k] == 0.0f && !isnan(col[k]));
	rl_qweight_column(&q, 1, col);
	for (int k = 0; k < K; k++)
		cr_expect_float_eq(col[k], (float)((k % 15) - 7), 1e-6);
	unpack_free(&q);
}

Test(quant, int4_zero_points)
{
	/* values in [0, 15]: min 0, max 15 -> scale 1, zero point 0, exact */
	enum { K = 64 };
	float w[K];
	for (int k = 0; k < K; k++)
		w[k] = (float)(k % 16);
	struct rl_qweight q = pack(RL_Q_INT4_ASYM, K, 1, 32, w);
	cr_expect_float_eq(q.s[0], 1.0f, 1e-6);
	cr_expect_eq(q.z[0], 0);
	float col[K];
	rl_qweight_column(&q, 0, col);
	for (int k = 0; k < K; k++)
		cr_expect_float_eq(col[k], w[k], 1e-6);
	/* symmetric on the same block wastes half the codes: a scale of 50/64 to
	 * 72/64 of 15/7 (the search's range), negative (15 goes to code -8), and
	 * an error the zero point avoids */
	struct rl_qweight s = pack(RL_Q_INT4_SYM, K, 1, 32, w);
	cr_expect(s.s[0] <= -15.0f / 7.0f * 50 / 64 + 1e-6f && s.s[0] >= -15.0f / 7.0f * 72 / 64 - 1e-6f,
	          "%g", s.s[0]);
	rl_qweight_column(&s, 0, col);
	double e = 0;
	for (int k = 0; k < K; k++)
		e += (col[k] - w[k]) * (col[k] - w[k]);
	cr_expect(e > 1.0, "%g", e);
	unpack_free(&q);
	unpack_free(&s);
}

/* ---- the pass ------------------------------------------------------------ */

static uint64_t rng = 7;
static float frand(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
}

/* y = x[b, K] W[K, N] (node "mm"), W filled by frand or `nan_at` */
static struct rl_graph *matmul(int64_t b, int64_t K, int64_t N, int64_t nan_at)
{
	struct rl_graph *g = rl_graph_new();
	struct rl_shape sx, sw;
	int64_t dx[2] = {b, K}, dw[2] = {K, N};
	rl_shape_set(&sx, 2, dx);
	rl_shape_set(&sw, 2, dw);
	uint32_t x = rl_graph_add_value(g, "x", RL_DT_FLOAT, &sx);
	g->values[x].flags |= RL_VAL_INPUT;
	g->inputs = malloc(sizeof(uint32_t));
	g->inputs[0] = x;
	g->ninputs = 1;
	uint32_t w = rl_graph_add_value(g, "w", RL_DT_FLOAT, &sw);
	float *d = rl_graph_own(g, (size_t)(K * N) * sizeof(float));
	for (int64_t i = 0; i < K * N; i++)
		d[i] = i == nan_at ? NAN : frand();
	rl_value_set_data(g, w, d, (size_t)(K * N) * sizeof(float));
	uint32_t y = rl_graph_add_value(g, "y", RL_DT_UNDEFINED, NULL);
	uint32_t in[2] = {x, w};
	rl_graph_add_node(g, RL_OP_MatMul, "mm", in, 2, &y, 1);
	g->values[y].flags |= RL_VAL_OUTPUT;
	g->outputs = malloc(sizeof(uint32_t));
	g->outputs[0] = y;
	g->noutputs = 1;
	g->opset = 17;
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	return g;
}

/* the profile as shipped (not shrunk below): auto_by_bound and the pricing tests */
static const char *real_profile;

static const struct rl_remark *run_with(struct rl_graph *g, struct rl_machine *m, int mode,
                                        double budget, bool scale32, struct rl_pass_ctx *ctx)
{
	char err[512];
	cr_assert(rl_machine_load(real_profile ? real_profile : "epyc9654", m, err, sizeof(err)) ==
	          RL_OK, "%s", err);
	/* the weights stream from main memory, as in a model too big for the
	 * caches: the formulas below price every byte there (ir/cost.c would
	 * otherwise price these small test weights at the cache holding them) */
	for (int i = 0; !real_profile && i < m->nlevels - 1; i++)
		m->level[i].capacity = 1024;
	rl_pass_ctx_init(ctx, m, 2);
	ctx->quantize = mode;
	ctx->quant_scale32 = scale32;
	ctx->max_rel_error = budget;
	ctx->verify = true;
	cr_assert_eq(rl_pipeline_run(g, ctx, "roofline,quantize"), RL_OK, "%s", g->err);
	for (uint32_t i = 0; i < ctx->nremarks; i++)
		if (!strcmp(ctx->remarks[i].pass, "quantize") && !strcmp(ctx->remarks[i].node, "mm"))
			return &ctx->remarks[i];
	cr_assert_fail("no quantize remark for mm");
	return NULL;
}

static const struct rl_remark *run(struct rl_graph *g, struct rl_machine *m, int mode,
                                   double budget, struct rl_pass_ctx *ctx)
{
	return run_with(g, m, mode, budget, false, ctx);
}

/* the same with --scale-type f32 */
static const struct rl_remark *run32(struct rl_graph *g, struct rl_machine *m, int mode,
                                     double budget, struct rl_pass_ctx *ctx)
{
	return run_with(g, m, mode, budget, true, ctx);
}

static uint32_t node_op(const struct rl_graph *g, enum rl_op op)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && g->nodes[i].op == op)
			return i;
	return RL_NONE;
}

Test(quantize_pass, int8_rewrites_with_bytes_and_time)
{
	/* 1 x 512 x 256: weight 524288 bytes; int8 per channel 256 * (512 + 2)
	 * (float16 scales, the default) */
	struct rl_graph *g = matmul(1, 512, 256, -1);
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	const struct rl_remark *r = run(g, &m, RL_QUANT_INT8_CHANNEL, 1e-2, &ctx);
	cr_expect_str_eq(r->verdict, "int8");
	uint32_t q = node_op(g, RL_OP_QuantMatMul);
	cr_assert_neq(q, RL_NONE);
	cr_expect_eq(node_op(g, RL_OP_MatMul), RL_NONE);
	double act = 4.0 * (512 + 256);
	/* before: the GEMV schedule tile gives it; the 1 KiB caches (above)
	 * cut kc to 128, so y is read and written again per K block:
	 * 4 (K N + K + N (2 * 4 - 1)) at main memory */
	cr_expect_float_eq(r->bytes_before, 4.0 * (512 * 256 + 512 + 256 * 7), 1e-6);
	cr_expect_float_eq(r->bytes_after, 256.0 * (512 + 2) + act, 1e-6);
	/* after, as the kernel runs: 16 groups of 16 columns, 8 KiB of codes
	 * each, so 2 tasks of 64 KiB (2 of the 96 cores: 2/96 of the
	 * bandwidth, the profile giving no one-core rate); the codes' products
	 * 4 OP each at the int8 peak on those cores; the activation row
	 * quantized first on one core (200 BASIC per element at the fp32 peak
	 * per core, the profile being uncalibrated); split across threads, it
	 * pays the profile's fork/join once */
	const struct rl_mem_level *dram = rl_machine_dram(&m);
	double wbw = dram->write_bw > 0 ? dram->write_bw : dram->read_bw;
	double e = m.eff_contiguous > 0 ? m.eff_contiguous : 1, th = 2.0 / m.cores;
	double mem = (256.0 * 514 + 2048) / (dram->read_bw * th * e) + 1024 / (wbw * th * e);
	double cmp = 4.0 * 512 * 256 / (m.peak_vector[RL_PREC_INT8] * th);
	double serial = 200.0 * 512 / (m.peak_vector[RL_PREC_FP32] / m.cores);
	cr_assert_gt(m.fork_latency, 0);
	double t1 = fmax(mem, cmp) + m.launch_latency + m.fork_latency + serial;
	cr_expect_float_eq(r->time_after, t1, 1e-12 + 1e-9 * t1);
	cr_expect(strstr(r->msg, "int8/channel"), "%s", r->msg);
	cr_expect(strstr(r->msg, "float16 scales"), "%s", r->msg);
	cr_expect_eq(g->values[rl_node_in(&g->nodes[q], 2)].dtype, RL_DT_FLOAT16);
	/* the node's own cost annotation is the quantized one */
	cr_expect_float_eq(g->nodes[q].cost.bytes, r->bytes_after, 1e-6);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(quantize_pass, int4_over_budget_stays_float)
{
	/* uniform weights: int4 error ~ 0.08, over a 1% budget */
	struct rl_graph *g = matmul(1, 256, 64, -1);
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	const struct rl_remark *r = run(g, &m, RL_QUANT_INT4, 1e-2, &ctx);
	cr_expect_str_eq(r->verdict, "float");
	cr_expect(strstr(r->msg, "no scheme within --max-rel-error"), "%s", r->msg);
	cr_expect_neq(node_op(g, RL_OP_MatMul), RL_NONE);
	cr_expect_eq(node_op(g, RL_OP_QuantMatMul), RL_NONE);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(quantize_pass, nan_weight_stays_float)
{
	struct rl_graph *g = matmul(1, 64, 32, 77);
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	const struct rl_remark *r = run(g, &m, RL_QUANT_INT8, 1e-2, &ctx);
	cr_expect_str_eq(r->verdict, "float");
	cr_expect(strstr(r->msg, "NaN or Inf"), "%s", r->msg);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(quantize_pass, auto_by_bound)
{
	/* batch 1: memory-bound, quantized (int4 meets a 20% budget);
	 * batch 512 on 512x512: intensity ~ 2*512*512*512 / (3 * 4 * 512*512) =
	 * 85 FLOP/B, above the profile's balance: compute-bound, stays float */
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	struct rl_graph *g = matmul(1, 512, 512, -1);
	real_profile = "epyc9654"; /* its caches: the GEMM at batch 512 blocks in them */
	const struct rl_remark *r = run(g, &m, RL_QUANT_AUTO, 0.2, &ctx);
	cr_expect_str_eq(r->verdict, "int4");
	cr_expect(strstr(r->msg, "memory-bound"), "%s", r->msg);
	cr_expect(r->time_after < r->time_before);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
	g = matmul(512, 512, 512, -1);
	r = run(g, &m, RL_QUANT_AUTO, 0.2, &ctx);
	cr_expect_str_eq(r->verdict, "float");
	cr_expect(strstr(r->msg, "compute-bound on epyc9654"), "%s", r->msg);
	cr_expect_neq(node_op(g, RL_OP_MatMul), RL_NONE);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(quantize_pass, int8_default_is_blocked)
{
	/* --quantize int8: blocks of 32 (one scale per 32 codes), not one per
	 * channel: 256 * (512 + 16 * 2) bytes with float16 scales, 16 * 4 with
	 * float32 (--scale-type f32) */
	struct rl_graph *g = matmul(1, 512, 256, -1);
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	const struct rl_remark *r = run(g, &m, RL_QUANT_INT8, 1e-2, &ctx);
	cr_expect_str_eq(r->verdict, "int8");
	cr_expect(strstr(r->msg, "int8/block32"), "%s", r->msg);
	cr_expect_float_eq(r->bytes_after, 256.0 * (512 + 16 * 2) + 4.0 * (512 + 256), 1e-6);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
	g = matmul(1, 512, 256, -1);
	struct rl_pass_ctx ctx2;
	r = run32(g, &m, RL_QUANT_INT8, 1e-2, &ctx2);
	cr_expect(strstr(r->msg, "float32 scales"), "%s", r->msg);
	cr_expect_float_eq(r->bytes_after, 256.0 * (512 + 16 * 4) + 4.0 * (512 + 256), 1e-6);
	uint32_t q = node_op(g, RL_OP_QuantMatMul);
	cr_assert_neq(q, RL_NONE);
	cr_expect_eq(g->values[rl_node_in(&g->nodes[q], 2)].dtype, RL_DT_FLOAT);
	rl_pass_ctx_free(&ctx2);
	rl_graph_free(g);
}

Test(quantize_pass, int4_mixed_keeps_the_output_product_int8)
{
	/* the product makes the model output: int4-mixed gives it int8 blocks
	 * even where int4 would meet the budget; int4 gives it int4 */
	struct rl_graph *g = matmul(1, 512, 256, -1);
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	const struct rl_remark *r = run(g, &m, RL_QUANT_INT4_MIXED, 0.2, &ctx);
	cr_expect_str_eq(r->verdict, "int8");
	cr_expect(strstr(r->msg, "int8/block32"), "%s", r->msg);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
	g = matmul(1, 512, 256, -1);
	r = run(g, &m, RL_QUANT_INT4, 0.2, &ctx);
	cr_expect_str_eq(r->verdict, "int4");
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/*
 * Candidates priced as their kernels run, by hand, on the shipped
 * generic-cpu profile (4 cores, fp32 peak 384 GFLOP/s, no int8 unit, not
 * calibrated; L1 128 KiB, L2 2 MiB, L3 8 MiB at 150 GB/s, DRAM 51.2 GB/s;
 * efficiency 0.8; launch 20 ns, fork/join 1 us) for y = x[1, 2048] W[2048,
 * 2048]:
 *
 * before, float: the GEMV tile gives it (vector 8, 8 accumulators: nr 64,
 * kc = K, 32 column strips on the 4 cores), 16 MiB of weights streamed
 * from DRAM: 4 (K N + K + N) = 16793600 bytes / (51.2e9 x 0.8) = 4.1e-4 s,
 * + 20 ns (the call) + 1 us (split across the cores: the fork/join);
 * compute 2 K N / 384e9 = 2.2e-5 s is below it: memory-bound.
 *
 * int8, blocks of 32, float16 scales: 2048 x (2048 + 64 x 2) = 4456448
 * bytes of codes and scales, + x and y: 4472832 bytes, which the 8 MiB L3
 * holds: 4472832 / (150e9 x 0.8) = 3.727e-5 s. No int8 unit (AVX2), so
 * the generic kernel widens each code and multiply-adds it: 4 FLOPs per
 * code, 4 K N / 384e9 = 4.369e-5 s, which binds. Before the split the row
 * is quantized on one core: 200 x 2048 / 96e9 = 4.267e-6 s. After:
 * 4.369e-5 + 4.267e-6 + 2e-8 + 1e-6 = 4.898e-5 s, 8.4x faster.
 *
 * int4, symmetric blocks of 32: 2048 x (1024 + 128) = 2359296 bytes, with
 * x and y 2375680 (past the 2 MiB L2: L3), 1.98e-5 s: the same compute
 * binds, so the same 4.898e-5 s: on a CPU without int8 dot products int4
 * buys no time over int8.
 */
static void priced_by_hand(int mode, double qbytes, const char *verdict)
{
	struct rl_graph *g = matmul(1, 2048, 2048, -1);
	struct rl_machine m;
	struct rl_pass_ctx ctx;
	real_profile = "generic-cpu";
	const struct rl_remark *r = run(g, &m, mode, 0.2, &ctx);
	cr_expect_str_eq(r->verdict, verdict);
	cr_expect_float_eq(r->bytes_before, 16793600.0, 1e-6);
	cr_expect_float_eq(r->time_before, 16793600.0 / (51.2e9 * 0.8) + 2e-8 + 1e-6, 1e-15);
	cr_expect_float_eq(r->bytes_after, qbytes + 8192 + 8192, 1e-6);
	double t = 4.0 * 2048 * 2048 / 384e9 + 200.0 * 2048 / 96e9 + 2e-8 + 1e-6;
	cr_expect_float_eq(r->time_after, t, 1e-15);
	/* the report prices the same: after fuse and tile, the QuantMatMul's
	 * kernel costs what the remark says */
	cr_assert_eq(rl_pipeline_run(g, &ctx, "fuse,tile"), RL_OK, "%s", g->err);
	struct rl_kernels ks;
	cr_assert(rl_cost_kernels(g, &m, rl_tile_traffic, &ks));
	uint32_t q = node_op(g, RL_OP_QuantMatMul);
	cr_assert_neq(q, RL_NONE);
	cr_assert_geq(ks.of[q], 0);
	cr_expect_float_eq(ks.k[ks.of[q]].cost.time_s, r->time_after, 1e-15);
	cr_expect_eq(ks.k[ks.of[q]].cost.bound, RL_BOUND_COMPUTE);
	rl_kernels_free(&ks);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
	/* and the float model's report prices the product as the remark's before */
	g = matmul(1, 2048, 2048, -1);
	rl_pass_ctx_init(&ctx, &m, 2);
	cr_assert_eq(rl_pipeline_run(g, &ctx, "roofline,fuse,tile"), RL_OK, "%s", g->err);
	cr_assert(rl_cost_kernels(g, &m, rl_tile_traffic, &ks));
	uint32_t f = node_op(g, RL_OP_MatMul);
	cr_assert_neq(f, RL_NONE);
	cr_expect_float_eq(ks.k[ks.of[f]].cost.time_s, 16793600.0 / (51.2e9 * 0.8) + 2e-8 + 1e-6, 1e-15);
	rl_kernels_free(&ks);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(quantize_pass, int8_gemv_priced_as_it_runs)
{
	priced_by_hand(RL_QUANT_INT8, 2048.0 * (2048 + 64 * 2), "int8");
}

Test(quantize_pass, int4_gemv_priced_as_it_runs)
{
	priced_by_hand(RL_QUANT_INT4, 2048.0 * (1024 + 64 * 2), "int4");
}
