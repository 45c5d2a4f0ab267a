/* figure.h - what every remat figure shares: the output files, writing them
 * safely, units, gnuplot strings, and running gnuplot.
 *
 * A figure "dir/FIG.png" (or ".svg") is made of three files side by side:
 *   dir/FIG.dat  the numbers (bytes and seconds, unscaled), in gnuplot data blocks
 *   dir/FIG.gp   the gnuplot script that draws them; kept so the user can restyle
 *                it and run `gnuplot FIG.gp` in dir (it refers to FIG.dat by name)
 *   dir/FIG.png  the image (not written with data_only)
 * Every file is written through the atomic writer (core/io/atomic_file.h: a unique
 * temporary, fsynced and renamed), so a failed run leaves no half-written file
 * behind; gnuplot draws into such a temporary too (the script takes the output name
 * from the variable `outfile` when it is set, e.g. gnuplot -e "outfile='x.png'"),
 * which is checked (exit status, a complete PNG or SVG) before it is renamed.
 * gnuplot gets REMAT_GNUPLOT_TIMEOUT_S seconds (environment variable of that name,
 * default 60; the command line refuses a value that is not a number of seconds in
 * 0..86400, above 0), then it is killed with everything it started.
 *
 * Exit status of a missing gnuplot: the data and script are written first, then
 * remat_figure_render returns REMAT_ERR_CHECK (exit code 1: the input was fine, the
 * drawing that was asked for could not be made) with files->gnuplot_missing = 1 and
 * a one-line message that says how to get the image.
 */
#ifndef REMAT_PLOTS_FIGURE_H
#define REMAT_PLOTS_FIGURE_H

#include <stdint.h>
#include <stdio.h>

#include "core/base/status.h"
#include "core/io/atomic_file.h" /* remat_afile: how every figure file is written */

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_FIG_PATH_LEN 4096

typedef enum remat_fig_format { REMAT_FIG_PNG = 0, REMAT_FIG_SVG = 1 } remat_fig_format;

typedef struct remat_figure_opts {
    const char *out;      /* "dir/FIG.png" or "dir/FIG.svg" (case-insensitive extension) */
    const char *title;    /* NULL or "": a default title made from the inputs */
    int data_only;        /* 1: write FIG.dat and FIG.gp, do not run gnuplot */
    int width, height;    /* pixels; 0: 1280 x 720 */
    const char *gnuplot;  /* NULL: $REMAT_GNUPLOT if set, else "gnuplot" searched on $PATH */
} remat_figure_opts;

remat_figure_opts remat_figure_opts_default(void);

typedef struct remat_figure_files {
    remat_fig_format format;
    char image[REMAT_FIG_PATH_LEN];   /* the figure path as given */
    char data[REMAT_FIG_PATH_LEN];    /* FIG.dat */
    char script[REMAT_FIG_PATH_LEN];  /* FIG.gp */
    char data_name[512];              /* basenames, as the script refers to them */
    char image_name[512];
    int image_written;                /* 1 once the image is in place */
    int gnuplot_missing;              /* 1: gnuplot was not found (REMAT_ERR_CHECK) */
    char gnuplot_stderr[512];         /* first line gnuplot printed on stderr ("" when silent) */
} remat_figure_files;

/* Derives the three paths from opts->out. REMAT_ERR_INPUT "<out>: --out: expected a
 * file name ending in .png or .svg" for any other extension. */
remat_status remat_figure_files_init(const remat_figure_opts *o, remat_figure_files *f, remat_error *err);

/* The opening of every figure (memory curves, breakdown, imported streams, Pareto front,
 * scaling): a NULL *o becomes def, filled with remat_figure_opts_default(); then the
 * files as remat_figure_files_init names them.
 *   remat_figure_opts def;
 *   if ((st = remat_figure_begin(&fo, &def, files, err)) != REMAT_OK) return st; */
remat_status remat_figure_begin(const remat_figure_opts **o, remat_figure_opts *def, remat_figure_files *f,
                                remat_error *err);

#define REMAT_GNUPLOT_TIMEOUT_S 60

/* ---- units ---------------------------------------------------------------- */
typedef struct remat_unit { double scale; const char *name; } remat_unit;
/* Binary byte unit that suits a maximum: B, KiB, MiB or GiB (GiB from 2 GiB up,
 * MiB from 2 MiB, KiB from 2 KiB). */
remat_unit remat_unit_bytes(double max_bytes);
/* Time unit for a span in seconds: s, ms or us. */
remat_unit remat_unit_seconds(double span_s);
/* "812.3 MiB" (4 significant digits at most) into buf. */
const char *remat_fmt_bytes_short(int64_t bytes, char *buf, size_t len);

/* ---- gnuplot text --------------------------------------------------------- */
/* v as a gnuplot real literal ("1073741824.0", "0.5", "1e+30"): gnuplot divides two
 * integer literals as integers (8357202264/1073741824 is 7), so every scale and
 * every coordinate a script divides is written through this. */
const char *remat_gp_real(double v, char *buf, size_t len);
/* Every string that reaches a script (titles, labels, key entries, names read from
 * traces, snapshots, JSON files or the command line, file names) is written by one
 * of these, so none of it is ever interpreted: gnuplot substitutes backquotes
 * (`cmd` runs cmd) and escapes inside double quotes, and macros (@var) outside
 * quotes, but nothing inside single quotes.
 *
 * remat_gp_put_string writes s as a single-quoted literal, ' doubled ('it''s'); a
 * line break in s becomes the concatenation '."\n".' (the text keeps its line
 * break, the script line does not end); other control characters are dropped. The
 * result is one string expression, valid wherever gnuplot takes one (set title,
 * set label, titles in plot, tic labels, assignments), and in a comment. */
void remat_gp_put_string(FILE *fp, const char *s);
/* The same literal into buf (NUL-terminated when cap > 0); returns its length
 * without the NUL, as snprintf does. A caller uses the text only when the return
 * is below cap (a truncated literal is not inert). */
size_t remat_gp_quote(char *buf, size_t cap, const char *s);
/* A file name the script opens, relative to its folder: remat_gp_put_string of the
 * name with "./" in front (unless it is absolute or has it), so that none of
 * gnuplot's special names applies ('<cmd' reads from a command, '|cmd' writes to
 * one, '-', '+', '$block'). */
void remat_gp_put_path(FILE *fp, const char *name);
/* A string column of a data file: "..." with " turned into ' and control
 * characters into spaces (data files are never executed; this keeps one row one
 * line and one column). */
void remat_gp_put_datum(FILE *fp, const char *s);
/* Writes the terminal, size and output lines for f's format. */
void remat_gp_put_terminal(FILE *fp, const remat_figure_files *f, const remat_figure_opts *o);
/* The two comment lines every script starts with: "# <what>" and where its numbers
 * are (units: e.g. " (bytes)", or NULL) and how to redraw it; names quoted. */
void remat_gp_put_header(FILE *fp, const remat_figure_files *f, const char *what, const char *units);
/* How every script opens: the header (remat_gp_put_header), the terminal and
 * "dat = '<data file>'" (no newline after it). */
void remat_gp_put_open(FILE *fp, const remat_figure_files *f, const remat_figure_opts *o, const char *what,
                       const char *units);
/* "set title '<title>' font ",13"" and a newline. */
void remat_gp_put_title(FILE *fp, const char *title);
/* The light x and y grid, outward tics, the left and bottom border. */
void remat_gp_put_grid(FILE *fp);
/* A budget of bytes as a dashed grey line across the graph (arrow and label number id),
 * the variable "budget" in the script's units (data / yscale) and its label text at the
 * left (right = 0) or right end. */
void remat_gp_put_budget(FILE *fp, int id, int64_t bytes, const char *text, int right);
/* fo->title when given (non-empty), into buf: 1; else 0 and buf untouched. */
int remat_figure_title_given(const remat_figure_opts *fo, char *buf, size_t len);
/* The stem of a path: "runs/base.h5" -> "base". */
void remat_path_stem(const char *path, char *buf, size_t len);

/* Runs gnuplot on the script (cwd: the script's folder) drawing into a temporary
 * of the atomic writer, checks what it wrote (exit status 0, non-empty, a PNG from
 * its signature to its IEND chunk, or an SVG ending in </svg>), then commits it
 * onto the image. Does nothing when data_only. REMAT_ERR_CHECK with
 * gnuplot_missing = 1 when no gnuplot is found; REMAT_ERR_INTERNAL "<script>:
 * gnuplot: <its first error line, or what is wrong with the image>" when gnuplot
 * fails, writes no or a damaged image, or runs past the time limit (then it is
 * killed); REMAT_ERR_IO from the writer, and REMAT_ERR_IO "<image>: cannot write:
 * File too large / No space left on device (gnuplot's image was cut short)" when
 * the image came out short (or gnuplot was stopped by SIGXFSZ) because it reached
 * the file-size limit or the file system is full. Any stderr output of a successful
 * run is kept in files->gnuplot_stderr (first line). The time limit kills gnuplot's
 * whole process group (what it started goes too). */
remat_status remat_figure_render(const remat_figure_opts *o, remat_figure_files *f, remat_error *err);

/* The gnuplot executable that render would run, or NULL when none is found
 * (the returned pointer is static or into o/getenv). */
const char *remat_gnuplot_find(const remat_figure_opts *o, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
