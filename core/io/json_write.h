/* json_write.h - the one JSON writer of remat: every JSON string remat prints or
 * writes (command --json output, plan files, Pareto and scaling files, verify
 * reports) goes through these, so every string is escaped the same way.
 *
 * Escaping: '"' and '\' are backslash-escaped; \b \f \n \r \t by their short
 * forms; other bytes below 0x20 and 0x7f as \u00XX. Valid UTF-8 sequences pass
 * through unchanged; a byte that does not start or continue a valid sequence
 * (the text is not UTF-8, e.g. a Latin-1 file name) is written as \u00XX (read
 * back as that code point), so the output is always valid JSON. NULL is "".
 */
#ifndef REMAT_IO_JSON_WRITE_H
#define REMAT_IO_JSON_WRITE_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes s as a JSON string literal (with its quotes) to f. */
void remat_json_string(FILE *f, const char *s);

/* s as a JSON string literal into buf (snprintf-like: at most len-1 characters and
 * a NUL when len > 0). Returns the length of the whole literal, so a caller can
 * size buf with a first call of len 0. */
size_t remat_json_quote(char *buf, size_t len, const char *s);

/* A number: %.9g, or null for NaN and infinities (JSON has neither). */
void remat_json_number(FILE *f, double v);

/* "key": as the start of an object member (key escaped), after a comma when
 * comma is non-zero. */
void remat_json_key(FILE *f, int comma, const char *key);

#ifdef __cplusplus
}
#endif
#endif
