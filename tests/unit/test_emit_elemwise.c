/*
 * test_emit_elemwise.c - the C backend's elementwise and value-generator
 * kernels (backends/c/emit_elemwise.c, emit_const.c).
 *
 * Graphs are built by hand with the ir.h API, inferred, and written with
 * rl_emit_c() into a fresh temporary folder. Per dtype, one graph holds
 * every op that ONNX defines for that dtype; its C must compile with
 * `cc -std=c11 -Wall -Wextra -Werror -O2`. A second group links a small
 * main against the generated code and compares with values worked out by
 * hand: broadcasting, Python-style integer Mod, NaN-propagating Max,
 * truncating Cast, float16 Cast, ConstantOfShape, Range and EyeLike.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "testutil.h"

/* ---- everything ONNX defines per dtype compiles cleanly ----------------- */

static const enum rl_dtype all_dtypes[] = {
	RL_DT_FLOAT, RL_DT_DOUBLE, RL_DT_FLOAT16, RL_DT_BFLOAT16, RL_DT_INT8, RL_DT_INT16,
	RL_DT_INT32, RL_DT_INT64, RL_DT_UINT8, RL_DT_UINT16, RL_DT_UINT32, RL_DT_UINT64,
	RL_DT_BOOL,
};

static void compile_all_for(enum rl_dtype dt)
{
	struct rl_graph *g = tu_graph_new(21, "test_emit_elemwise");
	const int64_t d23[] = {2, 3}, d3[] = {3}, d1[] = {1};
	uint32_t a = tu_input(g, "a", dt, tu_dims(2, d23));
	uint32_t b = tu_input(g, "b", dt, tu_dims(1, d3));
	uint32_t c = tu_input(g, "c", RL_DT_BOOL, tu_dims(2, d23));
	uint32_t node, in2[2] = {a, b};
	bool isf = rl_dtype_is_float(dt), isbool = dt == RL_DT_BOOL;
	bool isint = rl_dtype_is_int(dt), issigned = rl_dtype_is_signed(dt);

	if (isf) {
		static const enum rl_op fops[] = {
			RL_OP_Sqrt, RL_OP_Reciprocal, RL_OP_Exp, RL_OP_Log, RL_OP_Tanh,
			RL_OP_Sigmoid, RL_OP_LeakyRelu, RL_OP_Elu, RL_OP_Selu, RL_OP_Celu,
			RL_OP_HardSigmoid, RL_OP_HardSwish, RL_OP_ThresholdedRelu, RL_OP_Softplus,
			RL_OP_Softsign, RL_OP_Mish, RL_OP_Gelu, RL_OP_Erf, RL_OP_Floor, RL_OP_Ceil,
			RL_OP_Round, RL_OP_Sin, RL_OP_Cos, RL_OP_Tan, RL_OP_Asin, RL_OP_Acos,
			RL_OP_Atan, RL_OP_Sinh, RL_OP_Cosh, RL_OP_Asinh, RL_OP_Acosh, RL_OP_Atanh,
			RL_OP_IsNaN, RL_OP_IsInf, RL_OP_Sum, RL_OP_Mean,
		};
		for (size_t k = 0; k < sizeof(fops) / sizeof(fops[0]); k++)
			tu_add_flow(g, fops[k], &a, 1, 1, NULL);
		tu_add_flow(g, RL_OP_Gelu, &a, 1, 1, &node);
		tu_attr_s(g, node, "approximate", "tanh");
		tu_add_flow(g, RL_OP_IsInf, &a, 1, 1, &node);
		tu_attr_i(g, node, "detect_negative", 0);
		tu_add_flow(g, RL_OP_Mod, in2, 2, 1, &node);
		tu_attr_i(g, node, "fmod", 1);
		tu_add_flow(g, RL_OP_Pow, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_PRelu, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_Sum, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_Mean, in2, 2, 1, NULL);
		if (dt == RL_DT_FLOAT) { /* float base, integer exponent */
			uint32_t e = tu_input(g, "e", RL_DT_INT64, tu_dims(1, d3));
			uint32_t pin[2] = {a, e};
			tu_add_flow(g, RL_OP_Pow, pin, 2, 1, NULL);
		}
	}
	if (isf || (isint && issigned)) {
		tu_add_flow(g, RL_OP_Neg, &a, 1, 1, NULL);
		tu_add_flow(g, RL_OP_Relu, &a, 1, 1, NULL);
	}
	if (isf || isint) {
		tu_add_flow(g, RL_OP_Abs, &a, 1, 1, NULL);
		tu_add_flow(g, RL_OP_Sign, &a, 1, 1, NULL);
		tu_add_flow(g, RL_OP_Shrink, &a, 1, 1, NULL);
		static const enum rl_op bops[] = {
			RL_OP_Add, RL_OP_Sub, RL_OP_Mul, RL_OP_Div, RL_OP_Less,
			RL_OP_LessOrEqual, RL_OP_Greater, RL_OP_GreaterOrEqual, RL_OP_Min, RL_OP_Max,
		};
		for (size_t k = 0; k < sizeof(bops) / sizeof(bops[0]); k++)
			tu_add_flow(g, bops[k], in2, 2, 1, NULL);
		uint32_t in3[3] = {a, b, a};
		tu_add_flow(g, RL_OP_Max, in3, 3, 1, NULL);
		tu_add_flow(g, RL_OP_Min, &a, 1, 1, NULL);
		/* Clip with a constant min and a run-time max */
		static uint64_t lo[1]; /* zero bits: 0 in every dtype */
		uint32_t lov = tu_const(g, "lo", dt, tu_dims(0, d1), lo);
		uint32_t hiv = tu_input(g, "hi", dt, tu_dims(0, d1));
		uint32_t cin[3] = {a, lov, hiv};
		tu_add_flow(g, RL_OP_Clip, cin, 3, 1, NULL);
	}
	if (isint) {
		tu_add_flow(g, RL_OP_BitwiseNot, &a, 1, 1, NULL);
		tu_add_flow(g, RL_OP_BitwiseAnd, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_BitwiseOr, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_BitwiseXor, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_Mod, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_Mod, in2, 2, 1, &node);
		tu_attr_i(g, node, "fmod", 1);
		tu_add_flow(g, RL_OP_Pow, in2, 2, 1, NULL);
		if (issigned)
			tu_add_flow(g, RL_OP_PRelu, in2, 2, 1, NULL);
		else {
			tu_add_flow(g, RL_OP_BitShift, in2, 2, 1, &node);
			tu_attr_s(g, node, "direction", "LEFT");
			tu_add_flow(g, RL_OP_BitShift, in2, 2, 1, &node);
			tu_attr_s(g, node, "direction", "RIGHT");
		}
	}
	if (isbool) {
		tu_add_flow(g, RL_OP_Not, &a, 1, 1, NULL);
		tu_add_flow(g, RL_OP_And, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_Or, in2, 2, 1, NULL);
		tu_add_flow(g, RL_OP_Xor, in2, 2, 1, NULL);
	}
	tu_add_flow(g, RL_OP_Equal, in2, 2, 1, NULL);
	tu_add_flow(g, RL_OP_Identity, &a, 1, 1, NULL);
	uint32_t win[3] = {c, a, b};
	tu_add_flow(g, RL_OP_Where, win, 3, 1, NULL);
	/* Cast to every dtype */
	for (size_t k = 0; k < sizeof(all_dtypes) / sizeof(all_dtypes[0]); k++) {
		tu_add_flow(g, RL_OP_Cast, &a, 1, 1, &node);
		tu_attr_i(g, node, "to", all_dtypes[k]);
	}
	char *dir = tu_emit_compile(g);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

Test(emit_elemwise, compiles_float32) { compile_all_for(RL_DT_FLOAT); }
Test(emit_elemwise, compiles_float64) { compile_all_for(RL_DT_DOUBLE); }
Test(emit_elemwise, compiles_float16) { compile_all_for(RL_DT_FLOAT16); }
Test(emit_elemwise, compiles_bfloat16) { compile_all_for(RL_DT_BFLOAT16); }
Test(emit_elemwise, compiles_int8) { compile_all_for(RL_DT_INT8); }
Test(emit_elemwise, compiles_int16) { compile_all_for(RL_DT_INT16); }
Test(emit_elemwise, compiles_int32) { compile_all_for(RL_DT_INT32); }
Test(emit_elemwise, compiles_int64) { compile_all_for(RL_DT_INT64); }
Test(emit_elemwise, compiles_uint8) { compile_all_for(RL_DT_UINT8); }
Test(emit_elemwise, compiles_uint16) { compile_all_for(RL_DT_UINT16); }
Test(emit_elemwise, compiles_uint32) { compile_all_for(RL_DT_UINT32); }
Test(emit_elemwise, compiles_uint64) { compile_all_for(RL_DT_UINT64); }
Test(emit_elemwise, compiles_bool) { compile_all_for(RL_DT_BOOL); }

/* ---- generated code computes the right values --------------------------- */

Test(emit_elemwise, runs_arith_cast_minmax)
{
	struct rl_graph *g = tu_graph_new(21, "test_emit_elemwise");
	const int64_t d23[] = {2, 3}, d3[] = {3}, d6[] = {6};
	uint32_t a = tu_input(g, "a", RL_DT_FLOAT, tu_dims(2, d23));
	uint32_t b = tu_input(g, "b", RL_DT_FLOAT, tu_dims(1, d3));
	uint32_t p = tu_input(g, "p", RL_DT_INT32, tu_dims(1, d6));
	uint32_t q = tu_input(g, "q", RL_DT_INT32, tu_dims(1, d6));
	uint32_t node, ab[2] = {a, b}, pq[2] = {p, q};
	tu_add_flow(g, RL_OP_Add, ab, 2, 1, NULL);         /* out 0: broadcast add */
	tu_add_flow(g, RL_OP_Mod, pq, 2, 1, NULL);         /* out 1: Python mod */
	tu_add_flow(g, RL_OP_Mod, pq, 2, 1, &node);        /* out 2: C fmod */
	tu_attr_i(g, node, "fmod", 1);
	tu_add_flow(g, RL_OP_Max, ab, 2, 1, NULL);         /* out 3: NaN propagates */
	tu_add_flow(g, RL_OP_Cast, &a, 1, 1, &node);       /* out 4: truncation */
	tu_attr_i(g, node, "to", RL_DT_INT32);
	tu_add_flow(g, RL_OP_Cast, &a, 1, 1, &node);       /* out 5: float16 bits */
	tu_attr_i(g, node, "to", RL_DT_FLOAT16);
	tu_add_flow(g, RL_OP_Div, pq, 2, 1, NULL);         /* out 6: truncating div */
	tu_add_flow(g, RL_OP_Round, &a, 1, 1, NULL);       /* out 7: half to even */

	const char *src =
		"#include <math.h>\n#include <stdio.h>\n#include <stdint.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    float a[6] = {1.5f, -2.5f, 0.5f, NAN, 2.5f, -0.7f}, b[3] = {1, 2, 3};\n"
		"    int32_t p[6] = {7, -7, 7, -7, 5, 3}, q[6] = {3, 3, -3, -3, 0, 5};\n"
		"    float add[6], mx[6], rnd[6];\n"
		"    int32_t mod[6], fmd[6], cst[6], dv[6];\n"
		"    uint16_t h[6];\n"
		"    const void *in[5] = {a, b, p, q, 0};\n"
		"    void *out[8] = {add, mod, fmd, mx, cst, h, dv, rnd};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    for (int i = 0; i < 6; i++) printf(\"%g \", add[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) printf(\"%d \", (int)mod[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) printf(\"%d \", (int)fmd[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) printf(\"%g \", mx[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) if (i != 3) printf(\"%d \", (int)cst[i]);\n"
		"    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) printf(\"%04x \", h[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) printf(\"%d \", (int)dv[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 6; i++) printf(\"%g \", rnd[i]);\n    printf(\"\\n\");\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = tu_run_model(g, src);
	const char *want =
		"2.5 -0.5 3.5 nan 4.5 2.3 \n"     /* a + b, b broadcast over rows */
		"1 2 -2 -1 0 3 \n"                /* Python: sign of the divisor; x % 0 = 0 */
		"1 -1 1 -1 0 3 \n"                /* C: sign of the dividend */
		"1.5 2 3 nan 2.5 3 \n"            /* max(a, b), NaN propagates */
		"1 -2 0 2 0 \n"                   /* truncation toward zero (NaN skipped) */
		"3e00 c100 3800 7e00 4100 b99a \n" /* float16 bit patterns */
		"2 -2 -2 2 0 0 \n"                /* C division; x / 0 = 0 */
		"2 -2 0 nan 2 -1 \n";             /* round half to even */
	cr_assert_str_eq(got, want);
	free(got);
	rl_graph_free(g);
}

Test(emit_elemwise, runs_generators)
{
	struct rl_graph *g = tu_graph_new(21, "test_emit_elemwise");
	static const int64_t shp[2] = {2, 3};
	static const float seven = 7.0f;
	static const int32_t start = 10, limit = 0, delta = -3;
	const int64_t d1[] = {1}, d2[] = {2}, d34[] = {3, 4};
	uint32_t node;
	/* Inference may evaluate some of these to constants (then the driver
	 * copies the folded values); either way the outputs must be right. */
	uint32_t s = tu_const(g, "shape", RL_DT_INT64, tu_dims(1, d2), shp);
	tu_add_flow(g, RL_OP_ConstantOfShape, &s, 1, 1, &node);
	struct rl_attr *at = rl_node_add_attr(g, node, "value", RL_ATTR_TENSOR);
	at->tensor = tu_const(g, "seven", RL_DT_FLOAT, tu_dims(1, d1), &seven);
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, d34));
	tu_add_flow(g, RL_OP_EyeLike, &x, 1, 1, &node);
	tu_attr_i(g, node, "k", 1);
	tu_attr_i(g, node, "dtype", RL_DT_INT32);
	uint32_t r[3] = {
		tu_const(g, "start", RL_DT_INT32, tu_dims(0, d1), &start),
		tu_const(g, "limit", RL_DT_INT32, tu_dims(0, d1), &limit),
		tu_const(g, "delta", RL_DT_INT32, tu_dims(0, d1), &delta),
	};
	tu_add_flow(g, RL_OP_Range, r, 3, 1, NULL);

	const char *src =
		"#include <stdio.h>\n#include <stdint.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    float x[12] = {0}, c[6];\n"
		"    int32_t eye[12], rg[4];\n"
		"    const void *in[2] = {x, 0};\n"
		"    void *out[3] = {c, eye, rg};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    for (int i = 0; i < 6; i++) printf(\"%g \", c[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 12; i++) printf(\"%d\", (int)eye[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%d \", (int)rg[i]);\n    printf(\"\\n\");\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = tu_run_model(g, src);
	cr_assert_str_eq(got, "7 7 7 7 7 7 \n"
	                      "010000100001\n"
	                      "10 7 4 1 \n");
	free(got);
	rl_graph_free(g);
}
