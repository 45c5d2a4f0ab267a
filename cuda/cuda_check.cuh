/* cuda_check.cuh - error checks for every CUDA runtime and cuBLAS call, and after
 * every kernel launch, naming the file and line.
 *
 * The backend's kernel entries return void (backend.h mirrors ref_kernels.h), so a
 * failing call there cannot be handed back to the caller: it prints one line
 * "remat: CUDA error at <file>:<line>: <call>: <name>: <text>" on stderr and exits
 * with status 1 (a device fault or a bug, never an expected condition). Expected
 * failures - no device, out of memory, a value a compressor refuses - are checked
 * with the *_status forms below and returned as remat_status, never fatal.
 */
#ifndef REMAT_CUDA_CHECK_CUH
#define REMAT_CUDA_CHECK_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>

void remat_cuda_fatal(const char *file, int line, const char *call, const char *name, const char *text);
const char *remat_cublas_status_name(cublasStatus_t s);

#define cudaCheck(call)                                                                            \
    do {                                                                                           \
        cudaError_t remat_e_ = (call);                                                             \
        if (remat_e_ != cudaSuccess)                                                               \
            remat_cuda_fatal(__FILE__, __LINE__, #call, cudaGetErrorName(remat_e_),                \
                             cudaGetErrorString(remat_e_));                                        \
    } while (0)

#define cublasCheck(call)                                                                          \
    do {                                                                                           \
        cublasStatus_t remat_s_ = (call);                                                          \
        if (remat_s_ != CUBLAS_STATUS_SUCCESS)                                                     \
            remat_cuda_fatal(__FILE__, __LINE__, #call, remat_cublas_status_name(remat_s_),        \
                             "cuBLAS call failed");                                                \
    } while (0)

/* After every <<<...>>>: launch errors (bad configuration) surface here; errors of the
 * kernel's execution surface at the next synchronising call, which is checked too. */
#define cudaCheckLaunch() cudaCheck(cudaGetLastError())

#endif
