/*
 * calib.c - `rlopt probe`'s second half: the speed of the code rlopt emits.
 *
 * The roofline's compute roof is the FMA peak, but a kernel of exp or tanh
 * runs at the speed of the polynomial the C backend writes for it, a
 * division at the divider's, a product at the micro-kernel's. The cost
 * model prices those classes (machine.h enum rl_math) from rates measured
 * here, on the code itself:
 *
 *   1. build one small graph per class with the IR API (eight plain ops
 *      that fuse into one kernel, or one math op, over RL_CAL_N floats that
 *      stay in L1, and each math op again followed by the eight plain ops in
 *      one fused kernel: its rate is what it adds there, a 256x512x512 product with constant
 *      weights, a gather of random rows from a table far larger than the
 *      last-level cache; optional classes: a 16x64x192 product the tile
 *      pass leaves to the plain loop, a Softmax over 1024 rows of 16 whose
 *      time less its exp and plain work is the ROW cost);
 *   2. run the -O2 pipeline and the C backend on each, exactly as `rlopt`
 *      does for a model;
 *   3. compile them with a small driver using the user's compiler (`cc -O2`
 *      unless --cc/--cflags say otherwise), one thread;
 *   4. the driver times each model's run (best of several batches, wall
 *      clock) and prints "class seconds work"; the rate is work / seconds
 *      per core.
 *   5. on a machine of several cores, the fork/join of the emitted thread
 *      pool: the generated file of a split Relu (cal_fork.c) is #included
 *      into a small source that calls its rl_parallel_for on 2 chunks per
 *      thread, each busy for RL_CAL_FORK_SPIN seconds, with every core; the
 *      time beyond 2 x RL_CAL_FORK_SPIN (the least over RL_CAL_FORK_SECONDS) is
 *      what a kernel the runtime splits pays on top of its work: the
 *      profile's <latency fork=> (the probe's own pool, which sleeps on a
 *      condition variable rather than spinning, is the fallback).
 *
 * No compiler, or a failed build, leaves the rates out (the profile is then
 * priced from its peak, and the report says so); the probe itself still
 * succeeds. Everything happens in a temporary folder removed at the end.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/c/emit.h"
#include "ir.h"
#include "machine.h"
#include "passes/pass.h"

#define RL_CAL_N 4096          /* elements of a unary op: 16 KB in, 16 KB out (L1) */
#define RL_CAL_CHAIN 8         /* plain ops in the BASIC chain */
#define RL_CAL_GM 256          /* GEMM: M x K times K x N */
#define RL_CAL_GK 512
#define RL_CAL_GN 512
#define RL_CAL_GATHER_ROWS (1 << 22) /* gather table: 4M rows of 4 floats, 64 MB */
#define RL_CAL_GATHER_IDX 65536      /* indices per run */
#define RL_CAL_PM 16           /* the plain product: 16 x 64 times 64 x 192 (under */
#define RL_CAL_PK 64           /* the tile pass's 64^3 MACs, so it stays PLAIN), */
#define RL_CAL_PN 192          /* as in the projections of a small attention block */
#define RL_CAL_ROWS 1024       /* ROW: a Softmax over 1024 rows of 16 (one vector) */
#define RL_CAL_ROWLEN 16
#define RL_CAL_FORK_N (1 << 16)   /* the split Relu whose file carries the pool */
#define RL_CAL_FORK_SPIN 5e-6     /* seconds of work per chunk */
#define RL_CAL_FORK_REPS 200        /* at least this many splits, */
#define RL_CAL_FORK_SECONDS 0.25    /* and for at least this long (a busy machine
                                     * lends a worker its core now and then) */

struct cal_case {
	const char *name;   /* file and symbol prefix */
	enum rl_math cls;
	enum rl_op op;      /* unary op; RL_OP_MatMul / RL_OP_Gather for the others */
	double lo, hi;      /* input range inside the op's domain */
	double work;        /* elements or FLOPs per run */
	bool fused;         /* the op followed by the BASIC chain, fused into one kernel */
};

static const struct cal_case cal_cases[] = {
	/* a fused chain of RL_CAL_CHAIN plain ops: register arithmetic, the
	 * loads and stores shared by all of them, as in a fused kernel */
	{"cal_basic", RL_MATH_BASIC, RL_OP_Add, -1, 1, RL_CAL_CHAIN * RL_CAL_N, false},
	{"cal_div", RL_MATH_DIV, RL_OP_Div, 0.5, 2, RL_CAL_N, false},
	{"cal_sqrt", RL_MATH_SQRT, RL_OP_Sqrt, 0.1, 4, RL_CAL_N, false},
	{"cal_exp", RL_MATH_EXP, RL_OP_Exp, -4, 4, RL_CAL_N, false},
	{"cal_log", RL_MATH_LOG, RL_OP_Log, 0.1, 4, RL_CAL_N, false},
	{"cal_tanh", RL_MATH_TANH, RL_OP_Tanh, -4, 4, RL_CAL_N, false},
	{"cal_sigmoid", RL_MATH_SIGMOID, RL_OP_Sigmoid, -4, 4, RL_CAL_N, false},
	{"cal_erf", RL_MATH_ERF, RL_OP_Erf, -3, 3, RL_CAL_N, false},
	{"cal_gemm", RL_MATH_GEMM, RL_OP_MatMul, -1, 1,
	 2.0 * RL_CAL_GM * RL_CAL_GK * RL_CAL_GN, false},
	{"cal_gather", RL_MATH_GATHER, RL_OP_Gather, 0, 0, RL_CAL_GATHER_IDX, false},
	/* optional classes */
	{"cal_mmplain", RL_MATH_MMPLAIN, RL_OP_MatMul, -1, 1,
	 2.0 * RL_CAL_PM * RL_CAL_PK * RL_CAL_PN, false},
	{"cal_row", RL_MATH_ROW, RL_OP_Softmax, -4, 4, RL_CAL_ROWS, false},
	/* the math classes again inside the BASIC chain (op first, then the
	 * chain's eight plain ops, one fused kernel): the time beyond the
	 * chain's is the op's marginal cost where fused kernels run it */
	{"cal_fdiv", RL_MATH_DIV, RL_OP_Div, 0.5, 2, RL_CAL_N, true},
	{"cal_fsqrt", RL_MATH_SQRT, RL_OP_Sqrt, 0.1, 4, RL_CAL_N, true},
	{"cal_fexp", RL_MATH_EXP, RL_OP_Exp, -4, 4, RL_CAL_N, true},
	{"cal_flog", RL_MATH_LOG, RL_OP_Log, 0.1, 4, RL_CAL_N, true},
	{"cal_ftanh", RL_MATH_TANH, RL_OP_Tanh, -4, 4, RL_CAL_N, true},
	{"cal_fsigmoid", RL_MATH_SIGMOID, RL_OP_Sigmoid, -4, 4, RL_CAL_N, true},
	{"cal_ferf", RL_MATH_ERF, RL_OP_Erf, -3, 3, RL_CAL_N, true},
};
#define RL_CAL_CASES (sizeof(cal_cases) / sizeof(cal_cases[0]))

static uint32_t cal_value(struct rl_graph *g, const char *name, enum rl_dtype dt, int rank,
                          const int64_t *dims, unsigned flags)
{
	struct rl_shape s;
	rl_shape_set(&s, rank, dims);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	g->values[v].flags |= flags;
	uint32_t **list = flags & RL_VAL_INPUT ? &g->inputs : &g->outputs;
	uint32_t *n = flags & RL_VAL_INPUT ? &g->ninputs : &g->noutputs;
	if (flags & (RL_VAL_INPUT | RL_VAL_OUTPUT)) {
		uint32_t *grown = realloc(*list, (*n + 1) * sizeof(**list));
		if (!grown)
			return RL_NONE;
		*list = grown;
		(*list)[(*n)++] = v;
	}
	return v;
}

/* The BASIC chain on x: RL_CAL_CHAIN plain ops, the last writing output y */
static void cal_chain(struct rl_graph *g, uint32_t x)
{
	static const enum rl_op chain[RL_CAL_CHAIN] = {
		RL_OP_Mul, RL_OP_Add, RL_OP_Max, RL_OP_Sub,
		RL_OP_Mul, RL_OP_Add, RL_OP_Min, RL_OP_Mul,
	};
	static const float consts[RL_CAL_CHAIN] = {1.5f, 0.25f, -0.5f, 0.125f,
	                                           0.75f, 0.5f, 2.0f, 0.5f};
	const int64_t d[1] = {RL_CAL_N}, one[1] = {1};
	for (int i = 0; i < RL_CAL_CHAIN; i++) {
		char name[16];
		uint32_t in[2];
		snprintf(name, sizeof(name), "c%d", i);
		in[0] = x;
		in[1] = cal_value(g, name, RL_DT_FLOAT, 1, one, 0);
		rl_value_set_data(g, in[1], &consts[i], sizeof(float));
		snprintf(name, sizeof(name), "t%d", i);
		x = i + 1 < RL_CAL_CHAIN ? cal_value(g, name, RL_DT_FLOAT, 1, d, 0)
		                         : cal_value(g, "y", RL_DT_FLOAT, 1, d, RL_VAL_OUTPUT);
		rl_graph_add_node(g, chain[i], name, in, 2, &x, 1);
	}
}

/* The graph of one case; NULL when out of memory. */
static struct rl_graph *cal_graph(const struct cal_case *c, float **wbuf)
{
	struct rl_graph *g = rl_graph_new();
	if (!g)
		return NULL;
	g->opset = 17;
	g->path = c->name;
	uint32_t in[2], y;
	if (c->op == RL_OP_MatMul) {
		bool plain = c->cls == RL_MATH_MMPLAIN;
		int64_t M = plain ? RL_CAL_PM : RL_CAL_GM, K = plain ? RL_CAL_PK : RL_CAL_GK,
		        N = plain ? RL_CAL_PN : RL_CAL_GN;
		const int64_t da[2] = {M, K}, db[2] = {K, N}, dy[2] = {M, N};
		size_t nb = (size_t)K * (size_t)N;
		*wbuf = malloc(nb * sizeof(float));
		if (!*wbuf) {
			rl_graph_free(g);
			return NULL;
		}
		for (size_t i = 0; i < nb; i++) /* any values: timing only */
			(*wbuf)[i] = (float)((int)(i % 17) - 8) / 64.0f;
		in[0] = cal_value(g, "a", RL_DT_FLOAT, 2, da, RL_VAL_INPUT);
		in[1] = cal_value(g, "b", RL_DT_FLOAT, 2, db, 0);
		rl_value_set_data(g, in[1], *wbuf, nb * sizeof(float));
		y = cal_value(g, "y", RL_DT_FLOAT, 2, dy, RL_VAL_OUTPUT);
		rl_graph_add_node(g, RL_OP_MatMul, "product", in, 2, &y, 1);
	} else if (c->op == RL_OP_Gather) {
		const int64_t dt[2] = {RL_CAL_GATHER_ROWS, 4}, di[1] = {RL_CAL_GATHER_IDX},
		              dy[2] = {RL_CAL_GATHER_IDX, 4};
		in[0] = cal_value(g, "table", RL_DT_FLOAT, 2, dt, RL_VAL_INPUT);
		in[1] = cal_value(g, "idx", RL_DT_INT64, 1, di, RL_VAL_INPUT);
		y = cal_value(g, "y", RL_DT_FLOAT, 2, dy, RL_VAL_OUTPUT);
		rl_graph_add_node(g, RL_OP_Gather, "gather", in, 2, &y, 1);
	} else if (c->cls == RL_MATH_BASIC || c->fused) {
		const int64_t d[1] = {RL_CAL_N};
		uint32_t x = cal_value(g, "x", RL_DT_FLOAT, 1, d, RL_VAL_INPUT);
		if (c->fused) { /* the op first, on inputs inside its domain */
			in[0] = x;
			int nin = 1;
			if (c->op == RL_OP_Div) {
				in[1] = cal_value(g, "x2", RL_DT_FLOAT, 1, d, RL_VAL_INPUT);
				nin = 2;
			}
			x = cal_value(g, "u", RL_DT_FLOAT, 1, d, 0);
			rl_graph_add_node(g, c->op, "op", in, nin, &x, 1);
		}
		cal_chain(g, x);
	} else if (c->op == RL_OP_Softmax) {
		const int64_t d[2] = {RL_CAL_ROWS, RL_CAL_ROWLEN};
		in[0] = cal_value(g, "x", RL_DT_FLOAT, 2, d, RL_VAL_INPUT);
		y = cal_value(g, "y", RL_DT_FLOAT, 2, d, RL_VAL_OUTPUT);
		rl_graph_add_node(g, c->op, "op", in, 1, &y, 1);
	} else {
		const int64_t d[1] = {RL_CAL_N};
		in[0] = cal_value(g, "x", RL_DT_FLOAT, 1, d, RL_VAL_INPUT);
		int nin = 1;
		if (c->op == RL_OP_Div) {
			in[1] = cal_value(g, "x2", RL_DT_FLOAT, 1, d, RL_VAL_INPUT);
			nin = 2;
		}
		y = cal_value(g, "y", RL_DT_FLOAT, 1, d, RL_VAL_OUTPUT);
		rl_graph_add_node(g, c->op, "op", in, nin, &y, 1);
	}
	return g;
}

/* The driver: times every case's run, prints "name seconds"; nin[i] is
 * case i's number of graph inputs (as its graph was built). */
static bool cal_driver(const char *path, const uint32_t *nin, int fork_threads)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fprintf(f, "#define _POSIX_C_SOURCE 200809L\n#include <stdint.h>\n#include <stdio.h>\n"
	           "#include <stdlib.h>\n#include <time.h>\n");
	for (size_t i = 0; i < RL_CAL_CASES; i++)
		fprintf(f, "#include \"%s.h\"\n", cal_cases[i].name);
	if (fork_threads > 1)
		fprintf(f, "double rl_cal_fork(int threads);\n");
	fprintf(f,
	        "static double now(void)\n{\n    struct timespec t;\n"
	        "    clock_gettime(CLOCK_MONOTONIC, &t);\n    return t.tv_sec + 1e-9 * t.tv_nsec;\n}\n\n"
	        "/* values in [lo, hi) (floats) or row numbers (int64) */\n"
	        "static void *fill(long long numel, int onnx_dtype, double lo, double hi, long long rows)\n{\n"
	        "    uint64_t s = 88172645463325252ull;\n"
	        "    if (onnx_dtype == 7) {\n"
	        "        int64_t *p = malloc((size_t)numel * sizeof(*p));\n"
	        "        for (long long i = 0; p && i < numel; i++) {\n"
	        "            s ^= s << 13; s ^= s >> 7; s ^= s << 17;\n"
	        "            p[i] = (int64_t)(s %% (uint64_t)rows);\n        }\n        return p;\n    }\n"
	        "    float *p = malloc((size_t)numel * sizeof(*p));\n"
	        "    for (long long i = 0; p && i < numel; i++) {\n"
	        "        s ^= s << 13; s ^= s >> 7; s ^= s << 17;\n"
	        "        p[i] = (float)(lo + (hi - lo) * (double)(s >> 11) / 9007199254740992.0);\n"
	        "    }\n    return p;\n}\n\n"
	        "/* best of 5 batches of runs lasting about 20 ms each: seconds per run */\n"
	        "static double best(int (*run)(const void *const *, void *const *), const void *const *in,\n"
	        "                   void *const *out)\n{\n"
	        "    int reps = 1;\n    double b = 1e30;\n"
	        "    for (int i = 0; i < 3; i++) /* warm up */\n        if (run(in, out) != 0) return -1;\n"
	        "    for (;;) {\n        double t0 = now();\n"
	        "        for (int r = 0; r < reps; r++) run(in, out);\n"
	        "        double t = now() - t0;\n        if (t > 0.02 || reps > 1000000) break;\n"
	        "        reps *= 2;\n    }\n"
	        "    for (int k = 0; k < 5; k++) {\n        double t0 = now();\n"
	        "        for (int r = 0; r < reps; r++) run(in, out);\n"
	        "        double t = (now() - t0) / reps;\n        if (t < b) b = t;\n    }\n"
	        "    return b;\n}\n\n"
	        "int main(void)\n{\n");
	for (size_t i = 0; i < RL_CAL_CASES; i++) {
		const struct cal_case *c = &cal_cases[i];
		const char *P = c->name;
		fprintf(f,
		        "    {\n"
		        "        const void *in[2] = {0, 0};\n"
		        "        void *out[1];\n"
		        "        if (%s_init(NULL) != 0)\n            return 1;\n"
		        "        %s_set_threads(1);\n"
		        "        for (int i = 0; i < %u; i++)\n"
		        "            in[i] = fill(%s_inputs[i].numel, %s_inputs[i].onnx_dtype, %.17g, %.17g, %lld);\n"
		        "        out[0] = malloc(%s_outputs[0].nbytes);\n"
		        "        printf(\"%s %%.9g\\n\", best(%s_run_v, in, out));\n"
		        "        free((void *)in[0]);\n        free((void *)in[1]);\n        free(out[0]);\n"
		        "        %s_free();\n"
		        "    }\n",
		        P, P, nin[i],
		        P, P, c->lo, c->hi, (long long)RL_CAL_GATHER_ROWS, P, P, P, P);
	}
	if (fork_threads > 1)
		fprintf(f, "    printf(\"cal_fork %%.9g\\n\", rl_cal_fork(%d));\n", fork_threads);
	fprintf(f, "    return 0;\n}\n");
	return fclose(f) == 0;
}

/* The fork/join source: the generated cal_fork.c #included, so that its
 * static rl_parallel_for is called as the kernels call it. */
static bool cal_fork_source(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fprintf(f,
	        "#define _POSIX_C_SOURCE 200809L\n#include \"cal_fork.c\"\n#include <time.h>\n\n"
	        "static double rl_cal_now(void)\n{\n    struct timespec t;\n"
	        "    clock_gettime(CLOCK_MONOTONIC, &t);\n    return t.tv_sec + 1e-9 * t.tv_nsec;\n}\n\n"
	        "/* a chunk of work: busy for %g s per iteration */\n"
	        "static void rl_cal_spin(void *arg, int64_t lo, int64_t hi)\n{\n"
	        "    (void)arg;\n    double end = rl_cal_now() + %.17g * (double)(hi - lo);\n"
	        "    while (rl_cal_now() < end)\n        ;\n}\n\n"
	        "/* seconds a split kernel pays beyond its work: 2 chunks per thread */\n"
	        "double rl_cal_fork(int threads);\n"
	        "double rl_cal_fork(int threads)\n{\n"
	        "    if (cal_fork_init(NULL) != 0 || cal_fork_set_threads(threads) != 0)\n        return -1;\n"
	        "    double best = 1e30, start = rl_cal_now();\n"
	        "    for (int r = 0; r < %d || rl_cal_now() - start < %g; r++) {\n"
	        "        double t0 = rl_cal_now();\n"
	        "        rl_parallel_for(rl_cal_spin, NULL, 2 * (int64_t)threads, 1);\n"
	        "        double t = rl_cal_now() - t0 - 2 * %.17g;\n"
	        "        if (t < best)\n            best = t;\n    }\n"
	        "    cal_fork_free();\n    return best;\n}\n",
	        RL_CAL_FORK_SPIN, RL_CAL_FORK_SPIN, RL_CAL_FORK_REPS, RL_CAL_FORK_SECONDS,
	        RL_CAL_FORK_SPIN);
	return fclose(f) == 0;
}

static void cal_rmtree(const char *dir)
{
	char p[4096];
	for (size_t i = 0; i < RL_CAL_CASES; i++) {
		static const char *const ext[] = {".c", ".h", ".weights"};
		for (size_t e = 0; e < 3; e++) {
			snprintf(p, sizeof(p), "%s/%s%s", dir, cal_cases[i].name, ext[e]);
			unlink(p);
		}
	}
	static const char *const extra[] = {"driver.c", "calib", "build.log", "run.log",
	                                    "cal_fork.c", "cal_fork.h", "cal_fork.weights",
	                                    "fork.c"};
	for (size_t e = 0; e < 8; e++) {
		snprintf(p, sizeof(p), "%s/%s", dir, extra[e]);
		unlink(p);
	}
	rmdir(dir);
}

bool rl_calibrate(struct rl_machine *m, const char *cc, const char *cflags, FILE *log)
{
	char dir[] = "/tmp/rlopt-calib-XXXXXX", path[4096], err[512];
	if (!mkdtemp(dir)) {
		if (log)
			fprintf(log, "calibrate: no temporary folder (%s): rates left out\n",
			        strerror(errno));
		return false;
	}
	bool ok = true;
	uint32_t nin[RL_CAL_CASES] = {0};
	/* the models, through the -O2 pipeline and the C backend */
	for (size_t i = 0; ok && i < RL_CAL_CASES; i++) {
		float *w = NULL;
		struct rl_graph *g = cal_graph(&cal_cases[i], &w);
		struct rl_pass_ctx ctx;
		ok = g && rl_graph_infer(g) == RL_OK;
		if (ok) {
			nin[i] = g->ninputs;
			rl_pass_ctx_init(&ctx, m, 2);
			ok = rl_pipeline_run(g, &ctx, NULL) == RL_OK;
			rl_pass_ctx_free(&ctx);
		}
		snprintf(path, sizeof(path), "%s/%s.c", dir, cal_cases[i].name);
		struct rl_cgen_opts o = {.prefix = cal_cases[i].name, .weights_max = -1};
		ok = ok && rl_emit_c(g, &o, path, err, sizeof(err)) == RL_OK;
		if (!ok && log)
			fprintf(log, "calibrate: %s: %s\n", cal_cases[i].name,
			        g && g->err[0] ? g->err : err);
		rl_graph_free(g);
		free(w);
	}
	/* the fork/join: a Relu large enough to split, its file #included by fork.c */
	int fork_threads = m->cores > 1 && strcmp(m->kind, "cpu") == 0 ? m->cores : 0;
	char fpath[4096];
	snprintf(fpath, sizeof(fpath), "%s/fork.c", dir);
	if (ok && fork_threads > 1) {
		struct rl_graph *g = rl_graph_new();
		const int64_t d[1] = {RL_CAL_FORK_N};
		bool fk = g != NULL;
		if (fk) {
			g->opset = 17;
			g->path = "cal_fork";
			uint32_t x = cal_value(g, "x", RL_DT_FLOAT, 1, d, RL_VAL_INPUT);
			uint32_t y = cal_value(g, "y", RL_DT_FLOAT, 1, d, RL_VAL_OUTPUT);
			fk = x != RL_NONE && y != RL_NONE &&
			     rl_graph_add_node(g, RL_OP_Relu, "op", &x, 1, &y, 1) != RL_NONE &&
			     rl_graph_infer(g) == RL_OK;
		}
		snprintf(path, sizeof(path), "%s/cal_fork.c", dir);
		struct rl_cgen_opts o = {.prefix = "cal_fork", .weights_max = -1};
		fk = fk && rl_emit_c(g, &o, path, err, sizeof(err)) == RL_OK && cal_fork_source(fpath);
		rl_graph_free(g);
		if (!fk) {
			if (log)
				fprintf(log, "calibrate: the fork/join program could not be written: the "
				        "probe's own pool figure stays\n");
			fork_threads = 0;
		}
	}
	snprintf(path, sizeof(path), "%s/driver.c", dir);
	ok = ok && cal_driver(path, nin, fork_threads);
	/* cc CFLAGS -pthread -I dir driver.c cal_*.c -o calib -lm */
	char *argv[65 + RL_CAL_CASES];
	char words[1024], srcs[RL_CAL_CASES][4096], exe[4096], inc[4200], blog[4096];
	int n = 0;
	argv[n++] = (char *)cc;
	snprintf(words, sizeof(words), "%s", cflags);
	for (char *t = strtok(words, " \t"); t && n < 48; t = strtok(NULL, " \t"))
		argv[n++] = t;
	snprintf(inc, sizeof(inc), "-I%s", dir);
	snprintf(exe, sizeof(exe), "%s/calib", dir);
	argv[n++] = "-pthread";
	argv[n++] = inc;
	argv[n++] = path;
	for (size_t i = 0; i < RL_CAL_CASES; i++) {
		snprintf(srcs[i], sizeof(srcs[i]), "%s/%s.c", dir, cal_cases[i].name);
		argv[n++] = srcs[i];
	}
	if (fork_threads > 1)
		argv[n++] = fpath;
	argv[n++] = "-o";
	argv[n++] = exe;
	argv[n++] = "-lm";
	argv[n] = NULL;
	snprintf(blog, sizeof(blog), "%s/build.log", dir);
	if (ok && rl_cli_run_child(argv, blog, NULL, 300) != 0) {
		if (log)
			fprintf(log, "calibrate: `%s %s` failed to build the timing program: rates "
			        "left out\n", cc, cflags);
		ok = false;
	}
	/* run it, read "name seconds" lines */
	char rlog[4096];
	snprintf(rlog, sizeof(rlog), "%s/run.log", dir);
	char *rargv[2] = {exe, NULL};
	if (ok && rl_cli_run_child(rargv, rlog, NULL, 600) != 0) {
		if (log)
			fprintf(log, "calibrate: the timing program failed: rates left out\n");
		ok = false;
	}
	double rate[RL_MATH_COUNT_] = {0}, secs[RL_MATH_COUNT_] = {0}, fsecs[RL_MATH_COUNT_] = {0};
	double fork_s = 0;
	FILE *f = ok ? fopen(rlog, "r") : NULL;
	char line[256];
	while (f && fgets(line, sizeof(line), f)) {
		char name[64];
		double s;
		if (sscanf(line, "%63s %lf", name, &s) != 2 || !(s > 0))
			continue;
		if (strcmp(name, "cal_fork") == 0)
			fork_s = s;
		for (size_t i = 0; i < RL_CAL_CASES; i++)
			if (strcmp(name, cal_cases[i].name) == 0 && cal_cases[i].fused) {
				fsecs[cal_cases[i].cls] = s;
			} else if (strcmp(name, cal_cases[i].name) == 0) {
				rate[cal_cases[i].cls] = cal_cases[i].work / s;
				secs[cal_cases[i].cls] = s;
			}
	}
	if (f)
		fclose(f);
	/* a math class's rate is its marginal cost inside the fused chain (its
	 * fused case less the BASIC chain alone): most of them run in fused
	 * kernels, where the loads, stores and call are shared and the core
	 * overlaps the op with the chain's arithmetic (a standalone Sqrt ran at
	 * 1.1 G/s on Zen 3, where its fused chain priced with that rate came out
	 * 1.5x slower than measured). The standalone rate stays where the
	 * margin is under a tenth of the fused case (noise). */
	for (size_t i = 0; i < RL_CAL_CASES; i++) {
		const struct cal_case *c = &cal_cases[i];
		double mg = fsecs[c->cls] - secs[RL_MATH_BASIC];
		if (!c->fused || !(fsecs[c->cls] > 0) || !(secs[RL_MATH_BASIC] > 0) ||
		    mg < 0.1 * fsecs[c->cls])
			continue;
		if (log)
			fprintf(log, "calibrate: %-12s %.3g elements/s alone, %.3g in a fused chain\n",
			        rl_math_name(c->cls), rate[c->cls], c->work / mg);
		rate[c->cls] = c->work / mg;
	}
	/* ROW: the Softmax's time less what the element classes already price
	 * for it (one exp and four plain operations per element, as
	 * ir/fam_norm.c counts it); at least a tenth of it stays the rows' */
	if (secs[RL_MATH_ROW] > 0 && rate[RL_MATH_EXP] > 0 && rate[RL_MATH_BASIC] > 0) {
		double el = (double)RL_CAL_ROWS * RL_CAL_ROWLEN;
		double rest = secs[RL_MATH_ROW] - el / rate[RL_MATH_EXP] - 4 * el / rate[RL_MATH_BASIC];
		if (rest < 0.1 * secs[RL_MATH_ROW])
			rest = 0.1 * secs[RL_MATH_ROW];
		rate[RL_MATH_ROW] = RL_CAL_ROWS / rest;
	}
	int got = 0;
	for (int k = 0; k < RL_MATH_REQUIRED_; k++)
		got += rate[k] > 0;
	if (ok && got == RL_MATH_REQUIRED_) {
		for (int k = 0; k < RL_MATH_COUNT_; k++) {
			m->calib[k] = rate[k];
			if (log && rate[k] > 0)
				fprintf(log, "calibrate: %-12s %.3g %s per core\n",
				        rl_math_name((enum rl_math)k), rate[k],
				        k == RL_MATH_GEMM || k == RL_MATH_MMPLAIN ? "FLOP/s"
				        : k == RL_MATH_ROW ? "rows/s" : "elements/s");
		}
		snprintf(m->calib_cc, sizeof(m->calib_cc), "%s %s", cc, cflags);
		/* the emitted pool's fork/join replaces the probe pool's figure,
		 * unless the workers never took their chunks (the caller ran a
		 * whole chunk more: another process held their cores throughout) */
		if (fork_s > 0 && fork_s < RL_CAL_FORK_SPIN) {
			if (log)
				fprintf(log, "calibrate: fork/join    %.3g us with %d threads (the emitted "
				        "pool, <latency fork=>; the probe's own pool read %.3g us)\n",
				        fork_s * 1e6, fork_threads, m->fork_latency * 1e6);
			m->fork_latency = fork_s;
		} else if (fork_threads > 1 && log) {
			fprintf(log, "calibrate: fork/join    the pool's workers took no chunk in %g s "
			        "(%.3g us beyond the work: a busy machine?): the probe's own pool "
			        "figure stays\n", RL_CAL_FORK_SECONDS, fork_s * 1e6);
		}
	} else if (ok && log) {
		fprintf(log, "calibrate: the timing program measured %d of %d classes: rates left "
		        "out\n", got, RL_MATH_REQUIRED_);
		ok = false;
	}
	cal_rmtree(dir);
	return ok;
}
