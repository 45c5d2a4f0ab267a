/* trace.c - the in-memory trace: growable arrays of events, ops and iterations. */
#include "core/io/trace.h"

#include "core/base/grow.h"

#include <string.h>

static const char *const op_names[] = {
    "linear_fwd", "linear_bwd", "neuron_fwd",  "neuron_bwd",    "batchnorm_fwd", "batchnorm_bwd",
    "add_fwd",    "add_bwd",    "dropout_fwd", "dropout_bwd",   "loss_fwd",      "loss_bwd",
    "compress",   "decompress", "optimizer",   "fill",          "zero",          "copy",
    "conv_fwd",   "conv_bwd",   "pool_fwd",    "pool_bwd",      "flatten_fwd",   "flatten_bwd",
};
_Static_assert(sizeof op_names / sizeof op_names[0] == REMAT_OP_COUNT, "a name for every op kind");

const char *remat_op_kind_name(remat_op_kind k) {
    return (unsigned)k < REMAT_OP_COUNT ? op_names[k] : "?";
}

const char *remat_trace_execution(const char *backend) {
    if (backend && !strcmp(backend, "cuda")) return "remat CUDA backend";
    return "remat reference backend";
}

void remat_trace_init(remat_trace *t) {
    memset(t, 0, sizeof *t);
    t->schema_version = REMAT_TRACE_SCHEMA_VERSION;
}

void remat_trace_free(remat_trace *t) {
    if (!t) return;
    remat_xfree(t->model_text);
    remat_xfree(t->plan_text);
    remat_xfree(t->events);
    remat_xfree(t->ops);
    remat_xfree(t->iters);
    remat_xfree(t->probe_ops);
    remat_xfree(t->probe_steps);
    remat_trace_init(t);
}

int64_t remat_trace_add_event(remat_trace *t, const remat_event *e, remat_error *err) {
    if (remat_grow((void **)&t->events, &t->cap_events, t->n_events + 1, sizeof *e, 256, INT64_MAX, err)) return -1;
    t->events[t->n_events] = *e;
    return t->n_events++;
}

int64_t remat_trace_add_op(remat_trace *t, const remat_op_record *r, remat_error *err) {
    if (remat_grow((void **)&t->ops, &t->cap_ops, t->n_ops + 1, sizeof *r, 256, INT64_MAX, err)) return -1;
    t->ops[t->n_ops] = *r;
    return t->n_ops++;
}

int remat_trace_has_probe(const remat_trace *t) { return t->probe_N > 0 && t->probe_N != t->N && t->n_probe_ops > 0; }

int64_t remat_trace_add_probe_op(remat_trace *t, const remat_op_record *r, remat_error *err) {
    if (remat_grow((void **)&t->probe_ops, &t->cap_probe_ops, t->n_probe_ops + 1, sizeof *r, 256, INT64_MAX, err)) return -1;
    t->probe_ops[t->n_probe_ops] = *r;
    return t->n_probe_ops++;
}

int64_t remat_trace_add_probe_step(remat_trace *t, const remat_probe_step *s, remat_error *err) {
    if (remat_grow((void **)&t->probe_steps, &t->cap_probe_steps, t->n_probe_steps + 1, sizeof *s, 64, INT64_MAX, err))
        return -1;
    t->probe_steps[t->n_probe_steps] = *s;
    return t->n_probe_steps++;
}

int32_t remat_trace_add_iter(remat_trace *t, const remat_iter_summary *s, remat_error *err) {
    int64_t cap = t->cap_iters;
    if (t->n_iters == INT32_MAX) {
        remat_error_set(err, REMAT_ERR_NOMEM, "trace: too many iterations");
        return -1;
    }
    if (remat_grow((void **)&t->iters, &cap, t->n_iters + 1, sizeof *s, 256, INT32_MAX, err)) return -1;
    t->cap_iters = (int32_t)cap;
    t->iters[t->n_iters] = *s;
    return t->n_iters++;
}

static char *dup_text(const char *s, remat_error *err) {
    size_t n = s ? strlen(s) : 0;
    char *d = remat_xmalloc(n + 1, err);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

remat_status remat_trace_set_texts(remat_trace *t, const char *model_text, const char *plan_text, remat_error *err) {
    char *m = dup_text(model_text, err);
    if (!m) return REMAT_ERR_NOMEM;
    char *p = dup_text(plan_text, err);
    if (!p) {
        remat_xfree(m);
        return REMAT_ERR_NOMEM;
    }
    remat_xfree(t->model_text);
    remat_xfree(t->plan_text);
    t->model_text = m;
    t->plan_text = p;
    return REMAT_OK;
}
