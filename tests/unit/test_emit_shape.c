/*
 * test_emit_shape.c - the C backend's data-movement, normalization and
 * reduction kernels (backends/c/emit_shape.c, emit_norm.c, emit_reduce.c).
 *
 * Graphs are built by hand with the ir.h API, inferred, and written with
 * rl_emit_c() into a fresh temporary folder; the C must compile with
 * `cc -std=c11 -Wall -Wextra -Werror -O2`. One graph per dtype holds every
 * shape op (constant parameters and run-time ones: Gather indices, Trilu's k,
 * a Slice and a Pad whose parameters are graph inputs), another every norm
 * and reduce op in both loop shapes (reduced trailing group, kept trailing
 * group). Two more link a small main and compare with values worked out by
 * hand: a transpose, a reversed slice, reflect padding, reductions over the
 * leading and the trailing axis, softmax along a middle axis, ArgMax with
 * select_last_index, and reductions whose axes arrive at run time.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "testutil.h"

/* ---- building graphs ---------------------------------------------------- */

static struct rl_graph *new_graph(int opset)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = opset;
	g->path = "test_emit_shape";
	return g;
}

static uint32_t add_input(struct rl_graph *g, const char *name, enum rl_dtype dt, int rank,
                          const int64_t *dims)
{
	struct rl_shape s;
	rl_shape_set(&s, rank, dims);
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	g->values[v].flags |= RL_VAL_INPUT;
	g->inputs = realloc(g->inputs, (g->ninputs + 1) * sizeof(*g->inputs));
	g->inputs[g->ninputs++] = v;
	return v;
}

/* 1-D int64 constant */
static uint32_t add_ints(struct rl_graph *g, int n, const int64_t *vals)
{
	char name[32];
	snprintf(name, sizeof(name), "c%u", g->nvalues);
	int64_t d = n;
	struct rl_shape s;
	rl_shape_set(&s, 1, &d);
	uint32_t v = rl_graph_add_value(g, name, RL_DT_INT64, &s);
	int64_t *data = rl_arena_alloc(g, (size_t)(n ? n : 1) * sizeof(int64_t));
	memcpy(data, vals, (size_t)n * sizeof(int64_t));
	rl_value_set_data(g, v, data, (size_t)n * sizeof(int64_t));
	return v;
}

static void mark_output(struct rl_graph *g, uint32_t y)
{
	g->values[y].flags |= RL_VAL_OUTPUT;
	g->outputs = realloc(g->outputs, (g->noutputs + 1) * sizeof(*g->outputs));
	g->outputs[g->noutputs++] = y;
}

/* Add a node with `nout` fresh graph outputs; returns the first. A declared
 * shape (rank >= 0) is given to the first output, as a model's value_info
 * would, for outputs that inference cannot work out alone. */
static uint32_t add_node_n(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin,
                           int nout, uint32_t *node, int drank, const int64_t *ddims)
{
	uint32_t y[8];
	for (int k = 0; k < nout; k++) {
		char name[64];
		snprintf(name, sizeof(name), "y%u", g->nvalues);
		y[k] = rl_graph_add_value(g, name, RL_DT_UNDEFINED, NULL);
	}
	if (drank >= 0)
		rl_shape_set(&g->values[y[0]].shape, drank, ddims);
	uint32_t id = rl_graph_add_node(g, op, NULL, in, nin, y, nout);
	for (int k = 0; k < nout; k++)
		mark_output(g, y[k]);
	if (node)
		*node = id;
	return y[0];
}

static uint32_t add_node(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin,
                         uint32_t *node)
{
	return add_node_n(g, op, in, nin, 1, node, -1, NULL);
}

static void set_int(struct rl_graph *g, uint32_t node, const char *name, int64_t v)
{
	rl_node_add_attr(g, node, name, RL_ATTR_INT)->i = v;
}

static void set_ints(struct rl_graph *g, uint32_t node, const char *name, int n,
                     const int64_t *v)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_INTS);
	a->n = n;
	a->ints = rl_arena_alloc(g, (size_t)n * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
}

static void set_str(struct rl_graph *g, uint32_t node, const char *name, const char *s)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_STRING);
	a->s = rl_arena_strdup(g, s);
	a->n = (int)strlen(s);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* Infer, emit DIR/m.c and compile it warning-free; returns DIR (free with
 * tu_rmtree + free). */
static char *emit_and_compile(struct rl_graph *g)
{
	char err[1024] = "", path[4200];
	enum rl_status st = rl_graph_infer(g);
	cr_assert_eq(st, RL_OK, "inference failed: %s", g->err);
	char *dir = tu_tmpdir();
	cr_assert(dir);
	snprintf(path, sizeof(path), "%s/m.c", dir);
	st = rl_emit_c(g, NULL, path, err, sizeof(err));
	cr_assert_eq(st, RL_OK, "emit failed: %s", err);
	int rc = sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -c m.c -o m.o 2> cc.log"
	            " || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "generated C in %s does not compile cleanly", dir);
	return dir;
}

/* Link main_src against the model, run it, return its stdout (malloc'd). */
static char *run_model(struct rl_graph *g, const char *main_src)
{
	char *dir = emit_and_compile(g);
	char path[4200];
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, main_src, strlen(main_src)), 0);
	int rc = sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 main.c m.o -lm -o run 2> cc.log"
	            " && ./run > out.txt || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "building or running the program in %s failed", dir);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = 0;
	fclose(f);
	tu_rmtree(dir);
	free(dir);
	return buf;
}

static void compile_only(struct rl_graph *g)
{
	char *dir = emit_and_compile(g);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

/* ---- every shape op compiles cleanly, per dtype -------------------------- */

static void compile_shape_ops(enum rl_dtype dt)
{
	struct rl_graph *g = new_graph(19); /* Pad's wrap mode */
	const int64_t d234[] = {2, 3, 4}, d2[] = {2}, d1[] = {1}, d4[] = {1, 8, 2, 4};
	const int64_t d143[] = {1, 4, 3};
	uint32_t x = add_input(g, "x", dt, 3, d234);
	uint32_t x4 = add_input(g, "x4", dt, 4, d4);
	uint32_t ix = add_input(g, "ix", RL_DT_INT64, 1, d2);
	uint32_t k = add_input(g, "k", RL_DT_INT64, 0, d1);
	uint32_t st = add_input(g, "starts", RL_DT_INT64, 1, d1);
	uint32_t pads = add_input(g, "pads", RL_DT_INT64, 1, d2);
	uint32_t node;

	const int64_t shp[] = {4, -1}, ax0[] = {0}, ax02[] = {0, 2}, perm[] = {2, 0, 1};
	uint32_t in2[2] = {x, add_ints(g, 2, shp)};
	add_node(g, RL_OP_Reshape, in2, 2, NULL);
	add_node(g, RL_OP_Flatten, &x, 1, &node);
	set_int(g, node, "axis", 2);
	in2[1] = add_ints(g, 2, ax02);
	uint32_t u = add_node(g, RL_OP_Unsqueeze, in2, 2, NULL);
	in2[0] = u;
	add_node(g, RL_OP_Squeeze, in2, 2, NULL);
	add_node(g, RL_OP_Transpose, &x, 1, &node);
	set_ints(g, node, "perm", 3, perm);
	add_node(g, RL_OP_Transpose, &x, 1, NULL);
	uint32_t cin[3] = {x, x, x};
	add_node(g, RL_OP_Concat, cin, 3, &node);
	set_int(g, node, "axis", -2);
	add_node_n(g, RL_OP_Split, &x, 1, 2, &node, -1, NULL);
	set_int(g, node, "axis", 2);
	set_int(g, node, "num_outputs", 2);
	/* Slice with constant parameters, negative step */
	const int64_t s0[] = {-1, 0}, e0[] = {INT64_MIN, 3}, a0[] = {2, 1}, p0[] = {-2, 2};
	uint32_t sin[5] = {x, add_ints(g, 2, s0), add_ints(g, 2, e0), add_ints(g, 2, a0),
	                   add_ints(g, 2, p0)};
	add_node(g, RL_OP_Slice, sin, 5, NULL);
	/* Slice whose starts arrive at run time (declared output shape) */
	const int64_t e1[] = {2}, a1[] = {1}, ds[] = {2, 1, 4};
	uint32_t sin2[4] = {x, st, add_ints(g, 1, e1), add_ints(g, 1, a1)};
	add_node_n(g, RL_OP_Slice, sin2, 4, 1, NULL, 3, ds);
	uint32_t gin[2] = {x, ix};
	add_node(g, RL_OP_Gather, gin, 2, &node);
	set_int(g, node, "axis", 1);
	add_node(g, RL_OP_Gather, gin, 2, NULL);
	const int64_t ge[] = {0, 1, -1, 2};
	int64_t dge[] = {1, 2, 2};
	struct rl_shape sge;
	rl_shape_set(&sge, 3, dge);
	uint32_t gev = rl_graph_add_value(g, "ge", RL_DT_INT64, &sge);
	int64_t *ged = rl_arena_alloc(g, sizeof(ge));
	memcpy(ged, ge, sizeof(ge));
	rl_value_set_data(g, gev, ged, sizeof(ge));
	uint32_t gein[2] = {x, gev};
	add_node(g, RL_OP_GatherElements, gein, 2, &node);
	set_int(g, node, "axis", 2);
	const int64_t eshape[] = {2, 2, 3, 4}, reps[] = {1, 2, 3};
	uint32_t ein[2] = {x, add_ints(g, 4, eshape)};
	add_node(g, RL_OP_Expand, ein, 2, NULL);
	uint32_t tin[2] = {x, add_ints(g, 3, reps)};
	add_node(g, RL_OP_Tile, tin, 2, NULL);
	static const char *modes[] = {"constant", "reflect", "edge", "wrap"};
	const int64_t pd[] = {1, 0, -1, 0, 2, 1};
	for (int m = 0; m < 4; m++) {
		const int64_t *pp = pd;
		int64_t pos[6] = {1, 0, 1, 0, 2, 1};
		if (m)
			pp = pos;
		uint32_t pin[2] = {x, add_ints(g, 6, pp)};
		add_node(g, RL_OP_Pad, pin, 2, &node);
		set_str(g, node, "mode", modes[m]);
	}
	/* Pad along one axis with run-time pads (declared output shape) */
	const int64_t pax[] = {1}, dp[] = {2, 6, 4};
	uint32_t pin2[4] = {x, pads, RL_NONE, add_ints(g, 1, pax)};
	add_node_n(g, RL_OP_Pad, pin2, 4, 1, &node, 3, dp);
	set_str(g, node, "mode", "edge");
	add_node(g, RL_OP_DepthToSpace, &x4, 1, &node);
	set_int(g, node, "blocksize", 2);
	set_str(g, node, "mode", "CRD");
	add_node(g, RL_OP_DepthToSpace, &x4, 1, &node);
	set_int(g, node, "blocksize", 2);
	add_node(g, RL_OP_SpaceToDepth, &x4, 1, &node);
	set_int(g, node, "blocksize", 2);
	uint32_t trin[2] = {x, k};
	add_node(g, RL_OP_Trilu, trin, 2, NULL);
	add_node(g, RL_OP_Trilu, &x, 1, &node);
	set_int(g, node, "upper", 0);
	(void)d143;
	(void)ax0;
	compile_only(g);
}

Test(emit_shape, compiles_shape_float32) { compile_shape_ops(RL_DT_FLOAT); }
Test(emit_shape, compiles_shape_float16) { compile_shape_ops(RL_DT_FLOAT16); }
Test(emit_shape, compiles_shape_int64) { compile_shape_ops(RL_DT_INT64); }
Test(emit_shape, compiles_shape_uint8) { compile_shape_ops(RL_DT_UINT8); }
Test(emit_shape, compiles_shape_bool) { compile_shape_ops(RL_DT_BOOL); }

/* ---- norm and reduce ops compile cleanly, per dtype ----------------------- */

static void compile_norm_reduce(enum rl_dtype dt)
{
	bool fl = rl_dtype_is_float(dt);
	struct rl_graph *g = new_graph(18);
	const int64_t d2345[] = {2, 3, 4, 5}, d3[] = {3}, d45[] = {4, 5}, d1[] = {1};
	const int64_t dbig[] = {2, 3, 600};
	uint32_t x = add_input(g, "x", dt, 4, d2345);
	uint32_t xb = add_input(g, "xb", dt, 3, dbig);
	uint32_t axr = add_input(g, "axes", RL_DT_INT64, 1, d1);
	uint32_t node;
	if (fl) {
		uint32_t c[4];
		for (int i = 0; i < 4; i++) {
			char n[8];
			snprintf(n, sizeof(n), "p%d", i);
			c[i] = add_input(g, n, dt, 1, d3);
		}
		uint32_t bn[5] = {x, c[0], c[1], c[2], c[3]};
		add_node(g, RL_OP_BatchNormalization, bn, 5, NULL);
		add_node_n(g, RL_OP_BatchNormalization, bn, 5, 3, &node, -1, NULL);
		set_int(g, node, "training_mode", 1);
		uint32_t in3[3] = {x, c[0], c[1]};
		add_node(g, RL_OP_InstanceNormalization, in3, 3, NULL);
		uint32_t s45 = add_input(g, "s45", dt, 2, d45);
		uint32_t ln[3] = {x, s45, s45};
		add_node_n(g, RL_OP_LayerNormalization, ln, 3, 3, &node, -1, NULL);
		set_int(g, node, "axis", -2);
		add_node(g, RL_OP_LRN, &x, 1, &node);
		set_int(g, node, "size", 3);
		static const enum rl_op sm[] = {RL_OP_Softmax, RL_OP_LogSoftmax, RL_OP_Hardmax};
		for (int i = 0; i < 3; i++) {
			add_node(g, sm[i], &x, 1, NULL);              /* last axis: rows */
			add_node(g, sm[i], &x, 1, &node);             /* middle axis: lanes */
			set_int(g, node, "axis", 1);
			add_node(g, sm[i], &xb, 1, &node);            /* more lanes than a tile */
			set_int(g, node, "axis", 1);
		}
	}
	static const enum rl_op red[] = {
		RL_OP_ReduceMean, RL_OP_ReduceSum, RL_OP_ReduceMax, RL_OP_ReduceMin,
		RL_OP_ReduceProd, RL_OP_ReduceL1, RL_OP_ReduceL2, RL_OP_ReduceSumSquare,
		RL_OP_ReduceLogSum, RL_OP_ReduceLogSumExp,
	};
	const int64_t a13[] = {1, 3}, a02[] = {0, 2}, dr[] = {2, 3, 4, 1};
	for (size_t i = 0; i < sizeof(red) / sizeof(red[0]); i++) {
		if (dt == RL_DT_BOOL && red[i] != RL_OP_ReduceMax && red[i] != RL_OP_ReduceMin)
			continue;
		uint32_t in2[2] = {x, add_ints(g, 2, a13)};
		add_node(g, red[i], in2, 2, NULL);                /* trailing group reduced */
		in2[1] = add_ints(g, 2, a02);
		add_node(g, red[i], in2, 2, &node);               /* trailing group kept */
		set_int(g, node, "keepdims", 0);
		in2[1] = add_ints(g, 2, a02);
		in2[0] = xb;
		add_node(g, red[i], in2, 2, NULL);                /* kept group wider than a tile */
		add_node(g, red[i], &x, 1, NULL);                 /* everything */
		in2[0] = x;
		in2[1] = axr;                                     /* axes at run time */
		add_node_n(g, red[i], in2, 2, 1, NULL, 4, dr);
	}
	if (dt != RL_DT_BOOL) {
		add_node(g, RL_OP_ArgMax, &x, 1, &node);
		set_int(g, node, "axis", 1);
		set_int(g, node, "select_last_index", 1);
		add_node(g, RL_OP_ArgMin, &x, 1, &node);
		set_int(g, node, "axis", -1);
		set_int(g, node, "keepdims", 0);
		add_node(g, RL_OP_ArgMax, &xb, 1, &node);
		set_int(g, node, "axis", 1);
	}
	compile_only(g);
}

Test(emit_shape, compiles_norm_reduce_float32) { compile_norm_reduce(RL_DT_FLOAT); }
Test(emit_shape, compiles_norm_reduce_float64) { compile_norm_reduce(RL_DT_DOUBLE); }
Test(emit_shape, compiles_norm_reduce_float16) { compile_norm_reduce(RL_DT_FLOAT16); }
Test(emit_shape, compiles_norm_reduce_bfloat16) { compile_norm_reduce(RL_DT_BFLOAT16); }
Test(emit_shape, compiles_norm_reduce_int32) { compile_norm_reduce(RL_DT_INT32); }
Test(emit_shape, compiles_norm_reduce_uint8) { compile_norm_reduce(RL_DT_UINT8); }
Test(emit_shape, compiles_norm_reduce_bool) { compile_norm_reduce(RL_DT_BOOL); }

/* ---- generated code computes the right values ----------------------------- */

Test(emit_shape, runs_movement)
{
	struct rl_graph *g = new_graph(18);
	const int64_t d23[] = {2, 3}, d3[] = {3}, d1[] = {1};
	uint32_t x = add_input(g, "x", RL_DT_FLOAT, 2, d23);
	uint32_t v = add_input(g, "v", RL_DT_FLOAT, 1, d3);
	uint32_t ix = add_input(g, "ix", RL_DT_INT32, 1, d1);
	uint32_t node;
	add_node(g, RL_OP_Transpose, &x, 1, NULL);                  /* out 0 */
	const int64_t st[] = {-1}, en[] = {INT64_MIN}, ax[] = {1}, sp[] = {-2};
	uint32_t sin[5] = {x, add_ints(g, 1, st), add_ints(g, 1, en), add_ints(g, 1, ax),
	                   add_ints(g, 1, sp)};
	add_node(g, RL_OP_Slice, sin, 5, NULL);                     /* out 1: x[:, ::-2] */
	const int64_t pads[] = {2, 1};
	uint32_t pin[2] = {v, add_ints(g, 2, pads)};
	add_node(g, RL_OP_Pad, pin, 2, &node);                      /* out 2: reflect */
	set_str(g, node, "mode", "reflect");
	uint32_t gin[2] = {x, ix};
	add_node(g, RL_OP_Gather, gin, 2, &node);                   /* out 3: x[:, ix] */
	set_int(g, node, "axis", 1);
	const int64_t reps[] = {1, 2};
	uint32_t tin[2] = {x, add_ints(g, 2, reps)};
	add_node(g, RL_OP_Tile, tin, 2, NULL);                      /* out 4 */
	add_node(g, RL_OP_Trilu, &x, 1, NULL);                      /* out 5: upper, k = 0 */

	const char *src =
		"#include <stdio.h>\n#include <stdint.h>\n#include \"m.h\"\n"
		"static void pr(const float *p, int n)\n{\n"
		"    for (int i = 0; i < n; i++) printf(\"%g \", p[i]);\n    printf(\"\\n\");\n}\n"
		"int main(void)\n{\n"
		"    float x[6] = {1, 2, 3, 4, 5, 6}, v[3] = {7, 8, 9};\n"
		"    int32_t ix[1] = {-1};\n"
		"    float t[6], s[4], p[6], ga[2], ti[12], tr[6];\n"
		"    const void *in[4] = {x, v, ix, 0};\n"
		"    void *out[6] = {t, s, p, ga, ti, tr};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    pr(t, 6); pr(s, 4); pr(p, 6); pr(ga, 2); pr(ti, 12); pr(tr, 6);\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = run_model(g, src);
	cr_assert_str_eq(got,
	                 "1 4 2 5 3 6 \n"              /* transpose of [[1 2 3] [4 5 6]] */
	                 "3 1 6 4 \n"                  /* every second column, backwards */
	                 "9 8 7 8 9 8 \n"              /* reflect: 2 before, 1 after */
	                 "3 6 \n"                      /* index -1: the last column */
	                 "1 2 3 1 2 3 4 5 6 4 5 6 \n"  /* columns repeated twice */
	                 "1 2 3 0 5 6 \n");            /* upper triangle */
	free(got);
	rl_graph_free(g);
}

Test(emit_shape, runs_reduce_norm)
{
	struct rl_graph *g = new_graph(18);
	const int64_t d23[] = {2, 3}, d1[] = {1}, d232[] = {2, 3, 2}, d13[] = {1, 3};
	uint32_t x = add_input(g, "x", RL_DT_FLOAT, 2, d23);
	uint32_t y = add_input(g, "y", RL_DT_FLOAT, 3, d232);
	uint32_t axr = add_input(g, "axes", RL_DT_INT64, 1, d1);
	uint32_t node;
	const int64_t a0[] = {0}, a1[] = {-1};
	uint32_t in2[2] = {x, add_ints(g, 1, a0)};
	add_node(g, RL_OP_ReduceSum, in2, 2, NULL);                 /* out 0: column sums */
	in2[1] = add_ints(g, 1, a1);
	add_node(g, RL_OP_ReduceMax, in2, 2, &node);                /* out 1: row max */
	set_int(g, node, "keepdims", 0);
	add_node(g, RL_OP_ReduceLogSumExp, &x, 1, NULL);            /* out 2: all */
	add_node(g, RL_OP_Softmax, &y, 1, &node);                   /* out 3: middle axis */
	set_int(g, node, "axis", 1);
	add_node(g, RL_OP_ArgMax, &y, 1, &node);                    /* out 4: last index */
	set_int(g, node, "axis", 1);
	set_int(g, node, "select_last_index", 1);
	uint32_t rin[2] = {x, axr};
	add_node_n(g, RL_OP_ReduceMean, rin, 2, 1, NULL, 2, d13);   /* out 5: axes at run time */

	const char *src =
		"#include <math.h>\n#include <stdio.h>\n#include <stdint.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    float x[6] = {1, 2, 3, 4, 5, 6};\n"
		"    float y[12] = {0, 1, 0, 1, 0, 1,  1, 1, 1, 2, 1, 0};\n"
		"    int64_t axes[1] = {0};\n"
		"    float cs[3], rm[2], lse[1], sm[12], mean[3];\n"
		"    int64_t am[4];\n"
		"    const void *in[4] = {x, y, axes, 0};\n"
		"    void *out[6] = {cs, rm, lse, sm, am, mean};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    printf(\"%g %g %g | %g %g | %.4f\\n\", cs[0], cs[1], cs[2], rm[0], rm[1], lse[0]);\n"
		"    for (int i = 0; i < 12; i++) printf(\"%.4f \", sm[i]);\n    printf(\"\\n\");\n"
		"    for (int i = 0; i < 4; i++) printf(\"%d \", (int)am[i]);\n    printf(\"\\n\");\n"
		"    printf(\"%g %g %g\\n\", mean[0], mean[1], mean[2]);\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = run_model(g, src);
	/* log(sum(exp(1..6))) = 6.4562; softmax along the middle axis of
	 * [[0 1] [0 1] [0 1]] is 1/3 everywhere, of [[1 1] [1 2] [1 0]] is
	 * (e, e, e)/3e for column 0 and (e, e^2, 1)/(e + e^2 + 1) for column 1 */
	cr_assert_str_eq(got,
	                 "5 7 9 | 3 6 | 6.4562\n"
	                 "0.3333 0.3333 0.3333 0.3333 0.3333 0.3333 "
	                 "0.3333 0.2447 0.3333 0.6652 0.3333 0.0900 \n"
	                 "2 2 2 1 \n"
	                 "2.5 3.5 4.5\n");
	free(got);
	rl_graph_free(g);
}
