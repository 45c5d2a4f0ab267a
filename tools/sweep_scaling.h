/* sweep_scaling.h - a T/N sweep's rows (sim/sweep.h) as a scaling file's series
 * (plots/scaling.h): what `simulate --sweep` and `demo` draw. */
#ifndef REMAT_TOOLS_SWEEP_SCALING_H
#define REMAT_TOOLS_SWEEP_SCALING_H

#include "plots/scaling.h"
#include "sim/sweep.h"

/* Fills sc (zeroed first): x_name the swept dimension, at_N or at_T = fixed, one series
 * for the baseline and, with with_plan, a second for the plan, x the values and
 * peak_bytes the peak live (on_live) or reserved bytes. Names, fits, y_name and the
 * budget are the caller's. REMAT_ERR_NOMEM (sc partly filled: remat_scaling_free). */
remat_status remat_tools_sweep_scaling(const remat_sweep_opts *o, const remat_sweep_row *rows, int64_t fixed,
                                       int on_live, int with_plan, remat_scaling *sc, remat_error *err);

#endif
