/* span_search.c - span plans on top of the budget search (contract in span_search.h). */
#include "sim/span_search.h"

#include "core/model/plan_notation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/clock.h"
#include "core/model/plan_grid.h"

/* Appends a point (the front is sorted and pruned once, at the end). */
static remat_status front_add(remat_search_budget_result *r, int *cap, const remat_search_point *pt, remat_error *err) {
    if (r->n_front == *cap) {
        int c = *cap > r->n_front ? *cap : (r->n_front ? 2 * r->n_front : 64);
        remat_search_point *n = remat_xrealloc(r->front, (size_t)c * sizeof *n, err);
        if (!n) return REMAT_ERR_NOMEM;
        r->front = n;
        *cap = c;
    }
    r->front[r->n_front++] = *pt;
    return REMAT_OK;
}

typedef struct ranked {
    int64_t peak;
    double time_s;
    int index;
} ranked;

static int by_peak_time(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->peak != y->peak) return x->peak < y->peak ? -1 : 1;
    if (x->time_s != y->time_s) return x->time_s < y->time_s ? -1 : 1;
    return x->index - y->index;
}

/* Drops the points another point dominates (no higher peak and no longer time, one
 * of them strictly; of equal points the first stays), so the front stays a front;
 * then sorts it by peak descending. O(n log n): in (peak, time, index) order a point
 * is dominated exactly when an earlier one is no slower. */
static remat_status front_prune(remat_search_budget_result *r, remat_error *err) {
    int n = r->n_front;
    if (n == 0) return REMAT_OK;
    ranked *k = remat_xmalloc((size_t)n * sizeof *k, err);
    remat_search_point *out = remat_xmalloc((size_t)n * sizeof *out, err);
    if (!k || !out) {
        remat_xfree(k);
        remat_xfree(out);
        return REMAT_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) k[i] = (ranked){r->front[i].peak, r->front[i].time_s, i};
    qsort(k, (size_t)n, sizeof *k, by_peak_time);
    int w = 0;
    double fastest = 0;
    for (int i = 0; i < n; i++) {
        const remat_search_point *p = &r->front[k[i].index];
        if (i == 0 || p->time_s < fastest || p->chosen) out[w++] = *p;
        if (i == 0 || p->time_s < fastest) fastest = p->time_s;
    }
    for (int i = 0; i < w; i++) r->front[i] = out[w - 1 - i]; /* peak descending */
    r->n_front = w;
    remat_xfree(k);
    remat_xfree(out);
    return REMAT_OK;
}

remat_status remat_search_budget_spans(remat_sim *s, int64_t budget, const remat_search_budget_opts *o,
                                       remat_search_budget_result *out, remat_error *err) {
    remat_search_budget_opts def = remat_search_budget_opts_default();
    if (!o) o = &def;
    const double t0 = remat_now_s();
    remat_status st = remat_search_budget(s, budget, o, out, err);
    if (st != REMAT_OK) return st;
    const remat_model *m = remat_sim_model(s);
    int64_t limit = REMAT_SPAN_WORK / m->n_blocks;
    if (limit < 64) limit = 64;
    out->span_candidates = remat_plan_grid_span_candidates(m);
    remat_plan_grid g;
    st = remat_plan_grid_spans_sampled(m, limit, &g, err);
    if (st != REMAT_OK) return st;
    out->span_simulated = g.n_plans;
    int cap = out->n_front;
    int best = -1, smallest = -1;
    remat_search_figures best_fig, smallest_fig;
    memset(&best_fig, 0, sizeof best_fig);
    memset(&smallest_fig, 0, sizeof smallest_fig);
    int64_t dp_min = out->found ? out->fig.peak : out->min_peak;
    for (int i = 0; i < g.n_plans && st == REMAT_OK; i++) {
        remat_search_figures f;
        st = remat_search_evaluate(s, &g.plans[i], &f, err);
        if (st == REMAT_OK) st = remat_search_note_evaluated(out, &g.plans[i], m, &f, err);
        if (st != REMAT_OK) break;
        out->simulations++;
        if (f.peak < out->min_peak || out->min_peak <= 0) out->min_peak = f.peak;
        if (f.peak < dp_min && (smallest < 0 || f.peak < smallest_fig.peak)) {
            smallest = i;
            smallest_fig = f;
        }
        remat_search_point pt;
        memset(&pt, 0, sizeof pt);
        pt.peak = f.peak;
        pt.time_s = f.time_s;
        remat_plan_notation(&g.plans[i], m, pt.label, sizeof pt.label);
        if (o->front_points > 0) st = front_add(out, &cap, &pt, err);
        if (f.peak <= budget && (best < 0 || f.time_s < best_fig.time_s)) {
            best = i;
            best_fig = f;
        }
    }
    /* nothing fits: the plan reported is the smallest-peak one, a span if a span wins */
    if (st == REMAT_OK && !out->found && best < 0 && smallest >= 0) {
        best = smallest;
        best_fig = smallest_fig;
    }
    if (st == REMAT_OK && best >= 0 && (!out->found || best_fig.time_s < out->fig.time_s)) {
        remat_plan copy;
        st = remat_plan_init_empty(m, &copy, err);
        if (st == REMAT_OK) {
            memcpy(copy.blocks, g.plans[best].blocks, (size_t)m->n_blocks * sizeof *copy.blocks);
            remat_plan_free(&out->plan);
            out->plan = copy;
            out->fig = best_fig;
            out->found = best_fig.peak <= budget;
            char label[160];
            remat_plan_notation(&copy, m, label, sizeof label);
            for (int i = 0; i < out->n_front; i++) out->front[i].chosen = !strcmp(out->front[i].label, label);
        }
    }
    if (st == REMAT_OK && o->front_points > 0) st = front_prune(out, err);
    remat_plan_grid_free(&g);
    out->seconds = remat_now_s() - t0;
    return st;
}
