/* chain.c - the Pareto-pruned dynamic programme over the chain model (sim/chain.h).
 *
 * Stage i holds the states reachable after choosing options for blocks 1..i
 * without exceeding the budget anywhere so far: (H per iteration, time, parent,
 * option). A state is dropped when another one has H <= in every iteration and
 * time <= (ties keep the earlier one). Because later constraints only grow with
 * H and time only adds, a dropped state can never lead to a better feasible
 * plan than the one that beat it: the result is the exact optimum of the model.
 * Options of a block that another option of the same block beats in delta,
 * local and time are removed before the programme runs.
 */
#include "sim/chain.h"

#include <stdlib.h>
#include <string.h>

remat_status remat_chain_init(remat_chain *c, int n_blocks, const int *n_opts, int n_iters, remat_error *err) {
    memset(c, 0, sizeof *c);
    if (n_iters < 1 || n_iters > REMAT_CHAIN_MAX_ITERS)
        return remat_error_set(err, REMAT_ERR_INPUT, "chain: iterations: expected 1..%d, got %d",
                               REMAT_CHAIN_MAX_ITERS, n_iters);
    c->n_blocks = n_blocks;
    c->n_iters = n_iters;
    c->n_opts = remat_xcalloc((size_t)(n_blocks ? n_blocks : 1), sizeof *c->n_opts, err);
    c->opts = remat_xcalloc((size_t)(n_blocks ? n_blocks : 1), sizeof *c->opts, err);
    if (!c->n_opts || !c->opts) {
        remat_chain_free(c);
        return REMAT_ERR_NOMEM;
    }
    for (int b = 0; b < n_blocks; b++) {
        if (n_opts[b] < 1) {
            remat_chain_free(c);
            return remat_error_set(err, REMAT_ERR_INPUT, "chain: block %d: expected at least one option", b);
        }
        c->n_opts[b] = n_opts[b];
        c->opts[b] = remat_xcalloc((size_t)n_opts[b], sizeof **c->opts, err);
        if (!c->opts[b]) {
            remat_chain_free(c);
            return REMAT_ERR_NOMEM;
        }
    }
    return REMAT_OK;
}

void remat_chain_free(remat_chain *c) {
    if (c->opts)
        for (int b = 0; b < c->n_blocks; b++) remat_xfree(c->opts[b]);
    remat_xfree(c->opts);
    remat_xfree(c->n_opts);
    memset(c, 0, sizeof *c);
}

int64_t remat_chain_peak(const remat_chain *c, const int *choice, double *time) {
    int64_t peak = 0;
    double t = c->time0;
    for (int b = 0; b < c->n_blocks; b++) t += c->opts[b][choice[b]].time;
    for (int it = 0; it < c->n_iters; it++) {
        int64_t h = 0, p = c->fixed[it];
        for (int b = 0; b < c->n_blocks; b++) {
            const remat_chain_opt *o = &c->opts[b][choice[b]];
            if (c->base[it] + h + o->local[it] > p) p = c->base[it] + h + o->local[it];
            h += o->delta[it];
        }
        if (c->base[it] + h + c->tail[it] > p) p = c->base[it] + h + c->tail[it];
        if (p > peak) peak = p;
    }
    if (time) *time = t;
    return peak;
}

/* ---- the programme ------------------------------------------------------------ */

typedef struct cand {
    int64_t h[REMAT_CHAIN_MAX_ITERS];
    double time;
    int32_t parent, opt;
} cand;

static int g_nit; /* iterations compared by the sort (set before each qsort; single-threaded use) */

static int cand_cmp_h(const void *a, const void *b) { /* H lexicographic, then time */
    const cand *x = a, *y = b;
    for (int i = 0; i < g_nit; i++)
        if (x->h[i] != y->h[i]) return x->h[i] < y->h[i] ? -1 : 1;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return (x->parent > y->parent) - (x->parent < y->parent);
}

static int cand_cmp_t(const void *a, const void *b) { /* time, then H */
    const cand *x = a, *y = b;
    if (x->time != y->time) return x->time < y->time ? -1 : 1;
    return cand_cmp_h(a, b);
}

static int h_le(const cand *a, const cand *b, int nit) {
    for (int i = 0; i < nit; i++)
        if (a->h[i] > b->h[i]) return 0;
    return 1;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Two iterations, candidates sorted by time: v[i] is dominated when an earlier one
 * has h[0] and h[1] no larger. A Fenwick tree over the ranks of h[0] holds the least
 * h[1] of the kept candidates up to each rank: O(n log n) instead of O(n x kept),
 * with the same survivors in the same order. -1 when out of memory. */
static int64_t prune2(cand *v, int64_t n) {
    int64_t *h0 = remat_xmalloc((size_t)n * sizeof *h0, NULL), *tree = remat_xmalloc((size_t)(n + 1) * sizeof *tree, NULL);
    if (!h0 || !tree) {
        remat_xfree(h0);
        remat_xfree(tree);
        return -1;
    }
    for (int64_t i = 0; i < n; i++) h0[i] = v[i].h[0];
    qsort(h0, (size_t)n, sizeof *h0, cmp_i64);
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++)
        if (u == 0 || h0[i] != h0[u - 1]) h0[u++] = h0[i];
    for (int64_t i = 0; i <= u; i++) tree[i] = INT64_MAX;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t lo = 0, hi = u; /* rank: h0[rank] == v[i].h[0], 1-based in the tree */
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (h0[mid] < v[i].h[0]) lo = mid + 1;
            else hi = mid;
        }
        int64_t least = INT64_MAX;
        for (int64_t r = lo + 1; r > 0; r -= r & -r)
            if (tree[r] < least) least = tree[r];
        if (least <= v[i].h[1]) continue; /* an earlier (faster) one has both H no larger */
        for (int64_t r = lo + 1; r <= u; r += r & -r)
            if (v[i].h[1] < tree[r]) tree[r] = v[i].h[1];
        v[k++] = v[i];
    }
    remat_xfree(h0);
    remat_xfree(tree);
    return k;
}

/* Keeps the non-dominated candidates in place; returns how many (-1: out of memory). */
static int64_t prune(cand *v, int64_t n, int nit) {
    if (n == 0) return 0;
    g_nit = nit;
    int64_t k = 0;
    if (nit == 1) {
        qsort(v, (size_t)n, sizeof *v, cand_cmp_h);
        double best = 0;
        for (int64_t i = 0; i < n; i++)
            if (k == 0 || v[i].time < best) {
                best = v[i].time;
                v[k++] = v[i];
            }
        return k;
    }
    qsort(v, (size_t)n, sizeof *v, cand_cmp_t);
    if (nit == 2) return prune2(v, n);
    for (int64_t i = 0; i < n; i++) {
        int dominated = 0;
        for (int64_t j = 0; j < k && !dominated; j++) dominated = h_le(&v[j], &v[i], nit);
        if (!dominated) v[k++] = v[i];
    }
    return k;
}

typedef struct stage { int32_t *parent, *opt; int64_t n; } stage;

int64_t remat_chain_front_cap(int n_blocks) {
    int64_t cap = REMAT_CHAIN_WORK / (n_blocks > 1 ? n_blocks : 1);
    return cap < 64 ? 64 : cap;
}

/* Keeps at most cap (>= 3) of the n states of a front in place, in their order
 * (contract in sim/chain.h): cap - 1 evenly spaced ones, ends included, and for
 * several iterations the one with the least largest H (the first such). */
static int64_t thin(cand *v, int64_t n, int64_t cap, int nit) {
    if (n <= cap) return n;
    int64_t keep = -1; /* written in order among the evenly spaced ones */
    if (nit > 1) {
        int64_t best = INT64_MAX;
        for (int64_t i = 0; i < n; i++) {
            int64_t mx = v[i].h[0];
            for (int it = 1; it < nit; it++)
                if (v[i].h[it] > mx) mx = v[i].h[it];
            if (mx < best) {
                best = mx;
                keep = i;
            }
        }
    }
    int64_t k = 0, m = cap - 1; /* evenly spaced: j * (n - 1) / (m - 1), strictly increasing as n > m */
    for (int64_t j = 0; j < m; j++) {
        int64_t idx = j * (n - 1) / (m - 1);
        if (keep >= 0 && keep < idx) { /* keep >= k: every index written so far is below it */
            v[k++] = v[keep];
            keep = -1;
        }
        if (idx == keep) keep = -1;
        v[k++] = v[idx];
    }
    return k;
}

/* One iteration: the states of a stage are sorted by H ascending with time
 * strictly descending (the Pareto front). Each option maps the feasible prefix of
 * that front to a list sorted the same way; a k-way merge of those lists by (H,
 * time), keeping a candidate only when it is faster than every one before it,
 * yields the next front directly (no sort of all candidates). work: 3 * nk ints. */
typedef struct merge_head { int64_t h; double t; int q; } merge_head;

static int head_less(const merge_head *a, const merge_head *b) {
    if (a->h != b->h) return a->h < b->h;
    if (a->t != b->t) return a->t < b->t;
    return a->q < b->q;
}

static void heap_down(merge_head *hp, int n, int i) {
    for (;;) {
        int l = 2 * i + 1, m = i;
        if (l < n && head_less(&hp[l], &hp[m])) m = l;
        if (l + 1 < n && head_less(&hp[l + 1], &hp[m])) m = l + 1;
        if (m == i) return;
        merge_head tmp = hp[i];
        hp[i] = hp[m];
        hp[m] = tmp;
        i = m;
    }
}

static int64_t merge_one(const remat_chain *c, int b, const int *kept, int nk, const cand *cur, int64_t n_cur,
                         int64_t budget, int ignore_time, cand *next, merge_head *work, int64_t *made) {
    merge_head *hp = work;
    int64_t *pos = (int64_t *)(work + nk), *len = pos + nk;
    int nh = 0;
    for (int q = 0; q < nk; q++) {
        const remat_chain_opt *o = &c->opts[b][kept[q]];
        int64_t lo = 0, hi = n_cur; /* feasible prefix: base + H + local <= budget */
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (c->base[0] + cur[mid].h[0] + o->local[0] <= budget) lo = mid + 1;
            else hi = mid;
        }
        len[q] = lo;
        pos[q] = 0;
        *made += lo;
        if (lo > 0) {
            hp[nh].h = cur[0].h[0] + o->delta[0];
            hp[nh].t = ignore_time ? 0 : cur[0].time + o->time;
            hp[nh].q = q;
            nh++;
        }
    }
    for (int i = nh / 2 - 1; i >= 0; i--) heap_down(hp, nh, i);
    int64_t n = 0;
    double best = 0;
    while (nh > 0) {
        merge_head top = hp[0];
        int q = top.q;
        if (n == 0 || top.t < best) {
            cand *x = &next[n++];
            x->h[0] = top.h;
            x->time = top.t;
            x->parent = (int32_t)pos[q];
            x->opt = kept[q];
            best = top.t;
        }
        if (++pos[q] < len[q]) {
            const remat_chain_opt *o = &c->opts[b][kept[q]];
            hp[0].h = cur[pos[q]].h[0] + o->delta[0];
            hp[0].t = ignore_time ? 0 : cur[pos[q]].time + o->time;
        } else {
            hp[0] = hp[--nh];
        }
        heap_down(hp, nh, 0);
    }
    return n;
}

/* Indices of the options of block b that no other option beats. */
static int kept_options(const remat_chain *c, int b, int *out) {
    int n = 0;
    for (int o = 0; o < c->n_opts[b]; o++) {
        const remat_chain_opt *x = &c->opts[b][o];
        int dominated = 0;
        for (int q = 0; q < c->n_opts[b] && !dominated; q++) {
            if (q == o) continue;
            const remat_chain_opt *y = &c->opts[b][q];
            int le = y->time <= x->time, lt = y->time < x->time;
            for (int it = 0; it < c->n_iters && le; it++) {
                le = y->delta[it] <= x->delta[it] && y->local[it] <= x->local[it];
                lt |= y->delta[it] < x->delta[it] || y->local[it] < x->local[it];
            }
            dominated = le && (lt || q < o);
        }
        if (!dominated) out[n++] = o;
    }
    return n;
}

/* The states of the DP over blocks: the current front, the next one, each stage's
 * back-pointers, and the scratch of one stage. */
typedef struct dp {
    const remat_chain *c;
    int64_t budget;
    int ignore_time;
    remat_chain_stats *stats;
    stage *stages;
    int *kept;
    merge_head *work;
    cand *cur, *next;
    int64_t n_cur, cap_cur, cap_next;
} dp;

/* Several iterations: every state times every kept option of block b that stays under the
 * budget in every iteration, then the dominated states pruned. Returns the count, -1 on
 * no memory (err set). */
static int64_t expand_multi(dp *d, int b, int nk, remat_error *err) {
    const remat_chain *c = d->c;
    const int nit = c->n_iters;
    int64_t n = 0;
    for (int64_t s = 0; s < d->n_cur; s++)
        for (int q = 0; q < nk; q++) {
            const remat_chain_opt *o = &c->opts[b][d->kept[q]];
            int ok = 1;
            for (int it = 0; it < nit && ok; it++) ok = c->base[it] + d->cur[s].h[it] + o->local[it] <= d->budget;
            if (!ok) continue;
            cand *x = &d->next[n++];
            for (int it = 0; it < nit; it++) x->h[it] = d->cur[s].h[it] + o->delta[it];
            x->time = d->ignore_time ? 0 : d->cur[s].time + o->time;
            x->parent = (int32_t)s;
            x->opt = d->kept[q];
        }
    if (d->stats) d->stats->states += n;
    if ((n = prune(d->next, n, nit)) < 0) {
        remat_error_set(err, REMAT_ERR_NOMEM, "chain: out of memory pruning %lld states", (long long)d->n_cur);
        return -1;
    }
    return n;
}

/* One block: the next front (thinned to the cap), its back-pointers kept, fronts swapped. */
static remat_status dp_stage(dp *d, int b, int64_t front_cap, remat_error *err) {
    const remat_chain *c = d->c;
    int nk = kept_options(c, b, d->kept);
    if (d->stats) d->stats->options_kept += nk;
    int64_t need = d->n_cur * nk;
    if (need > d->cap_next) {
        cand *v = remat_xrealloc(d->next, (size_t)need * sizeof *v, err);
        if (!v) return REMAT_ERR_NOMEM;
        d->next = v;
        d->cap_next = need;
    }
    int64_t n = 0;
    if (c->n_iters == 1) {
        int64_t made = 0;
        n = merge_one(c, b, d->kept, nk, d->cur, d->n_cur, d->budget, d->ignore_time, d->next, d->work, &made);
        if (d->stats) d->stats->states += made;
    } else if ((n = expand_multi(d, b, nk, err)) < 0) {
        return REMAT_ERR_NOMEM;
    }
    if (d->stats && n > d->stats->max_front) d->stats->max_front = n;
    if (n > front_cap) {
        n = thin(d->next, n, front_cap, c->n_iters);
        if (d->stats) d->stats->thinned++;
    }
    stage *sg = &d->stages[b];
    sg->parent = remat_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t), err);
    sg->opt = remat_xmalloc((size_t)(n ? n : 1) * sizeof(int32_t), err);
    if (!sg->parent || !sg->opt) return REMAT_ERR_NOMEM;
    for (int64_t s = 0; s < n; s++) {
        sg->parent[s] = d->next[s].parent;
        sg->opt[s] = d->next[s].opt;
    }
    sg->n = n;
    cand *tmp = d->cur;
    d->cur = d->next;
    d->next = tmp;
    int64_t cap_tmp = d->cap_cur;
    d->cap_cur = d->cap_next;
    d->cap_next = cap_tmp;
    d->n_cur = n;
    return REMAT_OK;
}

/* The fastest final state under the budget with the tail, traced back into choice. */
static int dp_best(const dp *d, int *choice) {
    const remat_chain *c = d->c;
    int64_t best = -1;
    for (int64_t s = 0; s < d->n_cur; s++) {
        int ok = 1;
        for (int it = 0; it < c->n_iters && ok; it++) ok = c->base[it] + d->cur[s].h[it] + c->tail[it] <= d->budget;
        if (ok && (best < 0 || d->cur[s].time < d->cur[best].time)) best = s;
    }
    if (best < 0) return 0;
    int64_t s = best;
    for (int b = c->n_blocks - 1; b >= 0; b--) {
        choice[b] = d->stages[b].opt[s];
        s = d->stages[b].parent[s];
    }
    return 1;
}

static remat_status solve(const remat_chain *c, int64_t budget, int ignore_time, int *choice, int *found,
                          remat_chain_stats *stats, remat_error *err) {
    *found = 0;
    int nit = c->n_iters, nb = c->n_blocks;
    for (int it = 0; it < nit; it++)
        if (c->fixed[it] > budget) return REMAT_OK;
    int max_opts = 1;
    for (int b = 0; b < nb; b++)
        if (c->n_opts[b] > max_opts) max_opts = c->n_opts[b];
    const int64_t front_cap = remat_chain_front_cap(nb);
    remat_status st = REMAT_OK;
    dp d = {.c = c, .budget = budget, .ignore_time = ignore_time, .stats = stats};
    d.stages = remat_xcalloc((size_t)(nb + 1), sizeof *d.stages, err);
    d.kept = remat_xmalloc((size_t)max_opts * sizeof *d.kept, err);
    d.work = remat_xmalloc((size_t)max_opts * 3 * sizeof *d.work, err);
    d.cur = remat_xmalloc(sizeof *d.cur, err);
    d.n_cur = d.cap_cur = 1;
    if (!d.stages || !d.kept || !d.cur || !d.work) st = REMAT_ERR_NOMEM;
    if (st == REMAT_OK) {
        memset(d.cur, 0, sizeof *d.cur);
        d.cur[0].parent = -1;
        d.cur[0].opt = -1;
    }
    for (int b = 0; b < nb && d.n_cur > 0 && st == REMAT_OK; b++) st = dp_stage(&d, b, front_cap, err);
    if (st == REMAT_OK && d.n_cur > 0) *found = dp_best(&d, choice);
    if (d.stages)
        for (int b = 0; b < nb; b++) {
            remat_xfree(d.stages[b].parent);
            remat_xfree(d.stages[b].opt);
        }
    remat_xfree(d.stages);
    remat_xfree(d.kept);
    remat_xfree(d.work);
    remat_xfree(d.cur);
    remat_xfree(d.next);
    return st;
}

remat_status remat_chain_solve(const remat_chain *c, int64_t budget, int *choice, int64_t *peak, double *time,
                               int *found, remat_chain_stats *stats, remat_error *err) {
    if (stats) memset(stats, 0, sizeof *stats);
    int *ch = remat_xmalloc((size_t)(c->n_blocks ? c->n_blocks : 1) * sizeof *ch, err);
    if (!ch) return REMAT_ERR_NOMEM;
    remat_status st = solve(c, budget, 0, ch, found, stats, err);
    if (st == REMAT_OK && *found) {
        double t;
        int64_t p = remat_chain_peak(c, ch, &t);
        memcpy(choice, ch, (size_t)c->n_blocks * sizeof *ch);
        if (peak) *peak = p;
        if (time) *time = t;
    }
    remat_xfree(ch);
    return st;
}

remat_status remat_chain_min_peak(const remat_chain *c, int *choice, int64_t *peak, double *time,
                                  remat_error *err) {
    int nb = c->n_blocks;
    int *ch = remat_xmalloc((size_t)(nb ? nb : 1) * sizeof *ch, err);
    if (!ch) return REMAT_ERR_NOMEM;
    /* an upper bound: each block's option with the least held bytes, then least local */
    for (int b = 0; b < nb; b++) {
        int best = 0;
        for (int o = 1; o < c->n_opts[b]; o++) {
            const remat_chain_opt *x = &c->opts[b][o], *y = &c->opts[b][best];
            if (x->delta[0] < y->delta[0] || (x->delta[0] == y->delta[0] && x->local[0] < y->local[0])) best = o;
        }
        ch[b] = best;
    }
    int64_t hi = remat_chain_peak(c, ch, NULL), lo = 0;
    for (int it = 0; it < c->n_iters; it++)
        if (c->fixed[it] > lo) lo = c->fixed[it];
    int *at_hi = remat_xmalloc((size_t)(nb ? nb : 1) * sizeof *at_hi, err); /* a choice whose peak <= hi */
    if (!at_hi) {
        remat_xfree(ch);
        return REMAT_ERR_NOMEM;
    }
    memcpy(at_hi, ch, (size_t)nb * sizeof *ch);
    remat_status st = REMAT_OK;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int found = 0;
        if ((st = solve(c, mid, 1, ch, &found, NULL, err)) != REMAT_OK) break;
        if (found) {
            hi = mid;
            memcpy(at_hi, ch, (size_t)nb * sizeof *ch);
        } else {
            lo = mid + 1;
        }
    }
    int found = 0;
    if (st == REMAT_OK) st = remat_chain_solve(c, hi, choice, peak, time, &found, NULL, err);
    if (st == REMAT_OK && !found) { /* a thinned front lost the fastest one: the choice that reached hi */
        memcpy(choice, at_hi, (size_t)nb * sizeof *ch);
        int64_t p = remat_chain_peak(c, choice, time);
        if (peak) *peak = p;
    }
    remat_xfree(at_hi);
    remat_xfree(ch);
    return st;
}

static int point_cmp(const void *a, const void *b) {
    const remat_chain_point *x = a, *y = b;
    if (x->peak != y->peak) return x->peak > y->peak ? -1 : 1;
    return (x->time > y->time) - (x->time < y->time);
}

/* Too many breakpoints: budgets sampled evenly from the top (pts[0]) to the minimum peak,
 * each solved; *n the points kept (the first, the solved ones, the minimum). */
static remat_status sample_budgets(const remat_chain *c, int max_points, remat_chain_point *pts, int *chs, int *n,
                                   remat_error *err) {
    int nb = c->n_blocks, found = 0;
    int64_t top = pts[0].peak, minp;
    double mt;
    int *mch = remat_xmalloc((size_t)(nb ? nb : 1) * sizeof *mch, err);
    if (!mch) return REMAT_ERR_NOMEM;
    remat_status st = remat_chain_min_peak(c, mch, &minp, &mt, err);
    int k = 1;
    for (int i = 1; st == REMAT_OK && i < max_points - 1; i++) {
        int64_t b = top - (int64_t)((double)(top - minp) * i / (max_points - 1));
        st = remat_chain_solve(c, b, chs + (size_t)k * nb, &pts[k].peak, &pts[k].time, &found, NULL, err);
        if (st == REMAT_OK && found) k++;
    }
    if (st == REMAT_OK) {
        pts[k].peak = minp;
        pts[k].time = mt;
        memcpy(chs + (size_t)k * nb, mch, (size_t)nb * sizeof *mch);
        *n = k + 1;
    }
    remat_xfree(mch);
    return st;
}

/* The points sorted by peak descending, those another beats (a lower peak in no more time,
 * or the same peak) dropped; *chs replaced by the kept points' choices. */
static remat_status sort_front(const remat_chain *c, remat_chain_point *pts, int **chs, int *n_io, remat_error *err) {
    int nb = c->n_blocks, n = *n_io;
    int *order = remat_xmalloc((size_t)(n ? n : 1) * sizeof *order, err);
    remat_chain_point *sp = remat_xmalloc((size_t)(n ? n : 1) * sizeof *sp, err);
    int *sc = remat_xmalloc((size_t)(n ? n : 1) * (size_t)(nb ? nb : 1) * sizeof *sc, err);
    if (!order || !sp || !sc) {
        remat_xfree(order);
        remat_xfree(sp);
        remat_xfree(sc);
        return REMAT_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) sp[i] = pts[i];
    /* sort indices by (peak desc, time asc) */
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++) {
        int x = order[i], j = i;
        while (j > 0 && point_cmp(&sp[order[j - 1]], &sp[x]) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        const remat_chain_point *p = &sp[order[i]];
        /* beaten by a later point (lower peak) with time <= its time? */
        int beaten = 0;
        for (int j = i + 1; j < n && !beaten; j++) beaten = sp[order[j]].time <= p->time;
        if (m > 0 && pts[m - 1].peak == p->peak) beaten = 1;
        if (beaten) continue;
        pts[m] = *p;
        memcpy(sc + (size_t)m * nb, *chs + (size_t)order[i] * nb, (size_t)nb * sizeof *sc);
        m++;
    }
    remat_xfree(*chs);
    remat_xfree(sp);
    remat_xfree(order);
    *chs = sc;
    *n_io = m;
    return REMAT_OK;
}

remat_status remat_chain_front(const remat_chain *c, int max_points, remat_chain_point **points, int **choices,
                               int *n_points, remat_error *err) {
    int nb = c->n_blocks;
    if (max_points < 2) max_points = 2;
    *points = NULL;
    *choices = NULL;
    *n_points = 0;
    remat_chain_point *pts = remat_xmalloc((size_t)max_points * sizeof *pts, err);
    int *chs = remat_xmalloc((size_t)max_points * (size_t)(nb ? nb : 1) * sizeof *chs, err);
    if (!pts || !chs) {
        remat_xfree(pts);
        remat_xfree(chs);
        return REMAT_ERR_NOMEM;
    }
    int n = 0, found = 0, complete = 0;
    int64_t budget = INT64_MAX;
    remat_status st = REMAT_OK;
    /* walk the breakpoints: the fastest plan, then the fastest one below its peak, ... */
    while (n < max_points) {
        st = remat_chain_solve(c, budget, chs + (size_t)n * nb, &pts[n].peak, &pts[n].time, &found, NULL, err);
        if (st != REMAT_OK) break;
        if (!found) {
            complete = 1;
            break;
        }
        budget = pts[n].peak - 1;
        n++;
    }
    if (st == REMAT_OK && !complete) st = sample_budgets(c, max_points, pts, chs, &n, err);
    if (st == REMAT_OK) st = sort_front(c, pts, &chs, &n, err);
    if (st != REMAT_OK) {
        remat_xfree(pts);
        remat_xfree(chs);
        return st;
    }
    *points = pts;
    *choices = chs;
    *n_points = n;
    return REMAT_OK;
}
