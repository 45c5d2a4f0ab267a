/* runtime.cc - the CUDA runtime calls of cuda/emu/cuda_runtime.h on the host: device
 * memory with a capacity, one in-order queue for every stream (launches, copies, sets
 * and event records run at the next synchronising call), events timed by the host's
 * monotonic clock, and cudaGetLastError's error state.
 *
 * Copies follow the runtime's rules for when the host may touch its buffer:
 * host-to-device from pageable memory is staged at the call (the caller may reuse the
 * buffer at once); device-to-host into pageable memory waits for the queue and copies
 * at the call; into pinned memory (cudaMallocHost) it is queued, so the host sees the
 * bytes only after a synchronisation, as on a GPU.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <deque>
#include <map>
#include <vector>

#include "cuda/emu/emu_internal.h"

struct remat_emu_stream {
    unsigned flags;
};

struct remat_emu_event {
    double t;
    bool recorded, done;
};

namespace remat_emu {

namespace {

struct alloc_map {
    std::map<uintptr_t, size_t> m;
    bool contains(const void *p, size_t bytes) const {
        const uintptr_t a = (uintptr_t)p;
        auto it = m.upper_bound(a);
        if (it == m.begin()) return false;
        --it;
        return a >= it->first && a - it->first <= it->second && bytes <= it->second - (a - it->first);
    }
};

alloc_map device_allocs, pinned_allocs;
size_t used_bytes = 0, capacity_bytes = 0;
cudaError_t last_error = cudaSuccess;
std::deque<std::function<void()>> queue;
bool draining = false;

size_t capacity() {
    if (!capacity_bytes) {
        capacity_bytes = (size_t)4 << 30;
        const char *e = getenv("REMAT_CUDA_EMU_MEM");
        if (e && *e) {
            char *end = nullptr;
            const unsigned long long v = strtoull(e, &end, 10);
            if (*end || v == 0) fatal("REMAT_CUDA_EMU_MEM is \"%s\", expected a positive number of bytes", e);
            capacity_bytes = (size_t)v;
        }
    }
    return capacity_bytes;
}

double now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

cudaError_t fail(cudaError_t e) {
    last_error = e;
    return e;
}

}  // namespace

void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("remat: CUDA emulator: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    abort();
}

void enqueue(std::function<void()> op) { queue.push_back(std::move(op)); }

void drain() {
    if (draining) fatal("a synchronising call inside a kernel");
    draining = true;
    while (!queue.empty()) {
        std::function<void()> op = std::move(queue.front());
        queue.pop_front();
        op();
    }
    draining = false;
}

bool is_device(const void *p, size_t bytes) { return device_allocs.contains(p, bytes); }
bool is_pinned(const void *p, size_t bytes) { return pinned_allocs.contains(p, bytes); }
void set_last_error(cudaError_t e) { last_error = e; }

void check_kernel_pointer(const char *kernel, int arg, const void *p) {
    if (p && !is_device(p, 0) && !is_pinned(p, 0)) /* pinned memory is mapped for the device */
        fatal("kernel %s: argument %d (%p) is not device memory (a host pointer would fault on a GPU)", kernel,
              arg + 1, p);
}

void enqueue_launch(const char *kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                    void (*run)(void *), void *closure, void (*destroy)(void *)) {
    (void)stream;
    const uint64_t threads = (uint64_t)block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.x > 0x7fffffffu || grid.y > 65535 || grid.z > 65535 || smem > 48 * 1024) {
        destroy(closure);
        last_error = cudaErrorInvalidConfiguration;
        return;
    }
    enqueue([=] {
        run_grid(kernel, grid, block, run, closure);
        destroy(closure);
    });
}

}  // namespace remat_emu

using namespace remat_emu;

cudaError_t cudaGetDeviceCount(int *count) {
    const char *e = getenv("REMAT_CUDA_EMU_DEVICES");
    *count = e && strcmp(e, "0") == 0 ? 0 : 1;
    return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : fail(cudaErrorInvalidDevice); }

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device) {
    if (device != 0) return fail(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "remat CPU emulator (sm_90 model)");
    prop->totalGlobalMem = capacity();
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->maxThreadsPerBlock = 1024;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device) {
    if (device != 0) return fail(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrMemoryClockRate: *value = 2619000; return cudaSuccess; /* kHz, H100 SXM's */
    case cudaDevAttrGlobalMemoryBusWidth: *value = 5120; return cudaSuccess;
    }
    return fail(cudaErrorInvalidValue);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    *total_bytes = capacity();
    *free_bytes = capacity() - used_bytes;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
    *p = nullptr;
    if (bytes == 0) return cudaSuccess;
    if (bytes > capacity() - used_bytes) return fail(cudaErrorMemoryAllocation);
    const size_t rounded = (bytes + 255) / 256 * 256;
    void *q = aligned_alloc(256, rounded);
    if (!q) return fail(cudaErrorMemoryAllocation);
    memset(q, 0xff, rounded);
    device_allocs.m[(uintptr_t)q] = bytes;
    used_bytes += bytes;
    *p = q;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    drain(); /* cudaFree synchronises the device */
    auto it = device_allocs.m.find((uintptr_t)p);
    if (it == device_allocs.m.end()) return fail(cudaErrorInvalidDevicePointer);
    used_bytes -= it->second;
    device_allocs.m.erase(it);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t bytes) {
    *p = malloc(bytes ? bytes : 1);
    if (!*p) return fail(cudaErrorMemoryAllocation);
    pinned_allocs.m[(uintptr_t)*p] = bytes;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
    if (!p) return cudaSuccess;
    drain();
    auto it = pinned_allocs.m.find((uintptr_t)p);
    if (it == pinned_allocs.m.end()) return fail(cudaErrorInvalidValue);
    pinned_allocs.m.erase(it);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t s) {
    (void)s;
    if (bytes == 0) return cudaSuccess;
    const bool dst_dev = is_device(dst, bytes), src_dev = is_device(src, bytes);
    /* The device side of the copy must be device memory; the host side must not be. */
    switch (kind) {
    case cudaMemcpyHostToDevice:
        if (!dst_dev) return fail(cudaErrorInvalidValue);
        if (src_dev) return fail(cudaErrorInvalidMemcpyDirection);
        break;
    case cudaMemcpyDeviceToHost:
        if (!src_dev) return fail(cudaErrorInvalidValue);
        if (dst_dev) return fail(cudaErrorInvalidMemcpyDirection);
        break;
    case cudaMemcpyDeviceToDevice:
        if (!dst_dev || !src_dev) return fail(cudaErrorInvalidValue);
        break;
    case cudaMemcpyDefault: break;
    default: return fail(cudaErrorInvalidMemcpyDirection);
    }
    if (!src_dev && !is_pinned(src, bytes)) { /* pageable source: staged now */
        std::vector<char> staged((const char *)src, (const char *)src + bytes);
        enqueue([dst, staged] { memcpy(dst, staged.data(), staged.size()); });
    } else if (!dst_dev && !is_pinned(dst, bytes)) { /* pageable destination: copied now */
        drain();
        memcpy(dst, src, bytes);
    } else {
        enqueue([=] { memmove(dst, src, bytes); });
    }
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t s) {
    (void)s;
    if (bytes == 0) return cudaSuccess;
    if (!is_device(dst, bytes)) return fail(cudaErrorInvalidValue);
    enqueue([=] { memset(dst, value, bytes); });
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags) {
    *s = new remat_emu_stream{flags};
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
    drain();
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    (void)s;
    drain();
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e) {
    *e = new remat_emu_event{0.0, false, false};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    (void)s;
    if (!e) return fail(cudaErrorInvalidResourceHandle);
    e->recorded = true;
    e->done = false;
    enqueue([e] {
        e->t = now();
        e->done = true;
    });
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (!e) return fail(cudaErrorInvalidResourceHandle);
    drain();
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop) {
    if (!start || !stop || !start->recorded || !stop->recorded) return fail(cudaErrorInvalidResourceHandle);
    if (!start->done || !stop->done) return fail(cudaErrorNotReady);
    *ms = (float)((stop->t - start->t) * 1e3);
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void) {
    const cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    }
    return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected (REMAT_CUDA_EMU_DEVICES=0)";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    }
    return "unknown error";
}
