/*
 * report.c - `rlopt report MODEL.onnx [--hw H] [--batch B[,B...]]
 *            [--format text|json|svg|html] [-o FILE]`.
 *
 * Loads the model once per batch of the sweep (binding the symbolic batch
 * dims exactly as the main command's --batch does), prices every binding
 * on the machine, derives for each weighted node the batch at which it
 * crosses the machine balance, and renders the report (backends/report).
 * The model is reported as loaded: no passes run (the main form's --report
 * FILE reports the optimized graph with the passes' remarks).
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

int rl_cmd_report(int argc, char **argv)
{
	struct rl_cli_opts o;
	rl_cli_opts_init(&o);
	const char *model = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		int r = rl_cli_parse_common(&o, argc, argv, &i);
		if (r < 0)
			return RL_EXIT_USAGE;
		if (r > 0)
			continue;
		const char *a = argv[i];
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
	for (int i = 0; i < nb; i++) {
		struct rl_cli_opts c = o;
		c.batch = (int)batches[i];
		if (!(gs[i] = rl_cli_load(model, &c, false)))
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
	 * weighted node at the first binding; it only remarks, never rewrites */
	rl_pass_ctx_init(&jctx, &m, 2);
	if (rl_pass_judge(gs[0], &jctx) != RL_OK) {
		fprintf(stderr, "rlopt: %s\n", gs[0]->err);
		goto done;
	}
	struct rl_report rep = {
		.model = model, .m = &m, .series = series, .nseries = nb,
		.cross = cross, .ncross = ncross, .ctx = &jctx, .note = note,
	};
	char err[1024];
	if (!rl_report_write(&rep, fmt, out, err, sizeof(err))) {
		fprintf(stderr, "rlopt: %s\n", err);
		goto done;
	}
	if (o.verbose && out)
		fprintf(stderr, "rlopt: wrote %s\n", out);
	rc = RL_EXIT_OK;
done:
	rl_pass_ctx_free(&jctx);
	free(cross);
	for (int i = 0; i < 17; i++)
		if (gs[i])
			rl_graph_free(gs[i]);
	return rc;
}
