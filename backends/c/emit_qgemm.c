/*
 * emit_qgemm.c - QuantMatMul (ir/qweights.h): products over int8 and int4
 * weights, dequantized in the inner loop with float accumulation.
 *
 * Why it looks like this:
 *
 * - The point of quantizing is fewer bytes fetched, so the codes are read
 *   straight from the packed constant and widened in registers: 32-bit
 *   lanes to float, times the block's scale (int4: times scale plus
 *   -zero*scale, one multiply-add), then one FMA with the activations, on
 *   4 (one row) or 2 (four rows) accumulators. No dequantized copy of the
 *   weight exists at any time, not even of one column.
 * - The layout (ir/qweights.h) puts 16 consecutive codes in the same byte
 *   (int8) or nibble (int4) of 16 32-bit lanes of a 64-byte chunk, so one
 *   chunk loaded as a 16-lane vector gives its runs of 16 codes with a
 *   shift and a mask (or two shifts, sign-extending int8): no byte
 *   shuffles, which GCC 12 lowers to scalar code for generic vectors (a
 *   first layout that widened 16 bytes with __builtin_convertvector ran at
 *   2.8 GB/s where the float GEMV streamed 42). The portable generic
 *   vectors of the runtime (rl_vf, RL_TARGETS clones) are then enough.
 * - Output channel n's codes are contiguous (N x K storage), so batch 1 is
 *   one pass over the weights. For more
 *   rows, each column is dequantized once per four rows (four accumulators
 *   share the widened codes); tasks are groups of 16 columns whose codes
 *   stay in L1/L2 while the rows stream by. A large batch is compute-bound
 *   and `--quantize auto` leaves it in float; forced, it is correct but
 *   slower than the float GEMM, which packs and blocks for the FMA units.
 * - The part of K short of a whole chunk (64 int8 or 128 int4 codes) takes
 *   a scalar loop; everything else is vector code. Without GNU vectors
 *   (RL_VEC unset: tcc, other compilers) the scalar loop runs throughout.
 * - Each output element is one dot product in one task: bit-identical for
 *   any thread count.
 */
#include "emit_impl.h"

#include <stdio.h>
#include <string.h>

#define QCOLS 16 /* output columns per task */

/* "", "ldx + ", "2 * ldx + ", ...: the offset of row r */
static const char *rowoff(int r, const char *ld)
{
	static char buf[4][32];
	if (r == 0)
		return "";
	if (r == 1)
		snprintf(buf[1], sizeof(buf[0]), "%s + ", ld);
	else
		snprintf(buf[r & 3], sizeof(buf[0]), "%d * %s + ", r, ld);
	return buf[r & 3];
}

/* One column of int8 or int4 codes (layout: ir/qweights.h) against `mr` rows
 * of x; `nacc` vector accumulators per row cover the FMA latency. */
static void gen_col(struct rl_buf *b, int bits, int mr, int nacc)
{
	int chunk = bits == 8 ? 64 : 128, planes = bits == 8 ? 4 : 8;
	rl_buf_printf(b, "RL_QINLINE void rl_q%d_r%d(int64_t K, int64_t bs, const float *restrict x, "
	              "int64_t ldx,\n    const uint8_t *restrict q, const float *restrict s, "
	              "const uint8_t *restrict z,\n    float *restrict y, int64_t ldy)\n{\n", bits, mr);
	if (bits == 8)
		rl_buf_printf(b, "    (void)z;\n");
	if (mr == 1)
		rl_buf_printf(b, "    (void)ldx;\n    (void)ldy;\n");
	rl_buf_printf(b, "    int64_t c = 0;\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    float t%d = 0;\n", r);
	rl_buf_printf(b, "#ifdef RL_VEC\n");
	for (int r = 0; r < mr; r++)
		for (int a = 0; a < nacc; a++)
			rl_buf_printf(b, "    rl_vf a%d_%d = {0};\n", r, a);
	rl_buf_printf(b, "    for (; c + %d <= K; c += %d) {\n", chunk, chunk);
	rl_buf_printf(b, "        rl_vu v = *(const rl_vuu *)(q + c%s);\n", bits == 8 ? "" : " / 2");
	for (int p = 0; p < planes; p++) {
		rl_buf_printf(b, "        {\n            int64_t blk = (c + %d) / bs;\n", 16 * p);
		if (bits == 8)
			rl_buf_printf(b, "            rl_vf w = __builtin_convertvector((rl_vi)(v << %d) >> 24, rl_vf);\n"
			              "            if (bs < K) /* else one scale: applied to the sum */\n"
			              "                w *= s[blk];\n", 24 - 8 * p);
		else
			rl_buf_printf(b, "            float sc = s[blk], zs = -(z ? (float)z[blk] : 8.0f) * sc;\n"
			              "            rl_vf w = __builtin_convertvector((rl_vi)((v >> %d) & 15), "
			              "rl_vf) * sc + zs;\n", 4 * p);
		for (int r = 0; r < mr; r++)
			rl_buf_printf(b, "            a%d_%d += *(const rl_vfu *)(x + %sc + %d) * w;\n", r,
			              p % nacc, rowoff(r, "ldx"), 16 * p);
		rl_buf_printf(b, "        }\n");
	}
	rl_buf_printf(b, "    }\n");
	rl_buf_printf(b, "#endif\n");
	/* scalar: the part of K short of a whole chunk, or everything without vectors */
	rl_buf_printf(b, "    for (; c < K; c++) {\n"
	                 "        int64_t blk = c / bs, j = c %% %d;\n", chunk);
	if (bits == 8)
		rl_buf_printf(b, "        float w = (float)(int8_t)q[c / 64 * 64 + j %% 16 * 4 + j / 16] * s[blk];\n");
	else
		rl_buf_printf(b, "        int code = (q[c / 128 * 64 + j %% 16 * 4 + j / 32] >> (j / 16 %% 2 * 4)) & 15;\n"
		                 "        float w = ((float)code - (z ? (float)z[blk] : 8.0f)) * s[blk];\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "        t%d += x[%sc] * w;\n", r, rowoff(r, "ldx"));
	rl_buf_printf(b, "    }\n#ifdef RL_VEC\n");
	if (bits == 8)
		rl_buf_printf(b, "    float vs = bs < K ? 1.0f : s[0];\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    float u%d = 0;\n", r);
	rl_buf_printf(b, "    for (int i = 0; i < RL_VW; i++) {\n");
	for (int r = 0; r < mr; r++) {
		rl_buf_printf(b, "        u%d +=", r);
		for (int a = 0; a < nacc; a++)
			rl_buf_printf(b, "%s a%d_%d[i]", a ? " +" : "", r, a);
		rl_buf_printf(b, ";\n");
	}
	rl_buf_printf(b, "    }\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    t%d += %su%d;\n", r, bits == 8 ? "vs * " : "", r);
	rl_buf_printf(b, "#endif\n");
	for (int r = 0; r < mr; r++)
		rl_buf_printf(b, "    y[%s0] = t%d;\n", rowoff(r, "ldy"), r);
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
	              "typedef uint32_t rl_vuu __attribute__((vector_size(64), aligned(4), may_alias));\n"
	              "#define RL_QINLINE RL_INLINE\n"
	              "#else\n"
	              "#define RL_QINLINE static inline\n"
	              "#endif\n", mark);
	for (int bits = 8; bits >= 4; bits -= 4) {
		gen_col(b, bits, 1, 4);
		gen_col(b, bits, 4, 2);
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
	int64_t nb = (K + bs - 1) / bs, chunk = bits == 8 ? 64 : 128;
	int64_t rowbytes = (K + chunk - 1) / chunk * 64;
	bool zp = rl_node_in(n, 3) != RL_NONE, bias = rl_node_in(n, 4) != RL_NONE;
	qgemm_runtime(cg);
	cg->simd = 1;
	int64_t groups = (N + QCOLS - 1) / QCOLS;
	/* a task: at least 64 KiB of codes, or the rows' worth of work */
	int64_t per = QCOLS * rowbytes * (M < 1 ? 1 : M);
	cg->par_n = groups;
	cg->par_grain = per >= 65536 ? 1 : (65536 + per - 1) / per;
	cg_line(cg, "/* %lld x %lld int%lld weight, %s, block %lld: %lld bytes of codes */",
	        (long long)K, (long long)N, (long long)bits,
	        bits == 8 ? (nb == 1 ? "one scale per output channel" : "symmetric")
	                  : (zp ? "zero point per block" : "symmetric"),
	        (long long)bs, (long long)(N * rowbytes));
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
		        (long long)K, (long long)K, (long long)rowbytes, (long long)nb,
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
