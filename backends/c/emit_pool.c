/*
 * emit_pool.c - C kernels for MaxPool, AveragePool, LpPool and the global
 * pools.
 *
 * Windowed pools are a gather loop per output element over the kernel taps
 * x = o*s + k*d - pb, skipping taps outside the input; with 1 to 3 spatial
 * axes and small kernels that costs next to nothing beside the convolutions
 * around it. The rules follow the ONNX reference:
 *   - MaxPool keeps the first largest value; the optional Indices output is
 *     the flat index into X (batch and channel included), row-major, or
 *     column-major over the spatial axes with storage_order = 1;
 *   - AveragePool divides by the taps inside the input, or with
 *     count_include_pad by the taps inside the padded input [-pb, in + pe)
 *     (a ceil_mode window reaching past the end padding does not count the
 *     overhang);
 *   - LpPool is (sum |x|^p)^(1/p) over the taps inside the input.
 * Pads: explicit, VALID, or SAME_UPPER/SAME_LOWER splitting the total
 * (out-1)*s + (k-1)*d + 1 - in with the odd pixel at the end (UPPER) or the
 * beginning (LOWER). Output sizes (ceil_mode included) come from inference.
 * Sums run in float for float32/float16/bfloat16 and in double for float64.
 */
#include "emit.h"

#include <string.h>

bool rl_emit_c_pool_supports(enum rl_op op)
{
	switch (op) {
	case RL_OP_MaxPool: case RL_OP_AveragePool: case RL_OP_LpPool:
	case RL_OP_GlobalAveragePool: case RL_OP_GlobalMaxPool:
		return true;
	default:
		return false;
	}
}

struct pool_win {
	int nsp;
	int64_t in[RL_MAX_RANK], out[RL_MAX_RANK];
	int64_t k[RL_MAX_RANK], s[RL_MAX_RANK], d[RL_MAX_RANK];
	int64_t pb[RL_MAX_RANK], pe[RL_MAX_RANK];
};

static bool read_ints(const struct rl_node *n, const char *name, int want, int64_t def,
                      int64_t *out)
{
	const int64_t *a;
	int cnt = rl_node_attr_ints(n, name, &a);
	for (int i = 0; i < want; i++)
		out[i] = def;
	if (cnt < 0)
		return true;
	if (cnt != want)
		return false;
	memcpy(out, a, sizeof(int64_t) * (size_t)want);
	return true;
}

static bool pool_win_read(struct rl_cgen *cg, uint32_t node, struct pool_win *w,
                          const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_shape *sx = &cg_in(cg, node, 0)->shape;
	const struct rl_shape *sy = &cg_out(cg, node, 0)->shape;
	int nsp = sx->rank - 2;
	memset(w, 0, sizeof(*w));
	w->nsp = nsp;
	if (nsp < 1 || sy->rank != sx->rank) {
		*why = "input and output must have the same rank >= 3";
		return false;
	}
	int64_t pads[2 * RL_MAX_RANK];
	if (!read_ints(n, "kernel_shape", nsp, -1, w->k) || w->k[0] < 1) {
		*why = "kernel_shape is missing or has the wrong length";
		return false;
	}
	if (!read_ints(n, "strides", nsp, 1, w->s) || !read_ints(n, "dilations", nsp, 1, w->d) ||
	    !read_ints(n, "pads", 2 * nsp, 0, pads)) {
		*why = "a window attribute has the wrong number of entries";
		return false;
	}
	const char *ap = rl_node_attr_str(n, "auto_pad", "NOTSET");
	bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
	bool valid = strcmp(ap, "VALID") == 0;
	if (!same_upper && !same_lower && !valid && *ap && strcmp(ap, "NOTSET") != 0) {
		*why = "unknown auto_pad";
		return false;
	}
	for (int i = 0; i < nsp; i++) {
		w->in[i] = sx->d[2 + i].v;
		w->out[i] = sy->d[2 + i].v;
		if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1) {
			*why = "kernel, strides and dilations must be >= 1";
			return false;
		}
		int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
		if (same_upper || same_lower) {
			int64_t total = (w->out[i] - 1) * w->s[i] + ek - w->in[i];
			if (total < 0)
				total = 0;
			w->pb[i] = same_upper ? total / 2 : total - total / 2;
			w->pe[i] = total - w->pb[i];
		} else if (!valid) {
			w->pb[i] = pads[i];
			w->pe[i] = pads[nsp + i];
		}
	}
	return true;
}

static void flat_expr(char *b, size_t n, const char *var, int nsp, const int64_t *dims,
                      bool colmajor)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < nsp; i++) {
		int64_t st = 1;
		if (colmajor)
			for (int j = 0; j < i; j++)
				st *= dims[j];
		else
			for (int j = i + 1; j < nsp; j++)
				st *= dims[j];
		p += (size_t)snprintf(b + p, n - p, "%s(size_t)%s%d * %lld", i ? " + " : "", var, i,
		                      (long long)st);
	}
}

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* Lowest value of a compute type, as a literal (max pooling's start). */
static const char *lowest(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_FLOAT: case RL_DT_FLOAT16: case RL_DT_BFLOAT16: return "-INFINITY";
	case RL_DT_DOUBLE: return "-(double)INFINITY";
	case RL_DT_INT8: return "INT8_MIN";
	case RL_DT_INT16: return "INT16_MIN";
	case RL_DT_INT32: return "INT32_MIN";
	case RL_DT_INT64: return "INT64_MIN";
	default: return "0";
	}
}

static enum rl_status emit_window(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	const struct rl_value *I = cg_out(cg, node, 1);
	enum rl_dtype dt = X->dtype;
	bool is_max = n->op == RL_OP_MaxPool, is_avg = n->op == RL_OP_AveragePool;
	bool is_lp = n->op == RL_OP_LpPool;
	bool int_ok = is_max && (dt == RL_DT_INT8 || dt == RL_DT_UINT8);
	if ((!rl_dtype_is_float(dt) && !int_ok) || Y->dtype != dt)
		return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(dt));
	if (I && I->dtype != RL_DT_INT64)
		return cg_error(cg, node, "MaxPool Indices must be int64");
	struct pool_win w;
	const char *why = NULL;
	if (!pool_win_read(cg, node, &w, &why))
		return cg_error(cg, node, "%s", why);
	int nsp = w.nsp;
	bool include_pad = is_avg && rl_node_attr_int(n, "count_include_pad", 0) != 0;
	int64_t storage = rl_node_attr_int(n, "storage_order", 0);
	int64_t p = is_lp ? rl_node_attr_int(n, "p", 2) : 0;
	if (is_lp && p < 1)
		return cg_error(cg, node, "LpPool p=%lld is not supported", (long long)p);
	int64_t NC = X->shape.d[0].v * X->shape.d[1].v;
	int64_t is = prod(w.in, nsp), os = prod(w.out, nsp);
	if (NC * os == 0)
		return RL_OK;
	const char *acc = dt == RL_DT_DOUBLE ? "double" : cg_comptype(dt);
	const char *fs = dt == RL_DT_DOUBLE ? "" : "f"; /* math suffix */
	char e[1024], e2[1024], xe[1100];

	cg_line(cg, "/* %s: gather over the kernel taps inside the input%s */",
	        rl_op_table[n->op].name,
	        include_pad ? "; divide by the taps inside the padded input" : "");
	cg_line(cg, "for (size_t nc = 0; nc < %lld; nc++) {", (long long)NC);
	cg->indent++;
	cg_line(cg, "const %s *restrict xc = X0 + nc * %lld;", cg_ctype(dt), (long long)is);
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t o%d = 0; o%d < %lld; o%d++) {", i, i, (long long)w.out[i], i);
		cg->indent++;
	}
	if (is_max) {
		cg_line(cg, "%s m = %s;", acc, lowest(dt));
		cg_line(cg, "long long at = -1;");
	} else {
		cg_line(cg, "%s s = 0;", acc);
		cg_line(cg, "int cnt = 0;");
	}
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t k%d = 0; k%d < %lld; k%d++) {", i, i, (long long)w.k[i], i);
		cg->indent++;
		cg_line(cg, "const long long x%d = (long long)(o%d * %lld + k%d * %lld) - %lld;", i, i,
		        (long long)w.s[i], i, (long long)w.d[i], (long long)w.pb[i]);
		if (include_pad) {
			cg_line(cg, "if (x%d >= %lld)", i, (long long)(w.in[i] + w.pe[i]));
			cg_line(cg, "    continue;");
		} else {
			cg_line(cg, "if (x%d < 0 || x%d >= %lld)", i, i, (long long)w.in[i]);
			cg_line(cg, "    continue;");
		}
	}
	if (include_pad) {
		/* counted as a tap even when it reads padding */
		cg_line(cg, "cnt++;");
		e[0] = 0;
		size_t q = 0;
		for (int i = 0; i < nsp; i++)
			q += (size_t)snprintf(e + q, sizeof(e) - q, "%sx%d < 0 || x%d >= %lld",
			                      i ? " || " : "", i, i, (long long)w.in[i]);
		cg_line(cg, "if (%s)", e);
		cg_line(cg, "    continue;");
	}
	flat_expr(e, sizeof(e), "x", nsp, w.in, false);
	snprintf(xe, sizeof(xe), "xc[%s]", e);
	cg_line(cg, "const %s v = %s;", acc, cg_load(cg, dt, xe));
	if (is_max) {
		flat_expr(e2, sizeof(e2), "x", nsp, w.in, storage != 0);
		cg_line(cg, "if (at < 0 || v > m) {");
		cg_line(cg, "    m = v;");
		cg_line(cg, "    at = (long long)(%s);", e2);
		cg_line(cg, "}");
	} else if (is_lp) {
		if (p == 1)
			cg_line(cg, "s += fabs%s(v);", fs);
		else if (p == 2)
			cg_line(cg, "s += v * v;");
		else
			cg_line(cg, "s += pow%s(fabs%s(v), %s);", fs, fs, cg_lit(dt == RL_DT_DOUBLE ?
			        RL_DT_DOUBLE : RL_DT_FLOAT, (double)p));
	} else {
		cg_line(cg, "s += v;");
		if (!include_pad)
			cg_line(cg, "cnt++;");
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	flat_expr(e, sizeof(e), "o", nsp, w.out, false);
	cg_line(cg, "const size_t oi = nc * %lld + %s;", (long long)os, e);
	if (is_max) {
		cg_line(cg, "Y0[oi] = %s;", cg_store(cg, dt, "at < 0 ? 0 : m"));
		if (I)
			cg_line(cg, "Y1[oi] = at < 0 ? -1 : (int64_t)(nc * %lld) + at;", (long long)is);
	} else if (is_lp) {
		cg_line(cg, "(void)cnt;");
		if (p == 1)
			cg_line(cg, "Y0[oi] = %s;", cg_store(cg, dt, "s"));
		else if (p == 2)
			cg_line(cg, "Y0[oi] = %s;", cg_store(cg, dt, dt == RL_DT_DOUBLE ? "sqrt(s)" : "sqrtf(s)"));
		else {
			char r[200];
			snprintf(r, sizeof(r), "pow%s(s, %s)", fs,
			         cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT, 1.0 / (double)p));
			cg_line(cg, "Y0[oi] = %s;", cg_store(cg, dt, r));
		}
	} else {
		cg_line(cg, "Y0[oi] = %s;", cg_store(cg, dt, "cnt ? s / cnt : 0"));
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

static enum rl_status emit_global(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *X = cg_in(cg, node, 0), *Y = cg_out(cg, node, 0);
	enum rl_dtype dt = X->dtype;
	bool is_max = n->op == RL_OP_GlobalMaxPool;
	if (!rl_dtype_is_float(dt) || Y->dtype != dt || X->shape.rank < 3)
		return cg_error(cg, node, "%s on %s of rank %d is not supported",
		                rl_op_table[n->op].name, rl_dtype_name(dt), X->shape.rank);
	int64_t NC = X->shape.d[0].v * X->shape.d[1].v;
	int64_t is = rl_shape_numel(&X->shape) / (NC ? NC : 1);
	const char *acc = dt == RL_DT_DOUBLE ? "double" : "float";
	if (NC == 0)
		return RL_OK;
	cg_line(cg, "/* %s over each %lld-element plane */", rl_op_table[n->op].name,
	        (long long)is);
	cg_line(cg, "for (size_t nc = 0; nc < %lld; nc++) {", (long long)NC);
	cg->indent++;
	cg_line(cg, "const %s *restrict xc = X0 + nc * %lld;", cg_ctype(dt), (long long)is);
	if (is_max) {
		cg_line(cg, "%s m = %s;", acc, lowest(dt));
		cg_line(cg, "for (size_t q = 0; q < %lld; q++) {", (long long)is);
		cg_line(cg, "    const %s v = %s;", acc, cg_load(cg, dt, "xc[q]"));
		cg_line(cg, "    m = q == 0 || v > m ? v : m;");
		cg_line(cg, "}");
		cg_line(cg, "Y0[nc] = %s;", cg_store(cg, dt, "m"));
	} else {
		cg_line(cg, "%s s = 0;", acc);
		cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)is);
		cg_line(cg, "    s += %s;", cg_load(cg, dt, "xc[q]"));
		char r[100];
		snprintf(r, sizeof(r), "s / %s", cg_lit(dt == RL_DT_DOUBLE ? RL_DT_DOUBLE : RL_DT_FLOAT,
		                                        (double)(is ? is : 1)));
		cg_line(cg, "Y0[nc] = %s;", cg_store(cg, dt, r));
	}
	cg->indent--;
	cg_line(cg, "}");
	return RL_OK;
}

enum rl_status rl_emit_c_pool(struct rl_cgen *cg, uint32_t node)
{
	switch (cg->g->nodes[node].op) {
	case RL_OP_MaxPool: case RL_OP_AveragePool: case RL_OP_LpPool:
		return emit_window(cg, node);
	case RL_OP_GlobalAveragePool: case RL_OP_GlobalMaxPool:
		return emit_global(cg, node);
	default:
		return cg_error(cg, node, "not a pooling operator");
	}
}
