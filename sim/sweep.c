/* sweep.c - the T/N sweep of simulate and demo (contract in sweep.h). */
#include "sim/sweep.h"

#include <string.h>

/* One value: the baseline, then the plan. */
static remat_status sweep_one(remat_sim *s, const remat_sweep_opts *o, remat_sweep_row *row, remat_error *err) {
    remat_status st = remat_search_evaluate(s, NULL, &row->base, err);
    if (st != REMAT_OK || !o->plan) return st;
    remat_plan p;
    if ((st = o->plan(o->plan_ctx, remat_sim_model(s), &p, err)) != REMAT_OK) return st;
    st = remat_search_evaluate(s, &p, &row->plan, err);
    remat_plan_free(&p);
    return st;
}

remat_status remat_sim_sweep(const remat_trace *t, const remat_sim_opts *so, const remat_sweep_opts *o,
                             remat_sweep_row *rows, int64_t *fixed, remat_error *err) {
    for (int i = 0; i < o->n; i++) {
        if (o->progress) o->progress(o->progress_ctx, o->dim, o->vals[i], i, o->n);
        remat_sim_opts vo = *so;
        vo.check_baseline = so->check_baseline && i == 0;
        if (o->dim == 'T') vo.T = o->vals[i];
        else vo.N = o->vals[i];
        remat_sim *s = remat_sim_init(t, &vo, err);
        if (!s) return err->status;
        const remat_shard *sh = remat_sim_shard(s);
        *fixed = o->dim == 'T' ? (sh ? sh->n_total : remat_sim_model(s)->N) : remat_sim_model(s)->T;
        memset(&rows[i], 0, sizeof rows[i]);
        rows[i].v = o->vals[i];
        if (sh) {
            rows[i].ranks = sh->ranks;
            rows[i].reduce_blocks = sh->blocks;
            rows[i].rank_N = remat_sim_model(s)->N;
        }
        remat_status st = sweep_one(s, o, &rows[i], err);
        remat_sim_free(s);
        if (st != REMAT_OK) return st;
    }
    return REMAT_OK;
}

/* Largest divisor of T not above sqrt(T). */
static int sqrt_divisor(int64_t T) {
    int best = 1;
    for (int k = 1; (int64_t)k * k <= T; k++)
        if (T % k == 0) best = k;
    return best;
}

remat_status remat_sweep_plan_along_time(const remat_model *m, remat_plan *out, int *along_time, remat_error *err) {
    remat_status st = remat_plan_init_empty(m, out, err);
    if (st != REMAT_OK) return st;
    out->blocks[0].checkpoint = 1;
    out->blocks[0].span = m->n_blocks;
    out->blocks[0].k = sqrt_divisor(m->T);
    out->blocks[0].compressor = REMAT_COMP_NONE;
    remat_error quiet = {0};
    if (remat_plan_validate(out, m, "<plan>", &quiet) != REMAT_OK) { /* e.g. batch norm: no chunks */
        out->blocks[0].k = 1;
        out->blocks[0].span = 1;
        *along_time = 0;
    }
    return REMAT_OK;
}
