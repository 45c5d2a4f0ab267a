/* items.h - (internal to plots/) the per-trace state the trace figures share:
 * its curve, its model (for names) and its legend label. */
#ifndef REMAT_PLOTS_ITEMS_H
#define REMAT_PLOTS_ITEMS_H

#include "core/model/model.h"
#include "plots/curve.h"
#include "plots/memplot.h"

typedef struct remat_plot_item {
    remat_mem_curve curve;
    remat_model model;
    int has_model;
    char label[160];
} remat_plot_item;

/* Builds the curves (falling back to the event axis as memplot.h says), models and
 * unique labels of n inputs (1..REMAT_PLOT_MAX_INPUTS). On failure frees what it made. */
remat_status remat_plot_items_build(const remat_plot_input *in, int n, const remat_curve_opts *co,
                                    remat_plot_item *items, remat_error *err);
void remat_plot_items_free(remat_plot_item *items, int n);
/* " - model <name> (T=.., N=..)" of the first item with a model, for a title ("" when none). */
void remat_plot_items_model_name(const remat_plot_item *items, int n, char *buf, size_t len);
/* What the traces' curves describe, for a figure's title: "remat reference backend" or
 * "remat CUDA backend" (core/io/trace.h) when they share one, else "remat's executor". */
const char *remat_plot_inputs_execution(const remat_plot_input *in, int n);

/* Colours shared by the figures ("#rrggbb"). */
const char *remat_plot_trace_color(int i);
const char *remat_plot_phase_color(int phase, int strong);

#endif
