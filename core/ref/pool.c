/* pool.c - the reference max and average pooling, per time step, sample and channel,
 * as PyTorch MaxPool2d / AvgPool2d (ceil_mode false; average pooling counts padded
 * zeros, count_include_pad = True). cuda/pool.cu mirrors these loops.
 *
 * Fixed choices: a window is scanned in row-major order; max pooling keeps the first
 * maximum (a strict >, so among equal spikes the first wins) and backward sends the
 * gradient there; the average is the in-bounds sum from +0 divided by kh*kw, and its
 * backward adds dout / (kh*kw) to each in-bounds position. Output elements are
 * visited in (channel, oy, ox) order, so overlapping windows add in a fixed order.
 */
#include <math.h>

#include "core/ref/ref_kernels.h"

/* Index (within the plane) of the first maximum of the window at (oy, ox). */
static int64_t window_argmax(const float *plane, const remat_conv_geom *g, int64_t oy, int64_t ox) {
    float best = -INFINITY;
    int64_t arg = -1;
    for (int64_t ky = 0; ky < g->kh; ky++) {
        const int64_t iy = oy * g->sh - g->ph + ky;
        if (iy < 0 || iy >= g->h_in) continue;
        for (int64_t kx = 0; kx < g->kw; kx++) {
            const int64_t ix = ox * g->sw - g->pw + kx;
            if (ix < 0 || ix >= g->w_in) continue;
            const float v = plane[iy * g->w_in + ix];
            if (arg < 0 || v > best) best = v, arg = iy * g->w_in + ix;
        }
    }
    return arg;
}

void remat_ref_maxpool2d_forward(float *out, const float *inp, int64_t rows, const remat_conv_geom *g) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    for (int64_t q = 0; q < rows * g->c_in; q++) {
        const float *plane = inp + q * in_plane;
        float *o = out + q * out_plane;
        for (int64_t oy = 0; oy < g->h_out; oy++)
            for (int64_t ox = 0; ox < g->w_out; ox++) o[oy * g->w_out + ox] = plane[window_argmax(plane, g, oy, ox)];
    }
}

void remat_ref_maxpool2d_backward(float *dinp, const float *dout, const float *inp, int64_t rows,
                                  const remat_conv_geom *g) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    for (int64_t q = 0; q < rows * g->c_in; q++) {
        const float *plane = inp + q * in_plane, *dy = dout + q * out_plane;
        float *dx = dinp + q * in_plane;
        for (int64_t oy = 0; oy < g->h_out; oy++)
            for (int64_t ox = 0; ox < g->w_out; ox++) {
                const int64_t a = window_argmax(plane, g, oy, ox);
                dx[a] = dx[a] + dy[oy * g->w_out + ox];
            }
    }
}

void remat_ref_avgpool2d_forward(float *out, const float *inp, int64_t rows, const remat_conv_geom *g) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    const float div = (float)(g->kh * g->kw);
    for (int64_t q = 0; q < rows * g->c_in; q++) {
        const float *plane = inp + q * in_plane;
        float *o = out + q * out_plane;
        for (int64_t oy = 0; oy < g->h_out; oy++)
            for (int64_t ox = 0; ox < g->w_out; ox++) {
                float s = 0.0f;
                for (int64_t ky = 0; ky < g->kh; ky++) {
                    const int64_t iy = oy * g->sh - g->ph + ky;
                    if (iy < 0 || iy >= g->h_in) continue;
                    for (int64_t kx = 0; kx < g->kw; kx++) {
                        const int64_t ix = ox * g->sw - g->pw + kx;
                        if (ix >= 0 && ix < g->w_in) s = s + plane[iy * g->w_in + ix];
                    }
                }
                o[oy * g->w_out + ox] = s / div;
            }
    }
}

void remat_ref_avgpool2d_backward(float *dinp, const float *dout, int64_t rows, const remat_conv_geom *g) {
    const int64_t in_plane = g->h_in * g->w_in, out_plane = g->h_out * g->w_out;
    const float div = (float)(g->kh * g->kw);
    for (int64_t q = 0; q < rows * g->c_in; q++) {
        const float *dy = dout + q * out_plane;
        float *dx = dinp + q * in_plane;
        for (int64_t oy = 0; oy < g->h_out; oy++)
            for (int64_t ox = 0; ox < g->w_out; ox++) {
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
