/* cli.h - what every `remat` subcommand shares: flag parsing, sizes, exit codes.
 *
 * A subcommand is `int remat_cmd_<name>(int argc, char **argv)` (argv[0] is the
 * subcommand name) returning the process exit code of docs/interfaces.md: 0 success,
 * 1 a requested check failed, 2 bad input (one line on stderr naming file, field,
 * expected).
 */
#ifndef REMAT_TOOLS_CLI_H
#define REMAT_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CLI_FLAG, CLI_STRING, CLI_INT, CLI_SIZE, CLI_DOUBLE, CLI_STRING_LIST } cli_kind;

typedef struct cli_option {
    const char *name;   /* "--model" */
    cli_kind kind;
    void *dest;         /* int* for FLAG/INT, const char** STRING, int64_t* SIZE (core/base/size.h), double* DOUBLE,
                           cli_list* STRING_LIST */
    const char *help;
} cli_option;

#define CLI_LIST_MAX 32
#define CLI_MAX_OPTIONS 128 /* options of one command (repeats are detected among these) */
typedef struct cli_list { int n; const char *items[CLI_LIST_MAX]; } cli_list;

/* Parses argv[1..] against opts (terminated by {0}). "--help"/"-h" prints usage
 * (the usage line, then one line per option) to stdout and returns 0 with *help_shown = 1.
 * Unknown flag, missing value, bad number, an option other than a STRING_LIST given
 * twice: one line on stderr, returns 2. */
int remat_cli_parse(int argc, char **argv, const char *usage, const cli_option *opts, int *help_shown);
/* A decimal 0..2^64-1 (digits only: no sign, blanks or hexadecimal): 1 and *out,
 * else 0. Every command's --seed is one of these (the trace schema's range). */
int remat_cli_parse_u64(const char *s, uint64_t *out);
/* Prints "remat <cmd>: <msg>" on stderr and returns the exit code for err->status. */
int remat_cli_fail(const char *cmd, const remat_error *err);
/* 0 when --N and --T (0: as recorded) are within the simulator's limits
 * (REMAT_SIM_MAX_N, REMAT_SIM_MAX_T of sim/search.h, passed in); else prints
 * "remat <cmd>: --T: <v> is above <limit> (...)" and returns 2. */
int remat_cli_check_sim_size(const char *cmd, int64_t N, int64_t T, int64_t max_N, int64_t max_T);
/* Prints "remat <cmd>: <field>: missing (expected ...)" and returns 2. */
int remat_cli_missing(const char *cmd, const char *flag, const char *expected);
/* Human size: "123.4 MiB (129394688 B)" into buf. */
const char *remat_cli_fmt_bytes(int64_t bytes, char *buf, size_t len);
/* Progress line on stderr, only when stderr is a terminal (or REMAT_PROGRESS=1):
 * rewrites the current line; remat_cli_progress_done ends it. */
void remat_cli_progress(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void remat_cli_progress_done(void);

#ifdef __cplusplus
}
#endif
#endif
