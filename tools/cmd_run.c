/* cmd_run.c - `remat run`: training steps under a plan, with a trace or a dump. */
#include <stdio.h>
#include <string.h>

#include "core/exec/dump.h"
#include "core/exec/executor.h"
#include "core/io/trace.h"
#include "cuda/cuda_backend.h"
#include "core/io/json_write.h"
#include "core/model/plan_notation.h"
#include "tools/answer.h"
#include "tools/rates.h"
#include "tools/cli.h"
#include "tools/paths.h"
#include "tools/commands.h"
#include "tools/run_common.h"
#include "tools/world.h"
#include "core/io/h5_util.h"

static const char *USAGE =
    "usage: remat run --model M.json [--plan P] [--T t] [--N n] [--backend ref|cuda] [--seed S] [--iters N]\n"
    "                 [--init W.h5] [--trace OUT.h5 [--probe-N n] | --dump OUT.h5] [--threads N]\n"
    "                 [--allocator-config K=V,...]\n"
    "                 [--json]\n"
    "                 [--reduce-blocks B]      (mpirun -np R remat run ...: data-parallel, docs/mpi.md)\n"
    "\n"
    "Runs training steps of the model under the plan (no plan: plain backpropagation) and\n"
    "prints the loss, the peak live and reserved bytes, the bytes held at the end of\n"
    "forward and the step time. --trace writes every allocation event (docs/trace-schema.md);\n"
    "A plain --trace of two steps or more also holds a probe: warm steps at batch --probe-N (default 4N,\n"
    "0: none) and, when their steps are quick, again at the recorded batch, at 4x --probe-N and at the\n"
    "recorded batch with every block checkpointed, whose op times let simulate price another batch size\n"
    "(per op, a line through the measured sizes) and a plan's blocks (docs/simulator.md).\n"
    "--dump writes the gradient dump of one step without optimiser update (docs/interfaces.md).\n"
    "--init starts from the parameters and batch-norm statistics in W.h5 (remat_torch.save_weights,\n"
    "or a dump's /params) instead of the seeded initialisation (docs/pytorch.md).\n"
    "--reduce-blocks B sums over the batch in B fixed blocks of samples, so that the step is\n"
    "bit-identical under `mpirun -np R` for every R dividing B (docs/determinism.md); each\n"
    "rank runs N/R samples, rank 0 alone prints and writes.";

static void print_human(const remat_model *m, const remat_plan *plan, const char *plan_path, const char *backend,
                        int threads, const remat_step_result *r, int iters) {
    char b1[64], b2[64], b3[64], b4[64];
    const remat_step_result *last = &r[iters - 1];
    int64_t peak = 0, reserved = 0;
    double tmin = 1e30;
    for (int i = 0; i < iters; i++) {
        if (r[i].peak_live_bytes > peak) peak = r[i].peak_live_bytes;
        if (r[i].peak_reserved_bytes > reserved) reserved = r[i].peak_reserved_bytes;
        if (r[i].step_time_s < tmin) tmin = r[i].step_time_s;
    }
    char label[1024];
    remat_plan_notation(plan, m, label, sizeof label);
    printf("model %s (T=%lld, N=%lld), plan %s", m->name, (long long)m->T, (long long)m->N, label);
    if (plan_path && strcmp(plan_path, label) != 0) printf(" (%s)", plan_path);
    printf(", backend %s", backend);
    if (!strcmp(backend, "ref"))
        printf(" (%d thread%s, simd %s)", threads, threads == 1 ? "" : "s", remat_tools_simd_path());
    printf("\n");
    for (int i = 0; i < iters; i++)
        printf("  step %d: loss %.6f  peak live %s  time %.3f s\n", i + 1, r[i].loss,
               remat_cli_fmt_bytes(r[i].peak_live_bytes, b1, sizeof b1), r[i].step_time_s);
    printf("peak live bytes       %s\n", remat_cli_fmt_bytes(peak, b1, sizeof b1));
    printf("peak reserved bytes   %s  (caching allocator model)\n", remat_cli_fmt_bytes(reserved, b2, sizeof b2));
    printf("end of forward        %s  (of which compressed inputs %s)\n",
           remat_cli_fmt_bytes(last->end_of_forward_bytes, b3, sizeof b3),
           remat_cli_fmt_bytes(last->compressed_bytes, b4, sizeof b4));
    printf("step time             %.3f s (last), %.3f s (best of %d)\n", last->step_time_s, tmin, iters);
    printf("recomputed layers     %d per step\n", last->recomputed_layers);
    printf("events                %lld per step\n", (long long)last->events);
}

/* The CUDA driver's view next to the allocator's: context, cuBLAS workspace and
 * scratch are outside the allocator model, and this makes the gap visible. */
static int cuda_driver_view(remat_backend *be, remat_cuda_info *info) {
    remat_error e = {0};
    return remat_backend_cuda_get_info(be, info, &e) == REMAT_OK;
}

static void print_driver_human(const remat_cuda_info *ci, int64_t reserved) {
    char b1[64], b2[64], b3[64], b4[64], b5[64];
    printf("device                %s (sm_%d%d, %s total)\n", ci->device_name, ci->cc_major, ci->cc_minor,
           remat_cli_fmt_bytes(ci->total_bytes, b1, sizeof b1));
    printf("driver view           free at init %s, lowest free %s: %s used during the run\n",
           remat_cli_fmt_bytes(ci->free_at_init, b2, sizeof b2), remat_cli_fmt_bytes(ci->free_at_peak, b3, sizeof b3),
           remat_cli_fmt_bytes(ci->free_at_init - ci->free_at_peak, b4, sizeof b4));
    printf("outside the allocator %s (cuBLAS workspace, scratch); segments %s vs model reserved %s\n",
           remat_cli_fmt_bytes(ci->internal_bytes, b5, sizeof b5),
           remat_cli_fmt_bytes(ci->peak_segment_bytes, b1, sizeof b1), remat_cli_fmt_bytes(reserved, b2, sizeof b2));
    printf(
        "device overhead       %s (total - free at init: CUDA context, cuBLAS, remat's buffers, and any other "
        "process on this GPU): pass it as --device-overhead to search, tune, simulate --sweep\n",
        remat_cli_fmt_bytes(ci->total_bytes - ci->free_at_init, b3, sizeof b3));
}

/* What each rank reports to rank 0 after its steps. */
typedef struct rank_report {
    int64_t rank, n, peak_live, peak_reserved, state_crc;
} rank_report;

/* The data-parallel part of run --json (only for a sharded run). */
typedef struct shard_json {
    int blocks, size;
    const rank_report *ranks;
    int has_crc; /* 0 for a dump step: the dump itself is the state to compare */
} shard_json;

static void print_json(const remat_model *m, const char *plan_path, const char *backend, int threads,
                       const remat_step_result *r, int iters, const remat_cuda_info *ci, const shard_json *sj) {
    int64_t peak = 0, reserved = 0, events = 0;
    for (int i = 0; i < iters; i++) {
        if (r[i].peak_live_bytes > peak) peak = r[i].peak_live_bytes;
        if (r[i].peak_reserved_bytes > reserved) reserved = r[i].peak_reserved_bytes;
        events += r[i].events;
    }
    const remat_step_result *last = &r[iters - 1];
    printf("{\"model\":");
    remat_json_string(stdout, m->name);
    printf(",\"plan\":");
    remat_json_string(stdout, plan_path ? plan_path : "");
    printf(",\"backend\":");
    remat_json_string(stdout, backend);
    if (!strcmp(backend, "ref")) { /* the reference backend's threads and SIMD path */
        printf(",\"threads\":%d,\"simd\":", threads);
        remat_json_string(stdout, remat_tools_simd_path());
    }
    printf(",\"T\":%lld,\"N\":%lld,"
           "\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,\"end_of_forward_bytes\":%lld,"
           "\"step_time_s\":%.9g,\"events\":%lld,\"loss\":%.9g,\"recomputed_layers\":%d,\"steps\":[",
           (long long)m->T, (long long)m->N, (long long)peak,
           (long long)reserved, (long long)last->end_of_forward_bytes, last->step_time_s, (long long)events,
           last->loss, last->recomputed_layers);
    for (int i = 0; i < iters; i++)
        printf("%s{\"loss\":%.9g,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld,"
               "\"end_of_forward_bytes\":%lld,\"step_time_s\":%.9g,\"events\":%lld}",
               i ? "," : "", r[i].loss, (long long)r[i].peak_live_bytes, (long long)r[i].peak_reserved_bytes,
               (long long)r[i].end_of_forward_bytes, r[i].step_time_s, (long long)r[i].events);
    printf("]");
    if (sj) {
        printf(",\"reduce_blocks\":%d", sj->blocks);
        if (sj->has_crc) printf(",\"state_crc32\":\"%08llx\"", (unsigned long long)sj->ranks[0].state_crc);
        printf(",\"ranks\":[");
        for (int q = 0; q < sj->size; q++)
            printf("%s{\"rank\":%lld,\"N\":%lld,\"peak_live_bytes\":%lld,\"peak_reserved_bytes\":%lld}", q ? "," : "",
                   (long long)sj->ranks[q].rank, (long long)sj->ranks[q].n, (long long)sj->ranks[q].peak_live,
                   (long long)sj->ranks[q].peak_reserved);
        printf("]");
    }
    if (ci)
    {
        printf(",\"driver\":{\"device\":");
        remat_json_string(stdout, ci->device_name);
        printf(",\"total_bytes\":%lld,\"free_at_init\":%lld,\"free_at_peak\":%lld,"
               "\"internal_bytes\":%lld,\"peak_segment_bytes\":%lld,\"device_overhead_bytes\":%lld}",
               (long long)ci->total_bytes, (long long)ci->free_at_init, (long long)ci->free_at_peak,
               (long long)ci->internal_bytes, (long long)ci->peak_segment_bytes,
               (long long)(ci->total_bytes - ci->free_at_init));
    }
    printf("}\n");
}

/* CRC-32 of every parameter (running statistics too) and every trainable gradient
 * after the steps: equal on every rank of a data-parallel run, and equal to the
 * single-process run with the same --reduce-blocks. */
static remat_status state_crc(remat_session *s, const remat_model *m, uint32_t *crc, remat_error *err) {
    *crc = 0;
    for (int j = 0; j < m->n_layers; j++) {
        const remat_layer *l = &m->layers[j];
        for (int i = 0; i < remat_layer_n_params(l); i++) {
            int64_t n = remat_layer_param_elems(l, i);
            float *v = remat_xmalloc((size_t)n * sizeof(float) + 4, err);
            if (!v) return REMAT_ERR_NOMEM;
            remat_status st = remat_session_get_param(s, j, i, v, err);
            if (st == REMAT_OK) *crc = remat_crc32(*crc, v, (size_t)n * sizeof(float));
            if (st == REMAT_OK && remat_layer_param_trainable(l, i)) {
                st = remat_session_get_grad(s, j, i, v, err);
                if (st == REMAT_OK) *crc = remat_crc32(*crc, v, (size_t)n * sizeof(float));
            }
            remat_xfree(v);
            if (st != REMAT_OK) return st;
        }
    }
    return REMAT_OK;
}

static int run_main(int argc, char **argv, const remat_tools_world *w);

/* The command's flags. */
typedef struct run_cmd {
    const char *model_path, *plan_path, *backend, *trace_path, *dump_path, *alloc_cfg, *seed_s, *init_path;
    uint64_t seed;
    int iters, threads, json, no_input_grad, T, N, blocks, probe_n;
} run_cmd;

enum { PROBE_STEPS = 3, PROBE_MAX_STEPS = 10 }; /* the first is cold: its op times are not kept */
/* A further probe batch (the recorded one again, 4x the probe's) runs when its steps,
 * predicted from the steps measured so far, take at most PROBE_EXTRA_S in all; each
 * batch runs as many steps as fit PROBE_STEP_S, PROBE_STEPS to PROBE_MAX_STEPS. */
#define PROBE_EXTRA_S 2.0
#define PROBE_STEP_S 0.25

/* Steps of a probe batch whose step takes about step_s. */
static int probe_steps(double step_s) {
    double n = step_s > 0 ? PROBE_STEP_S / step_s : PROBE_MAX_STEPS;
    return n < PROBE_STEPS ? PROBE_STEPS : n > PROBE_MAX_STEPS ? PROBE_MAX_STEPS : (int)n;
}

/* One batch of the probe of a plain recording (remat_trace.probe_ops): `steps` steps of
 * model m at batch probe_n (ckpt: every block checkpointed), the ops of every warm one (all but the first) into trace,
 * their iter numbered on from the probe's records so far, and each warm step's time and
 * events (remat_trace.probe_steps); *best_s the least warm step time. Nothing is added
 * when a step fails. */
static remat_status run_probe(const remat_model *m, int64_t probe_n, int steps, int ckpt, remat_backend *be,
                              const remat_exec_opts *o, remat_trace *trace, double *best_s, remat_error *err) {
    remat_model mp;
    remat_plan pp;
    remat_status st = remat_model_rescale(m, 0, probe_n, &mp, err);
    if (st != REMAT_OK) return st;
    if ((st = remat_plan_init_empty(&mp, &pp, err)) != REMAT_OK) {
        remat_model_free(&mp);
        return st;
    }
    for (int b = 0; ckpt && b < pp.n_blocks; b++) pp.blocks[b].checkpoint = 1; /* every block, uncompressed, k=1 */
    int32_t iter0 = 0;
    for (int64_t i = 0; i < trace->n_probe_ops; i++)
        if (trace->probe_ops[i].iter + 1 > iter0) iter0 = trace->probe_ops[i].iter + 1;
    remat_trace tmp;
    remat_trace_init(&tmp);
    remat_exec_opts po = *o;
    po.trace = &tmp;
    remat_step_result res[PROBE_MAX_STEPS];
    remat_cli_progress("run: probe, %d steps of %s at N=%lld%s (per-op costs against the batch%s)", steps, m->name,
                       (long long)probe_n, ckpt ? ", every block checkpointed" : "", ckpt ? " and a plan" : "");
    st = remat_exec_run(&mp, &pp, be, &po, steps, res, err);
    for (int i = 1; st == REMAT_OK && i < steps; i++)
        if (i == 1 || res[i].step_time_s < *best_s) *best_s = res[i].step_time_s;
    for (int64_t i = 0; st == REMAT_OK && i < tmp.n_ops; i++) {
        if (tmp.ops[i].iter < 1) continue;
        remat_op_record r = tmp.ops[i];
        r.iter += iter0 - 1;
        if (remat_trace_add_probe_op(trace, &r, err) < 0) st = err->status;
    }
    for (int i = 1; st == REMAT_OK && i < steps; i++) { /* each warm step's time and events: the host time */
        remat_probe_step ps = {res[i].step_time_s, res[i].events};
        if (remat_trace_add_probe_step(trace, &ps, err) < 0) st = err->status;
    }
    remat_trace_free(&tmp);
    remat_plan_free(&pp);
    remat_model_free(&mp);
    return st;
}

/* The probe: batch probe_n (its N attribute), then, when quick (PROBE_EXTRA_S), more warm
 * steps at the recorded batch (the recording's own warm steps are few, and a small step
 * warms over several) and a batch 4x probe_n (where an op's cost per element changes as
 * its tensors leave the caches); last, steps at the recorded batch with every block
 * checkpointed (what a plan's blocks cost against plain), when they take at most
 * PROBE_EXTRA_S or half the first batch's time. rec_s: the recording's best warm step. */
static remat_status run_probes(const remat_model *m, int64_t probe_n, double rec_s, remat_backend *be,
                               const remat_exec_opts *o, remat_trace *trace, remat_error *err) {
    double probe_s = 0;
    int steps = PROBE_STEPS;
    if (rec_s > 0 && probe_n > m->N) steps = probe_steps(rec_s * (double)probe_n / (double)m->N);
    remat_status st = run_probe(m, probe_n, steps, 0, be, o, trace, &probe_s, err);
    if (st != REMAT_OK) return st;
    trace->probe_N = probe_n;
    /* {batch, step time, steps, checkpointed}; a checkpointed step about 1.5x plain */
    struct { int64_t n; double step_s; int steps, ckpt; double budget; } extra[3] = {
        {m->N, rec_s, probe_steps(rec_s), 0, PROBE_EXTRA_S},
        {probe_n * 4, probe_s * 4, probe_steps(probe_s * 4), 0, PROBE_EXTRA_S},
        {m->N, rec_s * 1.5, probe_steps(rec_s * 1.5), 1,
         probe_s * steps / 2 > PROBE_EXTRA_S ? probe_s * steps / 2 : PROBE_EXTRA_S}};
    for (int e = 0; e < 3; e++) {
        double step_s = extra[e].step_s;
        if (extra[e].n > REMAT_TRACE_MAX_N || !(step_s > 0) || step_s * extra[e].steps > extra[e].budget) continue;
        if (e == 1 && probe_n < m->N) continue; /* a smaller probe: the recorded batch is its larger point */
        remat_error xe = {0};
        double best = 0;
        if (run_probe(m, extra[e].n, extra[e].steps, extra[e].ckpt, be, o, trace, &best, &xe) != REMAT_OK) {
            remat_cli_progress_done(); /* a batch that does not fit: the probe has the others */
            fprintf(stderr, "remat run: note: the probe has no steps at N=%lld%s (%s)\n", (long long)extra[e].n,
                    extra[e].ckpt ? " checkpointed" : "", xe.msg);
        }
    }
    return REMAT_OK;
}

int remat_cmd_run(int argc, char **argv) {
    remat_tools_world w;
    int rc = remat_tools_world_open("run", &w);
    if (rc != 0) return rc;
    rc = run_main(argc, argv, &w);
    if (rc == 1 && w.size > 1) { /* a failure inside a step: the other ranks may wait in a broadcast */
        fflush(NULL);
        remat_tools_world_abort(&w, rc);
    }
    remat_tools_world_close(&w);
    return rc;
}

/* The flags checked before the model is read (the outputs by rank 0 alone, every rank
 * told its outcome): 0, or 2 with one line on stderr. */
static int check_flags(run_cmd *c, const remat_tools_world *wd) {
    const int lead = wd->rank == 0;
    if (!c->model_path) return remat_cli_missing("run", "--model", "a model file, e.g. data/models/mlp-lif.json");
    const cli_file ins[] = {{"--model", c->model_path}, {"--plan", c->plan_path}, {"--init", c->init_path}};
    const cli_file outs[] = {{"--trace", c->trace_path}, {"--dump", c->dump_path}};
    /* rank 0 alone writes, so it alone checks the outputs; every rank exits with its code */
    if (remat_tools_world_agree(wd, lead && remat_cli_refuse_overlap("run", ins, 3, outs, 2) ? 2 : 0)) return 2;
    if (c->iters < 1 || c->iters > 100000) {
        fprintf(stderr, "remat run: --iters: %d is out of range (expected 1..100000)\n", c->iters);
        return 2;
    }
    if (c->threads < 1 || c->threads > 256) {
        fprintf(stderr, "remat run: --threads: %d is out of range (expected 1..256)\n", c->threads);
        return 2;
    }
    if (c->seed_s && !remat_cli_parse_u64(c->seed_s, &c->seed)) {
        fprintf(stderr, "remat run: --seed: '%s' is not a seed (expected a decimal 0..2^64-1)\n", c->seed_s);
        return 2;
    }
    if (c->probe_n != -1 && (!c->trace_path || c->probe_n < 0 || c->probe_n > REMAT_TRACE_MAX_N || (c->probe_n > 0 && c->iters < 2))) {
        fprintf(stderr, "remat run: --probe-N: %s\n",
                !c->trace_path ? "expected with --trace (the probe is part of a trace)"
                : c->probe_n < 0 || c->probe_n > REMAT_TRACE_MAX_N
                    ? "expected 0 (no probe) or a batch of 1..16777216"
                    : "expected with --iters 2 or more (the probe's times are warm steps'; a one-step trace's are a "
                      "first step's)");
        return 2;
    }
    if (c->trace_path && c->dump_path) {
        fprintf(stderr, "remat run: --trace: a dump step skips the optimiser update, so its trace is not one that "
                        "simulate, search or tune replay (expected one of --trace, --dump)\n");
        return 2;
    }
    if (c->dump_path && c->no_input_grad) {
        fprintf(stderr, "remat run: --no-input-grad: a dump holds the input gradient (drop one of --dump, --no-input-grad)\n");
        return 2;
    }
    if (c->dump_path && c->iters != 1) {
        fprintf(stderr, "remat run: --dump: a dump records exactly one step (got --iters %d)\n", c->iters);
        return 2;
    }
    return 0;
}

/* Rank 0's answer: the summary (or --json), every rank's share when sharded, the driver's
 * view, the firing rates of a trace, what was written, the next command. */
static void print_answer(const run_cmd *c, const remat_tools_world *wd, const remat_model *m, const remat_plan *p,
                         const remat_step_result *res, const rank_report *reports, const remat_trace *trace,
                         const remat_cuda_info *ci) {
    shard_json sj = {c->blocks, wd->size, reports, !c->dump_path};
    if (c->json) {
        print_json(m, c->plan_path, c->backend, c->threads, res, c->iters, ci, reports ? &sj : NULL);
    } else {
        print_human(m, p, c->plan_path, c->backend, c->threads, res, c->iters);
        if (reports)
            for (int q = 0; q < wd->size; q++)
                printf("rank %d                %lld samples, peak live %lld B, peak reserved %lld B%s\n", q,
                       (long long)reports[q].n, (long long)reports[q].peak_live,
                       (long long)reports[q].peak_reserved, q ? "" : " (state CRC-32 shared by every rank)");
        if (ci) print_driver_human(ci, res[c->iters - 1].peak_reserved_bytes);
    }
    if (c->trace_path) remat_print_rates(c->json ? NULL : stdout, "run", trace, m);
    if (!c->json && c->trace_path) printf("trace written to %s (%lld events)\n", c->trace_path, (long long)trace->n_events);
    if (!c->json && c->dump_path) printf("gradient dump written to %s\n", c->dump_path);
    if (!c->json && c->trace_path && remat_plan_is_empty(p))
        remat_cli_next(stdout, "remat search --trace %s --budget 8GiB --out plan.json   (a plan for your card)",
                       c->trace_path);
    else if (!c->json && !remat_plan_is_empty(p)) {
        char sz[64];
        remat_cli_next(stdout, "remat verify --model %s --plan '%s'%s   (prove it bit-identical)", c->model_path,
                       c->plan_path ? c->plan_path : "", remat_cli_size_flags(sz, sizeof sz, c->N, c->T));
    }
}

/* What run_main's phases share: the model and plan, the rank's share, the backend, the
 * trace and the steps' results. */
typedef struct run_state {
    remat_error err;
    remat_model m, ml; /* ml: the rank's share of the batch (m itself in one unblocked process) */
    const remat_model *mr;
    remat_plan p;
    remat_weights w;
    remat_exec_opts o;
    remat_shard shard;
    remat_backend be;
    remat_trace trace;
    remat_step_result *res;
    rank_report *reports;
    uint32_t crc;
    int sharded;
} run_state;

/* The model, plan and initial weights, the rank's share, the allocator's settings, the
 * backend and the trace: 0, or the exit code with what was made freed. */
static int run_setup(run_cmd *c, const remat_tools_world *wd, run_state *r) {
    int rc;
    remat_error *err = &r->err;
    if ((rc = remat_tools_size_flags("run", c->T, c->N)) != 0) return rc;
    if (remat_tools_load_sized(c->model_path, c->plan_path, c->T, c->N, &r->m, &r->p, err) != REMAT_OK)
        return remat_cli_fail("run", err);
    remat_cli_plan_question_check("run", &r->p, &r->m, NULL);
    memset(&r->w, 0, sizeof r->w);
    if (c->init_path && (rc = remat_tools_init_weights("run", c->init_path, &r->m, &r->w)) != 0) {
        remat_plan_free(&r->p);
        remat_model_free(&r->m);
        return rc;
    }
    r->o = remat_exec_opts_default();
    r->o.seed = c->seed;
    r->o.no_input_grad = c->no_input_grad;
    r->o.init_values = (const float *const *)r->w.values;
    r->shard = (remat_shard){c->blocks, wd->size, wd->rank, r->m.N, wd->comm};
    memset(&r->ml, 0, sizeof r->ml);
    if (r->sharded) {
        if (remat_shard_check(&r->shard, "run", err) != REMAT_OK ||
            remat_model_rescale(&r->m, 0, remat_shard_local_n(&r->shard), &r->ml, err) != REMAT_OK) {
            remat_weights_free(&r->w);
            remat_plan_free(&r->p);
            remat_model_free(&r->m);
            return remat_cli_fail("run", err);
        }
        r->o.shard = &r->shard;
    }
    r->mr = r->sharded ? &r->ml : &r->m;
    memset(&r->be, 0, sizeof r->be);
    if ((c->alloc_cfg && remat_caching_config_parse(c->alloc_cfg, &r->o.caching, err) != REMAT_OK) ||
        remat_tools_backend_open(c->backend, c->threads, &r->be, err) != REMAT_OK) {
        remat_weights_free(&r->w);
        remat_plan_free(&r->p);
        remat_model_free(&r->ml);
        remat_model_free(&r->m);
        return remat_cli_fail("run", err);
    }
    remat_trace_init(&r->trace);
    if (c->trace_path) {
        r->o.trace = &r->trace;
        remat_tools_trace_host(&r->trace, c->backend, c->threads);
        remat_tools_caching_config_text(&r->o.caching, r->trace.allocator_config, sizeof r->trace.allocator_config);
    }
    return 0;
}

/* The steps: one for the dump, else --iters of the session, then a plain trace's probe. */
static remat_status run_steps(run_cmd *c, const remat_tools_world *wd, run_state *r) {
    const int lead = wd->rank == 0;
    remat_error *err = &r->err;
    r->res = remat_xcalloc((size_t)c->iters, sizeof *r->res, err);
    remat_status st = r->res ? REMAT_OK : REMAT_ERR_NOMEM;
    if (st == REMAT_OK && c->dump_path) {
        if (lead) remat_cli_progress("run: one step of %s for the dump", r->m.name);
        return remat_dump_run(&r->m, &r->p, &r->be, &r->o, c->dump_path, &r->res[0], err);
    }
    if (st != REMAT_OK) return st;
    remat_session *s = remat_session_init(r->mr, &r->p, &r->be, &r->o, err);
    if (!s) st = err->status != REMAT_OK ? err->status : REMAT_ERR_INTERNAL;
    remat_error ignored = {0};
    if (s && !strcmp(c->backend, "cuda")) (void)remat_backend_cuda_reset_peak(&r->be, &ignored);
    for (int i = 0; s && i < c->iters && st == REMAT_OK; i++) {
        if (lead) remat_cli_progress("run: step %d/%d of %s", i + 1, c->iters, r->m.name);
        st = remat_session_step(s, 1, &r->res[i], err);
    }
    if (s && st == REMAT_OK && r->sharded) st = state_crc(s, r->mr, &r->crc, err);
    remat_session_free(s);
    if (c->probe_n < 0) /* by default with warm steps to compare with */
        /* 4N: the farther the two sizes, the less an op's noise tilts its line (at 2N
         * the N=32 step of an N=2 recording came out 0.65x to 1.0x, at 4N 0.9x to 1.1x) */
        c->probe_n = c->iters < 2 ? 0 : r->m.N * 4 <= REMAT_TRACE_MAX_N ? (int)(r->m.N * 4) : (int)(r->m.N / 2);
    if (st == REMAT_OK && c->trace_path && c->probe_n > 0 && !r->sharded && remat_plan_is_empty(&r->p)) {
        remat_error pe = {0}; /* a probe that does not fit leaves the trace without one */
        double rec_s = 0; /* the recording's best warm step */
        for (int i = 1; i < c->iters; i++)
            if (i == 1 || r->res[i].step_time_s < rec_s) rec_s = r->res[i].step_time_s;
        if (run_probes(&r->m, c->probe_n, rec_s, &r->be, &r->o, &r->trace, &pe) != REMAT_OK) {
            remat_cli_progress_done();
            fprintf(stderr, "remat run: note: no probe in the trace (%s): simulate prices another batch size by "
                            "elements alone\n", pe.msg);
            r->trace.n_probe_ops = 0;
            r->trace.n_probe_steps = 0;
            r->trace.probe_N = 0;
        }
    }
    return st;
}

/* every rank's peaks and state to every rank, the states compared */
static remat_status gather_ranks(const run_cmd *c, const remat_tools_world *wd, run_state *r) {
    rank_report mine = {wd->rank, r->mr->N, 0, 0, r->crc};
    for (int i = 0; i < c->iters; i++) {
        if (r->res[i].peak_live_bytes > mine.peak_live) mine.peak_live = r->res[i].peak_live_bytes;
        if (r->res[i].peak_reserved_bytes > mine.peak_reserved) mine.peak_reserved = r->res[i].peak_reserved_bytes;
    }
    r->reports = remat_xcalloc((size_t)wd->size, sizeof *r->reports, &r->err);
    remat_status st = r->reports ? remat_comm_allgather(wd->comm, &mine, r->reports, sizeof mine, &r->err) : REMAT_ERR_NOMEM;
    for (int q = 1; st == REMAT_OK && q < wd->size; q++)
        if (r->reports[q].state_crc != r->reports[0].state_crc)
            st = remat_error_set(&r->err, REMAT_ERR_CHECK,
                                 "rank %d ended the step with other parameters or gradients than rank 0 (state "
                                 "CRC-32 %08llx against %08llx)",
                                 q, (unsigned long long)r->reports[q].state_crc,
                                 (unsigned long long)r->reports[0].state_crc);
    return st;
}

static int run_main(int argc, char **argv, const remat_tools_world *wd) {
    run_cmd c = {.backend = "ref", .seed = 1, .iters = 1, .threads = 1, .blocks = 1, .probe_n = -1};
    int help = 0;
    const cli_option opts[] = {
        {"--model", CLI_STRING, &c.model_path, "model file (JSON)"},
        {"--plan", CLI_STRING, &c.plan_path, "plan file (JSON) or plan notation ('b1:bit/k4,b2'); none = no checkpointing"},
        {"--T", CLI_INT, &c.T, "number of time steps (default: the model file's)"},
        {"--N", CLI_INT, &c.N, "batch size (default: the model file's)"},
        {"--backend", CLI_STRING, &c.backend, "ref (default) or cuda"},
        {"--seed", CLI_STRING, &c.seed_s, "seed of parameters, input, labels and dropout, 0..2^64-1 (default 1)"},
        {"--iters", CLI_INT, &c.iters, "training steps (default 1)"},
        {"--init", CLI_STRING, &c.init_path, "initial parameters and batch-norm statistics (HDF5, /params/<layer>/<name>)"},
        {"--threads", CLI_INT, &c.threads, "reference-backend threads (default 1)"},
        {"--trace", CLI_STRING, &c.trace_path, "write the allocation trace (HDF5)"},
        {"--probe-N", CLI_INT, &c.probe_n,
         "with a plain --trace and --iters 2 or more: batch of the probe the trace also holds (default 4N; 0: none)"},
        {"--dump", CLI_STRING, &c.dump_path, "write the gradient dump of one step (HDF5)"},
        {"--allocator-config", CLI_STRING, &c.alloc_cfg, "caching allocator settings, e.g. max_split_size=64MiB"},
        {"--no-input-grad", CLI_FLAG, &c.no_input_grad,
         "do not compute the network input's gradient, as a training loop (not with --dump)"},
        {"--json", CLI_FLAG, &c.json, "print one JSON object instead of the summary"},
        {"--reduce-blocks", CLI_INT, &c.blocks,
         "sum over the batch in B fixed blocks of samples: bit-identical for every world size dividing B (default 1)"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    remat_cli_alloc_config_note("run", c.alloc_cfg);
    if ((rc = check_flags(&c, wd)) != 0) return rc;
    const int lead = wd->rank == 0; /* rank 0 alone prints and writes */
    run_state r = {.sharded = c.blocks != 1 || wd->size > 1};
    if ((rc = run_setup(&c, wd, &r)) != 0) return rc;
    remat_status st = run_steps(&c, wd, &r);
    remat_cli_progress_done();
    /* rank 0 alone wrote the dump (after the step's last exchange): its outcome is every
     * rank's exit code, its message printed once, by rank 0 */
    int lead_rc = c.dump_path && wd->size > 1 ? remat_tools_world_agree(wd, lead && st != REMAT_OK ? remat_status_exit_code(st) : 0) : 0;
    if (lead_rc && !lead && st == REMAT_OK) goto done;
    remat_cuda_info ci;
    int have_ci = st == REMAT_OK && !strcmp(c.backend, "cuda") && cuda_driver_view(&r.be, &ci);
    if (have_ci && ci.total_bytes > 0 && ci.free_at_init >= 0) { /* the driver's view goes into the trace */
        r.trace.device_total_bytes = ci.total_bytes;
        r.trace.device_free_at_init = ci.free_at_init;
    }
    if (st == REMAT_OK && r.sharded) st = gather_ranks(&c, wd, &r);
    if (st == REMAT_OK && c.trace_path && lead) st = remat_trace_write_h5(&r.trace, c.trace_path, &r.err);
    if (c.trace_path && wd->size > 1 && r.reports) { /* rank 0's trace (its own share's): as the dump above */
        lead_rc = remat_tools_world_agree(wd, lead && st != REMAT_OK ? remat_status_exit_code(st) : 0);
        if (lead_rc && !lead && st == REMAT_OK) goto done;
    }
    if (st == REMAT_OK && lead) /* rank 0 prints */
        print_answer(&c, wd, &r.m, &r.p, r.res, r.sharded ? r.reports : NULL, &r.trace, have_ci ? &ci : NULL);
done:
    remat_xfree(r.res);
    remat_xfree(r.reports);
    remat_trace_free(&r.trace);
    remat_backend_free(&r.be);
    remat_weights_free(&r.w);
    remat_plan_free(&r.p);
    if (r.sharded) remat_model_free(&r.ml);
    remat_model_free(&r.m);
    if (lead_rc && !lead && st == REMAT_OK) return lead_rc; /* rank 0 said why */
    return st == REMAT_OK ? 0 : remat_cli_fail("run", &r.err);
}
