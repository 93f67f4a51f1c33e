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
 *   path under `#else` of RL_VEC, which every vector kernel keeps. Clang
 *   gets the clones by feature name (avx512f, avx2): its resolver for
 *   "arch=x86-64-v4" tests the CPU's name, which no CPU matches, so every
 *   CPU ran the baseline clone.
 * - `#pragma GCC optimize("fp-contract=fast")`: under -std=c11 GCC never
 *   fuses a*b+c into an FMA, which made a fused chain 35% slower than under
 *   the default gnu17 (7.5 against 6.2 ms on elementwise_chain). Results
 *   then differ from a non-FMA build in the last bits, as any FMA does.
 * - Lane selects go through rl_vif, never a comparison written on rl_vf:
 *   GCC 12 lowers such a comparison, in a clone whose registers are
 *   narrower than the vector (x86-64-v3, baseline), to 16 scalar compares and
 *   branches; a 16-lane loop instead goes to the vectorizer, which emits
 *   compares and blends at the clone's width (tests/unit/test_emit_math.c
 *   checks that no kernel clone keeps a scalar compare). GCC before 12 does
 *   not vectorize at -O2, hence "tree-vectorize" in its pragma; Clang
 *   splits wide comparisons properly and gets them written directly.
 * - Vector helpers take pointers, not vectors: a 64-byte vector passed by
 *   value changes the ABI between the clones (GCC warns, Clang refuses),
 *   and always_inline pointers cost nothing once inlined.
 * - Loop-carried values (a reduction's sums, softmax's running maximum, the
 *   accumulators of attention's dot products) are half vectors, `rl_vh`
 *   (8 floats): GCC keeps a 16-float variable that crosses loop iterations
 *   in memory in every clone narrower than it, so an rl_vf sum in the AVX2
 *   clone cost a store, reloads and moves through general registers per
 *   step (ReduceMean over 1 MiB: 113 against 20 us with four rl_vh sums,
 *   softmax over 4096-float rows 2.1x slower). Values that do not cross an
 *   iteration stay rl_vf: GCC splits those into registers. On aarch64 an
 *   rl_vh is two NEON registers and still goes through memory (as rl_vf
 *   did): a 4-float accumulator there would need the emitters to unroll in
 *   units of the register width; aarch64 runs the portable path, checked
 *   for results (tests/py/test_codegen.py under qemu), not tuned.
 * - Threads: a persistent pool of POSIX threads, started by NAME_init, sized
 *   by NAME_set_threads (default: online cores). A kernel written as a range
 *   [lo, hi) of its outer loop is split into contiguous chunks (up to four
 *   per thread, at least the kernel's grain each) that the caller and the
 *   workers claim with a CAS: on a busy machine a worker that is not running
 *   gets no chunk, instead of making every kernel wait for it (a design that
 *   waited for each worker ran a 20 us model in 30 ms when the two cores
 *   were oversubscribed). Workers spin briefly between kernels (a kernel of
 *   a few microseconds must not pay a futex wake-up), then sleep on a
 *   condition variable. OpenMP is not used: `cc -O2` without
 *   -fopenmp must still run on all cores. An output element is always
 *   computed inside one iteration, so results are bit-identical for any
 *   thread count.
 */
#include "emit_impl.h"

static const char rt_vec[] =
	"/* ---- vectors: generic 16-float vectors, compiled per ISA (see RL_TARGETS) ---- */\n"
	"#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__)) && !defined(RL_NO_VEC)\n"
	"#define RL_VEC 1\n"
	"/* a*b+c as one FMA where the clone has FMA: GCC contracts by default in its\n"
	" * GNU modes but not under -std=c11 (35% slower on a fused chain); Clang\n"
	" * contracts within an expression in every mode */\n"
	"#if !defined(__clang__) && __GNUC__ >= 12\n"
	"#pragma GCC optimize(\"fp-contract=fast\")\n"
	"#elif !defined(__clang__)\n"
	"/* GCC before 12 runs no vectorizer at -O2, and rl_vif needs it */\n"
	"#pragma GCC optimize(\"fp-contract=fast\", \"tree-vectorize\")\n"
	"#endif\n"
	"#define RL_VW 16 /* floats per rl_vf */\n"
	"typedef float rl_vf __attribute__((vector_size(64)));\n"
	"typedef int32_t rl_vi __attribute__((vector_size(64)));\n"
	"typedef uint32_t rl_vu __attribute__((vector_size(64)));\n"
	"/* unaligned, aliasing views for loads and stores: *(const rl_vfu *)p */\n"
	"typedef float rl_vfu __attribute__((vector_size(64), aligned(4), may_alias));\n"
	"typedef int32_t rl_viu __attribute__((vector_size(64), aligned(4), may_alias));\n"
	"#define RL_INLINE static inline __attribute__((always_inline, unused))\n"
	"/* no clones when the file is already built for AVX2 or better (-march=native):\n"
	" * they add little there, and GCC 12 can fail (internal compiler error) when\n"
	" * helpers folded for the file's target are inlined into another clone */\n"
	"#if defined(__x86_64__) && defined(__linux__) && !defined(RL_NO_CLONES) && !defined(__AVX2__)\n"
	"#if defined(__clang__)\n"
	"/* Clang 14 resolves \"arch=x86-64-v4\" as a CPU-name test that no CPU\n"
	" * passes (it runs the baseline clone everywhere, 2.7-3.1x slower on the\n"
	" * elementwise chains) and drops the v3 clone: feature names instead\n"
	" * (avx512f implies AVX2 and FMA in Clang; its avx2 clone has no FMA) */\n"
	"#define RL_TARGETS __attribute__((target_clones(\"avx512f\", \"avx2\", \"default\")))\n"
	"#else\n"
	"#define RL_TARGETS __attribute__((target_clones(\"arch=x86-64-v4\", \"arch=x86-64-v3\", \"default\")))\n"
	"#endif\n"
	"#define RL_CLONES 1 /* the kernels are compiled per ISA (see rl_vsqrt_v4) */\n"
	"#else\n"
	"#define RL_TARGETS\n"
	"#endif\n"
	"/* the elementwise kernels also on 8-float vectors for x86-64 below\n"
	" * AVX-512: the clones (GCC 12 or Clang for the CPU test) or a file built\n"
	" * for AVX2 (rl_wf, emit_math.c) */\n"
	"#if !defined(RL_PORTABLE_MATH) && !defined(RL_NO_VNARROW) && \\\n"
	"    (defined(__clang__) || __GNUC__ >= 12) && \\\n"
	"    (defined(RL_CLONES) || (defined(__x86_64__) && defined(__AVX2__) && !defined(__AVX512F__)))\n"
	"#if __has_builtin(__builtin_shufflevector) && __has_builtin(__builtin_ia32_sqrtps)\n"
	"#define RL_VNARROW 1\n"
	"#endif\n"
	"#endif\n"
	"/* r = m ? a : b, lane by lane (m from a vector comparison) */\n"
	"RL_INLINE void rl_vsel(rl_vf *r, const rl_vi *m, const rl_vf *a, const rl_vf *b)\n"
	"{\n"
	"    *r = (rl_vf)((*m & (rl_vi)*a) | (~*m & (rl_vi)*b));\n"
	"}\n"
	"/* r = (x OP y) ? a : b lane by lane, OP one of the RL_LT.. below (a constant:\n"
	" * it folds once inlined). A comparison written on rl_vf itself is lowered\n"
	" * by GCC 12 lane by lane, 16 scalar compares and branches, in every clone\n"
	" * narrower than the vector (x86-64-v3, baseline); written as this loop,\n"
	" * the vectorizer turns it into compares and blends at each clone's own\n"
	" * width (one vcmpps/blend pair on AVX-512). */\n"
	"enum { RL_LT, RL_GT, RL_LE, RL_GE, RL_EQ, RL_NE };\n"
	"/* x OP y for a constant OP: on floats (a lane) or, under Clang, on vectors */\n"
	"#define RL_CMP(op, x, y)                                                             \\\n"
	"    ((op) == RL_LT ? (x) < (y) : (op) == RL_GT ? (x) > (y) : (op) == RL_LE ? (x) <= (y) : \\\n"
	"     (op) == RL_GE ? (x) >= (y) : (op) == RL_EQ ? (x) == (y) : (x) != (y))\n"
	"/* kept a loop: -O3 unrolls a 16-lane loop completely before the\n"
	" * vectorizer sees it, and SLP then builds the lanes one by one (vcmpltss,\n"
	" * vmaxss, shuffles: the elementwise chains 2.2-3x slower under -O3 than\n"
	" * under -O2, with or without -march=native) */\n"
	"#if !defined(__clang__) && __GNUC__ >= 8\n"
	"#define RL_LANE_LOOP _Pragma(\"GCC unroll 1\")\n"
	"#else\n"
	"#define RL_LANE_LOOP\n"
	"#endif\n"
	"RL_INLINE void rl_vif(rl_vf *r, int op, const rl_vf *x, const rl_vf *y, const rl_vf *a,\n"
	"                      const rl_vf *b)\n"
	"{\n"
	"#if defined(__clang__) /* legalizes rl_vf comparisons at any width */\n"
	"    const rl_vi m = RL_CMP(op, *x, *y);\n"
	"    rl_vsel(r, &m, a, b);\n"
	"#else\n"
	"    rl_vf t;\n"
	"    RL_LANE_LOOP\n"
	"    for (int l = 0; l < RL_VW; l++)\n"
	"        t[l] = RL_CMP(op, (*x)[l], (*y)[l]) ? (*a)[l] : (*b)[l];\n"
	"    *r = t;\n"
	"#endif\n"
	"}\n"
	"/* Half vectors, 8 floats, for values carried from one loop iteration to\n"
	" * the next (sums, running maxima, dot products). GCC keeps a variable of a\n"
	" * vector type wider than the clone's registers in memory once it crosses\n"
	" * iterations: an rl_vf sum in the x86-64-v3 clone is stored, reloaded\n"
	" * and moved through general registers every step (5.7x slower than four\n"
	" * rl_vh sums over 1 MiB); an rl_vh is one register in the v3 and v4\n"
	" * clones. rl_vfh views an rl_vf as its two halves. */\n"
	"#define RL_VH 8 /* floats per rl_vh */\n"
	"typedef float rl_vh __attribute__((vector_size(32)));\n"
	"typedef int32_t rl_vhi __attribute__((vector_size(32)));\n"
	"typedef float rl_vhu __attribute__((vector_size(32), aligned(4), may_alias));\n"
	"typedef union { rl_vf f; rl_vh h[2]; } rl_vfh;\n"
	"/* rl_vif on halves */\n"
	"RL_INLINE void rl_vhif(rl_vh *r, int op, const rl_vh *x, const rl_vh *y, const rl_vh *a,\n"
	"                       const rl_vh *b)\n"
	"{\n"
	"#if defined(__clang__)\n"
	"    const rl_vhi m = RL_CMP(op, *x, *y);\n"
	"    *r = (rl_vh)((m & (rl_vhi)*a) | (~m & (rl_vhi)*b));\n"
	"#else\n"
	"    rl_vh t;\n"
	"    RL_LANE_LOOP\n"
	"    for (int l = 0; l < RL_VH; l++)\n"
	"        t[l] = RL_CMP(op, (*x)[l], (*y)[l]) ? (*a)[l] : (*b)[l];\n"
	"    *r = t;\n"
	"#endif\n"
	"}\n"
	"/* |x| on halves: the sign bit cleared */\n"
	"RL_INLINE void rl_vhabs(rl_vh *r, const rl_vh *x)\n"
	"{\n"
	"    *r = (rl_vh)((rl_vhi)*x & 0x7fffffff);\n"
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
	"/*\n"
	" * One job at a time: `job` packs (generation << 32 | threads << 16 |\n"
	" * chunks). Chunk t of nt covers [n*t/nt, n*(t+1)/nt), fixed by (n, nt)\n"
	" * whoever runs it, and is claimed with a CAS on claim[t] from g - 1 (free;\n"
	" * the caller resets the job's chunks to that before publishing g) to g, so\n"
	" * a worker the OS has not scheduled yet simply gets no chunk: the caller\n"
	" * never waits for a thread to wake up, only for chunks already claimed to\n"
	" * finish, and a late worker of an older job claims nothing. fn, arg and n\n"
	" * are written before the job is published (release) and read only after a\n"
	" * claim (acquire).\n"
	" */\n"
	"#define RL_POOL_CHUNKS (4 * RL_MAX_THREADS)\n"
	"static struct {\n"
	"    pthread_t tid[RL_MAX_THREADS];\n"
	"    int started;                /* worker threads running */\n"
	"    uint32_t gen;               /* last generation published (caller only) */\n"
	"    uint32_t start_gen;         /* gen when the workers were started */\n"
	"    pthread_mutex_t mu;\n"
	"    pthread_cond_t wake;\n"
	"    atomic_int sleepers;        /* workers blocked on `wake` */\n"
	"    atomic_int quit;\n"
	"    _Atomic uint64_t job;\n"
	"    atomic_int done;            /* chunks of the current job finished */\n"
	"    rl_task_fn fn;\n"
	"    void *arg;\n"
	"    int64_t n;\n"
	"    _Atomic uint32_t claim[RL_POOL_CHUNKS]; /* the generation that took chunk t */\n"
	"} rl_pool = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};\n"
	"\n"
	"static void rl_pause(void)\n"
	"{\n"
	"#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))\n"
	"    __builtin_ia32_pause();\n"
	"#endif\n"
	"}\n"
	"\n"
	"/* Run chunk t of the nt of job g if it is still free. */\n"
	"static void rl_pool_take(uint32_t g, uint32_t t, uint32_t nt)\n"
	"{\n"
	"    uint32_t free_ = g - 1;\n"
	"    if (atomic_load_explicit(&rl_pool.claim[t], memory_order_relaxed) != free_ ||\n"
	"        !atomic_compare_exchange_strong_explicit(&rl_pool.claim[t], &free_, g,\n"
	"                                                 memory_order_acq_rel, memory_order_relaxed))\n"
	"        return;\n"
	"    int64_t lo = rl_pool.n * t / nt, hi = rl_pool.n * (t + 1) / nt;\n"
	"    if (lo < hi)\n"
	"        rl_pool.fn(rl_pool.arg, lo, hi);\n"
	"    atomic_fetch_add_explicit(&rl_pool.done, 1, memory_order_release);\n"
	"}\n"
	"\n"
	"/*\n"
	" * Run the chunks of job g still free: thread me's own first, chunks\n"
	" * [nt*me/T, nt*(me+1)/T) of T threads (the caller is 0), then the others'\n"
	" * from the last back, while their owners work from their first. Own\n"
	" * ranges are the same share of every kernel, so where two kernels in a row\n"
	" * split the same rows or pixels, a thread reads what it wrote, in its own\n"
	" * core's cache (SqueezeNet at two threads: 3140 -> 3038 us, minimum of 8\n"
	" * rounds; resnet_small 99 -> 88 us; claimed in order, as they came free, a\n"
	" * chunk went to either core). ir/cost.c rl_split_share replays this.\n"
	" */\n"
	"static void rl_pool_work(uint32_t g, uint32_t me)\n"
	"{\n"
	"    uint64_t w = atomic_load_explicit(&rl_pool.job, memory_order_acquire);\n"
	"    if ((uint32_t)(w >> 32) != g)\n"
	"        return;\n"
	"    uint32_t T = (uint32_t)(w >> 16) & 0xffffu, nt = (uint32_t)w & 0xffffu;\n"
	"    uint32_t a = nt * me / T, b = nt * (me + 1) / T;\n"
	"    for (uint32_t t = a; t < b; t++)\n"
	"        rl_pool_take(g, t, nt);\n"
	"    for (uint32_t t = nt; t-- > 0;)\n"
	"        if (t < a || t >= b)\n"
	"            rl_pool_take(g, t, nt);\n"
	"}\n"
	"\n"
	"static void *rl_worker(void *p)\n"
	"{\n"
	"    const uint32_t me = (uint32_t)(uintptr_t)p; /* 1 .. started */\n"
	"    uint32_t seen = rl_pool.start_gen; /* published by pthread_create */\n"
	"    for (;;) {\n"
	"        uint64_t w;\n"
	"        int spins = 0;\n"
	"        /* spin a little (a kernel of a few microseconds must not wait for a\n"
	"         * futex wake-up), then sleep until the next job */\n"
	"        while ((uint32_t)((w = atomic_load_explicit(&rl_pool.job, memory_order_acquire)) >> 32) ==\n"
	"                   seen && !atomic_load(&rl_pool.quit)) {\n"
	"            if (++spins < 20000) {\n"
	"                rl_pause();\n"
	"                continue;\n"
	"            }\n"
	"            pthread_mutex_lock(&rl_pool.mu);\n"
	"            atomic_fetch_add(&rl_pool.sleepers, 1);\n"
	"            while ((uint32_t)(atomic_load(&rl_pool.job) >> 32) == seen && !atomic_load(&rl_pool.quit))\n"
	"                pthread_cond_wait(&rl_pool.wake, &rl_pool.mu);\n"
	"            atomic_fetch_sub(&rl_pool.sleepers, 1);\n"
	"            pthread_mutex_unlock(&rl_pool.mu);\n"
	"            spins = 0;\n"
	"        }\n"
	"        if (atomic_load(&rl_pool.quit))\n"
	"            return NULL;\n"
	"        seen = (uint32_t)(w >> 32);\n"
	"        rl_pool_work(seen, me);\n"
	"    }\n"
	"}\n"
	"\n"
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
	"}\n"
	"\n"
	"/* start nthreads - 1 workers (fewer if the system refuses: runs on those) */\n"
	"static void rl_pool_start(void)\n"
	"{\n"
	"    if (rl_pool.started == rl_nthreads - 1)\n"
	"        return;\n"
	"    rl_pool_stop();\n"
	"    rl_pool.start_gen = rl_pool.gen;\n"
	"    for (int t = 0; t < rl_nthreads - 1; t++) {\n"
	"        if (pthread_create(&rl_pool.tid[t], NULL, rl_worker, (void *)(uintptr_t)(t + 1)) != 0)\n"
	"            break;\n"
	"        rl_pool.started++;\n"
	"    }\n"
	"}\n"
	"#endif /* RL_THREADS */\n"
	"\n"
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
	" * `grain` iterations (grain < 0: into at most -grain chunks); returns when\n"
	" * all are done.\n"
	" */\n"
	"static void rl_parallel_for(rl_task_fn fn, void *arg, int64_t n, int64_t grain)\n"
	"{\n"
	"#ifdef RL_THREADS\n"
	"    /* up to 4 chunks per thread, so a descheduled worker costs little;\n"
	"     * at least `grain` iterations each (ir/cost.c rl_split_share prices this) */\n"
	"    int64_t most = grain > 0 ? n / grain : grain < 0 && -grain < n ? -grain : n;\n"
	"    int64_t nt = 4 * (int64_t)(rl_pool.started + 1);\n"
	"    if (most < nt)\n"
	"        nt = most;\n"
	"    if (rl_pool.started > 0 && nt > 1) {\n"
	"        if (nt > RL_POOL_CHUNKS)\n"
	"            nt = RL_POOL_CHUNKS;\n"
	"        rl_pool.fn = fn;\n"
	"        rl_pool.arg = arg;\n"
	"        rl_pool.n = n;\n"
	"        atomic_store_explicit(&rl_pool.done, 0, memory_order_relaxed);\n"
	"        uint32_t g = ++rl_pool.gen;\n"
	"        for (int64_t t = 0; t < nt; t++)\n"
	"            atomic_store_explicit(&rl_pool.claim[t], g - 1, memory_order_relaxed);\n"
	"        atomic_store(&rl_pool.job, (uint64_t)g << 32 | (uint64_t)(rl_pool.started + 1) << 16 |\n"
	"                                       (uint64_t)nt);\n"
	"        if (atomic_load(&rl_pool.sleepers) > 0) {\n"
	"            pthread_mutex_lock(&rl_pool.mu);\n"
	"            pthread_cond_broadcast(&rl_pool.wake);\n"
	"            pthread_mutex_unlock(&rl_pool.mu);\n"
	"        }\n"
	"        rl_pool_work(g, 0);\n"
	"        while (atomic_load_explicit(&rl_pool.done, memory_order_acquire) < (int)nt)\n"
	"            rl_pause();\n"
	"        return;\n"
	"    }\n"
	"#endif\n"
	"    (void)grain;\n"
	"    if (n > 0)\n"
	"        fn(arg, 0, n);\n"
	"}\n"
	"\n";

void rl_emit_rt_vec(struct rl_buf *b)
{
	rl_buf_printf(b, "%s", rt_vec);
}

void rl_emit_rt_pool(struct rl_buf *b)
{
	rl_buf_printf(b, "%s", rt_pool_decl);
}
