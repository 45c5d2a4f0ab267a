/* fuzz_plan.c - libFuzzer target for the plan reader (core/model/plan_json.c).
 *
 * Each input is read as a plan for every model in $REMAT_FUZZ_MODELS (default
 * data/models, loaded once). It is either refused with one printable line
 * "<origin>: <field>: <expected>" and REMAT_ERR_INPUT, or accepted; an accepted
 * plan passes remat_plan_validate and survives remat_plan_to_json -> parse
 * unchanged. Nothing may leak. Build and run: fuzz/run.sh. */
#include <dirent.h>
#include <stdint.h>

#include "core/model/model.h"
#include "core/model/plan.h"
#include "fuzz/fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MODELS 32
static remat_model g_models[MAX_MODELS];
static int g_n_models;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("REMAT_FUZZ_MODELS");
    if (!dir) dir = "data/models";
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuzz_plan: cannot open %s (run from the repository root or set REMAT_FUZZ_MODELS)\n", dir);
        exit(2);
    }
    struct dirent *e;
    while ((e = readdir(d)) && g_n_models < MAX_MODELS) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remat_error err = {REMAT_OK, {0}};
        if (remat_model_load(path, &g_models[g_n_models], &err) != REMAT_OK) {
            fprintf(stderr, "fuzz_plan: %s\n", err.msg);
            exit(2);
        }
        g_n_models++;
    }
    closedir(d);
    if (!g_n_models) {
        fprintf(stderr, "fuzz_plan: no models in %s\n", dir);
        exit(2);
    }
    return 0;
}

static int same_plan(const remat_plan *a, const remat_plan *b) {
    if (a->n_blocks != b->n_blocks) return 0;
    for (int i = 0; i < a->n_blocks; i++) {
        const remat_block_plan *x = &a->blocks[i], *y = &b->blocks[i];
        if (x->checkpoint != y->checkpoint || x->compressor != y->compressor || x->k != y->k ||
            x->n_splits != y->n_splits)
            return 0;
        for (int s = 0; s < x->n_splits; s++)
            if (x->splits[s] != y->splits[s]) return 0;
    }
    return 1;
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
        FUZZ_CHECK(same_plan(&p, &back));
        remat_plan_free(&back);
        remat_xfree(json);
        remat_plan_free(&p);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    return 0;
}
