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

/* rl_write_file_atomic: ir/buf.h */

/* The operators the reader lowers into other nodes itself (If, Loop, Scan,
 * sequences, optionals; onnx_subgraph.c): the i-th, NULL past the last. */
const char *rl_onnx_lowered_op(int i);

#endif /* RL_ONNX_H */
