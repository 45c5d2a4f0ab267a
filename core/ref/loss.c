/* loss.c - the reference rate losses (docs/determinism.md).
 *
 * Fixed choices (cuda/loss.cu mirrors them): reductions in double, ascending order;
 * labels outside [0, K) contribute no one-hot term (the model loader rejects them
 * before this point). bf16 storage (act.h): out and dout stored bf16, rate float.
 */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/ref/act.h"

REMAT_ACT_INLINE void rate_of(float *restrict rate, const void *out, int64_t T, int64_t NK, const int b16) {
    for (int64_t e = 0; e < NK; e++) rate[e] = 0.0f;
    for (int64_t t = 0; t < T; t++) {
        const void *o = act_cat(out, t * NK, b16);
        for (int64_t e = 0; e < NK; e++) rate[e] = rate[e] + act_ld(o, e, b16);
    }
    const float tf = (float)T;
    for (int64_t e = 0; e < NK; e++) rate[e] = rate[e] / tf;
}

static int label_ok(int32_t label, int64_t K) { return label >= 0 && (int64_t)label < K; }

/* The loss terms of samples n0 .. n1-1 summed in double from 0, ascending (rate_mse:
 * every class's squared difference in turn; rate_ce: one cross entropy per sample). */
static double loss_sum(const float *rate, const int32_t *labels, remat_loss_type type, int64_t n0, int64_t n1,
                       int64_t K) {
    double total = 0.0;
    for (int64_t n = n0; n < n1; n++) {
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
    return total;
}

float remat_ref_loss_value(double total, remat_loss_type type, int64_t N, int64_t K) {
    if (N <= 0 || K <= 0) return 0.0f;
    return (float)(type == REMAT_LOSS_RATE_MSE ? total / ((double)N * (double)K) : total / (double)N);
}

REMAT_ACT_INLINE float loss_forward(float *rate, const void *out, const int32_t *labels, remat_loss_type type,
                                    int64_t T, int64_t N, int64_t K, const int b16) {
    rate_of(rate, out, T, N * K, b16);
    if (N <= 0 || K <= 0) return 0.0f;
    return remat_ref_loss_value(loss_sum(rate, labels, type, 0, N, K), type, N, K);
}

/* part[b] = the terms of block b (samples b*N/nblk .. (b+1)*N/nblk - 1) summed as loss_sum. */
REMAT_ACT_INLINE void loss_blocks(double *part, float *rate, const void *out, const int32_t *labels,
                                  remat_loss_type type, int64_t T, int64_t N, int64_t K, int64_t nblk, const int b16) {
    rate_of(rate, out, T, N * K, b16);
    for (int64_t b = 0; b < nblk; b++)
        part[b] = N > 0 && K > 0 ? loss_sum(rate, labels, type, b * N / nblk, (b + 1) * N / nblk, K) : 0.0;
}

/* n_total: the batch the loss averages over (N in one process; the global batch on a
 * data-parallel rank holding N of its samples). */
REMAT_ACT_INLINE void loss_backward(void *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                                   int64_t T, int64_t N, int64_t K, int64_t n_total, const int b16) {
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
            if (type == REMAT_LOSS_RATE_MSE) g = 2.0 * ((double)r[k] - onehot) / ((double)n_total * (double)K);
            else g = (exp((double)r[k] - mx) / se - onehot) / (double)n_total;
            const float gt = (float)(g / (double)T);
            for (int64_t t = 0; t < T; t++) {
                const int64_t e = (t * N + n) * K + k;
                act_st(dout, e, act_ld(dout, e, b16) + gt, b16);
            }
        }
    }
}

float remat_ref_loss_forward(float *rate, const float *out, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K) {
    return loss_forward(rate, out, labels, type, T, N, K, 0);
}
float remat_ref_loss_forward_bf16(float *rate, const uint16_t *out, const int32_t *labels, remat_loss_type type,
                                  int64_t T, int64_t N, int64_t K) {
    return loss_forward(rate, out, labels, type, T, N, K, 1);
}
void remat_ref_loss_backward(float *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T,
                             int64_t N, int64_t K) {
    loss_backward(dout, rate, labels, type, T, N, K, N, 0);
}
void remat_ref_loss_backward_bf16(uint16_t *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                                  int64_t T, int64_t N, int64_t K) {
    loss_backward(dout, rate, labels, type, T, N, K, N, 1);
}

void remat_ref_loss_blocks(double *part, float *rate, const float *out, const int32_t *labels, remat_loss_type type,
                           int64_t T, int64_t N, int64_t K, int64_t nblk) {
    loss_blocks(part, rate, out, labels, type, T, N, K, nblk, 0);
}
void remat_ref_loss_blocks_bf16(double *part, float *rate, const uint16_t *out, const int32_t *labels,
                                remat_loss_type type, int64_t T, int64_t N, int64_t K, int64_t nblk) {
    loss_blocks(part, rate, out, labels, type, T, N, K, nblk, 1);
}
void remat_ref_loss_backward_n(float *dout, const float *rate, const int32_t *labels, remat_loss_type type, int64_t T,
                               int64_t N, int64_t K, int64_t n_total) {
    loss_backward(dout, rate, labels, type, T, N, K, n_total, 0);
}
void remat_ref_loss_backward_n_bf16(uint16_t *dout, const float *rate, const int32_t *labels, remat_loss_type type,
                                    int64_t T, int64_t N, int64_t K, int64_t n_total) {
    loss_backward(dout, rate, labels, type, T, N, K, n_total, 1);
}
