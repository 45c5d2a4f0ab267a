/* des.c - event queue, stream schedule and allocator replay (contract in sim/des.h).
 *
 * Modelling rules of the copy-stream schedule are stated in des.h; the replay
 * itself adds none: each event is one call into core/alloc/alloc_model.c.
 */
#include "sim/des.h"

#include <string.h>

/* ---- event queue ----------------------------------------------------------- */

static int item_less(const remat_des_item *a, const remat_des_item *b) {
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void remat_des_queue_init(remat_des_queue *q) { memset(q, 0, sizeof *q); }

void remat_des_queue_free(remat_des_queue *q) {
    remat_xfree(q->items);
    memset(q, 0, sizeof *q);
}

remat_status remat_des_queue_push(remat_des_queue *q, double time, int64_t seq, remat_error *err) {
    if (q->n == q->cap) {
        int64_t cap = q->cap ? q->cap * 2 : 1024;
        remat_des_item *a = remat_xrealloc(q->items, (size_t)cap * sizeof *a, err);
        if (!a) return REMAT_ERR_NOMEM;
        q->items = a;
        q->cap = cap;
    }
    remat_des_item it = {time, seq};
    int64_t i = q->n++;
    while (i > 0) {
        int64_t parent = (i - 1) / 2;
        if (!item_less(&it, &q->items[parent])) break;
        q->items[i] = q->items[parent];
        i = parent;
    }
    q->items[i] = it;
    return REMAT_OK;
}

int remat_des_queue_pop(remat_des_queue *q, remat_des_item *out) {
    if (q->n == 0) return 0;
    *out = q->items[0];
    remat_des_item last = q->items[--q->n];
    int64_t i = 0, n = q->n;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && item_less(&q->items[c + 1], &q->items[c])) c++;
        if (!item_less(&q->items[c], &last)) break;
        q->items[i] = q->items[c];
        i = c;
    }
    if (n > 0) q->items[i] = last;
    return 1;
}

/* ---- schedule ---------------------------------------------------------------- */

void remat_des_schedule_free(remat_des_schedule_result *r) {
    remat_xfree(r->event_time);
    remat_xfree(r->iter_time);
    memset(r, 0, sizeof *r);
}

typedef struct span { double lo, hi; } span;

static void span_add(span *s, double lo, double hi) {
    if (lo < s->lo) s->lo = lo;
    if (hi > s->hi) s->hi = hi;
}

remat_status remat_des_schedule(const remat_trace *t, int copy_stream, remat_des_schedule_result *out,
                                remat_error *err) {
    memset(out, 0, sizeof *out);
    out->event_time = remat_xmalloc((size_t)(t->n_events ? t->n_events : 1) * sizeof(double), err);
    out->iter_time = remat_xcalloc((size_t)(t->n_iters ? t->n_iters : 1), sizeof(double), err);
    span *spans = remat_xmalloc((size_t)(t->n_iters ? t->n_iters : 1) * sizeof *spans, err);
    if (!out->event_time || !out->iter_time || !spans) {
        remat_xfree(spans);
        remat_des_schedule_free(out);
        return REMAT_ERR_NOMEM;
    }
    for (int32_t i = 0; i < t->n_iters; i++) spans[i] = (span){1e300, -1e300};

    double shift = 0.0;         /* old time - new time on the compute stream */
    double copy_free_at = 0.0;  /* new time at which the copy stream is idle */
    double outstanding = 0.0;   /* new time at which all issued copy work has ended */
    int64_t j = 0;
    for (int64_t i = 0; i <= t->n_events; i++) {
        /* ops that precede event i in program order (all remaining ones after the last event) */
        double tau = i < t->n_events ? t->events[i].time_s : 1e300;
        while (j < t->n_ops && t->ops[j].t_start < tau && (t->ops[j].t_end <= tau || i == t->n_events)) {
            const remat_op_record *op = &t->ops[j++];
            double dur = op->t_end - op->t_start;
            double ns = op->t_start - shift, ne;
            int on_copy = copy_stream && (op->op == REMAT_OP_COMPRESS || op->op == REMAT_OP_DECOMPRESS);
            if (on_copy) {
                double cs = ns > copy_free_at ? ns : copy_free_at;
                ne = cs + dur;
                copy_free_at = ne;
                if (ne > outstanding) outstanding = ne;
                if (op->op == REMAT_OP_COMPRESS) {
                    shift += dur; /* the compute stream goes on at once */
                } else {
                    shift = op->t_end - ne; /* the compute stream waits for the result */
                }
                out->stream_busy[REMAT_DES_STREAM_COPY] += dur;
                ns = cs;
            } else {
                ne = op->t_end - shift;
                out->stream_busy[REMAT_DES_STREAM_COMPUTE] += dur;
            }
            if (op->phase != REMAT_PHASE_INIT && op->iter >= 0 && op->iter < t->n_iters)
                span_add(&spans[op->iter], ns, ne);
        }
        if (i == t->n_events) break;
        const remat_event *e = &t->events[i];
        double nt = e->time_s - shift;
        if (e->kind == REMAT_EVENT_FREE && outstanding > nt) {
            nt = outstanding;
            out->delayed_frees++;
        }
        out->event_time[i] = nt;
    }
    for (int32_t i = 0; i < t->n_iters; i++) out->iter_time[i] = spans[i].hi > spans[i].lo ? spans[i].hi - spans[i].lo : 0;
    remat_xfree(spans);
    return REMAT_OK;
}

/* ---- replay -------------------------------------------------------------------- */

remat_des_replay_opts remat_des_replay_opts_default(void) {
    remat_des_replay_opts o;
    memset(&o, 0, sizeof o);
    o.caching = remat_caching_config_default();
    o.run_exact = 1;
    o.run_caching = 1;
    return o;
}

int64_t remat_des_replay_flat(remat_alloc_model *m, remat_alloc_kind kind, const remat_event *ev, int64_t n,
                              remat_error *err) {
    remat_alloc_result r;
    for (int64_t i = 0; i < n; i++) {
        remat_status st = ev[i].kind == REMAT_EVENT_ALLOC ? remat_alloc_model_alloc(m, ev[i].tensor, ev[i].bytes, &r, err)
                                                        : remat_alloc_model_release(m, ev[i].tensor, err);
        if (st != REMAT_OK) return -1;
    }
    remat_alloc_stats s;
    remat_alloc_model_stats(m, &s);
    return kind == REMAT_ALLOC_EXACT ? s.peak_live_bytes : s.peak_reserved_bytes;
}

typedef struct replay_state {
    remat_alloc_model *exact, *caching;
    remat_des_iter_peaks *iters;
    int n_iters, cur;
    const int64_t *eof; /* [n_iters] end-of-forward event of each step, -1 none */
} replay_state;

static void close_iter(replay_state *s) {
    if (s->cur < 0 || s->cur >= s->n_iters) return;
    remat_alloc_stats st;
    if (s->exact) {
        remat_alloc_model_stats(s->exact, &st);
        s->iters[s->cur].peak_live_bytes = st.peak_live_bytes;
    }
    if (s->caching) {
        remat_alloc_model_stats(s->caching, &st);
        s->iters[s->cur].peak_allocated_bytes = st.peak_allocated_bytes;
        s->iters[s->cur].peak_reserved_bytes = st.peak_reserved_bytes;
        if (!s->exact) s->iters[s->cur].peak_live_bytes = st.peak_live_bytes;
    }
}

static void open_iter(replay_state *s, int it) {
    close_iter(s);
    s->cur = it;
    if (it >= 0 && it < s->n_iters) s->iters[it].events = 0;
    if (s->exact) remat_alloc_model_reset_peaks(s->exact);
    if (s->caching) remat_alloc_model_reset_peaks(s->caching);
}

static remat_status apply(replay_state *s, const remat_event *e, int64_t idx, remat_error *err) {
    remat_alloc_result r;
    remat_error local = {0};
    remat_status st = REMAT_OK;
    if (e->kind == REMAT_EVENT_ALLOC) {
        if (s->exact) st = remat_alloc_model_alloc(s->exact, e->tensor, e->bytes, &r, &local);
        if (st == REMAT_OK && s->caching) st = remat_alloc_model_alloc(s->caching, e->tensor, e->bytes, &r, &local);
    } else {
        if (s->exact) st = remat_alloc_model_release(s->exact, e->tensor, &local);
        if (st == REMAT_OK && s->caching) st = remat_alloc_model_release(s->caching, e->tensor, &local);
    }
    if (st == REMAT_ERR_NOMEM) return remat_error_set(err, st, "%s", local.msg);
    if (st != REMAT_OK)
        return remat_error_set(err, REMAT_ERR_INPUT, "events[%lld]: %s of tensor %lld: %s", (long long)idx,
                               e->kind == REMAT_EVENT_ALLOC ? "alloc" : "free", (long long)e->tensor, local.msg);
    if (s->cur >= 0 && s->cur < s->n_iters) {
        remat_des_iter_peaks *it = &s->iters[s->cur];
        it->events++;
        if (s->eof[s->cur] == idx) {
            remat_alloc_stats as;
            if (s->exact) {
                remat_alloc_model_stats(s->exact, &as);
                it->end_of_forward_live = as.live_bytes;
            }
            if (s->caching) {
                remat_alloc_model_stats(s->caching, &as);
                it->end_of_forward_reserved = as.reserved_bytes;
                if (!s->exact) it->end_of_forward_live = as.live_bytes;
            }
        }
    }
    return REMAT_OK;
}

int64_t remat_des_iter_eof_point(const remat_trace *t, int it) {
    int64_t i = t->iters[it].first_event, end = i + t->iters[it].n_events;
    for (; i < end && i < t->n_events; i++)
        if (t->events[i].kind == REMAT_EVENT_FREE && t->events[i].phase == REMAT_PHASE_LOSS) return i;
    return -1;
}

int64_t remat_des_iter_reset_point(const remat_trace *t, int it) {
    int64_t i = t->iters[it].first_event, end = i + t->iters[it].n_events;
    while (i < end && i < t->n_events && t->events[i].kind == REMAT_EVENT_FREE) i++;
    return i;
}

/* Iteration of event idx: the last iteration whose slice starts at or before it. */
static int iter_of(const remat_trace *t, int64_t idx, int hint) {
    int it = hint < 0 ? 0 : hint;
    while (it + 1 < t->n_iters && t->iters[it + 1].first_event <= idx) it++;
    while (it > 0 && t->iters[it].first_event > idx) it--;
    return it;
}

remat_status remat_des_replay(const remat_trace *t, const double *event_time, const remat_des_replay_opts *o,
                              remat_des_iter_peaks *iters, int n_iters, remat_error *err) {
    if (n_iters < t->n_iters)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "des: replay: room for %d iterations, trace has %d", n_iters,
                               (int)t->n_iters);
    replay_state s = {0};
    s.iters = iters;
    s.n_iters = t->n_iters;
    s.cur = -1;
    memset(iters, 0, (size_t)n_iters * sizeof *iters);
    remat_status st = REMAT_OK;
    if (o->run_exact && !(s.exact = remat_alloc_model_init(REMAT_ALLOC_EXACT, NULL, err))) return err->status;
    if (o->run_caching && !(s.caching = remat_alloc_model_init(REMAT_ALLOC_CACHING, &o->caching, err))) {
        remat_alloc_model_free(s.exact);
        return err->status;
    }
    int64_t *reset = remat_xmalloc((size_t)(t->n_iters ? t->n_iters : 1) * sizeof *reset, err);
    if (!reset) {
        remat_alloc_model_free(s.exact);
        remat_alloc_model_free(s.caching);
        return REMAT_ERR_NOMEM;
    }
    int64_t *eof = remat_xmalloc((size_t)(t->n_iters ? t->n_iters : 1) * sizeof *eof, err);
    if (!eof) {
        remat_xfree(reset);
        remat_alloc_model_free(s.exact);
        remat_alloc_model_free(s.caching);
        return REMAT_ERR_NOMEM;
    }
    for (int32_t i = 0; i < t->n_iters; i++) {
        reset[i] = remat_des_iter_reset_point(t, i);
        eof[i] = remat_des_iter_eof_point(t, i);
        iters[i].end_of_forward_live = iters[i].end_of_forward_reserved = -1;
    }
    s.eof = eof;
    if (!event_time) {
        int next = 0; /* next iteration to open */
        for (int64_t i = 0; i < t->n_events && st == REMAT_OK; i++) {
            while (next < t->n_iters && reset[next] == i) open_iter(&s, next++);
            st = apply(&s, &t->events[i], i, err);
        }
        while (st == REMAT_OK && next < t->n_iters) open_iter(&s, next++); /* empty trailing steps */
    } else {
        /* Events enter the queue in program order and leave it in (time, seq)
         * order as soon as no later event can precede them: sufmin[i] is the
         * earliest time of events i.. (a later event has a larger seq, so a queued
         * event whose time is <= sufmin[i + 1] is final). The queue then holds only
         * the events the schedule moved (delayed frees), not the whole trace. */
        remat_des_queue q;
        remat_des_queue_init(&q);
        double *sufmin = remat_xmalloc((size_t)(t->n_events + 1) * sizeof *sufmin, err);
        if (!sufmin) st = REMAT_ERR_NOMEM;
        if (sufmin) {
            sufmin[t->n_events] = 1e300;
            for (int64_t i = t->n_events - 1; i >= 0; i--)
                sufmin[i] = event_time[i] < sufmin[i + 1] ? event_time[i] : sufmin[i + 1];
        }
        remat_des_item item;
        int next = 0, hint = 0;
        for (int64_t i = 0; i < t->n_events && st == REMAT_OK; i++) {
            if ((st = remat_des_queue_push(&q, event_time[i], i, err)) != REMAT_OK) break;
            while (st == REMAT_OK && q.n > 0 && q.items[0].time <= sufmin[i + 1] && remat_des_queue_pop(&q, &item)) {
                /* a step's measurement starts with the first of its events at or after its reset point */
                hint = iter_of(t, item.seq, hint);
                while (next < t->n_iters && next <= hint && item.seq >= reset[next]) open_iter(&s, next++);
                st = apply(&s, &t->events[item.seq], item.seq, err);
            }
        }
        remat_xfree(sufmin);
        while (st == REMAT_OK && next < t->n_iters) open_iter(&s, next++);
        remat_des_queue_free(&q);
    }
    remat_xfree(reset);
    close_iter(&s);
    remat_xfree(eof);
    remat_alloc_model_free(s.exact);
    remat_alloc_model_free(s.caching);
    return st;
}
