/*
 * sgemm_harness.c - times rlopt's generated SGEMM and GEMV against OpenBLAS
 * and this machine's limits, all in one process, one run (bench_sgemm.py
 * builds it; see there for what it prints and why).
 *
 * Linked with two generated models (compiled separately with plain
 * `cc -O2`, like a user would):
 *   sg: Y[M,N] = A[M,K] x B[K,N], B a constant    (prefix sg_)
 *   gv: y[1,N] = x[1,K] x W[K,N], W in gv.weights  (prefix gv_)
 * and with OpenBLAS (cblas_sgemm, openblas_set_num_threads).
 *
 * Limits measured here, with the flags our generated code gets (a GNU
 * target attribute, no -march): the fp32 FMA peak of one core (FMAs on 12
 * independent register-resident accumulators: zmm where the CPU has
 * AVX-512, else ymm), and the read-only
 * streaming bandwidth over as many bytes as the GEMV's weights, on 1 and 2
 * threads.
 *
 *   sgemm_harness M N K GEMV_K GEMV_N ROUNDS
 *
 * Every configuration runs once per round, rounds interleaved; each figure
 * is the median over rounds of the best of a few calls in that round. The
 * machine is shared: a single-threaded figure takes the lesser of wall and
 * thread CPU time (time descheduled left out); two-thread figures can only
 * use wall time, so their speedups are the noisiest numbers here.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "gv.h"
#include "sg.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

void openblas_set_num_threads(int n);
char *openblas_get_corename(void);

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* CPU time of the calling thread: on a shared machine the time a
 * single-threaded call was descheduled is left out */
static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(double), cmp_d);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void pause_ms(int ms)
{
	struct timespec t = {0, ms * 1000000L};
	nanosleep(&t, NULL);
}

/* ---- limits ------------------------------------------------------------ */

#ifdef HAVE_X86
/* 12 independent FMA chains: latency 4 x 2 pipes (ymm) or 1 zmm per cycle;
 * the AVX-512 loop where the CPU has it, else the AVX2 one (an AVX2-only
 * CPU stopped at the AVX-512 loop's first instruction) */
__attribute__((target("avx512f"), noinline)) static float fma_loop512(long iters)
{
	const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
	__m512 c0 = _mm512_set1_ps(0.f), c1 = _mm512_set1_ps(1.f), c2 = _mm512_set1_ps(2.f),
	       c3 = _mm512_set1_ps(3.f), c4 = _mm512_set1_ps(4.f), c5 = _mm512_set1_ps(5.f),
	       c6 = _mm512_set1_ps(6.f), c7 = _mm512_set1_ps(7.f), c8 = _mm512_set1_ps(8.f),
	       c9 = _mm512_set1_ps(9.f), c10 = _mm512_set1_ps(10.f), c11 = _mm512_set1_ps(11.f);
	for (long n = 0; n < iters; n++) {
		c0 = _mm512_fmadd_ps(c0, a, b); c1 = _mm512_fmadd_ps(c1, a, b);
		c2 = _mm512_fmadd_ps(c2, a, b); c3 = _mm512_fmadd_ps(c3, a, b);
		c4 = _mm512_fmadd_ps(c4, a, b); c5 = _mm512_fmadd_ps(c5, a, b);
		c6 = _mm512_fmadd_ps(c6, a, b); c7 = _mm512_fmadd_ps(c7, a, b);
		c8 = _mm512_fmadd_ps(c8, a, b); c9 = _mm512_fmadd_ps(c9, a, b);
		c10 = _mm512_fmadd_ps(c10, a, b); c11 = _mm512_fmadd_ps(c11, a, b);
	}
	__m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
	                         _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
	s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
	return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"), noinline)) static float fma_loop256(long iters)
{
	const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
	__m256 c[12];
	for (int i = 0; i < 12; i++)
		c[i] = _mm256_set1_ps((float)i);
	for (long n = 0; n < iters; n++) {
		c[0] = _mm256_fmadd_ps(c[0], a, b); c[1] = _mm256_fmadd_ps(c[1], a, b);
		c[2] = _mm256_fmadd_ps(c[2], a, b); c[3] = _mm256_fmadd_ps(c[3], a, b);
		c[4] = _mm256_fmadd_ps(c[4], a, b); c[5] = _mm256_fmadd_ps(c[5], a, b);
		c[6] = _mm256_fmadd_ps(c[6], a, b); c[7] = _mm256_fmadd_ps(c[7], a, b);
		c[8] = _mm256_fmadd_ps(c[8], a, b); c[9] = _mm256_fmadd_ps(c[9], a, b);
		c[10] = _mm256_fmadd_ps(c[10], a, b); c[11] = _mm256_fmadd_ps(c[11], a, b);
	}
	for (int i = 1; i < 12; i++)
		c[0] = _mm256_add_ps(c[0], c[i]);
	float t[8], s = 0;
	_mm256_storeu_ps(t, c[0]);
	for (int i = 0; i < 8; i++)
		s += t[i];
	return s;
}

static int has512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}

static double fma_flops_per_iter(void)
{
	return 12.0 * (has512() ? 16 : 8) * 2;
}
#define FMA_FLOPS_PER_ITER fma_flops_per_iter()

static float fma_loop(long iters)
{
	return has512() ? fma_loop512(iters) : fma_loop256(iters);
}

/* read-only sum over [p, p + n): 8 vector accumulators, no stores */
__attribute__((target("avx512f"), noinline)) static float read_loop512(const float *p, size_t n)
{
	__m512 s[8];
	for (int i = 0; i < 8; i++)
		s[i] = _mm512_setzero_ps();
	for (size_t i = 0; i + 128 <= n; i += 128)
		for (int v = 0; v < 8; v++)
			s[v] = _mm512_add_ps(s[v], _mm512_loadu_ps(p + i + 16 * v));
	for (int v = 1; v < 8; v++)
		s[0] = _mm512_add_ps(s[0], s[v]);
	return _mm512_reduce_add_ps(s[0]);
}

__attribute__((target("avx2"), noinline)) static float read_loop256(const float *p, size_t n)
{
	__m256 s[8];
	for (int i = 0; i < 8; i++)
		s[i] = _mm256_setzero_ps();
	for (size_t i = 0; i + 64 <= n; i += 64)
		for (int v = 0; v < 8; v++)
			s[v] = _mm256_add_ps(s[v], _mm256_loadu_ps(p + i + 8 * v));
	for (int v = 1; v < 8; v++)
		s[0] = _mm256_add_ps(s[0], s[v]);
	float t[8], r = 0;
	_mm256_storeu_ps(t, s[0]);
	for (int i = 0; i < 8; i++)
		r += t[i];
	return r;
}

static float read_loop(const float *p, size_t n)
{
	return has512() ? read_loop512(p, n) : read_loop256(p, n);
}
#else
static float fma_loop(long iters)
{
	float c[16] = {0};
	for (long n = 0; n < iters; n++)
		for (int i = 0; i < 16; i++)
			c[i] = c[i] * 0.999999f + 1e-7f;
	float s = 0;
	for (int i = 0; i < 16; i++)
		s += c[i];
	return s;
}
#define FMA_FLOPS_PER_ITER 32.0
static float read_loop(const float *p, size_t n)
{
	float s[16] = {0};
	for (size_t i = 0; i + 16 <= n; i += 16)
		for (int v = 0; v < 16; v++)
			s[v] += p[i + v];
	float t = 0;
	for (int v = 0; v < 16; v++)
		t += s[v];
	return t;
}
#endif

static volatile float sink;

static double peak_gflops(void)
{
	long iters = 1000000;
	double best = 1e30;
	for (int r = 0; r < 20; r++) {
		double t0 = now(), c0 = cpu_now();
		sink = fma_loop(iters);
		double t = now() - t0, c = cpu_now() - c0;
		t = c < t ? c : t;
		if (t < best)
			best = t;
	}
	return FMA_FLOPS_PER_ITER * (double)iters / best * 1e-9;
}

struct rd {
	const float *p;
	size_t n;
};

static void *read_thread(void *arg)
{
	struct rd *r = arg;
	sink = read_loop(r->p, r->n);
	return NULL;
}

/* one pass over buf (n floats) on nt threads; seconds */
static double read_pass(const float *buf, size_t n, int nt)
{
	pthread_t tid[2];
	struct rd r[2];
	double t0 = now(), c0 = cpu_now();
	for (int t = 0; t < nt; t++) {
		r[t].p = buf + n / (size_t)nt * (size_t)t;
		r[t].n = n / (size_t)nt;
		if (t > 0)
			pthread_create(&tid[t], NULL, read_thread, &r[t]);
	}
	read_thread(&r[0]);
	for (int t = 1; t < nt; t++)
		pthread_join(tid[t], NULL);
	double t = now() - t0, c = cpu_now() - c0;
	return nt == 1 && c < t ? c : t;
}

/* ---- timed calls ------------------------------------------------------- */

#define REPS 5 /* calls per configuration and round */
static int M, N, K;
static float *A, *B, *C, *X, *Y;

/* best of reps calls; single-threaded (st) calls take the lesser of wall and
 * thread CPU time, multi-threaded ones wall time only */
static double best_of(void (*fn)(void), int reps, int st)
{
	double best = 1e30;
	for (int r = 0; r < reps; r++) {
		double t0 = now(), c0 = cpu_now();
		fn();
		double t = now() - t0, c = cpu_now() - c0;
		if (st && c < t)
			t = c;
		if (t < best)
			best = t;
	}
	return best;
}

static void run_ours(void)
{
	const void *in[1] = {A};
	void *out[1] = {C};
	if (sg_run_v(in, out) != 0)
		abort();
}

static void run_blas(void)
{
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, A, K, B, N, 0.0f,
	            C, N);
}

static void run_gemv(void)
{
	const void *in[1] = {X};
	void *out[1] = {Y};
	if (gv_run_v(in, out) != 0)
		abort();
}

int main(int argc, char **argv)
{
	if (argc < 8) {
		fprintf(stderr, "usage: %s M N K GEMV_K GEMV_N ROUNDS B.bin\n", argv[0]);
		return 1;
	}
	M = atoi(argv[1]), N = atoi(argv[2]), K = atoi(argv[3]);
	int gk = atoi(argv[4]), gn = atoi(argv[5]), rounds = atoi(argv[6]);
	A = malloc(sizeof(float) * (size_t)M * (size_t)K);
	B = malloc(sizeof(float) * (size_t)K * (size_t)N);
	C = malloc(sizeof(float) * (size_t)M * (size_t)N);
	float *C2 = malloc(sizeof(float) * (size_t)M * (size_t)N);
	X = malloc(sizeof(float) * (size_t)gk);
	Y = malloc(sizeof(float) * (size_t)gn);
	FILE *f = fopen(argv[7], "rb"); /* B exactly as the model's initializer */
	if (!f || fread(B, sizeof(float), (size_t)K * (size_t)N, f) != (size_t)K * (size_t)N)
		return 2;
	fclose(f);
	for (size_t i = 0; i < (size_t)M * (size_t)K; i++)
		A[i] = (float)((i * 7919u) % 1000u) / 500.0f - 1.0f;
	for (int i = 0; i < gk; i++)
		X[i] = (float)(i % 17) / 8.0f - 1.0f;
	if (sg_init(NULL) != 0 || gv_init(NULL) != 0) {
		fprintf(stderr, "init failed\n");
		return 2;
	}
	/* correctness against OpenBLAS, and thread-count independence */
	sg_set_threads(1);
	run_ours();
	memcpy(C2, C, sizeof(float) * (size_t)M * (size_t)N);
	sg_set_threads(2);
	run_ours();
	int same = memcmp(C, C2, sizeof(float) * (size_t)M * (size_t)N) == 0;
	openblas_set_num_threads(1);
	run_blas();
	double maxerr = 0, maxref = 0;
	for (size_t i = 0; i < (size_t)M * (size_t)N; i++) {
		double e = C2[i] - C[i];
		maxerr = e < 0 ? (-e > maxerr ? -e : maxerr) : (e > maxerr ? e : maxerr);
		double r = C[i] < 0 ? -C[i] : C[i];
		maxref = r > maxref ? r : maxref;
	}
	printf("openblas_core %s\n", openblas_get_corename());
	printf("check_bit_identical_1t_2t %d\n", same);
	printf("check_max_rel_err_vs_openblas %.3g\n", maxerr / (maxref > 0 ? maxref : 1));

	size_t gbytes = sizeof(float) * (size_t)gk * (size_t)gn;
	float *rbuf = malloc(gbytes);
	for (size_t i = 0; i < gbytes / sizeof(float); i++)
		rbuf[i] = 1.0f;

	double *t_o1 = calloc((size_t)rounds, sizeof(double)), *t_o2 = calloc((size_t)rounds, 8);
	double *t_b1 = calloc((size_t)rounds, 8), *t_b2 = calloc((size_t)rounds, 8);
	double *t_g1 = calloc((size_t)rounds, 8), *t_g2 = calloc((size_t)rounds, 8);
	double *t_r1 = calloc((size_t)rounds, 8), *t_r2 = calloc((size_t)rounds, 8);
	double *pk = calloc((size_t)rounds, 8);
	for (int r = 0; r < rounds; r++) {
		pk[r] = peak_gflops();
		/* ours: the other library's threads asleep; pool resized per config */
		sg_set_threads(1);
		t_o1[r] = best_of(run_ours, REPS, 1);
		sg_set_threads(2);
		run_ours();
		t_o2[r] = best_of(run_ours, REPS, 0);
		sg_set_threads(1); /* stops our worker before OpenBLAS runs */
		pause_ms(20);
		openblas_set_num_threads(1);
		run_blas();
		t_b1[r] = best_of(run_blas, REPS, 1);
		openblas_set_num_threads(2);
		run_blas();
		t_b2[r] = best_of(run_blas, REPS, 0);
		openblas_set_num_threads(1);
		pause_ms(50); /* let OpenBLAS's threads go to sleep */
		gv_set_threads(1);
		t_g1[r] = best_of(run_gemv, 3, 1);
		t_r1[r] = 1e30;
		for (int q = 0; q < 3; q++) {
			double t = read_pass(rbuf, gbytes / sizeof(float), 1);
			t_r1[r] = t < t_r1[r] ? t : t_r1[r];
		}
		gv_set_threads(2);
		run_gemv();
		t_g2[r] = best_of(run_gemv, 3, 0);
		gv_set_threads(1);
		t_r2[r] = 1e30;
		for (int q = 0; q < 3; q++) {
			double t = read_pass(rbuf, gbytes / sizeof(float), 2);
			t_r2[r] = t < t_r2[r] ? t : t_r2[r];
		}
	}
	double fl = 2.0 * M * N * K;
	double pbest = 0; /* a limit: noise only ever lowers it, so the best round */
	for (int r = 0; r < rounds; r++)
		pbest = pk[r] > pbest ? pk[r] : pbest;
	printf("peak_gflops_1core %.2f\n", pbest);
	printf("ours_1t_gflops %.2f\n", fl / median(t_o1, rounds) * 1e-9);
	printf("ours_2t_gflops %.2f\n", fl / median(t_o2, rounds) * 1e-9);
	printf("openblas_1t_gflops %.2f\n", fl / median(t_b1, rounds) * 1e-9);
	printf("openblas_2t_gflops %.2f\n", fl / median(t_b2, rounds) * 1e-9);
	printf("gemv_bytes %zu\n", gbytes);
	printf("gemv_1t_GBps %.2f\n", (double)gbytes / median(t_g1, rounds) * 1e-9);
	printf("gemv_2t_GBps %.2f\n", (double)gbytes / median(t_g2, rounds) * 1e-9);
	printf("read_1t_GBps %.2f\n", (double)gbytes / median(t_r1, rounds) * 1e-9);
	printf("read_2t_GBps %.2f\n", (double)gbytes / median(t_r2, rounds) * 1e-9);
	sg_free();
	gv_free();
	return 0;
}
