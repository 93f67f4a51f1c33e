/*
 * test_emit_math.c - the vector math library of the C backend
 * (backends/c/emit_math.c) and the vector kernels that use it
 * (emit_fused.c, the vector expression table in emit_elemwise.c).
 *
 * 1. Accuracy: the library text (rl_vmath_text) and the vector runtime
 *    (rl_emit_rt_vec) go into a small program, compiled with plain
 *    `cc -std=c11 -O2` as users compile generated code, which sweeps every
 *    97th float of each function's domain (plus edges and special values)
 *    against double-precision libm and prints the largest error in ulp of
 *    the float result; then again with -march=native, where FMA contracts
 *    what the x86-64-v3/v4 clones contract. The bounds asserted here are the ones emit_math.c
 *    documents. Special values (NaN, +-inf, +-0, overflow, denormals) must
 *    match exactly what the header comment promises.
 * 2. Agreement: a graph of float32 elementwise ops (every op with a vector
 *    form, and some without) is emitted once and compiled twice, with the
 *    vector path and with -DRL_NO_VEC (the scalar table); on random inputs
 *    and special values both must agree within the documented error, and
 *    the vector build must give the same bits at 1 and 2 threads.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "testutil.h"

/* ---- 1. accuracy of each function ----------------------------------------- */

/* The sweep program: for function F with domain [lo, hi] (in float bits
 * order, both signs as asked), the largest ulp error against double libm;
 * prints "NAME maxulp" per function, "BAD ..." for a wrong special value. */
static const char sweep_main[] =
	"#include <float.h>\n"
	"static double ulp_of(double r)\n"
	"{\n"
	"    int e;\n"
	"    frexp(fabs((double)(float)r), &e);\n"
	"    return ldexp(1.0, e - 24 < -149 ? -149 : e - 24);\n"
	"}\n"
	"typedef void (*vfn)(rl_vf *, const rl_vf *);\n"
	"#define WRAP(f) static void w_##f(rl_vf *r, const rl_vf *x) { f(r, x); }\n"
	"WRAP(rl_vexp) WRAP(rl_vexpm1) WRAP(rl_vlog) WRAP(rl_vlog1p) WRAP(rl_vtanh)\n"
	"WRAP(rl_vsigmoid) WRAP(rl_vsqrt) WRAP(rl_verf) WRAP(rl_vexpz)\n"
	"static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
	"static float bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
	"static const char *only; /* argv[1]: sweep just this function */\n"
	"static double sweep(vfn f, double (*ref)(double), float lo, float hi, const char *name)\n"
	"{\n"
	"    double worst = 0;\n"
	"    if (only && strcmp(only, name) != 0)\n"
	"        return 0;\n"
	"    float xs[RL_VW], ys[RL_VW];\n"
	"    int n = 0;\n"
	"    for (uint64_t u = 0; u <= 0xffffffffu; u += 97) {\n"
	"        float x = bits((uint32_t)u);\n"
	"        if (!(x >= lo && x <= hi))\n"
	"            continue;\n"
	"        xs[n++] = x;\n"
	"        if (n < RL_VW)\n"
	"            continue;\n"
	"        rl_vf vx, vy;\n"
	"        memcpy(&vx, xs, sizeof(vx));\n"
	"        f(&vy, &vx);\n"
	"        memcpy(ys, &vy, sizeof(ys));\n"
	"        for (int l = 0; l < RL_VW; l++) {\n"
	"            double r = ref((double)xs[l]);\n"
	"            if (fabs(r) > FLT_MAX) {\n"
	"                if (!isinf(ys[l]) || (ys[l] > 0) != (r > 0))\n"
	"                    printf(\"BAD %s(%a) = %a, want inf\\n\", name, xs[l], ys[l]);\n"
	"                continue;\n"
	"            }\n"
	"            double e = fabs((double)ys[l] - r) / ulp_of(r);\n"
	"            if (e > worst || e != e) {\n"
	"                worst = e != e ? 1e9 : e;\n"
	"            }\n"
	"        }\n"
	"        n = 0;\n"
	"    }\n"
	"    printf(\"%s %.4f\\n\", name, worst);\n"
	"    return worst;\n"
	"}\n"
	"static void special(vfn f, const char *name, float x, float want)\n"
	"{\n"
	"    rl_vf vx, vy;\n"
	"    for (int l = 0; l < RL_VW; l++)\n"
	"        vx[l] = x; /* not (rl_vf){0} + x: that turns -0 into +0 */\n"
	"    f(&vy, &vx);\n"
	"    float y = vy[3];\n"
	"    int ok = (isnan(want) && isnan(y)) || (memcmp(&y, &want, 4) == 0);\n"
	"    if (!ok)\n"
	"        printf(\"BAD %s(%a) = %a, want %a\\n\", name, x, y, want);\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"    const float inf = INFINITY, nan = NAN;\n"
	"    only = argc > 1 ? argv[1] : NULL;\n"
	"#ifdef RL_HW_SQRT\n"
	"    puts(\"hwsqrt 1\");\n"
	"#endif\n"
	"    sweep(w_rl_vexp, exp, -104.0f, 89.0f, \"exp\");\n"
	"    sweep(w_rl_vexpm1, expm1, -90.0f, 89.0f, \"expm1\");\n"
	"    sweep(w_rl_vlog, log, 0.0f, FLT_MAX, \"log\");\n"
	"    sweep(w_rl_vlog1p, log1p, -0.99999f, FLT_MAX, \"log1p\");\n"
	"    sweep(w_rl_vtanh, tanh, -FLT_MAX, FLT_MAX, \"tanh\");\n"
	"    sweep(w_rl_vsigmoid, sigm, -FLT_MAX, FLT_MAX, \"sigmoid\");\n"
	"    sweep(w_rl_vsqrt, sqrt, 0.0f, FLT_MAX, \"sqrt\");\n"
	"    sweep(w_rl_verf, erf, -FLT_MAX, FLT_MAX, \"erf\");\n"
	"    sweep(w_rl_vexpz, exp, -87.3f, 89.0f, \"expz\");\n"
	"    vfn fs[] = {w_rl_vexp, w_rl_vexpm1, w_rl_vlog, w_rl_vlog1p, w_rl_vtanh, w_rl_vsigmoid, w_rl_vsqrt,\n"
	"                w_rl_verf};\n"
	"    const char *nm[] = {\"exp\", \"expm1\", \"log\", \"log1p\", \"tanh\", \"sigmoid\", \"sqrt\", \"erf\"};\n"
	"    for (int i = 0; i < 8; i++)\n"
	"        special(fs[i], nm[i], nan, nan);\n"
	"    special(w_rl_vexp, \"exp\", -inf, 0.0f);\n"
	"    special(w_rl_vexp, \"exp\", inf, inf);\n"
	"    special(w_rl_vexp, \"exp\", 100.0f, inf);\n"
	"    special(w_rl_vexp, \"exp\", -0.0f, 1.0f);\n"
	"    special(w_rl_vexp, \"exp\", -100.0f, (float)exp(-100.0));\n"
	"    special(w_rl_vexpm1, \"expm1\", -inf, -1.0f);\n"
	"    special(w_rl_vexpm1, \"expm1\", inf, inf);\n"
	"    special(w_rl_vexpm1, \"expm1\", -0.0f, -0.0f);\n"
	"    special(w_rl_vexpm1, \"expm1\", 0x1p-140f, 0x1p-140f);\n"
	"    special(w_rl_vlog, \"log\", -1.0f, nan);\n"
	"    special(w_rl_vlog, \"log\", 0.0f, -inf);\n"
	"    special(w_rl_vlog, \"log\", -0.0f, -inf);\n"
	"    special(w_rl_vlog, \"log\", inf, inf);\n"
	"    special(w_rl_vlog, \"log\", -inf, nan);\n"
	"    special(w_rl_vlog, \"log\", 1.0f, 0.0f);\n"
	"    special(w_rl_vlog, \"log\", 0x1p-149f, (float)log(0x1p-149));\n"
	"    special(w_rl_vlog1p, \"log1p\", -1.0f, -inf);\n"
	"    special(w_rl_vlog1p, \"log1p\", -2.0f, nan);\n"
	"    special(w_rl_vlog1p, \"log1p\", inf, inf);\n"
	"    special(w_rl_vlog1p, \"log1p\", -0.0f, -0.0f);\n"
	"    special(w_rl_vtanh, \"tanh\", inf, 1.0f);\n"
	"    special(w_rl_vtanh, \"tanh\", -inf, -1.0f);\n"
	"    special(w_rl_vtanh, \"tanh\", -0.0f, -0.0f);\n"
	"    special(w_rl_vtanh, \"tanh\", 0x1p-140f, 0x1p-140f);\n"
	"    special(w_rl_vsigmoid, \"sigmoid\", -inf, 0.0f);\n"
	"    special(w_rl_vsigmoid, \"sigmoid\", inf, 1.0f);\n"
	"    special(w_rl_vsigmoid, \"sigmoid\", 0.0f, 0.5f);\n"
	"    special(w_rl_vsqrt, \"sqrt\", -1.0f, nan);\n"
	"    special(w_rl_vsqrt, \"sqrt\", -inf, nan);\n"
	"    special(w_rl_vsqrt, \"sqrt\", -0.0f, -0.0f);\n"
	"    special(w_rl_vsqrt, \"sqrt\", 0.0f, 0.0f);\n"
	"    special(w_rl_vsqrt, \"sqrt\", inf, inf);\n"
	"    special(w_rl_vsqrt, \"sqrt\", 0x1p-149f, (float)sqrt(0x1p-149));\n"
	"    special(w_rl_vsqrt, \"sqrt\", 4.0f, 2.0f);\n"
	"    special(w_rl_verf, \"erf\", inf, 1.0f);\n"
	"    special(w_rl_verf, \"erf\", -inf, -1.0f);\n"
	"    special(w_rl_verf, \"erf\", 0.0f, 0.0f);\n"
	"    special(w_rl_verf, \"erf\", -0.0f, -0.0f);\n"
	"    /* softmax's exp: 0 below -87.3, never a denormal */\n"
	"    special(w_rl_vexpz, \"expz\", nan, nan);\n"
	"    special(w_rl_vexpz, \"expz\", -inf, 0.0f);\n"
	"    special(w_rl_vexpz, \"expz\", -1e9f, 0.0f);\n"
	"    special(w_rl_vexpz, \"expz\", -100.0f, 0.0f);\n"
	"    special(w_rl_vexpz, \"expz\", -87.4f, 0.0f);\n"
	"    special(w_rl_vexpz, \"expz\", -0.0f, 1.0f);\n"
	"    special(w_rl_vexpz, \"expz\", inf, inf);\n"
	"    return 0;\n"
	"}\n";

struct bound {
	const char *name;
	double ulp; /* documented in emit_math.c */
};

static const struct bound bounds[] = {
	{"exp", 1.5}, {"expm1", 2.5}, {"log", 2.0}, {"log1p", 4.0},
	{"tanh", 6.0}, {"sigmoid", 2.5}, {"sqrt", 0.501}, {"erf", 7.0},
	{"expz", 1.5}, /* rl_vexp's bound where it is not 0 (x >= -87.3) */
};

/* sqrt by the instruction (x86-64 unless RL_PORTABLE_MATH): correctly
 * rounded; the sweep program says which one it was built with */
static const double hw_sqrt_ulp = 0.5;

/* Compile sweep.c in dir with cc -O2 plus extra and check its output against
 * the documented bounds; tag names the build in messages; only: sweep just
 * that function (NULL: all of them). */
static void run_sweep(const char *dir, const char *extra, const char *tag, const char *only)
{
	int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 %s sweep.c -o sweep -lm"
	            " 2> cc.log || { cat cc.log >&2; exit 1; }",
	            dir, extra);
	cr_assert_eq(rc, 0, "the vector math library does not compile cleanly (%s, %s)", tag, dir);
	rc = tu_sh("cd '%s' && ./sweep %s > out.txt", dir, only ? only : "");
	cr_assert_eq(rc, 0);
	char path[4200];
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	FILE *f = fopen(path, "r");
	cr_assert(f);
	char line[512];
	int seen = 0;
	bool hw = false;
	while (fgets(line, sizeof(line), f)) {
		char name[64];
		double e;
		if (strncmp(line, "novec", 5) == 0) {
			seen = -1;
			break;
		}
		if (strncmp(line, "hwsqrt", 6) == 0) {
			hw = true;
			cr_log_info("%s: sqrt by the instruction", tag);
			continue;
		}
		cr_expect(strncmp(line, "BAD", 3) != 0, "%s: %s", tag, line);
		if (sscanf(line, "%63s %lf", name, &e) != 2)
			continue;
		for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
			if (strcmp(bounds[i].name, name) == 0) {
				seen++;
				cr_log_info("%s: %s: max error %.4f ulp", tag, name, e);
				double lim = hw && !strcmp(name, "sqrt") ? hw_sqrt_ulp : bounds[i].ulp;
				cr_expect_leq(e, lim, "%s: %s: %.4f ulp, documented %.4g", tag, name, e, lim);
			}
		}
	}
	fclose(f);
	if (seen >= 0)
		cr_expect_eq(seen, only ? 1 : 9, "every function swept (%s)", tag);
}

/* Once as users compile generated code (baseline ISA: no FMA, so nothing is
 * contracted), and once for the host (-march=native: the FMA contractions
 * the x86-64-v3/v4 clones get), where the compiler takes that flag. */
Test(vmath, accuracy_and_special_values, .timeout = 900)
{
	struct rl_buf b = {0};
	rl_buf_printf(&b, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n"
	                  "#include <string.h>\n\n");
	rl_emit_rt_vec(&b);
	rl_buf_printf(&b, "#ifndef RL_VEC\nint main(void) { puts(\"novec\"); return 0; }\n#else\n");
	rl_vmath_text(&b, ~0u);
	rl_buf_printf(&b, "%s#endif\n", sweep_main);
	char *dir = tu_tmpdir();
	cr_assert(dir);
	char path[4200];
	snprintf(path, sizeof(path), "%s/sweep.c", dir);
	cr_assert_eq(tu_write(path, b.s, b.len), 0);
	rl_buf_free(&b);
	run_sweep(dir, "", "baseline", NULL);
	/* the portable formulations (Newton sqrt) that targets other than
	 * x86-64 compile, here forced on the baseline ISA */
	run_sweep(dir, "-DRL_PORTABLE_MATH", "portable", "sqrt"); /* the only difference */
	if (tu_sh("cd '%s' && echo 'int main(void) { return 0; }' > native.c &&"
	       " ${CC:-cc} -march=native native.c -o native > /dev/null 2>&1", dir) == 0)
		run_sweep(dir, "-march=native", "native", NULL);
	/* the AVX2 clone's lowering (rl_vif at 8 lanes, FMA contraction), where
	 * the compiler knows the level and this CPU runs it */
	if (tu_sh("cd '%s' && ${CC:-cc} -march=x86-64-v3 native.c -o v3 > /dev/null 2>&1 && ./v3"
	       " && grep -q avx2 /proc/cpuinfo", dir) == 0)
		run_sweep(dir, "-march=x86-64-v3", "x86-64-v3", NULL);
	tu_rmtree(dir);
	free(dir);
}

/* ---- 2. vector kernels agree with the scalar table ------------------------ */

/* Runs the model on inputs made of random values and special values, writes
 * every output to OUT (raw floats). */
static const char agree_main[] =
	"#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <math.h>\n"
	"#include \"m.h\"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"    static const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN,\n"
	"        1e-40f, -1e-40f, 88.0f, -88.0f, 100.0f, -100.0f, 1e-7f, 3.4e38f, 0.5f};\n"
	"    void *in[8], *out[64];\n"
	"    if (argc < 3)\n"
	"        return 2;\n"
	"    if (m_init(NULL))\n"
	"        return 1;\n"
	"    m_set_threads(atoi(argv[1]));\n"
	"    unsigned s = 7;\n"
	"    for (int i = 0; i < M_NUM_INPUTS; i++) {\n"
	"        float *f = malloc(m_inputs[i].nbytes);\n"
	"        for (long long k = 0; k < m_inputs[i].numel; k++) {\n"
	"            s = s * 1103515245u + 12345u;\n"
	"            f[k] = k % 7 == 3 ? sp[(s >> 8) % 16] : ((s >> 8) & 0xffff) / 4096.0f - 8.0f;\n"
	"        }\n"
	"        in[i] = f;\n"
	"    }\n"
	"    for (int i = 0; i < M_NUM_OUTPUTS; i++)\n"
	"        out[i] = calloc(1, m_outputs[i].nbytes);\n"
	"    m_run_v((const void *const *)in, out);\n"
	"    FILE *f = fopen(argv[2], \"wb\");\n"
	"    for (int i = 0; i < M_NUM_OUTPUTS; i++)\n"
	"        fwrite(out[i], 1, m_outputs[i].nbytes, f);\n"
	"    fclose(f);\n"
	"    return 0;\n"
	"}\n";

static float *read_floats(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	float *p = malloc((size_t)sz);
	cr_assert_eq(fread(p, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*n = (size_t)sz / sizeof(float);
	return p;
}

Test(vmath, vector_kernels_agree_with_scalar_table, .timeout = 600)
{
	struct rl_graph *g = rl_graph_new();
	g->opset = 21;
	g->path = "test_emit_math";
	/* big enough for threads (2 x 2^15) and with a tail: 70001 = 16k + 1 */
	const int64_t dflat[] = {70001}, drow[] = {37, 1003}, dcol[] = {37, 1}, dlast[] = {1003};
	uint32_t a = tu_input(g, "a", RL_DT_FLOAT, tu_dims(1, dflat));
	uint32_t b = tu_input(g, "b", RL_DT_FLOAT, tu_dims(1, dflat));
	uint32_t r = tu_input(g, "r", RL_DT_FLOAT, tu_dims(2, drow));
	uint32_t c = tu_input(g, "c", RL_DT_FLOAT, tu_dims(2, dcol));
	uint32_t l = tu_input(g, "l", RL_DT_FLOAT, tu_dims(1, dlast));
	static const enum rl_op un[] = {
		RL_OP_Exp, RL_OP_Log, RL_OP_Sqrt, RL_OP_Tanh, RL_OP_Sigmoid, RL_OP_Reciprocal,
		RL_OP_Relu, RL_OP_LeakyRelu, RL_OP_Elu, RL_OP_Selu, RL_OP_Celu, RL_OP_HardSigmoid,
		RL_OP_HardSwish, RL_OP_ThresholdedRelu, RL_OP_Softplus, RL_OP_Softsign, RL_OP_Mish,
		RL_OP_Abs, RL_OP_Neg, RL_OP_Erf, RL_OP_Sin,
	};
	for (size_t k = 0; k < sizeof(un) / sizeof(un[0]); k++)
		tu_add_flow(g, un[k], &a, 1, 1, NULL);
	uint32_t node;
	tu_add_flow(g, RL_OP_Gelu, &a, 1, 1, &node);
	struct rl_attr *at = rl_node_add_attr(g, node, "approximate", RL_ATTR_STRING);
	at->s = rl_arena_strdup(g, "tanh");
	at->n = 4;
	tu_add_flow(g, RL_OP_Gelu, &a, 1, 1, NULL); /* approximate = none: rl_verf */
	static const enum rl_op bin[] = {RL_OP_Add, RL_OP_Sub, RL_OP_Mul, RL_OP_Div,
	                                 RL_OP_PRelu, RL_OP_Min, RL_OP_Max, RL_OP_Pow};
	uint32_t ab[2] = {a, b}, rc2[2] = {r, c}, rl2[2] = {r, l}, cl2[2] = {c, l};
	for (size_t k = 0; k < sizeof(bin) / sizeof(bin[0]); k++)
		tu_add_flow(g, bin[k], ab, 2, 1, NULL);
	tu_add_flow(g, RL_OP_Div, rc2, 2, 1, NULL);  /* column broadcast */
	tu_add_flow(g, RL_OP_Sub, rl2, 2, 1, NULL);  /* row broadcast */
	tu_add_flow(g, RL_OP_Mul, cl2, 2, 1, NULL);  /* outer product */
	uint32_t abr[3] = {a, b, a};
	tu_add_flow(g, RL_OP_Mean, abr, 3, 1, NULL);
	/* a chain the fuse pass would make one kernel of is exercised by
	 * tests/py; here each op is its own kernel through the same vector loop */
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	char *dir = tu_tmpdir(), path[4200], err[1024] = "";
	snprintf(path, sizeof(path), "%s/m.c", dir);
	cr_assert_eq(rl_emit_c(g, NULL, path, err, sizeof(err)), RL_OK, "%s", err);
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, agree_main, strlen(agree_main)), 0);
	int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -pedantic -O2 m.c main.c"
	            " -o vec -lm -lpthread 2> cc.log && ${CC:-cc} -std=c11 -O2 -DRL_NO_VEC m.c main.c"
	            " -o sca -lm -lpthread 2>> cc.log && ./vec 1 v1.bin && ./vec 2 v2.bin &&"
	            " ./sca 1 s1.bin && ${CC:-cc} -std=c11 -O2 -DRL_NO_VNARROW m.c main.c -o wide"
	            " -lm -lpthread 2>> cc.log && ./wide 1 w1.bin || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "build or run failed in %s", dir);
	size_t n1, n2, ns;
	char p1[4300], p2[4300], ps[4300];
	snprintf(p1, sizeof(p1), "%s/v1.bin", dir);
	snprintf(p2, sizeof(p2), "%s/v2.bin", dir);
	snprintf(ps, sizeof(ps), "%s/s1.bin", dir);
	float *v1 = read_floats(p1, &n1), *v2 = read_floats(p2, &n2), *s1 = read_floats(ps, &ns);
	cr_assert_eq(n1, ns);
	cr_assert_eq(n1, n2);
	cr_expect_eq(memcmp(v1, v2, n1 * sizeof(float)), 0, "1 and 2 threads differ");
	/* on x86-64 below AVX-512 vec ran the 8-float rl_wf loops (emit_math.c,
	 * vm_nbase), wide the rl_vf ones: each lane does the same operations, so
	 * the same bits, but for which NaN an operation passes on (the sign of
	 * 0 * inf's NaN follows operand order, which the register allocation
	 * picks) */
	size_t nw;
	char pw[4300];
	snprintf(pw, sizeof(pw), "%s/w1.bin", dir);
	float *w1 = read_floats(pw, &nw);
	cr_assert_eq(nw, n1);
	size_t nd = 0;
	for (size_t i = 0; i < n1; i++)
		if (memcmp(&v1[i], &w1[i], sizeof(float)) && !(isnan(v1[i]) && isnan(w1[i])) &&
		    nd++ < 10)
			cr_log_error("element %zu: rl_wf %a rl_vf %a", i, v1[i], w1[i]);
	cr_expect_eq(nd, 0, "the rl_wf and rl_vf loops differ in %zu elements", nd);
	free(w1);
	size_t bad = 0;
	for (size_t i = 0; i < n1; i++) {
		float x = v1[i], y = s1[i];
		if (isnan(x) || isnan(y)) {
			bad += isnan(x) != isnan(y);
			continue;
		}
		if (isinf(x) || isinf(y)) {
			bad += x != y;
			continue;
		}
		/* within 8 ulp (the library's worst plus the scalar libm's and
		 * rl_tanhf's), or 2e-6 absolute where a formula cancels (Selu and
		 * Elu near 0, tanh-Gelu for large negative inputs: both tables
		 * lose the same bits there; inputs are at most 8 in magnitude) */
		double d = fabs((double)x - (double)y), m = fmax(fabs(x), fabs(y));
		if (d > 8 * 0x1p-23 * m && d > 2e-6) {
			if (bad < 10)
				cr_log_error("element %zu: vector %a scalar %a", i, x, y);
			bad++;
		}
	}
	cr_expect_eq(bad, 0, "%zu elements differ beyond the documented error", bad);
	free(v1);
	free(v2);
	free(s1);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

/* ---- 3. every clone keeps its comparisons in vector registers ------------- */

/*
 * GCC 12 lowers a comparison written on a 64-byte rl_vf, in a clone whose
 * vectors are narrower (x86-64-v3, the baseline), to 16 scalar compares and
 * branches; selects therefore go through rl_vif, which the vectorizer lowers
 * at each clone's width. A chain of ops with selects (Relu, Max, Clip) and
 * of the math library's functions (exp, log, tanh, sigmoid, sqrt: clamps and
 * special values) is compiled with plain `cc -O2 -S` for x86-64, where no
 * kernel may contain a scalar float compare (comiss/ucomiss).
 */
Test(vmath, clones_compare_in_vectors, .timeout = 300)
{
	if (tu_sh("echo 'int main(void) { return 0; }' | ${CC:-cc} -x c -dM -E - | grep -q __x86_64__") != 0)
		cr_skip_test("the clones are an x86-64 matter (this compiler does not target it)");
	struct rl_graph *g = rl_graph_new();
	g->opset = 21;
	g->path = "test_emit_math";
	const int64_t d[] = {70000};
	uint32_t a = tu_input(g, "a", RL_DT_FLOAT, tu_dims(1, d)), b = tu_input(g, "b", RL_DT_FLOAT, tu_dims(1, d));
	static const enum rl_op un[] = {RL_OP_Relu, RL_OP_Exp, RL_OP_Log, RL_OP_Tanh,
	                                RL_OP_Sigmoid, RL_OP_Sqrt, RL_OP_LeakyRelu, RL_OP_Erf};
	for (size_t k = 0; k < sizeof(un) / sizeof(un[0]); k++)
		tu_add_flow(g, un[k], &a, 1, 1, NULL);
	uint32_t ab[2] = {a, b};
	tu_add_flow(g, RL_OP_Max, ab, 2, 1, NULL);
	tu_add_flow(g, RL_OP_Min, ab, 2, 1, NULL);
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	char *dir = tu_tmpdir(), path[4200], err[1024] = "";
	snprintf(path, sizeof(path), "%s/m.c", dir);
	cr_assert_eq(rl_emit_c(g, NULL, path, err, sizeof(err)), RL_OK, "%s", err);
	/* -O2 as users compile it; -O3, where complete unrolling of the lane
	 * loops once gave SLP-built scalar compares (vcmpltss, vmaxss) in every
	 * clone; -O3 for x86-64-v3, the clone-less file of -march=native on an
	 * AVX2 machine */
	static const char *const flags[] = {"-O2", "-O3", "-O3 -march=x86-64-v3"};
	int n = 0;
	for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
		int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 %s -S m.c -o m.s 2> cc.log ||"
		               " { cat cc.log >&2; exit 1; }", dir, flags[k]);
		cr_assert_eq(rc, 0, "compile %s failed in %s", flags[k], dir);
		/* the kernels are the functions named k<N>_..., their clones included */
		rc = tu_sh("cd '%s' && awk '/^k[0-9]+_.*:$/ { f = $0 } /^\\t\\.size/ { f = \"\" }"
		           " f && /\\t(v?u?comiss|v?cmp[a-z]*ss|v?maxss|v?minss)\\t/ { print f, $0 }' m.s"
		           " > scalar.txt", dir);
		cr_assert_eq(rc, 0);
		snprintf(path, sizeof(path), "%s/scalar.txt", dir);
		FILE *f = fopen(path, "r");
		cr_assert(f);
		char line[512];
		int nk = 0;
		while (fgets(line, sizeof(line), f))
			if (nk++ < 5)
				cr_log_error("scalar compare in a kernel (%s): %s", flags[k], line);
		fclose(f);
		cr_expect_eq(nk, 0, "%s: %d scalar float compares in the kernels (see %s/m.s)", flags[k], nk,
		             dir);
		n += nk;
		if (nk)
			break; /* keep this m.s to look at */
		if (strstr(flags[k], "march"))
			continue; /* the file is built for AVX2 already: no clones */
		snprintf(path, sizeof(path), "%s/m.s", dir);
		f = fopen(path, "r");
		cr_assert(f);
		int clones = 0;
		while (fgets(line, sizeof(line), f))
			clones += strstr(line, ".arch_x86_64_v3:") != NULL;
		fclose(f);
		cr_expect_gt(clones, 0, "%s: no x86-64-v3 clone was compiled, so nothing was checked",
		             flags[k]);
	}
	if (n == 0)
		tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}
