/*
 * emit_cuda_impl.h - what the CUDA backend's files share (private): the
 * driver's state, a kernel's launch shape, and the kernel writers. Each
 * writer appends the body of one __global__ function to d->cg.body (inputs
 * X0.., outputs Y0.., as the C backend's kernels) and fills in the launch.
 */
#ifndef RL_EMIT_CUDA_IMPL_H
#define RL_EMIT_CUDA_IMPL_H

#include "emit_cuda.h"

#include "backends/c/emit_impl.h"

#define CU_ALIGN 256        /* device allocations and arena slots */
#define CU_THREADS 256      /* threads per block of an elementwise kernel */
#define CU_MAX_BLOCKS 65535 /* grid-stride loops cover the rest */
#define CU_FALLBACK_THREADS 128
/* MatMul/Gemm without a GPU tile from the tile pass: 64 x 64 outputs per
 * block, 4 x 4 per thread (256 threads), 16 deep; small products 16 x 16
 * with one output per thread */
#define CU_MM_MC 64
#define CU_MM_KC 16
#define CU_MM_RT 4
#define CU_MM_SMEM (48 * 1024) /* static shared memory a block may declare */
#define CU_WEIGHTS_MAX (64ll << 20) /* constants embedded up to this, else NAME.weights */
#define CU_SIDE_HEADER 16           /* "RLWTS001" and the file's size (int64) */

struct launch {
	int64_t grid;  /* blocks; 0: nothing to launch */
	int block;     /* threads per block */
	bool phased;   /* written with RL_THREADS/RL_SYNC: emulation calls it per block */
	bool serial;   /* the C body on one thread */
	int smem;      /* bytes of dynamic shared memory (rl_dsmem); 0: none */
};

/* A product routed to cuBLAS (--cuda-library cublas), row-major operands:
 * Y[bt] = alpha op(A[bt]) op(B[bt]) for bt < nb, A and B advancing sa and sb
 * elements per batch (0: broadcast). The host calls cuBLAS on the GPU, then
 * the `post` kernel when Gemm's C or a fused epilogue remains; emulation
 * launches rlopt's own kernel instead. */
struct cu_blas {
	bool on, post;
	enum rl_dtype dt;
	bool ta, tb;
	int64_t M, N, K, nb, sa, sb;
	double alpha;
	struct launch pl; /* the post kernel's launch */
};

struct cu {
	struct rl_graph *g;
	const char *prefix;
	struct rl_plan pl;
	int64_t *coff;          /* per value: offset in the constant arena */
	int64_t cst_size;
	bool side;              /* constants in NAME.weights (the device arena's image) */
	char wbase[256];        /* its file name */
	int64_t *io_in, *io_out; /* offsets of inputs and outputs in the io arena */
	int64_t io_size;
	struct rl_buf c, h, kernels, launches;
	struct rl_cgen cg;
	int nserial;
	bool need_wmma;         /* a kernel uses tensor cores: the WMMA prelude */
	bool need_mma;          /* a kernel uses mma.sync: its prelude */
	bool cublas;            /* --cuda-library cublas */
	bool need_cublas;       /* some product calls cuBLAS */
	struct cu_blas blas;    /* the current kernel's cuBLAS call, if any */
	struct rl_buf blas_post; /* the body of its post kernel */
	struct rl_buf smem_attr; /* init's cudaFuncSetAttribute calls for kernels over 48 KiB */
	char first_kernel[128];  /* a kernel init asks what architecture it was built for */
};

static inline const struct rl_value *cu_val(struct cu *d, uint32_t v)
{
	return &d->g->values[v];
}

/* Comment text: no terminator or control character from a name. */
void cu_ctext(const char *s, char *b, size_t n);
/* Flat index into `in` (numpy-broadcast into `out`) from flat output index o. */
void cu_bcast_index(const struct rl_shape *out, const struct rl_shape *in, const char *o,
                    char *b, size_t n);

/* One thread per output: the launch of ne outputs (CU_THREADS per block, at
 * most CU_MAX_BLOCKS blocks; the grid-stride loop covers the rest). */
void cu_grid_launch(struct launch *L, int64_t ne);
/* The grid-stride loop's header over flat index `idx` < ne, opening "{"
 * (the caller writes the body and closes it). */
void cu_grid_loop(struct rl_cgen *cg, const char *idx, int64_t ne);
/* cu_grid_loop over output index o, indented, with the trailing nsp dims
 * out[] unravelled into oa, ob, oc (innermost last) and the leading flat
 * index left in r; the caller closes the loop (indent--, "}"). */
void cu_grid_outputs(struct rl_cgen *cg, int64_t ne, int nsp, const int64_t *out);

/* emit_cuda_kernels.c: elementwise and fused groups, rows, reductions, shape
 * ops, and the C emitter's body as a kernel. The bool writers return false
 * (having written nothing) for a form they do not cover. */
enum rl_status cu_k_elemwise(struct cu *d, const struct rl_cgen_group *gr, struct launch *L);
bool cu_k_rows(struct cu *d, uint32_t node, struct launch *L);
bool cu_k_reduce(struct cu *d, uint32_t node, struct launch *L);
bool cu_k_transpose(struct cu *d, uint32_t node, struct launch *L);
bool cu_k_shape(struct cu *d, uint32_t node, struct launch *L);
/* Pad, every mode and axis, one thread per output; false for another form */
bool cu_k_pad(struct cu *d, uint32_t node, struct launch *L);
enum rl_status cu_k_fallback(struct cu *d, uint32_t node, const struct rl_cgen_group *gr,
                             struct launch *L);
/* emit_cuda_mm.c: MatMul/Gemm (tiled, or GEMV up to 4 rows) and Conv; with
 * d->cg.epi set, the group's epilogue runs on every stored output. */
enum rl_status cu_k_matmul(struct cu *d, uint32_t node, struct launch *L);
enum rl_status cu_k_conv(struct cu *d, uint32_t node, struct launch *L);
/* QuantMatMul (ir/qweights.h): codes dequantized in registers, float accumulation */
enum rl_status cu_k_qmatmul(struct cu *d, uint32_t node, struct launch *L);
/* MaxPool (without Indices) and AveragePool on float types: one thread per
 * output; false (nothing written) for another form */
bool cu_k_pool(struct cu *d, uint32_t node, struct launch *L);

#endif /* RL_EMIT_CUDA_IMPL_H */
