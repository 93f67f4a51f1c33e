/*
 * report.c - `rlopt report MODEL.onnx [--hw H] [--batch B[,B...]]
 *            [-O0|-O1|-O2 | --passes a,b] [--per-node]
 *            [--format text|json|svg|html] [-o FILE]`.
 *
 * Loads the model once per batch of the sweep (binding the symbolic batch
 * dims exactly as the main command's --batch does), runs the passes -O or
 * --passes choose on every binding (with the main form's meaning; without
 * either the model is reported as loaded), prices every binding on the
 * machine kernel by kernel, derives for each weighted node the batch at which
 * it crosses the machine balance, and renders the report (backends/report)
 * with the passes' remarks of the first binding. --per-node lists nodes
 * instead of kernels in the text table (JSON has both).
 *
 * Without --batch, a model whose batch is symbolic is priced at batch 1 and
 * says so. The format comes from --format, else from -o's extension (.txt
 * .json .svg .html), else text on standard output. Errors: a bad flag or
 * format is a usage error (1); a bad model or profile is 2; nothing is
 * written in either case.
 */
#include "cli.h"

#include "passes/pass.h"

#include "backends/report/report.h"

#include <stdlib.h>
#include <string.h>

/* Some graph input's shape differs between the two loads: --batch binds. */
static bool inputs_differ(const struct rl_graph *a, const struct rl_graph *b)
{
	if (a->ninputs != b->ninputs)
		return true;
	for (uint32_t i = 0; i < a->ninputs; i++)
		if (!rl_shape_equal(&a->values[a->inputs[i]].shape, &b->values[b->inputs[i]].shape))
			return true;
	return false;
}

static void usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "rlopt: report: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'rlopt --help'.\n");
}

/* Run the passes on one binding. The first binding's context (its remarks,
 * --dump-after and --remarks) is kept in *ctx for the report; the others'
 * are dropped. */
static bool optimize_binding(struct rl_graph *g, const struct rl_cli_opts *o, bool first,
                             struct rl_machine *m, struct rl_pass_ctx *ctx, bool *have_ctx)
{
	struct rl_cli_opts c = *o;
	struct rl_pass_ctx tmp;
	memset(&tmp, 0, sizeof(tmp));
	if (!first) {
		c.dump_after = NULL;
		c.remarks = false;
	}
	bool ok = rl_cli_optimize(g, &c, m, first ? ctx : &tmp);
	if (first)
		*have_ctx = true;
	else
		rl_pass_ctx_free(&tmp);
	return ok;
}

/* Some remark came from the judge: the pipeline ran it. */
static bool judge_ran(const struct rl_pass_ctx *ctx)
{
	for (uint32_t i = 0; i < ctx->nremarks; i++)
		if (strcmp(ctx->remarks[i].pass, "judge") == 0)
			return true;
	return false;
}

int rl_cmd_report(int argc, char **argv)
{
	struct rl_cli_opts o;
	rl_cli_opts_init(&o);
	const char *model = NULL, *out = NULL;
	bool per_node = false;
	for (int i = 1; i < argc; i++) {
		int r = rl_cli_parse_common(&o, argc, argv, &i);
		if (r < 0)
			return RL_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i];
		if (strcmp(a, "--per-node") == 0) {
			per_node = true;
			continue;
		}
		if (strcmp(a, "-o") == 0 || strncmp(a, "-o=", 3) == 0) {
			if (a[2] == '=') {
				out = a + 3;
			} else if (i + 1 < argc) {
				out = argv[++i];
			} else {
				usage("%s", "option -o needs a value");
				return RL_EXIT_USAGE;
			}
			continue;
		}
		if (a[0] == '-' && a[1]) {
			usage("unknown option '%s'", a);
			return RL_EXIT_USAGE;
		}
		if (model) {
			usage("unexpected argument '%s'", a);
			return RL_EXIT_USAGE;
		}
		model = a;
	}
	if (!model) {
		usage("%s", "no model given");
		return RL_EXIT_USAGE;
	}
	/* passes run with -O or --passes; the options that steer them only then */
	bool optimize = (o.given & (RL_OPT_BIT(RL_OPT_OLEVEL) | RL_OPT_BIT(RL_OPT_PASSES))) != 0;
	unsigned used = RL_OPT_BIT(RL_OPT_BATCH) | RL_OPT_BIT(RL_OPT_BATCH_LIST) |
	                RL_OPT_BIT(RL_OPT_SHAPE) | RL_OPT_BIT(RL_OPT_DIM) | RL_OPT_BIT(RL_OPT_SEQ) | RL_OPT_BIT(RL_OPT_HW) |
	                RL_OPT_BIT(RL_OPT_LAUNCH) | RL_OPT_BIT(RL_OPT_THREADS) |
	                RL_OPT_BIT(RL_OPT_FORMAT) | RL_OPT_BIT(RL_OPT_OLEVEL) |
	                RL_OPT_BIT(RL_OPT_PASSES) | RL_OPT_BIT(RL_OPT_VERBOSE);
	if (optimize)
		used |= RL_OPT_BIT(RL_OPT_DUMP_AFTER) | RL_OPT_BIT(RL_OPT_REMARKS) |
		        RL_OPT_BIT(RL_OPT_FACTORIZE) | RL_OPT_BIT(RL_OPT_MAX_REL_ERROR) |
		        RL_OPT_BIT(RL_OPT_QUANTIZE) | RL_OPT_BIT(RL_OPT_BLOCK) |
		        RL_OPT_BIT(RL_OPT_SCALE_TYPE) |
		        RL_OPT_BIT(RL_OPT_CALIBRATE);
	if (!rl_cli_check_used(&o, used, "report"))
		return RL_EXIT_USAGE;
	enum rl_report_format fmt = RL_REPORT_TEXT;
	if (o.format) {
		if (!rl_report_format_parse(o.format, &fmt)) {
			usage("--format wants text, json, svg or html, not '%s'", o.format);
			return RL_EXIT_USAGE;
		}
	} else if (out && !rl_report_format_from_path(out, &fmt)) {
		usage("cannot tell the format of '%s': use .txt, .json, .svg or .html, or --format",
		      out);
		return RL_EXIT_USAGE;
	}
	if (out && strcmp(out, "-") != 0 && !rl_cli_check_out_dir(out))
		return RL_EXIT_INPUT;

	struct rl_machine m;
	if (!rl_cli_machine(&o, &m))
		return RL_EXIT_INPUT;

	/* one binding per batch; without --batch, batch 1 for a symbolic batch */
	int64_t one = 1;
	const int64_t *batches = o.nbatches ? o.batches : &one;
	int nb = o.nbatches ? o.nbatches : 1;
	struct rl_graph *gs[17] = {NULL};
	struct rl_report_series series[16];
	struct rl_report_crossing *cross = NULL;
	int ncross = 0, rc = RL_EXIT_INPUT;
	struct rl_pass_ctx jctx;
	memset(&jctx, 0, sizeof(jctx));
	bool have_ctx = false;
	for (int i = 0; i < nb; i++) {
		struct rl_cli_opts c = o;
		c.batch = (int)batches[i];
		if (!(gs[i] = rl_cli_load(model, &c, false)))
			goto done;
		if (optimize && !optimize_binding(gs[i], &o, i == 0, &m, &jctx, &have_ctx))
			goto done;
		series[i].g = gs[i];
		series[i].batch = batches[i];
	}
	/* a second binding to derive the crossings from: the first batch of the
	 * list that differs from the first, else twice the first */
	int second = -1;
	for (int i = 1; i < nb && second < 0; i++)
		if (batches[i] != batches[0])
			second = i;
	int64_t b2 = second >= 0 ? batches[second] : 2 * batches[0];
	struct rl_graph *g2 = second >= 0 ? gs[second] : NULL;
	if (!g2) {
		struct rl_cli_opts c = o;
		c.batch = (int)b2;
		if (!(g2 = gs[16] = rl_cli_load(model, &c, false)))
			goto done;
		if (optimize && !optimize_binding(g2, &o, false, &m, &jctx, &have_ctx))
			goto done;
	}
	const char *note = NULL;
	if (inputs_differ(gs[0], g2)) {
		ncross = rl_report_crossings(gs[0], batches[0], g2, b2, &m, &cross);
		if (ncross < 0)
			ncross = 0;
		if (!o.nbatches)
			note = "the symbolic batch is bound to 1: choose with --batch N or sweep with "
			       "--batch 1,8,64";
	} else {
		/* every binding is the same graph: report it once */
		series[0].batch = 0;
		nb = 1;
		if (o.nbatches)
			note = "the model has no symbolic batch dimension: --batch changes nothing";
	}
	/* the rewrite verdicts: the judge prices candidate rewrites of every
	 * weighted node at the first binding; it only remarks, never rewrites.
	 * The pipeline's own remarks carry them when it ran the judge. */
	if (!have_ctx) {
		rl_pass_ctx_init(&jctx, &m, 2);
		have_ctx = true;
	}
	if (!judge_ran(&jctx) && rl_pass_judge(gs[0], &jctx) != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", gs[0]->err);
		goto done;
	}
	struct rl_report rep = {
		.model = model, .m = &m, .series = series, .nseries = nb,
		.cross = cross, .ncross = ncross, .ctx = &jctx, .note = note,
		.per_node = per_node,
	};
	char err[1024];
	if (rl_report_write(&rep, fmt, out, err, sizeof(err)) != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", err);
		goto done;
	}
	if (o.verbose && out)
		fprintf(stderr, "rlopt: wrote %s\n", out);
	rc = RL_EXIT_OK;
done:
	if (have_ctx)
		rl_pass_ctx_free(&jctx);
	free(cross);
	for (int i = 0; i < 17; i++)
		if (gs[i])
			rl_graph_free(gs[i]);
	return rc;
}
