/* file_kind.c - guessing a file's kind from its first bytes (rules in core/io/file_kind.h). */
#include "core/io/file_kind.h"

#include <stdio.h>
#include <string.h>

static int mentions(const char *text, size_t len, const char *key) {
    size_t k = strlen(key);
    for (size_t i = 0; i + k <= len; i++)
        if (text[i] == key[0] && memcmp(text + i, key, k) == 0) return 1;
    return 0;
}

remat_file_kind remat_file_kind_of_text(const char *text, size_t len) {
    static const unsigned char h5sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (!text) return REMAT_FILE_UNREADABLE;
    if (len >= 8 && memcmp(text, h5sig, 8) == 0) return REMAT_FILE_HDF5;
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) i++;
    if (i >= len || text[i] != '{') return REMAT_FILE_OTHER;
    if (mentions(text, len, "\"layers\"")) return REMAT_FILE_MODEL;
    if (mentions(text, len, "\"checkpoint\"") || mentions(text, len, "\"blocks\"")) return REMAT_FILE_PLAN;
    if (mentions(text, len, "\"points\"")) return REMAT_FILE_PARETO;
    if (mentions(text, len, "\"series\"")) return REMAT_FILE_SCALING;
    return REMAT_FILE_JSON;
}

remat_file_kind remat_file_kind_of(const char *path) {
    static char buf[65536]; /* not reentrant: called once per error message */
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) return REMAT_FILE_UNREADABLE;
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return remat_file_kind_of_text(buf, n);
}

const char *remat_file_kind_words(remat_file_kind k) {
    switch (k) {
    case REMAT_FILE_HDF5: return "an HDF5 file (a trace or a gradient dump)";
    case REMAT_FILE_MODEL: return "a model file (JSON with \"layers\")";
    case REMAT_FILE_PLAN: return "a plan file (JSON with block plans)";
    case REMAT_FILE_PARETO: return "a Pareto front (JSON with \"points\")";
    case REMAT_FILE_SCALING: return "a scaling file (JSON with \"series\")";
    case REMAT_FILE_JSON: return "a JSON file";
    case REMAT_FILE_OTHER: return "a file that is neither JSON nor HDF5";
    case REMAT_FILE_UNREADABLE: break;
    }
    return "an unreadable file";
}
