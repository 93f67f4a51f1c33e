/*
 * stream_limit.c - this machine's limits for one core: main-memory streaming
 * bandwidth and fp32 FMA peak.
 *
 *   stream_limit [MiB]          (array size, default 256)
 *   stream_limit --read [MiB]   only the read-only figures (last four below)
 *
 * Bandwidth: STREAM-style copy (b = a) and triad (a = b + s*c) over arrays of
 * MiB mebibytes each (far larger than any cache), best of 5 passes; bytes
 * counted as STREAM does (copy 2 arrays, triad 3; write-allocate traffic not
 * counted); then the same on arrays that fit in the last-level cache. FMA peak: one core, vector FMAs on independent accumulators
 * (enough to cover FMA latency times throughput), best of 5.
 *
 * Read bandwidth: a read-only loop (a sum into 8 vector accumulators, no
 * stores; 8 sections of the array read at once) over MiB mebibytes, best of
 * 5 passes, on one thread and then on every online CPU at once (pthreads,
 * each thread its own buffer, first touched by that thread; a pass timed on
 * the readers' own clocks, first start to last end). This is the limit of a
 * read-dominated kernel such as a batch-1 GEMV.
 *
 * Prints, one per line:
 *   stream_copy_GBps X      copy, best wall time
 *   stream_triad_GBps X     triad, best wall time
 *   stream_bw_wall_GBps X   the larger of the two
 *   stream_bw_cpu_GBps X    the same with thread CPU time instead of wall time
 *   stream_bw_GBps X        the larger of the last two: the optimistic limit
 *   llc_bytes N             last-level cache size (sysfs), 0 if unknown
 *   stream_llc_GBps X       copy/triad on arrays of LLC/8 each (cache-resident)
 *   fma_gflops_wall Y       FMA rate, best wall time of 40 short passes
 *   fma_gflops Y            the same, best of wall and thread CPU time
 *   fma_vector_bits B
 *   stream_read_GBps X      read-only loop, one thread, best of wall and CPU time
 *   stream_read_wall_GBps X the same, wall time only
 *   read_threads T          CPUs used for the next figure
 *   stream_read_all_GBps X  read-only loop, T threads at once, best wall time
 * On a shared machine the thread is descheduled for part of the wall time;
 * thread CPU time leaves that out, so the *_cpu figures are the ones to use
 * as limits there (on an idle machine both agree).
 *
 * Build: cc -O2 -march=native -pthread bench/stream_limit.c -o stream_limit
 * (-march=native matters: without it the FMA loop is SSE mul+add.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE) */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- streaming bandwidth ------------------------------------------------ */

static void copy(float *restrict b, const float *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = a[i];
}

static void triad(float *restrict a, const float *restrict b, const float *restrict c,
                  float s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

/* ---- FMA peak ----------------------------------------------------------- */

#if defined(__AVX512F__)
#define VBYTES 64
#define NACC 16 /* 32 zmm registers */
#elif defined(__AVX__)
#define VBYTES 32
#define NACC 12 /* 16 ymm registers: 12 accumulators + multiplier + addend */
#else
#define VBYTES 16
#define NACC 12
#endif
typedef float vf __attribute__((vector_size(VBYTES)));
/* an explicit FMA: ISO modes (-std=c17) turn off -ffp-contract, so a*b+c
 * would stay a multiply and an add */
#if defined(__FMA__) && VBYTES == 64
#include <immintrin.h>
#define VFMA(x, y, z) ((vf)_mm512_fmadd_ps((__m512)(x), (__m512)(y), (__m512)(z)))
#elif defined(__FMA__) && VBYTES == 32
#include <immintrin.h>
#define VFMA(x, y, z) ((vf)_mm256_fmadd_ps((__m256)(x), (__m256)(y), (__m256)(z)))
#elif defined(__FMA__)
#include <immintrin.h>
#define VFMA(x, y, z) ((vf)_mm_fmadd_ps((__m128)(x), (__m128)(y), (__m128)(z)))
#else
#define VFMA(x, y, z) ((x) * (y) + (z)) /* no FMA unit: mul + add */
#endif
#define LANES (VBYTES / 4)

/* acc = acc * m + a on NACC independent chains; returns a checksum so the
 * work cannot be dropped. */
static __attribute__((noinline)) float fma_loop(long iters, float mv, float av)
{
	vf m, a, acc[NACC];
	for (int l = 0; l < LANES; l++) {
		m[l] = mv;
		a[l] = av;
	}
	for (int k = 0; k < NACC; k++)
		for (int l = 0; l < LANES; l++)
			acc[k][l] = (float)k * 1e-3f;
	for (long i = 0; i < iters; i++) {
#pragma GCC unroll 16
		for (int k = 0; k < NACC; k++)
			acc[k] = VFMA(acc[k], m, a);
		/* keep the accumulators in registers, opaque to the optimizer */
		__asm__ volatile("" : "+x"(m), "+x"(a));
	}
	float s = 0;
	for (int k = 0; k < NACC; k++)
		for (int l = 0; l < LANES; l++)
			s += acc[k][l];
	return s;
}


/* ---- read-only streaming --------------------------------------------------- */

#define RACC 8
#define RSTREAMS 8
/* sum of n floats into RACC vector accumulators: loads and adds only, so the
 * figure is read bandwidth. The array is read as RSTREAMS sections at once
 * (RACC vectors of each section a step), as a GEMV reads several weight rows
 * together: on the Zen 4 VMs of this project one sequential stream reaches
 * 19-24 GB/s on one core where eight reach 30-37 (the hardware prefetchers
 * keep more lines in flight), and rlopt's GEMV ran above the one-stream loop,
 * which was then no limit. The tail (n not a multiple of RSTREAMS * RACC * LANES) is
 * left out of the sum and of the bytes. */
static size_t read_len(size_t n)
{
	return n / (RSTREAMS * RACC * LANES) * (RSTREAMS * RACC * LANES);
}

static __attribute__((noinline)) float read_sum(const float *a, size_t n)
{
	vf acc[RACC];
	for (int k = 0; k < RACC; k++)
		for (int l = 0; l < LANES; l++)
			acc[k][l] = 0.0f;
	size_t q = n / RSTREAMS / LANES; /* vectors per section, a multiple of RACC */
	const vf *v = (const vf *)a;
	for (size_t i = 0; i < q; i += RACC)
		for (int k = 0; k < RSTREAMS; k++) {
			const vf *w = v + (size_t)k * q + i;
#pragma GCC unroll 8
			for (int j = 0; j < RACC; j++)
				acc[j] += w[j];
		}
	float s = 0;
	for (int k = 0; k < RACC; k++)
		for (int l = 0; l < LANES; l++)
			s += acc[k][l];
	return s;
}

struct reader {
	pthread_t tid;
	pthread_barrier_t *bar;
	size_t n;
	int reps;
	int fail;
	float sum;
	double *t0, *t1; /* per pass: this thread's own start and end */
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	float *buf = aligned_alloc(64, r->n * sizeof(float));
	if (buf)
		for (size_t i = 0; i < r->n; i++) /* first touch by this thread */
			buf[i] = (float)(i & 15);
	else
		r->fail = 1;
	pthread_barrier_wait(r->bar); /* allocated */
	for (int rep = 0; rep < r->reps; rep++) {
		pthread_barrier_wait(r->bar); /* start */
		r->t0[rep] = now();
		if (buf)
			r->sum += read_sum(buf, r->n);
		r->t1[rep] = now();
		pthread_barrier_wait(r->bar); /* end */
	}
	free(buf);
	return NULL;
}

/* best wall time of one pass of nthreads readers over n floats each; <= 0 on
 * failure. A pass runs from the first reader's start to the last reader's
 * end, each read on the reader's own clock: the main thread only waits at
 * the barriers, and with as many readers as CPUs it is not scheduled
 * promptly after one (timed from main, passes came out at 60-650 GB/s on a
 * 2-vCPU VM whose memory reads 30-37). */
static double read_all(int nthreads, size_t n, int reps, float *chk)
{
	pthread_barrier_t bar;
	struct reader *rs = calloc((size_t)nthreads, sizeof *rs);
	double *ts = calloc((size_t)nthreads * (size_t)reps * 2, sizeof *ts);
	if (!rs || !ts || pthread_barrier_init(&bar, NULL, (unsigned)nthreads + 1) != 0) {
		free(rs);
		free(ts);
		return -1;
	}
	int started = 0;
	for (int t = 0; t < nthreads; t++) {
		rs[t].bar = &bar;
		rs[t].n = n;
		rs[t].reps = reps;
		rs[t].t0 = ts + (size_t)t * (size_t)reps * 2;
		rs[t].t1 = rs[t].t0 + reps;
		if (pthread_create(&rs[t].tid, NULL, reader_main, &rs[t]) != 0)
			break;
		started++;
	}
	if (started < nthreads) { /* cannot run the barrier protocol: give up */
		fprintf(stderr, "stream_limit: pthread_create failed\n");
		exit(1);
	}
	pthread_barrier_wait(&bar);
	for (int rep = 0; rep < reps; rep++) {
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
	}
	int fail = 0;
	for (int t = 0; t < nthreads; t++) {
		pthread_join(rs[t].tid, NULL);
		fail |= rs[t].fail;
		*chk += rs[t].sum;
	}
	double best = 1e30;
	for (int rep = 0; rep < reps; rep++) {
		double a = rs[0].t0[rep], b = rs[0].t1[rep];
		for (int t = 1; t < nthreads; t++) {
			if (rs[t].t0[rep] < a)
				a = rs[t].t0[rep];
			if (rs[t].t1[rep] > b)
				b = rs[t].t1[rep];
		}
		if (b - a < best)
			best = b - a;
	}
	pthread_barrier_destroy(&bar);
	free(rs);
	free(ts);
	return fail ? -1 : best;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* best wall and best thread-CPU time of one pass */
struct best {
	double wall, cpu;
};
static void best_update(struct best *b, double w0, double c0)
{
	double w = now() - w0, c = cpu_now() - c0;
	if (w < b->wall)
		b->wall = w;
	if (c < b->cpu)
		b->cpu = c;
}

/* last-level cache size in bytes from sysfs (glibc's sysconf reports the
 * whole socket's L3, or nonsense in some VMs), else sysconf; 0 if unknown */
static long llc_size(void)
{
	long best = 0;
	for (int i = 0; i < 8; i++) {
		char path[128], buf[64];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		if (fgets(buf, sizeof buf, f)) {
			char *end;
			long v = strtol(buf, &end, 10);
			if (*end == 'K')
				v <<= 10;
			else if (*end == 'M')
				v <<= 20;
			if (v > best)
				best = v;
		}
		fclose(f);
	}
	if (best > 0)
		return best;
	best = sysconf(_SC_LEVEL3_CACHE_SIZE);
	return best > 0 ? best : sysconf(_SC_LEVEL2_CACHE_SIZE);
}

/* the read-only figures over arrays of n floats: one thread (best of wall
 * and CPU time, as for copy), then every online CPU at once */
static int read_figures(size_t n, float *chk)
{
	size_t rn = read_len(n);
	if (rn == 0)
		rn = RSTREAMS * RACC * LANES;
	float *ra = aligned_alloc(64, rn * sizeof(float));
	if (!ra) {
		fprintf(stderr, "stream_limit: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < rn; i++)
		ra[i] = (float)(i & 15);
	struct best br = {1e30, 1e30};
	for (int rep = 0; rep < 5; rep++) {
		double w0 = now(), c0 = cpu_now();
		*chk += read_sum(ra, rn);
		best_update(&br, w0, c0);
	}
	free(ra);
	double rbytes = (double)rn * sizeof(float);
	double rd_w = rbytes / br.wall / 1e9, rd_c = rbytes / br.cpu / 1e9;
	printf("stream_read_GBps %.2f\n", rd_c > rd_w ? rd_c : rd_w);
	printf("stream_read_wall_GBps %.2f\n", rd_w);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > 256)
		ncpu = 256;
	double tall = read_all((int)ncpu, rn, 5, chk);
	printf("read_threads %ld\n", ncpu);
	printf("stream_read_all_GBps %.2f\n", tall > 0 ? (double)ncpu * rbytes / tall / 1e9 : 0.0);
	return tall > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--read")) {
		/* the read-only figures alone (bench_kernels.py runs them between
		 * GEMV rounds, so both see the same machine) */
		size_t mib = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 256;
		if (mib == 0) {
			fprintf(stderr, "usage: stream_limit --read [MiB per array]\n");
			return 1;
		}
		float chk = 0;
		int rc = read_figures(mib * 1024 * 1024 / sizeof(float), &chk);
		if (chk != chk)
			printf("checksum %g\n", (double)chk);
		return rc;
	}
	size_t mib = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 256;
	if (mib == 0) {
		fprintf(stderr, "usage: stream_limit [--read] [MiB per array]\n");
		return 1;
	}
	size_t n = mib * 1024 * 1024 / sizeof(float);
	float *a = aligned_alloc(64, n * sizeof(float));
	float *b = aligned_alloc(64, n * sizeof(float));
	float *c = aligned_alloc(64, n * sizeof(float));
	if (!a || !b || !c) {
		fprintf(stderr, "stream_limit: cannot allocate 3 x %zu MiB\n", mib);
		return 1;
	}
	for (size_t i = 0; i < n; i++) { /* touch every page */
		a[i] = 1.0f;
		b[i] = 2.0f;
		c[i] = (float)(i & 7);
	}
	struct best bc = {1e30, 1e30}, bt = {1e30, 1e30};
	for (int rep = 0; rep < 5; rep++) {
		double w0 = now(), c0 = cpu_now();
		copy(b, a, n);
		best_update(&bc, w0, c0);
		w0 = now();
		c0 = cpu_now();
		triad(a, b, c, 0.5f, n);
		best_update(&bt, w0, c0);
	}
	volatile float sink = a[n / 2] + b[n / 3];
	(void)sink;
	double bytes = (double)n * sizeof(float);
	free(a);
	free(b);
	free(c);

	/* last-level cache: three arrays of LLC/8 each (3/8 of the cache), many
	 * short passes, best; a model whose bytes fit in the cache is fed from it
	 * in a warm loop, so this is its limit there */
	long llc = llc_size();
	size_t ln = (size_t)(llc > 0 ? llc : 8 << 20) / 8 / sizeof(float);
	float *la = aligned_alloc(64, ln * sizeof(float));
	float *lb = aligned_alloc(64, ln * sizeof(float));
	float *lc = aligned_alloc(64, ln * sizeof(float));
	if (!la || !lb || !lc) {
		fprintf(stderr, "stream_limit: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < ln; i++) {
		la[i] = 1.0f;
		lb[i] = 2.0f;
		lc[i] = (float)(i & 7);
	}
	struct best lcb = {1e30, 1e30}, ltb = {1e30, 1e30};
	for (int rep = 0; rep < 200; rep++) {
		double w0 = now(), c0 = cpu_now();
		copy(lb, la, ln);
		best_update(&lcb, w0, c0);
		w0 = now();
		c0 = cpu_now();
		triad(la, lb, lc, 0.5f, ln);
		best_update(&ltb, w0, c0);
	}
	sink = la[ln / 2] + lb[ln / 3];
	double lbytes = (double)ln * sizeof(float);
	double llc_copy = 2 * lbytes / (lcb.wall < lcb.cpu ? lcb.wall : lcb.cpu) / 1e9;
	double llc_triad = 3 * lbytes / (ltb.wall < ltb.cpu ? ltb.wall : ltb.cpu) / 1e9;
	free(la);
	free(lb);
	free(lc);

	/* FMA: many short passes (~5 ms), best of 40: on a shared machine a short
	 * pass has a fair chance of running uninterrupted */
	long iters = 1 << 12;
	float chk = 0;
	for (;;) {
		double t0 = now();
		chk += fma_loop(iters, 0.999999f, 1e-6f);
		double t = now() - t0;
		if (t > 0.005 || iters > (1L << 30))
			break;
		iters *= 2;
	}
	struct best bf = {1e30, 1e30};
	for (int rep = 0; rep < 40; rep++) {
		double w0 = now(), c0 = cpu_now();
		chk += fma_loop(iters, 0.999999f, 1e-6f);
		best_update(&bf, w0, c0);
	}
	double flops = 2.0 * LANES * NACC * (double)iters;
	double copy_w = 2 * bytes / bc.wall / 1e9, copy_c = 2 * bytes / bc.cpu / 1e9;
	double triad_w = 3 * bytes / bt.wall / 1e9, triad_c = 3 * bytes / bt.cpu / 1e9;
	double bw_w = copy_w > triad_w ? copy_w : triad_w;
	double bw_c = copy_c > triad_c ? copy_c : triad_c;
	printf("stream_copy_GBps %.2f\n", copy_w);
	printf("stream_triad_GBps %.2f\n", triad_w);
	printf("stream_bw_wall_GBps %.2f\n", bw_w);
	printf("stream_bw_cpu_GBps %.2f\n", bw_c);
	/* the limit: the better of wall and thread-CPU time (on a shared machine
	 * the thread is descheduled part of the wall time; CPU time excludes that) */
	printf("stream_bw_GBps %.2f\n", bw_c > bw_w ? bw_c : bw_w);
	printf("llc_bytes %ld\n", llc > 0 ? llc : 0L);
	printf("stream_llc_GBps %.2f\n", llc_copy > llc_triad ? llc_copy : llc_triad);
	printf("fma_gflops_wall %.2f\n", flops / bf.wall / 1e9);
	printf("fma_gflops %.2f\n", flops / (bf.cpu < bf.wall ? bf.cpu : bf.wall) / 1e9);
	printf("fma_vector_bits %d\n", VBYTES * 8);
	fflush(stdout);

	if (read_figures(n, &chk) != 0)
		return 1;
#if !defined(__FMA__)
	printf("fma_note compiled without FMA (use -march=native): figure is mul+add\n");
#endif
	if (chk != chk) /* NaN: never; keeps chk alive */
		printf("checksum %g\n", (double)chk);
	return 0;
}
