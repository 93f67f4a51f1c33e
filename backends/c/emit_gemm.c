/*
 * emit_gemm.c - the packed fp32 GEMM/GEMV runtime a generated .c carries
 * when some kernel asks for it (see "GEMM runtime" in emit.h).
 *
 * Why it looks like this:
 *
 * - Users compile with plain `cc -O2`, and under -std=c11 GCC never turns
 *   a*b+c into an FMA. A compute-bound product must therefore issue FMAs
 *   itself: the micro-kernels are written with intrinsics in functions
 *   carrying a GNU `target` attribute (AVX-512 and AVX2+FMA), and one of
 *   them is picked once, in NAME_init, with __builtin_cpu_supports. Other
 *   compilers and architectures (aarch64 included) get portable C under
 *   `#else`, which is correct everywhere and vectorizable by the compiler.
 * - The product is blocked the usual way (the analytical model of BLIS):
 *   a kc x nr micro-panel of packed B stays in L1 while the mr-row panels of
 *   a packed mc x kc block of A stream from L2 through the register tile;
 *   the C micro-tile is loaded and stored once per kc block. B that is a
 *   constant is packed once at init; B computed at run time (attention,
 *   batched products) is packed per kc x nc block into per-thread scratch.
 * - Register tiles (Zen 4, AVX-512 double-pumped: one zmm FMA per cycle,
 *   latency 4, so at least 4 independent accumulators; 32 zmm registers):
 *   AVX-512 12x32 (24 zmm accumulators, 2 B loads and 12 broadcasts per k);
 *   6x64 measured the same within noise, 8x48 slower. AVX2 6x16 (12 ymm
 *   accumulators, 15 of 16 registers); portable 4x16. Every mr divides 12
 *   and every nr divides 32, so an emitter that blocks rows by multiples of
 *   12 and columns by multiples of 32 (RL_GEMM_MR_LCM, RL_GEMM_NR_LCM) never
 *   depends on which ISA the loader finds. Edges (a partial tile) go
 *   through a small tile on the stack, so any M, N, K takes the same kernels.
 * - A is packed with its mr rows read in step and the panel written in
 *   order (measured: 8% of a 1024^3 product faster than row by row), and
 *   tasks are as wide as the thread split allows, since A is packed again
 *   for each column block.
 * - Batch 1 (GEMV) is bound by the bytes of the weights, not the FMAs:
 *   B is read once, contiguously, with 8 independent vector accumulators
 *   to cover the FMA latency. Weights stored N x K (Gemm transB) are
 *   already in streaming order (one dot product per row); K x N weights
 *   are packed at init into panels of RL_GEMV_W columns stored k-major, so
 *   each panel is one contiguous run. Memory: a side-file constant read by
 *   this kernel alone is packed over its own copy (which NAME_init read into
 *   memory it owns), permuted in place when N % 128 == 0, so the weights
 *   are held once; otherwise the packed copy is a second buffer.
 * - Scratch for run-time packing comes from slots (one per thread at most,
 *   taken with an atomic exchange and given back after each range), sized
 *   at init by every kernel's rl_gemm_reserve() and freed by NAME_free:
 *   no large stack arrays, no allocation in the run function.
 * - Each output element is reduced over K in one fixed order inside one
 *   task, so results are bit-identical for any thread count.
 */
#include "emit_impl.h"

#include <string.h>

/* ---- text generators for the register-blocked micro-kernels ------------- */

/* x86 micro-kernel: MR rows x NV vectors of `lanes` floats, K unrolled by 4,
 * A packed with `as` floats per k (as == mr for the full tile; an edge
 * kernel computes the first mr < as rows of a panel packed for as). */
static void gen_ukr_x86(struct rl_buf *b, const char *name, const char *target, int mr, int as,
                        int nv, int lanes)
{
	char ad[64];
	const char *V = lanes == 16 ? "__m512" : "__m256";
	const char *P = lanes == 16 ? "_mm512" : "_mm256";
	int nr = nv * lanes;
	rl_buf_printf(b, "__attribute__((target(\"%s\"))) RL_GEMM_FN void %s(int64_t kb, const float *restrict a,\n"
	              "    const float *restrict b, float *restrict c, int64_t ldc, int acc)\n{\n",
	              target, name);
	for (int i = 0; i < mr; i++) {
		rl_buf_printf(b, "    %s", V);
		for (int v = 0; v < nv; v++)
			rl_buf_printf(b, "%s c%d_%d = %s_setzero_ps()", v ? "," : "", i, v, P);
		rl_buf_printf(b, ";\n");
	}
	rl_buf_printf(b, "    int64_t k = 0;\n");
	if (mr == 1)
		rl_buf_printf(b, "    (void)ldc; /* one row */\n");
	for (int pass = 0; pass < 2; pass++) {
		int unroll = pass == 0 ? 4 : 1;
		if (pass == 0)
			rl_buf_printf(b, "    for (; k + 4 <= kb; k += 4) { /* unrolled: the loop overhead off the FMA ports */\n");
		else
			rl_buf_printf(b, "    for (; k < kb; k++) {\n");
		for (int u = 0; u < unroll; u++) {
			rl_buf_printf(b, "        {\n");
			for (int v = 0; v < nv; v++)
				rl_buf_printf(b, "            const %s b%d = %s_loadu_ps(%s);\n", V, v, P,
				              cg_addr(ad, sizeof(ad), "b", 0, NULL, NULL, u * nr + v * lanes));
			for (int i = 0; i < mr; i++) {
				rl_buf_printf(b, "            const %s x%d = %s_set1_ps(a[%d]);\n", V, i, P,
				              u * as + i);
				for (int v = 0; v < nv; v++)
					rl_buf_printf(b, "            c%d_%d = %s_fmadd_ps(x%d, b%d, c%d_%d);\n", i, v, P,
					              i, v, i, v);
			}
			rl_buf_printf(b, "        }\n");
		}
		rl_buf_printf(b, "        a += %d;\n        b += %d;\n    }\n", unroll * as, unroll * nr);
	}
	rl_buf_printf(b, "    if (acc) {\n");
	for (int i = 0; i < mr; i++)
		for (int v = 0; v < nv; v++)
			rl_buf_printf(b, "        c%d_%d = %s_add_ps(c%d_%d, %s_loadu_ps(%s));\n", i, v, P, i,
			              v, P, cg_addr(ad, sizeof(ad), "c", i, "ldc", NULL, v * lanes));
	rl_buf_printf(b, "    }\n");
	for (int i = 0; i < mr; i++)
		for (int v = 0; v < nv; v++)
			rl_buf_printf(b, "    %s_storeu_ps(%s, c%d_%d);\n", P,
			              cg_addr(ad, sizeof(ad), "c", i, "ldc", NULL, v * lanes), i, v);
	rl_buf_printf(b, "}\n\n");
}

/*
 * A's packing. A panel's k loop reads its mr rows in step and writes the
 * panel in order. It is written out for mr 6 and 12 with unit k stride,
 * the row pointers in locals: GCC -O2 does not unroll a loop over a
 * constant 6 rows, and the loop (its pointers reloaded from an array at
 * each step) took 5 cycles per float, 8% of gpt_block's time on Zen 3;
 * written out, mlp.c_proj (16 x 256 x 64) went 7.47 -> 6.42 us.
 */
static void gen_pack_a(struct rl_buf *b)
{
	rl_buf_printf(b,
	              "/* A'(i0.., k0..) (mb x kb), times alpha (x 1.0f is exact), to panels of mr\n"
	              " * rows, k-major: dst[(i / mr) * kb * mr + k * mr + i %% mr]. The rows past M\n"
	              " * of the last panel repeat its last row: no kernel uses them (an edge of h\n"
	              " * rows runs the exact-height kernel, or the full one into a tile of which\n"
	              " * only h rows are kept), so every panel takes the same loop. */\n"
	              "RL_GEMM_FN RL_GEMM_CLONES void rl_sgemm_pack_a_block(float *restrict dst, const float *restrict a, int64_t rs,\n"
	              "                                     int64_t ks, float alpha, int64_t i0, int64_t mb,\n"
	              "                                     int64_t k0, int64_t kb)\n"
	              "{\n"
	              "    const int64_t mr = rl_gemm_mr;\n"
	              "    for (int64_t ip = 0; ip < mb; ip += mr) {\n"
	              "        const int64_t h = mb - ip < mr ? mb - ip : mr;\n"
	              "        const float *r[RL_GEMM_MR_MAX];\n"
	              "        for (int64_t i = 0; i < mr; i++)\n"
	              "            r[i] = a + (i0 + ip + (i < h ? i : h - 1)) * rs + k0 * ks;\n");
	static const int mrs[2] = {6, 12};
	for (int m = 0; m < 2; m++) {
		int mr = mrs[m];
		rl_buf_printf(b, "        %sif (mr == %d && ks == 1) {\n", m ? "} else " : "", mr);
		for (int i = 0; i < mr; i++)
			rl_buf_printf(b, "%s%s*restrict p%d = r[%d]%s", i % 3 == 0 ? "            " : "",
			              i % 3 == 0 ? "const float " : "", i, i,
			              i % 3 == 2 || i == mr - 1 ? ";\n" : ", ");
		rl_buf_printf(b, "            for (int64_t k = 0; k < kb; k++, dst += %d) {\n", mr);
		for (int i = 0; i < mr; i++)
			rl_buf_printf(b, "%sx%d = p%d[k]%s", i % 6 == 0 ? "                const float " : "",
			              i, i, i % 6 == 5 || i == mr - 1 ? ";\n" : ", ");
		for (int i = 0; i < mr; i++)
			rl_buf_printf(b, "%sdst[%d] = alpha * x%d;%s", i % 3 == 0 ? "                " : " ",
			              i, i, i % 3 == 2 || i == mr - 1 ? "\n" : "");
		rl_buf_printf(b, "            }\n");
	}
	rl_buf_printf(b, "        } else {\n"
	                 "            for (int64_t k = 0; k < kb; k++, dst += mr)\n"
	                 "                for (int64_t i = 0; i < mr; i++)\n"
	                 "                    dst[i] = alpha * r[i][k * ks];\n"
	                 "        }\n"
	                 "    }\n"
	                 "}\n\n");
}

/* The x86 register tiles: full mr x (2 vectors) kernels in the runtime, and
 * the exact-height edge kernels cg_gemm_finish adds (mr divides 12). */
static const struct gemm_isa {
	const char *isa, *target, *what;
	int mr, lanes;
} gemm_isas[2] = {
	{"avx2", "avx2,fma", "/* AVX2 + FMA, 6 x 16: 12 ymm accumulators, 2 B vectors, a broadcast */\n", 6, 8},
	{"avx512", "avx512f,avx512vl,fma",
	 "/* AVX-512, 12 x 32: 24 zmm accumulators, 2 B vectors, a broadcast */\n", 12, 16},
};

/* ---- the runtime text ------------------------------------------------- */

static const char rt_head[] =
	"/* ---- GEMM runtime (rlopt emit_gemm.c): packed fp32 products and batch-1 GEMV ----\n"
	" * A product Y[M,N] (+)= A'[M,K] B'[K,N] runs as blocks: for each kc block of K,\n"
	" * A' (mc x kc) is packed into panels of mr rows and B' (kc x nc) into panels of\n"
	" * nr columns; an mr x nr register tile accumulates over kc with FMAs and updates\n"
	" * Y once. The micro-kernel is picked once at init by CPU (rl_gemm_init). */\n"
	"#if defined(__x86_64__) && defined(__GNUC__) && !defined(RL_NO_INTRIN)\n"
	"#include <immintrin.h>\n"
	"#define RL_GEMM_X86 1\n"
	"#endif\n"
	"#ifdef __GNUC__ /* a file may use only some of the runtime */\n"
	"#define RL_GEMM_FN static __attribute__((unused))\n"
	"#define RL_GEMM_VAR static __attribute__((unused))\n"
	"#else\n"
	"#define RL_GEMM_FN static\n"
	"#define RL_GEMM_VAR static\n"
	"#endif\n"
	"/* the blocked product's driver and A's packing, compiled per ISA like the\n"
	" * kernels (RL_TARGETS, emit_rt.c): at the baseline's SSE they made the\n"
	" * gpt_block example 10% slower under plain -O2 than under -O3\n"
	" * -march=native on an AVX2 CPU (66.7 against 60.4 us, thread CPU time).\n"
	" * Not with Clang: it refuses target_clones next to `unused` (RL_GEMM_FN) */\n"
	"#if defined(RL_TARGETS) && !defined(__clang__)\n"
	"#define RL_GEMM_CLONES RL_TARGETS\n"
	"#else\n"
	"#define RL_GEMM_CLONES\n"
	"#endif\n"
	"#ifndef RL_MAX_THREADS\n"
	"#define RL_MAX_THREADS 64\n"
	"#endif\n"
	"#define RL_GEMM_MR_MAX 12 /* every mr divides 12: row blocks are multiples of 12 */\n"
	"#define RL_GEMM_NR_MAX 32 /* every nr divides 32: column blocks are multiples of 32 */\n"
	"#define RL_GEMV_W 128     /* GEMV panel: 8 accumulators of 16 floats */\n\n"
	"typedef void (*rl_sgemm_ukr_fn)(int64_t kb, const float *restrict a, const float *restrict b,\n"
	"                                float *restrict c, int64_t ldc, int acc);\n"
	"typedef void (*rl_sgemv_fn)(const float *restrict a, const float *restrict b, int64_t K,\n"
	"                            float alpha, float *restrict y, int64_t j0, int64_t j1);\n\n"
	"/* One product, as a kernel hands it to rl_sgemm_block: every field fixed by the\n"
	" * generated code; A'(i,k) = a[i*a_rs + k*a_ks], B'(k,j) = b[k*b_rs + j*b_cs]. */\n"
	"struct rl_sgemm {\n"
	"    int64_t M, N, K;\n"
	"    int64_t mc, kc, nc;      /* cache blocks: mc % 12 == 0, nc % 32 == 0 */\n"
	"    const float *a;\n"
	"    int64_t a_rs, a_ks;\n"
	"    float alpha;             /* applied while A is packed */\n"
	"    const float *b;          /* B' at run time (packed per block), or NULL */\n"
	"    int64_t b_rs, b_cs;\n"
	"    const float *bp;         /* B' packed at init by rl_sgemm_pack_b, or NULL */\n"
	"    float *y;\n"
	"    int64_t ldy;\n"
	"};\n\n";

/* the portable kernels: plain C with constant trip counts */
static const char rt_generic[] =
	"/* portable micro-kernel, 4 x 16: plain C the compiler can vectorize */\n"
	"RL_GEMM_FN void rl_sgemm_ukr_c(int64_t kb, const float *restrict a, const float *restrict b,\n"
	"                               float *restrict c, int64_t ldc, int acc)\n"
	"{\n"
	"    float t[4][16] = {{0}};\n"
	"    for (int64_t k = 0; k < kb; k++, a += 4, b += 16)\n"
	"        for (int i = 0; i < 4; i++)\n"
	"            for (int j = 0; j < 16; j++)\n"
	"                t[i][j] += a[i] * b[j];\n"
	"    for (int i = 0; i < 4; i++)\n"
	"        for (int j = 0; j < 16; j++)\n"
	"            c[i * ldc + j] = acc ? c[i * ldc + j] + t[i][j] : t[i][j];\n"
	"}\n\n"
	"/* y[j] = alpha * dot(a, b[j*K ...]) for j in [j0, j1): rows of B stream in order */\n"
	"RL_GEMM_FN void rl_sgemv_rows_c(const float *restrict a, const float *restrict b, int64_t K,\n"
	"                                float alpha, float *restrict y, int64_t j0, int64_t j1)\n"
	"{\n"
	"    for (int64_t j = j0; j < j1; j++) {\n"
	"        const float *restrict r = b + j * K;\n"
	"        float s[8] = {0};\n"
	"        int64_t k = 0;\n"
	"        for (; k + 8 <= K; k += 8)\n"
	"            for (int l = 0; l < 8; l++)\n"
	"                s[l] += a[k + l] * r[k + l];\n"
	"        float d = 0.0f;\n"
	"        for (int l = 0; l < 8; l++)\n"
	"            d += s[l];\n"
	"        for (; k < K; k++)\n"
	"            d += a[k] * r[k];\n"
	"        y[j] = alpha * d;\n"
	"    }\n"
	"}\n\n"
	"/* GEMV over panels of RL_GEMV_W columns stored k-major (rl_sgemv_pack):\n"
	" * panel q holds columns [q W, q W + w) as w contiguous floats per k */\n"
	"RL_GEMM_FN void rl_sgemv_panels_c(const float *restrict a, const float *restrict b, int64_t K,\n"
	"                                  float alpha, float *restrict y, int64_t j0, int64_t j1)\n"
	"{\n"
	"    for (int64_t q0 = j0; q0 < j1; q0 += RL_GEMV_W) {\n"
	"        const int64_t w = j1 - q0 < RL_GEMV_W ? j1 - q0 : RL_GEMV_W;\n"
	"        const float *restrict p = b + q0 * K;\n"
	"        float s[RL_GEMV_W] = {0};\n"
	"        for (int64_t k = 0; k < K; k++, p += w)\n"
	"            for (int64_t j = 0; j < w; j++)\n"
	"                s[j] += a[k] * p[j];\n"
	"        for (int64_t j = 0; j < w; j++)\n"
	"            y[q0 + j] = alpha * s[j];\n"
	"    }\n"
	"}\n\n";

/* AVX-512 and AVX2 GEMV kernels (the micro-kernels are generated) */
static const char rt_x86_gemv[] =
	"#ifdef RL_GEMM_X86\n"
	"/* 4 rows of B at a time, 2 vectors each: 8 independent FMA chains */\n"
	"__attribute__((target(\"avx512f,avx512vl,fma\"))) RL_GEMM_FN void rl_sgemv_rows_avx512(\n"
	"    const float *restrict a, const float *restrict b, int64_t K, float alpha,\n"
	"    float *restrict y, int64_t j0, int64_t j1)\n"
	"{\n"
	"    const __mmask16 tail = (__mmask16)((1u << (K % 16)) - 1u);\n"
	"    const int64_t k32 = K / 32 * 32, k16 = K / 16 * 16;\n"
	"    int64_t j = j0;\n"
	"    for (; j + 4 <= j1; j += 4) {\n"
	"        const float *restrict r0 = b + j * K, *restrict r1 = r0 + K, *restrict r2 = r1 + K,\n"
	"                    *restrict r3 = r2 + K;\n"
	"        __m512 s00 = _mm512_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00,\n"
	"               s21 = s00, s30 = s00, s31 = s00;\n"
	"        int64_t k = 0;\n"
	"        for (; k < k32; k += 32) {\n"
	"            const __m512 x0 = _mm512_loadu_ps(a + k), x1 = _mm512_loadu_ps(a + k + 16);\n"
	"            s00 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r0 + k), s00);\n"
	"            s01 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r0 + k + 16), s01);\n"
	"            s10 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r1 + k), s10);\n"
	"            s11 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r1 + k + 16), s11);\n"
	"            s20 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r2 + k), s20);\n"
	"            s21 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r2 + k + 16), s21);\n"
	"            s30 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r3 + k), s30);\n"
	"            s31 = _mm512_fmadd_ps(x1, _mm512_loadu_ps(r3 + k + 16), s31);\n"
	"        }\n"
	"        if (k < k16) {\n"
	"            const __m512 x0 = _mm512_loadu_ps(a + k);\n"
	"            s00 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r0 + k), s00);\n"
	"            s10 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r1 + k), s10);\n"
	"            s20 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r2 + k), s20);\n"
	"            s30 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(r3 + k), s30);\n"
	"            k += 16;\n"
	"        }\n"
	"        if (k < K) {\n"
	"            const __m512 x0 = _mm512_maskz_loadu_ps(tail, a + k);\n"
	"            s01 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, r0 + k), s01);\n"
	"            s11 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, r1 + k), s11);\n"
	"            s21 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, r2 + k), s21);\n"
	"            s31 = _mm512_fmadd_ps(x0, _mm512_maskz_loadu_ps(tail, r3 + k), s31);\n"
	"        }\n"
	"        y[j] = alpha * _mm512_reduce_add_ps(_mm512_add_ps(s00, s01));\n"
	"        y[j + 1] = alpha * _mm512_reduce_add_ps(_mm512_add_ps(s10, s11));\n"
	"        y[j + 2] = alpha * _mm512_reduce_add_ps(_mm512_add_ps(s20, s21));\n"
	"        y[j + 3] = alpha * _mm512_reduce_add_ps(_mm512_add_ps(s30, s31));\n"
	"    }\n"
	"    for (; j < j1; j++) {\n"
	"        const float *restrict r0 = b + j * K;\n"
	"        __m512 s0 = _mm512_setzero_ps(), s1 = s0;\n"
	"        int64_t k = 0;\n"
	"        for (; k < k16; k += 16)\n"
	"            s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + k), _mm512_loadu_ps(r0 + k), s0);\n"
	"        if (k < K)\n"
	"            s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, a + k),\n"
	"                                 _mm512_maskz_loadu_ps(tail, r0 + k), s1);\n"
	"        y[j] = alpha * _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));\n"
	"    }\n"
	"}\n\n"
	"/* AVX2: the same, 4 rows of B at a time, 2 ymm each (8 FMA chains); the last\n"
	" * K % 8 through a masked load. Without it an AVX2 CPU ran rl_sgemv_rows_c,\n"
	" * compiled for the baseline (SSE) under plain -O2. */\n"
	"RL_GEMM_VAR const int32_t rl_gemv_mask8[16] = {-1, -1, -1, -1, -1, -1, -1, -1};\n"
	"static inline __attribute__((target(\"avx2,fma\"), unused)) float rl_hsum_avx2(__m256 v)\n"
	"{\n"
	"    const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));\n"
	"    const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));\n"
	"    return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));\n"
	"}\n"
	"__attribute__((target(\"avx2,fma\"))) RL_GEMM_FN void rl_sgemv_rows_avx2(\n"
	"    const float *restrict a, const float *restrict b, int64_t K, float alpha,\n"
	"    float *restrict y, int64_t j0, int64_t j1)\n"
	"{\n"
	"    const __m256i tail = _mm256_loadu_si256((const __m256i *)(rl_gemv_mask8 + 8 - K % 8));\n"
	"    const int64_t k16 = K / 16 * 16, k8 = K / 8 * 8;\n"
	"    int64_t j = j0;\n"
	"    for (; j + 4 <= j1; j += 4) {\n"
	"        const float *restrict r0 = b + j * K, *restrict r1 = r0 + K, *restrict r2 = r1 + K,\n"
	"                    *restrict r3 = r2 + K;\n"
	"        __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00, s20 = s00,\n"
	"               s21 = s00, s30 = s00, s31 = s00;\n"
	"        int64_t k = 0;\n"
	"        for (; k < k16; k += 16) {\n"
	"            const __m256 x0 = _mm256_loadu_ps(a + k), x1 = _mm256_loadu_ps(a + k + 8);\n"
	"            s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r0 + k), s00);\n"
	"            s01 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r0 + k + 8), s01);\n"
	"            s10 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r1 + k), s10);\n"
	"            s11 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r1 + k + 8), s11);\n"
	"            s20 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r2 + k), s20);\n"
	"            s21 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r2 + k + 8), s21);\n"
	"            s30 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r3 + k), s30);\n"
	"            s31 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(r3 + k + 8), s31);\n"
	"        }\n"
	"        if (k < k8) {\n"
	"            const __m256 x0 = _mm256_loadu_ps(a + k);\n"
	"            s00 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r0 + k), s00);\n"
	"            s10 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r1 + k), s10);\n"
	"            s20 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r2 + k), s20);\n"
	"            s30 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(r3 + k), s30);\n"
	"            k += 8;\n"
	"        }\n"
	"        if (k < K) {\n"
	"            const __m256 x0 = _mm256_maskload_ps(a + k, tail);\n"
	"            s01 = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r0 + k, tail), s01);\n"
	"            s11 = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r1 + k, tail), s11);\n"
	"            s21 = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r2 + k, tail), s21);\n"
	"            s31 = _mm256_fmadd_ps(x0, _mm256_maskload_ps(r3 + k, tail), s31);\n"
	"        }\n"
	"        y[j] = alpha * rl_hsum_avx2(_mm256_add_ps(s00, s01));\n"
	"        y[j + 1] = alpha * rl_hsum_avx2(_mm256_add_ps(s10, s11));\n"
	"        y[j + 2] = alpha * rl_hsum_avx2(_mm256_add_ps(s20, s21));\n"
	"        y[j + 3] = alpha * rl_hsum_avx2(_mm256_add_ps(s30, s31));\n"
	"    }\n"
	"    for (; j < j1; j++) {\n"
	"        const float *restrict r0 = b + j * K;\n"
	"        __m256 s0 = _mm256_setzero_ps(), s1 = s0;\n"
	"        int64_t k = 0;\n"
	"        for (; k < k8; k += 8)\n"
	"            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(r0 + k), s0);\n"
	"        if (k < K)\n"
	"            s1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + k, tail),\n"
	"                                 _mm256_maskload_ps(r0 + k, tail), s1);\n"
	"        y[j] = alpha * rl_hsum_avx2(_mm256_add_ps(s0, s1));\n"
	"    }\n"
	"}\n\n"
	"/* Panels of RL_GEMV_W = 128 columns, two at a time while two are left: 16\n"
	" * zmm accumulators, one broadcast of a[k], two streams of B. On Zen 4 a second\n"
	" * stream keeps more misses in flight than one: 10-15% more read bandwidth\n"
	" * than one panel at a time over a 151 MB B (one process, the two kernels\n"
	" * interleaved, best thread CPU time of 20; a loaded host). Each column sums\n"
	" * over k in the same order either way. (Loads are 16 bytes off the line:\n"
	" * the side file's header; the same loop on line-aligned panels read 8-15%\n"
	" * slower in that test, and software prefetch 4-32 KB ahead slower still.) */\n"
	"#define RL_GEMV_FMA8(s, q) \\\n"
	"    s##0 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q), s##0);        \\\n"
	"    s##1 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 16), s##1);   \\\n"
	"    s##2 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 32), s##2);   \\\n"
	"    s##3 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 48), s##3);   \\\n"
	"    s##4 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 64), s##4);   \\\n"
	"    s##5 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 80), s##5);   \\\n"
	"    s##6 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 96), s##6);   \\\n"
	"    s##7 = _mm512_fmadd_ps(x, _mm512_loadu_ps(q + 112), s##7)\n"
	"#define RL_GEMV_STORE8(s, yq)                                        \\\n"
	"    _mm512_storeu_ps(yq, _mm512_mul_ps(al, s##0));                  \\\n"
	"    _mm512_storeu_ps(yq + 16, _mm512_mul_ps(al, s##1));             \\\n"
	"    _mm512_storeu_ps(yq + 32, _mm512_mul_ps(al, s##2));             \\\n"
	"    _mm512_storeu_ps(yq + 48, _mm512_mul_ps(al, s##3));             \\\n"
	"    _mm512_storeu_ps(yq + 64, _mm512_mul_ps(al, s##4));             \\\n"
	"    _mm512_storeu_ps(yq + 80, _mm512_mul_ps(al, s##5));             \\\n"
	"    _mm512_storeu_ps(yq + 96, _mm512_mul_ps(al, s##6));             \\\n"
	"    _mm512_storeu_ps(yq + 112, _mm512_mul_ps(al, s##7))\n"
	"__attribute__((target(\"avx512f,avx512vl,fma\"))) RL_GEMM_FN void rl_sgemv_panels_avx512(\n"
	"    const float *restrict a, const float *restrict b, int64_t K, float alpha,\n"
	"    float *restrict y, int64_t j0, int64_t j1)\n"
	"{\n"
	"    const __m512 al = _mm512_set1_ps(alpha);\n"
	"    int64_t q0 = j0;\n"
	"    for (; q0 + 2 * RL_GEMV_W <= j1; q0 += 2 * RL_GEMV_W) {\n"
	"        const float *restrict p = b + q0 * K, *restrict pq = p + RL_GEMV_W * K;\n"
	"        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0,\n"
	"               s7 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0, t4 = s0, t5 = s0, t6 = s0, t7 = s0;\n"
	"        for (int64_t k = 0; k < K; k++, p += RL_GEMV_W, pq += RL_GEMV_W) {\n"
	"            const __m512 x = _mm512_set1_ps(a[k]);\n"
	"            RL_GEMV_FMA8(s, p);\n"
	"            RL_GEMV_FMA8(t, pq);\n"
	"        }\n"
	"        RL_GEMV_STORE8(s, y + q0);\n"
	"        RL_GEMV_STORE8(t, y + q0 + RL_GEMV_W);\n"
	"    }\n"
	"    for (; q0 + RL_GEMV_W <= j1; q0 += RL_GEMV_W) {\n"
	"        const float *restrict p = b + q0 * K;\n"
	"        __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0,\n"
	"               s7 = s0;\n"
	"        for (int64_t k = 0; k < K; k++, p += RL_GEMV_W) {\n"
	"            const __m512 x = _mm512_set1_ps(a[k]);\n"
	"            RL_GEMV_FMA8(s, p);\n"
	"        }\n"
	"        RL_GEMV_STORE8(s, y + q0);\n"
	"    }\n"
	"    if (q0 < j1) /* the narrow last panel */\n"
	"        rl_sgemv_panels_c(a, b, K, alpha, y, q0, j1);\n"
	"}\n\n"
	"/* AVX2: 16 ymm accumulators over a 128-column panel, one broadcast of a[k]\n"
	" * (17 registers: one accumulator may spill; the loop is bound by the bytes\n"
	" * of B). Written out, not as loops over an array of accumulators: plain -O2\n"
	" * does not unroll those, and the accumulators then lived on the stack (a\n"
	" * load and a store around every FMA), 15-25% slower on Zen 3 than the same\n"
	" * file at -O3 -march=native (a 144 MiB B, one thread). */\n"
	"#define RL_GEMV_FMA8_AVX2(s, q) \\\n"
	"    s##0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q), s##0);        \\\n"
	"    s##1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 8), s##1);    \\\n"
	"    s##2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 16), s##2);   \\\n"
	"    s##3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 24), s##3);   \\\n"
	"    s##4 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 32), s##4);   \\\n"
	"    s##5 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 40), s##5);   \\\n"
	"    s##6 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 48), s##6);   \\\n"
	"    s##7 = _mm256_fmadd_ps(x, _mm256_loadu_ps(q + 56), s##7)\n"
	"#define RL_GEMV_STORE8_AVX2(s, yq)                                   \\\n"
	"    _mm256_storeu_ps(yq, _mm256_mul_ps(al, s##0));                  \\\n"
	"    _mm256_storeu_ps(yq + 8, _mm256_mul_ps(al, s##1));              \\\n"
	"    _mm256_storeu_ps(yq + 16, _mm256_mul_ps(al, s##2));             \\\n"
	"    _mm256_storeu_ps(yq + 24, _mm256_mul_ps(al, s##3));             \\\n"
	"    _mm256_storeu_ps(yq + 32, _mm256_mul_ps(al, s##4));             \\\n"
	"    _mm256_storeu_ps(yq + 40, _mm256_mul_ps(al, s##5));             \\\n"
	"    _mm256_storeu_ps(yq + 48, _mm256_mul_ps(al, s##6));             \\\n"
	"    _mm256_storeu_ps(yq + 56, _mm256_mul_ps(al, s##7))\n"
	"__attribute__((target(\"avx2,fma\"))) RL_GEMM_FN void rl_sgemv_panels_avx2(\n"
	"    const float *restrict a, const float *restrict b, int64_t K, float alpha,\n"
	"    float *restrict y, int64_t j0, int64_t j1)\n"
	"{\n"
	"    const __m256 al = _mm256_set1_ps(alpha);\n"
	"    int64_t q0 = j0;\n"
	"    for (; q0 + RL_GEMV_W <= j1; q0 += RL_GEMV_W) {\n"
	"        const float *restrict p = b + q0 * K;\n"
	"        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0,\n"
	"               s7 = s0, t0 = s0, t1 = s0, t2 = s0, t3 = s0, t4 = s0, t5 = s0, t6 = s0, t7 = s0;\n"
	"        for (int64_t k = 0; k < K; k++, p += RL_GEMV_W) {\n"
	"            const __m256 x = _mm256_set1_ps(a[k]);\n"
	"            RL_GEMV_FMA8_AVX2(s, p);\n"
	"            RL_GEMV_FMA8_AVX2(t, p + 64);\n"
	"        }\n"
	"        RL_GEMV_STORE8_AVX2(s, y + q0);\n"
	"        RL_GEMV_STORE8_AVX2(t, y + q0 + 64);\n"
	"    }\n"
	"    if (q0 < j1)\n"
	"        rl_sgemv_panels_c(a, b, K, alpha, y, q0, j1);\n"
	"}\n"
	"#endif /* RL_GEMM_X86 */\n\n";

static const char rt_body[] =
	"/* the kernels in use, chosen once by rl_gemm_init */\n"
	"RL_GEMM_VAR int rl_gemm_mr = 4, rl_gemm_nr = 16;\n"
	"RL_GEMM_VAR rl_sgemm_ukr_fn rl_sgemm_ukr = rl_sgemm_ukr_c;\n"
	"RL_GEMM_VAR rl_sgemv_fn rl_sgemv_rows = rl_sgemv_rows_c, rl_sgemv_panels = rl_sgemv_panels_c;\n"
	"RL_GEMM_VAR const char *rl_gemm_isa = \"portable\";\n"
	"/* exact-height edge kernels: rl_sgemm_ukr_rows[h] computes the first h < mr\n"
	" * rows of a panel straight into Y (NULL: the edge goes through a tile on\n"
	" * the stack); only the heights this file's products have are emitted,\n"
	" * at its end, with rl_gemm_rows_init */\n"
	"RL_GEMM_VAR rl_sgemm_ukr_fn rl_sgemm_ukr_rows[RL_GEMM_MR_MAX];\n"
	"RL_GEMM_FN void rl_gemm_rows_init(void);\n\n"
	"RL_GEMM_FN void rl_gemm_init(void)\n"
	"{\n"
	"#ifdef RL_GEMM_X86\n"
	"    __builtin_cpu_init();\n"
	"#ifdef RL_GEMM_NO_AVX512 /* the AVX2 kernels on any CPU that has AVX2 (tests) */\n"
	"    if (0) {\n"
	"#else\n"
	"    if (__builtin_cpu_supports(\"avx512f\") && __builtin_cpu_supports(\"avx512vl\") &&\n"
	"        __builtin_cpu_supports(\"fma\")) {\n"
	"#endif\n"
	"        rl_gemm_mr = 12, rl_gemm_nr = 32, rl_sgemm_ukr = rl_sgemm_ukr_avx512;\n"
	"        rl_sgemv_rows = rl_sgemv_rows_avx512, rl_sgemv_panels = rl_sgemv_panels_avx512;\n"
	"        rl_gemm_isa = \"avx512\";\n"
	"    } else if (__builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\")) {\n"
	"        rl_gemm_mr = 6, rl_gemm_nr = 16, rl_sgemm_ukr = rl_sgemm_ukr_avx2;\n"
	"        rl_sgemv_rows = rl_sgemv_rows_avx2, rl_sgemv_panels = rl_sgemv_panels_avx2;\n"
	"        rl_gemm_isa = \"avx2\";\n"
	"    }\n"
	"#endif\n"
	"    rl_gemm_rows_init();\n"
	"}\n\n"
	"/* ---- scratch: one slot per running thread, for A and B packed at run time ---- */\n"
	"RL_GEMM_VAR float *rl_gemm_slot[RL_MAX_THREADS];\n"
	"RL_GEMM_VAR size_t rl_gemm_slot_floats;\n\n"
	"/* make every slot hold at least n floats (called from NAME_init); slots are\n"
	" * large allocations, so the pages of slots no thread uses are never touched */\n"
	"RL_GEMM_FN int rl_gemm_reserve(size_t n)\n"
	"{\n"
	"    if (n <= rl_gemm_slot_floats)\n"
	"        return 0;\n"
	"    n = (n + 15) / 16 * 16;\n"
	"    for (int s = 0; s < RL_MAX_THREADS; s++) {\n"
	"        free(rl_gemm_slot[s]);\n"
	"        rl_gemm_slot[s] = aligned_alloc(64, n * sizeof(float));\n"
	"        if (!rl_gemm_slot[s]) {\n"
	"            rl_gemm_slot_floats = 0;\n"
	"            return -1;\n"
	"        }\n"
	"    }\n"
	"    rl_gemm_slot_floats = n;\n"
	"    return 0;\n"
	"}\n\n"
	"RL_GEMM_FN void rl_gemm_release_all(void)\n"
	"{\n"
	"    for (int s = 0; s < RL_MAX_THREADS; s++) {\n"
	"        free(rl_gemm_slot[s]);\n"
	"        rl_gemm_slot[s] = NULL;\n"
	"    }\n"
	"    rl_gemm_slot_floats = 0;\n"
	"}\n\n"
	"/* the running thread's slot (rl_self: the same in every kernel, so packed\n"
	" * panels stay in that core's caches); at most one range per thread runs */\n"
	"RL_GEMM_FN int rl_gemm_slot_own(void)\n"
	"{\n"
	"#ifdef RL_THREADS\n"
	"    return rl_self;\n"
	"#else\n"
	"    return 0;\n"
	"#endif\n"
	"}\n\n"
	"/* ---- packing ---- */\n\n"
	"/* B'(k0.., j0..) (kb x nb) to panels of nr columns, each kb x nr k-major and\n"
	" * zero-padded to nr: dst[(j / nr) * kb * nr + k * nr + j % nr] */\n"
	"RL_GEMM_FN void rl_sgemm_pack_b_block(float *restrict dst, const float *restrict b, int64_t rs,\n"
	"                                     int64_t cs, int64_t k0, int64_t kb, int64_t j0, int64_t nb)\n"
	"{\n"
	"    const int64_t nr = rl_gemm_nr;\n"
	"    for (int64_t jp = 0; jp < nb; jp += nr) {\n"
	"        const int64_t w = nb - jp < nr ? nb - jp : nr;\n"
	"        for (int64_t k = 0; k < kb; k++, dst += nr) {\n"
	"            const float *restrict s = b + (k0 + k) * rs + (j0 + jp) * cs;\n"
	"            if (cs == 1)\n"
	"                memcpy(dst, s, (size_t)w * sizeof(float));\n"
	"            else\n"
	"                for (int64_t j = 0; j < w; j++)\n"
	"                    dst[j] = s[j * cs];\n"
	"            for (int64_t j = w; j < nr; j++)\n"
	"                dst[j] = 0.0f;\n"
	"        }\n"
	"    }\n"
	"}\n\n"
	"/* Floats of B' [K x N] packed whole by rl_sgemm_pack_b (after rl_gemm_init). */\n"
	"RL_GEMM_FN size_t rl_sgemm_packed_b_floats(int64_t K, int64_t N)\n"
	"{\n"
	"    return (size_t)K * (size_t)((N + rl_gemm_nr - 1) / rl_gemm_nr * rl_gemm_nr);\n"
	"}\n\n"
	"/* Pack all of a constant B' once: kc blocks one after the other, each as\n"
	" * rl_sgemm_pack_b_block lays it out over all N columns. */\n"
	"RL_GEMM_FN void rl_sgemm_pack_b(float *restrict dst, const float *restrict b, int64_t rs,\n"
	"                                int64_t cs, int64_t K, int64_t N, int64_t kc)\n"
	"{\n"
	"    const int64_t npad = (N + rl_gemm_nr - 1) / rl_gemm_nr * rl_gemm_nr;\n"
	"    for (int64_t k0 = 0; k0 < K; k0 += kc) {\n"
	"        const int64_t kb = K - k0 < kc ? K - k0 : kc;\n"
	"        rl_sgemm_pack_b_block(dst + k0 * npad, b, rs, cs, k0, kb, 0, N);\n"
	"    }\n"
	"}\n\n"
	"";

/* rl_sgemm_pack_a_block: see gen_pack_a */
static const char rt_body2[] =
	"/* Pack a constant K x N B (row-major, or N x K when trans) for rl_sgemv_panels:\n"
	" * panels of RL_GEMV_W columns, the last one narrower, each k-major and\n"
	" * contiguous, K * N floats in all (no padding, so it may overwrite B). */\n"
	"RL_GEMM_FN void rl_sgemv_pack(float *restrict dst, const float *restrict b, int64_t K, int64_t N)\n"
	"{\n"
	"    for (int64_t q0 = 0; q0 < N; q0 += RL_GEMV_W) {\n"
	"        const int64_t w = N - q0 < RL_GEMV_W ? N - q0 : RL_GEMV_W;\n"
	"        for (int64_t k = 0; k < K; k++, dst += w)\n"
	"            memcpy(dst, b + k * N + q0, (size_t)w * sizeof(float));\n"
	"    }\n"
	"}\n\n"
	"/* The same layout as rl_sgemv_pack, made in place when N % RL_GEMV_W == 0:\n"
	" * a transpose of the K x (N / W) matrix of W-float blocks, cycle by cycle,\n"
	" * so the weights never exist twice (a bit per block marks those placed). */\n"
	"RL_GEMM_FN int rl_sgemv_pack_in_place(float *b, int64_t K, int64_t N)\n"
	"{\n"
	"    const int64_t W = RL_GEMV_W, Q = N / W, n = K * Q;\n"
	"    unsigned char *done = calloc((size_t)(n + 7) / 8, 1);\n"
	"    if (!done)\n"
	"        return -1;\n"
	"    float hold[RL_GEMV_W], t[RL_GEMV_W];\n"
	"    for (int64_t s = 0; s < n; s++) {\n"
	"        if (done[s >> 3] & (1u << (s & 7)))\n"
	"            continue;\n"
	"        memcpy(hold, b + s * W, sizeof(hold));\n"
	"        int64_t p = s;\n"
	"        do { /* block p (row k = p / Q, panel q = p % Q) goes to q * K + k */\n"
	"            const int64_t d = p % Q * K + p / Q;\n"
	"            memcpy(t, b + d * W, sizeof(t));\n"
	"            memcpy(b + d * W, hold, sizeof(hold));\n"
	"            memcpy(hold, t, sizeof(t));\n"
	"            done[d >> 3] |= (unsigned char)(1u << (d & 7));\n"
	"            p = d;\n"
	"        } while (p != s);\n"
	"    }\n"
	"    free(done);\n"
	"    return 0;\n"
	"}\n\n"
	"/* ---- the blocked product ---- */\n\n"
	"/*\n"
	" * Y[i0 .. i0+mb, j0 .. j0+nb] = A' B' over all of K (plus the Y already there\n"
	" * when acc), mb <= mc and nb <= nc. ws: a scratch slot. Loop order inside\n"
	" * a kc block: column panels (B micro-panel kc x nr stays in L1) outside,\n"
	" * row panels (A streams from the packed block in L2) inside.\n"
	" */\n"
	"RL_GEMM_FN RL_GEMM_CLONES void rl_sgemm_block(const struct rl_sgemm *p, float *ws, int64_t i0, int64_t mb,\n"
	"                               int64_t j0, int64_t nb, int acc)\n"
	"{\n"
	"    const int64_t mr = rl_gemm_mr, nr = rl_gemm_nr, ldy = p->ldy;\n"
	"    const int64_t npad = (p->N + nr - 1) / nr * nr;\n"
	"    float *restrict ap = ws, *restrict bq = ws + p->mc * p->kc;\n"
	"    for (int64_t k0 = 0; k0 < p->K; k0 += p->kc) {\n"
	"        const int64_t kb = p->K - k0 < p->kc ? p->K - k0 : p->kc;\n"
	"        const int ac = acc || k0 > 0;\n"
	"        rl_sgemm_pack_a_block(ap, p->a, p->a_rs, p->a_ks, p->alpha, i0, mb, k0, kb);\n"
	"        const float *bb;\n"
	"        if (p->bp) {\n"
	"            bb = p->bp + k0 * npad + j0 * kb;\n"
	"        } else {\n"
	"            rl_sgemm_pack_b_block(bq, p->b, p->b_rs, p->b_cs, k0, kb, j0, nb);\n"
	"            bb = bq;\n"
	"        }\n"
	"        for (int64_t jr = 0; jr < nb; jr += nr) {\n"
	"            const int64_t w = nb - jr < nr ? nb - jr : nr;\n"
	"            for (int64_t ir = 0; ir < mb; ir += mr) {\n"
	"                const int64_t h = mb - ir < mr ? mb - ir : mr;\n"
	"                float *c = p->y + (i0 + ir) * ldy + j0 + jr;\n"
	"                if (h == mr && w == nr) {\n"
	"                    rl_sgemm_ukr(kb, ap + ir * kb, bb + jr * kb, c, ldy, ac);\n"
	"                } else if (w == nr && rl_sgemm_ukr_rows[h]) { /* an edge of h rows */\n"
	"                    rl_sgemm_ukr_rows[h](kb, ap + ir * kb, bb + jr * kb, c, ldy, ac);\n"
	"                } else { /* an edge: the full tile on the stack, the valid part copied */\n"
	"                    float t[RL_GEMM_MR_MAX * RL_GEMM_NR_MAX];\n"
	"                    for (int64_t i = 0; i < h; i++)\n"
	"                        for (int64_t j = 0; j < w; j++)\n"
	"                            t[i * nr + j] = ac ? c[i * ldy + j] : 0.0f;\n"
	"                    rl_sgemm_ukr(kb, ap + ir * kb, bb + jr * kb, t, nr, 1);\n"
	"                    for (int64_t i = 0; i < h; i++)\n"
	"                        for (int64_t j = 0; j < w; j++)\n"
	"                            c[i * ldy + j] = t[i * nr + j];\n"
	"                }\n"
	"            }\n"
	"        }\n"
	"    }\n"
	"}\n"
	"/* ---- end of the GEMM runtime ---- */\n\n";

#define RT_MARK "GEMM runtime (rlopt emit_gemm.c)"

void cg_gemm_runtime(struct rl_cgen *cg)
{
	if (cg->statics.s && strstr(cg->statics.s, RT_MARK))
		return;
	struct rl_buf *b = &cg->statics;
	rl_buf_printf(b, "%s", rt_head);
	rl_buf_printf(b, "%s", rt_generic);
	rl_buf_printf(b, "#ifdef RL_GEMM_X86\n");
	for (int i = (int)(sizeof(gemm_isas) / sizeof(gemm_isas[0])) - 1; i >= 0; i--) {
		const struct gemm_isa *is = &gemm_isas[i];
		char name[64];
		snprintf(name, sizeof(name), "rl_sgemm_ukr_%s", is->isa);
		rl_buf_printf(b, "%s", is->what);
		gen_ukr_x86(b, name, is->target, is->mr, is->mr, 2, is->lanes);
	}
	rl_buf_printf(b, "#endif\n\n");
	rl_buf_printf(b, "%s", rt_x86_gemv);
	rl_buf_printf(b, "%s", rt_body);
	gen_pack_a(b);
	rl_buf_printf(b, "%s", rt_body2);
}

/*
 * Edges of exact height. A product of M rows leaves a last row panel of
 * M % mr rows (every row block but the last is a multiple of 12, and every
 * mr divides 12). That panel used to go through a full mr x nr tile on the
 * stack: the padded rows' FMAs (the packed A is zero there) and a copy of
 * the tile in and out of Y. A kernel of exactly h rows reads the same
 * packed panel (mr floats per k, its first h used) and writes Y in place.
 * Measured on gpt_block (M = 16 on AVX2's 6-row tiles: 6 + 6 + 4), one
 * thread, Zen 3: see the figures in the README's "GEMM" paragraph. Only
 * the heights this file's products leave are emitted (a 12-row AVX-512
 * tile has 11 possible edges), each 4-way unrolled like the full kernel.
 */
void cg_gemm_finish(struct rl_cgen *cg)
{
	if (!cg->statics.s || !strstr(cg->statics.s, RT_MARK))
		return;
	struct rl_buf *b = &cg->statics;
	const struct gemm_isa *t = gemm_isas;
	char name[64];
	if (cg->gemm_rows[0] | cg->gemm_rows[1]) {
		rl_buf_printf(b, "/* ---- GEMM edge kernels: the last row panels (M %% mr rows) of this "
		                 "file's products ---- */\n");
		rl_buf_printf(b, "#ifdef RL_GEMM_X86\n");
		for (int i = 0; i < 2; i++)
			for (int h = 1; h < t[i].mr; h++)
				if (cg->gemm_rows[i] & (1u << h)) {
					snprintf(name, sizeof(name), "rl_sgemm_ukr_%s_r%d", t[i].isa, h);
					gen_ukr_x86(b, name, t[i].target, h, t[i].mr, 2, t[i].lanes);
				}
		rl_buf_printf(b, "#endif\n\n");
	}
	rl_buf_printf(b, "/* the edge kernels for the micro-kernel rl_gemm_init chose */\n"
	                 "RL_GEMM_FN void rl_gemm_rows_init(void)\n{\n");
	if (cg->gemm_rows[0] | cg->gemm_rows[1]) {
		rl_buf_printf(b, "#ifdef RL_GEMM_X86\n");
		for (int i = 0; i < 2; i++) {
			if (!cg->gemm_rows[i])
				continue;
			rl_buf_printf(b, "    if (rl_sgemm_ukr == rl_sgemm_ukr_%s) {\n", t[i].isa);
			for (int h = 1; h < t[i].mr; h++)
				if (cg->gemm_rows[i] & (1u << h))
					rl_buf_printf(b, "        rl_sgemm_ukr_rows[%d] = rl_sgemm_ukr_%s_r%d;\n", h,
					              t[i].isa, h);
			rl_buf_printf(b, "    }\n");
		}
		rl_buf_printf(b, "#endif\n");
	}
	rl_buf_printf(b, "}\n\n");
}

/* ---- planning ---------------------------------------------------------- */

static int64_t round_up(int64_t x, int64_t m)
{
	return (x + m - 1) / m * m;
}

static int64_t cdiv(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

void cg_gemm_plan(const struct rl_tile *tile, int64_t M, int64_t N, int64_t K,
                  struct cg_gemm_plan *pl)
{
	memset(pl, 0, sizeof(*pl));
	bool from_tile = tile && tile->kind == RL_TILE_GEMM && tile->kc > 0 && tile->mc > 0 &&
	                 tile->nc > 0;
	int64_t kc, mc, nc;
	if (from_tile) {
		kc = tile->kc;
		mc = tile->mc;
		nc = tile->nc;
		pl->why = "the tile pass (node->tile)";
	} else {
		/* kc 256: a kc x 32 B micro-panel is 32 KiB, streamed through L1 with
		 * the A panel (kc 128, 168 and 256 measured within noise on Zen 4
		 * for 1024^3); mc: the packed A block (mc x kc) in half of a 1 MiB
		 * L2; nc: as wide as the thread split allows (A is packed again for
		 * each column block) */
		kc = RL_GEMM_KC_DEFAULT;
		mc = (512 * 1024 / 4) / kc;
		nc = 1024;
		pl->why = "defaults for a 32 KiB L1 and a 1 MiB L2";
	}
	if (kc > K)
		kc = K;
	if (kc < 1)
		kc = 1;
	/* split M evenly into blocks of at most mc rows, multiples of 12; an mc
	 * that covers M stays one block (rounded down, the tile pass's mc = 20
	 * for M = 20 was two blocks of 12 and 8, each streaming all of B: a
	 * 20 x 8210 x 1024 Gemm whose 33 MB of weights come from DRAM ran 5.8
	 * ms where one block of 24 takes 4.75, Zen 3, one thread) */
	mc = mc >= M ? round_up(M, RL_GEMM_MR_LCM) : mc / RL_GEMM_MR_LCM * RL_GEMM_MR_LCM;
	int64_t nib = cdiv(M, mc < RL_GEMM_MR_LCM ? RL_GEMM_MR_LCM : mc);
	mc = round_up(cdiv(M, nib), RL_GEMM_MR_LCM);
	nc = round_up(nc < 32 ? 32 : nc, RL_GEMM_NR_LCM);
	if (nc > round_up(N, RL_GEMM_NR_LCM))
		nc = round_up(N, RL_GEMM_NR_LCM);
	/* threads: at least 4 tasks (2 per core on 2 cores) when the product is
	 * large enough that each still has ~1 MFLOP; narrower column blocks
	 * first (B is shared by row blocks), then shorter row blocks. More tasks
	 * cost more A packing (measured 4% at 1024^3 going from 4 to 8). */
	double flops = 2.0 * (double)M * (double)N * (double)K;
	int64_t want = flops >= 4e6 ? 4 : 1;
	while (cdiv(M, mc) * cdiv(N, nc) < want && nc > 64)
		nc = round_up(nc / 2, RL_GEMM_NR_LCM);
	while (cdiv(M, mc) * cdiv(N, nc) < want && mc > 48)
		mc = round_up(mc / 2, RL_GEMM_MR_LCM);
	pl->kc = kc;
	pl->mc = mc;
	pl->nc = nc;
	pl->nib = cdiv(M, mc);
	pl->njb = cdiv(N, nc);
}

/* ---- constant packing at init ------------------------------------------ */

/* Live nodes reading v, and whether v leaves the graph. */
static int uses_of(const struct rl_graph *g, uint32_t v)
{
	int n = 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const struct rl_node *nd = &g->nodes[i];
		if (nd->dead)
			continue;
		for (int q = 0; q < nd->nin; q++)
			n += nd->in[q] == v;
	}
	if (g->values[v].flags & RL_VAL_OUTPUT)
		n++;
	return n;
}

/*
 * Emit `static float *<kname>_bp`, the init statements that fill it with the
 * layout `pack_call` writes (a printf format with %s for dst then %s for the
 * source), and its release. In place (over the side-file copy of the
 * constant, which NAME_init read into memory we own) when the packed size
 * equals the constant's size and nothing else reads the constant: the
 * weights then cost their size once, not twice.
 */
static void pack_const(struct rl_cgen *cg, uint32_t v, const char *size_expr, bool same_size,
                       const char *pack_fmt, const char *permute_fmt, char *name, size_t namelen)
{
	char src[256], raw[200], call[768];
	cg_value_ptr(cg, v, raw, sizeof(raw));
	/* an embedded constant is named bare during kernel emission (its array
	 * or string-union form is decided later): take its address, which is
	 * right for either form */
	if (raw[0] == '(')
		snprintf(src, sizeof(src), "%s", raw);
	else
		snprintf(src, sizeof(src), "(const float *)(const void *)&%s", raw);
	snprintf(name, namelen, "%s_bp", cg->kname);
	bool side = strstr(src, "_weights + ") != NULL && strncmp(src, "(const float *)", 15) == 0;
	bool in_place = same_size && side && uses_of(cg->g, v) == 1;
	rl_buf_printf(&cg->statics, "static float *%s; /* %s's constant B, packed at init%s */\n",
	              name, cg->kname, in_place ? " in place" : "");
	if (!in_place)
		rl_buf_printf(&cg->statics, "static float *%s_mem;\n", name);
	rl_buf_printf(&cg->init, "    { /* %s: pack B once%s */\n", cg->kname,
	              in_place ? ", over the side file's copy (only this kernel reads it)" : "");
	if (in_place && permute_fmt) {
		/* permuted where it lies: no second copy, not even for a moment */
		rl_buf_printf(&cg->init, "        %s = (float *)(void *)%s;\n", name,
		              src + strlen("(const float *)"));
		snprintf(call, sizeof(call), permute_fmt, name);
		rl_buf_printf(&cg->init, "        if (%s != 0)\n            return -1;\n    }\n", call);
		rl_buf_printf(&cg->fini, "    %s = NULL;\n", name);
		return;
	}
	rl_buf_printf(&cg->init, "        const size_t n = %s;\n", size_expr);
	rl_buf_printf(&cg->init, "        float *dst = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);\n");
	rl_buf_printf(&cg->init, "        if (!dst)\n            return -1;\n");
	snprintf(call, sizeof(call), pack_fmt, "dst", src);
	rl_buf_printf(&cg->init, "        %s;\n", call);
	if (in_place) {
		/* the same address without const: NAME_init read the side file into
		 * memory it owns */
		rl_buf_printf(&cg->init, "        %s = (float *)(void *)%s;\n", name,
		              src + strlen("(const float *)"));
		rl_buf_printf(&cg->init, "        memcpy(%s, dst, n * sizeof(float));\n", name);
		rl_buf_printf(&cg->init, "        free(dst);\n");
		rl_buf_printf(&cg->fini, "    %s = NULL;\n", name);
	} else {
		rl_buf_printf(&cg->init, "        %s = %s_mem = dst;\n", name, name);
		rl_buf_printf(&cg->fini, "    free(%s_mem);\n    %s = %s_mem = NULL;\n", name, name, name);
	}
	rl_buf_printf(&cg->init, "    }\n");
}

void cg_gemm_pack_b(struct rl_cgen *cg, uint32_t v, int64_t K, int64_t N, int64_t b_rs,
                    int64_t b_cs, const struct cg_gemm_plan *pl, char *name, size_t namelen)
{
	char size[128], fmt[256];
	cg_gemm_runtime(cg);
	snprintf(size, sizeof(size), "rl_sgemm_packed_b_floats(%lld, %lld)", (long long)K,
	         (long long)N);
	snprintf(fmt, sizeof(fmt), "rl_sgemm_pack_b(%%s, %%s, %lld, %lld, %lld, %lld, %lld)",
	         (long long)b_rs, (long long)b_cs, (long long)K, (long long)N, (long long)pl->kc);
	/* same size as the constant (no padding) for any nr when N % 32 == 0 */
	pack_const(cg, v, size, N % RL_GEMM_NR_LCM == 0 && b_cs == 1, fmt, NULL, name, namelen);
}

void cg_gemv_pack_b(struct rl_cgen *cg, uint32_t v, int64_t K, int64_t N, char *name,
                    size_t namelen)
{
	char size[64], fmt[128];
	cg_gemm_runtime(cg);
	snprintf(size, sizeof(size), "(size_t)%lld * %lld", (long long)K, (long long)N);
	snprintf(fmt, sizeof(fmt), "rl_sgemv_pack(%%s, %%s, %lld, %lld)", (long long)K, (long long)N);
	char perm[128];
	snprintf(perm, sizeof(perm), "rl_sgemv_pack_in_place(%%s, %lld, %lld)", (long long)K,
	         (long long)N);
	pack_const(cg, v, size, true, fmt, N % RL_GEMV_PANEL == 0 ? perm : NULL, name, namelen);
}

void cg_gemm_init(struct rl_cgen *cg, const struct cg_gemm_plan *pl, bool b_runtime)
{
	cg_gemm_runtime(cg);
	int64_t floats = pl->mc * pl->kc + (b_runtime ? pl->kc * pl->nc : 0);
	rl_buf_printf(&cg->init, "    rl_gemm_init(); /* %s: the micro-kernel for this CPU */\n",
	              cg->kname);
	rl_buf_printf(&cg->init,
	              "    if (rl_gemm_reserve(%lld) != 0) /* %s: packed A (mc x kc)%s */\n"
	              "        return -1;\n",
	              (long long)floats, cg->kname, b_runtime ? " and B (kc x nc)" : "");
	if (!cg->fini.s || !strstr(cg->fini.s, "rl_gemm_release_all"))
		rl_buf_printf(&cg->fini, "    rl_gemm_release_all();\n");
}

/* ---- one task of a product --------------------------------------------- */

static void epilogue_rows(struct rl_cgen *cg, const struct cg_gemm_call *c, int64_t n)
{
	char y[256], base[256];
	cg_line(cg, "for (int64_t g_r = 0; g_r < g_mb; g_r++) {");
	cg->indent++;
	snprintf(y, sizeof(y), "g_y + (g_i0 + g_r) * %lld + g_j0", (long long)c->ldy);
	snprintf(base, sizeof(base), "%s + (g_i0 + g_r) * %lld + g_j0", c->ybase, (long long)c->ldy);
	cg_epilogue(cg, y, base, n, c->span);
	cg->indent--;
	cg_line(cg, "}");
}

void cg_gemm_emit_task(struct rl_cgen *cg, const struct cg_gemm_call *c,
                       const struct cg_gemm_plan *pl, const char *task)
{
	long long M = c->M, N = c->N, nib = pl->nib, mc = pl->mc, nc = pl->nc;
	for (int i = 0; i < 2; i++) /* the edge heights (cg_gemm_finish), per gemm_isas[i] */
		cg->gemm_rows[i] |= M % gemm_isas[i].mr ? 1u << (M % gemm_isas[i].mr) : 0;
	cg_line(cg, "{ /* one task: a block of at most %lld x %lld outputs over all of K */", mc, nc);
	cg->indent++;
	cg_line(cg, "const int64_t g_t = %s;", task);
	cg_line(cg, "const int64_t g_j0 = g_t / %lld * %lld, g_i0 = g_t %% %lld * %lld;", nib, nc, nib,
	        mc);
	cg_line(cg, "const int64_t g_mb = %lld - g_i0 < %lld ? %lld - g_i0 : %lld;", M, mc, M, mc);
	cg_line(cg, "const int64_t g_nb = %lld - g_j0 < %lld ? %lld - g_j0 : %lld;", N, nc, N, nc);
	cg_line(cg, "float *restrict g_y = %s;", c->y);
	if (c->init) {
		char e[512];
		c->init(cg, c->ctx, "g_i0 + g_r", "g_j0 + g_j", e, sizeof(e));
		cg_line(cg, "for (int64_t g_r = 0; g_r < g_mb; g_r++) /* the initial value */");
		cg_line(cg, "    for (int64_t g_j = 0; g_j < g_nb; g_j++)");
		cg_line(cg, "        g_y[(g_i0 + g_r) * %lld + g_j0 + g_j] = %s;", (long long)c->ldy, e);
	}
	char alpha[64];
	snprintf(alpha, sizeof(alpha), "%s", cg_lit(RL_DT_FLOAT, c->alpha));
	cg_line(cg, "const struct rl_sgemm g_p = {%lld, %lld, %lld, %lld, %lld, %lld, %s, %lld, %lld, %s,",
	        M, N, (long long)c->K, mc, (long long)pl->kc, nc, c->a, (long long)c->a_rs,
	        (long long)c->a_ks, alpha);
	cg_line(cg, "                             %s, %lld, %lld, %s, g_y, %lld};", c->b ? c->b : "NULL",
	        (long long)c->b_rs, (long long)c->b_cs, c->bp ? c->bp : "NULL", (long long)c->ldy);
	cg_line(cg, "rl_sgemm_block(&g_p, rl_gemm_slot[rl_gemm_slot_own()], g_i0, g_mb, g_j0, g_nb, %d);",
	        c->init ? 1 : 0);
	if (cg->epi) {
		long long last = N - (pl->njb - 1) * nc;
		if (last == nc) {
			epilogue_rows(cg, c, nc);
		} else {
			cg_line(cg, "if (g_nb == %lld) {", nc);
			cg->indent++;
			epilogue_rows(cg, c, nc);
			cg->indent--;
			cg_line(cg, "} else {");
			cg->indent++;
			epilogue_rows(cg, c, last);
			cg->indent--;
			cg_line(cg, "}");
		}
	}
	cg->indent--;
	cg_line(cg, "}");
}
