/* cuda_internal.cuh - the CUDA backend's context and the host entry of every kernel
 * file. Each remat_cuda_<op> has the arguments and meaning of remat_ref_<op>
 * (core/ref/ref_kernels.h) with the context first; pointers are device pointers; work is
 * queued on ctx->stream (one stream: cuBLAS's reproducibility guarantee holds for a
 * single active stream).
 */
#ifndef REMAT_CUDA_INTERNAL_CUH
#define REMAT_CUDA_INTERNAL_CUH

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/exec/backend.h"
#include "core/model/model.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_check.cuh"
#include "cuda/launch.cuh"

/* Byte offsets of the device scalars in ctx->small (each op uses its slots between
 * its launch and its read-back; the single stream orders the users). */
#define REMAT_CUDA_SMALL_LOSS 0   /* double: the loss sum */
#define REMAT_CUDA_SMALL_BAD 64   /* unsigned long long: first offending index (atomicMin) */
#define REMAT_CUDA_SMALL_COUNT 72 /* unsigned long long: a count (non-zeros, ones) */
#define REMAT_CUDA_SMALL_BYTES 128 /* host read-backs of arbitrary bytes start here */

/* Threads per block of the element-wise kernels, and the grid cap (grid-stride loops). */
#define REMAT_CUDA_THREADS 256
#define REMAT_CUDA_MAX_BLOCKS 65535

typedef struct remat_cuda_segment {
    void *ptr;
    int64_t bytes;
} remat_cuda_segment;

typedef struct remat_cuda_prof_event {
    int op;
    cudaEvent_t start, stop;
} remat_cuda_prof_event;

typedef struct remat_cuda_ctx {
    int device;
    cudaDeviceProp prop;
    cudaStream_t stream;
    cudaEvent_t clock_ref, clock_cur; /* now(): device time of clock_cur since clock_ref */
    double clock_base;                /* seconds at clock_ref */
    cublasHandle_t cublas;
    void *cublas_ws;            /* the user workspace given to cuBLAS (no hidden allocation) */
    int64_t cublas_ws_bytes;
    void *small;                /* device scalars: loss partials, error slots, counters */
    void *small_host;           /* pinned mirror of `small` for read-backs */
    int64_t small_bytes;
    void *scratch;              /* grows on demand: per-block counts of the compressors */
    int64_t scratch_bytes;
    remat_cuda_segment *segs;   /* live segments */
    int64_t n_segs, cap_segs;
    int64_t segment_bytes, peak_segment_bytes;
    int64_t free_at_init, free_at_peak, total_bytes;
    remat_cuda_gemm gemm_mode;
    int64_t gemm_calls_cublas, gemm_calls_tiled;
    int profiling;
    remat_cuda_prof_event *prof;  /* recorded, not yet summed */
    int64_t n_prof, cap_prof;
    int64_t prof_calls[REMAT_CUDA_PROF_MAX];
    double prof_seconds[REMAT_CUDA_PROF_MAX];
} remat_cuda_ctx;

/* Launch shape of an element-wise kernel over n items. */
static inline unsigned remat_cuda_blocks(int64_t n) {
    int64_t b = (n + REMAT_CUDA_THREADS - 1) / REMAT_CUDA_THREADS;
    if (b < 1) b = 1;
    if (b > REMAT_CUDA_MAX_BLOCKS) b = REMAT_CUDA_MAX_BLOCKS;
    return (unsigned)b;
}

/* Device scratch of at least `bytes` (ctx->scratch); REMAT_ERR_DEVICE with the
 * numbers when the device cannot provide it. */
remat_status remat_cuda_scratch(remat_cuda_ctx *c, int64_t bytes, void **out, remat_error *err);

/* ---- linear.cu ---- */
/* The tiled GEMMs (C (+)= A op B, layouts as remat_ref_gemm_nt/nn/tn), exposed for tests. */
void remat_cuda_gemm_nt(remat_cuda_ctx *c, float *C, const float *A, const float *B, int64_t M, int64_t N,
                        int64_t K, int accumulate);
void remat_cuda_gemm_nn(remat_cuda_ctx *c, float *C, const float *A, const float *B, int64_t M, int64_t N,
                        int64_t K, int accumulate);
void remat_cuda_gemm_tn(remat_cuda_ctx *c, float *C, const float *A, const float *B, int64_t M, int64_t N,
                        int64_t K, int accumulate);
/* The same tiled chain in a given layout, with bf16 operands (uint16_t patterns) where
 * the type says so: inputs widened, a bf16 C read widened and stored rounded once (the
 * ref twins'). One overload per operand combination the layers use. */
typedef enum remat_cuda_layout { REMAT_CUDA_NT, REMAT_CUDA_NN, REMAT_CUDA_TN } remat_cuda_layout;
void remat_cuda_gemm_typed(remat_cuda_ctx *c, remat_cuda_layout layout, float *C, const float *A, const float *B,
                           int64_t M, int64_t N, int64_t K, int accumulate);
void remat_cuda_gemm_typed(remat_cuda_ctx *c, remat_cuda_layout layout, uint16_t *C, const uint16_t *A,
                           const uint16_t *B, int64_t M, int64_t N, int64_t K, int accumulate);
void remat_cuda_gemm_typed(remat_cuda_ctx *c, remat_cuda_layout layout, float *C, const uint16_t *A,
                           const uint16_t *B, int64_t M, int64_t N, int64_t K, int accumulate);
void remat_cuda_gemm_typed(remat_cuda_ctx *c, remat_cuda_layout layout, uint16_t *C, const uint16_t *A,
                           const float *B, int64_t M, int64_t N, int64_t K, int accumulate);
void remat_cuda_gemm_typed(remat_cuda_ctx *c, remat_cuda_layout layout, float *C, const uint16_t *A, const float *B,
                           int64_t M, int64_t N, int64_t K, int accumulate);

/* ---- compress.cu ---- */
int64_t remat_cuda_count_nonzero(remat_cuda_ctx *c, const void *x, remat_encoding enc, int64_t n);
remat_status remat_cuda_compress(remat_cuda_ctx *c, remat_compressor comp, void *dst, int64_t dst_bytes,
                                 const void *src, remat_encoding src_enc, int64_t n, remat_error *err);
remat_status remat_cuda_decompress(remat_cuda_ctx *c, remat_compressor comp, void *dst, remat_encoding dst_enc,
                                   int64_t n, const void *src, int64_t src_bytes, remat_error *err);

/* ---- every kernel entry of backend.h's list, fp32 and the bf16-storage twins (linear.cu,
 * conv.cu, pool.cu, neuron.cu, batchnorm.cu, elementwise.cu, loss.cu): remat_cuda_<name>
 * has the arguments of remat_ref_<name> (ref_kernels.h) with the context first; a twin
 * runs the same kernels as its float entry, instantiated for uint16_t activations. ---- */
#define REMAT_CUDA_DECLARE(ret, name, params, args) ret remat_cuda_##name(remat_cuda_ctx *c, REMAT_UNPAREN params);
REMAT_BACKEND_BASE_KERNELS(REMAT_CUDA_DECLARE)
#undef REMAT_CUDA_DECLARE

#endif
