/*
 * fold.c - constant folding, and BatchNormalization folded into the weights
 * of the product before it.
 *
 * One walk over the graph in topological order folds two kinds of node:
 *
 * 1. Nodes whose outputs shape inference already evaluated (ir/eval.c):
 *    Constant, Shape/Size of static shapes, the Shape -> Gather -> Concat
 *    arithmetic exporters emit, small elementwise math and ConstantOfShape
 *    on constants. Their outputs are RL_VAL_CONST with a producer ("known
 *    at compile time"); folding keeps the data, drops the producer, and the
 *    outputs become plain initializers. A node whose inputs became constant
 *    only because something upstream was folded in this walk is offered to
 *    the evaluator again first.
 * 2. Nodes the evaluator leaves alone because a tensor is too big for it
 *    (over 65536 output or 1M input elements) or because it does not know
 *    the op: views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) share
 *    the input's bytes, Transpose and Cast copy them, and every elementwise
 *    op ir/scalar.c computes (a weight times a scale, Exp of a table, ...)
 *    is computed by that table in the dtype's own precision, with the
 *    expressions the C backend's scalar code uses (so folding a node does
 *    not change its bits: float tanh/erf are the rl_tanhf/rl_erff
 *    approximations the generated code defines, not libm's).
 *
 * The size rule: folding must not grow the model. A fold is taken when its
 * output is at most ctx->fold_max_bytes (16 KiB by default), or no bigger
 * than the constant inputs that die with the node (nothing else reads
 * them). So a 400 MB Expand of a scalar stays a node, and a Transpose of a
 * weight that another node also reads is not duplicated when it is big;
 * both are declined with a remark giving the bytes. A Constant node folds
 * at any size: its attribute tensor dies with it. Generators that the
 * evaluator did not materialize (ConstantOfShape, Expand, Tile over 65536
 * elements) are never expanded here: the C backend runs them at load time.
 *
 * A second walk folds BatchNormalization in inference form into a Conv,
 * Gemm, or MatMul (optionally followed by an Add of a constant bias) whose
 * weight is constant and whose output only the BatchNormalization reads:
 *
 *   s = scale / sqrt(var + epsilon),  W'[c] = W[c] * s[c]   (per output channel)
 *   b'[c] = (b[c] - mean[c]) * s[c] + B[c]                (b = 0 when absent)
 *
 * The product then writes the BN's output value (so its name survives, also
 * when it is a graph output); a missing bias becomes a new input (Conv,
 * Gemm) or a new Add node (MatMul). New weights are new constants: a weight
 * shared with another node is never changed in place, and is not duplicated
 * when that would add more than ctx->fold_max_bytes.
 *
 * Precondition: shapes and constants inferred (rl_graph_infer), g->order
 * current. Leaves the graph compacted and sorted.
 */
#include "pass.h"
#include "quant.h"
#include "scalar.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PASS "fold"

/* ---- small helpers ------------------------------------------------------ */

static size_t value_bytes(const struct rl_graph *g, uint32_t v)
{
	const struct rl_value *val = &g->values[v];
	if (val->flags & RL_VAL_CONST)
		return val->nbytes;
	int64_t ne = rl_shape_numel(&val->shape);
	return ne < 0 ? 0 : (size_t)ne * rl_dtype_size(val->dtype);
}

/* An initializer: constant data that no node produces. */
static bool is_init(const struct rl_graph *g, uint32_t v)
{
	return v != RL_NONE && rl_value_is_const(g, v) && g->values[v].producer == RL_NONE &&
	       (g->values[v].data || g->values[v].nbytes == 0);
}

/* Bytes of constant inputs that nothing but `node` reads (each counted once):
 * what the model loses when the node is folded away. */
static double freed_bytes(const struct rl_graph *g, uint32_t node)
{
	const struct rl_node *n = &g->nodes[node];
	double freed = 0;
	for (int i = 0; i < n->nin; i++) {
		uint32_t v = n->in[i];
		if (!is_init(g, v) || (g->values[v].flags & RL_VAL_OUTPUT))
			continue;
		bool dup = false, other = false;
		for (int j = 0; j < i; j++)
			dup |= n->in[j] == v;
		const struct rl_value *val = &g->values[v];
		for (uint32_t u = 0; u < val->nuses && !other; u++)
			other = val->uses[u] != node;
		if (!dup && !other)
			freed += (double)val->nbytes;
	}
	return freed;
}

static double out_bytes_of(const struct rl_graph *g, const struct rl_node *n)
{
	double b = 0;
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE)
			b += (double)value_bytes(g, n->out[o]);
	return b;
}

/* A value name not yet in the graph: base + suffix, then base + suffix + _N. */
static uint32_t add_unique_value(struct rl_graph *g, const char *base, const char *suffix,
                                 enum rl_dtype dt, const struct rl_shape *s)
{
	char name[256];
	snprintf(name, sizeof(name), "%s%s", base, suffix);
	for (int k = 1; rl_graph_find_value(g, name) != RL_NONE; k++)
		snprintf(name, sizeof(name), "%s%s_%d", base, suffix, k);
	return rl_graph_add_value(g, name, dt, s);
}

/* A new constant of dtype/shape with graph-owned, zeroed bytes. */
static uint32_t new_const(struct rl_graph *g, const char *base, const char *suffix,
                          enum rl_dtype dt, const struct rl_shape *s, void **data)
{
	int64_t ne = rl_shape_numel(s);
	size_t nb = (size_t)(ne < 0 ? 0 : ne) * rl_dtype_size(dt);
	void *p = rl_graph_own(g, nb ? nb : 1);
	if (!p)
		return RL_NONE;
	memset(p, 0, nb ? nb : 1);
	uint32_t v = add_unique_value(g, base, suffix, dt, s);
	rl_value_set_data(g, v, p, nb);
	*data = p;
	return v;
}

/* Give node an extra input slot (set to RL_NONE) so that it can take one
 * more input with rl_node_set_input. */
static void grow_inputs(struct rl_graph *g, uint32_t node, int nin)
{
	struct rl_node *n = &g->nodes[node];
	if (n->nin >= nin)
		return;
	uint32_t *in = rl_arena_alloc(g, (size_t)nin * sizeof(*in));
	RL_ASSERT(in);
	n = &g->nodes[node];
	for (int i = 0; i < nin; i++)
		in[i] = i < n->nin ? n->in[i] : RL_NONE;
	n->in = in;
	n->nin = nin;
}

/* ---- element access ----------------------------------------------------- */

/* How a dtype converts: through double (floats), int64 or uint64. */
enum ek { EK_FLOAT, EK_INT, EK_UINT, EK_BOOL, EK_NONE };

static enum ek ekind(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_FLOAT: case RL_DT_DOUBLE: case RL_DT_FLOAT16: case RL_DT_BFLOAT16:
		return EK_FLOAT;
	case RL_DT_INT8: case RL_DT_INT16: case RL_DT_INT32: case RL_DT_INT64:
	case RL_DT_UINT8: case RL_DT_UINT16: case RL_DT_UINT32:
		return EK_INT;
	case RL_DT_UINT64:
		return EK_UINT;
	case RL_DT_BOOL:
		return EK_BOOL;
	default:
		return EK_NONE;
	}
}

static int64_t load_i(const void *p, enum rl_dtype t, int64_t i)
{
	switch (t) {
	case RL_DT_INT8: return ((const int8_t *)p)[i];
	case RL_DT_INT16: return ((const int16_t *)p)[i];
	case RL_DT_INT32: return ((const int32_t *)p)[i];
	case RL_DT_INT64: return ((const int64_t *)p)[i];
	case RL_DT_UINT8: return ((const uint8_t *)p)[i];
	case RL_DT_UINT16: return ((const uint16_t *)p)[i];
	case RL_DT_UINT32: return ((const uint32_t *)p)[i];
	case RL_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	case RL_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	default: return 0;
	}
}

static double load_f(const void *p, enum rl_dtype t, int64_t i)
{
	switch (t) {
	case RL_DT_FLOAT: return ((const float *)p)[i];
	case RL_DT_DOUBLE: return ((const double *)p)[i];
	case RL_DT_FLOAT16: return rl_half_to_float(((const uint16_t *)p)[i]);
	case RL_DT_BFLOAT16: return rl_bf16_to_float(((const uint16_t *)p)[i]);
	default: return 0;
	}
}

/* Integer stores wrap at the dtype's width, like the runtimes' casts. */
static void store_i(void *p, enum rl_dtype t, int64_t i, uint64_t v)
{
	switch (t) {
	case RL_DT_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
	case RL_DT_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
	case RL_DT_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
	case RL_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
	case RL_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case RL_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case RL_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case RL_DT_UINT64: ((uint64_t *)p)[i] = v; break;
	case RL_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: break;
	}
}

/* Store a float value (float16/bfloat16 round from float). */
static void store_f(void *p, enum rl_dtype t, int64_t i, double d)
{
	switch (t) {
	case RL_DT_FLOAT: ((float *)p)[i] = (float)d; break;
	case RL_DT_DOUBLE: ((double *)p)[i] = d; break;
	case RL_DT_FLOAT16: ((uint16_t *)p)[i] = rl_float_to_half((float)d); break;
	case RL_DT_BFLOAT16: ((uint16_t *)p)[i] = rl_float_to_bf16((float)d); break;
	default: break;
	}
}

static bool int_fits(double t, enum rl_dtype to)
{
	double lo, hi;
	switch (to) {
	case RL_DT_INT8: lo = -128; hi = 127; break;
	case RL_DT_INT16: lo = -32768; hi = 32767; break;
	case RL_DT_INT32: lo = -2147483648.0; hi = 2147483647.0; break;
	case RL_DT_UINT8: lo = 0; hi = 255; break;
	case RL_DT_UINT16: lo = 0; hi = 65535; break;
	case RL_DT_UINT32: lo = 0; hi = 4294967295.0; break;
	case RL_DT_UINT64: lo = 0; hi = 18446744073709549568.0; break;
	default: lo = -9223372036854775808.0; hi = 9223372036854774784.0; break;
	}
	return t >= lo && t <= hi;
}

/* Cast element i of x (dtype from) into p (dtype to). False where ONNX leaves
 * the result undefined (NaN or out-of-range float to integer). */
static bool cast_one(const void *x, enum rl_dtype from, void *p, enum rl_dtype to, int64_t i)
{
	enum ek kf = ekind(from), kt = ekind(to);
	if (kt == EK_FLOAT) {
		if (kf == EK_FLOAT) {
			double d = load_f(x, from, i);
			if (to == RL_DT_FLOAT16 || to == RL_DT_BFLOAT16)
				d = (float)d; /* via float, as the runtimes do */
			store_f(p, to, i, d);
		} else if (kf == EK_UINT) {
			uint64_t u = (uint64_t)load_i(x, from, i);
			store_f(p, to, i, to == RL_DT_DOUBLE ? (double)u : (double)(float)u);
		} else {
			int64_t v = load_i(x, from, i);
			store_f(p, to, i, to == RL_DT_DOUBLE ? (double)v : (double)(float)v);
		}
		return true;
	}
	if (kf == EK_FLOAT) {
		double d = load_f(x, from, i);
		if (kt == EK_BOOL) {
			store_i(p, to, i, d != 0);
			return true;
		}
		if (isnan(d))
			return false;
		double t = trunc(d);
		if (!int_fits(t, to))
			return false;
		store_i(p, to, i, to == RL_DT_UINT64 ? (uint64_t)t : (uint64_t)(int64_t)t);
		return true;
	}
	uint64_t u = (uint64_t)load_i(x, from, i);
	store_i(p, to, i, kt == EK_BOOL ? u != 0 : u);
	return true;
}

/* ---- folds the evaluator does not do ------------------------------------ */

static bool is_view(enum rl_op op)
{
	return op == RL_OP_Identity || op == RL_OP_Reshape || op == RL_OP_Flatten ||
	       op == RL_OP_Squeeze || op == RL_OP_Unsqueeze;
}

/* An elementwise op ir/scalar.c computes (a CALC row of ir/scalar.def) on
 * these input and output dtypes. */
static bool scalar_ok(const struct rl_node *n, enum rl_dtype x, enum rl_dtype y)
{
	const struct rl_scalar_info *si = rl_scalar_info(n->op);
	if (!si || !(si->flags & RL_SCF_CALC))
		return false;
	unsigned need = x == RL_DT_BOOL ? RL_SCF_B
	              : rl_dtype_is_int(x) ? RL_SCF_I
	              : x == RL_DT_FLOAT || x == RL_DT_DOUBLE || x == RL_DT_FLOAT16 ||
	                x == RL_DT_BFLOAT16 ? RL_SCF_F : 0;
	bool cmp = rl_op_table[n->op].flags & RL_OPF_CMP;
	return (si->flags & need) && y == (cmp ? RL_DT_BOOL : x);
}

/* Can fold_compute() handle this node (inputs constant, shapes static)? */
static bool computable(const struct rl_graph *g, const struct rl_node *n)
{
	if (rl_op_table[n->op].fold == RL_FOLD_NO) /* the fold column of ir/ops.def */
		return false;
	if (n->nout != 1 || n->out[0] == RL_NONE || n->nin < 1)
		return false;
	const struct rl_value *y = &g->values[n->out[0]];
	if (!rl_shape_is_static(&y->shape) || !rl_dtype_size(y->dtype))
		return false;
	/* CastLike reads only the dtype of its second input */
	for (int i = 0; i < (n->op == RL_OP_CastLike ? 1 : n->nin); i++)
		if (n->in[i] != RL_NONE && !is_init(g, n->in[i]))
			return false;
	const struct rl_value *x = &g->values[n->in[0]];
	if (!rl_shape_is_static(&x->shape))
		return false;
	if (is_view(n->op) || n->op == RL_OP_Transpose)
		return x->dtype == y->dtype && rl_shape_numel(&x->shape) == rl_shape_numel(&y->shape);
	if ((n->op == RL_OP_Cast || n->op == RL_OP_CastLike) &&
	    (rl_dtype_is_lowp(x->dtype) || rl_dtype_is_lowp(y->dtype))) /* ir/lowp.c */
		return rl_shape_numel(&x->shape) == rl_shape_numel(&y->shape) &&
		       !strcmp(rl_node_attr_str(n, "round_mode", "up"), "up");
	if (n->op == RL_OP_Cast || n->op == RL_OP_CastLike)
		return ekind(x->dtype) != EK_NONE && ekind(y->dtype) != EK_NONE &&
		       rl_shape_numel(&x->shape) == rl_shape_numel(&y->shape);
	if (!scalar_ok(n, x->dtype, y->dtype) || n->nin > 16) /* rl_scalar_node's limit */
		return false;
	/* every input of x's dtype, broadcasting to y */
	struct rl_shape bc = x->shape;
	for (int i = 1; i < n->nin; i++) {
		const struct rl_value *b = n->in[i] == RL_NONE ? NULL : &g->values[n->in[i]];
		if (!b || b->dtype != x->dtype || !rl_shape_is_static(&b->shape) ||
		    !rl_shape_broadcast(&bc, &b->shape, &bc))
			return false;
	}
	return rl_shape_equal(&bc, &y->shape);
}

static bool perm_of(const struct rl_node *n, int rank, int *perm)
{
	const int64_t *p;
	int cnt = rl_node_attr_ints(n, "perm", &p);
	if (cnt < 0) {
		for (int i = 0; i < rank; i++)
			perm[i] = rank - 1 - i;
		return true;
	}
	if (cnt != rank)
		return false;
	bool seen[RL_MAX_RANK] = {false};
	for (int i = 0; i < rank; i++) {
		if (p[i] < 0 || p[i] >= rank || seen[p[i]])
			return false;
		seen[p[i]] = true;
		perm[i] = (int)p[i];
	}
	return true;
}

/* Compute the node's output into graph-owned memory (or share the input's
 * bytes for a view). False when the values leave the result undefined. */
static bool fold_compute(struct rl_graph *g, uint32_t node)
{
	const struct rl_node *n = &g->nodes[node];
	uint32_t yv = n->out[0];
	const struct rl_value *x = &g->values[n->in[0]];
	const struct rl_value *y = &g->values[yv];
	int64_t ne = rl_shape_numel(&y->shape);
	size_t es = rl_dtype_size(y->dtype), nb = (size_t)ne * es;
	if (is_view(n->op)) {
		rl_value_set_data(g, yv, x->data, nb);
		return true;
	}
	char *p = rl_graph_own(g, nb ? nb : 1);
	if (!p)
		return false;
	x = &g->values[n->in[0]];
	y = &g->values[yv];
	if (n->op == RL_OP_Transpose) {
		int perm[RL_MAX_RANK];
		if (!perm_of(n, x->shape.rank, perm))
			return false;
		int64_t sx[RL_MAX_RANK], st[RL_MAX_RANK], acc = 1;
		for (int i = x->shape.rank - 1; i >= 0; i--) {
			sx[i] = acc;
			acc *= x->shape.d[i].v;
		}
		for (int i = 0; i < y->shape.rank; i++)
			st[i] = sx[perm[i]];
		int64_t idx[RL_MAX_RANK] = {0}, off = 0;
		for (int64_t o = 0; o < ne; o++) {
			memcpy(p + (size_t)o * es, (const char *)x->data + (size_t)off * es, es);
			for (int i = y->shape.rank - 1; i >= 0; i--) {
				idx[i]++;
				off += st[i];
				if (idx[i] < y->shape.d[i].v)
					break;
				off -= st[i] * idx[i];
				idx[i] = 0;
			}
		}
	} else if ((n->op == RL_OP_Cast || n->op == RL_OP_CastLike) &&
	           (rl_dtype_is_lowp(x->dtype) || rl_dtype_is_lowp(y->dtype))) {
		if (!rl_lowp_cast(x->data, x->dtype, p, y->dtype, ne,
		                  rl_node_attr_int(n, "saturate", 1) != 0, RL_LOWP_ROUND_UP))
			return false;
	} else if (n->op == RL_OP_Cast || n->op == RL_OP_CastLike) {
		for (int64_t i = 0; i < ne; i++)
			if (!cast_one(x->data, x->dtype, p, y->dtype, i))
				return false;
	} else if (rl_scalar_node(g, n, p) != RL_SCALAR_OK) {
		return false; /* ir/scalar.c: integer division by zero, ... */
	}
	rl_value_set_data(g, yv, p, nb);
	return true;
}

/* ---- the folding walk --------------------------------------------------- */

static bool all_outputs_const(const struct rl_graph *g, const struct rl_node *n)
{
	int present = 0;
	for (int o = 0; o < n->nout; o++) {
		uint32_t v = n->out[o];
		if (v == RL_NONE)
			continue;
		present++;
		const struct rl_value *val = &g->values[v];
		if (!(val->flags & RL_VAL_CONST) || (!val->data && val->nbytes))
			return false;
	}
	return present > 0;
}

static bool all_inputs_const(const struct rl_graph *g, const struct rl_node *n)
{
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != RL_NONE && !is_init(g, n->in[i]))
			return false;
	return true;
}

/* Generators: their output is made from a little input (a shape, a scalar). */
static bool is_generator(enum rl_op op)
{
	return op == RL_OP_ConstantOfShape || op == RL_OP_Expand || op == RL_OP_Tile ||
	       op == RL_OP_Range || op == RL_OP_EyeLike;
}

/* The outputs are known (evaluated, or computed here): keep their data as
 * initializers and drop the node, if the size rule allows. */
static void fold_node(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t node,
                      const char *how)
{
	struct rl_node *n = &g->nodes[node];
	double out = out_bytes_of(g, n), freed = freed_bytes(g, node);
	const char *op = rl_op_table[n->op].name;
	/* a constant weight's DequantizeLinear folds at any size (fold_dequant);
	 * so does a Constant node, whose tensor is in the model already (it only
	 * changes from attribute to initializer: paddle2onnx writes every weight
	 * so, and a node left behind would copy it on every run) */
	if (out > (double)ctx->fold_max_bytes && out > freed && n->op != RL_OP_DequantizeLinear &&
	    n->op != RL_OP_Constant) {
		rl_remark(ctx, PASS, n->name, "declined", freed, out, -1, -1,
		          "%s output of %.0f bytes exceeds the folding cap of %lld bytes and the "
		          "%.0f bytes of constant inputs it would replace; left as a node",
		          op, out, (long long)ctx->fold_max_bytes, freed);
		return;
	}
	char sb[64];
	uint32_t y = n->out[0];
	for (int o = 0; y == RL_NONE && o < n->nout; o++)
		y = n->out[o];
	rl_shape_str(&g->values[y].shape, sb, sizeof(sb));
	rl_remark(ctx, PASS, n->name, "folded", freed, out, -1, -1,
	          "%s %s: output '%s' (%s %s) is now an initializer", op, how,
	          g->values[y].name, rl_dtype_name(g->values[y].dtype), sb);
	rl_graph_remove_node(g, node);
}

/*
 * DequantizeLinear of a constant (a QDQ model's weight) at any size: the
 * float weight it makes is what the float kernels read, and computing it at
 * run time would read the int8 bytes, write the float copy and read it
 * again on every call. So it is folded past the size rule, with a remark
 * giving the bytes; semantics in ir/fam_quant.c.
 */
static bool fold_dequant(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t node)
{
	const struct rl_node *n = &g->nodes[node];
	uint32_t yv = n->out[0];
	int64_t ne = rl_shape_numel(&g->values[yv].shape);
	size_t nb = (size_t)(ne < 0 ? 0 : ne) * rl_dtype_size(g->values[yv].dtype);
	if (ne < 0 || !nb)
		return false;
	void *p = rl_graph_own(g, nb);
	if (!p || !rl_quant_compute(g, node, p))
		return false;
	n = &g->nodes[node];
	double freed = freed_bytes(g, node);
	rl_value_set_data(g, yv, p, nb);
	rl_remark(ctx, PASS, n->name, "folded", freed, (double)nb, -1, -1,
	          "DequantizeLinear of a constant: output '%s' (%.0f bytes, from %.0f bytes of "
	          "quantized inputs) is now an initializer the float kernels read directly",
	          g->values[yv].name, (double)nb, freed);
	rl_graph_remove_node(g, node);
	return true;
}

static void fold_walk(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		struct rl_node *n = &g->nodes[i];
		if (n->dead)
			continue;
		if (all_outputs_const(g, n)) {
			fold_node(g, ctx, i, n->nin && all_inputs_const(g, n) ? "of constants"
			                     : n->op == RL_OP_Constant ? "node"
			                     : "of a static shape");
			continue;
		}
		bool castlike = n->op == RL_OP_CastLike && n->nin == 2 && is_init(g, n->in[0]);
		if (!n->nin || (!all_inputs_const(g, n) && !castlike))
			continue;
		/* upstream folding may have made this node's inputs constant */
		if (rl_eval_node(g, i)) {
			fold_node(g, ctx, i, "of constants");
			continue;
		}
		if (g->nodes[i].op == RL_OP_DequantizeLinear && fold_dequant(g, ctx, i))
			continue;
		n = &g->nodes[i];
		if (computable(g, n)) {
			/* check the size rule before computing anything big */
			double out = out_bytes_of(g, n), freed = freed_bytes(g, i);
			if (out > (double)ctx->fold_max_bytes && out > freed) {
				rl_remark(ctx, PASS, n->name, "declined", freed, out, -1, -1,
				          "%s of constants: the %.0f-byte result exceeds the folding cap "
				          "of %lld bytes and the %.0f bytes of inputs only it reads "
				          "(another node still reads its input); left as a node",
				          rl_op_table[n->op].name, out, (long long)ctx->fold_max_bytes,
				          freed);
				continue;
			}
			if (fold_compute(g, i)) {
				fold_node(g, ctx, i, "of constants (computed by the fold pass)");
			} else {
				rl_remark(ctx, PASS, g->nodes[i].name, "declined", -1, -1, -1, -1,
				          "%s of constants: the result is undefined in ONNX for these "
				          "values (NaN or out-of-range cast, integer division by zero, "
				          "bad perm); left to the "
				          "runtime", rl_op_table[g->nodes[i].op].name);
			}
			continue;
		}
		n = &g->nodes[i];
		if (is_generator(n->op)) {
			double out = out_bytes_of(g, n), in = 0;
			for (int q = 0; q < n->nin; q++)
				if (n->in[q] != RL_NONE)
					in += (double)value_bytes(g, n->in[q]);
			rl_remark(ctx, PASS, n->name, "declined", in, out, -1, -1,
			          "%s would materialize %.0f bytes from %.0f bytes of inputs; "
			          "not folded (cap %lld bytes, evaluator limit 65536 elements): "
			          "it runs at load time instead", rl_op_table[n->op].name, out, in,
			          (long long)ctx->fold_max_bytes);
		}
	}
}

/* ---- BatchNormalization into the product before it ---------------------- */

/* A BN in inference form whose statistics outputs nobody reads, with
 * constant float parameters of C entries each; fills s and t (C each,
 * malloc'd): y = x * s + t per channel. */
static bool bn_params(const struct rl_graph *g, const struct rl_node *n, int64_t *C,
                      double **s_out, double **t_out, const char **why)
{
	if (n->opset >= 14 && rl_node_attr_int(n, "training_mode", 0)) {
		*why = "training_mode=1";
		return false;
	}
	if (n->opset < 9 && rl_node_attr_int(n, "spatial", 1) == 0) {
		*why = "spatial=0 (per-activation statistics)";
		return false;
	}
	for (int o = 1; o < n->nout; o++) {
		uint32_t v = n->out[o];
		if (v != RL_NONE && (g->values[v].nuses || (g->values[v].flags & RL_VAL_OUTPUT))) {
			*why = "its mean/variance outputs are used";
			return false;
		}
	}
	int64_t c = -1;
	for (int i = 1; i < 5; i++) {
		uint32_t v = rl_node_in(n, i);
		if (v == RL_NONE || !rl_value_is_const(g, v) || !g->values[v].data ||
		    !rl_dtype_is_float(g->values[v].dtype) || g->values[v].shape.rank != 1) {
			*why = "scale, B, mean and var are not all constant 1-D float tensors";
			return false;
		}
		int64_t ne = rl_shape_numel(&g->values[v].shape);
		if (c >= 0 && ne != c) {
			*why = "parameter lengths differ";
			return false;
		}
		c = ne;
	}
	double eps = rl_node_attr_float(n, "epsilon", 1e-5);
	double *s = malloc((size_t)(c ? c : 1) * sizeof(double));
	double *t = malloc((size_t)(c ? c : 1) * sizeof(double));
	RL_ASSERT(s && t);
	for (int64_t k = 0; k < c; k++) {
		double sc = rl_value_get_float(g, n->in[1], k), b = rl_value_get_float(g, n->in[2], k);
		double mean = rl_value_get_float(g, n->in[3], k);
		double var = rl_value_get_float(g, n->in[4], k);
		s[k] = sc / sqrt(var + eps);
		t[k] = b - mean * s[k];
	}
	*C = c;
	*s_out = s;
	*t_out = t;
	return true;
}

static double get_f(const void *p, enum rl_dtype t, int64_t i)
{
	return t == RL_DT_FLOAT ? ((const float *)p)[i] : ((const double *)p)[i];
}

static void put_f(void *p, enum rl_dtype t, int64_t i, double v)
{
	if (t == RL_DT_FLOAT)
		((float *)p)[i] = (float)v;
	else
		((double *)p)[i] = v;
}

/* A bias constant that adds one value per column of a [N, C] result: shape
 * [C], [1, C], or a single element (broadcast). Returns the stride to read
 * entry c with (1, or 0 for a single element), or -1. */
static int bias_stride(const struct rl_graph *g, uint32_t b, int64_t C)
{
	const struct rl_value *v = &g->values[b];
	int64_t ne = rl_shape_numel(&v->shape);
	if (ne == C && (v->shape.rank == 1 || (v->shape.rank == 2 && v->shape.d[0].v == 1)))
		return 1;
	if (ne == 1 && v->shape.rank <= 2)
		return 0;
	return -1;
}

/* Scale weight W (dtype float/double) per output channel into a new
 * constant: channel c of element i is (i / inner) % C (Conv: W[C, ...];
 * MatMul and Gemm with W[K, C]: inner 1). */
static uint32_t scaled_weight(struct rl_graph *g, uint32_t w, int64_t C, int64_t inner,
                              const double *s)
{
	const struct rl_value *wv = &g->values[w];
	struct rl_shape sh = wv->shape;
	enum rl_dtype dt = wv->dtype;
	void *p;
	uint32_t nw = new_const(g, wv->name, "_bnfold", dt, &sh, &p);
	if (nw == RL_NONE)
		return RL_NONE;
	const void *src = g->values[w].data;
	int64_t ne = rl_shape_numel(&sh);
	for (int64_t i = 0; i < ne; i++)
		put_f(p, dt, i, get_f(src, dt, i) * s[(i / inner) % C]);
	return nw;
}

/* New bias b'[c] = beta * b[c] * s[c] + t[c] of shape [C] (b absent: 0). */
static uint32_t folded_bias(struct rl_graph *g, const char *base, uint32_t b, double beta,
                            int stride, enum rl_dtype dt, int64_t C, const double *s,
                            const double *t)
{
	struct rl_shape sh = {.rank = 1};
	sh.d[0].v = C;
	void *p;
	uint32_t nb = new_const(g, base, "_bnfold_bias", dt, &sh, &p);
	if (nb == RL_NONE)
		return RL_NONE;
	for (int64_t c = 0; c < C; c++) {
		double bc = b == RL_NONE ? 0 : beta * rl_value_get_float(g, b, c * stride);
		put_f(p, dt, c, bc * s[c] + t[c]);
	}
	return nb;
}

/* Only `node` reads v, and v is no graph output. */
static bool sole_use(const struct rl_graph *g, uint32_t v, uint32_t node)
{
	const struct rl_value *val = &g->values[v];
	if (val->flags & RL_VAL_OUTPUT)
		return false;
	for (uint32_t u = 0; u < val->nuses; u++)
		if (val->uses[u] != node)
			return false;
	return val->nuses > 0;
}

/* The BN's output y is now written by `prod` (output 0): the BN goes. */
static void bn_take_output(struct rl_graph *g, uint32_t bn, uint32_t prod)
{
	uint32_t y = g->nodes[bn].out[0], x = g->nodes[prod].out[0];
	rl_graph_remove_node(g, bn);
	g->nodes[prod].out[0] = y;
	g->values[y].producer = prod;
	g->values[x].producer = RL_NONE;
}

static bool weight_ok(const struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t w,
                      uint32_t prod, enum rl_dtype dt, const char **why)
{
	if (!rl_value_is_const(g, w) || !g->values[w].data) {
		*why = "its weight is not constant";
		return false;
	}
	if (g->values[w].dtype != dt) {
		*why = "weight and input dtypes differ";
		return false;
	}
	if (!sole_use(g, w, prod) && (double)g->values[w].nbytes > (double)ctx->fold_max_bytes) {
		*why = "its weight is shared with another node and too big to duplicate";
		return false;
	}
	return true;
}

/*
 * A BN after a Conv whose weight is not a constant here (the onnx light
 * models make every weight with a ConstantOfShape that NAME_init computes;
 * a weight that is a graph input) cannot go into the weights. It becomes
 * y = x * s + t instead, a Mul and an Add by constants of shape [C, 1, ...]
 * (s, t as bn_params): elementwise nodes that the fuse pass attaches to the
 * Conv as its epilogue, with a Relu or residual Add after them, so the
 * output is not read and written again by a BN kernel and a Relu kernel
 * (light_resnet50: 37 of its 53 BNs). False (graph unchanged) on no memory.
 */
static bool bn_affine(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t bn, int64_t C,
                      const double *s, const double *t, const char *who)
{
	uint32_t x = g->nodes[bn].in[0], y = g->nodes[bn].out[0];
	enum rl_dtype dt = g->values[x].dtype;
	struct rl_shape sh = {.rank = g->values[x].shape.rank - 1};
	sh.d[0].v = C;
	for (int i = 1; i < sh.rank; i++)
		sh.d[i].v = 1;
	void *ps, *pt;
	char base[200];
	snprintf(base, sizeof(base), "%s", g->nodes[bn].name);
	uint32_t vs = new_const(g, base, "_scale", dt, &sh, &ps);
	uint32_t vt = vs == RL_NONE ? RL_NONE : new_const(g, base, "_shift", dt, &sh, &pt);
	struct rl_shape xs = g->values[x].shape; /* adding values moves g->values */
	uint32_t mid = vt == RL_NONE ? RL_NONE : add_unique_value(g, base, "_scaled", dt, &xs);
	if (mid == RL_NONE)
		return false;
	for (int64_t c = 0; c < C; c++) {
		put_f(ps, dt, c, s[c]);
		put_f(pt, dt, c, t[c]);
	}
	char nm[220];
	rl_graph_remove_node(g, bn);
	uint32_t in[2] = {x, vs};
	snprintf(nm, sizeof(nm), "%s_mul", base);
	rl_graph_add_node(g, RL_OP_Mul, nm, in, 2, &mid, 1);
	in[0] = mid;
	in[1] = vt;
	snprintf(nm, sizeof(nm), "%s_add", base);
	rl_graph_add_node(g, RL_OP_Add, nm, in, 2, &y, 1);
	rl_remark(ctx, PASS, who, "rewritten", -1, -1, -1, -1,
	          "BatchNormalization not folded into Conv (its weight is not constant): "
	          "a per-channel Mul by scale/sqrt(var+eps) and Add of B - mean * s, "
	          "for the Conv's epilogue");
	return true;
}

static void fold_bn_one(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t bn)
{
	const struct rl_node *n = &g->nodes[bn];
	uint32_t x = n->in[0], y = n->out[0];
	if (x == RL_NONE || y == RL_NONE || g->values[x].producer == RL_NONE)
		return;
	uint32_t prod = g->values[x].producer;
	uint32_t add = RL_NONE; /* MatMul + Add: the Add */
	int bslot = -1;         /* the Add's bias operand */
	if (g->nodes[prod].op == RL_OP_Add) {
		const struct rl_node *a = &g->nodes[prod];
		for (int k = 0; k < 2 && bslot < 0; k++) {
			uint32_t o = a->in[1 - k];
			if (is_init(g, a->in[k]) && o != RL_NONE && g->values[o].producer != RL_NONE &&
			    g->nodes[g->values[o].producer].op == RL_OP_MatMul)
				bslot = k;
		}
		if (bslot < 0)
			return;
		add = prod;
		prod = g->values[a->in[1 - bslot]].producer;
	}
	enum rl_op pop = g->nodes[prod].op;
	if (pop != RL_OP_Conv && pop != RL_OP_Gemm && pop != RL_OP_MatMul)
		return;
	char who[160];
	snprintf(who, sizeof(who), "%s,%s%s%s", g->nodes[prod].name,
	         add != RL_NONE ? g->nodes[add].name : "", add != RL_NONE ? "," : "",
	         g->nodes[bn].name);
	const char *why = NULL;
	int64_t C = 0;
	double *s = NULL, *t = NULL;
	enum rl_dtype dt = g->values[x].dtype;
	const struct rl_value *xv = &g->values[x];
	if (!sole_use(g, x, bn)) {
		why = "the product's output has other uses (or is a graph output)";
		goto declined;
	}
	if (add != RL_NONE && !sole_use(g, g->nodes[add].in[1 - bslot], add)) {
		why = "the MatMul's output has other uses (or is a graph output)";
		goto declined;
	}
	if (dt != RL_DT_FLOAT && dt != RL_DT_DOUBLE) {
		why = "only float32 and float64 products are folded";
		goto declined;
	}
	if (!bn_params(g, &g->nodes[bn], &C, &s, &t, &why))
		goto declined;
	if (xv->shape.rank < 2 || xv->shape.d[1].v != C) {
		why = "channel count does not match";
		goto declined;
	}
	struct rl_node *p = &g->nodes[prod];
	uint32_t w = rl_node_in(p, 1), b = RL_NONE;
	double before = 0, after = 0;
	for (int i = 1; i < 5; i++)
		before += (double)g->values[g->nodes[bn].in[i]].nbytes;
	if (!weight_ok(g, ctx, w, prod, dt, &why)) {
		if (pop == RL_OP_Conv && !rl_value_is_const(g, w) && bn_affine(g, ctx, bn, C, s, t, who))
			goto done;
		goto declined;
	}
	const struct rl_value *wv = &g->values[w];
	uint32_t nw = RL_NONE, nb = RL_NONE;
	if (pop == RL_OP_Conv) {
		b = rl_node_in(p, 2);
		if (wv->shape.rank < 3 || wv->shape.d[0].v != C) {
			why = "weight shape does not match the channels";
			goto declined;
		}
		if (b != RL_NONE && (!rl_value_is_const(g, b) || bias_stride(g, b, C) != 1 ||
		                     g->values[b].dtype != dt)) {
			why = "its bias is not a constant of one value per channel";
			goto declined;
		}
		int64_t inner = rl_shape_numel(&wv->shape) / C;
		before += (double)wv->nbytes + (b != RL_NONE ? (double)g->values[b].nbytes : 0);
		nw = scaled_weight(g, w, C, inner, s);
		nb = folded_bias(g, g->nodes[prod].name, b, 1.0, 1, dt, C, s, t);
		if (nw == RL_NONE || nb == RL_NONE)
			goto nomem;
		grow_inputs(g, prod, 3);
		rl_node_set_input(g, prod, 1, nw);
		rl_node_set_input(g, prod, 2, nb);
		bn_take_output(g, bn, prod);
	} else if (pop == RL_OP_Gemm) {
		b = rl_node_in(p, 2);
		bool tb = rl_node_attr_int(p, "transB", 0) != 0;
		double beta = rl_node_attr_float(p, "beta", 1.0);
		if (xv->shape.rank != 2 || wv->shape.rank != 2 || wv->shape.d[tb ? 0 : 1].v != C) {
			why = "weight shape does not match the channels";
			goto declined;
		}
		int stride = b == RL_NONE ? 0 : bias_stride(g, b, C);
		if (b != RL_NONE && (!rl_value_is_const(g, b) || stride < 0 || g->values[b].dtype != dt)) {
			why = "its C input is not a constant of one value per column";
			goto declined;
		}
		before += (double)wv->nbytes + (b != RL_NONE ? (double)g->values[b].nbytes : 0);
		/* B[C, K] (transB) scales rows: inner K; B[K, C] scales columns */
		nw = scaled_weight(g, w, C, tb ? wv->shape.d[1].v : 1, s);
		nb = folded_bias(g, g->nodes[prod].name, b, beta, stride, dt, C, s, t);
		if (nw == RL_NONE || nb == RL_NONE)
			goto nomem;
		grow_inputs(g, prod, 3);
		rl_node_set_input(g, prod, 1, nw);
		rl_node_set_input(g, prod, 2, nb);
		p = &g->nodes[prod];
		for (int k = 0; k < p->nattrs; k++)
			if (strcmp(p->attrs[k].name, "beta") == 0) {
				p->attrs[k].kind = RL_ATTR_FLOAT;
				p->attrs[k].f = 1.0;
			}
		bn_take_output(g, bn, prod);
	} else { /* MatMul [N, K] x [K, C], then maybe Add */
		if (xv->shape.rank != 2 || wv->shape.rank != 2 || wv->shape.d[1].v != C) {
			why = "MatMul output is not [N, C] with a [K, C] weight";
			goto declined;
		}
		int stride = 0;
		if (add != RL_NONE) {
			b = g->nodes[add].in[bslot];
			stride = bias_stride(g, b, C);
			if (stride < 0 || g->values[b].dtype != dt) {
				why = "the Add's constant is not one value per column";
				goto declined;
			}
			before += (double)g->values[b].nbytes;
		}
		before += (double)wv->nbytes;
		nw = scaled_weight(g, w, C, 1, s);
		nb = folded_bias(g, g->nodes[prod].name, b, 1.0, stride, dt, C, s, t);
		if (nw == RL_NONE || nb == RL_NONE)
			goto nomem;
		rl_node_set_input(g, prod, 1, nw);
		if (add != RL_NONE) {
			rl_node_set_input(g, add, bslot, nb);
			bn_take_output(g, bn, add);
		} else {
			uint32_t mm_out = x;
			char name[200];
			snprintf(name, sizeof(name), "%s_bias", g->nodes[bn].name);
			rl_graph_remove_node(g, bn);
			uint32_t in[2] = {mm_out, nb};
			rl_graph_add_node(g, RL_OP_Add, name, in, 2, &y, 1);
		}
	}
	after = (double)g->values[nw].nbytes + (double)g->values[nb].nbytes;
	rl_remark(ctx, PASS, who, "folded", before, after, -1, -1,
	          "BatchNormalization folded into %s: %lld output channels scaled by "
	          "scale/sqrt(var+eps), bias = (b - mean) * s + B%s",
	          rl_op_table[pop].name, (long long)C,
	          b == RL_NONE ? " (bias added)" : "");
done:
	free(s);
	free(t);
	return;
nomem:
	why = "out of memory";
declined:
	rl_remark(ctx, PASS, who, "declined", -1, -1, -1, -1,
	          "BatchNormalization not folded into %s: %s", rl_op_table[pop].name, why);
	free(s);
	free(t);
}

/* g->order as rl_graph_infer left it, unless nodes were added or removed
 * since (then sort again): saves a sort per pass in the pipeline. */
enum rl_status rl_pass_fold(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	enum rl_status st = rl_pass_ensure_order(g);
	if (st != RL_OK)
		return st;
	uint32_t nv0 = g->nvalues;
	fold_walk(g, ctx);
	uint32_t nn = g->nnodes;
	for (uint32_t i = 0; i < nn; i++)
		if (!g->nodes[i].dead && g->nodes[i].op == RL_OP_BatchNormalization)
			fold_bn_one(g, ctx, i);
	return rl_pass_finish(g, nv0);
}
