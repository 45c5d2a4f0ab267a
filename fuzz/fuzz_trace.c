/* fuzz_trace.c - libFuzzer target for the trace reader (core/io/trace_h5.c).
 *
 * The input bytes are read from memory as an HDF5 file image with
 * remat_trace_read_h5_image (no file system: thousands of runs per second). Every input either reads as a trace whose events replay
 * (each free matches a live alloc of the same bytes, enums in range), and which
 * writes and reads back unchanged, or is refused with REMAT_ERR_INPUT and one
 * printable line "<file>: ...". remat's own allocations must all be returned.
 *
 * Build (clang; see fuzz/run.sh for the flags the other targets use):
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -I/usr/include/hdf5/serial \
 *     fuzz/fuzz_trace.c core/io/trace.c core/io/trace_h5.c core/io/h5_util.c core/base/status.c core/base/grow.c core/base/types.c \
 *     -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5_serial -o fuzz_trace
 * Seed corpus: fuzz/seeds/trace (small valid traces).
 *
 * HDF5 1.10 leaks a few hundred bytes in some of its own error paths when an object
 * header fails its checksum; those allocations are made with LeakSanitizer paused
 * (and with HDF5's free lists off, so they are fresh), so that a leak report is
 * always remat's. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/io/trace.h"
#include "fuzz/fuzz_common.h"
#include "tests/hdf5_leaks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char in_path[128], out_path[128];

static void setup(void) {
    if (in_path[0]) return;
    const char *dir = getenv("TMPDIR");
    snprintf(in_path, sizeof in_path, "%s/remat-fuzz-trace-%d.h5", dir ? dir : "/tmp", (int)getpid());
    snprintf(out_path, sizeof out_path, "%s/remat-fuzz-trace-%d-out.h5", dir ? dir : "/tmp", (int)getpid());
    H5set_free_list_limits(0, 0, 0, 0, 0, 0);
}

static void check_trace(const remat_trace *t) {
    FUZZ_CHECK(t->schema_version >= 1 && t->schema_version <= REMAT_TRACE_SCHEMA_VERSION);
    FUZZ_CHECK(t->model_text && t->plan_text);
    FUZZ_CHECK(t->n_events >= 0 && t->n_ops >= 0 && t->n_iters >= 0);
    FUZZ_CHECK(memchr(t->backend, 0, sizeof t->backend) && memchr(t->allocator_config, 0, sizeof t->allocator_config));
    for (int64_t i = 0; i < t->n_events; i++) {
        const remat_event *e = &t->events[i];
        FUZZ_CHECK(e->kind <= REMAT_EVENT_FREE && e->phase < REMAT_PHASE_COUNT && e->role < REMAT_ROLE_COUNT);
        FUZZ_CHECK(e->enc < REMAT_ENC_COUNT && e->ndim >= 0 && e->ndim <= 4);
        FUZZ_CHECK(e->tensor >= 0 && e->tensor < t->n_events && e->bytes >= 0);
    }
    for (int64_t i = 0; i < t->n_ops; i++) FUZZ_CHECK(t->ops[i].op < REMAT_OP_COUNT);
    for (int32_t i = 0; i < t->n_iters; i++)
        FUZZ_CHECK(t->iters[i].first_event >= 0 && t->iters[i].first_event + t->iters[i].n_events <= t->n_events);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    size_t live0 = remat_xmem_live();
    remat_trace t;
    remat_error err = {REMAT_OK, {0}};
    HDF5_LEAKS_BEGIN();
    remat_status st = remat_trace_read_h5_image(data, size, in_path, &t, &err);
    HDF5_LEAKS_END();
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &err, in_path);
        FUZZ_CHECK(t.events == NULL && t.ops == NULL && t.iters == NULL && t.model_text == NULL);
    } else {
        check_trace(&t);
        /* what was read writes and reads back as the same trace */
        remat_error e2 = {REMAT_OK, {0}};
        FUZZ_CHECK(remat_trace_write_h5(&t, out_path, &e2) == REMAT_OK);
        remat_trace back;
        FUZZ_CHECK(remat_trace_read_h5(out_path, &back, &e2) == REMAT_OK);
        FUZZ_CHECK(back.n_events == t.n_events && back.n_ops == t.n_ops && back.n_iters == t.n_iters);
        FUZZ_CHECK(back.seed == t.seed && back.T == t.T && back.N == t.N);
        FUZZ_CHECK(strcmp(back.model_text, t.model_text) == 0 && strcmp(back.plan_text, t.plan_text) == 0);
        for (int64_t i = 0; i < t.n_events; i++) {
            FUZZ_CHECK(back.events[i].tensor == t.events[i].tensor && back.events[i].bytes == t.events[i].bytes);
            FUZZ_CHECK(memcmp(back.events[i].dims, t.events[i].dims, sizeof t.events[i].dims) == 0);
        }
        remat_trace_free(&back);
        remat_trace_free(&t);
        remove(out_path);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    return 0;
}
