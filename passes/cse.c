/*
 * cse.c - common-subexpression elimination by structural hash.
 *
 * Two nodes compute the same thing when they have the same operator,
 * domain and opset, the same attributes (names, kinds and values; tensor
 * attributes by content) and read the same values in the same slots. Nodes
 * are visited in topological order, so by the time a node is hashed its
 * inputs already name the surviving copies, and chains of duplicates
 * collapse in one walk. The key is XXH3-64 over op, opset, domain, input
 * value ids, output slots present, and the attributes in name order; equal
 * keys are confirmed field by field before anything is merged, so a hash
 * collision merges nothing.
 *
 * Merging: every use of the duplicate's outputs reads the first node's
 * outputs instead, and the duplicate goes. Nodes with several outputs merge
 * when all of them line up (same slots present). A duplicate whose output is
 * a graph output is left alone: merging would rename that output or make two
 * output names one value. Dropout is never merged (in training mode it
 * draws random masks); nodes with subgraph or unknown attributes are not
 * hashed at all.
 *
 * Precondition: g->order current (rl_graph_infer leaves it so; re-sorted
 * here when nodes were added or removed since). Leaves the graph compacted
 * and sorted.
 */
#include "pass.h"
#include "buf.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define PASS "cse"

/* ---- the key ------------------------------------------------------------ */

/* keys are built in an rl_buf (ir/buf.h) */
static void kput(struct rl_buf *b, const void *d, size_t n)
{
	rl_buf_append(b, d, n);
}

static void kput_i(struct rl_buf *b, int64_t v)
{
	kput(b, &v, sizeof(v));
}

static void kput_s(struct rl_buf *b, const char *s)
{
	kput(b, s ? s : "", strlen(s ? s : "") + 1);
}

static bool hashable(const struct rl_node *n)
{
	if (n->op == RL_OP_Dropout || n->op >= RL_OP_COUNT_)
		return false;
	bool any_out = false;
	for (int o = 0; o < n->nout; o++)
		any_out |= n->out[o] != RL_NONE;
	if (!any_out)
		return false;
	for (int a = 0; a < n->nattrs; a++)
		if (n->attrs[a].kind == RL_ATTR_GRAPH || n->attrs[a].kind == RL_ATTR_OTHER)
			return false;
	return true;
}

/* Attribute indices of n in name order (insertion sort: a handful each). */
static void attr_order(const struct rl_node *n, int *ord)
{
	for (int i = 0; i < n->nattrs; i++) {
		int j = i;
		while (j > 0 && strcmp(n->attrs[ord[j - 1]].name, n->attrs[i].name) > 0) {
			ord[j] = ord[j - 1];
			j--;
		}
		ord[j] = i;
	}
}

static void key_attr(const struct rl_graph *g, struct rl_buf *b, const struct rl_attr *a)
{
	kput_s(b, a->name);
	kput_i(b, a->kind);
	switch (a->kind) {
	case RL_ATTR_INT: kput_i(b, a->i); break;
	case RL_ATTR_FLOAT: kput(b, &a->f, sizeof(a->f)); break;
	case RL_ATTR_STRING: kput_i(b, a->n); kput(b, a->s, a->s ? (size_t)a->n : 0); break;
	case RL_ATTR_INTS: kput_i(b, a->n); kput(b, a->ints, (size_t)a->n * sizeof(int64_t)); break;
	case RL_ATTR_FLOATS: kput_i(b, a->n); kput(b, a->floats, (size_t)a->n * sizeof(double)); break;
	case RL_ATTR_STRINGS:
		kput_i(b, a->n);
		for (int i = 0; i < a->n; i++)
			kput_s(b, a->strs[i]);
		break;
	case RL_ATTR_TENSOR: {
		const struct rl_value *t = &g->values[a->tensor];
		kput_i(b, t->dtype);
		kput_i(b, t->shape.rank);
		for (int i = 0; i < t->shape.rank; i++)
			kput_i(b, t->shape.d[i].v);
		kput_i(b, (int64_t)XXH3_64bits(t->data, t->data ? t->nbytes : 0));
		break;
	}
	default: break;
	}
}

static uint64_t node_key(const struct rl_graph *g, const struct rl_node *n, struct rl_buf *b)
{
	int ord[64];
	b->len = 0;
	kput_i(b, n->op);
	kput_i(b, n->opset);
	kput_s(b, n->domain);
	kput_i(b, n->nin);
	for (int i = 0; i < n->nin; i++)
		kput_i(b, n->in[i] == RL_NONE ? -1 : (int64_t)n->in[i]);
	kput_i(b, n->nout);
	for (int o = 0; o < n->nout; o++)
		kput_i(b, n->out[o] != RL_NONE);
	kput_i(b, n->nattrs);
	if (n->nattrs <= 64) {
		attr_order(n, ord);
		for (int a = 0; a < n->nattrs; a++)
			key_attr(g, b, &n->attrs[ord[a]]);
	}
	return XXH3_64bits(b->s, b->len);
}

/* ---- exact comparison --------------------------------------------------- */

static bool attr_equal(const struct rl_graph *g, const struct rl_attr *a, const struct rl_attr *b)
{
	if (a->kind != b->kind || strcmp(a->name, b->name) != 0)
		return false;
	switch (a->kind) {
	case RL_ATTR_INT: return a->i == b->i;
	case RL_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof(a->f)) == 0;
	case RL_ATTR_STRING:
		return a->n == b->n && (a->n == 0 || memcmp(a->s, b->s, (size_t)a->n) == 0);
	case RL_ATTR_INTS:
		return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, (size_t)a->n * 8) == 0);
	case RL_ATTR_FLOATS:
		return a->n == b->n &&
		       (a->n == 0 || memcmp(a->floats, b->floats, (size_t)a->n * sizeof(double)) == 0);
	case RL_ATTR_STRINGS:
		if (a->n != b->n)
			return false;
		for (int i = 0; i < a->n; i++)
			if (strcmp(a->strs[i], b->strs[i]) != 0)
				return false;
		return true;
	case RL_ATTR_TENSOR: {
		const struct rl_value *x = &g->values[a->tensor], *y = &g->values[b->tensor];
		if (a->tensor == b->tensor)
			return true;
		return x->dtype == y->dtype && rl_shape_equal(&x->shape, &y->shape) &&
		       x->nbytes == y->nbytes && (x->flags & RL_VAL_CONST) &&
		       (y->flags & RL_VAL_CONST) &&
		       (x->nbytes == 0 || (x->data && y->data &&
		                           memcmp(x->data, y->data, x->nbytes) == 0));
	}
	default:
		return false;
	}
}

static bool node_equal(const struct rl_graph *g, const struct rl_node *a, const struct rl_node *b)
{
	if (a->op != b->op || a->opset != b->opset || a->nin != b->nin || a->nout != b->nout ||
	    a->nattrs != b->nattrs || strcmp(a->domain ? a->domain : "", b->domain ? b->domain : ""))
		return false;
	for (int i = 0; i < a->nin; i++)
		if (a->in[i] != b->in[i])
			return false;
	for (int o = 0; o < a->nout; o++) {
		if ((a->out[o] == RL_NONE) != (b->out[o] == RL_NONE))
			return false;
		if (a->out[o] != RL_NONE && g->values[a->out[o]].dtype != g->values[b->out[o]].dtype)
			return false;
	}
	for (int i = 0; i < a->nattrs; i++) {
		const struct rl_attr *x = &a->attrs[i], *y = NULL;
		for (int j = 0; j < b->nattrs && !y; j++)
			if (strcmp(b->attrs[j].name, x->name) == 0)
				y = &b->attrs[j];
		if (!y || !attr_equal(g, x, y))
			return false;
	}
	return true;
}

/* ---- the pass ----------------------------------------------------------- */

struct slot {
	uint64_t h;
	uint32_t node; /* node index + 1; 0 = empty */
};

/* g->order as rl_graph_infer left it, unless nodes were added or removed
 * since (then sort again): saves a sort per pass in the pipeline. */
enum rl_status rl_pass_cse(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	enum rl_status st = rl_pass_ensure_order(g);
	if (st != RL_OK)
		return st;
	uint32_t nv0 = g->nvalues;
	uint32_t cap = 16;
	while (cap < 2 * g->norder + 2)
		cap *= 2;
	struct slot *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory in cse");
	struct rl_buf kb = {0};
	uint32_t merged = 0;
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		if (n->dead || !hashable(n))
			continue;
		uint64_t h = node_key(g, n, &kb);
		uint32_t s = (uint32_t)h & (cap - 1), first = RL_NONE;
		for (; tab[s].node; s = (s + 1) & (cap - 1))
			if (tab[s].h == h && node_equal(g, &g->nodes[tab[s].node - 1], n)) {
				first = tab[s].node - 1;
				break;
			}
		if (first == RL_NONE) {
			tab[s].h = h;
			tab[s].node = i + 1;
			continue;
		}
		/* a duplicate: keep graph output names as they are */
		const char *outname = NULL;
		for (int o = 0; o < n->nout && !outname; o++)
			if (n->out[o] != RL_NONE && (g->values[n->out[o]].flags & RL_VAL_OUTPUT))
				outname = g->values[n->out[o]].name;
		if (outname) {
			rl_remark(ctx, PASS, n->name, "declined", -1, -1, -1, -1,
			          "same %s as '%s', but its output '%s' is a graph output",
			          rl_op_table[n->op].name, g->nodes[first].name, outname);
			continue;
		}
		double bytes = 0;
		for (int o = 0; o < n->nout; o++)
			if (n->out[o] != RL_NONE) {
				int64_t ne = rl_shape_numel(&g->values[n->out[o]].shape);
				bytes += ne < 0 ? 0 : (double)ne * (double)rl_dtype_size(g->values[n->out[o]].dtype);
			}
		rl_remark(ctx, PASS, n->name, "merged", 2 * bytes, bytes, -1, -1,
		          "same %s with the same inputs and attributes as '%s'; its uses now read "
		          "that node's output%s", rl_op_table[n->op].name, g->nodes[first].name,
		          n->nout > 1 ? "s" : "");
		for (int o = 0; o < g->nodes[i].nout; o++) {
			uint32_t from = g->nodes[i].out[o];
			if (from != RL_NONE)
				rl_graph_replace_uses(g, from, g->nodes[first].out[o]);
		}
		rl_graph_remove_node(g, i);
		merged++;
	}
	rl_buf_free(&kb);
	free(tab);
	if (merged)
		rl_remark(ctx, PASS, NULL, "summary", -1, -1, -1, -1, "%u duplicate node%s merged",
		          merged, merged == 1 ? "" : "s");
	return rl_pass_finish(g, nv0);
}
