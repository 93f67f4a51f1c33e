/*
 * factorize.c - --factorize: apply the factorizations the judge accepts.
 *
 * For MatMul/Gemm with a constant float32 matrix weight, and Conv (2-D,
 * group 1) with a constant float32 weight, this pass computes the SVD of the
 * weight (LAPACKE sgesdd) and picks, for each rewrite it knows, the smallest
 * rank whose relative Frobenius reconstruction error ||W - W~|| / ||W|| is
 * under --max-rel-error (default 1e-2):
 *
 *  - low rank (MatMul, Gemm, Conv): W ~ U_r S_r V_r^T, split as
 *    (U_r S_r^1/2)(S_r^1/2 V_r^T) - two products through a rank-r
 *    intermediate (a Conv becomes a kxk Conv to r channels and a 1x1 Conv);
 *    the error follows from the discarded singular values;
 *  - Tucker-2 (Conv with a kernel larger than 1x1): truncated HOSVD of the
 *    output- and input-channel unfoldings, each mode given half the squared
 *    error budget, core = W x_0 U_out^T x_1 U_in^T; the error is measured on
 *    the explicit reconstruction.
 *
 * It prices each with the judge (rl_judge_cost_cand, the same kernels and
 * counters as the report) at the bound shapes on the chosen machine and
 * applies the fastest one whose predicted speedup t_before / t_after - 1 is
 * at least 10%. Every decision is a remark with the error and the ratios.
 * The new nodes are MatMul/Gemm/Conv with graph-owned weights; the replaced
 * node is removed and the graph compacted.
 *
 * Preconditions: static shapes (bound batch), a machine profile, ctx->
 * factorize set (the pass is a no-op otherwise). Without LAPACKE it only
 * remarks that it cannot run.
 */
#include "judge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef RL_HAVE_LAPACKE
#include <lapacke.h>
#endif

#define MIN_SPEEDUP 0.10 /* t_before / t_after - 1 */

/* ---- decompositions ----------------------------------------------------- */

bool rl_fact_have_svd(void)
{
#ifdef RL_HAVE_LAPACKE
	return true;
#else
	return false;
#endif
}

bool rl_fact_svd(const float *a, int64_t m, int64_t n, float *s, float *u, float *vt)
{
#ifdef RL_HAVE_LAPACKE
	if (m <= 0 || n <= 0 || m > INT32_MAX || n > INT32_MAX)
		return false;
	int64_t k = m < n ? m : n;
	float *t = malloc((size_t)(m * n) * sizeof(float));
	if (!t)
		return false;
	memcpy(t, a, (size_t)(m * n) * sizeof(float));
	lapack_int info;
	if (u && vt) {
		info = LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'S', (lapack_int)m, (lapack_int)n, t,
		                      (lapack_int)n, s, u, (lapack_int)k, vt, (lapack_int)n);
	} else {
		/* u and vt are not referenced, but LAPACKE checks their leading
		 * dimensions as if they were */
		float du = 0, dv = 0;
		info = LAPACKE_sgesdd(LAPACK_ROW_MAJOR, 'N', (lapack_int)m, (lapack_int)n, t,
		                      (lapack_int)n, s, &du, (lapack_int)m, &dv, (lapack_int)n);
	}
	free(t);
	return info == 0;
#else
	(void)a; (void)m; (void)n; (void)s; (void)u; (void)vt;
	return false;
#endif
}

double rl_fact_lowrank_error(const float *s, int64_t k, int64_t r)
{
	double all = 0, tail = 0;
	for (int64_t i = 0; i < k; i++) {
		all += (double)s[i] * s[i];
		if (i >= r)
			tail += (double)s[i] * s[i];
	}
	return all > 0 ? sqrt(tail / all) : 0;
}

int64_t rl_fact_rank_for(const float *s, int64_t k, double bound)
{
	double all = 0;
	for (int64_t i = 0; i < k; i++)
		all += (double)s[i] * s[i];
	double tail = all;
	for (int64_t r = 0; r < k; r++) {
		if (all <= 0 || sqrt(tail / all) < bound)
			return r ? r : 1;
		tail -= (double)s[r] * s[r];
	}
	return k;
}

/* Left singular vectors (m x k, row-major) and values of a. */
static bool left_svd(const float *a, int64_t m, int64_t n, float **u, float **s)
{
	int64_t k = m < n ? m : n;
	*u = malloc((size_t)(m * k) * sizeof(float));
	*s = malloc((size_t)k * sizeof(float));
	float *vt = malloc((size_t)(k * n) * sizeof(float));
	bool ok = *u && *s && vt && rl_fact_svd(a, m, n, *s, *u, vt);
	free(vt);
	if (!ok) {
		free(*u);
		free(*s);
		*u = *s = NULL;
	}
	return ok;
}

/* The mode-1 (input-channel) unfolding: a1[i][o*kk + s] = w[o][i][s]. */
static float *unfold_in(const float *w, int64_t cout, int64_t cin, int64_t kk)
{
	float *a = malloc((size_t)(cout * cin * kk) * sizeof(float));
	if (!a)
		return NULL;
	for (int64_t o = 0; o < cout; o++)
		for (int64_t i = 0; i < cin; i++)
			memcpy(a + (i * cout + o) * kk, w + (o * cin + i) * kk, (size_t)kk * sizeof(float));
	return a;
}

bool rl_fact_hosvd_init(struct rl_fact_hosvd *h, const float *w, int64_t cout, int64_t cin,
                        int64_t kk)
{
	memset(h, 0, sizeof(*h));
	h->w = w;
	h->cout = cout;
	h->cin = cin;
	h->kk = kk;
	h->ko = cout < cin * kk ? cout : cin * kk;
	h->ki = cin < cout * kk ? cin : cout * kk;
	float *a1 = unfold_in(w, cout, cin, kk);
	bool ok = a1 && left_svd(w, cout, cin * kk, &h->uo, &h->so) &&
	          left_svd(a1, cin, cout * kk, &h->ui, &h->si);
	free(a1);
	if (!ok)
		rl_fact_hosvd_free(h);
	return ok;
}

void rl_fact_hosvd_free(struct rl_fact_hosvd *h)
{
	free(h->uo);
	free(h->so);
	free(h->ui);
	free(h->si);
	h->uo = h->so = h->ui = h->si = NULL;
}

double rl_fact_tucker2(const struct rl_fact_hosvd *h, int64_t ri, int64_t ro, float *u_in,
                       float *core, float *u_out)
{
	int64_t cout = h->cout, cin = h->cin, kk = h->kk, ki = h->ki, ko = h->ko;
	const float *w = h->w, *ui = h->ui, *uo = h->uo;
	if (!h->uo || ri < 1 || ro < 1 || ri > ki || ro > ko)
		return -1;
	/* t[o][r][s] = sum_i ui[i][r] w[o][i][s] */
	double *t = calloc((size_t)(cout * ri * kk), sizeof(double));
	double *c = calloc((size_t)(ro * ri * kk), sizeof(double));
	double *t2 = calloc((size_t)(cout * ri * kk), sizeof(double));
	double err = -1;
	if (!t || !c || !t2)
		goto out;
	for (int64_t o = 0; o < cout; o++)
		for (int64_t i = 0; i < cin; i++)
			for (int64_t r = 0; r < ri; r++) {
				double f = ui[i * ki + r];
				const float *wp = w + (o * cin + i) * kk;
				double *tp = t + (o * ri + r) * kk;
				for (int64_t s = 0; s < kk; s++)
					tp[s] += f * wp[s];
			}
	/* c[q][r][s] = sum_o uo[o][q] t[o][r][s] */
	for (int64_t o = 0; o < cout; o++)
		for (int64_t q = 0; q < ro; q++) {
			double f = uo[o * ko + q];
			for (int64_t x = 0; x < ri * kk; x++)
				c[q * ri * kk + x] += f * t[o * ri * kk + x];
		}
	/* the reconstruction from the factors as they will be stored (float):
	 * t2[o][r][s] = sum_q uo[o][q] core[q][r][s]; w~[o][i][s] = sum_r t2[o][r][s] ui[i][r] */
	for (int64_t x = 0; x < ro * ri * kk; x++) {
		float cf = (float)c[x];
		if (core)
			core[x] = cf;
		c[x] = cf;
	}
	for (int64_t o = 0; o < cout; o++)
		for (int64_t q = 0; q < ro; q++) {
			double f = uo[o * ko + q];
			for (int64_t x = 0; x < ri * kk; x++)
				t2[o * ri * kk + x] += f * c[q * ri * kk + x];
		}
	double num = 0, den = 0;
	for (int64_t o = 0; o < cout; o++)
		for (int64_t i = 0; i < cin; i++)
			for (int64_t s = 0; s < kk; s++) {
				double v = 0;
				for (int64_t r = 0; r < ri; r++)
					v += t2[(o * ri + r) * kk + s] * ui[i * ki + r];
				double wv = w[(o * cin + i) * kk + s];
				num += (wv - v) * (wv - v);
				den += wv * wv;
			}
	err = den > 0 ? sqrt(num / den) : 0;
	if (u_in)
		for (int64_t i = 0; i < cin; i++)
			memcpy(u_in + i * ri, ui + i * ki, (size_t)ri * sizeof(float));
	if (u_out)
		for (int64_t o = 0; o < cout; o++)
			memcpy(u_out + o * ro, uo + o * ko, (size_t)ro * sizeof(float));
out:
	free(t);
	free(c);
	free(t2);
	return err;
}

/* ---- graph edits -------------------------------------------------------- */

static const char *uniq(struct rl_graph *g, const char *node, const char *suffix)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s_%s", node, suffix);
	for (int k = 1; rl_graph_find_value(g, buf) != RL_NONE; k++)
		snprintf(buf, sizeof(buf), "%s_%s_%d", node, suffix, k);
	return rl_arena_strdup(g, buf);
}

static uint32_t add_weight(struct rl_graph *g, const char *node, const char *suffix,
                           int rank, const int64_t *dims, float **data)
{
	struct rl_shape sh;
	rl_shape_set(&sh, rank, dims);
	size_t nb = (size_t)rl_shape_numel(&sh) * sizeof(float);
	*data = rl_graph_own(g, nb);
	if (!*data)
		return RL_NONE;
	uint32_t v = rl_graph_add_value(g, uniq(g, node, suffix), RL_DT_FLOAT, &sh);
	rl_value_set_data(g, v, *data, nb);
	return v;
}

static uint32_t add_act(struct rl_graph *g, const char *node, const char *suffix,
                        const struct rl_shape *like, int axis, int64_t size)
{
	struct rl_shape sh = *like;
	sh.d[axis].v = size;
	sh.d[axis].sym = NULL;
	return rl_graph_add_value(g, uniq(g, node, suffix), RL_DT_FLOAT, &sh);
}

static uint32_t add_node(struct rl_graph *g, enum rl_op op, const char *node,
                         const char *suffix, uint32_t a, uint32_t b, uint32_t c, uint32_t y)
{
	uint32_t in[3] = {a, b, c};
	char nm[256];
	snprintf(nm, sizeof(nm), "%s_%s", node, suffix);
	return rl_graph_add_node(g, op, nm, in, c == RL_NONE ? 2 : 3, &y, 1);
}

/* Copy the listed attributes of node `from` (same graph) onto `to`. */
static void copy_attrs(struct rl_graph *g, uint32_t from, uint32_t to, const char *const *names)
{
	for (const char *const *nm = names; *nm; nm++) {
		const struct rl_attr *a = rl_node_attr(&g->nodes[from], *nm);
		if (!a)
			continue;
		struct rl_attr copy = *a;
		struct rl_attr *na = rl_node_add_attr(g, to, *nm, a->kind);
		*na = copy;
	}
}

static void set_kernel(struct rl_graph *g, uint32_t node, int64_t kh, int64_t kw)
{
	struct rl_attr *a = rl_node_add_attr(g, node, "kernel_shape", RL_ATTR_INTS);
	a->n = 2;
	a->ints = rl_arena_alloc(g, 2 * sizeof(int64_t));
	a->ints[0] = kh;
	a->ints[1] = kw;
}

static const char *const conv_geom[] = {"strides", "pads", "dilations", "auto_pad", NULL};

/* ---- the rewrites ------------------------------------------------------- */

struct plan {
	struct rl_judge_cand cand;
	double err;
	struct rl_judge_cost cost;
	bool ok;         /* meets the error bound and was priced */
};

/* Low rank from the thin SVD of the stored matrix w (rows x cols). */
static bool apply_lowrank(struct rl_graph *g, const struct rl_judge_node *jn, const float *w,
                          int64_t rows, int64_t cols, int64_t r)
{
	int64_t k = rows < cols ? rows : cols;
	float *s = malloc((size_t)k * sizeof(float));
	float *u = malloc((size_t)(rows * k) * sizeof(float));
	float *vt = malloc((size_t)(k * cols) * sizeof(float));
	bool ok = s && u && vt && rl_fact_svd(w, rows, cols, s, u, vt);
	uint32_t node = jn->node;
	const char *name = g->nodes[node].name;
	float *d1, *d2;
	uint32_t w1 = RL_NONE, w2 = RL_NONE, t = RL_NONE, x = jn->x, y = jn->y, b = jn->b;
	if (!ok)
		goto out;
	if (!jn->conv) {
		/* first factor F [K x r], second G [r x N]: X W ~ (X F) G */
		int64_t df[2] = {jn->K, r}, dg[2] = {r, jn->N};
		w1 = add_weight(g, name, "lr_u", 2, df, &d1);
		w2 = add_weight(g, name, "lr_v", 2, dg, &d2);
		if (w1 == RL_NONE || w2 == RL_NONE) {
			ok = false;
			goto out;
		}
		for (int64_t j = 0; j < r; j++) {
			float q = sqrtf(s[j]);
			for (int64_t kk = 0; kk < jn->K; kk++) /* stored W = U S Vt, or B = W^T */
				d1[kk * r + j] = (jn->trans_b ? vt[j * cols + kk] : u[kk * k + j]) * q;
			for (int64_t n = 0; n < jn->N; n++)
				d2[j * jn->N + n] = (jn->trans_b ? u[n * k + j] : vt[j * cols + n]) * q;
		}
		const struct rl_shape *ys = &g->values[y].shape;
		t = add_act(g, name, "lr_t", ys, ys->rank - 1, r);
		rl_graph_remove_node(g, node);
		if (!jn->gemm) {
			add_node(g, RL_OP_MatMul, name, "lr1", x, w1, RL_NONE, t);
			add_node(g, RL_OP_MatMul, name, "lr2", t, w2, RL_NONE, y);
		} else {
			static const char *const a1[] = {"transA", "alpha", NULL};
			static const char *const a2[] = {"beta", NULL};
			uint32_t n1 = add_node(g, RL_OP_Gemm, name, "lr1", x, w1, RL_NONE, t);
			copy_attrs(g, node, n1, a1);
			uint32_t n2 = add_node(g, RL_OP_Gemm, name, "lr2", t, w2, b, y);
			copy_attrs(g, node, n2, a2);
		}
		goto out;
	}
	/* Conv: W[cout][cin*kk] = U S Vt: a kxk Conv with weight S^1/2 Vt
	 * [r, cin, kh, kw], then a 1x1 Conv with U S^1/2 [cout, r, 1, 1] */
	int64_t d1d[4] = {r, jn->cin, jn->kh, jn->kw}, d2d[4] = {jn->cout, r, 1, 1};
	w1 = add_weight(g, name, "lr_v", 4, d1d, &d1);
	w2 = add_weight(g, name, "lr_u", 4, d2d, &d2);
	if (w1 == RL_NONE || w2 == RL_NONE) {
		ok = false;
		goto out;
	}
	for (int64_t j = 0; j < r; j++) {
		float q = sqrtf(s[j]);
		for (int64_t c = 0; c < cols; c++)
			d1[j * cols + c] = vt[j * cols + c] * q;
		for (int64_t o = 0; o < jn->cout; o++)
			d2[o * r + j] = u[o * k + j] * q;
	}
	t = add_act(g, name, "lr_t", &g->values[y].shape, 1, r);
	rl_graph_remove_node(g, node);
	uint32_t n1 = add_node(g, RL_OP_Conv, name, "lr1", x, w1, RL_NONE, t);
	copy_attrs(g, node, n1, conv_geom);
	set_kernel(g, n1, jn->kh, jn->kw);
	uint32_t n2 = add_node(g, RL_OP_Conv, name, "lr2", t, w2, b, y);
	set_kernel(g, n2, 1, 1);
out:
	free(s);
	free(u);
	free(vt);
	return ok;
}

static bool apply_tucker2(struct rl_graph *g, const struct rl_judge_node *jn,
                          const struct rl_fact_hosvd *h, int64_t ri, int64_t ro)
{
	uint32_t node = jn->node;
	const char *name = g->nodes[node].name;
	int64_t d1[4] = {ri, jn->cin, 1, 1}, dc[4] = {ro, ri, jn->kh, jn->kw};
	int64_t d3[4] = {jn->cout, ro, 1, 1};
	float *p1, *pc, *p3;
	uint32_t w1 = add_weight(g, name, "tk_in", 4, d1, &p1);
	uint32_t wc = add_weight(g, name, "tk_core", 4, dc, &pc);
	uint32_t w3 = add_weight(g, name, "tk_out", 4, d3, &p3);
	float *ui = malloc((size_t)(jn->cin * ri) * sizeof(float));
	bool ok = w1 != RL_NONE && wc != RL_NONE && w3 != RL_NONE && ui &&
	          rl_fact_tucker2(h, ri, ro, ui, pc, p3) >= 0;
	if (ok) {
		/* the reduce Conv's weight is U_in^T: [ri][cin] */
		for (int64_t i = 0; i < jn->cin; i++)
			for (int64_t r = 0; r < ri; r++)
				p1[r * jn->cin + i] = ui[i * ri + r];
		const struct rl_shape *xs = &g->values[jn->x].shape, *ys = &g->values[jn->y].shape;
		uint32_t t1 = add_act(g, name, "tk_t1", xs, 1, ri);
		uint32_t t2 = add_act(g, name, "tk_t2", ys, 1, ro);
		rl_graph_remove_node(g, node);
		uint32_t n1 = add_node(g, RL_OP_Conv, name, "tk1", jn->x, w1, RL_NONE, t1);
		set_kernel(g, n1, 1, 1);
		uint32_t n2 = add_node(g, RL_OP_Conv, name, "tk2", t1, wc, RL_NONE, t2);
		copy_attrs(g, node, n2, conv_geom);
		set_kernel(g, n2, jn->kh, jn->kw);
		uint32_t n3 = add_node(g, RL_OP_Conv, name, "tk3", t2, w3, jn->b, jn->y);
		set_kernel(g, n3, 1, 1);
	}
	free(ui);
	return ok;
}

/* ---- the pass ----------------------------------------------------------- */

static void plan_text(const struct plan *p, const struct rl_judge_cost *before, char *buf,
                      size_t n)
{
	char cn[48];
	rl_judge_cand_name(&p->cand, cn, sizeof(cn));
	double tr = p->cost.time_s / before->time_s;
	snprintf(buf, n, "%s: err %.3g, flops x%.3g, bytes x%.3g, time x%.3g (predicted speedup %+.0f%%)",
	         cn, p->err, p->cost.flops / before->flops, p->cost.bytes / before->bytes, tr,
	         100 * (1 / tr - 1));
}

static void factorize_node(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t node)
{
	const struct rl_machine *m = ctx->machine;
	const char *name = g->nodes[node].name;
	double bound = ctx->max_rel_error;
	struct rl_judge_node jn;
	char why[256];
	if (!rl_judge_node_init(g, node, &jn, why, sizeof(why))) {
		rl_remark(ctx, "factorize", name, "skipped", -1, -1, -1, -1, "%s", why);
		return;
	}
	const struct rl_value *wv = &g->values[jn.w];
	if (wv->dtype != RL_DT_FLOAT || !wv->data) {
		rl_remark(ctx, "factorize", name, "skipped", -1, -1, -1, -1,
		          "weight is %s%s: only float32 weights are factorized",
		          rl_dtype_name(wv->dtype), wv->data ? "" : " without data");
		return;
	}
	if (jn.gemm && g->opset < 11) {
		rl_remark(ctx, "factorize", name, "skipped", -1, -1, -1, -1,
		          "opset %d: a Gemm without C needs opset 11", g->opset);
		return;
	}
	if (jn.conv && (jn.nsp != 2 || jn.group != 1)) {
		rl_remark(ctx, "factorize", name, "skipped", -1, -1, -1, -1,
		          "only 2-D Convs with group 1 are factorized");
		return;
	}
	struct rl_judge_cost before;
	if (!rl_judge_cost_node(g, &jn, m, &before) || !(before.time_s > 0)) {
		rl_remark(ctx, "factorize", name, "skipped", -1, -1, -1, -1,
		          "the node could not be priced");
		return;
	}
	const float *w = wv->data;
	int64_t rows = jn.conv ? jn.cout : (jn.trans_b ? jn.N : jn.K);
	int64_t cols = rl_shape_numel(&wv->shape) / rows, k = rows < cols ? rows : cols;
	struct plan plans[2];
	int np = 0;
	/* low rank: the smallest rank under the bound */
	float *s = malloc((size_t)k * sizeof(float));
	if (!s || !rl_fact_svd(w, rows, cols, s, NULL, NULL)) {
		free(s);
		rl_remark(ctx, "factorize", name, "skipped", -1, -1, -1, -1,
		          "the SVD of the %lldx%lld weight failed", (long long)rows, (long long)cols);
		return;
	}
	int64_t r = rl_fact_rank_for(s, k, bound);
	struct plan *p = &plans[np++];
	memset(p, 0, sizeof(*p));
	p->cand = (struct rl_judge_cand){.kind = RL_JUDGE_LOWRANK, .r1 = r};
	p->err = rl_fact_lowrank_error(s, k, r);
	p->ok = r < (jn.K < jn.N ? jn.K : jn.N) && p->err < bound &&
	        rl_judge_cost_cand(g, &jn, m, &p->cand, &p->cost, why, sizeof(why));
	free(s);
	/* Tucker-2 for kxk Convs: each mode half the squared error budget */
	int64_t kk = jn.conv ? jn.kh * jn.kw : 1;
	struct rl_fact_hosvd h = {0};
	if (jn.conv && kk > 1) {
		p = &plans[np++];
		memset(p, 0, sizeof(*p));
		p->err = -1;
		p->cand = (struct rl_judge_cand){.kind = RL_JUDGE_TUCKER2, .r1 = jn.cin, .r2 = jn.cout};
		if (rl_fact_hosvd_init(&h, w, jn.cout, jn.cin, kk)) {
			int64_t ro = rl_fact_rank_for(h.so, h.ko, bound / sqrt(2.0));
			int64_t ri = rl_fact_rank_for(h.si, h.ki, bound / sqrt(2.0));
			p->cand = (struct rl_judge_cand){.kind = RL_JUDGE_TUCKER2, .r1 = ri, .r2 = ro};
			p->err = rl_fact_tucker2(&h, ri, ro, NULL, NULL, NULL);
			p->ok = p->err >= 0 && p->err < bound && (ri < jn.cin || ro < jn.cout) &&
			        rl_judge_cost_cand(g, &jn, m, &p->cand, &p->cost, why, sizeof(why));
		}
	}
	/* the fastest plan that meets both bounds */
	struct plan *best = NULL;
	for (int i = 0; i < np; i++) {
		struct plan *q = &plans[i];
		if (q->ok && before.time_s / q->cost.time_s - 1 >= MIN_SPEEDUP &&
		    (!best || q->cost.time_s < best->cost.time_s))
			best = q;
	}
	for (int i = 0; i < np; i++) {
		struct plan *q = &plans[i];
		char txt[240], cn[48];
		rl_judge_cand_name(&q->cand, cn, sizeof(cn));
		if (q == best)
			continue;
		if (!q->ok) {
			rl_remark(ctx, "factorize", name, "rejected", -1, -1, -1, -1,
			          "%s: %s", cn,
			          q->err < 0 ? "the decomposition failed"
			          : q->err >= bound ? "no rank below full meets the error bound"
			          : "no smaller rank meets the error bound");
			continue;
		}
		plan_text(q, &before, txt, sizeof(txt));
		rl_remark(ctx, "factorize", name, "rejected", before.bytes, q->cost.bytes,
		          before.time_s, q->cost.time_s, "%s: %s", txt,
		          before.time_s / q->cost.time_s - 1 < MIN_SPEEDUP
		          ? "predicted speedup under 10%" : "another factorization is faster");
		ctx->remarks[ctx->nremarks - 1].flops_before = before.flops;
		ctx->remarks[ctx->nremarks - 1].flops_after = q->cost.flops;
	}
	if (!best) {
		rl_fact_hosvd_free(&h);
		return;
	}
	char txt[240];
	plan_text(best, &before, txt, sizeof(txt));
	bool ok = best->cand.kind == RL_JUDGE_LOWRANK
	          ? apply_lowrank(g, &jn, w, rows, cols, best->cand.r1)
	          : apply_tucker2(g, &jn, &h, best->cand.r1, best->cand.r2);
	rl_fact_hosvd_free(&h);
	if (!ok) {
		rl_remark(ctx, "factorize", name, "rejected", -1, -1, -1, -1,
		          "%s: out of memory or the decomposition failed", txt);
		return;
	}
	rl_remark(ctx, "factorize", name, "applied", before.bytes, best->cost.bytes, before.time_s,
	          best->cost.time_s, "%s, under --max-rel-error %g", txt, bound);
	ctx->remarks[ctx->nremarks - 1].flops_before = before.flops;
	ctx->remarks[ctx->nremarks - 1].flops_after = best->cost.flops;
}

enum rl_status rl_pass_factorize(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	if (!ctx->factorize)
		return RL_OK;
	if (!ctx->machine || !rl_fact_have_svd()) {
		rl_remark(ctx, "factorize", NULL, "skipped", -1, -1, -1, -1, "%s",
		          ctx->machine ? "rlopt was built without LAPACKE: no SVD"
		                       : "no machine profile to price factorizations on");
		return RL_OK;
	}
	uint32_t n = g->norder;
	uint32_t *order = malloc((n + 1) * sizeof(*order));
	if (!order)
		return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory in factorize");
	memcpy(order, g->order, n * sizeof(*order));
	uint32_t before = g->nnodes;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = order[k];
		enum rl_op op = g->nodes[i].op;
		if (g->nodes[i].dead || (op != RL_OP_MatMul && op != RL_OP_Gemm && op != RL_OP_Conv))
			continue;
		factorize_node(g, ctx, i);
	}
	free(order);
	if (g->nnodes == before)
		return RL_OK;
	rl_graph_compact(g);
	return rl_graph_toposort(g);
}
