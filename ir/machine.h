/*
 * machine.h - a machine profile: what the roofline is drawn from.
 *
 * Loaded from hw/<name>.xml (frontends/machine/machine.c, libxml2, validated
 * against hw/machine.xsd) or written by `rlopt probe`. All rates are in SI
 * units: FLOP/s (or OP/s for integer types), bytes/s, bytes, seconds.
 *
 * Memory levels are ordered from the closest to the compute units (registers
 * or L1 / shared memory) to main or device memory, which is always last.
 * The baseline cost model prices every tensor at the last level; passes that
 * arrange reuse (fusion, tiling) may price at a closer level.
 */
#ifndef RL_MACHINE_H
#define RL_MACHINE_H

#include "ir.h" /* enum rl_status */

#include <stdbool.h>
#include <stdio.h>

enum rl_prec {
	RL_PREC_FP64, /* double */
	RL_PREC_FP32, /* float */
	RL_PREC_TF32, /* tensor-float-32 matrix units */
	RL_PREC_FP16, /* half */
	RL_PREC_BF16, /* bfloat16 */
	RL_PREC_FP8,  /* e4m3 / e5m2 */
	RL_PREC_INT8, /* int8 dot products */
	RL_PREC_INT4, /* int4 */
	RL_PREC_COUNT_,
};
const char *rl_prec_name(enum rl_prec p); /* "fp32", ... (XML attribute) */
/* Inverse of rl_prec_name; false for an unknown name. */
bool rl_prec_from_name(const char *s, enum rl_prec *p);

#define RL_MAX_MEM_LEVELS 8

/*
 * Classes of per-element work whose speed depends on the code the C backend
 * emits rather than on the FMA peak: a transcendental is a polynomial of a
 * dozen FMAs plus range reduction, a division a slow unit, a product a
 * register-blocked micro-kernel. `rlopt probe` times each class in the code
 * the generator writes (tools/calib.c) and stores the rate in the profile's
 * <calibration>; the cost model prices a kernel's compute from these rates
 * when the profile has them, from the peak otherwise.
 *   BASIC    add/mul/compare/min/max/select, elements per second per core
 *   DIV      division or reciprocal
 *   SQRT, EXP, LOG, TANH, SIGMOID, ERF   the vector math of emit_math.c
 *   GEMM     FLOP/s of the packed fp32 GEMM (2 per multiply-add)
 *   GATHER   indices per second resolved into rows of a table far larger than
 *            the last-level cache (a row of a few floats each)
 * Optional classes (older profiles lack them; the cost model then falls
 * back as noted, and rl_machine_calibrated does not ask for them):
 *   MMPLAIN  FLOP/s of the plain product loop the C backend keeps for
 *            products the tile pass leaves PLAIN (under 64^3 MACs: no
 *            packing, accumulator rows in L1); missing: the GEMM rate
 *   ROW      rows per second: the fixed cost of one row of a row kernel
 *            (Softmax, LayerNorm, a reduction: horizontal max/sum across the
 *            vector, a division, the loop set-up) beyond its per-element
 *            work, which dominates on short rows; missing: free
 */
enum rl_math {
	RL_MATH_BASIC,
	RL_MATH_DIV,
	RL_MATH_SQRT,
	RL_MATH_EXP,
	RL_MATH_LOG,
	RL_MATH_TANH,
	RL_MATH_SIGMOID,
	RL_MATH_ERF,
	RL_MATH_GEMM,
	RL_MATH_GATHER,
	RL_MATH_MMPLAIN, /* optional from here on */
	RL_MATH_ROW,
	RL_MATH_COUNT_,
};
#define RL_MATH_REQUIRED_ RL_MATH_MMPLAIN /* classes a calibrated profile has */
const char *rl_math_name(enum rl_math c); /* "exp", ... (XML attribute) */
bool rl_math_from_name(const char *s, enum rl_math *c);

struct rl_mem_level {
	char name[32];      /* "L1", "L2", "L3", "smem", "HBM3e", "DRAM" */
	double capacity;    /* bytes (total across the chip) */
	double read_bw;     /* bytes/s, sustained read */
	double write_bw;    /* bytes/s, sustained write (= read_bw if not given) */
	/* optional (0 = not given): what one core draws from this level on its
	 * own, bytes/s; ir/cost.c prices a kernel on k of the chip's cores at
	 * min(read_bw, k x core_read_bw) with them, k/cores x read_bw without */
	double core_read_bw;
	double core_write_bw; /* (= core_read_bw if only that is given) */
	/* optional (0 = not given): the geometry the tiling pass sizes blocks
	 * with (passes/tile.c), per cache instance */
	int line_bytes;     /* cache line (CPU) or sector (GPU) in bytes */
	int ways;           /* set associativity */
};

struct rl_machine {
	char name[64];      /* "h200" */
	char desc[128];     /* "NVIDIA H200 SXM 141GB" */
	char kind[8];       /* "gpu" or "cpu" */
	int cores;          /* SMs on a GPU, cores on a CPU */
	/* CPU: the threads the generated code runs with, at most cores
	 * (`--threads N`, NAME_set_threads); 0 = every core. Not in the XML:
	 * a property of the run, not of the machine. */
	int run_threads;
	/* peak rates, 0 where the part has no such unit */
	double peak_vector[RL_PREC_COUNT_]; /* SIMT / SIMD units, FLOP/s */
	double peak_matrix[RL_PREC_COUNT_]; /* tensor cores / AMX / matrix units */
	int nlevels;
	struct rl_mem_level level[RL_MAX_MEM_LEVELS]; /* last = main memory */
	/* fraction of a level's bandwidth reached by an access pattern, (0,1] */
	double eff_contiguous;
	double eff_strided;
	double eff_gather;
	/* Fixed cost per kernel, in seconds. `launch_latency` is the figure every
	 * consumer prices with (cost model, judge, fusion, report); it is the
	 * profile's `launch` (eager: one launch or function call per kernel) or,
	 * in graph mode, its `graph` (a kernel replayed inside a captured CUDA
	 * graph, ~0.5-1 us instead of several). rl_machine_set_launch() chooses;
	 * a GPU profile loads in graph mode because the CUDA backend replays a
	 * graph, a CPU profile in eager mode (kernels are function calls). */
	double launch_latency;
	double launch_eager;    /* the profile's <latency launch=> */
	double launch_graph;    /* its <latency graph=>; 0 = not given */
	double fork_latency;    /* CPU: <latency fork=>, added to a kernel the
	                         * runtime splits across threads; 0 = not given */
	enum rl_launch_mode { RL_LAUNCH_EAGER, RL_LAUNCH_GRAPH } launch_mode;
	bool has_sparse24;      /* 2:4 structured sparsity in matrix units */
	/* per-core vector unit, optional (0 = not given; the tiling pass then
	 * uses its documented defaults and says so in a remark) */
	int simd_bits;          /* vector register width in bits (256 AVX2, 512 AVX-512) */
	int simd_registers;     /* architectural vector registers (16, 32) */
	int fma_units;          /* FMA pipes per core */
	int fma_latency;        /* cycles from an FMA's issue to its result */
	/* measured rates of the emitted code, one core, rl_math units; 0 = not
	 * measured (the cost model then prices that class from the peak) */
	double calib[RL_MATH_COUNT_];
	char calib_cc[64];      /* the compiler command the rates were taken with */
	char source[256];       /* file it came from, for messages */
};

/* Price kernels as launched eagerly or replayed in a CUDA graph. Graph mode
 * needs a GPU profile; one without a `graph` figure is priced at its eager
 * latency (rl_machine_launch_note says so). False (m unchanged) for graph
 * mode on a CPU profile. */
bool rl_machine_set_launch(struct rl_machine *m, enum rl_launch_mode mode);
/* One line for reports: "CUDA graph replay, 1 us per kernel (eager 4 us)". */
void rl_machine_launch_note(const struct rl_machine *m, char *buf, size_t len);
const char *rl_launch_mode_name(enum rl_launch_mode mode); /* "eager", "graph" */

/* Best peak for a precision: the matrix unit if present, else vector. */
double rl_machine_peak(const struct rl_machine *m, enum rl_prec p, bool matrix);
/* Whether every rl_math class has a measured rate. */
bool rl_machine_calibrated(const struct rl_machine *m);
/* Machine balance at main memory for fp32: peak FLOP/s over bytes/s. */
double rl_machine_balance(const struct rl_machine *m, enum rl_prec p);
static inline const struct rl_mem_level *
rl_machine_dram(const struct rl_machine *m)
{
	return &m->level[m->nlevels - 1];
}

/*
 * Load and validate a profile. `spec` is a shipped name ("h200"), resolved in
 * the hw directory (rl_machine_hw_dir()), or a path ending in ".xml".
 * On error returns the status (RL_ERR_IO: not found or unreadable, RL_ERR_PARSE:
 * not XML, RL_ERR_INVALID: not a valid profile) and writes a one-line message
 * (file, line, reason) to err.
 */
enum rl_status rl_machine_load(const char *spec, struct rl_machine *m, char *err,
                               size_t errlen);
/* Write a profile as schema-valid XML (used by probe). */
enum rl_status rl_machine_write(const struct rl_machine *m, const char *path,
                                const char *comment, char *err, size_t errlen);
/* Directory holding shipped profiles: $RLOPT_HW_DIR, else the one compiled
 * in (the source tree's hw/ or the install prefix). */
const char *rl_machine_hw_dir(void);
/* List shipped profiles (name, description) to f. */
void rl_machine_list(FILE *f);
/* The default profile name: "host" when ~/.config/rlopt/host.xml (or
 * $RLOPT_HOST_PROFILE) exists, else "generic-cpu". */
const char *rl_machine_default(void);
/* Where the "host" profile lives: $RLOPT_HOST_PROFILE, else
 * $HOME/.config/rlopt/host.xml. False when neither can be formed or it does
 * not fit in buf. The file need not exist (probe writes it). */
bool rl_machine_host_path(char *buf, size_t len);
/* The checks the schema cannot express (finite, non-absurd magnitudes, an fp32
 * peak, main memory the largest level, ...), on a filled-in struct. Loading
 * runs them with line numbers; rl_machine_write runs them before writing. */
enum rl_status rl_machine_check(const struct rl_machine *m, char *err, size_t errlen);

/*
 * Measure this machine (frontends/machine/probe.c): streaming read, write and
 * copy bandwidth per cache level and main memory, single- and all-core FMA
 * rates, strided and gathered read efficiency, per-call overhead. Takes a
 * few seconds on an idle machine, longer on a busy one, under 30 s. Fills m
 * as a "host" cpu profile (all-core figures; m->source left empty), one line
 * per measurement to log (may be NULL). Returns RL_ERR_NOMEM (buffers,
 * threads) or RL_ERR_INVALID (a figure the loader would refuse) with a
 * one-line message in err if it could not measure.
 */
enum rl_status rl_probe_run(struct rl_machine *m, FILE *log, char *err, size_t errlen);
/* The same, also writing to comment (if not NULL) a multi-line account of how
 * each number was obtained (threads, working sets, the single-core figures
 * that the struct has no room for), meant as rl_machine_write's comment. */
enum rl_status rl_probe_run_ex(struct rl_machine *m, FILE *log, char *comment,
                               size_t commentlen, char *err, size_t errlen);

#endif /* RL_MACHINE_H */
