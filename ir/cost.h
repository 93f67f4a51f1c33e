/*
 * cost.h - the roofline cost model.
 *
 * Each operator family (ir/fam_<family>.c) counts, for one node with static
 * shapes, the arithmetic it performs and the bytes it moves at main-memory
 * level in the unfused baseline: every input (weights included) read once,
 * every output written once, at its dtype. rl_cost_node() turns the counts
 * into a predicted time on a machine:
 *
 *   t = max(flops / peak[prec], read / (bw_r * eff) + write / (bw_w * eff))
 *       + launch latency
 *
 * where eff is the profile's efficiency for the node's access pattern
 * (contiguous, strided, gathered). A node is latency-bound when the launch
 * latency exceeds both roofs, memory-bound when its intensity is below the
 * machine balance for its precision, else compute-bound.
 *
 * FLOP conventions (documented in the README, checked by golden tests):
 * a multiply-add counts 2; add/sub/mul/div/compare/min/max count 1 per
 * element; a transcendental (exp, log, tanh, erf, sqrt, pow, sigmoid, ...)
 * counts RL_FLOPS_TRANS per element; data movement counts 0.
 */
#ifndef RL_COST_H
#define RL_COST_H

#include "ir.h"
#include "machine.h"

#define RL_FLOPS_TRANS 8.0 /* FLOPs charged per transcendental evaluation */

enum rl_bound {
	RL_BOUND_MEMORY,  /* bytes bind: intensity below the balance */
	RL_BOUND_COMPUTE, /* arithmetic binds */
	RL_BOUND_LATENCY, /* launch/call overhead exceeds both roofs */
};
const char *rl_bound_name(enum rl_bound b); /* "memory", "compute", "latency" */

enum rl_access {
	RL_ACCESS_CONTIGUOUS, /* streaming reads and writes */
	RL_ACCESS_STRIDED,    /* transposes, strided windows */
	RL_ACCESS_GATHER,     /* data-dependent indices */
};

/* What a family reports for one node. */
struct rl_counts {
	double flops;       /* arithmetic operations */
	double macs;        /* multiply-accumulates (MatMul/Gemm/Conv), 0 else */
	double bytes_read;  /* inputs and weights, each read once */
	double bytes_write; /* outputs written once */
	double weight_bytes;/* the part of bytes_read that is constant weights */
	enum rl_access access;
};

/* Fill counts for node (static shapes required; returns false if not). */
bool rl_count_node(const struct rl_graph *g, uint32_t node, struct rl_counts *c);

/* Precision a node computes in (from its dtypes). */
enum rl_prec rl_node_prec(const struct rl_graph *g, uint32_t node);

/* Price counts on a machine; matrix selects the matrix-unit peak. */
void rl_cost_price(const struct rl_machine *m, const struct rl_counts *c,
                   enum rl_prec prec, bool matrix, struct rl_cost *out);

/* Count and price one node into g->nodes[node].cost. */
bool rl_cost_node(struct rl_graph *g, uint32_t node, const struct rl_machine *m);

struct rl_cost_total {
	double flops, macs, bytes, time_s;
	double time_memory, time_compute, time_latency; /* time by bound */
	uint32_t nodes, memory, compute, latency;       /* node counts by bound */
};
/* Price every live node; totals over them. */
void rl_cost_graph(struct rl_graph *g, const struct rl_machine *m,
                   struct rl_cost_total *t);

/* The balance a node is classified against: peak FLOP/s for prec (matrix
 * unit when matrix) over main-memory read bandwidth times the contiguous
 * access efficiency, in FLOP/byte. A node of lower intensity is memory-bound
 * (up to the read/write bandwidth split and its own access pattern). */
double rl_cost_balance(const struct rl_machine *m, enum rl_prec prec, bool matrix);

/* Per-family counters, in ir/fam_<family>.c. */
#define X(fam) \
	bool rl_count_##fam(const struct rl_graph *g, uint32_t node, struct rl_counts *c);
X(elemwise) X(matmul) X(conv) X(pool) X(norm) X(reduce) X(shape) X(const)
#undef X

#endif /* RL_COST_H */
