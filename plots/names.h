/* names.h - human names for what a figure shows: the place of a peak (block and
 * layer names from the model text stored in the trace) and a short name for a
 * trace's plan (for legends and bar labels). */
#ifndef REMAT_PLOTS_NAMES_H
#define REMAT_PLOTS_NAMES_H

#include <stddef.h>

#include "core/model/model.h"
#include "core/io/trace.h"
#include "plots/curve.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Parses t->model_text into *m. Returns 1 on success (free with remat_model_free),
 * 0 when the trace holds no model text or it does not parse (then *m is empty and
 * names fall back to indices, "block 2 / layer 5"). */
int remat_plot_model_of(const remat_trace *t, remat_model *m);

/* "b2/sn2", "b2" (no layer), "block 2/layer 5" (no model), "" (neither). */
void remat_plot_site_name(const remat_model *m, int32_t block, int32_t layer, char *buf, size_t len);
/* "b2/sn2, backward" - site name and phase; "start of iteration" for event -1. */
void remat_plot_site_label(const remat_model *m, const remat_peak_site *s, char *buf, size_t len);

/* Short name of the trace's plan in the plan notation (core/model/plan_notation.h):
 * "no checkpointing" when its plan text is empty or checkpoints nothing, else e.g.
 * "b1:bit/k4,b2", at most 60 characters (ending in "..." when cut). When the plan
 * does not parse against the model, `fallback` (e.g. the file's stem), or "plan". */
void remat_plot_plan_label(const remat_trace *t, const remat_model *m, const char *fallback, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
