/*
 * emit_shape.c - C kernels for the shape family: data movement.
 *
 * Every shape op moves bytes without computing on them, so kernels copy the
 * storage type (cg_ctype) and never convert: float16 stays uint16_t bits.
 *
 * Most of the family is one pattern, the affine copy: the output is written
 * in order and each output dim moves the read position by a fixed number of
 * elements. Transpose, Slice (negative steps are negative strides), Tile (a
 * repeat is a stride of 0), DepthToSpace and SpaceToDepth (a reshape, a
 * transpose and a reshape) all reduce to a list of (count, input stride)
 * pairs, which emit_affine_copy() turns into a loop nest whose innermost loop
 * runs over the output's last dim, with size-1 dims dropped and dims that
 * continue each other in the input merged.
 *
 * Reshape, Flatten, Squeeze and Unsqueeze keep the bytes as they are: one
 * memcpy. Shape and Size are normally evaluated by inference and never run;
 * when they do run, the kernel stores the (static) answer.
 *
 * Inputs that steer the copy (Slice starts/ends/axes/steps, Pad pads and
 * axes) must be constant at generation time; the output shape alone tells
 * Reshape, Expand, Tile and Split everything they need, so they ignore their
 * shape inputs. Gather and GatherElements take their indices at run time and
 * resolve negative ones there; an index still out of range after that gives
 * zeros (the spec leaves it undefined; this keeps the kernel in bounds).
 */
#include "emit_impl.h"
#include "emit_index.h"
#include "cost.h"

#include <string.h>

/* ---- helpers ------------------------------------------------------------- */

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

static bool norm_axis(int64_t axis, int rank, int *out)
{
	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank)
		return false;
	*out = (int)axis;
	return true;
}

static int64_t prod(const struct rl_shape *s, int from, int to)
{
	int64_t p = 1;
	for (int i = from; i < to; i++)
		p *= s->d[i].v;
	return p;
}

/* One tile dim of emit_tiled_copy: a loop over blocks of 16 of n (from
 * lo * 16 to hi * 16 where par), or one block where n <= 16; opens one brace. */
static void tile_dim(struct rl_cgen *cg, const char *b, const char *len, long long n, bool par)
{
	if (par)
		cg_line(cg, "for (size_t %s = (size_t)lo * 16; %s < (size_t)hi * 16 && %s < %lld; %s += 16) {",
		        b, b, b, n, b);
	else if (n > 16)
		cg_line(cg, "for (size_t %s = 0; %s < %lld; %s += 16) {", b, b, n, b);
	else
		cg_line(cg, "{");
	cg->indent++;
	if (par || n > 16)
		cg_line(cg, "const size_t %s = %lld - %s < 16 ? %lld - %s : 16;", len, n, b, n, b);
	else
		cg_line(cg, "const size_t %s = 0, %s = %lld;", b, len, n);
}

/*
 * emit_affine_copy's nest where the output's inner dim L = m - 1 is strided
 * in the input and dim kk is contiguous there (a transpose that moves the
 * inner axis: K^T in attention): tiles of 16 x 16 of dims kk and L, each
 * reading 16 input rows of 16 and writing 16 output rows of 16, so a tile's
 * lines and pages stay in L1 and its TLB. Element by element down the
 * input's columns, bert2's K transpose (128 x 768 -> 768 x 128) took 3
 * cycles an element, a TLB miss on most (stride 3 KB). The other dims loop
 * outside the tiles, the outermost split across threads where min_par > 0
 * (in blocks of 16 when it is kk).
 */
static void emit_tiled_copy(struct rl_cgen *cg, int m, const int64_t *mn, const int64_t *ms,
                            const int64_t *os, int kk, int64_t base, int64_t min_par, int64_t acc)
{
	const int L = m - 1;
	char xprev[32], yprev[32];
	snprintf(xprev, sizeof(xprev), "%lld", (long long)base);
	snprintf(yprev, sizeof(yprev), "0");
	int depth = 0;
	if (min_par > 0) {
		int64_t inner = acc / mn[0];
		if (kk == 0) {
			cg->par_n = (mn[0] + 15) / 16;
			cg->par_grain = (min_par + 16 * inner - 1) / (16 * inner);
		} else {
			cg->par_n = mn[0];
			cg->par_grain = (min_par + inner - 1) / inner;
		}
	}
	cg_line(cg, "/* tiles of 16 x 16: 16 input rows of 16 read, 16 output rows of 16 written */");
	for (int k = 0; k < L; k++) {
		if (k == kk)
			continue;
		if (k == 0 && min_par > 0)
			cg_line(cg, "for (size_t j0 = (size_t)lo; j0 < (size_t)hi; j0++) {");
		else
			cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", k, k, (long long)mn[k], k);
		cg->indent++;
		depth++;
		cg_line(cg, "const int64_t xo%d = %s + (int64_t)j%d * %lld;", k, xprev, k, (long long)ms[k]);
		cg_line(cg, "const size_t yo%d = %s + j%d * %lld;", k, yprev, k, (long long)os[k]);
		snprintf(xprev, sizeof(xprev), "xo%d", k);
		snprintf(yprev, sizeof(yprev), "yo%d", k);
	}
	long long nk = mn[kk], nl = mn[L];
	/* a dim of one tile gets no loop (a loop that runs once is filler), a
	 * block instead: three braces either way, with the i loop's */
	tile_dim(cg, "ib", "in", nk, kk == 0 && min_par > 0);
	tile_dim(cg, "jb", "jn", nl, false);
	cg_line(cg, "for (size_t i = 0; i < in; i++) {");
	cg->indent++;
	cg_line(cg, "const int64_t xi = %s + (int64_t)(ib + i);", xprev);
	cg_line(cg, "const size_t yi = %s + (ib + i) * %lld + jb;", yprev, (long long)os[kk]);
	cg_line(cg, "for (size_t j = 0; j < jn; j++)");
	cg_line(cg, "    Y0[yi + j] = X0[xi + (int64_t)(jb + j) * %lld];", (long long)ms[L]);
	cg_loops_close(cg, 3 + depth);
}

/*
 * Y0[...] = X0[base + sum_k j_k * s[k]] over output dims n[0..r) (row-major,
 * Y0 contiguous). Strides may be negative or zero. With min_par > 0 the
 * outermost merged loop is split across threads (cg->par_n) where the copy
 * has 2 x min_par elements or more, in chunks of at least min_par.
 */
static void emit_affine_copy(struct rl_cgen *cg, const char *ct, int r,
                             const int64_t *n, const int64_t *s, int64_t base, int64_t min_par)
{
	int64_t mn[4 * RL_MAX_RANK], ms[4 * RL_MAX_RANK];
	int m = 0;
	for (int k = 0; k < r; k++) {
		if (n[k] == 0) {
			cg_line(cg, "/* empty output: nothing to copy */");
			return;
		}
		if (n[k] == 1)
			continue;
		if (m && ms[m - 1] == s[k] * n[k]) {
			mn[m - 1] *= n[k];
			ms[m - 1] = s[k];
		} else {
			mn[m] = n[k];
			ms[m] = s[k];
			m++;
		}
	}
	if (m == 0) {
		cg_line(cg, "Y0[0] = X0[%lld];", (long long)base);
		return;
	}
	if (m == 1 && ms[0] == 1) {
		cg_line(cg, "memcpy(Y0, X0 + %lld, %lld * sizeof(%s));", (long long)base,
		        (long long)mn[0], ct);
		return;
	}
	int64_t os[4 * RL_MAX_RANK];
	int64_t acc = 1;
	for (int k = m - 1; k >= 0; k--) {
		os[k] = acc;
		acc *= mn[k];
	}
	/* the output's inner loop strided in the input, another dim contiguous
	 * there: tiles of 16 x 16 (emit_tiled_copy) */
	int kk = -1;
	if (ms[m - 1] != 0 && ms[m - 1] != 1 && mn[m - 1] >= 8)
		for (int k = 0; k < m - 1; k++)
			if (ms[k] == 1 && mn[k] >= 8)
				kk = k;
	bool par = min_par > 0 && acc >= 2 * min_par && mn[0] > 1;
	if (kk >= 0) {
		emit_tiled_copy(cg, m, mn, ms, os, kk, base, par ? min_par : 0, acc);
		return;
	}
	char xprev[32], yprev[32];
	snprintf(xprev, sizeof(xprev), "%lld", (long long)base);
	snprintf(yprev, sizeof(yprev), "0");
	if (par) {
		int64_t inner = acc / mn[0];
		cg->par_n = mn[0];
		cg->par_grain = (min_par + inner - 1) / inner;
	}
	for (int k = 0; k < m; k++) {
		if (k == 0 && par)
			cg_line(cg, "for (size_t j0 = (size_t)lo; j0 < (size_t)hi; j0++) {");
		else
			cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", k, k, (long long)mn[k], k);
		cg->indent++;
		if (k == m - 1)
			break;
		/* hoisted offsets of this level */
		if (strcmp(xprev, "0") == 0)
			cg_line(cg, "const int64_t xo%d = (int64_t)j%d * %lld;", k, k, (long long)ms[k]);
		else
			cg_line(cg, "const int64_t xo%d = %s + (int64_t)j%d * %lld;", k, xprev, k,
			        (long long)ms[k]);
		if (strcmp(yprev, "0") == 0)
			cg_line(cg, "const size_t yo%d = j%d * %lld;", k, k, (long long)os[k]);
		else
			cg_line(cg, "const size_t yo%d = %s + j%d * %lld;", k, yprev, k, (long long)os[k]);
		snprintf(xprev, sizeof(xprev), "xo%d", k);
		snprintf(yprev, sizeof(yprev), "yo%d", k);
	}
	int k = m - 1;
	char xe[96], ye[64];
	if (ms[k] == 0)
		snprintf(xe, sizeof(xe), "%s", xprev);
	else if (ms[k] == 1)
		snprintf(xe, sizeof(xe), "%s + (int64_t)j%d", xprev, k);
	else
		snprintf(xe, sizeof(xe), "%s + (int64_t)j%d * %lld", xprev, k, (long long)ms[k]);
	if (strcmp(yprev, "0") == 0)
		snprintf(ye, sizeof(ye), "j%d", k);
	else
		snprintf(ye, sizeof(ye), "%s + j%d", yprev, k);
	cg_line(cg, "Y0[%s] = X0[%s];", ye, xe);
	cg_loops_close(cg, m);
}

/* Constant integer list from input slot `slot`; -1 when absent, -2 when not
 * constant (reported by the caller), -3 when too long or not integer. */
static int const_ints(struct rl_cgen *cg, uint32_t node, int slot, int64_t *out, int max)
{
	uint32_t v = rl_node_in(&cg->g->nodes[node], slot);
	if (v == RL_NONE)
		return -1;
	if (!rl_value_is_const(cg->g, v))
		return -2;
	int n = rl_value_get_ints(cg->g, v, out, max);
	return n < 0 ? -3 : n;
}

static enum rl_status list_error(struct rl_cgen *cg, uint32_t node, int rc, const char *what)
{
	if (rc == -2)
		return cg_error(cg, node, "input '%s' is not a constant at generation time; the C "
		                "backend needs it to plan the copy", what);
	return cg_error(cg, node, "input '%s' is not a constant 1-D integer list of at most %d "
	                "elements", what, RL_MAX_RANK);
}

/* ---- the ops ----------------------------------------------------------- */

/* Reshape, Flatten, Squeeze, Unsqueeze: the bytes do not move. */
static enum rl_status emit_view(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (numel(x) != numel(y))
		return cg_error(cg, node, "input has %lld elements but the output %lld",
		                (long long)numel(x), (long long)numel(y));
	if (numel(y) > 0)
		cg_line(cg, "memcpy(Y0, X0, %lld * sizeof(%s)); /* same bytes, new shape */",
		        (long long)numel(y), cg_ctype(y->dtype));
	return RL_OK;
}

static enum rl_status emit_shape_op(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (y->dtype != RL_DT_INT64)
		return cg_error(cg, node, "output must be int64");
	int r = x->shape.rank;
	int64_t start = n->opset >= 15 ? rl_node_attr_int(n, "start", 0) : 0;
	int64_t end = n->opset >= 15 ? rl_node_attr_int(n, "end", r) : r;
	if (start < 0)
		start += r;
	if (end < 0)
		end += r;
	start = start < 0 ? 0 : start > r ? r : start;
	end = end < 0 ? 0 : end > r ? r : end;
	int64_t cnt = end > start ? end - start : 0;
	if (numel(y) != cnt)
		return cg_error(cg, node, "output has %lld elements, expected %lld",
		                (long long)numel(y), (long long)cnt);
	cg_line(cg, "/* the input's shape is static: store it */");
	for (int64_t i = 0; i < cnt; i++)
		cg_line(cg, "Y0[%lld] = INT64_C(%lld);", (long long)i,
		        (long long)x->shape.d[start + i].v);
	return RL_OK;
}

static enum rl_status emit_size(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (y->dtype != RL_DT_INT64 || numel(y) != 1)
		return cg_error(cg, node, "output must be an int64 scalar");
	cg_line(cg, "Y0[0] = INT64_C(%lld); /* static element count */", (long long)numel(x));
	return RL_OK;
}

static enum rl_status emit_transpose(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	int perm[RL_MAX_RANK];
	const int64_t *pa;
	int np = rl_node_attr_ints(nd, "perm", &pa);
	bool seen[RL_MAX_RANK] = {0};
	if (np < 0) {
		for (int i = 0; i < r; i++)
			perm[i] = r - 1 - i;
	} else {
		if (np != r)
			return cg_error(cg, node, "perm has %d entries for a rank-%d input", np, r);
		for (int i = 0; i < r; i++) {
			int64_t p = pa[i] < 0 ? pa[i] + r : pa[i];
			if (p < 0 || p >= r || seen[p])
				return cg_error(cg, node, "perm is not a permutation of 0..%d", r - 1);
			seen[p] = true;
			perm[i] = (int)p;
		}
	}
	int64_t xs[RL_MAX_RANK], n[RL_MAX_RANK], s[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	for (int i = 0; i < r; i++) {
		n[i] = x->shape.d[perm[i]].v;
		s[i] = xs[perm[i]];
		if (y->shape.d[i].v != n[i])
			return cg_error(cg, node, "output dim %d is %lld, expected %lld", i,
			                (long long)y->shape.d[i].v, (long long)n[i]);
	}
	cg_line(cg, "/* output in order; each input element read once */");
	/* split across threads like an elementwise op (ir/cost.c prices it so):
	 * bert2's 393 KB transposes of the attention heads ran 41-85 us on the
	 * calling thread at two threads */
	emit_affine_copy(cg, cg_ctype(x->dtype), r, n, s, 0, RL_COST_PAR_MIN_ELEMS);
	return RL_OK;
}

static enum rl_status emit_concat(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	int r = y->shape.rank, axis;
	if (!rl_node_attr(nd, "axis"))
		return cg_error(cg, node, "Concat needs the 'axis' attribute");
	if (!norm_axis(rl_node_attr_int(nd, "axis", 0), r, &axis))
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(nd, "axis", 0), r);
	const char *ct = cg_ctype(y->dtype);
	int64_t outer = prod(&y->shape, 0, axis);
	int64_t inner = prod(&y->shape, axis + 1, r);
	int64_t row = y->shape.d[axis].v * inner, off = 0;
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* each input fills a block of every output row (%lld rows of %lld) */",
	        (long long)outer, (long long)row);
	for (int k = 0; k < nd->nin; k++) {
		const struct rl_value *x = cg_in(cg, node, k);
		if (!x)
			return cg_error(cg, node, "input %d is missing", k);
		if (x->shape.rank != r)
			return cg_error(cg, node, "input %d has rank %d, the output %d", k,
			                x->shape.rank, r);
		int64_t blk = x->shape.d[axis].v * inner;
		if (blk == 0)
			continue;
		if (outer == 1)
			cg_line(cg, "memcpy(Y0 + %lld, X%d, %lld * sizeof(%s));", (long long)off, k,
			        (long long)blk, ct);
		else
			cg_line(cg, "for (size_t r = 0; r < %lld; r++) memcpy(Y0 + r * %lld + %lld, "
			        "X%d + r * %lld, %lld * sizeof(%s));", (long long)outer, (long long)row,
			        (long long)off, k, (long long)blk, (long long)blk, ct);
		off += blk;
	}
	if (off != row)
		return cg_error(cg, node, "inputs add up to %lld elements per row, the output has %lld",
		                (long long)off, (long long)row);
	return RL_OK;
}

static enum rl_status emit_split(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	int r = x->shape.rank, axis;
	if (!norm_axis(rl_node_attr_int(nd, "axis", 0), r, &axis))
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(nd, "axis", 0), r);
	const char *ct = cg_ctype(x->dtype);
	int64_t outer = prod(&x->shape, 0, axis);
	int64_t inner = prod(&x->shape, axis + 1, r);
	int64_t row = x->shape.d[axis].v * inner, off = 0;
	/* the output shapes carry the split sizes, whichever way they were given */
	cg_line(cg, "/* each output takes a block of every input row (%lld rows of %lld) */",
	        (long long)outer, (long long)row);
	for (int k = 0; k < nd->nout; k++) {
		const struct rl_value *y = cg_out(cg, node, k);
		if (!y)
			return cg_error(cg, node, "output %d is missing", k);
		if (y->shape.rank != r)
			return cg_error(cg, node, "output %d has rank %d, the input %d", k,
			                y->shape.rank, r);
		int64_t blk = y->shape.d[axis].v * inner;
		if (blk && outer) {
			if (outer == 1)
				cg_line(cg, "memcpy(Y%d, X0 + %lld, %lld * sizeof(%s));", k,
				        (long long)off, (long long)blk, ct);
			else
				cg_line(cg, "for (size_t r = 0; r < %lld; r++) memcpy(Y%d + r * %lld, "
				        "X0 + r * %lld + %lld, %lld * sizeof(%s));", (long long)outer, k,
				        (long long)blk, (long long)row, (long long)off, (long long)blk, ct);
		}
		off += blk;
	}
	if (off != row)
		return cg_error(cg, node, "outputs add up to %lld elements per row, the input has %lld",
		                (long long)off, (long long)row);
	return RL_OK;
}

/* numbers as a C initializer list */
static void ints_list(char *b, size_t n, const int64_t *v, int k)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < k; i++)
		p += (size_t)snprintf(b + p, n - p, "%s%lld", i ? ", " : "", (long long)v[i]);
}

static bool is_runtime(struct rl_cgen *cg, uint32_t node, int slot)
{
	uint32_t v = rl_node_in(&cg->g->nodes[node], slot);
	return v != RL_NONE && !rl_value_is_const(cg->g, v) && numel(&cg->g->values[v]) > 0;
}

/*
 * Open the loop over the n entries of a run-time per-axis list (Slice's
 * starts/ends/steps, Pad's pads) with `a` the axis entry i applies to: X3[i]
 * when the node has an axes input (negative counts from the end; out of range
 * is skipped, as the reference does), else i itself. The caller writes the
 * body and closes the loop (indent--, "}").
 */
static void axis_loop_open(struct rl_cgen *cg, int r, int64_t n, bool has_axes)
{
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)n);
	cg->indent++;
	if (has_axes) {
		cg_line(cg, "int64_t a = (int64_t)X3[i];");
		cg_line(cg, "if (a < 0)");
		cg_line(cg, "    a += %d;", r);
		cg_line(cg, "if (a < 0 || a >= %d)", r);
		cg_line(cg, "    continue;");
	} else {
		cg_line(cg, "const int64_t a = (int64_t)i;");
	}
}

/*
 * Slice whose starts/ends/axes/steps are inputs known only at run time (the
 * output shape is still static): the kernel resolves start and step per axis
 * with the spec's clamping, checks the lengths against the static output
 * shape (zeros if they disagree, never an out-of-bounds read), then copies
 * with run-time strides.
 */
static enum rl_status emit_slice_runtime(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	const struct rl_value *sv = cg_in(cg, node, 1), *ev = cg_in(cg, node, 2);
	const struct rl_value *av = cg_in(cg, node, 3), *pv = cg_in(cg, node, 4);
	if (!sv || !ev)
		return cg_error(cg, node, "starts and ends are required");
	int64_t ns = numel(sv);
	if (numel(ev) != ns || (av && numel(av) != ns) || (pv && numel(pv) != ns) || ns > r)
		return cg_error(cg, node, "starts, ends, axes and steps differ in length");
	if (r == 0)
		return cg_error(cg, node, "cannot slice a scalar");
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	int64_t dims[RL_MAX_RANK], xs[RL_MAX_RANK], ys[RL_MAX_RANK], one[RL_MAX_RANK];
	char dl[256], ol[256], il[256];
	for (int d = 0; d < r; d++) {
		dims[d] = x->shape.d[d].v;
		one[d] = 1;
	}
	cg_strides(&x->shape, xs);
	cg_strides(&y->shape, ys);
	ints_list(dl, sizeof(dl), dims, r);
	for (int d = 0; d < r; d++)
		dims[d] = y->shape.d[d].v;
	ints_list(ol, sizeof(ol), dims, r);
	cg_line(cg, "/* starts/ends%s%s arrive at run time; the output shape is static */",
	        av ? "/axes" : "", pv ? "/steps" : "");
	cg_line(cg, "static const int64_t dims[%d] = {%s}, want[%d] = {%s};", r, dl, r, ol);
	ints_list(il, sizeof(il), one, r);
	cg_line(cg, "int64_t st[%d] = {0}, sp[%d] = {%s}, ln[%d] = {%s};", r, r, il, r, dl);
	axis_loop_open(cg, r, ns, av != NULL);
	cg_line(cg, "const int64_t n = dims[a], p = %s;", pv ? "(int64_t)X4[i]" : "1");
	cg_line(cg, "int64_t s = (int64_t)X1[i], e = (int64_t)X2[i];");
	cg_line(cg, "if (p == 0)");
	cg_line(cg, "    continue;");
	cg_line(cg, "if (s < 0)");
	cg_line(cg, "    s += n;");
	cg_line(cg, "if (e < 0)");
	cg_line(cg, "    e += n;");
	cg_line(cg, "if (p > 0) {");
	cg_line(cg, "    s = s < 0 ? 0 : s > n ? n : s;");
	cg_line(cg, "    e = e < 0 ? 0 : e > n ? n : e;");
	cg_line(cg, "    ln[a] = e > s ? (e - s + p - 1) / p : 0;");
	cg_line(cg, "} else {");
	cg_line(cg, "    s = s < 0 ? 0 : s > n - 1 ? n - 1 : s;");
	cg_line(cg, "    e = e < -1 ? -1 : e > n - 1 ? n - 1 : e;");
	cg_line(cg, "    ln[a] = s > e ? (s - e - p - 1) / -p : 0;");
	cg_line(cg, "}");
	cg_line(cg, "st[a] = s;");
	cg_line(cg, "sp[a] = p;");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "int64_t base = 0;");
	cg_line(cg, "for (size_t d = 0; d < %d; d++) {", r);
	cg_line(cg, "    if (ln[d] != want[d]) { /* disagrees with the static output shape */");
	cg_line(cg, "        memset(Y0, 0, %lld * sizeof(%s));", (long long)numel(y),
	        cg_ctype(y->dtype));
	cg_line(cg, "        return;");
	cg_line(cg, "    }");
	cg_line(cg, "}");
	char xprev[32] = "base";
	int depth = 0, last = -1;
	for (int d = 0; d < r; d++)
		cg_line(cg, "base += st[%d] * %lld;", d, (long long)xs[d]);
	for (int d = 0; d < r; d++)
		if (y->shape.d[d].v > 1)
			last = d;
	if (last < 0) {
		cg_line(cg, "Y0[0] = X0[base];");
		return RL_OK;
	}
	char yprev[32] = "0";
	for (int d = 0; d <= last; d++) {
		if (y->shape.d[d].v == 1)
			continue;
		cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", d, d,
		        (long long)y->shape.d[d].v, d);
		cg->indent++;
		depth++;
		if (d == last)
			break;
		cg_line(cg, "const int64_t xo%d = %s + (int64_t)j%d * sp[%d] * %lld;", d, xprev, d, d,
		        (long long)xs[d]);
		cg_line(cg, "const size_t yo%d = %s + j%d * %lld;", d, yprev, d, (long long)ys[d]);
		snprintf(xprev, sizeof(xprev), "xo%d", d);
		snprintf(yprev, sizeof(yprev), "yo%d", d);
	}
	cg_line(cg, "Y0[%s + j%d] = X0[%s + (int64_t)j%d * sp[%d] * %lld];", yprev, last, xprev,
	        last, last, (long long)xs[last]);
	cg_loops_close(cg, depth);
	(void)nd;
	return RL_OK;
}

static enum rl_status emit_slice(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	int64_t starts[RL_MAX_RANK], ends[RL_MAX_RANK], axes[RL_MAX_RANK], steps[RL_MAX_RANK];
	int ns, ne, na, nst;
	if (nd->opset < 10) {
		const int64_t *p;
		ns = rl_node_attr_ints(nd, "starts", &p);
		if (ns < 0 || ns > RL_MAX_RANK)
			return cg_error(cg, node, "Slice needs a 'starts' attribute of at most %d entries",
			                RL_MAX_RANK);
		memcpy(starts, p, (size_t)ns * sizeof(*p));
		ne = rl_node_attr_ints(nd, "ends", &p);
		if (ne < 0 || ne > RL_MAX_RANK)
			return cg_error(cg, node, "Slice needs an 'ends' attribute of at most %d entries",
			                RL_MAX_RANK);
		memcpy(ends, p, (size_t)ne * sizeof(*p));
		na = rl_node_attr_ints(nd, "axes", &p);
		if (na > RL_MAX_RANK)
			return cg_error(cg, node, "too many axes");
		if (na >= 0)
			memcpy(axes, p, (size_t)na * sizeof(*p));
		nst = -1;
	} else {
		for (int k = 1; k <= 4; k++)
			if (is_runtime(cg, node, k))
				return emit_slice_runtime(cg, node);
		if ((ns = const_ints(cg, node, 1, starts, RL_MAX_RANK)) < 0)
			return list_error(cg, node, ns == -1 ? -3 : ns, "starts");
		if ((ne = const_ints(cg, node, 2, ends, RL_MAX_RANK)) < 0)
			return list_error(cg, node, ne == -1 ? -3 : ne, "ends");
		na = const_ints(cg, node, 3, axes, RL_MAX_RANK);
		if (na < -1)
			return list_error(cg, node, na, "axes");
		nst = const_ints(cg, node, 4, steps, RL_MAX_RANK);
		if (nst < -1)
			return list_error(cg, node, nst, "steps");
	}
	if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
		return cg_error(cg, node, "starts, ends, axes and steps differ in length");
	int64_t start[RL_MAX_RANK], step[RL_MAX_RANK], len[RL_MAX_RANK];
	bool seen[RL_MAX_RANK] = {0};
	for (int d = 0; d < r; d++) {
		start[d] = 0;
		step[d] = 1;
		len[d] = x->shape.d[d].v;
	}
	for (int i = 0; i < ns; i++) {
		int a;
		if (!norm_axis(na >= 0 ? axes[i] : i, r, &a) || seen[a])
			return cg_error(cg, node, "axis %lld is out of range or repeated",
			                (long long)(na >= 0 ? axes[i] : i));
		seen[a] = true;
		int64_t dim = x->shape.d[a].v;
		int64_t st = nst >= 0 ? steps[i] : 1;
		if (st == 0)
			return cg_error(cg, node, "a step of 0");
		int64_t s = starts[i], e = ends[i];
		if (dim == 0) {
			len[a] = 0;
			continue;
		}
		if (s < 0)
			s += dim;
		if (e < 0)
			e += dim;
		if (st > 0) {
			s = s < 0 ? 0 : s > dim ? dim : s;
			e = e < 0 ? 0 : e > dim ? dim : e;
			len[a] = e > s ? (e - s + st - 1) / st : 0;
		} else {
			s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			len[a] = s > e ? (s - e + (-st) - 1) / (-st) : 0;
		}
		start[a] = s;
		step[a] = st;
	}
	int64_t xs[RL_MAX_RANK], s[RL_MAX_RANK], base = 0;
	cg_strides(&x->shape, xs);
	for (int d = 0; d < r; d++) {
		if (y->shape.d[d].v != len[d])
			return cg_error(cg, node, "output dim %d is %lld, the slice gives %lld", d,
			                (long long)y->shape.d[d].v, (long long)len[d]);
		if (len[d])
			base += start[d] * xs[d];
		s[d] = step[d] * xs[d];
	}
	cg_line(cg, "/* slice: start, step per axis folded into offset and strides */");
	emit_affine_copy(cg, cg_ctype(x->dtype), r, len, s, base, 0);
	return RL_OK;
}

static enum rl_status emit_gather(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *ix = cg_in(cg, node, 1);
	const struct rl_value *y = cg_out(cg, node, 0);
	int r = x->shape.rank, axis;
	if (!norm_axis(rl_node_attr_int(nd, "axis", 0), r, &axis))
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(nd, "axis", 0), r);
	if (ix->dtype != RL_DT_INT32 && ix->dtype != RL_DT_INT64)
		return cg_error(cg, node, "indices must be int32 or int64, not %s",
		                rl_dtype_name(ix->dtype));
	const char *ct = cg_ctype(x->dtype);
	int64_t outer = prod(&x->shape, 0, axis), dim = x->shape.d[axis].v;
	int64_t inner = prod(&x->shape, axis + 1, r), nix = numel(ix);
	if (numel(y) != outer * nix * inner)
		return cg_error(cg, node, "output has %lld elements, expected %lld",
		                (long long)numel(y), (long long)(outer * nix * inner));
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* rows of %lld elements picked along axis %d (size %lld); negative indices "
	        "count from the end, out-of-range ones give zeros */", (long long)inner, axis,
	        (long long)dim);
	bool lo = outer > 1;
	if (lo) {
		cg_line(cg, "for (size_t a = 0; a < %lld; a++) {", (long long)outer);
		cg->indent++;
	}
	cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)nix);
	cg->indent++;
	cg_line(cg, "int64_t k = (int64_t)X1[q];");
	cg_line(cg, "if (k < 0)");
	cg_line(cg, "    k += %lld;", (long long)dim);
	char yo[64], xo[64];
	if (lo) {
		snprintf(yo, sizeof(yo), "(a * %lld + q) * %lld", (long long)nix, (long long)inner);
		snprintf(xo, sizeof(xo), "(a * %lld + (size_t)k) * %lld", (long long)dim,
		         (long long)inner);
	} else {
		snprintf(yo, sizeof(yo), "q * %lld", (long long)inner);
		snprintf(xo, sizeof(xo), "(size_t)k * %lld", (long long)inner);
	}
	if (inner == 1) {
		cg_line(cg, "Y0[%s] = k >= 0 && k < %lld ? X0[%s] : 0;", lo ? yo : "q",
		        (long long)dim, lo ? xo : "(size_t)k");
	} else {
		cg_line(cg, "if (k >= 0 && k < %lld)", (long long)dim);
		cg_line(cg, "    memcpy(Y0 + %s, X0 + %s, %lld * sizeof(%s));", yo, xo,
		        (long long)inner, ct);
		cg_line(cg, "else");
		cg_line(cg, "    memset(Y0 + %s, 0, %lld * sizeof(%s));", yo, (long long)inner, ct);
	}
	cg_loops_close(cg, lo ? 2 : 1);
	return RL_OK;
}

static enum rl_status emit_gather_elements(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *ix = cg_in(cg, node, 1);
	const struct rl_value *y = cg_out(cg, node, 0);
	int r = x->shape.rank, axis;
	if (!norm_axis(rl_node_attr_int(nd, "axis", 0), r, &axis))
		return cg_error(cg, node, "axis %lld is out of range for rank %d",
		                (long long)rl_node_attr_int(nd, "axis", 0), r);
	if (ix->dtype != RL_DT_INT32 && ix->dtype != RL_DT_INT64)
		return cg_error(cg, node, "indices must be int32 or int64, not %s",
		                rl_dtype_name(ix->dtype));
	if (ix->shape.rank != r || !rl_shape_equal(&ix->shape, &y->shape))
		return cg_error(cg, node, "indices must have the data's rank and the output's shape");
	for (int d = 0; d < r; d++)
		if (d != axis && ix->shape.d[d].v > x->shape.d[d].v)
			return cg_error(cg, node, "indices dim %d exceeds the data's", d);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	int64_t xs[RL_MAX_RANK], dim = x->shape.d[axis].v;
	cg_strides(&x->shape, xs);
	cg_line(cg, "/* Y0[i] = X0[i with the axis-%d coordinate replaced by X1[i]] */", axis);
	char xprev[32] = "0";
	for (int d = 0; d < r; d++) {
		cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", d, d,
		        (long long)ix->shape.d[d].v, d);
		cg->indent++;
		if (d == axis || d == r - 1)
			continue;
		cg_line(cg, "const size_t xo%d = %s + j%d * %lld;", d, xprev, d, (long long)xs[d]);
		snprintf(xprev, sizeof(xprev), "xo%d", d);
	}
	/* flat output index from the loop counters */
	char oe[512];
	size_t p = 0;
	int64_t ys[RL_MAX_RANK];
	cg_strides(&y->shape, ys);
	for (int d = 0; d < r; d++)
		p += (size_t)snprintf(oe + p, sizeof(oe) - p, "%sj%d * %lld", d ? " + " : "", d,
		                      (long long)ys[d]);
	if (r == 0)
		snprintf(oe, sizeof(oe), "0");
	cg_line(cg, "const size_t o = %s;", oe);
	cg_line(cg, "int64_t k = (int64_t)X1[o];");
	cg_line(cg, "if (k < 0)");
	cg_line(cg, "    k += %lld;", (long long)dim);
	char last[64] = "";
	if (r - 1 != axis)
		snprintf(last, sizeof(last), " + j%d", r - 1);
	cg_line(cg, "Y0[o] = k >= 0 && k < %lld ? X0[%s%s + (size_t)k * %lld] : 0;", (long long)dim,
	        xprev, last, (long long)xs[axis]);
	cg_loops_close(cg, r);
	return RL_OK;
}

static enum rl_status emit_expand(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (x->shape.rank > y->shape.rank)
		return cg_error(cg, node, "output rank is below the input's");
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	const struct rl_shape *ins[1] = {&x->shape};
	cg_line(cg, "/* numpy broadcast of the input to the output shape */");
	int depth = cg_bcast_open(cg, &y->shape, 1, ins);
	cg_line(cg, "Y0[o] = X0[i0];");
	cg_loops_close(cg, depth);
	return RL_OK;
}

static enum rl_status emit_tile(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	if (y->shape.rank != r)
		return cg_error(cg, node, "output rank differs from the input's");
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	/* output dim d of size reps*n is the pair (reps, stride 0) x (n, stride) */
	int64_t xs[RL_MAX_RANK], n[2 * RL_MAX_RANK], s[2 * RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	for (int d = 0; d < r; d++) {
		int64_t in = x->shape.d[d].v, out = y->shape.d[d].v;
		if (in == 0 || out % in)
			return cg_error(cg, node, "output dim %d (%lld) is not a multiple of the input's "
			                "(%lld)", d, (long long)out, (long long)in);
		n[2 * d] = out / in;
		s[2 * d] = 0;
		n[2 * d + 1] = in;
		s[2 * d + 1] = xs[d];
	}
	cg_line(cg, "/* each output dim is (repeat, input dim); a repeat reads from the start */");
	emit_affine_copy(cg, cg_ctype(x->dtype), 2 * r, n, s, 0, 0);
	return RL_OK;
}

/* depth/space rearrangements as affine copies over a 6-D view */
static enum rl_status emit_depth_space(struct rl_cgen *cg, uint32_t node, bool to_space)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (x->shape.rank != 4)
		return cg_error(cg, node, "input must be 4-D (NCHW)");
	int64_t b = rl_node_attr_int(nd, "blocksize", 0);
	if (b <= 0)
		return cg_error(cg, node, "blocksize must be positive");
	int64_t N = x->shape.d[0].v, C = x->shape.d[1].v, H = x->shape.d[2].v, W = x->shape.d[3].v;
	int64_t n[6], s[6];
	if (to_space) {
		if (C % (b * b))
			return cg_error(cg, node, "channels %lld are not a multiple of blocksize^2",
			                (long long)C);
		int64_t c2 = C / (b * b);
		bool crd = strcmp(rl_node_attr_str(nd, "mode", "DCR"), "CRD") == 0;
		if (!crd && strcmp(rl_node_attr_str(nd, "mode", "DCR"), "DCR") != 0)
			return cg_error(cg, node, "unknown mode '%s'", rl_node_attr_str(nd, "mode", ""));
		/* output viewed as [N, C', H, b1, W, b2] */
		int64_t sC = crd ? b * b * H * W : H * W;
		int64_t sb1 = crd ? b * H * W : b * c2 * H * W;
		int64_t sb2 = crd ? H * W : c2 * H * W;
		int64_t nn[6] = {N, c2, H, b, W, b}, ss[6] = {C * H * W, sC, W, sb1, 1, sb2};
		memcpy(n, nn, sizeof(n));
		memcpy(s, ss, sizeof(s));
		cg_line(cg, "/* DepthToSpace (%s): output viewed as [N, C/b^2, H, b, W, b] */",
		        crd ? "CRD" : "DCR");
	} else {
		if (H % b || W % b)
			return cg_error(cg, node, "spatial dims are not multiples of blocksize");
		int64_t h2 = H / b, w2 = W / b;
		/* output viewed as [N, b1, b2, C, H/b, W/b] over input [N, C, H/b, b1, W/b, b2] */
		int64_t nn[6] = {N, b, b, C, h2, w2}, ss[6] = {C * H * W, W, 1, H * W, b * W, b};
		memcpy(n, nn, sizeof(n));
		memcpy(s, ss, sizeof(s));
		cg_line(cg, "/* SpaceToDepth: output viewed as [N, b, b, C, H/b, W/b] */");
	}
	if (numel(y) != N * C * H * W)
		return cg_error(cg, node, "output size differs from the input's");
	emit_affine_copy(cg, cg_ctype(x->dtype), 6, n, s, 0, 0);
	return RL_OK;
}

/* Storage-type literal (as a C expression) of scalar constant value v. */
static const char *storage_lit(struct rl_cgen *cg, enum rl_dtype dt, uint32_t v)
{
	if (rl_dtype_is_float(dt))
		return cg_assign(cg, dt, cg_lit(dt, rl_value_get_float(cg->g, v, 0))); /* no cast of a float literal */
	if (dt == RL_DT_UINT64)
		return cg_lit(dt, (double)(uint64_t)rl_value_get_int(cg->g, v, 0));
	static char b[64];
	int64_t x = rl_value_get_int(cg->g, v, 0);
	if (dt == RL_DT_INT64)
		snprintf(b, sizeof(b), x == INT64_MIN ? "INT64_MIN" : "INT64_C(%lld)", (long long)x);
	else
		snprintf(b, sizeof(b), "(%s)%lld", cg_ctype(dt), (long long)x);
	return b;
}

static int64_t pad_src(const char *mode, int64_t s, int64_t n)
{
	if (mode[0] == 'e') /* edge */
		return s < 0 ? 0 : s >= n ? n - 1 : s;
	if (mode[0] == 'w') /* wrap */
		return ((s % n) + n) % n;
	/* reflect, without repeating the edge */
	if (n == 1)
		return 0;
	int64_t p = 2 * (n - 1), m = ((s % p) + p) % p;
	return m >= n ? p - m : m;
}

/* C statements mapping int64_t `s` (source coordinate, may be outside
 * [0, n)) into range for a non-constant pad mode. */
static void pad_map_stmt(struct rl_cgen *cg, const char *mode, int64_t n)
{
	if (mode[0] == 'e')
		cg_line(cg, "s = s < 0 ? 0 : s >= %lld ? %lld : s;", (long long)n, (long long)(n - 1));
	else if (mode[0] == 'w')
		cg_line(cg, "s = ((s %% %lld) + %lld) %% %lld;", (long long)n, (long long)n,
		        (long long)n);
	else if (n == 1)
		cg_line(cg, "s = 0;");
	else {
		int64_t p = 2 * (n - 1);
		cg_line(cg, "s = ((s %% %lld) + %lld) %% %lld;", (long long)p, (long long)p,
		        (long long)p);
		cg_line(cg, "s = s >= %lld ? %lld - s : s;", (long long)n, (long long)p);
	}
}

/*
 * Pads that arrive at run time (Pad's input 1, and input 3's axes when
 * has_axes), into pb[k] (before axis k) and pt[k] (before + after), for a
 * rank-r tensor; axes out of range are skipped as the reference does. Shared
 * by the C and CUDA Pad kernels (X1 pads, X3 axes).
 */
void cg_pad_bounds(struct rl_cgen *cg, int r, int64_t nax, bool has_axes)
{
	cg_line(cg, "int64_t pb[%d] = {0}, pt[%d] = {0};", r, r);
	axis_loop_open(cg, r, nax, has_axes);
	cg_line(cg, "pb[a] = (int64_t)X1[i];");
	cg_line(cg, "pt[a] = pb[a] + (int64_t)X1[i + %lld];", (long long)nax);
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * Pad whose pads (or axes) arrive at run time; the output shape is static.
 * The kernel reads the leading pads, checks begin + input + end against the
 * static output dims (zeros if they disagree), then maps every output
 * coordinate to its source.
 */
static enum rl_status emit_pad_runtime(struct rl_cgen *cg, uint32_t node, const char *mode,
                                       const char *cv)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	const struct rl_value *pv = cg_in(cg, node, 1), *av = cg_in(cg, node, 3);
	const char *ct = cg_ctype(x->dtype);
	int r = x->shape.rank;
	int64_t nax = av ? numel(av) : r;
	if (numel(pv) != 2 * nax || nax > r)
		return cg_error(cg, node, "%lld pads for %lld axes", (long long)numel(pv),
		                (long long)nax);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	if (r == 0) {
		cg_line(cg, "Y0[0] = X0[0];");
		return RL_OK;
	}
	bool cmode = mode[0] == 'c';
	if (!cmode && numel(x) == 0)
		return cg_error(cg, node, "mode '%s' cannot pad an empty input", mode);
	int64_t xd[RL_MAX_RANK], yd[RL_MAX_RANK], xs[RL_MAX_RANK], ys[RL_MAX_RANK];
	char xl[256], yl[256];
	for (int d = 0; d < r; d++) {
		xd[d] = x->shape.d[d].v;
		yd[d] = y->shape.d[d].v;
	}
	cg_strides(&x->shape, xs);
	cg_strides(&y->shape, ys);
	ints_list(xl, sizeof(xl), xd, r);
	ints_list(yl, sizeof(yl), yd, r);
	cg_line(cg, "/* pads%s arrive at run time; the output shape is static */", av ? "/axes" : "");
	cg_line(cg, "static const int64_t xd[%d] = {%s}, yd[%d] = {%s};", r, xl, r, yl);
	cg_pad_bounds(cg, r, nax, av);
	cg_line(cg, "for (size_t d = 0; d < %d; d++) {", r);
	cg_line(cg, "    if (xd[d] + pt[d] != yd[d]) { /* disagrees with the static output shape */");
	cg_line(cg, "        memset(Y0, 0, %lld * sizeof(%s));", (long long)numel(y), ct);
	cg_line(cg, "        return;");
	cg_line(cg, "    }");
	cg_line(cg, "}");
	if (cmode) {
		cg_line(cg, "const %s cv = %s; /* the pad value */", ct, cv);
		cg_line(cg, "(void)cv;");
	}
	char xprev[32] = "0", yprev[32] = "0";
	for (int d = 0; d < r; d++) {
		cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", d, d, (long long)yd[d], d);
		cg->indent++;
		cg_line(cg, "int64_t s = (int64_t)j%d - pb[%d];", d, d);
		if (d < r - 1) {
			cg_line(cg, "const size_t yo%d = %s + j%d * %lld;", d, yprev, d, (long long)ys[d]);
			if (cmode) {
				cg_line(cg, "if (s < 0 || s >= %lld) {", (long long)xd[d]);
				cg_line(cg, "    for (size_t t = 0; t < %lld; t++) Y0[yo%d + t] = cv;",
				        (long long)ys[d], d);
				cg_line(cg, "    continue;");
				cg_line(cg, "}");
			} else {
				pad_map_stmt(cg, mode, xd[d]);
			}
			cg_line(cg, "const int64_t xo%d = %s + s * %lld;", d, xprev, (long long)xs[d]);
			snprintf(xprev, sizeof(xprev), "xo%d", d);
			snprintf(yprev, sizeof(yprev), "yo%d", d);
		} else if (cmode) {
			cg_line(cg, "Y0[%s + j%d] = s >= 0 && s < %lld ? X0[%s + s] : cv;", yprev, d,
			        (long long)xd[d], xprev);
		} else {
			pad_map_stmt(cg, mode, xd[d]);
			cg_line(cg, "Y0[%s + j%d] = X0[%s + s];", yprev, d, xprev);
		}
	}
	cg_loops_close(cg, r);
	return RL_OK;
}

static enum rl_status emit_pad(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	const char *ct = cg_ctype(x->dtype);
	const char *mode = rl_node_attr_str(nd, "mode", "constant");
	if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
	    strcmp(mode, "wrap"))
		return cg_error(cg, node, "unknown pad mode '%s'", mode);
	int64_t raw[2 * RL_MAX_RANK], axes[RL_MAX_RANK];
	int npad, na = -1;
	char cv[96];
	if (nd->opset < 11) {
		const int64_t *p;
		npad = rl_node_attr_ints(nd, "pads", &p);
		if (npad < 0)
			npad = rl_node_attr_ints(nd, "paddings", &p);
		if (npad < 0 || npad > 2 * RL_MAX_RANK)
			return cg_error(cg, node, "Pad needs a 'pads' attribute");
		memcpy(raw, p, (size_t)npad * sizeof(*p));
		double v = rl_node_attr_float(nd, "value", 0.0);
		snprintf(cv, sizeof(cv), "%s", cg_assign(cg, x->dtype, cg_lit(x->dtype, v)));
	} else {
		uint32_t vc = rl_node_in(nd, 2);
		if (vc == RL_NONE || numel(&cg->g->values[vc]) == 0)
			snprintf(cv, sizeof(cv), "0");
		else if (rl_value_is_const(cg->g, vc))
			snprintf(cv, sizeof(cv), "%s", storage_lit(cg, x->dtype, vc));
		else
			snprintf(cv, sizeof(cv), "X2[0]");
		if (is_runtime(cg, node, 1) || (nd->opset >= 18 && is_runtime(cg, node, 3)))
			return emit_pad_runtime(cg, node, mode, cv);
		npad = const_ints(cg, node, 1, raw, 2 * RL_MAX_RANK);
		if (npad < 0)
			return npad == -2 ? list_error(cg, node, -2, "pads")
			                  : cg_error(cg, node, "'pads' must be a constant 1-D int64 list");
		if (nd->opset >= 18) {
			na = const_ints(cg, node, 3, axes, RL_MAX_RANK);
			if (na < -1)
				return list_error(cg, node, na, "axes");
		}
	}
	int nax = na >= 0 ? na : r;
	if (npad != 2 * nax)
		return cg_error(cg, node, "%d pads for %d axes", npad, nax);
	int64_t pb[RL_MAX_RANK] = {0}, pe[RL_MAX_RANK] = {0};
	for (int i = 0; i < nax; i++) {
		int a;
		if (!norm_axis(na >= 0 ? axes[i] : i, r, &a))
			return cg_error(cg, node, "axis %lld is out of range", (long long)axes[i]);
		pb[a] = raw[i];
		pe[a] = raw[nax + i];
	}
	int64_t xs[RL_MAX_RANK], ys[RL_MAX_RANK], lo[RL_MAX_RANK], hi[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	cg_strides(&y->shape, ys);
	bool interior = true; /* some output element reads the input */
	for (int d = 0; d < r; d++) {
		int64_t in = x->shape.d[d].v, out = in + pb[d] + pe[d];
		if (out != y->shape.d[d].v)
			return cg_error(cg, node, "output dim %d is %lld, the pads give %lld", d,
			                (long long)y->shape.d[d].v, (long long)out);
		lo[d] = pb[d] < 0 ? 0 : pb[d] > out ? out : pb[d];
		hi[d] = pb[d] + in < lo[d] ? lo[d] : pb[d] + in > out ? out : pb[d] + in;
		if (hi[d] <= lo[d])
			interior = false;
	}
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	if (r == 0) {
		cg_line(cg, "Y0[0] = X0[0];");
		return RL_OK;
	}
	bool cmode = strcmp(mode, "constant") == 0;
	if (!cmode && numel(x) == 0)
		return cg_error(cg, node, "mode '%s' cannot pad an empty input", mode);
	if (cmode) {
		cg_line(cg, "const %s cv = %s; /* the pad value */", ct, cv);
		cg_line(cg, "(void)cv;");
		if (!interior) {
			cg_line(cg, "for (size_t j = 0; j < %lld; j++) Y0[j] = cv;", (long long)numel(y));
			return RL_OK;
		}
		cg_line(cg, "/* rows outside the input are filled whole; inside, a row is "
		        "fill | copy | fill */");
	} else {
		cg_line(cg, "/* %s: per padded dim, a table from output to input coordinate */", mode);
		for (int d = 0; d < r; d++) {
			if (!pb[d] && !pe[d])
				continue;
			int64_t out = y->shape.d[d].v;
			rl_buf_printf(&cg->body, "%*sstatic const int32_t pm%d[%lld] = {", 4 * (cg->indent + 1),
			              "", d, (long long)out);
			for (int64_t j = 0; j < out; j++)
				rl_buf_printf(&cg->body, "%s%lld", j ? ", " : "",
				              (long long)pad_src(mode, j - pb[d], x->shape.d[d].v));
			rl_buf_printf(&cg->body, "};\n");
		}
	}
	char xprev[32] = "0", yprev[32] = "0";
	for (int d = 0; d < r - 1; d++) {
		int64_t out = y->shape.d[d].v;
		cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", d, d, (long long)out, d);
		cg->indent++;
		cg_line(cg, "const size_t yo%d = %s + j%d * %lld;", d, yprev, d, (long long)ys[d]);
		if (cmode) {
			if (lo[d] > 0 || hi[d] < out) {
				char c1[48] = "", c2[48] = "";
				if (lo[d] > 0)
					snprintf(c1, sizeof(c1), "j%d < %lld", d, (long long)lo[d]);
				if (hi[d] < out)
					snprintf(c2, sizeof(c2), "j%d >= %lld", d, (long long)hi[d]);
				cg_line(cg, "if (%s%s%s) {", c1, c1[0] && c2[0] ? " || " : "", c2);
				cg_line(cg, "    for (size_t t = 0; t < %lld; t++) Y0[yo%d + t] = cv;",
				        (long long)ys[d], d);
				cg_line(cg, "    continue;");
				cg_line(cg, "}");
			}
			cg_line(cg, "const int64_t xo%d = %s + ((int64_t)j%d - %lld) * %lld;", d, xprev, d,
			        (long long)pb[d], (long long)xs[d]);
		} else if (pb[d] || pe[d]) {
			cg_line(cg, "const int64_t xo%d = %s + (int64_t)pm%d[j%d] * %lld;", d, xprev, d, d,
			        (long long)xs[d]);
		} else {
			cg_line(cg, "const int64_t xo%d = %s + (int64_t)j%d * %lld;", d, xprev, d,
			        (long long)xs[d]);
		}
		snprintf(xprev, sizeof(xprev), "xo%d", d);
		snprintf(yprev, sizeof(yprev), "yo%d", d);
	}
	/* the last dim: three segments */
	int d = r - 1;
	int64_t out = y->shape.d[d].v;
	const char *fill = cmode ? "cv" : NULL;
	char fb[96];
	if (!cmode) {
		snprintf(fb, sizeof(fb), "X0[%s + pm%d[j]]", xprev, d);
		fill = fb;
	}
	if (lo[d] > 0)
		cg_line(cg, "for (size_t j = 0; j < %lld; j++) Y0[%s + j] = %s;", (long long)lo[d],
		        yprev, fill);
	if (hi[d] > lo[d])
		cg_line(cg, "for (size_t j = %lld; j < %lld; j++) Y0[%s + j] = X0[%s + (int64_t)j - "
		        "%lld];", (long long)lo[d], (long long)hi[d], yprev, xprev, (long long)pb[d]);
	if (hi[d] < out)
		cg_line(cg, "for (size_t j = %lld; j < %lld; j++) Y0[%s + j] = %s;", (long long)hi[d],
		        (long long)out, yprev, fill);
	cg_loops_close(cg, r - 1);
	return RL_OK;
}

static enum rl_status emit_trilu(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	if (r < 2)
		return cg_error(cg, node, "input must have rank >= 2");
	bool upper = rl_node_attr_int(nd, "upper", 1) != 0;
	int64_t N = x->shape.d[r - 2].v, M = x->shape.d[r - 1].v;
	int64_t B = prod(&x->shape, 0, r - 2);
	if (!rl_shape_equal(&x->shape, &y->shape))
		return cg_error(cg, node, "output shape differs from the input's");
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	uint32_t kv = rl_node_in(nd, 1);
	char ke[64];
	if (kv == RL_NONE)
		snprintf(ke, sizeof(ke), "0");
	else if (rl_value_is_const(cg->g, kv))
		snprintf(ke, sizeof(ke), "INT64_C(%lld)", (long long)rl_value_get_int(cg->g, kv, 0));
	else
		snprintf(ke, sizeof(ke), "(int64_t)X1[0]");
	cg_line(cg, "/* keep %s: element (i, j) stays when j %s i + k */",
	        upper ? "upper" : "lower", upper ? ">=" : "<=");
	cg_line(cg, "const int64_t k = %s;", ke);
	cg_line(cg, "for (size_t b = 0; b < %lld; b++) {", (long long)B);
	cg->indent++;
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)N);
	cg->indent++;
	cg_line(cg, "const size_t row = (b * %lld + i) * %lld;", (long long)N, (long long)M);
	/* first column of the second segment */
	cg_line(cg, "int64_t c = (int64_t)i + k%s;", upper ? "" : " + 1");
	cg_line(cg, "const size_t cut = c < 0 ? 0 : c > %lld ? %lld : (size_t)c;", (long long)M,
	        (long long)M);
	cg_line(cg, "for (size_t j = 0; j < cut; j++) Y0[row + j] = %s;", upper ? "0" : "X0[row + j]");
	cg_line(cg, "for (size_t j = cut; j < %lld; j++) Y0[row + j] = %s;", (long long)M,
	        upper ? "X0[row + j]" : "0");
	cg_loops_close(cg, 2);
	return RL_OK;
}

/* ---- dispatch ------------------------------------------------------------ */

enum rl_status rl_emit_c_shape(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	if (!cg_in(cg, node, 0) || (!cg_out(cg, node, 0) && n->op != RL_OP_Split))
		return cg_error(cg, node, "missing input or output");
	switch (n->op) {
	case RL_OP_Reshape: case RL_OP_Flatten: case RL_OP_Squeeze: case RL_OP_Unsqueeze:
		return emit_view(cg, node);
	case RL_OP_Shape: return emit_shape_op(cg, node);
	case RL_OP_Size: return emit_size(cg, node);
	case RL_OP_Transpose: return emit_transpose(cg, node);
	case RL_OP_Concat: return emit_concat(cg, node);
	case RL_OP_Split: return emit_split(cg, node);
	case RL_OP_Slice: return emit_slice(cg, node);
	case RL_OP_Gather: return emit_gather(cg, node);
	case RL_OP_GatherElements: return emit_gather_elements(cg, node);
	case RL_OP_Expand: return emit_expand(cg, node);
	case RL_OP_Tile: return emit_tile(cg, node);
	case RL_OP_Pad: return emit_pad(cg, node);
	case RL_OP_DepthToSpace: return emit_depth_space(cg, node, true);
	case RL_OP_SpaceToDepth: return emit_depth_space(cg, node, false);
	case RL_OP_Trilu: return emit_trilu(cg, node);
	default:
		return cg_error(cg, node, "%s is not a shape-family op", rl_op_table[n->op].name);
	}
}
