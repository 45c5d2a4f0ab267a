/* report.h - what `remat verify` prints: the human table (default) and the one JSON
 * object of docs/interfaces.md (--json), for a plan, a grid of plans and the
 * compressor checks. Nothing here decides a verdict; it only prints results.
 */
#ifndef REMAT_VERIFY_REPORT_H
#define REMAT_VERIFY_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "core/model/model.h"
#include "core/model/plan.h"
#include "verify/compare.h"
#include "verify/compress_check.h"
#include "verify/dump_compare.h"
#include "verify/plan_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the run was: printed in headers and JSON. */
typedef struct remat_verify_context {
    const remat_model *model;
    const remat_plan *plan;  /* may be NULL (grid) */
    const char *plan_path;   /* may be NULL or "" */
    const char *backend;     /* "ref", "cuda" */
    uint64_t seed;
    int threads;             /* reference backend GEMM threads (0: not applicable) */
    int equivalence_only;    /* only equivalence failures count (remat_verify_counted) */
    int tensors;             /* the per-tensor table: REMAT_VERIFY_TABLE_* */
} remat_verify_context;

enum {
    REMAT_VERIFY_TABLE_DIFFERING = 0, /* the differing tensors, then a count of the identical ones (default) */
    REMAT_VERIFY_TABLE_ALL = 1,       /* every tensor */
    REMAT_VERIFY_TABLE_NONE = 2,      /* no table (--quiet) */
};

/* A plan in the plan notation (core/model/plan_notation.h): "b1:bit/k4,b3/split@fc3b",
 * or "no checkpointing". */
const char *remat_verify_plan_desc(const remat_model *m, const remat_plan *p, char *buf, size_t len);

/* One line per tensor (name, shape, differing elements, max |diff|, first differing
 * multi-index with both bit patterns); name_a/name_b name the two sides for tensors
 * present in one only. table (REMAT_VERIFY_TABLE_*): every tensor, only the differing
 * ones and a line counting the others, or nothing. */
void remat_verify_print_tensors(FILE *f, const remat_verify_cmp *cmp, const char *name_a, const char *name_b,
                                int table);
/* The same as a JSON array. */
void remat_verify_json_tensors(FILE *f, const remat_verify_cmp *cmp);

/* Plan verification: one line per tensor, the saving/recompute/compression lines,
 * the verdict line. */
void remat_verify_print_human(FILE *f, const remat_verify_context *cx, const remat_verify_result *r);
/* The one "verdict: ..." line that ends the human report (`verify --json` prints it on
 * stderr too, for CI logs). */
void remat_verify_print_verdict(FILE *f, const remat_verify_context *cx, const remat_verify_result *r);
/* The same as one JSON object (and a newline). */
void remat_verify_print_json(FILE *f, const remat_verify_context *cx, const remat_verify_result *r);

/* Grid rows: filled by the caller for each plan verified. */
typedef struct remat_verify_grid_row {
    char plan[256];          /* remat_verify_plan_desc */
    unsigned failures;
    int n_different;         /* tensors that differ */
    double peak_saving, eof_saving;
    double step_time_s;      /* the plan's step time as the executor measured it */
    double wall_s;           /* verifying it: run, capture, compare */
    char first_diff[REMAT_VERIFY_NAME_LEN]; /* first differing tensor, "" if none */
    int index;               /* the plan's place in the whole grid's order (slices and ranks merge by it) */
} remat_verify_grid_row;

typedef struct remat_verify_grid_summary {
    int64_t grid_size;       /* valid plans of the model */
    int sampled;             /* 1 when rows are a seeded sample */
    uint64_t sample_seed;
    double total_wall_s;
    double baseline_step_time_s;
    int slice_i, slice_n;    /* the rows are slice i of n (remat verify --grid --slice i/n); n 0: the whole grid */
    int no_times;            /* --json leaves out the measured times (byte-identical JSON across runs) */
} remat_verify_grid_summary;

/* Human table. With more than REMAT_VERIFY_GRID_ROWS rows and all_rows == 0, only
 * the rows that break the contract and the REMAT_VERIFY_GRID_TOP largest peak
 * savings are printed (the counts and the verdict always cover every row). */
#define REMAT_VERIFY_GRID_ROWS 200
#define REMAT_VERIFY_GRID_TOP 10
void remat_verify_grid_print_human(FILE *f, const remat_verify_context *cx, const remat_verify_grid_summary *s,
                                   const remat_verify_grid_row *rows, int n, int all_rows);
/* The grid's one "verdict: ..." line (on stderr too with --json). */
void remat_verify_grid_print_verdict(FILE *f, const remat_verify_context *cx, const remat_verify_grid_row *rows,
                                     int n);
/* With s->slice_n > 0 the object also carries "slice", "T", "N" and each row its
 * "index" and "failures", what remat_verify_grid_merge needs (grid_merge.h). */
void remat_verify_grid_print_json(FILE *f, const remat_verify_context *cx, const remat_verify_grid_summary *s,
                                  const remat_verify_grid_row *rows, int n);
/* Rows whose failures make the grid fail: the same rule as one plan (every failure,
 * or the equivalence ones alone with equivalence_only; remat_verify_counted). */
int remat_verify_grid_failed(const remat_verify_grid_row *rows, int n, int equivalence_only);

void remat_verify_compress_print_human(FILE *f, const remat_verify_compress_report *r);
void remat_verify_compress_print_json(FILE *f, const remat_verify_compress_report *r);

/* Two dumps (verify/dump_compare.h); table: REMAT_VERIFY_TABLE_*. */
void remat_verify_dump_print_human(FILE *f, const char *path_a, const char *path_b,
                                   const remat_verify_dump_result *r, int table);
void remat_verify_dump_print_json(FILE *f, const char *path_a, const char *path_b,
                                  const remat_verify_dump_result *r);


#ifdef __cplusplus
}
#endif
#endif
