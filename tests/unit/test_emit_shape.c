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

static void compile_only(struct rl_graph *g)
{
	char *dir = tu_emit_compile(g);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

/* ---- every shape op compiles cleanly, per dtype -------------------------- */

static void compile_shape_ops(enum rl_dtype dt)
{
	struct rl_graph *g = tu_graph_new(19, "test_emit_shape"); /* Pad's wrap mode */
	const int64_t d234[] = {2, 3, 4}, d2[] = {2}, d1[] = {1}, d4[] = {1, 8, 2, 4};
	const int64_t d143[] = {1, 4, 3};
	uint32_t x = tu_input(g, "x", dt, tu_dims(3, d234));
	uint32_t x4 = tu_input(g, "x4", dt, tu_dims(4, d4));
	uint32_t ix = tu_input(g, "ix", RL_DT_INT64, tu_dims(1, d2));
	uint32_t k = tu_input(g, "k", RL_DT_INT64, tu_dims(0, d1));
	uint32_t st = tu_input(g, "starts", RL_DT_INT64, tu_dims(1, d1));
	uint32_t pads = tu_input(g, "pads", RL_DT_INT64, tu_dims(1, d2));
	uint32_t node;

	const int64_t shp[] = {4, -1}, ax0[] = {0}, ax02[] = {0, 2}, perm[] = {2, 0, 1};
	uint32_t in2[2] = {x, tu_ints(g, NULL, 2, shp)};
	tu_add_flow(g, RL_OP_Reshape, in2, 2, 1, NULL);
	tu_add_flow(g, RL_OP_Flatten, &x, 1, 1, &node);
	tu_attr_i(g, node, "axis", 2);
	in2[1] = tu_ints(g, NULL, 2, ax02);
	uint32_t u = tu_add_flow(g, RL_OP_Unsqueeze, in2, 2, 1, NULL);
	in2[0] = u;
	tu_add_flow(g, RL_OP_Squeeze, in2, 2, 1, NULL);
	tu_add_flow(g, RL_OP_Transpose, &x, 1, 1, &node);
	tu_attr_ints(g, node, "perm", 3, perm);
	tu_add_flow(g, RL_OP_Transpose, &x, 1, 1, NULL);
	uint32_t cin[3] = {x, x, x};
	tu_add_flow(g, RL_OP_Concat, cin, 3, 1, &node);
	tu_attr_i(g, node, "axis", -2);
	tu_add_flow(g, RL_OP_Split, &x, 1, 2, &node);
	tu_attr_i(g, node, "axis", 2);
	tu_attr_i(g, node, "num_outputs", 2);
	/* Slice with constant parameters, negative step */
	const int64_t s0[] = {-1, 0}, e0[] = {INT64_MIN, 3}, a0[] = {2, 1}, p0[] = {-2, 2};
	uint32_t sin[5] = {x, tu_ints(g, NULL, 2, s0), tu_ints(g, NULL, 2, e0), tu_ints(g, NULL, 2, a0),
	                   tu_ints(g, NULL, 2, p0)};
	tu_add_flow(g, RL_OP_Slice, sin, 5, 1, NULL);
	/* Slice whose starts arrive at run time (declared output shape) */
	const int64_t e1[] = {2}, a1[] = {1}, ds[] = {2, 1, 4};
	uint32_t sin2[4] = {x, st, tu_ints(g, NULL, 1, e1), tu_ints(g, NULL, 1, a1)};
	tu_declare(g, tu_add_flow(g, RL_OP_Slice, sin2, 4, 1, NULL), 3, ds);
	uint32_t gin[2] = {x, ix};
	tu_add_flow(g, RL_OP_Gather, gin, 2, 1, &node);
	tu_attr_i(g, node, "axis", 1);
	tu_add_flow(g, RL_OP_Gather, gin, 2, 1, NULL);
	const int64_t ge[] = {0, 1, -1, 2};
	int64_t dge[] = {1, 2, 2};
	struct rl_shape sge;
	rl_shape_set(&sge, 3, dge);
	uint32_t gev = rl_graph_add_value(g, "ge", RL_DT_INT64, &sge);
	int64_t *ged = rl_arena_alloc(g, sizeof(ge));
	memcpy(ged, ge, sizeof(ge));
	rl_value_set_data(g, gev, ged, sizeof(ge));
	uint32_t gein[2] = {x, gev};
	tu_add_flow(g, RL_OP_GatherElements, gein, 2, 1, &node);
	tu_attr_i(g, node, "axis", 2);
	const int64_t eshape[] = {2, 2, 3, 4}, reps[] = {1, 2, 3};
	uint32_t ein[2] = {x, tu_ints(g, NULL, 4, eshape)};
	tu_add_flow(g, RL_OP_Expand, ein, 2, 1, NULL);
	uint32_t tin[2] = {x, tu_ints(g, NULL, 3, reps)};
	tu_add_flow(g, RL_OP_Tile, tin, 2, 1, NULL);
	static const char *modes[] = {"constant", "reflect", "edge", "wrap"};
	const int64_t pd[] = {1, 0, -1, 0, 2, 1};
	for (int m = 0; m < 4; m++) {
		const int64_t *pp = pd;
		int64_t pos[6] = {1, 0, 1, 0, 2, 1};
		if (m)
			pp = pos;
		uint32_t pin[2] = {x, tu_ints(g, NULL, 6, pp)};
		tu_add_flow(g, RL_OP_Pad, pin, 2, 1, &node);
		tu_attr_s(g, node, "mode", modes[m]);
	}
	/* Pad along one axis with run-time pads (declared output shape) */
	const int64_t pax[] = {1}, dp[] = {2, 6, 4};
	uint32_t pin2[4] = {x, pads, RL_NONE, tu_ints(g, NULL, 1, pax)};
	tu_declare(g, tu_add_flow(g, RL_OP_Pad, pin2, 4, 1, &node), 3, dp);
	tu_attr_s(g, node, "mode", "edge");
	tu_add_flow(g, RL_OP_DepthToSpace, &x4, 1, 1, &node);
	tu_attr_i(g, node, "blocksize", 2);
	tu_attr_s(g, node, "mode", "CRD");
	tu_add_flow(g, RL_OP_DepthToSpace, &x4, 1, 1, &node);
	tu_attr_i(g, node, "blocksize", 2);
	tu_add_flow(g, RL_OP_SpaceToDepth, &x4, 1, 1, &node);
	tu_attr_i(g, node, "blocksize", 2);
	uint32_t trin[2] = {x, k};
	tu_add_flow(g, RL_OP_Trilu, trin, 2, 1, NULL);
	tu_add_flow(g, RL_OP_Trilu, &x, 1, 1, &node);
	tu_attr_i(g, node, "upper", 0);
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
	struct rl_graph *g = tu_graph_new(18, "test_emit_shape");
	const int64_t d2345[] = {2, 3, 4, 5}, d3[] = {3}, d45[] = {4, 5}, d1[] = {1};
	const int64_t dbig[] = {2, 3, 600};
	uint32_t x = tu_input(g, "x", dt, tu_dims(4, d2345));
	uint32_t xb = tu_input(g, "xb", dt, tu_dims(3, dbig));
	uint32_t axr = tu_input(g, "axes", RL_DT_INT64, tu_dims(1, d1));
	uint32_t node;
	if (fl) {
		uint32_t c[4];
		for (int i = 0; i < 4; i++) {
			char n[8];
			snprintf(n, sizeof(n), "p%d", i);
			c[i] = tu_input(g, n, dt, tu_dims(1, d3));
		}
		uint32_t bn[5] = {x, c[0], c[1], c[2], c[3]};
		tu_add_flow(g, RL_OP_BatchNormalization, bn, 5, 1, NULL);
		tu_add_flow(g, RL_OP_BatchNormalization, bn, 5, 3, &node);
		tu_attr_i(g, node, "training_mode", 1);
		uint32_t in3[3] = {x, c[0], c[1]};
		tu_add_flow(g, RL_OP_InstanceNormalization, in3, 3, 1, NULL);
		uint32_t s45 = tu_input(g, "s45", dt, tu_dims(2, d45));
		uint32_t ln[3] = {x, s45, s45};
		tu_add_flow(g, RL_OP_LayerNormalization, ln, 3, 3, &node);
		tu_attr_i(g, node, "axis", -2);
		tu_add_flow(g, RL_OP_LRN, &x, 1, 1, &node);
		tu_attr_i(g, node, "size", 3);
		static const enum rl_op sm[] = {RL_OP_Softmax, RL_OP_LogSoftmax, RL_OP_Hardmax};
		for (int i = 0; i < 3; i++) {
			tu_add_flow(g, sm[i], &x, 1, 1, NULL);              /* last axis: rows */
			tu_add_flow(g, sm[i], &x, 1, 1, &node);             /* middle axis: lanes */
			tu_attr_i(g, node, "axis", 1);
			tu_add_flow(g, sm[i], &xb, 1, 1, &node);            /* more lanes than a tile */
			tu_attr_i(g, node, "axis", 1);
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
		uint32_t in2[2] = {x, tu_ints(g, NULL, 2, a13)};
		tu_add_flow(g, red[i], in2, 2, 1, NULL);                /* trailing group reduced */
		in2[1] = tu_ints(g, NULL, 2, a02);
		tu_add_flow(g, red[i], in2, 2, 1, &node);               /* trailing group kept */
		tu_attr_i(g, node, "keepdims", 0);
		in2[1] = tu_ints(g, NULL, 2, a02);
		in2[0] = xb;
		tu_add_flow(g, red[i], in2, 2, 1, NULL);                /* kept group wider than a tile */
		tu_add_flow(g, red[i], &x, 1, 1, NULL);                 /* everything */
		in2[0] = x;
		in2[1] = axr;                                     /* axes at run time */
		tu_declare(g, tu_add_flow(g, red[i], in2, 2, 1, NULL), 4, dr);
	}
	if (dt != RL_DT_BOOL) {
		tu_add_flow(g, RL_OP_ArgMax, &x, 1, 1, &node);
		tu_attr_i(g, node, "axis", 1);
		tu_attr_i(g, node, "select_last_index", 1);
		tu_add_flow(g, RL_OP_ArgMin, &x, 1, 1, &node);
		tu_attr_i(g, node, "axis", -1);
		tu_attr_i(g, node, "keepdims", 0);
		tu_add_flow(g, RL_OP_ArgMax, &xb, 1, 1, &node);
		tu_attr_i(g, node, "axis", 1);
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
	struct rl_graph *g = tu_graph_new(18, "test_emit_shape");
	const int64_t d23[] = {2, 3}, d3[] = {3}, d1[] = {1};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, d23));
	uint32_t v = tu_input(g, "v", RL_DT_FLOAT, tu_dims(1, d3));
	uint32_t ix = tu_input(g, "ix", RL_DT_INT32, tu_dims(1, d1));
	uint32_t node;
	tu_add_flow(g, RL_OP_Transpose, &x, 1, 1, NULL);                  /* out 0 */
	const int64_t st[] = {-1}, en[] = {INT64_MIN}, ax[] = {1}, sp[] = {-2};
	uint32_t sin[5] = {x, tu_ints(g, NULL, 1, st), tu_ints(g, NULL, 1, en), tu_ints(g, NULL, 1, ax),
	                   tu_ints(g, NULL, 1, sp)};
	tu_add_flow(g, RL_OP_Slice, sin, 5, 1, NULL);                     /* out 1: x[:, ::-2] */
	const int64_t pads[] = {2, 1};
	uint32_t pin[2] = {v, tu_ints(g, NULL, 2, pads)};
	tu_add_flow(g, RL_OP_Pad, pin, 2, 1, &node);                      /* out 2: reflect */
	tu_attr_s(g, node, "mode", "reflect");
	uint32_t gin[2] = {x, ix};
	tu_add_flow(g, RL_OP_Gather, gin, 2, 1, &node);                   /* out 3: x[:, ix] */
	tu_attr_i(g, node, "axis", 1);
	const int64_t reps[] = {1, 2};
	uint32_t tin[2] = {x, tu_ints(g, NULL, 2, reps)};
	tu_add_flow(g, RL_OP_Tile, tin, 2, 1, NULL);                      /* out 4 */
	tu_add_flow(g, RL_OP_Trilu, &x, 1, 1, NULL);                      /* out 5: upper, k = 0 */

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
	char *got = tu_run_model(g, src);
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
	struct rl_graph *g = tu_graph_new(18, "test_emit_shape");
	const int64_t d23[] = {2, 3}, d1[] = {1}, d232[] = {2, 3, 2}, d13[] = {1, 3};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(2, d23));
	uint32_t y = tu_input(g, "y", RL_DT_FLOAT, tu_dims(3, d232));
	uint32_t axr = tu_input(g, "axes", RL_DT_INT64, tu_dims(1, d1));
	uint32_t node;
	const int64_t a0[] = {0}, a1[] = {-1};
	uint32_t in2[2] = {x, tu_ints(g, NULL, 1, a0)};
	tu_add_flow(g, RL_OP_ReduceSum, in2, 2, 1, NULL);                 /* out 0: column sums */
	in2[1] = tu_ints(g, NULL, 1, a1);
	tu_add_flow(g, RL_OP_ReduceMax, in2, 2, 1, &node);                /* out 1: row max */
	tu_attr_i(g, node, "keepdims", 0);
	tu_add_flow(g, RL_OP_ReduceLogSumExp, &x, 1, 1, NULL);            /* out 2: all */
	tu_add_flow(g, RL_OP_Softmax, &y, 1, 1, &node);                   /* out 3: middle axis */
	tu_attr_i(g, node, "axis", 1);
	tu_add_flow(g, RL_OP_ArgMax, &y, 1, 1, &node);                    /* out 4: last index */
	tu_attr_i(g, node, "axis", 1);
	tu_attr_i(g, node, "select_last_index", 1);
	uint32_t rin[2] = {x, axr};
	/* out 5: axes at run time */
	tu_declare(g, tu_add_flow(g, RL_OP_ReduceMean, rin, 2, 1, NULL), 2, d13);

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
	char *got = tu_run_model(g, src);
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

/* ---- a Concat along channels, written in place --------------------------- */

/* y = |Concat(Relu(x), Neg(x), axis 1)| on x [1, 16, 2, 2]: each part is 256
 * bytes, so Relu and Neg write straight into the Concat's storage (emit.c,
 * mark_concats); z = Concat(x, Relu(x), axis 2) has 16 rows before its axis
 * and a graph input among its parts: a copy, as before. */
static struct rl_graph *concat_graph(void)
{
	struct rl_graph *g = tu_graph_new(13, "test_emit_shape");
	const int64_t d[] = {1, 16, 2, 2};
	uint32_t x = tu_input(g, "x", RL_DT_FLOAT, tu_dims(4, d));
	uint32_t rn = tu_node(g, RL_OP_Relu, "r", 1, 1, x), r = g->nodes[rn].out[0];
	uint32_t mn = tu_node(g, RL_OP_Neg, "m", 1, 1, x), m = g->nodes[mn].out[0];
	uint32_t cn = tu_node(g, RL_OP_Concat, "c", 1, 2, r, m), c = g->nodes[cn].out[0];
	tu_attr_i(g, cn, "axis", 1);
	tu_add(g, RL_OP_Abs, "y", 1, 1, c);
	uint32_t zn = tu_add(g, RL_OP_Concat, "z", 1, 2, x, r);
	tu_attr_i(g, zn, "axis", 2);
	return g;
}

Test(emit_shape, concat_in_place)
{
	struct rl_graph *g = concat_graph();
	char *dir = tu_emit_compile(g);
	char path[1024];
	snprintf(path, sizeof(path), "%s/m.c", dir);
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	static char text[1 << 20];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = 0;
	fclose(f);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
	const char *view = strstr(text, "(Concat): a view of");
	cr_assert(view, "the channel Concat is written in place");
	cr_assert(!strstr(view + 1, "(Concat): a view of"), "the axis-2 Concat copies");

	g = concat_graph();
	const char *src =
		"#include <stdio.h>\n#include \"m.h\"\n"
		"int main(void)\n{\n"
		"    float x[64], y[128], z[128];\n"
		"    for (int i = 0; i < 64; i++) x[i] = (float)(i - 40);\n"
		"    const void *in[1] = {x};\n    void *out[2] = {y, z};\n"
		"    if (m_run_v(in, out) != 0)\n        return 1;\n"
		"    int bad = 0;\n"
		"    for (int i = 0; i < 64; i++) {\n"
		"        float r = x[i] > 0 ? x[i] : 0, a = x[i] < 0 ? -x[i] : x[i];\n"
		"        bad += y[i] != r || y[64 + i] != a;\n"
		"        bad += z[i / 4 * 8 + i % 4] != x[i] || z[i / 4 * 8 + 4 + i % 4] != r;\n"
		"    }\n"
		"    printf(\"%d bad\\n\", bad);\n"
		"    m_free();\n    return 0;\n}\n";
	char *got = tu_run_model(g, src);
	cr_assert_str_eq(got, "0 bad\n");
	free(got);
	rl_graph_free(g);
}
