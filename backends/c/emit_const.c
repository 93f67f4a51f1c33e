/*
 * emit_const.c - C kernels for the value generators: Constant,
 * ConstantOfShape, Range, EyeLike and the Hann, Hamming and Blackman windows.
 *
 * Shape inference usually evaluates these to constants, and then they never
 * run. They do run when their output is too big to fold (ConstantOfShape
 * making a weight-sized tensor of zeros) or depends on a run-time input
 * (Range with a computed start). The output shape is static by then (the
 * driver checks), so each kernel is a fill with literal bounds.
 */
#include "emit_impl.h"

#include <string.h>

/* Exact storage literal of element i of constant value v (half and
 * bfloat16 as their bit patterns). */
static const char *storage_lit(struct rl_cgen *cg, uint32_t v, int64_t i, char *b, size_t n)
{
	const struct rl_value *val = &cg->g->values[v];
	switch (val->dtype) {
	case RL_DT_FLOAT16: case RL_DT_BFLOAT16: case RL_DT_UINT16:
		snprintf(b, n, "0x%04x", ((const uint16_t *)val->data)[i]);
		break;
	case RL_DT_FLOAT: case RL_DT_DOUBLE:
		snprintf(b, n, "%s", cg_lit(val->dtype, rl_value_get_float(cg->g, v, i)));
		break;
	case RL_DT_UINT64:
		snprintf(b, n, "UINT64_C(%llu)", (unsigned long long)((const uint64_t *)val->data)[i]);
		break;
	case RL_DT_INT64: {
		int64_t x = rl_value_get_int(cg->g, v, i);
		if (x == INT64_MIN)
			snprintf(b, n, "INT64_MIN");
		else
			snprintf(b, n, "INT64_C(%lld)", (long long)x);
		break;
	}
	case RL_DT_UINT32:
		snprintf(b, n, "%lluu", (unsigned long long)(uint32_t)rl_value_get_int(cg->g, v, i));
		break;
	case RL_DT_INT32: {
		int64_t x = rl_value_get_int(cg->g, v, i);
		if (x == INT32_MIN)
			snprintf(b, n, "INT32_MIN");
		else
			snprintf(b, n, "%lld", (long long)x);
		break;
	}
	default:
		if (rl_dtype_is_lowp(val->dtype)) /* the stored byte, ir/lowp.c */
			snprintf(b, n, "%d", val->dtype == RL_DT_INT4 || val->dtype == RL_DT_INT2
			                         ? ((const int8_t *)val->data)[i]
			                         : ((const uint8_t *)val->data)[i]);
		else
			snprintf(b, n, "%lld", (long long)rl_value_get_int(cg->g, v, i));
		break;
	}
	return b;
}

/* Storage literal of 1 in dtype t. */
static const char *one_lit(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_FLOAT16: return "0x3c00";
	case RL_DT_BFLOAT16: return "0x3f80";
	case RL_DT_FLOAT: return "1.0f";
	case RL_DT_DOUBLE: return "1.0";
	default: return "1";
	}
}

static bool all_zero(const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		if (c[i])
			return false;
	return true;
}

/* ---- Constant ----------------------------------------------------------- */

static enum rl_status emit_constant(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	int64_t ne = rl_shape_numel(&y->shape);
	const char *ct = cg_ctype(y->dtype);
	char b[128];
	if (ne == 0) {
		cg_line(cg, "/* Constant: empty tensor */");
		return RL_OK;
	}
	const struct rl_attr *a = NULL;
	for (int k = 0; k < n->nattrs; k++)
		if (strncmp(n->attrs[k].name, "value", 5) == 0)
			a = &n->attrs[k];
	if (!a)
		return cg_error(cg, node, "Constant without a value attribute");
	cg_line(cg, "/* Constant: copy of the '%s' attribute */", a->name);
	if (a->kind == RL_ATTR_TENSOR) {
		const struct rl_value *t = &cg->g->values[a->tensor];
		if (t->dtype != y->dtype || rl_shape_numel(&t->shape) != ne || !t->data)
			return cg_error(cg, node, "Constant: attribute tensor does not match the output");
		cg_line(cg, "static const %s v[%lld] = {", ct, (long long)ne);
		for (int64_t i = 0; i < ne; i += 8) {
			char row[1024];
			size_t p = 0;
			for (int64_t j = i; j < ne && j < i + 8; j++)
				p += (size_t)snprintf(row + p, sizeof(row) - p, "%s%s",
				                      storage_lit(cg, a->tensor, j, b, sizeof(b)),
				                      j + 1 < ne ? ", " : "");
			cg_line(cg, "    %s", row);
		}
		cg_line(cg, "};");
	} else if ((a->kind == RL_ATTR_FLOAT || a->kind == RL_ATTR_FLOATS) &&
	           y->dtype == RL_DT_FLOAT) {
		int cnt = a->kind == RL_ATTR_FLOAT ? 1 : a->n;
		if (cnt != ne)
			return cg_error(cg, node, "Constant: %d values for %lld outputs", cnt, (long long)ne);
		cg_line(cg, "static const float v[%d] = {", cnt);
		for (int i = 0; i < cnt; i++)
			cg_line(cg, "    %s,", cg_lit(RL_DT_FLOAT, a->kind == RL_ATTR_FLOAT ? a->f : a->floats[i]));
		cg_line(cg, "};");
	} else if ((a->kind == RL_ATTR_INT || a->kind == RL_ATTR_INTS) && y->dtype == RL_DT_INT64) {
		int cnt = a->kind == RL_ATTR_INT ? 1 : a->n;
		if (cnt != ne)
			return cg_error(cg, node, "Constant: %d values for %lld outputs", cnt, (long long)ne);
		cg_line(cg, "static const int64_t v[%d] = {", cnt);
		for (int i = 0; i < cnt; i++) {
			int64_t x = a->kind == RL_ATTR_INT ? a->i : a->ints[i];
			if (x == INT64_MIN)
				cg_line(cg, "    INT64_MIN,");
			else
				cg_line(cg, "    INT64_C(%lld),", (long long)x);
		}
		cg_line(cg, "};");
	} else {
		return cg_error(cg, node, "Constant: attribute '%s' is not supported", a->name);
	}
	cg_line(cg, "memcpy(Y0, v, sizeof(v));");
	return RL_OK;
}

/* ---- ConstantOfShape ---------------------------------------------------- */

static enum rl_status emit_constant_of_shape(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	int64_t ne = rl_shape_numel(&y->shape);
	size_t nbytes = (size_t)ne * rl_dtype_size(y->dtype);
	const struct rl_attr *a = rl_node_attr(n, "value");
	char b[128];
	const char *lit = "0";
	bool zero = true;
	if (a) {
		if (a->kind != RL_ATTR_TENSOR)
			return cg_error(cg, node, "ConstantOfShape: 'value' must be a tensor");
		const struct rl_value *t = &cg->g->values[a->tensor];
		if (rl_shape_numel(&t->shape) != 1 || !t->data)
			return cg_error(cg, node, "ConstantOfShape: 'value' must hold one element");
		if (t->dtype != y->dtype)
			return cg_error(cg, node, "ConstantOfShape: value is %s but the output is %s",
			                rl_dtype_name(t->dtype), rl_dtype_name(y->dtype));
		zero = all_zero(t->data, rl_dtype_size(t->dtype));
		lit = storage_lit(cg, a->tensor, 0, b, sizeof(b));
	} else if (y->dtype != RL_DT_FLOAT) {
		return cg_error(cg, node, "ConstantOfShape: no value but output dtype %s",
		                rl_dtype_name(y->dtype));
	}
	cg_line(cg, "/* ConstantOfShape: fill %lld values with %s */", (long long)ne, lit);
	if (ne == 0)
		return RL_OK;
	if (zero) {
		cg_line(cg, "memset(Y0, 0, %zu);", nbytes);
	} else {
		cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)ne);
		cg_line(cg, "    Y0[o] = %s;", lit);
	}
	return RL_OK;
}

/* ---- Range -------------------------------------------------------------- */

static enum rl_status emit_range(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	enum rl_dtype dt = y->dtype;
	const char *ct = cg_comptype(dt);
	int64_t ne = rl_shape_numel(&y->shape);
	char b[128];
	if (!rl_dtype_is_float(dt) && !rl_dtype_is_int(dt))
		return cg_error(cg, node, "Range on %s is not supported", rl_dtype_name(dt));
	for (int k = 0; k < 3; k++) {
		const struct rl_value *x = cg_in(cg, node, k);
		if (!x || x->dtype != dt || rl_shape_numel(&x->shape) != 1)
			return cg_error(cg, node, "Range: input %d must be a %s scalar", k,
			                rl_dtype_name(dt));
	}
	/* start and delta: literals when known, else read at run time; the
	 * count is the output's static length */
	const char *names[3] = {"start", NULL, "delta"};
	cg_line(cg, "/* Range: Y[i] = start + i * delta, %lld values */", (long long)ne);
	if (ne == 0)
		return RL_OK;
	for (int k = 0; k < 3; k += 2) {
		uint32_t v = rl_node_in(n, k);
		char x[8];
		snprintf(x, sizeof(x), "X%d[0]", k);
		if (rl_value_is_const(cg->g, v)) {
			if (rl_dtype_is_float(dt))
				snprintf(b, sizeof(b), "%s", cg_lit(dt, rl_value_get_float(cg->g, v, 0)));
			else
				storage_lit(cg, v, 0, b, sizeof(b));
			cg_line(cg, "const %s %s = %s;", ct, names[k], b);
		} else {
			cg_line(cg, "const %s %s = %s;", ct, names[k], cg_load(cg, dt, x));
		}
	}
	cg_line(cg, "for (size_t o = 0; o < %lld; o++)", (long long)ne);
	cg_line(cg, "    Y0[o] = %s;", cg_assign(cg, dt, rl_dtype_is_float(dt)
	                                          ? (dt == RL_DT_DOUBLE ? "start + (double)o * delta"
	                                                                : "start + (float)o * delta")
	                                          : rl_dtype_size(dt) == 8
	                                          ? "start + (int64_t)o * delta"
	                                          : "start + (int32_t)o * delta"));
	return RL_OK;
}

/* ---- EyeLike ------------------------------------------------------------ */

static enum rl_status emit_eyelike(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	int64_t k = rl_node_attr_int(n, "k", 0);
	if (y->shape.rank != 2)
		return cg_error(cg, node, "EyeLike: output must be 2-D");
	if (!rl_dtype_is_numeric(y->dtype))
		return cg_error(cg, node, "EyeLike to %s is not supported", rl_dtype_name(y->dtype));
	int64_t rows = y->shape.d[0].v, cols = y->shape.d[1].v;
	int64_t ne = rows * cols;
	/* ones at (i, i + k) for max(0, -k) <= i < min(rows, cols - k) */
	int64_t first = k < 0 ? -k : 0;
	int64_t last = rows < cols - k ? rows : cols - k;
	cg_line(cg, "/* EyeLike: ones on diagonal k = %lld, zeros elsewhere */", (long long)k);
	if (ne == 0)
		return RL_OK;
	cg_line(cg, "memset(Y0, 0, %zu);", (size_t)ne * rl_dtype_size(y->dtype));
	if (last > first) {
		cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)(last - first));
		cg_line(cg, "    Y0[%lld + i * %lld] = %s;", (long long)(first * cols + first + k),
		        (long long)(cols + 1), one_lit(y->dtype));
	}
	return RL_OK;
}

/* ---- window functions ----------------------------------------------------- */

/* w[n] = a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D), D = N (periodic) or
 * N - 1 (symmetric); N from the output shape. */
static enum rl_status emit_window(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *nd = &cg->g->nodes[node];
	const struct rl_value *y = cg_out(cg, node, 0);
	int64_t n = y->shape.d[0].v, periodic = rl_node_attr_int(nd, "periodic", 1);
	if (periodic != 0 && periodic != 1)
		return cg_error(cg, node, "attribute periodic=%lld is not 0 or 1", (long long)periodic);
	double a0, a1, a2 = 0;
	if (nd->op == RL_OP_HannWindow) {
		a0 = 0.5;
		a1 = 0.5;
	} else if (nd->op == RL_OP_HammingWindow) {
		a0 = 25.0 / 46.0;
		a1 = 1 - a0;
	} else {
		a0 = 0.42;
		a1 = 0.5;
		a2 = 0.08;
	}
	if (n == 0) {
		cg_line(cg, "/* empty window */");
		return RL_OK;
	}
	int64_t den = periodic ? n : n - 1;
	char e[64];
	snprintf(e, sizeof(e), "(%s)v", cg_comptype(y->dtype));
	cg_line(cg, "/* %s window of %lld, %s */", rl_op_table[nd->op].name, (long long)n,
	        periodic ? "periodic" : "symmetric");
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)n);
	cg->indent++;
	if (den == 0) {
		cg_line(cg, "const double v = %.17g;", a0 - a1 + a2);
	} else {
		cg_line(cg, "const double t = 6.283185307179586476925 * (double)i / %lld.0;",
		        (long long)den);
		if (a2 != 0)
			cg_line(cg, "const double v = %.17g - %.17g * cos(t) + %.17g * cos(2 * t);", a0,
			        a1, a2);
		else
			cg_line(cg, "const double v = %.17g - %.17g * cos(t);", a0, a1);
	}
	cg_line(cg, "Y0[i] = %s;", cg_assign(cg, y->dtype, e));
	cg_loops_close(cg, 1);
	return RL_OK;
}

/* ---- dispatch ----------------------------------------------------------- */

/* MelWeightMatrix as onnx.reference computes it: the band edges' mel values
 * and step in the edge frequencies' type (float32 for float32 inputs), the
 * edges back in Hz and as spectrogram bins in double, floor((dft_length + 1)
 * * hz / sample_rate), then the triangles written in the same order (a later
 * write wins where two meet). sample_rate, dft_length and the edges are read
 * when the kernel runs (the shape fixed dft_length / 2 + 1 rows and
 * num_mel_bins columns); a bin outside the rows is not written. */
static enum rl_status emit_melweight(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_value *y = cg_out(cg, node, 0);
	const struct rl_value *lo = cg_in(cg, node, 3), *hi = cg_in(cg, node, 4);
	if (y->shape.rank != 2)
		return cg_error(cg, node, "the output must be 2-D");
	int64_t rows = y->shape.d[0].v, cols = y->shape.d[1].v;
	const char *et = cg_comptype(lo->dtype); /* float or double */
	const char *sf = strcmp(et, "float") == 0 ? ".0f" : ".0";
	cg_line(cg, "/* MelWeightMatrix: %lld spectrogram bins x %lld mel bins */", (long long)rows,
	        (long long)cols);
	if (rows == 0 || cols == 0) {
		cg_line(cg, "/* empty output */");
		return RL_OK;
	}
	cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)(rows * cols));
	cg_line(cg, "    Y0[i] = %s;", cg_assign(cg, y->dtype, "0"));
	const char *lg = sf[2] == 'f' ? "log10f" : "log10";
	cg_line(cg, "const %s lo_mel = 2595%s * %s(1%s + %s / 700%s);", et, sf, lg, sf,
	        cg_load(cg, lo->dtype, "X3[0]"), sf);
	cg_line(cg, "const %s hi_mel = 2595%s * %s(1%s + %s / 700%s);", et, sf, lg, sf,
	        cg_load(cg, hi->dtype, "X4[0]"), sf);
	cg_line(cg, "const %s step = (hi_mel - lo_mel) / (%s)%lld;", et, et, (long long)(cols + 2));
	cg_line(cg, "const double scale = (double)(X1[0] + 1), rate = (double)X2[0];");
	cg_line(cg, "static long long edge[%lld];", (long long)(cols + 2));
	cg_line(cg, "for (size_t i = 0; i < %lld; i++) {", (long long)(cols + 2));
	cg_line(cg, "    const double mel = (double)i * (double)step + (double)lo_mel;");
	cg_line(cg, "    const double hz = 700 * (pow(10, mel / 2595) - 1);");
	cg_line(cg, "    edge[i] = (long long)floor(scale * hz / rate);");
	cg_line(cg, "}");
	cg_line(cg, "for (long long i = 0; i < %lld; i++) {", (long long)cols);
	cg->indent++;
	cg_line(cg, "const long long l = edge[i], c = edge[i + 1], h = edge[i + 2];");
	cg_line(cg, "if (c == l) {");
	cg_line(cg, "    if (c >= 0 && c < %lld)", (long long)rows);
	cg_line(cg, "        Y0[c * %lld + i] = %s;", (long long)cols, cg_assign(cg, y->dtype, "1"));
	cg_line(cg, "} else {");
	cg_line(cg, "    for (long long j = l; j <= c; j++)");
	cg_line(cg, "        if (j >= 0 && j < %lld)", (long long)rows);
	cg_line(cg, "            Y0[j * %lld + i] = %s;", (long long)cols,
	        cg_assign(cg, y->dtype, "(double)(j - l) / (double)(c - l)"));
	cg_line(cg, "}");
	cg_line(cg, "for (long long j = c; j < h; j++)");
	cg_line(cg, "    if (j >= 0 && j < %lld)", (long long)rows);
	cg_line(cg, "        Y0[j * %lld + i] = %s;", (long long)cols,
	        cg_assign(cg, y->dtype, "(double)(h - j) / (double)(h - c)"));
	cg_loops_close(cg, 1);
	return RL_OK;
}

enum rl_status rl_emit_c_const(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	if (!cg_out(cg, node, 0))
		return cg_error(cg, node, "%s: missing output", rl_op_table[n->op].name);
	switch (n->op) {
	case RL_OP_Constant: return emit_constant(cg, node);
	case RL_OP_ConstantOfShape: return emit_constant_of_shape(cg, node);
	case RL_OP_Range: return emit_range(cg, node);
	case RL_OP_EyeLike: return emit_eyelike(cg, node);
	case RL_OP_HannWindow: case RL_OP_HammingWindow: case RL_OP_BlackmanWindow:
		return emit_window(cg, node);
	case RL_OP_MelWeightMatrix: return emit_melweight(cg, node);
	default: return cg_error(cg, node, "%s is not a value generator", rl_op_table[n->op].name);
	}
}
