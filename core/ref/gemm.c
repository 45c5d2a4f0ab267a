/* gemm.c - the reference backend's three deterministic single-precision GEMMs.
 *
 * The contract (ref_kernels.h, semantics.md): every output element is ONE fixed chain
 *
 *     c = (accumulate ? C[i,j] : +0.0f);  for k = 0 .. K-1:  c = fma(A(i,k), B(k,j), c)
 *
 * with a single-rounding fused multiply-add, whatever M, N, the element's position in
 * a tile, the cache blocking and the thread count. How this code keeps that:
 *  - one micro-kernel (MR x NR = 6 x 16, AVX2 _mm256_fmadd_ps) computes every tile;
 *    edge tiles run the same kernel on zero-padded packed panels, through a small
 *    tile buffer, and only the valid part is stored back;
 *  - K is blocked (KC) but never split: a K block ends by storing the float
 *    accumulators to C and the next block reloads them, which is exact, so the chain
 *    simply continues; K blocks run in ascending order;
 *  - threads split the output rows (or columns) only, never K;
 *  - the scalar paths (no AVX2/FMA at compile time, or a failed buffer allocation)
 *    use fmaf(), which is the same correctly rounded fused operation, so they give
 *    the very same bits.
 * Assumptions: row-major operands, int64 sizes, pointers need no particular alignment
 * (unaligned loads/stores). Packing buffers come from remat_xmalloc; if that fails
 * the GEMM falls back to the (slow, bit-identical) scalar chain rather than failing.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "core/ref/ref_kernels.h"
#include "core/base/status.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define REMAT_GEMM_SIMD 1
#else
#define REMAT_GEMM_SIMD 0
#endif

enum {
    GEMM_MR = 6,     /* rows of the micro-tile */
    GEMM_NR = 16,    /* columns of the micro-tile (two 8-float vectors) */
    GEMM_KC = 256,   /* K block: one B micro-panel (KC x NR floats, 16 KiB) stays in L1 */
    GEMM_MC = 120,   /* M block: the packed A block (MC x KC floats, 120 KiB) stays in L2 */
    GEMM_NC = 3072,  /* N block: the packed B block (KC x NC floats, 3 MiB) stays in L3 */
};

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

/* A general view of the operands: A(i,k) = a[i*a_rs + k*a_cs], B(k,j) = b[k*b_rs + j*b_cs].
 * Exactly one stride of each is 1 in the three layouts. */
typedef struct gemm_args {
    float *c;
    const float *a, *b;
    int64_t M, N, K;
    int64_t a_rs, a_cs, b_rs, b_cs;
    int accumulate;
} gemm_args;

/* The scalar chain, element by element: the bit-exact definition of the result. */
static void gemm_scalar(const gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    for (int64_t i = m0; i < m1; i++)
        for (int64_t j = n0; j < n1; j++) {
            float c = g->accumulate ? g->c[i * g->N + j] : 0.0f;
            for (int64_t k = 0; k < g->K; k++) c = fmaf(g->a[i * g->a_rs + k * g->a_cs], g->b[k * g->b_rs + j * g->b_cs], c);
            g->c[i * g->N + j] = c;
        }
}

/* ---- packing ---------------------------------------------------------------
 * Packed A: for each MR-row panel, for each k, MR values (rows past the end: 0).
 * Packed B: for each NR-column panel, for each k, NR values (columns past the end: 0). */
static void pack_a(float *restrict ap, const gemm_args *g, int64_t i0, int64_t mc, int64_t k0, int64_t kc) {
    for (int64_t p = 0; p < mc; p += GEMM_MR) {
        int64_t rows = mc - p < GEMM_MR ? mc - p : GEMM_MR;
        float *dst = ap + p * kc;
        const float *src = g->a + (i0 + p) * g->a_rs + k0 * g->a_cs;
        if (g->a_cs == 1 && rows == GEMM_MR) {
            /* A row-major: read MR rows side by side, write interleaved. */
            const float *r0 = src, *r1 = src + g->a_rs, *r2 = src + 2 * g->a_rs, *r3 = src + 3 * g->a_rs,
                        *r4 = src + 4 * g->a_rs, *r5 = src + 5 * g->a_rs;
            for (int64_t k = 0; k < kc; k++) {
                dst[k * GEMM_MR + 0] = r0[k];
                dst[k * GEMM_MR + 1] = r1[k];
                dst[k * GEMM_MR + 2] = r2[k];
                dst[k * GEMM_MR + 3] = r3[k];
                dst[k * GEMM_MR + 4] = r4[k];
                dst[k * GEMM_MR + 5] = r5[k];
            }
        } else if (g->a_rs == 1 && rows == GEMM_MR) {
            /* A stored transposed: MR contiguous values per k. */
            for (int64_t k = 0; k < kc; k++) memcpy(dst + k * GEMM_MR, src + k * g->a_cs, GEMM_MR * sizeof(float));
        } else {
            for (int64_t k = 0; k < kc; k++) {
                for (int64_t r = 0; r < rows; r++) dst[k * GEMM_MR + r] = src[r * g->a_rs + k * g->a_cs];
                for (int64_t r = rows; r < GEMM_MR; r++) dst[k * GEMM_MR + r] = 0.0f;
            }
        }
    }
}

static void pack_b(float *restrict bp, const gemm_args *g, int64_t k0, int64_t kc, int64_t j0, int64_t nc) {
    for (int64_t q = 0; q < nc; q += GEMM_NR) {
        int64_t cols = nc - q < GEMM_NR ? nc - q : GEMM_NR;
        float *dst = bp + q * kc;
        const float *src = g->b + k0 * g->b_rs + (j0 + q) * g->b_cs;
        if (g->b_cs == 1 && cols == GEMM_NR) {
            /* B row-major [K,N]: NR contiguous values per k. */
            for (int64_t k = 0; k < kc; k++) memcpy(dst + k * GEMM_NR, src + k * g->b_rs, GEMM_NR * sizeof(float));
        } else if (g->b_rs == 1) {
            /* B stored [N,K] (the NT case): each column is a contiguous run over k. */
            for (int64_t j = 0; j < cols; j++) {
                const float *col = src + j * g->b_cs;
                for (int64_t k = 0; k < kc; k++) dst[k * GEMM_NR + j] = col[k];
            }
            for (int64_t j = cols; j < GEMM_NR; j++)
                for (int64_t k = 0; k < kc; k++) dst[k * GEMM_NR + j] = 0.0f;
        } else {
            for (int64_t k = 0; k < kc; k++) {
                for (int64_t j = 0; j < cols; j++) dst[k * GEMM_NR + j] = src[k * g->b_rs + j * g->b_cs];
                for (int64_t j = cols; j < GEMM_NR; j++) dst[k * GEMM_NR + j] = 0.0f;
            }
        }
    }
}

/* ---- the micro-kernel --------------------------------------------------------
 * C[0..MR, 0..NR] (ldc apart) = (load ? C : 0) then, for k ascending,
 * c[r][j] = fma(ap[k*MR + r], bp[k*NR + j], c[r][j]). */
#if REMAT_GEMM_SIMD
#define KSTEP(kk)                                                          \
    do {                                                                   \
        const __m256 b0 = _mm256_loadu_ps(bp + (kk) * GEMM_NR);            \
        const __m256 b1 = _mm256_loadu_ps(bp + (kk) * GEMM_NR + 8);        \
        __m256 a = _mm256_broadcast_ss(ap + (kk) * GEMM_MR + 0);           \
        c00 = _mm256_fmadd_ps(a, b0, c00);                                 \
        c01 = _mm256_fmadd_ps(a, b1, c01);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * GEMM_MR + 1);                  \
        c10 = _mm256_fmadd_ps(a, b0, c10);                                 \
        c11 = _mm256_fmadd_ps(a, b1, c11);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * GEMM_MR + 2);                  \
        c20 = _mm256_fmadd_ps(a, b0, c20);                                 \
        c21 = _mm256_fmadd_ps(a, b1, c21);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * GEMM_MR + 3);                  \
        c30 = _mm256_fmadd_ps(a, b0, c30);                                 \
        c31 = _mm256_fmadd_ps(a, b1, c31);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * GEMM_MR + 4);                  \
        c40 = _mm256_fmadd_ps(a, b0, c40);                                 \
        c41 = _mm256_fmadd_ps(a, b1, c41);                                 \
        a = _mm256_broadcast_ss(ap + (kk) * GEMM_MR + 5);                  \
        c50 = _mm256_fmadd_ps(a, b0, c50);                                 \
        c51 = _mm256_fmadd_ps(a, b1, c51);                                 \
    } while (0)

static void kernel_6x16(int64_t kc, const float *restrict ap, const float *restrict bp, float *restrict c,
                        int64_t ldc, int load) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (load) {
        c00 = _mm256_loadu_ps(c + 0 * ldc), c01 = _mm256_loadu_ps(c + 0 * ldc + 8);
        c10 = _mm256_loadu_ps(c + 1 * ldc), c11 = _mm256_loadu_ps(c + 1 * ldc + 8);
        c20 = _mm256_loadu_ps(c + 2 * ldc), c21 = _mm256_loadu_ps(c + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(c + 3 * ldc), c31 = _mm256_loadu_ps(c + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(c + 4 * ldc), c41 = _mm256_loadu_ps(c + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(c + 5 * ldc), c51 = _mm256_loadu_ps(c + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    }
    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
        _mm_prefetch((const char *)(ap + 8 * GEMM_MR * 4), _MM_HINT_T0);
        KSTEP(0);
        KSTEP(1);
        KSTEP(2);
        KSTEP(3);
        ap += 4 * GEMM_MR;
        bp += 4 * GEMM_NR;
    }
    for (; k < kc; k++) {
        KSTEP(0);
        ap += GEMM_MR;
        bp += GEMM_NR;
    }
    _mm256_storeu_ps(c + 0 * ldc, c00), _mm256_storeu_ps(c + 0 * ldc + 8, c01);
    _mm256_storeu_ps(c + 1 * ldc, c10), _mm256_storeu_ps(c + 1 * ldc + 8, c11);
    _mm256_storeu_ps(c + 2 * ldc, c20), _mm256_storeu_ps(c + 2 * ldc + 8, c21);
    _mm256_storeu_ps(c + 3 * ldc, c30), _mm256_storeu_ps(c + 3 * ldc + 8, c31);
    _mm256_storeu_ps(c + 4 * ldc, c40), _mm256_storeu_ps(c + 4 * ldc + 8, c41);
    _mm256_storeu_ps(c + 5 * ldc, c50), _mm256_storeu_ps(c + 5 * ldc + 8, c51);
}
#undef KSTEP
#else
static void kernel_6x16(int64_t kc, const float *restrict ap, const float *restrict bp, float *restrict c,
                        int64_t ldc, int load) {
    float acc[GEMM_MR][GEMM_NR];
    for (int r = 0; r < GEMM_MR; r++)
        for (int j = 0; j < GEMM_NR; j++) acc[r][j] = load ? c[r * ldc + j] : 0.0f;
    for (int64_t k = 0; k < kc; k++)
        for (int r = 0; r < GEMM_MR; r++)
            for (int j = 0; j < GEMM_NR; j++) acc[r][j] = fmaf(ap[k * GEMM_MR + r], bp[k * GEMM_NR + j], acc[r][j]);
    for (int r = 0; r < GEMM_MR; r++)
        for (int j = 0; j < GEMM_NR; j++) c[r * ldc + j] = acc[r][j];
}
#endif

/* A tile cut by the matrix edge: the same kernel on a full-size tile buffer. */
static void kernel_edge(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc, int load,
                        int64_t rows, int64_t cols) {
    float tile[GEMM_MR * GEMM_NR];
    memset(tile, 0, sizeof tile);
    if (load)
        for (int64_t r = 0; r < rows; r++) memcpy(tile + r * GEMM_NR, c + r * ldc, (size_t)cols * sizeof(float));
    kernel_6x16(kc, ap, bp, tile, GEMM_NR, load);
    for (int64_t r = 0; r < rows; r++) memcpy(c + r * ldc, tile + r * GEMM_NR, (size_t)cols * sizeof(float));
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* K blocks of (nearly) equal size, none above GEMM_KC. */
static int64_t k_block(int64_t K) {
    int64_t nb = (K + GEMM_KC - 1) / GEMM_KC;
    return nb ? (K + nb - 1) / nb : 1;
}

/* Computes the output rectangle [m0,m1) x [n0,n1) with packing and blocking. */
static void gemm_blocked(const gemm_args *g, int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    const int64_t M = m1 - m0, N = n1 - n0, K = g->K;
    if (M <= 0 || N <= 0) return;
    if (K == 0) {
        if (!g->accumulate)
            for (int64_t i = m0; i < m1; i++) memset(g->c + i * g->N + n0, 0, (size_t)N * sizeof(float));
        return;
    }
    const int64_t kcb = k_block(K);
    const int64_t mcb = M < GEMM_MC ? round_up(M, GEMM_MR) : GEMM_MC;
    const int64_t ncb = N < GEMM_NC ? round_up(N, GEMM_NR) : GEMM_NC;
    /* 64 bytes of slack so that each buffer can start on a cache line. */
    size_t a_bytes = (size_t)(mcb * kcb) * sizeof(float) + 64, b_bytes = (size_t)(ncb * kcb) * sizeof(float) + 64;
    char *araw = remat_xmalloc(a_bytes, NULL), *braw = remat_xmalloc(b_bytes, NULL);
    if (!araw || !braw) {
        remat_xfree(araw);
        remat_xfree(braw);
        gemm_scalar(g, m0, m1, n0, n1);
        return;
    }
    float *ap = (float *)(araw + ((64 - (uintptr_t)araw % 64) % 64));
    float *bp = (float *)(braw + ((64 - (uintptr_t)braw % 64) % 64));
    const int64_t ldc = g->N;

    for (int64_t jc = n0; jc < n1; jc += GEMM_NC) {
        const int64_t nc = n1 - jc < GEMM_NC ? n1 - jc : GEMM_NC;
        for (int64_t pc = 0; pc < K; pc += kcb) {
            const int64_t kc = K - pc < kcb ? K - pc : kcb;
            const int load = g->accumulate || pc > 0;
            pack_b(bp, g, pc, kc, jc, nc);
            for (int64_t ic = m0; ic < m1; ic += GEMM_MC) {
                const int64_t mc = m1 - ic < GEMM_MC ? m1 - ic : GEMM_MC;
                pack_a(ap, g, ic, mc, pc, kc);
                for (int64_t jr = 0; jr < nc; jr += GEMM_NR) {
                    const int64_t cols = nc - jr < GEMM_NR ? nc - jr : GEMM_NR;
                    const float *bpanel = bp + jr * kc;
                    for (int64_t ir = 0; ir < mc; ir += GEMM_MR) {
                        const int64_t rows = mc - ir < GEMM_MR ? mc - ir : GEMM_MR;
                        float *ctile = g->c + (ic + ir) * ldc + jc + jr;
                        const float *apanel = ap + ir * kc;
                        if (rows == GEMM_MR && cols == GEMM_NR)
                            kernel_6x16(kc, apanel, bpanel, ctile, ldc, load);
                        else
                            kernel_edge(kc, apanel, bpanel, ctile, ldc, load, rows, cols);
                    }
                }
            }
        }
    }
    remat_xfree(araw);
    remat_xfree(braw);
}

typedef struct gemm_part {
    const gemm_args *g;
    int64_t m0, m1, n0, n1;
} gemm_part;

static void *gemm_part_run(void *arg) {
    const gemm_part *p = arg;
    gemm_blocked(p->g, p->m0, p->m1, p->n0, p->n1);
    return NULL;
}

/* Splits the output over threads: along M when it is the longer side, else along N,
 * in whole micro-tiles. Which thread computes an element never changes its value. */
static void gemm_run(const gemm_args *g) {
    if (g->M <= 0 || g->N <= 0) return;
    int threads = remat_ref_get_threads();
    int64_t work = g->M * g->N * (g->K > 0 ? g->K : 1);
    if (work / GEMM_MIN_FLOPS_PER_THREAD < threads) threads = (int)(work / GEMM_MIN_FLOPS_PER_THREAD);
    const int split_m = g->M >= g->N;
    const int64_t unit = split_m ? GEMM_MR : GEMM_NR;
    const int64_t units = ((split_m ? g->M : g->N) + unit - 1) / unit;
    if (threads > units) threads = (int)units;
    if (threads <= 1) {
        gemm_blocked(g, 0, g->M, 0, g->N);
        return;
    }
    gemm_part parts[GEMM_MAX_THREADS];
    pthread_t tids[GEMM_MAX_THREADS];
    int started[GEMM_MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        int64_t lo = units * t / threads * unit, hi = units * (t + 1) / threads * unit;
        int64_t ext = split_m ? g->M : g->N;
        if (hi > ext) hi = ext;
        parts[t] = (gemm_part){g, 0, g->M, 0, g->N};
        if (split_m) parts[t].m0 = lo, parts[t].m1 = hi;
        else parts[t].n0 = lo, parts[t].n1 = hi;
    }
    for (int t = 1; t < threads; t++) started[t] = pthread_create(&tids[t], NULL, gemm_part_run, &parts[t]) == 0;
    gemm_part_run(&parts[0]);
    /* A thread that could not start: its part runs here, with the same result. */
    for (int t = 1; t < threads; t++) {
        if (started[t]) pthread_join(tids[t], NULL);
        else gemm_part_run(&parts[t]);
    }
}

void remat_ref_gemm_nt(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate) {
    gemm_args g = {C, A, B, M, N, K, K, 1, 1, K, accumulate};
    gemm_run(&g);
}

void remat_ref_gemm_nn(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate) {
    gemm_args g = {C, A, B, M, N, K, K, 1, N, 1, accumulate};
    gemm_run(&g);
}

void remat_ref_gemm_tn(float *C, const float *A, const float *B, int64_t M, int64_t N, int64_t K, int accumulate) {
    gemm_args g = {C, A, B, M, N, K, 1, M, N, 1, accumulate};
    gemm_run(&g);
}
