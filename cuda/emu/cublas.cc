/* cublas.cc - the emulator's cuBLAS: handle settings and a column-major SGEMM queued
 * on the handle's stream. Its summation order depends on the shape, as a real
 * library's kernel choice does: an output of at most 4096 elements with K >= 64 is
 * computed as four K-slices summed at the end (split-K); any other shape is one fmaf
 * chain over k ascending. Pointers must be device memory.
 */
#include <math.h>

#include "cuda/emu/cublas_v2.h"
#include "cuda/emu/emu_internal.h"

struct remat_emu_cublas {
    cudaStream_t stream;
    cublasMath_t math;
    cublasPointerMode_t pointer_mode;
    void *workspace;
    size_t workspace_bytes;
};

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    *h = new remat_emu_cublas{nullptr, CUBLAS_DEFAULT_MATH, CUBLAS_POINTER_MODE_HOST, nullptr, 0};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
    remat_emu::drain();
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *workspace, size_t bytes) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && !remat_emu::is_device(workspace, bytes)) return CUBLAS_STATUS_INVALID_VALUE;
    h->workspace = workspace;
    h->workspace_bytes = bytes;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc) {
    if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || ta == CUBLAS_OP_C || tb == CUBLAS_OP_C) return CUBLAS_STATUS_INVALID_VALUE;
    const int a_rows = ta == CUBLAS_OP_N ? m : k, b_rows = tb == CUBLAS_OP_N ? k : n;
    if (lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    if (h->pointer_mode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED;
    const int a_cols = ta == CUBLAS_OP_N ? k : m, b_cols = tb == CUBLAS_OP_N ? n : k;
    if ((k > 0 && (!remat_emu::is_device(A, (size_t)lda * (size_t)(a_cols - 1) * 4 + (size_t)a_rows * 4) ||
                   !remat_emu::is_device(B, (size_t)ldb * (size_t)(b_cols - 1) * 4 + (size_t)b_rows * 4))) ||
        !remat_emu::is_device(C, (size_t)ldc * (size_t)(n - 1) * 4 + (size_t)m * 4))
        remat_emu::fatal("cublasSgemm: an operand is not device memory (or is smaller than m=%d n=%d k=%d)", m, n, k);
    const float al = *alpha, be = *beta;
    remat_emu::enqueue([=] {
        const int slices = ((long long)m * n <= 4096 && k >= 64) ? 4 : 1;
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                float total = 0.0f;
                for (int s = 0; s < slices; s++) {
                    const int k0 = (int)((long long)k * s / slices), k1 = (int)((long long)k * (s + 1) / slices);
                    float acc = 0.0f;
                    for (int l = k0; l < k1; l++) {
                        const float a = ta == CUBLAS_OP_N ? A[(size_t)l * lda + i] : A[(size_t)i * lda + l];
                        const float b = tb == CUBLAS_OP_N ? B[(size_t)j * ldb + l] : B[(size_t)l * ldb + j];
                        acc = fmaf(a, b, acc);
                    }
                    total = s == 0 ? acc : total + acc;
                }
                float *c = &C[(size_t)j * ldc + i];
                *c = be == 0.0f ? al * total : al * total + be * *c;
            }
    });
    return CUBLAS_STATUS_SUCCESS;
}
