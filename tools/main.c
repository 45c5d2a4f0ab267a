/* main.c - `remat`: one executable, one subcommand per tools/cmd_<name>.c. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "core/base/status.h"
#include "core/io/input_file.h"
#include "core/io/trace.h"
#include "core/ref/simd.h"
#include "plots/figure.h" /* REMAT_GNUPLOT_TIMEOUT_S */
#include "tools/commands.h"
#include "tools/world.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *what;
} command;

static const command commands[] = {
    {"demo", remat_cmd_demo, "the end-to-end demo: record, search, run, verify, plot"},
    {"run", remat_cmd_run, "run training steps under a plan; record a trace or a gradient dump"},
    {"simulate", remat_cmd_simulate, "predict peak memory and step time of a plan from a baseline trace"},
    {"search", remat_cmd_search, "find a plan under a memory budget or by greedy level"},
    {"tune", remat_cmd_tune, "largest batch (or T) that fits a budget, with and without checkpointing"},
    {"verify", remat_cmd_verify, "prove a plan bit-identical to plain backpropagation; check compressors"},
    {"plot", remat_cmd_plot, "draw memory curves and plan comparisons with gnuplot"},
    {"import-torch", remat_cmd_import_torch, "import a PyTorch memory snapshot (pickle) as an allocation stream"},
};

static void usage(FILE *f) {
    fprintf(f, "usage: remat <command> [options]   (remat <command> --help for its options)\n"
               "       remat --version   (trace schema, the reference GEMM's SIMD path)\n\n"
               "Predicts, runs and verifies activation-checkpointing plans for spiking networks. Every\n"
               "prediction describes remat's own executor (reference or CUDA backend, caching allocator\n"
               "model) running the model, not a PyTorch script of the same network.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].what);
}

int main(int argc, char **argv) {
    /* A write past `ulimit -f` fails with EFBIG and is reported like any write error
     * (its temporary removed) instead of SIGXFSZ killing the process silently. */
    signal(SIGXFSZ, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    /* REMAT_SIMD (core/ref/simd.h) is input: a bad value stops here, before any work. */
    remat_error err = {0};
    if (remat_ref_simd_from_env(&err) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", err.msg);
        return remat_status_exit_code(err.status);
    }
    /* so are the time limits: a value that is not one is refused, not taken as 60 s */
    double limit;
    if (remat_env_seconds("REMAT_FIFO_WAIT_S", 1, REMAT_INPUT_WAIT_S, &limit, &err) != REMAT_OK ||
        remat_env_seconds("REMAT_GNUPLOT_TIMEOUT_S", 0, REMAT_GNUPLOT_TIMEOUT_S, &limit, &err) != REMAT_OK) {
        fprintf(stderr, "remat: %s\n", err.msg);
        return remat_status_exit_code(err.status);
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("remat %s (trace schema %d)\nsimd: %s (GEMM and element-wise kernels; this CPU:", REMAT_VERSION,
               REMAT_TRACE_SCHEMA_VERSION,
               remat_ref_simd_name(remat_ref_simd_get()));
        for (int p = 0; p < REMAT_SIMD_COUNT; p++)
            if (remat_ref_simd_supported((remat_simd)p)) printf(" %s", remat_ref_simd_name((remat_simd)p));
        printf("; REMAT_SIMD forces one)\n");
        printf("mpi: %s\n", remat_tools_mpi_status());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "remat: unknown command '%s' (expected one of: demo, run, simulate, search, tune, verify, plot, import-torch)\n",
            argv[1]);
    return 2;
}
