/* extplot.h - the figure of an external allocation stream (an imported PyTorch
 * snapshot): for one device, allocated bytes (solid) and reserved bytes (dashed)
 * over the recorded window, the peak marked with its value and the frames of the
 * largest blocks live at it, and a box with the peak broken down by allocation site
 * (the bytes live at the peak summed per label, largest first: what PyTorch's
 * memory_viz shows as its stack view).
 *
 * Each curve is reduced to at most max_points points with the M4 reduction
 * (plots/reduce.h): the exact peak of each is always kept.
 *
 *   remat_ext_curve c; remat_ext_curve_build(&t, 0, &c, &err);
 *   remat_plot_ext(&t, &c, "trace.h5", 4000, &fo, &files, &err);  // FIG.dat, FIG.gp, FIG.png
 *
 * Errors: those of remat_figure_files_init, file writing and remat_figure_render.
 */
#ifndef REMAT_PLOTS_EXTPLOT_H
#define REMAT_PLOTS_EXTPLOT_H

#include "core/io/ext_trace.h"
#include "plots/ext_curve.h"
#include "plots/figure.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of the breakdown box (and of the peak's largest blocks). */
#define REMAT_EXTPLOT_TOP 6

remat_status remat_plot_ext(const remat_ext_trace *t, const remat_ext_curve *c, const char *origin, int64_t max_points,
                            const remat_figure_opts *fo, remat_figure_files *files, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
