/*
 * quant.h - what the quantization family (ir/fam_quant.c) shares with the
 * constant evaluator (ir/eval.c), the fold pass and the C emitter
 * (backends/c/emit_quant.c): how a scale tensor maps onto the tensor it
 * scales, and the per-dtype conversion hooks.
 *
 * Semantics are the ONNX reference's (onnx/reference/ops/op_quantize_linear.py
 * and op_dequantize_linear.py):
 *   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
 *   DequantizeLinear: y = (x - zero_point) * scale
 * x / scale is computed in x's precision (float16 rounds the quotient to
 * half), or in the `precision` attribute's type (opset 23+).
 *
 * A scale (and its zero point, same shape) is per tensor (one element), per
 * axis (1-D, one entry per index of `axis`) or blocked (block_size > 0: the
 * input's shape with `axis` cut into ceil(D / block_size) blocks). Viewing
 * the input as [outer, D, inner] around `axis`, element (o, d, i) uses
 *   per tensor: 0;  per axis: d;  blocked: (o * nblocks + d / block) * inner + i.
 */
#ifndef RL_QUANT_H
#define RL_QUANT_H

#include "ir.h"

enum rl_qkind {
	RL_QK_TENSOR, /* one scale */
	RL_QK_AXIS,   /* one scale per index of the axis */
	RL_QK_BLOCK,  /* one scale per block of the axis */
};

struct rl_qlayout {
	enum rl_qkind kind;
	int axis;                   /* normalized */
	int64_t outer, dim, inner;  /* the input as [outer, dim, inner]; per tensor:
	                               [1, numel, 1] */
	int64_t block, nblocks;     /* RL_QK_BLOCK */
};

/* Index of the scale that element (o, d, i) uses. */
static inline int64_t rl_qlayout_index(const struct rl_qlayout *l, int64_t o, int64_t d,
                                       int64_t i)
{
	switch (l->kind) {
	case RL_QK_TENSOR: return 0;
	case RL_QK_AXIS: return d;
	default: return (o * l->nblocks + d / l->block) * l->inner + i;
	}
}

/* Layout of QuantizeLinear/DequantizeLinear node n (scale in slot 1) for
 * its static input shape; false with a reason in why when the scale or zero
 * point shape does not fit the input. */
bool rl_qlayout_of(const struct rl_graph *g, const struct rl_node *n, struct rl_qlayout *l,
                   char *why, size_t whylen);

/*
 * One row per quantized dtype. Integer types (int4/uint4/int2/uint2
 * included, one element a byte) saturate to [qmin, qmax] after the zero
 * point is added; the float8 kinds and float4e2m1 have `integer` false and
 * store with ir/lowp.c's Cast conversions (float8: x / scale with the
 * `saturate` attribute, zero point ignored; float4: x / scale + zero point
 * in the compute precision, always saturating). DequantizeLinear of a
 * float8/float4 input ignores its zero point. The C emitter keeps a
 * matching table of expression hooks (backends/c/emit_quant.c, qc_types).
 */
struct rl_qtype {
	enum rl_dtype dt;
	bool integer;
	int64_t qmin, qmax;
	/* element i of storage p as a number (zero point not subtracted) */
	double (*load)(const void *p, int64_t i);
	/* store q = x / scale (already in the compute precision `prec`) with
	 * zero point zp (the zero point's own number, 0 when absent);
	 * saturate is QuantizeLinear's attribute (float8 only) */
	void (*store)(void *p, int64_t i, double q, double zp, bool saturate,
	              enum rl_dtype prec);
};
/* The row for dt, NULL when dt is not a quantized type rlopt handles. */
const struct rl_qtype *rl_qtype_of(enum rl_dtype dt);

/* Round half to even, saturated to [lo, hi] (NaN gives lo): the integer
 * rule of QuantizeLinear, DynamicQuantizeLinear and the QLinear ops. */
double rl_quant_round_sat(double v, double lo, double hi);

/* QuantizeLinear's output dtype: the zero point's, else output_dtype,
 * else uint8. */
enum rl_dtype rl_quant_out_dtype(const struct rl_graph *g, const struct rl_node *n);

/* Compute QuantizeLinear or DequantizeLinear node `node` with constant
 * inputs into out (numel x output dtype bytes); false when a dtype is not
 * handled. The evaluator (small tensors) and the fold pass (a constant
 * weight's DequantizeLinear, any size) both call it. */
bool rl_quant_compute(const struct rl_graph *g, uint32_t node, void *out);

#endif /* RL_QUANT_H */
