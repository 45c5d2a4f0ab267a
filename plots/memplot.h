/* memplot.h - figures drawn from traces: the memory curve of one iteration, and
 * the breakdown of its peak by role.
 *
 *   remat_plot_input in[2] = {{&base, "base.h5", NULL}, {&plan, "plan.h5", NULL}};
 *   remat_figure_opts fo = remat_figure_opts_default(); fo.out = "out/mem.png";
 *   remat_curve_opts co = remat_curve_opts_default();
 *   remat_figure_files files;
 *   remat_plot_memory(in, 2, &co, &fo, &files, &err);   // out/mem.dat, out/mem.gp, out/mem.png
 *
 * Memory figure: one solid curve per trace (live bytes) and a dashed one in the same
 * colour (reserved bytes of the caching model) where available; each curve's peak
 * marked with its value (and, for live bytes, the block/layer and phase where it
 * happens); under the curves one strip per trace shows its phases (forward,
 * recompute, loss, backward, optimizer) in colour, and with a single trace the
 * phases also shade the background. The legend names each trace by its label.
 *
 * Breakdown figure: one stacked bar per trace, the live bytes at its live peak split
 * by role (parameters, gradients, optimizer state, batch, saved activations,
 * compressed inputs, neuron state, activation gradients, transients, workspace),
 * the total on top and the peak's block/layer under the bar.
 *
 * Both return the errors of remat_figure_files_init, remat_mem_curve_build (naming
 * the input's origin), file writing and remat_figure_render (figure.h).
 */
#ifndef REMAT_PLOTS_MEMPLOT_H
#define REMAT_PLOTS_MEMPLOT_H

#include "core/base/status.h"
#include "core/io/trace.h"
#include "plots/curve.h"
#include "plots/figure.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_PLOT_MAX_INPUTS 16

typedef struct remat_plot_input {
    const remat_trace *trace;
    const char *origin;   /* its file name (messages; its stem names an unparsable plan) */
    const char *label;    /* legend name; NULL or "": the plan's short name (names.h),
                             with the backend appended when the inputs' backends differ */
} remat_plot_input;

/* When a time axis is asked for but a trace's iteration spans no time (all events
 * at one instant, as in a trace without timing), the figure uses the event axis for
 * every trace instead. */
remat_status remat_plot_memory(const remat_plot_input *in, int n, const remat_curve_opts *co,
                               const remat_figure_opts *fo, remat_figure_files *files, remat_error *err);

remat_status remat_plot_breakdown(const remat_plot_input *in, int n, const remat_curve_opts *co,
                                  const remat_figure_opts *fo, remat_figure_files *files, remat_error *err);

/* The live tensors at the live-byte peak of step iter (-1: the last), grouped by
 * (layer, role), largest first: which layer's tensors hold the peak, not only which
 * roles (`plot --breakdown` prints it). layer -1: tensors of no layer (the batch,
 * workspaces of the loss). Returns the groups written (at most max; -1 out of memory);
 * *peak_event, *peak_bytes: where and how high the peak is (-1, 0 for an empty trace). */
typedef struct remat_layer_bytes {
    int32_t layer;
    uint8_t role;         /* remat_role */
    int64_t bytes;
    int tensors;
} remat_layer_bytes;
int remat_peak_by_layer(const remat_trace *t, int iter, remat_layer_bytes *out, int max, int64_t *peak_event,
                        int64_t *peak_bytes);

#ifdef __cplusplus
}
#endif
#endif
