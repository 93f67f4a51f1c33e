/*
 * infer_impl.h - what the shape-inference driver (infer.c), the operator
 * family files (fam_*.c) and the constant evaluator (eval.c) share. Not part
 * of the public API: nothing outside ir/ includes it.
 *
 * Conventions every family function follows:
 * - It is called once per live node in topological order, after infer.c has
 *   checked the input count for the node's opset and that every present
 *   input has a dtype. It sets each present output's dtype and shape through
 *   rl_infer_set() (never by writing g->values directly), so declared types
 *   are merged and every produced dim is range-checked in one place.
 * - A user-visible problem returns rl_graph_error(g, n, RL_ERR_SHAPE, ...)
 *   with a one-line reason that names the shapes involved.
 * - A dim that the op needs as a number but that is symbolic does not fail:
 *   the output dim becomes a fresh unknown symbol, "unk_<node>_<axis>"
 *   (rl_dim_unk); the code generator reports unbound dims later.
 * - Rank -1 (unknown) inputs give rank -1 outputs where nothing better can
 *   be said.
 */
#ifndef RL_INFER_IMPL_H
#define RL_INFER_IMPL_H

#include "ir.h"

/* Largest dim any inferred shape may carry; a bigger one is a model error
 * (or an overflow in a shape computation), never a real tensor. */
#define RL_DIM_LIMIT ((int64_t)1 << 40)
/* Buffer size for shape strings in messages (8 dims of up to 13 digits or
 * a symbol name each). */
#define RL_SSTR 192
/* Longest small integer vector (shape tensors, axes) tracked symbolically. */
#define RL_SYMVEC_MAX RL_MAX_RANK

/* ---- family entry points (one per fam_*.c) ------------------------------ */

/* rl_infer_<file> for every family of RL_FAMILIES (ir/ir.h) */
#define X(E, file, name) enum rl_status rl_infer_##file(struct rl_graph *g, uint32_t node);
RL_FAMILIES(X)
#undef X
/* Fails, naming the node, when it reads a value whose extent along one axis
 * is data-dependent (value->extent_axis; fam_detect.c). */
enum rl_status rl_detect_check_inputs(struct rl_graph *g, uint32_t node);
/* Scans and losses (fam_index.c); reached through the shape family until
 * they get a family of their own. */
enum rl_status rl_infer_index(struct rl_graph *g, uint32_t node);
/* BitCast's output dtype: attribute `to`, of the input's width (ir/lowp.c). */
enum rl_status rl_infer_bitcast_to(struct rl_graph *g, uint32_t node, enum rl_dtype *to);
/* MeanVarianceNormalization's reduced axes (attribute `axes`, default
 * [0, 2, 3]) as flags per axis of X; the count, or -1 with the error set. */
int rl_mvn_axes(struct rl_graph *g, uint32_t node, bool axis[RL_MAX_RANK]);
/* A loss node's reduction attribute: 0 none, 1 sum, 2 mean, -1 unknown. */
int rl_loss_reduction(const struct rl_node *n);
/* A scatter's reduction: 0 none, 1 add, 2 mul, 3 max, 4 min, -1 unknown. */
int rl_scatter_reduction(const struct rl_node *n);
/* Resize/Upsample: the input slots of roi, scales and sizes for the node's
 * opset (-1 when absent; an empty scales tensor counts as absent). */
void rl_resize_slots(const struct rl_graph *g, const struct rl_node *n, int *roi, int *scales,
                     int *sizes);

/* ---- dims and shapes (infer.c) ------------------------------------------ */

static inline struct rl_dim rl_dim_num(int64_t v)
{
	return (struct rl_dim){v, NULL};
}
/* A fresh unknown dim for axis `axis` of node `node`'s output `out`. */
struct rl_dim rl_dim_unk(struct rl_graph *g, uint32_t node, int out, int axis);
/* True for a symbolic dim that names nothing the user can bind: one this
 * file invented ("unk_...") or one without a name. */
bool rl_dim_is_unk(const struct rl_dim *d);
/* Both static and different: a certain mismatch. */
static inline bool rl_dim_differ(struct rl_dim a, struct rl_dim b)
{
	return a.v >= 0 && b.v >= 0 && a.v != b.v;
}
/* Product of dims: static when all are, the one symbol when the rest are 1,
 * else unknown (named for node/out/axis). */
struct rl_dim rl_dim_prod(struct rl_graph *g, uint32_t node, int out, int axis,
                          const struct rl_dim *d, int n);
/* Normalize `axis` into [0, rank) (or [0, rank] with inclusive). */
bool rl_axis_norm(int64_t axis, int rank, bool inclusive, int *out);
/* "2x3x4", "batchx128", "scalar", "?" for messages. */
const char *rl_sstr(const struct rl_shape *s, char *buf);
/* Multidirectional broadcast with a message naming the shapes on failure.
 * `what` is the op name used in the message. */
enum rl_status rl_infer_broadcast(struct rl_graph *g, uint32_t node,
                                  const struct rl_shape *a,
                                  const struct rl_shape *b,
                                  struct rl_shape *out);

/* Set output slot `k` of `node` (skipped when the slot is absent). Checks
 * the rank and every dim (>= 0, <= RL_DIM_LIMIT, product within int64),
 * names anonymous symbolic dims, and merges the type already on the value
 * (a graph output's declared type, value_info, or an earlier run): a
 * static-vs-static conflict is an error; a declared static or named dim
 * replaces a dim that inference could not determine. */
enum rl_status rl_infer_set(struct rl_graph *g, uint32_t node, int k,
                            enum rl_dtype dt, const struct rl_shape *s);
/* Input slot i's value, or NULL when absent. */
static inline struct rl_value *rl_infer_in(struct rl_graph *g,
                                           const struct rl_node *n, int i)
{
	uint32_t v = rl_node_in(n, i);
	return v == RL_NONE ? NULL : &g->values[v];
}

/* ---- dtype checks (infer.c) --------------------------------------------- */

/* enum rl_tc is in ir.h (the tc column of ops.def). */
/* Check input slot `slot` (when present) against class `tc`. */
enum rl_status rl_infer_dtype_in(struct rl_graph *g, uint32_t node, int slot,
                                 enum rl_tc tc);
/* Inputs `a` and `b` (when present) must share a dtype. */
enum rl_status rl_infer_dtype_same(struct rl_graph *g, uint32_t node, int a,
                                   int b);

/* ---- integer lists given as attribute or input (infer.c) ---------------- */

#define RL_LIST_ABSENT (-1)  /* not given: use the op's default */
#define RL_LIST_UNKNOWN (-2) /* given as an input that is not constant */
#define RL_LIST_ERROR (-3)   /* bad list; the error is recorded in *st */
/* Read an integer list that the op takes as attribute `attr` before opset
 * `since` and as input `slot` from `since` on (since 0: attribute only;
 * attr NULL: input only). Returns the count, or one of RL_LIST_*. */
int rl_infer_list(struct rl_graph *g, uint32_t node, const char *attr,
                  int slot, int since, int64_t *out, int max,
                  enum rl_status *st);

/* ---- small integer tensors known at compile time (infer.c, eval.c) ------ */

/* One element of a small integer tensor: a number, or (sym != NULL) the
 * size of a symbolic dim, e.g. the output of Shape on a `batch`x3 input. */
struct rl_symint {
	int64_t v;       /* the number when sym is NULL */
	const char *sym; /* symbol name of an unknown but non-negative size */
};
/* Elements of value v when known: constant data (an integer or bool dtype,
 * rank <= 1), or what the symbolic tracker recorded during this run.
 * Returns the count, or -1 when unknown or longer than max. */
int rl_infer_symints(const struct rl_graph *g, uint32_t v,
                     struct rl_symint *out, int max);
/* Record the elements of a non-constant value (inference runs only). */
void rl_infer_track(uint32_t v, const struct rl_symint *e, int n);
/* The data value v had before this inference run cleared it (NULL if none
 * or outside a run), so evaluation can reuse an identical block. */
const void *rl_infer_prev_data(uint32_t v, size_t *nbytes);
/* Symbolic evaluation of shape arithmetic (eval.c): when node computes a
 * small integer tensor from Shape outputs (Gather, Concat, Slice, views,
 * Cast, Add/Sub/Mul/Div, Equal, Where), record its elements, or attach
 * them as constant data when they all come out as numbers. */
void rl_eval_symbolic(struct rl_graph *g, uint32_t node);

/* ---- plans shared between inference and evaluation ---------------------- */

/* Slice: per input axis, the first index, the step and the output length.
 * `whole` marks a symbolic axis the slice keeps entire (0:INT_MAX:1 or
 * -1:INT_MIN:-1, the exporters' way of saying "all of it"), so the symbol
 * passes (reversed, for the second). */
struct rl_slice_plan {
	bool known;                  /* false: starts/ends/steps not constant */
	bool axes_known;             /* `sliced` is valid (even when !known) */
	int64_t start[RL_MAX_RANK];
	int64_t step[RL_MAX_RANK];
	int64_t len[RL_MAX_RANK];    /* -1: symbolic input dim, length unknown */
	bool sliced[RL_MAX_RANK];    /* axis named by `axes` */
	bool whole[RL_MAX_RANK];     /* symbolic axis kept entire */
};
enum rl_status rl_slice_plan(struct rl_graph *g, uint32_t node,
                             struct rl_slice_plan *p);

/* Reduce: which axes, after keepdims/noop_with_empty_axes rules. */
struct rl_reduce_plan {
	bool known;               /* false: axes input not constant */
	bool noop;                /* empty axes with noop_with_empty_axes=1 */
	bool keepdims;            /* reduced axes stay as 1 */
	int naxes_input;          /* count of axes given (for rank when unknown) */
	bool axis[RL_MAX_RANK];   /* reduced axes when known */
};
enum rl_status rl_reduce_plan(struct rl_graph *g, uint32_t node,
                              struct rl_reduce_plan *p);

/* Shape (opset 15 start/end): the slice [*start, *end) of a rank-r shape. */
void rl_shape_op_range(const struct rl_node *n, int rank, int *start, int *end);

/* Range: element count from constant scalars; false if not all constant or
 * delta is zero (with *st set on a zero delta). */
bool rl_range_count(struct rl_graph *g, uint32_t node, int64_t *count,
                    enum rl_status *st);

/* Conv and pool windows: attributes resolved for `nsp` spatial axes. */
enum rl_autopad {
	RL_PAD_NOTSET,     /* explicit pads (default) */
	RL_PAD_SAME_UPPER, /* output = ceil(in / stride), extra pad at the end */
	RL_PAD_SAME_LOWER, /* same, extra pad at the start */
	RL_PAD_VALID,      /* no padding */
};
struct rl_window {
	int nsp;                   /* spatial axes */
	int64_t k[RL_MAX_RANK];    /* kernel; -1 where the weight dim is symbolic */
	int64_t s[RL_MAX_RANK];    /* strides */
	int64_t d[RL_MAX_RANK];    /* dilations */
	int64_t pb[RL_MAX_RANK];   /* explicit pads at the start */
	int64_t pe[RL_MAX_RANK];   /* explicit pads at the end */
	enum rl_autopad autopad;   /* pb/pe apply only with RL_PAD_NOTSET */
	bool ceil_mode;            /* pools: ceil instead of floor */
	bool must_cover;           /* Conv: the padded input must span the kernel */
};
/* Read kernel_shape (else the weight's trailing dims when w is non-NULL),
 * strides, dilations, pads, auto_pad and ceil_mode, validating lengths and
 * ranges. */
enum rl_status rl_window_read(struct rl_graph *g, uint32_t node, int nsp,
                              const struct rl_shape *w, struct rl_window *win);
/* Output size of spatial axis i for input dim `in` (forward windows). */
enum rl_status rl_window_out(struct rl_graph *g, uint32_t node,
                             const struct rl_window *w, int i, struct rl_dim in,
                             int axis, struct rl_dim *out);

/* Transpose permutation (default: reversed axes); false if invalid. */
bool rl_transpose_perm(const struct rl_node *n, int rank, int *perm);

#endif /* RL_INFER_IMPL_H */
