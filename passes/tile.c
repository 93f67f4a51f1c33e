/*
 * tile.c - tiles for the memory hierarchy, chosen analytically per machine.
 *
 * The cost model prices a node as if its data streamed from main memory once.
 * Whether the emitted code gets there, and what the closer levels then carry,
 * depends on its schedule. This pass writes that schedule (node->tile, struct
 * rl_tile in ir/ir.h) for every kernel, from the machine profile alone, and
 * says why in a remark with the bytes moved at each level. The C backend
 * follows the tiles; rl_tile_traffic() gives the cost model the per-level
 * bytes of the same schedule.
 *
 * Products (MatMul, batched MatMul, Gemm, Conv, ConvTranspose) are blocked as
 * in BLIS (loops jc over nc columns, pc over kc of the inner dimension, ic
 * over mc rows, then jr/ir over the nr x mr register tile) with the blocks
 * from the analytical model of Low et al., "Analytical modeling is enough for
 * high-performance BLIS" (ACM TOMS 43(2), 2016):
 *
 *   register tile  nv = 2 vectors of B per row (nr = 2 x the vector width) and
 *                  mr = (registers - nv - 1) / nv rows, capped at 16: mr x nv
 *                  accumulators, nv B loads and one broadcast of A fill the
 *                  vector registers (AVX2 16 regs: 6x16 fp32; AVX-512 32
 *                  regs: 14x32). mr x nv must also cover FMA latency x units
 *                  independent chains; the remark says when it cannot.
 *   kc             the kc x nr micro-panel of B stays in L1 while mr x kc
 *                  slivers of A stream through it. With W ways of a way size
 *                  w (a core's share of L1 / W): the A sliver gets
 *                  C_A = floor((W - 1) / (1 + nr/mr)) ways, kc = C_A w /
 *                  (mr S), and B's ceil(kc nr S / w) ways plus C_A must leave
 *                  one way for C (else, and without ways in the profile,
 *                  (mr + nr) kc S = half of L1). Rounded down to a multiple
 *                  of 8 (the k loop's unroll), at least 8.
 *   mc             the mc x kc block of A stays in L2 next to one B
 *                  micro-panel and a way for C: mc kc S = (W2 - 1 -
 *                  ceil(kc nr S / w2)) w2, or half of L2 without ways.
 *                  Rounded down to a multiple of mr.
 *   nc             the kc x nc panel of B stays in the last cache next to the
 *                  A block: kc nc S = (W3 - 1 - ceil(mc kc S / w3)) w3, or
 *                  half of it without ways. Rounded down to a multiple of nr.
 *
 * Every cache is taken at a core's share, capacity / cores (profiles give chip
 * totals): exact for private L1 and L2, and for a shared last level the share
 * each core has when every core runs, which is how the generated code runs.
 * The blocks are then clamped to the problem (kc <= K, mc <= M, nc <= N).
 * `par` counts independent C blocks, batch x ceil(M/mc) x ceil(N/nc); while it
 * is below the core count, the larger of mc and nc halves (rounded up to mr
 * or nr, no smaller than them), so blocks stay near square, until every core
 * has a block, the problem runs out, or a block would fall below 64^3 MACs
 * (less work than a fork/join costs).
 *
 * Implicit GEMM for convolutions, per image and group:
 *   Conv           M = output channels / group, N = output pixels (product
 *                  of the output's spatial dims), K = input channels / group
 *                  x kernel size; batch = images x groups.
 *   ConvTranspose  the col = W^T X product before col2im: M = output
 *                  channels / group x kernel size, N = input pixels, K =
 *                  input channels / group; batch = images x groups (the
 *                  col2im scatter is not counted).
 * MatMul with a rank <= 2 B flattens A's leading dims into M (the weight is
 * shared); a batched B keeps batch = numel(Y) / (M N) products. Gemm is one
 * M x N x K product.
 *
 * A product with M = 1 (one row of A: batch-1 inference) is a GEMV: it
 * streams B once, and what matters is enough independent accumulators to
 * cover FMA latency: accum = latency x FMA units vectors, nr = accum x the
 * vector width columns per strip (narrower when N is), and kc = K unless the
 * x vector exceeds half of L1, then the L1-sized block. par = column strips.
 *
 * Streaming kernels get strips (kind STRIP):
 *   elementwise    a fused group (node->group >= 0 without a product in the
 *                  group: an epilogue runs in its product's output loop and
 *                  gets no tile of its own) or a single node: bytes per
 *                  element = every full-size tensor the kernel touches,
 *                  intermediates of a group included (a strip-mined kernel
 *                  may hold them in strip-sized buffers); strip = half of L1
 *                  / bytes per element, rounded down to a multiple of the
 *                  vector width and of a cache line; par = strips.
 *   row ops        Softmax, LogSoftmax, Hardmax, LayerNormalization and the
 *                  reductions make several passes over a row (3, 3, 2, 3 and
 *                  1): strip = the row when it fits half of L1, else an
 *                  L1-sized chunk per pass with the row re-read from the
 *                  first level that holds its working set (the rows of x
 *                  and y and the other inputs, such as LayerNorm's scale
 *                  and bias, which come from that level once per row);
 *                  par = rows.
 *
 * Split across threads: a Conv (on a CPU) records in tile.chunks the most
 * chunks the thread pool cuts it into (rl_split_conv_chunks, ir/cost.h): the
 * C backend follows it and the cost model prices it.
 *
 * Too small to tile (kind PLAIN): a product of fewer than 64^3 MACs (the
 * packing and blocking cost more than they save), one whose C fits in one
 * register tile (M < mr and N < nr; a product short in only one dimension,
 * such as a batch-4 layer, still gains from blocking the other two, with
 * partial register tiles), one with fewer columns than a vector (N = 1:
 * A times a vector), a GEMV of fewer than 64^2 B elements or N below the
 * vector width, a streaming kernel of fewer than 1024 elements.
 *
 * GPU profiles (kind="gpu") get a thread-block schedule sized for the first
 * level (shared memory / LDS): an mc x nc = 128 x 128 block tile, kc = 32,
 * 8 x 8 per-thread register tile (mr, nr; 64 x 64 a warp for 16-bit
 * products, which run on tensor cores), halved while the double-buffered
 * A and B tiles exceed half a multiprocessor's share or the block exceeds the
 * problem; par = thread blocks. GEMV: 256 columns per block (one per
 * thread), 4 accumulators (k unroll). Strips: 1024 elements (256 threads x 4).
 *
 * Defaults. A CPU profile without <simd>, line_bytes or ways still tiles:
 * 256-bit vectors, 16 registers, 2 FMA units, 4-cycle FMA latency, 64-byte
 * lines, and without ways every block fills half of its cache (an assumed
 * associativity would pretend a precision the profile lacks; half a cache is
 * the rule that needs none). A profile with no cache level at all is tiled
 * for 32 KiB L1, 512 KiB L2 and 2 MiB L3 per core. One remark lists what was
 * defaulted; nothing else changes.
 *
 * Precondition: shapes inferred, after fuse (groups marked). The pass only
 * writes node->tile and remarks; the graph is unchanged. Without a machine it
 * leaves every tile zero (backend defaults) and says so.
 */
#include "pass.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TILE_MIN_MACS (64.0 * 64.0 * 64.0) /* a product below this is PLAIN */
#define TILE_MIN_GEMV (64.0 * 64.0)        /* B elements of a GEMV below this: PLAIN */
#define TILE_MIN_STRIP 1024                /* elements of a streaming kernel */
#define TILE_NV 2                          /* vectors of B per register-tile row */
#define TILE_MAX_MR 16
#define TILE_KC_UNROLL 8

#define TILE_DEF_SIMD_BITS 256
#define TILE_DEF_REGS 16
#define TILE_DEF_FMA_UNITS 2
#define TILE_DEF_FMA_LAT 4
#define TILE_DEF_LINE 64

#define TILE_GPU_BLOCK 128 /* thread-block tile, rows and columns */
#define TILE_GPU_KC 32
#define TILE_GPU_RT 8      /* per-thread register tile */
#define TILE_GPU_WARP 64   /* a warp's output tile on tensor cores (16-bit products) */
#define TILE_GPU_THREADS 256

#define KIB 1024.0

/* ---- the machine as the tiler sees it ----------------------------------- */

struct tgeom {
	bool gpu;
	int simd_bits, regs, fma_units, fma_lat;
	int cores;
	double core_fp32;                /* a core's fp32 vector peak, FLOP/s (0: unknown) */
	int ncache;                      /* cache levels; the memory is level ncache */
	double cap[RL_MAX_MEM_LEVELS];   /* a core's share (GPU: an SM's), bytes */
	int line[RL_MAX_MEM_LEVELS];     /* bytes */
	int ways[RL_MAX_MEM_LEVELS];     /* 0: unknown, half-capacity rule */
	char name[RL_MAX_MEM_LEVELS][32];
	int map;                         /* 0: tiler level i is profile level i;
	                                    -1: default caches, only memory maps */
	int ia, ib;                      /* levels of the A block and the B panel */
	char missing[160];               /* the fields that were defaulted */
};

static void add_missing(struct tgeom *t, const char *what)
{
	size_t k = strlen(t->missing);
	snprintf(t->missing + k, sizeof(t->missing) - k, "%s%s", k ? ", " : "", what);
}

static void geom(const struct rl_machine *m, struct tgeom *t)
{
	memset(t, 0, sizeof(*t));
	t->gpu = strcmp(m->kind, "gpu") == 0;
	t->cores = m->cores > 0 ? m->cores : 1;
	t->core_fp32 = rl_machine_peak(m, RL_PREC_FP32, false) / t->cores;
	t->simd_bits = m->simd_bits;
	t->regs = m->simd_registers;
	t->fma_units = m->fma_units;
	t->fma_lat = m->fma_latency;
	if (!t->gpu) {
		if (!t->simd_bits) {
			t->simd_bits = TILE_DEF_SIMD_BITS;
			add_missing(t, "width_bits");
		}
		if (!t->regs) {
			t->regs = TILE_DEF_REGS;
			add_missing(t, "registers");
		}
		if (!t->fma_units) {
			t->fma_units = TILE_DEF_FMA_UNITS;
			add_missing(t, "fma_units");
		}
		if (!t->fma_lat) {
			t->fma_lat = TILE_DEF_FMA_LAT;
			add_missing(t, "fma_latency_cycles");
		}
	}
	if (m->nlevels < 2) {
		/* no cache in the profile: tile for a small core's, price memory only */
		static const double def[3] = {32 * KIB, 512 * KIB, 2048 * KIB};
		static const char *const nm[3] = {"L1", "L2", "L3"};
		t->ncache = 3;
		for (int i = 0; i < 3; i++) {
			t->cap[i] = def[i];
			t->line[i] = TILE_DEF_LINE;
			snprintf(t->name[i], sizeof(t->name[i]), "%s", nm[i]);
		}
		t->map = -1;
		add_missing(t, "cache levels");
	} else {
		bool noline = false, noways = false;
		t->ncache = m->nlevels - 1;
		for (int i = 0; i < t->ncache; i++) {
			const struct rl_mem_level *l = &m->level[i];
			t->cap[i] = l->capacity / t->cores;
			t->line[i] = l->line_bytes;
			t->ways[i] = l->ways;
			if (!t->line[i]) {
				t->line[i] = TILE_DEF_LINE;
				noline = true;
			}
			noways |= !l->ways;
			/* a set of the way rule must fit in the share; else halves */
			if (t->ways[i] && t->cap[i] / t->ways[i] < t->line[i])
				t->ways[i] = 0;
			snprintf(t->name[i], sizeof(t->name[i]), "%s", l->name);
		}
		if (!t->gpu && noline)
			add_missing(t, "line_bytes");
		if (!t->gpu && noways)
			add_missing(t, "ways");
	}
	snprintf(t->name[t->ncache], sizeof(t->name[0]), "%s",
	         m->nlevels > 0 ? rl_machine_dram(m)->name : "memory");
	t->ia = t->ncache >= 2 ? 1 : 0;
	t->ib = t->ncache - 1;
}

/* Elements per vector of S-byte elements. */
static int vwidth(const struct tgeom *t, int S)
{
	int vw = t->gpu ? 1 : t->simd_bits / (8 * S);
	return vw > 0 ? vw : 1;
}

/* ---- small helpers ------------------------------------------------------ */

static int64_t cdiv(int64_t a, int64_t b)
{
	return b > 0 ? (a + b - 1) / b : 0;
}

static int64_t imin(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t imax(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* Round x down to a multiple of q, at least q. */
static int64_t rdown(int64_t x, int64_t q)
{
	return q > 0 && x >= q ? x / q * q : q;
}

/* "1.23 MB": decimal, as the report prints bytes. */
static const char *fmt_bytes(char *b, size_t n, double x)
{
	static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
	int u = 0;
	while (x >= 999.5 && u < 5) {
		x /= 1000;
		u++;
	}
	snprintf(b, n, "%.3g %s", x, unit[u]);
	return b;
}

/* "32 KiB": binary, as caches are sized. */
static const char *fmt_cache(char *b, size_t n, double x)
{
	if (x >= KIB * KIB && fmod(x, KIB * KIB / 4) == 0)
		snprintf(b, n, "%g MiB", x / (KIB * KIB));
	else if (x >= KIB)
		snprintf(b, n, "%.4g KiB", x / KIB);
	else
		snprintf(b, n, "%.0f B", x);
	return b;
}

static const struct rl_shape *vshape(const struct rl_graph *g, uint32_t v)
{
	return &g->values[v].shape;
}

static int64_t vnumel(const struct rl_graph *g, uint32_t v)
{
	return v == RL_NONE ? -1 : rl_shape_numel(vshape(g, v));
}

static double value_bytes(const struct rl_graph *g, uint32_t v)
{
	int64_t ne = vnumel(g, v);
	return ne > 0 ? (double)ne * (double)rl_dtype_size(g->values[v].dtype) : 0.0;
}

static bool literal(const struct rl_graph *g, uint32_t v)
{
	return rl_value_is_const(g, v) && vnumel(g, v) == 1;
}

/* A node that runs at run time: live, with an output that is not known at
 * build time. */
static bool runs(const struct rl_graph *g, const struct rl_node *n)
{
	if (n->dead)
		return false;
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE && !rl_value_is_const(g, n->out[o]))
			return true;
	return false;
}

/* ---- products as GEMM --------------------------------------------------- */

struct gdims {
	int64_t M, N, K, batch;
	int S;  /* bytes per element of A */
};

static bool is_product(enum rl_op op)
{
	return op == RL_OP_MatMul || op == RL_OP_Gemm || op == RL_OP_Conv ||
	       op == RL_OP_ConvTranspose;
}

/* M, N, K and the number of products, per the mapping in the opening
 * comment; false when a shape is not static or does not fit. */
static bool gemm_dims(const struct rl_graph *g, const struct rl_node *n, struct gdims *d)
{
	uint32_t a = rl_node_in(n, 0), b = rl_node_in(n, 1), y = n->nout > 0 ? n->out[0] : RL_NONE;
	if (a == RL_NONE || b == RL_NONE || y == RL_NONE)
		return false;
	const struct rl_shape *sa = vshape(g, a), *sb = vshape(g, b), *sy = vshape(g, y);
	if (!rl_shape_is_static(sa) || !rl_shape_is_static(sb) || !rl_shape_is_static(sy))
		return false;
	memset(d, 0, sizeof(*d));
	d->S = (int)rl_dtype_size(g->values[a].dtype);
	if (d->S <= 0)
		return false;
	int64_t ny = rl_shape_numel(sy);
	int ra = sa->rank, rb = sb->rank;
	switch (n->op) {
	case RL_OP_MatMul:
		if (ra < 1 || rb < 1)
			return false;
		d->K = sa->d[ra - 1].v;
		d->M = ra >= 2 ? sa->d[ra - 2].v : 1;
		d->N = rb >= 2 ? sb->d[rb - 1].v : 1;
		if (d->M <= 0 || d->N <= 0)
			return false;
		d->batch = ny / (d->M * d->N);
		if (rb <= 2 && ra > 2) { /* shared weight: A's leading dims are rows */
			d->M *= d->batch;
			d->batch = 1;
		}
		break;
	case RL_OP_Gemm:
		if (ra != 2 || sy->rank != 2)
			return false;
		d->M = sy->d[0].v;
		d->N = sy->d[1].v;
		d->K = sa->d[rl_node_attr_int(n, "transA", 0) ? 0 : 1].v;
		d->batch = 1;
		break;
	case RL_OP_Conv:
	case RL_OP_ConvTranspose: {
		int64_t grp = rl_node_attr_int(n, "group", 1);
		if (ra < 3 || rb != ra || sy->rank != ra || grp < 1)
			return false;
		int64_t pix_in = 1, pix_out = 1, ksz = 1;
		for (int i = 2; i < ra; i++) {
			pix_in *= sa->d[i].v;
			pix_out *= sy->d[i].v;
			ksz *= sb->d[i].v;
		}
		int64_t cin = sa->d[1].v, cout = sy->d[1].v;
		d->batch = sa->d[0].v * grp;
		if (n->op == RL_OP_Conv) {
			d->M = cout / grp;
			d->N = pix_out;
			d->K = cin / grp * ksz;
		} else {
			d->M = cout / grp * ksz;
			d->N = pix_in;
			d->K = cin / grp;
		}
		break;
	}
	default:
		return false;
	}
	return d->M > 0 && d->N > 0 && d->K > 0 && d->batch > 0;
}

/* Why the blocks are what they are, for the remark. */
struct gwhy {
	int kc_ways, kc_of;  /* ways used (A sliver + B micro-panel) of kc_of; 0: half rule */
	int mc_ways, mc_of;
	int nc_ways, nc_of;
	bool latency_short;  /* mr x nv accumulators below latency x units */
	bool split;          /* mc or nc shrunk so every core has a block */
	const char *plain;   /* reason when PLAIN */
};

/* Bytes of one way of tiler level i. */
static double way_bytes(const struct tgeom *t, int i)
{
	return t->ways[i] ? t->cap[i] / t->ways[i] : 0;
}

static void gemm_cpu(const struct tgeom *t, const struct gdims *d, struct rl_tile *tl,
                     struct gwhy *why)
{
	int S = d->S, vw = vwidth(t, S);
	int nv = t->regs >= 2 * TILE_NV + 1 + 1 ? TILE_NV : 1;
	int64_t mr = (t->regs - nv - 1) / nv;
	mr = imax(1, imin(mr, TILE_MAX_MR));
	int64_t nr = (int64_t)nv * vw;
	why->latency_short = mr * nv < (int64_t)t->fma_lat * t->fma_units;
	tl->mr = (int32_t)mr;
	tl->nr = (int32_t)nr;

	/* kc: the B micro-panel and an A sliver in L1 */
	double w1 = way_bytes(t, 0), kc = 0;
	if (t->ways[0] >= 2) {
		int car = (int)floor((t->ways[0] - 1) / (1.0 + (double)nr / (double)mr));
		if (car >= 1) {
			kc = car * w1 / ((double)mr * S);
			kc = (double)rdown((int64_t)kc, TILE_KC_UNROLL);
			int cbr = (int)ceil(kc * (double)nr * S / w1);
			if (car + cbr <= t->ways[0] - 1) {
				why->kc_ways = car + cbr;
				why->kc_of = t->ways[0];
			} else {
				kc = 0;
			}
		}
	}
	if (kc <= 0)
		kc = (double)rdown((int64_t)(t->cap[0] / 2 / ((double)(mr + nr) * S)),
		                   TILE_KC_UNROLL);
	int64_t ikc = imin((int64_t)kc, d->K);

	/* mc: the A block in L2, next to a B micro-panel and a way for C */
	int ia = t->ia, ib = t->ib;
	double mc = 0;
	if (ia > 0 && t->ways[ia] >= 3) {
		double w = way_bytes(t, ia);
		int cb = (int)ceil((double)ikc * (double)nr * S / w);
		int cac = t->ways[ia] - 1 - cb;
		if (cac >= 1) {
			mc = cac * w / ((double)ikc * S);
			why->mc_ways = cac;
			why->mc_of = t->ways[ia];
		}
	}
	if (mc <= 0)
		mc = ia > 0 ? t->cap[ia] / 2 / ((double)ikc * S)
		            : (double)mr; /* one cache: the A sliver is the block */
	int64_t imc = imin(rdown((int64_t)mc, mr), d->M);

	/* nc: the B panel in the last cache, next to the A block */
	double nc = 0;
	if (t->ways[ib] >= 3) {
		double w = way_bytes(t, ib);
		int ca = (int)ceil((double)imc * (double)ikc * S / w);
		int cbc = t->ways[ib] - 1 - ca;
		if (cbc >= 1) {
			nc = cbc * w / ((double)ikc * S);
			why->nc_ways = cbc;
			why->nc_of = t->ways[ib];
		}
	}
	if (nc <= 0)
		nc = t->cap[ib] / 2 / ((double)ikc * S);
	int64_t inc = imin(rdown((int64_t)nc, nr), d->N);

	/* threads: every core a C block where the problem allows; halve the
	 * larger of mc and nc at a time, so blocks stay near square (each
	 * block reads an A block and a B panel: square moves the fewest bytes
	 * per MAC) */
	int64_t blocks = d->batch * cdiv(d->M, imc) * cdiv(d->N, inc);
	while (blocks < t->cores && (imc > mr || inc > nr)) {
		int64_t m2 = imc, n2 = inc;
		if ((imc >= inc && imc > mr) || inc <= nr)
			m2 = imin(imax(mr, cdiv(imc / 2, mr) * mr), d->M);
		else
			n2 = imin(imax(nr, cdiv(inc / 2, nr) * nr), d->N);
		/* a thread's block must be worth a fork: no split below 64^3 MACs */
		if ((double)m2 * (double)n2 * (double)d->K < TILE_MIN_MACS)
			break;
		imc = m2;
		inc = n2;
		blocks = d->batch * cdiv(d->M, imc) * cdiv(d->N, inc);
		why->split = true;
	}
	tl->kc = (int32_t)ikc;
	tl->mc = (int32_t)imc;
	tl->nc = (int32_t)inc;
	tl->par = blocks;
}

static void gemm_gpu(const struct tgeom *t, const struct gdims *d, struct rl_tile *tl)
{
	/* 16-bit products 64 deep: half the barriers per k of 32 (H200, 4096^3:
	 * 511 against 552 us) */
	int64_t mc = TILE_GPU_BLOCK, nc = TILE_GPU_BLOCK, kc = d->S == 2 ? 2 * TILE_GPU_KC : TILE_GPU_KC;
	/* double-buffered A and B tiles in half an SM's shared memory */
	while ((mc > 32 || nc > 32) && 2.0 * (double)(mc + nc) * (double)kc * d->S > t->cap[0] / 2) {
		mc = mc > 32 ? mc / 2 : mc;
		nc = nc > 32 ? nc / 2 : nc;
	}
	while (mc > 32 && mc / 2 >= d->M)
		mc /= 2;
	while (nc > 32 && nc / 2 >= d->N)
		nc /= 2;
	/* 16-bit products run on tensor cores, a warp's 64 x 64 outputs reading
	 * their fragments from shared memory (the CUDA backend's mma.sync kernel);
	 * others a thread's 8 x 8 */
	tl->mr = d->S == 2 ? TILE_GPU_WARP : TILE_GPU_RT;
	tl->nr = d->S == 2 ? TILE_GPU_WARP : TILE_GPU_RT;
	tl->kc = (int32_t)imin(kc, d->K);
	tl->mc = (int32_t)mc;
	tl->nc = (int32_t)nc;
	tl->par = d->batch * cdiv(d->M, mc) * cdiv(d->N, nc);
}

static void gemv_tile(const struct tgeom *t, const struct gdims *d, struct rl_tile *tl)
{
	if (t->gpu) {
		tl->accum = 4;
		tl->mr = 1;
		tl->nr = (int32_t)imin(TILE_GPU_THREADS, d->N);
		tl->kc = (int32_t)d->K;
		tl->par = d->batch * cdiv(d->N, tl->nr);
		return;
	}
	int vw = vwidth(t, d->S);
	int64_t accum = (int64_t)t->fma_lat * t->fma_units;
	accum = imax(1, imin(accum, t->regs - 2)); /* + the broadcast and a load */
	int64_t nr = imin(accum * vw, cdiv(d->N, vw) * vw);
	/* the x block stays in L1 across every column strip */
	int64_t kc = d->K;
	if ((double)d->K * d->S > t->cap[0] / 2)
		kc = rdown((int64_t)(t->cap[0] / 2 / d->S), (int64_t)vw * TILE_KC_UNROLL);
	tl->accum = (int32_t)accum;
	tl->nr = (int32_t)nr;
	tl->mr = 1;
	tl->kc = (int32_t)imin(kc, d->K);
	tl->par = d->batch * cdiv(d->N, nr);
}

/* ---- per-level bytes ---------------------------------------------------- */

/*
 * bytes[i] is the traffic between tiler level i and the level nearer the
 * core (registers for i = 0): what level i must deliver and absorb. For the
 * BLIS loop order, per product, with S bytes per element, nN = ceil(N/nc),
 * nK = ceil(K/kc), nM = ceil(M/mc), cN = ceil(N/nr), cM = ceil(M/mr):
 *
 *   A  registers and every level up to the A block's (L2): M K cN, since a
 *      sliver is loaded once per micro-kernel call and not kept; beyond it:
 *      M K nN (the block is packed once per (jc, pc, ic)).
 *   B  registers: K N cM (the micro-panel, L1-resident, is read by each
 *      micro-kernel call); levels up to the panel's (the last cache):
 *      K N nM (the micro-panel refills L1 once per ic); memory: K N (packed
 *      once per (jc, pc)).
 *   C  every level: 2 M N nK (the mr x nr tile is read and written once per
 *      micro-kernel call, i.e. once per kc block).
 *
 * The pack copies' writes into their L2/L3-resident buffers (M K nN and K N)
 * are not counted. GEMV (M = 1): B K N at every level; x K cN at the
 * registers and K beyond (its kc block stays in L1 across strips); y
 * N (2 nK - 1) (read and written once per further K block). GPU GEMM: the
 * first level (shared memory) delivers M K ceil(N/nr) + K N ceil(M/mr) to the
 * thread register tiles; L2 M K nN + K N nM + M N; memory the same, or
 * M K + K N + M N when A and B fit in half of L2.
 */
static void traffic_gemm(const struct tgeom *t, const struct gdims *d, const struct rl_tile *tl,
                         double *b)
{
	double M = (double)d->M, N = (double)d->N, K = (double)d->K, S = d->S;
	double w = S * (double)d->batch;
	int top = t->ncache; /* memory */
	if (tl->kind == RL_TILE_GEMV) {
		double cN = (double)cdiv(d->N, tl->nr), nK = (double)cdiv(d->K, tl->kc);
		for (int i = 0; i <= top; i++)
			b[i] = w * (K * N + (i == 0 ? K * cN : K) + N * (2 * nK - 1));
		return;
	}
	double nN = (double)cdiv(d->N, tl->nc), nK = (double)cdiv(d->K, tl->kc);
	double nM = (double)cdiv(d->M, tl->mc), cN = (double)cdiv(d->N, tl->nr);
	double cM = (double)cdiv(d->M, tl->mr);
	if (t->gpu) {
		double l2 = M * K * nN + K * N * nM + M * N;
		for (int i = 0; i <= top; i++)
			b[i] = w * l2;
		b[0] = w * (M * K * cN + K * N * cM + M * N);
		if ((M * K + K * N) * S <= t->cap[top > 1 ? 1 : 0] * t->cores / 2)
			b[top] = w * (M * K + K * N + M * N);
		return;
	}
	for (int i = 0; i <= top; i++) {
		double A = i <= t->ia ? M * K * cN : M * K * nN;
		double B = i == 0 ? K * N * cM : i <= t->ib ? K * N * nM : K * N;
		b[i] = w * (A + B + 2 * M * N * nK);
	}
}

/* ---- streaming kernels -------------------------------------------------- */

/* Row ops: elements per row, rows, passes over a row; false for others. */
static bool row_op(const struct rl_graph *g, const struct rl_node *n, int64_t *row,
                   int64_t *rows, int *passes)
{
	uint32_t x = rl_node_in(n, 0), y = n->nout > 0 ? n->out[0] : RL_NONE;
	int64_t nx = vnumel(g, x), ny = vnumel(g, y);
	if (nx <= 0 || ny <= 0)
		return false;
	const struct rl_shape *s = vshape(g, x);
	if (rl_op_table[n->op].family == RL_FAM_REDUCE) {
		*rows = ny;
		*row = nx / ny;
		*passes = 1;
		return *row >= 1;
	}
	int64_t axis;
	switch (n->op) {
	case RL_OP_Softmax:
	case RL_OP_LogSoftmax:
	case RL_OP_Hardmax:
		axis = rl_node_attr_int(n, "axis", n->opset >= 13 ? -1 : 1);
		*passes = n->op == RL_OP_Hardmax ? 2 : 3;
		break;
	case RL_OP_LayerNormalization:
		axis = rl_node_attr_int(n, "axis", -1);
		*passes = 3;
		break;
	default:
		return false;
	}
	if (axis < 0)
		axis += s->rank;
	if (axis < 0 || axis >= s->rank)
		return false;
	if (n->op != RL_OP_LayerNormalization && n->opset >= 13) {
		*row = s->d[axis].v;
	} else {
		*row = 1;
		for (int i = (int)axis; i < s->rank; i++)
			*row *= s->d[i].v;
	}
	if (*row < 1)
		return false;
	*rows = nx / *row;
	return true;
}

/* The nodes of group `id`, in index order, into list (at most cap); count. */
static uint32_t group_nodes(const struct rl_graph *g, int32_t id, uint32_t *list, uint32_t cap)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && g->nodes[i].group == id) {
			if (k < cap)
				list[k] = i;
			k++;
		}
	return k;
}

static bool in_list(const uint32_t *list, uint32_t n, uint32_t x)
{
	for (uint32_t j = 0; j < n; j++)
		if (list[j] == x)
			return true;
	return false;
}

#define TILE_GROUP_MAX 256 /* fuse caps groups at 64 nodes */

/*
 * An elementwise kernel (a group or one node): its iteration space, the
 * bytes per element of every full-size tensor it touches (the strip's
 * working set), and its external bytes (inputs read once, outputs written
 * once: what every level carries for a single pass).
 */
struct ekernel {
	int64_t numel;
	double bpe;       /* bytes per element, full-size tensors */
	double ext;       /* bytes in + out */
	int S;            /* bytes of the output's element */
	uint32_t anchor;  /* the product of an epilogue group, or RL_NONE */
	uint32_t nnodes;
};

static bool elem_kernel(const struct rl_graph *g, uint32_t node, struct ekernel *k)
{
	const struct rl_node *n = &g->nodes[node];
	uint32_t list[TILE_GROUP_MAX];
	uint32_t nl = 1;
	list[0] = node;
	if (n->group >= 0) {
		nl = group_nodes(g, n->group, list, TILE_GROUP_MAX);
		if (nl > TILE_GROUP_MAX)
			return false;
	}
	memset(k, 0, sizeof(*k));
	k->anchor = RL_NONE;
	k->nnodes = nl;
	uint32_t y0 = n->out[0];
	k->numel = vnumel(g, y0);
	k->S = (int)rl_dtype_size(g->values[y0].dtype);
	if (k->numel <= 0 || k->S <= 0)
		return false;
	uint32_t seen[4 * TILE_GROUP_MAX];
	uint32_t ns = 0;
	for (uint32_t j = 0; j < nl; j++) {
		const struct rl_node *m = &g->nodes[list[j]];
		if (is_product(m->op))
			k->anchor = list[j];
		for (int q = 0; q < m->nin + m->nout; q++) {
			bool is_in = q < m->nin;
			uint32_t v = is_in ? m->in[q] : m->out[q - m->nin];
			if (v == RL_NONE || literal(g, v) || in_list(seen, ns, v) ||
			    ns == sizeof(seen) / sizeof(seen[0]))
				continue;
			seen[ns++] = v;
			int64_t ne = vnumel(g, v);
			double sz = (double)rl_dtype_size(g->values[v].dtype);
			if (ne == k->numel)
				k->bpe += sz;
			uint32_t p = g->values[v].producer;
			bool inside = p != RL_NONE && in_list(list, nl, p);
			if (is_in && !inside) {
				k->ext += value_bytes(g, v);
			} else if (!is_in) {
				const struct rl_value *val = &g->values[v];
				bool ext = (val->flags & RL_VAL_OUTPUT) != 0;
				for (uint32_t u = 0; u < val->nuses && !ext; u++)
					ext = !in_list(list, nl, val->uses[u]);
				if (ext)
					k->ext += value_bytes(g, v);
			}
		}
	}
	return k->bpe > 0;
}

/* Bytes at each tiler level of a row op with tile tl. */
/*
 * A row op's working set while it makes its passes over one row: the row of
 * x, the row of each output, and every other input (LayerNormalization's
 * scale and bias are a row each, re-read by the last pass for every row).
 * The passes re-read x from the first level that holds all of it; sizing
 * the home by x alone put a 4096-wide LayerNorm's passes in L1 (16 KiB of x)
 * while x, y, scale and bias (64 KiB) did not fit there, and priced it 2.2x
 * faster than it ran (bench_predict, 256 x 4096 at 1 thread).
 */
static int row_home(const struct tgeom *t, const struct rl_graph *g, const struct rl_node *n,
                    int64_t row, double *params)
{
	double ws = (double)row * (double)rl_dtype_size(g->values[rl_node_in(n, 0)].dtype);
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE)
			ws += (double)row * (double)rl_dtype_size(g->values[n->out[o]].dtype);
	*params = 0;
	for (int q = 1; q < n->nin; q++)
		if (n->in[q] != RL_NONE)
			*params += value_bytes(g, n->in[q]);
	ws += *params;
	int home = t->ncache;
	for (int i = 0; i < t->ncache && home == t->ncache; i++)
		if (ws <= t->cap[i] / 2)
			home = i;
	return home;
}

static void traffic_rows(const struct tgeom *t, const struct rl_graph *g, const struct rl_node *n,
                         int64_t row, int64_t rows, int passes, double *b)
{
	/* x read by every pass, outputs written once; at the home level and
	 * inside it the other inputs are read once per row, beyond it once */
	double xb = value_bytes(g, rl_node_in(n, 0)), out = 0, params;
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE)
			out += value_bytes(g, n->out[o]);
	int home = row_home(t, g, n, row, &params);
	for (int i = 0; i <= t->ncache; i++)
		b[i] = i <= home ? passes * xb + out + (double)rows * params : xb + out + params;
}

/* ---- the public traffic function ---------------------------------------- */

/* The node's counted bytes (inputs once, outputs once), or 0. */
static double baseline_bytes(const struct rl_graph *g, uint32_t node)
{
	struct rl_counts c;
	if (!rl_count_node(g, node, &c))
		return 0;
	return c.bytes_read + c.bytes_write;
}

/* Tiler levels to the profile's. */
static void map_levels(const struct tgeom *t, const struct rl_machine *m, const double *tb,
                       double *out)
{
	for (int i = 0; i < RL_MAX_MEM_LEVELS; i++)
		out[i] = 0;
	if (m->nlevels < 1)
		return;
	if (t->map < 0) {
		out[m->nlevels - 1] = tb[t->ncache];
		return;
	}
	for (int i = 0; i <= t->ncache && i < m->nlevels; i++)
		out[i] = tb[i];
}

static void traffic_tiler(const struct rl_graph *g, uint32_t node, const struct tgeom *t,
                          double *tb)
{
	const struct rl_node *n = &g->nodes[node];
	const struct rl_tile *tl = &n->tile;
	for (int i = 0; i < RL_MAX_MEM_LEVELS; i++)
		tb[i] = 0;
	struct gdims d;
	if ((tl->kind == RL_TILE_GEMM || tl->kind == RL_TILE_GEMV) && is_product(n->op) &&
	    gemm_dims(g, n, &d) && tl->mr > 0 && tl->nr > 0 && tl->kc > 0 &&
	    (tl->kind == RL_TILE_GEMV || (tl->mc > 0 && tl->nc > 0))) {
		traffic_gemm(t, &d, tl, tb);
		return;
	}
	int64_t row, rows;
	int passes;
	if (tl->kind == RL_TILE_STRIP && row_op(g, n, &row, &rows, &passes)) {
		traffic_rows(t, g, n, row, rows, passes, tb);
		return;
	}
	struct ekernel k;
	if (tl->kind == RL_TILE_STRIP && elem_kernel(g, node, &k)) {
		for (int i = 0; i <= t->ncache; i++)
			tb[i] = k.ext;
		return;
	}
	double base = baseline_bytes(g, node);
	for (int i = 0; i <= t->ncache; i++)
		tb[i] = base;
}

void rl_tile_traffic(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                     double *bytes_per_level)
{
	for (int i = 0; i < RL_MAX_MEM_LEVELS; i++)
		bytes_per_level[i] = 0;
	if (!g || !m || node >= g->nnodes || m->nlevels < 1)
		return;
	struct tgeom t;
	geom(m, &t);
	double tb[RL_MAX_MEM_LEVELS];
	traffic_tiler(g, node, &t, tb);
	map_levels(&t, m, tb, bytes_per_level);
}

/* ---- the pass ----------------------------------------------------------- */

struct tcount {
	uint32_t gemm, gemv, strip, plain, skipped;
};

/* ", L1 1.2 MB, L2 3.4 MB, DRAM 4.2 MB" for the tiler levels. */
static void levels_str(const struct tgeom *t, const double *tb, char *buf, size_t len)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i <= t->ncache && k < len; i++) {
		char b[32];
		int w = snprintf(buf + k, len - k, "%s%s %s", i ? ", " : "", t->name[i],
		                 fmt_bytes(b, sizeof(b), tb[i]));
		if (w < 0)
			break;
		k += (size_t)w;
	}
}

static const char *dt_name(const struct rl_graph *g, uint32_t v)
{
	return rl_dtype_name(g->values[v].dtype);
}

/*
 * The kernel form of a Conv on a CPU (node->tile.conv, enum rl_conv_form).
 * Band mode puts output pixels on the vector lanes: a register tile covers
 * whole vectors of a band's rows at the padded row pitch (OW plus the taps'
 * reach), so on a small plane the pitch columns and the last, partly used
 * vector cost a large share of the lanes (7x7 under a 3x3: 49 of 64).
 * Channels on the lanes (RL_CONV_CHANVEC) waste only what the channel count
 * leaves of its last vector. The pass picks CHANVEC for float32, group-1
 * Convs with constant weights and one or two spatial axes whose output plane
 * has at most TILE_CV_PIX pixels, whose K (input channels x taps) is at
 * least TILE_CV_MIN_K, and whose channels fill more of the lanes than the
 * pixels would; the remark gives both shares. Measured on one AVX-512 core
 * (thread CPU time, channels-on-vector / band): 3x3 512->512 on 7x7 0.86,
 * 3x3 256->256 on 14x14 0.83, 1x1 2048->512 on 7x7 0.78, 3x3 128->128 on
 * 28x28 0.94, 3x3 64->64 on 56x56 1.01 (hence the plane limit), and on small
 * K: 1x1 32->128 on 27x27 (K 32) 1.34, the 3x3 stem 3->16 (K 27) 1.35,
 * 3x3 16->16 (K 144) 1.03 (hence the K limit): per output the kernel
 * spends a few instructions putting the sums back into NCHW planes, which
 * K multiply-adds must pay for.
 *
 * Above TILE_CV_PIX pixels the pass used to keep band mode, whose pixels
 * fill the lanes there. But a kernel with taps across the row (KW > 1)
 * reads its band at every tap's column offset, a vector load that crosses
 * a cache line for most taps, and on Intel cores such a load takes the
 * load port twice; channels on the lanes broadcast single pixels and load
 * whole, aligned weight vectors. Measured alone on a Sapphire Rapids-class
 * Xeon VM (one core, minimum thread CPU time, band / channels-on-vector,
 * us): the 7x7/2 stem 3->64 to 112x112 (K 147) 1357/1162, 3x3/2 32->64 to
 * 56x56 (K 288) 795/578, 3x3/2 64->128 to 56x56 3107/2222, 3x3/2 16->32 to
 * 56x56 (K 144) 200/160, 5x5 48->64 on 56x56 (K 1200) 2953/2350, 5x5/2
 * 3->64 to 112x112 (K 75) 787/664-725, 7x7 8->16 on 128x128 (K 392)
 * 1240/1217; at two threads the stem 816/690 and 3x3/2 64->128 1995/1365.
 * Below K 64 it went both ways: 3x3/2 3->32 to 112x112 (K 27) 198/172 but
 * to 64x64 51/62, SqueezeNet's 3x3/2 3->64 to 111x111 315/400. So above
 * the limit: channels on the lanes where KW > 1 and K >= TILE_CV_BIG_K. A
 * 1x1 (or Kx1) kernel reads the band aligned and keeps band mode.
 */
#define TILE_CV_PIX 1024 /* above: channels on the lanes only for taps across rows and TILE_CV_BIG_K */
#define TILE_CV_MIN_K 128 /* least channels x taps per output for channels on the lanes */
#define TILE_CV_BIG_K 64 /* the same, output planes above TILE_CV_PIX */
#define TILE_CV_RUN_PIX 128 /* least plane for channels on the lanes with run-time weights */

/*
 * Weights that are constants, or made from constants only (a ConstantOfShape
 * too big for fold.c to keep, and nodes reading only such values: the onnx
 * light models make every weight this way). The C backend computes the
 * latter once in NAME_init (emit.c, runs_at_init) and packs them there like
 * stored weights, so they are not run-time weights. Static mode computes
 * them per run, but takes no channels-on-vector kernel anyway.
 */
static bool made_of_consts(const struct rl_graph *g, uint32_t v, int depth)
{
	if (rl_value_is_const(g, v))
		return true;
	uint32_t p = g->values[v].producer;
	if (p == RL_NONE || depth > 8)
		return false;
	const struct rl_node *n = &g->nodes[p];
	if (n->op == RL_OP_Dropout) /* training mode draws a mask per run */
		return false;
	int k = 0;
	for (int q = 0; q < n->nin; q++) {
		if (n->in[q] == RL_NONE)
			continue;
		if (!made_of_consts(g, n->in[q], depth + 1))
			return false;
		k++;
	}
	return k > 0;
}

/*
 * The Winograd form F(2x2, 3x3) (RL_CONV_WINO, backends/c/emit_conv.c
 * emit_conv_wino): a float32 2-D Conv, group 1, 3x3 at stride 1 and
 * dilation 1 with one pixel of zero padding on every side, constant weights
 * (transformed in NAME_init), and a plane rl_conv_wino_rows takes. It does
 * 4/9 of the direct form's multiply-adds; measured on one AVX-512 core with
 * a Relu, against band or channels-on-vector mode: 64->64 on 56x56 0.66,
 * 128->128 on 28x28 0.65, 64->64 on 16x16 0.84, 16->16 on 32x32 0.83.
 */
static bool conv_wino(struct rl_graph *g, struct rl_node *n, const struct rl_shape *sx,
                      const struct rl_shape *sw, const struct rl_shape *sy, int64_t *tb)
{
	const int64_t *a;
	if (g->values[rl_node_in(n, 0)].dtype != RL_DT_FLOAT || sx->rank != 4 ||
	    rl_node_attr_int(n, "group", 1) != 1 || sw->d[2].v != 3 || sw->d[3].v != 3 ||
	    sy->d[2].v != sx->d[2].v || sy->d[3].v != sx->d[3].v ||
	    !made_of_consts(g, rl_node_in(n, 1), 0))
		return false;
	if (rl_node_attr_ints(n, "strides", &a) == 2 && (a[0] != 1 || a[1] != 1))
		return false;
	if (rl_node_attr_ints(n, "dilations", &a) == 2 && (a[0] != 1 || a[1] != 1))
		return false;
	if (rl_node_attr_ints(n, "pads", &a) != 4 || a[0] != 1 || a[1] != 1 || a[2] != 1 ||
	    a[3] != 1)
		return false;
	*tb = rl_conv_wino_rows(sx->d[1].v, sy->d[1].v, sy->d[2].v, sy->d[3].v);
	return *tb > 0;
}

/*
 * Winograd on short rows, by the core's FMA rate. On the 2-vCPU Zen 4 VM of
 * session 24 (172.7 GFLOP/s fp32 a core) the form beat the direct one on
 * 14x14 planes (one layer with a Relu, one thread: 128->160 628 -> 472 us,
 * 160->192 940 -> 691). On a Sapphire Rapids-class Xeon VM (249 GFLOP/s a
 * core: twice the FMAs a cycle, while the transforms' loads, stores and
 * adds and the passes over V and S through L2 run no faster) the direct
 * form won below rows of 28, and more so in the model, where the 16/9 larger
 * transformed weights stream past V and S (alone, us, Winograd / direct
 * form, one thread; two threads): 192->192 on 14x14 670-712 / 561-626,
 * 128->128 on 14x14 307 / 250-279; 183-189 / 158-162, 160->192 on 14x14
 * 568-596 / 520, 32->128 on 27x27 290-299 / 276, 32->32 on 16x16 31 / 26;
 * 17.5-18.6 / 13.8-14.7, 32->32 on 20x20 36.4 / 36.8; 24.8-26.6 /
 * 21.8-22.6; from rows of 28 up it kept its lead: 128->128 on 28x28 994 /
 * 1014-1125, 64->96 on 28x28 383-393 / 443-449, 64->64 on 32x32 230-244 /
 * 345. light_inception_v2 with its 14x14 layers direct: 24.9 -> 24.0 ms at
 * one thread, 14.3-14.6 -> 12.9-13.4 at two; resnet_small at two threads
 * 77.9-84.3 -> 73.7-78.8 us (one thread 101-109 -> 104). So on a core of
 * TILE_WINO_WIDE_FMA or more the form needs rows of TILE_WINO_WIDE_MIN_OW.
 */
#define TILE_WINO_WIDE_FMA 200e9
#define TILE_WINO_WIDE_MIN_OW 28

static void conv_form(struct rl_graph *g, uint32_t node, struct rl_pass_ctx *ctx,
                      const struct tgeom *t, const struct gdims *d)
{
	struct rl_node *n = &g->nodes[node];
	uint32_t x = rl_node_in(n, 0), w = rl_node_in(n, 1), y = n->out[0];
	const struct rl_shape *sx = vshape(g, x), *sw = vshape(g, w), *sy = vshape(g, y);
	int nsp = sx->rank - 2, vw = vwidth(t, 4);
	const char *no = NULL;
	int64_t tb;
	bool wino = conv_wino(g, n, sx, sw, sy, &tb);
	if (wino && !t->gpu && t->core_fp32 >= TILE_WINO_WIDE_FMA &&
	    sy->d[3].v < TILE_WINO_WIDE_MIN_OW) {
		wino = false;
		rl_remark(ctx, "tile", n->name, "conv-winograd-declined", -1, -1, -1, -1,
		          "Winograd F(2x2, 3x3) declined: a core of %.0f GFLOP/s fp32 (at least %.0f: "
		          "two 512-bit FMA pipes) runs the direct form faster on rows under %d "
		          "outputs (%lld here), where the transforms and the passes over V and S "
		          "outweigh the multiply-adds saved",
		          t->core_fp32 * 1e-9, TILE_WINO_WIDE_FMA * 1e-9, TILE_WINO_WIDE_MIN_OW,
		          (long long)sy->d[3].v);
	}
	if (wino) {
		n->tile.conv = RL_CONV_WINO;
		rl_remark(ctx, "tile", n->name, "conv-winograd", -1, -1, -1, -1,
		          "Conv form: Winograd F(2x2, 3x3): 16 products per 2x2 tile and channel pair "
		          "for 36 multiply-adds (4/9), the %lldx%lld plane in blocks of up to %lld rows "
		          "of %lld tiles (the transformed input and products of %lld + %lld channels "
		          "under %.0f KB)",
		          (long long)sy->d[2].v, (long long)sy->d[3].v, (long long)tb,
		          (long long)((sy->d[3].v + 1) / 2), (long long)sx->d[1].v,
		          (long long)sy->d[1].v, RL_WINO_BYTES / 1024);
		return;
	}
	n->tile.conv = RL_CONV_BAND;
	int64_t kw = sw->d[sx->rank - 1].v;
	if (g->values[x].dtype != RL_DT_FLOAT)
		no = "not float32";
	else if (nsp < 1 || nsp > 2)
		no = "not one or two spatial axes";
	else if (rl_node_attr_int(n, "group", 1) != 1)
		no = "grouped";
	else if (!made_of_consts(g, w, 0) && d->N < TILE_CV_RUN_PIX)
		no = "weights not constant and a plane below 128 pixels: packing the weights in "
		     "every run costs more than the lanes save";
	else if (d->N > TILE_CV_PIX && kw == 1)
		no = "output plane above 1024 pixels and one tap per row: the band's rows fill the "
		     "lanes, its loads aligned";
	else if (d->N > TILE_CV_PIX && d->K < TILE_CV_BIG_K)
		no = "output plane above 1024 pixels and K = channels x taps below 64: turning the "
		     "sums back into NCHW planes costs more than band mode's shifted loads";
	else if (d->N <= TILE_CV_PIX && d->K < TILE_CV_MIN_K)
		no = "K = channels x taps below 128: turning the sums back into NCHW planes costs "
		     "more than the lanes save";
	/* band mode's lane share over the plane: OH rows at pitch OW + the taps' reach */
	int64_t oh = nsp == 2 ? sy->d[2].v : 1, ow = sy->d[sx->rank - 1].v, rw = 0;
	const int64_t *a;
	int64_t sxw = 1, dxw = 1;
	if (rl_node_attr_ints(n, "strides", &a) == nsp)
		sxw = a[nsp - 1];
	if (rl_node_attr_ints(n, "dilations", &a) == nsp)
		dxw = a[nsp - 1];
	if (sxw > 0)
		rw = (kw - 1) * dxw / sxw;
	bool pointwise = kw == 1 && (nsp == 1 || sw->d[2].v == 1);
	int64_t cols = pointwise ? oh * ow : oh * (ow + rw);
	double band = (double)(oh * ow) / (double)(cdiv(cols, vw) * vw);
	double chan = (double)d->M / (double)(cdiv(d->M, vw) * vw);
	if (!no && chan <= band)
		no = "the channels fill no more of the lanes than the pixels";
	if (no) {
		rl_remark(ctx, "tile", n->name, "conv-band", -1, -1, -1, -1,
		          "Conv form: band (pixels on the %d lanes, %.0f%% used over the %lldx%lld "
		          "plane; channels would use %.0f%%): channels-on-vector declined, %s",
		          vw, 100.0 * band, (long long)oh, (long long)ow, 100.0 * chan, no);
		return;
	}
	n->tile.conv = RL_CONV_CHANVEC;
	rl_remark(ctx, "tile", n->name, "conv-chanvec", -1, -1, -1, -1,
	          "Conv form: channels on the vector lanes: %lld output channels use %.0f%% of "
	          "the %d lanes, where band mode's pixels on the lanes would use %.0f%% (the "
	          "%lldx%lld plane at its padded row pitch); pixels in registers, weights packed "
	          "at init", (long long)d->M, 100.0 * chan, vw, 100.0 * band, (long long)oh,
	          (long long)ow);
}

/*
 * The schedule a product gets: GEMV (M = 1 and large enough), PLAIN (too
 * small: *small says why) or GEMM, into tl (the Conv kernel form is left to
 * tile_product). Shared by the pass and rl_tile_plan, so a pass that prices
 * a product before `tile` runs (quantize) prices the schedule it will get.
 */
static void plan_product(const struct tgeom *t, const struct gdims *d, enum rl_op op,
                         struct rl_tile *tl, struct gwhy *why, const char **small)
{
	int vw = vwidth(t, d->S);
	double macs = (double)d->M * (double)d->N * (double)d->K;
	*small = NULL;
	memset(tl, 0, sizeof(*tl));
	memset(why, 0, sizeof(*why));
	if (d->M == 1 && op != RL_OP_Conv && op != RL_OP_ConvTranspose) {
		if ((double)d->N * (double)d->K < TILE_MIN_GEMV || d->N < vw) {
			tl->kind = RL_TILE_PLAIN;
			tl->par = 1;
			*small = "gemv";
			return;
		}
		tl->kind = RL_TILE_GEMV;
		gemv_tile(t, d, tl);
		return;
	}
	int64_t mr_cpu = t->gpu ? TILE_GPU_RT : 0, nr_cpu = t->gpu ? TILE_GPU_RT : 0;
	if (!t->gpu) {
		int nv = t->regs >= 2 * TILE_NV + 2 ? TILE_NV : 1;
		mr_cpu = imax(1, imin((t->regs - nv - 1) / nv, TILE_MAX_MR));
		nr_cpu = (int64_t)nv * vw;
	}
	if (macs < TILE_MIN_MACS)
		*small = "below 64^3 MACs per product: packing costs more than it saves";
	else if (d->M < mr_cpu && d->N < nr_cpu)
		*small = "C fits in one register tile: nothing to block";
	else if (d->N < vw)
		*small = "fewer columns than one vector (a matrix-vector product): dot products "
		         "the plain kernel streams";
	if (*small) {
		tl->kind = RL_TILE_PLAIN;
		tl->par = 1;
		tl->mr = (int32_t)mr_cpu; /* for the remark only; cleared by the caller */
		tl->nr = (int32_t)nr_cpu;
		return;
	}
	tl->kind = RL_TILE_GEMM;
	if (t->gpu)
		gemm_gpu(t, d, tl);
	else
		gemm_cpu(t, d, tl, why);
}

bool rl_tile_plan(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                  struct rl_tile *out)
{
	memset(out, 0, sizeof(*out));
	if (!g || !m || m->nlevels < 1 || node >= g->nnodes || !is_product(g->nodes[node].op))
		return false;
	struct tgeom t;
	struct gdims d;
	struct gwhy why;
	const char *small;
	geom(m, &t);
	if (!gemm_dims(g, &g->nodes[node], &d))
		return false;
	plan_product(&t, &d, g->nodes[node].op, out, &why, &small);
	if (out->kind == RL_TILE_PLAIN)
		out->mr = out->nr = 0;
	return true;
}

static void tile_product(struct rl_graph *g, uint32_t node, struct rl_pass_ctx *ctx,
                         const struct tgeom *t, struct tcount *cnt)
{
	struct rl_node *n = &g->nodes[node];
	const char *opn = rl_op_table[n->op].name;
	struct gdims d;
	memset(&n->tile, 0, sizeof(n->tile));
	if (!gemm_dims(g, n, &d)) {
		cnt->skipped++;
		rl_remark(ctx, "tile", n->name, "skipped", -1, -1, -1, -1,
		          "%s: shapes not static or not a product the tiler maps; backend default",
		          opn);
		return;
	}
	struct rl_tile *tl = &n->tile;
	struct gwhy why;
	memset(&why, 0, sizeof(why));
	int vw = vwidth(t, d.S);
	double macs = (double)d.M * (double)d.N * (double)d.K;
	char dims[96], lv[160], c0[24], c1[24], c2[24];
	snprintf(dims, sizeof(dims), "%s M=%lld N=%lld K=%lld x%lld %s", opn, (long long)d.M,
	         (long long)d.N, (long long)d.K, (long long)d.batch, dt_name(g, n->in[0]));
	const char *small;
	plan_product(t, &d, n->op, tl, &why, &small);
	if (tl->kind == RL_TILE_PLAIN && small && !strcmp(small, "gemv")) {
		cnt->plain++;
		rl_remark(ctx, "tile", n->name, "plain", -1, -1, -1, -1,
		          "%s: PLAIN: a GEMV of %.0f B elements (N %lld, vector %d) is below "
		          "%.0f elements or one vector: nothing to stream", dims,
		          (double)d.N * (double)d.K, (long long)d.N, vw, TILE_MIN_GEMV);
		return;
	}
	if (tl->kind == RL_TILE_GEMV) {
		double tb[RL_MAX_MEM_LEVELS];
		traffic_tiler(g, node, t, tb);
		levels_str(t, tb, lv, sizeof(lv));
		cnt->gemv++;
		if (t->gpu)
			rl_remark(ctx, "tile", n->name, "tiled", -1, -1, -1, -1,
			          "GEMV %s: nr=%d columns per block (one per thread), accum=%d (k "
			          "unroll), kc=%d, par=%lld blocks: %s", dims, tl->nr, tl->accum,
			          tl->kc, (long long)tl->par, lv);
		else
			rl_remark(ctx, "tile", n->name, "tiled", -1, -1, -1, -1,
			          "GEMV %s: accum=%d vectors (FMA %d cycles x %d unit%s) nr=%d kc=%d%s "
			          "par=%lld strips; %s %s/core: %s", dims, tl->accum, t->fma_lat,
			          t->fma_units, t->fma_units == 1 ? "" : "s", tl->nr, tl->kc,
			          tl->kc < d.K ? " (x block in half of L1)" : "", (long long)tl->par,
			          t->name[0], fmt_cache(c0, sizeof(c0), t->cap[0]), lv);
		return;
	}
	if (small) {
		int64_t mr_cpu = tl->mr, nr_cpu = tl->nr;
		tl->mr = tl->nr = 0;
		cnt->plain++;
		rl_remark(ctx, "tile", n->name, "plain", -1, -1, -1, -1,
		          "%s: PLAIN: %.0f MACs per product, register tile %lldx%lld; %s", dims,
		          macs, (long long)mr_cpu, (long long)nr_cpu, small);
		return;
	}
	if (!t->gpu && n->op == RL_OP_Conv)
		conv_form(g, node, ctx, t, &d);
	double tb[RL_MAX_MEM_LEVELS];
	traffic_tiler(g, node, t, tb);
	levels_str(t, tb, lv, sizeof(lv));
	cnt->gemm++;
	if (t->gpu) {
		rl_remark(ctx, "tile", n->name, "tiled", -1, -1, -1, -1,
		          "GEMM %s: block %dx%d kc=%d, %s tile %dx%d, par=%lld blocks (A+B "
		          "tiles x2 buffers %s of %s %s/SM): %s", dims, tl->mc, tl->nc, tl->kc,
		          d.S == 2 ? "warp" : "thread", tl->mr, tl->nr, (long long)tl->par,
		          fmt_cache(c0, sizeof(c0), 2.0 * (tl->mc + tl->nc) * tl->kc * d.S),
		          t->name[0], fmt_cache(c1, sizeof(c1), t->cap[0]), lv);
		return;
	}
	char kcw[48], mcw[48], ncw[48];
	if (why.kc_of)
		snprintf(kcw, sizeof(kcw), "%d of %d ways", why.kc_ways, why.kc_of);
	else
		snprintf(kcw, sizeof(kcw), "half");
	if (why.mc_of)
		snprintf(mcw, sizeof(mcw), "%d of %d ways", why.mc_ways, why.mc_of);
	else
		snprintf(mcw, sizeof(mcw), "half");
	if (why.nc_of)
		snprintf(ncw, sizeof(ncw), "%d of %d ways", why.nc_ways, why.nc_of);
	else
		snprintf(ncw, sizeof(ncw), "half");
	rl_remark(ctx, "tile", n->name, "tiled", -1, -1, -1, -1,
	          "GEMM %s: mr=%d nr=%d kc=%d mc=%d nc=%d par=%lld (%lld acc of %d regs%s; kc: %s "
	          "of %s %s, mc: %s of %s %s, nc: %s of %s %s, per core%s): %s", dims, tl->mr,
	          tl->nr, tl->kc, tl->mc, tl->nc, (long long)tl->par, (long long)tl->mr * tl->nr / vw,
	          t->regs, why.latency_short ? ", short of FMA latency" : "", kcw, t->name[0],
	          fmt_cache(c0, sizeof(c0), t->cap[0]), mcw, t->name[t->ia],
	          fmt_cache(c1, sizeof(c1), t->cap[t->ia]), ncw, t->name[t->ib],
	          fmt_cache(c2, sizeof(c2), t->cap[t->ib]),
	          why.split ? "; mc/nc split for the cores" : "", lv);
}

/* Strip for a working set of bpe bytes per element in half of L1, a
 * multiple of the vector width and of a cache line. */
static int64_t strip_len(const struct tgeom *t, double bpe, int S)
{
	if (t->gpu)
		return (int64_t)TILE_GPU_THREADS * 4;
	int64_t q = vwidth(t, S), per_line = S > 0 ? t->line[0] / S : 1;
	if (per_line > q && per_line % q == 0)
		q = per_line;
	return rdown((int64_t)(t->cap[0] / 2 / bpe), q);
}

static void tile_row_op(struct rl_graph *g, uint32_t node, struct rl_pass_ctx *ctx,
                        const struct tgeom *t, int64_t row, int64_t rows, int passes,
                        struct tcount *cnt)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_tile *tl = &n->tile;
	memset(tl, 0, sizeof(*tl));
	uint32_t x = n->in[0], y = n->out[0];
	int S = (int)rl_dtype_size(g->values[x].dtype);
	double bpe = S + (rl_op_table[n->op].family == RL_FAM_REDUCE
	                          ? 0 : (double)rl_dtype_size(g->values[y].dtype));
	const char *opn = rl_op_table[n->op].name;
	char c0[24], c1[24], lv[160];
	if (row * rows < TILE_MIN_STRIP || S <= 0) {
		tl->kind = RL_TILE_PLAIN;
		tl->par = 1;
		cnt->plain++;
		rl_remark(ctx, "tile", n->name, "plain", -1, -1, -1, -1,
		          "%s over %lld rows of %lld: PLAIN: fewer than %d elements", opn,
		          (long long)rows, (long long)row, TILE_MIN_STRIP);
		return;
	}
	tl->kind = RL_TILE_STRIP;
	double rowb = (double)row * bpe;
	int64_t chunk = strip_len(t, bpe, S);
	tl->strip = rowb <= t->cap[0] / 2 || chunk >= row ? row : chunk;
	tl->par = rows;
	double params;
	int home = row_home(t, g, n, row, &params);
	double tb[RL_MAX_MEM_LEVELS];
	traffic_tiler(g, node, t, tb);
	levels_str(t, tb, lv, sizeof(lv));
	cnt->strip++;
	rl_remark(ctx, "tile", n->name, "tiled", -1, -1, -1, -1,
	          "STRIP %s %s over %lld rows of %lld (%s/row, %d pass%s): strip=%lld par=%lld; "
	          "the passes re-read the row from %s (%s %s/core): %s", opn, dt_name(g, x),
	          (long long)rows, (long long)row, fmt_cache(c0, sizeof(c0), rowb), passes,
	          passes == 1 ? "" : "es", (long long)tl->strip, (long long)tl->par,
	          t->name[home], t->name[0], fmt_cache(c1, sizeof(c1), t->cap[0]), lv);
}

static void tile_elementwise(struct rl_graph *g, uint32_t node, struct rl_pass_ctx *ctx,
                             const struct tgeom *t, const struct ekernel *k,
                             struct tcount *cnt)
{
	struct rl_node *n = &g->nodes[node];
	struct rl_tile tl;
	memset(&tl, 0, sizeof(tl));
	char lv[160], c0[24], sb[64];
	const char *what = n->group >= 0 ? "group" : rl_op_table[n->op].name;
	if (k->numel < TILE_MIN_STRIP) {
		tl.kind = RL_TILE_PLAIN;
		tl.par = 1;
		cnt->plain++;
		rl_remark(ctx, "tile", n->name, "plain", -1, -1, -1, -1,
		          "elementwise %s of %u node%s over %lld elements: PLAIN: fewer than %d",
		          what, k->nnodes, k->nnodes == 1 ? "" : "s", (long long)k->numel,
		          TILE_MIN_STRIP);
	} else {
		tl.kind = RL_TILE_STRIP;
		tl.strip = imin(strip_len(t, k->bpe, k->S), k->numel);
		tl.par = cdiv(k->numel, tl.strip);
		cnt->strip++;
	}
	/* every member of a group gets the same tile */
	if (n->group >= 0) {
		for (uint32_t i = 0; i < g->nnodes; i++)
			if (!g->nodes[i].dead && g->nodes[i].group == n->group)
				g->nodes[i].tile = tl;
	} else {
		n->tile = tl;
	}
	if (tl.kind != RL_TILE_STRIP)
		return;
	double tb[RL_MAX_MEM_LEVELS];
	traffic_tiler(g, node, t, tb);
	levels_str(t, tb, lv, sizeof(lv));
	rl_remark(ctx, "tile", n->name, "tiled", -1, -1, -1, -1,
	          "STRIP elementwise %s of %u node%s over %s: %.0f B/element in the strip's "
	          "working set, strip=%lld par=%lld (half of %s %s/core): %s", what, k->nnodes,
	          k->nnodes == 1 ? "" : "s", rl_shape_str(vshape(g, n->out[0]), sb, sizeof(sb)),
	          k->bpe, (long long)tl.strip, (long long)tl.par, t->name[0],
	          fmt_cache(c0, sizeof(c0), t->cap[0]), lv);
}

enum rl_status rl_pass_tile(struct rl_graph *g, struct rl_pass_ctx *ctx)
{
	enum rl_status st;
	if (g->nnodes && !g->norder && (st = rl_graph_toposort(g)) != RL_OK)
		return st;
	for (uint32_t i = 0; i < g->nnodes; i++)
		memset(&g->nodes[i].tile, 0, sizeof(g->nodes[i].tile));
	const struct rl_machine *m = ctx->machine;
	if (!m || m->nlevels < 1) {
		rl_remark(ctx, "tile", NULL, "skipped", -1, -1, -1, -1,
		          "no machine profile: no tiles, the backend uses its defaults");
		return RL_OK;
	}
	struct tgeom t;
	geom(m, &t);
	if (t.missing[0])
		rl_remark(ctx, "tile", NULL, "defaults", -1, -1, -1, -1,
		          "profile %s lacks %s: tiling with the defaults (%d-bit vectors, %d "
		          "registers, %d FMA units of %d cycles, %d-byte lines; without ways a "
		          "block fills half of its cache; without caches 32 KiB/512 KiB/2 MiB)",
		          m->name, t.missing, t.simd_bits, t.regs, t.fma_units, t.fma_lat,
		          TILE_DEF_LINE);
	struct tcount cnt = {0};
	/* a group is tiled once, at its first member in order */
	int32_t maxg = -1;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (g->nodes[i].group > maxg)
			maxg = g->nodes[i].group;
	bool *done = calloc((size_t)maxg + 2, sizeof(*done));
	if (!done)
		return rl_graph_error(g, NULL, RL_ERR_NOMEM, "tile: out of memory");
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		if (!runs(g, n))
			continue;
		if (is_product(n->op)) {
			tile_product(g, i, ctx, &t, &cnt);
			/* a Conv's split across threads: the one rule the backend
			 * follows and the cost model prices (rl_split_conv_chunks) */
			struct rl_counts cc;
			if (!t.gpu && n->op == RL_OP_Conv && rl_count_node(g, i, &cc) && cc.macs > 0)
				g->nodes[i].tile.chunks = (int32_t)rl_split_conv_chunks(cc.macs);
			continue;
		}
		int64_t row, rows;
		int passes;
		if (n->group < 0 && row_op(g, n, &row, &rows, &passes)) {
			tile_row_op(g, i, ctx, &t, row, rows, passes, &cnt);
			continue;
		}
		bool elem = rl_op_table[n->op].family == RL_FAM_ELEMWISE &&
		            !(rl_op_table[n->op].flags & RL_OPF_VIEW) && n->op != RL_OP_Dropout;
		if (n->group >= 0) {
			if (done[n->group])
				continue;
			done[n->group] = true;
		} else if (!elem) {
			continue; /* pooling, data movement, ...: the backend's own loops */
		}
		struct ekernel ek;
		if (!elem_kernel(g, i, &ek)) {
			cnt.skipped++;
			rl_remark(ctx, "tile", n->name, "skipped", -1, -1, -1, -1,
			          "%s: shapes not static; backend default", rl_op_table[n->op].name);
			continue;
		}
		if (ek.anchor != RL_NONE) {
			/* runs in its product's output loop, under the product's tile */
			rl_remark(ctx, "tile", n->name, "epilogue", -1, -1, -1, -1,
			          "%u elementwise node%s in the output loop of %s %s: no tile of "
			          "%s own", ek.nnodes - 1, ek.nnodes == 2 ? "" : "s",
			          rl_op_table[g->nodes[ek.anchor].op].name, g->nodes[ek.anchor].name,
			          ek.nnodes == 2 ? "its" : "their");
			continue;
		}
		tile_elementwise(g, i, ctx, &t, &ek, &cnt);
	}
	free(done);
	char c[3][24];
	if (t.gpu)
		rl_remark(ctx, "tile", NULL, "summary", -1, -1, -1, -1,
		          "%u GEMM, %u GEMV, %u STRIP, %u PLAIN, %u untiled on %s: thread-block "
		          "tiles for %s %s per SM", cnt.gemm, cnt.gemv, cnt.strip, cnt.plain,
		          cnt.skipped, m->name, t.name[0], fmt_cache(c[0], sizeof(c[0]), t.cap[0]));
	else
		rl_remark(ctx, "tile", NULL, "summary", -1, -1, -1, -1,
		          "%u GEMM, %u GEMV, %u STRIP, %u PLAIN, %u untiled on %s: %s %s, %s %s, "
		          "%s %s per core; %d-bit vectors, %d registers, FMA %d cycles x %d unit%s",
		          cnt.gemm, cnt.gemv, cnt.strip, cnt.plain, cnt.skipped, m->name,
		          t.name[0], fmt_cache(c[0], sizeof(c[0]), t.cap[0]), t.name[t.ia],
		          fmt_cache(c[1], sizeof(c[1]), t.cap[t.ia]), t.name[t.ib],
		          fmt_cache(c[2], sizeof(c[2]), t.cap[t.ib]), t.simd_bits, t.regs,
		          t.fma_lat, t.fma_units, t.fma_units == 1 ? "" : "s");
	return RL_OK;
}
