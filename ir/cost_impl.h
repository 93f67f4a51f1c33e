/*
 * cost_impl.h - what the per-family counters (the "cost" sections at the end
 * of ir/fam_*.c) and the pricing driver (ir/cost.c) share. Not part of the
 * public API: nothing outside ir/ includes it.
 *
 * A counter is called by rl_count_node() after it has checked that every
 * input and output shape is static and filled the unfused baseline (each
 * input read once, weights included; each output written once; access
 * contiguous, or gathered for RL_OPF_GATHER ops). The counter adds FLOPs and
 * MACs and corrects the bytes where the baseline rule does not fit. It
 * returns false only when it cannot count the node (it never fails on a
 * node that shape inference accepted).
 */
#ifndef RL_COST_IMPL_H
#define RL_COST_IMPL_H

#include "cost.h"

/* Elements of value v (static shape; 0 when absent or unknown). */
static inline double rl_cnt_numel(const struct rl_graph *g, uint32_t v)
{
	if (v == RL_NONE)
		return 0;
	int64_t n = rl_shape_numel(&g->values[v].shape);
	return n < 0 ? 0 : (double)n;
}

/* Bytes of value v at its dtype (0 when absent or unknown). */
static inline double rl_cnt_bytes(const struct rl_graph *g, uint32_t v)
{
	if (v == RL_NONE)
		return 0;
	return rl_cnt_numel(g, v) * (double)rl_dtype_size(g->values[v].dtype);
}

/* Element count of input i / output i of node n. */
static inline double rl_cnt_in(const struct rl_graph *g, const struct rl_node *n, int i)
{
	return rl_cnt_numel(g, rl_node_in(n, i));
}
static inline double rl_cnt_out(const struct rl_graph *g, const struct rl_node *n, int i)
{
	return i < n->nout ? rl_cnt_numel(g, n->out[i]) : 0;
}

/* Dim d of input i (static; 0 when absent). */
static inline double rl_cnt_dim(const struct rl_graph *g, const struct rl_node *n, int i,
                                int d)
{
	uint32_t v = rl_node_in(n, i);
	if (v == RL_NONE || d < 0 || d >= g->values[v].shape.rank)
		return 0;
	return (double)g->values[v].shape.d[d].v;
}

/* Scans and losses (fam_index.c), counted through the shape family's
 * counter until they have a family of their own. */
bool rl_count_index(const struct rl_graph *g, uint32_t node, struct rl_counts *c);

#endif /* RL_COST_IMPL_H */
