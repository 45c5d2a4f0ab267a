/* rates.c - per-layer firing rates of a recorded step (contract in tools/rates.h). */
#include "tools/rates.h"

#include <string.h>

static int64_t elems_of(const remat_event *e) {
    int64_t n = 1;
    for (int d = 0; d < e->ndim && d < 4; d++) n *= e->dims[d] > 0 ? e->dims[d] : 1;
    return n;
}

int remat_trace_rates(const remat_trace *t, int iter, remat_layer_rate *out, int max) {
    int n = 0;
    for (int64_t i = 0; i < t->n_events && n < max; i++) {
        const remat_event *e = &t->events[i];
        if (e->kind != REMAT_EVENT_ALLOC || e->nnz < 0 || e->iter != iter) continue;
        int seen = 0;
        for (int k = 0; k < n && !seen; k++) seen = out[k].layer == e->layer;
        if (seen) continue;
        out[n].layer = e->layer;
        out[n].nnz = e->nnz;
        out[n].elems = elems_of(e);
        n++;
    }
    return n;
}

static const char *name_of(const remat_model *m, int layer) {
    return layer >= 0 && layer < m->n_layers ? m->layers[layer].name : "input";
}

int remat_print_rates(FILE *f, const char *cmd, const remat_trace *t, const remat_model *m) {
    enum { MAX = 512 };
    static remat_layer_rate r[MAX];
    int iter = t->n_iters > 0 ? t->n_iters - 1 : 0;
    int n = remat_trace_rates(t, iter, r, MAX);
    if (n == 0) return 0;
    if (f) fprintf(f, "firing rates (step %d)", iter + 1);
    int silent = 0;
    for (int i = 0; i < n; i++) {
        double rate = r[i].elems > 0 ? (double)r[i].nnz / (double)r[i].elems : 0.0;
        if (f) fprintf(f, "  %s %.3f%s", name_of(m, r[i].layer), rate, r[i].nnz == 0 ? " (silent)" : "");
        silent += r[i].nnz == 0;
    }
    if (f) fputc('\n', f);
    if (silent) {
        fprintf(stderr, "remat %s: warning: %d layer%s fired no spike in step %d:", cmd, silent, silent == 1 ? "" : "s",
                iter + 1);
        const char *sep = " ";
        for (int i = 0; i < n; i++)
            if (r[i].nnz == 0) {
                fprintf(stderr, "%s%s", sep, name_of(m, r[i].layer));
                sep = ", ";
            }
        fprintf(stderr, " (every layer after a silent one gets no input: check the input rate, init_gain and the "
                        "thresholds)\n");
    }
    return silent;
}
