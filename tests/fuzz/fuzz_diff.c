/*
 * fuzz_diff.c - libFuzzer target over `rlopt diff`'s pair loader: two ONNX
 * models loaded unbound, their interfaces compared, then each bound at every
 * batch and priced node by node, the nodes matched and the verdict printed
 * (rl_cmd_diff, tools/diff.c, with the CLI around it: the target links the
 * tool's sources, its main() renamed). Any pair must give a diff or a
 * one-line error with exit 2; a crash, leak or sanitizer report is a bug.
 *
 * Input layout: byte 0 picks options (bit 0: --batch 1,3; bit 1: text
 * instead of JSON), bytes 1-2 the length L of the first model (little
 * endian, clamped to what is there), then L bytes of BEFORE.onnx, the rest
 * AFTER.onnx. Seeds: tests/fuzz/corpus_diff (made by mkseeds_diff.py from
 * examples/ and the ONNX corpus). Output goes to /dev/null.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz_file.h"

int rl_cmd_diff(int argc, char **argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	if (!quiet) {
		quiet = 1;
		if (!freopen("/dev/null", "w", stdout))
			return 0;
	}
	if (size < 3)
		return 0;
	unsigned flags = data[0];
	size_t la = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	if (la > size)
		la = size;
	char pa[600], pb[600];
	const char *p = rl_fuzz_write("before.onnx", data, la);
	if (!p)
		return 0;
	snprintf(pa, sizeof pa, "%s", p);
	p = rl_fuzz_write("after.onnx", data + la, size - la);
	if (!p)
		return 0;
	snprintf(pb, sizeof pb, "%s", p);
	char *argv[10];
	int argc = 0;
	argv[argc++] = "diff";
	argv[argc++] = pa;
	argv[argc++] = pb;
	argv[argc++] = "--hw";
	argv[argc++] = "generic-cpu";
	if (flags & 1) {
		argv[argc++] = "--batch";
		argv[argc++] = "1,3";
	}
	argv[argc++] = "--format";
	argv[argc++] = flags & 2 ? "text" : "json";
	argv[argc] = NULL;
	(void)rl_cmd_diff(argc, argv);
	fflush(stdout);
	return 0;
}
