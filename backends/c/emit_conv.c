/*
 * emit_conv.c - C kernels for Conv and ConvTranspose.
 *
 * Conv on float32/float64 with one or two spatial axes runs in band mode
 * (see "Band mode" below): per band of output rows, the input rows it reads
 * are copied with their zero padding into a per-thread scratch slot, a
 * stride split into phases so that every kernel tap reads contiguously, and
 * register tiles of four output channels x NV vectors sum weight x input
 * over channels and taps without touching memory. That makes the direct
 * convolution an implicit GEMM (M = output channels, N = output pixels of
 * the band, K = channels x taps) without an im2col buffer: the band is read
 * once per tap at an offset. A 1x1 convolution with unit strides and no
 * padding is the same code over the flattened spatial plane: a GEMM over
 * channels.
 *
 * Speed with plain `cc -O2`: for float and four-channel blocks, the tiles
 * are a micro-kernel written with intrinsics per ISA (AVX-512 and AVX2,
 * both with FMA; GCC with -std=c11 never contracts a * b + c, and the
 * x86-64 baseline has no FMA) and picked once in NAME_init from the running
 * CPU; other compilers, other CPUs and double keep the portable tiles
 * (generic vectors). The rest of a band kernel (fill, copies, epilogue) is
 * compiled per ISA through RL_TARGETS. Threads split the band kernels over
 * (image, group, band, share of the output channels); see conv_band_parts.
 *
 * A 3x3 Conv at stride 1 with pads of 1 and constant weights takes the
 * Winograd form F(2x2, 3x3) where the tile pass chose it (node->tile.conv
 * == RL_CONV_WINO; emit_conv_wino, before the forms below; see "Winograd
 * form").
 *
 * Small output planes (the tile pass's choice, node->tile.conv ==
 * RL_CONV_CHANVEC) take channels-on-vector mode instead: output channels on
 * the vector lanes, pixels in registers, weights packed at init (see
 * "Channels-on-vector mode" below); the tile pass leaves every other Conv
 * to band mode, as does -O0 (no tile pass).
 *
 * Rows too wide for band mode's budgets (or a stride with more than
 * CONV_PHASES phases in use) take the row form: a block of up to four
 * output channels walks the output rows, each (zero-padded) input row
 * streamed against every kernel column into the block's output rows, the
 * column loop written so that gcc -O2 vectorizes it. Everything else (three
 * or more spatial axes, float16/bfloat16, very wide padded rows) takes a
 * gather loop per output element with the sum in float (double for
 * float64). ConvTranspose (output position o receives input i through
 * kernel tap k when o = i*s + k*d - pb) is a product per tap over the
 * channels for float32, group 1 and one or two spatial axes (see
 * emit_convt_gemm), the gather form otherwise. These forms are
 * single-threaded.
 *
 * Pads follow ONNX: explicit pads, VALID (none), or SAME_UPPER/SAME_LOWER
 * with the total (out-1)*s + (k-1)*d + 1 - in split so that the extra pixel
 * goes to the end (UPPER) or the beginning (LOWER). Output sizes come from
 * shape inference; only the begin pads are needed here.
 *
 * In a fused epilogue group (cg->epi set, backends/c/emit_fused.c) each form
 * calls cg_epilogue() on every finished run of outputs (a band's rows of one
 * channel in band mode, a row in the row form, one element in the gather
 * form), so residual add and activation run while it is in cache; without a
 * group the calls write nothing. A group that is the Conv and a chain of a
 * per-channel Mul, a per-channel Add, a residual Add and a Relu (each
 * optional; conv_epi_regs) has the chain applied by the register tiles to
 * the last chunk's sums before they are stored (channels-on-vector mode:
 * the residual and the Relu after it by the transpose into the planes),
 * with no pass after them.
 */
#include "emit_impl.h"
#include "cost.h"

#include <string.h>

#define CONV_MB 4        /* output channels per block */
#define CONV_ROW_MAX 1024 /* row form: longest padded input row kept on the stack */
#define CONV_BAND_BYTES 262144 /* band mode: scratch copy of a band's input rows (in L2) */
#define CONV_ACC_BYTES 16384  /* band mode: scratch sums of a block's band rows (in L1) */
#define CONV_VEC_MAX 64       /* bytes of the widest vector band mode uses */
#define CONV_PHASES 4         /* band mode: most stride phases per axis */
#define CONV_NV_MAX 8         /* band mode: most vectors per register tile */
#define CONV_UK_SUB_STEPS 288 /* AVX2 micro-kernel: most channel-taps per pass over a tile (L1) */
#define CONV_GROUP_BYTES 32768 /* band mode, sums straight to the output: the output rows of
                                  the blocks one micro-kernel call takes (L1/L2; 128 KB and
                                  1 MB were slower on ResNet-50's 1x1 layers, Zen 3) */
/* The split across threads (how many chunks a kernel's iterations are cut
 * into) is not decided here: rl_split_conv_chunks (ir/cost.h) gives it, the
 * tile pass records it on the node (tile.chunks), the cost model prices it,
 * and struct conv2d carries it to the kernels below (conv_par_want). */

/*
 * The shared part of every Conv kernel in band mode, written once per file
 * into cg->statics by the first such kernel:
 *
 * - scratch: band and acc no longer live on the stack (tens of KB, and a
 *   worker thread's stack is the user's business) but in one buffer of
 *   RL_MAX_THREADS slots, sized at init for the largest kernel. A running
 *   range uses its thread's slot (rl_self, emit_rt.c), the same one in
 *   every kernel, so a thread's band stays in its own core's caches; which
 *   slot it is does not change any result.
 * - micro-kernels: GCC with -std=c11 never contracts a * b + c, and the
 *   x86-64 baseline has no FMA, so the register tiles are written with
 *   intrinsics per ISA (AVX-512 and AVX2 with FMA), one of them picked at
 *   init from the running CPU. Elsewhere (or on an x86 without AVX2) the
 *   kernels keep their own portable tiles (generic vectors).
 */
static const char conv_rt_scratch[] =
	"/* ---- Conv scratch: one slot per thread, sized at init ---- */\n"
	"static unsigned char *rl_conv_scratch; /* RL_MAX_THREADS slots */\n"
	"static size_t rl_conv_slot;            /* bytes per slot, a multiple of 64 */\n\n"
	"/* make every slot at least `bytes` long (init only: nothing runs) */\n"
	"static int rl_conv_scratch_reserve(size_t bytes)\n"
	"{\n"
	"    bytes = (bytes + 63) / 64 * 64;\n"
	"    if (rl_conv_scratch && rl_conv_slot >= bytes)\n"
	"        return 0;\n"
	"    free(rl_conv_scratch);\n"
	"    rl_conv_slot = bytes;\n"
	"    rl_conv_scratch = aligned_alloc(64, bytes * RL_MAX_THREADS);\n"
	"    return rl_conv_scratch ? 0 : -1;\n"
	"}\n\n"
	"static void rl_conv_scratch_free(void)\n"
	"{\n"
	"    free(rl_conv_scratch);\n"
	"    rl_conv_scratch = NULL;\n"
	"    rl_conv_slot = 0;\n"
	"}\n\n"
	"/* the running thread's slot: at most one range per thread runs */\n"
	"static int rl_conv_slot_own(void)\n"
	"{\n"
	"#ifdef RL_THREADS\n"
	"    return rl_self;\n"
	"#else\n"
	"    return 0;\n"
	"#endif\n"
	"}\n\n";

/* One ISA's spelling of the few vector operations the micro-kernel uses. */
struct conv_isa {
	const char *name;   /* function suffix */
	const char *target; /* GNU target attribute */
	const char *vt;     /* vector type */
	const char *pfx;    /* intrinsic prefix: _mm512 or _mm256 */
	int vw;             /* floats per vector */
	int nv;             /* vectors per register tile row */
};

static const struct conv_isa conv_isas[] = {
	/* 32 zmm: 4 x 6 sums + 6 band vectors + a weight (31; 4 x 4 and 4 x 5
	 * were 6% and 3% slower on 3x3 64->64 on 56x56, 3.5% and 2% on 1x1
	 * 256->64 there: Sapphire Rapids-class Xeon, one core) */
	{"avx512", "avx512f,avx512vl,fma", "__m512", "_mm512", 16, 6},
	/* 16 ymm: 4 x 3 sums + 3 band vectors + a weight */
	{"avx2", "avx2,fma", "__m256", "_mm256", 8, 3},
};

#define CONV_UK_ARGS \
	"const float *restrict band, int64_t bc, const unsigned *restrict tap, int64_t kk, " \
	"int64_t cc, const float *restrict w, int64_t ws, float *restrict acc, int64_t as, " \
	"int64_t tp, const float *bias, int fresh, int relu, const float *res, const float *scl, " \
	"const float *shf, int pf"

/*
 * A load of one vector at address ad, into b: whole, or (mask, the tail
 * tile of conv_emit_uk) only the lanes below tp - t, through the mask `mk`
 * the tail declares. Masked-off lanes are not read (neither AVX-512's
 * masked loads nor AVX2's vmaskmovps fault on them) and read as zero.
 */
static void conv_uk_load(struct rl_buf *b, const struct conv_isa *is, bool mask, const char *ad)
{
	if (!mask)
		rl_buf_printf(b, "%s_loadu_ps(%s)", is->pfx, ad);
	else if (is->vw == 16)
		rl_buf_printf(b, "_mm512_maskz_loadu_ps(mk, %s)", ad);
	else
		rl_buf_printf(b, "_mm256_maskload_ps(%s, mk)", ad);
}

static void conv_uk_store(struct rl_buf *b, const struct conv_isa *is, bool mask, const char *ad,
                          const char *v)
{
	if (!mask)
		rl_buf_printf(b, "%s_storeu_ps(%s, %s);", is->pfx, ad, v);
	else if (is->vw == 16)
		rl_buf_printf(b, "_mm512_mask_storeu_ps(%s, mk, %s);", ad, v);
	else
		rl_buf_printf(b, "_mm256_maskstore_ps(%s, mk, %s);", ad, v);
}

/*
 * One step of a tile: nv band vectors at xs, four weights at wc[r * ws + wi].
 * In a copy of the 1x1 loop taken where the call asks (the kernel's pf:
 * inputs above CONV_UK_PF_BYTES, conv_uk_call), first a prefetch of the lines of
 * the band vectors CONV_UK_PF channels ahead: a 1x1 kernel that reads its
 * input in place (band_direct_in) walks channels H x W floats apart, past
 * the 4 KB pages the L2 streamer follows, and a large input (the layer
 * before's output) is in the last-level cache by then. light_resnet50 in
 * the model (per kernel, one core): 1x1 256->64 on 56x56 (3.2 MB in)
 * 729-741 -> 707-719 us, 1x1 512->128 on 28x28 (1.6 MB) 755-775 ->
 * 719-737; at two threads 513-578 -> 449-560 and 495-573 -> 446-583. The
 * 1x1 64->64 and 64->256 on 56x56 (800 KB in, in L2 after the layer
 * before) ran 3% slower with it, and per tap of a 3x3 it made 3x3 64->64 5%
 * slower (the band is L2's there).
 *
 * The output's prefetch (pf bit 1, conv_uk_tiles): where the sums go straight
 * into output rows (dout) larger than CONV_UK_PF_BYTES, the widest tiles
 * first prefetch the lines of the next tile's sums. Such an output is often
 * memory the run has not touched yet (a fresh workspace region: light_resnet50's
 * 1x1 64->256 on 56x56 writes 3.2 MB there), and the stores then wait on
 * reads for ownership from DRAM. That layer alone (AMD EPYC, Zen 4, one
 * core, bench/timing_harness.c --flush 64): 1.13-1.15 -> 1.06 ms with a
 * cold cache, 0.93 -> 0.94 warm; the whole model 78.2-78.8 -> 77.5-78.1 ms.
 */
#define CONV_UK_PF 4
#define CONV_UK_PF_BYTES 1048576

/*
 * Prefetches of the input `ahead` channels on (channel stride: the variable
 * named `stride`), for the floats off[0..n) of xs (ascending): one per 16
 * floats and the last, so every line between the first and the last is
 * fetched once. Both micro-kernel families use it (conv_uk_step,
 * cv_uk_step). The address is computed as an integer: past the input it
 * reads nothing and cannot fault.
 */
static void uk_prefetch_x(struct rl_buf *b, const char *ind, const char *stride, int ahead,
                          const int64_t *off, int n)
{
	int64_t last = -16;
	for (int j = 0; j < n; j++) {
		if (off[j] < last + 16 && !(j == n - 1 && off[j] > last))
			continue;
		char o[32] = "";
		if (off[j])
			snprintf(o, sizeof(o), " + %lld", (long long)off[j]);
		rl_buf_printf(b, "%s_mm_prefetch((const char *)((uintptr_t)xs + (uintptr_t)(%d * %s%s) * 4), _MM_HINT_T0);\n",
		              ind, ahead, stride, o);
		last = off[j];
	}
}

static void conv_uk_step(struct rl_buf *b, const struct conv_isa *is, int nr, int nv, bool mask,
                         bool pf, const char *ind, const char *wb, const char *wi)
{
	char ad[64];
	if (pf) {
		char in8[64];
		int64_t off[CONV_NV_MAX];
		for (int v = 0; v < nv; v++)
			off[v] = v * is->vw;
		snprintf(in8, sizeof(in8), "%s        ", ind);
		uk_prefetch_x(b, in8, "bc", CONV_UK_PF, off, nv);
	}
	rl_buf_printf(b, "%s        const %s", ind, is->vt);
	for (int v = 0; v < nv; v++) {
		rl_buf_printf(b, "%s x%d = ", v ? "," : "", v);
		conv_uk_load(b, is, mask, cg_addr(ad, sizeof(ad), "xs", 0, NULL, NULL, v * is->vw));
	}
	rl_buf_printf(b, ";\n");
	for (int r = 0; r < nr; r++) {
		char wo[16] = "";
		if (r)
			snprintf(wo, sizeof(wo), r == 1 ? "ws + " : "%d * ws + ", r);
		rl_buf_printf(b, "%s        const %s a%d = %s_set1_ps(%s[%s%s]);", ind, is->vt, r,
		              is->pfx, wb, wo, wi);
		for (int v = 0; v < nv; v++)
			rl_buf_printf(b, " s%d%d = %s_fmadd_ps(a%d, x%d, s%d%d);", r, v, is->pfx, r, v, r, v);
		rl_buf_printf(b, "\n");
	}
}

/* One register tile of nr channels (one block of four, or two blocks) x nv
 * vectors at column t, sums in registers. acc, w, bias, res, scl and shf
 * are named by nm[0..5] (the first block's). */
static void conv_uk_tile(struct rl_buf *b, const struct conv_isa *is, int nr, int nv, bool mask,
                         const char *ind, const char *const *nm)
{
	char ad[64];
	for (int r = 0; r < nr; r++) {
		rl_buf_printf(b, "%s%s", ind, is->vt);
		for (int v = 0; v < nv; v++)
			rl_buf_printf(b, "%s s%d%d", v ? "," : "", r, v);
		rl_buf_printf(b, ";\n");
	}
	rl_buf_printf(b, "%sif (fresh) {\n", ind);
	for (int r = 0; r < nr; r++) {
		rl_buf_printf(b, "%s    s%d0 = %s ? %s_set1_ps(%s[%d]) : %s_setzero_ps();", ind, r,
		              nm[2], is->pfx, nm[2], r, is->pfx);
		for (int v = 1; v < nv; v++)
			rl_buf_printf(b, " s%d%d = s%d0;", r, v, r);
		rl_buf_printf(b, "\n");
	}
	rl_buf_printf(b, "%s} else {\n", ind);
	for (int r = 0; r < nr; r++) {
		rl_buf_printf(b, "%s   ", ind);
		for (int v = 0; v < nv; v++) {
			rl_buf_printf(b, " s%d%d = ", r, v);
			conv_uk_load(b, is, mask, cg_addr(ad, sizeof(ad), nm[0], r, "as", "t", v * is->vw));
			rl_buf_printf(b, ";");
		}
		rl_buf_printf(b, "\n");
	}
	rl_buf_printf(b, "%s}\n", ind);
	rl_buf_printf(b, "%sconst float *xc = band + t, *wc = %s;\n", ind, nm[1]);
	/* a 1x1 kernel (one tap) walks the channels in one loop, without the
	 * tap loop's per-channel overhead (a fifth of the FMA issue slots on
	 * the 1x1 layers, Zen 3); the same sums in the same order */
	static const char *const one_tap[2] = {"kk == 1 && (pf & 1)", "kk == 1"};
	for (int q = 0; q < 2; q++) {
		rl_buf_printf(b, "%s%sif (%s) {\n", ind, q ? "} else " : "", one_tap[q]);
		rl_buf_printf(b, "%s    const float *xs = xc + tap[0];\n", ind);
		rl_buf_printf(b, "%s    for (int64_t c = 0; c < cc; c++, xs += bc) {\n", ind);
		conv_uk_step(b, is, nr, nv, mask, q == 0, ind, nm[1], "c");
		rl_buf_printf(b, "%s    }\n", ind);
	}
	rl_buf_printf(b, "%s} else\n", ind);
	rl_buf_printf(b, "%sfor (int64_t c = 0; c < cc; c++, xc += bc, wc += kk) {\n", ind);
	rl_buf_printf(b, "%s    for (int64_t k = 0; k < kk; k++) {\n", ind);
	rl_buf_printf(b, "%s        const float *xs = xc + tap[k];\n", ind);
	conv_uk_step(b, is, nr, nv, mask, false, ind, "wc", "k");
	rl_buf_printf(b, "%s    }\n%s}\n", ind, ind);
	/* a fused per-channel Mul and Add on the final sums (conv_epi_regs):
	 * s * scl[r], then + shf[r], one rounding each as in the epilogue */
	for (int q = 4; q < 6; q++) {
		rl_buf_printf(b, "%sif (%s) {\n", ind, nm[q]);
		for (int r = 0; r < nr; r++) {
			rl_buf_printf(b, "%s    const %s f%d = %s_set1_ps(%s[%d]);", ind, is->vt, r, is->pfx,
			              nm[q], r);
			for (int v = 0; v < nv; v++)
				rl_buf_printf(b, " s%d%d = %s_%s_ps(s%d%d, f%d);", r, v, is->pfx,
				              q == 4 ? "mul" : "add", r, v, r);
			rl_buf_printf(b, "\n");
		}
		rl_buf_printf(b, "%s}\n", ind);
	}
	/* a fused residual Add on the final sums (conv_epi_regs): s + res, at
	 * acc's offsets in res; the epilogue's conv + x, the same values (a
	 * prefetch of the tile's residual lines before its channel loop was
	 * 1-4% slower on light_resnet50's 1x1 residual layers, in the model) */
	rl_buf_printf(b, "%sif (%s) {\n", ind, nm[3]);
	for (int r = 0; r < nr; r++) {
		rl_buf_printf(b, "%s   ", ind);
		for (int v = 0; v < nv; v++) {
			rl_buf_printf(b, " s%d%d = %s_add_ps(s%d%d, ", r, v, is->pfx, r, v);
			conv_uk_load(b, is, mask, cg_addr(ad, sizeof(ad), nm[3], r, "as", "t", v * is->vw));
			rl_buf_printf(b, ");");
		}
		rl_buf_printf(b, "\n");
	}
	rl_buf_printf(b, "%s}\n", ind);
	/* a fused Relu on the final sums (conv_epi_regs): max(0, s), which
	 * returns s where s is NaN or -0, as the epilogue's s < 0 ? 0 : s */
	rl_buf_printf(b, "%sif (relu) {\n%s    const %s z = %s_setzero_ps();\n", ind, ind, is->vt,
	              is->pfx);
	for (int r = 0; r < nr; r++) {
		rl_buf_printf(b, "%s   ", ind);
		for (int v = 0; v < nv; v++)
			rl_buf_printf(b, " s%d%d = %s_max_ps(z, s%d%d);", r, v, is->pfx, r, v);
		rl_buf_printf(b, "\n");
	}
	rl_buf_printf(b, "%s}\n", ind);
	for (int r = 0; r < nr; r++) {
		rl_buf_printf(b, "%s", ind);
		for (int v = 0; v < nv; v++) {
			char sv[16];
			snprintf(sv, sizeof(sv), "s%d%d", r, v);
			rl_buf_printf(b, "%s", v ? " " : "");
			conv_uk_store(b, is, mask, cg_addr(ad, sizeof(ad), nm[0], r, "as", "t", v * is->vw), sv);
		}
		rl_buf_printf(b, "\n");
	}
}

/*
 * The tiles of one column step, for each of the nb blocks in turn (the
 * blocks inner, see conv_emit_uk). A tile of one vector has only four sums,
 * too few to cover the FMA latency on two pipes (it ran at half the rate
 * of the wide tiles), so those take two blocks at once where there are
 * two: eight sums, each still over c and k in order (the same bits).
 * SqueezeNet's first layer, 3->64 3x3/2 to 111x111 (rows of 96 + 15
 * columns), alone, one thread, Xeon VM, minimum thread CPU time: AVX-512
 * 322 -> 314 us, the AVX2 kernels (-DRL_CONV_NO_AVX512) 473 -> 448 us;
 * light_squeezenet whole, best of 5: 3.84 -> 3.81 ms.
 */
/* Block blk's sums, weights, bias, residual and per-channel factors
 * (nm[0..5] of conv_uk_tile); ab is declared by the caller. */
static void conv_uk_block(struct rl_buf *b)
{
	rl_buf_printf(b, "            const float *wb = w + blk * 4 * ws, *bb = bias ? bias + blk * 4 : NULL;\n");
	rl_buf_printf(b, "            const float *rb = res ? res + blk * 4 * as : NULL;\n");
	rl_buf_printf(b, "            const float *sb = scl ? scl + blk * 4 : NULL, *hb = shf ? shf + blk * 4 : NULL;\n");
}

static void conv_uk_tiles(struct rl_buf *b, const struct conv_isa *is, int nv, bool mask)
{
	static const char *const blk[6] = {"ab", "wb", "bb", "rb", "sb", "hb"};
	rl_buf_printf(b, "        int64_t blk = 0;\n");
	if (nv == 1) {
		rl_buf_printf(b, "        for (; blk + 2 <= nb; blk += 2) { /* two blocks: eight sums */\n");
		rl_buf_printf(b, "            float *ab = acc + blk * 4 * as;\n");
		conv_uk_block(b);
		conv_uk_tile(b, is, 8, nv, mask, "            ", blk);
		rl_buf_printf(b, "        }\n");
	}
	rl_buf_printf(b, "        for (; blk < nb; blk++) {\n");
	rl_buf_printf(b, "            float *ab = acc + blk * 4 * as;\n");
	if (nv == is->nv && !mask) {
		/* the widest tiles: the lines of the next tile's sums, where the
		 * call asks (pf & 2, conv_uk_call) */
		int tw = nv * is->vw;
		rl_buf_printf(b, "            if (pf & 2)\n"
		                 "                for (int64_t r = 0; r < 4; r++) {\n");
		for (int o = 0; o < tw; o += 16)
			rl_buf_printf(b, "                    _mm_prefetch((const char *)((uintptr_t)(ab + r * as + t) + %d), _MM_HINT_T0);\n",
			              (tw + o) * 4);
		rl_buf_printf(b, "                }\n");
	}
	conv_uk_block(b);
	conv_uk_tile(b, is, 4, nv, mask, "            ", blk);
	rl_buf_printf(b, "        }\n");
}

/* The micro-kernels of every ISA and the pick at init, into statics. */
static void conv_emit_uk(struct rl_buf *b)
{
	rl_buf_printf(b,
		"/* ---- Conv micro-kernels: explicit FMA per ISA, one picked at init ---- */\n"
		"/*\n"
		" * acc[r * as + t] += sum over c < cc, k < kk of w[r * ws + c * kk + k] *\n"
		" * band[c * bc + tap[k] + t], for r < 4 * nb output channels and t < tp\n"
		" * (past the last whole vector, the lanes at tp and beyond are masked off:\n"
		" * neither read nor written, so the sums can go straight into output rows\n"
		" * of any length and the input be read in place): nb blocks of four\n"
		" * channels over one chunk of input\n"
		" * channels and every tap; with `fresh` the sums start from the bias (or\n"
		" * zero) instead of acc, with `res` the sums get res[r * as + t] added (a\n"
		" * fused residual Add on the last chunk), with `relu` they end as\n"
		" * max(0, sum) (a fused Relu, after it); before the residual, with `scl`\n"
		" * they are multiplied by scl[r], with `shf` get shf[r] added (a fused\n"
		" * per-channel Mul and Add). A register tile holds 4 channels x NV vectors\n"
		" * of sums, enough independent FMAs to cover their latency on two pipes;\n"
		" * per tap it loads NV band vectors once and broadcasts four weights.\n"
		" * Every sum adds its terms in the order c, k, as the portable tiles do.\n"
		" */\n"
		"#if defined(__x86_64__) && defined(__GNUC__) && !defined(RL_NO_ISA)\n"
		"#include <immintrin.h>\n"
		"#define RL_CONV_ISA 1\n"
		"typedef void (*rl_conv4_fn)(" CONV_UK_ARGS ", int64_t nb);\n\n");
	for (size_t i = 0; i < sizeof(conv_isas) / sizeof(conv_isas[0]); i++) {
		const struct conv_isa *is = &conv_isas[i];
		int tw = is->nv * is->vw;
		/* noinline: GCC 12 inlined it into the sub-chunk loop of
		 * rl_conv4_avx2_sub and the tiles ran 10% slower (3x3 64->64
		 * on 56x56, one pass) */
		rl_buf_printf(b, "static __attribute__((target(\"%s\"), noinline)) void rl_conv4_%s(" CONV_UK_ARGS
		              ", int64_t nb)\n{\n", is->target, is->name);
		/* AVX-512 in the blocks-outer order (each block over every
		 * column, then the next) ran 1x1 256->64 on 56x56 14% slower
		 * and 3x3 64->64 there 6% slower (Sapphire Rapids-class, one
		 * core): there the band columns of all 128 channels stream from
		 * L2 once per block */
		rl_buf_printf(b, "    /* the tile's columns outer, the blocks inner: the tile's band\n"
		                 "     * columns (cc x %d floats per tap) stay in L1 for every block's\n"
		                 "     * weights (the other order streams the band from L2 per block:\n"
		                 "     * 16 bytes a cycle, more than Zen 3 sustains at 64 strided rows) */\n",
		              tw);
		rl_buf_printf(b, "    int64_t t = 0;\n");
		rl_buf_printf(b, "    for (; t + %d <= tp; t += %d) {\n", tw, tw);
		conv_uk_tiles(b, is, is->nv, false);
		rl_buf_printf(b, "    }\n");
		rl_buf_printf(b, "    /* the columns left: narrower tiles, whole vectors */\n");
		for (int nv = is->nv - 1; nv >= 1; nv--) {
			rl_buf_printf(b, "    if (t + %d <= tp) {\n", nv * is->vw);
			conv_uk_tiles(b, is, nv, false);
			rl_buf_printf(b, "        t += %d;\n    }\n", nv * is->vw);
		}
		/* a tp that is not a multiple of the vector: the last lanes masked */
		rl_buf_printf(b, "    if (t < tp) { /* the last tp - t < %d columns */\n", is->vw);
		if (is->vw == 16)
			rl_buf_printf(b, "        const __mmask16 mk = (__mmask16)((1u << (tp - t)) - 1);\n");
		else
			rl_buf_printf(b, "        const __m256i mk = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(tp - t)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));\n");
		conv_uk_tiles(b, is, 1, true);
		rl_buf_printf(b, "    }\n");
		rl_buf_printf(b, "}\n\n");
		/*
		 * The input channels in sub-chunks of about CONV_UK_SUB_STEPS
		 * channel-taps, where a kernel has more than one tap: a tile's
		 * band columns for all cc channels (3x3 64->64 on 56x56: 64 x 3
		 * rows x 26 floats, about 30 KB) did not stay in L1 with the
		 * blocks' weights streaming past them, so every block read
		 * them again from L2. Micro-benchmark (Zen 3, one core, the
		 * band of that layer in L2, 8 weight sets in turn): 86% of the
		 * FMA peak in one pass, 93-95% in sub-chunks of 8, 16 or 32
		 * channels. The layer alone (bench_conv_layers.py's model with
		 * a Relu, one thread, thread CPU time, load 6): 2.80 ms in one
		 * pass, 2.55-2.57 in sub-chunks of 32 channels (288 steps),
		 * 2.57-2.61 in sub-chunks of 8. The partial sums go through acc
		 * between sub-chunks, in the same order: the same bits. A 1x1
		 * kernel keeps one pass (sub-chunks of 32 or 64 of 128
		 * channels: 82-84% of the peak, against 86%: its band columns
		 * are 1.5 lines a channel, and the kk == 1 loop is the faster
		 * one). Only the calls with more than CONV_UK_SUB_STEPS
		 * channel-taps go through it (rl_conv4_sub): through it, SqueezeNet's
		 * 3x3/2 3->64 stem (27 channel-taps, one sub-chunk) took 0.66-0.68
		 * ms against 0.60-0.61 calling the tiles directly. AVX-512 (4 x 6
		 * zmm tiles, Sapphire Rapids-class, 48 KB L1, one core, 3x3 64->64
		 * on 56x56 with a Relu): 1.59 ms in one pass, 1.48 in sub-chunks of
		 * 288 steps, 1.49 of 144, 1.54 of 64; a 1x1 (256->64) in sub-chunks
		 * of 64 or 128 channels as fast as in one pass.
		 */
		rl_buf_printf(b, "static __attribute__((target(\"%s\"))) void rl_conv4_%s_sub(" CONV_UK_ARGS
		              ", int64_t nb)\n{\n", is->target, is->name);
		rl_buf_printf(b, "    /* input channels in sub-chunks of at most %d channel-taps, as even as they go */\n"
		                 "    const int64_t nsub = (cc * kk + %d) / %d, cs = (cc + nsub - 1) / nsub;\n"
		                 "    for (int64_t c0 = 0; c0 < cc; c0 += cs) {\n"
		                 "        const int64_t cn = cc - c0 < cs ? cc - c0 : cs;\n"
		                 "        const int last = c0 + cn == cc;\n"
		                 "        rl_conv4_%s(band + c0 * bc, bc, tap, kk, cn, w + c0 * kk, ws, acc, as, tp, bias,\n"
		                 "                       fresh && c0 == 0, relu && last, last ? res : NULL,\n"
		                 "                       last ? scl : NULL, last ? shf : NULL, pf, nb);\n"
		                 "    }\n}\n\n",
		              CONV_UK_SUB_STEPS, CONV_UK_SUB_STEPS - 1, CONV_UK_SUB_STEPS, is->name);
	}
	rl_buf_printf(b,
		"static rl_conv4_fn rl_conv4; /* NULL: the kernels' portable tiles */\n"
		"static rl_conv4_fn rl_conv4_sub; /* rl_conv4 in sub-chunks of channels (more channel-taps) */\n"
		"static int rl_conv_isa; /* 2: AVX-512, 1: AVX2 and FMA, 0: portable */\n\n"
		"/* -DRL_CONV_NO_AVX512: the AVX2 kernels on any CPU that has AVX2 (tests) */\n"
		"#ifdef RL_CONV_NO_AVX512\n"
		"#define RL_CONV_AVX512_OK 0\n"
		"#else\n"
		"#define RL_CONV_AVX512_OK 1\n"
		"#endif\n"
		"static void rl_conv4_pick(void)\n"
		"{\n"
		"    __builtin_cpu_init();\n"
		"    if (RL_CONV_AVX512_OK && __builtin_cpu_supports(\"avx512f\") && __builtin_cpu_supports(\"avx512vl\"))\n"
		"        rl_conv4 = rl_conv4_avx512, rl_conv4_sub = rl_conv4_avx512_sub, rl_conv_isa = 2;\n"
		"    else if (__builtin_cpu_supports(\"avx2\") && __builtin_cpu_supports(\"fma\"))\n"
		"        rl_conv4 = rl_conv4_avx2, rl_conv4_sub = rl_conv4_avx2_sub, rl_conv_isa = 1;\n"
		"}\n"
		"#endif\n\n");
}

/*
 * First band-mode kernel of the file: the scratch and the micro-kernels go
 * into statics, and init picks the micro-kernel (before any kernel's
 * reserve, so the order of init lines does not matter).
 */
static void conv_need_rt(struct rl_cgen *cg)
{
	if (cg->statics.s && strstr(cg->statics.s, "rl_conv_scratch_reserve"))
		return;
	rl_buf_printf(&cg->statics, "%s", conv_rt_scratch);
	conv_emit_uk(&cg->statics);
	rl_buf_printf(&cg->init, "#ifdef RL_CONV_ISA\n    rl_conv4_pick();\n#endif\n");
	rl_buf_printf(&cg->fini, "    rl_conv_scratch_free();\n");
}

/* The window of one node, spatial axes only. */
struct conv_win {
	int nsp;
	int64_t in[RL_MAX_RANK], out[RL_MAX_RANK];
	int64_t k[RL_MAX_RANK], s[RL_MAX_RANK], d[RL_MAX_RANK];
	int64_t pb[RL_MAX_RANK];
};

static bool read_ints(const struct rl_node *n, const char *name, int want, int64_t def,
                      int64_t *out)
{
	const int64_t *a;
	int cnt = rl_node_attr_ints(n, name, &a);
	for (int i = 0; i < want; i++)
		out[i] = def;
	if (cnt < 0)
		return true;
	if (cnt != want)
		return false;
	memcpy(out, a, sizeof(int64_t) * (size_t)want);
	return true;
}

/* Read kernel, strides, dilations and begin pads; false with a message. */
static bool conv_win_read(struct rl_cgen *cg, uint32_t node, bool transposed,
                          struct conv_win *w, const char **why)
{
	const struct rl_node *n = &cg->g->nodes[node];
	const struct rl_shape *sx = &cg_in(cg, node, 0)->shape;
	const struct rl_shape *sw = &cg_in(cg, node, 1)->shape;
	const struct rl_shape *sy = &cg_out(cg, node, 0)->shape;
	int nsp = sx->rank - 2;
	memset(w, 0, sizeof(*w));
	w->nsp = nsp;
	if (nsp < 1 || sw->rank != sx->rank || sy->rank != sx->rank) {
		*why = "input, weight and output must have the same rank >= 3";
		return false;
	}
	for (int i = 0; i < nsp; i++) {
		w->in[i] = sx->d[2 + i].v;
		w->out[i] = sy->d[2 + i].v;
		w->k[i] = sw->d[2 + i].v;
	}
	int64_t ks[RL_MAX_RANK], pads[2 * RL_MAX_RANK], opad[RL_MAX_RANK];
	if (!read_ints(n, "kernel_shape", nsp, -1, ks) || !read_ints(n, "strides", nsp, 1, w->s) ||
	    !read_ints(n, "dilations", nsp, 1, w->d) || !read_ints(n, "pads", 2 * nsp, 0, pads) ||
	    !read_ints(n, "output_padding", nsp, 0, opad)) {
		*why = "a window attribute has the wrong number of entries";
		return false;
	}
	for (int i = 0; i < nsp; i++) {
		if (ks[i] >= 0 && ks[i] != w->k[i]) {
			*why = "kernel_shape differs from the weight's shape";
			return false;
		}
		if (w->s[i] < 1 || w->d[i] < 1) {
			*why = "strides and dilations must be >= 1";
			return false;
		}
	}
	const char *ap = rl_node_attr_str(n, "auto_pad", "NOTSET");
	bool same_upper = strcmp(ap, "SAME_UPPER") == 0, same_lower = strcmp(ap, "SAME_LOWER") == 0;
	bool valid = strcmp(ap, "VALID") == 0;
	if (!same_upper && !same_lower && !valid && *ap && strcmp(ap, "NOTSET") != 0) {
		*why = "unknown auto_pad";
		return false;
	}
	bool has_os = rl_node_attr(n, "output_shape") != NULL;
	for (int i = 0; i < nsp; i++) {
		int64_t ek = (w->k[i] - 1) * w->d[i] + 1;
		if (transposed && (has_os || same_upper || same_lower)) {
			/* the reference's Python floor division: total may be negative
			 * when output_shape asks for more than the natural size */
			int64_t total = w->s[i] * (w->in[i] - 1) + opad[i] + ek - w->out[i];
			int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
			w->pb[i] = same_upper ? half : total - half;
		} else if (same_upper || same_lower) {
			int64_t total = (w->out[i] - 1) * w->s[i] + ek - w->in[i];
			if (total < 0)
				total = 0;
			w->pb[i] = same_upper ? total / 2 : total - total / 2;
		} else if (valid) {
			w->pb[i] = 0;
		} else {
			w->pb[i] = pads[i];
		}
	}
	return true;
}

static void line_open(struct rl_cgen *cg, const char *fmt, long long a, long long b)
{
	char s[256];
	snprintf(s, sizeof(s), fmt, a, b);
	cg_line(cg, "%s", s);
	cg->indent++;
}

static void line_close(struct rl_cgen *cg)
{
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * `#ifdef RL_CONV_ISA` `if (rl_conv4) {` ... `} else` `#endif` `{` ... `}`:
 * the micro-kernel's branch where one was picked at init, the portable one
 * otherwise (and where the compiler has no micro-kernels). uk_open emits the
 * first two lines and returns the indent to give uk_else, which closes the
 * branch and opens the portable block (closed with line_close).
 */
static int uk_open(struct rl_cgen *cg)
{
	int ind = cg->indent;
	cg->indent = -1;
	cg_line(cg, "#ifdef RL_CONV_ISA");
	cg->indent = ind;
	line_open(cg, "if (rl_conv4) {", 0, 0);
	return ind;
}

static void uk_else(struct rl_cgen *cg, int ind)
{
	cg->indent--;
	cg_line(cg, "} else");
	cg->indent = -1;
	cg_line(cg, "#endif");
	cg->indent = ind;
	line_open(cg, "{", 0, 0);
}

/*
 * `for (size_t VAR = 0; VAR < n; VAR++) { body }` with a literal trip count
 * that is a multiple of 16 (or 4 when shorter) plus a scalar tail, so gcc's
 * -O2 vectorizer (which takes only loops it can cover without an epilogue)
 * accepts the main part at every vector width of the RL_TARGETS clones.
 */
static int64_t vec_part(int64_t n)
{
	return n >= 16 ? n / 16 * 16 : n >= 8 ? n / 4 * 4 : n;
}

static void emit_split_loop(struct rl_cgen *cg, const char *var, int64_t n,
                            const char *const *body, int nbody)
{
	int64_t n4 = vec_part(n);
	char h[200];
	if (n4 > 0) {
		snprintf(h, sizeof(h), "for (size_t %s = 0; %s < %lld; %s++) {", var, var,
		         (long long)n4, var);
		cg_line(cg, "%s", h);
		for (int i = 0; i < nbody; i++)
			cg_line(cg, "    %s", body[i]);
		cg_line(cg, "}");
	}
	if (n > n4) {
		snprintf(h, sizeof(h), "for (size_t %s = %lld; %s < %lld; %s++) {", var,
		         (long long)n4, var, (long long)n, var);
		cg_line(cg, "%s", h);
		for (int i = 0; i < nbody; i++)
			cg_line(cg, "    %s", body[i]);
		cg_line(cg, "}");
	}
}

/*
 * A direct 2-D convolution (1-D as H = 1), float or double, for band mode
 * and the row form. Dims: N, C, H, W in; M, OH, OW out; KH x KW kernel.
 * The row form (emit_conv2d) accumulates in the output rows.
 */
struct conv2d {
	int64_t N, C, H, W, M, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, G;
	bool bias;
	int64_t chunks; /* the most chunks across threads (node tile.chunks) */
};

static void emit_conv2d(struct rl_cgen *cg, const char *T, const struct conv2d *p)
{
	int64_t CG = p->C / p->G, MG = p->M / p->G;
	int mb = MG % CONV_MB == 0 ? CONV_MB : MG % 2 == 0 ? 2 : 1;
	int64_t kk = p->KH * p->KW;
	/* the input row positions a row of outputs reads: [-PL, -PL + WP) */
	int64_t wp = (p->OW - 1) * p->SW + (p->KW - 1) * p->DW + 1;
	bool hpad = p->PL > 0 || wp - p->PL > p->W;
	bool vpad = p->PT > 0 || (p->OH - 1) * p->SH + (p->KH - 1) * p->DH - p->PT >= p->H;
	char b[512];

	line_open(cg, "for (size_t n = 0; n < %lld; n++) {", p->N, 0);
	line_open(cg, "for (size_t mo = 0; mo < %lld; mo += %lld) {", p->M, mb);
	if (p->G > 1)
		cg_line(cg, "const size_t g = mo / %lld;", (long long)MG);
	else
		cg_line(cg, "const size_t g = 0;");
	snprintf(b, sizeof(b), "const %s *restrict xg = X0 + (n * %lld + g * %lld) * %lld;", T,
	         (long long)p->C, (long long)CG, (long long)(p->H * p->W));
	cg_line(cg, "%s", b);
	line_open(cg, "for (size_t oh = 0; oh < %lld; oh++) {", p->OH, 0);
	for (int r = 0; r < mb; r++)
		cg_line(cg, "%s *restrict y%d = Y0 + ((n * %lld + mo + %d) * %lld + oh) * %lld;", T, r,
		        (long long)p->M, r, (long long)p->OH, (long long)p->OW);
	{
		char lines[CONV_MB][160];
		const char *body[CONV_MB];
		for (int r = 0; r < mb; r++) {
			if (p->bias)
				snprintf(lines[r], sizeof(lines[r]), "y%d[ow] = X2[mo + %d];", r, r);
			else
				snprintf(lines[r], sizeof(lines[r]), "y%d[ow] = %s;", r, cg_zero(T));
			body[r] = lines[r];
		}
		emit_split_loop(cg, "ow", p->OW, body, mb);
	}
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", CG, 0);
	cg_line(cg, "const %s *restrict xc = xg + c * %lld;", T, (long long)(p->H * p->W));
	cg_line(cg, "const %s *restrict wc = X1 + (mo * %lld + c) * %lld;", T, (long long)CG,
	        (long long)kk);
	line_open(cg, "for (size_t kh = 0; kh < %lld; kh++) {", p->KH, 0);
	if (vpad) {
		cg_line(cg, "const long long ih = (long long)(oh * %lld + kh * %lld) - %lld;",
		        (long long)p->SH, (long long)p->DH, (long long)p->PT);
		cg_line(cg, "if (ih < 0 || ih >= %lld)", (long long)p->H);
		cg_line(cg, "    continue;");
		cg_line(cg, "const %s *restrict xr = xc + (size_t)ih * %lld;", T, (long long)p->W);
	} else {
		cg_line(cg, "const %s *restrict xr = xc + (oh * %lld + kh * %lld - %lld) * %lld;", T,
		        (long long)p->SH, (long long)p->DH, (long long)p->PT, (long long)p->W);
	}
	const char *src = "xr";
	if (hpad) {
		/* zero-padded copy of the row: row[q] = x[q - PL] */
		int64_t lo = p->PL < wp ? p->PL : wp;
		int64_t hi = p->PL + p->W < wp ? p->PL + p->W : wp;
		cg_scratch_array(cg, T, "row", wp, 0);
		if (lo > 0) {
			cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)lo);
			cg_line(cg, "    row[q] = %s;", cg_zero(T));
		}
		if (hi > lo) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)lo, (long long)hi);
			cg_line(cg, "    row[q] = xr[q - %lld];", (long long)p->PL);
		}
		if (wp > hi) {
			cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)hi, (long long)wp);
			cg_line(cg, "    row[q] = %s;", cg_zero(T));
		}
		src = "row";
	}
	line_open(cg, "for (size_t kw = 0; kw < %lld; kw++) {", p->KW, 0);
	for (int r = 0; r < mb; r++)
		cg_line(cg, "const %s w%d = wc[%lld + kh * %lld + kw];", T, r, (long long)(r * CG * kk),
		        (long long)p->KW);
	cg_line(cg, "const %s *xs = %s + kw * %lld;", T, src, (long long)p->DW);
	{
		char lines[CONV_MB + 1][160];
		const char *body[CONV_MB + 1];
		if (p->SW == 1)
			snprintf(lines[0], sizeof(lines[0]), "const %s xv = xs[ow];", T);
		else
			snprintf(lines[0], sizeof(lines[0]), "const %s xv = xs[ow * %lld];", T,
			         (long long)p->SW);
		body[0] = lines[0];
		for (int r = 0; r < mb; r++) {
			snprintf(lines[r + 1], sizeof(lines[r + 1]), "y%d[ow] += w%d * xv;", r, r);
			body[r + 1] = lines[r + 1];
		}
		emit_split_loop(cg, "ow", p->OW, body, mb + 1);
	}
	line_close(cg); /* kw */
	line_close(cg); /* kh */
	line_close(cg); /* c */
	/* the block's output rows are final: a fused epilogue runs on them now */
	if (cg->epi) {
		char yr[260], base[200];
		cg_line(cg, "for (size_t er = 0; er < %d; er++) {", mb);
		cg->indent++;
		snprintf(base, sizeof(base), "((n * %lld + mo + er) * %lld + oh) * %lld",
		         (long long)p->M, (long long)p->OH, (long long)p->OW);
		snprintf(yr, sizeof(yr), "Y0 + %s", base);
		cg_epilogue(cg, yr, base, p->OW, p->OW);
		line_close(cg);
	}
	line_close(cg); /* oh */
	line_close(cg); /* mo */
	line_close(cg); /* n */
}

/*
 * Band mode: the register-blocked direct convolution for float and double
 * with one or two spatial axes (1x1 included).
 *
 * The output rows are cut into bands of R rows. For a band, the input rows
 * it reads are copied with their zero padding into the scratch array `band`,
 * CC input channels at a time (all of them when they fit). A stride s is
 * undone by that copy: padded input column q goes to phase plane q % s at
 * column q / s (rows likewise), so that every kernel tap reads a contiguous
 * run of the band at a fixed offset, tap[k], from the output position. The
 * band's outputs, flattened with the band's row pitch WJ (the WJ - OW extra
 * columns of each row are computed and dropped), are then a small GEMM: a
 * register tile of MR output channels x NV vectors sums weight x band over
 * the chunk's channels and taps in local variables. Each tile starts from
 * and ends in `acc`, the block's band rows in the scratch slot after the
 * band, which holds the partial sums read back from the output for later
 * chunks (the first chunk's tiles start from the bias); acc is then copied
 * to the output rows, where a fused epilogue runs once the last chunk is in.
 *
 * Tiles: the FMA micro-kernels (rl_conv4_avx512: 4 channels x 6 zmm,
 * rl_conv4_avx2: 4 x 3 ymm; 24 or 12 independent sums, enough to cover the
 * FMA latency on two pipes) or the portable tiles, GCC/Clang vector
 * extensions of 32 bytes when the compiler targets AVX and 16 otherwise.
 * acc's width is a multiple of 16 floats; narrower tiles cover what the
 * widest leave. The sums run in the order bias, then channels and taps in
 * turn, on every path; the micro-kernels round once per FMA.
 *
 * The scratch (band + acc per running range, up to CONV_BAND_BYTES +
 * CONV_ACC_BYTES, sized to stay in L2 and L1) lives in rl_conv_scratch, one
 * slot per thread, allocated in NAME_init: no large stack arrays.
 */
struct conv_band {
	int mr, nv;                /* register tile: mr output channels x nv vectors */
	int64_t R;                 /* output rows per band, divides OH */
	int64_t WJ;                /* row pitch of the phase planes and of acc */
	int64_t A;                 /* rows per phase plane: R + the taps' reach in rows */
	int64_t TP;                /* acc columns: R * WJ rounded up to whole vectors or tiles */
	int64_t PLN;               /* elements per phase plane, the last tile's reach included */
	int64_t BC;                /* band elements per input channel (all its phase planes) */
	int64_t CC;                /* input channels per chunk, divides C / group */
	int nh, nw;                /* row and column phases the taps use */
	int64_t ph[CONV_PHASES], pw[CONV_PHASES];
};

/* The phases (k*d) % s of one axis' taps, ascending; false if too many. */
static bool conv_phases(int64_t k, int64_t d, int64_t s, int64_t *ph, int *n)
{
	*n = 0;
	for (int64_t f = 0; f < s; f++) {
		bool used = false;
		for (int64_t i = 0; i < k && !used; i++)
			used = i * d % s == f;
		if (!used)
			continue;
		if (*n == CONV_PHASES)
			return false;
		ph[(*n)++] = f;
	}
	return true;
}

static int conv_phase_index(const int64_t *ph, int n, int64_t f)
{
	for (int i = 0; i < n; i++)
		if (ph[i] == f)
			return i;
	return 0;
}

/*
 * Pick R and acc's width TP, and with them the chunk size, within the stack
 * budgets. The score is the share of useful columns (R*OW of those
 * computed), discounted for acc's traffic per chunk (against CC*KH*KW
 * multiply-adds per output) and for fetching a block's weights again for
 * every band (they are reused by the band's TP / tile tiles); near ties go
 * to fewer chunks, then to the taller band. The constants were fitted on
 * ResNet/SqueezeNet shapes (bench/bench_ort.py).
 *
 * Bands before thin parts: where the threads want more chunks (p->chunks)
 * than the best R gives bands, conv_band_parts cuts each band's output
 * channels into parts, and every part reads the whole band's input again,
 * at two threads half of it from the other core's cache (the previous
 * kernel wrote it there). A part of few output channels x taps (under
 * CONV_PART_MIN_MACS multiply-adds per input element) is that read; then,
 * where an R giving enough bands scores within CONV_BANDS_FIRST of the
 * best, the choice is among those. SqueezeNet's squeeze 1x1 64->16 on
 * 55x55 at two threads, in the model (-DRL_PROFILE, mean of 3 x 2 s): 5
 * bands of 605 pixels in 4 parts of 4 channels 81 us, 11 bands of 275 in 2
 * parts 55 us (one thread 68 -> 67). Thick parts are cheaper than shorter
 * bands: the same rule for every layer took ResNet-50's 56x56 layers (64
 * to 256 outputs, parts of 32 or more) to half the bands, 11 kernels'
 * two-thread mean 7.4 -> 8.3 ms, one thread 13.8 -> 13.9.
 */
#define CONV_BANDS_FIRST 0.9
#define CONV_PART_MIN_MACS 16

/* The fewest parts per band (shares of a group's blocks of mr output
 * channels, at most all of them) that give the threads the chunks they want
 * from bands of R rows. */
static int64_t conv_parts_min(const struct conv2d *p, int mr, int64_t R)
{
	int64_t tasks = p->N * p->G * (p->OH / R), nblk = p->M / p->G / mr;
	int64_t want = p->chunks > 1 ? p->chunks : 1; /* conv_par_want */
	int64_t mp = (want + tasks - 1) / tasks;
	return mp < 1 ? 1 : mp > nblk ? nblk : mp;
}

/* Would the best R's bands need parts (p->chunks above its bands) of fewer
 * than CONV_PART_MIN_MACS multiply-adds per input element they read? */
static bool conv_thin_parts(const struct conv2d *p, const struct conv_band *b, int64_t R)
{
	if (p->N * p->G * (p->OH / R) >= p->chunks || p->M / p->G / b->mr < 1)
		return false;
	return p->M / p->G / conv_parts_min(p, b->mr, R) * p->KH * p->KW < CONV_PART_MIN_MACS;
}
static bool conv_band_plan(const struct conv2d *p, int64_t es, struct conv_band *b)
{
	int64_t CG = p->C / p->G, MG = p->M / p->G, KK = p->KH * p->KW;
	memset(b, 0, sizeof(*b));
	if (KK < 1 || CG < 1 || MG < 1 || p->OH < 1 || p->OW < 1)
		return false;
	/* twelve accumulators cover the FMA latency (where the tile has 4 channels) */
	b->mr = MG % 4 == 0 ? 4 : MG % 2 == 0 ? 2 : 1;
	b->nv = b->mr == 4 ? 3 : b->mr == 2 ? 6 : CONV_NV_MAX;
	if (!conv_phases(p->KH, p->DH, p->SH, b->ph, &b->nh) ||
	    !conv_phases(p->KW, p->DW, p->SW, b->pw, &b->nw))
		return false;
	int64_t rh = (p->KH - 1) * p->DH / p->SH, rw = (p->KW - 1) * p->DW / p->SW;
	int64_t vw = CONV_VEC_MAX / es, tq = b->nv * vw; /* widest vector, tile */
	int64_t WJ = p->OW + rw;
	double best = 0, bestw = 0;
	int64_t bestR = 1;
	bool wide = false; /* pass 1 takes only R giving the chunks wanted */
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			wide = bestw >= CONV_BANDS_FIRST * best && conv_thin_parts(p, b, bestR);
		for (int64_t R = 1; R <= p->OH; R++) {
			if (p->OH % R)
				continue;
			bool enough = p->N * p->G * (p->OH / R) >= p->chunks;
			if (pass == 1 && wide && !enough)
				continue;
			/* acc's width: whole vectors, or whole tiles */
			const int64_t widths[2] = {vw, tq};
			for (int i = 0; i < 2; i++) {
				int64_t TP = (R * WJ + widths[i] - 1) / widths[i] * widths[i];
				int64_t full = TP / tq * tq;
				int64_t PLN = rh * WJ + rw + TP;
				int64_t BC = b->nh * b->nw * PLN;
				if (b->mr * TP * es > CONV_ACC_BYTES || BC * es > CONV_BAND_BYTES)
					break;
				int64_t CC = CONV_BAND_BYTES / (BC * es);
				if (CC > CG)
					CC = CG;
				while (CG % CC)
					CC--;
				/* useful share of the columns computed, the single-vector
				 * tiles at the end counted twice (they are latency-bound) */
				double e = (double)(R * p->OW) / (double)(full + 2 * (TP - full));
				/* acc's traffic per chunk, against CC*KK multiply-adds */
				double kc = (double)(CC * KK);
				/* a block's weights come from far away for each band and
				 * are reused by its TP / tq tiles */
				double nt = (double)TP / (double)tq;
				double s = e * kc / (kc + 8.0) * nt / (nt + 0.5);
				if (pass == 0 && s > best) {
					best = s;
					bestR = R;
				}
				if (pass == 0 && enough && s > bestw)
					bestw = s;
				if (pass == 1 && s >= 0.99 * (wide ? bestw : best) && (!b->R || CC >= b->CC)) {
					b->R = R;
					b->WJ = WJ;
					b->A = R + rh;
					b->TP = TP;
					b->PLN = PLN;
					b->BC = BC;
					b->CC = CC;
				}
			}
		}
	}
	return b->R > 0;
}

/* " + v", " - v" or "" */
static const char *plus(int64_t v, char *s, size_t n)
{
	if (v == 0)
		s[0] = 0;
	else
		snprintf(s, n, " %c %lld", v < 0 ? '-' : '+', (long long)(v < 0 ? -v : v));
	return s;
}

/* `for (size_t q = a; q < b; q++) LINE`, split like emit_split_loop for the vectorizer */
static void emit_range(struct rl_cgen *cg, int64_t a, int64_t b, const char *line)
{
	int64_t n = b - a, n4 = vec_part(n);
	if (n <= 0)
		return;
	cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)a, (long long)(a + n4));
	cg_line(cg, "    %s", line);
	if (n > n4) {
		cg_line(cg, "for (size_t q = %lld; q < %lld; q++)", (long long)(a + n4), (long long)b);
		cg_line(cg, "    %s", line);
	}
}

/*
 * One band row for every column phase, phase j at d + j*PLN: the input row
 * xr with its zero padding, or zeros when `zero`.
 */
static void emit_band_row(struct rl_cgen *cg, const struct conv2d *p, const struct conv_band *b,
                          bool zero, const char *T)
{
	char l[400], d[64], o[32], o2[32];
	int64_t lo[CONV_PHASES], hi[CONV_PHASES], off[CONV_PHASES];
	for (int j = 0; j < b->nw; j++) {
		off[j] = b->pw[j] - p->PL; /* column q of the phase holds x[q*SW + off] */
		lo[j] = off[j] >= 0 ? 0 : (-off[j] + p->SW - 1) / p->SW;
		hi[j] = off[j] >= p->W ? 0 : (p->W - off[j] + p->SW - 1) / p->SW;
		lo[j] = lo[j] < b->WJ ? lo[j] : b->WJ;
		hi[j] = hi[j] < b->WJ ? hi[j] : b->WJ;
		if (zero || hi[j] < lo[j])
			lo[j] = hi[j] = b->WJ;
	}
	/*
	 * A stride whose phases are all in use (3x3/2, 7x7/2) splits the row
	 * between them: the columns every phase holds go in one loop writing all
	 * of them, so its loads are a whole interleaved group, which gcc -O2
	 * vectorizes (vpermt2ps on AVX-512); a loop per phase reads every SW-th
	 * float and stays scalar: 15% of the 3x3/2 3->64 stem of SqueezeNet
	 * (perf, one thread) went to those scalar stores.
	 */
	int64_t mlo = 0, mhi = b->WJ;
	bool merged = !zero && p->SW > 1 && b->nw == p->SW;
	for (int j = 0; j < b->nw && merged; j++) {
		mlo = lo[j] > mlo ? lo[j] : mlo;
		mhi = hi[j] < mhi ? hi[j] : mhi;
	}
	merged = merged && mhi - mlo >= 16;
	/* two phases of float (the 3x3/2 and 7x7/2 stems): through an inline helper
	 * whose restrict parameters tell gcc that the band and the input do not
	 * overlap (with the block-scope pointers of the kernel it would need a
	 * run-time alias check, which -O2's cost model refuses) */
	bool split2 = merged && b->nw == 2 && strcmp(T, "float") == 0;
	/* one phase of a stride of 2 (a 1x1/2 projection reads the even columns):
	 * the same helper, the odd columns into a dead row on the stack, as far
	 * as x[2q + 1] stays inside the row; the even ones alone (a load with a
	 * gap) stay scalar at -O2. ResNet-50's 1x1/2 256->512 to 28x28 at two
	 * threads, where every chunk fills the band: 1.50 -> 1.35 ms (minimum of
	 * 7 interleaved rounds; one thread unchanged, 2.49 -> 2.46). Shorter
	 * bands instead, so that fewer chunks share a band, cost one thread 6%. */
	int64_t e1 = 0; /* the helper's end: columns [lo, e1) */
	bool even2 = !zero && b->nw == 1 && p->SW == 2 && strcmp(T, "float") == 0;
	if (even2) {
		e1 = (p->W - off[0]) / 2;
		e1 = e1 < hi[0] ? e1 : hi[0];
		even2 = e1 - lo[0] >= 16;
	}
	if ((split2 || even2) && !strstr(cg->statics.s ? cg->statics.s : "", "rl_conv_split2(")) {
		rl_buf_printf(&cg->statics,
		              "/* d0[q] = x[2q], d1[q] = x[2q + 1]: a row's two stride phases */\n"
		              "static inline void rl_conv_split2(float *restrict d0, float *restrict d1,\n"
		              "                                  const float *restrict x, size_t n)\n"
		              "{\n"
		              "    for (size_t q = 0; q < n; q++) {\n"
		              "        d0[q] = x[2 * q];\n"
		              "        d1[q] = x[2 * q + 1];\n"
		              "    }\n"
		              "}\n\n");
	}
	for (int j = 0; j < b->nw; j++) {
		int64_t base = j * b->PLN;
		if (j)
			snprintf(d, sizeof(d), "d[%lld + q]", (long long)base);
		else
			snprintf(d, sizeof(d), "d[q]");
		/* plain runs as memset/memcpy: gcc -O2 leaves such loops scalar */
		if (lo[j] > 0)
			cg_line(cg, "memset(d%s, 0, %lld * sizeof(%s));", plus(base, o, sizeof(o)),
			        (long long)lo[j], T);
		if (p->SW == 1 && hi[j] > lo[j]) {
			cg_line(cg, "memcpy(d%s, xr%s, %lld * sizeof(%s));", plus(base + lo[j], o, sizeof(o)),
			        plus(lo[j] + off[j], o2, sizeof(o2)), (long long)(hi[j] - lo[j]), T);
		} else if (even2) {
			char o3[40];
			cg_line(cg, "{ /* the even columns, the odd ones into odd (unused) */");
			cg_line(cg, "    float odd[%lld];", (long long)(e1 - lo[0]));
			cg_line(cg, "    rl_conv_split2(d%s, odd, xr%s, %lld);", plus(lo[0], o, sizeof(o)),
			        plus(2 * lo[0] + off[0], o3, sizeof(o3)), (long long)(e1 - lo[0]));
			cg_line(cg, "}");
			snprintf(l, sizeof(l), "%s = xr[q * %lld%s];", d, (long long)p->SW,
			         plus(off[j], o, sizeof(o)));
			emit_range(cg, e1, hi[0], l);
		} else {
			snprintf(l, sizeof(l), "%s = xr[q * %lld%s];", d, (long long)p->SW,
			         plus(off[j], o, sizeof(o)));
			if (merged) { /* the columns only this phase holds */
				emit_range(cg, lo[j], mlo, l);
				emit_range(cg, mhi, hi[j], l);
			} else {
				emit_range(cg, lo[j], hi[j], l);
			}
		}
		if (b->WJ > hi[j])
			cg_line(cg, "memset(d%s, 0, %lld * sizeof(%s));", plus(base + hi[j], o, sizeof(o)),
			        (long long)(b->WJ - hi[j]), T);
	}
	if (split2) {
		int64_t v = vec_part(mhi - mlo);
		cg_line(cg, "/* the columns both phases hold, in one pass (vectorized) */");
		cg_line(cg, "rl_conv_split2(d%s, d%s, xr%s, %lld);", plus(mlo, o, sizeof(o)),
		        plus(b->PLN + mlo, o2, sizeof(o2)), plus(2 * mlo + off[0], l, 40), (long long)v);
		if (mhi - mlo > v)
			cg_line(cg, "rl_conv_split2(d%s, d%s, xr%s, %lld);", plus(mlo + v, o, sizeof(o)),
			        plus(b->PLN + mlo + v, o2, sizeof(o2)), plus(2 * (mlo + v) + off[0], l, 40),
			        (long long)(mhi - mlo - v));
	} else if (merged) {
		size_t n = (size_t)snprintf(l, sizeof(l), "{");
		for (int j = 0; j < b->nw; j++)
			n += (size_t)snprintf(l + n, sizeof(l) - n, " d[q%s] = xr[q * %lld%s];",
			                      plus(j * b->PLN, o, sizeof(o)), (long long)p->SW,
			                      plus(off[j], o2, sizeof(o2)));
		snprintf(l + n, sizeof(l) - n, " }");
		cg_line(cg, "/* the columns every phase holds, all phases in one loop (vectorized) */");
		emit_range(cg, mlo, mhi, l);
	}
}

/* tap[kh*KW + kw]: where tap (kh, kw) reads in a channel's band, from the output position */
static void emit_taps(struct rl_cgen *cg, const struct conv2d *p, const struct conv_band *b)
{
	char l[160];
	cg_line(cg, "/* tap (kh, kw) of output t reads band[c * %lld + tap[kh * %lld + kw] + t] */",
	        (long long)b->BC, (long long)p->KW);
	cg_line(cg, "static const unsigned tap[%lld] = {", (long long)(p->KH * p->KW));
	for (int64_t kh = 0; kh < p->KH; kh++) {
		size_t n = 0;
		for (int64_t kw = 0; kw < p->KW; kw++) {
			int64_t fh = kh * p->DH % p->SH, fw = kw * p->DW % p->SW;
			int64_t plane = conv_phase_index(b->ph, b->nh, fh) * b->nw +
			                conv_phase_index(b->pw, b->nw, fw);
			int64_t off = plane * b->PLN + kh * p->DH / p->SH * b->WJ + kw * p->DW / p->SW;
			if (n > 100) {
				cg_line(cg, "    %s", l);
				n = 0;
			}
			n += (size_t)snprintf(l + n, sizeof(l) - n, "%s%lld,", n ? " " : "",
			                      (long long)off);
		}
		cg_line(cg, "    %s", l);
	}
	cg_line(cg, "};");
}

/* whole input rows without padding or phases, all inside the input: the
 * band of a channel is one run of it */
static bool band_is_run(const struct conv2d *p, const struct conv_band *b)
{
	return b->nh == 1 && b->nw == 1 && p->SH == 1 && p->SW == 1 && p->PT == 0 && p->PL == 0 &&
	       b->WJ == p->W && p->OH - b->R + b->A <= p->H;
}

/*
 * Band rows with pitch columns (WJ > OW: a padded 3x3, a 3x3/2 stem whose
 * phase planes are 112 wide for 111 outputs) go straight to the output too,
 * one micro-kernel call per output row (tp = OW, the last vector masked)
 * instead of one over the band's R x WJ sums and a copy of acc's rows into
 * the output: that copy, write-bound, was 43% of SqueezeNet's 3x3/2 3->64
 * stem (224x224 -> 111x111) on one AVX-512 core. But a row's last tile is
 * a short one (7 vectors: two tiles of 3 and a single, where the band's 21
 * are seven of 3), so this pays only where the copy weighs as much as the
 * sums: at most CONV_ROWS_SUMS multiply-adds per output (the stem's 27:
 * 575-593 -> 443-459 us, one thread, in the model; SqueezeNet's 3x3 16->64
 * on 55x55, 144 per output and 4 vectors a row against the band's 3.6,
 * went 408 -> 515 us), and where the rows' vectors at 16 lanes are at most
 * 1/8 more than the band's (111 of 112: 21 against 21; not 7 of 9).
 */
#define CONV_ROWS_SUMS 32
static bool band_rows_out(const struct conv2d *p, const struct conv_band *b)
{
	int64_t rows = b->R * ((p->OW + 15) / 16), band = (b->R * b->WJ + 15) / 16;
	return b->WJ > p->OW && p->C / p->G * p->KH * p->KW <= CONV_ROWS_SUMS &&
	       8 * rows <= 9 * band;
}

/*
 * Band mode without its copies. Where acc's rows have no pitch columns (a
 * kernel one column wide after the stride phases: WJ = OW), the FMA
 * micro-kernel writes its sums straight into the output rows (row stride OH
 * * OW, band_direct_out), R * OW columns of them (not acc's width TP: the
 * lanes past them in the last vector are masked off, so a 55x55 plane, whose
 * bands are never whole vectors, takes this path as a 56x56 one does),
 * starting from the bias; chunks of input channels after the first add to
 * what is there, where band mode copied the rows back into acc and out
 * again per chunk. Where moreover the band of a channel is one run of the
 * input (band_is_run: stride 1, no padding), it reads the input in place
 * (channel stride H * W, band_direct_in): no band fill either. The epilogue
 * runs on the rows after the last chunk. The sums are the same, in the same
 * order. ResNet-50's 1x1 layers on 56x56 (64->256, 256->64; band mode
 * there) spent a fifth of their time in the copies, its 1x1/2 256->512
 * projection 18% (perf samples, one thread). The portable tiles (no
 * micro-kernel) keep the band and acc.
 */
static bool band_direct_out(const struct conv2d *p, const struct conv_band *b, bool uk)
{
	return uk && (b->WJ == p->OW || band_rows_out(p, b));
}

static bool band_direct_in(const struct conv2d *p, const struct conv_band *b, bool uk)
{
	return band_direct_out(p, b, uk) && b->WJ == p->OW && band_is_run(p, b) && b->A == b->R;
}

/* The input rows of band oh0, channels c0 + [0, CC), into the band. */
static void emit_band_fill(struct rl_cgen *cg, const char *T, const struct conv2d *p,
                           const struct conv_band *b)
{
	char o[32];
	bool run = band_is_run(p, b);
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", b->CC, 0);
	cg_line(cg, "const %s *restrict xc = xg + (c0 + c) * %lld;", T, (long long)(p->H * p->W));
	if (run) {
		cg_line(cg, "/* the chunk's input rows, back to back, into the band */");
		cg_line(cg, "const %s *restrict xr = xc + oh0 * %lld;", T, (long long)p->W);
		cg_line(cg, "%s *restrict d = band + c * %lld;", T, (long long)b->BC);
		cg_line(cg, "memcpy(d, xr, %lld * sizeof(%s));", (long long)(b->A * b->WJ), T);
		line_close(cg); /* c */
		return;
	}
	cg_line(cg, "/* the chunk's input rows, zero-padded and split into phases, into the band */");
	line_open(cg, "for (size_t a = 0; a < %lld; a++) {", b->A, 0);
	for (int i = 0; i < b->nh; i++) {
		int64_t f = b->ph[i];
		/* input row (oh0 + a) * SH + f - PT: outside the input in some band? */
		int64_t rmax = (p->OH - b->R + b->A - 1) * p->SH + f - p->PT;
		bool check = p->PT > f || rmax >= p->H;
		if (b->nh > 1)
			line_open(cg, "{", 0, 0);
		cg_line(cg, "%s *restrict d = band + c * %lld%s + a * %lld;", T, (long long)b->BC,
		        plus(i * b->nw * b->PLN, o, sizeof(o)), (long long)b->WJ);
		if (check) {
			cg_line(cg, "const long long ih = (long long)((oh0 + a) * %lld + %lld) - %lld;",
			        (long long)p->SH, (long long)f, (long long)p->PT);
			line_open(cg, "if (ih < 0 || ih >= %lld) {", p->H, 0);
			emit_band_row(cg, p, b, true, T);
			cg->indent--;
			cg_line(cg, "} else {");
			cg->indent++;
			cg_line(cg, "const %s *restrict xr = xc + (size_t)ih * %lld;", T, (long long)p->W);
			emit_band_row(cg, p, b, false, T);
			line_close(cg);
		} else if (p->SH == 1) {
			cg_line(cg, "const %s *restrict xr = xc + (oh0 + a%s) * %lld;", T,
			        plus(f - p->PT, o, sizeof(o)), (long long)p->W);
			emit_band_row(cg, p, b, false, T);
		} else {
			cg_line(cg, "const %s *restrict xr = xc + ((oh0 + a) * %lld%s) * %lld;", T,
			        (long long)p->SH, plus(f - p->PT, o, sizeof(o)), (long long)p->W);
			emit_band_row(cg, p, b, false, T);
		}
		if (b->nh > 1)
			line_close(cg);
	}
	line_close(cg); /* a */
	line_close(cg); /* c */
}

/*
 * Copy between acc and the block's output rows (to_y: acc to Y0), dropping
 * acc's pitch columns. With epi_if, the fused epilogue then runs on the
 * rows under that condition ("" for always).
 */
/*
 * The fused epilogue on the run of n outputs from flat index `base`: a part
 * whose length is a multiple of 16 in the kernel, and the rest in an inline
 * helper `<kname>_epi_tail` beside it (not a kernel: inlined into its one
 * caller, each ISA clone included). gcc -O2 vectorizes the epilogue's
 * loop only when its trip count needs no scalar epilogue of its own, and a
 * second in-line copy would declare the epilogue's locals twice in one
 * kernel.
 */
static void conv_epilogue(struct rl_cgen *cg, const char *base, int64_t n, int64_t span)
{
	const struct rl_cgen_group *grp = cg->epi;
	char yr[300];
	int64_t m = n >= 32 && n % 16 ? n / 16 * 16 : n;
	snprintf(yr, sizeof(yr), "Y0 + %s", base);
	cg_epilogue(cg, yr, base, m, span);
	if (!grp || m == n)
		return;
	/* the helper takes the kernel's parameters and the tail's flat index */
	struct rl_buf saved = cg->body, fn = {0};
	int ind = cg->indent;
	cg->body = (struct rl_buf){0};
	cg->indent = 0;
	cg_epilogue(cg, "Y0 + base", "base", n - m, span);
	struct rl_buf tail = cg->body;
	cg->body = saved;
	cg->indent = ind;
	rl_buf_printf(&fn, "/* %s: its fused epilogue on the last %lld outputs of a run */\n",
	              cg->kname, (long long)(n - m));
	/* always_inline: GCC inlines a plain function into a target clone of
	 * another -march only when told to; left out of line (as a constprop
	 * clone for the baseline ISA) the tail took 9% of the 3x3/2 3->64 stem
	 * (perf, one thread) for 13 of each channel's 333 outputs */
	rl_buf_printf(&fn, "#ifdef __GNUC__\n__attribute__((always_inline))\n#endif\n");
	rl_buf_printf(&fn, "static inline void %s_epi_tail(", cg->kname);
	for (int q = 0; q < grp->nin + grp->nout; q++) {
		bool out = q >= grp->nin;
		uint32_t v = out ? grp->out[q - grp->nin] : grp->in[q];
		enum rl_dtype dt = v == RL_NONE ? RL_DT_FLOAT : cg->g->values[v].dtype;
		rl_buf_printf(&fn, "%s%s *restrict %c%d, ", out ? "" : "const ", cg_ctype(dt),
		              out ? 'Y' : 'X', out ? q - grp->nin : q);
	}
	rl_buf_printf(&fn, "size_t base)\n{\n");
	for (int q = 0; q < grp->nin + grp->nout; q++)
		rl_buf_printf(&fn, "    (void)%c%d;\n", q >= grp->nin ? 'Y' : 'X',
		              q >= grp->nin ? q - grp->nin : q);
	rl_buf_printf(&fn, "%s}\n\n", tail.s ? tail.s : "");
	/* once per kernel: the micro-kernel's and the portable tiles' paths
	 * both run the epilogue on the same runs */
	char head[200];
	snprintf(head, sizeof(head), "static inline void %s_epi_tail(", cg->kname);
	if (!cg->statics.s || !strstr(cg->statics.s, head))
		rl_buf_printf(&cg->statics, "%s", fn.s);
	rl_buf_free(&fn);
	rl_buf_free(&tail);
	char call[1024];
	size_t k = (size_t)snprintf(call, sizeof(call), "%s_epi_tail(", cg->kname);
	for (int q = 0; q < grp->nin + grp->nout && k < sizeof(call) - 16; q++)
		k += (size_t)snprintf(call + k, sizeof(call) - k, "%c%d, ", q >= grp->nin ? 'Y' : 'X',
		                      q >= grp->nin ? q - grp->nin : q);
	snprintf(call + k, sizeof(call) - k, "%s + %lld);", base, (long long)m);
	cg_line(cg, "%s", call);
}

static void emit_acc_epi(struct rl_cgen *cg, const struct conv2d *p, const struct conv_band *b,
                         const char *epi_if);

static void emit_acc_rows(struct rl_cgen *cg, const char *T, const struct conv2d *p,
                          const struct conv_band *b, bool to_y, const char *epi_if,
                          const char *row)
{
	char ai[80];
	bool flat = b->WJ == p->OW; /* no pitch columns: the rows are one run */
	int64_t run = flat ? b->R * p->OW : p->OW;
	if (flat) {
		line_open(cg, "{", 0, 0);
		snprintf(ai, sizeof(ai), "acc[%s]", row);
	} else {
		line_open(cg, "for (size_t i = 0; i < %lld; i++) {", b->R, 0);
		snprintf(ai, sizeof(ai), "acc[%s] + i * %lld", row, (long long)b->WJ);
	}
	/* whole vectors, then the rest: gcc -O2 leaves a plain copy loop to
	 * several output rows scalar, and inlines a memcpy of a few hundred
	 * bytes as `rep movsq`, a third of the 3x3/2 3->64 stem's time outside
	 * the micro-kernel on Zen 3 (perf, one thread) */
	cg_line(cg, "for (size_t r = 0; r < %d; r++) {", b->mr);
	cg_line(cg, "    %s *y = Y0 + ((n * %lld + mo + r) * %lld + oh0%s) * %lld;", T, (long long)p->M,
	        (long long)p->OH, flat ? "" : " + i", (long long)p->OW);
	cg_line(cg, "    %s *a = %s;", T, ai);
	cg_line(cg, "    size_t q = 0;");
	if (to_y) {
		cg_line(cg, "    for (; q + VL <= %lld; q += VL)", (long long)run);
		cg_line(cg, "        *(vecu *)(y + q) = *(const vecu *)(a + q);");
		cg_line(cg, "    for (; q < %lld; q++)", (long long)run);
		cg_line(cg, "        y[q] = a[q];");
	} else {
		cg_line(cg, "    for (; q + VL <= %lld; q += VL)", (long long)run);
		cg_line(cg, "        *(vecu *)(a + q) = *(const vecu *)(y + q);");
		cg_line(cg, "    for (; q < %lld; q++)", (long long)run);
		cg_line(cg, "        a[q] = y[q];");
	}
	cg_line(cg, "}");
	line_close(cg);
	emit_acc_epi(cg, p, b, epi_if);
}

/* The fused epilogue on the block's finished output rows (under epi_if, "" for always). */
static void emit_acc_epi(struct rl_cgen *cg, const struct conv2d *p, const struct conv_band *b,
                         const char *epi_if)
{
	char base[200];
	if (epi_if && cg->epi) {
		/* the rows are final: the fused epilogue runs on them now */
		if (*epi_if) {
			cg_line(cg, "if (%s) {", epi_if);
			cg->indent++;
		}
		/* a channel's R output rows are one run of its plane: one long
		 * loop per channel, which -O2 vectorizes more readily than R short ones */
		line_open(cg, "for (size_t er = 0; er < %lld; er++) {", b->mr, 0);
		snprintf(base, sizeof(base), "((n * %lld + mo + er) * %lld + oh0) * %lld",
		         (long long)p->M, (long long)p->OH, (long long)p->OW);
		conv_epilogue(cg, base, b->R * p->OW, p->OH * p->OW);
		line_close(cg);
		if (*epi_if)
			line_close(cg);
	}
}

/* One loop over acc's columns (opened by `head`) in tiles of MR channels x nv vectors. */
static void emit_tile_loop(struct rl_cgen *cg, const char *T, const struct conv2d *p,
                           const struct conv_band *b, int nv, const char *head)
{
	int64_t KK = p->KH * p->KW;
	char l[800], vo[CONV_NV_MAX][32];
	size_t n;
	for (int v = 0; v < nv; v++) {
		if (v == 0)
			vo[v][0] = 0;
		else if (v == 1)
			snprintf(vo[v], sizeof(vo[v]), " + VL");
		else
			snprintf(vo[v], sizeof(vo[v]), " + %d * VL", v);
	}
	cg_line(cg, "%s", head);
	cg->indent++;
	for (int r = 0; r < b->mr; r++) {
		n = (size_t)snprintf(l, sizeof(l), "vec");
		for (int v = 0; v < nv; v++)
			n += (size_t)snprintf(l + n, sizeof(l) - n, "%s s%d%d = *(const vecu *)(acc[%d] + t%s)",
			                      v ? "," : "", r, v, r, vo[v]);
		cg_line(cg, "%s;", l);
	}
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", b->CC, 0);
	if (KK > 1) {
		line_open(cg, "for (size_t k = 0; k < %lld; k++) {", KK, 0);
		cg_line(cg, "const %s *xs = band + c * %lld + tap[k] + t;", T, (long long)b->BC);
	} else {
		cg_line(cg, "const %s *xs = band + c * %lld + t;", T, (long long)b->BC);
	}
	n = (size_t)snprintf(l, sizeof(l), "const vec");
	for (int v = 0; v < nv; v++)
		n += (size_t)snprintf(l + n, sizeof(l) - n, "%s x%d = *(const vecu *)(xs%s)",
		                      v ? "," : "", v, vo[v]);
	cg_line(cg, "%s;", l);
	for (int r = 0; r < b->mr; r++) {
		if (KK > 1)
			n = (size_t)snprintf(l, sizeof(l), "const %s a%d = w%d[c * %lld + k];", T, r, r,
			                     (long long)KK);
		else
			n = (size_t)snprintf(l, sizeof(l), "const %s a%d = w%d[c];", T, r, r);
		for (int v = 0; v < nv; v++)
			n += (size_t)snprintf(l + n, sizeof(l) - n, " s%d%d += a%d * x%d;", r, v, r, v);
		cg_line(cg, "%s", l);
	}
	if (KK > 1)
		line_close(cg); /* k */
	line_close(cg); /* c */
	for (int r = 0; r < b->mr; r++) {
		n = 0;
		l[0] = 0;
		for (int v = 0; v < nv; v++)
			n += (size_t)snprintf(l + n, sizeof(l) - n, "%s*(vecu *)(acc[%d] + t%s) = s%d%d;",
			                      v ? " " : "", r, vo[v], r, v);
		cg_line(cg, "%s", l);
	}
	line_close(cg);
}

/* The steps of a fused epilogue the register tiles apply (conv_epi_regs). */
struct conv_epi_regs {
	int xsc, xsh, xres; /* the kernel's X index of S, T, the residual; -1: none */
	bool relu;
};

/*
 * The call of the micro-kernel for the blocks from channel `mo` (a variable),
 * weights `w`, `nb` blocks: the band (or the input in place) and acc (or the
 * output rows).
 */
static void conv_uk_call(struct rl_cgen *cg, const struct conv2d *p, const struct conv_band *b,
                         bool chunked, bool din, bool dout, const struct conv_epi_regs *e,
                         const char *mo, const char *w, const char *nb)
{
	int64_t KK = p->KH * p->KW, CG = p->C / p->G;
	bool relu = e->relu;
	int xres = e->xres;
	char xin[96], yout[160], bias[40], last[48], res[240], scl[2][80];
	if (din && chunked)
		snprintf(xin, sizeof(xin), "xg + c0 * %lld + oh0 * %lld, %lld",
		         (long long)(p->H * p->W), (long long)p->W, (long long)(p->H * p->W));
	else if (din)
		snprintf(xin, sizeof(xin), "xg + oh0 * %lld, %lld", (long long)p->W,
		         (long long)(p->H * p->W));
	else
		snprintf(xin, sizeof(xin), "band, %lld", (long long)b->BC);
	/* per output row (band_rows_out): row i of the band and of the output */
	bool rows = dout && b->WJ != p->OW;
	const char *oi = rows ? " + i" : "";
	if (rows)
		snprintf(xin, sizeof(xin), "band + i * %lld, %lld", (long long)b->WJ, (long long)b->BC);
	if (dout)
		snprintf(yout, sizeof(yout), "Y0 + ((n * %lld + %s) * %lld + oh0%s) * %lld, %lld",
		         (long long)p->M, mo, (long long)p->OH, oi, (long long)p->OW,
		         (long long)(p->OH * p->OW));
	else
		snprintf(yout, sizeof(yout), "acc[0], %lld", (long long)b->TP);
	snprintf(bias, sizeof(bias), "X2 + %s", mo);
	/* a fused Relu on the sums of the last chunk */
	snprintf(last, sizeof(last), "c0 == %lld", (long long)(CG - b->CC));
	/* a fused residual Add (dout only: the residual rows at the output's offsets) */
	if (xres < 0)
		snprintf(res, sizeof(res), "NULL");
	else
		snprintf(res, sizeof(res), "%s%sX%d + ((n * %lld + %s) * %lld + oh0%s) * %lld%s",
		         chunked ? last : "", chunked ? " ? " : "", xres, (long long)p->M, mo,
		         (long long)p->OH, oi, (long long)p->OW, chunked ? " : NULL" : "");
	/* a fused per-channel Mul and Add, on the last chunk */
	for (int q = 0; q < 2; q++) {
		int x = q ? e->xsh : e->xsc;
		if (x < 0)
			snprintf(scl[q], sizeof(scl[q]), "NULL");
		else
			snprintf(scl[q], sizeof(scl[q]), "%s%sX%d + %s%s", chunked ? last : "",
			         chunked ? " ? " : "", x, mo, chunked ? " : NULL" : "");
	}
	/* the input's prefetch (conv_uk_step, bit 0): read in place, larger
	 * than L2 is likely to hold; the output's (conv_uk_tiles, bit 1):
	 * written in place and larger than L2 */
	int pf = (din && p->C * p->H * p->W * 4 > CONV_UK_PF_BYTES) |
	         (dout && p->M * p->OH * p->OW * 4 > CONV_UK_PF_BYTES) << 1;
	if (rows)
		cg_line(cg, "for (size_t i = 0; i < %lld; i++)", (long long)b->R);
	cg_line(cg, "%srl_conv4%s(%s, tap, %lld, %lld, %s, %lld, %s, %lld, %s, %s, %s, %s, %s, %s, %d, %s);",
	        rows ? "    " : "", KK > 1 && b->CC * KK > CONV_UK_SUB_STEPS ? "_sub" : "", xin,
	        (long long)KK, (long long)b->CC, w, (long long)(CG * KK), yout,
	        (long long)(rows ? p->OW : dout ? b->R * p->OW : b->TP),
	        p->bias ? bias : "NULL", chunked ? "c0 == 0" : "1", !relu ? "0" : chunked ? last : "1",
	        res, scl[0], scl[1], pf, nb);
}

/*
 * The portable register tiles of one block (the micro-kernels, when there
 * are, run per group of blocks: emit_conv_band), acc += W[mo, mo + MR) x
 * band over the chunk: tiles of MR x NV vectors, then single vectors for the columns
 * left (acc's width is a multiple of the widest vector, not of NV of them).
 */
static void emit_band_tiles(struct rl_cgen *cg, const char *T, int64_t es,
                            const struct conv2d *p, const struct conv_band *b,
                            const char *const *acc_init, bool chunked, bool dout)
{
	int64_t KK = p->KH * p->KW, CG = p->C / p->G;
	char head[160];
	for (int r = 0; r < b->mr; r++)
		cg_line(cg, "const %s *restrict w%d = X1 + (mo + %d) * %lld + c0 * %lld;", T, r, r,
		        (long long)(CG * KK), (long long)KK);
	/* the portable tiles start from acc: the bias first, unless earlier chunks are in it */
	if (dout && chunked) {
		line_open(cg, "if (c0 != 0) {", 0, 0);
		emit_acc_rows(cg, T, p, b, false, NULL, "r");
		line_close(cg);
	}
	if (chunked)
		line_open(cg, "if (c0 == 0) {", 0, 0);
	emit_split_loop(cg, "t", b->TP, acc_init, b->mr);
	if (chunked)
		line_close(cg);
	cg_line(cg, "/* tiles of %d output channels x %d vectors, the sums in registers */", b->mr,
	        b->nv);
	cg_line(cg, "size_t t = 0;");
	snprintf(head, sizeof(head), "for (; t + %d * VL <= %lld; t += %d * VL) {", b->nv,
	         (long long)b->TP, b->nv);
	emit_tile_loop(cg, T, p, b, b->nv, head);
	if (b->TP % (b->nv * (CONV_VEC_MAX / es)) != 0) {
		snprintf(head, sizeof(head), "for (; t < %lld; t += VL) {", (long long)b->TP);
		emit_tile_loop(cg, T, p, b, 1, head);
	}
	if (dout) /* the portable tiles' sums go to the output rows here */
		emit_acc_rows(cg, T, p, b, true, NULL, "r");
}

/*
 * Threads: the iterations are (image, group, band, part), part innermost,
 * where a part is a share of the group's blocks of MR output channels; the
 * parts give maps with few bands enough tasks. Every iteration writes whole
 * output rows of its own channels and sums every chunk itself in the same
 * order, so results do not depend on the thread count. The parts of one
 * band that a range holds share each fill of the band.
 */
/* Chunks the threads may cut the kernel into (1: the caller alone): the
 * split rule's (rl_split_conv_chunks), carried in p->chunks. */
static int64_t conv_par_want(const struct conv2d *p)
{
	return p->chunks > 1 ? p->chunks : 1;
}

/* The pool's grain for a kernel cut into at most `want` chunks: negative,
 * rl_parallel_for's "at most -grain chunks", so the chunks are the ones the
 * cost model priced, whatever par_n's divisors (a grain of ceil(par_n /
 * want) iterations made 4 chunks of 9 iterations where 8 were wanted). */
static int64_t conv_par_grain(int64_t par_n, int64_t want)
{
	(void)par_n;
	return -want;
}

/*
 * The share of a kernel's work the busier of two threads does (0.5: even
 * halves) when its n iterations cost the same, cut into at most `want`
 * chunks: rl_split_share (ir/cost.c), which replays rl_parallel_for
 * (emit_rt.c). The split choices below use it to pick, among counts of
 * iterations that cost the same to run, one whose chunks two threads share
 * evenly (two threads: the cores of the machines this is measured on; more
 * threads get more chunks, 4 per thread, and are not modelled).
 */
static double conv_span2(int64_t n, int64_t want)
{
	int used;
	return n < 1 ? 1.0 : rl_split_share((double)n, (double)want, 2, &used);
}

static double conv_macs(const struct conv2d *p)
{
	return (double)p->N * (double)p->M * (double)p->OH * (double)p->OW *
	       (double)(p->C / p->G) * (double)(p->KH * p->KW);
}

/* The kernel's comment on its split: what the pool may run in parallel. */
static void conv_par_note(struct rl_cgen *cg, const struct conv2d *p)
{
	int64_t want = conv_par_want(p);
	cg_line(cg, "/* threads: at most %lld chunk%s of %lld iterations (%.0f multiply-adds in all, at least %.0f a chunk) */",
	        (long long)want, want == 1 ? "" : "s", (long long)cg->par_n, conv_macs(p),
	        RL_SPLIT_CONV_MACS);
}

/*
 * The split dimension: (image, group, band) first, since the bands the plan
 * chose cost nothing more to run apart; shares of the output channels
 * (parts) only when those are fewer than the chunks the work pays for, as
 * a part that a range starts in the middle of a band fills the band again.
 */
static int64_t conv_band_parts(const struct conv2d *p, const struct conv_band *b)
{
	int64_t tasks = p->N * p->G * (p->OH / b->R), nblk = p->M / p->G / b->mr;
	int64_t want = conv_par_want(p), mp = conv_parts_min(p, b->mr, b->R);
	/* more parts (equal ones: mp divides the blocks) where they even out
	 * two threads' shares: 11 bands are 11 iterations in 8 chunks
	 * (1,1,2,1 | 1,2,1,2: 5 against 6); 22 are 11 and 11 */
	double span = conv_span2(tasks * mp, want);
	int64_t best = mp;
	for (int64_t q = mp + 1; q <= nblk && q <= 8 * mp; q++) {
		double s = conv_span2(tasks * q, want);
		if (nblk % q == 0 && s < span - 0.01) {
			span = s;
			best = q;
		}
	}
	return best;
}

/*
 * The fused epilogue the register tiles apply to the final sums before they
 * store them, where it was one more pass over the output rows after them (a
 * load and a store per output through the generic vectors). It is a chain
 * from the Conv's output, each step optional, in this order:
 *
 *   Mul by a per-channel tensor S, Add of a per-channel tensor T (a
 *   BatchNormalization that could not go into the weights: fold.c's
 *   bn_affine, 37 of light_resnet50's 53 BNs, whose weights are made by
 *   ConstantOfShape at load time), a residual Add (or Sum) of a tensor of
 *   the output's shape (ResNet's last 1x1 convolution of every block), Relu
 *   (most layers of ResNet and SqueezeNet).
 *
 * "Per-channel": M elements whose shape, right-aligned with the output's,
 * varies along the channel axis only ([M,1,1], [1,M,1,1]); a graph input
 * or a constant, read as X<i> with channel m at element m. The tiles
 * compute (s * S[m]) + T[m], + res, max(0, .) with one rounding per
 * operation, as the epilogue's ev1 = ea * S, ev2 = ev1 + T (never an FMA),
 * so the values are the same bits; max(0, s) keeps NaN and -0, as the
 * epilogue's s < 0 ? 0 : s. A residual needs band mode's sums straight in
 * the output (dout: the residual rows at the output's offsets); the
 * per-channel steps and the Relu run in every micro-kernel and in
 * channels-on-vector mode's portable tile. Measured (one thread, Zen 3,
 * bench_conv_layers.py --affine --relu): 1x1 1024->256 on 14x14 with the
 * Mul, Add and Relu as the epilogue pass 1.31 ms, without that pass 1.14.
 */

/* Whether value v is a float tensor of M elements along the output's channel axis. */
static bool conv_per_channel(const struct rl_cgen *cg, uint32_t v, const struct rl_value *vy)
{
	const struct rl_value *vv = &cg->g->values[v];
	int64_t M = vy->shape.d[1].v;
	int off = vy->shape.rank - vv->shape.rank; /* vv's axis i is the output's axis i + off */
	if (vv->dtype != RL_DT_FLOAT || !rl_shape_is_static(&vv->shape) || off < 0 || off > 1 ||
	    rl_shape_numel(&vv->shape) != M)
		return false;
	for (int i = 0; i < vv->shape.rank; i++)
		if (vv->shape.d[i].v != (i + off == 1 ? M : 1))
			return false;
	return true;
}

/* The group's X index of value v (an input past the anchor's), or -1. */
static int conv_epi_x(const struct rl_cgen *cg, uint32_t v)
{
	const struct rl_cgen_group *grp = cg->epi;
	for (int q = cg->g->nodes[grp->anchor].nin; q < grp->nin; q++)
		if (grp->in[q] == v)
			return q;
	return -1;
}

/* Whether the whole fused epilogue is such a chain; *e: its steps. */
static bool conv_epi_regs(const struct rl_cgen *cg, struct conv_epi_regs *e)
{
	const struct rl_cgen_group *grp = cg->epi;
	e->xsc = e->xsh = e->xres = -1;
	e->relu = false;
	if (!grp || grp->nnodes < 2 || grp->nnodes > 5 || grp->nout != 1 ||
	    grp->nodes[0] != grp->anchor)
		return false;
	uint32_t y = cg->g->nodes[grp->anchor].out[0], cur = y;
	const struct rl_value *vy = &cg->g->values[y];
	if (vy->dtype != RL_DT_FLOAT || vy->shape.rank < 3 || !rl_shape_is_static(&vy->shape))
		return false;
	int step = 0; /* the next step that may come: 0 Mul, 1 Add T, 2 residual, 3 Relu */
	for (int i = 1; i < grp->nnodes; i++) {
		const struct rl_node *n = &cg->g->nodes[grp->nodes[i]];
		if (n->nout != 1 || cg->g->values[n->out[0]].dtype != RL_DT_FLOAT)
			return false;
		if (n->op == RL_OP_Relu) {
			if (step > 3 || n->nin != 1 || n->in[0] != cur)
				return false;
			e->relu = true;
			step = 4;
			cur = n->out[0];
			continue;
		}
		bool mul = n->op == RL_OP_Mul;
		if ((!mul && n->op != RL_OP_Add && n->op != RL_OP_Sum) || n->nin != 2)
			return false;
		uint32_t o = n->in[0] == cur ? n->in[1] : n->in[1] == cur ? n->in[0] : RL_NONE;
		if (o == RL_NONE || o == cur || o == y)
			return false;
		int xo = conv_epi_x(cg, o);
		if (xo < 0)
			return false;
		const struct rl_value *vo = &cg->g->values[o];
		bool same = vo->dtype == RL_DT_FLOAT && vo->shape.rank == vy->shape.rank &&
		            rl_shape_is_static(&vo->shape);
		for (int d = 0; same && d < vy->shape.rank; d++)
			same = vo->shape.d[d].v == vy->shape.d[d].v;
		if (mul && step == 0 && conv_per_channel(cg, o, vy)) {
			e->xsc = xo;
			step = 1;
		} else if (!mul && n->op == RL_OP_Add && step <= 1 && conv_per_channel(cg, o, vy)) {
			e->xsh = xo;
			step = 2;
		} else if (!mul && step <= 2 && same) {
			e->xres = xo;
			step = 3;
		} else {
			return false;
		}
		cur = n->out[0];
	}
	return grp->out[0] == cur;
}

static void emit_conv_band(struct rl_cgen *cg, const char *T, int64_t es, const struct conv2d *p,
                           const struct conv_band *b, bool uk)
{
	int64_t CG = p->C / p->G, MG = p->M / p->G, KK = p->KH * p->KW;
	int64_t NB = p->OH / b->R, MP = conv_band_parts(p, b), nblk = MG / b->mr;
	bool chunked = b->CC < CG, dout = band_direct_out(p, b, uk), din = band_direct_in(p, b, uk);
	/* the whole epilogue in the micro-kernel's registers (a residual only
	 * where the sums go straight to the output), or none of it there */
	struct conv_epi_regs e;
	bool inreg = uk && conv_epi_regs(cg, &e) && (e.xres < 0 || dout);
	if (!inreg)
		e = (struct conv_epi_regs){-1, -1, -1, false};
	int64_t band_bytes = (b->CC * b->BC * es + 63) / 64 * 64;
	char lines[4][120], cond[80];
	const char *body[4];

	conv_need_rt(cg);
	/* blocks per micro-kernel call: CONV_GROUP_BYTES of output rows (acc
	 * holds them all where they do not go straight to the output) */
	int64_t gb = CONV_GROUP_BYTES / (b->mr * b->TP * es);
	gb = !uk || gb < 1 ? 1 : gb > nblk ? nblk : gb;
	rl_buf_printf(&cg->init, "    if (rl_conv_scratch_reserve(%lldu) != 0) /* %s */\n        return -1;\n",
	              (long long)(band_bytes + (dout ? 1 : gb) * b->mr * b->TP * es), cg->kname);
	cg->par_n = p->N * p->G * NB * MP;
	cg->par_grain = conv_par_grain(cg->par_n, conv_par_want(p));
	conv_par_note(cg, p);
	/* compiled per ISA (RL_TARGETS): the band fill, acc copies and a fused
	 * epilogue are simple loops that plain -O2 vectorizes with the widest
	 * registers in the clone for the running CPU */
	cg->simd = 1;

	cg_vec_types(cg, T, es);
	if (KK > 1) {
		emit_taps(cg, p, b);
	} else if (uk) {
		/* only the micro-kernel reads taps when there is one */
		int ind = cg->indent;
		cg->indent = -1;
		cg_line(cg, "#ifdef RL_CONV_ISA");
		cg->indent = ind;
		emit_taps(cg, p, b);
		cg->indent = -1;
		cg_line(cg, "#endif");
		cg->indent = ind;
	}
	cg_line(cg, "/* this range's scratch slot: the band, %lld channels x %d phase planes of %lld rows x %lld (+ %lld), then acc, the block's %lld band rows at pitch %lld */",
	        (long long)b->CC, b->nh * b->nw, (long long)b->A, (long long)b->WJ,
	        (long long)(b->PLN - b->A * b->WJ), (long long)b->R, (long long)b->WJ);
	cg_line(cg, "const int slot = rl_conv_slot_own();");
	cg_line(cg, "unsigned char *sc = rl_conv_scratch + (size_t)slot * rl_conv_slot;");
	cg_line(cg, "%s *restrict band = (%s *)sc;", T, T);
	cg_line(cg, "%s (*restrict acc)[%lld] = (%s (*)[%lld])(sc + %lld);", T, (long long)b->TP, T,
	        (long long)b->TP, (long long)band_bytes);
	cg_line(cg, "/* the last tiles read past the planes' rows: zeros there */");
	cg_line(cg, "for (size_t pl = 0; pl < %lld; pl++)", (long long)(b->CC * b->nh * b->nw));
	cg_line(cg, "    for (size_t q = %lld; q < %lld; q++)", (long long)(b->A * b->WJ),
	        (long long)b->PLN);
	cg_line(cg, "        band[pl * %lld + q] = %s;", (long long)b->PLN, cg_zero(T));
	/* the range's iterations of one (image, group, band) go together: the
	 * band is filled once per chunk for all the parts the range holds */
	line_open(cg, "for (int64_t it = lo; it < hi;) {", 0, 0);
	cg_line(cg, "const int64_t key = it / %lld; /* (image, group, band) */", (long long)MP);
	cg_line(cg, "const int64_t end = (key + 1) * %lld < hi ? (key + 1) * %lld : hi;", (long long)MP,
	        (long long)MP);
	if (p->G * NB > 1)
		cg_line(cg, "const size_t n = (size_t)(key / %lld);", (long long)(p->G * NB));
	else
		cg_line(cg, "const size_t n = (size_t)key;");
	if (p->G > 1)
		cg_line(cg, "const size_t g = (size_t)(key / %lld %% %lld);", (long long)NB,
		        (long long)p->G);
	else
		cg_line(cg, "const size_t g = 0;");
	if (NB > 1)
		cg_line(cg, "const size_t oh0 = (size_t)(key %% %lld) * %lld;", (long long)NB,
		        (long long)b->R);
	else
		cg_line(cg, "const size_t oh0 = 0;");
	if (MP > 1) {
		cg_line(cg, "/* parts [it, end) of the band: part j holds blocks of %d channels [%lld * j / %lld, %lld * (j + 1) / %lld) */",
		        b->mr, (long long)nblk, (long long)MP, (long long)nblk, (long long)MP);
		cg_line(cg, "const size_t mlo = g * %lld + (size_t)(%lld * (it - key * %lld) / %lld) * %d;",
		        (long long)MG, (long long)nblk, (long long)MP, (long long)MP, b->mr);
		cg_line(cg, "const size_t mhi = g * %lld + (size_t)(%lld * (end - key * %lld) / %lld) * %d;",
		        (long long)MG, (long long)nblk, (long long)MP, (long long)MP, b->mr);
	} else {
		cg_line(cg, "const size_t mlo = g * %lld, mhi = mlo + %lld;", (long long)MG,
		        (long long)MG);
	}
	cg_line(cg, "const %s *restrict xg = X0 + (n * %lld + g * %lld) * %lld;", T, (long long)p->C,
	        (long long)CG, (long long)(p->H * p->W));
	cg_line(cg, "it = end;");
	if (chunked) {
		line_open(cg, "for (size_t c0 = 0; c0 < %lld; c0 += %lld) {", CG, b->CC);
	} else {
		line_open(cg, "{", 0, 0);
		cg_line(cg, "const size_t c0 = 0;");
	}
	if (din) {
		/* the micro-kernel reads the input in place (band_direct_in) */
		int ind = cg->indent;
		cg->indent = -1;
		cg_line(cg, "#ifdef RL_CONV_ISA");
		cg->indent = ind;
		cg_line(cg, "if (!rl_conv4)");
		cg->indent = -1;
		cg_line(cg, "#endif");
		cg->indent = ind;
		line_open(cg, "{", 0, 0);
		emit_band_fill(cg, T, p, b);
		line_close(cg);
	} else {
		emit_band_fill(cg, T, p, b);
	}
	snprintf(cond, sizeof(cond), "c0 == %lld", (long long)(CG - b->CC));
	if (uk) {
		/* the micro-kernel takes a group of blocks at once (the AVX2 one
		 * walks its tiles' columns outer, the blocks inner); the group's
		 * output rows (or acc, one block's rows per block) stay in L2 for
		 * the copies and the epilogue after it */
		char w[120];
		int ind = uk_open(cg);
		line_open(cg, "for (size_t mg = mlo; mg < mhi; mg += %lld) {", gb * b->mr, 0);
		cg_line(cg, "const size_t me = mg + %lld < mhi ? mg + %lld : mhi;", (long long)(gb * b->mr),
		        (long long)(gb * b->mr));
		if (chunked && !dout) {
			line_open(cg, "if (c0 != 0) {", 0, 0);
			line_open(cg, "for (size_t mo = mg; mo < me; mo += %d) {", b->mr, 0);
			emit_acc_rows(cg, T, p, b, false, NULL, "mo - mg + r");
			line_close(cg);
			line_close(cg);
		}
		snprintf(w, sizeof(w), "X1 + mg * %lld + c0 * %lld", (long long)(CG * KK), (long long)KK);
		conv_uk_call(cg, p, b, chunked, din, dout, &e, "mg", w, "(int64_t)(me - mg) / 4");
		/* the epilogue ran in the micro-kernel (inreg): none after it */
		if ((cg->epi && !inreg) || !dout) {
			line_open(cg, "for (size_t mo = mg; mo < me; mo += %d) {", b->mr, 0);
			if (dout)
				emit_acc_epi(cg, p, b, chunked ? cond : "");
			else
				emit_acc_rows(cg, T, p, b, true, inreg ? NULL : chunked ? cond : "",
				              "mo - mg + r");
			line_close(cg);
		}
		line_close(cg); /* mg */
		uk_else(cg, ind);
	}
	cg_line(cg, "for (size_t mo = mlo; mo < mhi; mo += %d) {", b->mr);
	cg->indent++;
	/* acc starts from the bias, or from the partial sums of the earlier chunks */
	if (chunked && !dout) {
		line_open(cg, "if (c0 != 0) {", 0, 0);
		emit_acc_rows(cg, T, p, b, false, NULL, "r");
		line_close(cg);
	}
	for (int r = 0; r < b->mr; r++) {
		if (p->bias)
			snprintf(lines[r], sizeof(lines[r]), "acc[%d][t] = X2[mo + %d];", r, r);
		else
			snprintf(lines[r], sizeof(lines[r]), "acc[%d][t] = 0;", r);
		body[r] = lines[r];
	}
	emit_band_tiles(cg, T, es, p, b, body, chunked, dout);
	if (dout)
		emit_acc_epi(cg, p, b, chunked ? cond : "");
	else
		emit_acc_rows(cg, T, p, b, true, chunked ? cond : "", "r");
	line_close(cg); /* mo */
	if (uk)
		line_close(cg);
	line_close(cg); /* c0 */
	line_close(cg); /* it */
}

/*
 * Channels-on-vector mode (node->tile.conv == RL_CONV_CHANVEC, chosen by the
 * tile pass for small output planes): the output channels are on the vector
 * lanes and the output pixels in registers, so a 7x7 or 14x14 map wastes no
 * lanes on padding columns the way band mode does (there a register tile
 * covers 16 pixels of a padded row: 9 columns of which 7 are used on a
 * padded 7x7 map, and the last vector of each band half empty).
 *
 * The weights are a constant, packed once in NAME_init into <kname>_wp:
 * blocks of cb output channels, each [c][tap][cb lanes] (the lanes past M
 * zero), exactly the order the micro-kernel reads them in; cb is 32, or 16
 * where 32 would leave an eighth of the lanes or more empty (cv_cb). A
 * task is (image, row part, channel block), the block innermost: per task,
 * for each chunk of CC input channels (its weights, CC x taps x cb floats,
 * stay in L1), every output row of the part is cut into pixel tiles of at
 * most CONV_CV_NT pixels, and the micro-kernel sums, for each tile pixel j
 * and lane l, w[c][k][l] * x[c][tap[k] + j*SW] over the chunk's channels
 * and taps into `ob`, the part's [pixel][cb] sums in the scratch slot (the
 * first chunk starts from the bias). Then ob is transposed into the block's
 * output planes (NCHW) and a fused epilogue runs on each channel's rows.
 * Weights the run computes (a graph input; a large ConstantOfShape is
 * computed by NAME_init, before the packing) cannot be packed at init:
 * each task packs its block into the scratch slot instead (a blocked
 * transpose, one pass over the block's weights), which pays off only on
 * planes of CONV_CV_RUN_PIX pixels or more (3x3 256->256 on 14x14: 0.95 of
 * band mode's time; 1x1 1024->256 on 14x14: 0.99).
 * Padding: with pads (or taps past the input), the rows a row part reads
 * are copied zero-padded into the scratch slot once per (image, row part)
 * the range holds; without, the kernel reads the input in place.
 *
 * Micro-kernels (statics, one per ISA x stride x tile width in use):
 * AVX-512 holds a tile of up to 14 pixels x cb/16 zmm (up to 28 sums; the
 * broadcast of x folds into the FMA), AVX2 sub-tiles of up to 3 pixels x
 * 4 ymm (6 x 2 for cb = 16; see cv_emit_uk for the split), picked at run
 * time through rl_conv_isa; the portable C loop (rl_cv_port) is the
 * same sums in the same order (bias, then c, then tap) for other compilers
 * and CPUs. Threads: the tasks are split as whole blocks of cb channels
 * (and rows, in parts of two rows or more, where there are fewer blocks than
 * the chunks the work pays for, conv_par_want), so two threads
 * get equal halves of a layer whose channels are a multiple of 64; every
 * output is summed by one task in a fixed order, whatever the thread count.
 */
#define CONV_CV_CB 32            /* output channels per block: the packed lanes (or 16) */
#define CONV_CV_NT 14            /* most pixels per micro-kernel tile */
#define CONV_CV_RUN 12           /* pixels per tile of a 1x1 run (emit_conv_cv) */
#define CONV_CV_KC_BYTES 16384   /* packed weights of one chunk of channels (in L1) */
#define CONV_CV_X_BYTES 1048576  /* most bytes of padded input rows per slot */
#define CONV_CV_O_BYTES 524288   /* most bytes of a part's sums per slot */
#define CONV_CV_W_BYTES 1048576  /* most bytes of a block's weights packed per task */
#define CONV_CV_RUN_PIX 128      /* least plane with weights packed per task (tile.c's
                                    TILE_CV_RUN_PIX, again for weights it saw constant) */

struct cv_isa {
	const char *name, *target, *vt, *pfx;
	int vw, pmax; /* lanes per vector, most pixels per sub-tile */
};

static const struct cv_isa cv_isas[] = {
	{"avx512", "avx512f,avx512vl,fma", "__m512", "_mm512", 16, 14},
	{"avx2", "avx2,fma", "__m256", "_mm256", 8, 3},
};

#define CV_ARGS \
	"const float *restrict x, const unsigned *restrict tap, int64_t kk, int64_t cc, " \
	"int64_t xcs, const float *restrict w, float *restrict o, const float *restrict bias, " \
	"int fresh, int relu, const float *restrict scl, const float *restrict shf"

static const char cv_port[] =
	"/* ---- Conv, channels on vector lanes: the portable tile ---- */\n"
	"/* o[j * cb + l] (+)= sum over c < cc, k < kk of w[(c * kk + k) * cb + l] *\n"
	" * x[c * xcs + tap[k] + off(j)], for nt pixels j and cb (16 or 32) lanes l,\n"
	" * off(j) = j * sx, or with rows of rw pixels rs apart from pixel ph of a\n"
	" * row on, pos(ph + j) - pos(ph) where pos(i) = i / rw * rs + i % rw * sx;\n"
	" * with `fresh` the sums start from bias[l]; with `scl` they are then\n"
	" * multiplied by scl[l], with `shf` get shf[l] added, with `relu` they end\n"
	" * as max(0, .) (a fused per-channel Mul, Add and Relu, on the last chunk;\n"
	" * one rounding each, two statements: no contraction). The micro-kernels' order. */\n"
	"static void rl_cv_port(const float *restrict x, int64_t sx, int64_t rw, int64_t rs, int64_t ph,\n"
	"                       int64_t nt, int64_t cb,\n"
	"                       const unsigned *restrict tap, int64_t kk, int64_t cc, int64_t xcs,\n"
	"                       const float *restrict w, float *restrict o,\n"
	"                       const float *restrict bias, int fresh, int relu,\n"
	"                       const float *restrict scl, const float *restrict shf)\n"
	"{\n"
	"    for (int64_t j = 0; j < nt; j++) {\n"
	"        float s[32];\n"
	"        for (int64_t l = 0; l < cb; l++)\n"
	"            s[l] = fresh ? bias[l] : o[j * cb + l];\n"
	"        const int64_t off = !rw ? j * sx : (ph + j) / rw * rs + (ph + j) % rw * sx - (ph / rw * rs + ph % rw * sx);\n"
	"        const float *xc = x + off, *wc = w;\n"
	"        for (int64_t c = 0; c < cc; c++, xc += xcs)\n"
	"            for (int64_t k = 0; k < kk; k++, wc += cb) {\n"
	"                const float xv = xc[tap[k]];\n"
	"                for (int64_t l = 0; l < cb; l++)\n"
	"                    s[l] += wc[l] * xv;\n"
	"            }\n"
	"        for (int64_t l = 0; l < cb; l++) {\n"
	"            float v = s[l];\n"
	"            if (scl)\n"
	"                v = v * scl[l];\n"
	"            if (shf)\n"
	"                v = v + shf[l];\n"
	"            o[j * cb + l] = relu && v < 0.0f ? 0.0f : v;\n"
	"        }\n"
	"    }\n"
	"}\n\n";

/*
 * The part's sums ob [np pixels][cb] into the block's output planes,
 * y[r * ys + q] = ob[q * cb + r] for channels r < mv and pixels q < np,
 * per ISA: 16 x 16 (AVX-512) or 8 x 8 (AVX2) blocks transposed in
 * registers (unpacks, then 64- and 128-bit lane shuffles), the pixels past
 * the last whole block one by one. The scalar form, a strided load per
 * output, was over half of the kernel's time outside the micro-kernels on
 * resnet_small's 3x3 16->16 on 32x32 (perf samples, one thread); a copy, so
 * the outputs are the same bits.
 */
/* A transpose's head, for vectors of vw floats: the blocks of vw pixels by
 * vw channels, o and d their corners in ob and y. */
static void cv_tr_open(struct rl_buf *b, const char *target, const char *isa, int vw)
{
	rl_buf_printf(b,
		"static __attribute__((target(\"%s\"))) void rl_cv_tr_%s(const float *restrict ob,\n"
		"        size_t cb, size_t np, size_t mv, float *restrict y, size_t ys,\n"
		"        const float *restrict res, int relu)\n"
		"{\n"
		"    size_t q0 = 0;\n"
		"    for (; q0 + %d <= np; q0 += %d)\n"
		"        for (size_t c0 = 0; c0 < mv; c0 += %d) {\n"
		"            const float *o = ob + q0 * cb + c0;\n"
		"            float *d = y + c0 * ys + q0;\n"
		"            const float *rr = res ? res + c0 * ys + q0 : NULL;\n", target, isa, vw, vw, vw);
}

/* A transpose's tail: the last np % vw pixels one by one. */
static void cv_tr_close(struct rl_buf *b, int vw)
{
	rl_buf_printf(b,
		"        }\n"
		"    /* the last np %% %d pixels; the constant bounds (mv <= cb <= 32) keep GCC\n"
		"     * from warning that q0 * cb could overflow in its clones for a constant cb */\n"
		"    for (size_t j = 0; j < %d && q0 + j < np; j++)\n"
		"        for (size_t c = 0; c < 32 && c < mv; c++) {\n"
		"            float v = ob[(q0 + j) * cb + c];\n"
		"            if (res)\n"
		"                v = v + res[c * ys + q0 + j];\n"
		"            y[c * ys + q0 + j] = relu && v < 0.0f ? 0.0f : v;\n"
		"        }\n"
		"}\n\n", vw, vw - 1);
}

static void cv_emit_tr(struct rl_buf *b)
{
	char ad[64];
	/* every step unrolled into named registers: GCC -O2 keeps arrays of
	 * vectors indexed in loops on the stack (a store and reload per vector,
	 * slower than the scalar copy) */
	rl_buf_printf(b,
		"/* ---- Conv, channels on vector lanes: the sums back into NCHW planes ---- */\n"
		"/* y[r * ys + q] = ob[q * cb + r] for r < mv, q < np (cb a multiple of 16);\n"
		" * with res, + res[r * ys + q], with relu, then max(0, .) (a fused residual\n"
		" * Add and Relu, after the tiles' per-channel steps) */\n");
	cv_tr_open(b, "avx512f", "avx512", 16);
	for (int j = 0; j < 16; j++)
		rl_buf_printf(b, "            const __m512 r%d = _mm512_loadu_ps(%s);\n", j,
		              cg_addr(ad, sizeof(ad), "o", j, "cb", NULL, 0));
	rl_buf_printf(b, "            /* 32-bit pairs */\n");
	for (int j = 0; j < 16; j += 2)
		rl_buf_printf(b, "            const __m512 t%d = _mm512_unpacklo_ps(r%d, r%d), t%d = _mm512_unpackhi_ps(r%d, r%d);\n",
		              j, j, j + 1, j + 1, j, j + 1);
	rl_buf_printf(b, "            /* 64-bit pairs: u(j + i) lane l = column 4 l + i of rows j .. j + 3 */\n");
	for (int j = 0; j < 16; j += 4) {
		rl_buf_printf(b, "            const __m512 u%d = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t%d), _mm512_castps_pd(t%d)));\n", j, j, j + 2);
		rl_buf_printf(b, "            const __m512 u%d = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t%d), _mm512_castps_pd(t%d)));\n", j + 1, j, j + 2);
		rl_buf_printf(b, "            const __m512 u%d = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t%d), _mm512_castps_pd(t%d)));\n", j + 2, j + 1, j + 3);
		rl_buf_printf(b, "            const __m512 u%d = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t%d), _mm512_castps_pd(t%d)));\n", j + 3, j + 1, j + 3);
	}
	rl_buf_printf(b, "            /* 128-bit lanes: column c's rows 4 k .. 4 k + 3 in lane k */\n");
	for (int i = 0; i < 4; i++) {
		rl_buf_printf(b, "            const __m512 w%d_0 = _mm512_shuffle_f32x4(u%d, u%d, 0x88), w%d_1 = _mm512_shuffle_f32x4(u%d, u%d, 0xdd);\n",
		              i, i, 4 + i, i, i, 4 + i);
		rl_buf_printf(b, "            const __m512 w%d_2 = _mm512_shuffle_f32x4(u%d, u%d, 0x88), w%d_3 = _mm512_shuffle_f32x4(u%d, u%d, 0xdd);\n",
		              i, 8 + i, 12 + i, i, 8 + i, 12 + i);
	}
	rl_buf_printf(b, "            /* channel c0 + c, pixels q0 .. q0 + 15, for the channels below mv */\n"
	                 "            const size_t ce = mv - c0;\n");
	for (int c = 0; c < 16; c++) {
		int i = c % 4, k = c / 4; /* column c = 4 k + i: k 0 w0,w2 0x88; 1 w1,w3 0x88; 2 w0,w2 0xdd; 3 w1,w3 0xdd */
		char cond[32] = "";
		if (c)
			snprintf(cond, sizeof(cond), "if (ce > %d) ", c);
		rl_buf_printf(b, "            %s{ __m512 v = _mm512_shuffle_f32x4(w%d_%d, w%d_%d, %s);"
		              " if (rr) v = _mm512_add_ps(v, _mm512_loadu_ps(%s));"
		              " if (relu) v = _mm512_max_ps(_mm512_setzero_ps(), v);",
		              cond, i, k & 1, i, 2 + (k & 1), k < 2 ? "0x88" : "0xdd",
		              cg_addr(ad, sizeof(ad), "rr", c, "ys", NULL, 0));
		rl_buf_printf(b, " _mm512_storeu_ps(%s, v); }\n",
		              cg_addr(ad, sizeof(ad), "d", c, "ys", NULL, 0));
	}
	cv_tr_close(b, 16);
	cv_tr_open(b, "avx2", "avx2", 8);
	for (int j = 0; j < 8; j++)
		rl_buf_printf(b, "            const __m256 r%d = _mm256_loadu_ps(%s);\n", j,
		              cg_addr(ad, sizeof(ad), "o", j, "cb", NULL, 0));
	for (int j = 0; j < 8; j += 2)
		rl_buf_printf(b, "            const __m256 t%d = _mm256_unpacklo_ps(r%d, r%d), t%d = _mm256_unpackhi_ps(r%d, r%d);\n",
		              j, j, j + 1, j + 1, j, j + 1);
	rl_buf_printf(b, "            /* u(j + i) half h = column 4 h + i of rows j .. j + 3 */\n");
	for (int j = 0; j < 8; j += 4) {
		rl_buf_printf(b, "            const __m256 u%d = _mm256_shuffle_ps(t%d, t%d, 0x44), u%d = _mm256_shuffle_ps(t%d, t%d, 0xee);\n",
		              j, j, j + 2, j + 1, j, j + 2);
		rl_buf_printf(b, "            const __m256 u%d = _mm256_shuffle_ps(t%d, t%d, 0x44), u%d = _mm256_shuffle_ps(t%d, t%d, 0xee);\n",
		              j + 2, j + 1, j + 3, j + 3, j + 1, j + 3);
	}
	rl_buf_printf(b, "            const size_t ce = mv - c0;\n");
	for (int c = 0; c < 8; c++) {
		char cond[32] = "";
		if (c)
			snprintf(cond, sizeof(cond), "if (ce > %d) ", c);
		rl_buf_printf(b, "            %s{ __m256 v = _mm256_permute2f128_ps(u%d, u%d, %s);"
		              " if (rr) v = _mm256_add_ps(v, _mm256_loadu_ps(%s));"
		              " if (relu) v = _mm256_max_ps(_mm256_setzero_ps(), v);",
		              cond, c % 4, 4 + c % 4, c < 4 ? "0x20" : "0x31",
		              cg_addr(ad, sizeof(ad), "rr", c, "ys", NULL, 0));
		rl_buf_printf(b, " _mm256_storeu_ps(%s, v); }\n",
		              cg_addr(ad, sizeof(ad), "d", c, "ys", NULL, 0));
	}
	cv_tr_close(b, 8);
}

/*
 * The pixels of a micro-kernel tile: nt pixels at stride sx in one row
 * (rw = 0), or nt pixels of a part's rows of rw pixels, rs apart in x, from
 * pixel ph of a row on (a tile across rows: cv_flat in emit_conv_cv).
 */
struct cv_tile {
	int64_t sx;
	int nt;
	int64_t rw, rs, ph;
};

/* x offset of the tile's pixel j from its first */
static int64_t cv_off(const struct cv_tile *t, int64_t j)
{
	if (!t->rw)
		return j * t->sx;
	int64_t i = t->ph + j;
	return i / t->rw * t->rs + i % t->rw * t->sx - (t->ph / t->rw * t->rs + t->ph % t->rw * t->sx);
}

/* The function name of a tile's micro-kernel, for one ISA */
static void cv_name(char *b, size_t n, const char *isa, int cb, const struct cv_tile *t)
{
	if (!t->rw)
		snprintf(b, n, "rl_cv_%s_c%d_s%lld_n%d", isa, cb, (long long)t->sx, t->nt);
	else
		snprintf(b, n, "rl_cv_%s_c%d_s%lld_n%d_w%lld_r%lld_p%lld", isa, cb, (long long)t->sx,
		         t->nt, (long long)t->rw, (long long)t->rs, (long long)t->ph);
}

/*
 * A prefetch of the packed weights CONV_CV_PF_BYTES ahead of wc, one per
 * line of the `nbytes` a step reads (into b, at indentation ind). Inside a
 * model a layer's weights come from the last-level cache or DRAM (the
 * layers before evicted them from L2), where the core's own prefetchers do
 * not keep up with a stream read at the FMA rate: light_resnet50's 1x1
 * 1024->256 on 14x14 took 650-690 us alone with its weights in L2 or L3,
 * 800 inside the model, 900 with the last-level cache flushed too
 * (bench/timing_harness.c --flush). With the prefetch 16 steps ahead (2 KB
 * at 32 lanes) the model (per kernel, -DRL_PROFILE, one core of a
 * Sapphire Rapids-class Xeon) ran that layer in 723-777 us, the 1x1
 * 1024->512 in 1584-1639 against 1811-1878, and the whole model 62.7-64.3
 * ms against 67.9-69.2 (8, 24 and 32 steps, and _MM_HINT_T1, within the
 * noise of 16). The address is computed as an integer: the prefetches
 * past the last step read nothing and cannot fault.
 */
#define CONV_CV_PF_BYTES 2048
static void cv_uk_prefetch(struct rl_buf *b, const char *ind, int nbytes)
{
	for (int off = 0; off < nbytes; off += 64)
		rl_buf_printf(b, "%s_mm_prefetch((const char *)((uintptr_t)wc + %d), _MM_HINT_T0);\n", ind,
		              CONV_CV_PF_BYTES + off);
}

/*
 * And of the input, CONV_CV_PF_X channels ahead: the lines of the tile's
 * pixels (uk_prefetch_x). In the model, with the weights' prefetch: the 1x1/2 512->1024
 * projection 1820-1947 -> 1690-1759 us (4 rounds each; 8 channels ahead no
 * better than 4). 1x1 kernels only: per tap of a 3x3 it fetched each row
 * three times and the 3x3 256->256 on 14x14 ran 3% slower. 16 channels
 * ahead, not 4: at two threads a layer reads half its input from the other
 * core's cache (the layer before split its output channels, this one
 * splits rows), a line each channel step of 14 pixels, about 15 ns of
 * FMAs, against 100 ns and more for a line from the other core; SqueezeNet's
 * squeeze layers (256->32 on 27x27 and the like) ran slower at two threads
 * than at one. Xeon VM, light_squeezenet at two threads, wall medians of
 * 3-4 rounds: 2.59-2.74 -> 2.45-2.67 ms (32 ahead no better than 16); one
 * thread, light_resnet50 and light_inception_v2 at one and two threads
 * within the noise.
 */
#define CONV_CV_PF_X 16

/* One step of a sub-tile: the lanes' weights at wc, pn pixels of xs (from
 * pixel j0) broadcast; the input's prefetch under the condition pfx (NULL:
 * none, "": always) */
static void cv_uk_step(struct rl_buf *b, const struct cv_isa *is, int cb, const struct cv_tile *t,
                       int j0, int pn, const char *pfx)
{
	char ad[64];
	int vpb = cb / is->vw;
	int64_t off[CONV_CV_NT];
	for (int j = 0; j < pn; j++)
		off[j] = cv_off(t, j0 + j) - cv_off(t, j0);
	cv_uk_prefetch(b, "                ", cb * 4);
	if (pfx && *pfx) {
		rl_buf_printf(b, "                if (%s) {\n", pfx);
		uk_prefetch_x(b, "                    ", "xcs", CONV_CV_PF_X, off, pn);
		rl_buf_printf(b, "                }\n");
	} else if (pfx) {
		uk_prefetch_x(b, "                ", "xcs", CONV_CV_PF_X, off, pn);
	}
	rl_buf_printf(b, "                const %s", is->vt);
	for (int v = 0; v < vpb; v++)
		rl_buf_printf(b, "%s w%d = %s_load_ps(%s)", v ? "," : "", v, is->pfx,
		              cg_addr(ad, sizeof(ad), "wc", 0, NULL, NULL, v * is->vw));
	rl_buf_printf(b, ";\n");
	for (int j = 0; j < pn; j++) {
		rl_buf_printf(b, "                { const %s xb = %s_set1_ps(xs[%lld]);", is->vt,
		              is->pfx, (long long)(cv_off(t, j0 + j) - cv_off(t, j0)));
		for (int v = 0; v < vpb; v++)
			rl_buf_printf(b, " s%d_%d = %s_fmadd_ps(w%d, xb, s%d_%d);", j, v, is->pfx, v, j, v);
		rl_buf_printf(b, " }\n");
	}
}

/*
 * AVX-512, unit stride: where the taps come in rows of three adjacent
 * columns (a 3x3 kernel, or 1x3, at stride and dilation 1: checked at run
 * time on tap[]), input column p of a row feeds pixel p - kw through tap
 * kw of the row. So per channel and kernel row the three taps' weights
 * stay in registers and each of the pn + 2 input columns is broadcast once
 * for up to three FMAs, where the tap loop broadcasts pn columns per tap
 * (3 pn loads a row against pn + 2 + 3 vpb). Pixel j still gets its terms
 * in the order c, k: tap kw at column j + kw, columns in ascending order,
 * so the same sums in the same order, the same bits. ResNet-style 3x3
 * 16->16 on 32x32 at cb 16, 11 pixels a tile (Sapphire Rapids-class Xeon
 * whose other hyperthread belongs to another tenant): the tap loop's loads
 * made it 1.7x slower in most runs than in the best (a shared core's load
 * ports).
 */
static void cv_uk_rows3(struct rl_buf *b, const struct cv_isa *is, int cb, int pn)
{
	char ad[64];
	int vpb = cb / is->vw;
	rl_buf_printf(b, "        int rows3 = kk %% 3 == 0;\n");
	rl_buf_printf(b, "        for (int64_t k = 0; rows3 && k < kk; k += 3)\n");
	rl_buf_printf(b, "            rows3 = tap[k + 1] == tap[k] + 1 && tap[k + 2] == tap[k] + 2;\n");
	rl_buf_printf(b, "        if (rows3) {\n");
	rl_buf_printf(b, "            for (int64_t c = 0; c < cc; c++, xc += xcs)\n");
	rl_buf_printf(b, "                for (int64_t k = 0; k < kk; k += 3, wc += %d) {\n", 3 * cb);
	rl_buf_printf(b, "                    const float *xs = xc + tap[k];\n");
	cv_uk_prefetch(b, "                    ", 3 * cb * 4);
	for (int q = 0; q < 3; q++) {
		rl_buf_printf(b, "                    const %s", is->vt);
		for (int v = 0; v < vpb; v++)
			rl_buf_printf(b, "%s w%d_%d = %s_load_ps(%s)", v ? "," : "", q, v, is->pfx,
			              cg_addr(ad, sizeof(ad), "wc", 0, NULL, NULL, q * cb + v * is->vw));
		rl_buf_printf(b, ";\n");
	}
	for (int p = 0; p < pn + 2; p++) {
		rl_buf_printf(b, "                    { const %s xb = %s_set1_ps(xs[%d]);", is->vt, is->pfx, p);
		for (int q = 0; q < 3; q++) {
			int j = p - q;
			if (j < 0 || j >= pn)
				continue;
			for (int v = 0; v < vpb; v++)
				rl_buf_printf(b, " s%d_%d = %s_fmadd_ps(w%d_%d, xb, s%d_%d);", j, v, is->pfx,
				              q, v, j, v);
		}
		rl_buf_printf(b, " }\n");
	}
	rl_buf_printf(b, "                }\n");
	rl_buf_printf(b, "        } else\n");
}

/* The micro-kernel of one ISA for tiles of t->nt pixels, into b. */
static void cv_emit_uk(struct rl_buf *b, const struct cv_isa *is, int cb, const struct cv_tile *t)
{
	char ad[64], fn[96];
	int vpb = cb / is->vw, pmax = is->pmax * CONV_CV_CB / cb, nt = t->nt;
	cv_name(fn, sizeof(fn), is->name, cb, t);
	rl_buf_printf(b, "static __attribute__((target(\"%s\"))) void %s(" CV_ARGS ")\n{\n",
	              is->target, fn);
	/* sub-tiles of pmax pixels and the rest, unless the rest would hold
	 * fewer than 4 sums: then the fewest sub-tiles, as even as they go (the
	 * wider first). 13 pixels at cb = 16 on AVX2 as 5 + 4 + 4, not 6 + 6 +
	 * 1, whose last sub-tile had 2 sums for the FMA latency (a quarter of
	 * the FMA rate; 1x1 512->1000 on 13x13 took 15-30% less time). At cb =
	 * 32 a last pixel keeps its 4 sums: 7 pixels as 3 + 3 + 1 ran 4-7%
	 * faster than 3 + 2 + 2 (Zen 3, one core, L1-resident micro-benchmark) */
	int rest = nt % pmax, nsub = (nt + pmax - 1) / pmax;
	bool even = rest > 0 && rest * vpb < 4;
	for (int j0 = 0, i = 0; j0 < nt; i++) {
		int pn = !even ? (nt - j0 < pmax ? nt - j0 : pmax) : nt / nsub + (i < nt % nsub ? 1 : 0);
		rl_buf_printf(b, "    { /* pixels [%d, %d): %d x %d sums in registers */\n", j0, j0 + pn,
		              pn, vpb);
		for (int j = 0; j < pn; j++) {
			rl_buf_printf(b, "        %s", is->vt);
			for (int v = 0; v < vpb; v++)
				rl_buf_printf(b, "%s s%d_%d", v ? "," : "", j, v);
			rl_buf_printf(b, ";\n");
		}
		rl_buf_printf(b, "        if (fresh) {\n");
		for (int v = 0; v < vpb; v++)
			rl_buf_printf(b, "            s0_%d = %s_loadu_ps(%s);\n", v, is->pfx,
			              cg_addr(ad, sizeof(ad), "bias", 0, NULL, NULL, v * is->vw));
		for (int j = 1; j < pn; j++) {
			rl_buf_printf(b, "           ");
			for (int v = 0; v < vpb; v++)
				rl_buf_printf(b, " s%d_%d = s0_%d;", j, v, v);
			rl_buf_printf(b, "\n");
		}
		rl_buf_printf(b, "        } else {\n");
		for (int j = 0; j < pn; j++) {
			rl_buf_printf(b, "           ");
			for (int v = 0; v < vpb; v++)
				rl_buf_printf(b, " s%d_%d = %s_loadu_ps(%s);", j, v, is->pfx,
				              cg_addr(ad, sizeof(ad), "o", 0, NULL, NULL, (j0 + j) * cb + v * is->vw));
			rl_buf_printf(b, "\n");
		}
		rl_buf_printf(b, "        }\n");
		rl_buf_printf(b, "        const float *xc = %s, *wc = w;\n",
		              cg_addr(ad, sizeof(ad), "x", 0, NULL, NULL, (int)cv_off(t, j0)));
		if (is->vw == 8) {
			/* AVX2: a 1x1 kernel (one tap) in one loop over the channels,
			 * without the tap loop's overhead per channel; same sums, same order */
			rl_buf_printf(b, "        if (kk == 1) {\n");
			rl_buf_printf(b, "            const float *xs = xc + tap[0];\n");
			rl_buf_printf(b, "            for (int64_t c = 0; c < cc; c++, xs += xcs, wc += %d) {\n",
			              cb);
			cv_uk_step(b, is, cb, t, j0, pn, "");
			rl_buf_printf(b, "            }\n");
			rl_buf_printf(b, "        } else\n");
		}
		if (is->vw == 16 && t->sx == 1 && !t->rw && pn * vpb + 3 * vpb + 1 <= 31)
			cv_uk_rows3(b, is, cb, pn);
		rl_buf_printf(b, "        for (int64_t c = 0; c < cc; c++, xc += xcs)\n");
		rl_buf_printf(b, "            for (int64_t k = 0; k < kk; k++, wc += %d) {\n", cb);
		rl_buf_printf(b, "                const float *xs = xc + tap[k];\n");
		cv_uk_step(b, is, cb, t, j0, pn, is->vw == 8 ? NULL : "kk == 1");
		rl_buf_printf(b, "            }\n");
		/* a fused per-channel Mul and Add (conv_epi_regs), lane l by
		 * scl[l] then + shf[l], one rounding each as in the epilogue */
		for (int q = 0; q < 2; q++) {
			const char *f = q ? "shf" : "scl";
			rl_buf_printf(b, "        if (%s) {\n", f);
			for (int v = 0; v < vpb; v++) {
				rl_buf_printf(b, "            const %s f%d = %s_loadu_ps(%s);", is->vt, v,
				              is->pfx, cg_addr(ad, sizeof(ad), f, 0, NULL, NULL, v * is->vw));
				for (int j = 0; j < pn; j++)
					rl_buf_printf(b, " s%d_%d = %s_%s_ps(s%d_%d, f%d);", j, v, is->pfx,
					              q ? "add" : "mul", j, v, v);
				rl_buf_printf(b, "\n");
			}
			rl_buf_printf(b, "        }\n");
		}
		/* a fused Relu: max(0, s) keeps a NaN or -0, as s < 0 ? 0 : s */
		rl_buf_printf(b, "        if (relu) {\n            const %s z = %s_setzero_ps();\n",
		              is->vt, is->pfx);
		for (int j = 0; j < pn; j++) {
			rl_buf_printf(b, "           ");
			for (int v = 0; v < vpb; v++)
				rl_buf_printf(b, " s%d_%d = %s_max_ps(z, s%d_%d);", j, v, is->pfx, j, v);
			rl_buf_printf(b, "\n");
		}
		rl_buf_printf(b, "        }\n");
		for (int j = 0; j < pn; j++) {
			rl_buf_printf(b, "       ");
			for (int v = 0; v < vpb; v++)
				rl_buf_printf(b, " %s_storeu_ps(%s, s%d_%d);", is->pfx,
				              cg_addr(ad, sizeof(ad), "o", 0, NULL, NULL, (j0 + j) * cb + v * is->vw), j, v);
			rl_buf_printf(b, "\n");
		}
		rl_buf_printf(b, "    }\n");
		j0 += pn;
	}
	rl_buf_printf(b, "}\n\n");
}

/* The shared runtime, the portable tile and the micro-kernels for tile t. */
static void cv_need(struct rl_cgen *cg, int cb, const struct cv_tile *t)
{
	char key[128];
	conv_need_rt(cg);
	if (!strstr(cg->statics.s, "static void rl_cv_port("))
		rl_buf_printf(&cg->statics, "%s", cv_port);
	if (!strstr(cg->statics.s, "rl_cv_tr_avx512(")) {
		rl_buf_printf(&cg->statics, "#ifdef RL_CONV_ISA\n");
		cv_emit_tr(&cg->statics);
		rl_buf_printf(&cg->statics, "#endif\n\n");
	}
	cv_name(key, sizeof(key) - 1, cv_isas[0].name, cb, t);
	strcat(key, "(");
	if (strstr(cg->statics.s, key))
		return;
	rl_buf_printf(&cg->statics, "#ifdef RL_CONV_ISA\n");
	for (size_t i = 0; i < sizeof(cv_isas) / sizeof(cv_isas[0]); i++)
		cv_emit_uk(&cg->statics, &cv_isas[i], cb, t);
	rl_buf_printf(&cg->statics, "#endif\n\n");
}

/* Channels per block: 32, or 16 where blocks of 32 would leave an eighth of
 * their lanes or more empty (M = 16, 48, 80, 112). Not merely where the last
 * block is half empty: 1x1 512->1000 on 13x13 (2.3% of 32-blocks' lanes
 * empty, 0.8% of 16-blocks') ran 14% faster at cb = 32 on one AVX-512 core
 * (1.27 -> 1.10 ms; one zmm of sums a pixel at cb = 16 makes a load for
 * every FMA) and equal on AVX2 (2.08 ms both) */
static int cv_cb(int64_t M)
{
	int64_t m32 = (M + 31) / 32 * 32;
	return (m32 - M) * 8 >= m32 ? 16 : 32;
}

/* Output rows per task: the smallest divisor of OH giving the chunks the work
 * pays for (conv_par_want); all of them when the tasks pack the weights (each
 * part would pack its block again: squeezenet's 13x13 layers of 64 channels
 * ran 12% slower). */
static int64_t cv_row_parts_par(const struct conv2d *p, int64_t nb, bool wrun)
{
	int64_t want = conv_par_want(p);
	if (wrun)
		return 1;
	int64_t last = 1; /* the most parts of at least two rows */
	for (int64_t rp = 1; rp <= p->OH; rp++) {
		if (p->OH % rp)
			continue;
		if (p->N * nb * rp >= want)
			/* parts of one row each (OH prime: 13x13, 7x7) read the block's
			 * weights once per row and run the epilogue on runs of OW: with
			 * two or more tasks already, fewer parts of two rows or more */
			return p->OH / rp >= 2 || p->N * nb * last < 2 ? rp : last;
		if (p->OH / rp >= 2)
			last = rp;
	}
	return p->OH;
}

/*
 * Then, where several blocks read the same rows, more parts (a divisor of
 * OH, parts of two rows or more) until the input rows a part reads fit
 * CONV_CV_X_L2: the blocks are the tasks' inner order, so the next block
 * finds the part's rows in L2 instead of the last-level cache. ResNet-50's
 * 1x1/2 256->512 from 56x56 read its 1.6 MB of used input once per block of
 * 32 channels (16 times) as one part; 1x1 512->128 on 28x28, 4 times in
 * two parts of 800 KB. The weights are then read once per part (a block's
 * are 32-64 KB there). Only the order of the work changes, not its sums.
 */
#define CONV_CV_X_L2 262144 /* bytes of input rows per row part, when blocks share them */

static bool cv_rows_fit_l2(const struct conv2d *p, int64_t q)
{
	int64_t R = p->OH / q, rh = (R - 1) * p->SH + (p->KH - 1) * p->DH + 1;
	return p->C * rh * p->W * 4 <= CONV_CV_X_L2;
}

static int64_t cv_row_parts_l2(const struct conv2d *p, int64_t nb, bool wrun)
{
	int64_t rp = cv_row_parts_par(p, nb, wrun);
	if (wrun || p->N * nb < 2)
		return rp;
	for (int64_t q = rp; q <= p->OH; q++) {
		if (p->OH % q || (q > rp && p->OH / q < 2))
			continue;
		if (cv_rows_fit_l2(p, q))
			return q;
	}
	return rp;
}

/*
 * Last, the count of parts (a divisor of OH, parts of two rows or more, or
 * one) whose tasks two threads share most evenly (conv_span2), where that
 * is clearly more even than the count above and keeps its bounds (the L2
 * rule where several blocks share rows, the scratch slot's). Found when the
 * threads claimed chunks in order as they came free: squeezenet's 3x3
 * 32->128 on 27x27 in 4 blocks x 3 parts was 12 tasks in 8 chunks (7
 * against 5), ResNet-50's 3x3/2 128->128 to 28x28 in 4 blocks x 7 parts 16
 * against 12; with own ranges first (emit_rt.c rl_pool_work) both split
 * evenly as they are, and the rule keeps them.
 */
static int64_t cv_row_parts(const struct conv2d *p, int64_t nb, bool wrun)
{
	int64_t rp = cv_row_parts_l2(p, nb, wrun), want = conv_par_want(p);
	if (wrun)
		return rp;
	int cb = cv_cb(p->M);
	int64_t wp = (p->OW - 1) * p->SW + (p->KW - 1) * p->DW + 1 + p->PL;
	wp = wp > p->W + p->PL ? wp : p->W + p->PL;
	double span = conv_span2(p->N * nb * rp, want);
	int64_t best = rp;
	for (int64_t q = 1; q <= p->OH; q++) {
		int64_t R = p->OH / q, rh = (R - 1) * p->SH + (p->KH - 1) * p->DH + 1;
		if (q == rp || p->OH % q || (q > 1 && R < 2) ||
		    (p->N * nb >= 2 && !cv_rows_fit_l2(p, q) && cv_rows_fit_l2(p, rp)) ||
		    R * p->OW * cb * 4 > CONV_CV_O_BYTES || p->C * rh * wp * 4 > CONV_CV_X_BYTES)
			continue;
		double s = conv_span2(p->N * nb * q, want);
		if (s < span - 0.02) {
			span = s;
			best = q;
		}
	}
	return best;
}

/* Whether channels-on-vector mode takes this (float, group 1, 2-D or 1-D) Conv. */
static bool cv_fits(const struct conv2d *p, bool wrun, int64_t *xbytes, int64_t *obytes,
                    int64_t *wbytes)
{
	int cb = cv_cb(p->M);
	int64_t nb = (p->M + cb - 1) / cb, R = p->OH / cv_row_parts(p, nb, wrun);
	int64_t rh = (R - 1) * p->SH + (p->KH - 1) * p->DH + 1;
	int64_t wp = (p->OW - 1) * p->SW + (p->KW - 1) * p->DW + 1;
	bool pad = p->PT > 0 || p->PL > 0 || (p->OH - 1) * p->SH + (p->KH - 1) * p->DH >= p->H ||
	           wp > p->W;
	wp = wp > p->W + p->PL ? wp : p->W + p->PL;
	*xbytes = pad ? (p->C * rh * wp * 4 + 63) / 64 * 64 : 0;
	*obytes = (R * p->OW * cb * 4 + 63) / 64 * 64;
	*wbytes = wrun ? (p->C * p->KH * p->KW * cb * 4 + 63) / 64 * 64 : 0;
	/* with packing tasks, at least two of them for the threads */
	return p->G == 1 && (!wrun || p->N * nb >= 2) && *xbytes <= CONV_CV_X_BYTES && *obytes <= CONV_CV_O_BYTES &&
	       *wbytes <= CONV_CV_W_BYTES;
}

/* The call of tile t's micro-kernel, x at xr + x0 */
static void cv_call(struct rl_cgen *cg, int cb, const struct cv_tile *t, int64_t x0, const char *tail)
{
	char fn[96];
	int ind = cg->indent;
	cg->indent = -1;
	cg_line(cg, "#ifdef RL_CONV_ISA");
	cg->indent = ind;
	for (size_t i = 0; i < sizeof(cv_isas) / sizeof(cv_isas[0]); i++) {
		/* rl_conv_isa: 2 for AVX-512, 1 for AVX2, the order of cv_isas */
		cg_line(cg, "%sif (rl_conv_isa == %d)", i ? "else " : "",
		        (int)(sizeof(cv_isas) / sizeof(cv_isas[0]) - i));
		cv_name(fn, sizeof(fn), cv_isas[i].name, cb, t);
		cg_line(cg, "    %s(xr + %lld, %s);", fn, (long long)x0, tail);
	}
	cg_line(cg, "else");
	cg->indent = -1;
	cg_line(cg, "#endif");
	cg->indent = ind;
	cg_line(cg, "    rl_cv_port(xr + %lld, %lld, %lld, %lld, %lld, %d, %d, %s);", (long long)x0,
	        (long long)t->sx, (long long)t->rw, (long long)t->rs, (long long)t->ph, t->nt, cb, tail);
}

static void emit_conv_cv(struct rl_cgen *cg, uint32_t node, const struct conv2d *p,
                         int64_t xbytes, int64_t obytes, int64_t wbytes)
{
	int64_t CG = p->C, KK = p->KH * p->KW, M = p->M;
	int cb = cv_cb(M);
	int64_t NB = (M + cb - 1) / cb, RP = cv_row_parts(p, NB, wbytes > 0), R = p->OH / RP;
	int64_t CC = CONV_CV_KC_BYTES / (KK * cb * 4);
	CC = CC < 1 ? 1 : CC > CG ? CG : CC;
	int64_t rh = (R - 1) * p->SH + (p->KH - 1) * p->DH + 1;
	int64_t wp = (p->OW - 1) * p->SW + (p->KW - 1) * p->DW + 1;
	bool pad = xbytes > 0;
	int64_t pitch = pad ? (wp > p->W + p->PL ? wp : p->W + p->PL) : p->W;
	int64_t xcs = pad ? rh * pitch : p->H * p->W;
	/*
	 * Short rows (OW <= CONV_CV_NT / 2), and a 1x1 convolution at unit
	 * strides reading the input in place (its rows back to back in x), are
	 * tiled across the part's rows: its R * OW pixels (ob holds them in that
	 * order) cut into tiles as one row, a tile's pixel at its row's offset
	 * in x (cv_tile: rows rs = SH * pitch apart; with no break in x, the
	 * plain kernel). On a 7x7 map a row of 7 was AVX2 sub-tiles of 3 + 3 +
	 * 1 pixels, the last one latency-bound (4 sums), 7 of them per plane;
	 * 49 pixels are tiles of 13 + 12 + 12 + 12, one such sub-tile per plane.
	 * With a Relu, one thread, thread CPU time (bench_conv_layers.py's
	 * model, load 6): 1x1 2048->512 on 7x7 1.27-1.29 ms -> 1.20-1.23,
	 * 512->2048 1.24 -> 1.15-1.19; 3x3 512->512 on 7x7 2.69-2.71 -> 2.47-2.50,
	 * 3x3/2 512->512 on 14x14 2.77 -> 2.57-2.62. The same sums in the same order.
	 */
	bool flat = R > 1 && R * p->OW <= 4 * CONV_CV_NT && /* the calls are written out, one per tile */
	            (2 * p->OW <= CONV_CV_NT ||
	             (KK == 1 && p->SH == 1 && p->SW == 1 && !pad && p->W == p->OW));
	/*
	 * A 1x1 convolution at unit strides reading its rows in place, with
	 * more pixels than flat writes out: the part's R * OW pixels are one run
	 * in x, so they are a loop of tiles of CONV_CV_RUN pixels (two AVX2
	 * sub-tiles of 6 x 2 ymm at cb = 16, four of 3 x 4 at cb = 32: 12 sums
	 * each) and one last tile of the rest (plus one loop tile where the
	 * rest would be 1 or 2 pixels). Rows of 13 were AVX2 sub-tiles of 5 + 4
	 * + 4 pixels, 8 of 13 sums short of 12. SqueezeNet's 1x1 512->1000 on
	 * 13x13 (+ Relu), one thread, Zen 3: 1.92 -> 1.86 ms alone (minimum of
	 * 9 interleaved rounds; onnxruntime 1.89), 2.23 -> 2.11 ms in the model
	 * (bench_cnn_split.py). The same sums in the same order.
	 */
	bool run = !flat && KK == 1 && p->SH == 1 && p->SW == 1 && !pad && p->W == p->OW &&
	           R * p->OW > 2 * CONV_CV_RUN;
	int64_t runpix = R * p->OW, nrun = runpix / CONV_CV_RUN, tailpix = runpix % CONV_CV_RUN;
	if (run && tailpix > 0 && tailpix <= CONV_CV_NT - CONV_CV_RUN) {
		nrun--;
		tailpix += CONV_CV_RUN;
	}
	int64_t rowpix = run ? CONV_CV_RUN : flat ? R * p->OW : p->OW;
	int64_t nrows = run ? nrun : flat ? 1 : R;
	int64_t rs = p->SH * pitch; /* x offset of the next output row */
	int64_t rstep = run ? CONV_CV_RUN : rs; /* of the loop's next tile(s) */
	/* pixel tiles of a row: ntile tiles of rowpix / ntile pixels, the first rowpix % ntile one wider */
	int64_t ntile = (rowpix + CONV_CV_NT - 1) / CONV_CV_NT, tw = rowpix / ntile;
	int64_t wide = rowpix % ntile;
	char wname[160], wptr[200], tail[400], last[64];
	/* a fused per-channel Mul and Add: applied by the tiles to the last
	 * chunk's sums, and a Relu there too when no residual follows; a
	 * residual Add (its rows NCHW, as the output's) and the Relu after it
	 * by the transpose into the output planes. The epilogue pass they
	 * replace: 1x1 256->1024 on 14x14 + Mul + Add + residual Add + Relu
	 * spent 0.065 of 1.17 ms in it (one thread) */
	struct conv_epi_regs e;
	bool inreg = conv_epi_regs(cg, &e), relu = inreg && e.relu && e.xres < 0;
	bool trres = inreg && e.xres >= 0; /* the residual and Relu in the transpose */
	snprintf(last, sizeof(last), "c0 + %lld >= %lld", (long long)CC, (long long)CG);

	/* tile q: tw pixels (the first `wide` ones one more) from pixel ow0 */
	bool brk = flat && rs != p->OW * p->SW; /* rows not back to back in x */
#define CV_TILE_AT(q, ow0) \
	((struct cv_tile){p->SW, (int)(tw + ((q) < wide ? 1 : 0)), brk ? p->OW : 0, brk ? rs : 0, \
	                  brk ? (ow0) % p->OW : 0})
	for (int64_t q = 0, ow0 = 0; q < ntile; q++) {
		struct cv_tile tq = CV_TILE_AT(q, ow0);
		cv_need(cg, cb, &tq);
		ow0 += tq.nt;
	}
	const struct cv_tile runtail = {1, (int)tailpix, 0, 0, 0};
	if (run && tailpix)
		cv_need(cg, cb, &runtail);
	rl_buf_printf(&cg->init, "    if (rl_conv_scratch_reserve(%lldu) != 0) /* %s */\n        return -1;\n",
	              (long long)(xbytes + obytes + wbytes), cg->kname);

	/* the packed weights: blocks of cb channels, [c][tap][cb], zero past M;
	 * at init, or (weights the run computes) per task into the scratch slot */
	snprintf(wname, sizeof(wname), "%s_wp", cg->kname);
	if (!wbytes) {
	cg_value_ptr(cg, cg->g->nodes[node].in[1], wptr, sizeof(wptr));
	rl_buf_printf(&cg->statics, "static float *%s; /* %s's weights, packed at init: %lld blocks x [%lld][%lld][%d] */\n\n",
	              wname, cg->kname, (long long)NB, (long long)CG, (long long)KK, cb);
	rl_buf_printf(&cg->init,
	              "    %s = aligned_alloc(64, %lluu);\n"
	              "    if (!%s)\n        return -1;\n"
	              "    for (size_t b = 0; b < %lld; b++)\n"
	              "        for (size_t c = 0; c < %lld; c++)\n"
	              "            for (size_t k = 0; k < %lld; k++)\n"
	              "                for (size_t l = 0; l < %d; l++) {\n"
	              "                    const size_t m = b * %d + l;\n"
	              "                    %s[((b * %lld + c) * %lld + k) * %d + l] = m < %lld ? (%s)[(m * %lld + c) * %lld + k] : 0.0f;\n"
	              "                }\n",
	              wname, (unsigned long long)(NB * CG * KK * cb * 4), wname,
	              (long long)NB, (long long)CG, (long long)KK, cb, cb, wname,
	              (long long)CG, (long long)KK, cb, (long long)M, wptr, (long long)CG,
	              (long long)KK);
	rl_buf_printf(&cg->fini, "    free(%s);\n    %s = NULL;\n", wname, wname);
	}

	cg->par_n = p->N * RP * NB;
	cg->par_grain = conv_par_grain(cg->par_n, conv_par_want(p));
	conv_par_note(cg, p);
	cg->simd = 1; /* the copies and the transpose, per ISA (RL_TARGETS) */
	cg_line(cg, "/* tap k = (kh, kw) of output pixel j reads x[c * %lld + tap[k] + j * %lld] */",
	        (long long)xcs, (long long)p->SW);
	cg_line(cg, "static const unsigned tap[%lld] = {", (long long)KK);
	for (int64_t kh = 0; kh < p->KH; kh++) {
		char l[160];
		size_t n = 0;
		for (int64_t kw = 0; kw < p->KW; kw++) {
			if (n > 100) {
				cg_line(cg, "    %s", l);
				n = 0;
			}
			n += (size_t)snprintf(l + n, sizeof(l) - n, "%s%lld,", n ? " " : "",
			                      (long long)(kh * p->DH * pitch + kw * p->DW));
		}
		cg_line(cg, "    %s", l);
	}
	cg_line(cg, "};");
	cg_line(cg, "/* this range's scratch slot: the part's sums [%lld pixels][%d]%s%s */",
	        (long long)(R * p->OW), cb,
	        pad ? ", then the padded input rows [C][rows][pitch]" : "",
	        wbytes ? ", then the block's packed weights" : "");
	cg_line(cg, "const int slot = rl_conv_slot_own();");
	cg_line(cg, "unsigned char *sc = rl_conv_scratch + (size_t)slot * rl_conv_slot;");
	cg_line(cg, "float *restrict ob = (float *)sc;");
	if (pad) {
		cg_line(cg, "float *restrict xp = (float *)(sc + %lld);", (long long)obytes);
		cg_line(cg, "int64_t have = -1; /* the (image, row part) in xp */");
	}
	line_open(cg, "for (int64_t t = lo; t < hi; t++) {", 0, 0);
	cg_line(cg, "const size_t b = (size_t)(t %% %lld), n = (size_t)(t / %lld);", (long long)NB,
	        (long long)(NB * RP));
	if (RP > 1)
		cg_line(cg, "const size_t oh0 = (size_t)(t / %lld %% %lld) * %lld;", (long long)NB,
		        (long long)RP, (long long)R);
	else
		cg_line(cg, "const size_t oh0 = 0;");
	cg_line(cg, "const size_t m0 = b * %d;", cb);
	if (M % cb)
		cg_line(cg, "const size_t mv = %lld - m0 < %d ? %lld - m0 : %d;", (long long)M,
		        cb, (long long)M, cb);
	else
		cg_line(cg, "const size_t mv = %d;", cb);
	if (pad) {
		cg_line(cg, "/* the rows the part reads, zero-padded: padded row a is input row oh0 * %lld + a - %lld */",
		        (long long)p->SH, (long long)p->PT);
		line_open(cg, "if ((int64_t)(t / %lld) != have) {", NB, 0);
		cg_line(cg, "have = t / %lld;", (long long)NB);
		line_open(cg, "for (size_t c = 0; c < %lld; c++)", CG, 0);
		line_open(cg, "for (size_t a = 0; a < %lld; a++) {", rh, 0);
		cg_line(cg, "float *restrict d = xp + (c * %lld + a) * %lld;", (long long)rh,
		        (long long)pitch);
		cg_line(cg, "const long long ih = (long long)(oh0 * %lld + a) - %lld;", (long long)p->SH,
		        (long long)p->PT);
		line_open(cg, "if (ih < 0 || ih >= %lld) {", p->H, 0);
		cg_line(cg, "memset(d, 0, %lld * sizeof(float));", (long long)pitch);
		line_close(cg);
		line_open(cg, "else {", 0, 0);
		if (p->PL)
			cg_line(cg, "memset(d, 0, %lld * sizeof(float));", (long long)p->PL);
		cg_line(cg, "memcpy(d + %lld, X0 + ((n * %lld + c) * %lld + (size_t)ih) * %lld, %lld * sizeof(float));",
		        (long long)p->PL, (long long)p->C, (long long)p->H, (long long)p->W,
		        (long long)p->W);
		if (pitch > p->PL + p->W)
			cg_line(cg, "memset(d + %lld, 0, %lld * sizeof(float));", (long long)(p->PL + p->W),
			        (long long)(pitch - p->PL - p->W));
		line_close(cg);
		line_close(cg); /* a */
		cg->indent--;   /* c */
		line_close(cg); /* have */
		cg_line(cg, "const float *restrict xb = xp;");
	} else {
		cg_line(cg, "const float *restrict xb = X0 + n * %lld + oh0 * %lld;",
		        (long long)(p->C * p->H * p->W), (long long)(p->SH * p->W));
	}
	cg_line(cg, "float bz[%d]; /* the block's bias, zero past M */", cb);
	cg_line(cg, "for (size_t l = 0; l < %d; l++)", cb);
	if (p->bias)
		cg_line(cg, "    bz[l] = l < mv ? X2[m0 + l] : 0.0f;");
	else
		cg_line(cg, "    bz[l] = 0.0f;");
	for (int f = 0; f < 2; f++) {
		int x = inreg ? (f ? e.xsh : e.xsc) : -1;
		if (x < 0)
			continue;
		cg_line(cg, "float %s[%d]; /* the fused %s's per-channel operand, zero past M */",
		        f ? "tz" : "sz", cb, f ? "Add" : "Mul");
		cg_line(cg, "for (size_t l = 0; l < %d; l++)", cb);
		cg_line(cg, "    %s[l] = l < mv ? X%d[m0 + l] : 0.0f;", f ? "tz" : "sz", x);
	}
	if (wbytes) {
		/* a transpose in blocks of 16 columns: each channel's row is read a
		 * line at a time and the block written stays in L1 (reading the
		 * rows side by side thrashes the L1 sets when a row is 4 KB) */
		cg_line(cg, "/* the block's weights, packed for this task: [c][tap][%d], zero past M */", cb);
		cg_line(cg, "float *restrict wq = (float *)(sc + %lld);", (long long)(obytes + xbytes));
		line_open(cg, "for (size_t i0 = 0; i0 < %lld; i0 += 16) {", CG * KK, 0);
		cg_line(cg, "const size_t ie = i0 + 16 < %lld ? i0 + 16 : %lld;", (long long)(CG * KK),
		        (long long)(CG * KK));
		cg_line(cg, "for (size_t l = 0; l < %d; l++)", cb);
		cg_line(cg, "    for (size_t i = i0; i < ie; i++)");
		cg_line(cg, "        wq[i * %d + l] = l < mv ? X1[(m0 + l) * %lld + i] : 0.0f;", cb,
		        (long long)(CG * KK));
		line_close(cg);
		cg_line(cg, "const float *restrict wb = wq;");
	} else {
		cg_line(cg, "const float *restrict wb = %s + b * %lld;", wname, (long long)(CG * KK * cb));
	}
	/* the input channels in chunks of CC; one chunk is a block, c0 = 0 (the
	 * preprocessor lines of the calls keep cg_tidy from unrolling it) */
	bool one = CG <= CC;
	if (one) {
		line_open(cg, "{", 0, 0);
		cg_line(cg, "const int64_t cn = %lld;", (long long)CG);
	} else {
		line_open(cg, "for (size_t c0 = 0; c0 < %lld; c0 += %lld) {", CG, CC);
		if (CG % CC)
			cg_line(cg, "const int64_t cn = %lld - c0 < %lld ? (int64_t)(%lld - c0) : %lld;",
			        (long long)CG, (long long)CC, (long long)CG, (long long)CC);
		else
			cg_line(cg, "const int64_t cn = %lld;", (long long)CC);
	}
	/* seg 0: the rows (or run tiles) in a loop; seg 1: a run's last tile */
	for (int seg = 0; seg < (run && tailpix ? 2 : 1); seg++) {
		if (!seg) {
			line_open(cg, "for (size_t i = 0; i < %lld; i++) {", nrows, 0);
			if (one)
				cg_line(cg, "const float *xr = xb + i * %lld;", (long long)rstep);
			else
				cg_line(cg, "const float *xr = xb + c0 * %lld + i * %lld;", (long long)xcs,
				        (long long)rstep);
			cg_line(cg, "float *orow = ob + i * %lld;", (long long)(rowpix * cb));
		} else {
			line_open(cg, "{ /* the run's last %lld pixels */", tailpix, 0);
			if (one)
				cg_line(cg, "const float *xr = xb + %lld;", (long long)(nrun * CONV_CV_RUN));
			else
				cg_line(cg, "const float *xr = xb + c0 * %lld + %lld;", (long long)xcs,
				        (long long)(nrun * CONV_CV_RUN));
			cg_line(cg, "float *orow = ob + %lld;", (long long)(nrun * CONV_CV_RUN * cb));
		}
		for (int64_t q = 0, ow0 = 0; q < (seg ? 1 : ntile); q++) {
			const struct cv_tile tile = seg ? runtail : CV_TILE_AT(q, ow0), *tq = &tile;
			/* x of the tile's first pixel, from the row's (or part's) first */
			int64_t x0 = flat ? ow0 / p->OW * rs + ow0 % p->OW * p->SW : ow0 * p->SW;
			char wexpr[64];
			if (one)
				snprintf(wexpr, sizeof(wexpr), "wb");
			else
				snprintf(wexpr, sizeof(wexpr), "wb + c0 * %lld", (long long)(KK * cb));
			char fin[2][80];
			for (int f = 0; f < 2; f++) {
				bool has = inreg && (f ? e.xsh : e.xsc) >= 0;
				snprintf(fin[f], sizeof(fin[f]), "%s%s%s%s", !has || one ? "" : last,
				         !has || one ? "" : " ? ", !has ? "NULL" : f ? "tz" : "sz",
				         !has || one ? "" : " : NULL");
			}
			snprintf(tail, sizeof(tail), "tap, %lld, cn, %lld, %s, orow + %lld, bz, %s, %s, %s, %s",
			         (long long)KK, (long long)xcs, wexpr, (long long)(ow0 * cb),
			         one ? "1" : "c0 == 0", !relu ? "0" : one ? "1" : last, fin[0], fin[1]);
			cv_call(cg, cb, tq, x0, tail);
			ow0 += tq->nt;
		}
		line_close(cg); /* i, or the last tile's block */
	}
#undef CV_TILE_AT
	line_close(cg); /* c0, or the block of one chunk */
	cg_line(cg, "/* the sums into the block's output planes (rl_cv_tr_*)%s */",
	        !cg->epi ? "" : inreg ? " (the fused epilogue is in them)" : ", then the fused epilogue");
	{
		int ind = cg->indent;
		cg->indent = -1;
		cg_line(cg, "#ifdef RL_CONV_ISA");
		cg->indent = ind;
		for (int i = 0; i < 2; i++) {
			cg_line(cg, "%sif (rl_conv_isa == %d)", i ? "else " : "", 2 - i);
			char rx[160] = "NULL";
			if (trres)
				snprintf(rx, sizeof(rx), "X%d + ((n * %lld + m0) * %lld + oh0) * %lld", e.xres,
				         (long long)M, (long long)p->OH, (long long)p->OW);
			cg_line(cg, "    rl_cv_tr_%s(ob, %d, %lld, mv, Y0 + ((n * %lld + m0) * %lld + oh0) * %lld, %lld, %s, %d);",
			        i ? "avx2" : "avx512", cb, (long long)(R * p->OW), (long long)M,
			        (long long)p->OH, (long long)p->OW, (long long)(p->OH * p->OW), rx,
			        trres && e.relu);
		}
		cg_line(cg, "else");
		cg->indent = -1;
		cg_line(cg, "#endif");
		cg->indent = ind;
	}
	line_open(cg, "for (size_t r = 0; r < mv; r++) {", 0, 0);
	cg_line(cg, "float *restrict y = Y0 + ((n * %lld + m0 + r) * %lld + oh0) * %lld;", (long long)M,
	        (long long)p->OH, (long long)p->OW);
	if (trres) {
		cg_line(cg, "const float *restrict rr = X%d + ((n * %lld + m0 + r) * %lld + oh0) * %lld;",
		        e.xres, (long long)M, (long long)p->OH, (long long)p->OW);
		line_open(cg, "for (size_t q = 0; q < %lld; q++) {", R * p->OW, 0);
		cg_line(cg, "const float v = ob[q * %d + r] + rr[q];", cb);
		cg_line(cg, "y[q] = %s;", e.relu ? "v < 0.0f ? 0.0f : v" : "v");
		line_close(cg);
	} else {
		cg_line(cg, "for (size_t q = 0; q < %lld; q++)", (long long)(R * p->OW));
		cg_line(cg, "    y[q] = ob[q * %d + r];", cb);
	}
	line_close(cg); /* r */
	/*
	 * With whole planes (one row part) and whole blocks (cb divides M), the
	 * block's planes are one run of cb * OH * OW outputs, a multiple of 16:
	 * the epilogue runs once over it, with no tail. Per channel, a 13x13
	 * plane leaves 9 outputs that go through rl_vload_n's partial copies
	 * (a store-forwarding stall each): 3x3 48->192 on 13x13 with a Relu
	 * spent a fifth of its time there (perf, one thread). Only when every
	 * other input of the epilogue has the output's shape (or none): a
	 * per-channel operand would be gathered across the run's channels.
	 */
	/* the Relu is in the tiles' sums: the group's one node after the Conv
	 * is applied, which emit_fused.c checks through the count of epilogues */
	if (inreg)
		cg->epi_calls++;
	bool block_run = false;
	if (cg->epi && !inreg && RP == 1 && M % cb == 0 && (cb * p->OH * p->OW) % 16 == 0) {
		const struct rl_cgen_group *grp = cg->epi;
		int64_t ny = rl_shape_numel(&cg_out(cg, grp->anchor, 0)->shape);
		int na = cg->g->nodes[grp->anchor].nin;
		block_run = true;
		for (int q = na; q < grp->nin; q++)
			block_run &= grp->in[q] != RL_NONE &&
			             rl_shape_numel(&cg->g->values[grp->in[q]].shape) == ny;
	}
	if (cg->epi && !inreg && !block_run) {
		char base[200];
		snprintf(base, sizeof(base), "((n * %lld + m0 + r) * %lld + oh0) * %lld", (long long)M,
		         (long long)p->OH, (long long)p->OW);
		line_open(cg, "for (size_t r = 0; r < mv; r++) {", 0, 0);
		conv_epilogue(cg, base, R * p->OW, p->OH * p->OW);
		line_close(cg); /* r */
	}
	if (block_run) {
		char base[200];
		snprintf(base, sizeof(base), "(n * %lld + m0) * %lld", (long long)M,
		         (long long)(p->OH * p->OW));
		conv_epilogue(cg, base, cb * p->OH * p->OW, cb * p->OH * p->OW);
	}
	line_close(cg); /* t */
}

/* Flat index expression sum(var_i * stride_i) over nsp axes. */
static void flat_expr(char *b, size_t n, const char *var, int nsp, const int64_t *dims)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < nsp; i++) {
		int64_t st = 1;
		for (int j = i + 1; j < nsp; j++)
			st *= dims[j];
		p += (size_t)snprintf(b + p, n - p, "%s%s%d * %lld", i ? " + " : "", var, i,
		                      (long long)st);
	}
	if (!nsp)
		snprintf(b, n, "0");
}

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/*
 * ConvTranspose as products (float32, group 1, one or two spatial axes,
 * not in static mode): each kernel tap (kh, kw) is a 1x1 product over the
 * channels, T[M, rows x IW] = W[:, :, kh, kw]^T X[:, rows], by the packed
 * SGEMM runtime (emit_gemm.c; A = the tap's weights, B = the input rows),
 * and T is then added into the output at oy = i*sh + kh*dh - pt, ox = j*sw
 * + kw*dw - pl (the output starts as the bias). That is the gather form's
 * sum, reordered: each output gets the same products, summed per tap
 * rather than per channel. The input is taken in runs of whole rows that
 * divide it, so T holds at most CONVT_T_FLOATS floats. Measured on
 * ppocrv4_det (one thread, Zen 3, -DRL_PROFILE minima): its 2x2/2 24->24
 * ConvTranspose on 80x80 54.3 -> 0.93 ms, 24->1 on 160x160 10.4 -> 0.81 ms
 * against the gather form, which 3-D, grouped and float64 ones keep.
 */
#define CONVT_T_FLOATS (1 << 18) /* most floats of one tap's product (1 MiB) */

static bool convt_gemm_ok(struct rl_cgen *cg, const struct conv_win *w, enum rl_dtype dt,
                          int64_t G)
{
	return dt == RL_DT_FLOAT && G == 1 && !cg->static_mode && !cg->device &&
	       (w->nsp == 1 || w->nsp == 2) &&
	       prod(w->in, w->nsp) > 0 && prod(w->k, w->nsp) > 0;
}

static void emit_convt_gemm(struct rl_cgen *cg, const struct conv_win *w, int64_t N, int64_t C,
                            int64_t M, bool bias)
{
	int nsp = w->nsp;
	long long IH = nsp == 2 ? w->in[0] : 1, IW = w->in[nsp - 1];
	long long OH = nsp == 2 ? w->out[0] : 1, OW = w->out[nsp - 1];
	long long KH = nsp == 2 ? w->k[0] : 1, KW = w->k[nsp - 1];
	long long SH = nsp == 2 ? w->s[0] : 1, SW = w->s[nsp - 1];
	long long DH = nsp == 2 ? w->d[0] : 1, DW = w->d[nsp - 1];
	long long PT = nsp == 2 ? w->pb[0] : 0, PL = w->pb[nsp - 1];
	long long KK = KH * KW, HW = IH * IW;
	/* rows per run: the most that divide IH with T in CONVT_T_FLOATS */
	long long rows = 1;
	for (long long r = IH; r >= 1; r--)
		if (IH % r == 0 && (M * r * IW <= CONVT_T_FLOATS || r == 1)) {
			rows = r;
			break;
		}
	long long cols = rows * IW;
	rl_buf_printf(&cg->statics, "static float %s_t[%lld]; /* one tap's product */\n", cg->kname,
	              (long long)M * cols);
	struct cg_gemm_plan pl;
	cg_gemm_plan(NULL, M, cols, C, &pl);
	cg_gemm_init(cg, &pl, true);
	cg_line(cg, "/* ConvTranspose, per kernel tap a product over the channels (packed SGEMM, %lld x %lld over K = %lld, input rows in runs of %lld), added into the output at o = i*s + k*d - pads */",
	        (long long)M, cols, (long long)C, rows);
	cg_line(cg, "float *restrict tb = %s_t;", cg->kname);
	line_open(cg, "for (size_t n = 0; n < %lld; n++) {", N, 0);
	cg_line(cg, "float *restrict y = Y0 + n * %lld;", (long long)M * OH * OW);
	cg_line(cg, "const float *restrict x = X0 + n * %lld;", (long long)C * HW);
	cg_line(cg, "for (size_t m = 0; m < %lld; m++)", (long long)M);
	cg_line(cg, "    for (size_t o = 0; o < %lld; o++)", OH * OW);
	cg_line(cg, "        y[m * %lld + o] = %s;", OH * OW, bias ? "X2[m]" : "0.0f");
	cg_line(cg, "for (int64_t r0 = 0; r0 < %lld; r0 += %lld) {", IH, rows);
	cg->indent++;
	cg_line(cg, "for (int64_t kh = 0; kh < %lld; kh++) {", KH);
	cg->indent++;
	cg_line(cg, "for (int64_t kw = 0; kw < %lld; kw++) {", KW);
	cg->indent++;
	char a[96], b[96];
	snprintf(a, sizeof(a), "X1 + kh * %lld + kw", KW);
	snprintf(b, sizeof(b), "x + r0 * %lld", IW);
	struct cg_gemm_call call = {
		.M = M, .N = cols, .K = C, .a = a, .a_rs = KK, .a_ks = M * KK, .alpha = 1.0, .b = b,
		.b_rs = HW, .b_cs = 1, .y = "tb", .ldy = cols, .ybase = "0", .span = cols,
	};
	cg_line(cg, "for (int64_t g_u = 0; g_u < %lld; g_u++) {", (long long)(pl.nib * pl.njb));
	cg->indent++;
	cg_gemm_emit_task(cg, &call, &pl, "g_u");
	cg->indent--;
	cg_line(cg, "}");
	cg_line(cg, "for (size_t m = 0; m < %lld; m++) {", (long long)M);
	cg_line(cg, "    for (int64_t i = 0; i < %lld; i++) {", rows);
	cg_line(cg, "        const int64_t oy = (r0 + i) * %lld + kh * %lld - %lld;", SH, DH, PT);
	cg_line(cg, "        if (oy < 0 || oy >= %lld)", OH);
	cg_line(cg, "            continue;");
	cg_line(cg, "        float *restrict yr = y + (m * %lld + oy) * %lld;", OH, OW);
	cg_line(cg, "        const float *restrict tr = tb + m * %lld + i * %lld;", cols, IW);
	cg_line(cg, "        for (int64_t j = 0; j < %lld; j++) {", IW);
	cg_line(cg, "            const int64_t ox = j * %lld + kw * %lld - %lld;", SW, DW, PL);
	cg_line(cg, "            if (ox >= 0 && ox < %lld)", OW);
	cg_line(cg, "                yr[ox] += tr[j];");
	cg_line(cg, "        }");
	cg_line(cg, "    }");
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}"); /* kw */
	cg->indent--;
	cg_line(cg, "}"); /* kh */
	cg->indent--;
	cg_line(cg, "}"); /* r0 */
	line_close(cg); /* n */
}

/*
 * Gather form, one output element at a time, any spatial rank and float
 * type: Conv sums x[i] * w[k] over i = o*s + k*d - pb inside the input;
 * ConvTranspose over i = (o + pb - k*d) / s when that divides exactly.
 */
static void emit_gather(struct rl_cgen *cg, uint32_t node, bool transposed,
                        const struct conv_win *w, int64_t N, int64_t C, int64_t M, int64_t G,
                        bool bias)
{
	enum rl_dtype dt = cg_in(cg, node, 0)->dtype;
	const char *acc = dt == RL_DT_DOUBLE ? "double" : "float";
	int nsp = w->nsp;
	int64_t CG = C / G, MG = M / G;
	int64_t ks = prod(w->k, nsp), is = prod(w->in, nsp), os = prod(w->out, nsp);
	char e[1024], e2[1024];
	line_open(cg, "for (size_t n = 0; n < %lld; n++) {", N, 0);
	line_open(cg, "for (size_t mo = 0; mo < %lld; mo++) {", M, 0);
	cg_line(cg, "const size_t g = mo / %lld, m = mo %% %lld;", (long long)MG, (long long)MG);
	cg_line(cg, "(void)g;");
	cg_line(cg, "(void)m;");
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t o%d = 0; o%d < %lld; o%d++) {", i, i, (long long)w->out[i], i);
		cg->indent++;
	}
	if (bias)
		cg_line(cg, "%s acc = %s;", acc, cg_load(cg, dt, "X2[mo]"));
	else
		cg_line(cg, "%s acc = %s;", acc, cg_zero(acc));
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", CG, 0);
	cg_line(cg, "const size_t ci = g * %lld + c;", (long long)CG);
	if (transposed)
		cg_line(cg, "const %s *restrict wk = X1 + (ci * %lld + m) * %lld;",
		        cg_ctype(dt), (long long)MG, (long long)ks);
	else
		cg_line(cg, "const %s *restrict wk = X1 + (mo * %lld + c) * %lld;",
		        cg_ctype(dt), (long long)CG, (long long)ks);
	cg_line(cg, "const %s *restrict xc = X0 + (n * %lld + ci) * %lld;", cg_ctype(dt),
	        (long long)C, (long long)is);
	for (int i = 0; i < nsp; i++) {
		cg_line(cg, "for (size_t k%d = 0; k%d < %lld; k%d++) {", i, i, (long long)w->k[i], i);
		cg->indent++;
		if (!transposed) {
			cg_line(cg, "const long long x%d = (long long)(o%d * %lld + k%d * %lld) - %lld;", i,
			        i, (long long)w->s[i], i, (long long)w->d[i], (long long)w->pb[i]);
		} else {
			cg_line(cg, "const long long t%d = (long long)o%d + %lld - (long long)(k%d * %lld);",
			        i, i, (long long)w->pb[i], i, (long long)w->d[i]);
			if (w->s[i] != 1) {
				cg_line(cg, "if (t%d < 0 || t%d %% %lld != 0)", i, i, (long long)w->s[i]);
				cg_line(cg, "    continue;");
			}
			cg_line(cg, "const long long x%d = t%d / %lld;", i, i, (long long)w->s[i]);
		}
		cg_line(cg, "if (x%d < 0 || x%d >= %lld)", i, i, (long long)w->in[i]);
		cg_line(cg, "    continue;");
	}
	flat_expr(e, sizeof(e), "x", nsp, w->in);
	flat_expr(e2, sizeof(e2), "k", nsp, w->k);
	{
		char xe[1100], we[1100];
		snprintf(xe, sizeof(xe), "xc[%s]", e);
		snprintf(we, sizeof(we), "wk[%s]", e2);
		char l1[1200];
		snprintf(l1, sizeof(l1), "%s", cg_load(cg, dt, xe));
		cg_line(cg, "acc += %s * %s;", l1, cg_load(cg, dt, we));
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	line_close(cg); /* c */
	flat_expr(e, sizeof(e), "o", nsp, w->out);
	cg_line(cg, "Y0[(n * %lld + mo) * %lld + %s] = %s;", (long long)M, (long long)os, e,
	        cg_assign(cg, dt, "acc"));
	if (cg->epi) {
		char yr[1300], base[1200];
		snprintf(base, sizeof(base), "(n * %lld + mo) * %lld + %s", (long long)M, (long long)os, e);
		snprintf(yr, sizeof(yr), "Y0 + %s", base);
		cg_epilogue(cg, yr, base, 1, 1);
	}
	for (int i = 0; i < nsp; i++) {
		cg->indent--;
		cg_line(cg, "}");
	}
	line_close(cg); /* mo */
	line_close(cg); /* n */
}

/* The depthwise forms' loop over planes (one iteration a plane: the bits do
 * not depend on the thread count; a task at least 32768 taps): the plane's
 * input, weights, bias, output. */
static void dw_par(struct rl_cgen *cg, const struct conv2d *p)
{
	const int64_t work = p->OH * p->OW * p->KH * p->KW;
	cg->par_n = p->N * p->G;
	cg->par_grain = work >= 32768 ? 1 : 32768 / work;
	cg->simd = 1;
}

static void dw_plane_open(struct rl_cgen *cg, const struct conv2d *p)
{
	dw_par(cg, p);
	cg_line(cg, "for (int64_t it = lo; it < hi; it++) {");
	cg->indent++;
	cg_line(cg, "const size_t n = (size_t)it / %lld, g = (size_t)it %% %lld;", (long long)p->G,
	        (long long)p->G);
	cg_line(cg, "const float *restrict xc = X0 + (n * %lld + g) * %lld;", (long long)p->C,
	        (long long)(p->H * p->W));
	cg_line(cg, "const float *restrict wk = X1 + g * %lld;", (long long)(p->KH * p->KW));
	cg_line(cg, "const float bias = %s;", p->bias ? "X2[g]" : "0.0f");
	cg_line(cg, "float *restrict yc = Y0 + (n * %lld + g) * %lld;", (long long)p->M,
	        (long long)(p->OH * p->OW));
}

/* ... and its end: the fused epilogue on the plane, then the loop closed. */
static void dw_plane_close(struct rl_cgen *cg, const struct conv2d *p)
{
	char base[160];
	int64_t n = p->OH * p->OW;
	snprintf(base, sizeof(base), "(n * %lld + g) * %lld", (long long)p->M, (long long)n);
	conv_epilogue(cg, base, n, n);
	cg->indent--;
	cg_line(cg, "}");
}

/* The flat form's sums over the NJr outputs of xp into sb: bias, then the
 * taps in rows-then-columns order (16 at a time where RL_VEC) */
static void dw_flat_sums(struct rl_cgen *cg, char offs[][24], int noff, int64_t NJr)
{
	cg_line(cg, "/* the sums: bias, then the taps in rows-then-columns order */");
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	cg_line(cg, "for (size_t j = 0; j < %lld; j += 16) {", (long long)NJr);
	cg->indent++;
	cg_line(cg, "const float *xq = xp + j;");
	cg_line(cg, "rl_vf s = (rl_vf){0} + bias;");
	for (int i = 0; i < noff; i++)
		cg_line(cg, "s += wk[%d] * *(const rl_vfu *)(xq + %s);", i, offs[i]);
	cg_line(cg, "*(rl_vfu *)(sb + j) = s;");
	cg->indent--;
	cg_line(cg, "}");
	rl_buf_printf(&cg->body, "#else\n");
	cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)NJr);
	cg->indent++;
	cg_line(cg, "const float *xq = xp + j;");
	cg_line(cg, "float s = bias;");
	for (int i = 0; i < noff; i++)
		cg_line(cg, "s += wk[%d] * xq[%s];", i, offs[i]);
	cg_line(cg, "sb[j] = s;");
	cg->indent--;
	cg_line(cg, "}");
	rl_buf_printf(&cg->body, "#endif\n");
}

/*
 * The flat form on whole planes, software-pipelined across the range's
 * planes: plane it + 1 is filled into one of two buffers while plane it's
 * sums are made from the other, and plane it - 1's sums are copied out (and
 * the fused epilogue run) one iteration after they were stored. Straight
 * after a fill, the sums' 16-float loads straddle the fill's short stores
 * (rows of 7-28 floats, single padding floats) still in the store buffer,
 * and the copy-out's rows straddle the sums' 16-float stores: both loads
 * wait for the stores to reach L1 instead of being forwarded. A plane later
 * they are in L1. Alone, one thread, MobileNet-v2's 3x3 on 960 x 7x7 with
 * its Relu (bench_conv_layers.py's model, thread CPU minimum): 49-53 -> 28-30
 * us (onnxruntime, NCHWc, 26 in the model). Same sums in the same order: the
 * bits are those of the plain flat form.
 */
#define CONV_DW_FLAT_PIPE 8192 /* bytes of one padded plane, at most (two are kept) */
static void dw_flat_pipelined(struct rl_cgen *cg, const struct conv2d *p, const struct cg_flat *fl,
                              char offs[][24], int noff, int64_t NJr, int64_t XN, int64_t cs)
{
	/* XN: one buffer, the planes and what the last chunk reads past them
	 * (zero), in whole lines so the two do not share one (cg_flat_buf) */
	const int64_t NP = fl->S0 * fl->S1, OHW = p->OH * p->OW;
	cg_line(cg, "/* Conv, depthwise flat form, pipelined: the padded input of plane it + 1 in %lld phase plane%s of %lld columns while plane it's sums (bias + weight x tap in chunks of 16 over j = oh * %lld + %s) are made, and plane it - 1's copied out%s; planes split across threads */",
	        (long long)NP, NP > 1 ? "s" : "", (long long)fl->Pq, (long long)fl->Pq,
	        cs > 1 ? "column" : "ow", cs > 1 ? " (columns 2 ow: stride 2 summed at stride 1 along the rows)" : "");
	/* planes of one channel: with one channel a group, plane (n, g) is n * G + g */
	dw_par(cg, p);
	cg_flat_pipe_open(cg, "float", fl, XN, NJr);
	cg_line(cg, "const size_t g = (size_t)it %% %lld;", (long long)p->G);
	cg_line(cg, "const float *restrict wk = X1 + g * %lld;", (long long)(p->KH * p->KW));
	cg_line(cg, "const float bias = %s;", p->bias ? "X2[g]" : "0.0f");
	dw_flat_sums(cg, offs, noff, NJr);
	/* plane it - 1 out, and its epilogue */
	cg_flat_pipe_out(cg, "float", NJr, OHW);
	if (cs > 1) {
		cg_flat_copy_cols2(cg, fl, p->OH, p->OW);
	} else {
		cg_line(cg, "const size_t ob = 0;");
		cg_flat_copy_out(cg, fl, p->OH, p->OH, p->OW);
	}
	char base[160];
	snprintf(base, sizeof(base), "(size_t)(it - 1) * %lld", (long long)OHW);
	conv_epilogue(cg, base, OHW, OHW);
	cg->indent--;
	cg_line(cg, "}");
	cg->indent--;
	cg_line(cg, "}");
}

/*
 * Depthwise Conv (float, one input and one output channel a group) on rows
 * of at most CONV_DW_FLAT_OW outputs: the pools' flat form (emit_pool.c,
 * cg_flat_fill) with a weight per tap. Per plane (per band of OB output rows
 * where the plane's phase planes exceed CONV_DW_FLAT_XP: the band's within
 * CONV_DW_FLAT_BAND, so they and the band's sums stay in L1) the padded input
 * goes to stride-phase planes of Pq columns, and every output j = oh * Pq + ow
 * sums bias + w[k] * xp[j + off_k] in whole 16-float vectors; the rows are
 * copied out and the fused epilogue runs on the plane. Rows longer than 32
 * outputs take it only where the whole plane fits: in MobileNet-v2-shaped
 * CNN (bench/unseen_models.py, bench_cnn_split.py, one thread, kernel
 * minima) the 3x3 on 144 x 56x56 went 248 -> 209 us (onnxruntime 153), but
 * the 112x112 layers in bands went the other way (3x3 on 32: 241 -> 266 us,
 * 3x3/2 on 96: 306 -> 321), though alone (bench_conv_layers.py, no Clip
 * after) the 3x3/2 had run 0.365 -> 0.230 ms. Band mode ran these
 * a channel at a time with acc rounded up to whole 128-float tiles, its
 * rows copied out element by element (MobileNet-v2's 3x3 on 960 x 7x7:
 * 63 pixels computed as 128; 60 -> 49 us, onnxruntime 26). Stride 2 where
 * the fill can split rows in pairs; on shorter rows (MobileNet-v2's 3x3/2
 * from 28x28 and 14x14, band mode before) only the rows are split into
 * phases and the columns summed at stride 1, every other one kept: twice
 * the sums, no column split (a scalar one made the 3x3/2 on 192 x 28x28
 * slower than band mode, 67 -> 90 us). Whole planes of at most
 * CONV_DW_FLAT_PIPE bytes are pipelined (dw_flat_pipelined). Alone, one
 * thread, thread CPU minimum, with a Relu: 3x3/2 on 192 x 28x28 band 70 ->
 * 44 us, on 576 x 14x14 band 73 -> 31 us (onnxruntime, NCHWc, 21 and 18 in
 * the model). A plane is one iteration, so the
 * bits do not depend on the thread count. Since the row form (below), 3x3
 * stride-1 layers with rows of 48 outputs or more and the 3x3/2 layers this
 * form leaves take that instead (the 56x56 and 112x112 figures there).
 */
#define CONV_DW_FLAT_OW 256
#define CONV_DW_FLAT_XP 32768 /* bytes of phase planes (a band's) */
#define CONV_DW_FLAT_BAND 16384 /* bytes of phase planes a band, where the plane is larger: with
                                 * the sums' band as large, both stay in L1 */
#define CONV_DW_FLAT_MIN_OB 4 /* output rows a band at least */
#define CONV_DW_FLAT_BAND_OW 32 /* rows longer than this: the flat form only for a whole plane */
static bool emit_conv_dw_flat(struct rl_cgen *cg, const struct conv2d *p)
{
	if (p->G != p->C || p->M != p->C || p->OW > CONV_DW_FLAT_OW || p->KH * p->KW > 64)
		return false;
	int64_t S0 = p->SH, S1 = p->SW, D0 = p->DH, D1 = p->DW, KH = p->KH, KW = p->KW;
	int64_t OH = p->OH, OW = p->OW, NP = S0 * S1;
	int64_t Pq = OW + (KW - 1) * D1 / S1, halo = (KH - 1) * D0 / S0, OB = OH;
	/* stride 2 on rows too short for the fill to split columns in 16-pair
	 * chunks: rows split in phases (whole rows copied), columns summed at
	 * stride 1 and every other one kept (twice the sums, no split) */
	const bool short_pairs = S1 == 2 && cg_flat_pairs(p->W, p->PL) < 16;
	const bool cols2 = short_pairs && D1 == 1;
	if (cols2) {
		S1 = 1;
		NP = S0;
		Pq = 2 * (OW - 1) + 1 + (KW - 1);
	}
	if (NP * (OH + halo) * Pq * 4 > CONV_DW_FLAT_XP) { /* bands of OB output rows */
		OB = CONV_DW_FLAT_BAND / (4 * NP * Pq) - halo;
		if (OB < CONV_DW_FLAT_MIN_OB || OW > CONV_DW_FLAT_BAND_OW)
			return false;
	}
	int64_t NRq = OB + halo, NJr = (OB * Pq + 15) / 16 * 16;
	/* stride 2 only where the fill splits the row in 16-pair chunks (a
	 * scalar split made the 3x3/2 on 192 x 28x28 slower: 67 -> 90 us) */
	if (S1 > 2 || (short_pairs && !cols2))
		return false;
	const bool pipe = (NP == 1 || cols2) && OB == OH && NP * NRq * Pq * 4 <= CONV_DW_FLAT_PIPE;
	if (cols2 && !pipe)
		return false;
	struct cg_flat fl = {p->H, p->W, S0, S1, p->PT, p->PL, NRq, Pq, "0.0f"};
	char offs[64][24];
	int noff = 0;
	for (int64_t kh = 0; kh < KH; kh++)
		for (int64_t kw = 0; kw < KW; kw++)
			snprintf(offs[noff++], sizeof(offs[0]), "%lld",
			         (long long)cg_flat_off(&fl, D0, D1, kh, kw));
	char bands[80] = "";
	if (OB < OH)
		snprintf(bands, sizeof(bands), "; bands of %lld output rows", (long long)OB);
	if (pipe) {
		dw_flat_pipelined(cg, p, &fl, offs, noff, NJr, cg_flat_buf(&fl, D0, D1, KH, KW, NJr),
		                  cols2 ? 2 : 1);
		return true;
	}
	cg_line(cg, "/* Conv, depthwise flat form: per plane, the padded input in %lld phase plane%s of %lld columns; bias + weight x tap summed in chunks of 16 over j = oh * %lld + ow; planes split across threads%s */",
	        (long long)NP, NP > 1 ? "s" : "", (long long)Pq, (long long)Pq, bands);
	cg_flat_scratch(cg, "float", &fl, D0, D1, KH, KW, NJr);
	dw_plane_open(cg, p);
	cg_line(cg, "for (size_t ob = 0; ob < %lld; ob += %lld) {", (long long)OH, (long long)OB);
	cg->indent++;
	cg_flat_fill(cg, "float", &fl);
	dw_flat_sums(cg, offs, noff, NJr);
	cg_flat_copy_out(cg, &fl, OB, OH, OW);
	cg->indent--;
	cg_line(cg, "}");
	dw_plane_close(cg, p);
	return true;
}

/* emit_conv_dw_rows: n (1-4) chunks of 16 outputs, sums s0.. over the nine
 * taps (row buffer kh at off[kw]); at j + 16 q, or at st[q] where given */
static void dw_rows_chunks(struct rl_cgen *cg, char off[3][24], int n, const int64_t *st)
{
	char at[4][32];
	for (int q = 0; q < n; q++) {
		if (st)
			snprintf(at[q], sizeof(at[q]), "%lld", (long long)st[q]);
		else
			snprintf(at[q], sizeof(at[q]), "j + %d", 16 * q);
	}
	struct rl_buf ln = {0};
	rl_buf_printf(&ln, "rl_vf s0 = (rl_vf){0} + bias");
	for (int q = 1; q < n; q++)
		rl_buf_printf(&ln, ", s%d = s0", q);
	cg_line(cg, "%s;", ln.s);
	for (int kh = 0; kh < 3; kh++)
		for (int kw = 0; kw < 3; kw++) {
			ln.len = 0;
			rl_buf_printf(&ln, "{ const float w = wk[%d];", kh * 3 + kw);
			for (int q = 0; q < n; q++)
				rl_buf_printf(&ln, " s%d += w * *(const rl_vfu *)(p%d + %s + %s);", q, kh, off[kw],
				              at[q]);
			cg_line(cg, "%s }", ln.s);
		}
	for (int q = 0; q < n; q++)
		cg_line(cg, "*(rl_vfu *)(yr + %s) = s%d;", at[q], q);
	rl_buf_free(&ln);
}

/*
 * Depthwise 3x3 Conv, stride 1 or 2, one row and column of padding above and
 * to the left, rows of at least 16 outputs: the row form. Each input row is
 * copied once into a ring of four row buffers: zero-padded for stride 1,
 * split for stride 2 into its odd columns a (a[j] = x[2j - 1], a[0] the
 * padding) and its even columns b (b[j] = x[2j]), so output j of a kernel row
 * is w0 a[j] + w1 b[j] + w2 a[j + 1]. Each output row then sums bias + the
 * nine taps (rows then columns, the flat form's order) in chunks of 16
 * outputs, four chunks at once (four independent sums: one sum's nine
 * dependent FMAs would wait on each other), stored straight into the output
 * row (the last chunk moved back to end at the row's end), and the fused
 * epilogue runs on the plane. Where it runs: emit_conv_dw (rows whose
 * 16-output chunks are mostly used, before the flat form; the planes the
 * flat form leaves; before: band mode).
 * Alone, with a Relu, one thread, thread CPU minimum (AMD EPYC, Zen 4;
 * bench_conv_layers.py's model, bench/timing_harness.c), flat or band -> row:
 * 3x3/2 on 96 x 112x112 band 276 -> 170-197 us; 3x3 on 32 x 112x112 band
 * 211-238 -> 150; 3x3 on 144 x 56x56 flat 204-207 -> 168-175; 3x3 on 32 x
 * 56x56 flat 45-52 -> 37-42. Where the flat form stays: 3x3/2 on 144 x
 * 56x56 flat 84-87 against 100-108; 3x3 on 192 x 28x28 57 against 78, on
 * 64 x 20x20 13 against 19 (a row of 28 is two chunks, 32 sums for 28
 * outputs, and the per-row work weighs more); rows under 16 outputs (band
 * mode or the flat form were 1.5-3x faster than one 16-chunk a row). A
 * plane is one iteration, so the bits do not depend on the thread count.
 */
#define CONV_DW_ROWS_OW 1024 /* the row buffers: at most 8 x 2 x 1040 floats (on the stack, or the static workspace) */
#define CONV_DW_ROWS_FIRST_OW 20 /* stride 1: the row form before the flat form from here (emit_conv_dw) */
static bool emit_conv_dw_rows(struct rl_cgen *cg, const struct conv2d *p)
{
	if (p->G != p->C || p->M != p->C || p->KH != 3 || p->KW != 3 || p->DH != 1 ||
	    p->DW != 1 || p->SH != p->SW || p->SW > 2 || p->PT != 1 || p->PL != 1 ||
	    p->OW < 16 || p->OW > CONV_DW_ROWS_OW)
		return false;
	const int64_t S = p->SW, H = p->H, W = p->W, OH = p->OH, OW = p->OW;
	/* a buffer's pitch: the padded row (stride 1: W + 2 and what the last
	 * chunk reads, OW + 2) or a split half (stride 2: OW + 1), whole lines */
	const int64_t need = S == 1 ? (W > OW ? W : OW) + 2 : OW + 1;
	const int64_t RP = (need + 15) / 16 * 16, SLOT = S * RP;
	/* stride 2: b[j] = x[2j] for 2j < W, a[j + 1] = x[2j + 1] for 2j + 1 < W */
	const int64_t NB = OW < (W + 1) / 2 ? OW : (W + 1) / 2, NA = OW < W / 2 ? OW : W / 2;
	/* the rows of the next output row are copied before this one's sums
	 * (one output row ahead: a ring of 4 slots at stride 1, 8 at stride
	 * 2): the sums' loads of a row copied just before them straddled the
	 * copy's stores, still in the store buffer (3x3 on 144 x 56x56, one
	 * thread, alone: 168 -> 148 us) */
	const int64_t RING = S == 1 ? 4 : 8;
	cg_line(cg, "/* Conv, depthwise row form: each input row once into a ring of %lld row buffers (%s), one output row ahead; every output row sums bias + the 9 taps over 4 chunks of 16 at a time, straight into the output; planes split across threads */",
	        (long long)RING, S == 1 ? "zero-padded" : "split into odd and even columns");
	cg_line(cg, "/* rb: %lld slots of %lld floats, input row ih in slot (ih + 1) & %lld */",
	        (long long)RING, (long long)SLOT, (long long)(RING - 1));
	cg_scratch_array(cg, "float", "rb", RING * SLOT, 0);
	cg_line(cg, "memset(rb, 0, %lld * sizeof(float)); /* the padding columns: row data never overwrites them */",
	        (long long)(RING * SLOT));
	dw_plane_open(cg, p);
	cg_line(cg, "long long next = -1; /* the next input row to copy */");
	cg_line(cg, "for (size_t oh = 0; oh < %lld; oh++) {", (long long)OH);
	cg->indent++;
	cg_line(cg, "/* the rows output row oh reads: [oh * %lld - 1, oh * %lld + 1]; copied up to row oh + 1's */",
	        (long long)S, (long long)S);
	cg_line(cg, "for (; next <= (long long)(oh * %lld) + %lld; next++) {", (long long)S,
	        (long long)(1 + S));
	cg->indent++;
	cg_line(cg, "float *restrict d = rb + (size_t)((next + 1) & %lld) * %lld;", (long long)(RING - 1),
	        (long long)SLOT);
	cg_line(cg, "if (next < 0 || next >= %lld) {", (long long)H);
	cg_line(cg, "    memset(d, 0, %lld * sizeof(float));", (long long)SLOT);
	cg_line(cg, "    continue;");
	cg_line(cg, "}");
	cg_line(cg, "const float *restrict xr = xc + (size_t)next * %lld;", (long long)W);
	if (S == 1) {
		cg_line(cg, "memcpy(d + 1, xr, %lld * sizeof(float));", (long long)W);
	} else {
		cg_line(cg, "float *restrict a = d, *restrict b = d + %lld;", (long long)RP);
		cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)NA);
		cg_line(cg, "    b[j] = xr[2 * j];");
		cg_line(cg, "    a[j + 1] = xr[2 * j + 1];");
		cg_line(cg, "}");
		if (NB > NA)
			cg_line(cg, "b[%lld] = xr[%lld];", (long long)NA, (long long)(2 * NA));
	}
	cg->indent--;
	cg_line(cg, "}");
	/* tap (kh, kw): row buffer kh at offset off[kw] */
	char off[3][24];
	for (int kw = 0; kw < 3; kw++)
		snprintf(off[kw], sizeof(off[kw]), "%lld",
		         (long long)(S == 1 ? kw : kw == 1 ? RP : kw / 2));
	for (int kh = 0; kh < 3; kh++)
		cg_line(cg, "const float *restrict p%d = rb + (size_t)((oh * %lld + %d) & %lld) * %lld;", kh,
		        (long long)S, kh, (long long)(RING - 1), (long long)SLOT);
	cg_line(cg, "float *restrict yr = yc + oh * %lld;", (long long)OW);
	rl_buf_printf(&cg->body, "#ifdef RL_VEC\n");
	/* chunks of 16 outputs at 16 i, the last moved back to end at the row's
	 * end: whole groups of four in a loop, the rest (1-4) after it */
	const int64_t nc = (OW + 15) / 16, g4 = OW / 16 / 4;
	if (g4 > 0) {
		cg_line(cg, "for (size_t j = 0; j < %lld; j += 64) { /* four chunks at once: four independent sums */",
		        (long long)(64 * g4));
		cg->indent++;
		dw_rows_chunks(cg, off, 4, NULL);
		cg->indent--;
		cg_line(cg, "}");
	}
	if (nc > 4 * g4) {
		int64_t st[4];
		int r = (int)(nc - 4 * g4);
		for (int q = 0; q < r; q++) {
			st[q] = 16 * (4 * g4 + q);
			if (st[q] > OW - 16)
				st[q] = OW - 16;
		}
		cg_line(cg, "{ /* the last %d chunk%s */", r, r > 1 ? "s" : "");
		cg->indent++;
		dw_rows_chunks(cg, off, r, st);
		cg->indent--;
		cg_line(cg, "}");
	}
	rl_buf_printf(&cg->body, "#else\n");
	cg_line(cg, "for (size_t j = 0; j < %lld; j++) {", (long long)OW);
	cg->indent++;
	cg_line(cg, "float s = bias;");
	for (int kh = 0; kh < 3; kh++)
		for (int kw = 0; kw < 3; kw++)
			cg_line(cg, "s += wk[%d] * p%d[%s + j];", kh * 3 + kw, kh, off[kw]);
	cg_line(cg, "yr[j] = s;");
	cg->indent--;
	cg_line(cg, "}");
	rl_buf_printf(&cg->body, "#endif\n");
	cg->indent--;
	cg_line(cg, "}");
	dw_plane_close(cg, p);
	return true;
}

/*
 * A float depthwise Conv in the row or the flat form, where one takes it:
 * the row form first where its 16-output chunks are mostly used (OW over
 * 16 ceil(OW / 16) at least CONV_DW_ROWS_USE) and, at stride 1, the rows
 * hold CONV_DW_ROWS_FIRST_OW outputs or more; then the flat form, then the
 * row form for the 3x3/2 planes the flat form leaves; false: band mode or
 * another form. Since the row form copies its rows one output row ahead
 * (twenty-third session), one thread, alone, thread CPU minimum, flat ->
 * rows: 3x3/2 on 144 x 56x56 (28 outputs a row) 87-90 -> 63-68 us, on 32
 * x 32x32 (16) 11.9 -> 7.8-8.8, on 24 x 40x40 (20) 10.5 -> 8.5; 3x3 on 192
 * x 28x28 59-60 -> 55-56, 64 x 40x40 48 -> 36, 48 x 24x24 13.4-13.5 ->
 * 12.4; where the flat form stays: 3x3/2 on 96 x 34x34 (17 a row: two
 * chunks for 17 outputs) 23 against 40, 3x3 on 96 x 16x16 11.5-11.7
 * against 12.9, 64 x 17x17 10.8-11.2 against 12.8-16.2, 64 x 20x20 13.2-14.6
 * against 14.0-14.1.
 */
#define CONV_DW_ROWS_USE 0.6
static bool emit_conv_dw(struct rl_cgen *cg, const struct conv2d *p)
{
	const double use = (double)p->OW / (double)(16 * ((p->OW + 15) / 16));
	if (use >= CONV_DW_ROWS_USE && (p->SW == 2 || p->OW >= CONV_DW_ROWS_FIRST_OW) &&
	    emit_conv_dw_rows(cg, p))
		return true;
	return emit_conv_dw_flat(cg, p) || emit_conv_dw_rows(cg, p);
}

/*
 * Winograd form, F(2x2, 3x3): 3x3 convolutions at stride 1 with one pixel of
 * zero padding on every side (the output plane the size of the input), group
 * 1, constant weights. Each 2x2 block of outputs (a tile) is computed from
 * the 4x4 input patch around it as A^T [(G g G^T) . (B^T d B)] A: 16 products
 * per tile and channel pair instead of 36 multiply-adds, so the products
 * cost 4/9 of the direct form's. Per block (image, rows of tiles):
 *
 * 1. every input row the block reads is split once into its even and odd
 *    padded columns (E: e[j] = x[2j - 1], o[j] = x[2j], zero past the
 *    row), so a patch's four columns are e[j], o[j], e[j + 1], o[j + 1]
 *    and the loops below read them contiguously (gcc -O2 vectorizes the
 *    split with two permutes a vector);
 * 2. the input transform B^T d B of every tile and channel into V[16][C][tp]
 *    (tile (r, j) at r * TW + j: the task's tiles back to back, no lanes
 *    lost to short rows; a row's loop runs TW rounded up to 8 columns,
 *    rl_conv_wino_rowlen, and the values past its end are overwritten by the
 *    next row's, the last row's land in slack);
 * 3. 16 products S[q] = U[q] V[q] (M x C times C x tp), U = G g G^T the
 *    weights transformed once in NAME_init, by the band-mode micro-kernel
 *    (rl_conv4: a 1x1 convolution over the tiles, kk = 1), or where none
 *    was picked a loop of 16-column sums gcc vectorizes (rl_wino_prod_*);
 * 4. the output transform A^T S A + bias per channel and tile row into two
 *    output rows (interleaved back to NCHW), then the fused epilogue: a
 *    per-channel Mul and Add, a residual Add and a Relu as the register
 *    tiles apply them (conv_epi_regs), or any other epilogue on each row.
 *
 * A task is a row of tiles of one image (wino_plan); a range's rows of one
 * image run as blocks of up to TB rows, as even as they go, whose V and S
 * stay under RL_WINO_BYTES (L2; ir/cost.h). Every output is summed by one block in a fixed
 * order, whatever the thread count; the sums are not
 * the direct form's (the transforms add and subtract before the products):
 * on 16 -> 16 channels with inputs in [-1, 1] the largest difference from a
 * double-precision direct convolution was 1e-6 of the largest output.
 * One layer with a Relu, one thread, AMD EPYC Zen 4 (bench_conv_layers.py,
 * direct form before -> this form, onnxruntime): 64->64 on 56x56 2.117 ->
 * 1.406 ms (2.005), 128->128 on 28x28 2.011 -> 1.300 (1.963); the README
 * has more shapes and the models.
 */
struct conv_wino {
	int64_t TH, TW, TWr; /* rows and columns of tiles, columns a row's loops run (rl_conv_wino_rowlen) */
	int64_t TB;          /* a range's rows of one image run as blocks of up to TB rows */
	int64_t VP, EP, RB;  /* a block's V/S pitch, an E row's half, E rows a channel */
};

static bool wino_plan(struct rl_cgen *cg, uint32_t node, const struct conv2d *p,
                      struct conv_wino *w)
{
	/* the tile pass's choice (rl_conv_wino_rows: the largest block), on what
	 * the kernel can run here: not in static mode (no NAME_init to transform
	 * the weights in), weights stored or made at init */
	if (cg->g->nodes[node].tile.conv != RL_CONV_WINO || cg->static_mode || p->G != 1 ||
	    p->KH != 3 || p->KW != 3 || p->SH != 1 || p->SW != 1 || p->DH != 1 || p->DW != 1 ||
	    p->PT != 1 || p->PL != 1 || p->OH != p->H || p->OW != p->W ||
	    !cg_value_stored_const(cg, cg->g->nodes[node].in[1]))
		return false;
	int64_t TB = rl_conv_wino_rows(p->C, p->M, p->OH, p->OW);
	if (TB < 1)
		return false;
	w->TH = (p->OH + 1) / 2;
	w->TW = (p->OW + 1) / 2;
	w->TWr = rl_conv_wino_rowlen(w->TW);
	w->EP = w->TWr + 16;
	/* tasks of one row of tiles: rl_parallel_for cuts an image's TH rows
	 * into chunks as even as they go (28 rows in 8 chunks: 14 a thread of
	 * two), and a range's rows of one image run as blocks of up to TB rows,
	 * as even as they go. Tasks of TB rows (3 on 28x28 and 56x56 planes)
	 * left 5 tasks of 14 rows or 10 of 28, one thread with 8 of 14 or 15
	 * of 28; two threads, 128->128 on 28x28 with a Relu: 1442 us one
	 * thread, 880 two (1.64x) */
	w->TB = TB;
	w->VP = rl_conv_wino_pitch(TB, p->OW);
	w->RB = 2 * TB + 2;
	return true;
}

/* Whether the statics have no function `name` yet (the Winograd row
 * helpers are named by the constants they hold: written once per file). */
static bool wino_fn_new(const struct rl_buf *st, const char *name)
{
	char def[96];
	snprintf(def, sizeof(def), " %s(", name);
	return !st->s || !strstr(st->s, def);
}

static bool emit_conv_wino(struct rl_cgen *cg, uint32_t node, const struct conv2d *p)
{
	struct conv_wino w;
	if (!wino_plan(cg, node, p, &w))
		return false;
	const long long C = p->C, M = p->M, H = p->H, W = p->W, TW = w.TW, TWr = w.TWr, VP = w.VP,
	                EP = w.EP, RB = w.RB, TB = w.TB, TH = w.TH;
	const long long CVP = C * VP, MVP = M * VP;
	struct conv_epi_regs e;
	bool inreg = conv_epi_regs(cg, &e);
	char wname[160], wptr[200];

	conv_need_rt(cg);
	/* U = G g G^T per (m, c), stored [16][M][C]: the rows of product q */
	snprintf(wname, sizeof(wname), "%s_wu", cg->kname);
	cg_value_ptr(cg, cg->g->nodes[node].in[1], wptr, sizeof(wptr));
	rl_buf_printf(&cg->statics, "static float *%s; /* %s's weights, Winograd-transformed at init: [16][%lld][%lld] */\n\n",
	              wname, cg->kname, M, C);
	rl_buf_printf(&cg->init,
	              "    %s = aligned_alloc(64, %lluu);\n"
	              "    if (!%s)\n        return -1;\n"
	              "    for (size_t m = 0; m < %lld; m++)\n"
	              "        for (size_t c = 0; c < %lld; c++) {\n"
	              "            const float *g = (%s) + (m * %lld + c) * 9;\n"
	              "            float t[4][3]; /* G g: rows g0, (g0 + g1 + g2) / 2, (g0 - g1 + g2) / 2, g2 */\n"
	              "            for (size_t k = 0; k < 3; k++) {\n"
	              "                t[0][k] = g[k];\n"
	              "                t[1][k] = 0.5f * (g[k] + g[3 + k] + g[6 + k]);\n"
	              "                t[2][k] = 0.5f * (g[k] - g[3 + k] + g[6 + k]);\n"
	              "                t[3][k] = g[6 + k];\n"
	              "            }\n"
	              "            for (size_t i = 0; i < 4; i++) { /* (G g) G^T */\n"
	              "                float *u = %s + (i * 4 * %lld + m) * %lld + c;\n"
	              "                u[0] = t[i][0];\n"
	              "                u[%lld] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);\n"
	              "                u[%lld] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);\n"
	              "                u[%lld] = t[i][2];\n"
	              "            }\n"
	              "        }\n",
	              wname, (unsigned long long)(16 * M * C * 4), wname, M, C, wptr, C, wname, M, C,
	              M * C, 2 * M * C, 3 * M * C);
	rl_buf_printf(&cg->fini, "    free(%s);\n    %s = NULL;\n", wname, wname);
	/* the loops over a row, as functions of restrict parameters with
	 * constant trip counts: plain -O2 vectorizes them (in the kernel, on
	 * pointers into the scratch slot, GCC's cheap model would not: it
	 * cannot prove them apart). Named by the constants they hold, so the
	 * kernels of one shape (a ResNet stage's 3x3 layers) share them. */
	struct rl_buf *st = &cg->statics;
	const char *inl = "#ifdef __GNUC__\n__attribute__((always_inline))\n#endif\nstatic inline void";
	char fsplit[64], fvin[64], fprod[80], fvout[64], frow[80];
	snprintf(fsplit, sizeof(fsplit), "rl_wino_split_%lld_%lld", W, EP);
	snprintf(fvin, sizeof(fvin), "rl_wino_vin_%lld_%lld", TWr, CVP);
	snprintf(fprod, sizeof(fprod), "rl_wino_prod_%lld_%lld_%lld", M, C, VP);
	snprintf(fvout, sizeof(fvout), "rl_wino_vout_%lld_%lld", TWr, MVP);
	snprintf(frow, sizeof(frow), "rl_wino_row_%lld%s%s%s%s", (long long)p->OW,
	         inreg && e.xsc >= 0 ? "_mul" : "", inreg && e.xsh >= 0 ? "_add" : "",
	         inreg && e.xres >= 0 ? "_res" : "", inreg && e.relu ? "_relu" : "");
	/* read from the input row itself: a copy into a padded row first left
	 * the split's vector loads waiting on the copy's stores */
	if (wino_fn_new(st, fsplit)) {
		rl_buf_printf(st, "/* an input row of %lld split into its padded even and odd columns, e[j] = x[2j - 1], o[j] = x[2j], zero past the row */\n"
		                  "%s %s(const float *restrict x, float *restrict e, float *restrict o)\n{\n"
		                  "    e[0] = 0.0f;\n",
		              W, inl, fsplit);
		if (W / 2 > 16 && (W / 2) % 16)
			/* 16 pairs at a time, the last 16 moved back to end at the
			 * row's end (each store is of the same value): gcc -O2
			 * vectorizes no loop whose trip count needs a scalar tail */
			rl_buf_printf(st, "    for (size_t j0 = 0;; j0 += 16) {\n"
			                  "        if (j0 > %lld)\n            j0 = %lld;\n"
			                  "        for (size_t t = 0; t < 16; t++) {\n"
			                  "            o[j0 + t] = x[2 * (j0 + t)];\n"
			                  "            e[j0 + t + 1] = x[2 * (j0 + t) + 1];\n"
			                  "        }\n"
			                  "        if (j0 == %lld)\n            break;\n"
			                  "    }\n",
			              W / 2 - 16, W / 2 - 16, W / 2 - 16);
		else
			rl_buf_printf(st, "    for (size_t j = 0; j < %lld; j++) {\n"
			                  "        o[j] = x[2 * j];\n"
			                  "        e[j + 1] = x[2 * j + 1];\n"
			                  "    }\n",
			              W / 2);
		if (W % 2)
			rl_buf_printf(st, "    o[%lld] = x[%lld];\n", W / 2, W - 1);
		rl_buf_printf(st, "    for (size_t j = %lld; j < %lld; j++)\n        o[j] = 0.0f;\n"
		                  "    for (size_t j = %lld; j < %lld; j++)\n        e[j] = 0.0f;\n}\n\n",
		              (W + 1) / 2, EP, W / 2 + 1, EP);
	}
	char ix[16][40]; /* plane q's element j: "j", or "q * pitch + j" */
	if (wino_fn_new(st, fvin)) {
		rl_buf_printf(st, "/* B^T d B of a row of %lld tiles (patch rows 0-3 split in e, o) into the 16 planes of v, %lld apart */\n"
		                  "%s %s(const float *restrict e0, const float *restrict o0, const float *restrict e1,\n"
		                  "    const float *restrict o1, const float *restrict e2, const float *restrict o2,\n"
		                  "    const float *restrict e3, const float *restrict o3, float *restrict v)\n{\n"
		                  "    for (size_t j = 0; j < %lld; j++) {\n",
		              TWr, CVP, inl, fvin, TWr);
		for (int i = 0; i < 4; i++)
			rl_buf_printf(st, "        const float t%d0 = e%d[j] - e%d[j + 1], t%d1 = o%d[j] + e%d[j + 1], t%d2 = e%d[j + 1] - o%d[j],\n"
			                  "                    t%d3 = o%d[j] - o%d[j + 1];\n",
			              i, i, i, i, i, i, i, i, i, i, i, i);
		for (int q = 0; q < 16; q++)
			snprintf(ix[q], sizeof(ix[q]), q ? "%lld + j" : "j", (long long)q * CVP);
		for (int k = 0; k < 4; k++)
			rl_buf_printf(st, "        v[%s] = t0%d - t2%d;\n        v[%s] = t1%d + t2%d;\n"
			                  "        v[%s] = t2%d - t1%d;\n        v[%s] = t1%d - t3%d;\n",
			              ix[k], k, k, ix[4 + k], k, k, ix[8 + k], k, k, ix[12 + k], k, k);
		rl_buf_printf(st, "    }\n}\n\n");
	}
	/* the products where no micro-kernel was picked (other CPUs, other
	 * compilers): 16 columns of sums at a time over the channels, a loop
	 * gcc -O2 vectorizes; as a plain loop over the columns per channel it
	 * ran 14x slower than band mode's portable tiles (3x3 64->64 on 56x56,
	 * one thread, -DRL_NO_ISA: 30.5 against 2.2 ms) */
	if (wino_fn_new(st, fprod))
		rl_buf_printf(st, "/* the products S = U V of one of the 16 planes, %lld x %lld times %lld x n (n a multiple of 16, rows %lld apart) */\n"
		                  "%s %s(const float *restrict u, const float *restrict v, float *restrict s, size_t n)\n{\n"
		                  "    for (size_t m = 0; m < %lld; m += 4)\n"
		                  "        for (size_t i0 = 0; i0 < n; i0 += 16) {\n"
		                  "            float a0[16], a1[16], a2[16], a3[16];\n"
		                  "            for (size_t i = 0; i < 16; i++)\n"
		                  "                a0[i] = a1[i] = a2[i] = a3[i] = 0.0f;\n"
		                  "            for (size_t c = 0; c < %lld; c++) {\n"
		                  "                const float *restrict w = u + m * %lld + c, *restrict x = v + c * %lld + i0;\n"
		                  "                for (size_t i = 0; i < 16; i++) {\n"
		                  "                    a0[i] += w[0] * x[i];\n"
		                  "                    a1[i] += w[%lld] * x[i];\n"
		                  "                    a2[i] += w[%lld] * x[i];\n"
		                  "                    a3[i] += w[%lld] * x[i];\n"
		                  "                }\n"
		                  "            }\n"
		                  "            for (size_t i = 0; i < 16; i++) {\n"
		                  "                s[m * %lld + i0 + i] = a0[i];\n"
		                  "                s[(m + 1) * %lld + i0 + i] = a1[i];\n"
		                  "                s[(m + 2) * %lld + i0 + i] = a2[i];\n"
		                  "                s[(m + 3) * %lld + i0 + i] = a3[i];\n"
		                  "            }\n"
		                  "        }\n}\n\n",
		              M, C, C, VP, inl, fprod, M, C, C, VP, C, 2 * C, 3 * C, VP, VP, VP, VP);
	if (wino_fn_new(st, fvout)) {
		rl_buf_printf(st, "/* A^T S A + bias of a row of %lld tiles (planes %lld apart) into its two output rows */\n"
		                  "%s %s(const float *restrict s, float *restrict u0, float *restrict u1, float bm)\n{\n"
		                  "    for (size_t j = 0; j < %lld; j++) {\n",
		              TWr, MVP, inl, fvout, TWr);
		for (int q = 0; q < 16; q++)
			snprintf(ix[q], sizeof(ix[q]), q ? "%lld + j" : "j", (long long)q * MVP);
		for (int i = 0; i < 4; i++)
			rl_buf_printf(st, "        const float a%d = s[%s] + s[%s] + s[%s];\n"
			                  "        const float b%d = s[%s] - s[%s] - s[%s];\n",
			              i, ix[4 * i], ix[4 * i + 1], ix[4 * i + 2], i, ix[4 * i + 1],
			              ix[4 * i + 2], ix[4 * i + 3]);
		rl_buf_printf(st, "        u0[2 * j] = a0 + a1 + a2 + bm;\n"
		                  "        u0[2 * j + 1] = b0 + b1 + b2 + bm;\n"
		                  "        u1[2 * j] = a1 - a2 - a3 + bm;\n"
		                  "        u1[2 * j + 1] = b1 - b2 - b3 + bm;\n"
		                  "    }\n}\n\n");
	}
	if (wino_fn_new(st, frow)) {
		/* rows of more than 16 not a multiple of 16: the whole 16s in a loop
		 * gcc -O2 vectorizes, the rest after it (a 55-wide loop ran scalar;
		 * the last 16 moved back to end at the row's end load u across two
		 * of the A^T S A's stores and were slower still) */
		const long long OW = p->OW, OW16 = OW > 16 ? OW / 16 * 16 : 0;
		char ep[200];
		snprintf(ep, sizeof(ep), "%s%s%s%s", inreg && e.xsc >= 0 ? "        v = v * sm;\n" : "",
		         inreg && e.xsh >= 0 ? "        v = v + hm;\n" : "",
		         inreg && e.xres >= 0 ? "        v = v + rr[i];\n" : "",
		         inreg && e.relu ? "        v = v < 0.0f ? 0.0f : v;\n" : "");
		rl_buf_printf(st, "/* an output row of %lld%s */\n%s %s(const float *restrict u, float *restrict y%s%s%s)\n{\n",
		              OW, inreg ? " and its fused epilogue" : "", inl, frow,
		              inreg && e.xsc >= 0 ? ", float sm" : "", inreg && e.xsh >= 0 ? ", float hm" : "",
		              inreg && e.xres >= 0 ? ", const float *restrict rr" : "");
		if (OW16 && OW16 < OW)
			rl_buf_printf(st, "    for (size_t i = 0; i < %lld; i++) {\n        float v = u[i];\n%s"
			                  "        y[i] = v;\n    }\n",
			              OW16, ep);
		rl_buf_printf(st, "    for (size_t i = %lld; i < %lld; i++) {\n        float v = u[i];\n%s"
		                  "        y[i] = v;\n    }\n}\n\n",
		              OW16 < OW ? OW16 : 0, OW, ep);
	}
	long long scratch = 4 * (16 * CVP + 16 * MVP + C * RB * 2 * EP);
	rl_buf_printf(&cg->init, "    if (rl_conv_scratch_reserve(%lldu) != 0) /* %s */\n        return -1;\n",
	              scratch, cg->kname);
	cg->par_n = p->N * TH;
	/* an even number of chunks: with an odd one the chunk left over runs as
	 * a block of its own (7 rows of 14x14 in 7 chunks on two threads: 3 + 3
	 * + 1 rows, the last a block of 8 columns; 96->128 on 14x14, two
	 * threads, 175 us in 6 chunks, 214 in 7) */
	int64_t chunks = conv_par_want(p) < cg->par_n ? conv_par_want(p) : cg->par_n;
	if (chunks > 2)
		chunks &= ~(int64_t)1;
	cg->par_grain = conv_par_grain(cg->par_n, chunks);
	conv_par_note(cg, p);
	cg->simd = 1; /* the splits and transforms vectorize per ISA (RL_TARGETS) */

	cg_line(cg, "/* Conv, Winograd F(2x2, 3x3): tiles of 2x2 outputs, %lld x %lld of them; a task is an image's row of tiles, a range's rows run in blocks of up to %lld */",
	        TH, TW, TB);
	cg_line(cg, "const int slot = rl_conv_slot_own();");
	cg_line(cg, "unsigned char *sc = rl_conv_scratch + (size_t)slot * rl_conv_slot;");
	cg_line(cg, "float *restrict V = (float *)sc; /* [16][%lld][%lld]: the input tiles transformed, tile (r, j) at r * %lld + j */",
	        C, VP, TW);
	cg_line(cg, "float *restrict S = V + %lld; /* [16][%lld][%lld]: the products */", 16 * CVP, M, VP);
	cg_line(cg, "float *restrict E = S + %lld; /* [%lld][%lld][2][%lld]: input rows, even and odd padded columns */",
	        16 * MVP, C, RB, EP);
	cg_line(cg, "float u0[%lld], u1[%lld]; /* a tile row's two output rows */", 2 * TWr, 2 * TWr);
	line_open(cg, "for (int64_t t = lo; t < hi;) {", 0, 0);
	cg_line(cg, "const size_t n = (size_t)(t / %lld), tr0 = (size_t)(t %% %lld);", TH, TH);
	cg_line(cg, "/* this range's rows of image n left, in blocks of up to %lld as even as they go */", TB);
	cg_line(cg, "const int64_t left = (hi < (int64_t)(n + 1) * %lld ? hi : (int64_t)(n + 1) * %lld) - t;", TH, TH);
	cg_line(cg, "const int64_t nblk = (left + %lld) / %lld;", TB - 1, TB);
	cg_line(cg, "const size_t nr = (size_t)((left + nblk - 1) / nblk); /* rows of tiles */");
	cg_line(cg, "t += (int64_t)nr;");
	cg_line(cg, "/* the input rows the tiles read, 2 tr0 - 1 .. 2 (tr0 + nr), split */");
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", C, 0);
	cg_line(cg, "const float *restrict xc = X0 + (n * %lld + c) * %lld;", C, H * W);
	line_open(cg, "for (size_t a = 0; a < 2 * nr + 2; a++) {", 0, 0);
	cg_line(cg, "float *restrict e = E + (c * %lld + a) * %lld;", RB, 2 * EP);
	cg_line(cg, "const long long ih = (long long)(2 * tr0 + a) - 1;");
	cg_line(cg, "if (ih < 0 || ih >= %lld)", H);
	cg_line(cg, "    memset(e, 0, %lld * sizeof(float));", 2 * EP);
	cg_line(cg, "else");
	cg_line(cg, "    %s(xc + (size_t)ih * %lld, e, e + %lld);", fsplit, W, EP);
	line_close(cg); /* a */
	line_close(cg); /* c */
	cg_line(cg, "/* V = B^T d B: columns d0 - d2, d1 + d2, d2 - d1, d1 - d3 of each patch row, then the same down the rows */");
	line_open(cg, "for (size_t c = 0; c < %lld; c++) {", C, 0);
	line_open(cg, "for (size_t r = 0; r < nr; r++) {", 0, 0);
	for (int i = 0; i < 4; i++)
		cg_line(cg, "const float *restrict e%d = E + (c * %lld + 2 * r + %d) * %lld, *restrict o%d = e%d + %lld;",
		        i, RB, i, 2 * EP, i, i, EP);
	cg_line(cg, "%s(e0, o0, e1, o1, e2, o2, e3, o3, V + c * %lld + r * %lld);", fvin, VP, TW);
	line_close(cg); /* r */
	line_close(cg); /* c */
	cg_line(cg, "/* S[q] = U[q] V[q] for the 16 q: %lld x %lld times %lld x the task's tiles */", M, C, C);
	cg_line(cg, "const int64_t tp = (int64_t)(nr - 1) * %lld + %lld; /* every column the output transform reads */", TW, TWr);
	int ind = uk_open(cg);
	cg_line(cg, "static const unsigned tap0[1] = {0}; /* a 1x1 over the tiles */");
	cg_line(cg, "for (size_t q = 0; q < 16; q++)");
	cg_line(cg, "    rl_conv4(V + q * %lld, %lld, tap0, 1, %lld, %s + q * %lld, %lld, S + q * %lld, %lld, tp, NULL, 1, 0, NULL, NULL, NULL, 0, %lld);",
	        CVP, VP, C, wname, M * C, C, MVP, VP, M / 4);
	uk_else(cg, ind);
	cg_line(cg, "/* whole 16-column runs: the columns up to the next multiple of 16 zeroed in V */");
	cg_line(cg, "const size_t t16 = ((size_t)tp + 15) / 16 * 16;");
	cg_line(cg, "for (size_t q = 0; q < %lld; q++)", 16 * C);
	cg_line(cg, "    for (size_t i = (size_t)tp; i < t16; i++)");
	cg_line(cg, "        V[q * %lld + i] = 0.0f;", VP);
	cg_line(cg, "for (size_t q = 0; q < 16; q++)");
	cg_line(cg, "    %s(%s + q * %lld, V + q * %lld, S + q * %lld, t16);", fprod, wname, M * C,
	        CVP, MVP);
	line_close(cg);
	cg_line(cg, "/* Y = A^T S A + bias: per row of S, s0 + s1 + s2 and s1 - s2 - s3, then the same down the rows */");
	line_open(cg, "for (size_t m = 0; m < %lld; m++) {", M, 0);
	cg_line(cg, "const float bm = %s;", p->bias ? "X2[m]" : "0.0f");
	if (inreg && e.xsc >= 0)
		cg_line(cg, "const float sm = X%d[m];", e.xsc);
	if (inreg && e.xsh >= 0)
		cg_line(cg, "const float hm = X%d[m];", e.xsh);
	line_open(cg, "for (size_t r = 0; r < nr; r++) {", 0, 0);
	cg_line(cg, "const float *restrict s = S + m * %lld + r * %lld;", VP, TW);
	cg_line(cg, "%s(s, u0, u1, bm);", fvout);
	line_open(cg, "for (size_t h = 0; h < 2; h++) {", 0, 0);
	cg_line(cg, "const size_t oh = 2 * (tr0 + r) + h;");
	if (p->OH % 2) {
		cg_line(cg, "if (oh >= %lld)", (long long)p->OH);
		cg_line(cg, "    break;");
	}
	cg_line(cg, "const float *restrict uh = h ? u1 : u0;");
	cg_line(cg, "float *restrict y = Y0 + ((n * %lld + m) * %lld + oh) * %lld;", M,
	        (long long)p->OH, (long long)p->OW);
	if (inreg && e.xres >= 0)
		cg_line(cg, "const float *restrict rr = X%d + ((n * %lld + m) * %lld + oh) * %lld;",
		        e.xres, M, (long long)p->OH, (long long)p->OW);
	cg_line(cg, "%s(uh, y%s%s%s);", frow, inreg && e.xsc >= 0 ? ", sm" : "",
	        inreg && e.xsh >= 0 ? ", hm" : "", inreg && e.xres >= 0 ? ", rr" : "");
	if (cg->epi && !inreg) {
		char base[160];
		snprintf(base, sizeof(base), "((n * %lld + m) * %lld + oh) * %lld", M, (long long)p->OH,
		         (long long)p->OW);
		conv_epilogue(cg, base, p->OW, p->OH * p->OW);
	}
	line_close(cg); /* h */
	line_close(cg); /* r */
	line_close(cg); /* m */
	line_close(cg); /* t */
	if (inreg)
		cg->epi_calls++;
	return true;
}

enum rl_status rl_emit_c_conv(struct rl_cgen *cg, uint32_t node)
{
	const struct rl_node *n = &cg->g->nodes[node];
	bool transposed = n->op == RL_OP_ConvTranspose;
	const struct rl_value *X = cg_in(cg, node, 0), *W = cg_in(cg, node, 1);
	const struct rl_value *B = cg_in(cg, node, 2), *Y = cg_out(cg, node, 0);
	enum rl_dtype dt = X->dtype;
	if (!rl_dtype_is_float(dt) || W->dtype != dt || Y->dtype != dt || (B && B->dtype != dt))
		return cg_error(cg, node, "%s on %s is not supported", rl_op_table[n->op].name,
		                rl_dtype_name(dt));
	struct conv_win w;
	const char *why = NULL;
	if (!conv_win_read(cg, node, transposed, &w, &why))
		return cg_error(cg, node, "%s", why);
	int64_t G = rl_node_attr_int(n, "group", 1);
	int64_t N = X->shape.d[0].v, C = X->shape.d[1].v, M = Y->shape.d[1].v;
	if (G < 1 || C % G || M % G)
		return cg_error(cg, node, "group %lld does not divide the channels", (long long)G);
	if (transposed ? W->shape.d[0].v != C || W->shape.d[1].v * G != M
	               : W->shape.d[0].v != M || W->shape.d[1].v * G != C)
		return cg_error(cg, node, "weight shape does not match the channels and group");
	if (B && (B->shape.rank != 1 || B->shape.d[0].v != M))
		return cg_error(cg, node, "bias must hold one value per output channel");
	if (rl_shape_numel(&Y->shape) == 0)
		return RL_OK;
	/* a 2-D Conv whose last axis is 1 everywhere (input, output, kernel, no
	 * pad: a 1-D convolution written as N x C x L x 1, as jax2tf and
	 * Keras export them) is the 1-D Conv over the same memory: its rows
	 * are then L long, not 1 (magika's 5x1 256->512 Conv on 512 x 1: in
	 * channels-on-vector mode a tile of 1 pixel, 12.3 ms, one thread) */
	if (!transposed && w.nsp == 2 && w.in[1] == 1 && w.out[1] == 1 && w.k[1] == 1 &&
	    w.pb[1] == 0)
		w.nsp = 1;
	int nsp = w.nsp;
	int64_t ks = prod(w.k, nsp);
	bool fast = !transposed && (dt == RL_DT_FLOAT || dt == RL_DT_DOUBLE) && ks > 0 &&
	            prod(w.in, nsp) > 0;
	struct conv2d p = {.N = N, .C = C, .M = M, .G = G, .bias = B != NULL};
	bool pointwise = true;
	for (int i = 0; i < nsp; i++)
		pointwise &= w.k[i] == 1 && w.s[i] == 1 && w.pb[i] == 0 && w.in[i] == w.out[i];
	if (fast && pointwise) {
		/* 1x1: the flattened plane, cut into rows whose width is a multiple
		 * of 4 where one divides it (so the column loop vectorizes) */
		int64_t P = prod(w.in, nsp), rw = 0;
		for (int64_t q = 512; q >= 4 && !rw; q -= 4)
			if (P % q == 0)
				rw = q;
		if (!rw || (P <= 2048 && P % 4 != 0))
			rw = P;
		if (rw > 2048)
			for (rw = 2048; P % rw; rw--)
				;
		p.H = p.OH = P / rw;
		p.W = p.OW = rw;
		p.KH = p.KW = p.SH = p.SW = p.DH = p.DW = 1;
	} else if (fast && nsp <= 2) {
		int a = nsp == 2 ? 0 : -1; /* index of the H axis, -1 for 1-D */
		p.H = a < 0 ? 1 : w.in[0];
		p.OH = a < 0 ? 1 : w.out[0];
		p.KH = a < 0 ? 1 : w.k[0];
		p.SH = a < 0 ? 1 : w.s[0];
		p.DH = a < 0 ? 1 : w.d[0];
		p.PT = a < 0 ? 0 : w.pb[0];
		p.W = w.in[nsp - 1];
		p.OW = w.out[nsp - 1];
		p.KW = w.k[nsp - 1];
		p.SW = w.s[nsp - 1];
		p.DW = w.d[nsp - 1];
		p.PL = w.pb[nsp - 1];
		int64_t wp = (p.OW - 1) * p.SW + (p.KW - 1) * p.DW + 1;
		if (wp > CONV_ROW_MAX)
			fast = false;
	} else {
		fast = false;
	}
	/* the split across threads: the tile pass's (tile.chunks), else the same rule */
	p.chunks = n->tile.chunks > 0 ? n->tile.chunks
	                              : rl_split_conv_chunks((double)N * (double)M *
	                                                     (double)prod(w.out, nsp) *
	                                                     (double)(C / G) * (double)ks);
	if (fast && !pointwise && nsp == 2 && dt == RL_DT_FLOAT && emit_conv_wino(cg, node, &p))
		return RL_OK;
	char sh[64];
	struct conv_band band;
	struct conv2d pb = p;
	if (pointwise) {
		/* band mode takes a 1x1 as one column of P rows: its bands are
		 * runs of the flattened plane */
		pb.H = pb.OH = p.H * p.W;
		pb.W = pb.OW = 1;
	}
	int64_t es = dt == RL_DT_DOUBLE ? 8 : 4;
	/* the tile pass's choice for small maps: channels on the vector lanes
	 * (float, group 1, one or two spatial axes); weights in the constants
	 * (also those NAME_init computes: a large ConstantOfShape) are packed
	 * at init, others (graph inputs) by each task.
	 * Static mode has no NAME_init to pack in (and no pool): the direct
	 * loops below, as for band mode. */
	if (!transposed && n->tile.conv == RL_CONV_CHANVEC && !cg->static_mode &&
	    dt == RL_DT_FLOAT && G == 1 && nsp <= 2 && ks > 0 && prod(w.in, nsp) > 0) {
		int a = nsp == 2 ? 0 : -1;
		struct conv2d pc = {
			.N = N, .C = C, .M = M, .G = 1, .bias = B != NULL,
			.H = a < 0 ? 1 : w.in[0], .OH = a < 0 ? 1 : w.out[0], .KH = a < 0 ? 1 : w.k[0],
			.SH = a < 0 ? 1 : w.s[0], .DH = a < 0 ? 1 : w.d[0], .PT = a < 0 ? 0 : w.pb[0],
			.W = w.in[nsp - 1], .OW = w.out[nsp - 1], .KW = w.k[nsp - 1],
			.SW = w.s[nsp - 1], .DW = w.d[nsp - 1], .PL = w.pb[nsp - 1], .chunks = p.chunks,
		};
		int64_t xbytes, obytes, wbytes;
		/* weights the tile pass saw as constant but the run computes keep
		 * band mode: the pass's rule for run-time weights did not weigh them
		 * (measured: light_squeezenet 3% slower with them packed per task,
		 * when its ConstantOfShape weights were still filled per run; since
		 * NAME_init computes those, this is only a guard) */
		bool wrun = !cg_value_stored_const(cg, n->in[1]);
		if ((!wrun || (!rl_value_is_const(cg->g, n->in[1]) &&
		               pc.OH * pc.OW >= CONV_CV_RUN_PIX)) &&
		    cv_fits(&pc, wrun, &xbytes, &obytes, &wbytes)) {
			cg_line(cg, "/* Conv, channels on vector lanes (the tile pass's choice): blocks of %d output channels x tiles of up to %d pixels of a row, weights packed %s */",
			        cv_cb(M), CONV_CV_NT, wrun ? "per task" : "at init");
			emit_conv_cv(cg, node, &pc, xbytes, obytes, wbytes);
			return RL_OK;
		}
	}
	if (transposed && convt_gemm_ok(cg, &w, dt, G)) {
		emit_convt_gemm(cg, &w, N, C, M, B != NULL);
	} else if (transposed) {
		cg_line(cg, "/* ConvTranspose, gather form: y[o] = b + sum x[i] * w[k] over o = i*s + k*d - pads */");
		emit_gather(cg, node, true, &w, N, C, M, G, B != NULL);
	} else if (fast && !pointwise && dt == RL_DT_FLOAT && emit_conv_dw(cg, &p)) {
		/* depthwise: the row form or the flat form (above) */
	} else if (fast && !cg->static_mode && conv_band_plan(&pb, es, &band)) {
		/* (not in static mode: band scratch is allocated per thread at init) */
		cg_line(cg, "/* Conv, band mode: per band of %lld output rows, the input rows it reads are copied (zero-padded, stride phases apart) to scratch; tiles of %d output channels x %d vectors sum weights x band over channels and taps in registers */",
		        (long long)band.R, band.mr, band.nv);
		emit_conv_band(cg, cg_ctype(dt), es, &pb, &band, dt == RL_DT_FLOAT && band.mr == 4);
	} else if (fast) {
		snprintf(sh, sizeof(sh), "%s", pointwise ? "1x1 as a GEMM over channels, " : "");
		cg_line(cg, "/* Conv, row form: %sblocks of output channels; each (zero-padded) input row is streamed into the block's output rows */",
		        sh);
		emit_conv2d(cg, cg_ctype(dt), &p);
	} else {
		cg_line(cg, "/* Conv, gather form: y[o] = b + sum x[o*s + k*d - pads] * w[k] */");
		emit_gather(cg, node, false, &w, N, C, M, G, B != NULL);
	}
	return RL_OK;
}
