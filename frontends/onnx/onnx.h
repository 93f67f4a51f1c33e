/*
 * onnx.h - ONNX ModelProto <-> IR, and TensorProto files.
 *
 * The reader turns a model file into a struct rl_graph: nodes, initializers
 * (every encoding), external data (mmap'd, never copied, confined to the
 * model's folder), Constant nodes, value_info and symbolic dims. It checks
 * structure (unknown operators, dangling names, duplicate producers, input
 * counts) but not shapes: call rl_graph_infer() for that. If, Loop, Scan,
 * sequence and optional nodes become plain nodes in the first
 * rl_graph_infer(), after the caller bound the input dims (onnx_subgraph.c);
 * until then their outputs are values without a producer.
 *
 * The writer turns a graph back into a ModelProto that onnx.checker accepts.
 */
#ifndef RL_ONNX_H
#define RL_ONNX_H

#include "ir.h"
#include "buf.h" /* rl_write_file_atomic */

/*
 * Load a model. On success *gp is the graph (free with rl_graph_free).
 * On failure returns the status, *gp is NULL and err holds one line naming
 * the file, the node where there is one, and the reason.
 */
enum rl_status rl_onnx_load(const char *path, struct rl_graph **gp, char *err,
                            size_t errlen);
/* Load from memory; `path` names it in messages and its folder is where
 * external data is looked for. The buffer must outlive the call only. */
enum rl_status rl_onnx_load_buffer(const void *buf, size_t len,
                                   const char *path, struct rl_graph **gp,
                                   char *err, size_t errlen);

/* Write the graph as a ModelProto (temporary file, renamed on success). */
enum rl_status rl_onnx_write(const struct rl_graph *g, const char *path,
                             char *err, size_t errlen);
/* The same; qformat says how quantized products (QuantMatMul) are written:
 * 0 DequantizeLinear + MatMul (QDQ), 1 com.microsoft MatMulNBits. */
enum rl_status rl_onnx_write_fmt(const struct rl_graph *g, const char *path, int qformat,
                                 char *err, size_t errlen);

/* A tensor read from or written to a TensorProto file (.pb). */
/* The newest ONNX IR version this reader was written for; a newer model
 * loads (rlopt warns) and what it uses that is unknown is refused. */
#define RL_ONNX_IR_MAX 13

struct rl_tensor {
	char *name;          /* malloc'd, may be "" */
	enum rl_dtype dtype;
	struct rl_shape shape;
	void *data;          /* malloc'd, numel * dtype size bytes */
	size_t nbytes;
};
enum rl_status rl_tensor_read(const char *path, struct rl_tensor *t, char *err,
                              size_t errlen);
enum rl_status rl_tensor_write(const char *path, const struct rl_tensor *t,
                               char *err, size_t errlen);
void rl_tensor_free(struct rl_tensor *t);

/*
 * Sequence and optional graph inputs and outputs. The generated C interface
 * is tensors only, so each is lowered at build time to a fixed number of
 * tensors of g->inputs / g->outputs:
 *  - a sequence NAME of length L: L tensors NAME.0 ... NAME.<L-1>;
 *  - an optional NAME: nothing when absent; when present, the tensor NAME or
 *    the sequence's tensors NAME.0 ...
 * An input's length or presence is bound before the first rl_graph_infer()
 * (rl_onnx_bind_sequence / rl_onnx_bind_optional; an unbound optional is
 * absent, an unbound sequence an error); an output's follows from the
 * lowering. g->onnx_io lists every graph input and output, tensors
 * included, in model order; it is NULL when all of them are tensors.
 */
enum rl_onnx_kind {
	RL_ONNX_TENSOR,   /* a tensor */
	RL_ONNX_SEQUENCE, /* a sequence of tensors */
	RL_ONNX_OPTIONAL, /* an optional tensor or sequence of tensors */
};

struct rl_onnx_port {
	const char *name;
	enum rl_onnx_kind kind;
	enum rl_onnx_kind inner; /* of an optional: RL_ONNX_TENSOR or RL_ONNX_SEQUENCE */
	int present;             /* an optional: 1 present, 0 absent, -1 not bound yet */
	int len;                 /* a sequence (also inside an optional): -1 not bound yet */
	uint32_t first;          /* its first tensor in g->inputs / g->outputs */
	uint32_t count;          /* the tensors it spans there (0 for an absent optional) */
	enum rl_dtype dtype;     /* declared element dtype (RL_DT_UNDEFINED: not declared) */
	struct rl_shape shape;   /* declared element shape (rank -1: not declared) */
};

struct rl_onnx_io {
	uint32_t nin, nout;
	struct rl_onnx_port *in, *out; /* graph inputs (initializers excluded), outputs */
};

/* Bind sequence input `name` to `len` elements (0 to 4096). The element
 * tensors get the declared element type; elems (len of them, or NULL) give
 * the dtype and shape where the model declares none. */
struct rl_tensor;
enum rl_status rl_onnx_bind_sequence(struct rl_graph *g, const char *name, int len,
                                     const struct rl_tensor *elems);
/* Bind optional input `name` present or absent; a present optional sequence
 * also needs its length (else ignored), elems as above. */
enum rl_status rl_onnx_bind_optional(struct rl_graph *g, const char *name, bool present,
                                     int len, const struct rl_tensor *elems);

/* The contents of a graph input or output file: a TensorProto, a
 * SequenceProto of tensors, or an OptionalProto (empty, a tensor or a
 * sequence of tensors). The protobuf wire formats cannot tell these apart,
 * so the reader is told which one to expect (the model's type). */
struct rl_value_file {
	enum rl_onnx_kind kind;
	int present;         /* an optional: 0 empty */
	enum rl_onnx_kind inner; /* a present optional's contents */
	char *name;          /* malloc'd, may be "" */
	int n;               /* tensors held */
	struct rl_tensor *t; /* malloc'd, n of them */
};
enum rl_status rl_value_file_read(const char *path, enum rl_onnx_kind kind,
                                  struct rl_value_file *f, char *err, size_t errlen);
enum rl_status rl_value_file_write(const char *path, const struct rl_value_file *f,
                                   char *err, size_t errlen);
void rl_value_file_free(struct rl_value_file *f);
/* A tensor as TensorProto bytes (malloc'd; NULL out of memory). */
uint8_t *rl_tensor_pack(const struct rl_tensor *t, size_t *len);

/* rl_write_file_atomic: ir/buf.h */

/* The operators the reader lowers into other nodes itself (If, Loop, Scan,
 * sequences, optionals; onnx_subgraph.c): the i-th, NULL past the last. */
const char *rl_onnx_lowered_op(int i);

#endif /* RL_ONNX_H */
