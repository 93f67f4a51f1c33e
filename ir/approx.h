/*
 * approx.h - the rational approximations of tanh and erf, written once.
 *
 * Three places compute these functions and must agree bit for bit: the
 * generated code's vector math (rl_vtanh, rl_verf: backends/c/emit_math.c),
 * its scalar helpers (rl_tanhf, rl_erff: backends/c/emit.c) and constant
 * folding (ir/scalar.c). Each form below is an expression in s = a^2 and
 * s2 = s^2 that is valid C for float and for GCC vector types alike; the
 * folder uses it as code, the code generator as text (RL_APPROX_STR
 * stringizes the expanded macro), so a change of coefficient reaches all
 * three at once.
 *
 * Both are minimax fits of f(a)/a (odd functions, so a P(s) / Q(s) with
 * s = a^2), fitted for this project with Lawson-weighted linear least squares
 * on the linearized relative error (numpy, double), evaluated by Estrin's
 * scheme; errors are over every float against double libm:
 *
 *   tanh  a = min(|x|, 10), P and Q of degree 4 on [0, 9]; 0.63 ulp with
 *         the coefficients rounded to float; 5.84 ulp evaluated without
 *         FMA, 5.18 with. The quotient a P / Q is capped at 1.
 *   erf   a = min(|x|, 4), P and Q of degree 5 on [0, 4]; P(0) = 2/sqrt(pi);
 *         1.25 ulp with the coefficients rounded to float; 5.80 ulp
 *         evaluated without FMA, 6.15 with. a (P / Q), the quotient first
 *         so that a denormal a is rounded once; capped at 1 (float erf is
 *         1 from 3.92 on, the fit slightly above it there).
 *
 * The sign of x is put back afterwards (-0 stays -0, NaN passes, +-inf give
 * +-1). The erf form replaced, in session 13, a rational function with
 * published coefficients (7 ulp); the tanh form, in session 12, one built on
 * expm1 (3 ulp, twice the dependent steps).
 */
#ifndef RL_APPROX_H
#define RL_APPROX_H

#define RL_TANH_CLAMP 10.0f
#define RL_TANH_P(s, s2)                                                      \
	((s * 1.338398201e-01f + 1.0f) +                                      \
	 s2 * ((s * 2.066129698e-05f + 3.498998153e-03f) + s2 * 1.341987011e-08f))
#define RL_TANH_Q(s, s2)                                                      \
	((s * 4.671730350e-01f + 1.0f) +                                      \
	 s2 * ((s * 3.291041779e-04f + 2.589021426e-02f) + s2 * 7.804748989e-07f))

#define RL_ERF_CLAMP 4.0f
#define RL_ERF_P(s, s2)                                                       \
	((s * 1.929325318e-01f + 1.128379167e+00f) +                          \
	 s2 * ((s * 3.856310007e-03f + 5.301915018e-02f) +                    \
	       s2 * (s * 1.989927310e-06f + 2.838238017e-04f)))
#define RL_ERF_Q(s, s2)                                                       \
	((s * 5.043148246e-01f + 1.0f) +                                      \
	 s2 * ((s * 1.515371569e-02f + 1.150951436e-01f) +                    \
	       s2 * (s * 3.741352473e-05f + 1.178737162e-03f)))

#define RL_APPROX_STR_(x) #x
#define RL_APPROX_STR(x) RL_APPROX_STR_(x)

#endif
