/*
 * diff.c - `rlopt diff BEFORE.onnx AFTER.onnx`: judge a rewrite made
 * elsewhere.
 *
 * Both models are loaded, bound at each requested batch (--batch 1,64,1024;
 * the default, for models with a symbolic batch, is 1,64,1024; a fully
 * static pair is priced once, as written) and priced node by node with the
 * cost model on the --hw machine, exactly as `rlopt report` prices them; no
 * passes run. Per batch it prints total FLOPs, bytes and predicted time
 * before and after, the ratios after/before, the verdict (speedup, slowdown,
 * or neutral within 5% - the judge's rule), the limit that binds most of
 * the time before and after, and the nodes that changed: nodes are matched
 * by name and operator, and every removed, added or differently priced node
 * is listed with its cost. "Fewer FLOPs, but slower" is called out.
 *
 * Exit codes (cli.h): 0 done; 1 usage; 2 a model that does not load, models
 * whose inputs or outputs differ (each difference named), shapes that cannot
 * be bound at a requested batch (the dim named); 3 with --fail-on-slowdown
 * when any batch is a slowdown. The same file twice is a neutral diff.
 */
#include "cli.h"

#include "passes/judge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int64_t default_batches[] = {1, 64, 1024};

struct ncost {
	const char *name;
	enum rl_op op;
	struct rl_cost cost;
	bool matched;
};

struct side {
	struct rl_graph *g;
	struct rl_cost_total tot;
	struct ncost *nodes;
	uint32_t n;
	const char *limit;
};

struct change {
	char kind;              /* '-' removed, '+' added, '~' changed */
	const struct ncost *a, *b;
};

struct row {
	int64_t batch;          /* -1: as written, unknown batch */
	struct side before, after;
	double flops_ratio, bytes_ratio, time_ratio;
	const char *verdict;
	struct change *ch;
	uint32_t nch;
};

/* ---- comparing the interfaces ------------------------------------------- */

static bool dims_match(const struct rl_shape *a, const struct rl_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++) {
		bool sa = a->d[i].v < 0, sb = b->d[i].v < 0;
		if (sa != sb || (!sa && a->d[i].v != b->d[i].v))
			return false;
	}
	return true;
}

static void describe(const struct rl_graph *g, uint32_t v, char *buf, size_t n)
{
	char sb[160];
	snprintf(buf, n, "%s %s", rl_dtype_name(g->values[v].dtype),
	         rl_shape_str(&g->values[v].shape, sb, sizeof(sb)));
}

/* Append "; "-separated differences of one interface (inputs or outputs). */
static int compare_io(const char *what, const struct rl_graph *a, const uint32_t *va,
                      uint32_t na, const char *pa, const struct rl_graph *b,
                      const uint32_t *vb, uint32_t nb, const char *pb, char *msg, size_t len)
{
	int ndiff = 0;
	size_t k = strlen(msg);
	for (uint32_t i = 0; i < na; i++) {
		const char *nm = a->values[va[i]].name;
		uint32_t j = 0;
		while (j < nb && strcmp(b->values[vb[j]].name, nm) != 0)
			j++;
		char da[200], db[200];
		describe(a, va[i], da, sizeof(da));
		if (j == nb) {
			k += (size_t)snprintf(msg + k, k < len ? len - k : 0, "%s%s '%s' (%s) only in %s",
			                      ndiff++ || k ? "; " : "", what, nm, da, pa);
			continue;
		}
		describe(b, vb[j], db, sizeof(db));
		if (a->values[va[i]].dtype != b->values[vb[j]].dtype ||
		    !dims_match(&a->values[va[i]].shape, &b->values[vb[j]].shape))
			k += (size_t)snprintf(msg + k, k < len ? len - k : 0,
			                      "%s%s '%s' is %s in %s but %s in %s",
			                      ndiff++ || k ? "; " : "", what, nm, da, pa, db, pb);
	}
	for (uint32_t j = 0; j < nb; j++) {
		const char *nm = b->values[vb[j]].name;
		uint32_t i = 0;
		while (i < na && strcmp(a->values[va[i]].name, nm) != 0)
			i++;
		if (i < na)
			continue;
		char db[200];
		describe(b, vb[j], db, sizeof(db));
		k += (size_t)snprintf(msg + k, k < len ? len - k : 0, "%s%s '%s' (%s) only in %s",
		                      ndiff++ || k ? "; " : "", what, nm, db, pb);
	}
	return ndiff;
}

static bool has_symbolic_input(const struct rl_graph *g)
{
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const struct rl_shape *s = &g->values[g->inputs[i]].shape;
		for (int d = 0; d < s->rank; d++)
			if (s->d[d].v < 0)
				return true;
	}
	return false;
}

/* ---- pricing one side --------------------------------------------------- */

static const char *limit_of(const struct rl_cost_total *t)
{
	if (t->time_latency >= t->time_memory && t->time_latency >= t->time_compute &&
	    t->time_latency > 0)
		return "latency";
	return t->time_compute > t->time_memory ? "compute" : "memory";
}

static bool price(struct side *s, const char *path, const struct rl_machine *m, int64_t batch)
{
	struct rl_graph *g = s->g;
	rl_cost_graph(g, m, &s->tot);
	s->nodes = calloc(g->norder + 1, sizeof(*s->nodes));
	if (!s->nodes) {
		fprintf(stderr, "rlopt: diff: out of memory\n");
		return false;
	}
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		struct rl_counts c;
		if (!rl_count_node(g, i, &c)) {
			/* name the first value whose shape is not static */
			const char *vn = "?";
			char sb[160] = "?", hint[256] = "its shape is not static";
			for (int o = 0; o < n->nin + n->nout; o++) {
				uint32_t v = o < n->nin ? n->in[o] : n->out[o - n->nin];
				if (v != RL_NONE && !rl_shape_is_static(&g->values[v].shape)) {
					vn = g->values[v].name;
					rl_shape_str(&g->values[v].shape, sb, sizeof(sb));
					rl_unbound_hint(g, &g->values[v].shape, hint, sizeof(hint));
					break;
				}
			}
			if (batch >= 0)
				fprintf(stderr, "rlopt: %s: node '%s' (%s): cannot be priced at batch %lld: "
				        "'%s' has shape %s: %s\n", path, n->name, rl_op_table[n->op].name,
				        (long long)batch, vn, sb, hint);
			else
				fprintf(stderr, "rlopt: %s: node '%s' (%s): cannot be priced: '%s' has "
				        "shape %s: %s\n", path, n->name, rl_op_table[n->op].name, vn, sb, hint);
			return false;
		}
		s->nodes[s->n++] = (struct ncost){n->name, n->op, n->cost, false};
	}
	s->limit = limit_of(&s->tot);
	return true;
}

static int by_name(const void *pa, const void *pb)
{
	const struct ncost *a = *(const struct ncost *const *)pa, *b = *(const struct ncost *const *)pb;
	int c = strcmp(a->name, b->name);
	return c ? c : (int)a->op - (int)b->op;
}

static bool same_cost(const struct rl_cost *a, const struct rl_cost *b)
{
	double ta = fabs(a->time_s - b->time_s), sa = fmax(fabs(a->time_s), fabs(b->time_s));
	return a->flops == b->flops && a->bytes == b->bytes && ta <= 1e-12 * sa;
}

/* Match nodes by name and op; list removed, added and changed ones in the
 * order of each model. */
static bool match_nodes(struct row *r)
{
	struct side *a = &r->before, *b = &r->after;
	struct ncost **idx = malloc((b->n + 1) * sizeof(*idx));
	r->ch = malloc((a->n + b->n + 1) * sizeof(*r->ch));
	if (!idx || !r->ch) {
		free(idx);
		fprintf(stderr, "rlopt: diff: out of memory\n");
		return false;
	}
	for (uint32_t j = 0; j < b->n; j++)
		idx[j] = &b->nodes[j];
	qsort(idx, b->n, sizeof(*idx), by_name);
	for (uint32_t i = 0; i < a->n; i++) {
		struct ncost *key = &a->nodes[i], **hit = NULL;
		/* first unmatched entry with this name and op */
		uint32_t lo = 0, hi = b->n;
		while (lo < hi) {
			uint32_t mid = (lo + hi) / 2;
			if (by_name(&idx[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint32_t j = lo; j < b->n && by_name(&idx[j], &key) == 0; j++)
			if (!idx[j]->matched) {
				hit = &idx[j];
				break;
			}
		if (!hit) {
			r->ch[r->nch++] = (struct change){'-', key, NULL};
			continue;
		}
		(*hit)->matched = key->matched = true;
		if (!same_cost(&key->cost, &(*hit)->cost))
			r->ch[r->nch++] = (struct change){'~', key, *hit};
	}
	for (uint32_t j = 0; j < b->n; j++)
		if (!b->nodes[j].matched)
			r->ch[r->nch++] = (struct change){'+', NULL, &b->nodes[j]};
	free(idx);
	return true;
}

static double ratio(double a, double b)
{
	if (b > 0)
		return a / b;
	return a > 0 ? INFINITY : 1;
}

/* ---- output ------------------------------------------------------------- */

static void fmt_time(double t, char *buf, size_t n)
{
	if (t >= 1)
		snprintf(buf, n, "%.3g s", t);
	else if (t >= 1e-3)
		snprintf(buf, n, "%.3g ms", t * 1e3);
	else if (t >= 1e-6)
		snprintf(buf, n, "%.3g us", t * 1e6);
	else
		snprintf(buf, n, "%.3g ns", t * 1e9);
}

static void fmt_ratio(double r, char *buf, size_t n)
{
	if (isinf(r))
		snprintf(buf, n, "inf");
	else
		snprintf(buf, n, "%.3g", r);
}

static bool fewer_but_slower(const struct row *r)
{
	return strcmp(r->verdict, "slowdown") == 0 && r->flops_ratio < 1;
}

static void print_node_text(FILE *f, char kind, const struct ncost *c)
{
	char t[32];
	fmt_time(c->cost.time_s, t, sizeof(t));
	fprintf(f, "    %c %-28s %-12s flops %-10.4g bytes %-10.4g time %-10s %s\n", kind, c->name,
	        rl_op_table[c->op].name, c->cost.flops, c->cost.bytes, t,
	        rl_bound_name((enum rl_bound)c->cost.bound));
}

static void print_text(FILE *f, const char *pa, const char *pb, const struct rl_machine *m,
                       const struct row *rows, int nrows)
{
	fprintf(f, "rlopt diff: %s -> %s on %s (%s)\n", pa, pb, m->name, m->desc);
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		char fr[24], br[24], tr[24], t0[32], t1[32];
		fmt_ratio(r->flops_ratio, fr, sizeof(fr));
		fmt_ratio(r->bytes_ratio, br, sizeof(br));
		fmt_ratio(r->time_ratio, tr, sizeof(tr));
		fmt_time(r->before.tot.time_s, t0, sizeof(t0));
		fmt_time(r->after.tot.time_s, t1, sizeof(t1));
		fputc('\n', f);
		if (r->batch >= 0)
			fprintf(f, "batch %lld: ", (long long)r->batch);
		else
			fprintf(f, "as written: ");
		fprintf(f, "%s: time x%s (%s -> %s), flops x%s, bytes x%s; limit %s -> %s%s\n",
		        r->verdict, tr, t0, t1, fr, br, r->before.limit, r->after.limit,
		        fewer_but_slower(r) ? "; fewer FLOPs, but slower" : "");
		fprintf(f, "  %-8s %6s %14s %14s %12s  %s\n", "", "nodes", "flops", "bytes", "time", "limit");
		fprintf(f, "  %-8s %6u %14.6g %14.6g %12s  %s\n", "before", r->before.n,
		        r->before.tot.flops, r->before.tot.bytes, t0, r->before.limit);
		fprintf(f, "  %-8s %6u %14.6g %14.6g %12s  %s\n", "after", r->after.n,
		        r->after.tot.flops, r->after.tot.bytes, t1, r->after.limit);
		uint32_t nr = 0, na = 0, nc = 0;
		for (uint32_t k = 0; k < r->nch; k++) {
			nr += r->ch[k].kind == '-';
			na += r->ch[k].kind == '+';
			nc += r->ch[k].kind == '~';
		}
		if (!r->nch) {
			fprintf(f, "  no node changed\n");
			continue;
		}
		fprintf(f, "  nodes that changed: %u removed, %u added, %u repriced\n", nr, na, nc);
		for (uint32_t k = 0; k < r->nch; k++) {
			const struct change *c = &r->ch[k];
			if (c->kind == '-')
				print_node_text(f, '-', c->a);
			else if (c->kind == '+')
				print_node_text(f, '+', c->b);
			else {
				print_node_text(f, '<', c->a);
				print_node_text(f, '>', c->b);
			}
		}
	}
	fputc('\n', f);
	fprintf(f, "verdict:");
	for (int i = 0; i < nrows; i++) {
		char tr[24];
		fmt_ratio(rows[i].time_ratio, tr, sizeof(tr));
		if (rows[i].batch >= 0)
			fprintf(f, "%s batch %lld %s (x%s)", i ? "," : "", (long long)rows[i].batch,
			        rows[i].verdict, tr);
		else
			fprintf(f, " %s (x%s)", rows[i].verdict, tr);
	}
	fputc('\n', f);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.17g", v);
	else
		fputs("null", f);
}

static void json_side(FILE *f, const struct side *s)
{
	fprintf(f, "{\"nodes\": %u, \"flops\": ", s->n);
	json_num(f, s->tot.flops);
	fputs(", \"bytes\": ", f);
	json_num(f, s->tot.bytes);
	fputs(", \"time_s\": ", f);
	json_num(f, s->tot.time_s);
	fprintf(f, ", \"limit\": \"%s\"}", s->limit);
}

static void json_node(FILE *f, const struct ncost *c)
{
	fputs("{\"name\": ", f);
	json_str(f, c->name);
	fprintf(f, ", \"op\": \"%s\", \"flops\": ", rl_op_table[c->op].name);
	json_num(f, c->cost.flops);
	fputs(", \"bytes\": ", f);
	json_num(f, c->cost.bytes);
	fputs(", \"time_s\": ", f);
	json_num(f, c->cost.time_s);
	fprintf(f, ", \"bound\": \"%s\"}", rl_bound_name((enum rl_bound)c->cost.bound));
}

static void print_json(FILE *f, const char *pa, const char *pb, const struct rl_machine *m,
                       const struct row *rows, int nrows, bool any_slow)
{
	fputs("{\"before\": ", f);
	json_str(f, pa);
	fputs(", \"after\": ", f);
	json_str(f, pb);
	fputs(", \"machine\": ", f);
	json_str(f, m->name);
	fputs(", \"batches\": [", f);
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		fprintf(f, "%s\n  {\"batch\": ", i ? "," : "");
		if (r->batch >= 0)
			fprintf(f, "%lld", (long long)r->batch);
		else
			fputs("null", f);
		fprintf(f, ", \"verdict\": \"%s\", \"flops_ratio\": ", r->verdict);
		json_num(f, r->flops_ratio);
		fputs(", \"bytes_ratio\": ", f);
		json_num(f, r->bytes_ratio);
		fputs(", \"time_ratio\": ", f);
		json_num(f, r->time_ratio);
		fprintf(f, ", \"fewer_flops_but_slower\": %s,\n   \"before\": ",
		        fewer_but_slower(r) ? "true" : "false");
		json_side(f, &r->before);
		fputs(",\n   \"after\": ", f);
		json_side(f, &r->after);
		fputs(",\n   \"changed_nodes\": [", f);
		for (uint32_t k = 0; k < r->nch; k++) {
			const struct change *c = &r->ch[k];
			fprintf(f, "%s\n    {\"change\": \"%s\"", k ? "," : "",
			        c->kind == '-' ? "removed" : c->kind == '+' ? "added" : "changed");
			if (c->a) {
				fputs(", \"before\": ", f);
				json_node(f, c->a);
			}
			if (c->b) {
				fputs(", \"after\": ", f);
				json_node(f, c->b);
			}
			fputc('}', f);
		}
		fputs(r->nch ? "\n   ]}" : "]}", f);
	}
	fprintf(f, "\n], \"slowdown\": %s}\n", any_slow ? "true" : "false");
}

/* ---- the command -------------------------------------------------------- */

static void diff_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "rlopt: diff: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: rlopt diff BEFORE.onnx AFTER.onnx [--hw H] [--batch 1,64,1024] "
	        "[--format text|json] [--fail-on-slowdown]\n");
}

static void row_free(struct row *r)
{
	if (r->before.g)
		rl_graph_free(r->before.g);
	if (r->after.g)
		rl_graph_free(r->after.g);
	free(r->before.nodes);
	free(r->after.nodes);
	free(r->ch);
}

int rl_cmd_diff(int argc, char **argv)
{
	struct rl_cli_opts o;
	rl_cli_opts_init(&o);
	const char *pa = NULL, *pb = NULL;
	bool fail_on_slow = false;
	for (int i = 1; i < argc; i++) {
		int r = rl_cli_parse_common(&o, argc, argv, &i);
		if (r < 0)
			return RL_EXIT_USAGE;
		if (r > 0)
			continue;
		if (strcmp(argv[i], "--fail-on-slowdown") == 0) {
			fail_on_slow = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			diff_usage("unknown option '%s'", argv[i]);
			return RL_EXIT_USAGE;
		} else if (!pa) {
			pa = argv[i];
		} else if (!pb) {
			pb = argv[i];
		} else {
			diff_usage("unexpected argument '%s'", argv[i]);
			return RL_EXIT_USAGE;
		}
	}
	if (!pa || !pb) {
		diff_usage("%s", "two models are needed");
		return RL_EXIT_USAGE;
	}
	bool json = false;
	if (o.format && strcmp(o.format, "json") == 0)
		json = true;
	else if (o.format && strcmp(o.format, "text") != 0) {
		diff_usage("--format wants text or json, not '%s'", o.format);
		return RL_EXIT_USAGE;
	}
	static const enum rl_cli_opt pass_opts[] = {RL_OPT_PASSES, RL_OPT_DUMP_AFTER,
		RL_OPT_FACTORIZE, RL_OPT_MAX_REL_ERROR, RL_OPT_REMARKS, RL_OPT_OLEVEL};
	for (size_t k = 0; k < sizeof(pass_opts) / sizeof(pass_opts[0]); k++)
		if (o.given & RL_OPT_BIT(pass_opts[k])) {
			fprintf(stderr, "rlopt: diff: option '%s': diff prices the two models as "
			        "written; it runs no passes\n", o.given_as[pass_opts[k]]);
			return RL_EXIT_USAGE;
		}
	if (o.report) {
		fprintf(stderr, "rlopt: diff: diff prints to stdout (--format json for machines); "
		        "no --report\n");
		return RL_EXIT_USAGE;
	}
	/* what diff uses: the bindings, the profile and the format */
	if (!rl_cli_check_used(&o, RL_OPT_BIT(RL_OPT_BATCH) | RL_OPT_BIT(RL_OPT_BATCH_LIST) |
	                           RL_OPT_BIT(RL_OPT_SHAPE) | RL_OPT_BIT(RL_OPT_DIM) | RL_OPT_BIT(RL_OPT_SEQ) |
	                           RL_OPT_BIT(RL_OPT_HW) | RL_OPT_BIT(RL_OPT_FORMAT) |
	                           RL_OPT_BIT(RL_OPT_LAUNCH) | RL_OPT_BIT(RL_OPT_THREADS), "diff"))
		return RL_EXIT_USAGE;
	struct rl_machine m;
	if (!rl_cli_machine(&o, &m))
		return RL_EXIT_INPUT;

	/* the interfaces, unbound */
	struct rl_cli_opts plain = o;
	plain.batch = -1;
	plain.nbatches = 0;
	struct rl_graph *ga = rl_cli_load(pa, &plain, false);
	if (!ga)
		return RL_EXIT_INPUT;
	struct rl_graph *gb = rl_cli_load(pb, &plain, false);
	if (!gb) {
		rl_graph_free(ga);
		return RL_EXIT_INPUT;
	}
	char msg[2048] = "";
	int nd = compare_io("input", ga, ga->inputs, ga->ninputs, pa, gb, gb->inputs, gb->ninputs,
	                    pb, msg, sizeof(msg));
	nd += compare_io("output", ga, ga->outputs, ga->noutputs, pa, gb, gb->outputs,
	                 gb->noutputs, pb, msg, sizeof(msg));
	bool symbolic = has_symbolic_input(ga) || has_symbolic_input(gb);
	struct rl_shape first = {.rank = 0};
	if (ga->ninputs)
		first = ga->values[ga->inputs[0]].shape;
	char first_name[128] = "";
	if (ga->ninputs)
		snprintf(first_name, sizeof(first_name), "%s", ga->values[ga->inputs[0]].name);
	rl_graph_free(ga);
	if (nd) {
		fprintf(stderr, "rlopt: diff: the models' interfaces differ: %s\n", msg);
		rl_graph_free(gb);
		return RL_EXIT_INPUT;
	}

	/* the batches to price */
	const int64_t *batches = o.nbatches ? o.batches : default_batches;
	int nb = o.nbatches ? o.nbatches : (int)(sizeof(default_batches) / sizeof(*batches));
	if (!symbolic) {
		int64_t fixed = first.rank > 0 ? first.d[0].v : -1;
		for (int i = 0; i < o.nbatches; i++)
			if (batches[i] != fixed) {
				char sb[160];
				fprintf(stderr, "rlopt: %s: cannot bind batch %lld: the inputs have no "
				        "symbolic dimension (input '%s' is %s)\n", pa, (long long)batches[i],
				        first_name, rl_shape_str(&first, sb, sizeof(sb)));
				rl_graph_free(gb);
				return RL_EXIT_INPUT;
			}
		if (!o.nbatches)
			nb = 1;
	}
	rl_graph_free(gb);

	struct row *rows = calloc((size_t)nb, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "rlopt: diff: out of memory\n");
		return RL_EXIT_INPUT;
	}
	int status = RL_EXIT_OK, nrows = 0;
	bool any_slow = false;
	for (int i = 0; i < nb; i++) {
		struct row *r = &rows[nrows++];
		struct rl_cli_opts ob = o;
		ob.batch = symbolic ? (int)batches[i] : -1;
		r->batch = symbolic || o.nbatches ? batches[i] : (first.rank > 0 ? first.d[0].v : -1);
		if (!(r->before.g = rl_cli_load(pa, &ob, true)) ||
		    !(r->after.g = rl_cli_load(pb, &ob, true)) ||
		    !price(&r->before, pa, &m, symbolic ? batches[i] : -1) ||
		    !price(&r->after, pb, &m, symbolic ? batches[i] : -1) || !match_nodes(r)) {
			status = RL_EXIT_INPUT;
			break;
		}
		r->flops_ratio = ratio(r->after.tot.flops, r->before.tot.flops);
		r->bytes_ratio = ratio(r->after.tot.bytes, r->before.tot.bytes);
		r->time_ratio = ratio(r->after.tot.time_s, r->before.tot.time_s);
		r->verdict = rl_judge_verdict(r->time_ratio);
		any_slow |= strcmp(r->verdict, "slowdown") == 0;
	}
	if (status == RL_EXIT_OK) {
		if (json)
			print_json(stdout, pa, pb, &m, rows, nrows, any_slow);
		else
			print_text(stdout, pa, pb, &m, rows, nrows);
		fflush(stdout);
		if (fail_on_slow && any_slow)
			status = RL_EXIT_SLOWDOWN;
	}
	for (int i = 0; i < nrows; i++)
		row_free(&rows[i]);
	free(rows);
	return status;
}
