/*
 * bench_load.c - frontend speed and memory.
 *
 *   bench_load big      a generated 100,000-node model: time to load, infer
 *                       shapes and verify (target: under 1 s here)
 *   bench_load extdata  a model with 1 GiB of external data (a sparse file):
 *                       peak RSS after load + infer + verify (target: under
 *                       64 MiB, because weights stay mmap'd)
 *
 * Both models are written with protobuf-c into a temporary folder, so the
 * benchmark needs nothing but the build. Figures are printed, not asserted:
 * timings on a shared machine are noisy.
 */
#include "frontends/onnx/onnx.h"
#include "passes/pass.h"
#include "onnx.pb-c.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long peak_rss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static Onnx__ValueInfoProto *vi(const char *name, int64_t n)
{
	Onnx__ValueInfoProto *v = calloc(1, sizeof(*v));
	Onnx__TypeProto *t = calloc(1, sizeof(*t));
	Onnx__TypeProto__Tensor *tt = calloc(1, sizeof(*tt));
	Onnx__TensorShapeProto *s = calloc(1, sizeof(*s));
	Onnx__TensorShapeProto__Dimension *d = calloc(1, sizeof(*d));
	onnx__value_info_proto__init(v);
	onnx__type_proto__init(t);
	onnx__type_proto__tensor__init(tt);
	onnx__tensor_shape_proto__init(s);
	onnx__tensor_shape_proto__dimension__init(d);
	d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
	d->dim_value = n;
	s->n_dim = 1;
	s->dim = malloc(sizeof(*s->dim));
	s->dim[0] = d;
	tt->has_elem_type = 1;
	tt->elem_type = 1;
	tt->shape = s;
	t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	t->tensor_type = tt;
	v->name = strdup(name);
	v->type = t;
	return v;
}

static int write_model(Onnx__ModelProto *m, const char *path)
{
	size_t len = onnx__model_proto__get_packed_size(m);
	uint8_t *buf = malloc(len);
	onnx__model_proto__pack(m, buf);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len) {
		perror(path);
		return -1;
	}
	fclose(f);
	free(buf);
	return 0;
}

static void model_init(Onnx__ModelProto *m, Onnx__GraphProto *g)
{
	static Onnx__OperatorSetIdProto op;
	static Onnx__OperatorSetIdProto *ops[1] = {&op};
	onnx__model_proto__init(m);
	onnx__graph_proto__init(g);
	onnx__operator_set_id_proto__init(&op);
	op.domain = "";
	op.has_version = 1;
	op.version = 17;
	m->has_ir_version = 1;
	m->ir_version = 8;
	m->n_opset_import = 1;
	m->opset_import = ops;
	m->graph = g;
	g->name = "bench";
}

/* A chain of `n` alternating unary ops over a 64-element vector. */
static int bench_big(const char *dir, int n)
{
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	model_init(&m, &g);
	g.n_node = (size_t)n;
	g.node = malloc(sizeof(*g.node) * (size_t)n);
	static const char *ops[] = {"Relu", "Neg", "Abs", "Sigmoid"};
	char prev[32] = "x";
	for (int i = 0; i < n; i++) {
		Onnx__NodeProto *nd = calloc(1, sizeof(*nd));
		onnx__node_proto__init(nd);
		char name[32], out[32];
		snprintf(name, sizeof(name), "n%d", i);
		snprintf(out, sizeof(out), i == n - 1 ? "y" : "t%d", i);
		nd->name = strdup(name);
		nd->op_type = (char *)ops[i % 4];
		nd->n_input = 1;
		nd->input = malloc(sizeof(char *));
		nd->input[0] = strdup(prev);
		nd->n_output = 1;
		nd->output = malloc(sizeof(char *));
		nd->output[0] = strdup(out);
		g.node[i] = nd;
		snprintf(prev, sizeof(prev), "%s", out);
	}
	Onnx__ValueInfoProto *in = vi("x", 64), *out = vi("y", 64);
	g.n_input = 1;
	g.input = &in;
	g.n_output = 1;
	g.output = &out;
	char path[4096];
	snprintf(path, sizeof(path), "%s/big.onnx", dir);
	if (write_model(&m, path))
		return 1;

	double best = 1e9, best_cpu = 1e9;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now(), c0 = cpu_now();
		struct rl_graph *gr;
		char err[1024];
		if (rl_onnx_load(path, &gr, err, sizeof(err)) != RL_OK) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		if (rl_graph_infer(gr) != RL_OK || rl_graph_verify(gr) != RL_OK) {
			fprintf(stderr, "%s\n", gr->err);
			return 1;
		}
		double t = now() - t0, ct = cpu_now() - c0;
		if (t < best)
			best = t;
		if (ct < best_cpu)
			best_cpu = ct;
		rl_graph_free(gr);
	}
	printf("load+infer+verify of a %d-node model: %.3f s wall, %.3f s CPU (best of 3; "
	       "target < 1 s; wall time includes waiting for a busy CPU)\n", n, best, best_cpu);

	/* the whole -O2 pipeline on top (issue 5: under 2 s) */
	struct rl_machine mach;
	char merr[512];
	if (rl_machine_load("generic-cpu", &mach, merr, sizeof(merr)) != RL_OK) {
		fprintf(stderr, "%s\n", merr);
		return 1;
	}
	double bo = 1e9, bo_cpu = 1e9;
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now(), c0 = cpu_now();
		struct rl_graph *gr;
		char err[1024];
		if (rl_onnx_load(path, &gr, err, sizeof(err)) != RL_OK ||
		    rl_graph_infer(gr) != RL_OK || rl_graph_verify(gr) != RL_OK) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		struct rl_pass_ctx ctx;
		rl_pass_ctx_init(&ctx, &mach, 2);
		ctx.verify = false; /* as in a release build of rlopt */
		if (rl_pipeline_run(gr, &ctx, NULL) != RL_OK) {
			fprintf(stderr, "%s\n", gr->err);
			return 1;
		}
		double t = now() - t0, ct = cpu_now() - c0;
		if (t < bo)
			bo = t;
		if (ct < bo_cpu)
			bo_cpu = ct;
		rl_pass_ctx_free(&ctx);
		rl_graph_free(gr);
	}
	printf("load+infer+verify+-O2 pipeline of a %d-node model: %.3f s wall, %.3f s CPU "
	       "(best of 3; target < 2 s)\n", n, bo, bo_cpu);
	if (getenv("RL_BENCH_KEEP"))
		printf("kept %s\n", path);
	else
		unlink(path);
	return 0;
}

/* MatMul x[1,K] by an external weight [K,N] of 1 GiB in a sparse file. */
static int bench_extdata(const char *dir)
{
	const int64_t K = 16384, N = 16384; /* 16384*16384*4 = 1 GiB */
	char path[4096], wpath[4096];
	snprintf(wpath, sizeof(wpath), "%s/weights.bin", dir);
	int fd = open(wpath, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0 || ftruncate(fd, K * N * 4) != 0) {
		perror(wpath);
		return 1;
	}
	close(fd);
	Onnx__ModelProto m;
	Onnx__GraphProto g;
	model_init(&m, &g);
	Onnx__TensorProto w;
	onnx__tensor_proto__init(&w);
	int64_t dims[2] = {K, N};
	w.name = "w";
	w.n_dims = 2;
	w.dims = dims;
	w.has_data_type = 1;
	w.data_type = 1;
	w.has_data_location = 1;
	w.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	Onnx__StringStringEntryProto loc, off, len;
	onnx__string_string_entry_proto__init(&loc);
	onnx__string_string_entry_proto__init(&off);
	onnx__string_string_entry_proto__init(&len);
	char lenbuf[32];
	snprintf(lenbuf, sizeof(lenbuf), "%lld", (long long)(K * N * 4));
	loc.key = "location";
	loc.value = "weights.bin";
	off.key = "offset";
	off.value = "0";
	len.key = "length";
	len.value = lenbuf;
	Onnx__StringStringEntryProto *ext[3] = {&loc, &off, &len};
	w.n_external_data = 3;
	w.external_data = ext;
	Onnx__TensorProto *inits[1] = {&w};
	g.n_initializer = 1;
	g.initializer = inits;
	Onnx__NodeProto nd;
	onnx__node_proto__init(&nd);
	char *ins[2] = {"x", "w"}, *outs[1] = {"y"};
	nd.name = "mm";
	nd.op_type = "MatMul";
	nd.n_input = 2;
	nd.input = ins;
	nd.n_output = 1;
	nd.output = outs;
	Onnx__NodeProto *nodes[1] = {&nd};
	g.n_node = 1;
	g.node = nodes;
	Onnx__ValueInfoProto *in = vi("x", K), *out = vi("y", N);
	g.n_input = 1;
	g.input = &in;
	g.n_output = 1;
	g.output = &out;
	snprintf(path, sizeof(path), "%s/ext.onnx", dir);
	if (write_model(&m, path))
		return 1;
	long before = peak_rss_kib();
	struct rl_graph *gr;
	char err[1024];
	double t0 = now();
	if (rl_onnx_load(path, &gr, err, sizeof(err)) != RL_OK) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (rl_graph_infer(gr) != RL_OK || rl_graph_verify(gr) != RL_OK) {
		fprintf(stderr, "%s\n", gr->err);
		return 1;
	}
	double t = now() - t0;
	long after = peak_rss_kib();
	printf("1 GiB external data: load+infer+verify %.3f s, peak RSS %.1f MiB (before load "
	       "%.1f MiB; target < 64 MiB)\n", t, after / 1024.0, before / 1024.0);
	rl_graph_free(gr);
	unlink(path);
	unlink(wpath);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/rlopt-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	int rc = 0;
	const char *what = argc > 1 ? argv[1] : "all";
	if (!strcmp(what, "big") || !strcmp(what, "all"))
		rc |= bench_big(dir, argc > 2 ? atoi(argv[2]) : 100000);
	if (!strcmp(what, "extdata") || !strcmp(what, "all"))
		rc |= bench_extdata(dir);
	if (!getenv("RL_BENCH_KEEP"))
		rmdir(dir);
	return rc;
}
