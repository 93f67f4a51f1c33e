/*
 * emit_attn.c - C kernels for the attention family (ir/fam_attn.c):
 * Attention, FlexAttention, LinearAttention, RotaryEmbedding,
 * CausalConvWithState, GroupNormalization, Swish, TensorScatter and
 * AffineGrid.
 *
 * Attention and FlexAttention run one query row at a time: the row's scores
 * against every key row (a dot product of Dk), the softcap, the masks
 * (attn_mask, is_causal, nonpad_kv_seqlen) as additions of -inf, a softmax
 * over the row and the weighted sum of the value rows. Nothing of size
 * Sq x T is materialized: a row's scores live in a local array, so the
 * working set is one query, the scores and one output row, and the key and
 * value rows of the head stream from cache. Rows split across threads; the
 * present_key/present_value copies are made by the iteration of query row 0
 * of the first q head of each kv head, so every output is written by exactly
 * one iteration. Float32 rows use the vector runtime: the dot products
 * accumulate in half-vector lanes (rl_vh: emit_rt.c says why), the softmax uses rl_vexp over the row padded to
 * whole vectors with -inf; half inputs compute in float, double in double.
 *
 * Grouped-query attention maps q head h to kv head h / (Hq / Hkv), as the
 * reference's np.repeat does. 3-D inputs are read in place as
 * [B, S, H, D] (the reshape and transpose of the reference are strides).
 *
 * LinearAttention keeps the Dk x Dv state of one (batch, kv head) in a local
 * array and runs the recurrence over time in order (the state depends on
 * every earlier step); batches and kv heads split across threads.
 */
#include "emit_impl.h"

#include <math.h>
#include <string.h>

#define VW 16 /* RL_VW */
#define ATTN_MIN_PAR (1 << 14) /* multiply-adds per thread at least */

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

/* load of a storage element as compute type (a copy, safe to keep) */
static const char *ld(struct rl_cgen *cg, enum rl_dtype dt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static const char *ld(struct rl_cgen *cg, enum rl_dtype dt, const char *fmt, ...)
{
	static char b[8][256];
	static int k;
	char e[192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e, sizeof(e), fmt, ap);
	va_end(ap);
	k = (k + 1) % 8;
	snprintf(b[k], sizeof(b[k]), "%s", cg_load(cg, dt, e));
	return b[k];
}

static const char *st(struct rl_cgen *cg, enum rl_dtype dt, const char *e)
{
	static char b[8][256];
	static int k;
	k = (k + 1) % 8;
	snprintf(b[k], sizeof(b[k]), "%s", cg_assign(cg, dt, e));
	return b[k];
}

static bool is_f(const char *ct)
{
	return strcmp(ct, "float") == 0;
}

static const char *mfn(const char *ct, const char *f)
{
	static char b[8][16];
	static int k;
	k = (k + 1) % 8;
	snprintf(b[k], sizeof(b[k]), "%s%s", f, is_f(ct) ? "f" : "");
	return b[k];
}

static const char *lit(const char *ct, double x)
{
	return cg_lit(is_f(ct) ? RL_DT_FLOAT : RL_DT_DOUBLE, x);
}

static long long ll(int64_t v)
{
	return (long long)v;
}

/*
 * Softmax in place over s[0, n) of compute type ct, where `n` is a C
 * expression and s has room for `cap` elements (a multiple of RL_VW when
 * vec). With vec (float) the row is padded with -inf to whole vectors and
 * runs through rl_vexpz (no denormal results: emit_math.c); the scalar code under #else uses expf.
 */
static void row_softmax(struct rl_cgen *cg, const char *ct, const char *n, int64_t cap, bool vec)
{
	if (vec) {
		cg_vmath_need(cg, RL_VM_EXPZ);
		cg->simd = 1;
		rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "const size_t nv = (%s + RL_VW - 1) / RL_VW * RL_VW;", n);
		cg_line(cg, "for (size_t j = %s; j < nv; j++)", n);
		cg_line(cg, "    s[j] = -INFINITY;");
		/* running maximum and sum in half vectors (rl_vh, see emit_rt.c) */
		cg_line(cg, "rl_vh m0 = *(const rl_vhu *)s, m1 = *(const rl_vhu *)(s + RL_VH);");
		cg_line(cg, "for (size_t j = RL_VW; j < nv; j += RL_VW) {");
		cg_line(cg, "    const rl_vh v0 = *(const rl_vhu *)(s + j), v1 = *(const rl_vhu *)(s + j + RL_VH);");
		cg_line(cg, "    rl_vhif(&m0, RL_GT, &v0, &m0, &v0, &m0);");
		cg_line(cg, "    rl_vhif(&m1, RL_GT, &v1, &m1, &v1, &m1);");
		cg_line(cg, "}");
		cg_line(cg, "rl_vhif(&m0, RL_GT, &m1, &m0, &m1, &m0);");
		cg_line(cg, "float m = m0[0];");
		cg_line(cg, "for (int l = 1; l < RL_VH; l++)");
		cg_line(cg, "    m = m0[l] > m ? m0[l] : m;");
		cg_line(cg, "rl_vh s0 = {0}, s1 = {0};");
		cg_exp_sum_pass(cg, "s", "s", "nv");
		cg_line(cg, "s0 += s1;");
		cg_line(cg, "float sum = 0.0f;");
		cg_line(cg, "for (int l = 0; l < RL_VH; l++)");
		cg_line(cg, "    sum += s0[l];");
		cg_line(cg, "const float inv = 1.0f / sum;");
		cg_row_pass(cg, "s", "*(const rl_vfu *)(s + i) * inv", "nv");
		cg->indent--;
		cg_line(cg, "}");
		rl_buf_printf(&cg->body, "#else\n");
	}
	(void)cap;
	cg_line(cg, "{");
	cg->indent++;
	cg_line(cg, "%s m = s[0];", ct);
	cg_line(cg, "for (size_t j = 1; j < %s; j++)", n);
	cg_line(cg, "    m = s[j] > m ? s[j] : m;");
	cg_line(cg, "%s sum = %s;", ct, cg_zero(ct));
	cg_line(cg, "for (size_t j = 0; j < %s; j++) {", n);
	cg_line(cg, "    s[j] = %s(s[j] - m);", mfn(ct, "exp"));
	cg_line(cg, "    sum += s[j];");
	cg_line(cg, "}");
	cg_line(cg, "const %s inv = %s / sum;", ct, lit(ct, 1));
	cg_line(cg, "for (size_t j = 0; j < %s; j++)", n);
	cg_line(cg, "    s[j] *= inv;");
	cg->indent--;
	cg_line(cg, "}");
	if (vec)
		rl_buf_printf(&cg->body, "#endif\n");
}

/* ---- Attention and FlexAttention ------------------------------------------ */

struct attn_geom {
	bool three;               /* 3-D inputs [B, S, H*D] */
	int64_t B, Hq, Hkv, G, Sq, Skv, P, T, Dk, Dv;
	int64_t qs[3], ks[3], vs[3], ys[3]; /* strides of batch, head, row */
};

static void strides_of(bool three, int64_t H, int64_t S, int64_t D, int64_t *s)
{
	if (three) {
		s[0] = S * H * D;
		s[1] = D;
		s[2] = H * D;
	} else {
		s[0] = H * S * D;
		s[1] = S * D;
		s[2] = D;
	}
}

/* What the row and block writers of an Attention kernel share. */
struct attn_emit {
	struct attn_geom a;
	enum rl_dtype dt, ydt;       /* Q/K/V storage, Y */
	const char *ct, *sty;        /* compute and storage C types */
	const struct rl_value *mask, *nonpad, *yqk;
	int64_t ms[3], M, mode, cap, QB, TB;
	double scale, softcap;
	bool causal, all, vec, blocked;
};

/* `kr` (or `vr` for values): the storage row of key j of kv head kh, from
 * past_key/past_value for j < P, else from K/V. */
static void attn_kv_row(struct rl_cgen *cg, const struct attn_emit *e, bool val, const char *j)
{
	const struct attn_geom *a = &e->a;
	const int64_t *sd = val ? a->vs : a->ks;
	int64_t D = val ? a->Dv : a->Dk;
	const char *nm = val ? "vr" : "kr", *past = val ? "X5" : "X4", *cur = val ? "X2" : "X1";
	if (a->P)
		cg_line(cg, "const %s *%s = %s < %lld ? %s + ((b * %lld + kh) * %lld + %s) * %lld : %s + "
		        "b * %lld + kh * %lld + (%s - %lld) * %lld;", e->sty, nm, j, ll(a->P), past,
		        ll(a->Hkv), ll(a->P), j, ll(D), cur, ll(sd[0]), ll(sd[1]), j, ll(a->P), ll(sd[2]));
	else
		cg_line(cg, "const %s *%s = %s + b * %lld + kh * %lld + %s * %lld;", e->sty, nm, cur,
		        ll(sd[0]), ll(sd[1]), j, ll(sd[2]));
}

/* jc: the keys that take part for query row i (causal: up to the diagonal);
 * jq: the keys scored (all T when qk_matmul_output wants the raw scores). */
static void attn_limits(struct rl_cgen *cg, const struct attn_emit *e)
{
	const struct attn_geom *a = &e->a;
	if (e->causal)
		cg_line(cg, "const size_t jc = i + %lld < %lld ? i + %lld : %lld;", ll(a->P + 1), ll(a->T),
		        ll(a->P + 1), ll(a->T));
	else
		cg_line(cg, "const size_t jc = %lld;", ll(a->T));
	if (e->all)
		cg_line(cg, "const size_t jq = %lld;", ll(a->T));
	else
		cg_line(cg, "const size_t jq = jc;");
	cg_line(cg, "(void)jq;");
}

/*
 * The scores s[0, jq) of query row i (r its flat row, b, h in scope) to
 * probabilities: softcap, the qk_matmul_output modes, the masks as -inf,
 * the softmax over [0, jc); s[jc, jp) are zeroed for the value loop.
 */
static void attn_post(struct rl_cgen *cg, const struct attn_emit *e, bool vec, const char *jp)
{
	const struct attn_geom *a = &e->a;
	const char *ct = e->ct;
	if (e->softcap > 0) {
		cg->need_tanh = is_f(ct);
		cg_line(cg, "for (size_t j = 0; j < jq; j++)");
		cg_line(cg, "    s[j] = %s * %s(s[j] * %s);", lit(ct, e->softcap),
		        is_f(ct) ? "rl_tanhf" : "tanh", lit(ct, 1.0 / e->softcap));
	}
	if (e->yqk && e->mode < 2) {
		cg_line(cg, "for (size_t j = 0; j < %lld; j++)", ll(a->T));
		cg_line(cg, "    Y3[r * %lld + j] = %s;", ll(a->T), st(cg, e->yqk->dtype, "s[j]"));
	}
	if (e->mask) {
		char mi[160];
		snprintf(mi, sizeof(mi), "b * %lld + h * %lld + i * %lld + j", ll(e->ms[0]), ll(e->ms[1]),
		         ll(e->ms[2]));
		const char *lim = "jc";
		char lb[64];
		if (e->M < a->T) {
			snprintf(lb, sizeof(lb), "(jc < %lld ? jc : %lld)", ll(e->M), ll(e->M));
			lim = lb;
		}
		cg_line(cg, "for (size_t j = 0; j < %s; j++)", lim);
		if (e->mask->dtype == RL_DT_BOOL)
			cg_line(cg, "    s[j] = X3[%s] ? s[j] : -INFINITY;", mi);
		else
			cg_line(cg, "    s[j] += %s;", ld(cg, e->mask->dtype, "X3[%s]", mi));
		if (e->M < a->T) {
			cg_line(cg, "for (size_t j = %lld; j < jc; j++)", ll(e->M));
			cg_line(cg, "    s[j] = -INFINITY;");
		}
	}
	if (e->nonpad) {
		cg_line(cg, "for (size_t j = X6[b] < 0 ? 0 : (size_t)X6[b]; j < jc; j++)");
		cg_line(cg, "    s[j] = -INFINITY;");
	}
	if (e->yqk && e->mode == 2) {
		cg_line(cg, "for (size_t j = 0; j < %lld; j++)", ll(a->T));
		cg_line(cg, "    Y3[r * %lld + j] = %s;", ll(a->T),
		        st(cg, e->yqk->dtype, e->causal ? "j < jc ? s[j] : -INFINITY" : "s[j]"));
	}
	row_softmax(cg, ct, "jc", e->cap, vec);
	if (e->yqk && e->mode == 3) {
		cg_line(cg, "for (size_t j = 0; j < %lld; j++)", ll(a->T));
		cg_line(cg, "    Y3[r * %lld + j] = %s;", ll(a->T),
		        st(cg, e->yqk->dtype, e->causal ? "j < jc ? s[j] : 0" : "s[j]"));
	}
	if (jp) {
		cg_line(cg, "for (size_t j = jc; j < %s; j++)", jp);
		cg_line(cg, "    s[j] = %s;", cg_zero(ct));
	}
}

/* One query row i at a time (any float dtype; the portable path). */
static void attn_row(struct rl_cgen *cg, const struct attn_emit *e, bool vec)
{
	const struct attn_geom *a = &e->a;
	const char *ct = e->ct;
	cg_line(cg, "const size_t r = (b * %lld + h) * %lld + i;", ll(a->Hq), ll(a->Sq));
	cg_line(cg, "(void)r;");
	cg_scratch_array(cg, ct, "qf", a->Dk, 0);
	cg_scratch_array(cg, ct, "s", vec ? e->cap : a->T, 0);
	cg_scratch_array(cg, ct, "o", a->Dv, 0);
	cg_line(cg, "const %s *q = X0 + b * %lld + h * %lld + i * %lld;", e->sty, ll(a->qs[0]),
	        ll(a->qs[1]), ll(a->qs[2]));
	cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(a->Dk));
	cg_line(cg, "    qf[d] = %s * %s;", ld(cg, e->dt, "q[d]"), lit(ct, e->scale));
	attn_limits(cg, e);
	cg_line(cg, "for (size_t j = 0; j < jq; j++) {");
	cg->indent++;
	attn_kv_row(cg, e, false, "j");
	cg_line(cg, "%s acc = %s;", ct, cg_zero(ct));
	cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(a->Dk));
	cg_line(cg, "    acc += qf[d] * %s;", ld(cg, e->dt, "kr[d]"));
	cg_line(cg, "s[j] = acc;");
	cg->indent--;
	cg_line(cg, "}");
	attn_post(cg, e, vec, NULL);
	cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(a->Dv));
	cg_line(cg, "    o[d] = %s;", cg_zero(ct));
	cg_line(cg, "for (size_t j = 0; j < jc; j++) {");
	cg->indent++;
	attn_kv_row(cg, e, true, "j");
	cg_line(cg, "const %s p = s[j];", ct);
	cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(a->Dv));
	cg_line(cg, "    o[d] += p * %s;", ld(cg, e->dt, "vr[d]"));
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "%s *yr = Y0 + b * %lld + h * %lld + i * %lld;", cg_ctype(e->ydt), ll(a->ys[0]),
	        ll(a->ys[1]), ll(a->ys[2]));
	cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(a->Dv));
	cg_line(cg, "    yr[d] = %s;", st(cg, e->ydt, "o[d]"));
}

/*
 * Float32 rows [i0, i1) of one head together: key chunks of TB rows are
 * transposed into kt[Dk][TB] so each query's scores for the chunk are
 * vector multiply-adds over keys (no horizontal sums), four vectors at a
 * time to cover the FMA latency; every value row is then read once for the
 * whole block (o[qi][:] += p * v, contiguous in d).
 */
static void attn_blocked(struct rl_cgen *cg, const struct attn_emit *e)
{
	const struct attn_geom *a = &e->a;
	int64_t QB = e->QB, TB = e->TB;
	cg_line(cg, "const size_t nq = i1 - i0;");
	cg_scratch_array(cg, "float", "qf", QB, a->Dk);
	cg_scratch_array(cg, "float", "sb", QB, e->cap);
	cg_line(cg, "for (size_t qi = 0; qi < nq; qi++) {");
	cg_line(cg, "    const float *q = X0 + b * %lld + h * %lld + (i0 + qi) * %lld;", ll(a->qs[0]),
	        ll(a->qs[1]), ll(a->qs[2]));
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++)", ll(a->Dk));
	cg_line(cg, "        qf[qi][d] = q[d] * %s;", cg_lit(RL_DT_FLOAT, e->scale));
	cg_line(cg, "}");
	/* keys any row of the block scores, and keys any row uses */
	if (e->causal)
		cg_line(cg, "const size_t jp = i1 + %lld < %lld ? i1 + %lld : %lld;", ll(a->P), ll(a->T),
		        ll(a->P), ll(a->T));
	else
		cg_line(cg, "const size_t jp = %lld;", ll(a->T));
	if (e->all)
		cg_line(cg, "const size_t jend = %lld;", ll(a->T));
	else
		cg_line(cg, "const size_t jend = jp;");
	cg_line(cg, "for (size_t j0 = 0; j0 < jend; j0 += %lld) {", ll(TB));
	cg->indent++;
	cg_line(cg, "const size_t jn = jend - j0 < %lld ? jend - j0 : %lld;", ll(TB), ll(TB));
	cg_line(cg, "const size_t jv = (jn + RL_VW - 1) / RL_VW * RL_VW;");
	cg_scratch_array(cg, "float", "kt", a->Dk, TB);
	cg_line(cg, "for (size_t jj = 0; jj < jn; jj++) {");
	cg->indent++;
	cg_line(cg, "const size_t j = j0 + jj;");
	attn_kv_row(cg, e, false, "j");
	cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(a->Dk));
	cg_line(cg, "    kt[d][jj] = kr[d];");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (size_t jj = jn; jj < jv; jj++)");
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++)", ll(a->Dk));
	cg_line(cg, "        kt[d][jj] = 0.0f;");
	cg_line(cg, "for (size_t qi = 0; qi < nq; qi++) {");
	cg->indent++;
	cg_line(cg, "float *sr = sb[qi] + j0;");
	cg_line(cg, "size_t c = 0;");
	/* eight half-vector accumulators (rl_vh, see emit_rt.c), 64 keys */
	cg_line(cg, "for (; c + 8 * RL_VH <= jv; c += 8 * RL_VH) {");
	cg_line(cg, "    rl_vh a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, "
	        "a7 = {0};");
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++) {", ll(a->Dk));
	cg_line(cg, "        const float qd = qf[qi][d];");
	cg_line(cg, "        const float *kd = kt[d] + c;");
	for (int k = 0; k < 8; k++)
		cg_line(cg, "        a%d += qd * *(const rl_vhu *)(kd%s);", k, cg_vh_off(k));
	cg_line(cg, "    }");
	for (int k = 0; k < 8; k++)
		cg_line(cg, "    *(rl_vhu *)(sr + c%s) = a%d;", cg_vh_off(k), k);
	cg_line(cg, "}");
	cg_line(cg, "for (; c < jv; c += RL_VW) {");
	cg_line(cg, "    rl_vh a0 = {0}, a1 = {0};");
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++) {", ll(a->Dk));
	cg_line(cg, "        a0 += qf[qi][d] * *(const rl_vhu *)(kt[d] + c);");
	cg_line(cg, "        a1 += qf[qi][d] * *(const rl_vhu *)(kt[d] + c + RL_VH);");
	cg_line(cg, "    }");
	cg_line(cg, "    *(rl_vhu *)(sr + c) = a0;");
	cg_line(cg, "    *(rl_vhu *)(sr + c + RL_VH) = a1;");
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	/* per row: masks, softmax */
	cg_line(cg, "for (size_t qi = 0; qi < nq; qi++) {");
	cg->indent++;
	cg_line(cg, "const size_t i = i0 + qi, r = (b * %lld + h) * %lld + i;", ll(a->Hq), ll(a->Sq));
	cg_line(cg, "float *s = sb[qi];");
	cg_line(cg, "(void)r;");
	attn_limits(cg, e);
	attn_post(cg, e, true, "jp");
	cg->indent--;
	cg_line(cg, "}");
	/* values: with Dv a multiple of RL_VW (up to 8 vectors) each row's output
	 * stays in registers over the keys; else every value row is read once
	 * for the block and the outputs accumulate in memory */
	if (a->Dv % VW == 0 && a->Dv / VW <= 8) {
		/* half vectors (rl_vh, see emit_rt.c), at most 8 of them live at
		 * once (the AVX2 clone has 16 registers): a wider row is done in
		 * column passes of 64 */
		int nh = (int)(a->Dv / (VW / 2));
		cg_line(cg, "for (size_t qi = 0; qi < nq; qi++) {");
		cg->indent++;
		cg_line(cg, "float *yr = Y0 + b * %lld + h * %lld + (i0 + qi) * %lld;", ll(a->ys[0]),
		        ll(a->ys[1]), ll(a->ys[2]));
		for (int c0 = 0; c0 < nh; c0 += 8) {
			int cn = nh - c0 < 8 ? nh - c0 : 8;
			cg_line(cg, "{");
			cg->indent++;
			char decl[256] = "";
			size_t pl = 0;
			for (int k = 0; k < cn; k++)
				pl += (size_t)snprintf(decl + pl, sizeof(decl) - pl, "%so%d = {0}",
				                       k ? ", " : "", k);
			cg_line(cg, "rl_vh %s;", decl);
			cg_line(cg, "for (size_t j = 0; j < jp; j++) {");
			cg->indent++;
			attn_kv_row(cg, e, true, "j");
			cg_line(cg, "const float p = sb[qi][j];");
			for (int k = 0; k < cn; k++)
				cg_line(cg, "o%d += p * *(const rl_vhu *)(vr + %d);", k, (c0 + k) * VW / 2);
			cg->indent--;
			cg_line(cg, "}");
			for (int k = 0; k < cn; k++)
				cg_line(cg, "*(rl_vhu *)(yr + %d) = o%d;", (c0 + k) * VW / 2, k);
			cg->indent--;
			cg_line(cg, "}");
		}
		cg->indent--;
		cg_line(cg, "}");
		return;
	}
	cg_scratch_array(cg, "float", "o", QB, a->Dv);
	cg_line(cg, "for (size_t qi = 0; qi < nq; qi++)");
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++)", ll(a->Dv));
	cg_line(cg, "        o[qi][d] = 0.0f;");
	cg_line(cg, "for (size_t j = 0; j < jp; j++) {");
	cg->indent++;
	attn_kv_row(cg, e, true, "j");
	cg_line(cg, "for (size_t qi = 0; qi < nq; qi++) {");
	cg_line(cg, "    const float p = sb[qi][j];");
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++)", ll(a->Dv));
	cg_line(cg, "        o[qi][d] += p * vr[d];");
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (size_t qi = 0; qi < nq; qi++) {");
	cg_line(cg, "    float *yr = Y0 + b * %lld + h * %lld + (i0 + qi) * %lld;", ll(a->ys[0]),
	        ll(a->ys[1]), ll(a->ys[2]));
	cg_line(cg, "    for (size_t d = 0; d < %lld; d++)", ll(a->Dv));
	cg_line(cg, "        yr[d] = o[qi][d];");
	cg_line(cg, "}");
}

static enum rl_status emit_attention(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	bool flex = n->op == RL_OP_FlexAttention;
	const struct rl_value *q = cg_in(cg, node, 0), *k = cg_in(cg, node, 1), *v = cg_in(cg, node, 2);
	const struct rl_value *mask = flex ? NULL : cg_in(cg, node, 3);
	const struct rl_value *pk = flex ? NULL : cg_in(cg, node, 4);
	const struct rl_value *pv = flex ? NULL : cg_in(cg, node, 5);
	const struct rl_value *nonpad = flex ? NULL : cg_in(cg, node, 6);
	const struct rl_value *y = cg_out(cg, node, 0);
	const struct rl_value *yk = cg_out(cg, node, 1), *yv = cg_out(cg, node, 2);
	const struct rl_value *yqk = cg_out(cg, node, 3);
	/* the ONNX reader writes a FlexAttention with modifiers out as plain
	 * nodes (frontends/onnx/onnx_subgraph.c); a graph built otherwise that
	 * still carries one is refused rather than run without it */
	if (flex && (rl_node_attr(n, "score_mod") || rl_node_attr(n, "prob_mod")))
		return cg_error(cg, node, "score_mod and prob_mod graphs are applied only when the "
		                "ONNX reader writes the node out");
	if (!rl_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
		return cg_error(cg, node, "Q, K and V must share one float dtype");
	if ((pk == NULL) != (pv == NULL))
		return cg_error(cg, node, "past_key and past_value come together");
	struct attn_geom a = {.three = q->shape.rank == 3};
	a.B = q->shape.d[0].v;
	if (a.three) {
		a.Hq = rl_node_attr_int(n, "q_num_heads", 0);
		a.Hkv = rl_node_attr_int(n, "kv_num_heads", 0);
		a.Sq = q->shape.d[1].v;
		a.Skv = k->shape.d[1].v;
		a.Dk = k->shape.d[2].v / a.Hkv;
		a.Dv = v->shape.d[2].v / a.Hkv;
		if (q->shape.d[2].v != a.Hq * a.Dk)
			return cg_error(cg, node, "Q's hidden size %lld is not q_num_heads x %lld",
			                ll(q->shape.d[2].v), ll(a.Dk));
	} else {
		a.Hq = q->shape.d[1].v;
		a.Hkv = k->shape.d[1].v;
		a.Sq = q->shape.d[2].v;
		a.Skv = k->shape.d[2].v;
		a.Dk = k->shape.d[3].v;
		a.Dv = v->shape.d[3].v;
		if (q->shape.d[3].v != a.Dk)
			return cg_error(cg, node, "Q and K head sizes differ (%lld, %lld)",
			                ll(q->shape.d[3].v), ll(a.Dk));
	}
	if (a.Hkv <= 0 || a.Hq % a.Hkv != 0)
		return cg_error(cg, node, "q heads (%lld) must be a multiple of kv heads (%lld)",
		                ll(a.Hq), ll(a.Hkv));
	a.G = a.Hq / a.Hkv;
	a.P = pk ? pk->shape.d[2].v : 0;
	a.T = a.P + a.Skv;
	strides_of(a.three, a.Hq, a.Sq, a.Dk, a.qs);
	strides_of(a.three, a.Hkv, a.Skv, a.Dk, a.ks);
	strides_of(a.three, a.Hkv, a.Skv, a.Dv, a.vs);
	strides_of(a.three, a.Hq, a.Sq, a.Dv, a.ys);
	if (pk && (pk->dtype != k->dtype || pv->dtype != v->dtype || pk->shape.rank != 4 ||
	           pv->shape.rank != 4 || pk->shape.d[3].v != a.Dk || pv->shape.d[3].v != a.Dv ||
	           pv->shape.d[2].v != a.P || pk->shape.d[1].v != a.Hkv))
		return cg_error(cg, node, "past_key/past_value must be [B, kv heads, P, head size] "
		                "of K's and V's dtype");
	double scale = rl_node_attr_float(n, "scale", 0);
	if (!rl_node_attr(n, "scale") || (flex && scale == 0))
		scale = 1.0 / sqrt((double)a.Dk);
	double softcap = flex ? 0 : rl_node_attr_float(n, "softcap", 0);
	bool causal = !flex && rl_node_attr_int(n, "is_causal", 0) != 0;
	int64_t mode = rl_node_attr_int(n, "qk_matmul_output_mode", 0);
	if (yqk && (mode < 0 || mode > 3))
		return cg_error(cg, node, "qk_matmul_output_mode %lld is not 0 to 3", ll(mode));
	/* attn_mask: broadcast to [B, Hq, Sq, M], M <= T (the rest is masked) */
	int64_t ms[3] = {0, 0, 0}, M = 0;
	if (mask) {
		int mr = mask->shape.rank;
		if (mr < 2 || mr > 4)
			return cg_error(cg, node, "attn_mask must have rank 2 to 4");
		M = mask->shape.d[mr - 1].v;
		int64_t full[4] = {a.B, a.Hq, a.Sq, M}, stride = M;
		for (int d = mr - 2; d >= 0; d--) {
			int64_t dim = mask->shape.d[d].v, fd = full[4 - mr + d];
			if (dim != 1 && dim != fd)
				return cg_error(cg, node, "attn_mask dim %d (%lld) does not broadcast to %lld",
				                d, ll(dim), ll(fd));
			ms[4 - mr + d] = dim == 1 ? 0 : stride;
			stride *= dim;
		}
		if (M > a.T)
			return cg_error(cg, node, "attn_mask's last dim %lld exceeds the %lld keys", ll(M),
			                ll(a.T));
	}
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	struct attn_emit e = {
		.a = a, .dt = q->dtype, .ct = cg_comptype(q->dtype), .sty = cg_ctype(q->dtype),
		.mask = mask, .nonpad = nonpad, .yqk = yqk, .ydt = y->dtype, .M = M, .mode = mode,
		.scale = scale, .softcap = softcap, .causal = causal,
	};
	memcpy(e.ms, ms, sizeof(ms));
	e.vec = is_f(e.ct);
	e.all = yqk && mode < 2 && causal;
	e.cap = e.vec ? (a.T + VW - 1) / VW * VW : a.T;
	/* the blocked float32 path: QB query rows share each key chunk and value row */
	e.blocked = e.dt == RL_DT_FLOAT && y->dtype == RL_DT_FLOAT && a.Dk >= 1;
	/* 32 rows amortize the key transposition (scalar stores) over 32 rows of
	 * vector multiply-adds; fewer when the block's scores would pass 256 KiB */
	e.QB = a.Sq < 32 ? a.Sq : 32;
	while (e.QB > 1 && e.QB * e.cap * 4 > (256 << 10))
		e.QB /= 2;
	e.TB = a.Dk <= 128 ? 128 : 64;
	if (e.QB < 1)
		e.QB = 1;
	int64_t nqb = (a.Sq + e.QB - 1) / e.QB;
	cg_line(cg, "/* %s: %lld heads x %lld query rows of %lld (kv heads %lld) against "
	        "%lld keys%s%s%s; scale %.9g%s; blocks of %lld query rows */", rl_op_table[n->op].name,
	        ll(a.B * a.Hq), ll(a.Sq), ll(a.Dk), ll(a.Hkv), ll(a.T), mask ? ", attn_mask" : "",
	        causal ? ", causal" : "", nonpad ? ", nonpad_kv_seqlen" : "", scale,
	        softcap > 0 ? ", softcap" : "", ll(e.QB));
	cg_rows_open(cg, "tb", a.B * a.Hq * nqb, e.QB * a.T * (a.Dk + a.Dv), ATTN_MIN_PAR);
	cg_line(cg, "const size_t b = tb / %lld, h = tb / %lld %% %lld, kh = h / %lld;",
	        ll(a.Hq * nqb), ll(nqb), ll(a.Hq), ll(a.G));
	cg_line(cg, "const size_t i0 = tb %% %lld * %lld, i1 = i0 + %lld < %lld ? i0 + %lld : %lld;",
	        ll(nqb), ll(e.QB), ll(e.QB), ll(a.Sq), ll(e.QB), ll(a.Sq));
	cg_line(cg, "(void)kh;");
	/* present_key / present_value: once per (b, kv head) */
	if (yk || yv) {
		cg_line(cg, "if (i0 == 0 && h %% %lld == 0) {", ll(a.G));
		cg->indent++;
		cg_line(cg, "for (size_t t = 0; t < %lld; t++) {", ll(a.T));
		cg->indent++;
		for (int w = 0; w < 2; w++) {
			const struct rl_value *out = w ? yv : yk;
			if (!out)
				continue;
			int64_t D = w ? a.Dv : a.Dk;
			const int64_t *sd = w ? a.vs : a.ks;
			const char *past = w ? "X5" : "X4", *cur = w ? "X2" : "X1";
			if (out->dtype != e.dt)
				return cg_error(cg, node, "present outputs must have K's dtype");
			if (a.P)
				cg_line(cg, "const %s *src%d = t < %lld ? %s + ((b * %lld + kh) * %lld + t) * %lld"
				        " : %s + b * %lld + kh * %lld + (t - %lld) * %lld;", e.sty, w, ll(a.P),
				        past, ll(a.Hkv), ll(a.P), ll(D), cur, ll(sd[0]), ll(sd[1]), ll(a.P),
				        ll(sd[2]));
			else
				cg_line(cg, "const %s *src%d = %s + b * %lld + kh * %lld + t * %lld;", e.sty, w,
				        cur, ll(sd[0]), ll(sd[1]), ll(sd[2]));
			cg_line(cg, "memcpy(Y%d + ((b * %lld + kh) * %lld + t) * %lld, src%d, %lld * "
			        "sizeof(%s));", w + 1, ll(a.Hkv), ll(a.T), ll(D), w, ll(D), e.sty);
		}
		cg->indent--;
		cg_line(cg, "}");
		cg->indent--;
		cg_line(cg, "}");
	}
	if (e.blocked) {
		/* what row_softmax needs, in one block (the CUDA fallback drops one
		 * RL_VEC block of vector math, not two) */
		cg_vmath_need(cg, RL_VM_EXPZ);
		cg->simd = 1;
		rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
		attn_blocked(cg, &e);
		rl_buf_printf(&cg->body, "#else\n");
	}
	cg_line(cg, "for (size_t i = i0; i < i1; i++) {");
	cg->indent++;
	attn_row(cg, &e, e.vec && !e.blocked);
	cg->indent--;
	cg_line(cg, "}");
	if (e.blocked)
		rl_buf_printf(&cg->body, "#endif\n");
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- LinearAttention ------------------------------------------------------- */

/*
 * Per (batch, kv head) and time step t, with the state S[Dk][Dv] in float:
 *   gated:  S[d][:] *= exp(decay[d])        (decay per key dim, or per head)
 *   delta:  v' = beta * (v - k^T S)          (the retrieved value replaced)
 *   update: S += k v'^T
 *   read:   y_h = scale * q_h^T S for each q head h of the group.
 * Every inner loop runs over Dv, contiguous in S, v and y.
 */
static enum rl_status emit_linear_attention(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *q = cg_in(cg, node, 0), *k = cg_in(cg, node, 1), *v = cg_in(cg, node, 2);
	const struct rl_value *ps = cg_in(cg, node, 3), *dc = cg_in(cg, node, 4), *be = cg_in(cg, node, 5);
	const struct rl_value *y = cg_out(cg, node, 0), *ys = cg_out(cg, node, 1);
	const char *rule = rl_node_attr_str(n, "update_rule", "gated_delta");
	bool gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
	bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
	if (!gating && !delta && strcmp(rule, "linear"))
		return cg_error(cg, node, "update_rule '%s' is not linear, gated, delta or gated_delta",
		                rule);
	if (gating != (dc != NULL))
		return cg_error(cg, node, "update_rule '%s' %s the decay input", rule,
		                gating ? "needs" : "forbids");
	if (delta != (be != NULL))
		return cg_error(cg, node, "update_rule '%s' %s the beta input", rule,
		                delta ? "needs" : "forbids");
	int64_t Hq = rl_node_attr_int(n, "q_num_heads", 0), Hkv = rl_node_attr_int(n, "kv_num_heads", 0);
	int64_t B = q->shape.d[0].v, T = q->shape.d[1].v;
	int64_t Dk = q->shape.d[2].v / Hq, Dv = v->shape.d[2].v / Hkv, G = Hq / Hkv;
	if (k->shape.d[2].v != Hkv * Dk)
		return cg_error(cg, node, "key's hidden size %lld is not kv_num_heads x %lld",
		                ll(k->shape.d[2].v), ll(Dk));
	int64_t dlast = dc ? dc->shape.d[2].v : 0, blast = be ? be->shape.d[2].v : 0;
	if (dc && dlast != Hkv && dlast != Hkv * Dk)
		return cg_error(cg, node, "decay's last dim %lld is neither kv_num_heads nor "
		                "kv_num_heads x d_k", ll(dlast));
	if (be && blast != Hkv && blast != 1)
		return cg_error(cg, node, "beta's last dim %lld is neither kv_num_heads nor 1", ll(blast));
	double scale = rl_node_attr_float(n, "scale", 0);
	if (scale == 0)
		scale = 1.0 / sqrt((double)Dk);
	if (numel(y) == 0 && (!ys || numel(ys) == 0)) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* LinearAttention (%s): %lld steps over a %lld x %lld state per (batch, kv "
	        "head); %lld q heads per kv head */", rule, ll(T), ll(Dk), ll(Dv), ll(G));
	cg_rows_open(cg, "r", B * Hkv, T * Dk * Dv * (2 + G), ATTN_MIN_PAR);
	cg_line(cg, "const size_t b = r / %lld, kh = r %% %lld;", ll(Hkv), ll(Hkv));
	cg_scratch_array(cg, "float", "S", Dk, Dv);
	cg_scratch_array(cg, "float", "u", Dv, 0);
	cg_scratch_array(cg, "float", "o", Dv, 0);
	if (ps) {
		cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(Dk));
		cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
		cg_line(cg, "        S[d][m] = %s;", ld(cg, ps->dtype, "X3[(r * %lld + d) * %lld + m]",
		                                       ll(Dk), ll(Dv)));
	} else
		cg_line(cg, "memset(S, 0, %lld * sizeof(float));", ll(Dk * Dv));
	cg_line(cg, "for (size_t t = 0; t < %lld; t++) {", ll(T));
	cg->indent++;
	cg_line(cg, "const size_t row = b * %lld + t;", ll(T));
	cg_line(cg, "const size_t kb = row * %lld + kh * %lld, vb = row * %lld + kh * %lld;",
	        ll(Hkv * Dk), ll(Dk), ll(Hkv * Dv), ll(Dv));
	if (gating) {
		if (dlast == Hkv) {
			cg_line(cg, "const float g = expf(%s);", ld(cg, dc->dtype, "X4[row * %lld + kh]",
			                                           ll(Hkv)));
			cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(Dk));
			cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
			cg_line(cg, "        S[d][m] *= g;");
		} else {
			cg_line(cg, "for (size_t d = 0; d < %lld; d++) {", ll(Dk));
			cg_line(cg, "    const float g = expf(%s);", ld(cg, dc->dtype, "X4[kb + d]"));
			cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
			cg_line(cg, "        S[d][m] *= g;");
			cg_line(cg, "}");
		}
	}
	cg_line(cg, "for (size_t m = 0; m < %lld; m++)", ll(Dv));
	cg_line(cg, "    u[m] = %s;", ld(cg, v->dtype, "X2[vb + m]"));
	if (delta) {
		cg_line(cg, "for (size_t m = 0; m < %lld; m++)", ll(Dv));
		cg_line(cg, "    o[m] = 0;");
		cg_line(cg, "for (size_t d = 0; d < %lld; d++) {", ll(Dk));
		cg_line(cg, "    const float kd = %s;", ld(cg, k->dtype, "X1[kb + d]"));
		cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
		cg_line(cg, "        o[m] += S[d][m] * kd;");
		cg_line(cg, "}");
		cg_line(cg, "const float bt = %s;", blast == 1 ? ld(cg, be->dtype, "X5[row]")
		        : ld(cg, be->dtype, "X5[row * %lld + kh]", ll(Hkv)));
		cg_line(cg, "for (size_t m = 0; m < %lld; m++)", ll(Dv));
		cg_line(cg, "    u[m] = bt * (u[m] - o[m]);");
	}
	cg_line(cg, "for (size_t d = 0; d < %lld; d++) {", ll(Dk));
	cg_line(cg, "    const float kd = %s;", ld(cg, k->dtype, "X1[kb + d]"));
	cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
	cg_line(cg, "        S[d][m] += kd * u[m];");
	cg_line(cg, "}");
	cg_line(cg, "for (size_t g = 0; g < %lld; g++) {", ll(G));
	cg->indent++;
	cg_line(cg, "const size_t h = kh * %lld + g;", ll(G));
	cg_line(cg, "for (size_t m = 0; m < %lld; m++)", ll(Dv));
	cg_line(cg, "    o[m] = 0;");
	cg_line(cg, "for (size_t d = 0; d < %lld; d++) {", ll(Dk));
	cg_line(cg, "    const float qd = %s;", ld(cg, q->dtype, "X0[row * %lld + h * %lld + d]",
	                                           ll(Hq * Dk), ll(Dk)));
	cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
	cg_line(cg, "        o[m] += qd * S[d][m];");
	cg_line(cg, "}");
	cg_line(cg, "for (size_t m = 0; m < %lld; m++)", ll(Dv));
	char e[96];
	snprintf(e, sizeof(e), "%s * o[m]", cg_lit(RL_DT_FLOAT, scale));
	cg_line(cg, "    Y0[row * %lld + h * %lld + m] = %s;", ll(Hq * Dv), ll(Dv), st(cg, y->dtype, e));
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	if (ys) {
		cg_line(cg, "for (size_t d = 0; d < %lld; d++)", ll(Dk));
		cg_line(cg, "    for (size_t m = 0; m < %lld; m++)", ll(Dv));
		cg_line(cg, "        Y1[(r * %lld + d) * %lld + m] = %s;", ll(Dk), ll(Dv),
		        st(cg, ys->dtype, "S[d][m]"));
	}
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- RotaryEmbedding ------------------------------------------------------- */

/*
 * Per (batch, position, head) row of head size D: the first rd elements are
 * rotated as rd/2 pairs, (x[k], x[k + rd/2]) or, interleaved, (x[2k],
 * x[2k+1]), by the angle whose cos and sin are row p of the caches (p from
 * position_ids, or the (batch, position) row of 3-D caches); the rest is
 * copied.
 */
static enum rl_status emit_rotary(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *cs = cg_in(cg, node, 1);
	const struct rl_value *sn = cg_in(cg, node, 2), *pos = cg_in(cg, node, 3);
	const struct rl_value *y = cg_out(cg, node, 0);
	bool three = x->shape.rank == 3, inter = rl_node_attr_int(n, "interleaved", 0) != 0;
	int64_t B = x->shape.d[0].v, H, S, D;
	if (three) {
		H = rl_node_attr_int(n, "num_heads", 0);
		S = x->shape.d[1].v;
		if (H <= 0 || x->shape.d[2].v % H)
			return cg_error(cg, node, "3-D input needs num_heads dividing its hidden size");
		D = x->shape.d[2].v / H;
	} else {
		H = x->shape.d[1].v;
		S = x->shape.d[2].v;
		D = x->shape.d[3].v;
	}
	int64_t rd = rl_node_attr_int(n, "rotary_embedding_dim", 0);
	if (rd == 0)
		rd = D;
	int64_t half = rd / 2;
	int cr = cs->shape.rank;
	if (rd > D || rd % 2 || cr < 2 || cs->shape.d[cr - 1].v != half || !rl_shape_equal(&cs->shape,
	                                                                                   &sn->shape))
		return cg_error(cg, node, "cos_cache/sin_cache must end in rotary_embedding_dim / 2 "
		                "(%lld) and match", ll(half));
	if (!pos && (cr != 3 || cs->shape.d[0].v != B || cs->shape.d[1].v != S))
		return cg_error(cg, node, "without position_ids the caches must be [B, S, rd/2]");
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	int64_t xs[3];
	strides_of(three, H, S, D, xs);
	const char *ct = cg_comptype(x->dtype);
	cg_line(cg, "/* rotate the first %lld of %lld elements of each head row%s */", ll(rd), ll(D),
	        inter ? " as interleaved pairs" : " as halves");
	cg_rows_open(cg, "r", B * S, H * D, 1 << 15);
	cg_line(cg, "const size_t b = r / %lld, si = r %% %lld;", ll(S), ll(S));
	if (pos) {
		cg_line(cg, "const int64_t p = (int64_t)X3[r];");
		cg_line(cg, "const size_t c0 = (size_t)(p < 0 ? 0 : p < %lld ? p : %lld) * %lld;",
		        ll(cs->shape.d[0].v), ll(cs->shape.d[0].v - 1), ll(half));
	} else {
		cg_line(cg, "const size_t c0 = r * %lld;", ll(half));
	}
	cg_line(cg, "for (size_t h = 0; h < %lld; h++) {", ll(H));
	cg->indent++;
	cg_line(cg, "const size_t o = b * %lld + h * %lld + si * %lld;", ll(xs[0]), ll(xs[1]), ll(xs[2]));
	cg_line(cg, "for (size_t k = 0; k < %lld; k++) {", ll(half));
	cg->indent++;
	const char *i1 = inter ? "2 * k" : "k";
	char i2[32];
	snprintf(i2, sizeof(i2), inter ? "2 * k + 1" : "k + %lld", ll(half));
	cg_line(cg, "const %s c = %s, s = %s;", ct, ld(cg, cs->dtype, "X1[c0 + k]"),
	        ld(cg, sn->dtype, "X2[c0 + k]"));
	cg_line(cg, "const %s x1 = %s, x2 = %s;", ct, ld(cg, x->dtype, "X0[o + %s]", i1),
	        ld(cg, x->dtype, "X0[o + %s]", i2));
	cg_line(cg, "Y0[o + %s] = %s;", i1, st(cg, y->dtype, "c * x1 - s * x2"));
	cg_line(cg, "Y0[o + %s] = %s;", i2, st(cg, y->dtype, "s * x1 + c * x2"));
	cg->indent--;
	cg_line(cg, "}");
	if (rd < D) {
		cg_line(cg, "for (size_t k = %lld; k < %lld; k++)", ll(rd), ll(D));
		cg_line(cg, "    Y0[o + k] = X0[o + k];");
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- CausalConvWithState --------------------------------------------------- */

/*
 * Depthwise causal convolution over [past_state | input] per (batch,
 * channel): the padded row (K-1 + L) is built in a local array, the output
 * accumulates tap by tap (the inner loop runs over positions, contiguous),
 * then bias and SiLU; present_state is the last K-1 of the padded row.
 */
static enum rl_status emit_causal_conv(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *w = cg_in(cg, node, 1);
	const struct rl_value *bi = cg_in(cg, node, 2), *ps = cg_in(cg, node, 3);
	const struct rl_value *y = cg_out(cg, node, 0), *ys = cg_out(cg, node, 1);
	int64_t B = x->shape.d[0].v, C = x->shape.d[1].v, L = x->shape.d[2].v, K = w->shape.d[2].v;
	if (w->shape.d[0].v != C || w->shape.d[1].v != 1 || K < 1)
		return cg_error(cg, node, "weight must be [channels, 1, k] (depthwise)");
	if (bi && numel(bi) != C)
		return cg_error(cg, node, "bias must have one entry per channel");
	if (ps && (ps->shape.rank != 3 || ps->shape.d[0].v != B || ps->shape.d[1].v != C ||
	           ps->shape.d[2].v != K - 1))
		return cg_error(cg, node, "past_state must be [B, C, k - 1]");
	bool silu = strcmp(rl_node_attr_str(n, "activation", "none"), "none") != 0;
	const char *ct = cg_comptype(x->dtype);
	int64_t PL = K - 1 + L;
	if (B * C == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* depthwise causal conv, %lld taps over %lld steps%s%s */", ll(K), ll(L),
	        ps ? " after past_state" : "", silu ? ", SiLU" : "");
	cg_rows_open(cg, "r", B * C, PL * K, 1 << 15);
	cg_line(cg, "const size_t c = r %% %lld;", ll(C));
	cg_line(cg, "(void)c;");
	cg_scratch_array(cg, ct, "p", PL, 0);
	cg_scratch_array(cg, ct, "o", L > 0 ? L : 1, 0);
	if (K > 1) {
		if (ps) {
			cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(K - 1));
			cg_line(cg, "    p[t] = %s;", ld(cg, ps->dtype, "X3[r * %lld + t]", ll(K - 1)));
		} else {
			cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(K - 1));
			cg_line(cg, "    p[t] = 0;");
		}
	}
	cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(L));
	cg_line(cg, "    p[%lld + t] = %s;", ll(K - 1), ld(cg, x->dtype, "X0[r * %lld + t]", ll(L)));
	cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(L));
	cg_line(cg, "    o[t] = %s;", bi ? ld(cg, bi->dtype, "X2[c]") : "0");
	cg_line(cg, "for (size_t k = 0; k < %lld; k++) {", ll(K));
	cg_line(cg, "    const %s wk = %s;", ct, ld(cg, w->dtype, "X1[c * %lld + k]", ll(K)));
	cg_line(cg, "    for (size_t t = 0; t < %lld; t++)", ll(L));
	cg_line(cg, "        o[t] += wk * p[t + k];");
	cg_line(cg, "}");
	if (silu) {
		/* SiLU: rl_vsigmoid over whole vectors of float rows, the tail (and
		 * the portable path) in scalar code */
		bool vec = is_f(ct) && L >= VW;
		char sc[160];
		snprintf(sc, sizeof(sc), "o[t] = o[t] / (%s + %s(-o[t]));", lit(ct, 1), mfn(ct, "exp"));
		if (vec) {
			cg->vnarrow = 1;
			cg_vmath_need(cg, RL_VM_SIGMOID);
			cg->simd = 1;
			rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
			char nvs[32];
			snprintf(nvs, sizeof(nvs), "%lld", ll(L / VW * VW));
			cg_vloop(cg, "t", nvs,
			         "const rl_vf v = *(const rl_vfu *)(o + t);\n"
			         "rl_vf sg;\n"
			         "rl_vsigmoid(&sg, &v);\n"
			         "*(rl_vfu *)(o + t) = v * sg;");
			if (L % VW) {
				cg_line(cg, "for (size_t t = %lld; t < %lld; t++)", ll(L / VW * VW), ll(L));
				cg_line(cg, "    %s", sc);
			}
			rl_buf_printf(&cg->body, "#else\n");
		}
		cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(L));
		cg_line(cg, "    %s", sc);
		if (vec)
			rl_buf_printf(&cg->body, "#endif\n");
	}
	cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(L));
	cg_line(cg, "    Y0[r * %lld + t] = %s;", ll(L), st(cg, y->dtype, "o[t]"));
	if (ys && K > 1) {
		cg_line(cg, "for (size_t t = 0; t < %lld; t++)", ll(K - 1));
		char pe[48];
		snprintf(pe, sizeof(pe), "p[%lld + t]", ll(L));
		cg_line(cg, "    Y1[r * %lld + t] = %s;", ll(K - 1), st(cg, ys->dtype, pe));
	}
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- GroupNormalization ---------------------------------------------------- */

/* Per (n, group): mean and variance over the group's channels and spatial
 * positions (two passes), then y = x * a[c] + b[c] with the per-channel
 * scale and bias folded in (opset 18 gives them per group). */
static enum rl_status emit_groupnorm(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *sc = cg_in(cg, node, 1), *bi = cg_in(cg, node, 2);
	const struct rl_value *y = cg_out(cg, node, 0);
	int64_t N = x->shape.d[0].v, C = x->shape.d[1].v, S = 1, G = rl_node_attr_int(n, "num_groups", 0);
	for (int d = 2; d < x->shape.rank; d++)
		S *= x->shape.d[d].v;
	if (G <= 0 || C % G)
		return cg_error(cg, node, "num_groups %lld must divide the %lld channels", ll(G), ll(C));
	bool per_c = numel(sc) == C;
	if ((numel(sc) != C && numel(sc) != G) || numel(bi) != numel(sc))
		return cg_error(cg, node, "scale and bias must have one entry per channel or group");
	double eps = rl_node_attr_float(n, "epsilon", 1e-5);
	const char *ct = x->dtype == RL_DT_DOUBLE ? "double" : "float";
	int64_t CG = C / G, E = CG * S;
	if (numel(y) == 0 || E == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* %lld groups of %lld channels x %lld: y = (x - mean) / sqrt(var + eps) * scale"
	        " + bias */", ll(G), ll(CG), ll(S));
	cg_rows_open(cg, "r", N * G, E, 1 << 15);
	cg_line(cg, "const size_t base = r * %lld, g = r %% %lld;", ll(E), ll(G));
	cg_line(cg, "%s sum = %s;", ct, cg_zero(ct));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", ll(E));
	cg_line(cg, "    sum += %s;", ld(cg, x->dtype, "X0[base + i]"));
	cg_line(cg, "const %s mean = sum / %s;", ct, lit(ct, (double)E));
	cg_line(cg, "%s sq = %s;", ct, cg_zero(ct));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", ll(E));
	cg_line(cg, "    const %s d = %s - mean;", ct, ld(cg, x->dtype, "X0[base + i]"));
	cg_line(cg, "    sq += d * d;");
	cg_line(cg, "}");
	cg_line(cg, "const %s inv = %s / %s(sq / %s + %s);", ct, lit(ct, 1), mfn(ct, "sqrt"),
	        lit(ct, (double)E), lit(ct, eps));
	cg_line(cg, "for (size_t c = 0; c < %lld; c++) {", ll(CG));
	cg->indent++;
	char ci[48];
	if (per_c)
		snprintf(ci, sizeof(ci), "g * %lld + c", ll(CG));
	else
		snprintf(ci, sizeof(ci), "g");
	cg_line(cg, "const %s a = inv * %s;", ct, ld(cg, sc->dtype, "X1[%s]", ci));
	cg_line(cg, "const %s sh = %s - mean * a;", ct, ld(cg, bi->dtype, "X2[%s]", ci));
	char e[128];
	snprintf(e, sizeof(e), "%s * a + sh", ld(cg, x->dtype, "X0[base + c * %lld + i]", ll(S)));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", ll(S));
	cg_line(cg, "    Y0[base + c * %lld + i] = %s;", ll(S), st(cg, y->dtype, e));
	cg->indent--;
	cg_line(cg, "}");
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- Swish ------------------------------------------------------------------ */

/* y = x * sigmoid(alpha x); float32 through rl_vsigmoid */
static enum rl_status emit_swish(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	double alpha = rl_node_attr_float(n, "alpha", 1.0);
	int64_t N = numel(x);
	const char *ct = cg_comptype(x->dtype);
	if (N == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* y = x * sigmoid(%.9g * x) */", alpha);
	int64_t nv = N / VW * VW;
	bool vec = x->dtype == RL_DT_FLOAT && y->dtype == RL_DT_FLOAT && nv > 0;
	if (vec) {
		cg->vnarrow = 1;
		cg_vmath_need(cg, RL_VM_SIGMOID);
		cg->simd = 1;
		rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
		char body[400], nvs[32];
		snprintf(nvs, sizeof(nvs), "%lld", ll(nv));
		snprintf(body, sizeof(body),
		         "const rl_vf v = *(const rl_vfu *)(X0 + i);\n"
		         "const rl_vf t = v * %s;\n"
		         "rl_vf sg;\n"
		         "rl_vsigmoid(&sg, &t);\n"
		         "*(rl_vfu *)(Y0 + i) = v * sg;",
		         lit(ct, alpha));
		cg_vloop(cg, "i", nvs, body);
		cg_line(cg, "for (size_t i = %lld; i < %lld; i++)", ll(nv), ll(N));
		cg_line(cg, "    Y0[i] = X0[i] / (1.0f + expf(-%s * X0[i]));", lit(ct, alpha));
		rl_buf_printf(&cg->body, "#else\n");
	}
	char e[160];
	snprintf(e, sizeof(e), "v / (%s + %s(-%s * v))", lit(ct, 1), mfn(ct, "exp"), lit(ct, alpha));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", ll(N));
	cg_line(cg, "    const %s v = %s;", ct, ld(cg, x->dtype, "X0[i]"));
	cg_line(cg, "    Y0[i] = %s;", st(cg, y->dtype, e));
	cg_line(cg, "}");
	if (vec)
		rl_buf_printf(&cg->body, "#endif\n");
	return RL_OK;
}

/* ---- TensorScatter ------------------------------------------------------------ */

/* present = past; then for every prefix (dims before axis) the update's rows
 * go to rows write_indices[batch] + s (mod the axis length when circular;
 * linear writes past the end are dropped). */
static enum rl_status emit_tensor_scatter(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *u = cg_in(cg, node, 1), *wi = cg_in(cg, node, 2);
	const struct rl_value *y = cg_out(cg, node, 0);
	int r = x->shape.rank;
	int64_t axis = rl_node_attr_int(n, "axis", -2);
	if (axis < 0)
		axis += r;
	if (axis < 1 || axis >= r || u->shape.rank != r)
		return cg_error(cg, node, "axis must name a dim after the batch, and update must have "
		                "the cache's rank");
	const char *mode = rl_node_attr_str(n, "mode", "linear");
	bool circ = !strcmp(mode, "circular");
	if (!circ && strcmp(mode, "linear"))
		return cg_error(cg, node, "mode '%s' is not linear or circular", mode);
	int64_t pre = 1, in = 1, Smax = x->shape.d[axis].v, Su = u->shape.d[axis].v;
	for (int d = 0; d < r; d++) {
		if (d != axis && u->shape.d[d].v != x->shape.d[d].v)
			return cg_error(cg, node, "update and cache differ on axis %d", d);
		if (d < axis)
			pre *= x->shape.d[d].v;
		else if (d > axis)
			in *= x->shape.d[d].v;
	}
	if (Su > Smax)
		return cg_error(cg, node, "update is longer than the cache on the axis");
	int64_t per_b = pre / (x->shape.d[0].v ? x->shape.d[0].v : 1);
	const char *sty = cg_ctype(x->dtype);
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* %s write of %lld rows into %lld */", mode, ll(Su), ll(Smax));
	cg_line(cg, "if (Y0 != X0)");
	cg_line(cg, "    memcpy(Y0, X0, %lld * sizeof(%s));", ll(numel(x)), sty);
	if (numel(u) == 0)
		return RL_OK;
	cg_line(cg, "for (size_t a = 0; a < %lld; a++) {", ll(pre));
	cg->indent++;
	if (wi)
		cg_line(cg, "const int64_t w0 = (int64_t)X2[a / %lld];", ll(per_b));
	else
		cg_line(cg, "const int64_t w0 = 0;");
	cg_line(cg, "for (int64_t s = 0; s < %lld; s++) {", ll(Su));
	cg->indent++;
	if (circ) {
		cg_line(cg, "int64_t t = (w0 + s) %% %lld;", ll(Smax));
		cg_line(cg, "if (t < 0) t += %lld;", ll(Smax));
	} else {
		cg_line(cg, "const int64_t t = w0 + s;");
		cg_line(cg, "if (t < 0 || t >= %lld) continue;", ll(Smax));
	}
	cg_line(cg, "memcpy(Y0 + (a * %lld + (size_t)t) * %lld, X1 + (a * %lld + (size_t)s) * %lld, "
	        "%lld * sizeof(%s));", ll(Smax), ll(in), ll(Su), ll(in), ll(in), sty);
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- AffineGrid ---------------------------------------------------------------- */

/* grid[n, (d,) h, w, k] = theta[n, k, :] . (x_w, y_h, (z_d,) 1) with the
 * normalized coordinates -1 + (2i + 1) / size, or -1 + 2i / (size - 1)
 * under align_corners. The size input's values are the output's dims. */
static enum rl_status emit_affine_grid(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *th = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	bool ac = rl_node_attr_int(n, "align_corners", 0) != 0;
	int r = y->shape.rank, nd = r - 2;
	if ((nd != 2 && nd != 3) || y->shape.d[r - 1].v != nd || th->shape.d[1].v != nd ||
	    th->shape.d[2].v != nd + 1)
		return cg_error(cg, node, "theta must be [N, %d, %d] for a %d-D grid", nd, nd + 1, nd);
	const char *ct = cg_comptype(th->dtype);
	int64_t N = y->shape.d[0].v, sp[3] = {1, 1, 1}; /* D, H, W */
	for (int i = 0; i < nd; i++)
		sp[3 - nd + i] = y->shape.d[1 + i].v;
	if (numel(y) == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "/* %d-D affine grid of %lld x %lld x %lld%s */", nd, ll(sp[0]), ll(sp[1]),
	        ll(sp[2]), ac ? ", align_corners" : "");
	static const char *ax[3] = {"z", "yc", "xc"}, *iv[3] = {"dd", "hh", "ww"};
	cg_line(cg, "for (size_t nn = 0; nn < %lld; nn++) {", ll(N));
	cg->indent++;
	cg_line(cg, "const %s *t = X0 + nn * %d;", cg_ctype(th->dtype), nd * (nd + 1));
	cg_line(cg, "%s *yo = Y0 + nn * %lld;", cg_ctype(y->dtype), ll(sp[0] * sp[1] * sp[2] * nd));
	for (int i = 3 - nd; i < 3; i++) {
		cg_line(cg, "for (size_t %s = 0; %s < %lld; %s++) {", iv[i], iv[i], ll(sp[i]), iv[i]);
		cg->indent++;
		if (!ac)
			cg_line(cg, "const %s %s = %s + (%s)(2 * %s + 1) / %s;", ct, ax[i], lit(ct, -1), ct,
			        iv[i], lit(ct, (double)sp[i]));
		else if (sp[i] > 1)
			cg_line(cg, "const %s %s = %s + %s * (%s)%s;", ct, ax[i], lit(ct, -1),
			        lit(ct, 2.0 / (double)(sp[i] - 1)), ct, iv[i]);
		else
			cg_line(cg, "const %s %s = %s;", ct, ax[i], lit(ct, -1));
	}
	if (nd == 3)
		cg_line(cg, "const size_t o = ((dd * %lld + hh) * %lld + ww) * 3;", ll(sp[1]), ll(sp[2]));
	else
		cg_line(cg, "const size_t o = (hh * %lld + ww) * 2;", ll(sp[2]));
	for (int k = 0; k < nd; k++) {
		char e[384];
		if (nd == 2)
			snprintf(e, sizeof(e), "%s * xc + %s * yc + %s",
			         ld(cg, th->dtype, "t[%d]", k * 3), ld(cg, th->dtype, "t[%d]", k * 3 + 1),
			         ld(cg, th->dtype, "t[%d]", k * 3 + 2));
		else
			snprintf(e, sizeof(e), "%s * xc + %s * yc + %s * z + %s",
			         ld(cg, th->dtype, "t[%d]", k * 4), ld(cg, th->dtype, "t[%d]", k * 4 + 1),
			         ld(cg, th->dtype, "t[%d]", k * 4 + 2), ld(cg, th->dtype, "t[%d]", k * 4 + 3));
		cg_line(cg, "yo[o + %d] = %s;", k, st(cg, y->dtype, e));
	}
	cg_loops_close(cg, nd + 1);
	return RL_OK;
}

/* ---- dispatch ------------------------------------------------------------------ */

enum rl_status rl_emit_c_attn(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	if (!cg_in(cg, node, 0) || !cg_out(cg, node, 0))
		return cg_error(cg, node, "missing input or output");
	switch (n->op) {
	case RL_OP_Attention: case RL_OP_FlexAttention: return emit_attention(cg, node);
	case RL_OP_LinearAttention: return emit_linear_attention(cg, node);
	case RL_OP_RotaryEmbedding: return emit_rotary(cg, node);
	case RL_OP_CausalConvWithState: return emit_causal_conv(cg, node);
	case RL_OP_GroupNormalization: return emit_groupnorm(cg, node);
	case RL_OP_Swish: return emit_swish(cg, node);
	case RL_OP_TensorScatter: return emit_tensor_scatter(cg, node);
	case RL_OP_AffineGrid: return emit_affine_grid(cg, node);
	default:
		return cg_error(cg, node, "%s is not an attention-family op", rl_op_table[n->op].name);
	}
}
