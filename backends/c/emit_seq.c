/*
 * emit_seq.c - C kernels for the recurrent and signal family (RNN, GRU,
 * LSTM, DFT, STFT, Det, TfIdfVectorizer) and the small ai.onnx.ml and
 * training ops filed with it (Binarizer, ArrayFeatureExtractor,
 * TreeEnsemble, Adagrad, Adam, Momentum). Shapes and semantics: ir/fam_seq.c
 * and the ONNX spec; the onnx reference implementation decides where the
 * spec is loose.
 *
 * Recurrent layers run one direction after the other, a time step at a
 * time, each batch row on its own: the gate pre-activations are bias + W x
 * + R h, each a dot product over a contiguous row of W or R, then the
 * activations (attribute `activations`, with alpha/beta consumed in order
 * by the functions that take them), the optional clip, and the state update.
 * The hidden and cell state live in file-scope arrays of the kernel (the
 * model runs one kernel at a time). With sequence_lens a row stops after
 * its length: Y is zero past it, Y_h and Y_c hold the state at its last
 * step, and the reverse direction starts at its last valid step.
 *
 * DFT and STFT are direct transforms (n * L complex multiply-adds per line)
 * in double, with the angle reduced as the integer (k * t) mod L before cos
 * and sin so long transforms keep their accuracy. Lengths, the axis and
 * frame_step may be run-time inputs: the kernel reads them and derives the
 * view from the static dims; values that disagree with the static output
 * shape give zeros. Det factors each matrix by LU with partial pivoting in
 * double. TreeEnsemble and TfIdfVectorizer carry their trees and n-gram
 * pool as static tables built from the attributes at generation time.
 */
#include "emit_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t numel(const struct rl_value *v)
{
	return rl_shape_numel(&v->shape);
}

/* A double literal C reads back exactly (NAN and INFINITY from math.h). */
static const char *dlit(char *b, size_t n, double x)
{
	if (isnan(x))
		snprintf(b, n, "NAN");
	else if (isinf(x))
		snprintf(b, n, "%sINFINITY", x < 0 ? "-" : "");
	else
		snprintf(b, n, "%.17g", x);
	return b;
}

static bool float_dt(enum rl_dtype t)
{
	return t == RL_DT_FLOAT || t == RL_DT_DOUBLE;
}

/* ---- activations of the recurrent layers --------------------------------- */

struct act {
	char name[24];
	double alpha, beta;
};

/* The activation list of node n: `count` functions per direction (defaults
 * in `def`), alpha/beta taken in order by the functions that use them. */
static bool rnn_acts(struct rl_cgen *cg, uint32_t node, int count, int dirs,
                     const char *const *def, struct act *out, enum rl_status *st)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_attr *a = rl_node_attr(n, "activations");
	const struct rl_attr *al = rl_node_attr(n, "activation_alpha");
	const struct rl_attr *be = rl_node_attr(n, "activation_beta");
	int ia = 0, ib = 0;
	for (int i = 0; i < count * dirs; i++) {
		const char *nm = def[i % count];
		if (a && a->kind == RL_ATTR_STRINGS) {
			if (a->n != count * dirs && a->n != count) {
				*st = cg_error(cg, node, "activations lists %d functions; %d expected",
				               a->n, count * dirs);
				return false;
			}
			nm = a->strs[i % a->n];
		}
		struct act *o = &out[i];
		snprintf(o->name, sizeof(o->name), "%s", nm);
		double da = 0, db = 0;
		bool ua = false, ub = false;
		if (!strcmp(nm, "LeakyRelu"))
			da = 0.01, ua = true;
		else if (!strcmp(nm, "ThresholdedRelu") || !strcmp(nm, "Elu"))
			da = 1.0, ua = true;
		else if (!strcmp(nm, "ScaledTanh") || !strcmp(nm, "Affine"))
			da = 1.0, db = !strcmp(nm, "Affine") ? 0.0 : 1.0, ua = ub = true;
		else if (!strcmp(nm, "HardSigmoid"))
			da = 0.2, db = 0.5, ua = ub = true;
		else if (strcmp(nm, "Tanh") && strcmp(nm, "Sigmoid") && strcmp(nm, "Relu") &&
		         strcmp(nm, "Softsign") && strcmp(nm, "Softplus")) {
			*st = cg_error(cg, node, "activation '%s' is not supported", nm);
			return false;
		}
		o->alpha = ua && al && al->kind == RL_ATTR_FLOATS && ia < al->n ? al->floats[ia++] : da;
		o->beta = ub && be && be->kind == RL_ATTR_FLOATS && ib < be->n ? be->floats[ib++] : db;
	}
	return true;
}

/* Expression of activation a on identifier x in type T (float or double). */
static const char *act_expr(struct rl_cgen *cg, const struct act *a, bool dbl, const char *x,
                            char *e, size_t n)
{
	const char *f = dbl ? "" : "f";
	char al[48], be[48];
	dlit(al, sizeof(al), a->alpha);
	dlit(be, sizeof(be), a->beta);
	if (!strcmp(a->name, "Tanh")) {
		if (dbl) {
			snprintf(e, n, "tanh(%s)", x);
		} else {
			cg->need_tanh = 1;
			snprintf(e, n, "rl_tanhf(%s)", x);
		}
	} else if (!strcmp(a->name, "Sigmoid")) {
		/* 1 / (1 + exp(-x)), not 1/2 + tanh(x/2)/2: near 1 the latter
		 * rounds 1 - 6e-8 to 1, and GRU's 1 - z needs that difference */
		snprintf(e, n, "(1 / (1 + exp%s(-%s)))", f, x);
	} else if (!strcmp(a->name, "Relu")) {
		snprintf(e, n, "(%s > 0 ? %s : 0)", x, x);
	} else if (!strcmp(a->name, "LeakyRelu")) {
		snprintf(e, n, "(%s >= 0 ? %s : %s * %s)", x, x, al, x);
	} else if (!strcmp(a->name, "ThresholdedRelu")) {
		snprintf(e, n, "(%s > %s ? %s : 0)", x, al, x);
	} else if (!strcmp(a->name, "Elu")) {
		snprintf(e, n, "(%s >= 0 ? %s : %s * (exp%s(%s) - 1))", x, x, al, f, x);
	} else if (!strcmp(a->name, "ScaledTanh")) {
		snprintf(e, n, "(%s * tanh%s(%s * %s))", al, f, be, x);
	} else if (!strcmp(a->name, "Affine")) {
		snprintf(e, n, "(%s * %s + %s)", al, x, be);
	} else if (!strcmp(a->name, "HardSigmoid")) {
		snprintf(e, n, "fmax%s(0, fmin%s(1, %s * %s + %s))", f, f, al, x, be);
	} else if (!strcmp(a->name, "Softsign")) {
		snprintf(e, n, "(%s / (1 + fabs%s(%s)))", x, f, x);
	} else { /* Softplus */
		snprintf(e, n, "log%s(1 + exp%s(%s))", f, f, x);
	}
	return e;
}

/* ---- RNN, GRU, LSTM ------------------------------------------------------ */

#define RNN_XW_BYTES (64ll << 20) /* most bytes of input projections computed up front */

/*
 * One step's product y = A x over `rows` rows of K (rl_sgemv_rows), split
 * across the thread pool where it is worth a hand-off (at least
 * RNN_PAR_MACS multiply-adds a step, chunks of at least RNN_PAR_CHUNK):
 * strips of 16 rows, so the 4-row groups of the GEMV kernels start where
 * they do on one thread and every y[j] is the same bits at any thread
 * count. The pool gives each thread its own contiguous share first, so a
 * core reads the same rows of R every step, from its own L2. A recurrence
 * at batch 1 is a chain of such GEMVs: before this (and GRU's vector
 * update), an LSTM (256 units) + GRU stack of 64 steps ran 2.08 ms on one
 * thread and 1.88 on two; after, 1.62 and 1.11 (onnxruntime 1.84, 1.15).
 */
#define RNN_PAR_MACS 65536
#define RNN_PAR_CHUNK 32768
static void rnn_gemv(struct rl_cgen *cg, const char *x, const char *a, int64_t K, const char *y,
                     int64_t rows, const char *what)
{
	if (rows * K < RNN_PAR_MACS || cg->static_mode) {
		cg_line(cg, "rl_sgemv_rows(%s, %s, %lld, 1.0f, %s, 0, %lld); /* %s */", x, a, (long long)K,
		        y, (long long)rows, what);
		return;
	}
	const char *k = cg->kname;
	char def[96];
	snprintf(def, sizeof(def), "struct %s_gv {", k);
	if (!cg->statics.s || !strstr(cg->statics.s, def)) {
		rl_buf_printf(&cg->statics,
		              "/* %s: a step's GEMV rows [16 lo, 16 hi) (rnn_gemv, emit_seq.c) */\n"
		              "struct %s_gv {\n    const float *x, *a;\n    float *y;\n    int64_t K, rows;\n};\n\n"
		              "static void %s_gv_task(void *arg, int64_t lo, int64_t hi)\n{\n"
		              "    const struct %s_gv *p = arg;\n"
		              "    rl_sgemv_rows(p->x, p->a, p->K, 1.0f, p->y, lo * 16, hi * 16 < p->rows ? hi * 16 : p->rows);\n"
		              "}\n\n",
		              k, k, k, k);
		cg->uses_pool = 1;
	}
	int64_t strips = (rows + 15) / 16, grain = (RNN_PAR_CHUNK + 16 * K - 1) / (16 * K);
	cg_line(cg, "{ /* %s, strips of 16 rows split across threads */", what);
	cg_line(cg, "    struct %s_gv gp = {%s, %s, %s, %lld, %lld};", k, x, a, y, (long long)K,
	        (long long)rows);
	cg_line(cg, "    rl_parallel_for(%s_gv_task, &gp, %lld, %lld);", k, (long long)strips,
	        (long long)grain);
	cg_line(cg, "}");
}

/*
 * The input projections' blocks of the packed SGEMM (cg_gemm_emit_task),
 * split across threads: a task function of their own in the statics, the
 * blocks' text captured from cg->body. Run in one thread, rnn.onnx's LSTM
 * and GRU projections (8.4 and 12.6 M multiply-adds, 4 blocks each) were
 * a fifth of its time at two threads. Serial where there is one block, in
 * static mode (no pool) or under RNN_PAR_MACS.
 */
static void rnn_xw(struct rl_cgen *cg, const struct cg_gemm_call *call,
                   const struct cg_gemm_plan *pl, bool w_const, double macs)
{
	const char *k = cg->kname;
	long long ntask = (long long)(pl->nib * pl->njb);
	if (cg->static_mode || ntask < 2 || macs < RNN_PAR_MACS) {
		cg_line(cg, "for (int64_t g_u = 0; g_u < %lld; g_u++) {", ntask);
		cg->indent++;
		cg_gemm_emit_task(cg, call, pl, "g_u");
		cg->indent--;
		cg_line(cg, "}");
		return;
	}
	struct rl_buf kbody = cg->body, task = {0};
	int kindent = cg->indent;
	cg->body = task;
	cg->indent = 1;
	cg_gemm_emit_task(cg, call, pl, "g_u");
	task = cg->body;
	cg->body = kbody;
	cg->indent = kindent;
	rl_buf_printf(&cg->statics,
	              "struct %s_xwp {\n    const float *X0, *X1;\n    float *xw;\n};\n\n"
	              "/* %s's input projections W x, blocks [lo, hi) (rnn_xw, emit_seq.c) */\n"
	              "static void %s_xw_task(void *arg, int64_t lo, int64_t hi)\n{\n"
	              "    const struct %s_xwp *p = arg;\n"
	              "    const float *restrict X0 = p->X0;\n"
	              "    %s\n"
	              "    float *restrict xw = p->xw;\n"
	              "    for (int64_t g_u = lo; g_u < hi; g_u++) {\n%s    }\n}\n\n",
	              k, k, k, k, w_const ? "(void)p->X1;" : "const float *restrict X1 = p->X1;",
	              task.s ? task.s : "");
	rl_buf_free(&task);
	cg->uses_pool = 1;
	cg_line(cg, "{");
	cg_line(cg, "    struct %s_xwp xp = {(const float *)X0, (const float *)X1, xw};", k);
	cg_line(cg, "    rl_parallel_for(%s_xw_task, &xp, %lld, 1);", k, ntask);
	cg_line(cg, "}");
}

/* What one step's state update needs (the gate pre-activations are in g:
 * RNN [H], GRU [z, r, W_h x + Wb_h] each H, LSTM [i, o, f, c] each H). */
struct cell {
	struct rl_cgen *cg;
	const char *T;
	bool dbl;
	const char *clip;   /* literal, "" for none */
	int64_t H;
	bool has_b, has_p;
	int64_t lbr, coupled;
	enum rl_op op;
	bool gemv;          /* products by the GEMV runtime (rl_sgemv_rows), not rt */
};

/* `T var = src` clipped to [-clip, clip] when the node asks for it. */
static void cell_pre(const struct cell *c, const char *var, const char *src)
{
	cg_line(c->cg, "%s %s = %s;", c->T, var, src);
	if (*c->clip)
		cg_line(c->cg, "%s = %s < -%s ? -%s : (%s > %s ? %s : %s);", var, var, c->clip, c->clip,
		        var, c->clip, c->clip, var);
}

/*
 * LSTM's update on vectors of units, where its activations are the default
 * Sigmoid, Tanh, Tanh and H is a whole number of vectors: rl_vsigmoid and
 * rl_vtanh (emit_math.c, 2.5 and 6 ulp) instead of expf and rl_tanhf per
 * unit, five per unit and step (ddddocr_ocr's LSTM, 512 units, 40 steps:
 * 4.86 -> 4.63 ms at one thread, Zen 3: what is left is the R h GEMV
 * streaming R from the last-level cache each step). Same order of
 * operations as the scalar loop, which stays under #else.
 */
static void lstm_vec(const struct cell *c)
{
	struct rl_cgen *cg = c->cg;
	long long H = (long long)c->H;
	cg_line(cg, "for (size_t j = 0; j < %lld; j += RL_VW) {", H);
	cg->indent++;
	cg_line(cg, "rl_vf vi = *(const rl_vfu *)(g + j), vo = *(const rl_vfu *)(g + j + %lld);", H);
	cg_line(cg, "rl_vf vf = *(const rl_vfu *)(g + j + %lld), vc = *(const rl_vfu *)(g + j + %lld);",
	        2 * H, 3 * H);
	cg_line(cg, "const rl_vf cp = *(const rl_vfu *)(cb + j);");
	if (c->has_p) {
		cg_line(cg, "vi += *(const rl_vfu *)(P + j) * cp;");
		cg_line(cg, "vf += *(const rl_vfu *)(P + j + %lld) * cp;", 2 * H);
	}
	if (*c->clip) {
		cg_line(cg, "rl_vclamp(&vi, &vi, -%s, %s);", c->clip, c->clip);
		if (!c->coupled)
			cg_line(cg, "rl_vclamp(&vf, &vf, -%s, %s);", c->clip, c->clip);
		cg_line(cg, "rl_vclamp(&vc, &vc, -%s, %s);", c->clip, c->clip);
	}
	cg_line(cg, "rl_vf ig, fg, tc, og, th;");
	cg_line(cg, "rl_vsigmoid(&ig, &vi);");
	if (c->coupled)
		cg_line(cg, "fg = 1.0f - ig;");
	else
		cg_line(cg, "rl_vsigmoid(&fg, &vf);");
	cg_line(cg, "rl_vtanh(&tc, &vc);");
	cg_line(cg, "const rl_vf cn = fg * cp + ig * tc;");
	cg_line(cg, "*(rl_vfu *)(cb + j) = cn;");
	if (c->has_p)
		cg_line(cg, "vo += *(const rl_vfu *)(P + j + %lld) * cn;", H);
	if (*c->clip)
		cg_line(cg, "rl_vclamp(&vo, &vo, -%s, %s);", c->clip, c->clip);
	cg_line(cg, "rl_vsigmoid(&og, &vo);");
	cg_line(cg, "rl_vtanh(&th, &cn);");
	cg_line(cg, "*(rl_vfu *)(hb + j) = og * th;");
	cg->indent--;
	cg_line(cg, "}");
}

/* GRU's ga = the recurrent part of the h gate by the GEMV runtime: R_h's rows
 * against r * h (or h, and Rb_h added, with linear_before_reset) */
static void gru_rh_gemv(const struct cell *c)
{
	struct rl_cgen *cg = c->cg;
	long long H = (long long)c->H;
	if (c->lbr && c->has_b)
		cg_line(cg, "memcpy(ga, Br + %lld, %lld * sizeof(*ga));", 2 * H, H);
	else
		cg_line(cg, "memset(ga, 0, %lld * sizeof(*ga));", H);
	if (!c->lbr) {
		cg_line(cg, "for (size_t i = 0; i < %lld; i++)", H);
		cg_line(cg, "    gx[i] = g[%lld + i] * hb[i];", H);
	}
	char ra[48];
	snprintf(ra, sizeof(ra), "R + %lld", 2 * H * H);
	rnn_gemv(cg, c->lbr ? "hb" : "gx", ra, H, "gr", H, "R_h h");
	cg_line(cg, "for (size_t j = 0; j < %lld; j++)", H);
	cg_line(cg, "    ga[j] += gr[j];");
}

/*
 * GRU's update on vectors of units (default Sigmoid, Tanh; H a whole
 * number of vectors; the gates' products by the GEMV runtime), in the
 * scalar loop's order: z and r of every unit, then R_h against r * h (or h
 * with linear_before_reset), then the h gate and the new state. The scalar
 * form called expf twice and rl_tanhf once per unit and step, and ran as
 * long as the two GEMVs (64 steps of 256 units: 0.85 ms of 1.7).
 */
static void gru_vec(const struct cell *c)
{
	struct rl_cgen *cg = c->cg;
	long long H = (long long)c->H;
	cg_line(cg, "for (size_t j = 0; j < %lld; j += RL_VW) {", H);
	cg->indent++;
	cg_line(cg, "rl_vf vz = *(const rl_vfu *)(g + j), vr = *(const rl_vfu *)(g + j + %lld);", H);
	if (*c->clip) {
		cg_line(cg, "rl_vclamp(&vz, &vz, -%s, %s);", c->clip, c->clip);
		cg_line(cg, "rl_vclamp(&vr, &vr, -%s, %s);", c->clip, c->clip);
	}
	cg_line(cg, "rl_vf zs, rs;");
	cg_line(cg, "rl_vsigmoid(&zs, &vz);");
	cg_line(cg, "rl_vsigmoid(&rs, &vr);");
	cg_line(cg, "*(rl_vfu *)(g + j) = zs;");
	cg_line(cg, "*(rl_vfu *)(g + j + %lld) = rs;", H);
	cg->indent--;
	cg_line(cg, "}");
	gru_rh_gemv(c);
	cg_line(cg, "for (size_t j = 0; j < %lld; j += RL_VW) {", H);
	cg->indent++;
	cg_line(cg, "const rl_vf z = *(const rl_vfu *)(g + j), ha = *(const rl_vfu *)(ga + j);");
	if (c->lbr)
		cg_line(cg, "rl_vf a = *(const rl_vfu *)(g + %lld + j) + *(const rl_vfu *)(g + %lld + j) * ha;",
		        2 * H, H);
	else if (c->has_b)
		cg_line(cg, "rl_vf a = *(const rl_vfu *)(g + %lld + j) + ha + *(const rl_vfu *)(Br + %lld + j);",
		        2 * H, 2 * H);
	else
		cg_line(cg, "rl_vf a = *(const rl_vfu *)(g + %lld + j) + ha;", 2 * H);
	if (*c->clip)
		cg_line(cg, "rl_vclamp(&a, &a, -%s, %s);", c->clip, c->clip);
	cg_line(cg, "rl_vf hh;");
	cg_line(cg, "rl_vtanh(&hh, &a);");
	cg_line(cg, "*(rl_vfu *)(g + %lld + j) = (1 - z) * hh + z * *(const rl_vfu *)(hb + j);", 2 * H);
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "memcpy(hb, g + %lld, %lld * sizeof(*hb));", 2 * H, H);
}

static void cell_update_scalar(const struct cell *c, const struct act *A);

/* Loops over the H units of batch row b (hb, cb) with activations A. */
static void cell_update(const struct cell *c, const struct act *A)
{
	bool lstm = c->op == RL_OP_LSTM, gru = c->op == RL_OP_GRU;
	bool vec = (lstm || gru) && c->gemv && c->H % 16 == 0 &&
	           !strcmp(A[0].name, "Sigmoid") && !strcmp(A[1].name, "Tanh") &&
	           (gru || !strcmp(A[2].name, "Tanh"));
	if (!vec) {
		cell_update_scalar(c, A);
		return;
	}
	cg_vmath_need(c->cg, RL_VM_SIGMOID | RL_VM_TANH);
	c->cg->simd = 1;
	rl_buf_printf(&c->cg->body, "#ifdef RL_VEC\n");
	if (lstm)
		lstm_vec(c);
	else
		gru_vec(c);
	rl_buf_printf(&c->cg->body, "#else\n");
	cell_update_scalar(c, A);
	rl_buf_printf(&c->cg->body, "#endif\n");
}

static void cell_update_scalar(const struct cell *c, const struct act *A)
{
	struct rl_cgen *cg = c->cg;
	const char *T = c->T;
	long long H = (long long)c->H;
	char e1[256], e2[256], src[64];
	cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", H);
	cg->indent++;
	if (c->op == RL_OP_RNN) {
		cell_pre(c, "v", "g[j]");
		cg_line(cg, "hb[j] = %s;", act_expr(cg, &A[0], c->dbl, "v", e1, sizeof(e1)));
	} else if (c->op == RL_OP_GRU) {
		/* z and r of every unit first: the h gate reads r * h of all */
		cell_pre(c, "vz", "g[j]");
		snprintf(src, sizeof(src), "g[j + %lld]", H);
		cell_pre(c, "vr", src);
		cg_line(cg, "g[j] = %s;", act_expr(cg, &A[0], c->dbl, "vz", e1, sizeof(e1)));
		cg_line(cg, "g[j + %lld] = %s;", H, act_expr(cg, &A[0], c->dbl, "vr", e1, sizeof(e1)));
		cg->indent--;
		cg_line(cg, "}");
		/* the recurrent part of the h gate, (r * h) R_h, or R_h h + Rb_h
		 * that r scales with linear_before_reset */
		if (c->gemv) {
			gru_rh_gemv(c);
		} else {
			if (c->lbr && c->has_b)
				cg_line(cg, "memcpy(ga, Br + %lld, %lld * sizeof(*ga));", 2 * H, H);
			else
				cg_line(cg, "memset(ga, 0, %lld * sizeof(*ga));", H);
			if (c->lbr)
				snprintf(src, sizeof(src), "hb[i]");
			else
				snprintf(src, sizeof(src), "g[%lld + i] * hb[i]", H);
			cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", H);
			cg_line(cg, "    const %s hi = %s, *restrict ri = rt + i * %lld + %lld;", T, src,
			        3 * H, 2 * H);
			cg_line(cg, "    for (size_t j = 0; j < %lld; j++)", H);
			cg_line(cg, "        ga[j] += ri[j] * hi;");
			cg_line(cg, "}");
		}
		cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", H);
		cg->indent++;
		if (c->lbr)
			cg_line(cg, "%s a = g[%lld + j] + g[%lld + j] * ga[j];", T, 2 * H, H);
		else if (c->has_b)
			cg_line(cg, "%s a = g[%lld + j] + ga[j] + Br[%lld + j];", T, 2 * H, 2 * H);
		else
			cg_line(cg, "%s a = g[%lld + j] + ga[j];", T, 2 * H);
		cell_pre(c, "vh", "a");
		cg_line(cg, "const %s hh = %s;", T, act_expr(cg, &A[1], c->dbl, "vh", e1, sizeof(e1)));
		/* the new h waits in the h row of g: later units still read the old */
		cg_line(cg, "g[%lld + j] = (1 - g[j]) * hh + g[j] * hb[j];", 2 * H);
		cg->indent--;
		cg_line(cg, "}");
		cg_line(cg, "memcpy(hb, g + %lld, %lld * sizeof(*hb));", 2 * H, H);
		return;
	} else {
		/* the peepholes join before the clip (onnxruntime's order) */
		cell_pre(c, "vi", c->has_p ? "g[j] + P[j] * cb[j]" : "g[j]");
		if (c->has_p)
			snprintf(src, sizeof(src), "g[j + %lld] + P[j + %lld] * cb[j]", 2 * H, 2 * H);
		else
			snprintf(src, sizeof(src), "g[j + %lld]", 2 * H);
		if (!c->coupled)
			cell_pre(c, "vf", src);
		snprintf(src, sizeof(src), "g[j + %lld]", 3 * H);
		cell_pre(c, "vc", src);
		cg_line(cg, "const %s ig = %s;", T, act_expr(cg, &A[0], c->dbl, "vi", e1, sizeof(e1)));
		if (c->coupled)
			cg_line(cg, "const %s fg = 1 - ig;", T);
		else
			cg_line(cg, "const %s fg = %s;", T, act_expr(cg, &A[0], c->dbl, "vf", e1, sizeof(e1)));
		cg_line(cg, "const %s cn = fg * cb[j] + ig * %s;", T,
		        act_expr(cg, &A[1], c->dbl, "vc", e1, sizeof(e1)));
		cg_line(cg, "cb[j] = cn;");
		if (c->has_p)
			snprintf(src, sizeof(src), "g[j + %lld] + P[j + %lld] * cn", H, H);
		else
			snprintf(src, sizeof(src), "g[j + %lld]", H);
		cell_pre(c, "vo", src);
		cg_line(cg, "hb[j] = %s * %s;", act_expr(cg, &A[0], c->dbl, "vo", e1, sizeof(e1)),
		        act_expr(cg, &A[2], c->dbl, "cn", e2, sizeof(e2)));
	}
	cg->indent--;
	cg_line(cg, "}");
}

static enum rl_status emit_rnn(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *w = cg_in(cg, node, 1);
	const struct rl_value *r = cg_in(cg, node, 2);
	bool has_b = cg_in(cg, node, 3), has_len = cg_in(cg, node, 4), has_h0 = cg_in(cg, node, 5);
	bool lstm = nd->op == RL_OP_LSTM, gru = nd->op == RL_OP_GRU;
	bool has_c0 = lstm && cg_in(cg, node, 6), has_p = lstm && cg_in(cg, node, 7);
	const struct rl_value *y = cg_out(cg, node, 0), *yh = cg_out(cg, node, 1);
	const struct rl_value *yc = lstm ? cg_out(cg, node, 2) : NULL;
	if (!float_dt(x->dtype))
		return cg_error(cg, node, "%s is not supported for %s (float32 and float64 are)",
		                rl_op_table[nd->op].name, rl_dtype_name(x->dtype));
	bool dbl = x->dtype == RL_DT_DOUBLE;
	const char *T = cg_ctype(x->dtype);
	int layout = (int)rl_node_attr_int(nd, "layout", 0);
	const char *dir = rl_node_attr_str(nd, "direction", "forward");
	int D = (int)w->shape.d[0].v, G = lstm ? 4 : gru ? 3 : 1;
	int64_t S = x->shape.d[layout ? 1 : 0].v, B = x->shape.d[layout ? 0 : 1].v;
	int64_t I = x->shape.d[2].v, H = r->shape.d[2].v;
	int64_t lbr = gru ? rl_node_attr_int(nd, "linear_before_reset", 0) : 0;
	int64_t coupled = lstm ? rl_node_attr_int(nd, "input_forget", 0) : 0;
	const struct rl_attr *clip = rl_node_attr(nd, "clip");
	static const char *const d_rnn[] = {"Tanh"}, *const d_gru[] = {"Sigmoid", "Tanh"},
	                         *const d_lstm[] = {"Sigmoid", "Tanh", "Tanh"};
	int na = lstm ? 3 : gru ? 2 : 1;
	struct act acts[6];
	enum rl_status st = RL_OK;
	if (!rnn_acts(cg, node, na, D, lstm ? d_lstm : gru ? d_gru : d_rnn, acts, &st))
		return st;
	if (S == 0 || B == 0)
		return RL_OK;
	const char *k = cg->kname;
	char cl[48] = "";
	if (clip && clip->kind == RL_ATTR_FLOAT)
		dlit(cl, sizeof(cl), clip->f);
	/* float32 outside static mode: the gate products are GEMVs over W's and
	 * R's rows as stored (rl_sgemv_rows of the GEMM runtime: AVX-512 / AVX2
	 * FMA kernels picked at init, 4 rows at a time); else (float64, static
	 * mode) W and R are transposed per run and the gates summed along
	 * contiguous rows in plain C */
	bool gv = !dbl && !cg->static_mode && !cg->device;
	int64_t full = gru ? 2 * H : G * H; /* rows that take R h with the others */
	/* state: h and c per batch row; the gates of one row */
	if (gv) {
		cg_gemm_runtime(cg);
		if (!cg->init.s || !strstr(cg->init.s, "rl_gemm_init();"))
			rl_buf_printf(&cg->init, "    rl_gemm_init(); /* %s: the GEMV kernels for this CPU */\n",
			              k);
		rl_buf_printf(&cg->statics, "static %s %s_h[%lld], %s_g[%lld], %s_r[%lld];\n", T, k,
		              (long long)(B * H), k, (long long)(G * H), k, (long long)full);
		if (gru)
			rl_buf_printf(&cg->statics, "static %s %s_x[%lld];\n", T, k, (long long)H);
	} else {
		rl_buf_printf(&cg->statics, "static %s %s_h[%lld], %s_g[%lld], %s_wt[%lld], %s_rt[%lld];\n",
		              T, k, (long long)(B * H), k, (long long)(G * H), k, (long long)(G * H * I),
		              k, (long long)(G * H * H));
	}
	if (gru)
		rl_buf_printf(&cg->statics, "static %s %s_a[%lld];\n", T, k, (long long)H);
	if (lstm)
		rl_buf_printf(&cg->statics, "static %s %s_c[%lld];\n", T, k, (long long)(B * H));
	cg_line(cg, "/* %s, %s, %d gate%s of %lld units, %lld steps, batch %lld, input %lld */",
	        rl_op_table[nd->op].name, dir, G, G > 1 ? "s" : "", (long long)H, (long long)S,
	        (long long)B, (long long)I);
	cg_line(cg, "%s *restrict h = %s_h;", T, k);
	if (lstm)
		cg_line(cg, "%s *restrict c = %s_c;", T, k);
	if (gv)
		cg_line(cg, "%s *restrict g = %s_g, *restrict gr = %s_r;", T, k, k);
	else
		cg_line(cg, "%s *restrict g = %s_g, *restrict wt = %s_wt, *restrict rt = %s_rt;", T, k, k,
		        k);
	if (gru)
		cg_line(cg, "%s *restrict ga = %s_a;", T, k);
	if (gru && gv)
		cg_line(cg, "%s *restrict gx = %s_x;", T, k);
	if (y)
		cg_line(cg, "memset(Y0, 0, %lld * sizeof(*Y0));", (long long)numel(y));
	/* the input projections W x of every step, batch row and direction at
	 * once, before the recurrence: one packed SGEMM X [S*B, I] x W^T [I,
	 * D*G*H] (X's rows in its own order), which reads W once per run where
	 * a GEMV per step read it S times (ddddocr_ocr's LSTM: 4 MB per
	 * direction and step from the last-level cache) */
	int64_t xrows = S * B, xcols = (int64_t)D * G * H;
	bool xg = gv && xrows >= 2 && (double)xrows * (double)xcols * 4 <= RNN_XW_BYTES;
	if (xg) {
		rl_buf_printf(&cg->statics, "static float %s_xw[%lld];\n", k,
		              (long long)(xrows * xcols));
		struct cg_gemm_plan pl;
		cg_gemm_plan(NULL, xrows, xcols, I, &pl);
		bool w_const = cg_value_stored_const(cg, nd->in[1]);
		char bp[160] = "";
		cg_gemm_init(cg, &pl, !w_const);
		if (w_const)
			cg_gemm_pack_b(cg, nd->in[1], I, xcols, 1, I, &pl, bp, sizeof(bp));
		struct cg_gemm_call call = {
			.M = xrows, .N = xcols, .K = I, .a = "X0", .a_rs = I, .a_ks = 1, .alpha = 1.0,
			.b = w_const ? NULL : "X1", .b_rs = 1, .b_cs = I, .bp = w_const ? bp : NULL,
			.y = "xw", .ldy = xcols, .ybase = "0", .span = xcols,
		};
		if (w_const)
			cg_line(cg, "(void)X1; /* W: packed at init */");
		cg_line(cg, "float *restrict xw = %s_xw; /* W x: [%s][%d * %lld] */", k,
		        layout ? "b * S + t" : "t * B + b", D, (long long)(G * H));
		/* its blocks split across threads (a task function of their own,
		 * written to the statics: the blocks' text captured from cg->body);
		 * run in one thread, rnn.onnx's LSTM and GRU projections (8.4 and
		 * 12.6 M multiply-adds) were a fifth of its time at two threads */
		rnn_xw(cg, &call, &pl, w_const, (double)xrows * (double)xcols * (double)I);
	}
	cg_line(cg, "for (size_t d = 0; d < %d; d++) {", D);
	cg->indent++;
	/* one direction: known here, so no flag in the C */
	int rev1 = D == 2 ? -1 : strcmp(dir, "reverse") == 0;
	if (D == 2)
		cg_line(cg, "const int rev = d == 1;");
	if (!xg)
		cg_line(cg, "const %s *restrict W = X1 + d * %lld;", T, (long long)(G * H * I));
	cg_line(cg, "const %s *restrict R = X2 + d * %lld;", T, (long long)(G * H * H));
	if (has_b)
		cg_line(cg, "const %s *restrict Bw = X3 + d * %lld, *restrict Br = Bw + %lld;", T,
		        (long long)(2 * G * H), (long long)(G * H));
	if (has_p)
		cg_line(cg, "const %s *restrict P = X7 + d * %lld;", T, (long long)(3 * H));
	/* W and R of this direction transposed, so that the gate loops below run
	 * along contiguous rows: multiply-adds the compiler vectorizes without
	 * reassociating a sum (the GEMV path reads them as they are) */
	if (!gv) {
		cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)(G * H));
		cg_line(cg, "    for (size_t i = 0; i < %lld; i++)", (long long)I);
		cg_line(cg, "        wt[i * %lld + q] = W[q * %lld + i];", (long long)(G * H),
		        (long long)I);
		cg_line(cg, "    for (size_t i = 0; i < %lld; i++)", (long long)H);
		cg_line(cg, "        rt[i * %lld + q] = R[q * %lld + i];", (long long)(G * H),
		        (long long)H);
		cg_line(cg, "}");
	}
	/* initial state */
	char hs[96];
	if (layout)
		snprintf(hs, sizeof(hs), "(b * %d + d) * %lld + j", D, (long long)H);
	else
		snprintf(hs, sizeof(hs), "(d * %lld + b) * %lld + j", (long long)B, (long long)H);
	cg_line(cg, "for (size_t b = 0; b < %lld; b++)", (long long)B);
	cg_line(cg, "    for (size_t j = 0; j < %lld; j++) {", (long long)H);
	if (has_h0)
		cg_line(cg, "        h[b * %lld + j] = X5[%s];", (long long)H, hs);
	else
		cg_line(cg, "        h[b * %lld + j] = %s;", (long long)H, cg_zero(T));
	if (lstm && has_c0)
		cg_line(cg, "        c[b * %lld + j] = X6[%s];", (long long)H, hs);
	else if (lstm)
		cg_line(cg, "        c[b * %lld + j] = 0;", (long long)H);
	cg_line(cg, "    }");
	cg_line(cg, "for (size_t b = 0; b < %lld; b++) {", (long long)B);
	cg->indent++;
	if (has_len) {
		cg_line(cg, "int64_t len = X4[b];");
		cg_line(cg, "if (len > %lld)", (long long)S);
		cg_line(cg, "    len = %lld;", (long long)S);
		cg_line(cg, "if (len < 0)");
		cg_line(cg, "    len = 0;");
	} else {
		cg_line(cg, "const int64_t len = %lld;", (long long)S);
	}
	cg_line(cg, "%s *restrict hb = h + b * %lld;", T, (long long)H);
	if (lstm)
		cg_line(cg, "%s *restrict cb = c + b * %lld;", T, (long long)H);
	cg_line(cg, "for (int64_t s = 0; s < len; s++) {");
	cg->indent++;
	if (rev1 < 0)
		cg_line(cg, "const size_t t = (size_t)(rev ? len - 1 - s : s);");
	else if (rev1)
		cg_line(cg, "const size_t t = (size_t)(len - 1 - s);");
	else
		cg_line(cg, "const size_t t = (size_t)s;");
	if (!xg) {
		if (layout)
			cg_line(cg, "const %s *restrict xt = X0 + (b * %lld + t) * %lld;", T, (long long)S,
			        (long long)I);
		else
			cg_line(cg, "const %s *restrict xt = X0 + (t * %lld + b) * %lld;", T, (long long)B,
			        (long long)I);
	}
	/* gate pre-activations: bias + W x + R h, except the R h of GRU's h
	 * gate, which needs r first (cell_update) */
	if (gv) {
		if (xg) {
			if (layout)
				cg_line(cg, "const float *restrict xr = xw + (b * %lld + t) * %lld + d * %lld;",
				        (long long)S, (long long)xcols, (long long)(G * H));
			else
				cg_line(cg, "const float *restrict xr = xw + (t * %lld + b) * %lld + d * %lld;",
				        (long long)B, (long long)xcols, (long long)(G * H));
		} else {
			rnn_gemv(cg, "xt", "W", I, "g", G * H, "W x");
		}
		rnn_gemv(cg, "hb", "R", H, "gr", full, "R h");
		const char *wx = xg ? "xr[q] + " : "g[q] + ";
		cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)full);
		cg_line(cg, "    g[q] = %s%s;", wx, has_b ? "gr[q] + (Bw[q] + Br[q])" : "gr[q]");
		if (full < G * H && (has_b || xg)) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)full, (long long)(G * H));
			cg_line(cg, "    g[q] = %s%s;", xg ? "xr[q]" : "g[q]", has_b ? " + Bw[q]" : "");
		}
	} else if (has_b) {
		cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)full);
		cg_line(cg, "    g[q] = Bw[q] + Br[q];");
		if (full < G * H) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)full, (long long)(G * H));
			cg_line(cg, "    g[q] = Bw[q];");
		}
	} else {
		cg_line(cg, "memset(g, 0, %lld * sizeof(*g));", (long long)(G * H));
	}
	if (!gv) {
		cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)I);
		cg_line(cg, "    const %s xi = xt[i], *restrict wi = wt + i * %lld;", T, (long long)(G * H));
		cg_line(cg, "    for (size_t q = 0; q < %lld; q++)", (long long)(G * H));
		cg_line(cg, "        g[q] += wi[q] * xi;");
		cg_line(cg, "}");
		cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)H);
		cg_line(cg, "    const %s hi = hb[i], *restrict ri = rt + i * %lld;", T, (long long)(G * H));
		cg_line(cg, "    for (size_t q = 0; q < %lld; q++)", (long long)full);
		cg_line(cg, "        g[q] += ri[q] * hi;");
		cg_line(cg, "}");
	}
	/* activations, one branch per direction when the two differ */
	int variants = 1;
	if (D == 2)
		for (int q = 0; q < na; q++)
			if (strcmp(acts[q].name, acts[na + q].name) || acts[q].alpha != acts[na + q].alpha ||
			    acts[q].beta != acts[na + q].beta)
				variants = 2;
	struct cell c = {cg, T, dbl, cl, H, has_b, has_p, lbr, coupled, nd->op, gv};
	for (int v = 0; v < variants; v++) {
		if (variants == 2) {
			cg_line(cg, v == 0 ? "if (d == 0) {" : "} else {");
			cg->indent++;
		}
		cell_update(&c, &acts[v * na]);
		if (variants == 2)
			cg->indent--;
	}
	if (variants == 2)
		cg_line(cg, "}");
	if (y) {
		if (layout)
			cg_line(cg, "%s *restrict yt = Y0 + ((b * %lld + t) * %d + d) * %lld;", T,
			        (long long)S, D, (long long)H);
		else
			cg_line(cg, "%s *restrict yt = Y0 + ((t * %d + d) * %lld + b) * %lld;", T, D,
			        (long long)B, (long long)H);
		cg_line(cg, "memcpy(yt, hb, %lld * sizeof(*yt));", (long long)H);
	}
	cg->indent--;
	cg_line(cg, "}"); /* steps */
	char ys[96];
	if (layout)
		snprintf(ys, sizeof(ys), "(b * %d + d) * %lld", D, (long long)H);
	else
		snprintf(ys, sizeof(ys), "(d * %lld + b) * %lld", (long long)B, (long long)H);
	/* a row of length 0 gives zeros, as onnxruntime does, not its initial state */
	if (has_len && (yh || yc)) {
		cg_line(cg, "if (len == 0) {");
		cg_line(cg, "    memset(hb, 0, %lld * sizeof(*hb));", (long long)H);
		if (lstm)
			cg_line(cg, "    memset(cb, 0, %lld * sizeof(*cb));", (long long)H);
		cg_line(cg, "}");
	}
	if (yh)
		cg_line(cg, "memcpy(Y1 + %s, hb, %lld * sizeof(*Y1));", ys, (long long)H);
	if (yc)
		cg_line(cg, "memcpy(Y2 + %s, cb, %lld * sizeof(*Y2));", ys, (long long)H);
	cg->indent--;
	cg_line(cg, "}"); /* batch */
	cg->indent--;
	cg_line(cg, "}"); /* directions */
	return RL_OK;
}

/* ---- DFT ------------------------------------------------------------------ */

/* "static const size_t NAME[r] = {d0, ...};" for a static shape */
static void dims_line(struct rl_cgen *cg, const char *name, const struct rl_shape *s)
{
	char b[RL_MAX_RANK * 24];
	size_t p = 0;
	for (int d = 0; d < s->rank; d++)
		p += (size_t)snprintf(b + p, sizeof(b) - p, "%s%lld", d ? ", " : "", (long long)s->d[d].v);
	cg_line(cg, "static const size_t %s[%d] = {%s};", name, s->rank, b);
}

/* `int64_t var = <scalar input slot, or def when absent>;` */
static void scalar_in(struct rl_cgen *cg, uint32_t node, int slot, const char *var, long long def)
{
	if (cg_in(cg, node, slot))
		cg_line(cg, "int64_t %s = (int64_t)X%d[0];", var, slot);
	else
		cg_line(cg, "int64_t %s = %lld;", var, def);
}

static enum rl_status emit_dft(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (!float_dt(x->dtype))
		return cg_error(cg, node, "DFT is not supported for %s (float32 and float64 are)",
		                rl_dtype_name(x->dtype));
	bool inv = rl_node_attr_int(nd, "inverse", 0) != 0;
	bool one = rl_node_attr_int(nd, "onesided", 0) != 0;
	int r = x->shape.rank;
	int64_t cx = x->shape.d[r - 1].v, cy = y->shape.d[r - 1].v;
	const char *T = cg_ctype(x->dtype);
	cg_line(cg, "/* %s%s DFT, direct: %s */", one ? "one-sided " : "", inv ? "inverse" : "forward",
	        inv && one ? "Hermitian spectrum in, real signal out" : cx == 2 ? "complex in" : "real in");
	dims_line(cg, "xd", &x->shape);
	dims_line(cg, "yd", &y->shape);
	if (nd->opset >= 20)
		scalar_in(cg, node, 2, "a", -2);
	else
		cg_line(cg, "int64_t a = %lld;", (long long)rl_node_attr_int(nd, "axis", 1));
	cg_line(cg, "if (a < 0)");
	cg_line(cg, "    a += %d;", r);
	cg_line(cg, "memset(Y0, 0, %lld * sizeof(*Y0));", (long long)numel(y));
	/* an axis that does not fit the static shapes leaves zeros */
	cg_line(cg, "if (a < 0 || a >= %d)", r - 1);
	cg_line(cg, "    return;");
	cg_line(cg, "for (int k = 0; k < %d; k++)", r - 1);
	cg_line(cg, "    if (k != a && xd[k] != yd[k])");
	cg_line(cg, "        return;");
	cg_line(cg, "const int64_t nx = (int64_t)xd[a], ny = (int64_t)yd[a];");
	if (cg_in(cg, node, 1))
		cg_line(cg, "const int64_t L = (int64_t)X1[0];");
	else
		cg_line(cg, "const int64_t L = %s;", inv && one ? "2 * (nx - 1)" : "nx");
	if (inv && one)
		cg_line(cg, "if (L < 1 || ny != L)");
	else if (one)
		cg_line(cg, "if (L < 1 || ny != L / 2 + 1)");
	else
		cg_line(cg, "if (L < 1 || ny != L)");
	cg_line(cg, "    return;");
	cg_line(cg, "size_t outer = 1, inner = 1;");
	cg_line(cg, "for (int64_t k = 0; k < a; k++)");
	cg_line(cg, "    outer *= xd[k];");
	cg_line(cg, "for (int k = (int)a + 1; k < %d; k++)", r - 1);
	cg_line(cg, "    inner *= xd[k];");
	cg_line(cg, "const int64_t n = nx < L ? nx : L; /* input points used (zero padded to L) */");
	cg_line(cg, "const double w = %s6.283185307179586476925286766559 / (double)L;", inv ? "" : "-");
	cg_line(cg, "for (size_t o = 0; o < outer; o++)");
	cg_line(cg, "    for (size_t i = 0; i < inner; i++) {");
	cg->indent += 2;
	cg_line(cg, "const %s *restrict xl = X0 + (o * (size_t)nx * inner + i) * %lld;", T, (long long)cx);
	cg_line(cg, "%s *restrict yl = Y0 + (o * (size_t)ny * inner + i) * %lld;", T, (long long)cy);
	cg_line(cg, "for (int64_t k = 0; k < ny; k++) {");
	cg->indent++;
	cg_line(cg, inv && one ? "double re = 0.0;" : "double re = 0.0, im = 0.0;");
	if (inv && one) {
		/* irfft: X_k for k <= L/2 stands for itself and for X_{L-k}
		 * conjugated, so a term counts twice except k = 0 and L/2 */
		cg_line(cg, "for (int64_t t = 0; t < n && t <= L / 2; t++) {");
		cg->indent++;
		cg_line(cg, "const double ang = w * (double)((t * k) %% L);");
		cg_line(cg, "const double c = (t == 0 || 2 * t == L) ? 1 : 2;");
		cg_line(cg, "const double xr = xl[(size_t)t * inner * %lld];", (long long)cx);
		if (cx == 2)
			cg_line(cg, "const double xi = xl[(size_t)t * inner * 2 + 1];");
		else
			cg_line(cg, "const double xi = 0;");
		cg_line(cg, "re += c * (xr * cos(ang) - xi * sin(ang));");
		cg->indent--;
		cg_line(cg, "}");
		cg_line(cg, "yl[(size_t)k * inner * %lld] = (%s)(re / (double)L);", (long long)cy, T);
	} else {
		cg_line(cg, "for (int64_t t = 0; t < n; t++) {");
		cg->indent++;
		cg_line(cg, "const double ang = w * (double)((t * k) %% L);");
		cg_line(cg, "const double c = cos(ang), s = sin(ang);");
		cg_line(cg, "const double xr = xl[(size_t)t * inner * %lld];", (long long)cx);
		if (cx == 2) {
			cg_line(cg, "const double xi = xl[(size_t)t * inner * 2 + 1];");
			cg_line(cg, "re += xr * c - xi * s;");
			cg_line(cg, "im += xr * s + xi * c;");
		} else {
			cg_line(cg, "re += xr * c;");
			cg_line(cg, "im += xr * s;");
		}
		cg->indent--;
		cg_line(cg, "}");
		if (inv) {
			cg_line(cg, "re /= (double)L;");
			cg_line(cg, "im /= (double)L;");
		}
		cg_line(cg, "yl[(size_t)k * inner * 2] = (%s)re;", T);
		cg_line(cg, "yl[(size_t)k * inner * 2 + 1] = (%s)im;", T);
	}
	cg->indent--;
	cg_line(cg, "}");
	cg->indent -= 2;
	cg_line(cg, "    }");
	return RL_OK;
}

/* ---- STFT ----------------------------------------------------------------- */

static enum rl_status emit_stft(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *win = cg_in(cg, node, 2);
	const struct rl_value *y = cg_out(cg, node, 0);
	if (!float_dt(x->dtype))
		return cg_error(cg, node, "STFT is not supported for %s (float32 and float64 are)",
		                rl_dtype_name(x->dtype));
	bool one = rl_node_attr_int(nd, "onesided", 1) != 0;
	const char *T = cg_ctype(x->dtype);
	int64_t Bt = x->shape.d[0].v, N = x->shape.d[1].v, cx = x->shape.d[2].v;
	int64_t F = y->shape.d[1].v, K = y->shape.d[2].v;
	int64_t Lw = win ? win->shape.d[0].v : -1;
	cg_line(cg, "/* %sSTFT, direct: %lld frames of %lld bins */", one ? "one-sided " : "",
	        (long long)F, (long long)K);
	cg_line(cg, "const int64_t step = (int64_t)X1[0];");
	if (cg_in(cg, node, 3))
		cg_line(cg, "const int64_t L = (int64_t)X3[0];");
	else
		cg_line(cg, "const int64_t L = %lld;", (long long)(win ? Lw : N));
	cg_line(cg, "memset(Y0, 0, %lld * sizeof(*Y0));", (long long)numel(y));
	/* what the static output shape was built for */
	char wl[48] = "";
	if (win)
		snprintf(wl, sizeof(wl), " || L != %lld", (long long)Lw);
	cg_line(cg, "if (L < 1 || step < 1 || L > %lld || 1 + (%lld - L) / step != %lld || %s != %lld%s)",
	        (long long)N, (long long)N, (long long)F, one ? "L / 2 + 1" : "L", (long long)K, wl);
	cg_line(cg, "    return;");
	cg_line(cg, "const double w = -6.283185307179586476925286766559 / (double)L;");
	cg_line(cg, "for (size_t b = 0; b < %lld; b++)", (long long)Bt);
	cg_line(cg, "    for (size_t f = 0; f < %lld; f++)", (long long)F);
	cg_line(cg, "        for (int64_t k = 0; k < %lld; k++) {", (long long)K);
	cg->indent += 3;
	cg_line(cg, "const %s *restrict xf = X0 + (b * %lld + f * (size_t)step) * %lld;", T,
	        (long long)N, (long long)cx);
	cg_line(cg, "double re = 0.0, im = 0.0;");
	cg_line(cg, "for (int64_t t = 0; t < L; t++) {");
	cg->indent++;
	cg_line(cg, "const double ang = w * (double)((t * k) %% L);");
	cg_line(cg, "const double c = cos(ang), s = sin(ang);");
	cg_line(cg, "const double wt = %s;", win ? "X2[t]" : "1");
	cg_line(cg, "const double xr = wt * xf[t * %lld];", (long long)cx);
	if (cx == 2) {
		cg_line(cg, "const double xi = wt * xf[t * 2 + 1];");
		cg_line(cg, "re += xr * c - xi * s;");
		cg_line(cg, "im += xr * s + xi * c;");
	} else {
		cg_line(cg, "re += xr * c;");
		cg_line(cg, "im += xr * s;");
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "%s *restrict yk = Y0 + ((b * %lld + f) * %lld + (size_t)k) * 2;", T, (long long)F,
	        (long long)K);
	cg_line(cg, "yk[0] = (%s)re;", T);
	cg_line(cg, "yk[1] = (%s)im;", T);
	cg->indent -= 3;
	cg_line(cg, "        }");
	return RL_OK;
}

/* ---- Det ------------------------------------------------------------------ */

static enum rl_status emit_det(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	if (!float_dt(x->dtype))
		return cg_error(cg, node, "Det is not supported for %s (float32 and float64 are)",
		                rl_dtype_name(x->dtype));
	int64_t M = x->shape.d[x->shape.rank - 1].v, mats = numel(y);
	const char *T = cg_ctype(x->dtype);
	if (M == 0) {
		cg_line(cg, "for (size_t m = 0; m < %lld; m++)", (long long)mats);
		cg_line(cg, "    Y0[m] = 1;");
		return RL_OK;
	}
	rl_buf_printf(&cg->statics, "static double %s_lu[%lld];\n", cg->kname, (long long)(M * M));
	cg_line(cg, "/* LU with partial pivoting, in double */");
	cg_line(cg, "double *restrict lu = %s_lu;", cg->kname);
	cg_line(cg, "for (size_t m = 0; m < %lld; m++) {", (long long)mats);
	cg->indent++;
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)(M * M));
	cg_line(cg, "    lu[i] = X0[m * %lld + i];", (long long)(M * M));
	cg_line(cg, "double det = 1;");
	cg_line(cg, "for (size_t k = 0; k < %lld && det != 0; k++) {", (long long)M);
	cg->indent++;
	cg_line(cg, "size_t p = k;");
	cg_line(cg, "for (size_t i = k + 1; i < %lld; i++)", (long long)M);
	cg_line(cg, "    if (fabs(lu[i * %lld + k]) > fabs(lu[p * %lld + k]))", (long long)M, (long long)M);
	cg_line(cg, "        p = i;");
	cg_line(cg, "if (p != k) {");
	cg_line(cg, "    for (size_t j = 0; j < %lld; j++) {", (long long)M);
	cg_line(cg, "        const double t = lu[k * %lld + j];", (long long)M);
	cg_line(cg, "        lu[k * %lld + j] = lu[p * %lld + j];", (long long)M, (long long)M);
	cg_line(cg, "        lu[p * %lld + j] = t;", (long long)M);
	cg_line(cg, "    }");
	cg_line(cg, "    det = -det;");
	cg_line(cg, "}");
	cg_line(cg, "const double piv = lu[k * %lld + k];", (long long)M);
	cg_line(cg, "det *= piv;");
	cg_line(cg, "if (piv == 0)");
	cg_line(cg, "    break;");
	cg_line(cg, "for (size_t i = k + 1; i < %lld; i++) {", (long long)M);
	cg_line(cg, "    const double f = lu[i * %lld + k] / piv;", (long long)M);
	cg_line(cg, "    for (size_t j = k + 1; j < %lld; j++)", (long long)M);
	cg_line(cg, "        lu[i * %lld + j] -= f * lu[k * %lld + j];", (long long)M, (long long)M);
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "Y0[m] = (%s)det;", T);
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

/* ---- TfIdfVectorizer -------------------------------------------------------- */

static enum rl_status emit_tfidf(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	const int64_t *pool, *counts, *idx;
	int np = rl_node_attr_ints(nd, "pool_int64s", &pool);
	int nc = rl_node_attr_ints(nd, "ngram_counts", &counts);
	int ni = rl_node_attr_ints(nd, "ngram_indexes", &idx);
	if (np < 0)
		return cg_error(cg, node, "a pool of strings is not supported (pool_int64s is)");
	int64_t mn = rl_node_attr_int(nd, "min_gram_length", 1);
	int64_t mx = rl_node_attr_int(nd, "max_gram_length", 1);
	int64_t skip = rl_node_attr_int(nd, "max_skip_count", 0);
	const char *mode = rl_node_attr_str(nd, "mode", "TF");
	int wmode = !strcmp(mode, "TF") ? 0 : !strcmp(mode, "IDF") ? 1 : !strcmp(mode, "TFIDF") ? 2 : -1;
	const struct rl_attr *wa = rl_node_attr(nd, "weights");
	if (wmode < 0)
		return cg_error(cg, node, "mode '%s' is not TF, IDF or TFIDF", mode);
	if (mn < 1 || mx < mn || mx > 64 || skip < 0 || nc < 1)
		return cg_error(cg, node, "gram lengths %lld..%lld, max_skip_count %lld or ngram_counts "
		                "are not supported", (long long)mn, (long long)mx, (long long)skip);
	int64_t O = y->shape.d[y->shape.rank - 1].v;
	int64_t C = x->shape.rank == 0 ? 1 : x->shape.d[x->shape.rank - 1].v;
	int64_t rows = C > 0 ? numel(x) / C : 0;
	if (wa && wa->kind == RL_ATTR_FLOATS && wa->n > 0 && wa->n < ni)
		return cg_error(cg, node, "weights has %d entries for %d n-grams", wa->n, ni);
	/* the n-grams in [mn, mx], by size: tokens, then per gram its output */
	struct rl_buf tok = {0}, out = {0}, rng = {0};
	int64_t id = 0, ngr = 0, ntok = 0;
	int64_t lo[66] = {0}, hi[66] = {0};
	enum rl_status st = RL_OK;
	for (int i = 0; i < nc && st == RL_OK; i++) {
		int64_t start = counts[i], end = i + 1 < nc ? counts[i + 1] : np, size = i + 1;
		if (start < 0 || end > np || end < start) {
			st = cg_error(cg, node, "ngram_counts does not fit pool_int64s");
			break;
		}
		int64_t cnt = (end - start) / size;
		if (size < mn || size > mx) {
			id += cnt;
			continue;
		}
		lo[size] = ngr;
		for (int64_t q = 0; q < cnt; q++, id++, ngr++) {
			if (id >= ni) {
				st = cg_error(cg, node, "ngram_indexes has %d entries, fewer than the n-grams", ni);
				break;
			}
			for (int64_t t = 0; t < size; t++, ntok++)
				rl_buf_printf(&tok, "%s%lld", ntok ? ", " : "", (long long)pool[start + q * size + t]);
			rl_buf_printf(&out, "%s%lld", ngr ? ", " : "", (long long)idx[id]);
		}
		hi[size] = ngr;
	}
	if (st == RL_OK) {
		const char *k = cg->kname;
		cg_line(cg, "/* n-gram counts, lengths %lld..%lld, up to %lld skipped, %s */", (long long)mn,
		        (long long)mx, (long long)skip, mode);
		cg_line(cg, "memset(Y0, 0, %lld * sizeof(*Y0));", (long long)numel(y));
		if (ngr > 0) {
			rl_buf_printf(&cg->statics, "static const int64_t %s_tok[%lld] = {%s};\n", k,
			              (long long)ntok, tok.s);
			rl_buf_printf(&cg->statics, "static const int64_t %s_out[%lld] = {%s};\n", k,
			              (long long)ngr, out.s);
			for (int64_t n = 1; n <= mx; n++)
				rl_buf_printf(&rng, "%s{%lld, %lld}", n > 1 ? ", " : "",
				              (long long)lo[n], (long long)hi[n]);
			rl_buf_printf(&cg->statics, "static const int64_t %s_rng[%lld][2] = {%s};\n", k,
			              (long long)mx, rng.s);
			/* each size's grams start at their first token: offsets */
			cg_line(cg, "for (size_t row = 0; row < %lld; row++) {", (long long)rows);
			cg->indent++;
			cg_line(cg, "const %s *restrict xr = X0 + row * %lld;", cg_ctype(x->dtype), (long long)C);
			cg_line(cg, "int64_t first = %lld;", (long long)mn);
			cg_line(cg, "for (int64_t d = 1; d <= %lld; d++) {", (long long)(skip + 1));
			cg->indent++;
			cg_line(cg, "for (int64_t s = 0; s < %lld; s++) {", (long long)C);
			cg->indent++;
			cg_line(cg, "const int64_t *tk = %s_tok;", k);
			cg_line(cg, "for (int64_t n = 1; n <= %lld; n++) {", (long long)mx);
			cg->indent++;
			cg_line(cg, "const int64_t g0 = %s_rng[n - 1][0], g1 = %s_rng[n - 1][1];", k, k);
			cg_line(cg, "const int64_t *gt = tk;");
			cg_line(cg, "tk += (g1 - g0) * n;");
			cg_line(cg, "if (n < first || s + (n - 1) * d >= %lld)", (long long)C);
			cg_line(cg, "    continue;");
			cg_line(cg, "int64_t hit = -1; /* a repeated n-gram counts for its last entry */");
			cg_line(cg, "for (int64_t q = g0; q < g1; q++, gt += n) {");
			cg_line(cg, "    int64_t t = 0;");
			cg_line(cg, "    while (t < n && (int64_t)xr[s + t * d] == gt[t])");
			cg_line(cg, "        t++;");
			cg_line(cg, "    if (t == n)");
			cg_line(cg, "        hit = q;");
			cg_line(cg, "}");
			cg_line(cg, "if (hit >= 0)");
			cg_line(cg, "    Y0[row * %lld + (size_t)%s_out[hit]] += 1;", (long long)O, k);
			cg->indent--;
			cg_line(cg, "}");
			cg->indent--;
			cg_line(cg, "}");
			cg_line(cg, "if (first == 1 && ++first > %lld) /* unigrams count once */", (long long)mx);
			cg_line(cg, "    break;");
			cg->indent--;
			cg_line(cg, "}");
			cg->indent--;
			cg_line(cg, "}");
		}
		if (wmode > 0) {
			bool w = wa && wa->kind == RL_ATTR_FLOATS && wa->n > 0;
			if (w) {
				/* weights[g] belongs to the g-th n-gram of the pool (the spec,
				 * and onnxruntime): moved to that n-gram's output */
				double *wo = calloc((size_t)O, sizeof(double));
				RL_ASSERT(wo);
				for (int g = 0; g < ni && g < wa->n; g++)
					if (idx[g] < O)
						wo[idx[g]] = wa->floats[g];
				struct rl_buf wb = {0};
				char lb[48];
				for (int64_t i = 0; i < O; i++)
					rl_buf_printf(&wb, "%s%s", i ? ", " : "", dlit(lb, sizeof(lb), wo[i]));
				free(wo);
				rl_buf_printf(&cg->statics, "static const float %s_w[%lld] = {%s};\n", k,
				              (long long)O, wb.s);
				rl_buf_free(&wb);
			}
			char wv[96];
			if (w)
				snprintf(wv, sizeof(wv), "%s_w[i %% %lld]", k, (long long)O);
			else
				snprintf(wv, sizeof(wv), "1");
			if (wmode == 1 || w)
				cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)numel(y));
			if (wmode == 1)
				cg_line(cg, "    Y0[i] = Y0[i] > 0 ? %s : 0;", wv);
			else if (w)
				cg_line(cg, "    Y0[i] *= %s;", wv);
		}
	}
	rl_buf_free(&tok);
	rl_buf_free(&out);
	rl_buf_free(&rng);
	return st;
}

/* ---- Binarizer, ArrayFeatureExtractor ---------------------------------------- */

static enum rl_status emit_binarizer(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0);
	char th[48];
	dlit(th, sizeof(th), rl_node_attr_float(nd, "threshold", 0.0));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)numel(x));
	cg_line(cg, "    Y0[i] = %s > %s ? %s : %s;", cg_load(cg, x->dtype, "X0[i]"), th,
	        cg_assign(cg, x->dtype, cg_lit(x->dtype, 1)), cg_assign(cg, x->dtype, cg_lit(x->dtype, 0)));
	return RL_OK;
}

static enum rl_status emit_afe(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *x = cg_in(cg, node, 0), *ind = cg_in(cg, node, 1);
	int64_t N = x->shape.d[x->shape.rank - 1].v, k = numel(ind);
	int64_t outer = N > 0 ? numel(x) / N : 0;
	cg_line(cg, "/* the last axis gathered at the given indices; one out of range gives 0 */");
	cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)outer);
	cg_line(cg, "    for (size_t j = 0; j < %lld; j++) {", (long long)k);
	cg_line(cg, "        int64_t q = X1[j];");
	cg_line(cg, "        if (q < 0)");
	cg_line(cg, "            q += %lld;", (long long)N);
	cg_line(cg, "        Y0[o * %lld + j] = q >= 0 && q < %lld ? X0[o * %lld + (size_t)q] : %s;",
	        (long long)k, (long long)N, (long long)N, cg_assign(cg, x->dtype, cg_lit(x->dtype, 0)));
	cg_line(cg, "    }");
	return RL_OK;
}

/* ---- TreeEnsemble ------------------------------------------------------------ */

/* Attribute `name` as a list of doubles (a tensor or floats); count or -1. */
static int attr_doubles(struct rl_cgen *cg, const struct rl_node *nd, const char *name,
                        double *out, int max)
{
	const struct rl_attr *a = rl_node_attr(nd, name);
	if (!a)
		return -1;
	if (a->kind == RL_ATTR_FLOATS) {
		for (int i = 0; i < a->n && i < max; i++)
			out[i] = a->floats[i];
		return a->n <= max ? a->n : -1;
	}
	if (a->kind != RL_ATTR_TENSOR)
		return -1;
	int64_t n = rl_shape_numel(&cg->g->values[a->tensor].shape);
	if (n < 0 || n > max)
		return -1;
	for (int64_t i = 0; i < n; i++)
		out[i] = rl_value_get_float(cg->g, a->tensor, i);
	return (int)n;
}

#define TREE_MAX 65536

static void ints_static(struct rl_cgen *cg, const char *type, const char *name, const int64_t *v,
                        int n)
{
	rl_buf_printf(&cg->statics, "static const %s %s_%s[%d] = {", type, cg->kname, name, n > 0 ? n : 1);
	for (int i = 0; i < n; i++)
		rl_buf_printf(&cg->statics, "%s%lld", i ? ", " : "", (long long)v[i]);
	rl_buf_printf(&cg->statics, "%s};\n", n > 0 ? "" : "0");
}

static void doubles_static(struct rl_cgen *cg, const char *name, const double *v, int n)
{
	char b[48];
	rl_buf_printf(&cg->statics, "static const double %s_%s[%d] = {", cg->kname, name, n > 0 ? n : 1);
	for (int i = 0; i < n; i++)
		rl_buf_printf(&cg->statics, "%s%s", i ? ", " : "", dlit(b, sizeof(b), v[i]));
	rl_buf_printf(&cg->statics, "%s};\n", n > 0 ? "" : "0");
}

static enum rl_status emit_tree(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *x = cg_in(cg, node, 0), *y = cg_out(cg, node, 0);
	const int64_t *feat, *tid, *fid, *tl, *fl, *ltgt, *roots, *miss = NULL;
	int nn = rl_node_attr_ints(nd, "nodes_featureids", &feat);
	int n1 = rl_node_attr_ints(nd, "nodes_truenodeids", &tid);
	int n2 = rl_node_attr_ints(nd, "nodes_falsenodeids", &fid);
	int n3 = rl_node_attr_ints(nd, "nodes_trueleafs", &tl);
	int n4 = rl_node_attr_ints(nd, "nodes_falseleafs", &fl);
	int nl = rl_node_attr_ints(nd, "leaf_targetids", &ltgt);
	int nt = rl_node_attr_ints(nd, "tree_roots", &roots);
	int nm = rl_node_attr_ints(nd, "nodes_missing_value_tracks_true", &miss);
	int64_t agg = rl_node_attr_int(nd, "aggregate_function", 1);
	int64_t post = rl_node_attr_int(nd, "post_transform", 0);
	if (!float_dt(x->dtype))
		return cg_error(cg, node, "TreeEnsemble is not supported for %s", rl_dtype_name(x->dtype));
	if (post != 0)
		return cg_error(cg, node, "post_transform %lld is not supported (0, none, is)",
		                (long long)post);
	if (agg < 0 || agg > 3)
		return cg_error(cg, node, "aggregate_function %lld is not 0 to 3", (long long)agg);
	if (nn < 1 || n1 != nn || n2 != nn || n3 != nn || n4 != nn || nl < 1 || nt < 1 ||
	    nn > TREE_MAX || nl > TREE_MAX || (nm >= 0 && nm != nn))
		return cg_error(cg, node, "the nodes_* attributes must all have one entry per node");
	double *split = malloc(sizeof(double) * TREE_MAX), *lw = malloc(sizeof(double) * TREE_MAX);
	double *mem = malloc(sizeof(double) * TREE_MAX), *modes = malloc(sizeof(double) * TREE_MAX);
	int64_t *mlo = malloc(sizeof(int64_t) * (size_t)nn), *mhi = malloc(sizeof(int64_t) * (size_t)nn);
	int64_t *mode = malloc(sizeof(int64_t) * (size_t)nn);
	RL_ASSERT(split && lw && mem && modes && mlo && mhi && mode);
	enum rl_status st = RL_OK;
	int ns = attr_doubles(cg, nd, "nodes_splits", split, TREE_MAX);
	int nw = attr_doubles(cg, nd, "leaf_weights", lw, TREE_MAX);
	int nmd = attr_doubles(cg, nd, "nodes_modes", modes, TREE_MAX);
	int nmem = attr_doubles(cg, nd, "membership_values", mem, TREE_MAX);
	int64_t F = x->shape.d[1].v, T = y->shape.d[1].v;
	if (ns != nn || nw != nl || nmd != nn)
		st = cg_error(cg, node, "nodes_splits, nodes_modes and leaf_weights must have one "
		              "entry per node or leaf");
	/* members: each MEMBER node takes the next NaN-terminated run */
	int mp = 0, nmems = 0;
	double *members = malloc(sizeof(double) * (size_t)(nmem > 0 ? nmem : 1));
	RL_ASSERT(members);
	for (int i = 0; st == RL_OK && i < nn; i++) {
		mode[i] = (int64_t)modes[i];
		mlo[i] = mhi[i] = nmems;
		if (mode[i] < 0 || mode[i] > 6)
			st = cg_error(cg, node, "node %d has mode %lld (0 to 6 are defined)", i, (long long)mode[i]);
		else if (feat[i] < 0 || feat[i] >= F)
			st = cg_error(cg, node, "node %d reads feature %lld of %lld", i, (long long)feat[i],
			              (long long)F);
		else if (tid[i] < 0 || fid[i] < 0 || tid[i] >= (tl[i] ? nl : nn) || fid[i] >= (fl[i] ? nl : nn))
			st = cg_error(cg, node, "node %d has a branch out of range", i);
		if (st != RL_OK || mode[i] != 6)
			continue;
		if (nmem < 0) {
			st = cg_error(cg, node, "a set-membership node needs membership_values");
			break;
		}
		while (mp < nmem && !isnan(mem[mp]))
			members[nmems++] = mem[mp++];
		mp++;
		mhi[i] = nmems;
		split[i] = 0;
	}
	for (int i = 0; st == RL_OK && i < nl; i++)
		if (ltgt[i] < 0 || ltgt[i] >= T)
			st = cg_error(cg, node, "leaf %d targets %lld of %lld", i, (long long)ltgt[i], (long long)T);
	for (int i = 0; st == RL_OK && i < nt; i++)
		if (roots[i] < 0 || roots[i] >= nn)
			st = cg_error(cg, node, "tree root %lld is not a node", (long long)roots[i]);
	if (st == RL_OK) {
		int64_t nmv = nm > 0 ? nn : 0;
		ints_static(cg, "int32_t", "feat", feat, nn);
		ints_static(cg, "unsigned char", "mode", mode, nn);
		ints_static(cg, "int32_t", "tnext", tid, nn);
		ints_static(cg, "int32_t", "fnext", fid, nn);
		ints_static(cg, "unsigned char", "tleaf", tl, nn);
		ints_static(cg, "unsigned char", "fleaf", fl, nn);
		if (nmv)
			ints_static(cg, "unsigned char", "miss", miss, (int)nmv);
		ints_static(cg, "int32_t", "mlo", mlo, nn);
		ints_static(cg, "int32_t", "mhi", mhi, nn);
		ints_static(cg, "int32_t", "target", ltgt, nl);
		ints_static(cg, "int32_t", "root", roots, nt);
		doubles_static(cg, "split", split, nn);
		doubles_static(cg, "weight", lw, nl);
		doubles_static(cg, "member", members, nmems);
		const char *k = cg->kname;
		static const char *const aggs[] = {"average", "sum", "min", "max"};
		cg_line(cg, "/* %d trees, %d nodes, %d leaves; %s of the leaf weights per target */", nt, nn,
		        nl, aggs[agg]);
		const char *big = x->dtype == RL_DT_DOUBLE ? "1.7976931348623157e308" : "3.4028234663852886e38";
		const char *init = agg == 2 ? big : agg == 3 ? "-" : "0";
		cg_line(cg, "for (size_t n = 0; n < %lld; n++) {", (long long)x->shape.d[0].v);
		cg->indent++;
		cg_line(cg, "const %s *restrict xn = X0 + n * %lld;", cg_ctype(x->dtype), (long long)F);
		cg_scratch_array(cg, "double", "acc", T, 0);
		cg_line(cg, "for (size_t t = 0; t < %lld; t++)", (long long)T);
		cg_line(cg, "    acc[t] = %s%s;", init, agg == 3 ? big : "");
		cg_line(cg, "for (size_t tr = 0; tr < %d; tr++) {", nt);
		cg->indent++;
		cg_line(cg, "int32_t id = %s_root[tr], leaf;", k);
		cg_line(cg, "if (%s_tleaf[id] && %s_fleaf[id] && %s_tnext[id] == %s_fnext[id]) {", k, k, k, k);
		cg_line(cg, "    leaf = %s_tnext[id]; /* a tree that is one leaf */", k);
		cg_line(cg, "} else {");
		cg_line(cg, "    for (;;) {");
		cg->indent += 2;
		cg_line(cg, "const double v = xn[%s_feat[id]], s = %s_split[id];", k, k);
		cg_line(cg, "int go;");
		cg_line(cg, "switch (%s_mode[id]) {", k);
		cg_line(cg, "case 0: go = v <= s; break;");
		cg_line(cg, "case 1: go = v < s; break;");
		cg_line(cg, "case 2: go = v >= s; break;");
		cg_line(cg, "case 3: go = v > s; break;");
		cg_line(cg, "case 4: go = v == s; break;");
		cg_line(cg, "case 5: go = v != s; break;");
		cg_line(cg, "default:");
		cg_line(cg, "    go = 0;");
		cg_line(cg, "    for (int32_t m = %s_mlo[id]; m < %s_mhi[id]; m++)", k, k);
		cg_line(cg, "        go |= v == %s_member[m];", k);
		cg_line(cg, "}");
		if (nmv)
			cg_line(cg, "go |= %s_miss[id] && v != v; /* NaN goes where the node says */", k);
		cg_line(cg, "const int32_t next = go ? %s_tnext[id] : %s_fnext[id];", k, k);
		cg_line(cg, "if (go ? %s_tleaf[id] : %s_fleaf[id]) {", k, k);
		cg_line(cg, "    leaf = next;");
		cg_line(cg, "    break;");
		cg_line(cg, "}");
		cg_line(cg, "id = next;");
		cg->indent -= 2;
		cg_line(cg, "    }");
		cg_line(cg, "}");
		cg_line(cg, "double *a = &acc[%s_target[leaf]];", k);
		cg_line(cg, "const double w = %s_weight[leaf];", k);
		if (agg == 0)
			cg_line(cg, "*a += w / %d;", nt);
		else if (agg == 1)
			cg_line(cg, "*a += w;");
		else
			cg_line(cg, "*a = w %s *a ? w : *a;", agg == 2 ? "<" : ">");
		cg->indent--;
		cg_line(cg, "}");
		cg_line(cg, "for (size_t t = 0; t < %lld; t++)", (long long)T);
		if (agg >= 2) /* a target no leaf reached: 0, as onnxruntime gives */
			cg_line(cg, "    Y0[n * %lld + t] = (%s)(acc[t] == %s%s ? 0 : acc[t]);", (long long)T,
			        cg_ctype(x->dtype), agg == 3 ? "-" : "", big);
		else
			cg_line(cg, "    Y0[n * %lld + t] = (%s)acc[t];", (long long)T, cg_ctype(x->dtype));
		cg->indent--;
		cg_line(cg, "}");
	}
	free(split);
	free(lw);
	free(mem);
	free(modes);
	free(mlo);
	free(mhi);
	free(mode);
	free(members);
	return st;
}

/* ---- Adagrad, Adam, Momentum ------------------------------------------------- */

static enum rl_status emit_optim(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	int per = nd->op == RL_OP_Adam ? 4 : 3, cnt = (nd->nin - 2) / per;
	char b1[48], b2[48], b3[48], b4[48];
	double nc = rl_node_attr_float(nd, "norm_coefficient", 0.0);
	cg_line(cg, "const double r = X0[0];");
	cg_line(cg, "const int64_t t = (int64_t)X1[0];");
	const char *mode = rl_node_attr_str(nd, "mode", "standard");
	if (nd->op == RL_OP_Momentum && strcmp(mode, "standard") && strcmp(mode, "nesterov"))
		return cg_error(cg, node, "mode '%s' is not standard or nesterov", mode);
	if (nd->op == RL_OP_Adagrad) {
		cg_line(cg, "const double rt = r / (1 + (double)t * %s); /* decayed rate */",
		        dlit(b1, sizeof(b1), rl_node_attr_float(nd, "decay_factor", 0.0)));
	} else if (nd->op == RL_OP_Adam) {
		double al = rl_node_attr_float(nd, "alpha", 0.9), be = rl_node_attr_float(nd, "beta", 0.999);
		cg_line(cg, "/* bias-corrected rate from the second step on */");
		cg_line(cg, "const double rt = t > 0 ? r * sqrt(1 - pow(%s, (double)t)) / "
		        "(1 - pow(%s, (double)t)) : r;", dlit(b1, sizeof(b1), be), dlit(b2, sizeof(b2), al));
	} else {
		cg_line(cg, "const double bt = t > 0 ? %s : 1; /* the gradient's weight: 1 at first */",
		        dlit(b1, sizeof(b1), rl_node_attr_float(nd, "beta", 0.0)));
	}
	for (int i = 0; i < cnt; i++) {
		const struct rl_value *x = cg_in(cg, node, 2 + i);
		enum rl_dtype dt = x->dtype;
		if (!float_dt(dt))
			return cg_error(cg, node, "%s of %s is not supported (float32 and float64 are)",
			                rl_op_table[nd->op].name, rl_dtype_name(dt));
		const char *T = cg_ctype(dt);
		cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)numel(x));
		cg->indent++;
		cg_line(cg, "const double x = X%d[i], g = %s * x + X%d[i];", 2 + i, dlit(b2, sizeof(b2), nc),
		        2 + cnt + i);
		if (nd->op == RL_OP_Adagrad) {
			cg_line(cg, "const double h = X%d[i] + g * g;", 2 + 2 * cnt + i);
			cg_line(cg, "Y%d[i] = (%s)(x - rt * g / (sqrt(h) + %s));", i, T,
			        dlit(b3, sizeof(b3), rl_node_attr_float(nd, "epsilon", 0.0)));
			cg_line(cg, "Y%d[i] = (%s)h;", cnt + i, T);
		} else if (nd->op == RL_OP_Adam) {
			double al = rl_node_attr_float(nd, "alpha", 0.9), be = rl_node_attr_float(nd, "beta", 0.999);
			cg_line(cg, "const double v = %s * X%d[i] + (1 - %s) * g;", dlit(b1, sizeof(b1), al),
			        2 + 2 * cnt + i, b1);
			cg_line(cg, "const double h = %s * X%d[i] + (1 - %s) * (g * g);",
			        dlit(b3, sizeof(b3), be), 2 + 3 * cnt + i, b3);
			cg_line(cg, "const double xn = x - rt * (v / (sqrt(h) + %s));",
			        dlit(b4, sizeof(b4), rl_node_attr_float(nd, "epsilon", 0.0)));
			cg_line(cg, "Y%d[i] = (%s)((1 - %s) * xn);", i, T,
			        dlit(b2, sizeof(b2), rl_node_attr_float(nd, "norm_coefficient_post", 0.0)));
			cg_line(cg, "Y%d[i] = (%s)v;", cnt + i, T);
			cg_line(cg, "Y%d[i] = (%s)h;", 2 * cnt + i, T);
		} else {
			const char *al = dlit(b1, sizeof(b1), rl_node_attr_float(nd, "alpha", 0.0));
			cg_line(cg, "const double v = %s * X%d[i] + bt * g;", al, 2 + 2 * cnt + i);
			if (!strcmp(mode, "nesterov"))
				cg_line(cg, "Y%d[i] = (%s)(x - r * (g + %s * v));", i, T, al);
			else
				cg_line(cg, "Y%d[i] = (%s)(x - r * v);", i, T);
			cg_line(cg, "Y%d[i] = (%s)v;", cnt + i, T);
		}
		cg->indent--;
		cg_line(cg, "}");
	}
	return RL_OK;
}

/* ---- dispatch ----------------------------------------------------------------- */

enum rl_status rl_emit_c_seq(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_RNN:
	case RL_OP_GRU:
	case RL_OP_LSTM:
		return emit_rnn(cg, node);
	case RL_OP_DFT: return emit_dft(cg, node);
	case RL_OP_STFT: return emit_stft(cg, node);
	case RL_OP_Det: return emit_det(cg, node);
	case RL_OP_TfIdfVectorizer: return emit_tfidf(cg, node);
	case RL_OP_Binarizer: return emit_binarizer(cg, node);
	case RL_OP_ArrayFeatureExtractor: return emit_afe(cg, node);
	case RL_OP_TreeEnsemble: return emit_tree(cg, node);
	case RL_OP_Adagrad:
	case RL_OP_Adam:
	case RL_OP_Momentum:
		return emit_optim(cg, node);
	default:
		return cg_error(cg, node, "no C kernel for this operator");
	}
}
