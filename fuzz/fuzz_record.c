/* fuzz_record.c - libFuzzer target for a recorded PyTorch step: the /record group of an
 * external allocation stream (core/io/ext_record.c) and what reads it, the simulator of
 * plans on it (sim/torch_sim.c) and the check of two recordings for --N
 * (sim/torch_rescale.c).
 *
 * The input bytes are an HDF5 file image (remat_ext_trace_read_h5_image). Seeds
 * (fuzz/seeds/record) are a small recording as remat_torch.record writes it (chunk
 * and compressor probes included), once
 * as written and once without its optional content_crc32 attribute, so that mutated
 * datasets reach the record's checks and, when those pass, the simulator. Every input
 * is either refused with REMAT_ERR_INPUT and one printable line "<origin>: ...", or
 * read as a record whose annotations pair with its stream; then:
 *  - with a model file: the plain step and each plan below (every block checkpointed;
 *    with the bit compressor; the first block with sparse; every block as a span of
 *    two; every block in two time chunks) under both executors are predicted or refused the same way, a prediction
 *    holding peak >= live at the step's start >= 0;
 *  - the record against itself is refused for --N (the same N twice); against a copy
 *    with N and every size doubled it is linear, and rescaled to 3 N its plain peak is
 *    3 times the plain peak read (when the check and the prediction accept it).
 * remat's own allocations must all be returned; HDF5's leaks in its own error paths
 * are made with LeakSanitizer paused (tests/hdf5_leaks.h).
 *
 * Built and run by fuzz/run.sh. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/io/ext_record.h"
#include "core/io/ext_trace.h"
#include "fuzz/fuzz_common.h"
#include "sim/torch_rescale.h"
#include "sim/torch_sim.h"
#include "tests/hdf5_leaks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *ORIGIN = "fuzz.h5";

static remat_status read_image(const uint8_t *data, size_t size, remat_ext_trace *t, remat_error *err) {
    HDF5_LEAKS_BEGIN();
    remat_status st = remat_ext_trace_read_h5_image(data, size, ORIGIN, t, err);
    HDF5_LEAKS_END();
    return st;
}

/* A prediction, or a refusal naming the trace (NOMEM aside: the caps keep it away). */
static int predict(const remat_ext_trace *t, const remat_model *m, const remat_plan *p, remat_torch_exec how,
                   remat_torch_pred *r) {
    remat_error err = {REMAT_OK, {0}};
    remat_status st = remat_torch_sim_run(t, m, p, how, ORIGIN, r, &err);
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &err, ORIGIN);
        return 0;
    }
    FUZZ_CHECK(r->live_at_start >= 0 && r->peak_live_bytes >= r->live_at_start);
    FUZZ_CHECK(r->replayed_allocations >= 0 && r->compressed_bytes >= 0);
    return 1;
}

/* Plan kind k of model m into p (0 when it is not a valid plan). */
static int make_plan(const remat_model *m, int k, remat_plan *p) {
    remat_error err = {REMAT_OK, {0}};
    if (remat_plan_init_empty(m, p, &err) != REMAT_OK) return 0;
    for (int b = 0; b < m->n_blocks; b++) {
        remat_block_plan *bp = &p->blocks[b];
        if (k == 2 && b > 0) break;
        bp->checkpoint = 1;
        bp->compressor = k == 1 ? REMAT_COMP_BIT : k == 2 ? REMAT_COMP_SPARSE : REMAT_COMP_NONE;
        if (k == 3 && b + 1 < m->n_blocks) bp->span = 2, b++;
        if (k == 4) bp->k = 2; /* time chunks: from the recording's chunk probe for k = 2 */
    }
    if (remat_plan_validate(p, m, ORIGIN, &err) != REMAT_OK) {
        remat_plan_free(p);
        return 0;
    }
    return 1;
}

static void check_plans(const remat_ext_trace *t) {
    remat_model m;
    remat_error err = {REMAT_OK, {0}};
    remat_status st = remat_torch_sim_model(t, ORIGIN, &m, &err);
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &err, ORIGIN);
        return;
    }
    for (int how = 0; how < REMAT_TORCH_EXEC_COUNT; how++) {
        remat_torch_pred r;
        predict(t, &m, NULL, (remat_torch_exec)how, &r);
        for (int k = 0; k < 5; k++) {
            remat_plan p;
            if (!make_plan(&m, k, &p)) continue;
            predict(t, &m, &p, (remat_torch_exec)how, &r);
            remat_plan_free(&p);
        }
    }
    remat_model_free(&m);
}

/* b: a second read of the same image, turned into the step at 2 N with every size doubled. */
static int doubled(remat_ext_trace *b) {
    remat_ext_record *r = b->record;
    if (r->N > INT32_MAX || r->live_before_bytes > INT64_MAX / 4) return 0;
    r->N *= 2;
    r->live_before_bytes *= 2;
    remat_ext_device *d = &b->devices[0];
    for (int64_t i = 0; i < d->n_events; i++) {
        if (d->events[i].size > INT64_MAX / 4) return 0;
        d->events[i].size *= 2;
    }
    for (int64_t m = 0; m < r->n_marks; m++) {
        if (r->marks[m].numel > INT64_MAX / 4 || r->marks[m].nnz > INT64_MAX / 4) return 0;
        if (r->marks[m].numel > 0) r->marks[m].numel *= 2;
        if (r->marks[m].nnz > 0) r->marks[m].nnz *= 2;
    }
    return 1;
}

static void check_rescale(const uint8_t *data, size_t size, remat_ext_trace *t) {
    remat_torch_linear L;
    remat_error err = {REMAT_OK, {0}};
    remat_status st = remat_torch_linear_check(t, ORIGIN, t, ORIGIN, &L, &err);
    FUZZ_CHECK(st == REMAT_ERR_INPUT); /* the same N twice (or no device) */
    fuzz_check_refusal(st, &err, ORIGIN);
    remat_ext_trace b;
    FUZZ_CHECK(read_image(data, size, &b, &err) == REMAT_OK);
    if (doubled(&b)) {
        st = remat_torch_linear_check(t, ORIGIN, &b, ORIGIN, &L, &err);
        if (st != REMAT_OK) {
            fuzz_check_refusal(st, &err, ORIGIN);
        } else {
            remat_model m0, m3;
            remat_torch_pred r0, r3;
            int64_t N = t->record->N;
            int ok0 = remat_torch_sim_model(t, ORIGIN, &m0, &err) == REMAT_OK;
            int have0 = ok0 && predict(t, &m0, NULL, REMAT_TORCH_APPLY_PLAN, &r0);
            st = remat_torch_linear_apply(&L, 3 * N, t, &err);
            if (st != REMAT_OK) {
                FUZZ_CHECK(st == REMAT_ERR_INPUT && !strchr(err.msg, '\n'));
            } else if (have0 && remat_torch_sim_model(t, ORIGIN, &m3, &err) == REMAT_OK) {
                if (predict(t, &m3, NULL, REMAT_TORCH_APPLY_PLAN, &r3)) {
                    FUZZ_CHECK(r3.peak_live_bytes == 3 * r0.peak_live_bytes);
                    FUZZ_CHECK(r3.events == r0.events);
                }
                remat_model_free(&m3);
            }
            if (ok0) remat_model_free(&m0);
            remat_torch_linear_free(&L);
        }
    }
    remat_ext_trace_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int once;
    if (!once) {
        H5set_free_list_limits(0, 0, 0, 0, 0, 0);
        once = 1;
    }
    size_t live0 = remat_xmem_live();
    remat_ext_trace t;
    remat_error err = {REMAT_OK, {0}};
    remat_status st = read_image(data, size, &t, &err);
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &err, ORIGIN);
        FUZZ_CHECK(t.record == NULL && t.devices == NULL && t.label_text == NULL);
    } else {
        if (t.record) {
            const remat_ext_record *r = t.record;
            FUZZ_CHECK(t.n_devices >= 1 && r->n_events == t.devices[0].n_events);
            FUZZ_CHECK(memchr(r->execution, 0, sizeof r->execution) && r->model);
            for (int64_t i = 0; i < r->n_events; i++)
                FUZZ_CHECK(r->events[i].storage >= -1 && r->events[i].storage < r->n_storages &&
                           r->events[i].module < r->n_modules);
            check_plans(&t);
            check_rescale(data, size, &t);
        }
        remat_ext_trace_free(&t);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    return 0;
}
