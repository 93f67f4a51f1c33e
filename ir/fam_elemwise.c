/*
 * fam_elemwise.c - shape and dtype inference for pointwise operators:
 * unary maps, binary and variadic ops with numpy (multidirectional)
 * broadcasting, comparisons and logic (bool out), Where, Cast/CastLike,
 * Clip, Dropout.
 *
 * The output shape of a broadcasting op is the broadcast of its inputs;
 * symbols pass through (a symbol against 1 stays the symbol, a symbol
 * against a number becomes the number). Before opset 8 the variadic ops
 * (Sum, Min, Max, Mean) did not broadcast, so shapes must match there.
 * Input dtypes are checked against the ONNX type constraints loosely: by
 * class (float, signed, integer, bool), not per opset list, since the
 * lists only widened over time.
 */
#include "infer_impl.h"
#include "scalar.h"

#include <string.h>

/* The dtype class an elementwise op's inputs must have at opset v: the tc
 * column of ir/ops.def, which is the latest opset's; the lists only
 * widened, except that Relu took floats only before 14 and Min/Max before
 * 12. */
static enum rl_tc elemwise_tc(enum rl_op op, int v)
{
	if (op == RL_OP_Relu && v < 14)
		return RL_TC_FLOAT;
	if ((op == RL_OP_Min || op == RL_OP_Max) && v < 12)
		return RL_TC_FLOAT;
	return rl_op_table[op].tc;
}

/* A Clip bound or Dropout ratio must be a scalar (a 1-element 1-D tensor
 * is accepted too: exporters emit them and runtimes take them). */
static enum rl_status need_scalar(struct rl_graph *g, uint32_t node, int slot,
                                  const char *what)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *v = rl_infer_in(g, n, slot);
	if (!v || v->shape.rank < 0)
		return RL_OK;
	int64_t ne = rl_shape_numel(&v->shape);
	if (v->shape.rank == 0 || (v->shape.rank == 1 && (ne == 1 || ne < 0)))
		return RL_OK;
	char b[RL_SSTR];
	return rl_graph_error(g, n, RL_ERR_SHAPE, "%s '%s' must be a scalar, not %s",
	                      what, v->name, rl_sstr(&v->shape, b));
}

static enum rl_status infer_cast_to(struct rl_graph *g, uint32_t node,
                                    enum rl_dtype *to)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_attr *a = rl_node_attr(n, "to");
	if (!a || a->kind != RL_ATTR_INT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "attribute 'to' is missing");
	int64_t t = a->i;
	if (t <= 0 || t >= RL_DT_COUNT_)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "cast to dtype %lld is not supported", (long long)t);
	if (t == RL_DT_STRING || t == RL_DT_COMPLEX64 || t == RL_DT_COMPLEX128)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "cast to %s is not supported",
		                      rl_dtype_name((enum rl_dtype)t));
	*to = (enum rl_dtype)t;
	return RL_OK;
}

static enum rl_status infer_unary(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, elemwise_tc(n->op, n->opset));
	if (st != RL_OK)
		return st;
	enum rl_dtype dt = x->dtype;
	struct rl_shape shape = x->shape;
	unsigned fl = rl_op_table[n->op].flags;
	if (fl & (RL_OPF_CMP | RL_OPF_LOGIC))
		dt = RL_DT_BOOL;
	switch (n->op) {
	case RL_OP_Cast:
		st = infer_cast_to(g, node, &dt);
		break;
	case RL_OP_CastLike: {
		struct rl_value *like = rl_infer_in(g, n, 1);
		dt = like->dtype;
		if (dt == RL_DT_STRING || dt == RL_DT_COMPLEX64 || dt == RL_DT_COMPLEX128)
			st = rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                    "cast to %s is not supported", rl_dtype_name(dt));
		break;
	}
	case RL_OP_BitCast: /* ir/lowp.c */
		st = rl_infer_bitcast_to(g, node, &dt);
		break;
	case RL_OP_Clip:
		if (n->opset >= 11) {
			for (int i = 1; i < 3 && st == RL_OK; i++) {
				st = rl_infer_dtype_same(g, node, 0, i);
				if (st == RL_OK)
					st = need_scalar(g, node, i, i == 1 ? "min" : "max");
			}
		} else if (!rl_dtype_is_float(dt)) {
			st = rl_infer_dtype_in(g, node, 0, RL_TC_FLOAT);
		}
		break;
	case RL_OP_Dropout:
		if (n->opset >= 12) {
			st = rl_infer_dtype_in(g, node, 1, RL_TC_FLOAT);
			if (st == RL_OK)
				st = need_scalar(g, node, 1, "ratio");
			if (st == RL_OK)
				st = rl_infer_dtype_in(g, node, 2, RL_TC_BOOL);
			if (st == RL_OK)
				st = need_scalar(g, node, 2, "training_mode");
		}
		if (st == RL_OK)
			/* the mask was T before opset 10, bool from 10 */
			st = rl_infer_set(g, node, 1, n->opset < 10 ? dt : RL_DT_BOOL, &shape);
		break;
	default:
		break;
	}
	if (st != RL_OK)
		return st;
	return rl_infer_set(g, node, 0, dt, &shape);
}

static enum rl_status infer_binary(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *a = rl_infer_in(g, n, 0), *b = rl_infer_in(g, n, 1);
	unsigned fl = rl_op_table[n->op].flags;
	enum rl_tc tc = elemwise_tc(n->op, n->opset); /* Equal: bool and string too */
	enum rl_status st = rl_infer_dtype_in(g, node, 0, tc);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, tc);
	/* Pow's exponent may have its own dtype from opset 12 */
	if (st == RL_OK && !(n->op == RL_OP_Pow && n->opset >= 12))
		st = rl_infer_dtype_same(g, node, 0, 1);
	if (st != RL_OK)
		return st;
	if (n->op == RL_OP_Mod && rl_dtype_is_float(a->dtype) &&
	    rl_node_attr_int(n, "fmod", 0) != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "Mod of %s inputs needs fmod=1", rl_dtype_name(a->dtype));
	if (n->op == RL_OP_BitShift) {
		const char *dir = rl_node_attr_str(n, "direction", NULL);
		if (!dir || (strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "attribute 'direction' must be LEFT or RIGHT");
	}
	struct rl_shape out;
	st = rl_infer_broadcast(g, node, &a->shape, &b->shape, &out);
	if (st != RL_OK)
		return st;
	if (n->op == RL_OP_PRelu && out.rank >= 0) {
		/* the slope broadcasts to X, never the other way */
		char sa[RL_SSTR], sb[RL_SSTR];
		bool ok = out.rank == a->shape.rank;
		for (int i = 0; ok && i < out.rank; i++)
			ok = !rl_dim_differ(out.d[i], a->shape.d[i]);
		if (!ok)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "slope of shape %s does not broadcast to input %s",
			                      rl_sstr(&b->shape, sb), rl_sstr(&a->shape, sa));
		out = a->shape;
	}
	enum rl_dtype dt = (fl & (RL_OPF_CMP | RL_OPF_LOGIC)) ? RL_DT_BOOL : a->dtype;
	return rl_infer_set(g, node, 0, dt, &out);
}

static enum rl_status infer_variadic(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	/* Sum and Mean are float-only; Min and Max take integers from 12 */
	enum rl_tc tc = elemwise_tc(n->op, n->opset);
	struct rl_value *x0 = rl_infer_in(g, n, 0);
	struct rl_shape out = x0->shape;
	for (int i = 0; i < n->nin; i++) {
		enum rl_status st = rl_infer_dtype_in(g, node, i, tc);
		if (st == RL_OK)
			st = rl_infer_dtype_same(g, node, 0, i);
		if (st != RL_OK)
			return st;
		if (i == 0)
			continue;
		struct rl_value *xi = rl_infer_in(g, n, i);
		if (n->opset < 8 && out.rank >= 0 && xi->shape.rank >= 0) {
			/* Sum-6/Min-6/Max-6/Mean-6: no broadcasting */
			bool same = out.rank == xi->shape.rank;
			for (int d = 0; same && d < out.rank; d++)
				same = !rl_dim_differ(out.d[d], xi->shape.d[d]);
			if (!same) {
				char sa[RL_SSTR], sb[RL_SSTR];
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "inputs of shapes %s and %s differ; %s-%d does "
				                      "not broadcast", rl_sstr(&out, sa),
				                      rl_sstr(&xi->shape, sb),
				                      rl_op_table[n->op].name, n->opset);
			}
		}
		st = rl_infer_broadcast(g, node, &out, &xi->shape, &out);
		if (st != RL_OK)
			return st;
	}
	return rl_infer_set(g, node, 0, x0->dtype, &out);
}

static enum rl_status infer_where(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_BOOL);
	if (st == RL_OK)
		st = rl_infer_dtype_in(g, node, 1, RL_TC_ANY);
	if (st == RL_OK)
		st = rl_infer_dtype_same(g, node, 1, 2);
	if (st != RL_OK)
		return st;
	struct rl_shape out;
	st = rl_infer_broadcast(g, node, &rl_infer_in(g, n, 0)->shape,
	                        &rl_infer_in(g, n, 1)->shape, &out);
	if (st == RL_OK)
		st = rl_infer_broadcast(g, node, &out, &rl_infer_in(g, n, 2)->shape, &out);
	if (st != RL_OK)
		return st;
	return rl_infer_set(g, node, 0, rl_infer_in(g, n, 1)->dtype, &out);
}

enum rl_status rl_infer_elemwise(struct rl_graph *g, uint32_t node)
{
	unsigned fl = rl_op_table[g->nodes[node].op].flags;
	if (fl & RL_OPF_UNARY)
		return infer_unary(g, node);
	if (fl & RL_OPF_BINARY)
		return infer_binary(g, node);
	if (fl & RL_OPF_VARIADIC)
		return infer_variadic(g, node);
	if (fl & RL_OPF_TERNARY)
		return infer_where(g, node);
	return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
	                      "no elementwise shape rule for this operator");
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * FLOPs of a pointwise op are a fixed count per OUTPUT element, the flops
 * column of ir/scalar.def (so a broadcast input is not charged per use; its
 * bytes are the baseline's, read once at its own size: [8,1,16] + [4,1] ->
 * [8,4,16] reads 512 + 16 bytes and writes 2048 for 512 FLOPs):
 *   transcendental ops (Exp, Tanh, Sigmoid, Gelu, Erf, Pow, Softplus, ...)
 *                                         RL_FLOPS_TRANS, whatever small
 *                                         arithmetic surrounds the one call
 *   Identity, Cast, CastLike, Dropout     0 (data movement)
 *   Clip (max then min), LeakyRelu (compare, multiply), PRelu, Shrink    2
 *   Softsign x/(1+|x|)                    3
 *   HardSigmoid max(0, min(1, a*x+b))     4 (multiply-add = 2, clamp = 2)
 *   HardSwish x*HardSigmoid(x)            5
 *   Sum/Min/Max of k inputs               k-1;  Mean of k inputs: k (k>1)
 *   everything else (add, compare, logic, Where, Relu, Floor, ...)      1
 * Identity is a view: it moves no bytes (the emitter aliases its buffer).
 */
#include "cost_impl.h"

static double elemwise_flops_per_elem(const struct rl_node *n)
{
	const struct rl_scalar_info *si = rl_scalar_info(n->op);
	RL_ASSERT(si);
	if (!(rl_op_table[n->op].flags & RL_OPF_VARIADIC))
		return si->flops;
	/* per input after the first; Mean divides once more */
	return si->flops * (n->nin - 1) + (n->op == RL_OP_Mean && n->nin > 1);
}

bool rl_count_elemwise(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	if (n->op == RL_OP_Identity) {
		c->bytes_read = c->bytes_write = c->weight_bytes = 0;
		return true;
	}
	c->flops = elemwise_flops_per_elem(n) * rl_cnt_out(g, n, 0);
	return true;
}
