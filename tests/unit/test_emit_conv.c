/*
 * test_emit_conv.c - the C backend's Conv and pooling kernels
 * (backends/c/emit_conv.c, emit_pool.c) against a reference computed here.
 *
 * One graph holds a Conv per case the emitter tells apart (3x3 at strides 1
 * and 2, 1x1 at strides 1 and 2, a 7x7/2 stem, a 3x3/2 stem with rows wide
 * enough that both stride phases are filled in one pass, depthwise (band mode,
 * the flat form, the row form at strides 1 and 2), grouped with
 * dilation, an odd channel count, a batch of two whose channels do not fit
 * one band and are summed in chunks, a 1-D Conv) and the pools (MaxPool in
 * the vector form (strides 1 and 2, short rows, moved-back chunks), the
 * separable form (stride 3) and the row form, AveragePool with and without
 * the padding counted, 1-D, GlobalAveragePool). Its C must compile with -std=c11 -Wall -Wextra
 * -Werror -pedantic (gcc, and clang where installed); a small program runs
 * it with 1, 2 and 3 threads, and with the FMA micro-kernels turned off
 * (RL_NO_ISA: the portable tiles), and every output must match a double
 * reference within a bound scaled by the sum of |terms|. The outputs must be
 * the same bits at every thread count, and two emissions the same bytes.
 *
 * The cases marked `cv` have constant weights and the tile pass's choice
 * node->tile.conv = RL_CONV_CHANVEC set by hand: the channels-on-vector
 * kernel (output channels on the lanes, weights packed at init), with odd
 * channel counts (a partial block of 32), padding, stride 2, dilation,
 * chunks of input channels, two images, a 1-D Conv, rows cut into two
 * tiles, 1x1 planes as runs of 12-pixel tiles, and a grouped Conv, which
 * that kernel does not take (band mode);
 * `cvrun` cases take it with the weights a graph input (packed per task).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/c/emit_impl.h"
#include "ir.h"
#include "testutil.h"

/* ---- the cases ----------------------------------------------------------- */

struct conv_case {
	int64_t N, C, H, W, M, KH, KW, S, P, D, G; /* H = 1, KH = 1 for 1-D */
	bool bias, one_d;
	bool cv;    /* constant weights, tile.conv = RL_CONV_CHANVEC */
	bool cvrun; /* tile.conv = RL_CONV_CHANVEC with the weights an input: packed per task */
	bool cw;    /* constant weights, no tile choice (3x3/1 of these: the Winograd form) */
};

static const struct conv_case convs[] = {
	{1, 16, 17, 17, 12, 3, 3, 1, 1, 1, 1, true, false, false, false, false},  /* 3x3/1, 4-channel blocks */
	{1, 8, 20, 20, 16, 3, 3, 2, 1, 1, 1, false, false, false, false, false},  /* 3x3/2: stride phases */
	{1, 32, 14, 14, 20, 1, 1, 1, 0, 1, 1, true, false, false, false, false},  /* pointwise */
	{1, 16, 15, 15, 8, 1, 1, 2, 0, 1, 1, false, false, false, false, false},  /* 1x1/2 projection */
	{1, 3, 30, 30, 8, 7, 7, 2, 3, 1, 1, true, false, false, false, false},    /* 7x7/2 stem */
	{1, 8, 12, 12, 8, 3, 3, 1, 1, 1, 8, true, false, false, false, false},    /* depthwise */
	{1, 8, 13, 13, 8, 3, 3, 1, 2, 2, 2, false, false, false, false, false},   /* grouped, dilated */
	{1, 5, 9, 11, 6, 3, 3, 1, 0, 1, 1, true, false, false, false, false},     /* 2-channel blocks */
	{2, 512, 12, 12, 8, 3, 3, 1, 1, 1, 1, true, false, false, false, false},  /* chunks of channels */
	{1, 4, 1, 50, 8, 1, 5, 2, 2, 1, 1, true, true, false, false, false},      /* 1-D */
	{1, 3, 40, 40, 8, 3, 3, 2, 1, 1, 1, true, false, false, false, false},    /* 3x3/2 stem: both phases in one pass */
	{2, 24, 16, 16, 8, 1, 1, 1, 0, 1, 1, true, false, false, false, false},   /* 1x1 in place, sums into Y (band_direct) */
	{1, 512, 16, 16, 8, 1, 1, 1, 0, 1, 1, false, false, false, false, false}, /* the same in chunks of channels */
	{1, 32, 32, 32, 8, 1, 1, 2, 0, 1, 1, true, false, false, false, false},   /* 1x1/2: band filled, sums into Y */
	{1, 8, 37, 37, 8, 1, 1, 2, 0, 1, 1, true, false, false, false, false},    /* 1x1/2, odd rows: 18 even columns in pairs, the 19th alone */
	{1, 24, 55, 55, 16, 1, 1, 1, 0, 1, 1, true, false, false, false, false},  /* 1x1 on 55x55: in place, bands never whole vectors (masked) */
	{1, 3, 92, 92, 8, 3, 3, 2, 0, 1, 1, true, false, false, false, false},    /* 3x3/2 stem, 45 of 46 phase columns: sums into Y row by row (band_rows_out) */
	/* depthwise in the flat form */
	{2, 5, 34, 34, 5, 3, 3, 2, 1, 1, 5, true, false, false, false, false},    /* stride 2, phases filled in pairs, 2 images (rows of 17: flat) */
	{1, 6, 15, 15, 6, 5, 5, 1, 4, 2, 6, false, false, false, false, false},   /* 5x5 dilated, no bias */
	{1, 4, 1, 30, 4, 1, 3, 1, 1, 1, 4, true, true, false, false, false},      /* 1-D */
	{1, 4, 28, 28, 4, 3, 3, 2, 1, 1, 4, true, false, false, false, false},    /* stride 2 on short rows: columns at stride 1, every other kept */
	{2, 5, 15, 15, 5, 3, 3, 2, 1, 1, 5, false, false, false, false, false},   /* the same on odd rows, 2 images, no bias */
	{1, 6, 14, 14, 6, 5, 5, 2, 2, 1, 6, true, false, false, false, false},    /* the same, 5x5/2 with two pads */
	{1, 3, 600, 14, 3, 3, 3, 1, 1, 1, 3, true, false, false, false, false},   /* a tall plane of short rows: bands of 254, 254, 92 rows */
	{1, 3, 400, 34, 3, 3, 3, 2, 1, 1, 3, false, false, false, false, false},  /* stride 2, 17 columns: bands of 55 rows (the last 35) */
	{1, 4, 50, 50, 4, 3, 3, 1, 1, 1, 4, true, false, false, false, false},    /* 50 columns: the row form */
	{1, 4, 40, 17, 4, 3, 3, 1, 1, 1, 4, true, false, false, false, false},    /* 17 columns, the plane whole (pipelined) */
	{1, 4, 40, 40, 4, 3, 3, 1, 1, 1, 4, true, false, false, false, false},    /* 40 columns: the row form */
	{2, 9, 7, 7, 9, 3, 3, 1, 1, 1, 9, true, false, false, false, false},      /* 7x7 planes, pipelined across a range's planes, 2 images */
	/* depthwise 3x3 in the row form (planes the flat form leaves) */
	{2, 3, 100, 100, 3, 3, 3, 2, 1, 1, 3, true, false, false, false, false},  /* stride 2, 50 columns (chunks clamped), 2 images */
	{1, 2, 99, 99, 2, 3, 3, 2, 1, 1, 2, false, false, false, false, false},   /* stride 2, odd rows and columns: the last column's right tap padding */
	{1, 2, 80, 120, 2, 3, 3, 1, 1, 1, 2, true, false, false, false, false},   /* stride 1, 120 columns */
	/* channels on the vector lanes */
	{1, 24, 7, 7, 40, 3, 3, 1, 1, 1, 1, true, false, true, false, false},    /* 7x7, 32 + 8 channels */
	{1, 19, 14, 14, 33, 3, 3, 2, 1, 1, 1, false, false, true, false, false}, /* stride 2, odd counts */
	{1, 40, 7, 7, 64, 1, 1, 1, 0, 1, 1, true, false, true, false, false},    /* pointwise */
	{1, 32, 13, 13, 16, 1, 1, 2, 0, 1, 1, true, false, true, false, false},  /* 1x1/2, no padding */
	{2, 200, 14, 14, 48, 3, 3, 1, 1, 2, 1, true, false, true, false, false}, /* chunks, dilated, 2 images */
	{1, 16, 27, 27, 32, 3, 3, 1, 1, 1, 1, true, false, true, false, false},  /* rows of 13 + 14 pixels */
	{1, 24, 13, 13, 16, 1, 1, 1, 0, 1, 1, true, false, true, false, false},  /* 16 lanes, a 1x1 run: 12 tiles of 12 + 13 (5 + 4 + 4 on AVX2) */
	{1, 300, 11, 11, 64, 1, 1, 1, 0, 1, 1, true, false, true, false, false}, /* a run in chunks, 32 lanes: 9 x 12 + 13 */
	{2, 8, 14, 14, 24, 1, 1, 1, 0, 1, 1, false, false, true, false, false},  /* a run, 2 images: 16 x 12 + 4 */
	{1, 6, 1, 40, 36, 1, 5, 2, 2, 1, 1, true, true, true, false, false},     /* 1-D */
	{1, 16, 7, 7, 32, 3, 3, 1, 1, 1, 2, true, false, true, false, false},    /* grouped: band mode */
	{1, 20, 14, 14, 40, 3, 3, 1, 1, 1, 1, true, false, false, true, false}, /* run-time weights */
	{2, 24, 16, 16, 32, 1, 1, 1, 0, 1, 1, false, false, false, true, false}, /* the same, 1x1 */
	/* the Winograd form F(2x2, 3x3): constant weights, 3x3/1, pads 1 */
	{1, 16, 32, 32, 16, 3, 3, 1, 1, 1, 1, true, false, false, false, true},  /* 16 x 16 tiles, 4 rows a task */
	{2, 8, 25, 27, 12, 3, 3, 1, 1, 1, 1, false, false, false, false, true}, /* odd rows (the last tiles' second row cut) and columns, 2 images */
	{1, 40, 30, 56, 8, 3, 3, 1, 1, 1, 1, true, false, false, false, true},  /* 28 tiles a row, loops of 32 */
	{2, 16, 15, 15, 8, 3, 3, 1, 1, 1, 1, true, false, false, false, true},  /* 8 tiles a row, loops of 8, 2 images */
	{1, 12, 9, 37, 16, 3, 3, 1, 1, 1, 1, false, false, false, false, true}, /* 19 tiles a row, loops of 24 */
	{1, 8, 26, 26, 8, 3, 3, 1, 1, 1, 1, false, false, false, false, false},       /* constant-free weights: band mode */
};
#define NCONV ((int)(sizeof(convs) / sizeof(convs[0])))

enum pool_kind { POOL_MAX, POOL_AVG, POOL_AVG_PAD, POOL_GLOBAL };

struct pool_case {
	enum pool_kind kind;
	int64_t C, H, W, K, S, P; /* H = 1 for 1-D */
	bool one_d;
};

static const struct pool_case pools[] = {
	{POOL_MAX, 8, 17, 17, 3, 2, 0, false},     /* vector form, no edges */
	{POOL_MAX, 4, 16, 16, 3, 2, 1, false},     /* vector form, padded edges */
	{POOL_MAX, 2, 20, 20, 3, 3, 1, false},     /* stride 3: separable form */
	{POOL_MAX, 2, 6, 600, 2, 2, 0, false},     /* rows too wide: row form */
	{POOL_MAX, 3, 27, 27, 3, 2, 0, false},     /* vector form: 13 outputs, one partial chunk */
	{POOL_MAX, 2, 55, 55, 3, 2, 0, false},     /* vector form: 27 outputs, 8 from each of r's 4 chunks (the last moved back) */
	{POOL_MAX, 2, 37, 37, 3, 2, 1, false},     /* vector form: a moved-back chunk and edges */
	{POOL_MAX, 2, 34, 34, 2, 2, 0, false},     /* vector form: 2x2/2, pairs straight from v */
	{POOL_MAX, 2, 35, 35, 3, 1, 1, false},     /* vector form: stride 1, edges both sides */
	{POOL_MAX, 2, 9, 9, 3, 2, 1, false},       /* vector form: a row shorter than 16 */
	{POOL_MAX, 2, 20, 20, 5, 2, 2, false},     /* vector form: 5 taps, two pads */
	{POOL_AVG_PAD, 4, 15, 15, 3, 2, 1, false}, /* padding counted */
	{POOL_AVG, 3, 10, 10, 3, 2, 1, false},     /* padding not counted */
	{POOL_AVG, 4, 7, 7, 7, 1, 0, false},       /* one window per plane: the global kernel */
	{POOL_AVG, 3, 28, 28, 3, 1, 1, false},     /* flat form: one band, a table of counts */
	{POOL_AVG_PAD, 2, 28, 28, 3, 1, 1, false}, /* flat form: one count for all */
	{POOL_AVG, 2, 40, 40, 2, 2, 0, false},     /* flat form: 2x2/2, phases filled in pairs */
	{POOL_AVG, 3, 14, 14, 2, 2, 0, false},     /* flat form: 2x2/2 on rows of 7 pairs, columns at stride 1, pipelined */
	{POOL_AVG, 2, 20, 20, 3, 3, 1, false},     /* flat form: stride 3, phases one by one */
	{POOL_AVG, 2, 130, 130, 3, 1, 1, false},   /* flat form: 5 bands of 26 rows */
	{POOL_AVG, 2, 1, 50, 3, 1, 1, true},       /* flat form: 1-D */
	{POOL_MAX, 3, 7, 7, 3, 1, 1, false},       /* flat form (short rows, stride 1), -inf padding */
	{POOL_MAX, 2, 20, 20, 5, 1, 2, false},     /* flat form: 5x5, two pads */
	{POOL_MAX, 2, 1, 20, 3, 1, 1, true},       /* flat form: 1-D */
	{POOL_MAX, 4, 1, 40, 3, 1, 1, true},       /* 1-D */
	{POOL_GLOBAL, 16, 7, 7, 0, 0, 0, false},   /* eight partial sums */
	{POOL_GLOBAL, 4, 3, 3, 0, 0, 0, false},    /* a short plane */
};
#define NPOOL ((int)(sizeof(pools) / sizeof(pools[0])))

static int64_t conv_out(const struct conv_case *c, bool h)
{
	int64_t in = h ? c->H : c->W, k = h ? c->KH : c->KW;
	int64_t s = h && c->one_d ? 1 : c->S, p = h && c->one_d ? 0 : c->P;
	int64_t d = h && c->one_d ? 1 : c->D;
	return (in + 2 * p - (k - 1) * d - 1) / s + 1;
}

static int64_t pool_out(const struct pool_case *c, bool h)
{
	if (c->kind == POOL_GLOBAL)
		return 1;
	if (h && c->one_d)
		return 1;
	int64_t in = h ? c->H : c->W;
	return (in + 2 * c->P - c->K) / c->S + 1;
}

/* ---- building the graph --------------------------------------------------- */

/* ints attribute of n copies of v */
static void attr_ints_fill(struct rl_graph *g, uint32_t node, const char *name, int n, int64_t v)
{
	struct rl_attr *a = rl_node_add_attr(g, node, name, RL_ATTR_INTS);
	a->ints = rl_arena_alloc(g, sizeof(int64_t) * (size_t)n);
	for (int i = 0; i < n; i++)
		a->ints[i] = v;
	a->n = n;
}

/* Every conv case (inputs x, w[, b]) then every pool case (input x). */
static struct rl_graph *build(void)
{
	struct rl_graph *g = rl_graph_new();
	cr_assert(g);
	g->opset = 13;
	g->path = "test_emit_conv";
	char nm[32];
	for (int i = 0; i < NCONV; i++) {
		const struct conv_case *c = &convs[i];
		int r = c->one_d ? 3 : 4;
		int64_t dx[4] = {c->N, c->C, c->H, c->W}, dw[4] = {c->M, c->C / c->G, c->KH, c->KW};
		if (c->one_d)
			dx[2] = c->W, dw[2] = c->KW;
		uint32_t in[3];
		snprintf(nm, sizeof(nm), "cx%d", i);
		in[0] = tu_input(g, nm, RL_DT_FLOAT, tu_dims(r, dx));
		snprintf(nm, sizeof(nm), "cw%d", i);
		if (c->cv || c->cw) {
			/* a constant: the kernel packs it at init */
			struct rl_shape s;
			rl_shape_set(&s, r, dw);
			in[1] = rl_graph_add_value(g, nm, RL_DT_FLOAT, &s);
			size_t nw = (size_t)rl_shape_numel(&s);
			float *wd = rl_arena_alloc(g, sizeof(float) * nw); /* borrowed by the value */
			cr_assert(wd);
			uint64_t st = 0x51ed27ull + (uint64_t)i;
			for (size_t k = 0; k < nw; k++) {
				st ^= st >> 12, st ^= st << 25, st ^= st >> 27;
				wd[k] = (float)((double)((st * 0x2545f4914f6cdd1dull) >> 40) / (1 << 23) - 1.0);
			}
			rl_value_set_data(g, in[1], wd, sizeof(float) * nw);
		} else {
			in[1] = tu_input(g, nm, RL_DT_FLOAT, tu_dims(r, dw));
		}
		if (c->bias) {
			snprintf(nm, sizeof(nm), "cb%d", i);
			in[2] = tu_input(g, nm, RL_DT_FLOAT, tu_dims(1, &c->M));
		}
		uint32_t n;
		tu_add_flow(g, RL_OP_Conv, in, c->bias ? 3 : 2, 1, &n);
		attr_ints_fill(g, n, "strides", r - 2, c->S);
		attr_ints_fill(g, n, "pads", 2 * (r - 2), c->P);
		attr_ints_fill(g, n, "dilations", r - 2, c->D);
		rl_node_add_attr(g, n, "group", RL_ATTR_INT)->i = c->G;
		if (c->cv || c->cvrun)
			g->nodes[n].tile.conv = RL_CONV_CHANVEC;
		if (c->cw && c->KH == 3 && c->S == 1 && c->P == 1 && c->D == 1 && c->G == 1)
			g->nodes[n].tile.conv = RL_CONV_WINO; /* the tile pass's choice, by hand */
	}
	for (int i = 0; i < NPOOL; i++) {
		const struct pool_case *c = &pools[i];
		int r = c->one_d ? 3 : 4;
		int64_t dx[4] = {1, c->C, c->H, c->W};
		if (c->one_d)
			dx[2] = c->W;
		snprintf(nm, sizeof(nm), "px%d", i);
		uint32_t x = tu_input(g, nm, RL_DT_FLOAT, tu_dims(r, dx));
		enum rl_op op = c->kind == POOL_GLOBAL ? RL_OP_GlobalAveragePool :
		                c->kind == POOL_MAX ? RL_OP_MaxPool : RL_OP_AveragePool;
		uint32_t n;
		tu_add_flow(g, op, &x, 1, 1, &n);
		if (c->kind == POOL_GLOBAL)
			continue;
		attr_ints_fill(g, n, "kernel_shape", r - 2, c->K);
		attr_ints_fill(g, n, "strides", r - 2, c->S);
		attr_ints_fill(g, n, "pads", 2 * (r - 2), c->P);
		if (c->kind == POOL_AVG_PAD)
			rl_node_add_attr(g, n, "count_include_pad", RL_ATTR_INT)->i = 1;
	}
	cr_assert_eq(rl_graph_infer(g), RL_OK, "inference failed: %s", g->err);
	return g;
}

/* ---- the reference -------------------------------------------------------- */

/* y and, per output, the sum of |terms| (the scale of its rounding error) */
static void ref_conv(const struct conv_case *c, const float *x, const float *w, const float *b,
                     double *y, double *mag)
{
	int64_t OH = conv_out(c, true), OW = conv_out(c, false), CG = c->C / c->G;
	int64_t MG = c->M / c->G, H = c->one_d ? 1 : c->H;
	int64_t SH = c->one_d ? 1 : c->S, PT = c->one_d ? 0 : c->P, DH = c->one_d ? 1 : c->D;
	for (int64_t n = 0; n < c->N; n++)
		for (int64_t m = 0; m < c->M; m++)
			for (int64_t oh = 0; oh < OH; oh++)
				for (int64_t ow = 0; ow < OW; ow++) {
					double s = b ? b[m] : 0, a = b ? fabs(b[m]) : 0;
					int64_t g = m / MG;
					for (int64_t ci = 0; ci < CG; ci++)
						for (int64_t kh = 0; kh < c->KH; kh++)
							for (int64_t kw = 0; kw < c->KW; kw++) {
								int64_t ih = oh * SH + kh * DH - PT;
								int64_t iw = ow * c->S + kw * c->D - c->P;
								if (ih < 0 || ih >= H || iw < 0 || iw >= c->W)
									continue;
								double t = (double)x[((n * c->C + g * CG + ci) * H + ih) * c->W + iw] *
								           w[((m * CG + ci) * c->KH + kh) * c->KW + kw];
								s += t;
								a += fabs(t);
							}
					size_t o = (size_t)(((n * c->M + m) * OH + oh) * OW + ow);
					y[o] = s;
					mag[o] = a;
				}
}

static void ref_pool(const struct pool_case *c, const float *x, double *y, double *mag)
{
	int64_t OH = pool_out(c, true), OW = pool_out(c, false), H = c->one_d ? 1 : c->H;
	bool gl = c->kind == POOL_GLOBAL;
	int64_t KH = gl ? H : c->one_d ? 1 : c->K, KW = gl ? c->W : c->K;
	int64_t SH = c->one_d ? 1 : c->S, PT = c->one_d ? 0 : c->P;
	for (int64_t ch = 0; ch < c->C; ch++)
		for (int64_t oh = 0; oh < OH; oh++)
			for (int64_t ow = 0; ow < OW; ow++) {
				double s = 0, a = 0, m = -INFINITY;
				int cnt = 0;
				for (int64_t kh = 0; kh < KH; kh++)
					for (int64_t kw = 0; kw < KW; kw++) {
						int64_t ih = oh * SH + kh - PT, iw = ow * c->S + kw - c->P;
						if (c->kind == POOL_GLOBAL)
							ih = kh, iw = kw;
						bool inside = ih >= 0 && ih < H && iw >= 0 && iw < c->W;
						if (c->kind == POOL_AVG_PAD)
							cnt += ih < H + PT && iw < c->W + c->P;
						if (!inside)
							continue;
						double v = x[(ch * H + ih) * c->W + iw];
						cnt += c->kind != POOL_AVG_PAD;
						s += v;
						a += fabs(v);
						m = v > m ? v : m;
					}
				size_t o = (size_t)((ch * OH + oh) * OW + ow);
				y[o] = c->kind == POOL_MAX ? m : s / cnt;
				mag[o] = c->kind == POOL_MAX ? 0 : a / cnt;
			}
}

/* in.bin: the inputs back to back; for each thread count T in argv,
 * out_T.bin: the outputs back to back */
static const char main_src[] =
	"#include <stdio.h>\n#include <stdlib.h>\n#include \"m.h\"\n"
	"int main(int argc, char **argv)\n{\n"
	"    const void *in[M_NUM_INPUTS];\n    void *out[M_NUM_OUTPUTS];\n"
	"    FILE *f = fopen(\"in.bin\", \"rb\");\n"
	"    if (!f)\n        return 1;\n"
	"    for (int i = 0; i < M_NUM_INPUTS; i++) {\n"
	"        void *p = malloc(m_inputs[i].nbytes);\n"
	"        if (!p || fread(p, 1, m_inputs[i].nbytes, f) != m_inputs[i].nbytes)\n"
	"            return 1;\n"
	"        in[i] = p;\n    }\n    fclose(f);\n"
	"    for (int i = 0; i < M_NUM_OUTPUTS; i++)\n"
	"        if (!(out[i] = malloc(m_outputs[i].nbytes)))\n            return 1;\n"
	"    for (int a = 1; a < argc; a++) {\n"
	"        char name[64];\n"
	"        if (m_set_threads(atoi(argv[a])) != 0 || m_run_v(in, out) != 0)\n"
	"            return 1;\n"
	"        snprintf(name, sizeof(name), \"out_%s.bin\", argv[a]);\n"
	"        FILE *g = fopen(name, \"wb\");\n"
	"        if (!g)\n            return 1;\n"
	"        for (int i = 0; i < M_NUM_OUTPUTS; i++)\n"
	"            fwrite(out[i], 1, m_outputs[i].nbytes, g);\n"
	"        fclose(g);\n    }\n"
	"    m_free();\n"
	"    for (int i = 0; i < M_NUM_INPUTS; i++)\n        free((void *)in[i]);\n"
	"    for (int i = 0; i < M_NUM_OUTPUTS; i++)\n        free(out[i]);\n"
	"    return 0;\n}\n";

static float *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	float *p = malloc((size_t)len + 4);
	cr_assert(p);
	cr_assert_eq(fread(p, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = (size_t)len / sizeof(float);
	return p;
}

struct fixture {
	struct rl_graph *g;
	char *dir;
	float **in; /* per graph input */
};

static void fixture_make(struct fixture *fx)
{
	char err[1024] = "", path[4200];
	fx->g = build();
	fx->dir = tu_tmpdir();
	cr_assert(fx->dir);
	snprintf(path, sizeof(path), "%s/m.c", fx->dir);
	cr_assert_eq(rl_emit_c(fx->g, NULL, path, err, sizeof(err)), RL_OK, "emit: %s", err);
	snprintf(path, sizeof(path), "%s/main.c", fx->dir);
	cr_assert_eq(tu_write(path, main_src, strlen(main_src)), 0);
	/* inputs: a fixed pseudo-random pattern in [-1, 1) */
	fx->in = calloc(fx->g->ninputs, sizeof(*fx->in));
	snprintf(path, sizeof(path), "%s/in.bin", fx->dir);
	FILE *f = fopen(path, "wb");
	cr_assert(f);
	uint64_t st = 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < fx->g->ninputs; i++) {
		int64_t n = rl_shape_numel(&fx->g->values[fx->g->inputs[i]].shape);
		fx->in[i] = malloc(sizeof(float) * (size_t)n);
		for (int64_t k = 0; k < n; k++) {
			st ^= st >> 12, st ^= st << 25, st ^= st >> 27;
			fx->in[i][k] = (float)((double)((st * 0x2545f4914f6cdd1dull) >> 40) / (1 << 23) - 1.0);
		}
		fwrite(fx->in[i], sizeof(float), (size_t)n, f);
	}
	fclose(f);
}

static void fixture_free(struct fixture *fx)
{
	for (uint32_t i = 0; i < fx->g->ninputs; i++)
		free(fx->in[i]);
	free(fx->in);
	tu_rmtree(fx->dir);
	free(fx->dir);
	rl_graph_free(fx->g);
}

/* Check out_<tag>.bin against the reference, output by output. */
static void check_outputs(struct fixture *fx, const char *tag)
{
	char path[4200];
	size_t n;
	snprintf(path, sizeof(path), "%s/out_%s.bin", fx->dir, tag);
	float *got = read_file(path, &n);
	size_t at = 0;
	uint32_t xi = 0;
	for (int i = 0; i < NCONV + NPOOL; i++) {
		int64_t numel = rl_shape_numel(&fx->g->values[fx->g->outputs[i]].shape);
		double *y = malloc(sizeof(double) * (size_t)numel), *mag = malloc(sizeof(double) * (size_t)numel);
		if (i < NCONV) {
			const struct conv_case *c = &convs[i];
			const uint32_t wv = fx->g->nodes[i].in[1];
			const bool cw = c->cv || c->cw;
			const float *w = cw ? fx->g->values[wv].data : fx->in[xi + 1];
			int nin = 2 - cw + c->bias;
			ref_conv(c, fx->in[xi], w, c->bias ? fx->in[xi + nin - 1] : NULL, y, mag);
			xi += (uint32_t)nin;
		} else {
			ref_pool(&pools[i - NCONV], fx->in[xi], y, mag);
			xi++;
		}
		cr_assert_leq(at + (size_t)numel, n, "output %d: short file", i);
		for (int64_t k = 0; k < numel; k++) {
			double d = fabs((double)got[at + (size_t)k] - y[k]);
			cr_assert_leq(d, 1e-5 * mag[k] + 1e-6, "%s: output %d element %lld: %.9g, want %.9g",
			              tag, i, (long long)k, (double)got[at + (size_t)k], y[k]);
		}
		at += (size_t)numel;
		free(y);
		free(mag);
	}
	cr_assert_eq(at, n);
	free(got);
}

static bool same_file(const char *a, const char *b)
{
	return tu_sh("cmp -s '%s' '%s'", a, b) == 0;
}

/* Build the fixture's program with cc (strict: -pedantic, warnings as
 * errors, -O2) and the extra defines, then run it with the thread counts
 * given (each writes out_T.bin); the compiler's messages on failure. */
static int build_and_run(struct fixture *fx, const char *cc, const char *defs,
                         const char *threads)
{
	return tu_sh("cd '%s' && %s -std=c11 -pedantic -Wall -Wextra -Werror -O2 %s main.c m.c -lm "
	             "-pthread -o run 2> cc.log && ./run %s || { cat cc.log >&2; exit 1; }",
	             fx->dir, cc, defs, threads);
}

/* The C the fixture graph g emits (in a new temporary folder, *dir) */
static char *emitted(struct rl_graph *g, char **dir)
{
	char err[1024] = "", p[4200];
	size_t n;
	*dir = tu_tmpdir();
	snprintf(p, sizeof(p), "%s/m.c", *dir);
	cr_assert_eq(rl_emit_c(g, NULL, p, err, sizeof(err)), RL_OK, "%s", err);
	return (char *)read_file(p, &n);
}

static void emitted_free(struct rl_graph *g, char *src, char *dir)
{
	free(src);
	tu_rmtree(dir);
	free(dir);
	rl_graph_free(g);
}

/* ---- tests ------------------------------------------------------------------ */

Test(emit_conv, matches_reference_and_threads_agree)
{
	struct fixture fx;
	fixture_make(&fx);
	int rc = build_and_run(&fx, "${CC:-cc}", "", "1 2 3");
	cr_assert_eq(rc, 0, "building or running the program in %s failed", fx.dir);
	check_outputs(&fx, "1");
	char a[4200], b[4200];
	snprintf(a, sizeof(a), "%s/out_1.bin", fx.dir);
	for (int t = 2; t <= 3; t++) {
		snprintf(b, sizeof(b), "%s/out_%d.bin", fx.dir, t);
		cr_assert(same_file(a, b), "outputs with %d threads differ from 1 thread", t);
	}
	fixture_free(&fx);
}

Test(emit_conv, portable_tiles_match_reference)
{
	struct fixture fx;
	fixture_make(&fx);
	/* no FMA micro-kernels, no per-ISA clones: the kernels' portable path */
	int rc = build_and_run(&fx, "${CC:-cc}", "-DRL_NO_ISA -DRL_NO_CLONES", "1 2");
	cr_assert_eq(rc, 0, "building or running the program in %s failed", fx.dir);
	check_outputs(&fx, "1");
	check_outputs(&fx, "2");
	fixture_free(&fx);
}

Test(emit_conv, avx2_kernels_match_reference)
{
	struct fixture fx;
	fixture_make(&fx);
	/* the AVX2 micro-kernels and transposes (rl_cv_tr_avx2) where an
	 * AVX-512 CPU would take the AVX-512 ones; a CPU without AVX2 runs
	 * the portable path, checked the same way */
	int rc = build_and_run(&fx, "${CC:-cc}", "-DRL_CONV_NO_AVX512", "1 2");
	cr_assert_eq(rc, 0, "building or running the program in %s failed", fx.dir);
	check_outputs(&fx, "1");
	check_outputs(&fx, "2");
	fixture_free(&fx);
}

Test(emit_conv, compiles_with_clang)
{
	if (tu_sh("command -v clang > /dev/null 2>&1") != 0)
		cr_skip_test("clang is not installed");
	struct fixture fx;
	fixture_make(&fx);
	int rc = build_and_run(&fx, "clang", "", "2");
	cr_assert_eq(rc, 0, "clang build or run in %s failed", fx.dir);
	check_outputs(&fx, "2");
	fixture_free(&fx);
}

Test(emit_conv, output_is_deterministic)
{
	struct rl_graph *g = build();
	char *d1 = tu_tmpdir(), *d2 = tu_tmpdir();
	char err[1024] = "", p1[4200], p2[4200];
	snprintf(p1, sizeof(p1), "%s/m.c", d1);
	snprintf(p2, sizeof(p2), "%s/m.c", d2);
	cr_assert_eq(rl_emit_c(g, NULL, p1, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert_eq(rl_emit_c(g, NULL, p2, err, sizeof(err)), RL_OK, "%s", err);
	cr_assert(same_file(p1, p2), "two emissions of one graph differ (%s, %s)", p1, p2);
	tu_rmtree(d1);
	tu_rmtree(d2);
	free(d1);
	free(d2);
	rl_graph_free(g);
}

Test(emit_conv, chanvec_taken_where_it_applies)
{
	/* every group-1 case marked cv runs the channels-on-vector kernel, the
	 * grouped one band mode; and the weights are packed in NAME_init */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	int want = 0, got = 0;
	for (int i = 0; i < NCONV; i++)
		want += (convs[i].cv || convs[i].cvrun) && convs[i].G == 1;
	for (const char *q = src; (q = strstr(q, "Conv, channels on vector lanes (the tile")); q++)
		got++;
	cr_assert_eq(got, want, "%d channels-on-vector kernels, want %d", got, want);
	cr_assert(strstr(src, "_wp = aligned_alloc(64,"), "no weights packed at init");
	cr_assert(strstr(src, "weights packed per task"), "no weights packed per task");
	cr_assert(strstr(src, "rl_conv_split2(d, odd, xr, 18);"), "no stride-2 fill in pairs");
	/* the 1x1 runs: 13x13 (last tile 13 = 1 + 12), 11x11 (13), 14x14 and
	 * the 16x16 cvrun case (256 = 21 x 12 + 4) */
	int runs = 0;
	for (const char *q = src; (q = strstr(q, "the run's last")); q++)
		runs++;
	cr_assert_eq(runs, 4, "%d 1x1 runs, want 4", runs);
	cr_assert(strstr(src, "the run's last 13 pixels") && strstr(src, "the run's last 4 pixels"),
	          "no run tail of 13 or 4 pixels");
	/* the AVX-512 kernels of the unit-stride 3x3 cases at 16 lanes (7x7 24->40,
	 * 14x14 with run-time weights) broadcast each input column once per kernel
	 * row, checked at run time on tap[] (the dilated 200->48 case fails the
	 * check and takes the tap loop): both run in matches_reference on an
	 * AVX-512 CPU, against the double reference */
	cr_assert(strstr(src, "rows3 = tap[k + 1] == tap[k] + 1 && tap[k + 2] == tap[k] + 2;"),
	          "no AVX-512 kernel with the rows-of-three broadcast");
	emitted_free(g, src, d);
}

Test(emit_conv, winograd_taken_where_it_applies)
{
	/* the cases marked cw (the tile pass's RL_CONV_WINO set by hand): the
	 * Winograd form (matches_reference checks its values against the
	 * double reference with AVX-512, AVX2 and the portable products, at 1
	 * to 3 threads); every other 3x3/1 keeps its form */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	int got = 0;
	for (const char *q = src; (q = strstr(q, "Conv, Winograd F(2x2, 3x3)")); q++)
		got++;
	cr_assert_eq(got, 5, "%d Winograd kernels, want 5", got);
	cr_assert(strstr(src, "tiles of 2x2 outputs, 13 x 14 of them"), "no 25x27 Winograd kernel");
	cr_assert(strstr(src, "tiles of 2x2 outputs, 15 x 28 of them"), "no 30x56 Winograd kernel");
	/* a row's transforms run TW rounded up to 8 columns (rl_conv_wino_rowlen):
	 * 8 for 8 tiles a row, 24 for 19, 32 for 28 */
	cr_assert(strstr(src, "tiles of 2x2 outputs, 8 x 8 of them"), "no 15x15 Winograd kernel");
	cr_assert(strstr(src, "tiles of 2x2 outputs, 5 x 19 of them"), "no 9x37 Winograd kernel");
	cr_assert(strstr(src, " rl_wino_vin_8_"), "no 8-column input transform");
	cr_assert(strstr(src, " rl_wino_vout_24_"), "no 24-column output transform");
	cr_assert(strstr(src, " rl_wino_vin_32_"), "no 32-column input transform");
	cr_assert(strstr(src, "_wu = aligned_alloc(64,"), "no weights transformed at init");
	emitted_free(g, src, d);
}

Test(emit_conv, odd_planes_go_straight_to_the_output)
{
	/* the 1x1 on 55x55: bands of whole rows are never whole vectors (R x 55
	 * pixels), yet the micro-kernel reads the input in place and writes its
	 * sums into the output rows, R x 55 columns, the last vector's lanes past
	 * them masked off (matches_reference checks the values, with AVX-512,
	 * AVX2 and the portable tiles, at 1 to 3 threads) */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	const char *k = strstr(src, "X0 float32[1x24x55x55]");
	cr_assert(k, "no 1x1 on 55x55");
	const char *call = strstr(k, "rl_conv4(xg + oh0, 3025, tap, 1, 24,");
	cr_assert(call, "the 1x1 on 55x55 does not read its input in place");
	const char *y = strstr(call, "Y0 + ((n * 16 + mg) * 3025 + oh0), 3025, ");
	cr_assert(y && y < strchr(call, ';'), "the 1x1 on 55x55 does not sum into the output rows");
	long tp = strtol(y + strlen("Y0 + ((n * 16 + mg) * 3025 + oh0), 3025, "), NULL, 10);
	cr_assert(tp > 0 && 3025 % tp == 0 && tp % 55 == 0 && tp % 16 != 0,
	          "band of %ld columns: want whole rows of 55, not a multiple of 16", tp);
	cr_assert(strstr(src, "_mm512_mask_storeu_ps(") && strstr(src, "_mm256_maskstore_ps("),
	          "no masked last vector in the micro-kernels");
	emitted_free(g, src, d);
}

Test(emit_conv, stem_rows_go_straight_to_the_output)
{
	/* the 3x3/2 3->8 on 92x92: phase planes 46 wide for 45 outputs, 27
	 * multiply-adds an output: the micro-kernel writes each output row of a
	 * band of R > 1 rows itself (tp = 45, the last vector masked) from the
	 * band's row i, where it summed R x 46 columns into acc for a copy
	 * (matches_reference checks the values); the 3x3/1 16->12 on 17x17 (144
	 * an output) keeps acc */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	const char *k = strstr(src, "X0 float32[1x3x92x92]");
	cr_assert(k, "no 3x3/2 on 92x92");
	const char *end = strstr(k, "\n}\n");
	const char *loop = strstr(k, "for (size_t i = 0; i < ");
	cr_assert(loop && loop < end && strtol(loop + strlen("for (size_t i = 0; i < "), NULL, 10) > 1,
	          "the stem's band is not a loop over more than one row");
	const char *call = strstr(k, "rl_conv4(band + i * 46, ");
	cr_assert(call && call < end, "the stem does not call the micro-kernel per band row");
	const char *y = strstr(call, "Y0 + ((n * 8 + mg) * 45 + oh0 + i) * 45, 2025, 45, ");
	cr_assert(y && y < strchr(call, ';'), "the stem's rows do not go to the output, 45 columns each");
	const char *k3 = strstr(src, "X0 float32[1x16x17x17]");
	cr_assert(k3, "no 3x3 on 17x17");
	const char *c3 = strstr(k3, "rl_conv4(band, ");
	cr_assert(c3 && c3 < strstr(k3, "\n}\n") && strstr(c3, "acc[0], "),
	          "the 3x3/1 16->12 does not sum into acc");
	emitted_free(g, src, d);
}

Test(emit_conv, thin_parts_give_way_to_bands)
{
	/* the 1x1 24->16 on 55x55 (1.16M multiply-adds, 8 chunks wanted): its
	 * best bands are 5 of 605 pixels, which 8 chunks would cut into parts
	 * of 4 channels, each reading the band's input again (4 multiply-adds
	 * per element read); bands of 275 pixels score within 10%, so there are
	 * 11 of them. The 3x3/1 16->12 on 17x17 (144 an output) keeps the
	 * tallest band its score picks */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	const char *k = strstr(src, "X0 float32[1x24x55x55]");
	cr_assert(k, "no 1x1 on 55x55");
	cr_assert(strstr(k, "per band of 275 output rows") &&
	              strstr(k, "per band of 275 output rows") < strstr(k, "\n}\n"),
	          "the 1x1 24->16 on 55x55 is not in 11 bands of 275 pixels");
	const char *k3 = strstr(src, "X0 float32[1x16x17x17]");
	cr_assert(k3 && strstr(k3, "per band of 17 output rows") &&
	              strstr(k3, "per band of 17 output rows") < strstr(k3, "\n}\n"),
	          "the 3x3/1 16->12 on 17x17 is not one band of 17 rows");
	emitted_free(g, src, d);
}

Test(emit_conv, depthwise_takes_the_flat_form)
{
	/* depthwise on short rows sums in whole vectors over phase planes;
	 * stride 2 only where the fill can split rows in pairs */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	const char *k = strstr(src, "X0 float32[2x5x34x34], X1 float32[5x1x3x3]");
	cr_assert(k && strstr(k, "Conv, depthwise flat form: per plane, the padded input in 4 phase planes of 18 columns") &&
	              strstr(k, "16 pairs at a time"),
	          "the 3x3/2 depthwise on 34x34 is not in the flat form with pairs");
	k = strstr(src, "X0 float32[1x6x15x15], X1 float32[6x1x5x5]");
	cr_assert(k && strstr(k, "Conv, depthwise flat form, pipelined: the padded input of plane it + 1 in 1 phase plane of 23 columns"),
	          "the dilated 5x5 depthwise on 15x15 is not in the pipelined flat form");
	k = strstr(src, "X0 float32[2x9x7x7], X1 float32[9x1x3x3]");
	cr_assert(k && strstr(k, "flat form, pipelined: the padded input of plane it + 1 in 1 phase plane of 9 columns") &&
	              strstr(k, "float xpb[192];") && strstr(k, "/* node '") &&
	              strstr(k, "float xpb[192];") < strstr(k, "/* node '"),
	          "the 3x3 depthwise on 7x7 is not pipelined over two 96-float buffers");
	k = strstr(src, "X0 float32[1x3x600x14], X1 float32[3x1x3x3]");
	cr_assert(k && strstr(k, "1 phase plane of 16 columns") && strstr(k, "bands of 254 output rows"),
	          "the 3x3 depthwise on 600x14 is not in the flat form in bands of 254 rows");
	k = strstr(src, "X0 float32[1x3x400x34], X1 float32[3x1x3x3]");
	cr_assert(k && strstr(k, "4 phase planes of 18 columns") && strstr(k, "bands of 55 output rows") &&
	              (!strstr(k, "pipelined") || strstr(k, "pipelined") > strstr(k, "/* node '")),
	          "the 3x3/2 depthwise on 400x34 is not in the flat form in bands of 55 rows");
	k = strstr(src, "X0 float32[1x4x28x28], X1 float32[4x1x3x3]");
	cr_assert(k && strstr(k, "in 2 phase planes of 29 columns") &&
	              strstr(k, "columns 2 ow: stride 2 summed at stride 1") && strstr(k, "/* node '") &&
	              strstr(k, "columns 2 ow") < strstr(k, "/* node '"),
	          "the 3x3/2 depthwise on 28x28 (13 pair columns) is not summed at stride 1 along the rows");
	k = strstr(src, "X0 float32[1x4x40x17], X1 float32[4x1x3x3]");
	cr_assert(k && strstr(k, "1 phase plane of 19 columns") &&
	              strstr(k, "1 phase plane of 19 columns") < strstr(k, "/* node '"),
	          "the 3x3 depthwise on 40x17 is not in the flat form");
	emitted_free(g, src, d);
}

Test(emit_conv, depthwise_takes_the_row_form)
{
	/* depthwise 3x3 on rows whose 16-output chunks are mostly used (at
	 * stride 1, rows of CONV_DW_ROWS_FIRST_OW or more): the row form */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	static const char *const shapes[] = {"X0 float32[2x3x100x100], X1 float32[3x1x3x3]",
	                                     "X0 float32[1x2x99x99], X1 float32[2x1x3x3]",
	                                     "X0 float32[1x2x80x120], X1 float32[2x1x3x3]",
	                                     "X0 float32[1x4x50x50], X1 float32[4x1x3x3]",
	                                     "X0 float32[1x4x40x40], X1 float32[4x1x3x3]"};
	static const char *const fill[] = {"split into odd and even columns", "split into odd and even columns",
	                                   "zero-padded", "zero-padded", "zero-padded"};
	for (int i = 0; i < 5; i++) {
		const char *k = strstr(src, shapes[i]);
		const char *end = k ? strstr(k, "/* node '") : NULL;
		const char *f = k ? strstr(k, "Conv, depthwise row form") : NULL;
		cr_assert(k && f && (!end || f < end) && strstr(f, fill[i]) && strstr(f, fill[i]) < strstr(f, "\n"),
		          "%s is not in the row form (%s)", shapes[i], fill[i]);
		/* rows copied one output row ahead: 5 live rows at stride 2 */
		const char *ring = i < 2 ? "ring of 8 row buffers" : "ring of 4 row buffers";
		cr_assert(strstr(f, ring) && strstr(f, ring) < strstr(f, "\n"), "%s: not a %s", shapes[i], ring);
	}
	emitted_free(g, src, d);
}

Test(emit_conv, avgpool_takes_the_flat_form)
{
	/* every AveragePool of the graph but the whole-plane one sums in chunks
	 * of 16 over phase planes: bands as the scratch allows, a count table
	 * only where the counts differ */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	const char *k = strstr(src, "X0 float32[1x3x28x28] -> Y0 float32[1x3x28x28]");
	cr_assert(k && strstr(k, "AveragePool, flat form: per band of 28 output rows, the rows it reads copied zero-padded into 1 phase plane of 30 columns"),
	          "the 3x3/1 on 28x28 is not one band of 28 rows over a 30-column plane");
	cr_assert(strstr(k, "_cnt[j + t]") && strstr(src, "_cnt[848] = {"),
	          "the 3x3/1 on 28x28 does not divide by its table of 28 x 30 counts (848, whole chunks)");
	k = strstr(src, "X0 float32[1x2x28x28] -> Y0 float32[1x2x28x28]");
	cr_assert(k && strstr(k, "sb[j + t] = s / 9.0f;"),
	          "the 3x3/1 counting the padding does not divide by 9");
	k = strstr(src, "X0 float32[1x2x40x40] -> Y0 float32[1x2x20x20]");
	cr_assert(k && strstr(k, "into 4 phase planes of 20 columns") &&
	              strstr(k, "16 pairs at a time"),
	          "the 2x2/2 on 40x40 does not fill 4 phase planes in pairs");
	k = strstr(src, "X0 float32[1x3x14x14] -> Y0 float32[1x3x7x7]");
	cr_assert(k && strstr(k, "into 2 phase planes of 14 columns") &&
	              strstr(k, "every other column kept") && strstr(k, "pipelined: plane it + 1 filled"),
	          "the 2x2/2 on 14x14 is not pipelined with its columns at stride 1");
	k = strstr(src, "X0 float32[1x2x130x130]");
	cr_assert(k && strstr(k, "per band of 26 output rows"), "the 130x130 plane is not in bands of 26 rows");
	cr_assert(strstr(src, "X0 float32[1x2x50]") &&
	              strstr(strstr(src, "X0 float32[1x2x50]"), "AveragePool, flat form"),
	          "the 1-D AveragePool is not in the flat form");
	k = strstr(src, "X0 float32[1x3x7x7] -> Y0 float32[1x3x7x7]");
	cr_assert(k && strstr(k, "MaxPool, flat form: per band of 7 output rows, the rows it reads copied -inf-padded into 1 phase plane of 9 columns"),
	          "the 3x3/1 MaxPool on 7x7 is not in the flat form");
	k = strstr(src, "X0 float32[1x2x35x35]");
	cr_assert(k && strstr(k, "MaxPool, row form") && strstr(k, "/* node '") &&
	              strstr(k, "MaxPool, row form") < strstr(k, "/* node '"),
	          "the 3x3/1 MaxPool on 35x35 (rows of 35) left the vector form");
	emitted_free(g, src, d);
}

Test(emit_conv, threads_split_by_work)
{
	/* a layer below two chunks of RL_SPLIT_CONV_MACS runs whole on one thread (the
	 * 1x1/2 projection: 8 x 16 x 8 x 8 multiply-adds); the 512-channel case
	 * (10.6M) is cut into the most chunks; the stem fills both stride phases
	 * with one call per row part */
	struct rl_graph *g = build();
	char *d, *src = emitted(g, &d);
	cr_assert(strstr(src, "threads: at most 1 chunk of 1 iterations (8192 multiply-adds"),
	          "the 1x1/2 projection is not kept on one thread");
	cr_assert(strstr(src, "threads: at most 8 chunks of"), "no layer split into 8 chunks");
	/* the pool is told the chunks themselves (a negative grain), so they are
	 * the ones the cost model prices whatever the iterations' divisors */
	cr_assert(strstr(src, ", -8ll);"), "the 8 chunks are not passed to rl_parallel_for");
	cr_assert(strstr(src, "rl_conv_split2(d"), "the 3x3/2 stem does not fill both phases at once");
	emitted_free(g, src, d);
}
