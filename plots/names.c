/* names.c - peak places and plan names for figures; see names.h. */
#include "plots/names.h"

#include <stdio.h>
#include <string.h>

#include "core/model/plan.h"

int remat_plot_model_of(const remat_trace *t, remat_model *m) {
    memset(m, 0, sizeof *m);
    if (!t->model_text || !t->model_text[0]) return 0;
    remat_error err = {0};
    if (remat_model_parse(t->model_text, strlen(t->model_text), "<trace>", m, &err) != REMAT_OK) {
        memset(m, 0, sizeof *m);
        return 0;
    }
    return 1;
}

void remat_plot_site_name(const remat_model *m, int32_t block, int32_t layer, char *buf, size_t len) {
    int have = m && m->n_layers > 0;
    const char *bn = have && block >= 0 && block < m->n_blocks ? m->blocks[block].name : NULL;
    const char *ln = have && layer >= 0 && layer < m->n_layers ? m->layers[layer].name : NULL;
    if (!bn && ln && m->layers[layer].block >= 0 && m->layers[layer].block < m->n_blocks)
        bn = m->blocks[m->layers[layer].block].name;
    char b[REMAT_NAME_LEN + 16], l[REMAT_NAME_LEN + 16];
    if (bn) snprintf(b, sizeof b, "%s", bn);
    else if (block >= 0) snprintf(b, sizeof b, "block %d", block);
    else b[0] = 0;
    if (ln) snprintf(l, sizeof l, "%s", ln);
    else if (layer >= 0) snprintf(l, sizeof l, "layer %d", layer);
    else l[0] = 0;
    if (b[0] && l[0]) snprintf(buf, len, "%s/%s", b, l);
    else snprintf(buf, len, "%s%s", b, l);
}

void remat_plot_site_label(const remat_model *m, const remat_peak_site *s, char *buf, size_t len) {
    if (s->event < 0) {
        snprintf(buf, len, "start of iteration");
        return;
    }
    char site[112];
    remat_plot_site_name(m, s->block, s->layer, site, sizeof site);
    const char *ph = remat_phase_name((remat_phase)s->phase);
    if (site[0]) snprintf(buf, len, "%s, %s", site, ph);
    else snprintf(buf, len, "%s", ph);
}

static void block_opts(const remat_block_plan *b, char *buf, size_t len) {
    char parts[3][24];
    int n = 0;
    if (b->compressor != REMAT_COMP_NONE) snprintf(parts[n++], sizeof parts[0], "%s", remat_compressor_name(b->compressor));
    if (b->k > 1) snprintf(parts[n++], sizeof parts[0], "k=%d", b->k);
    if (b->n_splits > 0) snprintf(parts[n++], sizeof parts[0], "%d split%s", b->n_splits, b->n_splits > 1 ? "s" : "");
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        size_t u = strlen(buf);
        snprintf(buf + u, len - u, "%s%s", i ? ", " : "", parts[i]);
    }
}

void remat_plot_plan_label(const remat_trace *t, const remat_model *m, const char *fallback, char *buf, size_t len) {
    if (!t->plan_text || !t->plan_text[0]) {
        snprintf(buf, len, "baseline");
        return;
    }
    remat_plan p;
    remat_error err = {0};
    if (!m || m->n_blocks <= 0 ||
        remat_plan_parse(t->plan_text, strlen(t->plan_text), "<trace>", m, &p, &err) != REMAT_OK) {
        snprintf(buf, len, "%s", fallback && *fallback ? fallback : "plan");
        return;
    }
    if (remat_plan_is_empty(&p)) {
        snprintf(buf, len, "baseline");
        remat_plan_free(&p);
        return;
    }
    /* do all checkpointed blocks share their options? */
    char first[64] = "", o[64];
    int same = 1, seen = 0, total = 0;
    for (int i = 0; i < p.n_blocks; i++) {
        if (!p.blocks[i].checkpoint) continue;
        total++;
        block_opts(&p.blocks[i], o, sizeof o);
        if (!seen) { snprintf(first, sizeof first, "%s", o); seen = 1; }
        else if (strcmp(first, o) != 0) same = 0;
    }
    const size_t cap = len < 61 ? len : 61; /* 60 characters + NUL */
    char s[256];
    size_t u = (size_t)snprintf(s, sizeof s, "ckpt");
    int shown = 0;
    for (int i = 0; i < p.n_blocks; i++) {
        if (!p.blocks[i].checkpoint) continue;
        char item[160];
        block_opts(&p.blocks[i], o, sizeof o);
        if (same) snprintf(item, sizeof item, "%s%s", shown ? "," : " ", m->blocks[i].name);
        else if (o[0]) snprintf(item, sizeof item, " %s (%s)", m->blocks[i].name, o);
        else snprintf(item, sizeof item, " %s", m->blocks[i].name);
        char tail[96] = "";
        if (same && first[0]) snprintf(tail, sizeof tail, " (%s)", first);
        char more[32];
        snprintf(more, sizeof more, " ... +%d", total - shown);
        /* keep room for the shared options and a "... +n" */
        if (u + strlen(item) + strlen(tail) + (shown + 1 < total ? strlen(more) : 0) >= cap) {
            u += (size_t)snprintf(s + u, sizeof s - u, "%s", more);
            shown = -1;
            break;
        }
        u += (size_t)snprintf(s + u, sizeof s - u, "%s", item);
        shown++;
    }
    if (same && first[0]) snprintf(s + u, sizeof s - u, " (%s)", first);
    (void)shown;
    snprintf(buf, len, "%s", s);
    remat_plan_free(&p);
}
