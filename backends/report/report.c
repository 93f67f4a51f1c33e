/*
 * report.c - the roofline report in text, JSON, SVG and HTML.
 *
 * Every format is rendered into memory first (open_memstream for text, JSON
 * and HTML; libxml2's xmlTextWriter over an xmlBuffer for SVG) and written
 * with rl_write_file_atomic, so a failure leaves nothing behind.
 *
 * Rows. Each series (one binding of the model) is priced with
 * rl_cost_kernels: the kernels as they run (a fused group or one node, tiled
 * ones level by level from rl_tile_traffic) are the report's rows, and their
 * sums its totals. Every live node also becomes a row of the per-node view
 * (--per-node, JSON `nodes`), of one of four kinds: a kernel that runs
 * (priced), a view or embedded constant (no bytes, no FLOPs, no kernel), a
 * node evaluated at build time (all outputs constant), or an unpriced node
 * (symbolic shapes left unbound). Kernel shares are of the series' predicted
 * time; node shares of the nodes' summed, unfused time.
 *
 * The plot. x is intensity (FLOP/byte), y attained rate (FLOP/s), both log.
 * Lines: each memory level's slope P = I * bw, the ceiling of every peak the
 * profile lists (vector and matrix units separately), the main-memory roof
 * at contiguous efficiency (dotted: where the cost model puts a contiguous
 * kernel), and the bend, where the fp32 ceiling meets main memory's slope.
 * Points: every kernel with FLOPs at (intensity, FLOPs / predicted time)
 * (a tiled kernel also at its intensity against each cache level's bytes),
 * coloured by operator family, area proportional to its share of the time,
 * the largest labelled; a batch sweep draws one marker shape per batch and
 * joins each weighted node's points across batches. Every point carries a
 * <title>, which browsers show on hover without any script.
 */
#include "report.h"

#include "frontends/onnx/onnx.h"
#include "passes/pass.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlwriter.h>

/* ---- formats ------------------------------------------------------------- */

bool rl_report_format_parse(const char *s, enum rl_report_format *f)
{
	static const struct { const char *name; enum rl_report_format f; } t[] = {
		{"text", RL_REPORT_TEXT}, {"txt", RL_REPORT_TEXT}, {"json", RL_REPORT_JSON},
		{"svg", RL_REPORT_SVG},   {"html", RL_REPORT_HTML},
	};
	for (size_t i = 0; s && i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(s, t[i].name) == 0) {
			*f = t[i].f;
			return true;
		}
	return false;
}

bool rl_report_format_from_path(const char *path, enum rl_report_format *f)
{
	const char *dot = path ? strrchr(path, '.') : NULL;
	const char *slash = path ? strrchr(path, '/') : NULL;
	if (!dot || (slash && dot < slash))
		return false;
	dot++;
	if (strcmp(dot, "txt") == 0 || strcmp(dot, "text") == 0) {
		*f = RL_REPORT_TEXT;
		return true;
	}
	if (strcmp(dot, "htm") == 0) {
		*f = RL_REPORT_HTML;
		return true;
	}
	if (strcmp(dot, "json") == 0 || strcmp(dot, "svg") == 0 || strcmp(dot, "html") == 0)
		return rl_report_format_parse(dot, f);
	return false;
}

/* ---- rows ---------------------------------------------------------------- */

enum row_kind {
	ROW_KERNEL,   /* a kernel runs: priced */
	ROW_VIEW,     /* no bytes, no FLOPs: aliased or embedded */
	ROW_BUILD,    /* every output known at build time */
	ROW_UNPRICED, /* symbolic shapes */
	ROW_INIT,     /* built once by NAME_init from constants, not per run */
};
static const char *const row_kind_name[] = {"kernel", "view", "build-time", "unpriced",
                                             "init"};

struct row {
	uint32_t node;
	enum row_kind kind;
	struct rl_counts c;
	struct rl_cost cost;
	double share; /* of the series' predicted time */
	double perf;  /* attained FLOP/s: flops / time */
};

struct srows {
	int64_t batch;
	struct rl_graph *g;
	struct row *rows;      /* one per live node: the per-node view */
	uint32_t nrows;
	double node_time;      /* the nodes' times summed, unfused: their shares' base */
	struct rl_kernels ks;  /* the kernels as they run: the rows of the report */
	double *kshare;        /* kernel k's share of t.time_s */
	struct row *krows;     /* the kernels as rows (node: the kernel's name node), for the plot */
	struct rl_cost_total t; /* over kernels (ks.t) */
	uint32_t nkind[ROW_INIT + 1];
};

static bool all_outputs_const(const struct rl_graph *g, const struct rl_node *n)
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

static bool build_rows(const struct rl_machine *m, const struct rl_report_series *s,
                       struct srows *r)
{
	memset(r, 0, sizeof(*r));
	r->batch = s->batch;
	r->g = s->g;
	if (!rl_cost_kernels(s->g, m, rl_tile_traffic, &r->ks))
		return false;
	r->t = r->ks.t;
	r->rows = calloc(s->g->norder ? s->g->norder : 1, sizeof(*r->rows));
	r->kshare = calloc(r->ks.nk ? r->ks.nk : 1, sizeof(*r->kshare));
	if (!r->rows || !r->kshare)
		return false;
	r->krows = calloc(r->ks.nk ? r->ks.nk : 1, sizeof(*r->krows));
	if (!r->krows)
		return false;
	for (uint32_t k = 0; k < r->ks.nk; k++) {
		const struct rl_kernel *kr = &r->ks.k[k];
		r->kshare[k] = r->t.time_s > 0 ? kr->cost.time_s / r->t.time_s : 0;
		r->krows[k] = (struct row){.node = kr->node, .kind = ROW_KERNEL, .c = kr->c,
		                           .cost = kr->cost, .share = r->kshare[k],
		                           .perf = kr->cost.time_s > 0 ? kr->cost.flops / kr->cost.time_s : 0};
	}
	for (uint32_t k = 0; k < s->g->norder; k++) {
		const struct rl_node *n = &s->g->nodes[s->g->order[k]];
		if (!n->dead && n->cost.time_s > 0 && !all_outputs_const(s->g, n))
			r->node_time += n->cost.time_s;
	}
	for (uint32_t k = 0; k < s->g->norder; k++) {
		uint32_t i = s->g->order[k];
		const struct rl_node *n = &s->g->nodes[i];
		if (n->dead)
			continue;
		struct row *w = &r->rows[r->nrows++];
		w->node = i;
		w->cost = n->cost;
		if (all_outputs_const(s->g, n)) {
			w->kind = ROW_BUILD;
			rl_count_node(s->g, i, &w->c);
			memset(&w->cost, 0, sizeof(w->cost));
		} else if (!rl_count_node(s->g, i, &w->c)) {
			w->kind = ROW_UNPRICED;
		} else if (w->cost.at_init) {
			w->kind = ROW_INIT;
		} else if (w->cost.time_s <= 0) {
			w->kind = ROW_VIEW;
		} else {
			w->kind = ROW_KERNEL;
			w->share = r->node_time > 0 ? w->cost.time_s / r->node_time : 0;
			w->perf = w->cost.flops / w->cost.time_s;
		}
		r->nkind[w->kind]++;
	}
	return true;
}

/* Fused groups that run as one kernel: count and the nodes in them. */
static void fusion_of(const struct srows *s, uint32_t *groups, uint32_t *nodes)
{
	*groups = *nodes = 0;
	for (uint32_t k = 0; k < s->ks.nk; k++)
		if (s->ks.k[k].group >= 0) {
			(*groups)++;
			*nodes += s->ks.k[k].n;
		}
}

/* "MatMul" for one node; "MatMul+2" (anchor and epilogue) or "Add+9" for a
 * fused group. */
static const char *kernel_op(const struct srows *s, const struct rl_kernel *k, char *b,
                             size_t len)
{
	const char *op = rl_op_table[s->g->nodes[k->node].op].name;
	if (k->n > 1)
		snprintf(b, len, "%s+%u", op, k->n - 1);
	else
		snprintf(b, len, "%s", op);
	return b;
}

static const char *tile_kind_name(int kind)
{
	switch (kind) {
	case RL_TILE_GEMM: return "GEMM";
	case RL_TILE_GEMV: return "GEMV";
	case RL_TILE_STRIP: return "STRIP";
	case RL_TILE_PLAIN: return "PLAIN";
	default: return "none";
	}
}

/* The schedule of kernel k's node ("" when it has none). */
static const struct rl_tile *kernel_tile(const struct srows *s, const struct rl_kernel *k)
{
	for (uint32_t j = 0; j < k->n; j++) {
		const struct rl_tile *t = &s->g->nodes[s->ks.nodes[k->first + j]].tile;
		if (k->anchor != RL_NONE ? s->ks.nodes[k->first + j] == k->anchor
		                         : t->kind != RL_TILE_NONE)
			return t;
	}
	return NULL;
}

/* "GEMM mr=6 nr=16 kc=168 mc=582 nc=512 par=4" into b. */
static const char *tile_str(const struct rl_tile *t, char *b, size_t len)
{
	switch (t->kind) {
	case RL_TILE_GEMM:
		snprintf(b, len, "GEMM mr=%d nr=%d kc=%d mc=%d nc=%d par=%lld", t->mr, t->nr, t->kc,
		         t->mc, t->nc, (long long)t->par);
		break;
	case RL_TILE_GEMV:
		snprintf(b, len, "GEMV accum=%d nr=%d kc=%d par=%lld", t->accum, t->nr, t->kc,
		         (long long)t->par);
		break;
	case RL_TILE_STRIP:
		snprintf(b, len, "STRIP strip=%lld par=%lld", (long long)t->strip, (long long)t->par);
		break;
	default:
		snprintf(b, len, "%s", tile_kind_name(t->kind));
	}
	return b;
}

static const char *family_color(enum rl_family f)
{
	static const char *const c[RL_FAM_COUNT_] = {
		[RL_FAM_ELEMWISE] = "#1f77b4", [RL_FAM_MATMUL] = "#d62728",
		[RL_FAM_CONV] = "#ff7f0e",     [RL_FAM_POOL] = "#2ca02c",
		[RL_FAM_NORM] = "#9467bd",     [RL_FAM_REDUCE] = "#8c564b",
		[RL_FAM_SHAPE] = "#e377c2",    [RL_FAM_CONST] = "#7f7f7f",
		[RL_FAM_ATTN] = "#17becf",
		[RL_FAM_QUANT] = "#aec7e8",
		[RL_FAM_SEQ] = "#bcbd22",
		[RL_FAM_DETECT] = "#98df8a",
	};
	return (unsigned)f < RL_FAM_COUNT_ ? c[f] : "#000000";
}

static const char *access_name(enum rl_access a)
{
	switch (a) {
	case RL_ACCESS_CONTIGUOUS: return "contiguous";
	case RL_ACCESS_STRIDED: return "strided";
	case RL_ACCESS_GATHER: return "gather";
	}
	return "?";
}

/* "1x256" for output 0, ", "-joined for several outputs. */
static void out_shapes(const struct rl_graph *g, const struct rl_node *n, char *b,
                       size_t len)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < n->nout && p < len; i++) {
		char sb[160];
		if (n->out[i] == RL_NONE)
			continue;
		p += (size_t)snprintf(b + p, len - p, "%s%s", p ? "," : "",
		                      rl_shape_str(&g->values[n->out[i]].shape, sb, sizeof(sb)));
	}
}

static const char *out_dtype(const struct rl_graph *g, const struct rl_node *n)
{
	return n->nout && n->out[0] != RL_NONE ? rl_dtype_name(g->values[n->out[0]].dtype)
	                                       : "-";
}

/* ---- number formatting ---------------------------------------------------- */

/* 1234567 -> "1.23 M" (k M G T P E); below 1000 plainly. */
static char *si(double v, char *b, size_t n)
{
	static const char *const pre[] = {"", " k", " M", " G", " T", " P", " E"};
	int e = 0;
	double a = fabs(v);
	while (a >= 999.5 && e < 6) {
		a /= 1000;
		v /= 1000;
		e++;
	}
	if (e == 0 && v == floor(v))
		snprintf(b, n, "%.0f", v);
	else
		snprintf(b, n, "%.3g%s", v, pre[e]);
	return b;
}

/* v with an SI prefix glued to unit: "72 FLOP", "1.73 MFLOP", "668 kB". */
static char *si_u(double v, const char *unit, char *b, size_t n)
{
	static const char pre[] = " kMGTPE";
	int e = 0;
	while (fabs(v) >= 999.5 && e < 6) {
		v /= 1000;
		e++;
	}
	if (e == 0)
		snprintf(b, n, "%.4g %s", v, unit);
	else
		snprintf(b, n, "%.3g %c%s", v, pre[e], unit);
	return b;
}

static char *secs(double s, char *b, size_t n)
{
	if (s <= 0)
		snprintf(b, n, "0 s");
	else if (s < 1e-6)
		snprintf(b, n, "%.3g ns", s * 1e9);
	else if (s < 1e-3)
		snprintf(b, n, "%.3g us", s * 1e6);
	else if (s < 1)
		snprintf(b, n, "%.3g ms", s * 1e3);
	else
		snprintf(b, n, "%.3g s", s);
	return b;
}

static const struct rl_mem_level *dram(const struct rl_machine *m)
{
	return rl_machine_dram(m);
}

/* Peak used for the bend and the summary: fp32 with matrix units. */
static double fp32_peak(const struct rl_machine *m)
{
	return rl_machine_peak(m, RL_PREC_FP32, true);
}

/* ---- text ------------------------------------------------------------------ */

static void text_machine(FILE *f, const struct rl_machine *m)
{
	char a[32], b[32], c[32];
	const struct rl_mem_level *d = dram(m);
	fprintf(f, "  machine   %s: %s (%s, %d %s)\n", m->name, m->desc, m->kind, m->cores,
	        strcmp(m->kind, "gpu") == 0 ? "SMs" : "cores");
	if (m->run_threads > 0)
		fprintf(f, "  threads   the run priced on %d of the %d cores (--threads)\n",
		        m->run_threads, m->cores);
	fprintf(f, "            fp32 peak %s, %s %s (x%.2g contiguous, x%.2g strided, "
	        "x%.2g gather), launch %s\n", si_u(fp32_peak(m), "FLOP/s", a, sizeof(a)), d->name,
	        si_u(d->read_bw, "B/s", b, sizeof(b)), m->eff_contiguous, m->eff_strided, m->eff_gather,
	        secs(m->launch_latency, c, sizeof(c)));
	char ln[160];
	rl_machine_launch_note(m, ln, sizeof ln);
	fprintf(f, "  launch    %s\n", ln);
	fprintf(f, "  balance   %.3g FLOP/B fp32 (peak / %s bandwidth); %.3g FLOP/B at contiguous "
	        "efficiency, which classifies nodes\n", rl_machine_balance(m, RL_PREC_FP32),
	        d->name, rl_cost_balance(m, RL_PREC_FP32, true));
	if (rl_machine_calibrated(m))
		fprintf(f, "  compute   priced from the profile's measured rates of the emitted code "
		        "(exp %s/s, tanh %s/s, div %s/s, GEMM %s per core%s%s)\n",
		        si_u(m->calib[RL_MATH_EXP], "", a, sizeof(a)),
		        si_u(m->calib[RL_MATH_TANH], "", b, sizeof(b)),
		        si_u(m->calib[RL_MATH_DIV], "", c, sizeof(c)),
		        si_u(m->calib[RL_MATH_GEMM], "FLOP/s", (char[32]){0}, 32),
		        m->calib_cc[0] ? ", " : "", m->calib_cc);
	else
		fprintf(f, "  compute   peak-based estimate: %s has no calibrated rates "
		        "(`rlopt probe` measures them)\n", m->name);
}

static void text_totals(FILE *f, const struct srows *s)
{
	char a[32], b[32], c[32], d[32];
	const struct rl_cost_total *t = &s->t;
	double tt = t->time_s > 0 ? t->time_s : 1;
	fprintf(f, "  total     %u kernels, %s (%s), %s moved, predicted %s\n", t->nodes,
	        si_u(t->flops, "FLOP", a, sizeof(a)), si_u(t->macs, "MAC", c, sizeof(c)),
	        si_u(t->bytes, "B", b, sizeof(b)), secs(t->time_s, d, sizeof(d)));
	uint32_t tiled = 0;
	for (uint32_t k = 0; k < s->ks.nk; k++)
		tiled += s->ks.k[k].tiled;
	if (tiled)
		fprintf(f, "  levels    %u of the kernels priced level by level from their tiles "
		        "(the slowest level or the compute roof binds)\n", tiled);
	fprintf(f, "  bound     memory %u kernels (%.1f%% of time), compute %u (%.1f%%), "
	        "latency %u (%.1f%%)\n", t->memory, 100 * t->time_memory / tt, t->compute,
	        100 * t->time_compute / tt, t->latency, 100 * t->time_latency / tt);
	if (s->nkind[ROW_VIEW] || s->nkind[ROW_BUILD] || s->nkind[ROW_UNPRICED])
		fprintf(f, "  no kernel %u views or embedded constants, %u evaluated at build time%s",
		        s->nkind[ROW_VIEW], s->nkind[ROW_BUILD], s->nkind[ROW_UNPRICED] ? "" : "\n");
	if (s->nkind[ROW_UNPRICED])
		fprintf(f, "; %u unpriced (symbolic shapes: bind with --batch, --dim or --shape)\n",
		        s->nkind[ROW_UNPRICED]);
	if (t->init_nodes)
		fprintf(f, "  at init   %u nodes computing constants from constants run once in "
		        "NAME_init (%s written), not priced per run\n", t->init_nodes,
		        si_u(t->init_bytes, "B", a, sizeof(a)));
}

/* "L1 1.04 GB, L2 336 MB, DRAM 71.3 MB" for a kernel priced level by level. */
static void levels_str(const struct rl_machine *m, const struct rl_kernel *k, char *b,
                       size_t len)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < m->nlevels && p < len; i++) {
		char x[32];
		p += (size_t)snprintf(b + p, len - p, "%s%s %s%s", i ? ", " : "", m->level[i].name,
		                      si_u(k->bytes_level[i], "B", x, sizeof(x)),
		                      k->cost.bound == RL_BOUND_MEMORY && k->bound_level == i
		                              ? " (binds)" : "");
	}
}

/* The kernels as they run: one row each, then the nodes a fused kernel runs
 * and the schedule and bytes per level of a tiled one. */
static void text_kernels(FILE *f, const struct rl_machine *m, const struct srows *s)
{
	fprintf(f, "%-28s %-18s %-16s %10s %10s %8s %-13s %10s %6s\n", "kernel", "op", "output",
	        "FLOPs", "bytes", "FLOP/B", "bound", "time", "share");
	for (uint32_t q = 0; q < s->ks.nk; q++) {
		const struct rl_kernel *k = &s->ks.k[q];
		const struct rl_node *n = &s->g->nodes[k->node];
		char sh[256], op[48], a[32], b[32], c[32], in[32], bd[48];
		/* a group's output is its last member's */
		const struct rl_node *last = &s->g->nodes[s->ks.nodes[k->first + k->n - 1]];
		out_shapes(s->g, last, sh, sizeof(sh));
		snprintf(in, sizeof(in), "%.3g", k->cost.intensity);
		fprintf(f, "%-28.28s %-18s %-16.16s %10s %10s %8s %-13s %10s %5.1f%%\n", n->name,
		        kernel_op(s, k, op, sizeof(op)), sh, si(k->cost.flops, a, sizeof(a)),
		        si(k->cost.bytes, b, sizeof(b)), k->cost.bytes > 0 ? in : "-",
		        rl_kernel_bound_str(k, m, bd, sizeof(bd)), secs(k->cost.time_s, c, sizeof(c)),
		        100 * s->kshare[q]);
		if (k->n > 1) {
			char list[160];
			size_t p = 0;
			uint32_t j;
			for (j = 0; j < k->n && p < sizeof(list) - 40; j++) {
				const struct rl_node *x = &s->g->nodes[s->ks.nodes[k->first + j]];
				p += (size_t)snprintf(list + p, sizeof(list) - p, "%s%s", j ? ", " : "",
				                      x->name);
			}
			fprintf(f, "    runs %u nodes: %s%s\n", k->n, list, j < k->n ? ", ..." : "");
		}
		const struct rl_tile *t = kernel_tile(s, k);
		if (k->tiled && t && t->kind != RL_TILE_PLAIN) {
			char ts[128], lv[512];
			levels_str(m, k, lv, sizeof(lv));
			fprintf(f, "    tile %s; bytes per level: %s\n", tile_str(t, ts, sizeof(ts)), lv);
		}
		if (n->op == RL_OP_Conv && n->tile.conv == RL_CONV_WINO && k->c.flops_run > 0) {
			char a2[32];
			fprintf(f, "    form Winograd F(2x2, 3x3): runs %s FLOPs (the products 4/9 of "
			        "the direct form's, and the transforms), priced as run\n",
			        si(k->c.flops_run, a2, sizeof(a2)));
		}
	}
}

static void text_rows(FILE *f, const struct srows *s)
{
	fprintf(f, "%-28s %-18s %-16s %10s %10s %8s %-8s %10s %6s\n", "node", "op", "output",
	        "FLOPs", "bytes", "FLOP/B", "bound", "time", "share");
	for (uint32_t k = 0; k < s->nrows; k++) {
		const struct row *w = &s->rows[k];
		const struct rl_node *n = &s->g->nodes[w->node];
		char sh[256], a[32], b[32], c[32], in[32], share[16];
		out_shapes(s->g, n, sh, sizeof(sh));
		const char *bound = w->kind == ROW_KERNEL ? rl_bound_name((enum rl_bound)w->cost.bound)
		                                         : row_kind_name[w->kind];
		if (w->kind == ROW_UNPRICED) {
			fprintf(f, "%-28.28s %-18s %-16.16s %10s %10s %8s %-8s %10s %6s\n", n->name,
			        rl_op_table[n->op].name, sh, "?", "?", "?", "?", "?", "?");
			continue;
		}
		double fl = w->kind == ROW_BUILD ? 0 : w->cost.flops;
		double by = w->kind == ROW_BUILD ? 0 : w->cost.bytes;
		snprintf(in, sizeof(in), "%.3g", w->cost.intensity);
		snprintf(share, sizeof(share), "%.1f%%", 100 * w->share);
		fprintf(f, "%-28.28s %-18s %-16.16s %10s %10s %8s %-8s %10s %6s\n", n->name,
		        rl_op_table[n->op].name, sh, si(fl, a, sizeof(a)), si(by, b, sizeof(b)),
		        w->kind == ROW_KERNEL && by > 0 ? in : "-", bound,
		        w->kind == ROW_KERNEL ? secs(w->cost.time_s, c, sizeof(c)) : "-",
		        w->kind == ROW_KERNEL ? share : "-");
	}
}

static const char *cross_kind_name(enum rl_crossing_kind k)
{
	switch (k) {
	case RL_CROSS_AT: return "at";
	case RL_CROSS_ALWAYS: return "always";
	case RL_CROSS_NEVER: return "never";
	}
	return "?";
}

static void text_cross(FILE *f, const struct rl_report *r)
{
	if (!r->ncross)
		return;
	fprintf(f, "\ncrossing batch of the weighted nodes (memory-bound below it, compute-bound "
	        "from it):\n");
	fprintf(f, "  %-28s %-14s %12s %12s %10s  %s\n", "node", "op", "FLOPs/batch", "weights B",
	        "balance", "crossing");
	for (int i = 0; i < r->ncross; i++) {
		const struct rl_report_crossing *x = &r->cross[i];
		char a[32], b[32], cb[64];
		if (x->kind == RL_CROSS_AT)
			snprintf(cb, sizeof(cb), "batch %.0f (%.4g)", ceil(x->batch), x->batch);
		else if (x->kind == RL_CROSS_ALWAYS)
			snprintf(cb, sizeof(cb), "compute-bound at every batch");
		else
			snprintf(cb, sizeof(cb), "never (memory-bound at every batch)");
		fprintf(f, "  %-28.28s %-14s %12s %12s %10.3g  %s\n", x->node, rl_op_table[x->op].name,
		        si(x->f, a, sizeof(a)), si(x->w, b, sizeof(b)), x->balance, cb);
	}
}

static void text_remarks(FILE *f, const struct rl_pass_ctx *ctx)
{
	if (!ctx || !ctx->nremarks)
		return;
	fprintf(f, "\nremarks of the passes (%u):\n", ctx->nremarks);
	rl_remarks_print(ctx, f);
}

static void render_text(FILE *f, const struct rl_report *r, const struct srows *s, int ns)
{
	const struct srows *s0 = &s[0];
	fprintf(f, "rlopt report: %s on %s", r->model ? r->model : "model", r->m->name);
	if (s0->batch > 0 && ns == 1)
		fprintf(f, ", batch %lld", (long long)s0->batch);
	fputc('\n', f);
	if (ns > 1)
		fprintf(f, "%s at batch %lld (the first of the sweep):\n",
		        r->per_node ? "nodes" : "kernels", (long long)s0->batch);
	if (r->per_node)
		text_rows(f, s0);
	else
		text_kernels(f, r->m, s0);
	fprintf(f, "\nsummary:\n");
	text_machine(f, r->m);
	text_totals(f, s0);
	if (r->note)
		fprintf(f, "  note      %s\n", r->note);
	uint32_t fg, fn;
	fusion_of(s0, &fg, &fn);
	if (fg) {
		char a[32];
		fprintf(f, "  fusion    %u fused kernels run %u nodes; %s of intermediates never "
		        "reach memory (--per-node shows the nodes unfused)\n", fg, fn,
		        si_u(r->ctx ? r->ctx->bytes_saved_fusion : 0, "B", a, sizeof(a)));
	}
	if (ns > 1) {
		fprintf(f, "\nbatch sweep:\n  %8s %12s %12s %12s %8s %8s %8s\n", "batch", "FLOPs",
		        "bytes", "time", "memory", "compute", "latency");
		for (int i = 0; i < ns; i++) {
			const struct rl_cost_total *t = &s[i].t;
			double tt = t->time_s > 0 ? t->time_s : 1;
			char a[32], b[32], c[32];
			fprintf(f, "  %8lld %12s %12s %12s %7.1f%% %7.1f%% %7.1f%%\n",
			        (long long)s[i].batch, si(t->flops, a, sizeof(a)),
			        si(t->bytes, b, sizeof(b)), secs(t->time_s, c, sizeof(c)),
			        100 * t->time_memory / tt, 100 * t->time_compute / tt,
			        100 * t->time_latency / tt);
		}
	}
	text_cross(f, r);
	if (r->ctx) {
		fputc('\n', f);
		rl_judge_print(r->ctx, f);
	}
	text_remarks(f, r->ctx);
}

/* ---- JSON ------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Integers exactly (MAC counts are compared for equality), others to 10
 * significant digits; non-finite as null. */
static void json_num(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (v == floor(v) && fabs(v) < 9e15)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.10g", v);
}

static void json_kv_num(FILE *f, const char *k, double v, bool comma)
{
	fprintf(f, "\"%s\": ", k);
	json_num(f, v);
	if (comma)
		fputs(", ", f);
}

static void json_machine(FILE *f, const struct rl_machine *m)
{
	fputs("{\"name\": ", f);
	json_str(f, m->name);
	fputs(", \"description\": ", f);
	json_str(f, m->desc);
	fputs(", \"kind\": ", f);
	json_str(f, m->kind);
	fprintf(f, ", \"cores\": %d, ", m->cores);
	fprintf(f, "\"threads\": %d, ", m->run_threads > 0 ? m->run_threads : m->cores);
	json_kv_num(f, "balance", rl_machine_balance(m, RL_PREC_FP32), true);
	json_kv_num(f, "balance_effective", rl_cost_balance(m, RL_PREC_FP32, true), true);
	fputs("\"peak\": {", f);
	bool first = true;
	for (int p = 0; p < RL_PREC_COUNT_; p++) {
		if (m->peak_vector[p] <= 0 && m->peak_matrix[p] <= 0)
			continue;
		fprintf(f, "%s\"%s\": {", first ? "" : ", ", rl_prec_name((enum rl_prec)p));
		json_kv_num(f, "vector", m->peak_vector[p], true);
		json_kv_num(f, "matrix", m->peak_matrix[p], false);
		fputc('}', f);
		first = false;
	}
	fputs("}, \"memory\": [", f);
	for (int i = 0; i < m->nlevels; i++) {
		fprintf(f, "%s{\"name\": ", i ? ", " : "");
		json_str(f, m->level[i].name);
		fputs(", ", f);
		json_kv_num(f, "capacity", m->level[i].capacity, true);
		json_kv_num(f, "read_bw", m->level[i].read_bw, true);
		if (m->level[i].core_read_bw > 0) /* one core's rate, where the profile has it */
			json_kv_num(f, "core_read_bw", m->level[i].core_read_bw, true);
		json_kv_num(f, "write_bw", m->level[i].write_bw, false);
		fputc('}', f);
	}
	fputs("], \"efficiency\": {", f);
	json_kv_num(f, "contiguous", m->eff_contiguous, true);
	json_kv_num(f, "strided", m->eff_strided, true);
	json_kv_num(f, "gather", m->eff_gather, false);
	fputs("}, ", f);
	json_kv_num(f, "launch_latency", m->launch_latency, true);
	fputs("\"launch_mode\": ", f);
	json_str(f, strcmp(m->kind, "gpu") != 0 ? "call" : rl_launch_mode_name(m->launch_mode));
	fputs(", ", f);
	json_kv_num(f, "launch_eager", m->launch_eager > 0 ? m->launch_eager : m->launch_latency,
	            true);
	if (m->launch_graph > 0)
		json_kv_num(f, "launch_graph", m->launch_graph, true);
	if (m->fork_latency > 0)
		json_kv_num(f, "fork_latency", m->fork_latency, true);
	fputs("\"compute_pricing\": ", f);
	json_str(f, rl_machine_calibrated(m) ? "calibrated" : "peak");
	if (rl_machine_calibrated(m)) {
		fputs(", \"calibration\": {", f);
		for (int k = 0; k < RL_MATH_COUNT_; k++)
			json_kv_num(f, rl_math_name((enum rl_math)k), m->calib[k], k + 1 < RL_MATH_COUNT_);
		fputc('}', f);
	}
	fputc('}', f);
}

static void json_total(FILE *f, const struct srows *s)
{
	const struct rl_cost_total *t = &s->t;
	fputs("{", f);
	json_kv_num(f, "flops", t->flops, true);
	json_kv_num(f, "macs", t->macs, true);
	json_kv_num(f, "bytes", t->bytes, true);
	json_kv_num(f, "time_s", t->time_s, true);
	fprintf(f, "\"kernels\": %u, \"memory\": {\"nodes\": %u, ", t->nodes, t->memory);
	json_kv_num(f, "time_s", t->time_memory, false);
	fprintf(f, "}, \"compute\": {\"nodes\": %u, ", t->compute);
	json_kv_num(f, "time_s", t->time_compute, false);
	fprintf(f, "}, \"latency\": {\"nodes\": %u, ", t->latency);
	json_kv_num(f, "time_s", t->time_latency, false);
	fprintf(f, "}, \"views\": %u, \"build_time\": %u, \"unpriced\": %u, \"at_init\": %u, ",
	        s->nkind[ROW_VIEW], s->nkind[ROW_BUILD], s->nkind[ROW_UNPRICED], t->init_nodes);
	json_kv_num(f, "at_init_bytes", t->init_bytes, false);
	fputc('}', f);
}

static void json_nodes(FILE *f, const struct srows *s, const char *ind)
{
	fputs("[", f);
	for (uint32_t k = 0; k < s->nrows; k++) {
		const struct row *w = &s->rows[k];
		const struct rl_node *n = &s->g->nodes[w->node];
		char sh[256];
		out_shapes(s->g, n, sh, sizeof(sh));
		fprintf(f, "%s\n%s{\"name\": ", k ? "," : "", ind);
		json_str(f, n->name);
		fputs(", \"op\": ", f);
		json_str(f, rl_op_table[n->op].name);
		fputs(", \"family\": ", f);
		json_str(f, rl_family_name(rl_op_table[n->op].family));
		fputs(", \"shape\": ", f);
		json_str(f, sh);
		fputs(", \"dtype\": ", f);
		json_str(f, out_dtype(s->g, n));
		fputs(", \"outputs\": [", f);
		for (int o = 0, first = 1; o < n->nout; o++) {
			if (n->out[o] == RL_NONE)
				continue;
			fputs(first ? "" : ", ", f);
			json_str(f, s->g->values[n->out[o]].name);
			first = 0;
		}
		fputs("], \"kind\": ", f);
		json_str(f, row_kind_name[w->kind]);
		fputs(", ", f);
		bool priced = w->kind != ROW_UNPRICED;
		bool zero = w->kind == ROW_BUILD || w->kind == ROW_INIT || !priced;
		json_kv_num(f, "flops", zero ? 0 : w->cost.flops, true);
		json_kv_num(f, "macs", zero ? 0 : w->c.macs, true);
		json_kv_num(f, "bytes", zero ? 0 : w->cost.bytes, true);
		json_kv_num(f, "bytes_read", zero ? 0 : w->c.bytes_read, true);
		json_kv_num(f, "bytes_write", zero ? 0 : w->c.bytes_write, true);
		json_kv_num(f, "weight_bytes", zero ? 0 : w->c.weight_bytes, true);
		json_kv_num(f, "intensity", zero ? 0 : w->cost.intensity, true);
		fputs("\"bound\": ", f);
		json_str(f, rl_bound_name((enum rl_bound)(zero ? RL_BOUND_MEMORY : w->cost.bound)));
		fputs(", \"access\": ", f);
		json_str(f, access_name(w->c.access));
		fputs(", ", f);
		json_kv_num(f, "time_s", zero ? 0 : w->cost.time_s, true);
		json_kv_num(f, "share", w->share, true);
		fprintf(f, "\"group\": %d, \"kernel\": %d, \"priced\": %s}", (int)n->group,
		        (int)s->ks.of[w->node], priced ? "true" : "false");
	}
	fprintf(f, "\n%s]", ind + (ind[0] ? 2 : 0));
}

static void json_kernels(FILE *f, const struct rl_machine *m, const struct srows *s,
                         const char *ind)
{
	fputs("[", f);
	for (uint32_t q = 0; q < s->ks.nk; q++) {
		const struct rl_kernel *k = &s->ks.k[q];
		const struct rl_node *n = &s->g->nodes[k->node];
		char op[48];
		fprintf(f, "%s\n%s{\"name\": ", q ? "," : "", ind);
		json_str(f, n->name);
		fputs(", \"op\": ", f);
		json_str(f, kernel_op(s, k, op, sizeof(op)));
		fprintf(f, ", \"group\": %d, \"fused\": %s, \"nodes\": [", (int)k->group,
		        k->n > 1 ? "true" : "false");
		for (uint32_t j = 0; j < k->n; j++) {
			fputs(j ? ", " : "", f);
			json_str(f, s->g->nodes[s->ks.nodes[k->first + j]].name);
		}
		fputs("], ", f);
		json_kv_num(f, "flops", k->cost.flops, true);
		json_kv_num(f, "macs", k->c.macs, true);
		json_kv_num(f, "bytes", k->cost.bytes, true);
		json_kv_num(f, "bytes_read", k->c.bytes_read, true);
		json_kv_num(f, "bytes_write", k->c.bytes_write, true);
		json_kv_num(f, "weight_bytes", k->c.weight_bytes, true);
		json_kv_num(f, "intensity", k->cost.intensity, true);
		fputs("\"bound\": ", f);
		json_str(f, rl_bound_name((enum rl_bound)k->cost.bound));
		fputs(", \"bound_level\": ", f);
		if (k->cost.bound == RL_BOUND_MEMORY && k->bound_level >= 0)
			json_str(f, m->level[k->bound_level].name);
		else
			fputs("null", f);
		fputs(", \"access\": ", f);
		json_str(f, access_name(k->c.access));
		fputs(", ", f);
		json_kv_num(f, "time_s", k->cost.time_s, true);
		/* the cores the kernel is priced on (rl_cost_threads: how the
		 * runtime splits it) */
		fprintf(f, "\"threads\": %d, ", rl_cost_threads(m, &k->c));
		json_kv_num(f, "share", s->kshare[q], true);
		fprintf(f, "\"tiled\": %s, \"levels\": [", k->tiled ? "true" : "false");
		for (int i = 0; i < m->nlevels; i++) {
			fputs(i ? ", {\"name\": " : "{\"name\": ", f);
			json_str(f, m->level[i].name);
			fputs(", ", f);
			json_kv_num(f, "bytes", k->bytes_level[i], false);
			fputc('}', f);
		}
		fputs("], \"tile\": ", f);
		const struct rl_tile *t = kernel_tile(s, k);
		if (t && t->kind != RL_TILE_NONE) {
			fputs("{\"kind\": ", f);
			json_str(f, tile_kind_name(t->kind));
			fprintf(f, ", \"mr\": %d, \"nr\": %d, \"kc\": %d, \"mc\": %d, \"nc\": %d, "
			        "\"accum\": %d, \"strip\": %lld, \"par\": %lld}", t->mr, t->nr, t->kc,
			        t->mc, t->nc, t->accum, (long long)t->strip, (long long)t->par);
		} else {
			fputs("null", f);
		}
		fputc('}', f);
	}
	fprintf(f, "\n%s]", ind + (ind[0] ? 2 : 0));
}

static void json_remarks(FILE *f, const struct rl_pass_ctx *ctx)
{
	fputs("[", f);
	for (uint32_t i = 0; ctx && i < ctx->nremarks; i++) {
		const struct rl_remark *x = &ctx->remarks[i];
		fprintf(f, "%s\n    {\"pass\": ", i ? "," : "");
		json_str(f, x->pass);
		fputs(", \"node\": ", f);
		json_str(f, x->node);
		fputs(", \"verdict\": ", f);
		json_str(f, x->verdict);
		fputs(", \"msg\": ", f);
		json_str(f, x->msg);
		fputs(", ", f);
		json_kv_num(f, "bytes_before", x->bytes_before, true);
		json_kv_num(f, "bytes_after", x->bytes_after, true);
		json_kv_num(f, "time_before", x->time_before, true);
		json_kv_num(f, "time_after", x->time_after, true);
		json_kv_num(f, "flops_before", x->flops_before, true);
		json_kv_num(f, "flops_after", x->flops_after, false);
		fputc('}', f);
	}
	fputs(ctx && ctx->nremarks ? "\n  ]" : "]", f);
}

static void render_json(FILE *f, const struct rl_report *r, const struct srows *s, int ns)
{
	fputs("{\n  \"format\": \"rlopt-report-1\",\n  \"model\": ", f);
	json_str(f, r->model);
	fputs(",\n  \"machine\": ", f);
	json_machine(f, r->m);
	fputs(",\n  \"batch\": ", f);
	if (s[0].batch > 0)
		fprintf(f, "%lld", (long long)s[0].batch);
	else
		fputs("null", f);
	fputs(",\n  \"note\": ", f);
	if (r->note)
		json_str(f, r->note);
	else
		fputs("null", f);
	fputs(",\n  \"kernels\": ", f);
	json_kernels(f, r->m, &s[0], "    ");
	fputs(",\n  \"nodes\": ", f);
	json_nodes(f, &s[0], "    ");
	fputs(",\n  \"total\": ", f);
	json_total(f, &s[0]);
	fputs(",\n  \"sweep\": [", f);
	for (int i = 0; ns > 1 && i < ns; i++) {
		fprintf(f, "%s\n    {\"batch\": %lld, \"total\": ", i ? "," : "",
		        (long long)s[i].batch);
		json_total(f, &s[i]);
		fputs(", \"kernels\": ", f);
		json_kernels(f, r->m, &s[i], "        ");
		fputs(", \"nodes\": ", f);
		json_nodes(f, &s[i], "        ");
		fputs("}", f);
	}
	fputs(ns > 1 ? "\n  ]" : "]", f);
	fputs(",\n  \"crossings\": [", f);
	for (int i = 0; i < r->ncross; i++) {
		const struct rl_report_crossing *x = &r->cross[i];
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, x->node);
		fputs(", \"op\": ", f);
		json_str(f, rl_op_table[x->op].name);
		fputs(", \"crossing\": ", f);
		json_str(f, cross_kind_name(x->kind));
		fputs(", \"crossing_batch\": ", f);
		if (x->kind == RL_CROSS_AT)
			json_num(f, ceil(x->batch));
		else
			fputs("null", f);
		fputs(", ", f);
		json_kv_num(f, "crossing_exact", x->kind == RL_CROSS_AT ? x->batch : NAN, true);
		json_kv_num(f, "flops_per_batch", x->f, true);
		json_kv_num(f, "flops_fixed", x->f0, true);
		json_kv_num(f, "bytes_fixed", x->w, true);
		json_kv_num(f, "bytes_per_batch", x->a, true);
		json_kv_num(f, "balance", x->balance, false);
		fputc('}', f);
	}
	fputs(r->ncross ? "\n  ]" : "]", f);
	uint32_t fg, fn;
	fusion_of(&s[0], &fg, &fn);
	fprintf(f, ",\n  \"fusion\": {\"groups\": %u, \"nodes\": %u, ", fg, fn);
	json_kv_num(f, "bytes_saved", r->ctx ? r->ctx->bytes_saved_fusion : 0, false);
	fputs("}", f);
	fputs(",\n  \"remarks\": ", f);
	json_remarks(f, r->ctx);
	fputs("\n}\n", f);
}

/* ---- SVG ------------------------------------------------------------------- */

#define SVG_W 1000
#define SVG_H 640
#define PL 90.0   /* plot left */
#define PT 50.0   /* plot top */
#define PW 640.0  /* plot width */
#define PH 500.0  /* plot height */

struct plot {
	double lx0, lx1, ly0, ly1; /* log10 ranges */
	xmlTextWriterPtr w;
	bool ok;
};

static double px(const struct plot *p, double x)
{
	return PL + (log10(x) - p->lx0) / (p->lx1 - p->lx0) * PW;
}

static double py(const struct plot *p, double y)
{
	double l = fmax(log10(y), p->ly0 - 0.05);
	return PT + PH - (l - p->ly0) / (p->ly1 - p->ly0) * PH;
}

/* Start an element with attributes given as name, value pairs (NULL ends). */
static void el(struct plot *p, const char *name, ...)
{
	if (!p->ok)
		return;
	p->ok = xmlTextWriterStartElement(p->w, BAD_CAST name) >= 0;
	va_list ap;
	va_start(ap, name);
	for (const char *k; p->ok && (k = va_arg(ap, const char *));) {
		const char *v = va_arg(ap, const char *);
		p->ok = xmlTextWriterWriteAttribute(p->w, BAD_CAST k, BAD_CAST v) >= 0;
	}
	va_end(ap);
}

static void end(struct plot *p)
{
	if (p->ok)
		p->ok = xmlTextWriterEndElement(p->w) >= 0;
}

static void text_node(struct plot *p, const char *s)
{
	if (p->ok)
		p->ok = xmlTextWriterWriteString(p->w, BAD_CAST s) >= 0;
}

static const char *num(char *b, double v)
{
	snprintf(b, 32, "%.2f", v);
	return b;
}

static void line(struct plot *p, double x1, double y1, double x2, double y2,
                 const char *stroke, const char *width, const char *dash)
{
	char a[32], b[32], c[32], d[32];
	el(p, "line", "x1", num(a, x1), "y1", num(b, y1), "x2", num(c, x2), "y2", num(d, y2),
	   "stroke", stroke, "stroke-width", width, NULL);
	if (dash && p->ok)
		p->ok = xmlTextWriterWriteAttribute(p->w, BAD_CAST "stroke-dasharray",
		                                    BAD_CAST dash) >= 0;
	end(p);
}

static void label(struct plot *p, double x, double y, const char *anchor, const char *size,
                  const char *fill, double rotate, const char *s)
{
	char a[32], b[32], tr[96];
	el(p, "text", "x", num(a, x), "y", num(b, y), "font-size", size, "fill", fill,
	   "text-anchor", anchor, NULL);
	if (rotate != 0 && p->ok) {
		snprintf(tr, sizeof(tr), "rotate(%.2f %.2f %.2f)", rotate, x, y);
		p->ok = xmlTextWriterWriteAttribute(p->w, BAD_CAST "transform", BAD_CAST tr) >= 0;
	}
	text_node(p, s);
	end(p);
}

/* Clip the segment of y = x * bw (log-log: a line of slope 1) to the plot. */
static bool slope_segment(const struct plot *p, double bw, double *x0, double *x1)
{
	double a = pow(10, p->lx0), b = pow(10, p->lx1);
	double ylo = pow(10, p->ly0), yhi = pow(10, p->ly1);
	if (a * bw < ylo)
		a = ylo / bw;
	if (b * bw > yhi)
		b = yhi / bw;
	*x0 = a;
	*x1 = b;
	return a < b;
}

struct ceiling {
	double peak;
	char label[96];
};

static int collect_ceilings(const struct rl_machine *m, struct ceiling *c, int max)
{
	int n = 0;
	for (int p = 0; p < RL_PREC_COUNT_; p++) {
		for (int unit = 0; unit < 2; unit++) {
			double v = unit ? m->peak_matrix[p] : m->peak_vector[p];
			if (v <= 0 || (unit && v == m->peak_vector[p]))
				continue;
			const char *nm = rl_prec_name((enum rl_prec)p);
			const char *un = unit ? " matrix" : (m->peak_matrix[p] > 0 ? " vector" : "");
			int j;
			for (j = 0; j < n; j++)
				if (fabs(c[j].peak - v) <= 1e-9 * v)
					break;
			if (j < n) {
				size_t l = strlen(c[j].label);
				snprintf(c[j].label + l, sizeof(c[j].label) - l, ", %s%s", nm, un);
			} else if (n < max) {
				c[n].peak = v;
				snprintf(c[n].label, sizeof(c[n].label), "%s%s", nm, un);
				n++;
			}
		}
	}
	return n;
}

static int cmp_share_desc(const void *a, const void *b)
{
	const struct row *x = *(const struct row *const *)a, *y = *(const struct row *const *)b;
	return (x->share < y->share) - (x->share > y->share);
}

/* Marker for series i at (x, y) with radius r. */
static void marker(struct plot *p, int i, double x, double y, double r, const char *fill)
{
	char a[32], b[32], c[32], d[32], pts[256];
	switch (i % 4) {
	case 0:
		el(p, "circle", "cx", num(a, x), "cy", num(b, y), "r", num(c, r), "fill", fill,
		   "fill-opacity", "0.75", "stroke", "#222", "stroke-width", "0.6", NULL);
		break;
	case 1:
		el(p, "rect", "x", num(a, x - r), "y", num(b, y - r), "width", num(c, 2 * r),
		   "height", num(d, 2 * r), "fill", fill, "fill-opacity", "0.75", "stroke", "#222",
		   "stroke-width", "0.6", NULL);
		break;
	default:
		if (i % 4 == 2)
			snprintf(pts, sizeof(pts), "%.2f,%.2f %.2f,%.2f %.2f,%.2f", x, y - 1.2 * r,
			         x - 1.1 * r, y + 0.8 * r, x + 1.1 * r, y + 0.8 * r);
		else
			snprintf(pts, sizeof(pts), "%.2f,%.2f %.2f,%.2f %.2f,%.2f %.2f,%.2f", x,
			         y - 1.3 * r, x + 1.3 * r, y, x, y + 1.3 * r, x - 1.3 * r, y);
		el(p, "polygon", "points", pts, "fill", fill, "fill-opacity", "0.75", "stroke",
		   "#222", "stroke-width", "0.6", NULL);
		break;
	}
}

/*
 * The hierarchical roofline: a tiled kernel also sits at its intensity
 * against each cache level's traffic (FLOPs / bytes at that level, same
 * attained rate), a small hollow square per level joined to its main-memory
 * point; the level that binds is drawn solid. A point under a level's slope
 * is bound by that level.
 */
static void level_points(struct plot *p, const struct rl_machine *m, const struct rl_kernel *k,
                         const struct row *x, const char *name, const char *fill)
{
	char a[32], b[32], t[256], by[32];
	double y = py(p, x->perf);
	for (int i = 0; i < m->nlevels - 1; i++) {
		if (!(k->bytes_level[i] > 0) || k->bytes_level[i] == k->cost.bytes)
			continue; /* none, or on the main-memory point itself */
		double in = k->cost.flops / k->bytes_level[i];
		if (!(in > 0) || log10(in) < p->lx0 || log10(in) > p->lx1)
			continue;
		double xx = px(p, in);
		line(p, xx, y, px(p, x->cost.intensity), y, fill, "0.8", "2 2");
		bool binds = k->cost.bound == RL_BOUND_MEMORY && k->bound_level == i;
		el(p, "rect", "x", num(a, xx - 3), "y", num(b, y - 3), "width", "6", "height", "6",
		   "fill", binds ? fill : "none", "stroke", fill, "stroke-width", "1.2", NULL);
		el(p, "title", NULL);
		snprintf(t, sizeof(t), "%s at %s: %s, %.3g FLOP/B%s", name, m->level[i].name,
		         si_u(k->bytes_level[i], "B", by, sizeof(by)), in,
		         binds ? " (this level binds)" : "");
		text_node(p, t);
		end(p);
		end(p);
	}
}

/* The SVG roofline is drawn in layers, one function each, back to front:
 * document, axes, memory slopes, compute ceilings, the bend, batch sweeps,
 * kernel points, their labels, then the legend outside the plot area.
 * Every layer draws through `struct plot`, whose `ok` turns false on the
 * first libxml2 error and makes the rest no-ops. */

/* The axes' log10 ranges: every point, the bend, and a decade or two
 * either side. */
static void svg_ranges(struct plot *p, const struct rl_machine *m, const struct ceiling *ceil_,
                       int nc, const struct srows *s, int ns)
{
	double pmax = 0, pmin = INFINITY, imin = INFINITY, imax = 0, perfmin = INFINITY;
	for (int i = 0; i < nc; i++) {
		pmax = fmax(pmax, ceil_[i].peak);
		pmin = fmin(pmin, ceil_[i].peak);
	}
	double bw = dram(m)->read_bw, bal = fp32_peak(m) / bw;
	for (int k = 0; k < ns; k++)
		for (uint32_t j = 0; j < s[k].ks.nk; j++) {
			const struct row *x = &s[k].krows[j];
			if (x->kind != ROW_KERNEL || x->cost.intensity <= 0 || x->perf <= 0)
				continue;
			imin = fmin(imin, x->cost.intensity);
			imax = fmax(imax, x->cost.intensity);
			perfmin = fmin(perfmin, x->perf);
		}
	double xlo = fmin(isfinite(imin) ? imin : bal, bal / 100);
	double xhi = fmax(imax, bal * 100);
	p->lx0 = floor(log10(xlo));
	p->lx1 = ceil(log10(xhi));
	if (p->lx1 - p->lx0 > 10)
		p->lx0 = p->lx1 - 10;
	p->ly1 = ceil(log10(pmax * 2));
	double ylo = fmin(isfinite(perfmin) ? perfmin : pmin, bw * pow(10, p->lx0));
	ylo = fmin(ylo, pmin / 10);
	p->ly0 = floor(log10(ylo));
	if (p->ly1 - p->ly0 > 12)
		p->ly0 = p->ly1 - 12; /* points below sit on the axis */
	if (p->ly1 - p->ly0 < 3)
		p->ly0 = p->ly1 - 3;
}

/* The <svg> element (left open), its title, background and heading. */
static void svg_open(struct plot *p, const struct rl_report *r, const struct srows *s, int ns)
{
	xmlTextWriterPtr w = p->w;
	char a[64], b[64], c[64], t[512];
	p->ok = xmlTextWriterStartElement(w, BAD_CAST "svg") >= 0;
	if (p->ok) {
		snprintf(a, sizeof(a), "%d", SVG_W);
		snprintf(b, sizeof(b), "%d", SVG_H);
		snprintf(c, sizeof(c), "0 0 %d %d", SVG_W, SVG_H);
		p->ok = xmlTextWriterWriteAttribute(w, BAD_CAST "xmlns",
		                                    BAD_CAST "http://www.w3.org/2000/svg") >= 0 &&
		        xmlTextWriterWriteAttribute(w, BAD_CAST "width", BAD_CAST a) >= 0 &&
		        xmlTextWriterWriteAttribute(w, BAD_CAST "height", BAD_CAST b) >= 0 &&
		        xmlTextWriterWriteAttribute(w, BAD_CAST "viewBox", BAD_CAST c) >= 0 &&
		        xmlTextWriterWriteAttribute(w, BAD_CAST "font-family",
		                                    BAD_CAST "sans-serif") >= 0;
	}
	snprintf(t, sizeof(t), "Roofline: %s on %s", r->model ? r->model : "model", r->m->name);
	el(p, "title", NULL);
	text_node(p, t);
	end(p);
	el(p, "rect", "x", "0", "y", "0", "width", "100%", "height", "100%", "fill", "white", NULL);
	end(p);
	if (ns == 1 && s[0].batch > 0)
		snprintf(t + strlen(t), sizeof(t) - strlen(t), ", batch %lld", (long long)s[0].batch);
	label(p, PL, 28, "start", "16", "#111", 0, t);
}

/* Grid, frame and axis titles; then the clip path, and the clipped group
 * (left open) that everything plotted goes into. */
static void svg_axes(struct plot *p)
{
	char a[64], b[64], c[64], d[64];
	el(p, "g", "id", "grid", NULL);
	for (double e = p->lx0; e <= p->lx1 + 1e-9; e++) {
		double x = px(p, pow(10, e));
		line(p, x, PT, x, PT + PH, "#e4e4e4", "1", NULL);
		snprintf(a, sizeof(a), "%g", pow(10, e));
		label(p, x, PT + PH + 18, "middle", "12", "#333", 0, a);
	}
	for (double e = p->ly0; e <= p->ly1 + 1e-9; e++) {
		double y = py(p, pow(10, e));
		line(p, PL, y, PL + PW, y, "#e4e4e4", "1", NULL);
		si(pow(10, e), a, sizeof(a));
		label(p, PL - 8, y + 4, "end", "12", "#333", 0, a);
	}
	end(p);
	el(p, "rect", "x", num(a, PL), "y", num(b, PT), "width", num(c, PW), "height", num(d, PH),
	   "fill", "none", "stroke", "#444", "stroke-width", "1", NULL);
	end(p);
	label(p, PL + PW / 2, PT + PH + 42, "middle", "13", "#111", 0,
	      "arithmetic intensity (FLOP / byte, main-memory traffic)");
	label(p, 24, PT + PH / 2, "middle", "13", "#111", -90, "attained FLOP/s");

	/* clip everything plotted to the axes */
	el(p, "defs", NULL);
	el(p, "clipPath", "id", "plotarea", NULL);
	el(p, "rect", "x", num(a, PL), "y", num(b, PT), "width", num(c, PW), "height", num(d, PH),
	   NULL);
	end(p);
	end(p);
	end(p);
	el(p, "g", "clip-path", "url(#plotarea)", NULL);
}

/* One slope per memory level, closest first; main memory drawn last and
 * thickest, plus main memory at contiguous efficiency. */
static void svg_memory(struct plot *p, const struct rl_machine *m)
{
	char b[64], t[512];
	double bw = dram(m)->read_bw;
	/* angle of a slope-1 line on screen */
	double ang = -atan((PH / (p->ly1 - p->ly0)) / (PW / (p->lx1 - p->lx0))) * 180 / M_PI;
	el(p, "g", "id", "memory", NULL);
	for (int i = 0; i < m->nlevels; i++) {
		const struct rl_mem_level *L = &m->level[i];
		double x0, x1;
		if (!slope_segment(p, L->read_bw, &x0, &x1))
			continue;
		bool main = i == m->nlevels - 1;
		line(p, px(p, x0), py(p, x0 * L->read_bw), px(p, x1), py(p, x1 * L->read_bw),
		     main ? "#000" : "#6a6a6a", main ? "2" : "1", main ? NULL : "6 4");
		snprintf(t, sizeof(t), "%s %s", L->name, si_u(L->read_bw, "B/s", b, sizeof(b)));
		/* stagger the labels along their parallel lines: main memory first */
		double lx = x0 * pow(10, 0.25 + 0.9 * (m->nlevels - 1 - i));
		if (lx > x1 / 2)
			lx = x0 * pow(10, 0.25);
		label(p, px(p, lx) + 4, py(p, lx * L->read_bw) - 6, "start", "11",
		      main ? "#000" : "#555", ang, t);
	}
	/* main memory at contiguous efficiency: where the model puts a
	 * streaming kernel */
	double x0, x1, effbw = bw * (m->eff_contiguous > 0 ? m->eff_contiguous : 1);
	if (effbw < bw && slope_segment(p, effbw, &x0, &x1))
		line(p, px(p, x0), py(p, x0 * effbw), px(p, x1), py(p, x1 * effbw), "#000", "1",
		     "2 3");
	end(p);
}

/* The compute ceilings, and the bend where fp32 meets main memory. */
static void svg_compute(struct plot *p, const struct rl_machine *m, const struct ceiling *ceil_,
                        int nc)
{
	char a[64], b[64], t[512];
	el(p, "g", "id", "compute", NULL);
	for (int i = 0; i < nc; i++) {
		double y = py(p, ceil_[i].peak);
		bool f32 = fabs(ceil_[i].peak - fp32_peak(m)) <= 1e-9 * ceil_[i].peak;
		line(p, PL, y, PL + PW, y, f32 ? "#b00" : "#c77", f32 ? "2" : "1",
		     f32 ? NULL : "8 3");
		snprintf(t, sizeof(t), "%s %s", ceil_[i].label,
		         si_u(ceil_[i].peak, "FLOP/s", b, sizeof(b)));
		label(p, PL + PW - 4, y - 4, "end", "11", "#900", 0, t);
	}
	end(p);

	double bal = fp32_peak(m) / dram(m)->read_bw;
	el(p, "g", "id", "bend", NULL);
	if (bal > 0) {
		double bx = px(p, bal), by = py(p, fp32_peak(m));
		line(p, bx, by, bx, PT + PH, "#b00", "1", "3 3");
		el(p, "circle", "cx", num(a, bx), "cy", num(b, by), "r", "5", "fill", "none",
		   "stroke", "#b00", "stroke-width", "2", NULL);
		end(p);
		snprintf(t, sizeof(t), "balance %.3g FLOP/B", bal);
		label(p, bx + 6, PT + PH - 8, "start", "11", "#b00", 0, t);
	}
	end(p);
}

/* Sweeps: join a weighted node's points across batches. */
static void svg_sweeps(struct plot *p, const struct srows *s, int ns)
{
	el(p, "g", "id", "sweep", NULL);
	if (ns > 1) {
		for (uint32_t j = 0; j < s[0].ks.nk; j++) {
			const struct rl_node *n = &s[0].g->nodes[s[0].krows[j].node];
			if (rl_op_table[n->op].family != RL_FAM_MATMUL &&
			    rl_op_table[n->op].family != RL_FAM_CONV)
				continue;
			char pts[4096];
			size_t pl = 0;
			int cnt = 0;
			for (int k = 0; k < ns && pl < sizeof(pts) - 64; k++) {
				/* the same kernel at another batch: by the name of its node */
				const struct row *x = NULL;
				for (uint32_t q = 0; q < s[k].ks.nk && !x; q++)
					if (strcmp(s[k].g->nodes[s[k].krows[q].node].name, n->name) == 0)
						x = &s[k].krows[q];
				if (!x || x->kind != ROW_KERNEL || x->cost.intensity <= 0 || x->perf <= 0)
					continue;
				pl += (size_t)snprintf(pts + pl, sizeof(pts) - pl, "%s%.2f,%.2f",
				                       cnt ? " " : "", px(p, x->cost.intensity),
				                       py(p, x->perf));
				cnt++;
			}
			if (cnt < 2)
				continue;
			el(p, "polyline", "points", pts, "fill", "none", "stroke", "#999",
			   "stroke-width", "1", NULL);
			end(p);
		}
	}
	end(p);
}

/* One marker per kernel (area: share of time) with a <title> tooltip, per
 * series; a tiled kernel also gets a square at each cache level. */
static void svg_points(struct plot *p, const struct rl_machine *m, const struct srows *s, int ns)
{
	char a[64], d[64], t[512];
	for (int k = 0; k < ns; k++) {
		snprintf(a, sizeof(a), "batch-%lld", (long long)s[k].batch);
		el(p, "g", "id", ns > 1 ? a : "nodes", NULL);
		for (uint32_t j = 0; j < s[k].ks.nk; j++) {
			const struct row *x = &s[k].krows[j];
			if (x->kind != ROW_KERNEL || x->cost.intensity <= 0 || x->perf <= 0)
				continue;
			const struct rl_node *n = &s[k].g->nodes[x->node];
			const struct rl_kernel *kr = &s[k].ks.k[j];
			double rad = 2.5 + 14 * sqrt(x->share);
			el(p, "g", NULL);
			if (kr->tiled)
				level_points(p, m, kr, x, n->name, family_color(rl_op_table[n->op].family));
			marker(p, k, px(p, x->cost.intensity), py(p, x->perf), rad,
			       family_color(rl_op_table[n->op].family));
			el(p, "title", NULL);
			char fl[32], by[32], tm[32];
			d[0] = 0;
			if (ns > 1)
				snprintf(d, sizeof(d), " batch %lld", (long long)s[k].batch);
			char opb[48], bd[48];
			snprintf(t, sizeof(t), "%s (%s)%s: %s, %s, %.3g FLOP/B, %s-bound, %s, "
			         "%.1f%% of time", n->name, kernel_op(&s[k], kr, opb, sizeof(opb)), d,
			         si_u(x->cost.flops, "FLOP", fl, sizeof(fl)),
			         si_u(x->cost.bytes, "B", by, sizeof(by)),
			         x->cost.intensity, rl_kernel_bound_str(kr, m, bd, sizeof(bd)),
			         secs(x->cost.time_s, tm, sizeof(tm)), 100 * x->share);
			text_node(p, t);
			end(p);
			end(p); /* marker */
			end(p); /* g */
		}
		end(p);
	}
}

/* Names next to the largest shares of the first series. */
static void svg_point_labels(struct plot *p, const struct srows *s)
{
	const struct row **top = calloc(s[0].ks.nk ? s[0].ks.nk : 1, sizeof(*top));
	int nt = 0;
	for (uint32_t j = 0; top && j < s[0].ks.nk; j++) {
		const struct row *x = &s[0].krows[j];
		if (x->kind == ROW_KERNEL && x->cost.intensity > 0 && x->perf > 0)
			top[nt++] = x;
	}
	if (top)
		qsort(top, (size_t)nt, sizeof(*top), cmp_share_desc);
	el(p, "g", "id", "labels", NULL);
	/* label boxes placed so far: a label that would overlap one moves down
	 * or up a line, or is left out (its point keeps its <title>) */
	double box[8][4];
	int nbox = 0;
	for (int j = 0; j < nt && nbox < 8; j++) {
		const struct rl_node *n = &s[0].g->nodes[top[j]->node];
		double rad = 2.5 + 14 * sqrt(top[j]->share);
		double x = px(p, top[j]->cost.intensity) + rad + 3, y0 = py(p, top[j]->perf) + 4;
		double wdt = 6.2 * (double)strlen(n->name);
		static const double dy[] = {0, 13, -13, 26, -26};
		for (int o = 0; o < 5; o++) {
			double y = y0 + dy[o];
			bool clash = false;
			for (int q = 0; q < nbox && !clash; q++)
				clash = x < box[q][2] && box[q][0] < x + wdt && y - 11 < box[q][3] &&
				        box[q][1] < y + 2;
			if (clash)
				continue;
			label(p, x, y, "start", "11", "#111", 0, n->name);
			box[nbox][0] = x;
			box[nbox][1] = y - 11;
			box[nbox][2] = x + wdt;
			box[nbox][3] = y + 2;
			nbox++;
			break;
		}
	}
	end(p);
	free(top);
}

/* Legend, first half: the operator families present, the marker size and
 * tiled-kernel squares, and one marker per batch of a sweep. Returns the
 * next line's y. */
static double svg_legend_marks(struct plot *p, const struct srows *s, int ns, double lx,
                               double ly)
{
	char a[64], b[64], t[512];
	label(p, lx, ly, "start", "12", "#111", 0, "operator family");
	ly += 18;
	bool seen[RL_FAM_COUNT_] = {false};
	for (int k = 0; k < ns; k++)
		for (uint32_t j = 0; j < s[k].ks.nk; j++)
			if (s[k].krows[j].kind == ROW_KERNEL)
				seen[rl_op_table[s[k].g->nodes[s[k].krows[j].node].op].family] = true;
	for (int f = 0; f < RL_FAM_COUNT_; f++) {
		if (!seen[f])
			continue;
		el(p, "circle", "cx", num(a, lx + 6), "cy", num(b, ly - 4), "r", "5", "fill",
		   family_color((enum rl_family)f), NULL);
		end(p);
		label(p, lx + 18, ly, "start", "11", "#222", 0, rl_family_name((enum rl_family)f));
		ly += 16;
	}
	ly += 8;
	label(p, lx, ly, "start", "11", "#444", 0, "area: share of predicted time");
	ly += 16;
	label(p, lx, ly, "start", "11", "#444", 0, "squares: a tiled kernel at each");
	ly += 14;
	label(p, lx, ly, "start", "11", "#444", 0, "cache level (solid: it binds)");
	ly += 22;
	if (ns > 1) {
		label(p, lx, ly, "start", "12", "#111", 0, "batch");
		ly += 18;
		for (int k = 0; k < ns; k++) {
			marker(p, k, lx + 6, ly - 4, 5, "#888");
			end(p);
			snprintf(t, sizeof(t), "%lld", (long long)s[k].batch);
			label(p, lx + 18, ly, "start", "11", "#222", 0, t);
			ly += 16;
		}
		ly += 8;
	}
	return ly;
}

/* Legend, second half: the line styles and the first series' totals. */
static void svg_legend_lines(struct plot *p, const struct rl_machine *m, const struct srows *s,
                             double lx, double ly)
{
	char t[512];
	label(p, lx, ly, "start", "12", "#111", 0, "lines");
	ly += 16;
	line(p, lx, ly - 4, lx + 24, ly - 4, "#000", "2", NULL);
	label(p, lx + 30, ly, "start", "11", "#222", 0, "main memory");
	ly += 16;
	line(p, lx, ly - 4, lx + 24, ly - 4, "#000", "1", "2 3");
	snprintf(t, sizeof(t), "x%.2g contiguous efficiency", m->eff_contiguous);
	label(p, lx + 30, ly, "start", "11", "#222", 0, t);
	ly += 16;
	line(p, lx, ly - 4, lx + 24, ly - 4, "#6a6a6a", "1", "6 4");
	label(p, lx + 30, ly, "start", "11", "#222", 0, "cache levels");
	ly += 16;
	line(p, lx, ly - 4, lx + 24, ly - 4, "#b00", "2", NULL);
	label(p, lx + 30, ly, "start", "11", "#222", 0, "fp32 peak");
	ly += 16;
	line(p, lx, ly - 4, lx + 24, ly - 4, "#c77", "1", "8 3");
	label(p, lx + 30, ly, "start", "11", "#222", 0, "other peaks");
	ly += 24;
	char tt[32];
	snprintf(t, sizeof(t), "total %s predicted", secs(s[0].t.time_s, tt, sizeof(tt)));
	label(p, lx, ly, "start", "11", "#222", 0, t);
	ly += 16;
	double T = s[0].t.time_s > 0 ? s[0].t.time_s : 1;
	snprintf(t, sizeof(t), "memory-bound %.0f%%, compute %.0f%%", 100 * s[0].t.time_memory / T,
	         100 * s[0].t.time_compute / T);
	label(p, lx, ly, "start", "11", "#222", 0, t);
	ly += 16;
	snprintf(t, sizeof(t), "latency-bound %.0f%%", 100 * s[0].t.time_latency / T);
	label(p, lx, ly, "start", "11", "#222", 0, t);
}

static bool render_svg_writer(xmlTextWriterPtr w, const struct rl_report *r,
                              const struct srows *s, int ns)
{
	const struct rl_machine *m = r->m;
	struct plot P = {.w = w, .ok = true}, *p = &P;
	struct ceiling ceil_[2 * RL_PREC_COUNT_];
	int nc = collect_ceilings(m, ceil_, 2 * RL_PREC_COUNT_);
	svg_ranges(p, m, ceil_, nc, s, ns);
	svg_open(p, r, s, ns);
	svg_axes(p);
	svg_memory(p, m);
	svg_compute(p, m, ceil_, nc);
	svg_sweeps(p, s, ns);
	svg_points(p, m, s, ns);
	svg_point_labels(p, s);
	end(p); /* clip group */
	el(p, "g", "id", "legend", NULL);
	double ly = svg_legend_marks(p, s, ns, PL + PW + 24, PT + 10);
	svg_legend_lines(p, m, s, PL + PW + 24, ly);
	end(p); /* legend */
	end(p); /* svg */
	return p->ok;
}

/* The SVG document in a malloc'd buffer; with `fragment` the XML declaration
 * is left out (for inlining in HTML). */
static char *render_svg(const struct rl_report *r, const struct srows *s, int ns,
                        bool fragment, size_t *len)
{
	xmlBufferPtr xb = xmlBufferCreate();
	if (!xb)
		return NULL;
	xmlTextWriterPtr w = xmlNewTextWriterMemory(xb, 0);
	if (!w) {
		xmlBufferFree(xb);
		return NULL;
	}
	bool ok = xmlTextWriterSetIndent(w, 1) >= 0 &&
	          xmlTextWriterSetIndentString(w, BAD_CAST " ") >= 0;
	if (ok && !fragment)
		ok = xmlTextWriterStartDocument(w, NULL, "UTF-8", NULL) >= 0;
	ok = ok && render_svg_writer(w, r, s, ns);
	if (ok && !fragment)
		ok = xmlTextWriterEndDocument(w) >= 0;
	else if (ok)
		ok = xmlTextWriterFlush(w) >= 0;
	xmlFreeTextWriter(w);
	char *out = NULL;
	if (ok) {
		*len = (size_t)xmlBufferLength(xb);
		out = malloc(*len + 1);
		if (out) {
			memcpy(out, xmlBufferContent(xb), *len);
			out[*len] = 0;
		}
	}
	xmlBufferFree(xb);
	return out;
}

/* ---- HTML ------------------------------------------------------------------ */

static void html_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

/* A cell showing `shown`, sorting by the number v. */
static void td_num(FILE *f, double v, const char *shown)
{
	fprintf(f, "<td class=\"n\" data-v=\"%.17g\">", isfinite(v) ? v : -1.0);
	html_esc(f, shown);
	fputs("</td>", f);
}

static void td_str(FILE *f, const char *s)
{
	fputs("<td>", f);
	html_esc(f, s);
	fputs("</td>", f);
}

static const char html_script[] =
	"<script>\n"
	"// click a header to sort its table; click again to reverse\n"
	"document.querySelectorAll('table.sortable').forEach(function (t) {\n"
	"  t.querySelectorAll('th').forEach(function (th, i) {\n"
	"    th.addEventListener('click', function () {\n"
	"      var body = t.tBodies[0], rows = Array.prototype.slice.call(body.rows);\n"
	"      var dir = th.dataset.dir === 'asc' ? -1 : 1;\n"
	"      t.querySelectorAll('th').forEach(function (h) { delete h.dataset.dir; });\n"
	"      th.dataset.dir = dir === 1 ? 'asc' : 'desc';\n"
	"      rows.sort(function (a, b) {\n"
	"        var x = a.cells[i], y = b.cells[i];\n"
	"        if (x.dataset.v !== undefined && y.dataset.v !== undefined)\n"
	"          return dir * (parseFloat(x.dataset.v) - parseFloat(y.dataset.v));\n"
	"        return dir * x.textContent.localeCompare(y.textContent);\n"
	"      });\n"
	"      rows.forEach(function (r) { body.appendChild(r); });\n"
	"    });\n"
	"  });\n"
	"});\n"
	"</script>\n";

/* The kernels as they run, with the nodes each runs, its tiles and its
 * bytes per memory level. */
static void html_kernels(FILE *f, const struct rl_machine *m, const struct srows *s, int ns)
{
	if (ns > 1)
		fprintf(f, "\n<h2>Kernels at batch %lld</h2>\n", (long long)s->batch);
	else
		fputs("\n<h2>Kernels</h2>\n", f);
	fputs("<table class=\"sortable\"><thead><tr><th>#</th><th>kernel</th><th>op</th>"
	      "<th>nodes it runs</th><th>FLOPs</th><th>bytes</th><th>FLOP/B</th><th>bound</th>"
	      "<th>time</th><th>share</th><th>tiles</th><th>bytes per level</th></tr></thead>\n"
	      "<tbody>\n", f);
	for (uint32_t q = 0; q < s->ks.nk; q++) {
		const struct rl_kernel *k = &s->ks.k[q];
		char a[32], b[32], c[32], d[32], e[32], op[48], bd[48], ts[128], lv[512];
		fprintf(f, "<tr class=\"%s\">", rl_bound_name((enum rl_bound)k->cost.bound));
		snprintf(a, sizeof(a), "%u", q + 1);
		td_num(f, q + 1, a);
		td_str(f, s->g->nodes[k->node].name);
		td_str(f, kernel_op(s, k, op, sizeof(op)));
		fputs("<td>", f);
		for (uint32_t j = 0; j < k->n; j++) {
			const struct rl_node *x = &s->g->nodes[s->ks.nodes[k->first + j]];
			fputs(j ? ", " : "", f);
			html_esc(f, x->name);
			fputs(" (", f);
			html_esc(f, rl_op_table[x->op].name);
			fputs(")", f);
		}
		fputs("</td>", f);
		td_num(f, k->cost.flops, si(k->cost.flops, a, sizeof(a)));
		td_num(f, k->cost.bytes, si(k->cost.bytes, b, sizeof(b)));
		snprintf(c, sizeof(c), "%.3g", k->cost.intensity);
		td_num(f, k->cost.intensity, c);
		td_str(f, rl_kernel_bound_str(k, m, bd, sizeof(bd)));
		td_num(f, k->cost.time_s, secs(k->cost.time_s, d, sizeof(d)));
		snprintf(e, sizeof(e), "%.1f%%", 100 * s->kshare[q]);
		td_num(f, s->kshare[q], e);
		const struct rl_tile *t = kernel_tile(s, k);
		td_str(f, t && t->kind != RL_TILE_NONE ? tile_str(t, ts, sizeof(ts)) : "-");
		if (k->tiled)
			levels_str(m, k, lv, sizeof(lv));
		else
			snprintf(lv, sizeof(lv), "%s only", m->level[m->nlevels - 1].name);
		td_str(f, lv);
		fputs("</tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
}

static bool render_html(FILE *f, const struct rl_report *r, const struct srows *s, int ns)
{
	size_t svglen;
	char *svg = render_svg(r, s, ns, true, &svglen);
	if (!svg)
		return false;
	const struct rl_machine *m = r->m;
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", f);
	fputs("rlopt report: ", f);
	html_esc(f, r->model);
	fputs("</title>\n<style>\n"
	      "body{font-family:sans-serif;margin:1.5em;color:#111}\n"
	      "table{border-collapse:collapse;font-size:13px;margin:0.5em 0 1.5em}\n"
	      "th,td{border:1px solid #ccc;padding:2px 6px}\n"
	      "th{background:#eee;cursor:pointer;user-select:none}\n"
	      "th[data-dir=asc]::after{content:' \\25b2'}th[data-dir=desc]::after{content:' \\25bc'}\n"
	      "td.n{text-align:right;font-variant-numeric:tabular-nums}\n"
	      "tr.memory td:nth-child(8){color:#1f5fa0}tr.compute td:nth-child(8){color:#b00}"
	      "tr.latency td:nth-child(8){color:#777}\n"
	      "pre{font-size:12px;background:#f6f6f6;padding:0.5em}\n"
	      "</style>\n</head>\n<body>\n<h1>Roofline: ", f);
	html_esc(f, r->model);
	fputs(" on ", f);
	html_esc(f, m->name);
	fputs("</h1>\n", f);
	/* summary */
	char *txt = NULL;
	size_t tl = 0;
	FILE *tf = open_memstream(&txt, &tl);
	if (tf) {
		fputs("summary:\n", tf);
		text_machine(tf, m);
		text_totals(tf, &s[0]);
		if (r->note)
			fprintf(tf, "  note      %s\n", r->note);
		fclose(tf);
		fputs("<pre>", f);
		html_esc(f, txt);
		fputs("</pre>\n", f);
		free(txt);
	}
	fwrite(svg, 1, svglen, f);
	free(svg);
	for (int k = 0; k < ns; k++)
		html_kernels(f, m, &s[k], ns);
	for (int k = 0; k < ns; k++) {
		if (ns > 1)
			fprintf(f, "\n<h2>Nodes at batch %lld</h2>\n", (long long)s[k].batch);
		else
			fputs("\n<h2>Nodes</h2>\n", f);
		fputs("<table class=\"sortable\"><thead><tr><th>#</th><th>node</th><th>op</th>"
		      "<th>output</th><th>FLOPs</th><th>bytes</th><th>FLOP/B</th><th>bound</th>"
		      "<th>time</th><th>share</th></tr></thead>\n<tbody>\n", f);
		for (uint32_t j = 0; j < s[k].nrows; j++) {
			const struct row *x = &s[k].rows[j];
			const struct rl_node *n = &s[k].g->nodes[x->node];
			char sh[256], a[32], b[32], c[32], d[32], e[32];
			out_shapes(s[k].g, n, sh, sizeof(sh));
			bool kern = x->kind == ROW_KERNEL;
			const char *bound = kern ? rl_bound_name((enum rl_bound)x->cost.bound)
			                         : row_kind_name[x->kind];
			fprintf(f, "<tr class=\"%s\">", bound);
			snprintf(a, sizeof(a), "%u", j + 1);
			td_num(f, j + 1, a);
			td_str(f, n->name);
			td_str(f, rl_op_table[n->op].name);
			td_str(f, sh);
			double fl = kern || x->kind == ROW_VIEW ? x->cost.flops : 0;
			double by = kern || x->kind == ROW_VIEW ? x->cost.bytes : 0;
			td_num(f, fl, si(fl, a, sizeof(a)));
			td_num(f, by, si(by, b, sizeof(b)));
			snprintf(c, sizeof(c), "%.3g", x->cost.intensity);
			td_num(f, kern ? x->cost.intensity : -1, kern ? c : "-");
			td_str(f, bound);
			td_num(f, kern ? x->cost.time_s : 0, kern ? secs(x->cost.time_s, d, sizeof(d)) : "-");
			snprintf(e, sizeof(e), "%.1f%%", 100 * x->share);
			td_num(f, x->share, kern ? e : "-");
			fputs("</tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	if (r->ncross) {
		fputs("<h2>Crossing batch of the weighted nodes</h2>\n<p>Memory-bound below the "
		      "crossing batch, compute-bound from it.</p>\n<table class=\"sortable\"><thead><tr>"
		      "<th>node</th><th>op</th><th>FLOPs per batch</th><th>weight bytes</th>"
		      "<th>balance</th><th>crossing</th></tr></thead>\n<tbody>\n", f);
		for (int i = 0; i < r->ncross; i++) {
			const struct rl_report_crossing *x = &r->cross[i];
			char a[32], b[32], c[32], cb[64];
			fputs("<tr>", f);
			td_str(f, x->node);
			td_str(f, rl_op_table[x->op].name);
			td_num(f, x->f, si(x->f, a, sizeof(a)));
			td_num(f, x->w, si(x->w, b, sizeof(b)));
			snprintf(c, sizeof(c), "%.3g", x->balance);
			td_num(f, x->balance, c);
			if (x->kind == RL_CROSS_AT)
				snprintf(cb, sizeof(cb), "batch %.0f", ceil(x->batch));
			else
				snprintf(cb, sizeof(cb), "%s", x->kind == RL_CROSS_ALWAYS ? "always compute-bound"
				                                                         : "never");
			td_num(f, x->kind == RL_CROSS_AT ? x->batch : x->kind == RL_CROSS_ALWAYS ? 0 : 1e300,
			       cb);
			fputs("</tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	if (r->ctx && r->ctx->nremarks) {
		fputs("<h2>Remarks of the passes</h2>\n<table class=\"sortable\"><thead><tr>"
		      "<th>pass</th><th>node</th><th>verdict</th><th>reason</th></tr></thead>\n"
		      "<tbody>\n", f);
		for (uint32_t i = 0; i < r->ctx->nremarks; i++) {
			const struct rl_remark *x = &r->ctx->remarks[i];
			fputs("<tr>", f);
			td_str(f, x->pass);
			td_str(f, x->node);
			td_str(f, x->verdict);
			td_str(f, x->msg);
			fputs("</tr>\n", f);
		}
		fputs("</tbody></table>\n", f);
	}
	fputs(html_script, f);
	fputs("</body>\n</html>\n", f);
	return true;
}

/* ---- crossings --------------------------------------------------------------- */

static bool weighted(const struct rl_graph *g, const struct rl_node *n)
{
	switch (n->op) {
	case RL_OP_MatMul: case RL_OP_Gemm: case RL_OP_Conv: case RL_OP_ConvTranspose:
		return rl_value_is_const(g, rl_node_in(n, 1));
	default:
		return false;
	}
}

/* The two roofs of counts c, without the fixed launch (and fork) cost. */
static void roofs(const struct rl_machine *m, const struct rl_counts *c, enum rl_prec prec,
                  double *t_cmp, double *t_mem)
{
	struct rl_counts x = *c;
	struct rl_cost o;
	x.flops = 0;
	rl_cost_price(m, &x, prec, c->macs > 0, &o);
	double fixed = rl_cost_fixed_s(m, c);
	*t_mem = fmax(0, o.time_s - (o.time_s > 0 ? fixed : 0));
	x = *c;
	x.bytes_read = x.bytes_write = 0;
	rl_cost_price(m, &x, prec, c->macs > 0, &o);
	*t_cmp = fmax(0, o.time_s - (o.time_s > 0 ? fixed : 0));
}

int rl_report_crossings(const struct rl_graph *g1, int64_t b1, const struct rl_graph *g2,
                        int64_t b2, const struct rl_machine *m,
                        struct rl_report_crossing **out)
{
	*out = NULL;
	if (b1 == b2 || g1->nnodes != g2->nnodes)
		return -1;
	struct rl_report_crossing *x = calloc(g1->norder ? g1->norder : 1, sizeof(*x));
	if (!x)
		return -1;
	int n = 0;
	double db = (double)(b2 - b1);
	for (uint32_t k = 0; k < g1->norder; k++) {
		uint32_t i = g1->order[k];
		const struct rl_node *n1 = &g1->nodes[i], *n2 = &g2->nodes[i];
		if (n1->dead || !weighted(g1, n1))
			continue;
		if (n2->op != n1->op || strcmp(n2->name, n1->name) != 0) {
			free(x);
			return -1;
		}
		struct rl_counts c1, c2;
		if (!rl_count_node(g1, i, &c1) || !rl_count_node(g2, i, &c2))
			continue;
		enum rl_prec prec = rl_node_prec(g1, i);
		double tc1, tm1, tc2, tm2;
		roofs(m, &c1, prec, &tc1, &tm1);
		roofs(m, &c2, prec, &tc2, &tm2);
		struct rl_report_crossing *e = &x[n++];
		e->node = n1->name;
		e->op = n1->op;
		e->balance = rl_cost_balance(m, prec, c1.macs > 0);
		double by1 = c1.bytes_read + c1.bytes_write, by2 = c2.bytes_read + c2.bytes_write;
		e->f = (c2.flops - c1.flops) / db;
		e->f0 = c1.flops - e->f * (double)b1;
		e->a = (by2 - by1) / db;
		e->w = by1 - e->a * (double)b1;
		/* times are affine in the batch too: t = t0 + t1 * b */
		double c_1 = (tc2 - tc1) / db, c_0 = tc1 - c_1 * (double)b1;
		double m_1 = (tm2 - tm1) / db, m_0 = tm1 - m_1 * (double)b1;
		/* relative tolerance: slopes equal up to rounding are equal */
		double tol = 1e-12 * fmax(fabs(c_1), fabs(m_1));
		if (c_1 - m_1 > tol) {
			e->batch = (m_0 - c_0) / (c_1 - m_1);
			e->kind = e->batch <= 1 ? RL_CROSS_ALWAYS : RL_CROSS_AT;
		} else {
			e->kind = c_0 + c_1 >= m_0 + m_1 ? RL_CROSS_ALWAYS : RL_CROSS_NEVER;
		}
	}
	*out = x;
	return n;
}

/* ---- driver ------------------------------------------------------------------ */

enum rl_status rl_report_render(const struct rl_report *r, enum rl_report_format fmt,
                                char **buf, size_t *len, char *err, size_t errlen)
{
	*buf = NULL;
	*len = 0;
	if (!r->m || r->nseries < 1 || !r->series) {
		snprintf(err, errlen, "report: nothing to report");
		return RL_ERR_INVALID;
	}
	struct srows *s = calloc((size_t)r->nseries, sizeof(*s));
	bool ok = s != NULL;
	for (int i = 0; ok && i < r->nseries; i++)
		ok = build_rows(r->m, &r->series[i], &s[i]);
	if (!ok) {
		snprintf(err, errlen, "report: out of memory");
		goto done;
	}
	if (fmt == RL_REPORT_SVG) {
		*buf = render_svg(r, s, r->nseries, false, len);
		ok = *buf != NULL;
	} else {
		FILE *f = open_memstream(buf, len);
		ok = f != NULL;
		if (ok) {
			switch (fmt) {
			case RL_REPORT_TEXT: render_text(f, r, s, r->nseries); break;
			case RL_REPORT_JSON: render_json(f, r, s, r->nseries); break;
			case RL_REPORT_HTML: ok = render_html(f, r, s, r->nseries); break;
			case RL_REPORT_SVG: break;
			}
			ok = (fclose(f) == 0) && ok;
		}
		if (!ok) {
			free(*buf);
			*buf = NULL;
		}
	}
	if (!ok)
		snprintf(err, errlen, "report: could not render (out of memory)");
done:
	for (int i = 0; s && i < r->nseries; i++) {
		free(s[i].rows);
		free(s[i].kshare);
		free(s[i].krows);
		rl_kernels_free(&s[i].ks);
	}
	free(s);
	return ok ? RL_OK : RL_ERR_NOMEM;
}

enum rl_status rl_report_write(const struct rl_report *r, enum rl_report_format fmt,
                               const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	enum rl_status st = rl_report_render(r, fmt, &buf, &len, err, errlen);
	if (st != RL_OK)
		return st;
	if (!path || strcmp(path, "-") == 0) {
		if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
			snprintf(err, errlen, "report: could not write to standard output");
			st = RL_ERR_IO;
		}
	} else {
		st = rl_write_file_atomic(path, buf, len, err, errlen);
	}
	free(buf);
	return st;
}
