/*
 * emit_qgemm.c - QuantMatMul (ir/qweights.h): products over int8 and int4
 * weights, read packed and never dequantized into memory.
 *
 * Why it looks like this:
 *
 * - The point of quantizing is fewer bytes fetched, so a batch-1 product
 *   must run at the memory's speed on the packed bytes: 4x (int8) and 8x
 *   (int4) more weights per byte than the float GEMV. Dequantizing each
 *   code to float in registers (shift, convert, multiply-add: 4-5 vector
 *   operations per 16 codes) cannot keep up with that on one core: an
 *   earlier version streamed 9.5 GB/s (int8) and 6.8 GB/s (int4) of codes
 *   where the float GEMV streamed 22.5 GB/s of floats. So, where the CPU
 *   has AVX-512 VNNI (found at run time), the codes meet the activations in
 *   integer dot products (vpdpbusd: 64 byte products summed into 16 32-bit
 *   lanes per instruction): per 64 bytes of codes, int8 one load, one xor
 *   and two dot products, int4 one load, three logic operations and four
 *   dot products, the activation loads shared by 4 channels. Measured
 *   (bench/bench_quant.py, one thread, 6144 x 6144): int8 3.9x and int4
 *   5.2x faster than the float GEMV, int8 at the read-stream limit.
 * - Activations: each row is quantized once per call (before the threads
 *   split the columns) to int16 with one scale per row, max|x| / 32767, and
 *   split into a low byte (unsigned) and a high byte (signed): x = 256 hi +
 *   lo. Both halves take one dot product each, so the product is exact in
 *   int32 up to the rounding of x to 16 bits: relative error about 1e-5 on
 *   Gaussian rows (tests/py/test_quant.py measures it), next to about 1e-2
 *   for the weights themselves. int8 activations would halve the dot
 *   products but add about 0.5-0.9% of error, as much as int8 weights.
 *   int8 weights are signed and the high byte is signed too, so that half
 *   reads the codes as q + 128 (one xor) and subtracts 128 * sum(hi).
 * - The layout (ir/qweights.h) puts unit i (a block of codes) in 32-bit lane
 *   i, so lane sums never mix blocks and one vector of 16 block scales
 *   applies per 16 blocks; zero points come off as z * sum(x) per block.
 *   The activations are laid out the same way when they are prepared.
 * - Scales are float16 (the default, --scale-type) or float32: the VNNI
 *   kernels widen a group's 16 float16 scales with one vcvtph2ps, the
 *   others through rl_h2f; 2 bytes per block instead of 4 is 10% of int4's
 *   bytes in blocks of 32. Symmetric int4's zero point (8) comes off as
 *   8 * sum(x), one shift per group shared by the channels in flight.
 * - Where the CPU has AVX2 but no AVX-512 VNNI (Zen 3, Intel before Ice
 *   Lake; or with -DRL_NO_QAVX512), AVX2 integer kernels (rl_q_avx2_dot,
 *   one channel at a time, its codes read in order). AVX2 has no byte dot
 *   product into 32 bits, so the row is prepared for them (modes 3 and 2):
 *   int8 codes are split into even and odd bytes as int16 and meet x
 *   rounded to int16 in vpmaddwd; int4 nibbles meet x = 255 hi + lo (both
 *   halves in [-127, 127], 15 bits) in vpmaddubsw, whose int16 pair sums
 *   then never saturate (see qavx2_kernels). Same layout, same per-group
 *   scales. Measured on Zen 3 (the 1.175 GB batch-1 stack of
 *   bench/bench_quant.py, one thread pinned, CPU time, loaded host): int8
 *   36.4 -> 31.5 ms and int4 23.8 -> 17.0 ms for the 4-channel kernels
 *   of session 8 -> these, against about 107 ms in float; what bound the
 *   old ones was the 4 rows read side by side (a plain read of 4 rows at
 *   once: 8-9 GB/s; of one: 10-11) and, for int4, the instructions.
 * - Elsewhere (neither, or RL_NO_QVNNI: no integer kernels at all, or a
 *   row holding NaN/Inf), the
 *   portable generic vectors of the runtime (rl_vf, RL_TARGETS clones)
 *   dequantize each code in registers with float accumulation on the same
 *   layout and activations transposed to match; without GNU vectors
 *   (RL_NO_VEC: tcc, other compilers) a scalar loop reads x as it is.
 * - Columns are split across threads in groups of 16; each output element is
 *   one column's loop in one task, so results do not depend on the thread
 *   count (they do depend on the path: VNNI against float accumulation
 *   differ by the activation rounding above). A batch > 1 reads each
 *   column's codes once per row from L1; large batches are compute-bound and
 *   `--quantize auto` leaves them in float.
 */
#include "emit_impl.h"

#include "ir/qweights.h"

#include <stdio.h>
#include <string.h>

#define QCOLS RL_QCOLS /* output columns per task (ir/qweights.h) */

/* The runtime: activation preparation, the per-column kernels and the
 * dispatch, once per file. */
static const char qgemm_rt[] =
	"/* ---- quantized products (emit_qgemm.c; weight layout: ir/qweights.h) ---- */\n"
	"#if defined(RL_VEC) && defined(__x86_64__) && !defined(RL_NO_QVNNI) && \\\n"
	"    (defined(__clang__) ? __clang_major__ >= 8 : __GNUC__ >= 9)\n"
	"#include <immintrin.h>\n"
	"#ifndef RL_NO_QAVX512\n"
	"#define RL_QVNNI 1 /* AVX-512 VNNI kernels, used when the CPU has them */\n"
	"#endif\n"
	"#define RL_QAVX2 1 /* AVX2 integer kernels, where the CPU has AVX2 but no VNNI */\n"
	"#endif\n"
	"static int rl_q_vnni;          /* set by rl_q_detect: the VNNI kernels run */\n"
	"static int rl_q_avx2;          /* set by rl_q_detect: the AVX2 integer kernels run */\n"
	"/* scale i of a row of float32 (hs 0) or float16 (hs 1) scales */\n"
	"static inline float rl_q_sc(const void *s, int hs, int64_t i)\n"
	"{\n"
	"    return hs ? rl_h2f(((const uint16_t *)s)[i]) : ((const float *)s)[i];\n"
	"}\n"
	"static unsigned char *rl_qx;   /* prepared activation rows of the running product */\n"
	"/* a prepared row: mode 1: int16 codes (scale sx) split into low and high\n"
	" * bytes, transposed like the weights, then per unit sum(q) and sum(hi);\n"
	" * mode 0: floats, transposed */\n"
	"struct rl_qxh {\n"
	"    int32_t mode;\n"
	"    float sx;\n"
	"    char pad[56];\n"
	"};\n\n"
	"static void rl_q_detect(void)\n"
	"{\n"
	"#ifdef RL_QVNNI\n"
	"    __builtin_cpu_init();\n"
	"    rl_q_vnni = __builtin_cpu_supports(\"avx512vnni\") && __builtin_cpu_supports(\"avx512bw\") &&\n"
	"                __builtin_cpu_supports(\"avx512vl\");\n"
	"#endif\n"
	"#ifdef RL_QAVX2\n"
	"    /* every CPU with AVX2 has F16C (the float16 scales' vcvtph2ps) */\n"
	"    __builtin_cpu_init();\n"
	"    rl_q_avx2 = __builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\");\n"
	"#endif\n"
	"}\n\n";

/* The row preparation, after the AVX2 kernels (it calls their prep). */
static const char qgemm_rt_prep[] =
	"/* x[0..K) into p (64 + G * (64 u + 128) bytes, G = groups of 16 units of u)\n"
	" * for a product over bits-bit codes */\n"
	"static void rl_qx_prep(const float *x, int64_t K, int64_t u, int bits, unsigned char *p)\n"
	"{\n"
	"#ifdef RL_VEC\n"
	"    int64_t U = (K + u - 1) / u, G = (U + 15) / 16;\n"
	"    struct rl_qxh *h = (struct rl_qxh *)p;\n"
	"    float amax = 0.0f;\n"
	"    int finite = 1;\n"
	"#ifdef RL_QAVX2\n"
	"    if (rl_q_avx2)\n"
	"        rl_qx_amax_avx2(x, K, &amax, &finite);\n"
	"    else\n"
	"#endif\n"
	"        for (int64_t k = 0; k < K; k++) {\n"
	"            float a = fabsf(x[k]);\n"
	"            finite &= a <= 3.40282347e38f;\n"
	"            amax = a > amax ? a : amax;\n"
	"        }\n"
	"    h->mode = !finite ? 0 : rl_q_vnni ? 1 : rl_q_avx2 ? (bits == 8 ? 3 : 2) : 0;\n"
	"    if (h->mode) {\n"
	"        /* mode 1: x = 256 hi + lo, lo in [0, 255]; mode 2: x = 255 hi + lo,\n"
	"         * both in [-127, 127] (AVX2's int4 byte products); mode 3: x as\n"
	"         * int16, each record's even and odd codes apart (AVX2's int8\n"
	"         * products on int16) */\n"
	"        const int32_t qm = h->mode == 2 ? 32512 : 32767;\n"
	"        float inv = amax > 0.0f ? (float)qm / amax : 0.0f;\n"
	"        unsigned char *xb = p + 64;\n"
	"        int32_t *xs = (int32_t *)(xb + G * 32 * u), *hs = xs + 16 * G;\n"
	"        h->sx = amax / (float)qm;\n"
	"        memset(xb, 0, (size_t)(G * 32 * u + G * 128));\n"
	"#if defined(RL_QAVX2) && !defined(RL_NO_QPREP_AVX2)\n"
	"        if (h->mode >= 2 && u % 4 == 0) {\n"
	"            rl_qx_prep_avx2(x, K, u, h->mode, qm, inv, xb, xs, hs);\n"
	"            return;\n"
	"        }\n"
	"#endif\n"
	"        for (int64_t un = 0; un < U; un++) {\n"
	"            int64_t g = un / 16, i = un % 16, end = K - un * u < u ? K - un * u : u;\n"
	"            int32_t sum = 0, hsum = 0;\n"
	"            for (int64_t j = 0; j < end; j++) {\n"
	"                float v = x[un * u + j] * inv;\n"
	"                int32_t q = v >= 0.0f ? (int32_t)(v + 0.5f) : -(int32_t)(0.5f - v);\n"
	"                q = q > qm ? qm : q < -qm ? -qm : q;\n"
	"                /* the record of codes 4 (j / 4) .. of the group's units, lane i */\n"
	"                unsigned char *rec = xb + (g * (u / 4) + j / 4) * 128;\n"
	"                int64_t at = 4 * i + j % 4;\n"
	"                int32_t hi = 0;\n"
	"                if (h->mode == 3) {\n"
	"                    /* lanes 0-7 then 8-15 (64 bytes each): codes 0 and 2 of\n"
	"                     * the record's four, then 1 and 3 (32 bytes each) */\n"
	"                    int16_t q16 = (int16_t)q;\n"
	"                    memcpy(rec + 64 * (i / 8) + 32 * (j % 2) + 4 * (i % 8) + 2 * (j % 4 / 2), &q16, 2);\n"
	"                } else {\n"
	"                    int32_t lo = q & 255;\n"
	"                    if (h->mode == 2) {\n"
	"                        lo = q % 255;\n"
	"                        lo += lo > 127 ? -255 : lo < -127 ? 255 : 0;\n"
	"                    }\n"
	"                    hi = (q - lo) / (h->mode == 2 ? 255 : 256);\n"
	"                    rec[at] = (unsigned char)lo;\n"
	"                    rec[64 + at] = (unsigned char)(hi & 255);\n"
	"                }\n"
	"                sum += q;\n"
	"                hsum += hi;\n"
	"            }\n"
	"            xs[16 * g + i] = sum;\n"
	"            hs[16 * g + i] = hsum;\n"
	"        }\n"
	"        return;\n"
	"    }\n"
	"    float *xf = (float *)(p + 64);\n"
	"    memset(xf, 0, (size_t)(G * 16 * u) * sizeof(float));\n"
	"    for (int64_t k = 0; k < K; k++) {\n"
	"        int64_t un = k / u;\n"
	"        xf[((un / 16) * u + k % u) * 16 + un % 16] = x[k];\n"
	"    }\n"
	"#else\n"
	"    (void)x, (void)K, (void)u, (void)p, (void)rl_q_vnni;\n"
	"#endif\n"
	"}\n\n";

static const char qgemm_rt_tail[] =
	"#ifdef RL_VEC\n"
	"typedef uint32_t rl_vuu __attribute__((vector_size(64), aligned(4), may_alias));\n"
	"/* a group's step of 4L bytes as 16 lanes (lanes past L: 0); its 16 scales\n"
	" * and zero points (past L: 0) */\n"
	"RL_INLINE void rl_q_step(rl_vu *v, const uint8_t *q, int64_t L)\n"
	"{\n"
	"    if (L == 16) {\n"
	"        *v = *(const rl_vuu *)q;\n"
	"    } else {\n"
	"        uint32_t t[16] = {0};\n"
	"        memcpy(t, q, (size_t)(4 * L));\n"
	"        *v = *(const rl_vuu *)t;\n"
	"    }\n"
	"}\n\n"
	"RL_INLINE void rl_q_lanes(rl_vf *sv, rl_vf *zv, const void *s, int hs, const uint8_t *z,\n"
	"                          float z0, int64_t nb, int64_t g, int64_t L)\n"
	"{\n"
	"    float st[16] = {0}, zt[16] = {0};\n"
	"    for (int64_t i = 0; i < L; i++) {\n"
	"        st[i] = rl_q_sc(s, hs, nb > 1 ? 16 * g + i : 0);\n"
	"        zt[i] = z ? (float)z[nb > 1 ? 16 * g + i : 0] : z0;\n"
	"    }\n"
	"    *sv = *(const rl_vfu *)st;\n"
	"    *zv = *(const rl_vfu *)zt;\n"
	"}\n\n"
	"/* the same against a mode-0 row, codes widened to float in registers */\n"
	"static RL_TARGETS float rl_q8_vec(int64_t K, int64_t u, int64_t nb, const unsigned char *p,\n"
	"                                  const uint8_t *q, const void *s, int hs)\n"
	"{\n"
	"    int64_t U = (K + u - 1) / u, G = (U + 15) / 16;\n"
	"    const float *xf = (const float *)(p + 64);\n"
	"    rl_vf acc = {0};\n"
	"    for (int64_t g = 0; g < G; g++) {\n"
	"        int64_t L = U - 16 * g < 16 ? U - 16 * g : 16;\n"
	"        rl_vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, sv, zv;\n"
	"        for (int64_t t = 0; t < u / 4; t++, q += 4 * L) {\n"
	"            rl_vu v;\n"
	"            rl_q_step(&v, q, L);\n"
	"            const float *xr = xf + (g * u + 4 * t) * 16;\n"
	"            a0 += *(const rl_vfu *)xr * __builtin_convertvector((rl_vi)(v << 24) >> 24, rl_vf);\n"
	"            a1 += *(const rl_vfu *)(xr + 16) * __builtin_convertvector((rl_vi)(v << 16) >> 24, rl_vf);\n"
	"            a2 += *(const rl_vfu *)(xr + 32) * __builtin_convertvector((rl_vi)(v << 8) >> 24, rl_vf);\n"
	"            a3 += *(const rl_vfu *)(xr + 48) * __builtin_convertvector((rl_vi)v >> 24, rl_vf);\n"
	"        }\n"
	"        rl_q_lanes(&sv, &zv, s, hs, NULL, 0.0f, nb, g, L);\n"
	"        acc += (a0 + a1 + (a2 + a3)) * sv;\n"
	"    }\n"
	"    float y = 0.0f;\n"
	"    for (int i = 0; i < RL_VW; i++)\n"
	"        y += acc[i];\n"
	"    return y;\n"
	"}\n\n"
	"static RL_TARGETS float rl_q4_vec(int64_t K, int64_t u, int64_t nb, const unsigned char *p,\n"
	"                                  const uint8_t *q, const void *s, int hs, const uint8_t *z)\n"
	"{\n"
	"    int64_t U = (K + u - 1) / u, G = (U + 15) / 16;\n"
	"    const float *xf = (const float *)(p + 64);\n"
	"    rl_vf acc = {0};\n"
	"    for (int64_t g = 0; g < G; g++) {\n"
	"        int64_t L = U - 16 * g < 16 ? U - 16 * g : 16;\n"
	"        rl_vf a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, sv, zv;\n"
	"        rl_q_lanes(&sv, &zv, s, hs, z, 8.0f, nb, g, L);\n"
	"        for (int64_t t = 0; t < u / 8; t++, q += 4 * L) {\n"
	"            rl_vu v;\n"
	"            rl_q_step(&v, q, L);\n"
	"            const float *xr = xf + (g * u + 8 * t) * 16;\n"
	"            /* nibble 2b: code 8t + b; nibble 2b + 1: code 8t + 4 + b */\n"
	"#define RL_Q4_NIB(a, n, c) a += *(const rl_vfu *)(xr + 16 * (c)) * \\\n"
	"            (__builtin_convertvector((rl_vi)((v >> (4 * (n))) & 15), rl_vf) - zv)\n"
	"            RL_Q4_NIB(a0, 0, 0); RL_Q4_NIB(a1, 1, 4); RL_Q4_NIB(a2, 2, 1); RL_Q4_NIB(a3, 3, 5);\n"
	"            RL_Q4_NIB(a0, 4, 2); RL_Q4_NIB(a1, 5, 6); RL_Q4_NIB(a2, 6, 3); RL_Q4_NIB(a3, 7, 7);\n"
	"#undef RL_Q4_NIB\n"
	"        }\n"
	"        acc += (a0 + a1 + (a2 + a3)) * sv;\n"
	"    }\n"
	"    float y = 0.0f;\n"
	"    for (int i = 0; i < RL_VW; i++)\n"
	"        y += acc[i];\n"
	"    return y;\n"
	"}\n"
	"#else\n"
	"/* no GNU vectors: x as it is, codes found by their place in the layout */\n"
	"static float rl_q_scalar(int bits, int64_t K, int64_t u, int64_t nb, const float *x,\n"
	"                         const uint8_t *q, const void *s, int hs, const uint8_t *z)\n"
	"{\n"
	"    int64_t U = (K + u - 1) / u;\n"
	"    float y = 0.0f;\n"
	"    for (int64_t un = 0; un < U; un++) {\n"
	"        int64_t g = un / 16, i = un % 16, L = U - 16 * g < 16 ? U - 16 * g : 16;\n"
	"        const uint8_t *base = q + g * 16 * u * bits / 8;\n"
	"        float zz = bits == 8 ? 0.0f : z ? (float)z[nb > 1 ? un : 0] : 8.0f, t = 0.0f;\n"
	"        for (int64_t j = 0; j < u && un * u + j < K; j++) {\n"
	"            float c = bits == 8 ? (float)(int8_t)base[j / 4 * 4 * L + 4 * i + j % 4]\n"
	"                                : (float)((base[j / 8 * 4 * L + 4 * i + j % 4] >> (j % 8 / 4 * 4)) & 15);\n"
	"            t += x[un * u + j] * (c - zz);\n"
	"        }\n"
	"        y += t * rl_q_sc(s, hs, nb > 1 ? un : 0);\n"
	"    }\n"
	"    return y;\n"
	"}\n"
	"#endif\n\n"
	"/* nc (4 or 1) outputs y[0..nc): channels q, q + qs, ... (scales s, float16\n"
	" * when hs, zero points z or NULL, nb per channel) against row x, prepared at p */\n"
	"static void rl_qcols(int bits, int nc, int64_t K, int64_t u, int64_t nb, const float *x,\n"
	"                     const unsigned char *p, const uint8_t *q, int64_t qs, const void *s,\n"
	"                     int hs, const uint8_t *z, float *y)\n"
	"{\n"
	"#ifdef RL_QVNNI\n"
	"    if (((const struct rl_qxh *)p)->mode == 1) {\n"
	"        if (bits == 8)\n"
	"            (nc == 4 ? rl_q8_vnni4 : rl_q8_vnni1)(K, u, nb, p, q, qs, s, hs, z, y);\n"
	"        else\n"
	"            (nc == 4 ? rl_q4_vnni4 : rl_q4_vnni1)(K, u, nb, p, q, qs, s, hs, z, y);\n"
	"        return;\n"
	"    }\n"
	"#endif\n"
	"#ifdef RL_QAVX2\n"
	"    if (((const struct rl_qxh *)p)->mode >= 2) {\n"
	"        for (int c = 0; c < nc; c++, q += qs, s = (const char *)s + nb * (hs ? 2 : 4),\n"
	"                                     z = z ? z + nb : NULL)\n"
	"            y[c] = rl_q_avx2_dot(bits, K, u, nb, p, q, s, hs, z);\n"
	"        return;\n"
	"    }\n"
	"#endif\n"
	"    for (int c = 0; c < nc; c++, q += qs, s = (const char *)s + nb * (hs ? 2 : 4),\n"
	"                                 z = z ? z + nb : NULL)\n"
	"#ifdef RL_VEC\n"
	"        y[c] = bits == 8 ? rl_q8_vec(K, u, nb, p, q, s, hs) : rl_q4_vec(K, u, nb, p, q, s, hs, z);\n"
	"    (void)x;\n"
	"#else\n"
	"        y[c] = rl_q_scalar(bits, K, u, nb, x, q, s, hs, z);\n"
	"    (void)p;\n"
	"#endif\n"
	"}\n\n";

/* The VNNI kernel for nc consecutive channels (rows of q qs bytes apart,
 * of s and z nb apart) against one mode-1 row: each 64-byte load of
 * activations serves nc channels, and nc code streams are in flight at once
 * (one stream left the int4 kernel at 7 GB/s where the read limit was
 * 16-19). Each step also prefetches, into L2, the same place 8 channels on
 * (two batches ahead): without it, the loads and the dot products did not
 * overlap (in L2 the int4 kernel runs 4x faster than from memory; with the
 * prefetch, 9 -> 11-13 GB/s of codes; into L1 it did not help). Per channel
 * two int32 chains (low and high bytes of x); the block scales apply once
 * per group. */
static void gen_vnni(struct rl_buf *b, int bits, int nc)
{
	char ab[64];
	rl_buf_printf(b, "RL_QVNNI_FN void rl_q%d_vnni%d(int64_t K, int64_t u, int64_t nb, "
	              "const unsigned char *p,\n    const uint8_t *q, int64_t qs, const void *sv, "
	              "int half, const uint8_t *z, float *y)\n{\n", bits, nc);
	rl_buf_printf(b, "    const float *s = (const float *)sv;\n"
	              "    const uint16_t *sh = (const uint16_t *)sv;\n");
	rl_buf_printf(b, "    int64_t U = (K + u - 1) / u, G = (U + 15) / 16, steps = u / %d;\n",
	              bits == 8 ? 4 : 8);
	/* hs (the high bytes' sums) only for int8, z (zero points) only for int4 */
	rl_buf_printf(b, "    const unsigned char *xb = p + 64;\n"
	              "    const int32_t *xs = (const int32_t *)(xb + G * 32 * u)%s;\n"
	              "    const __m512i cst = _mm512_set1_epi8(%s);\n",
	              bits == 8 ? ", *hs = xs + 16 * G" : "", bits == 8 ? "(char)0x80" : "15");
	if (bits == 8)
		rl_buf_printf(b, "    (void)z;\n");
	for (int c = 0; c < nc; c++)
		rl_buf_printf(b, "    __m512 f%d = _mm512_setzero_ps();\n"
		              "    const uint8_t *q%d = %s;\n", c, c, cg_addr(ab, sizeof(ab), "q", c, "qs", NULL, 0));
	rl_buf_printf(b, "    for (int64_t g = 0; g < G; g++) {\n"
	              "        int64_t L = U - 16 * g < 16 ? U - 16 * g : 16;\n"
	              "        __mmask16 m = (__mmask16)((1u << L) - 1);\n"
	              "        const __m512i *xv = (const __m512i *)(xb + g * (u / 4) * 128);\n");
	for (int c = 0; c < nc; c++)
		rl_buf_printf(b, "        __m512i l%d = _mm512_setzero_si512(), h%d = l%d;\n", c, c, c);
	if (bits == 8) {
		rl_buf_printf(b, "        for (int64_t t = 0; t < steps; t++, xv += 2) {\n"
		              "            __m512i xl = _mm512_load_si512(xv), xh = _mm512_load_si512(xv + 1);\n");
		for (int c = 0; c < nc; c++)
			rl_buf_printf(b, "            __m512i v%d = _mm512_maskz_loadu_epi32(m, q%d);\n"
			              "            _mm_prefetch((const char *)(q%d + 8 * qs), _MM_HINT_T1);\n"
			              "            q%d += 4 * L;\n"
			              "            l%d = _mm512_dpbusd_epi32(l%d, xl, v%d);\n"
			              "            h%d = _mm512_dpbusd_epi32(h%d, _mm512_xor_si512(v%d, cst), xh);\n",
			              c, c, c, c, c, c, c, c, c, c);
		rl_buf_printf(b, "        }\n"
		              "        __m512i hc = _mm512_slli_epi32(_mm512_loadu_si512(hs + 16 * g), 7);\n");
	} else {
		rl_buf_printf(b, "        for (int64_t t = 0; t < steps; t++, xv += 4) {\n"
		              "            __m512i x0 = _mm512_load_si512(xv), x1 = _mm512_load_si512(xv + 1);\n"
		              "            __m512i x2 = _mm512_load_si512(xv + 2), x3 = _mm512_load_si512(xv + 3);\n");
		for (int c = 0; c < nc; c++)
			rl_buf_printf(b, "            {\n"
			              "                __m512i v = _mm512_maskz_loadu_epi32(m, q%d);\n"
			              "                __m512i c0 = _mm512_and_si512(v, cst);\n"
			              "                __m512i c1 = _mm512_and_si512(_mm512_srli_epi16(v, 4), cst);\n"
			              "                _mm_prefetch((const char *)(q%d + 8 * qs), _MM_HINT_T1);\n"
			              "                q%d += 4 * L;\n"
			              "                l%d = _mm512_dpbusd_epi32(l%d, x0, c0);\n"
			              "                h%d = _mm512_dpbusd_epi32(h%d, c0, x1);\n"
			              "                l%d = _mm512_dpbusd_epi32(l%d, x2, c1);\n"
			              "                h%d = _mm512_dpbusd_epi32(h%d, c1, x3);\n"
			              "            }\n", c, c, c, c, c, c, c, c, c, c, c);
		/* the zero points' share z * sum(x) per lane: symmetric (z = 8)
		 * is a shift, once per group for all nc channels; only zero
		 * points per block pay a multiply per channel */
		rl_buf_printf(b, "        }\n"
		              "        __m512i xsv = _mm512_loadu_si512(xs + 16 * g);\n"
		              "        __m512i x8 = _mm512_slli_epi32(xsv, 3);\n");
	}
	for (int c = 0; c < nc; c++) {
		if (bits == 8)
			rl_buf_printf(b, "        __m512i d%d = _mm512_add_epi32(_mm512_slli_epi32("
			              "_mm512_sub_epi32(h%d, hc), 8), l%d);\n", c, c, c);
		else
			rl_buf_printf(b, "        __m512i z%d = z ? _mm512_mullo_epi32(_mm512_cvtepu8_epi32("
			              "_mm_maskz_loadu_epi8(m, %s)), xsv) : x8;\n"
			              "        __m512i d%d = _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(h%d, 8), l%d), z%d);\n",
			              c, cg_addr(ab, sizeof(ab), "z", c, "nb", "16 * g", 0), c, c, c, c);
		/* float16 scales: 16 of them widened by one vcvtph2ps per group;
		 * channel c's scales start at c * nb (cg_addr: no 0 * nb, 1 * nb) */
		char a0[32], a1[64], a2[64];
		if (c == 1)
			snprintf(a0, sizeof(a0), "nb");
		else
			snprintf(a0, sizeof(a0), "%d * nb", c);
		rl_buf_printf(b, "        __m512 s%d = nb == 1 ? _mm512_set1_ps(rl_q_sc(sv, half, %s))\n"
		              "                   : half ? _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, %s))\n"
		              "                   : _mm512_maskz_loadu_ps(m, %s);\n"
		              "        f%d = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d%d), s%d, f%d);\n",
		              c, c == 0 ? "0" : a0,
		              cg_addr(a1, sizeof(a1), "sh", c, "nb", "16 * g", 0),
		              cg_addr(a2, sizeof(a2), "s", c, "nb", "16 * g", 0), c, c, c, c);
	}
	rl_buf_printf(b, "    }\n    float sx = ((const struct rl_qxh *)p)->sx;\n");
	for (int c = 0; c < nc; c++)
		rl_buf_printf(b, "    y[%d] = sx * _mm512_reduce_add_ps(f%d);\n", c, c);
	rl_buf_printf(b, "}\n\n");
}

/* The AVX2 kernels' helpers: lanes [0, n) of 8 set; the 8 scales of half
 * hh of a group (one per channel when nb is 1; a short group's missing
 * lanes 0); the sum of a vector's lanes. */
static const char qavx2_helpers[] =
	"RL_QAVX2_FN inline __m256i rl_q_mask8(int64_t n)\n"
	"{\n"
	"    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n < 0 ? 0 : n > 8 ? 8 : n)),\n"
	"                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));\n"
	"}\n\n"
	"RL_QAVX2_FN inline __attribute__((always_inline)) __m256 rl_q_sc8(const void *s, int half, int64_t nb,\n"
	"                                                               int64_t g, int64_t L, int hh)\n"
	"{\n"
	"    int64_t o = 16 * g + 8 * hh;\n"
	"    if (nb == 1)\n"
	"        return _mm256_set1_ps(rl_q_sc(s, half, 0));\n"
	"    if (L == 16 && half)\n"
	"        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)s + o)));\n"
	"    if (L == 16)\n"
	"        return _mm256_loadu_ps((const float *)s + o);\n"
	"    float t[8] = {0};\n"
	"    for (int64_t i = 0; i < 8 && o + i < 16 * g + L; i++)\n"
	"        t[i] = rl_q_sc(s, half, o + i);\n"
	"    return _mm256_loadu_ps(t);\n"
	"}\n\n"
	"RL_QAVX2_FN inline float rl_q_hsum8(__m256 v)\n"
	"{\n"
	"    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));\n"
	"    s = _mm_add_ps(s, _mm_movehl_ps(s, s));\n"
	"    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));\n"
	"}\n\n";

/* The AVX2 kernels: one channel against one prepared row, the codes read
 * front to back. One channel at a time, not 4 sharing the activation loads
 * as the VNNI kernels do: on Zen 3 a read of 4 rows side by side (the 4
 * channels' streams) ran at 7-9 GB/s where the same bytes read in order ran
 * at 10-11 (bench/bench_quant.py's 2 KiB rows; the hardware prefetcher
 * follows one stream), and the activations come from L1 either way; two
 * int8 channels interleaved (the activation loads shared) were 30-40%
 * slower again than one at a time on the stack (session 10). Each step
 * prefetches (T0) ahead in the stream, often into the next channel's row
 * (+18% int8, +40% int4 over none): int8 1 KiB, int4 2 KiB (stack, one
 * thread pinned, 3 interleaved rounds on a loaded host: int8 at 1 KiB 8-12%
 * faster than at 2 KiB, 512 B and 4 KiB slower, adding an L2 prefetch
 * further ahead 5-15% slower; int4 at 1, 1.5 or 3 KiB no better). A group's 16 lanes in one pass,
 * lanes 0-7 and 8-15 in two sums; a short last group (L < 16) takes the
 * same loop with masked loads (rl_q*_avx2_grp with full 0: a copy the
 * compiler specializes, so the full groups' loop has no branch in it).
 * What binds the int8 kernel (session 11: the stack's 312 MB of codes and
 * float16 scales in a harness, one thread pinned, CPU time, 13-15
 * interleaved rounds, medians of per-round ratios, load 4-8): memory, not
 * instructions. A plain read of the same bytes (4 sums, no prefetch;
 * 16-23 GB/s) runs 1.10-1.20x as fast as it, and this loop without its
 * arithmetic (same loads, scales, groups and calls) 1.09-1.18x, but 1.03x
 * with the prefetch, while the kernel without the prefetch drops to
 * 0.87-0.90x: its ~20 macro-ops per 64 B keep the reorder window ~12 lines
 * ahead of the loads, so it needs the prefetch, which costs about what it
 * saves.
 * Tried, none faster (ratio to this kernel; on the stack where noted):
 * full groups hoisted out of the masked path, scales read straight (1.00-
 * 1.03; stack 0.98, 10 pairs); the step loop unrolled, 2 sums (1.01-1.03);
 * codes widened by vpmovsxbw against x in code order, pairs added once per
 * group (12 operations per 64 B instead of 18: 1.01-1.02; 0.94 without
 * the prefetch); prefetch at 640-1792 B (within 3%; 2 KiB: 0.91 with T1,
 * stack 0.88); T1/T2/NTA hints (1.02-1.03); a prefetch every 2nd or 4th
 * line (0.51, 0.65) or only near a page's end (0.92-0.97); the next pages
 * touched ahead for the TLB (0.96-1.0; stack 0.97); no scale stream at all
 * (0.98); the activations from one L1 line (1.05). vpmaddubsw on x =
 * 128 hi + lo was not built: 8 multiplies per 64 B on Zen 3's two multiply
 * pipes instead of 4, 3 activation loads instead of 2, and fewer operations
 * did not help.
 * What does move it is the page size of the side file (the loader's):
 * in 2 MiB pages (madvise(MADV_HUGEPAGE) before fread) the stack ran int8
 * in 14.6-15.7 ms where 4 KiB pages gave 18.5-22.3 (12 pairs of fresh
 * processes, load 6; int4 8.8-8.9 against 11.0-11.7 and float 51-52
 * against 57-58, 5 pairs each at load 5), onnxruntime's session 16.8-17.8
 * (load 7.5): in this VM the page walks over a
 * fresh 312 MB allocation cost up to 30%, varying from process to process
 * (at load 4 the two once ran alike). With that loader, interleaved with
 * one onnxruntime session at load 3: int8 14.1-15.0 ms against 15.5-15.7
 * (1.04-1.11x as fast), int4 8.4-8.5 against 11.8-12.1; with 4 KiB pages
 * int8 0.90-1.05x. The int4 kernel was not changed.
 * AVX2 has no byte dot product into 32 bits:
 *   int8 (row mode 3, x as int16): each 32-bit lane's 4 code bytes split
 *         into its even bytes (shift left 8, arithmetic right 8) and its odd
 *         bytes (arithmetic right 8), sign-extended int16, each meeting its x
 *         (the row's even and odd codes, prepared apart) in vpmaddwd: both
 *         land in the lane's own int32, so no pairs to add at the group's
 *         end (vpmovsxbw, the earlier way, sat on the shuffle port and left
 *         the lanes' pairs to hadd and permute);
 *   int4 (row mode 2, x = 255 hi + lo, both in [-127, 127]): the nibble
 *         (0..15) against x's bytes in vpmaddubsw (unsigned x signed bytes,
 *         pairs into saturating int16): a pair at most 2 * 15 * 127, both
 *         nibbles of 4 steps summed in int16 (8 * 3810 = 30480) before
 *         vpmaddwd by 1 (lo) and by 255 (hi) widens them. */
static const char qavx2_kernels[] =
	"#define RL_QPF8 1024 /* bytes of codes prefetched ahead: int8 */\n"
	"#define RL_QPF4 2048 /* int4 */\n"
	"/* a group's sums, lanes 0-7 (*da) and 8-15 (*de); steps of sb bytes */\n"
	"RL_QAVX2_FN inline __attribute__((always_inline)) void\n"
	"rl_q8_avx2_grp(const __m256i *xv, const uint8_t *r, int64_t steps, int64_t sb, int full, __m256i mk0,\n"
	"               __m256i mk1, __m256i *da, __m256i *de)\n"
	"{\n"
	"    __m256i a = _mm256_setzero_si256(), e = a;\n"
	"    for (int64_t t = 0; t < steps; t++, xv += 4, r += sb) {\n"
	"        const __m256i v0 = full ? _mm256_loadu_si256((const __m256i *)r)\n"
	"                                : _mm256_maskload_epi32((const int *)r, mk0);\n"
	"        const __m256i v1 = full ? _mm256_loadu_si256((const __m256i *)(r + 32))\n"
	"                                : _mm256_maskload_epi32((const int *)(r + 32), mk1);\n"
	"        _mm_prefetch((const char *)(r + RL_QPF8), _MM_HINT_T0);\n"
	"        a = _mm256_add_epi32(a, _mm256_add_epi32(\n"
	"            _mm256_madd_epi16(_mm256_srai_epi16(_mm256_slli_epi16(v0, 8), 8), xv[0]),\n"
	"            _mm256_madd_epi16(_mm256_srai_epi16(v0, 8), xv[1])));\n"
	"        e = _mm256_add_epi32(e, _mm256_add_epi32(\n"
	"            _mm256_madd_epi16(_mm256_srai_epi16(_mm256_slli_epi16(v1, 8), 8), xv[2]),\n"
	"            _mm256_madd_epi16(_mm256_srai_epi16(v1, 8), xv[3])));\n"
	"    }\n"
	"    *da = a;\n"
	"    *de = e;\n"
	"}\n\n"
	"RL_QAVX2_FN inline __attribute__((always_inline)) void\n"
	"rl_q4_avx2_grp(const __m256i *xv, const uint8_t *r, int64_t steps, int64_t sb, int full, __m256i mk0,\n"
	"               __m256i mk1, __m256i *da, __m256i *de)\n"
	"{\n"
	"    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi16(1), c255 = _mm256_set1_epi16(255);\n"
	"    __m256i a = _mm256_setzero_si256(), e = a;\n"
	"    for (int64_t t0 = 0; t0 < steps; t0 += 4) {\n"
	"        __m256i la = _mm256_setzero_si256(), ha = la, le = la, he = la;\n"
	"        /* xv: low bytes of the step's first four codes (lanes 0-7 at\n"
	"         * xv[0], 8-15 at xv[1]), their high bytes (xv[2], xv[3]), then\n"
	"         * the last four's (xv[4] .. xv[7]) */\n"
	"        for (int64_t t = t0; t < t0 + 4 && t < steps; t++, xv += 8, r += sb) {\n"
	"            const __m256i v0 = full ? _mm256_loadu_si256((const __m256i *)r)\n"
	"                                    : _mm256_maskload_epi32((const int *)r, mk0);\n"
	"            const __m256i v1 = full ? _mm256_loadu_si256((const __m256i *)(r + 32))\n"
	"                                    : _mm256_maskload_epi32((const int *)(r + 32), mk1);\n"
	"            _mm_prefetch((const char *)(r + RL_QPF4), _MM_HINT_T0);\n"
	"            const __m256i c00 = _mm256_and_si256(v0, m4), c01 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4);\n"
	"            const __m256i c10 = _mm256_and_si256(v1, m4), c11 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4);\n"
	"            la = _mm256_add_epi16(la, _mm256_add_epi16(_mm256_maddubs_epi16(c00, xv[0]),\n"
	"                                                       _mm256_maddubs_epi16(c01, xv[4])));\n"
	"            ha = _mm256_add_epi16(ha, _mm256_add_epi16(_mm256_maddubs_epi16(c00, xv[2]),\n"
	"                                                       _mm256_maddubs_epi16(c01, xv[6])));\n"
	"            le = _mm256_add_epi16(le, _mm256_add_epi16(_mm256_maddubs_epi16(c10, xv[1]),\n"
	"                                                       _mm256_maddubs_epi16(c11, xv[5])));\n"
	"            he = _mm256_add_epi16(he, _mm256_add_epi16(_mm256_maddubs_epi16(c10, xv[3]),\n"
	"                                                       _mm256_maddubs_epi16(c11, xv[7])));\n"
	"        }\n"
	"        a = _mm256_add_epi32(a, _mm256_add_epi32(_mm256_madd_epi16(la, one), _mm256_madd_epi16(ha, c255)));\n"
	"        e = _mm256_add_epi32(e, _mm256_add_epi32(_mm256_madd_epi16(le, one), _mm256_madd_epi16(he, c255)));\n"
	"    }\n"
	"    *da = a;\n"
	"    *de = e;\n"
	"}\n\n"
	"/* channel q (scales s, float16 when half; int4: zero points z or NULL for\n"
	" * 8) against the row prepared at p */\n"
	"RL_QAVX2_FN float rl_q_avx2_dot(int bits, int64_t K, int64_t u, int64_t nb, const unsigned char *p,\n"
	"                            const uint8_t *q, const void *s, int half, const uint8_t *z)\n"
	"{\n"
	"    int64_t U = (K + u - 1) / u, G = (U + 15) / 16, steps = u / (bits == 8 ? 4 : 8);\n"
	"    const unsigned char *xb = p + 64;\n"
	"    const int32_t *xs = (const int32_t *)(xb + G * 32 * u);\n"
	"    __m256 f = _mm256_setzero_ps();\n"
	"    for (int64_t g = 0; g < G; g++) {\n"
	"        int64_t L = U - 16 * g < 16 ? U - 16 * g : 16;\n"
	"        const __m256i *xv = (const __m256i *)(xb + g * (u / 4) * 128);\n"
	"        const __m256i mk0 = rl_q_mask8(L), mk1 = rl_q_mask8(L - 8);\n"
	"        __m256i a, e;\n"
	"        if (bits == 8 && L == 16)\n"
	"            rl_q8_avx2_grp(xv, q, steps, 64, 1, mk0, mk1, &a, &e);\n"
	"        else if (bits == 8)\n"
	"            rl_q8_avx2_grp(xv, q, steps, 4 * L, 0, mk0, mk1, &a, &e);\n"
	"        else if (L == 16)\n"
	"            rl_q4_avx2_grp(xv, q, steps, 64, 1, mk0, mk1, &a, &e);\n"
	"        else\n"
	"            rl_q4_avx2_grp(xv, q, steps, 4 * L, 0, mk0, mk1, &a, &e);\n"
	"        if (bits == 4) {\n"
	"            /* the zero points' share z * sum(x) per lane (sums past L are 0) */\n"
	"            const __m256i xs0 = _mm256_loadu_si256((const __m256i *)(xs + 16 * g));\n"
	"            const __m256i xs1 = _mm256_loadu_si256((const __m256i *)(xs + 16 * g + 8));\n"
	"            if (z) {\n"
	"                uint8_t zt[16] = {0};\n"
	"                memcpy(zt, z + 16 * g, (size_t)L);\n"
	"                a = _mm256_sub_epi32(a, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)zt)), xs0));\n"
	"                e = _mm256_sub_epi32(e, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(zt + 8))), xs1));\n"
	"            } else {\n"
	"                a = _mm256_sub_epi32(a, _mm256_slli_epi32(xs0, 3));\n"
	"                e = _mm256_sub_epi32(e, _mm256_slli_epi32(xs1, 3));\n"
	"            }\n"
	"        }\n"
	"        f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(a), rl_q_sc8(s, half, nb, g, L, 0), f);\n"
	"        if (L > 8)\n"
	"            f = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e), rl_q_sc8(s, half, nb, g, L, 1), f);\n"
	"        q += 4 * L * steps;\n"
	"    }\n"
	"    return ((const struct rl_qxh *)p)->sx * rl_q_hsum8(f);\n"
	"}\n\n";

/* rl_qx_prep's AVX2 half (modes 2 and 3, units of a multiple of 4 codes):
 * max|x| 8 lanes at a time, then 4 codes (one record's) at a time, with the
 * scalar loop's rounding: x * inv rounded to float, half away from zero
 * (|v| + 0.5 truncated, the sign put back), clamped to +-qm; mode 2's hi is
 * q / 255 to the nearest (255 is odd: no ties; the float quotient is within
 * 1e-5 of it, the nearest integer at least 0.002 away) and lo = q - 255 hi.
 * The target has no FMA, so no multiply and add are fused (a fused x * inv
 * + 0.5 would round differently from the scalar loop). Same bytes as the
 * scalar loop (tests/py/test_quant.py kernel_paths builds both:
 * -DRL_NO_QPREP_AVX2). The scalar loop was 2% (int8) and 8% (int4) of the
 * 1.175 GB stack's time on Zen 3, mode 2 for its divisions by 255. */
static const char qavx2_prep[] =
	"#define RL_QPREP_FN static __attribute__((target(\"avx2\")))\n"
	"RL_QPREP_FN void rl_qx_amax_avx2(const float *x, int64_t K, float *amax, int *finite)\n"
	"{\n"
	"    const __m256 ab = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));\n"
	"    const __m256 big = _mm256_set1_ps(3.40282347e38f);\n"
	"    __m256 m = _mm256_setzero_ps(), bad = m;\n"
	"    int64_t k = 0;\n"
	"    for (; k + 8 <= K; k += 8) {\n"
	"        const __m256 a = _mm256_and_ps(_mm256_loadu_ps(x + k), ab);\n"
	"        bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, big, _CMP_NLE_UQ)); /* NaN, Inf */\n"
	"        m = _mm256_max_ps(a, m);\n"
	"    }\n"
	"    float t[8], am = 0.0f;\n"
	"    int fin = !_mm256_movemask_ps(bad);\n"
	"    _mm256_storeu_ps(t, m);\n"
	"    for (int i = 0; i < 8; i++)\n"
	"        am = t[i] > am ? t[i] : am;\n"
	"    for (; k < K; k++) {\n"
	"        float a = fabsf(x[k]);\n"
	"        fin &= a <= 3.40282347e38f;\n"
	"        am = a > am ? a : am;\n"
	"    }\n"
	"    *amax = am;\n"
	"    *finite = fin;\n"
	"}\n\n"
	"RL_QPREP_FN void rl_qx_prep_avx2(const float *x, int64_t K, int64_t u, int mode, int32_t qm, float inv,\n"
	"                                 unsigned char *xb, int32_t *xs, int32_t *hs)\n"
	"{\n"
	"    int64_t U = (K + u - 1) / u;\n"
	"    const __m128 vinv = _mm_set1_ps(inv), half = _mm_set1_ps(0.5f), r255 = _mm_set1_ps(1.0f / 255.0f);\n"
	"    const __m128 ab = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));\n"
	"    const __m128i hiq = _mm_set1_epi32(qm), loq = _mm_set1_epi32(-qm), c255 = _mm_set1_epi32(255);\n"
	"    /* mode 3: the record's codes 0 and 2, then 1 and 3, as int16; mode 2:\n"
	"     * the low byte of each lane */\n"
	"    const __m128i ord = _mm_setr_epi8(0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15);\n"
	"    const __m128i lob = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);\n"
	"    for (int64_t un = 0; un < U; un++) {\n"
	"        int64_t g = un / 16, i = un % 16, end = K - un * u < u ? K - un * u : u;\n"
	"        const float *xu = x + un * u;\n"
	"        unsigned char *rec = xb + g * (u / 4) * 128 + (mode == 3 ? 64 * (i / 8) + 4 * (i % 8) : 4 * i);\n"
	"        __m128i sum = _mm_setzero_si128(), hsum = sum;\n"
	"        for (int64_t j = 0; j < end; j += 4, rec += 128) {\n"
	"            __m128 v = j + 4 <= end ? _mm_loadu_ps(xu + j)\n"
	"                                    : _mm_maskload_ps(xu + j, _mm_cmpgt_epi32(_mm_set1_epi32((int)(end - j)),\n"
	"                                                                        _mm_setr_epi32(0, 1, 2, 3)));\n"
	"            v = _mm_mul_ps(v, vinv);\n"
	"            __m128i q = _mm_cvttps_epi32(_mm_add_ps(_mm_and_ps(v, ab), half));\n"
	"            q = _mm_sign_epi32(q, _mm_castps_si128(v));\n"
	"            q = _mm_max_epi32(_mm_min_epi32(q, hiq), loq);\n"
	"            sum = _mm_add_epi32(sum, q);\n"
	"            if (mode == 3) {\n"
	"                const __m128i w = _mm_shuffle_epi8(_mm_packs_epi32(q, q), ord);\n"
	"                int32_t t0 = _mm_cvtsi128_si32(w), t1 = _mm_extract_epi32(w, 1);\n"
	"                memcpy(rec, &t0, 4);\n"
	"                memcpy(rec + 32, &t1, 4);\n"
	"            } else {\n"
	"                const __m128i hi = _mm_cvtps_epi32(_mm_round_ps(_mm_mul_ps(_mm_cvtepi32_ps(q), r255),\n"
	"                                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));\n"
	"                const __m128i lo = _mm_sub_epi32(q, _mm_mullo_epi32(hi, c255));\n"
	"                int32_t t0 = _mm_cvtsi128_si32(_mm_shuffle_epi8(lo, lob));\n"
	"                int32_t t1 = _mm_cvtsi128_si32(_mm_shuffle_epi8(hi, lob));\n"
	"                memcpy(rec, &t0, 4);\n"
	"                memcpy(rec + 64, &t1, 4);\n"
	"                hsum = _mm_add_epi32(hsum, hi);\n"
	"            }\n"
	"        }\n"
	"        sum = _mm_hadd_epi32(sum, hsum);\n"
	"        sum = _mm_hadd_epi32(sum, sum);\n"
	"        xs[16 * g + i] = _mm_cvtsi128_si32(sum);\n"
	"        hs[16 * g + i] = _mm_extract_epi32(sum, 1);\n"
	"    }\n"
	"}\n\n";

/* The prepared rows' buffer, grown by NAME_init (not in static mode, where
 * it is a region of the caller's workspace). */
static const char qgemm_rt_reserve[] =
	"static size_t rl_qx_cap;\n"
	"static int rl_qx_reserve(size_t n)\n"
	"{\n"
	"    if (n <= rl_qx_cap)\n"
	"        return 0;\n"
	"    free(rl_qx);\n"
	"    rl_qx = aligned_alloc(64, (n + 63) / 64 * 64);\n"
	"    rl_qx_cap = rl_qx ? n : 0;\n"
	"    return rl_qx ? 0 : -1;\n"
	"}\n\n";

/* The helpers once per file; NAME_init finds the CPU's kernels (static
 * mode has no NAME_init: each product finds them before it runs, and takes
 * its prepared rows from the workspace). */
static void qgemm_runtime(struct rl_cgen *cg)
{
	static const char mark[] = "/* ---- quantized products";
	if (cg->statics.s && strstr(cg->statics.s, mark))
		return;
	cg->need_half = 1; /* rl_h2f: float16 scales */
	rl_buf_printf(&cg->statics, "%s", qgemm_rt);
	rl_buf_printf(&cg->statics, "#ifdef RL_QVNNI\n"
	              "#define RL_QVNNI_FN static __attribute__((target(\"avx512f,avx512bw,avx512vl,"
	              "avx512vnni\")))\n");
	for (int bits = 8; bits >= 4; bits -= 4)
		for (int nc = 4; nc >= 1; nc -= 3)
			gen_vnni(&cg->statics, bits, nc);
	rl_buf_printf(&cg->statics, "#endif\n\n#ifdef RL_QAVX2\n"
	              "#define RL_QAVX2_FN static __attribute__((target(\"avx2,fma,f16c\")))\n%s%s%s",
	              qavx2_helpers, qavx2_kernels, qavx2_prep);
	rl_buf_printf(&cg->statics, "#endif\n\n%s%s", qgemm_rt_prep, qgemm_rt_tail);
	if (cg->static_mode)
		return;
	rl_buf_printf(&cg->statics, "%s", qgemm_rt_reserve);
	rl_buf_printf(&cg->init, "    rl_q_detect();\n");
	rl_buf_printf(&cg->fini, "    free(rl_qx);\n    rl_qx = NULL;\n    rl_qx_cap = 0;\n");
}

enum rl_status rl_emit_c_qgemm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_graph *g = cg->g;
	const struct rl_node *n = &g->nodes[node];
	int64_t K = rl_node_attr_int(n, "K", 0), N = rl_node_attr_int(n, "N", 0);
	int64_t bits = rl_node_attr_int(n, "bits", 0), bs = rl_node_attr_int(n, "block_size", 0);
	int64_t M = rl_shape_numel(&g->values[n->out[0]].shape) / (N ? N : 1);
	if (K <= 0 || N <= 0 || M < 0 || (bits != 8 && bits != 4) || bs <= 0)
		return cg_error(cg, node, "QuantMatMul with K=%lld N=%lld bits=%lld", (long long)K,
		                (long long)N, (long long)bits);
	int64_t nb = (K + bs - 1) / bs, u = rl_qweight_unit((int)bits, K, bs);
	int64_t rowbytes = rl_qweight_rowbytes((int)bits, K, bs);
	int64_t G = ((K + u - 1) / u + 15) / 16, prep = 64 + G * (64 * u + 128);
	bool zp = rl_node_in(n, 3) != RL_NONE, bias = rl_node_in(n, 4) != RL_NONE;
	int hs = g->values[rl_node_in(n, 2)].dtype == RL_DT_FLOAT16;
	qgemm_runtime(cg);
	int64_t xbytes = prep * (M < 1 ? 1 : M);
	if (cg->static_mode) {
		/* kernels run one at a time: the rows at this kernel's offset */
		int64_t off = cg->scratch_base + cg->scratch_cur;
		cg->scratch_cur += (xbytes + 63) / 64 * 64;
		if (cg->scratch_cur > cg->scratch_max)
			cg->scratch_max = cg->scratch_cur;
		rl_buf_printf(&cg->pre, "    rl_q_detect();\n    rl_qx = %s + %lld; /* scratch, %lld bytes */\n",
		              cg->ws_name, (long long)off, (long long)xbytes);
	} else {
		rl_buf_printf(&cg->init, "    if (rl_qx_reserve(%lld))\n        return -1;\n",
		              (long long)xbytes);
	}
	cg->simd = 1;
	int64_t groups = (N + QCOLS - 1) / QCOLS;
	/* a task: at least 64 KiB of codes, or the rows' worth of work (the
	 * cost model prices this split: ir/qweights.c rl_qmatmul_tasks) */
	cg->par_n = groups;
	cg->par_grain = rl_qmatmul_grain((int)bits, K, bs, M);
	/* the rows are prepared once, on the calling thread (this text is not
	 * a kernel body, so cg_tidy does not see it: one row is no loop) */
	if (M == 1)
		rl_buf_printf(&cg->pre, "    rl_qx_prep(X0, %lld, %lld, %d, rl_qx);\n", (long long)K,
		              (long long)u, (int)bits);
	else
		rl_buf_printf(&cg->pre, "    for (int64_t m = 0; m < %lld; m++)\n"
		              "        rl_qx_prep(X0 + m * %lld, %lld, %lld, %d, rl_qx + m * %lld);\n",
		              (long long)M, (long long)K, (long long)K, (long long)u, (int)bits, (long long)prep);
	cg_line(cg, "/* %lld x %lld int%lld weight, %s, block %lld: %lld bytes of codes, %s scales */",
	        (long long)K, (long long)N, (long long)bits,
	        bits == 8 ? (nb == 1 ? "one scale per output channel" : "symmetric")
	                  : (zp ? "zero point per block" : "symmetric"),
	        (long long)bs, (long long)(N * rowbytes), hs ? "float16" : "float32");
	cg_line(cg, "for (int64_t grp = lo; grp < hi; grp++) {");
	cg->indent++;
	cg_line(cg, "int64_t n1 = grp * %d + %d < %lld ? grp * %d + %d : %lld;", QCOLS, QCOLS,
	        (long long)N, QCOLS, QCOLS, (long long)N);
	cg_line(cg, "for (int64_t m = 0; m < %lld; m++) {", (long long)M);
	cg->indent++;
	char zexpr[64];
	snprintf(zexpr, sizeof(zexpr), "X3 + n * %lld", (long long)nb);
	cg_line(cg, "int64_t n = grp * %d;", QCOLS);
	for (int nc = 4; nc >= 1; nc -= 3) {
		cg_line(cg, "for (; n + %d <= n1; n += %d)", nc, nc);
		cg_line(cg, "    rl_qcols(%lld, %d, %lld, %lld, %lld, X0 + m * %lld, rl_qx + m * %lld, "
		        "X1 + n * %lld, %lld, X2 + n * %lld, %d, %s, Y0 + m * %lld + n);", (long long)bits, nc,
		        (long long)K, (long long)u, (long long)nb, (long long)K, (long long)prep,
		        (long long)rowbytes, (long long)rowbytes, (long long)nb, hs, zp ? zexpr : "NULL",
		        (long long)N);
	}
	if (bias) {
		cg_line(cg, "for (n = grp * %d; n < n1; n++)", QCOLS);
		cg_line(cg, "    Y0[m * %lld + n] += X4[n];", (long long)N);
	}
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}
