/*
 * test_scalar.c - the scalar semantics table (ir/scalar.def, ir/scalar.c)
 * that constant evaluation and folding use, held to the C backend.
 *
 * 1. The table: every ELEMWISE op of ops.def has a row and nothing else
 *    does; RL_OPF_TRANS agrees with the flops column; EVAL rows are CALC
 *    rows; CALC rows name a dtype kind.
 * 2. Semantics against ONNX (numpy) on hand-picked values, so the table is
 *    not only consistent with the emitter but right where they could both
 *    be wrong: wrapping, Python-style Mod, shifts past the width, NaN in
 *    Min/Max/Relu, the signs of zeros.
 * 3. Folding computes with the table (float Tanh/Erf hold rl_tanhf's and
 *    rl_erff's bits, integer Mod is Python's, division by zero is left to
 *    run).
 * 4. Emitted code against the table: one graph with, for each dtype below,
 *    every elementwise op the table computes on it (and that ONNX allows:
 *    inference must accept it), plus attribute variants. It is emitted
 *    once, compiled with the vector path and with -DRL_NO_VEC (the scalar
 *    table), run on random inputs salted with edge values (0, -0, +-inf,
 *    NaN, denormals, the largest values, halfway cases, integer extremes),
 *    and every element is compared with rl_scalar_apply on the host:
 *      - the scalar build and every non-float32 kernel: bit for bit (any
 *        NaN matches any NaN), since they are the same expressions;
 *      - the float32 vector build: within the ulp column of scalar.def in
 *        units in the last place of the result, or its abs column.
 *    Elements the table flags undefined are compared too (integer division
 *    by zero gives 0 in both), except Shrink's integer results outside the
 *    type, where the C conversion itself is undefined.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit.h"
#include "cost.h"
#include "ir.h"
#include "passes/pass.h"
#include "scalar.h"
#include "testutil.h"

/* ---- 1. the table --------------------------------------------------------- */

Test(scalar, table_covers_the_elementwise_family)
{
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_scalar_info *si = rl_scalar_info((enum rl_op)op);
		bool ew = rl_op_table[op].family == RL_FAM_ELEMWISE;
		const char *nm = rl_op_table[op].name;
		cr_expect_eq(si != NULL, ew, "%s: a scalar.def row exactly for ELEMWISE ops", nm);
		if (!si)
			continue;
		bool trans = rl_op_table[op].flags & RL_OPF_TRANS;
		cr_expect_eq(trans, si->flops == RL_FLOPS_TRANS,
		             "%s: RL_OPF_TRANS in ops.def and T in scalar.def's flops differ", nm);
		/* the fold column of ops.def (tests/unit/test_optable.c checks the rest) */
		if (rl_op_table[op].fold == RL_FOLD_FOLD)
			cr_expect(si->flags & RL_SCF_CALC, "%s: fold FOLD without CALC", nm);
		if (si->flags & RL_SCF_CALC)
			cr_expect(si->flags & (RL_SCF_F | RL_SCF_I | RL_SCF_B), "%s: CALC on no dtype", nm);
		for (int k = 0; k < 3; k++)
			cr_expect(si->math[k] >= -1 && si->math[k] < RL_MATH_COUNT_, "%s: math class", nm);
		cr_expect(si->ulp >= 0 && si->abs >= 0, "%s: bounds", nm);
	}
}

/* ---- 2. semantics on known values ---------------------------------------- */

static union rl_scv sv_i(int64_t x)
{
	union rl_scv v;
	v.i = x;
	return v;
}

static union rl_scv sv_f(float x)
{
	union rl_scv v;
	v.u = 0;
	v.f = x;
	return v;
}

static union rl_scv sv_d(double x)
{
	union rl_scv v;
	v.d = x;
	return v;
}

/* op on a, b of dtype dt with default attributes (mode set), stored as dt
 * (or bool) and loaded back: the value a tensor would hold. */
static union rl_scv ap(enum rl_op op, int mode, enum rl_dtype dt, union rl_scv a, union rl_scv b,
                       enum rl_scalar_status *st)
{
	struct rl_scalar_attrs p;
	struct rl_node n;
	memset(&n, 0, sizeof(n));
	n.op = op;
	rl_scalar_attrs(&n, &p);
	p.mode = mode;
	union rl_scv r;
	r.u = 0;
	*st = rl_scalar_apply(op, &p, dt, a, b, &r);
	uint64_t buf = 0;
	enum rl_dtype od = rl_op_table[op].flags & RL_OPF_CMP ? RL_DT_BOOL : dt;
	rl_scalar_store(&buf, od, 0, r);
	return rl_scalar_load(&buf, od, 0);
}

#define EXPECT_I(op, mode, dt, a, b, want)                                                   \
	do {                                                                                     \
		enum rl_scalar_status st_;                                                           \
		union rl_scv r_ = ap(op, mode, dt, sv_i(a), sv_i(b), &st_);                          \
		cr_expect(st_ != RL_SCALAR_NO && r_.i == (int64_t)(want), "%s(%lld, %lld) on %s = %lld, want %lld", \
		          rl_op_table[op].name, (long long)(a), (long long)(b), rl_dtype_name(dt),   \
		          (long long)r_.i, (long long)(want));                                       \
	} while (0)

Test(scalar, integer_semantics_follow_numpy)
{
	enum rl_scalar_status st;
	EXPECT_I(RL_OP_Add, 0, RL_DT_INT8, 127, 1, -128);
	EXPECT_I(RL_OP_Mul, 0, RL_DT_UINT16, 65535, 65535, 1);
	EXPECT_I(RL_OP_Sub, 0, RL_DT_INT64, INT64_MIN, 1, INT64_MAX);
	EXPECT_I(RL_OP_Div, 0, RL_DT_INT32, -7, 2, -3); /* truncates */
	EXPECT_I(RL_OP_Mod, 0, RL_DT_INT32, -7, 3, 2);  /* Python: sign of the divisor */
	EXPECT_I(RL_OP_Mod, 0, RL_DT_INT32, 7, -3, -2);
	EXPECT_I(RL_OP_Mod, 1, RL_DT_INT32, -7, 3, -1); /* fmod: sign of the dividend */
	EXPECT_I(RL_OP_Mod, 0, RL_DT_INT8, -128, -1, 0);
	EXPECT_I(RL_OP_Pow, 0, RL_DT_INT32, 3, 4, 81);
	EXPECT_I(RL_OP_Pow, 0, RL_DT_INT8, 2, 7, -128);    /* wraps */
	EXPECT_I(RL_OP_Pow, 0, RL_DT_INT32, -1, -3, -1);
	EXPECT_I(RL_OP_Pow, 0, RL_DT_INT32, 2, -1, 0);
	EXPECT_I(RL_OP_BitShift, 1, RL_DT_UINT8, 1, 7, 128);
	EXPECT_I(RL_OP_BitShift, 1, RL_DT_UINT8, 255, 1, 254);
	EXPECT_I(RL_OP_BitShift, 1, RL_DT_UINT8, 1, 8, 0);  /* past the width: 0 */
	EXPECT_I(RL_OP_BitShift, 2, RL_DT_UINT32, 0x80000000u, 31, 1);
	EXPECT_I(RL_OP_Abs, 0, RL_DT_INT8, -128, 0, -128);
	EXPECT_I(RL_OP_Neg, 0, RL_DT_INT32, INT32_MIN, 0, INT32_MIN);
	EXPECT_I(RL_OP_Sign, 0, RL_DT_INT16, -5, 0, -1);
	EXPECT_I(RL_OP_Relu, 0, RL_DT_INT32, -5, 0, 0);
	EXPECT_I(RL_OP_PRelu, 0, RL_DT_INT32, -5, 3, -15);
	EXPECT_I(RL_OP_BitwiseNot, 0, RL_DT_UINT8, 5, 0, 250);
	EXPECT_I(RL_OP_Less, 0, RL_DT_UINT64, 1, -1, 1); /* -1 is 2^64 - 1 */
	EXPECT_I(RL_OP_Less, 0, RL_DT_INT64, 1, -1, 0);
	EXPECT_I(RL_OP_Max, 0, RL_DT_UINT32, 4294967295u, 0, 4294967295u);
	EXPECT_I(RL_OP_Xor, 0, RL_DT_BOOL, 1, 1, 0);
	ap(RL_OP_Div, 0, RL_DT_INT32, sv_i(5), sv_i(0), &st);
	cr_expect_eq(st, RL_SCALAR_UNDEF, "integer division by zero is undefined");
	ap(RL_OP_Neg, 0, RL_DT_UINT8, sv_i(5), sv_i(0), &st);
	cr_expect_eq(st, RL_SCALAR_NO, "Neg is not defined on unsigned integers");
	ap(RL_OP_Exp, 0, RL_DT_INT32, sv_i(5), sv_i(0), &st);
	cr_expect_eq(st, RL_SCALAR_NO, "Exp is float-only");
}

static bool same_f(float x, float y)
{
	return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof(x)) == 0;
}

Test(scalar, float_semantics_follow_numpy)
{
	enum rl_scalar_status st;
	const float nan = NAN, inf = INFINITY;
	struct { enum rl_op op; int mode; float a, b, want; } c[] = {
		{RL_OP_Relu, 0, nan, 0, nan},       {RL_OP_Relu, 0, -0.0f, 0, -0.0f},
		{RL_OP_Min, 0, 1, nan, nan},        {RL_OP_Min, 0, nan, 1, nan},
		{RL_OP_Max, 0, -0.0f, 0.0f, -0.0f}, {RL_OP_Max, 0, 2, 3, 3},
		{RL_OP_Tanh, 0, inf, 0, 1},         {RL_OP_Tanh, 0, -0.0f, 0, -0.0f},
		{RL_OP_Tanh, 0, nan, 0, nan},       {RL_OP_Erf, 0, -inf, 0, -1},
		{RL_OP_Sigmoid, 0, -inf, 0, 0},     {RL_OP_Sigmoid, 0, 0, 0, 0.5f},
		{RL_OP_Softplus, 0, 100, 0, 100},   {RL_OP_Softplus, 0, -inf, 0, 0},
		{RL_OP_Round, 0, 2.5f, 0, 2},       {RL_OP_Round, 0, -0.5f, 0, -0.0f},
		{RL_OP_Sign, 0, nan, 0, nan},       {RL_OP_Sign, 0, -3, 0, -1},
		{RL_OP_Mod, 1, -7, 3, -1},          {RL_OP_Mod, 1, 5, 0, nan},
		{RL_OP_Mod, 0, 5, 0, 0},            {RL_OP_HardSwish, 0, 6, 0, 6},
		{RL_OP_Reciprocal, 0, -0.0f, 0, -inf}, {RL_OP_Abs, 0, -0.0f, 0, 0},
		{RL_OP_Pow, 0, -8, 1.0f / 3, nan},  {RL_OP_Pow, 0, 0, 0, 1},
		{RL_OP_Sqrt, 0, -1, 0, nan},        {RL_OP_Log, 0, 0, 0, -inf},
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		union rl_scv r = ap(c[i].op, c[i].mode, RL_DT_FLOAT, sv_f(c[i].a), sv_f(c[i].b), &st);
		cr_expect(st == RL_SCALAR_OK && same_f(r.f, c[i].want), "%s(%a, %a) = %a, want %a",
		          rl_op_table[c[i].op].name, c[i].a, c[i].b, r.f, c[i].want);
	}
	/* comparisons with NaN are false; IsInf by direction */
	cr_expect_eq(ap(RL_OP_Equal, 0, RL_DT_FLOAT, sv_f(nan), sv_f(nan), &st).i, 0);
	cr_expect_eq(ap(RL_OP_IsInf, 1, RL_DT_DOUBLE, sv_d(-INFINITY), sv_d(0), &st).i, 0);
	cr_expect_eq(ap(RL_OP_IsInf, 2, RL_DT_DOUBLE, sv_d(-INFINITY), sv_d(0), &st).i, 1);
	/* double Tanh is libm's, float Tanh the generated code's rl_tanhf:
	 * both within a few ulp of the truth */
	union rl_scv t = ap(RL_OP_Tanh, 0, RL_DT_FLOAT, sv_f(0.5f), sv_f(0), &st);
	cr_expect(fabs((double)t.f - tanh(0.5)) < 4 * 0x1p-24, "rl_tanhf(0.5) = %a", t.f);
	cr_expect_eq(ap(RL_OP_Tanh, 0, RL_DT_DOUBLE, sv_d(0.5), sv_d(0), &st).d, tanh(0.5));
}

/* ---- 3. folding ---------------------------------------------------------- */

/* Folding computes with the table: float Tanh and Erf of a constant hold
 * the bits of the generated code's rl_tanhf and rl_erff (fold.c used libm's
 * tanhf and erff before), integer Mod follows Python, and an integer
 * division by zero is left to run. */
Test(scalar, fold_computes_with_the_table)
{
	struct rl_graph *g = rl_graph_new();
	g->opset = 21;
	g->path = "fold";
	static const float xs[] = {0.5f, -1.3f, 1e-37f, 3.0f, -0.0f, 7.95f, 0.1f, -2.2f};
	static const int32_t is[] = {-7, 7, 5, -8}, ms[] = {3, -3, 2, 3}, ds[] = {3, -3, 0, 3};
	struct rl_shape s;
	const int64_t d8[] = {8}, d4[] = {4};
	rl_shape_set(&s, 1, d8);
	uint32_t x = rl_graph_add_value(g, "x", RL_DT_FLOAT, &s);
	rl_value_set_data(g, x, xs, sizeof(xs));
	rl_shape_set(&s, 1, d4);
	uint32_t a = rl_graph_add_value(g, "a", RL_DT_INT32, &s);
	uint32_t b = rl_graph_add_value(g, "b", RL_DT_INT32, &s);
	rl_value_set_data(g, a, is, sizeof(is));
	uint32_t c = rl_graph_add_value(g, "c", RL_DT_INT32, &s);
	rl_value_set_data(g, b, ds, sizeof(ds));
	rl_value_set_data(g, c, ms, sizeof(ms));
	static const enum rl_op ops[] = {RL_OP_Tanh, RL_OP_Erf, RL_OP_Mod, RL_OP_Div};
	uint32_t ys[4];
	for (int k = 0; k < 4; k++) {
		char nm[16];
		snprintf(nm, sizeof(nm), "y%d", k);
		ys[k] = rl_graph_add_value(g, nm, RL_DT_UNDEFINED, NULL);
		uint32_t in[2] = {k < 2 ? x : a, k == 2 ? c : b};
		rl_graph_add_node(g, ops[k], nm, in, k < 2 ? 1 : 2, &ys[k], 1);
		g->values[ys[k]].flags |= RL_VAL_OUTPUT;
		g->outputs = realloc(g->outputs, (g->noutputs + 1) * sizeof(*g->outputs));
		g->outputs[g->noutputs++] = ys[k];
	}
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	struct rl_pass_ctx ctx;
	rl_pass_ctx_init(&ctx, NULL, 2);
	ctx.verify = true;
	cr_assert_eq(rl_pipeline_run(g, &ctx, "fold"), RL_OK, "%s", g->err);
	struct rl_scalar_attrs p;
	struct rl_node n0;
	memset(&n0, 0, sizeof(n0));
	rl_scalar_attrs(&n0, &p);
	for (int k = 0; k < 2; k++) {
		uint32_t y = rl_graph_find_value(g, k ? "y1" : "y0");
		cr_assert(y != RL_NONE && rl_value_is_const(g, y), "%s folded", rl_op_table[ops[k]].name);
		for (int i = 0; i < 8; i++) {
			union rl_scv r;
			rl_scalar_apply(ops[k], &p, RL_DT_FLOAT, sv_f(xs[i]), sv_f(0), &r);
			float got = ((const float *)g->values[y].data)[i];
			cr_expect(same_f(got, r.f), "%s(%a) folded to %a, the table (rl_%sf) gives %a",
			          rl_op_table[ops[k]].name, xs[i], got, k ? "erf" : "tanh", r.f);
		}
	}
	uint32_t ym = rl_graph_find_value(g, "y2"), yd = rl_graph_find_value(g, "y3");
	cr_assert(rl_value_is_const(g, ym), "Mod folded");
	static const int32_t want[] = {2, -2, 1, 1}; /* Python's %: the divisor's sign */
	for (int i = 0; i < 4; i++)
		cr_expect_eq(((const int32_t *)g->values[ym].data)[i], want[i], "Mod element %d", i);
	cr_expect(!rl_value_is_const(g, yd), "Div by zero is left to run");
	rl_pass_ctx_free(&ctx);
	rl_graph_free(g);
}

/* ---- 4. emitted code against the table ----------------------------------- */

#define N 4133 /* 258 vectors of 16 floats and a tail of 5 */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap_;
	va_start(ap_, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap_);
	va_end(ap_);
	return system(cmd);
}

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random double: edge values one time in three, else uniform in
 * [-10, 10] or (one time in four) any finite or infinite bit pattern of
 * the width. */
static double rnd_real(bool dbl)
{
	static const double edge[] = {
		0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 1e-40, -1e-40, 0x1p-149, 1e30,
		-1e30, 3.4028234663852886e38, -3.4028234663852886e38, 88.7, -104.0, 1e-7, 0.5,
		-0.5, 2.5, -2.5, 7.9, -7.9, 4.0, 6.0, -3.0, 1e-310, 1.7976931348623157e308, 710.0,
	};
	uint64_t r = rnd();
	if (r % 3 == 0) {
		size_t n = sizeof(edge) / sizeof(edge[0]) - (dbl ? 0 : 3);
		return edge[(r >> 8) % n];
	}
	if ((r >> 8) % 4 == 0) {
		uint64_t b = rnd();
		if (dbl) {
			double d;
			memcpy(&d, &b, 8);
			return d;
		}
		float f;
		uint32_t b32 = (uint32_t)b;
		memcpy(&f, &b32, 4);
		return f;
	}
	return ((double)(rnd() >> 11) * 0x1p-53) * 20.0 - 10.0;
}

/* A random integer of dtype dt (as the int64 rl_scalar_load gives) */
static int64_t rnd_int(enum rl_dtype dt)
{
	static const int64_t edge[] = {0, 1, -1, 2, 3, 7, 8, 31, 32, 63, 64, 127, 128, -128, 255};
	uint64_t r = rnd();
	uint64_t v = r % 3 == 0 ? (uint64_t)edge[(r >> 8) % 15]
	           : r % 3 == 1 ? (uint64_t)((int64_t)((r >> 8) % 21) - 10) : rnd();
	if (r % 17 == 5)
		v = (uint64_t)1 << (rl_dtype_size(dt) * 8 - 1); /* the smallest signed value */
	if (r % 17 == 6)
		v = ((uint64_t)1 << (rl_dtype_size(dt) * 8 - 1)) - 1; /* the largest */
	uint64_t buf = 0;
	union rl_scv s;
	s.u = v;
	rl_scalar_store(&buf, dt, 0, s);
	return rl_scalar_load(&buf, dt, 0).i;
}

/* Fill a tensor of N elements of dtype dt. */
static void fill(void *p, enum rl_dtype dt)
{
	for (int64_t i = 0; i < N; i++) {
		union rl_scv s;
		s.u = 0;
		if (dt == RL_DT_DOUBLE)
			s.d = rnd_real(true);
		else if (rl_dtype_is_float(dt))
			s.f = (float)rnd_real(false);
		else if (dt == RL_DT_BOOL)
			s.i = rnd() & 1;
		else
			s.i = rnd_int(dt);
		rl_scalar_store(p, dt, i, s);
	}
}

static uint32_t add_input(struct rl_graph *g, const char *name, enum rl_dtype dt)
{
	struct rl_shape s;
	const int64_t d[] = {N};
	rl_shape_set(&s, 1, d);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	g->values[v].flags |= RL_VAL_INPUT;
	g->inputs = realloc(g->inputs, (g->ninputs + 1) * sizeof(*g->inputs));
	g->inputs[g->ninputs++] = v;
	return v;
}

/* One variant of an op: attributes to set on the node. */
struct variant {
	enum rl_op op;
	const char *attr; /* NULL: none */
	enum rl_attr_kind kind;
	double f;
	const char *s;
	const char *attr2;
	double f2;
};

static void set_attrs(struct rl_graph *g, uint32_t node, const struct variant *v)
{
	if (!v->attr)
		return;
	struct rl_attr *at = rl_node_add_attr(g, node, v->attr, v->kind);
	if (v->kind == RL_ATTR_STRING) {
		at->s = rl_arena_strdup(g, v->s);
		at->n = (int)strlen(v->s);
	} else if (v->kind == RL_ATTR_INT) {
		at->i = (int64_t)v->f;
	} else {
		at->f = v->f;
	}
	if (v->attr2) {
		at = rl_node_add_attr(g, node, v->attr2, v->kind);
		if (v->kind == RL_ATTR_INT)
			at->i = (int64_t)v->f2;
		else
			at->f = v->f2;
	}
}

/* Does ONNX (inference) accept op variant v on dtype dt? */
static bool onnx_accepts(const struct variant *v, enum rl_dtype dt)
{
	struct rl_graph *g = rl_graph_new();
	g->opset = 21;
	g->path = "probe";
	uint32_t in[2] = {add_input(g, "a", dt), add_input(g, "b", dt)};
	uint32_t y = rl_graph_add_value(g, "y", RL_DT_UNDEFINED, NULL);
	unsigned fl = rl_op_table[v->op].flags;
	uint32_t node = rl_graph_add_node(g, v->op, "n", in, fl & RL_OPF_UNARY ? 1 : 2, &y, 1);
	set_attrs(g, node, v);
	g->values[y].flags |= RL_VAL_OUTPUT;
	g->outputs = realloc(g->outputs, sizeof(*g->outputs));
	g->outputs[g->noutputs++] = y;
	bool ok = rl_graph_infer(g) == RL_OK;
	rl_graph_free(g);
	return ok;
}

static const char run_main[] =
	"#include <stdio.h>\n#include <stdlib.h>\n#include \"m.h\"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"    void *in[M_NUM_INPUTS], *out[M_NUM_OUTPUTS];\n"
	"    if (argc < 3 || m_init(NULL))\n"
	"        return 2;\n"
	"    FILE *f = fopen(argv[1], \"rb\");\n"
	"    for (int i = 0; i < M_NUM_INPUTS; i++) {\n"
	"        in[i] = malloc(m_inputs[i].nbytes);\n"
	"        if (fread(in[i], 1, m_inputs[i].nbytes, f) != m_inputs[i].nbytes)\n"
	"            return 3;\n"
	"    }\n"
	"    fclose(f);\n"
	"    for (int i = 0; i < M_NUM_OUTPUTS; i++)\n"
	"        out[i] = calloc(1, m_outputs[i].nbytes);\n"
	"    m_run_v((const void *const *)in, out);\n"
	"    f = fopen(argv[2], \"wb\");\n"
	"    for (int i = 0; i < M_NUM_OUTPUTS; i++)\n"
	"        fwrite(out[i], 1, m_outputs[i].nbytes, f);\n"
	"    fclose(f);\n"
	"    return 0;\n"
	"}\n";

/* Units in the last place of x as a float32 (denormal spacing at least). */
static double ulp_f(double x)
{
	int e;
	frexp(fabs((double)(float)x), &e);
	return ldexp(1.0, e - 24 < -149 ? -149 : e - 24);
}

static void *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "%s", path);
	fseek(f, 0, SEEK_END);
	long sz = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc((size_t)sz + 1);
	cr_assert_eq(fread(p, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	*n = (size_t)sz;
	return p;
}

struct check {
	uint32_t node;
	enum rl_dtype dt, ydt;
	const void *a, *b;
	size_t off; /* byte offset of the output in out.bin */
};

Test(scalar, emitted_code_matches_the_table, .timeout = 600)
{
	static const enum rl_dtype dts[] = {
		RL_DT_FLOAT, RL_DT_DOUBLE, RL_DT_FLOAT16, RL_DT_BFLOAT16, RL_DT_INT8, RL_DT_UINT8,
		RL_DT_INT16, RL_DT_UINT16, RL_DT_INT32, RL_DT_UINT32, RL_DT_INT64, RL_DT_UINT64,
		RL_DT_BOOL,
	};
	/* attribute variants next to each op's defaults */
	static const struct variant extra[] = {
		{RL_OP_Gelu, "approximate", RL_ATTR_STRING, 0, "tanh", NULL, 0},
		{RL_OP_LeakyRelu, "alpha", RL_ATTR_FLOAT, 0.1, NULL, NULL, 0},
		{RL_OP_Elu, "alpha", RL_ATTR_FLOAT, 0.3, NULL, NULL, 0},
		{RL_OP_Celu, "alpha", RL_ATTR_FLOAT, 1.7, NULL, NULL, 0},
		{RL_OP_Selu, "alpha", RL_ATTR_FLOAT, 1.5, NULL, "gamma", 1.2},
		{RL_OP_HardSigmoid, "alpha", RL_ATTR_FLOAT, 0.3, NULL, "beta", 0.6},
		{RL_OP_ThresholdedRelu, "alpha", RL_ATTR_FLOAT, 2.2, NULL, NULL, 0},
		{RL_OP_Shrink, "lambd", RL_ATTR_FLOAT, 1.5, NULL, "bias", 0.7},
		{RL_OP_IsInf, "detect_positive", RL_ATTR_INT, 0, NULL, NULL, 0},
		{RL_OP_IsInf, "detect_negative", RL_ATTR_INT, 0, NULL, NULL, 0},
		{RL_OP_Mod, "fmod", RL_ATTR_INT, 1, NULL, NULL, 0},
		{RL_OP_BitShift, "direction", RL_ATTR_STRING, 0, "LEFT", NULL, 0},
		{RL_OP_BitShift, "direction", RL_ATTR_STRING, 0, "RIGHT", NULL, 0},
	};
	enum { NDT = sizeof(dts) / sizeof(dts[0]) };
	struct variant vs[RL_OP_COUNT_ + 16];
	int nv = 0;
	for (int op = 0; op < RL_OP_COUNT_; op++) {
		const struct rl_scalar_info *si = rl_scalar_info((enum rl_op)op);
		if (si && (si->flags & RL_SCF_CALC))
			vs[nv++] = (struct variant){.op = (enum rl_op)op};
	}
	for (size_t k = 0; k < sizeof(extra) / sizeof(extra[0]); k++)
		vs[nv++] = extra[k];

	struct rl_graph *g = rl_graph_new();
	g->opset = 21;
	g->path = "test_scalar";
	void *data[NDT][2];
	struct check *ck = calloc(NDT * (size_t)nv, sizeof(*ck));
	int nck = 0, per_dt[NDT] = {0};
	size_t in_bytes = 0, out_off = 0;
	for (int d = 0; d < NDT; d++) {
		enum rl_dtype dt = dts[d];
		char nm[64];
		uint32_t in[2];
		for (int k = 0; k < 2; k++) {
			snprintf(nm, sizeof(nm), "%s_%c", rl_dtype_name(dt), 'a' + k);
			in[k] = add_input(g, nm, dt);
			data[d][k] = calloc(N, rl_dtype_size(dt));
			fill(data[d][k], dt);
			in_bytes += N * rl_dtype_size(dt);
		}
		for (int k = 0; k < nv; k++) {
			const struct variant *v = &vs[k];
			const struct rl_scalar_info *si = rl_scalar_info(v->op);
			unsigned need = dt == RL_DT_BOOL ? RL_SCF_B : rl_dtype_is_int(dt) ? RL_SCF_I : RL_SCF_F;
			if (!(si->flags & need) || !onnx_accepts(v, dt))
				continue;
			/* Neg on unsigned, BitShift without a direction: the table and
			 * the emitter refuse it; so does inference */
			unsigned fl = rl_op_table[v->op].flags;
			snprintf(nm, sizeof(nm), "%s_%s_%d", rl_op_table[v->op].name, rl_dtype_name(dt), k);
			uint32_t y = rl_graph_add_value(g, nm, RL_DT_UNDEFINED, NULL);
			uint32_t node = rl_graph_add_node(g, v->op, nm, in, fl & RL_OPF_UNARY ? 1 : 2, &y, 1);
			set_attrs(g, node, v);
			g->values[y].flags |= RL_VAL_OUTPUT;
			g->outputs = realloc(g->outputs, (g->noutputs + 1) * sizeof(*g->outputs));
			g->outputs[g->noutputs++] = y;
			ck[nck++] = (struct check){.node = node, .dt = dt, .a = data[d][0], .b = data[d][1]};
			per_dt[d]++;
		}
	}
	cr_assert_eq(rl_graph_infer(g), RL_OK, "%s", g->err);
	for (int d = 0; d < NDT; d++)
		cr_log_info("%s: %d kernels", rl_dtype_name(dts[d]), per_dt[d]);
	cr_expect_geq(per_dt[0], 50, "every float op present");
	for (int k = 0; k < nck; k++) {
		const struct rl_node *n = &g->nodes[ck[k].node];
		ck[k].ydt = g->values[n->out[0]].dtype;
		ck[k].off = out_off;
		out_off += N * rl_dtype_size(ck[k].ydt);
	}

	char *dir = tu_tmpdir(), path[4200], err[1024] = "";
	cr_assert(dir);
	snprintf(path, sizeof(path), "%s/m.c", dir);
	cr_assert_eq(rl_emit_c(g, NULL, path, err, sizeof(err)), RL_OK, "%s", err);
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, run_main, strlen(run_main)), 0);
	char *inb = malloc(in_bytes);
	size_t at = 0;
	for (int d = 0; d < NDT; d++)
		for (int k = 0; k < 2; k++) {
			memcpy(inb + at, data[d][k], N * rl_dtype_size(dts[d]));
			at += N * rl_dtype_size(dts[d]);
		}
	snprintf(path, sizeof(path), "%s/in.bin", dir);
	cr_assert_eq(tu_write(path, inb, in_bytes), 0);
	free(inb);
	int rc = sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 m.c main.c -o vec -lm"
	            " -lpthread 2> cc.log && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -DRL_NO_VEC"
	            " m.c main.c -o sca -lm -lpthread 2>> cc.log && ./vec in.bin vec.bin &&"
	            " ./sca in.bin sca.bin || { head -c 4000 cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "build or run failed in %s", dir);

	for (int build = 0; build < 2; build++) {
		size_t nb;
		snprintf(path, sizeof(path), "%s/%s", dir, build ? "sca.bin" : "vec.bin");
		char *out = read_all(path, &nb);
		cr_assert_eq(nb, out_off);
		for (int k = 0; k < nck; k++) {
			const struct rl_node *n = &g->nodes[ck[k].node];
			const struct rl_scalar_info *si = rl_scalar_info(n->op);
			struct rl_scalar_attrs p;
			rl_scalar_attrs(n, &p);
			bool vec = !build && ck[k].dt == RL_DT_FLOAT;
			/* outputs of every dtype are packed in out.bin: copy this one
			 * out to aligned memory */
			void *ob = malloc(N * rl_dtype_size(ck[k].ydt));
			memcpy(ob, out + ck[k].off, N * rl_dtype_size(ck[k].ydt));
			double worst = 0;
			long bad = 0, undef = 0;
			for (int64_t i = 0; i < N; i++) {
				union rl_scv a = rl_scalar_load(ck[k].a, ck[k].dt, i), r;
				union rl_scv b = rl_scalar_load(ck[k].b, ck[k].dt, i);
				enum rl_scalar_status st = rl_scalar_apply(n->op, &p, ck[k].dt, a, b, &r);
				cr_assert_neq(st, RL_SCALAR_NO, "%s: table refuses it", n->name);
				if (n->op == RL_OP_Mean) {
					if (ck[k].dt == RL_DT_DOUBLE)
						r.d /= 2;
					else
						r.f /= 2;
				}
				if (st == RL_SCALAR_UNDEF && n->op == RL_OP_Shrink) {
					undef++;
					continue;
				}
				uint64_t want_bits = 0;
				rl_scalar_store(&want_bits, ck[k].ydt, 0, r);
				union rl_scv w = rl_scalar_load(&want_bits, ck[k].ydt, 0);
				union rl_scv got = rl_scalar_load(ob, ck[k].ydt, i);
				bool ok;
				double e = 0;
				if (ck[k].ydt == RL_DT_DOUBLE) {
					ok = (isnan(w.d) && isnan(got.d)) || memcmp(&w.d, &got.d, 8) == 0;
				} else if (rl_dtype_is_float(ck[k].ydt)) {
					ok = same_f(w.f, got.f);
					if (!ok && vec && !isnan(w.f) && !isnan(got.f) && !isinf(w.f) &&
					    !isinf(got.f)) {
						double dd = fabs((double)w.f - (double)got.f);
						e = dd / ulp_f(w.f);
						ok = e <= si->ulp || dd <= si->abs;
						if (e > worst && dd > si->abs) /* where the ulp bound applies */
							worst = e;
					} else if (!ok && !isnan(w.f) && !isnan(got.f) && w.f == got.f) {
						ok = vec; /* the vector forms may give +0 for -0 */
					}
				} else {
					ok = w.i == got.i;
				}
				if (!ok) {
					if (bad < 4) {
						char ta[64], tb[64], tw[64], tg[64];
						bool dbl = ck[k].dt == RL_DT_DOUBLE, fl = rl_dtype_is_float(ck[k].dt);
#define FMT(buf, v, isd, isf) \
	(isd ? snprintf(buf, 64, "%a", (v).d) : isf ? snprintf(buf, 64, "%a", (double)(v).f) \
	                                            : snprintf(buf, 64, "%lld", (long long)(v).i))
						FMT(ta, a, dbl, fl);
						FMT(tb, b, dbl, fl);
						bool ydbl = ck[k].ydt == RL_DT_DOUBLE, yfl = rl_dtype_is_float(ck[k].ydt);
						FMT(tw, w, ydbl, yfl);
						FMT(tg, got, ydbl, yfl);
#undef FMT
						cr_log_error("%s build: %s[%lld]: a=%s b=%s table %s emitted %s (%.3g ulp)",
						             build ? "scalar" : "vector", n->name, (long long)i, ta, tb,
						             tw, tg, e);
					}
					bad++;
				}
			}
			if (vec && worst > 0)
				cr_log_info("vector %s: worst %.3f ulp beyond the abs bound (bound %g ulp or %g)", n->name, worst,
				            si->ulp, si->abs);
			free(ob);
			cr_expect_eq(bad, 0, "%s build: %s: %ld of %d elements differ from the table",
			             build ? "scalar" : "vector", n->name, bad, N);
			(void)undef;
		}
		free(out);
	}
	tu_rmtree(dir);
	free(dir);
	for (int d = 0; d < NDT; d++) {
		free(data[d][0]);
		free(data[d][1]);
	}
	free(ck);
	rl_graph_free(g);
}
