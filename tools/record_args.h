/* record_args.h - what simulate, search and tune share on a recorded PyTorch step
 * (remat_torch.record): --N with --second-trace, the same step recorded at another
 * batch size (sim/torch_rescale.h). */
#ifndef REMAT_TOOLS_RECORD_ARGS_H
#define REMAT_TOOLS_RECORD_ARGS_H

#include <stdint.h>

#include "core/io/ext_trace.h"
#include "sim/torch_rescale.h"
#include "sim/torch_sim.h"

/* The one-line help of --second-trace, shared by the commands. */
#define REMAT_CLI_SECOND_TRACE_HELP                                                                                    \
    "a recorded PyTorch step: the same step recorded at another batch size; with it --N rescales the recording "       \
    "(exact only where every allocation is constant or proportional to N, else refused)"

/* Checks --N and --second-trace for the recorded step t (read from path) and, when both
 * are given, reads the second recording, checks the two (*L, kept for more N when L is
 * not NULL) and rewrites t at N. need_n: the command needs --N with --second-trace
 * (simulate, search), or tunes it (tune: N 0). Returns 0, or 2 with one line on stderr. */
int remat_cli_record_rescale(const char *cmd, const char *path, remat_ext_trace *t, const char *second, int64_t N,
                             int need_n, remat_torch_linear *L);

/* `remat tune` on a recorded PyTorch step (cmd_tune_record.c): the largest N that fits
 * `budget` live bytes, plain and with remat search's plan, from path and the same step
 * recorded at another batch size (second). Returns the exit code. */
int remat_cli_tune_record(const char *path, remat_ext_trace *t, const char *second, int64_t budget, int64_t max_n,
                          const char *executor, const char *out, int json);

#endif
