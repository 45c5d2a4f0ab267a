/* fuzz_plan.c - libFuzzer target for the plan reader (core/model/plan_json.c).
 *
 * Each input is read as a plan for every model in $REMAT_FUZZ_MODELS (default
 * data/models, loaded once). It is either refused with one printable line
 * "<origin>: <field>: <expected>" and REMAT_ERR_INPUT, or accepted; an accepted
 * plan passes remat_plan_validate and survives remat_plan_to_json -> parse
 * unchanged. Nothing may leak. Build and run: fuzz/run.sh. */
#include <stdint.h>

#include "core/model/model.h"
#include "core/model/plan.h"
#include "fuzz/fuzz_common.h"
#include "fuzz/fuzz_models.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static remat_model g_models[FUZZ_MAX_MODELS];
static int g_n_models;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_n_models = fuzz_load_models("fuzz_plan", g_models);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t live0 = remat_xmem_live();
    for (int i = 0; i < g_n_models; i++) {
        const remat_model *m = &g_models[i];
        remat_plan p;
        remat_error err = {REMAT_OK, {0}};
        remat_status st = remat_plan_parse((const char *)data, size, "fuzz", m, &p, &err);
        if (st != REMAT_OK) {
            fuzz_check_refusal(st, &err, "fuzz");
            FUZZ_CHECK(p.blocks == NULL);
            continue;
        }
        FUZZ_CHECK(p.n_blocks == m->n_blocks);
        FUZZ_CHECK(remat_plan_validate(&p, m, "fuzz", &err) == REMAT_OK);
        for (int b = 0; b < p.n_blocks; b++) {
            const remat_block_plan *bp = &p.blocks[b];
            FUZZ_CHECK(bp->k >= 1 && m->T % bp->k == 0);
            FUZZ_CHECK(!(bp->k > 1 && m->blocks[b].has_batchnorm));
            for (int s = 1; s < bp->n_splits; s++) FUZZ_CHECK(bp->splits[s - 1] < bp->splits[s]);
        }
        char *json = remat_plan_to_json(&p, m, &err);
        FUZZ_CHECK(json != NULL);
        remat_plan back;
        FUZZ_CHECK(remat_plan_parse(json, strlen(json), "fuzz", m, &back, &err) == REMAT_OK);
        FUZZ_CHECK(remat_plan_equal(&p, &back));
        remat_plan_free(&back);
        remat_xfree(json);
        remat_plan_free(&p);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    return 0;
}
