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
 * once and in ascending order, since p -> input pixel is increasing.
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


/* dout floats per block buffer (a block is at least one output row). */
#define DW_BLOCK_FLOATS 65536
/* Fewest pixels per step (N h_out w_out) for the automatic choice. */
#define DW_MIN_PIXELS 128
/* Rows k per chunk where the whole step is one block (accumulators in a buffer). */
#define DW_CHUNK_K 32

typedef struct dw_job {
    float *dw; /* dweight's group slice, c_out x K */
    float *pt; /* P_t^T: pt[k * c_out + co], where the step is several blocks */
    const float *dout, *inp;
    const remat_conv_geom *g;
    int64_t N, in_e, out_e, block_rows;
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

/* Rows [k0, k1) of P_t, added into dw. The step's N * h_out output rows (n, oy) are
 * cut into blocks of block_rows rows; per block, dout transposed, then every row k
 * continues its chain over the block's terms (the first block starts it at +0, the
 * last one fixes zeros). One block: rows k in chunks whose accumulators are a buffer,
 * each chunk added when done; several blocks: the accumulators are pt, added at the end
 * (remat_ref_conv2d_dw_sparse). */
static void dw_rows(void *ctx, int64_t k0, int64_t k1) {
    dw_job *j = ctx;
    const remat_conv_geom *g = j->g;
    const int64_t co_n = g->c_out, khw = g->kh * g->kw, wo = g->w_out, P = g->h_out * wo, win = g->w_in;
    const int64_t dh = remat_conv_dil_h(g), dwx = remat_conv_dil_w(g), sh = g->sh, sw = g->sw, K = dw_k(g);
    const int64_t R = j->block_rows, bp_max = R * wo, rows_all = j->N * g->h_out;
    const int one = R >= rows_all, chunk = one ? DW_CHUNK_K : k1 - k0;
    const int64_t nseg_max = R / g->h_out + 2, rin = R * sh + nseg_max * ((g->kh - 1) * dh + 1);
    float *dt = remat_xmalloc((size_t)(bp_max * co_n) * sizeof(float), NULL);
    int32_t *cidx = remat_xmalloc((size_t)(rin * win) * sizeof(int32_t), NULL);
    float *cval = remat_xmalloc((size_t)(rin * win) * sizeof(float), NULL);
    int64_t *rs = remat_xmalloc((size_t)(rin + nseg_max + 1) * sizeof(int64_t), NULL);
    int32_t *lidx = remat_xmalloc((size_t)(bp_max + 1) * sizeof(int32_t), NULL);
    float *lval = remat_xmalloc((size_t)(bp_max + 1) * sizeof(float), NULL);
    dw_seg *seg = remat_xmalloc((size_t)nseg_max * sizeof(dw_seg), NULL);
    float *cbuf = one ? remat_xmalloc((size_t)(DW_CHUNK_K * co_n) * sizeof(float), NULL) : NULL;
    int32_t *oxmap = sw > 1 ? remat_xmalloc((size_t)(g->kw * win) * sizeof(int32_t), NULL) : NULL;
    if (oxmap) /* oxmap[kx * w_in + ix] = ox where ox * sw + kx * dw - pw = ix, ox < w_out; else -1 */
        for (int64_t kx = 0; kx < g->kw; kx++)
            for (int64_t ix = 0; ix < win; ix++) {
                const int64_t t = ix - (kx * dwx - g->pw);
                oxmap[kx * win + ix] = t >= 0 && t % sw == 0 && t / sw < wo ? (int32_t)(t / sw) : -1;
            }
    if (!dt || !cidx || !cval || !rs || !lidx || !lval || !seg || (one && !cbuf) || (sw > 1 && !oxmap)) {
        /* no scratch: the dense chains, element by element */
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
        goto done;
    }
    int64_t built = -1, ns = 0, ci_have = -1;
    for (int64_t kc0 = k0; kc0 < k1; kc0 += chunk) {
        const int64_t kc1 = kc0 + chunk < k1 ? kc0 + chunk : k1;
        float *accs = one ? cbuf : j->pt + kc0 * co_n; /* row k's accumulators at accs + (k - kc0) * c_out */
        for (int64_t r0 = 0; r0 < rows_all; r0 += R) {
            const int64_t r1 = r0 + R < rows_all ? r0 + R : rows_all;
            if (built != r0) { /* the block: its parts, dout transposed */
                ns = 0;
                for (int64_t r = r0, q = 0, rb = 0; r < r1; ns++) {
                    dw_seg *u = &seg[ns];
                    u->n = r / g->h_out, u->oy0 = r % g->h_out;
                    u->oy1 = u->oy0 + (r1 - r) < g->h_out ? u->oy0 + (r1 - r) : g->h_out;
                    u->q0 = q, u->rsb = rb;
                    /* dt[(q0 + i) * c_out + co] = dout_n(co, oy0 * wo + i) */
                    j->tr(dt + q * co_n, co_n, j->dout + u->n * j->out_e + u->oy0 * wo, P, co_n, (u->oy1 - u->oy0) * wo);
                    u->a = u->oy0 * sh - g->ph, u->b = (u->oy1 - 1) * sh - g->ph + (g->kh - 1) * dh + 1;
                    if (u->a < 0) u->a = 0;
                    if (u->b > g->h_in) u->b = g->h_in;
                    if (u->b < u->a) u->b = u->a;
                    q += (u->oy1 - u->oy0) * wo, rb += u->b - u->a + 1, r += u->oy1 - u->oy0;
                }
                built = r0, ci_have = -1;
            }
            const int first = r0 == 0, last = r1 == rows_all;
            for (int64_t k = kc0; k < kc1; k++) {
                const int64_t ci = k / khw, ky = (k % khw) / g->kw, kx = k % g->kw;
                if (ci != ci_have) { /* channel ci's nonzero pixels of each part's input rows */
                    int64_t e = 0;
                    for (int s = 0; s < ns; s++) {
                        const float *x = j->inp + seg[s].n * j->in_e + ci * g->h_in * win;
                        int64_t *r = rs + seg[s].rsb;
                        r[0] = e;
                        for (int64_t iy = seg[s].a; iy < seg[s].b; iy++) {
                            e += remat_sparse_list(cidx + e, cval + e, x + iy * win, win, 0);
                            r[iy - seg[s].a + 1] = e;
                        }
                    }
                    ci_have = ci;
                }
                /* row k's terms: input (iy, ix) -> output (oy, ox), ascending */
                const int64_t ex = kx * dwx - g->pw;
                int64_t m = 0;
                for (int s = 0; s < ns; s++) {
                    const dw_seg *u = &seg[s];
                    const int64_t *r = rs + u->rsb;
                    for (int64_t oy = u->oy0; oy < u->oy1; oy++) {
                        const int64_t iy = oy * sh - g->ph + ky * dh;
                        if (iy < u->a || iy >= u->b) continue;
                        const int64_t base = u->q0 + (oy - u->oy0) * wo;
                        if (sw == 1) { /* the entries with ex <= ix < ex + wo: a run (ix ascending) */
                            int64_t e0 = r[iy - u->a], e1 = r[iy - u->a + 1];
                            while (e0 < e1 && cidx[e0] < ex) e0++;
                            while (e1 > e0 && cidx[e1 - 1] >= ex + wo) e1--;
                            const int32_t off = (int32_t)(base - ex);
                            int32_t *restrict li = lidx + m;
                            float *restrict lv = lval + m;
                            for (int64_t e = e0; e < e1; e++) li[e - e0] = off + cidx[e], lv[e - e0] = cval[e];
                            m += e1 - e0;
                        } else { /* strided: input column -> output column or -1, per kx */
                            const int32_t *om = oxmap + kx * win;
                            for (int64_t e = r[iy - u->a]; e < r[iy - u->a + 1]; e++) {
                                const int32_t ox = om[cidx[e]];
                                lidx[m] = (int32_t)base + ox, lval[m] = cval[e];
                                m += ox >= 0;
                            }
                        }
                    }
                }
                float *acc = accs + (k - kc0) * co_n;
                if (first) remat_gemm_zero_floats(acc, co_n);
                if (m) j->chain(acc, co_n, dt, co_n, lidx, lval, m);
                if (!last) continue;
                /* zeros (a row without terms is +0, as the dense chain) */
                int64_t zeros = 0;
                for (int64_t co = 0; co < co_n; co++) zeros += acc[co] == 0.0f;
                if (zeros && (m || !first))
                    for (int64_t co = 0; co < co_n; co++)
                        if (acc[co] == 0.0f) acc[co] = dw_zero_sign(j, co, k);
            }
        }
        if (one) j->add_t(j->dw + kc0, K, accs, co_n, co_n, kc1 - kc0); /* dw(o, k) += accs[(k - kc0) * c_out + o] */
    }
done:
    remat_xfree(dt), remat_xfree(cidx), remat_xfree(cval), remat_xfree(rs), remat_xfree(lidx), remat_xfree(lval);
    remat_xfree(seg), remat_xfree(cbuf), remat_xfree(oxmap);
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
    if (rows * s->w_out >= INT32_MAX) return 0; /* block pixels are int32 */
    if (mode == REMAT_SPARSE_AUTO) {
        /* a conv reading its input pixels less than once each (1x1 with stride 2) lists
         * more pixels than it uses (measured: 0.6-0.7x at 15 %) */
        if (P * s->kh * s->kw < plane) return 0;
        /* few pixels per step (vgg b7 / sew l4: N P = 72 / 49): the add of P_t, as costly
         * either way, outweighs the skipped terms (measured 0.93x at 15 %) */
        if (N * P < DW_MIN_PIXELS) return 0;
        /* the input's density first: a dense input pays no scan of dout */
        const int64_t nz = remat_ref_floats_nonzero_runs(inp, N, s->c_in * plane, in_e); /* threaded */
        if ((double)nz > REMAT_CONV_DW_SPARSE_DENSITY * (double)(N * s->c_in * plane)) return 0;
    }
    if (!remat_ref_floats_all_finite_runs(dout, N, s->c_out * P, out_e)) return 0; /* threaded */
    const remat_simd p = remat_ref_simd_get();
    dw_job j = {dweight, pw, dout, inp, s, N, in_e, out_e, rows, remat_sparse_chain_for(p), remat_sparse_transpose_for(p),
                remat_sparse_add_t_for(p)};
    remat_ref_parallel_for(K, 1, 16, dw_rows, &j);
    if (rows < N * s->h_out) remat_ref_conv2d_dw_add_t(dweight, pw, s->c_out, K);
    return 1;
}
