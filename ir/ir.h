/*
 * ir.h - rlopt's intermediate representation.
 *
 * A model is one struct rl_graph. The graph owns an arena from which every
 * name, attribute, shape symbol and small array is allocated; the whole graph
 * is freed at once with rl_graph_free(). Values and nodes live in two growable
 * arrays and refer to each other by 32-bit index, never by pointer, so the
 * arrays can grow while passes hold indices (QBE's Ref, not ggml's pointers).
 *
 * Weight bytes are borrowed: a constant value's data points into the mmap'd
 * model file, an mmap'd external-data file, or memory the graph owns (folded
 * or quantized tensors, decoded typed-field initializers). The graph records
 * every mapping and owned block and releases them in rl_graph_free().
 *
 * Shapes are static where known. A dim is either a number (>= 0) or a named
 * symbol (`batch`, `seq`) until bound with rl_graph_bind_dim(); shape
 * inference propagates symbols through ops that pass a dim along unchanged.
 *
 * Errors a user can cause (bad model, unsupported op) are reported through
 * rl_graph_error(): one line, naming the file, the node and the reason, kept
 * in g->err and returned as RL_ERR_*. Our own bugs are RL_ASSERT (abort with
 * file and line). Library code never calls exit().
 */
#ifndef RL_IR_H
#define RL_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RL_VERSION "0.1.0"

/* ---- status and asserts ------------------------------------------------
 * The one error convention of the library (README "Errors in the library"):
 * a function that can fail on its input returns enum rl_status and leaves a
 * one-line message ("file: node: reason") where the caller finds it, in
 * g->err through rl_graph_error() when it has a graph, else in the caller's
 * (char *err, size_t errlen). It prints nothing and never exits; the command
 * line prints the message once and maps the status to an exit code. A helper
 * whose false is an answer (not an error) returns bool with the reason in
 * (char *why, size_t whylen), and its caller picks the status. Our own bugs
 * are RL_ASSERT. */

enum rl_status {
	RL_OK = 0,          /* success */
	RL_ERR_IO,          /* file missing, unreadable or unwritable */
	RL_ERR_PARSE,       /* not a valid protobuf / XML */
	RL_ERR_INVALID,     /* structurally wrong model (cycles, dangling names) */
	RL_ERR_UNSUPPORTED, /* valid ONNX that rlopt does not handle */
	RL_ERR_SHAPE,       /* shapes or dtypes that do not fit the operator */
	RL_ERR_NOMEM,       /* allocation failed */
};

#define RL_ASSERT(c)                                                          \
	do {                                                                  \
		if (!(c))                                                     \
			rl_assert_fail(#c, __FILE__, __LINE__);               \
	} while (0)
_Noreturn void rl_assert_fail(const char *expr, const char *file, int line);

/* ---- dtypes (numbers equal ONNX TensorProto.DataType) ------------------ */

enum rl_dtype {
	RL_DT_UNDEFINED = 0,  /* unknown or not yet inferred */
	RL_DT_FLOAT = 1,      /* float32 */
	RL_DT_UINT8 = 2,      /* uint8 */
	RL_DT_INT8 = 3,       /* int8 */
	RL_DT_UINT16 = 4,     /* uint16 */
	RL_DT_INT16 = 5,      /* int16 */
	RL_DT_INT32 = 6,      /* int32 */
	RL_DT_INT64 = 7,      /* int64 */
	RL_DT_STRING = 8,     /* string: loaded, never computed on */
	RL_DT_BOOL = 9,       /* bool, one byte */
	RL_DT_FLOAT16 = 10,   /* IEEE half */
	RL_DT_DOUBLE = 11,    /* float64 */
	RL_DT_UINT32 = 12,    /* uint32 */
	RL_DT_UINT64 = 13,    /* uint64 */
	RL_DT_COMPLEX64 = 14, /* unsupported for compute */
	RL_DT_COMPLEX128 = 15,/* unsupported for compute */
	RL_DT_BFLOAT16 = 16,  /* bfloat16 */
	/* low precision (ir/lowp.c): one element per byte in memory, packed
	 * (two or four per byte) only in ONNX files and tensor files */
	RL_DT_FLOAT8E4M3FN = 17,   /* float8 e4m3, NaN, no inf */
	RL_DT_FLOAT8E4M3FNUZ = 18, /* float8 e4m3, one NaN (0x80), no inf, no -0 */
	RL_DT_FLOAT8E5M2 = 19,     /* float8 e5m2, IEEE-like: inf and NaN */
	RL_DT_FLOAT8E5M2FNUZ = 20, /* float8 e5m2, one NaN (0x80), no inf, no -0 */
	RL_DT_UINT4 = 21,          /* 0..15 in a uint8_t */
	RL_DT_INT4 = 22,           /* -8..7, sign-extended into an int8_t */
	RL_DT_FLOAT4E2M1 = 23,     /* float4 e2m1 code in the low 4 bits of a byte */
	RL_DT_FLOAT8E8M0 = 24,     /* float8 e8m0: 2^(b-127), 0xff NaN (MX scales) */
	RL_DT_UINT2 = 25,          /* 0..3 in a uint8_t */
	RL_DT_INT2 = 26,           /* -2..1, sign-extended into an int8_t */
	RL_DT_COUNT_ = 27,    /* first number rlopt does not know */
};

size_t rl_dtype_size(enum rl_dtype t);     /* bytes per element; 0 if unknown */
const char *rl_dtype_name(enum rl_dtype t); /* "float32", "int64", ... */
bool rl_dtype_is_float(enum rl_dtype t);   /* float16/bfloat16/float/double */
bool rl_dtype_is_int(enum rl_dtype t);     /* signed or unsigned integers */
bool rl_dtype_is_signed(enum rl_dtype t);
/* A dtype rlopt can compute on (everything but string and complex). */
bool rl_dtype_is_numeric(enum rl_dtype t);
/* The low-precision dtypes (float8, float4, int4, int2 kinds; ir/lowp.c).
 * They are not numeric for the predicates above: only casts, BitCast and
 * data movement take them. */
bool rl_dtype_is_lowp(enum rl_dtype t);
/* Parse "float32"/"f32"/"int64"...; RL_DT_UNDEFINED if unknown. */
enum rl_dtype rl_dtype_parse(const char *s);

/* half and bfloat16 conversions, round-to-nearest-even */
float rl_half_to_float(uint16_t h);
uint16_t rl_float_to_half(float f);
float rl_bf16_to_float(uint16_t h);
uint16_t rl_float_to_bf16(float f);

/* ---- low-precision dtypes (ir/lowp.c) ----------------------------------- */
/* rlopt stores every low-precision element in one byte: the float8 and
 * float4 codes as they are, int4/int2 sign-extended (int8_t), uint4/uint2
 * zero-extended (uint8_t). ONNX packs the sub-byte types (two 4-bit or four
 * 2-bit elements a byte, first element in the low bits); the frontends
 * unpack on load and the writers pack, so only files see the packed form. */
enum rl_lowp_round {
	RL_LOWP_ROUND_UP = 0,      /* float8e8m0 round_mode "up" (the default) */
	RL_LOWP_ROUND_DOWN = 1,    /* "down" */
	RL_LOWP_ROUND_NEAREST = 2, /* "nearest" */
};
/* bits per element in ONNX files: 4, 2, or 8 * rl_dtype_size */
int rl_dtype_bits(enum rl_dtype t);
/* bytes numel elements take in an ONNX file (packed sub-byte types) */
size_t rl_dtype_packed_size(enum rl_dtype t, int64_t numel);
/* ONNX file bytes <-> one byte an element (no-ops copy for 8-bit types) */
void rl_lowp_unpack(enum rl_dtype t, const uint8_t *src, int64_t n, uint8_t *dst);
void rl_lowp_pack(enum rl_dtype t, const uint8_t *src, int64_t n, uint8_t *dst);
/* stored byte of low-precision dtype t to its value (NaN for NaN codes) */
double rl_lowp_to_double(enum rl_dtype t, uint8_t b);
/* float or double to the stored byte of t with ONNX Cast semantics: round
 * to nearest even (float8e8m0: round_mode), saturate (float8 kinds; float4
 * always saturates), integers truncate toward zero and wrap (the caller
 * must pass a value inside int64) */
uint8_t rl_lowp_from_double(enum rl_dtype t, double x, bool saturate, int round_mode);
/* int64 to the stored byte of t: integers wrap, floats round as above */
uint8_t rl_lowp_from_int(enum rl_dtype t, int64_t x, bool saturate);
/* Cast n elements between two dtypes of which at least one is low
 * precision, as the generated code does. False where the result is
 * undefined in ONNX (a NaN or out-of-range float to an integer) or a dtype
 * is not numeric; nothing is promised about dst then. */
bool rl_lowp_cast(const void *src, enum rl_dtype from, void *dst, enum rl_dtype to,
                  int64_t n, bool saturate, int round_mode);

/* ---- shapes ------------------------------------------------------------- */

#define RL_MAX_RANK 8
#define RL_DIM_SYMBOLIC (-1) /* dim whose size is a named symbol */

struct rl_dim {
	int64_t v;       /* size >= 0, or RL_DIM_SYMBOLIC */
	const char *sym; /* symbol name when v == RL_DIM_SYMBOLIC, else NULL */
};

struct rl_shape {
	int rank;                   /* -1: rank unknown */
	struct rl_dim d[RL_MAX_RANK];
};

bool rl_shape_is_static(const struct rl_shape *s);
/* element count of a static shape; -1 if not static or overflowing */
int64_t rl_shape_numel(const struct rl_shape *s);
bool rl_shape_equal(const struct rl_shape *a, const struct rl_shape *b);
/* "1x3x224x224", "batchx128", "scalar", "?"; returns buf */
char *rl_shape_str(const struct rl_shape *s, char *buf, size_t n);
void rl_shape_set(struct rl_shape *s, int rank, const int64_t *dims);

/* ---- operators (generated from ops.def) --------------------------------- */

/*
 * The operator families, in enum order: X(ENUM, file, name). Family `file`
 * owns ir/fam_<file>.c (rl_infer_<file>, rl_count_<file>) and the C
 * emitter backends/c/emit_<file>.c (rl_emit_c_<file>); `name` is what
 * reports print. The enum, the names and every per-family table (inference,
 * cost, C emitters) are generated from this list, so a new family is one
 * line here plus its files.
 */
#define RL_FAMILIES(X) \
	X(ELEMWISE, elemwise, "elementwise") /* pointwise, with broadcasting */ \
	X(MATMUL, matmul, "matmul")          /* MatMul, Gemm */ \
	X(CONV, conv, "conv")                /* Conv, ConvTranspose */ \
	X(POOL, pool, "pool")                /* windowed and global pooling */ \
	X(NORM, norm, "norm")                /* normalizations, softmax family */ \
	X(REDUCE, reduce, "reduce")          /* reductions along axes */ \
	X(SHAPE, shape, "shape")             /* data movement and shape computation */ \
	X(CONST, const, "const")             /* value generators */ \
	X(ATTN, attn, "attn")                /* attention and sequence-model ops */ \
	X(QUANT, quant, "quant")             /* quantize/dequantize, integer products */ \
	X(SEQ, seq, "seq")  /* recurrent and signal (RNN/GRU/LSTM, DFT, STFT, Det), \
	                       small ai.onnx.ml and training ops */ \
	X(DETECT, detect, "detect")          /* detection, unpooling, data-dependent selection */

enum rl_family {
#define X(E, file, name) RL_FAM_##E,
	RL_FAMILIES(X)
#undef X
	RL_FAM_COUNT_,
};

/*
 * The C emitter of an op (the `emit` column of ops.def): one per family,
 * plus INDEX (backends/c/emit_index.c, for the RL_OPF_INDEXF rows filed
 * under SHAPE), or NONE for an op rlopt reads and infers but the C backend
 * does not emit. rl_emit_c_supports() and the C emitter dispatch are this
 * column; an emitter that handles an op only for some dtypes or attributes
 * says so at emit time (a one-line "not supported" error naming the node).
 */
enum rl_emitter {
	RL_EMIT_NONE,
#define X(E, file, name) RL_EMIT_##E,
	RL_FAMILIES(X)
#undef X
	RL_EMIT_INDEX,
	RL_EMIT_COUNT_,
};

/* Whether an op is computed on constant inputs (the `fold` column). */
enum rl_fold {
	RL_FOLD_NO,   /* never: stays a kernel even with constant inputs */
	RL_FOLD_EVAL, /* ir/eval.c computes it during shape inference (small,
	                 exact outputs) and passes/fold.c at any size it allows */
	RL_FOLD_FOLD, /* passes/fold.c computes it (ir/scalar.c), inference not */
};

/* Dtype classes (the `tc` column of ops.def; checks in ir/infer.c). */
enum rl_tc {
	RL_TC_ANY,     /* any dtype rlopt knows, string included */
	RL_TC_NUM,     /* integers and floats, not bool */
	RL_TC_NUMBOOL, /* integers, floats and bool */
	RL_TC_FLOAT,   /* float16, bfloat16, float32, float64 */
	RL_TC_SIGNED,  /* floats and signed integers */
	RL_TC_INT,     /* signed and unsigned integers */
	RL_TC_UINT,    /* unsigned integers */
	RL_TC_BOOL,    /* bool */
	RL_TC_INDEX,   /* int32 or int64 (indices, axes, shapes) */
};

enum {
	RL_OPF_UNARY = 1 << 0,    /* one tensor in, same shape out */
	RL_OPF_BINARY = 1 << 1,   /* two tensors, multidirectional broadcast */
	RL_OPF_VARIADIC = 1 << 2, /* n tensors, multidirectional broadcast */
	RL_OPF_TERNARY = 1 << 3,  /* Where */
	RL_OPF_CMP = 1 << 4,      /* output is bool */
	RL_OPF_LOGIC = 1 << 5,    /* inputs and output are bool */
	RL_OPF_TRANS = 1 << 6,    /* transcendental: costs RL_FLOPS_TRANS */
	RL_OPF_WEIGHTED = 1 << 7, /* has a weight input (index 1) */
	RL_OPF_VIEW = 1 << 8,     /* output is input's bytes reinterpreted */
	RL_OPF_GATHER = 1 << 9,   /* data-dependent (gathered) reads */
	RL_OPF_INDEXF = 1 << 10,  /* filed under SHAPE, handled by fam_index.c and
	                             backends/c/emit_index.c (no family of its own yet) */
	RL_OPF_ML = 1 << 11,      /* domain ai.onnx.ml */
	RL_OPF_TRAIN = 1 << 12,   /* domain ai.onnx.preview.training */
};

enum rl_op {
#define RL_OP(name, fam, imin, imax, omin, omax, flags, emit, fold, tc) RL_OP_##name,
#include "ops.def"
#undef RL_OP
	RL_OP_COUNT_,
};

struct rl_op_info {
	const char *name;
	enum rl_family family;
	int in_min, in_max, out_min, out_max;
	unsigned flags;
	enum rl_emitter emit; /* C emitter, RL_EMIT_NONE: none */
	enum rl_fold fold;    /* computed on constants: by inference, folding, never */
	enum rl_tc tc;        /* class of input 0 (elementwise: of the inputs) */
};
extern const struct rl_op_info rl_op_table[RL_OP_COUNT_];
/* ONNX op_type (default domain) to op; returns RL_OP_COUNT_ if unknown. */
enum rl_op rl_op_lookup(const char *op_type);
/* The same for an op in `domain` ("" and "ai.onnx" are the default). */
enum rl_op rl_op_lookup_domain(const char *domain, const char *op_type);
const char *rl_family_name(enum rl_family f);
/* The ONNX domain of an op: "" (the default domain), "ai.onnx.ml",
 * "ai.onnx.preview.training" or, for FlexAttention, "ai.onnx.preview". */
const char *rl_op_domain(enum rl_op op);
/* Whether a node of domain `dom` ("" and "ai.onnx" are the default) may be
 * op: known, and in the op's own domain. */
bool rl_op_in_domain(enum rl_op op, const char *dom);

/* ---- attributes --------------------------------------------------------- */

enum rl_attr_kind {
	RL_ATTR_FLOAT,   /* f */
	RL_ATTR_INT,     /* i */
	RL_ATTR_STRING,  /* s (n bytes, NUL-terminated copy) */
	RL_ATTR_TENSOR,  /* t: value index of an arena-held constant (Constant) */
	RL_ATTR_FLOATS,  /* floats[n] */
	RL_ATTR_INTS,    /* ints[n] */
	RL_ATTR_STRINGS, /* strs[n] */
	RL_ATTR_GRAPH,   /* subgraph: recorded, not supported */
	RL_ATTR_OTHER,   /* sparse tensors, type protos: recorded, not supported */
};

struct rl_attr {
	const char *name;
	enum rl_attr_kind kind;
	int n;           /* element count for lists, byte count for strings */
	int64_t i;
	double f;
	const char *s;
	int64_t *ints;
	double *floats;
	const char **strs;
	uint32_t tensor; /* RL_ATTR_TENSOR: a value holding the tensor */
};

/* ---- values and nodes --------------------------------------------------- */

#define RL_NONE UINT32_MAX /* absent optional input / no producer */

enum {
	RL_VAL_INPUT = 1 << 0,  /* graph input */
	RL_VAL_OUTPUT = 1 << 1, /* graph output */
	RL_VAL_CONST = 1 << 2,  /* has data (initializer or folded) */
	RL_VAL_EXTERNAL = 1 << 3, /* data lives in an external file (mmap) */
};

struct rl_value {
	const char *name;
	enum rl_dtype dtype;
	struct rl_shape shape;
	uint32_t producer;  /* node index, RL_NONE for inputs and constants */
	uint32_t *uses;     /* consumer node indices, one entry per use */
	uint32_t nuses, cap_uses;
	const void *data;   /* RL_VAL_CONST: numel * dtype_size bytes */
	size_t nbytes;
	unsigned flags;
	/* 1 + the axis whose dim is only an upper bound: the extent along it
	 * depends on input values and is known when the generated code runs
	 * (NonZero, Compress, Unique, NonMaxSuppression: ir/fam_detect.c);
	 * 0 when every dim is exact */
	uint8_t extent_axis;
};

/* Annotations that passes attach to a node (cost model, fusion, ...). */
struct rl_cost {
	double flops;      /* arithmetic operations; a multiply-add counts 2 */
	double bytes;      /* bytes moved at main-memory level, unfused */
	double intensity;  /* flops / bytes */
	double time_s;     /* predicted time */
	int bound;         /* enum rl_bound (cost.h) */
	int level;         /* memory level the bytes were priced at (index into
	                      the profile's levels; see rl_cost_price) */
	bool at_init;      /* built once by NAME_init, not per run (cost.c
	                      built_at_init): every other field 0 */
};

/*
 * Schedule the tiling pass (passes/tile.c) chose for a node; all zero when it
 * did not run, and backends then use their own defaults. Products (MatMul,
 * Gemm, Conv as implicit GEMM) follow the BLIS analytical model: an mr x nr
 * register tile, a kc x nr micro-panel of B in L1, an mc x kc block of A in
 * L2, a kc x nc panel of B in the last level. Streaming kernels (elementwise
 * groups, reductions, Softmax, LayerNorm) use `strip`: elements per pass
 * chosen to stay in L1/L2. `par` is the outer extent split across threads.
 */
enum rl_tile_kind {
	RL_TILE_NONE = 0, /* no schedule: backend defaults */
	RL_TILE_GEMM,     /* blocked, packed product */
	RL_TILE_GEMV,     /* one row of A (batch 1): stream B with accumulators */
	RL_TILE_STRIP,    /* streaming kernel in strips of `strip` elements */
	RL_TILE_PLAIN,    /* too small to tile: the plain kernel */
};

struct rl_tile {
	uint8_t kind;       /* enum rl_tile_kind */
	int32_t mr, nr;     /* register tile (elements); nr a multiple of the vector width */
	int32_t kc, mc, nc; /* cache blocks (elements) */
	int32_t accum;      /* GEMV: independent accumulators to cover FMA latency */
	int64_t strip;      /* STRIP: elements per strip */
	int64_t par;        /* iterations of the outer loop split across threads */
	uint8_t conv;       /* Conv: enum rl_conv_form, the kernel form the tile pass chose */
	/* CPU: the most chunks the thread pool may cut the kernel into
	 * (rl_parallel_for's cap), decided once by rl_split_conv_chunks (ir/cost.h)
	 * for a Conv and followed by the C backend; 1 = the calling thread alone;
	 * 0 = not decided by the tile pass (the backend applies the same rule) */
	int32_t chunks;
};

/* The C backend's kernel form for a Conv (node->tile.conv). AUTO (the tile
 * pass did not run or did not choose) is band mode where it applies. */
enum rl_conv_form {
	RL_CONV_AUTO = 0,
	RL_CONV_BAND,     /* output pixels on the vector lanes (backends/c/emit_conv.c) */
	RL_CONV_CHANVEC,  /* output channels on the vector lanes, pixels in registers */
	RL_CONV_WINO,     /* 3x3/1: the Winograd form F(2x2, 3x3) (rl_conv_wino_rows) */
};

struct rl_node {
	enum rl_op op;
	const char *name;   /* ONNX node name, or a generated "<op>_<idx>" */
	const char *domain; /* "" for the default ONNX domain */
	int opset;          /* opset version of the node's domain */
	uint32_t *in;       /* value indices; RL_NONE for an omitted optional */
	uint32_t *out;
	int nin, nout;
	struct rl_attr *attrs;
	int nattrs;
	bool dead;          /* removed; skipped everywhere, dropped by compact */
	struct rl_cost cost;
	int32_t group;      /* fusion group id, -1 if none */
	struct rl_tile tile; /* passes/tile.c; zero when it did not run */
};

/* ---- the graph ---------------------------------------------------------- */

struct rl_arena; /* opaque, see graph.c */

/*
 * A graph input bound to a value at build time (`--value NAME=FILE.pb`, or
 * `rlopt run` binding a small integer input that fixes a shape): its uses
 * read a constant copy, so inference and folding specialize on it, while
 * the input stays in the generated API and the generated code checks, byte
 * for byte, that every run passes exactly this data (rl_graph_bind_value).
 */
struct rl_binding {
	uint32_t input;    /* position in g->inputs */
	const void *data;  /* nbytes: the input's numel * dtype size, row-major */
	size_t nbytes;
};

struct rl_graph {
	struct rl_arena *arena;
	struct rl_value *values;
	uint32_t nvalues, cap_values;
	struct rl_node *nodes;
	uint32_t nnodes, cap_nodes;
	uint32_t *inputs;  /* graph inputs (non-constant), in model order */
	uint32_t ninputs;
	uint32_t *outputs; /* graph outputs, in model order */
	uint32_t noutputs;
	struct rl_binding *bindings; /* inputs bound to a value (arena) */
	uint32_t nbindings;
	uint32_t *order;   /* topological order of live nodes (rl_graph_toposort) */
	uint32_t norder;

	/* model metadata, kept for the writer */
	int64_t ir_version;
	const char *graph_name;
	const char *producer_name;
	int nopsets;
	const char **opset_domains;
	int64_t *opset_versions;
	int opset;           /* default-domain opset version */

	const char *path;    /* model file, for messages */
	const char *dir;     /* the model's folder, for external data */

	char err[1024];      /* last user-facing error, one line */
	uint64_t version;    /* bumped by every mutation API call; lets the pass
	                        driver skip re-inference after a pass that only
	                        annotated */

	/* a frontend's lowering that needs bound shapes (the ONNX reader's
	 * control flow, frontends/onnx/onnx_subgraph.c): rl_graph_infer runs it
	 * once, first, and clears it */
	enum rl_status (*lower)(struct rl_graph *g, const void *arg);
	const void *lower_arg;
	/* the ONNX interface when it has sequence or optional inputs or outputs
	 * (frontends/onnx/onnx.h); NULL when every one is a tensor */
	struct rl_onnx_io *onnx_io;

	/* resources released by rl_graph_free */
	struct rl_mapping *maps;
	struct rl_cleanup *cleanups;
	void **owned;
	uint32_t nowned, cap_owned;
	void *name_index;    /* name -> value hash (graph.c) */
};

struct rl_graph *rl_graph_new(void);
void rl_graph_free(struct rl_graph *g);

/* arena allocation: zeroed, freed with the graph */
void *rl_arena_alloc(struct rl_graph *g, size_t n);
char *rl_arena_strdup(struct rl_graph *g, const char *s);
char *rl_arena_strndup(struct rl_graph *g, const char *s, size_t n);
/* heap block owned by the graph (large tensors); freed with the graph */
void *rl_graph_own(struct rl_graph *g, size_t n);
/* record an mmap to unmap at free */
void rl_graph_add_mapping(struct rl_graph *g, void *addr, size_t len);
/* call fn(arg) at free (e.g. the unpacked protobuf that constants borrow) */
void rl_graph_add_cleanup(struct rl_graph *g, void (*fn)(void *), void *arg);

/* Record a user-facing error. node may be NULL. Returns status. */
enum rl_status rl_graph_error(struct rl_graph *g, const struct rl_node *node,
                              enum rl_status st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* values */
uint32_t rl_graph_add_value(struct rl_graph *g, const char *name,
                            enum rl_dtype dt, const struct rl_shape *shape);
/* value by name; RL_NONE if none */
uint32_t rl_graph_find_value(const struct rl_graph *g, const char *name);
/* attach constant data (borrowed) */
void rl_value_set_data(struct rl_graph *g, uint32_t v, const void *data,
                       size_t nbytes);
static inline bool rl_value_is_const(const struct rl_graph *g, uint32_t v)
{
	return v != RL_NONE && (g->values[v].flags & RL_VAL_CONST);
}

/* nodes: creating a node wires producer and use lists */
uint32_t rl_graph_add_node(struct rl_graph *g, enum rl_op op, const char *name,
                           const uint32_t *in, int nin, const uint32_t *out,
                           int nout);
void rl_node_set_input(struct rl_graph *g, uint32_t node, int slot, uint32_t v);
/* every use of `from` (node inputs and graph outputs) now reads `to` */
void rl_graph_replace_uses(struct rl_graph *g, uint32_t from, uint32_t to);
/* mark a node dead and detach it from its inputs' use lists */
void rl_graph_remove_node(struct rl_graph *g, uint32_t node);
/* drop dead nodes and unreferenced non-io values; renumbers indices */
void rl_graph_compact(struct rl_graph *g);
/* recompute g->order; fails with RL_ERR_INVALID naming a node on a cycle */
enum rl_status rl_graph_toposort(struct rl_graph *g);
/* structural checks: bounds, use lists, single producer, acyclic, dtypes and
 * shapes present and consistent with producers */
enum rl_status rl_graph_verify(struct rl_graph *g);

/* attributes */
const struct rl_attr *rl_node_attr(const struct rl_node *n, const char *name);
int64_t rl_node_attr_int(const struct rl_node *n, const char *name, int64_t def);
double rl_node_attr_float(const struct rl_node *n, const char *name, double def);
const char *rl_node_attr_str(const struct rl_node *n, const char *name,
                             const char *def);
/* ints attribute; returns count or -1 if absent */
int rl_node_attr_ints(const struct rl_node *n, const char *name,
                      const int64_t **out);
struct rl_attr *rl_node_add_attr(struct rl_graph *g, uint32_t node,
                                 const char *name, enum rl_attr_kind kind);

/* Input slot i of node n, or RL_NONE when absent/omitted. */
static inline uint32_t rl_node_in(const struct rl_node *n, int i)
{
	return i < n->nin ? n->in[i] : RL_NONE;
}

/* ---- constant data helpers ---------------------------------------------- */

/* Read element i of a constant as int64 / double (any numeric dtype). */
int64_t rl_value_get_int(const struct rl_graph *g, uint32_t v, int64_t i);
double rl_value_get_float(const struct rl_graph *g, uint32_t v, int64_t i);
/* Read a constant 1-D integer tensor (shape/axes inputs) into out[max];
 * returns count, or -1 if not constant / too long / not integer. */
int rl_value_get_ints(const struct rl_graph *g, uint32_t v, int64_t *out,
                      int max);

/* ---- shape inference (ir/infer.c and ir/fam_*.c) ------------------------ */

/* Bind every dim whose symbol is `sym` (or, with sym NULL, every symbolic dim
 * at axis 0 of a graph input, the batch) to `size`. Returns dims bound. */
int rl_graph_bind_dim(struct rl_graph *g, const char *sym, int64_t size);
/* Whether a dim symbol reads like a batch ("batch", "N", "batch_size", ...):
 * --batch binds these and any symbol on axis 0 of an input. */
bool rl_sym_looks_batch(const char *sym);
/* How to bind the first unbound dim of s, for a message: names the symbol
 * and axis, and offers --batch only when --batch would bind that symbol
 * (a bound batch with a free width gets --dim W=N). Returns buf. */
char *rl_unbound_hint(const struct rl_graph *g, const struct rl_shape *s, char *buf, size_t n);
/* Bind a graph input's full shape. */
enum rl_status rl_graph_bind_input(struct rl_graph *g, const char *name,
                                   const struct rl_shape *s);
/* Bind graph input `name` to a value (struct rl_binding): dtype and shape
 * must be the input's (its symbolic dims are bound from `s`); `data` holds
 * numel * dtype size bytes and is copied. Every use of the input reads a new
 * constant of the same name instead; the input stays in g->inputs. */
enum rl_status rl_graph_bind_value(struct rl_graph *g, const char *name, enum rl_dtype dt,
                                   const struct rl_shape *s, const void *data,
                                   size_t nbytes);
/* Infer dtypes and shapes of every node output in topological order. Small
 * integer shape computations (Shape, Gather, Concat, ... on constants) are
 * evaluated so that Reshape/Expand/Slice targets become static. */
enum rl_status rl_graph_infer(struct rl_graph *g);

/* ---- added by the shape-inference owner (ir/eval.c) -------------------- */
/* Evaluate `node` at compile time when every present input is constant (for
 * Shape and Size: when the input shape is static), the op is a small shape
 * computation or elementwise op (Shape, Size, Gather, Concat, Slice, Squeeze,
 * Unsqueeze, Reshape, Flatten, Cast, CastLike, Identity, Add, Sub, Mul, Div,
 * Mod, Neg, Abs, Sqrt, Floor, Ceil, Equal, Less, Greater, Not, And, Or,
 * Where, Min, Max, Range, ConstantOfShape, Expand, Transpose, Tile,
 * ReduceSum/Prod/Max/Min, QuantizeLinear, DequantizeLinear, Constant), the
 * output has at most 65536 elements
 * and no input more than 1M (a Constant borrows its tensor at any size).
 * The outputs must already be inferred. Outside rl_graph_infer it may be
 * called on any inferred node (the fold pass does). On
 * success the output gets graph-owned (or the input's borrowed) data and
 * RL_VAL_CONST, and keeps its producer. Returns true if it evaluated. */
bool rl_eval_node(struct rl_graph *g, uint32_t node);
/* Check, infer and (when constant) evaluate one node whose inputs are
 * inferred, outside rl_graph_infer (control-flow lowering, ir/infer.c). */
enum rl_status rl_infer_node(struct rl_graph *g, uint32_t node);
/* ---- end of additions --------------------------------------------------- */

/* Einsum equations (ir/fam_index.c): every axis of every operand and of the
 * output gets a label: its letter, or '0' + k for the k-th axis an ellipsis
 * covers (right-aligned across operands). An implicit output (no "->") is
 * the ellipsis axes, then the letters used once, in alphabetical order. */
#define RL_EINSUM_MAX_IN 8
struct rl_einsum {
	int nin;
	int rank[RL_EINSUM_MAX_IN];
	char lab[RL_EINSUM_MAX_IN][RL_MAX_RANK];
	int orank;
	char olab[RL_MAX_RANK];
};
/* Parse `eq` for operands of the given ranks; false with a reason in why. */
bool rl_einsum_parse(const char *eq, int nin, const int *ranks, struct rl_einsum *e,
                     char *why, size_t whylen);

/* Multidirectional (numpy) broadcast of a and b into out. */
bool rl_shape_broadcast(const struct rl_shape *a, const struct rl_shape *b,
                        struct rl_shape *out);

/* ---- IR dump ------------------------------------------------------------ */
void rl_graph_dump(const struct rl_graph *g, FILE *f);

#endif /* RL_IR_H */
