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
 * Float32 groups (and float32 epilogues) are written twice, `#ifdef RL_VEC`
 * RL_VW lanes per step through the vector expression table, and the scalar
 * table under `#else` (see "the vector loop" below); both split the same
 * outer loop across threads.
 *
 * Numerics equal the unfused kernels': every value is rounded to its dtype
 * where the single-op kernel would store it (float16/bfloat16 locals go
 * through rl_f2h/rl_h2f, integers through their C type, bools to 0/1).
 */
#include "emit_impl.h"
#include "cost.h"

#include <string.h>

#define VW 16 /* RL_VW, floats per vector in the generated code */

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

static int merge_dims(const struct rl_shape *out, int n, const struct rl_shape *const *ins,
                      int64_t *md, int64_t (*ms)[RL_MAX_RANK + 1]);
static bool vec_group(struct rl_cgen *cg, const struct rl_cgen_group *grp, enum rl_status *st);

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
	enum rl_status vst;
	if (vec_group(cg, grp, &vst))
		return vst;
	for (int k = 0; k < grp->nin; k++)
		ins[k] = &val(cg, grp->in[k])->shape;
	int depth = cg_bcast_open_par(cg, &y->shape, grp->nin, ins, 1 << 15);
	for (int k = 0; k < grp->nin; k++) {
		if (input_slot(grp, grp->in[k], 0) != k)
			continue; /* a value twice among the inputs (Mul(x, x)): read as its first */
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
		cg_line(cg, "Y%d[o] = %s;", q, cg_assign(cg, val(cg, grp->out[q])->dtype, loc));
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

static enum rl_status compute_vnodes(struct rl_cgen *cg, const struct rl_cgen_group *grp,
                                     const char *pre, int first_ext, const char *av);

/*
 * Every value the group's elementwise nodes touch is float32: the kernel's
 * inputs from `first_in` on (an epilogue skips the anchor's own inputs), the
 * inputs and outputs of each node but the anchor, and the kernel's outputs
 * (in an epilogue group Y0 has the anchor's dtype).
 */
static bool all_float32(struct rl_cgen *cg, const struct rl_cgen_group *grp, int first_in)
{
	for (int k = first_in; k < grp->nin; k++)
		if (grp->in[k] != RL_NONE && val(cg, grp->in[k])->dtype != RL_DT_FLOAT)
			return false;
	for (int j = 0; j < grp->nnodes; j++) {
		const struct rl_node *n = &cg->g->nodes[grp->nodes[j]];
		if (grp->nodes[j] == grp->anchor)
			continue;
		for (int s = 0; s < n->nin; s++)
			if (n->in[s] != RL_NONE && val(cg, n->in[s])->dtype != RL_DT_FLOAT)
				return false;
		for (int s = 0; s < n->nout; s++)
			if (n->out[s] != RL_NONE && val(cg, n->out[s])->dtype != RL_DT_FLOAT)
				return false;
	}
	for (int q = 0; q < grp->nout; q++)
		if (val(cg, grp->out[q])->dtype != RL_DT_FLOAT)
			return false;
	return true;
}

/*
 * The vector form of an epilogue over float32 values: RL_VW outputs of the
 * run per step (the last one padded through rl_vload_n/rl_vstore_n),
 * operands constant over the run splatted, contiguous ones loaded, others
 * gathered lane by lane. Writes `#ifdef RL_VEC` and the loop; the caller
 * writes `#else`, the scalar loop and `#endif`. False (nothing written)
 * when a value is not float32.
 */
static bool epilogue_vec(struct rl_cgen *cg, const struct rl_cgen_group *grp, enum rl_dtype dt,
                         int na, const int64_t *md, const int64_t *ostr,
                         int64_t (*ms)[RL_MAX_RANK + 1], int m, const int *kind, int64_t n)
{
	if (dt != RL_DT_FLOAT || !all_float32(cg, grp, na))
		return false;
	/* the loop on rl_vf, and before it the same on rl_wf for x86-64 below
	 * AVX-512, as vec_group writes them (emit_math.c, vm_nbase) */
	cg->vnarrow = 1;
	cg_vmath_need(cg, RL_VM_BASE);
	cg->simd = 1;
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	struct rl_buf outer = cg_vwide_begin(cg);
	bool tail = n % VW != 0;
	cg_line(cg, "for (size_t ee = 0; ee < %lld; ee += RL_VW) {", (long long)n);
	cg->indent++;
	if (tail)
		cg_line(cg, "const size_t nl = %lld - ee < RL_VW ? %lld - ee : RL_VW; /* lanes */",
		        (long long)n, (long long)n);
	const char *full = tail ? "nl == RL_VW" : NULL;
	/* load `dst` from float pointer expression p (RL_VW or nl lanes) */
#define VLOAD(dst, ...)                                                              \
	do {                                                                         \
		char p_[800];                                                        \
		snprintf(p_, sizeof(p_), __VA_ARGS__);                               \
		if (full) {                                                          \
			cg_line(cg, "rl_vf %s;", dst);                               \
			cg_line(cg, "if (%s)", full);                                \
			cg_line(cg, "    %s = *(const rl_vfu *)(%s);", dst, p_);     \
			cg_line(cg, "else");                                         \
			cg_line(cg, "    rl_vload_n(&%s, %s, nl);", dst, p_);        \
		} else {                                                             \
			cg_line(cg, "const rl_vf %s = *(const rl_vfu *)(%s);", dst, p_); \
		}                                                                    \
	} while (0)
	VLOAD("ea", "ey + ee");
	for (int k = 0; k < grp->nin - na; k++) {
		char nm[32], ix[600];
		snprintf(nm, sizeof(nm), "ex%d", na + k);
		if (kind[k] == 0) {
			cg_line(cg, "const rl_vf %s = X%d[eb%d] + (rl_vf){0};", nm, na + k, na + k);
		} else if (kind[k] == 1) {
			VLOAD(nm, "X%d + eb%d + ee", na + k, na + k);
		} else {
			index_expr(md, ostr, ms[k], m, "(eq + ee + l)", ix, sizeof(ix));
			cg_line(cg, "rl_vf %s = {0};", nm);
			cg_line(cg, "for (size_t l = 0; l < %s; l++) /* gathered */", tail ? "nl" : "RL_VW");
			cg_line(cg, "    %s[l] = X%d[%s];", nm, na + k, ix);
		}
	}
#undef VLOAD
	enum rl_status st = compute_vnodes(cg, grp, "e", na, "ea");
	if (st != RL_OK) {
		snprintf(cg->err, sizeof(cg->err), "%.500s", cg->g->err);
	} else {
		for (int q = 0; q < grp->nout; q++) {
			char loc[32], dst[64];
			out_local(cg, grp, grp->out[q], "e", "ea", loc, sizeof(loc));
			if (q == 0)
				snprintf(dst, sizeof(dst), "ey + ee");
			else
				snprintf(dst, sizeof(dst), "Y%d + eq + ee", q);
			if (full) {
				cg_line(cg, "if (%s)", full);
				cg_line(cg, "    *(rl_vfu *)(%s) = %s;", dst, loc);
				cg_line(cg, "else");
				cg_line(cg, "    rl_vstore_n(%s, &%s, nl);", dst, loc);
			} else {
				cg_line(cg, "*(rl_vfu *)(%s) = %s;", dst, loc);
			}
		}
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_vwide_end(cg, outer, false, true);
	return true;
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
	bool vec = epilogue_vec(cg, grp, dt, na, md, ostr, ms, m, kind, n);
	if (vec)
		rl_buf_printf(&cg->body, "#else\n");
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
		cg_line(cg, "ey[ee] = %s;", cg_assign(cg, dt, loc));
		/* other values the group writes: same shape, same flat index */
		for (int q = 1; q < grp->nout; q++) {
			out_local(cg, grp, grp->out[q], "e", "ea", loc, sizeof(loc));
			cg_line(cg, "Y%d[eq + ee] = %s;", q,
			        cg_assign(cg, val(cg, grp->out[q])->dtype, loc));
		}
	}
	cg->indent--;
	cg_line(cg, "}");
	if (vec)
		rl_buf_printf(&cg->body, "#endif\n");
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

/* ---- the vector loop: float32 groups and single ops --------------------- */

/*
 * A float32 elementwise kernel whose operands are each contiguous with the
 * output, a scalar, or broadcast along whole rows or columns is written
 * twice over one loop nest: `#ifdef RL_VEC`, RL_VW lanes per step through
 * the vector expression table (cg_elemwise_vexpr; ops without a vector form
 * run the scalar expression per lane), and under `#else` the scalar table.
 * The nest is the output's merged dims [outer..., inner]: operands that
 * vary along the inner dim are loaded as vectors, those that do not are
 * splatted once per row (hoisted). A short last vector of a row goes through
 * rl_vload_n/rl_vstore_n, padded, so every element gets the same math.
 * Threads split the outermost dim, or for a flat kernel blocks of
 * RL_VEC_BLOCK elements (a multiple of RL_VW, so only the last chunk has a
 * tail); every element is computed in one iteration, so any thread count
 * gives the same bits.
 */
#define RL_VEC_BLOCK 4096 /* a multiple of VW */
#define RL_VEC_MIN_PAR (1 << 15)
_Static_assert(RL_VEC_MIN_PAR == RL_COST_PAR_MIN_ELEMS, "ir/cost.h prices the split made here");

struct vplan {
	int m;                               /* merged output dims */
	int64_t md[RL_MAX_RANK + 1];
	int64_t ms[17][RL_MAX_RANK + 1];     /* per input strides, 0 = broadcast */
	int64_t ostr[RL_MAX_RANK + 1];
	int64_t ne;
	bool par;
};


/* Vector locals `<pre>v<j>` for every non-anchor node (see compute_nodes). */
static enum rl_status compute_vnodes(struct rl_cgen *cg, const struct rl_cgen_group *grp,
                                     const char *pre, int first_ext, const char *av)
{
	for (int j = 0; j < grp->nnodes; j++) {
		uint32_t node = grp->nodes[j];
		const struct rl_node *n = &cg->g->nodes[node];
		if (node == grp->anchor)
			continue;
		char names[16][64], lits[16][64], lane[16][64];
		const char *in[16], *sin[16];
		if (n->nin > 16)
			return cg_error(cg, node, "%s with %d inputs cannot be fused",
			                rl_op_table[n->op].name, n->nin);
		for (int s = 0; s < n->nin; s++) {
			uint32_t v = n->in[s];
			in[s] = sin[s] = NULL;
			lits[s][0] = 0;
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
			else if (is_literal(cg, v)) {
				literal(cg, v, lits[s], sizeof(lits[s]));
				snprintf(names[s], sizeof(names[s]), "%sk%d_%d", pre, j, s);
				cg_line(cg, "const rl_vf %s = %s + (rl_vf){0};", names[s], lits[s]);
			} else
				return cg_error(cg, node, "fused group %d: input '%s' has no source",
				                grp->id, val(cg, v)->name);
			in[s] = names[s];
		}
		char e[2048], tag[16], cm[128], nm[96];
		const char *why = NULL;
		snprintf(tag, sizeof(tag), "_%s%d", pre, j);
		ctext(n->name, nm, sizeof(nm));
		snprintf(cm, sizeof(cm), "%s: %s", nm, rl_op_table[n->op].name);
		if (cg_elemwise_vexpr(cg, node, in, tag, e, sizeof(e), &why)) {
			cg_line(cg, "const rl_vf %sv%d = %s; /* %s */", pre, j, e, cm);
			continue;
		}
		/* no vector form: the scalar table per lane */
		cg_line(cg, "rl_vf %sv%d; /* %s, per lane */", pre, j, cm);
		cg_line(cg, "{");
		cg->indent++;
		for (int s = 0; s < n->nin; s++) {
			if (!in[s])
				continue;
			if (lits[s][0]) {
				sin[s] = lits[s];
				continue;
			}
			cg_line(cg, "float l%d_[RL_VW];", s);
			cg_line(cg, "memcpy(l%d_, &%s, sizeof(l%d_));", s, in[s], s);
			snprintf(lane[s], sizeof(lane[s]), "l%d_[l]", s);
			sin[s] = lane[s];
		}
		cg_line(cg, "float ly_[RL_VW];");
		cg_line(cg, "for (int l = 0; l < RL_VW; l++) {");
		cg->indent++;
		if (!cg_elemwise_expr(cg, node, sin, tag, e, sizeof(e), &why))
			return cg_error(cg, node, "%s on %s: %s", rl_op_table[n->op].name,
			                rl_dtype_name(cg_in(cg, node, 0)->dtype), why);
		cg_line(cg, "ly_[l] = %s;", cg_assign(cg, RL_DT_FLOAT, e));
		cg->indent--;
		cg_line(cg, "}");
		cg_line(cg, "memcpy(&%sv%d, ly_, sizeof(ly_));", pre, j);
		cg->indent--;
		cg_line(cg, "}");
	}
	return RL_OK;
}

/* One branch (vector or scalar) of the loop nest of plan p. */
static enum rl_status vec_nest(struct rl_cgen *cg, const struct rl_cgen_group *grp,
                               const struct vplan *p, bool vec)
{
	int m = p->m, depth = 0;
	int64_t inner = p->md[m - 1];
	for (int d = 0; d < m - 1; d++) {
		if (d == 0 && p->par)
			cg_line(cg, "for (size_t j0 = (size_t)lo; j0 < (size_t)hi; j0++) {");
		else
			cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", d, d, (long long)p->md[d],
			        d);
		cg->indent++;
		depth++;
	}
	/* row offsets: `ob` in the output, `bK` in input K */
	char ob[512], bk[17][512];
	for (int k = -1; k < grp->nin; k++) {
		char *b = k < 0 ? ob : bk[k];
		size_t q = 0;
		b[0] = 0;
		if (k >= 0 && grp->in[k] == RL_NONE)
			continue;
		for (int d = 0; d < m - 1; d++) {
			int64_t s = k < 0 ? p->ostr[d] : p->ms[k][d];
			if (s == 1)
				q += (size_t)snprintf(b + q, 512 - q, "%sj%d", q ? " + " : "", d);
			else if (s)
				q += (size_t)snprintf(b + q, 512 - q, "%sj%d * %lld", q ? " + " : "", d,
				                      (long long)s);
		}
		if (!q)
			snprintf(b, 512, "0");
	}
	const char *i0 = "0";
	char i1[128];
	snprintf(i1, sizeof(i1), "%lld", (long long)inner);
	if (m == 1 && p->par) {
		cg_line(cg, "const size_t i0 = (size_t)lo * %d;", RL_VEC_BLOCK);
		cg_line(cg, "const size_t i1 = (size_t)hi * %d < %lld ? (size_t)hi * %d : %lld;",
		        RL_VEC_BLOCK, (long long)inner, RL_VEC_BLOCK, (long long)inner);
		i0 = "i0";
		snprintf(i1, sizeof(i1), "i1");
	}
	if (m > 1)
		cg_line(cg, "const size_t ob = %s;", ob);
	const char *obp = m > 1 ? "ob + " : "";
	/* operands constant along the row: loaded (and splatted) once */
	for (int k = 0; k < grp->nin; k++) {
		if (grp->in[k] == RL_NONE || p->ms[k][m - 1] != 0 || input_slot(grp, grp->in[k], 0) != k)
			continue;
		if (vec)
			cg_line(cg, "const rl_vf x%d = X%d[%s] + (rl_vf){0};", k, k, bk[k]);
		else
			cg_line(cg, "const float x%d = X%d[%s];", k, k, bk[k]);
	}
	bool tail = vec && inner % VW != 0;
	if (vec)
		cg_line(cg, "for (size_t i = %s; i < %s; i += RL_VW) {", i0, i1);
	else
		cg_line(cg, "for (size_t i = %s; i < %s; i++) {", i0, i1);
	cg->indent++;
	depth++;
	if (tail)
		cg_line(cg, "const size_t nl = %s - i < RL_VW ? %s - i : RL_VW; /* lanes */", i1, i1);
	for (int k = 0; k < grp->nin; k++) {
		/* a value twice among the inputs (Mul(x, x)) is read as its first */
		if (grp->in[k] == RL_NONE || p->ms[k][m - 1] == 0 || input_slot(grp, grp->in[k], 0) != k)
			continue;
		/* the row offset: none, the output's (`ob`), or its own */
		char at[600], off[520];
		if (!strcmp(bk[k], "0"))
			off[0] = 0;
		else if (m > 1 && !strcmp(bk[k], ob))
			snprintf(off, sizeof(off), "ob + ");
		else
			snprintf(off, sizeof(off), "%s + ", bk[k]);
		snprintf(at, sizeof(at), "X%d + %si", k, off);
		if (!vec) {
			cg_line(cg, "const float x%d = X%d[%si];", k, k, off);
		} else if (tail) {
			cg_line(cg, "rl_vf x%d;", k);
			cg_line(cg, "if (nl == RL_VW)");
			cg_line(cg, "    x%d = *(const rl_vfu *)(%s);", k, at);
			cg_line(cg, "else");
			cg_line(cg, "    rl_vload_n(&x%d, %s, nl);", k, at);
		} else {
			cg_line(cg, "const rl_vf x%d = *(const rl_vfu *)(%s);", k, at);
		}
	}
	enum rl_status st = vec ? compute_vnodes(cg, grp, "", 0, "") : compute_nodes(cg, grp, "", 0, "");
	if (st != RL_OK)
		return st;
	for (int q = 0; q < grp->nout; q++) {
		char loc[32];
		out_local(cg, grp, grp->out[q], "", "", loc, sizeof(loc));
		if (!vec) {
			cg_line(cg, "Y%d[%si] = %s;", q, obp, loc);
		} else if (tail) {
			cg_line(cg, "if (nl == RL_VW)");
			cg_line(cg, "    *(rl_vfu *)(Y%d + %si) = %s;", q, obp, loc);
			cg_line(cg, "else");
			cg_line(cg, "    rl_vstore_n(Y%d + %si, &%s, nl);", q, obp, loc);
		} else {
			cg_line(cg, "*(rl_vfu *)(Y%d + %si) = %s;", q, obp, loc);
		}
	}
	while (depth-- > 0) {
		cg->indent--;
		cg_line(cg, "}");
	}
	return RL_OK;
}

/* Plan and write the vector kernel of grp (elementwise, all float32); false
 * when it does not fit, with nothing written. */
static bool vec_group(struct rl_cgen *cg, const struct rl_cgen_group *grp, enum rl_status *st)
{
	const struct rl_value *y = val(cg, grp->out[0]);
	const struct rl_shape *ins[17];
	struct vplan p = {0};
	static const struct rl_shape scalar = {0};
	if (grp->nin > 16 || !all_float32(cg, grp, 0))
		return false;
	for (int q = 1; q < grp->nout; q++)
		if (!rl_shape_equal(&val(cg, grp->out[q])->shape, &y->shape))
			return false;
	for (int k = 0; k < grp->nin; k++)
		ins[k] = grp->in[k] == RL_NONE ? &scalar : &val(cg, grp->in[k])->shape;
	p.m = merge_dims(&y->shape, grp->nin, ins, p.md, p.ms);
	p.ne = rl_shape_numel(&y->shape);
	if (p.m == 0)
		return false;
	int64_t inner = p.md[p.m - 1];
	for (int k = 0; k < grp->nin; k++)
		if (p.ms[k][p.m - 1] > 1)
			return false; /* strided along the row: the scalar nest */
	if (p.m > 1 && inner < VW)
		return false;
	int64_t acc = 1;
	for (int d = p.m - 1; d >= 0; d--) {
		p.ostr[d] = acc;
		acc *= p.md[d];
	}
	if (p.ne >= 2 * RL_VEC_MIN_PAR) {
		if (p.m == 1) {
			p.par = true;
			cg->par_n = (p.ne + RL_VEC_BLOCK - 1) / RL_VEC_BLOCK;
			cg->par_grain = RL_VEC_MIN_PAR / RL_VEC_BLOCK;
		} else if (p.md[0] > 1) {
			int64_t row = p.ne / p.md[0];
			p.par = true;
			cg->par_n = p.md[0];
			cg->par_grain = (RL_VEC_MIN_PAR + row - 1) / row;
		}
	}
	/* The loop on rl_vf, and on x86-64 below AVX-512 (RL_VNARROW: the
	 * clones, or a file built for AVX2) the same loop on 8-float rl_wf
	 * first, taken unless the CPU has AVX-512: an rl_vf is several
	 * registers in the narrower clones (emit_math.c, vm_nbase). The rl_wf
	 * loop is the rl_vf one's text renamed. With a Sqrt the rl_vf loop,
	 * then run only where AVX-512 is, takes the whole-zmm rl_vsqrt_v4
	 * (emit_math.c). The test is made once per range. */
	cg->vnarrow = 1;
	cg_vmath_need(cg, RL_VM_BASE);
	cg->simd = 1;
	bool sqrt = false;
	for (int j = 0; j < grp->nnodes; j++)
		sqrt |= cg->g->nodes[grp->nodes[j]].op == RL_OP_Sqrt;
	if (sqrt)
		cg_vmath_need(cg, RL_VM_SQRT);
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	struct rl_buf outer = cg_vwide_begin(cg);
	*st = vec_nest(cg, grp, &p, true);
	cg_vwide_end(cg, outer, sqrt, *st == RL_OK);
	if (*st != RL_OK)
		return true; /* *st fails the whole emission */
	rl_buf_printf(&cg->body, "#else\n");
	*st = vec_nest(cg, grp, &p, false);
	if (*st != RL_OK)
		return true;
	rl_buf_printf(&cg->body, "#endif\n");
	return true;
}

bool cg_elemwise_vec_single(struct rl_cgen *cg, uint32_t node, enum rl_status *st)
{
	struct rl_node *n = &cg->g->nodes[node];
	uint32_t out = n->out[0];
	struct rl_cgen_group grp = {
		.id = -1, .nodes = &node, .nnodes = 1, .anchor = RL_NONE,
		.in = n->in, .nin = n->nin, .out = &out, .nout = 1,
	};
	if (n->nout != 1 || out == RL_NONE || rl_shape_numel(&val(cg, out)->shape) == 0)
		return false;
	return vec_group(cg, &grp, st);
}
