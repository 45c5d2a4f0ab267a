/* sparse_gemm.c - the zero-skipping GEMM of a remat_gemm_desc (sparse_gemm.h has the
 * contract, sparse_chain.h the argument that its bits are the dense GEMM's).
 *
 * Blocking: A is transposed once per pass into tiles of `tile` rows (128 on AVX-512,
 * 64 otherwise), wt[t][k][i] (shared by the threads, packed by them tile by tile); a
 * pass takes as many rows as keep wt within REMAT_GEMM_SCRATCH_BYTES (rows_per_pass). Per thread, SG_PB columns of C (pixels) at a time; for each, rows of C
 * in chunks of at most SG_MC (the accumulator buffer acc[j][i], SG_PB x SG_MC floats,
 * held in L2 across K blocks); K in blocks of SG_KB rows: the block's B panel
 * (SG_KB x SG_PB, packed as the dense GEMM packs B) becomes the per-column nonzero lists
 * (SG_PB x SG_KB entries; remat_sparse_lists_for: on AVX-512 16 x 16 transposes in
 * registers and a compress per column), then for each tile every column's list runs over the tile's
 * SG_KB x tile block of wt (32 KiB at 128: in L1 while the columns run over it). K
 * blocks run in ascending order and each column's list is in k order, so every
 * element's chain is its k-ascending chain without B's zeros.
 * Measured (bench/conv_bench, densities argument): repacking A's block per column
 * block cost more than the chains themselves, hence the one transposed copy per call.
 */
#include "core/ref/sparse_gemm.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/base/status.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/sparse_chain.h"

#define SG_PB 256  /* columns per block (a multiple of SG_PW) */
#define SG_PW 16   /* columns per list-building step */
#define SG_KB 64   /* K rows per block */
#define SG_MC 512  /* C rows per accumulator chunk (a multiple of every tile) */
/* Below this many (dense) multiply-adds per part a call stays on one thread. */
#define SG_MIN_FLOPS_PER_THREAD ((int64_t)1 << 21)

static int g_mode = REMAT_SPARSE_AUTO;
static int64_t g_runs = 0;

int64_t remat_sparse_gemm_runs(void) { return __atomic_load_n(&g_runs, __ATOMIC_RELAXED); }

remat_sparse_mode remat_sparse_mode_set(remat_sparse_mode m) {
    return (remat_sparse_mode)__atomic_exchange_n(&g_mode, (int)m, __ATOMIC_RELAXED);
}

remat_sparse_mode remat_sparse_mode_get(void) { return (remat_sparse_mode)__atomic_load_n(&g_mode, __ATOMIC_RELAXED); }

double remat_sparse_density(int64_t m, int64_t k) {
    if (m >= 512) return 0.50;
    if (m >= 256) return 0.40;
    if (m >= 128 || (m >= REMAT_SPARSE_MIN_ROWS && k >= REMAT_SPARSE_NARROW_K)) return REMAT_SPARSE_DENSITY;
    return 0.0;
}

int remat_sparse_pick(const float *b, int64_t n_b, int64_t m, const float *a, int64_t n_a, const float *c,
                      int64_t n_c) {
    const int mode = __atomic_load_n(&g_mode, __ATOMIC_RELAXED);
    if (mode == REMAT_SPARSE_DENSE || n_b <= 0) return 0;
    if (mode == REMAT_SPARSE_AUTO) {
        const double limit = m > 0 ? remat_sparse_density(m, n_a / m) : 0.0;
        if (limit <= 0.0 || (double)remat_ref_floats_nonzero_runs(b, 1, n_b, n_b) > limit * (double)n_b) return 0;
    }
    return remat_ref_floats_all_finite_runs(a, 1, n_a, n_a) && (!c || remat_floats_all_finite(c, n_c, 1));
}

typedef struct sg_call {
    const remat_gemm_desc *d;
    remat_sparse_chain_fn chain;
    remat_sparse_lists_fn lists;
    remat_sparse_move_fn tr; /* the accumulators' moves to and from C */
    int64_t tile, cg, gs; /* rows per A tile; C's column groups */
    float *wt;            /* A transposed, per tile of rows: tile t's row k at wt + (t * K + k) * tile */
    int fast_tr;          /* AVX2 transposes for A (the AVX2 and AVX-512 paths) */
} sg_call;

static inline float *c_at(const sg_call *s, int64_t i, int64_t j) {
    return (float *)s->d->C + (j / s->cg) * s->gs + i * s->d->ldc + j % s->cg;
}

/* dst[k * ld + r] = A(first + r, k0 + k), r < count (0 up to width), k < kc. */
static void pack_a_tile(const sg_call *s, float *dst, int64_t ld, int64_t first, int64_t count, int64_t k0,
                        int64_t kc) {
    const remat_gemm_desc *d = s->d;
    if (d->pack_a) d->pack_a(d->pack_a_ctx, dst, (int)ld, first, count, k0, kc);
    else remat_gemm_pack_strided(dst, ld, ld, (const float *)d->A + first * d->a_rs + k0 * d->a_cs, 0, d->a_rs,
                                 d->a_cs, count, kc);
}

/* dst[k * width + r] = B(k0 + k, first + r), r < count (0 up to width), k < kc. */
static void pack_b_panel(const sg_call *s, float *dst, int width, int64_t first, int64_t count, int64_t k0,
                         int64_t kc) {
    const remat_gemm_desc *d = s->d;
    if (d->pack_b) d->pack_b(d->pack_b_ctx, dst, width, first, count, k0, kc);
    else remat_gemm_pack_strided(dst, width, width, (const float *)d->B + k0 * d->b_rs + first * d->b_cs, 0, d->b_cs,
                                 d->b_rs, count, kc);
}

/* The dense fmaf() chain of element (i, j) from c: the definition of the result. */
static float dense_element(const sg_call *s, int64_t i, int64_t j, float c) {
    float a[SG_KB], b[SG_KB];
    for (int64_t k0 = 0; k0 < s->d->K; k0 += SG_KB) {
        const int64_t kc = s->d->K - k0 < SG_KB ? s->d->K - k0 : SG_KB;
        pack_a_tile(s, a, 1, i, 1, k0, kc);
        pack_b_panel(s, b, 1, j, 1, k0, kc);
        for (int64_t k = 0; k < kc; k++) c = fmaf(a[k], b[k], c);
    }
    return c;
}

typedef struct sg_scratch {
    float *acc;   /* SG_PB x SG_MC */
    float *panel; /* SG_KB x SG_PB: B's block */
    float *val;   /* SG_PB x SG_KB */
    int32_t *idx; /* SG_PB x SG_KB */
    int32_t *cnt, *tot; /* SG_PB */
} sg_scratch;

/* acc[r * SG_MC + i] <-> C(ic + i, jb + r), r < nb, i < mc, run by run within C's
 * column groups (the path's transposes). */
static void acc_move(const sg_call *s, float *acc, int64_t ic, int64_t mc, int64_t jb, int64_t nb, int store) {
    for (int64_t r = 0, n; r < nb; r += n) {
        const int64_t left = s->cg - (jb + r) % s->cg;
        n = nb - r < left ? nb - r : left;
        float *c = c_at(s, ic, jb + r);
        if (store) s->tr(c, s->d->ldc, acc + r * SG_MC, SG_MC, n, mc);
        else s->tr(acc + r * SG_MC, SG_MC, c, s->d->ldc, mc, n);
    }
}

/* Columns [jb, jb + nb), rows [ic, ic + mc) of C. */
static void sparse_block(const sg_call *s, const sg_scratch *w, int64_t ic, int64_t mc, int64_t jb, int64_t nb) {
    const remat_gemm_desc *d = s->d;
    if (d->accumulate) acc_move(s, w->acc, ic, mc, jb, nb, 0);
    else
        for (int64_t r = 0; r < nb; r++) memset(w->acc + r * SG_MC, 0, (size_t)mc * sizeof(float));
    memset(w->tot, 0, (size_t)nb * sizeof(int32_t));
    for (int64_t k0 = 0; k0 < d->K; k0 += SG_KB) {
        const int64_t kc = d->K - k0 < SG_KB ? d->K - k0 : SG_KB;
        pack_b_panel(s, w->panel, SG_PB, jb, nb, k0, kc);
        int64_t any = 0;
        for (int64_t q0 = 0; q0 < nb; q0 += SG_PW)
            any += s->lists(w->idx + q0 * SG_KB, w->val + q0 * SG_KB, w->cnt + q0, w->panel + q0, SG_PB,
                            nb - q0 < SG_PW ? nb - q0 : SG_PW, kc, SG_KB);
        if (!any) continue;
        for (int64_t r = 0; r < nb; r++) w->tot[r] += w->cnt[r];
        for (int64_t it = 0; it < mc; it += s->tile) {
            const int64_t tw = mc - it < s->tile ? mc - it : s->tile;
            const float *wt = s->wt + ((ic + it) / s->tile * d->K + k0) * s->tile;
            for (int64_t r = 0; r < nb; r++)
                if (w->cnt[r])
                    s->chain(w->acc + r * SG_MC + it, tw, wt, s->tile, w->idx + r * SG_KB, w->val + r * SG_KB,
                             w->cnt[r]);
        }
    }
    /* The +-0 results: the dense chain decides their sign (sparse_chain.h). */
    for (int64_t r = 0; r < nb; r++)
        for (int64_t i0 = 0; i0 < mc; i0 += 4) {
            float *x = w->acc + r * SG_MC + i0;
            unsigned m = mc - i0 >= 4 ? 0xfu : (1u << (mc - i0)) - 1u;
#if defined(__SSE2__)
            m &= (unsigned)_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(x), _mm_setzero_ps()));
#else
            for (int e = 0; e < 4; e++)
                if ((m >> e & 1u) && x[e] != 0.0f) m &= ~(1u << e);
#endif
            for (; m; m &= m - 1) {
                const int e = __builtin_ctz(m);
                const float c0 = d->accumulate ? *c_at(s, ic + i0 + e, jb + r) : 0.0f;
                uint32_t bits;
                memcpy(&bits, &c0, sizeof bits);
                if (w->tot[r] == 0 && bits == 0) continue;
                x[e] = dense_element(s, ic + i0 + e, jb + r, c0);
            }
        }
    acc_move(s, w->acc, ic, mc, jb, nb, 1);
}

static void sparse_part(void *ctx, int64_t lo, int64_t hi) {
    const sg_call *s = ctx;
    const remat_gemm_desc *d = s->d;
    const size_t pb = SG_PB, kb = SG_KB;
    const size_t bytes = (pb * SG_MC + kb * pb + pb * kb) * sizeof(float) + (pb * kb + 2 * pb) * sizeof(int32_t) +
                         5 * 64;
    char *raw = remat_xmalloc(bytes, NULL);
    if (!raw) {
        for (int64_t j = lo; j < hi; j++)
            for (int64_t i = 0; i < d->M; i++) {
                float *c = c_at(s, i, j);
                *c = dense_element(s, i, j, d->accumulate ? *c : 0.0f);
            }
        return;
    }
    char *p = raw;
#define SG_TAKE(type, n) ((type *)(p = (char *)(((uintptr_t)p + 63) & ~(uintptr_t)63), p += (n) * sizeof(type), p - (n) * sizeof(type)))
    sg_scratch w;
    w.acc = SG_TAKE(float, pb * SG_MC);
    w.panel = SG_TAKE(float, kb * pb);
    w.val = SG_TAKE(float, pb * kb);
    w.idx = SG_TAKE(int32_t, pb * kb);
    w.cnt = SG_TAKE(int32_t, pb);
    w.tot = SG_TAKE(int32_t, pb);
#undef SG_TAKE
    for (int64_t jb = lo; jb < hi; jb += SG_PB) {
        const int64_t nb = hi - jb < SG_PB ? hi - jb : SG_PB;
        for (int64_t ic = 0; ic < d->M; ic += SG_MC)
            sparse_block(s, &w, ic, d->M - ic < SG_MC ? d->M - ic : SG_MC, jb, nb);
    }
    remat_xfree(raw);
}

/* Tiles [lo, hi) of the transposed A. */
static void pack_wt_part(void *ctx, int64_t lo, int64_t hi) {
    const sg_call *s = ctx;
    const int64_t M = s->d->M, K = s->d->K;
    const remat_gemm_desc *d = s->d;
    for (int64_t t = lo; t < hi; t++) {
        const int64_t tw = M - t * s->tile < s->tile ? M - t * s->tile : s->tile;
        if (s->fast_tr && !d->pack_a && d->a_cs == 1) { /* rows of A contiguous: 8 x 8 transposes */
            remat_sparse_transpose_avx2(s->wt + t * K * s->tile, s->tile, (const float *)d->A + t * s->tile * d->a_rs,
                                        d->a_rs, tw, K);
            continue;
        }
        for (int64_t k0 = 0; k0 < K; k0 += SG_KB)
            pack_a_tile(s, s->wt + (t * K + k0) * s->tile, s->tile, t * s->tile, tw, k0, K - k0 < SG_KB ? K - k0 : SG_KB);
    }
}

/* One pass over rows [0, d->M) of d, whose transposed A fits the bound below. */
static void sparse_pass(remat_simd p, const remat_gemm_desc *d) {
    sg_call s;
    s.d = d;
    s.chain = remat_sparse_chain_for(p);
    s.lists = remat_sparse_lists_for(p);
    s.tr = remat_sparse_transpose_for(p);
    s.tile = p == REMAT_SIMD_AVX512 ? 128 : 64;
    s.fast_tr = p != REMAT_SIMD_SCALAR;
    s.cg = d->c_group > 0 ? d->c_group : d->N;
    s.gs = d->c_group > 0 ? d->c_group_stride : 0;
    const int64_t tiles = (d->M + s.tile - 1) / s.tile;
    char *raw = remat_xmalloc((size_t)(tiles * s.tile * (d->K > 0 ? d->K : 1)) * sizeof(float) + 64, NULL);
    if (!raw) { /* the dense GEMM: the same bits */
        remat_gemm_desc_run(d);
        return;
    }
    s.wt = (float *)(raw + ((64 - (uintptr_t)raw % 64) % 64));
    remat_ref_parallel_for(tiles, 1, 1, pack_wt_part, &s);
    const int64_t per_col = d->M * (d->K > 0 ? d->K : 1);
    const int64_t min_cols = (SG_MIN_FLOPS_PER_THREAD + per_col - 1) / per_col;
    remat_ref_parallel_for(d->N, SG_PW, min_cols, sparse_part, &s);
    remat_xfree(raw);
}

/* Rows of C per pass: as many whole tiles as keep the transposed A within
 * REMAT_GEMM_SCRATCH_BYTES (the bound of the reference backend's memory outside the
 * trace, docs/executor.md), at least one tile. A row's chain does not depend on which
 * rows share its pass, so the passes change no bit; each pass packs its own lists.
 * With a packed A (pack_a) the call is one pass. */
static int64_t rows_per_pass(remat_simd p, const remat_gemm_desc *d) {
    const int64_t tile = p == REMAT_SIMD_AVX512 ? 128 : 64, k = d->K > 0 ? d->K : 1;
    const int64_t rows = REMAT_GEMM_SCRATCH_BYTES / ((int64_t)sizeof(float) * k) / tile * tile;
    return d->pack_a ? d->M : rows > tile ? rows : tile;
}

void remat_sparse_gemm_desc_run_on(remat_simd p, const remat_gemm_desc *d) {
    __atomic_fetch_add(&g_runs, 1, __ATOMIC_RELAXED);
    if (d->M <= 0 || d->N <= 0) return;
    const int64_t step = rows_per_pass(p, d);
    for (int64_t m0 = 0; m0 < d->M; m0 += step) {
        remat_gemm_desc part = *d;
        part.M = d->M - m0 < step ? d->M - m0 : step;
        if (m0 > 0) {
            part.A = (const float *)d->A + m0 * d->a_rs;
            part.C = (float *)d->C + m0 * d->ldc;
        }
        sparse_pass(p, &part);
    }
}

void remat_sparse_gemm_desc_run(const remat_gemm_desc *d) { remat_sparse_gemm_desc_run_on(remat_ref_simd_get(), d); }
