// cuda_emu_self_test.cc - the CPU emulator of the CUDA backend (cuda/emu) checked on
// its own: that it runs kernels with CUDA's semantics (thread coordinates, barriers,
// warp votes and shuffles, asynchronous copies) and that it catches what it promises
// to catch (races through the shuffled order, divergent barriers, host pointers given
// to kernels, bad launch configurations). If these fail, cuda_emu_test proves nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "cuda/launch.cuh"

namespace {

__global__ void coords_kernel(unsigned *out) {
    const unsigned b = blockIdx.y * gridDim.x + blockIdx.x;
    const unsigned t = threadIdx.y * blockDim.x + threadIdx.x;
    out[b * blockDim.x * blockDim.y + t] = b * 1000u + t;
}

// Reads a neighbour's shared slot: with the barrier it is the neighbour's value, without
// it the value depends on which thread ran first (a race).
template <int SYNC>
__global__ void neighbour_kernel(int *out) {
    __shared__ int slot[64];
    const int t = (int)threadIdx.x;
    slot[t] = t + 1;
    if (SYNC) __syncthreads();
    out[t] = slot[(t + 1) % 64];
    if (SYNC) __syncthreads();
    slot[t] = -1;  // the next block (or launch) must not see this without writing first
}

__global__ void warp_kernel(unsigned *ballots, int *sums) {
    const int lane = (int)threadIdx.x & 31;
    ballots[threadIdx.x] = __ballot_sync(0xffffffffu, lane % 2 == 0);
    int v = lane;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    sums[threadIdx.x] = v;
}

__global__ void count_kernel(int *out) { out[threadIdx.x] = __syncthreads_count(threadIdx.x < 10); }

__global__ void divergent_kernel(int *out) {
    if (threadIdx.x < 16) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1;
}

__global__ void fill_kernel(float *out, float v, int n) {
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += (int)(gridDim.x * blockDim.x)) out[i] = v;
}

template <class T>
T *dev_alloc(size_t n) {
    void *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
    return (T *)p;
}

template <class T>
std::vector<T> to_host(const T *d, size_t n) {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpyAsync(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost, nullptr), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    return h;
}

TEST(CudaEmu, ThreadAndBlockCoordinates) {
    unsigned *d = dev_alloc<unsigned>(6 * 32);
    REMAT_LAUNCH(dim3(3, 2), dim3(8, 4), 0, nullptr, coords_kernel)(d);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    std::vector<unsigned> h = to_host(d, 6 * 32);
    for (unsigned b = 0; b < 6; b++)
        for (unsigned t = 0; t < 32; t++) ASSERT_EQ(h[b * 32 + t], b * 1000u + t) << b << " " << t;
    cudaFree(d);
}

TEST(CudaEmu, BarrierOrdersSharedMemoryAndTheShuffleExposesARace) {
    int *d = dev_alloc<int>(64);
    std::set<std::vector<int>> racy;
    for (int run = 0; run < 8; run++) {
        REMAT_LAUNCH(1, 64, 0, nullptr, neighbour_kernel<1>)(d);
        std::vector<int> h = to_host(d, 64);
        for (int t = 0; t < 64; t++) ASSERT_EQ(h[t], (t + 1) % 64 + 1) << t;
        REMAT_LAUNCH(1, 64, 0, nullptr, neighbour_kernel<0>)(d);
        racy.insert(to_host(d, 64));
    }
    // Without the barrier the threads' order decides what each reads: the shuffled
    // order gives different results from launch to launch.
    EXPECT_GT(racy.size(), 1u);
    cudaFree(d);
}

TEST(CudaEmu, WarpBallotShuffleAndSyncthreadsCount) {
    unsigned *ballots = dev_alloc<unsigned>(64);
    int *sums = dev_alloc<int>(64), *counts = dev_alloc<int>(64);
    REMAT_LAUNCH(1, 64, 0, nullptr, warp_kernel)(ballots, sums);
    REMAT_LAUNCH(1, 64, 0, nullptr, count_kernel)(counts);
    std::vector<unsigned> b = to_host(ballots, 64);
    std::vector<int> s = to_host(sums, 64), c = to_host(counts, 64);
    for (int t = 0; t < 64; t++) {
        EXPECT_EQ(b[t], 0x55555555u) << t;
        EXPECT_EQ(c[t], 10) << t;
    }
    EXPECT_EQ(s[0], 496);   // 0 + 1 + ... + 31, tree-reduced into lane 0
    EXPECT_EQ(s[32], 496);  // the second warp's lane 0
    EXPECT_EQ(s[31], 31 * 32);  // past the warp's end a lane gets its own value: doubled 5 times
    cudaFree(ballots), cudaFree(sums), cudaFree(counts);
}

TEST(CudaEmu, WorkIsAsynchronousUntilASynchronisingCall) {
    float *d = dev_alloc<float>(4);
    void *pinned = nullptr;
    ASSERT_EQ(cudaMallocHost(&pinned, 16), cudaSuccess);
    memset(pinned, 0, 16);
    REMAT_LAUNCH(1, 32, 0, nullptr, fill_kernel)(d, 2.5f, 4);
    ASSERT_EQ(cudaMemcpyAsync(pinned, d, 16, cudaMemcpyDeviceToHost, nullptr), cudaSuccess);
    EXPECT_EQ(((float *)pinned)[0], 0.0f);  // queued, not yet run: reading now is a bug
    ASSERT_EQ(cudaStreamSynchronize(nullptr), cudaSuccess);
    EXPECT_EQ(((float *)pinned)[3], 2.5f);
    // A pageable source is staged at the call: changing it afterwards changes nothing.
    float src[4] = {1, 2, 3, 4};
    ASSERT_EQ(cudaMemcpyAsync(d, src, 16, cudaMemcpyHostToDevice, nullptr), cudaSuccess);
    src[0] = 99;
    EXPECT_EQ(to_host(d, 4)[0], 1.0f);
    // Fresh device memory is not zero: NaN, so a read of unwritten memory shows.
    float *fresh = dev_alloc<float>(1);
    EXPECT_TRUE(std::isnan(to_host(fresh, 1)[0]));
    cudaFreeHost(pinned), cudaFree(d), cudaFree(fresh);
}

TEST(CudaEmu, BadConfigurationsAndCopiesAreErrors) {
    float *d = dev_alloc<float>(4);
    REMAT_LAUNCH(1, 2048, 0, nullptr, fill_kernel)(d, 1.0f, 4);
    EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // read once, then cleared
    float host[4];
    EXPECT_EQ(cudaMemcpyAsync(host, host, 16, cudaMemcpyHostToDevice, nullptr), cudaErrorInvalidValue);
    EXPECT_EQ(cudaMemcpyAsync(d, d + 1, 16, cudaMemcpyDeviceToDevice, nullptr), cudaErrorInvalidValue);  // past the end
    (void)cudaGetLastError();
    void *big = nullptr;
    size_t fr = 0, tot = 0;
    ASSERT_EQ(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&big, tot + 1), cudaErrorMemoryAllocation);
    EXPECT_EQ(big, nullptr);
    cudaFree(d);
}

using CudaEmuDeathTest = ::testing::Test;

TEST_F(CudaEmuDeathTest, DivergentSyncthreadsIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    int *d = dev_alloc<int>(32);
    EXPECT_DEATH(
        {
            REMAT_LAUNCH(1, 32, 0, nullptr, divergent_kernel)(d);
            cudaStreamSynchronize(nullptr);
        },
        "divergent __syncthreads: kernel divergent_kernel");
    cudaFree(d);
}

TEST_F(CudaEmuDeathTest, HostPointerGivenToAKernelIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    std::vector<float> host(4);
    EXPECT_DEATH(REMAT_LAUNCH(1, 32, 0, nullptr, fill_kernel)(host.data(), 1.0f, 4),
                 "kernel fill_kernel: argument 1 .* is not device memory");
}

// Column-major SGEMM with transposes against a plain triple loop in double.
TEST(CudaEmu, CublasSgemmIsAColumnMajorGemmWhoseOrderDependsOnTheShape) {
    cublasHandle_t h;
    ASSERT_EQ(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
    const int m = 5, n = 3, k = 7;
    std::vector<float> A(k * m), B(n * k), C(m * n, 0.5f);  // op(A) = A^T (A is k x m), op(B) = B (k x n)
    for (size_t i = 0; i < A.size(); i++) A[i] = (float)((i * 7) % 11) - 5.0f;
    for (size_t i = 0; i < B.size(); i++) B[i] = (float)((i * 5) % 13) - 6.0f;
    float *dA = dev_alloc<float>(A.size()), *dB = dev_alloc<float>(B.size()), *dC = dev_alloc<float>(C.size());
    cudaMemcpyAsync(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice, nullptr);
    cudaMemcpyAsync(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice, nullptr);
    cudaMemcpyAsync(dC, C.data(), C.size() * 4, cudaMemcpyHostToDevice, nullptr);
    const float alpha = 2.0f, beta = 1.0f;
    ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, dA, k, dB, k, &beta, dC, m),
              CUBLAS_STATUS_SUCCESS);
    std::vector<float> got = to_host(dC, C.size());
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++) s += (double)A[i * k + l] * B[j * k + l];
            EXPECT_EQ(got[j * m + i], (float)(2.0 * s + 0.5)) << i << " " << j;  // small integers: exact
        }
    // A long K into a small output is split into four partial sums: another rounding
    // than one chain, which is what a split-K kernel does to code assuming otherwise.
    const int K = 4096;
    std::vector<float> a(K), b(K);
    for (int l = 0; l < K; l++) a[l] = 1.0f + (float)l * 1e-3f, b[l] = 1.0f / (1.0f + (float)(l % 17));
    float chain = 0.0f;
    for (int l = 0; l < K; l++) chain = fmaf(a[l], b[l], chain);
    float *da = dev_alloc<float>(K), *db = dev_alloc<float>(K), *dc = dev_alloc<float>(1);
    cudaMemcpyAsync(da, a.data(), K * 4, cudaMemcpyHostToDevice, nullptr);
    cudaMemcpyAsync(db, b.data(), K * 4, cudaMemcpyHostToDevice, nullptr);
    const float one = 1.0f, zero = 0.0f;
    ASSERT_EQ(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 1, 1, K, &one, da, K, db, K, &zero, dc, 1),
              CUBLAS_STATUS_SUCCESS);
    const float split = to_host(dc, 1)[0];
    EXPECT_NE(split, chain);
    EXPECT_NEAR(split, chain, 1e-4 * std::fabs(chain));
    cublasDestroy(h);
    cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(da), cudaFree(db), cudaFree(dc);
}

}  // namespace
