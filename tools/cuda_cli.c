/*
 * cuda_cli.c - the command line's CUDA choices, shared by `rlopt -o X.cu`
 * and `rlopt run --target cuda`: the default GPU profile, the refusal of a
 * CPU profile, --cuda-library, and the compile command for the GPU or for
 * emulation.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

#define RL_CUDA_DEFAULT_HW "h200"

bool rl_cli_cuda_hw(struct rl_cli_opts *o)
{
	struct rl_machine m;
	if (!o->hw)
		o->hw = RL_CUDA_DEFAULT_HW;
	if (!rl_cli_machine(o, &m))
		return false;
	if (strcmp(m.kind, "gpu") != 0) {
		fprintf(stderr, "rlopt: --hw %s is a %s profile; the CUDA backend needs a GPU "
		        "profile (h200, h100, a100, rtx4090; default %s)\n", o->hw,
		        m.kind[0] ? m.kind : "non-GPU", RL_CUDA_DEFAULT_HW);
		return false;
	}
	return true;
}

bool rl_cli_cuda_library(const char *v, bool *cublas)
{
	if (strcmp(v, "cublas") && strcmp(v, "none")) {
		fprintf(stderr, "rlopt: --cuda-library wants cublas or none, not '%s'\nTry 'rlopt "
		        "--help'.\n", v);
		return false;
	}
	*cublas = strcmp(v, "cublas") == 0;
	return true;
}
