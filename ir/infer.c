/*
 * infer.c - dtype and shape inference: the driver, symbol binding, and the
 * helpers every operator family shares.
 *
 * rl_graph_infer() walks the live nodes in topological order. For each node
 * it checks the input and output counts for the node's opset (ops.def gives
 * the range over every opset; the exact count moved across versions as
 * attributes became inputs), checks that every present input has a dtype,
 * and hands the node to its family (ir/fam_<family>.c) by the family column
 * of ops.def. After a node is inferred, ir/eval.c evaluates it when its
 * inputs are constant and it is a small shape computation, so that a later
 * Reshape/Expand/Slice target is static; when the inputs are only known
 * symbolically (Shape of a `batch`x... tensor) the tracker records the
 * elements as symbols instead, so the Reshape keeps `batch`.
 *
 * Inference is idempotent: a produced value loses its folded data at the
 * start of every run (unless a Constant node produced it) and gets it back
 * from evaluation, and the type a value already carries is treated as a
 * declaration to merge with, which is what an earlier run left there.
 *
 * The symbolic tracker's table lives for one run and is reached through a
 * thread-local pointer, so the family functions keep the plain (g, node)
 * signature; two graphs may be inferred at once on two threads.
 */
#include "infer_impl.h"

#include <stdlib.h>
#include <string.h>

/* ---- the per-run context ------------------------------------------------ */

struct rl_symvec {
	int n;
	struct rl_symint e[RL_SYMVEC_MAX];
};

struct rl_infer_ctx {
	struct rl_symvec **sv; /* per value; NULL when nothing tracked */
	const void **prev;     /* per value: folded data before this run */
	size_t *prevn;         /* and its size */
	uint32_t nsv;
};

static _Thread_local struct rl_infer_ctx *rl_cur;

void rl_infer_track(uint32_t v, const struct rl_symint *e, int n)
{
	struct rl_infer_ctx *c = rl_cur;
	if (!c || v >= c->nsv || n < 0 || n > RL_SYMVEC_MAX)
		return;
	if (!c->sv[v]) {
		c->sv[v] = malloc(sizeof(*c->sv[v]));
		if (!c->sv[v])
			return;
	}
	c->sv[v]->n = n;
	memcpy(c->sv[v]->e, e, (size_t)n * sizeof(*e));
}

const void *rl_infer_prev_data(uint32_t v, size_t *nbytes)
{
	struct rl_infer_ctx *c = rl_cur;
	if (!c || v >= c->nsv || !c->prev[v])
		return NULL;
	*nbytes = c->prevn[v];
	return c->prev[v];
}

int rl_infer_symints(const struct rl_graph *g, uint32_t v,
                     struct rl_symint *out, int max)
{
	if (v == RL_NONE)
		return -1;
	const struct rl_value *val = &g->values[v];
	if (val->flags & RL_VAL_CONST) {
		if ((!rl_dtype_is_int(val->dtype) && val->dtype != RL_DT_BOOL) ||
		    val->shape.rank > 1 || !val->data)
			return -1;
		int64_t ne = rl_shape_numel(&val->shape);
		if (ne < 0 || ne > max ||
		    val->nbytes < (size_t)ne * rl_dtype_size(val->dtype))
			return -1;
		for (int64_t i = 0; i < ne; i++)
			out[i] = (struct rl_symint){rl_value_get_int(g, v, i), NULL};
		return (int)ne;
	}
	struct rl_infer_ctx *c = rl_cur;
	if (!c || v >= c->nsv || !c->sv[v] || c->sv[v]->n > max)
		return -1;
	memcpy(out, c->sv[v]->e, (size_t)c->sv[v]->n * sizeof(*out));
	return c->sv[v]->n;
}

/* ---- dims and shapes ---------------------------------------------------- */

struct rl_dim rl_dim_unk(struct rl_graph *g, uint32_t node, int out, int axis)
{
	char buf[64];
	if (out > 0)
		snprintf(buf, sizeof(buf), "unk_%u_%d_%d", node, out, axis);
	else
		snprintf(buf, sizeof(buf), "unk_%u_%d", node, axis);
	/* an earlier run left the same name on this output: reuse it rather
	 * than grow the arena on every re-inference */
	const struct rl_node *n = &g->nodes[node];
	if (out < n->nout && n->out[out] != RL_NONE) {
		const struct rl_shape *s = &g->values[n->out[out]].shape;
		if (axis >= 0 && axis < s->rank && s->d[axis].v < 0 && s->d[axis].sym &&
		    strcmp(s->d[axis].sym, buf) == 0)
			return s->d[axis];
	}
	return (struct rl_dim){RL_DIM_SYMBOLIC, rl_arena_strdup(g, buf)};
}

bool rl_dim_is_unk(const struct rl_dim *d)
{
	return d->v < 0 && (!d->sym || strncmp(d->sym, "unk_", 4) == 0);
}

struct rl_dim rl_dim_prod(struct rl_graph *g, uint32_t node, int out, int axis,
                          const struct rl_dim *d, int n)
{
	int64_t p = 1;
	int nsym = 0, isym = -1;
	for (int i = 0; i < n; i++) {
		if (d[i].v < 0) {
			nsym++;
			isym = i;
		} else if (d[i].v == 0) {
			return rl_dim_num(0); /* zero wins over any symbol */
		} else if (p > RL_DIM_LIMIT / d[i].v) {
			p = RL_DIM_LIMIT + 1; /* rl_infer_set reports it */
		} else {
			p *= d[i].v;
		}
	}
	if (nsym == 0)
		return rl_dim_num(p);
	if (nsym == 1 && p == 1)
		return d[isym];
	return rl_dim_unk(g, node, out, axis);
}

bool rl_axis_norm(int64_t axis, int rank, bool inclusive, int *out)
{
	/* [-rank, rank-1], or [-rank, rank] for Flatten-style split points;
	 * a negative axis counts from the back either way */
	int64_t lo = -(int64_t)rank, hi = inclusive ? rank : rank - 1;
	if (axis < lo || axis > hi)
		return false;
	*out = (int)(axis < 0 ? axis + rank : axis);
	return true;
}

const char *rl_sstr(const struct rl_shape *s, char *buf)
{
	return rl_shape_str(s, buf, RL_SSTR);
}

enum rl_status rl_infer_broadcast(struct rl_graph *g, uint32_t node,
                                  const struct rl_shape *a,
                                  const struct rl_shape *b,
                                  struct rl_shape *out)
{
	if (a->rank < 0 || b->rank < 0) {
		out->rank = -1;
		return RL_OK;
	}
	if (rl_shape_broadcast(a, b, out))
		return RL_OK;
	char sa[RL_SSTR], sb[RL_SSTR];
	int r = a->rank > b->rank ? a->rank : b->rank;
	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		if (ia < 0 || ib < 0)
			continue;
		int64_t da = a->d[ia].v, db = b->d[ib].v;
		if (da >= 0 && db >= 0 && da != db && da != 1 && db != 1)
			return rl_graph_error(g, &g->nodes[node], RL_ERR_SHAPE,
			                      "shapes %s and %s do not broadcast: dimension %lld "
			                      "vs %lld", rl_sstr(a, sa), rl_sstr(b, sb),
			                      (long long)da, (long long)db);
	}
	return rl_graph_error(g, &g->nodes[node], RL_ERR_SHAPE,
	                      "shapes %s and %s do not broadcast", rl_sstr(a, sa),
	                      rl_sstr(b, sb));
}

/* ---- setting an output -------------------------------------------------- */

enum rl_status rl_infer_set(struct rl_graph *g, uint32_t node, int k,
                            enum rl_dtype dt, const struct rl_shape *s)
{
	struct rl_node *n = &g->nodes[node];
	if (k >= n->nout || n->out[k] == RL_NONE)
		return RL_OK;
	uint32_t v = n->out[k];
	struct rl_shape sh = *s;
	char b1[RL_SSTR], b2[RL_SSTR];
	if (sh.rank > RL_MAX_RANK)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "output %d would have rank %d; rlopt handles rank <= %d",
		                      k, sh.rank, RL_MAX_RANK);
	if (sh.rank < -1)
		sh.rank = -1;
	int64_t numel = 1;
	for (int i = 0; i < sh.rank; i++) {
		struct rl_dim *d = &sh.d[i];
		if (d->v == RL_DIM_SYMBOLIC) {
			if (!d->sym)
				*d = rl_dim_unk(g, node, k, i);
			continue;
		}
		d->sym = NULL;
		if (d->v < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "output %d would have negative dimension %lld "
			                      "on axis %d", k, (long long)d->v, i);
		if (d->v > RL_DIM_LIMIT)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "output %d would have dimension %lld on axis %d, "
			                      "over the limit of 2^40", k, (long long)d->v, i);
		if (d->v && numel > INT64_MAX / d->v)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "output %d would have more than 2^63 elements", k);
		numel *= d->v;
	}
	struct rl_value *val = &g->values[v];
	if (dt == RL_DT_UNDEFINED)
		dt = val->dtype;
	if (val->dtype != RL_DT_UNDEFINED && val->dtype != dt)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "output '%s' is declared %s but inferred %s", val->name,
		                      rl_dtype_name(val->dtype), rl_dtype_name(dt));
	const struct rl_shape *dec = &val->shape;
	if (dec->rank >= 0 && sh.rank < 0) {
		sh = *dec; /* inference knows nothing: keep the declaration */
	} else if (dec->rank >= 0 && sh.rank >= 0) {
		if (rl_shape_is_static(dec) && rl_shape_is_static(&sh) &&
		    !rl_shape_equal(dec, &sh))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "output '%s' is declared with shape %s but "
			                      "inferred %s", val->name, rl_sstr(dec, b1),
			                      rl_sstr(&sh, b2));
		if (dec->rank == sh.rank) {
			for (int i = 0; i < sh.rank; i++) {
				const struct rl_dim *dd = &dec->d[i];
				if (rl_dim_differ(*dd, sh.d[i]))
					return rl_graph_error(
						g, n, RL_ERR_SHAPE,
						"output '%s' is declared with shape %s but inferred %s",
						val->name, rl_sstr(dec, b1), rl_sstr(&sh, b2));
				/* a declared number or a user's symbol beats "unknown" */
				if (rl_dim_is_unk(&sh.d[i]) && !rl_dim_is_unk(dd))
					sh.d[i] = *dd;
			}
		}
	}
	val->dtype = dt;
	val->shape = sh;
	return RL_OK;
}

/* ---- dtype checks ------------------------------------------------------- */

static bool tc_ok(enum rl_dtype t, enum rl_tc tc)
{
	switch (tc) {
	case RL_TC_ANY: return t != RL_DT_UNDEFINED && t < RL_DT_COUNT_;
	case RL_TC_NUM: return rl_dtype_is_float(t) || rl_dtype_is_int(t);
	case RL_TC_NUMBOOL: return rl_dtype_is_numeric(t);
	case RL_TC_FLOAT: return rl_dtype_is_float(t);
	case RL_TC_SIGNED: return rl_dtype_is_signed(t);
	case RL_TC_INT: return rl_dtype_is_int(t);
	case RL_TC_UINT: return rl_dtype_is_int(t) && !rl_dtype_is_signed(t);
	case RL_TC_BOOL: return t == RL_DT_BOOL;
	case RL_TC_INDEX: return t == RL_DT_INT32 || t == RL_DT_INT64;
	}
	return false;
}

static const char *tc_name(enum rl_tc tc)
{
	switch (tc) {
	case RL_TC_ANY: return "a tensor";
	case RL_TC_NUM: return "a numeric (integer or floating-point) tensor";
	case RL_TC_NUMBOOL: return "a numeric or bool tensor";
	case RL_TC_FLOAT: return "a floating-point tensor";
	case RL_TC_SIGNED: return "a floating-point or signed integer tensor";
	case RL_TC_INT: return "an integer tensor";
	case RL_TC_UINT: return "an unsigned integer tensor";
	case RL_TC_BOOL: return "a bool tensor";
	case RL_TC_INDEX: return "an int32 or int64 tensor";
	}
	return "?";
}

enum rl_status rl_infer_dtype_in(struct rl_graph *g, uint32_t node, int slot,
                                 enum rl_tc tc)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *v = rl_infer_in(g, n, slot);
	if (!v || tc_ok(v->dtype, tc))
		return RL_OK;
	/* complex and strings are valid ONNX that rlopt does not compute on */
	enum rl_status st = (v->dtype == RL_DT_STRING || v->dtype == RL_DT_COMPLEX64 ||
	                     v->dtype == RL_DT_COMPLEX128 || v->dtype >= RL_DT_COUNT_)
	                            ? RL_ERR_UNSUPPORTED
	                            : RL_ERR_SHAPE;
	return rl_graph_error(g, n, st, "input %d '%s' is %s; %s takes %s here", slot,
	                      v->name, rl_dtype_name(v->dtype),
	                      rl_op_table[n->op].name, tc_name(tc));
}

enum rl_status rl_infer_dtype_same(struct rl_graph *g, uint32_t node, int a,
                                   int b)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *va = rl_infer_in(g, n, a), *vb = rl_infer_in(g, n, b);
	if (!va || !vb || va->dtype == vb->dtype)
		return RL_OK;
	return rl_graph_error(g, n, RL_ERR_SHAPE,
	                      "inputs %d '%s' (%s) and %d '%s' (%s) must have the same "
	                      "dtype", a, va->name, rl_dtype_name(va->dtype), b, vb->name,
	                      rl_dtype_name(vb->dtype));
}

/* ---- integer lists ------------------------------------------------------ */

int rl_infer_list(struct rl_graph *g, uint32_t node, const char *attr,
                  int slot, int since, int64_t *out, int max,
                  enum rl_status *st)
{
	struct rl_node *n = &g->nodes[node];
	bool from_input = !attr || (since > 0 && n->opset >= since);
	if (!from_input) {
		const struct rl_attr *a = rl_node_attr(n, attr);
		if (!a)
			return RL_LIST_ABSENT;
		if (a->kind == RL_ATTR_INT) { /* a lone int where ints belong */
			out[0] = a->i;
			return 1;
		}
		if (a->kind != RL_ATTR_INTS) {
			*st = rl_graph_error(g, n, RL_ERR_SHAPE,
			                     "attribute '%s' must be a list of integers", attr);
			return RL_LIST_ERROR;
		}
		if (a->n > max || a->n < 0 || (a->n > 0 && !a->ints)) {
			*st = rl_graph_error(g, n, RL_ERR_SHAPE,
			                     "attribute '%s' has %d entries, at most %d fit",
			                     attr, a->n, max);
			return RL_LIST_ERROR;
		}
		memcpy(out, a->ints, (size_t)a->n * sizeof(*out));
		return a->n;
	}
	uint32_t v = rl_node_in(n, slot);
	if (v == RL_NONE)
		return RL_LIST_ABSENT;
	struct rl_value *val = &g->values[v];
	if (!rl_dtype_is_int(val->dtype)) {
		*st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                     "input %d '%s' is %s; it must be an integer tensor",
		                     slot, val->name, rl_dtype_name(val->dtype));
		return RL_LIST_ERROR;
	}
	if (val->shape.rank > 1) {
		char b[RL_SSTR];
		*st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                     "input %d '%s' has shape %s; it must be 1-D", slot,
		                     val->name, rl_sstr(&val->shape, b));
		return RL_LIST_ERROR;
	}
	if (!rl_value_is_const(g, v))
		return RL_LIST_UNKNOWN;
	int64_t ne = rl_shape_numel(&val->shape);
	if (ne > max) {
		*st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                     "input %d '%s' has %lld entries, at most %d fit", slot,
		                     val->name, (long long)ne, max);
		return RL_LIST_ERROR;
	}
	if (ne < 0 || !val->data ||
	    val->nbytes < (size_t)ne * rl_dtype_size(val->dtype))
		return RL_LIST_UNKNOWN;
	for (int64_t i = 0; i < ne; i++)
		out[i] = rl_value_get_int(g, v, i);
	return (int)ne;
}

/* ---- input and output counts per opset ---------------------------------- */

/* ops.def gives the count over every opset; narrow it to the node's. */
static void op_arity(const struct rl_node *n, int *imin, int *imax, int *omin,
                     int *omax)
{
	const struct rl_op_info *oi = &rl_op_table[n->op];
	int v = n->opset;
	*imin = oi->in_min;
	*imax = oi->in_max;
	*omin = oi->out_min;
	*omax = oi->out_max;
	switch (n->op) {
	case RL_OP_Clip: *imax = v < 11 ? 1 : 3; break;      /* min/max inputs at 11 */
	case RL_OP_Dropout: *imax = v < 12 ? 1 : 3; break;   /* ratio input at 12 */
	case RL_OP_Gemm: *imin = v < 11 ? 3 : 2; break;      /* C optional at 11 */
	case RL_OP_Reshape:
		if (v < 5)
			*imax = 1; /* shape attribute */
		else
			*imin = 2;
		break;
	case RL_OP_Squeeze: *imax = v < 13 ? 1 : 2; break;   /* axes input at 13 */
	case RL_OP_Unsqueeze: *imin = *imax = v < 13 ? 1 : 2; break;
	case RL_OP_Split: *imax = v < 13 ? 1 : 2; break;     /* split input at 13 */
	case RL_OP_Slice:
		if (v < 10)
			*imax = 1; /* starts/ends/axes attributes */
		else
			*imin = 3;
		break;
	case RL_OP_Pad:
		if (v < 11) {
			*imax = 1;
		} else {
			*imin = 2;
			*imax = v < 18 ? 3 : 4; /* axes input at 18 */
		}
		break;
	case RL_OP_Tile: *imin = *imax = 2; break;
	case RL_OP_ReduceSum: *imax = v < 13 ? 1 : 2; break;
	case RL_OP_ReduceMean: case RL_OP_ReduceMax: case RL_OP_ReduceMin:
	case RL_OP_ReduceProd: case RL_OP_ReduceL1: case RL_OP_ReduceL2:
	case RL_OP_ReduceSumSquare: case RL_OP_ReduceLogSum:
	case RL_OP_ReduceLogSumExp:
		*imax = v < 18 ? 1 : 2;
		break;
	case RL_OP_BatchNormalization: *omax = v < 14 ? 5 : 3; break;
	case RL_OP_MaxPool: *omax = v < 8 ? 1 : 2; break;
	case RL_OP_TopK: *imin = *imax = v < 10 ? 1 : 2; break; /* K input at 10 */
	case RL_OP_Resize:                                 /* roi and sizes at 11 */
		if (v < 11)
			*imin = *imax = 2;
		break;
	case RL_OP_Upsample: *imin = *imax = v < 9 ? 1 : 2; break;    /* scales input at 9 */
	default: break;
	}
}

static enum rl_status check_node(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	if (n->op >= RL_OP_COUNT_)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "unknown operator");
	const char *dom = n->domain && strcmp(n->domain, "ai.onnx") != 0 ? n->domain : "";
	if (!rl_op_in_domain(n->op, dom))
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "operator domain '%s' is not supported", n->domain);
	if (n->opset < 7 && !*dom)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "opset %d is older than 7, the oldest rlopt supports",
		                      n->opset);
	int imin, imax, omin, omax;
	op_arity(n, &imin, &imax, &omin, &omax);
	const char *name = rl_op_table[n->op].name;
	if (n->nin < imin || (imax >= 0 && n->nin > imax)) {
		if (imin == imax)
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "has %d inputs; %s-%d takes %d", n->nin, name,
			                      n->opset, imin);
		if (imax < 0)
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "has %d inputs; %s-%d takes at least %d", n->nin,
			                      name, n->opset, imin);
		return rl_graph_error(g, n, RL_ERR_INVALID,
		                      "has %d inputs; %s-%d takes %d to %d", n->nin, name,
		                      n->opset, imin, imax);
	}
	if (n->nout < omin || (omax >= 0 && n->nout > omax))
		return rl_graph_error(g, n, RL_ERR_INVALID,
		                      "has %d outputs; %s-%d gives %d to %d", n->nout, name,
		                      n->opset, omin, omax < 0 ? 1 << 30 : omax);
	for (int i = 0; i < n->nin; i++) {
		uint32_t v = n->in[i];
		if (v == RL_NONE) {
			if (i < imin || imax < 0)
				return rl_graph_error(g, n, RL_ERR_INVALID,
				                      "required input %d is missing", i);
			continue;
		}
		if (v >= g->nvalues)
			return rl_graph_error(g, n, RL_ERR_INVALID, "input %d out of range", i);
		struct rl_value *val = &g->values[v];
		if (val->dtype == RL_DT_UNDEFINED)
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "input %d '%s' has no dtype (not produced by a "
			                      "node, a graph input or an initializer?)", i,
			                      val->name);
		if (val->shape.rank > RL_MAX_RANK)
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                      "input %d '%s' has rank %d; rlopt handles rank <= %d",
			                      i, val->name, val->shape.rank, RL_MAX_RANK);
		/* the families do dim arithmetic in int64: bounded dims keep
		 * every product of a dim with an attribute (<= 2^20) in range */
		for (int d = 0; d < val->shape.rank; d++) {
			int64_t dv = val->shape.d[d].v;
			if ((dv < 0 && dv != RL_DIM_SYMBOLIC) || dv > RL_DIM_LIMIT)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "input %d '%s' has dimension %lld on axis %d",
				                      i, val->name, (long long)dv, d);
		}
	}
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] != RL_NONE && n->out[i] >= g->nvalues)
			return rl_graph_error(g, n, RL_ERR_INVALID, "output %d out of range", i);
	return RL_OK;
}

/* ---- the driver --------------------------------------------------------- */

typedef enum rl_status (*rl_infer_fn)(struct rl_graph *, uint32_t);

/* one entry per family (RL_FAMILIES, ir/ir.h): rl_infer_<file> */
static const rl_infer_fn rl_family_infer[RL_FAM_COUNT_] = {
#define X(E, file, name) [RL_FAM_##E] = rl_infer_##file,
	RL_FAMILIES(X)
#undef X
};

/* Input 0 against the tc column of ops.def (the latest opset's class; a
 * family narrows it for older opsets and checks its other inputs), then
 * the family's own inference. */
static enum rl_status infer_family(struct rl_graph *g, uint32_t node)
{
	const struct rl_op_info *oi = &rl_op_table[g->nodes[node].op];
	if (oi->tc != RL_TC_ANY) {
		enum rl_status st = rl_infer_dtype_in(g, node, 0, oi->tc);
		if (st != RL_OK)
			return st;
	}
	return rl_family_infer[oi->family](g, node);
}

/*
 * Backward fill: where a reduction's axes (or another shape parameter) are a
 * runtime input, forward inference leaves its output with unk_* dims, but a
 * chain of shape-preserving unary ops often leads from it to a graph output
 * whose shape the model declares (the `_expanded` function tests do this).
 * Copy such a static shape back through the chain; the next forward pass
 * then takes it as the declared shape. Returns true if anything changed.
 */
static bool fill_backward(struct rl_graph *g)
{
	bool changed = false;
	for (uint32_t k = g->norder; k-- > 0;) {
		struct rl_node *n = &g->nodes[g->order[k]];
		const struct rl_op_info *oi = &rl_op_table[n->op];
		if (!(oi->flags & RL_OPF_UNARY) || oi->family != RL_FAM_ELEMWISE ||
		    n->nout < 1 || n->out[0] == RL_NONE || n->nin < 1 || n->in[0] == RL_NONE)
			continue;
		struct rl_value *out = &g->values[n->out[0]], *in = &g->values[n->in[0]];
		if (!rl_shape_is_static(&out->shape) || in->producer == RL_NONE ||
		    rl_shape_is_static(&in->shape) || in->shape.rank != out->shape.rank)
			continue;
		bool ok = true;
		for (int d = 0; d < in->shape.rank && ok; d++) {
			const struct rl_dim *id = &in->shape.d[d];
			/* only dims inference could not know; user symbols stay */
			ok = id->v == out->shape.d[d].v ||
			     (id->v < 0 && id->sym && strncmp(id->sym, "unk_", 4) == 0);
		}
		if (!ok)
			continue;
		in->shape = out->shape;
		changed = true;
	}
	return changed;
}

static enum rl_status infer_forward(struct rl_graph *g);

enum rl_status rl_graph_infer(struct rl_graph *g)
{
	if (g->lower) {
		enum rl_status (*lower)(struct rl_graph *, const void *) = g->lower;
		g->lower = NULL;
		enum rl_status ls = lower(g, g->lower_arg);
		if (ls != RL_OK)
			return ls;
	}
	enum rl_status st = infer_forward(g);
	if (st == RL_OK && fill_backward(g))
		st = infer_forward(g);
	return st;
}

static enum rl_status infer_forward(struct rl_graph *g)
{
	enum rl_status st = rl_graph_toposort(g);
	if (st != RL_OK)
		return st;

	struct rl_infer_ctx ctx = {
		.sv = calloc(g->nvalues + 1, sizeof(struct rl_symvec *)),
		.prev = calloc(g->nvalues + 1, sizeof(const void *)),
		.prevn = calloc(g->nvalues + 1, sizeof(size_t)),
		.nsv = g->nvalues,
	};
	if (!ctx.sv || !ctx.prev || !ctx.prevn) {
		free(ctx.sv);
		free(ctx.prev);
		free(ctx.prevn);
		return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory in shape inference");
	}

	/* Folded data of produced values is recomputed below (remembering the
	 * old block for reuse); a Constant node's output keeps its tensor. */
	for (uint32_t v = 0; v < g->nvalues; v++) {
		struct rl_value *val = &g->values[v];
		uint32_t p = val->producer;
		if (p == RL_NONE || p >= g->nnodes || g->nodes[p].dead)
			continue;
		if (g->nodes[p].op == RL_OP_Constant)
			continue;
		if (val->flags & RL_VAL_CONST) {
			ctx.prev[v] = val->data;
			ctx.prevn[v] = val->nbytes;
			val->flags &= ~(unsigned)RL_VAL_CONST;
			val->data = NULL;
			val->nbytes = 0;
		}
	}

	struct rl_infer_ctx *saved = rl_cur;
	rl_cur = &ctx;

	for (uint32_t k = 0; k < g->norder && st == RL_OK; k++) {
		uint32_t node = g->order[k];
		st = check_node(g, node);
		if (st == RL_OK) /* a data-dependent extent ends at a graph output */
			st = rl_detect_check_inputs(g, node);
		if (st != RL_OK)
			break;
		st = infer_family(g, node);
		if (st != RL_OK)
			break;
		if (!rl_eval_node(g, node))
			rl_eval_symbolic(g, node);
	}

	rl_cur = saved;
	for (uint32_t v = 0; v < ctx.nsv; v++)
		free(ctx.sv[v]);
	free(ctx.sv);
	free(ctx.prev);
	free(ctx.prevn);
	return st;
}

/* ---- one node, outside a run (frontends/onnx/onnx_subgraph.c) ---------- */

/* Check, infer and evaluate one node whose inputs are already inferred: the
 * control-flow lowering decides trip counts and branches from these results
 * while it builds the graph. No symbolic tracking outside a run. */
enum rl_status rl_infer_node(struct rl_graph *g, uint32_t node)
{
	enum rl_status st = check_node(g, node);
	if (st == RL_OK)
		st = infer_family(g, node);
	if (st == RL_OK)
		rl_eval_node(g, node);
	return st;
}

/* ---- binding symbols ---------------------------------------------------- */

static int bind_name(struct rl_graph *g, const char *sym, int64_t size)
{
	int count = 0;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		struct rl_shape *s = &g->values[v].shape;
		for (int i = 0; i < s->rank; i++)
			if (s->d[i].v < 0 && s->d[i].sym && strcmp(s->d[i].sym, sym) == 0) {
				s->d[i] = rl_dim_num(size);
				count++;
			}
	}
	return count;
}

bool rl_sym_looks_batch(const char *sym)
{
	static const char *names[] = {"batch", "batch_size", "N", "n", "B", "b", "bs",
	                              "unk__0", "None", "dynamic_batch"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(sym, names[i]) == 0)
			return true;
	return strstr(sym, "batch") != NULL;
}

char *rl_unbound_hint(const struct rl_graph *g, const struct rl_shape *s, char *buf, size_t n)
{
	int ax = -1;
	for (int d = 0; d < s->rank && ax < 0; d++)
		if (s->d[d].v < 0)
			ax = d;
	const char *sym = ax >= 0 ? s->d[ax].sym : NULL;
	if (ax < 0) {
		snprintf(buf, n, "its rank is unknown; bind the model's inputs with --shape NAME=DIMS");
		return buf;
	}
	if (!sym) {
		snprintf(buf, n, "its axis %d is unknown until run time; bind the model's inputs "
		         "with --shape NAME=DIMS", ax);
		return buf;
	}
	/* --batch binds a symbol on axis 0 of an input, or one named like a batch
	 * (tools/rlopt.c); only then is it worth naming */
	bool batch = rl_sym_looks_batch(sym);
	for (uint32_t i = 0; g && !batch && i < g->ninputs; i++) {
		const struct rl_shape *is = &g->values[g->inputs[i]].shape;
		batch = is->rank > 0 && is->d[0].v < 0 && is->d[0].sym && !strcmp(is->d[0].sym, sym);
	}
	snprintf(buf, n, "dimension '%s' (axis %d) is unbound; bind it with %s--dim %s=N or "
	         "--shape NAME=DIMS", sym, ax, batch ? "--batch N, " : "", sym);
	return buf;
}

int rl_graph_bind_dim(struct rl_graph *g, const char *sym, int64_t size)
{
	if (size < 0 || size > RL_DIM_LIMIT) {
		rl_graph_error(g, NULL, RL_ERR_INVALID,
		               "cannot bind %s to %lld: a size must be in [0, 2^40]",
		               sym ? sym : "the batch", (long long)size);
		return -1;
	}
	if (sym)
		return bind_name(g, sym, size);
	/* the batch: axis 0 of every graph input, and each symbol found there
	 * wherever else it appears */
	const char *names[64];
	int nnames = 0, count = 0;
	for (uint32_t i = 0; i < g->ninputs; i++) {
		struct rl_shape *s = &g->values[g->inputs[i]].shape;
		if (s->rank < 1 || s->d[0].v >= 0)
			continue;
		const char *nm = s->d[0].sym;
		if (!nm) {
			s->d[0] = rl_dim_num(size);
			count++;
			continue;
		}
		bool seen = false;
		for (int k = 0; k < nnames; k++)
			seen |= strcmp(names[k], nm) == 0;
		if (!seen && nnames < 64)
			names[nnames++] = nm;
	}
	for (int k = 0; k < nnames; k++)
		count += bind_name(g, names[k], size);
	return count;
}

enum rl_status rl_graph_bind_input(struct rl_graph *g, const char *name,
                                   const struct rl_shape *s)
{
	uint32_t v = RL_NONE;
	for (uint32_t i = 0; i < g->ninputs; i++)
		if (strcmp(g->values[g->inputs[i]].name, name) == 0) {
			v = g->inputs[i];
			break;
		}
	if (v == RL_NONE)
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "no graph input named %s", name);
	char b1[RL_SSTR], b2[RL_SSTR];
	if (s->rank < 0 || s->rank > RL_MAX_RANK)
		return rl_graph_error(g, NULL, RL_ERR_INVALID,
		                      "cannot bind input %s to rank %d", name, s->rank);
	for (int i = 0; i < s->rank; i++)
		if ((s->d[i].v < 0 && (s->d[i].v != RL_DIM_SYMBOLIC || !s->d[i].sym)) ||
		    s->d[i].v > RL_DIM_LIMIT)
			return rl_graph_error(g, NULL, RL_ERR_INVALID,
			                      "cannot bind input %s: dimension %d is out of "
			                      "range", name, i);
	struct rl_shape cur = g->values[v].shape;
	if (cur.rank >= 0 && cur.rank != s->rank)
		return rl_graph_error(g, NULL, RL_ERR_SHAPE,
		                      "input %s has shape %s; cannot bind it to %s (rank %d, "
		                      "not %d)", name, rl_sstr(&cur, b1), rl_sstr(s, b2),
		                      s->rank, cur.rank);
	for (int i = 0; i < cur.rank; i++)
		if (rl_dim_differ(cur.d[i], s->d[i]))
			return rl_graph_error(g, NULL, RL_ERR_SHAPE,
			                      "input %s has shape %s; cannot bind it to %s "
			                      "(dimension %d is fixed at %lld)", name,
			                      rl_sstr(&cur, b1), rl_sstr(s, b2), i,
			                      (long long)cur.d[i].v);
	/* one symbol on two axes must get one size */
	for (int i = 0; i < cur.rank; i++)
		for (int j = i + 1; j < cur.rank; j++)
			if (cur.d[i].v < 0 && cur.d[i].sym && cur.d[j].v < 0 && cur.d[j].sym &&
			    strcmp(cur.d[i].sym, cur.d[j].sym) == 0 && s->d[i].v >= 0 &&
			    s->d[j].v >= 0 && s->d[i].v != s->d[j].v)
				return rl_graph_error(g, NULL, RL_ERR_SHAPE,
				                      "input %s: dimension '%s' is bound to %lld (axis %d) "
				                      "and to %lld (axis %d)", name, cur.d[i].sym,
				                      (long long)s->d[i].v, i, (long long)s->d[j].v, j);
	/* A symbol bound here is bound everywhere it appears, so two inputs
	 * that share `batch` stay consistent (and a second, different binding
	 * of the same symbol fails above as a fixed dimension). */
	for (int i = 0; i < cur.rank; i++)
		if (cur.d[i].v < 0 && cur.d[i].sym && s->d[i].v >= 0)
			bind_name(g, cur.d[i].sym, s->d[i].v);
	g->values[v].shape = *s;
	for (int i = 0; i < s->rank; i++)
		if (s->d[i].v >= 0)
			g->values[v].shape.d[i].sym = NULL;
	return RL_OK;
}

/* ---- binding values ------------------------------------------------------ */

enum rl_status rl_graph_bind_value(struct rl_graph *g, const char *name, enum rl_dtype dt,
                                   const struct rl_shape *s, const void *data,
                                   size_t nbytes)
{
	uint32_t pos = RL_NONE;
	for (uint32_t i = 0; i < g->ninputs; i++)
		if (strcmp(g->values[g->inputs[i]].name, name) == 0) {
			pos = i;
			break;
		}
	if (pos == RL_NONE)
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "no graph input named '%s'", name);
	for (uint32_t k = 0; k < g->nbindings; k++)
		if (g->bindings[k].input == pos)
			return rl_graph_error(g, NULL, RL_ERR_INVALID, "input '%s' is bound twice", name);
	uint32_t in = g->inputs[pos];
	if (g->values[in].dtype != dt)
		return rl_graph_error(g, NULL, RL_ERR_SHAPE, "input '%s' is %s; the value is %s",
		                      name, rl_dtype_name(g->values[in].dtype), rl_dtype_name(dt));
	if (!rl_shape_is_static(s) || (size_t)rl_shape_numel(s) * rl_dtype_size(dt) != nbytes)
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "the value for input '%s' has %zu "
		                      "bytes, not one per element of its shape", name, nbytes);
	enum rl_status st = rl_graph_bind_input(g, name, s);
	if (st != RL_OK)
		return st;
	void *copy = rl_arena_alloc(g, nbytes ? nbytes : 1);
	if (nbytes)
		memcpy(copy, data, nbytes);
	struct rl_binding *nb = rl_arena_alloc(g, (g->nbindings + 1) * sizeof(*nb));
	if (g->nbindings)
		memcpy(nb, g->bindings, g->nbindings * sizeof(*nb));
	nb[g->nbindings++] = (struct rl_binding){pos, copy, nbytes};
	g->bindings = nb;
	/* A constant of the same name: the name index maps the name to the
	 * later value, so what resolves names afterwards (the control-flow
	 * lowering's outer scope) reads the constant too. */
	struct rl_shape shape = g->values[g->inputs[pos]].shape; /* values may move */
	uint32_t c = rl_graph_add_value(g, name, dt, &shape);
	rl_value_set_data(g, c, copy, nbytes);
	rl_graph_replace_uses(g, g->inputs[pos], c);
	return RL_OK;
}
