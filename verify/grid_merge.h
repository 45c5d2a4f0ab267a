/* grid_merge.h - one grid from its slices: the JSON of `remat verify --grid --slice i/n
 * --json` for i = 0 .. n-1 (each slice verifies the plans at places q with q % n == i),
 * or the rows the ranks of `mpirun -np n remat verify --grid` gathered. The merged rows
 * are those one process verifying the whole grid produces, in its order, so the merged
 * report (and its --json, with --no-times byte for byte) is the whole grid's.
 *
 *   remat_verify_grid_merged g;
 *   if (remat_verify_grid_merge(paths, n, &g, &err) != REMAT_OK) ...;
 *   remat_verify_context cx = {&g.model, NULL, NULL, g.backend, g.seed, g.threads, g.equivalence_only, 0};
 *   remat_verify_grid_print_json(stdout, &cx, &g.summary, g.rows, g.n_rows);
 *   remat_verify_grid_merged_free(&g);
 */
#ifndef REMAT_VERIFY_GRID_MERGE_H
#define REMAT_VERIFY_GRID_MERGE_H

#include "core/model/model.h"
#include "verify/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sorts rows by their place in the grid; REMAT_ERR_INPUT when two share one. */
remat_status remat_verify_grid_sort(remat_verify_grid_row *rows, int n, remat_error *err);

typedef struct remat_verify_grid_merged {
    remat_model model;        /* name, path, T and N only (what the reports print) */
    char name[REMAT_NAME_LEN], path[4096], backend[16];
    uint64_t seed;
    int threads, equivalence_only;
    remat_verify_grid_summary summary; /* slice_n 0: the whole grid */
    remat_verify_grid_row *rows;
    int n_rows;
} remat_verify_grid_merged;

/* Reads the n slice files: every slice 0 .. n-1 of one grid exactly once (same model,
 * backend, seed, threads, sample, equivalence rule). A file that is not one, or a
 * missing, repeated or foreign slice: REMAT_ERR_INPUT naming the file and field. */
remat_status remat_verify_grid_merge(const char *const *paths, int n, remat_verify_grid_merged *out,
                                     remat_error *err);
void remat_verify_grid_merged_free(remat_verify_grid_merged *g);

#ifdef __cplusplus
}
#endif
#endif
