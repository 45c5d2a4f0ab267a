/* cli.c - flag parsing, sizes, exit codes and progress lines shared by every
 * `remat` subcommand (contract in tools/cli.h).
 *
 * Conventions:
 * - "--flag value" and "--flag=value" are both accepted; "-h"/"--help" anywhere
 *   prints the help and stops parsing.
 * - A value may not start with "--" (so "--model --plan x" reports the missing
 *   value of --model instead of loading a file called "--plan").
 * - A repeated option: STRING_LIST options collect every value (at most
 *   CLI_LIST_MAX); any other option given twice is an error (`--model A --model B`
 *   would otherwise silently drop A).
 * - INT values are decimal, may carry a sign, and must fit an int; DOUBLE values
 *   must be finite; SIZE values follow the one size grammar of core/base/size.h
 *   (SI kB/MB/GB/TB and IEC KiB/MiB/GiB/TiB as written, plain bytes, inf).
 */
#include "tools/cli.h"

#include "core/base/size.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *cmd_name(char **argv) { return (argv && argv[0]) ? argv[0] : "?"; }

static const char *kind_metavar(cli_kind k) {
    switch (k) {
    case CLI_FLAG: return "";
    case CLI_STRING: return " <text>";
    case CLI_INT: return " <int>";
    case CLI_SIZE: return " <size>";
    case CLI_DOUBLE: return " <number>";
    case CLI_STRING_LIST: return " <text>";
    }
    return "";
}

static void print_help(const char *usage, const cli_option *opts) {
    printf("%s\n\noptions:\n", usage ? usage : "");
    for (const cli_option *o = opts; o && o->name; o++) {
        char left[96];
        snprintf(left, sizeof left, "%s%s", o->name, kind_metavar(o->kind));
        const char *extra = "";
        if (o->kind == CLI_STRING_LIST) extra = " (repeatable)";
        else if (o->kind == CLI_SIZE) extra = " (size: 8GB = 8*10^9 B, 8GiB = 8*2^30 B)";
        printf("  %-24s %s%s\n", left, o->help ? o->help : "", extra);
    }
    printf("  %-24s %s\n", "-h, --help", "show this help and exit");
}

static int parse_int(const char *s, int *out) {
    if (!s || !*s) return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < INT_MIN || v > INT_MAX) return -1;
    /* strtoll skips leading blanks: refuse them too. */
    if (s[0] == ' ' || s[0] == '\t') return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    if (!s || !*s || s[0] == ' ' || s[0] == '\t') return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static const cli_option *find_opt(const cli_option *opts, const char *arg, size_t name_len) {
    for (const cli_option *o = opts; o && o->name; o++)
        if (strlen(o->name) == name_len && strncmp(o->name, arg, name_len) == 0) return o;
    return NULL;
}

static int store_value(const char *cmd, const cli_option *o, const char *val) {
    switch (o->kind) {
    case CLI_STRING:
        *(const char **)o->dest = val;
        return 0;
    case CLI_STRING_LIST: {
        cli_list *l = (cli_list *)o->dest;
        if (l->n >= CLI_LIST_MAX) {
            fprintf(stderr, "remat %s: %s: given too often (expected at most %d)\n", cmd, o->name, CLI_LIST_MAX);
            return 2;
        }
        l->items[l->n++] = val;
        return 0;
    }
    case CLI_INT:
        if (parse_int(val, (int *)o->dest) != 0) {
            fprintf(stderr, "remat %s: %s: '%s' is not an integer (expected a decimal integer)\n", cmd, o->name,
                    val);
            return 2;
        }
        return 0;
    case CLI_DOUBLE:
        if (parse_double(val, (double *)o->dest) != 0) {
            fprintf(stderr, "remat %s: %s: '%s' is not a number (expected a finite decimal number)\n", cmd,
                    o->name, val);
            return 2;
        }
        return 0;
    case CLI_SIZE: {
        int64_t v;
        if (remat_size_parse(val, &v) != 0) {
            fprintf(stderr, "remat %s: %s: '%s' is not a size (expected %s)\n", cmd, o->name, val, REMAT_SIZE_GRAMMAR);
            return 2;
        }
        *(int64_t *)o->dest = v;
        return 0;
    }
    case CLI_FLAG:
        break;
    }
    return 2;
}

int remat_cli_parse(int argc, char **argv, const char *usage, const cli_option *opts, int *help_shown) {
    const char *cmd = cmd_name(argv);
    if (help_shown) *help_shown = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            print_help(usage, opts);
            if (help_shown) *help_shown = 1;
            return 0;
        }
    unsigned char seen[CLI_MAX_OPTIONS] = {0};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0') {
            fprintf(stderr, "remat %s: '%s': unexpected argument (expected an option; see --help)\n", cmd, arg);
            return 2;
        }
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const cli_option *o = find_opt(opts, arg, name_len);
        if (!o) {
            fprintf(stderr, "remat %s: %.*s: unknown option (see --help)\n", cmd, (int)name_len, arg);
            return 2;
        }
        size_t idx = (size_t)(o - opts);
        if (o->kind != CLI_STRING_LIST && idx < CLI_MAX_OPTIONS) {
            if (seen[idx]) {
                fprintf(stderr, "remat %s: %s: given more than once (expected it at most once)\n", cmd, o->name);
                return 2;
            }
            seen[idx] = 1;
        }
        if (o->kind == CLI_FLAG) {
            if (eq) {
                fprintf(stderr, "remat %s: %s: takes no value (expected '%s' alone)\n", cmd, o->name, o->name);
                return 2;
            }
            *(int *)o->dest = 1;
            continue;
        }
        const char *val;
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0) {
                fprintf(stderr, "remat %s: %s: missing value (expected%s)\n", cmd, o->name, kind_metavar(o->kind));
                return 2;
            }
            val = argv[++i];
        }
        int rc = store_value(cmd, o, val);
        if (rc) return rc;
    }
    return 0;
}

int remat_cli_fail(const char *cmd, const remat_error *err) {
    if (!err || err->status == REMAT_OK) {
        fprintf(stderr, "remat %s: internal error: failure without a message\n", cmd ? cmd : "?");
        return 1;
    }
    fprintf(stderr, "remat %s: %s\n", cmd ? cmd : "?", err->msg[0] ? err->msg : "(no message)");
    return remat_status_exit_code(err->status);
}

int remat_cli_missing(const char *cmd, const char *flag, const char *expected) {
    fprintf(stderr, "remat %s: %s: missing (expected %s)\n", cmd ? cmd : "?", flag ? flag : "?",
            expected ? expected : "a value");
    return 2;
}

const char *remat_cli_fmt_bytes(int64_t bytes, char *buf, size_t len) {
    if (!buf || len == 0) return buf;
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double mag = bytes < 0 ? -(double)bytes : (double)bytes;
    if (mag < 1024.0) {
        snprintf(buf, len, "%lld B", (long long)bytes);
        return buf;
    }
    int u = -1;
    while (mag >= 1024.0 && u < 5) {
        mag /= 1024.0;
        u++;
    }
    /* one decimal when it is exact; else four significant digits, so that a size just
     * over a budget does not print as the budget (8583643136 B is 7.994 GiB, not 8.0) */
    uint64_t half = (uint64_t)1 << (10 * (u + 1) - 1), ab = bytes < 0 ? 0 - (uint64_t)bytes : (uint64_t)bytes;
    int exact = ab % half == 0; /* x.0 or x.5 of the unit: the only sizes one decimal shows exactly */
    int dec = exact ? 1 : mag < 10.0 ? 3 : mag < 100.0 ? 2 : 1;
    snprintf(buf, len, "%s%.*f %s (%lld B)", bytes < 0 ? "-" : "", dec, mag, units[u], (long long)bytes);
    return buf;
}

/* ---- progress lines ---------------------------------------------------- */
static int g_progress_len; /* length of the line currently shown, 0 = none */

static int progress_enabled(void) {
    const char *e = getenv("REMAT_PROGRESS");
    if (e && !strcmp(e, "1")) return 1;
    if (e && !strcmp(e, "0")) return 0;
    return isatty(2);
}

void remat_cli_progress(const char *fmt, ...) {
    if (!progress_enabled()) return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (n >= (int)sizeof line) n = (int)sizeof line - 1;
    /* Overwrite the previous line and blank whatever it had beyond this one. */
    int pad = g_progress_len > n ? g_progress_len - n : 0;
    fprintf(stderr, "\r%s%*s", line, pad, "");
    if (pad) fprintf(stderr, "\r%s", line);
    fflush(stderr);
    g_progress_len = n > 0 ? n : 1;
}

void remat_cli_progress_done(void) {
    if (g_progress_len > 0) {
        fputc('\n', stderr);
        fflush(stderr);
    }
    g_progress_len = 0;
}

int remat_cli_check_sim_size(const char *cmd, int64_t N, int64_t T, int64_t max_N, int64_t max_T) {
    const char *flag = N > max_N ? "--N" : T > max_T ? "--T" : NULL;
    if (!flag) return 0;
    fprintf(stderr,
            "remat %s: %s: %lld is above %lld, the largest the simulator takes (the work and memory of a search grow "
            "with it; larger ones would not finish)\n",
            cmd, flag, (long long)(N > max_N ? N : T), (long long)(N > max_N ? max_N : max_T));
    return 2;
}

int remat_cli_parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s) return 0;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return 0;
    *out = (uint64_t)v;
    return 1;
}
