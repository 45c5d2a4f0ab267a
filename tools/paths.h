/* paths.h - what every `remat` subcommand checks about its file arguments before
 * doing any work: no output may be one of the command's inputs, and no two
 * outputs may be the same file (`run --model m.json --trace m.json` would turn the
 * model into HDF5; `search --out o.json --pareto o.json` would keep one of two).
 *
 * Identity is the file's, not the name's: device and inode, after following
 * symbolic links (the writer replaces a link's target, docs/outputs.md). An output
 * that does not exist yet is identified by its folder's device and inode and its
 * name, so "a/x.json" and "./a/../a/x.json" are one output. Outputs that are not
 * regular files (/dev/null, a FIFO) never collide: they are written as they are.
 *
 *   const cli_file in[] = {{"--model", model}, {"--plan", plan}};
 *   const cli_file out[] = {{"--trace", trace}, {"--dump", dump}};
 *   if (remat_cli_refuse_overlap("run", in, 2, out, 2)) return 2;
 */
#ifndef REMAT_TOOLS_PATHS_H
#define REMAT_TOOLS_PATHS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cli_file {
    const char *flag; /* "--trace" (messages) */
    const char *path; /* NULL: not given, skipped */
} cli_file;

/* 0 when every output is distinct from every input and every other output and can
 * be written (remat_afile_check: a missing folder, a directory, a read-only file, a
 * dangling link or an empty path is refused before any work); else prints one line
 * "remat <cmd>: <out path>: <out flag>: is the same file as <flag> <path> (expected
 * a different output path; nothing was written)" or "remat <cmd>: <flag>: <why>" on
 * stderr and returns 2 (bad input). */
int remat_cli_refuse_overlap(const char *cmd, const cli_file *in, int n_in, const cli_file *out, int n_out);
/* The identity part only (outputs in a folder the command creates later: demo). */
int remat_cli_refuse_same_file(const char *cmd, const cli_file *in, int n_in, const cli_file *out, int n_out);

/* 1 when a and b name the same file by the identity above (0 when either cannot
 * be resolved, or is not a regular file or a new name). */
int remat_cli_same_file(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif
