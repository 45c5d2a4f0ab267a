/* status.h - error reporting shared by every remat module.
 *
 * Every fallible function returns a remat_status. On failure it also fills a
 * remat_error with one human line that names the file, the field and what was
 * expected (docs/interfaces.md: "one line on stderr"). Callers print err.msg as is.
 *
 *   remat_error err = {0};
 *   if (remat_model_load("m.json", &model, &err) != REMAT_OK) {
 *       fprintf(stderr, "remat: %s\n", err.msg);
 *       return remat_status_exit_code(err.status);
 *   }
 */
#ifndef REMAT_STATUS_H
#define REMAT_STATUS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum remat_status {
    REMAT_OK = 0,
    REMAT_ERR_INPUT = 2,     /* bad input: file, field, value (exit code 2) */
    REMAT_ERR_IO = 3,        /* cannot read or write a file (exit code 2) */
    REMAT_ERR_NOMEM = 4,     /* allocation failed (exit code 1) */
    REMAT_ERR_CHECK = 5,     /* a requested check failed (exit code 1) */
    REMAT_ERR_DEVICE = 6,    /* backend/device failure (exit code 1) */
    REMAT_ERR_INTERNAL = 7,  /* a bug: an invariant did not hold (exit code 1) */
} remat_status;

#define REMAT_ERROR_MSG_LEN 512

typedef struct remat_error {
    remat_status status;
    char msg[REMAT_ERROR_MSG_LEN];
} remat_error;

/* Fills err (if not NULL) with printf-style text and returns status.
 * The first error wins: a later call does not overwrite an earlier message. */
remat_status remat_error_set(remat_error *err, remat_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The process exit code for a status, as docs/interfaces.md fixes it:
 * 0 for REMAT_OK, 2 for REMAT_ERR_INPUT and REMAT_ERR_IO, 1 otherwise. */
int remat_status_exit_code(remat_status status);

/* ---- the one host allocation wrapper --------------------------------------
 * Every host byte remat allocates passes through these, so the toolkit can
 * account for its own memory (lz4/redis style). They never return NULL for a
 * non-zero size without setting err. remat_xfree(NULL) is a no-op. */
void *remat_xmalloc(size_t bytes, remat_error *err);
void *remat_xcalloc(size_t count, size_t size, remat_error *err);
void *remat_xrealloc(void *p, size_t bytes, remat_error *err);
void remat_xfree(void *p);
/* Bytes currently held through the wrapper (all threads), and the peak. */
size_t remat_xmem_live(void);
size_t remat_xmem_peak(void);

#ifdef __cplusplus
}
#endif
#endif
