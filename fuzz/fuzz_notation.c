/* fuzz_notation.c - libFuzzer target for the two short-text parsers: the plan
 * notation (core/model/plan_notation.c) and the size grammar (core/base/size.c).
 *
 * Each input, as text, is read as a size: refused (-1, *out untouched) or a value
 * >= 0, "inf" only as INT64_MAX. Then as a plan in notation for every model in
 * $REMAT_FUZZ_MODELS (default data/models): refused with one printable line
 * "fuzz: ..." and REMAT_ERR_INPUT, or accepted; an accepted plan validates, its
 * printed notation equals its path and parses back to the same plan, and its plan
 * text (JSON) parses back to the same plan. Nothing may leak. Build and run:
 * fuzz/run.sh. */
#include <dirent.h>
#include <stdint.h>

#include "core/base/size.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/model/plan_notation.h"
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
        fprintf(stderr, "fuzz_notation: cannot open %s (run from the repository root or set REMAT_FUZZ_MODELS)\n", dir);
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
            fprintf(stderr, "fuzz_notation: %s\n", err.msg);
            exit(2);
        }
        g_n_models++;
    }
    closedir(d);
    if (!g_n_models) {
        fprintf(stderr, "fuzz_notation: no models in %s\n", dir);
        exit(2);
    }
    return 0;
}

static int same_plan(const remat_plan *a, const remat_plan *b) {
    if (a->n_blocks != b->n_blocks) return 0;
    for (int i = 0; i < a->n_blocks; i++) {
        const remat_block_plan *x = &a->blocks[i], *y = &b->blocks[i];
        if (x->checkpoint != y->checkpoint || x->compressor != y->compressor || x->k != y->k ||
            (x->span > 1 ? x->span : 1) != (y->span > 1 ? y->span : 1) || x->n_splits != y->n_splits)
            return 0;
        for (int s = 0; s < x->n_splits; s++)
            if (x->splits[s] != y->splits[s]) return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    size_t live0 = remat_xmem_live();

    int64_t v = -7;
    if (remat_size_parse(text, &v) == 0) {
        FUZZ_CHECK(v >= 0);
        FUZZ_CHECK((text[0] >= '0' && text[0] <= '9') || strcmp(text, "inf") == 0);
    } else {
        FUZZ_CHECK(v == -7);
    }

    for (int i = 0; i < g_n_models; i++) {
        const remat_model *m = &g_models[i];
        remat_plan p;
        remat_error err = {REMAT_OK, {0}};
        remat_status st = remat_plan_parse_notation(text, "fuzz", m, &p, &err);
        if (st != REMAT_OK) {
            fuzz_check_refusal(st, &err, "fuzz");
            FUZZ_CHECK(p.blocks == NULL);
            continue;
        }
        FUZZ_CHECK(remat_plan_validate(&p, m, "fuzz", &err) == REMAT_OK);
        size_t n = remat_plan_notation(&p, m, NULL, 0);
        char *label = malloc(n + 1);
        FUZZ_CHECK(label != NULL);
        remat_plan_notation(&p, m, label, n + 1);
        FUZZ_CHECK(strcmp(label, p.path) == 0);
        remat_plan back;
        FUZZ_CHECK(remat_plan_parse_notation(label, "fuzz", m, &back, &err) == REMAT_OK);
        FUZZ_CHECK(same_plan(&p, &back));
        remat_plan_free(&back);
        if (p.text[0]) {
            FUZZ_CHECK(remat_plan_parse(p.text, strlen(p.text), "fuzz", m, &back, &err) == REMAT_OK);
            FUZZ_CHECK(same_plan(&p, &back));
            remat_plan_free(&back);
        } else {
            FUZZ_CHECK(remat_plan_is_empty(&p));
        }
        free(label);
        remat_plan_free(&p);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    free(text);
    return 0;
}
