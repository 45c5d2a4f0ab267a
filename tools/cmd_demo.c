/* cmd_demo.c - `remat demo`: the main job on the built-in default model.
 * Records one training step of the default model (data/models/mlp-lif.json,
 * compiled in) on the reference backend, writes its trace and prints its memory
 * summary. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/executor.h"
#include "core/trace.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/run_common.h"

extern const char remat_default_model_json[];

static const char *USAGE =
    "usage: remat demo [--model M.json] [--out DIR] [--threads N]\n"
    "\n"
    "Records one training step of the built-in default model (an MLP of three LIF layers,\n"
    "T=64, N=128; or --model) on the reference backend, writes DIR/baseline.h5 and prints\n"
    "where the memory goes.";

int remat_cmd_demo(int argc, char **argv) {
    const char *model_path = NULL, *out_dir = "remat-demo";
    int threads = 1, help = 0;
    const cli_option opts[] = {
        {"--model", CLI_STRING, &model_path, "model file (default: the built-in mlp-lif)"},
        {"--out", CLI_STRING, &out_dir, "output folder (default remat-demo)"},
        {"--threads", CLI_INT, &threads, "reference-backend threads (default 1)"},
        {0},
    };
    int rc = cli_parse(argc, argv, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    remat_error err = {0};
    remat_model m;
    remat_plan p;
    memset(&m, 0, sizeof m);
    remat_status st = model_path ? remat_model_load(model_path, &m, &err)
                                 : remat_model_parse(remat_default_model_json, strlen(remat_default_model_json),
                                                     "<built-in mlp-lif>", &m, &err);
    if (st != REMAT_OK) return cli_fail("demo", &err);
    if (remat_plan_init_empty(&m, &p, &err) != REMAT_OK) {
        remat_model_free(&m);
        return cli_fail("demo", &err);
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "remat demo: --out: cannot create folder %s: %s\n", out_dir, strerror(errno));
        remat_plan_free(&p);
        remat_model_free(&m);
        return 2;
    }
    remat_backend be;
    if (remat_tools_backend_open("ref", threads, &be, &err) != REMAT_OK) {
        remat_plan_free(&p);
        remat_model_free(&m);
        return cli_fail("demo", &err);
    }
    remat_trace tr;
    remat_trace_init(&tr);
    remat_exec_opts o = remat_exec_opts_default();
    o.trace = &tr;
    tr.threads = threads;
    remat_tools_caching_config_text(&o.caching, tr.allocator_config, sizeof tr.allocator_config);
    remat_step_result r;
    char path[4096];
    snprintf(path, sizeof path, "%s/baseline.h5", out_dir);
    cli_progress("demo [1/1] recording one step of %s (T=%lld, N=%lld)", m.name, (long long)m.T, (long long)m.N);
    st = remat_exec_run(&m, &p, &be, &o, 1, &r, &err);
    cli_progress_done();
    if (st == REMAT_OK) st = remat_trace_write_h5(&tr, path, &err);
    if (st == REMAT_OK) {
        char b1[64], b2[64], b3[64];
        printf("remat demo: %s, T=%lld, N=%lld, plain backpropagation on the reference backend\n", m.name,
               (long long)m.T, (long long)m.N);
        printf("  loss                 %.6f\n", r.loss);
        printf("  peak live bytes      %s\n", cli_fmt_bytes(r.peak_live_bytes, b1, sizeof b1));
        printf("  peak reserved bytes  %s  (caching allocator model)\n", cli_fmt_bytes(r.peak_reserved_bytes, b2, sizeof b2));
        printf("  end of forward       %s\n", cli_fmt_bytes(r.end_of_forward_bytes, b3, sizeof b3));
        printf("  step time            %.3f s\n", r.step_time_s);
        printf("  trace                %s (%lld events)\n", path, (long long)tr.n_events);
    }
    remat_trace_free(&tr);
    remat_backend_free(&be);
    remat_plan_free(&p);
    remat_model_free(&m);
    return st == REMAT_OK ? 0 : cli_fail("demo", &err);
}
