/*
 * fuse.c - elementwise and epilogue fusion, taken when the roofline says so.
 *
 * An elementwise operator has an intensity near one FLOP per element: it is
 * bound by the bytes it moves. A chain of them, unfused, writes every
 * intermediate to memory and reads it back. This pass marks groups of nodes
 * (node->group) that the C backend emits as one kernel, so intermediates
 * live in registers:
 *
 * - Elementwise groups: connected sets of elementwise operators (unary,
 *   binary and variadic with broadcasting, Where, Clip, Cast) that all
 *   produce the same shape, the group's iteration space; tensors from
 *   outside may broadcast into it, scalar constants become literals. DAG
 *   shapes (a value used by several nodes of the group) and several outputs
 *   (values also used outside, graph outputs) are fine.
 * - Epilogue groups: such a group attached to the MatMul, Gemm or Conv that
 *   feeds it when the product has no other use and one value the group
 *   writes has the product's dtype (the product is computed into that
 *   buffer): bias add, activation, residual add and scale run inside the
 *   product's output loop while each row is in cache.
 *
 * Groups grow greedily in topological order: a node joins the groups of its
 * producers when the result stays convex (no path leaves the group and comes
 * back, else no single position could run it), has at most FUSE_MAX_NODES
 * nodes and FUSE_MAX_INPUTS external tensors. Then the roofline decides: a
 * group is taken when its bytes (external inputs read once, outputs written
 * once) are fewer than the sum of its nodes' bytes as the cost model counts
 * them (rl_count_node); every decision is a remark with both numbers and, on
 * a machine, both predicted times from rl_cost_price (one launch for the
 * group instead of one per node).
 *
 * Precondition: g->order is a topological order; shapes inferred (nodes
 * with symbolic shapes are left alone). The pass only writes node->group;
 * the graph is unchanged, so it can run at any point after cleanup. The C
 * backend checks every group again before it trusts it.
 */
#include "pass.h"

#include <stdlib.h>
#include <string.h>

#define FUSE_MAX_NODES 64    /* a longer chain is cut: the kernel stays readable
                                and the pass linear; 64 links already save 98% */
#define FUSE_MAX_INPUTS 16   /* external tensors per group (the C backend's
                                broadcast loops index at most 16) */
#define FUSE_WALK_BUDGET 4096 /* nodes visited by one convexity check */
#define STR_(x) #x
#define STR(x) STR_(x)

struct cluster {
	uint32_t *nodes;  /* in topological order */
	uint32_t n, cap;
	uint32_t anchor;  /* MatMul/Gemm/Conv running this as its epilogue, or RL_NONE */
	bool dead;        /* merged into another cluster */
};

struct fuse {
	struct rl_graph *g;
	struct rl_pass_ctx *ctx;
	uint32_t *pos;       /* node -> position in g->order */
	int32_t *cl;         /* node -> cluster, -1 */
	bool *cand;          /* node may join an elementwise group */
	uint32_t *in_set;    /* node marked with the current epoch: in the set */
	uint32_t *seen;      /* node visited by the current walk */
	uint32_t *vmark;     /* value counted by the current count */
	uint32_t epoch;
	uint32_t *stack;
	size_t sp, scap;
	struct cluster *cls;
	uint32_t ncls, capcls;
	uint32_t *tmp;       /* scratch node list */
	uint32_t ntmp, captmp;
};

/* ---- what may fuse ------------------------------------------------------ */

static bool static_numeric(const struct rl_graph *g, uint32_t v)
{
	const struct rl_value *x = &g->values[v];
	return rl_shape_is_static(&x->shape) && rl_dtype_is_numeric(x->dtype);
}

/* The node's single output, or RL_NONE when it has more than one. */
static uint32_t only_out(const struct rl_node *n)
{
	if (n->nout < 1 || n->out[0] == RL_NONE)
		return RL_NONE;
	for (int o = 1; o < n->nout; o++)
		if (n->out[o] != RL_NONE)
			return RL_NONE;
	return n->out[0];
}

/* Inputs and output static and numeric, output computed at run time. */
static bool runs_static(const struct rl_graph *g, const struct rl_node *n)
{
	uint32_t y = only_out(n);
	if (y == RL_NONE || rl_value_is_const(g, y) || !static_numeric(g, y) ||
	    rl_shape_numel(&g->values[y].shape) <= 0)
		return false;
	for (int q = 0; q < n->nin; q++)
		if (n->in[q] != RL_NONE && !static_numeric(g, n->in[q]))
			return false;
	return true;
}

static bool elementwise_candidate(const struct rl_graph *g, const struct rl_node *n)
{
	if (rl_op_table[n->op].family != RL_FAM_ELEMWISE || n->op == RL_OP_Dropout ||
	    n->op == RL_OP_BitCast) /* bits, not values: emit_lowp.c */
		return false;
	return n->nin <= FUSE_MAX_INPUTS && runs_static(g, n);
}

static bool anchor_op(enum rl_op op)
{
	return op == RL_OP_MatMul || op == RL_OP_Gemm || op == RL_OP_Conv;
}

static const struct rl_shape *out_shape(const struct rl_graph *g, uint32_t node)
{
	return &g->values[g->nodes[node].out[0]].shape;
}

/* ---- node sets ---------------------------------------------------------- */

static void push(struct fuse *f, uint32_t x)
{
	if (f->sp == f->scap) {
		f->scap = f->scap ? 2 * f->scap : 256;
		f->stack = realloc(f->stack, f->scap * sizeof(*f->stack));
		RL_ASSERT(f->stack);
	}
	f->stack[f->sp++] = x;
}

static void tmp_add(struct fuse *f, uint32_t x)
{
	if (f->ntmp == f->captmp) {
		f->captmp = f->captmp ? 2 * f->captmp : 128;
		f->tmp = realloc(f->tmp, f->captmp * sizeof(*f->tmp));
		RL_ASSERT(f->tmp);
	}
	f->tmp[f->ntmp++] = x;
}

/* Mark the set nodes[0..n) with a fresh epoch; returns it. */
static uint32_t mark_set(struct fuse *f, const uint32_t *nodes, uint32_t n)
{
	uint32_t e = ++f->epoch;
	for (uint32_t j = 0; j < n; j++)
		f->in_set[nodes[j]] = e;
	return e;
}

/*
 * Is the marked set convex: no path from it through an outside node back
 * into it? Walks back from the producers of the set's outside inputs; a
 * node before the set's first cannot lie on such a path. Returns 1 convex,
 * 0 not (*via: an outside node on the path), -1 the walk ran over budget.
 */
static int convex(struct fuse *f, const uint32_t *nodes, uint32_t n, uint32_t *via)
{
	struct rl_graph *g = f->g;
	uint32_t e = mark_set(f, nodes, n), minpos = UINT32_MAX, budget = FUSE_WALK_BUDGET;
	for (uint32_t j = 0; j < n; j++)
		if (f->pos[nodes[j]] < minpos)
			minpos = f->pos[nodes[j]];
	f->sp = 0;
	for (uint32_t j = 0; j < n; j++) {
		const struct rl_node *nd = &g->nodes[nodes[j]];
		for (int q = 0; q < nd->nin; q++) {
			uint32_t v = nd->in[q];
			uint32_t p = v == RL_NONE ? RL_NONE : g->values[v].producer;
			if (p == RL_NONE || f->in_set[p] == e || f->seen[p] == e || f->pos[p] < minpos)
				continue;
			f->seen[p] = e;
			push(f, p);
		}
	}
	while (f->sp > 0) {
		uint32_t x = f->stack[--f->sp];
		if (budget-- == 0)
			return -1;
		const struct rl_node *nd = &g->nodes[x];
		for (int q = 0; q < nd->nin; q++) {
			uint32_t v = nd->in[q];
			uint32_t p = v == RL_NONE ? RL_NONE : g->values[v].producer;
			if (p == RL_NONE || f->seen[p] == e || f->pos[p] < minpos)
				continue;
			if (f->in_set[p] == e) {
				*via = x;
				return 0;
			}
			f->seen[p] = e;
			push(f, p);
		}
	}
	return 1;
}

/* A constant scalar: the kernel writes it as a literal. */
static bool literal(const struct rl_graph *g, uint32_t v)
{
	return rl_value_is_const(g, v) && g->values[v].data &&
	       rl_shape_numel(&g->values[v].shape) == 1;
}

static double value_bytes(const struct rl_graph *g, uint32_t v)
{
	int64_t ne = rl_shape_numel(&g->values[v].shape);
	return ne > 0 ? (double)ne * (double)rl_dtype_size(g->values[v].dtype) : 0.0;
}

/* A node as the cost model counts it unfused (ir/cost.c: every input read
 * once, every output written once; views move nothing). */
static void node_counts(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	if (rl_count_node(g, node, c))
		return;
	/* not countable (it never happens for the static shapes fusion needs):
	 * the baseline rule without FLOPs */
	const struct rl_node *n = &g->nodes[node];
	memset(c, 0, sizeof(*c));
	for (int q = 0; q < n->nin; q++)
		if (n->in[q] != RL_NONE)
			c->bytes_read += value_bytes(g, n->in[q]);
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE)
			c->bytes_write += value_bytes(g, n->out[o]);
}

/*
 * The set's interface: external tensors read (literals excepted; the
 * anchor's inputs are all read), outputs written (values used outside or
 * graph outputs), and their bytes.
 */
struct iface {
	uint32_t nin, nout, ninternal;
	double rd, wr;
	uint32_t out1; /* the first output */
	bool same_dtype_out[RL_DT_COUNT_]; /* some output has this dtype */
};

static void interface(struct fuse *f, const uint32_t *nodes, uint32_t n, uint32_t anchor,
                      struct iface *it)
{
	const struct rl_graph *g = f->g;
	uint32_t e = mark_set(f, nodes, n);
	if (anchor != RL_NONE)
		f->in_set[anchor] = e;
	uint32_t ve = ++f->epoch;
	memset(it, 0, sizeof(*it));
	it->out1 = RL_NONE;
	for (uint32_t j = 0; j <= n; j++) {
		uint32_t node = j < n ? nodes[j] : anchor;
		if (node == RL_NONE)
			continue;
		const struct rl_node *nd = &g->nodes[node];
		for (int q = 0; q < nd->nin; q++) {
			uint32_t v = nd->in[q];
			if (v == RL_NONE || f->vmark[v] == ve || (nd->op == RL_OP_CastLike && q == 1))
				continue;
			uint32_t p = g->values[v].producer;
			if (p != RL_NONE && f->in_set[p] == e)
				continue;
			if (node != anchor && literal(g, v))
				continue;
			f->vmark[v] = ve;
			it->nin += node != anchor;
			it->rd += value_bytes(g, v);
		}
		uint32_t y = nd->out[0];
		const struct rl_value *yv = &g->values[y];
		bool ext = (yv->flags & RL_VAL_OUTPUT) != 0;
		for (uint32_t u = 0; u < yv->nuses && !ext; u++)
			ext = f->in_set[yv->uses[u]] != e;
		if (ext) {
			if (it->out1 == RL_NONE)
				it->out1 = y;
			if (yv->dtype < RL_DT_COUNT_)
				it->same_dtype_out[yv->dtype] = true;
			it->nout++;
			it->wr += value_bytes(g, y);
		} else {
			it->ninternal++;
		}
	}
}

/* ---- pricing ------------------------------------------------------------ */

/* Predicted seconds of one kernel with counts c (ir/cost.c); -1 without a
 * machine. */
static double price(const struct rl_machine *m, const struct rl_counts *c, enum rl_prec prec)
{
	if (!m || m->nlevels < 1)
		return -1;
	struct rl_cost k;
	memset(&k, 0, sizeof(k));
	rl_cost_price(m, c, prec, c->macs > 0, &k);
	return k.time_s;
}

/* ---- clusters ----------------------------------------------------------- */

static uint32_t cluster_new(struct fuse *f, uint32_t node)
{
	if (f->ncls == f->capcls) {
		f->capcls = f->capcls ? 2 * f->capcls : 64;
		f->cls = realloc(f->cls, f->capcls * sizeof(*f->cls));
		RL_ASSERT(f->cls);
	}
	struct cluster *c = &f->cls[f->ncls];
	memset(c, 0, sizeof(*c));
	c->anchor = RL_NONE;
	c->cap = 4;
	c->nodes = malloc(c->cap * sizeof(*c->nodes));
	RL_ASSERT(c->nodes);
	c->nodes[c->n++] = node;
	f->cl[node] = (int32_t)f->ncls;
	return f->ncls++;
}

/* Add node (later in g->order than every member) to cluster a. */
static void cluster_append(struct fuse *f, uint32_t a, uint32_t node)
{
	struct cluster *c = &f->cls[a];
	if (c->n == c->cap) {
		c->cap *= 2;
		c->nodes = realloc(c->nodes, c->cap * sizeof(*c->nodes));
		RL_ASSERT(c->nodes);
	}
	c->nodes[c->n++] = node;
	f->cl[node] = (int32_t)a;
}

/* Move every node of cluster b into a, keeping topological order. */
static void cluster_merge(struct fuse *f, uint32_t a, uint32_t b)
{
	struct cluster *ca = &f->cls[a], *cb = &f->cls[b];
	if (ca->n + cb->n > ca->cap) {
		ca->cap = 2 * (ca->n + cb->n);
		ca->nodes = realloc(ca->nodes, ca->cap * sizeof(*ca->nodes));
		RL_ASSERT(ca->nodes);
	}
	for (uint32_t j = 0; j < cb->n; j++) {
		uint32_t x = cb->nodes[j], k = ca->n++;
		while (k > 0 && f->pos[ca->nodes[k - 1]] > f->pos[x]) {
			ca->nodes[k] = ca->nodes[k - 1];
			k--;
		}
		ca->nodes[k] = x;
		f->cl[x] = (int32_t)a;
	}
	cb->n = 0;
	cb->dead = true;
}

/* Node names "a,b,c" for a remark (the field truncates long lists). */
static void names(const struct rl_graph *g, const uint32_t *nodes, uint32_t n, uint32_t anchor,
                  char *b, size_t len)
{
	size_t p = 0;
	b[0] = 0;
	if (anchor != RL_NONE)
		p += (size_t)snprintf(b, len, "%s", g->nodes[anchor].name);
	for (uint32_t j = 0; j < n && p < len; j++)
		p += (size_t)snprintf(b + p, len - p, "%s%s", p ? "," : "", g->nodes[nodes[j]].name);
}

/* Would cluster set S (the clusters in ids[0..k) plus `node`) be a valid
 * group? Fills f->tmp with its nodes; reason set when not. */
static bool try_union(struct fuse *f, const uint32_t *ids, int k, uint32_t node,
                      const char **reason, uint32_t *via)
{
	f->ntmp = 0;
	for (int i = 0; i < k; i++)
		for (uint32_t j = 0; j < f->cls[ids[i]].n; j++)
			tmp_add(f, f->cls[ids[i]].nodes[j]);
	tmp_add(f, node);
	if (f->ntmp > FUSE_MAX_NODES) {
		*reason = "the group would exceed " STR(FUSE_MAX_NODES) " nodes";
		return false;
	}
	struct iface it;
	interface(f, f->tmp, f->ntmp, RL_NONE, &it);
	if (it.nin > FUSE_MAX_INPUTS) {
		*reason = "the group would read more than " STR(FUSE_MAX_INPUTS) " tensors";
		return false;
	}
	int c = convex(f, f->tmp, f->ntmp, via);
	if (c == 0) {
		*reason = "a path leaves the group and comes back";
		return false;
	}
	if (c < 0) {
		*reason = "the convexity check ran over its budget";
		return false;
	}
	return true;
}

/* Grow clusters in topological order. */
static void grow(struct fuse *f)
{
	struct rl_graph *g = f->g;
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t node = g->order[k];
		if (!f->cand[node])
			continue;
		const struct rl_node *n = &g->nodes[node];
		uint32_t ids[FUSE_MAX_INPUTS + 1];
		int nids = 0;
		for (int q = 0; q < n->nin; q++) {
			uint32_t v = n->in[q];
			uint32_t p = v == RL_NONE ? RL_NONE : g->values[v].producer;
			if (p == RL_NONE || !f->cand[p] || f->cl[p] < 0)
				continue;
			if (!rl_shape_equal(out_shape(g, p), out_shape(g, node))) {
				char sa[64], sb[64], nm[160];
				snprintf(nm, sizeof(nm), "%s,%s", g->nodes[p].name, n->name);
				rl_remark(f->ctx, "fuse", nm, "rejected", -1, -1, -1, -1,
				          "%s[%s] broadcasts into %s[%s]: different iteration spaces "
				          "(fusing would recompute the smaller one per element)",
				          g->nodes[p].name, rl_shape_str(out_shape(g, p), sa, sizeof(sa)),
				          n->name, rl_shape_str(out_shape(g, node), sb, sizeof(sb)));
				continue;
			}
			uint32_t c = (uint32_t)f->cl[p];
			bool dup = false;
			for (int i = 0; i < nids && !dup; i++)
				dup = ids[i] == c;
			if (!dup)
				ids[nids++] = c;
		}
		if (nids == 0) {
			cluster_new(f, node);
			continue;
		}
		const char *reason = NULL;
		uint32_t via = RL_NONE;
		if (try_union(f, ids, nids, node, &reason, &via)) {
			for (int i = 1; i < nids; i++)
				cluster_merge(f, ids[0], ids[i]);
			cluster_append(f, ids[0], node);
			continue;
		}
		/* not all of them: the first producer cluster that works alone */
		int pick = -1;
		const char *first_reason = reason;
		uint32_t first_via = via;
		for (int i = 0; i < nids && pick < 0 && nids > 1; i++)
			if (try_union(f, &ids[i], 1, node, &reason, &via))
				pick = i;
		char nm[160];
		snprintf(nm, sizeof(nm), "%s", n->name);
		if (pick >= 0) {
			cluster_append(f, ids[pick], node);
			const struct cluster *c = &f->cls[ids[pick]];
			rl_remark(f->ctx, "fuse", nm, "rejected", -1, -1, -1, -1,
			          "joins the group of %s only: with all %d producer groups %s%s%s",
			          g->nodes[c->nodes[0]].name, nids, first_reason,
			          first_via != RL_NONE ? " through " : "",
			          first_via != RL_NONE ? g->nodes[first_via].name : "");
		} else {
			cluster_new(f, node);
			rl_remark(f->ctx, "fuse", nm, "rejected", -1, -1, -1, -1,
			          "starts a new group: with its producers' groups %s%s%s", first_reason,
			          first_via != RL_NONE ? " through " : "",
			          first_via != RL_NONE ? g->nodes[first_via].name : "");
		}
	}
}

/* ---- epilogues ---------------------------------------------------------- */

/* Attach to cluster c the MatMul/Gemm/Conv that feeds it, when the product
 * has c's shape, is used by nothing outside c, and c writes some value of
 * the product's dtype (the product is computed into that buffer). */
static void attach(struct fuse *f, uint32_t ci)
{
	struct rl_graph *g = f->g;
	struct cluster *c = &f->cls[ci];
	struct iface it;
	uint32_t tried[FUSE_MAX_INPUTS];
	int ntried = 0;
	interface(f, c->nodes, c->n, RL_NONE, &it);
	for (uint32_t j = 0; j < c->n; j++) {
		const struct rl_node *n = &g->nodes[c->nodes[j]];
		for (int q = 0; q < n->nin; q++) {
			uint32_t v = n->in[q];
			uint32_t a = v == RL_NONE ? RL_NONE : g->values[v].producer;
			if (a == RL_NONE || f->cl[a] >= 0 || !anchor_op(g->nodes[a].op) ||
			    !runs_static(g, &g->nodes[a]))
				continue;
			bool again = false;
			for (int k = 0; k < ntried && !again; k++)
				again = tried[k] == a;
			if (again || ntried == FUSE_MAX_INPUTS)
				continue; /* each product is judged once */
			tried[ntried++] = a;
			const struct rl_value *y = &g->values[v];
			const char *why = NULL;
			char other[200] = "";
			if (y->flags & RL_VAL_OUTPUT)
				why = "its output is a graph output";
			for (uint32_t u = 0; u < y->nuses && !why; u++)
				if (f->cl[y->uses[u]] != (int32_t)ci) {
					snprintf(other, sizeof(other), "its output also feeds %s",
					         g->nodes[y->uses[u]].name);
					why = other;
				}
			if (!why && !rl_shape_equal(&y->shape, out_shape(g, c->nodes[0])))
				why = "its output broadcasts into the epilogue's shape";
			if (!why && !it.same_dtype_out[y->dtype])
				why = "no value the epilogue writes has the product's dtype";
			uint32_t via = RL_NONE;
			if (!why) {
				f->ntmp = 0;
				for (uint32_t k = 0; k < c->n; k++)
					tmp_add(f, c->nodes[k]);
				tmp_add(f, a);
				int cv = convex(f, f->tmp, f->ntmp, &via);
				if (cv == 0)
					why = "a path leaves the group and comes back";
				else if (cv < 0)
					why = "the convexity check ran over its budget";
			}
			if (!why) {
				c->anchor = a;
				return;
			}
			char nm[160];
			names(g, c->nodes, c->n, a, nm, sizeof(nm));
			rl_remark(f->ctx, "fuse", nm, "rejected", -1, -1, -1, -1,
			          "no epilogue fusion into %s %s: %s%s%s", rl_op_table[g->nodes[a].op].name,
			          g->nodes[a].name, why, via != RL_NONE ? " through " : "",
			          via != RL_NONE ? g->nodes[via].name : "");
		}
	}
}

/* ---- the decision ------------------------------------------------------- */

static const char *plural(uint32_t n)
{
	return n == 1 ? "" : "s";
}

struct totals {
	double bytes_before, bytes_after, time_before, time_after;
	uint32_t groups, epilogues, nodes;
};

static void decide(struct fuse *f, uint32_t ci, int32_t *next_id, struct totals *t)
{
	struct rl_graph *g = f->g;
	const struct rl_machine *m = f->ctx->machine;
	struct cluster *c = &f->cls[ci];
	struct rl_counts sum;
	double before = 0, tb = 0;
	memset(&sum, 0, sizeof(sum));
	for (uint32_t j = 0; j <= c->n; j++) {
		uint32_t node = j < c->n ? c->nodes[j] : c->anchor;
		if (node == RL_NONE)
			continue;
		struct rl_counts k;
		node_counts(g, node, &k);
		before += k.bytes_read + k.bytes_write;
		sum.flops += k.flops;
		sum.macs += k.macs;
		tb += price(m, &k, rl_node_prec(g, node));
	}
	/* fused: one kernel, one launch, external tensors only */
	struct iface it;
	interface(f, c->nodes, c->n, c->anchor, &it);
	double after = it.rd + it.wr;
	sum.bytes_read = it.rd;
	sum.bytes_write = it.wr;
	sum.access = RL_ACCESS_CONTIGUOUS;
	double ta = price(m, &sum, rl_node_prec(g, c->anchor != RL_NONE ? c->anchor : c->nodes[0]));
	if (ta < 0)
		tb = ta = -1;
	char nm[160], sb[64];
	names(g, c->nodes, c->n, c->anchor, nm, sizeof(nm));
	uint32_t total = c->n + (c->anchor != RL_NONE);
	if (after >= before) {
		rl_remark(f->ctx, "fuse", nm, "rejected", before, after, tb, ta,
		          "%u nodes in one kernel would move %.0f bytes, no fewer than the %.0f "
		          "they move apart", total, after, before);
		return;
	}
	int32_t id = (*next_id)++;
	for (uint32_t j = 0; j < c->n; j++)
		g->nodes[c->nodes[j]].group = id;
	if (c->anchor != RL_NONE)
		g->nodes[c->anchor].group = id;
	f->ctx->bytes_saved_fusion += before - after;
	t->groups++;
	t->nodes += total;
	t->bytes_after -= before - after;
	if (tb >= 0) {
		t->time_before += tb;
		t->time_after += ta;
	}
	if (c->anchor != RL_NONE) {
		t->epilogues++;
		rl_remark(f->ctx, "fuse", nm, "applied", before, after, tb, ta,
		          "epilogue of %s %s: %u elementwise op%s in its output loop, writing %u "
		          "tensor%s; %u intermediate tensor%s never reach memory (%.0f bytes saved)",
		          rl_op_table[g->nodes[c->anchor].op].name, g->nodes[c->anchor].name, c->n,
		          plural(c->n), it.nout, plural(it.nout), it.ninternal, plural(it.ninternal),
		          before - after);
	} else {
		rl_remark(f->ctx, "fuse", nm, "applied", before, after, tb, ta,
		          "%u elementwise ops in one pass over %s elements, writing %u tensor%s; %u "
		          "intermediate tensor%s never reach memory (%.0f bytes saved)", c->n,
		          rl_shape_str(out_shape(g, c->nodes[0]), sb, sizeof(sb)), it.nout,
		          plural(it.nout), it.ninternal, plural(it.ninternal), before - after);
	}
}

/* ---- the pass ----------------------------------------------------------- */

enum rl_status rl_pass_fuse(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	enum rl_status st;
	if (g->nnodes && !g->norder && (st = rl_graph_toposort(g)) != RL_OK)
		return st;
	struct fuse f = {.g = g, .ctx = ctx};
	size_t nn = (size_t)g->nnodes + 1, nv = (size_t)g->nvalues + 1;
	f.pos = malloc(nn * sizeof(*f.pos));
	f.cl = malloc(nn * sizeof(*f.cl));
	f.cand = calloc(nn, sizeof(*f.cand));
	f.in_set = calloc(nn, sizeof(*f.in_set));
	f.seen = calloc(nn, sizeof(*f.seen));
	f.vmark = calloc(nv, sizeof(*f.vmark));
	if (!f.pos || !f.cl || !f.cand || !f.in_set || !f.seen || !f.vmark) {
		st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "fuse: out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < g->nnodes; i++) {
		g->nodes[i].group = -1; /* the pass decides afresh */
		f.pos[i] = UINT32_MAX;
		f.cl[i] = -1;
	}
	struct totals t = {0};
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		f.pos[i] = k;
		f.cand[i] = elementwise_candidate(g, n);
		bool runs = false;
		for (int o = 0; o < n->nout && !runs; o++)
			runs = n->out[o] != RL_NONE && !rl_value_is_const(g, n->out[o]);
		struct rl_counts k;
		if (runs && rl_count_node(g, i, &k))
			t.bytes_before += k.bytes_read + k.bytes_write;
	}
	t.bytes_after = t.bytes_before;

	grow(&f);
	for (uint32_t c = 0; c < f.ncls; c++)
		if (!f.cls[c].dead && f.cls[c].n > 0)
			attach(&f, c);
	int32_t next_id = 0;
	for (uint32_t c = 0; c < f.ncls; c++)
		if (!f.cls[c].dead && (f.cls[c].n >= 2 || f.cls[c].anchor != RL_NONE))
			decide(&f, c, &next_id, &t);

	rl_remark(ctx, "fuse", NULL, "summary", t.bytes_before, t.bytes_after,
	          t.groups ? t.time_before : -1, t.groups ? t.time_after : -1,
	          "%u groups (%u with a MatMul/Gemm/Conv epilogue) replace %u kernels by %u; "
	          "graph bytes %.0f -> %.0f (%.0f saved); times are the fused groups' own",
	          t.groups, t.epilogues, t.nodes, t.groups, t.bytes_before, t.bytes_after,
	          t.bytes_before - t.bytes_after);
	st = RL_OK;
done:
	for (uint32_t c = 0; c < f.ncls; c++)
		free(f.cls[c].nodes);
	free(f.cls);
	free(f.tmp);
	free(f.stack);
	free(f.pos);
	free(f.cl);
	free(f.cand);
	free(f.in_set);
	free(f.seen);
	free(f.vmark);
	return st;
}
