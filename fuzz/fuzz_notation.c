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
#include <stdint.h>

#include "core/base/size.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/model/plan_notation.h"
#include "fuzz/fuzz_common.h"
#include "fuzz/fuzz_models.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static remat_model g_models[FUZZ_MAX_MODELS];
static int g_n_models;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_n_models = fuzz_load_models("fuzz_notation", g_models);
    return 0;
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
        FUZZ_CHECK(remat_plan_equal(&p, &back));
        remat_plan_free(&back);
        if (p.text[0]) {
            FUZZ_CHECK(remat_plan_parse(p.text, strlen(p.text), "fuzz", m, &back, &err) == REMAT_OK);
            FUZZ_CHECK(remat_plan_equal(&p, &back));
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
