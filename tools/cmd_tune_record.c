/* cmd_tune_record.c - `remat tune` on a PyTorch step recorded at two batch sizes
 * (record_args.h; sim/torch_tune.h). */
#include <stdio.h>
#include <string.h>

#include "core/io/atomic_file.h"
#include "core/io/ext_record.h"
#include "core/io/json_write.h"
#include "core/model/plan_notation.h"
#include "sim/torch_tune.h"
#include "tools/answer.h"
#include "tools/cli.h"
#include "tools/record_args.h"

static void progress(void *ctx, int64_t N, int checkpointed, int64_t probes) {
    (void)ctx;
    remat_cli_progress("tune: probe %lld: N=%lld %s", (long long)probes + 1, (long long)N,
                       checkpointed ? "with the search's plan" : "plain");
}

static void side_json(const char *name, const remat_torch_tune_side *s) {
    printf(",\"%s\":{\"value\":%lld,\"at_max\":%s,\"peak_live_bytes\":%lld,\"replayed_bytes\":%lld", name,
           (long long)s->value, s->at_max ? "true" : "false", (long long)(s->value ? s->pred.peak_live_bytes : 0),
           (long long)(s->value ? s->pred.replayed_bytes : 0));
}

int remat_cli_tune_record(const char *path, remat_ext_trace *t, const char *second, int64_t budget, int64_t max_n,
                          const char *executor, const char *out, int json) {
    int how = executor ? remat_torch_exec_from_name(executor) : REMAT_TORCH_APPLY_PLAN;
    if (how < 0) {
        fprintf(stderr, "remat tune: --executor: expected apply_plan or torch-nonreentrant, got '%s'\n", executor);
        return 2;
    }
    if (!second) {
        fprintf(stderr, "remat tune: %s: a recorded PyTorch step (N = %lld) is tuned from two recordings of the same "
                        "step at two batch sizes, to check that every allocation is constant or proportional to N: "
                        "expected --second-trace B.h5 (python3 -m remat_torch record ... --N n)\n",
                path, (long long)t->record->N);
        return 2;
    }
    remat_torch_linear L;
    int rc = remat_cli_record_rescale("tune", path, t, second, 0, 0, &L);
    if (rc) return rc;
    const int64_t Na = L.N_a, Nb = L.N_b;
    char execution[256];
    snprintf(execution, sizeof execution, "%.160s at N = %lld and N = %lld, rescaled", L.execution, (long long)Na,
             (long long)Nb);
    remat_torch_tune_result r;
    remat_error err = {0};
    remat_cli_progress("tune: searching the largest N");
    remat_status st = remat_torch_tune(t, &L, budget, max_n, (remat_torch_exec)how, path, progress, NULL, &r, &err);
    remat_cli_progress_done();
    remat_torch_linear_free(&L);
    if (st != REMAT_OK) return remat_cli_fail("tune", &err);
    char label[1024] = "";
    if (r.have_plan) remat_plan_notation(&r.plan, &r.model, label, sizeof label);
    if (out && r.have_plan) {
        remat_budget bud = {budget, 0, REMAT_BUDGET_ON_LIVE};
        char q[512];
        remat_cli_chosen_for(q, sizeof q, "remat tune", &r.model, &bud);
        char *text = remat_plan_to_json_for(&r.plan, &r.model, q, &err);
        st = text ? remat_afile_write_all(out, text, strlen(text), &err) : err.status;
        remat_xfree(text);
        if (st != REMAT_OK) {
            remat_torch_tune_free(&r);
            return remat_cli_fail("tune", &err);
        }
    }
    if (json) {
        printf("{\"dim\":\"N\",\"budget_bytes\":%lld,\"budget_on\":\"live\",\"execution\":", (long long)budget);
        remat_json_string(stdout, execution);
        printf(",\"executor\":");
        remat_json_string(stdout, remat_torch_exec_name((remat_torch_exec)how));
        printf(",\"recorded_N\":[%lld,%lld],\"T\":%lld,\"max\":%lld", (long long)Na, (long long)Nb,
               (long long)t->record->T, (long long)r.max_value);
        side_json("plain", &r.plain);
        printf("}");
        side_json("checkpointed", &r.ckpt);
        printf(",\"label\":");
        remat_json_string(stdout, label);
        printf("},\"probes\":%lld,\"evaluated\":%lld}\n", (long long)r.probes, (long long)r.evaluated);
    } else {
        char b1[64], b2[64];
        printf("largest N that fits, from %s and %s (recorded at N=%lld and N=%lld, T=%lld):\n", path, second,
               (long long)Na, (long long)Nb, (long long)t->record->T);
        printf("execution             %s; plans as %s runs them\n", execution,
               remat_torch_exec_label((remat_torch_exec)how));
        printf("budget                %s on peak live bytes (a CPU recording has no caching allocator and no device "
               "overhead)\n",
               remat_cli_fmt_bytes(budget, b1, sizeof b1));
        if (r.plain.value > 0)
            printf("  plain backpropagation  N=%-8lld peak live %s\n", (long long)r.plain.value,
                   remat_cli_fmt_bytes(r.plain.pred.peak_live_bytes, b1, sizeof b1));
        else
            printf("  plain backpropagation  nothing fits (not even N=1)\n");
        if (r.ckpt.value > 0)
            printf("  with checkpointing     N=%-8lld peak live %s, plan %s, %s replayed\n", (long long)r.ckpt.value,
                   remat_cli_fmt_bytes(r.ckpt.pred.peak_live_bytes, b1, sizeof b1), label[0] ? label : "none",
                   remat_cli_fmt_bytes(r.ckpt.pred.replayed_bytes, b2, sizeof b2));
        else
            printf("  with checkpointing     nothing fits (not even N=1)\n");
        printf("  every smaller N fits too: each allocation is constant or proportional to N, so the live bytes "
               "grow with N%s\n",
               r.model.n_blocks > REMAT_TORCH_SEARCH_EXHAUSTIVE ? " (checkpointed: the greedy search's plan at each N)"
                                                                 : "");
        if (r.plain.at_max || r.ckpt.at_max)
            printf("  stopped at --max %lld: larger N were not tried\n", (long long)r.max_value);
        if (out && r.have_plan)
            remat_cli_next(stdout, "python3 -m remat_torch record ... --N %lld --plan %s   (measure it)",
                           (long long)r.ckpt.value, out);
    }
    int fits = r.plain.value > 0 || r.ckpt.value > 0;
    remat_torch_tune_free(&r);
    return fits ? 0 : 1;
}
