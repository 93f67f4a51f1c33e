/*
 * timing_harness.c - times the C that rlopt generated for one model.
 *
 * Compiled together with the generated NAME.c; the model is chosen with
 * macros:
 *
 *   cc -O2 -march=native -I DIR -DRL_MODEL_HEADER='"NAME.h"' \
 *      -DRL_PREFIX=NAME -DRL_PREFIX_UC=NAME_IN_UPPER_CASE \
 *      bench/timing_harness.c DIR/NAME.c -o NAME_bench -lm
 *
 * (RL_PREFIX_UC is the prefix of the header's NAME_NUM_INPUTS macros.)
 *
 *   NAME_bench [--runs N | --seconds S] [--inner K] [--warmup W] [--weights PATH]
 *              [--dump DIR] [--seed K] [--threads T] [--flush MB]
 *
 * --threads T calls NAME_set_threads(T) before NAME_init; it needs the
 * harness compiled with -DRL_HAVE_THREADS (the driver adds it when NAME.h
 * declares NAME_set_threads). Without it the model runs as generated and
 * --threads other than 1 is an error (the generated code before threads was
 * single-threaded).
 *
 * Inputs are sized from NAME_inputs[] and filled with a fixed pseudo-random
 * pattern (xorshift64*, seed K, default 1): floats uniform in [-1, 1),
 * integers in [0, 10), bools 0/1. --dump DIR writes every input and output of
 * the first timed run as raw little-endian bytes, DIR/input_K.bin and
 * DIR/output_K.bin, so a driver can check the outputs against another
 * runtime on exactly these inputs.
 *
 * --flush MB writes and reads a buffer of MB MiB before every timed sample
 * (not timed), so the model's weights and activations are no longer in the
 * core's caches (MB above the L2, e.g. 8): a layer timed alone otherwise
 * finds its weights in L2 on every run after the first, where in a model
 * the layers before evicted them (ResNet-50's 1x1 1024->256 on 14x14: 615
 * us alone, 800 us inside the model, on a 2 MB-L2 Xeon).
 *
 * --inner K times K back-to-back runs per sample and reports the sample
 * divided by K (default 1): for kernels of a few microseconds, where the
 * clock reads around each run (system calls in some VMs) would dominate.
 *
 * After W warm-up runs (default 2) it times N runs of NAME_run_v (default:
 * as many as fit in S seconds, default 1, at least 3), each with
 * clock_gettime(CLOCK_MONOTONIC) and with the thread's CPU time, and prints
 *
 *   runs N
 *   init_s X          NAME_init
 *   median_s X        per-run wall time, median of N
 *   min_s X           per-run wall time, minimum
 *   cpu_median_s X    per-run thread CPU time, median (excludes the time the
 *   cpu_min_s X       thread was descheduled on a shared machine)
 *   proc_cpu_median_s X  per-run CPU time of the whole process (all threads:
 *                     with a thread pool, the work the workers did too)
 *   threads T         the T passed to NAME_set_threads, 0 if not called
 *
 * Built with -DRL_PROFILE (and the model too), it then prints NAME_profile's
 * table of the timed runs: a header line "kernel calls total_s mean_s min_s share"
 * and one tab-separated line per kernel.
 *
 * Exit status: 0, or 1 when init or a run fails (message on stderr).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifndef RL_MODEL_HEADER
#error "compile with -DRL_MODEL_HEADER='\"NAME.h\"' -DRL_PREFIX=NAME -DRL_PREFIX_UC=UPPER"
#endif
#if !defined(RL_PREFIX) || !defined(RL_PREFIX_UC)
#error "compile with -DRL_PREFIX=NAME -DRL_PREFIX_UC=UPPER (see the header of timing_harness.c)"
#endif

#include RL_MODEL_HEADER

#define RL_CAT2(a, b) a##b
#define RL_CAT(a, b) RL_CAT2(a, b)
#define M(sym) RL_CAT(RL_PREFIX, sym)   /* M(_run_v) -> NAME_run_v */
#define MU(sym) RL_CAT(RL_PREFIX_UC, sym)

#define RL_STR2(a) #a
#define RL_STR(a) RL_STR2(a)

#define NIN MU(_NUM_INPUTS)
#define NOUT MU(_NUM_OUTPUTS)

static double wall_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double proc_cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* uniform in [-1, 1) */
static float rng_float(void)
{
	return (float)((double)(rng_next() >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

static uint16_t f2h(float f) /* float -> IEEE half, round to nearest even */
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	int32_t e = (int32_t)((x >> 23) & 0xff) - 127 + 15;
	uint32_t m = x & 0x7fffffu;
	if (e <= 0) { /* subnormal or zero (inputs are in [-1, 1): no overflow) */
		if (e < -10)
			return (uint16_t)sign;
		m |= 0x800000u;
		uint32_t shift = (uint32_t)(14 - e);
		uint32_t h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (m >> 13), rem = m & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}

static int fill(void *p, int onnx_dtype, long long n)
{
	for (long long i = 0; i < n; i++) {
		switch (onnx_dtype) {
		case 1: ((float *)p)[i] = rng_float(); break;
		case 11: ((double *)p)[i] = rng_float(); break;
		case 10: ((uint16_t *)p)[i] = f2h(rng_float()); break;
		case 16: { /* bfloat16: truncate */
			float f = rng_float();
			uint32_t x;
			memcpy(&x, &f, 4);
			((uint16_t *)p)[i] = (uint16_t)(x >> 16);
			break;
		}
		case 2: ((uint8_t *)p)[i] = (uint8_t)(rng_next() % 10); break;
		case 3: ((int8_t *)p)[i] = (int8_t)(rng_next() % 10); break;
		case 4: ((uint16_t *)p)[i] = (uint16_t)(rng_next() % 10); break;
		case 5: ((int16_t *)p)[i] = (int16_t)(rng_next() % 10); break;
		case 6: ((int32_t *)p)[i] = (int32_t)(rng_next() % 10); break;
		case 7: ((int64_t *)p)[i] = (int64_t)(rng_next() % 10); break;
		case 12: ((uint32_t *)p)[i] = (uint32_t)(rng_next() % 10); break;
		case 13: ((uint64_t *)p)[i] = (uint64_t)(rng_next() % 10); break;
		case 9: ((uint8_t *)p)[i] = (uint8_t)(rng_next() & 1); break;
		default: return -1;
		}
	}
	return 0;
}

static int write_file(const char *dir, const char *kind, int k, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s_%d.bin", dir, kind, k);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "timing_harness: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, long n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(void)
{
	fprintf(stderr, "usage: %s_bench [--runs N | --seconds S] [--inner K] [--warmup W] [--weights PATH] "
	                "[--dump DIR] [--seed K] [--threads T] [--flush MB]\n",
	        RL_STR(RL_PREFIX));
	exit(1);
}

int main(int argc, char **argv)
{
	long runs = 0, warmup = 2, inner = 1;
	double seconds = 1.0;
	const char *weights = NULL, *dump = NULL;
	uint64_t seed = 1;
	long threads = 0, flush_mb = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (i + 1 >= argc)
			usage();
		if (!strcmp(a, "--runs"))
			runs = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "--seconds"))
			seconds = strtod(argv[++i], NULL);
		else if (!strcmp(a, "--inner"))
			inner = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "--warmup"))
			warmup = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "--weights"))
			weights = argv[++i];
		else if (!strcmp(a, "--dump"))
			dump = argv[++i];
		else if (!strcmp(a, "--seed"))
			seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "--threads"))
			threads = strtol(argv[++i], NULL, 10);
		else if (!strcmp(a, "--flush"))
			flush_mb = strtol(argv[++i], NULL, 10);
		else
			usage();
	}
	rng_state = seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL;
	if (!rng_state)
		rng_state = 1;

	const void *in[NIN > 0 ? NIN : 1];
	void *out[NOUT > 0 ? NOUT : 1];
	for (int k = 0; k < NIN; k++) {
		size_t nb = M(_inputs)[k].nbytes;
		void *p = aligned_alloc(64, (nb + 63) / 64 * 64 + 64);
		if (!p || fill(p, M(_inputs)[k].onnx_dtype, M(_inputs)[k].numel)) {
			fprintf(stderr, "timing_harness: input %d (%s): %s\n", k, M(_inputs)[k].name,
			        p ? "unsupported dtype" : "out of memory");
			return 1;
		}
		in[k] = p;
	}
	for (int k = 0; k < NOUT; k++) {
		size_t nb = M(_outputs)[k].nbytes;
		out[k] = aligned_alloc(64, (nb + 63) / 64 * 64 + 64);
		if (!out[k]) {
			fprintf(stderr, "timing_harness: out of memory\n");
			return 1;
		}
		memset(out[k], 0, nb);
	}

	if (inner < 1) {
		fprintf(stderr, "timing_harness: --inner wants a positive count\n");
		return 1;
	}
	if (flush_mb < 0 || flush_mb > 65536) {
		fprintf(stderr, "timing_harness: --flush %ld: want 0..65536 MiB\n", flush_mb);
		return 1;
	}
	size_t flush_n = (size_t)flush_mb << 18; /* floats */
	float *flush_buf = flush_n ? malloc(flush_n * sizeof(float)) : NULL;
	if (flush_n && !flush_buf) {
		fprintf(stderr, "timing_harness: --flush: out of memory\n");
		return 1;
	}
	volatile float flush_sink = 0;
	if (threads < 0 || threads > 4096) {
		fprintf(stderr, "timing_harness: --threads %ld: want 1..4096\n", threads);
		return 1;
	}
	if (threads > 0) {
#ifdef RL_HAVE_THREADS
		if (M(_set_threads)((int)threads) != 0) {
			fprintf(stderr, "timing_harness: %s_set_threads(%ld) failed\n",
			        RL_STR(RL_PREFIX), threads);
			return 1;
		}
#else
		if (threads != 1) {
			fprintf(stderr, "timing_harness: --threads %ld: built without RL_HAVE_THREADS "
			                "(the header has no %s_set_threads)\n", threads, RL_STR(RL_PREFIX));
			return 1;
		}
		threads = 0;
#endif
	}

	double t0 = wall_now();
	if (M(_init)(weights) != 0) {
		fprintf(stderr, "timing_harness: %s_init failed\n", RL_STR(RL_PREFIX));
		return 1;
	}
	double init_s = wall_now() - t0;

	for (long i = 0; i < warmup; i++) {
		if (M(_run_v)(in, out) != 0) {
			fprintf(stderr, "timing_harness: run failed\n");
			return 1;
		}
	}

#ifdef RL_PROFILE
	M(_profile)(NULL); /* the timed runs only */
#endif
	long cap = runs > 0 ? runs : 1000000;
	double *wt = malloc((size_t)cap * sizeof *wt), *ct = malloc((size_t)cap * sizeof *ct);
	double *pt = malloc((size_t)cap * sizeof *pt);
	if (!wt || !ct || !pt) {
		fprintf(stderr, "timing_harness: out of memory\n");
		return 1;
	}
	long n = 0;
	double start = wall_now();
	for (;;) {
		if (flush_buf) {
			float s = 0;
			for (size_t q = 0; q < flush_n; q += 16)
				flush_buf[q] = (float)q;
			for (size_t q = 0; q < flush_n; q += 16)
				s += flush_buf[q];
			flush_sink = s;
		}
		/* the CPU clocks are system calls (about 0.5 us each on the VMs
		 * this is measured on, 2 us a run for the four): outside the
		 * wall-clock window, which the vDSO's monotonic clock bounds */
		double p0 = proc_cpu_now(), c0 = cpu_now(), w0 = wall_now();
		int rc = 0;
		for (long r = 0; r < inner && rc == 0; r++)
			rc = M(_run_v)(in, out);
		double w1 = wall_now(), c1 = cpu_now(), p1 = proc_cpu_now();
		if (rc != 0) {
			fprintf(stderr, "timing_harness: run failed\n");
			return 1;
		}
		wt[n] = (w1 - w0) / (double)inner;
		ct[n] = (c1 - c0) / (double)inner;
		pt[n] = (p1 - p0) / (double)inner;
		n++;
		if (n == 1 && dump) {
			if (mkdir(dump, 0777) != 0 && errno != EEXIST) {
				fprintf(stderr, "timing_harness: mkdir %s: %s\n", dump, strerror(errno));
				return 1;
			}
			for (int k = 0; k < NIN; k++)
				if (write_file(dump, "input", k, in[k], M(_inputs)[k].nbytes))
					return 1;
			for (int k = 0; k < NOUT; k++)
				if (write_file(dump, "output", k, out[k], M(_outputs)[k].nbytes))
					return 1;
		}
		if (runs > 0 ? n >= runs : (n >= 3 && w1 - start >= seconds) || n >= cap)
			break;
	}
	double wmin = wt[0], cmin = ct[0];
	for (long i = 1; i < n; i++) {
		if (wt[i] < wmin)
			wmin = wt[i];
		if (ct[i] < cmin)
			cmin = ct[i];
	}
	printf("runs %ld\n", n);
	printf("init_s %.9f\n", init_s);
	printf("median_s %.9f\n", median(wt, n));
	printf("min_s %.9f\n", wmin);
	printf("cpu_median_s %.9f\n", median(ct, n));
	printf("cpu_min_s %.9f\n", cmin);
	printf("proc_cpu_median_s %.9f\n", median(pt, n));
	printf("threads %ld\n", threads);
#ifdef RL_PROFILE
	fflush(stdout);
	M(_profile)(stdout); /* kernel, calls, total_s, mean_s, min_s, share: tab-separated */
#endif
	(void)flush_sink;
	free(flush_buf);
	free(wt);
	free(ct);
	free(pt);
	M(_free)();
	for (int k = 0; k < NIN; k++)
		free((void *)in[k]);
	for (int k = 0; k < NOUT; k++)
		free(out[k]);
	return 0;
}
