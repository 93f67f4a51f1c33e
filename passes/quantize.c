/*
 * quantize.c - weight quantization where bytes bind.
 *
 * Fewer bits per weight means fewer bytes fetched, which is what a node left
 * of the roofline's bend waits for; a compute-bound node gains nothing and
 * still pays in accuracy. So, for every MatMul and Gemm with a constant
 * float32 weight (--quantize):
 *
 *   int8  blocks of --block codes along K (int8-channel: one scale per
 *         output channel first, else blocks)
 *   int4  blocks of --block codes along K, symmetric, else with zero points
 *         (int4-mixed: a product that makes a model output, the LM head,
 *         int8 in blocks)
 *   auto  only memory-bound nodes (as priced on the machine at the bound
 *         batch), the narrowest of int4, int4+zp, int8/channel, int8/block
 *         that meets the budget, and only when the predicted time drops by
 *         5% or more; compute- and latency-bound nodes stay float
 *
 * Accuracy guard: each candidate's output is compared with the float
 * product on calibration rows (--calibrate, when the node reads a graph
 * input directly), else on seeded standard-normal rows; the relative
 * Frobenius error ||X (Wq - W)|| / ||X W|| must be within --max-rel-error,
 * else the next scheme is tried, and the node stays float when none fits.
 * Weights with NaN or Inf stay float.
 *
 * float16 models (A, W and Gemm's C float16): the weight is widened to
 * float32 once, packed like a float32 one, and QuantMatMul (float32 in and
 * out) sits between two Casts, A -> float32 and Y -> float16; at batch 1
 * the casts move 6 bytes per element of A and Y against the weight's 2 per
 * element, so the node is still priced (and timed) by its weight.
 *
 * A quantized node becomes QuantMatMul (ir/qweights.h) carrying the packed
 * codes, scales and zero points as new constants; the float weight dies
 * with its last use. Every node considered gets one remark: the scheme, the
 * bytes and predicted time before and after, and the measured errors.
 *
 * Pricing: each candidate is priced as the report will price its kernel,
 * though the pass runs before `tile`: the float product on the schedule
 * tile will give it (rl_tile_plan) level by level (rl_cost_node_kernel),
 * the QuantMatMul as ir/qweights.c counts it (the C kernels' split, the
 * activation rows quantized first on one thread, the codes' dot products
 * at the int8 or dequantize rate); once every node is decided the
 * quantized ones are priced again with the final footprint (reprice_after),
 * so the remarks and the summary add up to the report's figures. An
 * epilogue `fuse` later folds into the float product (its few extra bytes)
 * is not in the before.
 *
 * Preconditions: shapes inferred and static for the nodes it prices; runs
 * after `roofline` (auto reads the bound from it) and before `fuse`/`tile`.
 */
#include "pass.h"
#include "buf.h"

#include "frontends/onnx/onnx.h"
#include "qweights.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CAL_ROWS 8 /* rows of X the error is measured on */

/* What the rewrite needs to know about one MatMul/Gemm. */
struct qcand {
	uint32_t node, a, w, bias, y;
	int64_t k, n;        /* W is K x N */
	int64_t ks, ns;      /* W(k, n) = data[k * ks + n * ns] */
	const float *data;   /* float32 weight (a widened copy for float16) */
	bool half;           /* A, W (and C) are float16: Casts around QuantMatMul */
	float alpha;
};

/* The node is a MatMul/Gemm with a constant float32 weight that the
 * QuantMatMul form can express; else why not, in `why` (NULL: do not remark,
 * the weight is not constant). */
static bool candidate(struct rl_graph *g, uint32_t i, struct qcand *c, const char **why)
{
	const struct rl_node *nd = &g->nodes[i];
	*why = NULL;
	memset(c, 0, sizeof(*c));
	c->node = i;
	c->a = rl_node_in(nd, 0);
	c->w = rl_node_in(nd, 1);
	c->bias = RL_NONE;
	c->y = nd->out[0];
	c->alpha = 1;
	if (!rl_value_is_const(g, c->w) || rl_value_is_const(g, c->a))
		return false;
	const struct rl_value *a = &g->values[c->a], *w = &g->values[c->w];
	c->half = a->dtype == RL_DT_FLOAT16 && w->dtype == RL_DT_FLOAT16;
	if (!c->half && (a->dtype != RL_DT_FLOAT || w->dtype != RL_DT_FLOAT))
		return *why = "not float32 or float16", false;
	if (w->shape.rank != 2 || !rl_shape_is_static(&w->shape) || a->shape.rank < 1 ||
	    !rl_shape_is_static(&g->values[c->y].shape))
		return *why = "weight not a matrix, or shapes not static", false;
	c->data = w->data;
	int64_t r = w->shape.d[0].v, s = w->shape.d[1].v;
	c->k = r, c->n = s, c->ks = s, c->ns = 1;
	if (nd->op == RL_OP_Gemm) {
		if (rl_node_attr_int(nd, "transA", 0))
			return *why = "Gemm with transA", false;
		if (rl_node_attr_int(nd, "transB", 0))
			c->k = s, c->n = r, c->ks = 1, c->ns = s;
		c->alpha = (float)rl_node_attr_float(nd, "alpha", 1.0);
		uint32_t cv = rl_node_in(nd, 2);
		if (cv != RL_NONE) {
			const struct rl_value *b = &g->values[cv];
			if (rl_node_attr_float(nd, "beta", 1.0) != 1.0)
				return *why = "Gemm with beta != 1", false;
			if (b->dtype != a->dtype || rl_shape_numel(&b->shape) != c->n ||
			    b->shape.d[b->shape.rank - 1].v != c->n)
				return *why = "Gemm bias C is not one value per output column", false;
			if (b->shape.rank != 1 && !rl_value_is_const(g, cv))
				return *why = "Gemm bias C of rank 2 computed at run time", false;
			c->bias = cv;
		}
	}
	if (a->shape.d[a->shape.rank - 1].v != c->k)
		return *why = "A's last dimension is not K", false;
	return true;
}

/* splitmix64 / Box-Muller: the same rows on every host */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double normal(uint64_t *s)
{
	double u = ((double)(mix(s) >> 11) + 0.5) / 9007199254740992.0;
	double v = (double)(mix(s) >> 11) / 9007199254740992.0;
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Fill x [rows x K] from the calibration tensor of the graph input the node
 * reads, else seeded normal rows. Returns rows; *from says which. */
static int cal_rows(const struct rl_graph *g, const struct rl_pass_ctx *ctx,
                    const struct qcand *c, float *x, const char **from)
{
	for (int j = 0; j < ctx->ncalib && (uint32_t)j < g->ninputs; j++) {
		if (g->inputs[j] != c->a || ctx->calib[j].dtype != RL_DT_FLOAT)
			continue;
		int64_t have = (int64_t)(ctx->calib[j].nbytes / sizeof(float)) / c->k;
		int rows = have < CAL_ROWS ? (int)have : CAL_ROWS;
		if (rows < 1)
			break;
		memcpy(x, ctx->calib[j].data, (size_t)(rows * c->k) * sizeof(float));
		*from = "calibration rows";
		return rows;
	}
	uint64_t seed = 0x5eed;
	for (int64_t i = 0; i < CAL_ROWS * c->k; i++)
		x[i] = (float)normal(&seed);
	*from = "seeded normal rows";
	return CAL_ROWS;
}

/* y[r] = sum_k x[r][k] w[k * ws] for the rows, side by side: one sum per
 * row is an add chain of K dependent adds; the rows' sums are independent,
 * so the loop over k keeps all of them in flight (8x the throughput). */
static void dot_rows(const float *x, int64_t K, int rows, const float *w, int64_t ws, double *y)
{
	double acc[CAL_ROWS] = {0};
	for (int64_t k = 0; k < K; k++) {
		double wk = w[k * ws];
		for (int r = 0; r < rows; r++)
			acc[r] += (double)x[r * K + k] * wk;
	}
	for (int r = 0; r < rows; r++)
		y[r] = acc[r];
}

/* ||X (Wq - W)|| / ||X W|| over the rows; yf holds X W [rows x N]. */
static double rel_error(const struct qcand *c, const struct rl_qweight *qw, const float *x,
                        int rows, const double *yf, float *col)
{
	double num = 0, den = 0, y[CAL_ROWS];
	for (int64_t n = 0; n < c->n; n++) {
		rl_qweight_column(qw, n, col);
		dot_rows(x, c->k, rows, col, 1, y);
		for (int r = 0; r < rows; r++) {
			double d = y[r] - yf[r * c->n + n];
			num += d * d;
			den += yf[r * c->n + n] * yf[r * c->n + n];
		}
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* yf[r][n] for channels n0..n1, whose weights w are [n1 - n0][K]. */
static void float_product(const struct qcand *c, const float *w, int64_t n0, int64_t n1,
                          const float *x, int rows, double *yf)
{
	double y[CAL_ROWS];
	for (int64_t n = n0; n < n1; n++) {
		dot_rows(x, c->k, rows, w + (n - n0) * c->k, 1, y);
		for (int r = 0; r < rows; r++)
			yf[r * c->n + n] = y[r];
	}
}

/*
 * The weight as float32 with each output channel's K values contiguous
 * ([N][K]), copied in 64 x 64 tiles. MatMul's B is K x N: packing and the
 * error products read it a channel at a time, which on B itself strides by
 * N floats per element (a cache line and, for a 7B model's rows, a page per
 * read; quantizing took minutes per GB). float16 weights are widened here
 * too. One weight's copy lives at a time (4 bytes per weight).
 */
static float *channel_major(const struct qcand *c, const void *src, int64_t na, int64_t nz)
{
	float *t = malloc((size_t)(c->k * (nz - na)) * sizeof(float));
	if (!t)
		return NULL;
	const float *f = src;
	const uint16_t *h = src;
	for (int64_t k0 = 0; k0 < c->k; k0 += 64) {
		for (int64_t n0 = na; n0 < nz; n0 += 64)
			for (int64_t k = k0; k < k0 + 64 && k < c->k; k++)
				for (int64_t n = n0; n < n0 + 64 && n < nz; n++) {
					int64_t at = k * c->ks + n * c->ns;
					t[(n - na) * c->k + k] = c->half ? rl_half_to_float(h[at]) : f[at];
				}
		/* MatMul's B: rows k0..k0+63 are contiguous in the source and read
		 * for the last time; hand their pages back now, so the source is
		 * not resident next to its float32 copy */
		if (c->ns == 1) {
			size_t es = c->half ? 2 : 4;
			int64_t k1 = k0 + 64 < c->k ? k0 + 64 : c->k;
			rl_page_out((const char *)src + (size_t)(k0 * c->ks) * es,
			              (size_t)((k1 - k0) * c->ks) * es);
		}
	}
	if (c->ks == 1) /* Gemm's transposed B: these channels' rows */
		rl_page_out((const char *)src + (size_t)(na * c->ns) * (c->half ? 2 : 4),
		              (size_t)((nz - na) * c->ns) * (c->half ? 2 : 4));
	return t;
}

/*
 * A weight's float32 copy is 4 bytes per element: 524 MB for a 7B model's
 * 4096 x 32000 head, the largest term of the pass's resident set. Past
 * STRIP_FLOATS elements it is made a strip of output channels at a time
 * (packing and the error products are per channel), re-read from the
 * source for each pass over it: the finite check, the float product and
 * each scheme tried.
 */
#define STRIP_FLOATS ((int64_t)1 << 23) /* 32 MiB of float32 */

struct wview {
	const struct qcand *c;
	const void *src;     /* the weight's own bytes */
	const float *whole;  /* channel-major float32 of all channels, or NULL: strips */
	int64_t strip;       /* channels per strip */
	float *buf;          /* the current strip's copy */
};

/* Channels [n0, n1) as [n1 - n0][K] float32; NULL when out of memory. */
static const float *view_strip(struct wview *v, int64_t n0, int64_t n1)
{
	if (v->whole)
		return v->whole + n0 * v->c->k;
	free(v->buf);
	v->buf = channel_major(v->c, v->src, n0, n1);
	return v->buf;
}

static uint32_t add_const(struct rl_graph *g, const char *node, const char *suffix,
                          enum rl_dtype dt, int rank, const int64_t *dims, const void *src,
                          size_t nbytes)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s_%s", node, suffix);
	for (int k = 1; rl_graph_find_value(g, buf) != RL_NONE; k++)
		snprintf(buf, sizeof(buf), "%s_%s_%d", node, suffix, k);
	void *data = rl_graph_own(g, nbytes ? nbytes : 1);
	if (!data)
		return RL_NONE;
	memcpy(data, src, nbytes);
	struct rl_shape sh;
	rl_shape_set(&sh, rank, dims);
	uint32_t v = rl_graph_add_value(g, rl_arena_strdup(g, buf), dt, &sh);
	rl_value_set_data(g, v, data, nbytes);
	return v;
}

/*
 * Packed codes spill to a file: a model of 13.5 GB of fp16 weights packs
 * into 3.6 GB of int4 codes and 0.4 GB of float16 scales, which held in the
 * heap would be the process's resident set. Each weight's codes, scales and
 * zero points (each at least SPILL_MIN bytes) are written
 * once to an unlinked temporary file ($TMPDIR, else /tmp) and the value
 * borrows a read-only shared mapping of them (flagged RL_VAL_EXTERNAL, like
 * an initializer read from external data): the pages sit in the page
 * cache, not in this process, until a backend reads them (the ONNX writer
 * copies them to the output's data file and hands them back). Where no
 * file can be made the codes stay in the heap, as before.
 */
#define SPILL_MIN ((size_t)1 << 20)

struct spill {
	int fd;      /* -1: not opened yet; -2: unavailable, use the heap */
	int64_t off; /* next free byte (page-aligned) */
};

static const void *spill_write(struct rl_graph *g, struct spill *sp, const void *src,
                               size_t nbytes)
{
	long pg = sysconf(_SC_PAGESIZE);
	if (nbytes < SPILL_MIN || sp->fd == -2 || pg <= 0)
		return NULL;
	if (sp->fd == -1) {
		const char *dir = getenv("TMPDIR");
		char path[4096];
		snprintf(path, sizeof(path), "%s/rlopt-codes.XXXXXX", dir && *dir ? dir : "/tmp");
		sp->fd = mkstemp(path);
		if (sp->fd < 0) {
			sp->fd = -2;
			return NULL;
		}
		unlink(path); /* gone with the last mapping */
	}
	const char *p = src;
	for (size_t done = 0; done < nbytes;) {
		ssize_t w = pwrite(sp->fd, p + done, nbytes - done, (off_t)(sp->off + (int64_t)done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return NULL; /* disk full: this weight stays in the heap */
		done += (size_t)w;
	}
	void *m = mmap(NULL, nbytes, PROT_READ, MAP_SHARED, sp->fd, (off_t)sp->off);
	if (m == MAP_FAILED)
		return NULL;
	rl_graph_add_mapping(g, m, nbytes);
	sp->off += ((int64_t)nbytes + pg - 1) / pg * pg;
	return m;
}

/* A constant "<node>_<suffix>" holding a copy of src: spilled (above) when
 * sp allows, else graph-owned. */
static uint32_t add_spilled(struct rl_graph *g, struct spill *sp, const char *node,
                            const char *suffix, enum rl_dtype dt, int rank,
                            const int64_t *dims, const void *src, size_t nbytes)
{
	const void *m = sp ? spill_write(g, sp, src, nbytes) : NULL;
	if (!m)
		return add_const(g, node, suffix, dt, rank, dims, src, nbytes);
	char buf[256];
	snprintf(buf, sizeof(buf), "%s_%s", node, suffix);
	for (int k = 1; rl_graph_find_value(g, buf) != RL_NONE; k++)
		snprintf(buf, sizeof(buf), "%s_%s_%d", node, suffix, k);
	struct rl_shape sh;
	rl_shape_set(&sh, rank, dims);
	uint32_t v = rl_graph_add_value(g, rl_arena_strdup(g, buf), dt, &sh);
	rl_value_set_data(g, v, m, nbytes);
	g->values[v].flags |= RL_VAL_EXTERNAL;
	return v;
}

/* A new activation value "<base>_<suffix>" (made unique). */
static uint32_t add_value(struct rl_graph *g, const char *base, const char *suffix,
                          enum rl_dtype dt, const struct rl_shape *sh)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s_%s", base, suffix);
	for (int k = 1; rl_graph_find_value(g, buf) != RL_NONE; k++)
		snprintf(buf, sizeof(buf), "%s_%s_%d", base, suffix, k);
	struct rl_shape copy = *sh;
	return rl_graph_add_value(g, rl_arena_strdup(g, buf), dt, &copy);
}

/* A node name "<base>_<suffix>" no live node has. */
static const char *unique_node(struct rl_graph *g, const char *base, const char *suffix)
{
	char buf[256];
	for (int k = 0;; k++) {
		if (k)
			snprintf(buf, sizeof(buf), "%s_%s_%d", base, suffix, k);
		else
			snprintf(buf, sizeof(buf), "%s_%s", base, suffix);
		bool taken = false;
		for (uint32_t i = 0; i < g->nnodes && !taken; i++)
			taken = !g->nodes[i].dead && g->nodes[i].name && strcmp(g->nodes[i].name, buf) == 0;
		if (!taken)
			return rl_arena_strdup(g, buf);
	}
}

static void set_int(struct rl_graph *g, uint32_t node, const char *name, int64_t v)
{
	rl_node_add_attr(g, node, name, RL_ATTR_INT)->i = v;
}

/* Replace the node by QuantMatMul over the packed weight. */
static enum rl_status rewrite(struct rl_graph *g, const struct qcand *c,
                              const struct rl_qweight *qw, struct spill *sp, uint32_t *qnode)
{
	const char *name = g->nodes[c->node].name;
	int64_t qd[2] = {c->n, qw->rowbytes}, sd[2] = {c->n, qw->nb};
	uint32_t in[5] = {c->a, RL_NONE, RL_NONE, RL_NONE, RL_NONE};
	in[1] = add_spilled(g, sp, name, "qweight", RL_DT_UINT8, 2, qd, qw->q,
	                    (size_t)(c->n * qw->rowbytes));
	if (qw->half_scales) {
		uint16_t *h = malloc((size_t)(c->n * qw->nb) * sizeof(uint16_t));
		if (h) {
			for (int64_t j = 0; j < c->n * qw->nb; j++)
				h[j] = rl_float_to_half(qw->s[j]);
			in[2] = add_spilled(g, sp, name, "qscale", RL_DT_FLOAT16, 2, sd, h,
			                    (size_t)(c->n * qw->nb) * sizeof(uint16_t));
			free(h);
		}
	} else {
		in[2] = add_spilled(g, sp, name, "qscale", RL_DT_FLOAT, 2, sd, qw->s,
		                    (size_t)(c->n * qw->nb) * sizeof(float));
	}
	if (qw->z)
		in[3] = add_spilled(g, sp, name, "qzero", RL_DT_UINT8, 2, sd, qw->z,
		                    (size_t)(c->n * qw->nb));
	if (c->bias != RL_NONE) {
		const struct rl_value *b = &g->values[c->bias];
		if (c->half) { /* C widened to a float32 constant of N values */
			float *bf = malloc((size_t)c->n * sizeof(float));
			if (bf) {
				for (int64_t j = 0; j < c->n; j++)
					bf[j] = rl_half_to_float(((const uint16_t *)b->data)[j]);
				in[4] = add_const(g, name, "bias", RL_DT_FLOAT, 1, &c->n, bf,
				                  (size_t)c->n * sizeof(float));
				free(bf);
			}
		} else {
			in[4] = b->shape.rank == 1 ? c->bias
			      : add_const(g, name, "bias", RL_DT_FLOAT, 1, &c->n, b->data, b->nbytes);
		}
	}
	if (in[1] == RL_NONE || in[2] == RL_NONE || (qw->z && in[3] == RL_NONE) ||
	    (c->bias != RL_NONE && in[4] == RL_NONE))
		return rl_graph_error(g, &g->nodes[c->node], RL_ERR_NOMEM,
		                      "out of memory for the quantized weight");
	int nin = in[4] != RL_NONE ? 5 : in[3] != RL_NONE ? 4 : 3;
	uint32_t y = c->y;
	rl_graph_remove_node(g, c->node);
	if (c->half) { /* Cast(A) -> float32 -> QuantMatMul -> Cast -> float16 Y */
		const char *an = g->values[c->a].name ? g->values[c->a].name : name;
		uint32_t a32 = add_value(g, an, "f32", RL_DT_FLOAT, &g->values[c->a].shape);
		uint32_t y32 = add_value(g, name, "f32", RL_DT_FLOAT, &g->values[y].shape);
		if (a32 == RL_NONE || y32 == RL_NONE)
			return rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory for a Cast");
		uint32_t ca = rl_graph_add_node(g, RL_OP_Cast, unique_node(g, name, "cast_a"), &c->a,
		                                1, &a32, 1);
		set_int(g, ca, "to", RL_DT_FLOAT);
		uint32_t cy = rl_graph_add_node(g, RL_OP_Cast, unique_node(g, name, "cast_y"), &y32,
		                                1, &y, 1);
		set_int(g, cy, "to", RL_DT_FLOAT16);
		in[0] = a32;
		y = y32;
	}
	uint32_t q = rl_graph_add_node(g, RL_OP_QuantMatMul, name, in, nin, &y, 1);
	set_int(g, q, "K", c->k);
	set_int(g, q, "N", c->n);
	set_int(g, q, "bits", qw->bits);
	set_int(g, q, "block_size", qw->block);
	*qnode = q;
	return RL_OK;
}

/*
 * Does the product's output reach a model output with nothing but a Cast
 * between (the LM head)? Its error lands on the logits as it is, while an
 * MLP's is damped by the residual stream it adds into (bench/quant_error.py:
 * on bench_quant's stack, int4 on every product gives 11% logits error,
 * int4 on the head alone 8.7%, on the MLPs alone 6.2%), so `--quantize
 * int4-mixed` keeps it at int8 in blocks, as llama.cpp keeps its output
 * tensor at 6 bits.
 */
static bool makes_output(const struct rl_graph *g, uint32_t y)
{
	for (int hop = 0; hop < 2; hop++) {
		for (uint32_t j = 0; j < g->noutputs; j++)
			if (g->outputs[j] == y)
				return true;
		uint32_t next = RL_NONE;
		int uses = 0;
		for (uint32_t i = 0; i < g->nnodes; i++) {
			const struct rl_node *nd = &g->nodes[i];
			if (nd->dead)
				continue;
			for (int k = 0; k < nd->nin; k++)
				if (nd->in[k] == y) {
					uses++;
					next = nd->op == RL_OP_Cast ? nd->out[0] : RL_NONE;
				}
		}
		if (uses != 1 || next == RL_NONE)
			return false;
		y = next;
	}
	return false;
}

/* Scale candidates the mode allows for node c, narrowest first. */
static int schemes(const struct rl_graph *g, const struct qcand *c, int mode,
                   enum rl_qscheme *out)
{
	int n = 0;
	if (mode == RL_QUANT_INT4_MIXED)
		mode = makes_output(g, c->y) ? RL_QUANT_INT8 : RL_QUANT_INT4;
	if (mode == RL_QUANT_INT4 || mode == RL_QUANT_AUTO) {
		out[n++] = RL_Q_INT4_SYM;
		out[n++] = RL_Q_INT4_ASYM;
	}
	/* int8: blocks only (llama.cpp's Q8_0): one scale per channel is 0.85%
	 * per product on Gaussian weights, which leaves over 1% on the logits of
	 * a stack (bench/quant_error.py); blocks of 32 0.5% */
	if (mode == RL_QUANT_INT8_CHANNEL || mode == RL_QUANT_AUTO)
		out[n++] = RL_Q_INT8_CHANNEL;
	if (mode == RL_QUANT_INT8 || mode == RL_QUANT_INT8_CHANNEL || mode == RL_QUANT_AUTO)
		out[n++] = RL_Q_INT8_BLOCK;
	return n;
}

static bool check_calib(struct rl_graph *g, const struct rl_pass_ctx *ctx, enum rl_status *st)
{
	*st = RL_OK;
	if (ctx->ncalib > (int)g->ninputs) {
		*st = rl_graph_error(g, NULL, RL_ERR_SHAPE, "--calibrate: %d files for %u model "
		                     "inputs", ctx->ncalib, g->ninputs);
		return false;
	}
	for (int j = 0; j < ctx->ncalib; j++) {
		const struct rl_value *v = &g->values[g->inputs[j]];
		const struct rl_tensor *t = &ctx->calib[j];
		bool ok = t->dtype == v->dtype && t->shape.rank == v->shape.rank;
		for (int d = 0; ok && d < v->shape.rank; d++)
			ok = v->shape.d[d].v < 0 || v->shape.d[d].v == t->shape.d[d].v;
		if (!ok) {
			char a[128], b[128];
			*st = rl_graph_error(g, NULL, RL_ERR_SHAPE, "--calibrate: file %d holds %s %s, "
			                     "input '%s' is %s %s", j + 1, rl_dtype_name(t->dtype),
			                     rl_shape_str(&t->shape, a, sizeof(a)), v->name,
			                     rl_dtype_name(v->dtype), rl_shape_str(&v->shape, b, sizeof(b)));
			return false;
		}
	}
	return true;
}

/* A quantized node and its remark, priced again once every node is decided. */
struct reprice {
	uint32_t node, remark;
};

static bool grow_rep(struct reprice **rep, uint32_t *cap)
{
	uint32_t n = *cap ? 2 * *cap : 32;
	struct reprice *p = realloc(*rep, n * sizeof(*p));
	if (!p)
		return false; /* that node keeps the estimate made when it was decided */
	*rep = p;
	*cap = n;
	return true;
}

/*
 * Each quantized node's "after" as the report prices it: the QuantMatMul
 * itself (ir/qweights.c counts), its weights where the final footprint
 * leaves them (once every weight has shrunk, some may now fit a cache
 * level that the estimate made at decision time, with only the nodes
 * before it quantized, did not reach). Updates the remarks and the totals
 * the summary gives.
 */
static void reprice_after(struct rl_graph *g, struct rl_pass_ctx *ctx,
                          const struct rl_machine *m, const struct reprice *rep, uint32_t n,
                          double *bytes_after, double *t_after)
{
	double foot = rl_cost_footprint(g);
	for (uint32_t j = 0; j < n; j++) {
		struct rl_cost ca;
		struct rl_remark *r = &ctx->remarks[rep[j].remark];
		if (!rl_cost_node_kernel(g, rep[j].node, m, NULL, foot, &ca) || r->time_after < 0)
			continue;
		*bytes_after += ca.bytes - r->bytes_after;
		*t_after += ca.time_s - r->time_after;
		r->bytes_after = ca.bytes;
		r->time_after = ca.time_s;
		r->flops_after = ca.flops;
	}
}

enum rl_status rl_pass_quantize(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	const struct rl_machine *m = ctx->machine;
	enum rl_status st;
	if (ctx->quantize == RL_QUANT_NONE)
		return RL_OK;
	if (!check_calib(g, ctx, &st))
		return st;
	if ((st = rl_pass_ensure_order(g)) != RL_OK)
		return st;
	uint32_t nvalues_before = g->nvalues, norder = g->norder;
	uint32_t *order = malloc((norder + 1) * sizeof(*order));
	if (!order)
		return RL_ERR_NOMEM;
	memcpy(order, g->order, norder * sizeof(*order));
	int block = ctx->quant_block ? ctx->quant_block : 32;
	double bytes_before = 0, bytes_after = 0, t_before = 0, t_after = 0;
	/* weights priced where the run's footprint leaves them (ir/cost.c): the
	 * float model's before, and after, the footprint less what this node
	 * and the ones quantized before it save */
	double foot = m ? rl_cost_footprint(g) : 0, saved = 0;
	int nq = 0;
	struct reprice *rep = NULL; /* the quantized nodes and their remarks */
	uint32_t nrep = 0, cap_rep = 0;
	float *wide = NULL; /* a float16 weight widened; freed at the next node or the end */
	struct spill spill = {.fd = -1};
	for (uint32_t o = 0; o < norder && st == RL_OK; o++) {
		uint32_t i = order[o];
		free(wide);
		wide = NULL;
		if (g->nodes[i].dead || (g->nodes[i].op != RL_OP_MatMul && g->nodes[i].op != RL_OP_Gemm))
			continue;
		const char *name = g->nodes[i].name, *why;
		struct qcand c;
		if (!candidate(g, i, &c, &why)) {
			if (why)
				rl_remark(ctx, "quantize", name, "float", -1, -1, -1, -1, "%s", why);
			continue;
		}
		/* price before as the report will price the float product: on the
		 * schedule `tile` will give it (a GEMV's column strips, a GEMM's
		 * blocks), level by level, its weights where the float run's
		 * footprint leaves them; after (below) as the quantized kernel runs */
		struct rl_counts cnt;
		struct rl_cost cb = {0}, ca = {0};
		bool priced = m && rl_count_node(g, i, &cnt);
		if (priced) {
			struct rl_tile keep = g->nodes[i].tile;
			rl_tile_plan(g, i, m, &g->nodes[i].tile);
			priced = rl_cost_node_kernel(g, i, m, rl_tile_traffic, foot, &cb);
			g->nodes[i].tile = keep;
		}
		double wbytes = (double)c.k * (double)c.n * (c.half ? 2 : 4);
		const void *wsrc = g->values[c.w].data; /* the initializer's own bytes */
		if (ctx->quantize == RL_QUANT_AUTO) {
			if (!priced) {
				rl_remark(ctx, "quantize", name, "float", -1, -1, -1, -1,
				          "auto: not priced (no machine, or symbolic shapes): stays float");
				continue;
			}
			double bal = rl_cost_balance(m, rl_node_prec(g, i), true);
			if (cb.bound != RL_BOUND_MEMORY) {
				/* the intensity is at main memory; a tiled product whose
				 * bytes come from a cache can be compute-bound below it */
				char from[48] = "";
				if (cb.level >= 0 && cb.level < m->nlevels - 1)
					snprintf(from, sizeof(from), ", its bytes from %s", m->level[cb.level].name);
				rl_remark(ctx, "quantize", name, "float", cb.bytes, cb.bytes, cb.time_s,
				          cb.time_s, "auto: %s-bound on %s (intensity %.3g FLOP/B vs balance "
				          "%.3g%s): fewer weight bytes would not make it faster; stays float",
				          rl_bound_name((enum rl_bound)cb.bound), m->name, cb.intensity, bal,
				          from);
				continue;
			}
		}
		struct wview wv = {.c = &c, .src = wsrc, .strip = c.n};
		if (c.half || c.ns == 1) {
			int64_t per = STRIP_FLOATS / c.k;
			wv.strip = per < 16 ? 16 : per;
			if (wv.strip >= c.n) {
				wv.strip = c.n;
				if (!(wide = channel_major(&c, wsrc, 0, c.n))) {
					st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory reading a weight");
					break;
				}
				wv.whole = wide;
			}
		} else {
			wv.whole = c.data; /* float32, already [N][K] (Gemm with transB) */
		}
		bool finite = true, oom = false;
		float wmax = 0;
		for (int64_t n0 = 0; n0 < c.n && finite && !oom; n0 += wv.strip) {
			int64_t n1 = n0 + wv.strip < c.n ? n0 + wv.strip : c.n;
			const float *p = view_strip(&wv, n0, n1);
			oom = !p;
			for (int64_t i = 0; p && i < (n1 - n0) * c.k && finite; i++) {
				float v = fabsf(p[i]);
				finite = isfinite(v);
				wmax = v > wmax ? v : wmax;
			}
		}
		free(wv.buf);
		wv.buf = NULL;
		if (oom) {
			st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory reading a weight");
			break;
		}
		/* float16 scales unless --scale-type f32, Gemm's alpha (folded into
		 * the scales after packing) or a scale past float16's range */
		bool half = !ctx->quant_scale32 && c.alpha == 1.0f && wmax / 7 * 72 / 64 < 65504;
		if (!finite) {
			rl_remark(ctx, "quantize", name, "float", -1, -1, -1, -1,
			          "the weight holds NaN or Inf: stays float");
			continue;
		}
		float *x = malloc((size_t)(CAL_ROWS * c.k) * sizeof(float));
		float *col = malloc((size_t)c.k * sizeof(float));
		double *yf = malloc((size_t)(CAL_ROWS * c.n) * sizeof(double));
		if (!x || !col || !yf) {
			free(x), free(col), free(yf);
			st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory measuring quantization error");
			break;
		}
		const char *from;
		int rows = cal_rows(g, ctx, &c, x, &from);
		for (int64_t n0 = 0; n0 < c.n && !oom; n0 += wv.strip) {
			int64_t n1 = n0 + wv.strip < c.n ? n0 + wv.strip : c.n;
			const float *p = view_strip(&wv, n0, n1);
			if (!(oom = !p))
				float_product(&c, p, n0, n1, x, rows, yf);
		}
		enum rl_qscheme sc[4];
		int nsc = schemes(g, &c, ctx->quantize, sc);
		char tried[256] = "";
		size_t tl = 0;
		struct rl_qweight qw = {0};
		double err = 0;
		bool found = false;
		for (int s = 0; s < nsc && !found; s++) {
			rl_qweight_geometry(&qw, sc[s], c.k, c.n, block);
			qw.half_scales = half;
			qw.q = malloc((size_t)(c.n * qw.rowbytes));
			qw.s = malloc((size_t)(c.n * qw.nb) * sizeof(float));
			qw.z = sc[s] == RL_Q_INT4_ASYM ? malloc((size_t)(c.n * qw.nb)) : NULL;
			if (!qw.q || !qw.s || (sc[s] == RL_Q_INT4_ASYM && !qw.z)) {
				free(qw.q), free(qw.s), free(qw.z);
				st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory packing a weight");
				break;
			}
			for (int64_t n0 = 0; n0 < c.n && !oom; n0 += wv.strip) {
				int64_t n1 = n0 + wv.strip < c.n ? n0 + wv.strip : c.n;
				const float *p = view_strip(&wv, n0, n1);
				struct rl_qweight part = qw; /* channels n0..n1: rows of q, s, z */
				part.n = n1 - n0;
				part.q = qw.q + n0 * qw.rowbytes;
				part.s = qw.s + n0 * qw.nb;
				part.z = qw.z ? qw.z + n0 * qw.nb : NULL;
				if (!(oom = !p))
					rl_qweight_pack(&part, p, 1, c.k);
			}
			if (oom) {
				free(qw.q), free(qw.s), free(qw.z);
				break;
			}
			err = rel_error(&c, &qw, x, rows, yf, col);
			tl += (size_t)snprintf(tried + tl, sizeof(tried) - tl, "%s%s %.3g",
			                       tl ? ", " : "", rl_qscheme_name(sc[s]), err);
			if (tl >= sizeof(tried))
				tl = sizeof(tried) - 1;
			if (err <= ctx->max_rel_error) {
				found = true;
				break;
			}
			free(qw.q), free(qw.s), free(qw.z);
			memset(&qw, 0, sizeof(qw));
		}
		free(x), free(col), free(yf);
		free(wv.buf);
		if (oom && st == RL_OK)
			st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory reading a weight");
		if (st != RL_OK)
			break;
		if (!found) {
			rl_remark(ctx, "quantize", name, "float", cb.bytes, cb.bytes, cb.time_s, cb.time_s,
			          "no scheme within --max-rel-error %.3g (block %d; %s: errors %s): "
			          "stays float", ctx->max_rel_error, block, from, tried);
			continue;
		}
		double qbytes = (double)rl_qweight_bytes(&qw);
		if (priced) {
			/* the QuantMatMul as ir/qweights.c counts it: codes and scales
			 * read once, the kernels' split, the activation rows quantized
			 * first, the codes' products at the int8 (or dequantize) rate;
			 * the weights where the footprint less what this node and those
			 * before it save leaves them (repriced at the end with the
			 * final footprint, as the report prices them) */
			struct rl_counts c2 = cnt;
			int64_t rows = c.n > 0 ? rl_shape_numel(&g->values[c.y].shape) / c.n : 1;
			c2.bytes_read += qbytes - wbytes;
			c2.weight_bytes += qbytes - wbytes;
			c2.reuse_bytes = foot - saved - (wbytes - qbytes);
			rl_qmatmul_kernel_counts(qw.bits, c.k, c.n, qw.block, rows, &c2);
			rl_cost_price(m, &c2, RL_PREC_FP32, true, &ca);
		}
		if (ctx->quantize == RL_QUANT_AUTO && ca.time_s > 0.95 * cb.time_s) {
			rl_remark(ctx, "quantize", name, "float", cb.bytes, ca.bytes, cb.time_s, ca.time_s,
			          "auto: %s would save only %.1f%% of the predicted time (weights %.4g of "
			          "%.4g bytes): stays float", rl_qscheme_name(qw.scheme),
			          100 * (1 - ca.time_s / cb.time_s), wbytes, cb.bytes);
			free(qw.q), free(qw.s), free(qw.z);
			continue;
		}
		if (c.alpha != 1.0f)
			for (int64_t j = 0; j < c.n * qw.nb; j++)
				qw.s[j] *= c.alpha;
		char sname[48];
		if (qw.scheme == RL_Q_INT8_CHANNEL)
			snprintf(sname, sizeof(sname), "int8/channel");
		else
			snprintf(sname, sizeof(sname), "%s%d%s", qw.bits == 8 ? "int8/block" : "int4/block",
			         block, qw.z ? "+zp" : "");
		double nb0 = priced ? cb.bytes : -1, nb1 = priced ? ca.bytes : -1;
		rl_remark(ctx, "quantize", name, qw.bits == 8 ? "int8" : "int4", nb0, nb1,
		          priced ? cb.time_s : -1, priced ? ca.time_s : -1,
		          "%s: weight %.4g -> %.4g bytes (%.2fx, %s scales), error %.3g <= %.3g on %s%s%s%s",
		          sname, wbytes, qbytes, wbytes / qbytes, qw.half_scales ? "float16" : "float32", err, ctx->max_rel_error, from,
		          ctx->quantize == RL_QUANT_AUTO ? "; memory-bound, " : strchr(tried, ',') ? "; " : "",
		          ctx->quantize == RL_QUANT_AUTO || strchr(tried, ',') ? "tried " : "",
		          ctx->quantize == RL_QUANT_AUTO || strchr(tried, ',') ? tried : "");
		uint32_t qn = RL_NONE;
		if (priced) {
			ctx->remarks[ctx->nremarks - 1].flops_before = cb.flops;
			ctx->remarks[ctx->nremarks - 1].flops_after = ca.flops;
			bytes_before += cb.bytes, bytes_after += ca.bytes;
			t_before += cb.time_s, t_after += ca.time_s;
		}
		uint32_t rem = ctx->nremarks - 1;
		st = rewrite(g, &c, &qw, &spill, &qn);
		if (st == RL_OK && priced && qn != RL_NONE && (nrep < cap_rep || grow_rep(&rep, &cap_rep))) {
			rep[nrep].node = qn;
			rep[nrep++].remark = rem;
		}
		free(qw.q), free(qw.s), free(qw.z);
		rl_page_out(wsrc, (size_t)(c.k * c.n) * (c.half ? 2 : 4));
		saved += wbytes - qbytes;
		nq++;
	}
	free(order);
	free(wide);
	if (spill.fd >= 0) {
		/* written back now, so the pages a backend reads through the
		 * mappings are clean and can be handed back after (MADV_PAGEOUT
		 * skips dirty pages: the 32-layer 7B write kept ~400 MB of them) */
		(void)fdatasync(spill.fd);
		close(spill.fd); /* the mappings keep the file */
	}
	if (st == RL_OK && m && nrep)
		reprice_after(g, ctx, m, rep, nrep, &bytes_after, &t_after);
	free(rep);
	if (st != RL_OK)
		return st;
	if (nq)
		rl_remark(ctx, "quantize", NULL, "summary", bytes_before, bytes_after, t_before, t_after,
		          "%d nodes quantized: their bytes %.4g -> %.4g, predicted time %.3g -> %.3g s",
		          nq, bytes_before, bytes_after, t_before, t_after);
	if ((st = rl_pass_finish(g, nvalues_before)) != RL_OK || !nq || !m)
		return st;
	struct rl_cost_total t; /* the new nodes' cost annotations */
	rl_cost_graph(g, m, &t);
	return RL_OK;
}
