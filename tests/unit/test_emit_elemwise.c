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

/* ---- building graphs ---------------------------------------------------- */

static struct rl_graph *new_graph(int opset)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = opset;
	g->path = "test_emit_elemwise";
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

static uint32_t add_const(struct rl_graph *g, const char *name, enum rl_dtype dt, int rank,
                          const int64_t *dims, const void *data, size_t nbytes)
{
	struct rl_shape s;
	rl_shape_set(&s, rank, dims);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	rl_value_set_data(g, v, data, nbytes);
	return v;
}

/* Add a node with a fresh (to be inferred) output that is a graph output. */
static uint32_t add_node(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin,
                         uint32_t *node)
{
	char name[64];
	snprintf(name, sizeof(name), "y%u", g->nvalues);
	uint32_t y = rl_graph_add_value(g, name, RL_DT_UNDEFINED, NULL);
	uint32_t id = rl_graph_add_node(g, op, NULL, in, nin, &y, 1);
	g->values[y].flags |= RL_VAL_OUTPUT;
	g->outputs = realloc(g->outputs, (g->noutputs + 1) * sizeof(*g->outputs));
	g->outputs[g->noutputs++] = y;
	if (node)
		*node = id;
	return y;
}

static void set_int(struct rl_graph *g, uint32_t node, const char *name, int64_t v)
{
	rl_node_add_attr(g, node, name, RL_ATTR_INT)->i = v;
}

static void set_str(struct rl_graph *g, uint32_t node, const char *name, const char *s)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_STRING);
	a->s = rl_arena_strdup(g, s);
	a->n = (int)strlen(s);
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

/* ---- everything ONNX defines per dtype compiles cleanly ----------------- */

static const enum rl_dtype all_dtypes[] = {
	RL_DT_FLOAT, RL_DT_DOUBLE, RL_DT_FLOAT16, RL_DT_BFLOAT16, RL_DT_INT8, RL_DT_INT16,
	RL_DT_INT32, RL_DT_INT64, RL_DT_UINT8, RL_DT_UINT16, RL_DT_UINT32, RL_DT_UINT64,
	RL_DT_BOOL,
};

static void compile_all_for(enum rl_dtype dt)
{
	struct rl_graph *g = new_graph(21);
	const int64_t d23[] = {2, 3}, d3[] = {3}, d1[] = {1};
	uint32_t a = add_input(g, "a", dt, 2, d23);
	uint32_t b = add_input(g, "b", dt, 1, d3);
	uint32_t c = add_input(g, "c", RL_DT_BOOL, 2, d23);
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
			add_node(g, fops[k], &a, 1, NULL);
		add_node(g, RL_OP_Gelu, &a, 1, &node);
		set_str(g, node, "approximate", "tanh");
		add_node(g, RL_OP_IsInf, &a, 1, &node);
		set_int(g, node, "detect_negative", 0);
		add_node(g, RL_OP_Mod, in2, 2, &node);
		set_int(g, node, "fmod", 1);
		add_node(g, RL_OP_Pow, in2, 2, NULL);
		add_node(g, RL_OP_PRelu, in2, 2, NULL);
		add_node(g, RL_OP_Sum, in2, 2, NULL);
		add_node(g, RL_OP_Mean, in2, 2, NULL);
		if (dt == RL_DT_FLOAT) { /* float base, integer exponent */
			uint32_t e = add_input(g, "e", RL_DT_INT64, 1, d3);
			uint32_t pin[2] = {a, e};
			add_node(g, RL_OP_Pow, pin, 2, NULL);
		}
	}
	if (isf || (isint && issigned)) {
		add_node(g, RL_OP_Neg, &a, 1, NULL);
		add_node(g, RL_OP_Relu, &a, 1, NULL);
	}
	if (isf || isint) {
		add_node(g, RL_OP_Abs, &a, 1, NULL);
		add_node(g, RL_OP_Sign, &a, 1, NULL);
		add_node(g, RL_OP_Shrink, &a, 1, NULL);
		static const enum rl_op bops[] = {
			RL_OP_Add, RL_OP_Sub, RL_OP_Mul, RL_OP_Div, RL_OP_Less,
			RL_OP_LessOrEqual, RL_OP_Greater, RL_OP_GreaterOrEqual, RL_OP_Min, RL_OP_Max,
		};
		for (size_t k = 0; k < sizeof(bops) / sizeof(bops[0]); k++)
			add_node(g, bops[k], in2, 2, NULL);
		uint32_t in3[3] = {a, b, a};
		add_node(g, RL_OP_Max, in3, 3, NULL);
		add_node(g, RL_OP_Min, &a, 1, NULL);
		/* Clip with a constant min and a run-time max */
		static uint64_t lo[1]; /* zero bits: 0 in every dtype */
		uint32_t lov = add_const(g, "lo", dt, 0, d1, lo, rl_dtype_size(dt));
		uint32_t hiv = add_input(g, "hi", dt, 0, d1);
		uint32_t cin[3] = {a, lov, hiv};
		add_node(g, RL_OP_Clip, cin, 3, NULL);
	}
	if (isint) {
		add_node(g, RL_OP_BitwiseNot, &a, 1, NULL);
		add_node(g, RL_OP_BitwiseAnd, in2, 2, NULL);
		add_node(g, RL_OP_BitwiseOr, in2, 2, NULL);
		add_node(g, RL_OP_BitwiseXor, in2, 2, NULL);
		add_node(g, RL_OP_Mod, in2, 2, NULL);
		add_node(g, RL_OP_Mod, in2, 2, &node);
		set_int(g, node, "fmod", 1);
		add_node(g, RL_OP_Pow, in2, 2, NULL);
		if (issigned)
			add_node(g, RL_OP_PRelu, in2, 2, NULL);
		else {
			add_node(g, RL_OP_BitShift, in2, 2, &node);
			set_str(g, node, "direction", "LEFT");
			add_node(g, RL_OP_BitShift, in2, 2, &node);
			set_str(g, node, "direction", "RIGHT");
		}
	}
	if (isbool) {
		add_node(g, RL_OP_Not, &a, 1, NULL);
		add_node(g, RL_OP_And, in2, 2, NULL);
		add_node(g, RL_OP_Or, in2, 2, NULL);
		add_node(g, RL_OP_Xor, in2, 2, NULL);
	}
	add_node(g, RL_OP_Equal, in2, 2, NULL);
	add_node(g, RL_OP_Identity, &a, 1, NULL);
	uint32_t win[3] = {c, a, b};
	add_node(g, RL_OP_Where, win, 3, NULL);
	/* Cast to every dtype */
	for (size_t k = 0; k < sizeof(all_dtypes) / sizeof(all_dtypes[0]); k++) {
		add_node(g, RL_OP_Cast, &a, 1, &node);
		set_int(g, node, "to", all_dtypes[k]);
	}
	char *dir = emit_and_compile(g);
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

/* Write main.c that feeds the inputs given as C initializers, runs the model
 * and prints every output element with %.9g (one line per output), then
 * compile and run it; returns the printed text (malloc'd). */
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

Test(emit_elemwise, runs_arith_cast_minmax)
{
	struct rl_graph *g = new_graph(21);
	const int64_t d23[] = {2, 3}, d3[] = {3}, d6[] = {6};
	uint32_t a = add_input(g, "a", RL_DT_FLOAT, 2, d23);
	uint32_t b = add_input(g, "b", RL_DT_FLOAT, 1, d3);
	uint32_t p = add_input(g, "p", RL_DT_INT32, 1, d6);
	uint32_t q = add_input(g, "q", RL_DT_INT32, 1, d6);
	uint32_t node, ab[2] = {a, b}, pq[2] = {p, q};
	add_node(g, RL_OP_Add, ab, 2, NULL);         /* out 0: broadcast add */
	add_node(g, RL_OP_Mod, pq, 2, NULL);         /* out 1: Python mod */
	add_node(g, RL_OP_Mod, pq, 2, &node);        /* out 2: C fmod */
	set_int(g, node, "fmod", 1);
	add_node(g, RL_OP_Max, ab, 2, NULL);         /* out 3: NaN propagates */
	add_node(g, RL_OP_Cast, &a, 1, &node);       /* out 4: truncation */
	set_int(g, node, "to", RL_DT_INT32);
	add_node(g, RL_OP_Cast, &a, 1, &node);       /* out 5: float16 bits */
	set_int(g, node, "to", RL_DT_FLOAT16);
	add_node(g, RL_OP_Div, pq, 2, NULL);         /* out 6: truncating div */
	add_node(g, RL_OP_Round, &a, 1, NULL);       /* out 7: half to even */

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
	char *got = run_model(g, src);
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
	struct rl_graph *g = new_graph(21);
	static const int64_t shp[2] = {2, 3};
	static const float seven = 7.0f;
	static const int32_t start = 10, limit = 0, delta = -3;
	const int64_t d1[] = {1}, d2[] = {2}, d34[] = {3, 4};
	uint32_t node;
	/* Inference may evaluate some of these to constants (then the driver
	 * copies the folded values); either way the outputs must be right. */
	uint32_t s = add_const(g, "shape", RL_DT_INT64, 1, d2, shp, sizeof(shp));
	add_node(g, RL_OP_ConstantOfShape, &s, 1, &node);
	struct rl_attr *at = rl_node_add_attr(g, node, "value", RL_ATTR_TENSOR);
	at->tensor = add_const(g, "seven", RL_DT_FLOAT, 1, d1, &seven, sizeof(seven));
	uint32_t x = add_input(g, "x", RL_DT_FLOAT, 2, d34);
	add_node(g, RL_OP_EyeLike, &x, 1, &node);
	set_int(g, node, "k", 1);
	set_int(g, node, "dtype", RL_DT_INT32);
	uint32_t r[3] = {
		add_const(g, "start", RL_DT_INT32, 0, d1, &start, 4),
		add_const(g, "limit", RL_DT_INT32, 0, d1, &limit, 4),
		add_const(g, "delta", RL_DT_INT32, 0, d1, &delta, 4),
	};
	add_node(g, RL_OP_Range, r, 3, NULL);

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
	char *got = run_model(g, src);
	cr_assert_str_eq(got, "7 7 7 7 7 7 \n"
	                      "010000100001\n"
	                      "10 7 4 1 \n");
	free(got);
	rl_graph_free(g);
}
