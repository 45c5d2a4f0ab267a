/* cmd_import_torch.c - `remat import-torch SNAPSHOT.pickle --out TRACE.h5`: a PyTorch
 * memory snapshot (torch.cuda.memory._dump_snapshot) read with the plain-data pickle
 * reader (no globals, no code) and written as an external allocation stream
 * (core/io/torch_snapshot.h, docs/trace-schema.md); optionally replayed through
 * remat's caching-allocator model (core/io/ext_replay.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "core/io/ext_trace.h"
#include "core/io/torch_snapshot.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/ext_report.h"
#include "tools/paths.h"

static const char *USAGE =
    "usage: remat import-torch SNAPSHOT.pickle --out TRACE.h5 [--quiet]\n"
    "                          [--check-allocator [--allocator-config K=V,...]... [--device D] [--json]]\n"
    "\n"
    "Reads a PyTorch memory snapshot (the pickle torch.cuda.memory._dump_snapshot() writes)\n"
    "without running any of its code: only plain data is accepted, and any opcode that\n"
    "would import or call is refused. Writes TRACE.h5, an external allocation stream\n"
    "(docs/trace-schema.md): per device the recorded events (alloc, free_requested,\n"
    "free_completed, segment_alloc/free/map/unmap, snapshot, oom, user_defined), the segments\n"
    "and blocks at the end, the allocator settings, and each allocation's top frames as\n"
    "its label. Fields the snapshot lacks are listed, not guessed. `remat plot --trace\n"
    "TRACE.h5` draws it.\n"
    "\n"
    "--check-allocator replays the stream through remat's caching-allocator model under the\n"
    "snapshot's allocator settings, from the state the snapshot implies at the start of its\n"
    "window, and prints how many allocations the model places at the address PyTorch gave\n"
    "them (overall, per pool, the first disagreement), the reserved bytes at the end and at\n"
    "the peak, predicted and recorded, and the segment events matched; --allocator-config\n"
    "adds a what-if table (peak reserved and fragmentation under other settings).\n"
    "Exit status: 0 imported (and the check agreed exactly), 1 the check disagreed, 2 bad\n"
    "input (one line; no file written).";


/* Options that take a value, so that their value is not taken for the snapshot. */
static int takes_value(const char *arg) {
    return !strcmp(arg, "--out") || !strcmp(arg, "--allocator-config") || !strcmp(arg, "--device");
}

static void print_summary(const remat_ext_trace *t, const char *snap, const char *out, int64_t bytes, double read_s,
                          double write_s) {
    char b1[64], b2[64];
    printf("imported %s: %s in %.3f s (%.1f MB/s), wrote %s in %.3f s\n", snap,
           remat_cli_fmt_bytes(bytes, b1, sizeof b1), read_s, read_s > 0 ? (double)bytes / 1e6 / read_s : 0.0, out,
           write_s);
    for (int32_t di = 0; di < t->n_devices; di++) {
        const remat_ext_device *d = &t->devices[di];
        int64_t per[REMAT_EXT_ACTION_COUNT] = {0};
        for (int64_t i = 0; i < d->n_events; i++) per[d->events[i].action]++;
        int64_t reserved = 0, small = 0, active = 0;
        for (int64_t s = 0; s < d->n_segments; s++) {
            reserved += d->segments[s].total_size;
            small += d->segments[s].pool == REMAT_EXT_POOL_SMALL;
        }
        for (int64_t b = 0; b < d->n_blocks; b++)
            if (d->blocks[b].state != REMAT_EXT_BLOCK_INACTIVE) active += d->blocks[b].size;
        printf("device %d: %lld events", (int)d->device, (long long)d->n_events);
        const char *sep = " (";
        for (int a = 0; a < REMAT_EXT_ACTION_COUNT; a++)
            if (per[a]) {
                printf("%s%s %lld", sep, remat_ext_action_name(a), (long long)per[a]);
                sep = ", ";
            }
        printf("%s; %lld segments (%lld small), %lld blocks; at the end reserved %s, in use %s\n",
               d->n_events ? ")" : "", (long long)d->n_segments, (long long)small, (long long)d->n_blocks,
               remat_cli_fmt_bytes(reserved, b1, sizeof b1), remat_cli_fmt_bytes(active, b2, sizeof b2));
    }
    printf("labels: %d distinct (top %d frames of each allocation)\n", (int)t->n_labels, REMAT_TORCH_LABEL_FRAMES);
    printf("allocator settings: %s\n", t->settings_recorded ? t->allocator_settings : "not recorded");
    if (t->allocator_config[0]) printf("caching model config: %s\n", t->allocator_config);
    if (t->notes[0]) {
        printf("notes:\n");
        for (const char *p = t->notes; *p;) {
            const char *nl = strchr(p, '\n');
            int n = nl ? (int)(nl - p) : (int)strlen(p);
            printf("  %.*s\n", n, p);
            p += n + (nl ? 1 : 0);
        }
    }
}

/* Writing the stream, then its summary. */
typedef struct writer {
    const remat_ext_trace *t;
    const char *snap, *out;
    int64_t bytes;
    double import_s;
    int quiet;
} writer;

static int write_out(void *ctx) {
    writer *w = ctx;
    remat_error err = {0};
    double t0 = remat_now_s();
    if (remat_ext_trace_write_h5(w->t, w->out, &err) != REMAT_OK) return remat_cli_fail("import-torch", &err);
    if (!w->quiet) print_summary(w->t, w->snap, w->out, w->bytes, w->import_s, remat_now_s() - t0);
    return 0;
}

int remat_cmd_import_torch(int argc, char **argv) {
    /* the one positional argument: the snapshot */
    const char *snap = NULL;
    char *rest[64];
    int nrest = 0;
    for (int i = 0; i < argc; i++) {
        if (nrest >= 63) {
            fprintf(stderr, "remat import-torch: too many arguments (see --help)\n");
            return 2;
        }
        const char *a = argv[i];
        if (i > 0 && a[0] != '-' && !snap) {
            snap = a;
            continue;
        }
        rest[nrest++] = argv[i];
        if (i > 0 && takes_value(a) && i + 1 < argc) rest[nrest++] = argv[++i];
    }
    rest[nrest] = NULL;
    const char *out = NULL;
    int quiet = 0, help = 0, check = 0, json = 0, device = -1;
    cli_list what_if = {0};
    const cli_option opts[] = {
        {"--out", CLI_STRING, &out, "the external allocation stream to write (HDF5)"},
        {"--quiet", CLI_FLAG, &quiet, "print no import summary"},
        {"--check-allocator", CLI_FLAG, &check, "replay the stream through remat's caching-allocator model"},
        {"--allocator-config", CLI_STRING_LIST, &what_if, "with --check-allocator: also replay under these settings"},
        {"--device", CLI_INT, &device, "with --check-allocator: only this device (default: every device with events)"},
        {"--json", CLI_FLAG, &json, "with --check-allocator: print the check as one JSON object"},
        {0},
    };
    int rc = remat_cli_parse(nrest, rest, USAGE, opts, &help);
    if (rc != 0 || help) return rc;
    if (!snap) return remat_cli_missing("import-torch", "SNAPSHOT.pickle", "the snapshot file to import");
    if (!out) return remat_cli_missing("import-torch", "--out", "the HDF5 file to write");
    if (!check && (what_if.n || json || device != -1)) {
        fprintf(stderr, "remat import-torch: --allocator-config/--device/--json: expected with --check-allocator\n");
        return 2;
    }
    if (device < -1) {
        fprintf(stderr, "remat import-torch: --device: expected 0 or more, got %d\n", device);
        return 2;
    }
    const cli_file ins[] = {{"SNAPSHOT.pickle", snap}};
    const cli_file outs[] = {{"--out", out}};
    if (remat_cli_refuse_overlap("import-torch", ins, 1, outs, 1)) return 2;
    remat_error err = {0};
    remat_ext_trace t;
    int64_t bytes = 0;
    double t0 = remat_now_s();
    remat_status st = remat_torch_snapshot_load(snap, &t, &bytes, &err);
    double t1 = remat_now_s();
    if (st != REMAT_OK) return remat_cli_fail("import-torch", &err);
    /* with --check-allocator the file is written once the check has run: a check refused
     * as bad input (exit 2) leaves no file; exit 0 or 1 has written it */
    writer w = {&t, snap, out, bytes, t1 - t0, quiet || json};
    rc = check ? remat_ext_report("import-torch", snap, &t, device, &what_if, json, 1, write_out, &w) : write_out(&w);
    remat_ext_trace_free(&t);
    return rc;
}
