/*
 * emit_math.c - the vector math library a generated .c carries: exp, expm1,
 * log, log1p, tanh, sigmoid, sqrt and erf on rl_vf (16 floats, emit_rt.c), as
 * branch-free C that any GNU-compatible compiler turns into straight-line
 * SIMD at plain -O2: no -ffast-math, no libm call, no intrinsic header.
 *
 * Why it looks like this:
 *
 * - Each helper takes pointers (`rl_vexp(rl_vf *r, const rl_vf *x)`): a
 *   64-byte vector passed by value changes the ABI between the target clones
 *   (GCC warns, Clang refuses); always_inline makes the pointers free.
 * - Rounding to an integer is the 1.5*2^23 magic constant (adding it leaves
 *   the nearest integer in the low mantissa bits), so n comes out both as a
 *   float and, from the bits, as an integer without a float->int conversion
 *   (undefined for NaN in scalar C); bit casts are vector casts.
 * - Every lane select is rl_vif (emit_rt.c): a comparison and a pick in a
 *   16-iteration lane loop, which the vectorizer turns into compares and
 *   blends at the width of each clone. Written on rl_vf itself (`m = x < y`,
 *   then rl_vsel), GCC 12 compiles the comparison as 16 scalar compares and
 *   branches in every clone narrower than 64 bytes: the x86-64-v3 clone of a
 *   fused Sigmoid/Tanh/Sqrt chain ran 1177 instructions per 16 floats, 218
 *   with rl_vif, and the AVX-512 clone is unchanged (llvm-mca on the loops).
 * - No two selects that pick the same value under one condition combined
 *   with `|`/`&` (GCC 12 lowers a combined mask lane by lane).
 * - sqrt is the sqrtps instruction on x86-64 (see rl_vsqrt), reached through
 *   a target builtin that exists in every x86-64 clone (SSE), since sqrtf
 *   keeps an errno call that blocks vectorization under plain -O2.
 * - Only what a file needs is emitted (cg_vmath_need), with its
 *   dependencies first, into cg->statics under `#ifdef RL_VEC`: the scalar
 *   path under `#else` keeps the libm calls and rl_tanhf/rl_erff, and
 *   constant folding keeps its own scalar table.
 *
 * Maximum errors, measured by tests/unit/test_emit_math.c against double
 * precision libm over a dense sweep of floats (every 97th float of the
 * function's domain plus the edges), in units in the last place of the
 * float result:
 *
 *   rl_vexp      1.5 ulp  Cody-Waite reduction, fitted degree 6 (1.16 seen)
 *   rl_vexpz     1.5 ulp  rl_vexp for x >= -87.3, 0 below (softmax rows only)
 *   rl_vexpm1    2.5 ulp  same core; 2^n q + (2^n - 1) for small n (2.01)
 *   rl_vlog      2 ulp    m in [sqrt(1/2), sqrt(2)), atanh series to s^9 (1.90)
 *   rl_vlog1p    4 ulp    log(1+u) u / ((1+u) - 1), Goldberg's correction (3.68)
 *   rl_vtanh     6 ulp    a P(a^2) / Q(a^2), degree 4 / 4, capped at 1 (5.84 seen
 *                        over every float, 5.18 with FMA; was 3 ulp through expm1)
 *   rl_vsigmoid  2.5 ulp  t = exp(-|x|); 1 / (1 + t), or t / (1 + t) for x < 0
 *                         (2.40 seen over all floats; was 1 / (1 + exp(-x)), 2.31
 *                         above -87 and 0 for x < -88.7)
 *   rl_verf      7 ulp    a P(a^2) / Q(a^2), degree 5 / 5, capped at 1 (5.80 seen
 *                        over every float, 6.15 with FMA; both forms in ir/approx.h)
 *   rl_vsqrt     0.5 ulp  x86-64: the instruction, correctly rounded
 *                0.501    elsewhere and with RL_PORTABLE_MATH, in float:
 *                ulp      Newton from a bit-trick 1/sqrt, then one
 *                         exact-residual Newton step on sqrt x, rounded once:
 *                         correctly rounded but within 5e-4 ulp of a midpoint
 *                         (0.5005 seen, also over every float)
 *
 * The test sweeps four builds: the baseline ISA (no FMA), the same with
 * RL_PORTABLE_MATH, -march=native and -march=x86-64-v3 (the contractions
 * and lowerings the x86-64-v4/v3 clones get).
 *
 * Special values: NaN in gives NaN out everywhere. exp: -inf -> 0, +inf and
 * x > 88.72 -> +inf, results below FLT_MIN are denormals (one rounding).
 * expm1: -inf -> -1, -0 -> -0. log: x < 0 -> NaN, +-0 -> -inf, +inf -> +inf,
 * denormal inputs exact as normal ones. tanh: +-inf -> +-1, -0 -> -0.
 * sigmoid: -inf -> 0, +inf -> 1, denormal results for x < -87.3.
 * sqrt: x < 0 -> NaN, -0 -> -0, +inf -> +inf,
 * denormals exact. erf: +-inf -> +-1, -0 -> -0. Division everywhere is the native `/` (IEEE).
 */
#include "emit_impl.h"
#include "approx.h"

#include <ctype.h>
#include <string.h>

/* Lane loads and stores that move fewer than RL_VW floats: the padded last
 * vector of a row, so tails get the same math as the body. */
/* The helpers every function builds on; vm_write_narrow renames them for
 * rl_wf (cg_vnarrow_text), so they are written once. */
static const char vm_base_ops[] =
	"RL_INLINE void rl_vload_n(rl_vf *r, const float *p, size_t n)\n"
	"{\n"
	"    *r = (rl_vf){0};\n"
	"    memcpy(r, p, n * sizeof(float));\n"
	"}\n\n"
	"RL_INLINE void rl_vstore_n(float *p, const rl_vf *v, size_t n)\n"
	"{\n"
	"    memcpy(p, v, n * sizeof(float));\n"
	"}\n\n"
	"/* |x|: the sign bit cleared */\n"
	"RL_INLINE void rl_vabs(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    *r = (rl_vf)((rl_vu)*x & 0x7fffffffu);\n"
	"}\n\n"
	"/* x clamped to [lo, hi]; a NaN lane stays NaN (both comparisons false) */\n"
	"RL_INLINE void rl_vclamp(rl_vf *r, const rl_vf *x, float lo, float hi)\n"
	"{\n"
	"    const rl_vf l = (rl_vf){0} + lo, h = (rl_vf){0} + hi;\n"
	"    rl_vif(r, RL_LT, x, &l, &l, x);\n"
	"    rl_vif(r, RL_GT, r, &h, &h, r);\n"
	"}\n\n";

static const char vm_base[] =
	"#ifdef __AVX512F__\n"
	"/* Compiled for AVX-512 already (-march=native): the clones add nothing,\n"
	" * and GCC 12 fails (internal compiler error) inlining these helpers,\n"
	" * folded for the file's AVX-512 target, into an x86-64-v3 clone. */\n"
	"#undef RL_TARGETS\n"
	"#define RL_TARGETS\n"
	"#undef RL_CLONES\n"
	"#endif\n\n";

/* The shared core of exp and expm1. */
static const char vm_expcore[] =
	"/*\n"
	" * For x in [-104, 89]: x = n ln2 + r with n = round(x / ln2) (the 1.5*2^23\n"
	" * magic constant), r by the Cody-Waite two-constant reduction (ln2_hi has 9\n"
	" * significant bits, so n * ln2_hi is exact), |r| <= ln2/2 + tiny. q = e^r - 1\n"
	" * = r + r^2 P(r), P of degree 4 fitted for least maximum error of 1 + q\n"
	" * (Lawson-weighted least squares on Chebyshev nodes, coefficients rounded to\n"
	" * float: 3.7e-9 relative, under the 6e-9 of the degree-7 Taylor polynomial it\n"
	" * replaced, one FMA less). ni is n as an integer, from the rounded sum's bits.\n"
	" */\n"
	"RL_INLINE void rl_vexp_core(rl_vf *q, rl_vf *nf, rl_vi *ni, const rl_vf *x)\n"
	"{\n"
	"    const rl_vf t = *x * 1.44269502f + 12582912.0f;\n"
	"    const rl_vf n = t - 12582912.0f;\n"
	"    rl_vf r = *x - n * 0.693359375f;\n"
	"    r = r - n * -2.12194440e-4f;\n"
	"    rl_vf p = r * 1.381453942e-3f + 8.368745446e-3f;\n"
	"    p = p * r + 4.166838899e-2f;\n"
	"    p = p * r + 1.666652113e-1f;\n"
	"    p = p * r + 4.999999404e-1f;\n"
	"    p = p * r + 1.0f;\n"
	"    *q = p * r;\n"
	"    *nf = n;\n"
	"    *ni = (rl_vi)((rl_vu)t - 0x4b400000u);\n"
	"}\n\n";

static const char vm_exp[] =
	"/* e^x, within 1.5 ulp; 2^n is applied as two factors 2^(n/2) 2^(n - n/2),\n"
	" * both normal, so large x overflows to inf and small x underflows\n"
	" * through the denormals with a single rounding */\n"
	"RL_INLINE void rl_vexp(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    rl_vf xc, q, n;\n"
	"    rl_vi ni;\n"
	"    rl_vclamp(&xc, x, -104.0f, 89.0f);\n"
	"    rl_vexp_core(&q, &n, &ni, &xc);\n"
	"    const rl_vi h = ni >> 1;\n"
	"    const rl_vf s1 = (rl_vf)(((rl_vu)h + 127u) << 23);\n"
	"    const rl_vf s2 = (rl_vf)(((rl_vu)(ni - h) + 127u) << 23);\n"
	"    *r = (q * s1 + s1) * s2;\n"
	"}\n\n";

/* Softmax's exponentials (emit_norm.c softmax_vec, emit_attn.c row_softmax):
 * every e^x there is divided by a sum of at least 1, so a result below
 * FLT_MIN is 0 here, not a denormal. x is clamped to -87.3 (e^-87.3 =
 * 1.22e-38 > FLT_MIN) before the exp so that no lane computes an underflow:
 * on x86 a multiply whose result underflows takes a microcode assist, and a
 * causal mask of -1e9 makes half of an attention row's lanes underflow
 * (measured, Zen 3, one thread: Softmax over 1x4x16x16 after a causal mask
 * 2.54 us with rl_vexp, 1.29 us unmasked). Then lanes with x < -87.3 are
 * set to 0 (absolute error < 1.23e-38; NaN stays NaN, -inf gives 0). */
static const char vm_expz[] =
	"/* e^x as rl_vexp, but 0 for x < -87.3 (no denormal result, no underflow\n"
	" * assist): softmax's exponentials, each divided by a sum >= 1 */\n"
	"RL_INLINE void rl_vexpz(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    rl_vf xc, e;\n"
	"    rl_vclamp(&xc, x, -87.3f, 89.0f);\n"
	"    rl_vexp(&e, &xc);\n"
	"    const rl_vf lo = (rl_vf){0} - 87.3f, zero = {0};\n"
	"    rl_vif(r, RL_LT, x, &lo, &zero, &e);\n"
	"}\n\n";

static const char vm_expm1[] =
	"/* e^x - 1, within 2.5 ulp: q itself for n = 0 (so small x keeps its\n"
	" * relative accuracy and -0 its sign), 2^n q + (2^n - 1) for n up to 24,\n"
	" * e^x - 1 through two factors above (the -1 no longer matters) */\n"
	"RL_INLINE void rl_vexpm1(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    rl_vf xc, q, n;\n"
	"    rl_vi ni;\n"
	"    rl_vclamp(&xc, x, -88.0f, 89.0f);\n"
	"    rl_vexp_core(&q, &n, &ni, &xc);\n"
	"    const rl_vi h = ni >> 1;\n"
	"    const rl_vf s1 = (rl_vf)(((rl_vu)h + 127u) << 23);\n"
	"    const rl_vf s2 = (rl_vf)(((rl_vu)(ni - h) + 127u) << 23);\n"
	"    const rl_vf big = (q * s1 + s1) * s2 - 1.0f;\n"
	"    const rl_vf s = (rl_vf)(((rl_vu)ni + 127u) << 23);\n"
	"    rl_vf small = q * s + (s - 1.0f);\n"
	"    const rl_vf zero = {0}, c24 = (rl_vf){0} + 24.0f;\n"
	"    rl_vif(&small, RL_EQ, &n, &zero, &q, &small);\n"
	"    rl_vif(&small, RL_GT, &n, &c24, &big, &small);\n"
	"    rl_vif(r, RL_EQ, x, &zero, x, &small); /* the reduction turns -0 into +0 */\n"
	"}\n\n";

static const char vm_log[] =
	"/*\n"
	" * log x within 2 ulp: x = m 2^e with m in [sqrt(1/2), sqrt(2)) (denormals\n"
	" * scaled by 2^23 first), f = m - 1 (exact), s = f / (2 + f) and\n"
	" * log m = 2 atanh s = 2s (1 + s^2/3 + s^4/5 + s^6/7 + s^8/9) (|s| <= 0.172,\n"
	" * truncation < 3e-9 relative); e ln2 added in two parts. x near 1 has\n"
	" * e = 0, so log x keeps its relative accuracy there.\n"
	" */\n"
	"RL_INLINE void rl_vlog(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    rl_vf v, corr;\n"
	"    const rl_vf zero = {0}, tiny = (rl_vf){0} + 1.17549435e-38f;\n"
	"    const rl_vf up = *x * 8388608.0f, c23 = (rl_vf){0} + 23.0f;\n"
	"    rl_vif(&v, RL_LT, x, &tiny, &up, x);\n"
	"    rl_vif(&corr, RL_LT, x, &tiny, &c23, &zero);\n"
	"    rl_vf e = __builtin_convertvector((rl_vi)(((rl_vu)v >> 23) & 0xffu), rl_vf);\n"
	"    e = e - 127.0f - corr;\n"
	"    rl_vf mm = (rl_vf)(((rl_vu)v & 0x7fffffu) | 0x3f800000u);\n"
	"    const rl_vf half = mm * 0.5f, e1 = e + 1.0f, s2r = (rl_vf){0} + 1.41421356f;\n"
	"    rl_vif(&e, RL_GT, &mm, &s2r, &e1, &e);\n"
	"    rl_vif(&mm, RL_GT, &mm, &s2r, &half, &mm);\n"
	"    const rl_vf f = mm - 1.0f;\n"
	"    const rl_vf s = f / (f + 2.0f);\n"
	"    const rl_vf z = s * s;\n"
	"    rl_vf p = z * 0.111111111f + 0.142857143f;\n"
	"    p = p * z + 0.2f;\n"
	"    p = p * z + 0.333333333f;\n"
	"    p = p * z;\n"
	"    const rl_vf s2 = s + s;\n"
	"    rl_vf y = e * 0.693145752f + (s2 * p + s2 + e * 1.42860682e-6f);\n"
	"    /* specials: NaN and +inf (all exponent bits set) pass, 0 gives -inf,\n"
	"     * negatives (-inf too, hence last) NaN */\n"
	"    const rl_vf ninf = (rl_vf){0} - __builtin_inff(), nan = (rl_vf){0} + __builtin_nanf(\"\");\n"
	"    const rl_vf inf = (rl_vf){0} + __builtin_inff();\n"
	"    rl_vf ax;\n"
	"    rl_vabs(&ax, x);\n"
	"    rl_vif(&y, RL_LT, &ax, &inf, &y, x);\n"
	"    rl_vif(&y, RL_EQ, x, &zero, &ninf, &y);\n"
	"    rl_vif(r, RL_LT, x, &zero, &nan, &y);\n"
	"}\n\n";

static const char vm_log1p[] =
	"/* log(1 + u) within 4 ulp: w = 1 + u rounds, but log(w) u / (w - 1) cancels\n"
	" * that rounding to first order (Goldberg); w = 1 gives u itself */\n"
	"RL_INLINE void rl_vlog1p(rl_vf *r, const rl_vf *u)\n"
	"{\n"
	"    const rl_vf w = *u + 1.0f;\n"
	"    rl_vf l;\n"
	"    rl_vlog(&l, &w);\n"
	"    rl_vf y = l * (*u / (w - 1.0f));\n"
	"    const rl_vf inf = (rl_vf){0} + __builtin_inff(), one = (rl_vf){0} + 1.0f;\n"
	"    rl_vif(&y, RL_EQ, &w, &one, u, &y);\n"
	"    rl_vif(r, RL_EQ, u, &inf, &inf, &y);\n"
	"}\n\n";

/* An odd function as ir/approx.h writes it: a = min(|x|, c), s = a^2, the
 * quotient `quot` of P(s) and Q(s) times a, capped at 1, the sign of x put
 * back by its bit (-0 stays -0, NaN passes). tanh and erf. */
#define VM_ODD_RATIONAL(fn, c, P, Q, quot)                                              \
	"RL_INLINE void " fn "(rl_vf *r, const rl_vf *x)\n"                              \
	"{\n"                                                                            \
	"    rl_vf a, y;\n"                                                              \
	"    const rl_vf c = (rl_vf){0} + " RL_APPROX_STR(c) ", one = (rl_vf){0} + 1.0f;\n" \
	"    rl_vabs(&a, x);\n"                                                          \
	"    rl_vif(&a, RL_GT, &a, &c, &c, &a);\n"                                       \
	"    const rl_vf s = a * a, s2 = s * s;\n"                                       \
	"    const rl_vf p = " RL_APPROX_STR(P) ";\n"                                    \
	"    const rl_vf q = " RL_APPROX_STR(Q) ";\n"                                    \
	"    const rl_vf t = " quot ";\n"                                                \
	"    rl_vif(&y, RL_GT, &t, &one, &one, &t);\n"                                   \
	"    *r = (rl_vf)((rl_vu)y | ((rl_vu)*x & 0x80000000u));\n"                      \
	"}\n\n"

static const char vm_tanh[] =
	"/* tanh x within 6 ulp: a = min(|x|, 10), s = a^2, tanh a = a P(s) / Q(s)\n"
	" * with P and Q of degree 4 (ir/approx.h: a minimax fit of tanh(a)/a on\n"
	" * [0, 9], 0.63 ulp with the coefficients rounded to float; the rest is\n"
	" * rounding in P, Q and the quotient), both by Estrin's scheme; the quotient\n"
	" * is capped at 1 (past 9.1 the fit rises above 1, so a = 10 gives exactly\n"
	" * 1) and the sign of x put back by its bit (-0 stays -0, NaN passes). No\n"
	" * exp: the fused ew_chain ran 1.8 -> 1.4 ms with this instead of\n"
	" * -e / (e + 2), e = expm1(-2|x|) (3 ulp), whose chain of dependent steps\n"
	" * was twice as long. rl_tanhf (emit.c) is the same function on one float. */\n"
	VM_ODD_RATIONAL("rl_vtanh", RL_TANH_CLAMP, RL_TANH_P(s, s2), RL_TANH_Q(s, s2), "a * p / q");

static const char vm_sigmoid[] =
	"/* sigmoid x within 2.5 ulp from t = e^-|x| in (0, 1]: 1 / (1 + t) for\n"
	" * x >= 0, t / (1 + t) for x < 0 (the numerator picked by the sign bit, no\n"
	" * compare). e^-|x| never overflows, so results down to the denormals are\n"
	" * right (1 / (1 + e^-x) gave 0 below -88.7), and it is the same\n"
	" * computation as an Exp of -|x|: a fused chain that also has one (e.g.\n"
	" * Sigmoid(x) next to Exp(Neg(Abs(x)))) computes that exp once, GCC's\n"
	" * value numbering merging the two after inlining. */\n"
	"RL_INLINE void rl_vsigmoid(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    rl_vf a, t;\n"
	"    rl_vabs(&a, x);\n"
	"    const rl_vf na = -a;\n"
	"    rl_vexp(&t, &na);\n"
	"    const rl_vi neg = (rl_vi)*x >> 31;\n"
	"    const rl_vf num = (rl_vf)((neg & (rl_vi)t) | (~neg & (rl_vi)((rl_vf){0} + 1.0f)));\n"
	"    *r = num / (t + 1.0f);\n"
	"}\n\n";

static const char vm_sqrt[] =
	"/*\n"
	" * sqrt x. On x86-64 the instruction itself (SSE sqrtps, in every clone:\n"
	" * four 4-lane pieces, which the AVX clones still issue as v-prefixed\n"
	" * sqrtps): correctly rounded, 0.5 ulp, IEEE specials. Not sqrtf: GCC\n"
	" * keeps its errno call (sqrtf(-1) sets EDOM) unless the user compiles with\n"
	" * -fno-math-errno, and that call blocks every vectorization.\n"
	" *\n"
	" * Elsewhere (or with RL_PORTABLE_MATH), within 0.501 ulp, all in float:\n"
	" * x below 2^-100 (denormals too) is scaled by 2^24 first and the result by\n"
	" * 2^-12, so x/2 and 1/x stay normal; y = 1/sqrt x from the bit-trick\n"
	" * estimate (3.5% off) and two Newton steps (-> 4.7e-6); s = x y, clamped\n"
	" * below 2^64 so s^2 stays finite; then one Newton step on s itself,\n"
	" * s + (x - s^2) y/2, with x - s^2 formed from exact products (s split by a\n"
	" * mask into 12 + 12 significant bits), so it needs no FMA and means the\n"
	" * same with or without contraction. The step leaves about (s - sqrt x)^2 /\n"
	" * 2s before the one final rounding: correctly rounded but where sqrt x\n"
	" * lies within 5e-4 ulp of a midpoint. NaN stays NaN, the sign of x is put\n"
	" * back by its bit (so -0 stays -0); +inf and negatives are selected.\n"
	" */\n"
	"#if defined(__x86_64__) && defined(__has_builtin) && !defined(RL_PORTABLE_MATH)\n"
	"#if __has_builtin(__builtin_shufflevector) && __has_builtin(__builtin_ia32_sqrtps)\n"
	"#define RL_HW_SQRT 1\n"
	"#endif\n"
	"#endif\n"
	"#ifdef RL_HW_SQRT\n"
	"typedef float rl_vf4 __attribute__((vector_size(16)));\n"
	"#ifdef __AVX512F__\n"
	"RL_INLINE void rl_vsqrt(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"#ifdef __clang__ /* its builtin has no mask operands */\n"
	"    *r = __builtin_ia32_sqrtps512(*x, 4);\n"
	"#else\n"
	"    *r = __builtin_ia32_sqrtps512_mask(*x, *x, (unsigned short)-1, 4);\n"
	"#endif\n"
	"}\n"
	"#else\n"
	"RL_INLINE void rl_vsqrt(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    const rl_vf4 a = __builtin_ia32_sqrtps(__builtin_shufflevector(*x, *x, 0, 1, 2, 3));\n"
	"    const rl_vf4 b = __builtin_ia32_sqrtps(__builtin_shufflevector(*x, *x, 4, 5, 6, 7));\n"
	"    const rl_vf4 c = __builtin_ia32_sqrtps(__builtin_shufflevector(*x, *x, 8, 9, 10, 11));\n"
	"    const rl_vf4 d = __builtin_ia32_sqrtps(__builtin_shufflevector(*x, *x, 12, 13, 14, 15));\n"
	"    *r = __builtin_shufflevector(__builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7),\n"
	"                                 __builtin_shufflevector(c, d, 0, 1, 2, 3, 4, 5, 6, 7),\n"
	"                                 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);\n"
	"}\n"
	"#endif\n"
	"#ifdef RL_VNARROW /* x86-64 clones, GCC 12 or later or Clang (emit_rt.c) */\n"
	"/* The AVX-512 clone's sqrt. GCC reaches vsqrtps on a whole zmm only\n"
	" * through a vectorized sqrtf, which -fmath-errno (the default, and not\n"
	" * changed per function by an optimize attribute or pragma) forbids, and an\n"
	" * AVX-512 builtin does not compile in the other clones (Clang splits the\n"
	" * rl_vsqrt above into four xmm sqrts too). So a kernel with a Sqrt is\n"
	" * written for the AVX-512 CPUs apart (emit_fused.c: the loop on rl_vf with\n"
	" * rl_vsqrt_v4 where rl_cpu_v4(), the one on rl_wf elsewhere). rl_vsqrt_v4 is the AVX-512\n"
	" * builtin in a function of its own target, not always_inline: the\n"
	" * compiler inlines it into the AVX-512 clone (its ISA a subset), where it\n"
	" * is one vsqrtps on a register, and leaves a call, never taken, in the\n"
	" * other clones (only CPUs that have the AVX-512 clone's ISA pass the\n"
	" * test, which is the clone resolver's). It is the same correctly rounded\n"
	" * sqrt. One vsqrtps zmm instead of four xmm ones and their shuffles:\n"
	" * ew_chain 11-19% faster on Zen 4. It was an asm statement on memory\n"
	" * operands, which cost the loop a store and a reload around each sqrt:\n"
	" * elementwise_chain at -O2 was 1.10x its -O3 -march=native time, now\n"
	" * 1.00x (thread CPU time). GCC 12 or later (x86-64-v4 as a\n"
	" * __builtin_cpu_supports name), or Clang (avx512f: its clone, emit_rt.c). */\n"
	"#ifdef __clang__\n"
	"static inline __attribute__((target(\"avx512f\"), unused)) void rl_vsqrt_v4(rl_vf *r,\n"
	"                                                                       const rl_vf *x)\n"
	"{\n"
	"    *r = __builtin_ia32_sqrtps512(*x, 4);\n"
	"}\n"
	"#else\n"
	"static inline __attribute__((target(\"arch=x86-64-v4\"), unused)) void\n"
	"rl_vsqrt_v4(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    *r = __builtin_ia32_sqrtps512_mask(*x, *x, (unsigned short)-1, 4);\n"
	"}\n"
	"#endif\n"
	"#endif\n"
	"#else\n"
	"RL_INLINE void rl_vsqrt(rl_vf *r, const rl_vf *x)\n"
	"{\n"
	"    rl_vf v, post;\n"
	"    const rl_vf one = (rl_vf){0} + 1.0f, zero = {0}, small = (rl_vf){0} + 7.88860905e-31f;\n"
	"    const rl_vf up = *x * 16777216.0f, pu = (rl_vf){0} + 2.44140625e-4f;\n"
	"    rl_vif(&v, RL_LT, x, &small, &up, x);\n"
	"    rl_vif(&post, RL_LT, x, &small, &pu, &one);\n"
	"    const rl_vf h = v * 0.5f;\n"
	"    rl_vf y = (rl_vf)(0x5f375a86u - ((rl_vu)v >> 1));\n"
	"    y = y * (1.5f - h * y * y);\n"
	"    y = y * (1.5f - h * y * y);\n"
	"    rl_vf s = v * y;\n"
	"    const rl_vf top = (rl_vf){0} + 1.8446743e19f;\n"
	"    rl_vif(&s, RL_GT, &s, &top, &top, &s);\n"
	"    const rl_vf sh = (rl_vf)((rl_vu)s & 0xfffff000u), sl = s - sh;\n"
	"    const rl_vf d = ((v - sh * sh) - (sh + sh) * sl) - sl * sl;\n"
	"    s = (s + d * (y * 0.5f)) * post;\n"
	"    s = (rl_vf)((rl_vu)s | ((rl_vu)*x & 0x80000000u));\n"
	"    const rl_vf nan = (rl_vf){0} + __builtin_nanf(\"\");\n"
	"    const rl_vf inf = (rl_vf){0} + __builtin_inff();\n"
	"    rl_vif(&s, RL_EQ, x, &inf, &inf, &s);\n"
	"    rl_vif(r, RL_LT, x, &zero, &nan, &s);\n"
	"}\n"
	"#endif\n\n";

static const char vm_erf[] =
	"/* erf x within 7 ulp: a = min(|x|, 4), s = a^2, erf a = a (P(s) / Q(s))\n"
	" * with P and Q of degree 5 (ir/approx.h: a minimax fit of erf(a)/a on\n"
	" * [0, 4], 1.25 ulp with the coefficients rounded to float), Estrin's\n"
	" * scheme; the quotient first, so a denormal a is rounded once; capped at\n"
	" * 1 (float erf is 1 from 3.92 on) and the sign of x put back by its bit\n"
	" * (-0 stays -0, NaN passes, +-inf give +-1). rl_erff (emit.c) is the\n"
	" * same function on one float, so Erf and Gelu run it on vectors. */\n"
	VM_ODD_RATIONAL("rl_verf", RL_ERF_CLAMP, RL_ERF_P(s, s2), RL_ERF_Q(s, s2), "a * (p / q)");

/* The 8-float copies under RL_VNARROW (emit_rt.c defines it for x86-64 below
 * AVX-512: the clones, or a file built for AVX2): the vector kernels of
 * emit_fused.c run on rl_wf where the CPU has no AVX-512. Their base is written here; every other function is its rl_vf
 * text with rl_v* renamed rl_w* (cg_vnarrow_text), so each lane computes
 * the same operations and the two widths give the same bits. */
static const char vm_nbase[] =
	"/*\n"
	" * 8-float vectors for x86-64 below AVX-512 (the x86-64-v3 and baseline\n"
	" * clones, or a file built for AVX2). There an rl_vf is two or four\n"
	" * registers: each operation is split, and a fused chain's live values\n"
	" * outgrow the 16 registers (ew_chain's x86-64-v3 loop spilled: 171 of its\n"
	" * 520 instructions were moves). So the elementwise kernels are also\n"
	" * written on rl_wf, one register under AVX, and take that loop unless the\n"
	" * CPU passes the AVX-512 clone's own test (rl_cpu_v4). bench_kernels'\n"
	" * ew_chain on Zen 3: 1.81 ms, 1.67 with the rational tanh, 1.51 with\n"
	" * both; outputs bit-identical to the rl_vf loop's.\n"
	" */\n"
	"/* whether the AVX-512 clone runs: its name for __builtin_cpu_supports\n"
	" * (emit_rt.c's RL_TARGETS); 0 in a file built for AVX2 without it */\n"
	"RL_INLINE int rl_cpu_v4(void)\n"
	"{\n"
	"#ifndef RL_CLONES\n"
	"    return 0;\n"
	"#else\n"
	"    __builtin_cpu_init();\n"
	"#ifdef __clang__\n"
	"    return __builtin_cpu_supports(\"avx512f\");\n"
	"#else\n"
	"    return __builtin_cpu_supports(\"x86-64-v4\");\n"
	"#endif\n"
	"#endif\n"
	"}\n"
	"/* rl_wf is emit_rt.c's half vector, with its rl_vhif */\n"
	"#define RL_WW RL_VH /* floats per rl_wf */\n"
	"typedef rl_vh rl_wf;\n"
	"typedef rl_vhi rl_wi;\n"
	"typedef uint32_t rl_wu __attribute__((vector_size(32)));\n"
	"typedef rl_vhu rl_wfu;\n"
	"typedef int32_t rl_wiu __attribute__((vector_size(32), aligned(4), may_alias));\n"
	"#define rl_wif rl_vhif\n"
	"/* rl_wload_n, rl_wstore_n, rl_wabs, rl_wclamp: vm_base_ops renamed */\n";

/* sqrt on rl_wf: the instruction on a whole register where the CPU has AVX,
 * else on two 4-lane halves (RL_VNARROW implies the builtins, emit_rt.c) */
static const char vm_nsqrt[] =
	"/* sqrt on rl_wf. vsqrtps on a whole ymm costs what it costs on an xmm\n"
	" * (Zen 3: 5 cycles each), so halves ran elementwise_chain's rl_wf loop\n"
	" * 1.23x slower than a file built for AVX2. The AVX builtin does not\n"
	" * compile in the baseline clone, so it sits in a function of its own\n"
	" * target, inlined into the AVX clones (a subset of their ISA) and called\n"
	" * from the baseline clone only on CPUs that have AVX. */\n"
	"typedef float rl_wf4 __attribute__((vector_size(16)));\n"
	"#ifndef __AVX__\n"
	"static inline __attribute__((target(\"avx\"), unused)) void rl_wsqrt_avx(rl_wf *r,\n"
	"                                                                   const rl_wf *x)\n"
	"{\n"
	"    *r = __builtin_ia32_sqrtps256(*x);\n"
	"}\n"
	"#endif\n"
	"RL_INLINE void rl_wsqrt(rl_wf *r, const rl_wf *x)\n"
	"{\n"
	"#ifdef __AVX__\n"
	"    *r = __builtin_ia32_sqrtps256(*x);\n"
	"#else\n"
	"    if (__builtin_cpu_supports(\"avx\")) {\n"
	"        rl_wsqrt_avx(r, x);\n"
	"        return;\n"
	"    }\n"
	"    const rl_wf4 a = __builtin_ia32_sqrtps(__builtin_shufflevector(*x, *x, 0, 1, 2, 3));\n"
	"    const rl_wf4 b = __builtin_ia32_sqrtps(__builtin_shufflevector(*x, *x, 4, 5, 6, 7));\n"
	"    *r = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7);\n"
	"#endif\n"
	"}\n";

/* One function's text, the name it defines and what it needs first. */
static const struct {
	unsigned bit;
	const char *name; /* "void NAME(" marks it as emitted */
	const char *text;
	unsigned needs;
} vm_fns[] = {
	{RL_VM_BASE, "rl_vload_n", vm_base, 0},
	{RL_VM_EXPCORE, "rl_vexp_core", vm_expcore, RL_VM_BASE},
	{RL_VM_EXP, "rl_vexp", vm_exp, RL_VM_EXPCORE},
	{RL_VM_EXPM1, "rl_vexpm1", vm_expm1, RL_VM_EXPCORE},
	{RL_VM_LOG, "rl_vlog", vm_log, RL_VM_BASE},
	{RL_VM_LOG1P, "rl_vlog1p", vm_log1p, RL_VM_LOG},
	{RL_VM_TANH, "rl_vtanh", vm_tanh, RL_VM_BASE},
	{RL_VM_SIGMOID, "rl_vsigmoid", vm_sigmoid, RL_VM_EXP},
	{RL_VM_SQRT, "rl_vsqrt", vm_sqrt, RL_VM_BASE},
	{RL_VM_ERF, "rl_verf", vm_erf, RL_VM_BASE},
	{RL_VM_EXPZ, "rl_vexpz", vm_expz, RL_VM_EXP},
};
#define VM_COUNT ((int)(sizeof(vm_fns) / sizeof(vm_fns[0])))

/* fns with every dependency added */
static unsigned vm_closure(unsigned fns)
{
	for (;;) {
		unsigned more = fns;
		for (int i = 0; i < VM_COUNT; i++)
			if (fns & vm_fns[i].bit)
				more |= vm_fns[i].needs;
		if (more == fns)
			return fns;
		fns = more;
	}
}

static bool vm_emitted(const struct rl_buf *b, const char *name)
{
	char mark[64];
	snprintf(mark, sizeof(mark), "void %s(", name);
	return b->s && strstr(b->s, mark);
}

/* vm_fns is in dependency order, so one pass emits dependencies first. */
static void vm_write(struct rl_buf *b, unsigned fns, bool skip_emitted)
{
	fns = vm_closure(fns);
	bool any = false;
	for (int i = 0; i < VM_COUNT; i++) {
		if (!(fns & vm_fns[i].bit) || (skip_emitted && vm_emitted(b, vm_fns[i].name)))
			continue;
		if (!any)
			rl_buf_printf(b, "#ifdef RL_VEC /* vector math (see the kernels that use it) */\n");
		any = true;
		rl_buf_printf(b, "%s", vm_fns[i].text);
		if (vm_fns[i].bit == RL_VM_BASE)
			rl_buf_printf(b, "%s", vm_base_ops);
	}
	if (any)
		rl_buf_printf(b, "#endif /* RL_VEC */\n\n");
}

void cg_vnarrow_text(struct rl_buf *out, const char *in, bool comments)
{
	for (const char *p = in; *p;) {
		bool start = p == in || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
		if (!comments && start && !strncmp(p, "/*", 2)) { /* they stay with the rl_vf text */
			const char *e = strstr(p + 2, "*/");
			p = e ? e + 2 : p + strlen(p);
			while (out->len && out->s[out->len - 1] == ' ')
				out->s[--out->len] = 0;
			if (*p == '\n' && (!out->len || out->s[out->len - 1] == '\n'))
				p++; /* the comment had its lines to itself */
			continue;
		}
		if (start && !strncmp(p, "RL_VW", 5) && !(isalnum((unsigned char)p[5]) || p[5] == '_')) {
			rl_buf_printf(out, "RL_WW");
			p += 5;
			continue;
		}
		if (start && !strncmp(p, "rl_v", 4) && strncmp(p, "rl_vh", 5) &&
		    strncmp(p, "rl_vsqrt_v4", 11)) {
			rl_buf_printf(out, "rl_w");
			p += 4;
		}
		while (*p && (isalnum((unsigned char)*p) || *p == '_'))
			rl_buf_append(out, p++, 1);
		if (*p && !(isalnum((unsigned char)*p) || *p == '_'))
			rl_buf_append(out, p++, 1);
	}
}

static void cg_vnarrow_before(struct rl_cgen *cg, const char *wide, bool sqrt_v4)
{
	rl_buf_printf(&cg->body, "#ifdef RL_VNARROW\n");
	cg_line(cg, "if (!rl_cpu_v4()) {");
	cg_vnarrow_text(&cg->body, wide, true);
	cg_line(cg, "} else {");
	if (sqrt_v4)
		rl_buf_printf(&cg->body, "#define rl_vsqrt rl_vsqrt_v4\n");
	rl_buf_printf(&cg->body, "#endif\n%s#ifdef RL_VNARROW\n", wide);
	if (sqrt_v4)
		rl_buf_printf(&cg->body, "#undef rl_vsqrt\n");
	cg_line(cg, "}");
	rl_buf_printf(&cg->body, "#endif\n");
}

struct rl_buf cg_vwide_begin(struct rl_cgen *cg)
{
	struct rl_buf outer = cg->body;
	cg->body = (struct rl_buf){0};
	cg->indent++;
	return outer;
}

void cg_vwide_end(struct rl_cgen *cg, struct rl_buf outer, bool sqrt_v4, bool keep)
{
	cg->indent--;
	struct rl_buf wide = cg->body;
	cg->body = outer;
	if (keep)
		cg_vnarrow_before(cg, wide.s, sqrt_v4);
	rl_buf_free(&wide);
}

void cg_vloop(struct rl_cgen *cg, const char *var, const char *n, const char *body)
{
	cg->vnarrow = 1;
	cg_vmath_need(cg, RL_VM_BASE);
	struct rl_buf outer = cg_vwide_begin(cg);
	cg_line(cg, "for (size_t %s = 0; %s < %s; %s += RL_VW) {", var, var, n, var);
	cg->indent++;
	for (const char *l = body; *l;) {
		const char *e = strchr(l, '\n');
		int len = e ? (int)(e - l) : (int)strlen(l);
		cg_line(cg, "%.*s", len, l);
		l = e ? e + 1 : l + len;
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_vwide_end(cg, outer, false, true);
}

/* The rl_wf copies of fns (and their dependencies) not yet in b. */
static void vm_write_narrow(struct rl_buf *b, unsigned fns)
{
	fns = vm_closure(fns);
	bool any = false;
	for (int i = 0; i < VM_COUNT; i++) {
		struct rl_buf name = {0};
		cg_vnarrow_text(&name, vm_fns[i].name, false);
		bool have = !(fns & vm_fns[i].bit) || vm_emitted(b, name.s);
		rl_buf_free(&name);
		if (have)
			continue;
		if (!any)
			rl_buf_printf(b, "#ifdef RL_VNARROW /* 8-float copies (see rl_wf) */\n");
		any = true;
		if (vm_fns[i].bit == RL_VM_BASE) {
			rl_buf_printf(b, "%s", vm_nbase);
			cg_vnarrow_text(b, vm_base_ops, false);
		} else if (vm_fns[i].bit == RL_VM_SQRT) {
			rl_buf_printf(b, "%s", vm_nsqrt);
		} else {
			cg_vnarrow_text(b, vm_fns[i].text, false);
		}
	}
	if (any)
		rl_buf_printf(b, "#endif /* RL_VNARROW */\n\n");
}

void cg_vmath_need(struct rl_cgen *cg, unsigned fns)
{
	vm_write(&cg->statics, fns | RL_VM_BASE, true);
	/* a device kernel (the CUDA backend's C fallback) never defines
	 * RL_VNARROW: no 8-float copies for it */
	if (cg->vnarrow && !cg->device)
		vm_write_narrow(&cg->statics, fns | RL_VM_BASE);
}

void rl_vmath_text(struct rl_buf *b, unsigned fns)
{
	vm_write(b, fns | RL_VM_BASE, false);
}
