/* profile.c - chain-model terms from a predicted trace (definitions in sim/profile.h). */
#include "sim/profile.h"

#include <string.h>

#include "sim/des.h"

void remat_step_profile_free(remat_step_profile *p) {
    remat_xfree(p->blocks);
    memset(p, 0, sizeof *p);
}

/* Highest of live[x..y] (live[i]: bytes before event i). */
static int64_t peak_over(const int64_t *live, int64_t x, int64_t y) {
    int64_t p = live[x];
    for (int64_t i = x + 1; i <= y; i++)
        if (live[i] > p) p = live[i];
    return p;
}

static int is_backward(uint8_t phase) { return phase == REMAT_PHASE_BACKWARD || phase == REMAT_PHASE_RECOMPUTE; }

remat_status remat_profile_trace(const remat_trace *t, int n_blocks, const double *step_time, double host_per_event,
                                 remat_step_profile *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    if (t->n_iters < 1 || t->n_iters > REMAT_CHAIN_MAX_ITERS)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "profile: expected 1..%d steps, trace has %d",
                               REMAT_CHAIN_MAX_ITERS, (int)t->n_iters);
    if (n_blocks < 1) return remat_error_set(err, REMAT_ERR_INTERNAL, "profile: no blocks");
    int nb = n_blocks, nit = t->n_iters;
    out->n_blocks = nb;
    out->n_iters = nit;
    out->blocks = remat_xcalloc((size_t)nb, sizeof *out->blocks, err);
    int64_t *live = remat_xmalloc((size_t)(t->n_events + 1) * sizeof *live, err);
    int64_t *sF = remat_xmalloc((size_t)(nb + 1) * sizeof *sF, err), *sB = remat_xmalloc((size_t)(nb + 1) * sizeof *sB, err);
    double *btime = remat_xcalloc((size_t)nb, sizeof *btime, err);
    remat_status st = REMAT_OK;
    if (!out->blocks || !live || !sF || !sB || !btime) {
        st = REMAT_ERR_NOMEM;
        goto done;
    }
    live[0] = 0;
    for (int64_t i = 0; i < t->n_events; i++)
        live[i + 1] = live[i] + (t->events[i].kind == REMAT_EVENT_ALLOC ? t->events[i].bytes : -t->events[i].bytes);

    for (int it = 0; it < nit; it++) {
        int64_t r = remat_des_iter_reset_point(t, it);
        int64_t e = t->iters[it].first_event + t->iters[it].n_events;
        if (e > t->n_events) e = t->n_events;
        int64_t loss = -1, opt = e;
        for (int b = 0; b < nb; b++) sF[b] = sB[b] = -1;
        for (int64_t i = r; i < e; i++) {
            const remat_event *ev = &t->events[i];
            int b = ev->block;
            if (ev->phase == REMAT_PHASE_FORWARD && b >= 0 && b < nb && sF[b] < 0) sF[b] = i;
            else if (ev->phase == REMAT_PHASE_LOSS && loss < 0) loss = i;
            else if (is_backward(ev->phase) && b >= 0 && b < nb && sB[b] < 0) sB[b] = i;
            else if (ev->phase == REMAT_PHASE_OPTIMIZER && opt == e) opt = i;
        }
        /* the schedule's order: F_0 < F_1 < ... < loss < B_{n-1} < ... < B_0 <= opt */
        int ok = loss >= 0;
        for (int b = 0; b < nb && ok; b++) ok = sF[b] >= 0 && sB[b] >= 0 && (b == 0 || sF[b] > sF[b - 1]);
        ok = ok && loss > sF[nb - 1] && sB[nb - 1] > loss && sB[0] <= opt;
        for (int b = 0; b + 1 < nb && ok; b++) ok = sB[b] > sB[b + 1];
        if (!ok) {
            st = remat_error_set(err, REMAT_ERR_INTERNAL,
                                 "profile: step %d: the events are not in the chain order forward blocks, loss, "
                                 "backward blocks in reverse",
                                 it);
            goto done;
        }
        sF[nb] = loss;
        int64_t base = live[sF[0]];
        out->base[it] = base;
        int64_t fixed = peak_over(live, r, sF[0]);
        int64_t post = peak_over(live, opt, e);
        out->fixed[it] = fixed > post ? fixed : post;
        out->tail[it] = peak_over(live, loss, sB[nb - 1]) - live[loss];
        for (int b = 0; b < nb; b++) {
            int64_t g = live[sF[b]];
            remat_chain_opt *o = &out->blocks[b];
            o->delta[it] = live[sF[b + 1]] - g;
            int64_t f = peak_over(live, sF[b], sF[b + 1]) - g;
            int64_t bw = peak_over(live, sB[b], b > 0 ? sB[b - 1] : opt) - g;
            o->local[it] = f > bw ? f : bw;
        }
    }
    /* time: ops (and host time of events) of each block, mean over steps */
    double total = 0;
    for (int it = 0; it < nit; it++) total += step_time ? step_time[it] : t->iters[it].step_time_s;
    for (int64_t i = 0; i < t->n_ops; i++) {
        const remat_op_record *op = &t->ops[i];
        if (op->phase == REMAT_PHASE_INIT || op->iter < 0 || op->iter >= nit) continue;
        if (op->block >= 0 && op->block < nb) btime[op->block] += op->t_end - op->t_start;
    }
    for (int it = 0; it < nit && host_per_event > 0; it++) { /* the host time of each block's events */
        int64_t e = t->iters[it].first_event + t->iters[it].n_events;
        for (int64_t i = t->iters[it].first_event; i < e && i < t->n_events; i++)
            if (t->events[i].block >= 0 && t->events[i].block < nb) btime[t->events[i].block] += host_per_event;
    }
    double sum = 0;
    for (int b = 0; b < nb; b++) {
        out->blocks[b].time = btime[b] / nit;
        sum += out->blocks[b].time;
    }
    out->time0 = total / nit - sum;
done:
    remat_xfree(live);
    remat_xfree(sF);
    remat_xfree(sB);
    remat_xfree(btime);
    if (st != REMAT_OK) remat_step_profile_free(out);
    return st;
}
