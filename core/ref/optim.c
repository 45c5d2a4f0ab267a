/* optim.c - the reference optimisers: SGD with momentum and Adam (PyTorch semantics), and
 * zeroing, element-wise over remat_ref_parallel_for's parts (parallel.h): an element's
 * value does not depend on which thread computes it, so every thread count gives the
 * same bits (tests/threads_test.cc). */
#include "core/ref/ref_kernels.h"

#include <math.h>
#include <string.h>

#include "core/ref/elem_kernel.h"
#include "core/ref/parallel.h"

typedef struct sgd_call {
    float *p, *b;
    const float *g;
    float lr, momentum;
    int first_step;
} sgd_call;

/* One pass over the elements: each element's momentum buffer, then its parameter from
 * it (the same two operations per element as two passes, with one read of the buffer
 * fewer). */
REMAT_ELEM_INLINE void sgd_body(const sgd_call *c, int64_t lo, int64_t hi) {
    float *restrict p = c->p, *restrict b = c->b;
    const float *restrict g = c->g;
    const float lr = c->lr, momentum = c->momentum;
    if (!b) {
        for (int64_t i = lo; i < hi; i++) p[i] = p[i] - lr * g[i];
        return;
    }
    if (c->first_step)
        for (int64_t i = lo; i < hi; i++) {
            const float bi = g[i];
            b[i] = bi;
            p[i] = p[i] - lr * bi;
        }
    else
        for (int64_t i = lo; i < hi; i++) {
            const float bi = momentum * b[i] + g[i];
            b[i] = bi;
            p[i] = p[i] - lr * bi;
        }
}

/* Per-path copies (elem_kernel.h): the same IEEE operations per element on every path. */
REMAT_ELEM_CLONES(sgd_part, (void *ctx, int64_t lo, int64_t hi), (ctx, lo, hi),
                  sgd_body((const sgd_call *)ctx, lo, hi))

void remat_ref_sgd_update(float *param, float *buf, const float *grad, float lr, float momentum, int first_step,
                          int64_t n) {
    sgd_call c = {param, buf, grad, lr, momentum, first_step};
    remat_ref_parallel_for(n, 16, REMAT_REF_ELEM_MIN_PER_THREAD, sgd_part, &c);
}

typedef struct adam_call {
    float *p, *m, *v;
    const float *g;
    float beta1, beta2, om1, om2, step_size, bc2_sqrt, eps;
} adam_call;

static void adam_part(void *ctx, int64_t lo, int64_t hi) {
    const adam_call *c = ctx;
    float *restrict p = c->p, *restrict mm = c->m, *restrict vv = c->v;
    const float *restrict g = c->g;
    for (int64_t i = lo; i < hi; i++) {
        mm[i] = mm[i] * c->beta1 + c->om1 * g[i];
        vv[i] = vv[i] * c->beta2 + c->om2 * (g[i] * g[i]);
        const float denom = sqrtf(vv[i]) / c->bc2_sqrt + c->eps;
        p[i] = p[i] - c->step_size * (mm[i] / denom);
    }
}

void remat_ref_adam_update(float *param, float *m, float *v, const float *grad, float lr, float beta1, float beta2,
                           float eps, int step, int64_t n) {
    /* PyTorch's single-tensor Adam: the bias corrections in double, the rest in float. */
    const double bc1 = 1.0 - pow((double)beta1, (double)step), bc2 = 1.0 - pow((double)beta2, (double)step);
    adam_call c = {param, m, v, grad, beta1, beta2, 1.0f - beta1, 1.0f - beta2, (float)((double)lr / bc1),
                   (float)sqrt(bc2), eps};
    remat_ref_parallel_for(n, 16, REMAT_REF_ELEM_MIN_PER_THREAD, adam_part, &c);
}

static void zero_part(void *ctx, int64_t lo, int64_t hi) { memset((char *)ctx + lo, 0, (size_t)(hi - lo)); }

void remat_ref_zero(void *dst, int64_t bytes) {
    if (bytes > 0) remat_ref_parallel_for(bytes, 64, 4 * REMAT_REF_ELEM_MIN_PER_THREAD, zero_part, dst);
}
