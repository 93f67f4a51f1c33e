/*
 * test_onnx.c - the ONNX frontend and writer.
 *
 * The nine ONNX "light" models from the onnx 1.22.0 wheel load, verify,
 * infer every shape, and survive load -> write -> load with the same graph.
 * Tensor files round-trip. Initializer encodings and bad input are covered by
 * tests/py/test_bad_inputs.py and the fuzz corpus.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "frontends/onnx/onnx.h"
#include "testutil.h"

static const char *light[] = {
	"bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
	"shufflenet", "squeezenet", "vgg19", "zfnet512",
};

static struct rl_graph *load_ok(const char *path)
{
	struct rl_graph *g = NULL;
	char err[1024] = "";
	enum rl_status st = rl_onnx_load(path, &g, err, sizeof(err));
	cr_assert_eq(st, RL_OK, "load %s: %s", path, err);
	cr_assert_eq(rl_graph_infer(g), RL_OK, "infer %s: %s", path, g->err);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "verify %s: %s", path, g->err);
	return g;
}

static void assert_same_graph(const struct rl_graph *a, const struct rl_graph *b)
{
	cr_assert_eq(a->norder, b->norder);
	cr_assert_eq(a->ninputs, b->ninputs);
	cr_assert_eq(a->noutputs, b->noutputs);
	for (uint32_t k = 0; k < a->norder; k++) {
		const struct rl_node *x = &a->nodes[a->order[k]], *y = &b->nodes[b->order[k]];
		cr_assert_eq(x->op, y->op, "node %u op", k);
		cr_assert_str_eq(x->name, y->name);
		cr_assert_eq(x->nin, y->nin);
		cr_assert_eq(x->nout, y->nout);
		cr_assert_eq(x->nattrs, y->nattrs, "node %s attrs", x->name);
		for (int i = 0; i < x->nout; i++) {
			const struct rl_value *va = &a->values[x->out[i]], *vb = &b->values[y->out[i]];
			cr_assert_str_eq(va->name, vb->name);
			cr_assert_eq(va->dtype, vb->dtype);
			cr_assert(rl_shape_equal(&va->shape, &vb->shape), "shape of %s", va->name);
		}
		for (int i = 0; i < x->nin; i++) {
			if (x->in[i] == RL_NONE) {
				cr_assert_eq(y->in[i], RL_NONE);
				continue;
			}
			const struct rl_value *va = &a->values[x->in[i]], *vb = &b->values[y->in[i]];
			cr_assert_str_eq(va->name, vb->name);
			bool ca = (va->flags & RL_VAL_CONST) && va->producer == RL_NONE;
			bool cb = (vb->flags & RL_VAL_CONST) && vb->producer == RL_NONE;
			cr_assert_eq(ca, cb, "initializer-ness of %s", va->name);
			if (ca) {
				cr_assert_eq(va->nbytes, vb->nbytes);
				cr_assert(memcmp(va->data, vb->data, va->nbytes) == 0, "data of %s", va->name);
			}
		}
	}
}

Test(onnx, light_models_load_infer_roundtrip, .timeout = 120)
{
	const char *data = tu_onnx_data_dir();
	cr_assert(data, "onnx test data not found: run scripts/test.sh (it makes build/venv)");
	char *tmp = tu_tmpdir();
	for (size_t i = 0; i < sizeof(light) / sizeof(light[0]); i++) {
		char path[4096], out[4096];
		snprintf(path, sizeof(path), "%s/light/light_%s.onnx", data, light[i]);
		struct rl_graph *g = load_ok(path);
		cr_assert_gt(g->norder, 10u, "%s has nodes", light[i]);
		/* every value a node produces has a dtype and a static shape */
		for (uint32_t v = 0; v < g->nvalues; v++) {
			const struct rl_value *val = &g->values[v];
			if (val->producer == RL_NONE)
				continue;
			cr_assert_neq(val->dtype, RL_DT_UNDEFINED, "%s: %s dtype", light[i], val->name);
			cr_assert(rl_shape_is_static(&val->shape), "%s: %s shape", light[i], val->name);
		}
		snprintf(out, sizeof(out), "%s/%s.onnx", tmp, light[i]);
		char err[1024];
		cr_assert_eq(rl_onnx_write(g, out, err, sizeof(err)), RL_OK, "%s", err);
		struct rl_graph *g2 = load_ok(out);
		assert_same_graph(g, g2);
		rl_graph_free(g2);
		rl_graph_free(g);
	}
	tu_rmtree(tmp);
	free(tmp);
}

Test(onnx, tensor_file_roundtrip)
{
	char *tmp = tu_tmpdir();
	char path[4096], err[512];
	snprintf(path, sizeof(path), "%s/t.pb", tmp);
	float vals[6] = {1, -2, 3.5f, 0, 1e-20f, 7};
	struct rl_tensor t = {.name = "x", .dtype = RL_DT_FLOAT, .data = vals, .nbytes = sizeof(vals)};
	int64_t dims[2] = {2, 3};
	rl_shape_set(&t.shape, 2, dims);
	cr_assert_eq(rl_tensor_write(path, &t, err, sizeof(err)), RL_OK, "%s", err);
	struct rl_tensor r;
	cr_assert_eq(rl_tensor_read(path, &r, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_str_eq(r.name, "x");
	cr_assert_eq(r.dtype, RL_DT_FLOAT);
	cr_assert(rl_shape_equal(&r.shape, &t.shape));
	cr_assert_eq(r.nbytes, sizeof(vals));
	cr_assert(memcmp(r.data, vals, sizeof(vals)) == 0);
	rl_tensor_free(&r);
	/* a truncated file is an error, not a crash */
	FILE *f = fopen(path, "r+b");
	cr_assert(f);
	cr_assert_eq(ftruncate(fileno(f), 7), 0);
	fclose(f);
	cr_assert_neq(rl_tensor_read(path, &r, err, sizeof(err)), RL_OK);
	cr_assert(strstr(err, "t.pb"), "message names the file: %s", err);
	tu_rmtree(tmp);
	free(tmp);
}

/* SequenceProto and OptionalProto files (frontends/onnx/onnx_valfile.c):
 * written and read back, and malformed ones refused naming the file. */
Test(onnx, sequence_optional_files)
{
	char *tmp = tu_tmpdir();
	char path[4096], err[512];
	snprintf(path, sizeof(path), "%s/s.pb", tmp);
	float a[3] = {1, 2, 3};
	int64_t b[2] = {-4, 5};
	struct rl_tensor ts[2] = {
		{.name = "", .dtype = RL_DT_FLOAT, .data = a, .nbytes = sizeof(a)},
		{.name = "", .dtype = RL_DT_INT64, .data = b, .nbytes = sizeof(b)},
	};
	int64_t d3 = 3, d2 = 2;
	rl_shape_set(&ts[0].shape, 1, &d3);
	rl_shape_set(&ts[1].shape, 1, &d2);
	struct rl_value_file f = {.kind = RL_ONNX_SEQUENCE, .present = 1, .name = "seq", .n = 2,
	                          .t = ts};
	cr_assert_eq(rl_value_file_write(path, &f, err, sizeof(err)), RL_OK, "%s", err);
	struct rl_value_file r;
	cr_assert_eq(rl_value_file_read(path, RL_ONNX_SEQUENCE, &r, err, sizeof(err)), RL_OK,
	             "%s", err);
	cr_assert_str_eq(r.name, "seq");
	cr_assert_eq(r.n, 2);
	cr_assert_eq(r.t[0].dtype, RL_DT_FLOAT);
	cr_assert_eq(r.t[1].dtype, RL_DT_INT64);
	cr_assert(rl_shape_equal(&r.t[1].shape, &ts[1].shape));
	cr_assert(memcmp(r.t[0].data, a, sizeof(a)) == 0 && memcmp(r.t[1].data, b, sizeof(b)) == 0);
	rl_value_file_free(&r);

	/* an optional: holding a sequence, a tensor, then empty */
	f.kind = RL_ONNX_OPTIONAL;
	f.inner = RL_ONNX_SEQUENCE;
	cr_assert_eq(rl_value_file_write(path, &f, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(rl_value_file_read(path, RL_ONNX_OPTIONAL, &r, err, sizeof(err)), RL_OK,
	             "%s", err);
	cr_assert(r.present && r.inner == RL_ONNX_SEQUENCE && r.n == 2);
	rl_value_file_free(&r);
	f.inner = RL_ONNX_TENSOR;
	f.n = 1;
	cr_assert_eq(rl_value_file_write(path, &f, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(rl_value_file_read(path, RL_ONNX_OPTIONAL, &r, err, sizeof(err)), RL_OK,
	             "%s", err);
	cr_assert(r.present && r.inner == RL_ONNX_TENSOR && r.n == 1);
	cr_assert(memcmp(r.t[0].data, a, sizeof(a)) == 0);
	rl_value_file_free(&r);
	f.present = 0;
	f.n = 0;
	cr_assert_eq(rl_value_file_write(path, &f, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(rl_value_file_read(path, RL_ONNX_OPTIONAL, &r, err, sizeof(err)), RL_OK,
	             "%s", err);
	cr_assert(!r.present && r.n == 0);
	cr_assert_str_eq(r.name, "seq");
	rl_value_file_free(&r);

	/* malformed: a length past the end, a sequence of sequences, an
	 * optional map, a bad element */
	static const struct {
		unsigned char b[8];
		size_t n;
		enum rl_onnx_kind kind;
		const char *words;
	} bad[] = {
		{{0x1a, 0x05, 'a', 'b'}, 4, RL_ONNX_SEQUENCE, "malformed"},
		{{0x2a, 0x00}, 2, RL_ONNX_SEQUENCE, "sequence of sequences"},
		{{0x10, 0x03}, 2, RL_ONNX_SEQUENCE, "sequence of sequences"},
		{{0x32, 0x00}, 2, RL_ONNX_OPTIONAL, "optional holding maps"},
		{{0x1a, 0x02, 0x08, 0xff}, 4, RL_ONNX_OPTIONAL, "TensorProto"},
		{{0x08, 0x01}, 2, RL_ONNX_OPTIONAL, "wire type"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *fp = fopen(path, "wb");
		cr_assert(fp);
		cr_assert_eq(fwrite(bad[i].b, 1, bad[i].n, fp), bad[i].n);
		fclose(fp);
		cr_assert_neq(rl_value_file_read(path, bad[i].kind, &r, err, sizeof(err)), RL_OK,
		              "case %zu read", i);
		cr_assert(strstr(err, "s.pb") && strstr(err, bad[i].words) && !strchr(err, '\n'),
		          "case %zu: %s", i, err);
		cr_assert_eq(r.n, 0);
		cr_assert_null(r.t);
	}
	tu_rmtree(tmp);
	free(tmp);
}

Test(onnx, garbage_is_a_clean_error)
{
	static const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x12, 0x99};
	struct rl_graph *g = (struct rl_graph *)1;
	char err[512] = "";
	enum rl_status st = rl_onnx_load_buffer(junk, sizeof(junk), "junk.onnx", &g, err,
	                                        sizeof(err));
	cr_assert_neq(st, RL_OK);
	cr_assert_null(g);
	cr_assert(strstr(err, "junk.onnx"), "%s", err);
	cr_assert_null(strchr(err, '\n'));
	st = rl_onnx_load_buffer(junk, 0, "empty.onnx", &g, err, sizeof(err));
	cr_assert_eq(st, RL_ERR_PARSE);
	cr_assert(strstr(err, "empty"), "%s", err);
}

Test(ir, half_and_bf16_conversions)
{
	cr_assert_eq(rl_float_to_half(1.0f), 0x3c00);
	cr_assert_eq(rl_float_to_half(-2.0f), 0xc000);
	cr_assert_eq(rl_float_to_half(65504.0f), 0x7bff);
	cr_assert_eq(rl_float_to_half(1e6f), 0x7c00);
	cr_assert_float_eq(rl_half_to_float(0x3555), 0.333251953125f, 0);
	cr_assert_float_eq(rl_half_to_float(0x0001), 5.9604644775390625e-08f, 0);
	cr_assert_eq(rl_float_to_half(5.9604644775390625e-08f), 0x0001);
	cr_assert_eq(rl_float_to_bf16(1.0f), 0x3f80);
	cr_assert_float_eq(rl_bf16_to_float(0x4049), 3.140625f, 0);
	for (uint32_t h = 0; h < 0x7c00; h++) /* every finite half round-trips */
		cr_assert_eq(rl_float_to_half(rl_half_to_float((uint16_t)h)), h);
}

Test(ir, mutation_and_verify)
{
	struct rl_graph *g = rl_graph_new();
	int64_t d[1] = {4};
	struct rl_shape s;
	rl_shape_set(&s, 1, d);
	uint32_t x = rl_graph_add_value(g, "x", RL_DT_FLOAT, &s);
	uint32_t a = rl_graph_add_value(g, "a", RL_DT_FLOAT, &s);
	uint32_t b = rl_graph_add_value(g, "b", RL_DT_FLOAT, &s);
	g->values[x].flags |= RL_VAL_INPUT;
	g->inputs = malloc(sizeof(uint32_t));
	g->inputs[0] = x;
	g->ninputs = 1;
	uint32_t n1 = rl_graph_add_node(g, RL_OP_Relu, "r", &x, 1, &a, 1);
	rl_graph_add_node(g, RL_OP_Neg, "n", &a, 1, &b, 1);
	g->outputs = malloc(sizeof(uint32_t));
	g->outputs[0] = b;
	g->noutputs = 1;
	g->values[b].flags |= RL_VAL_OUTPUT;
	cr_assert_eq(rl_graph_verify(g), RL_OK, "%s", g->err);
	cr_assert_eq(g->norder, 2u);
	/* bypass the Relu: Neg reads x directly, Relu is dead */
	rl_graph_replace_uses(g, a, x);
	cr_assert_eq(g->values[a].nuses, 0u);
	cr_assert_eq(g->values[x].nuses, 2u);
	rl_graph_remove_node(g, n1);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "%s", g->err);
	cr_assert_eq(g->norder, 1u);
	rl_graph_compact(g);
	cr_assert_eq(g->nnodes, 1u);
	cr_assert_eq(rl_graph_verify(g), RL_OK, "%s", g->err);
	cr_assert_eq(rl_graph_find_value(g, "a"), RL_NONE);
	cr_assert_neq(rl_graph_find_value(g, "b"), RL_NONE);
	/* a cycle is found and named */
	uint32_t c = rl_graph_add_value(g, "c", RL_DT_FLOAT, &s);
	uint32_t ins[2] = {x, c};
	uint32_t dd = rl_graph_add_value(g, "d", RL_DT_FLOAT, &s);
	rl_graph_add_node(g, RL_OP_Add, "loop_add", ins, 2, &dd, 1);
	rl_graph_add_node(g, RL_OP_Relu, "loop_relu", &dd, 1, &c, 1);
	cr_assert_eq(rl_graph_verify(g), RL_ERR_INVALID);
	cr_assert(strstr(g->err, "cycle"), "%s", g->err);
	rl_graph_free(g);
}
