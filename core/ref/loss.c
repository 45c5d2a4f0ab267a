/* loss.c - the reference rate losses (semantics.md).
 *
 * Fixed choices (cuda/loss.cu mirrors them): reductions in double, ascending order;
 * labels outside [0, K) contribute no one-hot term (the model loader rejects them
 * before this point).
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

static void rate_of(float *restrict rate, const float *restrict out, int64_t T, int64_t NK) {
    for (int64_t e = 0; e < NK; e++) rate[e] = 0.0f;
    for (int64_t t = 0; t < T; t++) {
        const float *restrict o = out + t * NK;
        for (int64_t e = 0; e < NK; e++) rate[e] = rate[e] + o[e];
    }
    const float tf = (float)T;
    for (int64_t e = 0; e < NK; e++) rate[e] = rate[e] / tf;
}

static int label_ok(int32_t label, int64_t K) { return label >= 0 && (int64_t)label < K; }

float remat_ref_loss_forward(float *rate, const float *out, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K) {
    rate_of(rate, out, T, N * K);
    if (N <= 0 || K <= 0) return 0.0f;
    double total = 0.0;
    for (int64_t n = 0; n < N; n++) {
        const float *r = rate + n * K;
        const int32_t y = labels[n];
        if (type == REMAT_LOSS_RATE_MSE) {
            for (int64_t k = 0; k < K; k++) {
                const double d = (double)r[k] - (k == (int64_t)y ? 1.0 : 0.0);
                total += d * d;
            }
        } else {
            double mx = -INFINITY, se = 0.0;
            for (int64_t k = 0; k < K; k++)
                if ((double)r[k] > mx) mx = (double)r[k];
            for (int64_t k = 0; k < K; k++) se += exp((double)r[k] - mx);
            total += mx + log(se) - (label_ok(y, K) ? (double)r[y] : 0.0);
        }
    }
    return (float)(type == REMAT_LOSS_RATE_MSE ? total / ((double)N * (double)K) : total / (double)N);
}

void remat_ref_loss_backward(float *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K) {
    if (N <= 0 || K <= 0 || T <= 0) return;
    for (int64_t n = 0; n < N; n++) {
        const float *r = rate + n * K;
        const int32_t y = labels[n];
        double mx = -INFINITY, se = 0.0;
        if (type == REMAT_LOSS_RATE_CE) {
            for (int64_t k = 0; k < K; k++)
                if ((double)r[k] > mx) mx = (double)r[k];
            for (int64_t k = 0; k < K; k++) se += exp((double)r[k] - mx);
        }
        for (int64_t k = 0; k < K; k++) {
            const double onehot = k == (int64_t)y ? 1.0 : 0.0;
            double g; /* dL/dr */
            if (type == REMAT_LOSS_RATE_MSE) g = 2.0 * ((double)r[k] - onehot) / ((double)N * (double)K);
            else g = (exp((double)r[k] - mx) / se - onehot) / (double)N;
            const float gt = (float)(g / (double)T);
            for (int64_t t = 0; t < T; t++) dout[(t * N + n) * K + k] += gt;
        }
    }
}
