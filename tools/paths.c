/* paths.c - outputs that are inputs, or two outputs that are one file, refused
 * before any work (contract in tools/paths.h). */
#define _POSIX_C_SOURCE 200809L
#include "tools/paths.h"

#include "core/io/atomic_file.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

typedef struct ident {
    int kind;    /* 0 unresolvable or not a file; 1 an existing regular file; 2 a new name */
    dev_t dev;
    ino_t ino;
    const char *name; /* kind 2: the base name inside the folder dev/ino */
} ident;

static ident identify(const char *path) {
    ident id = {0, 0, 0, NULL};
    if (!path || !path[0]) return id;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISREG(st.st_mode)) {
            id.kind = 1;
            id.dev = st.st_dev;
            id.ino = st.st_ino;
        }
        return id;
    }
    struct stat lst;
    if (lstat(path, &lst) == 0) return id; /* a dangling link: the writer refuses it */
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) < sizeof dir) snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    else return id;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return id;
    id.kind = 2;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.name = slash ? slash + 1 : path;
    return id;
}

static int same(const ident *a, const ident *b) {
    if (a->kind == 0 || a->kind != b->kind || a->dev != b->dev || a->ino != b->ino) return 0;
    return a->kind == 1 || strcmp(a->name, b->name) == 0;
}

int remat_cli_same_file(const char *a, const char *b) {
    ident x = identify(a), y = identify(b);
    return same(&x, &y);
}

static int refuse(const char *cmd, const cli_file *o, const cli_file *other) {
    fprintf(stderr,
            "remat %s: %s: %s: is the same file as %s %s (expected a different output path; nothing was written)\n",
            cmd, o->path, o->flag, other->flag, other->path);
    return 2;
}

int remat_cli_refuse_overlap(const char *cmd, const cli_file *in, int n_in, const cli_file *out, int n_out) {
    int rc = remat_cli_refuse_same_file(cmd, in, n_in, out, n_out);
    /* every output writable, checked before the run or search, not after it */
    for (int i = 0; i < n_out && rc == 0; i++) {
        if (!out[i].path) continue;
        remat_error err = {0};
        if (remat_afile_check(out[i].path, &err) != REMAT_OK) {
            fprintf(stderr, "remat %s: %s: %s\n", cmd, out[i].flag, err.msg);
            rc = 2;
        }
    }
    return rc;
}

int remat_cli_refuse_same_file(const char *cmd, const cli_file *in, int n_in, const cli_file *out, int n_out) {
    for (int i = 0; i < n_out; i++) {
        if (!out[i].path) continue;
        ident oi = identify(out[i].path);
        if (oi.kind == 0) continue;
        for (int k = 0; k < n_in; k++) {
            if (!in[k].path) continue;
            ident ik = identify(in[k].path);
            if (same(&oi, &ik)) return refuse(cmd, &out[i], &in[k]);
        }
        for (int k = 0; k < i; k++) {
            if (!out[k].path) continue;
            ident ok = identify(out[k].path);
            if (same(&oi, &ok)) return refuse(cmd, &out[i], &out[k]);
        }
    }
    return 0;
}
