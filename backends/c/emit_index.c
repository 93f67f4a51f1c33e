/*
 * emit_index.c - C kernels for scans, scatters and gathers, losses, row
 * norms and small shape ops: CumSum, CumProd, ScatterElements (and the old
 * Scatter), ScatterND, GatherND, OneHot, TopK, NegativeLogLikelihoodLoss,
 * SoftmaxCrossEntropyLoss, RMSNormalization, LpNormalization,
 * CenterCropPad, ReverseSequence, Einsum. Resize and Upsample are in
 * emit_image.c. These ops sit in the shape family of ops.def for now and
 * emit_shape.c hands them on here (see emit_index.h).
 *
 * A scan runs along one axis of X viewed as (outer, n, inner): for each
 * (outer, inner) pair one running sum or product walks the n elements
 * forward or backward, storing before (exclusive) or after (inclusive) it
 * adds the element. The axis is an input; when it is constant the view is
 * fixed at generation time, otherwise the kernel normalizes the axis it is
 * given and derives the view from the static dims (an axis out of range
 * copies X, since the spec leaves it undefined).
 *
 * The losses view the input as (N, C, D) with D = d1 * .. * dk and the
 * target as (N, D). A term is -X[n, t, d] * w[t] for t = target[n, d]
 * (w = 1 without a weight); a target equal to ignore_index gives a term of
 * 0 with weight 0, and any other target outside [0, C) also gives 0 so the
 * kernel stays in bounds. "sum" adds the terms, "mean" divides that by the
 * sum of the weights, both in double. SoftmaxCrossEntropyLoss first takes
 * the log-softmax over C for each (n, d), in double with the maximum
 * subtracted, writes it to log_prob when that output is asked for, and then
 * scores it as above.
 *
 * Indices read at run time (scatters, gathers, OneHot, TopK's outputs) wrap
 * negative values once; one still out of range is dropped (scatters), reads
 * zeros (GatherND) or gives a row of `off` (OneHot), so no kernel reads or
 * writes out of bounds. Sizes that are inputs (TopK's K, OneHot's depth,
 * CenterCropPad's shape) are taken from the output shape, which inference
 * or the model's declared output fixed. Einsum runs one loop per label,
 * output labels outside, summed ones inside, accumulating in double for
 * floats.
 */
#include "emit_index.h"

#include <string.h>

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

/* ---- CumSum, CumProd ----------------------------------------------------- */

static enum rl_status emit_cum(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *ax = cg_in(cg, node, 1);
	bool prod = nd->op == RL_OP_CumProd;
	int64_t excl = rl_node_attr_int(nd, "exclusive", 0), rev = rl_node_attr_int(nd, "reverse", 0);
	if (excl != 0 && excl != 1)
		return cg_error(cg, node, "attribute exclusive=%lld is not 0 or 1", (long long)excl);
	if (rev != 0 && rev != 1)
		return cg_error(cg, node, "attribute reverse=%lld is not 0 or 1", (long long)rev);
	if (ax->dtype != RL_DT_INT32 && ax->dtype != RL_DT_INT64)
		return cg_error(cg, node, "axis must be int32 or int64, not %s",
		                rl_dtype_name(ax->dtype));
	int r = x->shape.rank;
	if (numel(x) == 0) {
		cg_line(cg, "/* empty input */");
		return RL_OK;
	}
	enum rl_dtype dt = x->dtype;
	const char *at = cg_comptype(dt);
	uint32_t axv = rl_node_in(nd, 1);
	bool axis_const = rl_value_is_const(cg->g, axv) && cg->g->values[axv].data;
	if (axis_const) {
		int64_t a = rl_value_get_int(cg->g, axv, 0);
		if (a < -r || a >= r)
			return cg_error(cg, node, "axis %lld is out of range for rank %d", (long long)a, r);
		if (a < 0)
			a += r;
		int64_t outer = 1, inner = 1;
		for (int d = 0; d < a; d++)
			outer *= x->shape.d[d].v;
		for (int d = (int)a + 1; d < r; d++)
			inner *= x->shape.d[d].v;
		cg_line(cg, "/* %s along axis %lld%s%s */", prod ? "running product" : "running sum",
		        (long long)a, excl ? ", exclusive" : "", rev ? ", reversed" : "");
		cg_line(cg, "const size_t outer = %lld, n = %lld, inner = %lld;", (long long)outer,
		        (long long)x->shape.d[a].v, (long long)inner);
	} else {
		char dims[RL_MAX_RANK * 24];
		size_t p = 0;
		for (int d = 0; d < r; d++)
			p += (size_t)snprintf(dims + p, sizeof(dims) - p, "%s%lld", d ? ", " : "",
			                      (long long)x->shape.d[d].v);
		cg_line(cg, "/* %s along the axis given at run time%s%s */",
		        prod ? "running product" : "running sum", excl ? ", exclusive" : "",
		        rev ? ", reversed" : "");
		cg_line(cg, "static const size_t dims[%d] = {%s};", r, dims);
		cg_line(cg, "int64_t a = (int64_t)X1[0];");
		cg_line(cg, "if (a < 0)");
		cg_line(cg, "    a += %d;", r);
		cg_line(cg, "if (a < 0 || a >= %d) { /* undefined by the spec: copy X */", r);
		cg_line(cg, "    memcpy(Y0, X0, %lld * sizeof(*Y0));", (long long)numel(x));
		cg_line(cg, "    return;");
		cg_line(cg, "}");
		cg_line(cg, "size_t outer = 1, inner = 1;");
		cg_line(cg, "const size_t n = dims[a];");
		cg_line(cg, "for (int64_t d = 0; d < a; d++)");
		cg_line(cg, "    outer *= dims[d];");
		cg_line(cg, "for (int64_t d = a + 1; d < %d; d++)", r);
		cg_line(cg, "    inner *= dims[d];");
	}
	cg_line(cg, "for (size_t o = 0; o < outer; o++) {");
	cg_line(cg, "    for (size_t i = 0; i < inner; i++) {");
	cg->indent += 2;
	cg_line(cg, "%s acc = %s;", at, cg_lit(dt, prod ? 1 : 0));
	cg_line(cg, "for (size_t k = 0; k < n; k++) {");
	cg->indent++;
	cg_line(cg, "const size_t p = (o * n + %s) * inner + i;", rev ? "(n - 1 - k)" : "k");
	const char *xv = cg_load(cg, dt, "X0[p]");
	char upd[160];
	snprintf(upd, sizeof(upd), "acc %s= %s;", prod ? "*" : "+", xv);
	if (excl) {
		cg_line(cg, "Y0[p] = %s;", cg_assign(cg, dt, "acc"));
		cg_line(cg, "%s", upd);
	} else {
		cg_line(cg, "%s", upd);
		cg_line(cg, "Y0[p] = %s;", cg_assign(cg, dt, "acc"));
	}
	cg_loops_close(cg, 3);
	return RL_OK;
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ------------------ */

static enum rl_status emit_loss(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *t = cg_in(cg, node, 1);
	const struct rl_value *w = cg_in(cg, node, 2), *lp = cg_out(cg, node, 1);
	bool sce = nd->op == RL_OP_SoftmaxCrossEntropyLoss;
	const char *rs = rl_node_attr_str(nd, "reduction", "mean");
	int red = strcmp(rs, "none") == 0 ? 0 : strcmp(rs, "sum") == 0 ? 1
	          : strcmp(rs, "mean") == 0 ? 2 : -1;
	if (red < 0)
		return cg_error(cg, node, "attribute reduction='%s' is not none, sum or mean", rs);
	if (t->dtype != RL_DT_INT32 && t->dtype != RL_DT_INT64)
		return cg_error(cg, node, "target must be int32 or int64, not %s",
		                rl_dtype_name(t->dtype));
	if (x->shape.rank < 2)
		return cg_error(cg, node, "input must be (N, C, d1..dk)");
	bool has_ii = rl_node_attr(nd, "ignore_index") != NULL;
	int64_t ii = rl_node_attr_int(nd, "ignore_index", 0);
	enum rl_dtype dt = x->dtype;
	int64_t nn = x->shape.d[0].v, cc = x->shape.d[1].v, dd = 1;
	for (int i = 2; i < x->shape.rank; i++)
		dd *= x->shape.d[i].v;
	cg_line(cg, "/* %s over (N %lld, C %lld, D %lld), reduction %s%s */",
	        sce ? "softmax cross entropy" : "negative log likelihood", (long long)nn,
	        (long long)cc, (long long)dd, rs, w ? ", class weights" : "");
	if (red == 1)
		cg_line(cg, "double num = 0.0;");
	else if (red == 2)
		cg_line(cg, "double num = 0.0, den = 0.0;");
	cg_line(cg, "const size_t nc = %lld, nd = %lld;", (long long)cc, (long long)dd);
	cg_line(cg, "for (size_t n = 0; n < %lld; n++) {", (long long)nn);
	cg_line(cg, "    for (size_t d = 0; d < nd; d++) {");
	cg->indent += 2;
	cg_line(cg, "const int64_t t = (int64_t)X1[n * nd + d];");
	if (sce) {
		char e[64];
		snprintf(e, sizeof(e), "(%s)(v - lse)", cg_comptype(dt));
		cg_line(cg, "/* log-softmax over the classes of (n, d) */");
		cg_line(cg, "const size_t b = n * nc * nd + d;");
		cg_line(cg, "double mx = %s;", cg_load(cg, dt, "X0[b]"));
		cg_line(cg, "for (size_t c = 1; c < nc; c++) {");
		cg_line(cg, "    const double v = %s;", cg_load(cg, dt, "X0[b + c * nd]"));
		cg_line(cg, "    mx = v > mx ? v : mx;");
		cg_line(cg, "}");
		cg_line(cg, "double se = 0.0;");
		cg_line(cg, "for (size_t c = 0; c < nc; c++)");
		cg_line(cg, "    se += exp(%s - mx);", cg_load(cg, dt, "X0[b + c * nd]"));
		cg_line(cg, "const double lse = mx + log(se);");
		if (lp) {
			cg_line(cg, "for (size_t c = 0; c < nc; c++) {");
			cg_line(cg, "    const double v = %s;", cg_load(cg, dt, "X0[b + c * nd]"));
			cg_line(cg, "    Y1[b + c * nd] = %s;", cg_assign(cg, lp->dtype, e));
			cg_line(cg, "}");
		}
	}
	cg_line(cg, "double term = 0.0, wt = 0.0;");
	if (has_ii)
		cg_line(cg, "if (t != %lld && t >= 0 && t < (int64_t)nc) {", (long long)ii);
	else
		cg_line(cg, "if (t >= 0 && t < (int64_t)nc) {");
	cg->indent++;
	cg_line(cg, "wt = %s;", w ? cg_load(cg, w->dtype, "X2[t]") : "1.0");
	if (sce)
		cg_line(cg, "term = -(%s - lse) * wt;", cg_load(cg, dt, "X0[b + (size_t)t * nd]"));
	else
		cg_line(cg, "term = -(double)%s * wt;",
		        cg_load(cg, dt, "X0[(n * nc + (size_t)t) * nd + d]"));
	cg->indent--;
	cg_line(cg, "}");
	if (red) {
		cg_line(cg, "num += term;");
		if (red == 2)
			cg_line(cg, "den += wt;");
	} else {
		char e[64];
		snprintf(e, sizeof(e), "(%s)term", cg_comptype(dt));
		cg_line(cg, "Y0[n * nd + d] = %s;", cg_assign(cg, dt, e));
	}
	cg_loops_close(cg, 2);
	if (red == 1)
		cg_line(cg, "Y0[0] = %s;", cg_assign(cg, dt, dt == RL_DT_DOUBLE ? "num" : "(float)num"));
	else if (red == 2)
		cg_line(cg, "Y0[0] = %s;", cg_assign(cg, dt, dt == RL_DT_DOUBLE ? "num / den"
		                                             : "(float)(num / den)"));
	return RL_OK;
}

/* ---- ScatterElements, Scatter, ScatterND, GatherND ----------------------- */

static const char *const scatter_names[] = {"none", "add", "mul", "max", "min"};

/* reduction: 0 none, 1 add, 2 mul, 3 max, 4 min; -1 unknown */
static int scatter_reduction(const struct rl_node *nd)
{
	const char *r = rl_node_attr_str(nd, "reduction", "none");
	for (int i = 0; i < 5; i++)
		if (strcmp(r, scatter_names[i]) == 0)
			return i;
	return -1;
}

/* One line: Y0[dst] = reduce(Y0[dst], X2[src]) in the data's compute type. */
static void scatter_apply(struct rl_cgen *cg, enum rl_dtype dt, int red, const char *dst,
                          const char *src)
{
	char yv[96], uv[96], e[320];
	snprintf(yv, sizeof(yv), "Y0[%s]", dst);
	snprintf(uv, sizeof(uv), "X2[%s]", src);
	if (red == 0) {
		cg_line(cg, "Y0[%s] = X2[%s];", dst, src);
		return;
	}
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s", cg_load(cg, dt, yv));
	snprintf(b, sizeof(b), "%s", cg_load(cg, dt, uv));
	const char *at = cg_comptype(dt);
	cg_line(cg, "const %s cur = %s, upd = %s;", at, a, b);
	switch (red) {
	case 1: snprintf(e, sizeof(e), "(%s)(cur + upd)", at); break;
	case 2: snprintf(e, sizeof(e), "(%s)(cur * upd)", at); break;
	case 3: snprintf(e, sizeof(e), "(upd > cur ? upd : cur)"); break;
	default: snprintf(e, sizeof(e), "(upd < cur ? upd : cur)"); break;
	}
	cg_line(cg, "Y0[%s] = %s;", dst, cg_assign(cg, dt, e));
}

static enum rl_status scatter_check(struct rl_cgen *cg, uint32_t node, int *red)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *ix = cg_in(cg, node, 1);
	*red = scatter_reduction(nd);
	if (*red < 0)
		return cg_error(cg, node, "attribute reduction='%s' is not none, add, mul, max or min",
		                rl_node_attr_str(nd, "reduction", ""));
	if (*red && x->dtype == RL_DT_BOOL)
		return cg_error(cg, node, "attribute reduction='%s' on bool data is not supported",
		                scatter_names[*red]);
	if (ix->dtype != RL_DT_INT32 && ix->dtype != RL_DT_INT64)
		return cg_error(cg, node, "indices must be int32 or int64, not %s",
		                rl_dtype_name(ix->dtype));
	return RL_OK;
}

static void ints_csv(char *b, size_t n, const int64_t *v, int k)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < k && p < n; i++)
		p += (size_t)snprintf(b + p, n - p, "%s%lld", i ? ", " : "", (long long)v[i]);
}

static enum rl_status emit_scatter_elements(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *ix = cg_in(cg, node, 1);
	int red;
	enum rl_status st = scatter_check(cg, node, &red);
	if (st != RL_OK)
		return st;
	int r = x->shape.rank;
	int64_t a = rl_node_attr_int(nd, "axis", 0);
	if (a < -r || a >= r)
		return cg_error(cg, node, "axis %lld is out of range for rank %d", (long long)a, r);
	if (a < 0)
		a += r;
	if (ix->shape.rank != r)
		return cg_error(cg, node, "indices must have the data's rank");
	int64_t xs[RL_MAX_RANK], is[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	int64_t ni = cg_strides(&ix->shape, is);
	cg_line(cg, "/* Y0 = X0, then element q of X2 goes to X0's place with the axis-%lld "
	        "coordinate replaced by X1[q] (reduction %s); out-of-range indices are "
	        "dropped */", (long long)a, scatter_names[red]);
	cg_line(cg, "memcpy(Y0, X0, %lld * sizeof(*Y0));", (long long)numel(x));
	if (ni == 0)
		return RL_OK;
	char b1[RL_MAX_RANK * 24], b2[RL_MAX_RANK * 24];
	ints_csv(b1, sizeof(b1), is, r);
	ints_csv(b2, sizeof(b2), xs, r);
	cg_line(cg, "static const size_t istr[%d] = {%s}, xstr[%d] = {%s};", r, b1, r, b2);
	cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)ni);
	cg->indent++;
	cg_line(cg, "size_t rem = q, off = 0;");
	cg_line(cg, "for (int d = 0; d < %d; d++) {", r);
	cg_line(cg, "    const size_t c = rem / istr[d];");
	cg_line(cg, "    rem -= c * istr[d];");
	cg_line(cg, "    if (d != %lld)", (long long)a);
	cg_line(cg, "        off += c * xstr[d];");
	cg_line(cg, "}");
	cg_line(cg, "int64_t k = (int64_t)X1[q];");
	cg_line(cg, "if (k < 0)");
	cg_line(cg, "    k += %lld;", (long long)x->shape.d[a].v);
	cg_line(cg, "if (k < 0 || k >= %lld)", (long long)x->shape.d[a].v);
	cg_line(cg, "    continue;");
	cg_line(cg, "off += (size_t)k * %lld;", (long long)xs[a]);
	scatter_apply(cg, x->dtype, red, "off", "q");
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* The flat offset of an index tuple X1[t * k .. t * k + k) into a block of
 * dims `dims` (k of them, strides `str`), as `off`; `bad` when a coordinate
 * is out of range after negative ones are wrapped. */
static void nd_offset(struct rl_cgen *cg, int k, const int64_t *dims, const int64_t *str)
{
	char b1[RL_MAX_RANK * 24], b2[RL_MAX_RANK * 24];
	ints_csv(b1, sizeof(b1), dims, k);
	ints_csv(b2, sizeof(b2), str, k);
	cg_line(cg, "static const int64_t dims[%d] = {%s}, str[%d] = {%s};", k, b1, k, b2);
	cg_line(cg, "size_t off = 0;");
	cg_line(cg, "int bad = 0;");
	cg_line(cg, "for (int j = 0; j < %d; j++) {", k);
	cg_line(cg, "    int64_t c = (int64_t)X1[t * %d + (size_t)j];", k);
	cg_line(cg, "    if (c < 0)");
	cg_line(cg, "        c += dims[j];");
	cg_line(cg, "    bad |= c < 0 || c >= dims[j];");
	cg_line(cg, "    off += (size_t)(c * str[j]);");
	cg_line(cg, "}");
}

static enum rl_status emit_scatter_nd(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *ix = cg_in(cg, node, 1);
	int red;
	enum rl_status st = scatter_check(cg, node, &red);
	if (st != RL_OK)
		return st;
	int r = x->shape.rank, q = ix->shape.rank;
	if (q < 1)
		return cg_error(cg, node, "indices must have rank >= 1");
	int k = (int)ix->shape.d[q - 1].v;
	if (k < 1 || k > r)
		return cg_error(cg, node, "indices address %d axes of rank-%d data", k, r);
	int64_t xs[RL_MAX_RANK], dims[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	for (int i = 0; i < k; i++)
		dims[i] = x->shape.d[i].v;
	int64_t slice = k < r ? xs[k - 1] : 1, nt = numel(ix) / k;
	cg_line(cg, "/* Y0 = X0, then each index tuple of X1 names a block of %lld elements "
	        "that takes the next block of X2 (reduction %s); out-of-range tuples are "
	        "dropped */", (long long)slice, scatter_names[red]);
	cg_line(cg, "memcpy(Y0, X0, %lld * sizeof(*Y0));", (long long)numel(x));
	if (nt == 0)
		return RL_OK;
	cg_line(cg, "for (size_t t = 0; t < %lld; t++) {", (long long)nt);
	cg->indent++;
	nd_offset(cg, k, dims, xs);
	cg_line(cg, "if (bad)");
	cg_line(cg, "    continue;");
	cg_line(cg, "for (size_t e = 0; e < %lld; e++) {", (long long)slice);
	cg->indent++;
	char src[64];
	snprintf(src, sizeof(src), "t * %lld + e", (long long)slice);
	scatter_apply(cg, x->dtype, red, "off + e", src);
	cg_loops_close(cg, 2);
	return RL_OK;
}

static enum rl_status emit_gather_nd(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *ix = cg_in(cg, node, 1);
	const struct rl_value *y = cg_out(cg, node, 0);
	if (ix->dtype != RL_DT_INT32 && ix->dtype != RL_DT_INT64)
		return cg_error(cg, node, "indices must be int32 or int64, not %s",
		                rl_dtype_name(ix->dtype));
	int r = x->shape.rank, q = ix->shape.rank;
	int64_t b = rl_node_attr_int(nd, "batch_dims", 0);
	int k = q >= 1 ? (int)ix->shape.d[q - 1].v : 0;
	if (q < 1 || b < 0 || b >= q || k < 1 || b + k > r)
		return cg_error(cg, node, "indices do not fit the data with batch_dims %lld",
		                (long long)b);
	int64_t xs[RL_MAX_RANK], dims[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	for (int i = 0; i < k; i++)
		dims[i] = x->shape.d[b + i].v;
	int64_t batches = 1;
	for (int i = 0; i < b; i++)
		batches *= x->shape.d[i].v;
	int64_t bstride = b > 0 ? xs[b - 1] : numel(x);
	int64_t slice = b + k < r ? xs[b + k - 1] : 1, nt = numel(ix) / k;
	int64_t per = batches > 0 ? nt / batches : 0;
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* each index tuple of X1 picks a block of %lld elements of X0 (batch "
	        "dims %lld); out-of-range tuples give zeros */", (long long)slice, (long long)b);
	cg_line(cg, "for (size_t t = 0; t < %lld; t++) {", (long long)nt);
	cg->indent++;
	nd_offset(cg, k, dims, xs + b);
	if (b > 0)
		cg_line(cg, "off += t / %lld * %lld;", (long long)per, (long long)bstride);
	cg_line(cg, "if (bad)");
	cg_line(cg, "    memset(Y0 + t * %lld, 0, %lld * sizeof(*Y0));", (long long)slice,
	        (long long)slice);
	cg_line(cg, "else");
	cg_line(cg, "    memcpy(Y0 + t * %lld, X0 + off, %lld * sizeof(*Y0));", (long long)slice,
	        (long long)slice);
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- OneHot, TopK --------------------------------------------------------- */

static enum rl_status emit_onehot(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *ix = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = y->shape.rank;
	int64_t a = rl_node_attr_int(nd, "axis", -1);
	if (a < -r || a >= r)
		return cg_error(cg, node, "axis %lld is out of range for rank %d", (long long)a, r);
	if (a < 0)
		a += r;
	int64_t depth = y->shape.d[a].v, outer = 1, inner = 1;
	for (int i = 0; i < a; i++)
		outer *= y->shape.d[i].v;
	for (int i = (int)a + 1; i < r; i++)
		inner *= y->shape.d[i].v;
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	bool fl = rl_dtype_is_float(ix->dtype);
	cg_line(cg, "/* depth %lld from the output shape (the depth input must agree); "
	        "X2 = {off, on}; an index out of [-depth, depth) gives a row of off */",
	        (long long)depth);
	cg_line(cg, "for (size_t o = 0; o < %lld; o++) {", (long long)outer);
	cg_line(cg, "    for (size_t i = 0; i < %lld; i++) {", (long long)inner);
	cg->indent += 2;
	char e[96];
	snprintf(e, sizeof(e), "X0[o * %lld + i]", (long long)inner);
	cg_line(cg, "int64_t k = (int64_t)%s;", fl ? cg_load(cg, ix->dtype, e) : e);
	cg_line(cg, "if (k < 0)");
	cg_line(cg, "    k += %lld;", (long long)depth);
	cg_line(cg, "for (size_t c = 0; c < %lld; c++)", (long long)depth);
	cg_line(cg, "    Y0[(o * %lld + c) * %lld + i] = (int64_t)c == k ? X2[1] : X2[0];",
	        (long long)depth, (long long)inner);
	cg_loops_close(cg, 2);
	return RL_OK;
}

static enum rl_status emit_topk(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	int64_t a = rl_node_attr_int(nd, "axis", -1);
	if (a < -r || a >= r)
		return cg_error(cg, node, "axis %lld is out of range for rank %d", (long long)a, r);
	if (a < 0)
		a += r;
	if (!y || !cg_out(cg, node, 1))
		return cg_error(cg, node, "both outputs (values, indices) must be present");
	int64_t largest = rl_node_attr_int(nd, "largest", 1);
	if (largest != 0 && largest != 1)
		return cg_error(cg, node, "attribute largest=%lld is not 0 or 1", (long long)largest);
	int64_t n = x->shape.d[a].v, k = y->shape.d[a].v, outer = 1, inner = 1;
	if (k > n)
		return cg_error(cg, node, "k %lld exceeds axis %lld of size %lld", (long long)k,
		                (long long)a, (long long)n);
	for (int i = 0; i < a; i++)
		outer *= x->shape.d[i].v;
	for (int i = (int)a + 1; i < r; i++)
		inner *= x->shape.d[i].v;
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	enum rl_dtype dt = x->dtype;
	const char *at = cg_comptype(dt), *cmp = largest ? ">" : "<";
	cg_line(cg, "/* the %lld %s of %lld along axis %lld (k from the output shape), sorted, "
	        "ties to the lower index: insertion into the kept list */", (long long)k,
	        largest ? "largest" : "smallest", (long long)n, (long long)a);
	cg_line(cg, "for (size_t o = 0; o < %lld; o++) {", (long long)outer);
	cg_line(cg, "    for (size_t i = 0; i < %lld; i++) {", (long long)inner);
	cg->indent += 2;
	cg_line(cg, "const size_t st = %lld; /* stride along the axis */", (long long)inner);
	cg_line(cg, "%s *vy = Y0 + o * %lld + i;", cg_ctype(dt), (long long)(k * inner));
	cg_line(cg, "int64_t *iy = Y1 + o * %lld + i;", (long long)(k * inner));
	cg_line(cg, "size_t cnt = 0;");
	cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)n);
	cg->indent++;
	char e[96];
	snprintf(e, sizeof(e), "X0[(o * %lld + j) * %lld + i]", (long long)n, (long long)inner);
	cg_line(cg, "const %s v = %s;", at, cg_load(cg, dt, e));
	cg_line(cg, "if (cnt == %lld && !(v %s %s))", (long long)k, cmp,
	        cg_load(cg, dt, "vy[(cnt - 1) * st]"));
	cg_line(cg, "    continue;");
	cg_line(cg, "size_t p = cnt < %lld ? cnt++ : cnt - 1;", (long long)k);
	cg_line(cg, "while (p > 0 && v %s %s) {", cmp, cg_load(cg, dt, "vy[(p - 1) * st]"));
	cg_line(cg, "    vy[p * st] = vy[(p - 1) * st];");
	cg_line(cg, "    iy[p * st] = iy[(p - 1) * st];");
	cg_line(cg, "    p--;");
	cg_line(cg, "}");
	cg_line(cg, "vy[p * st] = X0[(o * %lld + j) * %lld + i];", (long long)n, (long long)inner);
	cg_line(cg, "iy[p * st] = (int64_t)j;");
	cg_loops_close(cg, 3);
	return RL_OK;
}

/* ---- RMSNormalization, LpNormalization ------------------------------------ */

static enum rl_status emit_rownorm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	bool rms = nd->op == RL_OP_RMSNormalization;
	int r = x->shape.rank;
	int64_t a = rl_node_attr_int(nd, "axis", -1);
	if (a < -r || a >= r)
		return cg_error(cg, node, "axis %lld is out of range for rank %d", (long long)a, r);
	if (a < 0)
		a += r;
	int64_t outer = 1, len = 1, inner = 1;
	for (int i = 0; i < a; i++)
		outer *= x->shape.d[i].v;
	for (int i = (int)a; i < r && (rms || i == a); i++)
		len *= x->shape.d[i].v;
	if (!rms)
		for (int i = (int)a + 1; i < r; i++)
			inner *= x->shape.d[i].v;
	if (numel(x) == 0) {
		cg_line(cg, "/* empty input */");
		return RL_OK;
	}
	enum rl_dtype dt = x->dtype;
	const char *ct = cg_comptype(dt);
	char e[160], v[96];
	if (rms) {
		const struct rl_value *s = cg_in(cg, node, 1);
		int64_t sn = numel(s);
		bool trailing = s->shape.rank <= r - a;
		for (int i = 0; trailing && i < s->shape.rank; i++)
			trailing = s->shape.d[s->shape.rank - 1 - i].v == x->shape.d[r - 1 - i].v;
		if (sn != 1 && !(trailing && sn == len))
			return cg_error(cg, node, "scale of %lld elements does not cover the "
			                "normalized %lld elements (only whole or scalar scales are "
			                "supported)", (long long)sn, (long long)len);
		double eps = rl_node_attr_float(nd, "epsilon", 1e-5);
		cg_line(cg, "/* rows of %lld: y = x / sqrt(mean(x^2) + %g) * scale */",
		        (long long)len, eps);
		cg_line(cg, "for (size_t o = 0; o < %lld; o++) {", (long long)outer);
		cg->indent++;
		cg_line(cg, "double ss = 0.0;");
		cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)len);
		snprintf(v, sizeof(v), "X0[o * %lld + j]", (long long)len);
		cg_line(cg, "    const double t = %s;", cg_load(cg, dt, v));
		cg_line(cg, "    ss += t * t;");
		cg_line(cg, "}");
		cg_line(cg, "const double inv = 1.0 / sqrt(ss / %lld + %.17g);", (long long)len, eps);
		cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)len);
		cg->indent++;
		cg_line(cg, "const double t = %s;", cg_load(cg, dt, v));
		cg_line(cg, "const double w = %s;", cg_load(cg, s->dtype, sn == 1 ? "X1[0]" : "X1[j]"));
		snprintf(e, sizeof(e), "(%s)(t * inv * w)", ct);
		cg_line(cg, "Y0[o * %lld + j] = %s;", (long long)len, cg_assign(cg, dt, e));
		cg_loops_close(cg, 2);
		return RL_OK;
	}
	int64_t p = rl_node_attr_int(nd, "p", 2);
	if (p != 1 && p != 2)
		return cg_error(cg, node, "attribute p=%lld is not 1 or 2", (long long)p);
	cg_line(cg, "/* L%lld norm along axis %lld (%lld elements, stride %lld): y = x / norm */",
	        (long long)p, (long long)a, (long long)len, (long long)inner);
	cg_line(cg, "for (size_t o = 0; o < %lld; o++) {", (long long)outer);
	cg_line(cg, "    for (size_t i = 0; i < %lld; i++) {", (long long)inner);
	cg->indent += 2;
	cg_line(cg, "double s = 0.0;");
	snprintf(v, sizeof(v), "X0[(o * %lld + j) * %lld + i]", (long long)len, (long long)inner);
	cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)len);
	cg_line(cg, "    const double t = %s;", cg_load(cg, dt, v));
	cg_line(cg, "    s += %s;", p == 1 ? "fabs(t)" : "t * t");
	cg_line(cg, "}");
	if (p == 2)
		cg_line(cg, "s = sqrt(s);");
	cg_line(cg, "if (s == 0.0) /* an all-zero row stays zero */");
	cg_line(cg, "    s = 1.0;");
	cg_line(cg, "for (size_t j = 0; j < %lld; j++)", (long long)len);
	snprintf(e, sizeof(e), "(%s)(%s / s)", ct, cg_load(cg, dt, v));
	cg_line(cg, "    Y0[(o * %lld + j) * %lld + i] = %s;", (long long)len, (long long)inner,
	        cg_assign(cg, dt, e));
	cg_loops_close(cg, 2);
	return RL_OK;
}

/* ---- CenterCropPad, ReverseSequence --------------------------------------- */

/* Loop over Y's elements with the coordinates of each in c[]: opens the loop
 * and the decomposition; the caller closes one level. */
static void coords_open(struct rl_cgen *cg, const struct rl_shape *s)
{
	int64_t st[RL_MAX_RANK];
	int64_t ne = cg_strides(s, st);
	char b[RL_MAX_RANK * 24];
	ints_csv(b, sizeof(b), st, s->rank);
	cg_line(cg, "static const size_t ystr[%d] = {%s};", s->rank, b);
	cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)ne);
	cg->indent++;
	cg_line(cg, "size_t c[%d], rem = q;", s->rank);
	cg_line(cg, "for (int d = 0; d < %d; d++) {", s->rank);
	cg_line(cg, "    c[d] = rem / ystr[d];");
	cg_line(cg, "    rem -= c[d] * ystr[d];");
	cg_line(cg, "}");
}

static enum rl_status emit_center_crop_pad(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	if (numel(y) == 0 || r == 0) {
		cg_line(cg, "memcpy(Y0, X0, %lld * sizeof(*Y0));", (long long)numel(y));
		return RL_OK;
	}
	int64_t xs[RL_MAX_RANK], off[RL_MAX_RANK], dims[RL_MAX_RANK];
	cg_strides(&x->shape, xs);
	for (int d = 0; d < r; d++) {
		int64_t in = x->shape.d[d].v, out = y->shape.d[d].v;
		off[d] = in >= out ? (in - out) / 2 : -((out - in) / 2);
		dims[d] = in;
	}
	char b1[RL_MAX_RANK * 24], b2[RL_MAX_RANK * 24], b3[RL_MAX_RANK * 24];
	ints_csv(b1, sizeof(b1), off, r);
	ints_csv(b2, sizeof(b2), dims, r);
	ints_csv(b3, sizeof(b3), xs, r);
	cg_line(cg, "/* the centered window: X0's coordinate is Y0's plus off (negative where "
	        "Y0 is padded, which reads zeros) */");
	cg_line(cg, "static const int64_t off[%d] = {%s}, xdim[%d] = {%s}, xstr[%d] = {%s};", r, b1,
	        r, b2, r, b3);
	coords_open(cg, &y->shape);
	cg_line(cg, "size_t p = 0;");
	cg_line(cg, "int in = 1;");
	cg_line(cg, "for (int d = 0; d < %d; d++) {", r);
	cg_line(cg, "    const int64_t k = (int64_t)c[d] + off[d];");
	cg_line(cg, "    in &= k >= 0 && k < xdim[d];");
	cg_line(cg, "    p += (size_t)(k * xstr[d]);");
	cg_line(cg, "}");
	cg_line(cg, "if (in)");
	cg_line(cg, "    Y0[q] = X0[p];");
	cg_line(cg, "else");
	cg_line(cg, "    memset(Y0 + q, 0, sizeof(*Y0));");
	cg_loops_close(cg, 1);
	return RL_OK;
}

static enum rl_status emit_reverse_sequence(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *l = cg_in(cg, node, 1);
	int64_t ba = rl_node_attr_int(nd, "batch_axis", 1), ta = rl_node_attr_int(nd, "time_axis", 0);
	if ((ba != 0 && ba != 1) || (ta != 0 && ta != 1) || ba == ta)
		return cg_error(cg, node, "attributes batch_axis=%lld time_axis=%lld are not 0 and 1",
		                (long long)ba, (long long)ta);
	if (l->dtype != RL_DT_INT32 && l->dtype != RL_DT_INT64)
		return cg_error(cg, node, "sequence_lens must be int32 or int64");
	if (numel(x) == 0) {
		cg_line(cg, "/* empty input */");
		return RL_OK;
	}
	int64_t xs[RL_MAX_RANK], T = x->shape.d[ta].v;
	cg_strides(&x->shape, xs);
	cg_line(cg, "/* the first sequence_lens[b] steps along axis %lld reversed, per batch "
	        "entry b on axis %lld */", (long long)ta, (long long)ba);
	coords_open(cg, &x->shape);
	cg_line(cg, "int64_t len = (int64_t)X1[c[%lld]];", (long long)ba);
	cg_line(cg, "len = len < 0 ? 0 : len > %lld ? %lld : len;", (long long)T, (long long)T);
	cg_line(cg, "const int64_t t = (int64_t)c[%lld];", (long long)ta);
	cg_line(cg, "const int64_t s = t < len ? len - 1 - t : t;");
	cg_line(cg, "Y0[q] = X0[(size_t)((int64_t)q + (s - t) * %lld)];", (long long)xs[ta]);
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- Einsum ----------------------------------------------------------------- */

static enum rl_status emit_einsum(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	int ranks[RL_EINSUM_MAX_IN];
	if (nd->nin > RL_EINSUM_MAX_IN)
		return cg_error(cg, node, "%d operands (at most %d handled)", nd->nin,
		                RL_EINSUM_MAX_IN);
	for (int i = 0; i < nd->nin; i++)
		ranks[i] = cg_in(cg, node, i)->shape.rank;
	const char *eq = rl_node_attr_str(nd, "equation", "");
	struct rl_einsum e;
	char why[160];
	if (!rl_einsum_parse(eq, nd->nin, ranks, &e, why, sizeof(why)))
		return cg_error(cg, node, "equation '%s': %s", eq, why);
	/* every label with its size: output labels first, then the summed ones */
	char labs[128];
	int64_t size[128];
	int nl = 0;
	for (int k = 0; k < e.orank; k++)
		labs[nl++] = e.olab[k];
	for (int i = 0; i < nd->nin; i++)
		for (int a = 0; a < e.rank[i]; a++)
			if (!memchr(labs, e.lab[i][a], (size_t)nl))
				labs[nl++] = e.lab[i][a];
	for (int l = 0; l < nl; l++) {
		size[l] = -1;
		for (int i = 0; i < nd->nin; i++)
			for (int a = 0; a < e.rank[i]; a++) {
				if (e.lab[i][a] != labs[l])
					continue;
				int64_t d = cg_in(cg, node, i)->shape.d[a].v;
				if (size[l] >= 0 && size[l] != d)
					return cg_error(cg, node, "label '%c' has sizes %lld and %lld "
					                "(broadcasting inside einsum is not supported)", labs[l],
					                (long long)size[l], (long long)d);
				size[l] = d;
			}
	}
	enum rl_dtype dt = y->dtype;
	bool fl = rl_dtype_is_float(dt);
	const char *acc_t = fl ? "double" : cg_comptype(dt);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* einsum '%s': loops over the output labels, then the summed ones */", eq);
	cg_line(cg, "size_t q = 0;");
	for (int l = 0; l < e.orank; l++) {
		cg_line(cg, "for (size_t l%d = 0; l%d < %lld; l%d++) {", l, l, (long long)size[l], l);
		cg->indent++;
	}
	cg_line(cg, "%s acc = %s;", acc_t, cg_zero(acc_t));
	for (int l = e.orank; l < nl; l++) {
		cg_line(cg, "for (size_t l%d = 0; l%d < %lld; l%d++) {", l, l, (long long)size[l], l);
		cg->indent++;
	}
	char prod[1024];
	size_t pp = 0;
	for (int i = 0; i < nd->nin; i++) {
		const struct rl_value *x = cg_in(cg, node, i);
		int64_t st[RL_MAX_RANK];
		cg_strides(&x->shape, st);
		char off[400];
		size_t op = 0;
		off[0] = 0;
		for (int a = 0; a < e.rank[i]; a++) {
			int l = (int)((char *)memchr(labs, e.lab[i][a], (size_t)nl) - labs);
			op += (size_t)snprintf(off + op, sizeof(off) - op, "%sl%d * %lld", op ? " + " : "",
			                       l, (long long)st[a]);
		}
		if (!op)
			snprintf(off, sizeof(off), "0");
		char xe[440];
		snprintf(xe, sizeof(xe), "X%d[%s]", i, off);
		pp += (size_t)snprintf(prod + pp, sizeof(prod) - pp, "%s(%s)%s", i ? " * " : "", acc_t,
		                       cg_load(cg, x->dtype, xe));
	}
	cg_line(cg, "acc += %s;", prod);
	cg_loops_close(cg, nl - e.orank);
	char se[64];
	snprintf(se, sizeof(se), "(%s)acc", cg_comptype(dt));
	cg_line(cg, "Y0[q++] = %s;", cg_assign(cg, dt, se));
	cg_loops_close(cg, e.orank);
	return RL_OK;
}

enum rl_status rl_emit_c_index(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_CumSum: case RL_OP_CumProd: return emit_cum(cg, node);
	case RL_OP_NegativeLogLikelihoodLoss:
	case RL_OP_SoftmaxCrossEntropyLoss:
		return emit_loss(cg, node);
	case RL_OP_ScatterElements: case RL_OP_Scatter: return emit_scatter_elements(cg, node);
	case RL_OP_ScatterND: return emit_scatter_nd(cg, node);
	case RL_OP_GatherND: return emit_gather_nd(cg, node);
	case RL_OP_OneHot: return emit_onehot(cg, node);
	case RL_OP_TopK: return emit_topk(cg, node);
	case RL_OP_RMSNormalization: case RL_OP_LpNormalization: return emit_rownorm(cg, node);
	case RL_OP_Resize: case RL_OP_Upsample: return rl_emit_c_resize(cg, node);
	case RL_OP_CenterCropPad: return emit_center_crop_pad(cg, node);
	case RL_OP_ReverseSequence: return emit_reverse_sequence(cg, node);
	case RL_OP_Einsum: return emit_einsum(cg, node);
	case RL_OP_GridSample: return rl_emit_c_grid_sample(cg, node);
	default:
		return cg_error(cg, node, "%s has no index-family kernel",
		                rl_op_table[cg->g->nodes[node].op].name);
	}
}
