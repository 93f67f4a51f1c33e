/*
 * emit_detect.h - what the C backend driver (emit.c) calls in emit_detect.c
 * besides the family emitter: the generated API for outputs whose extent
 * along one axis depends on input values (value->extent_axis, set by
 * ir/fam_detect.c).
 *
 * Contract with the kernels: a kernel whose output k has a data-dependent
 * extent declares `static int64_t <kname>_n<k>` at file scope, stores the
 * extent of each run there, and writes the output densely over the actual
 * dims at the start of its buffer (which is sized for the upper bound).
 * The driver copies the extent into NAME_run_dims() after the kernel runs.
 */
#ifndef RL_EMIT_DETECT_H
#define RL_EMIT_DETECT_H

#include "emit_impl.h"

/* True when some graph output has a data-dependent extent. */
bool cg_extent_any(const struct rl_graph *g);
/* File-scope dims arrays the run function updates (before NAME_run_v). */
void cg_extent_decls(const struct rl_graph *g, const char *prefix, struct rl_buf *c);
/* Statements after the kernel `kname` of `node` ran in NAME_run_v. */
void cg_extent_after(const struct rl_graph *g, const char *prefix, uint32_t node,
                     const char *kname, struct rl_buf *c);
/* NAME_run_dims() (after the io tables). */
void cg_extent_func(const struct rl_graph *g, const char *prefix, const char *upper,
                    struct rl_buf *c);
/* Header text: the documentation, NAME_DYNAMIC_OUTPUTS and the prototype. */
void cg_extent_header(const struct rl_graph *g, const char *prefix, const char *upper,
                      struct rl_buf *h);

#endif /* RL_EMIT_DETECT_H */
