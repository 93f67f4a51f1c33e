/*
 * test_fuse.c - the fuse pass's grouping decisions (passes/fuse.c) on graphs
 * built by hand, and the fused kernels the C backend writes for them
 * (backends/c/emit_fused.c): chains, DAGs, several outputs, what must not
 * fuse (different iteration spaces, paths that leave the group, symbolic
 * shapes, the size cap), epilogues of MatMul/Gemm/Conv and the cases that
 * block them, and that the generated C compiles warning-free.
 */
#include <criterion/criterion.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "passes/pass.h"
#include "testutil.h"

/* ---- building graphs ---------------------------------------------------- */

static const float k_scalar[] = {1.5f};
static float k_weights[4096];

/* A float32 constant of the given shape (data: zeros or k_scalar). */
static uint32_t fconst(struct rl_graph *g, const char *name, int rank, const int64_t *dims)
{
	struct rl_shape s;
	rl_shape_set(&s, rank, dims);
	uint32_t v = rl_graph_add_value(g, name, RL_DT_FLOAT, &s);
	int64_t n = rl_shape_numel(&s);
	cr_assert(n <= 4096);
	rl_value_set_data(g, v, n == 1 ? (const void *)k_scalar : (const void *)k_weights,
	                  (size_t)n * 4);
	return v;
}

static uint32_t scalar(struct rl_graph *g, const char *name)
{
	return fconst(g, name, 0, NULL);
}

/* Node `name` with one fresh output; returns the output value. */
static uint32_t op(struct rl_graph *g, enum rl_op o, const char *name, int nin, ...)
{
	uint32_t in[8];
	va_list ap;
	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, uint32_t);
	va_end(ap);
	char vn[80];
	snprintf(vn, sizeof(vn), "%s.out", name);
	uint32_t y = rl_graph_add_value(g, vn, RL_DT_UNDEFINED, NULL);
	rl_graph_add_node(g, o, name, in, nin, &y, 1);
	return y;
}

static uint32_t node_of(struct rl_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && strcmp(g->nodes[i].name, name) == 0)
			return i;
	cr_assert_fail("no node %s", name);
	return RL_NONE;
}

static int32_t group(struct rl_graph *g, const char *name)
{
	return g->nodes[node_of(g, name)].group;
}

/* Infer, verify and run the fuse pass alone; ctx for the remarks. */
static void run_fuse(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	cr_assert_eq(rl_graph_infer(g), RL_OK, "inference: %s", g->err);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "verify: %s", g->err);
	rl_pass_ctx_init(ctx, NULL, 2);
	cr_assert_eq(rl_pipeline_run(g, ctx, "fuse"), RL_OK, "fuse: %s", g->err);
}

/* Remarks of the fuse pass whose verdict is `verdict` and whose message
 * contains `text` (NULL: any). */
static int remarks(const struct rl_pass_ctx *ctx, const char *verdict, const char *text)
{
	int n = 0;
	for (uint32_t i = 0; i < ctx->nremarks; i++) {
		const struct rl_remark *r = &ctx->remarks[i];
		if (strcmp(r->pass, "fuse") == 0 && strcmp(r->verdict, verdict) == 0 &&
		    (!text || strstr(r->msg, text)))
			n++;
	}
	return n;
}

static int ngroups(const struct rl_graph *g)
{
	int32_t max = -1;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && g->nodes[i].group > max)
			max = g->nodes[i].group;
	return max + 1;
}

/* ---- the pipeline ------------------------------------------------------- */

Test(fuse, registered_after_dce_at_O2)
{
	int dce = -1, fuse = -1;
	for (int i = 0; rl_pipeline[i].name; i++) {
		if (strcmp(rl_pipeline[i].name, "dce") == 0)
			dce = i;
		if (strcmp(rl_pipeline[i].name, "fuse") == 0) {
			fuse = i;
			cr_assert_eq(rl_pipeline[i].min_level, 2);
		}
	}
	cr_assert(fuse >= 0 && dce >= 0 && fuse > dce);
}

/* ---- elementwise groups ------------------------------------------------- */

Test(fuse, chain_is_one_group_and_bytes_are_counted)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {1000};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(1, d));
	uint32_t t = op(g, RL_OP_Mul, "mul", 2, x, scalar(g, "c"));
	t = op(g, RL_OP_Relu, "relu", 1, t);
	t = op(g, RL_OP_Exp, "exp", 1, t);
	tu_output(g, t);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "mul") == 0 && group(g, "relu") == 0 && group(g, "exp") == 0);
	/* unfused: Mul 4000 + 4 + 4000, Relu 8000, Exp 8000; fused: 4000 + 4000 */
	cr_assert_float_eq(ctx.bytes_saved_fusion, 24004.0 - 8000.0, 0.5);
	cr_assert_eq(remarks(&ctx, "applied", "3 elementwise ops"), 1);
	bool found = false;
	for (uint32_t i = 0; i < ctx.nremarks; i++)
		if (strcmp(ctx.remarks[i].verdict, "applied") == 0) {
			cr_assert_float_eq(ctx.remarks[i].bytes_before, 24004.0, 0.5);
			cr_assert_float_eq(ctx.remarks[i].bytes_after, 8000.0, 0.5);
			found = true;
		}
	cr_assert(found);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, dag_with_a_shared_value)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {8, 16};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, d));
	uint32_t a = op(g, RL_OP_Mul, "a", 2, x, scalar(g, "c1"));
	uint32_t b = op(g, RL_OP_Add, "b", 2, x, scalar(g, "c2"));
	uint32_t c = op(g, RL_OP_Mul, "c", 2, a, b);
	uint32_t e = op(g, RL_OP_Sub, "e", 2, c, a);
	tu_output(g, e);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "a") == 0 && group(g, "b") == 0 && group(g, "c") == 0 &&
	          group(g, "e") == 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, outputs_in_the_middle_and_consumed)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {64};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(1, d));
	uint32_t t = op(g, RL_OP_Relu, "t", 1, x);
	uint32_t u = op(g, RL_OP_Mul, "u", 2, t, t);
	uint32_t y = op(g, RL_OP_Tanh, "y", 1, u);
	tu_output(g, t);
	tu_output(g, y);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "t") == 0 && group(g, "u") == 0 && group(g, "y") == 0);
	cr_assert_eq(remarks(&ctx, "applied", "writing 2 tensors"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, different_iteration_spaces_stay_apart)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d1[] = {1, 50}, d2[] = {20, 50};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, d1));
	uint32_t z = tu_input(g, "z", RL_DT_FLOAT, tu_dims(2, d2));
	uint32_t a = op(g, RL_OP_Exp, "a", 1, x);
	uint32_t b = op(g, RL_OP_Add, "b", 2, a, z);
	tu_output(g, b);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 0);
	cr_assert_eq(remarks(&ctx, "rejected", "different iteration spaces"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, no_group_through_a_path_that_leaves_it)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {6, 10}, one[] = {1};
	static const int64_t axes[] = {1};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, d));
	uint32_t a = op(g, RL_OP_Relu, "a", 1, x);
	struct rl_shape s1;
	rl_shape_set(&s1, 1, one);
	uint32_t ax = rl_graph_add_value(g, "axes", RL_DT_INT64, &s1);
	rl_value_set_data(g, ax, axes, sizeof(axes));
	uint32_t s = op(g, RL_OP_ReduceSum, "sum", 2, a, ax);
	uint32_t b = op(g, RL_OP_Mul, "b", 2, a, s);
	tu_output(g, b);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 0, "Relu and Mul must not fuse: Mul also reads the sum of Relu");
	cr_assert_eq(remarks(&ctx, "rejected", "comes back"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, symbolic_shapes_are_left_alone)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	struct rl_shape s = {.rank = 2};
	s.d[0].v = RL_DIM_SYMBOLIC;
	s.d[0].sym = "batch";
	s.d[1].v = 4;
	uint32_t x = rl_graph_add_value(g, "x", RL_DT_FLOAT, &s);
	g->values[x].flags |= RL_VAL_INPUT;
	g->inputs = realloc(g->inputs, sizeof(*g->inputs));
	g->inputs[g->ninputs++] = x;
	uint32_t t = op(g, RL_OP_Relu, "a", 1, x);
	t = op(g, RL_OP_Neg, "b", 1, t);
	tu_output(g, t);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, long_chains_are_cut_at_the_cap)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {32};
	uint32_t t = tu_input(g, "x", RL_DT_FLOAT, tu_dims(1, d));
	char nm[32];
	for (int i = 0; i < 100; i++) {
		snprintf(nm, sizeof(nm), "neg%d", i);
		t = op(g, RL_OP_Neg, nm, 1, t);
	}
	tu_output(g, t);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 2);
	cr_assert_eq(group(g, "neg0"), group(g, "neg63"));
	cr_assert_neq(group(g, "neg63"), group(g, "neg64"));
	cr_assert_eq(remarks(&ctx, "rejected", "exceed 64 nodes"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, cast_inside_a_chain)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {10};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(1, d));
	uint32_t t = op(g, RL_OP_Mul, "mul", 2, x, scalar(g, "c"));
	t = op(g, RL_OP_Cast, "to_i32", 1, t);
	rl_node_add_attr(g, node_of(g, "to_i32"), "to", RL_ATTR_INT)->i = RL_DT_INT32;
	t = op(g, RL_OP_Neg, "neg", 1, t);
	t = op(g, RL_OP_Cast, "to_f16", 1, t);
	rl_node_add_attr(g, node_of(g, "to_f16"), "to", RL_ATTR_INT)->i = RL_DT_FLOAT16;
	tu_output(g, t);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "mul") == 0 && group(g, "to_i32") == 0 && group(g, "neg") == 0 &&
	          group(g, "to_f16") == 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, decided_afresh_when_run_again)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t d[] = {16};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(1, d));
	uint32_t t = op(g, RL_OP_Relu, "a", 1, x);
	t = op(g, RL_OP_Neg, "b", 1, t);
	tu_output(g, t);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(rl_pipeline_run(g, &ctx, "fuse"), RL_OK);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "a") == 0 && group(g, "b") == 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- epilogues ---------------------------------------------------------- */

Test(fuse, matmul_bias_relu_is_one_epilogue_group)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t dx[] = {4, 8}, dw[] = {8, 16}, db[] = {16};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, dx));
	uint32_t h = op(g, RL_OP_MatMul, "mm", 2, x, fconst(g, "w", 2, dw));
	h = op(g, RL_OP_Add, "bias", 2, h, fconst(g, "b", 1, db));
	h = op(g, RL_OP_Relu, "relu", 1, h);
	tu_output(g, h);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "mm") == 0 && group(g, "bias") == 0 && group(g, "relu") == 0);
	cr_assert_eq(remarks(&ctx, "applied", "epilogue of MatMul mm"), 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, no_epilogue_when_the_product_is_used_elsewhere)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t dx[] = {4, 8}, dw[] = {8, 8};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, dx));
	uint32_t h = op(g, RL_OP_MatMul, "mm", 2, x, fconst(g, "w", 2, dw));
	uint32_t a = op(g, RL_OP_Add, "add", 2, h, scalar(g, "one"));
	uint32_t y = op(g, RL_OP_Tanh, "tanh", 1, a);
	uint32_t z = op(g, RL_OP_Mul, "other", 2, h, x); /* a second use of mm */
	tu_output(g, y);
	tu_output(g, z);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(group(g, "mm"), -1);
	cr_assert_neq(group(g, "add"), -1);
	cr_assert_eq(group(g, "add"), group(g, "tanh"));
	cr_assert(remarks(&ctx, "rejected", "also feeds") >= 1);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

Test(fuse, conv_residual_relu_epilogue)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t dx[] = {1, 4, 6, 6}, dw[] = {4, 4, 3, 3};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(4, dx));
	uint32_t h = op(g, RL_OP_Conv, "conv", 2, x, fconst(g, "w", 4, dw));
	int64_t pads[] = {1, 1, 1, 1};
	struct rl_attr *a = rl_node_add_attr(g, node_of(g, "conv"), "pads", RL_ATTR_INTS);
	a->n = 4;
	a->ints = rl_arena_alloc(g, sizeof(pads));
	memcpy(a->ints, pads, sizeof(pads));
	h = op(g, RL_OP_Add, "res", 2, h, x);
	h = op(g, RL_OP_Relu, "relu", 1, h);
	tu_output(g, h);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 1);
	cr_assert(group(g, "conv") == 0 && group(g, "res") == 0 && group(g, "relu") == 0);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- the generated C ---------------------------------------------------- */

static int count(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Groups of every kind in one graph: the C has one kernel per group and
 * compiles with -Wall -Wextra -Werror. */
Test(fuse, emitted_kernels_compile_cleanly)
{
	struct rl_graph *g = tu_graph_new(17, "test_fuse");
	const int64_t dx[] = {5, 8}, dw[] = {8, 12}, db[] = {12}, dgw[] = {12, 8};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, dx));
	uint32_t r = tu_input(g, "r", RL_DT_FLOAT, TU_SHAPE(2, 5, 12));
	uint32_t z = tu_input(g, "z", RL_DT_FLOAT, TU_SHAPE(1, 12));
	/* Gemm (transB) + bias + Relu */
	uint32_t h = op(g, RL_OP_Gemm, "fc", 2, x, fconst(g, "gw", 2, dgw));
	rl_node_add_attr(g, node_of(g, "fc"), "transB", RL_ATTR_INT)->i = 1;
	h = op(g, RL_OP_Add, "fc.bias", 2, h, fconst(g, "gb", 1, db));
	h = op(g, RL_OP_Relu, "fc.relu", 1, h);
	tu_output(g, h);
	/* MatMul + scale + residual, writing two values: a bool mask too */
	uint32_t m = op(g, RL_OP_MatMul, "mm", 2, x, fconst(g, "w", 2, dw));
	m = op(g, RL_OP_Mul, "mm.scale", 2, m, scalar(g, "s"));
	m = op(g, RL_OP_Add, "mm.res", 2, m, r);
	uint32_t mask = op(g, RL_OP_Greater, "mm.mask", 2, m, scalar(g, "zero"));
	tu_output(g, mask);
	tu_output(g, m);
	/* elementwise: float -> float16 -> float, a comparison and Where */
	uint32_t c = op(g, RL_OP_Cast, "to_half", 1, z);
	rl_node_add_attr(g, node_of(g, "to_half"), "to", RL_ATTR_INT)->i = RL_DT_FLOAT16;
	c = op(g, RL_OP_Cast, "to_float", 1, c);
	rl_node_add_attr(g, node_of(g, "to_float"), "to", RL_ATTR_INT)->i = RL_DT_FLOAT;
	uint32_t gt = op(g, RL_OP_Greater, "gt", 2, c, scalar(g, "zero2"));
	uint32_t w = op(g, RL_OP_Where, "where", 3, gt, c, z);
	uint32_t y = op(g, RL_OP_Tanh, "tanh", 1, w);
	tu_output(g, y);
	tu_output(g, gt);
	struct rl_pass_ctx ctx;
	run_fuse(g, &ctx);
	cr_assert_eq(ngroups(g), 3, "%d groups", ngroups(g));
	cr_assert_eq(group(g, "mm"), group(g, "mm.mask"));
	cr_assert_eq(remarks(&ctx, "applied", "epilogue of"), 2);

	char err[1024] = "", path[4200];
	char *dir = tu_tmpdir();
	cr_assert(dir);
	snprintf(path, sizeof(path), "%s/m.c", dir);
	cr_assert_eq(rl_emit_c(g, NULL, path, err, sizeof(err)), RL_OK, "emit: %s", err);
	char *text = tu_read_text(path);
	/* the -DRL_PROFILE section names every kernel again: blanked for the counts */
	char *ps = strstr(text, "#ifdef RL_PROFILE"), *pe = ps ? strstr(ps, "#endif /* RL_PROFILE */") : NULL;
	cr_assert(ps && pe, "the profile section is there");
	memset(ps, ' ', (size_t)(pe - ps));
	/* a vectorized kernel is `static RL_TARGETS void k...` (compiled per ISA) */
	cr_assert_eq(count(text, "\nstatic void k") + count(text, "\nstatic RL_TARGETS void k"), 3,
	             "three kernels, one per group");
	cr_assert_eq(count(text, "_fused_"), 6, "three fused kernels, defined and called");
	cr_assert(strstr(text, " *   'fc.relu' (Relu)"), "the comment lists the nodes replaced");
	cr_assert(strstr(text, "Y1[eq + ee] = "), "the epilogue writes its second value");
	char cmd[8400];
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -c m.c -o m.o 2> cc.log"
	         " || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(system(cmd), 0, "generated C in %s does not compile cleanly", dir);
	free(text);
	tu_rmtree(dir);
	free(dir);
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}
