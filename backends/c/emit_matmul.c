/*
 * emit_matmul.c - C kernels for MatMul and Gemm.
 *
 * Both become one row-major product Y[M,N] (+)= A'[M,K] B'[K,N] per batch
 * entry, written in i-k-j order: a group of four rows of A' shares each
 * streamed row of B', and the innermost loop runs over contiguous output
 * columns with a literal trip count, so compilers vectorize it at -O2. Wide
 * outputs are cut into column blocks that stay in L1 while K is swept.
 * float32 accumulates in float, float64 in double; integers wrap like numpy
 * (the arithmetic runs in the unsigned type of the same width, or uint32
 * for 8/16-bit); float16 and bfloat16 accumulate a row block in a float
 * array on the stack and round once at the end.
 *
 * Gemm with transB (B stored N x K, the usual layout of fully connected
 * weights) is a set of dot products instead: both operands are contiguous
 * in k, and eight independent partial sums let the compiler vectorize.
 *
 * fp32 products that are not tiny take the packed runtime (emit_gemm.c)
 * instead: a register-blocked GEMM with B packed once at init when it is a
 * constant (per block otherwise), split across threads by output blocks; or,
 * for batch 1 with constant weights, a streaming GEMV that reads the weights
 * once (rows of an N x K B as they lie, a K x N B packed into column panels
 * at init). The tile pass's verdict (node->tile) picks the blocks, or
 * RL_TILE_PLAIN keeps the kernels below; shapes under MM_PACKED_MIN
 * multiply-adds (attention heads of 16 x 16) keep them too, as do every
 * other dtype and a MatMul whose batch dims broadcast.
 *
 * MatMul follows numpy: a 1-D A is a row [1,K], a 1-D B a column [K,1] (the
 * added dim is dropped from Y), and batch dims broadcast. With a 2-D B the
 * batch entries of A are consecutive rows of one product.
 *
 * In a fused epilogue group (cg->epi set, backends/c/emit_fused.c) every
 * form calls cg_epilogue() on each row block as soon as it is final, so
 * bias, activation and residual run on it while it is in L1; without a
 * group the calls write nothing.
 */
#include "emit_impl.h"

#include <string.h>

#define MM_MR 4      /* rows of A' sharing one streamed row of B' */
#define MM_JB 256    /* column block when N is wide */
#define MM_JB_MIN 512 /* N above which columns are blocked */
#define MM_LANES 8   /* partial sums of a dot product */

/* How the element types are computed. */
struct mm_types {
	enum rl_dtype dt;
	const char *st;   /* storage type */
	const char *acc;  /* accumulator / arithmetic type */
	bool wrap;        /* integer: arithmetic in an unsigned type */
	bool narrow;      /* float16 / bfloat16: stored as uint16_t */
};

static bool mm_types_init(struct mm_types *t, enum rl_dtype dt)
{
	memset(t, 0, sizeof(*t));
	t->dt = dt;
	t->st = cg_ctype(dt);
	switch (dt) {
	case RL_DT_FLOAT: t->acc = "float"; break;
	case RL_DT_DOUBLE: t->acc = "double"; break;
	case RL_DT_FLOAT16: case RL_DT_BFLOAT16: t->acc = "float"; t->narrow = true; break;
	case RL_DT_INT8: case RL_DT_UINT8: case RL_DT_INT16: case RL_DT_UINT16:
	case RL_DT_INT32: case RL_DT_UINT32:
		t->acc = "uint32_t"; t->wrap = true; break;
	case RL_DT_INT64: case RL_DT_UINT64:
		t->acc = "uint64_t"; t->wrap = true; break;
	default: return false;
	}
	return true;
}

/* Description of one product, everything known at generation time. */
struct mm_desc {
	int64_t M, K, N;
	int64_t a_rs, a_ks;   /* A'(i,k) = a[i*a_rs + k*a_ks] */
	bool trans_b;         /* B'(k,j) = b[j*K + k] instead of b[k*N + j] */
	double alpha;
	/* initial value: none (zero), or beta * C with strides */
	bool has_c;
	double beta;
	int64_t c_rs, c_cs;   /* C(i,j) = c[i*c_rs + j*c_cs] */
	char ybase[64];       /* flat index of y[0] in Y0, for cg_epilogue */
};

static void line_open(struct rl_cgen *cg, const char *s)
{
	cg_line(cg, "%s", s);
	cg->indent++;
}

static void line_close(struct rl_cgen *cg)
{
	cg->indent--;
	cg_line(cg, "}");
}

/* "v" scaled by alpha in the accumulator type (alpha == 1: v itself). */
static const char *scaled(const struct mm_types *t, double alpha, const char *v, char *b,
                          size_t n)
{
	if (alpha == 1.0)
		snprintf(b, n, "%s", v);
	else
		snprintf(b, n, "%s * %s", cg_lit(t->dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT,
		                                  alpha), v);
	return b;
}

/* Expression of the initial output value at C(i,j) (strings for the indices). */
static void init_expr(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d,
                      const char *ri, const char *cj, char *b, size_t n)
{
	if (!d->has_c || d->beta == 0.0) {
		snprintf(b, n, "%s", cg_zero(t->acc));
		return;
	}
	char idx[160];
	if (d->c_rs && d->c_cs)
		snprintf(idx, sizeof(idx), "(%s) * %lld + %s", ri, (long long)d->c_rs, cj);
	else if (d->c_rs)
		snprintf(idx, sizeof(idx), "(%s) * %lld", ri, (long long)d->c_rs);
	else if (d->c_cs)
		snprintf(idx, sizeof(idx), "%s", cj);
	else
		snprintf(idx, sizeof(idx), "0");
	char e[200];
	snprintf(e, sizeof(e), "c[%s]", idx);
	const char *v = cg_load(cg, t->dt, e);
	/* C in the accumulator's type: a cast only where the loaded type differs */
	char cv[240];
	if (strcmp(t->acc, cg_comptype(t->dt)) != 0)
		snprintf(cv, sizeof(cv), "(%s)%s", t->acc, v);
	else
		snprintf(cv, sizeof(cv), "%s", v);
	if (d->beta == 1.0 || t->wrap)
		snprintf(b, n, "%s", cv);
	else
		snprintf(b, n, "%s * %s",
		         cg_lit(t->dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT, d->beta), cv);
}

/* A'(r,k) as an expression */
static void a_elem(const struct mm_desc *d, const char *r, const char *k, char *b, size_t n)
{
	if (d->a_ks == 1)
		snprintf(b, n, "a[(%s) * %lld + %s]", r, (long long)d->a_rs, k);
	else if (d->a_rs == 1)
		snprintf(b, n, "a[%s + %s * %lld]", r, k, (long long)d->a_ks);
	else
		snprintf(b, n, "a[(%s) * %lld + %s * %lld]", r, (long long)d->a_rs, k,
		         (long long)d->a_ks);
}

/*
 * i-k-j product for float/double/integers, accumulating in y itself. Rows in
 * groups of MM_MR, then single rows; columns [j0, j0 + jn) per call.
 */
static void emit_ikj_cols(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d,
                          int rows, const char *rbase, const char *jofs, int64_t jn)
{
	char b[512], a[400], ini[300];
	/* row pointers into y */
	for (int r = 0; r < rows; r++)
		cg_line(cg, "%s *restrict y%d = y + (%s + %d) * %lld + %s;", t->st, r, rbase, r,
		        (long long)d->N, jofs);
	/* initial values */
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++) {", (long long)jn);
	line_open(cg, b);
	for (int r = 0; r < rows; r++) {
		char ri[64], cj[64];
		snprintf(ri, sizeof(ri), "%s + %d", rbase, r);
		snprintf(cj, sizeof(cj), "%s + j", jofs);
		init_expr(cg, t, d, ri, cj, ini, sizeof(ini));
		if (strcmp(t->st, t->acc) == 0) /* ini is of the storage type already */
			cg_line(cg, "y%d[j] = %s;", r, ini);
		else
			cg_line(cg, "y%d[j] = (%s)(%s);", r, t->st, ini);
	}
	line_close(cg);
	/* float and double: k in pairs, two rows of B' per pass over the y rows,
	 * so each y element is loaded and stored once per two multiply-adds;
	 * y + a*b + a'*b' sums in the order of the k-by-k loop (bit-identical).
	 * GCC's -O3 does this itself, its -O2 does not: the fused QKV product of
	 * gpt_block (16 x 64 x 192) ran 1.5x its -O3 -march=native time. */
	int64_t k0 = 0;
	if (!t->wrap && d->K >= 2) {
		k0 = d->K / 2 * 2;
		snprintf(b, sizeof(b), "for (size_t k = 0; k < %lld; k += 2) {", (long long)k0);
		line_open(cg, b);
		for (int r = 0; r < rows; r++) {
			char ae[200], rr[64];
			snprintf(rr, sizeof(rr), "%s + %d", rbase, r);
			a_elem(d, rr, "k", ae, sizeof(ae));
			scaled(t, d->alpha, ae, a, sizeof(a));
			cg_line(cg, "const %s a%d = %s;", t->acc, r, a);
			a_elem(d, rr, "(k + 1)", ae, sizeof(ae));
			scaled(t, d->alpha, ae, a, sizeof(a));
			cg_line(cg, "const %s a%d_ = %s;", t->acc, r, a);
		}
		cg_line(cg, "const %s *restrict br = b + k * %lld + %s;", t->st, (long long)d->N, jofs);
		cg_line(cg, "const %s *restrict bs = br + %lld;", t->st, (long long)d->N);
		snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++) {", (long long)jn);
		line_open(cg, b);
		cg_line(cg, "const %s bv = br[j], bw = bs[j];", t->acc);
		for (int r = 0; r < rows; r++)
			cg_line(cg, "y%d[j] = y%d[j] + a%d * bv + a%d_ * bw;", r, r, r, r);
		line_close(cg);
		line_close(cg);
	}
	if (k0 < d->K) {
		snprintf(b, sizeof(b), "for (size_t k = %lld; k < %lld; k++) {", (long long)k0,
		         (long long)d->K);
		line_open(cg, b);
		for (int r = 0; r < rows; r++) {
			char ae[200], rr[64];
			snprintf(rr, sizeof(rr), "%s + %d", rbase, r);
			a_elem(d, rr, "k", ae, sizeof(ae));
			if (t->wrap)
				snprintf(a, sizeof(a), "(%s)%s", t->acc, ae);
			else
				scaled(t, d->alpha, ae, a, sizeof(a));
			cg_line(cg, "const %s a%d = %s;", t->acc, r, a);
		}
		cg_line(cg, "const %s *restrict br = b + k * %lld + %s;", t->st, (long long)d->N, jofs);
		snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++) {", (long long)jn);
		line_open(cg, b);
		if (t->wrap) {
			cg_line(cg, "const %s bv = (%s)br[j];", t->acc, t->acc);
			for (int r = 0; r < rows; r++)
				cg_line(cg, "y%d[j] = (%s)((%s)y%d[j] + a%d * bv);", r, t->st, t->acc, r, r);
		} else {
			cg_line(cg, "const %s bv = br[j];", t->acc);
			for (int r = 0; r < rows; r++)
				cg_line(cg, "y%d[j] += a%d * bv;", r, r);
		}
		line_close(cg);
		line_close(cg);
	}
	/* the rows' columns are final: a fused epilogue runs on them now */
	if (cg->epi) {
		char yr[200], base[300];
		if (rows > 1) {
			snprintf(b, sizeof(b), "for (size_t er = 0; er < %d; er++) {", rows);
			line_open(cg, b);
		}
		snprintf(yr, sizeof(yr), "y + (%s + %s) * %lld + %s", rbase, rows > 1 ? "er" : "0",
		         (long long)d->N, jofs);
		snprintf(base, sizeof(base), "%s + (%s + %s) * %lld + %s", d->ybase, rbase,
		         rows > 1 ? "er" : "0", (long long)d->N, jofs);
		cg_epilogue(cg, yr, base, jn, d->N);
		if (rows > 1)
			line_close(cg);
	}
}

/* One group of `rows` rows starting at row expression rbase, all columns. */
static void emit_ikj_rows(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d,
                          int rows, const char *rbase)
{
	int64_t N = d->N;
	if (N <= MM_JB_MIN) {
		line_open(cg, "{");
		emit_ikj_cols(cg, t, d, rows, rbase, "0", N);
		line_close(cg);
		return;
	}
	int64_t nfull = N / MM_JB, tail = N % MM_JB;
	char b[200];
	snprintf(b, sizeof(b), "for (size_t jb = 0; jb < %lld; jb += %d) {",
	         (long long)(nfull * MM_JB), MM_JB);
	line_open(cg, b);
	emit_ikj_cols(cg, t, d, rows, rbase, "jb", MM_JB);
	line_close(cg);
	if (tail) {
		line_open(cg, "{");
		snprintf(b, sizeof(b), "%lld", (long long)(nfull * MM_JB));
		emit_ikj_cols(cg, t, d, rows, rbase, b, tail);
		line_close(cg);
	}
}

static void emit_ikj(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d)
{
	int64_t M = d->M, m4 = M / MM_MR * MM_MR;
	char b[200];
	/* fp32: compiled per ISA (RL_TARGETS), else plain `cc -O2` runs the
	 * column loop at SSE2 width (the 16 x 16 attention products of
	 * gpt_block: 4x their -O3 -march=native time) */
	if (t->dt == RL_DT_FLOAT)
		cg->simd = 1;
	if (m4 > 0) {
		snprintf(b, sizeof(b), "for (size_t r = 0; r < %lld; r += %d) {", (long long)m4, MM_MR);
		line_open(cg, b);
		emit_ikj_rows(cg, t, d, MM_MR, "r");
		line_close(cg);
	}
	if (M > m4) {
		snprintf(b, sizeof(b), "for (size_t r = %lld; r < %lld; r++) {", (long long)m4,
		         (long long)M);
		line_open(cg, b);
		emit_ikj_rows(cg, t, d, 1, "r");
		line_close(cg);
	}
}

/*
 * float16/bfloat16: one row at a time, a float block of columns on the stack
 * accumulates the row, rounded to the storage type once.
 */
static void emit_narrow_cols(struct rl_cgen *cg, const struct mm_types *t,
                             const struct mm_desc *d, const char *jofs, int64_t jn)
{
	char b[512], ini[300], ae[200], cj[64];
	cg_scratch_array(cg, "float", "acc", jn, 0);
	snprintf(cj, sizeof(cj), "%s + j", jofs);
	init_expr(cg, t, d, "r", cj, ini, sizeof(ini));
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++)", (long long)jn);
	cg_line(cg, "%s", b);
	cg_line(cg, "    acc[j] = %s;", ini);
	snprintf(b, sizeof(b), "for (size_t k = 0; k < %lld; k++) {", (long long)d->K);
	line_open(cg, b);
	a_elem(d, "r", "k", ae, sizeof(ae));
	char sc[300];
	cg_line(cg, "const float av = %s;", scaled(t, d->alpha, cg_load(cg, t->dt, ae), sc, sizeof(sc)));
	if (d->trans_b)
		cg_line(cg, "const %s *restrict br = b + k;", t->st);
	else
		cg_line(cg, "const %s *restrict br = b + k * %lld + %s;", t->st, (long long)d->N, jofs);
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++)", (long long)jn);
	cg_line(cg, "%s", b);
	if (d->trans_b) {
		char be[100];
		snprintf(be, sizeof(be), "br[(%s + j) * %lld]", jofs, (long long)d->K);
		cg_line(cg, "    acc[j] += av * %s;", cg_load(cg, t->dt, be));
	} else {
		cg_line(cg, "    acc[j] += av * %s;", cg_load(cg, t->dt, "br[j]"));
	}
	line_close(cg);
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++)", (long long)jn);
	cg_line(cg, "%s", b);
	cg_line(cg, "    y[r * %lld + %s + j] = %s;", (long long)d->N, jofs,
	        cg_assign(cg, t->dt, "acc[j]"));
	if (cg->epi) {
		snprintf(b, sizeof(b), "y + r * %lld + %s", (long long)d->N, jofs);
		snprintf(sc, sizeof(sc), "%s + r * %lld + %s", d->ybase, (long long)d->N, jofs);
		cg_epilogue(cg, b, sc, jn, d->N);
	}
}

static void emit_narrow(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d)
{
	char b[200];
	snprintf(b, sizeof(b), "for (size_t r = 0; r < %lld; r++) {", (long long)d->M);
	line_open(cg, b);
	int64_t N = d->N;
	if (N <= MM_JB_MIN) {
		emit_narrow_cols(cg, t, d, "0", N);
	} else {
		int64_t nfull = N / MM_JB, tail = N % MM_JB;
		snprintf(b, sizeof(b), "for (size_t jb = 0; jb < %lld; jb += %d) {",
		         (long long)(nfull * MM_JB), MM_JB);
		line_open(cg, b);
		emit_narrow_cols(cg, t, d, "jb", MM_JB);
		line_close(cg);
		if (tail) {
			line_open(cg, "{");
			snprintf(b, sizeof(b), "%lld", (long long)(nfull * MM_JB));
			emit_narrow_cols(cg, t, d, b, tail);
			line_close(cg);
		}
	}
	line_close(cg);
}

/*
 * transB with float/double/integers: Y(r,j) = init + alpha * dot(A'(r,:),
 * B[j,:]); MM_LANES partial sums over k keep the loop vectorizable.
 */
static void emit_dots(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d)
{
	char b[512], ae[200], ini[300];
	int64_t K = d->K, k8 = K / MM_LANES * MM_LANES;
	snprintf(b, sizeof(b), "for (size_t r = 0; r < %lld; r++) {", (long long)d->M);
	line_open(cg, b);
	bool a_contig = d->a_ks == 1;
	if (a_contig)
		cg_line(cg, "const %s *restrict ar = a + r * %lld;", t->st, (long long)d->a_rs);
	snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j++) {", (long long)d->N);
	line_open(cg, b);
	cg_line(cg, "const %s *restrict bj = b + j * %lld;", t->st, (long long)K);
	const char *ak = "ar[k]";
	if (!a_contig) {
		a_elem(d, "r", "k", ae, sizeof(ae));
		ak = ae;
	}
	char prod[400];
	if (t->wrap)
		snprintf(prod, sizeof(prod), "(%s)%s * (%s)bj[k]", t->acc, ak, t->acc);
	else
		snprintf(prod, sizeof(prod), "%s * bj[k]", ak);
	cg_line(cg, "%s s = %s;", t->acc, cg_zero(t->acc));
	if (k8 > 0 && a_contig) {
		cg_line(cg, "%s part[%d] = {0};", t->acc, MM_LANES);
		snprintf(b, sizeof(b), "for (size_t k0 = 0; k0 < %lld; k0 += %d)", (long long)k8,
		         MM_LANES);
		cg_line(cg, "%s", b);
		cg_line(cg, "    for (size_t l = 0; l < %d; l++)", MM_LANES);
		if (t->wrap)
			cg_line(cg, "        part[l] += (%s)ar[k0 + l] * (%s)bj[k0 + l];", t->acc, t->acc);
		else
			cg_line(cg, "        part[l] += ar[k0 + l] * bj[k0 + l];");
		cg_line(cg, "for (size_t l = 0; l < %d; l++)", MM_LANES);
		cg_line(cg, "    s += part[l];");
		if (K > k8) {
			snprintf(b, sizeof(b), "for (size_t k = %lld; k < %lld; k++)", (long long)k8,
			         (long long)K);
			cg_line(cg, "%s", b);
			cg_line(cg, "    s += %s;", prod);
		}
	} else {
		snprintf(b, sizeof(b), "for (size_t k = 0; k < %lld; k++)", (long long)K);
		cg_line(cg, "%s", b);
		cg_line(cg, "    s += %s;", prod);
	}
	init_expr(cg, t, d, "r", "j", ini, sizeof(ini));
	char sc[200];
	if (t->wrap)
		cg_line(cg, "y[r * %lld + j] = (%s)(%s + s);", (long long)d->N, t->st, ini);
	else
		cg_line(cg, "y[r * %lld + j] = %s + %s;", (long long)d->N, ini,
		        scaled(t, d->alpha, "s", sc, sizeof(sc)));
	line_close(cg);
	if (cg->epi) {
		char yr[64], base[160];
		snprintf(yr, sizeof(yr), "y + r * %lld", (long long)d->N);
		snprintf(base, sizeof(base), "%s + r * %lld", d->ybase, (long long)d->N);
		cg_epilogue(cg, yr, base, d->N, d->N);
	}
	line_close(cg);
}

/*
 * `rows` dot products Y(r, j + q) for q < rows, sharing each loaded vector
 * of the A row: two vector sums per row of B, added lane by lane in order
 * at the end, then the K % (2 VL) tail.
 */
static void emit_dots_rows(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d,
                           int rows)
{
	char l[600], ini[300], sc[200], cj[32], sv[16];
	size_t n;
	int64_t K = d->K;
	for (int q = 0; q < rows; q++)
		cg_line(cg, "const %s *restrict b%d = b + (j + %d) * %lld;", t->st, q, q, (long long)K);
	n = (size_t)snprintf(l, sizeof(l), "vec");
	for (int q = 0; q < rows; q++)
		n += (size_t)snprintf(l + n, sizeof(l) - n, "%s s%d0 = {0}, s%d1 = {0}", q ? "," : "", q, q);
	cg_line(cg, "%s;", l);
	cg_line(cg, "size_t k = 0;");
	line_open(cg, "for (; k + 2 * VL <= K; k += 2 * VL) {");
	cg_line(cg, "const vec x0 = *(const vecu *)(ar + k), x1 = *(const vecu *)(ar + k + VL);");
	for (int q = 0; q < rows; q++)
		cg_line(cg, "s%d0 += x0 * *(const vecu *)(b%d + k); s%d1 += x1 * *(const vecu *)(b%d + k + VL);",
		        q, q, q, q);
	line_close(cg);
	n = (size_t)snprintf(l, sizeof(l), "%s", t->acc);
	for (int q = 0; q < rows; q++)
		n += (size_t)snprintf(l + n, sizeof(l) - n, "%s d%d = %s", q ? "," : "", q,
		                      cg_zero(t->acc));
	cg_line(cg, "%s;", l);
	line_open(cg, "for (int v = 0; v < VL; v++) {");
	n = 0;
	l[0] = 0;
	for (int q = 0; q < rows; q++)
		n += (size_t)snprintf(l + n, sizeof(l) - n, "%sd%d += s%d0[v] + s%d1[v];", q ? " " : "", q,
		                      q, q);
	cg_line(cg, "%s", l);
	line_close(cg);
	/* k restarts from where the loop above left it, as a constant: from k
	 * itself, GCC 12 at -O2 warns that a dead tail (K % (2 VL) == 0, e.g. K 24
	 * with 16-byte vectors) "invokes undefined behavior" */
	line_open(cg, "for (k = K / (2 * VL) * (2 * VL); k < K; k++) {");
	n = 0;
	for (int q = 0; q < rows; q++)
		n += (size_t)snprintf(l + n, sizeof(l) - n, "%sd%d += ar[k] * b%d[k];", q ? " " : "", q, q);
	cg_line(cg, "%s", l);
	line_close(cg);
	for (int q = 0; q < rows; q++) {
		snprintf(cj, sizeof(cj), "j + %d", q);
		snprintf(sv, sizeof(sv), "d%d", q);
		init_expr(cg, t, d, "r", cj, ini, sizeof(ini));
		cg_line(cg, "y[r * %lld + j + %d] = %s + %s;", (long long)d->N, q, ini,
		        scaled(t, d->alpha, sv, sc, sizeof(sc)));
	}
}

/*
 * transB with float/double and a contiguous A row: Y(r, j) = init + alpha *
 * dot(A'(r,:), B[j,:]) for four rows of B at a time, the sums in vector
 * registers (see emit_dots_rows).
 */
static void emit_dots_vec(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d)
{
	char b[200];
	int64_t N4 = d->N / 4 * 4;
	cg_vec_types(cg, t->st, t->dt == RL_DT_DOUBLE ? 8 : 4);
	cg_line(cg, "enum { K = %lld };", (long long)d->K);
	snprintf(b, sizeof(b), "for (size_t r = 0; r < %lld; r++) {", (long long)d->M);
	line_open(cg, b);
	cg_line(cg, "const %s *restrict ar = a + r * %lld;", t->st, (long long)d->a_rs);
	if (N4 > 0) {
		snprintf(b, sizeof(b), "for (size_t j = 0; j < %lld; j += 4) {", (long long)N4);
		line_open(cg, b);
		emit_dots_rows(cg, t, d, 4);
		line_close(cg);
	}
	if (d->N > N4) {
		snprintf(b, sizeof(b), "for (size_t j = %lld; j < %lld; j++) {", (long long)N4,
		         (long long)d->N);
		line_open(cg, b);
		emit_dots_rows(cg, t, d, 1);
		line_close(cg);
	}
	if (cg->epi) {
		char yr[64], base[160];
		snprintf(yr, sizeof(yr), "y + r * %lld", (long long)d->N);
		snprintf(base, sizeof(base), "%s + r * %lld", d->ybase, (long long)d->N);
		cg_epilogue(cg, yr, base, d->N, d->N);
	}
	line_close(cg);
}

/* ---- fp32: the packed GEMM and the streaming GEMV (emit_gemm.c) ---------- */

/* Products below this many multiply-adds keep the plain kernels: packing and
 * a task split cost more than they save (attention heads of 16 x 16). */
#define MM_PACKED_MIN (64 * 64 * 32)
/* GEMV: weights below this many floats (64 KiB) keep the plain kernels */
#define MM_GEMV_MIN 16384
/* GEMV rows of B (stored N x K) per task */
#define MM_GEMV_ROWS 64

enum mm_path { MM_PLAIN, MM_GEMM, MM_GEMV_ROWS_PATH, MM_GEMV_PANELS_PATH };

/* Which kernel a fp32 product gets: the tile pass's verdict first (PLAIN
 * keeps the plain kernel), then the shape. */
static enum mm_path mm_choose(const struct rl_cgen *cg, uint32_t node, const struct mm_types *t,
                              const struct mm_desc *d, bool b_const)
{
	const struct rl_node *n = &cg->g->nodes[node];
	/* static mode: the packed and streaming kernels allocate and pack at
	 * NAME_init, which a static build does not have */
	if (t->dt != RL_DT_FLOAT || d->M == 0 || d->N == 0 || d->K == 0 ||
	    n->tile.kind == RL_TILE_PLAIN || cg->static_mode)
		return MM_PLAIN;
	if (d->M == 1) {
		if (d->K * d->N < MM_GEMV_MIN || d->a_ks != 1)
			return MM_PLAIN;
		if (d->trans_b)
			return MM_GEMV_ROWS_PATH; /* already in streaming order */
		return b_const ? MM_GEMV_PANELS_PATH : MM_PLAIN;
	}
	if ((double)d->M * (double)d->N * (double)d->K < MM_PACKED_MIN || d->N < 16 || d->K < 8)
		return MM_PLAIN;
	return MM_GEMM;
}

struct mm_init_ctx {
	const struct mm_types *t;
	const struct mm_desc *d;
};

static void mm_init_cb(struct rl_cgen *cg, void *ctx, const char *ri, const char *cj, char *e,
                       size_t n)
{
	const struct mm_init_ctx *x = ctx;
	init_expr(cg, x->t, x->d, ri, cj, e, n);
}

/*
 * The packed product for one fp32 product described by d, B being value bv
 * (packed once at init when constant and nbatch == 1). nbatch > 1: batch
 * entry g_o reads a + g_o * M*K, b + g_o * K*N and writes y + g_o * M*N.
 */
static void emit_gemm_packed(struct rl_cgen *cg, uint32_t node, const struct mm_types *t,
                             const struct mm_desc *d, uint32_t bv, int64_t nbatch)
{
	struct cg_gemm_plan pl;
	cg_gemm_plan(&cg->g->nodes[node].tile, d->M, d->N, d->K, &pl);
	/* packed at init only when stored as a constant: a value the passes know
	 * but the run computes (a large ConstantOfShape or Expand filling weights,
	 * emit.c) is in the workspace, which NAME_init has not filled */
	bool b_const = cg_value_stored_const(cg, bv) && nbatch == 1;
	int64_t b_rs = d->trans_b ? 1 : d->N, b_cs = d->trans_b ? d->K : 1;
	char bp[160] = "";
	cg_gemm_init(cg, &pl, !b_const); /* first: the packing follows the CPU's nr */
	if (b_const)
		cg_gemm_pack_b(cg, bv, d->K, d->N, b_rs, b_cs, &pl, bp, sizeof(bp));
	int64_t tasks = pl.nib * pl.njb;
	cg_line(cg, "/* packed SGEMM (runtime: emit_gemm.c): %lld x %lld outputs over K = %lld%s;",
	        (long long)d->M, (long long)d->N, (long long)d->K,
	        nbatch > 1 ? " per batch entry" : "");
	cg_line(cg, " * cache blocks mc %lld, kc %lld, nc %lld from %s; the register tile",
	        (long long)pl.mc, (long long)pl.kc, (long long)pl.nc, pl.why);
	cg_line(cg, " * (12x32 AVX-512, 6x16 AVX2, 4x16 portable) is the CPU's, chosen at init;");
	cg_line(cg, " * %lld tasks of one output block each%s, split across threads */",
	        (long long)(tasks * nbatch), b_const ? ", B packed at init" : ", B packed per block");
	cg->par_n = tasks * nbatch;
	cg->par_grain = 1;
	if (d->has_c && d->beta != 0.0)
		cg_line(cg, "const float *restrict c = X2;");
	char a[128], b[128], y[128], base[128], task[64];
	struct mm_init_ctx ctx = {t, d};
	struct cg_gemm_call c = {
		.M = d->M, .N = d->N, .K = d->K, .a = a, .a_rs = d->a_rs, .a_ks = d->a_ks,
		.alpha = d->alpha, .b = b_const ? NULL : b, .b_rs = b_rs, .b_cs = b_cs,
		.bp = b_const ? bp : NULL, .y = y, .ldy = d->N, .ybase = base, .span = d->N,
		.init = d->has_c && d->beta != 0.0 ? mm_init_cb : NULL, .ctx = &ctx,
	};
	cg_line(cg, "for (int64_t g_u = lo; g_u < hi; g_u++) {");
	cg->indent++;
	if (nbatch > 1) {
		cg_line(cg, "const int64_t g_o = g_u / %lld;", (long long)tasks);
		snprintf(a, sizeof(a), "X0 + g_o * %lld", (long long)(d->M * d->K));
		snprintf(b, sizeof(b), "X1 + g_o * %lld", (long long)(d->K * d->N));
		snprintf(y, sizeof(y), "Y0 + g_o * %lld", (long long)(d->M * d->N));
		snprintf(base, sizeof(base), "g_o * %lld", (long long)(d->M * d->N));
		snprintf(task, sizeof(task), "g_u %% %lld", (long long)tasks);
	} else {
		snprintf(a, sizeof(a), "X0");
		snprintf(b, sizeof(b), "X1");
		snprintf(y, sizeof(y), "Y0");
		snprintf(base, sizeof(base), "0");
		snprintf(task, sizeof(task), "g_u");
	}
	cg_gemm_emit_task(cg, &c, &pl, task);
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * Batch 1: Y[1,N] = alpha * a B + init, bound by reading B once. B stored
 * N x K (rows path) is read as it lies; K x N (panels path) is packed at
 * init into panels of RL_GEMV_PANEL columns. Threads split N.
 */
static void emit_gemv(struct rl_cgen *cg, uint32_t node, const struct mm_types *t,
                      const struct mm_desc *d, uint32_t bv, bool rows)
{
	const struct rl_node *n = &cg->g->nodes[node];
	char bp[160] = "X1", e[512], alpha[64];
	/* panels: two per call where N leaves each of two threads two or more
	 * (the AVX-512 kernel streams two panels at once, emit_gemm.c) */
	int64_t w = rows ? MM_GEMV_ROWS : d->N >= 4 * RL_GEMV_PANEL ? 2 * RL_GEMV_PANEL : RL_GEMV_PANEL;
	cg_gemm_runtime(cg);
	rl_buf_printf(&cg->init, "    rl_gemm_init(); /* %s: the GEMV kernel for this CPU */\n",
	              cg->kname);
	if (!rows)
		cg_gemv_pack_b(cg, bv, d->K, d->N, bp, sizeof(bp));
	snprintf(alpha, sizeof(alpha), "%s", cg_lit(RL_DT_FLOAT, d->alpha));
	if (rows)
		cg_line(cg, "/* GEMV (batch 1, runtime: emit_gemm.c): each output a dot product with a row");
	else
		cg_line(cg, "/* GEMV (batch 1, runtime: emit_gemm.c): B packed at init into panels of %d", RL_GEMV_PANEL);
	cg_line(cg, " * of B, %s: B (K %lld by N %lld) is read once, contiguously, with 8 vector",
	        rows ? "stored N x K as it lies" : "columns stored k-major", (long long)d->K,
	        (long long)d->N);
	cg_line(cg, " * accumulators%s; threads split N in runs of %lld outputs */",
	        n->tile.kind == RL_TILE_GEMV && n->tile.accum > 0 && n->tile.accum != 8
	        ? " (the runtime kernels are written for 8; the tile's count is not used)" : "",
	        (long long)w);
	cg->par_n = (d->N + w - 1) / w;
	cg->par_grain = 1;
	if (d->has_c && d->beta != 0.0)
		cg_line(cg, "const float *restrict c = X2;");
	cg_line(cg, "for (int64_t g_u = lo; g_u < hi; g_u++) {");
	cg->indent++;
	cg_line(cg, "const int64_t g_j0 = g_u * %lld, g_j1 = g_j0 + %lld < %lld ? g_j0 + %lld : %lld;",
	        (long long)w, (long long)w, (long long)d->N, (long long)w, (long long)d->N);
	cg_line(cg, "%s(X0, %s, %lld, %s, Y0, g_j0, g_j1);", rows ? "rl_sgemv_rows" : "rl_sgemv_panels",
	        bp, (long long)d->K, alpha);
	if (d->has_c && d->beta != 0.0) {
		init_expr(cg, t, d, "0", "g_j", e, sizeof(e));
		cg_line(cg, "for (int64_t g_j = g_j0; g_j < g_j1; g_j++)");
		cg_line(cg, "    Y0[g_j] = %s + Y0[g_j];", e);
	}
	if (cg->epi) {
		int64_t last = d->N - (cg->par_n - 1) * w;
		if (last != w) {
			cg_line(cg, "if (g_j1 - g_j0 == %lld) {", (long long)w);
			cg->indent++;
		}
		cg_epilogue(cg, "Y0 + g_j0", "g_j0", w, d->N);
		if (last != w) {
			cg->indent--;
			cg_line(cg, "} else {");
			cg->indent++;
			cg_epilogue(cg, "Y0 + g_j0", "g_j0", last, d->N);
			cg->indent--;
			cg_line(cg, "}");
		}
	}
	cg->indent--;
	cg_line(cg, "}");
}

/* fp32 products that take the packed or streaming kernels; false: plain */
static bool emit_fast(struct rl_cgen *cg, uint32_t node, const struct mm_types *t,
                      const struct mm_desc *d, uint32_t bv, int64_t nbatch)
{
	bool b_const = cg_value_stored_const(cg, bv); /* see emit_gemm_packed */
	switch (mm_choose(cg, node, t, d, b_const && nbatch == 1)) {
	case MM_GEMM: emit_gemm_packed(cg, node, t, d, bv, nbatch); return true;
	case MM_GEMV_ROWS_PATH:
		if (nbatch != 1)
			return false;
		emit_gemv(cg, node, t, d, bv, true);
		return true;
	case MM_GEMV_PANELS_PATH:
		if (nbatch != 1)
			return false;
		emit_gemv(cg, node, t, d, bv, false);
		return true;
	default: return false;
	}
}

static void emit_product(struct rl_cgen *cg, const struct mm_types *t, const struct mm_desc *d)
{
	if (d->M == 0 || d->N == 0)
		return;
	if (t->narrow)
		emit_narrow(cg, t, d);
	else if (d->trans_b && !t->wrap && d->a_ks == 1) {
		/* the vector extension is GNU C: other compilers (tcc) get the
		 * scalar dot products. fp32 is compiled per ISA (RL_TARGETS): at
		 * the baseline a 32-byte vector is two SSE registers and no FMA
		 * (mlp's Gemm 512 -> 10: 0.74 -> 0.28 us, one thread) */
		if (t->dt == RL_DT_FLOAT)
			cg->simd = 1;
		int ind = cg->indent;
		cg->indent = -1;
		cg_line(cg, "#if defined(__GNUC__)");
		cg->indent = ind;
		emit_dots_vec(cg, t, d);
		cg->indent = -1;
		cg_line(cg, "#else");
		cg->indent = ind;
		emit_dots(cg, t, d);
		cg->indent = -1;
		cg_line(cg, "#endif");
		cg->indent = ind;
	}
	else if (d->trans_b)
		emit_dots(cg, t, d);
	else
		emit_ikj(cg, t, d);
}

static enum rl_status emit_matmul(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *A = cg_in(cg, node, 0), *B = cg_in(cg, node, 1);
	const struct rl_value *Y = cg_out(cg, node, 0);
	struct mm_types t;
	if (!mm_types_init(&t, A->dtype) || B->dtype != A->dtype || Y->dtype != A->dtype)
		return cg_error(cg, node, "MatMul on %s x %s is not supported",
		                rl_dtype_name(A->dtype), rl_dtype_name(B->dtype));
	const struct rl_shape *sa = &A->shape, *sb = &B->shape, *sy = &Y->shape;
	if (sa->rank < 1 || sb->rank < 1)
		return cg_error(cg, node, "MatMul needs operands of rank >= 1");
	struct mm_desc d = {.alpha = 1.0};
	struct rl_shape ba = {0}, bb = {0}, by = {0};
	if (sa->rank == 1) {
		d.M = 1;
		d.K = sa->d[0].v;
	} else {
		d.M = sa->d[sa->rank - 2].v;
		d.K = sa->d[sa->rank - 1].v;
		ba.rank = sa->rank - 2;
		memcpy(ba.d, sa->d, sizeof(struct rl_dim) * (size_t)ba.rank);
	}
	int64_t kb;
	if (sb->rank == 1) {
		kb = sb->d[0].v;
		d.N = 1;
	} else {
		kb = sb->d[sb->rank - 2].v;
		d.N = sb->d[sb->rank - 1].v;
		bb.rank = sb->rank - 2;
		memcpy(bb.d, sb->d, sizeof(struct rl_dim) * (size_t)bb.rank);
	}
	if (kb != d.K)
		return cg_error(cg, node, "MatMul inner dims differ (%lld vs %lld)", (long long)d.K,
		                (long long)kb);
	by.rank = sy->rank - (sa->rank > 1) - (sb->rank > 1);
	if (by.rank < 0 || (by.rank != (ba.rank > bb.rank ? ba.rank : bb.rank)))
		return cg_error(cg, node, "MatMul output rank %d does not fit its operands", sy->rank);
	memcpy(by.d, sy->d, sizeof(struct rl_dim) * (size_t)by.rank);
	for (int i = 0; i < by.rank; i++) {
		int ia = i - (by.rank - ba.rank), ib = i - (by.rank - bb.rank);
		int64_t va = ia >= 0 ? ba.d[ia].v : 1, vb = ib >= 0 ? bb.d[ib].v : 1;
		if ((va != 1 && va != by.d[i].v) || (vb != 1 && vb != by.d[i].v))
			return cg_error(cg, node, "MatMul batch dims do not broadcast to the output");
	}
	d.a_rs = d.K;
	d.a_ks = 1;
	if (rl_shape_numel(sy) == 0)
		return RL_OK;
	if (d.K > 0 && sa->rank >= 1 && sb->rank == 2) {
		/* B without batch dims: the batch entries of A are consecutive rows */
		struct mm_desc f = d;
		f.M = rl_shape_numel(sy) / d.N;
		f.a_rs = d.K;
		snprintf(f.ybase, sizeof(f.ybase), "0");
		if (emit_fast(cg, node, &t, &f, rl_node_in(&cg->g->nodes[node], 1), 1))
			return RL_OK;
	} else if (d.K > 0 && sa->rank >= 2 && sb->rank >= 2 && ba.rank == by.rank &&
	           bb.rank == by.rank) {
		bool same = true;
		for (int i = 0; i < by.rank; i++)
			same = same && ba.d[i].v == by.d[i].v && bb.d[i].v == by.d[i].v;
		if (same && emit_fast(cg, node, &t, &d, rl_node_in(&cg->g->nodes[node], 1),
		                      rl_shape_numel(&by)))
			return RL_OK;
	}
	cg_line(cg, "/* MatMul: [%lld x %lld] x [%lld x %lld] per batch entry, i-k-j order */",
	        (long long)d.M, (long long)d.K, (long long)d.K, (long long)d.N);
	if (d.K == 0) {
		cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)rl_shape_numel(sy));
		cg_line(cg, "    Y0[q] = %s;", cg_assign(cg, t.dt, "0"));
		cg_epilogue(cg, "Y0", "0", rl_shape_numel(sy), rl_shape_numel(sy));
		return RL_OK;
	}
	const struct rl_shape *ins[2] = {&ba, &bb};
	int depth = cg_bcast_open(cg, &by, 2, ins);
	cg_line(cg, "const %s *restrict a = X0 + i0 * %lld;", t.st, (long long)(d.M * d.K));
	cg_line(cg, "const %s *restrict b = X1 + i1 * %lld;", t.st, (long long)(d.K * d.N));
	cg_line(cg, "%s *restrict y = Y0 + o * %lld;", t.st, (long long)(d.M * d.N));
	snprintf(d.ybase, sizeof(d.ybase), "o * %lld", (long long)(d.M * d.N));
	emit_product(cg, &t, &d);
	cg_loops_close(cg, depth);
	return RL_OK;
}

static enum rl_status emit_gemm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *A = cg_in(cg, node, 0), *B = cg_in(cg, node, 1);
	const struct rl_value *C = cg_in(cg, node, 2), *Y = cg_out(cg, node, 0);
	struct mm_types t;
	if (!mm_types_init(&t, A->dtype) || B->dtype != A->dtype || Y->dtype != A->dtype ||
	    (C && C->dtype != A->dtype))
		return cg_error(cg, node, "Gemm on %s is not supported", rl_dtype_name(A->dtype));
	if (A->shape.rank != 2 || B->shape.rank != 2 || Y->shape.rank != 2)
		return cg_error(cg, node, "Gemm needs 2-D A and B");
	bool ta = rl_node_attr_int(n, "transA", 0) != 0;
	bool tb = rl_node_attr_int(n, "transB", 0) != 0;
	struct mm_desc d;
	memset(&d, 0, sizeof(d));
	d.alpha = rl_node_attr_float(n, "alpha", 1.0);
	d.beta = rl_node_attr_float(n, "beta", 1.0);
	d.M = ta ? A->shape.d[1].v : A->shape.d[0].v;
	d.K = ta ? A->shape.d[0].v : A->shape.d[1].v;
	int64_t kb = tb ? B->shape.d[1].v : B->shape.d[0].v;
	d.N = tb ? B->shape.d[0].v : B->shape.d[1].v;
	if (kb != d.K || Y->shape.d[0].v != d.M || Y->shape.d[1].v != d.N)
		return cg_error(cg, node, "Gemm shapes do not agree");
	d.a_rs = ta ? 1 : d.K;
	d.a_ks = ta ? d.M : 1;
	d.trans_b = tb;
	snprintf(d.ybase, sizeof(d.ybase), "0");
	if (C) {
		const struct rl_shape *sc = &C->shape;
		d.has_c = true;
		if (sc->rank > 2)
			return cg_error(cg, node, "Gemm C of rank %d", sc->rank);
		int64_t cr = sc->rank == 2 ? sc->d[0].v : 1;
		int64_t cc = sc->rank >= 1 ? sc->d[sc->rank - 1].v : 1;
		if ((cr != 1 && cr != d.M) || (cc != 1 && cc != d.N))
			return cg_error(cg, node, "Gemm C does not broadcast to [%lld x %lld]",
			                (long long)d.M, (long long)d.N);
		d.c_rs = cr == 1 ? 0 : cc;
		d.c_cs = cc == 1 ? 0 : 1;
	}
	if (t.wrap && (d.alpha != 1.0 || (d.has_c && d.beta != 1.0 && d.beta != 0.0)))
		return cg_error(cg, node, "integer Gemm with alpha or beta other than 1 is not supported");
	if (d.M == 0 || d.N == 0)
		return RL_OK;
	if (d.K > 0 && emit_fast(cg, node, &t, &d, rl_node_in(n, 1), 1))
		return RL_OK;
	cg_line(cg, "/* Gemm: Y = %g * A%s[%lld x %lld] x B%s[%lld x %lld]%s */", d.alpha,
	        ta ? "'" : "", (long long)d.M, (long long)d.K, tb ? "'" : "", (long long)d.K,
	        (long long)d.N, d.has_c && d.beta != 0.0 ? " + beta * C" : "");
	cg_line(cg, "const %s *restrict a = X0;", t.st);
	cg_line(cg, "const %s *restrict b = X1;", t.st);
	if (d.has_c)
		cg_line(cg, "const %s *restrict c = X2;", t.st);
	cg_line(cg, "%s *restrict y = Y0;", t.st);
	if (d.K == 0) {
		/* empty sum: only beta * C */
		char ini[300];
		cg_line(cg, "for (size_t r = 0; r < %lld; r++)", (long long)d.M);
		cg_line(cg, "    for (size_t j = 0; j < %lld; j++)", (long long)d.N);
		init_expr(cg, &t, &d, "r", "j", ini, sizeof(ini));
		cg_line(cg, "        y[r * %lld + j] = %s;", (long long)d.N, cg_assign(cg, t.dt, ini));
		if (d.has_c)
			cg_line(cg, "(void)c;");
		cg_line(cg, "(void)a;");
		cg_line(cg, "(void)b;");
		cg_epilogue(cg, "y", "0", d.M * d.N, d.M * d.N);
		return RL_OK;
	}
	if (d.has_c && d.beta == 0.0)
		cg_line(cg, "(void)c;");
	emit_product(cg, &t, &d);
	return RL_OK;
}

enum rl_status rl_emit_c_matmul(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_MatMul: return emit_matmul(cg, node);
	case RL_OP_Gemm: return emit_gemm(cg, node);
	case RL_OP_QuantMatMul: return rl_emit_c_qgemm(cg, node);
	default: return cg_error(cg, node, "not a matmul-family operator");
	}
}
