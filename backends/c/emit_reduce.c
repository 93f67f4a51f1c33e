/*
 * emit_reduce.c - C kernels for the reduce family: Reduce* and ArgMax/ArgMin.
 *
 * A reduction is planned on the input shape with size-1 dims dropped and
 * neighbouring dims of the same kind (kept or reduced) merged, which leaves
 * alternating groups such as [kept, reduced, kept]. Two loop shapes follow:
 *
 * - the last group is reduced: for every output element, one accumulator
 *   runs over the reduced groups, the innermost loop over contiguous input;
 * - the last group is kept: the output row of that group is accumulated as a
 *   vector (a local array of at most RL_RED_TILE elements) while the loops
 *   over the reduced groups stream whole input rows, so the innermost loop is
 *   contiguous in both input and accumulator and vectorizes.
 *
 * Float32 reductions whose reduced elements form one contiguous row per
 * output are vectorized and split across threads by rows (emit_reduce_rows),
 * with half-vector accumulators (rl_vh: see emit_rt.c for why).
 *
 * Accumulators: float for float32/float16/bfloat16 (numpy sums float32 in
 * float32 too), double for float64. Integer sums, products and squares use
 * uint64_t, whose wrap-around equals numpy's in the narrower type once cast
 * back and has no undefined overflow; ReduceL2/LogSum/LogSumExp on integers
 * go through double. ReduceLogSumExp subtracts the largest finite element
 * first, like the ONNX reference. An empty reduction gives the reference's
 * constants: 0 for sums, 1 for ReduceProd, -inf (or the type's minimum) for
 * ReduceMax, -inf for ReduceLogSum and ReduceLogSumExp, NaN for a float
 * ReduceMean.
 *
 * axes come from the attribute before opset 13 (ReduceSum) or 18 (the rest)
 * and from the optional second input after; that input must be constant at
 * generation time. Empty axes reduce everything unless noop_with_empty_axes,
 * in which case the element-wise part still runs (ReduceSumSquare squares).
 */
#include "emit_impl.h"
#include "cost.h"

#include <string.h>

#define RL_RED_TILE 256 /* elements of a vector accumulator */
#define RL_RED_MIN_PAR (1 << 15) /* elements per thread at least */
_Static_assert(RL_RED_MIN_PAR == RL_COST_PAR_MIN_ELEMS, "ir/cost.h prices the split made here");
#define VW 16 /* RL_VW, floats per vector in the generated code */

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

/* math function name for the compute type */
static const char *mfn(const char *acc, const char *f)
{
	static char b[8][16];
	static int k;
	k = (k + 1) % 8;
	snprintf(b[k], sizeof(b[k]), "%s%s", f, strcmp(acc, "float") == 0 ? "f" : "");
	return b[k];
}

/* ---- loop nests with hoisted offsets -------------------------------------- */

struct group {
	int64_t n;       /* elements */
	int64_t xs;      /* input stride */
	int64_t ys;      /* output stride (kept groups) */
	bool reduced;
};

struct nest {
	int depth;       /* loops opened */
	int var;         /* next loop variable number (unique in the kernel) */
	char x[48], y[48]; /* current input / output offset expressions */
};

/* Open loops over groups g[0..n) of the given kind, extending the offsets. */
static void nest_open(struct rl_cgen *cg, struct nest *ns, const struct group *g, int n,
                      bool reduced)
{
	for (int k = 0; k < n; k++) {
		if (g[k].reduced != reduced)
			continue;
		int v = ns->var++;
		cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", v, v, (long long)g[k].n, v);
		cg->indent++;
		ns->depth++;
		if (strcmp(ns->x, "0") == 0)
			cg_line(cg, "const size_t xo%d = j%d * %lld;", v, v, (long long)g[k].xs);
		else
			cg_line(cg, "const size_t xo%d = %s + j%d * %lld;", v, ns->x, v,
			        (long long)g[k].xs);
		snprintf(ns->x, sizeof(ns->x), "xo%d", v);
		if (!reduced) {
			if (strcmp(ns->y, "0") == 0)
				cg_line(cg, "const size_t yo%d = j%d * %lld;", v, v, (long long)g[k].ys);
			else
				cg_line(cg, "const size_t yo%d = %s + j%d * %lld;", v, ns->y, v,
				        (long long)g[k].ys);
			snprintf(ns->y, sizeof(ns->y), "yo%d", v);
		}
	}
}

static void nest_close(struct rl_cgen *cg, struct nest *ns, int to_depth)
{
	while (ns->depth > to_depth) {
		cg->indent--;
		cg_line(cg, "}");
		ns->depth--;
	}
}

/* ---- Reduce* -------------------------------------------------------------- */

struct red {
	enum rl_op op;
	enum rl_dtype dt;
	const char *acc;  /* accumulator C type */
	bool fl;          /* float input */
	int64_t cnt;      /* elements per output */
	const char *cnt_expr; /* C expression for cnt when known only at run time */
};

static const char *int_min(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_INT8: return "INT8_MIN";
	case RL_DT_INT16: return "INT16_MIN";
	case RL_DT_INT32: return "INT32_MIN";
	case RL_DT_INT64: return "INT64_MIN";
	default: return "0";
	}
}

static const char *int_max(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_INT8: return "INT8_MAX";
	case RL_DT_INT16: return "INT16_MAX";
	case RL_DT_INT32: return "INT32_MAX";
	case RL_DT_INT64: return "INT64_MAX";
	case RL_DT_UINT8: return "UINT8_MAX";
	case RL_DT_UINT16: return "UINT16_MAX";
	case RL_DT_UINT32: return "UINT32_MAX";
	case RL_DT_UINT64: return "UINT64_MAX";
	case RL_DT_BOOL: return "1";
	default: return "0";
	}
}

static const char *red_init(const struct red *r)
{
	switch (r->op) {
	case RL_OP_ReduceProd:
		return r->fl ? cg_lit(r->dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT, 1) : "1";
	case RL_OP_ReduceMax:
		return r->fl ? "-INFINITY" : int_min(r->dt);
	case RL_OP_ReduceMin:
		return r->fl ? "INFINITY" : int_max(r->dt);
	default:
		return cg_zero(r->acc); /* 0.0f for a float accumulator */
	}
}

/* C statement folding element value `v` into accumulator `a`. */
static void red_step(struct rl_cgen *cg, const struct red *r, const char *a, const char *x)
{
	const char *acc = r->acc;
	char v[256];
	/* the element in the accumulator's type */
	if (r->fl)
		snprintf(v, sizeof(v), "%s", cg_load(cg, r->dt, x));
	else
		snprintf(v, sizeof(v), "(%s)%s", acc, x);
	switch (r->op) {
	case RL_OP_ReduceMax:
		if (r->fl)
			cg_line(cg, "{ const %s v = %s; if (v > %s || isnan(v)) %s = v; }", acc, v, a, a);
		else
			cg_line(cg, "if (%s > %s) %s = %s;", v, a, a, v);
		break;
	case RL_OP_ReduceMin:
		if (r->fl)
			cg_line(cg, "{ const %s v = %s; if (v < %s || isnan(v)) %s = v; }", acc, v, a, a);
		else
			cg_line(cg, "if (%s < %s) %s = %s;", v, a, a, v);
		break;
	case RL_OP_ReduceProd:
		cg_line(cg, "%s *= %s;", a, v);
		break;
	case RL_OP_ReduceL1:
		if (r->fl)
			cg_line(cg, "%s += %s(%s);", a, mfn(acc, "fabs"), v);
		else if (rl_dtype_is_signed(r->dt))
			cg_line(cg, "%s += (%s)(%s < 0 ? -(int64_t)%s : (int64_t)%s);", a, acc, x, x, x);
		else
			cg_line(cg, "%s += %s;", a, v);
		break;
	case RL_OP_ReduceL2: case RL_OP_ReduceSumSquare:
		cg_line(cg, "{ const %s v = %s; %s += v * v; }", acc, v, a);
		break;
	default: /* Sum, Mean, LogSum; LogSumExp's second pass is written by the caller */
		cg_line(cg, "%s += %s;", a, v);
		break;
	}
}

/* Expression for the result from accumulator `a` (and max `m` for LSE). */
static const char *red_final(const struct red *r, const char *a, const char *m)
{
	static char b[256];
	const char *acc = r->acc;
	switch (r->op) {
	case RL_OP_ReduceMean:
		if (r->cnt_expr && r->fl)
			snprintf(b, sizeof(b), "%s / (%s)%s", a, acc, r->cnt_expr);
		else if (r->cnt_expr)
			snprintf(b, sizeof(b), "%s ? %s%s / (%s)%s : 0", r->cnt_expr,
			         rl_dtype_is_signed(r->dt) ? "(int64_t)" : "", a,
			         rl_dtype_is_signed(r->dt) ? "int64_t" : "uint64_t", r->cnt_expr);
		else if (r->fl)
			snprintf(b, sizeof(b), "%s / %s", a, cg_lit(strcmp(acc, "double") ? RL_DT_FLOAT
			                                                                    : RL_DT_DOUBLE,
			                                            (double)r->cnt));
		else if (!r->cnt)
			snprintf(b, sizeof(b), "0");
		else if (rl_dtype_is_signed(r->dt))
			snprintf(b, sizeof(b), "(int64_t)%s / %lld", a, (long long)r->cnt);
		else
			snprintf(b, sizeof(b), "%s / %lld", a, (long long)r->cnt);
		break;
	case RL_OP_ReduceL2:
		snprintf(b, sizeof(b), "%s(%s)", mfn(acc, "sqrt"), a);
		break;
	case RL_OP_ReduceLogSum:
		snprintf(b, sizeof(b), "%s(%s)", mfn(acc, "log"), a);
		break;
	case RL_OP_ReduceLogSumExp:
		snprintf(b, sizeof(b), "%s(%s) + %s", mfn(acc, "log"), a, m);
		break;
	default:
		snprintf(b, sizeof(b), "%s", a);
		break;
	}
	return b;
}

/* Read the axes; fills reduced[] and returns RL_OK or an error. */
static enum rl_status red_axes(struct rl_cgen *cg, uint32_t node, bool *reduced, bool *noop,
                               bool *runtime)
{
	const struct rl_node *n = &cg->g->nodes[node];
	int r = cg_in(cg, node, 0)->shape.rank;
	int since = n->op == RL_OP_ReduceSum ? 13 : 18;
	int64_t axes[RL_MAX_RANK];
	int na = 0;
	if (n->opset < since) {
		const int64_t *p;
		na = rl_node_attr_ints(n, "axes", &p);
		if (na > RL_MAX_RANK)
			return cg_error(cg, node, "too many axes");
		if (na > 0)
			memcpy(axes, p, (size_t)na * sizeof(*p));
		if (na < 0)
			na = 0;
	} else {
		uint32_t v = rl_node_in(n, 1);
		*runtime = false;
		if (v != RL_NONE && !rl_value_is_const(cg->g, v)) {
			const struct rl_value *av = &cg->g->values[v];
			if (numel(av) > 0) {
				if (av->shape.rank != 1 || numel(av) > RL_MAX_RANK ||
				    (av->dtype != RL_DT_INT64 && av->dtype != RL_DT_INT32))
					return cg_error(cg, node, "'axes' must be a 1-D integer list of at "
					                "most %d", RL_MAX_RANK);
				*runtime = true;
				return RL_OK;
			}
			/* an empty list, known from its static shape */
		} else if (v != RL_NONE) {
			na = rl_value_get_ints(cg->g, v, axes, RL_MAX_RANK);
			if (na < 0)
				return cg_error(cg, node, "'axes' must be a 1-D integer list of at most %d",
				                RL_MAX_RANK);
		}
	}
	*noop = false;
	for (int d = 0; d < r; d++)
		reduced[d] = na == 0;
	if (na == 0 && rl_node_attr_int(n, "noop_with_empty_axes", 0)) {
		for (int d = 0; d < r; d++)
			reduced[d] = false;
		*noop = true;
	}
	for (int i = 0; i < na; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
		if (a < 0 || a >= r)
			return cg_error(cg, node, "axis %lld is out of range for rank %d",
			                (long long)axes[i], r);
		reduced[a] = true;
	}
	return RL_OK;
}

/* Merge dims into alternating kept/reduced groups; returns count, or -1 if a
 * kept dim is empty (nothing to write). *cnt gets the reduced element count. */
static int red_groups(const struct rl_shape *s, const bool *reduced, struct group *g,
                      int64_t *cnt)
{
	int64_t xs[RL_MAX_RANK];
	cg_strides(s, xs);
	int m = 0;
	*cnt = 1;
	for (int d = 0; d < s->rank; d++) {
		int64_t n = s->d[d].v;
		if (reduced[d])
			*cnt *= n;
		else if (n == 0)
			return -1;
		if (n == 1 || n == 0)
			continue;
		if (m && g[m - 1].reduced == reduced[d] && g[m - 1].xs == xs[d] * n) {
			g[m - 1].n *= n;
			g[m - 1].xs = xs[d];
		} else {
			g[m].n = n;
			g[m].xs = xs[d];
			g[m].reduced = reduced[d];
			m++;
		}
	}
	/* output strides over the kept groups */
	int64_t acc = 1;
	for (int k = m - 1; k >= 0; k--) {
		g[k].ys = g[k].reduced ? 0 : acc;
		if (!g[k].reduced)
			acc *= g[k].n;
	}
	return m;
}

/* Walk the input once in order with the output offset `o` following the kept
 * coordinates (ost[d] = 0 on reduced dims); `stmt` runs per element i. */
static void emit_walk(struct rl_cgen *cg, int r, int64_t nin, const char *stmt)
{
	cg_line(cg, "{");
	cg->indent++;
	cg_line(cg, "size_t idx[%d] = {0}, o = 0;", r);
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)nin);
	cg_line(cg, "    %s", stmt);
	cg_line(cg, "    for (size_t d = %d; d-- > 0;) { /* next coordinate */", r);
	cg_line(cg, "        o += ost[d];");
	cg_line(cg, "        if (++idx[d] < dims[d])");
	cg_line(cg, "            break;");
	cg_line(cg, "        o -= ost[d] * dims[d];");
	cg_line(cg, "        idx[d] = 0;");
	cg_line(cg, "    }");
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * axes given as a non-constant input: the output shape is static but which
 * dims it keeps is decided at run time. One pass over the input in memory
 * order accumulates into a per-output array; if the axes disagree with the
 * static output shape the output is zeroed rather than overrun.
 */
static enum rl_status emit_reduce_runtime(struct rl_cgen *cg, uint32_t node, struct red *R)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	const struct rl_value *av = cg_in(cg, node, 1);
	int r = x->shape.rank;
	int64_t nin = numel(x), nout = numel(y);
	if (r == 0)
		return cg_error(cg, node, "axes given for a scalar input");
	if (nout == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	const char *acc = R->acc;
	bool lse = n->op == RL_OP_ReduceLogSumExp;
	R->cnt_expr = "cnt";
	char dl[256];
	size_t p = 0;
	for (int d = 0; d < r; d++)
		p += (size_t)snprintf(dl + p, sizeof(dl) - p, "%s%lld", d ? ", " : "",
		                      (long long)x->shape.d[d].v);
	cg_line(cg, "/* %s with axes known only at run time: one pass over the input, "
	        "accumulating per output */", rl_op_table[n->op].name);
	cg_line(cg, "static const size_t dims[%d] = {%s};", r, dl);
	cg_line(cg, "unsigned char red[%d] = {0};", r);
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)numel(av));
	cg_line(cg, "    int64_t a = (int64_t)X1[i];");
	cg_line(cg, "    if (a < 0)");
	cg_line(cg, "        a += %d;", r);
	cg_line(cg, "    if (a >= 0 && a < %d)", r);
	cg_line(cg, "        red[a] = 1;");
	cg_line(cg, "}");
	cg_line(cg, "size_t ost[%d], cnt = 1, nout = 1;", r);
	cg_line(cg, "for (size_t d = %d; d-- > 0;) {", r);
	cg_line(cg, "    ost[d] = red[d] ? 0 : nout;");
	cg_line(cg, "    if (red[d])");
	cg_line(cg, "        cnt *= dims[d];");
	cg_line(cg, "    else");
	cg_line(cg, "        nout *= dims[d];");
	cg_line(cg, "}");
	cg_line(cg, "if (nout != %lld) { /* axes disagree with the static output shape */",
	        (long long)nout);
	cg_line(cg, "    memset(Y0, 0, %lld * sizeof(%s));", (long long)nout, cg_ctype(y->dtype));
	cg_line(cg, "    return;");
	cg_line(cg, "}");
	cg_line(cg, "(void)cnt;");
	cg_line(cg, "(void)ost;");
	cg_line(cg, "static %s acc[%lld];", acc, (long long)nout);
	cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)nout);
	cg_line(cg, "    acc[o] = %s;", red_init(R));
	if (lse) {
		cg_line(cg, "static %s mx[%lld];", acc, (long long)nout);
		cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)nout);
		cg_line(cg, "    mx[o] = -INFINITY;");
	}
	if (nin > 0) {
		char stmt[512];
		if (lse) {
			snprintf(stmt, sizeof(stmt), "{ const %s v = %s; if (v > mx[o] && !isinf(v)) "
			         "mx[o] = v; }", acc, R->fl ? cg_load(cg, R->dt, "X0[i]") : "X0[i]");
			emit_walk(cg, r, nin, stmt);
			snprintf(stmt, sizeof(stmt), "acc[o] += %s(%s - mx[o]);", mfn(acc, "exp"),
			         R->fl ? cg_load(cg, R->dt, "X0[i]") : "X0[i]");
			emit_walk(cg, r, nin, stmt);
		} else {
			/* red_step writes one line; capture it */
			size_t mark = cg->body.len;
			int ind = cg->indent;
			cg->indent = 0;
			red_step(cg, R, "acc[o]", "X0[i]");
			cg->indent = ind;
			char *line = cg->body.s + mark;
			while (*line == ' ')
				line++;
			snprintf(stmt, sizeof(stmt), "%s", line);
			stmt[strcspn(stmt, "\n")] = 0;
			cg->body.len = mark;
			cg->body.s[mark] = 0;
			emit_walk(cg, r, nin, stmt);
		}
	}
	cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)nout);
	cg_line(cg, "    Y0[o] = %s;", cg_assign(cg, y->dtype, red_final(R, "acc[o]", "mx[o]")));
	return RL_OK;
}

/* ---- float32 reductions over contiguous rows ------------------------------ */

/*
 * When the only reduced group is the last one, output r reduces the
 * contiguous row X0[r * cnt, (r + 1) * cnt). For float32 Sum, Mean,
 * SumSquare, L1, L2, LogSum, Prod, Max and Min each row is reduced with two
 * vector accumulators (RL_VW lanes each, to cover the add latency), which
 * are combined lane-wise, then across the lanes in order, then the short
 * tail in order: a fixed order, so results do not depend on the thread
 * count (rows are split across threads, a row never is). Max/Min keep the
 * scalar code's NaN propagation. The scalar code under #else is the
 * sequential loop.
 */
static bool rows_fit(const struct red *R, enum rl_dtype dt, const struct group *g, int m)
{
	if (dt != RL_DT_FLOAT || m < 1 || !g[m - 1].reduced || g[m - 1].xs != 1)
		return false;
	for (int k = 0; k < m - 1; k++)
		if (g[k].reduced)
			return false;
	switch (R->op) {
	case RL_OP_ReduceSum: case RL_OP_ReduceMean: case RL_OP_ReduceSumSquare:
	case RL_OP_ReduceL1: case RL_OP_ReduceL2: case RL_OP_ReduceLogSum:
	case RL_OP_ReduceProd: case RL_OP_ReduceMax: case RL_OP_ReduceMin:
		return R->cnt >= 2 * VW;
	default:
		return false;
	}
}

/* vector statement folding rl_vh `v` into accumulator `a` */
static void vstep(struct rl_cgen *cg, enum rl_op op, const char *a, const char *v)
{
	switch (op) {
	case RL_OP_ReduceSumSquare: case RL_OP_ReduceL2:
		cg_line(cg, "%s += %s * %s;", a, v, v);
		break;
	case RL_OP_ReduceL1:
		cg_line(cg, "{ rl_vh t_; rl_vhabs(&t_, &%s); %s += t_; }", v, a);
		break;
	case RL_OP_ReduceProd:
		cg_line(cg, "%s *= %s;", a, v);
		break;
	case RL_OP_ReduceMax: case RL_OP_ReduceMin:
		/* a NaN wins; two selects of different values (GCC 12 scalarizes
		 * an | of two masks): the NaN comes in as v + a */
		cg_line(cg, "{ const rl_vh n_ = %s + %s; rl_vhif(&%s, %s, &%s, &%s, &%s, &%s);", v, a,
		        a, op == RL_OP_ReduceMax ? "RL_GT" : "RL_LT", v, a, v, a);
		cg_line(cg, "  rl_vhif(&%s, RL_NE, &%s, &%s, &n_, &%s); }", a, v, v, a);
		break;
	default:
		cg_line(cg, "%s += %s;", a, v);
		break;
	}
}

/*
 * A row per output: four half-vector accumulators (rl_vh, see emit_rt.c:
 * a 16-float accumulator stays in memory in the AVX2 clone) over 32
 * elements a step, a last whole rl_vf into the first two, the four folded
 * (a0 . a2) . (a1 . a3) and across the 8 lanes, then the short tail in
 * order.
 */
static void emit_reduce_rows(struct rl_cgen *cg, const struct red *R, enum rl_dtype ydt,
                             int64_t nout, int64_t cnt)
{
	int64_t nv = cnt / VW * VW, n2 = cnt / (2 * VW) * (2 * VW);
	const char *init = red_init(R);
	cg_vmath_need(cg, RL_VM_BASE);
	cg->simd = 1;
	cg_rows_open(cg, "r", nout, cnt, RL_RED_MIN_PAR);
	cg_line(cg, "const float *x = X0 + r * %lld;", (long long)cnt);
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	cg_line(cg, "rl_vh a0 = (rl_vh){0} + %s, a1 = a0, a2 = a0, a3 = a0;", init);
	cg_line(cg, "for (size_t i = 0; i < %lld; i += 4 * RL_VH) {", (long long)n2);
	cg->indent++;
	cg_line(cg, "const rl_vh v0 = *(const rl_vhu *)(x + i), v1 = *(const rl_vhu *)(x + i + RL_VH);");
	cg_line(cg, "const rl_vh v2 = *(const rl_vhu *)(x + i + 2 * RL_VH), "
	        "v3 = *(const rl_vhu *)(x + i + 3 * RL_VH);");
	vstep(cg, R->op, "a0", "v0");
	vstep(cg, R->op, "a1", "v1");
	vstep(cg, R->op, "a2", "v2");
	vstep(cg, R->op, "a3", "v3");
	cg->indent--;
	cg_line(cg, "}");
	if (nv > n2) {
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "const rl_vh v0 = *(const rl_vhu *)(x + %lld), v1 = *(const rl_vhu *)(x + %lld);",
		        (long long)n2, (long long)(n2 + VW / 2));
		vstep(cg, R->op, "a0", "v0");
		vstep(cg, R->op, "a1", "v1");
		cg->indent--;
		cg_line(cg, "}");
	}
	/* the accumulators lane-wise: the same step with one as the element */
	struct red lane = *R;
	if (lane.op == RL_OP_ReduceSumSquare || lane.op == RL_OP_ReduceL2 ||
	    lane.op == RL_OP_ReduceL1)
		lane.op = RL_OP_ReduceSum; /* already squared / absolute */
	vstep(cg, lane.op, "a0", "a2");
	vstep(cg, lane.op, "a1", "a3");
	vstep(cg, lane.op, "a0", "a1");
	cg_line(cg, "float a = a0[0];");
	cg_line(cg, "for (int l = 1; l < RL_VH; l++) {");
	cg->indent++;
	red_step(cg, &lane, "a", "a0[l]");
	cg->indent--;
	cg_line(cg, "}");
	if (nv < cnt) {
		cg_line(cg, "for (size_t i = %lld; i < %lld; i++) {", (long long)nv, (long long)cnt);
		cg->indent++;
		red_step(cg, R, "a", "x[i]");
		cg->indent--;
		cg_line(cg, "}");
	}
	rl_buf_printf(&cg->body, "#else\n");
	cg_line(cg, "float a = %s;", init);
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)cnt);
	cg->indent++;
	red_step(cg, R, "a", "x[i]");
	cg->indent--;
	cg_line(cg, "}");
	rl_buf_printf(&cg->body, "#endif\n");
	cg_line(cg, "Y0[r] = %s;", cg_assign(cg, ydt, red_final(R, "a", "a")));
	cg->indent--;
	cg_line(cg, "}");
}

static enum rl_status emit_reduce_op(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	struct red R = {.op = n->op, .dt = x->dtype, .fl = rl_dtype_is_float(x->dtype)};
	if (y->dtype != x->dtype)
		return cg_error(cg, node, "output dtype differs from the input's");
	if (x->dtype == RL_DT_BOOL && n->op != RL_OP_ReduceMax && n->op != RL_OP_ReduceMin)
		return cg_error(cg, node, "%s on bool is not defined", rl_op_table[n->op].name);
	if (R.fl)
		R.acc = cg_comptype(x->dtype);
	else if (n->op == RL_OP_ReduceMax || n->op == RL_OP_ReduceMin)
		R.acc = cg_ctype(x->dtype);
	else if (n->op == RL_OP_ReduceL2 || n->op == RL_OP_ReduceLogSum ||
	         n->op == RL_OP_ReduceLogSumExp)
		R.acc = "double";
	else
		R.acc = "uint64_t";
	bool reduced[RL_MAX_RANK], noop = false, runtime = false;
	enum rl_status st = red_axes(cg, node, reduced, &noop, &runtime);
	if (st != RL_OK)
		return st;
	if (runtime)
		return emit_reduce_runtime(cg, node, &R);
	int64_t nout = 1;
	for (int d = 0; d < x->shape.rank; d++)
		if (!reduced[d])
			nout *= x->shape.d[d].v;
	if (numel(y) != nout)
		return cg_error(cg, node, "output has %lld elements, the reduction gives %lld",
		                (long long)numel(y), (long long)nout);
	struct group g[RL_MAX_RANK];
	int m = red_groups(&x->shape, reduced, g, &R.cnt);
	if (m < 0 || nout == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	bool lse = n->op == RL_OP_ReduceLogSumExp;
	bool vec = m > 0 && !g[m - 1].reduced; /* last group kept: vector accumulator */
	int64_t kin = vec ? g[m - 1].n : 1;
	const char *acc = R.acc, *init = red_init(&R);
	cg_line(cg, "/* %s over %lld element%s per output%s */", rl_op_table[n->op].name,
	        (long long)R.cnt, R.cnt == 1 ? "" : "s",
	        noop ? " (empty axes with noop_with_empty_axes: element-wise only)" : "");
	if (!vec && rows_fit(&R, x->dtype, g, m)) {
		emit_reduce_rows(cg, &R, y->dtype, nout, R.cnt);
		return RL_OK;
	}
	struct nest ns = {0};
	snprintf(ns.x, sizeof(ns.x), "0");
	snprintf(ns.y, sizeof(ns.y), "0");
	if (!vec) {
		nest_open(cg, &ns, g, m, false);
		int base = ns.depth;
		char xb[48];
		snprintf(xb, sizeof(xb), "%s", ns.x);
		if (lse) {
			cg_line(cg, "%s m = -INFINITY; /* largest finite element */", acc);
			if (R.cnt) {
				nest_open(cg, &ns, g, m, true);
				char xe[64];
				snprintf(xe, sizeof(xe), "X0[%s]", ns.x);
				cg_line(cg, "{ const %s v = %s; if (v > m && !isinf(v)) m = v; }", acc,
				        R.fl ? cg_load(cg, R.dt, xe) : xe);
				nest_close(cg, &ns, base);
			}
		}
		cg_line(cg, "%s a = %s;", acc, init);
		if (R.cnt) {
			snprintf(ns.x, sizeof(ns.x), "%s", xb);
			nest_open(cg, &ns, g, m, true);
			char xe[64];
			snprintf(xe, sizeof(xe), "X0[%s]", ns.x);
			if (lse)
				cg_line(cg, "a += %s(%s - m);", mfn(acc, "exp"),
				        R.fl ? cg_load(cg, R.dt, xe) : xe);
			else
				red_step(cg, &R, "a", xe);
			nest_close(cg, &ns, base);
		}
		cg_line(cg, "Y0[%s] = %s;", ns.y, cg_assign(cg, y->dtype, red_final(&R, "a", "m")));
		nest_close(cg, &ns, 0);
	} else {
		/* outer kept groups, then tiles of the last kept group */
		nest_open(cg, &ns, g, m - 1, false);
		int64_t tile = kin < RL_RED_TILE ? kin : RL_RED_TILE;
		bool tiled = kin > tile;
		char w[32];
		if (tiled) {
			cg_line(cg, "for (size_t c = 0; c < %lld; c += %lld) {", (long long)kin,
			        (long long)tile);
			cg->indent++;
			cg_line(cg, "const size_t w = %lld - c < %lld ? %lld - c : %lld;", (long long)kin,
			        (long long)tile, (long long)kin, (long long)tile);
			snprintf(w, sizeof(w), "w");
		} else {
			snprintf(w, sizeof(w), "%lld", (long long)kin);
		}
		const char *c = tiled ? " + c" : "";
		int base = ns.depth;
		char xb[48];
		snprintf(xb, sizeof(xb), "%s", ns.x);
		char xe[96];
		if (lse) {
			cg_scratch_array(cg, acc, "m", tile, 0);
			cg_line(cg, "for (size_t t = 0; t < %s; t++) m[t] = -INFINITY;", w);
			if (R.cnt) {
				nest_open(cg, &ns, g, m - 1, true);
				snprintf(xe, sizeof(xe), "X0[%s%s + t]", ns.x, c);
				cg_line(cg, "for (size_t t = 0; t < %s; t++) {", w);
				cg_line(cg, "    const %s v = %s;", acc,
				        R.fl ? cg_load(cg, R.dt, xe) : xe);
				cg_line(cg, "    if (v > m[t] && !isinf(v)) m[t] = v;");
				cg_line(cg, "}");
				nest_close(cg, &ns, base);
				snprintf(ns.x, sizeof(ns.x), "%s", xb);
			}
		}
		cg_scratch_array(cg, acc, "a", tile, 0);
		cg_line(cg, "for (size_t t = 0; t < %s; t++) a[t] = %s;", w, init);
		if (R.cnt) {
			nest_open(cg, &ns, g, m - 1, true);
			snprintf(xe, sizeof(xe), "X0[%s%s + t]", ns.x, c);
			cg_line(cg, "for (size_t t = 0; t < %s; t++) {", w);
			cg->indent++;
			if (lse)
				cg_line(cg, "a[t] += %s(%s - m[t]);", mfn(acc, "exp"),
				        R.fl ? cg_load(cg, R.dt, xe) : xe);
			else
				red_step(cg, &R, "a[t]", xe);
			cg->indent--;
			cg_line(cg, "}");
			nest_close(cg, &ns, base);
		}
		char ye[96];
		snprintf(ye, sizeof(ye), "%s%s + t", ns.y, c);
		cg_line(cg, "for (size_t t = 0; t < %s; t++) Y0[%s] = %s;", w, ye,
		        cg_assign(cg, y->dtype, red_final(&R, "a[t]", "m[t]")));
		if (tiled) {
			cg->indent--;
			cg_line(cg, "}");
		}
		nest_close(cg, &ns, 0);
	}
	return RL_OK;
}

/* ---- ArgMax / ArgMin ------------------------------------------------------ */

static enum rl_status emit_arg(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	int64_t axis = rl_node_attr_int(n, "axis", 0);
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r)
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(n, "axis", 0), r);
	if (y->dtype != RL_DT_INT64)
		return cg_error(cg, node, "output must be int64");
	bool last = n->opset >= 12 && rl_node_attr_int(n, "select_last_index", 0);
	bool mx = n->op == RL_OP_ArgMax;
	const char *cmp = mx ? (last ? ">=" : ">") : (last ? "<=" : "<");
	int64_t outer = 1, inner = 1, D = x->shape.d[axis].v;
	for (int d = 0; d < axis; d++)
		outer *= x->shape.d[d].v;
	for (int d = (int)axis + 1; d < r; d++)
		inner *= x->shape.d[d].v;
	if (numel(y) != outer * inner)
		return cg_error(cg, node, "output has %lld elements, expected %lld",
		                (long long)numel(y), (long long)(outer * inner));
	if (outer * inner == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	if (D == 0)
		return cg_error(cg, node, "%s over an empty axis", rl_op_table[n->op].name);
	const char *ct = cg_comptype(x->dtype);
	cg_line(cg, "/* index of the %s %s along axis %lld (%lld elements, stride %lld) */",
	        last ? "last" : "first", mx ? "maximum" : "minimum", (long long)axis, (long long)D,
	        (long long)inner);
	bool lo = outer > 1;
	if (lo) {
		cg_line(cg, "for (size_t a = 0; a < %lld; a++) {", (long long)outer);
		cg->indent++;
	}
	char xb[64], yb[64];
	snprintf(xb, sizeof(xb), lo ? "a * %lld" : "0", (long long)(D * inner));
	snprintf(yb, sizeof(yb), lo ? "a * %lld" : "0", (long long)inner);
	char e[128];
	if (inner == 1) {
		snprintf(e, sizeof(e), "X0[%s]", xb);
		cg_line(cg, "%s best = %s;", ct, cg_load(cg, x->dtype, e));
		cg_line(cg, "int64_t bi = 0;");
		if (D > 1) {
			cg_line(cg, "for (size_t d = 1; d < %lld; d++) {", (long long)D);
			snprintf(e, sizeof(e), "X0[%s + d]", xb);
			cg_line(cg, "    const %s v = %s;", ct, cg_load(cg, x->dtype, e));
			cg_line(cg, "    if (v %s best) {", cmp);
			cg_line(cg, "        best = v;");
			cg_line(cg, "        bi = (int64_t)d;");
			cg_line(cg, "    }");
			cg_line(cg, "}");
		}
		cg_line(cg, "Y0[%s] = bi;", lo ? "a" : "0");
	} else {
		int64_t tile = inner < RL_RED_TILE ? inner : RL_RED_TILE;
		bool tiled = inner > tile;
		const char *w = tiled ? "w" : NULL;
		char wl[32];
		if (tiled) {
			cg_line(cg, "for (size_t c = 0; c < %lld; c += %lld) {", (long long)inner,
			        (long long)tile);
			cg->indent++;
			cg_line(cg, "const size_t w = %lld - c < %lld ? %lld - c : %lld;",
			        (long long)inner, (long long)tile, (long long)inner, (long long)tile);
		} else {
			snprintf(wl, sizeof(wl), "%lld", (long long)inner);
			w = wl;
		}
		const char *c = tiled ? " + c" : "";
		cg_scratch_array(cg, ct, "best", tile, 0);
		snprintf(e, sizeof(e), "X0[%s%s + t]", xb, c);
		cg_line(cg, "for (size_t t = 0; t < %s; t++) {", w);
		cg_line(cg, "    best[t] = %s;", cg_load(cg, x->dtype, e));
		cg_line(cg, "    Y0[%s%s + t] = 0;", yb, c);
		cg_line(cg, "}");
		if (D > 1) {
			cg_line(cg, "for (size_t d = 1; d < %lld; d++) {", (long long)D);
			cg->indent++;
			snprintf(e, sizeof(e), "X0[%s + d * %lld%s + t]", xb, (long long)inner, c);
			cg_line(cg, "for (size_t t = 0; t < %s; t++) {", w);
			cg_line(cg, "    const %s v = %s;", ct, cg_load(cg, x->dtype, e));
			cg_line(cg, "    if (v %s best[t]) {", cmp);
			cg_line(cg, "        best[t] = v;");
			cg_line(cg, "        Y0[%s%s + t] = (int64_t)d;", yb, c);
			cg_line(cg, "    }");
			cg_line(cg, "}");
			cg->indent--;
			cg_line(cg, "}");
		}
		if (tiled) {
			cg->indent--;
			cg_line(cg, "}");
		}
	}
	if (lo) {
		cg->indent--;
		cg_line(cg, "}");
	}
	return RL_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

enum rl_status rl_emit_c_reduce(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	if (!x || !cg_out(cg, node, 0))
		return cg_error(cg, node, "missing input or output");
	if (!rl_dtype_is_numeric(x->dtype))
		return cg_error(cg, node, "dtype %s is not supported", rl_dtype_name(x->dtype));
	switch (n->op) {
	case RL_OP_ArgMax: case RL_OP_ArgMin:
		if (x->dtype == RL_DT_BOOL)
			return cg_error(cg, node, "%s on bool is not defined", rl_op_table[n->op].name);
		return emit_arg(cg, node);
	default:
		if (rl_op_table[n->op].emit != RL_EMIT_REDUCE)
			return cg_error(cg, node, "%s is not a reduce-family op",
			                rl_op_table[n->op].name);
		return emit_reduce_op(cg, node);
	}
}
