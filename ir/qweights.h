/*
 * qweights.h - quantized weights: the schemes, their packed layout, and the
 * internal operator QuantMatMul that carries them through the IR.
 *
 * The quantize pass (passes/quantize.c) rewrites MatMul/Gemm with a
 * constant float32 weight into QuantMatMul (ops.def), whose inputs are
 *
 *   0  A     float32 [..., K]        the activations, as MatMul's A
 *   1  Q     uint8   [N, rowbytes]   codes, one row per output channel
 *   2  S     float32 [N, nb]         one scale per block
 *   3  Z     uint8   [N, nb]         int4 zero points (optional; absent: 8)
 *   4  bias  float32 [N]             Gemm's C (optional)
 *
 * with attributes K, N, bits (8 or 4) and block_size (K elements per scale;
 * K itself for int8 per output channel), nb = ceil(K / block_size). Output
 * Y = A x W + bias of shape A.shape[:-1] + [N] (a 1-D A gives [N]).
 *
 * Layout, chosen for the kernels (backends/c/emit_qgemm.c), not for ONNX
 * (the writer repacks): output channel n's codes are contiguous in K, so
 * batch 1 streams each channel once. A channel's codes come in chunks of 64
 * bytes, seen as 16 little-endian 32-bit lanes: int8, 64 codes per chunk,
 * code 16p + i in byte p of lane i; int4, 128 codes, code 16p + i in
 * nibble p of lane i. So a chunk loaded as one 16-lane integer vector
 * yields each run of 16 consecutive codes with two shifts (int8: sign
 * extension) or a shift and a mask (int4), no shuffles. Rows are padded to
 * whole chunks with codes worth 0. int8: w = s * q, q in [-127, 127]; int4:
 * w = s * (q - z), q in [0, 15].
 */
#ifndef RL_QWEIGHTS_H
#define RL_QWEIGHTS_H

#include "ir.h"

/* --quantize */
enum rl_quant_mode {
	RL_QUANT_NONE,  /* leave every weight in float (the default) */
	RL_QUANT_INT8,  /* int8 wherever it meets the error budget */
	RL_QUANT_INT4,  /* int4 wherever it meets the error budget */
	RL_QUANT_AUTO,  /* memory-bound nodes only, narrowest scheme in budget */
};

enum rl_qscheme {
	RL_Q_NONE,         /* float */
	RL_Q_INT8_CHANNEL, /* int8, symmetric, one scale per output channel */
	RL_Q_INT8_BLOCK,   /* int8, symmetric, one scale per block along K */
	RL_Q_INT4_SYM,     /* int4, symmetric (zero point 8), blocks along K */
	RL_Q_INT4_ASYM,    /* int4, min/max with a zero point per block */
	RL_Q_COUNT_,
};

const char *rl_qscheme_name(enum rl_qscheme s); /* "int8/channel", "int4/block32", ... base */
int rl_qscheme_bits(enum rl_qscheme s);         /* 32, 8 or 4 */

/* A packed weight of logical shape K x N (the MatMul B). */
struct rl_qweight {
	enum rl_qscheme scheme;
	int bits;           /* 8 or 4 */
	int64_t k, n;       /* reduction and output extents */
	int64_t block;      /* codes per scale (K for per-channel int8) */
	int64_t nb;         /* blocks per channel */
	int64_t rowbytes;   /* bytes of codes per channel (whole 64-byte chunks) */
	uint8_t *q;         /* [n][rowbytes] */
	float *s;           /* [n][nb] */
	uint8_t *z;         /* [n][nb] int4 zero points, or NULL (8) */
};

/* Fill the geometry of w for scheme on a K x N weight (block: 32/64/128;
 * ignored by per-channel int8). Returns the packed bytes (codes, scales and
 * zero points). */
int64_t rl_qweight_geometry(struct rl_qweight *w, enum rl_qscheme scheme, int64_t k,
                            int64_t n, int64_t block);
/* Quantize weight element (k, n) = src[k * ks + n * ns] into w, whose q, s
 * and z (when the scheme has zero points) the caller allocated per the
 * geometry. An all-zero block gets scale 0 and codes worth 0. The source
 * must be finite (the pass checks). */
void rl_qweight_pack(struct rl_qweight *w, const float *src, int64_t ks, int64_t ns);
/* Code of weight (k, n): int8 as a signed value, int4 in [0, 15]. */
int rl_qweight_code(const struct rl_qweight *w, int64_t k, int64_t n);
/* Dequantize output channel n into col[0..K). */
void rl_qweight_column(const struct rl_qweight *w, int64_t n, float *col);

/* Shape inference and counts for QuantMatMul (ir/qweights.c; fam_matmul.c
 * dispatches here). */
enum rl_status rl_infer_quant_matmul(struct rl_graph *g, uint32_t node);
struct rl_counts;
bool rl_count_quant_matmul(const struct rl_graph *g, uint32_t node, struct rl_counts *c);

#endif /* RL_QWEIGHTS_H */
