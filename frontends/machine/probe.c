/*
 * probe.c - measure this machine (`rlopt probe`) into a "host" profile.
 *
 * The shipped profiles are datasheet numbers; predictions are only as good as
 * the numbers, so this measures the ones the cost model uses, on the machine
 * the generated code will run on: a few seconds on an idle machine, longer
 * on a busy one, under 30 s (past RL_BUDGET_S every remaining figure gets
 * three runs):
 *
 *   - streaming read, write and copy bandwidth with a working set sized for
 *     each cache level (half its size, so it stays resident) and for main
 *     memory (well beyond the last cache), every thread on its own buffer,
 *     all threads at once (the profile's levels are aggregate figures);
 *     main memory also with one thread, for the log and comment;
 *   - peak fp32 and fp64 FMA rate and int8 dot-product rate, one thread and
 *     all threads, from chains of independent accumulators in vector
 *     registers, so the number is the issue rate, not the latency;
 *   - strided (whole 64-byte lines, 4160 B apart) and gathered (random 4-byte
 *     elements) read rates at main memory, as fractions of the contiguous read;
 *   - the launch latency of a CPU kernel: the time of one call of the
 *     smallest possible kernel through a pointer the compiler cannot inline.
 *
 * Timing is CLOCK_MONOTONIC around a job released to all threads at once;
 * each figure is the best of many short runs (~1 ms). Short, because a
 * shared or quota-limited machine (a CI container, a VM) preempts long runs
 * and best-of then has no clean run to pick; best, because nothing makes a
 * run faster than the hardware allows. In an all-thread run the threads
 * first meet at a spinning rendezvous, then each reads the clock itself; the
 * run lasts from the first start to the last finish. So the pool's wake-up
 * (tens of microseconds, milliseconds on a loaded machine) is not counted,
 * the threads really run side by side, and a run in which any of them was
 * preempted is longer and loses to one in which none was. A run over a
 * working set larger than RL_CHUNK reads the next chunk of it, so
 * main-memory runs stay short and still never hit in cache. Every result is
 * folded into a volatile sink so the compiler cannot drop the work.
 *
 * The library is built at -O2 for a baseline x86-64, so the hot loops are
 * written with GCC vector extensions and intrinsics inside `#pragma GCC
 * target` regions (AVX-512, AVX2+FMA, baseline SSE2), picked at run time with
 * __builtin_cpu_supports. Other targets and compilers get the portable
 * baseline kernels only. Library code: no exit(), errors come back in err.
 */
#include "machine.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RL_PROBE_X86 1
#include <immintrin.h>
#else
#define RL_PROBE_X86 0
#endif

#define RL_KIB ((size_t)1024)
#define RL_MIB (1024 * RL_KIB)
#define RL_GIB (1024 * RL_MIB)
#define RL_LINE 64                /* bytes per cache line assumed by the strided test */
#define RL_STRIDE_LINES 65        /* 4160 B: odd, so it visits every line once per sweep */
#define RL_ACC 12                 /* independent FMA chains: > latency x pipes everywhere */
#define RL_CHUNK RL_MIB           /* bytes per thread per rep in a larger working set */
#ifndef RL_RUN_S
#define RL_RUN_S 0.001            /* target length of one timed run */
#endif
#ifndef RL_SAMPLES
#define RL_SAMPLES 41             /* best of this many runs (twice that for all threads) */
#endif
#define RL_BUDGET_S 24.0          /* past this, three runs per remaining figure */
#define RL_MAX_THREADS 1024

/* Non-constant inputs the compiler cannot fold, and the sink that keeps
 * every result alive. */
static volatile float rl_vf_one = 1.0f, rl_vf_zero = 0.0f;
static volatile float rl_vf_mul = 0.999999f, rl_vf_add = 1e-6f;
static volatile double rl_vd_mul = 0.999999999, rl_vd_add = 1e-9;
static volatile double rl_sink;

static double rl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- kernels ------------------------------------------------------------ */

typedef float rl_v4f __attribute__((vector_size(16)));
typedef double rl_v2d __attribute__((vector_size(16)));
#if RL_PROBE_X86
typedef float rl_v8f __attribute__((vector_size(32)));
typedef float rl_v16f __attribute__((vector_size(64)));
#endif

/*
 * Streaming and strided kernels, written once over a vector type VT and
 * instantiated per ISA. n counts floats and is a multiple of 8 vectors
 * (buffers are whole pages). Eight accumulators keep the adds off the
 * critical path so an L1-resident read runs at the load ports' rate.
 */
#define RL_VLEN(VT) (sizeof(VT) / sizeof(float))
#define RL_DEFINE_STREAM_KERNELS(SFX, VT)                                        \
	static double rl_read_##SFX(const float *p, size_t n, size_t reps)       \
	{                                                                        \
		const VT *v = (const VT *)(const void *)p;                       \
		size_t nv = n / RL_VLEN(VT);                                     \
		VT a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};                       \
		VT a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};                       \
		for (size_t r = 0; r < reps; r++)                                \
			for (size_t i = 0; i + 8 <= nv; i += 8) {                \
				a0 += v[i];                                      \
				a1 += v[i + 1];                                  \
				a2 += v[i + 2];                                  \
				a3 += v[i + 3];                                  \
				a4 += v[i + 4];                                  \
				a5 += v[i + 5];                                  \
				a6 += v[i + 6];                                  \
				a7 += v[i + 7];                                  \
			}                                                        \
		VT s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));        \
		double t = 0;                                                    \
		for (size_t k = 0; k < RL_VLEN(VT); k++)                         \
			t += s[k];                                               \
		return t;                                                        \
	}                                                                        \
	/* the stored value changes every pass, so no pass is a dead store */   \
	static double rl_write_##SFX(float *p, size_t n, size_t reps)            \
	{                                                                        \
		VT *v = (VT *)(void *)p;                                         \
		size_t nv = n / RL_VLEN(VT);                                     \
		VT x = {0}, one = {0};                                           \
		x[0] = rl_vf_one;                                                \
		one += rl_vf_one;                                                \
		for (size_t r = 0; r < reps; r++) {                              \
			for (size_t i = 0; i < nv; i++)                          \
				v[i] = x;                                        \
			x += one;                                                \
		}                                                                \
		return p[0] + p[n - 1];                                          \
	}                                                                        \
	/* + k (zero at run time) keeps GCC from turning the loop into a       \
	 * memcpy call, whose non-temporal stores generated code would not     \
	 * use */                                                               \
	static double rl_copy_##SFX(float *dst, const float *src, size_t n,      \
	                            size_t reps)                                 \
	{                                                                        \
		VT *d = (VT *)(void *)dst;                                       \
		const VT *s = (const VT *)(const void *)src;                     \
		size_t nv = n / RL_VLEN(VT);                                     \
		VT k = {0};                                                      \
		k[0] = rl_vf_zero;                                               \
		for (size_t r = 0; r < reps; r++)                                \
			for (size_t i = 0; i < nv; i++)                          \
				d[i] = s[i] + k;                                 \
		return dst[0] + dst[n - 1];                                      \
	}                                                                        \
	/* whole lines, RL_STRIDE_LINES apart, continuing from *pos */           \
	static double rl_strided_##SFX(const float *p, size_t line_mask,         \
	                               size_t *pos, size_t count)                \
	{                                                                        \
		VT a = {0};                                                      \
		size_t k = *pos;                                                 \
		for (size_t i = 0; i < count; i++, k++) {                        \
			const VT *v = (const VT *)(const void *)(                \
			        p + ((k * RL_STRIDE_LINES) & line_mask) *        \
			                    (RL_LINE / sizeof(float)));          \
			for (size_t j = 0; j < RL_LINE / sizeof(VT); j++)        \
				a += v[j];                                       \
		}                                                                \
		*pos = k;                                                        \
		double t = 0;                                                    \
		for (size_t j = 0; j < RL_VLEN(VT); j++)                         \
			t += a[j];                                               \
		return t;                                                        \
	}

/*
 * Twelve independent chains of a = a * m + c, in named variables so they
 * live in registers: FMA latency 4-5 cycles x 2 pipes needs 8-10 in flight,
 * and twelve plus two constants fit in 16 vector registers. m < 1 and a
 * small c hold each chain at a fixed point near c / (1 - m): no overflow,
 * no denormals. SET1 broadcasts a scalar, FMA is an intrinsic or, for the
 * baseline, plain a * m + c: a multiply and an add without FMA hardware
 * (and without contraction, ISO C's default), still 2 FLOP per lane.
 */
#define RL_FMA_BODY(VT, SET1, FMA, MUL, ADD)                                      \
	VT m = SET1(MUL), c = SET1(ADD);                                          \
	VT a0 = SET1(1), a1 = SET1(2), a2 = SET1(3), a3 = SET1(4);                \
	VT a4 = SET1(5), a5 = SET1(6), a6 = SET1(7), a7 = SET1(8);                \
	VT a8 = SET1(9), a9 = SET1(10), a10 = SET1(11), a11 = SET1(12);           \
	for (size_t it = 0; it < iters; it++) {                                   \
		a0 = FMA(a0, m, c);                                               \
		a1 = FMA(a1, m, c);                                               \
		a2 = FMA(a2, m, c);                                               \
		a3 = FMA(a3, m, c);                                               \
		a4 = FMA(a4, m, c);                                               \
		a5 = FMA(a5, m, c);                                               \
		a6 = FMA(a6, m, c);                                               \
		a7 = FMA(a7, m, c);                                               \
		a8 = FMA(a8, m, c);                                               \
		a9 = FMA(a9, m, c);                                               \
		a10 = FMA(a10, m, c);                                             \
		a11 = FMA(a11, m, c);                                             \
	}                                                                         \
	VT s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) +                \
	       ((a8 + a9) + (a10 + a11));

#define RL_SET1_V4F(x) ((rl_v4f){0} + (float)(x))
#define RL_SET1_V2D(x) ((rl_v2d){0} + (double)(x))
#define RL_MULADD(a, m, c) ((a) * (m) + (c))

RL_DEFINE_STREAM_KERNELS(base, rl_v4f)

static double rl_fma32_base(size_t iters)
{
	RL_FMA_BODY(rl_v4f, RL_SET1_V4F, RL_MULADD, rl_vf_mul, rl_vf_add)
	return (double)s[0] + s[1] + s[2] + s[3];
}

static double rl_fma64_base(size_t iters)
{
	RL_FMA_BODY(rl_v2d, RL_SET1_V2D, RL_MULADD, rl_vd_mul, rl_vd_add)
	return s[0] + s[1];
}

#if RL_PROBE_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
RL_DEFINE_STREAM_KERNELS(avx2, rl_v8f)

static double rl_fma32_avx2(size_t iters)
{
	RL_FMA_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, rl_vf_mul, rl_vf_add)
	float out[8];
	_mm256_storeu_ps(out, s);
	double t = 0;
	for (int k = 0; k < 8; k++)
		t += out[k];
	return t;
}

/* One dependent chain, 8 FMAs per iteration: the FMA latency. */
static double rl_fmachain_avx2(size_t iters)
{
	__m256 a = _mm256_set1_ps(rl_vf_one), m = _mm256_set1_ps(rl_vf_mul);
	__m256 c = _mm256_set1_ps(rl_vf_add);
	for (size_t it = 0; it < iters; it++) {
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
		a = _mm256_fmadd_ps(a, m, c);
	}
	float out[8];
	_mm256_storeu_ps(out, a);
	return out[0];
}

static double rl_fma64_avx2(size_t iters)
{
	RL_FMA_BODY(__m256d, _mm256_set1_pd, _mm256_fmadd_pd, rl_vd_mul, rl_vd_add)
	double out[4];
	_mm256_storeu_pd(out, s);
	return out[0] + out[1] + out[2] + out[3];
}

/*
 * int8 without VNNI: the usual pre-VNNI sequence, u8 x s8 pairs summed to
 * s16 (vpmaddubsw), pairs of those to s32 (vpmaddwd by ones), accumulated:
 * 32 multiply-adds (64 OP) per three instructions. The inputs never change,
 * so an empty asm per chain tells the compiler they might; without it the
 * multiplies would be hoisted out of the loop (or shared by the chains) and
 * only the adds timed. Four chains: the adds are the only loop-carried
 * dependency, and 4 inputs + 4 sums + 2 constants fit in 16 registers.
 */
static double rl_dot8_avx2(size_t iters)
{
	__m256i a0 = _mm256_set1_epi8(3), a1 = _mm256_set1_epi8(5);
	__m256i a2 = _mm256_set1_epi8(7), a3 = _mm256_set1_epi8(9);
	__m256i b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
	__m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
	for (size_t it = 0; it < iters; it++) {
		__asm__("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3));
		c0 = _mm256_add_epi32(c0, _mm256_madd_epi16(_mm256_maddubs_epi16(a0, b), ones));
		c1 = _mm256_add_epi32(c1, _mm256_madd_epi16(_mm256_maddubs_epi16(a1, b), ones));
		c2 = _mm256_add_epi32(c2, _mm256_madd_epi16(_mm256_maddubs_epi16(a2, b), ones));
		c3 = _mm256_add_epi32(c3, _mm256_madd_epi16(_mm256_maddubs_epi16(a3, b), ones));
	}
	__m256i s = _mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3));
	int out[8];
	_mm256_storeu_si256((__m256i *)(void *)out, s);
	double t = 0;
	for (int k = 0; k < 8; k++)
		t += out[k];
	return t;
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma,avxvnni")
/* AVX-VNNI (Alder Lake and later clients): 32 u8 x s8 MACs per vpdpbusd. */
static double rl_dot8_avxvnni(size_t iters)
{
	__m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
	__m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0;
	__m256i c4 = c0, c5 = c0, c6 = c0, c7 = c0;
	for (size_t it = 0; it < iters; it++) {
		c0 = _mm256_dpbusd_avx_epi32(c0, a, b);
		c1 = _mm256_dpbusd_avx_epi32(c1, a, b);
		c2 = _mm256_dpbusd_avx_epi32(c2, a, b);
		c3 = _mm256_dpbusd_avx_epi32(c3, a, b);
		c4 = _mm256_dpbusd_avx_epi32(c4, a, b);
		c5 = _mm256_dpbusd_avx_epi32(c5, a, b);
		c6 = _mm256_dpbusd_avx_epi32(c6, a, b);
		c7 = _mm256_dpbusd_avx_epi32(c7, a, b);
	}
	__m256i s = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1),
	                                              _mm256_add_epi32(c2, c3)),
	                             _mm256_add_epi32(_mm256_add_epi32(c4, c5),
	                                              _mm256_add_epi32(c6, c7)));
	int out[8];
	_mm256_storeu_si256((__m256i *)(void *)out, s);
	double t = 0;
	for (int k = 0; k < 8; k++)
		t += out[k];
	return t;
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f")
RL_DEFINE_STREAM_KERNELS(avx512, rl_v16f)

static double rl_fma32_avx512(size_t iters)
{
	RL_FMA_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, rl_vf_mul, rl_vf_add)
	return _mm512_reduce_add_ps(s);
}

static double rl_fmachain_avx512(size_t iters)
{
	__m512 a = _mm512_set1_ps(rl_vf_one), m = _mm512_set1_ps(rl_vf_mul);
	__m512 c = _mm512_set1_ps(rl_vf_add);
	for (size_t it = 0; it < iters; it++) {
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
		a = _mm512_fmadd_ps(a, m, c);
	}
	return _mm512_reduce_add_ps(a);
}

static double rl_fma64_avx512(size_t iters)
{
	RL_FMA_BODY(__m512d, _mm512_set1_pd, _mm512_fmadd_pd, rl_vd_mul, rl_vd_add)
	return _mm512_reduce_add_pd(s);
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vnni")
/* AVX512-VNNI (Cascade Lake and later, Zen 4): 64 MACs per vpdpbusd. */
static double rl_dot8_avx512vnni(size_t iters)
{
	__m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
	__m512i c0 = _mm512_setzero_si512(), c1 = c0, c2 = c0, c3 = c0;
	__m512i c4 = c0, c5 = c0, c6 = c0, c7 = c0;
	for (size_t it = 0; it < iters; it++) {
		c0 = _mm512_dpbusd_epi32(c0, a, b);
		c1 = _mm512_dpbusd_epi32(c1, a, b);
		c2 = _mm512_dpbusd_epi32(c2, a, b);
		c3 = _mm512_dpbusd_epi32(c3, a, b);
		c4 = _mm512_dpbusd_epi32(c4, a, b);
		c5 = _mm512_dpbusd_epi32(c5, a, b);
		c6 = _mm512_dpbusd_epi32(c6, a, b);
		c7 = _mm512_dpbusd_epi32(c7, a, b);
	}
	__m512i s = _mm512_add_epi32(_mm512_add_epi32(_mm512_add_epi32(c0, c1),
	                                              _mm512_add_epi32(c2, c3)),
	                             _mm512_add_epi32(_mm512_add_epi32(c4, c5),
	                                              _mm512_add_epi32(c6, c7)));
	return (double)_mm512_reduce_add_epi32(s);
}
#pragma GCC pop_options
#endif /* RL_PROBE_X86 */

/* The chosen kernel set for this CPU, with the work each unit of it does. */
struct rl_kernels {
	const char *isa;      /* "avx512", "avx2+fma", "baseline" */
	const char *dot8_isa; /* NULL when int8 is not measured */
	double (*fma_chain)(size_t iters); /* 8 dependent fp32 FMAs per iteration;
	                                      NULL without FMA instructions */
	double (*read)(const float *p, size_t n, size_t reps);
	double (*write)(float *p, size_t n, size_t reps);
	double (*copy)(float *dst, const float *src, size_t n, size_t reps);
	double (*strided)(const float *p, size_t line_mask, size_t *pos, size_t count);
	double (*fma32)(size_t iters);
	double (*fma64)(size_t iters);
	double (*dot8)(size_t iters);
	double fma32_flop; /* per iteration */
	double fma64_flop;
	double dot8_op;
};

static struct rl_kernels rl_kernels_pick(void)
{
	struct rl_kernels k = {
		.isa = "baseline",
		.read = rl_read_base,
		.write = rl_write_base,
		.copy = rl_copy_base,
		.strided = rl_strided_base,
		.fma32 = rl_fma32_base,
		.fma64 = rl_fma64_base,
		.fma32_flop = RL_ACC * 4 * 2,
		.fma64_flop = RL_ACC * 2 * 2,
	};
#if RL_PROBE_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
		k.isa = "avx2+fma";
		k.read = rl_read_avx2;
		k.write = rl_write_avx2;
		k.copy = rl_copy_avx2;
		k.strided = rl_strided_avx2;
		k.fma32 = rl_fma32_avx2;
		k.fma64 = rl_fma64_avx2;
		k.fma_chain = rl_fmachain_avx2;
		k.fma32_flop = RL_ACC * 8 * 2;
		k.fma64_flop = RL_ACC * 4 * 2;
		k.dot8_isa = "avx2 vpmaddubsw+vpmaddwd";
		k.dot8 = rl_dot8_avx2;
		k.dot8_op = 4 * 32 * 2;
		if (__builtin_cpu_supports("avxvnni")) {
			k.dot8_isa = "avx-vnni vpdpbusd";
			k.dot8 = rl_dot8_avxvnni;
			k.dot8_op = 8 * 32 * 2;
		}
	}
	if (__builtin_cpu_supports("avx512f")) {
		k.isa = "avx512";
		k.read = rl_read_avx512;
		k.write = rl_write_avx512;
		k.copy = rl_copy_avx512;
		k.strided = rl_strided_avx512;
		k.fma32 = rl_fma32_avx512;
		k.fma64 = rl_fma64_avx512;
		k.fma_chain = rl_fmachain_avx512;
		k.fma32_flop = RL_ACC * 16 * 2;
		k.fma64_flop = RL_ACC * 8 * 2;
		if (__builtin_cpu_supports("avx512vnni")) {
			k.dot8_isa = "avx512-vnni vpdpbusd";
			k.dot8 = rl_dot8_avx512vnni;
			k.dot8_op = 8 * 64 * 2;
		}
	}
#endif
	return k;
}

/* Pseudo-random 4-byte reads over the buffer, eight independent streams so
 * the out-of-order core can keep several misses in flight, as a gather over
 * a large tensor would. An LCG costs two instructions; an index array
 * would itself be streamed from memory and blur the measurement. */
static double rl_gather(const float *p, size_t mask, uint64_t *state, size_t count)
{
	uint64_t s[8];
	float a[8] = {0};
	for (int j = 0; j < 8; j++)
		s[j] = state[j];
	for (size_t i = 0; i < count; i++)
		for (int j = 0; j < 8; j++) {
			s[j] = s[j] * 6364136223846793005ull + 1442695040888963407ull;
			a[j] += p[(s[j] >> 24) & mask];
		}
	double t = 0;
	for (int j = 0; j < 8; j++) {
		state[j] = s[j];
		t += a[j];
	}
	return t;
}

/*
 * The smallest kernel generated code can contain: a loop over a few
 * elements, called through a volatile pointer so it can be neither inlined
 * nor devirtualised. Its time per call is the floor every node pays however
 * small it is (call, prologue, loop setup and exit, return), which is what
 * launch latency means on a CPU. The empty-call difference against the same
 * loop inlined is logged too; out-of-order execution hides most of it.
 */
__attribute__((noinline)) static float rl_tiny_kernel(float *b, int n, float x)
{
	for (int i = 0; i < n; i++)
		b[i] = b[i] * 0.5f + x;
	return b[n - 1];
}
static float (*volatile rl_tiny_ptr)(float *, int, float) = rl_tiny_kernel;
static volatile int rl_tiny_n = 4;

/* ---- threads ------------------------------------------------------------ */

enum rl_job {
	RL_JOB_NOP,     /* nothing: measures the fork/join itself */
	RL_JOB_ALLOC,   /* allocate and first-touch each thread's buffer */
	RL_JOB_READ,
	RL_JOB_WRITE,
	RL_JOB_COPY,
	RL_JOB_STRIDED,
	RL_JOB_GATHER,
	RL_JOB_FMA32,
	RL_JOB_FMA64,
	RL_JOB_DOT8,
};

/* Per-thread state, padded to its own cache lines. */
struct rl_slot {
	float *buf;
	size_t buf_bytes;
	size_t pos;             /* next chunk of a large working set */
	size_t stride_pos;
	uint64_t gather_state[8];
	double result;
	double t_begin, t_end;  /* this thread's part of the last run */
	char pad[64];
};

/*
 * A fork/join pool: the caller is thread 0, the others wait for a new
 * generation number, run the job and count down. A mutex and two condition
 * variables rather than a pthread barrier, because a barrier's count is
 * fixed up front and a thread that fails to start would deadlock it; here n
 * is simply however many started.
 */
struct rl_probe {
	int n;                    /* threads, the caller included */
	int started;              /* pool threads running */
	pthread_t *tid;
	cpu_set_t home;           /* the caller's CPUs before it was pinned, */
	bool pinned;              /* restored by rl_probe_stop: what the probe
	                           * runs after (the calibration's compiler and
	                           * program, whose thread pool is timed) inherits
	                           * the caller's affinity */
	bool sync_ok;             /* mutex and condition variables initialised */
	pthread_mutex_t mu;
	pthread_cond_t go_cv, done_cv;
	unsigned gen;             /* bumped to release a job */
	int pending;              /* pool threads still working on it */
	atomic_int arrived;       /* active threads at the rendezvous */
	bool quit;
	struct rl_slot *slot;
	struct rl_kernels k;
	/* the current job */
	enum rl_job job;
	int active;               /* threads 0..active-1 work, the rest wait */
	size_t bytes;             /* working set per thread */
	size_t reps;
	/* bookkeeping */
	double t_start;
	int samples;
	double run_s;
	FILE *log;
};

struct rl_worker {
	struct rl_probe *p;
	int id;
};

static void rl_job_run(struct rl_probe *p, int id)
{
	if (id >= p->active)
		return;
	struct rl_slot *s = &p->slot[id];
	size_t nf = p->bytes / sizeof(float);
	double r = 0;
	if (p->active > 1) {
		/* rendezvous: start together, not as each happens to wake */
		atomic_fetch_add(&p->arrived, 1);
		for (unsigned spin = 0; atomic_load(&p->arrived) < p->active; spin++)
			if (spin > 1000)
				sched_yield(); /* someone is descheduled: let them run */
	}
	s->t_begin = rl_now();
	switch (p->job) {
	case RL_JOB_NOP:
		break;
	case RL_JOB_ALLOC:
		s->buf = aligned_alloc(4096, s->buf_bytes);
		if (s->buf) {
			/* first touch from this thread puts the pages on its
			 * NUMA node; 1.0f everywhere keeps the sums finite */
			size_t n = s->buf_bytes / sizeof(float);
			for (size_t i = 0; i < n; i++)
				s->buf[i] = 1.0f;
		}
		break;
	case RL_JOB_READ:
	case RL_JOB_WRITE:
	case RL_JOB_COPY:
		if (p->bytes <= RL_CHUNK) {
			/* the whole working set, reps times over */
			if (p->job == RL_JOB_READ)
				r = p->k.read(s->buf, nf, p->reps);
			else if (p->job == RL_JOB_WRITE)
				r = p->k.write(s->buf, nf, p->reps);
			else
				r = p->k.copy(s->buf + nf / 2, s->buf, nf / 2, p->reps);
			break;
		}
		/* one chunk per rep, moving through the working set (the
		 * copy's source and destination halves in step) */
		for (size_t rep = 0; rep < p->reps; rep++) {
			size_t span = p->job == RL_JOB_COPY ? p->bytes / 2 : p->bytes;
			size_t len = p->job == RL_JOB_COPY ? RL_CHUNK / 2 : RL_CHUNK;
			if (s->pos + len > span)
				s->pos = 0;
			float *at = s->buf + s->pos / sizeof(float);
			size_t n = len / sizeof(float);
			if (p->job == RL_JOB_READ)
				r += p->k.read(at, n, 1);
			else if (p->job == RL_JOB_WRITE)
				r += p->k.write(at, n, 1);
			else
				r += p->k.copy(at + nf / 2, at, n, 1);
			s->pos += len;
		}
		break;
	case RL_JOB_STRIDED: {
		size_t lines = p->bytes / RL_LINE, pow2 = 1;
		while (pow2 * 2 <= lines)
			pow2 *= 2;
		r = p->k.strided(s->buf, pow2 - 1, &s->stride_pos,
		                 p->reps * RL_KIB);
		break;
	}
	case RL_JOB_GATHER: {
		size_t pow2 = 1;
		while (pow2 * 2 <= nf)
			pow2 *= 2;
		r = rl_gather(s->buf, pow2 - 1, s->gather_state, p->reps * RL_KIB);
		break;
	}
	case RL_JOB_FMA32:
		r = p->k.fma32(p->reps * RL_KIB);
		break;
	case RL_JOB_FMA64:
		r = p->k.fma64(p->reps * RL_KIB);
		break;
	case RL_JOB_DOT8:
		r = p->k.dot8(p->reps * RL_KIB);
		break;
	}
	s->result += r;
	s->t_end = rl_now();
}

static void *rl_worker_main(void *arg)
{
	struct rl_worker *w = arg;
	struct rl_probe *p = w->p;
	unsigned seen = 0;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go_cv, &p->mu);
		seen = p->gen;
		bool quit = p->quit;
		pthread_mutex_unlock(&p->mu);
		if (quit)
			break;
		rl_job_run(p, w->id);
		pthread_mutex_lock(&p->mu);
		if (--p->pending == 0)
			pthread_cond_signal(&p->done_cv);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

/* Run the current job on all threads; seconds from the first active
 * thread's start to the last one's finish. The job's parameters, written
 * before the lock, are visible to the workers after it, and their
 * timestamps to the caller after its wait. */
static double rl_pool_run(struct rl_probe *p)
{
	double t0 = rl_now();
	if (p->active == 1) {
		/* one thread: waking the pool would only add its wake-up time,
		 * milliseconds on a loaded machine */
		rl_job_run(p, 0);
		return rl_now() - t0;
	}
	atomic_store(&p->arrived, 0);
	pthread_mutex_lock(&p->mu);
	p->gen++;
	p->pending = p->started;
	pthread_cond_broadcast(&p->go_cv);
	pthread_mutex_unlock(&p->mu);
	rl_job_run(p, 0);
	pthread_mutex_lock(&p->mu);
	while (p->pending > 0)
		pthread_cond_wait(&p->done_cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
	if (p->job == RL_JOB_NOP)
		return rl_now() - t0; /* the fork/join itself is the measurement */
	double first = p->slot[0].t_begin, last = p->slot[0].t_end;
	for (int i = 1; i < p->active; i++) {
		if (p->slot[i].t_begin < first)
			first = p->slot[i].t_begin;
		if (p->slot[i].t_end > last)
			last = p->slot[i].t_end;
	}
	return last - first;
}

/* Pin thread i to the i-th CPU we may run on: steadier numbers, and no two
 * threads sharing a core's L1 while another core idles. */
static void rl_pin(pthread_t t, int i)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return;
	for (int c = 0, seen = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (seen++ == i) {
			cpu_set_t one;
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			(void)pthread_setaffinity_np(t, sizeof one, &one);
			return;
		}
	}
}

static int rl_cpu_count(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int n = online > 0 ? (int)online : 1;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		int a = CPU_COUNT(&set);
		if (a > 0 && a < n)
			n = a; /* a container or taskset may allow fewer */
	}
	return n > RL_MAX_THREADS ? RL_MAX_THREADS : n;
}

/* ---- measuring ---------------------------------------------------------- */

/* Best time of the current job with p->reps fixed by calibration: grow reps
 * until one run takes about run_s, then keep the fastest of samples runs. */
static double rl_best_time(struct rl_probe *p)
{
	bool late = rl_now() - p->t_start > RL_BUDGET_S;
	double target = p->run_s;
	/* all threads running undisturbed at once is rarer than one: more tries */
	int samples = late ? 3 : p->active > 1 ? 2 * p->samples : p->samples;
	/* the shorter of two runs at each step, so one preempted run does
	 * not stop the growth early and leave runs the fork/join dominates */
	p->reps = 1;
	double t = rl_pool_run(p); /* also the warm-up */
	double t2 = rl_pool_run(p);
	t = t2 < t ? t2 : t;
	while (t < 0.5 * target && p->reps < ((size_t)1 << 40)) {
		double f = target / (t > 1e-6 ? t : 1e-6);
		size_t grow = (size_t)(f > 1000 ? 1000 : f < 2 ? 2 : f);
		p->reps *= grow;
		t = rl_pool_run(p);
		t2 = rl_pool_run(p);
		t = t2 < t ? t2 : t;
	}
	double best = t;
	for (int i = 1; i < samples; i++) {
		t = rl_pool_run(p);
		if (t < best)
			best = t;
	}
	return best;
}

/* Bytes/s of a memory job over a working set of ws bytes per thread, each
 * active thread moving per_rep useful bytes per rep. Streaming jobs move
 * rl_stream_rep(ws) per rep (copy: half read, half written). */
static double rl_bw(struct rl_probe *p, enum rl_job job, int active, size_t ws,
                    double per_rep)
{
	p->job = job;
	p->active = active;
	p->bytes = ws;
	double t = rl_best_time(p);
	return per_rep * (double)p->reps * active / t;
}

/* FLOP/s (OP/s) of a compute job. */
static double rl_stream_rep(size_t ws)
{
	return (double)(ws <= RL_CHUNK ? ws : RL_CHUNK);
}

static double rl_rate(struct rl_probe *p, enum rl_job job, int active,
                      double per_iter)
{
	p->job = job;
	p->active = active;
	p->bytes = 0;
	double t = rl_best_time(p);
	return per_iter * (double)RL_KIB * (double)p->reps * active / t;
}

static void rl_logf(struct rl_probe *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rl_logf(struct rl_probe *p, const char *fmt, ...)
{
	if (!p->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	fputs("probe: ", p->log);
	vfprintf(p->log, fmt, ap);
	fputc('\n', p->log);
	va_end(ap);
	fflush(p->log);
}

/* "32 KiB", "1.5 MiB", "8 GiB" */
static const char *rl_size_str(char *buf, size_t len, double b)
{
	if (b >= (double)RL_GIB)
		snprintf(buf, len, "%.3g GiB", b / (double)RL_GIB);
	else if (b >= (double)RL_MIB)
		snprintf(buf, len, "%.3g MiB", b / (double)RL_MIB);
	else
		snprintf(buf, len, "%.3g KiB", b / (double)RL_KIB);
	return buf;
}

/* ---- cache sizes ------------------------------------------------------- */

/* Per-instance size of each data/unified cache level and how many logical
 * CPUs share one instance. sysfs first: it knows the sharing, and sysconf's
 * L3 figure is wrong in some VMs (the host's total). */
struct rl_cache_info {
	size_t size[4];   /* [1..3]; 0 = none */
	int shared[4];
	int line[4];      /* coherency_line_size, 0 = unknown */
	int ways[4];      /* ways_of_associativity, 0 = unknown */
};

static int rl_count_cpu_list(const char *s)
{
	int n = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10);
		if (end == s)
			break;
		long b = a;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s)
				break;
		}
		n += b >= a ? (int)(b - a + 1) : 1;
		s = end;
		while (*s == ',' || isspace((unsigned char)*s))
			s++;
	}
	return n;
}

static bool rl_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static struct rl_cache_info rl_caches(int ncpu)
{
	struct rl_cache_info c = {{0}, {0}, {0}, {0}};
	for (int i = 0; i < 16; i++) {
		char path[128], v[256];
		snprintf(path, sizeof path,
		         "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (!rl_read_line(path, v, sizeof v))
			break;
		int level = atoi(v);
		snprintf(path, sizeof path,
		         "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (level < 1 || level > 3 || !rl_read_line(path, v, sizeof v) ||
		    strcmp(v, "Instruction") == 0)
			continue;
		snprintf(path, sizeof path,
		         "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (!rl_read_line(path, v, sizeof v))
			continue;
		char *end;
		double sz = strtod(v, &end);
		if (*end == 'K')
			sz *= (double)RL_KIB;
		else if (*end == 'M')
			sz *= (double)RL_MIB;
		else if (*end == 'G')
			sz *= (double)RL_GIB;
		snprintf(path, sizeof path,
		         "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
		int sh = rl_read_line(path, v, sizeof v) ? rl_count_cpu_list(v) : 0;
		/* geometry for the tiler; a VM may report 0 or leave it out */
		snprintf(path, sizeof path,
		         "/sys/devices/system/cpu/cpu0/cache/index%d/coherency_line_size", i);
		long ln = rl_read_line(path, v, sizeof v) ? strtol(v, NULL, 10) : 0;
		c.line[level] = ln >= 16 && ln <= 1024 && (ln & (ln - 1)) == 0 ? (int)ln : 0;
		snprintf(path, sizeof path,
		         "/sys/devices/system/cpu/cpu0/cache/index%d/ways_of_associativity", i);
		long wy = rl_read_line(path, v, sizeof v) ? strtol(v, NULL, 10) : 0;
		c.ways[level] = wy >= 1 && wy <= 4096 ? (int)wy : 0;
		c.size[level] = (size_t)sz;
		c.shared[level] = sh > 0 ? sh : level == 3 ? ncpu : 1;
	}
	static const int sc[4] = {0, _SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE,
	                          _SC_LEVEL3_CACHE_SIZE};
	for (int l = 1; l <= 3; l++) {
		if (c.size[l])
			continue;
		long v = sysconf(sc[l]);
		if (v > 0) {
			c.size[l] = (size_t)v;
			c.shared[l] = l == 3 ? ncpu : 1;
		}
	}
	/* no answer at all: a small core's L1 and L2; L3 left absent */
	if (!c.size[1]) {
		c.size[1] = 32 * RL_KIB;
		c.shared[1] = 1;
	}
	if (!c.size[2]) {
		c.size[2] = 512 * RL_KIB;
		c.shared[2] = 1;
	}
	return c;
}

/* Instances of a cache among the threads used: ceil(threads / sharers). */
static size_t rl_instances(int n, int shared)
{
	if (shared < 1)
		shared = 1;
	return (size_t)((n + shared - 1) / shared);
}

static size_t rl_round_page(size_t b)
{
	return (b + 4095) & ~(size_t)4095;
}

/* The CPU's name for the description, whitespace collapsed. */
static void rl_cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "this machine");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10) != 0)
			continue;
		char *v = strchr(line, ':');
		if (!v)
			break;
		v++;
		size_t k = 0;
		bool space = false;
		for (; *v && k + 1 < len; v++) {
			if (isspace((unsigned char)*v)) {
				space = k > 0;
				continue;
			}
			if (space && k + 2 < len)
				buf[k++] = ' ';
			space = false;
			buf[k++] = *v;
		}
		if (k > 0)
			buf[k] = '\0';
		else
			snprintf(buf, len, "this machine");
		break;
	}
	fclose(f);
}

/* The vector unit the generated code will use: width and architectural
 * registers from the ISA the CPU reports (CPUID through
 * __builtin_cpu_supports on x86-64; aarch64 always has 32 128-bit NEON
 * registers). 0 where nothing is known. */
static void rl_simd_info(int *bits, int *regs)
{
	*bits = *regs = 0;
#if defined(__x86_64__) && defined(__GNUC__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) {
		*bits = 512;
		*regs = 32;
	} else if (__builtin_cpu_supports("avx2")) {
		*bits = 256;
		*regs = 16;
	} else {
		*bits = 128; /* SSE2 is baseline x86-64 */
		*regs = 16;
	}
#elif defined(__aarch64__)
	*bits = 128;
	*regs = 32;
#endif
}

/*
 * FMA latency and pipes, one thread. The clock is not known (turbo, VMs),
 * so it is measured too: a chain of dependent integer adds runs at one per
 * cycle on every out-of-order core, so adds/s is the clock; a chain of
 * dependent FMAs runs at one per latency, so latency = adds/s over chain
 * FMAs/s; and the all-pipes rate (the 12-chain kernel) over the clock is the
 * FMAs issued per cycle: the units, counted in vectors of the ISA's width
 * (Zen 4 reads 1 for 512-bit: its two 256-bit pipes take one zmm FMA per
 * clock). Best of many ~1 ms runs, as everywhere here; 0 when a figure
 * falls outside [2, 16] cycles or [1, 4] units (a preempted or throttled
 * run), and the profile then leaves the field out.
 */
static double rl_addchain(size_t iters)
{
	uint64_t x = (uint64_t)rl_tiny_n, y = 3;
	for (size_t i = 0; i < iters; i++) {
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
		x += y;
		__asm__ volatile("" : "+r"(x));
	}
	return (double)x;
}

/* Operations per second of fn (8 per iteration), best of RL_SAMPLES runs. */
static double rl_chain_rate(double (*fn)(size_t))
{
	size_t iters = 1024;
	for (;;) { /* calibrate one run to about RL_RUN_S */
		double t0 = rl_now();
		rl_sink += fn(iters);
		double t = rl_now() - t0;
		if (t >= RL_RUN_S || iters > ((size_t)1 << 40))
			break;
		iters *= 2;
	}
	double best = 1e30;
	for (int r = 0; r < RL_SAMPLES; r++) {
		double t0 = rl_now();
		rl_sink += fn(iters);
		double t = rl_now() - t0;
		if (t > 0 && t < best)
			best = t;
	}
	return 8.0 * (double)iters / best;
}

/* ---- the probe ---------------------------------------------------------- */

static enum rl_status rl_fail_probe(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The caller names the command ("rlopt: probe: ..."), so no prefix here. */
static enum rl_status rl_fail_probe(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return RL_ERR_NOMEM; /* every failure of the probe's own is a resource */
}

static void rl_probe_stop(struct rl_probe *p, struct rl_worker *w)
{
	if (p->sync_ok) {
		pthread_mutex_lock(&p->mu);
		p->quit = true;
		pthread_cond_broadcast(&p->go_cv);
		pthread_mutex_unlock(&p->mu);
		for (int i = 0; i < p->started; i++)
			pthread_join(p->tid[i], NULL);
		pthread_cond_destroy(&p->go_cv);
		pthread_cond_destroy(&p->done_cv);
		pthread_mutex_destroy(&p->mu);
	}
	if (p->pinned)
		(void)pthread_setaffinity_np(pthread_self(), sizeof p->home, &p->home);
	p->pinned = false;
	if (p->slot)
		for (int i = 0; i < p->n; i++)
			free(p->slot[i].buf);
	free(p->slot);
	free(p->tid);
	free(w);
}

/* Append to the comment buffer, quietly truncating. */
static void rl_cat(char *buf, size_t len, size_t *k, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void rl_cat(char *buf, size_t len, size_t *k, const char *fmt, ...)
{
	if (!buf || *k >= len)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *k, len - *k, fmt, ap);
	va_end(ap);
	if (w > 0)
		*k = *k + (size_t)w < len ? *k + (size_t)w : len;
}

enum rl_status rl_probe_run(struct rl_machine *m, FILE *log, char *err, size_t errlen)
{
	return rl_probe_run_ex(m, log, NULL, 0, err, errlen);
}

/* Buffer sizes the probe streams over, from the caches and installed
 * memory. */
struct rl_probe_sizes {
	struct rl_cache_info ci;
	double phys;       /* installed memory, bytes; 0 = unknown */
	size_t ws[4];      /* per-thread working set per cache level [1..3]; 0 = skip */
	double dram_total; /* all threads' main-memory buffers together */
	size_t dram_ws;    /* main-memory buffer per thread */
	size_t dram_ws0;   /* thread 0's, big enough to pass the whole L3 alone */
	/* the last level's capacity as one thread's reads see it (rl_probe_llc):
	 * llc_eff per instance, 0 = sysfs's figure stands; the rates that
	 * decided it, for the comment */
	size_t llc_eff, llc_from;
	double llc_r0, llc_rd, llc_miss;
	size_t llc_miss_at;
};

/* What the probe measured, in the units of the profile (bytes/s, FLOP/s,
 * seconds) plus the one-thread figures that only go into the comment. */
struct rl_probe_meas {
	double load;                 /* load average when started */
	bool busy;                   /* load too high for trustworthy numbers */
	double best_fork;            /* pool fork/join, s */
	double rd[4], wr[4], cp[4];  /* all threads; [0] = DRAM, [1..3] caches */
	double rd1, wr1, cp1;        /* DRAM, one thread */
	double crd[4], cwr[4];       /* one thread per level ([0] = DRAM: rd1, wr1) */
	double eff_s, eff_g;         /* strided, gather fraction of rd[0] */
	double f32_1, f32_n, f64_1, f64_n, i8_1, i8_n;
	int fma_lat, fma_units;
	double clock;
	double call, call_extra;     /* kernel call, s */
};

/* Half of one thread's share of an instance of `size` bytes of cache level
 * l: the per-thread working set that stays resident next to the stack, the
 * code and the other half's worth of conflict misses. */
static size_t rl_ws_share(const struct rl_cache_info *ci, int n, int l, size_t size)
{
	int sharers = ci->shared[l] < n ? ci->shared[l] : n;
	return size / (size_t)(sharers > 0 ? sharers : 1) / 2;
}

/* The L3 working set for an instance of `size` bytes: 0 (skip the level)
 * where its per-thread share is not clearly bigger than L2, which
 * bandwidth cannot tell apart from it. */
static size_t rl_ws_l3(const struct rl_cache_info *ci, int n, size_t size)
{
	size_t ws = rl_ws_share(ci, n, 3, size);
	return ws >= 2 * ci->size[2] ? rl_round_page(ws) : 0;
}

static void rl_probe_size(struct rl_probe *p, struct rl_probe_sizes *z)
{
	z->ci = rl_caches(p->n);
	const struct rl_cache_info ci = z->ci;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	z->phys = pages > 0 && psz > 0 ? (double)pages * (double)psz : 0;
	/* per-thread working set per level (1..3 caches; DRAM below) */
	size_t *ws = z->ws;
	ws[1] = rl_round_page(rl_ws_share(&ci, p->n, 1, ci.size[1]));
	ws[2] = rl_ws_share(&ci, p->n, 2, ci.size[2]);
	ws[2] = rl_round_page(ws[2] < 4 * ws[1] ? 4 * ws[1] : ws[2]);
	ws[3] = rl_ws_l3(&ci, p->n, ci.size[3]);
	double l3_total = ci.size[3] ? (double)ci.size[3] *
	                                       (double)rl_instances(p->n, ci.shared[3])
	                             : 0;
	/* main memory: well past every cache, bounded by what the machine has */
	double dram_total = 256.0 * (double)RL_MIB;
	if (dram_total < 4 * l3_total)
		dram_total = 4 * l3_total;
	if (dram_total > 4.0 * (double)RL_GIB)
		dram_total = 4.0 * (double)RL_GIB;
	if (z->phys > 0 && dram_total > z->phys / 4)
		dram_total = z->phys / 4;
	if (dram_total < 16.0 * (double)RL_MIB)
		dram_total = 16.0 * (double)RL_MIB;
	z->dram_total = dram_total;
	size_t dram_ws = rl_round_page((size_t)(dram_total / p->n));
	if (dram_ws < 4 * ws[2])
		dram_ws = rl_round_page(4 * ws[2]);
	/* the single-thread main-memory figure needs a buffer past the whole
	 * L3 on its own, so thread 0 gets a bigger one */
	size_t dram_ws0 = dram_ws;
	if ((double)dram_ws0 < 4 * (double)ci.size[3])
		dram_ws0 = rl_round_page(4 * ci.size[3]);
	if ((double)dram_ws0 > dram_total)
		dram_ws0 = rl_round_page((size_t)dram_total);
	if (dram_ws0 < dram_ws)
		dram_ws0 = dram_ws;
	z->dram_ws = dram_ws;
	z->dram_ws0 = dram_ws0;
}

/* Start the worker pool (one thread per CPU, pinned; fewer if the system
 * refuses some) and give every thread its test buffer. On failure the pool
 * is stopped and *wp freed. */
static enum rl_status rl_probe_start(struct rl_probe *p, struct rl_worker **wp,
                                     const struct rl_probe_sizes *z, char *err, size_t errlen)
{
	int want = p->n;
	struct rl_worker *w = calloc((size_t)want, sizeof *w);
	*wp = w;
	p->slot = calloc((size_t)want, sizeof *p->slot);
	p->tid = calloc((size_t)want, sizeof *p->tid);
	if (!w || !p->slot || !p->tid) {
		rl_probe_stop(p, w);
		return rl_fail_probe(err, errlen, "out of memory");
	}
	if (pthread_mutex_init(&p->mu, NULL) != 0)
		goto no_sync;
	if (pthread_cond_init(&p->go_cv, NULL) != 0) {
		pthread_mutex_destroy(&p->mu);
		goto no_sync;
	}
	if (pthread_cond_init(&p->done_cv, NULL) != 0) {
		pthread_cond_destroy(&p->go_cv);
		pthread_mutex_destroy(&p->mu);
		goto no_sync;
	}
	p->sync_ok = true;
	for (int i = 1; i < want; i++) {
		w[i].p = p;
		w[i].id = i;
		if (pthread_create(&p->tid[i - 1], NULL, rl_worker_main, &w[i]) != 0)
			break; /* measure with the threads we got */
		rl_pin(p->tid[i - 1], i);
		p->started++;
	}
	p->n = 1 + p->started;
	if (p->n < want)
		rl_logf(p, "only %d of %d threads started; all-thread figures use %d",
		        p->n, want, p->n);
	p->pinned = sched_getaffinity(0, sizeof p->home, &p->home) == 0;
	rl_pin(pthread_self(), 0);

	for (int i = 0; i < p->n; i++)
		p->slot[i].buf_bytes = i == 0 ? z->dram_ws0 : z->dram_ws;
	p->job = RL_JOB_ALLOC;
	p->active = p->n;
	rl_pool_run(p);
	for (int i = 0; i < p->n; i++) {
		if (!p->slot[i].buf) {
			rl_probe_stop(p, w);
			return rl_fail_probe(err, errlen,
			                     "cannot allocate %zu bytes of test buffer",
			                     z->dram_ws);
		}
		p->slot[i].stride_pos = (size_t)i * 7919;
		for (int j = 0; j < 8; j++)
			p->slot[i].gather_state[j] =
			        0x9e3779b97f4a7c15ull * (uint64_t)(i * 8 + j + 1);
	}
	return RL_OK;

no_sync:
	rl_probe_stop(p, w);
	return rl_fail_probe(err, errlen, "cannot create a mutex or condition variable");
}

/* The load warning, the setup line and the pool's fork/join, logged
 * because a parallel kernel pays it on top of the call overhead. */
static void rl_probe_setup_log(struct rl_probe *p, const struct rl_probe_sizes *z,
                               struct rl_probe_meas *r)
{
	/* a busy machine reads slow: say so where the numbers are read */
	char lbuf[128];
	if (rl_read_line("/proc/loadavg", lbuf, sizeof lbuf))
		r->load = strtod(lbuf, NULL);
	r->busy = r->load > 0.5 * p->n + 0.5;
	if (r->busy)
		rl_logf(p, "warning: load average %.1f on %d CPUs; other work will make "
		        "these numbers read low, rerun on an idle machine", r->load, p->n);

	char s1[32], s2[32], s3[32];
	const struct rl_cache_info *ci = &z->ci;
	rl_logf(p, "%d threads, %s kernels; caches per instance: L1d %s, L2 %s, L3 %s",
	        p->n, p->k.isa, rl_size_str(s1, sizeof s1, (double)ci->size[1]),
	        rl_size_str(s2, sizeof s2, (double)ci->size[2]),
	        ci->size[3] ? rl_size_str(s3, sizeof s3, (double)ci->size[3]) : "none");

	p->job = RL_JOB_NOP;
	p->active = p->n;
	r->best_fork = 0;
	if (p->n > 1) {
		r->best_fork = 1e30;
		for (int rep = 0; rep < 200; rep++) {
			double t = rl_pool_run(p);
			if (t < r->best_fork)
				r->best_fork = t;
		}
		rl_logf(p, "fork/join of %d threads %.2f us (<latency fork=>)", p->n,
		        r->best_fork * 1e6);
	}
}

static const char *const rl_level_name[4] = {"DRAM", "L1", "L2", "L3"};

/* Bytes/s of one thread reading ws bytes front to back: the best of
 * `passes` whole passes after one to warm up. Whole passes, not the best
 * millisecond of many: a set a little larger than the cache keeps part of
 * itself resident, and the luckiest millisecond would read that part. */
static double rl_pass_rate(struct rl_probe *p, size_t ws, int passes)
{
	p->job = RL_JOB_READ;
	p->active = 1;
	p->bytes = ws;
	p->reps = ws <= RL_CHUNK ? 1 : ws / RL_CHUNK;
	double moved = ws <= RL_CHUNK ? (double)ws : (double)p->reps * RL_CHUNK, best = 1e30;
	for (int i = 0; i <= passes; i++) {
		p->slot[0].pos = 0;
		double t = rl_pool_run(p);
		if (i > 0 && t < best)
			best = t;
	}
	return moved / best;
}

/*
 * The last level's capacity as the code sees it. sysfs gives the chip's
 * cache (on a VM, the host's): a 2-vCPU guest on a 260 MiB L3 read 28-29
 * GB/s up to 64 MiB and 15 GB/s (its DRAM rate) from 104 MiB on, the rest
 * held by other tenants. A profile that takes the sysfs figure prices a
 * 192 MiB working set at L3 speed and misses by 2x. So: one thread reads
 * sets growing by 1.25x from four L2s up to the sysfs size; the largest
 * before the first whose rate falls below the midpoint of the smallest
 * set's and main memory's is the capacity recorded (the measured L3
 * working set shrinks to match). Where the two rates are not clearly apart
 * (within 25%), bandwidth cannot tell the levels apart and sysfs stands.
 */
static void rl_probe_llc(struct rl_probe *p, struct rl_probe_sizes *z)
{
	const struct rl_cache_info *ci = &z->ci;
	char s1[32], s2[32], s3[32], s4[32];
	size_t from = (4 * ci->size[2] + RL_CHUNK - 1) / RL_CHUNK * RL_CHUNK;
	if (!z->ws[3] || ci->size[3] < 2 * from || z->dram_ws0 < 2 * ci->size[3])
		return;
	double r0 = rl_pass_rate(p, from, 3);
	double rd = rl_pass_rate(p, z->dram_ws0, 1);
	z->llc_r0 = r0;
	z->llc_rd = rd;
	z->llc_from = from;
	if (!(r0 > 1.25 * rd)) {
		rl_logf(p, "L3 capacity: %.1f GB/s over %s is within 25%% of main memory's %.1f: sysfs stands",
		        r0 / 1e9, rl_size_str(s1, sizeof s1, (double)from), rd / 1e9);
		return;
	}
	double cut = 0.5 * (r0 + rd);
	size_t fit = from;
	for (;;) {
		size_t next = (size_t)((double)fit * 1.25) / RL_CHUNK * RL_CHUNK;
		if (next > ci->size[3])
			next = ci->size[3] / RL_CHUNK * RL_CHUNK;
		if (next <= fit)
			break;
		double r = rl_pass_rate(p, next, 3);
		if (r < cut) {
			z->llc_miss = r;
			z->llc_miss_at = next;
			break;
		}
		fit = next;
	}
	if (!z->llc_miss_at) {
		rl_logf(p, "L3 capacity: one thread reads its whole %s at L3 speed: sysfs stands",
		        rl_size_str(s1, sizeof s1, (double)ci->size[3]));
		return;
	}
	z->llc_eff = fit;
	rl_logf(p, "L3 capacity %s of sysfs's %s (one thread: %.1f GB/s over %s, %.1f over %s, main memory %.1f)",
	        rl_size_str(s1, sizeof s1, (double)fit),
	        rl_size_str(s2, sizeof s2, (double)ci->size[3]), r0 / 1e9,
	        rl_size_str(s3, sizeof s3, (double)from), z->llc_miss / 1e9,
	        rl_size_str(s4, sizeof s4, (double)z->llc_miss_at), rd / 1e9);
	/* the L3 bandwidths on a set that fits what was measured */
	z->ws[3] = rl_ws_l3(ci, p->n, fit);
}

/* Streaming read, write and copy per memory level with all threads, main
 * memory from one thread, and the strided and gather access patterns. */
static void rl_probe_memory(struct rl_probe *p, const struct rl_probe_sizes *z,
                            struct rl_probe_meas *r)
{
	const char *const *lname = rl_level_name;
	char s1[32];
	for (int l = 1; l <= 4; l++) {
		int li = l == 4 ? 0 : l;
		size_t size = li ? z->ws[li] : z->dram_ws;
		if (!size) {
			rl_logf(p, "L3 skipped (its share per thread is not clearly larger than L2)");
			continue;
		}
		r->rd[li] = rl_bw(p, RL_JOB_READ, p->n, size, rl_stream_rep(size));
		rl_logf(p, "%s read %.1f GB/s (%d threads x %s)", lname[li], r->rd[li] / 1e9,
		        p->n, rl_size_str(s1, sizeof s1, (double)size));
		r->wr[li] = rl_bw(p, RL_JOB_WRITE, p->n, size, rl_stream_rep(size));
		rl_logf(p, "%s write %.1f GB/s (%d threads x %s)", lname[li], r->wr[li] / 1e9,
		        p->n, rl_size_str(s1, sizeof s1, (double)size));
		r->cp[li] = rl_bw(p, RL_JOB_COPY, p->n, size, rl_stream_rep(size));
		rl_logf(p, "%s copy %.1f GB/s read+write (%d threads x %s)", lname[li],
		        r->cp[li] / 1e9, p->n, rl_size_str(s1, sizeof s1, (double)size));
		if (!li || p->n == 1)
			continue;
		/* the same caches from one thread: what a kernel the runtime
		 * does not split draws (the profile's core_read_bw/core_write_bw) */
		r->crd[li] = rl_bw(p, RL_JOB_READ, 1, size, rl_stream_rep(size));
		r->cwr[li] = rl_bw(p, RL_JOB_WRITE, 1, size, rl_stream_rep(size));
		rl_logf(p, "%s read %.1f, write %.1f GB/s (1 thread, %s)", lname[li],
		        r->crd[li] / 1e9, r->cwr[li] / 1e9, rl_size_str(s1, sizeof s1, (double)size));
	}
	/* main memory from one thread: what single-threaded generated code sees */
	size_t dram_ws0 = z->dram_ws0;
	r->rd1 = rl_bw(p, RL_JOB_READ, 1, dram_ws0, rl_stream_rep(dram_ws0));
	rl_logf(p, "DRAM read %.1f GB/s (1 thread, %s)", r->rd1 / 1e9,
	        rl_size_str(s1, sizeof s1, (double)dram_ws0));
	r->wr1 = rl_bw(p, RL_JOB_WRITE, 1, dram_ws0, rl_stream_rep(dram_ws0));
	rl_logf(p, "DRAM write %.1f GB/s (1 thread, %s)", r->wr1 / 1e9,
	        rl_size_str(s1, sizeof s1, (double)dram_ws0));
	r->cp1 = rl_bw(p, RL_JOB_COPY, 1, dram_ws0, rl_stream_rep(dram_ws0));
	r->crd[0] = r->rd1;
	r->cwr[0] = r->wr1;
	rl_logf(p, "DRAM copy %.1f GB/s read+write (1 thread, %s)", r->cp1 / 1e9,
	        rl_size_str(s1, sizeof s1, (double)dram_ws0));

	/* access patterns at main memory, all threads, against rd[0] */
	/* a strided rep reads 1024 lines; a gather rep 1024 x 8 floats */
	double strided = rl_bw(p, RL_JOB_STRIDED, p->n, z->dram_ws,
	                       (double)(RL_KIB * RL_LINE));
	r->eff_s = strided / r->rd[0];
	rl_logf(p, "strided read %.2f GB/s = %.3f of contiguous (64-byte lines %d B apart, %d threads)",
	        strided / 1e9, r->eff_s, RL_STRIDE_LINES * RL_LINE, p->n);
	double gather = rl_bw(p, RL_JOB_GATHER, p->n, z->dram_ws,
	                      (double)(RL_KIB * 8 * sizeof(float)));
	r->eff_g = gather / r->rd[0];
	rl_logf(p, "gather read %.3f GB/s = %.4f of contiguous (random 4-byte elements, %d threads)",
	        gather / 1e9, r->eff_g, p->n);
}

/* fp32 and fp64 FMA and int8 dot rates, one thread and all; FMA latency
 * and issue width against the clock of a dependent add chain. */
static void rl_probe_arith(struct rl_probe *p, struct rl_probe_meas *r)
{
	r->f32_1 = rl_rate(p, RL_JOB_FMA32, 1, p->k.fma32_flop);
	rl_logf(p, "fp32 FMA %.1f GFLOP/s (1 thread, %s)", r->f32_1 / 1e9, p->k.isa);
	r->f32_n = rl_rate(p, RL_JOB_FMA32, p->n, p->k.fma32_flop);
	rl_logf(p, "fp32 FMA %.1f GFLOP/s (%d threads)", r->f32_n / 1e9, p->n);
	r->fma_lat = 0;
	r->fma_units = 0;
	r->clock = 0;
	if (p->k.fma_chain) {
		r->clock = rl_chain_rate(rl_addchain);
		double chain = rl_chain_rate(p->k.fma_chain);
		/* FMA instructions per second on one thread, all pipes busy */
		double issue = r->f32_1 * RL_ACC / p->k.fma32_flop;
		double lat = r->clock / chain, units = issue / r->clock;
		if (lat >= 1.5 && lat < 16.5)
			r->fma_lat = (int)(lat + 0.5);
		if (units >= 0.75 && units < 4.5)
			r->fma_units = (int)(units + 0.5);
		rl_logf(p, "fp32 FMA latency %.2f cycles, %.2f per cycle (clock %.2f GHz from a "
		        "dependent add chain, 1 thread)%s", lat, units, r->clock / 1e9,
		        r->fma_lat && r->fma_units ? "" : "; out of range, left out");
	}
	r->f64_1 = rl_rate(p, RL_JOB_FMA64, 1, p->k.fma64_flop);
	rl_logf(p, "fp64 FMA %.1f GFLOP/s (1 thread, %s)", r->f64_1 / 1e9, p->k.isa);
	r->f64_n = rl_rate(p, RL_JOB_FMA64, p->n, p->k.fma64_flop);
	rl_logf(p, "fp64 FMA %.1f GFLOP/s (%d threads)", r->f64_n / 1e9, p->n);
	r->i8_1 = 0;
	r->i8_n = 0;
	if (p->k.dot8) {
		r->i8_1 = rl_rate(p, RL_JOB_DOT8, 1, p->k.dot8_op);
		rl_logf(p, "int8 dot %.1f GOP/s (1 thread, %s)", r->i8_1 / 1e9, p->k.dot8_isa);
		r->i8_n = rl_rate(p, RL_JOB_DOT8, p->n, p->k.dot8_op);
		rl_logf(p, "int8 dot %.1f GOP/s (%d threads)", r->i8_n / 1e9, p->n);
	} else {
		rl_logf(p, "int8 dot not measured (needs AVX2 or VNNI); left at 0");
	}
}

/* Per-call cost, one thread, no pool involved; each call takes the
 * previous one's result, as a kernel takes its producer's output. */
static void rl_probe_call(struct rl_probe *p, struct rl_probe_meas *r)
{
	const size_t ncall = 100000;
	double best_call = 1e30, best_inline = 1e30;
	float tb[16] = {0};
	for (int rep = 0; rep < RL_SAMPLES; rep++) {
		int n = rl_tiny_n;
		float x = rl_vf_one;
		double t0 = rl_now();
		for (size_t i = 0; i < ncall; i++) {
			float (*f)(float *, int, float) = rl_tiny_ptr;
			x = f(tb, n, x * 1e-3f);
		}
		double t1 = rl_now();
		float y = rl_vf_one;
		for (size_t i = 0; i < ncall; i++) {
			float yy = y * 1e-3f;
			for (int j = 0; j < n; j++)
				tb[j] = tb[j] * 0.5f + yy;
			y = tb[n - 1];
		}
		double t2 = rl_now();
		rl_sink += x + y;
		if (t1 - t0 < best_call)
			best_call = t1 - t0;
		if (t2 - t1 < best_inline)
			best_inline = t2 - t1;
	}
	r->call = best_call / (double)ncall;
	if (!(r->call > 1e-10))
		r->call = 1e-10; /* below the clock's resolution; keep the profile valid */
	r->call_extra = (best_call - best_inline) / (double)ncall;
	if (r->call_extra < 0)
		r->call_extra = 0; /* within noise of the inlined loop */
	rl_logf(p, "kernel call %.2f ns (smallest kernel through a function pointer, "
	        "1 thread; %.2f ns more than the same loop inlined)",
	        r->call * 1e9, r->call_extra * 1e9);
}

/* The measurements as a machine profile named "host". */

/* One core's rates of a level, where measured: never above the whole chip's
 * (a noisy single-thread run can beat an all-thread one on a busy machine,
 * and the loader refuses a core faster than the chip). */
static void rl_core_bw(struct rl_mem_level *lv, double rd, double wr)
{
	if (!(rd > 0) || !(wr > 0))
		return;
	lv->core_read_bw = rd < lv->read_bw ? rd : lv->read_bw;
	lv->core_write_bw = wr < lv->write_bw ? wr : lv->write_bw;
}
static void rl_probe_profile(const struct rl_probe *p, const struct rl_probe_sizes *z,
                             const struct rl_probe_meas *x, const char *model,
                             struct rl_machine *out)
{
	struct rl_machine r;
	memset(&r, 0, sizeof r);
	snprintf(r.name, sizeof r.name, "host");
	snprintf(r.kind, sizeof r.kind, "cpu");
	r.cores = p->n;
	snprintf(r.desc, sizeof r.desc, "%s, measured by rlopt probe (%d threads)",
	         model, p->n);
	r.peak_vector[RL_PREC_FP32] = x->f32_n;
	r.peak_vector[RL_PREC_FP64] = x->f64_n;
	r.peak_vector[RL_PREC_INT8] = x->i8_n;
	for (int l = 1; l <= 3; l++) {
		if (!x->rd[l])
			continue;
		struct rl_mem_level *lv = &r.level[r.nlevels++];
		snprintf(lv->name, sizeof lv->name, "%s", rl_level_name[l]);
		size_t inst = l == 3 && z->llc_eff ? z->llc_eff : z->ci.size[l];
		lv->capacity = (double)inst * (double)rl_instances(p->n, z->ci.shared[l]);
		lv->read_bw = x->rd[l];
		lv->write_bw = x->wr[l];
		rl_core_bw(lv, x->crd[l], x->cwr[l]);
		lv->line_bytes = z->ci.line[l];
		lv->ways = z->ci.ways[l];
		/* a set larger than a core's share is a bogus sysfs answer (the
		 * loader would refuse it): drop it */
		if ((double)(lv->line_bytes ? lv->line_bytes : 1) *
		            (double)(lv->ways ? lv->ways : 1) > lv->capacity / r.cores)
			lv->line_bytes = lv->ways = 0;
	}
	rl_simd_info(&r.simd_bits, &r.simd_registers);
	r.fma_latency = x->fma_lat;
	r.fma_units = x->fma_units;
	struct rl_mem_level *dv = &r.level[r.nlevels++];
	snprintf(dv->name, sizeof dv->name, "DRAM");
	dv->capacity = z->phys > 0 ? z->phys : 4 * (double)z->dram_total;
	dv->read_bw = x->rd[0];
	dv->write_bw = x->wr[0];
	if (p->n > 1)
		rl_core_bw(dv, x->crd[0], x->cwr[0]);
	r.eff_contiguous = 1.0; /* the bandwidths above are contiguous rates */
	r.eff_strided = x->eff_s > 1 ? 1 : x->eff_s > 1e-4 ? x->eff_s : 1e-4;
	r.eff_gather = x->eff_g > 1 ? 1 : x->eff_g > 1e-4 ? x->eff_g : 1e-4;
	r.launch_latency = x->call;
	if (p->n > 1 && x->best_fork > 0 && x->best_fork < 1e29)
		r.fork_latency = x->best_fork;
	r.has_sparse24 = false;
	*out = r;
}

/* The profile's XML comment: how each number was measured, and the
 * one-thread figures the struct has no field for. */
static void rl_probe_comment(const struct rl_probe *p, const struct rl_probe_sizes *z,
                             const struct rl_probe_meas *x, const char *model,
                             double elapsed, char *comment, size_t commentlen)
{
	size_t k = 0;
	char s1[32], s2[32], s3[32], s4[32];
	char when[64] = "unknown time";
	time_t now = time(NULL);
	struct tm tmv;
	if (gmtime_r(&now, &tmv))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tmv);
	rl_cat(comment, commentlen, &k,
	       "host profile measured by `rlopt probe` on %s, %s, %.1f s.\n"
	       "Every number below is measured on this machine unless noted.\n"
	       "threads: %d (every CPU this process may run on), pinned one per CPU;\n"
	       "  kernels: %s; best of %d runs (%d for all threads) of ~%.0f ms each.\n",
	       model, when, elapsed, p->n, p->k.isa, RL_SAMPLES, 2 * RL_SAMPLES,
	       RL_RUN_S * 1e3);
	if (x->busy)
		rl_cat(comment, commentlen, &k,
		       "WARNING: load average was %.1f on %d CPUs while measuring;\n"
		       "  the figures are likely low. Rerun `rlopt probe` on an idle machine.\n",
		       x->load, p->n);
	rl_cat(comment, commentlen, &k,
	       "memory levels: read_bw / write_bw are ALL-THREAD streaming rates, each\n"
	       "  thread on its own buffer: L1 %s, L2 %s, L3 %s, DRAM %s per thread.\n"
	       "  capacity: per-instance cache sizes from sysfs x instances among the\n"
	       "  threads (L3: as measured, below, where smaller); DRAM capacity is\n"
	       "  installed physical memory.\n",
	       rl_size_str(s1, sizeof s1, (double)z->ws[1]),
	       rl_size_str(s2, sizeof s2, (double)z->ws[2]),
	       z->ws[3] ? rl_size_str(s3, sizeof s3, (double)z->ws[3]) : "(not measured)",
	       rl_size_str(s4, sizeof s4, (double)z->dram_ws));
	if (z->llc_eff)
		rl_cat(comment, commentlen, &k,
		       "  L3 capacity: %s per instance, not sysfs's %s: one thread read\n"
		       "  %.1f GB/s over %s, %.1f over %s, main memory %.1f; the capacity is\n"
		       "  the largest set (steps of 1.25x) before the first read below the\n"
		       "  midpoint (a VM's share of its host's cache).\n",
		       rl_size_str(s1, sizeof s1, (double)z->llc_eff),
		       rl_size_str(s2, sizeof s2, (double)z->ci.size[3]), z->llc_r0 / 1e9,
		       rl_size_str(s3, sizeof s3, (double)z->llc_from), z->llc_miss / 1e9,
		       rl_size_str(s4, sizeof s4, (double)z->llc_miss_at), z->llc_rd / 1e9);
	else if (z->llc_from)
		rl_cat(comment, commentlen, &k,
		       "  L3 capacity: sysfs's; one thread read %.1f GB/s over %s, main\n"
		       "  memory %.1f (checked in steps of 1.25x up to the sysfs size).\n",
		       z->llc_r0 / 1e9, rl_size_str(s1, sizeof s1, (double)z->llc_from),
		       z->llc_rd / 1e9);
	rl_cat(comment, commentlen, &k,
	       "  copy (read+write bytes): L1 %.1f, L2 %.1f, L3 %.1f, DRAM %.1f GB/s.\n",
	       x->cp[1] / 1e9, x->cp[2] / 1e9, x->cp[3] / 1e9, x->cp[0] / 1e9);
	rl_cat(comment, commentlen, &k,
	       "single thread (generated C runs on one thread unless parallelised):\n"
	       "  core_read_bw / core_write_bw are the same loops on one thread, the\n"
	       "  caches over the per-thread sets above, DRAM over %s: DRAM read %.1f,\n"
	       "  write %.1f GB/s. Not in the struct: DRAM copy %.1f GB/s;\n"
	       "  fp32 FMA %.1f, fp64 FMA %.1f GFLOP/s; int8 dot %.1f GOP/s.\n",
	       rl_size_str(s1, sizeof s1, (double)z->dram_ws0), x->rd1 / 1e9, x->wr1 / 1e9,
	       x->cp1 / 1e9, x->f32_1 / 1e9, x->f64_1 / 1e9, x->i8_1 / 1e9);
	rl_cat(comment, commentlen, &k,
	       "peaks: all threads, %d independent FMA chains in vector registers;\n"
	       "  int8: %s%s.\n",
	       RL_ACC, p->k.dot8 ? p->k.dot8_isa : "not measured (needs AVX2 or VNNI), so absent",
	       p->k.dot8 ? ", 2 OP per multiply-add" : "");
	rl_cat(comment, commentlen, &k,
	       "efficiency: contiguous = 1 by definition (the bandwidths are contiguous\n"
	       "  rates); strided = whole 64-byte lines %d B apart, gather = random\n"
	       "  4-byte elements, each over %s per thread, as a fraction of the\n"
	       "  all-thread contiguous DRAM read.\n",
	       RL_STRIDE_LINES * RL_LINE, rl_size_str(s1, sizeof s1, (double)z->dram_ws));
	rl_cat(comment, commentlen, &k,
	       "simd: width_bits and registers from the ISA the CPU reports (%s);\n"
	       "  fma_latency_cycles = clock / rate of one dependent FMA chain, fma_units\n"
	       "  = one-thread FMA issue rate / clock (vectors of that width per cycle),\n"
	       "  clock %.2f GHz from a dependent integer add chain; left out when not\n"
	       "  measured. line_bytes and ways: sysfs cache index*/coherency_line_size\n"
	       "  and ways_of_associativity, where reported.\n",
	       p->k.isa, x->clock / 1e9);
	rl_cat(comment, commentlen, &k,
	       "launch: one call of the smallest kernel (a 4-element loop) through a\n"
	       "  function pointer, one thread, each call fed the last one's result;\n"
	       "  %.2f ns of it is call overhead beyond the loop inlined. fork: a\n"
	       "  fork/join across all threads, %.2f us, paid by a kernel split across them.",
	       x->call_extra * 1e9, x->best_fork * 1e6);
}

/* The probe as its phases: size the buffers, start the pool, measure
 * memory, arithmetic and call overhead, stop the pool, then build the
 * profile and its comment and check the profile as the loader would. */
enum rl_status rl_probe_run_ex(struct rl_machine *m, FILE *log, char *comment,
                               size_t commentlen, char *err, size_t errlen)
{
	struct rl_probe P;
	memset(&P, 0, sizeof P);
	struct rl_probe *p = &P;
	p->t_start = rl_now();
	p->log = log;
	p->samples = RL_SAMPLES;
	p->run_s = RL_RUN_S;
	p->k = rl_kernels_pick();
	p->n = rl_cpu_count();
	if (comment && commentlen)
		comment[0] = '\0';

	struct rl_probe_sizes z;
	struct rl_probe_meas x;
	memset(&z, 0, sizeof z);
	memset(&x, 0, sizeof x);
	rl_probe_size(p, &z);
	struct rl_worker *w = NULL;
	enum rl_status st = rl_probe_start(p, &w, &z, err, errlen);
	if (st != RL_OK)
		return st;
	rl_probe_setup_log(p, &z, &x);
	rl_probe_llc(p, &z);
	rl_probe_memory(p, &z, &x);
	rl_probe_arith(p, &x);
	rl_probe_call(p, &x);
	for (int i = 0; i < p->n; i++)
		rl_sink += p->slot[i].result;
	rl_probe_stop(p, w);

	struct rl_machine r;
	char model[80];
	rl_cpu_model(model, sizeof model);
	rl_probe_profile(p, &z, &x, model, &r);
	double elapsed = rl_now() - p->t_start;
	rl_logf(p, "done in %.1f s", elapsed);
	if (comment && commentlen)
		rl_probe_comment(p, &z, &x, model, elapsed, comment, commentlen);

	if ((st = rl_machine_check(&r, err, errlen)) != RL_OK)
		return st;
	*m = r;
	return RL_OK;
}
