/* conv.c - the reference conv2d: cross-correlation with zero padding, dilation and
 * groups, as PyTorch Conv2d, as implicit GEMMs on the deterministic driver
 * (gemm.c): the column matrix col_n[k][p] of sample n (k = (ci * kh + ky) * kw + kx,
 * p = oy * w_out + ox, padded positions +0) is never written whole; the GEMM's packers
 * (remat_gemm_desc, gemm_kernel.h) read its panels straight from the input.
 *
 * Fixed choices (cuda/conv.cu computes the same chains; ref_kernels.h states the contract):
 *  - forward: out_n[c_out, P] starts from the bias (or +0) and continues with the chain
 *    of W[c_out, K] col_n[K, P] over k ascending; all the call's samples are one GEMM
 *    (its columns are (n, p), C written in place through column groups of P), which
 *    changes no element's chain, so a time chunk gives the rows the full call gives.
 *    A float input that is mostly exact zeros (a spike tensor: remat_sparse_pick) takes the
 *    zero-skipping GEMM on the same descriptor (sparse_gemm.h: the same bits, weights and
 *    bias finite); bf16 models stay on the dense GEMM;
 *  - input gradient: dcol = W^T dout_n (chain over c_out from +0), then col2im adds
 *    dcol into dinp in (k, p) order. dcol is made for a few whole input channels at a
 *    time (CONV_DCOL_ROWS rows of k) and a few samples at a time (their columns side by
 *    side, CONV_DCOL_COLS): channel ci's rows only reach dinp's channel ci, and each
 *    element's chain does not depend on which rows or columns share the call (a
 *    block is split over the threads by samples, or its GEMM by columns and its col2im
 *    by channels: dinp_block);
 *  - weight gradient: P_t = sum over the step's samples n = 0 .. N-1 of
 *    dout_n col_n^T, one chain over (n, p) ascending from +0 (one GEMM whose K runs over
 *    the step's samples and pixels; for a small K its transpose col dout^T, the same
 *    chains: dw_transpose), then dweight += P_t in descending t; the bias
 *    gradient of a step is summed over (n, p) ascending from +0, then added in
 *    descending t. Where a step's input is sparse enough (a spiking layer's output),
 *    P_t comes from conv_sparse_dw.c instead: the same chains with the terms of +-0
 *    inputs left out, the same bits (conv_sparse_dw.h), as P_t^T, added transposed;
 *    bf16 storage stays on the GEMM;
 * Groups: each of the three GEMMs runs once per group (ascending) on that group's channel
 * slice (conv_group: the geometry of c_in / G input and c_out / G output channels, the
 * tensors' per-sample strides kept in conv_pack), K = (c_in / G) kh kw; an element's
 * chain is the one above over its own group's (ci, ky, kx) or output channels.
 * Memory: the workspace (a dcol block, P_t, the bias partial) is the caller's, so the
 * executor counts it as an allocation of the step; the GEMM's packing buffers are its
 * own (bounded by its cache blocking).
 * Packing: a panel's columns are split once into runs of pixels (one output row of one
 * sample each), so that its rows need no division; rows of the column matrix are
 * copied run by run (stride 1: zeros, a copy of an input row, zeros), and operands
 * whose GEMM K is contiguous in memory (the weight gradient's dout and col) are
 * transposed into panels with SIMD (remat_gemm_pack_strided). Packing only moves
 * floats: no bit depends on it.
 * bf16 storage (act.h): the same body; the packers widen the input, dcol stays float,
 * and col2im adds into one input row at a time, widened into a float row on the stack:
 * each input-gradient element receives its contributions in (ky, kx) ascending order -
 * the float scatter's order for that element, since one kernel offset reaches it from
 * at most one output pixel (cuda/conv.cu gathers them in that order) - and is stored
 * rounded once.
 */
#include <string.h>

#include "core/ref/act.h"
#include "core/ref/conv_sparse_dw.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"
#include "core/ref/sparse_gemm.h"

static int64_t conv_k(const remat_conv_geom *g) { return g->c_in / remat_conv_groups(g) * g->kh * g->kw; }
static int64_t conv_p(const remat_conv_geom *g) { return g->h_out * g->w_out; }

/* One group's geometry: c_in / G input and c_out / G output channels, no groups. */
static remat_conv_geom conv_group(const remat_conv_geom *g) {
    remat_conv_geom s = *g;
    s.c_in /= remat_conv_groups(g), s.c_out /= remat_conv_groups(g), s.groups = 1;
    return s;
}

/* dcol blocks: about CONV_DCOL_ROWS rows of k (whole input channels) by about
 * CONV_DCOL_COLS columns (whole samples). Enough rows that packing dout per block is a
 * small share of the GEMM, few enough that the block is a fraction of im2col's matrix;
 * enough columns that the weights' panels (read K floats apart) are packed once per
 * 1024 columns, not once per small sample (12 x 12 pixels: 7 samples a block). */
#define CONV_DCOL_ROWS 192
#define CONV_DCOL_COLS 1024

/* Input channels per dcol block, and samples per dcol block. */
static int64_t dcol_channels(const remat_conv_geom *g) {
    const int64_t khw = g->kh * g->kw > 0 ? g->kh * g->kw : 1;
    const int64_t c = (CONV_DCOL_ROWS + khw - 1) / khw;
    return c < g->c_in ? c : (g->c_in > 0 ? g->c_in : 1);
}
/* Never more than one sample's whole dcol (K x P): the block stays below im2col's. */
static int64_t dcol_samples(const remat_conv_geom *g) {
    const int64_t P = conv_p(g), rows = dcol_channels(g) * g->kh * g->kw;
    int64_t s = P > 0 && P < CONV_DCOL_COLS ? CONV_DCOL_COLS / P : 1;
    if (rows > 0 && s > conv_k(g) / rows) s = conv_k(g) / rows;
    return s > 1 ? s : 1;
}

int64_t remat_ref_conv2d_forward_ws_elems(const remat_conv_geom *g) { return 0; }

int64_t remat_ref_conv2d_backward_ws_elems(const remat_conv_geom *g) {
    const remat_conv_geom s = conv_group(g);
    return dcol_channels(&s) * g->kh * g->kw * dcol_samples(&s) * conv_p(g) + g->c_out * conv_k(g) + g->c_out;
}

/* The im2col sizes (cuda/conv.cu's workspace: col | dcol | P_t | bias partial). */
int64_t remat_conv2d_im2col_forward_ws_elems(const remat_conv_geom *g) { return conv_k(g) * conv_p(g); }
int64_t remat_conv2d_im2col_backward_ws_elems(const remat_conv_geom *g) {
    return 2 * conv_k(g) * conv_p(g) + g->c_out * conv_k(g) + g->c_out;
}

/* ---- the column matrix, read in place ---------------------------------------- */

/* A short run (a panel row), widened when b16. */
REMAT_ACT_INLINE void copy_run(float *restrict dst, const void *src, int64_t n, const int b16) {
    if (b16)
        for (int64_t i = 0; i < n; i++) dst[i] = act_ld(src, i, 1);
    else
        remat_gemm_copy_floats(dst, src, n);
}
#define zero_floats remat_gemm_zero_floats

typedef struct conv_pack {
    const void *x;  /* the first sample's input (col) or output gradient (dout), at its group's first channel */
    const remat_conv_geom *g; /* the group's geometry (conv_group) */
    int64_t in_e, out_e;      /* elements per sample of the whole input and output */
} conv_pack;

/* A run of the batched column matrix [col_0 | col_1 | ...] (samples side by side, P
 * columns each): len pixels of one output row of one sample, from column ox. Split
 * once per panel, so that the rows of a panel need no division. */
typedef struct pix_run {
    int64_t in_off; /* the sample's first input element */
    int64_t iy0;    /* oy * sh - ph: the input row of tap ky = 0 */
    int64_t ox, len;
} pix_run;

/* Runs of columns [j, j + n) into runs[] (at most n of them); returns how many. */
static int pix_runs(pix_run *runs, int64_t j, int64_t n, const conv_pack *c) {
    const remat_conv_geom *g = c->g;
    const int64_t P = conv_p(g);
    int64_t s = j / P, oy = (j % P) / g->w_out, ox = (j % P) % g->w_out;
    int nr = 0;
    while (n > 0) {
        const int64_t len = n < g->w_out - ox ? n : g->w_out - ox;
        runs[nr++] = (pix_run){s * c->in_e, oy * g->sh - g->ph, ox, len};
        n -= len, ox += len;
        if (ox == g->w_out) {
            ox = 0;
            if (++oy == g->h_out) oy = 0, s++;
        }
    }
    return nr;
}

/* A row k = (ci * kh + ky) * kw + kx of the column matrix, stepped along k. */
typedef struct conv_tap {
    int64_t ci, ky, kx;
} conv_tap;
static inline conv_tap tap_of(int64_t k, const remat_conv_geom *g) {
    const int64_t khw = g->kh * g->kw;
    return (conv_tap){k / khw, (k % khw) / g->kw, k % g->kw};
}
static inline void tap_next(conv_tap *t, const remat_conv_geom *g) {
    if (++t->kx == g->kw) {
        t->kx = 0;
        if (++t->ky == g->kh) t->ky = 0, t->ci++;
    }
}

/* dst[0 ..) = row t of the column matrix over the runs, back to back (padded
 * positions +0). Stride 1: each run is zeros, a copy of the input row, zeros. */
REMAT_ACT_INLINE void col_row(float *restrict dst, const pix_run *runs, int nruns, const conv_pack *c, conv_tap t,
                              const int b16) {
    const remat_conv_geom *g = c->g;
    const int64_t ey = t.ky * remat_conv_dil_h(g), ex = t.kx * remat_conv_dil_w(g) - g->pw;
    const int64_t plane = t.ci * g->h_in * g->w_in;
    for (int i = 0; i < nruns; i++) {
        const pix_run *u = &runs[i];
        const int64_t iy = u->iy0 + ey, len = u->len, ox = u->ox;
        if (iy < 0 || iy >= g->h_in) {
            zero_floats(dst, len);
        } else if (g->sw == 1) {
            /* ix = x + ex for x in [ox, ox + len): valid where 0 <= ix < w_in */
            int64_t lo = -ex, hi = g->w_in - ex;
            if (lo < ox) lo = ox;
            if (hi > ox + len) hi = ox + len;
            if (hi < lo) hi = lo;
            zero_floats(dst, lo - ox);
            copy_run(dst + (lo - ox), act_cat(c->x, u->in_off + plane + iy * g->w_in + lo + ex, b16), hi - lo, b16);
            zero_floats(dst + (hi - ox), ox + len - hi);
        } else {
            const void *src = act_cat(c->x, u->in_off + plane + iy * g->w_in, b16);
            for (int64_t q = 0; q < len; q++) {
                const int64_t ix = (ox + q) * g->sw + ex;
                dst[q] = (ix >= 0 && ix < g->w_in) ? act_ld(src, ix, b16) : 0.0f;
            }
        }
        dst += len;
    }
}

/* Columns per call of pix_runs in the packers (a stack buffer of runs, and of rows). */
#define CONV_RUN_MAX 128
#define CONV_ROWS_MAX 32

/* Forward's B: B(k, j) = col of sample j / P, row k, column j % P. Each k row of the
 * panel is one row of the column matrix over the panel's runs. */
REMAT_ACT_INLINE void pack_col_b(const void *ctx, float *dst, int width, int64_t first, int64_t count, int64_t k0,
                                 int64_t kc, const int b16) {
    const conv_pack *c = ctx;
    pix_run runs[CONV_RUN_MAX];
    for (int64_t q0 = 0; q0 < count; q0 += CONV_RUN_MAX) {
        const int64_t qn = count - q0 < CONV_RUN_MAX ? count - q0 : CONV_RUN_MAX;
        const int nr = pix_runs(runs, first + q0, qn, c);
        conv_tap t = tap_of(k0, c->g);
        for (int64_t k = 0; k < kc; k++, tap_next(&t, c->g)) col_row(dst + k * width + q0, runs, nr, c, t, b16);
    }
    if (count < width)
        for (int64_t k = 0; k < kc; k++) zero_floats(dst + k * width + count, width - count);
}
static void pack_col_b_f32(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_col_b(c, d, w, f, n, k0, kc, 0);
}
static void pack_col_b_bf16(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_col_b(c, d, w, f, n, k0, kc, 1);
}

/* Weight gradient's B: B(q, j) = col of sample q / P, row j, column q % P (the GEMM's
 * K runs over the step's samples and pixels). The panel's rows j are made as runs
 * along q in a buffer, then transposed into the panel. */
REMAT_ACT_INLINE void pack_colt_b(const void *ctx, float *dst, int width, int64_t first, int64_t count, int64_t k0,
                                  int64_t kc, const int b16) {
    const conv_pack *c = ctx;
    pix_run runs[CONV_RUN_MAX];
    float buf[CONV_ROWS_MAX * CONV_RUN_MAX];
    for (int64_t q0 = 0; q0 < kc; q0 += CONV_RUN_MAX) {
        const int64_t qn = kc - q0 < CONV_RUN_MAX ? kc - q0 : CONV_RUN_MAX;
        const int nr = pix_runs(runs, k0 + q0, qn, c);
        for (int64_t r0 = 0; r0 < count || r0 == 0; r0 += CONV_ROWS_MAX) {
            const int64_t rn = count - r0 < CONV_ROWS_MAX ? count - r0 : CONV_ROWS_MAX;
            conv_tap t = tap_of(first + r0, c->g);
            for (int64_t r = 0; r < rn; r++, tap_next(&t, c->g)) col_row(buf + r * qn, runs, nr, c, t, b16);
            /* the last piece pads the panel's columns count .. width - 1 with zeros */
            const int64_t pad = r0 + rn < count ? rn : width - r0;
            remat_gemm_pack_strided(dst + q0 * width + r0, width, pad, buf, 0, qn, 1, rn, qn);
        }
    }
}
static void pack_colt_b_f32(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_colt_b(c, d, w, f, n, k0, kc, 0);
}
static void pack_colt_b_bf16(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_colt_b(c, d, w, f, n, k0, kc, 1);
}

/* Weight gradient's A: A(i, q) = dout of sample q / P, channel i, pixel q % P: per
 * sample, a row-major block (rows P apart) transposed into the panel. */
REMAT_ACT_INLINE void pack_dout_a(const void *ctx, float *dst, int width, int64_t first, int64_t count, int64_t k0,
                                  int64_t kc, const int b16) {
    const conv_pack *c = ctx;
    const int64_t P = conv_p(c->g);
    for (int64_t q = 0, n; q < kc; q += n) {
        const int64_t s = (k0 + q) / P, p = (k0 + q) % P;
        n = kc - q < P - p ? kc - q : P - p;
        remat_gemm_pack_strided(dst + q * width, width, width, act_cat(c->x, s * c->out_e + first * P + p, b16), b16,
                                P, 1, count, n);
    }
}
static void pack_dout_a_f32(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_dout_a(c, d, w, f, n, k0, kc, 0);
}
static void pack_dout_a_bf16(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_dout_a(c, d, w, f, n, k0, kc, 1);
}

/* Input gradient's B: B(o, j) = dout of sample j / P, channel o, pixel j % P: each k
 * row of the panel is one run per sample the panel's columns reach. */
REMAT_ACT_INLINE void pack_dout_b(const void *ctx, float *dst, int width, int64_t first, int64_t count, int64_t k0,
                                  int64_t kc, const int b16) {
    const conv_pack *c = ctx;
    const int64_t P = conv_p(c->g);
    for (int64_t q = 0, n; q < count; q += n) {
        const int64_t s = (first + q) / P, p = (first + q) % P;
        n = count - q < P - p ? count - q : P - p;
        const void *src = act_cat(c->x, s * c->out_e + k0 * P + p, b16);
        for (int64_t k = 0; k < kc; k++) copy_run(dst + k * width + q, act_cat(src, k * P, b16), n, b16);
    }
    if (count < width)
        for (int64_t k = 0; k < kc; k++) zero_floats(dst + k * width + count, width - count);
}
static void pack_dout_b_f32(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_dout_b(c, d, w, f, n, k0, kc, 0);
}
static void pack_dout_b_bf16(const void *c, float *d, int w, int64_t f, int64_t n, int64_t k0, int64_t kc) {
    pack_dout_b(c, d, w, f, n, k0, kc, 1);
}

void remat_ref_im2col(float *restrict col, const float *restrict x, const remat_conv_geom *g) {
    const int64_t K = conv_k(g), P = conv_p(g);
    const conv_pack c = {x, g, 0, 0}; /* one sample */
    pix_run runs[CONV_RUN_MAX];
    for (int64_t p0 = 0; p0 < P; p0 += CONV_RUN_MAX) {
        const int64_t pn = P - p0 < CONV_RUN_MAX ? P - p0 : CONV_RUN_MAX;
        const int nr = pix_runs(runs, p0, pn, &c);
        conv_tap t = tap_of(0, g);
        for (int64_t k = 0; k < K; k++, tap_next(&t, g)) col_row(col + k * P + p0, runs, nr, &c, t, 0);
    }
}

/* ---- col2im -------------------------------------------------------------------- */

/* Channel ci's kh*kw rows of dcol (row (ky*kw + kx) at rows + (ky*kw + kx) * ld), added
 * into that channel's float plane dst in (k, p) order. Within one output row of one
 * tap every pixel reaches a different input element, so that row is added as a
 * vector over the pixels whose input is inside the plane (the same adds, in the same
 * order for each element). */
static void col2im_plane(float *restrict dst, const float *restrict rows, int64_t ld, const remat_conv_geom *g) {
    const int64_t sw = g->sw;
    for (int64_t ky = 0; ky < g->kh; ky++)
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const float *restrict row = rows + (ky * g->kw + kx) * ld;
            const int64_t ey = ky * remat_conv_dil_h(g), ex = kx * remat_conv_dil_w(g) - g->pw;
            /* output columns whose input column ox * sw + ex lies in [0, w_in) */
            int64_t lo = ex >= 0 ? 0 : (-ex + sw - 1) / sw, hi = g->w_in - 1 - ex >= 0 ? (g->w_in - 1 - ex) / sw + 1 : 0;
            if (hi > g->w_out) hi = g->w_out;
            if (hi <= lo) continue;
            for (int64_t oy = 0; oy < g->h_out; oy++) {
                const int64_t iy = oy * g->sh - g->ph + ey;
                if (iy < 0 || iy >= g->h_in) continue;
                float *restrict d = dst + iy * g->w_in;
                const float *restrict r = row + oy * g->w_out;
                if (sw == 1)
                    for (int64_t ox = lo; ox < hi; ox++) d[ox + ex] = d[ox + ex] + r[ox];
                else
                    for (int64_t ox = lo; ox < hi; ox++) d[ox * sw + ex] = d[ox * sw + ex] + r[ox];
            }
        }
}

void remat_ref_col2im_add(float *restrict dx, const float *restrict dcol, const remat_conv_geom *g) {
    const int64_t P = conv_p(g), khw = g->kh * g->kw;
    for (int64_t ci = 0; ci < g->c_in; ci++) col2im_plane(dx + ci * g->h_in * g->w_in, dcol + ci * khw * P, P, g);
}

/* col2im of one channel into a bf16 plane: one input row at a time (in pieces of at
 * most COL2IM_ROW_MAX columns), widened into a float buffer on the stack, the channel's
 * k rows added in (k, p) order as the float scatter adds them, stored rounded once. */
#define COL2IM_ROW_MAX 4096
static void col2im_plane_bf16(uint16_t *plane, const float *rows, int64_t ld, const remat_conv_geom *g) {
    float row[COL2IM_ROW_MAX];
    for (int64_t iy = 0; iy < g->h_in; iy++)
        for (int64_t x0 = 0; x0 < g->w_in; x0 += COL2IM_ROW_MAX) {
            uint16_t *d = plane + iy * g->w_in + x0;
            const int64_t nx = g->w_in - x0 < COL2IM_ROW_MAX ? g->w_in - x0 : COL2IM_ROW_MAX;
            for (int64_t ix = 0; ix < nx; ix++) row[ix] = remat_bf16_to_f32(d[ix]);
            for (int64_t ky = 0; ky < g->kh; ky++) {
                const int64_t ty = iy + g->ph - ky * remat_conv_dil_h(g);
                if (ty < 0 || ty % g->sh != 0 || ty / g->sh >= g->h_out) continue;
                for (int64_t kx = 0; kx < g->kw; kx++) {
                    const float *r = rows + (ky * g->kw + kx) * ld + (ty / g->sh) * g->w_out;
                    for (int64_t ox = 0; ox < g->w_out; ox++) {
                        const int64_t ix = ox * g->sw - g->pw + kx * remat_conv_dil_w(g) - x0;
                        if (ix >= 0 && ix < nx) row[ix] = row[ix] + r[ox];
                    }
                }
            }
            for (int64_t ix = 0; ix < nx; ix++) d[ix] = remat_f32_to_bf16(row[ix]);
        }
}

/* ---- the layer ----------------------------------------------------------------- */

REMAT_ACT_INLINE void conv2d_forward(void *out, const void *inp, const void *weight, const void *bias, float *ws,
                                     int64_t rows, const remat_conv_geom *g, const int b16) {
    const int64_t K = conv_k(g), P = conv_p(g), out_e = g->c_out * P;
    (void)ws;
    if (rows <= 0 || P <= 0) return;
    if (bias)
        for (int64_t r = 0; r < rows; r++) {
            void *o = act_at(out, r * out_e, b16);
            for (int64_t c = 0; c < g->c_out; c++)
                for (int64_t p = 0; p < P; p++) act_st(o, c * P + p, act_ld(bias, c, b16), b16);
        }
    const remat_conv_geom s = conv_group(g);
    const int64_t in_e = g->c_in * g->h_in * g->w_in;
    /* Spike inputs (mostly exact zeros): the zero-skipping GEMM, the same bits (sparse_gemm.h). */
    const int sparse = !b16 && remat_sparse_pick(inp, rows * in_e, s.c_out, weight, g->c_out * K, bias,
                                                  bias ? g->c_out : 0);
    for (int64_t gi = 0; gi < remat_conv_groups(g); gi++) {
        const conv_pack pk = {act_cat(inp, gi * s.c_in * g->h_in * g->w_in, b16), &s, in_e, out_e};
        remat_gemm_desc d;
        memset(&d, 0, sizeof d);
        d.C = act_at(out, gi * s.c_out * P, b16), d.c16 = b16, d.ldc = P, d.c_group = P, d.c_group_stride = out_e;
        d.A = act_cat(weight, gi * s.c_out * K, b16), d.a16 = b16, d.a_rs = K, d.a_cs = 1;
        d.pack_b = b16 ? pack_col_b_bf16 : pack_col_b_f32, d.pack_b_ctx = &pk;
        d.M = s.c_out, d.N = rows * P, d.K = K, d.accumulate = bias ? 1 : 0;
        if (sparse) remat_sparse_gemm_desc_run(&d);
        else remat_gemm_desc_run(&d);
    }
}

/* One dcol block of the input gradient (GEMM d: rows (c, ky, kx) of the block's cn
 * channels, columns (sample, pixel) of its rn samples) and its col2im into dinp, split
 * over the threads (parallel.h) one of three ways (dinp_split):
 *  - by samples, where they divide into parts of nearly equal micro-tiles (within
 *    DINP_SAMPLE_SLACK): a part computes its samples' columns of the block
 *    (remat_gemm_desc_run_block, on its own thread: it packs only its own columns of
 *    dout) and adds them into its samples' planes;
 *  - else, where the block has more columns than rows, in two steps: the GEMM on the
 *    threads (gemm.c splits its columns: each thread packs its own part of dout, not
 *    the whole of it), then col2im by channel;
 *  - else by channels: a part computes its channels' rows (packing all of dout) and
 *    adds them into their planes.
 * A sample's planes, and a channel's dcol rows and planes, are their own, and which
 * thread computes a dcol element never changes its chain: every thread count gives the
 * same bits. */
#define DINP_SAMPLE_SLACK 1.1
typedef struct dinp_block {
    remat_gemm_desc d;
    void *dinp;
    const remat_conv_geom *g;
    int64_t base, cn, rn; /* dinp element of sample r0's block channel 0; channels, samples in the block */
    int b16;
} dinp_block;

/* col2im of the block's channels [c0, c1) of its samples [r0, r1). */
static void dinp_col2im(const dinp_block *b, int64_t c0, int64_t c1, int64_t r0, int64_t r1) {
    const remat_conv_geom *g = b->g;
    const int64_t khw = g->kh * g->kw, plane = g->h_in * g->w_in, in_e = g->c_in * plane, P = conv_p(g), ld = b->d.ldc;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t c = c0; c < c1; c++) {
            const float *rows = (const float *)b->d.C + c * khw * ld + r * P;
            const int64_t e = b->base + r * in_e + c * plane;
            if (b->b16) col2im_plane_bf16((uint16_t *)b->dinp + e, rows, ld, g);
            else col2im_plane((float *)b->dinp + e, rows, ld, g);
        }
}

static void dinp_samples_part(void *ctx, int64_t lo, int64_t hi) {
    const dinp_block *b = ctx;
    const int64_t P = conv_p(b->g);
    remat_gemm_desc_run_block(&b->d, 0, b->d.M, lo * P, hi * P);
    dinp_col2im(b, 0, b->cn, lo, hi);
}

static void dinp_channels_part(void *ctx, int64_t lo, int64_t hi) {
    const dinp_block *b = ctx;
    const int64_t khw = b->g->kh * b->g->kw;
    remat_gemm_desc_run_block(&b->d, lo * khw, hi * khw, 0, b->d.N);
    dinp_col2im(b, lo, hi, 0, b->rn);
}

static void dinp_col2im_part(void *ctx, int64_t lo, int64_t hi) { dinp_col2im(ctx, lo, hi, 0, ((const dinp_block *)ctx)->rn); }

/* Parts of at least some 2^21 multiply-adds (a thread start costs some 10^4 cycles). */
#define DINP_MIN_FLOPS_PER_THREAD ((int64_t)1 << 21)

/* Runs block b on the threads, the way the comment above dinp_block says. */
static void dinp_split(const dinp_block *b) {
    const remat_gemm_desc *d = &b->d;
    const int64_t P = conv_p(b->g), khw = b->g->kh * b->g->kw, threads = remat_ref_get_threads();
    const int64_t per_sample = d->M * P * (d->K > 0 ? d->K : 1);
    const int64_t min_samples = DINP_MIN_FLOPS_PER_THREAD / per_sample + 1;
    const int64_t parts = b->rn / min_samples < threads ? b->rn / min_samples : threads;
    int mr, nr;
    remat_gemm_current_tile(&mr, &nr);
    /* the busiest part's column panels against an even share of the block's */
    const int64_t panels = (d->N + nr - 1) / nr;
    const int64_t part_panels = parts > 0 ? ((b->rn + parts - 1) / parts * P + nr - 1) / nr : panels;
    if (threads == 1 || (parts >= 2 && (double)(part_panels * parts) <= DINP_SAMPLE_SLACK * (double)panels)) {
        remat_ref_parallel_for(b->rn, 1, min_samples, dinp_samples_part, (void *)b);
    } else if (d->N > d->M) {
        remat_gemm_desc_run(d);
        remat_ref_parallel_for(b->cn, 1, REMAT_REF_ELEM_MIN_PER_THREAD / (khw * d->N) + 1, dinp_col2im_part, (void *)b);
    } else {
        const int64_t per_channel = khw * d->N * (d->K > 0 ? d->K : 1);
        remat_ref_parallel_for(b->cn, 1, DINP_MIN_FLOPS_PER_THREAD / per_channel + 1, dinp_channels_part, (void *)b);
    }
}

/* dinp of samples [r0, r0 + rn) (rows of the call), group gi's channels (geometry s,
 * conv_group), through dcol blocks in ws. */
REMAT_ACT_INLINE void conv2d_dinp(void *dinp, const void *dout, const void *weight, float *dcol, int64_t r0,
                                  int64_t rn, const remat_conv_geom *g, const remat_conv_geom *s, int64_t gi,
                                  const int b16) {
    const int64_t K = conv_k(g), P = conv_p(g), khw = g->kh * g->kw, plane = g->h_in * g->w_in;
    const int64_t in_e = g->c_in * plane, out_e = g->c_out * P, cpb = dcol_channels(s), ld = rn * P;
    const int64_t ci0 = gi * s->c_in; /* the group's first input channel */
    const conv_pack pk = {act_cat(dout, r0 * out_e + gi * s->c_out * P, b16), s, in_e, out_e};
    for (int64_t c0 = 0; c0 < s->c_in; c0 += cpb) {
        const int64_t cn = s->c_in - c0 < cpb ? s->c_in - c0 : cpb;
        remat_gemm_desc d;
        memset(&d, 0, sizeof d);
        d.C = dcol, d.ldc = ld;
        d.A = act_cat(weight, gi * s->c_out * K + c0 * khw, b16), d.a16 = b16, d.a_rs = 1, d.a_cs = K;
        d.pack_b = b16 ? pack_dout_b_bf16 : pack_dout_b_f32, d.pack_b_ctx = &pk;
        d.M = cn * khw, d.N = ld, d.K = s->c_out;
        const dinp_block blk = {d, dinp, g, r0 * in_e + (ci0 + c0) * plane, cn, rn, b16};
        dinp_split(&blk);
    }
}

/* The weight gradient's GEMM transposed, P_t^T = col dout^T (M = K rows, N = c_out_g
 * columns), where that wastes fewer of the micro-kernel's tile lanes: a small K (vgg's
 * first layer: K = 2 * 3 * 3 = 18) fills 18 of the AVX-512 tile's 32 columns, but 18 of
 * its 24 rows in two row panels (two thirds of the plain product's padded area). Large
 * shapes differ by a few per cent either way and stay plain: their transposed add would
 * read P_t^T across rows. Each element's chain is the same (over (n, p)
 * ascending from +0; fma's two factors swapped, an exact product either way), so the
 * choice changes no bit. */
static int dw_transpose(int64_t c_out_g, int64_t K) {
    int mr, nr;
    remat_gemm_current_tile(&mr, &nr);
    const int64_t plain = (c_out_g + mr - 1) / mr * mr * ((K + nr - 1) / nr * nr);
    const int64_t trans = (K + mr - 1) / mr * mr * ((c_out_g + nr - 1) / nr * nr);
    return 4 * trans <= 3 * plain; /* a quarter of the lanes saved: only a small K gets there */
}

REMAT_ACT_INLINE void conv2d_backward(void *dinp, float *dweight, float *dbias, const void *dout, const void *inp,
                                      const void *weight, float *ws, int64_t t_steps, int64_t N,
                                      const remat_conv_geom *g, const int b16) {
    const remat_conv_geom sg = conv_group(g);
    const int64_t K = conv_k(g), P = conv_p(g), spb = dcol_samples(&sg), G = remat_conv_groups(g);
    const int64_t in_e = g->c_in * g->h_in * g->w_in, out_e = g->c_out * P;
    float *dcol = ws, *pw = ws + dcol_channels(&sg) * g->kh * g->kw * spb * P, *pb = pw + g->c_out * K;
    const int dw_transposed = dw_transpose(sg.c_out, K);
    for (int64_t t = t_steps - 1; t >= 0; t--) {
        int sparse = 0; /* a group's P_t came from the sparse path (added per group) */
        for (int64_t gi = 0; dweight && N > 0 && gi < G; gi++) {
            float *dw_g = dweight + gi * sg.c_out * K, *pt = pw + gi * sg.c_out * K;
            if (!b16 && remat_ref_conv2d_dw_sparse(dw_g, pt, (const float *)dout + t * N * out_e + gi * sg.c_out * P,
                                                   (const float *)inp + t * N * in_e + gi * sg.c_in * g->h_in * g->w_in,
                                                   N, &sg, in_e, out_e)) {
                sparse = 1;
                continue;
            }
            const conv_pack pa = {act_cat(dout, t * N * out_e + gi * sg.c_out * P, b16), &sg, in_e, out_e},
                            pbk = {act_cat(inp, t * N * in_e + gi * sg.c_in * g->h_in * g->w_in, b16), &sg, in_e,
                                   out_e};
            remat_gemm_desc d;
            memset(&d, 0, sizeof d);
            if (dw_transposed) { /* P_t^T [K][c_out_g]: A = the column matrix, B = dout^T */
                d.C = pw + gi * sg.c_out * K, d.ldc = sg.c_out;
                d.pack_a = b16 ? pack_colt_b_bf16 : pack_colt_b_f32, d.pack_a_ctx = &pbk;
                d.pack_b = b16 ? pack_dout_a_bf16 : pack_dout_a_f32, d.pack_b_ctx = &pa;
                d.M = K, d.N = sg.c_out, d.K = N * P;
                remat_gemm_desc_run(&d);
                remat_ref_conv2d_dw_add_t(dw_g, pt, sg.c_out, K);
                continue;
            }
            d.C = pw + gi * sg.c_out * K, d.ldc = K;
            d.pack_a = b16 ? pack_dout_a_bf16 : pack_dout_a_f32, d.pack_a_ctx = &pa;
            d.pack_b = b16 ? pack_colt_b_bf16 : pack_colt_b_f32, d.pack_b_ctx = &pbk;
            d.M = sg.c_out, d.N = K, d.K = N * P;
            remat_gemm_desc_run(&d);
            if (G > 1) remat_ref_add_forward(dw_g, dw_g, pt, sg.c_out * K); /* threaded */
        }
        if (dbias) {
            for (int64_t c = 0; c < g->c_out; c++) pb[c] = 0.0f;
            for (int64_t n = 0; n < N; n++) {
                const void *dy = act_cat(dout, (t * N + n) * out_e, b16);
                for (int64_t c = 0; c < g->c_out; c++) {
                    float s = pb[c];
                    for (int64_t p = 0; p < P; p++) s = s + act_ld(dy, c * P + p, b16);
                    pb[c] = s;
                }
            }
        }
        if (dweight && N > 0 && G == 1 && !dw_transposed && !sparse)
            remat_ref_add_forward(dweight, dweight, pw, g->c_out * K); /* threaded */
        if (dbias)
            for (int64_t c = 0; c < g->c_out; c++) dbias[c] = dbias[c] + pb[c];
    }
    if (dinp)
        for (int64_t r0 = 0; r0 < t_steps * N; r0 += spb)
            for (int64_t gi = 0; gi < G; gi++)
                conv2d_dinp(dinp, dout, weight, dcol, r0, t_steps * N - r0 < spb ? t_steps * N - r0 : spb, g, &sg, gi,
                            b16);
}

void remat_ref_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias, float *ws,
                              int64_t rows, const remat_conv_geom *g) {
    conv2d_forward(out, inp, weight, bias, ws, rows, g, 0);
}

void remat_ref_conv2d_forward_bf16(uint16_t *out, const uint16_t *inp, const uint16_t *weight, const uint16_t *bias,
                                   float *ws, int64_t rows, const remat_conv_geom *g) {
    conv2d_forward(out, inp, weight, bias, ws, rows, g, 1);
}

void remat_ref_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, float *ws, int64_t t_steps, int64_t N, const remat_conv_geom *g) {
    conv2d_backward(dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g, 0);
}

void remat_ref_conv2d_backward_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                    const uint16_t *inp, const uint16_t *weight, float *ws, int64_t t_steps, int64_t N,
                                    const remat_conv_geom *g) {
    conv2d_backward(dinp, dweight, dbias, dout, inp, weight, ws, t_steps, N, g, 1);
}
