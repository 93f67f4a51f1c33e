/*
 * emit_cuda.c - the CUDA backend: one .cu with one __global__ kernel per
 * kernel of the C backend's run plan, and a host side that allocates device
 * memory once and replays the whole run as a CUDA graph.
 *
 * What is shared with the C backend, so that both run the same program:
 * rl_emit_plan() (which nodes run, the fused groups that pass the driver's
 * checks, the run order, views, and the workspace offsets from the lifetime
 * plan), the elementwise expression table cg_elemwise_expr() and the
 * epilogue hook cg_epilogue(). What is CUDA's own:
 *
 *   - elementwise kernels (a single op or a fused group): one thread per
 *     output element in a grid-stride loop; broadcast inputs are indexed from
 *     the flat output index with literal strides;
 *   - MatMul and Gemm: a block tile of mc x nc outputs staged through shared
 *     memory kc deep, mr x nr outputs per thread in registers (the tile pass's
 *     GPU schedule when it gave one, else the defaults below); the fused
 *     epilogue runs on each output as it is stored;
 *   - every other op the C backend implements: the C emitter's kernel body
 *     run on the GPU. When that emitter splits its outer loop (cg->par_n),
 *     each iteration is one GPU thread; otherwise the body runs on one thread
 *     (correct, slow: marked "serial" in the kernel's comment and listed by
 *     `rlopt ops --target cuda` as such). A body that needs the C backend's
 *     CPU runtime (the packed GEMM, the thread pool) is refused by name.
 *
 * Barriers and emulation. A kernel that synchronizes its block is written
 * as phases: RL_THREADS { ... } RL_SYNC RL_THREADS { ... }. On the GPU
 * RL_THREADS is empty and RL_SYNC is __syncthreads(); under RL_CUDA_EMULATE
 * RL_THREADS is a loop over the block's threads, so a phase runs for every
 * thread before the next begins, which is what the barrier guarantees.
 * Per-thread state that lives across a barrier is declared RL_LOCAL and
 * read as RL_L(name) (a register on the GPU, an array over threads in
 * emulation); everything else is local to one phase.
 */
#include "emit_cuda.h"

#include "backends/c/emit.h"
#include "frontends/onnx/onnx.h"
#include "infer_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define CU_ALIGN 256        /* device allocations and arena slots */
#define CU_THREADS 256      /* threads per block of an elementwise kernel */
#define CU_MAX_BLOCKS 65535 /* grid-stride loops cover the rest */
#define CU_FALLBACK_THREADS 128
/* MatMul/Gemm without a GPU tile from the tile pass: 64 x 64 outputs per
 * block, 4 x 4 per thread (256 threads), 16 deep; small products 16 x 16
 * with one output per thread */
#define CU_MM_MC 64
#define CU_MM_KC 16
#define CU_MM_RT 4
#define CU_MM_SMEM (48 * 1024) /* static shared memory a block may declare */
#define CU_WEIGHTS_MAX (64ll << 20) /* constants embedded up to this, else NAME.weights */
#define CU_SIDE_HEADER 16           /* "RLWTS001" and the file's size (int64) */

struct launch {
	int64_t grid;  /* blocks; 0: nothing to launch */
	int block;     /* threads per block */
	bool phased;   /* written with RL_THREADS/RL_SYNC: emulation calls it per block */
	bool serial;   /* the C body on one thread */
};

struct cu {
	struct rl_graph *g;
	const char *prefix;
	struct rl_plan pl;
	int64_t *coff;          /* per value: offset in the constant arena */
	int64_t cst_size;
	bool side;              /* constants in NAME.weights (the device arena's image) */
	char wbase[256];        /* its file name */
	int64_t *io_in, *io_out; /* offsets of inputs and outputs in the io arena */
	int64_t io_size;
	struct rl_buf c, h, kernels, launches;
	struct rl_cgen cg;
	int nserial;
};

/* ---- small helpers ------------------------------------------------------ */

static void sanitize(const char *in, char *out, size_t n)
{
	size_t k = 0;
	for (const char *p = in; *p && k + 1 < n; p++)
		out[k++] = isalnum((unsigned char)*p) ? *p : '_';
	out[k] = 0;
	if (!k || isdigit((unsigned char)out[0])) {
		memmove(out + 1, out, k + 1 < n ? k + 1 : n - 1);
		out[0] = '_';
		out[n - 1] = 0;
	}
}

/* Comment text: no terminator or control character from a name. */
static void ctext(const char *s, char *b, size_t n)
{
	size_t k = 0;
	for (const char *p = s; *p && k + 1 < n && k < 120; p++) {
		char c = *p;
		if (c == '*' && p[1] == '/')
			c = '_';
		if ((unsigned char)c < 32 || (unsigned char)c > 126)
			c = '?';
		b[k++] = c;
	}
	b[k] = 0;
}

static int64_t align_up(int64_t x)
{
	return (x + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
}

static int64_t value_bytes(const struct rl_graph *g, uint32_t v)
{
	int64_t ne = rl_shape_numel(&g->values[v].shape);
	return ne > 0 ? ne * (int64_t)rl_dtype_size(g->values[v].dtype) : 0;
}

static const struct rl_value *val(struct cu *d, uint32_t v)
{
	return &d->g->values[v];
}

/* Device pointer expression for value v, as the launch function sees it. */
static void dev_ptr(struct cu *d, uint32_t v, bool out, char *b, size_t n)
{
	if (v == RL_NONE) {
		snprintf(b, n, "(const float *)0");
		return;
	}
	const struct rl_plan_val *pv = &d->pl.vals[v];
	if (pv->st == RL_PLAN_ALIAS) {
		v = pv->alias;
		pv = &d->pl.vals[v];
	}
	const char *ct = cg_ctype(val(d, v)->dtype), *cq = out ? "" : "const ";
	switch (pv->st) {
	case RL_PLAN_INPUT:
		snprintf(b, n, "(%s%s *)(%s_io + %lld)", cq, ct, d->prefix, (long long)d->io_in[pv->io]);
		break;
	case RL_PLAN_OUTPUT:
		snprintf(b, n, "(%s%s *)(%s_io + %lld)", cq, ct, d->prefix, (long long)d->io_out[pv->io]);
		break;
	case RL_PLAN_CONST:
		snprintf(b, n, "(%s%s *)(%s_cst + %lld)", cq, ct, d->prefix, (long long)d->coff[v]);
		break;
	case RL_PLAN_WORKSPACE:
		snprintf(b, n, "(%s%s *)(%s_ws + %lld)", cq, ct, d->prefix, (long long)pv->off);
		break;
	default:
		snprintf(b, n, "(%s%s *)0", cq, ct);
		break;
	}
}

/* A constant scalar a fused kernel writes as a literal (as emit_fused.c). */
static bool is_literal(struct cu *d, uint32_t v)
{
	return rl_value_is_const(d->g, v) && val(d, v)->data &&
	       rl_shape_numel(&val(d, v)->shape) == 1;
}

static void literal(struct cu *d, uint32_t v, char *b, size_t n)
{
	enum rl_dtype dt = val(d, v)->dtype;
	char t[128];
	if (rl_dtype_is_float(dt))
		snprintf(t, sizeof(t), "%s", cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT,
		                                    rl_value_get_float(d->g, v, 0)));
	else if (dt == RL_DT_UINT64)
		snprintf(t, sizeof(t), "UINT64_C(%llu)", (unsigned long long)rl_value_get_int(d->g, v, 0));
	else if (dt == RL_DT_INT64 && rl_value_get_int(d->g, v, 0) == INT64_MIN)
		snprintf(t, sizeof(t), "INT64_MIN");
	else if (dt == RL_DT_INT64)
		snprintf(t, sizeof(t), "INT64_C(%lld)", (long long)rl_value_get_int(d->g, v, 0));
	else if (dt == RL_DT_BOOL)
		snprintf(t, sizeof(t), "%d", rl_value_get_int(d->g, v, 0) != 0);
	else
		snprintf(t, sizeof(t), "(%s)%lld", cg_ctype(dt), (long long)rl_value_get_int(d->g, v, 0));
	snprintf(b, n, t[0] == '-' ? "(%s)" : "%s", t);
}

/*
 * Flat index into input `in` (numpy-broadcast into `out`) from the flat
 * output index `o`: the sum of out-coordinate times input stride over the
 * dims where the input is not broadcast; "o" itself for the same shape.
 */
static void bcast_index(const struct rl_shape *out, const struct rl_shape *in, const char *o,
                        char *b, size_t n)
{
	int r = out->rank, ri = in->rank;
	if (rl_shape_equal(out, in) || rl_shape_numel(in) == rl_shape_numel(out)) {
		snprintf(b, n, "%s", o);
		return;
	}
	if (rl_shape_numel(in) == 1) {
		snprintf(b, n, "0");
		return;
	}
	int64_t ost[RL_MAX_RANK + 1], ist[RL_MAX_RANK + 1];
	int64_t acc = 1;
	for (int k = r - 1; k >= 0; k--) {
		ost[k] = acc;
		acc *= out->d[k].v;
	}
	acc = 1;
	for (int k = r - 1; k >= 0; k--) {
		int ki = k - (r - ri);
		int64_t dim = ki >= 0 ? in->d[ki].v : 1;
		ist[k] = dim == 1 ? 0 : acc;
		acc *= dim;
	}
	size_t p = 0;
	b[0] = 0;
	for (int k = 0; k < r && p + 80 < n; k++) {
		if (!ist[k] || out->d[k].v == 1)
			continue;
		char coord[96];
		if (k == 0)
			snprintf(coord, sizeof(coord), "%s / %lld", o, (long long)ost[k]);
		else if (ost[k] == 1)
			snprintf(coord, sizeof(coord), "%s %% %lld", o, (long long)out->d[k].v);
		else
			snprintf(coord, sizeof(coord), "%s / %lld %% %lld", o, (long long)ost[k],
			         (long long)out->d[k].v);
		if (ist[k] == 1)
			p += (size_t)snprintf(b + p, n - p, "%s(%s)", p ? " + " : "", coord);
		else
			p += (size_t)snprintf(b + p, n - p, "%s(%s) * %lld", p ? " + " : "", coord,
			                      (long long)ist[k]);
	}
	if (!p)
		snprintf(b, n, "0");
}

/* ---- elementwise kernels (single ops and fused groups) ------------------ */

static int group_pos(const struct rl_cgen_group *gr, uint32_t node)
{
	for (int j = 0; j < gr->nnodes; j++)
		if (gr->nodes[j] == node)
			return j;
	return -1;
}

/* Every node of the group into locals v<j>, rounded as a store would. */
static enum rl_status compute_locals(struct cu *d, const struct rl_cgen_group *gr)
{
	struct rl_cgen *cg = &d->cg;
	for (int j = 0; j < gr->nnodes; j++) {
		uint32_t node = gr->nodes[j];
		const struct rl_node *n = &d->g->nodes[node];
		char names[16][64], e[2048], tag[16], nm[96];
		const char *in[16], *why = NULL;
		if (n->nin > 16)
			return cg_error(cg, node, "%s with %d inputs has no CUDA kernel",
			                rl_op_table[n->op].name, n->nin);
		for (int s = 0; s < n->nin; s++) {
			uint32_t v = n->in[s];
			in[s] = NULL;
			if (v == RL_NONE || (n->op == RL_OP_CastLike && s == 1))
				continue;
			uint32_t p = val(d, v)->producer;
			int pj = p == RL_NONE ? -1 : group_pos(gr, p);
			int xk = -1;
			for (int k = 0; k < gr->nin && xk < 0; k++)
				if (gr->in[k] == v)
					xk = k;
			if (pj >= 0 && pj < j)
				snprintf(names[s], sizeof(names[s]), "v%d", pj);
			else if (xk >= 0)
				snprintf(names[s], sizeof(names[s]), "x%d", xk);
			else if (is_literal(d, v))
				literal(d, v, names[s], sizeof(names[s]));
			else
				return cg_error(cg, node, "input '%s' has no source in its kernel",
				                val(d, v)->name);
			in[s] = names[s];
		}
		snprintf(tag, sizeof(tag), "_%d", j);
		if (!cg_elemwise_expr(cg, node, in, tag, e, sizeof(e), &why))
			return cg_error(cg, node, "%s on %s: %s", rl_op_table[n->op].name,
			                rl_dtype_name(cg_in(cg, node, 0)->dtype), why);
		enum rl_dtype dt = cg_out(cg, node, 0)->dtype;
		const char *init = e;
		if (dt == RL_DT_FLOAT16 || dt == RL_DT_BFLOAT16)
			init = cg_load(cg, dt, cg_store(cg, dt, e));
		else if (dt == RL_DT_BOOL)
			init = cg_store(cg, dt, e);
		ctext(n->name, nm, sizeof(nm));
		cg_line(cg, "const %s v%d = %s; /* %s: %s */", cg_comptype(dt), j, init, nm,
		        rl_op_table[n->op].name);
	}
	return RL_OK;
}

static enum rl_status k_elemwise(struct cu *d, const struct rl_cgen_group *gr, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_shape *ys = &val(d, gr->out[0])->shape;
	int64_t ne = rl_shape_numel(ys);
	int64_t blocks = (ne + CU_THREADS - 1) / CU_THREADS;
	L->block = CU_THREADS;
	L->grid = blocks < CU_MAX_BLOCKS ? blocks : CU_MAX_BLOCKS;
	if (ne == 0)
		return RL_OK;
	cg_line(cg, "const int64_t stride = (int64_t)gridDim.x * blockDim.x;");
	cg_line(cg, "for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < %lldll; "
	        "o += stride) {", (long long)ne);
	cg->indent++;
	for (int k = 0; k < gr->nin; k++) {
		if (gr->in[k] == RL_NONE)
			continue;
		const struct rl_value *x = val(d, gr->in[k]);
		char ix[1024], src[1100];
		bcast_index(ys, &x->shape, "o", ix, sizeof(ix));
		snprintf(src, sizeof(src), "X%d[%s]", k, ix);
		cg_line(cg, "const %s x%d = %s;", cg_comptype(x->dtype), k, cg_load(cg, x->dtype, src));
	}
	enum rl_status st = compute_locals(d, gr);
	if (st != RL_OK)
		return st;
	for (int q = 0; q < gr->nout; q++) {
		uint32_t p = val(d, gr->out[q])->producer;
		char loc[32];
		snprintf(loc, sizeof(loc), "v%d", group_pos(gr, p));
		cg_line(cg, "Y%d[o] = %s;", q, cg_store(cg, val(d, gr->out[q])->dtype, loc));
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

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
	bcast_index(&o, &i, "bt", ix, sizeof(ix));
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
		cg_line(cg, "const int64_t stride = (int64_t)gridDim.x * blockDim.x;");
		cg_line(cg, "for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < %lldll; "
		        "t += stride) {", (long long)(m->nb * m->N));
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

static enum rl_status k_matmul(struct cu *d, uint32_t node, struct launch *L)
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

	if (m.M <= CU_GEMV_MAX_M) {
		k_gemv(cg, &m, dt, tb, aoff, boff, aix, bix, alpha, C, beta, L);
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

static enum rl_status k_conv(struct cu *d, uint32_t node, struct launch *L)
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
	int64_t in[3], out[3], pb[3], is = 1, os = 1, ks = 1;
	for (int i = 0; i < nsp; i++) {
		in[i] = X->shape.d[2 + i].v;
		out[i] = Y->shape.d[2 + i].v;
		is *= in[i];
		os *= out[i];
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
	int64_t blocks = (ne + CU_THREADS - 1) / CU_THREADS;
	L->block = CU_THREADS;
	L->grid = blocks < CU_MAX_BLOCKS ? blocks : CU_MAX_BLOCKS;
	if (ne == 0)
		return RL_OK;
	const char *ct = cg_comptype(dt), *sp = "abc";
	cg_line(cg, "/* direct convolution: %lld x %lld channels per group (%lld groups), "
	        "%lld-tap window */", (long long)CG, (long long)(M / group), (long long)group,
	        (long long)ks);
	cg_line(cg, "const int64_t stride = (int64_t)gridDim.x * blockDim.x;");
	cg_line(cg, "for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < %lldll; "
	        "o += stride) {", (long long)ne);
	cg->indent++;
	cg_line(cg, "int64_t r = o;");
	for (int i = nsp - 1; i >= 0; i--) {
		cg_line(cg, "const int64_t o%c = r %% %lld;", sp[i], (long long)out[i]);
		cg_line(cg, "r /= %lld;", (long long)out[i]);
	}
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

/* ---- Softmax, LogSoftmax, LayerNormalization: one block per row ---------- */

/* Tree reduction of the per-thread partials in shared array `a` (op "+" or
 * "max"), one barrier per halving; the result is a[0]. */
static void row_reduce(struct rl_cgen *cg, const char *a, bool max, int threads)
{
	cg_line(cg, "for (int h = %d; h > 0; h >>= 1) {", threads / 2);
	cg_line(cg, "    RL_THREADS {");
	cg_line(cg, "        if ((int)threadIdx.x < h)");
	if (max)
		cg_line(cg, "            if (%s[threadIdx.x + h] > %s[threadIdx.x]) %s[threadIdx.x] = "
		        "%s[threadIdx.x + h];", a, a, a, a);
	else
		cg_line(cg, "            %s[threadIdx.x] += %s[threadIdx.x + h];", a, a);
	cg_line(cg, "    }");
	cg_line(cg, "    RL_SYNC");
	cg_line(cg, "}");
}

/* True when the node was written; false (nothing written) for a form the
 * block-per-row kernel does not cover: the caller falls back. */
static bool k_rows(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	if (!X || !Y || strcmp(cg_comptype(X->dtype), "float") != 0 || X->dtype != Y->dtype)
		return false;
	int r = X->shape.rank;
	bool ln = n->op == RL_OP_LayerNormalization;
	int64_t axis = rl_node_attr_int(n, "axis", ln || n->opset >= 13 ? -1 : 1);
	if (axis < 0)
		axis += r;
	if (axis < 0 || axis >= r || (!ln && n->opset >= 13 && axis != r - 1))
		return false;
	int64_t D = 1, ne = rl_shape_numel(&X->shape);
	for (int k = (int)axis; k < r; k++)
		D *= X->shape.d[k].v;
	if (D <= 0 || ne <= 0)
		return false;
	const struct rl_value *S = NULL, *B = NULL;
	double eps = 1e-5;
	if (ln) {
		S = cg_in(cg, node, 1);
		B = cg_in(cg, node, 2);
		for (int o = 1; o < n->nout; o++)
			if (n->out[o] != RL_NONE)
				return false;
		if (!S || S->dtype != X->dtype || rl_shape_numel(&S->shape) != D ||
		    (B && (B->dtype != X->dtype || rl_shape_numel(&B->shape) != D)))
			return false;
		eps = rl_node_attr_float(n, "epsilon", 1e-5);
	}
	int T = 32;
	while (T < 256 && T < D)
		T *= 2;
	L->grid = ne / D;
	L->block = T;
	L->phased = true;
	enum rl_dtype dt = X->dtype;
	cg_line(cg, "/* one block of %d threads per row of %lld elements; partials reduced in "
	        "shared memory */", T, (long long)D);
	cg_line(cg, "__shared__ float ra[%d], rb[%d];", T, T);
	cg_line(cg, "const %s *x = X0 + (size_t)blockIdx.x * %lld;", cg_ctype(dt), (long long)D);
	cg_line(cg, "%s *y = Y0 + (size_t)blockIdx.x * %lld;", cg_ctype(dt), (long long)D);
	const char *xj = cg_load(cg, dt, "x[j]");
	char xl[128];
	snprintf(xl, sizeof(xl), "%s", xj);
	if (ln) {
		cg_line(cg, "RL_THREADS {");
		cg_line(cg, "    float a = 0.0f;");
		cg_line(cg, "    for (int64_t j = threadIdx.x; j < %lld; j += %d)", (long long)D, T);
		cg_line(cg, "        a += %s;", xl);
		cg_line(cg, "    ra[threadIdx.x] = a;");
		cg_line(cg, "}");
		cg_line(cg, "RL_SYNC");
		row_reduce(cg, "ra", false, T);
		cg_line(cg, "RL_THREADS {");
		cg_line(cg, "    const float mean = ra[0] / %lld.0f;", (long long)D);
		cg_line(cg, "    float a = 0.0f;");
		cg_line(cg, "    for (int64_t j = threadIdx.x; j < %lld; j += %d) {", (long long)D, T);
		cg_line(cg, "        const float t = %s - mean;", xl);
		cg_line(cg, "        a += t * t;");
		cg_line(cg, "    }");
		cg_line(cg, "    rb[threadIdx.x] = a;");
		cg_line(cg, "}");
		cg_line(cg, "RL_SYNC");
		row_reduce(cg, "rb", false, T);
		cg_line(cg, "RL_THREADS {");
		cg_line(cg, "    const float mean = ra[0] / %lld.0f;", (long long)D);
		cg_line(cg, "    const float inv = 1.0f / sqrtf(rb[0] / %lld.0f + %s);", (long long)D,
		        cg_lit(RL_DT_FLOAT, eps));
		cg_line(cg, "    for (int64_t j = threadIdx.x; j < %lld; j += %d) {", (long long)D, T);
		char e[400], sc[96], bi[96];
		snprintf(sc, sizeof(sc), "%s", cg_load(cg, dt, "X1[j]"));
		snprintf(bi, sizeof(bi), "%s", B ? cg_load(cg, dt, "X2[j]") : "0.0f");
		snprintf(e, sizeof(e), "(%s - mean) * inv * %s + %s", xl, sc, bi);
		cg_line(cg, "        y[j] = %s;", cg_store(cg, dt, e));
		cg_line(cg, "    }");
		cg_line(cg, "}");
		return true;
	}
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    float m = -INFINITY;");
	cg_line(cg, "    for (int64_t j = threadIdx.x; j < %lld; j += %d)", (long long)D, T);
	cg_line(cg, "        m = fmaxf(m, %s);", xl);
	cg_line(cg, "    ra[threadIdx.x] = m;");
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	row_reduce(cg, "ra", true, T);
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    const float m = ra[0];");
	cg_line(cg, "    float a = 0.0f;");
	cg_line(cg, "    for (int64_t j = threadIdx.x; j < %lld; j += %d)", (long long)D, T);
	cg_line(cg, "        a += expf(%s - m);", xl);
	cg_line(cg, "    rb[threadIdx.x] = a;");
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	row_reduce(cg, "rb", false, T);
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    const float m = ra[0], sum = rb[0];");
	cg_line(cg, "    for (int64_t j = threadIdx.x; j < %lld; j += %d)", (long long)D, T);
	char e[300];
	if (n->op == RL_OP_LogSoftmax)
		snprintf(e, sizeof(e), "%s - m - logf(sum)", xl);
	else
		snprintf(e, sizeof(e), "expf(%s - m) / sum", xl);
	cg_line(cg, "        y[j] = %s;", cg_store(cg, dt, e));
	cg_line(cg, "}");
	return true;
}

/* ---- Transpose: one thread per output element ---------------------------- */

static bool k_transpose(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	int r = X ? X->shape.rank : 0, perm[RL_MAX_RANK];
	if (!X || !Y || r < 1 || !rl_transpose_perm(n, r, perm))
		return false;
	int64_t ist[RL_MAX_RANK], acc = 1, ne = rl_shape_numel(&Y->shape);
	for (int k = r - 1; k >= 0; k--) {
		ist[k] = acc;
		acc *= X->shape.d[k].v;
	}
	int64_t blocks = (ne + CU_THREADS - 1) / CU_THREADS;
	L->block = CU_THREADS;
	L->grid = ne > 0 ? (blocks < CU_MAX_BLOCKS ? blocks : CU_MAX_BLOCKS) : 0;
	if (ne <= 0)
		return true;
	/* output coordinate k (innermost first) times the input stride of axis perm[k] */
	char ix[1200] = "";
	size_t p = 0;
	int64_t ost = 1;
	for (int k = r - 1; k >= 0 && p + 100 < sizeof(ix); k--) {
		int64_t dim = Y->shape.d[k].v;
		if (dim > 1)
			p += (size_t)snprintf(ix + p, sizeof(ix) - p, "%s(o / %lld %% %lld) * %lld",
			                      p ? " + " : "", (long long)ost, (long long)dim,
			                      (long long)ist[perm[k]]);
		ost *= dim;
	}
	cg_line(cg, "const int64_t stride = (int64_t)gridDim.x * blockDim.x;");
	cg_line(cg, "for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < %lldll; "
	        "o += stride)", (long long)ne);
	cg_line(cg, "    Y0[o] = X0[%s];", p ? ix : "0");
	return true;
}

/* ---- Reduce*: one block per output element --------------------------------- */

/* The combining statement of two partials a (updated) and b, per op; for Max
 * and Min a NaN wins, as in the C kernel's step. */
static void red_combine(struct rl_cgen *cg, enum rl_op op, const char *a, const char *b)
{
	switch (op) {
	case RL_OP_ReduceMax:
		cg_line(cg, "if (%s > %s || isnan(%s)) %s = %s;", b, a, b, a, b);
		break;
	case RL_OP_ReduceMin:
		cg_line(cg, "if (%s < %s || isnan(%s)) %s = %s;", b, a, b, a, b);
		break;
	case RL_OP_ReduceProd:
		cg_line(cg, "%s *= %s;", a, b);
		break;
	default:
		cg_line(cg, "%s += %s;", a, b);
		break;
	}
}

static bool k_reduce(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	struct rl_reduce_plan rp;
	enum rl_op op = n->op;
	if (!X || !Y || X->dtype != Y->dtype || !rl_dtype_is_float(X->dtype) ||
	    (op != RL_OP_ReduceSum && op != RL_OP_ReduceMean && op != RL_OP_ReduceMax &&
	     op != RL_OP_ReduceMin && op != RL_OP_ReduceProd && op != RL_OP_ReduceL1 &&
	     op != RL_OP_ReduceL2 && op != RL_OP_ReduceSumSquare && op != RL_OP_ReduceLogSum &&
	     op != RL_OP_ReduceLogSumExp) ||
	    rl_reduce_plan(d->g, node, &rp) != RL_OK || !rp.known || rp.noop)
		return false;
	int r = X->shape.rank;
	int64_t ist[RL_MAX_RANK], acc = 1, R = 1, ny = rl_shape_numel(&Y->shape);
	for (int k = r - 1; k >= 0; k--) {
		ist[k] = acc;
		acc *= X->shape.d[k].v;
		if (rp.axis[k])
			R *= X->shape.d[k].v;
	}
	if (R <= 0 || ny <= 0 || acc <= 0)
		return false;
	/* input offset of output o (kept dims) and of reduced element e */
	char base[1200] = "", roff[1200] = "";
	size_t pb = 0, pr = 0;
	int64_t os = 1, rs = 1;
	for (int k = r - 1; k >= 0; k--) {
		int64_t dim = X->shape.d[k].v;
		if (dim == 1)
			continue;
		char *b = rp.axis[k] ? roff : base;
		size_t *p = rp.axis[k] ? &pr : &pb;
		int64_t *s = rp.axis[k] ? &rs : &os;
		const char *var = rp.axis[k] ? "e" : "(int64_t)blockIdx.x";
		if (*p + 120 < sizeof(base))
			*p += (size_t)snprintf(b + *p, sizeof(base) - *p, "%s(%s / %lld %% %lld) * %lld",
			                       *p ? " + " : "", var, (long long)*s, (long long)dim,
			                       (long long)ist[k]);
		*s *= dim;
	}
	enum rl_dtype dt = X->dtype;
	bool dbl = dt == RL_DT_DOUBLE;
	const char *ct = dbl ? "double" : "float", *f = dbl ? "" : "f";
	int T = 32;
	while (T < 256 && T < R)
		T *= 2;
	L->grid = ny;
	L->block = T;
	L->phased = true;
	const char *init = op == RL_OP_ReduceMax ? "-INFINITY" : op == RL_OP_ReduceMin ? "INFINITY"
	                   : op == RL_OP_ReduceProd ? "1" : "0";
	bool lse = op == RL_OP_ReduceLogSumExp;
	cg_line(cg, "/* %s of %lld elements per output: one block of %d threads, partials reduced "
	        "in shared memory */", rl_op_table[op].name, (long long)R, T);
	cg_line(cg, "__shared__ %s ra[%d]%s;", ct, T, lse ? ", rm[1]" : "");
	cg_line(cg, "const %s *x = X0 + %s;", cg_ctype(dt), pb ? base : "0");
	char ld[1300], xe[1300];
	snprintf(xe, sizeof(xe), "x[%s]", pr ? roff : "0");
	snprintf(ld, sizeof(ld), "%s", cg_load(cg, dt, xe));
	if (lse) { /* the maximum first, so the exponentials cannot overflow */
		cg_line(cg, "RL_THREADS {");
		cg_line(cg, "    %s a = -INFINITY;", ct);
		cg_line(cg, "    for (int64_t e = threadIdx.x; e < %lld; e += %d) {", (long long)R, T);
		cg_line(cg, "        const %s v = %s;", ct, ld);
		cg_line(cg, "        if (v > a) a = v;");
		cg_line(cg, "    }");
		cg_line(cg, "    ra[threadIdx.x] = a;");
		cg_line(cg, "}");
		cg_line(cg, "RL_SYNC");
		row_reduce(cg, "ra", true, T);
		cg_line(cg, "RL_THREADS {");
		cg_line(cg, "    if (threadIdx.x == 0)");
		cg_line(cg, "        rm[0] = isinf(ra[0]) ? 0 : ra[0];");
		cg_line(cg, "}");
		cg_line(cg, "RL_SYNC");
	}
	cg_line(cg, "RL_THREADS {");
	cg->indent++;
	cg_line(cg, "%s a = %s;", ct, lse ? "0" : init);
	cg_line(cg, "for (int64_t e = threadIdx.x; e < %lld; e += %d) {", (long long)R, T);
	cg_line(cg, "    const %s v = %s;", ct, ld);
	cg->indent++;
	switch (op) {
	case RL_OP_ReduceL1: cg_line(cg, "a += fabs%s(v);", f); break;
	case RL_OP_ReduceL2: case RL_OP_ReduceSumSquare: cg_line(cg, "a += v * v;"); break;
	case RL_OP_ReduceLogSumExp: cg_line(cg, "a += exp%s(v - rm[0]);", f); break;
	default: red_combine(cg, op, "a", "v"); break;
	}
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "ra[threadIdx.x] = a;");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "RL_SYNC");
	cg_line(cg, "for (int h = %d; h > 0; h >>= 1) {", T / 2);
	cg_line(cg, "    RL_THREADS {");
	cg_line(cg, "        if ((int)threadIdx.x < h) {");
	cg->indent += 3;
	enum rl_op cop = op == RL_OP_ReduceMax || op == RL_OP_ReduceMin || op == RL_OP_ReduceProd
	                 ? op : RL_OP_ReduceSum;
	red_combine(cg, cop, "ra[threadIdx.x]", "ra[threadIdx.x + h]");
	cg->indent -= 3;
	cg_line(cg, "        }");
	cg_line(cg, "    }");
	cg_line(cg, "    RL_SYNC");
	cg_line(cg, "}");
	char fin[128];
	switch (op) {
	case RL_OP_ReduceMean:
		snprintf(fin, sizeof(fin), "ra[0] / %s", cg_lit(dbl ? RL_DT_DOUBLE : RL_DT_FLOAT, (double)R));
		break;
	case RL_OP_ReduceL2: snprintf(fin, sizeof(fin), "sqrt%s(ra[0])", f); break;
	case RL_OP_ReduceLogSum: snprintf(fin, sizeof(fin), "log%s(ra[0])", f); break;
	case RL_OP_ReduceLogSumExp: snprintf(fin, sizeof(fin), "log%s(ra[0]) + rm[0]", f); break;
	default: snprintf(fin, sizeof(fin), "ra[0]"); break;
	}
	cg_line(cg, "RL_THREADS {");
	cg_line(cg, "    if (threadIdx.x == 0)");
	cg_line(cg, "        Y0[blockIdx.x] = %s;", cg_store(cg, dt, fin));
	cg_line(cg, "}");
	return true;
}

/* ---- shape ops: one thread per element, index arithmetic only ------------- */

/* Open the grid-stride loop over ne elements (flat index o); close with "}". */
static void flat_open(struct rl_cgen *cg, struct launch *L, int64_t ne)
{
	int64_t blocks = (ne + CU_THREADS - 1) / CU_THREADS;
	L->block = CU_THREADS;
	L->grid = blocks < CU_MAX_BLOCKS ? blocks : CU_MAX_BLOCKS;
	cg_line(cg, "const int64_t stride = (int64_t)gridDim.x * blockDim.x;");
	cg_line(cg, "for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < %lldll; "
	        "o += stride) {", (long long)ne);
}

/* Elements before, along and after `axis` of shape s. */
static void axis_split(const struct rl_shape *s, int axis, int64_t *outer, int64_t *len,
                       int64_t *inner)
{
	*outer = *inner = 1;
	for (int k = 0; k < axis; k++)
		*outer *= s->d[k].v;
	for (int k = axis + 1; k < s->rank; k++)
		*inner *= s->d[k].v;
	*len = s->d[axis].v;
}

static bool k_shape(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	if (!X || !Y || X->dtype != Y->dtype)
		return false;
	int64_t ne = rl_shape_numel(&Y->shape), nx = rl_shape_numel(&X->shape);
	int r = X->shape.rank, axis;
	switch (n->op) {
	case RL_OP_Expand: {
		char ix[1200];
		if (ne <= 0)
			return false;
		bcast_index(&Y->shape, &X->shape, "o", ix, sizeof(ix));
		flat_open(cg, L, ne);
		cg_line(cg, "    Y0[o] = X0[%s];", ix);
		cg_line(cg, "}");
		return true;
	}
	case RL_OP_Slice: {
		struct rl_slice_plan sp;
		if (ne <= 0 || rl_slice_plan(d->g, node, &sp) != RL_OK || !sp.known)
			return false;
		int64_t ist[RL_MAX_RANK], acc = 1, base = 0;
		for (int k = r - 1; k >= 0; k--) {
			ist[k] = acc;
			acc *= X->shape.d[k].v;
		}
		char ix[1200];
		size_t p = 0;
		int64_t os = 1;
		ix[0] = 0;
		for (int k = r - 1; k >= 0 && p + 100 < sizeof(ix); k--) {
			int64_t start = sp.sliced[k] ? sp.start[k] : 0, step = sp.sliced[k] ? sp.step[k] : 1;
			int64_t dim = Y->shape.d[k].v;
			base += start * ist[k];
			if (dim > 1)
				p += (size_t)snprintf(ix + p, sizeof(ix) - p, " + (o / %lld %% %lld) * %lld",
				                      (long long)os, (long long)dim, (long long)(step * ist[k]));
			os *= dim;
		}
		flat_open(cg, L, ne);
		cg_line(cg, "    Y0[o] = X0[%lld%s];", (long long)base, ix);
		cg_line(cg, "}");
		return true;
	}
	case RL_OP_Concat: {
		if (ne <= 0 || n->nin > 16 || !rl_axis_norm(rl_node_attr_int(n, "axis", 0), r, false, &axis))
			return false;
		int64_t outer, len, inner, at = 0;
		axis_split(&Y->shape, axis, &outer, &len, &inner);
		flat_open(cg, L, ne);
		cg_line(cg, "    const int64_t c = o / %lld %% %lld, q = o / %lld, i = o %% %lld;",
		        (long long)inner, (long long)len, (long long)(inner * len), (long long)inner);
		cg_line(cg, "    (void)q;");
		cg_line(cg, "    (void)i;");
		for (int k = 0; k < n->nin; k++) {
			const struct rl_value *xk = cg_in(cg, node, k);
			if (!xk || xk->dtype != Y->dtype)
				return false;
			int64_t lk = xk->shape.d[axis].v;
			if (lk == 0)
				continue;
			cg_line(cg, "    %sif (c < %lld)", at ? "else " : "", (long long)(at + lk));
			cg_line(cg, "        Y0[o] = X%d[(q * %lld + c - %lld) * %lld + i];", k, (long long)lk,
			        (long long)at, (long long)inner);
			at += lk;
		}
		cg_line(cg, "}");
		return true;
	}
	case RL_OP_Split: {
		if (nx <= 0 || n->nout > 16 || !rl_axis_norm(rl_node_attr_int(n, "axis", 0), r, false, &axis))
			return false;
		int64_t outer, len, inner, at = 0;
		axis_split(&X->shape, axis, &outer, &len, &inner);
		flat_open(cg, L, nx);
		cg_line(cg, "    const int64_t c = o / %lld %% %lld, q = o / %lld, i = o %% %lld;",
		        (long long)inner, (long long)len, (long long)(inner * len), (long long)inner);
		cg_line(cg, "    (void)q;");
		cg_line(cg, "    (void)i;");
		for (int k = 0; k < n->nout; k++) {
			const struct rl_value *yk = cg_out(cg, node, k);
			if (!yk || yk->dtype != X->dtype)
				return false;
			int64_t lk = yk->shape.d[axis].v;
			if (lk == 0)
				continue;
			cg_line(cg, "    %sif (c < %lld)", at ? "else " : "", (long long)(at + lk));
			cg_line(cg, "        Y%d[(q * %lld + c - %lld) * %lld + i] = X0[o];", k, (long long)lk,
			        (long long)at, (long long)inner);
			at += lk;
		}
		cg_line(cg, "}");
		return true;
	}
	case RL_OP_Gather: {
		const struct rl_value *I = cg_in(cg, node, 1);
		if (ne <= 0 || !I || (I->dtype != RL_DT_INT64 && I->dtype != RL_DT_INT32) ||
		    !rl_axis_norm(rl_node_attr_int(n, "axis", 0), r, false, &axis))
			return false;
		int64_t outer, len, inner, ni = rl_shape_numel(&I->shape);
		axis_split(&X->shape, axis, &outer, &len, &inner);
		flat_open(cg, L, ne);
		cg_line(cg, "    const int64_t i = o %% %lld, j = o / %lld %% %lld, q = o / %lld;",
		        (long long)inner, (long long)inner, (long long)ni, (long long)(inner * ni));
		cg_line(cg, "    int64_t t = (int64_t)X1[j];");
		cg_line(cg, "    if (t < 0)");
		cg_line(cg, "        t += %lld;", (long long)len);
		cg_line(cg, "    /* an index out of range reads element 0: no fault on the GPU */");
		cg_line(cg, "    Y0[o] = t >= 0 && t < %lld ? X0[(q * %lld + t) * %lld + i] : X0[0];",
		        (long long)len, (long long)len, (long long)inner);
		cg_line(cg, "}");
		return true;
	}
	default:
		return false;
	}
}

/* ---- every other op: the C emitter's body ------------------------------- */

static enum rl_status k_fallback(struct cu *d, uint32_t node, const struct rl_cgen_group *gr,
                                 struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	size_t sl = cg->statics.len, il = cg->init.len, fl = cg->fini.len;
	enum rl_status st;
	/* a CUDA kernel that declined this form may have begun its body */
	cg->body.len = 0;
	if (cg->body.s)
		cg->body.s[0] = 0;
	cg->indent = 0;
	if (gr)
		st = rl_emit_c_fused(cg, gr);
	else if (!rl_emit_c_supports(n->op))
		st = cg_error(cg, node, "the CUDA backend does not implement %s yet",
		              rl_op_table[n->op].name);
	else
		switch (rl_op_table[n->op].family) {
		case RL_FAM_ELEMWISE: st = rl_emit_c_elemwise(cg, node); break;
		case RL_FAM_MATMUL: st = rl_emit_c_matmul(cg, node); break;
		case RL_FAM_CONV: st = rl_emit_c_conv(cg, node); break;
		case RL_FAM_POOL: st = rl_emit_c_pool(cg, node); break;
		case RL_FAM_NORM: st = rl_emit_c_norm(cg, node); break;
		case RL_FAM_REDUCE: st = rl_emit_c_reduce(cg, node); break;
		case RL_FAM_SHAPE: st = rl_emit_c_shape(cg, node); break;
		case RL_FAM_CONST: st = rl_emit_c_const(cg, node); break;
		default:
			st = cg_error(cg, node, "the CUDA backend does not implement %s yet",
			              rl_op_table[n->op].name);
		}
	if (st != RL_OK)
		return st;
	/* vector math the C kernel asked for sits under #ifdef RL_VEC, which a
	 * CUDA build never defines: drop it; anything else is the CPU runtime */
	if (cg->statics.len != sl && strncmp(cg->statics.s + sl, "#ifdef RL_VEC", 13) == 0 &&
	    strstr(cg->statics.s + sl, "#endif /* RL_VEC */\n\n") ==
	            cg->statics.s + cg->statics.len - strlen("#endif /* RL_VEC */\n\n")) {
		cg->statics.len = sl;
		cg->statics.s[sl] = 0;
	}
	if (cg->statics.len != sl || cg->init.len != il || cg->fini.len != fl)
		return cg_error(cg, node, "the CUDA backend does not implement this form of %s yet "
		                "(the C kernel needs its CPU runtime)", rl_op_table[n->op].name);
	L->block = CU_FALLBACK_THREADS;
	if (cg->par_n > 0) {
		int64_t blocks = (cg->par_n + CU_FALLBACK_THREADS - 1) / CU_FALLBACK_THREADS;
		L->grid = blocks;
		struct rl_buf b = {0};
		rl_buf_printf(&b, "    /* the C emitter's outer loop: one iteration per thread */\n"
		              "    const int64_t lo = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
		              "    if (lo >= %lldll)\n        return;\n"
		              "    const int64_t hi = lo + 1;\n%s", (long long)cg->par_n,
		              cg->body.s ? cg->body.s : "");
		rl_buf_free(&cg->body);
		cg->body = b;
	} else {
		L->grid = 1;
		L->block = 1;
		L->serial = true;
		d->nserial++;
	}
	return RL_OK;
}

/* ---- the kernels --------------------------------------------------------- */

static void kernel_name(struct cu *d, const struct rl_plan_unit *un, char *b, size_t n)
{
	struct rl_graph *g = d->g;
	char sn[64], s2[64];
	if (un->grp < 0) {
		sanitize(g->nodes[un->node].name, sn, 48);
		snprintf(b, n, "k%u_%s", un->k, sn);
		return;
	}
	const struct rl_cgen_group *gr = &d->pl.grps[un->grp];
	sanitize(g->nodes[gr->nodes[0]].name, sn, 28);
	sanitize(g->nodes[gr->nodes[gr->nnodes - 1]].name, s2, 28);
	snprintf(b, n, "k%u_fused_%.28s__%.28s", un->k, sn, s2);
}

static bool uses_ident(const char *s, const char *id)
{
	size_t l = strlen(id);
	for (const char *p = s ? strstr(s, id) : NULL; p; p = strstr(p + 1, id)) {
		bool before = p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		bool after = isalnum((unsigned char)p[l]) || p[l] == '_';
		if (!before && !after)
			return true;
	}
	return false;
}

static enum rl_status emit_kernels(struct cu *d)
{
	struct rl_graph *g = d->g;
	for (uint32_t u = 0; u < d->pl.nunits; u++) {
		const struct rl_plan_unit *un = &d->pl.units[u];
		char b[256];
		if (un->view) {
			char nm[128];
			ctext(g->nodes[un->node].name, nm, sizeof(nm));
			dev_ptr(d, g->nodes[un->node].out[0], false, b, sizeof(b));
			rl_buf_printf(&d->launches, "    /* '%s' (%s): a view of %s, nothing to run */\n",
			              nm, rl_op_table[g->nodes[un->node].op].name, b);
			continue;
		}
		const struct rl_cgen_group *gr = un->grp >= 0 ? &d->pl.grps[un->grp] : NULL;
		struct rl_node *n = &g->nodes[un->node];
		struct rl_cgen *cg = &d->cg;
		char kname[128];
		kernel_name(d, un, kname, sizeof(kname));
		cg->body.len = 0;
		if (cg->body.s)
			cg->body.s[0] = 0;
		cg->indent = 0;
		cg->kname = kname;
		cg->par_n = cg->par_grain = 0;
		cg->simd = 0;
		cg->epi = NULL;
		struct launch L = {0};
		enum rl_status st;
		const char *how;
		if (gr && gr->anchor != RL_NONE &&
		    (g->nodes[gr->anchor].op == RL_OP_MatMul || g->nodes[gr->anchor].op == RL_OP_Gemm ||
		     g->nodes[gr->anchor].op == RL_OP_Conv)) {
			cg->epi = gr;
			cg->epi_calls = 0;
			cg->err[0] = 0;
			st = g->nodes[gr->anchor].op == RL_OP_Conv ? k_conv(d, gr->anchor, &L)
			                                           : k_matmul(d, gr->anchor, &L);
			cg->epi = NULL;
			if (st == RL_OK && cg->err[0])
				st = rl_graph_error(g, &g->nodes[gr->anchor], RL_ERR_UNSUPPORTED, "%s", cg->err);
			how = "its epilogue fused";
		} else if (gr && gr->anchor == RL_NONE) {
			st = k_elemwise(d, gr, &L);
			how = "one thread per element";
		} else if (!gr && cg_elemwise_has_expr(n->op) && n->nout >= 1 &&
		           n->out[0] != RL_NONE && n->nin <= 16) {
			uint32_t one = un->node, ins[17];
			int ni = 0;
			for (int q = 0; q < n->nin; q++)
				ins[ni++] = n->in[q];
			struct rl_cgen_group sg = {.id = -1, .nodes = &one, .nnodes = 1, .anchor = RL_NONE,
			                           .in = ins, .nin = ni, .out = n->out, .nout = 1};
			st = k_elemwise(d, &sg, &L);
			how = "one thread per element";
		} else if (!gr && n->op == RL_OP_Conv) {
			st = k_conv(d, un->node, &L);
			how = "direct convolution, one thread per output";
		} else if (!gr && (n->op == RL_OP_MatMul || n->op == RL_OP_Gemm)) {
			st = k_matmul(d, un->node, &L);
			how = "tiled product";
		} else if (!gr && rl_op_table[n->op].family == RL_FAM_REDUCE &&
		           k_reduce(d, un->node, &L)) {
			st = RL_OK;
			how = "one block per output";
		} else if (!gr && (n->op == RL_OP_Expand || n->op == RL_OP_Slice ||
		                   n->op == RL_OP_Concat || n->op == RL_OP_Split ||
		                   n->op == RL_OP_Gather) && k_shape(d, un->node, &L)) {
			st = RL_OK;
			how = "one thread per element";
		} else if (!gr && n->op == RL_OP_Transpose && k_transpose(d, un->node, &L)) {
			st = RL_OK;
			how = "one thread per element";
		} else if (!gr && (n->op == RL_OP_Softmax || n->op == RL_OP_LogSoftmax ||
		                   n->op == RL_OP_LayerNormalization) && k_rows(d, un->node, &L)) {
			st = RL_OK;
			how = "one block per row";
		} else {
			st = k_fallback(d, un->node, gr, &L);
			how = L.serial ? "serial: the C backend's loop nest on one thread (no parallel CUDA "
			                 "kernel for this op yet)"
			               : "the C backend's loop nest, one outer iteration per thread";
		}
		if (st != RL_OK)
			return st;
		/* comment, signature, body */
		int nin = gr ? gr->nin : n->nin, nout = gr ? gr->nout : n->nout;
		const uint32_t *ins = gr ? gr->in : n->in, *outs = gr ? gr->out : n->out;
		if (gr) {
			rl_buf_printf(&d->kernels, "/* fused group of %d ONNX nodes (%s):\n", gr->nnodes, how);
			for (int j = 0; j < gr->nnodes; j++) {
				char nm[128];
				ctext(g->nodes[gr->nodes[j]].name, nm, sizeof(nm));
				rl_buf_printf(&d->kernels, " *   '%s' (%s)\n", nm,
				              rl_op_table[g->nodes[gr->nodes[j]].op].name);
			}
			rl_buf_printf(&d->kernels, " *");
		} else {
			char nm[128];
			ctext(n->name, nm, sizeof(nm));
			rl_buf_printf(&d->kernels, "/* node '%s' (%s; %s)\n *", nm, rl_op_table[n->op].name,
			              how);
		}
		for (int q = 0; q < nin + nout; q++) {
			uint32_t v = q < nin ? ins[q] : outs[q - nin];
			char sb[128];
			if (v == RL_NONE)
				continue;
			rl_buf_printf(&d->kernels, "%s %c%d %s[%s]", q == nin ? " ->" : q ? "," : "",
			              q < nin ? 'X' : 'Y', q < nin ? q : q - nin,
			              rl_dtype_name(val(d, v)->dtype),
			              rl_shape_str(&val(d, v)->shape, sb, sizeof(sb)));
		}
		rl_buf_printf(&d->kernels, "\n */\n__global__ void __launch_bounds__(%d) %s(", L.block > 0
		              ? L.block : 1, kname);
		for (int q = 0; q < nin + nout; q++) {
			bool out = q >= nin;
			uint32_t v = out ? outs[q - nin] : ins[q];
			enum rl_dtype dt = v == RL_NONE ? RL_DT_FLOAT : val(d, v)->dtype;
			rl_buf_printf(&d->kernels, "%s%s%s *__restrict__ %c%d", q ? ", " : "",
			              out ? "" : "const ", cg_ctype(dt), out ? 'Y' : 'X', out ? q - nin : q);
		}
		rl_buf_printf(&d->kernels, "%s)\n{\n", nin + nout ? "" : "void");
		if (L.serial)
			rl_buf_printf(&d->kernels, "    if (blockIdx.x != 0 || threadIdx.x != 0)\n"
			              "        return;\n");
		for (int q = 0; q < nin + nout; q++) {
			char id[16];
			snprintf(id, sizeof(id), "%c%d", q < nin ? 'X' : 'Y', q < nin ? q : q - nin);
			if (!uses_ident(cg->body.s, id))
				rl_buf_printf(&d->kernels, "    (void)%s;\n", id);
		}
		rl_buf_printf(&d->kernels, "%s}\n\n", cg->body.s ? cg->body.s : "");
		/* the launch */
		if (L.grid <= 0)
			continue;
		rl_buf_printf(&d->launches, "    %s(%s, %lld, %d", L.phased ? "RL_LAUNCH_PHASED"
		              : "RL_LAUNCH", kname, (long long)L.grid, L.block);
		for (int q = 0; q < nin + nout; q++) {
			bool out = q >= nin;
			dev_ptr(d, out ? outs[q - nin] : ins[q], out, b, sizeof(b));
			if ((out ? outs[q - nin] : ins[q]) == RL_NONE)
				snprintf(b, sizeof(b), "(const %s *)0", cg_ctype(RL_DT_FLOAT));
			rl_buf_printf(&d->launches, ", %s", b);
		}
		rl_buf_printf(&d->launches, ");\n");
	}
	return RL_OK;
}

/* ---- the file's fixed text ---------------------------------------------- */

static const char prelude[] =
	"#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
	"#include <string.h>\n\n"
	"#ifdef RL_CUDA_EMULATE\n"
	"/*\n"
	" * Emulation (g++ -x c++ -DRL_CUDA_EMULATE): the same kernels on the CPU.\n"
	" * RL_LAUNCH runs a plain kernel once per thread of every block, in order;\n"
	" * RL_LAUNCH_PHASED runs a barrier kernel once per block, and its\n"
	" * RL_THREADS phases loop over the block's threads, so every thread\n"
	" * finishes a phase before any starts the next (what __syncthreads gives).\n"
	" */\n"
	"#define __global__ static\n#define __device__\n#define __host__\n"
	"#define __forceinline__ inline\n#define __launch_bounds__(n)\n"
	"#define __restrict__ __restrict\n#define __shared__ static\n"
	"struct rl_dim3 { unsigned x, y, z; };\n"
	"static struct rl_dim3 threadIdx, blockIdx, blockDim, gridDim;\n"
	"#define RL_MAX_BLOCK 1024\n"
	"#define RL_THREADS for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++)\n"
	"#define RL_SYNC\n"
	"#define RL_LOCAL(T, name, dims) static T name##_t[RL_MAX_BLOCK] dims\n"
	"#define RL_L(name) name##_t[threadIdx.x]\n"
	"#define RL_GRID(g, b) \\\n"
	"    gridDim.x = (unsigned)(g), gridDim.y = gridDim.z = 1, blockDim.x = (unsigned)(b), \\\n"
	"    blockDim.y = blockDim.z = 1, blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0\n"
	"/* a crash names the kernel, block and thread it happened in */\n"
	"#include <signal.h>\n#include <unistd.h>\n"
	"static const char *rl_emu_kernel = \"(none)\";\n"
	"static void rl_emu_signal(int sig)\n{\n"
	"    char b[256];\n"
	"    int n = snprintf(b, sizeof(b), \"emulation: signal %d in kernel %s, block %u, thread %u\\n\",\n"
	"                     sig, rl_emu_kernel, blockIdx.x, threadIdx.x);\n"
	"    if (n > 0 && write(2, b, (size_t)n) < 0)\n        _exit(70);\n"
	"    _exit(70);\n}\n"
	"static inline void rl_emu_trap(void)\n{\n"
	"    signal(SIGSEGV, rl_emu_signal);\n    signal(SIGFPE, rl_emu_signal);\n"
	"    signal(SIGBUS, rl_emu_signal);\n    signal(SIGILL, rl_emu_signal);\n}\n"
	"#define RL_LAUNCH(k, g, b, ...) do { RL_GRID(g, b); rl_emu_kernel = #k; \\\n"
	"    for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++) \\\n"
	"        for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++) \\\n"
	"            k(__VA_ARGS__); } while (0)\n"
	"#define RL_LAUNCH_PHASED(k, g, b, ...) do { RL_GRID(g, b); rl_emu_kernel = #k; \\\n"
	"    for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++) \\\n"
	"        k(__VA_ARGS__); } while (0)\n"
	"typedef int cudaError_t;\ntypedef void *cudaStream_t;\n"
	"enum { cudaSuccess = 0, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,\n"
	"       cudaMemcpyDeviceToDevice };\n"
	"static inline cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }\n"
	"static inline cudaError_t cudaFree(void *p) { free(p); return 0; }\n"
	"static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int k)\n"
	"{ (void)k; if (n) memmove(d, s, n); return 0; }\n"
	"static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int k, cudaStream_t t)\n"
	"{ (void)t; return cudaMemcpy(d, s, n, k); }\n"
	"static inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return 0; }\n"
	"static inline cudaError_t cudaGetLastError(void) { return 0; }\n"
	"static inline const char *cudaGetErrorString(cudaError_t e) { (void)e; return \"emulation error\"; }\n"
	"#define RL_NO_GRAPH 1\n"
	"#else\n"
	"#include <cuda_runtime.h>\n"
	"#define RL_THREADS\n#define RL_SYNC __syncthreads();\n"
	"#define RL_LOCAL(T, name, dims) T name dims\n#define RL_L(name) name\n"
	"/* -DRL_CUDA_NO_GRAPH: launch kernel by kernel on every run (for debugging\n"
	" * and profiling: each launch is waited for, checked, and named when it\n"
	" * fails) instead of replaying the CUDA graph captured at init */\n"
	"#ifdef RL_CUDA_NO_GRAPH\n#define RL_NO_GRAPH 1\n"
	"static int rl_check(cudaStream_t s, const char *k)\n{\n"
	"    cudaError_t e = cudaStreamSynchronize(s);\n"
	"    if (e == cudaSuccess)\n        e = cudaGetLastError();\n"
	"    if (e != cudaSuccess)\n"
	"        fprintf(stderr, \"kernel %s: %s\\n\", k, cudaGetErrorString(e));\n"
	"    return e == cudaSuccess ? 0 : -1;\n}\n"
	"#define RL_LAUNCH(k, g, b, ...) do { k<<<(g), (b), 0, s>>>(__VA_ARGS__); \\\n"
	"    if (rl_check(s, #k) != 0) return -1; } while (0)\n"
	"#else\n"
	"#define RL_LAUNCH(k, g, b, ...) k<<<(g), (b), 0, s>>>(__VA_ARGS__)\n"
	"#endif\n"
	"#define RL_LAUNCH_PHASED RL_LAUNCH\n"
	"#endif\n"
	"#define restrict __restrict__\n\n";

/* The scalar helpers, callable from kernels and host code alike. */
static void emit_helper(struct rl_buf *c, const char *text)
{
	const char *from = "static inline __attribute__((unused))";
	for (const char *p = text; *p;) {
		const char *q = strstr(p, from);
		if (!q) {
			rl_buf_printf(c, "%s", p);
			break;
		}
		rl_buf_printf(c, "%.*sstatic __host__ __device__ inline", (int)(q - p), p);
		p = q + strlen(from);
	}
}

/* Constant bytes as a string literal: printable ASCII as itself, the rest
 * as three-digit octal escapes (which never run into a following digit). */
static void emit_const(struct cu *d, uint32_t v)
{
	const struct rl_value *x = val(d, v);
	const unsigned char *p = x->data;
	char sn[48];
	sanitize(x->name, sn, sizeof(sn));
	rl_buf_printf(&d->c, "/* '%s' %s, %zu bytes */\nstatic const char %s_h%u[%zu] =\n    \"",
	              sn, rl_dtype_name(x->dtype), x->nbytes, d->prefix, v, x->nbytes + 1);
	size_t col = 0;
	for (size_t i = 0; i < x->nbytes; i++) {
		unsigned c = p[i];
		if (c >= 32 && c < 127 && c != '\\' && c != '"' && c != '?')
			rl_buf_printf(&d->c, "%c", (char)c), col++;
		else
			rl_buf_printf(&d->c, "\\%03o", c), col += 4;
		if (col >= 96 && i + 1 < x->nbytes) {
			rl_buf_printf(&d->c, "\"\n    \"");
			col = 0;
		}
	}
	rl_buf_printf(&d->c, "\";\n");
}

static void dims_list(const struct rl_shape *s, char *b, size_t n)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < s->rank; i++)
		p += (size_t)snprintf(b + p, n - p, "%s%lld", i ? ", " : "", (long long)s->d[i].v);
	if (!s->rank)
		snprintf(b, n, "0");
}

/* A parameter name for an input or output: the C backend's, with a '_'
 * after a C++ keyword (the .cu is C++: an output named "and" or "new"). */
static void io_name(const struct rl_value *v, bool out_of_input, char *b, size_t n)
{
	static const char *const kw[] = {
		"and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor",
		"xor_eq", "bool", "true", "false", "class", "new", "delete", "this", "template",
		"typename", "operator", "private", "protected", "public", "namespace", "using", "try",
		"catch", "throw", "virtual", "friend", "explicit", "export", "mutable", "typeid",
		"nullptr", "decltype", "constexpr", "noexcept", "alignas", "alignof", "char16_t",
		"char32_t", "static_assert", "thread_local", "concept", "requires", "co_await",
		"co_return", "co_yield", "asm", "wchar_t", "dynamic_cast", "static_cast",
		"const_cast", "reinterpret_cast", "consteval", "constinit", "char8_t",
	};
	char sn[64];
	sanitize(v->name, sn, sizeof(sn));
	bool clash = false;
	for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]) && !clash; k++)
		clash = strcmp(sn, kw[k]) == 0;
	snprintf(b, n, "%s%s%s", sn, clash ? "_" : "", out_of_input ? "_out" : "");
}

/* The host side: init, free, the launch sequence, the run entries, tables. */
static void emit_host(struct cu *d)
{
	struct rl_graph *g = d->g;
	const char *P = d->prefix;
	struct rl_buf *c = &d->c;
	rl_buf_printf(c, "static unsigned char *%s_ws;  /* device workspace, %lld bytes */\n", P,
	              (long long)d->pl.ws_size);
	rl_buf_printf(c, "static unsigned char *%s_cst; /* device constants, %lld bytes */\n", P,
	              (long long)d->cst_size);
	rl_buf_printf(c, "static unsigned char *%s_io;  /* device inputs and outputs, %lld bytes */\n",
	              P, (long long)d->io_size);
	rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\nstatic cudaStream_t %s_stream;\n#endif\n"
	              "#ifndef RL_NO_GRAPH\nstatic cudaGraph_t %s_graph;\nstatic cudaGraphExec_t %s_exec;\n"
	              "#endif\n\n", P, P, P);
	/* launches */
	rl_buf_printf(c, "/* Every kernel of one run, in order, on stream s. */\n"
	              "static int %s_launch(cudaStream_t s)\n{\n    (void)s;\n", P);
	rl_buf_printf(c, "%s", d->launches.s ? d->launches.s : "");
	for (uint32_t i = 0; i < g->noutputs; i++) {
		uint32_t v = g->outputs[i];
		const struct rl_plan_val *pv = &d->pl.vals[v];
		if (pv->st == RL_PLAN_OUTPUT && pv->io == (int)i)
			continue;
		char b[256];
		dev_ptr(d, v, false, b, sizeof(b));
		rl_buf_printf(c, "    if (cudaMemcpyAsync(%s_io + %lld, %s, %lld, cudaMemcpyDeviceToDevice, s)"
		              " != cudaSuccess)\n        return -1;\n", P, (long long)d->io_out[i], b,
		              (long long)value_bytes(g, v));
	}
	rl_buf_printf(c, "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n");
	/* init */
	rl_buf_printf(c, "int %s_init(const char *weights_path)\n{\n    (void)weights_path;\n"
	              "    if (%s_ws)\n        return 0;\n"
	              "#ifdef RL_CUDA_EMULATE\n    rl_emu_trap();\n#endif\n", P, P);
	rl_buf_printf(c, "    if (cudaMalloc((void **)&%s_ws, %lld) != cudaSuccess ||\n"
	              "        cudaMalloc((void **)&%s_cst, %lld) != cudaSuccess ||\n"
	              "        cudaMalloc((void **)&%s_io, %lld) != cudaSuccess)\n"
	              "        goto fail;\n", P, (long long)align_up(d->pl.ws_size + 1), P,
	              (long long)align_up(d->cst_size + 1), P, (long long)align_up(d->io_size + 1));
	if (d->side) {
		/* the side file is the constant arena's image after a 16-byte header */
		long long total = CU_SIDE_HEADER + d->cst_size;
		rl_buf_printf(c, "    {\n        if (!weights_path)\n            weights_path = \"%s\";\n"
		              "        FILE *f = fopen(weights_path, \"rb\");\n"
		              "        unsigned char *w = f ? (unsigned char *)malloc(%lld) : NULL;\n"
		              "        size_t got = w ? fread(w, 1, %lld, f) : 0;\n"
		              "        int extra = f ? fgetc(f) : EOF;\n"
		              "        if (f)\n            fclose(f);\n"
		              "        int ok = got == %lldu && extra == EOF && memcmp(w, \"RLWTS001\", 8) == 0 &&\n"
		              "                 cudaMemcpy(%s_cst, w + %d, %lld, cudaMemcpyHostToDevice) == cudaSuccess;\n"
		              "        free(w);\n        if (!ok)\n            goto fail;\n    }\n",
		              d->wbase, total, total, total, P, CU_SIDE_HEADER, (long long)d->cst_size);
	} else {
		for (uint32_t v = 0; v < g->nvalues; v++)
			if (d->pl.vals[v].st == RL_PLAN_CONST && val(d, v)->nbytes)
				rl_buf_printf(c, "    if (cudaMemcpy(%s_cst + %lld, %s_h%u, %zu, "
				              "cudaMemcpyHostToDevice) != cudaSuccess)\n        goto fail;\n", P,
				              (long long)d->coff[v], P, v, val(d, v)->nbytes);
	}
	rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\n"
	              "    if (cudaStreamCreateWithFlags(&%s_stream, cudaStreamNonBlocking) != cudaSuccess)\n"
	              "        goto fail;\n#endif\n", P);
	rl_buf_printf(c, "#ifndef RL_NO_GRAPH\n"
	              "    /* the whole run as one CUDA graph, replayed by every call */\n"
	              "    if (cudaStreamBeginCapture(%s_stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess)\n"
	              "        goto fail;\n"
	              "    if (%s_launch(%s_stream) != 0) {\n"
	              "        cudaStreamEndCapture(%s_stream, &%s_graph);\n        goto fail;\n    }\n"
	              "    if (cudaStreamEndCapture(%s_stream, &%s_graph) != cudaSuccess ||\n"
	              "        cudaGraphInstantiate(&%s_exec, %s_graph, 0) != cudaSuccess)\n"
	              "        goto fail;\n#endif\n", P, P, P, P, P, P, P, P, P);
	rl_buf_printf(c, "    return 0;\nfail:\n    %s_free();\n    return -1;\n}\n\n", P);
	/* free */
	rl_buf_printf(c, "void %s_free(void)\n{\n#ifndef RL_NO_GRAPH\n"
	              "    if (%s_exec)\n        cudaGraphExecDestroy(%s_exec);\n"
	              "    if (%s_graph)\n        cudaGraphDestroy(%s_graph);\n"
	              "    %s_exec = NULL;\n    %s_graph = NULL;\n#endif\n"
	              "#ifndef RL_CUDA_EMULATE\n    if (%s_stream)\n        cudaStreamDestroy(%s_stream);\n"
	              "    %s_stream = NULL;\n#endif\n", P, P, P, P, P, P, P, P, P, P);
	rl_buf_printf(c, "    cudaFree(%s_ws);\n    cudaFree(%s_cst);\n    cudaFree(%s_io);\n"
	              "    %s_ws = %s_cst = %s_io = NULL;\n}\n\n", P, P, P, P, P, P);
	rl_buf_printf(c, "int %s_set_threads(int n)\n{\n"
	              "    /* the C API's thread count: the GPU's blocks are the CUDA backend's threads */\n"
	              "    return n < 1 ? -1 : 0;\n}\n\n", P);
	/* one run on the device buffers */
	rl_buf_printf(c, "static int %s_replay(void)\n{\n#ifdef RL_CUDA_EMULATE\n"
	              "    return %s_launch(NULL);\n#elif defined(RL_NO_GRAPH)\n"
	              "    if (%s_launch(%s_stream) != 0)\n        return -1;\n"
	              "    cudaError_t e = cudaStreamSynchronize(%s_stream);\n"
	              "    if (e != cudaSuccess)\n"
	              "        fprintf(stderr, \"%s: %%s\\n\", cudaGetErrorString(e));\n"
	              "    return e == cudaSuccess ? 0 : -1;\n#else\n"
	              "    return cudaGraphLaunch(%s_exec, %s_stream) == cudaSuccess ? 0 : -1;\n#endif\n}\n\n",
	              P, P, P, P, P, P, P, P);
	/* run on device pointers / host pointers */
	for (int dev = 1; dev >= 0; dev--) {
		const char *kind = dev ? "cudaMemcpyDeviceToDevice" : "cudaMemcpyHostToDevice";
		const char *back = dev ? "cudaMemcpyDeviceToDevice" : "cudaMemcpyDeviceToHost";
		rl_buf_printf(c, "int %s_run_%s(const void *const *in, void *const *out)\n{\n"
		              "    (void)in;\n    (void)out;\n"
		              "    if (!%s_ws && %s_init(NULL) != 0)\n        return -1;\n",
		              P, dev ? "device" : "v", P, P);
		rl_buf_printf(c, "#ifdef RL_CUDA_EMULATE\n    cudaStream_t s = NULL;\n#else\n"
		              "    cudaStream_t s = %s_stream;\n#endif\n", P);
		for (uint32_t i = 0; i < g->ninputs; i++)
			rl_buf_printf(c, "    if (cudaMemcpyAsync(%s_io + %lld, in[%u], %lld, %s, s) != "
			              "cudaSuccess)\n        return -1;\n", P, (long long)d->io_in[i], i,
			              (long long)value_bytes(g, g->inputs[i]), kind);
		rl_buf_printf(c, "    if (%s_replay() != 0)\n        return -1;\n", P);
		for (uint32_t i = 0; i < g->noutputs; i++)
			rl_buf_printf(c, "    if (cudaMemcpyAsync(out[%u], %s_io + %lld, %lld, %s, s) != "
			              "cudaSuccess)\n        return -1;\n", i, P, (long long)d->io_out[i],
			              (long long)value_bytes(g, g->outputs[i]), back);
		rl_buf_printf(c, "    return cudaStreamSynchronize(s) == cudaSuccess ? 0 : -1;\n}\n\n");
	}
	/* typed run */
	rl_buf_printf(c, "int %s_run(", P);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char nm[80];
		io_name(val(d, g->inputs[i]), false, nm, sizeof(nm));
		rl_buf_printf(c, "%sconst %s *%s", i ? ", " : "", cg_ctype(val(d, g->inputs[i])->dtype), nm);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = val(d, g->outputs[i]);
		char nm[80];
		io_name(v, (v->flags & RL_VAL_INPUT) != 0, nm, sizeof(nm));
		rl_buf_printf(c, "%s%s *%s", i || g->ninputs ? ", " : "", cg_ctype(v->dtype), nm);
	}
	rl_buf_printf(c, ")\n{\n    const void *in[%u] = {", g->ninputs + 1);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char nm[80];
		io_name(val(d, g->inputs[i]), false, nm, sizeof(nm));
		rl_buf_printf(c, "%s%s", i ? ", " : "", nm);
	}
	rl_buf_printf(c, "%s};\n    void *out[%u] = {", g->ninputs ? "" : "NULL", g->noutputs + 1);
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = val(d, g->outputs[i]);
		char nm[80];
		io_name(v, (v->flags & RL_VAL_INPUT) != 0, nm, sizeof(nm));
		rl_buf_printf(c, "%s%s", i ? ", " : "", nm);
	}
	rl_buf_printf(c, "%s};\n    return %s_run_v(in, out);\n}\n\n", g->noutputs ? "" : "NULL", P);
	/* io tables, as the C backend's */
	for (int io = 0; io < 2; io++) {
		uint32_t cnt = io ? g->noutputs : g->ninputs;
		const uint32_t *list = io ? g->outputs : g->inputs;
		const char *what = io ? "outputs" : "inputs";
		for (uint32_t i = 0; i < cnt; i++) {
			char b[256];
			dims_list(&val(d, list[i])->shape, b, sizeof(b));
			rl_buf_printf(c, "static const long long %s_%s_dims%u[] = {%s};\n", P, what, i, b);
		}
		rl_buf_printf(c, "const struct %s_tensor_info %s_%s[%u] = {\n", P, P, what, cnt ? cnt : 1);
		for (uint32_t i = 0; i < cnt; i++) {
			const struct rl_value *v = val(d, list[i]);
			char nm[128];
			ctext(v->name, nm, sizeof(nm));
			rl_buf_printf(c, "    {\"%s\", \"%s\", %d, %d, %s_%s_dims%u, %lldll, %lluu},\n", nm,
			              rl_dtype_name(v->dtype), (int)v->dtype, v->shape.rank, P, what, i,
			              (long long)rl_shape_numel(&v->shape),
			              (unsigned long long)value_bytes(g, list[i]));
		}
		if (!cnt)
			rl_buf_printf(c, "    {\"\", \"\", 0, 0, NULL, 0, 0},\n");
		rl_buf_printf(c, "};\n");
	}
}

static void emit_header(struct cu *d, const char *hbase)
{
	struct rl_graph *g = d->g;
	const char *P = d->prefix;
	struct rl_buf *h = &d->h;
	char guard[80], upper[64], path[200];
	snprintf(upper, sizeof(upper), "%s", P);
	for (char *p = upper; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	snprintf(guard, sizeof(guard), "%s_H", upper);
	ctext(g->path ? g->path : "", path, sizeof(path));
	rl_buf_printf(h, "/*\n * %s - generated by rlopt %s (CUDA backend) from %s.\n *\n", hbase,
	              RL_VERSION, path);
	rl_buf_printf(h, " * Call %s_init() once (it allocates device memory, uploads the weights\n"
	              " * and captures the run as a CUDA graph), then %s_run() (host pointers) or\n"
	              " * %s_run_device() (device pointers) as often as needed, and %s_free() at\n"
	              " * the end. Not thread-safe: one run at a time per process. Returns 0 on\n"
	              " * success, -1 on failure. Plain C API: the kernels are in the .cu.\n", P, P, P, P);
	for (int io = 0; io < 2; io++) {
		uint32_t cnt = io ? g->noutputs : g->ninputs;
		const uint32_t *list = io ? g->outputs : g->inputs;
		for (uint32_t i = 0; i < cnt; i++) {
			const struct rl_value *v = val(d, list[i]);
			char sb[128], nm[128];
			ctext(v->name, nm, sizeof(nm));
			rl_buf_printf(h, " *   %s %u: %s %s[%s]\n", io ? "output" : "input ", i, nm,
			              rl_dtype_name(v->dtype), rl_shape_str(&v->shape, sb, sizeof(sb)));
		}
	}
	rl_buf_printf(h, " * float16 and bfloat16 tensors are passed as uint16_t bit patterns.\n */\n");
	rl_buf_printf(h, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n"
	              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", guard, guard);
	rl_buf_printf(h, "#define %s_NUM_INPUTS %u\n#define %s_NUM_OUTPUTS %u\n\n", upper, g->ninputs,
	              upper, g->noutputs);
	rl_buf_printf(h, "struct %s_tensor_info {\n    const char *name;\n    const char *dtype;\n"
	              "    int onnx_dtype;\n    int rank;\n    const long long *dims;\n"
	              "    long long numel;\n    unsigned long nbytes;\n};\n", P);
	rl_buf_printf(h, "extern const struct %s_tensor_info %s_inputs[];\n", P, P);
	rl_buf_printf(h, "extern const struct %s_tensor_info %s_outputs[];\n\n", P, P);
	if (d->side)
		rl_buf_printf(h, "/* weights_path: the side file %s (NULL: that name, in the current\n"
		              " * folder); init uploads it to the GPU. */\n", d->wbase);
	else
		rl_buf_printf(h, "/* weights_path: unused (weights are embedded and uploaded by init). */\n");
	rl_buf_printf(h, "int %s_init(const char *weights_path);\nvoid %s_free(void);\n", P, P);
	rl_buf_printf(h, "/* For the C backend's API: accepted (n >= 1) and ignored. */\n"
	              "int %s_set_threads(int n);\n", P);
	rl_buf_printf(h, "/* inputs and outputs in the order of the tables above: host memory */\n"
	              "int %s_run_v(const void *const *in, void *const *out);\n", P);
	rl_buf_printf(h, "/* the same with device pointers (copied device to device into the\n"
	              " * buffers the captured graph reads and writes) */\n"
	              "int %s_run_device(const void *const *in, void *const *out);\n", P);
	rl_buf_printf(h, "int %s_run(", P);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char nm[80];
		io_name(val(d, g->inputs[i]), false, nm, sizeof(nm));
		rl_buf_printf(h, "%sconst %s *%s", i ? ", " : "", cg_ctype(val(d, g->inputs[i])->dtype), nm);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = val(d, g->outputs[i]);
		char nm[80];
		io_name(v, (v->flags & RL_VAL_INPUT) != 0, nm, sizeof(nm));
		rl_buf_printf(h, "%s%s *%s", i || g->ninputs ? ", " : "", cg_ctype(v->dtype), nm);
	}
	rl_buf_printf(h, ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s */\n", guard);
}

/* ---- the entry ------------------------------------------------------------ */

/* Ops whose C kernels always need the C file's CPU-side helpers (the
 * resampling tap tables of emit_image.c): no CUDA form yet. */
static bool needs_cpu_runtime(enum rl_op op)
{
	return op == RL_OP_Resize || op == RL_OP_Upsample || op == RL_OP_GridSample;
}

bool rl_emit_cuda_supports(enum rl_op op)
{
	return op < RL_OP_COUNT_ && !needs_cpu_runtime(op) &&
	       (cg_elemwise_has_expr(op) || op == RL_OP_MatMul || op == RL_OP_Gemm ||
	        rl_emit_c_supports(op));
}

enum rl_status rl_emit_cuda(struct rl_graph *g, const struct rl_cuda_opts *o,
                            const char *cu_path, char *err, size_t errlen)
{
	struct cu d = {.g = g};
	d.cg.g = g;
	enum rl_status st;
	char prefix[64], hbase[512], h_path[4096], w_path[4096];
	unsigned char *side = NULL;
	long long wmax = o && o->weights_max >= 0 ? o->weights_max : CU_WEIGHTS_MAX;
	g->err[0] = 0;
	size_t cl = strlen(cu_path);
	if (cl < 4 || strcmp(cu_path + cl - 3, ".cu") != 0) {
		snprintf(err, errlen, "%s: the CUDA output must end in .cu", cu_path);
		return RL_ERR_IO;
	}
	snprintf(h_path, sizeof(h_path), "%.*s.h", (int)(cl - 3), cu_path);
	const char *slash = strrchr(cu_path, '/');
	const char *base = slash ? slash + 1 : cu_path;
	snprintf(hbase, sizeof(hbase), "%.*s.h", (int)(strlen(base) - 3), base);
	snprintf(w_path, sizeof(w_path), "%.*s.weights", (int)(cl - 3), cu_path);
	snprintf(d.wbase, sizeof(d.wbase), "%.*s.weights", (int)(strlen(base) - 3), base);
	if (o && o->prefix) {
		sanitize(o->prefix, prefix, sizeof(prefix));
	} else {
		char tmp[64];
		snprintf(tmp, sizeof(tmp), "%.*s", (int)(strlen(base) - 3), base);
		sanitize(tmp, prefix, sizeof(prefix));
	}
	d.prefix = prefix;

	if ((st = rl_emit_plan(g, rl_emit_cuda_supports, "CUDA", &d.pl)) != RL_OK)
		goto fail;
	for (uint32_t v = 0; v < g->nvalues; v++)
		if (!rl_dtype_is_numeric(g->values[v].dtype) && d.pl.vals[v].st != RL_PLAN_NONE) {
			st = rl_graph_error(g, NULL, RL_ERR_UNSUPPORTED, "value '%s' has dtype %s, which "
			                    "the CUDA backend does not compute on", g->values[v].name,
			                    rl_dtype_name(g->values[v].dtype));
			goto fail;
		}
	/* arenas: constants and the caller's inputs and outputs */
	d.coff = calloc((size_t)g->nvalues + 1, sizeof(*d.coff));
	d.io_in = calloc((size_t)g->ninputs + 1, sizeof(*d.io_in));
	d.io_out = calloc((size_t)g->noutputs + 1, sizeof(*d.io_out));
	RL_ASSERT(d.coff && d.io_in && d.io_out);
	for (uint32_t v = 0; v < g->nvalues; v++)
		if (d.pl.vals[v].st == RL_PLAN_CONST) {
			d.coff[v] = d.cst_size;
			d.cst_size += align_up((int64_t)g->values[v].nbytes);
		}
	d.side = d.cst_size > wmax;
	if (d.side) {
		side = calloc(1, (size_t)(CU_SIDE_HEADER + d.cst_size));
		if (!side) {
			st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory for the weights file");
			goto fail;
		}
		long long total = CU_SIDE_HEADER + d.cst_size;
		memcpy(side, "RLWTS001", 8);
		memcpy(side + 8, &total, 8);
		for (uint32_t v = 0; v < g->nvalues; v++)
			if (d.pl.vals[v].st == RL_PLAN_CONST && g->values[v].nbytes)
				memcpy(side + CU_SIDE_HEADER + d.coff[v], g->values[v].data, g->values[v].nbytes);
	}
	for (uint32_t i = 0; i < g->ninputs; i++) {
		d.io_in[i] = d.io_size;
		d.io_size += align_up(value_bytes(g, g->inputs[i]));
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		d.io_out[i] = d.io_size;
		d.io_size += align_up(value_bytes(g, g->outputs[i]));
	}
	if ((st = emit_kernels(&d)) != RL_OK)
		goto fail;

	unsigned nk = 0;
	for (uint32_t u = 0; u < d.pl.nunits; u++)
		nk += !d.pl.units[u].view;
	char path[200];
	ctext(g->path ? g->path : "", path, sizeof(path));
	rl_buf_printf(&d.c, "/*\n * %s - generated by rlopt %s (CUDA backend) from %s.\n", base,
	              RL_VERSION, path);
	rl_buf_printf(&d.c, " * Do not edit: regenerate instead. Build with nvcc (-arch=sm_80 or later),\n"
	              " * or on a CPU with g++ -x c++ -DRL_CUDA_EMULATE (emulation: same kernels).\n");
	rl_buf_printf(&d.c, " * %u kernels (%d serial), %lld bytes of workspace, %lld bytes of "
	              "constants%s.\n */\n", nk, d.nserial, (long long)d.pl.ws_size,
	              (long long)d.cst_size, d.side ? " (in the side file)" : "");
	rl_buf_printf(&d.c, "#include \"%s\"\n\n%s", hbase, prelude);
	if (d.cg.need_half)
		emit_helper(&d.c, rl_cg_helper_text[0]);
	if (d.cg.need_bf16)
		emit_helper(&d.c, rl_cg_helper_text[1]);
	if (d.cg.need_tanh)
		emit_helper(&d.c, rl_cg_helper_text[2]);
	if (d.cg.need_erf)
		emit_helper(&d.c, rl_cg_helper_text[3]);
	for (uint32_t v = 0; v < g->nvalues && !d.side; v++)
		if (d.pl.vals[v].st == RL_PLAN_CONST && val(&d, v)->nbytes)
			emit_const(&d, v);
	rl_buf_printf(&d.c, "\n%s", d.kernels.s ? d.kernels.s : "");
	emit_header(&d, hbase);
	/* the header first: the prototypes the host code defines */
	{
		struct rl_buf host = {0};
		struct rl_buf save = d.c;
		d.c = host;
		emit_host(&d);
		host = d.c;
		d.c = save;
		rl_buf_printf(&d.c, "%s", host.s ? host.s : "");
		rl_buf_free(&host);
	}
	st = rl_write_file_atomic(h_path, d.h.s, d.h.len, err, errlen);
	if (st == RL_OK && d.side) {
		st = rl_write_file_atomic(w_path, side, (size_t)(CU_SIDE_HEADER + d.cst_size), err, errlen);
		if (st != RL_OK)
			remove(h_path);
	}
	if (st == RL_OK) {
		st = rl_write_file_atomic(cu_path, d.c.s, d.c.len, err, errlen);
		if (st != RL_OK) {
			remove(h_path);
			if (d.side)
				remove(w_path);
		}
	}
	goto done;
fail:
	snprintf(err, errlen, "%s", g->err[0] ? g->err : "CUDA code generation failed");
done:
	rl_emit_plan_free(&d.pl);
	free(side);
	free(d.coff);
	free(d.io_in);
	free(d.io_out);
	rl_buf_free(&d.c);
	rl_buf_free(&d.h);
	rl_buf_free(&d.kernels);
	rl_buf_free(&d.launches);
	rl_buf_free(&d.cg.body);
	rl_buf_free(&d.cg.statics);
	rl_buf_free(&d.cg.init);
	rl_buf_free(&d.cg.fini);
	return st;
}
