/* backend_stub.c - the CUDA entry points for builds without the CUDA toolkit (the
 * default configuration; --config=cuda links the cuda/ .cu files instead, see cuda/BUILD).
 * Every function reports REMAT_ERR_DEVICE "no CUDA device: remat was built without
 * CUDA ..." so callers and tests can say why nothing ran on a GPU. */
#include "core/exec/backend.h"
#include "cuda/cuda_backend.h"

#define BUILT_WITHOUT \
    "no CUDA device: remat was built without CUDA (build with --config=cuda, or --config=cudaemu for the CPU emulator)"

remat_status remat_backend_cuda_init(remat_backend *out, int device, remat_error *err) {
    out->ops = NULL;
    out->ctx = NULL;
    return remat_error_set(err, REMAT_ERR_DEVICE,
                           "no CUDA device: remat was built without CUDA (device %d requested; build with "
                           "--config=cuda, or --config=cudaemu for the CPU emulator)",
                           device);
}

remat_status remat_backend_cuda_set_gemm(remat_backend *b, remat_cuda_gemm mode, remat_error *err) {
    (void)b;
    (void)mode;
    return remat_error_set(err, REMAT_ERR_DEVICE, BUILT_WITHOUT);
}

remat_status remat_backend_cuda_get_info(const remat_backend *b, remat_cuda_info *out, remat_error *err) {
    (void)b;
    (void)out;
    return remat_error_set(err, REMAT_ERR_DEVICE, BUILT_WITHOUT);
}

remat_status remat_backend_cuda_reset_peak(remat_backend *b, remat_error *err) {
    (void)b;
    return remat_error_set(err, REMAT_ERR_DEVICE, BUILT_WITHOUT);
}

remat_status remat_backend_cuda_set_profiling(remat_backend *b, int on, remat_error *err) {
    (void)b;
    (void)on;
    return remat_error_set(err, REMAT_ERR_DEVICE, BUILT_WITHOUT);
}

remat_status remat_backend_cuda_get_profile(remat_backend *b, remat_cuda_profile *out, int reset, remat_error *err) {
    (void)b;
    (void)out;
    (void)reset;
    return remat_error_set(err, REMAT_ERR_DEVICE, BUILT_WITHOUT);
}
