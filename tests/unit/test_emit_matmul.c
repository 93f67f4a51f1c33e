/*
 * test_emit_matmul.c - the C backend's MatMul/Gemm, Conv/ConvTranspose and
 * pooling kernels (backends/c/emit_matmul.c, emit_conv.c, emit_pool.c).
 *
 * Graphs are built by hand with the ir.h API, inferred, and written with
 * rl_emit_c() into a fresh temporary folder. Per float dtype, one graph
 * holds every variant the emitters choose between (batched and 1-D MatMul,
 * Gemm with transposes and a broadcast C, Conv in row, plane, 1x1 and
 * gather form, ConvTranspose, every pool); its C must compile with
 * `cc -std=c11 -Wall -Wextra -Werror -O2`. A second group links a small
 * main against the generated code and compares with values worked out by
 * hand.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "testutil.h"

/* ---- building graphs ---------------------------------------------------- */

static struct rl_graph *new_graph(int opset)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = opset;
	g->path = "test_emit_matmul";
	return g;
}

static uint32_t add_input(struct rl_graph *g, const char *name, enum rl_dtype dt, int rank,
                          const int64_t *dims)
{
	struct rl_shape s;
	rl_shape_set(&s, rank, dims);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	g->values[v].flags |= RL_VAL_INPUT;
	g->inputs = realloc(g->inputs, (g->ninputs + 1) * sizeof(*g->inputs));
	g->inputs[g->ninputs++] = v;
	return v;
}

/* Add a node whose outputs (fresh, to be inferred) are graph outputs. */
static uint32_t add_node_n(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin,
                           int nout, uint32_t *node)
{
	uint32_t y[2];
	for (int k = 0; k < nout; k++) {
		char name[64];
		snprintf(name, sizeof(name), "y%u", g->nvalues);
		y[k] = rl_graph_add_value(g, name, RL_DT_UNDEFINED, NULL);
	}
	uint32_t id = rl_graph_add_node(g, op, NULL, in, nin, y, nout);
	for (int k = 0; k < nout; k++) {
		g->values[y[k]].flags |= RL_VAL_OUTPUT;
		g->outputs = realloc(g->outputs, (g->noutputs + 1) * sizeof(*g->outputs));
		g->outputs[g->noutputs++] = y[k];
	}
	if (node)
		*node = id;
	return y[0];
}

static uint32_t add_node(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin,
                         uint32_t *node)
{
	return add_node_n(g, op, in, nin, 1, node);
}

static void set_int(struct rl_graph *g, uint32_t node, const char *name, int64_t v)
{
	rl_node_add_attr(g, node, name, RL_ATTR_INT)->i = v;
}

static void set_float(struct rl_graph *g, uint32_t node, const char *name, double v)
{
	rl_node_add_attr(g, node, name, RL_ATTR_FLOAT)->f = v;
}

static void set_str(struct rl_graph *g, uint32_t node, const char *name, const char *s)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_STRING);
	a->s = rl_arena_strdup(g, s);
	a->n = (int)strlen(s);
}

static void set_ints(struct rl_graph *g, uint32_t node, const char *name, int n,
                     const int64_t *v)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_INTS);
	a->ints = rl_arena_alloc(g, sizeof(int64_t) * (size_t)n);
	memcpy(a->ints, v, sizeof(int64_t) * (size_t)n);
	a->n = n;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Infer, emit DIR/m.c and compile it warning-free; returns DIR (free with
 * tu_rmtree + free). */
static char *emit_and_compile(struct rl_graph *g)
{
	char err[1024] = "", path[4200];
	enum rl_status st = rl_graph_infer(g);
	cr_assert_eq(st, RL_OK, "inference failed: %s", g->err);
	char *dir = tu_tmpdir();
	cr_assert(dir);
	snprintf(path, sizeof(path), "%s/m.c", dir);
	st = rl_emit_c(g, NULL, path, err, sizeof(err));
	cr_assert_eq(st, RL_OK, "emit failed: %s", err);
	int rc = sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -c m.c -o m.o 2> cc.log"
	            " || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "generated C in %s does not compile cleanly", dir);
	return dir;
}

/* ---- every variant compiles cleanly ------------------------------------- */

static void compile_all_for(enum rl_dtype dt)
{
	struct rl_graph *g = new_graph(19);
	uint32_t node;
	bool isf = rl_dtype_is_float(dt);

	/* MatMul: batch broadcast, 1-D operands on either side, a wide N */
	const int64_t d2x3x5[] = {2, 3, 5}, d1x5x4[] = {1, 5, 4}, d5[] = {5}, d5x600[] = {5, 600};
	uint32_t a = add_input(g, "a", dt, 3, d2x3x5);
	uint32_t b = add_input(g, "b", dt, 3, d1x5x4);
	uint32_t v = add_input(g, "v", dt, 1, d5);
	uint32_t w = add_input(g, "w", dt, 2, d5x600);
	uint32_t ab[2] = {a, b}, vb[2] = {v, b}, av[2] = {a, v}, aw[2] = {a, w};
	add_node(g, RL_OP_MatMul, ab, 2, NULL);
	add_node(g, RL_OP_MatMul, vb, 2, NULL);
	add_node(g, RL_OP_MatMul, av, 2, NULL);
	add_node(g, RL_OP_MatMul, aw, 2, NULL);

	/* Gemm: transposes, C as row, column and scalar */
	const int64_t d9x7[] = {9, 7}, d7x9[] = {7, 9}, d1x9[] = {1, 9}, d9x1[] = {9, 1}, d1[] = {1};
	uint32_t ga = add_input(g, "ga", dt, 2, d9x7);
	uint32_t gb = add_input(g, "gb", dt, 2, d7x9);
	uint32_t crow = add_input(g, "crow", dt, 2, d1x9);
	uint32_t ccol = add_input(g, "ccol", dt, 2, d9x1);
	uint32_t cone = add_input(g, "cone", dt, 1, d1);
	uint32_t g1[3] = {ga, gb, crow}, g2[3] = {ga, ga, ccol}, g3[3] = {gb, gb, cone};
	add_node(g, RL_OP_Gemm, g1, 3, &node);
	if (isf) {
		set_float(g, node, "alpha", 0.5);
		set_float(g, node, "beta", 2.0);
	}
	add_node(g, RL_OP_Gemm, g2, 3, &node);
	set_int(g, node, "transB", 1);
	add_node(g, RL_OP_Gemm, g3, 3, &node);
	set_int(g, node, "transA", 1);
	add_node(g, RL_OP_Gemm, g1, 2, NULL);

	if (!isf)
		goto done;
	/* Conv: band mode with pads, wide, 1x1, strided 1x1, depthwise, 1-D;
	 * row form (stride 5: more phases than band mode splits); 3-D (gather) */
	const int64_t dx[] = {1, 4, 9, 9}, dw3[] = {8, 4, 3, 3}, db8[] = {8};
	const int64_t dxw[] = {1, 2, 20, 90}, dww[] = {4, 2, 3, 3};
	const int64_t dw1[] = {8, 4, 1, 1}, dwd[] = {4, 1, 3, 3};
	const int64_t dx1[] = {2, 3, 17}, dw1d[] = {6, 3, 4};
	const int64_t dx3[] = {1, 2, 4, 5, 6}, dw3d[] = {3, 2, 2, 3, 2};
	const int64_t p1[] = {1, 1, 1, 1}, s2[] = {2, 2}, pl1[] = {2, 1};
	uint32_t x = add_input(g, "x", dt, 4, dx), cw = add_input(g, "cw", dt, 4, dw3);
	uint32_t cb = add_input(g, "cb", dt, 1, db8);
	uint32_t xw = add_input(g, "xw", dt, 4, dxw), cww = add_input(g, "cww", dt, 4, dww);
	uint32_t cw1 = add_input(g, "cw1", dt, 4, dw1), cwd = add_input(g, "cwd", dt, 4, dwd);
	uint32_t x1 = add_input(g, "x1", dt, 3, dx1), cw1d = add_input(g, "cw1d", dt, 3, dw1d);
	uint32_t x3 = add_input(g, "x3", dt, 5, dx3), cw3d = add_input(g, "cw3d", dt, 5, dw3d);
	uint32_t c1[3] = {x, cw, cb}, c2[2] = {xw, cww}, c3[3] = {x, cw1, cb}, c4[2] = {x, cwd};
	uint32_t c5[2] = {x1, cw1d}, c6[2] = {x3, cw3d};
	add_node(g, RL_OP_Conv, c1, 3, &node);
	set_ints(g, node, "pads", 4, p1);
	add_node(g, RL_OP_Conv, c2, 2, &node);
	set_ints(g, node, "pads", 4, p1);
	add_node(g, RL_OP_Conv, c3, 3, NULL);
	add_node(g, RL_OP_Conv, c3, 3, &node);
	set_ints(g, node, "strides", 2, s2);
	add_node(g, RL_OP_Conv, c4, 2, &node);
	set_int(g, node, "group", 4);
	set_str(g, node, "auto_pad", "SAME_LOWER");
	add_node(g, RL_OP_Conv, c5, 2, &node);
	set_ints(g, node, "pads", 2, pl1);
	add_node(g, RL_OP_Conv, c6, 2, &node);
	set_str(g, node, "auto_pad", "SAME_UPPER");
	const int64_t dw5[] = {4, 4, 5, 5}, s5[] = {5, 5};
	uint32_t cw5 = add_input(g, "cw5", dt, 4, dw5), c7[2] = {x, cw5};
	add_node(g, RL_OP_Conv, c7, 2, &node);
	set_ints(g, node, "strides", 2, s5);
	set_ints(g, node, "pads", 4, p1);
	/* ConvTranspose: W is C x M/group */
	const int64_t dwt[] = {4, 3, 3, 3};
	uint32_t cwt = add_input(g, "cwt", dt, 4, dwt);
	uint32_t t1[2] = {x, cwt};
	add_node(g, RL_OP_ConvTranspose, t1, 2, &node);
	set_ints(g, node, "strides", 2, s2);
	set_ints(g, node, "pads", 4, p1);

	/* pools */
	const int64_t k3[] = {3, 3}, k22[] = {2, 2};
	add_node_n(g, RL_OP_MaxPool, &x, 1, 2, &node);
	set_ints(g, node, "kernel_shape", 2, k3);
	set_ints(g, node, "strides", 2, s2);
	set_ints(g, node, "pads", 4, p1);
	set_int(g, node, "storage_order", 1);
	add_node(g, RL_OP_AveragePool, &x, 1, &node);
	set_ints(g, node, "kernel_shape", 2, k3);
	set_ints(g, node, "strides", 2, s2);
	set_ints(g, node, "pads", 4, p1);
	set_int(g, node, "ceil_mode", 1);
	set_int(g, node, "count_include_pad", 1);
	add_node(g, RL_OP_AveragePool, &x, 1, &node);
	set_ints(g, node, "kernel_shape", 2, k22);
	set_str(g, node, "auto_pad", "SAME_UPPER");
	add_node(g, RL_OP_LpPool, &x, 1, &node);
	set_ints(g, node, "kernel_shape", 2, k22);
	set_int(g, node, "p", 3);
	add_node(g, RL_OP_GlobalAveragePool, &x, 1, NULL);
	add_node(g, RL_OP_GlobalMaxPool, &x3, 1, NULL);
done:;
	char *dir = emit_and_compile(g);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

Test(emit_matmul, compiles_float32) { compile_all_for(RL_DT_FLOAT); }
Test(emit_matmul, compiles_float64) { compile_all_for(RL_DT_DOUBLE); }
Test(emit_matmul, compiles_float16) { compile_all_for(RL_DT_FLOAT16); }
Test(emit_matmul, compiles_bfloat16) { compile_all_for(RL_DT_BFLOAT16); }
Test(emit_matmul, compiles_int32) { compile_all_for(RL_DT_INT32); }
Test(emit_matmul, compiles_int64) { compile_all_for(RL_DT_INT64); }
Test(emit_matmul, compiles_uint64) { compile_all_for(RL_DT_UINT64); }

/* ---- generated code computes the right values --------------------------- */

/* Write main.c, build it against the generated code, run it; returns what
 * it printed (malloc'd). */
static char *run_model(struct rl_graph *g, const char *main_src)
{
	char *dir = emit_and_compile(g);
	char path[4200];
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, main_src, strlen(main_src)), 0);
	int rc = sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 main.c m.o -lm -o run 2> cc.log"
	            " && ./run > out.txt || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "building or running the program in %s failed", dir);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = 0;
	fclose(f);
	tu_rmtree(dir);
	free(dir);
	return buf;
}

Test(emit_matmul, runs_matmul_gemm)
{
	struct rl_graph *g = new_graph(13);
	const int64_t d23[] = {2, 3}, d32[] = {3, 2}, d2[] = {2};
	uint32_t node;
	uint32_t a = add_input(g, "a", RL_DT_FLOAT, 2, d23);
	uint32_t b = add_input(g, "b", RL_DT_FLOAT, 2, d32);
	uint32_t c = add_input(g, "c", RL_DT_FLOAT, 1, d2);
	uint32_t p = add_input(g, "p", RL_DT_INT32, 2, d23);
	uint32_t q = add_input(g, "q", RL_DT_INT32, 2, d32);
	uint32_t ab[2] = {a, b}, pq[2] = {p, q}, aac[3] = {a, a, c};
	add_node(g, RL_OP_MatMul, ab, 2, NULL);  /* out 0 */
	add_node(g, RL_OP_MatMul, pq, 2, NULL);  /* out 1: wraps like int32 */
	add_node(g, RL_OP_Gemm, aac, 3, &node);  /* out 2: 2 * a a^T + 10 * c */
	set_int(g, node, "transB", 1);
	set_float(g, node, "alpha", 2.0);
	set_float(g, node, "beta", 10.0);
	const char *src =
		"#include <stdio.h>\n#include <stdint.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, -1}, c[2] = {1, 2};\n"
		"    int32_t p[6] = {65536, 1, 2, 3, 4, 5}, q[6] = {65536, 0, 1, 1, 1, 2};\n"
		"    float y0[4], y2[4];\n    int32_t y1[4];\n"
		"    const void *in[6] = {a, b, c, p, q, 0};\n"
		"    void *out[3] = {y0, y1, y2};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    for (int i = 0; i < 4; i++) printf(\"%g \", y0[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%d \", (int)y1[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%g \", y2[i]);\n    printf(\"\\n\");\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = run_model(g, src);
	const char *want =
		"4 -1 10 -1 \n"      /* [1 2 3; 4 5 6] x [1 0; 0 1; 1 -1] */
		"3 5 196617 14 \n"   /* 65536 * 65536 wraps to 0 in int32 */
		"38 84 74 174 \n";   /* 2 * [14 32; 32 77] + 10 * [1 2] per row */
	cr_assert_str_eq(got, want);
	free(got);
	rl_graph_free(g);
}

Test(emit_matmul, runs_conv_pool)
{
	struct rl_graph *g = new_graph(13);
	const int64_t dx[] = {1, 1, 3, 3}, dw[] = {1, 1, 2, 2}, k2[] = {2, 2}, p1[] = {1, 1, 1, 1};
	const int64_t s2[] = {2, 2};
	uint32_t node;
	uint32_t x = add_input(g, "x", RL_DT_FLOAT, 4, dx);
	uint32_t w = add_input(g, "w", RL_DT_FLOAT, 4, dw);
	uint32_t xw[2] = {x, w};
	add_node(g, RL_OP_Conv, xw, 2, NULL);              /* out 0: 2x2 box sums */
	add_node(g, RL_OP_Conv, xw, 2, &node);             /* out 1: padded, stride 2 */
	set_ints(g, node, "pads", 4, p1);
	set_ints(g, node, "strides", 2, s2);
	add_node_n(g, RL_OP_MaxPool, &x, 1, 2, &node);     /* out 2, 3: values, indices */
	set_ints(g, node, "kernel_shape", 2, k2);
	set_ints(g, node, "strides", 2, s2);
	set_ints(g, node, "pads", 4, p1);
	add_node(g, RL_OP_AveragePool, &x, 1, &node);      /* out 4: pads not counted */
	set_ints(g, node, "kernel_shape", 2, k2);
	set_ints(g, node, "strides", 2, s2);
	set_ints(g, node, "pads", 4, p1);
	const char *src =
		"#include <stdio.h>\n#include <stdint.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1};\n"
		"    float y0[4], y1[4], y2[4], y4[4];\n    int64_t y3[4];\n"
		"    const void *in[3] = {x, w, 0};\n"
		"    void *out[5] = {y0, y1, y2, y3, y4};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    for (int i = 0; i < 4; i++) printf(\"%g \", y0[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%g \", y1[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%g \", y2[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%d \", (int)y3[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%g \", y4[i]);\n    printf(\"\\n\");\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = run_model(g, src);
	const char *want =
		"12 16 24 28 \n"   /* [1 2; 4 5], [2 3; 5 6], ... summed */
		"1 5 11 28 \n"     /* windows at -1, 1 on each axis, clipped */
		"1 3 7 9 \n"       /* max of the same windows */
		"0 2 6 8 \n"       /* flat indices of those maxima */
		"1 2.5 5.5 7 \n";  /* averages over the taps inside the input */
	cr_assert_str_eq(got, want);
	free(got);
	rl_graph_free(g);
}
