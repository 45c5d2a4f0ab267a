/* fuzz_models.h - the models the plan fuzzers parse every input against: every
 * model file in $REMAT_FUZZ_MODELS (default data/models, run from the repository
 * root), loaded once from LLVMFuzzerInitialize. */
#ifndef REMAT_FUZZ_MODELS_H
#define REMAT_FUZZ_MODELS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/model.h"

#define FUZZ_MAX_MODELS 32

/* Loads up to FUZZ_MAX_MODELS model files into models; returns how many. Exits 2
 * with a line naming `who` when the folder cannot be read, a model does not load,
 * or there is none. */
static inline int fuzz_load_models(const char *who, remat_model *models) {
    const char *dir = getenv("REMAT_FUZZ_MODELS");
    if (!dir) dir = "data/models";
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "%s: cannot open %s (run from the repository root or set REMAT_FUZZ_MODELS)\n", who, dir);
        exit(2);
    }
    int n_models = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n_models < FUZZ_MAX_MODELS) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remat_error err = {REMAT_OK, {0}};
        if (remat_model_load(path, &models[n_models], &err) != REMAT_OK) {
            fprintf(stderr, "%s: %s\n", who, err.msg);
            exit(2);
        }
        n_models++;
    }
    closedir(d);
    if (!n_models) {
        fprintf(stderr, "%s: no models in %s\n", who, dir);
        exit(2);
    }
    return n_models;
}

#endif
