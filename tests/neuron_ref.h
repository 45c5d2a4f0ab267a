// neuron_ref.h - the spiking neuron step of the spec in double, shared by the kernel
// tests of if/lif (ref_kernels_test) and plif (plif_test): each gives its own charge
// h = charge(v, x); the threshold, the reset and the surrogate are the same.
#ifndef REMAT_TESTS_NEURON_REF_H
#define REMAT_TESTS_NEURON_REF_H

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ref/ref_kernels.h"

// The reset value v_r (0 under soft reset).
inline double NeuronVr(const remat_neuron_opts& o) { return o.soft_reset ? 0.0 : o.v_reset; }

// The surrogate's primitive at u = h - v_th (its derivative is the surrogate gradient).
inline double SurrogatePrimitive(const remat_neuron_opts& o, double u) {
    const double a = o.alpha;
    if (o.surrogate == REMAT_SURROGATE_ATAN) return std::atan(M_PI / 2 * a * u) / M_PI + 0.5;
    return 1.0 / (1.0 + std::exp(-a * u));
}

// T steps of nf neurons from v0 in double. base_u == nullptr: the spiking forward (u_out,
// when given, gets u_t; vp_out, when given, the states the steps start from); otherwise
// the surrogate-linearised forward around base_u. Returns L = sum ws * s + sum gfin * v_last.
// Example: NeuronLossD(o, [](double v, double x) { return v + x; }, x, v0, nullptr, &u,
//                      nullptr, ws, gfin, T, nf)  (an if neuron).
template <class Charge>
double NeuronLossD(const remat_neuron_opts& o, Charge charge, const std::vector<double>& x,
                   const std::vector<double>& v0, const std::vector<double>* base_u, std::vector<double>* u_out,
                   std::vector<double>* vp_out, const std::vector<float>& ws, const std::vector<float>& gfin,
                   int64_t T, int64_t nf) {
    std::vector<double> v = v0;
    double L = 0;
    const double vth = o.v_threshold, vr = NeuronVr(o);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < nf; i++) {
            if (vp_out) (*vp_out)[t * nf + i] = v[i];
            const double h = charge(v[i], x[t * nf + i]), u = h - vth;
            double s_out, s_reset;
            if (!base_u) {
                s_out = s_reset = u >= 0 ? 1.0 : 0.0;
                if (u_out) (*u_out)[t * nf + i] = u;
            } else {
                const double u0 = (*base_u)[t * nf + i], h0 = u0 >= 0 ? 1.0 : 0.0;
                s_out = h0 + SurrogatePrimitive(o, u) - SurrogatePrimitive(o, u0);
                s_reset = o.detach_reset ? h0 : s_out;
            }
            v[i] = o.soft_reset ? h - s_reset * vth : h * (1 - s_reset) + vr * s_reset;
            L += ws[t * nf + i] * s_out;
        }
    for (int64_t i = 0; i < nf; i++) L += gfin[i] * v[i];
    return L;
}

#endif
