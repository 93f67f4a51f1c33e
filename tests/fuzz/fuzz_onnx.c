/*
 * fuzz_onnx.c - libFuzzer target over the ONNX frontend and everything a
 * model goes through on its way to C: parse, build the IR, infer shapes,
 * verify; then, for a model that loads, bind every symbolic input dimension
 * to 1, run the -O2 pipeline on the generic-cpu profile and emit C into a
 * private folder (deleted again). Any input must give RL_OK or a clean error
 * at every step; a crash, leak or sanitizer report is a bug.
 *
 * Built two ways: with clang -fsanitize=fuzzer,address (RL_FUZZ=ON) for
 * fuzzing, and with replay.c's main() and ASan/UBSan under any compiler to
 * replay the corpus in every test run.
 */
#include <stddef.h>
#include <stdint.h>

#include "backends/c/emit.h"
#include "frontends/onnx/onnx.h"
#include "fuzz_file.h"
#include "ir/machine.h"
#include "passes/pass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The profile, loaded once (it is read-only to the passes). */
static const struct rl_machine *fuzz_machine(void)
{
	static struct rl_machine m;
	static int state; /* 0 not tried, 1 loaded, -1 failed */
	char err[1024];
	if (!state)
		state = rl_machine_load("generic-cpu", &m, err, sizeof err) == RL_OK ? 1 : -1;
	return state > 0 ? &m : NULL;
}

static void fuzz_optimize_emit(struct rl_graph *g)
{
	for (uint32_t k = 0; k < g->ninputs; k++) {
		const struct rl_value *v = &g->values[g->inputs[k]];
		for (int d = 0; d < v->shape.rank; d++)
			if (v->shape.d[d].v < 0 && v->shape.d[d].sym)
				rl_graph_bind_dim(g, v->shape.d[d].sym, 1);
	}
	if (rl_graph_infer(g) != RL_OK || rl_graph_verify(g) != RL_OK)
		return;
	const struct rl_machine *m = fuzz_machine();
	if (!m)
		return;
	struct rl_pass_ctx ctx;
	rl_pass_ctx_init(&ctx, m, 2);
	enum rl_status st = rl_pipeline_run(g, &ctx, NULL);
	rl_pass_ctx_free(&ctx);
	if (st != RL_OK || !rl_fuzz_dir())
		return;
	char path[600], err[1024];
	snprintf(path, sizeof path, "%s/fz.c", rl_fuzz_dir());
	/* weights_max 4 KiB: the side-file path is exercised too */
	struct rl_cgen_opts co = {.prefix = NULL, .weights_max = 4096};
	(void)rl_emit_c(g, &co, path, err, sizeof err);
	rl_fuzz_unlink("fz.c");
	rl_fuzz_unlink("fz.h");
	rl_fuzz_unlink("fz.weights");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	struct rl_graph *g = NULL;
	/* the folder is a fixed empty one so external data never resolves to
	 * real files outside the corpus */
	if (rl_onnx_load_buffer(data, size, "/nonexistent-rlopt-fuzz/model.onnx", &g, err,
	                        sizeof(err)) == RL_OK) {
		if (rl_graph_infer(g) == RL_OK && rl_graph_verify(g) == RL_OK)
			fuzz_optimize_emit(g);
		rl_graph_free(g);
	}
	return 0;
}
