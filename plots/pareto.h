/* pareto.h - the Pareto-front file of a search, and its figure.
 *
 * The search writes (and `remat plot --pareto` reads) one JSON object:
 *
 *   {
 *     "points": [
 *       {"peak_bytes": 74130040, "time_s": 1.18, "overhead": 0.12, "chosen": true,
 *        "label": "ckpt b1,b2 (bit, k=4)"},
 *       ...
 *     ],
 *     "baseline": {"peak_bytes": 109126264, "time_s": 1.05},
 *     "budget_bytes": 80000000
 *   }
 *
 *  points        required, at least one; each a candidate plan the search evaluated
 *                (the front, or more: the figure draws all of them and joins the
 *                non-dominated ones)
 *    peak_bytes  required, integer >= 0: predicted peak live bytes of the plan
 *    time_s      required, number >= 0: predicted step time in seconds
 *    overhead    optional, number >= -1: time_s / baseline.time_s - 1 (0.12 = 12 %
 *                slower); derived from baseline.time_s when absent
 *    chosen      optional, boolean, default false: the plan the search picked
 *    label       optional, string: the plan's short name (default "plan <i>")
 *  baseline      optional: the plan that checkpoints nothing (peak_bytes, time_s as above)
 *  budget_bytes  optional, integer > 0: the memory budget the search ran under
 * Unknown fields are ignored (so the search may add its own).
 *
 * Figure: predicted peak (MiB/GiB) against predicted time overhead (%); every point
 * drawn, the non-dominated ones (no other point has both a lower-or-equal peak and a
 * lower-or-equal overhead, one of them strictly) joined as a staircase, the baseline
 * as a square at 0 %, the chosen plan as a large star with its label, and the budget
 * as a dashed horizontal line.
 */
#ifndef REMAT_PLOTS_PARETO_H
#define REMAT_PLOTS_PARETO_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"
#include "plots/figure.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_pareto_point {
    int64_t peak_bytes;
    double time_s;
    double overhead;   /* fraction: 0.12 = 12 % slower than the baseline */
    int chosen;
    char label[128];
} remat_pareto_point;

typedef struct remat_pareto {
    remat_pareto_point *points; /* owned */
    int n_points;
    int has_baseline;
    int64_t baseline_peak_bytes;
    double baseline_time_s;
    int64_t budget_bytes;       /* 0: none */
    /* optional, what the front is about (remat search --pareto writes them) */
    char model[64];             /* "": not given */
    int64_t T, N;
    char peak_on[16];           /* "reserved", "live" or "" (not said) */
    int64_t budget_total_bytes; /* the budget as given; 0: not given */
    int64_t device_overhead_bytes;
} remat_pareto;

/* Parses the JSON text. Errors: REMAT_ERR_INPUT "<origin>: <field>: <expected>", with
 * fields named like points[3].peak_bytes; "overhead" missing while baseline.time_s is
 * absent or 0 is an error on points[i].overhead. On failure *out is empty. */
remat_status remat_pareto_parse(const char *text, size_t len, const char *origin, remat_pareto *out, remat_error *err);
/* Reads a file (REMAT_ERR_IO "<path>: cannot read: <reason>") and parses it. */
remat_status remat_pareto_read(const char *path, remat_pareto *out, remat_error *err);
/* Writes the format above (through <path>.tmp + rename); labels are JSON-escaped. */
remat_status remat_pareto_write(const char *path, const remat_pareto *p, remat_error *err);
void remat_pareto_free(remat_pareto *p);

/* Indices of the non-dominated points, sorted by overhead then peak, into idx (room
 * for n_points); returns their number. Equal points count once (the first). */
int remat_pareto_front(const remat_pareto *p, int *idx);

/* Draws the figure (figure.h for the files and errors). origin names the input in
 * the default title. */
remat_status remat_plot_pareto(const remat_pareto *p, const char *origin, const remat_figure_opts *fo,
                               remat_figure_files *files, remat_error *err);

/* Reads a whole file into a NUL-terminated buffer (remat_xfree it) through the
 * input reader (core/io/input_file.h: FIFOs never hang, folders are named), at
 * most REMAT_PLOT_MAX_FILE_BYTES. Shared by the JSON readers of plots/. */
#define REMAT_PLOT_MAX_FILE_BYTES ((size_t)256 << 20)
remat_status remat_plot_read_file(const char *path, char **text, size_t *len, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
