/*
 * report.c - `rlopt report MODEL.onnx`: the per-node table.
 *
 * One row per node in topological order: name, op, input and output shapes
 * with dtypes. The roofline columns (FLOPs, bytes, intensity, bound, time)
 * come from the cost model once it is attached (backends/report).
 */
#include "cli.h"

#include <string.h>

static void shapes_of(const struct rl_graph *g, const uint32_t *vals, int n,
                      char *b, size_t len)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < n && p < len; i++) {
		char sb[128];
		if (vals[i] == RL_NONE) {
			p += (size_t)snprintf(b + p, len - p, "%s_", i ? ", " : "");
			continue;
		}
		const struct rl_value *v = &g->values[vals[i]];
		p += (size_t)snprintf(b + p, len - p, "%s%s", i ? ", " : "",
		                      rl_shape_str(&v->shape, sb, sizeof(sb)));
	}
}

int rl_cmd_report(int argc, char **argv)
{
	struct rl_cli_opts o;
	rl_cli_opts_init(&o);
	const char *model = NULL;
	for (int i = 1; i < argc; i++) {
		int r = rl_cli_parse_common(&o, argc, argv, &i);
		if (r < 0)
			return RL_EXIT_USAGE;
		if (r > 0)
			continue;
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "rlopt: report: unknown option '%s'\nTry 'rlopt --help'.\n",
			        argv[i]);
			return RL_EXIT_USAGE;
		}
		if (model) {
			fprintf(stderr, "rlopt: report: unexpected argument '%s'\n", argv[i]);
			return RL_EXIT_USAGE;
		}
		model = argv[i];
	}
	if (!model) {
		fprintf(stderr, "rlopt: report: no model given\n");
		return RL_EXIT_USAGE;
	}
	struct rl_graph *g = rl_cli_load(model, &o, false);
	if (!g)
		return RL_EXIT_INPUT;
	printf("%-32s %-20s %-9s %-40s %s\n", "node", "op", "dtype", "inputs", "outputs");
	for (uint32_t k = 0; k < g->norder; k++) {
		const struct rl_node *n = &g->nodes[g->order[k]];
		char ins[512], outs[512];
		shapes_of(g, n->in, n->nin, ins, sizeof(ins));
		shapes_of(g, n->out, n->nout, outs, sizeof(outs));
		const char *dt = n->nout && n->out[0] != RL_NONE
		                 ? rl_dtype_name(g->values[n->out[0]].dtype) : "-";
		printf("%-32.32s %-20s %-9s %-40s %s\n", n->name, rl_op_table[n->op].name, dt, ins,
		       outs);
	}
	printf("%u nodes, %u inputs, %u outputs, opset %d\n", g->norder, g->ninputs,
	       g->noutputs, g->opset);
	rl_graph_free(g);
	return RL_EXIT_OK;
}
