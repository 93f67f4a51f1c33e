/*
 * emit_index.h - the scan, scatter, loss and row-norm kernels (emit_index.c)
 * and the resampling kernels (emit_image.c). These ops are filed under the
 * shape family in ops.def until the cost model and the report list a family
 * of their own; their emit column is INDEX, so emit.c dispatches them here.
 */
#ifndef RL_EMIT_INDEX_H
#define RL_EMIT_INDEX_H

#include "emit_impl.h"

enum rl_status rl_emit_c_index(struct rl_cgen *cg, uint32_t node);
/* Resize and Upsample (emit_image.c). */
enum rl_status rl_emit_c_resize(struct rl_cgen *cg, uint32_t node);
/* GridSample (emit_image.c). */
enum rl_status rl_emit_c_grid_sample(struct rl_cgen *cg, uint32_t node);

#endif /* RL_EMIT_INDEX_H */
