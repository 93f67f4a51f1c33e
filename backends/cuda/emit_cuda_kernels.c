/*
 * emit_cuda_kernels.c - the CUDA backend's kernels other than products:
 * elementwise ops and fused groups (one thread per element, through the C
 * backend's expression table), Softmax/LogSoftmax/LayerNormalization and
 * Reduce* (one block per row or output, partials reduced in shared memory
 * in barrier phases), Transpose and the index-only shape ops (one thread per
 * element), and the fallback that runs the C emitter's loop nest as a kernel.
 * See emit_cuda.c for the phase convention that emulation relies on.
 */
#include "emit_cuda_impl.h"

#include "backends/c/emit_index.h"
#include "infer_impl.h"

#include <ctype.h>
#include <string.h>

/* A constant scalar a fused kernel writes as a literal (as emit_fused.c). */
static bool is_literal(struct cu *d, uint32_t v)
{
	return rl_value_is_const(d->g, v) && cu_val(d, v)->data &&
	       rl_shape_numel(&cu_val(d, v)->shape) == 1;
}

static void literal(struct cu *d, uint32_t v, char *b, size_t n)
{
	enum rl_dtype dt = cu_val(d, v)->dtype;
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
void cu_bcast_index(const struct rl_shape *out, const struct rl_shape *in, const char *o,
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
			uint32_t p = cu_val(d, v)->producer;
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
				                cu_val(d, v)->name);
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
		cu_ctext(n->name, nm, sizeof(nm));
		cg_line(cg, "const %s v%d = %s; /* %s: %s */", cg_comptype(dt), j, init, nm,
		        rl_op_table[n->op].name);
	}
	return RL_OK;
}

/* Whether the group reads its input k (an input only CastLike reads, for its
 * type, is never loaded). */
static bool group_reads(struct cu *d, const struct rl_cgen_group *gr, int k)
{
	if (gr->in[k] == RL_NONE)
		return false;
	for (int j = 0; j < gr->nnodes; j++) {
		const struct rl_node *nj = &d->g->nodes[gr->nodes[j]];
		for (int q = 0; q < nj->nin; q++)
			if (nj->in[q] == gr->in[k] && !(nj->op == RL_OP_CastLike && q == 1))
				return true;
	}
	return false;
}

void cu_grid_launch(struct launch *L, int64_t ne)
{
	int64_t blocks = (ne + CU_THREADS - 1) / CU_THREADS;
	L->block = CU_THREADS;
	L->grid = blocks < CU_MAX_BLOCKS ? blocks : CU_MAX_BLOCKS;
}

void cu_grid_loop(struct rl_cgen *cg, const char *idx, int64_t ne)
{
	cg_line(cg, "const int64_t stride = (int64_t)gridDim.x * blockDim.x;");
	cg_line(cg, "for (int64_t %s = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; %s < %lldll; "
	        "%s += stride) {", idx, idx, (long long)ne, idx);
}

void cu_grid_outputs(struct rl_cgen *cg, int64_t ne, int nsp, const int64_t *out)
{
	static const char sp[] = "abc";
	cu_grid_loop(cg, "o", ne);
	cg->indent++;
	cg_line(cg, "int64_t r = o;");
	for (int i = nsp - 1; i >= 0; i--) {
		cg_line(cg, "const int64_t o%c = r %% %lld;", sp[i], (long long)out[i]);
		cg_line(cg, "r /= %lld;", (long long)out[i]);
	}
}

enum rl_status cu_k_elemwise(struct cu *d, const struct rl_cgen_group *gr, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_shape *ys = &cu_val(d, gr->out[0])->shape;
	int64_t ne = rl_shape_numel(ys);
	cu_grid_launch(L, ne);
	if (ne == 0)
		return RL_OK;
	bool read[64] = {false};
	/* 128-bit loads and stores: every tensor read or written is float32 and
	 * either the output's shape or a scalar, and the element count is a
	 * multiple of 4 (the arenas and workspace offsets are 64-byte aligned);
	 * each thread then takes 4 consecutive elements per step */
	bool vec = ne % 4 == 0 && ne >= 1024 && gr->nin <= 64;
	for (int k = 0; k < gr->nin && k < 64; k++) {
		read[k] = group_reads(d, gr, k);
		if (read[k] && vec) {
			const struct rl_value *x = cu_val(d, gr->in[k]);
			int64_t xn = rl_shape_numel(&x->shape);
			vec = x->dtype == RL_DT_FLOAT && (xn == 1 || xn == ne);
		}
	}
	for (int q = 0; q < gr->nout && vec; q++)
		vec = cu_val(d, gr->out[q])->dtype == RL_DT_FLOAT;
	if (vec) {
		cu_grid_launch(L, ne / 4);
		cg_line(cg, "/* 4 consecutive elements per thread and step: 128-bit loads and stores */");
		cu_grid_loop(cg, "o4", ne / 4);
		cg->indent++;
		for (int k = 0; k < gr->nin; k++) {
			if (!read[k] || rl_shape_numel(&cu_val(d, gr->in[k])->shape) == 1)
				continue;
			cg_line(cg, "const float4 l%d = rl_ld16f(X%d + o4 * 4);", k, k);
			cg_line(cg, "const float a%d[4] = {l%d.x, l%d.y, l%d.z, l%d.w};", k, k, k, k, k);
		}
		for (int q = 0; q < gr->nout; q++)
			cg_line(cg, "float b%d[4];", q);
		cg_line(cg, "for (int l = 0; l < 4; l++) {");
		cg->indent++;
		for (int k = 0; k < gr->nin; k++) {
			if (!read[k])
				continue;
			if (rl_shape_numel(&cu_val(d, gr->in[k])->shape) == 1)
				cg_line(cg, "const float x%d = X%d[0];", k, k);
			else
				cg_line(cg, "const float x%d = a%d[l];", k, k);
		}
		enum rl_status st = compute_locals(d, gr);
		if (st != RL_OK)
			return st;
		for (int q = 0; q < gr->nout; q++) {
			uint32_t p = cu_val(d, gr->out[q])->producer;
			char loc[32];
			snprintf(loc, sizeof(loc), "v%d", group_pos(gr, p));
			cg_line(cg, "b%d[l] = %s;", q, cg_store(cg, RL_DT_FLOAT, loc));
		}
		cg->indent--;
		cg_line(cg, "}");
		for (int q = 0; q < gr->nout; q++) {
			cg_line(cg, "const float4 s%d = {b%d[0], b%d[1], b%d[2], b%d[3]};", q, q, q, q, q);
			cg_line(cg, "rl_st16f(Y%d + o4 * 4, s%d);", q, q);
		}
		cg->indent--;
		cg_line(cg, "}");
		return RL_OK;
	}
	cu_grid_loop(cg, "o", ne);
	cg->indent++;
	for (int k = 0; k < gr->nin; k++) {
		if (!group_reads(d, gr, k))
			continue;
		const struct rl_value *x = cu_val(d, gr->in[k]);
		char ix[1024], src[1100];
		cu_bcast_index(ys, &x->shape, "o", ix, sizeof(ix));
		snprintf(src, sizeof(src), "X%d[%s]", k, ix);
		cg_line(cg, "const %s x%d = %s;", cg_comptype(x->dtype), k, cg_load(cg, x->dtype, src));
	}
	enum rl_status st = compute_locals(d, gr);
	if (st != RL_OK)
		return st;
	for (int q = 0; q < gr->nout; q++) {
		uint32_t p = cu_val(d, gr->out[q])->producer;
		char loc[32];
		snprintf(loc, sizeof(loc), "v%d", group_pos(gr, p));
		cg_line(cg, "Y%d[o] = %s;", q, cg_store(cg, cu_val(d, gr->out[q])->dtype, loc));
	}
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
bool cu_k_rows(struct cu *d, uint32_t node, struct launch *L)
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

bool cu_k_transpose(struct cu *d, uint32_t node, struct launch *L)
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
	cu_grid_launch(L, ne > 0 ? ne : 0);
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

bool cu_k_reduce(struct cu *d, uint32_t node, struct launch *L)
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
	cu_grid_launch(L, ne);
	cu_grid_loop(cg, "o", ne);
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

/*
 * Concat (parts X0.. into Y0) and Split (X0 into parts Y0..), one thread per
 * element of the whole tensor: the element's position along the axis picks
 * the part. The two differ only in which side is the whole and which side of
 * the assignment the part is on.
 */
static bool concat_split(struct rl_cgen *cg, struct launch *L, uint32_t node, bool split)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *W = split ? cg_in(cg, node, 0) : cg_out(cg, node, 0);
	int nparts = split ? n->nout : n->nin, r = W->shape.rank, axis;
	int64_t total = rl_shape_numel(&W->shape);
	if (total <= 0 || nparts > 16 || !rl_axis_norm(rl_node_attr_int(n, "axis", 0), r, false, &axis))
		return false;
	int64_t outer, len, inner, at = 0;
	axis_split(&W->shape, axis, &outer, &len, &inner);
	flat_open(cg, L, total);
	cg_line(cg, "    const int64_t c = o / %lld %% %lld, q = o / %lld, i = o %% %lld;",
	        (long long)inner, (long long)len, (long long)(inner * len), (long long)inner);
	cg_line(cg, "    (void)q;");
	cg_line(cg, "    (void)i;");
	for (int k = 0; k < nparts; k++) {
		const struct rl_value *pk = split ? cg_out(cg, node, k) : cg_in(cg, node, k);
		if (!pk || pk->dtype != W->dtype)
			return false;
		int64_t lk = pk->shape.d[axis].v;
		if (lk == 0)
			continue;
		char part[96];
		snprintf(part, sizeof(part), "%c%d[(q * %lld + c - %lld) * %lld + i]", split ? 'Y' : 'X',
		         k, (long long)lk, (long long)at, (long long)inner);
		cg_line(cg, "    %sif (c < %lld)", at ? "else " : "", (long long)(at + lk));
		if (split)
			cg_line(cg, "        %s = X0[o];", part);
		else
			cg_line(cg, "        Y0[o] = %s;", part);
		at += lk;
	}
	cg_line(cg, "}");
	return true;
}

bool cu_k_shape(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_node *n = &d->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	if (!X || !Y || X->dtype != Y->dtype)
		return false;
	int64_t ne = rl_shape_numel(&Y->shape);
	int r = X->shape.rank, axis;
	switch (n->op) {
	case RL_OP_Expand: {
		char ix[1200];
		if (ne <= 0)
			return false;
		cu_bcast_index(&Y->shape, &X->shape, "o", ix, sizeof(ix));
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
	case RL_OP_Concat:
	case RL_OP_Split:
		return concat_split(cg, L, node, n->op == RL_OP_Split);
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

/* True, having appended them to the kernels as device code, when the C
 * kernel's file-level additions `t` are its own helpers: every top-level
 * declaration is `static` and names the kernel (functions and arrays), the
 * rest comments, braces and indented bodies. Anything else (includes, the
 * shared runtimes) is the CPU runtime: false, nothing appended. */
static bool own_statics(struct cu *d, const char *t, const char *kname)
{
	for (const char *p = t; *p;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		bool ok = l == 0 || p[0] == ' ' || p[0] == '\t' || p[0] == '{' || p[0] == '}' ||
		          (l >= 2 && p[0] == '/' && p[1] == '*');
		if (!ok && l > 7 && strncmp(p, "static ", 7) == 0) {
			char line[512];
			snprintf(line, sizeof(line), "%.*s", (int)(l < 511 ? l : 511), p);
			const char *k = strstr(line, kname);
			ok = k && k[strlen(kname)] == '_';
		}
		if (!ok)
			return false;
		p += l + (e != NULL);
	}
	/* C's fmod takes doubles; under nvcc an int argument picks C++'s
	 * constexpr host template, which device code cannot call: rl_fmod
	 * converts both arguments as C would */
	rl_buf_printf(&d->kernels, "/* %s's helpers (the C emitter's), on the device */\n"
	              "#ifndef RL_FMOD_DEFINED\n#define RL_FMOD_DEFINED 1\n"
	              "static __device__ inline __attribute__((unused)) double rl_fmod(double a, "
	              "double b)\n{\n    return fmod(a, b);\n}\n#endif\n", kname);
	for (const char *p = t; *p;) {
		const char *e = strchr(p, '\n');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		size_t from = 0;
		if (l > 7 && strncmp(p, "static ", 7) == 0) {
			rl_buf_printf(&d->kernels, "static __device__ ");
			from = 7;
		}
		for (size_t i = from; i < l; i++) {
			bool word = i > 0 && (isalnum((unsigned char)p[i - 1]) || p[i - 1] == '_');
			if (!word && i + 5 <= l && strncmp(p + i, "fmod(", 5) == 0)
				rl_buf_printf(&d->kernels, "rl_");
			rl_buf_printf(&d->kernels, "%c", p[i]);
		}
		rl_buf_printf(&d->kernels, "\n");
		p += l + (e != NULL);
	}
	return true;
}

enum rl_status cu_k_fallback(struct cu *d, uint32_t node, const struct rl_cgen_group *gr,
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
		switch (rl_op_table[n->op].emit) { /* the emit column of ir/ops.def */
		case RL_EMIT_ELEMWISE: st = rl_emit_c_elemwise(cg, node); break;
		case RL_EMIT_MATMUL: st = rl_emit_c_matmul(cg, node); break;
		case RL_EMIT_CONV: st = rl_emit_c_conv(cg, node); break;
		case RL_EMIT_POOL: st = rl_emit_c_pool(cg, node); break;
		case RL_EMIT_NORM: st = rl_emit_c_norm(cg, node); break;
		case RL_EMIT_REDUCE: st = rl_emit_c_reduce(cg, node); break;
		case RL_EMIT_SHAPE: st = rl_emit_c_shape(cg, node); break;
		case RL_EMIT_INDEX: st = rl_emit_c_index(cg, node); break;
		case RL_EMIT_CONST: st = rl_emit_c_const(cg, node); break;
		case RL_EMIT_ATTN: st = rl_emit_c_attn(cg, node); break;
		case RL_EMIT_QUANT: st = rl_emit_c_quant(cg, node); break;
		case RL_EMIT_SEQ: st = rl_emit_c_seq(cg, node); break;
		case RL_EMIT_DETECT: st = rl_emit_c_detect(cg, node); break;
		default:
			st = cg_error(cg, node, "the CUDA backend does not implement %s yet",
			              rl_op_table[n->op].name);
		}
	if (st != RL_OK)
		return st;
	/* vector math the C kernel asked for sits under #ifdef RL_VEC, which a
	 * CUDA build never defines (nor RL_VNARROW, whose 8-float copies
	 * cg_vmath_need leaves out for a device kernel): drop it; anything else
	 * is the CPU runtime */
	if (cg->statics.len != sl && strncmp(cg->statics.s + sl, "#ifdef RL_VEC", 13) == 0 &&
	    strstr(cg->statics.s + sl, "#endif /* RL_VEC */\n\n") ==
	            cg->statics.s + cg->statics.len - strlen("#endif /* RL_VEC */\n\n")) {
		cg->statics.len = sl;
		cg->statics.s[sl] = 0;
	}
	/* helpers of this kernel alone (named after it: Resize's tap builder and
	 * tap tables, GridSample's padding rule) are plain C: they become device
	 * functions and device arrays placed before the kernel */
	if (cg->statics.len != sl && !own_statics(d, cg->statics.s + sl, cg->kname))
		return cg_error(cg, node, "the CUDA backend does not implement this form of %s yet "
		                "(the C kernel needs its CPU runtime)", rl_op_table[n->op].name);
	cg->statics.len = sl;
	if (cg->statics.s)
		cg->statics.s[sl] = 0;
	if (cg->init.len != il || cg->fini.len != fl)
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

/* ---- Pad: one thread per output element ------------------------------------ */

/* C statements mapping int64_t s (a source coordinate, maybe outside [0, n))
 * into range for reflect, edge or wrap (the C backend's rules, emit_shape.c:
 * reflect without repeating the edge, periodic in 2 (n - 1)). */
static void pad_map(struct rl_cgen *cg, char mode, int64_t n)
{
	if (mode == 'e')
		cg_line(cg, "s = s < 0 ? 0 : s >= %lld ? %lld : s;", (long long)n, (long long)(n - 1));
	else if (mode == 'w')
		cg_line(cg, "s = ((s %% %lld) + %lld) %% %lld;", (long long)n, (long long)n, (long long)n);
	else if (n == 1)
		cg_line(cg, "s = 0;");
	else {
		int64_t p = 2 * (n - 1);
		cg_line(cg, "s = ((s %% %lld) + %lld) %% %lld;", (long long)p, (long long)p, (long long)p);
		cg_line(cg, "s = s >= %lld ? %lld - s : s;", (long long)n, (long long)p);
	}
}

/*
 * Pad, every mode (constant, reflect, edge, wrap) on every axis: one thread
 * per output element, which unravels its index, maps each coordinate to its
 * source (constant: outside the input gives the pad value) and copies the
 * element's storage (any dtype). Pads and axes known at generation are
 * literals; pads (or axes) that arrive at run time are read by every thread
 * from the device (a few int64), and, as in the C backend, a run whose pads
 * disagree with the static output shape writes zeros. The pad value is
 * read from its input (X2) when given. False (nothing written) for a form
 * this does not cover (scalars, an unknown mode, a reflect/edge/wrap pad of
 * an empty input, static pads that disagree with the output): the C loop
 * nest reports or runs those.
 */
bool cu_k_pad(struct cu *d, uint32_t node, struct launch *L)
{
	struct rl_cgen *cg = &d->cg;
	const struct rl_graph *g = d->g;
	const struct rl_node *n = &g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	if (!X || !Y || X->dtype != Y->dtype || X->shape.rank < 1 || Y->shape.rank != X->shape.rank)
		return false;
	int r = X->shape.rank;
	const char *mode = rl_node_attr_str(n, "mode", "constant");
	if (strcmp(mode, "constant") && strcmp(mode, "reflect") && strcmp(mode, "edge") &&
	    strcmp(mode, "wrap"))
		return false;
	char mc = mode[0];
	int64_t ne = rl_shape_numel(&Y->shape), nx = rl_shape_numel(&X->shape);
	if (ne <= 0 || (mc != 'c' && nx <= 0))
		return false;
	int64_t pb[RL_MAX_RANK] = {0}, pe[RL_MAX_RANK] = {0}, raw[2 * RL_MAX_RANK], ax[RL_MAX_RANK];
	int npad = -1, nax = r;
	bool run_pads = false, run_axes = false, has_axes = false;
	char cv[128] = "0";
	uint32_t pv = RL_NONE, av = RL_NONE;
	if (n->opset < 11) {
		const int64_t *p;
		npad = rl_node_attr_ints(n, "pads", &p);
		if (npad < 0)
			npad = rl_node_attr_ints(n, "paddings", &p);
		if (npad < 0 || npad > 2 * RL_MAX_RANK)
			return false;
		memcpy(raw, p, (size_t)npad * sizeof(*p));
		double v = rl_node_attr_float(n, "value", 0.0);
		snprintf(cv, sizeof(cv), "%s", cg_store(cg, X->dtype, cg_lit(X->dtype, v)));
	} else {
		pv = rl_node_in(n, 1);
		uint32_t vc = rl_node_in(n, 2);
		if (pv == RL_NONE || g->values[pv].dtype != RL_DT_INT64)
			return false;
		if (vc != RL_NONE && rl_shape_numel(&g->values[vc].shape) > 0)
			snprintf(cv, sizeof(cv), "X2[0]");
		av = n->opset >= 18 ? rl_node_in(n, 3) : RL_NONE;
		if (av != RL_NONE && g->values[av].dtype != RL_DT_INT64 && g->values[av].dtype != RL_DT_INT32)
			return false;
		has_axes = av != RL_NONE;
		if (has_axes)
			nax = (int)rl_shape_numel(&g->values[av].shape);
		run_pads = !rl_value_is_const(g, pv);
		run_axes = has_axes && !rl_value_is_const(g, av);
		if (nax < 0 || nax > r || rl_shape_numel(&g->values[pv].shape) != 2 * nax)
			return false;
		if (!run_pads && !run_axes) {
			npad = rl_value_get_ints(g, pv, raw, 2 * RL_MAX_RANK);
			if (has_axes && rl_value_get_ints(g, av, ax, RL_MAX_RANK) != nax)
				return false;
		}
	}
	bool runtime = run_pads || run_axes;
	if (!runtime) {
		if (npad != 2 * nax)
			return false;
		for (int i = 0; i < nax; i++) {
			int64_t a = has_axes ? ax[i] : i;
			if (a < 0)
				a += r;
			if (a < 0 || a >= r)
				return false;
			pb[a] = raw[i];
			pe[a] = raw[nax + i];
		}
		for (int k = 0; k < r; k++)
			if (X->shape.d[k].v + pb[k] + pe[k] != Y->shape.d[k].v)
				return false;
	}
	const char *ct = cg_ctype(X->dtype);
	cu_grid_launch(L, ne);
	cg_line(cg, "/* Pad (%s): one thread per output element, each coordinate mapped to its "
	        "source%s; pads %s */", mode, mc == 'c' ? " (outside the input: the pad value)" : "",
	        runtime ? "read at run time (the output shape is static)" : "known at generation");
	if (runtime) {
		char xl[256] = "", yl[256] = "";
		size_t px = 0, py = 0;
		for (int k = 0; k < r; k++) {
			px += (size_t)snprintf(xl + px, sizeof(xl) - px, "%s%lld", k ? ", " : "",
			                       (long long)X->shape.d[k].v);
			py += (size_t)snprintf(yl + py, sizeof(yl) - py, "%s%lld", k ? ", " : "",
			                       (long long)Y->shape.d[k].v);
		}
		cg_line(cg, "const int64_t xd[%d] = {%s}, yd[%d] = {%s};", r, xl, r, yl);
		cg_pad_bounds(cg, r, nax, has_axes);
		cg_line(cg, "bool agree = true; /* else zeros, as the C backend */");
		cg_line(cg, "for (int k = 0; k < %d; k++)", r);
		cg_line(cg, "    agree = agree && xd[k] + pt[k] == yd[k];");
	}
	cu_grid_loop(cg, "o", ne);
	cg->indent++;
	cg_line(cg, "int64_t r = o, xo = 0;");
	if (mc == 'c')
		cg_line(cg, "bool in = true;");
	int64_t xs = 1;
	for (int k = r - 1; k >= 0; k--) {
		int64_t xn = X->shape.d[k].v, yn = Y->shape.d[k].v;
		char pbk[32];
		snprintf(pbk, sizeof(pbk), "pb[%d]", k);
		cg_line(cg, "{");
		cg->indent++;
		if (!runtime && !pb[k] && !pe[k]) {
			cg_line(cg, "const int64_t s = r %% %lld;", (long long)yn);
		} else {
			if (runtime)
				cg_line(cg, "int64_t s = r %% %lld - %s;", (long long)yn, pbk);
			else if (!pb[k])
				cg_line(cg, "int64_t s = r %% %lld;", (long long)yn);
			else
				cg_line(cg, "int64_t s = r %% %lld %c %lld;", (long long)yn, pb[k] < 0 ? '+' : '-',
				        (long long)(pb[k] < 0 ? -pb[k] : pb[k]));
			if (mc == 'c')
				cg_line(cg, "in = in && s >= 0 && s < %lld;", (long long)xn);
			else
				pad_map(cg, mc, xn);
		}
		cg_line(cg, "r /= %lld;", (long long)yn);
		cg_line(cg, "xo += s * %lld;", (long long)xs);
		cg->indent--;
		cg_line(cg, "}");
		xs *= xn;
	}
	char val[200];
	if (mc == 'c')
		snprintf(val, sizeof(val), "in ? X0[xo] : (%s)%s", ct, cv);
	else
		snprintf(val, sizeof(val), "X0[xo]");
	if (runtime) /* pads that disagree with the output: zeros, not the pad value */
		cg_line(cg, "Y0[o] = agree ? %s%s%s : (%s)0;", mc == 'c' ? "(" : "", val,
		        mc == 'c' ? ")" : "", ct);
	else
		cg_line(cg, "Y0[o] = %s;", val);
	cg->indent--;
	cg_line(cg, "}");
	return true;
}
