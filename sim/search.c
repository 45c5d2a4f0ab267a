/* search.c - greedy levels and the exact budget search (contracts in sim/search.h). */
#define _POSIX_C_SOURCE 200809L

#include "sim/search.h"

#include "core/base/rng.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/model/plan_notation.h"
#include "sim/profile.h"

/* ---- evaluation and labels ---------------------------------------------------- */

remat_status remat_search_evaluate(remat_sim *s, const remat_plan *p, remat_search_figures *f, remat_error *err) {
    remat_status st = remat_sim_set_plan(s, p, err);
    if (st == REMAT_OK) st = remat_sim_run(s, err);
    if (st != REMAT_OK) return st;
    const remat_sim_summary *r = remat_sim_results(s);
    f->peak = remat_sim_peak(s);
    f->peak_live = r->peak_live_bytes;
    f->peak_reserved = r->peak_reserved_bytes;
    f->end_of_forward = r->end_of_forward_bytes;
    f->time_s = r->step_time_s;
    return REMAT_OK;
}

int remat_search_preset_from_name(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "speed")) return REMAT_PRESET_SPEED;
    if (!strcmp(s, "balanced")) return REMAT_PRESET_BALANCED;
    if (!strcmp(s, "memory")) return REMAT_PRESET_MEMORY;
    return -1;
}

void remat_search_log_free(remat_search_log *l) {
    remat_xfree(l->steps);
    memset(l, 0, sizeof *l);
}

static remat_status log_step(remat_search_log *l, int level, const char *what, const remat_search_figures *f, int kept,
                             remat_error *err) {
    if (!l) return REMAT_OK;
    if (l->n == l->cap) {
        int c = l->cap ? l->cap * 2 : 32;
        remat_search_step *v = remat_xrealloc(l->steps, (size_t)c * sizeof *v, err);
        if (!v) return REMAT_ERR_NOMEM;
        l->steps = v;
        l->cap = c;
    }
    remat_search_step *x = &l->steps[l->n++];
    x->level = level;
    snprintf(x->what, sizeof x->what, "%s", what);
    x->peak = f->peak;
    x->time_s = f->time_s;
    x->kept = kept;
    return REMAT_OK;
}

/* ---- greedy ------------------------------------------------------------------------ */

static int64_t block_input_elems(const remat_model *m, int b) {
    return m->T * m->N * m->layers[m->blocks[b].first_layer].in_features;
}

/* Predicted bytes of block b's saved input under compressor c (largest over the steps). */
static int64_t compressed_size(remat_sim *s, const remat_model *m, int b, remat_compressor c) {
    int64_t elems = block_input_elems(m, b);
    switch (c) {
    case REMAT_COMP_NONE: return remat_encoding_bytes(remat_model_act_encoding(m), elems, 0);
    case REMAT_COMP_BOOL:
    case REMAT_COMP_UINT8: return elems;
    case REMAT_COMP_BIT: return (elems + 7) / 8;
    case REMAT_COMP_SPARSE: {
        int64_t worst = 0;
        const remat_sim_summary *r = remat_sim_results(s);
        int iters = r->n_iters > 0 ? r->n_iters : 1;
        for (int it = 0; it < iters; it++) {
            int64_t nnz = remat_sim_nnz(s, it, m->blocks[b].first_layer - 1, elems);
            if (nnz * 4 > worst) worst = nnz * 4;
        }
        return worst;
    }
    default: return INT64_MAX;
    }
}

static int plan_valid(const remat_plan *p, const remat_model *m) {
    remat_error e = {0};
    return remat_plan_validate(p, m, "<search>", &e) == REMAT_OK;
}

/* Seconds of block b's first-pass forward ops in the last simulated trace (per step). */
static double block_forward_time(remat_sim *s, int b) {
    const remat_trace *t = remat_sim_trace(s);
    double sum = 0;
    for (int64_t i = 0; i < t->n_ops; i++) {
        const remat_op_record *op = &t->ops[i];
        if (op->block == b && op->phase == REMAT_PHASE_FORWARD && op->op != REMAT_OP_COMPRESS)
            sum += op->t_end - op->t_start;
    }
    return sum / (t->n_iters > 0 ? t->n_iters : 1);
}

/* The levels' work, bounded by the input: each candidate is one simulation of every block. */
static remat_status level_work_check(const remat_model *m, int level, remat_error *err) {
    int nb = m->n_blocks;
    int64_t divisors = 0, per_block = 0, most_layers = 0;
    for (int64_t k = 2; k <= m->T; k++) divisors += m->T % k == 0;
    for (int b = 0; b < nb; b++)
        if (m->blocks[b].n_layers > most_layers) most_layers = m->blocks[b].n_layers;
    per_block = (level >= 2 ? most_layers : 0) + (level >= 3 ? divisors : 0) + (level >= 4 ? 1 : 0);
    const int64_t sims = 2 + (int64_t)nb * per_block, work = sims * nb;
    if (work > REMAT_LEVEL_WORK)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "--level %d: about %lld simulations of %d blocks (%lld simulated blocks), above the "
                               "limit of %lld (REMAT_LEVEL_WORK: the levels try each block in turn, so the work grows "
                               "as blocks^2); --budget searches larger models",
                               level, (long long)sims, nb, (long long)work, (long long)REMAT_LEVEL_WORK);
    return REMAT_OK;
}

/* What the greedy levels hand each other: the plan so far and its figures, a candidate,
 * scratch for orders and costs. */
typedef struct greedy {
    remat_sim *s;
    const remat_model *m;
    int nb;
    remat_plan *out, cand;
    int *order;
    double *cost;
    remat_search_figures cur;
    remat_search_log *log;
    char what[160];
} greedy;

/* Level 1: checkpoint blocks by input size, largest first (the preset's share), each with
 * the compressor that stores least among those that validate. */
static remat_status level_checkpoint(greedy *g, remat_search_preset preset, remat_error *err) {
    const remat_model *m = g->m;
    int nb = g->nb, *order = g->order;
    remat_plan *out = g->out;
    for (int b = 0; b < nb; b++) order[b] = b;
    for (int i = 1; i < nb; i++) { /* stable insertion sort, descending input size */
        int x = order[i], j = i;
        while (j > 0 && block_input_elems(m, order[j - 1]) < block_input_elems(m, x)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    int pct = preset == REMAT_PRESET_SPEED ? 50 : preset == REMAT_PRESET_BALANCED ? 75 : 100;
    int count = (nb * pct + 99) / 100;
    size_t used = 0;
    g->what[0] = '\0';
    for (int i = 0; i < count; i++) {
        int b = order[i];
        static const remat_compressor prefer[] = {REMAT_COMP_BIT, REMAT_COMP_SPARSE, REMAT_COMP_BOOL,
                                                  REMAT_COMP_UINT8, REMAT_COMP_NONE};
        remat_compressor best = REMAT_COMP_NONE;
        int64_t best_size = INT64_MAX;
        for (int q = 0; q < 5; q++) {
            out->blocks[b].checkpoint = 1;
            out->blocks[b].compressor = prefer[q];
            if (!plan_valid(out, m)) continue;
            int64_t sz = compressed_size(g->s, m, b, prefer[q]);
            if (sz < best_size) {
                best_size = sz;
                best = prefer[q];
            }
        }
        out->blocks[b].checkpoint = 1;
        out->blocks[b].compressor = best;
        int n = snprintf(g->what + used, sizeof g->what - used, "%s%s(%s)", used ? " " : "checkpoint ",
                         m->blocks[b].name, remat_compressor_name(best));
        if (n > 0 && used + (size_t)n < sizeof g->what) used += (size_t)n;
    }
    remat_status st = remat_search_evaluate(g->s, out, &g->cur, err);
    if (st == REMAT_OK) st = log_step(g->log, 1, g->what, &g->cur, 1, err);
    return st;
}

/* Level 2 (lv 2: spatial splits) or 3 (time chunks) on checkpointed block b: the best
 * candidate (lowest peak, then least time), kept when it lowers the peak. */
static remat_status level_refine_block(greedy *g, int lv, const remat_block_options *opts, int b, remat_error *err) {
    const remat_model *m = g->m;
    remat_plan *out = g->out;
    remat_block_plan keep = out->blocks[b], best_bp = keep;
    remat_search_figures best = g->cur, f;
    remat_status st = REMAT_OK;
    int tried = 0;
    int n_try = lv == 2 ? opts[b].n : (int)m->T;
    for (int i = 0; i < n_try; i++) {
        remat_block_plan bp = keep;
        if (lv == 2) {
            const remat_block_plan *o = &opts[b].v[i];
            if (!o->checkpoint || o->n_splits == 0 || o->compressor != keep.compressor || o->k != keep.k) continue;
            bp.n_splits = o->n_splits;
            memcpy(bp.splits, o->splits, sizeof bp.splits);
        } else {
            int k = i + 1;
            if (k <= 1 || m->T % k || k == keep.k) continue;
            bp.k = k;
        }
        memcpy(g->cand.blocks, out->blocks, (size_t)g->nb * sizeof *g->cand.blocks);
        g->cand.blocks[b] = bp;
        if (!plan_valid(&g->cand, m)) continue;
        if ((st = remat_search_evaluate(g->s, &g->cand, &f, err)) != REMAT_OK) return st;
        if (!tried || f.peak < best.peak || (f.peak == best.peak && f.time_s < best.time_s)) {
            best = f;
            best_bp = bp;
        }
        tried++;
    }
    if (!tried) return REMAT_OK;
    int kept = best.peak < g->cur.peak;
    if (lv == 2) snprintf(g->what, sizeof g->what, "split %s into %d segments", m->blocks[b].name, best_bp.n_splits + 1);
    else snprintf(g->what, sizeof g->what, "time chunks k=%d on %s", best_bp.k, m->blocks[b].name);
    if (kept) {
        out->blocks[b] = best_bp;
        g->cur = best;
    }
    return log_step(g->log, lv, g->what, &best, kept, err);
}

/* Level 2 or 3 over every checkpointed block, then the plan evaluated again. */
static remat_status level_refine(greedy *g, int lv, remat_error *err) {
    remat_block_options *opts = NULL;
    remat_status st = REMAT_OK;
    if (lv == 2 && (st = remat_search_block_options(g->m, &opts, err)) != REMAT_OK) return st;
    for (int b = 0; b < g->nb && st == REMAT_OK; b++)
        if (g->out->blocks[b].checkpoint) st = level_refine_block(g, lv, opts, b, err);
    remat_search_options_free(opts, g->nb);
    if (st == REMAT_OK) st = remat_search_evaluate(g->s, g->out, &g->cur, err);
    return st;
}

/* Level 4: restore checkpointed blocks, costliest forward first, where the peak does not rise. */
static remat_status level_restore(greedy *g, remat_error *err) {
    int n = 0, nb = g->nb, *order = g->order;
    double *cost = g->cost;
    remat_plan *out = g->out;
    remat_search_figures f;
    remat_status st = REMAT_OK;
    for (int b = 0; b < nb; b++)
        if (out->blocks[b].checkpoint) {
            cost[b] = block_forward_time(g->s, b);
            order[n++] = b;
        }
    for (int i = 1; i < n; i++) {
        int x = order[i], j = i;
        while (j > 0 && cost[order[j - 1]] < cost[x]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    for (int i = 0; i < n && st == REMAT_OK; i++) {
        int b = order[i];
        memcpy(g->cand.blocks, out->blocks, (size_t)nb * sizeof *g->cand.blocks);
        memset(&g->cand.blocks[b], 0, sizeof g->cand.blocks[b]);
        g->cand.blocks[b].compressor = REMAT_COMP_NONE;
        g->cand.blocks[b].k = 1;
        if ((st = remat_search_evaluate(g->s, &g->cand, &f, err)) != REMAT_OK) break;
        int kept = f.peak <= g->cur.peak;
        snprintf(g->what, sizeof g->what, "restore %s (forward %.3g ms)", g->m->blocks[b].name, cost[b] * 1e3);
        if (kept) {
            out->blocks[b] = g->cand.blocks[b];
            g->cur = f;
        }
        st = log_step(g->log, 4, g->what, &f, kept, err);
    }
    if (st == REMAT_OK) st = remat_search_evaluate(g->s, out, &g->cur, err);
    return st;
}

remat_status remat_search_greedy(remat_sim *s, int level, remat_search_preset preset, remat_plan *out,
                                 remat_search_figures *fig, remat_search_log *log, remat_error *err) {
    const remat_model *m = remat_sim_model(s);
    int nb = m->n_blocks;
    if (level < 0 || level > 4) return remat_error_set(err, REMAT_ERR_INPUT, "level: expected 0..4, got %d", level);
    remat_status st = level_work_check(m, level, err);
    if (st != REMAT_OK) return st;
    if ((st = remat_plan_init_empty(m, out, err)) != REMAT_OK) return st;
    greedy g = {.s = s, .m = m, .nb = nb, .out = out, .log = log};
    if ((st = remat_plan_init_empty(m, &g.cand, err)) != REMAT_OK) {
        remat_plan_free(out);
        return st;
    }
    g.order = remat_xmalloc((size_t)(nb ? nb : 1) * sizeof *g.order, err);
    g.cost = remat_xmalloc((size_t)(nb ? nb : 1) * sizeof *g.cost, err);
    if (!g.order || !g.cost) st = REMAT_ERR_NOMEM;
    if (st == REMAT_OK) st = remat_search_evaluate(s, out, &g.cur, err);
    if (st == REMAT_OK) st = log_step(log, 0, "baseline (nothing checkpointed)", &g.cur, 1, err);
    if (st == REMAT_OK && level >= 1) st = level_checkpoint(&g, preset, err);
    for (int lv = 2; st == REMAT_OK && lv <= 3 && lv <= level; lv++) st = level_refine(&g, lv, err);
    if (st == REMAT_OK && level >= 4) st = level_restore(&g, err);
    if (st == REMAT_OK && fig) *fig = g.cur;
    if (st != REMAT_OK) remat_plan_free(out);
    remat_plan_free(&g.cand);
    remat_xfree(g.order);
    remat_xfree(g.cost);
    return st;
}

/* ---- the chain model by probes -------------------------------------------------- */

remat_status remat_search_build_chain(remat_sim *s, const remat_block_options *opts, remat_chain *out, int *probes,
                                      remat_error *err) {
    const remat_model *m = remat_sim_model(s);
    int nb = m->n_blocks, P = 1;
    int *n_opts = remat_xmalloc((size_t)(nb ? nb : 1) * sizeof *n_opts, err);
    if (!n_opts) return REMAT_ERR_NOMEM;
    for (int b = 0; b < nb; b++) {
        n_opts[b] = opts[b].n;
        if (opts[b].n > P) P = opts[b].n;
    }
    int n_it = remat_sim_results(s)->n_iters;
    remat_plan p;
    remat_status st = REMAT_OK;
    double *steps = NULL;
    if (n_it < 1) { /* the number of steps is known once a plan has run */
        if ((st = remat_sim_set_plan(s, NULL, err)) == REMAT_OK) st = remat_sim_run(s, err);
        n_it = remat_sim_results(s)->n_iters;
    }
    if (st == REMAT_OK && n_it > REMAT_CHAIN_MAX_ITERS)
        st = remat_error_set(err, REMAT_ERR_INPUT, "iters: the budget search simulates at most %d steps, got %d",
                             REMAT_CHAIN_MAX_ITERS, n_it);
    if (st == REMAT_OK) st = remat_chain_init(out, nb, n_opts, n_it, err);
    remat_xfree(n_opts);
    if (st != REMAT_OK) return st;
    if ((st = remat_plan_init_empty(m, &p, err)) != REMAT_OK) {
        remat_chain_free(out);
        return st;
    }
    steps = remat_xmalloc((size_t)n_it * sizeof *steps, err);
    if (!steps) st = REMAT_ERR_NOMEM;
    for (int r = 0; r < P && st == REMAT_OK; r++) {
        for (int b = 0; b < nb; b++) p.blocks[b] = opts[b].v[r < opts[b].n ? r : opts[b].n - 1];
        if ((st = remat_sim_set_plan(s, &p, err)) != REMAT_OK || (st = remat_sim_run(s, err)) != REMAT_OK) break;
        const remat_sim_summary *res = remat_sim_results(s);
        for (int it = 0; it < n_it; it++) steps[it] = res->iters[it].step_time_s;
        remat_step_profile prof;
        if ((st = remat_profile_trace(remat_sim_trace(s), nb, steps, remat_sim_host_per_event(s), &prof, err)) !=
            REMAT_OK)
            break;
        for (int b = 0; b < nb; b++)
            if (r < opts[b].n) out->opts[b][r] = prof.blocks[b];
        if (r == 0) {
            memcpy(out->base, prof.base, sizeof out->base);
            memcpy(out->tail, prof.tail, sizeof out->tail);
            memcpy(out->fixed, prof.fixed, sizeof out->fixed);
            out->time0 = prof.time0;
        }
        remat_step_profile_free(&prof);
        if (probes) *probes = r + 1;
    }
    remat_xfree(steps);
    remat_plan_free(&p);
    if (st != REMAT_OK) remat_chain_free(out);
    return st;
}

/* ---- budget ------------------------------------------------------------------------ */

remat_search_budget_opts remat_search_budget_opts_default(void) {
    remat_search_budget_opts o;
    memset(&o, 0, sizeof o);
    o.front_points = 24;
    o.check_plans = 8;
    o.max_rounds = 32;
    o.seed = 1;
    return o;
}

void remat_search_budget_result_free(remat_search_budget_result *r) {
    remat_plan_free(&r->plan);
    remat_xfree(r->front);
    remat_xfree(r->evaluated);
    memset(r, 0, sizeof *r);
}

remat_status remat_search_note_evaluated(remat_search_budget_result *out, const remat_plan *p, const remat_model *m,
                                         const remat_search_figures *f, remat_error *err) {
    remat_search_point x;
    memset(&x, 0, sizeof x);
    x.peak = f->peak;
    x.time_s = f->time_s;
    remat_plan_notation(p, m, x.label, sizeof x.label);
    for (int i = 0; i < out->n_evaluated; i++)
        if (!strcmp(out->evaluated[i].label, x.label)) return REMAT_OK;
    if (out->n_evaluated == out->cap_evaluated) {
        int cap = out->cap_evaluated ? 2 * out->cap_evaluated : 64;
        remat_search_point *e = remat_xrealloc(out->evaluated, (size_t)cap * sizeof *e, err);
        if (!e) return REMAT_ERR_NOMEM;
        out->evaluated = e;
        out->cap_evaluated = cap;
    }
    out->evaluated[out->n_evaluated++] = x;
    return REMAT_OK;
}

static void apply_choice(remat_plan *p, const remat_block_options *opts, const int *choice) {
    for (int b = 0; b < p->n_blocks; b++) p->blocks[b] = opts[b].v[choice[b]];
}

static double rel_diff(double a, double b) {
    double d = a > b ? a - b : b - a, m = (a > b ? a : b);
    return m > 0 ? d / m : d;
}

/* What the phases of the budget search hand each other. */
typedef struct budget_search {
    remat_sim *s;
    const remat_model *m;
    int nb;
    remat_block_options *opts;
    remat_chain chain;
    int *choice;
    remat_plan p; /* the plan of choice, simulated */
    remat_search_budget_result *out;
} budget_search;

/* Simulates the plan of bs->choice into *f; noted among the evaluated plans when note is set. */
static remat_status simulate_choice(budget_search *bs, const int *choice, int note, remat_search_figures *f,
                                    remat_error *err) {
    apply_choice(&bs->p, bs->opts, choice);
    remat_status st = remat_search_evaluate(bs->s, &bs->p, f, err);
    if (st == REMAT_OK && note) st = remat_search_note_evaluated(bs->out, &bs->p, bs->m, f, err);
    if (st == REMAT_OK) bs->out->simulations++;
    return st;
}

/* The answer's plan: a copy of bs->p. */
static remat_status keep_plan(budget_search *bs, remat_error *err) {
    remat_plan_free(&bs->out->plan);
    remat_status st = remat_plan_init_empty(bs->m, &bs->out->plan, err);
    if (st == REMAT_OK) memcpy(bs->out->plan.blocks, bs->p.blocks, (size_t)bs->nb * sizeof *bs->p.blocks);
    return st;
}

/* Checks the chain model against full simulations of random plans. */
static remat_status check_chain(budget_search *bs, const remat_search_budget_opts *o, remat_error *err) {
    uint64_t rng = o->seed;
    for (int c = 0; c < o->check_plans; c++) {
        for (int b = 0; b < bs->nb; b++) bs->choice[b] = (int)(remat_rng_next(&rng) % (uint64_t)bs->opts[b].n);
        double t;
        int64_t peak = remat_chain_peak(&bs->chain, bs->choice, &t);
        remat_search_figures f;
        remat_status st = simulate_choice(bs, bs->choice, 1, &f, err);
        if (st != REMAT_OK) return st;
        bs->out->checked++;
        if (f.peak_live != peak || rel_diff(f.time_s, t) > 1e-9) bs->out->mismatches++;
    }
    return REMAT_OK;
}

/* Solve, confirm, tighten: the chain model's plan under the budget, simulated; where the
 * simulation exceeds the budget, the model's budget lowered by the excess and solved again. */
static remat_status solve_rounds(budget_search *bs, int64_t budget, int max_rounds, remat_error *err) {
    remat_search_budget_result *out = bs->out;
    int64_t dp_budget = budget;
    out->min_peak = INT64_MAX;
    for (int round = 0; round < max_rounds; round++) {
        int found = 0;
        remat_chain_stats cs;
        remat_status st = remat_chain_solve(&bs->chain, dp_budget, bs->choice, NULL, NULL, &found, &cs, err);
        if (st != REMAT_OK) return st;
        if (round == 0) out->stats = cs;
        out->rounds = round + 1;
        if (!found) break;
        remat_search_figures f;
        if ((st = simulate_choice(bs, bs->choice, 1, &f, err)) != REMAT_OK) return st;
        if (f.peak <= budget) {
            out->found = 1;
            out->fig = f;
            return keep_plan(bs, err);
        }
        if (f.peak < out->min_peak) out->min_peak = f.peak;
        dp_budget -= f.peak - budget; /* the model under-estimated by this much here */
    }
    return REMAT_OK;
}

/* Nothing fits: the smallest peak the chain model reaches, simulated. */
static remat_status smallest_peak(budget_search *bs, remat_error *err) {
    int64_t mp;
    remat_status st = remat_chain_min_peak(&bs->chain, bs->choice, &mp, NULL, err);
    remat_search_figures f;
    if (st == REMAT_OK) st = simulate_choice(bs, bs->choice, 0, &f, err);
    if (st != REMAT_OK) return st;
    bs->out->fig = f;
    if (f.peak < bs->out->min_peak) bs->out->min_peak = f.peak;
    return keep_plan(bs, err);
}

/* The front's points no other simulated point beats (under the caching model the simulated
 * reserved peaks need not follow the chain model's live-byte order), peak descending. */
static void front_prune(remat_search_budget_result *out) {
    int k = 0;
    for (int i = 0; i < out->n_front; i++) {
        const remat_search_point *x = &out->front[i];
        int beaten = 0;
        for (int j = 0; j < out->n_front && !beaten && !x->chosen; j++) {
            const remat_search_point *y = &out->front[j];
            beaten = j != i && y->peak <= x->peak && y->time_s <= x->time_s &&
                     (y->peak < x->peak || y->time_s < x->time_s || j < i);
        }
        if (!beaten) out->front[k++] = *x;
    }
    out->n_front = k;
    for (int i = 1; i < k; i++) /* peak descending */
        for (int j = i; j > 0 && out->front[j - 1].peak < out->front[j].peak; j--) {
            remat_search_point tmp = out->front[j];
            out->front[j] = out->front[j - 1];
            out->front[j - 1] = tmp;
        }
}

/* The Pareto front of the chain model, each point simulated; the chosen plan marked (added
 * when the front lacks it). */
static remat_status simulate_front(budget_search *bs, int front_points, remat_error *err) {
    remat_search_budget_result *out = bs->out;
    const remat_model *m = bs->m;
    remat_chain_point *pts = NULL;
    int *chs = NULL, np = 0;
    remat_status st = remat_chain_front(&bs->chain, front_points, &pts, &chs, &np, err);
    if (st != REMAT_OK) return st;
    out->front = remat_xcalloc((size_t)np + 1, sizeof *out->front, err);
    if (!out->front) st = REMAT_ERR_NOMEM;
    char chosen[160];
    remat_plan_notation(&out->plan, m, chosen, sizeof chosen);
    int have_chosen = 0;
    for (int i = 0; i < np && st == REMAT_OK; i++) {
        remat_search_figures f;
        if ((st = simulate_choice(bs, chs + (size_t)i * bs->nb, 1, &f, err)) != REMAT_OK) break;
        if (!out->found && f.peak < out->min_peak) {
            /* nothing fits: under the caching model a front point can sit below the
             * chain model's own floor; the smallest simulated peak is the answer */
            out->min_peak = f.peak;
            out->fig = f;
            memcpy(out->plan.blocks, bs->p.blocks, (size_t)bs->nb * sizeof *bs->p.blocks);
        }
        remat_search_point *x = &out->front[out->n_front++];
        x->peak = f.peak;
        x->time_s = f.time_s;
        remat_plan_notation(&bs->p, m, x->label, sizeof x->label);
        x->chosen = out->found && !have_chosen && !strcmp(x->label, chosen);
        have_chosen |= x->chosen;
    }
    if (st == REMAT_OK && out->found && !have_chosen) {
        remat_search_point *x = &out->front[out->n_front++];
        x->peak = out->fig.peak;
        x->time_s = out->fig.time_s;
        x->chosen = 1;
        snprintf(x->label, sizeof x->label, "%s", chosen);
        for (int i = out->n_front - 1; i > 0 && out->front[i - 1].peak < out->front[i].peak; i--) {
            remat_search_point tmp = out->front[i];
            out->front[i] = out->front[i - 1];
            out->front[i - 1] = tmp;
        }
    }
    if (out->front) front_prune(out);
    remat_xfree(pts);
    remat_xfree(chs);
    return st;
}

remat_status remat_search_budget(remat_sim *s, int64_t budget, const remat_search_budget_opts *o,
                                 remat_search_budget_result *out, remat_error *err) {
    remat_search_budget_opts def = remat_search_budget_opts_default();
    if (!o) o = &def;
    memset(out, 0, sizeof *out);
    double t_start = remat_now_s();
    budget_search bs = {.s = s, .m = remat_sim_model(s), .out = out};
    bs.nb = bs.m->n_blocks;
    bs.choice = remat_xmalloc((size_t)(bs.nb ? bs.nb : 1) * sizeof *bs.choice, err);
    remat_status st = bs.choice ? remat_plan_init_empty(bs.m, &bs.p, err) : REMAT_ERR_NOMEM;
    if (st == REMAT_OK) st = remat_search_evaluate(s, &bs.p, &out->baseline, err);
    if (st == REMAT_OK) st = remat_search_note_evaluated(out, &bs.p, bs.m, &out->baseline, err);
    if (st == REMAT_OK) {
        out->simulations++;
        st = remat_search_block_options(bs.m, &bs.opts, err);
    }
    for (int b = 0; st == REMAT_OK && b < bs.nb; b++) out->options += bs.opts[b].n;
    if (st == REMAT_OK) st = remat_search_build_chain(s, bs.opts, &bs.chain, &out->probes, err);
    if (st == REMAT_OK) {
        out->simulations += out->probes;
        st = check_chain(&bs, o, err);
    }
    if (st == REMAT_OK) st = solve_rounds(&bs, budget, o->max_rounds, err);
    if (st == REMAT_OK && !out->found) st = smallest_peak(&bs, err);
    if (st == REMAT_OK && o->front_points > 0) st = simulate_front(&bs, o->front_points, err);
    out->seconds = remat_now_s() - t_start;
    remat_chain_free(&bs.chain);
    remat_search_options_free(bs.opts, bs.nb);
    remat_plan_free(&bs.p);
    remat_xfree(bs.choice);
    return st;
}
