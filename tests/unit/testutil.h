/*
 * testutil.h - helpers shared by the Criterion unit tests: files and
 * folders, one builder for graphs made by hand, and one emit-compile-run
 * helper for the C backend's tests. A failure inside a helper is a
 * Criterion assertion, so a test reads as its steps.
 */
#ifndef RL_TESTUTIL_H
#define RL_TESTUTIL_H

#include <math.h>
#include <stddef.h>

#include "cost.h"
#include "ir.h"

/* The onnx wheel's backend test data (…/onnx/backend/test/data), found in
 * $RL_ONNX_DATA or the build's venv; NULL if absent. */
const char *tu_onnx_data_dir(void);
/* A fresh temporary folder (removed by tu_rmtree). */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);
/* Write bytes to a file; returns 0 on success. */
int tu_write(const char *path, const void *data, size_t n);
/* A whole file as a NUL-terminated string (malloc'd); the test fails if it
 * cannot be read. */
char *tu_read_text(const char *path);


/* ---- building graphs ------------------------------------------------------ */

/* An empty graph at `opset` (its nodes take it), named `path` in messages. */
struct rl_graph *tu_graph_new(int opset, const char *path);
/* A shape of `rank` fixed dims: TU_SHAPE(2, 4, 6) is [4, 6], TU_SHAPE(0) a
 * scalar (the dims become int64_t in a compound literal). */
#define TU_SHAPE(...) tu_shape((const int64_t[]){__VA_ARGS__})
struct rl_shape tu_shape(const int64_t *rank_dims);
/* The same from an array (rank 0: dims may be NULL). */
struct rl_shape tu_dims(int rank, const int64_t *dims);
/* A graph input. */
uint32_t tu_input(struct rl_graph *g, const char *name, enum rl_dtype dt, struct rl_shape s);
/* Mark v a graph output. */
void tu_output(struct rl_graph *g, uint32_t v);
/* A constant holding a graph-owned copy of data (numel x dtype size bytes);
 * name NULL: "c<value index>". */
uint32_t tu_const(struct rl_graph *g, const char *name, enum rl_dtype dt, struct rl_shape s,
                  const void *data);
/* Constant int64 tensors: 1-D of n values, and a scalar. */
uint32_t tu_ints(struct rl_graph *g, const char *name, int n, const int64_t *x);
uint32_t tu_scalar_i64(struct rl_graph *g, const char *name, int64_t x);
/* Node op(in...) named `name` with `nout` fresh outputs named name, name1,
 * name2, ... (dtype and shape left to inference); returns the node. tu_add
 * makes them graph outputs, tu_node does not. */
uint32_t tu_add(struct rl_graph *g, enum rl_op op, const char *name, int nout, int nin, ...);
uint32_t tu_node(struct rl_graph *g, enum rl_op op, const char *name, int nout, int nin, ...);
/* The same as data flow: node op(in[0..nin)) with `nout` fresh graph outputs
 * named y<value index>; returns the first output, the node in *node (may be
 * NULL). */
uint32_t tu_add_flow(struct rl_graph *g, enum rl_op op, const uint32_t *in, int nin, int nout,
                     uint32_t *node);
/* Give v a declared shape, as a model's value_info would; returns v. */
uint32_t tu_declare(struct rl_graph *g, uint32_t v, int rank, const int64_t *dims);
/* Output k of node nd. */
const struct rl_value *tu_out(const struct rl_graph *g, uint32_t nd, int k);
/* Attributes of node nd. */
void tu_attr_i(struct rl_graph *g, uint32_t nd, const char *name, int64_t v);
void tu_attr_f(struct rl_graph *g, uint32_t nd, const char *name, double v);
void tu_attr_s(struct rl_graph *g, uint32_t nd, const char *name, const char *s);
void tu_attr_ints(struct rl_graph *g, uint32_t nd, const char *name, int n, const int64_t *v);
/* rl_graph_infer() must succeed (the message is g->err). */
void tu_infer(struct rl_graph *g);
/* rl_count_node() must count node nd. */
struct rl_counts tu_count(const struct rl_graph *g, uint32_t nd);
/* got equals want to 1e-9 relative (absolute below 1). */
#define TU_EQ(got, want)                                                                 \
	cr_assert(fabs((double)(got) - (double)(want)) < 1e-9 * fmax(1, fabs((double)(want))), \
	          "%s = %.17g, want %.17g", #got, (double)(got), (double)(want))

/* ---- emitting, compiling and running C ------------------------------------ */

/* system() of a printf-formatted command; returns its status. */
int tu_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Infer g, emit DIR/m.c (and m.h) with rl_emit_c() into a fresh folder and
 * compile it with `${CC:-cc} -std=c11 -Wall -Wextra -Werror -O2 -c`;
 * returns DIR (tu_rmtree + free). */
char *tu_emit_compile(struct rl_graph *g);
/* tu_emit_compile(), then link main_src (which includes "m.h") against the
 * model, run it and return what it printed (malloc'd); the folder is
 * removed. */
char *tu_run_model(struct rl_graph *g, const char *main_src);

#endif
