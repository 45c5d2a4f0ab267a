/* conv_sparse_dw.c - the conv2d weight gradient skipping the input's zeros
 * (conv_sparse_dw.h).
 *
 * Layout: the accumulators are P_t^T [k][co] in the caller's P_t region (the same
 * c_out * K floats, no other workspace), so that one row k is the contiguous w = c_out
 * accumulators of sparse_chain.h's chain. The reduction over (n, p) is cut into blocks
 * of output rows (n, oy) (as many as DW_BLOCK_FLOATS floats of dout hold; a small
 * layer's whole step is one block): per block, dout is transposed into [(n, p)][co] (a
 * bounded per-thread buffer), and each row k of the thread's rows continues its chain
 * over the block's nonzero terms (stored and reloaded between blocks: exact), so every
 * accumulator sees its terms in (n, p) ascending order. Row k's nonzero list for a block
 * comes from channel ci's nonzero input pixels of the block's input rows (one list per
 * channel and block), shifted by (ky, kx) and clipped: each output pixel appears at most
 * once and in ascending order, since p -> input pixel is increasing. The rows run in
 * chunks: the chunk's lists first, then its chains tile of output channels by tile, over
 * the block's pixels in pieces whose part of dt fits L1 (the block itself is up to
 * 2 MiB of dout: few blocks, so the accumulators are rarely stored and reloaded).
 * Threads: remat_ref_parallel_for over k (each thread its own rows and scratch); an
 * element's chain does not depend on the split.
 * After the chains, elements that are +-0 and computed at least one term get the dense
 * chain's sign (dw_zero_sign: usually from the last few terms). Then dweight += P_t,
 * transposed: per chunk of rows where the whole step is one block (P_t^T is then never
 * written whole), else from pw at the end.
 */
#include "core/ref/conv_sparse_dw.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/base/status.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/sparse_chain.h"
#include "core/ref/sparse_gemm.h"


/* dout floats per block buffer (a block is at least one output row; 2 MiB). */
#define DW_BLOCK_FLOATS (1 << 19)
/* List entries per chunk of rows (at least one row's: 1 MiB of index and value). */
#define DW_LIST_ENTRIES (1 << 17)
/* dt floats a tile's chains read per piece of pixels (about 24 KiB: in L1 with the
 * chunk's accumulators). */
#define DW_PIECE_FLOATS 6144
/* Fewest pixels per step (N h_out w_out) and rows k for the automatic choice. */
#define DW_MIN_PIXELS 128
#define DW_MIN_K 32
/* Rows k per chunk (the lists made before the chains run). */
#define DW_CHUNK_K 32

typedef struct dw_job {
    float *dw; /* dweight's group slice, c_out x K */
    float *pt; /* P_t^T: pt[k * c_out + co], where the step is several blocks */
    const float *dout, *inp;
    const remat_conv_geom *g;
    int64_t N, in_e, out_e, block_rows;
    int64_t tile, sub; /* the chain's columns per tile; block pixels per piece */
    remat_sparse_chain_fn chain;
    remat_sparse_move_fn tr, add_t; /* dout's transpose; dweight's add of P_t^T */
} dw_job;

static int64_t dw_k(const remat_conv_geom *g) { return g->c_in * g->kh * g->kw; }

/* col(k, (n, oy, ox)) of the step (padded positions +0). */
static inline float dw_col(const dw_job *j, int64_t n, int64_t ci, int64_t ky, int64_t kx, int64_t oy, int64_t ox) {
    const remat_conv_geom *g = j->g;
    const int64_t iy = oy * g->sh - g->ph + ky * remat_conv_dil_h(g);
    const int64_t ix = ox * g->sw - g->pw + kx * remat_conv_dil_w(g);
    if (iy < 0 || iy >= g->h_in || ix < 0 || ix >= g->w_in) return 0.0f;
    return j->inp[n * j->in_e + (ci * g->h_in + iy) * g->w_in + ix];
}

static inline uint32_t dw_sign(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u >> 31;
}

/* The dense chain's value of P_t(co, k) where the sparse one ended at +-0
 * (sparse_chain.h: the dense value is then +-0 too; only its sign is to be found).
 * Backward over the terms (n, p): while a term's product a * b is an exact zero (a or b
 * +-0; a finite), the states before it were zeros as well and the term's sum is -0 only
 * if both the state and the product are -0. So the first term from the end with a +0
 * product gives +0, as does reaching the start (+0 + -0 = +0). A term with a nonzero
 * product before either (its fma made the zero by cancellation or underflow) ends the
 * shortcut: then the dense fmaf() chain is run forward. */
static float dw_zero_sign(const dw_job *j, int64_t co, int64_t k) {
    const remat_conv_geom *g = j->g;
    const int64_t kx = k % g->kw, ky = (k / g->kw) % g->kh, ci = k / (g->kw * g->kh), P = g->h_out * g->w_out;
    for (int64_t n = j->N - 1; n >= 0; n--) {
        const float *dy = j->dout + n * j->out_e + co * P;
        for (int64_t p = P - 1; p >= 0; p--) {
            const float a = dy[p], b = dw_col(j, n, ci, ky, kx, p / g->w_out, p % g->w_out);
            if (a != 0.0f && b != 0.0f) goto forward;
            if (!(dw_sign(a) ^ dw_sign(b))) return 0.0f;
        }
    }
    return 0.0f;
forward:;
    float c = 0.0f;
    for (int64_t n = 0; n < j->N; n++) {
        const float *dy = j->dout + n * j->out_e + co * P;
        for (int64_t p = 0; p < P; p++) c = fmaf(dy[p], dw_col(j, n, ci, ky, kx, p / g->w_out, p % g->w_out), c);
    }
    return c;
}

/* One sample's part of a block: output rows [oy0, oy1) of sample n, its pixels at block
 * pixel q0 on; input rows [a, b) reach them, their lists at rs + rsb. */
typedef struct dw_seg {
    int64_t n, oy0, oy1, q0, a, b, rsb;
} dw_seg;

/* A thread's buffers (dw_rows): sizes from the block's bounds. */
typedef struct dw_scratch {
    float *dt;           /* the block's dout transposed: dt[q * c_out + co], q < block pixels */
    int32_t *cidx;       /* channel ci's nonzero input pixels, row by row: column ix ... */
    float *cval;         /* ... and value */
    int64_t *rs;         /* per part and input row: where its entries start in cidx */
    int32_t *lidx;       /* the chunk's rows' lists: row k's at (k - kc0) * lstride */
    float *lval;
    int64_t *lend, *lpos; /* per row of the chunk: its list's length; the chains' cursor */
    dw_seg *seg;
    float *cbuf;    /* one block: the chunk's accumulators */
    int32_t *oxmap; /* stride > 1: oxmap[kx * w_in + ix] = ox where ox * sw + kx * dw - pw = ix, else -1 */
    int64_t ns, bp; /* the block's parts and pixels */
    int64_t lstride, chunk;
} dw_scratch;

static void dw_scratch_free(dw_scratch *w) {
    remat_xfree(w->dt), remat_xfree(w->cidx), remat_xfree(w->cval), remat_xfree(w->rs), remat_xfree(w->lidx);
    remat_xfree(w->lval), remat_xfree(w->lend), remat_xfree(w->seg), remat_xfree(w->cbuf); /* lpos: within lend */
    remat_xfree(w->oxmap);
}

/* 1 when every buffer was allocated. */
static int dw_scratch_alloc(dw_scratch *w, const dw_job *j, int one) {
    const remat_conv_geom *g = j->g;
    const int64_t R = j->block_rows, bp_max = R * g->w_out, win = g->w_in, co_n = g->c_out;
    const int64_t nseg_max = R / g->h_out + 2, rin = R * g->sh + nseg_max * ((g->kh - 1) * remat_conv_dil_h(g) + 1);
    memset(w, 0, sizeof *w);
    w->lstride = bp_max + 1;
    w->chunk = DW_LIST_ENTRIES / w->lstride;
    if (w->chunk > DW_CHUNK_K) w->chunk = DW_CHUNK_K;
    if (w->chunk < 1) w->chunk = 1;
    w->dt = remat_xmalloc((size_t)(bp_max * co_n) * sizeof(float), NULL);
    w->cidx = remat_xmalloc((size_t)(rin * win) * sizeof(int32_t), NULL);
    w->cval = remat_xmalloc((size_t)(rin * win) * sizeof(float), NULL);
    w->rs = remat_xmalloc((size_t)(rin + nseg_max + 1) * sizeof(int64_t), NULL);
    w->lidx = remat_xmalloc((size_t)(w->chunk * w->lstride) * sizeof(int32_t), NULL);
    w->lval = remat_xmalloc((size_t)(w->chunk * w->lstride) * sizeof(float), NULL);
    w->lend = remat_xmalloc((size_t)(2 * w->chunk) * sizeof(int64_t), NULL);
    w->lpos = w->lend ? w->lend + w->chunk : NULL;
    w->seg = remat_xmalloc((size_t)nseg_max * sizeof(dw_seg), NULL);
    w->cbuf = one ? remat_xmalloc((size_t)(w->chunk * co_n) * sizeof(float), NULL) : NULL;
    w->oxmap = g->sw > 1 ? remat_xmalloc((size_t)(g->kw * win) * sizeof(int32_t), NULL) : NULL;
    if (w->oxmap)
        for (int64_t kx = 0; kx < g->kw; kx++)
            for (int64_t ix = 0; ix < win; ix++) {
                const int64_t t = ix - (kx * remat_conv_dil_w(g) - g->pw);
                w->oxmap[kx * win + ix] = t >= 0 && t % g->sw == 0 && t / g->sw < g->w_out ? (int32_t)(t / g->sw) : -1;
            }
    return w->dt && w->cidx && w->cval && w->rs && w->lidx && w->lval && w->lend && w->seg && (!one || w->cbuf) &&
           (g->sw == 1 || w->oxmap);
}

/* Without scratch: rows [k0, k1) of P_t by the dense chains, element by element. */
static void dw_dense_rows(const dw_job *j, int64_t k0, int64_t k1, int one) {
    const remat_conv_geom *g = j->g;
    const int64_t co_n = g->c_out, khw = g->kh * g->kw, wo = g->w_out, P = g->h_out * wo, K = dw_k(g);
    for (int64_t k = k0; k < k1; k++)
        for (int64_t co = 0; co < co_n; co++) {
            float c = 0.0f;
            const int64_t kx = k % g->kw, ky = (k / g->kw) % g->kh, ci = k / khw;
            for (int64_t n = 0; n < j->N; n++)
                for (int64_t p = 0; p < P; p++)
                    c = fmaf(j->dout[n * j->out_e + co * P + p], dw_col(j, n, ci, ky, kx, p / wo, p % wo), c);
            if (one) j->dw[co * K + k] = j->dw[co * K + k] + c;
            else j->pt[k * co_n + co] = c;
        }
}

/* The block of output rows [r0, r1) of the step: its parts (one per sample it
 * touches), their input rows, and dout transposed into w->dt. */
static void dw_block(const dw_job *j, dw_scratch *w, int64_t r0, int64_t r1) {
    const remat_conv_geom *g = j->g;
    const int64_t co_n = g->c_out, wo = g->w_out, P = g->h_out * wo, dh = remat_conv_dil_h(g);
    int64_t ns = 0, q = 0;
    for (int64_t r = r0, rb = 0; r < r1; ns++) {
        dw_seg *u = &w->seg[ns];
        u->n = r / g->h_out, u->oy0 = r % g->h_out;
        u->oy1 = u->oy0 + (r1 - r) < g->h_out ? u->oy0 + (r1 - r) : g->h_out;
        u->q0 = q, u->rsb = rb;
        /* dt[(q0 + i) * c_out + co] = dout_n(co, oy0 * wo + i) */
        j->tr(w->dt + q * co_n, co_n, j->dout + u->n * j->out_e + u->oy0 * wo, P, co_n, (u->oy1 - u->oy0) * wo);
        u->a = u->oy0 * g->sh - g->ph, u->b = (u->oy1 - 1) * g->sh - g->ph + (g->kh - 1) * dh + 1;
        if (u->a < 0) u->a = 0;
        if (u->b > g->h_in) u->b = g->h_in;
        if (u->b < u->a) u->b = u->a;
        q += (u->oy1 - u->oy0) * wo, rb += u->b - u->a + 1, r += u->oy1 - u->oy0;
    }
    w->ns = ns, w->bp = q;
}

/* Channel ci's nonzero pixels of each part's input rows (entries of row iy of part s
 * at rs[rsb + iy - a] .. rs[rsb + iy - a + 1]). */
static void dw_channel_lists(const dw_job *j, dw_scratch *w, int64_t ci) {
    const remat_conv_geom *g = j->g;
    int64_t e = 0;
    for (int64_t s = 0; s < w->ns; s++) {
        const dw_seg *u = &w->seg[s];
        const float *x = j->inp + u->n * j->in_e + ci * g->h_in * g->w_in;
        int64_t *r = w->rs + u->rsb;
        r[0] = e;
        for (int64_t iy = u->a; iy < u->b; iy++) {
            e += remat_sparse_list(w->cidx + e, w->cval + e, x + iy * g->w_in, g->w_in, 0);
            r[iy - u->a + 1] = e;
        }
    }
}

/* Row k = (ci, ky, kx)'s terms in the block from the channel lists (input (iy, ix) ->
 * block pixel of output (oy, ox), ascending) into li / lv; returns how many. */
static int64_t dw_row_list(const dw_job *j, const dw_scratch *w, int64_t ky, int64_t kx, int32_t *restrict li,
                           float *restrict lv) {
    const remat_conv_geom *g = j->g;
    const int64_t wo = g->w_out, ex = kx * remat_conv_dil_w(g) - g->pw, ey = ky * remat_conv_dil_h(g) - g->ph;
    int64_t m = 0;
    for (int64_t s = 0; s < w->ns; s++) {
        const dw_seg *u = &w->seg[s];
        const int64_t *r = w->rs + u->rsb;
        for (int64_t oy = u->oy0; oy < u->oy1; oy++) {
            const int64_t iy = oy * g->sh + ey;
            if (iy < u->a || iy >= u->b) continue;
            const int64_t base = u->q0 + (oy - u->oy0) * wo;
            int64_t e0 = r[iy - u->a], e1 = r[iy - u->a + 1];
            if (g->sw == 1) { /* the entries with ex <= ix < ex + wo: a run (ix ascending) */
                while (e0 < e1 && w->cidx[e0] < ex) e0++;
                while (e1 > e0 && w->cidx[e1 - 1] >= ex + wo) e1--;
                const int32_t off = (int32_t)(base - ex);
                for (int64_t e = e0; e < e1; e++) li[m + e - e0] = off + w->cidx[e], lv[m + e - e0] = w->cval[e];
                m += e1 - e0;
            } else { /* strided: input column -> output column or -1, per kx */
                const int32_t *om = w->oxmap + kx * g->w_in;
                for (int64_t e = e0; e < e1; e++) {
                    const int32_t ox = om[w->cidx[e]];
                    li[m] = (int32_t)base + ox, lv[m] = w->cval[e];
                    m += ox >= 0;
                }
            }
        }
    }
    return m;
}

/* The chains of the chunk's n rows over the block (row i's accumulators at
 * accs + i * c_out, its list at lidx / lval + i * lstride): tile by tile of
 * tile columns (output channels), the block's pixels in pieces of sub pixels, so that
 * the piece of dt a tile reads (sub x tile floats) stays in L1 across the rows. Each
 * accumulator still sees its terms in pixel order. */
static void dw_chunk_chains(const dw_job *j, dw_scratch *w, float *accs, int64_t n) {
    const int64_t co_n = j->g->c_out, sub = j->sub;
    for (int64_t co0 = 0; co0 < co_n; co0 += j->tile) {
        const int64_t tw = co_n - co0 < j->tile ? co_n - co0 : j->tile;
        for (int64_t i = 0; i < n; i++) w->lpos[i] = 0;
        for (int64_t q1 = sub; q1 < w->bp + sub; q1 += sub)
            for (int64_t i = 0; i < n; i++) {
                const int32_t *li = w->lidx + i * w->lstride;
                const int64_t e0 = w->lpos[i];
                int64_t e1 = e0;
                while (e1 < w->lend[i] && li[e1] < q1) e1++;
                if (e1 > e0) j->chain(accs + i * co_n + co0, tw, w->dt + co0, co_n, li + e0, w->lval + i * w->lstride + e0, e1 - e0);
                w->lpos[i] = e1;
            }
    }
}

/* Row k's accumulators after its last block: the +-0 ones get the dense chain's sign
 * (a row without any term is +0, as the dense chain; computed: whether any was). */
static void dw_fix_zeros(const dw_job *j, float *acc, int64_t k, int computed) {
    const int64_t co_n = j->g->c_out;
    int64_t zeros = 0;
    for (int64_t co = 0; co < co_n; co++) zeros += acc[co] == 0.0f;
    if (zeros && computed)
        for (int64_t co = 0; co < co_n; co++)
            if (acc[co] == 0.0f) acc[co] = dw_zero_sign(j, co, k);
}

/* Rows [k0, k1) of P_t, added into dw. The step's N * h_out output rows (n, oy) are
 * cut into blocks of block_rows rows; per block (dw_block), the rows run in chunks:
 * each chunk's lists (dw_row_list, from channel lists made once per channel and
 * block), then its chains (dw_chunk_chains; the first block starts them at +0, the
 * last one fixes zeros). One block: the chunk's accumulators are a buffer, added when
 * done; several blocks: they are pt, added at the end (remat_ref_conv2d_dw_sparse). */
static void dw_rows(void *ctx, int64_t k0, int64_t k1) {
    const dw_job *j = ctx;
    const remat_conv_geom *g = j->g;
    const int64_t co_n = g->c_out, khw = g->kh * g->kw, K = dw_k(g), rows_all = j->N * g->h_out;
    const int one = j->block_rows >= rows_all;
    dw_scratch w;
    if (!dw_scratch_alloc(&w, j, one)) {
        dw_dense_rows(j, k0, k1, one);
        dw_scratch_free(&w);
        return;
    }
    for (int64_t r0 = 0; r0 < rows_all; r0 += j->block_rows) {
        const int64_t r1 = r0 + j->block_rows < rows_all ? r0 + j->block_rows : rows_all;
        const int first = r0 == 0, last = r1 == rows_all;
        dw_block(j, &w, r0, r1);
        int64_t ci_have = -1;
        for (int64_t kc0 = k0; kc0 < k1; kc0 += w.chunk) {
            const int64_t kn = k1 - kc0 < w.chunk ? k1 - kc0 : w.chunk;
            float *accs = one ? w.cbuf : j->pt + kc0 * co_n; /* row k's at accs + (k - kc0) * c_out */
            for (int64_t i = 0; i < kn; i++) {
                const int64_t k = kc0 + i, ci = k / khw;
                if (ci != ci_have) dw_channel_lists(j, &w, ci), ci_have = ci;
                w.lend[i] = dw_row_list(j, &w, (k % khw) / g->kw, k % g->kw, w.lidx + i * w.lstride,
                                        w.lval + i * w.lstride);
            }
            if (first) remat_gemm_zero_floats(accs, kn * co_n);
            dw_chunk_chains(j, &w, accs, kn);
            if (last)
                for (int64_t i = 0; i < kn; i++) dw_fix_zeros(j, accs + i * co_n, kc0 + i, w.lend[i] || !first);
            if (one) j->add_t(j->dw + kc0, K, accs, co_n, co_n, kn); /* dw(o, k) += accs[(k - kc0) * c_out + o] */
        }
    }
    dw_scratch_free(&w);
}

/* dw(o, k) += pt[k * c_out + o] for rows o in [lo, hi). */
typedef struct dw_add_job {
    float *dw;
    const float *pt;
    int64_t c_out, K;
    remat_sparse_move_fn add_t;
} dw_add_job;
static void dw_add_rows(void *ctx, int64_t lo, int64_t hi) {
    const dw_add_job *d = ctx;
    d->add_t(d->dw + lo * d->K, d->K, d->pt + lo, d->c_out, hi - lo, d->K);
}

void remat_ref_conv2d_dw_add_t(float *dweight, const float *pt, int64_t c_out, int64_t K) {
    dw_add_job d = {dweight, pt, c_out, K, remat_sparse_add_t_for(remat_ref_simd_get())};
    remat_ref_parallel_for(c_out, 1, 16, dw_add_rows, &d);
}

int remat_ref_conv2d_dw_sparse(float *dweight, float *pw, const float *dout, const float *inp, int64_t N,
                               const remat_conv_geom *s, int64_t in_e, int64_t out_e) {
    const int64_t K = dw_k(s), P = s->h_out * s->w_out, plane = s->h_in * s->w_in;
    const remat_sparse_mode mode = remat_sparse_mode_get();
    if (mode == REMAT_SPARSE_DENSE || N <= 0 || P <= 0 || K <= 0 || s->c_out <= 0) return 0;
    int64_t rows = DW_BLOCK_FLOATS / (s->c_out * s->w_out);
    if (rows < 1) rows = 1;
    if (rows > N * s->h_out) rows = N * s->h_out;
    rows = (N * s->h_out + (N * s->h_out + rows - 1) / rows - 1) / ((N * s->h_out + rows - 1) / rows); /* even blocks */
    if (rows * s->w_out >= INT32_MAX) return 0; /* block pixels are int32 */
    if (mode == REMAT_SPARSE_AUTO) {
        /* a conv reading its input pixels less than once each (1x1 with stride 2) lists
         * more pixels than it uses (measured: 0.6-0.7x at 15 %) */
        if (P * s->kh * s->kw < plane) return 0;
        /* few pixels per step (vgg b7 / sew l4: N P = 72 / 49): the add of P_t, as costly
         * either way, outweighs the skipped terms (measured 0.93x at 15 %) */
        if (N * P < DW_MIN_PIXELS) return 0;
        /* few rows k (vgg-dvs's first layer, K = 18): the fixed costs per row and piece
         * outweigh the skipped terms (measured 0.8x at 15 %) */
        if (K < DW_MIN_K) return 0;
        /* the input's density first: a dense input pays no scan of dout */
        const int64_t nz = remat_ref_floats_nonzero_runs(inp, N, s->c_in * plane, in_e); /* threaded */
        if ((double)nz > REMAT_CONV_DW_SPARSE_DENSITY * (double)(N * s->c_in * plane)) return 0;
    }
    if (!remat_ref_floats_all_finite_runs(dout, N, s->c_out * P, out_e)) return 0; /* threaded */
    const remat_simd p = remat_ref_simd_get();
    const int64_t tile = p == REMAT_SIMD_AVX512 ? 128 : 64, tw = s->c_out < tile ? s->c_out : tile;
    /* pieces of even size, as many as keep each near DW_PIECE_FLOATS of dt */
    const int64_t bp = rows * s->w_out, pieces = (bp * tw + DW_PIECE_FLOATS / 2) / DW_PIECE_FLOATS;
    const int64_t sub = pieces > 1 ? (bp + pieces - 1) / pieces : bp;
    dw_job j = {dweight, pw, dout, inp, s, N, in_e, out_e, rows, tile, sub, remat_sparse_chain_for(p),
                remat_sparse_transpose_for(p), remat_sparse_add_t_for(p)};
    remat_ref_parallel_for(K, 1, 16, dw_rows, &j);
    if (rows < N * s->h_out) remat_ref_conv2d_dw_add_t(dweight, pw, s->c_out, K);
    return 1;
}
