/*
 * cost.c - pricing: per-family counts (the "cost" sections of ir/fam_*.c)
 * to predicted time on a machine profile. See cost.h for the model and the
 * FLOP conventions, cost_impl.h for what a family counter may assume.
 *
 * Two kinds of node cost nothing at run time and are priced at zero:
 * - nodes that move no bytes and do no arithmetic (views: Reshape, Flatten,
 *   Squeeze, Unsqueeze, Identity; Constant): the emitter aliases or embeds
 *   them, so no kernel runs and no launch latency is charged;
 * - nodes whose every output is already constant (evaluated at build time
 *   by ir/eval.c: shape arithmetic on static shapes): rl_cost_graph skips
 *   them, as the generated code does.
 */
#include "cost.h"
#include "scalar.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rl_bound_name(enum rl_bound b)
{
	switch (b) {
	case RL_BOUND_MEMORY: return "memory";
	case RL_BOUND_COMPUTE: return "compute";
	case RL_BOUND_LATENCY: return "latency";
	}
	return "?";
}

typedef bool (*count_fn)(const struct rl_graph *, uint32_t, struct rl_counts *);
/* one entry per family (RL_FAMILIES, ir/ir.h): rl_count_<file> */
static const count_fn family_count[RL_FAM_COUNT_] = {
#define X(E, file, name) [RL_FAM_##E] = rl_count_##file,
	RL_FAMILIES(X)
#undef X
};

static double value_bytes(const struct rl_graph *g, uint32_t v)
{
	if (v == RL_NONE)
		return 0;
	int64_t n = rl_shape_numel(&g->values[v].shape);
	return n < 0 ? 0 : (double)n * (double)rl_dtype_size(g->values[v].dtype);
}

/* Work the register tile of a GEMM-tiled product does over the useful work:
 * columns rounded up to nr (the output's last dimension; a last column panel
 * narrower than nr runs the full tile on the stack). Rows are not rounded:
 * the x86 kernels have exact-height edge tiles (backends/c/emit_gemm.c
 * cg_gemm_finish; the portable 4-row kernel still pads, a few rows at most,
 * not priced). */
static double tile_padding(const struct rl_graph *g, const struct rl_node *n)
{
	if (!n->nout || n->out[0] == RL_NONE || n->tile.mr <= 0 || n->tile.nr <= 0)
		return 1;
	const struct rl_shape *y = &g->values[n->out[0]].shape;
	if (y->rank < 2 || y->d[y->rank - 2].v <= 0 || y->d[y->rank - 1].v <= 0)
		return 1;
	double N = (double)y->d[y->rank - 1].v, nr = n->tile.nr;
	return ceil(N / nr) * nr / N;
}

/*
 * Split a node's counted work into the calibrated classes. Products are
 * GEMM FLOPs; an elementwise transcendental is one evaluation of its class
 * per output element (the family charged RL_FLOPS_TRANS for it), the rest
 * plain arithmetic; Softmax-like rows one exp per element; gathered reads
 * one GATHER per index; everything else BASIC FLOPs.
 */
static void count_math(const struct rl_graph *g, const struct rl_node *n, struct rl_counts *c)
{
	double *w = c->math, rest = c->flops;
	double elems = n->nout && n->out[0] != RL_NONE ? rl_shape_numel(&g->values[n->out[0]].shape) : 0;
	if (elems < 0)
		elems = 0;
	if (c->macs > 0) {
		/* the product's kernel form: the plain loop the tile pass left a
		 * small product to, or the packed GEMM, whose register tile
		 * computes whole nr-column tiles (a 40-column product on
		 * 32-column tiles does 64 columns of work: tile_padding) */
		enum rl_math k = RL_MATH_GEMM;
		double pad = 1;
		if (rl_op_table[n->op].family == RL_FAM_MATMUL && n->tile.kind == RL_TILE_PLAIN)
			k = RL_MATH_MMPLAIN;
		else if (rl_op_table[n->op].family == RL_FAM_MATMUL && n->tile.kind == RL_TILE_GEMM)
			pad = tile_padding(g, n);
		w[k] = 2 * c->macs * pad;
		rest -= 2 * c->macs;
		if (n->op == RL_OP_Conv && n->tile.conv == RL_CONV_WINO && n->nin >= 2) {
			/* the Winograd form: 16 products per tile and channel pair
			 * (4/9 of the direct form's multiply-adds, over the blocks'
			 * columns) and the transforms' plain arithmetic */
			const struct rl_shape *sw = &g->values[n->in[1]].shape;
			const struct rl_shape *sy = &g->values[n->out[0]].shape;
			double gemm, basic, l2;
			rl_conv_wino_counts(sy->d[0].v, sw->d[1].v, sw->d[0].v, sy->d[2].v, sy->d[3].v,
			                    &gemm, &basic, &l2);
			w[k] = gemm;
			rest += basic;
			c->flops_run = c->flops - 2 * c->macs + gemm + basic;
		}
	} else if (rl_op_table[n->op].family == RL_FAM_ELEMWISE) {
		/* up to three evaluations per element: the math columns of
		 * ir/scalar.def (trigonometric and hyperbolic ops priced as a log) */
		const struct rl_scalar_info *si = rl_scalar_info(n->op);
		int k[3] = {-1, -1, -1};
		for (int i = 0; si && i < 3; i++)
			k[i] = si->math[i];
		for (int i = 0; i < 3; i++) {
			if (k[i] < 0)
				continue;
			w[k[i]] += elems;
			rest -= (k[i] == RL_MATH_DIV ? 1 : RL_FLOPS_TRANS) * elems;
		}
	} else if (n->op == RL_OP_Softmax || n->op == RL_OP_LogSoftmax) {
		double x = n->nin ? rl_shape_numel(&g->values[n->in[0]].shape) : 0;
		w[RL_MATH_EXP] = x > 0 ? x : 0;
		rest -= RL_FLOPS_TRANS * w[RL_MATH_EXP];
	}
	if ((rl_op_table[n->op].flags & RL_OPF_GATHER) && c->macs <= 0) {
		/* one lookup per index (the row it selects streams as memory) */
		double ni = n->nin > 1 && n->in[1] != RL_NONE ? rl_shape_numel(&g->values[n->in[1]].shape)
		                                               : elems;
		w[RL_MATH_GATHER] = ni > 0 ? ni : 0;
	}
	w[RL_MATH_BASIC] = rest > 0 ? rest : 0;
	w[RL_MATH_ROW] = c->rows;
}

/*
 * A QuantMatMul's code x row products (c->qmacs) on a CPU, as
 * backends/c/emit_qgemm.c runs them: where the profile lists an int8 peak
 * (`rlopt probe` measures it on vpdpbusd with VNNI, else on AVX2's
 * vpmaddubsw + vpmaddwd, the two integer kernel families), two 8-bit dot
 * products per code and row (the row's low and high bytes), 4 OP at that
 * peak (the block scales' float work is one FMA per 16 blocks: left out;
 * AVX2's int8 sign step is left out too); else the generic vectors widen each code
 * (unpack, convert: 2 BASIC elements) and multiply-add it in float (2
 * FLOPs, the GEMM class or the peak).
 */
static double quant_s(const struct rl_machine *m, const struct rl_counts *c, double peak,
                      bool cal)
{
	double i8 = m->peak_vector[RL_PREC_INT8];
	if (i8 > 0)
		return 4 * c->qmacs / i8;
	double cores = m->cores > 0 ? m->cores : 1;
	if (cal && m->calib[RL_MATH_BASIC] > 0 && m->calib[RL_MATH_GEMM] > 0)
		return 2 * c->qmacs / (m->calib[RL_MATH_BASIC] * cores) +
		       2 * c->qmacs / (m->calib[RL_MATH_GEMM] * cores);
	return peak > 0 ? 4 * c->qmacs / peak : 0;
}

double rl_cost_compute_s(const struct rl_machine *m, const struct rl_counts *c, double peak,
                         bool *calibrated)
{
	bool cal = m->cores > 0 && rl_machine_calibrated(m);
	if (calibrated)
		*calibrated = cal;
	/* a quantized product's codes: priced by quant_s on a CPU, as float
	 * MACs (the GEMM class, in flops) elsewhere */
	double q = c->qmacs > 0 && strcmp(m->kind, "cpu") == 0 ? c->qmacs : 0;
	double tq = q > 0 ? quant_s(m, c, peak, cal) : 0;
	if (!cal) {
		double f = c->flops_run > 0 ? c->flops_run : c->flops;
		return (peak > 0 ? (f - 2 * q) / peak : 0) + tq;
	}
	double t = 0;
	for (int k = 0; k < RL_MATH_COUNT_; k++) {
		double rate = m->calib[k];
		double w = c->math[k] - (k == RL_MATH_GEMM ? 2 * q : 0);
		if (!(rate > 0) && k == RL_MATH_MMPLAIN)
			rate = m->calib[RL_MATH_GEMM]; /* an older profile: as the GEMM */
		if (rate > 0 && w > 0)
			t += w / (rate * m->cores);
	}
	return t + tq;
}

/* Seconds of c->serial (BASIC elements on the calling thread) on one core:
 * the profile's BASIC rate, else its fp32 peak per core. */
static double serial_s(const struct rl_machine *m, const struct rl_counts *c)
{
	if (!(c->serial > 0) || strcmp(m->kind, "cpu") != 0)
		return 0;
	double cores = m->cores > 0 ? m->cores : 1;
	double rate = m->calib[RL_MATH_BASIC] > 0 ? m->calib[RL_MATH_BASIC]
	            : rl_machine_peak(m, RL_PREC_FP32, false) / cores;
	return rate > 0 ? c->serial / rate : 0;
}

bool rl_count_node(const struct rl_graph *g, uint32_t node, struct rl_counts *c)
{
	const struct rl_node *n = &g->nodes[node];
	memset(c, 0, sizeof(*c));
	for (int i = 0; i < n->nin; i++)
		if (n->in[i] != RL_NONE && !rl_shape_is_static(&g->values[n->in[i]].shape))
			return false;
	for (int i = 0; i < n->nout; i++)
		if (n->out[i] != RL_NONE && !rl_shape_is_static(&g->values[n->out[i]].shape))
			return false;
	/* the unfused baseline: every input read once, every output written once */
	for (int i = 0; i < n->nin; i++) {
		double b = value_bytes(g, n->in[i]);
		c->bytes_read += b;
		if (n->in[i] != RL_NONE && rl_value_is_const(g, n->in[i]))
			c->weight_bytes += b;
	}
	for (int i = 0; i < n->nout; i++)
		c->bytes_write += value_bytes(g, n->out[i]);
	c->access = rl_op_table[n->op].flags & RL_OPF_GATHER ? RL_ACCESS_GATHER
	                                                      : RL_ACCESS_CONTIGUOUS;
	/* the family adds FLOPs/MACs and corrects bytes where the baseline
	 * rule does not fit (views move nothing, Shape reads no data, ...) */
	if (!family_count[rl_op_table[n->op].family](g, node, c))
		return false;
	count_math(g, n, c);
	enum rl_family fam = rl_op_table[n->op].family;
	if (fam == RL_FAM_MATMUL && n->tile.kind != RL_TILE_NONE && n->tile.par > 0)
		c->par_tasks = (double)n->tile.par;
	/* a Conv's kernels (band and channels-on-vector forms) are cut into at
	 * most the chunks the split rule gives, as the tile pass recorded it */
	if (n->op == RL_OP_Conv && c->macs > 0) {
		double ch = n->tile.chunks > 0 ? (double)n->tile.chunks
		                               : (double)rl_split_conv_chunks(c->macs);
		c->par_tasks = ch;
		c->par_chunks = ch;
	}
	/* the C backend's kernels of these families run on the calling thread (but Transpose)
	 * (backends/c/emit_shape.c, emit_index.c, emit_const.c, emit_attn.c,
	 * emit_seq.c, emit_detect.c set no parallel range) */
	if ((fam == RL_FAM_SHAPE && n->op != RL_OP_Transpose) || fam == RL_FAM_CONST ||
	    fam == RL_FAM_ATTN || fam == RL_FAM_SEQ || fam == RL_FAM_DETECT)
		c->par_tasks = 1;
	/* Transpose splits its outermost output loop as the elementwise kernels
	 * do (emit_shape.c emit_transpose) */
	if (fam == RL_FAM_ELEMWISE || fam == RL_FAM_NORM || fam == RL_FAM_REDUCE ||
	    n->op == RL_OP_Transpose) {
		for (int i = 0; i < n->nin + n->nout; i++) {
			uint32_t v = i < n->nin ? n->in[i] : n->out[i - n->nin];
			if (v == RL_NONE || rl_value_is_const(g, v))
				continue;
			double e = (double)rl_shape_numel(&g->values[v].shape);
			if (e > c->par_elems)
				c->par_elems = e;
		}
	}
	return true;
}

int64_t rl_split_conv_chunks(double macs)
{
	/*
	 * A chunk costs the pool's hand-off (the job published, a spinning
	 * worker claiming it, the caller waiting for the last chunk: the
	 * profile's fork/join, about 1 us here) and its own set-up (band or
	 * padded-row fill, a scratch slot, the weights fetched by the other
	 * core, about 1 us in all on an idle host); 2^16 multiply-adds are about
	 * 1.3 us on one AVX-512 core at the 50 GMAC/s these kernels reach. A
	 * layer below two such chunks runs on the calling thread. ResNet-small's
	 * 1x1/2 16->32 on 32x32 (131k multiply-adds) took 4x longer split into 8
	 * parts over 2 threads, each part filling the band again, than on one;
	 * at 2 parts it runs beside the other thread. 2^18 (measured on a loaded
	 * host) left its 442k-MAC stem and that projection on one thread while
	 * the other waited: resnet_small at 2 threads 135 us, 128 us with 2^16.
	 * (Moved here from backends/c/emit_conv.c, where it was CONV_PAR_MACS and
	 * CONV_TASKS, so that the cost model prices the split that runs.)
	 */
	double w = macs / RL_SPLIT_CONV_MACS;
	return w < 1 ? 1 : w > RL_SPLIT_CONV_TASKS ? RL_SPLIT_CONV_TASKS : (int64_t)w;
}

int64_t rl_conv_wino_rowlen(int64_t TW)
{
	return (TW + 7) / 8 * 8;
}

int64_t rl_conv_wino_pitch(int64_t TB, int64_t OW)
{
	int64_t TW = (OW + 1) / 2, TWr = rl_conv_wino_rowlen(TW);
	return ((TB - 1) * TW + TWr + 15) / 16 * 16;
}

int64_t rl_conv_wino_rows(int64_t C, int64_t M, int64_t OH, int64_t OW)
{
	if (C < 8 || M < 4 || M % 4 || OW < RL_WINO_MIN_OW || OW > 1024 || OH < 1)
		return 0;
	int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2;
	int64_t TB = RL_WINO_TP / TW;
	TB = TB < 1 ? 1 : TB > TH ? TH : TB;
	while (TB > 1 && 64.0 * (double)(C + M) * (double)rl_conv_wino_pitch(TB, OW) > RL_WINO_BYTES)
		TB--;
	/* too few tiles a block for the products (the micro-kernel's tiles are
	 * 96 columns): 3x3 256->256 on 14x14 (7 tiles a block in 512 KB) ran
	 * 1.10x the channels-on-lanes form, 128->128 there (21) 1.00x. One row
	 * of tiles may take up to RL_WINO_ROW_BYTES: VGG's wide layers, whose
	 * single row spills L2, still ran 1.7x faster than the direct form (one
	 * Zen 4 core, 1 MiB L2, with a Relu, ms: 64->64 on 224x224 35.2 ->
	 * 20.3, 128->128 on 112x112 34.4 -> 19.7, 256->256 on 56x56 34.5 ->
	 * 18.3; onnxruntime 32-35), while blocks of several rows past 768 KB
	 * left too few tasks for two threads (128->128 on 28x28 at 2 MB: 0.75 ->
	 * 0.83 ms on two threads) */
	double lim = TB == 1 ? RL_WINO_ROW_BYTES : RL_WINO_BYTES;
	if (64.0 * (double)(C + M) * (double)rl_conv_wino_pitch(TB, OW) > lim ||
	    TB * TW < RL_WINO_MIN_TILES)
		return 0;
	return TB;
}

void rl_conv_wino_counts(int64_t N, int64_t C, int64_t M, int64_t OH, int64_t OW, double *gemm,
                         double *basic, double *bytes)
{
	int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, TWr = rl_conv_wino_rowlen(TW);
	int64_t TB = rl_conv_wino_rows(C, M, OH, OW);
	if (TB < 1)
		TB = 1;
	/* a block of b rows runs (b - 1) TW + TWr columns: the last row's loop
	 * to TWr (rl_conv_wino_rowlen); one block per TB rows (one thread's view) */
	double blocks = (double)((TH + TB - 1) / TB);
	double cols = (double)TH * (double)TW + blocks * (double)(TWr - TW);
	double n = (double)N;
	*gemm = n * 2.0 * 16.0 * (double)C * (double)M * cols;
	/* per channel and tile column: the row split (2 moves a column pair),
	 * B^T d B (32 adds and subtracts a tile, 16 stores); per output channel
	 * and tile column: A^T S A + bias (28), the row copy with the epilogue
	 * (4 outputs). And the passes over V and S, each of their 16 (C + M)
	 * floats a column written by one step and read by the next through L2,
	 * with the products' register tiles started and stored per 16 columns
	 * of K = C: about RL_WINO_ELEM_FLOPS plain FLOPs of time each, fitted on
	 * one Zen 4 core (bench_conv_layers.py, one thread, with a Relu; ms
	 * measured / priced with it / without): 64->64 on 56x56 1.41 / 1.34 /
	 * 1.09, 128->128 on 28x28 1.30 / 1.19 / 1.07, 64->64 on 16x16 0.137 /
	 * 0.120 / 0.098, 16->16 on 32x32 0.038 / 0.043 / 0.024 */
	*basic = n * ((double)C * (double)TH * (double)TWr * 48.0 +
	              (double)M * (double)TH * (double)TWr * 32.0 +
	              RL_WINO_ELEM_FLOPS * 16.0 * (double)(C + M) * cols);
	/* V and S: 16 planes each, written by one step and read by the next */
	*bytes = n * 4.0 * 16.0 * 2.0 * (double)(C + M) * cols;
}

#define RL_SPLIT_CHUNKS_PER_THREAD 4 /* rl_parallel_for's cap per thread */
#define RL_SPLIT_SIM_THREADS 64 /* replayed chunk by chunk up to this many threads */

double rl_split_share(double n, double most, int threads, int *used)
{
	int T = threads < 1 ? 1 : threads;
	double nt = floor(n);
	if (most > 0 && most < nt)
		nt = floor(most);
	if (nt > (double)RL_SPLIT_CHUNKS_PER_THREAD * T)
		nt = (double)RL_SPLIT_CHUNKS_PER_THREAD * T;
	if (T == 1 || nt <= 1 || !(n > 0)) {
		*used = 1;
		return 1;
	}
	*used = nt < T ? (int)nt : T;
	if (T > RL_SPLIT_SIM_THREADS) /* the bound: ceil(nt / T) of the largest chunks */
		return fmin(1, ceil(nt / T) * ceil(n / nt) / n);
	/* thread k claims the first nt / T of its own chunks [nt k / T, nt (k+1)
	 * / T) as it starts (one range), then runs the rest of them one at a
	 * time, then takes what is left from the last chunk back; the next free
	 * thread goes next (emit_rt.c rl_pool_work) */
	int cn = (int)nt, next[RL_SPLIT_SIM_THREADS], back = cn - 1, left = cn;
	double busy[RL_SPLIT_SIM_THREADS] = {0}, end = 0;
	bool taken[4 * RL_SPLIT_SIM_THREADS] = {0};
	for (int k = 0; k < T; k++) {
		next[k] = cn * k / T;
		for (int j = 0; j < cn / T; j++, next[k]++, left--) {
			taken[next[k]] = true;
			busy[k] += floor(n * (next[k] + 1) / nt) - floor(n * next[k] / nt);
		}
		if (busy[k] > end)
			end = busy[k];
	}
	while (left > 0) {
		int k = 0;
		for (int j = 1; j < T; j++)
			if (busy[j] < busy[k])
				k = j;
		int t = -1;
		while (next[k] < cn * (k + 1) / T && taken[next[k]])
			next[k]++;
		if (next[k] < cn * (k + 1) / T) {
			t = next[k]++;
		} else {
			while (back >= 0 && taken[back])
				back--;
			t = back;
		}
		taken[t] = true;
		left--;
		busy[k] += floor(n * (t + 1) / nt) - floor(n * t / nt);
		if (busy[k] > end)
			end = busy[k];
	}
	return end / n;
}

/* The split of kernel c on m (rl_cost_threads): the share of its one-thread
 * time the slowest thread runs, and the threads in *used. */
static double cost_split(const struct rl_machine *m, const struct rl_counts *c, int *used)
{
	int cores = m->cores > 0 ? m->cores : 1;
	if (strcmp(m->kind, "cpu") != 0) {
		*used = cores;
		return 1.0 / cores;
	}
	/* the run's threads (--threads), where fewer than the cores */
	if (m->run_threads > 0 && m->run_threads < cores)
		cores = m->run_threads;
	if (cores == 1) {
		*used = 1;
		return 1;
	}
	if (c->par_tasks > 0)
		return rl_split_share(c->par_tasks, c->par_chunks, cores, used);
	if (c->macs > 0 || c->par_elems <= 0) {
		*used = cores;
		return 1.0 / cores;
	}
	/* chunks of at least RL_COST_PAR_MIN_ELEMS elements, none below two */
	if (c->par_elems < 2.0 * RL_COST_PAR_MIN_ELEMS) {
		*used = 1;
		return 1;
	}
	return rl_split_share(c->par_elems, floor(c->par_elems / RL_COST_PAR_MIN_ELEMS), cores,
	                      used);
}

int rl_cost_threads(const struct rl_machine *m, const struct rl_counts *c)
{
	int used;
	cost_split(m, c, &used);
	return used;
}

enum rl_prec rl_node_prec(const struct rl_graph *g, uint32_t node)
{
	const struct rl_node *n = &g->nodes[node];
	enum rl_dtype dt = RL_DT_FLOAT;
	uint32_t v = n->nin ? n->in[0] : RL_NONE;
	if (v == RL_NONE && n->nout)
		v = n->out[0];
	if (v != RL_NONE)
		dt = g->values[v].dtype;
	switch (dt) {
	case RL_DT_DOUBLE: return RL_PREC_FP64;
	case RL_DT_FLOAT16: return RL_PREC_FP16;
	case RL_DT_BFLOAT16: return RL_PREC_BF16;
	case RL_DT_INT8: case RL_DT_UINT8: return RL_PREC_INT8;
	default: return RL_PREC_FP32;
	}
}

/*
 * The level a kernel's bytes come from: the closest cache whose capacity
 * (times RL_RESIDENT_SHARE) holds the kernel's whole working set (inputs
 * and outputs), else main memory. Measured here (bench/bench_predict.py):
 * a working set as large as a core's L2 still runs at L2 speed, so the
 * share is the whole capacity. A tensor that small was just written by the
 * kernel before (or is read again on every run), so it is still there; one
 * that large streams from main memory. Capacities are the chip's totals,
 * and so is the working set; a kernel the runtime runs on th of the chip's
 * cores has th/cores of each private level (every cache level but the
 * last, which the cores share).
 * Constant weights are read once per run, so between two reads of them the
 * program touches its whole footprint (c->reuse_bytes): a model whose
 * weights do not fit a level streams every weight from further out, even
 * when each kernel's own working set fits (batch-1 MLPs: 1.6 MB of weights
 * through a 1 MiB L2 on one core, least-recently-used, hits nothing).
 * CPU profiles only: on a GPU the judge and fusion reason about HBM traffic
 * between launches, and L2 persistence across launches is not modelled.
 */
#define RL_RESIDENT_SHARE 1.0
static int resident_level(const struct rl_machine *m, double ws, int th)
{
	int last = m->nlevels - 1;
	if (strcmp(m->kind, "cpu") != 0)
		return last < 0 ? 0 : last;
	double cores = m->cores > 0 ? m->cores : 1;
	for (int i = 0; i < last; i++) {
		double cap = m->level[i].capacity;
		if (i < last - 1 && th < cores)
			cap *= th / cores;
		if (m->level[i].read_bw > 0 && ws <= RL_RESIDENT_SHARE * cap)
			return i;
	}
	return last < 0 ? 0 : last;
}

/* The levels kernel c's activations and its constant weights come from. */
static void resident_levels(const struct rl_machine *m, const struct rl_counts *c, int *act,
                            int *wts)
{
	int th = rl_cost_threads(m, c);
	double ws = c->bytes_read + c->bytes_write;
	*act = resident_level(m, ws, th);
	*wts = c->weight_bytes > 0 && c->reuse_bytes > ws ? resident_level(m, c->reuse_bytes, th)
	                                                   : *act;
}

/* The bytes one run of g touches: every constant a running node reads, and
 * the largest tensor it computes (the activations reuse one arena, so the
 * weights set the footprint of the models where it matters). */
double rl_cost_footprint(const struct rl_graph *g)
{
	double w = 0, act = 0;
	uint32_t *seen = calloc((size_t)g->nvalues + 1, sizeof(*seen));
	if (!seen)
		return 0;
	for (uint32_t i = 0; i < g->nnodes; i++) {
		const struct rl_node *n = &g->nodes[i];
		if (n->dead)
			continue;
		for (int j = 0; j < n->nin + n->nout; j++) {
			uint32_t v = j < n->nin ? n->in[j] : n->out[j - n->nin];
			if (v == RL_NONE || seen[v])
				continue;
			seen[v] = 1;
			double b = value_bytes(g, v);
			if (rl_value_is_const(g, v)) {
				if (j < n->nin)
					w += b;
			} else if (b > act) {
				act = b;
			}
		}
	}
	free(seen);
	return w + act;
}

/* What rl_cost_price and price_levels both price a kernel with: the access
 * pattern's share of a level's bandwidth, the compute peak (fp32's where the
 * part lists none for prec), the cores th the runtime splits it across
 * (rl_cost_threads), how many times the chip's compute time that takes
 * (share) and the busiest core's excess over an even split (imb). */
struct kernel_rates {
	double eff, peak, share, imb, fixed;
	int th;
};

/* The bandwidth of level L for a kernel on th of the chip's cores: all of it
 * on every core; else th x one core's rate where the profile gives it (one
 * core draws far more than 1/cores of main memory: 22.1 of 27.4 GB/s on the
 * 2-core probe host), capped at the chip's; else th/cores of the chip's. */
static double level_bw(const struct rl_machine *m, const struct rl_mem_level *L, int th,
                       bool write)
{
	double chip = write && L->write_bw > 0 ? L->write_bw : L->read_bw;
	double core = write ? L->core_write_bw : L->core_read_bw;
	double cores = m->cores > 0 ? m->cores : 1;
	if (th >= cores)
		return chip;
	if (core > 0)
		return core * th < chip ? core * th : chip;
	return chip * th / cores;
}

/* A kernel's fixed cost when it runs on th threads: the launch (the call
 * on a CPU), and the pool's fork/join when a CPU kernel is split. */
static double fixed_on(const struct rl_machine *m, int th)
{
	bool split = strcmp(m->kind, "cpu") == 0 && th > 1;
	return m->launch_latency + (split ? m->fork_latency : 0);
}

double rl_cost_fixed_s(const struct rl_machine *m, const struct rl_counts *c)
{
	return fixed_on(m, rl_cost_threads(m, c));
}

static struct kernel_rates kernel_rates(const struct rl_machine *m, const struct rl_counts *c,
                                        enum rl_prec prec, bool matrix)
{
	struct kernel_rates r;
	r.eff = c->access == RL_ACCESS_GATHER ? m->eff_gather
	      : c->access == RL_ACCESS_STRIDED ? m->eff_strided : m->eff_contiguous;
	if (r.eff <= 0)
		r.eff = 1;
	r.peak = rl_machine_peak(m, prec, matrix);
	if (r.peak <= 0)
		r.peak = rl_machine_peak(m, RL_PREC_FP32, matrix);
	int th;
	double split = cost_split(m, c, &th);
	r.th = th;
	/* the calling thread's serial prologue (quantized products) runs
	 * before the split and overlaps nothing: a fixed cost of this kernel */
	r.fixed = fixed_on(m, th) + serial_s(m, c);
	/* chunks that do not divide evenly: the busiest thread runs split of the
	 * one-thread time (ceil(chunks / th) of them), imb times an even share */
	r.imb = split * th;
	if (r.imb < 1)
		r.imb = 1;
	r.share = (double)(m->cores > 0 ? m->cores : 1) / th * r.imb;
	return r;
}

void rl_cost_price(const struct rl_machine *m, const struct rl_counts *c,
                   enum rl_prec prec, bool matrix, struct rl_cost *out)
{
	int lvl, wlvl;
	out->at_init = false; /* priced: it runs */
	resident_levels(m, c, &lvl, &wlvl);
	const struct rl_mem_level *L = &m->level[lvl], *W = &m->level[wlvl];
	/* a kernel the runtime runs on fewer cores gets their share of the chip */
	struct kernel_rates r = kernel_rates(m, c, prec, matrix);
	double eff = r.eff, peak = r.peak, share = r.share, fixed = r.fixed;
	double wr = wlvl != lvl ? c->weight_bytes : 0;
	double t_mem = r.imb * ((c->bytes_read - wr) / (level_bw(m, L, r.th, false) * eff) +
	                        wr / (level_bw(m, W, r.th, false) * eff) +
	                        c->bytes_write / (level_bw(m, L, r.th, true) * eff));
	if (2 * wr > c->bytes_read + c->bytes_write)
		lvl = wlvl; /* the level most of the bytes come from */
	double t_cmp = share * rl_cost_compute_s(m, c, peak, NULL);
	double roof = t_mem > t_cmp ? t_mem : t_cmp;
	out->flops = c->flops;
	out->bytes = c->bytes_read + c->bytes_write;
	out->intensity = out->bytes > 0 ? c->flops / out->bytes : 0;
	out->level = lvl;
	if (c->flops <= 0 && out->bytes <= 0) {
		/* a view or an embedded constant: no kernel runs */
		out->time_s = 0;
		out->bound = RL_BOUND_MEMORY;
		return;
	}
	out->time_s = roof + fixed;
	if (fixed > roof)
		out->bound = RL_BOUND_LATENCY;
	else
		out->bound = t_cmp > t_mem ? RL_BOUND_COMPUTE : RL_BOUND_MEMORY;
}

/* Price counts c of node into its cost annotation. */
static void price_node(struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                       const struct rl_counts *c)
{
	/* products run on matrix units where the part has them */
	bool matrix = c->macs > 0;
	rl_cost_price(m, c, rl_node_prec(g, node), matrix, &g->nodes[node].cost);
}

bool rl_cost_node(struct rl_graph *g, uint32_t node, const struct rl_machine *m)
{
	struct rl_counts c;
	struct rl_node *n = &g->nodes[node];
	if (!rl_count_node(g, node, &c)) {
		memset(&n->cost, 0, sizeof(n->cost));
		return false;
	}
	price_node(g, node, m, &c);
	return true;
}

/* Every output already known at build time (ir/eval.c folded it). */
static bool built_at_compile_time(const struct rl_graph *g, const struct rl_node *n)
{
	bool any = false;
	for (int i = 0; i < n->nout; i++) {
		if (n->out[i] == RL_NONE)
			continue;
		if (!rl_value_is_const(g, n->out[i]))
			return false;
		any = true;
	}
	return any;
}

/*
 * Built once when the program starts, not per run: on a CPU the C backend's
 * NAME_init runs a node whose inputs are all constants or outputs of such
 * nodes (emit.c runs_at_init: a ConstantOfShape, Expand or Range that fills
 * a weight, which fold leaves to run because its output would be large;
 * the onnx light models make every weight so), into memory the run only
 * reads. Not Dropout (training mode draws a mask per run), not an output
 * whose extent the run reports. The CUDA backend runs them per launch, so a
 * GPU profile prices them per run. known[v] marks values known by then.
 */
static bool built_at_init(const struct rl_graph *g, const struct rl_machine *m,
                          const struct rl_node *n, const bool *known)
{
	if (!known || strcmp(m->kind, "cpu") != 0 || n->op == RL_OP_Dropout || n->nout < 1)
		return false;
	for (int o = 0; o < n->nout; o++)
		if (n->out[o] != RL_NONE && g->values[n->out[o]].extent_axis)
			return false;
	int nin = 0;
	for (int q = 0; q < n->nin; q++) {
		uint32_t v = n->in[q];
		if (v == RL_NONE)
			continue;
		if (!known[v] && !rl_value_is_const(g, v))
			return false;
		nin++;
	}
	return nin > 0;
}

/* rl_cost_graph with the run's footprint already computed */
static void cost_graph(struct rl_graph *g, const struct rl_machine *m, double foot,
                       struct rl_cost_total *t)
{
	memset(t, 0, sizeof(*t));
	/* no memory for the marks: every such node priced per run (the upper
	 * bound) */
	bool *known = calloc((size_t)g->nvalues + 1, sizeof(*known));
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		struct rl_node *n = &g->nodes[i];
		struct rl_counts c;
		if (n->dead)
			continue;
		if (built_at_compile_time(g, n) || !rl_count_node(g, i, &c)) {
			memset(&n->cost, 0, sizeof(n->cost));
			continue;
		}
		if (built_at_init(g, m, n, known)) {
			memset(&n->cost, 0, sizeof(n->cost));
			n->cost.at_init = true;
			for (int o = 0; o < n->nout; o++)
				if (n->out[o] != RL_NONE) {
					known[n->out[o]] = true;
					t->init_bytes += value_bytes(g, n->out[o]);
				}
			t->init_nodes++;
			continue;
		}
		c.reuse_bytes = foot;
		price_node(g, i, m, &c);
		const struct rl_cost *cs = &n->cost;
		t->flops += cs->flops;
		t->macs += c.macs;
		t->bytes += cs->bytes;
		t->time_s += cs->time_s;
		if (cs->time_s <= 0)
			continue; /* views: no kernel, not counted by bound */
		t->nodes++;
		switch ((enum rl_bound)cs->bound) {
		case RL_BOUND_MEMORY: t->memory++; t->time_memory += cs->time_s; break;
		case RL_BOUND_COMPUTE: t->compute++; t->time_compute += cs->time_s; break;
		case RL_BOUND_LATENCY: t->latency++; t->time_latency += cs->time_s; break;
		}
	}
	free(known);
}

double rl_cost_balance(const struct rl_machine *m, enum rl_prec prec, bool matrix)
{
	if (m->nlevels <= 0)
		return 0;
	double peak = rl_machine_peak(m, prec, matrix);
	if (peak <= 0)
		peak = rl_machine_peak(m, RL_PREC_FP32, matrix);
	double eff = m->eff_contiguous > 0 ? m->eff_contiguous : 1;
	double bw = rl_machine_dram(m)->read_bw * eff;
	return bw > 0 ? peak / bw : 0;
}

/* ---- kernels ---------------------------------------------------------------- */

static bool kernel_anchor_op(enum rl_op op)
{
	return op == RL_OP_MatMul || op == RL_OP_Gemm || op == RL_OP_Conv;
}

/* A constant scalar: fused code writes it as a literal and reads no memory. */
static bool literal_scalar(const struct rl_graph *g, uint32_t v)
{
	return rl_value_is_const(g, v) && g->values[v].data &&
	       rl_shape_numel(&g->values[v].shape) == 1;
}

/* A node that runs a kernel of its own or inside a group: live, countable,
 * not evaluated at build time, and moving bytes or doing arithmetic. */
static bool node_runs(const struct rl_graph *g, uint32_t i)
{
	const struct rl_node *n = &g->nodes[i];
	return !n->dead && n->cost.time_s > 0;
}

/*
 * The checks the C backend makes before it trusts a group (emit.c
 * group_check), so the report prices what the code runs: at least two
 * members, all running, at most one anchor, every member one output of one
 * shared shape, the anchor's output neither a graph output nor read outside
 * the group. A group that fails runs node by node, and is priced so.
 */
static bool group_runs_as_one(const struct rl_graph *g, const uint32_t *list, uint32_t n,
                              const int32_t *mark, int32_t tag, uint32_t *anchor)
{
	const struct rl_shape *shape = NULL;
	*anchor = RL_NONE;
	if (n < 2)
		return false;
	for (uint32_t j = 0; j < n; j++) {
		const struct rl_node *nd = &g->nodes[list[j]];
		struct rl_counts c;
		/* a member may be free on its own (Identity): it runs inside */
		if (nd->dead || built_at_compile_time(g, nd) || !rl_count_node(g, list[j], &c) ||
		    nd->nout < 1 || nd->out[0] == RL_NONE)
			return false;
		for (int o = 1; o < nd->nout; o++)
			if (nd->out[o] != RL_NONE)
				return false;
		const struct rl_value *y = &g->values[nd->out[0]];
		if (kernel_anchor_op(nd->op)) {
			if (*anchor != RL_NONE || (y->flags & RL_VAL_OUTPUT))
				return false;
			*anchor = list[j];
			for (uint32_t u = 0; u < y->nuses; u++)
				if (!g->nodes[y->uses[u]].dead && mark[y->uses[u]] != tag)
					return false;
		} else if (rl_op_table[nd->op].family != RL_FAM_ELEMWISE) {
			return false;
		}
		if (shape && !rl_shape_equal(shape, &y->shape))
			return false;
		shape = &y->shape;
	}
	return true;
}

/* The fused kernel's counts: FLOPs and MACs summed, external tensors read
 * once, values used outside written once. vmark/vtag dedupe inputs. */
static void group_counts(const struct rl_graph *g, const uint32_t *list, uint32_t n,
                         uint32_t anchor, const int32_t *mark, int32_t tag, uint32_t *vmark,
                         uint32_t vtag, struct rl_counts *c)
{
	memset(c, 0, sizeof(*c));
	c->access = RL_ACCESS_CONTIGUOUS;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = list[j];
		const struct rl_node *nd = &g->nodes[i];
		struct rl_counts k;
		if (rl_count_node(g, i, &k)) {
			c->flops += k.flops;
			c->flops_run += k.flops_run > 0 ? k.flops_run : k.flops;
			c->macs += k.macs;
			if (k.par_elems > c->par_elems)
				c->par_elems = k.par_elems;
			if (i == anchor) {
				c->par_tasks = k.par_tasks;
				c->par_chunks = k.par_chunks;
			}
			c->qmacs += k.qmacs;
			c->serial += k.serial;
			for (int q = 0; q < RL_MATH_COUNT_; q++)
				c->math[q] += k.math[q];
			if (i == anchor)
				c->access = k.access;
		}
		for (int q = 0; q < nd->nin; q++) {
			uint32_t v = nd->in[q];
			if (v == RL_NONE || vmark[v] == vtag || (nd->op == RL_OP_CastLike && q == 1))
				continue;
			uint32_t p = g->values[v].producer;
			if (p != RL_NONE && mark[p] == tag)
				continue; /* an intermediate: stays in registers */
			if (i != anchor && literal_scalar(g, v))
				continue;
			vmark[v] = vtag;
			double b = value_bytes(g, v);
			c->bytes_read += b;
			if (rl_value_is_const(g, v))
				c->weight_bytes += b;
		}
		const struct rl_value *y = &g->values[nd->out[0]];
		bool ext = (y->flags & RL_VAL_OUTPUT) != 0;
		for (uint32_t u = 0; u < y->nuses && !ext; u++)
			ext = !g->nodes[y->uses[u]].dead && mark[y->uses[u]] != tag;
		if (ext)
			c->bytes_write += value_bytes(g, nd->out[0]);
	}
}

/* Price kernel k level by level from bl (bytes per level of the profile). */
static void price_levels(const struct rl_machine *m, enum rl_prec prec, const double *bl,
                         struct rl_kernel *k)
{
	const struct rl_counts *c = &k->c;
	int last = m->nlevels - 1;
	struct kernel_rates r = kernel_rates(m, c, prec, c->macs > 0);
	double eff = r.eff, peak = r.peak, share = r.share, fixed = r.fixed;
	const struct rl_mem_level *d = &m->level[last];
	double drd = level_bw(m, d, r.th, false);
	double ext = c->bytes_read + c->bytes_write;
	double t_base = c->bytes_read / (drd * eff) + c->bytes_write / (level_bw(m, d, r.th, true) * eff);
	double t_mem = 0;
	int lvl = last;
	/* a working set a cache holds comes from there, not from further out;
	 * weights from where the run's footprint leaves them */
	int res, wres;
	resident_levels(m, c, &res, &wres);
	if (wres > res)
		res = wres;
	for (int i = 0; i <= res; i++) {
		double t;
		if (i == last)
			t = ext > 0 ? t_base * bl[i] / ext : bl[i] / (drd * eff);
		else
			t = m->level[i].read_bw > 0
			        ? bl[i] / (level_bw(m, &m->level[i], r.th, false) * eff) : 0;
		if (t > t_mem) {
			t_mem = t;
			lvl = i;
		}
	}
	t_mem *= r.imb;
	double t_cmp = share * rl_cost_compute_s(m, c, peak, NULL);
	double roof = t_mem > t_cmp ? t_mem : t_cmp;
	k->cost.flops = c->flops;
	k->cost.bytes = bl[last];
	k->cost.intensity = bl[last] > 0 ? c->flops / bl[last] : 0;
	k->cost.time_s = roof + fixed;
	k->bound_level = -1;
	if (fixed > roof) {
		k->cost.bound = RL_BOUND_LATENCY;
	} else if (t_cmp > t_mem) {
		k->cost.bound = RL_BOUND_COMPUTE;
	} else {
		k->cost.bound = RL_BOUND_MEMORY;
		k->bound_level = lvl;
	}
}

/* The schedule's bytes per level for kernel k, or false when it has none. */
static bool kernel_traffic(const struct rl_graph *g, const struct rl_machine *m,
                           rl_traffic_fn traffic, const struct rl_kernel *k,
                           const uint32_t *list, double *bl)
{
	if (!traffic || m->nlevels < 1)
		return false;
	uint32_t tnode = k->anchor != RL_NONE ? k->anchor : RL_NONE;
	for (uint32_t j = 0; j < k->n && tnode == RL_NONE; j++)
		if (g->nodes[list[j]].tile.kind != RL_TILE_NONE)
			tnode = list[j];
	if (tnode == RL_NONE || g->nodes[tnode].tile.kind == RL_TILE_NONE)
		return false;
	for (int i = 0; i < RL_MAX_MEM_LEVELS; i++)
		bl[i] = 0;
	traffic(g, tnode, m, bl);
	if (!(bl[m->nlevels - 1] > 0))
		return false;
	if (k->anchor != RL_NONE && k->n > 1) {
		/* the epilogue's own operands (bias, residual) and any output
		 * beyond the product's, at every level */
		struct rl_counts a;
		double extra = 0;
		if (rl_count_node(g, k->anchor, &a))
			extra = (k->c.bytes_read + k->c.bytes_write) - (a.bytes_read + a.bytes_write);
		for (int i = 0; extra > 0 && i < m->nlevels; i++)
			bl[i] += extra;
	}
	return true;
}

static void total_add(struct rl_cost_total *t, const struct rl_kernel *k)
{
	const struct rl_cost *cs = &k->cost;
	t->flops += cs->flops;
	t->macs += k->c.macs;
	t->bytes += cs->bytes;
	t->time_s += cs->time_s;
	t->nodes++;
	switch ((enum rl_bound)cs->bound) {
	case RL_BOUND_MEMORY: t->memory++; t->time_memory += cs->time_s; break;
	case RL_BOUND_COMPUTE: t->compute++; t->time_compute += cs->time_s; break;
	case RL_BOUND_LATENCY: t->latency++; t->time_latency += cs->time_s; break;
	}
}

void rl_cost_graph(struct rl_graph *g, const struct rl_machine *m,
                   struct rl_cost_total *t)
{
	cost_graph(g, m, rl_cost_footprint(g), t);
}

bool rl_cost_kernels(struct rl_graph *g, const struct rl_machine *m, rl_traffic_fn traffic,
                     struct rl_kernels *out)
{
	memset(out, 0, sizeof(*out));
	struct rl_cost_total nt;
	double foot = rl_cost_footprint(g);
	cost_graph(g, m, foot, &nt);
	size_t nn = (size_t)g->nnodes + 1;
	int32_t maxg = -1;
	for (uint32_t i = 0; i < g->nnodes; i++)
		if (!g->nodes[i].dead && g->nodes[i].group > maxg)
			maxg = g->nodes[i].group;
	size_t ng = (size_t)maxg + 2;
	out->k = calloc(nn, sizeof(*out->k));
	out->nodes = malloc(nn * sizeof(*out->nodes));
	out->of = malloc(nn * sizeof(*out->of));
	int32_t *mark = malloc(nn * sizeof(*mark));
	uint32_t *vmark = calloc((size_t)g->nvalues + 1, sizeof(*vmark));
	uint32_t *gstart = calloc(ng + 1, sizeof(*gstart)); /* group -> first slot in glist */
	uint32_t *glist = malloc(nn * sizeof(*glist));
	int32_t *gkern = malloc(ng * sizeof(*gkern)); /* group -> kernel, -1 none, -2 split */
	uint32_t *fill = calloc(ng, sizeof(*fill));
	bool ok = out->k && out->nodes && out->of && mark && vmark && gstart && glist && gkern &&
	          fill;
	if (!ok) {
		rl_kernels_free(out);
		goto done;
	}
	/* the members of every group, in order (a counting sort by group id) */
	for (uint32_t i = 0; i < g->nnodes; i++) {
		out->of[i] = -1;
		mark[i] = -1;
	}
	for (uint32_t k = 0; k < g->norder; k++) {
		const struct rl_node *n = &g->nodes[g->order[k]];
		if (!n->dead && n->group >= 0)
			gstart[n->group + 1]++;
	}
	for (size_t q = 1; q <= ng; q++)
		gstart[q] += gstart[q - 1];
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		if (!n->dead && n->group >= 0) {
			glist[gstart[n->group] + fill[n->group]++] = i;
			mark[i] = n->group;
		}
	}
	for (size_t q = 0; q < ng; q++)
		gkern[q] = -1;
	uint32_t vtag = 0, used = 0;
	for (uint32_t k = 0; k < g->norder; k++) {
		uint32_t i = g->order[k];
		const struct rl_node *n = &g->nodes[i];
		if (n->dead)
			continue;
		int32_t gid = n->group;
		uint32_t anchor = RL_NONE;
		if (gid >= 0 && gkern[gid] == -1) {
			const uint32_t *list = glist + gstart[gid];
			uint32_t cnt = gstart[gid + 1] - gstart[gid];
			gkern[gid] = group_runs_as_one(g, list, cnt, mark, gid, &anchor) ? 0 : -2;
		}
		if (gid >= 0 && gkern[gid] > 0)
			continue; /* its group's kernel is already made */
		if (gid >= 0 && gkern[gid] == 0) {
			const uint32_t *list = glist + gstart[gid];
			uint32_t cnt = gstart[gid + 1] - gstart[gid];
			struct rl_kernel *kr = &out->k[out->nk];
			kr->group = gid;
			kr->anchor = anchor;
			kr->node = anchor != RL_NONE ? anchor : i;
			kr->first = used;
			kr->n = cnt;
			for (uint32_t j = 0; j < cnt; j++) {
				out->nodes[used++] = list[j];
				out->of[list[j]] = (int32_t)out->nk;
			}
			group_counts(g, list, cnt, anchor, mark, gid, vmark, ++vtag, &kr->c);
			kr->c.reuse_bytes = foot;
			rl_cost_price(m, &kr->c, rl_node_prec(g, kr->node), kr->c.macs > 0, &kr->cost);
			gkern[gid] = (int32_t)++out->nk; /* > 0: made */
			continue;
		}
		if (!node_runs(g, i))
			continue;
		struct rl_kernel *kr = &out->k[out->nk];
		kr->group = -1;
		kr->anchor = RL_NONE;
		kr->node = i;
		kr->first = used;
		kr->n = 1;
		out->nodes[used++] = i;
		out->of[i] = (int32_t)out->nk;
		rl_count_node(g, i, &kr->c);
		kr->c.reuse_bytes = foot; /* as rl_cost_graph priced n->cost */
		kr->cost = n->cost;
		out->nk++;
	}
	/* per-level traffic of scheduled kernels; totals over kernels */
	for (uint32_t q = 0; q < out->nk; q++) {
		struct rl_kernel *kr = &out->k[q];
		double bl[RL_MAX_MEM_LEVELS];
		kr->bound_level = kr->cost.bound == RL_BOUND_MEMORY ? kr->cost.level : -1;
		if (kernel_traffic(g, m, traffic, kr, out->nodes + kr->first, bl)) {
			kr->tiled = true;
			for (int i = 0; i < RL_MAX_MEM_LEVELS; i++)
				kr->bytes_level[i] = i < m->nlevels ? bl[i] : 0;
			price_levels(m, rl_node_prec(g, kr->node), bl, kr);
		} else {
			for (int i = 0; i < RL_MAX_MEM_LEVELS; i++)
				kr->bytes_level[i] = i < m->nlevels ? kr->cost.bytes : 0;
		}
		total_add(&out->t, kr);
	}
	out->t.init_nodes = nt.init_nodes;
	out->t.init_bytes = nt.init_bytes;
done:
	free(fill);
	free(mark);
	free(vmark);
	free(gstart);
	free(glist);
	free(gkern);
	return ok;
}

bool rl_cost_node_kernel(const struct rl_graph *g, uint32_t node, const struct rl_machine *m,
                         rl_traffic_fn traffic, double reuse, struct rl_cost *out)
{
	struct rl_kernel k;
	memset(&k, 0, sizeof(k));
	memset(out, 0, sizeof(*out));
	if (!rl_count_node(g, node, &k.c))
		return false;
	k.c.reuse_bytes = reuse;
	enum rl_prec prec = rl_node_prec(g, node);
	rl_cost_price(m, &k.c, prec, k.c.macs > 0, &k.cost);
	double bl[RL_MAX_MEM_LEVELS] = {0};
	if (traffic && m->nlevels >= 1 && g->nodes[node].tile.kind != RL_TILE_NONE) {
		traffic(g, node, m, bl);
		if (bl[m->nlevels - 1] > 0)
			price_levels(m, prec, bl, &k);
	}
	*out = k.cost;
	return true;
}

void rl_kernels_free(struct rl_kernels *ks)
{
	free(ks->k);
	free(ks->nodes);
	free(ks->of);
	memset(ks, 0, sizeof(*ks));
}

const char *rl_kernel_bound_str(const struct rl_kernel *k, const struct rl_machine *m,
                                char *buf, size_t len)
{
	const char *b = rl_bound_name((enum rl_bound)k->cost.bound);
	if (k->cost.bound == RL_BOUND_MEMORY && k->bound_level >= 0 &&
	    k->bound_level < m->nlevels && (k->tiled || k->bound_level < m->nlevels - 1))
		snprintf(buf, len, "%s (%s)", b, m->level[k->bound_level].name);
	else
		snprintf(buf, len, "%s", b);
	return buf;
}
