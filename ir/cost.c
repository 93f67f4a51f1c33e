/*
 * cost.c - pricing: per-family counts (the "cost" sections of ir/fam_*.c)
 * to predicted time on a machine profile. See cost.h for the model and the
 * FLOP conventions, cost_impl.h for what a family counter may assume.
 *
 * Two kinds of node cost nothing at run time and are priced at zero:
 * - nodes that move no bytes and do no arithmetic (views: Reshape, Flatten,
 *   Squeeze, Unsqueeze, Identity; Constant): the emitter aliases or embeds
 *   them, so no kernel runs and no launch latency is charged;
 * - nodes whose every output is already constant (evaluated at build time
 *   by ir/eval.c: shape arithmetic on static shapes): rl_cost_graph skips
 *   them, as the generated code does.
 */
#include "cost.h"

#include <math.h>
#include <string.h>

const char *rl_bound_name(enum rl_bound b)
{
	switch (b) {
	case RL_BOUND_MEMORY: return "memory";
	case RL_BOUND_COMPUTE: return "compute";
	case RL_BOUND_LATENCY: return "latency";
	}
	return "?";
}

typedef bool (*count_fn)(const struct rl_graph *, uint32_t, struct rl_counts *);
static const count_fn family_count[RL_FAM_COUNT_] = {
	[RL_FAM_ELEMWISE] = rl_count_elemwise, [RL_FAM_MATMUL] = rl_count_matmul,
	[RL_FAM_CONV] = rl_count_conv,         [RL_FAM_POOL] = rl_count_pool,
	[RL_FAM_NORM] = rl_count_norm,         [RL_FAM_REDUCE] = rl_count_reduce,
	[RL_FAM_SHAPE] = rl_count_shape,       [RL_FAM_CONST] = rl_count_const,
};
_Static_assert(RL_FAM_COUNT_ == 8, "family_count must list every family");

static double value_bytes(const struct rl_graph *g, uint32_t v)
{
	if (v == RL_NONE)
		return 0;
	int64_t n = rl_shape_numel(&g->values[v].shape);
	return n < 0 ? 0 : (double)n * (double)rl_dtype_size(g->values[v].dtype);
}

bool rl_count_node(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != RL_NONE && !rl_shape_is_static(&g->values[n->in[i]].shape))
			return false;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] != RL_NONE && !rl_shape_is_static(&g->values[n->out[i]].shape))
			return false;
	/* the unfused baseline: every input read once, every output written once */
	for (int i = 0; i < n->nin; i++) {
		double b = value_bytes(g, n->in[i]);
		c->bytes_read += b;
		if (n->in[i] != RL_NONE && rl_value_is_const(g, n->in[i]))
			c->weight_bytes += b;
	}
	for (int i = 0; i < n->nout; i++)
		c->bytes_write += value_bytes(g, n->out[i]);
	c->access = rl_op_table[n->op].flags & RL_OPF_GATHER ? RL_ACCESS_GATHER
	                                                      : RL_ACCESS_CONTIGUOUS;
	/* the family adds FLOPs/MACs and corrects bytes where the baseline
	 * rule does not fit (views move nothing, Shape reads no data, ...) */
	return family_count[rl_op_table[n->op].family](g, node, c);
}

enum rl_prec rl_node_prec(const struct rl_graph *g, uint32_t node)
{
	const struct rl_node *n = &g->nodes[node];
	enum rl_dtype dt = RL_DT_FLOAT;
	uint32_t v = n->nin ? n->in[0] : RL_NONE;
	if (v == RL_NONE && n->nout)
		v = n->out[0];
	if (v != RL_NONE)
		dt = g->values[v].dtype;
	switch (dt) {
	case RL_DT_DOUBLE: return RL_PREC_FP64;
	case RL_DT_FLOAT16: return RL_PREC_FP16;
	case RL_DT_BFLOAT16: return RL_PREC_BF16;
	case RL_DT_INT8: case RL_DT_UINT8: return RL_PREC_INT8;
	default: return RL_PREC_FP32;
	}
}

void rl_cost_price(const struct rl_machine *m, const struct rl_counts *c,
                   enum rl_prec prec, bool matrix, struct rl_cost *out)
{
	const struct rl_mem_level *dram = rl_machine_dram(m);
	double eff = c->access == RL_ACCESS_GATHER ? m->eff_gather
	           : c->access == RL_ACCESS_STRIDED ? m->eff_strided : m->eff_contiguous;
	if (eff <= 0)
		eff = 1;
	double peak = rl_machine_peak(m, prec, matrix);
	if (peak <= 0)
		peak = rl_machine_peak(m, RL_PREC_FP32, matrix);
	double wbw = dram->write_bw > 0 ? dram->write_bw : dram->read_bw;
	double t_mem = c->bytes_read / (dram->read_bw * eff) + c->bytes_write / (wbw * eff);
	double t_cmp = peak > 0 ? c->flops / peak : 0;
	double roof = t_mem > t_cmp ? t_mem : t_cmp;
	out->flops = c->flops;
	out->bytes = c->bytes_read + c->bytes_write;
	out->intensity = out->bytes > 0 ? c->flops / out->bytes : 0;
	if (c->flops <= 0 && out->bytes <= 0) {
		/* a view or an embedded constant: no kernel runs */
		out->time_s = 0;
		out->bound = RL_BOUND_MEMORY;
		return;
	}
	out->time_s = roof + m->launch_latency;
	if (m->launch_latency > roof)
		out->bound = RL_BOUND_LATENCY;
	else
		out->bound = t_cmp > t_mem ? RL_BOUND_COMPUTE : RL_BOUND_MEMORY;
}

/* Price counts c of node into its cost annotation. */
static void price_node(struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                       const struct rl_counts *c)
{
	/* products run on matrix units where the part has them */
	bool matrix = c->macs > 0;
	rl_cost_price(m, c, rl_node_prec(g, node), matrix, &g->nodes[node].cost);
}

bool rl_cost_node(struct rl_graph *g, uint32_t node, const struct rl_machine *m)
{
	struct rl_counts c;
	struct rl_node *n = &g->nodes[node];
	if (!rl_count_node(g, node, &c)) {
		memset(&n->cost, 0, sizeof(n->cost));
		return false;
	}
	price_node(g, node, m, &c);
	return true;
}

/* Every output already known at build time (ir/eval.c folded it). */
static bool built_at_compile_time(const struct rl_graph *g, const struct rl_node *n)
{
	bool any = false;
	for (int i = 0; i < n->nout; i++) {
		if (n->out[i] == RL_NONE)
			continue;
		if (!rl_value_is_const(g, n->out[i]))
			return false;
		any = true;
	}
	return any;
}

void rl_cost_graph(struct rl_graph *g, const struct rl_machine *m,
                   struct rl_cost_total *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		struct rl_node *n = &g->nodes[i];
		struct rl_counts c;
		if (n->dead)
			continue;
		if (built_at_compile_time(g, n) || !rl_count_node(g, i, &c)) {
			memset(&n->cost, 0, sizeof(n->cost));
			continue;
		}
		price_node(g, i, m, &c);
		const struct rl_cost *cs = &n->cost;
		t->flops += cs->flops;
		t->macs += c.macs;
		t->bytes += cs->bytes;
		t->time_s += cs->time_s;
		if (cs->time_s <= 0)
			continue; /* views: no kernel, not counted by bound */
		t->nodes++;
		switch ((enum rl_bound)cs->bound) {
		case RL_BOUND_MEMORY: t->memory++; t->time_memory += cs->time_s; break;
		case RL_BOUND_COMPUTE: t->compute++; t->time_compute += cs->time_s; break;
		case RL_BOUND_LATENCY: t->latency++; t->time_latency += cs->time_s; break;
		}
	}
}

double rl_cost_balance(const struct rl_machine *m, enum rl_prec prec, bool matrix)
{
	if (m->nlevels <= 0)
		return 0;
	double peak = rl_machine_peak(m, prec, matrix);
	if (peak <= 0)
		peak = rl_machine_peak(m, RL_PREC_FP32, matrix);
	double eff = m->eff_contiguous > 0 ? m->eff_contiguous : 1;
	double bw = rl_machine_dram(m)->read_bw * eff;
	return bw > 0 ? peak / bw : 0;
}
