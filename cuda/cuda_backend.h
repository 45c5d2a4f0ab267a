/* cuda_backend.h - what the CUDA backend offers beyond the backend.h vtable: its GEMM
 * routing, the device's description, the driver's view of memory and per-op device
 * times from CUDA events. Declared for every build: in a CPU-only build
 * (backend_stub.c) each function returns REMAT_ERR_DEVICE "built without CUDA".
 *
 * All functions take a backend made by remat_backend_cuda_init; given another
 * backend they return REMAT_ERR_INPUT.
 */
#ifndef REMAT_CUDA_BACKEND_H
#define REMAT_CUDA_BACKEND_H

#include <stdint.h>

#include "core/exec/backend.h"
#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the linear layers' GEMMs run (docs/cuda.md, "Determinism"):
 *  AUTO   forward: the backend's own tiled kernel (one fmaf chain per element over k
 *         ascending, the reference GEMM's definition, so bit-identical to it and
 *         independent of the number of rows); backward: cuBLAS, one call per time step
 *         (a shape that no plan changes) when every pointer cuBLAS sees is 256-byte
 *         aligned, the tiled kernel otherwise.
 *  TILED  the tiled kernel everywhere: every GEMM bit-identical to the reference.
 * The environment variable REMAT_CUDA_GEMM=auto|tiled sets the mode at init. */
typedef enum remat_cuda_gemm { REMAT_CUDA_GEMM_AUTO = 0, REMAT_CUDA_GEMM_TILED = 1 } remat_cuda_gemm;

remat_status remat_backend_cuda_set_gemm(remat_backend *b, remat_cuda_gemm mode, remat_error *err);

typedef struct remat_cuda_info {
    char device_name[256];
    int device;
    int cc_major, cc_minor;
    int sm_count;
    double peak_bandwidth;         /* bytes/s: 2 * memory clock * bus width (device attributes) */
    int64_t total_bytes;           /* cudaMemGetInfo total */
    int64_t free_at_init;          /* cudaMemGetInfo free after context, stream and cuBLAS creation */
    int64_t free_at_peak;          /* lowest free seen right after a segment allocation */
    int64_t internal_bytes;        /* the backend's own buffers: cuBLAS workspace, scratch */
    int64_t segment_bytes;         /* bytes of segments now held (cudaMalloc through segment_alloc) */
    int64_t peak_segment_bytes;
    int64_t n_segments;
    int64_t gemm_calls_cublas;     /* GEMM calls routed to cuBLAS / to the tiled kernel */
    int64_t gemm_calls_tiled;
    remat_cuda_gemm gemm_mode;
} remat_cuda_info;

remat_status remat_backend_cuda_get_info(const remat_backend *b, remat_cuda_info *out, remat_error *err);

/* Starts peak_segment_bytes and free_at_peak afresh from now, so that setup a caller
 * does not want counted is not (remat run calls it after remat_session_init, whose
 * compressor calibration holds three 4 MiB buffers when a trace is recorded). */
remat_status remat_backend_cuda_reset_peak(remat_backend *b, remat_error *err);

/* Device time per backend entry, from CUDA events around each call (off by default:
 * the events cost a little). Names are the backend_ops field names. */
#define REMAT_CUDA_PROF_MAX 128 /* at least the number of backend entries (static_assert in cuda_backend.cu) */
typedef struct remat_cuda_profile {
    int n;
    const char *name[REMAT_CUDA_PROF_MAX];
    int64_t calls[REMAT_CUDA_PROF_MAX];
    double seconds[REMAT_CUDA_PROF_MAX];
} remat_cuda_profile;

remat_status remat_backend_cuda_set_profiling(remat_backend *b, int on, remat_error *err);
/* Synchronises, then sums the recorded events. reset = 1 clears the totals after. */
remat_status remat_backend_cuda_get_profile(remat_backend *b, remat_cuda_profile *out, int reset,
                                            remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
