/* tune.c - largest N or T under a budget, by rescaled simulation (see sim/tune.h). */
#define _POSIX_C_SOURCE 200809L

#include "sim/tune.h"
#include "sim/span_search.h"

#include <string.h>
#include <time.h>

#include "core/base/clock.h"

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
    int store;               /* 1: the probe is the answer: keep its figures (and plan) */
    remat_tune_result *out;
    remat_error *err;
    /* the probes of the side being tuned: value and whether it fit */
    int64_t *pv;
    int8_t *pfit;
    int np, cap;
    /* checkpointing: the values plain backpropagation was simulated to fit (they fit with
     * checkpointing too), and the plan of the last search that fit (tried first at other
     * values: one simulation instead of a search) */
    int64_t *plain_fit;
    int n_plain_fit;
    remat_block_plan *cand;
    int n_cand;
} tune_ctx;

static int probed(const tune_ctx *c, int64_t v, int *fit) {
    for (int i = 0; i < c->np; i++)
        if (c->pv[i] == v) {
            *fit = c->pfit[i];
            return 1;
        }
    return 0;
}

static remat_status note_probe(tune_ctx *c, int64_t v, int fit) {
    if (c->np == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        int64_t *pv = remat_xrealloc(c->pv, (size_t)cap * sizeof *pv, c->err);
        if (!pv) return REMAT_ERR_NOMEM;
        c->pv = pv;
        int8_t *pf = remat_xrealloc(c->pfit, (size_t)cap * sizeof *pf, c->err);
        if (!pf) return REMAT_ERR_NOMEM;
        c->pfit = pf;
        c->cap = cap;
    }
    c->pv[c->np] = v;
    c->pfit[c->np++] = (int8_t)fit;
    return REMAT_OK;
}

/* A simulator at value v; *s NULL when the model cannot be rescaled to v (too large). */
static remat_status open_at(tune_ctx *c, int64_t v, remat_sim **s) {
    if (c->o->progress) c->o->progress(c->o->progress_ctx, v, c->phase_ckpt, c->out->evaluations);
    remat_sim_opts so = c->o->sim;
    if (c->o->dim_T) so.T = v;
    else so.N = so.ranks > 1 ? v * so.ranks : v; /* with ranks, v is each rank's share */
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
    if (st != REMAT_OK) return st;
    if (!s) return note_probe(c, v, 0);
    remat_search_figures f;
    st = remat_search_evaluate(s, NULL, &f, c->err);
    c->out->evaluations++;
    if (st == REMAT_OK && f.peak <= c->budget) {
        *fits = 1;
        if (c->store) {
            c->out->plain.value = v;
            c->out->plain.fig = f;
        }
    }
    remat_sim_free(s);
    return st == REMAT_OK ? note_probe(c, v, *fits) : st;
}

static remat_status fits_ckpt(tune_ctx *c, int64_t v, int *fits) {
    remat_sim *s;
    *fits = 0;
    remat_status st = open_at(c, v, &s);
    if (st != REMAT_OK) return st;
    if (!s) return note_probe(c, v, 0);
    if (!c->store && c->n_cand) { /* the last plan that fit, at this value: enough when it fits here */
        remat_plan p;
        remat_error quiet = {0};
        if (remat_plan_init_empty(remat_sim_model(s), &p, &quiet) == REMAT_OK) {
            int same = p.n_blocks == c->n_cand;
            if (same) memcpy(p.blocks, c->cand, (size_t)c->n_cand * sizeof *p.blocks);
            remat_search_figures f;
            int ok = same && remat_search_evaluate(s, &p, &f, &quiet) == REMAT_OK && f.peak <= c->budget;
            remat_plan_free(&p);
            if (ok) {
                c->out->evaluations++;
                *fits = 1;
                remat_sim_free(s);
                return note_probe(c, v, 1);
            }
        }
    }
    remat_search_budget_opts bo = remat_search_budget_opts_default();
    bo.front_points = 0;
    bo.check_plans = 0;
    remat_search_budget_result r;
    st = remat_search_budget_spans(s, c->budget, &bo, &r, c->err);
    c->out->evaluations++;
    if (st == REMAT_OK && r.found) {
        *fits = 1;
        remat_block_plan *cand = remat_xrealloc(c->cand, (size_t)(r.plan.n_blocks ? r.plan.n_blocks : 1) * sizeof *cand,
                                                c->err);
        if (cand) {
            c->cand = cand;
            c->n_cand = r.plan.n_blocks;
            memcpy(cand, r.plan.blocks, (size_t)r.plan.n_blocks * sizeof *cand);
        }
        if (c->store) {
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
    return st == REMAT_OK ? note_probe(c, v, *fits) : st;
}

typedef remat_status (*fits_fn)(tune_ctx *, int64_t, int *);

/* The probes by value, ascending (insertion sort: a few thousand at most). */
static void sort_probes(tune_ctx *c) {
    for (int i = 1; i < c->np; i++) {
        int64_t v = c->pv[i];
        int8_t f = c->pfit[i];
        int j = i;
        while (j > 0 && c->pv[j - 1] > v) {
            c->pv[j] = c->pv[j - 1];
            c->pfit[j] = c->pfit[j - 1];
            j--;
        }
        c->pv[j] = v;
        c->pfit[j] = f;
    }
}

/* fn at v, from the probes already made when v was probed. */
static remat_status probe(tune_ctx *c, fits_fn fn, int64_t v, int *ok) {
    if (probed(c, v, ok)) return REMAT_OK;
    for (int i = 0; c->phase_ckpt && i < c->n_plain_fit; i++)
        if (c->plain_fit[i] == v) { /* fits plainly: fits with checkpointing (the search includes no plan) */
            *ok = 1;
            return note_probe(c, v, 1);
        }
    return fn(c, v, ok);
}

/* Doubling (or halving) from v0, then bisection: *found gets a fitting value whose
 * successor does not fit (or max), 0 when not even 1 fits. */
static remat_status largest(tune_ctx *c, fits_fn fn, int64_t v0, int64_t max, int64_t *found) {
    int ok = 0;
    remat_status st;
    *found = 0;
    if (v0 > max) v0 = max;
    if (v0 < 1) v0 = 1;
    int64_t lo, hi;
    if ((st = probe(c, fn, v0, &ok)) != REMAT_OK) return st;
    if (ok) {
        lo = v0;
        hi = max + 1;
        for (int64_t v = v0 <= max / 2 ? v0 * 2 : max + 1; v <= max; v = v <= max / 2 ? v * 2 : max + 1) {
            if ((st = probe(c, fn, v, &ok)) != REMAT_OK) return st;
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
            if ((st = probe(c, fn, v, &ok)) != REMAT_OK) return st;
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
        if ((st = probe(c, fn, mid, &ok)) != REMAT_OK) return st;
        if (ok) lo = mid;
        else hi = mid;
    }
    *found = lo;
    return REMAT_OK;
}

/* One side: the value found, the window below it checked value by value, the
 * threshold, the values above it that fit, and the answer's figures at the threshold.
 * floor: every value up to it is known to fit (the plain threshold, for checkpointing). */
static remat_status tune_side(tune_ctx *c, fits_fn fn, int64_t v0, int64_t max, int64_t floor,
                              int64_t floor_checked_from, remat_tune_side *side) {
    c->np = 0;
    int64_t found = 0;
    remat_status st = largest(c, fn, v0, max, &found);
    if (st != REMAT_OK) return st;
    side->value = 0; /* set by the store probe at the end */
    side->n_also = 0;
    side->first_misfit = 0;
    side->checked_from = 1;
    if (found == 0) return REMAT_OK;
    int64_t low = found - REMAT_TUNE_WINDOW + 1;
    if (low <= floor) low = floor + 1;
    if (low < 1) low = 1;
    int ok;
    for (int64_t v = found - 1; v >= low; v--)
        if ((st = probe(c, fn, v, &ok)) != REMAT_OK) return st;
    int64_t misfit = 0; /* smallest value at or below found that does not fit */
    for (int i = 0; i < c->np; i++)
        if (!c->pfit[i] && c->pv[i] <= found && (misfit == 0 || c->pv[i] < misfit)) misfit = c->pv[i];
    int64_t thr = misfit ? misfit - 1 : found;
    if (thr < floor) thr = floor; /* those fit plainly (the search includes the empty plan) */
    side->checked_from = low <= floor + 1 ? (floor > 0 ? floor_checked_from : 1) : low;
    if (side->checked_from > thr) side->checked_from = thr;
    for (int64_t v = thr + 1; v <= max && v <= thr + REMAT_TUNE_ABOVE; v++)
        if ((st = probe(c, fn, v, &ok)) != REMAT_OK) return st;
    sort_probes(c);
    for (int i = 0; i < c->np; i++) { /* fitting values above the threshold, as ranges */
        if (!c->pfit[i] || c->pv[i] <= thr) continue;
        int k = side->n_also;
        if (k > 0 && side->also_hi[k - 1] + 1 == c->pv[i]) side->also_hi[k - 1] = c->pv[i];
        else if (k < REMAT_TUNE_MAX_ALSO) {
            side->also_lo[k] = side->also_hi[k] = c->pv[i];
            side->n_also++;
        }
    }
    if (probed(c, thr + 1, &ok) && !ok) side->first_misfit = thr + 1;
    if (thr == 0) return REMAT_OK;
    /* the answer's figures (and plan): probe the threshold again, keeping them */
    c->store = 1;
    st = fn(c, thr, &ok);
    c->store = 0;
    c->np--; /* the repeat is not a new probe */
    if (st == REMAT_OK && !ok)
        return remat_error_set(c->err, REMAT_ERR_INTERNAL, "tune: %lld fit once and not the second time",
                               (long long)thr);
    return st;
}

remat_status remat_tune(const remat_trace *base, const remat_tune_opts *o, int64_t budget, remat_tune_result *out,
                        remat_error *err) {
    memset(out, 0, sizeof *out);
    const double t0 = remat_now_s();
    tune_ctx c;
    memset(&c, 0, sizeof c);
    c.base = base;
    c.o = o;
    c.budget = budget;
    c.out = out;
    c.err = err;
    int64_t limit = o->dim_T ? REMAT_SIM_MAX_T : REMAT_SIM_MAX_N;
    int64_t max = o->max_value > 0 ? o->max_value : limit;
    if (max > limit)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--max: %lld is above the largest %s tune tries (%lld: each probe simulates the model at "
                               "that size, and larger ones would not finish)",
                               (long long)max, o->dim_T ? "T" : "N", (long long)limit);
    int64_t v0 = o->dim_T ? base->T : base->N;
    out->max_value = max;
    remat_status st = tune_side(&c, fits_plain, v0, max, 0, 1, &out->plain);
    c.phase_ckpt = 1;
    if (st == REMAT_OK && c.np > 0 && !(c.plain_fit = remat_xmalloc((size_t)c.np * sizeof *c.plain_fit, err)))
        st = REMAT_ERR_NOMEM;
    for (int i = 0; st == REMAT_OK && i < c.np; i++)
        if (c.pfit[i]) c.plain_fit[c.n_plain_fit++] = c.pv[i];
    if (st == REMAT_OK)
        st = tune_side(&c, fits_ckpt, out->plain.value > v0 ? out->plain.value : v0, max, out->plain.value,
                       out->plain.checked_from, &out->ckpt);
    remat_xfree(c.pv);
    remat_xfree(c.pfit);
    remat_xfree(c.plain_fit);
    remat_xfree(c.cand);
    out->plain.at_max = out->plain.value == max;
    out->ckpt.at_max = out->ckpt.value == max;
    out->seconds = remat_now_s() - t0;
    if (st != REMAT_OK) remat_tune_result_free(out);
    return st;
}
