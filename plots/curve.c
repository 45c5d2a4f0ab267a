/* curve.c - replay a trace's events into the live and reserved memory curves of
 * one iteration, find the peaks and the phases, reduce for drawing. Modelling
 * assumptions are in curve.h. */
#include "plots/curve.h"

#include <string.h>

#include "core/alloc/alloc_model.h"
#include "plots/reduce.h"

remat_curve_opts remat_curve_opts_default(void) {
    remat_curve_opts o;
    memset(&o, 0, sizeof o);
    o.iter = -1;
    o.x = REMAT_CURVE_X_TIME;
    o.max_points = REMAT_REDUCE_DEFAULT_POINTS;
    o.reserved = 1;
    return o;
}

static void series_free(remat_series *s) {
    remat_xfree(s->x);
    remat_xfree(s->bytes);
    remat_xfree(s->event);
    memset(s, 0, sizeof *s);
}

void remat_mem_curve_free(remat_mem_curve *c) {
    if (!c) return;
    series_free(&c->live);
    series_free(&c->reserved);
    remat_xfree(c->spans);
    memset(c, 0, sizeof *c);
}

/* The iteration's slice [*lo, *hi) and its number. */
static remat_status find_slice(const remat_trace *t, const char *origin, int want, int *iter, int64_t *lo,
                               int64_t *hi, remat_error *err) {
    if (t->n_iters > 0) {
        int it = want < 0 ? t->n_iters - 1 : want;
        if (it >= t->n_iters)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: --iter: expected 0..%d (the trace has %d iterations), got %d",
                                   origin, t->n_iters - 1, t->n_iters, want);
        const remat_iter_summary *s = &t->iters[it];
        if (s->first_event < 0 || s->n_events <= 0 || s->first_event > t->n_events ||
            s->n_events > t->n_events - s->first_event)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "%s: iters[%d]: expected first_event/n_events inside the %lld events, got %lld/%lld",
                                   origin, it, (long long)t->n_events, (long long)s->first_event,
                                   (long long)s->n_events);
        *iter = it;
        *lo = s->first_event;
        *hi = s->first_event + s->n_events;
        return REMAT_OK;
    }
    int it = want;
    if (it < 0) {
        it = 0;
        for (int64_t i = 0; i < t->n_events; i++)
            if (t->events[i].iter > it) it = t->events[i].iter;
    }
    int64_t a = -1, b = -1;
    for (int64_t i = 0; i < t->n_events; i++)
        if (t->events[i].iter == it) {
            if (a < 0) a = i;
            b = i;
        }
    if (a < 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: --iter: no events of iteration %d in the trace", origin, it);
    *iter = it;
    *lo = a;
    *hi = b + 1;
    return REMAT_OK;
}

typedef struct replay {
    int64_t *bytes;     /* per tensor id: bytes of its live alloc */
    uint8_t *role;
    uint8_t *live;
    int64_t n_ids;
    int64_t live_bytes;
    int64_t by_role[REMAT_ROLE_COUNT];
    remat_alloc_model *am;
} replay;

static remat_status replay_event(replay *r, const remat_trace *t, int64_t i, const char *origin, remat_error *err) {
    const remat_event *e = &t->events[i];
    int64_t id = e->tensor;
    if (id < 0 || id >= r->n_ids)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld].tensor: expected >= 0, got %lld", origin,
                               (long long)i, (long long)id);
    if (e->kind == REMAT_EVENT_ALLOC) {
        if (r->live[id])
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld]: alloc of tensor %lld that is already live",
                                   origin, (long long)i, (long long)id);
        if (e->bytes < 0)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld].bytes: expected >= 0, got %lld", origin,
                                   (long long)i, (long long)e->bytes);
        if (e->role >= REMAT_ROLE_COUNT)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld].role: expected 0..%d, got %d", origin,
                                   (long long)i, REMAT_ROLE_COUNT - 1, e->role);
        r->live[id] = 1;
        r->bytes[id] = e->bytes;
        r->role[id] = e->role;
        r->live_bytes += e->bytes;
        r->by_role[e->role] += e->bytes;
        if (r->am) {
            remat_alloc_result ar;
            remat_error aerr = {0};
            if (remat_alloc_model_alloc(r->am, id, e->bytes, &ar, &aerr) != REMAT_OK)
                return remat_error_set(err, aerr.status == REMAT_ERR_NOMEM ? REMAT_ERR_NOMEM : REMAT_ERR_INPUT,
                                       "%s: events[%lld]: allocator model: %s", origin, (long long)i, aerr.msg);
        }
    } else if (e->kind == REMAT_EVENT_FREE) {
        if (!r->live[id])
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld]: free of tensor %lld that is not live", origin,
                                   (long long)i, (long long)id);
        r->live[id] = 0;
        r->live_bytes -= r->bytes[id];
        r->by_role[r->role[id]] -= r->bytes[id];
        if (r->am) {
            remat_error aerr = {0};
            if (remat_alloc_model_release(r->am, id, &aerr) != REMAT_OK)
                return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld]: allocator model: %s", origin,
                                       (long long)i, aerr.msg);
        }
    } else {
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld].kind: expected 0 (alloc) or 1 (free), got %d",
                               origin, (long long)i, e->kind);
    }
    return REMAT_OK;
}

static int64_t reserved_now(const replay *r) {
    if (!r->am) return 0;
    remat_alloc_stats st;
    remat_alloc_model_stats(r->am, &st);
    return st.reserved_bytes;
}

static int wants_reserved(const remat_trace *t) {
    return strcmp(t->allocator_config, "exact") != 0 && strcmp(t->allocator_config, "none") != 0;
}

/* Copies the kept points of a full series. */
static remat_status reduce_series(const double *x, const int64_t *y, const int64_t *ev, int64_t n, int64_t max_points,
                                  int full, int64_t *keep, remat_series *s, remat_error *err) {
    int64_t k = full ? n : remat_reduce_m4(x, y, n, max_points, keep);
    if (full)
        for (int64_t i = 0; i < n; i++) keep[i] = i;
    s->x = remat_xmalloc((size_t)k * sizeof(double), err);
    s->bytes = remat_xmalloc((size_t)k * sizeof(int64_t), err);
    s->event = remat_xmalloc((size_t)k * sizeof(int64_t), err);
    if (!s->x || !s->bytes || !s->event) return REMAT_ERR_NOMEM;
    s->n = k;
    s->n_full = n;
    s->peak = y[0];
    s->peak_i = 0;
    for (int64_t i = 0; i < k; i++) {
        s->x[i] = x[keep[i]];
        s->bytes[i] = y[keep[i]];
        s->event[i] = ev[keep[i]];
        if (s->bytes[i] > s->peak) {
            s->peak = s->bytes[i];
            s->peak_i = i;
        }
    }
    return REMAT_OK;
}

static void site_of(const remat_trace *t, int64_t ev, double x, remat_peak_site *s) {
    s->event = ev;
    s->x = x;
    if (ev >= 0) {
        const remat_event *e = &t->events[ev];
        s->block = e->block;
        s->layer = e->layer;
        s->phase = e->phase;
        s->role = e->role;
    } else {
        s->block = s->layer = -1;
        s->phase = REMAT_PHASE_INIT;
        s->role = 255;
    }
}

/* Phase runs -> spans; merged per bucket when there are too many. */
static remat_status build_spans(const remat_trace *t, int64_t lo, int64_t hi, const double *x, double x_end,
                                remat_mem_curve *c, remat_error *err) {
    int64_t runs = 1;
    for (int64_t i = lo + 1; i < hi; i++)
        if (t->events[i].phase != t->events[i - 1].phase) runs++;
    int64_t cap = runs < REMAT_CURVE_MAX_SPANS ? runs : REMAT_CURVE_MAX_SPANS;
    c->spans = remat_xmalloc((size_t)cap * sizeof(remat_phase_span), err);
    if (!c->spans) return REMAT_ERR_NOMEM;
    if (runs <= REMAT_CURVE_MAX_SPANS) {
        int64_t k = 0;
        for (int64_t i = lo; i < hi; i++) {
            if (i > lo && t->events[i].phase == t->events[i - 1].phase) continue;
            double x0 = i == lo ? 0.0 : x[i - lo + 1];
            if (k > 0) c->spans[k - 1].x1 = x0;
            c->spans[k].x0 = x0;
            c->spans[k].phase = t->events[i].phase;
            k++;
        }
        c->spans[k - 1].x1 = x_end;
        c->n_spans = k;
        return REMAT_OK;
    }
    /* one phase per bucket: the one covering most of it */
    enum { NB = REMAT_CURVE_MAX_SPANS / 2 };
    double(*cover)[REMAT_PHASE_COUNT + 1] = remat_xcalloc(NB, sizeof *cover, err);
    if (!cover) return REMAT_ERR_NOMEM;
    double w = x_end / NB;
    int64_t i = lo;
    while (i < hi) {
        int64_t j = i + 1;
        while (j < hi && t->events[j].phase == t->events[i].phase) j++;
        double a = i == lo ? 0.0 : x[i - lo + 1];
        double b = j < hi ? x[j - lo + 1] : x_end;
        int p = t->events[i].phase < REMAT_PHASE_COUNT ? t->events[i].phase : REMAT_PHASE_COUNT;
        if (w <= 0.0) {
            cover[0][p] += (double)(j - i);
        } else {
            int64_t ba = (int64_t)(a / w), bb = (int64_t)(b / w);
            if (ba >= NB) ba = NB - 1;
            if (bb >= NB) bb = NB - 1;
            if (ba == bb) cover[ba][p] += b - a > 0 ? b - a : 1e-300;
            else {
                cover[ba][p] += (double)(ba + 1) * w - a;
                for (int64_t q = ba + 1; q < bb; q++) cover[q][p] += w;
                cover[bb][p] += b - (double)bb * w;
            }
        }
        i = j;
    }
    int64_t k = 0;
    int prev = -1;
    for (int64_t q = 0; q < NB; q++) {
        int best = -1;
        double bw = 0.0;
        for (int p = 0; p <= REMAT_PHASE_COUNT; p++)
            if (cover[q][p] > bw) { bw = cover[q][p]; best = p; }
        if (best < 0) best = prev < 0 ? t->events[lo].phase : prev; /* an empty bucket continues the phase */
        if (best != prev) {
            double x0 = (double)q * w;
            if (k > 0) c->spans[k - 1].x1 = x0;
            c->spans[k].x0 = x0;
            c->spans[k].phase = (uint8_t)best;
            k++;
            prev = best;
        }
    }
    c->spans[k - 1].x1 = x_end;
    c->n_spans = k;
    remat_xfree(cover);
    return REMAT_OK;
}

/* The series being built: one point at the slice's start and one after each event. */
typedef struct series_bufs {
    int64_t n;
    double *x;
    int64_t *live, *resv, *ev, *keep; /* resv: NULL without the reserved curve */
} series_bufs;

static void series_bufs_free(series_bufs *b) {
    remat_xfree(b->x);
    remat_xfree(b->live);
    remat_xfree(b->resv);
    remat_xfree(b->ev);
    remat_xfree(b->keep);
}

/* The tensor ids of events [0, hi) checked (dense from 0) and the replay's tables sized. */
static remat_status replay_init(replay *r, const remat_trace *t, int64_t hi, const char *origin, remat_error *err) {
    int64_t max_id = -1;
    for (int64_t i = 0; i < hi; i++) {
        if (t->events[i].tensor < 0)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: events[%lld].tensor: expected >= 0, got %lld", origin,
                                   (long long)i, (long long)t->events[i].tensor);
        if (t->events[i].tensor > max_id) max_id = t->events[i].tensor;
    }
    if (max_id > 2 * hi + 1024) /* ids are dense from 0: at most one per alloc */
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: events.tensor: expected ids dense from 0, got id %lld among %lld events",
                               origin, (long long)max_id, (long long)hi);
    r->n_ids = max_id + 1;
    r->bytes = remat_xmalloc((size_t)r->n_ids * sizeof(int64_t), err);
    r->role = remat_xcalloc((size_t)r->n_ids, 1, err);
    r->live = remat_xcalloc((size_t)r->n_ids, 1, err);
    return r->bytes && r->role && r->live ? REMAT_OK : REMAT_ERR_NOMEM;
}

/* The caching allocator model the reserved curve replays, under the trace's settings. */
static remat_status replay_caching(replay *r, const remat_trace *t, const char *origin, remat_error *err) {
    remat_caching_config cfg = remat_caching_config_default();
    if (t->allocator_config[0]) {
        remat_error cerr = {0};
        if (remat_caching_config_parse(t->allocator_config, &cfg, &cerr) != REMAT_OK)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: allocator_config: %s", origin, cerr.msg);
    }
    r->am = remat_alloc_model_init(REMAT_ALLOC_CACHING, &cfg, err);
    return r->am ? REMAT_OK : err && err->status ? err->status : REMAT_ERR_NOMEM;
}

/* Events [0, lo) replayed silently, then one point per event of [lo, hi): x (time since the
 * slice's first event, or the event count), live and reserved bytes; the roles at the live peak. */
static remat_status replay_points(replay *r, const remat_trace *t, int64_t lo, int64_t hi, int xtime,
                                  const char *origin, series_bufs *b, remat_mem_curve *out, remat_error *err) {
    remat_status st;
    for (int64_t i = 0; i < lo; i++)
        if ((st = replay_event(r, t, i, origin, err)) != REMAT_OK) return st;
    out->start_live = r->live_bytes;
    double t0 = t->events[lo].time_s;
    b->x[0] = 0.0;
    b->live[0] = r->live_bytes;
    b->ev[0] = -1;
    if (b->resv) b->resv[0] = reserved_now(r);
    int64_t peak = b->live[0];
    memcpy(out->by_role_at_peak, r->by_role, sizeof r->by_role);
    for (int64_t i = lo; i < hi; i++) {
        if ((st = replay_event(r, t, i, origin, err)) != REMAT_OK) return st;
        int64_t j = i - lo + 1;
        if (xtime) {
            double dt = t->events[i].time_s - t0;
            if (dt < b->x[j - 1])
                return remat_error_set(err, REMAT_ERR_INPUT,
                                       "%s: events[%lld].time_s: expected non-decreasing times, got %.9g after %.9g",
                                       origin, (long long)i, t->events[i].time_s, t->events[i - 1].time_s);
            b->x[j] = dt;
        } else {
            b->x[j] = (double)j;
        }
        b->live[j] = r->live_bytes;
        b->ev[j] = i;
        if (b->resv) b->resv[j] = reserved_now(r);
        if (r->live_bytes > peak) {
            peak = r->live_bytes;
            memcpy(out->by_role_at_peak, r->by_role, sizeof r->by_role);
        }
    }
    return REMAT_OK;
}

remat_status remat_mem_curve_build(const remat_trace *t, const char *origin, const remat_curve_opts *o,
                                   remat_mem_curve *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_curve_opts def = remat_curve_opts_default();
    if (!o) o = &def;
    if (!origin) origin = "<trace>";
    if (!t || t->n_events <= 0 || !t->events)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: events: expected at least one event", origin);
    int iter = 0;
    int64_t lo = 0, hi = 0;
    remat_status st = find_slice(t, origin, o->iter, &iter, &lo, &hi, err);
    if (st != REMAT_OK) return st;
    replay r;
    memset(&r, 0, sizeof r);
    series_bufs b;
    memset(&b, 0, sizeof b);
    if ((st = replay_init(&r, t, hi, origin, err)) != REMAT_OK) goto done;
    int64_t n = b.n = hi - lo + 1; /* points: the start and one after each event */
    b.x = remat_xmalloc((size_t)n * sizeof(double), err);
    b.live = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    b.ev = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    b.keep = remat_xmalloc((size_t)n * sizeof(int64_t), err);
    if (!b.x || !b.live || !b.ev || !b.keep) { st = REMAT_ERR_NOMEM; goto done; }
    out->has_reserved = o->reserved && wants_reserved(t);
    if (out->has_reserved) {
        if ((st = replay_caching(&r, t, origin, err)) != REMAT_OK) goto done;
        b.resv = remat_xmalloc((size_t)n * sizeof(int64_t), err);
        if (!b.resv) { st = REMAT_ERR_NOMEM; goto done; }
    }
    if ((st = replay_points(&r, t, lo, hi, o->x == REMAT_CURVE_X_TIME, origin, &b, out, err)) != REMAT_OK) goto done;
    out->iter = iter;
    out->first_event = lo;
    out->n_events = hi - lo;
    out->xkind = o->x;
    out->x_end = b.x[n - 1];
    int64_t mp = o->max_points > 0 ? o->max_points : REMAT_REDUCE_DEFAULT_POINTS;
    if ((st = reduce_series(b.x, b.live, b.ev, n, mp, o->full, b.keep, &out->live, err)) != REMAT_OK) goto done;
    site_of(t, out->live.event[out->live.peak_i], out->live.x[out->live.peak_i], &out->live_site);
    if (b.resv) {
        if ((st = reduce_series(b.x, b.resv, b.ev, n, mp, o->full, b.keep, &out->reserved, err)) != REMAT_OK) goto done;
        site_of(t, out->reserved.event[out->reserved.peak_i], out->reserved.x[out->reserved.peak_i],
                &out->reserved_site);
    }
    st = build_spans(t, lo, hi, b.x, out->x_end, out, err);
done:
    if (r.am) remat_alloc_model_free(r.am);
    remat_xfree(r.bytes);
    remat_xfree(r.role);
    remat_xfree(r.live);
    series_bufs_free(&b);
    if (st != REMAT_OK) remat_mem_curve_free(out);
    return st;
}
