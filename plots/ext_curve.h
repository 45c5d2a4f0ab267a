/* ext_curve.h - the memory curves of an external allocation stream (core/io/ext_trace.h,
 * e.g. an imported PyTorch snapshot), for one device: allocated bytes (live blocks) and
 * reserved bytes (segments) before the first event and after each event, the peak,
 * and what was live at the peak.
 *
 * Assumptions:
 *  - allocated = the bytes requested by live blocks (remat_ext_allocated_after in
 *    core/io/ext_trace.h: how blocks live before the window are reconstructed, and
 *    what a self-contradicting stream does).
 *  - reserved = the segments' bytes: at the end the sum of total_size; earlier ones
 *    undo segment_alloc/segment_map (+) and segment_free/segment_unmap (-).
 *  - x is seconds since the first event when every event has time_us, else the event
 *    index (x_is_time says which).
 * Cost: O(n) time and memory in the events, with one hash of live addresses.
 */
#ifndef REMAT_PLOTS_EXT_CURVE_H
#define REMAT_PLOTS_EXT_CURVE_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/io/ext_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_ext_curve {
    int32_t device;
    int64_t n;                 /* points: n_events + 1 */
    int x_is_time;
    double *x;                 /* [n] */
    int64_t *allocated;        /* [n] bytes */
    int64_t *reserved;         /* [n] bytes */
    int64_t peak_allocated, peak_point;          /* first point of the maximum */
    int64_t peak_reserved, peak_reserved_point;
    remat_ext_live *peak_live; int64_t n_peak_live; /* live at peak_point, largest first */
    int64_t inconsistent;      /* events the end state contradicts (double allocs, negative totals) */
} remat_ext_curve;

/* Builds the curves of device index `device` (0..t->n_devices-1; REMAT_ERR_INPUT
 * otherwise). On failure *c is empty. */
remat_status remat_ext_curve_build(const remat_ext_trace *t, int32_t device, remat_ext_curve *c, remat_error *err);
void remat_ext_curve_free(remat_ext_curve *c);

/* The bytes live at the peak summed by label, largest first: writes up to max rows
 * into labels/bytes (label -1: allocated before the window, frames unknown) and returns
 * the number of distinct labels. */
int64_t remat_ext_curve_breakdown(const remat_ext_curve *c, int32_t *labels, int64_t *bytes, int64_t max,
                                  remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
