/*
 * onnx_subgraph.c - If, Loop, Scan, sequences, optionals and FlexAttention's
 * modifier graphs, lowered while the model is read.
 *
 * rlopt generates straight-line C with every shape fixed at generation time,
 * so control flow is resolved here, into plain IR nodes, and never reaches
 * the passes or the backends:
 *
 *  - If: a condition known at build time (a constant, or anything the
 *    evaluator folds to one) takes its branch and nothing else is built.
 *    Otherwise both branches are built and each output is a Where select on
 *    the condition; the two branches must then give the same shape (a select
 *    cannot give a tensor whose shape depends on run-time data).
 *  - Loop and Scan are unrolled: the body is built once per iteration with
 *    its values renamed "<node>/<iteration>/<name>", reading outer-scope
 *    values directly. A Loop whose trip count and condition are known runs
 *    exactly; one whose trip count or condition is a run-time value runs
 *    under a guard (each iteration's loop-carried values are
 *    Where(active, new, old)) up to a bound: the constant trip count, or the
 *    length the model declares for a scan output (or for the value a chain
 *    of Cast/Identity nodes makes of it). That declared length is the
 *    contract of the generated code's interface (with scan outputs it is
 *    required, since their length follows the run-time count); a Loop with
 *    no bound is an error naming the node. Scan's trip count is the scan axis's length,
 *    which must be static once the input shapes are bound. At most
 *    RL_UNROLL_MAX iterations per loop are unrolled.
 *  - Sequences are lists of tensors known at build time; every position
 *    (SequenceAt, SequenceInsert, SequenceErase) must be a build-time
 *    constant, which the unrolled loop's iteration number is. SplitToSequence
 *    needs the static length of its axis. Optionals are a tensor, a sequence
 *    or nothing, also known at build time.
 *  - FlexAttention with a score_mod or prob_mod graph is written out as its
 *    definition (MatMul, the modifier built inline, Softmax, MatMul; see the
 *    FlexAttention section below); without one it stays a single node.
 *
 * The reader builds every other node and leaves the outputs of these as
 * values without a producer; the lowering runs at the start of the first
 * rl_graph_infer() (g->lower), after the caller bound symbolic input dims
 * (--dim, --shape, or the input files of `rlopt run`), so a Scan over a
 * symbolic sequence length unrolls once it is bound.
 *
 * Decisions need shapes and constants, so the lowering infers as it goes:
 * before an input is looked at, the nodes it depends on are inferred (and
 * folded when constant) with rl_infer_node(); every node built here is
 * inferred when it is made. rl_graph_infer() later redoes everything.
 *
 * The values a lowered main-graph node outputs keep their names: the last
 * node built for each (an Identity when nothing else fits) produces the
 * value the reader made for it, so graph outputs and later nodes are wired
 * already.
 *
 * The generated interface is tensors only, so a sequence or optional graph
 * input or output is tensors too (onnx.h, struct rl_onnx_io): an input is
 * bound before the lowering (rl_onnx_bind_sequence, rl_onnx_bind_optional:
 * a length, or present or absent) and is then, in the main scope, the list
 * of its tensor inputs NAME.0, NAME.1, ... (or the tensor NAME, or nothing);
 * an output is what the lowering made of it, each tensor copied by an
 * Identity into an output value named the same way.
 */
#include "onnx_subgraph.h"
#include "onnx.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RL_UNROLL_MAX 4096          /* iterations of one loop */
#define RL_UNROLL_NODES (1u << 20)  /* nodes the lowering may add in all */

static const char *const ctrl_ops[] = {
	"If", "Loop", "Scan", "SequenceEmpty", "SequenceConstruct", "SequenceInsert",
	"SequenceAt", "SequenceLength", "SequenceErase", "ConcatFromSequence",
	"SplitToSequence", "SequenceMap", "Optional", "OptionalHasElement",
	"OptionalGetElement",
};

bool rl_onnx_ctrl_op(const char *op_type)
{
	if (!op_type)
		return false;
	for (size_t i = 0; i < sizeof(ctrl_ops) / sizeof(ctrl_ops[0]); i++)
		if (strcmp(op_type, ctrl_ops[i]) == 0)
			return true;
	return false;
}

const char *rl_onnx_lowered_op(int i)
{
	return i >= 0 && (size_t)i < sizeof(ctrl_ops) / sizeof(ctrl_ops[0]) ? ctrl_ops[i] : NULL;
}

/* ---- what a name stands for ---------------------------------------------- */

enum item_kind {
	IT_NONE,   /* an omitted input or an empty optional */
	IT_TENSOR, /* value v */
	IT_SEQ,    /* n tensors seq[0..n) */
};

struct item {
	enum item_kind kind;
	uint32_t v;
	uint32_t *seq; /* arena; never changed once made */
	int n;
};

/* Names bound in one graph (the main graph's sequences and optionals, or a
 * subgraph's values); lookups climb to the enclosing scopes. */
struct scope {
	struct scope *up;
	const Onnx__GraphProto *gp; /* for declared shapes */
	int n, cap;
	const char **names;
	struct item *items;
};

struct lower {
	struct rl_graph *g;
	const char *prefix;  /* "<node>/<iteration>" of the body being built */
	uint8_t *state;      /* per node: 0 not inferred, 1 on the stack, 2 done */
	uint32_t nstate;
	uint32_t added;      /* nodes built here */
	int depth;           /* subgraphs being built, nested */
	uint32_t uniq;
	const char *where;   /* "node 'x' (Loop)" for messages */
};

static enum rl_status fail(struct lower *L, enum rl_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum rl_status fail(struct lower *L, enum rl_status st, const char *fmt, ...)
{
	char msg[640];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rl_graph_error(L->g, NULL, st, "%s: %s", L->where, msg);
}

static void scope_bind(struct scope *sc, const char *name, struct item it)
{
	if (sc->n == sc->cap) {
		sc->cap = sc->cap ? 2 * sc->cap : 16;
		sc->names = realloc(sc->names, (size_t)sc->cap * sizeof(*sc->names));
		sc->items = realloc(sc->items, (size_t)sc->cap * sizeof(*sc->items));
		RL_ASSERT(sc->names && sc->items);
	}
	sc->names[sc->n] = name;
	sc->items[sc->n++] = it;
}

static void scope_free(struct scope *sc)
{
	free(sc->names);
	free(sc->items);
}

static struct item tensor_item(uint32_t v)
{
	return (struct item){.kind = IT_TENSOR, .v = v};
}

/* ---- inference on demand --------------------------------------------------- */

static uint8_t *node_state(struct lower *L, uint32_t node)
{
	if (node >= L->nstate) {
		uint32_t n = L->g->nnodes + 1024;
		L->state = realloc(L->state, n);
		RL_ASSERT(L->state);
		memset(L->state + L->nstate, 0, n - L->nstate);
		L->nstate = n;
	}
	return &L->state[node];
}

/* Infer the nodes value v depends on, then its producer. */
static enum rl_status ready(struct lower *L, uint32_t v)
{
	struct rl_graph *g = L->g;
	if (v == RL_NONE)
		return RL_OK;
	uint32_t p = g->values[v].producer;
	if (p == RL_NONE) {
		if (g->values[v].flags & (RL_VAL_INPUT | RL_VAL_CONST))
			return RL_OK;
		return fail(L, RL_ERR_INVALID, "value '%s' is used before the node that "
		            "computes it", g->values[v].name);
	}
	if (*node_state(L, p) == 2)
		return RL_OK;
	uint32_t *stack = NULL;
	uint32_t n = 0, cap = 0;
	enum rl_status st = RL_OK;
#define PUSH(x)                                                              \
	do {                                                                 \
		if (n == cap) {                                              \
			cap = cap ? 2 * cap : 64;                            \
			stack = realloc(stack, cap * sizeof(*stack));        \
			RL_ASSERT(stack);                                    \
		}                                                            \
		stack[n++] = (x);                                            \
		*node_state(L, x) = 1;                                       \
	} while (0)
	PUSH(p);
	while (n && st == RL_OK) {
		uint32_t top = stack[n - 1];
		bool pushed = false;
		for (int i = 0; i < g->nodes[top].nin && !pushed; i++) {
			uint32_t in = g->nodes[top].in[i];
			if (in == RL_NONE)
				continue;
			uint32_t q = g->values[in].producer;
			if (q == RL_NONE) {
				if (!(g->values[in].flags & (RL_VAL_INPUT | RL_VAL_CONST)))
					st = fail(L, RL_ERR_INVALID, "value '%s' is used before the "
					          "node that computes it", g->values[in].name);
				continue;
			}
			uint8_t s = *node_state(L, q);
			if (s == 1) {
				st = rl_graph_error(g, &g->nodes[q], RL_ERR_INVALID,
				                    "the graph has a cycle through this node");
			} else if (s == 0) {
				PUSH(q);
				pushed = true;
			}
		}
		if (pushed || st != RL_OK)
			continue;
		st = rl_infer_node(g, top);
		*node_state(L, top) = 2;
		n--;
	}
#undef PUSH
	free(stack);
	return st;
}

/* ---- building nodes ------------------------------------------------------ */

static const char *fresh_name(struct lower *L, const char *base)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s/%s", L->prefix, base);
	while (rl_graph_find_value(L->g, buf) != RL_NONE)
		snprintf(buf, sizeof(buf), "%s/%s#%u", L->prefix, base, ++L->uniq);
	return rl_arena_strdup(L->g, buf);
}

/* A node of op with inputs in[] and one new output (or `out` when it is not
 * RL_NONE); attributes are added by the caller before finish(). */
static uint32_t start(struct lower *L, enum rl_op op, const char *base,
                      const uint32_t *in, int nin, uint32_t out)
{
	struct rl_graph *g = L->g;
	if (out == RL_NONE)
		out = rl_graph_add_value(g, fresh_name(L, base), RL_DT_UNDEFINED, NULL);
	char nb[512];
	snprintf(nb, sizeof(nb), "%s/%s", L->prefix, base);
	uint32_t id = rl_graph_add_node(g, op, nb, in, nin, &out, 1);
	g->nodes[id].opset = g->opset;
	L->added++;
	return id;
}

static enum rl_status finish(struct lower *L, uint32_t id, uint32_t *out)
{
	if (L->added > RL_UNROLL_NODES)
		return fail(L, RL_ERR_UNSUPPORTED, "unrolling builds more than %u nodes",
		            RL_UNROLL_NODES);
	*node_state(L, id) = 2;
	enum rl_status st = rl_infer_node(L->g, id);
	if (out)
		*out = L->g->nodes[id].out[0];
	return st;
}

static uint32_t const_i64(struct lower *L, const char *base, const int64_t *x, int n,
                          bool scalar)
{
	struct rl_shape s = {.rank = scalar ? 0 : 1};
	if (!scalar)
		s.d[0].v = n;
	uint32_t v = rl_graph_add_value(L->g, fresh_name(L, base), RL_DT_INT64, &s);
	int64_t *d = rl_arena_alloc(L->g, (size_t)(n + 1) * sizeof(int64_t));
	memcpy(d, x, (size_t)n * sizeof(int64_t));
	rl_value_set_data(L->g, v, d, (size_t)n * sizeof(int64_t));
	return v;
}

static uint32_t const_bool(struct lower *L, const char *base, bool b)
{
	struct rl_shape s = {.rank = 0};
	uint32_t v = rl_graph_add_value(L->g, fresh_name(L, base), RL_DT_BOOL, &s);
	uint8_t *d = rl_arena_alloc(L->g, 1);
	*d = b;
	rl_value_set_data(L->g, v, d, 1);
	return v;
}

static enum rl_status op2(struct lower *L, enum rl_op op, const char *base,
                          uint32_t a, uint32_t b, uint32_t out, uint32_t *res)
{
	uint32_t in[2] = {a, b};
	return finish(L, start(L, op, base, in, 2, out), res);
}

static enum rl_status op_where(struct lower *L, uint32_t c, uint32_t a, uint32_t b,
                               uint32_t out, uint32_t *res)
{
	uint32_t in[3] = {c, a, b};
	return finish(L, start(L, RL_OP_Where, "select", in, 3, out), res);
}

static enum rl_status op_identity(struct lower *L, uint32_t x, uint32_t out)
{
	return finish(L, start(L, RL_OP_Identity, "identity", &x, 1, out), NULL);
}

/* x[..., i, ...] along axis: the axis goes away. */
static enum rl_status op_take(struct lower *L, uint32_t x, int64_t i, int64_t axis,
                              uint32_t *res)
{
	uint32_t in[2] = {x, const_i64(L, "index", &i, 1, true)};
	uint32_t id = start(L, RL_OP_Gather, "take", in, 2, RL_NONE);
	rl_node_add_attr(L->g, id, "axis", RL_ATTR_INT)->i = axis;
	return finish(L, id, res);
}

static enum rl_status op_unsqueeze(struct lower *L, uint32_t x, int64_t axis, uint32_t *res)
{
	uint32_t id;
	if (L->g->opset < 13) {
		id = start(L, RL_OP_Unsqueeze, "unsqueeze", &x, 1, RL_NONE);
		struct rl_attr *a = rl_node_add_attr(L->g, id, "axes", RL_ATTR_INTS);
		a->n = 1;
		a->ints = rl_arena_alloc(L->g, sizeof(int64_t));
		a->ints[0] = axis;
	} else {
		uint32_t in[2] = {x, const_i64(L, "axes", &axis, 1, false)};
		id = start(L, RL_OP_Unsqueeze, "unsqueeze", in, 2, RL_NONE);
	}
	return finish(L, id, res);
}

static enum rl_status op_concat(struct lower *L, const uint32_t *xs, int n, int64_t axis,
                                uint32_t out, uint32_t *res)
{
	uint32_t id = start(L, RL_OP_Concat, "concat", xs, n, out);
	rl_node_add_attr(L->g, id, "axis", RL_ATTR_INT)->i = axis;
	return finish(L, id, res);
}

/* x[begin:end] along axis (opset 10 and later: SplitToSequence is 11+). */
static enum rl_status op_slice(struct lower *L, uint32_t x, int64_t begin, int64_t end,
                               int64_t axis, uint32_t *res)
{
	uint32_t in[4] = {x, const_i64(L, "starts", &begin, 1, false),
	                  const_i64(L, "ends", &end, 1, false),
	                  const_i64(L, "axes", &axis, 1, false)};
	return finish(L, start(L, RL_OP_Slice, "slice", in, 4, RL_NONE), res);
}

/* Stack tensors along a new axis (negative: counted from the stacked rank). */
static enum rl_status op_stack(struct lower *L, const uint32_t *xs, int n, int64_t axis,
                               uint32_t out, uint32_t *res)
{
	if (n == 0)
		return fail(L, RL_ERR_UNSUPPORTED, "no iterations ran, so a scan output has "
		            "no shape");
	int rank = L->g->values[xs[0]].shape.rank;
	if (axis < 0)
		axis += rank + 1;
	if (rank < 0 || axis < 0 || axis > rank)
		return fail(L, RL_ERR_INVALID, "scan output axis out of range for rank %d", rank);
	uint32_t *u = malloc((size_t)n * sizeof(uint32_t));
	RL_ASSERT(u);
	enum rl_status st = RL_OK;
	for (int i = 0; i < n && st == RL_OK; i++)
		st = op_unsqueeze(L, xs[i], axis, &u[i]);
	if (st == RL_OK)
		st = op_concat(L, u, n, axis, out, res);
	free(u);
	return st;
}

/* ---- constants known at build time ---------------------------------------- */

static bool const_int(struct lower *L, uint32_t v, int64_t *out)
{
	const struct rl_value *val = &L->g->values[v];
	if (!(val->flags & RL_VAL_CONST) || rl_shape_numel(&val->shape) != 1 ||
	    !(rl_dtype_is_int(val->dtype) || val->dtype == RL_DT_BOOL))
		return false;
	*out = rl_value_get_int(L->g, v, 0);
	return true;
}

/* The first dim a graph declares for `name` (output or value_info), or for
 * what a chain of Cast/Identity nodes makes of it; -1 if none. */
static int64_t declared_len(const Onnx__GraphProto *gp, const char *name, int depth)
{
	if (!gp || !name || depth > 4)
		return -1;
	const Onnx__ValueInfoProto *const *lists[2] = {
		(const Onnx__ValueInfoProto *const *)gp->output,
		(const Onnx__ValueInfoProto *const *)gp->value_info};
	size_t counts[2] = {gp->n_output, gp->n_value_info};
	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < counts[l]; i++) {
			const Onnx__ValueInfoProto *vi = lists[l][i];
			if (!vi->name || strcmp(vi->name, name) != 0 || !vi->type ||
			    vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
			    !vi->type->tensor_type->shape || !vi->type->tensor_type->shape->n_dim)
				continue;
			const Onnx__TensorShapeProto__Dimension *d =
				vi->type->tensor_type->shape->dim[0];
			if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
			    d->dim_value >= 0)
				return d->dim_value;
		}
	for (size_t i = 0; i < gp->n_node; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		if (np->n_input < 1 || np->n_output != 1 || !np->input[0] ||
		    strcmp(np->input[0], name) != 0 || !np->op_type ||
		    (strcmp(np->op_type, "Cast") != 0 && strcmp(np->op_type, "Identity") != 0 &&
		     strcmp(np->op_type, "CastLike") != 0))
			continue;
		int64_t n = declared_len(gp, np->output[0], depth + 1);
		if (n >= 0)
			return n;
	}
	return -1;
}

/* ---- subgraphs -------------------------------------------------------------- */

static enum rl_status lower_nodes(struct lower *L, struct scope *sc,
                                  const Onnx__GraphProto *gp);

/* "node 'name' (Op)"; an unnamed node is named by where it was built */
static const char *node_label(struct lower *L, const Onnx__NodeProto *np)
{
	char buf[512];
	const char *op = np->op_type ? np->op_type : "";
	if (np->name && *np->name)
		snprintf(buf, sizeof(buf), "node '%s' (%s)", np->name, op);
	else if (L->depth == 0)
		snprintf(buf, sizeof(buf), "node '%s' (%s)", L->prefix, op);
	else
		snprintf(buf, sizeof(buf), "node '%s/%s' (%s)", L->prefix, op, op);
	return rl_arena_strdup(L->g, buf);
}

static bool lookup(struct scope *sc, const char *name, struct item *it)
{
	for (; sc; sc = sc->up)
		for (int i = sc->n; i-- > 0;)
			if (strcmp(sc->names[i], name) == 0) {
				*it = sc->items[i];
				return true;
			}
	return false;
}

/* What input name of the node being lowered stands for. The outermost scope
 * is the main graph: its own bindings (sequences, optionals), then g. */
static enum rl_status resolve(struct lower *L, struct scope *sc, const char *name,
                              struct item *it)
{
	*it = (struct item){.kind = IT_NONE};
	if (!name || !*name)
		return RL_OK;
	if (lookup(sc, name, it))
		return it->kind == IT_TENSOR ? ready(L, it->v) : RL_OK;
	uint32_t v = rl_graph_find_value(L->g, name);
	if (v == RL_NONE)
		return fail(L, RL_ERR_INVALID, "input '%s' is not produced by any node, graph "
		            "input or initializer in scope", name);
	*it = tensor_item(v);
	return ready(L, v);
}

static enum rl_status need_tensor(struct lower *L, const struct item *it, const char *what)
{
	if (it->kind == IT_TENSOR)
		return RL_OK;
	return fail(L, RL_ERR_INVALID, "%s must be a tensor, not %s", what,
	            it->kind == IT_SEQ ? "a sequence" : "missing or an empty optional");
}

/*
 * Build subgraph sg once: its inputs bound to in[0..nin), under the name
 * prefix `prefix`; its outputs into out[0..sg->n_output).
 */
static enum rl_status lower_body(struct lower *L, struct scope *up,
                                 const Onnx__GraphProto *sg, const struct item *in,
                                 int nin, const char *prefix, struct item *out)
{
	if ((int)sg->n_input != nin)
		return fail(L, RL_ERR_INVALID, "the subgraph takes %zu inputs, the node gives %d",
		            sg->n_input, nin);
	if (L->depth >= 16)
		return fail(L, RL_ERR_UNSUPPORTED, "subgraphs nest more than 16 deep");
	const char *saved = L->prefix;
	L->prefix = prefix;
	L->depth++;
	struct scope sc = {.up = up, .gp = sg};
	enum rl_status st = RL_OK;
	for (int i = 0; i < nin; i++)
		scope_bind(&sc, sg->input[i]->name ? sg->input[i]->name : "", in[i]);
	for (size_t i = 0; i < sg->n_initializer && st == RL_OK; i++) {
		char why[400];
		const Onnx__TensorProto *t = sg->initializer[i];
		uint32_t v = rl_onnx_tensor_value(L->g, t, fresh_name(L, t->name ? t->name : "init"),
		                                  why, sizeof(why));
		if (v == RL_NONE)
			st = fail(L, RL_ERR_INVALID, "subgraph initializer '%s': %s",
			          t->name ? t->name : "", why);
		else
			scope_bind(&sc, t->name ? t->name : "", tensor_item(v));
	}
	if (st == RL_OK && sg->n_sparse_initializer)
		st = fail(L, RL_ERR_UNSUPPORTED, "sparse initializers are not supported");
	if (st == RL_OK)
		st = lower_nodes(L, &sc, sg);
	for (size_t k = 0; k < sg->n_output && st == RL_OK; k++)
		st = resolve(L, &sc, sg->output[k]->name, &out[k]);
	scope_free(&sc);
	L->prefix = saved;
	L->depth--;
	return st;
}

static const Onnx__GraphProto *graph_attr(const Onnx__NodeProto *np, const char *name)
{
	for (size_t i = 0; i < np->n_attribute; i++)
		if (np->attribute[i]->name && strcmp(np->attribute[i]->name, name) == 0)
			return np->attribute[i]->g;
	return NULL;
}

static int64_t int_attr(const Onnx__NodeProto *np, const char *name, int64_t def)
{
	for (size_t i = 0; i < np->n_attribute; i++)
		if (np->attribute[i]->name && strcmp(np->attribute[i]->name, name) == 0)
			return np->attribute[i]->i;
	return def;
}

/* ints attribute: count (or -1 when absent) and the values in *out */
static int ints_attr(const Onnx__NodeProto *np, const char *name, const int64_t **out)
{
	for (size_t i = 0; i < np->n_attribute; i++)
		if (np->attribute[i]->name && strcmp(np->attribute[i]->name, name) == 0) {
			*out = np->attribute[i]->ints;
			return (int)np->attribute[i]->n_ints;
		}
	return -1;
}

static char *iter_prefix(struct lower *L, const char *tag, int64_t i)
{
	char buf[512];
	if (i >= 0)
		snprintf(buf, sizeof(buf), "%s/%s%lld", L->prefix, tag, (long long)i);
	else
		snprintf(buf, sizeof(buf), "%s/%s", L->prefix, tag);
	return rl_arena_strdup(L->g, buf);
}

/* ---- If --------------------------------------------------------------------- */

/* Select between two branch results on a run-time condition. */
static enum rl_status select_item(struct lower *L, uint32_t cond, const struct item *t,
                                  const struct item *e, struct item *out)
{
	if (t->kind != e->kind || (t->kind == IT_SEQ && t->n != e->n))
		return fail(L, RL_ERR_UNSUPPORTED, "the condition is a run-time value and the "
		            "branches give different kinds of result (tensor, sequence of another "
		            "length, empty optional); static C needs one");
	if (t->kind == IT_NONE) {
		*out = *t;
		return RL_OK;
	}
	int n = t->kind == IT_SEQ ? t->n : 1;
	uint32_t *res = rl_arena_alloc(L->g, (size_t)(n + 1) * sizeof(uint32_t));
	for (int i = 0; i < n; i++) {
		uint32_t a = t->kind == IT_SEQ ? t->seq[i] : t->v;
		uint32_t b = t->kind == IT_SEQ ? e->seq[i] : e->v;
		const struct rl_value *va = &L->g->values[a], *vb = &L->g->values[b];
		if (!rl_shape_equal(&va->shape, &vb->shape)) {
			char sa[128], sb[128];
			/* a shape a run-time value decides: RL_ERR_SHAPE, which
			 * `rlopt run` answers by binding small integer inputs
			 * (tools/rlopt.c, rl_cli_load_ex) */
			return fail(L, RL_ERR_SHAPE, "the condition is a run-time value and the "
			            "branches give shapes %s and %s; static C needs one shape",
			            rl_shape_str(&va->shape, sa, sizeof(sa)),
			            rl_shape_str(&vb->shape, sb, sizeof(sb)));
		}
		enum rl_status st = op_where(L, cond, a, b, RL_NONE, &res[i]);
		if (st != RL_OK)
			return st;
	}
	*out = t->kind == IT_SEQ ? (struct item){.kind = IT_SEQ, .seq = res, .n = n}
	                         : tensor_item(res[0]);
	return RL_OK;
}

static enum rl_status lower_if(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                               const struct item *in, struct item *out)
{
	const Onnx__GraphProto *tb = graph_attr(np, "then_branch");
	const Onnx__GraphProto *eb = graph_attr(np, "else_branch");
	if (!tb || !eb)
		return fail(L, RL_ERR_INVALID, "then_branch or else_branch is missing");
	if (tb->n_output != np->n_output || eb->n_output != np->n_output)
		return fail(L, RL_ERR_INVALID, "the branches give %zu and %zu outputs, the node "
		            "has %zu", tb->n_output, eb->n_output, np->n_output);
	enum rl_status st = need_tensor(L, &in[0], "the condition");
	if (st != RL_OK)
		return st;
	int64_t c;
	if (const_int(L, in[0].v, &c))
		return lower_body(L, sc, c ? tb : eb, NULL, 0,
		                  iter_prefix(L, c ? "then" : "else", -1), out);
	size_t n = np->n_output;
	struct item *t = calloc(n + 1, sizeof(*t)), *e = calloc(n + 1, sizeof(*e));
	RL_ASSERT(t && e);
	st = lower_body(L, sc, tb, NULL, 0, iter_prefix(L, "then", -1), t);
	if (st == RL_OK)
		st = lower_body(L, sc, eb, NULL, 0, iter_prefix(L, "else", -1), e);
	for (size_t k = 0; k < n && st == RL_OK; k++)
		st = select_item(L, in[0].v, &t[k], &e[k], &out[k]);
	free(t);
	free(e);
	return st;
}

/* ---- Loop ------------------------------------------------------------------- */

static enum rl_status guard_item(struct lower *L, uint32_t active, const struct item *nw,
                                 const struct item *old, struct item *out)
{
	if (active == RL_NONE) {
		*out = *nw;
		return RL_OK;
	}
	if (nw->kind != old->kind || (nw->kind == IT_SEQ && nw->n != old->n))
		return fail(L, RL_ERR_UNSUPPORTED, "a loop-carried sequence changes length while "
		            "the trip count is a run-time value");
	return select_item(L, active, nw, old, out);
}

static enum rl_status lower_loop(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                                 const struct item *in, int nin, struct item *out)
{
	const Onnx__GraphProto *body = graph_attr(np, "body");
	if (!body)
		return fail(L, RL_ERR_INVALID, "the body is missing");
	int ncarry = nin - 2;
	if (ncarry < 0)
		ncarry = 0;
	int nscan = (int)body->n_output - 1 - ncarry;
	if ((int)body->n_input != ncarry + 2 || nscan < 0 ||
	    (int)np->n_output != ncarry + nscan)
		return fail(L, RL_ERR_INVALID, "the body takes %zu inputs and gives %zu outputs "
		            "for %d loop-carried values and %zu node outputs", body->n_input,
		            body->n_output, ncarry, np->n_output);
	enum rl_status st = RL_OK;
	/* trip count: constant, run-time or none */
	int64_t trips = -1;
	uint32_t mval = RL_NONE;
	if (nin > 0 && in[0].kind != IT_NONE) {
		if ((st = need_tensor(L, &in[0], "the trip count")) != RL_OK)
			return st;
		if (!const_int(L, in[0].v, &trips))
			mval = in[0].v;
		else if (trips < 0)
			trips = 0;
	}
	if (trips > RL_UNROLL_MAX)
		return fail(L, RL_ERR_UNSUPPORTED, "trip count %lld; at most %d iterations are "
		            "unrolled", (long long)trips, RL_UNROLL_MAX);
	/* the length the model declares for a scan output: with a run-time trip
	 * count or condition, the number of iterations the generated code runs */
	int64_t decl = -1;
	for (int k = 0; k < nscan && decl < 0; k++) {
		const char *on = np->output[ncarry + k];
		for (struct scope *s = sc; s && decl < 0; s = s->up)
			decl = declared_len(s->gp, on, 0);
	}
	struct item cond = {.kind = IT_NONE};
	if (nin > 1 && in[1].kind != IT_NONE) {
		if ((st = need_tensor(L, &in[1], "the condition")) != RL_OK)
			return st;
		cond = in[1];
	}
	/* active: RL_NONE while every iteration so far certainly ran */
	uint32_t active = RL_NONE;
	int64_t c;
	bool stop = false;
	if (cond.kind == IT_TENSOR) {
		if (const_int(L, cond.v, &c))
			stop = !c;
		else
			active = cond.v;
	} else {
		cond = tensor_item(const_bool(L, "cond", true));
	}
	struct item *cur = calloc((size_t)ncarry + 1, sizeof(*cur));
	struct item *bin = calloc((size_t)ncarry + 3, sizeof(*bin));
	struct item *bout = calloc(body->n_output + 1, sizeof(*bout));
	uint32_t **rows = calloc((size_t)nscan + 1, sizeof(*rows));
	RL_ASSERT(cur && bin && bout && rows);
	for (int k = 0; k < ncarry; k++)
		cur[k] = in[2 + k];
	int64_t it = 0;
	for (; !stop && st == RL_OK; it++) {
		if (trips >= 0 && it >= trips)
			break;
		if (mval != RL_NONE || active != RL_NONE) {
			if (trips < 0 && decl < 0) {
				st = fail(L, RL_ERR_UNSUPPORTED, "the trip count depends on run-time "
				          "values (%s) and no scan output declares a length to bound "
				          "it; static C cannot run an unbounded loop",
				          mval != RL_NONE ? "trip count input" : "condition");
				break;
			}
			if (nscan > 0 && decl < 0) {
				st = fail(L, RL_ERR_UNSUPPORTED, "the condition is a run-time value, so "
				          "the scan outputs' length is too, and no scan output declares "
				          "it; static C needs one");
				break;
			}
			if (decl >= 0 && it >= decl)
				break;
		}
		if (it >= RL_UNROLL_MAX) {
			st = fail(L, RL_ERR_UNSUPPORTED, "more than %d iterations to unroll (trip "
			          "count %s)", RL_UNROLL_MAX, trips >= 0 ? "too large" : "unbounded");
			break;
		}
		uint32_t iv = const_i64(L, "iter", &it, 1, true);
		if (mval != RL_NONE) {
			uint32_t lt;
			if ((st = op2(L, RL_OP_Less, "in_range", iv, mval, RL_NONE, &lt)) != RL_OK)
				break;
			if (active == RL_NONE)
				active = lt;
			else if ((st = op2(L, RL_OP_And, "active", active, lt, RL_NONE, &active)) != RL_OK)
				break;
		}
		bin[0] = tensor_item(iv);
		bin[1] = cond;
		for (int k = 0; k < ncarry; k++)
			bin[2 + k] = cur[k];
		st = lower_body(L, sc, body, bin, ncarry + 2, iter_prefix(L, "", it), bout);
		if (st != RL_OK)
			break;
		for (int k = 0; k < ncarry && st == RL_OK; k++)
			st = guard_item(L, active, &bout[1 + k], &cur[k], &cur[k]);
		for (int k = 0; k < nscan && st == RL_OK; k++) {
			if (bout[1 + ncarry + k].kind != IT_TENSOR) {
				st = fail(L, RL_ERR_UNSUPPORTED, "scan output %d is not a tensor", k);
				break;
			}
			rows[k] = realloc(rows[k], (size_t)(it + 1) * sizeof(uint32_t));
			RL_ASSERT(rows[k]);
			rows[k][it] = bout[1 + ncarry + k].v;
		}
		if (st != RL_OK)
			break;
		if ((st = need_tensor(L, &bout[0], "the body's condition output")) != RL_OK)
			break;
		cond = bout[0];
		if (const_int(L, cond.v, &c)) {
			if (!c)
				stop = true;
		} else if (active == RL_NONE) {
			active = cond.v;
		} else if ((st = op2(L, RL_OP_And, "active", active, cond.v, RL_NONE, &active)) != RL_OK) {
			break;
		}
	}
	for (int k = 0; k < ncarry && st == RL_OK; k++)
		out[k] = cur[k];
	for (int k = 0; k < nscan && st == RL_OK; k++) {
		uint32_t v;
		st = op_stack(L, rows[k], (int)it, 0, RL_NONE, &v);
		out[ncarry + k] = tensor_item(v);
	}
	for (int k = 0; k < nscan; k++)
		free(rows[k]);
	free(rows);
	free(cur);
	free(bin);
	free(bout);
	return st;
}

/* ---- Scan ------------------------------------------------------------------- */

struct scan_spec {
	int nstate, nx, nyout;
	const int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
	int n_in_axes, n_in_dirs, n_out_axes, n_out_dirs;
};

static int64_t nth(const int64_t *a, int n, int i, int64_t def)
{
	return a && i < n ? a[i] : def;
}

/* One Scan run over states[] and scan inputs xs[]: final states and the
 * stacked scan outputs into out[]. */
static enum rl_status scan_run(struct lower *L, struct scope *sc, const Onnx__GraphProto *body,
                               const struct scan_spec *sp, const uint32_t *states,
                               const uint32_t *xs, const char *tag, uint32_t *out)
{
	struct rl_graph *g = L->g;
	int64_t T = -1;
	int64_t *axes = calloc((size_t)sp->nx + 1, sizeof(int64_t));
	RL_ASSERT(axes);
	enum rl_status st = RL_OK;
	for (int j = 0; j < sp->nx && st == RL_OK; j++) {
		const struct rl_value *x = &g->values[xs[j]];
		int64_t a = nth(sp->in_axes, sp->n_in_axes, j, 0);
		if (a < 0)
			a += x->shape.rank;
		if (x->shape.rank < 0 || a < 0 || a >= x->shape.rank) {
			st = fail(L, RL_ERR_INVALID, "scan input %d: axis out of range", j);
			break;
		}
		axes[j] = a;
		int64_t d = x->shape.d[a].v;
		if (d < 0) {
			st = fail(L, RL_ERR_SHAPE, "scan input '%s' has a symbolic length '%s' on its "
			          "scan axis; bind it (--dim %s=N) to unroll the scan", x->name,
			          x->shape.d[a].sym ? x->shape.d[a].sym : "?",
			          x->shape.d[a].sym ? x->shape.d[a].sym : "SYM");
			break;
		}
		if (T >= 0 && d != T)
			st = fail(L, RL_ERR_SHAPE, "scan inputs have lengths %lld and %lld",
			          (long long)T, (long long)d);
		T = d;
	}
	if (st == RL_OK && T > RL_UNROLL_MAX)
		st = fail(L, RL_ERR_UNSUPPORTED, "%lld iterations; at most %d are unrolled",
		          (long long)T, RL_UNROLL_MAX);
	int nb = sp->nstate + sp->nx;
	struct item *bin = calloc((size_t)nb + 1, sizeof(*bin));
	struct item *bout = calloc(body->n_output + 1, sizeof(*bout));
	uint32_t *rows = calloc((size_t)(sp->nyout * (T > 0 ? T : 1)) + 1, sizeof(uint32_t));
	uint32_t *cur = calloc((size_t)sp->nstate + 1, sizeof(uint32_t));
	RL_ASSERT(bin && bout && rows && cur);
	if (st == RL_OK && ((int)body->n_output != sp->nstate + sp->nyout))
		st = fail(L, RL_ERR_INVALID, "the body gives %zu outputs for %d states and %d "
		          "scan outputs", body->n_output, sp->nstate, sp->nyout);
	for (int k = 0; k < sp->nstate; k++)
		cur[k] = states[k];
	for (int64_t t = 0; st == RL_OK && t < T; t++) {
		for (int k = 0; k < sp->nstate; k++)
			bin[k] = tensor_item(cur[k]);
		for (int j = 0; j < sp->nx && st == RL_OK; j++) {
			int64_t idx = nth(sp->in_dirs, sp->n_in_dirs, j, 0) ? T - 1 - t : t;
			uint32_t e;
			st = op_take(L, xs[j], idx, axes[j], &e);
			bin[sp->nstate + j] = tensor_item(e);
		}
		if (st == RL_OK)
			st = lower_body(L, sc, body, bin, nb, iter_prefix(L, tag, t), bout);
		for (int k = 0; k < (int)body->n_output && st == RL_OK; k++)
			st = need_tensor(L, &bout[k], "a scan body output");
		if (st != RL_OK)
			break;
		for (int k = 0; k < sp->nstate; k++)
			cur[k] = bout[k].v;
		for (int k = 0; k < sp->nyout; k++)
			rows[(size_t)k * (size_t)T + (size_t)t] = bout[sp->nstate + k].v;
	}
	for (int k = 0; k < sp->nstate && st == RL_OK; k++)
		out[k] = cur[k];
	for (int k = 0; k < sp->nyout && st == RL_OK; k++) {
		uint32_t *r = rows + (size_t)k * (size_t)T;
		if (nth(sp->out_dirs, sp->n_out_dirs, k, 0))
			for (int64_t a = 0, b = T - 1; a < b; a++, b--) {
				uint32_t tmp = r[a];
				r[a] = r[b];
				r[b] = tmp;
			}
		st = op_stack(L, r, (int)T, nth(sp->out_axes, sp->n_out_axes, k, 0), RL_NONE,
		              &out[sp->nstate + k]);
	}
	free(axes);
	free(bin);
	free(bout);
	free(rows);
	free(cur);
	return st;
}

static enum rl_status lower_scan(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                                 const struct item *in, int nin, struct item *out)
{
	const Onnx__GraphProto *body = graph_attr(np, "body");
	if (!body)
		return fail(L, RL_ERR_INVALID, "the body is missing");
	bool v8 = L->g->opset < 9;
	int first = v8 ? 1 : 0; /* Scan-8 starts with sequence_lens */
	struct scan_spec sp = {.nx = (int)int_attr(np, "num_scan_inputs", -1)};
	sp.nstate = nin - first - sp.nx;
	sp.nyout = (int)np->n_output - sp.nstate;
	if (sp.nx < 1 || sp.nstate < 0 || sp.nyout < 0)
		return fail(L, RL_ERR_INVALID, "num_scan_inputs %d does not fit %d inputs and %zu "
		            "outputs", sp.nx, nin, np->n_output);
	if (v8 && in[0].kind != IT_NONE)
		return fail(L, RL_ERR_UNSUPPORTED, "sequence_lens is not supported (every "
		            "sequence runs the full length)");
	sp.n_in_dirs = ints_attr(np, v8 ? "directions" : "scan_input_directions", &sp.in_dirs);
	sp.n_in_axes = ints_attr(np, "scan_input_axes", &sp.in_axes);
	sp.n_out_axes = ints_attr(np, "scan_output_axes", &sp.out_axes);
	sp.n_out_dirs = ints_attr(np, "scan_output_directions", &sp.out_dirs);
	enum rl_status st = RL_OK;
	for (int i = first; i < nin && st == RL_OK; i++)
		st = need_tensor(L, &in[i], "a Scan input");
	if (st != RL_OK)
		return st;
	int nall = sp.nstate + sp.nyout;
	uint32_t *states = calloc((size_t)sp.nstate + 1, sizeof(uint32_t));
	uint32_t *xs = calloc((size_t)sp.nx + 1, sizeof(uint32_t));
	uint32_t *res = calloc((size_t)nall + 1, sizeof(uint32_t));
	RL_ASSERT(states && xs && res);
	for (int k = 0; k < sp.nstate; k++)
		states[k] = in[first + k].v;
	for (int j = 0; j < sp.nx; j++)
		xs[j] = in[first + sp.nstate + j].v;
	if (!v8) {
		st = scan_run(L, sc, body, &sp, states, xs, "", res);
		for (int k = 0; k < nall && st == RL_OK; k++)
			out[k] = tensor_item(res[k]);
	} else {
		/* Scan-8: axis 0 is the batch, axis 1 the sequence; each batch
		 * entry is its own scan, the results stacked on axis 0 */
		uint32_t v0 = sp.nstate ? states[0] : xs[0];
		int64_t B = L->g->values[v0].shape.rank > 0 ? L->g->values[v0].shape.d[0].v : -1;
		if (B < 0 || B > RL_UNROLL_MAX)
			st = fail(L, RL_ERR_SHAPE, "the batch dimension of '%s' must be static (and at "
			          "most %d)", L->g->values[v0].name, RL_UNROLL_MAX);
		uint32_t *bs = calloc((size_t)sp.nstate + 1, sizeof(uint32_t));
		uint32_t *bx = calloc((size_t)sp.nx + 1, sizeof(uint32_t));
		uint32_t *all = calloc((size_t)nall * (size_t)(B > 0 ? B : 1) + 1, sizeof(uint32_t));
		RL_ASSERT(bs && bx && all);
		for (int64_t b = 0; b < B && st == RL_OK; b++) {
			for (int k = 0; k < sp.nstate && st == RL_OK; k++)
				st = op_take(L, states[k], b, 0, &bs[k]);
			for (int j = 0; j < sp.nx && st == RL_OK; j++)
				st = op_take(L, xs[j], b, 0, &bx[j]);
			char tag[32];
			snprintf(tag, sizeof(tag), "b%lld/", (long long)b);
			if (st == RL_OK)
				st = scan_run(L, sc, body, &sp, bs, bx, tag, res);
			for (int k = 0; k < nall; k++)
				all[(size_t)k * (size_t)B + (size_t)b] = res[k];
		}
		for (int k = 0; k < nall && st == RL_OK; k++) {
			uint32_t v;
			st = op_stack(L, all + (size_t)k * (size_t)B, (int)B, 0, RL_NONE, &v);
			out[k] = tensor_item(v);
		}
		free(bs);
		free(bx);
		free(all);
	}
	free(states);
	free(xs);
	free(res);
	return st;
}

/* ---- sequences and optionals ------------------------------------------------ */

/* A build-time position in [0, n] (insert) or [0, n) (at, erase); a
 * run-time one gives *out -1 and its value in *rt. */
static enum rl_status position(struct lower *L, const struct item *p, int n, bool insert,
                               int64_t def, int64_t *out, uint32_t *rt)
{
	*rt = RL_NONE;
	if (p->kind == IT_NONE) {
		*out = def;
		return RL_OK;
	}
	enum rl_status st = need_tensor(L, p, "the position");
	if (st != RL_OK)
		return st;
	int64_t i;
	if (!const_int(L, p->v, &i)) {
		*rt = p->v;
		*out = -1;
		return RL_OK;
	}
	if (i < 0)
		i += n;
	if (i < 0 || i > n || (!insert && i == n))
		return fail(L, RL_ERR_INVALID, "position %lld is out of range for a sequence of "
		            "%d", (long long)i, n);
	*out = i;
	return RL_OK;
}

/*
 * A position known only at run time. The sequence's length stays a
 * build-time fact (insert: n + 1, erase: n - 1), so each element of the
 * result is a Where select on the position among the elements it can be,
 * as an If on a run-time condition selects between its branches; this
 * needs every element (and the inserted tensor) to have one shape. The
 * position is not checked at run time: one out of range gives the nearest
 * elements instead of an error.
 */
static enum rl_status runtime_pos(struct lower *L, uint32_t p, const uint32_t *xs, int n,
                                  uint32_t extra, int len, uint32_t *res)
{
	struct rl_graph *g = L->g;
	for (int i = 0; i <= n; i++) {
		uint32_t x = i < n ? xs[i] : extra, y = xs[0];
		if (x == RL_NONE || n == 0)
			continue;
		if (!rl_shape_equal(&g->values[x].shape, &g->values[y].shape) ||
		    g->values[x].dtype != g->values[y].dtype) {
			char a[128], b[128];
			return fail(L, RL_ERR_UNSUPPORTED, "the position '%s' is a run-time value and "
			            "the elements have shapes %s and %s; static C needs one shape to "
			            "select among them", g->values[p].name,
			            rl_shape_str(&g->values[y].shape, a, sizeof(a)),
			            rl_shape_str(&g->values[x].shape, b, sizeof(b)));
		}
	}
	const struct rl_value *pv = &g->values[p];
	if (pv->shape.rank < 0 || rl_shape_numel(&pv->shape) != 1 || !rl_dtype_is_int(pv->dtype))
		return fail(L, RL_ERR_INVALID, "the position '%s' must be one integer", pv->name);
	enum rl_status st = RL_OK;
	uint32_t x = p;
	if (pv->dtype != RL_DT_INT64) {
		uint32_t id = start(L, RL_OP_Cast, "position", &x, 1, RL_NONE);
		rl_node_add_attr(g, id, "to", RL_ATTR_INT)->i = RL_DT_INT64;
		st = finish(L, id, &x);
	}
	if (st == RL_OK && g->values[x].shape.rank != 0) { /* [1] as a scalar */
		uint32_t in[2] = {x, const_i64(L, "scalar", &(int64_t){0}, 0, false)};
		st = finish(L, start(L, RL_OP_Reshape, "position", in, 2, RL_NONE), &x);
	}
	int64_t zero = 0, nn = len; /* in [-len, 0): counted from the end */
	uint32_t neg, wrapped;
	if (st == RL_OK)
		st = op2(L, RL_OP_Less, "negative", x, const_i64(L, "zero", &zero, 1, true), RL_NONE,
		         &neg);
	if (st == RL_OK)
		st = op2(L, RL_OP_Add, "wrapped", x, const_i64(L, "length", &nn, 1, true), RL_NONE,
		         &wrapped);
	if (st == RL_OK)
		st = op_where(L, neg, wrapped, x, RL_NONE, res);
	return st;
}

/* pos `op` i, a bool scalar (op: Equal, Greater). */
static enum rl_status pos_cmp(struct lower *L, enum rl_op op, uint32_t pos, int64_t i,
                              uint32_t *res)
{
	return op2(L, op, op == RL_OP_Equal ? "is" : "after", pos,
	           const_i64(L, "index", &i, 1, true), RL_NONE, res);
}

static struct item seq_item(struct lower *L, const uint32_t *v, int n)
{
	uint32_t *s = rl_arena_alloc(L->g, (size_t)(n + 1) * sizeof(uint32_t));
	if (n)
		memcpy(s, v, (size_t)n * sizeof(uint32_t));
	return (struct item){.kind = IT_SEQ, .seq = s, .n = n};
}

static enum rl_status need_seq(struct lower *L, const struct item *it)
{
	if (it->kind == IT_SEQ)
		return RL_OK;
	return fail(L, RL_ERR_INVALID, "input 0 must be a sequence");
}

static enum rl_status lower_split(struct lower *L, const Onnx__NodeProto *np,
                                  const struct item *in, int nin, struct item *out)
{
	enum rl_status st = need_tensor(L, &in[0], "the input");
	if (st != RL_OK)
		return st;
	const struct rl_value *x = &L->g->values[in[0].v];
	int64_t axis = int_attr(np, "axis", 0), keep = int_attr(np, "keepdims", 1);
	if (axis < 0)
		axis += x->shape.rank;
	if (x->shape.rank < 0 || axis < 0 || axis >= x->shape.rank)
		return fail(L, RL_ERR_INVALID, "axis out of range");
	int64_t len = x->shape.d[axis].v;
	if (len < 0)
		return fail(L, RL_ERR_SHAPE, "the split axis has symbolic length '%s'; bind it",
		            x->shape.d[axis].sym ? x->shape.d[axis].sym : "?");
	int64_t sizes[RL_UNROLL_MAX];
	int n = 0;
	if (nin < 2 || in[1].kind == IT_NONE) {
		for (int64_t i = 0; i < len && n < RL_UNROLL_MAX; i++)
			sizes[n++] = 1;
	} else {
		if ((st = need_tensor(L, &in[1], "split")) != RL_OK)
			return st;
		const struct rl_value *s = &L->g->values[in[1].v];
		if (!(s->flags & RL_VAL_CONST))
			return fail(L, RL_ERR_UNSUPPORTED, "split is a run-time value");
		keep = 1; /* keepdims applies only without split */
		if (s->shape.rank == 0) {
			int64_t c = rl_value_get_int(L->g, in[1].v, 0);
			if (c <= 0)
				return fail(L, RL_ERR_INVALID, "split %lld", (long long)c);
			for (int64_t i = 0; i < len && n < RL_UNROLL_MAX; i += c)
				sizes[n++] = len - i < c ? len - i : c;
		} else {
			int64_t sum = 0, cnt = rl_shape_numel(&s->shape);
			for (int64_t i = 0; i < cnt && n < RL_UNROLL_MAX; i++) {
				sizes[n] = rl_value_get_int(L->g, in[1].v, i);
				if (sizes[n] < 0)
					return fail(L, RL_ERR_INVALID, "negative split");
				sum += sizes[n++];
			}
			if (sum != len)
				return fail(L, RL_ERR_INVALID, "split sums to %lld, the axis has %lld",
				            (long long)sum, (long long)len);
		}
	}
	if (n >= RL_UNROLL_MAX)
		return fail(L, RL_ERR_UNSUPPORTED, "more than %d pieces", RL_UNROLL_MAX);
	uint32_t *v = malloc((size_t)(n + 1) * sizeof(uint32_t));
	RL_ASSERT(v);
	int64_t at = 0;
	for (int i = 0; i < n && st == RL_OK; i++) {
		if (!keep)
			st = op_take(L, in[0].v, at, axis, &v[i]);
		else
			st = op_slice(L, in[0].v, at, at + sizes[i], axis, &v[i]);
		at += sizes[i];
	}
	if (st == RL_OK)
		out[0] = seq_item(L, v, n);
	free(v);
	return st;
}

static enum rl_status lower_seqmap(struct lower *L, struct scope *sc,
                                   const Onnx__NodeProto *np, const struct item *in, int nin,
                                   struct item *out)
{
	const Onnx__GraphProto *body = graph_attr(np, "body");
	if (!body)
		return fail(L, RL_ERR_INVALID, "the body is missing");
	enum rl_status st = need_seq(L, &in[0]);
	if (st != RL_OK)
		return st;
	int n = in[0].n;
	for (int j = 1; j < nin; j++)
		if (in[j].kind == IT_SEQ && in[j].n != n)
			return fail(L, RL_ERR_INVALID, "input sequences have lengths %d and %d", n,
			            in[j].n);
	int nout = (int)np->n_output;
	if ((int)body->n_output != nout)
		return fail(L, RL_ERR_INVALID, "the body gives %zu outputs, the node %d",
		            body->n_output, nout);
	struct item *bin = calloc((size_t)nin + 1, sizeof(*bin));
	struct item *bout = calloc((size_t)nout + 1, sizeof(*bout));
	uint32_t *res = calloc((size_t)nout * (size_t)n + 1, sizeof(uint32_t));
	RL_ASSERT(bin && bout && res);
	for (int i = 0; i < n && st == RL_OK; i++) {
		for (int j = 0; j < nin; j++)
			bin[j] = in[j].kind == IT_SEQ ? tensor_item(in[j].seq[i]) : in[j];
		st = lower_body(L, sc, body, bin, nin, iter_prefix(L, "", i), bout);
		for (int k = 0; k < nout && st == RL_OK; k++) {
			st = need_tensor(L, &bout[k], "a SequenceMap body output");
			res[(size_t)k * (size_t)n + (size_t)i] = bout[k].v;
		}
	}
	for (int k = 0; k < nout && st == RL_OK; k++)
		out[k] = seq_item(L, res + (size_t)k * (size_t)n, n);
	free(bin);
	free(bout);
	free(res);
	return st;
}

static enum rl_status lower_seq(struct lower *L, const Onnx__NodeProto *np,
                                const struct item *in, int nin, struct item *out)
{
	const char *op = np->op_type;
	enum rl_status st = RL_OK;
	if (strcmp(op, "SequenceEmpty") == 0) {
		out[0] = seq_item(L, NULL, 0);
	} else if (strcmp(op, "SequenceConstruct") == 0) {
		uint32_t *v = malloc((size_t)(nin + 1) * sizeof(uint32_t));
		RL_ASSERT(v);
		for (int i = 0; i < nin && st == RL_OK; i++) {
			st = need_tensor(L, &in[i], "a SequenceConstruct input");
			v[i] = in[i].v;
		}
		if (st == RL_OK)
			out[0] = seq_item(L, v, nin);
		free(v);
	} else if (strcmp(op, "SequenceInsert") == 0) {
		int64_t p;
		uint32_t rt, pos;
		if ((st = need_seq(L, &in[0])) != RL_OK ||
		    (st = need_tensor(L, &in[1], "the inserted value")) != RL_OK ||
		    (st = position(L, nin > 2 ? &in[2] : &(struct item){0}, in[0].n, true,
		                   in[0].n, &p, &rt)) != RL_OK)
			return st;
		int n = in[0].n;
		const uint32_t *xs = in[0].seq;
		uint32_t *v = malloc((size_t)(n + 2) * sizeof(uint32_t));
		RL_ASSERT(v);
		if (rt == RL_NONE) {
			for (int i = 0, j = 0; i <= n; i++)
				v[i] = i == p ? in[1].v : xs[j++];
		} else if (n == 0) {
			v[0] = in[1].v;
		} else if ((st = runtime_pos(L, rt, xs, n, in[1].v, n, &pos)) == RL_OK) {
			/* v[i]: the tensor at the position, before it xs[i], after xs[i - 1] */
			for (int i = 0; i <= n && st == RL_OK; i++) {
				uint32_t eq, after, rest = i == 0 ? xs[0] : xs[i - 1];
				if (i > 0 && i < n && (st = pos_cmp(L, RL_OP_Greater, pos, i, &after)) == RL_OK)
					st = op_where(L, after, xs[i], xs[i - 1], RL_NONE, &rest);
				if (st == RL_OK && (st = pos_cmp(L, RL_OP_Equal, pos, i, &eq)) == RL_OK)
					st = op_where(L, eq, in[1].v, rest, RL_NONE, &v[i]);
			}
		}
		if (st == RL_OK)
			out[0] = seq_item(L, v, n + 1);
		free(v);
	} else if (strcmp(op, "SequenceErase") == 0) {
		int64_t p;
		if ((st = need_seq(L, &in[0])) != RL_OK)
			return st;
		if (in[0].n == 0)
			return fail(L, RL_ERR_INVALID, "erase from an empty sequence");
		uint32_t rt, pos;
		if ((st = position(L, nin > 1 ? &in[1] : &(struct item){0}, in[0].n, false,
		                   in[0].n - 1, &p, &rt)) != RL_OK)
			return st;
		int n = in[0].n;
		const uint32_t *xs = in[0].seq;
		uint32_t *v = malloc((size_t)(n + 1) * sizeof(uint32_t));
		RL_ASSERT(v);
		if (rt == RL_NONE) {
			for (int i = 0, j = 0; i < n; i++)
				if (i != p)
					v[j++] = xs[i];
		} else if ((st = runtime_pos(L, rt, xs, n, RL_NONE, n, &pos)) == RL_OK) {
			/* v[i]: xs[i] before the position, xs[i + 1] from it on */
			for (int i = 0; i + 1 < n && st == RL_OK; i++) {
				uint32_t after;
				if ((st = pos_cmp(L, RL_OP_Greater, pos, i, &after)) == RL_OK)
					st = op_where(L, after, xs[i], xs[i + 1], RL_NONE, &v[i]);
			}
		}
		if (st == RL_OK)
			out[0] = seq_item(L, v, n - 1);
		free(v);
	} else if (strcmp(op, "SequenceAt") == 0) {
		int64_t p;
		uint32_t rt, pos;
		if ((st = need_seq(L, &in[0])) != RL_OK)
			return st;
		if (in[1].kind == IT_NONE)
			return fail(L, RL_ERR_INVALID, "the position is missing");
		if ((st = position(L, &in[1], in[0].n, false, 0, &p, &rt)) != RL_OK)
			return st;
		int n = in[0].n;
		const uint32_t *xs = in[0].seq;
		if (rt == RL_NONE) {
			out[0] = tensor_item(xs[p]);
		} else if (n == 0) {
			return fail(L, RL_ERR_INVALID, "SequenceAt of an empty sequence");
		} else if ((st = runtime_pos(L, rt, xs, n, RL_NONE, n, &pos)) == RL_OK) {
			uint32_t acc = xs[n - 1], eq;
			for (int i = n - 2; i >= 0 && st == RL_OK; i--)
				if ((st = pos_cmp(L, RL_OP_Equal, pos, i, &eq)) == RL_OK)
					st = op_where(L, eq, xs[i], acc, RL_NONE, &acc);
			out[0] = tensor_item(acc);
		}
	} else if (strcmp(op, "SequenceLength") == 0) {
		if ((st = need_seq(L, &in[0])) != RL_OK)
			return st;
		int64_t n = in[0].n;
		out[0] = tensor_item(const_i64(L, "length", &n, 1, true));
	} else if (strcmp(op, "ConcatFromSequence") == 0) {
		if ((st = need_seq(L, &in[0])) != RL_OK)
			return st;
		if (in[0].n == 0)
			return fail(L, RL_ERR_INVALID, "concatenation of an empty sequence");
		int64_t axis = int_attr(np, "axis", 0);
		uint32_t v;
		if (int_attr(np, "new_axis", 0))
			st = op_stack(L, in[0].seq, in[0].n, axis, RL_NONE, &v);
		else
			st = op_concat(L, in[0].seq, in[0].n, axis, RL_NONE, &v);
		out[0] = tensor_item(v);
	} else if (strcmp(op, "Identity") == 0) {
		out[0] = in[0]; /* of a sequence or an optional (the reader's choice) */
	} else if (strcmp(op, "Optional") == 0) {
		out[0] = nin > 0 ? in[0] : (struct item){.kind = IT_NONE};
	} else if (strcmp(op, "OptionalHasElement") == 0) {
		bool has = nin > 0 && in[0].kind != IT_NONE;
		out[0] = tensor_item(const_bool(L, "has_element", has));
	} else if (strcmp(op, "OptionalGetElement") == 0) {
		if (nin < 1 || in[0].kind == IT_NONE)
			return fail(L, RL_ERR_INVALID, "the optional is empty");
		out[0] = in[0];
	} else {
		return fail(L, RL_ERR_UNSUPPORTED, "not lowered");
	}
	return st;
}

/* ---- FlexAttention with score_mod / prob_mod ------------------------------ */

/*
 * The attention kernel (backends/c/emit_attn.c) keeps one row of scores in
 * registers and never materializes Sq x T, so it cannot hand the scores to a
 * subgraph that sees the whole [B, Hq, L, S] tensor (Shape, Range, Gather of
 * the query and key positions: any operator). A FlexAttention that carries
 * score_mod or prob_mod is therefore written out here as the operator's
 * definition, in the order and precision of onnx.reference:
 *
 *   c = Cast<Q>(sqrt(float32(scale)))      scale: the attribute, else 1/sqrt(E)
 *   K', V' = K, V repeated to Hq heads     (Gather on axis 1, h -> h / G)
 *   scores = Cast<P>(MatMul(Q * c, Transpose(K' * c)))
 *   scores = score_mod(scores)
 *   probs = Softmax(scores, axis -1)
 *   probs = prob_mod(probs)
 *   Y = Cast<V>(MatMul(probs, Cast<P>(V')))
 *
 * P is softmax_precision, by default float32 unless the inputs are double.
 * The modifiers are built inline like If branches (lower_body), renamed
 * "<node>/score_mod/<name>", so the passes see them as any other nodes (their
 * position constants fold). The [B, Hq, L, S] scores are held in memory on
 * this path. A FlexAttention without modifiers stays one node for the fused
 * kernel.
 */

bool rl_onnx_flex_mod(const Onnx__NodeProto *np)
{
	if (!np->op_type || strcmp(np->op_type, "FlexAttention") != 0)
		return false;
	for (size_t i = 0; i < np->n_attribute; i++) {
		const Onnx__AttributeProto *ap = np->attribute[i];
		if (ap->name && (!strcmp(ap->name, "score_mod") || !strcmp(ap->name, "prob_mod")))
			return true;
	}
	return false;
}

/* start() of op on x (and y when not RL_NONE), for a node that takes attributes. */
static uint32_t start1(struct lower *L, enum rl_op op, const char *base, uint32_t x, uint32_t y)
{
	uint32_t in[2] = {x, y};
	return start(L, op, base, in, y == RL_NONE ? 1 : 2, RL_NONE);
}

static enum rl_status op_cast(struct lower *L, const char *base, uint32_t x, enum rl_dtype to,
                              uint32_t *res)
{
	if (L->g->values[x].dtype == to) {
		*res = x;
		return RL_OK;
	}
	uint32_t id = start1(L, RL_OP_Cast, base, x, RL_NONE);
	rl_node_add_attr(L->g, id, "to", RL_ATTR_INT)->i = to;
	return finish(L, id, res);
}

/* K or V [B, Hkv, S, D] with each head repeated G times: [B, Hkv * G, S, D] */
static enum rl_status op_repeat_heads(struct lower *L, const char *base, uint32_t x,
                                      int64_t hkv, int64_t G, uint32_t *res)
{
	if (G == 1) {
		*res = x;
		return RL_OK;
	}
	int64_t *idx = malloc((size_t)(hkv * G) * sizeof(int64_t));
	RL_ASSERT(idx);
	for (int64_t h = 0; h < hkv * G; h++)
		idx[h] = h / G;
	uint32_t id = start1(L, RL_OP_Gather, base, x, const_i64(L, "heads", idx, (int)(hkv * G),
	                                                        false));
	free(idx);
	rl_node_add_attr(L->g, id, "axis", RL_ATTR_INT)->i = 1;
	return finish(L, id, res);
}

/* One modifier graph on x [B, Hq, L, S] of dtype P; the result must keep
 * the shape (the spec's contract) and is cast to P as the reference does. */
static enum rl_status flex_mod(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                               const char *attr, enum rl_dtype P, uint32_t *x)
{
	const Onnx__GraphProto *mg = graph_attr(np, attr);
	if (!mg) {
		for (size_t i = 0; i < np->n_attribute; i++)
			if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, attr))
				return fail(L, RL_ERR_INVALID, "attribute %s is not a graph", attr);
		return RL_OK;
	}
	if (mg->n_input != 1 || mg->n_output != 1)
		return fail(L, RL_ERR_INVALID, "%s takes %zu inputs and gives %zu outputs; it must "
		            "take the one tensor and give one", attr, mg->n_input, mg->n_output);
	struct item in = tensor_item(*x), out;
	enum rl_status st = lower_body(L, sc, mg, &in, 1, iter_prefix(L, attr, -1), &out);
	if (st == RL_OK)
		st = need_tensor(L, &out, attr);
	if (st != RL_OK)
		return st;
	const struct rl_value *a = &L->g->values[*x], *b = &L->g->values[out.v];
	if (!rl_shape_equal(&a->shape, &b->shape)) {
		char sa[128], sb[128];
		return fail(L, RL_ERR_INVALID, "%s gives shape %s for scores of shape %s; it must "
		            "keep the shape", attr, rl_shape_str(&b->shape, sb, sizeof(sb)),
		            rl_shape_str(&a->shape, sa, sizeof(sa)));
	}
	return op_cast(L, attr, out.v, P, x);
}

static enum rl_status lower_flex(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                                 const struct item *in, int nin, struct item *out)
{
	struct rl_graph *g = L->g;
	if (nin != 3 || np->n_output != 1)
		return fail(L, RL_ERR_INVALID, "has %d inputs and %zu outputs; FlexAttention takes "
		            "Q, K, V and gives Y", nin, np->n_output);
	enum rl_status st = RL_OK;
	for (int i = 0; i < 3 && st == RL_OK; i++)
		st = need_tensor(L, &in[i], i == 0 ? "Q" : i == 1 ? "K" : "V");
	if (st != RL_OK)
		return st;
	/* copies: adding values below moves g->values */
	const struct rl_value q = g->values[in[0].v], k = g->values[in[1].v], v = g->values[in[2].v];
	for (int i = 0; i < 3; i++) {
		const struct rl_value *x = &g->values[in[i].v];
		bool known = x->shape.rank == 4;
		for (int d = 0; d < 4 && known; d++)
			known = x->shape.d[d].v >= 0;
		char b[128];
		if (!known)
			return fail(L, RL_ERR_SHAPE, "%s '%s' has shape %s; FlexAttention with %s needs "
			            "rank 4 with every dim known (bind symbolic dims with --dim)",
			            i == 0 ? "Q" : i == 1 ? "K" : "V", x->name,
			            rl_shape_str(&x->shape, b, sizeof(b)),
			            graph_attr(np, "score_mod") ? "score_mod" : "prob_mod");
	}
	if (!rl_dtype_is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
		return fail(L, RL_ERR_INVALID, "Q, K and V must share one float dtype");
	int64_t B = q.shape.d[0].v, Hq = q.shape.d[1].v, E = q.shape.d[3].v;
	int64_t Hkv = k.shape.d[1].v, S = k.shape.d[2].v;
	if (k.shape.d[0].v != B || v.shape.d[0].v != B || v.shape.d[1].v != Hkv ||
	    v.shape.d[2].v != S || k.shape.d[3].v != E)
		return fail(L, RL_ERR_SHAPE, "Q [B, Hq, L, E], K [B, Hkv, S, E] and V [B, Hkv, S, Ev] "
		            "do not agree");
	if (Hkv <= 0 || Hq % Hkv != 0)
		return fail(L, RL_ERR_SHAPE, "q heads (%lld) must be a multiple of kv heads (%lld)",
		            (long long)Hq, (long long)Hkv);
	enum rl_dtype P = q.dtype == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT;
	int64_t sp = int_attr(np, "softmax_precision", -1);
	if (sp >= 0) {
		if (sp != RL_DT_FLOAT && sp != RL_DT_FLOAT16 && sp != RL_DT_BFLOAT16 &&
		    sp != RL_DT_DOUBLE)
			return fail(L, RL_ERR_INVALID, "softmax_precision %lld is not float, float16, "
			            "bfloat16 or double", (long long)sp);
		P = (enum rl_dtype)sp;
	}
	/* sqrt(scale) in float32, as the reference and the function body take it */
	double scale = 1.0 / sqrt((double)E);
	for (size_t i = 0; i < np->n_attribute; i++)
		if (np->attribute[i]->name && !strcmp(np->attribute[i]->name, "scale"))
			scale = np->attribute[i]->f;
	struct rl_shape s0 = {.rank = 0};
	uint32_t c = rl_graph_add_value(g, fresh_name(L, "sqrt_scale"), RL_DT_FLOAT, &s0);
	float *cd = rl_arena_alloc(g, sizeof(float));
	*cd = sqrtf((float)scale);
	rl_value_set_data(g, c, cd, sizeof(float));
	uint32_t qs, ks, kt, vs, sc4, id;
	if ((st = op_cast(L, "sqrt_scale_cast", c, q.dtype, &c)) != RL_OK ||
	    (st = op2(L, RL_OP_Mul, "q_scaled", in[0].v, c, RL_NONE, &qs)) != RL_OK ||
	    (st = op_repeat_heads(L, "k_heads", in[1].v, Hkv, Hq / Hkv, &ks)) != RL_OK ||
	    (st = op2(L, RL_OP_Mul, "k_scaled", ks, c, RL_NONE, &ks)) != RL_OK)
		return st;
	id = start1(L, RL_OP_Transpose, "k_transposed", ks, RL_NONE);
	struct rl_attr *perm = rl_node_add_attr(g, id, "perm", RL_ATTR_INTS);
	perm->n = 4;
	perm->ints = rl_arena_alloc(g, 4 * sizeof(int64_t));
	memcpy(perm->ints, (const int64_t[]){0, 1, 3, 2}, 4 * sizeof(int64_t));
	if ((st = finish(L, id, &kt)) != RL_OK ||
	    (st = op2(L, RL_OP_MatMul, "scores", qs, kt, RL_NONE, &sc4)) != RL_OK ||
	    (st = op_cast(L, "scores_cast", sc4, P, &sc4)) != RL_OK ||
	    (st = flex_mod(L, sc, np, "score_mod", P, &sc4)) != RL_OK)
		return st;
	id = start1(L, RL_OP_Softmax, "probs", sc4, RL_NONE);
	rl_node_add_attr(g, id, "axis", RL_ATTR_INT)->i = -1;
	if ((st = finish(L, id, &sc4)) != RL_OK ||
	    (st = flex_mod(L, sc, np, "prob_mod", P, &sc4)) != RL_OK ||
	    (st = op_repeat_heads(L, "v_heads", in[2].v, Hkv, Hq / Hkv, &vs)) != RL_OK ||
	    (st = op_cast(L, "v_cast", vs, P, &vs)) != RL_OK ||
	    (st = op2(L, RL_OP_MatMul, "y", sc4, vs, RL_NONE, &vs)) != RL_OK ||
	    (st = op_cast(L, "y_cast", vs, v.dtype, &vs)) != RL_OK)
		return st;
	out[0] = tensor_item(vs);
	return RL_OK;
}

/* Nodes this file builds itself: control flow, sequences, optionals and a
 * FlexAttention with a modifier graph. */
static bool lowered_here(const Onnx__NodeProto *np)
{
	return rl_onnx_ctrl_op(np->op_type) || rl_onnx_flex_mod(np);
}

/* ---- one node ----------------------------------------------------------------- */

static enum rl_status lower_ctrl(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                                 struct item *out)
{
	const char *saved = L->where;
	L->where = node_label(L, np);
	int nin = (int)np->n_input;
	/* room past nin: the operators read their optional inputs as absent */
	struct item *in = calloc((size_t)nin + 4, sizeof(*in));
	RL_ASSERT(in);
	enum rl_status st = RL_OK;
	for (int i = 0; i < nin && st == RL_OK; i++)
		st = resolve(L, sc, np->input[i], &in[i]);
	const char *op = np->op_type;
	if (st != RL_OK)
		;
	else if (strcmp(op, "If") == 0)
		st = nin < 1 ? fail(L, RL_ERR_INVALID, "the condition is missing")
		             : lower_if(L, sc, np, in, out);
	else if (strcmp(op, "Loop") == 0)
		st = lower_loop(L, sc, np, in, nin, out);
	else if (strcmp(op, "Scan") == 0)
		st = lower_scan(L, sc, np, in, nin, out);
	else if (strcmp(op, "SequenceMap") == 0)
		st = nin < 1 ? fail(L, RL_ERR_INVALID, "no input sequence")
		             : lower_seqmap(L, sc, np, in, nin, out);
	else if (rl_onnx_flex_mod(np))
		st = lower_flex(L, sc, np, in, nin, out);
	else if (strcmp(op, "SplitToSequence") == 0)
		st = nin < 1 ? fail(L, RL_ERR_INVALID, "no input") : lower_split(L, np, in, nin, out);
	else
		st = lower_seq(L, np, in, nin, out);
	free(in);
	L->where = saved;
	return st;
}

/* A plain operator inside a subgraph: a node of its own, renamed. */
static enum rl_status lower_plain(struct lower *L, struct scope *sc, const Onnx__NodeProto *np,
                                  size_t idx)
{
	struct rl_graph *g = L->g;
	const char *saved = L->where;
	L->where = node_label(L, np);
	int nin = (int)np->n_input;
	while (nin > 0 && (!np->input[nin - 1] || !*np->input[nin - 1]))
		nin--;
	uint32_t *in = calloc((size_t)nin + 1, sizeof(uint32_t));
	uint32_t *outs = calloc(np->n_output + 1, sizeof(uint32_t));
	RL_ASSERT(in && outs);
	enum rl_status st = RL_OK;
	enum rl_op op = rl_op_lookup(np->op_type);
	if (op == RL_OP_COUNT_) {
		st = fail(L, RL_ERR_UNSUPPORTED, "unsupported operator");
		goto out;
	}
	const struct rl_op_info *oi = &rl_op_table[op];
	for (int i = 0; i < nin && st == RL_OK; i++) {
		struct item it;
		st = resolve(L, sc, np->input[i], &it);
		if (st == RL_OK && it.kind == IT_SEQ && op == RL_OP_Identity && np->n_output == 1 &&
		    np->output[0]) {
			scope_bind(sc, np->output[0], it); /* Identity of a sequence */
			goto out;
		}
		if (st == RL_OK && it.kind == IT_SEQ)
			st = fail(L, RL_ERR_UNSUPPORTED, "input '%s' is a sequence", np->input[i]);
		in[i] = it.kind == IT_TENSOR ? it.v : RL_NONE;
	}
	int nout = (int)np->n_output;
	while (nout > 0 && (!np->output[nout - 1] || !*np->output[nout - 1]))
		nout--;
	if (st == RL_OK && (nin < oi->in_min || (oi->in_max >= 0 && nin > oi->in_max) ||
	                    nout < oi->out_min || (oi->out_max >= 0 && nout > oi->out_max)))
		st = fail(L, RL_ERR_INVALID, "has %d inputs and %d outputs; %s takes %d to %d "
		          "and gives %d to %d", nin, nout, oi->name, oi->in_min, oi->in_max,
		          oi->out_min, oi->out_max);
	if (st != RL_OK)
		goto out;
	for (int k = 0; k < nout; k++)
		outs[k] = np->output[k] && *np->output[k]
		        ? rl_graph_add_value(g, fresh_name(L, np->output[k]), RL_DT_UNDEFINED, NULL)
		        : RL_NONE;
	char nb[512];
	if (np->name && *np->name)
		snprintf(nb, sizeof(nb), "%s/%s", L->prefix, np->name);
	else
		snprintf(nb, sizeof(nb), "%s/%s_%zu", L->prefix, np->op_type, idx);
	uint32_t id = rl_graph_add_node(g, op, nb, in, nin, outs, nout);
	g->nodes[id].opset = g->opset;
	L->added++;
	char why[512];
	st = rl_onnx_node_attrs(g, id, np, why, sizeof(why));
	if (st != RL_OK) {
		st = fail(L, st, "%s", why);
		goto out;
	}
	if ((st = finish(L, id, NULL)) != RL_OK)
		goto out;
	for (int k = 0; k < nout; k++)
		if (outs[k] != RL_NONE)
			scope_bind(sc, np->output[k], tensor_item(outs[k]));
out:
	free(in);
	free(outs);
	L->where = saved;
	return st;
}

static enum rl_status lower_nodes(struct lower *L, struct scope *sc, const Onnx__GraphProto *gp)
{
	enum rl_status st = RL_OK;
	for (size_t i = 0; i < gp->n_node && st == RL_OK; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		if (!lowered_here(np)) {
			st = lower_plain(L, sc, np, i);
			continue;
		}
		struct item *out = calloc(np->n_output + 1, sizeof(*out));
		RL_ASSERT(out);
		st = lower_ctrl(L, sc, np, out);
		for (size_t k = 0; k < np->n_output && st == RL_OK; k++)
			if (np->output[k] && *np->output[k])
				scope_bind(sc, np->output[k], out[k]);
		free(out);
	}
	return st;
}

/* ---- sequence and optional graph inputs and outputs -------------------------- */

static struct rl_onnx_port *find_in_port(struct rl_graph *g, const char *name)
{
	for (uint32_t i = 0; g->onnx_io && i < g->onnx_io->nin; i++)
		if (strcmp(g->onnx_io->in[i].name, name) == 0)
			return &g->onnx_io->in[i];
	return NULL;
}

/* The name of the k-th tensor of port p: NAME for a tensor, NAME.k for an
 * element of a sequence. */
static const char *port_tensor_name(const struct rl_onnx_port *p, uint32_t k, char *buf,
                                    size_t n)
{
	bool seq = p->kind == RL_ONNX_SEQUENCE ||
	           (p->kind == RL_ONNX_OPTIONAL && p->inner == RL_ONNX_SEQUENCE);
	if (!seq)
		return p->name;
	snprintf(buf, n, "%s.%u", p->name, k);
	return buf;
}

/* g->inputs again, from the ports in model order. */
static void rebuild_inputs(struct rl_graph *g)
{
	struct rl_onnx_io *io = g->onnx_io;
	uint32_t n = 0;
	for (uint32_t i = 0; i < io->nin; i++)
		n += io->in[i].count;
	uint32_t *ins = malloc((n + 1) * sizeof(uint32_t));
	RL_ASSERT(ins);
	uint32_t at = 0;
	for (uint32_t i = 0; i < io->nin; i++) {
		struct rl_onnx_port *p = &io->in[i];
		p->first = at;
		for (uint32_t k = 0; k < p->count; k++) {
			char buf[512];
			uint32_t v = rl_graph_find_value(g, port_tensor_name(p, k, buf, sizeof(buf)));
			RL_ASSERT(v != RL_NONE && (g->values[v].flags & RL_VAL_INPUT));
			ins[at++] = v;
		}
	}
	free(g->inputs);
	g->inputs = ins;
	g->ninputs = at;
}

static enum rl_status bind_port(struct rl_graph *g, const char *name, enum rl_onnx_kind kind,
                                bool present, int len, const struct rl_tensor *elems)
{
	struct rl_onnx_port *p = find_in_port(g, name);
	const char *kn = kind == RL_ONNX_SEQUENCE ? "sequence" : "optional";
	if (!p || p->kind != kind)
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "the model has no %s input named '%s'",
		                      kn, name);
	if (p->count || p->present >= 0 || p->len >= 0)
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "%s input '%s' is bound twice", kn,
		                      name);
	bool seq = kind == RL_ONNX_SEQUENCE || (present && p->inner == RL_ONNX_SEQUENCE);
	if (seq && (len < 0 || len > RL_UNROLL_MAX))
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "%s input '%s': a length of %d; "
		                      "0 to %d are supported", kn, name, len, RL_UNROLL_MAX);
	uint32_t n = !present ? 0 : seq ? (uint32_t)len : 1;
	for (uint32_t k = 0; k < n; k++) {
		char buf[512];
		const char *tn = port_tensor_name(p, k, buf, sizeof(buf));
		if (rl_graph_find_value(g, tn) != RL_NONE)
			return rl_graph_error(g, NULL, RL_ERR_INVALID, "%s input '%s': its tensor "
			                      "'%s' has the name of another value", kn, name, tn);
		enum rl_dtype dt = p->dtype;
		struct rl_shape s = p->shape;
		if (elems) {
			/* the file's tensor, where it agrees with what the model declares;
			 * its own dims, since elements may differ in shape */
			const struct rl_tensor *e = &elems[k];
			char a[128], b[128];
			if (dt != RL_DT_UNDEFINED && e->dtype != dt)
				return rl_graph_error(g, NULL, RL_ERR_SHAPE, "%s input '%s': element %u "
				                      "holds %s, the model wants %s", kn, name, k,
				                      rl_dtype_name(e->dtype), rl_dtype_name(dt));
			bool ok = s.rank < 0 || s.rank == e->shape.rank;
			for (int d = 0; ok && d < s.rank; d++)
				ok = s.d[d].v < 0 || s.d[d].v == e->shape.d[d].v;
			if (!ok)
				return rl_graph_error(g, NULL, RL_ERR_SHAPE, "%s input '%s': element %u "
				                      "has shape %s, the model wants %s", kn, name, k,
				                      rl_shape_str(&e->shape, a, sizeof(a)),
				                      rl_shape_str(&s, b, sizeof(b)));
			dt = e->dtype;
			s = e->shape;
		}
		if (dt == RL_DT_UNDEFINED)
			return rl_graph_error(g, NULL, RL_ERR_INVALID, "%s input '%s' declares no "
			                      "element type", kn, name);
		uint32_t v = rl_graph_add_value(g, tn, dt, &s);
		g->values[v].flags |= RL_VAL_INPUT;
	}
	p->present = present;
	p->len = seq ? len : -1;
	p->count = n;
	rebuild_inputs(g);
	return RL_OK;
}

enum rl_status rl_onnx_bind_sequence(struct rl_graph *g, const char *name, int len,
                                     const struct rl_tensor *elems)
{
	return bind_port(g, name, RL_ONNX_SEQUENCE, true, len, elems);
}

enum rl_status rl_onnx_bind_optional(struct rl_graph *g, const char *name, bool present,
                                     int len, const struct rl_tensor *elems)
{
	return bind_port(g, name, RL_ONNX_OPTIONAL, present, len, elems);
}

/* The main scope's items for the sequence and optional inputs. */
static enum rl_status bind_inputs(struct lower *L, struct scope *sc)
{
	struct rl_graph *g = L->g;
	for (uint32_t i = 0; i < g->onnx_io->nin; i++) {
		struct rl_onnx_port *p = &g->onnx_io->in[i];
		if (p->kind == RL_ONNX_TENSOR)
			continue;
		if (p->kind == RL_ONNX_SEQUENCE && p->len < 0)
			return rl_graph_error(g, NULL, RL_ERR_SHAPE, "sequence input '%s' has no "
			                      "length: give --seq %s=LEN (with rlopt run, a "
			                      "SequenceProto file)", p->name, p->name);
		if (p->kind == RL_ONNX_OPTIONAL && p->present < 0)
			p->present = 0; /* not given: absent, as the ONNX tests mean it */
		uint32_t *v = rl_arena_alloc(g, (p->count + 1) * sizeof(uint32_t));
		for (uint32_t k = 0; k < p->count; k++) {
			v[k] = g->inputs[p->first + k];
			if (g->values[v[k]].shape.rank < 0)
				return rl_graph_error(g, NULL, RL_ERR_SHAPE, "input '%s' (of %s) has no "
				                      "shape: give --shape %s=DIMS", g->values[v[k]].name,
				                      p->name, g->values[v[k]].name);
		}
		bool seq = p->kind == RL_ONNX_SEQUENCE || p->inner == RL_ONNX_SEQUENCE;
		struct item it = {.kind = IT_NONE};
		if (p->count == 0 && !(seq && p->present != 0))
			it.kind = IT_NONE;
		else if (seq)
			it = (struct item){.kind = IT_SEQ, .seq = v, .n = (int)p->count};
		else
			it = tensor_item(v[0]);
		scope_bind(sc, p->name, it);
	}
	return RL_OK;
}

/* A tensor of an output port: an Identity of x into a value named `name`
 * (x itself when it is already that value). */
static enum rl_status port_tensor(struct lower *L, uint32_t x, const char *name, uint32_t *out)
{
	struct rl_graph *g = L->g;
	if (strcmp(g->values[x].name, name) == 0) { /* also an input passed through */
		*out = x;
		return RL_OK;
	}
	uint32_t v = rl_graph_find_value(g, name);
	if (v != RL_NONE && (g->values[v].producer != RL_NONE ||
	                     (g->values[v].flags & (RL_VAL_INPUT | RL_VAL_CONST)) ||
	                     g->values[v].nuses))
		return fail(L, RL_ERR_INVALID, "output tensor '%s' has the name of another value",
		            name);
	if (v == RL_NONE)
		v = rl_graph_add_value(g, name, RL_DT_UNDEFINED, NULL);
	*out = v;
	return op_identity(L, x, v);
}

/* g->outputs from the ports: each sequence or optional output as tensors. */
static enum rl_status bind_outputs(struct lower *L, struct scope *sc)
{
	struct rl_graph *g = L->g;
	struct rl_onnx_io *io = g->onnx_io;
	uint32_t *outs = NULL, n = 0, cap = 0, old = 0;
	enum rl_status st = RL_OK;
	for (uint32_t i = 0; i < io->nout && st == RL_OK; i++) {
		struct rl_onnx_port *p = &io->out[i];
		uint32_t first = n;
		struct item it;
		if (p->kind == RL_ONNX_TENSOR) {
			it = tensor_item(g->outputs[old++]);
		} else {
			L->where = rl_arena_strdup(g, "graph output");
			if ((st = resolve(L, sc, p->name, &it)) != RL_OK)
				break;
			const char *is = it.kind == IT_SEQ ? "a sequence" : it.kind == IT_TENSOR
			               ? "a tensor" : "nothing (an empty optional)";
			if ((p->kind == RL_ONNX_SEQUENCE && it.kind != IT_SEQ) ||
			    (p->kind == RL_ONNX_OPTIONAL && it.kind != IT_NONE &&
			     (it.kind == IT_SEQ) != (p->inner == RL_ONNX_SEQUENCE))) {
				st = rl_graph_error(g, NULL, RL_ERR_INVALID, "graph output '%s' is declared "
				                    "a%s %s but the model gives it %s", p->name,
				                    p->kind == RL_ONNX_OPTIONAL ? "n optional" : "",
				                    p->inner == RL_ONNX_SEQUENCE || p->kind ==
				                    RL_ONNX_SEQUENCE ? "sequence" : "tensor", is);
				break;
			}
			p->present = it.kind != IT_NONE;
			p->len = it.kind == IT_SEQ ? it.n : -1;
		}
		int cnt = it.kind == IT_SEQ ? it.n : it.kind == IT_TENSOR ? 1 : 0;
		for (int k = 0; k < cnt && st == RL_OK; k++) {
			uint32_t v = it.kind == IT_SEQ ? it.seq[k] : it.v;
			if (p->kind != RL_ONNX_TENSOR) {
				char buf[512];
				st = port_tensor(L, v, port_tensor_name(p, (uint32_t)k, buf, sizeof(buf)),
				                 &v);
				g->values[v].flags |= RL_VAL_OUTPUT;
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				outs = realloc(outs, (cap + 1) * sizeof(uint32_t));
				RL_ASSERT(outs);
			}
			outs[n++] = v;
		}
		p->first = first;
		p->count = n - first;
	}
	if (st == RL_OK && n == 0)
		st = rl_graph_error(g, NULL, RL_ERR_UNSUPPORTED, "the model gives no tensor once its "
		                    "sequences and optionals are resolved (empty or absent)");
	if (st != RL_OK) {
		free(outs);
		return st;
	}
	free(g->outputs);
	g->outputs = outs ? outs : malloc(sizeof(uint32_t));
	g->noutputs = n;
	return RL_OK;
}

/* ---- the main graph ---------------------------------------------------------- */

struct deferred {
	const Onnx__GraphProto *gp;
	const uint8_t *lowered;
};

static bool has_lowered(const Onnx__GraphProto *gp, const uint8_t *lowered)
{
	for (size_t i = 0; i < gp->n_node; i++)
		if (lowered[i])
			return true;
	return false;
}

static enum rl_status lower_deferred(struct rl_graph *g, const void *arg)
{
	const struct deferred *d = arg;
	return rl_onnx_lower_ctrl(g, d->gp, d->lowered);
}

void rl_onnx_defer_ctrl(struct rl_graph *g, const Onnx__GraphProto *gp, const uint8_t *lowered)
{
	if (has_lowered(gp, lowered) || g->onnx_io) {
		struct deferred *d = rl_arena_alloc(g, sizeof(*d));
		d->gp = gp;
		d->lowered = lowered;
		g->lower = lower_deferred;
		g->lower_arg = d;
	}
}

enum rl_status rl_onnx_lower_ctrl(struct rl_graph *g, const Onnx__GraphProto *gp,
                                  const uint8_t *lowered)
{
	if (!has_lowered(gp, lowered) && !g->onnx_io)
		return RL_OK;
	struct lower L = {.g = g, .where = "graph input"};
	struct scope main = {.gp = gp};
	enum rl_status st = g->onnx_io ? bind_inputs(&L, &main) : RL_OK;
	for (size_t i = 0; i < gp->n_node && st == RL_OK; i++) {
		const Onnx__NodeProto *np = gp->node[i];
		if (!lowered[i])
			continue;
		char pre[256];
		if (np->name && *np->name)
			snprintf(pre, sizeof(pre), "%s", np->name);
		else
			snprintf(pre, sizeof(pre), "%s_%zu", np->op_type, i);
		L.prefix = rl_arena_strdup(g, pre);
		struct item *out = calloc(np->n_output + 1, sizeof(*out));
		RL_ASSERT(out);
		st = lower_ctrl(&L, &main, np, out);
		L.where = node_label(&L, np);
		for (size_t k = 0; k < np->n_output && st == RL_OK; k++) {
			const char *on = np->output[k];
			if (!on || !*on)
				continue;
			uint32_t v = rl_graph_find_value(g, on);
			RL_ASSERT(v != RL_NONE);
			if (out[k].kind == IT_TENSOR) {
				/* the reader's value for this output gets its producer */
				st = op_identity(&L, out[k].v, v);
			} else if (g->values[v].flags & RL_VAL_OUTPUT) {
				st = fail(&L, RL_ERR_UNSUPPORTED, "output '%s' is a %s; the model declares "
				          "a tensor", on,
				          out[k].kind == IT_SEQ ? "sequence" : "empty optional");
			} else {
				scope_bind(&main, on, out[k]);
			}
		}
		free(out);
	}
	if (st == RL_OK && g->onnx_io)
		st = bind_outputs(&L, &main);
	scope_free(&main);
	free(L.state);
	if (st == RL_OK)
		rl_graph_compact(g); /* the sequence values nothing reads */
	return st;
}
