/* fuzz_pickle.c - libFuzzer target for the plain-data pickle reader (core/io/pickle.c)
 * and the PyTorch snapshot importer on top of it (core/io/torch_snapshot.c).
 *
 * Every input either parses into a document whose every reference is in range (walked
 * to a bounded depth, since memo references may form cycles), or is refused with
 * REMAT_ERR_INPUT and one printable line "fuzz: pickle: ...". The memory the reader
 * holds never exceeds REMAT_PK_BYTES_PER_INPUT_BYTE per input byte (plus its initial
 * tables), and nothing leaks. The importer either refuses the same way ("fuzz: ...")
 * or yields an external allocation stream whose blocks lie inside their segments in
 * address order and whose labels are in range. Build and run: fuzz/run.sh. */
#include <stdint.h>

#include "core/io/pickle.h"
#include "core/io/torch_snapshot.h"
#include "fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Visits v and what it holds, at most `budget` values and `depth` levels. */
static void walk(const remat_pk_doc *d, remat_pk_ref v, int depth, long *budget) {
    if (--*budget < 0 || depth > 32) return;
    FUZZ_CHECK(v < d->n_nodes);
    remat_pk_type t = remat_pk_type_of(d, v);
    FUZZ_CHECK(t <= REMAT_PK_DICT);
    size_t len = 0;
    const char *s = remat_pk_str(d, v, &len);
    if (t == REMAT_PK_STR || t == REMAT_PK_BYTES) {
        FUZZ_CHECK(s && s >= (const char *)d->data && len <= d->size && s + len <= (const char *)d->data + d->size);
    } else {
        FUZZ_CHECK(s == NULL);
    }
    uint32_t n = 0;
    for (remat_pk_iter it = remat_pk_iter_begin(d, v); remat_pk_iter_next(d, &it); n++) {
        FUZZ_CHECK(t == REMAT_PK_DICT ? it.key < d->n_nodes : it.key == REMAT_PK_NIL);
        if (t == REMAT_PK_DICT) walk(d, it.key, depth + 1, budget);
        walk(d, it.value, depth + 1, budget);
    }
    FUZZ_CHECK(n == remat_pk_len(d, v));
    (void)remat_pk_dict_get(d, v, "segments");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t live0 = remat_xmem_live();
    remat_pk_doc doc;
    remat_error err = {REMAT_OK, {0}};
    remat_status st = remat_pk_parse(data, size, "fuzz", &doc, &err);
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &err, "fuzz");
        FUZZ_CHECK(strncmp(err.msg, "fuzz: pickle: ", 14) == 0);
        FUZZ_CHECK(doc.nodes == NULL && doc.entries == NULL && doc.root == REMAT_PK_NIL);
    } else {
        FUZZ_CHECK(doc.root < doc.n_nodes);
        FUZZ_CHECK(remat_xmem_live() - live0 <= (size_t)REMAT_PK_BYTES_PER_INPUT_BYTE * size + 16384);
        long budget = 100000;
        walk(&doc, doc.root, 0, &budget);
        remat_pk_free(&doc);
    }
    remat_ext_trace t;
    remat_error e2 = {REMAT_OK, {0}};
    st = remat_torch_snapshot_import(data, size, "fuzz", &t, &e2);
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &e2, "fuzz");
        FUZZ_CHECK(t.devices == NULL && t.n_labels == 0);
    } else {
        FUZZ_CHECK(t.n_devices >= 1);
        for (int32_t di = 0; di < t.n_devices; di++) {
            const remat_ext_device *d = &t.devices[di];
            int64_t next = 0;
            for (int64_t s = 0; s < d->n_segments; s++) {
                const remat_ext_segment *g = &d->segments[s];
                FUZZ_CHECK(g->first_block == next && g->n_blocks >= 0 && g->first_block + g->n_blocks <= d->n_blocks);
                FUZZ_CHECK(s == 0 || d->segments[s - 1].address <= g->address);
                int64_t at = g->address;
                for (int64_t b = g->first_block; b < g->first_block + g->n_blocks; b++) {
                    FUZZ_CHECK(d->blocks[b].address >= at && d->blocks[b].size >= 0);
                    FUZZ_CHECK(d->blocks[b].address + d->blocks[b].size <= g->address + g->total_size);
                    FUZZ_CHECK(d->blocks[b].label >= -1 && d->blocks[b].label < t.n_labels);
                    at = d->blocks[b].address + d->blocks[b].size;
                }
                next += g->n_blocks;
            }
            FUZZ_CHECK(next == d->n_blocks);
            for (int64_t i = 0; i < d->n_events; i++) {
                FUZZ_CHECK(d->events[i].action < REMAT_EXT_ACTION_COUNT && d->events[i].size >= 0);
                FUZZ_CHECK(d->events[i].label >= -1 && d->events[i].label < t.n_labels);
            }
        }
        for (int32_t l = 0; l < t.n_labels; l++)
            for (const char *p = remat_ext_label(&t, l); *p; p++) FUZZ_CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
        remat_ext_trace_free(&t);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    return 0;
}
