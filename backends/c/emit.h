/*
 * emit.h - the C backend: a graph with static shapes to one .c and one .h.
 *
 * Public entry: rl_emit_c(). Everything below the line is the interface
 * between the driver (emit.c: buffers, weights, the run function, the file
 * layout) and the per-family kernel emitters (emit_<family>.c), which only
 * write the body of one kernel function per node.
 *
 * A kernel is `static void k<N>_<node name>(const T0 *restrict X0, ...,
 * U0 *restrict Y0, ...)`: inputs are X0.., outputs Y0.. (absent optional
 * inputs are passed as NULL and named too), all shapes are compile-time
 * constants, and the emitter writes loops with literal bounds. Half and
 * bfloat16 tensors are stored as uint16_t and computed in float through the
 * rl_h2f/rl_f2h/rl_b2f/rl_f2b helpers the driver emits when needed.
 */
#ifndef RL_EMIT_C_H
#define RL_EMIT_C_H

#include <stdarg.h>

#include "ir.h"

struct rl_cgen_opts {
	const char *prefix;   /* symbol prefix; NULL: from the .c file name */
	long long weights_max; /* bytes of constants embedded before a side file
	                          is used; <0 for the default (64 MiB) */
};

/*
 * Write C_PATH (NAME.c), NAME.h beside it and, when constants exceed
 * weights_max, NAME.weights. All or nothing: temporary files renamed at the
 * end. The graph must be inferred and verified; every shape must be static
 * (else RL_ERR_SHAPE naming the value and the flag to use).
 */
enum rl_status rl_emit_c(struct rl_graph *g, const struct rl_cgen_opts *o,
                         const char *c_path, char *err, size_t errlen);

/* Ops the C backend can emit (for `rlopt ops`). */
bool rl_emit_c_supports(enum rl_op op);

/* ---- emitter interface -------------------------------------------------- */

/* A growable text buffer. */
struct rl_buf {
	char *s;
	size_t len, cap;
};
void rl_buf_printf(struct rl_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rl_buf_free(struct rl_buf *b);

struct rl_cgen_group; /* below */

struct rl_cgen {
	struct rl_graph *g;
	struct rl_buf body;     /* kernel body being written */
	int indent;             /* current indent level for cg_line */
	unsigned need_half : 1; /* emit half helpers */
	unsigned need_bf16 : 1; /* emit bfloat16 helpers */
	unsigned need_erf : 1;
	unsigned need_tanh : 1; /* emit rl_tanhf (the elementwise table's tanh) */
	int tmp;                /* counter for unique local names */
	char err[512];
	/* set by emit_fused.c while the anchor of an epilogue group is written:
	 * the anchor's emitter calls cg_epilogue() on every run of final outputs */
	const struct rl_cgen_group *epi;
	int epi_calls;          /* cg_epilogue() calls made for the current kernel */

	/* ---- per kernel; the driver resets these before each emitter call ---- */
	const char *kname;      /* the kernel's function name, e.g. "k3_fc1"; name
	                           file-scope things you add "<kname>_..." */
	/* Threads. An emitter that sets par_n > 0 writes its body as iterations
	 * [lo, hi) of an outer loop of par_n iterations (`lo` and `hi` are int64_t
	 * parameters in scope); the driver wraps it so rl_parallel_for splits
	 * [0, par_n) across the pool in chunks of at least par_grain iterations.
	 * Every output element must be computed inside one iteration (never split
	 * a reduction), so results do not depend on the thread count. */
	int64_t par_n, par_grain;
	/* The body uses the vector runtime (rl_vf, RL_VW, rl_vsel, RL_INLINE:
	 * emit_rt.c) inside `#ifdef RL_VEC ... #else <scalar> #endif`: the driver
	 * emits the runtime and compiles the kernel per ISA (RL_TARGETS). */
	unsigned simd : 1;

	/* ---- whole file; emitters append, the driver places them ---- */
	struct rl_buf statics;  /* file-scope declarations and helper functions,
	                           placed after the constants, before the kernels */
	struct rl_buf init;     /* statements run once in NAME_init after the
	                           weights are loaded (e.g. packing constant
	                           weights); `return -1;` on failure */
	struct rl_buf fini;     /* statements run in NAME_free (free what init made) */
	unsigned any_simd : 1;  /* set by the driver: some kernel set simd */
	unsigned any_par : 1;   /* set by the driver: some kernel set par_n */
};

/* Pointer expression (as the run function sees it) for value v: a constant's
 * array or side-file offset, a workspace slot, an input or output. Valid in
 * the `init` statements too for constants. */
void cg_value_ptr(struct rl_cgen *cg, uint32_t v, char *b, size_t n);

/* The runtime text a generated file carries (emit_rt.c): the vector types
 * and RL_TARGETS, and the thread pool with rl_parallel_for. */
void rl_emit_rt_vec(struct rl_buf *b);
void rl_emit_rt_pool(struct rl_buf *b);

/* Append one indented line to the kernel body. */
void cg_line(struct rl_cgen *cg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* C storage type of a dtype: "float", "int64_t", "uint16_t" (half), ... */
const char *cg_ctype(enum rl_dtype t);
/* Compute type: float for half/bfloat16/float, double, or the integer type. */
const char *cg_comptype(enum rl_dtype t);
/* Expression converting storage expression `e` of dtype t to its compute
 * type (marks helpers as needed); returns a pointer into a rotating buffer. */
const char *cg_load(struct rl_cgen *cg, enum rl_dtype t, const char *e);
/* Expression converting compute-type expression `e` to storage of dtype t. */
const char *cg_store(struct rl_cgen *cg, enum rl_dtype t, const char *e);
/* Literal of value x in compute type of t ("1.5f", "3", "(int64_t)-2"). */
const char *cg_lit(enum rl_dtype t, double x);

/*
 * Broadcast loops: open loops over the static shape `out`, and define, in the
 * innermost body, `o` (flat output index) and `i0`..`i<n-1>` (flat index of
 * each input under numpy broadcasting; ins[k] may have lower rank). Adjacent
 * dims are merged where every operand allows it, so a plain same-shape op is
 * one loop the compiler vectorizes. Returns the depth for cg_loops_close.
 */
int cg_bcast_open(struct rl_cgen *cg, const struct rl_shape *out, int n,
                  const struct rl_shape *const *ins);
/* The same, with the outermost merged loop split across threads (cg->par_n,
 * loop from lo to hi) when the nest has at least 2 * min_par elements;
 * min_par <= 0 never splits. */
int cg_bcast_open_par(struct rl_cgen *cg, const struct rl_shape *out, int n,
                      const struct rl_shape *const *ins, int64_t min_par);
void cg_loops_close(struct rl_cgen *cg, int depth);
/* Strides (in elements) of a static row-major shape; returns numel. */
int64_t cg_strides(const struct rl_shape *s, int64_t *strides);

/* Report a user-facing error for the node (unsupported attribute, ...). */
enum rl_status cg_error(struct rl_cgen *cg, uint32_t node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Shorthands for the node's values. */
static inline const struct rl_value *cg_in(struct rl_cgen *cg, uint32_t node, int i)
{
	uint32_t v = rl_node_in(&cg->g->nodes[node], i);
	return v == RL_NONE ? NULL : &cg->g->values[v];
}
static inline const struct rl_value *cg_out(struct rl_cgen *cg, uint32_t node, int i)
{
	const struct rl_node *n = &cg->g->nodes[node];
	return i < n->nout && n->out[i] != RL_NONE ? &cg->g->values[n->out[i]] : NULL;
}

/*
 * Elementwise ops as per-element C expressions (emit_elemwise.c): the one
 * table that both the single-op kernels and the fused kernels use (a CUDA
 * emitter would override entries where it must). in[k] is input k's value in
 * its compute type (cg_comptype), an identifier or a literal since an
 * expression may use it twice, NULL for an absent optional input. The result
 * is written to e in the compute type the op produces; storing it with
 * cg_store of the output's dtype gives exactly what the single-op kernel
 * stores. Statements the op needs first are written with cg_line; their
 * temporaries end in `tag` so several ops can share one scope. False, with
 * *why, for a dtype or attribute the C backend does not handle.
 */
bool cg_elemwise_expr(struct rl_cgen *cg, uint32_t node, const char *const *in,
                      const char *tag, char *e, size_t len, const char **why);
/* Ops cg_elemwise_expr handles: the elementwise family except Dropout. */
bool cg_elemwise_has_expr(enum rl_op op);

/*
 * A fused group as the driver hands it to emit_fused.c (passes/fuse.c sets
 * node->group; the driver checks each group again and emits one kernel).
 * Elementwise group: one loop nest over the shape every node produces.
 * Epilogue group: the anchor (MatMul, Gemm or Conv) is written by its own
 * emitter with its output going straight to Y0, and the elementwise nodes
 * run inside its output loop through cg_epilogue().
 */
struct rl_cgen_group {
	int32_t id;           /* node->group */
	uint32_t *nodes;      /* topological order; the anchor first if any */
	int nnodes;
	uint32_t anchor;      /* RL_NONE for an elementwise group */
	uint32_t *in;         /* the kernel's X0..: the anchor's inputs in slot
	                         order (RL_NONE kept), then the other external
	                         tensors; scalar constants become literals */
	int nin;
	uint32_t *out;        /* the kernel's Y0..: values used outside the group
	                         or graph outputs; in an epilogue group Y0 has
	                         the anchor's dtype and receives its product */
	int nout;
};

/* Write the body of a fused group's kernel into cg->body. */
enum rl_status rl_emit_c_fused(struct rl_cgen *cg, const struct rl_cgen_group *grp);

/*
 * Epilogue hook for the MatMul/Gemm/Conv emitters: when cg->epi is set,
 * write code that applies the group's elementwise nodes in place to the run
 * of n outputs at `y` (a pointer expression to the anchor's storage type),
 * whose first element has flat index `base` (an expression) in the output.
 * The run must lie inside one aligned block of `span` elements (span divides
 * the output's element count: a row of a product, an output row of a
 * convolution). Does nothing when cg->epi is NULL, so unfused kernels are
 * unchanged.
 */
void cg_epilogue(struct rl_cgen *cg, const char *y, const char *base, int64_t n,
                 int64_t span);

/*
 * Family emitters: write the body of node's kernel into cg->body.
 * Return RL_OK, or RL_ERR_UNSUPPORTED via cg_error for a case not handled.
 * Each family file also defines rl_emit_c_<family>_supports(op).
 */
#define RL_FAMILY_EMITTERS(X) \
	X(elemwise) X(matmul) X(conv) X(pool) X(norm) X(reduce) X(shape) X(const)
#define X(fam) \
	enum rl_status rl_emit_c_##fam(struct rl_cgen *cg, uint32_t node); \
	bool rl_emit_c_##fam##_supports(enum rl_op op);
RL_FAMILY_EMITTERS(X)
#undef X

#endif /* RL_EMIT_C_H */
