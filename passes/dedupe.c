/*
 * dedupe.c - identical initializers become one.
 *
 * Exporters repeat weights: a tied embedding written twice, the same
 * constant scalar (0.5, 1, epsilon) once per layer, a mask per head. Each
 * initializer that some node reads is keyed by XXH3-128 over its dtype,
 * shape and bytes; a key seen before is confirmed with memcmp (a 128-bit
 * collision merges nothing), and then every node that read the duplicate
 * reads the first one (lowest value index, so the result is deterministic).
 * Tensors over 8 KiB are first keyed by their first and last 4 KiB only, and
 * hashed in full when another tensor agrees there: a model's distinct
 * weights, mmap'd from an external-data file, are not read end to end.
 *
 * A duplicate that is also a graph output keeps its name: its node uses
 * are redirected but the value stays, so nothing is saved for it and only
 * the redirected uses are counted. Attribute tensors (Constant's value) are
 * not touched; fold turns those into initializers first.
 *
 * The remark for each merge gives the bytes; ctx->bytes_saved_dedupe adds
 * up the bytes that leave the model.
 *
 * Precondition: none. Leaves the graph compacted and sorted. Dedupe runs
 * before CSE, so that nodes reading two copies of one weight become
 * identical and CSE can merge them.
 */
#include "pass.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define PASS "dedupe"

/* Bytes read at each end of a tensor for the cheap key. */
#define EDGE 4096

struct slot {
	XXH128_hash_t key;  /* dtype, shape, size and the first/last EDGE bytes */
	XXH128_hash_t full; /* XXH3-128 of dtype, shape and every byte, once known */
	bool have_full;
	uint32_t v;         /* value index + 1; 0 = empty */
};

static XXH64_hash_t header_seed(const struct rl_value *val)
{
	int64_t head[RL_MAX_RANK + 3];
	int nh = 0;
	head[nh++] = val->dtype;
	head[nh++] = (int64_t)val->nbytes;
	head[nh++] = val->shape.rank;
	for (int i = 0; i < val->shape.rank; i++)
		head[nh++] = val->shape.d[i].v;
	return XXH3_64bits(head, (size_t)nh * sizeof(head[0]));
}

/* A cheap key, so that big weights with no look-alike are never read in
 * full (an mmap'd external file stays mostly unread). */
static XXH128_hash_t cheap_key(const struct rl_value *val)
{
	XXH64_hash_t seed = header_seed(val);
	if (val->nbytes <= 2 * EDGE)
		return XXH3_128bits_withSeed(val->data, val->nbytes, seed);
	XXH128_hash_t a = XXH3_128bits_withSeed(val->data, EDGE, seed);
	return XXH3_128bits_withSeed((const char *)val->data + val->nbytes - EDGE, EDGE,
	                             a.low64 ^ a.high64);
}

static XXH128_hash_t content_hash(const struct rl_value *val)
{
	return XXH3_128bits_withSeed(val->data, val->nbytes, header_seed(val));
}

static bool same_content(const struct rl_value *a, const struct rl_value *b)
{
	return a->dtype == b->dtype && rl_shape_equal(&a->shape, &b->shape) &&
	       a->nbytes == b->nbytes && (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0);
}

/* A mergeable initializer: constant, no producer, read by a node, its data
 * present and its shape static. */
static bool candidate(const struct rl_graph *g, uint32_t v)
{
	const struct rl_value *val = &g->values[v];
	return (val->flags & RL_VAL_CONST) && val->producer == RL_NONE && val->nuses > 0 &&
	       !(val->flags & RL_VAL_INPUT) && (val->data || val->nbytes == 0) &&
	       rl_shape_is_static(&val->shape) && rl_dtype_size(val->dtype) > 0;
}

enum rl_status rl_pass_dedupe(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	uint32_t cap = 16;
	while (cap < 2 * g->nvalues)
		cap *= 2;
	struct slot *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory in dedupe");
	uint32_t merged = 0;
	double saved = 0;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		if (!candidate(g, v))
			continue;
		const struct rl_value *val = &g->values[v];
		XXH128_hash_t key = cheap_key(val), full = {0, 0};
		bool have_full = val->nbytes <= 2 * EDGE;
		if (have_full)
			full = key; /* the cheap key already covers every byte */
		uint32_t k = (uint32_t)key.low64 & (cap - 1), first = RL_NONE;
		for (; tab[k].v; k = (k + 1) & (cap - 1)) {
			if (!XXH128_isEqual(tab[k].key, key))
				continue;
			/* same ends: now the full hash of both, then every byte */
			if (!tab[k].have_full) {
				tab[k].full = content_hash(&g->values[tab[k].v - 1]);
				tab[k].have_full = true;
			}
			if (!have_full) {
				full = content_hash(val);
				have_full = true;
			}
			if (XXH128_isEqual(tab[k].full, full) &&
			    same_content(&g->values[tab[k].v - 1], val)) {
				first = tab[k].v - 1;
				break;
			}
		}
		if (first == RL_NONE) {
			tab[k].key = key;
			tab[k].full = full;
			tab[k].have_full = have_full;
			tab[k].v = v + 1;
			continue;
		}
		/* redirect node uses only: a graph output keeps its own name */
		struct rl_value *dup = &g->values[v];
		uint32_t nuses = dup->nuses;
		bool out = dup->flags & RL_VAL_OUTPUT;
		while (g->values[v].nuses) {
			uint32_t node = g->values[v].uses[g->values[v].nuses - 1];
			struct rl_node *n = &g->nodes[node];
			for (int i = 0; i < n->nin; i++)
				if (n->in[i] == v) {
					rl_node_set_input(g, node, i, first);
					break;
				}
		}
		dup = &g->values[v];
		double b = out ? 0 : (double)dup->nbytes;
		char sb[64];
		rl_shape_str(&dup->shape, sb, sizeof(sb));
		rl_remark(ctx, PASS, dup->name, "merged", 2.0 * (double)dup->nbytes,
		          2.0 * (double)dup->nbytes - b, -1, -1,
		          "initializer '%s' (%s %s, %zu bytes) has the same content as '%s'; "
		          "its %u use%s now read '%s'%s", dup->name, rl_dtype_name(dup->dtype), sb,
		          dup->nbytes, g->values[first].name, nuses, nuses == 1 ? "" : "s",
		          g->values[first].name,
		          out ? " (kept as a graph output, so no bytes saved)" : "");
		merged++;
		saved += b;
	}
	free(tab);
	if (merged)
		rl_remark(ctx, PASS, NULL, "summary", -1, -1, -1, -1,
		          "%u duplicate initializer%s merged, %.0f bytes saved", merged,
		          merged == 1 ? "" : "s", saved);
	ctx->bytes_saved_dedupe += saved;
	if (!merged)
		return RL_OK;
	rl_graph_compact(g);
	return rl_graph_toposort(g);
}
