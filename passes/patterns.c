/*
 * patterns.c - written-out normalizations and activations become the one
 * ONNX operator that the C backend emits as a single kernel.
 *
 * Exporters often write LayerNorm, GELU and Softmax out as their elementary
 * operators: five to nine nodes, each a full pass over memory. Recognised:
 *
 *   LayerNormalization  m = ReduceMean(x); d = x - m; v = ReduceMean(d^2)
 *                       (Pow(d, 2) or d * d); y = d / Sqrt(v + eps)
 *                       (or d * Reciprocal(...)), then optionally * gamma
 *                       and + beta; the reduced axes must be the trailing
 *                       ones [a, rank) and keepdims=1. Becomes
 *                       LayerNormalization(x, gamma or ones, beta) with
 *                       axis=a, epsilon=eps (stash_type=double for double
 *                       inputs, so the statistics keep their precision).
 *   Gelu (erf)          x * 0.5 * (1 + Erf(x / 1.4142...)) with x / sqrt2
 *                       as Div or Mul by 0.7071..., and the 0.5 applied to
 *                       x, to (1 + erf), or to the product (Mul 0.5 or
 *                       Div 2): Gelu(approximate="none").
 *   Gelu (tanh)         0.5 * x * (1 + Tanh(0.79788 * (x + 0.044715 * x^3)))
 *                       with x^3 as Pow(x, 3) or x * x * x, same tails:
 *                       Gelu(approximate="tanh").
 *   Softmax             e = Exp(x - ReduceMax(x)); y = e / ReduceSum(e) over
 *                       one axis with keepdims=1: Softmax(axis).
 *
 * A two-input Sum is accepted wherever an Add is (ONNX's own function
 * bodies for Gelu write Sum). Every intermediate must be read only inside
 * the pattern and must not be a graph output; x (and gamma, beta) may be
 * read elsewhere. Gamma and beta are taken into the LayerNormalization only
 * when they hold one entry per normalized element (runtimes differ on
 * broadcasting a smaller Scale); otherwise the Mul/Add stays after it.
 * Constants are single-element tensors; sqrt(2), 1/sqrt(2), sqrt(2/pi) and
 * 0.044715 match to a relative 1e-4 (exporters write 1.4142, 0.7071), the
 * others to float rounding. The final value keeps its index and name, so
 * graph outputs survive; a near miss (the core matched, a later condition
 * failed) is a "rejected" remark saying which condition.
 *
 * Numerics: the fused ops compute the same functions, with the exact
 * constants rather than an exporter's 1.4142, and LayerNormalization with
 * the two-pass variance in float (double for double inputs); results move
 * by float rounding only (about 1e-5 relative for a 1.4142 divisor).
 *
 * Opsets. The IR carries an opset per node, but the ONNX writer emits the
 * model's opset imports unchanged, and raising the default-domain import
 * would silently change other nodes (Reduce* axes, Split, Squeeze, ...).
 * So the decision is:
 *   - For the C backend (ctx->onnx_out false, the default) the new node gets
 *     the opset where the op exists with these semantics (Gelu 20,
 *     LayerNormalization 17, Softmax 13) when the model's is older: these
 *     are internal ops that the emitters implement from their attributes.
 *   - When the result is written as ONNX (ctx->onnx_out, set by `rlopt
 *     MODEL -o OUT.onnx`), a rewrite whose op does not exist at the model's
 *     opset is declined with a remark: Gelu needs a model at opset >= 20,
 *     LayerNormalization >= 17, and a written-out Softmax over a non-last
 *     axis >= 13 (before 13 Softmax flattens to 2-D, which is the same only
 *     for the last axis). The written model therefore stays valid for the
 *     onnx checker and every runtime that implements its opset.
 *
 * Precondition: shapes inferred, g->order current (rl_graph_infer leaves
 * both so). Leaves the graph compacted and sorted.
 */
#include "pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PASS "patterns"
#define MAXN 12 /* nodes in the largest pattern */

/* ---- matching helpers --------------------------------------------------- */

/* The live node producing v when it is `op`; RL_NONE otherwise. */
static uint32_t prod_op(const struct rl_graph *g, uint32_t v, enum rl_op op)
{
	if (v == RL_NONE)
		return RL_NONE;
	uint32_t p = g->values[v].producer;
	if (p == RL_NONE || g->nodes[p].dead || g->nodes[p].op != op)
		return RL_NONE;
	return p;
}

/* v is read only by `node` (one or more slots) and is no graph output. */
static bool only_use(const struct rl_graph *g, uint32_t v, uint32_t node)
{
	const struct rl_value *val = &g->values[v];
	if (val->flags & RL_VAL_OUTPUT || !val->nuses)
		return false;
	for (uint32_t u = 0; u < val->nuses; u++)
		if (val->uses[u] != node)
			return false;
	return true;
}

/* The one node reading v (all uses the same node, v no graph output). */
static uint32_t sole_user(const struct rl_graph *g, uint32_t v)
{
	const struct rl_value *val = &g->values[v];
	if (!val->nuses || (val->flags & RL_VAL_OUTPUT))
		return RL_NONE;
	uint32_t u = val->uses[0];
	return only_use(g, v, u) ? u : RL_NONE;
}

/* A constant single-element numeric tensor; its value in *out. */
static bool const_scalar(const struct rl_graph *g, uint32_t v, double *out)
{
	if (v == RL_NONE || !rl_value_is_const(g, v) || !g->values[v].data)
		return false;
	const struct rl_value *val = &g->values[v];
	if (rl_shape_numel(&val->shape) != 1 || !rl_dtype_is_numeric(val->dtype) ||
	    val->dtype == RL_DT_BOOL)
		return false;
	*out = rl_value_get_float(g, v, 0);
	return true;
}

static bool near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

/* v is a constant scalar within a relative `rel` of `want`; float16 and
 * bfloat16 constants get at least 4e-3 (bfloat16 keeps 8 bits). */
static bool is_const(const struct rl_graph *g, uint32_t v, double want, double rel)
{
	double c;
	if (!const_scalar(g, v, &c))
		return false;
	if (g->values[v].dtype == RL_DT_FLOAT16 || g->values[v].dtype == RL_DT_BFLOAT16)
		rel = rel < 4e-3 ? 4e-3 : rel;
	return near(c, want, rel);
}

#define EXACT 1e-6

/* Node n is `op` with one operand a constant `want` (either side when
 * `commute`, else on the right); returns the other operand or RL_NONE. A
 * two-input Sum counts as Add (ONNX's function bodies write Sum). */
static uint32_t with_const(const struct rl_graph *g, uint32_t node, enum rl_op op,
                           double want, double rel, bool commute)
{
	const struct rl_node *n = &g->nodes[node];
	if (n->dead || n->nin != 2 || !(n->op == op || (op == RL_OP_Add && n->op == RL_OP_Sum)))
		return RL_NONE;
	if (is_const(g, n->in[1], want, rel))
		return n->in[0];
	if (commute && is_const(g, n->in[0], want, rel))
		return n->in[1];
	return RL_NONE;
}

/* The operand of binary node n that is not v (RL_NONE if v is not one). */
static uint32_t other_operand(const struct rl_node *n, uint32_t v)
{
	if (n->nin != 2)
		return RL_NONE;
	if (n->in[0] == v)
		return n->in[1];
	if (n->in[1] == v)
		return n->in[0];
	return RL_NONE;
}

/* Reduced axes of a Reduce* node as a bit mask over `rank`, and keepdims.
 * False when the axes are not constant or the node is the identity. */
static bool reduce_axes(const struct rl_graph *g, const struct rl_node *n, int rank,
                        unsigned *mask, bool *keepdims)
{
	int since = n->op == RL_OP_ReduceSum ? 13 : 18;
	int64_t axes[RL_MAX_RANK];
	int cnt;
	*keepdims = rl_node_attr_int(n, "keepdims", 1) != 0;
	if (n->opset >= since) {
		uint32_t av = rl_node_in(n, 1);
		if (av == RL_NONE) {
			cnt = 0;
		} else {
			cnt = rl_value_get_ints(g, av, axes, RL_MAX_RANK);
			if (cnt < 0)
				return false;
		}
		if (cnt == 0 && rl_node_attr_int(n, "noop_with_empty_axes", 0))
			return false;
	} else {
		const int64_t *a;
		cnt = rl_node_attr_ints(n, "axes", &a);
		if (cnt > RL_MAX_RANK)
			return false;
		for (int i = 0; i < cnt; i++)
			axes[i] = a[i];
	}
	*mask = 0;
	if (cnt <= 0) {
		*mask = rank >= 32 ? ~0u : (1u << rank) - 1;
		return true;
	}
	for (int i = 0; i < cnt; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
		if (a < 0 || a >= rank)
			return false;
		*mask |= 1u << a;
	}
	return true;
}

/* ---- a match ------------------------------------------------------------ */

struct match {
	uint32_t nodes[MAXN]; /* the nodes replaced */
	int nn;
	uint32_t x, y;        /* pattern input and final output */
	const char *why;      /* why a near-match failed (NULL: no near match) */
};

static void mpush(struct match *m, uint32_t node)
{
	RL_ASSERT(m->nn < MAXN);
	m->nodes[m->nn++] = node;
}

static bool float_dt(enum rl_dtype t)
{
	return rl_dtype_is_float(t);
}

/* Bytes a node moves unfused: every present input and output once. */
static double node_bytes(const struct rl_graph *g, const struct rl_node *n)
{
	double b = 0;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != RL_NONE) {
			int64_t ne = rl_shape_numel(&g->values[n->in[i]].shape);
			b += ne < 0 ? 0 : (double)ne * (double)rl_dtype_size(g->values[n->in[i]].dtype);
		}
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE) {
			int64_t ne = rl_shape_numel(&g->values[n->out[o]].shape);
			b += ne < 0 ? 0 : (double)ne * (double)rl_dtype_size(g->values[n->out[o]].dtype);
		}
	return b;
}

static void names_of(const struct rl_graph *g, const struct match *m, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < m->nn && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "", g->nodes[m->nodes[i]].name);
}

/* Replace the matched nodes with one node `op` reading in[] and writing
 * m->y (whose index and name stay). Returns the new node. */
static uint32_t replace(struct rl_graph *g, struct rl_pass_ctx *ctx, const struct match *m,
                        enum rl_op op, int opset, const uint32_t *in, int nin, const char *what)
{
	char names[400], nm[300];
	names_of(g, m, names, sizeof(names));
	double before = 0;
	for (int i = 0; i < m->nn; i++)
		before += node_bytes(g, &g->nodes[m->nodes[i]]);
	snprintf(nm, sizeof(nm), "%s..%s", g->nodes[m->nodes[0]].name,
	         g->nodes[m->nodes[m->nn - 1]].name);
	for (int i = 0; i < m->nn; i++)
		rl_graph_remove_node(g, m->nodes[i]);
	uint32_t y = m->y;
	uint32_t id = rl_graph_add_node(g, op, nm, in, nin, &y, 1);
	g->nodes[id].opset = opset;
	double after = node_bytes(g, &g->nodes[id]);
	rl_remark(ctx, PASS, names, "applied", before, after, -1, -1,
	          "%d nodes are %s: one %s-%d node '%s' (bytes moved, unfused, before and "
	          "after)", m->nn, what, rl_op_table[op].name, opset, nm);
	return id;
}

/* The opset a new `op` node gets, or 0 (with a remark) when the result is
 * written as ONNX and the model's opset lacks the op. */
static int new_opset(struct rl_graph *g, struct rl_pass_ctx *ctx, const struct match *m,
                     enum rl_op op, int need)
{
	if (g->opset >= need)
		return g->opset;
	if (!ctx->onnx_out)
		return need;
	char names[400];
	names_of(g, m, names, sizeof(names));
	rl_remark(ctx, PASS, names, "declined", -1, -1, -1, -1,
	          "%d nodes compute %s, but the model imports opset %d and %s needs %d; the "
	          "output is ONNX with the model's opset, so they stay written out", m->nn,
	          rl_op_table[op].name, g->opset, rl_op_table[op].name, need);
	return 0;
}

static void near_miss(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t anchor,
                      const char *what, const char *why)
{
	rl_remark(ctx, PASS, g->nodes[anchor].name, "rejected", -1, -1, -1, -1,
	          "looks like a written-out %s but is not rewritten: %s", what, why);
}

/* ---- LayerNormalization ------------------------------------------------- */

/* A Mul/Add of n's output by a per-feature parameter that LayerNormalization
 * takes: same dtype as x, one entry per normalized element (shape the
 * normalized dims, leading 1s allowed up to their rank), the node's output
 * shaped like x. Returns the parameter. */
static uint32_t ln_param(const struct rl_graph *g, uint32_t node, uint32_t v, enum rl_op op,
                         uint32_t x, int axis)
{
	const struct rl_node *n = &g->nodes[node];
	if (n->dead || n->op != op)
		return RL_NONE;
	uint32_t p = other_operand(n, v);
	if (p == RL_NONE || p == v)
		return RL_NONE;
	const struct rl_value *xv = &g->values[x], *pv = &g->values[p];
	if (pv->dtype != xv->dtype || pv->shape.rank < 0 || !rl_shape_is_static(&pv->shape))
		return RL_NONE;
	/* one entry per normalized element: runtimes' LayerNormalization kernels
	 * do not all broadcast a smaller Scale or B */
	int tr = xv->shape.rank - axis;
	int64_t tail = 1;
	for (int i = axis; i < xv->shape.rank; i++)
		tail = xv->shape.d[i].v < 0 ? -1 : tail < 0 ? -1 : tail * xv->shape.d[i].v;
	if (pv->shape.rank > tr || tail < 0 || rl_shape_numel(&pv->shape) != tail)
		return RL_NONE;
	for (int i = 0; i < pv->shape.rank; i++) {
		int64_t pd = pv->shape.d[i].v;
		const struct rl_dim *xd = &xv->shape.d[xv->shape.rank - pv->shape.rank + i];
		if (pd != 1 && pd != xd->v)
			return RL_NONE;
	}
	if (!rl_shape_equal(&g->values[n->out[0]].shape, &xv->shape))
		return RL_NONE;
	return p;
}

static bool match_layernorm(struct rl_graph *g, uint32_t r1, struct match *m, double *eps,
                            int *axis, uint32_t *gamma, uint32_t *beta)
{
	const struct rl_node *n = &g->nodes[r1];
	m->nn = 0;
	m->why = NULL;
	uint32_t x = n->in[0];
	const struct rl_value *xv = &g->values[x];
	int r = xv->shape.rank;
	unsigned mask1, mask2;
	bool kd1, kd2;
	if (r < 1 || !float_dt(xv->dtype) || !reduce_axes(g, n, r, &mask1, &kd1) || !kd1)
		return false;
	uint32_t mean = n->out[0];
	uint32_t sub = sole_user(g, mean);
	if (sub == RL_NONE || g->nodes[sub].op != RL_OP_Sub || g->nodes[sub].in[0] != x ||
	    g->nodes[sub].in[1] != mean)
		return false;
	uint32_t d = g->nodes[sub].out[0];
	/* d feeds the square and the division, nothing else */
	uint32_t sq = RL_NONE;
	const struct rl_value *dval = &g->values[d];
	for (uint32_t u = 0; u < dval->nuses; u++) {
		const struct rl_node *c = &g->nodes[dval->uses[u]];
		if ((c->op == RL_OP_Pow && c->in[0] == d && is_const(g, c->in[1], 2.0, EXACT)) ||
		    (c->op == RL_OP_Mul && c->in[0] == d && c->in[1] == d))
			sq = dval->uses[u];
	}
	if (sq == RL_NONE)
		return false;
	/* from here on it is a variance: a failure is worth a remark */
	mpush(m, r1);
	mpush(m, sub);
	mpush(m, sq);
	uint32_t r2 = sole_user(g, g->nodes[sq].out[0]);
	if (r2 == RL_NONE || g->nodes[r2].op != RL_OP_ReduceMean) {
		m->why = "the square is not averaged (ReduceMean) by itself alone";
		return false;
	}
	if (!reduce_axes(g, &g->nodes[r2], r, &mask2, &kd2) || !kd2 || mask2 != mask1) {
		m->why = "the two ReduceMean nodes differ in axes or keepdims";
		return false;
	}
	int a = r;
	while (a > 0 && (mask1 & (1u << (a - 1))))
		a--;
	if (mask1 != (((r >= 32) ? ~0u : (1u << r) - 1) & ~((1u << a) - 1)) || a == r) {
		m->why = "the reduced axes are not the trailing ones";
		return false;
	}
	mpush(m, r2);
	uint32_t add = sole_user(g, g->nodes[r2].out[0]);
	double e;
	uint32_t var = g->nodes[r2].out[0];
	if (add == RL_NONE || g->nodes[add].op != RL_OP_Add ||
	    !const_scalar(g, other_operand(&g->nodes[add], var), &e) ||
	    !float_dt(g->values[other_operand(&g->nodes[add], var)].dtype)) {
		m->why = "the variance is not followed by an Add of a constant epsilon";
		return false;
	}
	mpush(m, add);
	uint32_t sqrt_n = sole_user(g, g->nodes[add].out[0]);
	if (sqrt_n == RL_NONE || g->nodes[sqrt_n].op != RL_OP_Sqrt) {
		m->why = "variance + epsilon is not followed by Sqrt alone";
		return false;
	}
	mpush(m, sqrt_n);
	uint32_t sd = g->nodes[sqrt_n].out[0];
	uint32_t div = sole_user(g, sd);
	if (div != RL_NONE && g->nodes[div].op == RL_OP_Reciprocal) {
		mpush(m, div);
		uint32_t mul = sole_user(g, g->nodes[div].out[0]);
		if (mul == RL_NONE || g->nodes[mul].op != RL_OP_Mul ||
		    other_operand(&g->nodes[mul], g->nodes[div].out[0]) != d) {
			m->why = "1/sqrt(variance + eps) does not multiply x - mean";
			return false;
		}
		div = mul;
	} else if (div == RL_NONE || g->nodes[div].op != RL_OP_Div || g->nodes[div].in[0] != d ||
	           g->nodes[div].in[1] != sd) {
		m->why = "x - mean is not divided by sqrt(variance + eps)";
		return false;
	}
	mpush(m, div);
	/* every use of d is the square or the division */
	for (uint32_t u = 0; u < dval->nuses; u++)
		if (dval->uses[u] != sq && dval->uses[u] != div) {
			m->why = "x - mean has uses outside the pattern";
			return false;
		}
	if (dval->flags & RL_VAL_OUTPUT) {
		m->why = "x - mean is a graph output";
		return false;
	}
	uint32_t y = g->nodes[div].out[0];
	*gamma = *beta = RL_NONE;
	uint32_t u = sole_user(g, y);
	if (u != RL_NONE && (*gamma = ln_param(g, u, y, RL_OP_Mul, x, a)) != RL_NONE) {
		mpush(m, u);
		y = g->nodes[u].out[0];
		u = sole_user(g, y);
	}
	if (u != RL_NONE && (*beta = ln_param(g, u, y, RL_OP_Add, x, a)) != RL_NONE) {
		mpush(m, u);
		y = g->nodes[u].out[0];
	}
	if (!rl_shape_equal(&g->values[y].shape, &xv->shape) || g->values[y].dtype != xv->dtype) {
		m->why = "the result does not have x's shape and dtype";
		return false;
	}
	m->x = x;
	m->y = y;
	*eps = e;
	*axis = a;
	return true;
}

static void rewrite_layernorm(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t r1)
{
	struct match m;
	double eps;
	int axis;
	uint32_t gamma, beta;
	if (!match_layernorm(g, r1, &m, &eps, &axis, &gamma, &beta)) {
		if (m.why)
			near_miss(g, ctx, r1, "LayerNormalization", m.why);
		return;
	}
	const struct rl_value *xv = &g->values[m.x];
	if (gamma == RL_NONE) {
		/* LayerNormalization needs a Scale: ones over the normalized dims */
		struct rl_shape s = {.rank = xv->shape.rank - axis};
		for (int i = 0; i < s.rank; i++)
			s.d[i] = xv->shape.d[axis + i];
		int64_t ne = rl_shape_numel(&s);
		if (ne < 0) {
			near_miss(g, ctx, r1, "LayerNormalization",
			          "no scale, and the normalized dims are not static");
			return;
		}
		enum rl_dtype dt = xv->dtype;
		size_t es = rl_dtype_size(dt);
		char *p = rl_graph_own(g, (size_t)ne * es + 1);
		if (!p)
			return;
		for (int64_t i = 0; i < ne; i++) {
			switch (dt) {
			case RL_DT_FLOAT: ((float *)p)[i] = 1.0f; break;
			case RL_DT_DOUBLE: ((double *)p)[i] = 1.0; break;
			case RL_DT_FLOAT16: ((uint16_t *)p)[i] = rl_float_to_half(1.0f); break;
			default: ((uint16_t *)p)[i] = rl_float_to_bf16(1.0f); break;
			}
		}
		char name[256];
		snprintf(name, sizeof(name), "%s_ones", g->nodes[r1].name);
		for (int k = 1; rl_graph_find_value(g, name) != RL_NONE; k++)
			snprintf(name, sizeof(name), "%s_ones_%d", g->nodes[r1].name, k);
		gamma = rl_graph_add_value(g, name, dt, &s);
		rl_value_set_data(g, gamma, p, (size_t)ne * es);
	}
	int opset = new_opset(g, ctx, &m, RL_OP_LayerNormalization, 17);
	if (!opset)
		return;
	bool dbl = g->values[m.x].dtype == RL_DT_DOUBLE;
	uint32_t in[3] = {m.x, gamma, beta};
	uint32_t id = replace(g, ctx, &m, RL_OP_LayerNormalization, opset, in, beta == RL_NONE ? 2 : 3,
	                      "a written-out LayerNormalization");
	rl_node_add_attr(g, id, "axis", RL_ATTR_INT)->i = axis;
	rl_node_add_attr(g, id, "epsilon", RL_ATTR_FLOAT)->f = eps;
	if (dbl)
		rl_node_add_attr(g, id, "stash_type", RL_ATTR_INT)->i = RL_DT_DOUBLE;
}

/* ---- GELU --------------------------------------------------------------- */

/* node is x * 0.5 or x / 2: returns x. */
static uint32_t half_of(const struct rl_graph *g, uint32_t node)
{
	uint32_t v = with_const(g, node, RL_OP_Mul, 0.5, EXACT, true);
	return v != RL_NONE ? v : with_const(g, node, RL_OP_Div, 2.0, EXACT, false);
}

/* The tail shared by both GELUs: a = 1 + f(x) (Add node `add`, f's output
 * `fv`), then x * 0.5 * a in one of three orders. Appends the nodes, sets
 * m->y; false with m->why on a failure. */
static bool gelu_tail(const struct rl_graph *g, struct match *m, uint32_t x, uint32_t add)
{
	uint32_t a = g->nodes[add].out[0];
	uint32_t m1 = sole_user(g, a);
	if (m1 == RL_NONE || g->nodes[m1].nin != 2 ||
	    (g->nodes[m1].op != RL_OP_Mul && g->nodes[m1].op != RL_OP_Div)) {
		m->why = "1 + f(x) is not multiplied by x alone";
		return false;
	}
	const struct rl_node *n1 = &g->nodes[m1];
	uint32_t o = other_operand(n1, a), h;
	if (n1->op == RL_OP_Mul && o == x) { /* (x * a) * 0.5 */
		uint32_t m2 = sole_user(g, n1->out[0]);
		if (m2 == RL_NONE || half_of(g, m2) != n1->out[0]) {
			m->why = "x * (1 + f(x)) is not halved";
			return false;
		}
		mpush(m, m1);
		mpush(m, m2);
		m->y = g->nodes[m2].out[0];
		return true;
	}
	if (n1->op == RL_OP_Mul && o != RL_NONE && (h = g->values[o].producer) != RL_NONE &&
	    !g->nodes[h].dead && half_of(g, h) == x && only_use(g, o, m1)) { /* (x * 0.5) * a */
		mpush(m, h);
		mpush(m, m1);
		m->y = n1->out[0];
		return true;
	}
	if (half_of(g, m1) == a) { /* x * (a * 0.5) */
		uint32_t m2 = sole_user(g, n1->out[0]);
		if (m2 == RL_NONE || g->nodes[m2].op != RL_OP_Mul ||
		    other_operand(&g->nodes[m2], n1->out[0]) != x) {
			m->why = "0.5 * (1 + f(x)) is not multiplied by x";
			return false;
		}
		mpush(m, m1);
		mpush(m, m2);
		m->y = g->nodes[m2].out[0];
		return true;
	}
	m->why = "1 + f(x) is not multiplied by x and 0.5";
	return false;
}

static bool gelu_check_out(const struct rl_graph *g, struct match *m)
{
	const struct rl_value *xv = &g->values[m->x], *yv = &g->values[m->y];
	if (!rl_shape_equal(&xv->shape, &yv->shape) || xv->dtype != yv->dtype) {
		m->why = "the result does not have x's shape and dtype";
		return false;
	}
	return true;
}

static bool match_gelu_erf(struct rl_graph *g, uint32_t erf, struct match *m)
{
	m->nn = 0;
	m->why = NULL;
	uint32_t t = g->nodes[erf].in[0], tn = g->values[t].producer, x;
	if (tn == RL_NONE || g->nodes[tn].dead || !only_use(g, t, erf))
		return false;
	x = with_const(g, tn, RL_OP_Div, M_SQRT2, 1e-4, false);
	if (x == RL_NONE)
		x = with_const(g, tn, RL_OP_Mul, M_SQRT1_2, 1e-4, true);
	if (x == RL_NONE || !float_dt(g->values[x].dtype))
		return false;
	m->x = x;
	mpush(m, tn);
	mpush(m, erf);
	uint32_t e = g->nodes[erf].out[0];
	uint32_t add = sole_user(g, e);
	if (add == RL_NONE || with_const(g, add, RL_OP_Add, 1.0, EXACT, true) != e) {
		m->why = "erf(x / sqrt(2)) is not followed by + 1 alone";
		return false;
	}
	mpush(m, add);
	return gelu_tail(g, m, x, add) && gelu_check_out(g, m);
}

/* p is x^3: Pow(x, 3), x * (x * x) or (x * x) * x; appends the nodes. */
static bool cube_of(const struct rl_graph *g, struct match *m, uint32_t p, uint32_t x)
{
	uint32_t pn = g->values[p].producer;
	if (pn == RL_NONE || g->nodes[pn].dead)
		return false;
	const struct rl_node *n = &g->nodes[pn];
	if (n->op == RL_OP_Pow && n->in[0] == x && is_const(g, n->in[1], 3.0, EXACT)) {
		mpush(m, pn);
		return true;
	}
	if (n->op != RL_OP_Mul)
		return false;
	uint32_t sq = other_operand(n, x);
	uint32_t sn = sq == RL_NONE ? RL_NONE : prod_op(g, sq, RL_OP_Mul);
	if (sn == RL_NONE || g->nodes[sn].in[0] != x || g->nodes[sn].in[1] != x ||
	    !only_use(g, sq, pn))
		return false;
	mpush(m, sn);
	mpush(m, pn);
	return true;
}

static bool match_gelu_tanh(struct rl_graph *g, uint32_t tanh_n, struct match *m)
{
	m->nn = 0;
	m->why = NULL;
	uint32_t s = g->nodes[tanh_n].in[0], sn = prod_op(g, s, RL_OP_Mul);
	if (sn == RL_NONE || !only_use(g, s, tanh_n))
		return false;
	uint32_t r = with_const(g, sn, RL_OP_Mul, 0.7978845608028654, 1e-4, true);
	uint32_t rn = prod_op(g, r, RL_OP_Add);
	if (r != RL_NONE && rn == RL_NONE && (rn = prod_op(g, r, RL_OP_Sum)) != RL_NONE && g->nodes[rn].nin != 2)
		rn = RL_NONE;
	if (rn == RL_NONE || !only_use(g, r, sn))
		return false;
	/* r = x + 0.044715 * x^3, either order */
	for (int k = 0; k < 2; k++) {
		uint32_t x = g->nodes[rn].in[k], q = g->nodes[rn].in[1 - k];
		uint32_t qn = prod_op(g, q, RL_OP_Mul);
		if (qn == RL_NONE || !only_use(g, q, rn) || !float_dt(g->values[x].dtype))
			continue;
		uint32_t p = with_const(g, qn, RL_OP_Mul, 0.044715, 1e-4, true);
		if (p == RL_NONE || !only_use(g, p, qn))
			continue;
		m->nn = 0;
		if (!cube_of(g, m, p, x))
			continue;
		m->x = x;
		mpush(m, qn);
		mpush(m, rn);
		mpush(m, sn);
		mpush(m, tanh_n);
		uint32_t t = g->nodes[tanh_n].out[0];
		uint32_t add = sole_user(g, t);
		if (add == RL_NONE || with_const(g, add, RL_OP_Add, 1.0, EXACT, true) != t) {
			m->why = "tanh(...) is not followed by + 1 alone";
			return false;
		}
		mpush(m, add);
		return gelu_tail(g, m, x, add) && gelu_check_out(g, m);
	}
	return false;
}

static void rewrite_gelu(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t anchor)
{
	struct match m;
	bool erf = g->nodes[anchor].op == RL_OP_Erf;
	bool ok = erf ? match_gelu_erf(g, anchor, &m) : match_gelu_tanh(g, anchor, &m);
	const char *what = erf ? "GELU (erf)" : "GELU (tanh)";
	if (!ok) {
		if (m.why)
			near_miss(g, ctx, anchor, what, m.why);
		return;
	}
	int opset = new_opset(g, ctx, &m, RL_OP_Gelu, 20);
	if (!opset)
		return;
	uint32_t in[1] = {m.x};
	uint32_t id = replace(g, ctx, &m, RL_OP_Gelu, opset, in, 1,
	                      erf ? "a written-out erf GELU" : "a written-out tanh GELU");
	struct rl_attr *a = rl_node_add_attr(g, id, "approximate", RL_ATTR_STRING);
	a->s = erf ? "none" : "tanh";
	a->n = (int)strlen(a->s);
}

/* ---- Softmax ------------------------------------------------------------ */

static bool match_softmax(struct rl_graph *g, uint32_t exp_n, struct match *m, int *axis)
{
	m->nn = 0;
	m->why = NULL;
	uint32_t d = g->nodes[exp_n].in[0], sub = prod_op(g, d, RL_OP_Sub);
	if (sub == RL_NONE || !only_use(g, d, exp_n))
		return false;
	uint32_t x = g->nodes[sub].in[0], mx = g->nodes[sub].in[1];
	uint32_t rm = prod_op(g, mx, RL_OP_ReduceMax);
	if (rm == RL_NONE || g->nodes[rm].in[0] != x || !only_use(g, mx, sub))
		return false;
	const struct rl_value *xv = &g->values[x];
	int r = xv->shape.rank;
	unsigned mask1, mask2;
	bool kd1, kd2;
	if (r < 1 || !float_dt(xv->dtype) || !reduce_axes(g, &g->nodes[rm], r, &mask1, &kd1))
		return false;
	/* Exp(x - max(x)): a failure from here on is worth a remark */
	mpush(m, rm);
	mpush(m, sub);
	mpush(m, exp_n);
	if (!kd1 || (mask1 & (mask1 - 1)) || !mask1) {
		m->why = "the max is not over exactly one axis with keepdims=1";
		return false;
	}
	uint32_t e = g->nodes[exp_n].out[0];
	const struct rl_value *ev = &g->values[e];
	uint32_t rs = RL_NONE, dv = RL_NONE;
	for (uint32_t u = 0; u < ev->nuses; u++) {
		uint32_t c = ev->uses[u];
		if (g->nodes[c].op == RL_OP_ReduceSum && g->nodes[c].in[0] == e)
			rs = c;
	}
	if (rs == RL_NONE || !reduce_axes(g, &g->nodes[rs], r, &mask2, &kd2) || !kd2 ||
	    mask2 != mask1) {
		m->why = "the exponentials are not summed over the same axis with keepdims=1";
		return false;
	}
	uint32_t s = g->nodes[rs].out[0];
	dv = sole_user(g, s);
	if (dv == RL_NONE || g->nodes[dv].op != RL_OP_Div || g->nodes[dv].in[0] != e ||
	    g->nodes[dv].in[1] != s) {
		m->why = "the exponentials are not divided by their sum";
		return false;
	}
	for (uint32_t u = 0; u < ev->nuses; u++)
		if (ev->uses[u] != rs && ev->uses[u] != dv) {
			m->why = "the exponentials have uses outside the pattern";
			return false;
		}
	if (ev->flags & RL_VAL_OUTPUT) {
		m->why = "the exponentials are a graph output";
		return false;
	}
	mpush(m, rs);
	mpush(m, dv);
	m->x = x;
	m->y = g->nodes[dv].out[0];
	if (!rl_shape_equal(&g->values[m->y].shape, &xv->shape) ||
	    g->values[m->y].dtype != xv->dtype) {
		m->why = "the result does not have x's shape and dtype";
		return false;
	}
	int a = 0;
	while (!(mask1 & (1u << a)))
		a++;
	*axis = a;
	return true;
}

static void rewrite_softmax(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t exp_n)
{
	struct match m;
	int axis;
	if (!match_softmax(g, exp_n, &m, &axis)) {
		if (m.why)
			near_miss(g, ctx, exp_n, "Softmax", m.why);
		return;
	}
	int rank = g->values[m.x].shape.rank;
	int opset;
	if (g->opset >= 13 || axis == rank - 1)
		opset = g->opset; /* before 13, flattening at the last axis is the same */
	else if (!(opset = new_opset(g, ctx, &m, RL_OP_Softmax, 13)))
		return;
	uint32_t in[1] = {m.x};
	uint32_t id = replace(g, ctx, &m, RL_OP_Softmax, opset, in, 1, "a written-out Softmax");
	rl_node_add_attr(g, id, "axis", RL_ATTR_INT)->i = axis;
}

/* ---- the pass ----------------------------------------------------------- */

/* g->order as rl_graph_infer left it, unless nodes were added or removed
 * since (then sort again): saves a sort per pass in the pipeline. */
enum rl_status rl_pass_patterns(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	enum rl_status st = rl_pass_ensure_order(g);
	if (st != RL_OK)
		return st;
	uint32_t nv0 = g->nvalues;
	/* anchors in topological order; nodes added here are not revisited */
	uint32_t norder = g->norder;
	uint32_t *order = malloc((norder + 1) * sizeof(*order));
	if (!order)
		return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory in patterns");
	memcpy(order, g->order, norder * sizeof(*order));
	for (uint32_t k = 0; k < norder; k++) {
		uint32_t i = order[k];
		if (g->nodes[i].dead)
			continue;
		switch (g->nodes[i].op) {
		case RL_OP_ReduceMean: rewrite_layernorm(g, ctx, i); break;
		case RL_OP_Erf: case RL_OP_Tanh: rewrite_gelu(g, ctx, i); break;
		case RL_OP_Exp: rewrite_softmax(g, ctx, i); break;
		default: break;
		}
	}
	free(order);
	return rl_pass_finish(g, nv0);
}
