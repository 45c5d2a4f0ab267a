/* curve.h - the memory curve of one training iteration of a trace.
 *
 * Modelling assumptions:
 *  - live bytes after an event = sum of the bytes of every alloc so far minus the
 *    bytes of every free so far, replayed from the trace's first event (so the
 *    parameters allocated before the iteration are counted); a free removes the
 *    bytes (and role) of the alloc it matches by tensor id.
 *  - reserved bytes = the segments of the caching allocator model
 *    (core/alloc/alloc_model.h) after replaying the same events, configured from the
 *    trace's allocator_config ("" = PyTorch defaults). A trace whose
 *    allocator_config is "exact" or "none" has no reserved curve.
 *  - the iteration is iters[iter].first_event .. + n_events when the trace has
 *    summaries, else the events whose `iter` field equals it (first to last).
 *  - x is seconds since the iteration's first event (REMAT_CURVE_X_TIME) or the
 *    number of the iteration's events applied so far (REMAT_CURVE_X_EVENT); the
 *    curve starts with the point before the first event (x = 0). Event times
 *    within the iteration must not decrease.
 *  - the peak is the first point where the curve reaches its maximum; its place
 *    (block, layer, phase, role) is that of the event that reached it.
 */
#ifndef REMAT_PLOTS_CURVE_H
#define REMAT_PLOTS_CURVE_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/io/trace.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_curve_x { REMAT_CURVE_X_TIME = 0, REMAT_CURVE_X_EVENT = 1 } remat_curve_x;

typedef struct remat_curve_opts {
    int iter;             /* training step to draw; -1: the last one */
    remat_curve_x x;
    int64_t max_points;   /* reduction target per series (reduce.h); 0: REMAT_REDUCE_DEFAULT_POINTS */
    int reserved;         /* 1: replay the caching model for the reserved curve (when available) */
    int full;             /* 1: keep every point (no reduction; for tests and exports) */
    int64_t budget_bytes; /* > 0: the memory plot draws it as a dashed line (plot --budget) */
} remat_curve_opts;

remat_curve_opts remat_curve_opts_default(void);

/* One reduced series. x ascending; event[i] is the absolute index of the event
 * after which the value holds, -1 for the start point. */
typedef struct remat_series {
    double *x;
    int64_t *bytes;
    int64_t *event;
    int64_t n;            /* kept points */
    int64_t n_full;       /* points before reduction (events of the iteration + 1) */
    int64_t peak;         /* exact maximum over the full series */
    int64_t peak_i;       /* index into the kept arrays of the peak point */
} remat_series;

typedef struct remat_phase_span {
    double x0, x1;        /* [x0, x1) in the curve's x units */
    uint8_t phase;        /* remat_phase */
} remat_phase_span;

/* Where a peak happened. */
typedef struct remat_peak_site {
    int64_t event;        /* absolute event index; -1: the start of the iteration */
    double x;
    int32_t block, layer;
    uint8_t phase, role;
} remat_peak_site;

typedef struct remat_mem_curve {
    int iter;
    int64_t first_event, n_events;   /* the iteration's slice of the trace */
    remat_curve_x xkind;
    double x_end;                    /* x of the last point */
    remat_series live;
    remat_series reserved;           /* n == 0 when not available */
    int has_reserved;
    remat_phase_span *spans;         /* phases over x, in order, tiling [0, x_end] */
    int64_t n_spans;
    remat_peak_site live_site, reserved_site;
    int64_t by_role_at_peak[REMAT_ROLE_COUNT]; /* live bytes per role at the live peak */
    int64_t start_live;              /* live bytes before the iteration's first event */
} remat_mem_curve;

/* Builds the curve of one iteration. origin names the trace in messages (its file).
 * REMAT_ERR_INPUT "<origin>: <field>: <expected>" for: no events, --iter out of
 * range, an iteration slice outside the events, a free of a tensor that is not live,
 * an alloc of a tensor already live, negative bytes, time going backwards, an
 * unreadable allocator_config. REMAT_ERR_NOMEM when memory runs out. On failure
 * *out is left empty. Free with remat_mem_curve_free. */
remat_status remat_mem_curve_build(const remat_trace *t, const char *origin, const remat_curve_opts *o,
                                   remat_mem_curve *out, remat_error *err);
void remat_mem_curve_free(remat_mem_curve *c);

/* More than this many phase runs are merged to one phase per x bucket (the phase
 * covering most of the bucket): thinner runs would not show in a figure anyway. */
#define REMAT_CURVE_MAX_SPANS 4096

#ifdef __cplusplus
}
#endif
#endif
