/* bench_chain.h - shared by the simulator benchmarks: a generated chain model
 * (n blocks of Linear(width)-LIF) and its baseline trace recorded on the
 * reference backend. Header-only (static functions) so each benchmark stays one
 * translation unit. */
#ifndef REMAT_BENCH_CHAIN_H
#define REMAT_BENCH_CHAIN_H

#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/io/trace.h"


/* The JSON text of a chain of n blocks (caller frees with remat_xfree). */
static char *bench_chain_json(int n, int width, int T, int N) {
    size_t cap = (size_t)n * 160 + 1024, used = 0;
    char *s = remat_xmalloc(cap, NULL);
    if (!s) return NULL;
    used += (size_t)snprintf(s + used, cap - used,
                             "{\"name\": \"chain%d\", \"T\": %d, \"N\": %d, \"input\": {\"shape\": [%d], \"kind\": "
                             "\"analog\"}, \"classes\": %d, \"loss\": \"rate_mse\", \"init_gain\": 4, "
                             "\"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9}, \"layers\": [",
                             n, T, N, width, width);
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(s + used, cap - used,
                                 "%s{\"name\": \"fc%d\", \"type\": \"linear\", \"out\": %d}, {\"name\": \"lif%d\", "
                                 "\"type\": \"lif\"}",
                                 i ? ", " : "", i, width, i);
    used += (size_t)snprintf(s + used, cap - used, "], \"blocks\": [");
    for (int i = 0; i < n; i++)
        used += (size_t)snprintf(s + used, cap - used, "%s{\"name\": \"b%d\", \"layers\": [\"fc%d\", \"lif%d\"]}",
                                 i ? ", " : "", i, i, i);
    snprintf(s + used, cap - used, "]}");
    return s;
}

/* Parses the chain model and records `iters` plain steps of it into *trace. */
static remat_status bench_chain_baseline(int n, int width, int T, int N, int iters, remat_model *m, remat_trace *trace,
                                         remat_error *err) {
    char *text = bench_chain_json(n, width, T, N);
    if (!text) return REMAT_ERR_NOMEM;
    remat_status st = remat_model_parse(text, strlen(text), "<bench chain>", m, err);
    remat_xfree(text);
    if (st != REMAT_OK) return st;
    remat_plan empty;
    if ((st = remat_plan_init_empty(m, &empty, err)) != REMAT_OK) return st;
    remat_backend be;
    if ((st = remat_backend_ref_init(&be, 1, err)) != REMAT_OK) {
        remat_plan_free(&empty);
        return st;
    }
    remat_exec_opts o = remat_exec_opts_default();
    o.seed = 1;
    o.trace = trace;
    remat_trace_init(trace);
    st = remat_exec_run(m, &empty, &be, &o, iters, NULL, err);
    remat_backend_free(&be);
    remat_plan_free(&empty);
    return st;
}

#endif
