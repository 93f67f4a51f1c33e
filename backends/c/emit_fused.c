/*
 * emit_fused.c - one kernel per fused group (passes/fuse.c decides the groups,
 * the driver in emit.c checks them and hands them over as rl_cgen_group).
 *
 * Elementwise group: one loop nest over the shape every node of the group
 * produces (cg_bcast_open with every external tensor, so inputs broadcast
 * into it as in the single-op kernels). Per element, each external input is
 * loaded once into a local `xK`, each node's value is computed into a local
 * `vJ` in topological order from the elementwise expression table
 * (cg_elemwise_expr, the same table the single-op kernels use), and the
 * group's outputs are stored. Scalar constants become literals. Intermediate
 * values never touch memory; that is the whole point.
 *
 * Epilogue group: the anchor (MatMul, Gemm, Conv) is written by its own
 * emitter with cg->epi set; wherever that emitter has finished a run of
 * outputs (a row block of a product, an output row of a convolution) it
 * calls cg_epilogue(), which applies the group's elementwise nodes in place
 * while the run is still in L1: bias, activation, residual add, scale.
 *
 * Numerics equal the unfused kernels': every value is rounded to its dtype
 * where the single-op kernel would store it (float16/bfloat16 locals go
 * through rl_f2h/rl_h2f, integers through their C type, bools to 0/1).
 */
#include "emit.h"

#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

static const struct rl_value *val(struct rl_cgen *cg, uint32_t v)
{
	return &cg->g->values[v];
}

/* A constant scalar the kernel writes as a literal instead of reading. */
static bool is_literal(struct rl_cgen *cg, uint32_t v)
{
	return rl_value_is_const(cg->g, v) && val(cg, v)->data &&
	       rl_shape_numel(&val(cg, v)->shape) == 1;
}

/* Literal of constant scalar v in its compute type, parenthesized when it
 * starts with a sign so that "-x" or "a - b" stay well-formed. */
static void literal(struct rl_cgen *cg, uint32_t v, char *b, size_t n)
{
	enum rl_dtype dt = val(cg, v)->dtype;
	char t[128];
	if (rl_dtype_is_float(dt)) {
		snprintf(t, sizeof(t), "%s", cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT,
		                                    rl_value_get_float(cg->g, v, 0)));
	} else if (dt == RL_DT_UINT64) {
		snprintf(t, sizeof(t), "UINT64_C(%llu)",
		         (unsigned long long)rl_value_get_int(cg->g, v, 0));
	} else if (dt == RL_DT_INT64) {
		int64_t x = rl_value_get_int(cg->g, v, 0);
		if (x == INT64_MIN)
			snprintf(t, sizeof(t), "INT64_MIN");
		else
			snprintf(t, sizeof(t), "INT64_C(%lld)", (long long)x);
	} else if (dt == RL_DT_BOOL) {
		snprintf(t, sizeof(t), "%d", rl_value_get_int(cg->g, v, 0) != 0);
	} else {
		snprintf(t, sizeof(t), "(%s)%lld", cg_ctype(dt),
		         (long long)rl_value_get_int(cg->g, v, 0));
	}
	snprintf(b, n, t[0] == '-' ? "(%s)" : "%s", t);
}

/* Comment text: no terminator or control character from a node name. */
static void ctext(const char *s, char *b, size_t n)
{
	size_t k = 0;
	for (const char *p = s; *p && k + 1 < n && k < 80; p++) {
		char c = *p;
		if ((c == '*' && p[1] == '/') || (c == '/' && p[1] == '*'))
			c = '_';
		if ((unsigned char)c < 32 || (unsigned char)c > 126)
			c = '?';
		b[k++] = c;
	}
	b[k] = 0;
}

/* Index of the group node producing v, or -1. */
static int producer_in_group(struct rl_cgen *cg, const struct rl_cgen_group *grp, uint32_t v)
{
	uint32_t p = val(cg, v)->producer;
	if (p == RL_NONE)
		return -1;
	for (int j = 0; j < grp->nnodes; j++)
		if (grp->nodes[j] == p)
			return j;
	return -1;
}

/* Position of v among the kernel's inputs X0.., from `from` on; -1 if none. */
static int input_slot(const struct rl_cgen_group *grp, uint32_t v, int from)
{
	for (int k = from; k < grp->nin; k++)
		if (grp->in[k] == v)
			return k;
	return -1;
}

/* "const T NAME = E;" for node value E of dtype dt, rounded like a store. */
static void define_local(struct rl_cgen *cg, enum rl_dtype dt, const char *name,
                         const char *e, const char *comment)
{
	const char *init = e;
	if (dt == RL_DT_FLOAT16 || dt == RL_DT_BFLOAT16)
		init = cg_load(cg, dt, cg_store(cg, dt, e));
	else if (dt == RL_DT_BOOL)
		init = cg_store(cg, dt, e);
	cg_line(cg, "const %s %s = %s; /* %s */", cg_comptype(dt), name, init, comment);
}

/*
 * Compute every non-anchor node of the group into locals `<pre>v<j>`.
 * ext(k) names external input k (its local), av the anchor's output local.
 */
static enum rl_status compute_nodes(struct rl_cgen *cg, const struct rl_cgen_group *grp,
                                    const char *pre, int first_ext, const char *av)
{
	for (int j = 0; j < grp->nnodes; j++) {
		uint32_t node = grp->nodes[j];
		const struct rl_node *n = &cg->g->nodes[node];
		if (node == grp->anchor)
			continue;
		char names[16][64];
		const char *in[16];
		if (n->nin > 16)
			return cg_error(cg, node, "%s with %d inputs cannot be fused",
			                rl_op_table[n->op].name, n->nin);
		for (int s = 0; s < n->nin; s++) {
			uint32_t v = n->in[s];
			in[s] = NULL;
			if (v == RL_NONE || (n->op == RL_OP_CastLike && s == 1))
				continue;
			int pj = producer_in_group(cg, grp, v);
			int xk;
			if (pj >= 0 && grp->nodes[pj] == grp->anchor)
				snprintf(names[s], sizeof(names[s]), "%s", av);
			else if (pj >= 0)
				snprintf(names[s], sizeof(names[s]), "%sv%d", pre, pj);
			else if ((xk = input_slot(grp, v, first_ext)) >= 0)
				snprintf(names[s], sizeof(names[s]), "%sx%d", pre, xk);
			else if (is_literal(cg, v))
				literal(cg, v, names[s], sizeof(names[s]));
			else
				return cg_error(cg, node, "fused group %d: input '%s' has no source",
				                grp->id, val(cg, v)->name);
			in[s] = names[s];
		}
		char e[2048], tag[16], name[32], cm[128], nm[96];
		const char *why = NULL;
		snprintf(tag, sizeof(tag), "_%s%d", pre, j);
		if (!cg_elemwise_expr(cg, node, in, tag, e, sizeof(e), &why))
			return cg_error(cg, node, "%s on %s: %s", rl_op_table[n->op].name,
			                rl_dtype_name(cg_in(cg, node, 0)->dtype), why);
		snprintf(name, sizeof(name), "%sv%d", pre, j);
		ctext(n->name, nm, sizeof(nm));
		snprintf(cm, sizeof(cm), "%s: %s", nm, rl_op_table[n->op].name);
		define_local(cg, cg_out(cg, node, 0)->dtype, name, e, cm);
	}
	return RL_OK;
}

/* The local holding output value v (a group node's). */
static void out_local(struct rl_cgen *cg, const struct rl_cgen_group *grp, uint32_t v,
                      const char *pre, const char *av, char *b, size_t n)
{
	int j = producer_in_group(cg, grp, v);
	if (j >= 0 && grp->nodes[j] == grp->anchor)
		snprintf(b, n, "%s", av);
	else
		snprintf(b, n, "%sv%d", pre, j);
}

/* ---- elementwise groups ------------------------------------------------- */

static enum rl_status emit_elementwise_group(struct rl_cgen *cg, const struct rl_cgen_group *grp)
{
	const struct rl_value *y = val(cg, grp->out[0]);
	const struct rl_shape *ins[16];
	char sb[128];
	if (grp->nin > 16)
		return cg_error(cg, grp->nodes[0], "fused group %d has %d inputs (at most 16)",
		                grp->id, grp->nin);
	int64_t ne = rl_shape_numel(&y->shape);
	cg_line(cg, "/* %d ops in one pass over %s elements; intermediates stay in registers */",
	        grp->nnodes, rl_shape_str(&y->shape, sb, sizeof(sb)));
	if (ne == 0)
		return RL_OK;
	for (int k = 0; k < grp->nin; k++)
		ins[k] = &val(cg, grp->in[k])->shape;
	int depth = cg_bcast_open_par(cg, &y->shape, grp->nin, ins, 1 << 15);
	for (int k = 0; k < grp->nin; k++) {
		const struct rl_value *x = val(cg, grp->in[k]);
		char src[32];
		snprintf(src, sizeof(src), "X%d[i%d]", k, k);
		cg_line(cg, "const %s x%d = %s;", cg_comptype(x->dtype), k, cg_load(cg, x->dtype, src));
	}
	enum rl_status st = compute_nodes(cg, grp, "", 0, "");
	if (st != RL_OK)
		return st;
	for (int q = 0; q < grp->nout; q++) {
		char loc[32];
		out_local(cg, grp, grp->out[q], "", "", loc, sizeof(loc));
		cg_line(cg, "Y%d[o] = %s;", q, cg_store(cg, val(cg, grp->out[q])->dtype, loc));
	}
	cg_loops_close(cg, depth);
	return RL_OK;
}

/* ---- epilogue groups ---------------------------------------------------- */

/* Dims of `out` with size-1 dims dropped and neighbours merged where every
 * input allows it (as cg_bcast_open does); strides per input, 0 where it
 * broadcasts. Returns the merged rank. */
static int merge_dims(const struct rl_shape *out, int n, const struct rl_shape *const *ins,
                      int64_t *md, int64_t (*ms)[RL_MAX_RANK + 1])
{
	int r = out->rank, m = 0;
	int64_t st[17][RL_MAX_RANK + 1];
	for (int k = 0; k < n; k++) {
		int64_t s[RL_MAX_RANK];
		cg_strides(ins[k], s);
		int off = r - ins[k]->rank;
		for (int d = 0; d < r; d++) {
			int dk = d - off;
			st[k][d] = (dk < 0 || ins[k]->d[dk].v == 1) ? 0 : s[dk];
		}
	}
	for (int d = 0; d < r; d++) {
		int64_t dim = out->d[d].v;
		if (dim == 1)
			continue;
		bool merge = m > 0;
		for (int k = 0; merge && k < n; k++)
			merge = ms[k][m - 1] == st[k][d] * dim;
		if (merge) {
			md[m - 1] *= dim;
			for (int k = 0; k < n; k++)
				ms[k][m - 1] = st[k][d];
		} else {
			md[m] = dim;
			for (int k = 0; k < n; k++)
				ms[k][m] = st[k][d];
			m++;
		}
	}
	return m;
}

/* Flat index into input k of output element `q` (an expression). */
static void index_expr(const int64_t *md, const int64_t *ostr, const int64_t *ist, int m,
                       const char *q, char *b, size_t n)
{
	size_t p = 0;
	b[0] = 0;
	for (int d = 0; d < m && p < n; d++) {
		if (!ist[d])
			continue;
		char coord[160];
		if (d == 0 && ostr[d] == 1)
			snprintf(coord, sizeof(coord), "%s", q);
		else if (d == 0)
			snprintf(coord, sizeof(coord), "%s / %lld", q, (long long)ostr[d]);
		else if (ostr[d] == 1)
			snprintf(coord, sizeof(coord), "%s %% %lld", q, (long long)md[d]);
		else
			snprintf(coord, sizeof(coord), "%s / %lld %% %lld", q, (long long)ostr[d],
			         (long long)md[d]);
		if (ist[d] == 1)
			p += (size_t)snprintf(b + p, n - p, "%s(%s)", p ? " + " : "", coord);
		else
			p += (size_t)snprintf(b + p, n - p, "%s(%s) * %lld", p ? " + " : "", coord,
			                      (long long)ist[d]);
	}
	if (!p)
		snprintf(b, n, "0");
}

void cg_epilogue(struct rl_cgen *cg, const char *y, const char *base, int64_t n, int64_t span)
{
	const struct rl_cgen_group *grp = cg->epi;
	if (!grp || n <= 0)
		return;
	cg->epi_calls++;
	const struct rl_value *av = cg_out(cg, grp->anchor, 0);
	enum rl_dtype dt = av->dtype;
	int na = cg->g->nodes[grp->anchor].nin; /* the anchor's inputs come first */
	int ne = grp->nin - na;
	const struct rl_shape *ins[17];
	int64_t md[RL_MAX_RANK + 1], ms[17][RL_MAX_RANK + 1], ostr[RL_MAX_RANK + 1];
	RL_ASSERT(ne >= 0 && ne <= 16);
	for (int k = 0; k < ne; k++)
		ins[k] = &val(cg, grp->in[na + k])->shape;
	int m = merge_dims(&av->shape, ne, ins, md, ms);
	int64_t acc = 1, numel = rl_shape_numel(&av->shape);
	for (int d = m - 1; d >= 0; d--) {
		ostr[d] = acc;
		acc *= md[d];
	}
	/* the innermost merged dims [d0, m) whose block holds every run */
	int d0 = -1;
	if (span > 0 && numel % span == 0) {
		int64_t s = 1;
		for (int d = m - 1; d >= 0 && d0 < 0; d--) {
			s *= md[d];
			if (s % span == 0)
				d0 = d;
		}
		if (m == 0)
			d0 = 0;
	}
	/* per input: 0 = same element for the whole run, 1 = contiguous with the
	 * run, 2 = computed per element */
	int kind[16];
	for (int k = 0; k < ne; k++) {
		bool zero = d0 >= 0, lin = d0 >= 0;
		for (int d = d0 < 0 ? 0 : d0; d < m; d++) {
			zero &= ms[k][d] == 0;
			lin &= ms[k][d] == ostr[d];
		}
		kind[k] = zero ? 0 : lin ? 1 : 2;
	}

	char list[1024], nm[96];
	size_t p = 0;
	list[0] = 0;
	for (int j = 0; j < grp->nnodes && p < 600; j++) {
		const struct rl_node *nd = &cg->g->nodes[grp->nodes[j]];
		if (grp->nodes[j] == grp->anchor)
			continue;
		ctext(nd->name, nm, sizeof(nm));
		p += (size_t)snprintf(list + p, sizeof(list) - p, "%s%s (%s)", p ? ", " : "", nm,
		                      rl_op_table[nd->op].name);
	}
	char yb[300], ix[600];
	bool ident = true;
	for (const char *c = y; *c; c++)
		ident &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		         (*c >= '0' && *c <= '9') || *c == '_';
	snprintf(yb, sizeof(yb), ident ? "%s" : "(%s)", y);
	cg_line(cg, "{ /* epilogue, in place while the run is hot: %s */", list);
	cg->indent++;
	cg_line(cg, "%s *ey = %s;", cg_ctype(dt), yb);
	cg_line(cg, "const size_t eq = %s;", base);
	cg_line(cg, "(void)eq;");
	for (int k = 0; k < ne; k++) {
		if (kind[k] == 2)
			continue;
		index_expr(md, ostr, ms[k], m, "eq", ix, sizeof(ix));
		cg_line(cg, "const size_t eb%d = %s;", na + k, ix);
	}
	if (n == 1) {
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "const size_t ee = 0;");
	} else {
		cg_line(cg, "for (size_t ee = 0; ee < %lld; ee++) {", (long long)n);
		cg->indent++;
	}
	cg_line(cg, "const %s ea = %s;", cg_comptype(dt), cg_load(cg, dt, "ey[ee]"));
	for (int k = 0; k < ne; k++) {
		const struct rl_value *x = val(cg, grp->in[na + k]);
		char src[700];
		if (kind[k] == 0)
			snprintf(src, sizeof(src), "X%d[eb%d]", na + k, na + k);
		else if (kind[k] == 1)
			snprintf(src, sizeof(src), "X%d[eb%d + ee]", na + k, na + k);
		else {
			index_expr(md, ostr, ms[k], m, "(eq + ee)", ix, sizeof(ix));
			snprintf(src, sizeof(src), "X%d[%s]", na + k, ix);
		}
		cg_line(cg, "const %s ex%d = %s;", cg_comptype(x->dtype), na + k,
		        cg_load(cg, x->dtype, src));
	}
	enum rl_status st = compute_nodes(cg, grp, "e", na, "ea");
	if (st != RL_OK) {
		/* the driver checked every node; report it after the kernel */
		snprintf(cg->err, sizeof(cg->err), "%.500s", cg->g->err);
	} else {
		char loc[32];
		out_local(cg, grp, grp->out[0], "e", "ea", loc, sizeof(loc));
		cg_line(cg, "ey[ee] = %s;", cg_store(cg, dt, loc));
		/* other values the group writes: same shape, same flat index */
		for (int q = 1; q < grp->nout; q++) {
			out_local(cg, grp, grp->out[q], "e", "ea", loc, sizeof(loc));
			cg_line(cg, "Y%d[eq + ee] = %s;", q,
			        cg_store(cg, val(cg, grp->out[q])->dtype, loc));
		}
	}
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
}

static enum rl_status emit_epilogue_group(struct rl_cgen *cg, const struct rl_cgen_group *grp)
{
	const struct rl_node *a = &cg->g->nodes[grp->anchor];
	enum rl_status st;
	cg->err[0] = 0;
	cg->epi = grp;
	cg->epi_calls = 0;
	switch (rl_op_table[a->op].family) {
	case RL_FAM_MATMUL: st = rl_emit_c_matmul(cg, grp->anchor); break;
	case RL_FAM_CONV: st = rl_emit_c_conv(cg, grp->anchor); break;
	default:
		st = cg_error(cg, grp->anchor, "%s cannot carry an epilogue", rl_op_table[a->op].name);
		break;
	}
	cg->epi = NULL;
	if (st != RL_OK)
		return st;
	if (cg->err[0])
		return rl_graph_error(cg->g, a, RL_ERR_UNSUPPORTED, "%s", cg->err);
	if (cg->epi_calls == 0 && rl_shape_numel(&val(cg, grp->out[0])->shape) > 0)
		return cg_error(cg, grp->anchor, "internal: this %s form has no epilogue hook",
		                rl_op_table[a->op].name);
	return RL_OK;
}

enum rl_status rl_emit_c_fused(struct rl_cgen *cg, const struct rl_cgen_group *grp)
{
	RL_ASSERT(grp->nnodes > 0 && grp->nout > 0);
	if (grp->anchor != RL_NONE)
		return emit_epilogue_group(cg, grp);
	return emit_elementwise_group(cg, grp);
}
