/*
 * qweights.h - quantized weights: the schemes, their packed layout, and the
 * internal operator QuantMatMul that carries them through the IR.
 *
 * The quantize pass (passes/quantize.c) rewrites MatMul/Gemm with a
 * constant float32 weight into QuantMatMul (ops.def), whose inputs are
 *
 *   0  A     float32 [..., K]        the activations, as MatMul's A
 *   1  Q     uint8   [N, rowbytes]   codes, one row per output channel
 *   2  S     float16 or float32 [N, nb]  one scale per block
 *   3  Z     uint8   [N, nb]         int4 zero points (optional; absent: 8)
 *   4  bias  float32 [N]             Gemm's C (optional)
 *
 * with attributes K, N, bits (8 or 4) and block_size (K elements per scale;
 * K itself for int8 per output channel), nb = ceil(K / block_size). Output
 * Y = A x W + bias of shape A.shape[:-1] + [N] (a 1-D A gives [N]).
 *
 * Layout, chosen for the kernels (backends/c/emit_qgemm.c), not for ONNX
 * (the writer repacks): output channel n's codes are contiguous, so batch 1
 * streams each channel once. A channel is cut into units of u codes along K
 * (u = block_size; 32 for int8 with one scale per channel), rows padded to
 * whole units with codes worth 0. Sixteen consecutive units form a group,
 * and a group is stored transposed: unit i of the group is 32-bit lane i,
 * each lane holding 4 bytes of its unit at a time. With L lanes in the group
 * (16, fewer in the last), the group is a run of 4L-byte steps:
 *   int8: step t, byte 4i + p = code 4t + p of unit i   (u / 4 steps)
 *   int4: step t, byte 4i + p = code 8t + p of unit i in the low nibble,
 *         code 8t + 4 + p in the high nibble              (u / 8 steps)
 * So one 64-byte load holds 16 units side by side: an int8 dot-product
 * instruction (vpdpbusd: 4 byte products summed per 32-bit lane) or four
 * shift-and-convert planes leave lane i with a partial sum of unit i alone,
 * and one block scale per lane (16 consecutive scales: one vector load)
 * applies once per group, not once per code. int8: w = s * q, q in
 * [-127, 127] (two's complement bytes); int4: w = s * (q - z), q in [0, 15].
 */
#ifndef RL_QWEIGHTS_H
#define RL_QWEIGHTS_H

#include "ir.h"

/* --quantize */
enum rl_quant_mode {
	RL_QUANT_NONE,  /* leave every weight in float (the default) */
	RL_QUANT_INT8,  /* int8 in blocks along K wherever it meets the budget */
	RL_QUANT_INT4,  /* int4 wherever it meets the budget */
	RL_QUANT_AUTO,  /* memory-bound nodes only, narrowest scheme in budget */
	RL_QUANT_INT8_CHANNEL, /* int8 one scale per output channel, else blocks */
	RL_QUANT_INT4_MIXED,   /* int4, but a product that makes a model output
	                        * (the LM head): int8 in blocks */
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
	int64_t unit;       /* codes per lane unit of the layout (above) */
	int64_t rowbytes;   /* bytes of codes per channel (whole 64-byte chunks) */
	uint8_t *q;         /* [n][rowbytes] */
	float *s;           /* [n][nb] (with half_scales: values a float16 holds) */
	bool half_scales;   /* stored as float16 (set before rl_qweight_pack) */
	uint8_t *z;         /* [n][nb] int4 zero points, or NULL (8) */
};

/* Codes per unit and bytes per channel row of the layout above. */
int64_t rl_qweight_unit(int bits, int64_t k, int64_t block);
int64_t rl_qweight_rowbytes(int bits, int64_t k, int64_t block);
/* Byte of code k within a row of rowbytes bytes; *shift: its nibble (0, 4). */
int64_t rl_qweight_code_at(int bits, int64_t unit, int64_t rowbytes, int64_t k, int *shift);
/* Fill the geometry of w for scheme on a K x N weight (block: 32/64/128;
 * ignored by per-channel int8). Returns the packed bytes (codes, float32
 * scales and zero points; rl_qweight_bytes counts the scales as stored). */
int64_t rl_qweight_geometry(struct rl_qweight *w, enum rl_qscheme scheme, int64_t k,
                            int64_t n, int64_t block);
int64_t rl_qweight_bytes(const struct rl_qweight *w);
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

/*
 * How the C kernels (backends/c/emit_qgemm.c) split a QuantMatMul of M rows
 * over K x N codes across threads, shared so the cost model prices the split
 * the code makes: tasks of RL_QCOLS output columns, grouped so each chunk
 * holds at least RL_QTASK_BYTES of codes (rl_qmatmul_grain groups; the
 * runtime's rl_parallel_for then makes floor(groups / grain) chunks, at
 * least one: rl_qmatmul_tasks).
 */
#define RL_QCOLS 16
#define RL_QTASK_BYTES 65536
int64_t rl_qmatmul_grain(int bits, int64_t k, int64_t block, int64_t m);
int64_t rl_qmatmul_tasks(int bits, int64_t k, int64_t n, int64_t block, int64_t m);
/*
 * The activation rows are quantized to int16 on the calling thread before
 * the split (rl_qx_prep: a max pass, then a scalar round, clamp, split into
 * bytes and transposed store per element). Priced as this many BASIC
 * elements per activation element on one core: measured 2.4-3.3 ns per
 * element on the probe host (K 5632 and 2048, one row, N 32: 15.2 and
 * 7.4 us per call), whose BASIC rate is 8.3e10 elements/s: 200-275.
 */
#define RL_QX_PREP_BASIC 200.0
/* What the kernels add to the float product's counts (c->macs set): the
 * codes' products (qmacs), the split (par_tasks) and the activation rows'
 * quantization on the calling thread (serial), for M rows of K over N
 * codes in blocks of `block`. rl_count_quant_matmul and the quantize pass's
 * candidates both count through it. */
void rl_qmatmul_kernel_counts(int bits, int64_t k, int64_t n, int64_t block, int64_t m,
                              struct rl_counts *c);

#endif /* RL_QWEIGHTS_H */
