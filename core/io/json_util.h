/* json_util.h - private helpers of the model and plan readers (core/model/model_json.c,
 * core/model/plan_json.c): strict field access on cJSON trees with one-line errors.
 *
 * Every getter takes the JSON path of the object it reads from ("" for the root,
 * "layers[3]", "blocks[0]") and the key, and on failure fills err with
 *   "<origin>: <path>.<key>: expected <what>, got <what was there>"
 * and returns REMAT_ERR_INPUT. Values echoed into messages are sanitised (printable
 * ASCII, truncated) so that a message stays one line whatever the file holds.
 *
 * cJSON's own allocations are routed through remat_xmalloc/remat_xfree: the hooks
 * are installed once, by a constructor when this file is linked (so every cJSON
 * tree in the process, whoever builds it, uses the same allocator), or at the
 * first parse on compilers without constructors.
 */
#ifndef REMAT_CORE_JSON_UTIL_H
#define REMAT_CORE_JSON_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/base/status.h"

/* Where the reader is: names the file in messages, collects the first error. */
typedef struct json_ctx {
    const char *origin; /* path or "<trace>" */
    remat_error *err;
} json_ctx;

/* Installs the remat_xmalloc hooks into cJSON (once; later calls do nothing). */
void remat_json_install_hooks(void);

/* Parses text[0..len) (need not be NUL-terminated). On success *root owns the tree
 * (free with cJSON_Delete) and, if copy is not NULL, *copy owns a NUL-terminated
 * copy of the text (free with remat_xfree). Refuses NUL bytes inside the text,
 * what strict JSON refuses and cJSON accepts (core/io/json_strict.h: leading
 * zeros, raw control characters, invalid UTF-8, \u0000, deep nesting), trailing
 * garbage and a root that is not an object; errors name the line and column. */
remat_status remat_json_parse_root(const char *text, size_t len, const char *origin, cJSON **root, char **copy,
                                   remat_error *err);

/* After parsing what remat_json_parse_root gave (root freed here): on st == REMAT_OK the
 * parsed object keeps the text (*text = copy) and its origin (*path, a copy); else copy is
 * freed. Returns st, or REMAT_ERR_NOMEM when the origin could not be copied. */
remat_status remat_json_keep_source(remat_status st, cJSON *root, char *copy, const char *origin, char **text,
                                    char **path, remat_error *err);

/* Reads a whole file; *text owns a NUL-terminated buffer (remat_xfree). Files over
 * 64 MiB are refused. REMAT_ERR_IO when the file cannot be read. */
remat_status remat_json_read_file(const char *path, char **text, size_t *len, remat_error *err);

/* "<prefix>.<key>" or "<key>" when prefix is empty, into buf. */
const char *remat_json_path(char *buf, size_t len, const char *prefix, const char *key);
/* "<prefix>[<i>]" into buf. */
const char *remat_json_index_path(char *buf, size_t len, const char *prefix, int i);

/* Printable, single-line, at most 40 characters of s into buf. */
const char *remat_json_sanitize(const char *s, char *buf, size_t len);
/* Short description of a value for "got ...": "a string \"x\"", "the number 3", "null". */
const char *remat_json_describe(const cJSON *v, char *buf, size_t len);

/* Fails with "<origin>: <field>: expected <expected>, got <description of v>". */
remat_status remat_json_fail_value(const json_ctx *c, const char *field, const cJSON *v, const char *expected);
/* Fails with "<origin>: <field>: <fmt...>". */
remat_status remat_json_fail(const json_ctx *c, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Requires obj to be an object whose keys are all in `allowed` (NULL-terminated)
 * and appear once. `what` names obj in messages (its path, or "" for the root). */
remat_status remat_json_check_object(const json_ctx *c, const cJSON *obj, const char *what, const char *const *allowed);

/* The member `key` of obj, or NULL when absent. */
const cJSON *remat_json_member(const cJSON *obj, const char *key);

/* Integer field in [min, max]. Absent: *out = def when !required, else an error. */
remat_status remat_json_get_int(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, int required,
                                int64_t def, int64_t min, int64_t max, int64_t *out);
/* Finite number field. Absent: *out = def when !required, else an error. Range checks
 * are the caller's (they differ: > 1, >= 0, < 1 ...). */
remat_status remat_json_get_number(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key,
                                   int required, double def, double *out);
/* A number that must also be a finite float (remat_json_get_number, then the range). */
remat_status remat_json_get_float(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, double def,
                                  float *out);
/* "<origin>: <prefix>.<key>: expected <expected>, got <the value>" (REMAT_ERR_INPUT). */
remat_status remat_json_fail_range(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key,
                                   const char *expected);
/* Boolean field. */
remat_status remat_json_get_bool(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, int required,
                                 int def, int *out);
/* One of names[0..n) as a string; *out is its index. */
remat_status remat_json_get_enum(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, int required,
                                 const char *const *names, int n, int def, int *out);
/* A name: 1..63 characters of [A-Za-z0-9_.-] (they become HDF5 path components). */
remat_status remat_json_get_name(const json_ctx *c, const cJSON *obj, const char *prefix, const char *key, char *out,
                                 size_t out_len);
/* The same check on an array element / any value (field is its full path). */
remat_status remat_json_check_name(const json_ctx *c, const cJSON *v, const char *field, char *out, size_t out_len);

/* Copy of s through remat_xmalloc (NULL on failure with err set). */
char *remat_json_strdup(const char *s, remat_error *err);

#endif
