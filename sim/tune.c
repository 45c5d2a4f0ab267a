/* tune.c - largest N or T under a budget, by rescaled simulation (see sim/tune.h). */
#define _POSIX_C_SOURCE 200809L

#include "sim/tune.h"
#include "sim/span_search.h"

#include <string.h>
#include <time.h>

remat_tune_opts remat_tune_opts_default(void) {
    remat_tune_opts o;
    memset(&o, 0, sizeof o);
    o.sim = remat_sim_opts_default();
    return o;
}

void remat_tune_result_free(remat_tune_result *r) {
    if (r->have_plan) {
        remat_plan_free(&r->plan);
        remat_model_free(&r->model);
    }
    memset(r, 0, sizeof r[0]);
}

typedef struct tune_ctx {
    const remat_trace *base;
    const remat_tune_opts *o;
    int64_t budget;
    int checked;             /* the baseline check ran once */
    int phase_ckpt;          /* 1 while searching with checkpointing */
    remat_tune_result *out;
    remat_error *err;
} tune_ctx;

/* A simulator at value v; *s NULL when the model cannot be rescaled to v (too large). */
static remat_status open_at(tune_ctx *c, int64_t v, remat_sim **s) {
    if (c->o->progress) c->o->progress(c->o->progress_ctx, v, c->phase_ckpt, c->out->evaluations);
    remat_sim_opts so = c->o->sim;
    if (c->o->dim_T) so.T = v;
    else so.N = v;
    so.check_baseline = so.check_baseline && !c->checked;
    remat_error e = {0};
    *s = remat_sim_init(c->base, &so, &e);
    if (*s) {
        c->checked = 1;
        return REMAT_OK;
    }
    if (!c->checked || e.status != REMAT_ERR_INPUT) { /* the trace itself is refused, or worse */
        *c->err = e;
        return e.status;
    }
    return REMAT_OK; /* the rescaled model is refused: v does not fit */
}

static remat_status fits_plain(tune_ctx *c, int64_t v, int *fits) {
    remat_sim *s;
    *fits = 0;
    remat_status st = open_at(c, v, &s);
    if (st != REMAT_OK || !s) return st;
    remat_search_figures f;
    st = remat_search_evaluate(s, NULL, &f, c->err);
    c->out->evaluations++;
    if (st == REMAT_OK && f.peak <= c->budget) {
        *fits = 1;
        if (v >= c->out->plain.value) {
            c->out->plain.value = v;
            c->out->plain.fig = f;
        }
    }
    remat_sim_free(s);
    return st;
}

static remat_status fits_ckpt(tune_ctx *c, int64_t v, int *fits) {
    remat_sim *s;
    *fits = 0;
    remat_status st = open_at(c, v, &s);
    if (st != REMAT_OK || !s) return st;
    remat_search_budget_opts bo = remat_search_budget_opts_default();
    bo.front_points = 0;
    bo.check_plans = 0;
    remat_search_budget_result r;
    st = remat_search_budget_spans(s, c->budget, &bo, &r, c->err);
    c->out->evaluations++;
    if (st == REMAT_OK && r.found) {
        *fits = 1;
        if (v >= c->out->ckpt.value) {
            remat_tune_result *o = c->out;
            if (o->have_plan) {
                remat_plan_free(&o->plan);
                remat_model_free(&o->model);
                o->have_plan = 0;
            }
            const remat_model *bm = remat_sim_base_model(s);
            st = remat_model_rescale(bm, c->o->dim_T ? v : c->o->sim.T, c->o->dim_T ? c->o->sim.N : v, &o->model,
                                     c->err);
            if (st == REMAT_OK && (st = remat_plan_init_empty(&o->model, &o->plan, c->err)) != REMAT_OK)
                remat_model_free(&o->model);
            if (st == REMAT_OK) {
                memcpy(o->plan.blocks, r.plan.blocks, (size_t)o->plan.n_blocks * sizeof *o->plan.blocks);
                o->have_plan = 1;
                o->ckpt.value = v;
                o->ckpt.fig = r.fig;
            }
        }
    }
    remat_search_budget_result_free(&r);
    remat_sim_free(s);
    return st;
}

typedef remat_status (*fits_fn)(tune_ctx *, int64_t, int *);

static remat_status largest(tune_ctx *c, fits_fn fn, int64_t v0, int64_t max) {
    int ok = 0;
    remat_status st;
    if (v0 > max) v0 = max;
    if (v0 < 1) v0 = 1;
    int64_t lo, hi;
    if ((st = fn(c, v0, &ok)) != REMAT_OK) return st;
    if (ok) {
        lo = v0;
        hi = max + 1;
        for (int64_t v = v0 <= max / 2 ? v0 * 2 : max + 1; v <= max; v = v <= max / 2 ? v * 2 : max + 1) {
            if ((st = fn(c, v, &ok)) != REMAT_OK) return st;
            if (!ok) {
                hi = v;
                break;
            }
            lo = v;
        }
    } else {
        hi = v0;
        lo = 0;
        for (int64_t v = v0 / 2; v >= 1; v /= 2) {
            if ((st = fn(c, v, &ok)) != REMAT_OK) return st;
            if (ok) {
                lo = v;
                break;
            }
            hi = v;
        }
        if (lo == 0) return REMAT_OK; /* not even 1 fits */
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((st = fn(c, mid, &ok)) != REMAT_OK) return st;
        if (ok) lo = mid;
        else hi = mid;
    }
    return REMAT_OK;
}

remat_status remat_tune(const remat_trace *base, const remat_tune_opts *o, int64_t budget, remat_tune_result *out,
                        remat_error *err) {
    memset(out, 0, sizeof *out);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tune_ctx c = {base, o, budget, 0, 0, out, err};
    int64_t limit = o->dim_T ? REMAT_SIM_MAX_T : REMAT_SIM_MAX_N;
    int64_t max = o->max_value > 0 ? o->max_value : limit;
    if (max > limit)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--max: %lld is above the largest %s tune tries (%lld: each probe simulates the model at "
                               "that size, and larger ones would not finish)",
                               (long long)max, o->dim_T ? "T" : "N", (long long)limit);
    int64_t v0 = o->dim_T ? base->T : base->N;
    out->max_value = max;
    remat_status st = largest(&c, fits_plain, v0, max);
    c.phase_ckpt = 1;
    if (st == REMAT_OK) st = largest(&c, fits_ckpt, out->plain.value > v0 ? out->plain.value : v0, max);
    out->plain.at_max = out->plain.value == max;
    out->ckpt.at_max = out->ckpt.value == max;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (st != REMAT_OK) remat_tune_result_free(out);
    return st;
}
