/*
 * emit_qgemm.c - QuantMatMul (ir/quant.h): products over int8 and int4
 * weights, dequantized in the inner loop with float accumulation.
 *
 * Why it looks like this:
 *
 * - The point of quantizing is fewer bytes fetched, so the codes are read
 *   straight from the packed constant and widened in registers: 16 bytes to
 *   16 int32 lanes (__builtin_convertvector), to float, times the block's
 *   scale (int4: times scale plus -zero*scale, one multiply-add), then one
 *   FMA with the activations. No dequantized copy of the weight exists at
 *   any time, not even of one column.
 * - The int4 layout (low nibbles: codes 0..bs/2-1 of a block, high nibbles:
 *   the rest) makes 16 bytes two vectors of 16 consecutive codes with one
 *   AND and one shift: no shuffles, so the portable generic vectors of the
 *   runtime (rl_vf, RL_TARGETS clones for AVX-512/AVX2) are enough.
 * - Output channel n's codes are contiguous (N x K storage), so batch 1 is
 *   one pass over the weights with one vector accumulator per row. For more
 *   rows, each column is dequantized once per four rows (four accumulators
 *   share the widened codes); tasks are groups of 16 columns whose codes
 *   stay in L1/L2 while the rows stream by. A large batch is compute-bound
 *   and `--quantize auto` leaves it in float; forced, it is correct but
 *   slower than the float GEMM, which packs and blocks for the FMA units.
 * - Blocks that run past K (K % block_size) and the rest of a per-channel
 *   int8 row take a scalar loop; everything else is vector code. Without
 *   GNU vectors (RL_VEC unset: tcc, other compilers) the scalar loops run.
 * - Each output element is one dot product in one task: bit-identical for
 *   any thread count.
 */
#include "emit.h"

#include <stdio.h>
#include <string.h>

#define QCOLS 16 /* output columns per task */

/* One column of int8 or int4 codes against `mr` rows of x. */
static void gen_col(struct rl_buf *b, int bits, int mr)
{
	rl_buf_printf(b, "RL_QINLINE void rl_q%d_r%d(int64_t K, int64_t bs, const float *restrict x, "
	              "int64_t ldx,\n    const uint8_t *restrict q, const float *restrict s, "
	              "const uint8_t *restrict z,\n    float *restrict y, int64_t ldy)\n{\n", bits, mr);
	if (bits == 8)
		rl_buf_printf(b, "    (void)z;\n");
	rl_buf_printf(b, "    int64_t bb = %s, nb = (K + bs - 1) / bs;\n", bits == 8 ? "bs" : "bs / 2");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    float t%d = 0;\n", r);
	rl_buf_printf(b, "#ifdef RL_VEC\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    rl_vf a%d = {0};\n", r);
	rl_buf_printf(b, "#endif\n");
	rl_buf_printf(b, "    for (int64_t blk = 0; blk < nb; blk++) {\n"
	                 "        const uint8_t *qb = q + blk * bb;\n"
	                 "        const float *xb = x + blk * bs;\n"
	                 "        int64_t len = K - blk * bs < bs ? K - blk * bs : bs, c = 0;\n"
	                 "        float sc = s[blk];\n");
	if (bits == 4)
		rl_buf_printf(b, "        float zs = -(z ? (float)z[blk] : 8.0f) * sc;\n");
	rl_buf_printf(b, "#ifdef RL_VEC\n");
	if (bits == 8) {
		rl_buf_printf(b, "        for (int64_t nv = len & ~(int64_t)15; c < nv; c += 16) {\n"
		                 "            rl_vf w = __builtin_convertvector(__builtin_convertvector("
		                 "*(const rl_vqs *)(qb + c), rl_vi), rl_vf) * sc;\n");
		for (int r = 0; r < mr; r++)
			rl_buf_printf(b, "            a%d += *(const rl_vfu *)(xb + %d * ldx + c) * w;\n", r, r);
		rl_buf_printf(b, "        }\n");
	} else {
		rl_buf_printf(b, "        if (len == bs) {\n"
		                 "            for (; c < bb; c += 16) {\n"
		                 "                rl_vi v = __builtin_convertvector(*(const rl_vqu *)(qb + c), rl_vi);\n"
		                 "                rl_vf lo = __builtin_convertvector(v & 15, rl_vf) * sc + zs;\n"
		                 "                rl_vf hi = __builtin_convertvector(v >> 4, rl_vf) * sc + zs;\n");
		for (int r = 0; r < mr; r++)
			rl_buf_printf(b, "                a%d += *(const rl_vfu *)(xb + %d * ldx + c) * lo + "
			              "*(const rl_vfu *)(xb + %d * ldx + bb + c) * hi;\n", r, r, r);
		rl_buf_printf(b, "            }\n            continue;\n        }\n");
	}
	rl_buf_printf(b, "#endif\n");
	/* scalar: the tail of a block, or everything without vectors */
	rl_buf_printf(b, "        for (; c < len; c++) {\n");
	if (bits == 8)
		rl_buf_printf(b, "            float w = (float)(int8_t)qb[c] * sc;\n");
	else
		rl_buf_printf(b, "            int code = c < bb ? qb[c] & 15 : qb[c - bb] >> 4;\n"
		                 "            float w = (float)code * sc + zs;\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "            t%d += xb[%d * ldx + c] * w;\n", r, r);
	rl_buf_printf(b, "        }\n    }\n#ifdef RL_VEC\n");
	rl_buf_printf(b, "    for (int i = 0; i < RL_VW; i++) {\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "        t%d += a%d[i];\n", r, r);
	rl_buf_printf(b, "    }\n#endif\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    y[%d * ldy] = t%d;\n", r, r);
	rl_buf_printf(b, "}\n\n");
}

/* The helpers, once per file. */
static void qgemm_runtime(struct rl_cgen *cg)
{
	static const char mark[] = "/* ---- quantized products";
	if (cg->statics.s && strstr(cg->statics.s, mark))
		return;
	struct rl_buf *b = &cg->statics;
	rl_buf_printf(b, "%s (emit_qgemm.c): one column of codes against 1 or 4 rows ---- */\n"
	              "#ifdef RL_VEC\n"
	              "typedef uint8_t rl_vqu __attribute__((vector_size(16), aligned(1), may_alias));\n"
	              "typedef int8_t rl_vqs __attribute__((vector_size(16), aligned(1), may_alias));\n"
	              "#define RL_QINLINE RL_INLINE\n"
	              "#else\n"
	              "#define RL_QINLINE static inline\n"
	              "#endif\n", mark);
	for (int bits = 8; bits >= 4; bits -= 4) {
		gen_col(b, bits, 1);
		gen_col(b, bits, 4);
	}
}

enum rl_status rl_emit_c_qgemm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_graph *g = cg->g;
	const struct rl_node *n = &g->nodes[node];
	int64_t K = rl_node_attr_int(n, "K", 0), N = rl_node_attr_int(n, "N", 0);
	int64_t bits = rl_node_attr_int(n, "bits", 0), bs = rl_node_attr_int(n, "block_size", 0);
	int64_t M = rl_shape_numel(&g->values[n->out[0]].shape) / (N ? N : 1);
	if (K <= 0 || N <= 0 || M < 0 || (bits != 8 && bits != 4))
		return cg_error(cg, node, "QuantMatMul with K=%lld N=%lld bits=%lld", (long long)K,
		                (long long)N, (long long)bits);
	int64_t nb = (K + bs - 1) / bs, bb = bits == 8 ? bs : bs / 2;
	bool zp = rl_node_in(n, 3) != RL_NONE, bias = rl_node_in(n, 4) != RL_NONE;
	qgemm_runtime(cg);
	cg->simd = 1;
	int64_t groups = (N + QCOLS - 1) / QCOLS;
	/* a task: at least 64 KiB of codes, or the rows' worth of work */
	int64_t per = QCOLS * nb * bb * (M < 1 ? 1 : M);
	cg->par_n = groups;
	cg->par_grain = per >= 65536 ? 1 : (65536 + per - 1) / per;
	cg_line(cg, "/* %lld x %lld int%lld weight, %s, block %lld: %lld bytes of codes */",
	        (long long)K, (long long)N, (long long)bits,
	        bits == 8 ? (nb == 1 ? "one scale per output channel" : "symmetric")
	                  : (zp ? "zero point per block" : "symmetric"),
	        (long long)bs, (long long)(N * nb * bb));
	cg_line(cg, "for (int64_t grp = lo; grp < hi; grp++) {");
	cg->indent++;
	cg_line(cg, "int64_t n0 = grp * %d, n1 = n0 + %d < %lld ? n0 + %d : %lld;", QCOLS, QCOLS,
	        (long long)N, QCOLS, (long long)N);
	cg_line(cg, "int64_t m = 0;");
	char zexpr[64];
	snprintf(zexpr, sizeof(zexpr), "X3 + n * %lld", (long long)nb);
	for (int pass = 0; pass < 2; pass++) {
		int mr = pass == 0 ? 4 : 1;
		if ((pass == 0 && M < 4) || (pass == 1 && M >= 4 && M % 4 == 0))
			continue;
		cg_line(cg, "for (; m + %d <= %lld; m += %d)", mr, (long long)M, mr);
		cg->indent++;
		cg_line(cg, "for (int64_t n = n0; n < n1; n++)");
		cg->indent++;
		cg_line(cg, "rl_q%lld_r%d(%lld, %lld, X0 + m * %lld, %lld, X1 + n * %lld, X2 + n * %lld, "
		        "%s, Y0 + m * %lld + n, %lld);", (long long)bits, mr, (long long)K, (long long)bs,
		        (long long)K, (long long)K, (long long)(nb * bb), (long long)nb,
		        zp ? zexpr : "NULL", (long long)N, (long long)N);
		cg->indent -= 2;
	}
	if (bias) {
		cg_line(cg, "for (int64_t r = 0; r < %lld; r++)", (long long)M);
		cg->indent++;
		cg_line(cg, "for (int64_t n = n0; n < n1; n++)");
		cg->indent++;
		cg_line(cg, "Y0[r * %lld + n] += X4[n];", (long long)N);
		cg->indent -= 2;
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}
