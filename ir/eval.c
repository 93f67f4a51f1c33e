/*
 * eval.c - compile-time evaluation of small nodes: the shape arithmetic
 * that exporters emit (Shape -> Gather -> Unsqueeze -> Concat -> Reshape),
 * constants, and small elementwise math on constants.
 *
 * rl_eval_node() runs after a node's outputs are inferred. It computes the
 * output when every present input is constant (Shape and Size need only a
 * static input shape, Constant nothing), the op is in the list below, the
 * output is at most 65536 elements and no input is over 1M elements. The
 * result lives in memory the graph owns (or borrows the input's bytes for
 * views such as Reshape) and the output becomes RL_VAL_CONST while keeping
 * its producer: "known at compile time", not "an initializer".
 *
 * Elementwise semantics are ir/scalar.c's table (the C backend's scalar
 * expressions, which are ONNX's, not C's): float32 arithmetic is done in
 * float (not double), float16/bfloat16 values are stored as uint16 bits and
 * computed in float, integer arithmetic wraps at the dtype's width, integer
 * Div truncates, Mod follows the sign of the divisor unless fmod=1. Which
 * ops are evaluated here at all is the fold column of ir/ops.def (EVAL).
 * Where ONNX leaves a result undefined (integer division by zero, a float
 * cast to an integer it does not fit) the node is simply not evaluated: the
 * runtime code then computes whatever the target does.
 *
 * rl_eval_symbolic() is the fallback when the inputs are only known as
 * symbols (Shape of a `batch`x3 tensor gives [batch, 3]): it records the
 * elements for rl_infer_symints(), and when they all come out as numbers
 * (Gather of the static part) it attaches them as constant data.
 */
#include "infer_impl.h"
#include "quant.h"
#include "scalar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RL_EVAL_MAX_OUT 65536     /* elements an evaluated output may have */
#define RL_EVAL_MAX_IN (1 << 20)  /* elements an input to evaluation may have */
#define RL_EVAL_MAX_VARIADIC 16   /* inputs of Min/Max evaluated */

/* ---- elements ----------------------------------------------------------- */

/* How a dtype computes: float32 (also float16/bfloat16), float64, int64
 * (every other integer and bool, wrapped on store), uint64. */
enum rl_ek {
	RL_EK_F32,  /* float arithmetic */
	RL_EK_F64,  /* double arithmetic */
	RL_EK_I64,  /* int64 arithmetic, narrowed on store */
	RL_EK_U64,  /* uint64 arithmetic */
	RL_EK_NONE, /* string, complex: not evaluated */
};

static enum rl_ek ekind(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_FLOAT: case RL_DT_FLOAT16: case RL_DT_BFLOAT16:
		return RL_EK_F32;
	case RL_DT_DOUBLE:
		return RL_EK_F64;
	case RL_DT_UINT64:
		return RL_EK_U64;
	case RL_DT_INT8: case RL_DT_INT16: case RL_DT_INT32: case RL_DT_INT64:
	case RL_DT_UINT8: case RL_DT_UINT16: case RL_DT_UINT32: case RL_DT_BOOL:
		return RL_EK_I64;
	default:
		return RL_EK_NONE;
	}
}

/* Integer range of a dtype, for float-to-int casts. */
static void int_range(enum rl_dtype t, double *lo, double *hi)
{
	switch (t) {
	case RL_DT_INT8: *lo = -128; *hi = 127; break;
	case RL_DT_INT16: *lo = -32768; *hi = 32767; break;
	case RL_DT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; break;
	case RL_DT_UINT8: *lo = 0; *hi = 255; break;
	case RL_DT_UINT16: *lo = 0; *hi = 65535; break;
	case RL_DT_UINT32: *lo = 0; *hi = 4294967295.0; break;
	case RL_DT_UINT64: *lo = 0; *hi = 18446744073709549568.0; break;
	default: /* int64: the largest double below 2^63 */
		*lo = -9223372036854775808.0;
		*hi = 9223372036854774784.0;
		break;
	}
}

/* Cast one element; false where ONNX leaves the result undefined. */
static bool convert(union rl_scv v, enum rl_ek from, enum rl_dtype to,
                    union rl_scv *out)
{
	enum rl_ek k = ekind(to);
	union rl_scv r;
	r.u = 0;
	if (k == RL_EK_F32 || k == RL_EK_F64) {
		double x = from == RL_EK_F32 ? v.f : from == RL_EK_F64 ? v.d
		         : from == RL_EK_U64 ? (double)v.u : (double)v.i;
		if (k == RL_EK_F32)
			/* int -> float rounds once, not via double */
			r.f = from == RL_EK_F32 ? v.f : from == RL_EK_I64 ? (float)v.i
			    : from == RL_EK_U64 ? (float)v.u : (float)x;
		else
			r.d = x;
		*out = r;
		return true;
	}
	if (from == RL_EK_F32 || from == RL_EK_F64) {
		double x = from == RL_EK_F32 ? v.f : v.d;
		if (to == RL_DT_BOOL) {
			r.i = x != 0;
			*out = r;
			return true;
		}
		if (isnan(x))
			return false;
		double t = trunc(x), lo, hi;
		int_range(to, &lo, &hi);
		if (t < lo || t > hi)
			return false;
		if (to == RL_DT_UINT64)
			r.u = (uint64_t)t;
		else
			r.i = (int64_t)t;
		*out = r;
		return true;
	}
	/* integer to integer: the bits wrap at the target's width */
	r.u = v.u;
	if (to == RL_DT_BOOL)
		r.i = v.u != 0;
	*out = r;
	return true;
}

/* ---- tensors ------------------------------------------------------------ */

static int64_t numel_of(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

/* A constant input usable for evaluation: data present and big enough. */
static bool input_ok(const struct rl_graph *g, uint32_t v)
{
	if (!rl_value_is_const(g, v))
		return false;
	const struct rl_value *val = &g->values[v];
	int64_t ne = numel_of(val);
	size_t es = rl_dtype_size(val->dtype);
	if (ne < 0 || ne > RL_EVAL_MAX_IN || !es)
		return false;
	if (ne > 0 && (!val->data || val->nbytes < (size_t)ne * es))
		return false;
	return true;
}

/* Results are built in a scratch buffer and then committed: when an
 * earlier inference run computed the same bytes for this value, that block
 * is reused, so re-inferring a graph does not grow its memory. */
static void *out_alloc(struct rl_graph *g, uint32_t v, size_t *nb)
{
	const struct rl_value *val = &g->values[v];
	*nb = (size_t)numel_of(val) * rl_dtype_size(val->dtype);
	return calloc(1, *nb ? *nb : 1);
}

/* Attach scratch buffer p (freed here) as v's data; false if out of memory. */
static bool commit(struct rl_graph *g, uint32_t v, void *p, size_t nb)
{
	size_t pn;
	const void *prev = rl_infer_prev_data(v, &pn);
	const void *data = prev;
	if (!prev || pn != nb || (nb && memcmp(prev, p, nb) != 0)) {
		void *own = rl_graph_own(g, nb);
		if (own && nb)
			memcpy(own, p, nb);
		data = own;
	}
	free(p);
	if (!data)
		return false;
	rl_value_set_data(g, v, data, nb);
	return true;
}

/* Row-major strides of a static shape. */
static void strides_of(const struct rl_shape *s, int64_t *st)
{
	int64_t acc = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		st[i] = acc;
		acc *= s->d[i].v;
	}
}

/* Strides of `in` seen through a broadcast to `out` (0 along broadcast
 * axes and the missing leading ones). */
static void bstrides(const struct rl_shape *in, const struct rl_shape *out,
                     int64_t *st)
{
	int64_t acc = 1;
	for (int i = out->rank - 1; i >= 0; i--) {
		int k = i - (out->rank - in->rank);
		if (k < 0) {
			st[i] = 0;
			continue;
		}
		st[i] = in->d[k].v == 1 ? 0 : acc;
		acc *= in->d[k].v;
	}
}

/* Offset of output element `o` in a tensor with strides st over out. */
static int64_t offset_of(const struct rl_shape *out, const int64_t *st, int64_t o)
{
	int64_t off = 0;
	for (int i = out->rank - 1; i >= 0; i--) {
		int64_t d = out->d[i].v;
		off += (o % d) * st[i];
		o /= d;
	}
	return off;
}

/* ---- arithmetic --------------------------------------------------------- */

/* One step of a reduction or of symbolic shape arithmetic: the elementwise
 * semantics of ir/scalar.c in the kind's widest dtype (narrowed on store);
 * false where the table leaves the value undefined. */
static bool binop(enum rl_op op, enum rl_ek k, union rl_scv a, union rl_scv b,
                  union rl_scv *r)
{
	static const enum rl_dtype kdt[] = {
		[RL_EK_F32] = RL_DT_FLOAT, [RL_EK_F64] = RL_DT_DOUBLE,
		[RL_EK_I64] = RL_DT_INT64, [RL_EK_U64] = RL_DT_UINT64,
	};
	struct rl_scalar_attrs p;
	if (k == RL_EK_NONE)
		return false;
	memset(&p, 0, sizeof(p));
	return rl_scalar_apply(op, &p, kdt[k], a, b, r) == RL_SCALAR_OK;
}

/* ---- per-op evaluation -------------------------------------------------- */

/* Views: the output is the input's bytes under another shape. */
static bool eval_view(struct rl_graph *g, struct rl_node *n)
{
	const struct rl_value *x = &g->values[n->in[0]];
	struct rl_value *y = &g->values[n->out[0]];
	if (x->dtype != y->dtype || numel_of(x) != numel_of(y))
		return false;
	rl_value_set_data(g, n->out[0], x->data,
	                  (size_t)numel_of(y) * rl_dtype_size(y->dtype));
	return true;
}

/* Cast to or from a low-precision dtype (saturate and round_mode apply). */
static bool eval_cast_lowp(struct rl_graph *g, struct rl_node *n)
{
	const struct rl_value *x = &g->values[n->in[0]];
	uint32_t ov = n->out[0];
	enum rl_dtype to = g->values[ov].dtype;
	const char *m = rl_node_attr_str(n, "round_mode", "up");
	int mode = !strcmp(m, "up") ? RL_LOWP_ROUND_UP : !strcmp(m, "down") ? RL_LOWP_ROUND_DOWN
	           : !strcmp(m, "nearest") ? RL_LOWP_ROUND_NEAREST : -1;
	int64_t ne = numel_of(x);
	size_t nb;
	if (mode < 0 || ne != numel_of(&g->values[ov]))
		return false;
	void *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	if (!rl_lowp_cast(x->data, x->dtype, p, to, ne, rl_node_attr_int(n, "saturate", 1) != 0,
	                  mode)) {
		free(p);
		return false;
	}
	return commit(g, ov, p, nb);
}

static bool eval_cast(struct rl_graph *g, struct rl_node *n)
{
	const struct rl_value *x = &g->values[n->in[0]];
	uint32_t ov = n->out[0];
	enum rl_dtype to = g->values[ov].dtype;
	enum rl_ek from = ekind(x->dtype);
	if (rl_dtype_is_lowp(x->dtype) || rl_dtype_is_lowp(to)) /* ir/lowp.c */
		return eval_cast_lowp(g, n);
	if (from == RL_EK_NONE || ekind(to) == RL_EK_NONE)
		return false;
	size_t nb;
	int64_t ne = numel_of(x);
	if (ne != numel_of(&g->values[ov]))
		return false;
	void *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t i = 0; i < ne; i++) {
		union rl_scv r;
		if (!convert(rl_scalar_load(x->data, x->dtype, i), from, to, &r)) {
			free(p);
			return false;
		}
		rl_scalar_store(p, to, i, r);
	}
	return commit(g, ov, p, nb);
}

/* Unary, binary and variadic elementwise ops, by the table of ir/scalar.c
 * (the same semantics folding and the C backend's scalar code use); a node
 * with an undefined element (integer division by zero) is left to run. */
static bool eval_scalar(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	if (n->nin > RL_EVAL_MAX_VARIADIC)
		return false;
	size_t nb;
	void *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	if (rl_scalar_node(g, n, p) != RL_SCALAR_OK) {
		free(p);
		return false;
	}
	return commit(g, ov, p, nb);
}

static bool eval_where(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov];
	const struct rl_value *c = &g->values[n->in[0]], *a = &g->values[n->in[1]],
	                      *b = &g->values[n->in[2]];
	size_t es = rl_dtype_size(y->dtype);
	if (a->dtype != y->dtype || b->dtype != y->dtype)
		return false;
	int64_t sc[RL_MAX_RANK], sa[RL_MAX_RANK], sb[RL_MAX_RANK];
	bstrides(&c->shape, &y->shape, sc);
	bstrides(&a->shape, &y->shape, sa);
	bstrides(&b->shape, &y->shape, sb);
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < numel_of(y); o++) {
		bool take_a = ((const uint8_t *)c->data)[offset_of(&y->shape, sc, o)] != 0;
		const struct rl_value *src = take_a ? a : b;
		int64_t off = offset_of(&y->shape, take_a ? sa : sb, o);
		memcpy(p + (size_t)o * es, (const char *)src->data + (size_t)off * es, es);
	}
	return commit(g, ov, p, nb);
}

static bool eval_expand(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov], *x = &g->values[n->in[0]];
	size_t es = rl_dtype_size(y->dtype);
	if (x->dtype != y->dtype)
		return false;
	int64_t st[RL_MAX_RANK];
	bstrides(&x->shape, &y->shape, st);
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < numel_of(y); o++)
		memcpy(p + (size_t)o * es,
		       (const char *)x->data + (size_t)offset_of(&y->shape, st, o) * es, es);
	return commit(g, ov, p, nb);
}

static bool eval_tile(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov], *x = &g->values[n->in[0]];
	size_t es = rl_dtype_size(y->dtype);
	if (x->dtype != y->dtype || x->shape.rank != y->shape.rank)
		return false;
	int64_t st[RL_MAX_RANK];
	strides_of(&x->shape, st);
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < numel_of(y); o++) {
		int64_t rem = o, off = 0;
		for (int i = y->shape.rank - 1; i >= 0; i--) {
			int64_t c = rem % y->shape.d[i].v;
			rem /= y->shape.d[i].v;
			off += (c % x->shape.d[i].v) * st[i];
		}
		memcpy(p + (size_t)o * es, (const char *)x->data + (size_t)off * es, es);
	}
	return commit(g, ov, p, nb);
}

static bool eval_transpose(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov], *x = &g->values[n->in[0]];
	size_t es = rl_dtype_size(y->dtype);
	int perm[RL_MAX_RANK];
	if (x->dtype != y->dtype || !rl_transpose_perm(n, x->shape.rank, perm))
		return false;
	int64_t sx[RL_MAX_RANK], st[RL_MAX_RANK];
	strides_of(&x->shape, sx);
	for (int i = 0; i < y->shape.rank; i++)
		st[i] = sx[perm[i]];
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < numel_of(y); o++)
		memcpy(p + (size_t)o * es,
		       (const char *)x->data + (size_t)offset_of(&y->shape, st, o) * es, es);
	return commit(g, ov, p, nb);
}

static bool eval_gather(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov], *x = &g->values[n->in[0]];
	uint32_t iv = n->in[1];
	size_t es = rl_dtype_size(y->dtype);
	int axis;
	if (x->dtype != y->dtype ||
	    !rl_axis_norm(rl_node_attr_int(n, "axis", 0), x->shape.rank, false, &axis))
		return false;
	int64_t outer = 1, inner = 1, dim = x->shape.d[axis].v;
	for (int i = 0; i < axis; i++)
		outer *= x->shape.d[i].v;
	for (int i = axis + 1; i < x->shape.rank; i++)
		inner *= x->shape.d[i].v;
	int64_t nidx = numel_of(&g->values[iv]);
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < outer; o++)
		for (int64_t k = 0; k < nidx; k++) {
			int64_t ix = rl_value_get_int(g, iv, k);
			if (ix < 0)
				ix += dim;
			if (ix < 0 || ix >= dim) {
				free(p);
				return false;
			}
			memcpy(p + (size_t)((o * nidx + k) * inner) * es,
			       (const char *)x->data + (size_t)((o * dim + ix) * inner) * es,
			       (size_t)inner * es);
		}
	return commit(g, ov, p, nb);
}

static bool eval_concat(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov];
	size_t es = rl_dtype_size(y->dtype);
	int axis;
	if (!rl_axis_norm(rl_node_attr_int(n, "axis", 0), y->shape.rank, false, &axis))
		return false;
	int64_t outer = 1, inner = 1;
	for (int i = 0; i < axis; i++)
		outer *= y->shape.d[i].v;
	for (int i = axis + 1; i < y->shape.rank; i++)
		inner *= y->shape.d[i].v;
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	size_t row = (size_t)(y->shape.d[axis].v * inner) * es, at = 0;
	for (int i = 0; i < n->nin; i++) {
		const struct rl_value *x = &g->values[n->in[i]];
		if (x->dtype != y->dtype || x->shape.rank != y->shape.rank) {
			free(p);
			return false;
		}
		size_t chunk = (size_t)(x->shape.d[axis].v * inner) * es;
		for (int64_t o = 0; o < outer && chunk; o++)
			memcpy(p + (size_t)o * row + at,
			       (const char *)x->data + (size_t)o * chunk, chunk);
		at += chunk;
	}
	return commit(g, ov, p, nb);
}

static bool eval_slice(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov], *x = &g->values[n->in[0]];
	size_t es = rl_dtype_size(y->dtype);
	struct rl_slice_plan pl;
	if (x->dtype != y->dtype || rl_slice_plan(g, node, &pl) != RL_OK || !pl.known)
		return false;
	int64_t sx[RL_MAX_RANK];
	strides_of(&x->shape, sx);
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < numel_of(y); o++) {
		int64_t rem = o, off = 0;
		for (int i = y->shape.rank - 1; i >= 0; i--) {
			int64_t c = rem % y->shape.d[i].v;
			rem /= y->shape.d[i].v;
			off += (pl.start[i] + c * pl.step[i]) * sx[i];
		}
		memcpy(p + (size_t)o * es, (const char *)x->data + (size_t)off * es, es);
	}
	return commit(g, ov, p, nb);
}

static bool eval_reduce(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov], *x = &g->values[n->in[0]];
	struct rl_reduce_plan pl;
	enum rl_ek k = ekind(x->dtype);
	if (k == RL_EK_NONE || x->dtype != y->dtype ||
	    rl_reduce_plan(g, node, &pl) != RL_OK || !pl.known)
		return false;
	if (pl.noop)
		return eval_view(g, n);
	enum rl_op op = n->op == RL_OP_ReduceSum ? RL_OP_Add
	              : n->op == RL_OP_ReduceProd ? RL_OP_Mul
	              : n->op == RL_OP_ReduceMax ? RL_OP_Max : RL_OP_Min;
	/* strides of the output over the input's axes: 0 along reduced ones */
	int64_t ost[RL_MAX_RANK], acc = 1;
	for (int i = x->shape.rank - 1; i >= 0; i--) {
		ost[i] = pl.axis[i] ? 0 : acc;
		if (!pl.axis[i])
			acc *= x->shape.d[i].v;
	}
	int64_t ne = numel_of(y), nx = numel_of(x);
	if (nx == 0 && ne > 0 && (op == RL_OP_Max || op == RL_OP_Min))
		return false; /* no identity to fill with */
	union rl_scv *accs = calloc((size_t)(ne ? ne : 1), sizeof(*accs));
	bool *seen = calloc((size_t)(ne ? ne : 1), 1);
	if (!accs || !seen) {
		free(accs);
		free(seen);
		return false;
	}
	for (int64_t o = 0; o < ne; o++) {
		union rl_scv z;
		z.u = 0;
		if (op == RL_OP_Mul) {
			if (k == RL_EK_F32) z.f = 1;
			else if (k == RL_EK_F64) z.d = 1;
			else z.i = 1;
		}
		accs[o] = z;
	}
	bool ok = true;
	for (int64_t i = 0; i < nx && ok; i++) {
		int64_t o = offset_of(&x->shape, ost, i);
		union rl_scv v = rl_scalar_load(x->data, x->dtype, i), r;
		if (!seen[o] && (op == RL_OP_Max || op == RL_OP_Min)) {
			accs[o] = v;
		} else {
			ok = binop(op, k, accs[o], v, &r);
			accs[o] = r;
		}
		seen[o] = true;
	}
	size_t nb;
	void *p = ok ? out_alloc(g, ov, &nb) : NULL;
	if (p)
		for (int64_t o = 0; o < ne; o++)
			rl_scalar_store(p, y->dtype, o, accs[o]);
	free(accs);
	free(seen);
	return p ? commit(g, ov, p, nb) : false;
}

static bool eval_range(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov];
	enum rl_dtype dt = y->dtype;
	enum rl_ek k = ekind(dt);
	if (k == RL_EK_NONE || k == RL_EK_U64)
		return false;
	size_t nb;
	void *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	const struct rl_value *vs = &g->values[n->in[0]], *vd = &g->values[n->in[2]];
	union rl_scv v = rl_scalar_load(vs->data, vs->dtype, 0), d = rl_scalar_load(vd->data, vd->dtype, 0);
	/* accumulate like the spec's Loop body (prev + delta), as the
	 * runtimes do, rather than start + i*delta */
	for (int64_t i = 0; i < numel_of(y); i++) {
		rl_scalar_store(p, dt, i, v);
		if (k == RL_EK_F32)
			v.f = v.f + d.f;
		else if (k == RL_EK_F64)
			v.d = v.d + d.d;
		else
			v.u = v.u + d.u;
	}
	return commit(g, ov, p, nb);
}

static bool eval_const_of_shape(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov];
	size_t es = rl_dtype_size(y->dtype);
	const struct rl_attr *va = rl_node_attr(n, "value");
	const void *src = NULL;
	static const float zero = 0;
	if (va) {
		if (va->kind != RL_ATTR_TENSOR || !input_ok(g, va->tensor) ||
		    g->values[va->tensor].dtype != y->dtype)
			return false;
		src = g->values[va->tensor].data;
	} else {
		if (y->dtype != RL_DT_FLOAT)
			return false;
		src = &zero;
	}
	size_t nb;
	char *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int64_t o = 0; o < numel_of(y); o++)
		memcpy(p + (size_t)o * es, src, es);
	return commit(g, ov, p, nb);
}

static bool eval_constant(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov];
	const struct rl_attr *a;
	if (y->flags & RL_VAL_CONST)
		return true; /* a Constant keeps its tensor across runs */
	if ((a = rl_node_attr(n, "value"))) {
		if (a->kind != RL_ATTR_TENSOR || a->tensor >= g->nvalues ||
		    !rl_value_is_const(g, a->tensor))
			return false;
		const struct rl_value *t = &g->values[a->tensor];
		size_t need = (size_t)numel_of(t) * rl_dtype_size(t->dtype);
		if (numel_of(t) < 0 || !rl_dtype_size(t->dtype) || (need && !t->data) ||
		    t->nbytes < need)
			return false;
		if (t->dtype != y->dtype || !rl_shape_equal(&t->shape, &y->shape))
			return false;
		rl_value_set_data(g, ov, t->data,
		                  (size_t)numel_of(t) * rl_dtype_size(t->dtype));
		return true;
	}
	int64_t ne = numel_of(y);
	if (ne < 0 || ne > RL_EVAL_MAX_IN || !rl_dtype_size(y->dtype))
		return false; /* strings stay data-less */
	size_t nb;
	void *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	if ((a = rl_node_attr(n, "value_float")) && ne == 1)
		((float *)p)[0] = (float)a->f;
	else if ((a = rl_node_attr(n, "value_int")) && ne == 1)
		((int64_t *)p)[0] = a->i;
	else if ((a = rl_node_attr(n, "value_floats")) && a->n == ne && a->floats)
		for (int64_t i = 0; i < ne; i++)
			((float *)p)[i] = (float)a->floats[i];
	else if ((a = rl_node_attr(n, "value_ints")) && a->n == ne && a->ints)
		memcpy(p, a->ints, (size_t)ne * sizeof(int64_t));
	else {
		free(p);
		return false;
	}
	return commit(g, ov, p, nb);
}

/* Shape and Size read only the input's shape. */
static bool eval_shape_of(struct rl_graph *g, struct rl_node *n)
{
	uint32_t ov = n->out[0];
	const struct rl_shape *sx = &g->values[n->in[0]].shape;
	if (sx->rank < 0 || g->values[ov].dtype != RL_DT_INT64)
		return false;
	size_t nb;
	if (n->op == RL_OP_Size) {
		int64_t ne = rl_shape_numel(sx);
		if (ne < 0 || rl_shape_numel(&g->values[ov].shape) != 1)
			return false;
		int64_t *p = out_alloc(g, ov, &nb);
		if (!p)
			return false;
		p[0] = ne;
		return commit(g, ov, p, nb);
	}
	int s, e;
	rl_shape_op_range(n, sx->rank, &s, &e);
	for (int i = s; i < e; i++)
		if (sx->d[i].v < 0)
			return false;
	if (rl_shape_numel(&g->values[ov].shape) != e - s)
		return false;
	int64_t *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	for (int i = s; i < e; i++)
		p[i - s] = sx->d[i].v;
	return commit(g, ov, p, nb);
}

/* QuantizeLinear / DequantizeLinear of constants (semantics in fam_quant.c) */
static bool eval_quant(struct rl_graph *g, uint32_t node)
{
	size_t nb;
	uint32_t ov = g->nodes[node].out[0];
	void *p = out_alloc(g, ov, &nb);
	if (!p)
		return false;
	if (!rl_quant_compute(g, node, p)) {
		free(p);
		return false;
	}
	return commit(g, ov, p, nb);
}

/* Split: every output is a block of the input along `axis`, in order; the
 * sizes are the inferred output shapes, so `split` and `num_outputs` need no
 * second reading. All outputs are evaluated, or none. */
static bool eval_split(struct rl_graph *g, struct rl_node *n)
{
	const struct rl_value *x = &g->values[n->in[0]];
	size_t es = rl_dtype_size(x->dtype);
	int axis;
	if (!rl_axis_norm(rl_node_attr_int(n, "axis", 0), x->shape.rank, false, &axis))
		return false;
	int64_t outer = 1, inner = 1, dim = x->shape.d[axis].v, at = 0;
	for (int i = 0; i < axis; i++)
		outer *= x->shape.d[i].v;
	for (int i = axis + 1; i < x->shape.rank; i++)
		inner *= x->shape.d[i].v;
	for (int k = 0; k < n->nout; k++) {
		if (n->out[k] == RL_NONE)
			return false;
		const struct rl_value *y = &g->values[n->out[k]];
		if (y->dtype != x->dtype || y->shape.rank != x->shape.rank ||
		    !rl_shape_is_static(&y->shape) || numel_of(y) > RL_EVAL_MAX_OUT)
			return false;
		at += y->shape.d[axis].v;
	}
	if (at != dim)
		return false;
	at = 0;
	for (int k = 0; k < n->nout; k++) {
		uint32_t ov = n->out[k];
		int64_t len = g->values[ov].shape.d[axis].v;
		size_t nb;
		char *p = out_alloc(g, ov, &nb);
		if (!p)
			return false;
		for (int64_t o = 0; o < outer; o++)
			memcpy(p + (size_t)(o * len * inner) * es,
			       (const char *)x->data + (size_t)((o * dim + at) * inner) * es,
			       (size_t)(len * inner) * es);
		if (!commit(g, ov, p, nb))
			return false;
		at += len;
	}
	return true;
}

bool rl_eval_node(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	if (n->dead || n->op >= RL_OP_COUNT_ || n->nout < 1 || n->out[0] == RL_NONE)
		return false;
	/* the fold column of ops.def: which ops are computed here at all */
	if (rl_op_table[n->op].fold != RL_FOLD_EVAL)
		return false;
	uint32_t ov = n->out[0];
	const struct rl_value *y = &g->values[ov];
	/* a Constant borrows its tensor whatever its size (exporters put
	 * weights in Constant nodes too) */
	if (n->op == RL_OP_Constant)
		return eval_constant(g, n);
	int64_t ne = rl_shape_numel(&y->shape);
	if (ne < 0 || ne > RL_EVAL_MAX_OUT || !rl_dtype_size(y->dtype))
		return false;
	if (n->op == RL_OP_Shape || n->op == RL_OP_Size)
		return eval_shape_of(g, n);
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != RL_NONE && !input_ok(g, n->in[i]))
			return false;
	if (n->nin < 1 || n->in[0] == RL_NONE)
		return false;
	const struct rl_scalar_info *si = rl_scalar_info(n->op);
	if (si && (si->flags & RL_SCF_CALC)) /* ir/scalar.def */
		return eval_scalar(g, n);
	switch (n->op) {
	case RL_OP_Identity: case RL_OP_Reshape: case RL_OP_Squeeze:
	case RL_OP_Unsqueeze: case RL_OP_Flatten:
		return eval_view(g, n);
	case RL_OP_Cast: case RL_OP_CastLike:
		return eval_cast(g, n);
	case RL_OP_Where: return eval_where(g, n);
	case RL_OP_Expand: return eval_expand(g, n);
	case RL_OP_Tile: return eval_tile(g, n);
	case RL_OP_Transpose: return eval_transpose(g, n);
	case RL_OP_Gather: return eval_gather(g, n);
	case RL_OP_Concat: return eval_concat(g, n);
	case RL_OP_Split: return eval_split(g, n);
	case RL_OP_Slice: return eval_slice(g, node);
	case RL_OP_ReduceSum: case RL_OP_ReduceProd: case RL_OP_ReduceMax:
	case RL_OP_ReduceMin:
		return eval_reduce(g, node);
	case RL_OP_Range: return eval_range(g, node);
	case RL_OP_ConstantOfShape: return eval_const_of_shape(g, n);
	case RL_OP_QuantizeLinear: case RL_OP_DequantizeLinear: return eval_quant(g, node);
	default:
		return false;
	}
}

/* ---- symbolic evaluation ------------------------------------------------ */

static struct rl_symint sym_unk(struct rl_graph *g, uint32_t node, int i)
{
	return (struct rl_symint){0, rl_dim_unk(g, node, 0, i).sym};
}

/* Integer arithmetic on elements that may be symbols: numbers fold,
 * identities (x*1, x+0, x-0, x/1) keep the symbol, the rest is unknown. */
static struct rl_symint sym_bin(struct rl_graph *g, uint32_t node, int i,
                                enum rl_op op, struct rl_symint a,
                                struct rl_symint b)
{
	if (!a.sym && !b.sym) {
		union rl_scv x, y, r;
		x.i = a.v;
		y.i = b.v;
		if (binop(op, RL_EK_I64, x, y, &r))
			return (struct rl_symint){r.i, NULL};
		return sym_unk(g, node, i);
	}
	if (op == RL_OP_Mul && !b.sym && b.v == 1)
		return a;
	if (op == RL_OP_Mul && !a.sym && a.v == 1)
		return b;
	if ((op == RL_OP_Add || op == RL_OP_Sub) && !b.sym && b.v == 0)
		return a;
	if (op == RL_OP_Add && !a.sym && a.v == 0)
		return b;
	if (op == RL_OP_Div && !b.sym && b.v == 1)
		return a;
	if (op == RL_OP_Mul && ((!a.sym && a.v == 0) || (!b.sym && b.v == 0)))
		return (struct rl_symint){0, NULL};
	return sym_unk(g, node, i);
}

void rl_eval_symbolic(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	if (n->nout < 1 || n->out[0] == RL_NONE || n->nin < 1 || n->in[0] == RL_NONE)
		return;
	uint32_t ov = n->out[0];
	struct rl_value *y = &g->values[ov];
	if ((!rl_dtype_is_int(y->dtype) && y->dtype != RL_DT_BOOL) || y->shape.rank > 1 ||
	    y->shape.rank < 0)
		return;
	int64_t yn = rl_shape_numel(&y->shape);
	if (yn < 0 || yn > RL_SYMVEC_MAX)
		return;
	struct rl_symint a[RL_SYMVEC_MAX], b[RL_SYMVEC_MAX], r[RL_SYMVEC_MAX];
	int nr = -1;
	const struct rl_value *x = &g->values[n->in[0]];
	switch (n->op) {
	case RL_OP_Shape: {
		if (x->shape.rank < 0)
			return;
		int s, e;
		rl_shape_op_range(n, x->shape.rank, &s, &e);
		nr = e - s;
		for (int i = s; i < e; i++) {
			const struct rl_dim *d = &x->shape.d[i];
			r[i - s] = d->v >= 0 ? (struct rl_symint){d->v, NULL}
			         : d->sym ? (struct rl_symint){0, d->sym}
			                  : sym_unk(g, node, i - s);
		}
		break;
	}
	case RL_OP_Identity: case RL_OP_Reshape: case RL_OP_Squeeze:
	case RL_OP_Unsqueeze: case RL_OP_Flatten: case RL_OP_Cast:
	case RL_OP_CastLike:
		if (!rl_dtype_is_int(x->dtype))
			return;
		nr = rl_infer_symints(g, n->in[0], r, RL_SYMVEC_MAX);
		break;
	case RL_OP_Gather: {
		int na = rl_infer_symints(g, n->in[0], a, RL_SYMVEC_MAX);
		int64_t ax = rl_node_attr_int(n, "axis", 0), idx[RL_SYMVEC_MAX];
		uint32_t iv = n->in[1];
		if (na < 0 || x->shape.rank != 1 || (ax != 0 && ax != -1) ||
		    !rl_value_is_const(g, iv))
			return;
		/* a scalar (0-D) index reads as a one-entry list */
		int ni = rl_value_get_ints(g, iv, idx, RL_SYMVEC_MAX);
		if (ni < 0)
			return;
		for (int i = 0; i < ni; i++) {
			int64_t k = idx[i] < 0 ? idx[i] + na : idx[i];
			if (k < 0 || k >= na)
				return;
			r[i] = a[k];
		}
		nr = ni;
		break;
	}
	case RL_OP_Concat:
		nr = 0;
		for (int i = 0; i < n->nin; i++) {
			int k = rl_infer_symints(g, n->in[i], a, RL_SYMVEC_MAX);
			if (k < 0 || nr + k > RL_SYMVEC_MAX || g->values[n->in[i]].shape.rank != 1)
				return;
			memcpy(r + nr, a, (size_t)k * sizeof(*a));
			nr += k;
		}
		break;
	case RL_OP_Slice: {
		struct rl_slice_plan pl;
		int na = rl_infer_symints(g, n->in[0], a, RL_SYMVEC_MAX);
		if (na < 0 || x->shape.rank != 1 || rl_slice_plan(g, node, &pl) != RL_OK ||
		    !pl.known || pl.len[0] < 0)
			return;
		nr = (int)pl.len[0];
		for (int i = 0; i < nr; i++) {
			int64_t k = pl.start[0] + i * pl.step[0];
			if (k < 0 || k >= na)
				return;
			r[i] = a[k];
		}
		break;
	}
	case RL_OP_Add: case RL_OP_Sub: case RL_OP_Mul: case RL_OP_Div: {
		int na = rl_infer_symints(g, n->in[0], a, RL_SYMVEC_MAX);
		int nb = rl_infer_symints(g, n->in[1], b, RL_SYMVEC_MAX);
		if (na < 0 || nb < 0 || (na != nb && na != 1 && nb != 1))
			return;
		nr = na > nb ? na : nb;
		for (int i = 0; i < nr; i++)
			r[i] = sym_bin(g, node, i, n->op, a[na == 1 ? 0 : i], b[nb == 1 ? 0 : i]);
		break;
	}
	case RL_OP_Equal: {
		/* torch's expand(-1) exports Where(Equal(shape, -1), 1, shape):
		 * a symbolic size is never negative, so that Equal is decided */
		int na = rl_infer_symints(g, n->in[0], a, RL_SYMVEC_MAX);
		int nb = rl_infer_symints(g, n->in[1], b, RL_SYMVEC_MAX);
		if (na < 0 || nb < 0 || (na != nb && na != 1 && nb != 1))
			return;
		nr = na > nb ? na : nb;
		for (int i = 0; i < nr; i++) {
			struct rl_symint x1 = a[na == 1 ? 0 : i], x2 = b[nb == 1 ? 0 : i];
			if (!x1.sym && !x2.sym)
				r[i] = (struct rl_symint){x1.v == x2.v, NULL};
			else if ((x1.sym && !x2.sym && x2.v < 0) || (x2.sym && !x1.sym && x1.v < 0))
				r[i] = (struct rl_symint){0, NULL};
			else if (x1.sym && x2.sym && strcmp(x1.sym, x2.sym) == 0 &&
			         strncmp(x1.sym, "unk_", 4) != 0)
				r[i] = (struct rl_symint){1, NULL};
			else
				r[i] = sym_unk(g, node, i);
		}
		break;
	}
	case RL_OP_Where: {
		struct rl_symint c[RL_SYMVEC_MAX];
		int nc = rl_infer_symints(g, n->in[0], c, RL_SYMVEC_MAX);
		int na = rl_infer_symints(g, n->in[1], a, RL_SYMVEC_MAX);
		int nb = rl_infer_symints(g, n->in[2], b, RL_SYMVEC_MAX);
		if (nc < 0 || na < 0 || nb < 0)
			return;
		nr = nc > na ? nc : na;
		nr = nr > nb ? nr : nb;
		if ((nc != nr && nc != 1) || (na != nr && na != 1) || (nb != nr && nb != 1))
			return;
		for (int i = 0; i < nr; i++) {
			struct rl_symint ci = c[nc == 1 ? 0 : i];
			r[i] = ci.sym ? sym_unk(g, node, i) : ci.v ? a[na == 1 ? 0 : i]
			                                          : b[nb == 1 ? 0 : i];
		}
		break;
	}
	default:
		return;
	}
	if (nr < 0 || nr != yn)
		return;
	bool all_num = true;
	for (int i = 0; i < nr; i++)
		all_num &= r[i].sym == NULL;
	if (all_num) {
		/* every element came out as a number: it is a constant now */
		size_t nbytes;
		void *p = out_alloc(g, ov, &nbytes);
		if (p) {
			for (int i = 0; i < nr; i++) {
				union rl_scv v;
				v.i = r[i].v;
				rl_scalar_store(p, y->dtype, i, v);
			}
			if (commit(g, ov, p, nbytes))
				return;
		}
	}
	rl_infer_track(ov, r, nr);
}
