/* linear.cu - linear layers (remat_ref_linear_forward / _backward) and the tiled GEMM.
 *
 * The determinism argument (docs/cuda.md has it in full):
 *  - The tiled kernel computes every output element as the reference GEMM defines it
 *    (core/ref/gemm.c): c = (accumulate ? C : +0), then c = fmaf(A(i,k), B(k,j), c) for k
 *    ascending, one thread owning the whole chain. Tiles only decide which thread
 *    computes which element and what sits in shared memory; K is never split (a K tile
 *    continues the same register chain, and the chain stops at K: no padded k ever
 *    enters it). So the bits of an element depend neither on M, nor on its place in a
 *    tile, nor on the grid - and equal the reference's.
 *  - cuBLAS (AUTO mode, backward only) is called once per time step, with shapes
 *    (N, in, out_f) that no plan changes, on one stream, with a fixed user workspace,
 *    pedantic FP32 math, and only 256-byte aligned pointers. cuBLAS documents that a
 *    routine gives the same bits for the same call on the same GPU model and toolkit
 *    (single stream); each of our calls is such a same call whatever the plan.
 *  - Weight gradients: P_t = dout_t^T inp_t, then dweight = dweight + P_t for t
 *    descending (the reference's order); bias gradients: per step a sum over the N rows
 *    in ascending order from +0, then added in descending t.
 *  - bf16 storage: the tiled kernel is a template over the element types of C, A and
 *    B (float or uint16_t bf16 patterns, kernel_bodies.h act_ld/act_st): operands are
 *    widened as they enter shared memory, and a bf16 C is read widened and stored
 *    rounded once, after its whole chain (the chain never leaves the registers), which
 *    is the reference twin's result. bf16 calls always take the tiled kernel.
 */
#include <stdint.h>

#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

using remat_cuda::act_ld;
using remat_cuda::act_st;

/* Tile shape: a 64 x 64 output tile per block of 256 threads, 4 x 4 elements per
 * thread (rows ty + 16 r, columns tx + 16 s), K in slabs of 16 through shared memory. */
#define GEMM_BM 64
#define GEMM_BN 64
#define GEMM_BK 16
#define GEMM_THREADS 256

/* A(i,k) = a[i*a_rs + k*a_cs], B(k,j) = b[k*b_rs + j*b_cs]. steps > 0 makes it the
 * weight-gradient form: C(i,j) = C(i,j) + P_s(i,j) for s = steps-1 .. 0, P_s being the
 * chain over A + s*a_step, B + s*b_step from +0. */
template <typename TC, typename TA, typename TB>
struct gemm_desc {
    TC *c;
    const TA *a;
    const TB *b;
    int64_t M, N, K;
    int64_t a_rs, a_cs, b_rs, b_cs;
    int accumulate;
    int64_t steps, a_step, b_step;
};

/* Loads the K slab [k0, k0 + BK) of A (rows i0..) and B (columns j0..) into shared
 * memory; out-of-range entries are 0 (never used by a valid element's chain). The
 * mapping from thread to entry follows the contiguous dimension, for coalescing. */
template <typename TC, typename TA, typename TB>
__device__ __forceinline__ void gemm_load_slab(float (*As)[GEMM_BM + 1], float (*Bs)[GEMM_BN + 1], const TA *a,
                                               const TB *b, const gemm_desc<TC, TA, TB> &g, int64_t i0, int64_t j0,
                                               int64_t k0) {
    const int tid = threadIdx.x;
    for (int l = tid; l < GEMM_BM * GEMM_BK; l += GEMM_THREADS) {
        int ii, kk;
        if (g.a_cs == 1) ii = l / GEMM_BK, kk = l % GEMM_BK;
        else ii = l % GEMM_BM, kk = l / GEMM_BM;
        const int64_t i = i0 + ii, k = k0 + kk;
        As[kk][ii] = (i < g.M && k < g.K) ? act_ld(a, i * g.a_rs + k * g.a_cs) : 0.0f;
    }
    for (int l = tid; l < GEMM_BN * GEMM_BK; l += GEMM_THREADS) {
        int jj, kk;
        if (g.b_cs == 1) jj = l % GEMM_BN, kk = l / GEMM_BN;
        else kk = l % GEMM_BK, jj = l / GEMM_BK;
        const int64_t j = j0 + jj, k = k0 + kk;
        Bs[kk][jj] = (j < g.N && k < g.K) ? act_ld(b, k * g.b_rs + j * g.b_cs) : 0.0f;
    }
}

/* acc[r][s] = fmaf(A(i,k), B(k,j), acc[r][s]) for the slab's valid k, ascending. */
__device__ __forceinline__ void gemm_slab_chain(float (&acc)[4][4], float (*As)[GEMM_BM + 1],
                                                float (*Bs)[GEMM_BN + 1], int kmax, int tx, int ty) {
    for (int kk = 0; kk < kmax; kk++) {
        float av[4], bv[4];
#pragma unroll
        for (int r = 0; r < 4; r++) av[r] = As[kk][ty + 16 * r];
#pragma unroll
        for (int s = 0; s < 4; s++) bv[s] = Bs[kk][tx + 16 * s];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int s = 0; s < 4; s++) acc[r][s] = fmaf(av[r], bv[s], acc[r][s]);
    }
}

template <typename TC, typename TA, typename TB>
__global__ void __launch_bounds__(GEMM_THREADS) gemm_tiled_kernel(gemm_desc<TC, TA, TB> g) {
    __shared__ float As[GEMM_BK][GEMM_BM + 1];
    __shared__ float Bs[GEMM_BK][GEMM_BN + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int64_t j0 = (int64_t)blockIdx.x * GEMM_BN;
    const int64_t m_tiles = (g.M + GEMM_BM - 1) / GEMM_BM;
    for (int64_t mt = blockIdx.y; mt < m_tiles; mt += gridDim.y) {
        const int64_t i0 = mt * GEMM_BM;
        float cv[4][4];
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int s = 0; s < 4; s++) {
                const int64_t i = i0 + ty + 16 * r, j = j0 + tx + 16 * s;
                cv[r][s] = (i < g.M && j < g.N && (g.accumulate || g.steps > 0)) ? act_ld(g.c, i * g.N + j) : 0.0f;
            }
        const int64_t n_steps = g.steps > 0 ? g.steps : 1;
        for (int64_t st = n_steps - 1; st >= 0; st--) {
            const TA *a = g.a + (g.steps > 0 ? st * g.a_step : 0);
            const TB *b = g.b + (g.steps > 0 ? st * g.b_step : 0);
            float acc[4][4];
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int s = 0; s < 4; s++) acc[r][s] = g.steps > 0 ? 0.0f : cv[r][s];
            for (int64_t k0 = 0; k0 < g.K; k0 += GEMM_BK) {
                gemm_load_slab(As, Bs, a, b, g, i0, j0, k0);
                __syncthreads();
                const int kmax = g.K - k0 < GEMM_BK ? (int)(g.K - k0) : GEMM_BK;
                gemm_slab_chain(acc, As, Bs, kmax, tx, ty);
                __syncthreads();
            }
#pragma unroll
            for (int r = 0; r < 4; r++)
#pragma unroll
                for (int s = 0; s < 4; s++) cv[r][s] = g.steps > 0 ? cv[r][s] + acc[r][s] : acc[r][s];
        }
#pragma unroll
        for (int r = 0; r < 4; r++)
#pragma unroll
            for (int s = 0; s < 4; s++) {
                const int64_t i = i0 + ty + 16 * r, j = j0 + tx + 16 * s;
                if (i < g.M && j < g.N) act_st(g.c, i * g.N + j, cv[r][s]);
            }
    }
}

template <typename TC, typename TA, typename TB>
static void gemm_launch(remat_cuda_ctx *c, const gemm_desc<TC, TA, TB> &g) {
    if (g.M <= 0 || g.N <= 0) return;
    const int64_t n_tiles = (g.N + GEMM_BN - 1) / GEMM_BN, m_tiles = (g.M + GEMM_BM - 1) / GEMM_BM;
    if (n_tiles > 0x7fffffff) remat_cuda_fatal(__FILE__, __LINE__, "gemm_launch", "N", "too many column tiles");
    dim3 grid((unsigned)n_tiles, (unsigned)(m_tiles < 65535 ? m_tiles : 65535));
    REMAT_LAUNCH(grid, GEMM_THREADS, 0, c->stream, gemm_tiled_kernel<TC, TA, TB>)(g);
    cudaCheckLaunch();
    c->gemm_calls_tiled++;
}

template <typename TC, typename TA, typename TB>
static gemm_desc<TC, TA, TB> desc(TC *C, const TA *A, const TB *B, int64_t M, int64_t N, int64_t K, int64_t a_rs,
                                  int64_t a_cs, int64_t b_rs, int64_t b_cs, int accumulate) {
    gemm_desc<TC, TA, TB> g;
    g.c = C;
    g.a = A;
    g.b = B;
    g.M = M;
    g.N = N;
    g.K = K;
    g.a_rs = a_rs;
    g.a_cs = a_cs;
    g.b_rs = b_rs;
    g.b_cs = b_cs;
    g.accumulate = accumulate;
    g.steps = 0;
    g.a_step = g.b_step = 0;
    return g;
}

template <typename TC, typename TA, typename TB>
static void gemm_layout(remat_cuda_ctx *c, remat_cuda_layout layout, TC *C, const TA *A, const TB *B, int64_t M,
                        int64_t N, int64_t K, int accumulate) {
    switch (layout) {
    case REMAT_CUDA_NT: gemm_launch(c, desc(C, A, B, M, N, K, K, 1, 1, K, accumulate)); break;
    case REMAT_CUDA_NN: gemm_launch(c, desc(C, A, B, M, N, K, K, 1, N, 1, accumulate)); break;
    case REMAT_CUDA_TN: gemm_launch(c, desc(C, A, B, M, N, K, 1, M, N, 1, accumulate)); break;
    }
}

void remat_cuda_gemm_nt(remat_cuda_ctx *c, float *C, const float *A, const float *B, int64_t M, int64_t N,
                        int64_t K, int accumulate) {
    gemm_layout(c, REMAT_CUDA_NT, C, A, B, M, N, K, accumulate);
}

void remat_cuda_gemm_nn(remat_cuda_ctx *c, float *C, const float *A, const float *B, int64_t M, int64_t N,
                        int64_t K, int accumulate) {
    gemm_layout(c, REMAT_CUDA_NN, C, A, B, M, N, K, accumulate);
}

void remat_cuda_gemm_tn(remat_cuda_ctx *c, float *C, const float *A, const float *B, int64_t M, int64_t N,
                        int64_t K, int accumulate) {
    gemm_layout(c, REMAT_CUDA_TN, C, A, B, M, N, K, accumulate);
}

/* The typed GEMMs (cuda_internal.cuh): every operand combination the layers use. */
#define TYPED_GEMM(TC, TA, TB)                                                                                     \
    void remat_cuda_gemm_typed(remat_cuda_ctx *c, remat_cuda_layout layout, TC *C, const TA *A, const TB *B,        \
                               int64_t M, int64_t N, int64_t K, int accumulate) {                                  \
        gemm_layout(c, layout, C, A, B, M, N, K, accumulate);                                                      \
    }
TYPED_GEMM(float, float, float)
TYPED_GEMM(uint16_t, uint16_t, uint16_t)
TYPED_GEMM(float, uint16_t, uint16_t)
TYPED_GEMM(uint16_t, uint16_t, float)
TYPED_GEMM(float, uint16_t, float)
#undef TYPED_GEMM

/* ---- small kernels of the linear layer ---- */

/* out[r, :] = bias (the chain of every output element starts from its bias). */
template <typename T>
__global__ void bias_rows_kernel(T *__restrict__ out, const T *__restrict__ bias, int64_t rows, int64_t out_f) {
    const int64_t n = rows * out_f;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        out[e] = bias[e % out_f];
}

/* dbias[o] = dbias[o] + (sum over n ascending of dout[t, n, o], from +0) for t descending. */
template <typename T>
__global__ void dbias_kernel(float *__restrict__ dbias, const T *__restrict__ dout, int64_t t_steps, int64_t N,
                             int64_t out_f) {
    for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < out_f; o += (int64_t)gridDim.x * blockDim.x) {
        float db = dbias[o];
        for (int64_t t = t_steps - 1; t >= 0; t--) {
            float pb = 0.0f;
            const T *dt = dout + t * N * out_f + o;
            for (int64_t n = 0; n < N; n++) pb = pb + act_ld(dt, n * out_f);
            db = db + pb;
        }
        dbias[o] = db;
    }
}

/* dw[e] = dw[e] + pw[e] */
__global__ void add_into_kernel(float *__restrict__ dw, const float *__restrict__ pw, int64_t n) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        dw[e] = dw[e] + pw[e];
}

/* ---- entries ---- */

template <typename T>
static void linear_forward(remat_cuda_ctx *c, T *out, const T *inp, const T *weight, const T *bias, int64_t rows,
                           int64_t in, int64_t out_f) {
    if (rows <= 0 || out_f <= 0) return;
    if (bias) {
        REMAT_LAUNCH(remat_cuda_blocks(rows * out_f), REMAT_CUDA_THREADS, 0, c->stream, bias_rows_kernel<T>)(
            out, bias, rows, out_f);
        cudaCheckLaunch();
    }
    gemm_layout(c, REMAT_CUDA_NT, out, inp, weight, rows, out_f, in, bias ? 1 : 0);
}

void remat_cuda_linear_forward(remat_cuda_ctx *c, float *out, const float *inp, const float *weight,
                               const float *bias, int64_t rows, int64_t in, int64_t out_f) {
    linear_forward(c, out, inp, weight, bias, rows, in, out_f);
}

void remat_cuda_linear_forward_bf16(remat_cuda_ctx *c, uint16_t *out, const uint16_t *inp, const uint16_t *weight,
                                    const uint16_t *bias, int64_t rows, int64_t in, int64_t out_f) {
    linear_forward(c, out, inp, weight, bias, rows, in, out_f);
}

static int aligned256(const void *p) { return p == nullptr || ((uintptr_t)p % 256u) == 0; }

/* The tiled backward pieces, for both element types: dweight += P_t for t descending in
 * one launch (each thread keeps its dweight elements in registers, builds P_t from +0
 * and adds it - the reference's sequence), and the bias gradient. */
template <typename T>
static void dweight_tiled(remat_cuda_ctx *c, float *dweight, const T *dout, const T *inp, int64_t t_steps, int64_t N,
                          int64_t in, int64_t out_f) {
    gemm_desc<float, T, T> g = desc(dweight, dout, inp, out_f, in, N, 1, out_f, in, 1, 1);
    g.steps = t_steps;
    g.a_step = N * out_f;
    g.b_step = N * in;
    gemm_launch(c, g);
}

template <typename T>
static void dbias_launch(remat_cuda_ctx *c, float *dbias, const T *dout, int64_t t_steps, int64_t N, int64_t out_f) {
    REMAT_LAUNCH(remat_cuda_blocks(out_f), REMAT_CUDA_THREADS, 0, c->stream, dbias_kernel<T>)(dbias, dout, t_steps, N,
                                                                                       out_f);
    cudaCheckLaunch();
}

/* AUTO routes the backward GEMMs to cuBLAS when every pointer of every per-step call
 * is 256-byte aligned: the bases are, and the per-step offsets N*in*4, N*out_f*4 bytes
 * are multiples of 256. The decision depends on (N, in, out_f) and the bases only;
 * bases come from the allocator model (512-byte blocks in cudaMalloc segments, which
 * are 256-byte aligned), so no plan changes it. */
static int use_cublas(const remat_cuda_ctx *c, const float *dinp, const float *dout, const float *inp,
                      const float *weight, const float *scratch, int64_t N, int64_t in, int64_t out_f) {
    if (c->gemm_mode != REMAT_CUDA_GEMM_AUTO) return 0;
    if ((N * in) % 64 != 0 || (N * out_f) % 64 != 0) return 0;
    if (N > 0x7fffffff || in > 0x7fffffff || out_f > 0x7fffffff) return 0;
    return aligned256(dinp) && aligned256(dout) && aligned256(inp) && aligned256(weight) && aligned256(scratch);
}

void remat_cuda_linear_backward(remat_cuda_ctx *c, float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, float *scratch, int64_t t_steps,
                                int64_t N, int64_t in, int64_t out_f) {
    if (t_steps <= 0 || N <= 0 || out_f <= 0) return;
    const int cublas = use_cublas(c, dinp, dout, inp, weight, scratch, N, in, out_f);
    if (dinp) {
        if (cublas) {
            /* dinp_t[N, in] += dout_t[N, out_f] W[out_f, in]; column-major view:
             * dinp_t^T (in x N) = W^T (in x out_f) dout_t^T (out_f x N). */
            const float one = 1.0f;
            for (int64_t t = 0; t < t_steps; t++) {
                cublasCheck(cublasSgemm(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, (int)in, (int)N, (int)out_f, &one,
                                        weight, (int)in, dout + t * N * out_f, (int)out_f, &one,
                                        dinp + t * N * in, (int)in));
                c->gemm_calls_cublas++;
            }
        } else {
            gemm_layout(c, REMAT_CUDA_NN, dinp, dout, weight, t_steps * N, in, out_f, 1);
        }
    }
    if (dweight) {
        if (cublas) {
            /* P_t[out_f, in] = dout_t^T inp_t into scratch, then dweight += P_t, t descending.
             * Column-major view: P_t^T (in x out_f) = inp_t^T (in x N) dout_t (N x out_f). */
            const float one = 1.0f, zero = 0.0f;
            for (int64_t t = t_steps - 1; t >= 0; t--) {
                cublasCheck(cublasSgemm(c->cublas, CUBLAS_OP_N, CUBLAS_OP_T, (int)in, (int)out_f, (int)N, &one,
                                        inp + t * N * in, (int)in, dout + t * N * out_f, (int)out_f, &zero,
                                        scratch, (int)in));
                c->gemm_calls_cublas++;
                REMAT_LAUNCH(remat_cuda_blocks(out_f * in), REMAT_CUDA_THREADS, 0, c->stream, add_into_kernel)(dweight, scratch,
                                                                                                    out_f * in);
                cudaCheckLaunch();
            }
        } else {
            dweight_tiled(c, dweight, dout, inp, t_steps, N, in, out_f);
        }
    }
    if (dbias) dbias_launch(c, dbias, dout, t_steps, N, out_f);
}

/* bf16: the tiled kernel only (cuBLAS takes float operands here). */
void remat_cuda_linear_backward_bf16(remat_cuda_ctx *c, uint16_t *dinp, float *dweight, float *dbias,
                                     const uint16_t *dout, const uint16_t *inp, const uint16_t *weight, float *scratch,
                                     int64_t t_steps, int64_t N, int64_t in, int64_t out_f) {
    (void)scratch;
    if (t_steps <= 0 || N <= 0 || out_f <= 0) return;
    if (dinp) gemm_layout(c, REMAT_CUDA_NN, dinp, dout, weight, t_steps * N, in, out_f, 1);
    if (dweight) dweight_tiled(c, dweight, dout, inp, t_steps, N, in, out_f);
    if (dbias) dbias_launch(c, dbias, dout, t_steps, N, out_f);
}
