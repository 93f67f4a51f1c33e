/*
 * pass.h - the pass pipeline.
 *
 * Every pass has one signature and its own file (passes/<name>.c):
 *
 *   enum rl_status rl_pass_NAME(struct rl_graph *g, struct rl_pass_ctx *ctx);
 *
 * The pipeline is one table in pipeline.c, in order; -O0 runs nothing, -O1
 * the cleanup passes, -O2 everything, and --passes a,b,c an explicit list.
 * The verifier runs between passes when ctx->verify is set (tests, debug
 * builds, --verify). --dump-after NAME prints the graph after that pass.
 *
 * Every decision a pass takes or declines is a remark: pass, node(s),
 * verdict, and the numbers behind it (bytes and predicted time before and
 * after). The report is built from remarks; nothing is decided in the report.
 */
#ifndef RL_PASS_H
#define RL_PASS_H

#include <stdio.h>

#include "cost.h"
#include "ir.h"
#include "machine.h"

struct rl_remark {
	const char *pass;     /* static string: the pass name */
	char node[160];       /* node name(s), comma separated */
	char verdict[24];     /* "applied", "rejected", "folded", "removed", ... */
	char msg[320];        /* one line: the reason, with numbers */
	double bytes_before, bytes_after; /* -1 when not meaningful */
	double time_before, time_after;   /* seconds, -1 when not meaningful */
	double flops_before, flops_after; /* -1 when not meaningful (set after
	                                     rl_remark by passes that price) */
};

struct rl_tensor;

struct rl_pass_ctx {
	const struct rl_machine *machine; /* for passes that price (may be NULL) */
	int opt_level;          /* 0, 1, 2 */
	bool verify;            /* run rl_graph_verify between passes */
	const char *dump_after; /* pass name, or NULL */
	FILE *dump;             /* where --dump-after writes (stdout) */
	struct rl_remark *remarks;
	uint32_t nremarks, cap_remarks;
	/* folding limit: never materialize a constant larger than this */
	int64_t fold_max_bytes;
	/* the result is written back as ONNX (-o OUT.onnx), whose writer keeps
	 * the model's opset imports: rewrites may then only introduce operators
	 * that exist at the model's default-domain opset (see patterns.c) */
	bool onnx_out;
	/* totals the report quotes */
	double bytes_saved_dedupe;
	double bytes_saved_fusion;
	/* rewrite judge and --factorize (passes/judge.c, passes/factorize.c) */
	bool factorize;         /* --factorize: apply accepted factorizations */
	double max_rel_error;   /* --max-rel-error: Frobenius bound (1e-2) */
	/* weight quantization (passes/quantize.c) */
	int quantize;           /* enum rl_quant_mode (ir/qweights.h): --quantize */
	int quant_block;        /* --block: 32, 64 or 128 codes per scale */
	int quant_scale32;      /* --scale-type f32: float32 scales (default float16) */
	const struct rl_tensor *calib; /* --calibrate: tensors for the graph inputs, */
	int ncalib;                    /* in input order (frontends/onnx/onnx.h) */
};

typedef enum rl_status (*rl_pass_fn)(struct rl_graph *g, struct rl_pass_ctx *ctx);

struct rl_pass_info {
	const char *name;  /* as in --passes and --dump-after */
	rl_pass_fn fn;
	int min_level;     /* lowest -O level that runs it */
	const char *what;  /* one line for --help */
};

/* The pipeline, in order, terminated by a NULL name. */
extern const struct rl_pass_info rl_pipeline[];

void rl_pass_ctx_init(struct rl_pass_ctx *ctx, const struct rl_machine *m,
                      int opt_level);
void rl_pass_ctx_free(struct rl_pass_ctx *ctx);

/*
 * Run the pipeline: the passes for ctx->opt_level, or the comma-separated
 * list `only` (an unknown name is RL_ERR_INVALID with the known names in
 * g->err). Re-infers shapes after every pass that changed the graph.
 */
enum rl_status rl_pipeline_run(struct rl_graph *g, struct rl_pass_ctx *ctx,
                               const char *only);

/* Record a remark. node may be NULL; pass the numbers or -1. */
void rl_remark(struct rl_pass_ctx *ctx, const char *pass, const char *node,
               const char *verdict, double bytes_before, double bytes_after,
               double time_before, double time_after, const char *fmt, ...)
	__attribute__((format(printf, 9, 10)));
/* For rewriting passes: make sure g->order lists exactly the live nodes
 * (re-sorting only when it does not), and, at the end, compact and re-sort
 * only if a node died or a value was added since `nvalues_before`. */
enum rl_status rl_pass_ensure_order(struct rl_graph *g);
enum rl_status rl_pass_finish(struct rl_graph *g, uint32_t nvalues_before);
/* Print remarks, one per line. */
void rl_remarks_print(const struct rl_pass_ctx *ctx, FILE *f);

/* The passes (one file each). */
enum rl_status rl_pass_fold(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_cse(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_dedupe(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_patterns(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_dce(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_roofline(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_fuse(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_judge(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_factorize(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_tile(struct rl_graph *g, struct rl_pass_ctx *ctx);
enum rl_status rl_pass_quantize(struct rl_graph *g, struct rl_pass_ctx *ctx);

/*
 * Bytes the schedule in g->nodes[node].tile moves at each level of m's
 * hierarchy (passes/tile.c): bytes_per_level[i] is the traffic between
 * m->level[i] and the level nearer the core (registers for i = 0), so the
 * last entry is main memory. GEMM/GEMV use the BLIS loop order's counts,
 * STRIP one pass (row ops: their passes from the level that holds a row),
 * PLAIN and untiled nodes the unfused baseline at every level; a member of a
 * fused group gets the group kernel's figure. Entries past m->nlevels are 0.
 */
void rl_tile_traffic(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                     double *bytes_per_level /* [RL_MAX_MEM_LEVELS] */);
/* The schedule the tile pass would give product `node` (MatMul, Gemm, Conv,
 * ConvTranspose) on m, into out, without remarks: what a pass running before
 * `tile` (quantize) prices a product with. False when it is not a product
 * the tiler maps (out zeroed: untiled). */
bool rl_tile_plan(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                  struct rl_tile *out);

/* The report's "rewrite verdicts" section, built from the judge's remarks
 * (passes/judge.c): counts by verdict, then "fewer FLOPs, but slower" with
 * the limit that binds before and after, then the speedups. */
void rl_judge_print(const struct rl_pass_ctx *ctx, FILE *f);

#endif /* RL_PASS_H */
