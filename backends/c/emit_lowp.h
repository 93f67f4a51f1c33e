/*
 * emit_lowp.h - the low-precision dtypes in generated C (emit_lowp.c).
 *
 * float8 (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0), float4e2m1, int4/uint4
 * and int2/uint2 are stored one element a byte (ir/lowp.c): float codes in
 * a uint8_t, int4/int2 sign-extended in an int8_t, uint4/uint2 in a
 * uint8_t. The generated model's buffers and its NAME_run arguments use
 * that form; only ONNX and tensor files are packed.
 *
 * For other emitters (QuantizeLinear and DequantizeLinear with these
 * dtypes, for instance), two calls give C expressions; each marks the
 * helper functions it uses, which the driver then writes into the
 * generated file (and only those, so the file stays free of unused-function
 * warnings):
 *
 *   cg_lowp_to_float(cg, t, "X0[o]")
 *       a float expression for the stored byte expression of dtype t
 *       (int4/int2 kinds: the integer as a float).
 *   cg_lowp_from_float(cg, t, "v", sat, round_mode)
 *       the stored byte of dtype t for float expression v, as Cast does:
 *       float8 and float4 round to nearest even, with sat a value beyond
 *       the largest finite (and inf) becomes the largest finite, without it
 *       inf or NaN as the format has (float4 always saturates); float8e8m0
 *       rounds by round_mode (enum rl_lowp_round). Integer kinds truncate v
 *       toward zero, then with sat clamp to the range (QuantizeLinear: pass
 *       the already rounded value, e.g. "nearbyintf(x / s) + zp"), without
 *       it wrap like Cast (NaN and values beyond int64 are undefined there,
 *       as in C; with sat a NaN gives 0). Every helper is a function, so v
 *       is evaluated once.
 *
 * Both return a pointer into a rotating buffer (valid for the next few
 * calls, like cg_load); NULL when t is not a low-precision dtype.
 */
#ifndef RL_EMIT_LOWP_H
#define RL_EMIT_LOWP_H

#include "emit_impl.h"

const char *cg_lowp_to_float(struct rl_cgen *cg, enum rl_dtype t, const char *e);
const char *cg_lowp_from_float(struct rl_cgen *cg, enum rl_dtype t, const char *v, bool sat,
                               int round_mode);

/* ---- for the C driver (emit.c, emit_elemwise.c) ------------------------- */

/* The node touches a low-precision dtype or is a BitCast: emit_lowp.c
 * writes it (Identity, Cast, CastLike, BitCast). */
bool cg_lowp_node(struct rl_cgen *cg, uint32_t node);
enum rl_status rl_emit_c_lowp(struct rl_cgen *cg, uint32_t node);
/* Append the helper functions cg->need_lowp asks for. */
void rl_emit_lowp_helpers(struct rl_buf *b, unsigned need);

#endif /* RL_EMIT_LOWP_H */
