/*
 * emit_cuda_mm.c - the CUDA backend's products: MatMul and Gemm as a block
 * tile through shared memory with a register tile per thread (the tile
 * pass's GPU schedule, else defaults), products of up to four rows as a GEMV
 * that streams B once (the batch-1 decode case), float16/bfloat16 on tensor
 * cores (mma.sync m16n8k16 fed by cp.async stages and ldmatrix, a simpler
 * mma.sync kernel for other shapes, or WMMA), the routing of plain products to cuBLAS
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
#define CU_GEMV_THREADS 256

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

/* Opens one trip of a GEMV's K loop: u steps of `stride` from k0, the loads
 * of B first (bk[s][0..V), a float4 from v4addr when V is 4, else the
 * element bv, each at gk = k0 + s stride); the caller writes the FMAs and
 * closes the loop. */
static void gemv_trip(struct rl_cgen *cg, const char *ct, int u, int V, int stride, long long K,
                      const char *v4addr, const char *bv)
{
	cg_line(cg, "for (; k0 + %d < %lldll; k0 += %d) {", (u - 1) * stride, K, u * stride);
	cg->indent++;
	cg_line(cg, "%s bk[%d][%d];", ct, u, V);
	cg_line(cg, "for (int s = 0; s < %d; s++) {", u);
	cg->indent++;
	cg_line(cg, "const int64_t gk = k0 + s * %d;", stride);
	if (V == 4) {
		cg_line(cg, "const float4 v4 = rl_ld16f(%s);", v4addr);
		cg_line(cg, "bk[s][0] = v4.x, bk[s][1] = v4.y, bk[s][2] = v4.z, bk[s][3] = v4.w;");
	} else {
		cg_line(cg, "bk[s][0] = %s;", bv);
	}
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * The GEMV reads every element of B once, and what bounds it is how many
 * bytes of B are in flight: a block of CU_GEMV_THREADS threads, loads U = 8
 * deep per thread (the loop unrolled by hand, loads first: gemv_trip),
 * 16-byte loads for float32 where the stored rows allow.
 *
 * B stored K x N (b(k,j) = B[k N + j]): a block owns CB consecutive columns
 * (TX threads across them, V each: one 16-byte float4, else one element)
 * and its TY = threads / TX rows of threads split K (thread row ty takes
 * k = ty, ty + TY, ...), so a warp reads whole 128-byte row segments and a
 * matrix of 8192 columns gives 256 blocks, not the 64 of one thread per
 * column. The TY partials of each column are added in order from shared
 * memory by one thread.
 * B stored N x K (Gemm transB, the nn.Linear layout): one warp per column,
 * its lanes reading consecutive 16-byte runs of the column's K (float32, K a
 * multiple of 4; else one element each), the 32 lane partials added in
 * order from shared memory. Up to CU_GEMV_MAX_M rows of A share each load
 * of B.
 */
static void k_gemv(struct rl_cgen *cg, const struct mm *m, enum rl_dtype dt, bool ta, bool tb,
                   const char *aoff, const char *boff, const char *aix, const char *bix,
                   double alpha, const struct rl_value *C, double beta, struct launch *L)
{
	const char *ct = cg_comptype(dt);
	const int T = CU_GEMV_THREADS, U = 8; /* threads per block, loads in flight per thread */
	long long M = m->M, N = m->N, K = m->K;
	char src[256], av[300], bv[300];
	snprintf(src, sizeof(src), "a[%s]", aix);
	snprintf(av, sizeof(av), "%s", cg_load(cg, dt, src));
	snprintf(src, sizeof(src), "b[%s]", bix);
	snprintf(bv, sizeof(bv), "%s", cg_load(cg, dt, src));
	L->block = T;
	L->phased = true;
	if (!tb) {
		const int V = dt == RL_DT_FLOAT && N % 4 == 0 ? 4 : 1, TX = V == 4 ? 8 : 32, TY = T / TX;
		const long long CB = (long long)TX * V, cb = (N + CB - 1) / CB;
		L->grid = m->nb * cb;
		cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s: a GEMV streaming B once; "
		        "%lld columns per block (%d threads x %s), K split over %d thread rows, %d loads "
		        "in flight per thread */", M, N, M, K, (long long)m->nb, m->nb == 1 ? "" : "s",
		        CB, TX, V == 4 ? "a float4" : "one element", TY, U);
		cg_line(cg, "__shared__ %s red[%lld][%d][%lld];", ct, M, TY, CB);
		cg_line(cg, "const int64_t bt = blockIdx.x / %lld, j0 = blockIdx.x %% %lld * %lld;", cb, cb,
		        CB);
		cg_line(cg, "const %s *a = X0 + %s;", cg_ctype(dt), aoff);
		cg_line(cg, "const %s *b = X1 + %s;", cg_ctype(dt), boff);
		cg_line(cg, "(void)bt;");
		cg_line(cg, "RL_THREADS {");
		cg->indent++;
		cg_line(cg, "const int tx = threadIdx.x %% %d, ty = threadIdx.x / %d;", TX, TX);
		cg_line(cg, "const int64_t gj = j0 + tx * %d;", V);
		cg_line(cg, "%s acc[%lld][%d];", ct, M, V);
		cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", M);
		cg_line(cg, "    for (int v = 0; v < %d; v++)", V);
		cg_line(cg, "        acc[gi][v] = 0;");
		cg_line(cg, "if (gj < %lldll) {", N);
		cg->indent++;
		/* U steps of the K loop per trip: the loads of B first, then the FMAs */
		for (int pass = 0; pass < 2; pass++) {
			int u = pass == 0 ? U : 1;
			if (pass == 0)
				cg_line(cg, "int64_t k0 = ty;");
			snprintf(src, sizeof(src), "b + gk * %lldll + gj", N);
			gemv_trip(cg, ct, u, V, TY, K, src, bv);
			cg_line(cg, "for (int s = 0; s < %d; s++) {", u);
			cg->indent++;
			cg_line(cg, "const int64_t gk = k0 + s * %d;", TY);
			cg_line(cg, "for (int64_t gi = 0; gi < %lld; gi++) {", M);
			cg_line(cg, "    const %s ak = %s;", ct, av);
			cg_line(cg, "    for (int v = 0; v < %d; v++)", V);
			cg_line(cg, "        acc[gi][v] += ak * bk[s][v];");
			cg_line(cg, "}");
			cg->indent--;
			cg_line(cg, "}");
			cg->indent--;
			cg_line(cg, "}");
		}
		cg->indent--;
		cg_line(cg, "}");
		cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", M);
		cg_line(cg, "    for (int v = 0; v < %d; v++)", V);
		cg_line(cg, "        red[gi][ty][tx * %d + v] = acc[gi][v];", V);
		cg->indent--;
		cg_line(cg, "}");
		cg_line(cg, "RL_SYNC");
		cg_line(cg, "RL_THREADS {");
		cg->indent++;
		cg_line(cg, "for (int e = threadIdx.x; e < %lld; e += %d) {", M * CB, T);
		cg->indent++;
		cg_line(cg, "const int64_t gi = e / %lld, gj = j0 + e %% %lld;", CB, CB);
		cg_line(cg, "if (gj >= %lldll)", N);
		cg_line(cg, "    continue;");
		cg_line(cg, "%s s = 0;", ct);
		cg_line(cg, "for (int y = 0; y < %d; y++)", TY);
		cg_line(cg, "    s += red[gi][y][e %% %lld];", CB);
		mm_store(cg, m, dt, alpha, C, beta, "s");
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		return;
	}
	const int V = dt == RL_DT_FLOAT && K % 4 == 0 ? 4 : 1, W = T / 32;
	const bool va = V == 4 && !ta; /* rows of A along k too: float4 loads of A */
	const long long cw = (N + W - 1) / W;
	L->grid = m->nb * cw;
	cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s: a GEMV streaming B once "
	        "(B stored N x K); one warp per column (%d per block), its lanes reading %s along K, "
	        "%d loads in flight per thread */", M, N, M, K, (long long)m->nb,
	        m->nb == 1 ? "" : "s", W, V == 4 ? "float4 runs" : "one element", U);
	cg_line(cg, "__shared__ %s red[%lld][%d];", ct, M, T);
	cg_line(cg, "const int64_t bt = blockIdx.x / %lld, j0 = blockIdx.x %% %lld * %d;", cw, cw, W);
	cg_line(cg, "const %s *a = X0 + %s;", cg_ctype(dt), aoff);
	cg_line(cg, "const %s *b = X1 + %s;", cg_ctype(dt), boff);
	cg_line(cg, "(void)bt;");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int lane = threadIdx.x %% 32;");
	cg_line(cg, "const int64_t gj = j0 + threadIdx.x / 32;");
	cg_line(cg, "%s acc[%lld];", ct, M);
	cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", M);
	cg_line(cg, "    acc[gi] = 0;");
	cg_line(cg, "if (gj < %lldll) {", N);
	cg->indent++;
	for (int pass = 0; pass < 2; pass++) {
		int u = pass == 0 ? U : 1, step = 32 * V;
		if (pass == 0)
			cg_line(cg, "int64_t k0 = lane * %d;", V);
		snprintf(src, sizeof(src), "b + gj * %lldll + gk", K);
		gemv_trip(cg, ct, u, V, step, K, src, bv);
		cg_line(cg, "for (int s = 0; s < %d; s++) {", u);
		cg->indent++;
		cg_line(cg, "const int64_t gk0 = k0 + s * %d;", step);
		cg_line(cg, "for (int64_t gi = 0; gi < %lld; gi++) {", M);
		cg->indent++;
		if (va) {
			cg_line(cg, "const float4 a4 = rl_ld16f(a + gi * %lldll + gk0);", K);
			cg_line(cg, "acc[gi] += a4.x * bk[s][0] + a4.y * bk[s][1] + a4.z * bk[s][2] + "
			        "a4.w * bk[s][3];");
		} else {
			cg_line(cg, "for (int v = 0; v < %d; v++) {", V);
			cg_line(cg, "    const int64_t gk = gk0 + v;");
			cg_line(cg, "    acc[gi] += %s * bk[s][v];", av);
			cg_line(cg, "}");
		}
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int gi = 0; gi < %lld; gi++)", M);
	cg_line(cg, "    red[gi][threadIdx.x] = acc[gi];");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "if ((int)threadIdx.x < %lld) {", (long long)W * M);
	cg->indent++;
	cg_line(cg, "const int64_t gi = threadIdx.x / %d, gj = j0 + threadIdx.x %% %d;", W, W);
	cg_line(cg, "if (gj < %lldll) {", N);
	cg->indent++;
	cg_line(cg, "%s s = 0;", ct);
	cg_line(cg, "for (int l = 0; l < 32; l++)");
	cg_line(cg, "    s += red[gi][(gj - j0) * 32 + l];");
	mm_store(cg, m, dt, alpha, C, beta, "s");
	cg->indent--;
	cg_line(cg, "}");
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

/* The mma kernels' stores: each thread's accumulators c_r of tile (i, j),
 * row g + 8 (r >> 1), column 2q + (r & 1) of the tile, warp w at rows
 * w / wgn * WM and columns w % wgn * WN, through mm_store (alpha, C, the
 * epilogue); `pre` a line first (or NULL), `unroll` the loops unrolled on the
 * GPU (RL_UNROLL: the accumulators stay in registers). */
static void mma_store_acc(struct rl_cgen *cg, const struct mm *m, enum rl_dtype dt, double alpha,
                          const struct rl_value *C, double beta, const char *pre, int wgn, int WM,
                          int WN, int MI, int NJ, bool unroll)
{
	const char *u = unroll ? "RL_UNROLL" : NULL;
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	if (pre)
		cg_line(cg, "%s", pre);
	cg_line(cg, "const int w = threadIdx.x / 32, g = threadIdx.x %% 32 / 4, q = threadIdx.x %% 4;");
	cg_line(cg, "const int wm = w / %d * %d, wn = w %% %d * %d;", wgn, WM, wgn, WN);
	if (u)
		cg_line(cg, "%s", u);
	cg_line(cg, "for (int i = 0; i < %d; i++)", MI);
	if (u)
		cg_line(cg, "    %s", u);
	cg_line(cg, "    for (int j = 0; j < %d; j++)", NJ);
	if (u)
		cg_line(cg, "        %s", u);
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
	mma_store_acc(cg, m, dt, alpha, C, beta, NULL, WN, 32, 32, 2, 4, false);
}

/* ---- the pipelined mma.sync kernel: cp.async stages and ldmatrix ---------- */

#define CU_PIPE_STAGES 4           /* shared-memory stages at most: three tiles in flight */
#define CU_PIPE_SMEM (96 * 1024)   /* dynamic shared memory a block may take (sm_86/89: 99 KiB) */

/* Shared elements of one stage of an operand's tile: R rows of the product
 * (A's m or B's n), BK deep, stored k-contiguous ([R][BK + 8]) when the
 * operand's rows run along k, else [BK][R + 8]; the 8 elements of padding
 * put the 8 rows an ldmatrix reads in 8 different 16-byte bank groups. */
static int pipe_tile_elems(int R, int BK, bool along_k)
{
	return along_k ? R * (BK + 8) : BK * (R + 8);
}

/* The warp tile: 64 x 64 outputs (4 x 8 mma tiles) where the block's
 * columns allow, else 64 x 32. */
static int pipe_nj(int BN)
{
	return BN % 64 == 0 ? 8 : 4;
}

/* Stages of BM x BK and BN x BK tiles within CU_PIPE_SMEM, at most
 * CU_PIPE_STAGES (H200, 4096^3 float16, 128 x 128 blocks: 32 deep in 3, 4 or 5
 * stages 552-559 us, 64 deep in 3 stages 511 us). */
static int pipe_stages(bool ta, bool tb, int BM, int BN, int BK)
{
	int64_t stage = 2 * (int64_t)(pipe_tile_elems(BM, BK, !ta) + pipe_tile_elems(BN, BK, tb));
	int64_t s = CU_PIPE_SMEM / stage;
	return (int)(s < CU_PIPE_STAGES ? s : CU_PIPE_STAGES);
}

/* Whether the pipelined kernel takes the product: 1 to 16 warps of 64 x 64
 * (or 64 x 32), every 16-byte chunk of a stored row wholly inside or outside
 * the matrix (the stored rows' length a multiple of 8 elements, so cp.async
 * can zero-fill what lies outside), and two stages at least within
 * CU_PIPE_SMEM. */
static bool pipe_ok(const struct mm *m, bool ta, bool tb, int BM, int BN, int BK)
{
	if (BM % 64 || BN % 32 || BK % 16)
		return false;
	int warps = (BM / 64) * (BN / (8 * pipe_nj(BN)));
	if (warps < 1 || warps > 16)
		return false;
	if ((!ta ? m->K : m->M) % 8 || (tb ? m->K : m->N) % 8)
		return false;
	return pipe_stages(ta, tb, BM, BN, BK) >= 2;
}

/* One operand's tile for stage `st` at depth k0 by cp.async: 16-byte chunks,
 * consecutive threads on consecutive chunks of a stored row, zero-filled
 * (source size 0) outside the matrix. */
static void pipe_load(struct rl_cgen *cg, const struct mma_operand *o, int64_t K, int BK, int T)
{
	int per = o->along_k ? BK / 8 : o->R / 8; /* chunks per stored row of the tile */
	cg_line(cg, "for (int e = threadIdx.x; e < %d; e += %d) {", o->R * BK / 8, T);
	cg->indent++;
	if (o->along_k)
		cg_line(cg, "const int %s = e / %d, kk = e %% %d * 8;", o->r, per, per);
	else
		cg_line(cg, "const int kk = e / %d, %s = e %% %d * 8;", per, o->r, per);
	cg_line(cg, "const int64_t %s = %s + %s, gk = k0 + kk;", o->gr, o->r0, o->r);
	cg_line(cg, "const bool in = %s < %lldll && gk < %lldll;", o->gr, (long long)o->ext,
	        (long long)K);
	cg_line(cg, "rl_cp16(&%s[st][%s][%s], in ? &%s[%s] : %s, in ? 16 : 0);", o->tile,
	        o->along_k ? o->r : "kk", o->along_k ? "kk" : o->r, o->src, o->ix, o->src);
	cg->indent--;
	cg_line(cg, "}");
}

/* Both operands' tiles at depth k0 into stage st (none past K), one commit
 * group either way, so the groups count tiles. */
static void pipe_stage(struct rl_cgen *cg, const struct mma_operand *A, const struct mma_operand *B,
                       int64_t K, int BK, int T)
{
	cg_line(cg, "if (k0 < %lldll) {", (long long)K);
	cg->indent++;
	pipe_load(cg, A, K, BK, T);
	pipe_load(cg, B, K, BK, T);
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "rl_cp_commit();");
}

/*
 * The product through mma.sync m16n8k16 with the operand tiles streamed by
 * cp.async into S stages of dynamic shared memory (pipe_stages; iteration kt
 * waits for tile kt, then starts the load of tile kt + S - 1 into the stage
 * tile kt - 1 used, so S - 1 tiles are in flight while the tensor cores work)
 * and the fragments read by ldmatrix (.trans where the stored rows run
 * across k): a block of BM x BN outputs, warps of 64 x 64 (4 x 8 tiles of
 * 16 x 8, 128 float accumulators per thread) or 64 x 32. The fragments are
 * those k_mma documents: lane l's ldmatrix address picks row l % 8 of matrix
 * l / 8, and matrix i lands in register i, so A's four matrices are (rows
 * 0-7, k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) and B's, for column
 * tiles j and j + 1, (j, k 0-7), (j, 8-15), (j + 1, 0-7), (j + 1, 8-15).
 * Emulation has no ldmatrix: each thread reads the same elements one pair at
 * a time, and rl_emu_mma_n runs each warp's mma from its lanes' registers, so
 * the layout is still checked on the CPU; cp.async is a copy there.
 */
static void k_mma_pipe(struct cu *d, const struct mm *m, enum rl_dtype dt, bool ta, bool tb,
                       const char *aoff, const char *boff, const char *aix, const char *bix,
                       double alpha, const struct rl_value *C, double beta, int BM, int BN,
                       int BK, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const int MI = 4, NJ = pipe_nj(BN), WGN = BN / (8 * NJ), T = 32 * (BM / 64) * WGN;
	const int S = pipe_stages(ta, tb, BM, BN, BK);
	int64_t mt = (m->M + BM - 1) / BM, nt = (m->N + BN - 1) / BN, nk = (m->K + BK - 1) / BK;
	int ea = pipe_tile_elems(BM, BK, !ta), eb = pipe_tile_elems(BN, BK, tb);
	bool bf = dt == RL_DT_BFLOAT16;
	d->need_mma = true;
	cg->need_half = cg->need_bf16 = 1;
	L->grid = m->nb * mt * nt;
	L->block = T;
	L->phased = true;
	L->smem = S * 2 * (ea + eb);
	cg_line(cg, "/* C[%lld x %lld] = A[%lld x %lld] B, %lld time%s, %s on tensor cores: "
	        "%d x %d outputs per block (tile pass), %d warps of 64 x %d (4 x %d mma.sync "
	        "m16n8k16, float accumulators), %d-deep tiles by cp.async in %d stages (%d bytes "
	        "of dynamic shared memory), fragments by ldmatrix */",
	        (long long)m->M, (long long)m->N, (long long)m->M, (long long)m->K, (long long)m->nb,
	        m->nb == 1 ? "" : "s", bf ? "bfloat16" : "float16", BM, BN, T / 32, 8 * NJ, NJ, BK,
	        S, L->smem);
	cg_line(cg, "#ifdef RL_CUDA_EMULATE");
	cg_line(cg, "static unsigned char rl_dsmem[%d] __attribute__((aligned(16)));", L->smem);
	cg_line(cg, "#else");
	cg_line(cg, "extern __shared__ __align__(16) unsigned char rl_dsmem[];");
	cg_line(cg, "#endif");
	if (!ta)
		cg_line(cg, "uint16_t (*As)[%d][%d] = (uint16_t (*)[%d][%d])rl_dsmem;", BM, BK + 8, BM,
		        BK + 8);
	else
		cg_line(cg, "uint16_t (*As)[%d][%d] = (uint16_t (*)[%d][%d])rl_dsmem;", BK, BM + 8, BK,
		        BM + 8);
	if (tb)
		cg_line(cg, "uint16_t (*Bs)[%d][%d] = (uint16_t (*)[%d][%d])(rl_dsmem + %d);", BN, BK + 8,
		        BN, BK + 8, S * 2 * ea);
	else
		cg_line(cg, "uint16_t (*Bs)[%d][%d] = (uint16_t (*)[%d][%d])(rl_dsmem + %d);", BK, BN + 8,
		        BK, BN + 8, S * 2 * ea);
	cg_line(cg, "RL_LOCAL(float, acc, [%d][%d][4]);", MI, NJ);
	cg_line(cg, "RL_LOCAL(uint32_t, fa, [%d][4]);", MI);
	cg_line(cg, "RL_LOCAL(uint32_t, fb, [%d][2]);", NJ);
	cg_line(cg, "const int64_t bt = blockIdx.x / %lld;", (long long)(mt * nt));
	cg_line(cg, "const int64_t m0 = blockIdx.x / %lld %% %lld * %d, n0 = blockIdx.x %% %lld * %d;",
	        (long long)nt, (long long)mt, BM, (long long)nt, BN);
	cg_line(cg, "const uint16_t *a = X0 + %s;", aoff);
	cg_line(cg, "const uint16_t *b = X1 + %s;", boff);
	cg_line(cg, "(void)bt;");
	const struct mma_operand A = {"As", "a", aix, "ii", "gi", "m0", BM, m->M, !ta};
	const struct mma_operand B = {"Bs", "b", bix, "jj", "gj", "n0", BN, m->N, tb};
	cg_line(cg, "RL_THREADS { /* the first %d tiles; a commit group per tile, empty past K */", S - 1);
	cg->indent++;
	cg_line(cg, "RL_UNROLL");
	cg_line(cg, "for (int i = 0; i < %d; i++)", MI);
	cg_line(cg, "    RL_UNROLL");
	cg_line(cg, "    for (int j = 0; j < %d; j++)", NJ);
	cg_line(cg, "        RL_UNROLL");
	cg_line(cg, "        for (int r = 0; r < 4; r++)");
	cg_line(cg, "            RL_L(acc)[i][j][r] = 0.0f;");
	cg_line(cg, "for (int st = 0; st < %d; st++) {", S - 1);
	cg->indent++;
	cg_line(cg, "const int64_t k0 = (int64_t)st * %d;", BK);
	pipe_stage(cg, &A, &B, m->K, BK, T);
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int64_t kt = 0; kt < %lld; kt++) {", (long long)nk);
	cg->indent++;
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    rl_cp_wait(%d); /* this thread's part of tile kt has landed */", S - 2);
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC /* all of tile kt; every thread is done with tile kt - 1 */");
	cg_line(cg, "RL_THREADS { /* tile kt + %d into the stage tile kt - 1 used */", S - 1);
	cg->indent++;
	cg_line(cg, "const int st = (int)((kt + %d) %% %d);", S - 1, S);
	cg_line(cg, "const int64_t k0 = (kt + %d) * %d;", S - 1, BK);
	pipe_stage(cg, &A, &B, m->K, BK, T);
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int kk = 0; kk < %d; kk += 16) {", BK);
	cg->indent++;
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int st = (int)(kt %% %d);", S);
	cg_line(cg, "const int w = threadIdx.x / 32, l = threadIdx.x %% 32;");
	cg_line(cg, "const int wm = w / %d * 64, wn = w %% %d * %d;", WGN, WGN, 8 * NJ);
	cg_line(cg, "#ifdef RL_CUDA_EMULATE");
	cg_line(cg, "const int g = l / 4, q = l %% 4;");
	cg_line(cg, "RL_UNROLL");
	cg_line(cg, "for (int i = 0; i < %d; i++)", MI);
	cg_line(cg, "    RL_UNROLL");
	cg_line(cg, "    for (int h = 0; h < 4; h++) {");
	cg_line(cg, "        const int r = wm + i * 16 + g + (h & 1) * 8, k = kk + 2 * q + (h >> 1) * 8;");
	if (!ta)
		cg_line(cg, "        RL_L(fa)[i][h] = rl_ld2h(&As[st][r][k]);");
	else
		cg_line(cg, "        RL_L(fa)[i][h] = (uint32_t)As[st][k][r] | (uint32_t)As[st][k + 1][r] << 16;");
	cg_line(cg, "    }");
	cg_line(cg, "RL_UNROLL");
	cg_line(cg, "for (int j = 0; j < %d; j++)", NJ);
	cg_line(cg, "    RL_UNROLL");
	cg_line(cg, "    for (int h = 0; h < 2; h++) {");
	cg_line(cg, "        const int c = wn + j * 8 + g, k = kk + 2 * q + h * 8;");
	if (tb)
		cg_line(cg, "        RL_L(fb)[j][h] = rl_ld2h(&Bs[st][c][k]);");
	else
		cg_line(cg, "        RL_L(fb)[j][h] = (uint32_t)Bs[st][k][c] | (uint32_t)Bs[st][k + 1][c] << 16;");
	cg_line(cg, "    }");
	cg_line(cg, "(void)l;");
	cg_line(cg, "#else");
	cg_line(cg, "RL_UNROLL");
	cg_line(cg, "for (int i = 0; i < %d; i++)", MI);
	if (!ta)
		cg_line(cg, "    rl_ldsm4(fa[i], &As[st][wm + i * 16 + (l & 15)][kk + (l >> 4) * 8]);");
	else
		cg_line(cg, "    rl_ldsm4t(fa[i], &As[st][kk + (l >> 4) * 8 + (l & 7)][wm + i * 16 + (l & 8)]);");
	cg_line(cg, "RL_UNROLL");
	cg_line(cg, "for (int j = 0; j < %d; j += 2)", NJ);
	if (tb)
		cg_line(cg, "    rl_ldsm4(fb[j], &Bs[st][wn + (j + (l >> 4)) * 8 + (l & 7)][kk + (l & 8)]);");
	else
		cg_line(cg, "    rl_ldsm4t(fb[j], &Bs[st][kk + (l & 15)][wn + (j + (l >> 4)) * 8]);");
	cg_line(cg, "RL_UNROLL");
	cg_line(cg, "for (int i = 0; i < %d; i++)", MI);
	cg_line(cg, "    RL_UNROLL");
	cg_line(cg, "    for (int j = 0; j < %d; j++)", NJ);
	cg_line(cg, "        rl_mma_%s(acc[i][j], fa[i], fb[j]);", bf ? "bf16" : "f16");
	cg_line(cg, "#endif");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "#ifdef RL_CUDA_EMULATE /* the warp-wide mma of every warp, from its lanes' fragments */");
	cg_line(cg, "for (unsigned w = 0; w < blockDim.x / 32; w++)");
	cg_line(cg, "    RL_UNROLL");
	cg_line(cg, "    for (int i = 0; i < %d; i++)", MI);
	cg_line(cg, "        RL_UNROLL");
	cg_line(cg, "        for (int j = 0; j < %d; j++)", NJ);
	cg_line(cg, "            rl_emu_mma_n(&acc_t[w * 32][0][0][0], &fa_t[w * 32][0][0], &fb_t[w * 32][0][0], "
	        "%d, %d, i, j, %d);", MI, NJ, bf);
	cg_line(cg, "#endif");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	mma_store_acc(cg, m, dt, alpha, C, beta, "rl_cp_wait(0); /* the empty groups past K */", WGN,
	              64, 8 * NJ, MI, NJ, true);
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
		k_gemv(cg, &m, dt, ta, tb, aoff, boff, aix, bix, alpha, C, beta, L);
		return RL_OK;
	}
	if (dt == RL_DT_FLOAT16 || dt == RL_DT_BFLOAT16) {
		/* every GPU profile shipped has float16 and bfloat16 tensor cores (sm_80 on):
		 * mma.sync on the tile pass's block tile (pipelined where pipe_ok), else WMMA on
		 * 64 x 64 */
		int bm, bn, bk;
		bool tiled = mma_tile(&n->tile, &bm, &bn, &bk);
		if (tiled && pipe_ok(&m, ta, tb, bm, bn, bk))
			k_mma_pipe(d, &m, dt, ta, tb, aoff, boff, aix, bix, alpha, C, beta, bm, bn, bk, L);
		else if (tiled)
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

/* A QuantMatMul as both of its kernels see it (ir/qweights.h's layout). */
struct qmm {
	int64_t M, K, N, bits, bs;
	int64_t nb, u, rowbytes; /* blocks a channel, codes a lane unit, bytes of codes a channel */
	bool zp, bias, hs;       /* zero points, a bias, float16 scales */
};

/* The kernel's opening comment: the product, the scheme and `how`. */
static void q_comment(struct rl_cgen *cg, const struct qmm *q, const char *how)
{
	cg_line(cg, "/* Y[%lld x %lld] = A[%lld x %lld] W: int%lld weights, %s, %lld codes per "
	        "scale, %lld bytes of codes per channel, dequantized in registers, float "
	        "accumulation; %s */", (long long)q->M, (long long)q->N, (long long)q->M,
	        (long long)q->K, (long long)q->bits,
	        q->bits == 8 ? (q->nb == 1 ? "one scale per output channel" : "symmetric blocks")
	                     : (q->zp ? "a zero point per block" : "symmetric (zero point 8)"),
	        (long long)(q->bits == 8 && q->nb == 1 ? q->K : q->bs), (long long)q->rowbytes, how);
}

/* The store of row `row`, channel gj from `sum`, with the bias and the fused epilogue. */
static void q_store(struct rl_cgen *cg, const struct qmm *q, const char *row, const char *sum)
{
	cg_line(cg, "const size_t o = (size_t)((%s) * %lldll + gj);", row, (long long)q->N);
	cg_line(cg, "Y0[o] = %s%s;", sum, q->bias ? " + X4[gj]" : "");
	cg_epilogue(cg, "Y0 + o", "o", 1, q->N);
}

#define CU_QF_CH 4   /* output channels per warp in the whole-group kernel */
#define CU_QF_U 2    /* 16-byte chunks per lane and channel in flight */

/*
 * The whole-group QuantMatMul kernel: every group of 16 units whole (units a
 * multiple of 16), every unit inside K (K a multiple of u), and one scale a
 * unit or one a channel. Each warp takes CU_QF_CH output channels and its
 * lanes the same 16-byte chunks of each channel's codes: chunk c of a row is
 * step t = (c % CPG) / 4 of group c / CPG (CPG chunks a group), and its four
 * 32-bit words hold units 16 g + 4 (c % 4) + e, e < 4, so the activations a
 * chunk multiplies (one float4 per word for int8, two for int4) are loaded
 * once for all CU_QF_CH channels, and the word's scale applies once. Codes
 * become floats without a conversion instruction: the bits 0x4B000000 | q
 * are the float 2^23 + q, and subtracting 2^23 + z (z the zero point, 128
 * for int8 whose bytes are flipped to unsigned) leaves q - z exactly. The
 * lanes' partial sums are added in order from shared memory.
 */
static bool q_fast(struct rl_cgen *cg, const struct qmm *q, struct launch *L)
{
	int64_t M = q->M, K = q->K, N = q->N, bits = q->bits, nb = q->nb, u = q->u;
	int64_t rowbytes = q->rowbytes, units = K / u;
	int64_t cpg = u * bits / 8; /* 16-byte chunks a group: 16 units of u codes */
	if (K % u || units % 16 || (u != q->bs && nb != 1) || cpg < 4 || cpg % 4 || rowbytes % 16)
		return false;
	bool zp = q->zp, hs = q->hs;
	const int W = 8, R = CU_QF_CH, MR = CU_Q_ROWS, T = 32 * W, cpw = bits == 8 ? 4 : 8;
	int64_t ng = (N + W * R - 1) / (W * R), mch = (M + MR - 1) / MR, ch = rowbytes / 16;
	L->grid = ng * mch;
	L->block = T;
	L->phased = true;
	char how[160];
	snprintf(how, sizeof(how), "%d channels per warp sharing each load of A (%d warps a block), "
	         "%d rows of A per block", R, W, MR);
	q_comment(cg, q, how);
	cg_line(cg, "__shared__ float red[%d][%d][%d][32];", W, R, MR);
	cg_line(cg, "const int64_t m0 = (int64_t)(blockIdx.x / %lldu) * %d, mrows = %lldll;",
	        (long long)ng, MR, (long long)M);
	cg_line(cg, "const int64_t nw = (int64_t)(blockIdx.x %% %lldu) * %d;", (long long)ng, W * R);
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "const int l = threadIdx.x %% 32;");
	cg_line(cg, "const int64_t n0 = nw + threadIdx.x / 32 * %d;", R);
	cg_line(cg, "float acc[%d][%d];", R, MR);
	cg_line(cg, "const uint8_t *q[%d];", R);
	cg_line(cg, "const %s *s[%d];", hs ? "uint16_t" : "float", R);
	if (zp)
		cg_line(cg, "const uint8_t *z[%d];", R);
	cg_line(cg, "for (int r = 0; r < %d; r++) {", R);
	cg->indent++;
	cg_line(cg, "const int64_t nr = n0 + r < %lldll ? n0 + r : %lldll; /* past N: channel N - 1, "
	        "never stored */", (long long)N, (long long)(N - 1));
	cg_line(cg, "q[r] = X1 + nr * %lldll;", (long long)rowbytes);
	cg_line(cg, "s[r] = X2 + nr * %lldll;", (long long)nb);
	if (zp)
		cg_line(cg, "z[r] = X3 + nr * %lldll;", (long long)nb);
	cg_line(cg, "for (int i = 0; i < %d; i++)", MR);
	cg_line(cg, "    acc[r][i] = 0;");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int c0 = l; c0 < %lld; c0 += %d) {", (long long)ch, 32 * CU_QF_U);
	cg->indent++;
	cg_line(cg, "uint4 v[%d][%d];", CU_QF_U, R);
	cg_line(cg, "for (int h = 0; h < %d; h++) /* the codes first: %d loads in flight */", CU_QF_U,
	        CU_QF_U * R);
	cg_line(cg, "    for (int r = 0; r < %d; r++)", R);
	cg_line(cg, "        if (c0 + 32 * h < %lld)", (long long)ch);
	cg_line(cg, "            v[h][r] = rl_ld16u(q[r] + (c0 + 32 * h) * 16);");
	cg_line(cg, "for (int h = 0; h < %d; h++) {", CU_QF_U);
	cg->indent++;
	cg_line(cg, "const int c = c0 + 32 * h;");
	cg_line(cg, "if (c >= %lld)", (long long)ch);
	cg_line(cg, "    break;");
	cg_line(cg, "const int un = c / %lld * 16 + c %% 4 * 4, t = c %% %lld / 4;", (long long)cpg,
	        (long long)cpg);
	cg_line(cg, "const uint32_t w4[%d][4] = {", R);
	for (int r = 0; r < R; r++)
		cg_line(cg, "    {v[h][%d].x, v[h][%d].y, v[h][%d].z, v[h][%d].w},", r, r, r, r);
	cg_line(cg, "};");
	cg_line(cg, "for (int e = 0; e < 4; e++) {");
	cg->indent++;
	cg_line(cg, "const int64_t k0 = (int64_t)(un + e) * %lld + t * %d;", (long long)u, cpw);
	/* the float 2^23 + q minus (2^23 + zero point): q - z */
	cg_line(cg, "float sc[%d], zf[%d];", R, R);
	cg_line(cg, "for (int r = 0; r < %d; r++) {", R);
	cg->indent++;
	const char *blk = nb == 1 ? "0" : "un + e";
	char sv[64];
	snprintf(sv, sizeof(sv), "s[r][%s]", blk);
	cg_line(cg, "sc[r] = %s;", hs ? cg_load(cg, RL_DT_FLOAT16, sv) : sv);
	if (bits == 8)
		cg_line(cg, "zf[r] = 8388736.0f; /* 2^23 + 128 */");
	else if (zp)
		cg_line(cg, "zf[r] = 8388608.0f + (float)z[r][%s];", blk);
	else
		cg_line(cg, "zf[r] = 8388616.0f; /* 2^23 + 8 */");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int i = 0; i < %d; i++) {", MR);
	cg->indent++;
	cg_line(cg, "if (m0 + i >= mrows)");
	cg_line(cg, "    break;");
	cg_line(cg, "const float *x = X0 + (m0 + i) * %lldll + k0;", (long long)K);
	for (int hh = 0; hh < cpw / 4; hh++)
		cg_line(cg, "const float4 x%d = rl_ld16f(x + %d);", hh, 4 * hh);
	cg_line(cg, "for (int r = 0; r < %d; r++) {", R);
	cg->indent++;
	cg_line(cg, "const uint32_t w = w4[r][e];");
	if (bits == 8) {
		cg_line(cg, "const uint32_t f = w ^ 0x80808080u; /* int8 -> uint8 + 128 */");
		cg_line(cg, "const float q0 = rl_bits_f(0x4B000000u | (f & 255u)) - zf[r];");
		cg_line(cg, "const float q1 = rl_bits_f(0x4B000000u | (f >> 8 & 255u)) - zf[r];");
		cg_line(cg, "const float q2 = rl_bits_f(0x4B000000u | (f >> 16 & 255u)) - zf[r];");
		cg_line(cg, "const float q3 = rl_bits_f(0x4B000000u | f >> 24) - zf[r];");
		cg_line(cg, "acc[r][i] += sc[r] * (x0.x * q0 + x0.y * q1 + x0.z * q2 + x0.w * q3);");
	} else {
		for (int p = 0; p < 8; p++)
			cg_line(cg, "const float q%d = rl_bits_f(0x4B000000u | (w >> %d & 15u)) - zf[r];", p,
			        (p % 4) * 8 + (p / 4) * 4);
		cg_line(cg, "acc[r][i] += sc[r] * (x0.x * q0 + x0.y * q1 + x0.z * q2 + x0.w * q3 + "
		        "x1.x * q4 + x1.y * q5 + x1.z * q6 + x1.w * q7);");
	}
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (int r = 0; r < %d; r++)", R);
	cg_line(cg, "    for (int i = 0; i < %d; i++)", MR);
	cg_line(cg, "        red[threadIdx.x / 32][r][i][l] = acc[r][i];");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "if (threadIdx.x < %du) {", W * R * MR);
	cg->indent++;
	cg_line(cg, "const int w = threadIdx.x / %d, r = threadIdx.x / %d %% %d, i = threadIdx.x %% %d;",
	        R * MR, MR, R, MR);
	cg_line(cg, "const int64_t gj = nw + w * %d + r;", R);
	cg_line(cg, "if (gj < %lldll && m0 + i < mrows) {", (long long)N);
	cg->indent++;
	cg_line(cg, "float sum = 0;");
	cg_line(cg, "for (int k = 0; k < 32; k++)");
	cg_line(cg, "    sum += red[w][r][i][k];");
	q_store(cg, q, "m0 + i", "sum");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return true;
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
	const struct qmm q = {
		.M = rl_shape_numel(&Y->shape) / N, .K = K, .N = N, .bits = bits, .bs = bs,
		.nb = (K + bs - 1) / bs, .u = rl_qweight_unit((int)bits, K, bs),
		.rowbytes = rl_qweight_rowbytes((int)bits, K, bs),
		.zp = rl_node_in(n, 3) != RL_NONE, .bias = rl_node_in(n, 4) != RL_NONE,
		.hs = g->values[rl_node_in(n, 2)].dtype == RL_DT_FLOAT16,
	};
	int64_t M = q.M, nb = q.nb, u = q.u, rowbytes = q.rowbytes;
	int64_t units = rowbytes * 8 / bits / u, spw = u * bits / 32; /* words per lane per group */
	int cpw = bits == 8 ? 4 : 8;
	bool zp = q.zp, hs = q.hs;
	if (rowbytes % 16 || u % cpw)
		return cg_error(cg, node, "QuantMatMul with a %lld-byte row has no CUDA kernel",
		                (long long)rowbytes);
	if (M <= 0)
		return RL_OK;
	if (q_fast(cg, &q, L))
		return RL_OK;
	int64_t ng = (N + CU_Q_WARPS - 1) / CU_Q_WARPS, mch = (M + CU_Q_ROWS - 1) / CU_Q_ROWS;
	const int T = 32 * CU_Q_WARPS;
	L->grid = ng * mch;
	L->block = T;
	L->phased = true;
	bool vec = K % 4 == 0; /* rows of A 16-byte aligned (the arenas align to 256) */
	char how[120];
	snprintf(how, sizeof(how), "one warp per output channel (%d per block), %d rows of A per block",
	         CU_Q_WARPS, CU_Q_ROWS);
	q_comment(cg, &q, how);
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
	q_store(cg, &q, "m0 + r", "red[r][threadIdx.x]");
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
