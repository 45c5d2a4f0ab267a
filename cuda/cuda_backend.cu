/* cuda_backend.cu - the CUDA backend: device selection, the memory entries of the
 * vtable (segments through cudaMalloc, the driver's view through cudaMemGetInfo),
 * the clock, per-op CUDA-event timing, and the table that routes every kernel entry
 * to its cuda/<file>.cu.
 *
 * Modelling assumptions:
 *  - one device, one stream (ctx->stream) for every kernel, copy and cuBLAS call;
 *  - the executor's allocator model carves tensors out of the segments handed out
 *    here; the backend never allocates device memory behind its back except its own
 *    fixed buffers (cuBLAS workspace, a 64 KiB scalar area) made at init, and the
 *    compressors' per-block scratch (grown on demand, reported as internal_bytes);
 *  - now() is the device's clock: it records a CUDA event on the stream, waits for it
 *    and returns the time since a reference event (cudaEventElapsedTime, about 0.5 us
 *    resolution), so the executor's op times - and the trace's - are device times of
 *    the queued work (plus the launch latency of a stream that was idle).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "cuda/cuda_internal.cuh"

/* ---- errors ------------------------------------------------------------------- */

void remat_cuda_fatal(const char *file, int line, const char *call, const char *name, const char *text) {
    fprintf(stderr, "remat: CUDA error at %s:%d: %s: %s: %s\n", file, line, call, name, text);
    fflush(stderr);
    exit(1);
}

const char *remat_cublas_status_name(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_<unknown>";
    }
}

/* ---- memory ------------------------------------------------------------------- */

static void driver_mem(int64_t *free_bytes, int64_t *total_bytes) {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) {
        (void)cudaGetLastError();
        *free_bytes = *total_bytes = -1;
        return;
    }
    *free_bytes = (int64_t)f;
    *total_bytes = (int64_t)t;
}

/* cudaMalloc that turns failure into REMAT_ERR_DEVICE with the numbers. */
static remat_status device_malloc(remat_cuda_ctx *c, int64_t bytes, void **out, const char *what,
                                  remat_error *err) {
    *out = NULL;
    if (bytes <= 0) return REMAT_OK;
    cudaError_t e = cudaMalloc(out, (size_t)bytes);
    if (e == cudaSuccess) return REMAT_OK;
    (void)cudaGetLastError(); /* out of memory is not sticky: clear it */
    *out = NULL;
    int64_t fr, tot;
    driver_mem(&fr, &tot);
    return remat_error_set(err, REMAT_ERR_DEVICE,
                           "cuda: %s: out of device memory: asked %lld bytes, free %lld of %lld, reserved %lld "
                           "by remat segments + %lld internal (%s)",
                           what, (long long)bytes, (long long)fr, (long long)tot, (long long)c->segment_bytes,
                           (long long)(c->cublas_ws_bytes + c->small_bytes + c->scratch_bytes),
                           cudaGetErrorString(e));
}

static remat_status op_segment_alloc(void *ctx, int64_t bytes, void **out, remat_error *err) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    *out = NULL;
    if (bytes <= 0) return remat_error_set(err, REMAT_ERR_INTERNAL, "cuda: segment_alloc: bytes > 0, got %lld",
                                           (long long)bytes);
    if (c->n_segs == c->cap_segs) {
        int64_t cap = c->cap_segs ? 2 * c->cap_segs : 64;
        remat_cuda_segment *s =
            (remat_cuda_segment *)remat_xrealloc(c->segs, (size_t)cap * sizeof *s, err);
        if (!s) return REMAT_ERR_NOMEM;
        c->segs = s;
        c->cap_segs = cap;
    }
    void *p;
    remat_status st = device_malloc(c, bytes, &p, "segment_alloc", err);
    if (st != REMAT_OK) return st;
    c->segs[c->n_segs].ptr = p;
    c->segs[c->n_segs].bytes = bytes;
    c->n_segs++;
    c->segment_bytes += bytes;
    if (c->segment_bytes > c->peak_segment_bytes) c->peak_segment_bytes = c->segment_bytes;
    int64_t fr, tot;
    driver_mem(&fr, &tot);
    if (fr >= 0 && (c->free_at_peak < 0 || fr < c->free_at_peak)) c->free_at_peak = fr;
    *out = p;
    return REMAT_OK;
}

static void op_segment_free(void *ctx, void *p) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    if (!p) return;
    for (int64_t i = 0; i < c->n_segs; i++)
        if (c->segs[i].ptr == p) {
            c->segment_bytes -= c->segs[i].bytes;
            c->segs[i] = c->segs[c->n_segs - 1];
            c->n_segs--;
            break;
        }
    /* cudaFree waits for the device: no kernel still reads the segment. */
    cudaCheck(cudaFree(p));
}

static void op_mem_info(void *ctx, int64_t *free_bytes, int64_t *total_bytes) {
    (void)ctx;
    driver_mem(free_bytes, total_bytes);
}

remat_status remat_cuda_scratch(remat_cuda_ctx *c, int64_t bytes, void **out, remat_error *err) {
    if (bytes <= c->scratch_bytes) {
        *out = c->scratch;
        return REMAT_OK;
    }
    if (c->scratch) {
        cudaCheck(cudaFree(c->scratch));
        c->scratch = NULL;
        c->scratch_bytes = 0;
    }
    int64_t want = bytes < (1 << 20) ? (1 << 20) : bytes;
    remat_status st = device_malloc(c, want, &c->scratch, "compressor scratch", err);
    if (st != REMAT_OK) return st;
    c->scratch_bytes = want;
    *out = c->scratch;
    return REMAT_OK;
}

/* ---- copies and the clock ------------------------------------------------------- */


static void op_to_host(void *ctx, void *host_dst, const void *src, int64_t bytes) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    if (bytes <= 0) return;
    cudaCheck(cudaMemcpyAsync(host_dst, src, (size_t)bytes, cudaMemcpyDeviceToHost, c->stream));
    cudaCheck(cudaStreamSynchronize(c->stream));
}

static void op_from_host(void *ctx, void *dst, const void *host_src, int64_t bytes) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    if (bytes <= 0) return;
    cudaCheck(cudaMemcpyAsync(dst, host_src, (size_t)bytes, cudaMemcpyHostToDevice, c->stream));
    /* The caller may reuse host_src at once. */
    cudaCheck(cudaStreamSynchronize(c->stream));
}


/* The reference event moves forward every 8 s, so that the float milliseconds of
 * cudaEventElapsedTime keep sub-microsecond precision however long a run lasts. */
static double op_now(void *ctx) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    cudaCheck(cudaEventRecord(c->clock_cur, c->stream));
    cudaCheck(cudaEventSynchronize(c->clock_cur));
    float ms = 0.0f;
    cudaCheck(cudaEventElapsedTime(&ms, c->clock_ref, c->clock_cur));
    const double t = c->clock_base + 1e-3 * (double)ms;
    if (ms > 8000.0f) {
        cudaEvent_t e = c->clock_ref;
        c->clock_ref = c->clock_cur;
        c->clock_cur = e;
        c->clock_base = t;
    }
    return t;
}

/* ---- per-op device times (CUDA events) ------------------------------------------ */

/* One profile slot per kernel entry of backend.h's list (fp32 and bf16 twins, named as
 * the entry), then the non-list entries. */
enum {
#define PROF_ENUM(ret, name, params, args) PROF_##name,
    REMAT_BACKEND_BASE_KERNELS(PROF_ENUM)
#undef PROF_ENUM
    PROF_COUNT_NONZERO, PROF_COMPRESS, PROF_DECOMPRESS, PROF_ZERO_COPY,
    PROF_N
};
static_assert(PROF_N <= REMAT_CUDA_PROF_MAX, "REMAT_CUDA_PROF_MAX too small for the profile slots");

static const char *const prof_names[PROF_N] = {
#define PROF_NAME(ret, name, params, args) #name,
    REMAT_BACKEND_BASE_KERNELS(PROF_NAME)
#undef PROF_NAME
    "count_nonzero", "compress", "decompress", "zero_copy",
};

/* Adds up the recorded event pairs (the stream must be idle) and recycles them. */
static void prof_fold(remat_cuda_ctx *c) {
    if (c->n_prof == 0) return;
    cudaCheck(cudaStreamSynchronize(c->stream));
    for (int64_t i = 0; i < c->n_prof; i++) {
        float ms = 0.0f;
        cudaCheck(cudaEventElapsedTime(&ms, c->prof[i].start, c->prof[i].stop));
        c->prof_calls[c->prof[i].op]++;
        c->prof_seconds[c->prof[i].op] += 1e-3 * (double)ms;
    }
    c->n_prof = 0;
}

/* Returns the slot to record, or -1 when profiling is off. */
static int64_t prof_begin(remat_cuda_ctx *c, int op) {
    if (!c->profiling) return -1;
    if (c->n_prof == 4096) prof_fold(c);
    if (c->n_prof == c->cap_prof) {
        int64_t cap = c->cap_prof ? 2 * c->cap_prof : 256;
        if (cap > 4096) cap = 4096;
        remat_cuda_prof_event *p =
            (remat_cuda_prof_event *)remat_xrealloc(c->prof, (size_t)cap * sizeof *p, NULL);
        if (!p) return -1; /* no host memory: this call goes untimed */
        for (int64_t i = c->cap_prof; i < cap; i++) {
            cudaCheck(cudaEventCreate(&p[i].start));
            cudaCheck(cudaEventCreate(&p[i].stop));
        }
        c->prof = p;
        c->cap_prof = cap;
    }
    int64_t slot = c->n_prof++;
    c->prof[slot].op = op;
    cudaCheck(cudaEventRecord(c->prof[slot].start, c->stream));
    return slot;
}

static void prof_end(remat_cuda_ctx *c, int64_t slot) {
    if (slot >= 0) cudaCheck(cudaEventRecord(c->prof[slot].stop, c->stream));
}

#define TIMED(c, op, body)                        \
    do {                                          \
        int64_t slot_ = prof_begin((c), (op));    \
        body;                                     \
        prof_end((c), slot_);                     \
    } while (0)

/* ---- the kernel entries ------------------------------------------------------------ */

static void op_zero(void *ctx, void *dst, int64_t bytes) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    if (bytes > 0) TIMED(c, PROF_ZERO_COPY, cudaCheck(cudaMemsetAsync(dst, 0, (size_t)bytes, c->stream)));
}

static void op_copy(void *ctx, void *dst, const void *src, int64_t bytes) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    if (bytes > 0 && dst != src)
        TIMED(c, PROF_ZERO_COPY,
              cudaCheck(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice, c->stream)));
}

/* f() between a profile slot's begin and end events, whatever f returns. */
template <typename F>
static auto timed_call(remat_cuda_ctx *c, int op, F f) -> decltype(f()) {
    struct end_guard {
        remat_cuda_ctx *c;
        int64_t slot;
        ~end_guard() { prof_end(c, slot); }
    } guard{c, prof_begin(c, op)};
    return f();
}

/* One timed entry per REMAT_BACKEND_BASE_KERNELS item (fp32 and bf16 twins alike): it
 * forwards to remat_cuda_<name> (cuda_internal.cuh), which has the same arguments. */
#define OP_ENTRY(ret, name, params, args)                                                   \
    static ret op_##name(void *ctx, REMAT_UNPAREN params) {                                 \
        remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;                                          \
        return timed_call(c, PROF_##name, [&]() { return remat_cuda_##name(c, REMAT_UNPAREN args); }); \
    }
REMAT_BACKEND_BASE_KERNELS(OP_ENTRY)
#undef OP_ENTRY

static int64_t op_count_nonzero(void *ctx, const void *x, remat_encoding enc, int64_t n) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    int64_t r = 0;
    TIMED(c, PROF_COUNT_NONZERO, r = remat_cuda_count_nonzero(c, x, enc, n));
    return r;
}

static remat_status op_compress(void *ctx, remat_compressor comp, void *dst, int64_t dst_bytes, const void *src,
                                remat_encoding src_enc, int64_t n, remat_error *err) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    remat_status st = REMAT_OK;
    TIMED(c, PROF_COMPRESS, st = remat_cuda_compress(c, comp, dst, dst_bytes, src, src_enc, n, err));
    return st;
}

static remat_status op_decompress(void *ctx, remat_compressor comp, void *dst, remat_encoding dst_enc, int64_t n,
                                  const void *src, int64_t src_bytes, remat_error *err) {
    remat_cuda_ctx *c = (remat_cuda_ctx *)ctx;
    remat_status st = REMAT_OK;
    TIMED(c, PROF_DECOMPRESS, st = remat_cuda_decompress(c, comp, dst, dst_enc, n, src, src_bytes, err));
    return st;
}

/* ---- life cycle ------------------------------------------------------------------- */

static void ctx_release(remat_cuda_ctx *c) {
    if (!c) return;
    /* Best effort on teardown: errors here cannot be acted upon. */
    if (c->stream) (void)cudaStreamSynchronize(c->stream);
    for (int64_t i = 0; i < c->n_segs; i++) (void)cudaFree(c->segs[i].ptr);
    for (int64_t i = 0; i < c->cap_prof; i++) {
        (void)cudaEventDestroy(c->prof[i].start);
        (void)cudaEventDestroy(c->prof[i].stop);
    }
    if (c->clock_ref) (void)cudaEventDestroy(c->clock_ref);
    if (c->clock_cur) (void)cudaEventDestroy(c->clock_cur);
    if (c->cublas) (void)cublasDestroy(c->cublas);
    if (c->cublas_ws) (void)cudaFree(c->cublas_ws);
    if (c->small) (void)cudaFree(c->small);
    if (c->small_host) (void)cudaFreeHost(c->small_host);
    if (c->scratch) (void)cudaFree(c->scratch);
    if (c->stream) (void)cudaStreamDestroy(c->stream);
    (void)cudaGetLastError();
    remat_xfree(c->segs);
    remat_xfree(c->prof);
    remat_xfree(c);
}

static void op_destroy(void *ctx) { ctx_release((remat_cuda_ctx *)ctx); }

/* The table, filled by field name. */
static remat_backend_ops make_cuda_ops() {
    remat_backend_ops o;
    memset(&o, 0, sizeof o);
    o.name = "cuda";
    o.has_data = 1;
    o.conv_im2col = 1; /* conv.cu writes the column matrix */
    o.segment_alloc = op_segment_alloc;
    o.segment_free = op_segment_free;
    o.mem_info = op_mem_info;
    o.zero = op_zero;
    o.copy = op_copy;
    o.to_host = op_to_host;
    o.from_host = op_from_host;
    o.now = op_now;
    o.destroy = op_destroy;
#define OP_TABLE_ENTRY(ret, name, params, args) o.name = op_##name;
    REMAT_BACKEND_BASE_KERNELS(OP_TABLE_ENTRY)
#undef OP_TABLE_ENTRY
    o.count_nonzero = op_count_nonzero;
    o.compress = op_compress;
    o.decompress = op_decompress;
    return o;
}
static const remat_backend_ops cuda_ops = make_cuda_ops();

/* A failed runtime call during init: REMAT_ERR_DEVICE naming the call. */
#define INIT_CHECK(call)                                                                                   \
    do {                                                                                                   \
        cudaError_t e_ = (call);                                                                           \
        if (e_ != cudaSuccess) {                                                                           \
            (void)cudaGetLastError();                                                                      \
            ctx_release(c);                                                                                \
            return remat_error_set(err, REMAT_ERR_DEVICE, "cuda: %s:%d: %s: %s", __FILE__, __LINE__, #call, \
                                   cudaGetErrorString(e_));                                                \
        }                                                                                                  \
    } while (0)

#define INIT_CUBLAS(call)                                                                                  \
    do {                                                                                                   \
        cublasStatus_t s_ = (call);                                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                 \
            ctx_release(c);                                                                                \
            return remat_error_set(err, REMAT_ERR_DEVICE, "cuda: %s:%d: %s: %s", __FILE__, __LINE__, #call, \
                                   remat_cublas_status_name(s_));                                          \
        }                                                                                                  \
    } while (0)

extern "C" remat_status remat_backend_cuda_init(remat_backend *out, int device, remat_error *err) {
    out->ops = NULL;
    out->ctx = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return remat_error_set(err, REMAT_ERR_DEVICE, "no CUDA device: %s", cudaGetErrorString(e));
    }
    if (n == 0) return remat_error_set(err, REMAT_ERR_DEVICE, "no CUDA device: cudaGetDeviceCount found none");
    if (device < 0 || device >= n)
        return remat_error_set(err, REMAT_ERR_DEVICE, "no CUDA device: device %d requested, %d present", device, n);

    remat_cuda_ctx *c = (remat_cuda_ctx *)remat_xcalloc(1, sizeof *c, err);
    if (!c) return REMAT_ERR_NOMEM;
    c->device = device;
    c->free_at_peak = -1;
    const char *mode = getenv("REMAT_CUDA_GEMM");
    if (mode && strcmp(mode, "tiled") == 0) c->gemm_mode = REMAT_CUDA_GEMM_TILED;
    else if (mode && *mode && strcmp(mode, "auto") != 0) {
        ctx_release(c);
        return remat_error_set(err, REMAT_ERR_INPUT, "REMAT_CUDA_GEMM: auto or tiled, got \"%s\"", mode);
    }

    INIT_CHECK(cudaSetDevice(device));
    INIT_CHECK(cudaGetDeviceProperties(&c->prop, device));
    INIT_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    INIT_CUBLAS(cublasCreate(&c->cublas));
    INIT_CUBLAS(cublasSetStream(c->cublas, c->stream));
    /* FP32 arithmetic as written: no TF32, no reduced-precision shortcuts. */
    INIT_CUBLAS(cublasSetMathMode(c->cublas, CUBLAS_PEDANTIC_MATH));
    INIT_CUBLAS(cublasSetPointerMode(c->cublas, CUBLAS_POINTER_MODE_HOST));
    /* cuBLAS's recommended workspace: 32 MiB on Hopper and newer, 4 MiB before. Given
     * explicitly so that cuBLAS allocates nothing on its own during a step. */
    c->cublas_ws_bytes = c->prop.major >= 9 ? (32ll << 20) : (4ll << 20);
    {
        remat_status st = device_malloc(c, c->cublas_ws_bytes, &c->cublas_ws, "cuBLAS workspace", err);
        if (st != REMAT_OK) {
            ctx_release(c);
            return st;
        }
    }
    INIT_CUBLAS(cublasSetWorkspace(c->cublas, c->cublas_ws, (size_t)c->cublas_ws_bytes));
    c->small_bytes = 64 << 10;
    INIT_CHECK(cudaMalloc(&c->small, (size_t)c->small_bytes));
    INIT_CHECK(cudaMallocHost(&c->small_host, (size_t)c->small_bytes));
    {
        /* The per-op scratch (batch-norm factors, loss terms, compressor counts) exists
         * from the start, so that a step normally allocates nothing behind the model. */
        void *tmp;
        remat_status st = remat_cuda_scratch(c, 1 << 20, &tmp, err);
        if (st != REMAT_OK) {
            ctx_release(c);
            return st;
        }
    }
    INIT_CHECK(cudaEventCreate(&c->clock_ref));
    INIT_CHECK(cudaEventCreate(&c->clock_cur));
    INIT_CHECK(cudaEventRecord(c->clock_ref, c->stream));
    INIT_CHECK(cudaStreamSynchronize(c->stream));
    c->clock_base = remat_now_s();
    driver_mem(&c->free_at_init, &c->total_bytes);
    c->free_at_peak = c->free_at_init;

    out->ops = &cuda_ops;
    out->ctx = c;
    return REMAT_OK;
}

/* ---- cuda_backend.h ---------------------------------------------------------------- */

static remat_cuda_ctx *cuda_ctx_of(const remat_backend *b, remat_error *err) {
    if (!b || b->ops != &cuda_ops || !b->ctx) {
        remat_error_set(err, REMAT_ERR_INPUT, "cuda: backend: one made by remat_backend_cuda_init");
        return NULL;
    }
    return (remat_cuda_ctx *)b->ctx;
}

extern "C" remat_status remat_backend_cuda_set_gemm(remat_backend *b, remat_cuda_gemm mode, remat_error *err) {
    remat_cuda_ctx *c = cuda_ctx_of(b, err);
    if (!c) return REMAT_ERR_INPUT;
    if (mode != REMAT_CUDA_GEMM_AUTO && mode != REMAT_CUDA_GEMM_TILED)
        return remat_error_set(err, REMAT_ERR_INPUT, "cuda: gemm mode: auto (0) or tiled (1), got %d", (int)mode);
    c->gemm_mode = mode;
    return REMAT_OK;
}

extern "C" remat_status remat_backend_cuda_reset_peak(remat_backend *b, remat_error *err) {
    remat_cuda_ctx *c = cuda_ctx_of(b, err);
    if (!c) return REMAT_ERR_INPUT;
    int64_t fr, tot;
    driver_mem(&fr, &tot);
    c->peak_segment_bytes = c->segment_bytes;
    c->free_at_peak = fr >= 0 ? fr : c->free_at_peak;
    return REMAT_OK;
}

extern "C" remat_status remat_backend_cuda_get_info(const remat_backend *b, remat_cuda_info *out,
                                                    remat_error *err) {
    remat_cuda_ctx *c = cuda_ctx_of(b, err);
    if (!c) return REMAT_ERR_INPUT;
    memset(out, 0, sizeof *out);
    snprintf(out->device_name, sizeof out->device_name, "%s", c->prop.name);
    out->device = c->device;
    out->cc_major = c->prop.major;
    out->cc_minor = c->prop.minor;
    out->sm_count = c->prop.multiProcessorCount;
    int clock_khz = 0, bus_bits = 0;
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, c->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, c->device) != cudaSuccess) {
        (void)cudaGetLastError();
        clock_khz = bus_bits = 0;
    }
    out->peak_bandwidth = 2.0 * 1e3 * (double)clock_khz * (double)bus_bits / 8.0;
    out->total_bytes = c->total_bytes;
    out->free_at_init = c->free_at_init;
    out->free_at_peak = c->free_at_peak;
    out->internal_bytes = c->cublas_ws_bytes + c->small_bytes + c->scratch_bytes;
    out->segment_bytes = c->segment_bytes;
    out->peak_segment_bytes = c->peak_segment_bytes;
    out->n_segments = c->n_segs;
    out->gemm_calls_cublas = c->gemm_calls_cublas;
    out->gemm_calls_tiled = c->gemm_calls_tiled;
    out->gemm_mode = c->gemm_mode;
    return REMAT_OK;
}

extern "C" remat_status remat_backend_cuda_set_profiling(remat_backend *b, int on, remat_error *err) {
    remat_cuda_ctx *c = cuda_ctx_of(b, err);
    if (!c) return REMAT_ERR_INPUT;
    if (!on) prof_fold(c);
    c->profiling = on != 0;
    return REMAT_OK;
}

extern "C" remat_status remat_backend_cuda_get_profile(remat_backend *b, remat_cuda_profile *out, int reset,
                                                       remat_error *err) {
    remat_cuda_ctx *c = cuda_ctx_of(b, err);
    if (!c) return REMAT_ERR_INPUT;
    prof_fold(c);
    memset(out, 0, sizeof *out);
    out->n = PROF_N;
    for (int i = 0; i < PROF_N; i++) {
        out->name[i] = prof_names[i];
        out->calls[i] = c->prof_calls[i];
        out->seconds[i] = c->prof_seconds[i];
    }
    if (reset) {
        memset(c->prof_calls, 0, sizeof c->prof_calls);
        memset(c->prof_seconds, 0, sizeof c->prof_seconds);
    }
    return REMAT_OK;
}
