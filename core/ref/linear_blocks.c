/* linear_blocks.c - the linear layer's backward on a batch cut into blocks of samples
 * (ref_kernels.h: remat_ref_linear_backward_blocks; docs/determinism.md, "Data
 * parallelism").
 *
 * The result is defined as the one-block kernel (linear.c) called once per (time step
 * t descending, block b), each block's weight and bias partials into its own
 * accumulator: block b's weight gradient is ((acc + P_{T-1,b}) + P_{T-2,b}) + ..., with
 * P_{t,b} = dout_{t,b}^T inp_{t,b} one GEMM chain over the block's samples from +0.
 * Called that way the kernel is slow (each call multiplies a few rows: the input
 * gradient's GEMM repacks the whole weight per call, every P_{t,b} is written to memory
 * and read back to be added). This file gives the same bits cheaper:
 *  - the input gradient is per row (one chain over out_f per element), so one GEMM over
 *    all rows gives the rows the per-block calls give;
 *  - the weight gradient is made per band of output rows (a few dozen rows of W, so
 *    that the band of P and of the accumulator stay in cache): for each block, for t
 *    descending, the band of P_{t,b} (the same GEMM chains: a GEMM's element does not
 *    depend on which rows the call computes) and at once its addition into the band of
 *    the block's accumulator; the bias the same way over the band's outputs;
 *  - the bands are independent outputs, dealt over the reference backend's threads
 *    (parallel.h): which thread makes a band changes no bit.
 * Each band's P sits in the caller's scratch at the band's own rows, so the scratch is
 * the one-block kernel's (remat_ref_linear_scratch_elems) and the threads never share a
 * float of it.
 */
#include <string.h>

#include "core/ref/act.h"
#include "core/ref/gemm_kernel.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"

/* About this many floats of P per band, and as many of the accumulator: 1 MiB together,
 * in L2 (mlp-lif's 8-block step: about half the extra CPU time of 128 KiB bands). */
#define BAND_FLOATS ((int64_t)128 << 10)
/* Bands are whole tiles of the widest micro-kernel's rows (12: AVX-512; 6 divides it). */
#define BAND_ALIGN 12

typedef struct wgrad_job {
    float *dweight, *dbias, *scratch;
    const void *dout, *inp;
    int64_t t_steps, N, nblk, in, out_f, band;
    int b16;
} wgrad_job;

REMAT_ACT_INLINE void wgrad_rows(const wgrad_job *jb, int64_t lo, int64_t hi, const int b16) {
    const int64_t in = jb->in, out_f = jb->out_f, bs = jb->N / jb->nblk;
    /* The part in bands of (nearly) equal height, none above jb->band rows. */
    const int64_t bands = (hi - lo + jb->band - 1) / jb->band;
    const int64_t step = ((hi - lo + bands - 1) / bands + BAND_ALIGN - 1) / BAND_ALIGN * BAND_ALIGN;
    for (int64_t r0 = lo; r0 < hi; r0 += step) {
        const int64_t h = hi - r0 < step ? hi - r0 : step;
        float *restrict pw = jb->scratch + r0 * in;
        float *restrict pb = jb->scratch + out_f * in + r0;
        for (int64_t b = 0; b < jb->nblk; b++) {
            float *restrict dw = jb->dweight ? jb->dweight + b * out_f * in + r0 * in : NULL;
            float *restrict db = jb->dbias ? jb->dbias + b * out_f + r0 : NULL;
            for (int64_t t = jb->t_steps - 1; t >= 0; t--) {
                const int64_t row0 = t * jb->N + b * bs; /* the block's first row of step t */
                const void *dt = act_cat(jb->dout, row0 * out_f, b16);
                if (dw) {
                    /* rows r0 .. r0+h-1 of P_{t,b} = dout_{t,b}^T inp_{t,b}, as remat_gemm_typed's TN. */
                    remat_gemm_desc d;
                    memset(&d, 0, sizeof d);
                    d.C = pw, d.ldc = in;
                    d.A = act_cat(dt, r0, b16), d.a16 = b16, d.a_rs = 1, d.a_cs = out_f;
                    d.B = act_cat(jb->inp, row0 * in, b16), d.b16 = b16, d.b_rs = in, d.b_cs = 1;
                    d.M = h, d.N = in, d.K = bs;
                    remat_gemm_desc_run(&d);
                    for (int64_t e = 0; e < h * in; e++) dw[e] = dw[e] + pw[e];
                }
                if (db) {
                    for (int64_t o = 0; o < h; o++) pb[o] = 0.0f;
                    for (int64_t n = 0; n < bs; n++)
                        for (int64_t o = 0; o < h; o++) pb[o] = pb[o] + act_ld(dt, n * out_f + r0 + o, b16);
                    for (int64_t o = 0; o < h; o++) db[o] = db[o] + pb[o];
                }
            }
        }
    }
}

static void wgrad_part(void *ctx, int64_t lo, int64_t hi) {
    const wgrad_job *jb = ctx;
    if (jb->b16) wgrad_rows(jb, lo, hi, 1);
    else wgrad_rows(jb, lo, hi, 0);
}

REMAT_ACT_INLINE void linear_backward_blocks(void *dinp, float *dweight, float *dbias, const void *dout,
                                             const void *inp, const void *weight, float *scratch, int64_t t_steps,
                                             int64_t N, int64_t nblk, int64_t in, int64_t out_f, const int b16) {
    if (dinp) remat_gemm_typed(REMAT_GEMM_NN, dinp, b16, dout, b16, weight, b16, t_steps * N, in, out_f, 1);
    if ((!dweight && !dbias) || nblk < 1 || t_steps < 1 || out_f < 1) return;
    int64_t band = BAND_FLOATS / (in > 0 ? in : 1);
    band = band < BAND_ALIGN ? BAND_ALIGN : band / BAND_ALIGN * BAND_ALIGN;
    wgrad_job jb = {dweight, dbias, scratch, dout, inp, t_steps, N, nblk, in, out_f, band, b16};
    /* Parts of whole tiles, one per thread; each part in bands. */
    remat_ref_parallel_for(out_f, BAND_ALIGN, BAND_ALIGN, wgrad_part, &jb);
}

void remat_ref_linear_backward_blocks(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                      const float *weight, float *scratch, int64_t t_steps, int64_t N, int64_t nblk,
                                      int64_t in, int64_t out_f) {
    linear_backward_blocks(dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, nblk, in, out_f, 0);
}

void remat_ref_linear_backward_blocks_bf16(uint16_t *dinp, float *dweight, float *dbias, const uint16_t *dout,
                                           const uint16_t *inp, const uint16_t *weight, float *scratch,
                                           int64_t t_steps, int64_t N, int64_t nblk, int64_t in, int64_t out_f) {
    linear_backward_blocks(dinp, dweight, dbias, dout, inp, weight, scratch, t_steps, N, nblk, in, out_f, 1);
}
