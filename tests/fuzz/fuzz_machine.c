/*
 * fuzz_machine.c - libFuzzer target over machine profiles (hw/NAME.xml):
 * libxml2 parsing with no network, no entities and no DTD, validation
 * against hw/machine.xsd, and the checks past the schema (magnitudes, cache
 * geometry). Any input must load or give a one-line error; a crash, leak or
 * sanitizer report is a bug. Seeds: tests/fuzz/corpus_machine.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_file.h"
#include "ir/machine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = rl_fuzz_write("profile.xml", data, size);
	if (!path)
		return 0;
	struct rl_machine m;
	char err[1024];
	if (rl_machine_load(path, &m, err, sizeof err) == RL_OK)
		(void)rl_machine_balance(&m, RL_PREC_FP32);
	return 0;
}
