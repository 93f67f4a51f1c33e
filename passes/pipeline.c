/*
 * pipeline.c - the one visible pipeline, the pass driver and remarks.
 *
 * Order matters and is written here, once: cleanup first (folding exposes
 * dead code and duplicates; dedupe before CSE so identical weights make
 * identical nodes), then pricing, then the passes that decide from prices.
 */
#include "pass.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const struct rl_pass_info rl_pipeline[] = {
	{"fold", rl_pass_fold, 1, "fold constants; fold BatchNormalization into Conv/Gemm/MatMul weights"},
	{"dedupe", rl_pass_dedupe, 1, "merge identical initializers (XXH3-128 over dtype, shape, bytes)"},
	{"cse", rl_pass_cse, 1, "merge nodes with the same op, attributes and inputs (XXH3-64)"},
	{"patterns", rl_pass_patterns, 2, "written-out LayerNorm, GELU (erf, tanh) and Softmax to one op"},
	{"dce", rl_pass_dce, 1, "remove dead nodes, Identity, and inference-time Dropout"},
	{"judge", rl_pass_judge, 2, "price low-rank, Tucker-2/CP, depthwise-separable, sparse, grouped rewrites of weighted nodes (remarks only)"},
	{"factorize", rl_pass_factorize, 2, "with --factorize: apply the low-rank / Tucker-2 rewrites that are >= 10% faster and accurate"},
	{"roofline", rl_pass_roofline, 2, "price every node on the machine; remark its bound (memory, compute, latency)"},
	{"quantize", rl_pass_quantize, 2, "with --quantize: int8/int4 weights for MatMul/Gemm (auto: memory-bound ones) within --max-rel-error"},
	{"fuse", rl_pass_fuse, 2, "fuse elementwise chains and MatMul/Gemm/Conv epilogues when it moves fewer bytes"},
	{"tile", rl_pass_tile, 2, "tile products (BLIS blocks, GEMV accumulators) and streaming kernels (L1 strips) for the machine"},
	{NULL, NULL, 0, NULL},
};

void rl_pass_ctx_init(struct rl_pass_ctx *ctx, const struct rl_machine *m,
                      int opt_level)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->machine = m;
	ctx->opt_level = opt_level;
	ctx->dump = stdout;
	/* 16 KiB: the same line the C backend draws between embedding a known
	 * value and computing it at run time. A folded 1 MiB fill of a weight
	 * costs megabytes of C literals and seconds of compile time, and saves
	 * one memset-speed kernel. */
	ctx->fold_max_bytes = 16 << 10;
	ctx->max_rel_error = 1e-2;
	ctx->quant_block = 32;
#ifndef NDEBUG
	ctx->verify = true;
#endif
}

void rl_pass_ctx_free(struct rl_pass_ctx *ctx)
{
	free(ctx->remarks);
	ctx->remarks = NULL;
	ctx->nremarks = ctx->cap_remarks = 0;
}

void rl_remark(struct rl_pass_ctx *ctx, const char *pass, const char *node,
               const char *verdict, double bytes_before, double bytes_after,
               double time_before, double time_after, const char *fmt, ...)
{
	if (ctx->nremarks == ctx->cap_remarks) {
		ctx->cap_remarks = ctx->cap_remarks ? 2 * ctx->cap_remarks : 64;
		ctx->remarks = realloc(ctx->remarks, ctx->cap_remarks * sizeof(*ctx->remarks));
		RL_ASSERT(ctx->remarks);
	}
	struct rl_remark *r = &ctx->remarks[ctx->nremarks++];
	memset(r, 0, sizeof(*r));
	r->pass = pass;
	snprintf(r->node, sizeof(r->node), "%s", node ? node : "");
	snprintf(r->verdict, sizeof(r->verdict), "%s", verdict);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->bytes_before = bytes_before;
	r->bytes_after = bytes_after;
	r->time_before = time_before;
	r->time_after = time_after;
	r->flops_before = r->flops_after = -1;
}

void rl_remarks_print(const struct rl_pass_ctx *ctx, FILE *f)
{
	for (uint32_t i = 0; i < ctx->nremarks; i++) {
		const struct rl_remark *r = &ctx->remarks[i];
		fprintf(f, "remark: %s: %s: %s: %s", r->pass, r->node[0] ? r->node : "-",
		        r->verdict, r->msg);
		if (r->bytes_before >= 0 && r->bytes_after >= 0)
			fprintf(f, " [bytes %.0f -> %.0f]", r->bytes_before, r->bytes_after);
		if (r->time_before >= 0 && r->time_after >= 0)
			fprintf(f, " [time %.3g s -> %.3g s]", r->time_before, r->time_after);
		fputc('\n', f);
	}
}

enum rl_status rl_pass_ensure_order(struct rl_graph *g)
{
	uint32_t live = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		live += !g->nodes[i].dead;
	bool ok = g->order && g->norder == live;
	for (uint32_t k = 0; ok && k < g->norder; k++)
		ok = g->order[k] < g->nnodes && !g->nodes[g->order[k]].dead;
	return ok ? RL_OK : rl_graph_toposort(g);
}

enum rl_status rl_pass_finish(struct rl_graph *g, uint32_t nvalues_before)
{
	bool changed = g->nvalues != nvalues_before;
	for (uint32_t i = 0; i < g->nnodes && !changed; i++)
		changed = g->nodes[i].dead;
	if (!changed)
		return RL_OK;
	rl_graph_compact(g);
	return rl_graph_toposort(g);
}

static const struct rl_pass_info *find_pass(const char *name, size_t n)
{
	for (const struct rl_pass_info *p = rl_pipeline; p->name; p++)
		if (strlen(p->name) == n && strncmp(p->name, name, n) == 0)
			return p;
	return NULL;
}

static enum rl_status run_one(struct rl_graph *g, struct rl_pass_ctx *ctx,
                              const struct rl_pass_info *p)
{
	uint64_t before = g->version;
	enum rl_status st = p->fn(g, ctx);
	if (st != RL_OK)
		return st;
	if (g->version == before) { /* only annotations: nothing to re-derive */
		if (ctx->dump_after && strcmp(ctx->dump_after, p->name) == 0)
			rl_graph_dump(g, ctx->dump ? ctx->dump : stdout);
		return RL_OK;
	}
	/* passes may add or rewire nodes: re-derive order, shapes and constants */
	if ((st = rl_graph_infer(g)) != RL_OK)
		return st;
	if (ctx->verify && (st = rl_graph_verify(g)) != RL_OK) {
		char msg[sizeof(g->err)];
		snprintf(msg, sizeof(msg), "%s", g->err);
		return rl_graph_error(g, NULL, st, "after pass %s: %s", p->name, msg);
	}
	if (ctx->dump_after && strcmp(ctx->dump_after, p->name) == 0)
		rl_graph_dump(g, ctx->dump ? ctx->dump : stdout);
	return RL_OK;
}

enum rl_status rl_pipeline_run(struct rl_graph *g, struct rl_pass_ctx *ctx,
                               const char *only)
{
	if (ctx->dump_after && !find_pass(ctx->dump_after, strlen(ctx->dump_after))) {
		char names[512] = "";
		size_t k = 0;
		for (const struct rl_pass_info *p = rl_pipeline; p->name; p++)
			k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", k ? ", " : "", p->name);
		return rl_graph_error(g, NULL, RL_ERR_INVALID, "--dump-after: unknown pass '%s' "
		                      "(passes: %s)", ctx->dump_after, names);
	}
	if (only) {
		/* check every name before running any */
		for (const char *s = only; *s;) {
			const char *e = strchr(s, ',');
			size_t n = e ? (size_t)(e - s) : strlen(s);
			if (!find_pass(s, n)) {
				char names[512] = "";
				size_t k = 0;
				for (const struct rl_pass_info *p = rl_pipeline; p->name; p++)
					k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s",
					                      k ? ", " : "", p->name);
				return rl_graph_error(g, NULL, RL_ERR_INVALID,
				                      "--passes: unknown pass '%.*s' (passes: %s)",
				                      (int)n, s, names);
			}
			s = e ? e + 1 : s + n;
		}
		for (const char *s = only; *s;) {
			const char *e = strchr(s, ',');
			size_t n = e ? (size_t)(e - s) : strlen(s);
			enum rl_status st = run_one(g, ctx, find_pass(s, n));
			if (st != RL_OK)
				return st;
			s = e ? e + 1 : s + n;
		}
		return RL_OK;
	}
	for (const struct rl_pass_info *p = rl_pipeline; p->name; p++) {
		if (ctx->opt_level < p->min_level)
			continue;
		enum rl_status st = run_one(g, ctx, p);
		if (st != RL_OK)
			return st;
	}
	return RL_OK;
}
