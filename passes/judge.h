/*
 * judge.h - what the rewrite judge (judge.c), --factorize (factorize.c),
 * `rlopt diff` (tools/diff.c) and their tests share: the price of a weighted
 * node, the price of a candidate rewrite of it, the verdict rule, and the
 * decompositions (SVD, Tucker-2) that both the judge's error estimates and
 * the factorize pass use. Not a public API.
 *
 * A candidate that ONNX can express (low rank, Tucker-2, CP, depthwise-
 * separable, grouped, split) is priced by building its kernels as nodes of a
 * scratch graph and running the same per-family counters and rl_cost_price()
 * that price the model, so the judge, the roofline report and `rlopt diff` on
 * the rewritten model agree to the last byte. Sparsity is not expressible as
 * ONNX kernels; judge.c prices it from the CSR / 2:4 formulas it documents.
 */
#ifndef RL_JUDGE_H
#define RL_JUDGE_H

#include "pass.h"

/* Verdict of a time ratio after/before: "neutral" within 5%. */
#define RL_JUDGE_NEUTRAL 0.05
const char *rl_judge_verdict(double time_ratio); /* speedup/slowdown/neutral */

/* A priced rewrite (or the original node): sums over the kernels it runs. */
struct rl_judge_cost {
	double flops;         /* arithmetic, all kernels */
	double bytes;         /* main-memory bytes, all kernels */
	double time_s;        /* predicted time, launch latency of each kernel included */
	double time_bound[3]; /* time of the kernels by enum rl_bound */
	enum rl_bound bound;  /* the limit holding the largest share of the time */
	int kernels;          /* launches */
	double inter_bytes;   /* intermediate activations (written, then read back) */
	double index_bytes;   /* sparse column indices, row pointers, 2:4 metadata */
	double gather_bytes;  /* activation bytes read through the indices */
	int gather_level;     /* memory level serving the gathers (-1: none) */
};

enum rl_judge_kind {
	RL_JUDGE_LOWRANK,  /* W ~ U V: two products through a rank-r intermediate */
	RL_JUDGE_TUCKER2,  /* Conv: 1x1 reduce (r_in), kxk core, 1x1 expand (r_out) */
	RL_JUDGE_CP,       /* Conv: 1x1, kx1 and 1xk depthwise, 1x1 (rank r) */
	RL_JUDGE_DWSEP,    /* Conv: depthwise kxk then pointwise 1x1 */
	RL_JUDGE_SPARSE,   /* unstructured sparsity, CSR, at `density` */
	RL_JUDGE_SPARSE24, /* 2:4 structured sparsity in the matrix units */
	RL_JUDGE_GROUPED,  /* block-diagonal weight: `r1` groups */
	RL_JUDGE_SPLIT,    /* `r1` exact products over slices of the outputs */
	RL_JUDGE_KIND_COUNT_,
};

struct rl_judge_cand {
	enum rl_judge_kind kind;
	int64_t r1, r2;  /* ranks (lowrank r1; tucker2 r1 = in, r2 = out; cp r1),
	                    groups or slices (grouped, split) */
	double density;  /* sparse: fraction of weights kept */
};

/* The geometry of a weighted node the judge handles (MatMul/Gemm with a
 * constant 2-D weight, Conv with a constant weight), static shapes. */
struct rl_judge_node {
	uint32_t node;
	bool conv;
	enum rl_dtype dt;
	size_t es;              /* bytes per element */
	uint32_t x, w, b, y;    /* input, weight, bias (RL_NONE), output */
	/* product view: Y[M x N] = X[M x K] W[K x N] (Conv: implicit GEMM with
	 * M = batch*out pixels, K = Cin/group * kernel, N = Cout) */
	int64_t M, K, N;
	/* MatMul/Gemm */
	bool gemm, trans_a, trans_b;
	/* Conv (2-D when nsp == 2) */
	int nsp;
	int64_t batch, cin, cout, h, wd, ho, wo, kh, kw, group;
	int64_t strides[2], dil[2], pads[4];
	/* the bytes one run of the whole graph touches (rl_cost_footprint):
	 * the node's weights are priced where that leaves them, as the report
	 * prices its rows, and a candidate's with its own weights instead */
	double reuse_bytes;
};

/* Fill jn for node; false (with the reason in why) when the node is not a
 * candidate: not MatMul/Gemm/Conv, weight not constant, shapes not static. */
bool rl_judge_node_init(const struct rl_graph *g, uint32_t node,
                        struct rl_judge_node *jn, char *why, size_t whylen);
/* Price the node as it stands (rl_count_node + rl_cost_price). */
bool rl_judge_cost_node(const struct rl_graph *g, const struct rl_judge_node *jn,
                        const struct rl_machine *m, struct rl_judge_cost *out);
/* Price a candidate; false (reason in why) when it does not apply. */
bool rl_judge_cost_cand(const struct rl_graph *g, const struct rl_judge_node *jn,
                        const struct rl_machine *m, const struct rl_judge_cand *c,
                        struct rl_judge_cost *out, char *why, size_t whylen);
/* "lowrank r=256", "tucker2 r=8/8", "sparse 50%", ... */
void rl_judge_cand_name(const struct rl_judge_cand *c, char *buf, size_t n);

/* ---- decompositions (factorize.c) ---------------------------------------- */

/* True when rlopt was built with LAPACKE (the SVD). */
bool rl_fact_have_svd(void);
/* Thin SVD of the row-major m x n matrix a (not modified): s[min(m,n)]
 * descending; u (m x min) and vt (min x n) row-major, or NULL for values
 * only. False on failure or without LAPACKE. */
bool rl_fact_svd(const float *a, int64_t m, int64_t n, float *s, float *u, float *vt);
/* Relative Frobenius error of the best rank-r approximation, from the
 * singular values s[0..k). */
double rl_fact_lowrank_error(const float *s, int64_t k, int64_t r);
/* The HOSVD of a Conv weight w[cout][cin][kk] (kk = kernel elements): the
 * left singular vectors and values of its output-channel unfolding
 * (cout x cin*kk) and input-channel unfolding (cin x cout*kk). */
struct rl_fact_hosvd {
	const float *w;
	int64_t cout, cin, kk;
	int64_t ko, ki;   /* singular values of each unfolding */
	float *uo, *so;   /* cout x ko, ko */
	float *ui, *si;   /* cin x ki, ki */
};
bool rl_fact_hosvd_init(struct rl_fact_hosvd *h, const float *w, int64_t cout, int64_t cin,
                        int64_t kk);
void rl_fact_hosvd_free(struct rl_fact_hosvd *h);
/* Tucker-2 at ranks r_in/r_out (truncated HOSVD): u_in[cin x r_in],
 * core[r_out][r_in][kk], u_out[cout x r_out], any of them NULL when not
 * wanted. Returns the relative Frobenius error of the explicit
 * reconstruction from the float factors, or -1 on failure. */
double rl_fact_tucker2(const struct rl_fact_hosvd *h, int64_t r_in, int64_t r_out,
                       float *u_in, float *core, float *u_out);
/* Smallest rank whose low-rank error, from singular values s[0..k), is
 * under `bound` (k when none below). */
int64_t rl_fact_rank_for(const float *s, int64_t k, double bound);

#endif /* RL_JUDGE_H */
