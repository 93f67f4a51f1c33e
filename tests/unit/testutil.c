/*
 * testutil.c - helpers shared by the Criterion unit tests (testutil.h).
 */
#include "testutil.h"

#include <criterion/criterion.h>

#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/c/emit.h"

const char *tu_onnx_data_dir(void)
{
	static char found[4096];
	const char *env = getenv("RL_ONNX_DATA");
	struct stat st;
	if (env && stat(env, &st) == 0)
		return env;
	if (found[0])
		return found;
	const char *pats[] = {
		RL_BINARY_DIR "/venv/lib/python3*/site-packages/onnx/backend/test/data",
		"/tmp/venv/lib/python3*/site-packages/onnx/backend/test/data",
	};
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		glob_t g;
		if (glob(pats[i], 0, NULL, &g) == 0 && g.gl_pathc) {
			snprintf(found, sizeof(found), "%s", g.gl_pathv[0]);
			globfree(&g);
			return found;
		}
	}
	return NULL;
}

char *tu_tmpdir(void)
{
	char *d = strdup("/tmp/rlopt-test-XXXXXX");
	return mkdtemp(d);
}

void tu_rmtree(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "testutil: could not remove %s\n", dir);
}

int tu_write(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t w = fwrite(data, 1, n, f);
	return fclose(f) == 0 && w == n ? 0 : -1;
}

char *tu_read_text(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	cr_assert_eq(fseek(f, 0, SEEK_END), 0);
	long len = ftell(f);
	cr_assert(len >= 0);
	cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
	char *buf = malloc((size_t)len + 1);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len, "cannot read %s", path);
	fclose(f);
	buf[len] = 0;
	return buf;
}

/* ---- building graphs ------------------------------------------------------ */

struct rl_graph *tu_graph_new(int opset, const char *path)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = opset;
	g->path = path;
	return g;
}

struct rl_shape tu_shape(const int64_t *rank_dims)
{
	cr_assert(rank_dims[0] >= 0 && rank_dims[0] <= RL_MAX_RANK);
	return tu_dims((int)rank_dims[0], rank_dims + 1);
}

struct rl_shape tu_dims(int rank, const int64_t *dims)
{
	struct rl_shape s;
	memset(&s, 0, sizeof(s));
	rl_shape_set(&s, rank, dims);
	return s;
}

static void push(uint32_t **arr, uint32_t *n, uint32_t v)
{
	*arr = realloc(*arr, (*n + 1) * sizeof(**arr));
	cr_assert(*arr);
	(*arr)[(*n)++] = v;
}

uint32_t tu_input(struct rl_graph *g, const char *name, enum rl_dtype dt, struct rl_shape s)
{
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	g->values[v].flags |= RL_VAL_INPUT;
	push(&g->inputs, &g->ninputs, v);
	return v;
}

void tu_output(struct rl_graph *g, uint32_t v)
{
	g->values[v].flags |= RL_VAL_OUTPUT;
	push(&g->outputs, &g->noutputs, v);
}

uint32_t tu_const(struct rl_graph *g, const char *name, enum rl_dtype dt, struct rl_shape s,
                  const void *data)
{
	char auto_name[32];
	if (!name) {
		snprintf(auto_name, sizeof(auto_name), "c%u", g->nvalues);
		name = auto_name;
	}
	uint32_t v = rl_graph_add_value(g, name, dt, &s);
	size_t nb = (size_t)rl_shape_numel(&s) * rl_dtype_size(dt);
	void *p = rl_graph_own(g, nb ? nb : 1);
	cr_assert(p);
	memcpy(p, data, nb);
	rl_value_set_data(g, v, p, nb);
	return v;
}

uint32_t tu_ints(struct rl_graph *g, const char *name, int n, const int64_t *x)
{
	return tu_const(g, name, RL_DT_INT64, TU_SHAPE(1, n), x);
}

uint32_t tu_scalar_i64(struct rl_graph *g, const char *name, int64_t x)
{
	return tu_const(g, name, RL_DT_INT64, TU_SHAPE(0), &x);
}

static uint32_t node_va(struct rl_graph *g, enum rl_op op, const char *name, bool graph_out,
                        int nout, int nin, va_list ap)
{
	uint32_t in[16], o[8];
	cr_assert(nin >= 0 && nin <= 16 && nout >= 0 && nout <= 8);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, uint32_t);
	for (int i = 0; i < nout; i++) {
		char nm[96];
		snprintf(nm, sizeof(nm), i ? "%s%d" : "%s", name, i);
		o[i] = rl_graph_add_value(g, nm, RL_DT_UNDEFINED, NULL);
		if (graph_out)
			tu_output(g, o[i]);
	}
	return rl_graph_add_node(g, op, name, in, nin, o, nout);
}

uint32_t tu_add(struct rl_graph *g, enum rl_op op, const char *name, int nout, int nin, ...)
{
	va_list ap;
	va_start(ap, nin);
	uint32_t nd = node_va(g, op, name, true, nout, nin, ap);
	va_end(ap);
	return nd;
}

uint32_t tu_node(struct rl_graph *g, enum rl_op op, const char *name, int nout, int nin, ...)
{
	va_list ap;
	va_start(ap, nin);
	uint32_t nd = node_va(g, op, name, false, nout, nin, ap);
	va_end(ap);
	return nd;
}

uint32_t tu_add_flow(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin, int nout,
                     uint32_t *node)
{
	uint32_t y[8];
	cr_assert(nout >= 1 && nout <= 8);
	for (int k = 0; k < nout; k++) {
		char name[32];
		snprintf(name, sizeof(name), "y%u", g->nvalues);
		y[k] = rl_graph_add_value(g, name, RL_DT_UNDEFINED, NULL);
	}
	uint32_t id = rl_graph_add_node(g, op, NULL, in, nin, y, nout);
	for (int k = 0; k < nout; k++)
		tu_output(g, y[k]);
	if (node)
		*node = id;
	return y[0];
}

uint32_t tu_declare(struct rl_graph *g, uint32_t v, int rank, const int64_t *dims)
{
	rl_shape_set(&g->values[v].shape, rank, dims);
	return v;
}

const struct rl_value *tu_out(const struct rl_graph *g, uint32_t nd, int k)
{
	return &g->values[g->nodes[nd].out[k]];
}

void tu_attr_i(struct rl_graph *g, uint32_t nd, const char *name, int64_t v)
{
	rl_node_add_attr(g, nd, name, RL_ATTR_INT)->i = v;
}

void tu_attr_f(struct rl_graph *g, uint32_t nd, const char *name, double v)
{
	rl_node_add_attr(g, nd, name, RL_ATTR_FLOAT)->f = v;
}

void tu_attr_s(struct rl_graph *g, uint32_t nd, const char *name, const char *s)
{
	struct rl_attr *a = rl_node_add_attr(g, nd, name, RL_ATTR_STRING);
	a->s = rl_arena_strdup(g, s);
	a->n = (int)strlen(s);
}

void tu_attr_ints(struct rl_graph *g, uint32_t nd, const char *name, int n, const int64_t *v)
{
	struct rl_attr *a = rl_node_add_attr(g, nd, name, RL_ATTR_INTS);
	a->ints = rl_arena_alloc(g, (size_t)(n ? n : 1) * sizeof(int64_t));
	memcpy(a->ints, v, (size_t)n * sizeof(int64_t));
	a->n = n;
}

void tu_infer(struct rl_graph *g)
{
	enum rl_status st = rl_graph_infer(g);
	cr_assert_eq(st, RL_OK, "infer: %s", g->err);
}

struct rl_counts tu_count(const struct rl_graph *g, uint32_t nd)
{
	struct rl_counts c;
	cr_assert(rl_count_node(g, nd, &c), "node %u not counted", nd);
	return c;
}

/* ---- emitting, compiling and running C ------------------------------------ */

int tu_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

char *tu_emit_compile(struct rl_graph *g)
{
	char err[1024] = "", path[4200];
	enum rl_status st = rl_graph_infer(g);
	cr_assert_eq(st, RL_OK, "inference failed: %s", g->err);
	char *dir = tu_tmpdir();
	cr_assert(dir);
	snprintf(path, sizeof(path), "%s/m.c", dir);
	st = rl_emit_c(g, NULL, path, err, sizeof(err));
	cr_assert_eq(st, RL_OK, "emit failed: %s", err);
	int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -c m.c -o m.o "
	               "2> cc.log || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "generated C in %s does not compile cleanly", dir);
	return dir;
}

char *tu_run_model(struct rl_graph *g, const char *main_src)
{
	char *dir = tu_emit_compile(g);
	char path[4200];
	snprintf(path, sizeof(path), "%s/main.c", dir);
	cr_assert_eq(tu_write(path, main_src, strlen(main_src)), 0);
	int rc = tu_sh("cd '%s' && ${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 main.c m.o -lm "
	               "-o run 2> cc.log && ./run > out.txt || { cat cc.log >&2; exit 1; }", dir);
	cr_assert_eq(rc, 0, "building or running the program in %s failed", dir);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	char *buf = tu_read_text(path);
	tu_rmtree(dir);
	free(dir);
	return buf;
}
