/*
 * fam_const.c - shape and dtype inference for value generators: Constant,
 * ConstantOfShape, Range, EyeLike, HannWindow, HammingWindow, BlackmanWindow.
 *
 * - Constant carries exactly one of `value` (a tensor, which the frontend
 *   stores as a constant value referenced by index), `value_float(s)`,
 *   `value_int(s)` (opset 12; float32 and int64), `value_string(s)`
 *   (strings: typed, never computed on) or `sparse_value` (unsupported).
 *   The data itself is attached by eval.c.
 * - ConstantOfShape's shape comes from its input's data (or the symbols the
 *   tracker recorded for it); its dtype from the one-element `value` tensor,
 *   float32 when absent.
 * - Range is 1-D with max(ceil((limit - start) / delta), 0) elements, known
 *   when the three scalars are constant.
 * - EyeLike has its 2-D input's shape and the `dtype` attribute's type
 *   (default: the input's).
 * - HannWindow, HammingWindow, BlackmanWindow are 1-D of `size` elements
 *   (a scalar input: known when constant, else the declared output's), of
 *   the `output_datatype` attribute's type (default float32).
 * - MelWeightMatrix (17) is [dft_length / 2 + 1, num_mel_bins], of
 *   `output_datatype` (default float32): known when those two integer
 *   scalars are constant (a bound input, `--value`, makes them so), else
 *   the declared output's. sample_rate and the two edge frequencies are
 *   read when the kernel runs.
 */
#include "infer_impl.h"

#include <math.h>
#include <string.h>

/* A tensor attribute must name a typed constant value. */
static bool tensor_attr_ok(const struct rl_graph *g, const struct rl_attr *a)
{
	if (a->kind != RL_ATTR_TENSOR || a->tensor >= g->nvalues)
		return false;
	const struct rl_value *t = &g->values[a->tensor];
	return (t->flags & RL_VAL_CONST) && t->dtype != RL_DT_UNDEFINED &&
	       t->dtype < RL_DT_COUNT_ && rl_shape_is_static(&t->shape);
}

static enum rl_status infer_constant(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_attr *found = NULL;
	int count = 0;
	static const char *names[] = {"value",      "value_float",  "value_floats",
	                              "value_int",  "value_ints",   "value_string",
	                              "value_strings", "sparse_value"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct rl_attr *a = rl_node_attr(n, names[i]);
		if (a) {
			found = a;
			count++;
		}
	}
	if (count != 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "needs exactly one value attribute, has %d", count);
	const char *nm = found->name;
	struct rl_shape s = {.rank = 0};
	enum rl_dtype dt;
	if (strcmp(nm, "sparse_value") == 0 || found->kind == RL_ATTR_OTHER)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "sparse constant tensors are not supported");
	if (strcmp(nm, "value") == 0) {
		if (!tensor_attr_ok(g, found))
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "attribute 'value' does not hold a tensor");
		const struct rl_value *t = &g->values[found->tensor];
		return rl_infer_set(g, node, 0, t->dtype, &t->shape);
	}
	bool list = found->kind == RL_ATTR_FLOATS || found->kind == RL_ATTR_INTS ||
	            found->kind == RL_ATTR_STRINGS;
	if (list) {
		s.rank = 1;
		s.d[0] = rl_dim_num(found->n);
	}
	if (strncmp(nm, "value_float", 11) == 0)
		dt = RL_DT_FLOAT;
	else if (strncmp(nm, "value_int", 9) == 0)
		dt = RL_DT_INT64;
	else
		dt = RL_DT_STRING;
	return rl_infer_set(g, node, 0, dt, &s);
}

static enum rl_status infer_const_of_shape(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *sv = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_INT);
	if (st != RL_OK)
		return st;
	enum rl_dtype dt = RL_DT_FLOAT;
	const struct rl_attr *va = rl_node_attr(n, "value");
	char b[RL_SSTR];
	if (va) {
		if (!tensor_attr_ok(g, va))
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "attribute 'value' does not hold a tensor");
		const struct rl_value *t = &g->values[va->tensor];
		if (rl_shape_numel(&t->shape) != 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "value must hold one element, not %s",
			                      rl_sstr(&t->shape, b));
		dt = t->dtype;
	}
	if (sv->shape.rank > 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "shape input '%s' has shape %s; it must be 1-D", sv->name,
		                      rl_sstr(&sv->shape, b));
	struct rl_shape out = {.rank = -1};
	struct rl_symint t[RL_MAX_RANK];
	int nt = rl_infer_symints(g, n->in[0], t, RL_MAX_RANK);
	int64_t len = sv->shape.rank == 1 ? sv->shape.d[0].v : -1;
	if (len > RL_MAX_RANK)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "output rank %lld is over rlopt's limit of %d",
		                      (long long)len, RL_MAX_RANK);
	if (nt >= 0) {
		out.rank = nt;
		for (int i = 0; i < nt; i++) {
			if (t[i].sym) {
				out.d[i] = (struct rl_dim){RL_DIM_SYMBOLIC, t[i].sym};
				continue;
			}
			if (t[i].v < 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "shape has negative dimension %lld",
				                      (long long)t[i].v);
			out.d[i] = rl_dim_num(t[i].v);
		}
	} else if (len >= 0) {
		out.rank = (int)len;
		for (int i = 0; i < out.rank; i++)
			out.d[i] = rl_dim_unk(g, node, 0, i);
	}
	return rl_infer_set(g, node, 0, dt, &out);
}

bool rl_range_count(struct rl_graph *g, uint32_t node, int64_t *count,
                    enum rl_status *st)
{
	struct rl_node *n = &g->nodes[node];
	for (int i = 0; i < 3; i++) {
		uint32_t v = n->in[i];
		if (!rl_value_is_const(g, v) || rl_shape_numel(&g->values[v].shape) != 1 ||
		    !g->values[v].data)
			return false;
	}
	enum rl_dtype dt = g->values[n->in[0]].dtype;
	if (rl_dtype_is_int(dt)) {
		int64_t s = rl_value_get_int(g, n->in[0], 0);
		int64_t l = rl_value_get_int(g, n->in[1], 0);
		int64_t d = rl_value_get_int(g, n->in[2], 0), diff;
		if (d == 0) {
			*st = rl_graph_error(g, n, RL_ERR_SHAPE, "delta is zero");
			return false;
		}
		if (__builtin_sub_overflow(l, s, &diff)) {
			*st = rl_graph_error(g, n, RL_ERR_SHAPE, "range from %lld to %lld is too long",
			                     (long long)s, (long long)l);
			return false;
		}
		/* ceil(diff / d) without overflow, 0 when the signs disagree */
		if (d > 0)
			*count = diff > 0 ? (diff - 1) / d + 1 : 0;
		else
			*count = diff < 0 ? (diff + 1) / d + 1 : 0;
		return true;
	}
	double s = rl_value_get_float(g, n->in[0], 0);
	double l = rl_value_get_float(g, n->in[1], 0);
	double d = rl_value_get_float(g, n->in[2], 0);
	if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d)) {
		*st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                     "start %g, limit %g, delta %g do not give a finite range",
		                     s, l, d);
		return false;
	}
	/* onnxruntime's order: the difference in the input type, the division
	 * in double */
	double diff = dt == RL_DT_FLOAT ? (double)((float)l - (float)s) : l - s;
	double c = ceil(diff / d);
	if (c > (double)RL_DIM_LIMIT) {
		*st = rl_graph_error(g, n, RL_ERR_SHAPE, "range of %g elements is too long", c);
		return false;
	}
	*count = c > 0 ? (int64_t)c : 0;
	return true;
}

static enum rl_status infer_range(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *s = rl_infer_in(g, n, 0);
	enum rl_status st = RL_OK;
	char b[RL_SSTR];
	/* opset 27 added float16 and bfloat16 */
	bool half_ok = n->opset >= 27 &&
	               (s->dtype == RL_DT_FLOAT16 || s->dtype == RL_DT_BFLOAT16);
	if (s->dtype != RL_DT_FLOAT && s->dtype != RL_DT_DOUBLE && s->dtype != RL_DT_INT16 &&
	    s->dtype != RL_DT_INT32 && s->dtype != RL_DT_INT64 && !half_ok)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "start is %s; Range takes float, double, int16, int32 or "
		                      "int64 (and float16, bfloat16 from opset 27)",
		                      rl_dtype_name(s->dtype));
	for (int i = 0; i < 3; i++) {
		struct rl_value *v = rl_infer_in(g, n, i);
		st = rl_infer_dtype_same(g, node, 0, i);
		if (st != RL_OK)
			return st;
		if (v->shape.rank > 0 && rl_shape_numel(&v->shape) != 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input %d of shape %s must be a "
			                      "scalar", i, rl_sstr(&v->shape, b));
	}
	int64_t cnt;
	struct rl_shape out = {.rank = 1};
	if (rl_range_count(g, node, &cnt, &st))
		out.d[0] = rl_dim_num(cnt);
	else if (st != RL_OK)
		return st;
	else
		out.d[0] = rl_dim_unk(g, node, 0, 0);
	return rl_infer_set(g, node, 0, s->dtype, &out);
}

static enum rl_status infer_eyelike(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_NUMBOOL);
	if (st != RL_OK)
		return st;
	char b[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank != 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input of shape %s must be 2-D",
		                      rl_sstr(&x->shape, b));
	enum rl_dtype dt = x->dtype;
	const struct rl_attr *a = rl_node_attr(n, "dtype");
	if (a) {
		if (a->kind != RL_ATTR_INT || a->i <= 0 || a->i >= RL_DT_COUNT_ ||
		    !rl_dtype_is_numeric((enum rl_dtype)a->i))
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                      "dtype %lld is not supported", (long long)a->i);
		dt = (enum rl_dtype)a->i;
	}
	struct rl_shape out = x->shape;
	if (out.rank < 0) {
		out.rank = 2;
		out.d[0] = rl_dim_unk(g, node, 0, 0);
		out.d[1] = rl_dim_unk(g, node, 0, 1);
	}
	return rl_infer_set(g, node, 0, dt, &out);
}

static enum rl_status infer_window(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = rl_infer_dtype_in(g, node, 0, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	int64_t dt = rl_node_attr_int(n, "output_datatype", RL_DT_FLOAT);
	if (dt <= 0 || dt >= RL_DT_COUNT_ || !rl_dtype_is_float((enum rl_dtype)dt))
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "attribute output_datatype=%lld is not a float type rlopt "
		                      "computes", (long long)dt);
	uint32_t sv = n->in[0];
	struct rl_shape out = {.rank = 1};
	out.d[0] = rl_dim_unk(g, node, 0, 0);
	if (rl_value_is_const(g, sv) && g->values[sv].data &&
	    rl_shape_numel(&g->values[sv].shape) == 1) {
		int64_t size = rl_value_get_int(g, sv, 0);
		if (size < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "size %lld is negative",
			                      (long long)size);
		out.d[0] = rl_dim_num(size);
	}
	return rl_infer_set(g, node, 0, (enum rl_dtype)dt, &out);
}

static enum rl_status infer_melweight(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	enum rl_status st = RL_OK;
	for (int i = 0; i < 5; i++)
		if (rl_node_in(n, i) == RL_NONE)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "input %d is missing: the five "
			                      "inputs are all required", i);
	for (int i = 0; i < 5 && st == RL_OK; i++) {
		st = rl_infer_dtype_in(g, node, i, i < 3 ? RL_TC_INT : RL_TC_FLOAT);
		if (st == RL_OK && (i == 1 || i == 2))
			st = rl_infer_dtype_same(g, node, 0, i);
		if (st == RL_OK && i == 4)
			st = rl_infer_dtype_same(g, node, 3, 4);
	}
	if (st != RL_OK)
		return st;
	static const char *const what[5] = {"num_mel_bins", "dft_length", "sample_rate",
	                                    "lower_edge_hertz", "upper_edge_hertz"};
	for (int i = 0; i < 5; i++) {
		struct rl_value *v = rl_infer_in(g, n, i);
		char b[RL_SSTR];
		if (v->shape.rank > 0 && rl_shape_numel(&v->shape) != 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "%s of shape %s must be a scalar",
			                      what[i], rl_sstr(&v->shape, b));
	}
	int64_t dt = rl_node_attr_int(n, "output_datatype", RL_DT_FLOAT);
	if (dt <= 0 || dt >= RL_DT_COUNT_ || !rl_dtype_is_numeric((enum rl_dtype)dt) ||
	    rl_dtype_is_lowp((enum rl_dtype)dt))
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED, "attribute output_datatype=%lld is "
		                      "not a type rlopt computes", (long long)dt);
	struct rl_shape out = {.rank = 2};
	out.d[0] = rl_dim_unk(g, node, 0, 0);
	out.d[1] = rl_dim_unk(g, node, 0, 1);
	uint32_t nb = n->in[0], dl = n->in[1];
	if (rl_value_is_const(g, dl) && g->values[dl].data) {
		int64_t len = rl_value_get_int(g, dl, 0);
		if (len < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "dft_length %lld is negative",
			                      (long long)len);
		out.d[0] = rl_dim_num(len / 2 + 1);
	}
	if (rl_value_is_const(g, nb) && g->values[nb].data) {
		int64_t bins = rl_value_get_int(g, nb, 0);
		if (bins < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "num_mel_bins %lld is negative",
			                      (long long)bins);
		out.d[1] = rl_dim_num(bins);
	}
	return rl_infer_set(g, node, 0, (enum rl_dtype)dt, &out);
}

enum rl_status rl_infer_const(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_Constant: return infer_constant(g, node);
	case RL_OP_ConstantOfShape: return infer_const_of_shape(g, node);
	case RL_OP_Range: return infer_range(g, node);
	case RL_OP_EyeLike: return infer_eyelike(g, node);
	case RL_OP_HannWindow: case RL_OP_HammingWindow: case RL_OP_BlackmanWindow:
		return infer_window(g, node);
	case RL_OP_MelWeightMatrix: return infer_melweight(g, node);
	default:
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no generator shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * Generators read no tensor data (their inputs are a shape, scalars, or, for
 * EyeLike, only the input's shape) and write their output once:
 *   Constant          0 bytes, 0 FLOPs: the data is in the program image;
 *                     its consumers are charged for reading it
 *   ConstantOfShape   write numel(Y) elements, 0 FLOPs
 *   EyeLike           write numel(Y) elements, 0 FLOPs
 *   Range             write numel(Y) elements, one add each: numel(Y) FLOPs
 *   HannWindow, HammingWindow  write numel(Y), a cosine and two FLOPs each:
 *                     numel(Y) * (2 + T)
 *   BlackmanWindow    two cosines: numel(Y) * (4 + 2T)
 *   MelWeightMatrix   writes numel(Y); per mel band edge (num_mel_bins + 2)
 *                     one pow and 6 FLOPs, per element at most 2:
 *                     (cols + 2) * (6 + T) + 2 * numel(Y)
 */
#include "cost_impl.h"

bool rl_count_const(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	c->bytes_read = c->weight_bytes = 0;
	c->flops = 0;
	switch (n->op) {
	case RL_OP_Constant:
		c->bytes_write = 0;
		return true;
	case RL_OP_ConstantOfShape: case RL_OP_EyeLike:
		return true;
	case RL_OP_Range:
		c->flops = rl_cnt_out(g, n, 0);
		return true;
	case RL_OP_HannWindow: case RL_OP_HammingWindow:
		c->flops = rl_cnt_out(g, n, 0) * (2 + RL_FLOPS_TRANS);
		return true;
	case RL_OP_BlackmanWindow:
		c->flops = rl_cnt_out(g, n, 0) * (4 + 2 * RL_FLOPS_TRANS);
		return true;
	case RL_OP_MelWeightMatrix: {
		const struct rl_value *y = &g->values[n->out[0]];
		double cols = y->shape.rank == 2 && y->shape.d[1].v >= 0 ? (double)y->shape.d[1].v : 0;
		c->flops = (cols + 2) * (6 + RL_FLOPS_TRANS) + 2 * rl_cnt_out(g, n, 0);
		return true;
	}
	default:
		return false;
	}
}
