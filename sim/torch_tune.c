/* torch_tune.c - the largest batch size that fits, on a recorded PyTorch step
 * (torch_tune.h): a doubling, then a bisection, over the step rescaled to each N. */
#include <string.h>

#include "sim/search.h"
#include "sim/torch_tune.h"

typedef struct tune_ctx {
    remat_ext_trace *t;
    const remat_torch_linear *L;
    int64_t budget;
    remat_torch_exec how;
    const char *origin;
    remat_torch_tune_progress progress;
    void *progress_ctx;
    remat_torch_tune_result *out;
} tune_ctx;

/* Does N fit, plain (ckpt 0) or with the search's plan? With keep, the plan and the
 * model at N move into out. */
static remat_status fits_at(tune_ctx *c, int64_t N, int ckpt, int keep, int *fits, remat_torch_pred *pred,
                            remat_error *err) {
    if (c->progress) c->progress(c->progress_ctx, N, ckpt, c->out->probes);
    c->out->probes++;
    remat_status st = remat_torch_linear_apply(c->L, N, c->t, err);
    if (st != REMAT_OK) return st;
    remat_model m;
    st = remat_torch_sim_model(c->t, c->origin, &m, err);
    if (st != REMAT_OK) return st;
    if (!ckpt) {
        st = remat_torch_sim_run(c->t, &m, NULL, c->how, c->origin, pred, err);
        c->out->evaluated++;
        *fits = st == REMAT_OK && pred->peak_live_bytes <= c->budget;
        remat_model_free(&m);
        return st;
    }
    remat_torch_search_result r;
    st = remat_torch_search(c->t, &m, c->budget, c->how, c->origin, &r, err);
    if (st != REMAT_OK) {
        remat_model_free(&m);
        return st;
    }
    c->out->evaluated += r.evaluated;
    *fits = r.found;
    *pred = r.pred;
    if (keep && r.found) {
        c->out->plan = r.plan;
        c->out->model = m;
        c->out->have_plan = 1;
    } else {
        remat_plan_free(&r.plan);
        remat_model_free(&m);
    }
    return REMAT_OK;
}

static remat_status largest(tune_ctx *c, int ckpt, int64_t max, remat_torch_tune_side *side, remat_error *err) {
    memset(side, 0, sizeof *side);
    remat_torch_pred p;
    int ok = 0;
    remat_status st = fits_at(c, 1, ckpt, 0, &ok, &p, err);
    if (st != REMAT_OK || !ok) return st;
    int64_t lo = 1, hi = 2;
    while (hi <= max) {
        if ((st = fits_at(c, hi, ckpt, 0, &ok, &p, err)) != REMAT_OK) return st;
        if (!ok) break;
        lo = hi;
        hi = hi > max / 2 ? max + 1 : hi * 2;
    }
    if (hi > max && lo < max) { /* the doubling went past the limit: the limit itself */
        if ((st = fits_at(c, max, ckpt, 0, &ok, &p, err)) != REMAT_OK) return st;
        if (ok) lo = max;
        else hi = max;
    }
    while (hi - lo > 1 && lo < max) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((st = fits_at(c, mid, ckpt, 0, &ok, &p, err)) != REMAT_OK) return st;
        if (ok) lo = mid;
        else hi = mid;
    }
    side->value = lo;
    side->at_max = lo == max;
    /* the answer's figures (and, checkpointed, its plan) */
    st = fits_at(c, lo, ckpt, ckpt, &ok, &side->pred, err);
    if (st == REMAT_OK && !ok)
        st = remat_error_set(err, REMAT_ERR_INTERNAL, "tune: N = %lld fitted once and not again", (long long)lo);
    return st;
}

remat_status remat_torch_tune(remat_ext_trace *t, const remat_torch_linear *L, int64_t budget, int64_t max_n,
                              remat_torch_exec how, const char *origin, remat_torch_tune_progress progress,
                              void *progress_ctx, remat_torch_tune_result *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    out->max_value = max_n > 0 && max_n < REMAT_SIM_MAX_N ? max_n : REMAT_SIM_MAX_N;
    tune_ctx c = {t, L, budget, how, origin, progress, progress_ctx, out};
    remat_status st = largest(&c, 0, out->max_value, &out->plain, err);
    if (st == REMAT_OK) st = largest(&c, 1, out->max_value, &out->ckpt, err);
    if (st != REMAT_OK) remat_torch_tune_free(out);
    return st;
}

void remat_torch_tune_free(remat_torch_tune_result *r) {
    if (!r) return;
    if (r->have_plan) {
        remat_plan_free(&r->plan);
        remat_model_free(&r->model);
    }
    memset(r, 0, sizeof *r);
}
