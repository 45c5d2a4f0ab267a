/* sweep_scaling.c - sweep rows into scaling series (contract in sweep_scaling.h). */
#include "tools/sweep_scaling.h"

#include <stdio.h>
#include <string.h>

remat_status remat_tools_sweep_scaling(const remat_sweep_opts *o, const remat_sweep_row *rows, int64_t fixed,
                                       int on_live, int with_plan, remat_scaling *sc, remat_error *err) {
    memset(sc, 0, sizeof *sc);
    snprintf(sc->x_name, sizeof sc->x_name, "%c", o->dim);
    if (o->dim == 'T') sc->at_N = fixed;
    else sc->at_T = fixed;
    sc->n_series = with_plan ? 2 : 1;
    for (int q = 0; q < sc->n_series; q++) {
        remat_scaling_series *s = &sc->series[q];
        remat_status st = remat_scaling_series_alloc(s, o->n, err);
        if (st != REMAT_OK) return st;
        for (int i = 0; i < o->n; i++) {
            const remat_search_figures *f = q ? &rows[i].plan : &rows[i].base;
            s->x[i] = (double)rows[i].v;
            s->peak_bytes[i] = on_live ? f->peak_live : f->peak_reserved;
        }
    }
    return REMAT_OK;
}
