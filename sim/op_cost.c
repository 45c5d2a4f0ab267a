/* op_cost.c - op durations and non-zero counts from a baseline trace (rules in op_cost.h).
 *
 * Tables are sorted arrays of (key, median) built once; a prediction is at most
 * four binary searches. Keys use -2 for a field the rule ignores.
 */
#include "sim/op_cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WILD (-2)

typedef struct cost_key { int64_t k[4]; } cost_key; /* op, layer, phase, elems per step */

typedef struct cost_row {
    cost_key key;
    double ep;         /* elements per time step */
    double per_step;   /* duration / t_steps */
    double per_elem;   /* duration / elems (NAN when elems == 0) */
    double dur;
} cost_row;

typedef struct cost_group {
    cost_key key;
    double ep, per_step, per_elem, dur; /* ep: median; the times: least (per_elem NAN when no record had elements) */
} cost_group;

typedef struct cost_table { cost_group *g; int64_t n; } cost_table;

enum { TAB_SHAPE, TAB_PHASE, TAB_LAYER, TAB_KIND, TAB_COUNT, TAB_RAW = TAB_COUNT };

struct remat_op_cost_model {
    cost_table tab[TAB_COUNT];
    cost_table probe; /* the trace's probe, keyed as TAB_SHAPE, its best step per batch (n 0: none) */
    int probe_at_rec;  /* 1: the probe's best step at the recorded batch beat the recording's */
    cost_table ckpt;   /* the probe's checkpointed steps, each op's least (TAB_RAW keys; n 0: none) */
    cost_table plain_rec; /* the probe's plain steps at the recorded batch, each op's least (TAB_SHAPE keys) */
    double comp[REMAT_COMP_COUNT], decomp[REMAT_COMP_COUNT];
};

static int key_cmp(const cost_key *a, const cost_key *b) {
    for (int i = 0; i < 4; i++)
        if (a->k[i] != b->k[i]) return a->k[i] < b->k[i] ? -1 : 1;
    return 0;
}

static int row_cmp(const void *a, const void *b) { return key_cmp(&((const cost_row *)a)->key, &((const cost_row *)b)->key); }

static int dbl_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The least of the finite values among v[0..n); NAN if none. An op's time is the
 * least over its records: other work on the machine only ever adds time. */
static double least(const double *v, int64_t n) {
    double m = NAN;
    for (int64_t i = 0; i < n; i++)
        if (!isnan(v[i]) && (isnan(m) || v[i] < m)) m = v[i];
    return m;
}

/* Median of the finite values among v[0..n) (sorted in place); NAN if none. */
static double median(double *v, int64_t n) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (!isnan(v[i])) v[m++] = v[i];
    if (m == 0) return NAN;
    qsort(v, (size_t)m, sizeof *v, dbl_cmp);
    return (m & 1) ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}

static int phase_key(int phase) { return phase == REMAT_PHASE_RECOMPUTE ? REMAT_PHASE_FORWARD : phase; }

static cost_key make_key(const remat_op_record *r, int tab) {
    cost_key k = {{r->op, r->layer, phase_key(r->phase), r->t_steps > 0 ? r->elems / r->t_steps : r->elems}};
    if (tab == TAB_RAW) { /* as TAB_SHAPE, RECOMPUTE its own phase */
        k.k[2] = r->phase;
        return k;
    }
    if (tab >= TAB_PHASE) k.k[3] = WILD;
    if (tab >= TAB_LAYER) k.k[2] = WILD;
    if (tab >= TAB_KIND) k.k[1] = WILD;
    return k;
}

/* Groups of ops[0..n) under the keys of tab; keep (n_keep entries, by iter): only the
 * records of the steps it marks (and those before the first, iter -1); NULL: every
 * record. */
static remat_status build_table(const remat_op_record *ops, int64_t n, const uint8_t *keep, int32_t n_keep, int tab,
                                cost_table *out, remat_error *err) {
    out->g = NULL;
    out->n = 0;
    if (n == 0) return REMAT_OK;
    cost_row *rows = remat_xmalloc((size_t)n * sizeof *rows, err);
    double *v = remat_xmalloc((size_t)n * sizeof *v, err);
    out->g = remat_xmalloc((size_t)n * sizeof *out->g, err);
    if (!rows || !v || !out->g) {
        remat_xfree(rows);
        remat_xfree(v);
        remat_xfree(out->g);
        out->g = NULL;
        return REMAT_ERR_NOMEM;
    }
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        const remat_op_record *r = &ops[i];
        if (keep && r->iter >= 0 && (r->iter >= n_keep || !keep[r->iter])) continue;
        double d = r->t_end - r->t_start;
        if (!(d >= 0)) d = 0;
        rows[m].key = make_key(r, tab);
        rows[m].dur = d;
        rows[m].ep = (double)(r->t_steps > 0 ? r->elems / r->t_steps : r->elems);
        rows[m].per_step = d / (r->t_steps > 0 ? r->t_steps : 1);
        rows[m].per_elem = r->elems > 0 ? d / (double)r->elems : NAN;
        m++;
    }
    n = m;
    qsort(rows, (size_t)n, sizeof *rows, row_cmp);
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && key_cmp(&rows[j].key, &rows[i].key) == 0) j++;
        cost_group *g = &out->g[out->n++];
        g->key = rows[i].key;
        for (int64_t x = i; x < j; x++) v[x - i] = rows[x].per_step;
        g->per_step = least(v, j - i);
        for (int64_t x = i; x < j; x++) v[x - i] = rows[x].per_elem;
        g->per_elem = least(v, j - i);
        for (int64_t x = i; x < j; x++) v[x - i] = rows[x].dur;
        g->dur = least(v, j - i);
        for (int64_t x = i; x < j; x++) v[x - i] = rows[x].ep;
        g->ep = median(v, j - i);
        i = j;
    }
    remat_xfree(rows);
    remat_xfree(v);
    return REMAT_OK;
}

static const cost_group *find(const cost_table *t, const cost_key *k) {
    int64_t lo = 0, hi = t->n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        int c = key_cmp(&t->g[mid].key, k);
        if (c == 0) return &t->g[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

int32_t remat_op_cost_best_step(const remat_trace *base) {
    int32_t best = -1;
    for (int32_t i = 1; i < base->n_iters; i++)
        if (best < 0 || base->iters[i].step_time_s < base->iters[best].step_time_s) best = i;
    return best;
}

/* Elements and seconds of the ops of each step of ops[0..n) (iter 0 .. n_it-1). */
static void step_totals(const remat_op_record *ops, int64_t n, int32_t n_it, int64_t *elems, double *secs) {
    for (int32_t i = 0; i < n_it; i++) elems[i] = 0, secs[i] = 0;
    for (int64_t i = 0; i < n; i++)
        if (ops[i].iter >= 0 && ops[i].iter < n_it) {
            elems[ops[i].iter] += ops[i].elems;
            secs[ops[i].iter] += ops[i].t_end - ops[i].t_start;
        }
}

/* The probe's best steps: of its plain steps of one batch (the same elements in all), the
 * one whose ops took least, marked in keep[0..n_it) (as a measured step time is a run's
 * best step, not the sum of each op's least over the steps); its checkpointed steps
 * (those with RECOMPUTE records) in keep_ck and its plain steps of the recorded step's
 * elements (rec_elems) in keep_rec, all of them (the checkpointed ratios compare each
 * op's least with its least). *at_rec: 1 when its best plain step of rec_elems took less
 * than rec_s, the recording's. */
static remat_status best_probe_steps(const remat_trace *base, int64_t rec_elems, double rec_s, uint8_t **keep,
                                     uint8_t **keep_ck, uint8_t **keep_rec, int32_t *n_it, int *at_rec,
                                     remat_error *err) {
    int32_t n = 0;
    for (int64_t i = 0; i < base->n_probe_ops; i++)
        if (base->probe_ops[i].iter + 1 > n) n = base->probe_ops[i].iter + 1;
    *n_it = n;
    *at_rec = 0;
    size_t cap = (size_t)(n ? n : 1);
    *keep = remat_xcalloc(cap, 1, err);
    *keep_ck = remat_xcalloc(cap, 1, err);
    *keep_rec = remat_xcalloc(cap, 1, err);
    uint8_t *ck = remat_xcalloc(cap, 1, err);
    int64_t *elems = remat_xmalloc(cap * sizeof *elems, err);
    double *secs = remat_xmalloc(cap * sizeof *secs, err);
    remat_status st = *keep && *keep_ck && *keep_rec && ck && elems && secs ? REMAT_OK : REMAT_ERR_NOMEM;
    if (st == REMAT_OK) {
        step_totals(base->probe_ops, base->n_probe_ops, n, elems, secs);
        for (int64_t i = 0; i < base->n_probe_ops; i++)
            if (base->probe_ops[i].phase == REMAT_PHASE_RECOMPUTE && base->probe_ops[i].iter >= 0)
                ck[base->probe_ops[i].iter] = 1;
        for (int32_t i = 0; i < n; i++) {
            if (ck[i]) {
                (*keep_ck)[i] = 1;
                continue;
            }
            if (elems[i] == rec_elems) (*keep_rec)[i] = 1;
            int best = 1;
            for (int32_t j = 0; j < n && best; j++)
                if (j != i && !ck[j] && elems[j] == elems[i] && (secs[j] < secs[i] || (secs[j] == secs[i] && j < i)))
                    best = 0;
            (*keep)[i] = (uint8_t)best;
            if (best && elems[i] == rec_elems && secs[i] < rec_s) *at_rec = 1;
        }
    }
    remat_xfree(ck);
    remat_xfree(elems);
    remat_xfree(secs);
    if (st != REMAT_OK) {
        remat_xfree(*keep);
        remat_xfree(*keep_ck);
        remat_xfree(*keep_rec);
        *keep = *keep_ck = *keep_rec = NULL;
    }
    return st;
}

remat_op_cost_model *remat_op_cost_init(const remat_trace *base, remat_error *err) {
    remat_op_cost_model *m = remat_xcalloc(1, sizeof *m, err);
    if (!m) return NULL;
    int32_t best = remat_op_cost_best_step(base), n_it = best + 1;
    uint8_t *keep = remat_xcalloc((size_t)(n_it > 0 ? n_it : 1), 1, err);
    if (!keep) {
        remat_op_cost_free(m);
        return NULL;
    }
    if (best >= 0) keep[best] = 1;
    for (int t = 0; t < TAB_COUNT; t++)
        if (build_table(base->ops, base->n_ops, best >= 0 ? keep : NULL, n_it, t, &m->tab[t], err) != REMAT_OK) {
            remat_xfree(keep);
            remat_op_cost_free(m);
            return NULL;
        }
    remat_xfree(keep);
    keep = NULL;
    /* the probe's batches (docs/trace-schema.md): every size of an op is a point of its
     * cost curve, from the probe's best step of that batch */
    if (remat_trace_has_probe(base)) {
        int32_t rec = best >= 0 ? best : 0;
        int64_t rec_elems = 0;
        double rec_s = 0;
        for (int64_t i = 0; i < base->n_ops; i++)
            if (base->ops[i].iter == rec) rec_elems += base->ops[i].elems, rec_s += base->ops[i].t_end - base->ops[i].t_start;
        uint8_t *keep_ck = NULL, *keep_rec = NULL;
        if (best_probe_steps(base, rec_elems, rec_s, &keep, &keep_ck, &keep_rec, &n_it, &m->probe_at_rec, err) !=
                REMAT_OK ||
            build_table(base->probe_ops, base->n_probe_ops, keep, n_it, TAB_SHAPE, &m->probe, err) != REMAT_OK ||
            build_table(base->probe_ops, base->n_probe_ops, keep_ck, n_it, TAB_RAW, &m->ckpt, err) != REMAT_OK ||
            build_table(base->probe_ops, base->n_probe_ops, keep_rec, n_it, TAB_SHAPE, &m->plain_rec, err) !=
                REMAT_OK) {
            remat_xfree(keep);
            remat_xfree(keep_ck);
            remat_xfree(keep_rec);
            remat_op_cost_free(m);
            return NULL;
        }
        remat_xfree(keep);
        remat_xfree(keep_ck);
        remat_xfree(keep_rec);
    }
    for (int c = 0; c < REMAT_COMP_COUNT; c++) {
        m->comp[c] = base->compress_s_per_elem[c] > 0 ? base->compress_s_per_elem[c] : 0;
        m->decomp[c] = base->decompress_s_per_elem[c] > 0 ? base->decompress_s_per_elem[c] : 0;
    }
    return m;
}

void remat_op_cost_free(remat_op_cost_model *m) {
    if (!m) return;
    for (int t = 0; t < TAB_COUNT; t++) remat_xfree(m->tab[t].g);
    remat_xfree(m->probe.g);
    remat_xfree(m->ckpt.g);
    remat_xfree(m->plain_rec.g);
    remat_xfree(m);
}

static double per_elem_cost(const cost_group *g, const remat_op_record *op) {
    if (op->elems > 0 && !isnan(g->per_elem)) return g->per_elem * (double)op->elems;
    return isnan(g->dur) ? 0 : g->dur;
}

/* The groups of t with the (op, layer, phase) of k (any size): [*lo, *hi). */
static void phase_range(const cost_table *t, const cost_key *k, int64_t *lo, int64_t *hi) {
    int64_t a = 0, b = t->n;
    while (a < b) { /* the first group whose (op, layer, phase) is >= k's */
        int64_t mid = (a + b) / 2;
        cost_key g = t->g[mid].key;
        g.k[3] = WILD;
        if (key_cmp(&g, k) < 0) a = mid + 1;
        else b = mid;
    }
    *lo = a;
    for (b = a; b < t->n; b++) {
        cost_key g = t->g[b].key;
        g.k[3] = WILD;
        if (key_cmp(&g, k) != 0) break;
    }
    *hi = b;
}

/* A measured size of an op: elements per time step, seconds per time step. */
typedef struct cost_point { double ep, per_step; } cost_point;

/* The measured sizes of the op with key k (TAB_PHASE form) in the recording's and the
 * probe's tables, merged by size (the least where both have it), ascending; at most
 * cap. Returns how many. */
static int64_t cost_points(const cost_table *rec, const cost_table *probe, const cost_key *k, cost_point *out,
                           int64_t cap) {
    int64_t n = 0;
    const cost_table *tabs[2] = {rec, probe};
    for (int ti = 0; ti < 2; ti++) {
        int64_t lo, hi;
        phase_range(tabs[ti], k, &lo, &hi);
        for (int64_t i = lo; i < hi; i++) {
            const cost_group *g = &tabs[ti]->g[i];
            if (isnan(g->per_step) || !(g->ep > 0)) continue;
            int64_t j = 0;
            while (j < n && out[j].ep != g->ep) j++;
            if (j < n) {
                if (g->per_step < out[j].per_step) out[j].per_step = g->per_step;
                continue;
            }
            if (n == cap) continue;
            for (j = n; j > 0 && out[j - 1].ep > g->ep; j--) out[j] = out[j - 1];
            out[j] = (cost_point){g->ep, g->per_step};
            n++;
        }
    }
    return n;
}

/* Rule 1b: seconds per time step at ep elements per step on the piecewise line through
 * the measured sizes p[0..n) (ascending, n >= 2): the segment that holds ep, or the
 * first or last one beyond them, from its end nearer to ep. Each segment's slope is
 * kept within [0, its smaller size's cost per element]: a falling line (noise) is read
 * as flat, one steeper than proportional (noise: a preempted op) as proportional. */
static double piecewise_per_step(const cost_point *p, int64_t n, double ep) {
    int64_t s = 0;
    while (s + 2 < n && ep > p[s + 1].ep) s++;
    const cost_point *lo = &p[s], *hi = &p[s + 1];
    double slope = (hi->per_step - lo->per_step) / (hi->ep - lo->ep);
    if (slope < 0) slope = 0;
    if (slope > lo->per_step / lo->ep) slope = lo->per_step / lo->ep;
    const cost_point *near = fabs(ep - lo->ep) <= fabs(ep - hi->ep) ? lo : hi;
    double v = near->per_step + slope * (ep - near->ep);
    return v > 0 ? v : near->per_step * ep / near->ep;
}

enum { MAX_POINTS = 16 }; /* sizes of one op kept for rule 1b (the recording's and a probe's few) */

static double op_cost_plain(const remat_op_cost_model *m, const remat_op_record *op, remat_compressor c,
                            remat_op_cost_rule *rule);

double remat_op_cost_predict(const remat_op_cost_model *m, const remat_op_record *op, remat_compressor c,
                             remat_op_cost_rule *rule) {
    return remat_op_cost_predict_in(m, op, c, 0, rule);
}

/* The probe's checkpointed steps against plain, for an op of a checkpointed block: its
 * least seconds over them, over the least of the same op (a recomputation: the
 * forward's) over the probe's plain steps at the recorded size (the like statistic: a
 * ratio of one step's op to another step's carries both steps' noise; without such
 * steps, the plain figure at that size), both at the recorded size of the op's (kind,
 * layer, phase); 1 when either is missing. Kept within [0.5, 2]. */
static double ckpt_ratio(const remat_op_cost_model *m, const remat_op_record *op) {
    cost_key k = make_key(op, TAB_RAW);
    k.k[3] = WILD;
    int64_t lo, hi;
    phase_range(&m->ckpt, &k, &lo, &hi);
    if (hi != lo + 1 || isnan(m->ckpt.g[lo].per_step)) return 1; /* none, or several sizes: not the every-block step */
    const cost_group *c = &m->ckpt.g[lo];
    cost_key kp = c->key;
    kp.k[2] = phase_key((int)kp.k[2]);
    const cost_group *g = find(&m->tab[TAB_SHAPE], &kp), *pg = m->probe_at_rec ? find(&m->probe, &kp) : NULL;
    if (pg && !isnan(pg->per_step)) g = pg;
    const cost_group *lg = find(&m->plain_rec, &kp);
    if (lg && !isnan(lg->per_step)) g = lg;
    if (!g || !(g->per_step > 0)) return 1;
    double r = c->per_step / g->per_step;
    return r < 0.5 ? 0.5 : r > 2 ? 2 : r;
}

double remat_op_cost_predict_in(const remat_op_cost_model *m, const remat_op_record *op, remat_compressor c,
                                int checkpointed, remat_op_cost_rule *rule) {
    double v = op_cost_plain(m, op, c, rule);
    if (checkpointed && m->ckpt.n > 0 && (op->phase == REMAT_PHASE_FORWARD || op->phase == REMAT_PHASE_RECOMPUTE ||
                                          op->phase == REMAT_PHASE_BACKWARD))
        v *= ckpt_ratio(m, op);
    return v;
}

/* An op's seconds by the rules of op_cost.h, as in plain backpropagation. */
static double op_cost_plain(const remat_op_cost_model *m, const remat_op_record *op, remat_compressor c,
                            remat_op_cost_rule *rule) {
    remat_op_cost_rule dummy;
    if (!rule) rule = &dummy;
    cost_key k = make_key(op, TAB_SHAPE);
    const cost_group *g = find(&m->tab[TAB_SHAPE], &k);
    int64_t steps = op->t_steps > 0 ? op->t_steps : 1;
    if (g && !isnan(g->per_step)) {
        /* the probe's best step at the recorded batch instead, when it took less */
        const cost_group *pg = m->probe_at_rec ? find(&m->probe, &k) : NULL;
        *rule = REMAT_OP_COST_SAME_SHAPE;
        return (pg && !isnan(pg->per_step) ? pg->per_step : g->per_step) * steps;
    }
    if (m->probe.n > 0) {
        cost_key kp = make_key(op, TAB_PHASE);
        cost_point pts[MAX_POINTS];
        int64_t n = cost_points(&m->tab[TAB_SHAPE], &m->probe, &kp, pts, MAX_POINTS);
        if (n >= 2) {
            *rule = REMAT_OP_COST_AFFINE;
            return piecewise_per_step(pts, n, (double)op->elems / steps) * steps;
        }
    }
    int is_comp = op->op == REMAT_OP_COMPRESS, is_decomp = op->op == REMAT_OP_DECOMPRESS;
    if ((is_comp || is_decomp) && (int)c >= 0 && c < REMAT_COMP_COUNT) {
        double rate = is_comp ? m->comp[c] : m->decomp[c];
        if (rate > 0) {
            *rule = REMAT_OP_COST_CALIBRATION;
            return rate * (double)op->elems;
        }
    }
    static const remat_op_cost_rule rules[] = {REMAT_OP_COST_SAME_SHAPE, REMAT_OP_COST_PER_ELEM_PHASE,
                                               REMAT_OP_COST_PER_ELEM_LAYER, REMAT_OP_COST_PER_ELEM_KIND};
    for (int t = TAB_PHASE; t < TAB_COUNT; t++) {
        k = make_key(op, t);
        g = find(&m->tab[t], &k);
        if (g) {
            *rule = rules[t];
            return per_elem_cost(g, op);
        }
    }
    if (is_comp || is_decomp) {
        remat_op_record copy = *op;
        copy.op = REMAT_OP_COPY;
        k = make_key(&copy, TAB_KIND);
        g = find(&m->tab[TAB_KIND], &k);
        if (g) {
            *rule = REMAT_OP_COST_PER_ELEM_KIND;
            return per_elem_cost(g, op);
        }
    }
    *rule = REMAT_OP_COST_UNPRICED;
    return 0.0;
}

/* ---- non-zeros ---------------------------------------------------------------- */

typedef struct nnz_row { int32_t iter, layer; int64_t nnz, elems; } nnz_row;

struct remat_nnz_table {
    nnz_row *rows;
    int64_t n;
    int32_t n_iters; /* recorded iterations (max iter + 1) */
};

static int nnz_cmp(const void *a, const void *b) {
    const nnz_row *x = a, *y = b;
    if (x->iter != y->iter) return x->iter < y->iter ? -1 : 1;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return (x->elems > y->elems) - (x->elems < y->elems);
}

remat_nnz_table *remat_nnz_table_init(const remat_trace *base, remat_error *err) {
    remat_nnz_table *t = remat_xcalloc(1, sizeof *t, err);
    if (!t) return NULL;
    int64_t n = 0;
    for (int64_t i = 0; i < base->n_events; i++)
        if (base->events[i].kind == REMAT_EVENT_ALLOC && base->events[i].nnz >= 0) n++;
    t->rows = remat_xmalloc((size_t)(n ? n : 1) * sizeof *t->rows, err);
    if (!t->rows) {
        remat_xfree(t);
        return NULL;
    }
    for (int64_t i = 0; i < base->n_events; i++) {
        const remat_event *e = &base->events[i];
        if (e->kind != REMAT_EVENT_ALLOC || e->nnz < 0) continue;
        int64_t elems = 1;
        for (int d = 0; d < e->ndim && d < 4; d++) elems *= e->dims[d];
        nnz_row r = {e->iter, e->layer, e->nnz, elems};
        t->rows[t->n++] = r;
        if (e->iter + 1 > t->n_iters) t->n_iters = e->iter + 1;
    }
    qsort(t->rows, (size_t)t->n, sizeof *t->rows, nnz_cmp);
    return t;
}

void remat_nnz_table_free(remat_nnz_table *t) {
    if (!t) return;
    remat_xfree(t->rows);
    remat_xfree(t);
}

int64_t remat_nnz_table_size(const remat_nnz_table *t) { return t->n; }

int64_t remat_nnz_table_lookup(const remat_nnz_table *t, int iter, int layer, int64_t elems, int *found) {
    int dummy;
    if (!found) found = &dummy;
    *found = 0;
    if (t->n == 0 || t->n_iters == 0) return elems;
    if (iter < 0) iter = 0;
    int32_t it = iter % t->n_iters;
    int64_t lo = 0, hi = t->n;
    while (lo < hi) { /* first row with (iter, layer) >= (it, layer) */
        int64_t mid = (lo + hi) / 2;
        const nnz_row *r = &t->rows[mid];
        if (r->iter < it || (r->iter == it && r->layer < layer)) lo = mid + 1;
        else hi = mid;
    }
    const nnz_row *best = NULL;
    for (int64_t i = lo; i < t->n && t->rows[i].iter == it && t->rows[i].layer == layer; i++) {
        if (t->rows[i].elems == elems) {
            *found = 1;
            return t->rows[i].nnz;
        }
        if (!best || t->rows[i].elems > best->elems) best = &t->rows[i];
    }
    if (!best || best->elems <= 0) return elems;
    *found = 2;
    double v = (double)best->nnz * (double)elems / (double)best->elems;
    int64_t r = (int64_t)llround(v);
    return r < 0 ? 0 : (r > elems ? elems : r);
}
