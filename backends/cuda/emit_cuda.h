/*
 * emit_cuda.h - the CUDA backend: a graph with static shapes to one .cu and
 * one .h (the same plain C API as the C backend, plus a device-pointer run).
 *
 * The .cu also builds as C++ on the CPU with -DRL_CUDA_EMULATE (g++ -x c++):
 * an emulation prelude in the file runs every block and thread of every
 * kernel serially, so the kernels' numerics are checked on any machine.
 */
#ifndef RL_EMIT_CUDA_H
#define RL_EMIT_CUDA_H

#include "ir.h"

struct rl_cuda_opts {
	const char *prefix;    /* symbol prefix; NULL: from the .cu file name */
	long long weights_max; /* bytes of constants embedded before they all go to
	                          NAME.weights, read by NAME_init; <0: 64 MiB */
	bool eager;            /* launch kernel by kernel (as -DRL_CUDA_NO_GRAPH) by
	                          default instead of replaying a CUDA graph: what
	                          `--launch eager` priced */
	bool cublas;           /* --cuda-library cublas: plain float32/float16/bfloat16
	                          MatMul and Gemm call cuBLAS inside the captured
	                          graph (link -lcublas); emulation keeps rlopt's kernel */
};

/*
 * Write CU_PATH (NAME.cu), NAME.h beside it and, when the constants exceed
 * weights_max, NAME.weights (the C backend's format). All or nothing. The graph
 * must be inferred and verified with static shapes. An op without a CUDA
 * kernel fails with one line naming the node and the op (RL_ERR_UNSUPPORTED).
 */
enum rl_status rl_emit_cuda(struct rl_graph *g, const struct rl_cuda_opts *o,
                            const char *cu_path, char *err, size_t errlen);

/* Ops the CUDA backend can emit (for `rlopt ops --target cuda`). */
bool rl_emit_cuda_supports(enum rl_op op);
/* How a supported op runs: NULL for a CUDA kernel of its own (for the usual
 * dtypes and forms), else a note such as "the C loop nest on the GPU". */
const char *rl_emit_cuda_note(enum rl_op op);

#endif /* RL_EMIT_CUDA_H */
