/* size.h - the one size grammar of remat: every flag and config string that takes
 * a number of bytes (--budget, --device-overhead, --allocator-config
 * max_split_size=..., ...) reads it with remat_size_parse.
 *
 * Grammar (docs/model-and-plan-files.md, "Sizes"):
 *
 *   size   := "inf" | number [" "] [unit]
 *   number := digits ["." digits]
 *   unit   := "B"
 *           | "kB" | "MB" | "GB" | "TB"        SI:  10^3, 10^6, 10^9, 10^12 bytes
 *           | "KiB" | "MiB" | "GiB" | "TiB"    IEC: 2^10, 2^20, 2^30, 2^40 bytes
 *
 * Units are matched case-insensitively ("kb" = "KB" = "kB" = 1000 B; "gib" = 2^30),
 * so a unit is read as written: "8GB" is 8 * 10^9 B, "8GiB" is 8 * 2^30 B. A bare
 * "K"/"M"/"G"/"T" is refused (it would be ambiguous between the two). Plain bytes
 * are whole; a fractional number with a unit is rounded to the nearest byte. "inf"
 * (no limit) is INT64_MAX. Refused: signs, blanks before or after, hexadecimal,
 * exponents, "nan", a trailing blank, and anything above INT64_MAX.
 */
#ifndef REMAT_BASE_SIZE_H
#define REMAT_BASE_SIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The grammar in one phrase, for error messages ("expected " REMAT_SIZE_GRAMMAR). */
#define REMAT_SIZE_GRAMMAR \
    "a size: bytes, or a number with kB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024), or inf"

/* Value of "inf". */
#define REMAT_SIZE_INF INT64_MAX

/* Parses s by the grammar above into *out. Returns 0, or -1 (and leaves *out alone)
 * when s is not a size (NULL included). */
int remat_size_parse(const char *s, int64_t *out);

/* s as a size, -1 when it is not one (a convenience over remat_size_parse). */
int64_t remat_size_parse_or_neg(const char *s);

#ifdef __cplusplus
}
#endif
#endif
