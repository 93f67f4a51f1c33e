/*
 * emit_cuda.c - the CUDA backend: one .cu with one __global__ kernel per
 * kernel of the C backend's run plan, and a host side that allocates device
 * memory once and replays the whole run as a CUDA graph.
 *
 * What is shared with the C backend, so that both run the same program:
 * rl_emit_plan() (which nodes run, the fused groups that pass the driver's
 * checks, the run order, views, and the workspace offsets from the lifetime
 * plan), the elementwise expression table cg_elemwise_expr() and the
 * epilogue hook cg_epilogue(). What is CUDA's own:
 *
 *   - elementwise kernels (a single op or a fused group): one thread per
 *     output element in a grid-stride loop; broadcast inputs are indexed from
 *     the flat output index with literal strides;
 *   - MatMul and Gemm: a block tile of mc x nc outputs staged through shared
 *     memory kc deep, mr x nr outputs per thread in registers (the tile pass's
 *     GPU schedule when it gave one, else the defaults below); up to four rows
 *     (batch-1 decode) a GEMV that reads B once; float16/bfloat16 on tensor
 *     cores (mma.sync m16n8k16 on the tile pass's block tile, else WMMA); the
 *     fused epilogue runs on each output as it is stored. With
 *     --cuda-library cublas the plain ones call cuBLAS on the GPU instead
 *     (emulation keeps rlopt's kernel; blas_call below);
 *   - Conv: direct, one thread per output, with its fused epilogue;
 *   - Softmax, LogSoftmax, LayerNormalization, Reduce*: one block per row or
 *     output, partials reduced in shared memory;
 *   - Transpose, Expand, Slice, Concat, Split, Gather, Pad: one thread per
 *     element;
 *   - every other op the C backend implements: the C emitter's kernel body
 *     run on the GPU. When that emitter splits its outer loop (cg->par_n),
 *     each iteration is one GPU thread; otherwise the body runs on one thread
 *     (correct, slow: marked "serial" in the kernel's comment and counted in
 *     the file's banner). A body that needs the C backend's CPU runtime (the
 *     packed GEMM, the thread pool, resampling tables) is refused by name.
 *
 * Host side: three device allocations made once by NAME_init (workspace from
 * the plan's lifetime offsets, constants, and the caller's inputs and
 * outputs), the constants uploaded from the .cu or from NAME.weights, and
 * the whole run captured into a CUDA graph that every call replays.
 *
 * Barriers and emulation. A kernel that synchronizes its block is written
 * as phases: RL_THREADS { ... } RL_SYNC RL_THREADS { ... }. On the GPU
 * RL_THREADS is empty and RL_SYNC is __syncthreads(); under RL_CUDA_EMULATE
 * RL_THREADS is a loop over the block's threads, so a phase runs for every
 * thread before the next begins, which is what the barrier guarantees.
 * Per-thread state that lives across a barrier is declared RL_LOCAL and
 * read as RL_L(name) (a register on the GPU, an array over threads in
 * emulation); everything else is local to one phase.
 */#include "emit_cuda_impl.h"

#include "frontends/onnx/onnx.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------ */

static void sanitize(const char *in, char *out, size_t n)
{
	size_t k = 0;
	for (const char *p = in; *p && k + 1 < n; p++)
		out[k++] = isalnum((unsigned char)*p) ? *p : '_';
	out[k] = 0;
	if (!k || isdigit((unsigned char)out[0])) {
		memmove(out + 1, out, k + 1 < n ? k + 1 : n - 1);
		out[0] = '_';
		out[n - 1] = 0;
	}
}

/* Comment text: no terminator or control character from a name. */
void cu_ctext(const char *s, char *b, size_t n)
{
	size_t k = 0;
	for (const char *p = s; *p && k + 1 < n && k < 120; p++) {
		char c = *p;
		if (c == '*' && p[1] == '/')
			c = '_';
		if ((unsigned char)c < 32 || (unsigned char)c > 126)
			c = '?';
		b[k++] = c;
	}
	b[k] = 0;
}

static int64_t align_up(int64_t x)
{
	return (x + CU_ALIGN - 1) / CU_ALIGN * CU_ALIGN;
}

static int64_t value_bytes(const struct rl_graph *g, uint32_t v)
{
	int64_t ne = rl_shape_numel(&g->values[v].shape);
	return ne > 0 ? ne * (int64_t)rl_dtype_size(g->values[v].dtype) : 0;
}

/* Device pointer expression for value v, as the launch function sees it. */
static void dev_ptr(struct cu *d, uint32_t v, bool out, char *b, size_t n)
{
	if (v == RL_NONE) {
		snprintf(b, n, "(const float *)0");
		return;
	}
	const struct rl_plan_val *pv = &d->pl.vals[v];
	if (pv->st == RL_PLAN_ALIAS) {
		v = pv->alias;
		pv = &d->pl.vals[v];
	}
	const char *ct = cg_ctype(cu_val(d, v)->dtype), *cq = out ? "" : "const ";
	switch (pv->st) {
	case RL_PLAN_INPUT:
		snprintf(b, n, "(%s%s *)(%s_io + %lld)", cq, ct, d->prefix, (long long)d->io_in[pv->io]);
		break;
	case RL_PLAN_OUTPUT:
		snprintf(b, n, "(%s%s *)(%s_io + %lld)", cq, ct, d->prefix, (long long)d->io_out[pv->io]);
		break;
	case RL_PLAN_CONST:
		snprintf(b, n, "(%s%s *)(%s_cst + %lld)", cq, ct, d->prefix, (long long)d->coff[v]);
		break;
	case RL_PLAN_WORKSPACE:
		snprintf(b, n, "(%s%s *)(%s_ws + %lld)", cq, ct, d->prefix, (long long)pv->off);
		break;
	default:
		snprintf(b, n, "(%s%s *)0", cq, ct);
		break;
	}
}

/* ---- the kernels --------------------------------------------------------- */

static void kernel_name(struct cu *d, const struct rl_plan_unit *un, char *b, size_t n)
{
	struct rl_graph *g = d->g;
	char sn[64], s2[64];
	if (un->grp < 0) {
		sanitize(g->nodes[un->node].name, sn, 48);
		snprintf(b, n, "k%u_%s", un->k, sn);
		return;
	}
	const struct rl_cgen_group *gr = &d->pl.grps[un->grp];
	sanitize(g->nodes[gr->nodes[0]].name, sn, 28);
	sanitize(g->nodes[gr->nodes[gr->nnodes - 1]].name, s2, 28);
	snprintf(b, n, "k%u_fused_%.28s__%.28s", un->k, sn, s2);
}

static bool uses_ident(const char *s, const char *id)
{
	size_t l = strlen(id);
	for (const char *p = s ? strstr(s, id) : NULL; p; p = strstr(p + 1, id)) {
		bool before = p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
		bool after = isalnum((unsigned char)p[l]) || p[l] == '_';
		if (!before && !after)
			return true;
	}
	return false;
}

/* Where --cuda-library cublas leaves rlopt's own kernel: emulation, unless
 * -DRL_CUDA_EMULATE_CUBLAS asks for the cuBLAS calls emulated on the CPU. */
#define CU_EMU_OWN "#if defined(RL_CUDA_EMULATE) && !defined(RL_CUDA_EMULATE_CUBLAS)"

/* One __global__ function NAME<suffix>(X0.., Y0..) with `body`. */
static void kernel_def(struct cu *d, const char *kname, const char *suffix, const struct launch *L,
                       int nin, int nout, const uint32_t *ins, const uint32_t *outs,
                       const struct rl_buf *body)
{
	rl_buf_printf(&d->kernels, "__global__ void __launch_bounds__(%d) %s%s(", L->block > 0
	              ? L->block : 1, kname, suffix);
	for (int q = 0; q < nin + nout; q++) {
		bool out = q >= nin;
		uint32_t v = out ? outs[q - nin] : ins[q];
		enum rl_dtype dt = v == RL_NONE ? RL_DT_FLOAT : cu_val(d, v)->dtype;
		rl_buf_printf(&d->kernels, "%s%s%s *__restrict__ %c%d", q ? ", " : "",
		              out ? "" : "const ", cg_ctype(dt), out ? 'Y' : 'X', out ? q - nin : q);
	}
	rl_buf_printf(&d->kernels, "%s)\n{\n    RL_PDL_ENTRY\n", nin + nout ? "" : "void");
	if (L->serial)
		rl_buf_printf(&d->kernels, "    if (blockIdx.x != 0 || threadIdx.x != 0)\n"
		              "        return;\n");
	for (int q = 0; q < nin + nout; q++) {
		char id[16];
		snprintf(id, sizeof(id), "%c%d", q < nin ? 'X' : 'Y', q < nin ? q : q - nin);
		if (!uses_ident(body->s, id))
			rl_buf_printf(&d->kernels, "    (void)%s;\n", id);
	}
	rl_buf_printf(&d->kernels, "%s}\n", body->s ? body->s : "");
}

/*
 * The host's cuBLAS call for d->blas (--cuda-library cublas). cuBLAS is
 * column-major: row-major Y[M x N] = op(A) op(B) is, read column-major,
 * Y^T = op(B)^T op(A)^T, so the call passes B first with the dims swapped
 * (m = N, n = M) and each operand's transpose flag as stored. float32:
 * cublasSgemm (strided-batched for nb > 1), no TF32 (the handle's default
 * math mode); float16 and bfloat16: cublasGemmEx with float accumulation
 * (CUBLAS_COMPUTE_32F: tensor cores) and float alpha.
 */
static void blas_call(struct cu *d, const char *kname, uint32_t a, uint32_t bv, uint32_t y)
{
	const struct cu_blas *b = &d->blas;
	char pa[256], pb[256], py[256];
	dev_ptr(d, a, false, pa, sizeof(pa));
	dev_ptr(d, bv, false, pb, sizeof(pb));
	dev_ptr(d, y, true, py, sizeof(py));
	long long M = b->M, N = b->N, K = b->K;
	long long lda = b->ta ? M : K, ldb = b->tb ? K : N;
	const char *opa = b->ta ? "CUBLAS_OP_T" : "CUBLAS_OP_N", *opb = b->tb ? "CUBLAS_OP_T"
	                                                                      : "CUBLAS_OP_N";
	struct rl_buf *l = &d->launches;
	rl_buf_printf(l, "    { /* cuBLAS: Y[%lld x %lld] = %g A B%s, %lld time%s, as column-major "
	              "Y^T = B^T A^T */\n", M, N, b->alpha, b->post ? " (then the post kernel)" : "",
	              (long long)b->nb, b->nb == 1 ? "" : "s");
	rl_buf_printf(l, "        const float al = (float)%.17g, be = 0.0f;\n", b->alpha);
	if (b->dt == RL_DT_FLOAT && b->nb == 1)
		rl_buf_printf(l, "        if (rl_blas_check(cublasSgemm(%s_blas, %s, %s, %lld, %lld, %lld, "
		              "&al, %s, %lld, %s, %lld, &be, %s, %lld), \"%s\") != 0)\n", d->prefix, opb,
		              opa, N, M, K, pb, ldb, pa, lda, py, N, kname);
	else if (b->dt == RL_DT_FLOAT)
		rl_buf_printf(l, "        if (rl_blas_check(cublasSgemmStridedBatched(%s_blas, %s, %s, "
		              "%lld, %lld, %lld, &al, %s, %lld, %lldll, %s, %lld, %lldll, &be, %s, %lld, "
		              "%lldll, %lld), \"%s\") != 0)\n", d->prefix, opb, opa, N, M, K, pb, ldb,
		              (long long)b->sb, pa, lda, (long long)b->sa, py, N, M * N,
		              (long long)b->nb, kname);
	else {
		const char *ty = b->dt == RL_DT_FLOAT16 ? "CUDA_R_16F" : "CUDA_R_16BF";
		if (b->nb == 1)
			rl_buf_printf(l, "        if (rl_blas_check(cublasGemmEx(%s_blas, %s, %s, %lld, %lld, "
			              "%lld, &al, %s, %s, %lld, %s, %s, %lld, &be, %s, %s, %lld, "
			              "CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), \"%s\") != 0)\n", d->prefix,
			              opb, opa, N, M, K, pb, ty, ldb, pa, ty, lda, py, ty, N, kname);
		else
			rl_buf_printf(l, "        if (rl_blas_check(cublasGemmStridedBatchedEx(%s_blas, %s, %s, "
			              "%lld, %lld, %lld, &al, %s, %s, %lld, %lldll, %s, %s, %lld, %lldll, &be, "
			              "%s, %s, %lld, %lldll, %lld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT), "
			              "\"%s\") != 0)\n", d->prefix, opb, opa, N, M, K, pb, ty, ldb,
			              (long long)b->sb, pa, ty, lda, (long long)b->sa, py, ty, N, M * N,
			              (long long)b->nb, kname);
	}
	rl_buf_printf(l, "            return -1;\n    }\n");
}

static enum rl_status emit_kernels(struct cu *d)
{
	struct rl_graph *g = d->g;
	for (uint32_t u = 0; u < d->pl.nunits; u++) {
		const struct rl_plan_unit *un = &d->pl.units[u];
		char b[256];
		if (un->view) {
			char nm[128];
			cu_ctext(g->nodes[un->node].name, nm, sizeof(nm));
			dev_ptr(d, g->nodes[un->node].out[0], false, b, sizeof(b));
			rl_buf_printf(&d->launches, "    /* '%s' (%s): a view of %s, nothing to run */\n",
			              nm, rl_op_table[g->nodes[un->node].op].name, b);
			continue;
		}
		const struct rl_cgen_group *gr = un->grp >= 0 ? &d->pl.grps[un->grp] : NULL;
		struct rl_node *n = &g->nodes[un->node];
		struct rl_cgen *cg = &d->cg;
		char kname[128];
		kernel_name(d, un, kname, sizeof(kname));
		cg->body.len = 0;
		if (cg->body.s)
			cg->body.s[0] = 0;
		cg->indent = 0;
		cg->kname = kname;
		cg->par_n = cg->par_grain = 0;
		cg->simd = 0;
		cg->epi = NULL;
		d->blas.on = false;
		struct launch L = {0};
		enum rl_status st;
		const char *how;
		bool verbatim = false; /* the C emitter's body */
		if (gr && gr->anchor != RL_NONE &&
		    (g->nodes[gr->anchor].op == RL_OP_MatMul || g->nodes[gr->anchor].op == RL_OP_Gemm ||
		     g->nodes[gr->anchor].op == RL_OP_Conv)) {
			cg->epi = gr;
			cg->epi_calls = 0;
			cg->err[0] = 0;
			st = g->nodes[gr->anchor].op == RL_OP_Conv ? cu_k_conv(d, gr->anchor, &L)
			                                           : cu_k_matmul(d, gr->anchor, &L);
			cg->epi = NULL;
			if (st == RL_OK && cg->err[0])
				st = rl_graph_error(g, &g->nodes[gr->anchor], RL_ERR_UNSUPPORTED, "%s", cg->err);
			how = "its epilogue fused";
		} else if (gr && gr->anchor == RL_NONE) {
			st = cu_k_elemwise(d, gr, &L);
			how = "one thread per element";
		} else if (!gr && cg_elemwise_has_expr(n->op) && n->nout >= 1 &&
		           n->out[0] != RL_NONE && n->nin <= 16) {
			uint32_t one = un->node, ins[17];
			int ni = 0;
			for (int q = 0; q < n->nin; q++)
				ins[ni++] = n->in[q];
			struct rl_cgen_group sg = {.id = -1, .nodes = &one, .nnodes = 1, .anchor = RL_NONE,
			                           .in = ins, .nin = ni, .out = n->out, .nout = 1};
			st = cu_k_elemwise(d, &sg, &L);
			how = "one thread per element";
		} else if (!gr && n->op == RL_OP_Conv) {
			st = cu_k_conv(d, un->node, &L);
			how = "direct convolution, one thread per output";
		} else if (!gr && (n->op == RL_OP_MatMul || n->op == RL_OP_Gemm)) {
			st = cu_k_matmul(d, un->node, &L);
			how = "tiled product";
		} else if (!gr && n->op == RL_OP_QuantMatMul) {
			st = cu_k_qmatmul(d, un->node, &L);
			how = "quantized weights dequantized in registers, one warp per output channel";
		} else if (!gr && rl_op_table[n->op].family == RL_FAM_REDUCE &&
		           cu_k_reduce(d, un->node, &L)) {
			st = RL_OK;
			how = "one block per output";
		} else if (!gr && (n->op == RL_OP_Expand || n->op == RL_OP_Slice ||
		                   n->op == RL_OP_Concat || n->op == RL_OP_Split ||
		                   n->op == RL_OP_Gather) && cu_k_shape(d, un->node, &L)) {
			st = RL_OK;
			how = "one thread per element";
		} else if (!gr && (n->op == RL_OP_MaxPool || n->op == RL_OP_AveragePool) &&
		           cu_k_pool(d, un->node, &L)) {
			st = RL_OK;
			how = "one thread per output";
		} else if (!gr && n->op == RL_OP_Pad && cu_k_pad(d, un->node, &L)) {
			st = RL_OK;
			how = "one thread per output element";
		} else if (!gr && n->op == RL_OP_Transpose && cu_k_transpose(d, un->node, &L)) {
			st = RL_OK;
			how = "one thread per element";
		} else if (!gr && (n->op == RL_OP_Softmax || n->op == RL_OP_LogSoftmax ||
		                   n->op == RL_OP_LayerNormalization) && cu_k_rows(d, un->node, &L)) {
			st = RL_OK;
			how = "one block per row";
		} else {
			st = cu_k_fallback(d, un->node, gr, &L);
			verbatim = true;
			how = L.serial ? "serial: the C backend's loop nest on one thread (no parallel CUDA "
			                 "kernel for this op yet)"
			               : "the C backend's loop nest, one outer iteration per thread";
		}
		if (st != RL_OK)
			return st;
		/* comment, signature, body */
		int nin = gr ? gr->nin : n->nin, nout = gr ? gr->nout : n->nout;
		const uint32_t *ins = gr ? gr->in : n->in, *outs = gr ? gr->out : n->out;
		if (gr) {
			rl_buf_printf(&d->kernels, "/* fused group of %d ONNX nodes (%s):\n", gr->nnodes, how);
			for (int j = 0; j < gr->nnodes; j++) {
				char nm[128];
				cu_ctext(g->nodes[gr->nodes[j]].name, nm, sizeof(nm));
				rl_buf_printf(&d->kernels, " *   '%s' (%s)\n", nm,
				              rl_op_table[g->nodes[gr->nodes[j]].op].name);
			}
			rl_buf_printf(&d->kernels, " *");
		} else {
			char nm[128];
			cu_ctext(n->name, nm, sizeof(nm));
			rl_buf_printf(&d->kernels, "/* node '%s' (%s; %s)\n *", nm, rl_op_table[n->op].name,
			              how);
		}
		for (int q = 0; q < nin + nout; q++) {
			uint32_t v = q < nin ? ins[q] : outs[q - nin];
			char sb[128];
			if (v == RL_NONE)
				continue;
			rl_buf_printf(&d->kernels, "%s %c%d %s[%s]", q == nin ? " ->" : q ? "," : "",
			              q < nin ? 'X' : 'Y', q < nin ? q : q - nin,
			              rl_dtype_name(cu_val(d, v)->dtype),
			              rl_shape_str(&cu_val(d, v)->shape, sb, sizeof(sb)));
		}
		if (d->blas.on)
			rl_buf_printf(&d->kernels, "\n * --cuda-library cublas: on the GPU cuBLAS computes this "
			              "product%s%s%s; this kernel,\n * rlopt's own, is compiled and run in "
			              "emulation only (there is no cuBLAS on the CPU;\n * -DRL_CUDA_EMULATE_CUBLAS "
			              "emulates the cuBLAS call%s instead).", d->blas.post ? ",\n * then " : "",
			              d->blas.post ? kname : "", d->blas.post ? "_post applies what cuBLAS does "
			              "not (Gemm's C, the epilogue)" : "", d->blas.post ? " and runs the post "
			              "kernel" : "");
		/* the C loop nests run verbatim may set a counter they then do not
		 * read (LpPool's tap count): nvcc's "set but never used" is off for them */
		rl_buf_printf(&d->kernels, "\n */\n");
		if (d->blas.on) /* rlopt's kernel: plain emulation only */
			rl_buf_printf(&d->kernels, "%s\n", CU_EMU_OWN);
		if (verbatim)
			rl_buf_printf(&d->kernels, "#ifdef __CUDACC__\n#pragma nv_diagnostic push\n"
			              "#pragma nv_diag_suppress 550\n#endif\n");
		kernel_def(d, kname, "", &L, nin, nout, ins, outs, &cg->body);
		if (verbatim)
			rl_buf_printf(&d->kernels, "#ifdef __CUDACC__\n#pragma nv_diagnostic pop\n#endif\n");
		if (d->blas.on && d->blas.post) { /* the post kernel: wherever cuBLAS is called */
			rl_buf_printf(&d->kernels, "#else\n");
			kernel_def(d, kname, "_post", &d->blas.pl, nin, nout, ins, outs, &d->blas_post);
		}
		if (d->blas.on)
			rl_buf_printf(&d->kernels, "#endif\n");
		rl_buf_printf(&d->kernels, "\n");
		/* the launch */
		if (L.grid <= 0)
			continue;
		struct rl_buf args = {0};
		for (int q = 0; q < nin + nout; q++) {
			bool out = q >= nin;
			dev_ptr(d, out ? outs[q - nin] : ins[q], out, b, sizeof(b));
			if ((out ? outs[q - nin] : ins[q]) == RL_NONE) /* an absent optional tensor */
				snprintf(b, sizeof(b), "(%s%s *)0", out ? "" : "const ", cg_ctype(RL_DT_FLOAT));
			rl_buf_printf(&args, ", %s", b);
		}
		if (d->blas.on)
			rl_buf_printf(&d->launches, "%s\n    /* emulation: rlopt's own kernel (cuBLAS is "
			              "GPU-only; -DRL_CUDA_EMULATE_CUBLAS emulates the call instead) */\n",
			              CU_EMU_OWN);
		/* init names only kernels the GPU build has: one cuBLAS replaces is emulation's */
		bool on_gpu = !d->blas.on;
		if (!d->first_kernel[0] && on_gpu)
			snprintf(d->first_kernel, sizeof(d->first_kernel), "%s", kname);
		if (L.smem > 0) {
			rl_buf_printf(&d->launches, "    RL_LAUNCH_SMEM(%s, %lld, %d, %d%s);\n", kname,
			              (long long)L.grid, L.block, L.smem, args.s ? args.s : "");
			if (L.smem > 48 * 1024 && on_gpu)
				rl_buf_printf(&d->smem_attr, "    if (cudaFuncSetAttribute(%s, "
				              "cudaFuncAttributeMaxDynamicSharedMemorySize, %d) != cudaSuccess)\n"
				              "        goto fail;\n", kname, L.smem);
		} else {
			rl_buf_printf(&d->launches, "    %s(%s, %lld, %d%s);\n", L.phased ? "RL_LAUNCH_PHASED"
			              : "RL_LAUNCH", kname, (long long)L.grid, L.block, args.s ? args.s : "");
		}
		if (d->blas.on) {
			rl_buf_printf(&d->launches, "#else\n");
			blas_call(d, kname, ins[0], ins[1], outs[0]);
			if (d->blas.post)
				rl_buf_printf(&d->launches, "    RL_LAUNCH(%s_post, %lld, %d%s);\n", kname,
				              (long long)d->blas.pl.grid, d->blas.pl.block, args.s ? args.s : "");
			rl_buf_printf(&d->launches, "#endif\n");
		}
		rl_buf_free(&args);
	}
	return RL_OK;
}

/* ---- the file's fixed text ---------------------------------------------- */

static const char prelude[] =
	"#include <math.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
	"#include <string.h>\n\n"
	"#ifdef RL_CUDA_EMULATE\n"
	"/*\n"
	" * Emulation (g++ -x c++ -DRL_CUDA_EMULATE): the same kernels on the CPU.\n"
	" * RL_LAUNCH runs a plain kernel once per thread of every block, in order;\n"
	" * RL_LAUNCH_PHASED runs a barrier kernel once per block, and its\n"
	" * RL_THREADS phases loop over the block's threads, so every thread\n"
	" * finishes a phase before any starts the next (what __syncthreads gives).\n"
	" */\n"
	"#define __global__ static\n#define __device__\n#define __host__\n"
	"#define __forceinline__ inline\n#define __launch_bounds__(n)\n"
	"#define __restrict__ __restrict\n#define __shared__ static\n"
	"struct rl_dim3 { unsigned x, y, z; };\n"
	"static struct rl_dim3 threadIdx, blockIdx, blockDim __attribute__((unused)),\n"
	"    gridDim __attribute__((unused));\n"
	"#define RL_MAX_BLOCK 1024\n"
	"#define RL_THREADS for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++)\n"
	"#define RL_SYNC\n"
	"#define RL_LOCAL(T, name, dims) static T name##_t[RL_MAX_BLOCK] dims\n"
	"#define RL_L(name) name##_t[threadIdx.x]\n"
	"#define RL_GRID(g, b) \\\n"
	"    gridDim.x = (unsigned)(g), gridDim.y = gridDim.z = 1, blockDim.x = (unsigned)(b), \\\n"
	"    blockDim.y = blockDim.z = 1, blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0\n"
	"/* a crash names the kernel, block and thread it happened in */\n"
	"#include <signal.h>\n#include <unistd.h>\n"
	"static const char *rl_emu_kernel = \"(none)\";\n"
	"static void rl_emu_signal(int sig)\n{\n"
	"    char b[256];\n"
	"    int n = snprintf(b, sizeof(b), \"emulation: signal %d in kernel %s, block %u, thread %u\\n\",\n"
	"                     sig, rl_emu_kernel, blockIdx.x, threadIdx.x);\n"
	"    if (n > 0 && write(2, b, (size_t)n) < 0)\n        _exit(70);\n"
	"    _exit(70);\n}\n"
	"static inline void rl_emu_trap(void)\n{\n"
	"    signal(SIGSEGV, rl_emu_signal);\n    signal(SIGFPE, rl_emu_signal);\n"
	"    signal(SIGBUS, rl_emu_signal);\n    signal(SIGILL, rl_emu_signal);\n}\n"
	"#define RL_LAUNCH(k, g, b, ...) do { RL_GRID(g, b); rl_emu_kernel = #k; \\\n"
	"    for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++) \\\n"
	"        for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++) \\\n"
	"            k(__VA_ARGS__); } while (0)\n"
	"#define RL_LAUNCH_PHASED(k, g, b, ...) do { RL_GRID(g, b); rl_emu_kernel = #k; \\\n"
	"    for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++) \\\n"
	"        k(__VA_ARGS__); } while (0)\n"
	"#define RL_LAUNCH_SMEM(k, g, b, sm, ...) RL_LAUNCH_PHASED(k, g, b, __VA_ARGS__)\n"
	"#define RL_PDL_ENTRY\n"
	"#define RL_UNROLL\n"
	"typedef int cudaError_t;\ntypedef void *cudaStream_t;\n"
	"enum { cudaSuccess = 0, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,\n"
	"       cudaMemcpyDeviceToDevice };\n"
	"static inline cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }\n"
	"static inline cudaError_t cudaFree(void *p) { free(p); return 0; }\n"
	"static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int k)\n"
	"{ (void)k; if (n) memmove(d, s, n); return 0; }\n"
	"static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int k, cudaStream_t t)\n"
	"{ (void)t; return cudaMemcpy(d, s, n, k); }\n"
	"static inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return 0; }\n"
	"static inline cudaError_t cudaGetLastError(void) { return 0; }\n"
	"static inline const char *cudaGetErrorString(cudaError_t e) { (void)e; return \"emulation error\"; }\n"
	"#define RL_NO_GRAPH 1\n"
	"/* 128-bit loads and stores (ld.global.nc.v4 / st.global.v4 on the GPU) */\n"
	"struct uint4 { unsigned x, y, z, w; };\nstruct float4 { float x, y, z, w; };\n"
	"static inline __attribute__((unused)) uint4 rl_ld16u(const void *p) { uint4 v; memcpy(&v, p, 16); return v; }\n"
	"static inline __attribute__((unused)) float4 rl_ld16f(const void *p) { float4 v; memcpy(&v, p, 16); return v; }\n"
	"static inline __attribute__((unused)) void rl_st16f(void *p, float4 v) { memcpy(p, &v, 16); }\n"
	"/* the float whose bits are u */\n"
	"static inline __attribute__((unused)) float rl_bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
	"#else\n"
	"#include <cuda_runtime.h>\n"
	"static __device__ __forceinline__ __attribute__((unused)) uint4 rl_ld16u(const void *p) { return __ldg((const uint4 *)p); }\n"
	"static __device__ __forceinline__ __attribute__((unused)) float4 rl_ld16f(const void *p) { return __ldg((const float4 *)p); }\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_st16f(void *p, float4 v) { *(float4 *)p = v; }\n"
	"static __device__ __forceinline__ __attribute__((unused)) float rl_bits_f(uint32_t u) { return __uint_as_float(u); }\n"
	"#define RL_THREADS\n#define RL_SYNC __syncthreads();\n"
	"/* loops over a thread's register arrays: unrolled, so the arrays stay in registers */\n"
	"#define RL_UNROLL _Pragma(\"unroll\")\n"
	"#define RL_LOCAL(T, name, dims) T name dims\n#define RL_L(name) name\n"
	"/* -DRL_CUDA_NO_GRAPH: launch kernel by kernel on every run (for debugging\n"
	" * and profiling: each launch is waited for, checked, and named when it\n"
	" * fails) instead of replaying the CUDA graph captured at init */\n"
	"#ifdef RL_CUDA_NO_GRAPH\n#define RL_NO_GRAPH 1\n"
	"static inline int rl_check(cudaStream_t s, const char *k)\n{\n"
	"    cudaError_t e = cudaStreamSynchronize(s);\n"
	"    if (e == cudaSuccess)\n        e = cudaGetLastError();\n"
	"    if (e != cudaSuccess)\n"
	"        fprintf(stderr, \"kernel %s: %s\\n\", k, cudaGetErrorString(e));\n"
	"    return e == cudaSuccess ? 0 : -1;\n}\n"
	"#define RL_LAUNCH(k, g, b, ...) do { k<<<(g), (b), 0, s>>>(__VA_ARGS__); \\\n"
	"    if (rl_check(s, #k) != 0) return -1; } while (0)\n"
	"#define RL_LAUNCH_SMEM(k, g, b, sm, ...) do { k<<<(g), (b), (sm), s>>>(__VA_ARGS__); \\\n"
	"    if (rl_check(s, #k) != 0) return -1; } while (0)\n"
	"#else\n"
	"/* Programmatic dependent launch (sm_90 on, where init finds the kernels\n"
	" * built for it): each kernel is launched as allowed to start before the one\n"
	" * before it ends, and begins with RL_PDL_ENTRY, which waits for that one to\n"
	" * finish and its writes to be visible (griddepcontrol.wait) before reading\n"
	" * anything, then lets the next kernel launch. What overlaps is the launch\n"
	" * and block set-up of the next kernel with the tail of this one: the gap\n"
	" * between the kernels of a replayed graph. */\n"
	"static int rl_pdl __attribute__((unused));\n"
	"#define RL_LAUNCH_X(k, g, b, sm, ...) do { \\\n"
	"    if (rl_pdl) { \\\n"
	"        cudaLaunchConfig_t c_ = {}; cudaLaunchAttribute a_[1]; \\\n"
	"        a_[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; \\\n"
	"        a_[0].val.programmaticStreamSerializationAllowed = 1; \\\n"
	"        c_.gridDim = dim3((unsigned)(g)); c_.blockDim = dim3((unsigned)(b)); \\\n"
	"        c_.dynamicSmemBytes = (sm); c_.stream = s; c_.attrs = a_; c_.numAttrs = 1; \\\n"
	"        if (cudaLaunchKernelEx(&c_, k, ##__VA_ARGS__) != cudaSuccess) return -1; \\\n"
	"    } else { \\\n"
	"        k<<<(g), (b), (sm), s>>>(__VA_ARGS__); \\\n"
	"    } } while (0)\n"
	"#define RL_LAUNCH(k, g, b, ...) RL_LAUNCH_X(k, g, b, 0, ##__VA_ARGS__)\n"
	"/* a kernel with dynamic shared memory (rl_dsmem) of sm bytes */\n"
	"#define RL_LAUNCH_SMEM(k, g, b, sm, ...) RL_LAUNCH_X(k, g, b, sm, ##__VA_ARGS__)\n"
	"#endif\n"
	"#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
	"#define RL_PDL_ENTRY asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\"); \\\n"
	"    asm volatile(\"griddepcontrol.launch_dependents;\\n\" ::: \"memory\");\n"
	"#else\n"
	"#define RL_PDL_ENTRY\n"
	"#endif\n"
	"#define RL_LAUNCH_PHASED RL_LAUNCH\n"
	"#endif\n"
	"#define restrict __restrict__\n\n";

/* Tensor cores: nvcuda::wmma on the GPU; in emulation a fragment holds its
 * whole 16 x 16 tile in float, so each thread computes its warp's tile (the
 * warp's stores are identical). Row-major operands only, as the kernels use. */
static const char wmma_prelude[] =
	"#ifdef RL_CUDA_EMULATE\n"
	"typedef uint16_t __half;\n"
	"/* bfloat16 is a distinct type here so the fragment loads convert it as such */\n"
	"struct __nv_bfloat16 { uint16_t x; };\n"
	"#define __align__(n) __attribute__((aligned(n)))\n"
	"#define __ushort_as_half(x) ((__half)(x))\n"
	"static inline __nv_bfloat16 __ushort_as_bfloat16(uint16_t x) { __nv_bfloat16 b = {x}; return b; }\n"
	"namespace nvcuda {\nnamespace wmma {\n"
	"struct matrix_a;\nstruct matrix_b;\nstruct accumulator;\nstruct row_major;\n"
	"enum layout_t { mem_row_major, mem_col_major };\n"
	"template <typename Use, int M, int N, int K, typename T, typename Layout = void>\n"
	"struct fragment { float x[256]; };\n"
	"template <typename Use, typename T, typename L>\n"
	"inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float v)\n"
	"{ for (int i = 0; i < 256; i++) f.x[i] = v; }\n"
	"template <typename Use, typename L>\n"
	"inline void load_matrix_sync(fragment<Use, 16, 16, 16, __half, L> &f, const __half *p, unsigned ld)\n"
	"{ for (int r = 0; r < 16; r++) for (int c = 0; c < 16; c++) f.x[r * 16 + c] = rl_h2f(p[r * ld + c]); }\n"	"template <typename Use, typename L>\n"
	"inline void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, L> &f, const __nv_bfloat16 *p,\n"
	"                             unsigned ld)\n"
	"{ for (int r = 0; r < 16; r++) for (int c = 0; c < 16; c++) f.x[r * 16 + c] = rl_b2f(p[r * ld + c].x); }\n"
	"template <typename T, typename La, typename Lb>\n"
	"inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,\n"
	"                     const fragment<matrix_a, 16, 16, 16, T, La> &a,\n"
	"                     const fragment<matrix_b, 16, 16, 16, T, Lb> &b,\n"
	"                     const fragment<accumulator, 16, 16, 16, float> &c)\n"
	"{\n    float t[256];\n"
	"    for (int i = 0; i < 16; i++)\n        for (int j = 0; j < 16; j++) {\n"
	"            float s = c.x[i * 16 + j];\n"
	"            for (int k = 0; k < 16; k++)\n                s += a.x[i * 16 + k] * b.x[k * 16 + j];\n"
	"            t[i * 16 + j] = s;\n        }\n"
	"    for (int i = 0; i < 256; i++)\n        d.x[i] = t[i];\n}\n"
	"inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,\n"
	"                              unsigned ld, layout_t l)\n"
	"{ (void)l; for (int r = 0; r < 16; r++) for (int c = 0; c < 16; c++) p[r * ld + c] = f.x[r * 16 + c]; }\n"
	"}\n}\n"
	"#else\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n#include <mma.h>\n#endif\n"
	"using namespace nvcuda;\n"
	"typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> rl_wmma_acc;\n\n";

/* mma.sync.aligned.m16n8k16 with float accumulators: the PTX instruction on
 * the GPU (sm_80 on); in emulation the warp-wide operation on the 32 lanes'
 * registers, gathered and scattered by the documented fragment layout (the
 * kernel's comment spells it out), so the layout is checked on the CPU. */
static const char mma_prelude[] =
	"#ifdef RL_CUDA_EMULATE\n"
	"#ifndef __align__\n#define __align__(n) __attribute__((aligned(n)))\n#endif\n"
	"/* two consecutive 16-bit elements as one register, the lower index in the low half */\n"
	"static inline uint32_t rl_ld2h(const uint16_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 16; }\n"
	"static inline void rl_st16s(void *p, uint4 v) { memcpy(p, &v, 16); }\n"
	"/* the warp-wide mma of tile (i, j) from lanes' fragments with MI x NJ tiles a warp:\n"
	" * acc[lane][MI][NJ][4], a[lane][MI][4], b[lane][NJ][2] */\n"
	"static __attribute__((unused)) void rl_emu_mma_n(float *acc, const uint32_t *a, const uint32_t *b, int MI, int NJ,\n"
	"                         int i, int j, int bf)\n"
	"{\n"
	"    float A[16][16], B[16][8], D[16][8];\n"
	"    for (int l = 0; l < 32; l++) {\n"
	"        const int g = l / 4, q = l % 4;\n"
	"        for (int h = 0; h < 4; h++) /* reg h: row g + 8 (h & 1), k 2q + 8 (h >> 1) */\n"
	"            for (int e = 0; e < 2; e++) {\n"
	"                const uint16_t x = (uint16_t)(a[(l * MI + i) * 4 + h] >> (16 * e));\n"
	"                A[g + (h & 1) * 8][2 * q + (h >> 1) * 8 + e] = bf ? rl_b2f(x) : rl_h2f(x);\n"
	"            }\n"
	"        for (int h = 0; h < 2; h++) /* reg h: k 2q + 8h, column g */\n"
	"            for (int e = 0; e < 2; e++) {\n"
	"                const uint16_t x = (uint16_t)(b[(l * NJ + j) * 2 + h] >> (16 * e));\n"
	"                B[2 * q + h * 8 + e][g] = bf ? rl_b2f(x) : rl_h2f(x);\n"
	"            }\n"
	"        for (int r = 0; r < 4; r++) /* c_r: row g + 8 (r >> 1), column 2q + (r & 1) */\n"
	"            D[g + (r >> 1) * 8][2 * q + (r & 1)] = acc[((l * MI + i) * NJ + j) * 4 + r];\n"
	"    }\n"
	"    for (int r = 0; r < 16; r++)\n"
	"        for (int c = 0; c < 8; c++) {\n"
	"            float s = D[r][c];\n"
	"            for (int k = 0; k < 16; k++)\n"
	"                s += A[r][k] * B[k][c];\n"
	"            D[r][c] = s;\n"
	"        }\n"
	"    for (int l = 0; l < 32; l++)\n"
	"        for (int r = 0; r < 4; r++)\n"
	"            acc[((l * MI + i) * NJ + j) * 4 + r] = D[l / 4 + (r >> 1) * 8][2 * (l % 4) + (r & 1)];\n"
	"}\n"
	"/* k_mma's 2 x 4 tiles: acc[lane][2][4][4], a[lane][2][4], b[lane][4][2] */\n"
	"static __attribute__((unused)) void rl_emu_mma(float (*acc)[2][4][4], const uint32_t (*a)[2][4],\n"
	"                                               const uint32_t (*b)[4][2], int i, int j, int bf)\n"
	"{\n"
	"    rl_emu_mma_n(&acc[0][0][0][0], &a[0][0][0], &b[0][0][0], 2, 4, i, j, bf);\n"
	"}\n"
	"/* cp.async as a copy (zeros for a source size of 0); its groups need no waiting */\n"
	"static inline __attribute__((unused)) void rl_cp16(void *s, const void *g, int n) { if (n) memcpy(s, g, 16); else memset(s, 0, 16); }\n"
	"static inline __attribute__((unused)) void rl_cp_commit(void) {}\n"
	"#define rl_cp_wait(n) ((void)0)\n"
	"#else\n"
	"/* shared memory: 4-byte fragment loads, 16-byte tile stores (aligned by construction) */\n"
	"static __device__ __forceinline__ __attribute__((unused)) uint32_t rl_ld2h(const uint16_t *p) { return *(const uint32_t *)p; }\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_st16s(void *p, uint4 v) { *(uint4 *)p = v; }\n"
	"/* cp.async: 16 bytes global -> shared, the bytes past n zero-filled; a stage is one commit group */\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_cp16(void *s, const void *g, int n)\n"
	"{\n"
	"    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"((unsigned)__cvta_generic_to_shared(s)), \"l\"(g), \"r\"(n));\n"
	"}\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_cp_commit(void) { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n"
	"/* at most n of this thread's newest commit groups still in flight (n a literal) */\n"
	"#define rl_cp_wait(n) asm volatile(\"cp.async.wait_group \" #n \";\\n\" ::: \"memory\")\n"
	"/* ldmatrix .x4: lane l gives the address of row l % 8 of matrix l / 8; register i gets matrix i */\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_ldsm4(uint32_t *r, const void *p)\n"
	"{\n"
	"    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
	"                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"((unsigned)__cvta_generic_to_shared(p)));\n"
	"}\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_ldsm4t(uint32_t *r, const void *p)\n"
	"{\n"
	"    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
	"                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"((unsigned)__cvta_generic_to_shared(p)));\n"
	"}\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_mma_f16(float *d, const uint32_t *a, const uint32_t *b)\n"
	"{\n"
	"    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, \"\n"
	"                 \"{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
	"                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
	"                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
	"}\n"
	"static __device__ __forceinline__ __attribute__((unused)) void rl_mma_bf16(float *d, const uint32_t *a, const uint32_t *b)\n"
	"{\n"
	"    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, \"\n"
	"                 \"{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
	"                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
	"                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
	"}\n"
	"#endif\n\n";

/* --cuda-library cublas: the status check of a cuBLAS call, and, for
 * -DRL_CUDA_EMULATE -DRL_CUDA_EMULATE_CUBLAS, the calls the file makes
 * emulated on the CPU (column-major, float accumulation), so that the
 * argument mapping and the post kernels are checked without a GPU. */
static const char cublas_prelude[] =
	"#if !defined(RL_CUDA_EMULATE)\n"
	"/* --cuda-library cublas: plain products call cuBLAS (link with -lcublas);\n"
	" * the handle, bound to the run's stream with its own workspace (so capturing\n"
	" * the run into a CUDA graph allocates nothing), is made by init */\n"
	"#include <cublas_v2.h>\n"
	"#define RL_BLAS_WS_BYTES ((size_t)32 << 20)\n"
	"#elif defined(RL_CUDA_EMULATE_CUBLAS)\n"
	"/* emulation with the cuBLAS calls (-DRL_CUDA_EMULATE_CUBLAS): each call is a\n"
	" * column-major GEMM on the CPU, C = alpha op(A) op(B) + beta C per batch,\n"
	" * and the post kernels run after it as on the GPU */\n"
	"typedef int cublasStatus_t;\n"
	"enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_COMPUTE_32F = 0,\n"
	"       CUBLAS_GEMM_DEFAULT = 0, CUDA_R_32F = 0, CUDA_R_16F = 1, CUDA_R_16BF = 2 };\n"
	"static float rl_emu_blas_ld(const void *p, int t, long long i)\n{\n"
	"    return t == CUDA_R_32F ? ((const float *)p)[i] : t == CUDA_R_16F ? rl_h2f(((const uint16_t *)p)[i])\n"
	"                                                                     : rl_b2f(((const uint16_t *)p)[i]);\n}\n"
	"static cublasStatus_t rl_emu_gemm(int ta, int tb, int m, int n, int k, const float *al,\n"
	"                                  const void *A, int tA, int lda, long long sa, const void *B,\n"
	"                                  int tB, int ldb, long long sb, const float *be, void *C, int tC,\n"
	"                                  int ldc, long long sc, int batch)\n{\n"
	"    for (int bt = 0; bt < batch; bt++)\n"
	"        for (int j = 0; j < n; j++)\n"
	"            for (int i = 0; i < m; i++) {\n"
	"                float s = 0;\n"
	"                for (int l = 0; l < k; l++)\n"
	"                    s += rl_emu_blas_ld(A, tA, bt * sa + (ta ? l + (long long)i * lda : i + (long long)l * lda)) *\n"
	"                         rl_emu_blas_ld(B, tB, bt * sb + (tb ? j + (long long)l * ldb : l + (long long)j * ldb));\n"
	"                const long long o = bt * sc + i + (long long)j * ldc;\n"
	"                const float v = *al * s + (*be != 0.0f ? *be * rl_emu_blas_ld(C, tC, o) : 0.0f);\n"
	"                if (tC == CUDA_R_32F)\n                    ((float *)C)[o] = v;\n"
	"                else\n"
	"                    ((uint16_t *)C)[o] = tC == CUDA_R_16F ? rl_f2h(v) : rl_f2b(v);\n"
	"            }\n"
	"    return CUBLAS_STATUS_SUCCESS;\n}\n"
	"#define cublasSgemm(h, ta, tb, m, n, k, al, A, lda, B, ldb, be, C, ldc) \\\n"
	"    rl_emu_gemm(ta, tb, m, n, k, al, A, CUDA_R_32F, lda, 0, B, CUDA_R_32F, ldb, 0, be, C, CUDA_R_32F, ldc, 0, 1)\n"
	"#define cublasSgemmStridedBatched(h, ta, tb, m, n, k, al, A, lda, sa, B, ldb, sb, be, C, ldc, sc, nb) \\\n"
	"    rl_emu_gemm(ta, tb, m, n, k, al, A, CUDA_R_32F, lda, sa, B, CUDA_R_32F, ldb, sb, be, C, CUDA_R_32F, ldc, sc, nb)\n"
	"#define cublasGemmEx(h, ta, tb, m, n, k, al, A, tA, lda, B, tB, ldb, be, C, tC, ldc, ct, algo) \\\n"
	"    rl_emu_gemm(ta, tb, m, n, k, al, A, tA, lda, 0, B, tB, ldb, 0, be, C, tC, ldc, 0, 1)\n"
	"#define cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, al, A, tA, lda, sa, B, tB, ldb, sb, be, C, tC, \\\n"
	"                                   ldc, sc, nb, ct, algo) \\\n"
	"    rl_emu_gemm(ta, tb, m, n, k, al, A, tA, lda, sa, B, tB, ldb, sb, be, C, tC, ldc, sc, nb)\n"
	"#endif\n"
	"#if !defined(RL_CUDA_EMULATE) || defined(RL_CUDA_EMULATE_CUBLAS)\n"
	"static int rl_blas_check(cublasStatus_t st, const char *k)\n{\n"
	"    if (st != CUBLAS_STATUS_SUCCESS)\n"
	"        fprintf(stderr, \"cuBLAS call of kernel %s failed: status %d\\n\", k, (int)st);\n"
	"    return st == CUBLAS_STATUS_SUCCESS ? 0 : -1;\n}\n"
	"#endif\n\n";

/* The scalar helpers, callable from kernels and host code alike. */
static void emit_helper(struct rl_buf *c, const char *text)
{
	const char *from = "static inline __attribute__((unused))";
	for (const char *p = text; *p;) {
		const char *q = strstr(p, from);
		if (!q) {
			rl_buf_printf(c, "%s", p);
			break;
		}
		rl_buf_printf(c, "%.*sstatic __host__ __device__ inline __attribute__((unused))",
		              (int)(q - p), p);
		p = q + strlen(from);
	}
}

/* Constant bytes as a string literal: printable ASCII as itself, the rest
 * as three-digit octal escapes (which never run into a following digit). */
static void emit_const(struct cu *d, uint32_t v)
{
	const struct rl_value *x = cu_val(d, v);
	const unsigned char *p = x->data;
	char sn[48];
	sanitize(x->name, sn, sizeof(sn));
	rl_buf_printf(&d->c, "/* '%s' %s, %zu bytes */\nstatic const char %s_h%u[%zu] =\n    \"",
	              sn, rl_dtype_name(x->dtype), x->nbytes, d->prefix, v, x->nbytes + 1);
	size_t col = 0;
	for (size_t i = 0; i < x->nbytes; i++) {
		unsigned c = p[i];
		if (c >= 32 && c < 127 && c != '\\' && c != '"' && c != '?')
			rl_buf_printf(&d->c, "%c", (char)c), col++;
		else
			rl_buf_printf(&d->c, "\\%03o", c), col += 4;
		if (col >= 96 && i + 1 < x->nbytes) {
			rl_buf_printf(&d->c, "\"\n    \"");
			col = 0;
		}
	}
	rl_buf_printf(&d->c, "\";\n");
}

static void dims_list(const struct rl_shape *s, char *b, size_t n)
{
	size_t p = 0;
	b[0] = 0;
	for (int i = 0; i < s->rank; i++)
		p += (size_t)snprintf(b + p, n - p, "%s%lld", i ? ", " : "", (long long)s->d[i].v);
	if (!s->rank)
		snprintf(b, n, "0");
}

/* A parameter name for an input or output: the C backend's, with a '_'
 * after a C++ keyword (the .cu is C++: an output named "and" or "new"). */
static void io_name(const struct rl_value *v, bool out_of_input, char *b, size_t n)
{
	static const char *const kw[] = {
		"and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor",
		"xor_eq", "bool", "true", "false", "class", "new", "delete", "this", "template",
		"typename", "operator", "private", "protected", "public", "namespace", "using", "try",
		"catch", "throw", "virtual", "friend", "explicit", "export", "mutable", "typeid",
		"nullptr", "decltype", "constexpr", "noexcept", "alignas", "alignof", "char16_t",
		"char32_t", "static_assert", "thread_local", "concept", "requires", "co_await",
		"co_return", "co_yield", "asm", "wchar_t", "dynamic_cast", "static_cast",
		"const_cast", "reinterpret_cast", "consteval", "constinit", "char8_t",
	};
	char sn[64];
	sanitize(v->name, sn, sizeof(sn));
	bool clash = false;
	for (size_t k = 0; k < sizeof(kw) / sizeof(kw[0]) && !clash; k++)
		clash = strcmp(sn, kw[k]) == 0;
	snprintf(b, n, "%s%s%s", sn, clash ? "_" : "", out_of_input ? "_out" : "");
}

/* The host side: init, free, the launch sequence, the run entries, tables. */
static void emit_host(struct cu *d)
{
	struct rl_graph *g = d->g;
	const char *P = d->prefix;
	struct rl_buf *c = &d->c;
	rl_buf_printf(c, "static unsigned char *%s_ws;  /* device workspace, %lld bytes */\n", P,
	              (long long)d->pl.ws_size);
	rl_buf_printf(c, "static unsigned char *%s_cst; /* device constants, %lld bytes */\n", P,
	              (long long)d->cst_size);
	rl_buf_printf(c, "static unsigned char *%s_io;  /* device inputs and outputs, %lld bytes */\n",
	              P, (long long)d->io_size);
	rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\nstatic cudaStream_t %s_stream;\n#endif\n"
	              "#ifndef RL_NO_GRAPH\nstatic cudaGraph_t %s_graph;\nstatic cudaGraphExec_t %s_exec;\n"
	              "#endif\n\n", P, P, P);
	if (d->need_cublas)
		rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\nstatic cublasHandle_t %s_blas;\n"
		              "static void *%s_blas_ws; /* cuBLAS's workspace */\n#endif\n\n", P, P);
	/* launches */
	rl_buf_printf(c, "/* Every kernel of one run, in order, on stream s. */\n"
	              "static int %s_launch(cudaStream_t s)\n{\n    (void)s;\n", P);
	rl_buf_printf(c, "%s", d->launches.s ? d->launches.s : "");
	for (uint32_t i = 0; i < g->noutputs; i++) {
		uint32_t v = g->outputs[i];
		const struct rl_plan_val *pv = &d->pl.vals[v];
		if (pv->st == RL_PLAN_OUTPUT && pv->io == (int)i)
			continue;
		char b[256];
		dev_ptr(d, v, false, b, sizeof(b));
		rl_buf_printf(c, "    if (cudaMemcpyAsync(%s_io + %lld, %s, %lld, cudaMemcpyDeviceToDevice, s)"
		              " != cudaSuccess)\n        return -1;\n", P, (long long)d->io_out[i], b,
		              (long long)value_bytes(g, v));
	}
	rl_buf_printf(c, "    return cudaGetLastError() == cudaSuccess ? 0 : -1;\n}\n\n");
	/* init */
	rl_buf_printf(c, "int %s_init(const char *weights_path)\n{\n    (void)weights_path;\n"
	              "    if (%s_ws)\n        return 0;\n"
	              "#ifdef RL_CUDA_EMULATE\n    rl_emu_trap();\n#endif\n", P, P);
	rl_buf_printf(c, "    if (cudaMalloc((void **)&%s_ws, %lld) != cudaSuccess ||\n"
	              "        cudaMalloc((void **)&%s_cst, %lld) != cudaSuccess ||\n"
	              "        cudaMalloc((void **)&%s_io, %lld) != cudaSuccess)\n"
	              "        goto fail;\n", P, (long long)align_up(d->pl.ws_size + 1), P,
	              (long long)align_up(d->cst_size + 1), P, (long long)align_up(d->io_size + 1));
	if (d->side) {
		/* the side file is the constant arena's image after a 16-byte header */
		long long total = CU_SIDE_HEADER + d->cst_size;
		rl_buf_printf(c, "    {\n        if (!weights_path)\n            weights_path = \"%s\";\n"
		              "        FILE *f = fopen(weights_path, \"rb\");\n"
		              "        unsigned char *w = f ? (unsigned char *)malloc(%lld) : NULL;\n"
		              "        size_t got = w ? fread(w, 1, %lld, f) : 0;\n"
		              "        int extra = f ? fgetc(f) : EOF;\n"
		              "        if (f)\n            fclose(f);\n"
		              "        int ok = got == %lldu && extra == EOF && memcmp(w, \"RLWTS001\", 8) == 0 &&\n"
		              "                 cudaMemcpy(%s_cst, w + %d, %lld, cudaMemcpyHostToDevice) == cudaSuccess;\n"
		              "        free(w);\n        if (!ok)\n            goto fail;\n    }\n",
		              d->wbase, total, total, total, P, CU_SIDE_HEADER, (long long)d->cst_size);
	} else {
		for (uint32_t v = 0; v < g->nvalues; v++)
			if (d->pl.vals[v].st == RL_PLAN_CONST && cu_val(d, v)->nbytes)
				rl_buf_printf(c, "    if (cudaMemcpy(%s_cst + %lld, %s_h%u, %zu, "
				              "cudaMemcpyHostToDevice) != cudaSuccess)\n        goto fail;\n", P,
				              (long long)d->coff[v], P, v, cu_val(d, v)->nbytes);
	}
	rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\n"
	              "    if (cudaStreamCreateWithFlags(&%s_stream, cudaStreamNonBlocking) != cudaSuccess)\n"
	              "        goto fail;\n#endif\n", P);
	if (d->first_kernel[0])
		rl_buf_printf(c, "#if !defined(RL_CUDA_EMULATE) && !defined(RL_CUDA_NO_GRAPH)\n"
		              "    { /* programmatic dependent launch where the kernels were built for sm_90 on */\n"
		              "        cudaFuncAttributes fa_;\n"
		              "        rl_pdl = cudaFuncGetAttributes(&fa_, %s) == cudaSuccess && fa_.ptxVersion >= 90 &&\n"
		              "                 fa_.binaryVersion >= 90;\n"
		              "    }\n#endif\n", d->first_kernel);
	if (d->smem_attr.s)
		rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\n    /* kernels over 48 KiB of dynamic shared "
		              "memory opt in */\n%s#endif\n", d->smem_attr.s);
	if (d->need_cublas)
		rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\n"
		              "    if (cublasCreate(&%s_blas) != CUBLAS_STATUS_SUCCESS ||\n"
		              "        cublasSetStream(%s_blas, %s_stream) != CUBLAS_STATUS_SUCCESS ||\n"
		              "        cudaMalloc(&%s_blas_ws, RL_BLAS_WS_BYTES) != cudaSuccess ||\n"
		              "        cublasSetWorkspace(%s_blas, %s_blas_ws, RL_BLAS_WS_BYTES) != "
		              "CUBLAS_STATUS_SUCCESS)\n        goto fail;\n#endif\n", P, P, P, P, P, P);
	rl_buf_printf(c, "#ifndef RL_NO_GRAPH\n"
	              "    /* the whole run as one CUDA graph, replayed by every call */\n"
	              "    if (cudaStreamBeginCapture(%s_stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess)\n"
	              "        goto fail;\n"
	              "    if (%s_launch(%s_stream) != 0) {\n"
	              "        cudaStreamEndCapture(%s_stream, &%s_graph);\n        goto fail;\n    }\n"
	              "    if (cudaStreamEndCapture(%s_stream, &%s_graph) != cudaSuccess ||\n"
	              "        cudaGraphInstantiate(&%s_exec, %s_graph, 0) != cudaSuccess)\n"
	              "        goto fail;\n#endif\n", P, P, P, P, P, P, P, P, P);
	rl_buf_printf(c, "    return 0;\nfail:\n    %s_free();\n    return -1;\n}\n\n", P);
	/* free */
	rl_buf_printf(c, "void %s_free(void)\n{\n#ifndef RL_NO_GRAPH\n"
	              "    if (%s_exec)\n        cudaGraphExecDestroy(%s_exec);\n"
	              "    if (%s_graph)\n        cudaGraphDestroy(%s_graph);\n"
	              "    %s_exec = NULL;\n    %s_graph = NULL;\n#endif\n", P, P, P, P, P, P, P);
	if (d->need_cublas)
		rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\n    if (%s_blas)\n        cublasDestroy(%s_blas);\n"
		              "    %s_blas = NULL;\n    cudaFree(%s_blas_ws);\n    %s_blas_ws = NULL;\n"
		              "#endif\n", P, P, P, P, P);
	rl_buf_printf(c, "#ifndef RL_CUDA_EMULATE\n    if (%s_stream)\n        cudaStreamDestroy(%s_stream);\n"
	              "    %s_stream = NULL;\n#endif\n", P, P, P);
	rl_buf_printf(c, "    cudaFree(%s_ws);\n    cudaFree(%s_cst);\n    cudaFree(%s_io);\n"
	              "    %s_ws = %s_cst = %s_io = NULL;\n}\n\n", P, P, P, P, P, P);
	rl_buf_printf(c, "int %s_set_threads(int n)\n{\n"
	              "    /* the C API's thread count: the GPU's blocks are the CUDA backend's threads */\n"
	              "    return n < 1 ? -1 : 0;\n}\n\n", P);
	/* one run on the device buffers */
	rl_buf_printf(c, "static int %s_replay(void)\n{\n#ifdef RL_CUDA_EMULATE\n"
	              "    return %s_launch(NULL);\n#elif defined(RL_NO_GRAPH)\n"
	              "    if (%s_launch(%s_stream) != 0)\n        return -1;\n"
	              "    cudaError_t e = cudaStreamSynchronize(%s_stream);\n"
	              "    if (e != cudaSuccess)\n"
	              "        fprintf(stderr, \"%s: %%s\\n\", cudaGetErrorString(e));\n"
	              "    return e == cudaSuccess ? 0 : -1;\n#else\n"
	              "    return cudaGraphLaunch(%s_exec, %s_stream) == cudaSuccess ? 0 : -1;\n#endif\n}\n\n",
	              P, P, P, P, P, P, P, P);
	/* the run again on the inputs already in the device buffers: what a
	 * benchmark times (no copies), and a profiler's steady state */
	rl_buf_printf(c, "int %s_run_resident(int reps)\n{\n"
	              "    if (!%s_ws || reps < 0)\n        return -1;\n"
	              "    for (int r = 0; r < reps; r++)\n"
	              "        if (%s_replay() != 0)\n            return -1;\n"
	              "#ifdef RL_CUDA_EMULATE\n    return 0;\n#else\n"
	              "    return cudaStreamSynchronize(%s_stream) == cudaSuccess ? 0 : -1;\n#endif\n}\n\n",
	              P, P, P, P);
	/* run on device pointers / host pointers */
	for (int dev = 1; dev >= 0; dev--) {
		const char *kind = dev ? "cudaMemcpyDeviceToDevice" : "cudaMemcpyHostToDevice";
		const char *back = dev ? "cudaMemcpyDeviceToDevice" : "cudaMemcpyDeviceToHost";
		rl_buf_printf(c, "int %s_run_%s(const void *const *in, void *const *out)\n{\n"
		              "    (void)in;\n    (void)out;\n"
		              "    if (!%s_ws && %s_init(NULL) != 0)\n        return -1;\n",
		              P, dev ? "device" : "v", P, P);
		rl_buf_printf(c, "#ifdef RL_CUDA_EMULATE\n    cudaStream_t s = NULL;\n#else\n"
		              "    cudaStream_t s = %s_stream;\n#endif\n", P);
		for (uint32_t i = 0; i < g->ninputs; i++)
			rl_buf_printf(c, "    if (cudaMemcpyAsync(%s_io + %lld, in[%u], %lld, %s, s) != "
			              "cudaSuccess)\n        return -1;\n", P, (long long)d->io_in[i], i,
			              (long long)value_bytes(g, g->inputs[i]), kind);
		rl_buf_printf(c, "    if (%s_replay() != 0)\n        return -1;\n", P);
		for (uint32_t i = 0; i < g->noutputs; i++)
			rl_buf_printf(c, "    if (cudaMemcpyAsync(out[%u], %s_io + %lld, %lld, %s, s) != "
			              "cudaSuccess)\n        return -1;\n", i, P, (long long)d->io_out[i],
			              (long long)value_bytes(g, g->outputs[i]), back);
		rl_buf_printf(c, "    return cudaStreamSynchronize(s) == cudaSuccess ? 0 : -1;\n}\n\n");
	}
	/* typed run */
	rl_buf_printf(c, "int %s_run(", P);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char nm[80];
		io_name(cu_val(d, g->inputs[i]), false, nm, sizeof(nm));
		rl_buf_printf(c, "%sconst %s *%s", i ? ", " : "", cg_ctype(cu_val(d, g->inputs[i])->dtype), nm);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = cu_val(d, g->outputs[i]);
		char nm[80];
		io_name(v, (v->flags & RL_VAL_INPUT) != 0, nm, sizeof(nm));
		rl_buf_printf(c, "%s%s *%s", i || g->ninputs ? ", " : "", cg_ctype(v->dtype), nm);
	}
	rl_buf_printf(c, ")\n{\n    const void *in[%u] = {", g->ninputs + 1);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char nm[80];
		io_name(cu_val(d, g->inputs[i]), false, nm, sizeof(nm));
		rl_buf_printf(c, "%s%s", i ? ", " : "", nm);
	}
	rl_buf_printf(c, "%s};\n    void *out[%u] = {", g->ninputs ? "" : "NULL", g->noutputs + 1);
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = cu_val(d, g->outputs[i]);
		char nm[80];
		io_name(v, (v->flags & RL_VAL_INPUT) != 0, nm, sizeof(nm));
		rl_buf_printf(c, "%s%s", i ? ", " : "", nm);
	}
	rl_buf_printf(c, "%s};\n    return %s_run_v(in, out);\n}\n\n", g->noutputs ? "" : "NULL", P);
	/* io tables, as the C backend's */
	for (int io = 0; io < 2; io++) {
		uint32_t cnt = io ? g->noutputs : g->ninputs;
		const uint32_t *list = io ? g->outputs : g->inputs;
		const char *what = io ? "outputs" : "inputs";
		for (uint32_t i = 0; i < cnt; i++) {
			char b[256];
			dims_list(&cu_val(d, list[i])->shape, b, sizeof(b));
			rl_buf_printf(c, "static const long long %s_%s_dims%u[] = {%s};\n", P, what, i, b);
		}
		rl_buf_printf(c, "const struct %s_tensor_info %s_%s[%u] = {\n", P, P, what, cnt ? cnt : 1);
		for (uint32_t i = 0; i < cnt; i++) {
			const struct rl_value *v = cu_val(d, list[i]);
			char nm[128];
			cu_ctext(v->name, nm, sizeof(nm));
			rl_buf_printf(c, "    {\"%s\", \"%s\", %d, %d, %s_%s_dims%u, %lldll, %lluu},\n", nm,
			              rl_dtype_name(v->dtype), (int)v->dtype, v->shape.rank, P, what, i,
			              (long long)rl_shape_numel(&v->shape),
			              (unsigned long long)value_bytes(g, list[i]));
		}
		if (!cnt)
			rl_buf_printf(c, "    {\"\", \"\", 0, 0, NULL, 0, 0},\n");
		rl_buf_printf(c, "};\n");
	}
}

static void emit_header(struct cu *d, const char *hbase)
{
	struct rl_graph *g = d->g;
	const char *P = d->prefix;
	struct rl_buf *h = &d->h;
	char guard[80], upper[64], path[200];
	snprintf(upper, sizeof(upper), "%s", P);
	for (char *p = upper; *p; p++)
		*p = (char)toupper((unsigned char)*p);
	snprintf(guard, sizeof(guard), "%s_H", upper);
	cu_ctext(g->path ? g->path : "", path, sizeof(path));
	rl_buf_printf(h, "/*\n * %s - generated by rlopt %s (CUDA backend) from %s.\n *\n", hbase,
	              RL_VERSION, path);
	rl_buf_printf(h, " * Call %s_init() once (it allocates device memory, uploads the weights\n"
	              " * and captures the run as a CUDA graph), then %s_run() (host pointers) or\n"
	              " * %s_run_device() (device pointers) as often as needed, and %s_free() at\n"
	              " * the end. Not thread-safe: one run at a time per process. Returns 0 on\n"
	              " * success, -1 on failure. Plain C API: the kernels are in the .cu.\n", P, P, P, P);
	for (int io = 0; io < 2; io++) {
		uint32_t cnt = io ? g->noutputs : g->ninputs;
		const uint32_t *list = io ? g->outputs : g->inputs;
		for (uint32_t i = 0; i < cnt; i++) {
			const struct rl_value *v = cu_val(d, list[i]);
			char sb[128], nm[128];
			cu_ctext(v->name, nm, sizeof(nm));
			rl_buf_printf(h, " *   %s %u: %s %s[%s]\n", io ? "output" : "input ", i, nm,
			              rl_dtype_name(v->dtype), rl_shape_str(&v->shape, sb, sizeof(sb)));
		}
	}
	rl_buf_printf(h, " * float16 and bfloat16 tensors are passed as uint16_t bit patterns.\n */\n");
	rl_buf_printf(h, "#ifndef %s\n#define %s\n\n#include <stdint.h>\n\n"
	              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", guard, guard);
	rl_buf_printf(h, "#define %s_NUM_INPUTS %u\n#define %s_NUM_OUTPUTS %u\n\n", upper, g->ninputs,
	              upper, g->noutputs);
	rl_buf_printf(h, "struct %s_tensor_info {\n    const char *name;\n    const char *dtype;\n"
	              "    int onnx_dtype;\n    int rank;\n    const long long *dims;\n"
	              "    long long numel;\n    unsigned long nbytes;\n};\n", P);
	rl_buf_printf(h, "extern const struct %s_tensor_info %s_inputs[];\n", P, P);
	rl_buf_printf(h, "extern const struct %s_tensor_info %s_outputs[];\n\n", P, P);
	if (d->side)
		rl_buf_printf(h, "/* weights_path: the side file %s (NULL: that name, in the current\n"
		              " * folder); init uploads it to the GPU. */\n", d->wbase);
	else
		rl_buf_printf(h, "/* weights_path: unused (weights are embedded and uploaded by init). */\n");
	rl_buf_printf(h, "int %s_init(const char *weights_path);\nvoid %s_free(void);\n", P, P);
	rl_buf_printf(h, "/* For the C backend's API: accepted (n >= 1) and ignored. */\n"
	              "int %s_set_threads(int n);\n", P);
	rl_buf_printf(h, "/* inputs and outputs in the order of the tables above: host memory */\n"
	              "int %s_run_v(const void *const *in, void *const *out);\n", P);
	rl_buf_printf(h, "/* the same with device pointers (copied device to device into the\n"
	              " * buffers the captured graph reads and writes) */\n"
	              "int %s_run_device(const void *const *in, void *const *out);\n", P);
	rl_buf_printf(h, "/* run `reps` more times on the inputs of the previous run, with no\n"
	              " * copies, and wait for the GPU (for benchmarks and profilers) */\n"
	              "int %s_run_resident(int reps);\n", P);
	rl_buf_printf(h, "int %s_run(", P);
	for (uint32_t i = 0; i < g->ninputs; i++) {
		char nm[80];
		io_name(cu_val(d, g->inputs[i]), false, nm, sizeof(nm));
		rl_buf_printf(h, "%sconst %s *%s", i ? ", " : "", cg_ctype(cu_val(d, g->inputs[i])->dtype), nm);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		const struct rl_value *v = cu_val(d, g->outputs[i]);
		char nm[80];
		io_name(v, (v->flags & RL_VAL_INPUT) != 0, nm, sizeof(nm));
		rl_buf_printf(h, "%s%s *%s", i || g->ninputs ? ", " : "", cg_ctype(v->dtype), nm);
	}
	rl_buf_printf(h, ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* %s */\n", guard);
}

/* ---- the entry ------------------------------------------------------------ */

/* Ops whose output extent depends on input values (ir/fam_detect.c): the
 * C backend returns the extent with the run; the CUDA header's dims are
 * static and its host code reads no extent back, so these are refused. */
static bool data_dependent_extent(enum rl_op op)
{
	return op == RL_OP_NonZero || op == RL_OP_Unique || op == RL_OP_NonMaxSuppression ||
	       op == RL_OP_Compress;
}

bool rl_emit_cuda_supports(enum rl_op op)
{
	return op < RL_OP_COUNT_ && !data_dependent_extent(op) &&
	       (cg_elemwise_has_expr(op) || op == RL_OP_MatMul || op == RL_OP_Gemm ||
	        rl_emit_c_supports(op));
}

const char *rl_emit_cuda_note(enum rl_op op)
{
	if (!rl_emit_cuda_supports(op))
		return NULL;
	switch (op) {
	case RL_OP_MatMul: case RL_OP_Gemm: case RL_OP_QuantMatMul: case RL_OP_Conv:
	case RL_OP_Softmax:
	case RL_OP_LogSoftmax: case RL_OP_LayerNormalization: case RL_OP_Transpose:
	case RL_OP_Expand: case RL_OP_Slice: case RL_OP_Concat: case RL_OP_Split: case RL_OP_Gather:
	case RL_OP_Pad:
	case RL_OP_Reshape: case RL_OP_Squeeze: case RL_OP_Unsqueeze: case RL_OP_Flatten:
	case RL_OP_Identity:
		return NULL;
	default:
		break;
	}
	if (cg_elemwise_has_expr(op))
		return NULL;
	if (rl_op_table[op].family == RL_FAM_REDUCE && op != RL_OP_ArgMax && op != RL_OP_ArgMin)
		return "CUDA kernel for float types with constant axes; else the C loop nest on the GPU";
	return "the C backend's loop nest on the GPU (split over its outer loop, or serial)";
}

enum rl_status rl_emit_cuda(struct rl_graph *g, const struct rl_cuda_opts *o,
                            const char *cu_path, char *err, size_t errlen)
{
	struct cu d = {.g = g};
	d.cg.g = g;
	d.cg.device = 1;
	enum rl_status st;
	char prefix[64], hbase[512], h_path[4096], w_path[4096];
	unsigned char *side = NULL;
	long long wmax = o && o->weights_max >= 0 ? o->weights_max : CU_WEIGHTS_MAX;
	g->err[0] = 0;
	size_t cl = strlen(cu_path);
	if (cl < 4 || strcmp(cu_path + cl - 3, ".cu") != 0) {
		snprintf(err, errlen, "%s: the CUDA output must end in .cu", cu_path);
		return RL_ERR_IO;
	}
	snprintf(h_path, sizeof(h_path), "%.*s.h", (int)(cl - 3), cu_path);
	const char *slash = strrchr(cu_path, '/');
	const char *base = slash ? slash + 1 : cu_path;
	snprintf(hbase, sizeof(hbase), "%.*s.h", (int)(strlen(base) - 3), base);
	snprintf(w_path, sizeof(w_path), "%.*s.weights", (int)(cl - 3), cu_path);
	snprintf(d.wbase, sizeof(d.wbase), "%.*s.weights", (int)(strlen(base) - 3), base);
	if (o && o->prefix) {
		sanitize(o->prefix, prefix, sizeof(prefix));
	} else {
		char tmp[64];
		snprintf(tmp, sizeof(tmp), "%.*s", (int)(strlen(base) - 3), base);
		sanitize(tmp, prefix, sizeof(prefix));
	}
	d.prefix = prefix;
	d.cublas = o && o->cublas;
	if (g->nbindings) { /* the run-time check of a bound input is the C backend's */
		snprintf(err, errlen, "%s: input '%s' is bound to a value (--value): the CUDA "
		         "backend does not check bound inputs yet; generate C", g->path,
		         g->values[g->inputs[g->bindings[0].input]].name);
		return RL_ERR_UNSUPPORTED;
	}

	if ((st = rl_emit_plan(g, rl_emit_cuda_supports, "CUDA", &d.pl)) != RL_OK)
		goto fail;
	for (uint32_t v = 0; v < g->nvalues; v++)
		if (!rl_dtype_is_numeric(g->values[v].dtype) && d.pl.vals[v].st != RL_PLAN_NONE) {
			st = rl_graph_error(g, NULL, RL_ERR_UNSUPPORTED, "value '%s' has dtype %s, which "
			                    "the CUDA backend does not compute on", g->values[v].name,
			                    rl_dtype_name(g->values[v].dtype));
			goto fail;
		} else if (g->values[v].extent_axis && d.pl.vals[v].st != RL_PLAN_NONE) {
			/* the header's dims are static and the host reads no extents back */
			uint32_t p = g->values[v].producer;
			st = rl_graph_error(g, p != RL_NONE ? &g->nodes[p] : NULL, RL_ERR_UNSUPPORTED,
			                    "value '%s' has a data-dependent extent, which the CUDA "
			                    "backend does not return yet; generate C", g->values[v].name);
			goto fail;
		}
	/* arenas: constants and the caller's inputs and outputs */
	d.coff = calloc((size_t)g->nvalues + 1, sizeof(*d.coff));
	d.io_in = calloc((size_t)g->ninputs + 1, sizeof(*d.io_in));
	d.io_out = calloc((size_t)g->noutputs + 1, sizeof(*d.io_out));
	RL_ASSERT(d.coff && d.io_in && d.io_out);
	for (uint32_t v = 0; v < g->nvalues; v++)
		if (d.pl.vals[v].st == RL_PLAN_CONST) {
			d.coff[v] = d.cst_size;
			d.cst_size += align_up((int64_t)g->values[v].nbytes + 1); /* distinct, even if empty */
		}
	d.side = d.cst_size > wmax;
	if (d.side) {
		side = calloc(1, (size_t)(CU_SIDE_HEADER + d.cst_size));
		if (!side) {
			st = rl_graph_error(g, NULL, RL_ERR_NOMEM, "out of memory for the weights file");
			goto fail;
		}
		long long total = CU_SIDE_HEADER + d.cst_size;
		memcpy(side, "RLWTS001", 8);
		memcpy(side + 8, &total, 8);
		for (uint32_t v = 0; v < g->nvalues; v++)
			if (d.pl.vals[v].st == RL_PLAN_CONST && g->values[v].nbytes)
				memcpy(side + CU_SIDE_HEADER + d.coff[v], g->values[v].data, g->values[v].nbytes);
	}
	for (uint32_t i = 0; i < g->ninputs; i++) {
		d.io_in[i] = d.io_size;
		d.io_size += align_up(value_bytes(g, g->inputs[i]) + 1);
	}
	for (uint32_t i = 0; i < g->noutputs; i++) {
		d.io_out[i] = d.io_size;
		d.io_size += align_up(value_bytes(g, g->outputs[i]) + 1);
	}
	if ((st = emit_kernels(&d)) != RL_OK)
		goto fail;

	unsigned nk = 0;
	for (uint32_t u = 0; u < d.pl.nunits; u++)
		nk += !d.pl.units[u].view;
	char path[200];
	cu_ctext(g->path ? g->path : "", path, sizeof(path));
	rl_buf_printf(&d.c, "/*\n * %s - generated by rlopt %s (CUDA backend) from %s.\n", base,
	              RL_VERSION, path);
	rl_buf_printf(&d.c, " * Do not edit: regenerate instead. Build with nvcc (-arch=sm_80 or later),\n"
	              " * or on a CPU with g++ -x c++ -DRL_CUDA_EMULATE (emulation: same kernels).\n");
	rl_buf_printf(&d.c, " * %u kernels (%d serial), %lld bytes of workspace, %lld bytes of "
	              "constants%s.\n */\n", nk, d.nserial, (long long)d.pl.ws_size,
	              (long long)d.cst_size, d.side ? " (in the side file)" : "");
	if (o && o->eager)
		rl_buf_printf(&d.c, "/* built with --launch eager: kernel by kernel, as priced */\n"
		              "#ifndef RL_CUDA_NO_GRAPH\n#define RL_CUDA_NO_GRAPH 1\n#endif\n");
	rl_buf_printf(&d.c, "#include \"%s\"\n\n%s", hbase, prelude);
	if (d.cg.need_half)
		emit_helper(&d.c, rl_cg_helper_text[0]);
	if (d.cg.need_bf16)
		emit_helper(&d.c, rl_cg_helper_text[1]);
	if (d.need_wmma)
		rl_buf_printf(&d.c, "%s", wmma_prelude);
	if (d.need_cublas)
		rl_buf_printf(&d.c, "%s", cublas_prelude);
	if (d.need_mma)
		rl_buf_printf(&d.c, "%s", mma_prelude);
	if (d.cg.need_tanh)
		emit_helper(&d.c, rl_cg_helper_text[2]);
	if (d.cg.need_erf)
		emit_helper(&d.c, rl_cg_helper_text[3]);
	for (uint32_t v = 0; v < g->nvalues && !d.side; v++)
		if (d.pl.vals[v].st == RL_PLAN_CONST && cu_val(&d, v)->nbytes)
			emit_const(&d, v);
	rl_buf_printf(&d.c, "\n%s", d.kernels.s ? d.kernels.s : "");
	emit_header(&d, hbase);
	/* the header first: the prototypes the host code defines */
	{
		struct rl_buf host = {0};
		struct rl_buf save = d.c;
		d.c = host;
		emit_host(&d);
		host = d.c;
		d.c = save;
		rl_buf_printf(&d.c, "%s", host.s ? host.s : "");
		rl_buf_free(&host);
	}
	st = rl_write_file_atomic(h_path, d.h.s, d.h.len, err, errlen);
	if (st == RL_OK && d.side) {
		st = rl_write_file_atomic(w_path, side, (size_t)(CU_SIDE_HEADER + d.cst_size), err, errlen);
		if (st != RL_OK)
			remove(h_path);
	}
	if (st == RL_OK) {
		st = rl_write_file_atomic(cu_path, d.c.s, d.c.len, err, errlen);
		if (st != RL_OK) {
			remove(h_path);
			if (d.side)
				remove(w_path);
		}
	}
	goto done;
fail:
	snprintf(err, errlen, "%s", g->err[0] ? g->err : "CUDA code generation failed");
done:
	rl_emit_plan_free(&d.pl);
	free(side);
	free(d.coff);
	free(d.io_in);
	free(d.io_out);
	rl_buf_free(&d.c);
	rl_buf_free(&d.h);
	rl_buf_free(&d.kernels);
	rl_buf_free(&d.launches);
	rl_buf_free(&d.cg.body);
	rl_buf_free(&d.blas_post);
	rl_buf_free(&d.smem_attr);
	rl_buf_free(&d.cg.statics);
	rl_buf_free(&d.cg.init);
	rl_buf_free(&d.cg.fini);
	return st;
}
