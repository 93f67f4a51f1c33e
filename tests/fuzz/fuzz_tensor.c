/*
 * fuzz_tensor.c - libFuzzer target over TensorProto files, the inputs of
 * `rlopt run -i`: dims, dtype, raw or typed data, element counts that do
 * not match the shape, external data (refused); the same bytes also as a
 * SequenceProto and an OptionalProto (onnx_valfile.c parses their wire
 * format itself). Any input must read or give a one-line error; a crash,
 * leak or sanitizer report is a bug.
 * Seeds: tests/fuzz/corpus_tensor.
 */
#include <stddef.h>
#include <stdint.h>

#include "frontends/onnx/onnx.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = rl_fuzz_write("input_0.pb", data, size);
	if (!path)
		return 0;
	struct rl_tensor t;
	char err[1024];
	memset(&t, 0, sizeof t);
	if (rl_tensor_read(path, &t, err, sizeof err) == RL_OK)
		rl_tensor_free(&t);
	static const enum rl_onnx_kind kinds[] = {RL_ONNX_SEQUENCE, RL_ONNX_OPTIONAL};
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		struct rl_value_file f;
		if (rl_value_file_read(path, kinds[k], &f, err, sizeof err) == RL_OK)
			rl_value_file_free(&f);
	}
	return 0;
}
