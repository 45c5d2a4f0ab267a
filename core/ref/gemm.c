/* gemm.c - the reference backend's three deterministic single-precision GEMMs: the
 * driver (blocking, packing, threads) around a micro-kernel chosen at run time.
 *
 * The contract (ref_kernels.h, docs/determinism.md): every output element is ONE fixed chain
 *
 *     c = (accumulate ? C[i,j] : +0.0f);  for k = 0 .. K-1:  c = fma(A(i,k), B(k,j), c)
 *
 * with a single-rounding fused multiply-add, whatever M, N, the element's position in
 * a tile, the cache blocking, the thread count and the SIMD path. How this code keeps that:
 *  - one micro-kernel per call (gemm_kernel.h: the path of simd.h, read once at the
 *    start of the call) computes every tile; each kernel performs exactly the chain
 *    above, so the kernels (scalar 6x16, AVX2 6x16, AVX-512 12x32) agree bit for bit;
 *    edge tiles run the same kernel on zero-padded packed panels, through a small tile
 *    buffer, and only the valid part is stored back (padding rows/columns only feed
 *    padding outputs);
 *  - K is blocked (the kernel's KC) but never split: a K block ends by storing the float
 *    accumulators to C and the next block reloads them, which is exact, so the chain
 *    simply continues; K blocks run in ascending order;
 *  - threads split the output rows (or columns) only, never K;
 *  - a failed buffer allocation falls back to the element-by-element fmaf() chain, the
 *    same bits.
 * Assumptions: row-major operands, int64 sizes, pointers need no particular alignment
 * (unaligned loads/stores). Packing buffers come from remat_xmalloc, at most
 * REMAT_GEMM_SCRATCH_BYTES per thread (ref_kernels.h) whatever M, N and K.
 *
 * bf16 operands (remat_gemm_typed, for bf16 models: docs/precision.md): an A or B
 * stored as bf16 is widened exactly while it is packed, so the kernels see the same
 * floats. A bf16 C is rounded once, when the finished chain is stored: such a call
 * holds each C block in a float buffer (widened in, rounded out once at the end), so its
 * chains continue across K blocks as a float C's do. The result is the float GEMM's,
 * rounded.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/base/status.h"
#include "core/ref/act.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/simd.h"

/* Below this many multiply-adds a call stays on one thread (starting threads costs
 * more than it saves); the result does not depend on it. */
#define GEMM_MIN_FLOPS_PER_THREAD ((int64_t)1 << 21)
#define GEMM_MAX_THREADS 64

static int g_threads = 1;

void remat_ref_set_threads(int n) {
    if (n < 1) n = 1;
    if (n > GEMM_MAX_THREADS) n = GEMM_MAX_THREADS;
    __atomic_store_n(&g_threads, n, __ATOMIC_RELAXED);
}

int remat_ref_get_threads(void) { return __atomic_load_n(&g_threads, __ATOMIC_RELAXED); }

/* A general view of the operands: A(i,k) = a[i*a_rs + k*a_cs], B(k,j) = b[k*b_rs + j*b_cs]
 * (exactly one stride of each is 1 in the three layouts), or, where pack_a / pack_b is
 * set, panels that the caller's packer writes (remat_gemm_desc, gemm_kernel.h). C(i,j)
 * is at c_off(i, j): row i ldc apart, columns in groups of cg, gs apart. */
typedef struct gemm_args {
    float *c;          /* NULL when C is bf16 (c16 below) */
    const float *a, *b; /* NULL when that operand is bf16 */
    void *cv;          /* the operands as stored, whatever their type */
    const void *av, *bv;
    int c16, a16, b16; /* operand stored as bf16 */
    int64_t M, N, K;
    int64_t a_rs, a_cs, b_rs, b_cs;
    int64_t ldc, cg, gs;
    remat_gemm_pack_fn pack_a, pack_b;
    const void *pack_a_ctx, *pack_b_ctx;
    int accumulate;
    const remat_gemm_kernel *kn; /* the micro-kernel and its blocking */
} gemm_args;

static inline int64_t c_off(const gemm_args *g, int64_t i, int64_t j) { return (j / g->cg) * g->gs + i * g->ldc + j % g->cg; }

/* Columns of C from j on (at most n) that lie in j's group: one contiguous run. */
static inline int64_t c_run(const gemm_args *g, int64_t j, int64_t n) {
    const int64_t left = g->cg - j % g->cg;
    return n < left ? n : left;
}

static inline float a_at(const gemm_args *g, int64_t i, int64_t k) {
    float v;
    if (!g->pack_a) return act_ld(g->av, i * g->a_rs + k * g->a_cs, g->a16);
    g->pack_a(g->pack_a_ctx, &v, 1, i, 1, k, 1);
    return v;
}

static inline float b_at(const gemm_args *g, int64_t k, int64_t j) {
    float v;
    if (!g->pack_b) return act_ld(g->bv, k * g->b_rs + j * g->b_cs, g->b16);
    g->pack_b(g->pack_b_ctx, &v, 1, j, 1, k, 1);
    return v;
}

/* The scalar chain, element by element: the bit-exact definition of the result. */
static void gemm_scalar(const gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    for (int64_t i = m0; i < m1; i++)
        for (int64_t j = n0; j < n1; j++) {
            float c = g->accumulate ? act_ld(g->cv, c_off(g, i, j), g->c16) : 0.0f;
            for (int64_t k = 0; k < g->K; k++) c = fmaf(a_at(g, i, k), b_at(g, k, j), c);
            act_st(g->cv, c_off(g, i, j), c, g->c16);
        }
}

/* A bf16 operand's panel, widened: dst[k*ld + r] = src[r*rs + k*cs] for the valid
 * rows, 0 for the others up to width. Widening is a 16-bit shift, so the panel holds exactly the
 * floats a float operand would. With SSE2, runs along k (cs == 1) are widened four at
 * a time and transposed in registers, and runs along r (rs == 1) widened in place. */
static void pack_bf16(float *restrict dst, int64_t ld, const uint16_t *restrict src, int64_t rs, int64_t cs,
                      int64_t kc, int64_t valid, int64_t width) {
    int64_t k = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
#define WIDEN4(p) _mm_castsi128_ps(_mm_unpacklo_epi16(zero, _mm_loadl_epi64((const __m128i *)(p))))
    if (cs == 1) {
        for (; k + 4 <= kc; k += 4) {
            int64_t r = 0;
            for (; r + 4 <= valid; r += 4) {
                __m128 x0 = WIDEN4(src + (r + 0) * rs + k), x1 = WIDEN4(src + (r + 1) * rs + k);
                __m128 x2 = WIDEN4(src + (r + 2) * rs + k), x3 = WIDEN4(src + (r + 3) * rs + k);
                _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
                _mm_storeu_ps(dst + (k + 0) * ld + r, x0);
                _mm_storeu_ps(dst + (k + 1) * ld + r, x1);
                _mm_storeu_ps(dst + (k + 2) * ld + r, x2);
                _mm_storeu_ps(dst + (k + 3) * ld + r, x3);
            }
            for (int64_t q = k; q < k + 4; q++) {
                for (int64_t rr = r; rr < valid; rr++) dst[q * ld + rr] = remat_bf16_to_f32(src[rr * rs + q]);
                for (int64_t rr = valid; rr < width; rr++) dst[q * ld + rr] = 0.0f;
            }
        }
    } else if (rs == 1) {
        for (; k < kc; k++) {
            int64_t r = 0;
            for (; r + 4 <= valid; r += 4) _mm_storeu_ps(dst + k * ld + r, WIDEN4(src + k * cs + r));
            for (; r < valid; r++) dst[k * ld + r] = remat_bf16_to_f32(src[k * cs + r]);
            for (; r < width; r++) dst[k * ld + r] = 0.0f;
        }
    }
#undef WIDEN4
#endif
    for (; k < kc; k++) {
        for (int64_t r = 0; r < valid; r++) dst[k * ld + r] = remat_bf16_to_f32(src[r * rs + k * cs]);
        for (int64_t r = valid; r < width; r++) dst[k * ld + r] = 0.0f;
    }
}

#if defined(__SSE2__)
/* One 4 x 4 block transposed in registers: dst[q*ld + r] = src[r*rs + q], r, q < 4. */
static inline void transpose4x4(float *restrict dst, int64_t ld, const float *restrict src, int64_t rs) {
    __m128 x0 = _mm_loadu_ps(src + 0 * rs), x1 = _mm_loadu_ps(src + 1 * rs);
    __m128 x2 = _mm_loadu_ps(src + 2 * rs), x3 = _mm_loadu_ps(src + 3 * rs);
    _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
    _mm_storeu_ps(dst + 0 * ld, x0);
    _mm_storeu_ps(dst + 1 * ld, x1);
    _mm_storeu_ps(dst + 2 * ld, x2);
    _mm_storeu_ps(dst + 3 * ld, x3);
}
#endif

/* dst[k*ld + r] = src[r*rs + k] for r < count, k < kc; rows count .. width-1 of each
 * k are 0. With SSE2, 4 x 4 blocks are transposed in registers. */
static void transpose_runs(float *restrict dst, int64_t ld, const float *restrict src, int64_t rs, int64_t count,
                           int64_t kc, int64_t width) {
    int64_t k = 0;
#if defined(__SSE2__)
    for (; k + 4 <= kc; k += 4) {
        int64_t r = 0;
        for (; r + 4 <= count; r += 4) {
            transpose4x4(dst + k * ld + r, ld, src + r * rs + k, rs);
        }
        for (int64_t q = k; q < k + 4; q++) {
            for (int64_t rr = r; rr < count; rr++) dst[q * ld + rr] = src[rr * rs + q];
            remat_gemm_zero_floats(dst + q * ld + count, width - count);
        }
    }
#endif
    for (; k < kc; k++) {
        for (int64_t r = 0; r < count; r++) dst[k * ld + r] = src[r * rs + k];
        remat_gemm_zero_floats(dst + k * ld + count, width - count);
    }
}

/* ---- packing ---------------------------------------------------------------
 * Packed A: for each MR-row panel, for each k, MR values (rows past the end: 0).
 * Packed B: for each NR-column panel, for each k, NR values (columns past the end: 0). */

/* kc runs of n contiguous floats, stride apart, into dst back to back; inlined with a
 * constant n per kernel, so each run is a few vector moves rather than a memcpy call. */
static inline void copy_runs(float *restrict dst, const float *restrict src, int64_t stride, int64_t kc, const int n) {
    for (int64_t k = 0; k < kc; k++) memcpy(dst + k * n, src + k * stride, (size_t)n * sizeof(float));
}

/* mr runs of kc floats, rs apart, interleaved: dst[k*mr + r] = src[r*rs + k] (A's rows
 * into an A panel; B's columns in the NT case into a B panel). Inlined with a constant
 * mr per kernel. With SSE2 (baseline x86-64) 4 x 4 and 2 x 4 blocks are transposed in
 * registers: packing is a large share of the time when N is small (conv layers:
 * N = 64). It only moves floats. */
static inline void interleave_runs(float *restrict dst, const float *restrict src, int64_t rs, int64_t kc, const int mr) {
    int64_t k = 0;
#if defined(__SSE2__)
    for (; k + 4 <= kc; k += 4) {
        int r = 0;
        for (; r + 4 <= mr; r += 4) {
            transpose4x4(dst + k * mr + r, mr, src + r * rs + k, rs);
        }
        for (; r + 2 <= mr; r += 2) {
            const __m128 x0 = _mm_loadu_ps(src + r * rs + k), x1 = _mm_loadu_ps(src + (r + 1) * rs + k);
            const __m128 lo = _mm_unpacklo_ps(x0, x1), hi = _mm_unpackhi_ps(x0, x1);
            _mm_storel_pi((__m64 *)(dst + (k + 0) * mr + r), lo);
            _mm_storeh_pi((__m64 *)(dst + (k + 1) * mr + r), lo);
            _mm_storel_pi((__m64 *)(dst + (k + 2) * mr + r), hi);
            _mm_storeh_pi((__m64 *)(dst + (k + 3) * mr + r), hi);
        }
        for (; r < mr; r++)
            for (int64_t q = k; q < k + 4; q++) dst[q * mr + r] = src[r * rs + q];
    }
#endif
    for (; k < kc; k++)
        for (int r = 0; r < mr; r++) dst[k * mr + r] = src[r * rs + k];
}

static void pack_a(float *restrict ap, const gemm_args *g, int mr, int64_t i0, int64_t mc, int64_t k0, int64_t kc) {
    for (int64_t p = 0; p < mc; p += mr) {
        int64_t rows = mc - p < mr ? mc - p : mr;
        float *dst = ap + p * kc;
        if (g->pack_a) {
            g->pack_a(g->pack_a_ctx, dst, mr, i0 + p, rows, k0, kc);
            continue;
        }
        if (g->a16) {
            pack_bf16(dst, mr, (const uint16_t *)g->av + (i0 + p) * g->a_rs + k0 * g->a_cs, g->a_rs, g->a_cs, kc, rows,
                      mr);
            continue;
        }
        const float *src = g->a + (i0 + p) * g->a_rs + k0 * g->a_cs;
        if (g->a_cs == 1 && rows == mr && mr == 6) {
            interleave_runs(dst, src, g->a_rs, kc, 6);
        } else if (g->a_cs == 1 && rows == mr && mr == 12) {
            interleave_runs(dst, src, g->a_rs, kc, 12);
        } else if (g->a_rs == 1 && rows == mr && mr == 6) {
            /* A stored transposed: MR contiguous values per k. */
            copy_runs(dst, src, g->a_cs, kc, 6);
        } else if (g->a_rs == 1 && rows == mr && mr == 12) {
            copy_runs(dst, src, g->a_cs, kc, 12);
        } else if (g->a_rs == 1 && rows == mr) {
            copy_runs(dst, src, g->a_cs, kc, mr);
        } else {
            remat_gemm_pack_strided(dst, mr, mr, src, 0, g->a_rs, g->a_cs, rows, kc);
        }
    }
}

/* B row-major [K,N], the full panels: row by row (k outer), so that B is read as one
 * forward stream; each row scatters NR floats into every panel. */
static inline void pack_b_rows(float *restrict bp, const float *restrict src, int64_t rs, int64_t kc, int64_t panels,
                               const int nr) {
    for (int64_t k = 0; k < kc; k++)
        for (int64_t q = 0; q < panels; q++) memcpy(bp + q * nr * kc + k * nr, src + k * rs + q * nr, (size_t)nr * sizeof(float));
}

static void pack_b(float *restrict bp, const gemm_args *g, int nr, int64_t k0, int64_t kc, int64_t j0, int64_t nc) {
    int64_t q = 0;
    if (g->pack_b) {
        for (; q < nc; q += nr) g->pack_b(g->pack_b_ctx, bp + q * kc, nr, j0 + q, nc - q < nr ? nc - q : nr, k0, kc);
        return;
    }
    if (g->b16) {
        for (; q < nc; q += nr)
            pack_bf16(bp + q * kc, nr, (const uint16_t *)g->bv + k0 * g->b_rs + (j0 + q) * g->b_cs, g->b_cs, g->b_rs, kc,
                      nc - q < nr ? nc - q : nr, nr);
        return;
    }
    if (g->b_cs == 1) {
        const int64_t full = nc / nr;
        const float *src = g->b + k0 * g->b_rs + j0;
        if (nr == 16) pack_b_rows(bp, src, g->b_rs, kc, full, 16);
        else if (nr == 32) pack_b_rows(bp, src, g->b_rs, kc, full, 32);
        else pack_b_rows(bp, src, g->b_rs, kc, full, nr);
        q = full * nr;
    }
    for (; q < nc; q += nr) {
        int64_t cols = nc - q < nr ? nc - q : nr;
        float *dst = bp + q * kc;
        const float *src = g->b + k0 * g->b_rs + (j0 + q) * g->b_cs;
        if (g->b_rs == 1 && cols == nr && nr == 16) {
            /* B stored [N,K] (the NT case): each column is a contiguous run over k, so a
             * panel is the transpose of NR such runs, as for A's rows. */
            interleave_runs(dst, src, g->b_cs, kc, 16);
        } else if (g->b_rs == 1 && cols == nr && nr == 32) {
            interleave_runs(dst, src, g->b_cs, kc, 32);
        } else if (g->b_rs == 1) {
            for (int64_t j = 0; j < cols; j++) {
                const float *col = src + j * g->b_cs;
                for (int64_t k = 0; k < kc; k++) dst[k * nr + j] = col[k];
            }
            for (int64_t j = cols; j < nr; j++)
                for (int64_t k = 0; k < kc; k++) dst[k * nr + j] = 0.0f;
        } else {
            for (int64_t k = 0; k < kc; k++) {
                for (int64_t j = 0; j < cols; j++) dst[k * nr + j] = src[k * g->b_rs + j * g->b_cs];
                for (int64_t j = cols; j < nr; j++) dst[k * nr + j] = 0.0f;
            }
        }
    }
}

void remat_gemm_pack_strided(float *restrict dst, int64_t ld, int64_t width, const void *src, int b16, int64_t rs,
                             int64_t cs, int64_t count, int64_t kc) {
    if (b16) {
        pack_bf16(dst, ld, src, rs, cs, kc, count, width);
        return;
    }
    const float *s = src;
    if (cs == 1) {
        transpose_runs(dst, ld, s, rs, count, kc, width);
        return;
    }
    for (int64_t k = 0; k < kc; k++) {
        for (int64_t r = 0; r < count; r++) dst[k * ld + r] = s[r * rs + k * cs];
        remat_gemm_zero_floats(dst + k * ld + count, width - count);
    }
}

/* Asks the cache for rows x nr floats of C, ldc apart (a hint: no fault, no effect on values). */
static inline void prefetch_tile(const float *c, int64_t ldc, int64_t rows, int64_t nr) {
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < nr; j += 16) __builtin_prefetch(c + r * ldc + j, 1, 3);
        __builtin_prefetch(c + r * ldc + nr - 1, 1, 3);
    }
}

/* A tile cut by the matrix edge, of a bf16 C (widened in, rounded out), or spanning
 * two groups of C's columns: the same kernel on a full-size tile buffer, loaded from and
 * stored back to C(i0 + r, j0 + j) run by run. */
static void kernel_edge(const gemm_args *g, int64_t kc, const float *ap, const float *bp, int64_t i0, int64_t j0,
                        int load, int64_t rows, int64_t cols) {
    const remat_gemm_kernel *kn = g->kn;
    float tile[REMAT_GEMM_MAX_TILE];
    memset(tile, 0, sizeof tile);
    if (load)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0, n; j < cols; j += n) {
                n = c_run(g, j0 + j, cols - j);
                const int64_t o = c_off(g, i0 + r, j0 + j);
                if (g->c16)
                    for (int64_t q = 0; q < n; q++) tile[r * kn->nr + j + q] = act_ld(g->cv, o + q, 1);
                else
                    memcpy(tile + r * kn->nr + j, g->c + o, (size_t)n * sizeof(float));
            }
    if (kn->tile_half && 2 * cols <= kn->nr)
        kn->tile_half(kc, ap, bp, tile, kn->nr, load);
    else
        kn->tile(kc, ap, bp, tile, kn->nr, load);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0, n; j < cols; j += n) {
            n = c_run(g, j0 + j, cols - j);
            const int64_t o = c_off(g, i0 + r, j0 + j);
            if (g->c16)
                for (int64_t q = 0; q < n; q++) act_st(g->cv, o + q, tile[r * kn->nr + j + q], 1);
            else
                memcpy(g->c + o, tile + r * kn->nr + j, (size_t)n * sizeof(float));
        }
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* K blocks of (nearly) equal size, none above kcmax. */
static int64_t k_block(int64_t K, int64_t kcmax) {
    int64_t nb = (K + kcmax - 1) / kcmax;
    return nb ? (K + nb - 1) / nb : 1;
}

/* One packed A block (mc rows) times one packed B block (nc columns), kc deep, into C
 * at (ic, jc): every tile once, B micro-panels outer, A micro-panels inner. */
static void macro_block(const gemm_args *g, const float *ap, const float *bp, int64_t ic, int64_t mc, int64_t jc,
                        int64_t nc, int64_t kc, int load) {
    const remat_gemm_kernel *kn = g->kn;
    const int64_t MR = kn->mr, NR = kn->nr, ldc = g->ldc;
    for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = nc - jr < NR ? nc - jr : NR;
        const float *bpanel = bp + jr * kc;
        const int one_run = c_run(g, jc + jr, cols) == cols;
        for (int64_t ir = 0; ir < mc; ir += MR) {
            const int64_t rows = mc - ir < MR ? mc - ir : MR;
            const float *apanel = ap + ir * kc;
            if (g->c16 || !one_run) {
                kernel_edge(g, kc, apanel, bpanel, ic + ir, jc + jr, load, rows, cols);
                continue;
            }
            float *ctile = g->c + c_off(g, ic + ir, jc + jr);
            /* The next tile's C, fetched while this one computes: the chain starts from
             * C, so a kernel cannot defer its C load to the end. */
            if (ir + MR < mc) prefetch_tile(ctile + MR * ldc, ldc, mc - ir - MR < MR ? mc - ir - MR : MR, NR);
            else if (jr + NR < nc) prefetch_tile(g->c + c_off(g, ic, jc + jr + NR), ldc, mc < MR ? mc : MR, NR);
            if (rows == MR && cols == NR)
                kn->tile(kc, apanel, bpanel, ctile, ldc, load);
            else
                kernel_edge(g, kc, apanel, bpanel, ic + ir, jc + jr, load, rows, cols);
        }
    }
}

/* The bf16 C block [ic, ic+mc) x [jc, jc+nc) widened into the float block of view gb
 * (store = 0), or gb's block stored back into C, rounded once (store = 1). */
static void c16_block(const gemm_args *g, const gemm_args *gb, int64_t ic, int64_t mc, int64_t jc, int64_t nc,
                      int store) {
    for (int64_t r = 0; r < mc; r++)
        for (int64_t j = 0; j < nc; j++) {
            const int64_t o = c_off(g, ic + r, jc + j);
            float *x = gb->c + c_off(gb, r, j);
            if (store) act_st(g->cv, o, *x, 1);
            else *x = act_ld(g->cv, o, 1);
        }
}

/* Computes the output rectangle [m0,m1) x [n0,n1) with packing and blocking.
 * Two loop orders, the same chains (each element's K blocks in ascending order):
 *  - B whole: when all of B's columns packed over all of K fit GEMM_WHOLE_B_BYTES,
 *    B is packed once and each A block runs through every K block in turn, so A's rows
 *    are read end to end (a stream the hardware prefetches) and the C block stays in
 *    cache between K blocks; this is what small-N products (convolutions) need;
 *    with one M block B would be used once, so then the classic order packs each K
 *    block of B just before its use, while it is in cache (the conv weight gradient of
 *    few rows: 18 x 64 x 9216);
 *  - otherwise the classic order: N blocks, K blocks, M blocks (B block in L3, A block
 *    in L2, B micro-panel in L1). */
#define GEMM_WHOLE_B_BYTES ((size_t)3 << 20)
static void gemm_blocked(const gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const remat_gemm_kernel *kn = g->kn;
    const int64_t M = m1 - m0, N = n1 - n0, K = g->K, MR = kn->mr, NR = kn->nr, MC = kn->mc, NC = kn->nc;
    if (M <= 0 || N <= 0) return;
    if (K == 0) {
        if (!g->accumulate)
            for (int64_t i = m0; i < m1; i++)
                for (int64_t j = n0, n; j < n1; j += n) {
                    n = c_run(g, j, n1 - j);
                    memset(act_at(g->cv, c_off(g, i, j), g->c16), 0, (size_t)(n * act_size(g->c16)));
                }
        return;
    }
    const int64_t kcb = k_block(K, kn->kc);
    /* M blocks of (nearly) equal size in whole tiles, none above the kernel's MC: a short
     * last block would reuse each B micro-panel for a few tiles only. */
    const int64_t m_blocks = (M + MC - 1) / MC;
    const int64_t mcb = round_up((M + m_blocks - 1) / m_blocks, MR);
    const int64_t ncb = N < NC ? round_up(N, NR) : NC;
    const int whole_b = m_blocks > 1 && N <= NC && (size_t)(K * ncb) * sizeof(float) <= GEMM_WHOLE_B_BYTES;
    /* The buffers, bounded whatever M, N and K (REMAT_GEMM_SCRATCH_BYTES): an A block
     * (MC x KC), a B block (KC x NC, or all of K when that fits GEMM_WHOLE_B_BYTES) and,
     * for a bf16 C, its float block (MC x NC); 64 bytes of slack each so that each can
     * start on a cache line. */
    size_t a_bytes = (size_t)(mcb * kcb) * sizeof(float) + 64;
    size_t b_bytes = (size_t)(ncb * (whole_b ? K : kcb)) * sizeof(float) + 64;
    size_t c_bytes = (size_t)(mcb * ncb) * sizeof(float) + 64;
    char *araw = remat_xmalloc(a_bytes, NULL), *braw = remat_xmalloc(b_bytes, NULL);
    char *craw = g->c16 ? remat_xmalloc(c_bytes, NULL) : NULL;
    if (!araw || !braw || (g->c16 && !craw)) {
        remat_xfree(araw);
        remat_xfree(braw);
        remat_xfree(craw);
        gemm_scalar(g, m0, m1, n0, n1);
        return;
    }
    float *ap = (float *)(araw + ((64 - (uintptr_t)araw % 64) % 64));
    float *bp = (float *)(braw + ((64 - (uintptr_t)braw % 64) % 64));
    /* A bf16 C: each block of it is held in float (cb, ncb wide: gb is the view of
     * the block, at (0, 0)) while it runs through every K block, widened in and rounded
     * out once, so its chains continue across K blocks as a float C's do. */
    gemm_args gb = *g;
    if (g->c16) {
        gb.c = (float *)(craw + ((64 - (uintptr_t)craw % 64) % 64));
        gb.cv = gb.c;
        gb.c16 = 0;
        gb.ldc = gb.cg = ncb;
        gb.gs = 0;
    }

    if (whole_b) {
        /* K block pc of B is kc x ncb floats at bp + pc * ncb. */
        for (int64_t pc = 0; pc < K; pc += kcb) pack_b(bp + pc * ncb, g, kn->nr, pc, K - pc < kcb ? K - pc : kcb, n0, N);
        for (int64_t ic = m0; ic < m1; ic += mcb) {
            const int64_t mc = m1 - ic < mcb ? m1 - ic : mcb;
            if (g->c16 && g->accumulate) c16_block(g, &gb, ic, mc, n0, N, 0);
            for (int64_t pc = 0; pc < K; pc += kcb) {
                const int64_t kc = K - pc < kcb ? K - pc : kcb;
                pack_a(ap, g, kn->mr, ic, mc, pc, kc);
                if (g->c16) macro_block(&gb, ap, bp + pc * ncb, 0, mc, 0, N, kc, g->accumulate || pc > 0);
                else macro_block(g, ap, bp + pc * ncb, ic, mc, n0, N, kc, g->accumulate || pc > 0);
            }
            if (g->c16) c16_block(g, &gb, ic, mc, n0, N, 1);
        }
    } else if (!g->c16) {
        for (int64_t jc = n0; jc < n1; jc += NC) {
            const int64_t nc = n1 - jc < NC ? n1 - jc : NC;
            for (int64_t pc = 0; pc < K; pc += kcb) {
                const int64_t kc = K - pc < kcb ? K - pc : kcb;
                pack_b(bp, g, kn->nr, pc, kc, jc, nc);
                for (int64_t ic = m0; ic < m1; ic += mcb) {
                    const int64_t mc = m1 - ic < mcb ? m1 - ic : mcb;
                    pack_a(ap, g, kn->mr, ic, mc, pc, kc);
                    macro_block(g, ap, bp, ic, mc, jc, nc, kc, g->accumulate || pc > 0);
                }
            }
        }
    } else {
        /* bf16 C, N blocks: M blocks outer so that each C block is finished before the
         * next (B blocks packed again per M block: 1/MC of the multiply-adds in copies). */
        for (int64_t jc = n0; jc < n1; jc += NC) {
            const int64_t nc = n1 - jc < NC ? n1 - jc : NC;
            for (int64_t ic = m0; ic < m1; ic += mcb) {
                const int64_t mc = m1 - ic < mcb ? m1 - ic : mcb;
                if (g->accumulate) c16_block(g, &gb, ic, mc, jc, nc, 0);
                for (int64_t pc = 0; pc < K; pc += kcb) {
                    const int64_t kc = K - pc < kcb ? K - pc : kcb;
                    pack_b(bp, g, kn->nr, pc, kc, jc, nc);
                    pack_a(ap, g, kn->mr, ic, mc, pc, kc);
                    macro_block(&gb, ap, bp, 0, mc, 0, nc, kc, g->accumulate || pc > 0);
                }
                c16_block(g, &gb, ic, mc, jc, nc, 1);
            }
        }
    }
    remat_xfree(araw);
    remat_xfree(braw);
    remat_xfree(craw);
}

/* Splits the output over threads (parallel.h): along M when it is the longer side, else
 * along N (so that the operand each part packs whole is the smaller one), each part at
 * least GEMM_MIN_FLOPS_PER_THREAD multiply-adds; along M in whole micro-tiles, along N
 * in half tiles where the kernel has a half-width tile (tile_half): a part ending
 * half-way through a column panel runs its last panel on that kernel, so a narrow N
 * splits evenly (the conv weight gradient of 64 x 147: 5 panels of 32 columns, 3:2 in
 * whole panels, 2.5:2.5 in halves). Which thread computes an element never changes
 * its value. */
typedef struct gemm_split {
    const gemm_args *g;
    int split_m;
} gemm_split;

static void gemm_part(void *ctx, int64_t lo, int64_t hi) {
    const gemm_split *s = ctx;
    if (s->split_m) gemm_blocked(s->g, lo, hi, 0, s->g->N);
    else gemm_blocked(s->g, 0, s->g->M, lo, hi);
}

static void gemm_run(const gemm_args *g) {
    if (g->M <= 0 || g->N <= 0) return;
    const gemm_split s = {g, g->M >= g->N};
    const int64_t other = (s.split_m ? g->N : g->M) * (g->K > 0 ? g->K : 1);
    const int64_t min_items = (GEMM_MIN_FLOPS_PER_THREAD + other - 1) / other;
    const int64_t n_align = g->kn->tile_half ? g->kn->nr / 2 : g->kn->nr;
    remat_ref_parallel_for(s.split_m ? g->M : g->N, s.split_m ? g->kn->mr : n_align, min_items, gemm_part,
                           (void *)&s);
}

static gemm_args desc_args(const remat_gemm_kernel *k, const remat_gemm_desc *d) {
    gemm_args g;
    memset(&g, 0, sizeof g);
    g.c = d->c16 ? NULL : (float *)d->C;
    g.a = d->a16 || d->pack_a ? NULL : (const float *)d->A;
    g.b = d->b16 || d->pack_b ? NULL : (const float *)d->B;
    g.cv = d->C, g.av = d->A, g.bv = d->B;
    g.c16 = d->c16, g.a16 = d->a16, g.b16 = d->b16;
    g.M = d->M, g.N = d->N, g.K = d->K;
    g.a_rs = d->a_rs, g.a_cs = d->a_cs, g.b_rs = d->b_rs, g.b_cs = d->b_cs;
    g.ldc = d->ldc;
    g.cg = d->c_group > 0 ? d->c_group : (d->N > 0 ? d->N : 1);
    g.gs = d->c_group > 0 ? d->c_group_stride : 0;
    g.pack_a = d->pack_a, g.pack_b = d->pack_b;
    g.pack_a_ctx = d->pack_a_ctx, g.pack_b_ctx = d->pack_b_ctx;
    g.accumulate = d->accumulate;
    g.kn = k;
    return g;
}

static void gemm_desc_with(const remat_gemm_kernel *k, const remat_gemm_desc *d) {
    const gemm_args g = desc_args(k, d);
    gemm_run(&g);
}

/* The descriptor of a plain row-major GEMM in one of the three layouts. */
static remat_gemm_desc layout_desc(remat_gemm_layout layout, void *C, int c16, const void *A, int a16, const void *B,
                                   int b16, int64_t M, int64_t N, int64_t K, int accumulate) {
    remat_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.C = C, d.c16 = c16, d.ldc = N;
    d.A = A, d.a16 = a16, d.B = B, d.b16 = b16;
    d.M = M, d.N = N, d.K = K, d.accumulate = accumulate;
    switch (layout) {
    case REMAT_GEMM_NT: d.a_rs = K, d.a_cs = 1, d.b_rs = 1, d.b_cs = K; break;
    case REMAT_GEMM_NN: d.a_rs = K, d.a_cs = 1, d.b_rs = N, d.b_cs = 1; break;
    case REMAT_GEMM_TN: d.a_rs = 1, d.a_cs = M, d.b_rs = N, d.b_cs = 1; break;
    }
    return d;
}

static void gemm_typed_with(const remat_gemm_kernel *k, remat_gemm_layout layout, void *C, int c16, const void *A,
                            int a16, const void *B, int b16, int64_t M, int64_t N, int64_t K, int accumulate) {
    const remat_gemm_desc d = layout_desc(layout, C, c16, A, a16, B, b16, M, N, K, accumulate);
    gemm_desc_with(k, &d);
}

void remat_gemm_with(const remat_gemm_kernel *k, remat_gemm_layout layout, float *C, const float *A, const float *B,
                     int64_t M, int64_t N, int64_t K, int accumulate) {
    gemm_typed_with(k, layout, C, 0, A, 0, B, 0, M, N, K, accumulate);
}

/* The kernel of the current path (simd.h). */
static const remat_gemm_kernel *current_kernel(void) {
    switch (remat_ref_simd_get()) {
    case REMAT_SIMD_AVX512: return &remat_gemm_kernel_avx512;
    case REMAT_SIMD_AVX2: return &remat_gemm_kernel_avx2;
    default: return &remat_gemm_kernel_scalar;
    }
}

void remat_gemm_current_tile(int *mr, int *nr) {
    const remat_gemm_kernel *k = current_kernel();
    *mr = k->mr, *nr = k->nr;
}

void remat_ref_gemm_nt(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate) {
    remat_gemm_with(current_kernel(), REMAT_GEMM_NT, C, A, B, M, N, K, accumulate);
}

void remat_ref_gemm_nn(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate) {
    remat_gemm_with(current_kernel(), REMAT_GEMM_NN, C, A, B, M, N, K, accumulate);
}

void remat_ref_gemm_tn(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate) {
    remat_gemm_with(current_kernel(), REMAT_GEMM_TN, C, A, B, M, N, K, accumulate);
}

void remat_gemm_typed(remat_gemm_layout layout, void *C, int c16, const void *A, int a16, const void *B, int b16,
                      int64_t M, int64_t N, int64_t K, int accumulate) {
    gemm_typed_with(current_kernel(), layout, C, c16, A, a16, B, b16, M, N, K, accumulate);
}

void remat_gemm_desc_run_with(const remat_gemm_kernel *k, const remat_gemm_desc *d) { gemm_desc_with(k, d); }

void remat_gemm_desc_run(const remat_gemm_desc *d) { gemm_desc_with(current_kernel(), d); }

void remat_gemm_desc_run_block(const remat_gemm_desc *d, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const gemm_args g = desc_args(current_kernel(), d);
    if (m0 < 0) m0 = 0;
    if (m1 > g.M) m1 = g.M;
    if (n0 < 0) n0 = 0;
    if (n1 > g.N) n1 = g.N;
    if (m0 < m1 && n0 < n1) gemm_blocked(&g, m0, m1, n0, n1);
}
