/*
 * fuzz_onnx.c - libFuzzer target over the ONNX frontend: parse, build the
 * IR, infer shapes, verify. Any input must give RL_OK or a clean error; a
 * crash, leak or sanitizer report is a bug.
 *
 * Built two ways: with clang -fsanitize=fuzzer,address (RL_FUZZ=ON) for
 * fuzzing, and with replay.c's main() and ASan/UBSan under any compiler to
 * replay the corpus in every test run.
 */
#include <stddef.h>
#include <stdint.h>

#include "frontends/onnx/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[1024];
	struct rl_graph *g = NULL;
	/* the folder is a fixed empty one so external data never resolves to
	 * real files outside the corpus */
	if (rl_onnx_load_buffer(data, size, "/nonexistent-rlopt-fuzz/model.onnx", &g, err,
	                        sizeof(err)) == RL_OK) {
		if (rl_graph_infer(g) == RL_OK)
			(void)rl_graph_verify(g);
		rl_graph_free(g);
	}
	return 0;
}
