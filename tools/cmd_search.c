/* cmd_search.c - `remat search`: a plan chosen in the simulator, by greedy level
 * (0..4) or as the fastest plan under a memory budget (sim/search.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/base/clock.h"
#include "core/io/atomic_file.h"
#include "sim/torch_sim.h"
#include "tools/record_args.h"
#include "core/io/ext_trace.h"
#include "core/io/ext_record.h"
#include "core/base/size.h"
#include "core/io/json_write.h"
#include "core/io/json_write.h"
#include "core/io/trace.h"
#include "core/model/plan_notation.h"
#include "sim/search.h"
#include "sim/span_search.h"
#include "sim/sim.h"
#include "tools/answer.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"

static const char *USAGE =
    "usage: remat search --trace BASE.h5 (--budget SIZE | --level 0..4) [--preset speed|balanced|memory]\n"
    "                    [--budget-on reserved|live] [--device-overhead SIZE] [--allocator-config K=V,...]\n"
    "                    [--N n] [--T t] [--iters n] [--ranks R [--reduce-blocks B]] [--out P.json]\n"
    "                    [--pareto FRONT.json] [--json]\n"
    "       remat search --trace STEP.h5 --budget SIZE [--N n --second-trace STEP2.h5] [--executor E]\n"
    "                    [--out P.json] [--json]\n"
    "\n"
    "Chooses a checkpoint plan with the simulator (no model runs), from a trace recorded by\n"
    "`remat run --trace` without a plan. Predictions describe remat's own executor (reference or\n"
    "CUDA backend) running the model, not a PyTorch script of the same network.\n"
    "  --level 0..4   the greedy levels: 1 checkpoints blocks by input size (preset: speed,\n"
    "                 balanced, memory = 50/75/100 % of them), 2 adds spatial splits and 3 time\n"
    "                 chunks where the peak drops, 4 restores blocks, costliest forward first,\n"
    "                 where the peak does not rise.\n"
    "  --budget B     the plan with the least predicted step time that fits B: by default its\n"
    "                 peak reserved bytes (caching allocator model) plus the device overhead\n"
    "                 (CUDA context, cuBLAS workspace; --device-overhead, default 512 MiB, an\n"
    "                 estimate) are at most B. Exact dynamic programming over the chain of blocks,\n"
    "                 confirmed by a full simulation. Prints the Pareto front of peak against\n"
    "                 time; exit 1 when nothing fits (with the smallest reachable peak and why).\n"
    "On a PyTorch step recorded by `python3 -m remat_torch record` (docs/pytorch-record.md):\n"
    "the whole-block plan with the fewest replayed bytes whose predicted peak live bytes fit,\n"
    "as remat_torch.apply_plan runs it; --N with --second-trace (the same step recorded at\n"
    "another batch size) searches at batch size n, where every allocation is linear in N.\n"
    "Sizes: 8GB = 8*10^9 B, 8GiB = 8*2^30 B, plain bytes, inf.";

/* What one search answers about, shared by both modes. */
typedef struct answer_ctx {
    remat_sim *s;
    const char *trace_path;
    const char *backend;          /* the trace's backend: where the step times come from */
    remat_budget budget;          /* total -1 in level mode */
    cli_overhead_source src;  /* where the device overhead came from */
    const char *out, *pareto;
    int json;
    int recorded_steps;           /* steps the trace holds */
    int N, T;                     /* --N, --T as given (0: as recorded): hints repeat them */
    int level;                    /* -1: budget mode */
    double t0;                    /* when the command started (remat_now_s): its seconds */
} answer_ctx;

static void next_steps(const answer_ctx *a) {
    char sz[64];
    remat_cli_size_flags(sz, sizeof sz, a->N, a->T);
    remat_cli_next(stdout, "remat simulate --trace %s --plan %s%s   (the plan's memory curve)", a->trace_path, a->out,
                   sz);
    remat_cli_next(stdout, "remat run --model M.json --plan %s%s --trace P.h5   (run it for real)", a->out, sz);
    remat_cli_next(stdout, "remat verify --model M.json --plan %s%s   (prove the gradients bit-identical)", a->out, sz);
}

/* Where the floor plan's peak sits: the event at the live-bytes maximum of its
 * predicted trace (block, layer, phase, role of the tensor that tops it). */
static void floor_site(remat_sim *s, const remat_plan *floor, const remat_model *m, char *buf, size_t len) {
    remat_search_figures f;
    remat_error e = {0};
    buf[0] = '\0';
    if (remat_search_evaluate(s, floor, &f, &e) != REMAT_OK) return;
    const remat_trace *t = remat_sim_trace(s);
    int64_t live = 0, best = -1, at = -1;
    for (int64_t i = 0; i < t->n_events; i++) {
        const remat_event *ev = &t->events[i];
        live += ev->kind == REMAT_EVENT_ALLOC ? ev->bytes : -ev->bytes;
        if (live > best) {
            best = live;
            at = i;
        }
    }
    if (at < 0) return;
    const remat_event *ev = &t->events[at];
    snprintf(buf, len, "%s%s%s, %s (a %s tensor of %lld B on top of the others)",
             ev->block >= 0 && ev->block < m->n_blocks ? m->blocks[ev->block].name : "outside the blocks",
             ev->layer >= 0 && ev->layer < m->n_layers ? "/" : "",
             ev->layer >= 0 && ev->layer < m->n_layers ? m->layers[ev->layer].name : "",
             remat_phase_name((remat_phase)ev->phase), remat_role_name((remat_role)ev->role), (long long)ev->bytes);
}

/* Why nothing fits, in one line: what the floor plan is made of, where its peak sits,
 * the rules that hold it there, and what to try. */
static void print_floor_reason(const answer_ctx *a, const remat_model *m, const char *floor_label,
                               const remat_plan *floor) {
    char bn[256] = "", add[256] = "";
    size_t ub = 0, ua = 0;
    for (int b = 0; b < m->n_blocks; b++) {
        if (m->blocks[b].has_batchnorm && ub < sizeof bn)
            ub += (size_t)snprintf(bn + ub, sizeof bn - ub, "%s%s", ub ? "," : "", m->blocks[b].name);
        if (m->blocks[b].has_add && ua < sizeof add)
            ua += (size_t)snprintf(add + ua, sizeof add - ua, "%s%s", ua ? "," : "", m->blocks[b].name);
    }
    char site[256];
    floor_site(a->s, floor, m, site, sizeof site);
    printf("why: the floor is plan %s, the smallest peak the per-block options reach", floor_label);
    if (site[0]) printf(", held at %s", site);
    if (bn[0]) printf("; time chunks (k > 1) are not allowed in blocks with batch norm (%s)", bn);
    if (add[0]) printf("; blocks ending in add (%s) take no split and no span", add);
    char sz[64];
    printf(
        "; try a larger --budget, a smaller --N or --T (`remat tune --trace %s --budget B%s` finds the largest N "
        "that fits)%s\n",
        a->trace_path, remat_cli_size_flags(sz, sizeof sz, 0, a->T),
        a->budget.overhead > 0 ? ", or a measured --device-overhead" : "");
}

static int write_plan(const answer_ctx *a, const char *path, const remat_plan *p, const remat_model *m,
                      remat_error *err) {
    char by[64], q[512];
    if (a->level >= 0) snprintf(by, sizeof by, "remat search --level %d", a->level);
    else snprintf(by, sizeof by, "remat search --budget");
    remat_cli_chosen_for(q, sizeof q, by, m, &a->budget);
    char *text = remat_plan_to_json_for(p, m, q, err);
    if (!text) return 0;
    int ok = remat_afile_write_all(path, text, strlen(text), err) == REMAT_OK;
    remat_xfree(text);
    return ok;
}

static void print_figures_json(const char *name, const remat_search_figures *f) {
    printf("\"%s\":{\"peak_bytes\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
           "\"end_of_forward_bytes\":%lld,\"step_time_s\":%.9g}",
           name, (long long)f->peak, (long long)f->peak_live, (long long)f->peak_reserved,
           (long long)f->end_of_forward, f->time_s);
}

static void print_plan_json(const remat_plan *p, const remat_model *m) {
    remat_error e = {0};
    char *text = remat_plan_to_json(p, m, &e);
    printf("\"plan\":%s", text ? text : "null");
    remat_xfree(text);
}

static void print_compare(const char *what, const remat_search_figures *f, const remat_search_figures *b) {
    char b1[64], b2[64];
    printf("%-22s peak %s (%.1f %% of baseline %s), step time %.6f s (%+.1f %%)\n", what,
           remat_cli_fmt_bytes(f->peak, b1, sizeof b1), b->peak > 0 ? 100.0 * (double)f->peak / (double)b->peak : 0.0,
           remat_cli_fmt_bytes(b->peak, b2, sizeof b2), f->time_s,
           b->time_s > 0 ? 100.0 * (f->time_s / b->time_s - 1) : 0);
}

/* With --ranks: the world the figures are each rank's of ("ranks", "reduce_blocks", the
 * rank's share "rank_N"; docs/mpi.md), each followed by a comma. */
static void print_ranks_json(const remat_sim *s) {
    const remat_shard *sh = remat_sim_shard(s);
    if (sh)
        printf("\"ranks\":%d,\"reduce_blocks\":%d,\"rank_N\":%lld,", sh->ranks, sh->blocks,
               (long long)remat_sim_model(s)->N);
}

static int run_level(const answer_ctx *a, int level, int preset) {
    remat_sim *s = a->s;
    const char *out = a->out, *pareto = a->pareto;
    int json = a->json;
    remat_error err = {0};
    remat_plan p;
    remat_search_figures fig, base;
    remat_search_log log = {0};
    const remat_model *m = remat_sim_model(s);
    remat_cli_progress("search: level %d", level);
    remat_status st = remat_search_greedy(s, level, (remat_search_preset)preset, &p, &fig, &log, &err);
    remat_cli_progress_done();
    if (st != REMAT_OK) {
        remat_search_log_free(&log);
        return remat_cli_fail("search", &err);
    }
    base.peak = log.steps[0].peak;
    base.time_s = log.steps[0].time_s;
    char label[1024];
    remat_plan_notation(&p, m, label, sizeof label);
    int ok = 1;
    if (out) ok = write_plan(a, out, &p, m, &err);
    remat_search_point *pts = remat_xcalloc((size_t)log.n, sizeof *pts, &err);
    int np = 0;
    for (int i = 0; pts && i < log.n; i++) {
        if (!log.steps[i].kept) continue;
        pts[np].peak = log.steps[i].peak;
        pts[np].time_s = log.steps[i].time_s;
        snprintf(pts[np].label, sizeof pts[np].label, "L%d %.150s", log.steps[i].level, log.steps[i].what);
        np++;
    }
    if (np) pts[np - 1].chosen = 1;
    remat_front_meta meta = {m->name, m->T, m->N, remat_budget_on_name(a->budget.on), -1, a->budget.overhead};
    if (ok && pareto && pts) ok = remat_search_write_front(pareto, pts, np, &base, 0, &meta, &err) == REMAT_OK;
    if (ok && json) {
        printf("{\"execution\":");
        remat_json_string(stdout, remat_trace_execution(a->backend));
        printf(",\"mode\":\"level\",\"level\":%d,\"peak_on\":\"%s\",", level, remat_budget_on_name(a->budget.on));
        print_ranks_json(s);
        printf("\"label\":");
        remat_json_string(stdout, label);
        remat_cli_steady_json(stdout, remat_sim_results(s)->n_iters, a->recorded_steps);
        remat_cli_step_trust_json(stdout, remat_cli_step_trust_kind_sim(s, 1));
        printf(",");
        print_plan_json(&p, m);
        printf(",\"peak_bytes\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
               "\"end_of_forward_bytes\":%lld,\"step_time_s\":%.9g,",
               (long long)fig.peak, (long long)fig.peak_live, (long long)fig.peak_reserved,
               (long long)fig.end_of_forward, fig.time_s);
        printf("\"baseline\":{\"peak_bytes\":%lld,\"step_time_s\":%.9g},\"steps\":[", (long long)base.peak, base.time_s);
        for (int i = 0; i < log.n; i++)
        {
            printf("%s{\"level\":%d,\"what\":", i ? "," : "", log.steps[i].level);
            remat_json_string(stdout, log.steps[i].what);
            printf(",\"peak_bytes\":%lld,\"step_time_s\":%.9g,\"kept\":%s}", (long long)log.steps[i].peak,
                   log.steps[i].time_s, log.steps[i].kept ? "true" : "false");
        }
        printf("]}\n");
    } else if (ok) {
        char b1[64];
        printf("greedy search, level %d, model %s (T=%lld, N=%lld), peak = %s\n", level, m->name, (long long)m->T,
               (long long)m->N,
               a->budget.on == REMAT_BUDGET_ON_LIVE ? "peak live bytes" : "peak reserved bytes (caching model)");
        remat_cli_steady_note(stdout, remat_sim_results(s)->n_iters, a->recorded_steps);
        remat_cli_prediction_note(stdout, a->backend);
        remat_cli_step_trust_note(stdout, remat_cli_step_trust_kind_sim(s, 1));
        for (int i = 0; i < log.n; i++)
            printf("  L%d %-46s peak %-28s %.6f s  %s\n", log.steps[i].level, log.steps[i].what,
                   remat_cli_fmt_bytes(log.steps[i].peak, b1, sizeof b1), log.steps[i].time_s,
                   log.steps[i].kept ? "kept" : "undone");
        printf("plan                   %s\n", label);
        print_compare("predicted", &fig, &base);
        printf("%-22s ", "");
        remat_cli_peaks_print(stdout, &a->budget, fig.peak_live, fig.peak_reserved);
        if (out) printf("plan written to %s\n", out);
        if (pareto) printf("steps written to %s\n", pareto);
        if (out) next_steps(a);
    }
    remat_xfree(pts);
    remat_search_log_free(&log);
    remat_plan_free(&p);
    return ok ? 0 : remat_cli_fail("search", &err);
}

/* --budget --json: one object. */
static void print_budget_json(const answer_ctx *a, const remat_search_budget_result *r, int64_t budget,
                              const char *label, const remat_front_meta *meta) {
    remat_sim *s = a->s;
    const remat_model *m = remat_sim_model(s);
    printf("{\"execution\":");
    remat_json_string(stdout, remat_trace_execution(a->backend));
    printf(",\"mode\":\"budget\",");
    print_ranks_json(s);
    printf("\"budget_bytes\":%lld", (long long)(budget == REMAT_SIZE_INF ? -1 : budget));
    remat_cli_steady_json(stdout, remat_sim_results(s)->n_iters, a->recorded_steps);
    remat_cli_step_trust_json(stdout, remat_cli_step_trust_kind_sim(s, 1));
    remat_cli_budget_json(stdout, 1, &a->budget, a->src);
    printf(",\"fits\":%s,\"needed_bytes\":%lld,\"label\":", r->found ? "true" : "false",
           (long long)remat_budget_needed(&a->budget, r->fig.peak_live, r->fig.peak_reserved));
    remat_json_string(stdout, label);
    printf(",");
    print_plan_json(&r->plan, m);
    printf(",");
    print_figures_json("predicted", &r->fig);
    printf(",\"peak_bytes\":%lld,\"step_time_s\":%.9g,\"min_peak_bytes\":%lld,", (long long)r->fig.peak, r->fig.time_s,
           (long long)(r->found ? -1 : r->min_peak));
    print_figures_json("baseline", &r->baseline);
    printf(",\"front\":");
    remat_search_front_json(stdout, r->front, r->n_front, &r->baseline, budget, meta);
    printf(",\"search\":{\"blocks\":%d,\"options\":%lld,\"probes\":%d,\"simulations\":%lld,\"rounds\":%d,"
           "\"dp_states\":%lld,\"dp_max_front\":%lld,\"chain_checked\":%d,\"chain_mismatches\":%d,"
           "\"dp_thinned\":%lld,\"span_candidates\":%lld,\"span_simulated\":%lld,\"seconds\":%.6f}}\n",
           m->n_blocks, (long long)r->options, r->probes, (long long)r->simulations, r->rounds, (long long)r->stats.states,
           (long long)r->stats.max_front, r->checked, r->mismatches, (long long)r->stats.thinned,
           (long long)r->span_candidates, (long long)r->span_simulated, r->seconds);
}

/* --budget: the summary, the front, the plan or the floor, what the search did. */
static void print_budget_human(const answer_ctx *a, const remat_search_budget_result *r, int64_t budget,
                               const char *label) {
    remat_sim *s = a->s;
    const remat_model *m = remat_sim_model(s);
    char b1[64], b2[64];
    printf("budget search, model %s (T=%lld, N=%lld)\n", m->name, (long long)m->T, (long long)m->N);
    remat_cli_budget_print(stdout, &a->budget, a->src);
    remat_cli_steady_note(stdout, remat_sim_results(s)->n_iters, a->recorded_steps);
    remat_cli_prediction_note(stdout, a->backend);
    remat_cli_step_trust_note(stdout, remat_cli_step_trust_kind_sim(s, 1));
    printf("Pareto front (predicted %s against step time overhead):\n",
           a->budget.on == REMAT_BUDGET_ON_LIVE ? "peak live bytes" : "peak reserved bytes");
    for (int i = 0; i < r->n_front; i++)
        printf("  %s %-28s %+7.1f %%  %s\n", r->front[i].chosen ? "*" : " ",
               remat_cli_fmt_bytes(r->front[i].peak, b1, sizeof b1),
               r->baseline.time_s > 0 ? 100.0 * (r->front[i].time_s / r->baseline.time_s - 1) : 0.0, r->front[i].label);
    if (r->found) {
        printf("plan                   %s\n", label);
        print_compare("predicted", &r->fig, &r->baseline);
        printf("%-22s ", "");
        remat_cli_peaks_print(stdout, &a->budget, r->fig.peak_live, r->fig.peak_reserved);
        if (a->out) printf("plan written to %s\n", a->out);
    } else {
        printf("nothing fits %s for the allocator; the smallest reachable peak is %s (plan %s)\n",
               remat_cli_fmt_bytes(budget, b1, sizeof b1), remat_cli_fmt_bytes(r->min_peak, b2, sizeof b2), label);
        print_floor_reason(a, m, label, &r->plan);
    }
    if (a->pareto) printf("front written to %s\n", a->pareto);
    printf("search: %d blocks, %lld options, %d probe simulations, %lld simulations in all, %d round%s, "
           "chain model checked on %d plans (%d mismatches), %.3f s\n",
           m->n_blocks, (long long)r->options, r->probes, (long long)r->simulations, r->rounds, r->rounds == 1 ? "" : "s",
           r->checked, r->mismatches, r->seconds);
    if (r->span_simulated < r->span_candidates)
        printf("search: span plans: %lld of %lld simulated, evenly spaced (the limit: %lld simulated blocks "
               "in all, REMAT_SPAN_WORK, so %lld plans of %d blocks)\n",
               (long long)r->span_simulated, (long long)r->span_candidates, (long long)REMAT_SPAN_WORK,
               (long long)(REMAT_SPAN_WORK / m->n_blocks < 64 ? 64 : REMAT_SPAN_WORK / m->n_blocks), m->n_blocks);
    if (r->stats.thinned > 0)
        printf("search: the programme kept at most %lld states at %lld of %d blocks (the limit: %lld states in "
               "all, REMAT_CHAIN_WORK), evenly spaced over each front: the plan is the best of the states kept, "
               "not always the optimum\n",
               (long long)remat_chain_front_cap(m->n_blocks), (long long)r->stats.thinned, m->n_blocks,
               (long long)REMAT_CHAIN_WORK);
    if (r->found && a->out) next_steps(a);
}

static int run_budget(const answer_ctx *a, int64_t budget) {
    remat_sim *s = a->s;
    const char *out = a->out, *pareto = a->pareto;
    remat_error err = {0};
    remat_search_budget_result r;
    const remat_model *m = remat_sim_model(s);
    remat_cli_progress("search: measuring the chain of %d blocks", m->n_blocks);
    remat_status st = remat_search_budget_spans(s, budget, NULL, &r, &err);
    remat_cli_progress_done();
    r.seconds = remat_now_s() - a->t0; /* the whole command: trace, baseline check, programme, spans */
    if (st != REMAT_OK) {
        remat_search_budget_result_free(&r);
        return remat_cli_fail("search", &err);
    }
    char label[1024];
    remat_plan_notation(&r.plan, m, label, sizeof label);
    int ok = 1;
    if (r.found && out) ok = write_plan(a, out, &r.plan, m, &err);
    remat_front_meta meta = {m->name, m->T, m->N, remat_budget_on_name(a->budget.on), a->budget.total, a->budget.overhead};
    if (ok && pareto) { /* every simulated plan: the figure draws them all and its own front */
        remat_search_point *pts = NULL;
        int np = 0;
        ok = remat_search_points_for_file(&r, m, &pts, &np, &err) == REMAT_OK &&
             remat_search_write_front(pareto, pts, np, &r.baseline, budget, &meta, &err) == REMAT_OK;
        remat_xfree(pts);
    }
    if (ok && a->json) print_budget_json(a, &r, budget, label, &meta);
    else if (ok) print_budget_human(a, &r, budget, label);
    int rc = ok ? 0 : remat_cli_fail("search", &err);
    if (ok && !r.found) {
        fprintf(stderr,
                "remat search: --budget: nothing fits %lld B (%lld B for the allocator after the device overhead); the smallest reachable "
                "peak is %lld B\n",
                (long long)a->budget.total, (long long)budget, (long long)r.min_peak);
        rc = 1;
    }
    remat_search_budget_result_free(&r);
    return rc;
}

/* A recorded PyTorch step (remat_torch.record): the plan of whole blocks with the fewest
 * replayed bytes whose predicted peak live bytes fit (sim/torch_sim.h). */
static int search_record(const char *path, remat_ext_trace *t, int64_t budget, remat_torch_exec how, const char *out,
                         int json) {
    remat_error err = {0};
    remat_model m;
    if (remat_torch_sim_model(t, path, &m, &err) != REMAT_OK) return remat_cli_fail("search", &err);
    remat_torch_search_result r;
    remat_cli_progress("search: predicting plans of %d blocks on %s", m.n_blocks, path);
    remat_status st = remat_torch_search(t, &m, budget, how, path, &r, &err);
    remat_cli_progress_done();
    char label[1024] = "";
    int ok = st == REMAT_OK;
    if (ok) remat_plan_notation(&r.plan, &m, label, sizeof label);
    if (ok && r.found && out) {
        remat_budget bud = {budget, 0, REMAT_BUDGET_ON_LIVE};
        char q[512];
        remat_cli_chosen_for(q, sizeof q, "remat search --budget", &m, &bud);
        char *text = remat_plan_to_json_for(&r.plan, &m, q, &err);
        ok = text && remat_afile_write_all(out, text, strlen(text), &err) == REMAT_OK;
        remat_xfree(text);
    }
    if (ok && json) {
        printf("{\"mode\":\"budget\",\"budget_bytes\":%lld,\"budget_on\":\"live\",\"execution\":",
               (long long)budget);
        remat_json_string(stdout, t->record->execution);
        printf(",\"found\":%s,\"plan_notation\":", r.found ? "true" : "false");
        remat_json_string(stdout, label);
        printf(",");
        print_plan_json(&r.plan, &m);
        printf(",\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":null,\"replayed_bytes\":%lld,"
               "\"baseline\":{\"peak_live_bytes\":%lld},\"evaluated\":%lld}\n",
               (long long)r.pred.peak_live_bytes, (long long)r.pred.replayed_bytes,
               (long long)r.plain.peak_live_bytes, (long long)r.evaluated);
    } else if (ok) {
        char b1[64], b2[64], b3[64];
        printf("budget search, model %s (T=%lld, N=%lld), from %s\n", m.name, (long long)m.T, (long long)m.N, path);
        printf("execution             %s; plans as %s runs them\n", t->record->execution, remat_torch_exec_label(how));
        printf(
            "budget                %s on peak live bytes (a CPU recording has no caching allocator and no device "
            "overhead)\n",
            remat_cli_fmt_bytes(budget, b1, sizeof b1));
        printf("plans evaluated       %lld (whole blocks; the fewest replayed bytes wins: the recording times no "
               "kernels)\n",
               (long long)r.evaluated);
        printf("%-21s %s\n", r.found ? "plan" : "lowest peak plan", label[0] ? label : "no checkpointing");
        printf("peak live bytes       %s  (no checkpointing: %s)\n",
               remat_cli_fmt_bytes(r.pred.peak_live_bytes, b2, sizeof b2),
               remat_cli_fmt_bytes(r.plain.peak_live_bytes, b3, sizeof b3));
        printf("replayed              %lld allocations, %lld B\n", (long long)r.pred.replayed_allocations,
               (long long)r.pred.replayed_bytes);
        if (!r.found)
            printf("nothing fits: the lowest predicted peak is %s\n",
                   remat_cli_fmt_bytes(r.pred.peak_live_bytes, b1, sizeof b1));
        else if (out)
            remat_cli_next(stdout, "remat simulate --trace %s --plan %s   (the plan's figures)", path, out);
    }
    remat_plan_free(&r.plan);
    remat_model_free(&m);
    if (!ok) return remat_cli_fail("search", &err);
    return r.found ? 0 : 1;
}

/* The command's flags. */
typedef struct search_cmd {
    const char *trace_path, *preset_name, *alloc_cfg, *out, *pareto, *executor, *second;
    cli_budget_flags bf;
    int level, N, T, iters, json, ranks, blocks; /* level INT_MIN: not given; -1 after the checks: budget mode */
} search_cmd;

/* The flags checked before the trace is read: 0, or 2 with one line on stderr. */
static int check_flags(search_cmd *c) {
    if (c->ranks < 0 || c->ranks > 4096 || c->blocks < 0) {
        fprintf(stderr, "remat search: --%s: %d is out of range (expected 1..4096)\n",
                c->ranks < 0 || c->ranks > 4096 ? "ranks" : "reduce-blocks",
                c->ranks < 0 || c->ranks > 4096 ? c->ranks : c->blocks);
        return 2;
    }
    remat_cli_alloc_config_note("search", c->alloc_cfg);
    if (!c->trace_path) return remat_cli_missing("search", "--trace", "a baseline trace recorded by remat run --trace");
    const cli_file ins[] = {{"--trace", c->trace_path}, {"--second-trace", c->second}};
    const cli_file outs[] = {{"--out", c->out}, {"--pareto", c->pareto}};
    if (remat_cli_refuse_overlap("search", ins, 2, outs, 2)) return 2;
    if (remat_cli_check_sim_size("search", c->N, c->T, REMAT_SIM_MAX_N, REMAT_SIM_MAX_T)) return 2;
    if (c->level != INT_MIN && (c->level < 0 || c->level > 4)) {
        fprintf(stderr, "remat search: --level: expected 0..4, got %d\n", c->level);
        return 2;
    }
    if ((c->bf.budget >= 0) == (c->level != INT_MIN)) {
        fprintf(stderr, "remat search: --budget/--level: expected exactly one of them\n");
        return 2;
    }
    if (c->level == INT_MIN) c->level = -1; /* budget mode */
    if (c->preset_name && c->level < 0) {
        fprintf(stderr, "remat search: --preset: applies to --level (the share of blocks level 1 checkpoints), not "
                        "to --budget\n");
        return 2;
    }
    if (!c->preset_name) c->preset_name = "memory";
    if (c->bf.budget == 0) {
        fprintf(stderr, "remat search: --budget: expected a positive size\n");
        return 2;
    }
    return 0;
}

/* A recorded PyTorch step (python3 -m remat_torch record): *done set and its exit status
 * returned when the trace is one; else 0. */
static int search_if_recorded(const search_cmd *c, int *done) {
    *done = 0;
    if (!remat_ext_trace_is_ext_h5(c->trace_path)) return 0;
    remat_ext_trace et;
    remat_error e2 = {0};
    int rc = 0;
    if (remat_ext_trace_read_h5(c->trace_path, &et, &e2) == REMAT_OK && et.record) {
        *done = 1;
        int how = c->executor ? remat_torch_exec_from_name(c->executor) : REMAT_TORCH_APPLY_PLAN;
        if (c->level >= 0 || c->T || c->iters || c->alloc_cfg || c->pareto || c->bf.overhead >= 0 ||
            strcmp(c->bf.on, "reserved")) {
            fprintf(stderr, "remat search: %s: a recorded PyTorch step takes only --budget (on peak live bytes), "
                            "--N with --second-trace, --executor, --out and --json\n",
                    c->trace_path);
            rc = 2;
        } else if ((rc = remat_cli_record_rescale("search", c->trace_path, &et, c->second, c->N, 1, NULL)) == 0) {
            if (how < 0) {
                fprintf(stderr, "remat search: --executor: expected apply_plan or torch-nonreentrant, got '%s'\n",
                        c->executor);
                rc = 2;
            } else {
                rc = search_record(c->trace_path, &et, c->bf.budget, (remat_torch_exec)how, c->out, c->json);
            }
        }
    }
    remat_ext_trace_free(&et);
    return rc;
}

/* The simulator on the trace (at most the chain model's 8 steps for --budget). */
static remat_status open_sim(const search_cmd *c, remat_sim_opts *so, remat_trace *trace, remat_sim **s,
                             remat_error *err) {
    remat_cli_progress("search: reading %s and checking it against the executor", c->trace_path);
    remat_status st = remat_sim_open(c->trace_path, so, trace, s, err);
    if (st != REMAT_OK) {
        remat_cli_progress_done();
        return st;
    }
    if (c->bf.budget > 0 && c->iters == 0 && trace->n_iters > REMAT_CHAIN_MAX_ITERS) { /* the chain model holds 8 steps */
        remat_sim_free(*s);
        so->iters = REMAT_CHAIN_MAX_ITERS;
        so->origin = c->trace_path;
        if (!(*s = remat_sim_init(trace, so, err))) return err->status;
    }
    return REMAT_OK;
}

int remat_cmd_search(int argc, char **argv) {
    const double t0 = remat_now_s();
    search_cmd c;
    memset(&c, 0, sizeof c);
    c.bf = (cli_budget_flags)CLI_BUDGET_FLAGS_INIT;
    c.level = INT_MIN;
    int help = 0;
    const cli_option opts[] = {
        {"--trace", CLI_STRING, &c.trace_path, "baseline trace (remat run --trace, no plan)"},
        CLI_BUDGET_OPTIONS(c.bf, "memory budget: the fastest plan that fits (see --budget-on, --device-overhead)"),
        {"--level", CLI_INT, &c.level, "greedy level 0..4"},
        {"--preset", CLI_STRING, &c.preset_name, "level 1 share of blocks: speed (50 %), balanced (75 %), memory (100 %, default)"},
        {"--allocator-config", CLI_STRING, &c.alloc_cfg, "caching allocator settings (default: the trace's)"},
        {"--N", CLI_INT, &c.N, "search for this batch size (default: as recorded)"},
        {"--T", CLI_INT, &c.T, "search for this number of time steps (default: as recorded)"},
        {"--iters", CLI_INT, &c.iters, "training steps per simulation (default: the steady state: as recorded, at least 2; at most 8 for --budget)"},
        {"--out", CLI_STRING, &c.out, "write the chosen plan (JSON plan file)"},
        {"--pareto", CLI_STRING, &c.pareto, "write the Pareto front (or the greedy steps) as JSON"},
        {"--executor", CLI_STRING, &c.executor, "a recorded PyTorch step: apply_plan (default) or torch-nonreentrant"},
        {"--second-trace", CLI_STRING, &c.second, REMAT_CLI_SECOND_TRACE_HELP},
        {"--json", CLI_FLAG, &c.json, "print one JSON object instead of the summary"},
        {"--ranks", CLI_INT, &c.ranks, "plans for each rank of mpirun -np R remat run --reduce-blocks B (docs/mpi.md)"},
        {"--reduce-blocks", CLI_INT, &c.blocks, "with --ranks: the reduction blocks (default: R)"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if ((rc = check_flags(&c)) != 0) return rc;
    int done = 0;
    rc = search_if_recorded(&c, &done);
    if (done) return rc;
    if (c.executor || c.second) {
        fprintf(stderr, "remat search: --%s: only with a PyTorch step recorded by python3 -m remat_torch record\n",
                c.executor ? "executor" : "second-trace");
        return 2;
    }
    int preset = remat_search_preset_from_name(c.preset_name);
    if (preset < 0) {
        fprintf(stderr, "remat search: --preset: expected speed, balanced or memory, got '%s'\n", c.preset_name);
        return 2;
    }
    answer_ctx a = {NULL, c.trace_path, "", {0}, CLI_OVERHEAD_NONE, c.out, c.pareto, c.json, 0, c.N, c.T, c.level, t0};
    remat_alloc_kind kind;
    /* both modes add the device overhead to what they report on the card (level answers too) */
    if ((rc = remat_cli_budget_from_flags("search", &c.bf, 1, &a.budget, &kind, &a.src)) != 0) return rc;
    int64_t alloc_budget = -1; /* after reading the trace: it may hold the measured overhead */
    remat_error err = {0};
    remat_sim_opts so;
    if (remat_sim_opts_from_flags(kind == REMAT_ALLOC_CACHING ? "caching" : "exact", c.alloc_cfg, c.N, c.T, c.iters,
                                  &so, &err) != REMAT_OK)
        return remat_cli_fail("search", &err);
    so.ranks = c.ranks; /* every candidate is simulated as one rank: its share and the reduction's buffers */
    so.reduce_blocks = c.blocks;
    remat_trace trace;
    remat_sim *s = NULL;
    if (open_sim(&c, &so, &trace, &s, &err) != REMAT_OK) {
        remat_trace_free(&trace);
        return remat_cli_fail("search", &err);
    }
    a.s = s;
    a.backend = trace.backend;
    a.recorded_steps = (int)trace.n_iters;
    remat_cli_budget_use_trace(&a.budget, &a.src, trace.device_total_bytes, trace.device_free_at_init);
    if (c.bf.budget >= 0 && (rc = remat_cli_budget_allocator_bytes("search", &a.budget, &alloc_budget)) != 0) {
        remat_sim_free(s);
        remat_trace_free(&trace);
        return rc;
    }
    rc = c.level >= 0 ? run_level(&a, c.level, preset) : run_budget(&a, alloc_budget);
    remat_sim_free(s);
    remat_trace_free(&trace);
    return rc;
}
