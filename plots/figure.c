/* figure.c - output files of a figure, atomic writes, units, running gnuplot.
 *
 * gnuplot runs as a child process (fork + execv) in the script's folder, so the
 * kept script can name its data file and image by basename and the user can rerun
 * it there unchanged. Its stderr is read through a pipe: the first line becomes the
 * error message on failure (or files->gnuplot_stderr on success).
 */
#define _POSIX_C_SOURCE 200809L
#include "plots/figure.h"

#include "core/io/input_file.h" /* remat_env_seconds */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/clock.h"

remat_figure_opts remat_figure_opts_default(void) {
    remat_figure_opts o;
    memset(&o, 0, sizeof o);
    return o;
}

static const char *base_of(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

remat_status remat_figure_files_init(const remat_figure_opts *o, remat_figure_files *f, remat_error *err) {
    memset(f, 0, sizeof *f);
    const char *out = o ? o->out : NULL;
    if (!out || !*out) return remat_error_set(err, REMAT_ERR_INPUT, "--out: missing (expected FIG.png or FIG.svg)");
    size_t n = strlen(out);
    if (n + 8 >= REMAT_FIG_PATH_LEN)
        return remat_error_set(err, REMAT_ERR_INPUT, "%.64s...: --out: expected a path under %d characters", out,
                               REMAT_FIG_PATH_LEN - 8);
    const char *dot = strrchr(out, '.');
    const char *base = base_of(out);
    if (!dot || dot < base || dot == base)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: --out: expected a file name ending in .png or .svg", out);
    if (strcasecmp(dot, ".png") == 0) f->format = REMAT_FIG_PNG;
    else if (strcasecmp(dot, ".svg") == 0) f->format = REMAT_FIG_SVG;
    else return remat_error_set(err, REMAT_ERR_INPUT, "%s: --out: expected a file name ending in .png or .svg", out);
    if (strlen(base) >= sizeof f->image_name - 8)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: --out: file name too long", out);
    size_t stem = (size_t)(dot - out);
    memcpy(f->image, out, n + 1);
    snprintf(f->data, sizeof f->data, "%.*s.dat", (int)stem, out);
    snprintf(f->script, sizeof f->script, "%.*s.gp", (int)stem, out);
    snprintf(f->image_name, sizeof f->image_name, "%.500s", base);
    snprintf(f->data_name, sizeof f->data_name, "%.500s", base_of(f->data));
    return REMAT_OK;
}

remat_status remat_figure_begin(const remat_figure_opts **o, remat_figure_opts *def, remat_figure_files *f,
                                remat_error *err) {
    if (!*o) {
        *def = remat_figure_opts_default();
        *o = def;
    }
    return remat_figure_files_init(*o, f, err);
}

/* ---- units ------------------------------------------------------------------ */

remat_unit remat_unit_bytes(double max_bytes) {
    remat_unit u;
    if (max_bytes >= 2.0 * 1073741824.0) { u.scale = 1073741824.0; u.name = "GiB"; }
    else if (max_bytes >= 2.0 * 1048576.0) { u.scale = 1048576.0; u.name = "MiB"; }
    else if (max_bytes >= 2.0 * 1024.0) { u.scale = 1024.0; u.name = "KiB"; }
    else { u.scale = 1.0; u.name = "B"; }
    return u;
}

remat_unit remat_unit_seconds(double span_s) {
    remat_unit u;
    if (span_s >= 2.0) { u.scale = 1.0; u.name = "s"; }
    else if (span_s >= 2e-3) { u.scale = 1e-3; u.name = "ms"; }
    else { u.scale = 1e-6; u.name = "us"; }
    return u;
}

const char *remat_fmt_bytes_short(int64_t bytes, char *buf, size_t len) {
    double b = (double)bytes;
    double a = fabs(b);
    const char *unit = "B";
    double s = 1.0;
    if (a >= 1073741824.0) { s = 1073741824.0; unit = "GiB"; }
    else if (a >= 1048576.0) { s = 1048576.0; unit = "MiB"; }
    else if (a >= 1024.0) { s = 1024.0; unit = "KiB"; }
    double v = b / s;
    if (s == 1.0) snprintf(buf, len, "%lld B", (long long)bytes);
    else if (fabs(v) >= 100.0) snprintf(buf, len, "%.1f %s", v, unit);
    else if (fabs(v) >= 10.0) snprintf(buf, len, "%.2f %s", v, unit);
    else snprintf(buf, len, "%.3f %s", v, unit);
    return buf;
}

/* ---- gnuplot text ----------------------------------------------------------- */

const char *remat_gp_real(double v, char *buf, size_t len) {
    int n = snprintf(buf, len, "%.17g", v);
    if (n > 0 && (size_t)n + 2 < len && !strpbrk(buf, ".eEn")) memcpy(buf + n, ".0", 3); /* not nan/inf either */
    return buf;
}

/* One emitter for every gnuplot string literal: to a FILE, or counted into a buffer. */
typedef struct gp_sink { FILE *fp; char *buf; size_t cap, n; } gp_sink;

static void sink_put(gp_sink *k, const char *s) {
    for (; *s; s++) {
        if (k->fp) fputc(*s, k->fp);
        else if (k->buf && k->n + 1 < k->cap) k->buf[k->n] = *s;
        k->n++;
    }
}

/* '...' with ' doubled: gnuplot substitutes no backquote, macro or escape inside
 * single quotes. A line break ends the literal and continues it as '."\n".'
 * (a raw one would end the command); other control characters are dropped. */
static void gp_quote(gp_sink *k, const char *prefix, const char *s) {
    char one[2] = {0, 0};
    sink_put(k, "'");
    sink_put(k, prefix);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '\n') sink_put(k, "'.\"\\n\".'");
        else if (*p == '\'') sink_put(k, "''");
        else if (*p < 0x20 || *p == 0x7f) continue;
        else { one[0] = (char)*p; sink_put(k, one); }
    }
    sink_put(k, "'");
}

void remat_gp_put_string(FILE *fp, const char *s) {
    gp_sink k = {fp, NULL, 0, 0};
    gp_quote(&k, "", s);
}

/* A name the script opens relative to its folder: "./" first, so that none of
 * gnuplot's special file names applies ('<cmd' and '|cmd' run commands, '-', '+',
 * '$block'). */
static const char *path_prefix(const char *name) {
    return name && name[0] != '/' && strncmp(name, "./", 2) != 0 ? "./" : "";
}

void remat_gp_put_path(FILE *fp, const char *name) {
    gp_sink k = {fp, NULL, 0, 0};
    gp_quote(&k, path_prefix(name), name);
}

size_t remat_gp_quote(char *buf, size_t cap, const char *s) {
    gp_sink k = {NULL, buf, cap, 0};
    gp_quote(&k, "", s);
    if (buf && cap) buf[k.n < cap ? k.n : cap - 1] = 0;
    return k.n;
}

void remat_gp_put_datum(FILE *fp, const char *s) {
    fputc('"', fp);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        fputc(*p == '"' ? '\'' : (*p < 0x20 || *p == 0x7f ? ' ' : *p), fp);
    fputc('"', fp);
}

void remat_gp_put_terminal(FILE *fp, const remat_figure_files *f, const remat_figure_opts *o) {
    int w = o && o->width > 0 ? o->width : 1280;
    int h = o && o->height > 0 ? o->height : 720;
    fprintf(fp, "# output: gnuplot -e \"outfile='other.svg'\" ");
    remat_gp_put_path(fp, base_of(f->script));
    fprintf(fp, " writes elsewhere (terminal below decides the format)\n");
    fprintf(fp, "if (!exists(\"outfile\")) outfile = ");
    remat_gp_put_path(fp, f->image_name);
    fputc('\n', fp);
    if (f->format == REMAT_FIG_PNG)
        fprintf(fp, "set terminal pngcairo size %d,%d noenhanced font \"DejaVu Sans,10\" background rgb \"white\"\n", w, h);
    else
        fprintf(fp, "set terminal svg size %d,%d dynamic noenhanced font \"DejaVu Sans,11\" background rgb \"white\"\n", w,
                h);
    fprintf(fp, "set output outfile\n");
}

void remat_gp_put_header(FILE *fp, const remat_figure_files *f, const char *what, const char *units) {
    fprintf(fp, "# %s\n# Numbers in ", what);
    remat_gp_put_string(fp, f->data_name);
    fprintf(fp, "%s. Restyle freely and redraw with: gnuplot ", units ? units : "");
    remat_gp_put_path(fp, base_of(f->script));
    fprintf(fp, "  (in this folder)\n");
}

void remat_gp_put_open(FILE *fp, const remat_figure_files *f, const remat_figure_opts *o, const char *what,
                       const char *units) {
    remat_gp_put_header(fp, f, what, units);
    remat_gp_put_terminal(fp, f, o);
    fprintf(fp, "dat = ");
    remat_gp_put_path(fp, f->data_name);
}

void remat_gp_put_title(FILE *fp, const char *title) {
    fprintf(fp, "set title ");
    remat_gp_put_string(fp, title);
    fprintf(fp, " font \",13\"\n");
}

void remat_gp_put_grid(FILE *fp) {
    fprintf(fp, "set grid xtics ytics lc rgb \"#d0d0d0\" lt 1 lw 0.6\nset tics out nomirror\nset border 3\n");
}

void remat_gp_put_budget(FILE *fp, int id, int64_t bytes, const char *text, int right) {
    fprintf(fp, "budget = %lld / yscale\n", (long long)bytes);
    fprintf(fp, "set arrow %d from graph 0, first budget to graph 1, first budget nohead dt (8,5) lw 1.2 lc rgb "
                "\"#888888\" back\n",
            id);
    fprintf(fp, "set label %d ", id);
    remat_gp_put_string(fp, text);
    fprintf(fp, " at graph %s, first budget offset 0,0.7 %s tc rgb \"#555555\" front\n", right ? "0.99" : "0.01",
            right ? "right" : "left");
}

int remat_figure_title_given(const remat_figure_opts *fo, char *buf, size_t len) {
    if (!fo->title || !fo->title[0]) return 0;
    snprintf(buf, len, "%s", fo->title);
    return 1;
}

void remat_path_stem(const char *path, char *buf, size_t len) {
    const char *b = base_of(path ? path : "");
    const char *dot = strrchr(b, '.');
    size_t n = dot && dot > b ? (size_t)(dot - b) : strlen(b);
    snprintf(buf, len, "%.*s", (int)n, b);
}

/* ---- running gnuplot ---------------------------------------------------------- */

static int is_exec(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

const char *remat_gnuplot_find(const remat_figure_opts *o, char *buf, size_t len) {
    const char *want = o && o->gnuplot && *o->gnuplot ? o->gnuplot : getenv("REMAT_GNUPLOT");
    if (!want || !*want) want = "gnuplot";
    if (strchr(want, '/')) {
        if (!is_exec(want)) return NULL;
        if (want[0] == '/') { snprintf(buf, len, "%s", want); return buf; }
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return NULL;
        snprintf(buf, len, "%s/%s", cwd, want);
        return buf;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n > 0) {
            snprintf(buf, len, "%.*s/%s", (int)n, path, want);
            if (is_exec(buf)) return buf;
        }
        if (!colon) break;
        path = colon + 1;
    }
    return NULL;
}

static void first_line(const char *text, char *out, size_t len) {
    /* skip empty lines and gnuplot's echo of the failing command, keep the message */
    const char *best = NULL;
    size_t best_n = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        const char *q = p;
        while (q < p + n && (*q == ' ' || *q == '\t' || *q == '^')) q++;
        if (q < p + n) {
            if (!best) { best = p; best_n = n; }
            if (strstr(p, "line ") && memchr(p, ':', n)) { best = p; best_n = n; break; }
        }
        if (!nl) break;
        p = nl + 1;
    }
    if (!best) { out[0] = 0; return; }
    if (best_n >= len) best_n = len - 1;
    memcpy(out, best, best_n);
    out[best_n] = 0;
    for (char *c = out; *c; c++)
        if (*c == '\t' || *c == '\r') *c = ' ';
}

static double gnuplot_timeout_s(void) {
    double v;
    remat_error err = {REMAT_OK, {0}};
    remat_env_seconds("REMAT_GNUPLOT_TIMEOUT_S", 0, REMAT_GNUPLOT_TIMEOUT_S, &v, &err);
    return v; /* the command line refused a bad value before any work (remat_env_check) */
}


/* What is wrong with the image gnuplot wrote, or NULL when it is whole: a PNG from
 * its signature to its IEND chunk, an SVG that ends in </svg>. */
static const char *image_problem(const char *path, remat_fig_format fmt) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return "wrote no image";
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size == 0) {
        close(fd);
        return "wrote no image (an empty file)";
    }
    unsigned char head[8] = {0}, tail[64] = {0};
    size_t nt = st.st_size < (off_t)sizeof tail ? (size_t)st.st_size : sizeof tail;
    int ok = pread(fd, head, sizeof head, 0) >= 0 && pread(fd, tail, nt, st.st_size - (off_t)nt) == (ssize_t)nt;
    close(fd);
    if (!ok) return "the image cannot be read back";
    if (fmt == REMAT_FIG_PNG) {
        static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
        static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
        if (st.st_size < 8 || memcmp(head, sig, 8) != 0) return "wrote a file that is not a PNG";
        if (nt < 12 || memcmp(tail + nt - 12, iend, 12) != 0) return "wrote a truncated PNG (no IEND chunk)";
        return NULL;
    }
    while (nt > 0 && (tail[nt - 1] == '\n' || tail[nt - 1] == '\r' || tail[nt - 1] == ' ' || tail[nt - 1] == '\t')) nt--;
    if (nt < 6 || memcmp(tail + nt - 6, "</svg>", 6) != 0) return "wrote a truncated SVG (no closing </svg>)";
    return NULL;
}

/* Why gnuplot's image at path came out short, when the cause is the disk: the file
 * reached the file-size limit (EFBIG, RLIMIT_FSIZE: gnuplot's writes failed, or it
 * was stopped by SIGXFSZ) or its file system has no space left (ENOSPC); 0 when
 * neither is the case. */
static int disk_cause(const char *path, int killed_by) {
    struct stat st;
    off_t size = stat(path, &st) == 0 ? st.st_size : 0;
    struct rlimit rl;
    if (killed_by == SIGXFSZ) return EFBIG;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (rlim_t)size + 65536 >= rl.rlim_cur)
        return EFBIG;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = 0;
    else snprintf(dir, sizeof dir, ".");
    struct statvfs vs;
    if (statvfs(dir, &vs) == 0 && (uint64_t)vs.f_bavail * vs.f_frsize < 65536) return ENOSPC;
    return 0;
}

/* Appends got bytes to the text (kept under 1 MiB; what does not fit is dropped). */
static void append(char **text, size_t *tn, size_t *tcap, const char *chunk, size_t got) {
    if (*tn + got + 1 > *tcap && *tcap < (1u << 20)) {
        size_t ncap = *tcap ? *tcap * 2 : 8192;
        while (ncap < *tn + got + 1) ncap *= 2;
        char *nt = remat_xrealloc(*text, ncap, NULL);
        if (nt) { *text = nt; *tcap = ncap; }
    }
    if (*text && *tn + got + 1 <= *tcap) { memcpy(*text + *tn, chunk, got); *tn += got; }
}

/* Reads the child's stderr until it exits or the deadline passes (then kills it).
 * Returns 1 when it exited (status in *status), 0 when it was killed. */
static int collect(pid_t pid, int fd, double deadline, char **text, size_t *tn, int *status) {
    size_t tcap = 0;
    int open_fd = 1;
    char chunk[4096];
    for (;;) {
        if (waitpid(pid, status, WNOHANG) == pid) break;
        double left = deadline - remat_now_s();
        if (left <= 0) {
            kill(-pid, SIGKILL); /* gnuplot's process group: whatever it started goes too */
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR) {}
            if (open_fd) close(fd);
            return 0;
        }
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        if (!open_fd) {
            struct timespec nap = {0, (long)ms * 1000000L};
            nanosleep(&nap, NULL);
            continue;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, ms);
        if (r <= 0) continue;
        ssize_t got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            close(fd);
            open_fd = 0;
            continue;
        }
        append(text, tn, &tcap, chunk, (size_t)got);
    }
    if (open_fd) { /* what is still buffered in the pipe */
        for (;;) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 0) <= 0) break;
            ssize_t got = read(fd, chunk, sizeof chunk);
            if (got <= 0) break;
            append(text, tn, &tcap, chunk, (size_t)got);
        }
        close(fd);
    }
    return 1;
}

/* gnuplot's "-e" argument into *out (remat_xfree), outfile='<tmp>' (the atomic writer's
 * temporary, named absolutely: gnuplot runs in the script's folder), quoted as every
 * string of the script. */
static remat_status outfile_arg(const remat_afile *af, const remat_figure_files *f, char **out, remat_error *err) {
    char tmp_abs[PATH_MAX + REMAT_AFILE_PATH_LEN], cwd[PATH_MAX];
    if (af->tmp[0] == '/') snprintf(tmp_abs, sizeof tmp_abs, "%s", af->tmp);
    else if (getcwd(cwd, sizeof cwd)) snprintf(tmp_abs, sizeof tmp_abs, "%s/%s", cwd, af->tmp);
    else {
        int e = errno;
        return remat_error_set(err, REMAT_ERR_IO, "%s: cannot write: current folder: %s", f->image, strerror(e));
    }
    size_t setout_len = strlen("outfile=") + remat_gp_quote(NULL, 0, tmp_abs) + 1;
    char *setout = remat_xmalloc(setout_len, err);
    if (!setout) return REMAT_ERR_NOMEM;
    memcpy(setout, "outfile=", 8);
    remat_gp_quote(setout + 8, setout_len - 8, tmp_abs);
    *out = setout;
    return REMAT_OK;
}

/* Starts gnuplot gp on the script in its folder dir, stderr to *fd, in its own process
 * group (killed whole at the time limit), dying with remat. */
static remat_status spawn_gnuplot(const char *gp, const char *dir, const char *setout, const remat_figure_files *f,
                                  pid_t *out_pid, int *fd, remat_error *err) {
    int pfd[2];
    if (pipe(pfd) != 0) {
        int e = errno;
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: gnuplot: pipe: %s", f->script, strerror(e));
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pfd[0]);
        close(pfd[1]);
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: gnuplot: fork: %s", f->script, strerror(e));
    }
    if (pid > 0) setpgid(pid, pid); /* both sides, so the group exists before any kill */
    if (pid == 0) {
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* remat killed (SIGTERM...): gnuplot goes too */
        if (getppid() == 1) _exit(127);
#endif
        setpgid(0, 0); /* its own process group, killed whole at the time limit */
        close(pfd[0]);
        dup2(pfd[1], 2);
        close(pfd[1]);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) { dup2(devnull, 0); dup2(devnull, 1); if (devnull > 2) close(devnull); }
        if (chdir(dir) != 0) { fprintf(stderr, "cannot enter %s: %s\n", dir, strerror(errno)); _exit(127); }
        /* "./" first: gnuplot reads a script named '<cmd' from the command cmd */
        char script[REMAT_FIG_PATH_LEN + 2];
        snprintf(script, sizeof script, "./%s", base_of(f->script));
        char *argv[] = {(char *)"gnuplot", (char *)"-e", (char *)setout, script, NULL};
        execv(gp, argv);
        fprintf(stderr, "cannot run %s: %s\n", gp, strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    *out_pid = pid;
    *fd = pfd[0];
    return REMAT_OK;
}

/* What gnuplot's run gave (exit status, its first stderr line, the image): the image
 * committed, or the temporary dropped with the error that says why. */
static remat_status judge_image(remat_afile *af, remat_figure_files *f, int status, char *line, size_t line_len,
                                remat_error *err) {
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const char *bad = ok ? image_problem(af->tmp, f->format) : NULL;
    int cause = ok && !bad ? 0 : disk_cause(af->tmp, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (cause) { /* the disk, not gnuplot: said as every other write error is */
        remat_afile_abort(af);
        return remat_error_set(err, REMAT_ERR_IO, "%s: cannot write: %s (gnuplot's image was cut short)", f->image,
                               strerror(cause));
    }
    if (!ok) {
        remat_afile_abort(af);
        if (!line[0]) {
            if (WIFSIGNALED(status)) snprintf(line, line_len, "killed by signal %d", WTERMSIG(status));
            else snprintf(line, line_len, "exit status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        }
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: gnuplot: %s", f->script, line);
    }
    if (bad) {
        remat_afile_abort(af);
        return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: gnuplot: %s%s%s", f->script, bad, line[0] ? ": " : "",
                               line);
    }
    remat_status st = remat_afile_commit(af, err);
    if (st != REMAT_OK) return st;
    snprintf(f->gnuplot_stderr, sizeof f->gnuplot_stderr, "%s", line);
    f->image_written = 1;
    return REMAT_OK;
}

remat_status remat_figure_render(const remat_figure_opts *o, remat_figure_files *f, remat_error *err) {
    f->image_written = 0;
    f->gnuplot_missing = 0;
    f->gnuplot_stderr[0] = 0;
    if (o && o->data_only) return REMAT_OK;
    char gp[PATH_MAX];
    if (!remat_gnuplot_find(o, gp, sizeof gp)) {
        f->gnuplot_missing = 1;
        return remat_error_set(err, REMAT_ERR_CHECK,
                               "gnuplot: not found (install gnuplot, e.g. apt-get install gnuplot-nox, or set "
                               "REMAT_GNUPLOT); wrote %s and %s, run `gnuplot %s` in that folder for %s",
                               f->script, f->data, base_of(f->script), f->image_name);
    }
    char dir[REMAT_FIG_PATH_LEN];
    const char *slash = strrchr(f->script, '/');
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - f->script == 0 ? 1 : slash - f->script), f->script);
    else snprintf(dir, sizeof dir, ".");
    remat_afile af;
    remat_status st = remat_afile_open_path(&af, f->image, err);
    if (st != REMAT_OK) return st;
    char *setout = NULL;
    pid_t pid = 0;
    int fd = -1;
    st = outfile_arg(&af, f, &setout, err);
    if (st == REMAT_OK) st = spawn_gnuplot(gp, dir, setout, f, &pid, &fd, err);
    remat_xfree(setout);
    if (st != REMAT_OK) {
        remat_afile_abort(&af);
        return st;
    }
    double limit = gnuplot_timeout_s();
    char *text = NULL;
    size_t tn = 0;
    int status = 0;
    int exited = collect(pid, fd, remat_now_s() + limit, &text, &tn, &status);
    if (text) text[tn] = 0;
    char line[480];
    first_line(text ? text : "", line, sizeof line);
    remat_xfree(text);
    if (!exited) {
        remat_afile_abort(&af);
        return remat_error_set(err, REMAT_ERR_INTERNAL,
                               "%s: gnuplot: no image after %g s, killed (limit: REMAT_GNUPLOT_TIMEOUT_S)", f->script,
                               limit);
    }
    return judge_image(&af, f, status, line, sizeof line, err);
}

