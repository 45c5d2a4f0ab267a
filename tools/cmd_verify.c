/* cmd_verify.c - `remat verify`: prove a plan bit-identical to plain backpropagation
 * (one plan, or every valid plan of a model), and check the compressors alone.
 * The checks live in verify/; this file parses flags, opens the backend and prints.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/run_common.h"
#include "verify/compress_check.h"
#include "verify/dump_compare.h"
#include "verify/grid.h"
#include "verify/plan_check.h"
#include "verify/report.h"
#include "verify/grid_merge.h"
#include "tools/world.h"

static const char *USAGE =
    "usage: remat verify --model M.json --plan P [--T t] [--N n] [--equivalence-only] [--quiet | --all-tensors]\n"
    "                    [--backend ref|cuda] [--seed S] [--init W.h5] [--threads N] [--json]\n"
    "       remat verify --model M.json --grid [--sample K] [--sample-seed S] [--T t] [--N n] [--equivalence-only]\n"
    "                    [--backend ref|cuda] [--seed S] [--init W.h5] [--all-rows] [--slice i/n] [--no-times]\n"
    "                    [--json]              (mpirun -np R remat verify --grid ...: the plans dealt over ranks)\n"
    "       remat verify --merge S0.json --merge S1.json ... [--no-times] [--json]   (the slices' reports as one)\n"
    "       remat verify --compressors [--seed S] [--large N|auto|max|0] [--json]\n"
    "       remat verify --dump A.h5 --dump B.h5 [--json]\n"
    "\n"
    "Runs one training step (no optimiser update) with plain backpropagation and with the\n"
    "plan, from the same seed on the same backend, and compares the loss, the input and\n"
    "labels, every parameter, every parameter gradient, the input gradient, the batch-norm\n"
    "running statistics after the step and every dropout mask BIT FOR BIT (so -0.0 differs\n"
    "from 0.0 and NaN payloads count). It also checks that the plan lowers the bytes held at\n"
    "the end of forward and the peak, that it recomputes exactly the layers the plan implies,\n"
    "and that every compressed checkpoint input decompresses to the original bit for bit.\n"
    "--grid verifies every valid plan of the model (or --sample K of them); --compressors\n"
    "runs the compressors alone over adversarial inputs and values they must refuse;\n"
    "--dump twice compares two gradient dumps of `remat run --dump` bit for bit.\n"
    "Under mpirun (a --config=mpi build) the grid's plans are dealt over the ranks, rank 0\n"
    "prints the report one process would; --slice i/n verifies the i-th of n slices, whose\n"
    "--json reports --merge joins into the whole grid's (docs/mpi.md). --no-times leaves the\n"
    "measured times out of --json, so that two reports compare byte for byte.\n"
    "Exit status, for one plan and a grid alike: 0 all identical and each plan lowers the\n"
    "peak (with --equivalence-only: all identical, whatever the memory does), 1 a check\n"
    "failed, 2 bad input. The per-tensor table lists the differing tensors and counts the\n"
    "others (--all-tensors: every tensor; --quiet: no table). docs/verify.md says what\n"
    "bit-identical guarantees.";

static int parse_fault(const char *s, remat_fault *out) {
    static const struct { const char *name; remat_fault f; } k[] = {
        {"none", REMAT_FAULT_NONE},
        {"reorder-wgrad", REMAT_FAULT_REORDER_WGRAD},
        {"redraw-dropout", REMAT_FAULT_REDRAW_DROPOUT},
        {"bn-double-update", REMAT_FAULT_BN_DOUBLE_UPDATE},
        {"lossy-compress", REMAT_FAULT_LOSSY_COMPRESS},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (!strcmp(s, k[i].name)) {
            *out = k[i].f;
            return 1;
        }
    return 0;
}

static void compress_progress(void *ctx, const char *comp, const char *group) {
    (void)ctx;
    remat_cli_progress("verify --compressors: %s: %s", comp, group);
}

static int run_compressors(uint64_t seed, const char *large, int json) {
    remat_verify_compress_opts o = remat_verify_compress_opts_default();
    o.seed = seed;
    o.progress = compress_progress;
    if (!large) {
        o.large_elems = REMAT_VERIFY_LARGE_DEFAULT;
    } else if (!strcmp(large, "auto")) {
        o.large_elems = REMAT_VERIFY_LARGE_AUTO;
    } else if (!strcmp(large, "max")) {
        o.large_elems = REMAT_COMPRESS_MAX_ELEMS;
    } else {
        uint64_t v;
        if (!remat_cli_parse_u64(large, &v) || v > (uint64_t)REMAT_COMPRESS_MAX_ELEMS) {
            fprintf(stderr, "remat verify: --large: '%s' is not an element count (expected 0..%" PRId64
                            ", auto or max)\n",
                    large, REMAT_COMPRESS_MAX_ELEMS);
            return 2;
        }
        o.large_elems = (int64_t)v;
    }
    remat_error err = {0};
    remat_verify_compress_report *r = remat_xmalloc(sizeof *r, &err);
    if (!r) return remat_cli_fail("verify", &err);
    remat_status st = remat_verify_compressors_run(&o, r, &err);
    remat_cli_progress_done();
    if (st != REMAT_OK) {
        remat_xfree(r);
        return remat_cli_fail("verify", &err);
    }
    if (json)
        remat_verify_compress_print_json(stdout, r);
    else
        remat_verify_compress_print_human(stdout, r);
    int rc = r->failures ? 1 : 0;
    remat_xfree(r);
    return rc;
}


static void grid_progress(void *ctx, int done, int total, const char *plan) {
    double *t0 = ctx;
    double el = remat_now_s() - *t0;
    if (done > 0)
        remat_cli_progress("verify --grid: plan %d/%d, %.0f s, about %.0f s left: %s", done + 1, total, el,
                           el / done * (total - done), plan);
    else
        remat_cli_progress("verify --grid: plan %d/%d: %s", done + 1, total, plan);
}

/* Every rank's rows to every rank, in the grid's order (one broadcast per rank). */
static remat_status gather_rows(const remat_tools_world *w, remat_verify_grid_row **rows, int *n, remat_error *err) {
    int *counts = remat_xcalloc((size_t)w->size, sizeof *counts, err);
    if (!counts) return REMAT_ERR_NOMEM;
    remat_status st = remat_comm_allgather(w->comm, n, counts, sizeof *n, err);
    int total = 0;
    for (int q = 0; q < w->size; q++) total += counts[q];
    remat_verify_grid_row *all = st == REMAT_OK ? remat_xcalloc((size_t)total + 1, sizeof *all, err) : NULL;
    if (st == REMAT_OK && !all) st = REMAT_ERR_NOMEM;
    for (int q = 0, at = 0; st == REMAT_OK && q < w->size; at += counts[q], q++) {
        if (q == w->rank && counts[q]) memcpy(&all[at], *rows, (size_t)counts[q] * sizeof *all);
        st = w->comm->bcast(w->comm->ctx, &all[at], (int64_t)counts[q] * (int64_t)sizeof *all, q, err);
    }
    remat_xfree(counts);
    if (st == REMAT_OK) st = remat_verify_grid_sort(all, total, err);
    if (st != REMAT_OK) {
        remat_xfree(all);
        return st;
    }
    remat_xfree(*rows);
    *rows = all;
    *n = total;
    return REMAT_OK;
}

static void print_grid(const remat_verify_context *cx, const remat_verify_grid_summary *sum,
                       const remat_verify_grid_row *rows, int n, int json, int all_rows) {
    if (json) {
        remat_verify_grid_print_json(stdout, cx, sum, rows, n);
        remat_verify_grid_print_verdict(stderr, cx, rows, n); /* the one line a CI log shows */
    } else
        remat_verify_grid_print_human(stdout, cx, sum, rows, n, all_rows);
}

static int run_grid(const remat_model *m, remat_backend *be, const remat_verify_context *cx,
                    const remat_verify_grid_opts *o, int json, int all_rows, int no_times, const remat_tools_world *w) {
    /* the same rule as one plan (remat_verify_counted) */
    remat_error err = {0};
    remat_verify_grid_row *rows = NULL;
    int n = 0;
    remat_verify_grid_summary sum;
    remat_status st = remat_verify_grid_run(m, be, o, &rows, &n, &sum, &err);
    remat_cli_progress_done();
    if (st == REMAT_OK && w->size > 1) { /* the ranks' slices: one grid on every rank */
        st = gather_rows(w, &rows, &n, &err);
        sum.slice_i = sum.slice_n = 0;
    }
    if (st != REMAT_OK) {
        remat_xfree(rows);
        return remat_cli_fail("verify", &err);
    }
    sum.no_times = no_times;
    if (w->rank == 0) print_grid(cx, &sum, rows, n, json, all_rows);
    int rc = remat_verify_grid_failed(rows, n, cx->equivalence_only) ? 1 : 0;
    remat_xfree(rows);
    return rc;
}

static int run_merge(const cli_list *files, int json, int all_rows, int no_times) {
    remat_error err = {0};
    remat_verify_grid_merged g;
    if (remat_verify_grid_merge(files->items, files->n, &g, &err) != REMAT_OK) return remat_cli_fail("verify", &err);
    remat_verify_context cx = {&g.model, NULL, NULL, g.backend, g.seed, g.threads, g.equivalence_only,
                               REMAT_VERIFY_TABLE_NONE};
    if (no_times) g.summary.no_times = 1;
    print_grid(&cx, &g.summary, g.rows, g.n_rows, json, all_rows);
    int rc = remat_verify_grid_failed(g.rows, g.n_rows, g.equivalence_only) ? 1 : 0;
    remat_verify_grid_merged_free(&g);
    return rc;
}

static int run_dumps(const char *a, const char *b, int json, int table) {
    remat_error err = {0};
    remat_verify_dump_result r;
    remat_status st = remat_verify_dumps(a, b, &r, &err);
    if (st != REMAT_OK) return remat_cli_fail("verify", &err);
    if (json)
        remat_verify_dump_print_json(stdout, a, b, &r);
    else
        remat_verify_dump_print_human(stdout, a, b, &r, table);
    int rc = r.identical ? 0 : 1;
    remat_verify_dump_result_free(&r);
    return rc;
}

static int run_plan(const remat_model *m, const remat_plan *p, const char *plan_path, remat_backend *be,
                    const char *backend, int threads, const remat_verify_opts *o, int json, int eq_only,
                    int table) {
    remat_error err = {0};
    remat_verify_result r;
    remat_cli_progress("verify: %s: baseline and plan, one step each", m->name);
    remat_status st = remat_verify_plan_run(m, p, be, o, &r, &err);
    remat_cli_progress_done();
    if (st != REMAT_OK) return remat_cli_fail("verify", &err);
    remat_verify_context cx = {m, p, plan_path, backend, o->seed, !strcmp(backend, "ref") ? threads : 0, eq_only,
                               table};
    if (json) {
        remat_verify_print_json(stdout, &cx, &r);
        remat_verify_print_verdict(stderr, &cx, &r); /* the one line a CI log shows */
    } else
        remat_verify_print_human(stdout, &cx, &r);
    int rc = remat_verify_counted(r.failures, eq_only) ? 1 : 0;
    remat_verify_result_free(&r);
    return rc;
}

/* The command's flags, and what the phases below hand each other. */
typedef struct verify_cmd {
    const char *model_path, *plan_path, *backend, *seed_s, *fault_s, *large, *sample_seed_s, *init_path, *slice_s;
    int threads, json, grid, sample, compressors, no_check, all_rows; /* sample -1: no --sample */
    int eq_only, quiet, all_tensors, T, N, max_plans_i, no_times;
    cli_list dumps, merges;
    uint64_t seed, sample_seed;
    remat_fault fault;
    int table, slice_i, slice_n;
} verify_cmd;

/* Seeds, threads, --fault, the table: 0, or 2 with one line on stderr. */
static int check_common(verify_cmd *c) {
    c->seed = 1;
    if (c->seed_s && !remat_cli_parse_u64(c->seed_s, &c->seed)) {
        fprintf(stderr, "remat verify: --seed: '%s' is not a seed (expected a decimal 0..2^64-1)\n", c->seed_s);
        return 2;
    }
    c->sample_seed = c->seed;
    if (c->sample_seed_s && !remat_cli_parse_u64(c->sample_seed_s, &c->sample_seed)) {
        fprintf(stderr, "remat verify: --sample-seed: '%s' is not a seed (expected a decimal 0..2^64-1)\n",
                c->sample_seed_s);
        return 2;
    }
    if (c->threads < 1 || c->threads > 256) {
        fprintf(stderr, "remat verify: --threads: %d is out of range (expected 1..256)\n", c->threads);
        return 2;
    }
    c->fault = REMAT_FAULT_NONE;
    if (c->fault_s && !parse_fault(c->fault_s, &c->fault)) {
        fprintf(stderr,
                "remat verify: --fault: '%s' is not a fault (expected none, reorder-wgrad, redraw-dropout, "
                "bn-double-update or lossy-compress)\n",
                c->fault_s);
        return 2;
    }
    if (c->quiet && c->all_tensors) {
        fprintf(stderr, "remat verify: --quiet: prints no table (expected --quiet or --all-tensors, not both)\n");
        return 2;
    }
    c->table = c->quiet ? REMAT_VERIFY_TABLE_NONE : c->all_tensors ? REMAT_VERIFY_TABLE_ALL : REMAT_VERIFY_TABLE_DIFFERING;
    return 0;
}

/* --dump, --merge and --compressors, which run without a model: *done set when one ran
 * (its exit status returned), else 0. */
static int run_alone(const verify_cmd *c, int *done) {
    *done = 1;
    if (c->dumps.n) {
        if (c->dumps.n != 2 || c->model_path || c->plan_path || c->grid || c->compressors || c->init_path) {
            fprintf(stderr, "remat verify: --dump: expected exactly two dumps and no --model, --plan, --grid, "
                            "--compressors or --init (got %d dump%s)\n",
                    c->dumps.n, c->dumps.n == 1 ? "" : "s");
            return 2;
        }
        return run_dumps(c->dumps.items[0], c->dumps.items[1], c->json, c->table);
    }
    if (c->merges.n) {
        if (c->model_path || c->plan_path || c->grid || c->compressors || c->init_path || c->slice_s) {
            fprintf(stderr, "remat verify: --merge: joins slice reports alone (expected no --model, --plan, --grid, "
                            "--slice or --init)\n");
            return 2;
        }
        return run_merge(&c->merges, c->json, c->all_rows, c->no_times);
    }
    if (c->compressors) {
        if (c->model_path || c->plan_path || c->grid || c->init_path) {
            fprintf(stderr, "remat verify: --compressors: runs alone (expected no --model, --plan or --grid)\n");
            return 2;
        }
        return run_compressors(c->seed, c->large, c->json);
    }
    *done = 0;
    return 0;
}

/* The flags of one plan or a grid: 0, or 2 with one line on stderr. */
static int check_model_flags(verify_cmd *c) {
    if (c->large) {
        fprintf(stderr, "remat verify: --large: only with --compressors\n");
        return 2;
    }
    if (!c->model_path) return remat_cli_missing("verify", "--model", "a model file, e.g. data/models/mlp-lif.json");
    if (c->grid && c->plan_path) {
        fprintf(stderr, "remat verify: --grid: verifies every plan (expected no --plan)\n");
        return 2;
    }
    if (!c->grid && !c->plan_path)
        return remat_cli_missing("verify", "--plan", "a plan file, or --grid for every valid plan");
    if (c->all_rows && !c->grid) {
        fprintf(stderr, "remat verify: --all-rows: only with --grid\n");
        return 2;
    }
    if (c->max_plans_i < 1) {
        fprintf(stderr, "remat verify: --max-plans: %d (expected 1 or more)\n", c->max_plans_i);
        return 2;
    }
    if (c->sample == 0 || c->sample < -1 || (c->sample > 0 && !c->grid)) {
        fprintf(stderr, "remat verify: --sample: %d (expected a positive count, with --grid)\n", c->sample);
        return 2;
    }
    if (c->sample < 0) c->sample = 0; /* not given: the full grid */
    char tail;
    if (c->slice_s && (!c->grid || sscanf(c->slice_s, "%d/%d%c", &c->slice_i, &c->slice_n, &tail) != 2 ||
                       c->slice_n < 1 || c->slice_n > 1000000 || c->slice_i < 0 || c->slice_i >= c->slice_n)) {
        fprintf(stderr, "remat verify: --slice: '%s' (expected i/n with 0 <= i < n, with --grid)\n", c->slice_s);
        return 2;
    }
    if (c->no_times && !c->grid) {
        fprintf(stderr, "remat verify: --no-times: only with --grid or --merge\n");
        return 2;
    }
    return 0;
}

/* Under mpirun the grid's plans are dealt over the ranks: the world opened, its rank the slice. */
static int open_world(verify_cmd *c, remat_tools_world *world) {
    memset(world, 0, sizeof *world);
    world->size = 1;
    int rc = remat_tools_world_open("verify", world);
    if (rc != 0) return rc;
    if (world->size > 1 && !c->grid) {
        fprintf(stderr, "remat verify: --plan: one plan is not dealt over ranks (expected --grid under mpirun, or "
                        "one process)\n");
        remat_tools_world_close(world);
        return 2;
    }
    if (world->size > 1 && c->slice_s) {
        fprintf(stderr, "remat verify: --slice: not under mpirun (the ranks are the slices)\n");
        remat_tools_world_close(world);
        return 2;
    }
    if (world->size > 1) {
        c->slice_i = world->rank;
        c->slice_n = world->size;
    }
    return 0;
}

/* The model, the plan, --init and the backend loaded; the plan or the grid verified
 * (*ran set once it ran: a failure before it is not a rank's to abort the world for). */
static int run_model(const verify_cmd *c, const remat_tools_world *world, int *ran) {
    remat_error err = {0};
    remat_model m;
    remat_plan p;
    int rc = remat_tools_size_flags("verify", c->T, c->N);
    if (rc != 0) return rc;
    if (remat_tools_load_sized(c->model_path, c->plan_path, c->T, c->N, &m, &p, &err) != REMAT_OK)
        return remat_cli_fail("verify", &err);
    remat_weights w;
    memset(&w, 0, sizeof w);
    remat_backend be;
    memset(&be, 0, sizeof be);
    if (c->init_path && (rc = remat_tools_init_weights("verify", c->init_path, &m, &w)) != 0) goto out;
    if (remat_tools_backend_open(c->backend, c->threads, &be, &err) != REMAT_OK) {
        rc = remat_cli_fail("verify", &err);
        goto out;
    }
    remat_verify_opts o = remat_verify_opts_default();
    o.seed = c->seed;
    o.fault = c->fault;
    o.check_compress = !c->no_check;
    o.init_values = (const float *const *)w.values;
    *ran = 1;
    if (c->grid) {
        remat_verify_context cx = {&m, NULL, NULL, c->backend, c->seed, !strcmp(c->backend, "ref") ? c->threads : 0,
                                   c->eq_only, REMAT_VERIFY_TABLE_NONE};
        remat_verify_grid_opts go = remat_verify_grid_opts_default();
        go.v = o;
        go.sample = c->sample;
        go.sample_seed = c->sample_seed;
        go.max_plans = c->max_plans_i;
        go.slice_i = c->slice_i;
        go.slice_n = c->slice_n;
        double t0 = remat_now_s();
        go.progress = world->rank == 0 ? grid_progress : NULL;
        go.progress_ctx = &t0;
        rc = run_grid(&m, &be, &cx, &go, c->json, c->all_rows, c->no_times, world);
    } else {
        rc = run_plan(&m, &p, c->plan_path, &be, c->backend, c->threads, &o, c->json, c->eq_only, c->table);
    }
    remat_backend_free(&be);
out:
    remat_weights_free(&w);
    remat_plan_free(&p);
    remat_model_free(&m);
    return rc;
}

int remat_cmd_verify(int argc, char **argv) {
    verify_cmd c;
    memset(&c, 0, sizeof c);
    c.backend = "ref";
    c.threads = 1;
    c.sample = -1;
    c.max_plans_i = 20000;
    int help = 0;
    const cli_option opts[] = {
        {"--model", CLI_STRING, &c.model_path, "model file (JSON)"},
        {"--plan", CLI_STRING, &c.plan_path, "plan file (JSON) or plan notation ('b1:bit/k4,b2') to verify against plain backpropagation"},
        {"--T", CLI_INT, &c.T, "number of time steps (default: the model file's)"},
        {"--N", CLI_INT, &c.N, "batch size (default: the model file's)"},
        {"--equivalence-only", CLI_FLAG, &c.eq_only,
         "the verdict and exit code say whether the plan is bit-identical, whatever its memory does"},
        {"--quiet", CLI_FLAG, &c.quiet, "no per-tensor table"},
        {"--all-tensors", CLI_FLAG, &c.all_tensors, "list every tensor (default: the differing ones and a count)"},
        {"--grid", CLI_FLAG, &c.grid, "verify every valid plan of the model instead of one"},
        {"--sample", CLI_INT, &c.sample, "with --grid: verify a seeded random sample of K plans"},
        {"--sample-seed", CLI_STRING, &c.sample_seed_s, "with --sample: seed of the sample (default: --seed)"},
        {"--max-plans", CLI_INT, &c.max_plans_i, "with --grid: refuse a full grid or a --sample of more plans than this (default 20000)"},
        {"--all-rows", CLI_FLAG, &c.all_rows, "with --grid: print every row (default: at most 200, then failures and best)"},
        {"--compressors", CLI_FLAG, &c.compressors, "check the compressors alone over adversarial inputs"},
        {"--large", CLI_STRING, &c.large,
         "with --compressors: elements of the large bit round trip (default 268435459; auto: the largest that "
         "fits in memory; max: 4294967295; 0: skip)"},
        {"--backend", CLI_STRING, &c.backend, "ref (default) or cuda; baseline and plan run on the same one"},
        {"--seed", CLI_STRING, &c.seed_s, "seed of parameters, input, labels, dropout (default 1)"},
        {"--init", CLI_STRING, &c.init_path, "initial parameters and batch-norm statistics for both runs (HDF5)"},
        {"--threads", CLI_INT, &c.threads, "reference-backend threads (default 1)"},
        {"--no-compress-check", CLI_FLAG, &c.no_check, "skip the per-compression losslessness check (faster)"},
        {"--fault", CLI_STRING, &c.fault_s,
         "break the contract on purpose in the plan run, to see verify catch it: reorder-wgrad, redraw-dropout, "
         "bn-double-update, lossy-compress"},
        {"--dump", CLI_STRING_LIST, &c.dumps, "a gradient dump (HDF5); give two to compare them bit for bit"},
        {"--slice", CLI_STRING, &c.slice_s, "with --grid: verify slice i of n (the plans at places q with q % n == i)"},
        {"--merge", CLI_STRING_LIST, &c.merges, "a slice's --grid --json report; give every slice to report the grid"},
        {"--no-times", CLI_FLAG, &c.no_times, "--json without the measured times (byte-identical reports)"},
        {"--json", CLI_FLAG, &c.json, "print one JSON object instead of the table"},
        {0},
    };
    int rc = remat_cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if ((rc = check_common(&c)) != 0) return rc;
    int done = 0;
    rc = run_alone(&c, &done);
    if (done) return rc;
    if ((rc = check_model_flags(&c)) != 0) return rc;
    remat_tools_world world;
    if ((rc = open_world(&c, &world)) != 0) return rc;
    int ran = 0;
    rc = run_model(&c, &world, &ran);
    if (ran && rc != 0 && rc != 1 && world.size > 1) remat_tools_world_abort(&world, rc);
    remat_tools_world_close(&world);
    return rc;
}
