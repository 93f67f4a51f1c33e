/*
 * emit_rt.c - the small runtime a generated .c carries: portable vectors,
 * per-ISA compilation of the kernels that use them, and a thread pool.
 *
 * Why it looks like this:
 *
 * - Users compile the generated file with plain `cc -O2`. GCC 12 then
 *   vectorizes only loops its "very cheap" cost model accepts (no epilogue,
 *   no alias checks, no calls, no errno-setting sqrtf), so a fused loop with
 *   a division or a transcendental stays scalar. The kernels that matter are
 *   therefore written with GCC/Clang generic vectors (`rl_vf`, 16 floats),
 *   which need no flag, no intrinsic header and no -ffast-math, and which
 *   lower to whatever the target has: 1 zmm, 2 ymm, 4 xmm or 4 NEON q regs.
 * - RL_TARGETS compiles such a kernel three times (x86-64-v4: AVX-512,
 *   x86-64-v3: AVX2+FMA, and the baseline) and lets the loader pick one on
 *   the running CPU (GNU target_clones, an ifunc resolved once at load
 *   time). Elsewhere it is empty, and non-GNU compilers take the scalar
 *   path under `#else` of RL_VEC, which every vector kernel keeps.
 * - Vector helpers take pointers, not vectors: a 64-byte vector passed by
 *   value changes the ABI between the clones (GCC warns, Clang refuses),
 *   and always_inline pointers cost nothing once inlined.
 * - Threads: a persistent pool of POSIX threads, started by NAME_init, sized
 *   by NAME_set_threads (default: online cores). A kernel written as a range
 *   [lo, hi) of its outer loop is split into contiguous chunks, one per
 *   thread; the caller takes chunk 0. Workers spin briefly between kernels
 *   (a kernel of a few microseconds must not pay a futex wake-up) and then
 *   sleep on a condition variable. OpenMP is not used: `cc -O2` without
 *   -fopenmp must still run on all cores. An output element is always
 *   computed inside one iteration, so results are bit-identical for any
 *   thread count.
 */
#include "emit.h"

static const char rt_vec[] =
	"/* ---- vectors: generic 16-float vectors, compiled per ISA (see RL_TARGETS) ---- */\n"
	"#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__)) && !defined(RL_NO_VEC)\n"
	"#define RL_VEC 1\n"
	"#define RL_VW 16 /* floats per rl_vf */\n"
	"typedef float rl_vf __attribute__((vector_size(64)));\n"
	"typedef int32_t rl_vi __attribute__((vector_size(64)));\n"
	"typedef uint32_t rl_vu __attribute__((vector_size(64)));\n"
	"/* unaligned, aliasing views for loads and stores: *(const rl_vfu *)p */\n"
	"typedef float rl_vfu __attribute__((vector_size(64), aligned(4), may_alias));\n"
	"typedef int32_t rl_viu __attribute__((vector_size(64), aligned(4), may_alias));\n"
	"#define RL_INLINE static inline __attribute__((always_inline, unused))\n"
	"#if defined(__x86_64__) && defined(__linux__) && !defined(RL_NO_CLONES)\n"
	"#define RL_TARGETS __attribute__((target_clones(\"arch=x86-64-v4\", \"arch=x86-64-v3\", \"default\")))\n"
	"#else\n"
	"#define RL_TARGETS\n"
	"#endif\n"
	"/* r = m ? a : b, lane by lane (m from a vector comparison) */\n"
	"RL_INLINE void rl_vsel(rl_vf *r, const rl_vi *m, const rl_vf *a, const rl_vf *b)\n"
	"{\n"
	"    *r = (rl_vf)((*m & (rl_vi)*a) | (~*m & (rl_vi)*b));\n"
	"}\n"
	"#else\n"
	"#define RL_TARGETS\n"
	"#endif\n\n";

static const char rt_pool_decl[] =
	"/* ---- threads: a persistent pool; kernels run as ranges of their outer loop ---- */\n"
	"#if !defined(RL_NO_THREADS) && defined(__unix__) && !defined(__STDC_NO_ATOMICS__)\n"
	"#include <pthread.h>\n"
	"#include <stdatomic.h>\n"
	"#include <unistd.h>\n"
	"#define RL_THREADS 1\n"
	"#endif\n"
	"#define RL_MAX_THREADS 64\n\n"
	"typedef void (*rl_task_fn)(void *arg, int64_t lo, int64_t hi);\n\n"
	"static int rl_nthreads; /* wanted, the caller included; 0: not set yet */\n\n"
	"#ifdef RL_THREADS\n"
	"static struct {\n"
	"    pthread_t tid[RL_MAX_THREADS];\n"
	"    int started;                /* worker threads running */\n"
	"    pthread_mutex_t mu;\n"
	"    pthread_cond_t wake;\n"
	"    atomic_uint gen;            /* bumped once per job */\n"
	"    atomic_int pending;         /* workers still busy with the job */\n"
	"    atomic_int quit;\n"
	"    int sleepers;               /* under mu */\n"
	"    rl_task_fn fn;\n"
	"    void *arg;\n"
	"    int64_t n;\n"
	"    int nt;                     /* chunks of the current job */\n"
	"    unsigned start_gen;         /* gen when the workers were started */\n"
	"} rl_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};\n\n"
	"static void rl_pause(void)\n"
	"{\n"
	"#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))\n"
	"    __builtin_ia32_pause();\n"
	"#endif\n"
	"}\n\n"
	"/* chunk t of nt over [0, n): contiguous and fixed by (n, nt) alone */\n"
	"static void rl_chunk_run(int t)\n"
	"{\n"
	"    int64_t lo = rl_pool.n * t / rl_pool.nt, hi = rl_pool.n * (t + 1) / rl_pool.nt;\n"
	"    if (lo < hi)\n"
	"        rl_pool.fn(rl_pool.arg, lo, hi);\n"
	"}\n\n"
	"static void *rl_worker(void *p)\n"
	"{\n"
	"    int self = (int)(intptr_t)p; /* 1.. */\n"
	"    unsigned seen = rl_pool.start_gen; /* published by pthread_create */\n"
	"    for (;;) {\n"
	"        unsigned g;\n"
	"        int spins = 0;\n"
	"        while ((g = atomic_load_explicit(&rl_pool.gen, memory_order_acquire)) == seen &&\n"
	"               !atomic_load(&rl_pool.quit)) {\n"
	"            if (++spins < 200000) {\n"
	"                rl_pause();\n"
	"                continue;\n"
	"            }\n"
	"            pthread_mutex_lock(&rl_pool.mu);\n"
	"            rl_pool.sleepers++;\n"
	"            while (atomic_load(&rl_pool.gen) == seen && !atomic_load(&rl_pool.quit))\n"
	"                pthread_cond_wait(&rl_pool.wake, &rl_pool.mu);\n"
	"            rl_pool.sleepers--;\n"
	"            pthread_mutex_unlock(&rl_pool.mu);\n"
	"        }\n"
	"        if (atomic_load(&rl_pool.quit))\n"
	"            return NULL;\n"
	"        seen = g;\n"
	"        if (self < rl_pool.nt)\n"
	"            rl_chunk_run(self);\n"
	"        atomic_fetch_sub_explicit(&rl_pool.pending, 1, memory_order_release);\n"
	"    }\n"
	"}\n\n"
	"static void rl_pool_stop(void)\n"
	"{\n"
	"    if (!rl_pool.started)\n"
	"        return;\n"
	"    pthread_mutex_lock(&rl_pool.mu);\n"
	"    atomic_store(&rl_pool.quit, 1);\n"
	"    pthread_cond_broadcast(&rl_pool.wake);\n"
	"    pthread_mutex_unlock(&rl_pool.mu);\n"
	"    for (int t = 0; t < rl_pool.started; t++)\n"
	"        pthread_join(rl_pool.tid[t], NULL);\n"
	"    rl_pool.started = 0;\n"
	"    atomic_store(&rl_pool.quit, 0);\n"
	"}\n\n"
	"/* start nthreads - 1 workers (fewer if the system refuses: runs on those) */\n"
	"static void rl_pool_start(void)\n"
	"{\n"
	"    if (rl_pool.started == rl_nthreads - 1)\n"
	"        return;\n"
	"    rl_pool_stop();\n"
	"    rl_pool.start_gen = atomic_load(&rl_pool.gen);\n"
	"    for (int t = 0; t < rl_nthreads - 1; t++) {\n"
	"        if (pthread_create(&rl_pool.tid[t], NULL, rl_worker, (void *)(intptr_t)(t + 1)) != 0)\n"
	"            break;\n"
	"        rl_pool.started++;\n"
	"    }\n"
	"}\n"
	"#endif /* RL_THREADS */\n\n"
	"static int rl_default_threads(void)\n"
	"{\n"
	"#ifdef RL_THREADS\n"
	"    long n = sysconf(_SC_NPROCESSORS_ONLN);\n"
	"    return n < 1 ? 1 : n > RL_MAX_THREADS ? RL_MAX_THREADS : (int)n;\n"
	"#else\n"
	"    return 1;\n"
	"#endif\n"
	"}\n\n"
	"/*\n"
	" * Run fn(arg, lo, hi) over [0, n) split into contiguous chunks of at least\n"
	" * `grain` iterations, one per thread; returns when all are done.\n"
	" */\n"
	"static void rl_parallel_for(rl_task_fn fn, void *arg, int64_t n, int64_t grain)\n"
	"{\n"
	"#ifdef RL_THREADS\n"
	"    int64_t most = grain > 0 ? n / grain : n;\n"
	"    int nt = rl_pool.started + 1;\n"
	"    if (most < nt)\n"
	"        nt = most < 1 ? 1 : (int)most;\n"
	"    if (nt > 1) {\n"
	"        rl_pool.fn = fn;\n"
	"        rl_pool.arg = arg;\n"
	"        rl_pool.n = n;\n"
	"        rl_pool.nt = nt;\n"
	"        atomic_store_explicit(&rl_pool.pending, rl_pool.started, memory_order_relaxed);\n"
	"        pthread_mutex_lock(&rl_pool.mu);\n"
	"        atomic_fetch_add_explicit(&rl_pool.gen, 1, memory_order_release);\n"
	"        if (rl_pool.sleepers)\n"
	"            pthread_cond_broadcast(&rl_pool.wake);\n"
	"        pthread_mutex_unlock(&rl_pool.mu);\n"
	"        rl_chunk_run(0);\n"
	"        while (atomic_load_explicit(&rl_pool.pending, memory_order_acquire) > 0)\n"
	"            rl_pause();\n"
	"        return;\n"
	"    }\n"
	"#endif\n"
	"    (void)grain;\n"
	"    if (n > 0)\n"
	"        fn(arg, 0, n);\n"
	"}\n\n";

void rl_emit_rt_vec(struct rl_buf *b)
{
	rl_buf_printf(b, "%s", rt_vec);
}

void rl_emit_rt_pool(struct rl_buf *b)
{
	rl_buf_printf(b, "%s", rt_pool_decl);
}
