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

/* ---- every variant compiles cleanly ------------------------------------- */

static void compile_all_for(enum rl_dtype dt)
{
	struct rl_graph *g = tu_graph_new(19, "test_emit_matmul");
	uint32_t node;
	bool isf = rl_dtype_is_float(dt);

	/* MatMul: batch broadcast, 1-D operands on either side, a wide N */
	const int64_t d2x3x5[] = {2, 3, 5}, d1x5x4[] = {1, 5, 4}, d5[] = {5}, d5x600[] = {5, 600};
	uint32_t a = tu_input(g, "a", dt, tu_dims(3, d2x3x5));
	uint32_t b = tu_input(g, "b", dt, tu_dims(3, d1x5x4));
	uint32_t v = tu_input(g, "v", dt, tu_dims(1, d5));
	uint32_t w = tu_input(g, "w", dt, tu_dims(2, d5x600));
	uint32_t ab[2] = {a, b}, vb[2] = {v, b}, av[2] = {a, v}, aw[2] = {a, w};
	tu_add_flow(g, RL_OP_MatMul, ab, 2, 1, NULL);
	tu_add_flow(g, RL_OP_MatMul, vb, 2, 1, NULL);
	tu_add_flow(g, RL_OP_MatMul, av, 2, 1, NULL);
	tu_add_flow(g, RL_OP_MatMul, aw, 2, 1, NULL);

	/* Gemm: transposes, C as row, column and scalar */
	const int64_t d9x7[] = {9, 7}, d7x9[] = {7, 9}, d1x9[] = {1, 9}, d9x1[] = {9, 1}, d1[] = {1};
	uint32_t ga = tu_input(g, "ga", dt, tu_dims(2, d9x7));
	uint32_t gb = tu_input(g, "gb", dt, tu_dims(2, d7x9));
	uint32_t crow = tu_input(g, "crow", dt, tu_dims(2, d1x9));
	uint32_t ccol = tu_input(g, "ccol", dt, tu_dims(2, d9x1));
	uint32_t cone = tu_input(g, "cone", dt, tu_dims(1, d1));
	uint32_t g1[3] = {ga, gb, crow}, g2[3] = {ga, ga, ccol}, g3[3] = {gb, gb, cone};
	tu_add_flow(g, RL_OP_Gemm, g1, 3, 1, &node);
	if (isf) {
		tu_attr_f(g, node, "alpha", 0.5);
		tu_attr_f(g, node, "beta", 2.0);
	}
	tu_add_flow(g, RL_OP_Gemm, g2, 3, 1, &node);
	tu_attr_i(g, node, "transB", 1);
	tu_add_flow(g, RL_OP_Gemm, g3, 3, 1, &node);
	tu_attr_i(g, node, "transA", 1);
	tu_add_flow(g, RL_OP_Gemm, g1, 2, 1, NULL);

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
	uint32_t x = tu_input(g, "x", dt, tu_dims(4, dx)), cw = tu_input(g, "cw", dt, tu_dims(4, dw3));
	uint32_t cb = tu_input(g, "cb", dt, tu_dims(1, db8));
	uint32_t xw = tu_input(g, "xw", dt, tu_dims(4, dxw));
	uint32_t cww = tu_input(g, "cww", dt, tu_dims(4, dww));
	uint32_t cw1 = tu_input(g, "cw1", dt, tu_dims(4, dw1));
	uint32_t cwd = tu_input(g, "cwd", dt, tu_dims(4, dwd));
	uint32_t x1 = tu_input(g, "x1", dt, tu_dims(3, dx1));
	uint32_t cw1d = tu_input(g, "cw1d", dt, tu_dims(3, dw1d));
	uint32_t x3 = tu_input(g, "x3", dt, tu_dims(5, dx3));
	uint32_t cw3d = tu_input(g, "cw3d", dt, tu_dims(5, dw3d));
	uint32_t c1[3] = {x, cw, cb}, c2[2] = {xw, cww}, c3[3] = {x, cw1, cb}, c4[2] = {x, cwd};
	uint32_t c5[2] = {x1, cw1d}, c6[2] = {x3, cw3d};
	tu_add_flow(g, RL_OP_Conv, c1, 3, 1, &node);
	tu_attr_ints(g, node, "pads", 4, p1);
	tu_add_flow(g, RL_OP_Conv, c2, 2, 1, &node);
	tu_attr_ints(g, node, "pads", 4, p1);
	tu_add_flow(g, RL_OP_Conv, c3, 3, 1, NULL);
	tu_add_flow(g, RL_OP_Conv, c3, 3, 1, &node);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_add_flow(g, RL_OP_Conv, c4, 2, 1, &node);
	tu_attr_i(g, node, "group", 4);
	tu_attr_s(g, node, "auto_pad", "SAME_LOWER");
	tu_add_flow(g, RL_OP_Conv, c5, 2, 1, &node);
	tu_attr_ints(g, node, "pads", 2, pl1);
	tu_add_flow(g, RL_OP_Conv, c6, 2, 1, &node);
	tu_attr_s(g, node, "auto_pad", "SAME_UPPER");
	const int64_t dw5[] = {4, 4, 5, 5}, s5[] = {5, 5};
	uint32_t cw5 = tu_input(g, "cw5", dt, tu_dims(4, dw5)), c7[2] = {x, cw5};
	tu_add_flow(g, RL_OP_Conv, c7, 2, 1, &node);
	tu_attr_ints(g, node, "strides", 2, s5);
	tu_attr_ints(g, node, "pads", 4, p1);
	/* ConvTranspose: W is C x M/group */
	const int64_t dwt[] = {4, 3, 3, 3};
	uint32_t cwt = tu_input(g, "cwt", dt, tu_dims(4, dwt));
	uint32_t t1[2] = {x, cwt};
	tu_add_flow(g, RL_OP_ConvTranspose, t1, 2, 1, &node);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_attr_ints(g, node, "pads", 4, p1);

	/* pools */
	const int64_t k3[] = {3, 3}, k22[] = {2, 2};
	tu_add_flow(g, RL_OP_MaxPool, &x, 1, 2, &node);
	tu_attr_ints(g, node, "kernel_shape", 2, k3);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_attr_ints(g, node, "pads", 4, p1);
	tu_attr_i(g, node, "storage_order", 1);
	tu_add_flow(g, RL_OP_AveragePool, &x, 1, 1, &node);
	tu_attr_ints(g, node, "kernel_shape", 2, k3);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_attr_ints(g, node, "pads", 4, p1);
	tu_attr_i(g, node, "ceil_mode", 1);
	tu_attr_i(g, node, "count_include_pad", 1);
	tu_add_flow(g, RL_OP_AveragePool, &x, 1, 1, &node);
	tu_attr_ints(g, node, "kernel_shape", 2, k22);
	tu_attr_s(g, node, "auto_pad", "SAME_UPPER");
	tu_add_flow(g, RL_OP_LpPool, &x, 1, 1, &node);
	tu_attr_ints(g, node, "kernel_shape", 2, k22);
	tu_attr_i(g, node, "p", 3);
	tu_add_flow(g, RL_OP_GlobalAveragePool, &x, 1, 1, NULL);
	tu_add_flow(g, RL_OP_GlobalMaxPool, &x3, 1, 1, NULL);
done:;
	char *dir = tu_emit_compile(g);
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

Test(emit_matmul, runs_matmul_gemm)
{
	struct rl_graph *g = tu_graph_new(13, "test_emit_matmul");
	const int64_t d23[] = {2, 3}, d32[] = {3, 2}, d2[] = {2};
	uint32_t node;
	uint32_t a = tu_input(g, "a", RL_DT_FLOAT, tu_dims(2, d23));
	uint32_t b = tu_input(g, "b", RL_DT_FLOAT, tu_dims(2, d32));
	uint32_t c = tu_input(g, "c", RL_DT_FLOAT, tu_dims(1, d2));
	uint32_t p = tu_input(g, "p", RL_DT_INT32, tu_dims(2, d23));
	uint32_t q = tu_input(g, "q", RL_DT_INT32, tu_dims(2, d32));
	uint32_t ab[2] = {a, b}, pq[2] = {p, q}, aac[3] = {a, a, c};
	tu_add_flow(g, RL_OP_MatMul, ab, 2, 1, NULL);  /* out 0 */
	tu_add_flow(g, RL_OP_MatMul, pq, 2, 1, NULL);  /* out 1: wraps like int32 */
	tu_add_flow(g, RL_OP_Gemm, aac, 3, 1, &node);  /* out 2: 2 * a a^T + 10 * c */
	tu_attr_i(g, node, "transB", 1);
	tu_attr_f(g, node, "alpha", 2.0);
	tu_attr_f(g, node, "beta", 10.0);
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
	char *got = tu_run_model(g, src);
	const char *want =
		"4 -1 10 -1 \n"      /* [1 2 3; 4 5 6] x [1 0; 0 1; 1 -1] */
		"3 5 196617 14 \n"   /* 65536 * 65536 wraps to 0 in int32 */
		"38 84 74 174 \n";   /* 2 * [14 32; 32 77] + 10 * [1 2] per row */
	cr_assert_str_eq(got, want);
	free(got);
	rl_graph_free(g);
}

/* B of a packed product that the passes know but the run computes: a
 * 32 KiB ConstantOfShape is run at load rather than embedded (emit.c), so it
 * lives in the workspace and must not be packed at init, before any run has
 * filled it (it was: a NULL-based read, found on PP-OCRv4's recognizer,
 * whose weights were Constant nodes the same rule ran). */
Test(emit_matmul, runs_gemm_with_computed_constant_b)
{
	struct rl_graph *g = tu_graph_new(13, "test_emit_matmul");
	uint32_t a = tu_input(g, "a", RL_DT_FLOAT, TU_SHAPE(2, 64, 64));
	uint32_t shp = tu_ints(g, "shp", 2, (int64_t[]){64, 128});
	float half = 0.5f;
	uint32_t hv = tu_const(g, "half", RL_DT_FLOAT, TU_SHAPE(1, 1), &half);
	uint32_t cs = tu_node(g, RL_OP_ConstantOfShape, "b", 1, 1, shp);
	rl_node_add_attr(g, cs, "value", RL_ATTR_TENSOR)->tensor = hv;
	tu_add(g, RL_OP_MatMul, "y", 1, 2, a, g->nodes[cs].out[0]);
	const char *src =
		"#include <stdio.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    static float a[64 * 64], y[64 * 128];\n"
		"    for (int i = 0; i < 64 * 64; i++) a[i] = (float)(i % 64);\n"
		"    const void *in[2] = {a, 0};\n    void *out[2] = {y, 0};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    printf(\"%g %g %g\\n\", y[0], y[5 * 128 + 7], y[64 * 128 - 1]);\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = tu_run_model(g, src);
	cr_assert_str_eq(got, "1008 1008 1008\n"); /* 0.5 * (0 + 1 + ... + 63) */
	free(got);
	rl_graph_free(g);
}

/* A weight written as a Constant node (paddle2onnx's way) over the 16 KiB
 * that lets a generator run at load: without the passes (-O0) it is still
 * embedded and read in place, not copied into the workspace per run. */
Test(emit_matmul, big_constant_node_is_read_in_place)
{
	struct rl_graph *g = tu_graph_new(13, "test_emit_matmul");
	uint32_t a = tu_input(g, "a", RL_DT_FLOAT, TU_SHAPE(2, 64, 64));
	static float w[64 * 128];
	for (int i = 0; i < 64 * 128; i++)
		w[i] = (float)(i % 128) * 0.25f; /* B[k][j] = j / 4 */
	uint32_t t = tu_const(g, "w_tensor", RL_DT_FLOAT, TU_SHAPE(2, 64, 128), w);
	uint32_t cn = tu_node(g, RL_OP_Constant, "w", 1, 0);
	rl_node_add_attr(g, cn, "value", RL_ATTR_TENSOR)->tensor = t;
	tu_add(g, RL_OP_MatMul, "y", 1, 2, a, g->nodes[cn].out[0]);
	char *dir = tu_emit_compile(g);
	char path[4200];
	snprintf(path, sizeof(path), "%s/m.c", dir);
	char *src = tu_read_text(path);
	cr_assert(!strstr(src, "Constant: copy of"), "the Constant node became a kernel");
	free(src);
	tu_rmtree(dir);
	free(dir);
	const char *main_src =
		"#include <stdio.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    static float a[64 * 64], y[64 * 128];\n"
		"    for (int i = 0; i < 64 * 64; i++) a[i] = 1.0f;\n"
		"    const void *in[2] = {a, 0};\n    void *out[2] = {y, 0};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    printf(\"%g %g %g\\n\", y[0], y[5 * 128 + 7], y[64 * 128 - 1]);\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = tu_run_model(g, main_src);
	cr_assert_str_eq(got, "0 112 2032\n"); /* 64 * j / 4 for j = 0, 7, 127 */
	free(got);
	rl_graph_free(g);
}

Test(emit_matmul, runs_conv_pool)
{
	struct rl_graph *g = tu_graph_new(13, "test_emit_matmul");
	const int64_t dx[] = {1, 1, 3, 3}, dw[] = {1, 1, 2, 2}, k2[] = {2, 2}, p1[] = {1, 1, 1, 1};
	const int64_t s2[] = {2, 2};
	uint32_t node;
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(4, dx));
	uint32_t w = tu_input(g, "w", RL_DT_FLOAT, tu_dims(4, dw));
	uint32_t xw[2] = {x, w};
	tu_add_flow(g, RL_OP_Conv, xw, 2, 1, NULL);              /* out 0: 2x2 box sums */
	tu_add_flow(g, RL_OP_Conv, xw, 2, 1, &node);             /* out 1: padded, stride 2 */
	tu_attr_ints(g, node, "pads", 4, p1);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_add_flow(g, RL_OP_MaxPool, &x, 1, 2, &node);     /* out 2, 3: values, indices */
	tu_attr_ints(g, node, "kernel_shape", 2, k2);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_attr_ints(g, node, "pads", 4, p1);
	tu_add_flow(g, RL_OP_AveragePool, &x, 1, 1, &node);      /* out 4: pads not counted */
	tu_attr_ints(g, node, "kernel_shape", 2, k2);
	tu_attr_ints(g, node, "strides", 2, s2);
	tu_attr_ints(g, node, "pads", 4, p1);
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
	char *got = tu_run_model(g, src);
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

/* ---- the small transposed-B dot form is compiled per ISA ----------------- */

Test(emit_matmul, small_dot_gemm_is_compiled_per_isa)
{
	/* a batch-1 Gemm with transB and 10 outputs (mlp's classifier head) takes
	 * the dot-product form, not the GEMV runtime; in float its kernel is
	 * RL_TARGETS, so a plain `cc -O2` build runs it on AVX-512 / AVX2 with
	 * FMA instead of 32-byte vectors split into two SSE halves (0.74 -> 0.28
	 * us, one thread); the double one stays a plain function */
	struct rl_graph *g = tu_graph_new(13, "small_dot");
	const int64_t da[] = {1, 64}, db[] = {10, 64};
	uint32_t node;
	for (int i = 0; i < 2; i++) {
		enum rl_dtype dt = i ? RL_DT_DOUBLE : RL_DT_FLOAT;
		uint32_t in[2] = {tu_input(g, i ? "ad" : "af", dt, tu_dims(2, da)),
		                  tu_input(g, i ? "bd" : "bf", dt, tu_dims(2, db))};
		tu_add_flow(g, RL_OP_Gemm, in, 2, 1, &node);
		tu_attr_i(g, node, "transB", 1);
	}
	tu_infer(g);
	char *dir = tu_tmpdir(), p[4200], err[1024] = "";
	snprintf(p, sizeof(p), "%s/m.c", dir);
	cr_assert_eq(rl_emit_c(g, NULL, p, err, sizeof(err)), RL_OK, "%s", err);
	char *src = tu_read_text(p);
	int vec = 0, plain = 0;
	for (const char *s = src; (s = strstr(s, "/* Gemm: Y = 1 * A[1 x 64] x B'[64 x 10]")); s++) {
		/* the kernel's signature is the last "\nstatic " before its comment */
		const char *sig = NULL;
		for (const char *q = src; (q = strstr(q, "\nstatic ")) && q < s; q++)
			sig = q;
		cr_assert(sig, "no function before the Gemm's comment");
		if (strncmp(sig, "\nstatic RL_TARGETS void k", 25) == 0)
			vec++;
		else if (strncmp(sig, "\nstatic void k", 14) == 0)
			plain++;
		bool dbl = strstr(sig, "const double *") && strstr(sig, "const double *") < s;
		cr_assert_eq(dbl, strncmp(sig, "\nstatic void k", 14) == 0,
		             "the %s Gemm's kernel is %scompiled per ISA", dbl ? "double" : "float",
		             dbl ? "" : "not ");
	}
	cr_assert_eq(vec, 1, "%d float dot-form Gemm kernels compiled per ISA, want 1", vec);
	cr_assert_eq(plain, 1, "%d double dot-form Gemm kernels, want 1", plain);
	free(src);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}
