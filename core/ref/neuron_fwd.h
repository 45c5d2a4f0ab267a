/* neuron_fwd.h - the one multi-step forward of the reference's spiking neurons: IF and LIF
 * (remat_ref_neuron_forward, core/ref/neuron.c) and PLIF (remat_ref_plif_forward,
 * core/ref/plif.c) differ only in the charge; the fire, the reset, the cache blocking,
 * the SIMD paths (elem_kernel.h) and the split over threads are one body in neuron.c.
 *
 * Per element, for t ascending, from v[i]:
 *   h = charge(v, x[t])             REMAT_CHARGE_IF: v + x; REMAT_CHARGE_LIF: lif's two
 *                                   forms by dec (division by tau); REMAT_CHARGE_PLIF:
 *                                   remat_plif_charge (neuron_math.h) with k, dec, vr0
 *   s = (h >= vth), spikes[t] = s
 *   kept[t] = h (IF, LIF) or v (PLIF: the state the step starts from); kept may be NULL
 *   v = soft ? h - s vth : h (1 - s) + vr s
 * Elements are independent: every thread count and SIMD path gives the same bits.
 * b16: spikes and x are bf16 (uint16_t); kept and v are float in both.
 */
#ifndef REMAT_REF_NEURON_FWD_H
#define REMAT_REF_NEURON_FWD_H

#include <stdint.h>

typedef enum remat_charge { REMAT_CHARGE_IF, REMAT_CHARGE_LIF, REMAT_CHARGE_PLIF } remat_charge;

typedef struct remat_neuron_fwd_args {
    void *spikes;
    float *kept, *v;
    const void *x;
    remat_charge charge;
    int dec, vr0, soft, b16;
    float vth, vr, tau, k;
    int64_t t_steps, nf;
} remat_neuron_fwd_args;

void remat_ref_neuron_fwd_run(const remat_neuron_fwd_args *a);

#endif
