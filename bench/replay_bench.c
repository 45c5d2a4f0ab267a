/* replay_bench.c - replay throughput of the simulator's allocator models.
 *
 *   bazel run //bench:replay_bench -- [--events N] [--repeats R] [--json]
 *
 * Builds a trace of at least N events (default 10 million) the way the simulator
 * produces them: the executor dry-runs a generated chain (100 blocks of
 * Linear(64)-LIF, T=16, N=16, every block checkpointed with k=16 time chunks, so
 * each step allocates and frees many small tensors) for as many steps as it takes,
 * with virtual time from a recorded baseline. Then times, best of R:
 *  - the flat loop (sim/des.c remat_des_replay_flat): every event of the array
 *    into one allocator model, EXACT and CACHING;
 *  - the full discrete-event path (remat_des_replay with event times): the event
 *    queue (binary heap on (time, seq)) feeding both models at once, with per-step
 *    peak restarts.
 * Prints events per second for each; --json prints one JSON object.
 */
#include "bench/bench_chain.h" /* first: it sets _POSIX_C_SOURCE */

#include <stdlib.h>

#include "core/base/clock.h"
#include "core/alloc/alloc_model.h"
#include "sim/des.h"
#include "sim/sim.h"

int main(int argc, char **argv) {
    int64_t want = 10 * 1000 * 1000;
    int repeats = 3, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--events") && i + 1 < argc) want = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) repeats = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json")) json = 1;
        else {
            fprintf(stderr, "usage: replay_bench [--events N] [--repeats R] [--json]\n");
            return 2;
        }
    }
    remat_error err = {0};
    remat_model m;
    remat_trace base;
    const int blocks = 100, T = 16;
    if (bench_chain_baseline(blocks, 64, T, 16, 1, &m, &base, &err) != REMAT_OK) {
        fprintf(stderr, "replay_bench: %s\n", err.msg);
        return 1;
    }
    remat_plan plan;
    remat_plan_init_empty(&m, &plan, &err);
    for (int b = 0; b < m.n_blocks; b++) {
        plan.blocks[b].checkpoint = 1;
        plan.blocks[b].k = T;
    }
    /* events per step from a short run, then enough steps */
    remat_sim_opts so = remat_sim_opts_default();
    so.iters = 2;
    remat_sim *s = remat_sim_init(&base, &so, &err);
    if (!s || remat_sim_set_plan(s, &plan, &err) != REMAT_OK || remat_sim_run(s, &err) != REMAT_OK) {
        fprintf(stderr, "replay_bench: %s\n", err.msg);
        return 1;
    }
    int64_t per_step = remat_sim_results(s)->iters[1].events;
    remat_sim_free(s);
    so.iters = (int)((want + per_step - 1) / per_step) + 1;
    so.check_baseline = 0;
    double t0 = remat_now_s();
    s = remat_sim_init(&base, &so, &err);
    if (!s || remat_sim_set_plan(s, &plan, &err) != REMAT_OK || remat_sim_run(s, &err) != REMAT_OK) {
        fprintf(stderr, "replay_bench: %s\n", err.msg);
        return 1;
    }
    double gen_s = remat_now_s() - t0;
    const remat_trace *t = remat_sim_trace(s);
    int64_t n = t->n_events;

    double best_flat[2] = {1e30, 1e30}, best_des = 1e30;
    int64_t peaks[2] = {0, 0};
    remat_alloc_kind kinds[2] = {REMAT_ALLOC_EXACT, REMAT_ALLOC_CACHING};
    for (int r = 0; r < repeats; r++) {
        for (int k = 0; k < 2; k++) {
            remat_alloc_model *am = remat_alloc_model_init(kinds[k], NULL, &err);
            double a = remat_now_s();
            peaks[k] = remat_des_replay_flat(am, kinds[k], t->events, n, &err);
            double d = remat_now_s() - a;
            remat_alloc_model_free(am);
            if (peaks[k] < 0) {
                fprintf(stderr, "replay_bench: %s\n", err.msg);
                return 1;
            }
            if (d < best_flat[k]) best_flat[k] = d;
        }
        double *times = remat_xmalloc((size_t)n * sizeof *times, &err);
        remat_des_iter_peaks *pk = remat_xcalloc((size_t)t->n_iters, sizeof *pk, &err);
        for (int64_t i = 0; i < n; i++) times[i] = t->events[i].time_s;
        remat_des_replay_opts ro = remat_des_replay_opts_default();
        double a = remat_now_s();
        remat_status st = remat_des_replay(t, times, &ro, pk, t->n_iters, &err);
        double d = remat_now_s() - a;
        remat_xfree(times);
        remat_xfree(pk);
        if (st != REMAT_OK) {
            fprintf(stderr, "replay_bench: %s\n", err.msg);
            return 1;
        }
        if (d < best_des) best_des = d;
    }
    double eps_exact = (double)n / best_flat[0], eps_caching = (double)n / best_flat[1], eps_des = (double)n / best_des;
    if (json) {
        printf("{\"events\":%lld,\"steps\":%d,\"blocks\":%d,\"generate_s\":%.3f,\"repeats\":%d,"
               "\"exact_events_per_s\":%.0f,\"caching_events_per_s\":%.0f,\"des_both_models_events_per_s\":%.0f,"
               "\"exact_s\":%.4f,\"caching_s\":%.4f,\"des_s\":%.4f,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld}\n",
               (long long)n, (int)t->n_iters, blocks, gen_s, repeats, eps_exact, eps_caching, eps_des, best_flat[0],
               best_flat[1], best_des, (long long)peaks[0], (long long)peaks[1]);
    } else {
        printf("trace: %lld events (%d steps of a %d-block chain, every block checkpointed with k=%d), "
               "generated by the dry run in %.2f s\n",
               (long long)n, (int)t->n_iters, blocks, T, gen_s);
        printf("flat replay, exact model     %8.1f M events/s  (%.3f s)\n", eps_exact / 1e6, best_flat[0]);
        printf("flat replay, caching model   %8.1f M events/s  (%.3f s)\n", eps_caching / 1e6, best_flat[1]);
        printf("event queue, both models     %8.1f M events/s  (%.3f s)\n", eps_des / 1e6, best_des);
    }
    remat_sim_free(s);
    remat_plan_free(&plan);
    remat_trace_free(&base);
    remat_model_free(&m);
    return 0;
}
