/* compress.cu - count_nonzero and the compressors of core/codec/compress.h on the device,
 * with the reference's (compress.c) checks, their order and their messages:
 *  1. arguments (compressor id, n, buffer present);
 *  2. values: the FIRST element the format cannot represent (by bit pattern), found
 *     with atomicMin over indices - the minimum does not depend on the order the
 *     threads run in - then read back with its value for the message;
 *  3. sizes;  4. encoding.
 * When the size is right, checking and encoding share one pass (compress.h leaves
 * dst unspecified after a refusal); decompression checks first and writes dst only
 * for a valid buffer, as the reference does.
 *
 * Sparse: positions come out ascending and deterministic by a two-pass scheme:
 * pass 1 counts the ones of each chunk of SPARSE_CHUNK elements (a block per chunk),
 * an exclusive scan over the chunk counts (one block, integer sums) gives each chunk
 * its output offset and the total, pass 2 writes each chunk's positions in element
 * order (ballot prefix inside a warp, warp totals inside the block, row by row).
 * Integer counts may use atomics (integer addition is exact in any order).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/codec/compress.h"
#include "cuda/compress_messages.h"
#include "cuda/cuda_internal.cuh"
#include "cuda/kernel_bodies.h"

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

#define NO_INDEX 0xffffffffffffffffull

/* Sparse chunking: 256 threads x 16 rows = 4096 elements per block. */
#define SPARSE_THREADS 256
#define SPARSE_ROWS 16
#define SPARSE_CHUNK (SPARSE_THREADS * SPARSE_ROWS)

typedef unsigned long long ull;

static ull *bad_slot(remat_cuda_ctx *c) { return (ull *)((char *)c->small + REMAT_CUDA_SMALL_BAD); }
static ull *count_slot(remat_cuda_ctx *c) { return (ull *)((char *)c->small + REMAT_CUDA_SMALL_COUNT); }

/* Copies `bytes` of device memory to the host (through the pinned area) and waits. */
static void read_back(remat_cuda_ctx *c, void *host, const void *dev, int64_t bytes) {
    char *h = (char *)c->small_host + REMAT_CUDA_SMALL_BYTES;
    cudaCheck(cudaMemcpyAsync(h, dev, (size_t)bytes, cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaStreamSynchronize(c->stream));
    memcpy(host, h, (size_t)bytes);
}

/* Reads the two slots (first bad index, count) in one transfer. */
static void read_slots(remat_cuda_ctx *c, ull *bad, ull *count) {
    ull v[2];
    read_back(c, v, bad_slot(c), sizeof v);
    if (bad) *bad = v[0];
    if (count) *count = v[1];
}

static void reset_slots(remat_cuda_ctx *c) {
    const ull init[2] = {NO_INDEX, 0};
    /* Both slots are adjacent (REMAT_CUDA_SMALL_BAD, REMAT_CUDA_SMALL_COUNT). */
    memcpy((char *)c->small_host + REMAT_CUDA_SMALL_BAD, init, sizeof init);
    cudaCheck(cudaMemcpyAsync(bad_slot(c), (char *)c->small_host + REMAT_CUDA_SMALL_BAD, sizeof init,
                              cudaMemcpyHostToDevice, c->stream));
}

/* ---- count_nonzero ---- */

template <typename T>
__global__ void count_nonzero_kernel(ull *count, const T *__restrict__ x, int64_t n) {
    ull local = 0;
    GRID_STRIDE(i, n) local += remat_cuda::float_bits(remat_cuda::act_ld(x, i)) != 0u;
    /* warp sum, then one atomic per warp */
    for (int off = 16; off > 0; off >>= 1) local += __shfl_down_sync(0xffffffffu, local, off);
    if ((threadIdx.x & 31) == 0 && local) atomicAdd(count, local);
}

int64_t remat_cuda_count_nonzero(remat_cuda_ctx *c, const void *x, remat_encoding enc, int64_t n) {
    if (n <= 0) return 0;
    reset_slots(c);
    if (enc == REMAT_ENC_BF16)
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, count_nonzero_kernel<uint16_t>)(
            count_slot(c), (const uint16_t *)x, n);
    else
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, count_nonzero_kernel<float>)(
            count_slot(c), (const float *)x, n);
    cudaCheckLaunch();
    ull count;
    read_slots(c, nullptr, &count);
    return (int64_t)count;
}

/* ---- value checks and encoders ---- */

/* mode 0: check only; 1: check and write. */
template <typename T>
__global__ void bool_kernel(uint8_t *__restrict__ out, ull *bad, const T *__restrict__ src, int64_t n, int write) {
    GRID_STRIDE(i, n) {
        const float f = remat_cuda::act_ld(src, i);
        if (!remat_cuda::is_binary(f)) atomicMin(bad, (ull)i);
        if (write) out[i] = (uint8_t)remat_cuda::is_one(f);
    }
}

template <typename T>
__global__ void bit_kernel(uint8_t *__restrict__ out, ull *bad, const T *__restrict__ src, int64_t n, int write) {
    const int64_t nbytes = (n + 7) / 8;
    GRID_STRIDE(b, nbytes) {
        for (int j = 0; j < 8 && b * 8 + j < n; j++)
            if (!remat_cuda::is_binary(remat_cuda::act_ld(src, b * 8 + j))) {
                atomicMin(bad, (ull)(b * 8 + j));
                break;
            }
        if (write) out[b] = remat_cuda::bit_pack_byte(src, n, b);
    }
}

template <typename T>
__global__ void uint8_kernel(uint8_t *__restrict__ out, ull *bad, const T *__restrict__ src, int64_t n, int write) {
    GRID_STRIDE(i, n) {
        const float f = remat_cuda::act_ld(src, i);
        const int ok = remat_cuda::is_uint8_value(f);
        if (!ok) atomicMin(bad, (ull)i);
        if (write) out[i] = ok ? (uint8_t)(int)f : (uint8_t)0;
    }
}

/* Sparse pass 1: validity and the number of ones of each chunk. */
template <typename T>
__global__ void __launch_bounds__(SPARSE_THREADS)
    sparse_count_kernel(ull *__restrict__ counts, ull *bad, const T *__restrict__ src, int64_t n) {
    const int64_t base = (int64_t)blockIdx.x * SPARSE_CHUNK;
    int total = 0;
    for (int r = 0; r < SPARSE_ROWS; r++) {
        const int64_t i = base + (int64_t)r * SPARSE_THREADS + threadIdx.x;
        int one = 0;
        if (i < n) {
            const float f = remat_cuda::act_ld(src, i);
            if (!remat_cuda::is_binary(f)) atomicMin(bad, (ull)i);
            one = remat_cuda::is_one(f);
        }
        total += __syncthreads_count(one);
    }
    if (threadIdx.x == 0) counts[blockIdx.x] = (ull)total;
}

/* Exclusive scan of counts[0..nb) in place (one block of 1024 threads), total to *sum. */
#define SCAN_THREADS 1024
__global__ void __launch_bounds__(SCAN_THREADS) exclusive_scan_kernel(ull *counts, int64_t nb, ull *sum) {
    __shared__ ull part[SCAN_THREADS];
    const int64_t per = (nb + SCAN_THREADS - 1) / SCAN_THREADS;
    const int64_t lo = threadIdx.x * per, hi = lo + per < nb ? lo + per : nb;
    ull s = 0;
    for (int64_t i = lo; i < hi; i++) s += counts[i];
    part[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        ull run = 0;
        for (int t = 0; t < SCAN_THREADS; t++) {
            const ull v = part[t];
            part[t] = run;
            run += v;
        }
        *sum = run;
    }
    __syncthreads();
    ull run = part[threadIdx.x];
    for (int64_t i = lo; i < hi; i++) {
        const ull v = counts[i];
        counts[i] = run;
        run += v;
    }
}

__device__ __forceinline__ void store_u32(uint8_t *out, ull w, uint32_t pos, int aligned) {
    if (aligned) {
        ((uint32_t *)out)[w] = pos;
    } else { /* little-endian, as the host stores uint32 */
        out[4 * w + 0] = (uint8_t)(pos);
        out[4 * w + 1] = (uint8_t)(pos >> 8);
        out[4 * w + 2] = (uint8_t)(pos >> 16);
        out[4 * w + 3] = (uint8_t)(pos >> 24);
    }
}

/* Sparse pass 2: each chunk writes its ones' positions from its offset, in element order. */
template <typename T>
__global__ void __launch_bounds__(SPARSE_THREADS)
    sparse_write_kernel(uint8_t *__restrict__ out, const ull *__restrict__ offsets, const T *__restrict__ src,
                        int64_t n, int aligned) {
    __shared__ int warp_tot[SPARSE_THREADS / 32];
    const int64_t base = (int64_t)blockIdx.x * SPARSE_CHUNK;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    ull w = offsets[blockIdx.x];
    for (int r = 0; r < SPARSE_ROWS; r++) {
        const int64_t i = base + (int64_t)r * SPARSE_THREADS + threadIdx.x;
        const int one = i < n && remat_cuda::is_one(remat_cuda::act_ld(src, i));
        const unsigned ballot = __ballot_sync(0xffffffffu, one);
        if (lane == 0) warp_tot[warp] = __popc(ballot);
        __syncthreads();
        int before = 0, row_total = 0;
        for (int q = 0; q < SPARSE_THREADS / 32; q++) {
            if (q < warp) before += warp_tot[q];
            row_total += warp_tot[q];
        }
        if (one) store_u32(out, w + (ull)before + (ull)__popc(ballot & ((1u << lane) - 1u)), (uint32_t)i, aligned);
        w += (ull)row_total;
        __syncthreads();
    }
}

/* ---- decompression ---- */

__global__ void bool_check_kernel(ull *bad, const uint8_t *__restrict__ in, int64_t n) {
    GRID_STRIDE(i, n) if (in[i] > 1) atomicMin(bad, (ull)i);
}

/* Decoded values are 0..255: exact in either element type. */
template <typename T>
__global__ void bytes_to_float_kernel(T *__restrict__ dst, const uint8_t *__restrict__ in, int64_t n) {
    GRID_STRIDE(i, n) remat_cuda::act_st(dst, i, (float)in[i]);
}

template <typename T>
__global__ void bit_unpack_kernel(T *__restrict__ dst, const uint8_t *__restrict__ in, int64_t n) {
    GRID_STRIDE(i, n) remat_cuda::act_st(dst, i, (float)((in[i >> 3] >> (i & 7)) & 1u));
}

__device__ __forceinline__ uint32_t load_u32(const uint8_t *in, int64_t w) {
    return (uint32_t)in[4 * w] | ((uint32_t)in[4 * w + 1] << 8) | ((uint32_t)in[4 * w + 2] << 16) |
           ((uint32_t)in[4 * w + 3] << 24);
}

__global__ void sparse_check_kernel(ull *bad, const uint8_t *__restrict__ in, int64_t nnz, int64_t n) {
    GRID_STRIDE(w, nnz) {
        const int64_t pos = (int64_t)load_u32(in, w);
        const int64_t prev = w > 0 ? (int64_t)load_u32(in, w - 1) : -1;
        if (pos >= n || pos <= prev) atomicMin(bad, (ull)w);
    }
}

template <typename T>
__global__ void sparse_scatter_kernel(T *__restrict__ dst, const uint8_t *__restrict__ in, int64_t nnz) {
    GRID_STRIDE(w, nnz) remat_cuda::act_st(dst, load_u32(in, w), 1.0f);
}

/* ---- host side: the reference's checks, messages in compress_messages.h ---- */

using namespace remat_cuda;

/* The first refused element, if any, as the reference reports it. */
template <typename T>
static remat_status report_bad(remat_cuda_ctx *c, remat_compressor comp, const T *src, ull bad, const char *what,
                               remat_error *err) {
    T v;
    read_back(c, &v, src + bad, sizeof v);
    return msg_refuse_value(err, comp, (int64_t)bad, act_ld(&v, 0), what);
}

template <typename T>
static remat_status compress_sparse(remat_cuda_ctx *c, uint8_t *out, int64_t dst_bytes, const T *src, int64_t n,
                                    remat_error *err) {
    const remat_compressor comp = REMAT_COMP_SPARSE;
    const int64_t nb = (n + SPARSE_CHUNK - 1) / SPARSE_CHUNK;
    if (nb > 0x7fffffff) return remat_error_set(err, REMAT_ERR_INPUT, "sparse compressor: n: too large");
    ull bad = NO_INDEX, nnz = 0;
    ull *counts = nullptr;
    if (nb > 0) {
        void *tmp;
        remat_status st = remat_cuda_scratch(c, nb * (int64_t)sizeof(ull), &tmp, err);
        if (st != REMAT_OK) return st;
        counts = (ull *)tmp;
        reset_slots(c);
        REMAT_LAUNCH((unsigned)nb, SPARSE_THREADS, 0, c->stream, sparse_count_kernel<T>)(counts, bad_slot(c), src, n);
        cudaCheckLaunch();
        REMAT_LAUNCH(1, SCAN_THREADS, 0, c->stream, exclusive_scan_kernel)(counts, nb, count_slot(c));
        cudaCheckLaunch();
        read_slots(c, &bad, &nnz);
    }
    if (bad != NO_INDEX) return report_bad(c, comp, src, bad, REMAT_CUDA_WHAT_BINARY, err);
    if (dst_bytes != (int64_t)nnz * 4) return msg_wrong_size(err, comp, "dst_bytes", (int64_t)nnz * 4, dst_bytes);
    if (nnz == 0) return REMAT_OK;
    REMAT_LAUNCH((unsigned)nb, SPARSE_THREADS, 0, c->stream, sparse_write_kernel<T>)(out, counts, src, n,
                                                                         ((uintptr_t)out % 4u) == 0);
    cudaCheckLaunch();
    return REMAT_OK;
}

template <typename T>
static remat_status compress(remat_cuda_ctx *c, remat_compressor comp, void *dst, int64_t dst_bytes, const T *src,
                             int64_t n, remat_error *err) {
    remat_status st = msg_check_args(comp, n, dst_bytes, dst, "dst_bytes", err);
    if (st != REMAT_OK) return st;
    if (n > 0 && !src)
        return msg_null_src(err, comp, n);
    uint8_t *out = (uint8_t *)dst;
    switch (comp) {
    case REMAT_COMP_NONE:
        if (dst_bytes != n * (int64_t)sizeof(T))
            return msg_wrong_size(err, comp, "dst_bytes", n * (int64_t)sizeof(T), dst_bytes);
        if (n) cudaCheck(cudaMemcpyAsync(out, src, (size_t)n * sizeof(T), cudaMemcpyDeviceToDevice, c->stream));
        return REMAT_OK;
    case REMAT_COMP_SPARSE: return compress_sparse(c, out, dst_bytes, src, n, err);
    case REMAT_COMP_BOOL:
    case REMAT_COMP_BIT:
    case REMAT_COMP_UINT8: {
        const int64_t want = comp == REMAT_COMP_BIT ? (n + 7) / 8 : n;
        const int write = dst_bytes == want;
        ull bad = NO_INDEX;
        if (n > 0) {
            reset_slots(c);
            if (comp == REMAT_COMP_BOOL)
                REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, bool_kernel<T>)(out, bad_slot(c), src, n, write);
            else if (comp == REMAT_COMP_BIT)
                REMAT_LAUNCH(remat_cuda_blocks(want), REMAT_CUDA_THREADS, 0, c->stream, bit_kernel<T>)(out, bad_slot(c), src, n,
                                                                                         write);
            else
                REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, uint8_kernel<T>)(out, bad_slot(c), src, n,
                                                                                        write);
            cudaCheckLaunch();
            read_slots(c, &bad, nullptr);
        }
        if (bad != NO_INDEX)
            return report_bad(c, comp, src, bad,
                              comp == REMAT_COMP_UINT8 ? REMAT_CUDA_WHAT_UINT8 : REMAT_CUDA_WHAT_BINARY, err);
        if (!write) return msg_wrong_size(err, comp, "dst_bytes", want, dst_bytes);
        return REMAT_OK;
    }
    default: return remat_error_set(err, REMAT_ERR_INTERNAL, "compressor: id %d not handled", (int)comp);
    }
}

template <typename T>
static remat_status decompress(remat_cuda_ctx *c, remat_compressor comp, T *dst, int64_t n, const void *src,
                               int64_t src_bytes, remat_error *err) {
    remat_status st = msg_check_args(comp, n, src_bytes, src, "src_bytes", err);
    if (st != REMAT_OK) return st;
    if (n > 0 && !dst)
        return msg_null_dst(err, comp, n);
    const uint8_t *in = (const uint8_t *)src;
    switch (comp) {
    case REMAT_COMP_NONE:
        if (src_bytes != n * (int64_t)sizeof(T))
            return msg_wrong_size(err, comp, "src_bytes", n * (int64_t)sizeof(T), src_bytes);
        if (n) cudaCheck(cudaMemcpyAsync(dst, in, (size_t)n * sizeof(T), cudaMemcpyDeviceToDevice, c->stream));
        return REMAT_OK;
    case REMAT_COMP_BOOL: {
        if (src_bytes != n) return msg_wrong_size(err, comp, "src_bytes", n, src_bytes);
        if (n == 0) return REMAT_OK;
        reset_slots(c);
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, bool_check_kernel)(bad_slot(c), in, n);
        cudaCheckLaunch();
        ull bad;
        read_slots(c, &bad, nullptr);
        if (bad != NO_INDEX) {
            uint8_t v;
            read_back(c, &v, in + bad, 1);
            return msg_bool_byte(err, (int64_t)bad, (unsigned)v);
        }
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, bytes_to_float_kernel<T>)(dst, in, n);
        cudaCheckLaunch();
        return REMAT_OK;
    }
    case REMAT_COMP_UINT8:
        if (src_bytes != n) return msg_wrong_size(err, comp, "src_bytes", n, src_bytes);
        if (n == 0) return REMAT_OK;
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, bytes_to_float_kernel<T>)(dst, in, n);
        cudaCheckLaunch();
        return REMAT_OK;
    case REMAT_COMP_BIT: {
        const int64_t want = (n + 7) / 8;
        if (src_bytes != want) return msg_wrong_size(err, comp, "src_bytes", want, src_bytes);
        if (n == 0) return REMAT_OK;
        if (n % 8) {
            uint8_t last;
            read_back(c, &last, in + want - 1, 1);
            if ((last >> (n % 8)) != 0)
                return msg_bit_padding(err, want - 1, (int)(n % 8), (unsigned)last);
        }
        REMAT_LAUNCH(remat_cuda_blocks(n), REMAT_CUDA_THREADS, 0, c->stream, bit_unpack_kernel<T>)(dst, in, n);
        cudaCheckLaunch();
        return REMAT_OK;
    }
    case REMAT_COMP_SPARSE: {
        if (src_bytes % 4 != 0)
            return msg_sparse_multiple(err, src_bytes);
        const int64_t nnz = src_bytes / 4;
        if (nnz > n) return msg_wrong_size(err, comp, "src_bytes", n * 4, src_bytes);
        if (nnz > 0) {
            reset_slots(c);
            REMAT_LAUNCH(remat_cuda_blocks(nnz), REMAT_CUDA_THREADS, 0, c->stream, sparse_check_kernel)(bad_slot(c), in, nnz, n);
            cudaCheckLaunch();
            ull bad;
            read_slots(c, &bad, nullptr);
            if (bad != NO_INDEX) {
                uint32_t pos, prev_pos = 0;
                read_back(c, &pos, in + 4 * bad, 4);
                if (bad > 0) read_back(c, &prev_pos, in + 4 * (bad - 1), 4);
                if ((int64_t)pos >= n) return msg_sparse_range(err, (int64_t)bad, n, pos);
                return msg_sparse_order(err, (int64_t)bad, bad > 0 ? (int64_t)prev_pos : -1, pos);
            }
        }
        if (n) cudaCheck(cudaMemsetAsync(dst, 0, (size_t)n * sizeof(T), c->stream));
        if (nnz > 0) {
            REMAT_LAUNCH(remat_cuda_blocks(nnz), REMAT_CUDA_THREADS, 0, c->stream, sparse_scatter_kernel<T>)(dst, in, nnz);
            cudaCheckLaunch();
        }
        return REMAT_OK;
    }
    default: return remat_error_set(err, REMAT_ERR_INTERNAL, "compressor: id %d not handled", (int)comp);
    }
}

remat_status remat_cuda_compress(remat_cuda_ctx *c, remat_compressor comp, void *dst, int64_t dst_bytes,
                                 const void *src, remat_encoding src_enc, int64_t n, remat_error *err) {
    if (src_enc == REMAT_ENC_BF16) return compress(c, comp, dst, dst_bytes, (const uint16_t *)src, n, err);
    return compress(c, comp, dst, dst_bytes, (const float *)src, n, err);
}

remat_status remat_cuda_decompress(remat_cuda_ctx *c, remat_compressor comp, void *dst, remat_encoding dst_enc,
                                   int64_t n, const void *src, int64_t src_bytes, remat_error *err) {
    if (dst_enc == REMAT_ENC_BF16) return decompress(c, comp, (uint16_t *)dst, n, src, src_bytes, err);
    return decompress(c, comp, (float *)dst, n, src, src_bytes, err);
}
