/*
 * emit.c - the C backend driver.
 *
 * Layout of a generated NAME.c, top to bottom:
 *   1. a banner (rlopt version, model, options) and includes (stdint, string,
 *      math, stdio, stdlib),
 *   2. dtype helpers actually needed (half/bfloat16 conversion, ...),
 *   3. constants: one static array per constant tensor a kernel reads, named
 *      after the ONNX value, or an offset into the side file NAME.weights,
 *   4. one kernel per executed node, `k<N>_<node name>`, each with a comment
 *      naming the ONNX node, op, and shapes; or, for a fused group (node->group,
 *      passes/fuse.c), one kernel `k<N>_fused_<first>__<last>` whose comment
 *      lists the nodes it replaced (emit_fused.c writes its body),
 *   5. NAME_init / NAME_free (workspace, side file), NAME_run (typed entry)
 *      and NAME_run_v (generic entry used by `rlopt run`).
 *
 * Nodes whose outputs inference already evaluated (shape arithmetic and
 * other small constant computations) are not executed: their outputs are
 * constants. A fused group runs as one unit at the point where all its
 * inputs are ready (schedule()); its intermediate values get no storage. Intermediate tensors share one workspace; each gets an offset
 * from a first-fit plan over live ranges (a value lives from its producer to
 * its last consumer), so peak memory is the widest cut, not the sum.
 *
 * Output is deterministic: iteration is in graph order, floats are printed
 * with enough digits to round-trip (%.9g / %.17g), and nothing depends on
 * addresses, time or the environment.
 */
#include "emit_impl.h"
#include "emit_lowp.h"
#include "emit_detect.h"
#include "emit_index.h"
#include "approx.h"

#include "frontends/onnx/onnx.h"

#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* constants embedded in the .c up to this many bytes, else NAME.weights: as
 * string literals 64 MiB of fp32 weights are 200 MB of source, 0.5 s to
 * write and 6-7 s of gcc -O2 (CPU, 2026-12-02); 16 MiB compile in ~1.5 s,
 * and a model past it generates and compiles in about a second with its
 * weights in the side file (--weights-max / --static keep them embedded) */
#define RL_WEIGHTS_DEFAULT_MAX (16ll << 20)
#define RL_ALIGN 64
#define RL_HUGE_PAGE (2 << 20)      /* side files of RL_HUGE_SIDE bytes or more: */
#define RL_HUGE_SIDE (8ll << 20)    /* aligned to, and advised into, 2 MiB pages */
#define RL_CONST_STRING_MIN 256 /* bytes from which a constant is a string */

/* ---- kernel text --------------------------------------------------------- */

void cg_line(struct rl_cgen *cg, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	rl_buf_printf(&cg->body, "%*s%s\n", 4 * (cg->indent + 1), "", tmp);
}

void cg_scratch_array(struct rl_cgen *cg, const char *ctype, const char *name, int64_t n,
                      int64_t inner)
{
	int64_t esz = !strcmp(ctype, "double") || !strcmp(ctype, "int64_t") ||
	              !strcmp(ctype, "uint64_t") || !strcmp(ctype, "size_t") ? 8
	            : !strcmp(ctype, "float") || !strcmp(ctype, "int32_t") ||
	              !strcmp(ctype, "uint32_t") ? 4
	            : !strcmp(ctype, "uint16_t") || !strcmp(ctype, "int16_t") ? 2 : 1;
	RL_ASSERT(!strchr(ctype, ' ') || !strcmp(ctype, "unsigned char"));
	int64_t bytes = esz * (n > 0 ? n : 1) * (inner > 0 ? inner : 1);
	if (!cg->static_mode || bytes <= RL_STATIC_STACK_MAX) {
		if (inner > 0)
			cg_line(cg, "%s %s[%lld][%lld];", ctype, name, (long long)n, (long long)inner);
		else
			cg_line(cg, "%s %s[%lld];", ctype, name, (long long)n);
		return;
	}
	/* kernels run one at a time in static mode (no threads): one region,
	 * each array at its own 64-byte aligned offset within the kernel */
	int64_t off = cg->scratch_base + cg->scratch_cur;
	cg->scratch_cur += (bytes + 63) / 64 * 64;
	if (cg->scratch_cur > cg->scratch_max)
		cg->scratch_max = cg->scratch_cur;
	char at[160]; /* the region's base, or base + offset */
	if (off)
		snprintf(at, sizeof(at), "(%s + %lld)", cg->ws_name, (long long)off);
	else
		snprintf(at, sizeof(at), "%s", cg->ws_name);
	if (inner > 0)
		cg_line(cg, "%s (*%s)[%lld] = (%s (*)[%lld])(void *)%s; /* scratch, %lld bytes */", ctype,
		        name, (long long)inner, ctype, (long long)inner, at, (long long)bytes);
	else
		cg_line(cg, "%s *%s = (%s *)(void *)%s; /* scratch, %lld bytes */", ctype, name, ctype,
		        at, (long long)bytes);
}

enum rl_status cg_error(struct rl_cgen *cg, uint32_t node, const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return rl_graph_error(cg->g, &cg->g->nodes[node], RL_ERR_UNSUPPORTED, "%s", msg);
}

/* ---- dtypes in C -------------------------------------------------------- */

const char *cg_ctype(enum rl_dtype t)
{
	switch (t) {
	case RL_DT_FLOAT: return "float";
	case RL_DT_DOUBLE: return "double";
	case RL_DT_FLOAT16: case RL_DT_BFLOAT16: case RL_DT_UINT16: return "uint16_t";
	case RL_DT_INT8: return "int8_t";
	case RL_DT_UINT8: case RL_DT_BOOL: return "uint8_t";
	case RL_DT_INT16: return "int16_t";
	case RL_DT_INT32: return "int32_t";
	case RL_DT_INT64: return "int64_t";
	case RL_DT_UINT32: return "uint32_t";
	case RL_DT_UINT64: return "uint64_t";
	case RL_DT_INT4: case RL_DT_INT2: return "int8_t"; /* sign-extended, ir/lowp.c */
	default: return "uint8_t";
	}
}

const char *cg_comptype(enum rl_dtype t)
{
	if (t == RL_DT_FLOAT16 || t == RL_DT_BFLOAT16)
		return "float";
	if (rl_dtype_is_lowp(t) && t != RL_DT_INT4 && t != RL_DT_INT2 && t != RL_DT_UINT4 &&
	    t != RL_DT_UINT2)
		return "float"; /* float8, float4 */
	return cg_ctype(t);
}

static char *rot_buf(void)
{
	static char bufs[16][512];
	static int k;
	k = (k + 1) % 16;
	return bufs[k];
}

const char *cg_load(struct rl_cgen *cg, enum rl_dtype t, const char *e)
{
	char *b = rot_buf();
	if (t == RL_DT_FLOAT16) {
		cg->need_half = 1;
		snprintf(b, 512, "rl_h2f(%s)", e);
	} else if (t == RL_DT_BFLOAT16) {
		cg->need_bf16 = 1;
		snprintf(b, 512, "rl_b2f(%s)", e);
	} else if (rl_dtype_is_lowp(t) && t != RL_DT_INT4 && t != RL_DT_INT2 &&
	           t != RL_DT_UINT4 && t != RL_DT_UINT2) {
		snprintf(b, 512, "%s", cg_lowp_to_float(cg, t, e));
	} else {
		snprintf(b, 512, "%s", e);
	}
	return b;
}

const char *cg_store(struct rl_cgen *cg, enum rl_dtype t, const char *e)
{
	char *b = rot_buf();
	if (t == RL_DT_FLOAT16) {
		cg->need_half = 1;
		snprintf(b, 512, "rl_f2h(%s)", e);
	} else if (t == RL_DT_BFLOAT16) {
		cg->need_bf16 = 1;
		snprintf(b, 512, "rl_f2b(%s)", e);
	} else if (t == RL_DT_BOOL) {
		snprintf(b, 512, "(uint8_t)((%s) != 0)", e);
	} else if (rl_dtype_is_lowp(t)) { /* Cast's defaults: saturate, round up */
		snprintf(b, 512, "%s", cg_lowp_from_float(cg, t, e, true, RL_LOWP_ROUND_UP));
	} else {
		snprintf(b, 512, "(%s)(%s)", cg_ctype(t), e);
	}
	return b;
}

const char *cg_load_as(struct rl_cgen *cg, enum rl_dtype t, const char *e, const char *ct)
{
	char *b = rot_buf();
	const char *v = cg_load(cg, t, e);
	if (strcmp(ct, cg_comptype(t)) == 0)
		snprintf(b, 512, "%s", v);
	else
		snprintf(b, 512, "(%s)%s", ct, v);
	return b;
}

const char *cg_assign(struct rl_cgen *cg, enum rl_dtype t, const char *e)
{
	if (t != RL_DT_FLOAT && t != RL_DT_DOUBLE)
		return cg_store(cg, t, e);
	char *b = rot_buf();
	size_t k = 0; /* a literal without a sign: -0 is not -0.0f */
	while (e[k] >= '0' && e[k] <= '9')
		k++;
	bool int_lit = k > 0 && e[k] == '\0';
	snprintf(b, 512, "%s%s", e, !int_lit ? "" : t == RL_DT_FLOAT ? ".0f" : ".0");
	return b;
}

static void fmt_double(char *b, size_t n, double x, bool single)
{
	if (isnan(x))
		snprintf(b, n, "%s", single ? "NAN" : "(double)NAN");
	else if (isinf(x))
		snprintf(b, n, "%s%s", x < 0 ? "-" : "", single ? "INFINITY" : "(double)INFINITY");
	else {
		char t[64];
		snprintf(t, sizeof(t), single ? "%.9g" : "%.17g", x);
		/* make sure it reads as a floating literal */
		bool has = strpbrk(t, ".eEn") != NULL;
		snprintf(b, n, "%s%s%s", t, has ? "" : ".0", single ? "f" : "");
	}
}

const char *cg_lit(enum rl_dtype t, double x)
{
	char *b = rot_buf();
	if (rl_dtype_is_float(t)) {
		fmt_double(b, 512, x, t != RL_DT_DOUBLE);
	} else if (t == RL_DT_UINT64) {
		snprintf(b, 512, "UINT64_C(%llu)", (unsigned long long)x);
	} else if (t == RL_DT_INT64) {
		if (x <= -9.2e18)
			snprintf(b, 512, "INT64_MIN");
		else
			snprintf(b, 512, "INT64_C(%lld)", (long long)x);
	} else {
		snprintf(b, 512, "(%s)%lld", cg_ctype(t), (long long)x);
	}
	return b;
}

const char *cg_vh_off(int k)
{
	char *b = rot_buf();
	if (k == 0)
		b[0] = 0;
	else if (k == 1)
		snprintf(b, 512, " + RL_VH");
	else
		snprintf(b, 512, " + %d * RL_VH", k);
	return b;
}

/* ---- broadcast loops ---------------------------------------------------- */

int64_t cg_strides(const struct rl_shape *s, int64_t *strides)
{
	int64_t n = 1;
	for (int i = s->rank - 1; i >= 0; i--) {
		strides[i] = n;
		n *= s->d[i].v;
	}
	return n;
}

int cg_bcast_open(struct rl_cgen *cg, const struct rl_shape *out, int n,
                  const struct rl_shape *const *ins)
{
	return cg_bcast_open_par(cg, out, n, ins, 0);
}

int cg_bcast_open_par(struct rl_cgen *cg, const struct rl_shape *out, int n,
                      const struct rl_shape *const *ins, int64_t min_par)
{
	int r = out->rank;
	int64_t dims[RL_MAX_RANK + 1];
	int64_t st[17][RL_MAX_RANK + 1]; /* per input strides in output dims */
	RL_ASSERT(n <= 16);
	for (int d = 0; d < r; d++)
		dims[d] = out->d[d].v;
	for (int k = 0; k < n; k++) {
		int64_t s[RL_MAX_RANK];
		cg_strides(ins[k], s);
		int off = r - ins[k]->rank;
		for (int d = 0; d < r; d++) {
			int dk = d - off;
			st[k][d] = (dk < 0 || ins[k]->d[dk].v == 1) ? 0 : s[dk];
		}
	}
	/* merge dim d into d+1 when every operand is contiguous across them */
	int m = 0;
	int64_t md[RL_MAX_RANK + 1], ms[17][RL_MAX_RANK + 1];
	for (int d = 0; d < r; d++) {
		if (dims[d] == 1)
			continue; /* size-1 dims contribute nothing */
		bool merge = m > 0;
		for (int k = 0; merge && k < n; k++)
			merge = ms[k][m - 1] == st[k][d] * dims[d];
		if (merge) {
			md[m - 1] *= dims[d];
			for (int k = 0; k < n; k++)
				ms[k][m - 1] = st[k][d];
		} else {
			md[m] = dims[d];
			for (int k = 0; k < n; k++)
				ms[k][m] = st[k][d];
			m++;
		}
	}
	if (m == 0) { /* scalar */
		cg_line(cg, "{");
		cg->indent++;
		cg_line(cg, "const size_t o = 0;");
		for (int k = 0; k < n; k++)
			cg_line(cg, "const size_t i%d = 0;", k);
		return 1;
	}
	int64_t ostr[RL_MAX_RANK + 1];
	int64_t acc = 1;
	for (int d = m - 1; d >= 0; d--) {
		ostr[d] = acc;
		acc *= md[d];
	}
	/* split the outermost loop across threads when the whole nest is big
	 * enough: chunks of at least min_par elements */
	bool par = min_par > 0 && acc >= 2 * min_par && md[0] > 1;
	if (par) {
		int64_t inner = acc / md[0];
		cg->par_n = md[0];
		cg->par_grain = (min_par + inner - 1) / inner;
	}
	for (int d = 0; d < m; d++) {
		if (d == 0 && par)
			cg_line(cg, "for (size_t j0 = (size_t)lo; j0 < (size_t)hi; j0++) {");
		else
			cg_line(cg, "for (size_t j%d = 0; j%d < %lld; j%d++) {", d, d, (long long)md[d], d);
		cg->indent++;
	}
	char e[1024];
	size_t p = 0;
	for (int d = 0; d < m; d++)
		p += (size_t)snprintf(e + p, sizeof(e) - p, ostr[d] == 1 ? "%sj%d" : "%sj%d * %lld",
		                      d ? " + " : "", d, (long long)ostr[d]);
	cg_line(cg, "const size_t o = %s;", e);
	for (int k = 0; k < n; k++) {
		p = 0;
		e[0] = 0;
		for (int d = 0; d < m; d++)
			if (ms[k][d])
				p += (size_t)snprintf(e + p, sizeof(e) - p,
				                      ms[k][d] == 1 ? "%sj%d" : "%sj%d * %lld",
				                      p ? " + " : "", d, (long long)ms[k][d]);
		cg_line(cg, "const size_t i%d = %s;", k, p ? e : "0");
	}
	cg_line(cg, "(void)o;");
	for (int k = 0; k < n; k++)
		cg_line(cg, "(void)i%d;", k);
	return m;
}

void cg_rows_open(struct rl_cgen *cg, const char *var, int64_t rows, int64_t row_elems,
                  int64_t min_par)
{
	if (rows > 1 && rows * row_elems >= 2 * min_par) {
		cg->par_n = rows;
		cg->par_grain = (min_par + row_elems - 1) / row_elems;
		cg_line(cg, "for (size_t %s = (size_t)lo; %s < (size_t)hi; %s++) {", var, var, var);
	} else {
		cg_line(cg, "for (size_t %s = 0; %s < %lld; %s++) {", var, var, (long long)rows, var);
	}
	cg->indent++;
}

void cg_loops_close(struct rl_cgen *cg, int depth)
{
	for (int d = 0; d < depth; d++) {
		cg->indent--;
		cg_line(cg, "}");
	}
}

/* ---- dispatch ----------------------------------------------------------- */

typedef enum rl_status (*emit_fn)(struct rl_cgen *, uint32_t);

/* The emit column of ir/ops.def picks the emitter: one per family
 * (RL_FAMILIES) and emit_index.c; RL_EMIT_NONE has none. */
static const emit_fn c_emitters[RL_EMIT_COUNT_] = {
#define X(E, file, name) [RL_EMIT_##E] = rl_emit_c_##file,
	RL_FAMILIES(X)
#undef X
	[RL_EMIT_INDEX] = rl_emit_c_index,
};

bool rl_emit_c_supports(enum rl_op op)
{
	return op < RL_OP_COUNT_ && c_emitters[rl_op_table[op].emit] != NULL;
}

/* ---- the driver --------------------------------------------------------- */

enum storage {
	ST_NONE,      /* not needed at run time */
	ST_INPUT,     /* caller's input pointer */
	ST_OUTPUT,    /* caller's output pointer */
	ST_CONST,     /* static array or side-file offset */
	ST_WORKSPACE, /* offset in the workspace */
	ST_ALIAS,     /* a view (Reshape, Squeeze, ...) of another value's storage */
};

struct vinfo {
	enum storage st;
	int io;            /* input/output position */
	int64_t off;       /* workspace or side-file offset */
	bool in_side;      /* constant lives in the side file */
	char cname[80];    /* C identifier for constants */
	bool strform;      /* constant emitted as a string: its array is cname.v */
	bool at_init;      /* ST_CONST that NAME_init computes (output of a node of
	                      constant inputs, runs_at_init): at off in NAME_cst,
	                      neither embedded nor in the side file */
	uint32_t alias;    /* ST_ALIAS: the value whose storage this one is */
	bool cat;          /* ST_ALIAS of a Concat input its producer writes in
	                      place (mark_concats), at byte aoff of the Concat */
	int64_t aoff;
	int64_t first, last; /* live range in executed-node positions */
};

/* One kernel: a single node, or a fused group. */
struct unit {
	bool view;           /* Reshape-like node whose output aliases its input:
	                        no kernel, no storage, no copy */
	uint32_t node;       /* the node; for a group its first node in g->order */
	int32_t grp;         /* index in driver.grps, -1 for a single node */
	uint32_t k;          /* kernel number: g->order position of `node` */
	bool at_init;        /* a node of constant inputs NAME_init runs once */
};

struct driver {
	struct rl_graph *g;
	const char *prefix;
	struct vinfo *vi;
	bool *exec;          /* node executes at run time (or, at_init, in NAME_init) */
	bool *at_init;       /* node runs once in NAME_init: its outputs are constants */
	bool init_consts;    /* may run nodes of constant inputs in NAME_init (the C
	                        backend outside static mode) */
	bool concat_views;   /* Concat inputs written in place (mark_concats); the C
	                        backend only: rl_plan has no alias offsets */
	int64_t cst_size;    /* bytes of NAME_cst, the at_init outputs */
	struct rl_cgen_group *grps; /* fused groups that passed the checks */
	uint32_t ngrps;
	int32_t *grp_of;     /* node -> index in grps, -1 */
	struct unit *units;  /* kernels in the order they run */
	uint32_t nunits;
	int64_t ws_size;
	int64_t side_size;
	struct rl_buf c, h, kernels;
	unsigned char *side; /* side file bytes */
	struct rl_cgen cg;
	bool (*supports)(enum rl_op); /* the backend's op list (rl_emit_plan) */
	const char *backend;          /* "C", "CUDA": for the unsupported-op message */
};

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

/* C comment text: no terminator can sneak in through a name */
static const char *ctext(const char *s)
{
	char *b = rot_buf();
	size_t k = 0;
	for (const char *p = s; *p && k < 200; p++) {
		char c = *p;
		if (c == '*' && p[1] == '/')
			c = '_';
		if ((unsigned char)c < 32 || (unsigned char)c > 126)
			c = '?';
		b[k++] = c;
	}
	b[k] = 0;
	return b;
}

/* The header's account of the model's sequence and optional inputs and
 * outputs: which tensors above each became, fixed at generation time
 * (frontends/onnx/onnx.h). */
static void onnx_io_note(const struct rl_graph *g, struct rl_buf *h)
{
	rl_buf_printf(h, " * The model's sequences and optionals, fixed when this code was generated:\n");
	for (int out = 0; out < 2; out++) {
		const struct rl_onnx_io *io = g->onnx_io;
		uint32_t n = out ? io->nout : io->nin;
		for (uint32_t i = 0; i < n; i++) {
			const struct rl_onnx_port *p = out ? &io->out[i] : &io->in[i];
			const char *dir = out ? "output" : "input";
			if (p->kind == RL_ONNX_TENSOR)
				continue;
			bool opt = p->kind == RL_ONNX_OPTIONAL;
			if (opt && p->present <= 0)
				rl_buf_printf(h, " *   %s %s: optional, absent (no tensor)\n", dir,
				              ctext(p->name));
			else if ((p->kind == RL_ONNX_SEQUENCE || p->inner == RL_ONNX_SEQUENCE) && !p->count)
				rl_buf_printf(h, " *   %s %s: %ssequence of 0 tensors (no tensor)\n", dir,
				              ctext(p->name), opt ? "optional, present: " : "");
			else if (p->kind == RL_ONNX_SEQUENCE || p->inner == RL_ONNX_SEQUENCE)
				rl_buf_printf(h, " *   %s %s: %ssequence of %u tensors, %ss %u to %d "
				              "(%s.0, %s.1, ...)\n", dir, ctext(p->name),
				              opt ? "optional, present: " : "", p->count, dir, p->first,
				              (int)(p->first + p->count) - 1, ctext(p->name), ctext(p->name));
			else
				rl_buf_printf(h, " *   %s %s: optional, present: %s %u\n", dir,
				              ctext(p->name), dir, p->first);
		}
	}
}

/* Bytes of a value's tensor (nbytes is only set on constants). */
static int64_t value_bytes(const struct rl_graph *g, uint32_t v)
{
	int64_t ne = rl_shape_numel(&g->values[v].shape);
	return ne > 0 ? ne * (int64_t)rl_dtype_size(g->values[v].dtype) : 0;
}

static bool value_needed_const(struct driver *d, uint32_t v)
{
	return rl_value_is_const(d->g, v);
}

/* ---- fused groups ------------------------------------------------------- */

static bool is_anchor_op(enum rl_op op)
{
	return op == RL_OP_MatMul || op == RL_OP_Gemm || op == RL_OP_Conv;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* v is produced by a node of the group being checked (marked with `tag`) */
static bool made_inside(const struct rl_graph *g, const uint32_t *mark, uint32_t tag, uint32_t v)
{
	uint32_t p = g->values[v].producer;
	return p != RL_NONE && mark[p] == tag;
}

/*
 * Check group `nodes` (in g->order order) again and fill in its kernel
 * interface; false leaves its nodes as single kernels. The pass decided the
 * group, but the driver is what has to be right: every node executes, the
 * elementwise nodes have one output of one shared shape and an expression,
 * an anchor feeds only the group and is fed by nothing in it, and no path
 * leaves the group and comes back (else no single position could run it).
 */
static bool group_check(struct driver *d, const uint32_t *nodes, int nn, const uint32_t *pos,
                        uint32_t *mark, uint32_t *seen, uint32_t tag, struct rl_cgen_group *out)
{
	struct rl_graph *g = d->g;
	uint32_t anchor = RL_NONE;
	const struct rl_shape *shape = NULL;
	if (nn < 2)
		return false;
	for (int j = 0; j < nn; j++)
		mark[nodes[j]] = tag;
	for (int j = 0; j < nn; j++) {
		const struct rl_node *n = &g->nodes[nodes[j]];
		if (!d->exec[nodes[j]] || n->nout < 1 || n->out[0] == RL_NONE)
			return false;
		for (int o = 1; o < n->nout; o++)
			if (n->out[o] != RL_NONE)
				return false;
		const struct rl_value *y = &g->values[n->out[0]];
		if (rl_value_is_const(g, n->out[0]))
			return false;
		if (is_anchor_op(n->op)) {
			if (anchor != RL_NONE)
				return false;
			anchor = nodes[j];
			for (int q = 0; q < n->nin; q++)
				if (n->in[q] != RL_NONE && made_inside(g, mark, tag, n->in[q]))
					return false;
			if (y->flags & RL_VAL_OUTPUT)
				return false;
			for (uint32_t u = 0; u < y->nuses; u++)
				if (mark[y->uses[u]] != tag)
					return false;
		} else if (!cg_elemwise_has_expr(n->op) || n->nin > 16) {
			return false;
		}
		if (shape && !rl_shape_equal(shape, &y->shape))
			return false;
		shape = &y->shape;
	}
	/* outputs: values used outside or graph outputs; inputs: the anchor's in
	 * slot order, then every other tensor read, once, constants scalars
	 * excepted (they become literals) */
	int nout = 0, nin = 0, cap = 0;
	for (int j = 0; j < nn; j++)
		cap += g->nodes[nodes[j]].nin;
	out->in = malloc(((size_t)cap + 1) * sizeof(uint32_t));
	out->out = malloc(((size_t)nn + 1) * sizeof(uint32_t));
	out->nodes = malloc(((size_t)nn + 1) * sizeof(uint32_t));
	RL_ASSERT(out->in && out->out && out->nodes);
	out->anchor = anchor;
	out->nnodes = 0;
	if (anchor != RL_NONE) {
		const struct rl_node *a = &g->nodes[anchor];
		out->nodes[out->nnodes++] = anchor;
		for (int q = 0; q < a->nin; q++)
			out->in[nin++] = a->in[q];
	}
	int first_ext = nin;
	for (int j = 0; j < nn; j++) {
		const struct rl_node *n = &g->nodes[nodes[j]];
		if (nodes[j] == anchor)
			continue;
		out->nodes[out->nnodes++] = nodes[j];
		for (int q = 0; q < n->nin; q++) {
			uint32_t v = n->in[q];
			if (v == RL_NONE || made_inside(g, mark, tag, v) ||
			    (n->op == RL_OP_CastLike && q == 1))
				continue;
			if (rl_value_is_const(g, v) && g->values[v].data &&
			    rl_shape_numel(&g->values[v].shape) == 1)
				continue;
			bool dup = false;
			for (int k = first_ext; k < nin && !dup; k++)
				dup = out->in[k] == v;
			if (!dup)
				out->in[nin++] = v;
		}
	}
	for (int j = 0; j < nn; j++) {
		const struct rl_node *n = &g->nodes[nodes[j]];
		const struct rl_value *y = &g->values[n->out[0]];
		bool ext = (y->flags & RL_VAL_OUTPUT) != 0;
		for (uint32_t u = 0; u < y->nuses && !ext; u++)
			ext = mark[y->uses[u]] != tag;
		if (ext)
			out->out[nout++] = n->out[0];
	}
	out->nin = nin;
	out->nout = nout;
	bool ok = nout > 0 && nin - first_ext <= 16;
	if (ok && anchor != RL_NONE) {
		/* the product is computed into Y0: the first output of its dtype */
		enum rl_dtype adt = g->values[g->nodes[anchor].out[0]].dtype;
		int q = 0;
		while (q < nout && g->values[out->out[q]].dtype != adt)
			q++;
		ok = q < nout;
		for (; ok && q > 0; q--) {
			uint32_t t = out->out[q];
			out->out[q] = out->out[q - 1];
			out->out[q - 1] = t;
		}
	}
	/* convex: walk back from the inputs' producers; reaching the group again
	 * means a path through an outside node. Nodes before the group's first
	 * cannot be on such a path. */
	uint32_t minpos = UINT32_MAX;
	for (int j = 0; j < nn; j++)
		if (pos[nodes[j]] < minpos)
			minpos = pos[nodes[j]];
	uint32_t *stack = NULL;
	size_t sp = 0, scap = 0;
	for (int j = 0; ok && j < nn; j++) {
		const struct rl_node *n = &g->nodes[nodes[j]];
		for (int q = 0; q < n->nin; q++) {
			uint32_t v = n->in[q];
			uint32_t p = v == RL_NONE ? RL_NONE : g->values[v].producer;
			if (p == RL_NONE || mark[p] == tag || seen[p] == tag || pos[p] < minpos)
				continue;
			seen[p] = tag;
			if (sp == scap) {
				scap = scap ? 2 * scap : 64;
				stack = realloc(stack, scap * sizeof(*stack));
				RL_ASSERT(stack);
			}
			stack[sp++] = p;
		}
	}
	while (ok && sp > 0) {
		const struct rl_node *n = &g->nodes[stack[--sp]];
		for (int q = 0; q < n->nin && ok; q++) {
			uint32_t v = n->in[q];
			uint32_t p = v == RL_NONE ? RL_NONE : g->values[v].producer;
			if (p == RL_NONE || seen[p] == tag || pos[p] < minpos)
				continue;
			if (mark[p] == tag) {
				ok = false;
				break;
			}
			seen[p] = tag;
			if (sp == scap) {
				scap = scap ? 2 * scap : 64;
				stack = realloc(stack, scap * sizeof(*stack));
				RL_ASSERT(stack);
			}
			stack[sp++] = p;
		}
	}
	free(stack);
	if (!ok) {
		free(out->in);
		free(out->out);
		free(out->nodes);
		memset(out, 0, sizeof(*out));
	}
	return ok;
}

/* Collect the groups passes/fuse.c marked (node->group >= 0) and keep the
 * ones that check out. */
static void groups_collect(struct driver *d)
{
	struct rl_graph *g = d->g;
	d->grp_of = malloc(((size_t)g->nnodes + 1) * sizeof(*d->grp_of));
	RL_ASSERT(d->grp_of);
	for (uint32_t i = 0; i < g->nnodes; i++)
		d->grp_of[i] = -1;
	/* (group id, position) of every executed grouped node, sorted */
	uint64_t *key = malloc(((size_t)g->norder + 1) * sizeof(*key));
	uint32_t *pos = malloc(((size_t)g->nnodes + 1) * sizeof(*pos));
	RL_ASSERT(key && pos);
	uint32_t nk = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		pos[i] = UINT32_MAX;
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		pos[i] = k;
		if (g->nodes[i].group >= 0 && d->exec[i] && !d->at_init[i])
			key[nk++] = (uint64_t)(uint32_t)g->nodes[i].group << 32 | k;
	}
	if (nk == 0) {
		free(key);
		free(pos);
		return;
	}
	qsort(key, nk, sizeof(*key), cmp_u64);
	uint32_t *mark = calloc((size_t)g->nnodes + 1, sizeof(*mark));
	uint32_t *seen = calloc((size_t)g->nnodes + 1, sizeof(*seen));
	uint32_t *nodes = malloc(((size_t)nk + 1) * sizeof(*nodes));
	d->grps = calloc((size_t)nk + 1, sizeof(*d->grps));
	RL_ASSERT(mark && seen && nodes && d->grps);
	uint32_t tag = 0;
	for (uint32_t a = 0; a < nk;) {
		uint32_t id = (uint32_t)(key[a] >> 32), b = a;
		int nn = 0;
		while (b < nk && (uint32_t)(key[b] >> 32) == id)
			nodes[nn++] = g->order[(uint32_t)key[b++]];
		struct rl_cgen_group *gr = &d->grps[d->ngrps];
		if (group_check(d, nodes, nn, pos, mark, seen, ++tag, gr)) {
			gr->id = (int32_t)id;
			for (int j = 0; j < gr->nnodes; j++)
				d->grp_of[gr->nodes[j]] = (int32_t)d->ngrps;
			d->ngrps++;
		}
		a = b;
	}
	free(mark);
	free(seen);
	free(nodes);
	free(key);
	free(pos);
}

/*
 * The order kernels run in: g->order, except that a group runs as one unit
 * once every producer of its inputs has run (a depth-first walk over units;
 * groups are convex, so this never meets a cycle). Without groups this is
 * g->order itself.
 */
static void schedule(struct driver *d)
{
	struct rl_graph *g = d->g;
	uint32_t *kpos = malloc(((size_t)g->nnodes + 1) * sizeof(*kpos));
	bool *done = calloc((size_t)g->nnodes + d->ngrps + 1, sizeof(*done));
	d->units = calloc((size_t)g->norder + 1, sizeof(*d->units));
	RL_ASSERT(kpos && done && d->units);
	for (uint32_t k = 0; k < g->norder; k++)
		kpos[g->order[k]] = k;
	/* a unit is a node index, or nnodes + group index */
	struct frame {
		uint32_t unit;
		int idx; /* next input to look at, over the unit's inputs */
	} *st = malloc(((size_t)g->norder + d->ngrps + 1) * sizeof(*st));
	RL_ASSERT(st);
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		if (!d->exec[i])
			continue;
		uint32_t u0 = d->grp_of[i] >= 0 ? g->nnodes + (uint32_t)d->grp_of[i] : i;
		if (done[u0])
			continue;
		size_t sp = 0;
		st[sp++] = (struct frame){u0, 0};
		done[u0] = true; /* on the stack: a cycle would be a bug in group_check */
		while (sp > 0) {
			struct frame *f = &st[sp - 1];
			const struct rl_cgen_group *gr = f->unit >= g->nnodes ? &d->grps[f->unit - g->nnodes]
			                                                      : NULL;
			int nin = gr ? gr->nin : g->nodes[f->unit].nin;
			uint32_t next = RL_NONE;
			while (f->idx < nin && next == RL_NONE) {
				uint32_t v = gr ? gr->in[f->idx] : g->nodes[f->unit].in[f->idx];
				f->idx++;
				uint32_t p = v == RL_NONE ? RL_NONE : g->values[v].producer;
				if (p == RL_NONE || !d->exec[p])
					continue;
				uint32_t pu = d->grp_of[p] >= 0 ? g->nnodes + (uint32_t)d->grp_of[p] : p;
				if (!done[pu])
					next = pu;
			}
			if (next != RL_NONE) {
				done[next] = true;
				st[sp++] = (struct frame){next, 0};
				continue;
			}
			/* every input is ready: this unit runs now */
			struct unit *un = &d->units[d->nunits++];
			if (gr) {
				uint32_t first = gr->nodes[0];
				for (int j = 1; j < gr->nnodes; j++)
					if (kpos[gr->nodes[j]] < kpos[first])
						first = gr->nodes[j];
				un->node = first;
				un->grp = (int32_t)(f->unit - g->nnodes);
			} else {
				un->node = f->unit;
				un->grp = -1;
				un->at_init = d->at_init[f->unit];
			}
			un->k = kpos[un->node];
			sp--;
		}
	}
	free(st);
	free(done);
	free(kpos);
}

/*
 * Concat in place: a Concat whose axis has only 1s before it (batch-1 NCHW
 * along channels, SqueezeNet's fire modules) is its inputs one after the
 * other in memory, so each input's producer can write straight into its
 * part of the Concat's storage: the Concat becomes a view with no kernel and
 * no copy. Each input must be a value a run-time kernel writes into the
 * workspace (not a graph input or output, a constant, a view, twice in the
 * list, or of a length the run reports) and start at a multiple of RL_ALIGN
 * bytes, as every other
 * workspace value does; the Concat's output must not be a graph output. Its
 * storage then lives from the first input's birth (see plan()).
 */
static void mark_concats(struct driver *d)
{
	struct rl_graph *g = d->g;
	for (uint32_t u = 0; u < d->nunits && d->concat_views; u++) {
		struct unit *un = &d->units[u];
		const struct rl_node *n = &g->nodes[un->node];
		if (un->grp >= 0 || un->at_init || un->view || n->op != RL_OP_Concat || n->nout < 1 ||
		    n->out[0] == RL_NONE || n->nin < 2)
			continue;
		uint32_t y = n->out[0];
		const struct rl_value *yv = &g->values[y];
		int64_t axis = rl_node_attr_int(n, "axis", 0), outer = 1;
		if (axis < 0)
			axis += yv->shape.rank;
		if (axis < 0 || axis >= yv->shape.rank || (yv->flags & RL_VAL_OUTPUT) ||
		    d->vi[y].st != ST_NONE || yv->extent_axis)
			continue;
		for (int64_t a = 0; a < axis; a++)
			outer *= yv->shape.d[a].v;
		bool ok = outer == 1;
		int64_t off = 0;
		for (int q = 0; q < n->nin && ok; q++) {
			uint32_t x = n->in[q], p = x == RL_NONE ? RL_NONE : g->values[x].producer;
			ok = x != RL_NONE && p != RL_NONE && d->exec[p] && !d->at_init[p] &&
			     d->vi[x].st == ST_NONE && !(g->values[x].flags & RL_VAL_OUTPUT) &&
			     !g->values[x].extent_axis &&
			     g->values[x].dtype == yv->dtype && off % RL_ALIGN == 0;
			for (int r = 0; r < q && ok; r++)
				ok = n->in[r] != x;
			off += ok ? value_bytes(g, x) : 0;
		}
		if (!ok || off != value_bytes(g, y))
			continue;
		un->view = true;
		off = 0;
		for (int q = 0; q < n->nin; q++) {
			uint32_t x = n->in[q];
			d->vi[x].st = ST_ALIAS;
			d->vi[x].alias = y;
			d->vi[x].cat = true;
			d->vi[x].aoff = off;
			off += value_bytes(g, x);
		}
	}
}

/* Which nodes run, and where every value lives. */
/*
 * Views: a Reshape, Squeeze, Unsqueeze, Flatten or Identity changes only the
 * shape, and every kernel reads its inputs through flat row-major pointers,
 * so its output can simply be its input's storage. Not done when the output
 * is a graph output (the caller's buffer must be filled) or a graph input
 * would be aliased by a graph output. Chains resolve to the first storage.
 */
static bool is_view_op(enum rl_op op)
{
	return op == RL_OP_Reshape || op == RL_OP_Squeeze || op == RL_OP_Unsqueeze ||
	       op == RL_OP_Flatten || op == RL_OP_Identity;
}

static void mark_views(struct driver *d)
{
	struct rl_graph *g = d->g;
	for (uint32_t u = 0; u < d->nunits; u++) {
		struct unit *un = &d->units[u];
		if (un->grp >= 0 || un->at_init)
			continue;
		const struct rl_node *n = &g->nodes[un->node];
		if (!is_view_op(n->op) || n->nout < 1 || n->out[0] == RL_NONE || n->in[0] == RL_NONE)
			continue;
		uint32_t x = n->in[0], y = n->out[0];
		const struct rl_value *xv = &g->values[x], *yv = &g->values[y];
		if ((yv->flags & RL_VAL_OUTPUT) || xv->dtype != yv->dtype ||
		    rl_shape_numel(&xv->shape) != rl_shape_numel(&yv->shape))
			continue;
		un->view = true;
		d->vi[y].st = ST_ALIAS;
		d->vi[y].alias = d->vi[x].st == ST_ALIAS ? d->vi[x].alias : x;
	}
}

/*
 * A node whose inputs are all constants (stored, or outputs of nodes that
 * run at init) computes the same outputs on every run: fold.c leaves such
 * nodes when their outputs are too big to keep (a ConstantOfShape, Expand or
 * Tile the evaluator does not materialize, and what only they feed), and the
 * inflating rule above keeps known ones out of the source. Where NAME_init
 * exists, it runs them once, into NAME_cst, memory the run only reads: the
 * kernels that read their outputs see stored constants and pack them at
 * init (conv, GEMM), and the run does not refill megabytes of weights each
 * time (the onnx light models make every weight with ConstantOfShape).
 * Not for Dropout (training mode draws a mask per run) or for outputs whose
 * extent the run reports (emit_detect.c).
 */
static bool runs_at_init(const struct driver *d, const struct rl_node *n, bool all_const)
{
	const struct rl_graph *g = d->g;
	if (n->op == RL_OP_Dropout || n->nout < 1)
		return false;
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE && g->values[n->out[o]].extent_axis)
			return false;
	if (all_const)
		return true;
	int nconst = 0;
	for (int q = 0; q < n->nin; q++) {
		uint32_t v = n->in[q];
		if (v == RL_NONE)
			continue;
		uint32_t p = g->values[v].producer;
		if (p != RL_NONE && d->exec[p] ? !d->at_init[p] : !rl_value_is_const(g, v))
			return false;
		nconst++;
	}
	return nconst > 0;
}

static enum rl_status plan(struct driver *d)
{
	struct rl_graph *g = d->g;
	d->vi = calloc(g->nvalues + 1, sizeof(*d->vi));
	d->exec = calloc(g->nnodes + 1, sizeof(*d->exec));
	d->at_init = calloc(g->nnodes + 1, sizeof(*d->at_init));
	RL_ASSERT(d->vi && d->exec && d->at_init);
	for (uint32_t v = 0; v < g->nvalues; v++) {
		d->vi[v].first = -1;
		d->vi[v].last = -1;
	}
	for (uint32_t i = 0; i < g->ninputs; i++) {
		d->vi[g->inputs[i]].st = ST_INPUT;
		d->vi[g->inputs[i]].io = (int)i;
	}
	/* static shapes everywhere it matters */
	for (uint32_t v = 0; v < g->nvalues; v++) {
		const struct rl_value *val = &g->values[v];
		if (!val->nuses && !(val->flags & (RL_VAL_OUTPUT | RL_VAL_INPUT)))
			continue;
		if (!rl_shape_is_static(&val->shape)) {
			char sb[128], hint[256];
			return rl_graph_error(g, val->producer == RL_NONE ? NULL
			                                                   : &g->nodes[val->producer],
			                      RL_ERR_SHAPE, "value '%s' has shape %s: %s", val->name,
			                      rl_shape_str(&val->shape, sb, sizeof(sb)),
			                      rl_unbound_hint(g, &val->shape, hint, sizeof(hint)));
		}
		if (!rl_dtype_is_numeric(val->dtype) && !rl_dtype_is_lowp(val->dtype))
			return rl_graph_error(g, NULL, RL_ERR_UNSUPPORTED,
			                      "value '%s' has dtype %s, which the C backend "
			                      "does not compute on", val->name,
			                      rl_dtype_name(val->dtype));
	}
	/* executed nodes: in order, unless every output is already known */
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		struct rl_node *n = &g->nodes[i];
		bool all_const = n->nout > 0;
		double in_bytes = 0, out_bytes = 0;
		for (int o = 0; o < n->nout; o++) {
			if (n->out[o] == RL_NONE)
				continue;
			if (!rl_value_is_const(g, n->out[o]))
				all_const = false;
			out_bytes += (double)g->values[n->out[o]].nbytes;
		}
		for (int q = 0; q < n->nin; q++)
			if (n->in[q] != RL_NONE)
				in_bytes += (double)g->values[n->in[q]].nbytes;
		/* a known value is embedded, unless it is big and its inputs small
		 * (ConstantOfShape, Expand, Range filling weights): running the node
		 * costs less than a source file full of literals. A node without
		 * inputs (Constant: exporters such as paddle2onnx write every weight
		 * as one) carries its literals either way: running it would only copy
		 * them into the workspace on every run */
		bool inflating = n->nin > 0 && out_bytes > 16384 && out_bytes > 4 * in_bytes &&
		                 d->supports(n->op);
		if (all_const && !inflating)
			continue;
		if (!d->supports(n->op))
			return rl_graph_error(g, n, RL_ERR_UNSUPPORTED,
			                      "the %s backend does not implement %s yet",
			                      d->backend, rl_op_table[n->op].name);
		d->exec[i] = true;
		if (d->init_consts && runs_at_init(d, n, all_const)) {
			d->at_init[i] = true;
			for (int o = 0; o < n->nout; o++) {
				uint32_t v = n->out[o];
				if (v == RL_NONE)
					continue;
				d->vi[v].st = ST_CONST;
				d->vi[v].at_init = true;
				d->vi[v].off = d->cst_size;
				d->cst_size += (value_bytes(g, v) + RL_ALIGN - 1) / RL_ALIGN * RL_ALIGN;
			}
		}
	}
	/* fused groups, then the order kernels run in */
	groups_collect(d);
	schedule(d);
	mark_views(d);
	mark_concats(d);
	/* live ranges, in kernel positions */
	int64_t pos = 0;
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct unit *un = &d->units[u];
		const struct rl_cgen_group *gr = un->grp >= 0 ? &d->grps[un->grp] : NULL;
		const struct rl_node *n = &g->nodes[un->node];
		int nout = gr ? gr->nout : n->nout, nin = gr ? gr->nin : n->nin;
		for (int o = 0; o < nout; o++) {
			uint32_t v = gr ? gr->out[o] : n->out[o];
			if (v == RL_NONE)
				continue;
			if (d->vi[v].first < 0)
				d->vi[v].first = pos;
			if (d->vi[v].last < pos)
				d->vi[v].last = pos;
		}
		/* a view reads no shape input; a Concat view reads all of them */
		for (int q = 0; q < (un->view && n->op != RL_OP_Concat ? 1 : nin); q++) {
			uint32_t v = gr ? gr->in[q] : n->in[q];
			if (v == RL_NONE)
				continue;
			if (d->vi[v].first < 0)
				d->vi[v].first = pos;
			d->vi[v].last = pos;
		}
		pos++;
	}
	/* a view keeps the storage it aliases alive as long as it is used */
	for (uint32_t u = 0; u < d->nunits; u++) {
		if (!d->units[u].view || g->nodes[d->units[u].node].op == RL_OP_Concat)
			continue;
		uint32_t v = g->nodes[d->units[u].node].out[0];
		uint32_t root = d->vi[v].alias;
		if (d->vi[root].last < d->vi[v].last)
			d->vi[root].last = d->vi[v].last;
	}
	/* a Concat written in place lives from its first input's birth to the
	 * last use of any input (or view of one, extended just above) */
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct rl_node *n = &g->nodes[d->units[u].node];
		if (!d->units[u].view || n->op != RL_OP_Concat)
			continue;
		struct vinfo *y = &d->vi[n->out[0]];
		for (int q = 0; q < n->nin; q++) {
			const struct vinfo *x = &d->vi[n->in[q]];
			if (x->first >= 0 && (y->first < 0 || x->first < y->first))
				y->first = x->first;
			if (y->last < x->last)
				y->last = x->last;
		}
	}
	/* graph outputs: the first listing of a produced value writes to the
	 * caller's buffer directly; repeats and inputs/constants are copied */
	for (uint32_t i = 0; i < g->noutputs; i++) {
		uint32_t v = g->outputs[i];
		struct vinfo *vi = &d->vi[v];
		if (vi->st == ST_NONE && g->values[v].producer != RL_NONE &&
		    d->exec[g->values[v].producer]) {
			vi->st = ST_OUTPUT;
			vi->io = (int)i;
		}
		vi->last = pos; /* alive to the end */
	}
	/* constants read by executed nodes or listed as outputs */
	int64_t const_bytes = 0;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		if (!value_needed_const(d, v) || d->vi[v].st != ST_NONE)
			continue;
		if (g->values[v].producer != RL_NONE && d->exec[g->values[v].producer])
			continue; /* computed at run time after all */
		if (d->vi[v].first < 0 && !(g->values[v].flags & RL_VAL_OUTPUT))
			continue;
		d->vi[v].st = ST_CONST;
		const_bytes += (int64_t)g->values[v].nbytes;
	}
	/* workspace: first fit over live ranges, values in order of birth */
	uint32_t *ws = malloc((g->nvalues + 1) * sizeof(*ws));
	uint32_t nws = 0;
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct unit *un = &d->units[u];
		const struct rl_cgen_group *gr = un->grp >= 0 ? &d->grps[un->grp] : NULL;
		const struct rl_node *n = &g->nodes[un->node];
		int nout = gr ? gr->nout : n->nout;
		for (int o = 0; o < nout; o++) {
			uint32_t v = gr ? gr->out[o] : n->out[o];
			/* a Concat input written in place: the Concat's storage is
			 * born with its first input (births stay in order) */
			if (v != RL_NONE && d->vi[v].cat)
				v = d->vi[v].alias;
			if (v != RL_NONE && d->vi[v].st == ST_NONE) {
				d->vi[v].st = ST_WORKSPACE;
				ws[nws++] = v;
			}
		}
	}
	uint32_t *active = malloc((nws + 1) * sizeof(*active));
	uint32_t nact = 0;
	d->ws_size = 0;
	for (uint32_t a = 0; a < nws; a++) {
		uint32_t v = ws[a];
		struct vinfo *vi = &d->vi[v];
		int64_t need = (value_bytes(g, v) + RL_ALIGN - 1) / RL_ALIGN * RL_ALIGN;
		if (need == 0)
			need = RL_ALIGN;
		/* drop allocations that died before this one is born */
		uint32_t k2 = 0;
		for (uint32_t q = 0; q < nact; q++)
			if (d->vi[active[q]].last >= vi->first)
				active[k2++] = active[q];
		nact = k2;
		/* sort active by offset (small set: insertion sort) */
		for (uint32_t q = 1; q < nact; q++)
			for (uint32_t r = q; r > 0 && d->vi[active[r - 1]].off > d->vi[active[r]].off; r--) {
				uint32_t t = active[r];
				active[r] = active[r - 1];
				active[r - 1] = t;
			}
		int64_t off = 0;
		for (uint32_t q = 0; q < nact; q++) {
			struct vinfo *o2 = &d->vi[active[q]];
			int64_t oend = o2->off + ((value_bytes(g, active[q]) + RL_ALIGN - 1) /
			                          RL_ALIGN * RL_ALIGN);
			if (oend == o2->off)
				oend += RL_ALIGN;
			if (off + need <= o2->off)
				break;
			if (oend > off)
				off = oend;
		}
		vi->off = off;
		if (off + need > d->ws_size)
			d->ws_size = off + need;
		active[nact++] = v;
	}
	free(active);
	free(ws);
	return const_bytes >= 0 ? RL_OK : RL_ERR_INVALID;
}

/*
 * A large constant as one string literal in a union with its typed view:
 * compilers read a string about ten times faster than the same bytes as
 * numbers (measured: 4 MiB of floats, gcc -O2: 0.9 s against 6.9 s as
 * "%.9g" and 8.5 s as hex words), and the text is no larger. Printable
 * bytes stand for themselves; others are octal escapes, three digits when
 * an octal digit follows. The bytes are in the host's (little-endian) order,
 * like the side file; the file refuses to compile for a big-endian target.
 */
static void emit_const_string(struct driver *d, uint32_t v, int64_t ne)
{
	const struct rl_value *val = &d->g->values[v];
	struct vinfo *vi = &d->vi[v];
	const unsigned char *p = val->data;
	size_t nb = val->nbytes, col = 0;
	rl_buf_printf(&d->c, "static const union {\n    _Alignas(%d) unsigned char b[%zu];\n"
	              "    %s v[%lld];\n} %s = {\n    \"", RL_ALIGN, nb, cg_ctype(val->dtype),
	              (long long)ne, vi->cname);
	/* byte by byte into a line buffer, no printf per byte (64 MiB of
	 * weights are 200 MB of source: formatting each escape took ~9 s) */
	rl_buf_reserve(&d->c, nb * 4 + nb / 24 + 64);
	char line[112];
	for (size_t i = 0; i < nb; i++) {
		unsigned c = p[i];
		char e[4];
		size_t el = 0;
		if (c >= 32 && c < 127 && c != '\\' && c != '"' && c != '?') {
			e[el++] = (char)c;
		} else {
			/* octal, three digits when a digit follows (it would extend
			 * the escape), else as few as the value needs */
			bool full = i + 1 < nb && p[i + 1] >= '0' && p[i + 1] <= '7';
			e[el++] = '\\';
			if (full || c >= 64)
				e[el++] = (char)('0' + (c >> 6));
			if (full || c >= 8)
				e[el++] = (char)('0' + ((c >> 3) & 7));
			e[el++] = (char)('0' + (c & 7));
		}
		if (col + el > 96) {
			rl_buf_append(&d->c, line, col);
			rl_buf_append(&d->c, "\"\n    \"", 7);
			col = 0;
		}
		memcpy(line + col, e, el);
		col += el;
	}
	rl_buf_append(&d->c, line, col);
	rl_buf_printf(&d->c, "\"\n};\n");
}

static void emit_const_array(struct driver *d, uint32_t v)
{
	struct rl_graph *g = d->g;
	const struct rl_value *val = &g->values[v];
	struct vinfo *vi = &d->vi[v];
	int64_t ne = rl_shape_numel(&val->shape);
	char shp[128];
	rl_buf_printf(&d->c, "/* %s: %s[%s] */\n", ctext(val->name), rl_dtype_name(val->dtype),
	              rl_shape_str(&val->shape, shp, sizeof(shp)));
	if (vi->strform) {
		emit_const_string(d, v, ne);
		return;
	}
	rl_buf_printf(&d->c, "static const _Alignas(%d) %s %s[%lld] = {", RL_ALIGN,
	              cg_ctype(val->dtype), vi->cname, (long long)(ne ? ne : 1));
	if (ne == 0)
		rl_buf_printf(&d->c, "0");
	for (int64_t i = 0; i < ne; i++) {
		if (i % 8 == 0)
			rl_buf_printf(&d->c, "\n    ");
		char b[64];
		switch (val->dtype) {
		case RL_DT_FLOAT:
			fmt_double(b, sizeof(b), ((const float *)val->data)[i], true);
			break;
		case RL_DT_DOUBLE:
			fmt_double(b, sizeof(b), ((const double *)val->data)[i], false);
			break;
		case RL_DT_FLOAT16: case RL_DT_BFLOAT16: case RL_DT_UINT16:
			snprintf(b, sizeof(b), "0x%04x", ((const uint16_t *)val->data)[i]);
			break;
		case RL_DT_UINT64:
			snprintf(b, sizeof(b), "UINT64_C(%llu)",
			         (unsigned long long)((const uint64_t *)val->data)[i]);
			break;
		case RL_DT_INT64: {
			int64_t x = ((const int64_t *)val->data)[i];
			if (x == INT64_MIN)
				snprintf(b, sizeof(b), "INT64_MIN");
			else
				snprintf(b, sizeof(b), "INT64_C(%lld)", (long long)x);
			break;
		}
		case RL_DT_INT32: {
			int32_t x = ((const int32_t *)val->data)[i];
			if (x == INT32_MIN)
				snprintf(b, sizeof(b), "INT32_MIN");
			else
				snprintf(b, sizeof(b), "%d", x);
			break;
		}
		case RL_DT_UINT32:
			snprintf(b, sizeof(b), "%uu", ((const uint32_t *)val->data)[i]);
			break;
		default:
			if (rl_dtype_is_lowp(val->dtype)) /* the stored byte, ir/lowp.c */
				snprintf(b, sizeof(b), "%d", val->dtype == RL_DT_INT4 ||
				         val->dtype == RL_DT_INT2 ? ((const int8_t *)val->data)[i]
				                                  : ((const uint8_t *)val->data)[i]);
			else
				snprintf(b, sizeof(b), "%lld", (long long)rl_value_get_int(g, v, i));
			break;
		}
		rl_buf_printf(&d->c, "%s%s", b, i + 1 < ne ? ", " : "");
	}
	rl_buf_printf(&d->c, "\n};\n");
}

/* C expression for a value's pointer inside NAME_run_v */
static void value_ptr(struct driver *d, uint32_t v, bool out, char *b, size_t n)
{
	if (v == RL_NONE) {
		snprintf(b, n, "NULL");
		return;
	}
	if (d->vi[v].st == ST_ALIAS) {
		/* a Concat input (mark_concats), or a view of one: its part of
		 * the Concat's workspace */
		int64_t off = 0;
		uint32_t r = v;
		bool cat = false;
		while (d->vi[r].st == ST_ALIAS) {
			cat |= d->vi[r].cat;
			off += d->vi[r].aoff;
			r = d->vi[r].alias;
		}
		if (cat) {
			RL_ASSERT(d->vi[r].st == ST_WORKSPACE);
			snprintf(b, n, "(%s%s *)(%s_ws + %lld)", out ? "" : "const ",
			         cg_ctype(d->g->values[v].dtype), d->prefix,
			         (long long)(d->vi[r].off + off));
			return;
		}
		value_ptr(d, d->vi[v].alias, false, b, n);
		return;
	}
	const struct rl_value *val = &d->g->values[v];
	struct vinfo *vi = &d->vi[v];
	const char *ct = cg_ctype(val->dtype);
	switch (vi->st) {
	case ST_INPUT:
		snprintf(b, n, "(const %s *)in[%d]", ct, vi->io);
		break;
	case ST_OUTPUT:
		snprintf(b, n, "(%s *)out[%d]", ct, vi->io);
		break;
	case ST_CONST:
		if (vi->at_init && vi->off)
			snprintf(b, n, "(%s%s *)(%s_cst + %lld)", out ? "" : "const ", ct, d->prefix,
			         (long long)vi->off);
		else if (vi->at_init)
			snprintf(b, n, "(%s%s *)%s_cst", out ? "" : "const ", ct, d->prefix);
		else if (vi->in_side && vi->off)
			snprintf(b, n, "(const %s *)(%s_weights + %lld)", ct, d->prefix,
			         (long long)vi->off);
		else if (vi->in_side)
			snprintf(b, n, "(const %s *)%s_weights", ct, d->prefix);
		else
			snprintf(b, n, vi->strform ? "%s.v" : "%s", vi->cname);
		break;
	case ST_WORKSPACE:
		if (vi->off) /* the first tensor at the base itself: no `+ 0` */
			snprintf(b, n, "(%s%s *)(%s_ws + %lld)", out ? "" : "const ", ct, d->prefix,
			         (long long)vi->off);
		else
			snprintf(b, n, "(%s%s *)%s_ws", out ? "" : "const ", ct, d->prefix);
		break;
	default:
		snprintf(b, n, "NULL");
	}
}

void cg_value_ptr(struct rl_cgen *cg, uint32_t v, char *b, size_t n)
{
	struct driver *d = (struct driver *)(void *)((char *)cg - offsetof(struct driver, cg));
	value_ptr(d, v, false, b, n);
}

bool cg_value_stored_const(struct rl_cgen *cg, uint32_t v)
{
	struct driver *d = (struct driver *)(void *)((char *)cg - offsetof(struct driver, cg));
	while (v != RL_NONE && d->vi[v].st == ST_ALIAS)
		v = d->vi[v].alias;
	return v != RL_NONE && d->vi[v].st == ST_CONST;
}

/* Kernel name: k<N>_<node name>, or k<N>_fused_<first>__<last> for a group. */
static void kernel_name(struct driver *d, const struct unit *un, char *b, size_t n)
{
	struct rl_graph *g = d->g;
	char sn[64];
	if (un->grp < 0) {
		sanitize(g->nodes[un->node].name, sn, 48);
		snprintf(b, n, "k%u_%s", un->k, sn);
		return;
	}
	const struct rl_cgen_group *gr = &d->grps[un->grp];
	char s2[64];
	sanitize(g->nodes[gr->nodes[0]].name, sn, 28);
	sanitize(g->nodes[gr->nodes[gr->nnodes - 1]].name, s2, 28);
	snprintf(b, n, "k%u_fused_%.28s__%.28s", un->k, sn, s2);
}

/* The comment above a fused kernel: what it replaced, then its interface. */
static void group_comment(struct driver *d, const struct rl_cgen_group *gr)
{
	struct rl_graph *g = d->g;
	char sb[128];
	if (gr->anchor != RL_NONE) {
		const struct rl_node *a = &g->nodes[gr->anchor];
		rl_buf_printf(&d->kernels, "/* fused: %s '%s' with its epilogue in the output loop; "
		              "replaces %d ONNX nodes:\n", rl_op_table[a->op].name, ctext(a->name),
		              gr->nnodes);
	} else {
		const struct rl_value *y = &g->values[gr->out[0]];
		rl_buf_printf(&d->kernels, "/* fused: %d elementwise ONNX nodes in one pass over "
		              "%s elements:\n", gr->nnodes, rl_shape_str(&y->shape, sb, sizeof(sb)));
	}
	for (int j = 0; j < gr->nnodes; j++) {
		const struct rl_node *n = &g->nodes[gr->nodes[j]];
		rl_buf_printf(&d->kernels, " *   '%s' (%s)\n", ctext(n->name), rl_op_table[n->op].name);
	}
	rl_buf_printf(&d->kernels, " *");
	for (int q = 0; q < gr->nin; q++) {
		if (gr->in[q] == RL_NONE)
			continue;
		const struct rl_value *v = &g->values[gr->in[q]];
		rl_buf_printf(&d->kernels, "%s X%d %s[%s] '%s'", q ? "," : "", q, rl_dtype_name(v->dtype),
		              rl_shape_str(&v->shape, sb, sizeof(sb)), ctext(v->name));
	}
	for (int q = 0; q < gr->nout; q++) {
		const struct rl_value *v = &g->values[gr->out[q]];
		rl_buf_printf(&d->kernels, "%s Y%d %s[%s] '%s'", q ? "," : " ->", q,
		              rl_dtype_name(v->dtype), rl_shape_str(&v->shape, sb, sizeof(sb)),
		              ctext(v->name));
	}
	rl_buf_printf(&d->kernels, "\n */\n");
}

/* Does C text s use identifier id (as a whole token)? */
/* Occurrences of identifier id in s[0, len) as a whole token. */
static int count_ident_n(const char *s, size_t len, const char *id)
{
	size_t n = strlen(id);
	int c = 0;
	if (!s)
		return 0;
	for (size_t i = 0; i + n <= len; i++) {
		if (s[i] != id[0] || strncmp(s + i, id, n) != 0)
			continue;
		bool before = i > 0 && (isalnum((unsigned char)s[i - 1]) || s[i - 1] == '_');
		bool after = i + n < len && (isalnum((unsigned char)s[i + n]) || s[i + n] == '_');
		c += !before && !after;
	}
	return c;
}

static int count_ident(const char *s, const char *id)
{
	return count_ident_n(s, s ? strlen(s) : 0, id);
}

/*
 * Emitters write `(void)x;` after a local they may or may not use (the loop
 * helpers cannot know). Drop each such line whose name the body uses beyond
 * its declaration, so the reader sees only the casts that matter.
 */
static void drop_void_casts(struct rl_buf *b)
{
	if (!b->s)
		return;
	char *txt = b->s; /* counted in place: a dropped cast is blanked first */
	struct rl_buf out = {0};
	for (char *r = txt; *r;) {
		char *eol = strchr(r, '\n');
		size_t len = eol ? (size_t)(eol - r + 1) : strlen(r);
		const char *t = r;
		while (*t == ' ')
			t++;
		char id[64];
		int k = 0;
		bool cast = strncmp(t, "(void)", 6) == 0;
		if (cast) {
			t += 6;
			while (k < 63 && (isalnum((unsigned char)t[k]) || t[k] == '_'))
				id[k] = t[k], k++;
			id[k] = 0;
			cast = k > 0 && t[k] == ';' && t[k + 1] == '\n';
		}
		/* the declaration and this cast make two; a third is a use. Counted
		 * in the innermost block around the cast only: kernels repeat local
		 * names in sibling blocks (one per epilogue call, say). */
		size_t lo = (size_t)(r - txt), hi = lo + len;
		if (cast) {
			for (int depth = 0; lo > 0; lo--) {
				char ch = txt[lo - 1];
				if (ch == '}')
					depth++;
				else if (ch == '{' && depth-- == 0)
					break;
			}
			for (int depth = 0; txt[hi]; hi++) {
				if (txt[hi] == '{')
					depth++;
				else if (txt[hi] == '}' && depth-- == 0)
					break;
			}
		}
		if (cast && count_ident_n(txt + lo, hi - lo, id) >= 3)
			memset(r, ' ', len - 1);
		else
			rl_buf_printf(&out, "%.*s", (int)len, r);
		r += len;
	}
	rl_buf_free(b);
	*b = out;
}

/* `    kname(inputs, outputs);` for unit un, into b */
static void unit_call(struct driver *d, const struct unit *un, const char *kname,
                      struct rl_buf *b)
{
	const struct rl_cgen_group *gr = un->grp >= 0 ? &d->grps[un->grp] : NULL;
	const struct rl_node *n = &d->g->nodes[un->node];
	char p[256];
	rl_buf_printf(b, "    %s(", kname);
	bool first = true;
	int nin = gr ? gr->nin : n->nin, nout = gr ? gr->nout : n->nout;
	for (int q = 0; q < nin; q++) {
		value_ptr(d, gr ? gr->in[q] : n->in[q], false, p, sizeof(p));
		rl_buf_printf(b, "%s%s", first ? "" : ", ", p);
		first = false;
	}
	for (int q = 0; q < nout; q++) {
		value_ptr(d, gr ? gr->out[q] : n->out[q], true, p, sizeof(p));
		rl_buf_printf(b, "%s%s", first ? "" : ", ", p);
		first = false;
	}
	rl_buf_printf(b, ");\n");
}

static enum rl_status emit_kernels(struct driver *d)
{
	struct rl_graph *g = d->g;
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct unit *un = &d->units[u];
		if (un->view)
			continue;
		const struct rl_cgen_group *gr = un->grp >= 0 ? &d->grps[un->grp] : NULL;
		uint32_t i = un->node;
		struct rl_node *n = &g->nodes[i];
		char kname[128];
		kernel_name(d, un, kname, sizeof(kname));
		d->cg.body.len = 0;
		if (d->cg.body.s)
			d->cg.body.s[0] = 0;
		d->cg.indent = 0;
		d->cg.kname = kname;
		d->cg.par_n = d->cg.par_grain = 0;
		d->cg.simd = 0;
		d->cg.uses_pool = 0;
		d->cg.scratch_cur = 0;
		d->cg.pre.len = 0;
		if (d->cg.pre.s)
			d->cg.pre.s[0] = 0;
		emit_fn fn = c_emitters[rl_op_table[n->op].emit];
		enum rl_status st = gr ? rl_emit_c_fused(&d->cg, gr)
		                  : fn ? fn(&d->cg, i)
		                       : cg_error(&d->cg, i, "%s has no C emitter (ir/ops.def)",
		                                  rl_op_table[n->op].name);
		if (st != RL_OK)
			return st;
		/* signature and comment */
		int nin = gr ? gr->nin : n->nin, nout = gr ? gr->nout : n->nout;
		const uint32_t *ins = gr ? gr->in : n->in, *outs = gr ? gr->out : n->out;
		if (gr) {
			group_comment(d, gr);
		} else {
			rl_buf_printf(&d->kernels, "/* node '%s' (%s)", ctext(n->name),
			              rl_op_table[n->op].name);
			for (int q = 0; q < n->nin; q++) {
				char sb[128];
				if (n->in[q] == RL_NONE)
					continue;
				rl_buf_printf(&d->kernels, "%s X%d %s[%s]", q ? "," : ":", q,
				              rl_dtype_name(g->values[n->in[q]].dtype),
				              rl_shape_str(&g->values[n->in[q]].shape, sb, sizeof(sb)));
			}
			for (int q = 0; q < n->nout; q++) {
				char sb[128];
				if (n->out[q] == RL_NONE)
					continue;
				rl_buf_printf(&d->kernels, "%s Y%d %s[%s]", q ? "," : " ->", q,
				              rl_dtype_name(g->values[n->out[q]].dtype),
				              rl_shape_str(&g->values[n->out[q]].shape, sb, sizeof(sb)));
			}
			rl_buf_printf(&d->kernels, " */\n");
		}
		cg_tidy(&d->cg.body); /* emit_tidy.c: no `* 1`, `+ 0`, zero indices */
		drop_void_casts(&d->cg.body);
		bool par = d->cg.par_n > 0;
		d->cg.any_simd |= d->cg.simd;
		d->cg.any_par |= (par || d->cg.uses_pool) && !d->cg.static_mode;
		struct rl_buf params = {0}, unpack = {0};
		int np = 0;
		for (int q = 0; q < nin + nout; q++) {
			bool out = q >= nin;
			uint32_t v = out ? outs[q - nin] : ins[q];
			enum rl_dtype dt = v == RL_NONE ? RL_DT_FLOAT : g->values[v].dtype;
			rl_buf_printf(&params, "%s%s%s *restrict %c%d", np ? ", " : "",
			              out ? "" : "const ", cg_ctype(dt), out ? 'Y' : 'X',
			              out ? q - nin : q);
			rl_buf_printf(&unpack, "%s(%s%s *)a[%d]", np ? ", " : "", out ? "" : "const ",
			              cg_ctype(dt), np);
			np++;
		}
		const char *ps = params.s ? params.s : "void";
		const char *attr = d->cg.simd ? "RL_TARGETS " : "";
		if (!par) {
			rl_buf_printf(&d->kernels, "static %svoid %s(%s)\n{\n%s", attr, kname, ps,
			              d->cg.pre.len ? d->cg.pre.s : "");
		} else {
			/* three functions: the body over [lo, hi) of the outer loop, the
			 * pool's task adapter, and the entry the run function calls */
			rl_buf_printf(&d->kernels, "static %svoid %s_range(%s%sint64_t lo, int64_t hi)\n{\n",
			              attr, kname, params.s ? params.s : "", np ? ", " : "");
		}
		/* a parameter is cast to void only when the body never names it */
		for (int q = 0; q < nin + nout; q++) {
			char id[16];
			snprintf(id, sizeof(id), "%c%d", q < nin ? 'X' : 'Y', q < nin ? q : q - nin);
			if (!count_ident(d->cg.body.s, id))
				rl_buf_printf(&d->kernels, "    (void)%s;\n", id);
		}
		rl_buf_printf(&d->kernels, "%s}\n\n", d->cg.body.s ? d->cg.body.s : "");
		if (par && d->cg.static_mode) {
			/* no threads in static mode: the whole range in the caller */
			rl_buf_printf(&d->kernels, "static void %s(%s)\n{\n%s    %s_range(", kname, ps,
			              d->cg.pre.len ? d->cg.pre.s : "", kname);
			for (int q = 0; q < np; q++)
				rl_buf_printf(&d->kernels, "%c%d, ", q >= nin ? 'Y' : 'X',
				              q >= nin ? q - nin : q);
			rl_buf_printf(&d->kernels, "0, %lldll);\n}\n\n", (long long)d->cg.par_n);
		} else if (par) {
			rl_buf_printf(&d->kernels, "static void %s_task(void *arg, int64_t lo, int64_t hi)\n{\n",
			              kname);
			if (np)
				rl_buf_printf(&d->kernels, "    void *const *a = arg;\n    %s_range(%s, lo, hi);\n}\n\n",
				              kname, unpack.s);
			else
				rl_buf_printf(&d->kernels, "    (void)arg;\n    %s_range(lo, hi);\n}\n\n", kname);
			rl_buf_printf(&d->kernels, "static void %s(%s)\n{\n%s", kname, ps,
			              d->cg.pre.len ? d->cg.pre.s : "");
			rl_buf_printf(&d->kernels, "    void *a[%d] = {", np ? np : 1);
			for (int q = 0; q < np; q++)
				rl_buf_printf(&d->kernels, "%s(void *)%c%d", q ? ", " : "",
				              q >= nin ? 'Y' : 'X', q >= nin ? q - nin : q);
			if (!np)
				rl_buf_printf(&d->kernels, "NULL");
			rl_buf_printf(&d->kernels, "};\n    rl_parallel_for(%s_task, a, %lldll, %lldll);\n}\n\n",
			              kname, (long long)d->cg.par_n,
			              (long long)(d->cg.par_grain != 0 ? d->cg.par_grain : 1));
		}
		rl_buf_free(&params);
		rl_buf_free(&unpack);
		/* a node of constant inputs runs in NAME_init, after the init
		 * statements its own kernel added and before those of the kernels
		 * that read its outputs (packing them); the pool is not started
		 * yet, so it runs on the calling thread */
		if (un->at_init) {
			rl_buf_printf(&d->cg.init, "    /* the constant %s computes, once */\n", kname);
			unit_call(d, un, kname, &d->cg.init);
		}
	}
	return RL_OK;
}

static const char half_helpers[] =
	"static inline __attribute__((unused)) float rl_h2f(uint16_t h)\n"
	"{\n"
	"    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, b;\n"
	"    if (e == 0) {\n"
	"        if (m == 0) {\n"
	"            b = s;\n"
	"        } else {\n"
	"            int k = -1;\n"
	"            do { k++; m <<= 1; } while (!(m & 0x400u));\n"
	"            b = s | ((uint32_t)(112 - k) << 23) | ((m & 0x3ffu) << 13);\n"
	"        }\n"
	"    } else if (e == 31) {\n"
	"        b = s | 0x7f800000u | (m << 13);\n"
	"    } else {\n"
	"        b = s | ((e + 112u) << 23) | (m << 13);\n"
	"    }\n"
	"    float f;\n"
	"    memcpy(&f, &b, 4);\n"
	"    return f;\n"
	"}\n\n"
	"static inline __attribute__((unused)) uint16_t rl_f2h(float f)\n"
	"{\n"
	"    uint32_t x;\n"
	"    memcpy(&x, &f, 4);\n"
	"    uint32_t s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;\n"
	"    if (a >= 0x7f800000u) return (uint16_t)(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));\n"
	"    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);\n"
	"    if (a < 0x38800000u) {\n"
	"        if (a < 0x33000000u) return (uint16_t)s;\n"
	"        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;\n"
	"        int sh = 126 - (int)e;\n"
	"        uint32_t hm = m >> sh, rem = m & ((1u << sh) - 1u), half = 1u << (sh - 1);\n"
	"        if (rem > half || (rem == half && (hm & 1u))) hm++;\n"
	"        return (uint16_t)(s | hm);\n"
	"    }\n"
	"    uint32_t h = (a >> 13) - (112u << 10), rem = a & 0x1fffu;\n"
	"    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;\n"
	"    return (uint16_t)(s | h);\n"
	"}\n\n";

static const char bf16_helpers[] =
	"static inline __attribute__((unused)) float rl_b2f(uint16_t h)\n"
	"{\n"
	"    uint32_t b = (uint32_t)h << 16;\n"
	"    float f;\n"
	"    memcpy(&f, &b, 4);\n"
	"    return f;\n"
	"}\n\n"
	"static inline __attribute__((unused)) uint16_t rl_f2b(float f)\n"
	"{\n"
	"    uint32_t x;\n"
	"    memcpy(&x, &f, 4);\n"
	"    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);\n"
	"    x += 0x7fffu + ((x >> 16) & 1u);\n"
	"    return (uint16_t)(x >> 16);\n"
	"}\n\n";

/* tanh and erf for float: the rational forms of ir/approx.h on one float
 * (rl_vtanh and rl_verf, emit_math.c, are the same on vectors; ir/scalar.c
 * folds constants with them): tanh within 6 ulp, erf within 7; free of
 * branches and calls so loops over them vectorize; NaN passes through, -0
 * stays -0, +-inf give +-1. */
#define RL_CLAMPED_ABS(c)                                                     \
	"    const float a0 = fabsf(x), a = a0 > " RL_APPROX_STR(c) " ? " RL_APPROX_STR(c) " : a0;\n" \
	"    const float s = a * a, s2 = s * s;\n"
static const char tanh_helper[] =
	"static inline __attribute__((unused)) float rl_tanhf(float x)\n"
	"{\n"
	RL_CLAMPED_ABS(RL_TANH_CLAMP)
	"    const float p = " RL_APPROX_STR(RL_TANH_P(s, s2)) ";\n"
	"    const float q = " RL_APPROX_STR(RL_TANH_Q(s, s2)) ";\n"
	"    const float t = a * p / q;\n"
	"    return copysignf(t > 1.0f ? 1.0f : t, x);\n"
	"}\n\n";

static const char erf_helper[] =
	"static inline __attribute__((unused)) float rl_erff(float x)\n"
	"{\n"
	RL_CLAMPED_ABS(RL_ERF_CLAMP)
	"    const float p = " RL_APPROX_STR(RL_ERF_P(s, s2)) ";\n"
	"    const float q = " RL_APPROX_STR(RL_ERF_Q(s, s2)) ";\n"
	"    const float t = a * (p / q);\n"
	"    return copysignf(t > 1.0f ? 1.0f : t, x);\n"
	"}\n\n";
#undef RL_CLAMPED_ABS

/* The helper texts, for the CUDA backend (emit.h). */
const char *const rl_cg_helper_text[4] = {half_helpers, bf16_helpers, tanh_helper, erf_helper};

static void dims_list(const struct rl_shape *s, char *b, size_t n)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < s->rank; i++)
		p += (size_t)snprintf(b + p, n - p, "%s%lld", i ? ", " : "", (long long)s->d[i].v);
	if (!s->rank)
		snprintf(b, n, "0");
}

/* The typed entry's parameters: `const T *input, ..., T *output, ...`
 * (an output that is also an input gets `_out`). */
static void typed_params(struct driver *d, struct rl_buf *b)
{
	const struct rl_graph *g = d->g;
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const struct rl_value *val = &g->values[g->inputs[i]];
		char sn[64];
		sanitize(val->name, sn, sizeof(sn));
		rl_buf_printf(b, "%sconst %s *%s", i ? ", " : "", cg_ctype(val->dtype), sn);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *val = &g->values[g->outputs[i]];
		char sn[64];
		sanitize(val->name, sn, sizeof(sn));
		rl_buf_printf(b, "%s%s *%s%s", i || g->ninputs ? ", " : "", cg_ctype(val->dtype), sn,
		              val->flags & RL_VAL_INPUT ? "_out" : "");
	}
}

/* The typed entry's body from `{`: the pointer tables, then `return CALL(in, out);`
 * where call is e.g. "NAME_run_v(" or "NAME_run_ws_v(ws, ". */
static void typed_body(struct driver *d, const char *call, struct rl_buf *b)
{
	const struct rl_graph *g = d->g;
	rl_buf_printf(b, ")\n{\n    const void *in[%u] = {", g->ninputs + 1);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char sn[64];
		sanitize(g->values[g->inputs[i]].name, sn, sizeof(sn));
		rl_buf_printf(b, "%s%s", i ? ", " : "", sn);
	}
	if (!g->ninputs)
		rl_buf_printf(b, "NULL");
	rl_buf_printf(b, "};\n    void *out[%u] = {", g->noutputs + 1);
	for (uint32_t i = 0; i < g->noutputs; i++) {
		char sn[64];
		sanitize(g->values[g->outputs[i]].name, sn, sizeof(sn));
		rl_buf_printf(b, "%s%s%s", i ? ", " : "", sn,
		              g->values[g->outputs[i]].flags & RL_VAL_INPUT ? "_out" : "");
	}
	rl_buf_printf(b, "};\n    return %sin, out);\n}\n\n", call);
}

static enum rl_status write_files(struct driver *d, const char *c_path,
                                  const char *h_path, const char *w_path,
                                  char *err, size_t errlen)
{
	enum rl_status st = rl_write_file_atomic(h_path, d->h.s, d->h.len, err, errlen);
	if (st != RL_OK)
		return st;
	if (d->side_size) {
		st = rl_write_file_atomic(w_path, d->side, (size_t)d->side_size, err, errlen);
		if (st != RL_OK) {
			remove(h_path);
			return st;
		}
	}
	st = rl_write_file_atomic(c_path, d->c.s, d->c.len, err, errlen);
	if (st != RL_OK) {
		remove(h_path);
		if (d->side_size)
			remove(w_path);
	}
	return st;
}

/* ---- bound inputs ---------------------------------------------------------
 * An input bound to a value at build time (struct rl_binding, --value) was
 * specialized on: the code below is right for that value only. Its bytes are
 * kept as NAME_bound<k>, and NAME_run_v returns -2 before running anything
 * when the caller passes other data, never a silently wrong result. */
static bool input_bound(const struct rl_graph *g, uint32_t pos)
{
	for (uint32_t k = 0; k < g->nbindings; k++)
		if (g->bindings[k].input == pos)
			return true;
	return false;
}

static void emit_bindings(struct driver *d)
{
	const struct rl_graph *g = d->g;
	for (uint32_t k = 0; k < g->nbindings; k++) {
		const struct rl_binding *b = &g->bindings[k];
		const struct rl_value *v = &g->values[g->inputs[b->input]];
		char sb[128];
		rl_buf_printf(&d->c, "/* input %u '%s' (%s[%s]) was bound to these bytes at build "
		              "time */\nstatic const unsigned char %s_bound%u[%zu] = {", b->input,
		              ctext(v->name), rl_dtype_name(v->dtype),
		              rl_shape_str(&v->shape, sb, sizeof(sb)), d->prefix, k,
		              b->nbytes ? b->nbytes : 1);
		const unsigned char *p = b->data;
		for (size_t i = 0; i < b->nbytes; i++)
			rl_buf_printf(&d->c, "%s%u", i ? (i % 16 ? ", " : ",\n    ") : "\n    ", p[i]);
		rl_buf_printf(&d->c, "%s};\n", b->nbytes ? "\n" : "0");
	}
}

/* Output names: NAME.c -> NAME.h, NAME.weights, prefix NAME. */
struct emit_names {
	const char *base;          /* c_path without its folder */
	char prefix[64];           /* C identifier prefix (--prefix, else NAME) */
	char hbase[512], wbase[512];   /* NAME.h, NAME.weights without the folder */
	char h_path[4096], w_path[4096];
	char ws_name[80];          /* PREFIX_ws */
};

static enum rl_status emit_names(const char *c_path, const struct rl_cgen_opts *o,
                                 struct emit_names *nm, char *err, size_t errlen)
{
	size_t cl = strlen(c_path);
	if (cl < 3 || strcmp(c_path + cl - 2, ".c") != 0) {
		snprintf(err, errlen, "%s: the C output must end in .c", c_path);
		return RL_ERR_IO;
	}
	snprintf(nm->h_path, sizeof(nm->h_path), "%.*s.h", (int)(cl - 2), c_path);
	snprintf(nm->w_path, sizeof(nm->w_path), "%.*s.weights", (int)(cl - 2), c_path);
	const char *slash = strrchr(c_path, '/');
	nm->base = slash ? slash + 1 : c_path;
	const char *base = nm->base;
	snprintf(nm->hbase, sizeof(nm->hbase), "%.*s.h", (int)(strlen(base) - 2), base);
	snprintf(nm->wbase, sizeof(nm->wbase), "%.*s.weights", (int)(strlen(base) - 2), base);
	if (o && o->prefix) {
		sanitize(o->prefix, nm->prefix, sizeof(nm->prefix));
	} else {
		char tmp[64];
		snprintf(tmp, sizeof(tmp), "%.*s", (int)(strlen(base) - 2), base);
		sanitize(tmp, nm->prefix, sizeof(nm->prefix));
	}
	snprintf(nm->ws_name, sizeof(nm->ws_name), "%s_ws", nm->prefix);
	return RL_OK;
}

/* Name every constant (c<k>_<value>), choose its form (a string of bytes
 * when large, else an initializer list) and, when all of them together
 * pass wmax, move the large ones into the side file d->side. */
static enum rl_status place_constants(struct driver *d, long long wmax, int64_t *total_out)
{
	struct rl_graph *g = d->g;
	int64_t total_const = 0;
	for (uint32_t v = 0; v < g->nvalues; v++)
		if (d->vi[v].st == ST_CONST && !d->vi[v].at_init)
			total_const += (int64_t)g->values[v].nbytes;
	bool use_side = total_const > wmax;
	uint32_t ncst = 0;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		struct vinfo *vi = &d->vi[v];
		if (vi->st != ST_CONST || vi->at_init)
			continue;
		char sn[56];
		sanitize(g->values[v].name, sn, sizeof(sn));
		snprintf(vi->cname, sizeof(vi->cname), "c%u_%s", ncst++, sn);
		int64_t ne = rl_shape_numel(&g->values[v].shape);
		vi->strform = ne > 0 && g->values[v].nbytes >= RL_CONST_STRING_MIN &&
		              g->values[v].nbytes == (size_t)ne * rl_dtype_size(g->values[v].dtype);
		if (use_side && g->values[v].nbytes >= 1024) {
			vi->strform = false;
			vi->in_side = true;
			vi->off = 16 + d->side_size; /* after the 16-byte header */
			d->side_size += ((int64_t)g->values[v].nbytes + RL_ALIGN - 1) / RL_ALIGN * RL_ALIGN;
		}
	}
	if (d->side_size) {
		int64_t total = 16 + d->side_size;
		d->side = calloc(1, (size_t)total);
		if (!d->side)
			return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory for the weights file");
		memcpy(d->side, "RLWTS001", 8);
		memcpy(d->side + 8, &total, 8);
		for (uint32_t v = 0; v < g->nvalues; v++)
			if (d->vi[v].in_side)
				memcpy(d->side + d->vi[v].off, g->values[v].data, g->values[v].nbytes);
		d->side_size = total;
	}
	*total_out = total_const;
	return RL_OK;
}

/* The .c file up to the kernels: banner, includes, the runtime helpers the
 * kernels use, constants, bound inputs, workspace pointers, statics, and
 * the kernels themselves. */
static void c_prologue(struct driver *d, const struct emit_names *nm, int64_t ws_total,
                       int64_t total_const)
{
	const struct rl_graph *g = d->g;
	const char *prefix = nm->prefix, *base = nm->base, *hbase = nm->hbase;
	bool stat = d->cg.static_mode;
	rl_buf_printf(&d->c, "/*\n * %s - generated by rlopt %s from %s.\n", base, RL_VERSION,
	              ctext(g->path));
	rl_buf_printf(&d->c, " * Do not edit: regenerate instead. Self-contained C11; link with -lm.\n");
	if (stat)
		rl_buf_printf(&d->c, " * Static build: no malloc, no stdio, no threads; the caller's workspace.\n");
	rl_buf_printf(&d->c, " * %u kernels, %lld bytes of workspace, %lld bytes of constants%s.\n */\n",
	              0u, (long long)ws_total, (long long)total_const,
	              d->side_size ? " (large ones in the side file)" : "");
	/* count kernels for the banner (patched in place: same width) */
	unsigned nk = 0;
	for (uint32_t u = 0; u < d->nunits; u++)
		nk += !d->units[u].view;
	{
		char *p = strstr(d->c.s, " * 0 kernels");
		if (p) {
			char tmp[64];
			snprintf(tmp, sizeof(tmp), " * %u kernels", nk);
			/* rebuild the banner line with the real count */
			struct rl_buf nb = {0};
			rl_buf_printf(&nb, "%.*s%s%s", (int)(p - d->c.s), d->c.s, tmp, p + strlen(" * 0 kernels"));
			rl_buf_free(&d->c);
			d->c = nb;
		}
	}
	if (d->cg.any_par) /* pthreads and sysconf under -std=c11 */
		rl_buf_printf(&d->c, "#ifndef _POSIX_C_SOURCE\n#define _POSIX_C_SOURCE 200809L\n#endif\n");
	if (!stat && d->side_size >= RL_HUGE_SIDE) /* madvise under -std=c11 */
		rl_buf_printf(&d->c, "#if defined(__linux__) && !defined(_DEFAULT_SOURCE)\n"
		                    "#define _DEFAULT_SOURCE\n#endif\n");
	rl_buf_printf(&d->c, "#include \"%s\"\n\n", hbase);
	if (stat)
		rl_buf_printf(&d->c, "#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n");
	else
		rl_buf_printf(&d->c, "#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n"
		                    "#include <stdlib.h>\n#include <string.h>\n\n");
	if (!stat && d->side_size >= RL_HUGE_SIDE)
		rl_buf_printf(&d->c, "#ifdef __linux__\n#include <sys/mman.h>\n#endif\n\n");
	if (d->cg.any_simd && stat) /* target clones need ifunc: a loader, not on small targets */
		rl_buf_printf(&d->c, "#ifndef RL_NO_CLONES\n#define RL_NO_CLONES 1\n#endif\n");
	if (d->cg.any_simd)
		rl_emit_rt_vec(&d->c);
	if (d->cg.any_par)
		rl_emit_rt_pool(&d->c);
	if (d->cg.need_half)
		rl_buf_printf(&d->c, "%s", half_helpers);
	if (d->cg.need_bf16)
		rl_buf_printf(&d->c, "%s", bf16_helpers);
	if (d->cg.need_tanh)
		rl_buf_printf(&d->c, "%s", tanh_helper);
	if (d->cg.need_erf)
		rl_buf_printf(&d->c, "%s", erf_helper);
	rl_emit_lowp_helpers(&d->c, d->cg.need_lowp);
	bool any_str = false;
	for (uint32_t v = 0; v < g->nvalues; v++) {
		if (d->vi[v].st == ST_CONST && d->vi[v].strform && !d->vi[v].at_init)
			any_str = true;
	}
	if (any_str)
		rl_buf_printf(&d->c,
		              "/* Large constants are strings of their little-endian bytes. */\n"
		              "#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
		              "#error \"the constants below are little-endian\"\n#endif\n"
		              "#ifdef __GNUC__\n#pragma GCC diagnostic ignored \"-Woverlength-strings\"\n"
		              "#endif\n\n");
	for (uint32_t v = 0; v < g->nvalues; v++)
		if (d->vi[v].st == ST_CONST && !d->vi[v].in_side && !d->vi[v].at_init)
			emit_const_array(d, v);
	emit_bindings(d);
	if (stat) {
		rl_buf_printf(&d->c, "\nstatic unsigned char *%s_ws; /* the caller's workspace during a run, "
		                    "%lld bytes */\n\n", prefix, (long long)ws_total);
	} else {
		rl_buf_printf(&d->c, "\nstatic unsigned char *%s_ws;      /* workspace, %lld bytes */\n",
		              prefix, (long long)ws_total);
		rl_buf_printf(&d->c, "static unsigned char *%s_weights; /* side file, %lld bytes */\n",
		              prefix, (long long)d->side_size);
		if (d->cst_size)
			rl_buf_printf(&d->c, "static unsigned char *%s_cst;     /* constants NAME_init "
			                    "computes, %lld bytes */\n", prefix, (long long)d->cst_size);
		rl_buf_printf(&d->c, "\n");
	}
	cg_gemm_finish(&d->cg);
	if (d->cg.statics.len)
		rl_buf_printf(&d->c, "%s\n", d->cg.statics.s);
	rl_buf_printf(&d->c, "%s", d->kernels.s ? d->kernels.s : "");
}

/* NAME_init (allocates the workspace, reads the side file, runs the
 * kernels' init), NAME_free and NAME_set_threads; none in static mode. */
static void c_lifecycle(struct driver *d, const struct emit_names *nm, int64_t ws_total)
{
	const char *prefix = nm->prefix, *wbase = nm->wbase;
	rl_buf_printf(&d->c, "int %s_init(const char *weights_path)\n{\n", prefix);
	rl_buf_printf(&d->c, "    if (%s_ws)\n        return 0;\n", prefix);
	if (d->side_size) {
		/* a large side file in 2 MiB pages where Linux gives them (THP
		 * "madvise" or "always"): read front to back by the batch-1
		 * products, its 4 KiB pages' walks cost up to 30% in a VM (the
		 * int8 stack of bench_quant.py: 18.5-22.3 -> 14.6-15.7 ms) */
		int huge = d->side_size >= RL_HUGE_SIDE;
		int64_t al = huge ? RL_HUGE_PAGE : RL_ALIGN;
		long long cap = (long long)((d->side_size + al - 1) / al * al);
		rl_buf_printf(&d->c,
		              "    if (!weights_path)\n        weights_path = \"%s\";\n"
		              "    FILE *f = fopen(weights_path, \"rb\");\n"
		              "    if (!f)\n        return -1;\n"
		              "    %s_weights = aligned_alloc(%lld, %lldu);\n",
		              wbase, prefix, (long long)al, cap);
		if (huge)
			rl_buf_printf(&d->c,
			              "#ifdef MADV_HUGEPAGE\n    if (%s_weights)\n"
			              "        madvise(%s_weights, %lldu, MADV_HUGEPAGE); /* before it is read */\n"
			              "#endif\n",
			              prefix, prefix, cap);
		rl_buf_printf(&d->c,
		              "    size_t got = %s_weights ? fread(%s_weights, 1, %lldu, f) : 0;\n"
		              "    int extra = fgetc(f);\n"
		              "    fclose(f);\n"
		              "    if (got != %lldu || extra != EOF || memcmp(%s_weights, \"RLWTS001\", 8) != 0) {\n"
		              "        free(%s_weights);\n        %s_weights = NULL;\n        return -1;\n    }\n",
		              prefix, prefix, (long long)d->side_size, (long long)d->side_size, prefix,
		              prefix, prefix);
	} else {
		rl_buf_printf(&d->c, "    (void)weights_path;\n");
	}
	if (d->cst_size)
		rl_buf_printf(&d->c, "    if (!%s_cst && !(%s_cst = aligned_alloc(%d, %lldu)))\n"
		                    "        return -1;\n",
		              prefix, prefix, RL_ALIGN, (long long)d->cst_size);
	cg_tidy(&d->cg.init); /* the packing loops too (a loop over 1 block, say) */
	if (d->cg.init.len)
		rl_buf_printf(&d->c, "%s", d->cg.init.s);
	if (d->cg.any_par)
		rl_buf_printf(&d->c, "    if (!rl_nthreads)\n        rl_nthreads = rl_default_threads();\n"
		                    "#ifdef RL_THREADS\n    rl_pool_start();\n#endif\n");
	rl_buf_printf(&d->c, "    %s_ws = aligned_alloc(%d, %lldu);\n", prefix, RL_ALIGN,
	              (long long)ws_total);
	rl_buf_printf(&d->c, "    return %s_ws ? 0 : -1;\n}\n\n", prefix);
	rl_buf_printf(&d->c, "void %s_free(void)\n{\n", prefix);
	if (d->cg.any_par)
		rl_buf_printf(&d->c, "#ifdef RL_THREADS\n    rl_pool_stop();\n#endif\n");
	if (d->cg.fini.len)
		rl_buf_printf(&d->c, "%s", d->cg.fini.s);
	if (d->cst_size)
		rl_buf_printf(&d->c, "    free(%s_cst);\n    %s_cst = NULL;\n", prefix, prefix);
	rl_buf_printf(&d->c, "    free(%s_ws);\n    %s_ws = NULL;\n"
	                    "    free(%s_weights);\n    %s_weights = NULL;\n}\n\n",
	              prefix, prefix, prefix, prefix);
	rl_buf_printf(&d->c, "int %s_set_threads(int n)\n{\n    if (n < 1)\n        return -1;\n", prefix);
	if (d->cg.any_par)
		rl_buf_printf(&d->c, "    rl_nthreads = n > RL_MAX_THREADS ? RL_MAX_THREADS : n;\n"
		                    "#ifdef RL_THREADS\n    if (%s_ws)\n        rl_pool_start();\n#endif\n",
		              prefix);
	else /* no kernel is split across threads: nothing to size */
		rl_buf_printf(&d->c, "    /* no kernel of this model is split across threads */\n");
	rl_buf_printf(&d->c, "    return 0;\n}\n\n");
}

/*
 * Per-kernel wall time, compiled in only with -DRL_PROFILE: each kernel's
 * name is redefined, after the kernels and before NAME_run_v, as a macro
 * that times the call (a function-like macro does not expand inside its own
 * body, so the call in it is the function's), and NAME_profile() reads the
 * table and clears it. The run function's text is the same with
 * and without it; the minimum per kernel is there for shared machines,
 * where another process's time lands in some calls. NAME_profile(f) prints the table to f (NULL: only clears
 * it). A kernel split across threads is timed as the caller sees it, fork
 * and join included. Names are the first node's, as in the
 * report's `kernels`, so the two can be set side by side
 * (bench/bench_predict.py --per-kernel).
 */
static void c_profile(struct driver *d)
{
	struct rl_graph *g = d->g;
	const char *prefix = d->prefix;
	int nk = 0;
	for (uint32_t u = 0; u < d->nunits; u++)
		nk += !d->units[u].view && !d->units[u].at_init;
	if (!nk)
		return;
	struct rl_buf *b = &d->c;
	rl_buf_printf(b, "#ifdef RL_PROFILE /* per-kernel wall time: NAME_profile() */\n"
	                 "#include <time.h>\n"
	                 "#define RL_PROF_N %d /* kernels */\n"
	                 "static double rl_prof_s[RL_PROF_N];\n"
	                 "static double rl_prof_min[RL_PROF_N];\n"
	                 "static long rl_prof_n[RL_PROF_N];\n"
	                 "static const char *const rl_prof_name[RL_PROF_N] = {\n", nk);
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct unit *un = &d->units[u];
		if (un->view || un->at_init)
			continue;
		rl_buf_printf(b, "    \"");
		for (const char *c = g->nodes[un->node].name; *c; c++)
			rl_buf_printf(b, *c == '"' || *c == '\\' ? "\\%c" :
			                 (unsigned char)*c < 32 || (unsigned char)*c > 126 ? "?" : "%c", *c);
		rl_buf_printf(b, "\",\n");
	}
	rl_buf_printf(b, "};\n"
	                 "static double rl_prof_now(void)\n{\n"
	                 "    struct timespec t;\n"
	                 "    clock_gettime(CLOCK_MONOTONIC, &t);\n"
	                 "    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;\n}\n"
	                 "#define RL_PROF_CALL(i, call) \\\n"
	                 "    do { \\\n"
	                 "        const double t0_ = rl_prof_now(); \\\n"
	                 "        call; \\\n"
	                 "        const double d_ = rl_prof_now() - t0_; \\\n"
	                 "        rl_prof_s[i] += d_; \\\n"
	                 "        if (!rl_prof_n[i]++ || d_ < rl_prof_min[i]) \\\n"
	                 "            rl_prof_min[i] = d_; \\\n"
	                 "    } while (0)\n");
	int k = 0;
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct unit *un = &d->units[u];
		if (un->view || un->at_init)
			continue;
		char kname[128];
		kernel_name(d, un, kname, sizeof(kname));
		rl_buf_printf(b, "#define %s(...) RL_PROF_CALL(%d, %s(__VA_ARGS__))\n", kname, k++, kname);
	}
	rl_buf_printf(b, "void %s_profile(FILE *f)\n{\n"
	                 "    double all = 0.0;\n"
	                 "    for (int i = 0; i < RL_PROF_N; i++)\n"
	                 "        all += rl_prof_s[i];\n"
	                 "    if (f)\n"
	                 "        fprintf(f, \"kernel\\tcalls\\ttotal_s\\tmean_s\\tmin_s\\tshare\\n\");\n"
	                 "    for (int i = 0; i < RL_PROF_N; i++) {\n"
	                 "        if (f)\n"
	                 "            fprintf(f, \"%%s\\t%%ld\\t%%.9g\\t%%.9g\\t%%.9g\\t%%.4f\\n\", rl_prof_name[i], "
	                 "rl_prof_n[i], rl_prof_s[i],\n"
	                 "                    rl_prof_n[i] ? rl_prof_s[i] / (double)rl_prof_n[i] : 0.0, rl_prof_min[i], "
	                 "all > 0.0 ? rl_prof_s[i] / all : 0.0);\n"
	                 "        rl_prof_s[i] = 0.0;\n"
	                 "        rl_prof_n[i] = 0;\n"
	                 "    }\n}\n"
	                 "#endif /* RL_PROFILE */\n\n", prefix);
}

/* NAME_run_v (static mode: NAME_run_ws_v): one call per kernel in run
 * order, then copies for the outputs not written in place. */
static void c_run_v(struct driver *d, bool dyn)
{
	struct rl_graph *g = d->g;
	const char *prefix = d->prefix;
	bool stat = d->cg.static_mode;
	if (dyn)
		cg_extent_decls(g, prefix, &d->c);
	if (stat)
		rl_buf_printf(&d->c, "int %s_run_ws_v(void *ws, const void *const *in, void *const *out)\n{\n",
		              prefix);
	else
		rl_buf_printf(&d->c, "int %s_run_v(const void *const *in, void *const *out)\n{\n", prefix);
	/* the body first, into its own buffer: `in` and `out` are cast to void
	 * only when no line reads them (a model of constants only) */
	struct rl_buf whole = d->c;
	d->c = (struct rl_buf){0};
	if (stat)
		rl_buf_printf(&d->c, "    if (!ws || ((uintptr_t)ws & %du) != 0)\n        return -1;\n"
		                    "    %s_ws = (unsigned char *)ws;\n", RL_ALIGN - 1, prefix);
	else
		rl_buf_printf(&d->c, "    if (!%s_ws && %s_init(NULL) != 0)\n        return -1;\n", prefix,
		              prefix);
	for (uint32_t k = 0; k < g->nbindings; k++)
		rl_buf_printf(&d->c, "    if (memcmp(in[%u], %s_bound%u, %zu) != 0)\n"
		                    "        return -2; /* not the value it was bound to */\n",
		              g->bindings[k].input, prefix, k, g->bindings[k].nbytes);
	for (uint32_t u = 0; u < d->nunits; u++) {
		const struct unit *un = &d->units[u];
		if (un->view) {
			char b[256];
			value_ptr(d, g->nodes[un->node].out[0], false, b, sizeof(b));
			rl_buf_printf(&d->c, "    /* '%s' (%s): a view of %s, nothing to run */\n",
			              ctext(g->nodes[un->node].name), rl_op_table[g->nodes[un->node].op].name, b);
			continue;
		}
		if (un->at_init)
			continue; /* NAME_init ran it */
		char kname[128];
		kernel_name(d, un, kname, sizeof(kname));
		unit_call(d, un, kname, &d->c);
		if (dyn && un->grp < 0)
			cg_extent_after(g, prefix, un->node, kname, &d->c);
	}
	/* outputs not written in place: copies */
	for (uint32_t i = 0; i < g->noutputs; i++) {
		uint32_t v = g->outputs[i];
		if (d->vi[v].st == ST_OUTPUT && d->vi[v].io == (int)i)
			continue;
		char b[256];
		value_ptr(d, v, false, b, sizeof(b));
		if (d->vi[v].st == ST_OUTPUT)
			snprintf(b, sizeof(b), "out[%d]", d->vi[v].io);
		rl_buf_printf(&d->c, "    memcpy(out[%u], %s, %lld);\n", i, b, (long long)value_bytes(g, v));
	}
	rl_buf_printf(&d->c, "    return 0;\n}\n\n");
	{
		struct rl_buf body = d->c;
		d->c = whole;
		if (!body.s || !strstr(body.s, "in["))
			rl_buf_printf(&d->c, "    (void)in;\n");
		if (!body.s || !strstr(body.s, "out["))
			rl_buf_printf(&d->c, "    (void)out;\n");
		rl_buf_printf(&d->c, "%s", body.s ? body.s : "");
		rl_buf_free(&body);
	}
}

/* The typed entries NAME_run and NAME_run_ws, NAME_run_ws_v in normal mode,
 * and the input and output tables. */
static void c_entries(struct driver *d)
{
	const struct rl_graph *g = d->g;
	const char *prefix = d->prefix;
	bool stat = d->cg.static_mode;
	char callb[160];
	/* typed run; run_ws in both modes (normal mode: NAME_init's weights and
	 * packed constants, the caller's workspace) */
	if (!stat) {
		rl_buf_printf(&d->c, "int %s_run(", prefix);
		typed_params(d, &d->c);
		snprintf(callb, sizeof(callb), "%s_run_v(", prefix);
		typed_body(d, callb, &d->c);
		rl_buf_printf(&d->c,
		              "int %s_run_ws_v(void *ws, const void *const *in, void *const *out)\n{\n"
		              "    if (!ws || ((uintptr_t)ws & %du) != 0)\n        return -1;\n"
		              "    if (!%s_ws && %s_init(NULL) != 0)\n        return -1;\n"
		              "    unsigned char *own = %s_ws;\n"
		              "    %s_ws = (unsigned char *)ws;\n"
		              "    int r = %s_run_v(in, out);\n"
		              "    %s_ws = own;\n    return r;\n}\n\n",
		              prefix, RL_ALIGN - 1, prefix, prefix, prefix, prefix, prefix, prefix);
	}
	rl_buf_printf(&d->c, "int %s_run_ws(void *ws%s", prefix, g->ninputs + g->noutputs ? ", " : "");
	typed_params(d, &d->c);
	snprintf(callb, sizeof(callb), "%s_run_ws_v(ws, ", prefix);
	typed_body(d, callb, &d->c);

	/* io tables */
	for (int io = 0; io < 2; io++) {
		uint32_t cnt = io ? g->noutputs : g->ninputs;
		const uint32_t *list = io ? g->outputs : g->inputs;
		const char *what = io ? "outputs" : "inputs";
		for (uint32_t i = 0; i < cnt; i++) {
			char b[256];
			dims_list(&g->values[list[i]].shape, b, sizeof(b));
			rl_buf_printf(&d->c, "static const long long %s_%s_dims%u[] = {%s};\n", prefix,
			              what, i, b);
		}
		rl_buf_printf(&d->c, "const struct %s_tensor_info %s_%s[%u] = {\n", prefix, prefix, what,
		              cnt ? cnt : 1);
		for (uint32_t i = 0; i < cnt; i++) {
			const struct rl_value *val = &g->values[list[i]];
			rl_buf_printf(&d->c, "    {\"%s\", \"%s\", %d, %d, %s_%s_dims%u, %lldll, %zuu},\n",
			              ctext(val->name), rl_dtype_name(val->dtype), (int)val->dtype,
			              val->shape.rank, prefix, what, i,
			              (long long)rl_shape_numel(&val->shape), val->nbytes ? val->nbytes
			              : (size_t)rl_shape_numel(&val->shape) * rl_dtype_size(val->dtype));
		}
		if (!cnt)
			rl_buf_printf(&d->c, "    {\"\", \"\", 0, 0, NULL, 0, 0},\n");
		rl_buf_printf(&d->c, "};\n");
	}
}

/* The header's opening comment: how to call the model, and each input and
 * output with its type and shape. */
static void h_banner(struct driver *d, const struct emit_names *nm, const char *upper)
{
	const struct rl_graph *g = d->g;
	const char *prefix = nm->prefix, *hbase = nm->hbase;
	bool stat = d->cg.static_mode;
	rl_buf_printf(&d->h, "/*\n * %s - generated by rlopt %s from %s.\n *\n", hbase, RL_VERSION,
	              ctext(g->path));
	if (stat)
		rl_buf_printf(&d->h, " * Static build: no malloc, no stdio, no threads, every weight embedded.\n"
		                    " * Call %s_run_ws(ws, ...) with ws pointing at %s_WORKSPACE_BYTES\n"
		                    " * bytes aligned to %s_WORKSPACE_ALIGN (static storage, say), which the\n"
		                    " * run uses as scratch: nothing in it needs keeping between runs. One run\n"
		                    " * at a time per process. Returns 0 on success, -1 for a NULL or\n"
		                    " * misaligned ws.\n", prefix, upper, upper);
	else
		rl_buf_printf(&d->h, " * Call %s_init() once (it allocates the workspace%s), then %s_run()\n"
		                    " * as often as needed, and %s_free() at the end. Not thread-safe: one\n"
		                    " * run at a time per process. Returns 0 on success, -1 on failure%s.\n"
		                    " * %s_run_ws() runs on the caller's workspace instead (%s_WORKSPACE_BYTES\n"
		                    " * bytes aligned to %s_WORKSPACE_ALIGN).\n",
		              prefix, d->side_size ? " and reads the weights file" : "", prefix, prefix,
		              g->nbindings ? ",\n * -2 when a bound input (below) is not the value it was "
		                             "bound to" : "", prefix, upper, upper);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		const struct rl_value *val = &g->values[g->inputs[i]];
		char sb[128];
		rl_buf_printf(&d->h, " *   input  %u: %s %s[%s]%s\n", i, ctext(val->name),
		              rl_dtype_name(val->dtype), rl_shape_str(&val->shape, sb, sizeof(sb)),
		              input_bound(g, i) ? ", bound at build time (--value): each run must pass "
		              "the same data" : "");
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *val = &g->values[g->outputs[i]];
		char sb[128];
		rl_buf_printf(&d->h, " *   output %u: %s %s[%s]%s\n", i, ctext(val->name),
		              rl_dtype_name(val->dtype), rl_shape_str(&val->shape, sb, sizeof(sb)),
		              val->extent_axis ? " at most (see below)" : "");
	}
	if (g->onnx_io)
		onnx_io_note(g, &d->h);
	rl_buf_printf(&d->h, " * float16 and bfloat16 tensors are passed as uint16_t bit patterns.\n");
	bool io_lowp = false;
	for (uint32_t i = 0; i < g->ninputs + g->noutputs; i++)
		io_lowp |= rl_dtype_is_lowp(g->values[i < g->ninputs ? g->inputs[i]
		                                                    : g->outputs[i - g->ninputs]].dtype);
	if (io_lowp) /* ir/lowp.c */
		rl_buf_printf(&d->h, " * float8 and float4 tensors are passed as their codes, one a uint8_t;\n"
		                    " * int4/int2 one element an int8_t, uint4/uint2 one a uint8_t (unpacked).\n");
	rl_buf_printf(&d->h, " */\n");
}

/* The header's declarations: sizes, the tensor tables and the entries. */
static void h_decls(struct driver *d, const char *upper, const char *guard, int64_t ws_total,
                    bool dyn)
{
	const struct rl_graph *g = d->g;
	const char *prefix = d->prefix;
	bool stat = d->cg.static_mode;
	rl_buf_printf(&d->h, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n", guard, guard);
	rl_buf_printf(&d->h, "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	rl_buf_printf(&d->h, "#define %s_NUM_INPUTS %u\n#define %s_NUM_OUTPUTS %u\n", upper, g->ninputs,
	              upper, g->noutputs);
	rl_buf_printf(&d->h, "#define %s_WORKSPACE_BYTES %lldu\n#define %s_WORKSPACE_ALIGN %d\n\n", upper,
	              (long long)ws_total, upper, RL_ALIGN);
	rl_buf_printf(&d->h, "struct %s_tensor_info {\n    const char *name;\n    const char *dtype;\n"
	                    "    int onnx_dtype;\n    int rank;\n    const long long *dims;\n"
	                    "    long long numel;\n    unsigned long nbytes;\n};\n", prefix);
	rl_buf_printf(&d->h, "extern const struct %s_tensor_info %s_inputs[];\n", prefix, prefix);
	rl_buf_printf(&d->h, "extern const struct %s_tensor_info %s_outputs[];\n\n", prefix, prefix);
	if (!stat) {
		rl_buf_printf(&d->h, "/* weights_path: %s; NULL for the default. */\n",
		              d->side_size ? "the side file NAME.weights" : "unused (weights are embedded)");
		rl_buf_printf(&d->h, "int %s_init(const char *weights_path);\nvoid %s_free(void);\n", prefix,
		              prefix);
		rl_buf_printf(&d->h, "/* Threads the kernels split their work across, the caller's included\n"
		                    " * (default: the online cores; capped at 64). Results do not depend on\n"
		                    " * it. Returns -1 for n < 1. Call before or between runs. */\n"
		                    "int %s_set_threads(int n);\n", prefix);
		rl_buf_printf(&d->h, "/* inputs and outputs in the order of the tables above */\n");
		rl_buf_printf(&d->h, "int %s_run_v(const void *const *in, void *const *out);\n", prefix);
	}
	rl_buf_printf(&d->h, "int %s_run_ws_v(void *ws, const void *const *in, void *const *out);\n",
	              prefix);
	rl_buf_printf(&d->h, "#ifdef RL_PROFILE\n#include <stdio.h>\n"
	                    "/* built with -DRL_PROFILE: each kernel's calls and wall time since the\n"
	                    " * last call, tab-separated, to f (NULL: not printed), then cleared */\n"
	                    "void %s_profile(FILE *f);\n#endif\n", prefix);
	if (dyn)
		cg_extent_header(g, prefix, upper, &d->h);
	if (!stat) {
		rl_buf_printf(&d->h, "int %s_run(", prefix);
		typed_params(d, &d->h);
		rl_buf_printf(&d->h, ");\n");
	}
	rl_buf_printf(&d->h, "int %s_run_ws(void *ws%s", prefix, g->ninputs + g->noutputs ? ", " : "");
	typed_params(d, &d->h);
	rl_buf_printf(&d->h, ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s */\n", guard);
}

static void driver_free(struct driver *d)
{
	for (uint32_t q = 0; q < d->ngrps; q++) {
		free(d->grps[q].nodes);
		free(d->grps[q].in);
		free(d->grps[q].out);
	}
	free(d->grps);
	free(d->grp_of);
	free(d->units);
	free(d->vi);
	free(d->exec);
	free(d->at_init);
	free(d->side);
	rl_buf_free(&d->c);
	rl_buf_free(&d->h);
	rl_buf_free(&d->kernels);
	rl_buf_free(&d->cg.body);
	rl_buf_free(&d->cg.pre);
	rl_buf_free(&d->cg.statics);
	rl_buf_free(&d->cg.init);
	rl_buf_free(&d->cg.fini);
}

/* The C backend, as its phases: output names, run plan (plan()), constants
 * and side file, kernels (emit_kernels()), then the .c file (prologue,
 * init/free, run, entries and tables) and the .h file (banner,
 * declarations), written atomically together. */
enum rl_status rl_emit_c(struct rl_graph *g, const struct rl_cgen_opts *o,
                         const char *c_path, char *err, size_t errlen)
{
	struct driver d = {.g = g, .supports = rl_emit_c_supports, .backend = "C"};
	d.cg.g = g;
	enum rl_status st;
	struct emit_names nm;
	long long wmax = o && o->weights_max >= 0 ? o->weights_max : RL_WEIGHTS_DEFAULT_MAX;
	bool stat = o && o->static_mode;
	if (stat) /* small targets have no file system: every constant embedded */
		wmax = LLONG_MAX;
	g->err[0] = 0;

	if ((st = emit_names(c_path, o, &nm, err, errlen)) != RL_OK)
		return st;
	d.prefix = nm.prefix;
	d.cg.ws_name = nm.ws_name;
	d.cg.static_mode = stat;
	d.init_consts = !stat; /* static mode has no NAME_init */
	d.concat_views = true;

	if (!g->norder && g->nnodes)
		if ((st = rl_graph_toposort(g)) != RL_OK)
			goto fail;
	if ((st = plan(&d)) != RL_OK)
		goto fail;
	int64_t total_const = 0;
	if ((st = place_constants(&d, wmax, &total_const)) != RL_OK)
		goto fail;

	d.cg.scratch_base = (d.ws_size + RL_ALIGN - 1) / RL_ALIGN * RL_ALIGN;
	if ((st = emit_kernels(&d)) != RL_OK)
		goto fail;
	/* static mode has no NAME_init: the emitters leave the runtimes that
	 * allocate or pack at init (GEMM, conv band) alone there */
	RL_ASSERT(!stat || (!d.cg.init.len && !d.cg.fini.len && !d.cg.any_par));
	/* the workspace the caller provides (NAME_WORKSPACE_BYTES): tensors, then
	 * the kernels' scratch (static mode) */
	int64_t ws_total = d.cg.scratch_max ? d.cg.scratch_base + d.cg.scratch_max : d.ws_size;
	if (!ws_total)
		ws_total = RL_ALIGN;

	c_prologue(&d, &nm, ws_total, total_const);
	if (!stat)
		c_lifecycle(&d, &nm, ws_total);
	bool dyn = cg_extent_any(g); /* outputs of data-dependent extent: emit_detect.c */
	c_profile(&d);
	c_run_v(&d, dyn);
	c_entries(&d);

	/* ---- the header ---- */
	char guard[80], upper[64];
	snprintf(upper, sizeof(upper), "%s", nm.prefix);
	for (char *p = upper; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	if (dyn)
		cg_extent_func(g, nm.prefix, upper, &d.c);
	snprintf(guard, sizeof(guard), "%s_H", upper);
	h_banner(&d, &nm, upper);
	h_decls(&d, upper, guard, ws_total, dyn);

	st = write_files(&d, c_path, nm.h_path, nm.w_path, err, errlen);
	driver_free(&d);
	return st;
fail:
	snprintf(err, errlen, "%s", g->err[0] ? g->err : "code generation failed");
	driver_free(&d);
	return st;
}

/* ---- the run plan, for other backends (emit.h) ----------------------------
 * The same plan() the C file is written from, copied out: a backend that
 * uses it runs the same kernels in the same order on the same storage. */
_Static_assert((int)ST_ALIAS == (int)RL_PLAN_ALIAS && (int)ST_WORKSPACE == (int)RL_PLAN_WORKSPACE &&
               (int)ST_INPUT == (int)RL_PLAN_INPUT, "enum storage follows enum rl_plan_storage");

enum rl_status rl_emit_plan(struct rl_graph *g, bool (*supports)(enum rl_op),
                            const char *backend, struct rl_plan *p)
{
	struct driver d = {.g = g, .supports = supports, .backend = backend};
	enum rl_status st = RL_OK;
	memset(p, 0, sizeof(*p));
	g->err[0] = 0;
	if (!g->norder && g->nnodes)
		st = rl_graph_toposort(g);
	if (st == RL_OK)
		st = plan(&d);
	p->vals = calloc((size_t)g->nvalues + 1, sizeof(*p->vals));
	RL_ASSERT(p->vals);
	for (uint32_t v = 0; d.vi && v < g->nvalues; v++)
		p->vals[v] = (struct rl_plan_val){(enum rl_plan_storage)d.vi[v].st, d.vi[v].io,
		                                  d.vi[v].off, d.vi[v].alias};
	p->units = calloc((size_t)d.nunits + 1, sizeof(*p->units));
	RL_ASSERT(p->units);
	for (uint32_t u = 0; u < d.nunits; u++)
		p->units[u] = (struct rl_plan_unit){d.units[u].view, d.units[u].node, d.units[u].grp,
		                                    d.units[u].k};
	p->nunits = d.nunits;
	p->grps = d.grps;
	p->ngrps = d.ngrps;
	p->ws_size = d.ws_size;
	free(d.grp_of);
	free(d.units);
	free(d.vi);
	free(d.exec);
	free(d.at_init);
	return st;
}

void rl_emit_plan_free(struct rl_plan *p)
{
	for (uint32_t q = 0; q < p->ngrps; q++) {
		free(p->grps[q].nodes);
		free(p->grps[q].in);
		free(p->grps[q].out);
	}
	free(p->grps);
	free(p->vals);
	free(p->units);
	memset(p, 0, sizeof(*p));
}

/* Block-scope vector types of a kernel (emit_conv.c, emit_matmul.c). */
void cg_vec_types(struct rl_cgen *cg, const char *T, int es)
{
	int ind = cg->indent;
	/* 32 bytes on any x86-64, not only under -mavx: a plain `cc -O2` build
	 * has no __AVX__, yet its AVX2 and AVX-512 clones (RL_TARGETS) run
	 * these loops, and with 16-byte vectors they ran on half registers
	 * (ppocr_cls's 5x5 depthwise convs 62.7 -> 47.7 and 109.5 -> 81.8 us,
	 * the model 1.08 -> 0.91 ms, one thread, Zen 3, same bits); the
	 * baseline clone takes two SSE registers per vector */
	cg_line(cg, "/* SIMD vectors (GCC/Clang vector extension), 32 bytes on x86-64 or with AVX, else 16;");
	cg_line(cg, " * vecu is the same vector at any address */");
	for (int w = 32; w >= 16; w -= 16) {
		cg->indent = -1;
		cg_line(cg, "%s", w == 32 ? "#if defined(__AVX__) || defined(__x86_64__)" : "#else");
		cg->indent = ind;
		cg_line(cg, "typedef %s vec __attribute__((vector_size(%d)));", T, w);
		cg_line(cg, "typedef %s vecu __attribute__((vector_size(%d), aligned(%d), may_alias));",
		        T, w, es);
	}
	cg->indent = -1;
	cg_line(cg, "#endif");
	cg->indent = ind;
	cg_line(cg, "enum { VL = (int)(sizeof(vec) / sizeof(%s)) }; /* lanes */", T);
}
