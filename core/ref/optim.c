/* optim.c - the reference optimisers: SGD with momentum and Adam (PyTorch semantics). */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

void remat_ref_sgd_update(float *param, float *buf, const float *grad, float lr, float momentum, int first_step,
                          int64_t n) {
    float *restrict p = param;
    const float *restrict g = grad;
    if (!buf) {
        for (int64_t i = 0; i < n; i++) p[i] = p[i] - lr * g[i];
        return;
    }
    float *restrict b = buf;
    if (first_step)
        for (int64_t i = 0; i < n; i++) b[i] = g[i];
    else
        for (int64_t i = 0; i < n; i++) b[i] = momentum * b[i] + g[i];
    for (int64_t i = 0; i < n; i++) p[i] = p[i] - lr * b[i];
}

void remat_ref_adam_update(float *param, float *m, float *v, const float *grad, float lr, float beta1, float beta2,
                           float eps, int step, int64_t n) {
    /* PyTorch's single-tensor Adam: the bias corrections in double, the rest in float. */
    const double bc1 = 1.0 - pow((double)beta1, (double)step), bc2 = 1.0 - pow((double)beta2, (double)step);
    const float step_size = (float)((double)lr / bc1), bc2_sqrt = (float)sqrt(bc2);
    const float om1 = 1.0f - beta1, om2 = 1.0f - beta2;
    float *restrict p = param, *restrict mm = m, *restrict vv = v;
    const float *restrict g = grad;
    for (int64_t i = 0; i < n; i++) {
        mm[i] = mm[i] * beta1 + om1 * g[i];
        vv[i] = vv[i] * beta2 + om2 * (g[i] * g[i]);
        const float denom = sqrtf(vv[i]) / bc2_sqrt + eps;
        p[i] = p[i] - step_size * (mm[i] / denom);
    }
}
