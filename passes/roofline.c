/*
 * roofline.c - roofline analysis: price every node on the chosen machine and
 * say which limit binds it.
 *
 * The pass changes nothing in the graph. It fills each node's cost
 * annotation (rl_cost_graph: FLOPs, bytes at main memory in the unfused
 * baseline, intensity, bound, predicted time) and leaves one remark per
 * kernel that runs, with the verdict "memory", "compute" or "latency" and the
 * numbers behind it: FLOPs, bytes, intensity against the balance the node is
 * classified by, and the predicted time; then one summary remark with the
 * split of predicted time by bound. Views, embedded constants and nodes
 * evaluated at build time cost nothing and get no remark.
 *
 * Precondition: shapes inferred. Nodes with symbolic shapes are not priced
 * (remark "unpriced"). Without a machine (ctx->machine NULL) it does nothing.
 */
#include "pass.h"

#include <stdio.h>

enum rl_status rl_pass_roofline(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	const struct rl_machine *m = ctx->machine;
	if (!m || m->nlevels < 1)
		return RL_OK;
	struct rl_cost_total t;
	rl_cost_graph(g, m, &t);
	uint32_t unpriced = 0;
	char hint[400] = "";
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		const struct rl_cost *c = &n->cost;
		if (n->dead || c->time_s <= 0) {
			struct rl_counts cnt;
			if (!n->dead && c->time_s <= 0 && !rl_count_node(g, i, &cnt)) {
				/* the first value not static says which dim to bind */
				for (int o = 0; !unpriced && !hint[0] && o < n->nin + n->nout; o++) {
					uint32_t v = o < n->nin ? n->in[o] : n->out[o - n->nin];
					if (v != RL_NONE && !rl_shape_is_static(&g->values[v].shape)) {
						char h[256];
						snprintf(hint, sizeof(hint), "'%s': %s", g->values[v].name,
						         rl_unbound_hint(g, &g->values[v].shape, h, sizeof(h)));
					}
				}
				unpriced++;
			}
			continue;
		}
		struct rl_counts cnt;
		rl_count_node(g, i, &cnt);
		double bal = rl_cost_balance(m, rl_node_prec(g, i), cnt.macs > 0);
		rl_remark(ctx, "roofline", n->name, rl_bound_name((enum rl_bound)c->bound),
		          c->bytes, c->bytes, c->time_s, c->time_s,
		          "%s: %.4g FLOPs, %.4g bytes, intensity %.3g FLOP/B vs balance %.3g "
		          "on %s: %.3g s", rl_op_table[n->op].name, c->flops, c->bytes,
		          c->intensity, bal, m->name, c->time_s);
		ctx->remarks[ctx->nremarks - 1].flops_before = c->flops;
		ctx->remarks[ctx->nremarks - 1].flops_after = c->flops;
	}
	double tt = t.time_s > 0 ? t.time_s : 1;
	rl_remark(ctx, "roofline", NULL, "summary", t.bytes, t.bytes, t.time_s, t.time_s,
	          "%u kernels on %s: memory-bound %u (%.0f%% of time), compute-bound %u "
	          "(%.0f%%), latency-bound %u (%.0f%%); %.4g FLOPs, %.4g bytes%s",
	          t.nodes, m->name, t.memory, 100 * t.time_memory / tt, t.compute,
	          100 * t.time_compute / tt, t.latency, 100 * t.time_latency / tt, t.flops,
	          t.bytes, unpriced ? "; some nodes unpriced (symbolic shapes)" : "");
	if (unpriced)
		rl_remark(ctx, "roofline", NULL, "unpriced", -1, -1, -1, -1,
		          "%u nodes have symbolic shapes; bind them to price them (first: %s)",
		          unpriced, hint[0] ? hint : "?");
	return RL_OK;
}
