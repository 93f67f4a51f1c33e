/*
 * test_passes.c - the cleanup and pattern passes: fold, dedupe, cse,
 * patterns (and dce, which runs after them).
 *
 * Graphs are built by hand with the ir.h API. Each test runs passes through
 * rl_pipeline_run with the verifier on, checks the rewritten graph's shape
 * (which nodes are left, which values became initializers, that graph
 * output names survive) and the remarks. Where a rewrite could change
 * results, the graph is built twice: the untouched copy and the rewritten one
 * are both emitted as C (prefixes a_ and b_), linked into one program with a
 * generated main that feeds the same inputs to both, and every output must
 * agree within rtol 1e-3 / atol 1e-4.
 *
 * The graphs cover what passes get wrong: shared values, graph outputs in the
 * middle of a chain, values that are both graph outputs and consumed,
 * broadcasting from rank 0 to rank 6, and dtype changes inside a chain.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "passes/pass.h"
#include "testutil.h"

#define CLEANUP "fold,dedupe,cse,patterns,dce"

/* ---- building graphs ---------------------------------------------------- */

static uint32_t fscalar(struct rl_graph *g, const char *name, float x)
{
	return tu_const(g, name, RL_DT_FLOAT, TU_SHAPE(0), &x);
}

/* A float initializer filled with a fixed pseudo-random sequence. */
static uint32_t frand(struct rl_graph *g, const char *name, struct rl_shape s, float scale,
                      float offset, unsigned seed)
{
	int64_t n = rl_shape_numel(&s);
	float *p = malloc((size_t)(n ? n : 1) * sizeof(float));
	for (int64_t i = 0; i < n; i++)
		p[i] = offset + scale * sinf(0.731f * (float)i + 1.37f * (float)seed);
	uint32_t v = tu_const(g, name, RL_DT_FLOAT, s, p);
	free(p);
	return v;
}

/* Node with `nout` fresh outputs named after the node; returns output 0 and
 * the node index in *node (may be NULL). */
static uint32_t nodex(struct rl_graph *g, enum rl_op op, const char *name, const uint32_t *in,
                      int nin, int nout, uint32_t *node, uint32_t *outs)
{
	uint32_t o[4];
	for (int k = 0; k < nout; k++) {
		char vn[96];
		snprintf(vn, sizeof(vn), "%s_out%d", name, k);
		o[k] = rl_graph_add_value(g, vn, RL_DT_UNDEFINED, NULL);
		if (outs)
			outs[k] = o[k];
	}
	uint32_t id = rl_graph_add_node(g, op, name, in, nin, o, nout);
	if (node)
		*node = id;
	return o[0];
}

static uint32_t op1(struct rl_graph *g, enum rl_op op, const char *name, uint32_t a)
{
	return nodex(g, op, name, &a, 1, 1, NULL, NULL);
}

static uint32_t op2(struct rl_graph *g, enum rl_op op, const char *name, uint32_t a, uint32_t b)
{
	uint32_t in[2] = {a, b};
	return nodex(g, op, name, in, 2, 1, NULL, NULL);
}

static void attr_i(struct rl_graph *g, uint32_t v, const char *name, int64_t x)
{
	rl_node_add_attr(g, g->values[v].producer, name, RL_ATTR_INT)->i = x;
}

static void attr_f(struct rl_graph *g, uint32_t v, const char *name, double x)
{
	rl_node_add_attr(g, g->values[v].producer, name, RL_ATTR_FLOAT)->f = x;
}

static void attr_ints(struct rl_graph *g, uint32_t v, const char *name, int n, const int64_t *x)
{
	struct rl_attr *a = rl_node_add_attr(g, g->values[v].producer, name, RL_ATTR_INTS);
	a->n = n;
	a->ints = rl_arena_alloc(g, (size_t)n * sizeof(int64_t));
	memcpy(a->ints, x, (size_t)n * sizeof(int64_t));
}

/* ---- running passes ----------------------------------------------------- */

static void infer_ok(struct rl_graph *g)
{
	cr_assert_eq(rl_graph_infer(g), RL_OK, "inference failed: %s", g->err);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "verify failed: %s", g->err);
}

/* Infer, run the listed passes with the verifier between them, verify. */
static void run_passes(struct rl_graph *g, struct rl_pass_ctx *ctx, const char *passes)
{
	infer_ok(g);
	enum rl_status st = rl_pipeline_run(g, ctx, passes);
	cr_assert_eq(st, RL_OK, "passes %s failed: %s", passes, g->err);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "verify after %s failed: %s", passes, g->err);
}

static void ctx_new(struct rl_pass_ctx *ctx)
{
	rl_pass_ctx_init(ctx, NULL, 2);
	ctx->verify = true;
}

static int count_op(const struct rl_graph *g, enum rl_op op)
{
	int n = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		n += !g->nodes[i].dead && g->nodes[i].op == op;
	return n;
}

static int live_nodes(const struct rl_graph *g)
{
	int n = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		n += !g->nodes[i].dead;
	return n;
}

static const struct rl_node *first_op(const struct rl_graph *g, enum rl_op op)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && g->nodes[i].op == op)
			return &g->nodes[i];
	return NULL;
}

/* A remark of `pass` with `verdict` whose message contains `sub`. */
static bool has_remark(const struct rl_pass_ctx *ctx, const char *pass, const char *verdict,
                       const char *sub)
{
	for (uint32_t i = 0; i < ctx->nremarks; i++) {
		const struct rl_remark *r = &ctx->remarks[i];
		if (strcmp(r->pass, pass) == 0 && strcmp(r->verdict, verdict) == 0 &&
		    (!sub || strstr(r->msg, sub)))
			return true;
	}
	return false;
}

static void dump_remarks(const struct rl_pass_ctx *ctx)
{
	rl_remarks_print(ctx, stderr);
}

/* Graph output k's name. */
static const char *out_name(const struct rl_graph *g, uint32_t k)
{
	return g->values[g->outputs[k]].name;
}

static void emit(struct rl_graph *g, const char *dir, const char *prefix)
{
	char path[4200], err[1024] = "";
	struct rl_cgen_opts o = {.prefix = prefix, .weights_max = -1};
	snprintf(path, sizeof(path), "%s/%s.c", dir, prefix);
	enum rl_status st = rl_emit_c(g, &o, path, err, sizeof(err));
	cr_assert_eq(st, RL_OK, "emit %s failed: %s", prefix, err);
}

/* Build the graph twice; run `passes` on the second; emit both and check
 * that every output agrees on the same inputs. The rewritten graph is
 * returned (with its remarks in *ctx) for further checks. */
static struct rl_graph *check_same(struct rl_graph *(*build)(void), const char *passes,
                                   struct rl_pass_ctx *ctx)
{
	struct rl_graph *g0 = build(), *g1 = build();
	infer_ok(g0);
	ctx_new(ctx);
	run_passes(g1, ctx, passes);
	cr_assert_eq(g0->ninputs, g1->ninputs);
	cr_assert_eq(g0->noutputs, g1->noutputs);
	for (uint32_t k = 0; k < g0->noutputs; k++)
		cr_assert_str_eq(out_name(g0, k), out_name(g1, k), "graph output %u renamed", k);
	char *dir = tu_tmpdir();
	cr_assert(dir);
	emit(g0, dir, "a");
	emit(g1, dir, "b");
	/* main: deterministic inputs, both models, compare */
	struct rl_buf m = {0};
	rl_buf_printf(&m, "#include <math.h>\n#include <stdio.h>\n#include <stdint.h>\n"
	                  "#include <stdlib.h>\n#include \"a.h\"\n#include \"b.h\"\n"
	                  "int main(void)\n{\n    int bad = 0;\n");
	rl_buf_printf(&m, "    const void *in[%u];\n    void *oa[%u], *ob[%u];\n",
	              g0->ninputs + 1, g0->noutputs + 1, g0->noutputs + 1);
	for (uint32_t i = 0; i < g0->ninputs; i++) {
		const struct rl_value *v = &g0->values[g0->inputs[i]];
		int64_t n = rl_shape_numel(&v->shape);
		const char *ct = cg_ctype(v->dtype);
		rl_buf_printf(&m, "    %s *x%u = malloc(%lld * sizeof(%s) + 1);\n", ct, i,
		              (long long)n, ct);
		rl_buf_printf(&m, "    for (long i = 0; i < %lld; i++) x%u[i] = (%s)(2.0 * sin(0.37 * i + %u));\n",
		              (long long)n, i, ct, i);
		rl_buf_printf(&m, "    in[%u] = x%u;\n", i, i);
	}
	for (uint32_t k = 0; k < g0->noutputs; k++) {
		const struct rl_value *v = &g0->values[g0->outputs[k]];
		int64_t n = rl_shape_numel(&v->shape);
		const char *ct = cg_ctype(v->dtype);
		rl_buf_printf(&m, "    %s *ya%u = calloc(%lld + 1, sizeof(%s)), *yb%u = calloc(%lld + 1, sizeof(%s));\n",
		              ct, k, (long long)n, ct, k, (long long)n, ct);
		rl_buf_printf(&m, "    oa[%u] = ya%u;\n    ob[%u] = yb%u;\n", k, k, k, k);
	}
	rl_buf_printf(&m, "    if (a_run_v(in, oa) != 0 || b_run_v(in, ob) != 0)\n        return 2;\n");
	for (uint32_t k = 0; k < g0->noutputs; k++) {
		const struct rl_value *v = &g0->values[g0->outputs[k]];
		int64_t n = rl_shape_numel(&v->shape);
		rl_buf_printf(&m, "    for (long i = 0; i < %lld; i++) {\n"
		                  "        double a = (double)ya%u[i], b = (double)yb%u[i];\n"
		                  "        if (!(fabs(a - b) <= 1e-4 + 1e-3 * fabs(a)) && !(isnan(a) && isnan(b))) {\n"
		                  "            if (bad++ < 5) printf(\"output %u [%%ld]: %%.9g vs %%.9g\\n\", i, a, b);\n"
		                  "        }\n    }\n",
		              (long long)n, k, k, k);
	}
	rl_buf_printf(&m, "    printf(\"%%d mismatches\\n\", bad);\n    return bad != 0;\n}\n");
	char path[4200];
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, m.s, m.len), 0);
	rl_buf_free(&m);
	int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 -O1 -w a.c b.c main.c -lm -o run 2> cc.log"
	            " || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "building the comparison in %s failed", dir);
	rc = tu_sh("cd '%s' && ./run > out.txt; r=$?; [ $r -eq 0 ] || cat out.txt >&2; exit $r", dir);
	if (rc != 0)
		dump_remarks(ctx);
	cr_assert_eq(rc, 0, "outputs differ after %s (program in %s)", passes, dir);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g0);
	return g1;
}

/* ======================================================================== */
/* fold                                                                      */
/* ======================================================================== */

/* Shape -> Gather -> Concat -> Reshape, a Constant that is a graph output
 * and consumed, and a constant chain (rank 0 * rank 0) broadcast into a
 * rank-6 tensor in the middle of a chain whose intermediate is an output. */
static struct rl_graph *build_fold_shapes(void)
{
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(6, 2, 1, 3, 1, 2, 2));
	uint32_t s = op1(g, RL_OP_Shape, "shape", x);
	int64_t i0[1] = {0}, rest[1] = {12};
	uint32_t gth = op2(g, RL_OP_Gather, "gather", s, tu_ints(g, "i0", 1, i0));
	uint32_t cat_in[2] = {gth, tu_ints(g, "rest", 1, rest)};
	uint32_t tgt = nodex(g, RL_OP_Concat, "concat", cat_in, 2, 1, NULL, NULL);
	attr_i(g, tgt, "axis", 0);
	uint32_t k = op2(g, RL_OP_Mul, "k", fscalar(g, "s0", 1.5f), fscalar(g, "s1", 2.0f));
	uint32_t mid = op2(g, RL_OP_Add, "mid", x, k); /* rank 0 into rank 6 */
	tu_output(g, mid);
	uint32_t r = op2(g, RL_OP_Reshape, "reshape", mid, tgt);
	float cv[6] = {1, 2, 3, 4, 5, 6};
	uint32_t cval = tu_const(g, "cval", RL_DT_FLOAT, TU_SHAPE(1, 6), cv);
	uint32_t c = nodex(g, RL_OP_Constant, "const", NULL, 0, 1, NULL, NULL);
	rl_node_add_attr(g, g->values[c].producer, "value", RL_ATTR_TENSOR)->tensor = cval;
	/* the Constant's tensor is owned by the attribute, not an initializer */
	uint32_t r2 = op2(g, RL_OP_Reshape, "r2", r, tu_ints(g, "shape2", 2, (int64_t[]){4, 6}));
	uint32_t y = op2(g, RL_OP_Add, "y", r2, op2(g, RL_OP_Add, "cc", c,
	                                                fscalar(g, "one", 1.0f)));
	(void)y;
	tu_output(g, y);
	tu_output(g, c);
	return g;
}

Test(fold, shape_arithmetic_and_constants)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_fold_shapes, CLEANUP, &ctx);
	cr_assert_eq(count_op(g, RL_OP_Shape), 0);
	cr_assert_eq(count_op(g, RL_OP_Gather), 0);
	cr_assert_eq(count_op(g, RL_OP_Concat), 0);
	cr_assert_eq(count_op(g, RL_OP_Constant), 0);
	cr_assert_eq(count_op(g, RL_OP_Mul), 0, "the scalar product is folded");
	/* Add(x, k), Reshape, Reshape, Add: Add(c, one) is folded too */
	cr_assert_eq(live_nodes(g), 4);
	/* the Constant output is a graph output and now an initializer */
	uint32_t c = g->outputs[2];
	cr_assert_str_eq(g->values[c].name, "const_out0");
	cr_assert(rl_value_is_const(g, c));
	cr_assert_eq(g->values[c].producer, RL_NONE);
	cr_assert_float_eq(((const float *)g->values[c].data)[2], 3.0f, 0);
	cr_assert(has_remark(&ctx, "fold", "folded", "Shape of a static shape"));
	cr_assert(has_remark(&ctx, "fold", "folded", "Constant node"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* Transpose and Cast of an initializer over the evaluator's limits, times a
 * scale, into a MatMul. */
static struct rl_graph *build_fold_big(void)
{
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 2, 300));
	int64_t n = 300 * 300;
	double *w = malloc((size_t)n * sizeof(double));
	for (int64_t i = 0; i < n; i++)
		w[i] = 0.05 * sin(0.1 * (double)i);
	uint32_t wv = tu_const(g, "w", RL_DT_DOUBLE, TU_SHAPE(2, 300, 300), w);
	free(w);
	uint32_t t = op1(g, RL_OP_Transpose, "transpose", wv);
	attr_ints(g, t, "perm", 2, (int64_t[]){1, 0});
	uint32_t c = op1(g, RL_OP_Cast, "cast", t);
	attr_i(g, c, "to", RL_DT_FLOAT);
	uint32_t sc = op2(g, RL_OP_Mul, "scale", c, fscalar(g, "half", 0.5f));
	tu_output(g, op2(g, RL_OP_MatMul, "mm", x, sc));
	return g;
}

Test(fold, big_transpose_cast_scale)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_fold_big, CLEANUP, &ctx);
	cr_assert_eq(live_nodes(g), 1, "only the MatMul is left");
	const struct rl_node *mm = first_op(g, RL_OP_MatMul);
	cr_assert(mm);
	uint32_t w = mm->in[1];
	cr_assert(rl_value_is_const(g, w));
	cr_assert_eq(g->values[w].dtype, RL_DT_FLOAT);
	/* element [i][j] of the folded weight is 0.5 * w[j][i] */
	const float *p = g->values[w].data;
	cr_assert_float_eq(p[7 * 300 + 11], (float)(0.5 * (float)(0.05 * sin(0.1 * (11 * 300 + 7)))),
	                   1e-7);
	cr_assert(has_remark(&ctx, "fold", "folded", "computed by the fold pass"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* A weight as a Constant node over the folding cap (paddle2onnx writes every
 * weight so: PP-OCRv4's recognizer has 420 of them) into a MatMul. */
static struct rl_graph *build_fold_big_constant_node(void)
{
	struct rl_graph *g = tu_graph_new(13, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 120));
	uint32_t t = frand(g, "w_tensor", TU_SHAPE(2, 120, 360), 0.1f, 0, 3);
	uint32_t w = nodex(g, RL_OP_Constant, "w_const", NULL, 0, 1, NULL, NULL);
	rl_node_add_attr(g, g->values[w].producer, "value", RL_ATTR_TENSOR)->tensor = t;
	tu_output(g, op2(g, RL_OP_MatMul, "mm", x, w));
	return g;
}

Test(fold, big_constant_node_becomes_initializer)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_fold_big_constant_node, CLEANUP, &ctx);
	/* 172800 bytes, far over the 16 KiB cap: folded anyway, the tensor was
	 * in the model already (before, the node stayed and copied it per run) */
	cr_assert_eq(count_op(g, RL_OP_Constant), 0);
	const struct rl_node *mm = first_op(g, RL_OP_MatMul);
	cr_assert(mm);
	cr_assert(rl_value_is_const(g, mm->in[1]));
	cr_assert_eq(g->values[mm->in[1]].producer, RL_NONE);
	cr_assert(has_remark(&ctx, "fold", "folded", "Constant node"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fold, cap_declines_big_generators_and_duplicates)
{
	struct rl_graph *g = tu_graph_new(13, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 512, 1024));
	/* Expand of a scalar to 2 MiB: over the cap and its inputs */
	uint32_t e = op2(g, RL_OP_Expand, "expand", fscalar(g, "z", 0.25f),
	                 tu_ints(g, "shape", 2, (int64_t[]){512, 1024}));
	tu_output(g, op2(g, RL_OP_Add, "add", x, e));
	/* a 1.44 MB weight read by a Transpose and by another node */
	uint32_t w = frand(g, "w", TU_SHAPE(2, 600, 600), 0.1f, 0, 1);
	uint32_t x2 = tu_input(g, "x2", RL_DT_FLOAT, TU_SHAPE(2, 1, 600));
	uint32_t t = op1(g, RL_OP_Transpose, "transpose", w);
	tu_output(g, op2(g, RL_OP_MatMul, "mm1", x2, t));
	tu_output(g, op2(g, RL_OP_MatMul, "mm2", x2, w));
	/* a Tile evaluated by inference, over a lowered cap */
	uint32_t tile = op2(g, RL_OP_Tile, "tile", frand(g, "small", TU_SHAPE(1, 4), 1, 0, 2),
	                    tu_ints(g, "reps", 1, (int64_t[]){1024}));
	tu_output(g, op2(g, RL_OP_Add, "add2", tile, tile));
	struct rl_pass_ctx ctx;
	ctx_new(&ctx);
	ctx.fold_max_bytes = 4096;
	run_passes(g, &ctx, "fold");
	cr_assert_eq(count_op(g, RL_OP_Expand), 1);
	cr_assert_eq(count_op(g, RL_OP_Transpose), 1);
	cr_assert_eq(count_op(g, RL_OP_Tile), 1);
	cr_assert(has_remark(&ctx, "fold", "declined", "Expand would materialize 2097152 bytes"));
	cr_assert(has_remark(&ctx, "fold", "declined", "another node still reads its input"));
	cr_assert(has_remark(&ctx, "fold", "declined", "Tile output of 16384 bytes exceeds"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* dtype changes inside a chain: float -> double -> int32 -> float on
 * constants (folded, truncating), and on the input (left alone). */
static struct rl_graph *build_fold_casts(void)
{
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 3, 4));
	float cv[4] = {2.7f, -1.5f, 0.25f, 9.9f};
	uint32_t c = tu_const(g, "c", RL_DT_FLOAT, TU_SHAPE(1, 4), cv);
	uint32_t d = op1(g, RL_OP_Cast, "to_double", c);
	attr_i(g, d, "to", RL_DT_DOUBLE);
	uint32_t i = op1(g, RL_OP_Cast, "to_int", d);
	attr_i(g, i, "to", RL_DT_INT32);
	uint32_t f = op1(g, RL_OP_Cast, "to_float", i);
	attr_i(g, f, "to", RL_DT_FLOAT);
	uint32_t xd = op1(g, RL_OP_Cast, "x_double", x);
	attr_i(g, xd, "to", RL_DT_DOUBLE);
	uint32_t xd2 = op1(g, RL_OP_Cast, "x_double_again", x); /* a CSE duplicate */
	attr_i(g, xd2, "to", RL_DT_DOUBLE);
	uint32_t s = op2(g, RL_OP_Add, "sum_d", xd, xd2);
	uint32_t back = op1(g, RL_OP_Cast, "back", s);
	attr_i(g, back, "to", RL_DT_FLOAT);
	tu_output(g, op2(g, RL_OP_Mul, "y", back, f));
	return g;
}

Test(fold, dtype_changes_inside_a_chain)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_fold_casts, CLEANUP, &ctx);
	/* the constant chain folds to [2, -1, 0, 9]; the x casts stay (one) */
	cr_assert_eq(count_op(g, RL_OP_Cast), 2);
	const struct rl_node *mul = first_op(g, RL_OP_Mul);
	cr_assert(mul);
	uint32_t f = mul->in[1];
	cr_assert(rl_value_is_const(g, f));
	const float *p = g->values[f].data;
	cr_assert(p[0] == 2 && p[1] == -1 && p[2] == 0 && p[3] == 9);
	cr_assert(has_remark(&ctx, "cse", "merged", "same Cast"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- BatchNormalization ---------------------------------------------------- */

static uint32_t add_bn(struct rl_graph *g, const char *name, uint32_t x, int64_t C)
{
	char n[64];
	uint32_t in[5] = {x};
	snprintf(n, sizeof(n), "%s_scale", name);
	in[1] = frand(g, n, TU_SHAPE(1, C), 0.3f, 1.0f, 11);
	snprintf(n, sizeof(n), "%s_bias", name);
	in[2] = frand(g, n, TU_SHAPE(1, C), 0.2f, 0, 12);
	snprintf(n, sizeof(n), "%s_mean", name);
	in[3] = frand(g, n, TU_SHAPE(1, C), 0.2f, 0, 13);
	snprintf(n, sizeof(n), "%s_var", name);
	in[4] = frand(g, n, TU_SHAPE(1, C), 0.3f, 0.8f, 14);
	uint32_t y = nodex(g, RL_OP_BatchNormalization, name, in, 5, 1, NULL, NULL);
	attr_f(g, y, "epsilon", 1e-3);
	return y;
}

static struct rl_graph *build_bn(void)
{
	struct rl_graph *g = tu_graph_new(13, "test_passes");
	/* Conv with bias; Conv without bias, grouped, whose BN output is also
	 * consumed by a graph output chain */
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 4, 6, 6));
	uint32_t cin[3] = {x, frand(g, "cw", TU_SHAPE(4, 6, 4, 3, 3), 0.3f, 0, 1),
	                   frand(g, "cb", TU_SHAPE(1, 6), 0.1f, 0, 2)};
	uint32_t c = nodex(g, RL_OP_Conv, "conv", cin, 3, 1, NULL, NULL);
	uint32_t y1 = add_bn(g, "bn1", c, 6);
	tu_output(g, y1);
	uint32_t cin2[2] = {y1, frand(g, "cw2", TU_SHAPE(4, 8, 3, 1, 1), 0.3f, 0, 3)};
	uint32_t c2 = nodex(g, RL_OP_Conv, "conv2", cin2, 2, 1, NULL, NULL);
	attr_i(g, c2, "group", 2);
	uint32_t y2 = add_bn(g, "bn2", c2, 8);
	tu_output(g, op1(g, RL_OP_Relu, "relu", y2));
	/* Gemm transB with alpha, beta and a [1, C] bias */
	uint32_t x3 = tu_input(g, "x3", RL_DT_FLOAT, TU_SHAPE(2, 3, 5));
	uint32_t gin[3] = {x3, frand(g, "gw", TU_SHAPE(2, 7, 5), 0.3f, 0, 4),
	                   frand(g, "gc", TU_SHAPE(2, 1, 7), 0.3f, 0, 5)};
	uint32_t gm = nodex(g, RL_OP_Gemm, "gemm", gin, 3, 1, NULL, NULL);
	attr_i(g, gm, "transB", 1);
	attr_f(g, gm, "alpha", 0.5);
	attr_f(g, gm, "beta", 2.0);
	tu_output(g, add_bn(g, "bn3", gm, 7));
	/* MatMul without a bias, and MatMul + Add (bias on the left) */
	uint32_t mm = op2(g, RL_OP_MatMul, "mm", x3, frand(g, "mw", TU_SHAPE(2, 5, 4), 0.3f, 0, 6));
	tu_output(g, add_bn(g, "bn4", mm, 4));
	uint32_t mm2 = op2(g, RL_OP_MatMul, "mm2", x3, frand(g, "mw2", TU_SHAPE(2, 5, 4), 0.3f, 0, 7));
	uint32_t ad = op2(g, RL_OP_Add, "mm2_bias", frand(g, "mb2", TU_SHAPE(1, 4), 0.3f, 0, 8), mm2);
	tu_output(g, add_bn(g, "bn5", ad, 4));
	/* a BN whose product output is also read elsewhere: not folded */
	uint32_t mm3 = op2(g, RL_OP_MatMul, "mm3", x3, frand(g, "mw3", TU_SHAPE(2, 5, 4), 0.3f, 0, 9));
	tu_output(g, add_bn(g, "bn6", mm3, 4));
	tu_output(g, op1(g, RL_OP_Relu, "mm3_relu", mm3));
	return g;
}

Test(fold, batchnorm_into_conv_gemm_matmul)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_bn, CLEANUP, &ctx);
	cr_assert_eq(count_op(g, RL_OP_BatchNormalization), 1, "only bn6 stays");
	cr_assert(has_remark(&ctx, "fold", "declined", "other uses"));
	cr_assert(has_remark(&ctx, "fold", "folded", "into Conv"));
	cr_assert(has_remark(&ctx, "fold", "folded", "into Gemm"));
	cr_assert(has_remark(&ctx, "fold", "folded", "into MatMul"));
	/* BN outputs keep their names: bn1's output is now the Conv's */
	const struct rl_node *conv = first_op(g, RL_OP_Conv);
	cr_assert_str_eq(g->values[conv->out[0]].name, "bn1_out0");
	cr_assert_eq(conv->nin, 3);
	/* MatMul without bias got an Add */
	cr_assert_eq(count_op(g, RL_OP_Add), 2);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fold, batchnorm_weight_values)
{
	/* one channel, worked by hand: W' = W * s, b' = (b - mean) * s + B */
	struct rl_graph *g = tu_graph_new(13, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 1, 2, 2));
	float w[1] = {2.0f}, b[1] = {1.0f}, sc[1] = {3.0f}, bb[1] = {0.5f}, mean[1] = {0.25f},
	      var[1] = {4.0f};
	uint32_t cin[3] = {x, tu_const(g, "w", RL_DT_FLOAT, TU_SHAPE(4, 1, 1, 1, 1), w),
	                   tu_const(g, "b", RL_DT_FLOAT, TU_SHAPE(1, 1), b)};
	uint32_t c = nodex(g, RL_OP_Conv, "conv", cin, 3, 1, NULL, NULL);
	uint32_t bin[5] = {c, tu_const(g, "sc", RL_DT_FLOAT, TU_SHAPE(1, 1), sc),
	                   tu_const(g, "bb", RL_DT_FLOAT, TU_SHAPE(1, 1), bb),
	                   tu_const(g, "mean", RL_DT_FLOAT, TU_SHAPE(1, 1), mean),
	                   tu_const(g, "var", RL_DT_FLOAT, TU_SHAPE(1, 1), var)};
	uint32_t y = nodex(g, RL_OP_BatchNormalization, "bn", bin, 5, 1, NULL, NULL);
	attr_f(g, y, "epsilon", 0.0);
	tu_output(g, y);
	struct rl_pass_ctx ctx;
	ctx_new(&ctx);
	run_passes(g, &ctx, "fold");
	const struct rl_node *conv = first_op(g, RL_OP_Conv);
	if (live_nodes(g) != 1) {
		dump_remarks(&ctx);
		rl_graph_dump(g, stderr);
	}
	cr_assert_eq(live_nodes(g), 1);
	double s = 3.0 / 2.0;
	cr_assert_float_eq(((const float *)g->values[conv->in[1]].data)[0], (float)(2.0 * s), 1e-6);
	cr_assert_float_eq(((const float *)g->values[conv->in[2]].data)[0],
	                   (float)((1.0 - 0.25) * s + 0.5), 1e-6);
	cr_assert_str_eq(g->values[conv->out[0]].name, "bn_out0");
	/* the old weight and bias are gone: nothing reads them */
	cr_assert_eq(rl_graph_find_value(g, "w"), RL_NONE);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* A Conv whose weight is a graph input: the BN cannot go into the weight and
 * becomes a per-channel Mul and Add, which the outputs must not notice. */
static struct rl_graph *build_bn_weight_input(void)
{
	struct rl_graph *g = tu_graph_new(13, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(4, 1, 3, 5, 5));
	uint32_t cin[2] = {x, tu_input(g, "w", RL_DT_FLOAT, TU_SHAPE(4, 6, 3, 3, 3))};
	uint32_t c = nodex(g, RL_OP_Conv, "conv", cin, 2, 1, NULL, NULL);
	tu_output(g, op1(g, RL_OP_Relu, "relu", add_bn(g, "bn", c, 6)));
	return g;
}

Test(fold, batchnorm_after_conv_with_runtime_weight)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_bn_weight_input, "fold", &ctx);
	if (count_op(g, RL_OP_BatchNormalization) != 0)
		dump_remarks(&ctx);
	cr_assert_eq(count_op(g, RL_OP_BatchNormalization), 0);
	cr_assert(has_remark(&ctx, "fold", "rewritten", "per-channel Mul"));
	const struct rl_node *mul = first_op(g, RL_OP_Mul), *add = first_op(g, RL_OP_Add);
	cr_assert(mul && add);
	/* x * s + t: s and t are constants of shape [C, 1, 1], the Mul reads the Conv */
	const struct rl_value *sv = &g->values[mul->in[1]];
	cr_assert(rl_value_is_const(g, mul->in[1]) && sv->shape.rank == 3 &&
	          sv->shape.d[0].v == 6 && sv->shape.d[1].v == 1 && sv->shape.d[2].v == 1);
	cr_assert_eq(g->values[mul->in[0]].producer, (uint32_t)(first_op(g, RL_OP_Conv) - g->nodes));
	cr_assert_eq(add->in[0], mul->out[0]);
	cr_assert(rl_value_is_const(g, add->in[1]));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ======================================================================== */
/* dedupe                                                                    */
/* ======================================================================== */

static struct rl_graph *build_dedupe(void)
{
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 2, 6));
	float v[6] = {1, 2, 3, 4, 5, 6};
	uint32_t a = tu_const(g, "a", RL_DT_FLOAT, TU_SHAPE(1, 6), v);
	uint32_t b = tu_const(g, "b", RL_DT_FLOAT, TU_SHAPE(1, 6), v);       /* duplicate of a */
	uint32_t c = tu_const(g, "c", RL_DT_FLOAT, TU_SHAPE(2, 1, 6), v);    /* other shape */
	uint32_t d = tu_const(g, "d", RL_DT_INT32, TU_SHAPE(1, 6), v);       /* same bits, int32 */
	uint32_t e = tu_const(g, "e", RL_DT_FLOAT, TU_SHAPE(1, 6), v);       /* duplicate, graph output */
	uint32_t y1 = op2(g, RL_OP_Mul, "m1", x, a);
	uint32_t y2 = op2(g, RL_OP_Mul, "m2", y1, b);
	uint32_t y3 = op2(g, RL_OP_Add, "a3", y2, c);
	uint32_t dc = op1(g, RL_OP_Cast, "dcast", d);
	attr_i(g, dc, "to", RL_DT_FLOAT);
	uint32_t y4 = op2(g, RL_OP_Add, "a4", y3, op2(g, RL_OP_Mul, "m5", e, dc));
	tu_output(g, y4);
	tu_output(g, e);
	return g;
}

Test(dedupe, merges_identical_initializers_only)
{
	struct rl_graph *g = build_dedupe();
	struct rl_pass_ctx ctx;
	ctx_new(&ctx);
	run_passes(g, &ctx, "dedupe");
	cr_assert_eq(rl_graph_find_value(g, "b"), RL_NONE, "b merged into a and dropped");
	cr_assert_neq(rl_graph_find_value(g, "c"), RL_NONE, "different shape: kept");
	cr_assert_neq(rl_graph_find_value(g, "d"), RL_NONE, "different dtype: kept");
	cr_assert_neq(rl_graph_find_value(g, "e"), RL_NONE, "graph output: kept");
	cr_assert_str_eq(out_name(g, 1), "e");
	cr_assert_float_eq(ctx.bytes_saved_dedupe, 24.0, 0, "only b leaves the model");
	cr_assert(has_remark(&ctx, "dedupe", "merged", "same content as 'a'"));
	cr_assert(has_remark(&ctx, "dedupe", "merged", "kept as a graph output"));
	/* e's node use now reads a */
	uint32_t a = rl_graph_find_value(g, "a");
	cr_assert_eq(g->values[a].nuses, 3);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(dedupe, big_tensors_same_ends_different_middle)
{
	/* 64 KiB tensors: b equals a; c agrees with a on its first and last
	 * 4 KiB (the cheap key) but not in the middle */
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	int64_t n = 16384;
	float *p = malloc((size_t)n * sizeof(float));
	for (int64_t i = 0; i < n; i++)
		p[i] = (float)i;
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(1, n));
	uint32_t a = tu_const(g, "a", RL_DT_FLOAT, TU_SHAPE(1, n), p);
	uint32_t b = tu_const(g, "b", RL_DT_FLOAT, TU_SHAPE(1, n), p);
	p[n / 2] = -1;
	uint32_t c = tu_const(g, "c", RL_DT_FLOAT, TU_SHAPE(1, n), p);
	free(p);
	tu_output(g, op2(g, RL_OP_Add, "y", op2(g, RL_OP_Mul, "m", op2(g, RL_OP_Add, "ya", x, a), b), c));
	struct rl_pass_ctx ctx;
	ctx_new(&ctx);
	run_passes(g, &ctx, "dedupe");
	cr_assert_eq(rl_graph_find_value(g, "b"), RL_NONE);
	cr_assert_neq(rl_graph_find_value(g, "c"), RL_NONE);
	cr_assert_float_eq(ctx.bytes_saved_dedupe, 65536.0, 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(dedupe, results_unchanged)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_dedupe, CLEANUP, &ctx);
	/* fold computes e * Cast(d) (both constant); m1 and m2 both read a
	 * after dedupe but are no duplicates (inputs x and y1) */
	cr_assert_eq(count_op(g, RL_OP_Mul), 2);
	cr_assert_eq(count_op(g, RL_OP_Cast), 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ======================================================================== */
/* cse                                                                       */
/* ======================================================================== */

static struct rl_graph *build_cse(void)
{
	struct rl_graph *g = tu_graph_new(18, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 3, 8));
	float v[8] = {1, -1, 2, -2, 3, -3, 0.5f, 4};
	uint32_t w1 = tu_const(g, "w1", RL_DT_FLOAT, TU_SHAPE(1, 8), v);
	uint32_t w2 = tu_const(g, "w2", RL_DT_FLOAT, TU_SHAPE(1, 8), v); /* merged by dedupe first */
	uint32_t m1 = op2(g, RL_OP_Mul, "m1", x, w1);
	uint32_t m2 = op2(g, RL_OP_Mul, "m2", x, w2);
	uint32_t t1 = op1(g, RL_OP_Tanh, "t1", m1);
	uint32_t t2 = op1(g, RL_OP_Tanh, "t2", m2);
	tu_output(g, t1); /* a graph output that is also consumed (by s1) */
	/* Split with two outputs, twice */
	uint32_t s1[2], s2[2], n;
	nodex(g, RL_OP_Split, "s1", &t1, 1, 2, &n, s1);
	rl_node_add_attr(g, n, "axis", RL_ATTR_INT)->i = 2;
	rl_node_add_attr(g, n, "num_outputs", RL_ATTR_INT)->i = 2;
	nodex(g, RL_OP_Split, "s2", &t2, 1, 2, &n, s2);
	rl_node_add_attr(g, n, "num_outputs", RL_ATTR_INT)->i = 2; /* attrs in another order */
	rl_node_add_attr(g, n, "axis", RL_ATTR_INT)->i = 2;
	/* Transposes that differ only in perm: not duplicates */
	uint32_t p1 = op1(g, RL_OP_Transpose, "p1", s1[0]);
	attr_ints(g, p1, "perm", 3, (int64_t[]){0, 2, 1});
	uint32_t p2 = op1(g, RL_OP_Transpose, "p2", s2[0]); /* p1 once s2 is s1 */
	attr_ints(g, p2, "perm", 3, (int64_t[]){0, 2, 1});
	uint32_t p3 = op1(g, RL_OP_Transpose, "p3", s2[0]);
	attr_ints(g, p3, "perm", 3, (int64_t[]){1, 2, 0});
	uint32_t a = op2(g, RL_OP_Add, "a", p1, p2);
	tu_output(g, a);
	tu_output(g, p3);
	/* a duplicate of t1 whose output is a graph output: must stay */
	tu_output(g, op1(g, RL_OP_Tanh, "t3", m1));
	return g;
}

Test(cse, merges_duplicates_keeps_outputs)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_cse, CLEANUP, &ctx);
	cr_assert_eq(count_op(g, RL_OP_Mul), 1, "m2 reads a copy of w1: merged after dedupe");
	cr_assert_eq(count_op(g, RL_OP_Tanh), 2, "t2 merged into t1, t3 kept (graph output)");
	cr_assert_eq(count_op(g, RL_OP_Split), 1, "two-output Split merged");
	cr_assert_eq(count_op(g, RL_OP_Transpose), 2, "different perms are kept apart");
	cr_assert(has_remark(&ctx, "cse", "declined", "is a graph output"));
	cr_assert_str_eq(out_name(g, 0), "t1_out0");
	cr_assert_str_eq(out_name(g, 3), "t3_out0");
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ======================================================================== */
/* patterns                                                                  */
/* ======================================================================== */

/* LayerNorm over the last axis written out, fed by a graph output in the
 * middle of a chain; its input also read elsewhere. */
static uint32_t layernorm(struct rl_graph *g, const char *tag, uint32_t x, int64_t D,
                          bool mulself, bool reciprocal)
{
	char n[64];
#define NM(s) (snprintf(n, sizeof(n), "%s.%s", tag, s), n)
	int64_t ax[1] = {-1};
	uint32_t m = op1(g, RL_OP_ReduceMean, NM("mean"), x);
	attr_ints(g, m, "axes", 1, ax);
	uint32_t d = op2(g, RL_OP_Sub, NM("sub"), x, m);
	uint32_t p = mulself ? op2(g, RL_OP_Mul, NM("sq"), d, d)
	                     : op2(g, RL_OP_Pow, NM("pow"), d, fscalar(g, NM("two"), 2.0f));
	uint32_t v = op1(g, RL_OP_ReduceMean, NM("var"), p);
	attr_ints(g, v, "axes", 1, ax);
	uint32_t ve = op2(g, RL_OP_Add, NM("addeps"), v, fscalar(g, NM("eps"), 1e-5f));
	uint32_t s = op1(g, RL_OP_Sqrt, NM("sqrt"), ve);
	uint32_t y = reciprocal ? op2(g, RL_OP_Mul, NM("mulr"), d, op1(g, RL_OP_Reciprocal, NM("rcp"), s))
	                        : op2(g, RL_OP_Div, NM("div"), d, s);
	y = op2(g, RL_OP_Mul, NM("gamma_mul"), frand(g, NM("gamma"), TU_SHAPE(1, D), 0.2f, 1, 21), y);
	y = op2(g, RL_OP_Add, NM("beta_add"), y, frand(g, NM("beta"), TU_SHAPE(1, D), 0.2f, 0, 22));
#undef NM
	return y;
}

static struct rl_graph *build_layernorm(void)
{
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 5, 16));
	uint32_t h = op2(g, RL_OP_Add, "pre", x, frand(g, "pb", TU_SHAPE(1, 16), 1, 0, 3));
	tu_output(g, h);
	uint32_t y = layernorm(g, "ln1", h, 16, false, false);
	tu_output(g, op2(g, RL_OP_Add, "residual", y, h));
	/* the Mul-self / Reciprocal variant */
	tu_output(g, layernorm(g, "ln2", x, 16, true, true));
	/* a near miss: the variance is over another axis (its own input, or
	 * CSE would share its first nodes with ln2) */
	int64_t ax[1] = {-1};
	x = op1(g, RL_OP_Neg, "bad.neg", x);
	uint32_t m = op1(g, RL_OP_ReduceMean, "bad.mean", x);
	attr_ints(g, m, "axes", 1, ax);
	uint32_t d = op2(g, RL_OP_Sub, "bad.sub", x, m);
	uint32_t p = op2(g, RL_OP_Mul, "bad.sq", d, d);
	uint32_t v = op1(g, RL_OP_ReduceMean, "bad.var", p);
	attr_ints(g, v, "axes", 1, (int64_t[]){-2}); /* another axis */
	tu_output(g, op2(g, RL_OP_Div, "bad.div", d, op1(g, RL_OP_Sqrt, "bad.sqrt", v)));
	return g;
}

Test(patterns, layernorm)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_layernorm, CLEANUP, &ctx);
	if (count_op(g, RL_OP_LayerNormalization) != 2) {
		dump_remarks(&ctx);
		rl_graph_dump(g, stderr);
	}
	cr_assert_eq(count_op(g, RL_OP_LayerNormalization), 2);
	const struct rl_node *ln = first_op(g, RL_OP_LayerNormalization);
	cr_assert_eq(rl_node_attr_int(ln, "axis", 0), 2);
	cr_assert_float_eq(rl_node_attr_float(ln, "epsilon", 0), 1e-5, 1e-9);
	cr_assert_eq(ln->nin, 3);
	cr_assert(has_remark(&ctx, "patterns", "applied", "written-out LayerNormalization"));
	cr_assert(has_remark(&ctx, "patterns", "rejected", "differ in axes"));
	cr_assert_eq(count_op(g, RL_OP_ReduceMean), 2, "the near miss stays written out");
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* x * 0.5 * (1 + erf(x / sqrt2)) in three orders, and the tanh form, in a
 * chain with a shared input and a graph output that is also consumed. */
static uint32_t gelu_erf(struct rl_graph *g, const char *tag, uint32_t x, int form)
{
	char n[64];
#define NM(s) (snprintf(n, sizeof(n), "%s.%s", tag, s), n)
	uint32_t t = form == 2 ? op2(g, RL_OP_Mul, NM("mul_rs2"), fscalar(g, NM("rs2"), 0.7071f), x)
	                       : op2(g, RL_OP_Div, NM("div_s2"), x, fscalar(g, NM("s2"), 1.4142f));
	uint32_t e = op1(g, RL_OP_Erf, NM("erf"), t);
	uint32_t a = op2(g, RL_OP_Add, NM("add1"), e, fscalar(g, NM("one"), 1.0f));
	uint32_t half = fscalar(g, NM("half"), 0.5f);
	uint32_t y;
	if (form == 1)
		y = op2(g, RL_OP_Mul, NM("half_mul"), op2(g, RL_OP_Mul, NM("xa"), a, x), half);
	else if (form == 2)
		y = op2(g, RL_OP_Mul, NM("mul"), op2(g, RL_OP_Mul, NM("xh"), x, half), a);
	else
		y = op2(g, RL_OP_Mul, NM("mul"), x, op2(g, RL_OP_Mul, NM("ah"), half, a));
#undef NM
	return y;
}

static uint32_t gelu_tanh(struct rl_graph *g, const char *tag, uint32_t x)
{
	char n[64];
#define NM(s) (snprintf(n, sizeof(n), "%s.%s", tag, s), n)
	uint32_t c = op2(g, RL_OP_Mul, NM("cube"), x, op2(g, RL_OP_Mul, NM("sq"), x, x));
	uint32_t q = op2(g, RL_OP_Mul, NM("q"), c, fscalar(g, NM("c0"), 0.044715f));
	uint32_t r = op2(g, RL_OP_Add, NM("r"), q, x);
	uint32_t s = op2(g, RL_OP_Mul, NM("s"), fscalar(g, NM("k"), 0.7978845608f), r);
	uint32_t t = op1(g, RL_OP_Tanh, NM("tanh"), s);
	uint32_t a = op2(g, RL_OP_Add, NM("add1"), fscalar(g, NM("one"), 1.0f), t);
	uint32_t h = op2(g, RL_OP_Div, NM("halve"), op2(g, RL_OP_Mul, NM("xa"), x, a),
	                 fscalar(g, NM("two"), 2.0f));
#undef NM
	return h;
}

static struct rl_graph *build_gelu17(void)
{
	struct rl_graph *g = tu_graph_new(17, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 4, 12));
	uint32_t g1 = gelu_erf(g, "g1", x, 1);
	tu_output(g, g1); /* graph output and consumed */
	uint32_t g2 = gelu_erf(g, "g2", g1, 2);
	uint32_t g3 = gelu_erf(g, "g3", g2, 3);
	uint32_t g4 = gelu_tanh(g, "g4", g3);
	tu_output(g, op2(g, RL_OP_Add, "y", g4, x)); /* x shared */
	return g;
}

Test(patterns, gelu_for_the_c_backend)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_gelu17, CLEANUP, &ctx);
	cr_assert_eq(count_op(g, RL_OP_Gelu), 4);
	cr_assert_eq(live_nodes(g), 5);
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].op == RL_OP_Gelu)
			cr_assert_eq(g->nodes[i].opset, 20, "Gelu exists from opset 20");
	cr_assert_str_eq(out_name(g, 0), "g1.half_mul_out0");
	cr_assert(has_remark(&ctx, "patterns", "applied", "erf GELU"));
	cr_assert(has_remark(&ctx, "patterns", "applied", "tanh GELU"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(patterns, gelu_declined_for_onnx_output_below_opset_20)
{
	struct rl_graph *g = build_gelu17();
	struct rl_pass_ctx ctx;
	ctx_new(&ctx);
	ctx.onnx_out = true;
	run_passes(g, &ctx, CLEANUP);
	cr_assert_eq(count_op(g, RL_OP_Gelu), 0);
	cr_assert(has_remark(&ctx, "patterns", "declined", "Gelu needs 20"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

static struct rl_graph *build_softmax(void)
{
	struct rl_graph *g = tu_graph_new(13, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(3, 2, 7, 5));
	for (int k = 0; k < 2; k++) {
		int64_t ax[1] = {k ? 1 : -1};
		char n[32];
		snprintf(n, sizeof(n), "sm%d.max", k);
		uint32_t mx = op1(g, RL_OP_ReduceMax, n, x);
		attr_ints(g, mx, "axes", 1, ax);
		snprintf(n, sizeof(n), "sm%d.sub", k);
		uint32_t d = op2(g, RL_OP_Sub, n, x, mx);
		snprintf(n, sizeof(n), "sm%d.exp", k);
		uint32_t e = op1(g, RL_OP_Exp, n, d);
		snprintf(n, sizeof(n), "sm%d.sum", k);
		uint32_t s = op2(g, RL_OP_ReduceSum, n, e, tu_ints(g, n, 1, ax)); /* axes input at 13 */
		snprintf(n, sizeof(n), "sm%d.div", k);
		tu_output(g, op2(g, RL_OP_Div, n, e, s));
	}
	return g;
}

Test(patterns, softmax)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_softmax, CLEANUP, &ctx);
	cr_assert_eq(count_op(g, RL_OP_Softmax), 2);
	cr_assert_eq(live_nodes(g), 2);
	cr_assert(has_remark(&ctx, "patterns", "applied", "written-out Softmax"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* Patterns leave graphs alone when an intermediate is a graph output. */
static struct rl_graph *build_gelu_mid_output(void)
{
	struct rl_graph *g = tu_graph_new(20, "test_passes");
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, TU_SHAPE(2, 3, 4));
	uint32_t t = op2(g, RL_OP_Div, "div", x, fscalar(g, "s2", 1.41421356f));
	uint32_t e = op1(g, RL_OP_Erf, "erf", t);
	tu_output(g, e);
	uint32_t a = op2(g, RL_OP_Add, "add", e, fscalar(g, "one", 1.0f));
	tu_output(g, op2(g, RL_OP_Mul, "y", op2(g, RL_OP_Mul, "xh", x, fscalar(g, "h", 0.5f)), a));
	return g;
}

Test(patterns, intermediate_graph_output_blocks_rewrite)
{
	struct rl_pass_ctx ctx;
	struct rl_graph *g = check_same(build_gelu_mid_output, CLEANUP, &ctx);
	cr_assert_eq(count_op(g, RL_OP_Gelu), 0);
	cr_assert(has_remark(&ctx, "patterns", "rejected", "not followed by + 1 alone"));
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ======================================================================== */
/* the whole cleanup on a mixed graph                                        */
/* ======================================================================== */

Test(pipeline, cleanup_order_and_idempotence)
{
	struct rl_graph *g = build_cse();
	struct rl_pass_ctx ctx;
	ctx_new(&ctx);
	run_passes(g, &ctx, CLEANUP);
	int n1 = live_nodes(g);
	uint32_t r1 = ctx.nremarks;
	/* a second run changes nothing and merges nothing */
	run_passes(g, &ctx, CLEANUP);
	cr_assert_eq(live_nodes(g), n1);
	for (uint32_t i = r1; i < ctx.nremarks; i++)
		cr_assert(strcmp(ctx.remarks[i].verdict, "merged") != 0 &&
		          strcmp(ctx.remarks[i].verdict, "folded") != 0 &&
		          strcmp(ctx.remarks[i].verdict, "applied") != 0,
		          "second run: %s %s", ctx.remarks[i].pass, ctx.remarks[i].msg);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}
