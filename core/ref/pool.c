/* pool.c - the reference max and average pooling, per time step, sample and channel,
 * as PyTorch MaxPool2d / AvgPool2d (ceil_mode false; average pooling counts padded
 * zeros, count_include_pad = True). cuda/pool.cu mirrors these loops.
 *
 * Fixed choices: a window is scanned in row-major order; max pooling keeps the first
 * maximum (a strict >, so among equal spikes the first wins) and backward sends the
 * gradient there; the average is the in-bounds sum from +0 divided by kh*kw, and its
 * backward adds dout / (kh*kw) to each in-bounds position. Output elements are
 * visited in (channel, oy, ox) order, so overlapping windows add in a fixed order.
 * bf16 storage (act.h): the same forward loops. Backward gathers instead: one input
 * element at a time, its windows in (oy, ox) ascending order - the order in which the
 * float kernel's loop over output elements adds into it - summed in float from its
 * widened value and stored rounded once (cuda/pool.cu's loop).
 * Threads: the planes (sample, channel) are split over --threads (parallel.h); a plane
 * is one thread's, so the bits do not depend on the thread count.
 */
#include <math.h>
#include <string.h>

#include "core/ref/act.h"
#include "core/ref/elem_kernel.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"

/* Index (within the plane) of the first maximum of the window at (oy, ox). */
REMAT_ACT_INLINE int64_t window_argmax(const void *plane, const remat_conv_geom *g, int64_t oy, int64_t ox,
                                       const int b16) {
    float best = -INFINITY;
    int64_t arg = -1;
    for (int64_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = oy * g->sh - g->ph + ky;
        if (iy < 0 || iy >= g->h_in) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t ix = ox * g->sw - g->pw + kx;
            if (ix < 0 || ix >= g->w_in) continue;
            const float v = act_ld(plane, iy * g->w_in + ix, b16);
            if (arg < 0 || v > best) best = v, arg = iy * g->w_in + ix;
        }
    }
    return arg;
}

/* The interior: output columns [*a, *b) whose windows lie inside the input's columns,
 * and, per output row, the kernel rows [*ky0, *ky1) inside the input's rows. There the
 * kernels run a window's positions (ky, kx) in the same row-major order with the
 * bounds checks left out, POOL_ROW output columns side by side (one float lane each,
 * vectorised), so every output keeps its own sequence of operations. */
#define POOL_ROW 128

static void pool_inner_cols(const remat_conv_geom *g, int64_t *a, int64_t *b) {
    int64_t lo = (g->pw + g->sw - 1) / g->sw;
    int64_t hi = g->w_in - g->kw + g->pw >= 0 ? (g->w_in - g->kw + g->pw) / g->sw + 1 : 0;
    if (hi > g->w_out) hi = g->w_out;
    if (lo > hi) lo = hi;
    *a = lo, *b = hi;
}

static void pool_inner_rows(const remat_conv_geom *g, int64_t oy, int64_t *ky0, int64_t *ky1) {
    const int64_t y0 = oy * g->sh - g->ph;
    *ky0 = y0 < 0 ? -y0 : 0;
    *ky1 = g->h_in - y0 < g->kh ? g->h_in - y0 : g->kh;
}

/* Max pooling over the chunk of m <= POOL_ROW interior columns from o0 of row oy: the
 * first maximum's value in acc (and, with idx, its position in the plane). */
REMAT_ACT_INLINE void max_row(float *restrict acc, int64_t *restrict idx, const void *plane, const remat_conv_geom *g,
                              int64_t oy, int64_t o0, int64_t m, int64_t ky0, int64_t ky1, const int64_t sw,
                              const int b16) {
    int first = 1;
    for (int64_t ky = ky0; ky < ky1; ky++)
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t at = (oy * g->sh - g->ph + ky) * g->w_in + o0 * sw - g->pw + kx;
            const void *src = act_cat(plane, at, b16);
            if (first) {
                for (int64_t i = 0; i < m; i++) acc[i] = act_ld(src, i * sw, b16);
                if (idx)
                    for (int64_t i = 0; i < m; i++) idx[i] = at + i * sw;
            } else if (idx) {
                for (int64_t i = 0; i < m; i++) {
                    const float v = act_ld(src, i * sw, b16);
                    const int gt = v > acc[i];
                    acc[i] = gt ? v : acc[i];
                    idx[i] = gt ? at + i * sw : idx[i];
                }
            } else {
                for (int64_t i = 0; i < m; i++) {
                    const float v = act_ld(src, i * sw, b16);
                    acc[i] = v > acc[i] ? v : acc[i];
                }
            }
            first = 0;
        }
}

REMAT_ACT_INLINE void maxpool2d_forward(void *out, const void *inp, int64_t q0, int64_t q1, const remat_conv_geom *g,
                                        const int64_t sw, const int b16) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    int64_t a, b;
    pool_inner_cols(g, &a, &b);
    for (int64_t q = q0; q < q1; q++) {
        const void *plane = act_cat(inp, q * in_plane, b16);
        void *o = act_at(out, q * out_plane, b16);
        for (int64_t oy = 0; oy < g->h_out; oy++) {
            int64_t ky0, ky1;
            pool_inner_rows(g, oy, &ky0, &ky1);
            const int64_t ia = ky0 < ky1 ? a : g->w_out, ib = ky0 < ky1 ? b : g->w_out;
            for (int64_t ox = 0; ox < g->w_out; ox++) {
                if (ox == ia && ia < ib) {
                    for (int64_t o0 = ia; o0 < ib; o0 += POOL_ROW) {
                        const int64_t m = ib - o0 < POOL_ROW ? ib - o0 : POOL_ROW;
                        float acc[POOL_ROW];
                        max_row(acc, NULL, plane, g, oy, o0, m, ky0, ky1, sw, b16);
                        for (int64_t i = 0; i < m; i++) act_st(o, oy * g->w_out + o0 + i, acc[i], b16);
                    }
                    ox = ib - 1;
                    continue;
                }
                act_st(o, oy * g->w_out + ox, act_ld(plane, window_argmax(plane, g, oy, ox, b16), b16), b16);
            }
        }
    }
}

REMAT_ACT_INLINE void maxpool2d_backward(float *dinp, const float *dout, const float *inp, int64_t q0, int64_t q1,
                                         const remat_conv_geom *g, const int64_t sw) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    int64_t a, b;
    pool_inner_cols(g, &a, &b);
    for (int64_t q = q0; q < q1; q++) {
        const float *plane = inp + q * in_plane, *dy = dout + q * out_plane;
        float *dx = dinp + q * in_plane;
        for (int64_t oy = 0; oy < g->h_out; oy++) {
            int64_t ky0, ky1;
            pool_inner_rows(g, oy, &ky0, &ky1);
            const int64_t ia = ky0 < ky1 ? a : g->w_out, ib = ky0 < ky1 ? b : g->w_out;
            for (int64_t ox = 0; ox < g->w_out; ox++) {
                if (ox == ia && ia < ib) {
                    for (int64_t o0 = ia; o0 < ib; o0 += POOL_ROW) {
                        const int64_t m = ib - o0 < POOL_ROW ? ib - o0 : POOL_ROW;
                        float acc[POOL_ROW];
                        int64_t idx[POOL_ROW];
                        max_row(acc, idx, plane, g, oy, o0, m, ky0, ky1, sw, 0);
                        for (int64_t i = 0; i < m; i++) dx[idx[i]] = dx[idx[i]] + dy[oy * g->w_out + o0 + i];
                    }
                    ox = ib - 1;
                    continue;
                }
                const int64_t at = window_argmax(plane, g, oy, ox, 0);
                dx[at] = dx[at] + dy[oy * g->w_out + ox];
            }
        }
    }
}

/* The average window at (oy, ox) with every bounds check (the edges). */
REMAT_ACT_INLINE float avg_window(const void *plane, const remat_conv_geom *g, int64_t oy, int64_t ox, const int b16) {
    float s = 0.0f;
    for (int64_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = oy * g->sh - g->ph + ky;
        if (iy < 0 || iy >= g->h_in) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t ix = ox * g->sw - g->pw + kx;
            if (ix >= 0 && ix < g->w_in) s = s + act_ld(plane, iy * g->w_in + ix, b16);
        }
    }
    return s;
}

REMAT_ACT_INLINE void avgpool2d_forward(void *out, const void *inp, int64_t q0, int64_t q1, const remat_conv_geom *g,
                                        const int64_t sw, const int b16) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    const float div = (float)(g->kh * g->kw);
    int64_t a, b;
    pool_inner_cols(g, &a, &b);
    for (int64_t q = q0; q < q1; q++) {
        const void *plane = act_cat(inp, q * in_plane, b16);
        void *o = act_at(out, q * out_plane, b16);
        for (int64_t oy = 0; oy < g->h_out; oy++) {
            int64_t ky0, ky1;
            pool_inner_rows(g, oy, &ky0, &ky1);
            for (int64_t ox = 0; ox < g->w_out; ox++) {
                if (ox == a && a < b) {
                    for (int64_t o0 = a; o0 < b; o0 += POOL_ROW) {
                        const int64_t m = b - o0 < POOL_ROW ? b - o0 : POOL_ROW;
                        float acc[POOL_ROW];
                        for (int64_t i = 0; i < m; i++) acc[i] = 0.0f;
                        for (int64_t ky = ky0; ky < ky1; ky++)
                            for (int64_t kx = 0; kx < g->kw; kx++) {
                                const void *src =
                                    act_cat(plane, (oy * g->sh - g->ph + ky) * g->w_in + o0 * sw - g->pw + kx, b16);
                                for (int64_t i = 0; i < m; i++) acc[i] = acc[i] + act_ld(src, i * sw, b16);
                            }
                        for (int64_t i = 0; i < m; i++) act_st(o, oy * g->w_out + o0 + i, acc[i] / div, b16);
                    }
                    ox = b - 1;
                    continue;
                }
                act_st(o, oy * g->w_out + ox, avg_window(plane, g, oy, ox, b16) / div, b16);
            }
        }
    }
}

REMAT_ACT_INLINE void avgpool2d_backward(float *dinp, const float *dout, int64_t q0, int64_t q1,
                                         const remat_conv_geom *g, const int64_t sw) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    const float div = (float)(g->kh * g->kw);
    /* Windows that do not overlap (kernel <= stride) add into distinct positions, so the
     * interior may run (ky, kx) outside the columns; overlapping ones keep the order. */
    const int disjoint = g->kw <= g->sw && g->kh <= g->sh;
    int64_t a, b;
    pool_inner_cols(g, &a, &b);
    if (!disjoint) a = b = g->w_out;
    for (int64_t q = q0; q < q1; q++) {
        const float *dy = dout + q * out_plane;
        float *dx = dinp + q * in_plane;
        for (int64_t oy = 0; oy < g->h_out; oy++) {
            int64_t ky0, ky1;
            pool_inner_rows(g, oy, &ky0, &ky1);
            for (int64_t ox = 0; ox < g->w_out; ox++) {
                if (ox == a && a < b) {
                    for (int64_t o0 = a; o0 < b; o0 += POOL_ROW) {
                        const int64_t m = b - o0 < POOL_ROW ? b - o0 : POOL_ROW;
                        float d[POOL_ROW];
                        for (int64_t i = 0; i < m; i++) d[i] = dy[oy * g->w_out + o0 + i] / div;
                        for (int64_t ky = ky0; ky < ky1; ky++) {
                            float *dst = dx + (oy * g->sh - g->ph + ky) * g->w_in + o0 * sw - g->pw;
                            if (g->kw == sw) /* the windows tile the row: one contiguous run */
                                for (int64_t j = 0; j < m * sw; j++) dst[j] = dst[j] + d[j / sw];
                            else
                                for (int64_t kx = 0; kx < g->kw; kx++)
                                    for (int64_t i = 0; i < m; i++) dst[i * sw + kx] = dst[i * sw + kx] + d[i];
                        }
                    }
                    ox = b - 1;
                    continue;
                }
                const float d = dy[oy * g->w_out + ox] / div;
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    const int64_t iy = oy * g->sh - g->ph + ky;
                    if (iy < 0 || iy >= g->h_in) continue;
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        const int64_t ix = ox * g->sw - g->pw + kx;
                        if (ix >= 0 && ix < g->w_in) dx[iy * g->w_in + ix] = dx[iy * g->w_in + ix] + d;
                    }
                }
            }
        }
    }
}

/* The bf16 backward of both poolings (inp == NULL: average), gathered per input element
 * in the float kernels' order of additions. */
REMAT_ACT_INLINE void pool2d_backward_bf16(uint16_t *dinp, const uint16_t *dout, const uint16_t *inp, int64_t q0,
                                           int64_t q1, const remat_conv_geom *g) {
    const int64_t ip = g->h_in * g->w_in, op = g->h_out * g->w_out;
    const float div = (float)(g->kh * g->kw);
    for (int64_t q = q0; q < q1; q++) {
        const uint16_t *dy = dout + q * op, *plane = inp ? inp + q * ip : NULL;
        for (int64_t pos = 0; pos < ip; pos++) {
            const int64_t iy = pos / g->w_in, ix = pos % g->w_in;
            /* windows containing (iy, ix): oy*sh - ph <= iy <= oy*sh - ph + kh - 1 */
            int64_t oy0 = iy + g->ph - g->kh + 1, ox0 = ix + g->pw - g->kw + 1;
            oy0 = oy0 <= 0 ? 0 : (oy0 + g->sh - 1) / g->sh;
            ox0 = ox0 <= 0 ? 0 : (ox0 + g->sw - 1) / g->sw;
            float v = remat_bf16_to_f32(dinp[q * ip + pos]);
            for (int64_t oy = oy0; oy < g->h_out && oy * g->sh - g->ph <= iy; oy++)
                for (int64_t ox = ox0; ox < g->w_out && ox * g->sw - g->pw <= ix; ox++) {
                    const float d = remat_bf16_to_f32(dy[oy * g->w_out + ox]);
                    if (!plane) v = v + d / div;
                    else if (window_argmax(plane, g, oy, ox, 1) == pos) v = v + d;
                }
            dinp[q * ip + pos] = remat_f32_to_bf16(v);
        }
    }
}

/* ---- threads: planes (sample, channel) are independent ------------------------- */

typedef enum { POOL_MAX_FWD, POOL_MAX_FWD16, POOL_MAX_BWD, POOL_AVG_FWD, POOL_AVG_FWD16, POOL_AVG_BWD, POOL_BWD16 } pool_kind;

typedef struct pool_ctx {
    pool_kind kind;
    void *y;          /* forward: out; backward: dinp */
    const void *x;    /* forward: inp; backward: dout */
    const void *inp;  /* max pooling's backward: the saved input (NULL: average) */
    const remat_conv_geom *g;
} pool_ctx;

/* sw == 2 (every shipped pooling) as a constant: GCC then loads the interior's stride-2
 * columns as whole vectors and splits them, instead of element by element. */
#define POOL_SW(call)                        \
    do {                                     \
        if (c->g->sw == 2) {                 \
            const int64_t sw = 2;            \
            call;                            \
        } else {                             \
            const int64_t sw = c->g->sw;     \
            call;                            \
        }                                    \
    } while (0)

REMAT_ACT_INLINE void pool_body(const pool_ctx *c, int64_t q0, int64_t q1) {
    switch (c->kind) {
    case POOL_MAX_FWD: POOL_SW(maxpool2d_forward(c->y, c->x, q0, q1, c->g, sw, 0)); break;
    case POOL_MAX_FWD16: POOL_SW(maxpool2d_forward(c->y, c->x, q0, q1, c->g, sw, 1)); break;
    case POOL_MAX_BWD: POOL_SW(maxpool2d_backward(c->y, c->x, c->inp, q0, q1, c->g, sw)); break;
    case POOL_AVG_FWD: POOL_SW(avgpool2d_forward(c->y, c->x, q0, q1, c->g, sw, 0)); break;
    case POOL_AVG_FWD16: POOL_SW(avgpool2d_forward(c->y, c->x, q0, q1, c->g, sw, 1)); break;
    case POOL_AVG_BWD: POOL_SW(avgpool2d_backward(c->y, c->x, q0, q1, c->g, sw)); break;
    case POOL_BWD16: pool2d_backward_bf16(c->y, c->x, c->inp, q0, q1, c->g); break;
    }
}
#undef POOL_SW

/* Per-path copies (elem_kernel.h): the interior loops vectorised at each path's width,
 * the same IEEE operations per output. */
REMAT_ELEM_CLONES(pool_part, (void *ctx, int64_t q0, int64_t q1), (ctx, q0, q1),
                  pool_body((const pool_ctx *)ctx, q0, q1))

/* Below this many window reads a part stays on the calling thread. */
#define POOL_MIN_PER_THREAD ((int64_t)1 << 15)

/* rows * c_in planes over remat_ref_get_threads() threads (parallel.h): each plane is
 * computed by one thread in the order above, so every thread count gives the same bits. */
static void pool_run(pool_kind kind, void *y, const void *x, const void *inp, int64_t rows, const remat_conv_geom *g) {
    const pool_ctx c = {kind, y, x, inp, g};
    const int64_t per_plane = g->h_out * g->w_out * g->kh * g->kw + g->h_in * g->w_in;
    const int64_t min_planes = per_plane > 0 ? (POOL_MIN_PER_THREAD + per_plane - 1) / per_plane : 1;
    remat_ref_parallel_for(rows * g->c_in, 1, min_planes, pool_part, (void *)&c);
}

void remat_ref_maxpool2d_forward(float *out, const float *inp, int64_t rows, const remat_conv_geom *g) {
    pool_run(POOL_MAX_FWD, out, inp, NULL, rows, g);
}
void remat_ref_maxpool2d_forward_bf16(uint16_t *out, const uint16_t *inp, int64_t rows, const remat_conv_geom *g) {
    pool_run(POOL_MAX_FWD16, out, inp, NULL, rows, g);
}
void remat_ref_maxpool2d_backward(float *dinp, const float *dout, const float *inp, int64_t rows,
                                  const remat_conv_geom *g) {
    pool_run(POOL_MAX_BWD, dinp, dout, inp, rows, g);
}
void remat_ref_maxpool2d_backward_bf16(uint16_t *dinp, const uint16_t *dout, const uint16_t *inp, int64_t rows,
                                       const remat_conv_geom *g) {
    pool_run(POOL_BWD16, dinp, dout, inp, rows, g);
}
void remat_ref_avgpool2d_forward(float *out, const float *inp, int64_t rows, const remat_conv_geom *g) {
    pool_run(POOL_AVG_FWD, out, inp, NULL, rows, g);
}
void remat_ref_avgpool2d_forward_bf16(uint16_t *out, const uint16_t *inp, int64_t rows, const remat_conv_geom *g) {
    pool_run(POOL_AVG_FWD16, out, inp, NULL, rows, g);
}
void remat_ref_avgpool2d_backward(float *dinp, const float *dout, int64_t rows, const remat_conv_geom *g) {
    pool_run(POOL_AVG_BWD, dinp, dout, NULL, rows, g);
}
void remat_ref_avgpool2d_backward_bf16(uint16_t *dinp, const uint16_t *dout, int64_t rows, const remat_conv_geom *g) {
    pool_run(POOL_BWD16, dinp, dout, NULL, rows, g);
}
