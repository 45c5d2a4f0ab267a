/* scaling.h - peak memory against T (or N): the file the simulator's rescaling
 * writes, and its figure ("memory grows linearly with T without checkpointing,
 * as sqrt(T) with it").
 *
 *   {
 *     "x_name": "T",
 *     "series": [
 *       {"name": "baseline", "x": [16, 32, 64, 128], "peak_bytes": [..4 integers..]},
 *       {"name": "best plan", "x": [16, 32, 64, 128], "peak_bytes": [..], "fit": "sqrt"}
 *     ]
 *   }
 *
 *  x_name      required, string: what x is ("T" time steps, "N" batch size, or another name)
 *  N, T        optional, integers > 0: the batch size (or T) held fixed while x varies;
 *              the figure's title gives it ("Peak memory against T at N = 128")
 *  budget_bytes optional, integer > 0: a memory budget, drawn as a dashed line
 *  y_name      optional, short string: what the peaks are (default "peak live memory")
 *  series      required, 1 to 16 objects:
 *    name        required, string (legend)
 *    x           required, numbers > 0, at least one
 *    peak_bytes  required, integers >= 0, as many as x
 *    fit         optional: "linear" (a + b*x), "sqrt" (a + b*sqrt(x)) or "none".
 *                Default: the series named "baseline" (else the first) gets "linear";
 *                the last other series gets whichever of "sqrt" and "linear" fits its
 *                points better (least squared error; "linear" unless sqrt is strictly
 *                better on 3 or more points), so no square root is forced onto a
 *                series that grows linearly; the rest "none".
 * Unknown fields are ignored.
 *
 * Figure: each series as points joined by lines (the data decides which reference
 * it follows; the title claims nothing); each fitted reference (least
 * squares over the series' points, needs two distinct x) as a faint dashed curve
 * over the whole x range, its legend giving the fitted form (e.g. "~ T: 1.2 MiB +
 * 0.81 MiB x T"). Linear axes from 0, so a straight line and a square root look
 * like what they are.
 */
#ifndef REMAT_PLOTS_SCALING_H
#define REMAT_PLOTS_SCALING_H

#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"
#include "plots/figure.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_SCALING_MAX_SERIES 16

typedef enum remat_scaling_fit { REMAT_FIT_NONE = 0, REMAT_FIT_LINEAR = 1, REMAT_FIT_SQRT = 2 } remat_scaling_fit;

typedef struct remat_scaling_series {
    char name[128];
    int n;
    double *x;          /* owned */
    int64_t *peak_bytes;/* owned */
    remat_scaling_fit fit;
    int fit_given;      /* 1 when the file said "fit" */
} remat_scaling_series;

typedef struct remat_scaling {
    char x_name[32];
    int64_t at_N, at_T;      /* the value held fixed (0: not given) */
    int64_t budget_bytes;    /* 0: no budget line */
    char y_name[48];         /* what the peaks are ("" = "peak live memory") */
    int n_series;
    remat_scaling_series series[REMAT_SCALING_MAX_SERIES];
} remat_scaling;

/* Parses the JSON text and applies the default fits. REMAT_ERR_INPUT
 * "<origin>: series[1].peak_bytes: <expected>" and the like. On failure *out is empty. */
remat_status remat_scaling_parse(const char *text, size_t len, const char *origin, remat_scaling *out,
                                 remat_error *err);
remat_status remat_scaling_read(const char *path, remat_scaling *out, remat_error *err);
/* Writes the format above (fit written when fit_given), through <path>.tmp + rename. */
remat_status remat_scaling_write(const char *path, const remat_scaling *s, remat_error *err);
void remat_scaling_free(remat_scaling *s);
/* s->x and s->peak_bytes: n zeroes each (owned by s); s->n = n. REMAT_ERR_NOMEM. */
remat_status remat_scaling_series_alloc(remat_scaling_series *s, int n, remat_error *err);

/* Least squares y = a + b*g(x), g = x or sqrt(x). Returns 0 (a, b untouched) when
 * fewer than two distinct x. */
int remat_scaling_fit_series(const remat_scaling_series *s, remat_scaling_fit kind, double *a, double *b);
/* The default fit of a series that is not the baseline (see "fit" above). */
remat_scaling_fit remat_scaling_best_fit(const remat_scaling_series *s);

remat_status remat_plot_scaling(const remat_scaling *s, const char *origin, const remat_figure_opts *fo,
                                remat_figure_files *files, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
