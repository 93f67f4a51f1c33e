/*
 * judge.c - the rewrite judge: price the rewrites that look cheaper on paper.
 *
 * For every MatMul, Gemm and Conv with a constant weight, at the machine and
 * batch the graph is bound to, the judge generates the usual candidates -
 * low-rank W ~ U V at several ranks, Tucker-2 and CP decompositions and a
 * depthwise-separable replacement of a dense Conv, unstructured sparsity at
 * several densities, 2:4 structured sparsity where the machine has it,
 * grouped (block-diagonal) weights and an exact split into smaller products -
 * and prices each one with everything it adds: the intermediate activations
 * it writes and reads back, its index bytes, its extra kernel launches, its
 * gathered reads. Every candidate is a remark with its verdict (speedup,
 * slowdown, neutral within 5%), the FLOPs, bytes and predicted-time ratios,
 * the limit that binds before and after, and - for the predicted speedups -
 * the relative error of the weights as they are, where it is cheap to compute.
 * The judge never rewrites; --factorize (factorize.c) applies the low-rank and
 * Tucker-2 candidates that also meet an accuracy bound.
 *
 * Price first: every candidate is priced from shapes alone, and a weight is
 * read (converted to float) only when some candidate of its node is a
 * predicted speedup, once per node, and for a large MatMul/Gemm weight on a
 * bounded sample of its rows (JUDGE_SAMPLE below). The report of a model with
 * 13.5 GB of weights so stays within a few hundred MB and a few seconds.
 *
 * Pricing. A candidate ONNX can express is built as kernels in a scratch
 * graph and priced by the model's own counters (rl_count_node) and
 * rl_cost_price, one launch per kernel, so the judge and `rlopt diff` of the
 * rewritten model give the same numbers. Sparsity has no ONNX kernel; its
 * formulas are here:
 *
 *  - CSR (rows = output features N, columns = K): values nnz * dtype, int32
 *    column indices 4 * nnz, int32 row pointers 4 * (N + 1), streamed from
 *    main memory with X and Y. Each nonzero multiplies one activation per
 *    output row of the product (M of them), read through its column index:
 *    M * nnz gathered element reads, served by the closest memory level that
 *    holds X (the closest level counts per core - every core reads all of X -
 *    the others whole) at the profile's gather efficiency. A run of L
 *    contiguous elements fetched per index uses L times more of each fetched
 *    sector: eff = min(contiguous, gather * L). A Conv's run is an output row
 *    at stride 1 (L = Wo); a MatMul's is its M rows, as an SpMM reads X
 *    feature-major (X^T, one row per column index), so for M > 1 a transpose
 *    of X (one more kernel: X read strided, written contiguous) comes first.
 *    Streamed and gathered reads share the load path, so their times add.
 *    Unstructured sparsity runs on the vector units.
 *  - 2:4: half the values, 2 bits of metadata per kept value, half the MACs
 *    at the matrix-unit peak; only where the profile has sparse24 and a
 *    matrix unit at the node's precision (2:4 never changes the precision).
 *
 * Precondition: shapes inferred and bound (static); a machine profile.
 */
#include "judge.h"
#include "buf.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *rl_judge_verdict(double r)
{
	if (r < 1 - RL_JUDGE_NEUTRAL)
		return "speedup";
	if (r > 1 + RL_JUDGE_NEUTRAL)
		return "slowdown";
	return "neutral";
}

static const char *kind_name[RL_JUDGE_KIND_COUNT_] = {
	[RL_JUDGE_LOWRANK] = "lowrank", [RL_JUDGE_TUCKER2] = "tucker2",
	[RL_JUDGE_CP] = "cp",           [RL_JUDGE_DWSEP] = "dwsep",
	[RL_JUDGE_SPARSE] = "sparse",   [RL_JUDGE_SPARSE24] = "sparse24",
	[RL_JUDGE_GROUPED] = "grouped", [RL_JUDGE_SPLIT] = "split",
};

void rl_judge_cand_name(const struct rl_judge_cand *c, char *buf, size_t n)
{
	switch (c->kind) {
	case RL_JUDGE_LOWRANK:
	case RL_JUDGE_CP:
		snprintf(buf, n, "%s r=%lld", kind_name[c->kind], (long long)c->r1);
		break;
	case RL_JUDGE_TUCKER2:
		snprintf(buf, n, "tucker2 r=%lld/%lld", (long long)c->r1, (long long)c->r2);
		break;
	case RL_JUDGE_SPARSE:
		snprintf(buf, n, "sparse %g%%", 100 * c->density);
		break;
	case RL_JUDGE_GROUPED:
		snprintf(buf, n, "grouped g=%lld", (long long)c->r1);
		break;
	case RL_JUDGE_SPLIT:
		snprintf(buf, n, "split %lld", (long long)c->r1);
		break;
	default:
		snprintf(buf, n, "%s", kind_name[c->kind]);
	}
}

/* ---- the node ----------------------------------------------------------- */

static int64_t numel(const struct rl_graph *g, uint32_t v)
{
	return v == RL_NONE ? 0 : rl_shape_numel(&g->values[v].shape);
}

bool rl_judge_node_init(const struct rl_graph *g, uint32_t node,
                        struct rl_judge_node *jn, char *why, size_t whylen)
{
	const struct rl_node *n = &g->nodes[node];
	memset(jn, 0, sizeof(*jn));
	jn->node = node;
	jn->b = RL_NONE;
	if (n->op != RL_OP_MatMul && n->op != RL_OP_Gemm && n->op != RL_OP_Conv) {
		snprintf(why, whylen, "not a MatMul, Gemm or Conv");
		return false;
	}
	jn->reuse_bytes = rl_cost_footprint(g);
	jn->x = rl_node_in(n, 0);
	jn->w = rl_node_in(n, 1);
	jn->y = n->nout ? n->out[0] : RL_NONE;
	if (n->op != RL_OP_MatMul)
		jn->b = rl_node_in(n, 2);
	if (jn->x == RL_NONE || jn->w == RL_NONE || jn->y == RL_NONE) {
		snprintf(why, whylen, "missing operand");
		return false;
	}
	if (!rl_value_is_const(g, jn->w)) {
		snprintf(why, whylen, "weight '%s' is not a constant", g->values[jn->w].name);
		return false;
	}
	if (rl_value_is_const(g, jn->x)) {
		snprintf(why, whylen, "both operands are constant");
		return false;
	}
	jn->dt = g->values[jn->y].dtype;
	jn->es = rl_dtype_size(jn->dt);
	if (!rl_dtype_is_float(jn->dt) || !jn->es) {
		snprintf(why, whylen, "%s product: only floating-point products are judged",
		         rl_dtype_name(jn->dt));
		return false;
	}
	uint32_t vs[4] = {jn->x, jn->w, jn->y, jn->b};
	for (int i = 0; i < 4; i++)
		if (vs[i] != RL_NONE && !rl_shape_is_static(&g->values[vs[i]].shape)) {
			char sb[128], hint[256];
			snprintf(why, whylen, "shape of '%s' is %s, not static: %s",
			         g->values[vs[i]].name,
			         rl_shape_str(&g->values[vs[i]].shape, sb, sizeof(sb)),
			         rl_unbound_hint(g, &g->values[vs[i]].shape, hint, sizeof(hint)));
			return false;
		}
	const struct rl_shape *ws = &g->values[jn->w].shape, *xs = &g->values[jn->x].shape;
	const struct rl_shape *ys = &g->values[jn->y].shape;
	if (n->op != RL_OP_Conv) {
		if (ws->rank != 2) {
			snprintf(why, whylen, "weight of rank %d: only matrices are judged", ws->rank);
			return false;
		}
		jn->gemm = n->op == RL_OP_Gemm;
		jn->trans_a = jn->gemm && rl_node_attr_int(n, "transA", 0);
		jn->trans_b = jn->gemm && rl_node_attr_int(n, "transB", 0);
		jn->K = ws->d[jn->trans_b ? 1 : 0].v;
		jn->N = ws->d[jn->trans_b ? 0 : 1].v;
		if (jn->N <= 0 || jn->K <= 0 || ys->rank < 1 || ys->d[ys->rank - 1].v != jn->N) {
			snprintf(why, whylen, "empty or unexpected product shape");
			return false;
		}
		jn->M = rl_shape_numel(ys) / jn->N;
		return jn->M > 0;
	}
	jn->conv = true;
	jn->nsp = ws->rank - 2;
	jn->group = rl_node_attr_int(n, "group", 1);
	if (jn->nsp < 1 || xs->rank != ws->rank || ys->rank != ws->rank || jn->group < 1) {
		snprintf(why, whylen, "unexpected Conv shapes");
		return false;
	}
	jn->batch = xs->d[0].v;
	jn->cin = xs->d[1].v;
	jn->cout = ws->d[0].v;
	int64_t kk = 1;
	for (int i = 2; i < ws->rank; i++)
		kk *= ws->d[i].v;
	jn->K = ws->d[1].v * kk;
	jn->N = jn->cout;
	if (jn->N <= 0 || jn->K <= 0) {
		snprintf(why, whylen, "empty Conv");
		return false;
	}
	jn->M = rl_shape_numel(ys) / jn->cout;
	jn->strides[0] = jn->strides[1] = jn->dil[0] = jn->dil[1] = 1;
	if (jn->nsp == 2) {
		jn->h = xs->d[2].v;
		jn->wd = xs->d[3].v;
		jn->ho = ys->d[2].v;
		jn->wo = ys->d[3].v;
		jn->kh = ws->d[2].v;
		jn->kw = ws->d[3].v;
		const int64_t *a;
		if (rl_node_attr_ints(n, "strides", &a) == 2)
			memcpy(jn->strides, a, 2 * sizeof(*a));
		if (rl_node_attr_ints(n, "dilations", &a) == 2)
			memcpy(jn->dil, a, 2 * sizeof(*a));
		if (rl_node_attr_ints(n, "pads", &a) == 4)
			memcpy(jn->pads, a, 4 * sizeof(*a));
	}
	return jn->M > 0;
}

/* ---- pricing ------------------------------------------------------------ */

static void cost_add(struct rl_judge_cost *c, const struct rl_cost *k)
{
	c->flops += k->flops;
	c->bytes += k->bytes;
	c->time_s += k->time_s;
	c->time_bound[k->bound] += k->time_s;
	c->kernels++;
}

static void cost_finish(struct rl_judge_cost *c)
{
	c->bound = RL_BOUND_MEMORY;
	for (int b = 0; b < 3; b++)
		if (c->time_bound[b] > c->time_bound[c->bound])
			c->bound = (enum rl_bound)b;
}

bool rl_judge_cost_node(const struct rl_graph *g, const struct rl_judge_node *jn,
                        const struct rl_machine *m, struct rl_judge_cost *out)
{
	struct rl_counts c;
	memset(out, 0, sizeof(*out));
	out->gather_level = -1;
	if (!rl_count_node(g, jn->node, &c))
		return false;
	c.reuse_bytes = jn->reuse_bytes;
	struct rl_cost k;
	rl_cost_price(m, &c, rl_node_prec(g, jn->node), c.macs > 0, &k);
	cost_add(out, &k);
	cost_finish(out);
	return true;
}

/* A scratch graph holding a candidate's kernels. */
struct sg {
	struct rl_graph *g;
	const struct rl_graph *src;
	enum rl_dtype dt;
	size_t es;
	int nv;
};

static uint32_t sg_val(struct sg *s, int rank, const int64_t *d, bool konst)
{
	char nm[24];
	snprintf(nm, sizeof(nm), "v%d", s->nv++);
	struct rl_shape sh;
	rl_shape_set(&sh, rank, d);
	uint32_t v = rl_graph_add_value(s->g, nm, s->dt, &sh);
	if (konst)
		rl_value_set_data(s->g, v, NULL, (size_t)rl_shape_numel(&sh) * s->es);
	return v;
}

/* A copy of value v of the source graph (shape, dtype, constness). */
static uint32_t sg_copy(struct sg *s, uint32_t v)
{
	if (v == RL_NONE)
		return RL_NONE;
	const struct rl_value *sv = &s->src->values[v];
	char nm[24];
	snprintf(nm, sizeof(nm), "v%d", s->nv++);
	uint32_t c = rl_graph_add_value(s->g, nm, sv->dtype, &sv->shape);
	if (rl_value_is_const(s->src, v))
		rl_value_set_data(s->g, c, NULL, sv->nbytes);
	return c;
}

static void sg_ints(struct sg *s, uint32_t node, const char *name, const int64_t *v, int n)
{
	struct rl_attr *a = rl_node_add_attr(s->g, node, name, RL_ATTR_INTS);
	a->n = n;
	a->ints = rl_arena_alloc(s->g, (size_t)n * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
}

static void sg_int(struct sg *s, uint32_t node, const char *name, int64_t v)
{
	rl_node_add_attr(s->g, node, name, RL_ATTR_INT)->i = v;
}

static const int64_t one2[2] = {1, 1}, zero4[4] = {0, 0, 0, 0};

static void sg_conv(struct sg *s, uint32_t x, uint32_t w, uint32_t b, uint32_t y,
                    const int64_t st[2], const int64_t pads[4], const int64_t dil[2],
                    int64_t group)
{
	uint32_t in[3] = {x, w, b};
	uint32_t id = rl_graph_add_node(s->g, RL_OP_Conv, NULL, in, b == RL_NONE ? 2 : 3, &y, 1);
	const struct rl_shape *ws = &s->g->values[w].shape;
	int64_t k[2] = {ws->d[2].v, ws->d[3].v};
	sg_ints(s, id, "kernel_shape", k, 2);
	sg_ints(s, id, "strides", st, 2);
	sg_ints(s, id, "pads", pads, 4);
	sg_ints(s, id, "dilations", dil, 2);
	sg_int(s, id, "group", group);
}

static void sg_matmul(struct sg *s, uint32_t a, uint32_t b, uint32_t y)
{
	uint32_t in[2] = {a, b};
	rl_graph_add_node(s->g, RL_OP_MatMul, NULL, in, 2, &y, 1);
}

static void sg_gemm(struct sg *s, uint32_t a, uint32_t b, uint32_t c, uint32_t y, bool ta)
{
	uint32_t in[3] = {a, b, c};
	uint32_t id = rl_graph_add_node(s->g, RL_OP_Gemm, NULL, in, c == RL_NONE ? 2 : 3, &y, 1);
	if (ta)
		sg_int(s, id, "transA", 1);
}

/* Price every kernel of the scratch graph; intermediates are the values that
 * one kernel writes and another reads. The weights come from where the run's
 * footprint leaves them, with the candidate's weights in place of the
 * node's (rl_judge_cost_node prices the node in the same footprint). */
static bool sg_price(struct sg *s, const struct rl_judge_node *jn, const struct rl_machine *m,
                     struct rl_judge_cost *out)
{
	struct rl_counts c;
	double foot = jn->reuse_bytes;
	if (rl_count_node(s->src, jn->node, &c))
		foot -= c.weight_bytes;
	for (uint32_t i = 0; i < s->g->nnodes; i++) {
		if (!rl_count_node(s->g, i, &c))
			return false;
		foot += c.weight_bytes;
	}
	for (uint32_t i = 0; i < s->g->nnodes; i++) {
		struct rl_node *n = &s->g->nodes[i];
		rl_count_node(s->g, i, &c);
		c.reuse_bytes = foot;
		rl_cost_price(m, &c, rl_node_prec(s->g, i), c.macs > 0, &n->cost);
		cost_add(out, &n->cost);
	}
	for (uint32_t v = 0; v < s->g->nvalues; v++) {
		const struct rl_value *val = &s->g->values[v];
		if (val->producer != RL_NONE && val->nuses)
			out->inter_bytes += (double)rl_shape_numel(&val->shape) * (double)s->es;
	}
	cost_finish(out);
	return true;
}

/* The activation shape of a MatMul's X with the last dim replaced. */
static uint32_t sg_like_x(struct sg *s, const struct rl_judge_node *jn, int64_t last)
{
	struct rl_shape sh = s->src->values[jn->x].shape;
	int64_t d[RL_MAX_RANK];
	for (int i = 0; i < sh.rank; i++)
		d[i] = sh.d[i].v;
	d[sh.rank - 1] = last;
	return sg_val(s, sh.rank, d, false);
}

#define FAIL(...) do { snprintf(why, whylen, __VA_ARGS__); return false; } while (0)

static bool build_lowrank(struct sg *s, const struct rl_judge_node *jn, int64_t r,
                          char *why, size_t whylen)
{
	if (r < 1 || r >= (jn->K < jn->N ? jn->K : jn->N))
		FAIL("rank %lld is not below min(K, N) = %lld", (long long)r,
		     (long long)(jn->K < jn->N ? jn->K : jn->N));
	uint32_t x = sg_copy(s, jn->x), y = sg_copy(s, jn->y), b = sg_copy(s, jn->b);
	if (!jn->conv) {
		int64_t du[2] = {jn->K, r}, dv[2] = {r, jn->N}, dt[2] = {jn->M, r};
		uint32_t u = sg_val(s, 2, du, true), v = sg_val(s, 2, dv, true);
		if (!jn->gemm) {
			uint32_t t = sg_like_x(s, jn, r);
			sg_matmul(s, x, u, t);
			sg_matmul(s, t, v, y);
		} else {
			uint32_t t = sg_val(s, 2, dt, false);
			sg_gemm(s, x, u, RL_NONE, t, jn->trans_a);
			sg_gemm(s, t, v, b, y, false);
		}
		return true;
	}
	if (jn->nsp != 2 || jn->group != 1)
		FAIL("low rank is judged for 2-D Convs with group 1");
	/* W[cout][cin*kh*kw] ~ U[cout x r] V[r x cin*kh*kw]: a kxk Conv to r
	 * channels, then a 1x1 Conv to cout */
	int64_t dv[4] = {r, jn->cin, jn->kh, jn->kw}, du[4] = {jn->cout, r, 1, 1};
	int64_t dt[4] = {jn->batch, r, jn->ho, jn->wo};
	uint32_t v = sg_val(s, 4, dv, true), u = sg_val(s, 4, du, true), t = sg_val(s, 4, dt, false);
	sg_conv(s, x, v, RL_NONE, t, jn->strides, jn->pads, jn->dil, 1);
	sg_conv(s, t, u, b, y, one2, zero4, one2, 1);
	return true;
}

static bool conv2d_dense(const struct rl_judge_node *jn, bool need_spatial, char *why,
                         size_t whylen)
{
	if (!jn->conv || jn->nsp != 2 || jn->group != 1)
		FAIL("applies to 2-D Convs with group 1");
	if (need_spatial && jn->kh * jn->kw == 1)
		FAIL("the kernel is 1x1: see lowrank");
	return true;
}

static bool build_tucker2(struct sg *s, const struct rl_judge_node *jn, int64_t ri,
                          int64_t ro, char *why, size_t whylen)
{
	if (!conv2d_dense(jn, true, why, whylen))
		return false;
	if (ri < 1 || ri > jn->cin || ro < 1 || ro > jn->cout)
		FAIL("ranks %lld/%lld outside 1..%lld/1..%lld", (long long)ri, (long long)ro,
		     (long long)jn->cin, (long long)jn->cout);
	uint32_t x = sg_copy(s, jn->x), y = sg_copy(s, jn->y), b = sg_copy(s, jn->b);
	int64_t d1[4] = {ri, jn->cin, 1, 1}, dc[4] = {ro, ri, jn->kh, jn->kw};
	int64_t d3[4] = {jn->cout, ro, 1, 1};
	int64_t t1[4] = {jn->batch, ri, jn->h, jn->wd}, t2[4] = {jn->batch, ro, jn->ho, jn->wo};
	uint32_t w1 = sg_val(s, 4, d1, true), wc = sg_val(s, 4, dc, true), w3 = sg_val(s, 4, d3, true);
	uint32_t v1 = sg_val(s, 4, t1, false), v2 = sg_val(s, 4, t2, false);
	sg_conv(s, x, w1, RL_NONE, v1, one2, zero4, one2, 1);
	sg_conv(s, v1, wc, RL_NONE, v2, jn->strides, jn->pads, jn->dil, 1);
	sg_conv(s, v2, w3, b, y, one2, zero4, one2, 1);
	return true;
}

static bool build_cp(struct sg *s, const struct rl_judge_node *jn, int64_t r, char *why,
                     size_t whylen)
{
	if (!conv2d_dense(jn, true, why, whylen))
		return false;
	if (r < 1)
		FAIL("rank %lld", (long long)r);
	uint32_t x = sg_copy(s, jn->x), y = sg_copy(s, jn->y), b = sg_copy(s, jn->b);
	int64_t d1[4] = {r, jn->cin, 1, 1}, dv[4] = {r, 1, jn->kh, 1}, dh[4] = {r, 1, 1, jn->kw};
	int64_t d4[4] = {jn->cout, r, 1, 1};
	int64_t t1[4] = {jn->batch, r, jn->h, jn->wd}, t2[4] = {jn->batch, r, jn->ho, jn->wd};
	int64_t t3[4] = {jn->batch, r, jn->ho, jn->wo};
	uint32_t w1 = sg_val(s, 4, d1, true), wv = sg_val(s, 4, dv, true);
	uint32_t wh = sg_val(s, 4, dh, true), w4 = sg_val(s, 4, d4, true);
	uint32_t v1 = sg_val(s, 4, t1, false), v2 = sg_val(s, 4, t2, false);
	uint32_t v3 = sg_val(s, 4, t3, false);
	int64_t stv[2] = {jn->strides[0], 1}, sth[2] = {1, jn->strides[1]};
	int64_t pv[4] = {jn->pads[0], 0, jn->pads[2], 0}, ph[4] = {0, jn->pads[1], 0, jn->pads[3]};
	int64_t dlv[2] = {jn->dil[0], 1}, dlh[2] = {1, jn->dil[1]};
	sg_conv(s, x, w1, RL_NONE, v1, one2, zero4, one2, 1);
	sg_conv(s, v1, wv, RL_NONE, v2, stv, pv, dlv, r);
	sg_conv(s, v2, wh, RL_NONE, v3, sth, ph, dlh, r);
	sg_conv(s, v3, w4, b, y, one2, zero4, one2, 1);
	return true;
}

static bool build_dwsep(struct sg *s, const struct rl_judge_node *jn, char *why,
                        size_t whylen)
{
	if (!conv2d_dense(jn, true, why, whylen))
		return false;
	uint32_t x = sg_copy(s, jn->x), y = sg_copy(s, jn->y), b = sg_copy(s, jn->b);
	int64_t dd[4] = {jn->cin, 1, jn->kh, jn->kw}, dp[4] = {jn->cout, jn->cin, 1, 1};
	int64_t dt[4] = {jn->batch, jn->cin, jn->ho, jn->wo};
	uint32_t wd = sg_val(s, 4, dd, true), wp = sg_val(s, 4, dp, true);
	uint32_t t = sg_val(s, 4, dt, false);
	sg_conv(s, x, wd, RL_NONE, t, jn->strides, jn->pads, jn->dil, jn->cin);
	sg_conv(s, t, wp, b, y, one2, zero4, one2, 1);
	return true;
}

static bool build_grouped(struct sg *s, const struct rl_judge_node *jn, int64_t G,
                          char *why, size_t whylen)
{
	if (!jn->conv) {
		/* Y[M x N] = X[M x K] W[K x N] with a block-diagonal W is a 1x1
		 * grouped Conv over X viewed as [M, K, 1, 1]: one kernel */
		if (jn->K % G || jn->N % G)
			FAIL("K = %lld and N = %lld are not multiples of %lld", (long long)jn->K,
			     (long long)jn->N, (long long)G);
		if (jn->b != RL_NONE && numel(s->src, jn->b) != jn->N)
			FAIL("the Gemm bias is not one value per column");
		if (jn->trans_a)
			FAIL("transposed A");
		int64_t dx[4] = {jn->M, jn->K, 1, 1}, dw[4] = {jn->N, jn->K / G, 1, 1};
		int64_t dy[4] = {jn->M, jn->N, 1, 1}, db[1] = {jn->N};
		uint32_t x = sg_val(s, 4, dx, false), w = sg_val(s, 4, dw, true);
		uint32_t y = sg_val(s, 4, dy, false);
		uint32_t b = jn->b == RL_NONE ? RL_NONE : sg_val(s, 1, db, true);
		sg_conv(s, x, w, b, y, one2, zero4, one2, G);
		return true;
	}
	if (jn->nsp != 2)
		FAIL("applies to 2-D Convs");
	int64_t g2 = jn->group * G;
	if (jn->cin % g2 || jn->cout % g2)
		FAIL("channels %lld -> %lld do not split into %lld groups", (long long)jn->cin,
		     (long long)jn->cout, (long long)g2);
	uint32_t x = sg_copy(s, jn->x), y = sg_copy(s, jn->y), b = sg_copy(s, jn->b);
	int64_t dw[4] = {jn->cout, jn->cin / g2, jn->kh, jn->kw};
	uint32_t w = sg_val(s, 4, dw, true);
	sg_conv(s, x, w, b, y, jn->strides, jn->pads, jn->dil, g2);
	return true;
}

static bool build_split(struct sg *s, const struct rl_judge_node *jn, int64_t S, char *why,
                        size_t whylen)
{
	if (jn->N % S)
		FAIL("N = %lld is not a multiple of %lld", (long long)jn->N, (long long)S);
	/* each slice's kernel reads all of X and writes its slice of Y in place */
	uint32_t x = sg_copy(s, jn->x);
	for (int64_t k = 0; k < S; k++) {
		if (!jn->conv) {
			const struct rl_shape *ys = &s->src->values[jn->y].shape;
			int64_t dy[RL_MAX_RANK], dw[2] = {jn->K, jn->N / S};
			for (int i = 0; i < ys->rank; i++)
				dy[i] = ys->d[i].v;
			dy[ys->rank - 1] = jn->N / S;
			uint32_t w = sg_val(s, 2, dw, true), y = sg_val(s, ys->rank, dy, false);
			uint32_t b = RL_NONE;
			if (jn->b != RL_NONE) {
				const struct rl_shape *bs = &s->src->values[jn->b].shape;
				int64_t db[RL_MAX_RANK];
				for (int i = 0; i < bs->rank; i++)
					db[i] = bs->d[i].v;
				if (bs->rank && db[bs->rank - 1] == jn->N)
					db[bs->rank - 1] = jn->N / S;
				b = sg_val(s, bs->rank, db, true);
			}
			if (jn->gemm)
				sg_gemm(s, x, w, b, y, jn->trans_a);
			else
				sg_matmul(s, x, w, y);
			continue;
		}
		if (jn->nsp != 2)
			FAIL("applies to 2-D Convs");
		int64_t dw[4] = {jn->cout / S, jn->cin / jn->group, jn->kh, jn->kw};
		int64_t dy[4] = {jn->batch, jn->cout / S, jn->ho, jn->wo}, db[1] = {jn->cout / S};
		if (jn->group > 1 && (jn->cout / S) % jn->group)
			FAIL("the slices do not keep whole groups");
		uint32_t w = sg_val(s, 4, dw, true), y = sg_val(s, 4, dy, false);
		uint32_t b = jn->b == RL_NONE ? RL_NONE : sg_val(s, 1, db, true);
		sg_conv(s, x, w, b, y, jn->strides, jn->pads, jn->dil, jn->group);
	}
	return true;
}

/* The closest memory level that holds `bytes` (the first level per core). */
static int level_holding(const struct rl_machine *m, double bytes)
{
	for (int l = 0; l < m->nlevels - 1; l++) {
		double cap = m->level[l].capacity;
		if (l == 0 && m->cores > 0)
			cap /= m->cores;
		if (bytes <= cap)
			return l;
	}
	return m->nlevels - 1;
}

static bool cost_sparse(const struct rl_graph *g, const struct rl_judge_node *jn,
                        const struct rl_machine *m, double density, struct rl_judge_cost *out,
                        char *why, size_t whylen)
{
	if (!(density > 0 && density < 1))
		FAIL("density %g", density);
	const struct rl_mem_level *dram = rl_machine_dram(m);
	double es = (double)jn->es, M = (double)jn->M, N = (double)jn->N;
	double nnz = ceil(density * (double)jn->K * N);
	double xb = (double)numel(g, jn->x) * es, yb = (double)numel(g, jn->y) * es;
	double bb = (double)numel(g, jn->b) * es;
	double index = 4 * nnz + 4 * (N + 1);
	double rd = xb + nnz * es + index + bb, wr = yb;
	double flops = 2 * M * nnz + (jn->b != RL_NONE ? M * N : 0); /* + bias, as the counters */
	double run = jn->conv ? (jn->nsp == 2 && jn->strides[1] == 1 ? (double)jn->wo : 1) : M;
	if (!jn->conv && jn->M > 1) {
		/* X to feature-major for the SpMM: its own kernel */
		struct rl_counts tc = {.bytes_read = xb, .bytes_write = xb,
		                       .access = RL_ACCESS_STRIDED};
		struct rl_cost tk;
		rl_cost_price(m, &tc, rl_node_prec(g, jn->node), false, &tk);
		cost_add(out, &tk);
		out->inter_bytes = xb;
	}
	double effc = m->eff_contiguous > 0 ? m->eff_contiguous : 1;
	double effg = m->eff_gather > 0 ? m->eff_gather * run : effc;
	if (effg > effc)
		effg = effc;
	int lvl = level_holding(m, xb);
	double gb = M * nnz * es;
	double wbw = dram->write_bw > 0 ? dram->write_bw : dram->read_bw;
	double t_mem = rd / (dram->read_bw * effc) + wr / (wbw * effc) +
	               gb / (m->level[lvl].read_bw * effg);
	enum rl_prec prec = rl_node_prec(g, jn->node);
	double peak = rl_machine_peak(m, prec, false);
	if (peak <= 0)
		peak = rl_machine_peak(m, RL_PREC_FP32, false);
	double t_cmp = peak > 0 ? flops / peak : 0;
	double roof = t_mem > t_cmp ? t_mem : t_cmp;
	struct rl_cost k = {
		.flops = flops,
		.bytes = rd + wr + (lvl == m->nlevels - 1 ? gb : 0),
		.time_s = roof + m->launch_latency,
		.bound = m->launch_latency > roof ? RL_BOUND_LATENCY
		       : t_cmp > t_mem ? RL_BOUND_COMPUTE : RL_BOUND_MEMORY,
	};
	k.intensity = k.bytes > 0 ? k.flops / k.bytes : 0;
	cost_add(out, &k);
	out->index_bytes = index;
	out->gather_bytes = gb;
	out->gather_level = lvl;
	cost_finish(out);
	return true;
}

static bool cost_sparse24(const struct rl_graph *g, const struct rl_judge_node *jn,
                          const struct rl_machine *m, struct rl_judge_cost *out, char *why,
                          size_t whylen)
{
	enum rl_prec prec = rl_node_prec(g, jn->node);
	if (!m->has_sparse24)
		FAIL("%s has no 2:4 sparse matrix units", m->name);
	if (!(m->peak_matrix[prec] > 0))
		FAIL("%s has no %s matrix unit for 2:4 (it would change the precision)", m->name,
		     rl_prec_name(prec));
	if (jn->K % 4)
		FAIL("K = %lld is not a multiple of 4", (long long)jn->K);
	double es = (double)jn->es, kn = (double)jn->K * (double)jn->N;
	struct rl_counts c = {
		.macs = (double)jn->M * kn / 2,
		.bytes_read = (double)numel(g, jn->x) * es + kn / 2 * es + kn / 8 +
		              (double)numel(g, jn->b) * es,
		.bytes_write = (double)numel(g, jn->y) * es,
		.weight_bytes = kn / 2 * es + kn / 8,
		.access = RL_ACCESS_CONTIGUOUS,
	};
	c.flops = 2 * c.macs + (jn->b != RL_NONE ? (double)jn->M * (double)jn->N : 0);
	/* the run's footprint with the compressed weight in place of the dense one */
	c.reuse_bytes = jn->reuse_bytes - kn * es + c.weight_bytes;
	struct rl_cost k;
	rl_cost_price(m, &c, prec, true, &k);
	cost_add(out, &k);
	out->index_bytes = kn / 8;
	cost_finish(out);
	return true;
}

bool rl_judge_cost_cand(const struct rl_graph *g, const struct rl_judge_node *jn,
                        const struct rl_machine *m, const struct rl_judge_cand *c,
                        struct rl_judge_cost *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	out->gather_level = -1;
	why[0] = 0;
	if (c->kind == RL_JUDGE_SPARSE)
		return cost_sparse(g, jn, m, c->density, out, why, whylen);
	if (c->kind == RL_JUDGE_SPARSE24)
		return cost_sparse24(g, jn, m, out, why, whylen);
	struct sg s = {.g = rl_graph_new(), .src = g, .dt = jn->dt, .es = jn->es};
	s.g->opset = g->opset;
	bool ok = false;
	switch (c->kind) {
	case RL_JUDGE_LOWRANK: ok = build_lowrank(&s, jn, c->r1, why, whylen); break;
	case RL_JUDGE_TUCKER2: ok = build_tucker2(&s, jn, c->r1, c->r2, why, whylen); break;
	case RL_JUDGE_CP: ok = build_cp(&s, jn, c->r1, why, whylen); break;
	case RL_JUDGE_DWSEP: ok = build_dwsep(&s, jn, why, whylen); break;
	case RL_JUDGE_GROUPED:
		ok = c->r1 >= 2 && build_grouped(&s, jn, c->r1, why, whylen);
		break;
	case RL_JUDGE_SPLIT: ok = c->r1 >= 2 && build_split(&s, jn, c->r1, why, whylen); break;
	default: snprintf(why, whylen, "unknown candidate"); break;
	}
	if (ok && !sg_price(&s, jn, m, out)) {
		snprintf(why, whylen, "a kernel of the candidate could not be priced");
		ok = false;
	}
	rl_graph_free(s.g);
	return ok;
}

/* ---- weight errors ------------------------------------------------------ */

/* Work caps for the estimates the judge makes on every run (the factorize
 * pass computes its own errors without them). */
#define JUDGE_MAX_SELECT (1 << 24) /* Conv weights for sparsity/grouping errors */
#define JUDGE_MAX_SVD 1.0e9        /* min(m,n)^2 * max(m,n) for an SVD */
/* MatMul/Gemm weights up to JUDGE_EXACT elements are read whole; a larger one
 * is estimated on about JUDGE_SAMPLE elements: blocks of 4 stored rows spread
 * evenly over the weight (whole rows keep 2:4 groups and block-diagonal
 * structure intact; blocks of contiguous rows touch only their own pages of
 * an mmap'd weight file). So the report of a 7B-parameter model reads a few
 * MB per weight, not the 13.5 GB, and only for the candidates that pay. */
#define JUDGE_EXACT (1 << 22)
#define JUDGE_SAMPLE (1 << 18)

/*
 * The weight as the error estimates see it, loaded on first use (werr_load):
 * the judge prices every candidate first and estimates accuracy only for the
 * predicted speedups, so a weight no candidate pays for is never read.
 */
struct werr {
	const struct rl_graph *g;
	const struct rl_judge_node *jn;
	bool loaded;
	float *w;        /* the weight as float, stored layout; NULL if none */
	int64_t n;       /* elements held in w */
	int64_t rows, cols; /* stored layout: rows x cols */
	int64_t *row_of; /* sampled: stored row of w's row r (blocks of 4); NULL: whole */
	int64_t srows;   /* rows held in w */
	double total;    /* sum of squares */
	float *sv;       /* singular values of the stored matrix, lazily */
	int64_t nsv;
	bool sv_tried;
	float *sq;       /* squares, for selection, lazily */
	struct rl_fact_hosvd hosvd; /* Conv: Tucker-2 factors, lazily */
	bool hosvd_tried, have_hosvd;
};

static void werr_init(struct werr *e, const struct rl_graph *g, const struct rl_judge_node *jn)
{
	memset(e, 0, sizeof(*e));
	e->g = g;
	e->jn = jn;
}

/* Stored element i of the weight as float. */
static float wget(const struct werr *e, int64_t i)
{
	const struct rl_value *w = &e->g->values[e->jn->w];
	return w->dtype == RL_DT_FLOAT ? ((const float *)w->data)[i]
	                               : (float)rl_value_get_float(e->g, e->jn->w, i);
}

static void werr_load(struct werr *e)
{
	if (e->loaded)
		return;
	e->loaded = true;
	const struct rl_judge_node *jn = e->jn;
	const struct rl_value *w = &e->g->values[jn->w];
	int64_t n = rl_shape_numel(&w->shape);
	if (!w->data || n <= 0 || w->nbytes < (size_t)n * jn->es)
		return;
	e->rows = jn->conv ? jn->cout : (jn->trans_b ? jn->N : jn->K);
	e->cols = e->rows > 0 ? n / e->rows : 0;
	if (e->rows <= 0 || e->rows * e->cols != n)
		return;
	bool sample = !jn->conv && n > JUDGE_EXACT && e->rows >= 8;
	if (!sample && n > JUDGE_MAX_SELECT)
		return;
	int64_t nblk = e->rows / 4, take = nblk;
	if (sample) {
		take = JUDGE_SAMPLE / (4 * e->cols);
		take = take < 1 ? 1 : take > nblk ? nblk : take;
		e->row_of = malloc((size_t)(4 * take) * sizeof(*e->row_of));
		if (!e->row_of)
			return;
		for (int64_t b = 0; b < take; b++)
			for (int i = 0; i < 4; i++)
				e->row_of[4 * b + i] = 4 * (b * nblk / take) + i;
		e->srows = 4 * take;
	} else {
		e->srows = e->rows;
	}
	e->n = e->srows * e->cols;
	e->w = malloc((size_t)e->n * sizeof(float));
	if (!e->w) {
		e->n = 0;
		return;
	}
	for (int64_t r = 0; r < e->srows; r++) {
		int64_t src = (e->row_of ? e->row_of[r] : r) * e->cols;
		if (e->row_of && r % 4 == 0)
			rl_page_random((const char *)w->data + (size_t)src * jn->es,
			               (size_t)(4 * e->cols) * jn->es);
		for (int64_t c = 0; c < e->cols; c++) {
			float v = wget(e, src + c);
			e->w[r * e->cols + c] = v;
			e->total += (double)v * v;
		}
		if (e->row_of && r % 4 == 3)
			rl_page_out((const char *)w->data + (size_t)(src - 3 * e->cols) * jn->es,
			            (size_t)(4 * e->cols) * jn->es);
	}
	/* read whole (up to JUDGE_EXACT elements): its copy is in e->w now */
	if (!e->row_of)
		rl_page_out(w->data, (size_t)n * jn->es);
}

static void werr_free(struct werr *e)
{
	free(e->row_of);
	free(e->w);
	free(e->sv);
	free(e->sq);
	if (e->have_hosvd)
		rl_fact_hosvd_free(&e->hosvd);
}

/* Rearrange a[0..n) so that a[0..k) are the k largest (quickselect). */
static void select_largest(float *a, int64_t n, int64_t k)
{
	int64_t lo = 0, hi = n - 1;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	while (lo < hi && k > lo && k <= hi) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		float p = a[lo + (int64_t)((seed >> 33) % (uint64_t)(hi - lo + 1))];
		int64_t i = lo, j = hi;
		while (i <= j) {
			while (a[i] > p)
				i++;
			while (a[j] < p)
				j--;
			if (i <= j) {
				float t = a[i];
				a[i++] = a[j];
				a[j--] = t;
			}
		}
		if (k <= j + 1)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

/* Element (k, n) of the product view W[K x N] (Conv: k indexes cin/g*kernel
 * of output channel n). */
static float wkn(const struct werr *e, int64_t k, int64_t n)
{
	const struct rl_judge_node *jn = e->jn;
	if (jn->conv || jn->trans_b)
		return e->w[n * jn->K + k];
	return e->w[k * jn->N + n];
}

static double err_sparse(struct werr *e, double density)
{
	if (!e->w || e->total <= 0)
		return -1;
	if (!e->sq) {
		e->sq = malloc((size_t)e->n * sizeof(float));
		if (!e->sq)
			return -1;
	}
	for (int64_t i = 0; i < e->n; i++)
		e->sq[i] = e->w[i] * e->w[i];
	int64_t keep = (int64_t)ceil(density * (double)e->n);
	select_largest(e->sq, e->n, keep);
	double kept = 0;
	for (int64_t i = 0; i < keep; i++)
		kept += e->sq[i];
	double d = e->total - kept;
	return sqrt(d > 0 ? d / e->total : 0);
}

/* The two smallest squares of four values. */
static double drop2(const double *v)
{
	double q[4];
	for (int i = 0; i < 4; i++)
		q[i] = v[i] * v[i];
	for (int i = 0; i < 2; i++)
		for (int j = i + 1; j < 4; j++)
			if (q[j] < q[i]) {
				double t = q[i];
				q[i] = q[j];
				q[j] = t;
			}
	return q[0] + q[1];
}

static double err_sparse24(const struct werr *e)
{
	const struct rl_judge_node *jn = e->jn;
	if (!e->w || e->total <= 0 || jn->K % 4)
		return -1;
	double drop = 0;
	if (e->row_of) {
		/* groups of 4 along K: within a stored row (W stored N x K), or
		 * across the 4 consecutive stored rows of a sample block */
		double v[4];
		for (int64_t r = 0; r < e->srows; r += jn->trans_b ? 1 : 4)
			for (int64_t c = 0; c < e->cols; c += jn->trans_b ? 4 : 1) {
				for (int i = 0; i < 4; i++)
					v[i] = jn->trans_b ? e->w[r * e->cols + c + i] : e->w[(r + i) * e->cols + c];
				drop += drop2(v);
			}
		return sqrt(drop / e->total);
	}
	for (int64_t n = 0; n < jn->N; n++)
		for (int64_t k = 0; k < jn->K; k += 4) {
			double q[4];
			for (int i = 0; i < 4; i++) {
				double v = wkn(e, k + i, n);
				q[i] = v * v;
			}
			/* drop the two smallest of four */
			for (int i = 0; i < 2; i++)
				for (int j = i + 1; j < 4; j++)
					if (q[j] < q[i]) {
						double t = q[i];
						q[i] = q[j];
						q[j] = t;
					}
			drop += q[0] + q[1];
		}
	return sqrt(drop / e->total);
}

static double err_grouped(const struct werr *e, int64_t G)
{
	const struct rl_judge_node *jn = e->jn;
	if (!e->w || e->total <= 0)
		return -1;
	double off = 0;
	if (!jn->conv && e->row_of) {
		if (jn->K % G || jn->N % G)
			return -1;
		for (int64_t r = 0; r < e->srows; r++)
			for (int64_t c = 0; c < e->cols; c++) {
				int64_t k = jn->trans_b ? c : e->row_of[r], n = jn->trans_b ? e->row_of[r] : c;
				if (k / (jn->K / G) != n / (jn->N / G)) {
					double v = e->w[r * e->cols + c];
					off += v * v;
				}
			}
		return sqrt(off / e->total);
	}
	if (!jn->conv) {
		if (jn->K % G || jn->N % G)
			return -1;
		for (int64_t k = 0; k < jn->K; k++)
			for (int64_t n = 0; n < jn->N; n++)
				if (k / (jn->K / G) != n / (jn->N / G)) {
					double v = wkn(e, k, n);
					off += v * v;
				}
		return sqrt(off / e->total);
	}
	/* within each existing group, input channel block vs output block */
	int64_t g2 = jn->group * G, cig = jn->cin / jn->group, kk = jn->K / cig;
	if (jn->cin % g2 || jn->cout % g2)
		return -1;
	for (int64_t o = 0; o < jn->cout; o++)
		for (int64_t k = 0; k < jn->K; k++) {
			int64_t ci = (o / (jn->cout / jn->group)) * cig + k / kk; /* absolute input channel */
			if (ci / (jn->cin / g2) != o / (jn->cout / g2)) {
				double v = e->w[o * jn->K + k];
				off += v * v;
			}
		}
	return sqrt(off / e->total);
}

static bool svd_affordable(int64_t m, int64_t n)
{
	double a = (double)(m < n ? m : n), b = (double)(m < n ? n : m);
	return a * a * b <= JUDGE_MAX_SVD;
}

static double err_lowrank(struct werr *e, int64_t r)
{
	const struct rl_judge_node *jn = e->jn;
	if (!e->w || e->total <= 0 || e->row_of)
		return -1; /* singular values of a sample are not the weight's */
	int64_t rows = jn->conv ? jn->cout : (jn->trans_b ? jn->N : jn->K);
	int64_t cols = e->n / rows;
	if (!e->sv_tried) {
		e->sv_tried = true;
		e->nsv = rows < cols ? rows : cols;
		if (!svd_affordable(rows, cols) || !rl_fact_have_svd())
			return -1;
		e->sv = malloc((size_t)e->nsv * sizeof(float));
		if (e->sv && !rl_fact_svd(e->w, rows, cols, e->sv, NULL, NULL)) {
			free(e->sv);
			e->sv = NULL;
		}
	}
	return e->sv ? rl_fact_lowrank_error(e->sv, e->nsv, r) : -1;
}

#define JUDGE_MAX_TUCKER 4.0e8 /* multiply-adds to rebuild a Tucker-2 weight */

static double err_tucker2(struct werr *e, int64_t ri, int64_t ro)
{
	const struct rl_judge_node *jn = e->jn;
	if (!e->w || e->total <= 0 || !rl_fact_have_svd())
		return -1;
	int64_t kk = jn->kh * jn->kw;
	double work = (double)jn->cout * (double)jn->cin * (double)kk * (double)(2 * ri + ro);
	if (work > JUDGE_MAX_TUCKER)
		return -1;
	if (!e->hosvd_tried) {
		e->hosvd_tried = true;
		if (!svd_affordable(jn->cout, jn->cin * kk) || !svd_affordable(jn->cin, jn->cout * kk))
			return -1;
		e->have_hosvd = rl_fact_hosvd_init(&e->hosvd, e->w, jn->cout, jn->cin, kk);
	}
	return e->have_hosvd ? rl_fact_tucker2(&e->hosvd, ri, ro, NULL, NULL, NULL) : -1;
}

/* Depthwise-separable: W[o][i][:] ~ P[o][i] D[i][:], per input channel the
 * best rank-1 approximation of the cout x kernel matrix. */
static double err_dwsep(const struct werr *e)
{
	const struct rl_judge_node *jn = e->jn;
	if (!e->w || e->total <= 0 || !rl_fact_have_svd())
		return -1;
	int64_t kk = jn->kh * jn->kw, mn = jn->cout < kk ? jn->cout : kk;
	float *a = malloc((size_t)(jn->cout * kk) * sizeof(float));
	float *s = malloc((size_t)mn * sizeof(float));
	double kept = 0;
	bool ok = a && s;
	for (int64_t i = 0; ok && i < jn->cin; i++) {
		for (int64_t o = 0; o < jn->cout; o++)
			memcpy(a + o * kk, e->w + (o * jn->cin + i) * kk, (size_t)kk * sizeof(float));
		ok = rl_fact_svd(a, jn->cout, kk, s, NULL, NULL);
		if (ok)
			kept += (double)s[0] * s[0];
	}
	free(a);
	free(s);
	if (!ok)
		return -1;
	double d = e->total - kept;
	return sqrt(d > 0 ? d / e->total : 0);
}

static void err_text(struct werr *e, const struct rl_judge_cand *c, char *buf, size_t n)
{
	double err = -1;
	const char *none = NULL;
	if (c->kind != RL_JUDGE_SPLIT && c->kind != RL_JUDGE_CP)
		werr_load(e);
	switch (c->kind) {
	case RL_JUDGE_SPLIT: snprintf(buf, n, "exact"); return;
	case RL_JUDGE_SPARSE: err = err_sparse(e, c->density); break;
	case RL_JUDGE_SPARSE24: err = err_sparse24(e); break;
	case RL_JUDGE_GROUPED: err = err_grouped(e, c->r1); break;
	case RL_JUDGE_LOWRANK: err = err_lowrank(e, c->r1); break;
	case RL_JUDGE_TUCKER2: err = err_tucker2(e, c->r1, c->r2); break;
	case RL_JUDGE_DWSEP: err = err_dwsep(e); break;
	case RL_JUDGE_CP: none = "not estimated (CP needs ALS; usually retrained)"; break;
	default: break;
	}
	if (none)
		snprintf(buf, n, "%s", none);
	else if (err >= 0 && e->row_of)
		snprintf(buf, n, "%.3g (relative Frobenius, weights as they are; on %lld of %lld "
		         "rows)", err, (long long)e->srows, (long long)e->rows);
	else if (err >= 0)
		snprintf(buf, n, "%.3g (relative Frobenius, weights as they are)", err);
	else if (!e->w)
		snprintf(buf, n, "not estimated (weight data not loaded or over %d elements)",
		         JUDGE_MAX_SELECT);
	else
		snprintf(buf, n, "not estimated (too large for the judge; --factorize computes it)");
}

/* ---- the pass ----------------------------------------------------------- */

static void fmt_bytes(double b, char *buf, size_t n)
{
	if (b >= 1 << 30)
		snprintf(buf, n, "%.3g GiB", b / (1 << 30));
	else if (b >= 1 << 20)
		snprintf(buf, n, "%.3g MiB", b / (1 << 20));
	else if (b >= 1 << 10)
		snprintf(buf, n, "%.3g KiB", b / (1 << 10));
	else
		snprintf(buf, n, "%.0f B", b);
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : (a > 0 ? INFINITY : 1);
}

static int cand_list(const struct rl_judge_node *jn, const struct rl_machine *m,
                     struct rl_judge_cand *c, int max)
{
	int n = 0;
#define ADD(...) do { if (n < max) c[n++] = (struct rl_judge_cand){__VA_ARGS__}; } while (0)
	bool dense2d = jn->conv && jn->nsp == 2 && jn->group == 1;
	bool spatial = dense2d && jn->kh * jn->kw > 1;
	int64_t mn = jn->K < jn->N ? jn->K : jn->N;
	if (!jn->conv || dense2d)
		for (int64_t f = 2, last = -1; f <= 8; f *= 2)
			if (mn / f >= 1 && mn / f != last)
				ADD(.kind = RL_JUDGE_LOWRANK, .r1 = last = mn / f);
	if (spatial) {
		for (int64_t f = 2; f <= 8; f *= 2)
			if (jn->cin / f >= 1 && jn->cout / f >= 1)
				ADD(.kind = RL_JUDGE_TUCKER2, .r1 = jn->cin / f, .r2 = jn->cout / f);
		int64_t cm = jn->cin < jn->cout ? jn->cin : jn->cout;
		for (int64_t f = 4; f <= 8; f *= 2)
			if (cm / f >= 1)
				ADD(.kind = RL_JUDGE_CP, .r1 = cm / f);
		ADD(.kind = RL_JUDGE_DWSEP);
	}
	if (!jn->conv || jn->nsp == 2) {
		ADD(.kind = RL_JUDGE_GROUPED, .r1 = 2);
		ADD(.kind = RL_JUDGE_GROUPED, .r1 = 4);
		ADD(.kind = RL_JUDGE_SPLIT, .r1 = 2);
	}
	static const double dens[] = {0.5, 0.25, 0.1};
	for (size_t i = 0; i < sizeof(dens) / sizeof(dens[0]); i++)
		ADD(.kind = RL_JUDGE_SPARSE, .density = dens[i]);
	if (m->has_sparse24)
		ADD(.kind = RL_JUDGE_SPARSE24);
#undef ADD
	return n;
}

static void judge_node(struct rl_graph *g, struct rl_pass_ctx *ctx, uint32_t node)
{
	const struct rl_machine *m = ctx->machine;
	const char *name = g->nodes[node].name;
	struct rl_judge_node jn;
	char why[256];
	if (!rl_judge_node_init(g, node, &jn, why, sizeof(why))) {
		rl_remark(ctx, "judge", name, "skipped", -1, -1, -1, -1, "%s", why);
		return;
	}
	struct rl_judge_cost before;
	if (!rl_judge_cost_node(g, &jn, m, &before) || !(before.time_s > 0)) {
		rl_remark(ctx, "judge", name, "skipped", -1, -1, -1, -1,
		          "the node could not be priced");
		return;
	}
	struct rl_judge_cand cands[24];
	int nc = cand_list(&jn, m, cands, 24);
	struct werr we;
	werr_init(&we, g, &jn);
	for (int i = 0; i < nc; i++) {
		char cn[48], err[128];
		rl_judge_cand_name(&cands[i], cn, sizeof(cn));
		struct rl_judge_cost after;
		if (!rl_judge_cost_cand(g, &jn, m, &cands[i], &after, why, sizeof(why))) {
			rl_remark(ctx, "judge", name, "skipped", -1, -1, -1, -1, "%s: %s", cn, why);
			continue;
		}
		double tr = ratio(after.time_s, before.time_s);
		const char *verdict = rl_judge_verdict(tr);
		char extra[200] = "", b1[32], b2[32];
		size_t k = 0;
		if (after.inter_bytes > 0) {
			fmt_bytes(after.inter_bytes, b1, sizeof(b1));
			k += (size_t)snprintf(extra + k, sizeof(extra) - k,
			                      ", %s of intermediates written and read back", b1);
		}
		if (after.index_bytes > 0 && k < sizeof(extra)) {
			fmt_bytes(after.index_bytes, b1, sizeof(b1));
			k += (size_t)snprintf(extra + k, sizeof(extra) - k, ", %s of indices", b1);
		}
		if (after.gather_bytes > 0 && k < sizeof(extra)) {
			fmt_bytes(after.gather_bytes, b2, sizeof(b2));
			k += (size_t)snprintf(extra + k, sizeof(extra) - k, ", %s gathered from %s", b2,
			                      m->level[after.gather_level].name);
		}
		/* the accuracy of a rewrite matters only where it would pay */
		if (strcmp(verdict, "speedup") == 0)
			err_text(&we, &cands[i], err, sizeof(err));
		else
			snprintf(err, sizeof(err), "not estimated (no speedup)");
		int dk = after.kernels - before.kernels;
		rl_remark(ctx, "judge", name, verdict, before.bytes, after.bytes, before.time_s,
		          after.time_s,
		          "%s: flops x%.3g, bytes x%.3g, time x%.3g; %s-bound -> %s-bound; "
		          "%d kernel%s (%+d launch%s)%s; err %s",
		          cn, ratio(after.flops, before.flops), ratio(after.bytes, before.bytes), tr,
		          rl_bound_name(before.bound), rl_bound_name(after.bound), after.kernels,
		          after.kernels == 1 ? "" : "s", dk, dk == 1 || dk == -1 ? "" : "es", extra,
		          err);
		ctx->remarks[ctx->nremarks - 1].flops_before = before.flops;
		ctx->remarks[ctx->nremarks - 1].flops_after = after.flops;
	}
	werr_free(&we);
}

enum rl_status rl_pass_judge(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	if (!ctx->machine) {
		rl_remark(ctx, "judge", NULL, "skipped", -1, -1, -1, -1,
		          "no machine profile to price rewrites on");
		return RL_OK;
	}
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		enum rl_op op = g->nodes[i].op;
		if (g->nodes[i].dead || (op != RL_OP_MatMul && op != RL_OP_Gemm && op != RL_OP_Conv))
			continue;
		judge_node(g, ctx, i);
	}
	return RL_OK;
}

/* ---- the report section ------------------------------------------------- */

static bool is_judge(const struct rl_remark *r)
{
	return r->pass && strcmp(r->pass, "judge") == 0;
}

static bool fewer_but_slower(const struct rl_remark *r)
{
	return strcmp(r->verdict, "slowdown") == 0 && r->flops_before > 0 &&
	       r->flops_after >= 0 && r->flops_after < r->flops_before;
}

static void print_list(const struct rl_pass_ctx *ctx, FILE *f, const char *title,
                       bool (*want)(const struct rl_remark *, const char *), const char *arg)
{
	int n = 0;
	for (uint32_t i = 0; i < ctx->nremarks; i++) {
		const struct rl_remark *r = &ctx->remarks[i];
		if (!is_judge(r) || !want(r, arg))
			continue;
		if (!n++)
			fprintf(f, "%s:\n", title);
		fprintf(f, "  %-24s %s", r->node, r->msg);
		if (r->time_before >= 0 && r->time_after >= 0)
			fprintf(f, " [time %.3g s -> %.3g s]", r->time_before, r->time_after);
		fputc('\n', f);
	}
}

static bool want_fbs(const struct rl_remark *r, const char *arg)
{
	(void)arg;
	return fewer_but_slower(r);
}

static bool want_verdict(const struct rl_remark *r, const char *v)
{
	return strcmp(r->verdict, v) == 0 && !fewer_but_slower(r);
}

void rl_judge_print(const struct rl_pass_ctx *ctx, FILE *f)
{
	uint32_t nsp = 0, nsl = 0, nne = 0, nsk = 0, nfbs = 0;
	for (uint32_t i = 0; i < ctx->nremarks; i++) {
		const struct rl_remark *r = &ctx->remarks[i];
		if (!is_judge(r))
			continue;
		nsp += strcmp(r->verdict, "speedup") == 0;
		nsl += strcmp(r->verdict, "slowdown") == 0;
		nne += strcmp(r->verdict, "neutral") == 0;
		nsk += strcmp(r->verdict, "skipped") == 0;
		nfbs += fewer_but_slower(r);
	}
	fprintf(f, "rewrite verdicts%s%s: %u speedup%s, %u neutral (within 5%%), %u slowdown%s "
	        "(%u with fewer FLOPs, but slower), %u skipped\n",
	        ctx->machine ? " on " : "", ctx->machine ? ctx->machine->name : "", nsp,
	        nsp == 1 ? "" : "s", nne, nsl, nsl == 1 ? "" : "s", nfbs, nsk);
	if (!nsp && !nsl && !nne && !nsk)
		return;
	print_list(ctx, f, "fewer FLOPs, but slower", want_fbs, NULL);
	print_list(ctx, f, "speedups", want_verdict, "speedup");
	print_list(ctx, f, "neutral", want_verdict, "neutral");
	print_list(ctx, f, "other slowdowns", want_verdict, "slowdown");
	print_list(ctx, f, "skipped", want_verdict, "skipped");
}
