/*
 * emit_cuda_mm.c - the CUDA backend's products: MatMul and Gemm as a block
 * tile through shared memory with a register tile per thread (the tile
 * pass's GPU schedule, else defaults), products of up to four rows as a GEMV
 * that streams B once (the batch-1 decode case), float16/bfloat16 on tensor
 * cores (mma.sync m16n8k16 or WMMA), the routing of plain products to cuBLAS
 * (--cuda-library cublas), and Conv as a direct
 * convolution, and QuantMatMul (int8/int4 weights of the quantize pass)
 * dequantized in registers; each applies its fused group's epilogue
 * (cg_epilogue) to every output it stores.
 */
#include "emit_cuda_impl.h"

#include "infer_impl.h"
#include "ir/qweights.h"

#include <string.h>

/* ---- MatMul and Gemm ----------------------------------------------------- */

struct mm {
	int64_t M, N, K, nb;
	int64_t mc, nc, kc, mr, nr;
	const char *why;
};

/* The block schedule: the tile pass's GPU tile when it fits a block, else
 * the defaults. */
static void mm_schedule(const struct rl_tile *t, struct mm *m, size_t esize)
{
	int64_t threads = t->mr > 0 && t->nr > 0 ? (int64_t)(t->mc / t->mr) * (t->nc / t->nr) : 0;
	if (t->kind == RL_TILE_GEMM && t->mr > 0 && t->nr > 0 && t->kc > 0 && t->mc % t->mr == 0 &&
	    t->nc % t->nr == 0 && threads >= 32 && threads <= 1024 && t->mr * t->nr <= 64 &&
	    (int64_t)(t->mc + t->nc) * t->kc * (int64_t)esize <= CU_MM_SMEM) {
		m->mc = t->mc, m->nc = t->nc, m->kc = t->kc, m->mr = t->mr, m->nr = t->nr;
		m->why = "GPU tile from the tile pass";
		return;
	}
	if (m->M >= CU_MM_MC && m->N >= CU_MM_MC) {
		m->mc = m->nc = CU_MM_MC, m->mr = m->nr = CU_MM_RT;
		m->why = "default tile (64 x 64, 4 x 4 per thread)";
	} else {
		m->mc = m->nc = 16, m->mr = m->nr = 1;
		m->why = "default tile for a small product (16 x 16, one output per thread)";
	}
	m->kc = CU_MM_KC;
}

/* Gemm's C term for output (gi, gj), as an expression (empty when none). */
struct gemm_c {
	const struct rl_value *c;
	int slot;
	double beta;
};

static void gemm_c_init(struct rl_cgen *cg, void *ctx, const char *ri, const char *cj, char *e,
                        size_t n)
{
	const struct gemm_c *gc = ctx;
	const struct rl_shape *s = &gc->c->shape;
	char ix[256];
	int64_t d0 = s->rank >= 2 ? s->d[s->rank - 2].v : 1, d1 = s->rank >= 1 ? s->d[s->rank - 1].v : 1;
	if (d0 == 1 && d1 == 1)
		snprintf(ix, sizeof(ix), "0");
	else if (d0 == 1)
		snprintf(ix, sizeof(ix), "%s", cj);
	else if (d1 == 1)
		snprintf(ix, sizeof(ix), "%s", ri);
	else
		snprintf(ix, sizeof(ix), "%s * %lld + %s", ri, (long long)d1, cj);
	char src[300];
	snprintf(src, sizeof(src), "X%d[%s]", gc->slot, ix);
	snprintf(e, n, "%s * %s", cg_lit(gc->c->dtype, gc->beta), cg_load(cg, gc->c->dtype, src));
}

/* Flat offset of batch `bt` of an operand with batch dims `as` (rank ra, the
 * trailing two dims excluded) broadcast into the output's batch dims. */
static void batch_off(const struct rl_shape *ys, int yb, const struct rl_shape *as, int ab,
                      int64_t mat, char *b, size_t n)
{
	struct rl_shape o = {0}, i = {0};
	o.rank = yb;
	for (int k = 0; k < yb; k++)
		o.d[k] = ys->d[k];
	i.rank = ab;
	for (int k = 0; k < ab; k++)
		i.d[k] = as->d[k];
	char ix[700];
	if (ab == 0) {
		snprintf(b, n, "0");
		return;
	}
	cu_bcast_index(&o, &i, "bt", ix, sizeof(ix));
	snprintf(b, n, "(%s) * %lld", ix, (long long)mat);
}

/* ---- few-row products (batch-1 decode): GEMV, streaming B once ------------ */

#define CU_GEMV_MAX_M 4   /* rows of A up to which a product streams B as a GEMV */
#define CU_GEMV_THREADS 128

/* The store of output row gi, column gj, batch bt from the value `acc`, with
 * Gemm's alpha and C and the fused epilogue. */
static void mm_store(struct rl_cgen *cg, const struct mm *m, enum rl_dtype dt, double alpha,
                     const struct rl_value *C, double beta, const char *acc)
{
	char e[600], cterm[400] = "";
	cg_line(cg, "const size_t o = (size_t)(bt * %lld + gi * %lld + gj);", (long long)(m->M * m->N),
	        (long long)m->N);
	if (alpha != 1.0)
		snprintf(e, sizeof(e), "%s * %s", cg_lit(dt, alpha), acc);
	else
		snprintf(e, sizeof(e), "%s", acc);
	if (C && beta != 0.0) {
		struct gemm_c gc = {C, 2, beta};
		gemm_c_init(cg, &gc, "gi", "gj", cterm, sizeof(cterm));
		size_t l = strlen(e);
		snprintf(e + l, sizeof(e) - l, " + %s", cterm);
	}
	cg_line(cg, "Y0[o] = %s;", cg_store(cg, dt, e));
	cg_epilogue(cg, "Y0 + o", "o", 1, m->N);
}

/*
 * B stored K x N (b(k,j) = B[k N + j]): one thread per column, all M rows at
 * once, so each element of B is read once and consecutive threads read
 * consecutive addresses. B stored N x K (Gemm transB, the nn.Linear layout):
 * one block per column, its threads splitting K in consecutive runs and
 * adding their partials in shared memory.
 */
static void k_gemv(struct rl_cgen *cg, const struct mm *m, enum rl_dtype dt, bool tb,
                   const char *aoff, const char *boff, const char *aix, const char *bix,
                   double alpha, const struct rl_value *C, double beta, struct launch *L)
{
	const char *ct = cg_comptype(dt);
	char src[256], av[300], bv[300];
	snprintf(src, sizeof(src), "a[%s]", aix);
	snprintf(av, sizeof(av), "%s", cg_load(cg, dt, src));
	snprintf(src, sizeof(src), "b[%s]", bix);
	snprintf(bv, sizeof(bv), "%s", cg_load(cg, dt, src));
	cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s: a GEMV streaming B once, %s */",
	        (long long)m->M, (long long)m->N, (long long)m->M, (long long)m->K, (long long)m->nb,
	        m->nb == 1 ? "" : "s", tb ? "one block per column splitting K" : "one thread per column");
	if (!tb) {
		int64_t blocks = (m->nb * m->N + CU_GEMV_THREADS - 1) / CU_GEMV_THREADS;
		L->block = CU_GEMV_THREADS;
		L->grid = blocks < CU_MAX_BLOCKS ? blocks : CU_MAX_BLOCKS;
		L->phased = false;
		cu_grid_loop(cg, "t", m->nb * m->N);
		cg->indent++;
		cg_line(cg, "const int64_t bt = t / %lld, gj = t %% %lld;", (long long)m->N, (long long)m->N);
		cg_line(cg, "const %s *a = X0 + %s;", cg_ctype(dt), aoff);
		cg_line(cg, "const %s *b = X1 + %s;", cg_ctype(dt), boff);
		cg_line(cg, "%s acc[%lld];", ct, (long long)m->M);
		cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", (long long)m->M);
		cg_line(cg, "    acc[gi] = 0;");
		cg_line(cg, "for (int64_t gk = 0; gk < %lld; gk++) {", (long long)m->K);
		cg_line(cg, "    const %s bk = %s;", ct, bv);
		cg_line(cg, "    for (int64_t gi = 0; gi < %lld; gi++)", (long long)m->M);
		cg_line(cg, "        acc[gi] += %s * bk;", av);
		cg_line(cg, "}");
		cg_line(cg, "for (int64_t gi = 0; gi < %lld; gi++) {", (long long)m->M);
		cg->indent++;
		mm_store(cg, m, dt, alpha, C, beta, "acc[gi]");
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		return;
	}
	int T = CU_GEMV_THREADS;
	L->grid = m->nb * m->N;
	L->block = T;
	L->phased = true;
	cg_line(cg, "__shared__ %s ra[%lld][%d];", ct, (long long)m->M, T);
	cg_line(cg, "const int64_t bt = blockIdx.x / %lld, gj = blockIdx.x %% %lld;", (long long)m->N,
	        (long long)m->N);
	cg_line(cg, "const %s *a = X0 + %s;", cg_ctype(dt), aoff);
	cg_line(cg, "const %s *b = X1 + %s;", cg_ctype(dt), boff);
	cg_line(cg, "(void)bt;");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "%s acc[%lld];", ct, (long long)m->M);
	cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", (long long)m->M);
	cg_line(cg, "    acc[gi] = 0;");
	cg_line(cg, "for (int64_t gk = threadIdx.x; gk < %lld; gk += %d) {", (long long)m->K, T);
	cg_line(cg, "    const %s bk = %s;", ct, bv);
	cg_line(cg, "    for (int64_t gi = 0; gi < %lld; gi++)", (long long)m->M);
	cg_line(cg, "        acc[gi] += %s * bk;", av);
	cg_line(cg, "}");
	cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", (long long)m->M);
	cg_line(cg, "    ra[gi][threadIdx.x] = acc[gi];");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "for (int h = %d; h > 0; h >>= 1) {", T / 2);
	cg_line(cg, "    RL_THREADS {");
	cg_line(cg, "        if ((int)threadIdx.x < h)");
	cg_line(cg, "            for (int gi = 0; gi < %lld; gi++)", (long long)m->M);
	cg_line(cg, "                ra[gi][threadIdx.x] += ra[gi][threadIdx.x + h];");
	cg_line(cg, "    }");
	cg_line(cg, "    RL_SYNC");
	cg_line(cg, "}");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "if ((int64_t)threadIdx.x < %lld) {", (long long)m->M);
	cg->indent++;
	cg_line(cg, "const int64_t gi = threadIdx.x;");
	mm_store(cg, m, dt, alpha, C, beta, "ra[gi][0]");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
}

/* ---- --cuda-library cublas: the product by cuBLAS, on the GPU only ---------- */

/*
 * Route a plain float32, float16 or bfloat16 product to cuBLAS when its
 * batches are uniform (each operand's batch dims either all broadcast or all
 * the output's: strided-batched GEMM). cuBLAS computes alpha op(A) op(B);
 * what it cannot fuse, Gemm's beta C and the group's epilogue, runs after it
 * as a post kernel of one thread per output, in place on Y. The caller still
 * writes rlopt's own kernel: emulation runs it (there is no cuBLAS on the
 * CPU), so the numerics checked there are rlopt's, not cuBLAS's.
 */
static void blas_route(struct cu *d, const struct rl_node *n, const struct rl_value *A,
                       const struct rl_value *B, const struct mm *m, enum rl_dtype dt,
                       bool ta, bool tb, double alpha, const struct rl_value *C, double beta)
{
	struct rl_cgen *cg = &d->cg;
	struct cu_blas *b = &d->blas;
	if (dt != RL_DT_FLOAT && dt != RL_DT_FLOAT16 && dt != RL_DT_BFLOAT16)
		return;
	/* cuBLAS writes the kernel's output Y0 in the product's dtype (the post
	 * kernel then works on it in place: the lifetime plan never shares a
	 * kernel's output with its inputs) */
	if (cg->epi && (cg->epi->nout != 1 || d->g->values[cg->epi->out[0]].dtype != dt))
		return;
	int64_t sa = m->M * m->K, sb = m->K * m->N;
	if (n->op == RL_OP_MatMul && m->nb > 1) {
		int64_t an = 1, bn = 1;
		for (int k = 0; k + 2 < A->shape.rank; k++)
			an *= A->shape.d[k].v;
		for (int k = 0; k + 2 < B->shape.rank; k++)
			bn *= B->shape.d[k].v;
		if ((an != 1 && an != m->nb) || (bn != 1 && bn != m->nb))
			return; /* mixed broadcasting ([2,1] x [1,3]): rlopt's kernel */
		sa = an == 1 ? 0 : sa;
		sb = bn == 1 ? 0 : sb;
	}
	*b = (struct cu_blas){.on = true, .dt = dt, .ta = ta, .tb = tb, .M = m->M, .N = m->N,
	                      .K = m->K, .nb = m->nb, .sa = sa, .sb = sb, .alpha = alpha};
	d->need_cublas = true;
	cg->need_half = cg->need_bf16 = 1; /* the emulated cuBLAS reads either */
	b->post = (C && beta != 0.0) || cg->epi;
	if (!b->post)
		return;
	/* the post kernel's body, written aside (cg->body holds the caller's) */
	struct rl_buf keep = cg->body;
	int indent = cg->indent;
	cg->body = d->blas_post;
	cg->body.len = 0;
	if (cg->body.s)
		cg->body.s[0] = 0;
	cg->indent = 0;
	int64_t ne = m->nb * m->M * m->N;
	cu_grid_launch(&b->pl, ne);
	cg_line(cg, "/* after cuBLAS's alpha A B in Y0: %s, in place */",
	        C && beta != 0.0 ? (cg->epi ? "Gemm's beta C and the fused epilogue" : "Gemm's beta C")
	                         : "the fused epilogue");
	cu_grid_loop(cg, "t", ne);
	cg->indent++;
	cg_line(cg, "const int64_t bt = t / %lld, gi = t / %lld %% %lld, gj = t %% %lld;",
	        (long long)(m->M * m->N), (long long)m->N, (long long)m->M, (long long)m->N);
	mm_store(cg, m, dt, 1.0, C, beta, cg_load(cg, dt, "Y0[t]"));
	cg->indent--;
	cg_line(cg, "}");
	d->blas_post = cg->body;
	cg->body = keep;
	cg->indent = indent;
}

/* ---- float16 and bfloat16 products on tensor cores (mma.sync) -------------- */

/* The block tile of the mma.sync kernel from the tile pass's GPU tile: mc x nc
 * outputs in warps of 32 x 32 (2 x 4 m16n8k16 tiles each), kc deep, when the
 * tile maps onto 1 to 16 such warps and its operand tiles fit the static
 * shared memory; false (the WMMA kernel then runs) otherwise. */
static bool mma_tile(const struct rl_tile *t, int *bm, int *bn, int *bk)
{
	if (t->kind != RL_TILE_GEMM || t->mc < 32 || t->nc < 32 || t->mc % 32 || t->nc % 32)
		return false;
	int warps = (t->mc / 32) * (t->nc / 32);
	int k = t->kc >= 64 ? 64 : t->kc >= 32 ? 32 : 16;
	if (warps < 1 || warps > 16 || (t->mc + t->nc) * (k + 8) * 2 > CU_MM_SMEM)
		return false;
	*bm = t->mc, *bn = t->nc, *bk = k;
	return true;
}

/*
 * One operand of k_mma: its shared tile S[r][kk] (rows r: A's m or B's n, BK
 * deep along k), its global pointer and index expression, the row and
 * global-row variables, the block's first row, the tile's rows R, the
 * operand's extent along them (M or N), and whether its stored rows run
 * along k (A not transposed, B transposed).
 */
struct mma_operand {
	const char *tile, *src, *ix, *r, *gr, *r0;
	int R;
	int64_t ext;
	bool along_k;
};

/* Stage one operand's BK-deep tile into shared memory, zero outside the
 * matrix: 8 consecutive elements (16 bytes) per load where the stored rows
 * allow (their length a multiple of 8: a chunk is then wholly inside or
 * outside the matrix; rows along the tile's rows are transposed into it),
 * else one element per load. */
static void mma_load_tile(struct rl_cgen *cg, const struct mma_operand *o, int64_t K, int BK,
                          int T)
{
	bool vec = o->along_k ? K % 8 == 0 : o->ext % 8 == 0;
	const char *t = o->tile, *r = o->r, *gr = o->gr;
	if (vec) {
		cg_line(cg, "for (int e = threadIdx.x; e < %d; e += %d) {", o->R * BK / 8, T);
		if (o->along_k)
			cg_line(cg, "    const int %s = e / %d, kk = e %% %d * 8;", r, BK / 8, BK / 8);
		else
			cg_line(cg, "    const int kk = e / %d, %s = e %% %d * 8;", o->R / 8, r, o->R / 8);
		cg_line(cg, "    const int64_t %s = %s + %s, gk = k0 + kk;", gr, o->r0, r);
		cg_line(cg, "    uint4 v = {0u, 0u, 0u, 0u};");
		cg_line(cg, "    if (%s < %lld && gk < %lld)", gr, (long long)o->ext, (long long)K);
		cg_line(cg, "        v = rl_ld16u(&%s[%s]);", o->src, o->ix);
		if (o->along_k) {
			cg_line(cg, "    rl_st16s(&%s[%s][kk], v);", t, r);
		} else { /* 8 rows of one k: transposed into the tile */
			cg_line(cg, "    const uint32_t w[4] = {v.x, v.y, v.z, v.w};");
			cg_line(cg, "    for (int t = 0; t < 8; t++)");
			cg_line(cg, "        %s[%s + t][kk] = (uint16_t)(w[t / 2] >> (16 * (t %% 2)));", t, r);
		}
	} else {
		cg_line(cg, "for (int e = threadIdx.x; e < %d; e += %d) {", o->R * BK, T);
		if (o->along_k)
			cg_line(cg, "    const int %s = e / %d, kk = e %% %d;", r, BK, BK);
		else
			cg_line(cg, "    const int kk = e / %d, %s = e %% %d;", o->R, r, o->R);
		cg_line(cg, "    const int64_t %s = %s + %s, gk = k0 + kk;", gr, o->r0, r);
		cg_line(cg, "    %s[%s][kk] = %s < %lld && gk < %lld ? %s[%s] : (uint16_t)0;", t, r, gr,
		        (long long)o->ext, (long long)K, o->src, o->ix);
	}
	cg_line(cg, "}");
}

/*
 * The product through PTX mma.sync.aligned.m16n8k16 (float16 or bfloat16
 * operands, float accumulators, sm_80 and later): a block of BM x BN outputs
 * in warps of 32 x 32, each warp 2 x 4 tiles of 16 x 8; A staged in shared
 * memory as As[m][k] and B as Bs[n][k] (both k-contiguous, zero outside the
 * matrix, so any M, N, K), BK deep. Every thread loads its fragments in the
 * documented m16n8k16 layout (g = lane / 4, q = lane % 4):
 *   A (row): reg0 = A[g][2q, 2q+1], reg1 = A[g+8][2q, 2q+1], reg2 = A[g][2q+8, 2q+9],
 *            reg3 = A[g+8][2q+8, 2q+9] (the lower k in the low 16 bits);
 *   B (col): reg0 = B[2q, 2q+1][g], reg1 = B[2q+8, 2q+9][g];
 *   C, D:    c0, c1 = C[g][2q, 2q+1], c2, c3 = C[g+8][2q, 2q+1],
 * and each output is stored (Gemm's alpha and C, rounding, the fused
 * epilogue) straight from its accumulator register. In emulation the
 * fragments are per-thread arrays (RL_LOCAL) and, after the phase that loads
 * them, rl_emu_mma gathers a warp's 32 lanes' registers into the 16 x 16 and
 * 16 x 8 matrices by that layout, multiplies in float and scatters D back, so
 * a layout error shows in the numerics on the CPU.
 */
static void k_mma(struct cu *d, const struct mm *m, enum rl_dtype dt, bool ta, bool tb,
                  const char *aoff, const char *boff, const char *aix, const char *bix,
                  double alpha, const struct rl_value *C, double beta, int BM, int BN, int BK,
                  struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const int WN = BN / 32, T = 32 * (BM / 32) * WN;
	int64_t mt = (m->M + BM - 1) / BM, nt = (m->N + BN - 1) / BN;
	bool bf = dt == RL_DT_BFLOAT16;
	d->need_mma = true;
	cg->need_half = cg->need_bf16 = 1; /* the emulated mma converts either */
	L->grid = m->nb * mt * nt;
	L->block = T;
	L->phased = true;
	cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s, %s on tensor cores: "
	        "%d x %d outputs per block (tile pass), %d warps of 32 x 32 (2 x 4 mma.sync "
	        "m16n8k16, float accumulators), %d deep through shared memory */",
	        (long long)m->M, (long long)m->N, (long long)m->M, (long long)m->K, (long long)m->nb,
	        m->nb == 1 ? "" : "s", bf ? "bfloat16" : "float16", BM, BN, T / 32, BK);
	cg_line(cg, "__shared__ __align__(16) uint16_t As[%d][%d];", BM, BK + 8);
	cg_line(cg, "__shared__ __align__(16) uint16_t Bs[%d][%d];", BN, BK + 8);
	cg_line(cg, "RL_LOCAL(float, acc, [2][4][4]);");
	cg_line(cg, "RL_LOCAL(uint32_t, fa, [2][4]);");
	cg_line(cg, "RL_LOCAL(uint32_t, fb, [4][2]);");
	cg_line(cg, "const int64_t bt = blockIdx.x / %lld;", (long long)(mt * nt));
	cg_line(cg, "const int64_t m0 = blockIdx.x / %lld %% %lld * %d, n0 = blockIdx.x %% %lld * %d;",
	        (long long)nt, (long long)mt, BM, (long long)nt, BN);
	cg_line(cg, "const uint16_t *a = X0 + %s;", aoff);
	cg_line(cg, "const uint16_t *b = X1 + %s;", boff);
	cg_line(cg, "(void)bt;");
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    for (int i = 0; i < 2; i++)");
	cg_line(cg, "        for (int j = 0; j < 4; j++)");
	cg_line(cg, "            for (int r = 0; r < 4; r++)");
	cg_line(cg, "                RL_L(acc)[i][j][r] = 0.0f;");
	cg_line(cg, "}");
	cg_line(cg, "for (int64_t k0 = 0; k0 < %lld; k0 += %d) {", (long long)m->K, BK);
	cg->indent++;
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	const struct mma_operand A = {"As", "a", aix, "ii", "gi", "m0", BM, m->M, !ta};
	const struct mma_operand B = {"Bs", "b", bix, "jj", "gj", "n0", BN, m->N, tb};
	mma_load_tile(cg, &A, m->K, BK, T);
	mma_load_tile(cg, &B, m->K, BK, T);
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "for (int kk = 0; kk < %d; kk += 16) {", BK);
	cg->indent++;
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int w = threadIdx.x / 32, g = threadIdx.x %% 32 / 4, q = threadIdx.x %% 4;");
	cg_line(cg, "const int wm = w / %d * 32, wn = w %% %d * 32;", WN, WN);
	cg_line(cg, "for (int i = 0; i < 2; i++)");
	cg_line(cg, "    for (int h = 0; h < 4; h++) {");
	cg_line(cg, "        const uint16_t *p = &As[wm + i * 16 + g + (h & 1) * 8][kk + 2 * q + (h >> 1) * 8];");
	cg_line(cg, "        RL_L(fa)[i][h] = rl_ld2h(p);");
	cg_line(cg, "    }");
	cg_line(cg, "for (int j = 0; j < 4; j++)");
	cg_line(cg, "    for (int h = 0; h < 2; h++) {");
	cg_line(cg, "        const uint16_t *p = &Bs[wn + j * 8 + g][kk + 2 * q + h * 8];");
	cg_line(cg, "        RL_L(fb)[j][h] = rl_ld2h(p);");
	cg_line(cg, "    }");
	cg_line(cg, "#ifndef RL_CUDA_EMULATE");
	cg_line(cg, "for (int i = 0; i < 2; i++)");
	cg_line(cg, "    for (int j = 0; j < 4; j++)");
	cg_line(cg, "        rl_mma_%s(RL_L(acc)[i][j], RL_L(fa)[i], RL_L(fb)[j]);", bf ? "bf16" : "f16");
	cg_line(cg, "#endif");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "#ifdef RL_CUDA_EMULATE /* the warp-wide mma of every warp, from its lanes' fragments */");
	cg_line(cg, "for (unsigned w = 0; w < blockDim.x / 32; w++)");
	cg_line(cg, "    for (int i = 0; i < 2; i++)");
	cg_line(cg, "        for (int j = 0; j < 4; j++)");
	cg_line(cg, "            rl_emu_mma(&acc_t[w * 32], &fa_t[w * 32], &fb_t[w * 32], i, j, %d);", bf);
	cg_line(cg, "#endif");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int w = threadIdx.x / 32, g = threadIdx.x %% 32 / 4, q = threadIdx.x %% 4;");
	cg_line(cg, "const int wm = w / %d * 32, wn = w %% %d * 32;", WN, WN);
	cg_line(cg, "for (int i = 0; i < 2; i++)");
	cg_line(cg, "    for (int j = 0; j < 4; j++)");
	cg_line(cg, "        for (int r = 0; r < 4; r++) {");
	cg->indent += 3;
	cg_line(cg, "const int64_t gi = m0 + wm + i * 16 + g + (r >> 1) * 8, gj = n0 + wn + j * 8 + 2 * q + (r & 1);");
	cg_line(cg, "if (gi >= %lld || gj >= %lld)", (long long)m->M, (long long)m->N);
	cg_line(cg, "    continue;");
	mm_store(cg, m, dt, alpha, C, beta, "RL_L(acc)[i][j][r]");
	cg->indent -= 3;
	cg_line(cg, "        }");
	cg->indent--;
	cg_line(cg, "}");
}

/* ---- float16 and bfloat16 products on tensor cores (WMMA) ------------------ */

#define CU_WMMA_BM 64 /* block tile: 4 warps, each 32 x 32 = 2 x 2 fragments */
#define CU_WMMA_BK 16

/*
 * The product through 16 x 16 x 16 WMMA fragments (float16 or bfloat16
 * operands, the same code with the element type swapped): A and B tiles staged
 * in shared memory (zero outside the matrix, so any M, N, K), float
 * accumulators kept in fragments across the K loop (RL_LOCAL), the result
 * staged through shared memory so that Gemm's alpha and C, the float16
 * rounding and the fused epilogue run per output as in the other kernels.
 * Every thread of a warp runs the same wmma calls, as they require; the
 * emulation's fragments hold whole tiles, so there each thread computes its
 * warp's tile and the warp's identical stores agree.
 */
static void k_wmma(struct cu *d, const struct mm *m, enum rl_dtype dt, bool ta, bool tb,
                   const char *aoff, const char *boff, const char *aix, const char *bix,
                   double alpha, const struct rl_value *C, double beta, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const int BM = CU_WMMA_BM, BK = CU_WMMA_BK, T = 128;
	int64_t mt = (m->M + BM - 1) / BM, nt = (m->N + BM - 1) / BM;
	bool bf = dt == RL_DT_BFLOAT16;
	const char *ht = bf ? "__nv_bfloat16" : "__half", *hc = bf ? "__ushort_as_bfloat16"
	                                                           : "__ushort_as_half";
	d->need_wmma = true;
	cg->need_half = cg->need_bf16 = 1; /* the emulated fragments convert either */
	L->grid = m->nb * mt * nt;
	L->block = T;
	L->phased = true;
	cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s, %s on tensor cores: "
	        "%d x %d outputs per block (4 warps of 2 x 2 WMMA 16x16x16 fragments, float "
	        "accumulators), %d deep through shared memory */", (long long)m->M, (long long)m->N,
	        (long long)m->M, (long long)m->K, (long long)m->nb, m->nb == 1 ? "" : "s",
	        bf ? "bfloat16" : "float16", BM, BM, BK);
	cg_line(cg, "__shared__ __align__(32) %s As[%d][%d];", ht, BM, BK + 8);
	cg_line(cg, "__shared__ __align__(32) %s Bs[%d][%d];", ht, BK, BM + 8);
	cg_line(cg, "__shared__ __align__(32) float Cs[%d][%d];", BM, BM + 4);
	cg_line(cg, "RL_LOCAL(rl_wmma_acc, acc, [2][2]);");
	cg_line(cg, "const int64_t bt = blockIdx.x / %lld;", (long long)(mt * nt));
	cg_line(cg, "const int64_t m0 = blockIdx.x / %lld %% %lld * %d, n0 = blockIdx.x %% %lld * %d;",
	        (long long)nt, (long long)mt, BM, (long long)nt, BM);
	cg_line(cg, "const uint16_t *a = X0 + %s;", aoff);
	cg_line(cg, "const uint16_t *b = X1 + %s;", boff);
	cg_line(cg, "(void)bt;");
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    for (int i = 0; i < 2; i++)");
	cg_line(cg, "        for (int j = 0; j < 2; j++)");
	cg_line(cg, "            wmma::fill_fragment(RL_L(acc)[i][j], 0.0f);");
	cg_line(cg, "}");
	cg_line(cg, "for (int64_t k0 = 0; k0 < %lld; k0 += %d) {", (long long)m->K, BK);
	cg->indent++;
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "for (int e = threadIdx.x; e < %d; e += %d) {", BM * BK, T);
	if (ta)
		cg_line(cg, "    const int kk = e / %d, ii = e %% %d;", BM, BM);
	else
		cg_line(cg, "    const int ii = e / %d, kk = e %% %d;", BK, BK);
	cg_line(cg, "    const int64_t gi = m0 + ii, gk = k0 + kk;");
	cg_line(cg, "    As[ii][kk] = %s(gi < %lld && gk < %lld ? a[%s] : (uint16_t)0);", hc,
	        (long long)m->M, (long long)m->K, aix);
	cg_line(cg, "}");
	cg_line(cg, "for (int e = threadIdx.x; e < %d; e += %d) {", BM * BK, T);
	if (tb)
		cg_line(cg, "    const int jj = e / %d, kk = e %% %d;", BK, BK);
	else
		cg_line(cg, "    const int kk = e / %d, jj = e %% %d;", BM, BM);
	cg_line(cg, "    const int64_t gj = n0 + jj, gk = k0 + kk;");
	cg_line(cg, "    Bs[kk][jj] = %s(gj < %lld && gk < %lld ? b[%s] : (uint16_t)0);", hc,
	        (long long)m->N, (long long)m->K, bix);
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int w = threadIdx.x / 32, wr = w / 2, wc = w %% 2;");
	cg_line(cg, "wmma::fragment<wmma::matrix_a, 16, 16, 16, %s, wmma::row_major> fa[2];", ht);
	cg_line(cg, "wmma::fragment<wmma::matrix_b, 16, 16, 16, %s, wmma::row_major> fb[2];", ht);
	cg_line(cg, "for (int i = 0; i < 2; i++)");
	cg_line(cg, "    wmma::load_matrix_sync(fa[i], &As[wr * 32 + i * 16][0], %d);", BK + 8);
	cg_line(cg, "for (int j = 0; j < 2; j++)");
	cg_line(cg, "    wmma::load_matrix_sync(fb[j], &Bs[0][wc * 32 + j * 16], %d);", BM + 8);
	cg_line(cg, "for (int i = 0; i < 2; i++)");
	cg_line(cg, "    for (int j = 0; j < 2; j++)");
	cg_line(cg, "        wmma::mma_sync(RL_L(acc)[i][j], fa[i], fb[j], RL_L(acc)[i][j]);");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    const int w = threadIdx.x / 32, wr = w / 2, wc = w %% 2;");
	cg_line(cg, "    for (int i = 0; i < 2; i++)");
	cg_line(cg, "        for (int j = 0; j < 2; j++)");
	cg_line(cg, "            wmma::store_matrix_sync(&Cs[wr * 32 + i * 16][wc * 32 + j * 16], "
	        "RL_L(acc)[i][j], %d, wmma::mem_row_major);", BM + 4);
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "for (int e = threadIdx.x; e < %d; e += %d) {", BM * BM, T);
	cg->indent++;
	cg_line(cg, "const int64_t gi = m0 + e / %d, gj = n0 + e %% %d;", BM, BM);
	cg_line(cg, "if (gi >= %lld || gj >= %lld)", (long long)m->M, (long long)m->N);
	cg_line(cg, "    continue;");
	mm_store(cg, m, dt, alpha, C, beta, "Cs[e / 64][e % 64]");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
}

enum rl_status cu_k_matmul(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *A = cg_in(cg, node, 0), *B = cg_in(cg, node, 1);
	const struct rl_value *Y = cg_out(cg, node, 0), *C = n->op == RL_OP_Gemm ? cg_in(cg, node, 2)
	                                                                       : NULL;
	enum rl_dtype dt = Y->dtype;
	if (!A || !B || A->dtype != dt || B->dtype != dt || !rl_dtype_is_numeric(dt) ||
	    dt == RL_DT_BOOL)
		return cg_error(cg, node, "%s on %s has no CUDA kernel", rl_op_table[n->op].name,
		                rl_dtype_name(dt));
	struct mm m = {0};
	int ar = A->shape.rank, br = B->shape.rank, yr = Y->shape.rank;
	bool ta = false, tb = false;
	double alpha = 1, beta = 1;
	if (n->op == RL_OP_Gemm) {
		ta = rl_node_attr_int(n, "transA", 0) != 0;
		tb = rl_node_attr_int(n, "transB", 0) != 0;
		alpha = rl_node_attr_float(n, "alpha", 1.0);
		beta = rl_node_attr_float(n, "beta", 1.0);
		if (ar != 2 || br != 2)
			return cg_error(cg, node, "Gemm wants 2-D operands");
		m.M = A->shape.d[ta ? 1 : 0].v;
		m.K = A->shape.d[ta ? 0 : 1].v;
		m.N = B->shape.d[tb ? 0 : 1].v;
		m.nb = 1;
		if (C && C->dtype != dt)
			return cg_error(cg, node, "Gemm with C of another dtype has no CUDA kernel");
	} else {
		if (ar < 1 || br < 1)
			return cg_error(cg, node, "MatMul of a scalar");
		m.M = ar >= 2 ? A->shape.d[ar - 2].v : 1;
		m.K = A->shape.d[ar - 1].v;
		m.N = br >= 2 ? B->shape.d[br - 1].v : 1;
		int64_t ne = rl_shape_numel(&Y->shape);
		m.nb = m.M * m.N > 0 ? ne / (m.M * m.N) : 0;
	}
	const char *ct = cg_comptype(dt);
	size_t es = strcmp(ct, "double") == 0 || strcmp(ct, "int64_t") == 0 ||
	            strcmp(ct, "uint64_t") == 0 ? 8 : 4;
	mm_schedule(&n->tile, &m, es);
	if (rl_shape_numel(&Y->shape) == 0)
		return RL_OK;
	int64_t mt = (m.M + m.mc - 1) / m.mc, nt = (m.N + m.nc - 1) / m.nc;
	int64_t tn = m.nc / m.nr, threads = (m.mc / m.mr) * tn;
	L->grid = m.nb * mt * nt;
	L->block = (int)threads;
	L->phased = true;
	/* operand indexing */
	char aoff[800] = "0", boff[800] = "0", aix[160], bix[160];
	if (n->op == RL_OP_MatMul) {
		int yb = yr - (ar >= 2) - (br >= 2);
		batch_off(&Y->shape, yb, &A->shape, ar >= 2 ? ar - 2 : 0, m.M * m.K, aoff, sizeof(aoff));
		batch_off(&Y->shape, yb, &B->shape, br >= 2 ? br - 2 : 0, m.K * m.N, boff, sizeof(boff));
	}
	if (ta)
		snprintf(aix, sizeof(aix), "gk * %lld + gi", (long long)m.M);
	else
		snprintf(aix, sizeof(aix), "gi * %lld + gk", (long long)m.K);
	if (tb)
		snprintf(bix, sizeof(bix), "gj * %lld + gk", (long long)m.K);
	else
		snprintf(bix, sizeof(bix), "gk * %lld + gj", (long long)m.N);

	if (d->cublas)
		blas_route(d, n, A, B, &m, dt, ta, tb, alpha, C, beta);
	if (m.M <= CU_GEMV_MAX_M) {
		k_gemv(cg, &m, dt, tb, aoff, boff, aix, bix, alpha, C, beta, L);
		return RL_OK;
	}
	if (dt == RL_DT_FLOAT16 || dt == RL_DT_BFLOAT16) {
		/* every GPU profile shipped has float16 and bfloat16 tensor cores (sm_80 on):
		 * mma.sync on the tile pass's block tile, else WMMA on 64 x 64 */
		int bm, bn, bk;
		if (mma_tile(&n->tile, &bm, &bn, &bk))
			k_mma(d, &m, dt, ta, tb, aoff, boff, aix, bix, alpha, C, beta, bm, bn, bk, L);
		else
			k_wmma(d, &m, dt, ta, tb, aoff, boff, aix, bix, alpha, C, beta, L);
		return RL_OK;
	}
	cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s; %s: %lld x %lld outputs per "
	        "block in %lld-deep steps through shared memory, %lld x %lld per thread */",
	        (long long)m.M, (long long)m.N, (long long)m.M, (long long)m.K, (long long)m.nb,
	        m.nb == 1 ? "" : "s", m.why, (long long)m.mc, (long long)m.nc, (long long)m.kc,
	        (long long)m.mr, (long long)m.nr);
	cg_line(cg, "__shared__ %s As[%lld][%lld];", ct, (long long)m.kc, (long long)m.mc);
	cg_line(cg, "__shared__ %s Bs[%lld][%lld];", ct, (long long)m.kc, (long long)m.nc);
	cg_line(cg, "RL_LOCAL(%s, acc, [%lld][%lld]);", ct, (long long)m.mr, (long long)m.nr);
	cg_line(cg, "const int64_t bt = blockIdx.x / %lld;", (long long)(mt * nt));
	cg_line(cg, "const int64_t m0 = blockIdx.x / %lld %% %lld * %lld, n0 = blockIdx.x %% %lld * %lld;",
	        (long long)nt, (long long)mt, (long long)m.mc, (long long)nt, (long long)m.nc);
	cg_line(cg, "const %s *a = X0 + %s;", cg_ctype(dt), aoff);
	cg_line(cg, "const %s *b = X1 + %s;", cg_ctype(dt), boff);
	cg_line(cg, "(void)bt;");
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    for (int i = 0; i < %lld; i++)", (long long)m.mr);
	cg_line(cg, "        for (int j = 0; j < %lld; j++)", (long long)m.nr);
	cg_line(cg, "            RL_L(acc)[i][j] = 0;");
	cg_line(cg, "}");
	cg_line(cg, "for (int64_t k0 = 0; k0 < %lld; k0 += %lld) {", (long long)m.K, (long long)m.kc);
	cg->indent++;
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	/* consecutive threads read consecutive addresses of the stored layout */
	cg_line(cg, "for (int e = threadIdx.x; e < %lld; e += %lld) {", (long long)(m.kc * m.mc),
	        (long long)threads);
	if (ta)
		cg_line(cg, "    const int kk = e / %lld, ii = e %% %lld;", (long long)m.mc, (long long)m.mc);
	else
		cg_line(cg, "    const int ii = e / %lld, kk = e %% %lld;", (long long)m.kc, (long long)m.kc);
	cg_line(cg, "    const int64_t gi = m0 + ii, gk = k0 + kk;");
	char src[256];
	snprintf(src, sizeof(src), "a[%s]", aix);
	cg_line(cg, "    As[kk][ii] = gi < %lld && gk < %lld ? %s : (%s)0;", (long long)m.M,
	        (long long)m.K, cg_load(cg, dt, src), ct);
	cg_line(cg, "}");
	cg_line(cg, "for (int e = threadIdx.x; e < %lld; e += %lld) {", (long long)(m.kc * m.nc),
	        (long long)threads);
	if (tb)
		cg_line(cg, "    const int jj = e / %lld, kk = e %% %lld;", (long long)m.kc, (long long)m.kc);
	else
		cg_line(cg, "    const int kk = e / %lld, jj = e %% %lld;", (long long)m.nc, (long long)m.nc);
	cg_line(cg, "    const int64_t gj = n0 + jj, gk = k0 + kk;");
	snprintf(src, sizeof(src), "b[%s]", bix);
	cg_line(cg, "    Bs[kk][jj] = gj < %lld && gk < %lld ? %s : (%s)0;", (long long)m.N,
	        (long long)m.K, cg_load(cg, dt, src), ct);
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int ty = threadIdx.x / %lld, tx = threadIdx.x %% %lld;", (long long)tn,
	        (long long)tn);
	cg_line(cg, "for (int kk = 0; kk < %lld; kk++) {", (long long)m.kc);
	cg_line(cg, "    %s ra[%lld], rb[%lld];", ct, (long long)m.mr, (long long)m.nr);
	cg_line(cg, "    for (int i = 0; i < %lld; i++)", (long long)m.mr);
	cg_line(cg, "        ra[i] = As[kk][ty * %lld + i];", (long long)m.mr);
	cg_line(cg, "    for (int j = 0; j < %lld; j++)", (long long)m.nr);
	cg_line(cg, "        rb[j] = Bs[kk][tx + j * %lld];", (long long)tn);
	cg_line(cg, "    for (int i = 0; i < %lld; i++)", (long long)m.mr);
	cg_line(cg, "        for (int j = 0; j < %lld; j++)", (long long)m.nr);
	cg_line(cg, "            RL_L(acc)[i][j] += ra[i] * rb[j];");
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg->indent--;
	cg_line(cg, "}");
	/* store, with Gemm's alpha and C, then the fused epilogue per output */
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int ty = threadIdx.x / %lld, tx = threadIdx.x %% %lld;", (long long)tn,
	        (long long)tn);
	cg_line(cg, "for (int i = 0; i < %lld; i++) {", (long long)m.mr);
	cg->indent++;
	cg_line(cg, "const int64_t gi = m0 + ty * %lld + i;", (long long)m.mr);
	cg_line(cg, "for (int j = 0; j < %lld; j++) {", (long long)m.nr);
	cg->indent++;
	cg_line(cg, "const int64_t gj = n0 + tx + j * %lld;", (long long)tn);
	cg_line(cg, "if (gi >= %lld || gj >= %lld)", (long long)m.M, (long long)m.N);
	cg_line(cg, "    continue;");
	mm_store(cg, &m, dt, alpha, C, beta, "RL_L(acc)[i][j]");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- Conv: direct, one thread per output element ------------------------- */

enum rl_status cu_k_conv(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *W = cg_in(cg, node, 1),
	                      *B = cg_in(cg, node, 2), *Y = cg_out(cg, node, 0);
	enum rl_dtype dt = Y->dtype;
	int nsp = X->shape.rank - 2;
	if (!rl_dtype_is_float(dt) || X->dtype != dt || W->dtype != dt || (B && B->dtype != dt) ||
	    nsp < 1 || nsp > 3 || W->shape.rank != nsp + 2)
		return cg_error(cg, node, "Conv on %s with %d spatial axes has no CUDA kernel",
		                rl_dtype_name(dt), nsp);
	struct rl_window w;
	enum rl_status st = rl_window_read(d->g, node, nsp, &W->shape, &w);
	if (st != RL_OK)
		return st;
	int64_t group = rl_node_attr_int(n, "group", 1);
	int64_t C = X->shape.d[1].v, M = Y->shape.d[1].v, CG = W->shape.d[1].v;
	if (group < 1 || M % group || CG * group != C)
		return cg_error(cg, node, "Conv with group %lld does not divide its channels",
		                (long long)group);
	int64_t in[3], out[3], pb[3], is = 1, ks = 1;
	for (int i = 0; i < nsp; i++) {
		in[i] = X->shape.d[2 + i].v;
		out[i] = Y->shape.d[2 + i].v;
		is *= in[i];
		ks *= w.k[i];
		int64_t total = (out[i] - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - in[i];
		if (total < 0)
			total = 0;
		if (w.autopad == RL_PAD_NOTSET)
			pb[i] = w.pb[i];
		else if (w.autopad == RL_PAD_SAME_UPPER)
			pb[i] = total / 2;
		else if (w.autopad == RL_PAD_SAME_LOWER)
			pb[i] = total - total / 2;
		else
			pb[i] = 0;
	}
	int64_t ne = rl_shape_numel(&Y->shape);
	cu_grid_launch(L, ne);
	if (ne == 0)
		return RL_OK;
	const char *ct = cg_comptype(dt), *sp = "abc";
	cg_line(cg, "/* direct convolution: %lld x %lld channels per group (%lld groups), "
	        "%lld-tap window */", (long long)CG, (long long)(M / group), (long long)group,
	        (long long)ks);
	cu_grid_outputs(cg, ne, nsp, out);
	cg_line(cg, "const int64_t m = r %% %lld, nb = r / %lld;", (long long)M, (long long)M);
	char src[200];
	if (B)
		cg_line(cg, "%s acc = %s;", ct, cg_load(cg, dt, "X2[m]"));
	else
		cg_line(cg, "%s acc = 0;", ct);
	cg_line(cg, "for (int64_t c = 0; c < %lld; c++) {", (long long)CG);
	cg->indent++;
	cg_line(cg, "const %s *xc = X0 + (nb * %lld + m / %lld * %lld + c) * %lld;", cg_ctype(dt),
	        (long long)C, (long long)(M / group), (long long)CG, (long long)is);
	cg_line(cg, "const %s *wc = X1 + (m * %lld + c) * %lld;", cg_ctype(dt), (long long)CG,
	        (long long)ks);
	char xi[200] = "", wi[200] = "";
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (int64_t k%c = 0; k%c < %lld; k%c++) {", sp[i], sp[i],
		        (long long)w.k[i], sp[i]);
		cg->indent++;
		cg_line(cg, "const int64_t i%c = o%c * %lld - %lld + k%c * %lld;", sp[i], sp[i],
		        (long long)w.s[i], (long long)pb[i], sp[i], (long long)w.d[i]);
		cg_line(cg, "if (i%c < 0 || i%c >= %lld)", sp[i], sp[i], (long long)in[i]);
		cg_line(cg, "    continue;");
		size_t l = strlen(xi), lw = strlen(wi);
		int64_t st_in = 1, st_k = 1;
		for (int j = i + 1; j < nsp; j++)
			st_in *= in[j], st_k *= w.k[j];
		snprintf(xi + l, sizeof(xi) - l, "%si%c * %lld", l ? " + " : "", sp[i], (long long)st_in);
		snprintf(wi + lw, sizeof(wi) - lw, "%sk%c * %lld", lw ? " + " : "", sp[i], (long long)st_k);
	}
	char a[256], b[256];
	snprintf(src, sizeof(src), "xc[%s]", xi);
	snprintf(a, sizeof(a), "%s", cg_load(cg, dt, src));
	snprintf(src, sizeof(src), "wc[%s]", wi);
	snprintf(b, sizeof(b), "%s", cg_load(cg, dt, src));
	cg_line(cg, "acc += %s * %s;", a, b);
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "Y0[o] = %s;", cg_store(cg, dt, "acc"));
	cg_epilogue(cg, "Y0 + o", "o", 1, 1);
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}


/* ---- QuantMatMul: int8/int4 weights dequantized in registers --------------- */

#define CU_Q_WARPS 8 /* output channels per block: one warp each */
#define CU_Q_ROWS 4  /* rows of A per block (more rows: more blocks, codes re-read from L2) */

/* The codes of one 32-bit word `w` (lane unit `un`, first code k0) times
 * rows r of A, into acc[r], scaled once per word. */
static void q_word(struct rl_cgen *cg, int bits, int64_t K, bool vec, bool guard)
{
	int cpw = bits == 8 ? 4 : 8;
	cg_line(cg, "float qv[%d];", cpw);
	if (bits == 8) {
		cg_line(cg, "for (int p = 0; p < 4; p++)");
		cg_line(cg, "    qv[p] = (float)(int8_t)(uint8_t)(w >> (8 * p));");
	} else {
		cg_line(cg, "for (int p = 0; p < 4; p++) {");
		cg_line(cg, "    qv[p] = (float)((w >> (8 * p)) & 15u) - zf;");
		cg_line(cg, "    qv[p + 4] = (float)((w >> (8 * p + 4)) & 15u) - zf;");
		cg_line(cg, "}");
	}
	cg_line(cg, "for (int r = 0; r < %d; r++) {", CU_Q_ROWS);
	cg->indent++;
	cg_line(cg, "if (m0 + r >= mrows)");
	cg_line(cg, "    break;");
	cg_line(cg, "const float *x = X0 + (m0 + r) * %lldll + k0;", (long long)K);
	cg_line(cg, "float sum = 0;");
	if (guard) {
		cg_line(cg, "for (int p = 0; p < %d; p++)", cpw);
		cg_line(cg, "    if (k0 + p < %lldll)", (long long)K);
		cg_line(cg, "        sum += x[p] * qv[p];");
	} else if (vec) { /* rows and k0 are multiples of 4 floats: 128-bit loads */
		for (int h = 0; h < cpw / 4; h++) {
			cg_line(cg, "const float4 x%d = rl_ld16f(x + %d);", h, 4 * h);
			cg_line(cg, "sum += x%d.x * qv[%d] + x%d.y * qv[%d] + x%d.z * qv[%d] + x%d.w * qv[%d];",
			        h, 4 * h, h, 4 * h + 1, h, 4 * h + 2, h, 4 * h + 3);
		}
	} else {
		cg_line(cg, "for (int p = 0; p < %d; p++)", cpw);
		cg_line(cg, "    sum += x[p] * qv[p];");
	}
	cg_line(cg, "acc[r] += sc * sum;");
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * Y[M, N] = A[M, K] W + bias with W packed as ir/qweights.h describes: one
 * warp per output channel, its 32 threads reading the channel's codes as
 * 128-bit loads (consecutive threads, consecutive 16 bytes: coalesced), each
 * 32-bit word holding 4 int8 or 8 int4 codes of one lane unit (one block
 * scale), converted to float in registers and multiplied with the matching
 * activations (128-bit loads where K is a multiple of 4), float
 * accumulation, the word's sum scaled once. The warp's 32 partials are added
 * in shared memory; lane 0 adds the bias and stores (with the fused
 * epilogue). Up to CU_Q_ROWS rows of A per block share each code load
 * (batch-1 decode reads every code exactly once); more rows take more
 * blocks, which re-read the codes from L2.
 */
enum rl_status cu_k_qmatmul(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_graph *g = d->g;
	const struct rl_node *n = &g->nodes[node];
	int64_t K = rl_node_attr_int(n, "K", 0), N = rl_node_attr_int(n, "N", 0);
	int64_t bits = rl_node_attr_int(n, "bits", 0), bs = rl_node_attr_int(n, "block_size", 0);
	const struct rl_value *A = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	if (K <= 0 || N <= 0 || (bits != 8 && bits != 4) || bs <= 0 || !A || !Y ||
	    A->dtype != RL_DT_FLOAT || Y->dtype != RL_DT_FLOAT)
		return cg_error(cg, node, "QuantMatMul with K=%lld N=%lld bits=%lld on %s has no "
		                "CUDA kernel", (long long)K, (long long)N, (long long)bits,
		                A ? rl_dtype_name(A->dtype) : "?");
	int64_t M = rl_shape_numel(&Y->shape) / N;
	int64_t nb = (K + bs - 1) / bs, u = rl_qweight_unit((int)bits, K, bs);
	int64_t rowbytes = rl_qweight_rowbytes((int)bits, K, bs);
	int64_t units = rowbytes * 8 / bits / u, spw = u * bits / 32; /* words per lane per group */
	int cpw = bits == 8 ? 4 : 8;
	bool zp = rl_node_in(n, 3) != RL_NONE, bias = rl_node_in(n, 4) != RL_NONE;
	if (rowbytes % 16 || u % cpw)
		return cg_error(cg, node, "QuantMatMul with a %lld-byte row has no CUDA kernel",
		                (long long)rowbytes);
	if (M <= 0)
		return RL_OK;
	int64_t ng = (N + CU_Q_WARPS - 1) / CU_Q_WARPS, mch = (M + CU_Q_ROWS - 1) / CU_Q_ROWS;
	const int T = 32 * CU_Q_WARPS;
	L->grid = ng * mch;
	L->block = T;
	L->phased = true;
	bool vec = K % 4 == 0; /* rows of A 16-byte aligned (the arenas align to 256) */
	cg_line(cg, "/* Y[%lld x %lld] = A[%lld x %lld] W: int%lld weights, %s, %lld codes per "
	        "scale, %lld bytes of codes per channel, dequantized in registers, float "
	        "accumulation; one warp per output channel (%d per block), %d rows of A per "
	        "block */", (long long)M, (long long)N, (long long)M, (long long)K, (long long)bits,
	        bits == 8 ? (nb == 1 ? "one scale per output channel" : "symmetric blocks")
	                  : (zp ? "a zero point per block" : "symmetric (zero point 8)"),
	        (long long)(bits == 8 && nb == 1 ? K : bs), (long long)rowbytes, CU_Q_WARPS,
	        CU_Q_ROWS);
	cg_line(cg, "__shared__ float red[%d][%d];", CU_Q_ROWS, T);
	cg_line(cg, "const int64_t m0 = (int64_t)(blockIdx.x / %lldu) * %d, mrows = %lldll;",
	        (long long)ng, CU_Q_ROWS, (long long)M);
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int64_t n = (int64_t)(blockIdx.x %% %lldu) * %d + threadIdx.x / 32;",
	        (long long)ng, CU_Q_WARPS);
	cg_line(cg, "float acc[%d];", CU_Q_ROWS);
	cg_line(cg, "for (int r = 0; r < %d; r++)", CU_Q_ROWS);
	cg_line(cg, "    acc[r] = 0;");
	cg_line(cg, "if (n < %lldll) {", (long long)N);
	cg->indent++;
	cg_line(cg, "const uint8_t *q = X1 + n * %lldll;", (long long)rowbytes);
	bool hs = g->values[rl_node_in(n, 2)].dtype == RL_DT_FLOAT16; /* float16 scales */
	cg_line(cg, "const %s *s = X2 + n * %lldll;", hs ? "uint16_t" : "float", (long long)nb);
	if (zp)
		cg_line(cg, "const uint8_t *z = X3 + n * %lldll;", (long long)nb);
	cg_line(cg, "for (int64_t c = threadIdx.x %% 32; c < %lldll; c += 32) {",
	        (long long)(rowbytes / 16));
	cg->indent++;
	cg_line(cg, "const uint4 v = rl_ld16u(q + c * 16);");
	cg_line(cg, "const uint32_t w4[4] = {v.x, v.y, v.z, v.w};");
	cg_line(cg, "for (int e = 0; e < 4; e++) {");
	cg->indent++;
	/* word wi of the row: group g of 16 lane units (fewer in the last), step
	 * t of lane i holds codes t * cpw .. of unit 16 g + i */
	cg_line(cg, "const int64_t wi = c * 4 + e, g = wi / %lld, r = wi %% %lld;",
	        (long long)(16 * spw), (long long)(16 * spw));
	cg_line(cg, "const int64_t lanes = %lldll - 16 * g < 16 ? %lldll - 16 * g : 16;",
	        (long long)units, (long long)units);
	cg_line(cg, "const int64_t un = g * 16 + r %% lanes, k0 = un * %lld + r / lanes * %d;",
	        (long long)u, cpw);
	cg_line(cg, "if (k0 >= %lldll)", (long long)K);
	cg_line(cg, "    continue;");
	cg_line(cg, "const int64_t blk = un * %lld / %lld;", (long long)u, (long long)bs);
	cg_line(cg, "const float sc = %s;", hs ? cg_load(cg, RL_DT_FLOAT16, "s[blk]") : "s[blk]");
	if (bits == 4)
		cg_line(cg, "const float zf = %s;", zp ? "(float)z[blk]" : "8.0f");
	else
		cg_line(cg, "(void)blk;");
	cg_line(cg, "const uint32_t w = w4[e];");
	if (K % cpw) {
		cg_line(cg, "if (k0 + %d > %lldll) {", cpw, (long long)K);
		cg->indent++;
		q_word(cg, (int)bits, K, false, true);
		cg->indent--;
		cg_line(cg, "} else {");
		cg->indent++;
		q_word(cg, (int)bits, K, vec, false);
		cg->indent--;
		cg_line(cg, "}");
	} else {
		q_word(cg, (int)bits, K, vec, false);
	}
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int r = 0; r < %d; r++)", CU_Q_ROWS);
	cg_line(cg, "    red[r][threadIdx.x] = acc[r];");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "for (int h = 16; h > 0; h >>= 1) { /* within each warp */");
	cg_line(cg, "    RL_THREADS {");
	cg_line(cg, "        if ((int)(threadIdx.x %% 32) < h)");
	cg_line(cg, "            for (int r = 0; r < %d; r++)", CU_Q_ROWS);
	cg_line(cg, "                red[r][threadIdx.x] += red[r][threadIdx.x + h];");
	cg_line(cg, "    }");
	cg_line(cg, "    RL_SYNC");
	cg_line(cg, "}");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int64_t gj = (int64_t)(blockIdx.x %% %lldu) * %d + threadIdx.x / 32;",
	        (long long)ng, CU_Q_WARPS);
	cg_line(cg, "if (threadIdx.x %% 32 == 0 && gj < %lldll) {", (long long)N);
	cg->indent++;
	cg_line(cg, "for (int r = 0; r < %d && m0 + r < mrows; r++) {", CU_Q_ROWS);
	cg->indent++;
	cg_line(cg, "const size_t o = (size_t)((m0 + r) * %lldll + gj);", (long long)N);
	cg_line(cg, "Y0[o] = red[r][threadIdx.x]%s;", bias ? " + X4[gj]" : "");
	cg_epilogue(cg, "Y0 + o", "o", 1, N);
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- MaxPool / AveragePool: one thread per output element ---------------- */

/*
 * A gather over the window's taps x = o * s + k * d - pb per output element,
 * the rules of the C backend (emit_pool.c): MaxPool keeps the first largest
 * value; AveragePool divides by the taps inside the input, or with
 * count_include_pad by the taps inside the padded input [-pb, in + pe).
 * Float types without MaxPool's Indices output; false (nothing written) for
 * any other form, which then runs the C loop nest.
 */
bool cu_k_pool(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	bool is_max = n->op == RL_OP_MaxPool;
	if (!X || !Y || !rl_dtype_is_float(X->dtype) || Y->dtype != X->dtype ||
	    (n->nout > 1 && n->out[1] != RL_NONE) || (!is_max && n->op != RL_OP_AveragePool))
		return false;
	int nsp = X->shape.rank - 2;
	if (nsp < 1 || nsp > 3 || Y->shape.rank != X->shape.rank)
		return false;
	struct rl_window w;
	if (rl_window_read(d->g, node, nsp, NULL, &w) != RL_OK) {
		d->g->err[0] = 0;
		return false;
	}
	bool incl = !is_max && rl_node_attr_int(n, "count_include_pad", 0) != 0;
	int64_t in[3], out[3], pb[3], pe[3], is = 1;
	for (int i = 0; i < nsp; i++) {
		in[i] = X->shape.d[2 + i].v;
		out[i] = Y->shape.d[2 + i].v;
		is *= in[i];
		if (w.k[i] <= 0)
			return false;
		int64_t total = (out[i] - 1) * w.s[i] + (w.k[i] - 1) * w.d[i] + 1 - in[i];
		if (total < 0)
			total = 0;
		if (w.autopad == RL_PAD_NOTSET)
			pb[i] = w.pb[i], pe[i] = w.pe[i];
		else if (w.autopad == RL_PAD_SAME_UPPER)
			pb[i] = total / 2, pe[i] = total - pb[i];
		else if (w.autopad == RL_PAD_SAME_LOWER)
			pe[i] = total / 2, pb[i] = total - pe[i];
		else
			pb[i] = pe[i] = 0;
	}
	int64_t ne = rl_shape_numel(&Y->shape);
	cu_grid_launch(L, ne);
	if (ne == 0)
		return true;
	enum rl_dtype dt = X->dtype;
	const char *acc = dt == RL_DT_DOUBLE ? "double" : "float", *sp = "abc";
	cg_line(cg, "/* %s: one thread per output, a gather over the window's taps%s */",
	        rl_op_table[n->op].name, is_max ? "" : incl ? "; divided by the taps inside the "
	        "padded input" : "; divided by the taps inside the input");
	cu_grid_outputs(cg, ne, nsp, out);
	cg_line(cg, "const %s *xc = X0 + r * %lld;", cg_ctype(dt), (long long)is);
	cg_line(cg, "%s %s = 0;", acc, is_max ? "m" : "s");
	cg_line(cg, "int64_t cnt = 0;");
	char xi[200] = "";
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (int64_t k%c = 0; k%c < %lld; k%c++) {", sp[i], sp[i],
		        (long long)w.k[i], sp[i]);
		cg->indent++;
		cg_line(cg, "const int64_t i%c = o%c * %lld + k%c * %lld - %lld;", sp[i], sp[i],
		        (long long)w.s[i], sp[i], (long long)w.d[i], (long long)pb[i]);
		if (incl) {
			cg_line(cg, "if (i%c >= %lld)", sp[i], (long long)(in[i] + pe[i]));
			cg_line(cg, "    continue;");
		} else {
			cg_line(cg, "if (i%c < 0 || i%c >= %lld)", sp[i], sp[i], (long long)in[i]);
			cg_line(cg, "    continue;");
		}
		int64_t st = 1;
		for (int j = i + 1; j < nsp; j++)
			st *= in[j];
		size_t l = strlen(xi);
		snprintf(xi + l, sizeof(xi) - l, "%si%c * %lld", l ? " + " : "", sp[i], (long long)st);
	}
	if (incl) { /* a tap in the padding counts but reads nothing */
		char cond[200] = "";
		for (int i = 0; i < nsp; i++) {
			size_t l = strlen(cond);
			snprintf(cond + l, sizeof(cond) - l, "%si%c < 0 || i%c >= %lld", l ? " || " : "",
			         sp[i], sp[i], (long long)in[i]);
		}
		cg_line(cg, "cnt++;");
		cg_line(cg, "if (%s)", cond);
		cg_line(cg, "    continue;");
	}
	char src[260];
	snprintf(src, sizeof(src), "xc[%s]", xi);
	cg_line(cg, "const %s v = %s;", acc, cg_load(cg, dt, src));
	if (is_max) { /* the first tap, then only larger ones: a NaN tap after the first is skipped */
		cg_line(cg, "if (cnt == 0 || v > m)");
		cg_line(cg, "    m = v;");
		cg_line(cg, "cnt++;");
	} else {
		cg_line(cg, "s += v;");
		if (!incl)
			cg_line(cg, "cnt++;");
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	cg_line(cg, "Y0[o] = %s;", cg_store(cg, dt, is_max ? "cnt ? m : 0" : "cnt ? s / cnt : 0"));
	cg->indent--;
	cg_line(cg, "}");
	return true;
}
