/* span_search.c - span plans on top of the budget search (contract in span_search.h). */
#include "sim/span_search.h"

#include "core/model/plan_notation.h"

#include <stdio.h>
#include <string.h>

#include "core/model/plan_grid.h"

/* Adds a point to the front, keeping it sorted by peak descending. */
static remat_status front_add(remat_search_budget_result *r, const remat_search_point *pt, remat_error *err) {
    remat_search_point *n = remat_xrealloc(r->front, (size_t)(r->n_front + 1) * sizeof *n, err);
    if (!n) return REMAT_ERR_NOMEM;
    r->front = n;
    int i = r->n_front;
    while (i > 0 && r->front[i - 1].peak < pt->peak) {
        r->front[i] = r->front[i - 1];
        i--;
    }
    r->front[i] = *pt;
    r->n_front++;
    return REMAT_OK;
}

/* Drops the points another point dominates (no higher peak and no longer time, one
 * of them strictly), so the front stays a front. */
static void front_prune(remat_search_budget_result *r) {
    int w = 0;
    for (int i = 0; i < r->n_front; i++) {
        const remat_search_point *p = &r->front[i];
        int dominated = 0;
        for (int j = 0; j < r->n_front && !dominated; j++) {
            const remat_search_point *q = &r->front[j];
            if (j != i && q->peak <= p->peak && q->time_s <= p->time_s &&
                (q->peak < p->peak || q->time_s < p->time_s || j < i))
                dominated = !p->chosen;
        }
        if (!dominated) r->front[w++] = *p;
    }
    r->n_front = w;
}

remat_status remat_search_budget_spans(remat_sim *s, int64_t budget, const remat_search_budget_opts *o,
                                       remat_search_budget_result *out, remat_error *err) {
    remat_search_budget_opts def = remat_search_budget_opts_default();
    if (!o) o = &def;
    remat_status st = remat_search_budget(s, budget, o, out, err);
    if (st != REMAT_OK) return st;
    const remat_model *m = remat_sim_model(s);
    remat_plan_grid g;
    st = remat_plan_grid_spans(m, &g, err);
    if (st != REMAT_OK) return st;
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
        if (o->front_points > 0) st = front_add(out, &pt, err);
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
    if (st == REMAT_OK && o->front_points > 0) front_prune(out);
    remat_plan_grid_free(&g);
    return st;
}
