/*
 * test_tile.c - the tiling pass (passes/tile.c) on graphs built by hand.
 *
 * Products: the same 1024^3 MatMul gets different tiles on generic-cpu and
 * epyc9654, each inside its register file and caches; the generic-cpu tile
 * equals hand arithmetic of the BLIS analytical model; batch-1 products are
 * GEMV with enough accumulators for FMA latency; tiny ones PLAIN; Conv maps
 * to implicit GEMM; a GPU profile gets a thread-block tile for its shared
 * memory. Streaming kernels: a fused elementwise group gets one STRIP that
 * fits half of L1, Softmax whole rows, an epilogue no tile of its own. A
 * profile without the tiler's fields gets the defaults and one remark.
 * rl_tile_traffic is checked against hand-computed bytes per level.
 */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "machine.h"
#include "passes/pass.h"

#ifndef RL_SOURCE_DIR
#error "RL_SOURCE_DIR must name the source root"
#endif

static void setup(void)
{
	setenv("RLOPT_HW_DIR", RL_SOURCE_DIR "/hw", 1);
}

TestSuite(tile, .init = setup);

/* ---- graphs ------------------------------------------------------------- */

static struct rl_graph *new_graph(void)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = 17;
	g->path = "test_tile";
	return g;
}

static uint32_t input(struct rl_graph *g, const char *name, int rank, const int64_t *dims)
{
	struct rl_shape s;
	rl_shape_set(&s, rank, dims);
	uint32_t v = rl_graph_add_value(g, name, RL_DT_FLOAT, &s);
	g->values[v].flags |= RL_VAL_INPUT;
	g->inputs = realloc(g->inputs, (g->ninputs + 1) * sizeof(*g->inputs));
	g->inputs[g->ninputs++] = v;
	return v;
}

/* Node `name` with one fresh output; returns the node index. */
static uint32_t op(struct rl_graph *g, enum rl_op o, const char *name, uint32_t *y, int nin, ...)
{
	uint32_t in[8];
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, uint32_t);
	va_end(ap);
	char vn[80];
	snprintf(vn, sizeof(vn), "%s.out", name);
	*y = rl_graph_add_value(g, vn, RL_DT_UNDEFINED, NULL);
	return rl_graph_add_node(g, o, name, in, nin, y, 1);
}

static void output(struct rl_graph *g, uint32_t v)
{
	g->values[v].flags |= RL_VAL_OUTPUT;
	g->outputs = realloc(g->outputs, (g->noutputs + 1) * sizeof(*g->outputs));
	g->outputs[g->noutputs++] = v;
}

static void ints_attr(struct rl_graph *g, uint32_t node, const char *name, int n, int64_t v)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_INTS);
	a->n = n;
	a->ints = rl_arena_alloc(g, (size_t)n * sizeof(int64_t));
	for (int i = 0; i < n; i++)
		a->ints[i] = v;
}

/* Y[M, N] = A[M, K] B[K, N] (A of rank 3 [1, M, K] when rank3), node "mm". */
static struct rl_graph *matmul(int64_t M, int64_t K, int64_t N, bool rank3)
{
	struct rl_graph *g = new_graph();
	int64_t da[3] = {1, M, K}, db[2] = {K, N};
	uint32_t a = rank3 ? input(g, "a", 3, da) : input(g, "a", 2, da + 1);
	uint32_t b = input(g, "b", 2, db), y;
	op(g, RL_OP_MatMul, "mm", &y, 2, a, b);
	output(g, y);
	return g;
}

static struct rl_machine machine(const char *name)
{
	struct rl_machine m;
	char err[512];
	cr_assert(rl_machine_load(name, &m, err, sizeof(err)) == RL_OK, "%s", err);
	return m;
}

/* Infer, verify, then run `passes` on machine m (may be NULL). */
static void run(struct rl_graph *g, const struct rl_machine *m, struct rl_pass_ctx *ctx,
                const char *passes)
{
	cr_assert_eq(rl_graph_infer(g), RL_OK, "inference: %s", g->err);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "verify: %s", g->err);
	rl_pass_ctx_init(ctx, m, 2);
	cr_assert_eq(rl_pipeline_run(g, ctx, passes), RL_OK, "%s: %s", passes, g->err);
}

static uint32_t node_of(struct rl_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && strcmp(g->nodes[i].name, name) == 0)
			return i;
	cr_assert_fail("no node %s", name);
	return RL_NONE;
}

static const struct rl_tile *tile_of(struct rl_graph *g, const char *name)
{
	return &g->nodes[node_of(g, name)].tile;
}

/* Tile remarks with this verdict whose message contains text (NULL: any). */
static int remarks(const struct rl_pass_ctx *ctx, const char *verdict, const char *text)
{
	int n = 0;
	for (uint32_t i = 0; i < ctx->nremarks; i++) {
		const struct rl_remark *r = &ctx->remarks[i];
		if (strcmp(r->pass, "tile") == 0 && strcmp(r->verdict, verdict) == 0 &&
		    (!text || strstr(r->msg, text)))
			n++;
	}
	return n;
}

/* A core's share of level i (profiles give chip totals). */
static double share(const struct rl_machine *m, int i)
{
	return m->level[i].capacity / m->cores;
}

/* ---- the pipeline ------------------------------------------------------- */

Test(tile, registered_after_fuse_at_O2)
{
	int fuse = -1, tile = -1;
	for (int i = 0; rl_pipeline[i].name; i++) {
		if (strcmp(rl_pipeline[i].name, "fuse") == 0)
			fuse = i;
		if (strcmp(rl_pipeline[i].name, "tile") == 0) {
			tile = i;
			cr_assert_eq(rl_pipeline[i].min_level, 2);
		}
	}
	cr_assert(fuse >= 0 && tile == fuse + 1);
}

Test(tile, no_machine_no_tiles)
{
	struct rl_graph *g = matmul(256, 256, 256, false);
	struct rl_pass_ctx ctx;
	run(g, NULL, &ctx, "tile");
	cr_assert_eq(tile_of(g, "mm")->kind, RL_TILE_NONE);
	cr_assert_eq(remarks(&ctx, "skipped", "no machine profile"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- products ----------------------------------------------------------- */

/* The capacity constraints of the BLIS model on a CPU profile. */
static void check_gemm(const struct rl_machine *m, const struct rl_tile *t, int64_t M, int64_t N,
                       int64_t K)
{
	int vw = m->simd_bits / 32;
	cr_assert_eq(t->kind, RL_TILE_GEMM);
	cr_assert_eq(t->nr % vw, 0, "nr %d not a multiple of %d", t->nr, vw);
	/* accumulators + B loads + one broadcast fit the registers */
	cr_assert_leq(t->mr * t->nr / vw + t->nr / vw + 1, m->simd_registers);
	/* and cover FMA latency x units */
	cr_assert_geq(t->mr * t->nr / vw, m->fma_latency * m->fma_units);
	cr_assert_leq((double)(t->kc * t->nr + t->mr * t->kc) * 4, share(m, 0),
	              "B micro-panel + A sliver exceed L1");
	cr_assert_leq((double)t->mc * t->kc * 4, share(m, 1), "A block exceeds L2");
	cr_assert_leq((double)t->kc * t->nc * 4, share(m, m->nlevels - 2), "B panel exceeds LLC");
	cr_assert(t->kc >= 1 && t->kc <= K);
	cr_assert(t->mc >= t->mr && t->mc <= M && (t->mc % t->mr == 0 || t->mc == M));
	cr_assert(t->nc >= t->nr && t->nc <= N && (t->nc % t->nr == 0 || t->nc == N));
	cr_assert_geq(t->par, 1);
	/* every core has a block when the problem allows */
	cr_assert_geq(t->par, m->cores < 64 ? m->cores : 64);
}

Test(tile, matmul_1024_differs_by_profile)
{
	struct rl_machine gen = machine("generic-cpu"), epyc = machine("epyc9654");
	struct rl_tile tg, te;
	struct rl_pass_ctx ctx;
	struct rl_graph *g = matmul(1024, 1024, 1024, false);
	run(g, &gen, &ctx, "tile");
	tg = *tile_of(g, "mm");
	check_gemm(&gen, &tg, 1024, 1024, 1024);
	cr_assert_eq(remarks(&ctx, "tiled", "L1 32 KiB"), 1);
	cr_assert_eq(remarks(&ctx, "defaults", NULL), 0, "shipped profiles have every field");
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);

	g = matmul(1024, 1024, 1024, false);
	run(g, &epyc, &ctx, "tile");
	te = *tile_of(g, "mm");
	check_gemm(&epyc, &te, 1024, 1024, 1024);
	cr_assert_eq(remarks(&ctx, "tiled", "L2 1 MiB"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);

	cr_assert(tg.nr != te.nr && tg.mr != te.mr, "AVX2 and AVX-512 register tiles differ");
	cr_assert(tg.kc != te.kc || tg.mc != te.mc || tg.nc != te.nc);
}

/*
 * generic-cpu, hand arithmetic (fp32, S = 4; shares per core of 4 cores):
 *   register tile: 16 regs, nv = 2 -> mr = (16 - 2 - 1) / 2 = 6, nr = 2 x 8 = 16.
 *   kc: L1 32 KiB 8-way, w = 4 KiB; C_A = floor(7 / (1 + 16/6)) = 1;
 *       kc = 4096 / (6 x 4) = 170 -> multiple of 8: 168; B: ceil(168 x 64 / 4096)
 *       = 3 ways, 1 + 3 <= 7.
 *   mc: L2 512 KiB 8-way, w = 64 KiB; B micro-panel ceil(10752 / 65536) = 1 way;
 *       6 ways left: 6 x 65536 / (168 x 4) = 585 -> multiple of 6: 582.
 *   nc: L3 2 MiB 16-way, w = 128 KiB; A block ceil(582 x 168 x 4 / 131072) = 3
 *       ways; 12 left: 12 x 131072 / 672 = 2340 -> multiple of 16: 2336 -> N: 1024.
 *   threads: ceil(1024/582) x ceil(1024/1024) = 2 blocks < 4 cores; nc is the
 *       larger, halves to 512: 4 blocks, par = 4.
 */
Test(tile, generic_cpu_tile_is_hand_arithmetic)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_pass_ctx ctx;
	struct rl_graph *g = matmul(1024, 1024, 1024, false);
	run(g, &m, &ctx, "tile");
	const struct rl_tile *t = tile_of(g, "mm");
	cr_assert_eq(t->mr, 6);
	cr_assert_eq(t->nr, 16);
	cr_assert_eq(t->kc, 168);
	cr_assert_eq(t->mc, 582);
	cr_assert_eq(t->nc, 512);
	cr_assert_eq(t->par, 4);
	cr_assert_eq(remarks(&ctx, "tiled", "mr=6 nr=16 kc=168 mc=582 nc=512 par=4"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, batch1_is_gemv_with_latency_accumulators)
{
	const char *hw[] = {"generic-cpu", "epyc9654"};
	for (int h = 0; h < 2; h++) {
		struct rl_machine m = machine(hw[h]);
		for (int rank3 = 0; rank3 < 2; rank3++) {
			struct rl_pass_ctx ctx;
			struct rl_graph *g = matmul(1, 4096, 4096, rank3);
			run(g, &m, &ctx, "tile");
			const struct rl_tile *t = tile_of(g, "mm");
			int vw = m.simd_bits / 32;
			cr_assert_eq(t->kind, RL_TILE_GEMV, "%s rank3=%d", hw[h], rank3);
			cr_assert_geq(t->accum, m.fma_latency * m.fma_units);
			cr_assert_eq(t->nr, t->accum * vw);
			cr_assert(t->kc >= 1 && t->kc <= 4096 && (double)t->kc * 4 <= share(&m, 0) / 2);
			cr_assert_eq(t->par, 4096 / t->nr);
			cr_assert_eq(remarks(&ctx, "tiled", "GEMV"), 1);
			rl_pass_ctx_free(&ctx);
			rl_graph_free(g);
		}
	}
}

Test(tile, tiny_matmul_is_plain)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_pass_ctx ctx;
	struct rl_graph *g = matmul(4, 4, 4, false);
	run(g, &m, &ctx, "tile");
	cr_assert_eq(tile_of(g, "mm")->kind, RL_TILE_PLAIN);
	cr_assert_eq(remarks(&ctx, "plain", "64^3"), 1);
	/* the plain kernel's bytes are the baseline at every level: 3 x 64 B */
	double b[RL_MAX_MEM_LEVELS];
	rl_tile_traffic(g, node_of(g, "mm"), &m, b);
	for (int i = 0; i < m.nlevels; i++)
		cr_assert_float_eq(b[i], 192.0, 1e-9, "level %d: %g", i, b[i]);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);

	/* short in M only (batch 4): still blocked over N and K, mc = M */
	g = matmul(4, 1024, 1024, false);
	run(g, &m, &ctx, "tile");
	const struct rl_tile *t = tile_of(g, "mm");
	cr_assert_eq(t->kind, RL_TILE_GEMM);
	cr_assert_eq(t->mc, 4);
	cr_assert_eq(t->mr, 6);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, conv_is_implicit_gemm)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = new_graph();
	int64_t dx[4] = {1, 64, 56, 56}, dw[4] = {128, 64, 3, 3};
	uint32_t x = input(g, "x", 4, dx), w = input(g, "w", 4, dw), y;
	uint32_t c = op(g, RL_OP_Conv, "conv", &y, 2, x, w);
	ints_attr(g, c, "pads", 4, 1);
	ints_attr(g, c, "kernel_shape", 2, 3);
	output(g, y);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	check_gemm(&m, tile_of(g, "conv"), 128, 3136, 576);
	cr_assert_eq(remarks(&ctx, "tiled", "M=128 N=3136 K=576 x1"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, conv_transpose_is_col_gemm)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = new_graph();
	int64_t dx[4] = {1, 64, 28, 28}, dw[4] = {64, 32, 2, 2};
	uint32_t x = input(g, "x", 4, dx), w = input(g, "w", 4, dw), y;
	uint32_t c = op(g, RL_OP_ConvTranspose, "up", &y, 2, x, w);
	ints_attr(g, c, "strides", 2, 2);
	ints_attr(g, c, "kernel_shape", 2, 2);
	output(g, y);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	/* col = W^T X: M = 32 x 2 x 2 output rows, N = 28 x 28 input pixels, K = 64 */
	check_gemm(&m, tile_of(g, "up"), 128, 784, 64);
	cr_assert_eq(remarks(&ctx, "tiled", "M=128 N=784 K=64 x1"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, gpu_block_tile_fits_shared_memory)
{
	struct rl_machine m = machine("h100");
	struct rl_pass_ctx ctx;
	struct rl_graph *g = matmul(1024, 1024, 1024, false);
	run(g, &m, &ctx, "tile");
	const struct rl_tile *t = tile_of(g, "mm");
	cr_assert_eq(t->kind, RL_TILE_GEMM);
	cr_assert_eq(t->mc, 128);
	cr_assert_eq(t->nc, 128);
	cr_assert_eq(t->kc, 32);
	cr_assert_eq(t->par, 64);
	cr_assert_leq(2.0 * (t->mc + t->nc) * t->kc * 4, share(&m, 0) / 2);
	cr_assert_eq(remarks(&ctx, "defaults", NULL), 0, "GPUs need no <simd>");
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- streaming kernels -------------------------------------------------- */

Test(tile, fused_group_gets_one_l1_strip)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = new_graph();
	int64_t d[2] = {1024, 1024};
	uint32_t x = input(g, "x", 2, d), a, b, y;
	op(g, RL_OP_Sigmoid, "sig", &a, 1, x);
	op(g, RL_OP_Tanh, "tanh", &b, 1, a);
	op(g, RL_OP_Mul, "mul", &y, 2, b, x);
	output(g, y);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "fuse,tile");
	cr_assert_geq(g->nodes[node_of(g, "sig")].group, 0, "fuse made no group");
	const struct rl_tile *t = tile_of(g, "sig");
	cr_assert_eq(t->kind, RL_TILE_STRIP);
	/* x, a, b, y: 16 bytes per element in the working set */
	cr_assert_leq((double)t->strip * 16, share(&m, 0));
	cr_assert_eq(t->strip % 8, 0);
	cr_assert_eq(t->par, (1024 * 1024 + t->strip - 1) / t->strip);
	cr_assert(memcmp(tile_of(g, "tanh"), t, sizeof(*t)) == 0);
	cr_assert(memcmp(tile_of(g, "mul"), t, sizeof(*t)) == 0);
	cr_assert_eq(remarks(&ctx, "tiled", "STRIP elementwise group of 3 nodes"), 1);
	/* one pass: x read, y written, 4 MiB each, at every level */
	double bl[RL_MAX_MEM_LEVELS];
	rl_tile_traffic(g, node_of(g, "tanh"), &m, bl);
	for (int i = 0; i < m.nlevels; i++)
		cr_assert_float_eq(bl[i], 8.0 * 1024 * 1024, 1e-6);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, epilogue_runs_under_the_product_tile)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = new_graph();
	int64_t da[2] = {512, 512};
	uint32_t a = input(g, "a", 2, da), b = input(g, "b", 2, da), y, r;
	op(g, RL_OP_MatMul, "mm", &y, 2, a, b);
	op(g, RL_OP_Relu, "relu", &r, 1, y);
	output(g, r);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "fuse,tile");
	cr_assert_geq(g->nodes[node_of(g, "relu")].group, 0, "no epilogue group");
	cr_assert_eq(tile_of(g, "mm")->kind, RL_TILE_GEMM);
	cr_assert_eq(tile_of(g, "relu")->kind, RL_TILE_NONE);
	cr_assert_eq(remarks(&ctx, "epilogue", "output loop of MatMul mm"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, softmax_rows_in_l1)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = new_graph();
	int64_t d[2] = {1024, 1024};
	uint32_t x = input(g, "x", 2, d), y;
	op(g, RL_OP_Softmax, "sm", &y, 1, x);
	output(g, y);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	const struct rl_tile *t = tile_of(g, "sm");
	cr_assert_eq(t->kind, RL_TILE_STRIP);
	cr_assert_eq(t->strip, 1024);
	cr_assert_eq(t->par, 1024);
	/* L1 carries 3 passes over x plus y; the rest x and y once (4 MiB each) */
	double bl[RL_MAX_MEM_LEVELS];
	rl_tile_traffic(g, node_of(g, "sm"), &m, bl);
	cr_assert_float_eq(bl[0], 16.0 * 1024 * 1024, 1e-6);
	for (int i = 1; i < m.nlevels; i++)
		cr_assert_float_eq(bl[i], 8.0 * 1024 * 1024, 1e-6);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/*
 * LayerNorm's scale and bias belong to a row's working set: the last pass
 * reads them for every row. generic-cpu has 32 KiB of L1 and 512 KiB of L2
 * per core; a block must fit half of a level.
 */
static void layernorm_traffic(int64_t R, int64_t D, int home, const double *expect_inner,
                              const double *expect_outer)
{
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = new_graph();
	int64_t dx[2] = {R, D}, dp[1] = {D};
	uint32_t x = input(g, "x", 2, dx), sc = input(g, "scale", 1, dp);
	uint32_t bi = input(g, "bias", 1, dp), y;
	op(g, RL_OP_LayerNormalization, "ln", &y, 3, x, sc, bi);
	output(g, y);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	cr_assert_eq(tile_of(g, "ln")->kind, RL_TILE_STRIP);
	double bl[RL_MAX_MEM_LEVELS];
	rl_tile_traffic(g, node_of(g, "ln"), &m, bl);
	for (int i = 0; i < m.nlevels; i++)
		cr_assert_float_eq(bl[i], i <= home ? *expect_inner : *expect_outer, 1e-6,
		                   "%lld x %lld, level %d: %g bytes", (long long)R, (long long)D, i,
		                   bl[i]);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(tile, layernorm_scale_and_bias_in_the_row_working_set)
{
	const double MiB = 1024.0 * 1024, KiB = 1024;
	/* 4096 wide: x, y, scale and bias rows are 64 KiB, more than half of L1:
	 * 3 passes over x (4 MiB), y once, scale and bias per row from L2 */
	double in1 = 3 * 4 * MiB + 4 * MiB + 256 * 32 * KiB, out1 = 8 * MiB + 32 * KiB;
	layernorm_traffic(256, 4096, 1, &in1, &out1);
	/* 512 wide: 8 KiB, L1 holds the passes; L1 serves scale and bias per row */
	double in0 = 3 * 2 * MiB + 2 * MiB + 1024 * 4 * KiB, out0 = 4 * MiB + 4 * KiB;
	layernorm_traffic(1024, 512, 0, &in0, &out0);
}

/* ---- defaults ----------------------------------------------------------- */

Test(tile, profile_without_fields_gets_defaults_and_one_remark)
{
	struct rl_machine m = machine("generic-cpu");
	m.simd_bits = m.simd_registers = m.fma_units = m.fma_latency = 0;
	for (int i = 0; i < m.nlevels; i++)
		m.level[i].line_bytes = m.level[i].ways = 0;
	struct rl_graph *g = new_graph();
	int64_t d[2] = {512, 512};
	uint32_t a = input(g, "a", 2, d), b = input(g, "b", 2, d), y1, y2;
	op(g, RL_OP_MatMul, "mm1", &y1, 2, a, b);
	op(g, RL_OP_MatMul, "mm2", &y2, 2, y1, b);
	output(g, y2);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	cr_assert_eq(remarks(&ctx, "defaults", NULL), 1);
	cr_assert_eq(remarks(&ctx, "defaults", "width_bits, registers, fma_units, "
	                                       "fma_latency_cycles, line_bytes, ways"), 1);
	const struct rl_tile *t = tile_of(g, "mm1");
	cr_assert_eq(t->kind, RL_TILE_GEMM);
	cr_assert_eq(t->mr, 6); /* 16 registers, 256-bit vectors */
	cr_assert_eq(t->nr, 16);
	/* half of each cache */
	cr_assert_leq((double)(t->kc * t->nr + t->mr * t->kc) * 4, share(&m, 0) / 2);
	cr_assert_leq((double)t->mc * t->kc * 4, share(&m, 1) / 2);
	cr_assert_eq(remarks(&ctx, "tiled", "kc: half of L1"), 2);
	rl_pass_ctx_free(&ctx);

	/* no cache level at all: tiled for the default caches, priced at memory */
	m.level[0] = m.level[m.nlevels - 1];
	m.nlevels = 1;
	run(g, &m, &ctx, "tile");
	cr_assert_eq(remarks(&ctx, "defaults", "cache levels"), 1);
	cr_assert_eq(tile_of(g, "mm1")->kind, RL_TILE_GEMM);
	double bl[RL_MAX_MEM_LEVELS];
	rl_tile_traffic(g, node_of(g, "mm1"), &m, bl);
	cr_assert_gt(bl[0], 3.0 * 512 * 512 * 4);
	cr_assert_eq(bl[1], 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- rl_tile_traffic golden --------------------------------------------- */

/*
 * M = 128, N = 96, K = 80 fp32 with the tile set by hand: mr 4, nr 8, kc 32,
 * mc 64, nc 64, on generic-cpu (L1, L2, L3, DRAM: the A block lives in L2,
 * the B panel in L3). nN = ceil(96/64) = 2, nK = ceil(80/32) = 3,
 * nM = ceil(128/64) = 2, cN = ceil(96/8) = 12, cM = ceil(128/4) = 32;
 * MK = 10240, KN = 7680, MN = 12288; C = 2 MN nK = 73728 at every level.
 *   L1:   A MK cN = 122880, B KN cM = 245760: 442368 elements = 1769472 B
 *   L2:   A MK cN = 122880, B KN nM =  15360: 211968 elements =  847872 B
 *   L3:   A MK nN =  20480, B KN nM =  15360: 109568 elements =  438272 B
 *   DRAM: A MK nN =  20480, B KN    =   7680: 101888 elements =  407552 B
 */
Test(tile, traffic_golden_small_gemm)
{
	struct rl_machine m = machine("generic-cpu");
	cr_assert_eq(m.nlevels, 4);
	struct rl_graph *g = matmul(128, 80, 96, false);
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	uint32_t mm = node_of(g, "mm");
	struct rl_tile *t = &g->nodes[mm].tile;
	memset(t, 0, sizeof(*t));
	t->kind = RL_TILE_GEMM;
	t->mr = 4;
	t->nr = 8;
	t->kc = 32;
	t->mc = 64;
	t->nc = 64;
	t->par = 4;
	double b[RL_MAX_MEM_LEVELS];
	rl_tile_traffic(g, mm, &m, b);
	const double want[4] = {1769472, 847872, 438272, 407552};
	for (int i = 0; i < 4; i++)
		cr_assert_float_eq(b[i], want[i], 1e-6, "%s: %.0f, want %.0f", m.level[i].name, b[i],
		                   want[i]);
	for (int i = 4; i < RL_MAX_MEM_LEVELS; i++)
		cr_assert_eq(b[i], 0);

	/* GEMV (M = 1, K = 80, N = 96, nr 32, kc 40): cN = 3, nK = 2;
	 * B 7680 + y N (2 nK - 1) = 288 everywhere; x K cN = 240 at L1, K = 80
	 * beyond: L1 (7680 + 240 + 288) x 4 = 32832, others (7680 + 80 + 288) x 4
	 * = 32192 */
	rl_graph_free(g);
	g = matmul(1, 80, 96, false);
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	mm = node_of(g, "mm");
	t = &g->nodes[mm].tile;
	memset(t, 0, sizeof(*t));
	t->kind = RL_TILE_GEMV;
	t->mr = 1;
	t->nr = 32;
	t->kc = 40;
	t->accum = 4;
	rl_tile_traffic(g, mm, &m, b);
	cr_assert_float_eq(b[0], 32832, 1e-6, "%.0f", b[0]);
	for (int i = 1; i < 4; i++)
		cr_assert_float_eq(b[i], 32192, 1e-6, "%.0f", b[i]);
	rl_graph_free(g);
}

/* A Conv x[1, C, H, H] * w[M, C, K, K] (pads K/2), the weight constant unless
 * w_input; node "conv". */
static struct rl_graph *conv_graph(int64_t C, int64_t H, int64_t M, int64_t K, int64_t G,
                                   bool w_input)
{
	struct rl_graph *g = new_graph();
	int64_t dx[4] = {1, C, H, H}, dw[4] = {M, C / G, K, K};
	uint32_t x = input(g, "x", 4, dx), w, y;
	if (w_input) {
		w = input(g, "w", 4, dw);
	} else {
		struct rl_shape s;
		rl_shape_set(&s, 4, dw);
		w = rl_graph_add_value(g, "w", RL_DT_FLOAT, &s);
		size_t nb = sizeof(float) * (size_t)rl_shape_numel(&s);
		void *d = rl_arena_alloc(g, nb);
		memset(d, 0, nb);
		rl_value_set_data(g, w, d, nb);
	}
	uint32_t c = op(g, RL_OP_Conv, "conv", &y, 2, x, w);
	ints_attr(g, c, "pads", 4, K / 2);
	if (G > 1)
		rl_node_add_attr(g, c, "group", RL_ATTR_INT)->i = G;
	output(g, y);
	return g;
}

/* The form the tile pass picks for conv_graph(...) on machine m, and that
 * exactly one remark with `verdict` says so. */
static uint8_t conv_form_on(const struct rl_machine *m, int64_t C, int64_t H, int64_t M,
                            int64_t K, int64_t G, bool w_input, const char *verdict,
                            const char *text)
{
	struct rl_graph *g = conv_graph(C, H, M, K, G, w_input);
	struct rl_pass_ctx ctx;
	run(g, m, &ctx, "tile");
	uint8_t f = tile_of(g, "conv")->conv;
	cr_assert_eq(remarks(&ctx, verdict, text), 1, "C=%lld H=%lld M=%lld: no %s remark with '%s'",
	             (long long)C, (long long)H, (long long)M, verdict, text);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
	return f;
}

/* The same on generic-cpu. */
static uint8_t conv_form_of(int64_t C, int64_t H, int64_t M, int64_t K, int64_t G, bool w_input,
                            const char *verdict, const char *text)
{
	struct rl_machine m = machine("generic-cpu");
	return conv_form_on(&m, C, H, M, K, G, w_input, verdict, text);
}

/* The chunks a Conv is cut into across threads: the tile pass records
 * rl_split_conv_chunks of its multiply-adds (at least 65536 a chunk, at most
 * 8), which the C backend follows and the cost model prices; none on a GPU. */
static int32_t conv_chunks_of(const char *prof, int64_t C, int64_t H, int64_t M, int64_t K)
{
	struct rl_machine m = machine(prof);
	struct rl_graph *g = conv_graph(C, H, M, K, 1, false);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	int32_t ch = tile_of(g, "conv")->chunks;
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
	return ch;
}

Test(tile, conv_records_its_split)
{
	/* 1x1 16->12 on 32x32: 12 x 1024 x 16 = 196608 multiply-adds = 3 x 65536 */
	cr_assert_eq(conv_chunks_of("generic-cpu", 16, 32, 12, 1), 3);
	cr_assert_eq(rl_split_conv_chunks(196608), 3);
	cr_assert_eq(rl_split_conv_chunks(196607), 2);
	/* 3x3 64->64 on 56x56: 115.6M multiply-adds, the most chunks */
	cr_assert_eq(conv_chunks_of("generic-cpu", 64, 56, 64, 3), 8);
	/* 1x1 8->8 on 8x8: 4096, below one chunk's worth: the caller alone */
	cr_assert_eq(conv_chunks_of("generic-cpu", 8, 8, 8, 1), 1);
	cr_assert_eq(conv_chunks_of("h200", 64, 56, 64, 3), 0);
}

Test(tile, small_maps_take_channels_on_the_lanes)
{
	/* 7x7 and 14x14 maps: channels on the lanes, with both lane shares */
	cr_assert_eq(conv_form_of(512, 7, 512, 3, 1, false, "conv-chanvec",
	                          "use 100% of the 8 lanes, where band mode's pixels on the lanes "
	                          "would use 77%"), RL_CONV_CHANVEC);
	cr_assert_eq(conv_form_of(256, 14, 256, 1, 1, false, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
	/* a large map: channels on the lanes for taps across the row and K of
	 * 64 or more (band mode's shifted loads cross cache lines), band mode
	 * for a 1x1 (aligned loads) or a small K */
	cr_assert_eq(conv_form_of(64, 56, 64, 5, 1, false, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
	cr_assert_eq(conv_form_of(64, 56, 64, 1, 1, false, "conv-band", "one tap per row"),
	             RL_CONV_BAND);
	cr_assert_eq(conv_form_of(3, 64, 64, 3, 1, false, "conv-band", "below 64"), RL_CONV_BAND);
	/* the K limit: 5x5 over 2 channels (K 50) and over 3 (K 75) */
	cr_assert_eq(conv_form_of(2, 64, 64, 5, 1, false, "conv-band", "below 64"), RL_CONV_BAND);
	cr_assert_eq(conv_form_of(3, 64, 64, 5, 1, false, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
	/* grouped, run-time weights on a 7x7 plane, too few channels: band */
	cr_assert_eq(conv_form_of(64, 7, 64, 3, 2, false, "conv-band", "grouped"), RL_CONV_BAND);
	cr_assert_eq(conv_form_of(512, 7, 512, 3, 1, true, "conv-band", "not constant"),
	             RL_CONV_BAND);
	cr_assert_eq(conv_form_of(64, 11, 20, 3, 1, false, "conv-band", "no more of the lanes"),
	             RL_CONV_BAND);
	cr_assert_eq(conv_form_of(32, 27, 128, 1, 1, false, "conv-band", "below 128"),
	             RL_CONV_BAND);
	/* run-time weights are packed in every run: worth it from 128 pixels */
	cr_assert_eq(conv_form_of(256, 14, 256, 3, 1, true, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
}

/* The form on a core of twice generic-cpu's FMA rate (250 GFLOP/s fp32 a
 * core: a Sapphire Rapids-class Xeon): Winograd needs rows of 28 there, and
 * a remark says why it was declined on shorter ones. */
static uint8_t wide_fma_form(int64_t C, int64_t H, int64_t M, const char *verdict,
                             const char *text)
{
	struct rl_machine m = machine("generic-cpu");
	m.peak_vector[RL_PREC_FP32] = 250e9 * m.cores;
	return conv_form_on(&m, C, H, M, 3, 1, false, verdict, text);
}

Test(tile, winograd_needs_longer_rows_on_wide_fma_cores)
{
	cr_assert_eq(wide_fma_form(32, 16, 32, "conv-winograd-declined",
	                           "a core of 250 GFLOP/s fp32 (at least 200"), RL_CONV_CHANVEC);
	cr_assert_eq(wide_fma_form(128, 14, 128, "conv-winograd-declined", "(14 here)"),
	             RL_CONV_CHANVEC);
	cr_assert_eq(wide_fma_form(32, 27, 128, "conv-winograd-declined", "(27 here)"),
	             RL_CONV_CHANVEC);
	/* rows of 28 and more: Winograd as on any core */
	cr_assert_eq(wide_fma_form(128, 28, 128, "conv-winograd", "the 28x28 plane"), RL_CONV_WINO);
	cr_assert_eq(wide_fma_form(16, 32, 16, "conv-winograd", "the 32x32 plane"), RL_CONV_WINO);
	/* generic-cpu's own cores (96 GFLOP/s): Winograd from rows of 14 */
	cr_assert_eq(conv_form_of(32, 16, 32, 3, 1, false, "conv-winograd", "the 16x16 plane"),
	             RL_CONV_WINO);
}

Test(tile, winograd_for_3x3_stride_1)
{
	/* 3x3/1 with pads of 1, constant weights: the Winograd form, the
	 * remark giving the block (rl_conv_wino_rows: 64 + 64 channels on 28
	 * tiles a row, 16 planes of V and S at 64 bytes per channel and pitch
	 * float: 4 rows have pitch 3 x 28 + 32 = 116 -> 128, 8192 x 128 = 1 MiB
	 * over 768 KB; 3 rows 2 x 28 + 32 = 88 -> 96, 768 KB) */
	cr_assert_eq(conv_form_of(64, 56, 64, 3, 1, false, "conv-winograd",
	                          "the 56x56 plane in blocks of up to 3 rows of 28 tiles"),
	             RL_CONV_WINO);
	cr_assert_eq(conv_form_of(16, 32, 16, 3, 1, false, "conv-winograd",
	                          "blocks of up to 12 rows of 16 tiles"),
	             RL_CONV_WINO);
	/* run-time weights, grouped, a 5x5, too few channels a block (256 + 256
	 * on 14x14: 7 tiles), rows under 14: the other forms */
	cr_assert_eq(conv_form_of(64, 56, 64, 3, 1, true, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
	cr_assert_eq(conv_form_of(64, 56, 64, 3, 2, false, "conv-band", "grouped"), RL_CONV_BAND);
	cr_assert_eq(conv_form_of(256, 14, 256, 3, 1, false, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
	cr_assert_eq(conv_form_of(512, 7, 512, 3, 1, false, "conv-chanvec", "use 100%"),
	             RL_CONV_CHANVEC);
	/* the block's rows by hand: 128 + 128 channels on 28x28 (14 tiles a
	 * row, pitch (b - 1) 14 + 16): 2 rows (32 floats) x 256 x 64 = 512 KB,
	 * 3 rows (48) = 768 KB, 4 rows (64) 1 MiB */
	cr_assert_eq(rl_conv_wino_rows(128, 128, 28, 28), 3);
	cr_assert_eq(rl_conv_wino_rows(256, 256, 14, 14), 0);
	cr_assert_eq(rl_conv_wino_rows(64, 64, 13, 13), 0);  /* rows under 14 */
	cr_assert_eq(rl_conv_wino_rows(64, 62, 28, 28), 0);  /* M not a multiple of 4 */
	cr_assert_eq(rl_conv_wino_rows(4, 64, 28, 28), 0);   /* C under 8 */
	cr_assert_eq(rl_conv_wino_pitch(3, 28), 48);
	/* one row of tiles may spill L2: 128 + 128 channels on 112x112 (56
	 * tiles, pitch 64: 64 x 256 x 64 = 1 MiB, under 1.25 MiB); 512 + 512
	 * on 28x28 (pitch 16 for 14 tiles, 1 MiB) has too few tiles */
	cr_assert_eq(rl_conv_wino_rows(128, 128, 112, 112), 1);
	cr_assert_eq(rl_conv_wino_rows(128, 128, 224, 224), 0); /* 112 tiles: 1.75 MiB */
	cr_assert_eq(rl_conv_wino_rows(512, 512, 28, 28), 0);

	/* the cost model prices what the form runs: 16 -> 16 on 32x32, 16 x 16
	 * tiles in blocks of 12 rows (2 blocks, rows of exactly 16 tiles: no
	 * padded columns): the products 2 x 16 x 16 x 16 x 256 = 2097152 GEMM
	 * FLOPs, 4/9 of the direct form's 2 x 16 x 16 x 9 x 1024 = 4718592,
	 * which stay the node's FLOPs; the transforms 16 x 16 x 16 x 48 + 16 x
	 * 16 x 16 x 32 = 327680 plain FLOPs more, and the passes over V and S,
	 * 16 x (16 + 16) x 256 elements at 12 each = 1572864 */
	struct rl_machine m = machine("generic-cpu");
	struct rl_graph *g = conv_graph(16, 32, 16, 3, 1, false);
	struct rl_pass_ctx ctx;
	run(g, &m, &ctx, "tile");
	uint32_t cv = node_of(g, "conv");
	struct rl_counts c;
	cr_assert(rl_count_node(g, cv, &c));
	cr_assert_float_eq(c.macs, 2359296.0, 1e-6, "%.0f", c.macs);
	cr_assert_float_eq(c.math[RL_MATH_GEMM], 2097152.0, 1e-6, "%.0f", c.math[RL_MATH_GEMM]);
	cr_assert_float_eq(c.math[RL_MATH_BASIC], c.flops - 2 * c.macs + 327680.0 + 1572864.0, 1e-6, "%.0f",
	                   c.math[RL_MATH_BASIC]);
	g->nodes[cv].tile.conv = RL_CONV_BAND; /* the direct form: every multiply-add */
	cr_assert(rl_count_node(g, cv, &c));
	cr_assert_float_eq(c.math[RL_MATH_GEMM], 4718592.0, 1e-6, "%.0f", c.math[RL_MATH_GEMM]);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}
