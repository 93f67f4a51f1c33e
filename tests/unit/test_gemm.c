/*
 * test_gemm.c - the packed GEMM / streaming GEMV paths of the C backend
 * (backends/c/emit_gemm.c and their use in emit_matmul.c).
 *
 * Each case is a one-node graph (MatMul or Gemm, fp32) whose shape selects
 * one path: packed GEMM with a constant B (packed at init, in place over the
 * side file or into its own buffer), with B computed at run time (batched),
 * GEMV over rows of B (N x K) or over packed panels (K x N), with alpha,
 * beta and C, transposes, and edges in M, N and K. Constants go to a side
 * file (weights_max 0) so in-place packing is exercised. The generated C must
 * compile with -std=c11 -Wall -Wextra -Werror -pedantic; a small main runs
 * it at 1 and 2 threads (results must be bit-identical), frees and inits it
 * again (packing must be redone from the reloaded weights), and writes the
 * output; the test compares with a double-precision product. The same is
 * done with -DRL_NO_INTRIN (the portable kernels every other compiler and
 * architecture gets). The block planner and byte-identical output are
 * checked on their own.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "testutil.h"

/* deterministic values in [-1, 1) */
static float val(uint32_t i, uint32_t salt)
{
	uint32_t x = i * 2654435761u + salt * 40503u;
	x ^= x >> 13;
	x *= 0x5bd1e995u;
	x ^= x >> 15;
	return (float)(x % 2001u) / 1000.0f - 1.0f;
}

static float *fill(struct rl_graph *g, int64_t n, uint32_t salt)
{
	float *p = rl_arena_alloc(g, sizeof(float) * (size_t)(n ? n : 1));
	for (int64_t i = 0; i < n; i++)
		p[i] = val((uint32_t)i, salt);
	return p;
}

struct gcase {
	const char *name;
	bool gemm;            /* Gemm, else MatMul */
	int ra, rb;           /* ranks of A and B */
	int64_t da[3], db[3]; /* dims */
	bool b_const;
	bool trans_a, trans_b;
	double alpha, beta;
	bool bias;            /* Gemm C of shape [N] */
};

/* Reference in double: Y = alpha A' B' + beta C, batch dims equal or B 2-D. */
static double *reference(const struct gcase *c, const float *a, const float *b, const float *cv,
                         int64_t *ny)
{
	int64_t batch = 1, M, K, N;
	if (c->gemm) {
		M = c->trans_a ? c->da[1] : c->da[0];
		K = c->trans_a ? c->da[0] : c->da[1];
		N = c->trans_b ? c->db[0] : c->db[1];
	} else {
		for (int i = 0; i < c->ra - 2; i++)
			batch *= c->da[i];
		M = c->ra >= 2 ? c->da[c->ra - 2] : 1;
		K = c->da[c->ra - 1];
		N = c->db[c->rb - 1];
	}
	double *y = calloc((size_t)(batch * M * N), sizeof(double));
	for (int64_t o = 0; o < batch; o++) {
		const float *ao = a + o * M * K, *bo = c->rb > 2 ? b + o * K * N : b;
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double s = 0;
				for (int64_t k = 0; k < K; k++) {
					double x = c->trans_a ? ao[k * M + i] : ao[i * K + k];
					double w = c->trans_b ? bo[j * K + k] : bo[k * N + j];
					s += x * w;
				}
				s *= c->gemm ? c->alpha : 1.0;
				if (c->bias)
					s += c->beta * cv[j];
				y[(o * M + i) * N + j] = s;
			}
	}
	*ny = batch * M * N;
	return y;
}

static const char main_src[] =
	"#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"m.h\"\n"
	"/* inputs from in.bin, output 0 to out.bin; 1 and 2 threads must agree\n"
	" * bit for bit, and a second init after free must give the same bytes */\n"
	"int main(int argc, char **argv)\n{\n"
	"    (void)argc;\n"
	"    void *in[M_NUM_INPUTS];\n"
	"    FILE *f = fopen(\"in.bin\", \"rb\");\n"
	"    for (int i = 0; i < M_NUM_INPUTS; i++) {\n"
	"        in[i] = malloc(m_inputs[i].nbytes);\n"
	"        if (fread(in[i], 1, m_inputs[i].nbytes, f) != m_inputs[i].nbytes) return 3;\n"
	"    }\n"
	"    fclose(f);\n"
	"    size_t ny = m_outputs[0].nbytes;\n"
	"    void *y1 = malloc(ny), *y2 = malloc(ny), *y3 = malloc(ny);\n"
	"    if (m_init(argv[1]) != 0) return 4;\n"
	"    m_set_threads(1);\n"
	"    if (m_run_v((const void *const *)in, &y1) != 0) return 5;\n"
	"    m_set_threads(2);\n"
	"    if (m_run_v((const void *const *)in, &y2) != 0) return 5;\n"
	"    m_free();\n"
	"    if (m_init(argv[1]) != 0) return 4;\n"
	"    if (m_run_v((const void *const *)in, &y3) != 0) return 5;\n"
	"    m_free();\n"
	"    if (memcmp(y1, y2, ny) != 0) { fprintf(stderr, \"1 and 2 threads differ\\n\"); return 6; }\n"
	"    if (memcmp(y1, y3, ny) != 0) { fprintf(stderr, \"second init differs\\n\"); return 7; }\n"
	"    f = fopen(\"out.bin\", \"wb\");\n"
	"    fwrite(y1, 1, ny, f);\n"
	"    fclose(f);\n"
	"    return 0;\n}\n";

/* Build the graph, emit, compile with `flags`, run, compare. */
static void run_case(const struct gcase *c, const char *flags)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = 17;
	g->path = "test_gemm";
	int64_t na = 1, nb = 1;
	for (int i = 0; i < c->ra; i++)
		na *= c->da[i];
	for (int i = 0; i < c->rb; i++)
		nb *= c->db[i];
	float *a = fill(g, na, 1), *b = fill(g, nb, 2), *cv = NULL;
	struct rl_shape s;
	rl_shape_set(&s, c->ra, c->da);
	uint32_t va = rl_graph_add_value(g, "a", RL_DT_FLOAT, &s);
	g->values[va].flags |= RL_VAL_INPUT;
	uint32_t ins[3] = {va, 0, RL_NONE};
	rl_shape_set(&s, c->rb, c->db);
	ins[1] = rl_graph_add_value(g, "b", RL_DT_FLOAT, &s);
	int nin_g = 1;
	if (c->b_const) {
		rl_value_set_data(g, ins[1], b, sizeof(float) * (size_t)nb);
	} else {
		g->values[ins[1]].flags |= RL_VAL_INPUT;
		nin_g = 2;
	}
	g->inputs = malloc(sizeof(uint32_t) * 2);
	g->inputs[0] = va;
	g->inputs[1] = ins[1];
	g->ninputs = (uint32_t)nin_g;
	int nin = 2;
	if (c->bias) {
		int64_t n = c->trans_b ? c->db[0] : c->db[1];
		cv = fill(g, n, 3);
		rl_shape_set(&s, 1, &n);
		ins[2] = rl_graph_add_value(g, "c", RL_DT_FLOAT, &s);
		rl_value_set_data(g, ins[2], cv, sizeof(float) * (size_t)n);
		nin = 3;
	}
	uint32_t y = rl_graph_add_value(g, "y", RL_DT_UNDEFINED, NULL);
	uint32_t node = rl_graph_add_node(g, c->gemm ? RL_OP_Gemm : RL_OP_MatMul, "prod", ins, nin,
	                                  &y, 1);
	if (c->gemm) {
		rl_node_add_attr(g, node, "transA", RL_ATTR_INT)->i = c->trans_a;
		rl_node_add_attr(g, node, "transB", RL_ATTR_INT)->i = c->trans_b;
		rl_node_add_attr(g, node, "alpha", RL_ATTR_FLOAT)->f = c->alpha;
		rl_node_add_attr(g, node, "beta", RL_ATTR_FLOAT)->f = c->beta;
	}
	g->values[y].flags |= RL_VAL_OUTPUT;
	g->outputs = malloc(sizeof(uint32_t));
	g->outputs[0] = y;
	g->noutputs = 1;
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s: inference failed: %s", c->name, g->err);

	char *dir = tu_tmpdir();
	char path[4200], err[1024] = "";
	snprintf(path, sizeof(path), "%s/m.c", dir);
	struct rl_cgen_opts o = {.prefix = "m", .weights_max = 0};
	cr_assert_eq(rl_emit_c(g, &o, path, err, sizeof(err)), RL_OK, "%s: %s", c->name, err);
	/* inputs */
	FILE *f;
	snprintf(path, sizeof(path), "%s/in.bin", dir);
	f = fopen(path, "wb");
	cr_assert(f);
	fwrite(a, sizeof(float), (size_t)na, f);
	if (!c->b_const)
		fwrite(b, sizeof(float), (size_t)nb, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, main_src, strlen(main_src)), 0);
	int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -pedantic -O2 %s m.c main.c"
	            " -lm -pthread -o run 2> cc.log && ./run \"$PWD/m.weights\" 2>> cc.log"
	            " || { cat cc.log >&2; exit 1; }", dir, flags);
	cr_assert_eq(rc, 0, "%s (%s): building or running in %s failed", c->name, flags, dir);

	int64_t ny;
	double *ref = reference(c, a, b, cv, &ny);
	float *got = malloc(sizeof(float) * (size_t)ny);
	snprintf(path, sizeof(path), "%s/out.bin", dir);
	f = fopen(path, "rb");
	cr_assert(f);
	cr_assert_eq(fread(got, sizeof(float), (size_t)ny, f), (size_t)ny);
	fclose(f);
	double scale = 0, worst = 0;
	for (int64_t i = 0; i < ny; i++)
		scale = fmax(scale, fabs(ref[i]));
	int64_t at = 0;
	for (int64_t i = 0; i < ny; i++)
		if (fabs(got[i] - ref[i]) > worst)
			worst = fabs(got[i] - ref[i]), at = i;
	cr_expect(worst <= 1e-5 * (scale > 1 ? scale : 1),
	          "%s (%s): max error %g at %lld (got %g, expected %g)", c->name, flags, worst,
	          (long long)at, (double)got[at], ref[at]);
	free(got);
	free(ref);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

static const struct gcase cases[] = {
	/* packed GEMM, constant B, edges in M, N and K; K spans two kc blocks */
	{"gemm_edges", false, 2, 2, {37, 300}, {300, 129}, true, false, false, 1, 1, false},
	/* batch folded into M; N % 32 == 0: B packed in place over the side file */
	{"gemm_fold_inplace", false, 3, 2, {2, 30, 70}, {70, 96}, true, false, false, 1, 1, false},
	/* batched, B at run time: packed per block into scratch */
	{"gemm_batched_rt", false, 3, 3, {3, 40, 50}, {3, 50, 70}, false, false, false, 1, 1, false},
	/* exact-height edge kernels (emit_gemm.c cg_gemm_finish): M % 6 and
	 * M % 12 are 3 and 9 here, 5 and 11 in the batched case below (with
	 * gemm_edges, gemm_batched_rt, gemm_rt_b and gemm_trans_alpha_beta: AVX2
	 * heights 1-5, AVX-512 1, 3, 4, 5, 8, 9, 11) */
	{"gemm_rows_9", false, 2, 2, {9, 400}, {400, 128}, true, false, false, 1, 1, false},
	{"gemm_rows_23_batched", false, 3, 3, {3, 23, 64}, {3, 64, 200}, false, false, false, 1, 1, false},
	/* B at run time, 2-D */
	{"gemm_rt_b", false, 2, 2, {65, 33}, {33, 200}, false, false, false, 1, 1, false},
	/* Gemm, both transposed, alpha, beta and a bias row */
	{"gemm_trans_alpha_beta", true, 2, 2, {80, 50}, {70, 80}, true, true, true, 0.5, 2.0, true},
	/* GEMV over rows of B (N x K), alpha/beta/bias, K % 16 != 0 */
	{"gemv_rows", true, 2, 2, {1, 301}, {200, 301}, true, false, true, 1.5, 0.5, true},
	/* GEMV over packed panels (K x N): two full panels and a narrow one */
	{"gemv_panels", false, 2, 2, {1, 500}, {500, 300}, true, false, false, 1, 1, false},
	/* GEMV panels, N % 128 == 0: permuted in place in the side file's memory */
	{"gemv_panels_permuted", false, 2, 2, {1, 301}, {301, 384}, true, false, false, 1, 1, false},
	/* GEMV panels, N >= 512: two panels per call, the AVX-512 kernel streams
	 * both at once; the last call a lone full panel and a narrow one */
	{"gemv_panels_pairs", false, 2, 2, {1, 97}, {97, 700}, true, false, false, 1, 1, false},
	/* 1-D A: a row */
	{"gemv_1d", false, 1, 2, {257}, {257, 130}, true, false, false, 1, 1, false},
	/* GEMV over rows, N % 4 != 0 (the last rows one at a time), K < 16: an
	 * 8-wide step and a masked tail of 5 */
	{"gemv_rows_short", true, 2, 2, {1, 13}, {1283, 13}, true, false, true, 1, 0, false},
	/* GEMV over rows, K % 16 == 8: the 8-wide step and no tail */
	{"gemv_rows_k8", true, 2, 2, {1, 24}, {700, 24}, true, false, true, 1, 0, false},
	/* too small for the runtime: the inline dot products, K 24 (their
	 * vector loop ends exactly at K with 16-byte vectors, not with 32) */
	{"dots_k24", true, 2, 2, {1, 24}, {7, 24}, true, false, true, 1, 0, false},
};

Test(gemm, runs_every_path)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], "");
}

Test(gemm, runs_portable_kernels)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], "-DRL_NO_INTRIN");
}

/* the AVX2 kernels where the CPU has AVX-512 too (there the loader picks
 * AVX-512, and nothing else would run them) */
Test(gemm, runs_avx2_kernels)
{
	if (tu_sh("grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo") != 0)
		cr_skip_test("this CPU has no AVX2+FMA");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i], "-DRL_GEMM_NO_AVX512");
}

Test(gemm, runs_with_clang)
{
	if (tu_sh("command -v clang > /dev/null") != 0)
		cr_skip_test("clang not installed");
	char *cc = getenv("CC") ? strdup(getenv("CC")) : NULL;
	setenv("CC", "clang", 1);
	run_case(&cases[0], "");
	run_case(&cases[5], "");
	if (cc) {
		setenv("CC", cc, 1);
		free(cc);
	} else {
		unsetenv("CC");
	}
}

Test(gemm, plan_blocks)
{
	struct cg_gemm_plan pl;
	struct rl_tile none;
	memset(&none, 0, sizeof(none));
	cg_gemm_plan(&none, 1024, 1024, 1024, &pl);
	cr_expect_eq(pl.kc, RL_GEMM_KC_DEFAULT);
	cr_expect_eq(pl.mc % RL_GEMM_MR_LCM, 0);
	cr_expect_eq(pl.nc % RL_GEMM_NR_LCM, 0);
	cr_expect_geq(pl.nib * pl.njb, 4, "1024^3 must give >= 2 tasks per thread on 2 threads");
	cr_expect_leq(pl.mc * pl.kc * 4, 512 * 1024, "the A block fits half of a 1 MiB L2");
	/* the tile pass's blocks are followed (rounded to the register tiles) */
	struct rl_tile t = {.kind = RL_TILE_GEMM, .mr = 6, .nr = 16, .kc = 128, .mc = 100, .nc = 500};
	cg_gemm_plan(&t, 1000, 2000, 3000, &pl);
	cr_expect_eq(pl.kc, 128);
	cr_expect(pl.mc <= 100 && pl.mc % RL_GEMM_MR_LCM == 0, "mc %lld", (long long)pl.mc);
	cr_expect_eq(pl.nc, 512);
	/* small K: one block */
	cg_gemm_plan(&none, 64, 64, 40, &pl);
	cr_expect_eq(pl.kc, 40);
	cr_expect_eq(pl.nib * pl.mc >= 64, true);
}

Test(gemm, output_is_deterministic)
{
	char *bufs[2];
	for (int r = 0; r < 2; r++) {
		struct rl_graph *g = rl_graph_new();
		g->opset = 17;
		g->path = "test_gemm";
		int64_t da[2] = {64, 128}, db[2] = {128, 96};
		struct rl_shape s;
		rl_shape_set(&s, 2, da);
		uint32_t in[2];
		in[0] = rl_graph_add_value(g, "a", RL_DT_FLOAT, &s);
		g->values[in[0]].flags |= RL_VAL_INPUT;
		g->inputs = malloc(sizeof(uint32_t));
		g->inputs[0] = in[0];
		g->ninputs = 1;
		rl_shape_set(&s, 2, db);
		in[1] = rl_graph_add_value(g, "b", RL_DT_FLOAT, &s);
		rl_value_set_data(g, in[1], fill(g, 128 * 96, 5), sizeof(float) * 128 * 96);
		uint32_t y = rl_graph_add_value(g, "y", RL_DT_UNDEFINED, NULL);
		rl_graph_add_node(g, RL_OP_MatMul, "mm", in, 2, &y, 1);
		g->values[y].flags |= RL_VAL_OUTPUT;
		g->outputs = malloc(sizeof(uint32_t));
		g->outputs[0] = y;
		g->noutputs = 1;
		cr_assert_eq(rl_graph_infer(g), RL_OK);
		char *dir = tu_tmpdir(), path[4200], err[512];
		snprintf(path, sizeof(path), "%s/m.c", dir);
		cr_assert_eq(rl_emit_c(g, NULL, path, err, sizeof(err)), RL_OK, "%s", err);
		FILE *f = fopen(path, "rb");
		bufs[r] = calloc(1, 1 << 22);
		size_t n = fread(bufs[r], 1, (1 << 22) - 1, f);
		fclose(f);
		cr_assert_gt(n, 0);
		cr_expect(strstr(bufs[r], "rl_sgemm_block") != NULL, "the packed path was not taken");
		tu_rmtree(dir);
		free(dir);
		rl_graph_free(g);
	}
	cr_expect_str_eq(bufs[0], bufs[1]);
	free(bufs[0]);
	free(bufs[1]);
}
