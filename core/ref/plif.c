/* plif.c - the parametric LIF neuron (SpikingJelly's ParametricLIFNode), multi-step,
 * forward and backward; the CUDA twin is cuda/plif.cu.
 *
 * Contract (docs/determinism.md, "plif"). One learnable scalar w per layer, shared by
 * all its neurons; k = 1/tau = sigmoid(w) = 1 / (1 + e^-w), with neuron_math.h's e^x
 * (so host and device get the same k). Per element, for t ascending, from the state v
 * (v_reset, or 0 under soft reset, before the first step):
 *   charge     decay_input:      h = v + (x - (v - v_reset)) * k
 *              not decay_input:  h = v - (v - v_reset) * k + x
 *              (v_reset = 0 or soft reset: h = v + (x - v) * k and h = v * (1 - k) + x,
 *              SpikingJelly's own expressions for that case)
 *   fire       s = (h >= v_threshold)
 *   reset      hard: v = h (1 - s) + v_reset s; soft: v = h - s v_threshold
 * as the lif layer, with a product by k where lif divides by tau.
 *
 * remat_ref_plif_forward(spikes, vp, v, x, w, o, t_steps, nf): vp [t_steps, nf] receives
 * the state each step starts from (v before the charge; NULL: not saved), v [nf] is
 * carried in and out as the lif kernel's.
 *
 * remat_ref_plif_backward(dx, gv, rows, dw, ds, vp, x, w, o, t_steps, N, F, nblk):
 * nf = N * F elements, row n = sample n's F elements. The charge is recomputed from
 * the saved vp and x (the same expression, so the same h); gh = dL/dh is the lif
 * kernel's (surrogate, reset path unless detach_reset); dx += gh * k (decay_input) or
 * gh; gv = gh * (1 - k), carried to the previous step (and chunk) as lif's. The
 * gradient of w, summed in one fixed order that no plan, SIMD path or thread count
 * changes:
 *   c[t,n,f] = gh * dh/dk (float; dh/dk = x - (v - v_reset), or -(v - v_reset));
 *   rows[t,n] = sum over f ascending of c, in double from +0;
 *   for each block b of the nblk blocks of N/nblk consecutive samples, and for t
 *   descending: P = sum over the block's n ascending of rows[t,n] (double from +0),
 *   dw[b] = dw[b] + (float)(P * (double)(k * (1 - k))).
 * So a time chunk (called with its own t_steps, chunks last-first) continues the
 * full-T sum exactly, as weight gradients do (one partial per step, descending t);
 * nblk = 1 is the one-process gradient, nblk > 1 the per-block partials of a
 * data-parallel step that the executor combines over blocks. rows: t_steps * N
 * doubles of workspace.
 *
 * Threads split samples (rows), each computed exactly as on one thread. The _bf16
 * twins take bf16 activations (x, spikes, dx, ds); vp, v, gv, w and dw stay float.
 * Compiled with -ffp-contract=off.
 */
#include "core/ref/act.h"
#include "core/ref/neuron_fwd.h"
#include "core/ref/neuron_math.h"
#include "core/ref/parallel.h"
#include "core/ref/ref_kernels.h"

/* Elements per part at least (a part's work is t_steps times this). */
#define PLIF_MIN_PER_THREAD 16384

float remat_ref_plif_k(float w) { return 1.0f / (1.0f + remat_exp_poly(-w)); }

typedef struct plif_call {
    void *dx;
    float *gv, *dw;
    double *rows;
    const void *in, *x;
    const float *vps;
    int dec, vr0, soft, det, at, b16;
    float k, alpha, vth, vr;
    int64_t t_steps, nf, N, F, nblk;
} plif_call;

static plif_call plif_setup(const float *w, const remat_neuron_opts *o) {
    plif_call c = {0};
    c.k = remat_ref_plif_k(w[0]);
    c.soft = o->soft_reset != 0, c.det = o->detach_reset != 0, c.dec = o->decay_input != 0;
    c.at = o->surrogate == REMAT_SURROGATE_ATAN, c.alpha = o->alpha;
    c.vth = o->v_threshold, c.vr = c.soft ? 0.0f : o->v_reset;
    c.vr0 = c.vr == 0.0f;
    return c;
}

/* The forward is the neurons' one body (neuron_fwd.h) with plif's charge. */
static void plif_forward(void *spikes, float *vp, float *v, const void *x, const float *w, const remat_neuron_opts *o,
                         int64_t t_steps, int64_t nf, int b16) {
    const plif_call c = plif_setup(w, o);
    remat_neuron_fwd_args a = {0};
    a.spikes = spikes, a.kept = vp, a.v = v, a.x = x, a.b16 = b16;
    a.charge = REMAT_CHARGE_PLIF, a.dec = c.dec, a.vr0 = c.vr0, a.soft = c.soft;
    a.vth = c.vth, a.vr = c.vr, a.k = c.k, a.t_steps = t_steps, a.nf = nf;
    remat_ref_neuron_fwd_run(&a);
}

/* Samples [lo, hi): the recurrence over t descending, each row's sum per step. */
static void plif_bwd_part(void *ctx, int64_t lo, int64_t hi) {
    const plif_call *c = ctx;
    const int b16 = c->b16;
    const float k = c->k;
    for (int64_t n = lo; n < hi; n++) {
        for (int64_t t = c->t_steps - 1; t >= 0; t--) {
            double r = 0.0;
            for (int64_t f = 0; f < c->F; f++) {
                const int64_t i = n * c->F + f, o = t * c->nf + i;
                const float vv = c->vps[o], xx = act_ld(c->x, o, b16), gs = act_ld(c->in, o, b16), g = c->gv[i];
                const float hh = remat_plif_charge(vv, xx, k, c->dec, c->vr0, c->vr);
                const float u = hh - c->vth;
                const float s = u >= 0.0f ? 1.0f : 0.0f;
                const float sg = remat_surrogate_grad(u, c->at, c->alpha);
                const float gh = remat_neuron_grad_h(gs, g, hh, s, sg, c->vth, c->vr, c->soft, c->det);
                act_st(c->dx, o, act_ld(c->dx, o, b16) + (c->dec ? gh * k : gh), b16);
                c->gv[i] = gh * (1.0f - k);
                const float rel = c->vr0 ? vv : vv - c->vr; /* v - v_reset */
                const float dhdk = c->dec ? xx - rel : -rel;
                r += (double)(gh * dhdk);
            }
            c->rows[t * c->N + n] = r;
        }
    }
}

static void plif_backward(void *dx, float *gv, double *rows, float *dw, const void *ds, const float *vp, const void *x,
                          const float *w, const remat_neuron_opts *o, int64_t t_steps, int64_t N, int64_t F,
                          int64_t nblk, int b16) {
    plif_call c = plif_setup(w, o);
    c.dx = dx, c.gv = gv, c.rows = rows, c.in = ds, c.vps = vp, c.x = x, c.b16 = b16;
    c.t_steps = t_steps, c.nf = N * F, c.N = N, c.F = F;
    int64_t min_rows = F > 0 ? (PLIF_MIN_PER_THREAD + F - 1) / F : 1;
    remat_ref_parallel_for(N, 1, min_rows, plif_bwd_part, &c);
    const double kk = (double)(c.k * (1.0f - c.k));
    const int64_t bs = nblk > 0 ? N / nblk : N;
    for (int64_t b = 0; b < nblk; b++)
        for (int64_t t = t_steps - 1; t >= 0; t--) {
            double p = 0.0;
            for (int64_t n = b * bs; n < (b + 1) * bs; n++) p += rows[t * N + n];
            dw[b] = dw[b] + (float)(p * kk);
        }
}

void remat_ref_plif_forward(float *spikes, float *vp, float *v, const float *x, const float *w,
                            const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    plif_forward(spikes, vp, v, x, w, o, t_steps, nf, 0);
}

void remat_ref_plif_forward_bf16(uint16_t *spikes, float *vp, float *v, const uint16_t *x, const float *w,
                                 const remat_neuron_opts *o, int64_t t_steps, int64_t nf) {
    plif_forward(spikes, vp, v, x, w, o, t_steps, nf, 1);
}

void remat_ref_plif_backward(float *dx, float *gv, double *rows, float *dw, const float *dspikes, const float *vp,
                             const float *x, const float *w, const remat_neuron_opts *o, int64_t t_steps, int64_t N,
                             int64_t F, int64_t nblk) {
    plif_backward(dx, gv, rows, dw, dspikes, vp, x, w, o, t_steps, N, F, nblk, 0);
}

void remat_ref_plif_backward_bf16(uint16_t *dx, float *gv, double *rows, float *dw, const uint16_t *dspikes,
                                  const float *vp, const uint16_t *x, const float *w, const remat_neuron_opts *o,
                                  int64_t t_steps, int64_t N, int64_t F, int64_t nblk) {
    plif_backward(dx, gv, rows, dw, dspikes, vp, x, w, o, t_steps, N, F, nblk, 1);
}
