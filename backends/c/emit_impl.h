/*
 * emit_impl.h - the C backend's internals: the interface between the driver
 * (emit.c: buffers, weights, the run function, the file layout) and the
 * per-family kernel emitters (emit_<family>.c), which only write the body of
 * one kernel function per node; and the run plan other backends reuse. The
 * public API is emit.h.
 *
 * A kernel is `static void k<N>_<node name>(const T0 *restrict X0, ...,
 * U0 *restrict Y0, ...)`: inputs are X0.., outputs Y0.. (absent optional
 * inputs are passed as NULL and named too), all shapes are compile-time
 * constants, and the emitter writes loops with literal bounds. Half and
 * bfloat16 tensors are stored as uint16_t and computed in float through the
 * rl_h2f/rl_f2h/rl_b2f/rl_f2b helpers the driver emits when needed.
 */
#ifndef RL_EMIT_C_IMPL_H
#define RL_EMIT_C_IMPL_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "emit.h"
#include "buf.h" /* struct rl_buf, rl_buf_printf */

/* ---- emitter interface -------------------------------------------------- */

struct rl_cgen_group; /* below */

struct rl_cgen {
	struct rl_graph *g;
	struct rl_buf body;     /* kernel body being written */
	int indent;             /* current indent level for cg_line */
	unsigned need_half : 1; /* emit half helpers */
	unsigned need_bf16 : 1; /* emit bfloat16 helpers */
	unsigned need_erf : 1;
	unsigned need_tanh : 1; /* emit rl_tanhf (the elementwise table's tanh) */
	unsigned need_lowp;     /* low-precision helpers used (emit_lowp.c bits) */
	unsigned gemm_rows[2];  /* GEMM edge heights the products leave (bit h: M % mr == h),
	                           [0] AVX2 (mr 6), [1] AVX-512 (mr 12): cg_gemm_finish */
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
	 * [0, par_n) across the pool in chunks of at least par_grain iterations
	 * (par_grain < 0: into at most -par_grain chunks, the Conv split rule's
	 * count, rl_split_conv_chunks).
	 * Every output element must be computed inside one iteration (never split
	 * a reduction), so results do not depend on the thread count. */
	int64_t par_n, par_grain;
	/* Statements run once per call before the body, on the calling thread
	 * (with par_n: in the entry, before the split), e.g. preparing the
	 * activations every task then reads (emit_qgemm.c). */
	struct rl_buf pre;
	/* The body uses the vector runtime (rl_vf, RL_VW, rl_vsel, RL_INLINE:
	 * emit_rt.c) inside `#ifdef RL_VEC ... #else <scalar> #endif`: the driver
	 * emits the runtime and compiles the kernel per ISA (RL_TARGETS). */
	unsigned simd : 1;
	unsigned vnarrow : 1;  /* cg_vmath_need writes the rl_wf copies too */
	unsigned uses_pool : 1; /* the kernel calls rl_parallel_for itself (not through par_n) */

	/* ---- whole file; emitters append, the driver places them ---- */
	struct rl_buf statics;  /* file-scope declarations and helper functions,
	                           placed after the constants, before the kernels */
	struct rl_buf init;     /* statements run once in NAME_init after the
	                           weights are loaded (e.g. packing constant
	                           weights); `return -1;` on failure */
	struct rl_buf fini;     /* statements run in NAME_free (free what init made) */
	unsigned any_simd : 1;  /* set by the driver: some kernel set simd */
	unsigned any_par : 1;   /* set by the driver: some kernel set par_n */

	/* ---- static mode (rl_cgen_opts.static_mode) ---- */
	unsigned static_mode : 1; /* emitters must not use the malloc'd runtimes
	                             (packed GEMM, conv band scratch), and declare
	                             sized local arrays with cg_scratch_array */
	unsigned device : 1;      /* the CUDA backend runs this C kernel on the GPU
	                             (emit_cuda_kernels.c cu_k_fallback): no CPU
	                             runtime, and cg_value_stored_const does not apply */
	const char *ws_name;      /* the workspace pointer's C name, "NAME_ws" */
	int64_t scratch_base;     /* kernel scratch: workspace bytes from here on */
	int64_t scratch_cur;      /* bytes handed out in the current kernel */
	int64_t scratch_max;      /* the most any kernel used */
};

/*
 * Declare a local array `ctype name[n]` (inner > 0: `ctype name[n][inner]`)
 * for scratch the kernel needs while it runs. Normal mode: on the stack, as
 * before. Static mode, when the array is over RL_STATIC_STACK_MAX bytes: a
 * pointer of the same indexing into the workspace past the tensors (the
 * scratch region; kernels run one at a time, so they share it); the array is
 * uninitialized in both modes. The driver resets the region per kernel.
 */
void cg_scratch_array(struct rl_cgen *cg, const char *ctype, const char *name, int64_t n,
                      int64_t inner);

/* Pointer expression (as the run function sees it) for value v: a constant's
 * array or side-file offset, a workspace slot, an input or output. Valid in
 * the `init` statements too for constants. */
void cg_value_ptr(struct rl_cgen *cg, uint32_t v, char *b, size_t n);
/* Whether v's bytes are constants when NAME_init's statements run: embedded,
 * in the side file, or computed by NAME_init itself before them (a large
 * ConstantOfShape and what reads only constants: emit.c, runs_at_init).
 * False for a value the run computes, which in static mode (no NAME_init)
 * includes those. Packing at init needs this. */
bool cg_value_stored_const(struct rl_cgen *cg, uint32_t v);

/* The runtime text a generated file carries (emit_rt.c): the vector types
 * and RL_TARGETS, and the thread pool with rl_parallel_for. */
void rl_emit_rt_vec(struct rl_buf *b);
void rl_emit_rt_pool(struct rl_buf *b);

/* Rewrite a finished kernel body without filler (emit_tidy.c): drops
 * multiplications by 1 and additions of 0, substitutes indices bound to 0,
 * turns loops of extent 1 into blocks; every value stays the same. */
void cg_tidy(struct rl_buf *b);
/* Pad's run-time pads (X1) and axes (X3) into pb[]/pt[] (emit_shape.c) */
void cg_pad_bounds(struct rl_cgen *cg, int r, int64_t nax, bool has_axes);
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
/* cg_load, then in C type ct: "(ct)" only where the compute type differs */
const char *cg_load_as(struct rl_cgen *cg, enum rl_dtype t, const char *e, const char *ct);
/* Expression converting compute-type expression `e` to storage of dtype t. */
const char *cg_store(struct rl_cgen *cg, enum rl_dtype t, const char *e);
/* cg_store for the right-hand side of `ELEM = %s;` (an assignment to an
 * element of dtype t, never an operand): float and double take `e` as it is,
 * since the assignment converts exactly as the cast would (`y[i] = a * b;`,
 * not `y[i] = (float)(a * b);`), an integer literal as a float literal
 * (`0.0f`, not `0`); other dtypes as cg_store. */
const char *cg_assign(struct rl_cgen *cg, enum rl_dtype t, const char *e);
/* Zero as a literal of C type ctype: "0.0f" for float, "0.0" for double,
 * else "0" (an accumulator's or a padding's initial value, literal as such). */
static inline const char *cg_zero(const char *ctype)
{
	return strcmp(ctype, "float") == 0 ? "0.0f" : strcmp(ctype, "double") == 0 ? "0.0" : "0";
}
/* Literal of value x in compute type of t ("1.5f", "3", "(int64_t)-2"). */
const char *cg_lit(enum rl_dtype t, double x);
/* " + k * RL_VH" (k half vectors past a pointer), "" for 0, " + RL_VH" for 1:
 * offsets in unrolled half-vector code, written without filler */
const char *cg_vh_off(int k);

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
/* Open `for (size_t VAR = ...)` over `rows` rows of `row_elems` elements
 * each (indent + 1; close with cg_loops_close(cg, 1)); the rows are split
 * across threads (cg->par_n, chunks of at least min_par elements) when there
 * are at least two rows and 2 * min_par elements in all. */
void cg_rows_open(struct rl_cgen *cg, const char *var, int64_t rows, int64_t row_elems,
                  int64_t min_par);
void cg_loops_close(struct rl_cgen *cg, int depth);
/* Strides (in elements) of a static row-major shape; returns numel. */
int64_t cg_strides(const struct rl_shape *s, int64_t *strides);

/* Report a user-facing error for the node (unsupported attribute, ...). */
enum rl_status cg_error(struct rl_cgen *cg, uint32_t node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Shorthands for the node's values. */
/* "base + row * stride + mid + col" into buf (n bytes), without the terms
 * that are zero (row 0, col 0, mid NULL) and with "stride" for row 1: the
 * addresses of the runtime's unrolled micro-kernels (emit_gemm.c,
 * emit_conv.c), which print one per register. */
static inline const char *cg_addr(char *buf, size_t n, const char *base, int row,
                                  const char *stride, const char *mid, int col)
{
	int k = snprintf(buf, n, "%s", base);
	if (row == 1 && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, " + %s", stride);
	else if (row && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, " + %d * %s", row, stride);
	if (mid && k >= 0 && (size_t)k < n)
		k += snprintf(buf + k, n - (size_t)k, " + %s", mid);
	if (col && k >= 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, " + %d", col);
	return buf;
}

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

/* The flat form's fill (emit_pool.c): the input rows a band of output rows
 * reads, padded with `pad`, into S0 x S1 phase planes of NRq rows x Pq
 * columns in `xp`; emitted inside a loop defining `ob` (the band's first
 * output row) and `xc` (the input plane of H x W). */
struct cg_flat {
	int64_t H, W, S0, S1, PT, PL, NRq, Pq;
	const char *pad;
};
void cg_flat_fill(struct rl_cgen *cg, const char *T, const struct cg_flat *f);
/* Where tap (kh, kw), at dilations d0, d1, reads from output j's index in xp. */
int64_t cg_flat_off(const struct cg_flat *f, int64_t d0, int64_t d1, int64_t kh, int64_t kw);
/* Declare xp (the planes and what the farthest tap of the last 16 outputs
 * reads past them, zeroed) and sb (NJr sums) for KH x KW taps. */
void cg_flat_scratch(struct rl_cgen *cg, const char *T, const struct cg_flat *f, int64_t d0,
                     int64_t d1, int64_t KH, int64_t KW, int64_t NJr);
/* The floats of one buffer of a pipelined flat form: the planes, and what
 * the last chunk of 16 outputs reads past them with the farthest tap, in
 * whole lines. */
int64_t cg_flat_buf(const struct cg_flat *f, int64_t d0, int64_t d1, int64_t KH, int64_t KW,
                    int64_t NJr);
/* Interior column pairs of a row of W at stride 2 with PL padded columns
 * before it: the fill splits them 16 at a time where there are 16 or more. */
int64_t cg_flat_pairs(int64_t W, int64_t PL);
/* The flat form pipelined across a range's whole planes (plane f at X0 + f
 * H W): declares the two buffers xpb (XN floats each) and sbb (NJr), opens
 * the loop over it, fills plane it + 1 and opens plane it's sums block with
 * xp and sb; cg_flat_pipe_out closes it and opens plane it - 1's copy-out
 * block with yc (planes of OHW) and sb; the caller closes that block and
 * the loop (two braces). */
void cg_flat_pipe_open(struct rl_cgen *cg, const char *T, const struct cg_flat *f, int64_t XN,
                       int64_t NJr);
void cg_flat_pipe_out(struct rl_cgen *cg, const char *T, int64_t NJr, int64_t OHW);
/* Copy every other column of the sums (sb, OH rows of Pq) out to rows of OW
 * in `yc`: the stride-2 outputs of columns summed at stride 1. */
void cg_flat_copy_cols2(struct rl_cgen *cg, const struct cg_flat *f, int64_t OH, int64_t OW);
/* Copy the band's sums (sb, rows of Pq) out to rows of OW in `yc`: rows ob
 * + r for r < OB, the last band cut at OH. */
void cg_flat_copy_out(struct rl_cgen *cg, const struct cg_flat *f, int64_t OB, int64_t OH,
                      int64_t OW);

/* ---- GEMM runtime (emit_gemm.c) -------------------------------------------
 *
 * Packed, register-blocked fp32 products for any emitter (MatMul/Gemm in
 * emit_matmul.c; Conv as a 1x1 or implicit GEMM). The runtime text (packing,
 * per-ISA micro-kernels picked once in NAME_init, scratch slots, batch-1
 * GEMV) is placed once in cg->statics by the first request; kernels call it.
 *
 * The product is Y[M,N] (+)= alpha * A'[M,K] B'[K,N], with
 *   A'(i,k) = a[i*a_rs + k*a_ks]      (any strides; packed per block at run time)
 *   B'(k,j) = b[k*b_rs + j*b_cs]      (constant: packed once at init; else per block)
 *   Y(i,j)  = y[i*ldy + j]            (row-major runs of columns).
 * It is cut into tasks: nib row blocks (mc rows, a multiple of 12) by njb
 * column blocks (nc columns, a multiple of 32); task t covers column block
 * t / nib and row block t % nib, and computes its Y block over all of K, so
 * a result never depends on how tasks are spread over threads.
 *
 * How to use it from an emitter, for kernel cg->kname:
 *   1. cg_gemm_plan(&node->tile, M, N, K, &pl): cache blocks from the tile
 *      pass (kind GEMM: mc, kc, nc; mr and nr follow the CPU found at run
 *      time) or defaults for a 32 KiB L1 / 1 MiB L2; nib, njb; pl.why says
 *      where they came from (put it in a comment).
 *   2. cg_gemm_init(cg, &pl, b_at_run_time): NAME_init selects the
 *      micro-kernel and reserves per-thread scratch; NAME_free releases it.
 *      Call it before step 3: the packed layout follows the CPU's nr.
 *   3. For a constant B: cg_gemm_pack_b(cg, value, K, N, b_rs, b_cs, &pl,
 *      name, n) declares `static float *<kname>_bp` and packs B' into it in
 *      NAME_init (over the side file's copy when nothing else reads the
 *      constant and no padding is needed, i.e. N % 32 == 0 and b_cs == 1;
 *      else into its own buffer, freed by NAME_free); pass the name as
 *      call.bp. A is always packed at run time (per kc block of each task,
 *      M*K per column block: small next to M*N*K), so a convolution whose
 *      weights are the left operand (NCHW: Y[co,hw] = W[co,ci] X[ci,hw])
 *      passes the weights as A and the activations as a run-time B
 *      (b_rs = HW, b_cs = 1).
 *   4. Set cg->par_n to (outer iterations) * pl.nib * pl.njb, par_grain 1,
 *      loop t over [lo, hi) and for each task call cg_gemm_emit_task(cg,
 *      &call, &pl, "t % tasks_per_product"), with the call's pointer
 *      expressions for that outer iteration.
 *   The epilogue: cg_gemm_emit_task calls cg_epilogue() on every row of a
 *   finished block (nb = nc columns, or the last block's width), with base
 *   call.ybase + row * ldy + column, span call.span: bias, activation and
 *   residual run while the block is in L2. call.init (optional) gives the
 *   initial value of Y(i,j) (e.g. beta * C) written before the block is
 *   accumulated.
 *
 * Batch-1 (M == 1) with a constant B goes through the GEMV entry points of
 * the runtime instead (see emit_matmul.c): rl_sgemv_rows(a, b, K, alpha, y,
 * j0, j1) for B stored N x K, rl_sgemv_panels(a, bp, K, alpha, y, j0, j1)
 * for B stored K x N and packed at init by cg_gemv_pack_b() into panels of
 * RL_GEMV_W (128) columns (j0 a multiple of 128). Their NAME_init statements
 * must run rl_gemm_init() first (as cg_gemm_init writes it). Each writes
 * alpha * a B for columns [j0, j1); the kernel adds beta * C and runs the
 * epilogue on the run afterwards.
 */
#define RL_GEMM_MR_LCM 12      /* every register tile's mr divides it */
#define RL_GEMM_NR_LCM 32      /* every register tile's nr divides it */
#define RL_GEMM_KC_DEFAULT 256 /* see cg_gemm_plan */
#define RL_GEMV_PANEL 128      /* RL_GEMV_W in the runtime */

struct cg_gemm_plan {
	int64_t mc, kc, nc; /* cache blocks (elements) */
	int64_t nib, njb;   /* row blocks, column blocks: nib * njb tasks */
	const char *why;    /* where the blocks came from, for the comment */
};

struct cg_gemm_call {
	int64_t M, N, K;
	const char *a;           /* expression: const float * to A' */
	int64_t a_rs, a_ks;
	double alpha;            /* folded into A while it is packed */
	const char *b;           /* expression: const float * to B' at run time, or NULL */
	int64_t b_rs, b_cs;
	const char *bp;          /* cg_gemm_pack_b's name, or NULL */
	const char *y;           /* expression: float * to Y(0,0) */
	int64_t ldy;
	const char *ybase;       /* flat index of Y(0,0) in the kernel's output, for cg_epilogue */
	int64_t span;            /* cg_epilogue span (a row of the output: usually N) */
	/* optional: write the initial value of Y(ri, cj) (C expressions of the row
	 * and column) into e; NULL: the product starts from zero */
	void (*init)(struct rl_cgen *cg, void *ctx, const char *ri, const char *cj, char *e,
	             size_t n);
	void *ctx;
};

/* Append the runtime to cg->statics unless already there. */
void cg_gemm_runtime(struct rl_cgen *cg);
/* After every kernel: the exact-height edge micro-kernels the file's
 * products need and rl_gemm_rows_init, into cg->statics (nothing when the
 * file has no GEMM runtime). */
void cg_gemm_finish(struct rl_cgen *cg);
void cg_gemm_plan(const struct rl_tile *tile, int64_t M, int64_t N, int64_t K,
                  struct cg_gemm_plan *pl);
void cg_gemm_init(struct rl_cgen *cg, const struct cg_gemm_plan *pl, bool b_runtime);
void cg_gemm_pack_b(struct rl_cgen *cg, uint32_t v, int64_t K, int64_t N, int64_t b_rs,
                    int64_t b_cs, const struct cg_gemm_plan *pl, char *name, size_t namelen);
/* Constant B stored K x N, packed for rl_sgemv_panels (always K * N floats). */
void cg_gemv_pack_b(struct rl_cgen *cg, uint32_t v, int64_t K, int64_t N, char *name,
                    size_t namelen);
/* Body statements for task `task` (an expression in [0, pl->nib * pl->njb)). */
void cg_gemm_emit_task(struct rl_cgen *cg, const struct cg_gemm_call *c,
                       const struct cg_gemm_plan *pl, const char *task);

/*
 * Family emitters: write the body of node's kernel into cg->body.
 * Return RL_OK, or RL_ERR_UNSUPPORTED via cg_error for a case not handled.
 * One per family (RL_FAMILIES, ir/ir.h); which ops each emits is the emit
 * column of ir/ops.def (emit.c dispatches on it), not a switch here.
 */
#define X(E, file, name) enum rl_status rl_emit_c_##file(struct rl_cgen *cg, uint32_t node);
RL_FAMILIES(X)
#undef X
/* QuantMatMul over int8/int4 weights (emit_qgemm.c; emit_matmul.c dispatches) */
enum rl_status rl_emit_c_qgemm(struct rl_cgen *cg, uint32_t node);

/* ---- vector math (emit_math.c) ------------------------------------------ */

/* Functions of the vector math library (rl_vexp, ...), as need bits. */
enum rl_vmath {
	RL_VM_BASE = 1 << 0,    /* rl_vload_n, rl_vstore_n, rl_vabs, rl_vclamp */
	RL_VM_EXPCORE = 1 << 1, /* rl_vexp_core: shared by exp and expm1 */
	RL_VM_EXP = 1 << 2,
	RL_VM_EXPM1 = 1 << 3,
	RL_VM_LOG = 1 << 4,
	RL_VM_LOG1P = 1 << 5,
	RL_VM_TANH = 1 << 6,
	RL_VM_SIGMOID = 1 << 7,
	RL_VM_SQRT = 1 << 8,
	RL_VM_ERF = 1 << 9,     /* rl_verf: rl_erff's rational form on vectors */
	RL_VM_EXPZ = 1 << 10,   /* rl_vexpz: exp for softmax rows, no denormal results */
};
/* Add the functions in fns (and what they use) that cg->statics lacks, in
 * dependency order, under `#ifdef RL_VEC`. The kernel using them sets simd. */
void cg_vmath_need(struct rl_cgen *cg, unsigned fns);
/* A softmax row's vector passes (emit_norm.c; Softmax/LogSoftmax and the
 * attention rows of emit_attn.c). cg_exp_sum_pass: for i over [0, nv) in
 * steps of RL_VW, e = rl_vexpz(src[i] - m), stored to dst (unless NULL),
 * its two halves summed into rl_vh s0 and s1 (m, s0, s1 declared by the
 * caller). cg_row_pass: dst[i] = expr over [0, nv) (a multiple of RL_VW),
 * expr an rl_vf expression in i (e.g. "*(const rl_vfu *)(y + i) * r").
 * Below AVX-512 (RL_VNARROW) both run on 8-float rl_wf, same bits. */
void cg_exp_sum_pass(struct rl_cgen *cg, const char *src, const char *dst, const char *nv);
void cg_row_pass(struct rl_cgen *cg, const char *dst, const char *expr, const char *nv);
/* Block-scope vector types of a kernel of element type T (es bytes): vec,
 * vecu (the same at any address) and VL, its lanes (emit.c). */
void cg_vec_types(struct rl_cgen *cg, const char *T, int es);
/* in with every rl_v* identifier renamed rl_w* (RL_VW RL_WW; rl_vh* and
 * rl_vsqrt_v4 kept), its comments kept or dropped: the 8-float copy of
 * vector code (emit_math.c, RL_VNARROW), appended to out */
void cg_vnarrow_text(struct rl_buf *out, const char *in, bool comments);
/* A vector loop `for (size_t var = 0; var < n; var += RL_VW) { body }`
 * (body: lines of rl_vf code, n a multiple of RL_VW), and before it, under
 * RL_VNARROW, the same body renamed to 8-float rl_wf (cg_vnarrow_text),
 * taken unless the CPU has AVX-512: in the narrower clones an rl_vf is two
 * or four registers and its unaligned stores go through the stack. Lane
 * for lane the same operations, so the same bits, as long as no value
 * crosses lanes (sums across iterations need their own form:
 * cg_exp_sum_pass). The math functions the body calls must be requested
 * (cg_vmath_need) after cg->vnarrow is set, which this does first. */
void cg_vloop(struct rl_cgen *cg, const char *var, const char *n, const char *body);
/* Between these two, cg->body collects rl_vf code one indent deeper than
 * the current one (begin returns the body so far, end puts it back); end
 * then writes that code there and before it, under RL_VNARROW, its rl_wf
 * rename (the `if (!rl_cpu_v4())` branch; the rl_vf code becomes the else
 * block, there with rl_vsqrt_v4 for rl_vsqrt when sqrt_v4), or drops it
 * when !keep (an emission that failed). The form of cg_vloop, the fused
 * elementwise kernels and the fused epilogues (emit_fused.c). */
struct rl_buf cg_vwide_begin(struct rl_cgen *cg);
void cg_vwide_end(struct rl_cgen *cg, struct rl_buf outer, bool sqrt_v4, bool keep);
/* The same text into b, every function in fns (for tests). */
void rl_vmath_text(struct rl_buf *b, unsigned fns);

/*
 * The vector counterpart of cg_elemwise_expr for float32 nodes: in[k] names
 * an rl_vf local holding input k for RL_VW lanes (NULL when absent); writes
 * into e an rl_vf expression (statements first with cg_line, temporaries
 * ending in `tag`) that equals the scalar expression lane by lane within the
 * vector library's documented error. False (with *why) for an op without a
 * vector form: the caller then runs the scalar expression per lane.
 */
bool cg_elemwise_vexpr(struct rl_cgen *cg, uint32_t node, const char *const *in,
                       const char *tag, char *e, size_t len, const char **why);

/* Kernel body for a single float32 elementwise node through the fused
 * group's vector loop (emit_fused.c). False when the node's shapes or
 * dtypes do not fit it; then nothing was written. */
bool cg_elemwise_vec_single(struct rl_cgen *cg, uint32_t node, enum rl_status *st);

/* ---- the run plan, for other backends (the CUDA emitter) ----------------
 * What rl_emit_c decides before it writes a kernel: which nodes run, the
 * fused groups that passed the driver's checks, the order kernels run in,
 * views, and where every value lives (workspace offsets from the lifetime
 * plan). rl_emit_plan fails, naming node and op, when supports() refuses an
 * op that must run ("the BACKEND backend does not implement OP yet"). */
enum rl_plan_storage {
	RL_PLAN_NONE,      /* not needed at run time */
	RL_PLAN_INPUT,     /* graph input io */
	RL_PLAN_OUTPUT,    /* graph output io, written in place */
	RL_PLAN_CONST,     /* constant: the value's data */
	RL_PLAN_WORKSPACE, /* at off in the workspace */
	RL_PLAN_ALIAS,     /* a view of value alias's storage */
};
struct rl_plan_val {
	enum rl_plan_storage st;
	int io;
	int64_t off;
	uint32_t alias;
};
struct rl_plan_unit {
	bool view;     /* no kernel: the output aliases the input */
	uint32_t node; /* the node; for a group its first node in g->order */
	int32_t grp;   /* index in grps, -1 for a single node */
	uint32_t k;    /* kernel number: g->order position of node */
};
struct rl_plan {
	struct rl_plan_val *vals;   /* per value */
	struct rl_plan_unit *units; /* in run order */
	uint32_t nunits;
	struct rl_cgen_group *grps;
	uint32_t ngrps;
	int64_t ws_size;            /* workspace bytes */
};
/* The scalar helpers a kernel may call, as the C file defines them:
 * [0] rl_h2f/rl_f2h (need_half), [1] rl_b2f/rl_f2b (need_bf16),
 * [2] rl_tanhf (need_tanh), [3] rl_erff (need_erf). */
extern const char *const rl_cg_helper_text[4];
enum rl_status rl_emit_plan(struct rl_graph *g, bool (*supports)(enum rl_op),
                            const char *backend, struct rl_plan *p);
void rl_emit_plan_free(struct rl_plan *p);

#endif /* RL_EMIT_C_IMPL_H */
