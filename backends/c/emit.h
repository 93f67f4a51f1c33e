/*
 * emit.h - the C backend's public API: a graph with static shapes to one .c
 * and one .h (rl_emit_c), and the ops it implements. The interface between
 * the driver and the per-family kernel emitters is emit_impl.h.
 */
#ifndef RL_EMIT_C_H
#define RL_EMIT_C_H

#include "ir.h"

struct rl_cgen_opts {
	const char *prefix;   /* symbol prefix; NULL: from the .c file name */
	long long weights_max; /* bytes of constants embedded before a side file
	                          is used; <0 for the default (16 MiB) */
	bool static_mode;      /* small targets (`rlopt --static`): every constant
	                          embedded, no malloc, no stdio, no threads, the
	                          caller's workspace (NAME_run_ws, NAME_WORKSPACE_BYTES)
	                          and no scratch above RL_STATIC_STACK_MAX bytes on
	                          the stack (cg_scratch_array) */
};

/* Static mode: the largest local array a kernel may keep on the stack. */
#define RL_STATIC_STACK_MAX 1024

/*
 * Write C_PATH (NAME.c), NAME.h beside it and, when constants exceed
 * weights_max, NAME.weights. All or nothing: temporary files renamed at the
 * end. The graph must be inferred and verified; every shape must be static
 * (else RL_ERR_SHAPE naming the value and the flag to use).
 */
enum rl_status rl_emit_c(struct rl_graph *g, const struct rl_cgen_opts *o,
                         const char *c_path, char *err, size_t errlen);

/* Ops the C backend can emit (for `rlopt ops`): the emit column of ir/ops.def
 * is not NONE. Some of them it emits only for some dtypes or attributes, and
 * refuses the rest at emit time, naming the node. */
bool rl_emit_c_supports(enum rl_op op);

#endif /* RL_EMIT_C_H */
