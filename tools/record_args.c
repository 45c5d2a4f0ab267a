/* record_args.c - --N and --second-trace on a recorded PyTorch step (record_args.h). */
#include <stdio.h>
#include <string.h>

#include "core/io/ext_record.h"
#include "tools/cli.h"
#include "tools/record_args.h"

int remat_cli_record_rescale(const char *cmd, const char *path, remat_ext_trace *t, const char *second, int64_t N,
                             int need_n, remat_torch_linear *L) {
    if (N && !second) {
        fprintf(stderr, "remat %s: --N: %s is a PyTorch step recorded at N = %lld; rescaling it needs the same step "
                        "recorded at another batch size (--second-trace B.h5), to check that every allocation is "
                        "constant or proportional to N\n",
                cmd, path, (long long)t->record->N);
        return 2;
    }
    if (!second) return 0;
    if (need_n && !N) {
        fprintf(stderr, "remat %s: --second-trace: expected --N n too (the batch size to predict)\n", cmd);
        return 2;
    }
    remat_ext_trace b;
    remat_error err = {0};
    remat_cli_progress("%s: reading %s and checking the two recordings", cmd, second);
    if (remat_ext_trace_read_h5(second, &b, &err) != REMAT_OK) {
        remat_cli_progress_done();
        return remat_cli_fail(cmd, &err);
    }
    if (!b.record) {
        remat_ext_trace_free(&b);
        remat_cli_progress_done();
        fprintf(stderr, "remat %s: %s: /record: expected a PyTorch step recorded by remat_torch.record (the same step "
                        "as %s at another batch size)\n",
                cmd, second, path);
        return 2;
    }
    remat_torch_linear own, *lin = L ? L : &own;
    remat_status st = remat_torch_linear_check(t, path, &b, second, lin, &err);
    remat_ext_trace_free(&b);
    remat_cli_progress_done();
    if (st == REMAT_OK && N) st = remat_torch_linear_apply(lin, N, t, &err);
    if (!L || st != REMAT_OK) remat_torch_linear_free(lin);
    return st == REMAT_OK ? 0 : remat_cli_fail(cmd, &err);
}
