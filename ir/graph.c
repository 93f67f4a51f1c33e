/*
 * graph.c - the graph container: arena, values, nodes, use lists, mutation,
 * topological order and the verifier.
 *
 * Design notes
 * - The arena is a list of 64 KiB chunks (bigger requests get their own
 *   chunk). Names, attributes and per-node index arrays come from it and are
 *   never freed individually: a pass that rewrites a node allocates fresh
 *   arrays, and the old ones die with the graph. That keeps mutation simple
 *   and the free a single walk.
 * - Use lists are small heap arrays per value (realloc'd), because they are
 *   the one thing passes edit constantly.
 * - The name index is an open-addressing hash table over value names, so the
 *   frontend resolves 100k-node models in linear time.
 */
#include "ir.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <xxhash.h>

/* ---- asserts ------------------------------------------------------------ */

_Noreturn void rl_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "rlopt: internal error: %s:%d: assertion '%s' failed\n",
	        file, line, expr);
	abort();
}

/* ---- arena -------------------------------------------------------------- */

#define RL_ARENA_CHUNK (64u * 1024u)

struct rl_chunk {
	struct rl_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct rl_arena {
	struct rl_chunk *head;
};

struct rl_mapping {
	struct rl_mapping *next;
	void *addr;
	size_t len;
};

void *rl_arena_alloc(struct rl_graph *g, size_t n)
{
	struct rl_arena *a = g->arena;
	n = (n + 15) & ~(size_t)15;
	if (!a->head || a->head->cap - a->head->used < n) {
		size_t cap = n > RL_ARENA_CHUNK ? n : RL_ARENA_CHUNK;
		struct rl_chunk *c = malloc(sizeof(*c) + cap);
		if (!c) {
			fprintf(stderr, "rlopt: out of memory\n");
			abort();
		}
		c->used = 0;
		c->cap = cap;
		/* a big one-off chunk goes behind the head so the head keeps
		 * serving small requests */
		if (a->head && n > RL_ARENA_CHUNK) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		void *p = (char *)c->data + c->used;
		c->used += n;
		memset(p, 0, n);
		return p;
	}
	void *p = (char *)a->head->data + a->head->used;
	a->head->used += n;
	memset(p, 0, n);
	return p;
}

char *rl_arena_strndup(struct rl_graph *g, const char *s, size_t n)
{
	char *d = rl_arena_alloc(g, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

char *rl_arena_strdup(struct rl_graph *g, const char *s)
{
	return rl_arena_strndup(g, s ? s : "", s ? strlen(s) : 0);
}

void *rl_graph_own(struct rl_graph *g, size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		return NULL;
	if (g->nowned == g->cap_owned) {
		g->cap_owned = g->cap_owned ? 2 * g->cap_owned : 16;
		g->owned = realloc(g->owned, g->cap_owned * sizeof(*g->owned));
		RL_ASSERT(g->owned);
	}
	g->owned[g->nowned++] = p;
	return p;
}

struct rl_cleanup {
	struct rl_cleanup *next;
	void (*fn)(void *);
	void *arg;
};

void rl_graph_add_cleanup(struct rl_graph *g, void (*fn)(void *), void *arg)
{
	struct rl_cleanup *c = malloc(sizeof(*c));
	RL_ASSERT(c);
	c->fn = fn;
	c->arg = arg;
	c->next = g->cleanups;
	g->cleanups = c;
}

void rl_graph_add_mapping(struct rl_graph *g, void *addr, size_t len)
{
	struct rl_mapping *m = malloc(sizeof(*m));
	RL_ASSERT(m);
	m->addr = addr;
	m->len = len;
	m->next = g->maps;
	g->maps = m;
}

/* ---- name index --------------------------------------------------------- */

struct rl_name_slot {
	uint32_t v1;   /* value index + 1; 0 = empty */
	uint32_t hash; /* low bits of the name's hash: most misses skip strcmp */
};

struct rl_name_index {
	struct rl_name_slot *slots;
	uint32_t cap; /* power of two */
	uint32_t count;
};

static uint32_t name_hash(const char *s)
{
	return (uint32_t)XXH3_64bits(s, strlen(s));
}

static void index_insert_h(struct rl_graph *g, uint32_t v, uint32_t hash);

static void index_grow(struct rl_graph *g)
{
	struct rl_name_index *ix = g->name_index;
	struct rl_name_slot *old = ix->slots;
	uint32_t oldcap = ix->cap;
	ix->cap = oldcap ? oldcap * 2 : 1024;
	ix->slots = calloc(ix->cap, sizeof(*ix->slots));
	RL_ASSERT(ix->slots);
	ix->count = 0;
	for (uint32_t i = 0; i < oldcap; i++)
		if (old[i].v1)
			index_insert_h(g, old[i].v1 - 1, old[i].hash);
	free(old);
}

static void index_insert_h(struct rl_graph *g, uint32_t v, uint32_t hash)
{
	struct rl_name_index *ix = g->name_index;
	if ((ix->count + 1) * 2 > ix->cap)
		index_grow(g);
	uint32_t mask = ix->cap - 1;
	uint32_t h = hash & mask;
	while (ix->slots[h].v1) {
		/* a later value with the same name replaces the earlier one */
		if (ix->slots[h].hash == hash &&
		    strcmp(g->values[ix->slots[h].v1 - 1].name, g->values[v].name) == 0) {
			ix->slots[h].v1 = v + 1;
			return;
		}
		h = (h + 1) & mask;
	}
	ix->slots[h].v1 = v + 1;
	ix->slots[h].hash = hash;
	ix->count++;
}

static void index_insert(struct rl_graph *g, uint32_t v)
{
	index_insert_h(g, v, name_hash(g->values[v].name));
}

uint32_t rl_graph_find_value(const struct rl_graph *g, const char *name)
{
	const struct rl_name_index *ix = g->name_index;
	if (!ix->cap || !name)
		return RL_NONE;
	uint32_t mask = ix->cap - 1;
	uint32_t hash = name_hash(name);
	uint32_t h = hash & mask;
	while (ix->slots[h].v1) {
		uint32_t v = ix->slots[h].v1 - 1;
		if (ix->slots[h].hash == hash && strcmp(g->values[v].name, name) == 0)
			return v;
		h = (h + 1) & mask;
	}
	return RL_NONE;
}

/* ---- graph lifetime ----------------------------------------------------- */

struct rl_graph *rl_graph_new(void)
{
	struct rl_graph *g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->arena = calloc(1, sizeof(*g->arena));
	g->name_index = calloc(1, sizeof(struct rl_name_index));
	if (!g->arena || !g->name_index) {
		free(g->arena);
		free(g->name_index);
		free(g);
		return NULL;
	}
	g->ir_version = 8;
	g->opset = 17;
	g->path = "<memory>";
	g->dir = ".";
	return g;
}

void rl_graph_free(struct rl_graph *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->nvalues; i++)
		free(g->values[i].uses);
	free(g->values);
	free(g->nodes);
	free(g->inputs);
	free(g->outputs);
	free(g->order);
	for (uint32_t i = 0; i < g->nowned; i++)
		free(g->owned[i]);
	free(g->owned);
	for (struct rl_cleanup *c = g->cleanups, *n; c; c = n) {
		n = c->next;
		c->fn(c->arg);
		free(c);
	}
	for (struct rl_mapping *m = g->maps, *n; m; m = n) {
		n = m->next;
		munmap(m->addr, m->len);
		free(m);
	}
	struct rl_name_index *ix = g->name_index;
	if (ix)
		free(ix->slots);
	free(ix);
	if (g->arena) {
		for (struct rl_chunk *c = g->arena->head, *n; c; c = n) {
			n = c->next;
			free(c);
		}
		free(g->arena);
	}
	free(g);
}

enum rl_status rl_graph_error(struct rl_graph *g, const struct rl_node *node,
                              enum rl_status st, const char *fmt, ...)
{
	char msg[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (node)
		snprintf(g->err, sizeof(g->err), "%s: node '%s' (%s): %s", g->path,
		         node->name, node->op < RL_OP_COUNT_ ? rl_op_table[node->op].name : "?",
		         msg);
	else
		snprintf(g->err, sizeof(g->err), "%s: %s", g->path, msg);
	/* one line: fold any newline a name smuggled in */
	for (char *p = g->err; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return st;
}

/* ---- values ------------------------------------------------------------- */

uint32_t rl_graph_add_value(struct rl_graph *g, const char *name,
                            enum rl_dtype dt, const struct rl_shape *shape)
{
	g->version++;
	if (g->nvalues == g->cap_values) {
		g->cap_values = g->cap_values ? 2 * g->cap_values : 256;
		g->values = realloc(g->values, g->cap_values * sizeof(*g->values));
		RL_ASSERT(g->values);
	}
	uint32_t v = g->nvalues++;
	struct rl_value *val = &g->values[v];
	memset(val, 0, sizeof(*val));
	if (!name || !*name) {
		char buf[32];
		snprintf(buf, sizeof(buf), "_v%u", v);
		val->name = rl_arena_strdup(g, buf);
	} else {
		val->name = rl_arena_strdup(g, name);
	}
	val->dtype = dt;
	if (shape)
		val->shape = *shape;
	else
		val->shape.rank = -1;
	val->producer = RL_NONE;
	index_insert(g, v);
	return v;
}

void rl_value_set_data(struct rl_graph *g, uint32_t v, const void *data,
                       size_t nbytes)
{
	g->version++;
	RL_ASSERT(v < g->nvalues);
	g->values[v].data = data;
	g->values[v].nbytes = nbytes;
	g->values[v].flags |= RL_VAL_CONST;
}

static void add_use(struct rl_graph *g, uint32_t v, uint32_t node)
{
	struct rl_value *val = &g->values[v];
	if (val->nuses == val->cap_uses) {
		val->cap_uses = val->cap_uses ? 2 * val->cap_uses : 2;
		val->uses = realloc(val->uses, val->cap_uses * sizeof(*val->uses));
		RL_ASSERT(val->uses);
	}
	val->uses[val->nuses++] = node;
}

static void drop_use(struct rl_graph *g, uint32_t v, uint32_t node)
{
	struct rl_value *val = &g->values[v];
	for (uint32_t i = 0; i < val->nuses; i++)
		if (val->uses[i] == node) {
			val->uses[i] = val->uses[--val->nuses];
			return;
		}
}

/* ---- nodes -------------------------------------------------------------- */

uint32_t rl_graph_add_node(struct rl_graph *g, enum rl_op op, const char *name,
                           const uint32_t *in, int nin, const uint32_t *out,
                           int nout)
{
	g->version++;
	if (g->nnodes == g->cap_nodes) {
		g->cap_nodes = g->cap_nodes ? 2 * g->cap_nodes : 256;
		g->nodes = realloc(g->nodes, g->cap_nodes * sizeof(*g->nodes));
		RL_ASSERT(g->nodes);
	}
	uint32_t id = g->nnodes++;
	struct rl_node *n = &g->nodes[id];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->group = -1;
	n->opset = g->opset;
	n->domain = "";
	if (name && *name) {
		n->name = rl_arena_strdup(g, name);
	} else {
		char buf[64];
		snprintf(buf, sizeof(buf), "%s_%u",
		         op < RL_OP_COUNT_ ? rl_op_table[op].name : "node", id);
		n->name = rl_arena_strdup(g, buf);
	}
	n->nin = nin;
	n->nout = nout;
	n->in = rl_arena_alloc(g, (size_t)(nin ? nin : 1) * sizeof(uint32_t));
	n->out = rl_arena_alloc(g, (size_t)(nout ? nout : 1) * sizeof(uint32_t));
	for (int i = 0; i < nin; i++) {
		n->in[i] = in[i];
		if (in[i] != RL_NONE)
			add_use(g, in[i], id);
	}
	for (int i = 0; i < nout; i++) {
		n->out[i] = out[i];
		if (out[i] != RL_NONE)
			g->values[out[i]].producer = id;
	}
	return id;
}

void rl_node_set_input(struct rl_graph *g, uint32_t node, int slot, uint32_t v)
{
	g->version++;
	struct rl_node *n = &g->nodes[node];
	RL_ASSERT(slot >= 0 && slot < n->nin);
	if (n->in[slot] != RL_NONE)
		drop_use(g, n->in[slot], node);
	n->in[slot] = v;
	if (v != RL_NONE)
		add_use(g, v, node);
}

void rl_graph_replace_uses(struct rl_graph *g, uint32_t from, uint32_t to)
{
	g->version++;
	if (from == to)
		return;
	struct rl_value *f = &g->values[from];
	while (f->nuses) {
		uint32_t node = f->uses[f->nuses - 1];
		struct rl_node *n = &g->nodes[node];
		for (int i = 0; i < n->nin; i++)
			if (n->in[i] == from) {
				rl_node_set_input(g, node, i, to);
				break;
			}
		f = &g->values[from];
	}
	for (uint32_t i = 0; i < g->noutputs; i++)
		if (g->outputs[i] == from) {
			g->outputs[i] = to;
			g->values[to].flags |= RL_VAL_OUTPUT;
			g->values[from].flags &= ~(unsigned)RL_VAL_OUTPUT;
		}
}

void rl_graph_remove_node(struct rl_graph *g, uint32_t node)
{
	g->version++;
	struct rl_node *n = &g->nodes[node];
	if (n->dead)
		return;
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != RL_NONE)
			drop_use(g, n->in[i], node);
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] != RL_NONE && g->values[n->out[i]].producer == node)
			g->values[n->out[i]].producer = RL_NONE;
	n->dead = true;
}

void rl_graph_compact(struct rl_graph *g)
{
	g->version++;
	uint32_t *nmap = malloc((g->nnodes + 1) * sizeof(*nmap));
	uint32_t *vmap = malloc((g->nvalues + 1) * sizeof(*vmap));
	bool *keep = calloc(g->nvalues + 1, 1);
	RL_ASSERT(nmap && vmap && keep);
	for (uint32_t i = 0; i < g->ninputs; i++)
		keep[g->inputs[i]] = true;
	for (uint32_t i = 0; i < g->noutputs; i++)
		keep[g->outputs[i]] = true;
	uint32_t nn = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		struct rl_node *n = &g->nodes[i];
		if (n->dead) {
			nmap[i] = RL_NONE;
			continue;
		}
		for (int k = 0; k < n->nin; k++)
			if (n->in[k] != RL_NONE)
				keep[n->in[k]] = true;
		for (int k = 0; k < n->nout; k++)
			if (n->out[k] != RL_NONE)
				keep[n->out[k]] = true;
		for (int k = 0; k < n->nattrs; k++)
			if (n->attrs[k].kind == RL_ATTR_TENSOR)
				keep[n->attrs[k].tensor] = true;
		nmap[i] = nn++;
	}
	uint32_t nv = 0;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		if (keep[v]) {
			vmap[v] = nv++;
		} else {
			vmap[v] = RL_NONE;
			free(g->values[v].uses);
		}
	}
	/* move values */
	for (uint32_t v = 0; v < g->nvalues; v++) {
		if (vmap[v] == RL_NONE)
			continue;
		struct rl_value val = g->values[v];
		val.producer = val.producer == RL_NONE ? RL_NONE : nmap[val.producer];
		uint32_t k = 0;
		for (uint32_t u = 0; u < val.nuses; u++)
			if (nmap[val.uses[u]] != RL_NONE)
				val.uses[k++] = nmap[val.uses[u]];
		val.nuses = k;
		g->values[vmap[v]] = val;
	}
	g->nvalues = nv;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		if (nmap[i] == RL_NONE)
			continue;
		struct rl_node n = g->nodes[i];
		for (int k = 0; k < n.nin; k++)
			if (n.in[k] != RL_NONE)
				n.in[k] = vmap[n.in[k]];
		for (int k = 0; k < n.nout; k++)
			if (n.out[k] != RL_NONE)
				n.out[k] = vmap[n.out[k]];
		for (int k = 0; k < n.nattrs; k++)
			if (n.attrs[k].kind == RL_ATTR_TENSOR)
				n.attrs[k].tensor = vmap[n.attrs[k].tensor];
		g->nodes[nmap[i]] = n;
	}
	g->nnodes = nn;
	for (uint32_t i = 0; i < g->ninputs; i++)
		g->inputs[i] = vmap[g->inputs[i]];
	for (uint32_t i = 0; i < g->noutputs; i++)
		g->outputs[i] = vmap[g->outputs[i]];
	/* rebuild the name index */
	struct rl_name_index *ix = g->name_index;
	free(ix->slots);
	ix->slots = NULL;
	ix->cap = ix->count = 0;
	for (uint32_t v = 0; v < g->nvalues; v++)
		index_insert(g, v);
	free(nmap);
	free(vmap);
	free(keep);
	g->norder = 0;
}

/* ---- topological order -------------------------------------------------- */

enum rl_status rl_graph_toposort(struct rl_graph *g)
{
	g->version++;
	/* Kahn's algorithm over live nodes; ties keep model order, so a model
	 * already in order comes out unchanged (deterministic output). */
	uint32_t *indeg = calloc(g->nnodes + 1, sizeof(*indeg));
	uint32_t *queue = malloc((g->nnodes + 1) * sizeof(*queue));
	free(g->order);
	g->order = malloc((g->nnodes + 1) * sizeof(*g->order));
	RL_ASSERT(indeg && queue && g->order);
	uint32_t live = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		struct rl_node *n = &g->nodes[i];
		if (n->dead)
			continue;
		live++;
		for (int k = 0; k < n->nin; k++) {
			uint32_t v = n->in[k];
			if (v != RL_NONE && g->values[v].producer != RL_NONE &&
			    !g->nodes[g->values[v].producer].dead)
				indeg[i]++;
		}
	}
	/* a min-heap on node index: among ready nodes the earliest in the
	 * model goes first, so a model already in order comes out unchanged
	 * and any other comes out the same way every time */
	uint32_t qt = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && indeg[i] == 0)
			queue[qt++] = i; /* ascending: already a valid heap */
	uint32_t no = 0;
	while (qt) {
		uint32_t i = queue[0];
		/* pop */
		queue[0] = queue[--qt];
		for (uint32_t p = 0;;) {
			uint32_t l = 2 * p + 1, r = l + 1, m = p;
			if (l < qt && queue[l] < queue[m])
				m = l;
			if (r < qt && queue[r] < queue[m])
				m = r;
			if (m == p)
				break;
			uint32_t t = queue[p];
			queue[p] = queue[m];
			queue[m] = t;
			p = m;
		}
		g->order[no++] = i;
		struct rl_node *n = &g->nodes[i];
		for (int k = 0; k < n->nout; k++) {
			uint32_t v = n->out[k];
			if (v == RL_NONE)
				continue;
			struct rl_value *val = &g->values[v];
			for (uint32_t u = 0; u < val->nuses; u++) {
				uint32_t c = val->uses[u];
				if (g->nodes[c].dead)
					continue;
				if (--indeg[c] == 0) {
					/* push */
					uint32_t p = qt++;
					queue[p] = c;
					while (p && queue[(p - 1) / 2] > queue[p]) {
						uint32_t t = queue[p];
						queue[p] = queue[(p - 1) / 2];
						queue[(p - 1) / 2] = t;
						p = (p - 1) / 2;
					}
				}
			}
		}
	}
	g->norder = no;
	enum rl_status st = RL_OK;
	if (no != live) {
		uint32_t bad = RL_NONE;
		for (uint32_t i = 0; i < g->nnodes; i++)
			if (!g->nodes[i].dead && indeg[i] != 0) {
				bad = i;
				break;
			}
		st = rl_graph_error(g, bad == RL_NONE ? NULL : &g->nodes[bad],
		                    RL_ERR_INVALID,
		                    "the graph has a cycle through this node");
	}
	free(indeg);
	free(queue);
	return st;
}

/* ---- verifier ----------------------------------------------------------- */

enum rl_status rl_graph_verify(struct rl_graph *g)
{
	for (uint32_t i = 0; i < g->nnodes; i++) {
		struct rl_node *n = &g->nodes[i];
		if (n->dead)
			continue;
		if (n->op >= RL_OP_COUNT_)
			return rl_graph_error(g, n, RL_ERR_INVALID, "bad operator id");
		const struct rl_op_info *oi = &rl_op_table[n->op];
		if (n->nin < oi->in_min || (oi->in_max >= 0 && n->nin > oi->in_max))
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "has %d inputs, %s takes %d to %d", n->nin,
			                      oi->name, oi->in_min, oi->in_max);
		if (n->nout < oi->out_min || (oi->out_max >= 0 && n->nout > oi->out_max))
			return rl_graph_error(g, n, RL_ERR_INVALID,
			                      "has %d outputs, %s gives %d to %d", n->nout,
			                      oi->name, oi->out_min, oi->out_max);
		for (int k = 0; k < n->nin; k++) {
			uint32_t v = n->in[k];
			if (v == RL_NONE)
				continue;
			if (v >= g->nvalues)
				return rl_graph_error(g, n, RL_ERR_INVALID, "input %d out of range", k);
			struct rl_value *val = &g->values[v];
			if (val->producer == RL_NONE && !(val->flags & (RL_VAL_INPUT | RL_VAL_CONST)))
				return rl_graph_error(g, n, RL_ERR_INVALID,
				                      "input '%s' is not produced by any node, "
				                      "graph input or initializer", val->name);
			if (val->dtype == RL_DT_UNDEFINED)
				return rl_graph_error(g, n, RL_ERR_INVALID,
				                      "input '%s' has no dtype", val->name);
		}
		for (int k = 0; k < n->nout; k++) {
			uint32_t v = n->out[k];
			if (v == RL_NONE)
				continue;
			if (v >= g->nvalues)
				return rl_graph_error(g, n, RL_ERR_INVALID, "output %d out of range", k);
			if (g->values[v].producer != i)
				return rl_graph_error(g, n, RL_ERR_INVALID,
				                      "output '%s' is produced by another node too",
				                      g->values[v].name);
		}
	}
	/* use lists, in linear time: the input slots that read a value must
	 * number exactly its use entries, and each use entry must name a live
	 * node that reads it (a constant shared by 100k nodes stays cheap) */
	uint32_t *slots = calloc(g->nvalues + 1, sizeof(*slots));
	RL_ASSERT(slots);
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const struct rl_node *n = &g->nodes[i];
		for (int k = 0; !n->dead && k < n->nin; k++)
			if (n->in[k] != RL_NONE)
				slots[n->in[k]]++;
	}
	for (uint32_t v = 0; v < g->nvalues; v++) {
		struct rl_value *val = &g->values[v];
		for (uint32_t u = 0; u < val->nuses; u++) {
			uint32_t c = val->uses[u];
			bool reads = c < g->nnodes && !g->nodes[c].dead;
			for (int k = 0; reads && k < g->nodes[c].nin; k++)
				if (g->nodes[c].in[k] == v)
					goto found;
			free(slots);
			return rl_graph_error(g, c < g->nnodes ? &g->nodes[c] : NULL, RL_ERR_INVALID,
			                      "value '%s' lists a use by a node that is dead, "
			                      "missing or does not read it", val->name);
		found:;
		}
		if (slots[v] != val->nuses) {
			uint32_t nslots = slots[v];
			free(slots);
			return rl_graph_error(g, NULL, RL_ERR_INVALID,
			                      "value '%s' is read by %u input slots but lists %u uses",
			                      val->name, nslots, val->nuses);
		}
		if (val->flags & RL_VAL_CONST) {
			int64_t ne = rl_shape_numel(&val->shape);
			size_t es = rl_dtype_size(val->dtype);
			if (ne < 0 || (es && (size_t)ne * es != val->nbytes))
				return free(slots), rl_graph_error(g, NULL, RL_ERR_INVALID,
				                      "constant '%s' holds %zu bytes, its shape "
				                      "needs %lld", val->name, val->nbytes,
				                      (long long)(ne < 0 ? -1 : ne * (int64_t)es));
		}
		if (val->shape.rank > RL_MAX_RANK)
			return free(slots), rl_graph_error(g, NULL, RL_ERR_INVALID, "value '%s' has rank %d",
			                      val->name, val->shape.rank);
		for (int d = 0; d < val->shape.rank; d++)
			if (val->shape.d[d].v < 0 && !val->shape.d[d].sym)
				return free(slots), rl_graph_error(g, NULL, RL_ERR_SHAPE,
				                      "value '%s' has a negative dimension",
				                      val->name);
	}
	free(slots);
	for (uint32_t i = 0; i < g->noutputs; i++) {
		struct rl_value *val = &g->values[g->outputs[i]];
		if (val->producer == RL_NONE && !(val->flags & (RL_VAL_INPUT | RL_VAL_CONST)))
			return rl_graph_error(g, NULL, RL_ERR_INVALID,
			                      "graph output '%s' is not produced by any node",
			                      val->name);
	}
	return rl_graph_toposort(g);
}

/* ---- attributes --------------------------------------------------------- */

const struct rl_attr *rl_node_attr(const struct rl_node *n, const char *name)
{
	for (int i = 0; i < n->nattrs; i++)
		if (strcmp(n->attrs[i].name, name) == 0)
			return &n->attrs[i];
	return NULL;
}

int64_t rl_node_attr_int(const struct rl_node *n, const char *name, int64_t def)
{
	const struct rl_attr *a = rl_node_attr(n, name);
	if (!a)
		return def;
	if (a->kind == RL_ATTR_INT)
		return a->i;
	if (a->kind == RL_ATTR_FLOAT)
		return (int64_t)a->f;
	return def;
}

double rl_node_attr_float(const struct rl_node *n, const char *name, double def)
{
	const struct rl_attr *a = rl_node_attr(n, name);
	if (!a)
		return def;
	if (a->kind == RL_ATTR_FLOAT)
		return a->f;
	if (a->kind == RL_ATTR_INT)
		return (double)a->i;
	return def;
}

const char *rl_node_attr_str(const struct rl_node *n, const char *name,
                             const char *def)
{
	const struct rl_attr *a = rl_node_attr(n, name);
	return a && a->kind == RL_ATTR_STRING ? a->s : def;
}

int rl_node_attr_ints(const struct rl_node *n, const char *name,
                      const int64_t **out)
{
	const struct rl_attr *a = rl_node_attr(n, name);
	if (!a || a->kind != RL_ATTR_INTS)
		return -1;
	*out = a->ints;
	return a->n;
}

struct rl_attr *rl_node_add_attr(struct rl_graph *g, uint32_t node,
                                 const char *name, enum rl_attr_kind kind)
{
	g->version++;
	struct rl_node *n = &g->nodes[node];
	struct rl_attr *na = rl_arena_alloc(g, (size_t)(n->nattrs + 1) * sizeof(*na));
	if (n->nattrs)
		memcpy(na, n->attrs, (size_t)n->nattrs * sizeof(*na));
	n = &g->nodes[node];
	n->attrs = na;
	struct rl_attr *a = &na[n->nattrs++];
	a->name = rl_arena_strdup(g, name);
	a->kind = kind;
	return a;
}

/* ---- constant data ------------------------------------------------------ */

static int64_t elem_int(const void *data, enum rl_dtype dt, int64_t i)
{
	switch (dt) {
	case RL_DT_INT64: return ((const int64_t *)data)[i];
	case RL_DT_INT32: return ((const int32_t *)data)[i];
	case RL_DT_INT16: return ((const int16_t *)data)[i];
	case RL_DT_INT8: return ((const int8_t *)data)[i];
	case RL_DT_UINT8: return ((const uint8_t *)data)[i];
	case RL_DT_BOOL: return ((const uint8_t *)data)[i] != 0;
	case RL_DT_UINT16: return ((const uint16_t *)data)[i];
	case RL_DT_UINT32: return ((const uint32_t *)data)[i];
	case RL_DT_UINT64: return (int64_t)((const uint64_t *)data)[i];
	case RL_DT_FLOAT: return (int64_t)((const float *)data)[i];
	case RL_DT_DOUBLE: return (int64_t)((const double *)data)[i];
	case RL_DT_FLOAT16: return (int64_t)rl_half_to_float(((const uint16_t *)data)[i]);
	case RL_DT_BFLOAT16: return (int64_t)rl_bf16_to_float(((const uint16_t *)data)[i]);
	default:
		if (rl_dtype_is_lowp(dt)) {
			double x = rl_lowp_to_double(dt, ((const uint8_t *)data)[i]);
			return fabs(x) < 9.2e18 ? (int64_t)x : 0;
		}
		return 0;
	}
}

int64_t rl_value_get_int(const struct rl_graph *g, uint32_t v, int64_t i)
{
	const struct rl_value *val = &g->values[v];
	RL_ASSERT(val->flags & RL_VAL_CONST);
	return elem_int(val->data, val->dtype, i);
}

double rl_value_get_float(const struct rl_graph *g, uint32_t v, int64_t i)
{
	const struct rl_value *val = &g->values[v];
	RL_ASSERT(val->flags & RL_VAL_CONST);
	switch (val->dtype) {
	case RL_DT_FLOAT: return ((const float *)val->data)[i];
	case RL_DT_DOUBLE: return ((const double *)val->data)[i];
	case RL_DT_FLOAT16: return rl_half_to_float(((const uint16_t *)val->data)[i]);
	case RL_DT_BFLOAT16: return rl_bf16_to_float(((const uint16_t *)val->data)[i]);
	case RL_DT_UINT64: return (double)((const uint64_t *)val->data)[i];
	default:
		if (rl_dtype_is_lowp(val->dtype))
			return rl_lowp_to_double(val->dtype, ((const uint8_t *)val->data)[i]);
		return (double)elem_int(val->data, val->dtype, i);
	}
}

int rl_value_get_ints(const struct rl_graph *g, uint32_t v, int64_t *out,
                      int max)
{
	if (!rl_value_is_const(g, v))
		return -1;
	const struct rl_value *val = &g->values[v];
	if (!rl_dtype_is_int(val->dtype))
		return -1;
	int64_t ne = rl_shape_numel(&val->shape);
	if (ne < 0 || ne > max || val->shape.rank > 1)
		return -1;
	for (int64_t i = 0; i < ne; i++)
		out[i] = elem_int(val->data, val->dtype, i);
	return (int)ne;
}

/* ---- dump --------------------------------------------------------------- */

void rl_graph_dump(const struct rl_graph *g, FILE *f)
{
	char buf[128];
	fprintf(f, "graph %s (opset %d, %u nodes, %u values)\n",
	        g->graph_name ? g->graph_name : "", g->opset, g->nnodes, g->nvalues);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const struct rl_value *v = &g->values[g->inputs[i]];
		fprintf(f, "  input  %%%u %s: %s[%s]\n", g->inputs[i], v->name,
		        rl_dtype_name(v->dtype), rl_shape_str(&v->shape, buf, sizeof(buf)));
	}
	uint32_t n = g->norder ? g->norder : g->nnodes;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = g->norder ? g->order[k] : k;
		const struct rl_node *nd = &g->nodes[i];
		if (nd->dead)
			continue;
		fprintf(f, "  ");
		for (int o = 0; o < nd->nout; o++) {
			if (nd->out[o] == RL_NONE) {
				fprintf(f, "%s_", o ? ", " : "");
				continue;
			}
			const struct rl_value *v = &g->values[nd->out[o]];
			fprintf(f, "%s%%%u:%s[%s]", o ? ", " : "", nd->out[o],
			        rl_dtype_name(v->dtype), rl_shape_str(&v->shape, buf, sizeof(buf)));
		}
		fprintf(f, " = %s(", rl_op_table[nd->op].name);
		for (int k2 = 0; k2 < nd->nin; k2++) {
			if (nd->in[k2] == RL_NONE)
				fprintf(f, "%s_", k2 ? ", " : "");
			else
				fprintf(f, "%s%%%u%s", k2 ? ", " : "", nd->in[k2],
				        rl_value_is_const(g, nd->in[k2]) ? "c" : "");
		}
		fprintf(f, ")  # %s\n", nd->name);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = &g->values[g->outputs[i]];
		fprintf(f, "  output %%%u %s: %s[%s]\n", g->outputs[i], v->name,
		        rl_dtype_name(v->dtype), rl_shape_str(&v->shape, buf, sizeof(buf)));
	}
}
