/* reduce_bench.c - the fixed-order reduction (core/exec/reduce.h: each rank's blocks
 * broadcast in turn, every rank folding all blocks in ascending order) against a plain
 * MPI_Allreduce(MPI_SUM) of the same gradient (order not fixed), under mpirun:
 *
 *   mpirun -np R bazel-bin/bench/reduce_bench [floats] [blocks] [reps]
 *
 * Rank 0 prints one JSON line: the median and best wall time per call of both, the
 * bytes each holds besides the gradient, and whether the Allreduce's sum has the bits of
 * the fixed-order fold (it may, by luck of the world size, or may not).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/rng.h"
#include "core/exec/reduce.h"
#include "mpi/comm_mpi.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    remat_comm c;
    remat_error err = {0};
    if (remat_mpi_init(&argc, &argv, &c, &err) != REMAT_OK) {
        fprintf(stderr, "reduce_bench: %s\n", err.msg);
        return 1;
    }
    int64_t n = argc > 1 ? atoll(argv[1]) : 1 << 20;
    int blocks = argc > 2 ? atoi(argv[2]) : 8, reps = argc > 3 ? atoi(argv[3]) : 9;
    remat_shard sh = {blocks, c.size, c.rank, blocks, c.size > 1 ? &c : NULL};
    if (remat_shard_check(&sh, "reduce_bench", &err) != REMAT_OK) {
        if (c.rank == 0) fprintf(stderr, "reduce_bench: %s\n", err.msg);
        remat_mpi_finalize();
        return 2;
    }
    int L = remat_shard_local_blocks(&sh);
    float *local = malloc((size_t)L * n * sizeof(float)), *recv = malloc((size_t)L * n * sizeof(float));
    float *out = malloc((size_t)n * sizeof(float)), *sum = malloc((size_t)n * sizeof(float));
    float *ar = malloc((size_t)n * sizeof(float));
    double *tf = malloc((size_t)reps * sizeof(double)), *ta = malloc((size_t)reps * sizeof(double));
    for (int b = 0; b < L; b++)
        for (int64_t i = 0; i < n; i++)
            local[b * n + i] = remat_rng_uniform(7, 9, (uint64_t)(c.rank * L + b), (uint64_t)i) - 0.5f;
    for (int64_t i = 0; i < n; i++) { /* the rank's own partial for the Allreduce: its blocks in order */
        float s = local[i];
        for (int b = 1; b < L; b++) s += local[b * n + i];
        sum[i] = s;
    }
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        remat_reduce_fold_f32(&sh, out, local, recv, n, &err);
        MPI_Barrier(MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        MPI_Allreduce(sum, ar, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        tf[r] = t1 - t0;
        ta[r] = t2 - t1;
    }
    int same = memcmp(out, ar, (size_t)n * sizeof(float)) == 0;
    qsort(tf, (size_t)reps, sizeof *tf, cmp_d);
    qsort(ta, (size_t)reps, sizeof *ta, cmp_d);
    if (c.rank == 0)
        printf("{\"ranks\":%d,\"floats\":%lld,\"blocks\":%d,\"reps\":%d,\"fold_median_s\":%.6g,\"fold_best_s\":%.6g,"
               "\"allreduce_median_s\":%.6g,\"allreduce_best_s\":%.6g,\"fold_extra_bytes\":%lld,"
               "\"allreduce_extra_bytes\":%lld,\"allreduce_same_bits\":%s,\"mpi\":\"%s\"}\n",
               c.size, (long long)n, blocks, reps, tf[reps / 2], tf[0], ta[reps / 2], ta[0],
               (long long)((c.size > 1 ? 2 : 1) * (int64_t)L * n * 4), (long long)(n * 4), same ? "true" : "false",
               remat_mpi_library());
    free(local), free(recv), free(out), free(sum), free(ar), free(tf), free(ta);
    remat_mpi_finalize();
    return 0;
}
