/*
 * onnx_subgraph.h - the reader's control-flow lowering (onnx_subgraph.c) and
 * the two helpers of onnx_read.c it shares. Internal to frontends/onnx.
 */
#ifndef RL_ONNX_SUBGRAPH_H
#define RL_ONNX_SUBGRAPH_H

#include "ir.h"
#include "onnx.pb-c.h"

/* True for the operators the reader lowers itself instead of handing them to
 * the IR: If, Loop, Scan, the Sequence* operators and the Optional ones. */
bool rl_onnx_ctrl_op(const char *op_type);

/* True for a FlexAttention with a score_mod or prob_mod graph: the reader
 * writes it out as MatMul, the modifiers, Softmax and MatMul (the fused
 * attention kernel has no place to run a whole-tensor subgraph). */
bool rl_onnx_flex_mod(const Onnx__NodeProto *np);

/* Lower every node of the main graph gp that lowered[i] marks (control
 * flow, sequences, optionals, and the Identity nodes that pass one on; the
 * rest of gp is already built into g, with a value, no producer, for each
 * output of those nodes), and make the tensors of g->onnx_io's sequence and
 * optional inputs and outputs. Shapes and constants the decisions need are
 * inferred on the way. On failure g->err holds one line naming the file,
 * the node and the reason. */
enum rl_status rl_onnx_lower_ctrl(struct rl_graph *g, const Onnx__GraphProto *gp,
                                  const uint8_t *lowered);

/* Arrange for rl_onnx_lower_ctrl(g, gp, lowered) to run at the start of the
 * first rl_graph_infer(g), after the caller bound the input shapes; nothing
 * when there is nothing to lower. */
void rl_onnx_defer_ctrl(struct rl_graph *g, const Onnx__GraphProto *gp,
                        const uint8_t *lowered);

/* onnx_read.c: attributes of np onto node nid; a reason in why on failure. */
enum rl_status rl_onnx_node_attrs(struct rl_graph *g, uint32_t nid,
                                  const Onnx__NodeProto *np, char *why, size_t whylen);
/* onnx_read.c: a TensorProto into a graph-held constant value named `name`;
 * RL_NONE with a reason in why on failure. */
uint32_t rl_onnx_tensor_value(struct rl_graph *g, const Onnx__TensorProto *t,
                              const char *name, char *why, size_t whylen);

/* onnx_read.c: TensorProto bytes into t (rl_tensor_free it); a reason in
 * why on failure. */
struct rl_tensor;
enum rl_status rl_onnx_tensor_decode(const uint8_t *buf, size_t len, struct rl_tensor *t,
                                     char *why, size_t whylen);

#endif /* RL_ONNX_SUBGRAPH_H */
