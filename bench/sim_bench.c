/* sim_bench.c - how fast the simulator evaluates plans and searches.
 *
 *   bazel run //bench:sim_bench -- [--blocks N[,N...]] [--repeats R] [--json]
 *
 * For generated chains of N blocks (default 100 and 200) of Linear(64)-LIF, T=8,
 * N=16 (the chain of bench/exp5_simulator.py), with a baseline recorded on the
 * reference backend (one step):
 *  - plans evaluated per second: full simulations (dry run of the executor + event
 *    replay through both allocator models) of random plans from the search's
 *    per-block options;
 *  - `search --budget` (remat_search_budget, front of 24 points, 8 check plans):
 *    wall time at 60 % of the baseline peak and at the smallest reachable peak,
 *    with the simulations, DP states and chain-model check it reports.
 * Best (least) time of R repeats. --json prints one JSON object.
 */
#include "bench/bench_chain.h" /* first: it sets _POSIX_C_SOURCE */

#include <stdlib.h>

#include "core/base/clock.h"
#include "sim/search.h"
#include "sim/sim.h"

typedef struct chain_row {
    int blocks;
    int64_t trace_events, options;
    double plans_per_s, eval_s;
    int n_eval;
    double search_s[2];
    int64_t budget[2], peak[2], simulations[2], states[2], max_front[2];
    int found[2], probes[2], mismatches[2], checked[2];
    int64_t baseline_peak;
} chain_row;

static uint64_t rng_next(uint64_t *x) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

static int bench_chain(int blocks, int repeats, chain_row *row, remat_error *err) {
    memset(row, 0, sizeof *row);
    row->blocks = blocks;
    remat_model m;
    remat_trace base;
    if (bench_chain_baseline(blocks, 64, 8, 16, 1, &m, &base, err) != REMAT_OK) return 1;
    row->trace_events = base.n_events;
    remat_sim *s = remat_sim_init(&base, NULL, err);
    if (!s) return 1;
    remat_block_options *opts;
    if (remat_search_block_options(&m, &opts, err) != REMAT_OK) return 1;
    for (int b = 0; b < m.n_blocks; b++) row->options += opts[b].n;
    /* plans per second */
    remat_plan p;
    remat_plan_init_empty(&m, &p, err);
    uint64_t x = 1;
    row->n_eval = 200;
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double a = remat_now_s();
        for (int i = 0; i < row->n_eval; i++) {
            for (int b = 0; b < m.n_blocks; b++) p.blocks[b] = opts[b].v[rng_next(&x) % (uint64_t)opts[b].n];
            remat_search_figures f;
            if (remat_search_evaluate(s, &p, &f, err) != REMAT_OK) return 1;
        }
        double d = remat_now_s() - a;
        if (d < best) best = d;
    }
    row->eval_s = best / row->n_eval;
    row->plans_per_s = row->n_eval / best;
    remat_search_figures f0;
    if (remat_search_evaluate(s, NULL, &f0, err) != REMAT_OK) return 1;
    row->baseline_peak = f0.peak;
    /* the smallest reachable peak, then the two budgets */
    remat_search_budget_result r;
    if (remat_search_budget(s, 1, NULL, &r, err) != REMAT_OK) return 1;
    int64_t minp = r.min_peak;
    remat_search_budget_result_free(&r);
    row->budget[0] = f0.peak * 6 / 10;
    row->budget[1] = minp;
    for (int q = 0; q < 2; q++) {
        row->search_s[q] = 1e30;
        for (int rep = 0; rep < repeats; rep++) {
            double a = remat_now_s();
            if (remat_search_budget(s, row->budget[q], NULL, &r, err) != REMAT_OK) return 1;
            double d = remat_now_s() - a;
            if (d < row->search_s[q]) row->search_s[q] = d;
            row->found[q] = r.found;
            row->peak[q] = r.fig.peak;
            row->simulations[q] = r.simulations;
            row->states[q] = r.stats.states;
            row->max_front[q] = r.stats.max_front;
            row->probes[q] = r.probes;
            row->checked[q] = r.checked;
            row->mismatches[q] = r.mismatches;
            remat_search_budget_result_free(&r);
        }
    }
    remat_plan_free(&p);
    remat_search_options_free(opts, m.n_blocks);
    remat_sim_free(s);
    remat_trace_free(&base);
    remat_model_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    int sizes[8] = {100, 200}, n_sizes = 2, repeats = 3, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--blocks") && i + 1 < argc) {
            n_sizes = 0;
            for (char *t = strtok(argv[++i], ","); t && n_sizes < 8; t = strtok(NULL, ",")) sizes[n_sizes++] = atoi(t);
        } else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
            repeats = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            fprintf(stderr, "usage: sim_bench [--blocks N[,N...]] [--repeats R] [--json]\n");
            return 2;
        }
    }
    chain_row rows[8];
    remat_error err = {0};
    for (int i = 0; i < n_sizes; i++)
        if (bench_chain(sizes[i], repeats, &rows[i], &err)) {
            fprintf(stderr, "sim_bench: %s\n", err.msg);
            return 1;
        }
    if (json) {
        printf("{\"repeats\":%d,\"chains\":[", repeats);
        for (int i = 0; i < n_sizes; i++) {
            const chain_row *r = &rows[i];
            printf("%s{\"blocks\":%d,\"trace_events\":%lld,\"options\":%lld,\"plans_per_s\":%.1f,\"eval_s\":%.6f,"
                   "\"baseline_peak_bytes\":%lld,\"searches\":[",
                   i ? "," : "", r->blocks, (long long)r->trace_events, (long long)r->options, r->plans_per_s, r->eval_s,
                   (long long)r->baseline_peak);
            for (int q = 0; q < 2; q++)
                printf("%s{\"budget\":\"%s\",\"budget_bytes\":%lld,\"fits\":%s,\"peak_bytes\":%lld,\"seconds\":%.4f,"
                       "\"simulations\":%lld,\"probes\":%d,\"dp_states\":%lld,\"dp_max_front\":%lld,"
                       "\"chain_checked\":%d,\"chain_mismatches\":%d}",
                       q ? "," : "", q ? "smallest reachable" : "60% of baseline", (long long)r->budget[q],
                       r->found[q] ? "true" : "false", (long long)r->peak[q], r->search_s[q],
                       (long long)r->simulations[q], r->probes[q], (long long)r->states[q], (long long)r->max_front[q],
                       r->checked[q], r->mismatches[q]);
            printf("]}");
        }
        printf("]}\n");
    } else {
        for (int i = 0; i < n_sizes; i++) {
            const chain_row *r = &rows[i];
            printf("chain of %d blocks (%lld options, baseline trace %lld events): %.0f plans/s (%.2f ms per full "
                   "simulation)\n",
                   r->blocks, (long long)r->options, (long long)r->trace_events, r->plans_per_s, r->eval_s * 1e3);
            for (int q = 0; q < 2; q++)
                printf("  search --budget %-18s %lld B: %s, %.3f s, %lld simulations (%d probes), %lld DP states "
                       "(front <= %lld), chain model %d/%d plans exact\n",
                       q ? "smallest reachable" : "60% of baseline", (long long)r->budget[q],
                       r->found[q] ? "fits" : "nothing fits", r->search_s[q], (long long)r->simulations[q],
                       r->probes[q], (long long)r->states[q], (long long)r->max_front[q],
                       r->checked[q] - r->mismatches[q], r->checked[q]);
        }
    }
    return 0;
}
