/* json_strict.h - what RFC 8259 refuses and cJSON accepts, found before cJSON
 * parses: numbers with leading zeros ("T": 06), raw control characters inside
 * strings, invalid UTF-8 (bytes 0xC0, 0xC1, 0xF5..0xFF, overlong forms, encoded
 * surrogates, code points past U+10FFFF, truncated sequences), "\u0000" (a name
 * would be cut at the NUL: "fc\u00001" read as "fc"), unpaired surrogate escapes,
 * and nesting deeper than JSON_STRICT_MAX_DEPTH (said as such, not as a syntax
 * error). Private to core (json_util.c).
 */
#ifndef REMAT_CORE_JSON_STRICT_H
#define REMAT_CORE_JSON_STRICT_H

#include <stddef.h>

#define JSON_STRICT_MAX_DEPTH 512

/* 0 when text[0..len) has none of the faults above (other syntax errors are left to
 * the parser: 0 too); else 1, with *at the offset of the offending byte and why a
 * short phrase ("a number with a leading zero", ...) in why[0..why_len). */
int remat_json_strict_fault(const char *text, size_t len, size_t *at, char *why, size_t why_len);

#endif
