/* fuzz_common.h - invariants the model and plan fuzzers check on every input.
 * A violated invariant aborts (libFuzzer then saves the input as a crash). */
#ifndef REMAT_FUZZ_COMMON_H
#define REMAT_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/status.h"

#define FUZZ_CHECK(cond)                                                            \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "fuzz invariant failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* A refusal: REMAT_ERR_INPUT, one printable line starting with "<origin>: ". */
static inline void fuzz_check_refusal(remat_status st, const remat_error *err, const char *origin) {
    FUZZ_CHECK(st == REMAT_ERR_INPUT);
    FUZZ_CHECK(err->status == REMAT_ERR_INPUT);
    size_t n = strlen(origin);
    FUZZ_CHECK(strncmp(err->msg, origin, n) == 0 && err->msg[n] == ':' && err->msg[n + 1] == ' ');
    for (const char *p = err->msg; *p; p++) FUZZ_CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
}

#endif
