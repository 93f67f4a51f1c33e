/*
 * fam_shape.c - shape and dtype inference for data movement and shape
 * computation: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
 * Split, Slice, Gather, GatherElements, Expand, Tile, Pad, Shape, Size,
 * DepthToSpace, SpaceToDepth, Trilu.
 *
 * Several of these take their parameters as attributes in early opsets and
 * as inputs later (Reshape shape at 5, Slice at 10, Pad at 11, Squeeze,
 * Unsqueeze and Split at 13, Pad axes at 18); rl_infer_list() reads either
 * by the node's opset. A parameter input that is not constant makes the
 * output shape data-dependent: the rank is still given where it is known
 * (Reshape: the length of the shape input) with "unk_*" dims, since the
 * code generator needs every dim bound before it emits code anyway.
 * Reshape/Expand/Tile targets are read with rl_infer_symints(), which also
 * sees the symbols that Shape of a symbolic tensor produced, so Reshape of
 * a `batch`x768 tensor to Concat(Shape(x)[0], 12, 64) stays `batch`x12x64.
 */
#include "infer_impl.h"

#include <stdlib.h>
#include <string.h>

/* Most Split outputs handled (a list this long of outputs is not a model
 * anyone exports; it bounds a stack buffer). */
#define RL_SPLIT_MAX 1024

/* a*b for dims, -1 on overflow past RL_DIM_LIMIT^2 territory */
static int64_t mul_sat(int64_t a, int64_t b)
{
	if (a < 0 || b < 0)
		return -1;
	if (a && b > INT64_MAX / a)
		return -1;
	return a * b;
}

static void unk_shape(struct rl_graph *g, uint32_t node, int rank,
                      struct rl_shape *out)
{
	out->rank = rank;
	for (int i = 0; i < rank && i < RL_MAX_RANK; i++)
		out->d[i] = rl_dim_unk(g, node, 0, i);
}

/* ---- Reshape ------------------------------------------------------------ */

static void target_str(const struct rl_symint *t, int nt, char *buf, size_t n)
{
	size_t p = 0;
	buf[0] = 0;
	for (int i = 0; i < nt && p < n; i++) {
		if (t[i].sym)
			p += (size_t)snprintf(buf + p, n - p, "%s%s", i ? "x" : "", t[i].sym);
		else
			p += (size_t)snprintf(buf + p, n - p, "%s%lld", i ? "x" : "",
			                      (long long)t[i].v);
	}
	if (nt == 0)
		snprintf(buf, n, "scalar");
}

static enum rl_status infer_reshape(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	struct rl_symint t[RL_MAX_RANK];
	int nt;
	enum rl_status st = RL_OK;
	struct rl_shape out = {.rank = -1};
	char bx[RL_SSTR], bt[RL_SSTR];
	if (n->nin < 2) { /* Reshape-1: shape attribute */
		int64_t tv[RL_MAX_RANK];
		nt = rl_infer_list(g, node, "shape", 1, 0, tv, RL_MAX_RANK, &st);
		if (nt == RL_LIST_ERROR)
			return st;
		if (nt < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "attribute 'shape' is missing");
		for (int i = 0; i < nt; i++)
			t[i] = (struct rl_symint){tv[i], NULL};
	} else {
		struct rl_value *sv = rl_infer_in(g, n, 1);
		if ((st = rl_infer_dtype_in(g, node, 1, RL_TC_INT)))
			return st;
		if (sv->shape.rank > 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "shape input '%s' has shape %s; it must be 1-D",
			                      sv->name, rl_sstr(&sv->shape, bx));
		int64_t len = sv->shape.rank == 1 ? sv->shape.d[0].v
		                                  : sv->shape.rank == 0 ? 1 : -1;
		if (len > RL_MAX_RANK)
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                      "target rank %lld is over rlopt's limit of %d",
			                      (long long)len, RL_MAX_RANK);
		nt = rl_infer_symints(g, n->in[1], t, RL_MAX_RANK);
		if (nt < 0) {
			if (len >= 0)
				unk_shape(g, node, (int)len, &out);
			return rl_infer_set(g, node, 0, x->dtype, &out);
		}
	}
	bool allowzero = n->opset >= 14 && rl_node_attr_int(n, "allowzero", 0) != 0;
	int neg = -1;
	bool has_zero = false;
	out.rank = nt;
	target_str(t, nt, bt, sizeof(bt));
	for (int i = 0; i < nt; i++) {
		if (t[i].sym) {
			out.d[i] = (struct rl_dim){RL_DIM_SYMBOLIC, t[i].sym};
		} else if (t[i].v == -1) {
			if (neg >= 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "target shape %s has more than one -1", bt);
			neg = i;
			out.d[i] = rl_dim_num(1); /* placeholder, excluded below */
		} else if (t[i].v == 0 && !allowzero) {
			if (sx->rank >= 0 && i >= sx->rank)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "target shape %s copies dimension %d with 0, "
				                      "but the input %s has rank %d", bt, i,
				                      rl_sstr(sx, bx), sx->rank);
			out.d[i] = sx->rank >= 0 ? sx->d[i] : rl_dim_unk(g, node, 0, i);
		} else if (t[i].v < 0) {
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "target shape %s has invalid dimension %lld", bt,
			                      (long long)t[i].v);
		} else {
			has_zero |= t[i].v == 0;
			out.d[i] = rl_dim_num(t[i].v);
		}
	}
	if (allowzero && has_zero && neg >= 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "target shape %s has both 0 and -1 with allowzero=1", bt);
	if (sx->rank < 0) {
		if (neg >= 0)
			out.d[neg] = rl_dim_unk(g, node, 0, neg);
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	/* Element counts: the static parts must agree once the symbols that
	 * appear on both sides cancel. */
	int64_t pin = 1, pout = 1;
	const char *sin[RL_MAX_RANK], *sout[RL_MAX_RANK];
	int nsin = 0, nsout = 0;
	bool opaque = false; /* an unnamed unknown dim: nothing can be said */
	for (int i = 0; i < sx->rank; i++) {
		if (sx->d[i].v >= 0)
			pin = mul_sat(pin, sx->d[i].v);
		else if (sx->d[i].sym)
			sin[nsin++] = sx->d[i].sym;
		else
			opaque = true;
	}
	for (int i = 0; i < nt; i++) {
		if (i == neg)
			continue;
		if (out.d[i].v >= 0)
			pout = mul_sat(pout, out.d[i].v);
		else if (out.d[i].sym)
			sout[nsout++] = out.d[i].sym;
		else
			opaque = true;
	}
	for (int i = 0; i < nsin; i++)
		for (int j = 0; j < nsout; j++)
			if (sout[j] && sin[i] && strcmp(sin[i], sout[j]) == 0) {
				sin[i] = sout[j] = NULL;
				break;
			}
	int rin = 0, rout = 0, last_in = -1;
	for (int i = 0; i < nsin; i++)
		if (sin[i]) {
			rin++;
			last_in = i;
		}
	for (int j = 0; j < nsout; j++)
		rout += sout[j] != NULL;
	if (pin < 0 || pout < 0)
		opaque = true;
	if (!opaque && rin == 0 && rout == 0) {
		int64_t total = pin;
		if (neg >= 0) {
			if (pout == 0 || total % pout != 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "cannot reshape %lld elements into %s",
				                      (long long)total, bt);
			out.d[neg] = rl_dim_num(total / pout);
		} else if (total != pout) {
			if (nsin == 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "cannot reshape %lld elements into %s",
				                      (long long)total, bt);
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "cannot reshape %s into %s", rl_sstr(sx, bx), bt);
		}
	} else if (neg >= 0) {
		if (!opaque && rin == 1 && rout == 0 && pin == pout)
			out.d[neg] = (struct rl_dim){RL_DIM_SYMBOLIC, sin[last_in]};
		else
			out.d[neg] = rl_dim_unk(g, node, 0, neg);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- Flatten, Squeeze, Unsqueeze, Transpose ------------------------------ */

static enum rl_status infer_flatten(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = 2};
	int64_t a = rl_node_attr_int(n, "axis", 1);
	if (sx->rank < 0) {
		unk_shape(g, node, 2, &out);
		if (a == 0)
			out.d[0] = rl_dim_num(1);
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	int axis;
	char b[RL_SSTR];
	if ((a < 0 && n->opset < 11) || !rl_axis_norm(a, sx->rank, true, &axis))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "axis %lld is out of range for input %s", (long long)a,
		                      rl_sstr(sx, b));
	out.d[0] = rl_dim_prod(g, node, 0, 0, sx->d, axis);
	out.d[1] = rl_dim_prod(g, node, 0, 1, sx->d + axis, sx->rank - axis);
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_squeeze(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	enum rl_status st = RL_OK;
	int64_t axes[RL_MAX_RANK + 1];
	char b[RL_SSTR];
	int cnt = rl_infer_list(g, node, "axes", 1, 13, axes, RL_MAX_RANK + 1, &st);
	if (cnt == RL_LIST_ERROR)
		return st;
	if (cnt == RL_LIST_UNKNOWN) {
		int64_t k = rl_shape_numel(&rl_infer_in(g, n, 1)->shape);
		if (sx->rank >= 0 && k >= 0 && k <= sx->rank)
			unk_shape(g, node, sx->rank - (int)k, &out);
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, &out);
	out.rank = 0;
	if (cnt <= 0) {
		/* every dim of size 1; a symbolic dim might be 1, so the rank is
		 * unknown until it is bound */
		for (int i = 0; i < sx->rank; i++)
			if (sx->d[i].v < 0) {
				out.rank = -1;
				return rl_infer_set(g, node, 0, x->dtype, &out);
			}
		for (int i = 0; i < sx->rank; i++)
			if (sx->d[i].v != 1)
				out.d[out.rank++] = sx->d[i];
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	bool drop[RL_MAX_RANK] = {false};
	for (int i = 0; i < cnt; i++) {
		int a;
		if (!rl_axis_norm(axes[i], sx->rank, false, &a))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)axes[i], rl_sstr(sx, b));
		if (drop[a])
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is repeated",
			                      (long long)axes[i]);
		if (sx->d[a].v >= 0 && sx->d[a].v != 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "cannot squeeze axis %d of size %lld (input %s)", a,
			                      (long long)sx->d[a].v, rl_sstr(sx, b));
		drop[a] = true; /* a symbolic dim is taken to be 1 */
	}
	for (int i = 0; i < sx->rank; i++)
		if (!drop[i])
			out.d[out.rank++] = sx->d[i];
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_unsqueeze(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	enum rl_status st = RL_OK;
	int64_t axes[RL_MAX_RANK + 1];
	char b[RL_SSTR];
	int cnt = rl_infer_list(g, node, "axes", 1, 13, axes, RL_MAX_RANK + 1, &st);
	if (cnt == RL_LIST_ERROR)
		return st;
	if (cnt == RL_LIST_ABSENT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "axes are missing");
	if (cnt == RL_LIST_UNKNOWN) {
		int64_t k = rl_shape_numel(&rl_infer_in(g, n, 1)->shape);
		if (sx->rank >= 0 && k >= 0 && sx->rank + k <= RL_MAX_RANK)
			unk_shape(g, node, sx->rank + (int)k, &out);
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, &out);
	int r = sx->rank + cnt;
	if (r > RL_MAX_RANK)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "output rank %d is over rlopt's limit of %d", r,
		                      RL_MAX_RANK);
	bool ins[RL_MAX_RANK] = {false};
	for (int i = 0; i < cnt; i++) {
		int a;
		if (!rl_axis_norm(axes[i], r, false, &a))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for output rank %d "
			                      "(input %s)", (long long)axes[i], r, rl_sstr(sx, b));
		if (ins[a])
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is repeated",
			                      (long long)axes[i]);
		ins[a] = true;
	}
	out.rank = r;
	for (int i = 0, j = 0; i < r; i++)
		out.d[i] = ins[i] ? rl_dim_num(1) : sx->d[j++];
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

bool rl_transpose_perm(const struct rl_node *n, int rank, int *perm)
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

static enum rl_status infer_transpose(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	if (sx->rank >= 0) {
		int perm[RL_MAX_RANK];
		char b[RL_SSTR];
		if (!rl_transpose_perm(n, sx->rank, perm))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "perm is not a permutation of the %d axes of %s",
			                      sx->rank, rl_sstr(sx, b));
		out.rank = sx->rank;
		for (int i = 0; i < sx->rank; i++)
			out.d[i] = sx->d[perm[i]];
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- Concat, Split ------------------------------------------------------ */

static enum rl_status infer_concat(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x0 = rl_infer_in(g, n, 0);
	const struct rl_attr *aa = rl_node_attr(n, "axis");
	if (!aa || aa->kind != RL_ATTR_INT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "attribute 'axis' is missing");
	int rank = -1;
	for (int i = 0; i < n->nin; i++) {
		enum rl_status st = rl_infer_dtype_same(g, node, 0, i);
		if (st != RL_OK)
			return st;
		int r = rl_infer_in(g, n, i)->shape.rank;
		char b0[RL_SSTR], b1[RL_SSTR];
		if (r >= 0 && rank >= 0 && r != rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "inputs of shapes %s and %s differ in rank",
			                      rl_sstr(&x0->shape, b0),
			                      rl_sstr(&rl_infer_in(g, n, i)->shape, b1));
		if (r >= 0)
			rank = r;
	}
	struct rl_shape out = {.rank = -1};
	if (rank < 0)
		return rl_infer_set(g, node, 0, x0->dtype, &out);
	int axis;
	char b[RL_SSTR], b2[RL_SSTR];
	if (rank == 0)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "cannot concatenate scalars");
	if (!rl_axis_norm(aa->i, rank, false, &axis))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for rank %d",
		                      (long long)aa->i, rank);
	out.rank = rank;
	for (int d = 0; d < rank; d++)
		out.d[d] = (struct rl_dim){RL_DIM_SYMBOLIC, NULL};
	int64_t sum = 0;
	bool sum_known = true;
	const char *sym = NULL; /* the one symbol of a concat of one symbolic part */
	int nsym = 0;
	for (int i = 0; i < n->nin; i++) {
		const struct rl_shape *si = &rl_infer_in(g, n, i)->shape;
		if (si->rank < 0) {
			sum_known = false;
			nsym = 2;
			continue;
		}
		for (int d = 0; d < rank; d++) {
			if (d == axis)
				continue;
			if (rl_dim_differ(out.d[d], si->d[d]))
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "input %d of shape %s does not match %s outside "
				                      "axis %d", i, rl_sstr(si, b), rl_sstr(&out, b2),
				                      axis);
			/* prefer a number, then a user's symbol, over unknown */
			if (si->d[d].v >= 0 || (out.d[d].v < 0 && rl_dim_is_unk(&out.d[d])))
				out.d[d] = si->d[d];
		}
		if (si->d[axis].v >= 0) {
			sum += si->d[axis].v;
			if (sum > RL_DIM_LIMIT)
				sum = RL_DIM_LIMIT + 1; /* reported by rl_infer_set */
		} else {
			sum_known = false;
			sym = si->d[axis].sym;
			nsym++;
		}
	}
	if (sum_known)
		out.d[axis] = rl_dim_num(sum);
	else if (nsym == 1 && sum == 0 && sym)
		out.d[axis] = (struct rl_dim){RL_DIM_SYMBOLIC, sym};
	else
		out.d[axis] = rl_dim_unk(g, node, 0, axis);
	return rl_infer_set(g, node, 0, x0->dtype, &out);
}

static enum rl_status infer_split(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	int nout = n->nout;
	char b[RL_SSTR];
	if (nout > RL_SPLIT_MAX)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "%d outputs; rlopt handles at most %d", nout, RL_SPLIT_MAX);
	int64_t *sizes = malloc((RL_SPLIT_MAX + 1) * sizeof(*sizes));
	if (!sizes)
		return rl_graph_error(g, n, RL_ERR_NOMEM, "out of memory");
	enum rl_status st = RL_OK;
	int cnt = rl_infer_list(g, node, "split", 1, 13, sizes, RL_SPLIT_MAX + 1, &st);
	if (cnt == RL_LIST_ERROR)
		goto done;
	if (sx->rank < 0) {
		struct rl_shape unk = {.rank = -1};
		for (int k = 0; k < nout && st == RL_OK; k++)
			st = rl_infer_set(g, node, k, x->dtype, &unk);
		goto done;
	}
	int axis;
	int64_t a = rl_node_attr_int(n, "axis", 0);
	if (!rl_axis_norm(a, sx->rank, false, &axis)) {
		st = rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is out of range for input %s",
		                    (long long)a, rl_sstr(sx, b));
		goto done;
	}
	struct rl_dim dim = sx->d[axis];
	const struct rl_attr *numo = n->opset >= 18 ? rl_node_attr(n, "num_outputs") : NULL;
	if (numo && cnt >= 0) {
		st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                    "split and num_outputs cannot both be given");
		goto done;
	}
	if (numo && numo->i != nout) {
		st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                    "num_outputs is %lld but the node has %d outputs",
		                    (long long)numo->i, nout);
		goto done;
	}
	if (cnt >= 0) {
		if (cnt != nout) {
			st = rl_graph_error(g, n, RL_ERR_SHAPE,
			                    "split has %d sizes for %d outputs", cnt, nout);
			goto done;
		}
		int64_t sum = 0;
		for (int k = 0; k < cnt; k++) {
			if (sizes[k] < 0 || sizes[k] > RL_DIM_LIMIT) {
				st = rl_graph_error(g, n, RL_ERR_SHAPE, "split size %lld is invalid",
				                    (long long)sizes[k]);
				goto done;
			}
			sum += sizes[k];
		}
		if (dim.v >= 0 && sum != dim.v) {
			st = rl_graph_error(g, n, RL_ERR_SHAPE,
			                    "split sizes sum to %lld but axis %d of %s has %lld",
			                    (long long)sum, axis, rl_sstr(sx, b), (long long)dim.v);
			goto done;
		}
	} else if (cnt == RL_LIST_ABSENT && !numo && n->opset >= 18) {
		st = rl_graph_error(g, n, RL_ERR_SHAPE,
		                    "Split-%d needs the split input or num_outputs", n->opset);
		goto done;
	} else if (cnt == RL_LIST_ABSENT && dim.v >= 0) {
		if (numo) { /* Split-18: ceil-sized chunks, the last one smaller */
			int64_t chunk = (dim.v + nout - 1) / nout;
			if (chunk * (nout - 1) > dim.v) {
				st = rl_graph_error(g, n, RL_ERR_SHAPE,
				                    "axis %d of %s (size %lld) does not split into %d "
				                    "chunks of %lld", axis, rl_sstr(sx, b),
				                    (long long)dim.v, nout, (long long)chunk);
				goto done;
			}
			for (int k = 0; k < nout; k++)
				sizes[k] = k < nout - 1 ? chunk : dim.v - chunk * (nout - 1);
		} else {
			if (dim.v % nout != 0) {
				st = rl_graph_error(g, n, RL_ERR_SHAPE,
				                    "axis %d of %s (size %lld) does not split evenly "
				                    "into %d outputs", axis, rl_sstr(sx, b),
				                    (long long)dim.v, nout);
				goto done;
			}
			for (int k = 0; k < nout; k++)
				sizes[k] = dim.v / nout;
		}
		cnt = nout;
	}
	for (int k = 0; k < nout && st == RL_OK; k++) {
		struct rl_shape out = *sx;
		if (cnt >= 0)
			out.d[axis] = rl_dim_num(sizes[k]);
		else if (nout == 1 && cnt == RL_LIST_ABSENT)
			out.d[axis] = dim; /* the whole symbolic axis */
		else
			out.d[axis] = rl_dim_unk(g, node, k, axis);
		st = rl_infer_set(g, node, k, x->dtype, &out);
	}
done:
	free(sizes);
	return st;
}

/* ---- Slice -------------------------------------------------------------- */

enum rl_status rl_slice_plan(struct rl_graph *g, uint32_t node,
                             struct rl_slice_plan *p)
{
	struct rl_node *n = &g->nodes[node];
	const struct rl_shape *sx = &rl_infer_in(g, n, 0)->shape;
	int r = sx->rank;
	memset(p, 0, sizeof(*p));
	enum rl_status st = RL_OK;
	int64_t starts[RL_MAX_RANK], ends[RL_MAX_RANK], axes[RL_MAX_RANK],
		steps[RL_MAX_RANK];
	int ns = rl_infer_list(g, node, "starts", 1, 10, starts, RL_MAX_RANK, &st);
	int ne = ns == RL_LIST_ERROR ? ns
	                             : rl_infer_list(g, node, "ends", 2, 10, ends,
	                                             RL_MAX_RANK, &st);
	int na = ne == RL_LIST_ERROR ? ne
	                             : rl_infer_list(g, node, "axes", 3, 10, axes,
	                                             RL_MAX_RANK, &st);
	int nst = RL_LIST_ABSENT;
	if (n->opset >= 10 && na != RL_LIST_ERROR)
		nst = rl_infer_list(g, node, NULL, 4, 10, steps, RL_MAX_RANK, &st);
	if (ns == RL_LIST_ERROR || ne == RL_LIST_ERROR || na == RL_LIST_ERROR ||
	    nst == RL_LIST_ERROR)
		return st;
	if (ns == RL_LIST_ABSENT || ne == RL_LIST_ABSENT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "starts and ends are required");
	if (r < 0)
		return RL_OK;
	/* the count is the length of starts, known from its shape even when the
	 * values are not */
	int k = ns;
	if (ns == RL_LIST_UNKNOWN) {
		int64_t len = rl_shape_numel(&rl_infer_in(g, n, 1)->shape);
		k = len >= 0 && len <= RL_MAX_RANK ? (int)len : -1;
	}
	if ((ns >= 0 && ne >= 0 && ns != ne) || (na >= 0 && k >= 0 && na != k) ||
	    (nst >= 0 && k >= 0 && nst != k))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "starts, ends, axes and steps differ in length");
	if (na == RL_LIST_UNKNOWN || (na == RL_LIST_ABSENT && k < 0))
		return RL_OK; /* which axes is not known */
	if (na == RL_LIST_ABSENT) {
		if (k > r)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "%d starts for an input of rank %d", k, r);
		for (int i = 0; i < k; i++)
			axes[i] = i;
		na = k;
	}
	int ax[RL_MAX_RANK];
	char b[RL_SSTR];
	for (int i = 0; i < na; i++) {
		if (!rl_axis_norm(axes[i], r, false, &ax[i]))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)axes[i], rl_sstr(sx, b));
		if (p->sliced[ax[i]])
			return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is repeated",
			                      (long long)axes[i]);
		p->sliced[ax[i]] = true;
	}
	p->axes_known = true;
	for (int i = 0; i < r; i++) {
		p->start[i] = 0;
		p->step[i] = 1;
		p->len[i] = sx->d[i].v;
	}
	if (nst >= 0)
		for (int i = 0; i < nst; i++)
			if (steps[i] == 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE, "step %d is zero", i);
	if (ns < 0 || ne < 0 || nst == RL_LIST_UNKNOWN)
		return RL_OK;
	for (int i = 0; i < na; i++) {
		int a = ax[i];
		int64_t step = nst >= 0 ? steps[i] : 1, s = starts[i], e = ends[i];
		if (step == INT64_MIN)
			step = -INT64_MAX; /* same slice, and -step stays representable */
		p->step[a] = step;
		int64_t dim = sx->d[a].v;
		if (dim < 0) {
			/* the idioms for "all of it", forwards and backwards */
			p->whole[a] = (step == 1 && s == 0 && e >= RL_DIM_LIMIT) ||
			              (step == -1 && s == -1 && e <= -RL_DIM_LIMIT);
			p->len[a] = -1;
			continue;
		}
		if (s < 0)
			s += dim;
		if (e < 0)
			e += dim;
		int64_t len;
		if (step > 0) {
			s = s < 0 ? 0 : s > dim ? dim : s;
			e = e < 0 ? 0 : e > dim ? dim : e;
			len = e > s ? (e - s - 1) / step + 1 : 0;
		} else {
			s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			len = s > e ? (s - e - 1) / -step + 1 : 0;
			if (dim == 0) {
				s = 0;
				len = 0;
			}
		}
		p->start[a] = s;
		p->len[a] = len;
	}
	p->known = true;
	return RL_OK;
}

static enum rl_status infer_slice(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	for (int i = 1; i < 5; i++) {
		enum rl_status st = rl_infer_dtype_in(g, node, i, RL_TC_INDEX);
		if (st != RL_OK)
			return st;
	}
	struct rl_slice_plan p;
	enum rl_status st = rl_slice_plan(g, node, &p);
	if (st != RL_OK)
		return st;
	struct rl_shape out = {.rank = sx->rank};
	for (int i = 0; i < sx->rank; i++) {
		if (p.axes_known && !p.sliced[i])
			out.d[i] = sx->d[i];
		else if (p.known && p.len[i] >= 0)
			out.d[i] = rl_dim_num(p.len[i]);
		else if (p.known && p.whole[i])
			out.d[i] = sx->d[i];
		else
			out.d[i] = rl_dim_unk(g, node, 0, i);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- Gather, GatherElements --------------------------------------------- */

/* With constant indices, every index must be in [-dim, dim-1]. */
static enum rl_status check_indices(struct rl_graph *g, uint32_t node, int slot,
                                    int64_t dim, int axis)
{
	struct rl_node *n = &g->nodes[node];
	uint32_t iv = n->in[slot];
	if (dim < 0 || !rl_value_is_const(g, iv))
		return RL_OK;
	struct rl_value *val = &g->values[iv];
	int64_t ne = rl_shape_numel(&val->shape);
	if (ne < 0 || ne > (1 << 20) || !val->data ||
	    val->nbytes < (size_t)ne * rl_dtype_size(val->dtype))
		return RL_OK;
	for (int64_t i = 0; i < ne; i++) {
		int64_t ix = rl_value_get_int(g, iv, i);
		if (ix < -dim || ix >= dim)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "index %lld is out of range for axis %d of size %lld",
			                      (long long)ix, axis, (long long)dim);
	}
	return RL_OK;
}

static enum rl_status infer_gather(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *ind = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INDEX);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape, *si = &ind->shape;
	struct rl_shape out = {.rank = -1};
	char b[RL_SSTR], b2[RL_SSTR];
	int64_t a = rl_node_attr_int(n, "axis", 0);
	int axis = 0;
	if (sx->rank >= 0) {
		if (sx->rank == 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "cannot gather from a scalar");
		if (!rl_axis_norm(a, sx->rank, false, &axis))
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "axis %lld is out of range for input %s",
			                      (long long)a, rl_sstr(sx, b));
		st = check_indices(g, node, 1, sx->d[axis].v, axis);
		if (st != RL_OK)
			return st;
	}
	if (n->op == RL_OP_GatherElements) {
		if (sx->rank >= 0 && si->rank >= 0 && sx->rank != si->rank)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "indices of shape %s must have the rank of the data %s",
			                      rl_sstr(si, b2), rl_sstr(sx, b));
		return rl_infer_set(g, node, 0, x->dtype, si);
	}
	if (sx->rank >= 0 && si->rank >= 0) {
		int r = sx->rank - 1 + si->rank;
		if (r > RL_MAX_RANK)
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                      "output rank %d is over rlopt's limit of %d", r,
			                      RL_MAX_RANK);
		out.rank = 0;
		for (int i = 0; i < axis; i++)
			out.d[out.rank++] = sx->d[i];
		for (int i = 0; i < si->rank; i++)
			out.d[out.rank++] = si->d[i];
		for (int i = axis + 1; i < sx->rank; i++)
			out.d[out.rank++] = sx->d[i];
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- Expand, Tile, Pad -------------------------------------------------- */

static enum rl_status infer_expand(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *sv = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INT);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = -1};
	char b[RL_SSTR];
	if (sv->shape.rank > 1)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "shape input '%s' has shape %s; it must be 1-D",
		                      sv->name, rl_sstr(&sv->shape, b));
	int64_t len = sv->shape.rank == 1 ? sv->shape.d[0].v : sv->shape.rank == 0 ? 1 : -1;
	if (len > RL_MAX_RANK)
		return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
		                      "target rank %lld is over rlopt's limit of %d",
		                      (long long)len, RL_MAX_RANK);
	struct rl_symint t[RL_MAX_RANK];
	int nt = rl_infer_symints(g, n->in[1], t, RL_MAX_RANK);
	if (nt >= 0) {
		struct rl_shape ts = {.rank = nt};
		for (int i = 0; i < nt; i++) {
			if (!t[i].sym && t[i].v < 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "target shape has negative dimension %lld",
				                      (long long)t[i].v);
			ts.d[i] = t[i].sym ? (struct rl_dim){RL_DIM_SYMBOLIC, t[i].sym}
			                   : rl_dim_num(t[i].v);
		}
		st = rl_infer_broadcast(g, node, sx, &ts, &out);
		if (st != RL_OK)
			return st;
	} else if (len >= 0 && sx->rank >= 0) {
		/* target unknown: a dim other than 1 survives the broadcast */
		int r = sx->rank > len ? sx->rank : (int)len;
		out.rank = r;
		for (int i = 0; i < r; i++) {
			int ix = i - (r - sx->rank);
			if (ix >= 0 && sx->d[ix].v >= 0 && sx->d[ix].v != 1)
				out.d[i] = sx->d[ix];
			else if (ix >= 0 && i < r - len) /* no target dim above it */
				out.d[i] = sx->d[ix];
			else
				out.d[i] = rl_dim_unk(g, node, 0, i);
		}
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_tile(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *rv = rl_infer_in(g, n, 1);
	enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INT);
	if (st != RL_OK)
		return st;
	const struct rl_shape *sx = &x->shape;
	struct rl_shape out = {.rank = sx->rank};
	char b[RL_SSTR], b2[RL_SSTR];
	if (rv->shape.rank > 1 || (rv->shape.rank == 1 && sx->rank >= 0 &&
	                           rl_dim_differ(rv->shape.d[0], rl_dim_num(sx->rank))))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "repeats of shape %s must be 1-D with one entry per axis "
		                      "of the input %s", rl_sstr(&rv->shape, b),
		                      rl_sstr(sx, b2));
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, &out);
	struct rl_symint t[RL_MAX_RANK];
	int nt = rl_infer_symints(g, n->in[1], t, RL_MAX_RANK);
	if (nt >= 0 && nt != sx->rank)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "%d repeats for an input of rank %d", nt, sx->rank);
	for (int i = 0; i < sx->rank; i++) {
		struct rl_dim d = sx->d[i];
		if (nt < 0 || t[i].sym) {
			out.d[i] = rl_dim_unk(g, node, 0, i);
		} else if (t[i].v < 0) {
			return rl_graph_error(g, n, RL_ERR_SHAPE, "repeat %d is negative (%lld)", i,
			                      (long long)t[i].v);
		} else if (d.v >= 0) {
			int64_t m = mul_sat(d.v, t[i].v);
			out.d[i] = rl_dim_num(m < 0 ? RL_DIM_LIMIT + 1 : m);
		} else {
			out.d[i] = t[i].v == 1 ? d : t[i].v == 0 ? rl_dim_num(0)
			                                         : rl_dim_unk(g, node, 0, i);
		}
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_pad(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	char b[RL_SSTR];
	const char *mode = rl_node_attr_str(n, "mode", "constant");
	if (strcmp(mode, "constant") != 0 && strcmp(mode, "reflect") != 0 &&
	    strcmp(mode, "edge") != 0 && !(strcmp(mode, "wrap") == 0 && n->opset >= 19))
		return rl_graph_error(g, n, RL_ERR_SHAPE, "unknown pad mode '%s'", mode);
	enum rl_status st = RL_OK;
	if (n->opset >= 11) {
		st = rl_infer_dtype_in(g, node, 1, RL_TC_INT);
		if (st == RL_OK)
			st = rl_infer_dtype_same(g, node, 0, 2);
		if (st == RL_OK)
			st = rl_infer_dtype_in(g, node, 3, RL_TC_INDEX);
		struct rl_value *cv = rl_infer_in(g, n, 2);
		if (st == RL_OK && cv && cv->shape.rank > 0 && rl_shape_numel(&cv->shape) != 1)
			st = rl_graph_error(g, n, RL_ERR_SHAPE,
			                    "constant_value of shape %s must be a scalar",
			                    rl_sstr(&cv->shape, b));
		if (st != RL_OK)
			return st;
	}
	int64_t pads[2 * RL_MAX_RANK], axes[RL_MAX_RANK];
	int np = rl_infer_list(g, node, "pads", 1, 11, pads, 2 * RL_MAX_RANK, &st);
	if (np == RL_LIST_ERROR)
		return st;
	if (np == RL_LIST_ABSENT)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "pads are missing");
	int na = n->opset >= 18 ? rl_infer_list(g, node, NULL, 3, 18, axes, RL_MAX_RANK, &st)
	                        : RL_LIST_ABSENT;
	if (na == RL_LIST_ERROR)
		return st;
	struct rl_shape out = {.rank = sx->rank};
	if (sx->rank < 0)
		return rl_infer_set(g, node, 0, x->dtype, &out);
	int r = sx->rank;
	if (np == RL_LIST_UNKNOWN || na == RL_LIST_UNKNOWN) {
		unk_shape(g, node, r, &out);
		return rl_infer_set(g, node, 0, x->dtype, &out);
	}
	int ax[RL_MAX_RANK];
	if (na == RL_LIST_ABSENT) {
		na = r;
		for (int i = 0; i < r; i++)
			ax[i] = i;
	} else {
		bool seen[RL_MAX_RANK] = {false};
		for (int i = 0; i < na; i++) {
			if (!rl_axis_norm(axes[i], r, false, &ax[i]))
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "axis %lld is out of range for input %s",
				                      (long long)axes[i], rl_sstr(sx, b));
			if (seen[ax[i]])
				return rl_graph_error(g, n, RL_ERR_SHAPE, "axis %lld is repeated",
				                      (long long)axes[i]);
			seen[ax[i]] = true;
		}
	}
	if (np != 2 * na)
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "pads has %d entries; %d expected for input %s", np,
		                      2 * na, rl_sstr(sx, b));
	out = *sx;
	for (int i = 0; i < na; i++) {
		int a = ax[i];
		int64_t pb = pads[i], pe = pads[na + i];
		if (pb < -RL_DIM_LIMIT || pb > RL_DIM_LIMIT || pe < -RL_DIM_LIMIT ||
		    pe > RL_DIM_LIMIT)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "pad %lld/%lld is out of range",
			                      (long long)pb, (long long)pe);
		struct rl_dim d = sx->d[a];
		if (d.v < 0) {
			out.d[a] = pb == 0 && pe == 0 ? d : rl_dim_unk(g, node, 0, a);
			continue;
		}
		int64_t o = d.v + pb + pe;
		if (o < 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE,
			                      "pads %lld and %lld on axis %d of %s leave a negative "
			                      "size", (long long)pb, (long long)pe, a, rl_sstr(sx, b));
		out.d[a] = rl_dim_num(o);
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

/* ---- Shape, Size -------------------------------------------------------- */

void rl_shape_op_range(const struct rl_node *n, int rank, int *start, int *end)
{
	int64_t s = 0, e = rank;
	if (n->opset >= 15) {
		s = rl_node_attr_int(n, "start", 0);
		e = rl_node_attr_int(n, "end", rank);
	}
	if (s < 0)
		s += rank;
	if (e < 0)
		e += rank;
	s = s < 0 ? 0 : s > rank ? rank : s;
	e = e < 0 ? 0 : e > rank ? rank : e;
	*start = (int)s;
	*end = (int)(e < s ? s : e);
}

static enum rl_status infer_shape_op(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	struct rl_shape out = {.rank = 1};
	if (n->op == RL_OP_Size) {
		out.rank = 0;
	} else if (x->shape.rank < 0) {
		out.d[0] = rl_dim_unk(g, node, 0, 0);
	} else {
		int s, e;
		rl_shape_op_range(n, x->shape.rank, &s, &e);
		out.d[0] = rl_dim_num(e - s);
	}
	return rl_infer_set(g, node, 0, RL_DT_INT64, &out);
}

/* ---- DepthToSpace, SpaceToDepth, Trilu ---------------------------------- */

static enum rl_status infer_depth_space(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0);
	const struct rl_shape *sx = &x->shape;
	char b[RL_SSTR];
	const struct rl_attr *ba = rl_node_attr(n, "blocksize");
	/* <= 2^10 keeps blocksize^2 * dim (dim <= 2^40) inside int64 */
	if (!ba || ba->kind != RL_ATTR_INT || ba->i < 1 || ba->i > (1 << 10))
		return rl_graph_error(g, n, RL_ERR_SHAPE,
		                      "attribute 'blocksize' is missing or invalid");
	int64_t bs = ba->i;
	if (n->op == RL_OP_DepthToSpace) {
		const char *mode = rl_node_attr_str(n, "mode", "DCR");
		if (strcmp(mode, "DCR") != 0 && strcmp(mode, "CRD") != 0)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "mode '%s' is not DCR or CRD",
			                      mode);
	}
	struct rl_shape out = {.rank = -1};
	if (sx->rank >= 0 && sx->rank != 4)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input of shape %s must have rank 4",
		                      rl_sstr(sx, b));
	if (sx->rank == 4) {
		out = *sx;
		bool d2s = n->op == RL_OP_DepthToSpace;
		struct rl_dim c = sx->d[1];
		if (d2s) {
			if (c.v >= 0 && c.v % (bs * bs) != 0)
				return rl_graph_error(g, n, RL_ERR_SHAPE,
				                      "%lld channels of %s do not divide by "
				                      "blocksize^2 = %lld", (long long)c.v,
				                      rl_sstr(sx, b), (long long)(bs * bs));
			out.d[1] = c.v >= 0 ? rl_dim_num(c.v / (bs * bs))
			                    : bs == 1 ? c : rl_dim_unk(g, node, 0, 1);
			for (int i = 2; i < 4; i++)
				out.d[i] = sx->d[i].v >= 0 ? rl_dim_num(sx->d[i].v * bs)
				                           : bs == 1 ? sx->d[i]
				                                     : rl_dim_unk(g, node, 0, i);
		} else {
			for (int i = 2; i < 4; i++) {
				struct rl_dim d = sx->d[i];
				if (d.v >= 0 && d.v % bs != 0)
					return rl_graph_error(g, n, RL_ERR_SHAPE,
					                      "axis %d of %s does not divide by blocksize "
					                      "%lld", i, rl_sstr(sx, b), (long long)bs);
				out.d[i] = d.v >= 0 ? rl_dim_num(d.v / bs)
				                    : bs == 1 ? d : rl_dim_unk(g, node, 0, i);
			}
			out.d[1] = c.v >= 0 ? rl_dim_num(c.v * bs * bs)
			                    : bs == 1 ? c : rl_dim_unk(g, node, 0, 1);
		}
	}
	return rl_infer_set(g, node, 0, x->dtype, &out);
}

static enum rl_status infer_trilu(struct rl_graph *g, uint32_t node)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_value *x = rl_infer_in(g, n, 0), *k = rl_infer_in(g, n, 1);
	char b[RL_SSTR];
	if (x->shape.rank >= 0 && x->shape.rank < 2)
		return rl_graph_error(g, n, RL_ERR_SHAPE, "input of shape %s needs rank >= 2",
		                      rl_sstr(&x->shape, b));
	if (k) {
		enum rl_status st = rl_infer_dtype_in(g, node, 1, RL_TC_INT);
		if (st != RL_OK)
			return st;
		if (k->shape.rank > 0 && rl_shape_numel(&k->shape) != 1)
			return rl_graph_error(g, n, RL_ERR_SHAPE, "k of shape %s must be a scalar",
			                      rl_sstr(&k->shape, b));
	}
	return rl_infer_set(g, node, 0, x->dtype, &x->shape);
}

enum rl_status rl_infer_shape(struct rl_graph *g, uint32_t node)
{
	switch (g->nodes[node].op) {
	case RL_OP_Reshape: return infer_reshape(g, node);
	case RL_OP_Flatten: return infer_flatten(g, node);
	case RL_OP_Squeeze: return infer_squeeze(g, node);
	case RL_OP_Unsqueeze: return infer_unsqueeze(g, node);
	case RL_OP_Transpose: return infer_transpose(g, node);
	case RL_OP_Concat: return infer_concat(g, node);
	case RL_OP_Split: return infer_split(g, node);
	case RL_OP_Slice: return infer_slice(g, node);
	case RL_OP_Gather:
	case RL_OP_GatherElements:
		return infer_gather(g, node);
	case RL_OP_Expand: return infer_expand(g, node);
	case RL_OP_Tile: return infer_tile(g, node);
	case RL_OP_Pad: return infer_pad(g, node);
	case RL_OP_Shape:
	case RL_OP_Size:
		return infer_shape_op(g, node);
	case RL_OP_DepthToSpace:
	case RL_OP_SpaceToDepth:
		return infer_depth_space(g, node);
	case RL_OP_Trilu: return infer_trilu(g, node);
	default:
		if (rl_op_table[g->nodes[node].op].flags & RL_OPF_INDEXF)
			return rl_infer_index(g, node);
		return rl_graph_error(g, &g->nodes[node], RL_ERR_UNSUPPORTED,
		                      "no shape rule for this operator");
	}
}

/* ---- cost ---------------------------------------------------------------- */
/*
 * Data movement: 0 FLOPs for every operator here. What changes is the bytes:
 *   Reshape, Flatten, Squeeze, Unsqueeze  views: 0 bytes (the emitter aliases)
 *   Shape, Size        read no data (the shape is known); write the output
 *   Gather             read the indices and only the gathered elements
 *                      (numel(Y) of them), write Y; access gathered
 *   GatherElements     the same, numel(Y) = numel(indices)
 *   Slice              read only the elements it keeps (numel(Y)), write Y
 *   Transpose, DepthToSpace, SpaceToDepth  baseline bytes, access strided
 *   Expand, Tile, Pad, Split, Trilu        read the data input (input 0)
 *                      once, write the outputs; the small shape, repeats,
 *                      pads, split and k inputs are not charged
 *   Concat             baseline (every input read once, Y written once)
 * weight_bytes keeps the part of the reads that comes from constants.
 */
#include "cost_impl.h"

/* Reads are `bytes` of input `slot`'s data (weight bytes if it is constant). */
static void shape_read(const struct rl_graph *g, const struct rl_node *n, int slot,
                       double bytes, struct rl_counts *c)
{
	c->bytes_read += bytes;
	if (rl_value_is_const(g, rl_node_in(n, slot)))
		c->weight_bytes += bytes;
}

bool rl_count_shape(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	c->flops = 0;
	if (rl_op_table[n->op].flags & RL_OPF_VIEW) {
		c->bytes_read = c->bytes_write = c->weight_bytes = 0;
		return true;
	}
	uint32_t x = rl_node_in(n, 0);
	double esz = (double)rl_dtype_size(g->values[x].dtype);
	switch (n->op) {
	case RL_OP_Shape: case RL_OP_Size:
		c->bytes_read = c->weight_bytes = 0;
		return true;
	case RL_OP_Gather: case RL_OP_GatherElements:
		c->bytes_read = c->weight_bytes = 0;
		shape_read(g, n, 1, rl_cnt_bytes(g, rl_node_in(n, 1)), c);
		shape_read(g, n, 0, rl_cnt_out(g, n, 0) * esz, c);
		c->access = RL_ACCESS_GATHER;
		return true;
	case RL_OP_Slice:
		c->bytes_read = c->weight_bytes = 0;
		shape_read(g, n, 0, rl_cnt_out(g, n, 0) * esz, c);
		return true;
	case RL_OP_Transpose: case RL_OP_DepthToSpace: case RL_OP_SpaceToDepth:
		c->access = RL_ACCESS_STRIDED;
		return true;
	case RL_OP_Expand: case RL_OP_Tile: case RL_OP_Pad: case RL_OP_Split:
	case RL_OP_Trilu:
		c->bytes_read = c->weight_bytes = 0;
		shape_read(g, n, 0, rl_cnt_bytes(g, x), c);
		return true;
	case RL_OP_Concat:
		return true;
	default:
		if (rl_op_table[n->op].flags & RL_OPF_INDEXF)
			return rl_count_index(g, node, c);
		return false;
	}
}
