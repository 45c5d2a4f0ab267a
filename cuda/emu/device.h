/* device.h - the CUDA C++ device language on the host, for the CPU emulation of the
 * CUDA backend (docs/cuda.md, "The emulator"). Included by the shim cuda_runtime.h when
 * the .cu files are compiled by the host C++ compiler (REMAT_CUDA_EMU); never by nvcc.
 *
 * Model (see cuda/emu/scheduler.cc):
 *  - A launch is queued on its stream and runs at the next synchronising call, as on a
 *    GPU: the host sees results only after cudaStreamSynchronize or a blocking copy.
 *  - Blocks run one after another; the threads of a block are fibers (one stack each)
 *    run one at a time, each until it exits or reaches a barrier (__syncthreads*,
 *    __ballot_sync, __shfl_down_sync). The order of the blocks, and of the threads
 *    between two barriers, is a seeded shuffle (REMAT_CUDA_EMU_ORDER=forward|reverse|
 *    shuffle): a kernel whose result depends on that order has a race, and the tests
 *    that compare repeated runs bit for bit see it.
 *  - Barriers are checked: every live thread of the block must reach the same
 *    __syncthreads (same file and line), every lane of a warp named in the mask must
 *    reach the warp operation; otherwise the emulator stops with the reason (on a GPU:
 *    undefined behaviour, typically a hang).
 *  - __shared__ variables are static: shared by the threads of a block, kept between
 *    blocks (on a GPU their content is undefined at block start).
 *  - Kernel arguments that are pointers must point into device memory (cudaMalloc),
 *    pinned host memory (cudaMallocHost: mapped for the device) or be null; another
 *    host pointer given to a kernel stops the emulator with the kernel's name and the
 *    argument's position.
 * Not modelled: the memory model (all accesses are sequentially consistent), warp
 * divergence costs, timing. Floating point is the host's: IEEE single and double with
 * fmaf correctly rounded, as on the device with --fmad=false.
 */
#ifndef REMAT_CUDA_EMU_DEVICE_H
#define REMAT_CUDA_EMU_DEVICE_H

#include <math.h> /* nvcc makes the math functions visible without an include */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <tuple>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct uint3 {
    unsigned x, y, z;
};

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

typedef struct remat_emu_stream *cudaStream_t;

namespace remat_emu {

/* The running thread's coordinates (valid inside a kernel only). */
const uint3 &thread_idx();
const uint3 &block_idx();
const dim3 &block_dim();
const dim3 &grid_dim();

/* Barriers; `file`/`line` name the call site (divergent barriers are reported). */
void syncthreads(const char *file, int line);
int syncthreads_count(const char *file, int line, int pred);
unsigned ballot_sync(const char *file, int line, unsigned mask, int pred);
uint64_t shfl_down_sync(const char *file, int line, unsigned mask, uint64_t bits, unsigned delta);

/* A pointer argument of a kernel: null, or inside a cudaMalloc or cudaMallocHost allocation. */
void check_kernel_pointer(const char *kernel, int arg, const void *p);

/* Queues `body` as a kernel launch on `stream` after checking the configuration (an
 * invalid one sets the error cudaGetLastError returns, as a GPU does). */
void enqueue_launch(const char *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                    void (*run)(void *), void *closure, void (*destroy)(void *));

template <class T>
inline void check_arg(const char *kernel, int i, const T &a) {
    if constexpr (std::is_pointer<T>::value) check_kernel_pointer(kernel, i, (const void *)a);
    (void)kernel, (void)i, (void)a;
}

template <class K, class... A>
struct closure {
    K *kernel;
    std::tuple<A...> args;
    static void run(void *p) {
        closure *c = (closure *)p;
        std::apply(c->kernel, c->args);
    }
    static void destroy(void *p) { delete (closure *)p; }
};

template <class K>
struct launcher {
    const char *name;
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    K *kernel;
    template <class... A>
    void operator()(A &&...a) const {
        int i = 0;
        (check_arg(name, i++, a), ...);
        auto *c = new closure<K, std::decay_t<A>...>{kernel, std::tuple<std::decay_t<A>...>(std::forward<A>(a)...)};
        enqueue_launch(name, grid, block, smem, stream, &closure<K, std::decay_t<A>...>::run, c,
                       &closure<K, std::decay_t<A>...>::destroy);
    }
};

template <class K>
inline launcher<K> make_launcher(const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                 K *kernel) {
    return launcher<K>{name, grid, block, smem, stream, kernel};
}

}  // namespace remat_emu

#define threadIdx (remat_emu::thread_idx())
#define blockIdx (remat_emu::block_idx())
#define blockDim (remat_emu::block_dim())
#define gridDim (remat_emu::grid_dim())
#define warpSize 32

#define __syncthreads() remat_emu::syncthreads(__FILE__, __LINE__)
#define __syncthreads_count(pred) remat_emu::syncthreads_count(__FILE__, __LINE__, (pred))
#define __ballot_sync(mask, pred) remat_emu::ballot_sync(__FILE__, __LINE__, (mask), (pred))

template <class T>
inline T remat_emu_shfl_down(const char *file, int line, unsigned mask, T v, unsigned delta) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shfl of a scalar");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = remat_emu::shfl_down_sync(file, line, mask, bits, delta);
    T out;
    memcpy(&out, &bits, sizeof out);
    return out;
}
#define __shfl_down_sync(mask, v, delta) remat_emu_shfl_down(__FILE__, __LINE__, (mask), (v), (delta))

/* Fibers run one at a time: plain read-modify-writes are atomic. */
inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v) {
    const unsigned long long old = *p;
    if (v < old) *p = v;
    return old;
}
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    const unsigned long long old = *p;
    *p = old + v;
    return old;
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
