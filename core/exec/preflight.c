/* preflight.c - the step's memory before anything is allocated (see preflight.h). */
#include "core/exec/preflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/base/size.h"
#include "core/exec/backend.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t rlimit_bytes(int what) {
    struct rlimit r;
    if (getrlimit(what, &r) != 0 || r.rlim_cur == RLIM_INFINITY || r.rlim_cur > (rlim_t)INT64_MAX) return INT64_MAX;
    return (int64_t)r.rlim_cur;
}

static int64_t cgroup_bytes(void) {
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (!f) return INT64_MAX;
    char buf[64] = "";
    int64_t v = INT64_MAX;
    if (fgets(buf, sizeof buf, f)) {
        char *end = NULL;
        long long x = strtoll(buf, &end, 10);
        if (end != buf && x > 0) v = x;
    }
    fclose(f);
    return v;
}

remat_status remat_host_memory_limit(int64_t *limit, remat_error *err) {
    const char *env = getenv("REMAT_HOST_MEMORY");
    if (env) {
        if (remat_size_parse(env, limit) != 0 || *limit < 1)
            return remat_error_set(err, REMAT_ERR_INPUT, "REMAT_HOST_MEMORY: expected %s (at least 1 B), got \"%.40s\"",
                                   REMAT_SIZE_GRAMMAR, env);
        return REMAT_OK;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t v = pages > 0 && page > 0 && pages <= INT64_MAX / page ? (int64_t)pages * page : INT64_MAX;
    v = min64(v, rlimit_bytes(RLIMIT_AS));
    v = min64(v, rlimit_bytes(RLIMIT_DATA));
    *limit = min64(v, cgroup_bytes());
    return REMAT_OK;
}

/* Worst case for the dry run: a sparse-compressed input with every element non-zero. */
static int64_t all_nonzero(void *ctx, int iter, int layer, int64_t elems) {
    (void)ctx, (void)iter, (void)layer;
    return elems;
}

static double gib(int64_t b) { return (double)b / (double)((int64_t)1 << 30); }

/* "layers[3] (\"fc\")" for the layer of event e, or "the network input". */
static const char *layer_of(const remat_model *m, const remat_event *e, char *buf, size_t len) {
    if (e->layer >= 0 && e->layer < m->n_layers)
        snprintf(buf, len, "layers[%d] (\"%s\")", (int)e->layer, m->layers[e->layer].name);
    else
        snprintf(buf, len, "the network input");
    return buf;
}

remat_status remat_exec_preflight(const remat_model *m, const remat_plan *p, const remat_backend *b,
                                  const remat_exec_opts *o, remat_error *err) {
    int64_t have = -1, dev_free = -1;
    const char *whose = "the device has";
    if (b->ops->mem_info) b->ops->mem_info(b->ctx, &dev_free, &have);
    remat_status st = REMAT_OK;
    if (have <= 0) {
        whose = getenv("REMAT_HOST_MEMORY") ? "of host memory REMAT_HOST_MEMORY allows" : "of host memory this machine has";
        if ((st = remat_host_memory_limit(&have, err)) != REMAT_OK) return st;
    }
    remat_backend dry;
    if ((st = remat_backend_dry_init(&dry, err)) != REMAT_OK) return st;
    remat_trace t;
    remat_trace_init(&t);
    remat_exec_opts d = *o;
    d.trace = &t;
    d.op_cost = NULL;
    d.nnz_oracle = all_nonzero;
    d.hook_ctx = NULL;
    d.check_compression = 0;
    d.fault = REMAT_FAULT_NONE;
    remat_step_result r[2];
    memset(r, 0, sizeof r);
    remat_session *s = remat_session_init(m, p, &dry, &d, err);
    if (!s) st = err && err->status != REMAT_OK ? err->status : REMAT_ERR_INTERNAL;
    for (int i = 0; i < 2 && st == REMAT_OK; i++) st = remat_session_step(s, 1, &r[i], err);
    remat_session_free(s);
    remat_backend_free(&dry);
    if (st == REMAT_OK) {
        const remat_event *big = NULL;
        for (int64_t i = 0; i < t.n_events; i++)
            if (t.events[i].kind == REMAT_EVENT_ALLOC && (!big || t.events[i].bytes > big->bytes)) big = &t.events[i];
        int64_t peak = r[0].peak_reserved_bytes > r[1].peak_reserved_bytes ? r[0].peak_reserved_bytes
                                                                             : r[1].peak_reserved_bytes;
        const char *where = m->path && m->path[0] ? m->path : "<model>";
        char layer[160];
        if (big && peak > have)
            st = remat_error_set(err, REMAT_ERR_INPUT,
                                 "%s: %s: a training step needs %.1f GiB (%lld B) at its peak, more than the %.1f GiB "
                                 "(%lld B) %s; its largest tensor is this layer's %s of %.1f GiB",
                                 where, layer_of(m, big, layer, sizeof layer), gib(peak), (long long)peak, gib(have),
                                 (long long)have, whose, remat_role_name((remat_role)big->role), gib(big->bytes));
    }
    remat_trace_free(&t);
    return st;
}
