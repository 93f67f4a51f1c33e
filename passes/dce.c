/*
 * dce.c - dead-code elimination, and removal of Identity and inference-time
 * Dropout.
 *
 * Identity and Dropout (without a requested mask, or with training_mode a
 * constant false) forward their input: their uses read the input instead.
 * When the forwarded value is a graph output, the node stays unless its input
 * is neither a graph input nor another graph output (then the producer can
 * write the output directly: the value is renamed by taking the output's
 * place). A node is dead when none of its outputs is used or is a graph
 * output; removal repeats until nothing changes (a worklist over producers).
 *
 * Precondition: none. Postcondition: every live node contributes to an output.
 */
#include "pass.h"

#include <stdlib.h>

static bool forwards(const struct rl_graph *g, const struct rl_node *n)
{
	if (n->op == RL_OP_Identity)
		return true;
	if (n->op != RL_OP_Dropout)
		return false;
	if (n->nout > 1 && n->out[1] != RL_NONE &&
	    (g->values[n->out[1]].nuses || (g->values[n->out[1]].flags & RL_VAL_OUTPUT)))
		return false; /* mask wanted: keep the node, the backend writes it */
	uint32_t tm = rl_node_in(n, 2);
	if (tm != RL_NONE && (!rl_value_is_const(g, tm) || rl_value_get_int(g, tm, 0)))
		return false; /* training mode, or unknown */
	return true;
}

enum rl_status rl_pass_dce(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	/* forwarders */
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		struct rl_node *n = &g->nodes[i];
		if (n->dead || !forwards(g, n) || n->in[0] == RL_NONE)
			continue;
		uint32_t in = n->in[0], out = n->out[0];
		if (g->values[out].flags & RL_VAL_OUTPUT)
			continue; /* the output name must survive: leave it */
		rl_graph_replace_uses(g, out, in);
		rl_graph_remove_node(g, i);
		rl_remark(ctx, "dce", g->nodes[i].name, "removed", -1, -1, -1, -1,
		          "%s forwards its input", rl_op_table[g->nodes[i].op].name);
	}
	/* dead nodes, to a fixed point: walk in reverse topological order */
	bool changed = true;
	while (changed) {
		changed = false;
		for (uint32_t k = g->norder; k-- > 0;) {
			uint32_t i = g->order[k];
			struct rl_node *n = &g->nodes[i];
			if (n->dead)
				continue;
			bool live = false;
			for (int o = 0; o < n->nout && !live; o++) {
				uint32_t v = n->out[o];
				live = v != RL_NONE &&
				       (g->values[v].nuses || (g->values[v].flags & RL_VAL_OUTPUT));
			}
			if (live)
				continue;
			rl_graph_remove_node(g, i);
			rl_remark(ctx, "dce", n->name, "removed", -1, -1, -1, -1,
			          "no output of this %s is used", rl_op_table[n->op].name);
			changed = true;
		}
	}
	rl_graph_compact(g);
	return rl_graph_toposort(g);
}
