/*
 * report.h - the roofline report: where a model's time goes on a machine.
 *
 * A report is one or more priced bindings of a model (a batch sweep gives one
 * per batch) on one machine profile, the batch at which each weighted node
 * crosses the machine balance, and optionally the remarks of the passes that
 * ran. It renders as
 *
 *   text  one row per kernel as it runs (a fused group or one node: name,
 *         op, output shape, FLOPs, bytes, intensity, bound, predicted time,
 *         share of the total; the nodes a fused kernel runs; a tiled
 *         kernel's schedule and bytes per memory level) and a summary;
 *         per_node: one row per node, unfused, instead
 *   json  the same numbers for machines (schema in the README)
 *   svg   a log-log roofline plot (libxml2's xmlTextWriter): the slope of
 *         each memory level, the ceiling of each precision the profile has,
 *         the bend, every node a point, one series per batch
 *   html  one self-contained page: the plot inline and sortable tables
 *
 * Nothing is decided here: the numbers are the cost model's (ir/cost.h), the
 * verdicts the passes' remarks. Files are written atomically: on any error
 * nothing is written.
 */
#ifndef RL_REPORT_H
#define RL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cost.h"
#include "ir.h"
#include "machine.h"

struct rl_pass_ctx;

enum rl_report_format {
	RL_REPORT_TEXT, /* table and summary */
	RL_REPORT_JSON, /* for machines */
	RL_REPORT_SVG,  /* roofline plot */
	RL_REPORT_HTML, /* plot and sortable tables in one page */
};
/* "text" | "json" | "svg" | "html"; false for anything else. */
bool rl_report_format_parse(const char *s, enum rl_report_format *f);
/* From a file name's extension: .txt .text .json .svg .html .htm; false if
 * none of these. */
bool rl_report_format_from_path(const char *path, enum rl_report_format *f);

/* One priced binding of the model. */
struct rl_report_series {
	int64_t batch;       /* the batch it was bound to; 0 when none was */
	struct rl_graph *g;  /* borrowed; priced by rl_report_render */
};

enum rl_crossing_kind {
	RL_CROSS_AT,     /* memory-bound below `batch`, compute-bound from it */
	RL_CROSS_ALWAYS, /* compute-bound already at batch 1 */
	RL_CROSS_NEVER,  /* memory- or latency-bound at every batch */
};

/* Where a weighted node (MatMul/Gemm/Conv/ConvTranspose with a constant
 * weight) crosses the balance. Its FLOPs and bytes are affine in the batch,
 * flops = f0 + f*b and bytes = w + a*b (w: the weights), so with the roofs
 * t_compute = flops/peak and t_memory = read/bw_r + write/bw_w (at the
 * node's access efficiency) the crossing is where the two times meet:
 * b* = (m0 - c0) / (c1 - m1) for t_memory = m0 + m1*b, t_compute = c0 + c1*b
 * (with equal read and write bandwidth this is B*w / (f - B*a) for the
 * balance B, when f0 = 0). */
struct rl_report_crossing {
	const char *node;        /* node name (borrowed from the first graph) */
	enum rl_op op;
	double batch;            /* RL_CROSS_AT: the crossing batch (real) */
	enum rl_crossing_kind kind;
	double f, f0, w, a;      /* flops = f0 + f*b, bytes = w + a*b */
	double balance;          /* FLOP/byte the node is classified against */
};

struct rl_report {
	const char *model;                 /* path, for titles */
	const struct rl_machine *m;
	struct rl_report_series *series;   /* >= 1 */
	int nseries;
	struct rl_report_crossing *cross;  /* may be NULL */
	int ncross;
	const struct rl_pass_ctx *ctx;     /* remarks to include; may be NULL */
	const char *note;                  /* one line for the summary; may be NULL */
	bool per_node;                     /* text: one row per node, unfused, instead
	                                      of one per kernel */
};

/*
 * Derive the crossing batch of every weighted node from two bindings of the
 * same model at batches b1 != b2 (g1, g2; nodes matched by index and name).
 * Returns the count (0 when there is nothing weighted) and a malloc'd array
 * in *out (free it), or -1 when the graphs do not match.
 */
int rl_report_crossings(const struct rl_graph *g1, int64_t b1,
                        const struct rl_graph *g2, int64_t b2,
                        const struct rl_machine *m,
                        struct rl_report_crossing **out);

/* Price every series (rl_cost_graph) and render the report into a malloc'd,
 * NUL-terminated buffer (*buf, *len). On failure returns RL_ERR_INVALID
 * (no series or machine) or RL_ERR_NOMEM with a one-line message in err. */
enum rl_status rl_report_render(const struct rl_report *r, enum rl_report_format f,
                                char **buf, size_t *len, char *err, size_t errlen);

/* Render and write to path atomically (path NULL or "-": stdout); a failed
 * write is RL_ERR_IO. */
enum rl_status rl_report_write(const struct rl_report *r, enum rl_report_format f,
                               const char *path, char *err, size_t errlen);

#endif /* RL_REPORT_H */
