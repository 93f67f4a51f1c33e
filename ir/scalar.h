/*
 * scalar.h - the scalar semantics of the elementwise operators: one table
 * (ir/scalar.def: cost, dtype classes, which ops are evaluated and folded)
 * and one implementation (ir/scalar.c) that constant evaluation
 * (ir/eval.c) and folding (passes/fold.c) share. The implementation copies
 * the expressions of the C backend's scalar table (emit_elemwise.c), so a
 * folded node holds the bits the generated scalar code computes;
 * tests/unit/test_scalar.c emits every op, runs it on random and edge
 * inputs and checks the generated code against rl_scalar_apply within the
 * bound scalar.def gives per op.
 */
#ifndef RL_SCALAR_H
#define RL_SCALAR_H

#include "ir.h"

enum {
	RL_SCF_F = 1 << 0,    /* defined on float16, bfloat16, float, double */
	RL_SCF_I = 1 << 1,    /* defined on signed and unsigned integers */
	RL_SCF_B = 1 << 2,    /* defined on bool */
	RL_SCF_CALC = 1 << 3, /* rl_scalar_apply computes it */
};

struct rl_scalar_info {
	bool present;         /* the op has a row */
	double flops;         /* per output element (variadic: per extra input) */
	signed char math[3];  /* enum rl_math evaluations per element; -1: none */
	unsigned flags;       /* RL_SCF_* */
	double ulp, abs;      /* bound of the emitted float32 code */
};
extern const struct rl_scalar_info rl_scalar_table[RL_OP_COUNT_];

/* The row of op; NULL when op is not an elementwise op of scalar.def. */
const struct rl_scalar_info *rl_scalar_info(enum rl_op op);

/* One element: float16, bfloat16 and float in f, double in d, signed
 * integers and bool sign-extended in i, unsigned integers zero-extended in
 * u (the same bits as i for all but uint64). */
union rl_scv {
	float f;
	double d;
	int64_t i;
	uint64_t u;
};

/* Element i of a tensor of dtype t, and the store that rounds (float16,
 * bfloat16) or wraps (narrow integers, two's complement) like the runtime. */
union rl_scv rl_scalar_load(const void *p, enum rl_dtype t, int64_t i);
void rl_scalar_store(void *p, enum rl_dtype t, int64_t i, union rl_scv v);

/* A node's attributes as the scalar semantics read them, with the ONNX
 * defaults, and each float constant also rounded as the C backend writes
 * it in a float literal. */
struct rl_scalar_attrs {
	double alpha, beta, gamma, lambd, bias;
	float alpha_f, beta_f, gamma_f, lambd_f, bias_f, nlambd_f;
	int mode; /* Gelu: 1 tanh; IsInf: bit 0 positive, bit 1 negative;
	             Mod: fmod; BitShift: 1 LEFT, 2 RIGHT, 0 invalid */
};
void rl_scalar_attrs(const struct rl_node *n, struct rl_scalar_attrs *p);

enum rl_scalar_status {
	RL_SCALAR_OK,
	RL_SCALAR_UNDEF, /* *r is what the generated code computes, but ONNX
	                    leaves the value undefined (integer division by
	                    zero, a Shrink result outside the integer type) */
	RL_SCALAR_NO,    /* not defined for this dtype (or attribute) */
};

/*
 * op (a CALC row) on a (and b for binary ops; the running value and the
 * next input for variadic ones), both of dtype dt, into *r: dt again, or
 * bool (i = 0 or 1) for comparisons, IsNaN and IsInf. float16 and bfloat16
 * compute in float. Mean is Sum here; rl_scalar_node divides.
 */
enum rl_scalar_status rl_scalar_apply(enum rl_op op, const struct rl_scalar_attrs *p,
                                      enum rl_dtype dt, union rl_scv a, union rl_scv b,
                                      union rl_scv *r);

/*
 * Elementwise node n of g (a CALC row, unary, binary or variadic, every
 * input constant with static shapes and one dtype, numpy broadcasting)
 * computed into out (the output's numel x dtype size bytes). Returns
 * RL_SCALAR_UNDEF if any element is undefined, RL_SCALAR_NO if the node
 * is not one the table computes.
 */
enum rl_scalar_status rl_scalar_node(const struct rl_graph *g, const struct rl_node *n,
                                     void *out);

#endif /* RL_SCALAR_H */
