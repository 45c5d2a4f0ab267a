/* grid.c - verify every plan of the full product of block options, or a sample.
 *
 * The full product is walked as a mixed-radix counter over the blocks' option lists
 * (remat_plan_grid_block_options; option 0 of every block is "stored", so counter 0
 * is the baseline and is skipped), the last block's option changing fastest. Each
 * plan is validated with remat_plan_validate before it runs.
 */
#define _POSIX_C_SOURCE 200809L
#include "verify/grid.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/model/plan_grid.h"


remat_verify_grid_opts remat_verify_grid_opts_default(void) {
    remat_verify_grid_opts o;
    memset(&o, 0, sizeof o);
    o.v = remat_verify_opts_default();
    o.sample_seed = 1;
    o.max_plans = 20000;
    return o;
}

static void fill_row(remat_verify_grid_row *row, const remat_model *m, const remat_plan *p,
                     const remat_verify_result *r) {
    memset(row, 0, sizeof *row);
    remat_verify_plan_desc(m, p, row->plan, sizeof row->plan);
    row->failures = r->failures;
    row->n_different = r->cmp.n_different;
    row->peak_saving = remat_verify_saving(r->base.peak_live_bytes, r->plan.peak_live_bytes);
    row->eof_saving = remat_verify_saving(r->base.end_of_forward_bytes, r->plan.end_of_forward_bytes);
    row->step_time_s = r->plan.step_time_s;
    row->wall_s = r->plan_wall_s;
    for (int i = 0; i < r->cmp.n; i++)
        if (r->cmp.d[i].kind != REMAT_VERIFY_SAME) {
            snprintf(row->first_diff, sizeof row->first_diff, "%s", r->cmp.d[i].name);
            break;
        }
}

static void progress(const remat_verify_grid_opts *o, const remat_model *m, const remat_plan *p, int done,
                     int total) {
    if (!o->progress) return;
    char desc[256];
    o->progress(o->progress_ctx, done, total, remat_verify_plan_desc(m, p, desc, sizeof desc));
}

/* The plan at place q of the grid's order belongs to this slice. */
static int mine(const remat_verify_grid_opts *o, int64_t q) { return o->slice_n <= 1 || q % o->slice_n == o->slice_i; }

/* Verifies the plan at place q (into row, with *n advanced) if it is this slice's. */
static remat_status verify_one(const remat_verify_baseline *bl, const remat_model *m, const remat_plan *p,
                               remat_backend *b, const remat_verify_grid_opts *o, int64_t q, remat_verify_grid_row *row,
                               int *n, int total, remat_error *err) {
    if (!mine(o, q)) return REMAT_OK;
    progress(o, m, p, *n, total);
    remat_verify_result r;
    remat_status st = remat_verify_plan_against(bl, m, p, b, &o->v, &r, err);
    if (st == REMAT_OK) {
        fill_row(row, m, p, &r);
        row->index = (int)q;
        (*n)++;
    }
    remat_verify_result_free(&r);
    return st;
}

/* Plans of this slice among `all` in the grid's order. */
static int slice_count(const remat_verify_grid_opts *o, int64_t all) {
    if (o->slice_n <= 1) return (int)all;
    return (int)(all / o->slice_n + (o->slice_i < all % o->slice_n ? 1 : 0));
}


static remat_status run_sample(const remat_verify_baseline *bl, const remat_model *m, remat_backend *b,
                               const remat_verify_grid_opts *o, remat_verify_grid_row *rows, int *n,
                               remat_error *err) {
    remat_plan_grid g;
    memset(&g, 0, sizeof g);
    remat_status st = remat_plan_grid_random(m, o->sample_seed, o->sample + 1, &g, err);
    if (st != REMAT_OK) return st;
    int all = 0;
    for (int i = 0; i < g.n_plans && all < o->sample; i++) all += !remat_plan_is_empty(&g.plans[i]);
    int total = slice_count(o, all);
    for (int i = 0, q = 0; i < g.n_plans && q < o->sample && st == REMAT_OK; i++) {
        if (remat_plan_is_empty(&g.plans[i])) continue;
        st = verify_one(bl, m, &g.plans[i], b, o, q++, &rows[*n], n, total, err);
    }
    remat_plan_grid_free(&g);
    return st;
}

static remat_status run_full(const remat_verify_baseline *bl, const remat_model *m, remat_backend *b,
                             const remat_verify_grid_opts *o, int64_t size, remat_verify_grid_row *rows, int *n,
                             remat_error *err) {
    int nb = m->n_blocks;
    remat_block_plan **opts = remat_xcalloc((size_t)nb, sizeof *opts, err);
    int *n_opts = remat_xcalloc((size_t)nb, sizeof *n_opts, err);
    int *digit = remat_xcalloc((size_t)nb, sizeof *digit, err);
    remat_block_plan *blocks = remat_xcalloc((size_t)nb, sizeof *blocks, err);
    remat_status st = (opts && n_opts && digit && blocks) ? REMAT_OK : REMAT_ERR_NOMEM;
    for (int bi = 0; bi < nb && st == REMAT_OK; bi++) {
        st = remat_plan_grid_block_options(m, bi, &opts[bi], &n_opts[bi], err);
        if (st == REMAT_OK && (n_opts[bi] < 1 || opts[bi][0].checkpoint))
            st = remat_error_set(err, REMAT_ERR_INTERNAL, "%s: block %s: grid options must start with 'stored'",
                                 m->path, m->blocks[bi].name);
    }
    char empty_text[1] = "", label[] = "grid";
    remat_plan p;
    memset(&p, 0, sizeof p);
    p.n_blocks = nb;
    p.blocks = blocks;
    p.text = empty_text;
    p.path = label;
    int total = slice_count(o, size - 1);
    for (int64_t idx = 1; idx < size && st == REMAT_OK; idx++) {
        /* advance the counter: last block fastest */
        for (int bi = nb - 1; bi >= 0; bi--) {
            if (++digit[bi] < n_opts[bi]) break;
            digit[bi] = 0;
        }
        for (int bi = 0; bi < nb; bi++) blocks[bi] = opts[bi][digit[bi]];
        st = remat_plan_validate(&p, m, "grid", err);
        if (st != REMAT_OK) break;
        st = verify_one(bl, m, &p, b, o, idx - 1, &rows[*n], n, total, err);
    }
    for (int bi = 0; opts && bi < nb; bi++) remat_xfree(opts[bi]);
    remat_xfree(opts);
    remat_xfree(n_opts);
    remat_xfree(digit);
    remat_xfree(blocks);
    return st;
}

remat_status remat_verify_grid_run(const remat_model *m, remat_backend *b, const remat_verify_grid_opts *opts,
                                   remat_verify_grid_row **rows, int *n_rows, remat_verify_grid_summary *summary,
                                   remat_error *err) {
    remat_verify_grid_opts clamped = *opts;
    const remat_verify_grid_opts *o = &clamped;
    *rows = NULL;
    *n_rows = 0;
    memset(summary, 0, sizeof *summary);
    int64_t size = remat_plan_grid_product_size(m, err);
    if (size < 1) return err && err->status ? err->status : REMAT_ERR_INTERNAL;
    summary->grid_size = size;
    summary->sampled = o->sample > 0;
    summary->sample_seed = o->sample_seed;
    if (o->slice_n >= 1) {
        if (o->slice_i < 0 || o->slice_i >= o->slice_n)
            return remat_error_set(err, REMAT_ERR_INPUT, "--slice: %d/%d (expected i/n with 0 <= i < n)", o->slice_i,
                                   o->slice_n);
        summary->slice_i = o->slice_i;
        summary->slice_n = o->slice_n;
    }
    if (o->sample < 0) return remat_error_set(err, REMAT_ERR_INPUT, "--sample: expected a positive count, got %d", o->sample);
    if (o->sample && o->max_plans > 0 && o->sample > o->max_plans)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: --sample: %d plans, more than --max-plans %" PRId64
                               " (each plan is a full training run and a row in memory; raise --max-plans to run more)",
                               m->path, o->sample, o->max_plans);
    /* a sample larger than the grid is the grid: memory proportional to what runs */
    if (o->sample && size - 1 < o->sample) clamped.sample = size - 1 >= 1 ? (int)(size - 1) : 1;
    if (!o->sample && o->max_plans > 0 && size - 1 > o->max_plans)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: grid: %" PRId64 " valid plans, more than %" PRId64
                               " (expected --sample K for a seeded random sample)",
                               m->path, size, o->max_plans);
    if (!o->sample && size - 1 > 0x7fffffff)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: grid: %" PRId64 " valid plans (expected --sample K)",
                               m->path, size);
    /* spans (several blocks as one unit) are not block options: a full grid verifies
     * them on top of the product; a sample draws from the product only */
    remat_plan_grid spans;
    memset(&spans, 0, sizeof spans);
    remat_status sst = o->sample ? REMAT_OK : remat_plan_grid_spans(m, &spans, err);
    if (sst != REMAT_OK) return sst;
    int64_t cap = (o->sample ? o->sample : size - 1) + spans.n_plans;
    remat_verify_grid_row *r = remat_xcalloc((size_t)(cap > 0 ? cap : 1), sizeof *r, err);
    if (!r) {
        remat_plan_grid_free(&spans);
        return REMAT_ERR_NOMEM;
    }

    double t0 = remat_now_s();
    remat_verify_baseline bl;
    remat_status st = remat_verify_baseline_run(m, b, &o->v, &bl, err);
    if (st != REMAT_OK) {
        remat_xfree(r);
        remat_plan_grid_free(&spans);
        return st;
    }
    summary->baseline_step_time_s = bl.res.step_time_s;
    int n = 0;
    if (o->sample)
        st = run_sample(&bl, m, b, o, r, &n, err);
    else
        st = run_full(&bl, m, b, o, size, r, &n, err);
    int64_t before = o->sample ? o->sample : size - 1; /* the places the product (or sample) took */
    for (int i = 0; i < spans.n_plans && st == REMAT_OK; i++)
        st = verify_one(&bl, m, &spans.plans[i], b, o, before + i, &r[n], &n, slice_count(o, cap), err);
    remat_plan_grid_free(&spans);
    remat_verify_baseline_free(&bl);
    summary->total_wall_s = remat_now_s() - t0;
    if (st != REMAT_OK) {
        remat_xfree(r);
        return st;
    }
    *rows = r;
    *n_rows = n;
    return REMAT_OK;
}
