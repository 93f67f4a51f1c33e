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

#include <stddef.h>

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
	/* the work by calibrated class (machine.h enum rl_math): elements for
	 * the math classes, FLOPs for BASIC (plain arithmetic) and GEMM; priced
	 * against the profile's <calibration> rates when it has them */
	double math[RL_MATH_COUNT_];
	enum rl_access access;
	/* elements of the largest non-constant tensor an elementwise, norm or
	 * reduce kernel's split loop runs over; 0 where the kernel splits by
	 * other rules (rl_cost_threads) */
	double par_elems;
	/* rows of a row kernel (Softmax, LayerNorm, ...: each row reduced
	 * across the vector lanes), priced by the ROW calibration; 0 else */
	double rows;
	/* the independent blocks the C backend splits the kernel into across
	 * threads, where known: a tiled product's tile.par, 1 for the families
	 * whose kernels never split (shape, constants, attention, sequences,
	 * detection); 0 = split by the other rules (rl_cost_threads) */
	double par_tasks;
	/* the most chunks the runtime may cut those par_tasks iterations into
	 * (rl_parallel_for's cap: a Conv's rl_split_conv_chunks); 0 = one
	 * iteration per chunk at most (a tiled product's blocks) */
	double par_chunks;
	/* the bytes the program touches between one run's read of this
	 * kernel's constant weights and the next run's: the run's footprint
	 * (rl_cost_graph, rl_cost_kernels set it; 0 = not known, the weights
	 * are priced like the rest of the working set) */
	double reuse_bytes;
	/* QuantMatMul (ir/qweights.c): its code x row products. On a CPU
	 * profile they are priced as the C kernels run them, not as the float
	 * MACs they stand for: with an int8 peak (AVX-512 VNNI) 4 OP each (two
	 * 8-bit dot products: the activation is int16 split in bytes), else the
	 * generic vectors' dequantize (2 BASIC: unpack, convert) and FMA (the
	 * GEMM class). GPU profiles price them as float MACs. */
	double qmacs;
	/* work done on the calling thread before the kernel splits across
	 * threads (QuantMatMul's activation rows, quantized to int16), in BASIC
	 * elements: priced on one core and added to the kernel's fixed cost */
	double serial;
	/* the FLOPs the kernel runs where its form does other arithmetic than
	 * the node's FLOPs count (a Conv in the Winograd form: 4/9 of the
	 * products and the transforms); 0 = flops. The peak-based estimate
	 * prices these, the calibrated one the math classes. */
	double flops_run;
};

/*
 * How many of a CPU's cores the C backend's kernel for counts c runs on, as
 * the runtime splits it (backends/c/emit_rt.c rl_parallel_for): elementwise,
 * normalization and reduction loops split only when they have at least
 * 2 x RL_COST_PAR_MIN_ELEMS elements, in chunks of at least that many (so
 * at most par_elems / RL_COST_PAR_MIN_ELEMS chunks). A kernel with
 * par_tasks runs on min(par_tasks, cores) (a tiled product on its tile's
 * blocks, a Conv on its rl_split_conv_chunks, a PLAIN product on one core,
 * the never-split families on one). Every split is priced as the runtime
 * runs it (rl_split_share below): the slowest thread's share of the
 * one-thread time, ceil(chunks / threads) chunks of them. Untiled products,
 * pools and every GPU kernel are priced as an even split over all cores
 * (their kernels split into tasks by their own rules). A kernel split across more
 * than one CPU core also pays the profile's fork/join latency
 * (rl_cost_fixed_s). A kernel on k of C cores is priced at k/C of the chip's
 * compute, and at min(chip, k x core_read_bw) of a level's bandwidth where
 * the profile gives one core's rate (rlopt probe measures it: one core draws
 * 22.1 of 27.4 GB/s of main memory on the 2-core probe host, not half), else
 * at k/C of it.
 */
#define RL_COST_PAR_MIN_ELEMS (1 << 15)
int rl_cost_threads(const struct rl_machine *m, const struct rl_counts *c);

/*
 * The split, in one place for the cost model and the C backend.
 *
 * rl_parallel_for (backends/c/emit_rt.c) cuts n iterations into nt =
 * min(most, 4 x threads) contiguous chunks, chunk t = [n t / nt, n (t+1) /
 * nt); thread k of T runs its own chunks [nt k / T, nt (k+1) / T) first
 * (the first nt / T of them claimed together and run as one range), then
 * takes what is left from the last chunk back. rl_split_share replays
 * that on equal-cost iterations: the share of the kernel's one-thread time
 * its slowest thread runs (3 chunks on 2 threads: 2/3, not 1/2; one chunk:
 * 1, the caller alone), and in *used the threads that get a chunk. most <= 0
 * means no cap but the runtime's.
 */
double rl_split_share(double n, double most, int threads, int *used);

/*
 * The most chunks a Conv of `macs` multiply-adds is cut into across threads:
 * RL_SPLIT_CONV_TASKS, fewer where a chunk would do less than
 * RL_SPLIT_CONV_MACS (1: the calling thread alone). The tile pass records it
 * on the node (tile.chunks), the C backend's Conv kernels follow it
 * (emit_conv.c) and the cost model prices it (rl_count_node).
 */
#define RL_SPLIT_CONV_MACS 65536.0
#define RL_SPLIT_CONV_TASKS 8
int64_t rl_split_conv_chunks(double macs);

/*
 * The Winograd form F(2x2, 3x3) of a 3x3/1 Conv with pads of 1 (C input and
 * M output channels, an OH x OW output plane; backends/c/emit_conv.c
 * emit_conv_wino): the most rows of 2x2 tiles one block of the kernel holds
 * (the tiles' transformed input and products, 16 x (C + M) floats a tile
 * column, under RL_WINO_BYTES, or RL_WINO_ROW_BYTES for one row; at most
 * RL_WINO_TP tiles), or 0 where a
 * block would hold fewer than RL_WINO_MIN_TILES tiles (the products' tiles
 * too narrow: the form is not taken) or the plane does not fit the form
 * (rows under RL_WINO_MIN_OW or over 1024, M not a multiple of 4, C under 8).
 * The tile pass takes the form where this is positive (tile.conv =
 * RL_CONV_WINO), the C backend runs it, the cost model prices it
 * (rl_conv_wino_counts).
 */
#define RL_WINO_BYTES 786432.0
#define RL_WINO_ROW_BYTES 1310720.0 /* a block of one row of tiles */
#define RL_WINO_TP 192
#define RL_WINO_MIN_TILES 24
#define RL_WINO_MIN_OW 14
#define RL_WINO_ELEM_FLOPS 12.0 /* the time of a V or S element's pass, in plain FLOPs */
int64_t rl_conv_wino_rows(int64_t C, int64_t M, int64_t OH, int64_t OW);
/* The columns the transforms' loops run for a row of TW tiles (TWr): TW
 * rounded up to 8, a whole number of 8-float vectors, so gcc -O2
 * vectorizes the loops without a scalar tail. Every row's transforms run
 * TWr columns (past its TW tiles into the next row's, which overwrites
 * them); the products run the block's columns, (b - 1) TW + TWr, so only
 * the last row adds to theirs. Rounded up to 16, rows of 8 tiles (16x16
 * planes) ran twice the columns kept and a task of 4 rows took its
 * products over 48 columns for 32 tiles. */
int64_t rl_conv_wino_rowlen(int64_t TW);
/* The block's V and S pitch in floats for TB rows of tiles: (TB - 1) TW + TWr,
 * rounded up to 16. */
int64_t rl_conv_wino_pitch(int64_t TB, int64_t OW);
/* Its work on N images: *gemm the products' FLOPs (16 per tile and channel
 * pair, as the blocks' columns run them, the rows' loops to TWr
 * included), *basic the transforms' and epilogue's plain FLOPs (and the
 * passes over V and S, priced as RL_WINO_ELEM_FLOPS each), *bytes the
 * bytes the transforms move through the block's L2 (V and S written and
 * read once each). */
void rl_conv_wino_counts(int64_t N, int64_t C, int64_t M, int64_t OH, int64_t OW, double *gemm,
                         double *basic, double *bytes);
/* The fixed cost of running kernel c: the profile's launch latency, plus its
 * fork/join latency (<latency fork=>) when the runtime splits c across more
 * than one CPU thread. */
double rl_cost_fixed_s(const struct rl_machine *m, const struct rl_counts *c);

/* Fill counts for node (static shapes required; returns false if not). */
bool rl_count_node(const struct rl_graph *g, uint32_t node, struct rl_counts *c);

/* Precision a node computes in (from its dtypes). */
enum rl_prec rl_node_prec(const struct rl_graph *g, uint32_t node);

/*
 * Seconds of arithmetic for counts c on m: with a calibrated profile
 * (rl_machine_calibrated), the sum over classes of c->math[k] / (rate[k] x
 * cores) -- what the emitted code reaches, transcendentals and all; else
 * flops / peak. *calibrated says which.
 */
double rl_cost_compute_s(const struct rl_machine *m, const struct rl_counts *c, double peak,
                         bool *calibrated);
/* Price counts on a machine; matrix selects the matrix-unit peak. */
void rl_cost_price(const struct rl_machine *m, const struct rl_counts *c,
                   enum rl_prec prec, bool matrix, struct rl_cost *out);

/* Count and price one node into g->nodes[node].cost. */
bool rl_cost_node(struct rl_graph *g, uint32_t node, const struct rl_machine *m);

struct rl_cost_total {
	double flops, macs, bytes, time_s;
	double time_memory, time_compute, time_latency; /* time by bound */
	uint32_t nodes, memory, compute, latency;       /* node counts by bound */
	/* nodes NAME_init runs once (cost.c built_at_init), priced 0 per run,
	 * and the bytes of constants they write */
	uint32_t init_nodes;
	double init_bytes;
};
/* Price every live node; totals over them. */
void rl_cost_graph(struct rl_graph *g, const struct rl_machine *m,
                   struct rl_cost_total *t);

/*
 * Kernels: the unit that runs and the unit the report prices.
 *
 * After `fuse` (and `tile`), the graph runs as a sequence of kernels: a fused
 * group (node->group >= 0: an elementwise group, or an epilogue group whose
 * anchor is a MatMul/Gemm/Conv) is one kernel, every other node that runs is
 * its own. A kernel's FLOPs and MACs are its nodes' sums; its bytes are what
 * the fused code moves: the group's external inputs read once (scalar
 * constants excepted: the code writes them as literals; an anchor's inputs
 * are all read) and the values used outside it (or graph outputs) written
 * once. Intermediates never touch memory.
 *
 * Per-level traffic. When the kernel's node has a schedule (node->tile.kind
 * != 0) and a traffic function is given (rl_tile_traffic from passes/tile.c),
 * bytes_level[i] is the traffic at m->level[i] and the kernel is priced
 * level by level:
 *
 *   t = max(flops / peak, max_i t_i) + launch latency,
 *   t_i = bytes_level[i] / (read_bw[i] * eff)        for a cache level,
 *   t_last = the main-memory time of the kernel's external bytes, scaled
 *            by bytes_level[last] / external bytes (its read/write split)
 *
 * and a memory-bound kernel names the level that binds (bound_level). An
 * epilogue group adds what its elementwise part reads and writes beyond the
 * product's own operands at every level. Without a schedule every level
 * carries the external bytes and only main memory is priced, as for a node.
 */
struct rl_kernel {
	uint32_t node;        /* the node that names it: the anchor, else the first in order */
	uint32_t anchor;      /* MatMul/Gemm/Conv of an epilogue group, else RL_NONE */
	int32_t group;        /* fusion group id, -1 for a single node */
	uint32_t first, n;    /* its nodes: rl_kernels.nodes[first .. first + n) */
	struct rl_counts c;   /* FLOPs and MACs summed; bytes at main memory, external */
	struct rl_cost cost;  /* bytes: main-memory bytes as priced */
	bool tiled;           /* priced level by level from a schedule */
	int bound_level;      /* memory-bound: the level that binds; -1 else */
	double bytes_level[RL_MAX_MEM_LEVELS]; /* per level (tiled), else all = cost.bytes */
};

struct rl_kernels {
	struct rl_kernel *k;  /* in the order they run (first node's position) */
	uint32_t nk;
	uint32_t *nodes;      /* node lists of the kernels */
	int32_t *of;          /* node -> kernel index, -1 when no kernel runs it */
	struct rl_cost_total t; /* summed over kernels: nodes = kernels */
};

/* Bytes per level of node's schedule (rl_tile_traffic's signature). */
typedef void (*rl_traffic_fn)(const struct rl_graph *g, uint32_t node,
                              const struct rl_machine *m, double *bytes_per_level);

/* Price every node (rl_cost_graph) and group them into kernels; traffic may
 * be NULL (main memory only). False only when out of memory. Free with
 * rl_kernels_free. */
bool rl_cost_kernels(struct rl_graph *g, const struct rl_machine *m, rl_traffic_fn traffic,
                     struct rl_kernels *out);
void rl_kernels_free(struct rl_kernels *ks);
/*
 * Node `node` priced as the report prices it when it runs as a kernel of its
 * own: counted, its weights from where a run of reuse bytes leaves them, and
 * level by level from traffic (rl_tile_traffic) when it has a schedule
 * (node->tile.kind). What a pass that prices before `fuse`/`tile` (quantize)
 * compares, with the schedule rl_tile_plan gives it. False when the node
 * cannot be counted (symbolic shapes); *out zeroed then.
 */
bool rl_cost_node_kernel(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                         rl_traffic_fn traffic, double reuse, struct rl_cost *out);
/* "memory", "memory (L2)" for a tiled kernel bound at a level, ... into buf. */
const char *rl_kernel_bound_str(const struct rl_kernel *k, const struct rl_machine *m,
                                char *buf, size_t len);

/* The balance a node is classified against: peak FLOP/s for prec (matrix
 * unit when matrix) over main-memory read bandwidth times the contiguous
 * access efficiency, in FLOP/byte. A node of lower intensity is memory-bound
 * (up to the read/write bandwidth split and its own access pattern). */
double rl_cost_balance(const struct rl_machine *m, enum rl_prec prec, bool matrix);
/* The bytes one run of g touches (every constant a live node reads plus its
 * largest computed tensor): what a pass pricing one node puts in its
 * counts' reuse_bytes so its weights are priced as rl_cost_graph prices
 * them (at the level the run's footprint leaves them). */
double rl_cost_footprint(const struct rl_graph *g);

/* Per-family counters, in ir/fam_<family>.c. */
#define X(E, file, name) \
	bool rl_count_##file(const struct rl_graph *g, uint32_t node, struct rl_counts *c);
RL_FAMILIES(X)
#undef X

#endif /* RL_COST_H */
