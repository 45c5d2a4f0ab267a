/* fuzz_plot.c - libFuzzer target: no string that reaches a gnuplot script can run
 * anything.
 *
 * The input is split at NUL bytes into the strings a figure takes from its inputs:
 * the title (--title), the figure's file name (--out), a trace label / Pareto point
 * label, a scaling series name, x_name and y_name, a snapshot frame label and a
 * snapshot's file name. Every figure kind (memory curve, breakdown, Pareto, scaling,
 * imported allocation stream) is written with them, data only (gnuplot never runs),
 * and each script is read back with gnuplot's own lexical rules:
 *  - no backquote outside single quotes (gnuplot runs `cmd` anywhere else but in
 *    comments), no macro (@name) outside quotes, no line break inside a string, no
 *    comment ending in a backslash (it would continue onto the next command);
 *  - every string, decoded with gnuplot's rules ('' is ', concatenations with . are
 *    joined), is where the text went: each input string (control characters other
 *    than line breaks dropped) is found whole inside one decoded string, so none of
 *    it ended a string and became code;
 *  - every file name the script opens starts with ./ (gnuplot's '<cmd' and '|cmd');
 * and remat_gp_quote's literal decodes back to exactly its input. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/io/ext_trace.h"
#include "core/io/trace.h"
#include "fuzz/fuzz_common.h"
#include "plots/ext_curve.h"
#include "plots/extplot.h"
#include "plots/figure.h"
#include "plots/memplot.h"
#include "plots/pareto.h"
#include "plots/scaling.h"

enum { F_TITLE, F_OUT, F_LABEL, F_SERIES, F_XNAME, F_YNAME, F_FRAME, F_FILE, F_COUNT };
#define FIELD_MAX 24 /* under every field's own limit: nothing is cut */

static char g_dir[256];

/* ---- gnuplot's lexical rules ---------------------------------------------------- */

typedef struct lits {
    char *text[512];
    size_t len[512];
    int n;
} lits;

static void lits_free(lits *L) {
    for (int i = 0; i < L->n; i++) free(L->text[i]);
    L->n = 0;
}

/* Reads one quoted literal at s[*i] (a ' or "), appending its decoded bytes. */
static void read_literal(const char *s, size_t n, size_t *i, char **buf, size_t *bl, size_t *bc) {
    char q = s[*i];
    (*i)++;
    for (;;) {
        FUZZ_CHECK(*i < n);               /* unterminated string */
        char c = s[*i];
        FUZZ_CHECK(c != '\n');            /* a raw line break inside a string */
        if (q == '\'' && c == '\'') {
            if (*i + 1 < n && s[*i + 1] == '\'') { c = '\''; (*i)++; }
            else { (*i)++; return; }
        } else if (q == '"' && c == '"') {
            (*i)++;
            return;
        } else if (q == '"' && c == '`') {
            FUZZ_CHECK(!"backquote inside a double-quoted string");
        } else if (q == '"' && c == '\\') {
            FUZZ_CHECK(*i + 1 < n);
            c = s[++*i];
            if (c == 'n') c = '\n';
        }
        if (*bl + 2 > *bc) {
            *bc = *bc ? 2 * *bc : 64;
            *buf = realloc(*buf, *bc);
            FUZZ_CHECK(*buf);
        }
        (*buf)[(*bl)++] = c;
        (*i)++;
    }
}

static size_t skip_blanks(const char *s, size_t n, size_t i) {
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    return i;
}

/* Lexes a script; aborts on a rule broken; the decoded strings into L. */
static void lex_script(const char *s, size_t n, lits *L) {
    L->n = 0;
    FUZZ_CHECK(memchr(s, 0, n) == NULL);
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c == '#') {
            const char *nl = memchr(s + i, '\n', n - i);
            size_t e = nl ? (size_t)(nl - s) : n;
            FUZZ_CHECK(e == i || s[e - 1] != '\\'); /* a comment continued onto the next line */
            i = e;
        } else if (c == '\'' || c == '"') {
            char *buf = NULL;
            size_t bl = 0, bc = 0;
            read_literal(s, n, &i, &buf, &bl, &bc);
            for (;;) { /* 'a'."\n".'b' is one string */
                size_t j = skip_blanks(s, n, i);
                if (j < n && s[j] == '.') {
                    size_t k = skip_blanks(s, n, j + 1);
                    if (k < n && (s[k] == '\'' || s[k] == '"')) {
                        i = k;
                        read_literal(s, n, &i, &buf, &bl, &bc);
                        continue;
                    }
                }
                break;
            }
            if (!buf) buf = calloc(1, 1);
            FUZZ_CHECK(buf);
            buf[bl] = 0;
            if (L->n < 512) { L->text[L->n] = buf; L->len[L->n++] = bl; }
            else free(buf);
        } else {
            FUZZ_CHECK(c != '`'); /* command substitution */
            FUZZ_CHECK(c != '@'); /* macro */
            i++;
        }
    }
}

static int found(const lits *L, const char *want) {
    size_t w = strlen(want);
    if (w == 0) return 1;
    for (int i = 0; i < L->n; i++)
        if (L->len[i] >= w && memmem(L->text[i], L->len[i], want, w)) return 1;
    return 0;
}

/* What a string reads as once in the script: control characters other than line
 * breaks dropped. */
static void sanitized(const char *s, char *out, size_t cap) {
    size_t k = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && k + 1 < cap; p++)
        if (*p == '\n' || (*p >= 0x20 && *p != 0x7f)) out[k++] = (char)*p;
    out[k] = 0;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    FUZZ_CHECK(f);
    char *buf = NULL;
    size_t cap = 0, len = 0, got;
    do {
        if (len + 4096 > cap) {
            cap = cap ? 2 * cap : 65536;
            buf = realloc(buf, cap);
            FUZZ_CHECK(buf);
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    *n = len;
    return buf;
}

/* Reads the script back, checks it and what each given string became. */
static void check_figure(const remat_figure_files *files, const char *const *want, int n_want) {
    size_t n;
    char *text = slurp(files->script, &n);
    lits L;
    lex_script(text, n, &L);
    for (int k = 0; k < n_want; k++) {
        char e[4 * FIELD_MAX];
        sanitized(want[k], e, sizeof e);
        if (!found(&L, e)) fprintf(stderr, "fuzz_plot: %s: the string \"%s\" is in no string of the script\n", files->script, e);
        FUZZ_CHECK(found(&L, e));
    }
    /* the files it opens */
    int saw_dat = 0, saw_out = 0;
    for (const char *p = text; (p = strstr(p, "\ndat = ")) != NULL; p++) {
        FUZZ_CHECK(p[7] == '\'' && p[8] == '.' && p[9] == '/');
        saw_dat = 1;
    }
    static const char set_out[] = "\nif (!exists(\"outfile\")) outfile = ";
    for (const char *p = text; (p = strstr(p, set_out)) != NULL; p++) {
        const char *v = p + sizeof set_out - 1;
        FUZZ_CHECK(v[0] == '\'' && v[1] == '.' && v[2] == '/');
        saw_out = 1;
    }
    FUZZ_CHECK(saw_dat && saw_out);
    char e[4 * FIELD_MAX + 8];
    char stem[4 * FIELD_MAX];
    sanitized(files->data_name, stem, sizeof stem);
    snprintf(e, sizeof e, "./%s", stem);
    FUZZ_CHECK(found(&L, e));
    lits_free(&L);
    free(text);
    unlink(files->script);
    unlink(files->data);
}

/* ---- the figures ------------------------------------------------------------------ */

static const char *kModel =
    "{\"name\": \"tiny2\", \"T\": 4, \"N\": 2, \"input\": {\"shape\": [8], \"kind\": \"spikes\", \"rate\": 0.3},"
    " \"classes\": 2, \"loss\": \"rate_mse\", \"optimizer\": {\"type\": \"sgd\", \"lr\": 0.1, \"momentum\": 0.9},"
    " \"layers\": [{\"name\": \"fc1\", \"type\": \"linear\", \"out\": 8}, {\"name\": \"lif1\", \"type\": \"lif\"}],"
    " \"blocks\": [{\"name\": \"b1\", \"layers\": [\"fc1\", \"lif1\"]}]}";

static void add_event(remat_trace *t, int64_t tensor, int64_t bytes, int kind, int phase, int role, double time) {
    remat_event e;
    memset(&e, 0, sizeof e);
    e.time_s = time;
    e.tensor = tensor;
    e.bytes = bytes;
    e.dims[0] = bytes / 4;
    e.dims[1] = e.dims[2] = e.dims[3] = 1;
    e.nnz = -1;
    e.layer = 0;
    e.block = 0;
    e.kind = (uint8_t)kind;
    e.phase = (uint8_t)phase;
    e.role = (uint8_t)role;
    e.enc = REMAT_ENC_F32;
    e.ndim = 1;
    e.time_dim = e.batch_dim = -1;
    remat_error err = {0};
    FUZZ_CHECK(remat_trace_add_event(t, &e, &err) >= 0);
}

static void build_trace(remat_trace *t) {
    remat_trace_init(t);
    remat_error err = {0};
    FUZZ_CHECK(remat_trace_set_texts(t, kModel, "", &err) == REMAT_OK);
    snprintf(t->backend, sizeof t->backend, "ref");
    add_event(t, 0, 1024, REMAT_EVENT_ALLOC, REMAT_PHASE_INIT, REMAT_ROLE_PARAMETER, 0.001);
    add_event(t, 1, 4096, REMAT_EVENT_ALLOC, REMAT_PHASE_FORWARD, REMAT_ROLE_SAVED, 0.002);
    add_event(t, 2, 2048, REMAT_EVENT_ALLOC, REMAT_PHASE_BACKWARD, REMAT_ROLE_ACT_GRAD, 0.003);
    add_event(t, 2, 2048, REMAT_EVENT_FREE, REMAT_PHASE_BACKWARD, REMAT_ROLE_ACT_GRAD, 0.004);
    add_event(t, 1, 4096, REMAT_EVENT_FREE, REMAT_PHASE_BACKWARD, REMAT_ROLE_SAVED, 0.005);
    remat_iter_summary s;
    memset(&s, 0, sizeof s);
    s.first_event = 1;
    s.n_events = 4;
    FUZZ_CHECK(remat_trace_add_iter(t, &s, &err) >= 0);
}

static void build_ext(remat_ext_trace *t, const char *frame, const char *file) {
    remat_ext_trace_init(t);
    remat_error err = {0};
    snprintf(t->source, sizeof t->source, "pytorch-snapshot");
    snprintf(t->source_file, sizeof t->source_file, "%s", file);
    FUZZ_CHECK(remat_ext_trace_set_devices(t, 1, &err) == REMAT_OK);
    int32_t lab = remat_ext_add_label(t, frame, strlen(frame), &err);
    FUZZ_CHECK(lab >= 0);
    remat_ext_device *d = &t->devices[0];
    const int64_t S = (int64_t)1 << 40, MiB = 1 << 20;
    remat_ext_segment seg = {S, 2 * MiB, 0, 0, 2, REMAT_EXT_POOL_LARGE, 0, {0}};
    FUZZ_CHECK(remat_ext_add_segment(d, &seg, &err) >= 0);
    remat_ext_block b0 = {S, MiB, MiB, lab, REMAT_EXT_BLOCK_ACTIVE, {0}};
    remat_ext_block b1 = {S + MiB, MiB, -1, -1, REMAT_EXT_BLOCK_INACTIVE, {0}};
    FUZZ_CHECK(remat_ext_add_block(d, &b0, &err) >= 0 && remat_ext_add_block(d, &b1, &err) >= 0);
    remat_ext_event ev[3] = {{S, 2 * MiB, 0, 1, -1, lab, REMAT_EXT_SEGMENT_ALLOC, {0}},
                             {S, MiB, 0, 2, -1, lab, REMAT_EXT_ALLOC, {0}},
                             {S + MiB, 4096, 0, 3, -1, lab, REMAT_EXT_ALLOC, {0}}};
    for (int k = 0; k < 3; k++) FUZZ_CHECK(remat_ext_add_event(d, &ev[k], &err) >= 0);
}

static void figure_opts(remat_figure_opts *fo, char *out, size_t cap, const char *title, const char *stem, const char *ext) {
    *fo = remat_figure_opts_default();
    snprintf(out, cap, "%s/%s%s", g_dir, stem, ext);
    fo->out = out;
    fo->title = title;
    fo->data_only = 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/fuzz_plot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(g_dir) != NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char f[F_COUNT][FIELD_MAX + 1];
    memset(f, 0, sizeof f);
    size_t at = 0;
    for (int k = 0; k < F_COUNT; k++) {
        size_t n = 0;
        while (at < size && data[at] != 0) {
            if (n < FIELD_MAX) f[k][n++] = (char)data[at];
            at++;
        }
        at++;
    }
    /* remat_gp_quote: the literal decodes back to the input, and is one literal */
    for (int k = 0; k < F_COUNT; k++) {
        char q[16 * FIELD_MAX], e[4 * FIELD_MAX];
        size_t qn = remat_gp_quote(q, sizeof q, f[k]);
        FUZZ_CHECK(qn < sizeof q && strlen(q) == qn);
        lits L;
        lex_script(q, qn, &L);
        FUZZ_CHECK(L.n == 1);
        sanitized(f[k], e, sizeof e);
        FUZZ_CHECK(L.len[0] == strlen(e) && memcmp(L.text[0], e, L.len[0]) == 0);
        lits_free(&L);
    }
    /* a file name: one component */
    char stem[FIELD_MAX + 1];
    snprintf(stem, sizeof stem, "%s", f[F_OUT]);
    for (char *p = stem; *p; p++)
        if (*p == '/') *p = '_';
    if (!stem[0] || !strcmp(stem, ".") || !strcmp(stem, "..")) snprintf(stem, sizeof stem, "f");
    const char *title = f[F_TITLE];
    char out[512];
    remat_figure_opts fo;
    remat_figure_files files;
    remat_error err = {0};

    /* memory curve and breakdown of a trace */
    remat_trace t;
    build_trace(&t);
    remat_plot_input in = {&t, f[F_FILE], f[F_LABEL]};
    remat_curve_opts co = remat_curve_opts_default();
    figure_opts(&fo, out, sizeof out, title, stem, ".png");
    FUZZ_CHECK(remat_plot_memory(&in, 1, &co, &fo, &files, &err) == REMAT_OK);
    const char *w_mem[] = {title}; /* one trace: its label names only the data blocks */
    check_figure(&files, w_mem, 1);
    figure_opts(&fo, out, sizeof out, title, stem, ".svg");
    FUZZ_CHECK(remat_plot_breakdown(&in, 1, &co, &fo, &files, &err) == REMAT_OK);
    const char *w_bd[] = {title, f[F_LABEL]};
    check_figure(&files, w_bd, 2);
    remat_trace_free(&t);

    /* Pareto front */
    remat_pareto_point pts[2];
    memset(pts, 0, sizeof pts);
    pts[0] = (remat_pareto_point){7000000, 1.2, 0.2, 1, ""};
    pts[1] = (remat_pareto_point){9000000, 1.0, 0.0, 0, ""};
    snprintf(pts[0].label, sizeof pts[0].label, "%s", f[F_LABEL]);
    snprintf(pts[1].label, sizeof pts[1].label, "%s", f[F_SERIES]);
    remat_pareto p = {pts, 2, 1, 9500000, 1.0, 8000000};
    figure_opts(&fo, out, sizeof out, title, stem, ".png");
    FUZZ_CHECK(remat_plot_pareto(&p, f[F_FILE], &fo, &files, &err) == REMAT_OK);
    const char *w_par[] = {title, f[F_LABEL]};
    check_figure(&files, w_par, 2);

    /* scaling */
    remat_scaling s;
    memset(&s, 0, sizeof s);
    snprintf(s.x_name, sizeof s.x_name, "%s", f[F_XNAME][0] ? f[F_XNAME] : "T");
    snprintf(s.y_name, sizeof s.y_name, "%s", f[F_YNAME]);
    s.budget_bytes = 3000;
    s.n_series = 1;
    double x[3] = {16, 32, 64};
    int64_t pk[3] = {1800, 2600, 4200};
    snprintf(s.series[0].name, sizeof s.series[0].name, "%s", f[F_SERIES][0] ? f[F_SERIES] : "s");
    s.series[0].n = 3;
    s.series[0].x = x;
    s.series[0].peak_bytes = pk;
    s.series[0].fit = REMAT_FIT_LINEAR;
    figure_opts(&fo, out, sizeof out, title, stem, ".png");
    FUZZ_CHECK(remat_plot_scaling(&s, f[F_FILE], &fo, &files, &err) == REMAT_OK);
    const char *w_sc[] = {title, s.series[0].name, s.x_name, s.y_name};
    check_figure(&files, w_sc, 4);

    /* an imported allocation stream */
    remat_ext_trace et;
    build_ext(&et, f[F_FRAME], f[F_FILE]);
    remat_ext_curve c;
    FUZZ_CHECK(remat_ext_curve_build(&et, 0, &c, &err) == REMAT_OK);
    figure_opts(&fo, out, sizeof out, "", stem, ".png");
    FUZZ_CHECK(remat_plot_ext(&et, &c, f[F_FILE], 64, &fo, &files, &err) == REMAT_OK);
    const char *w_ext[] = {f[F_FRAME], f[F_FILE]};
    check_figure(&files, w_ext, 2);
    remat_ext_curve_free(&c);
    remat_ext_trace_free(&et);
    return 0;
}
