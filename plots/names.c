/* names.c - peak places and plan names for figures; see names.h. */
#include "plots/names.h"

#include <stdio.h>
#include <string.h>

#include "core/model/plan.h"
#include "core/model/plan_notation.h"

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

void remat_plot_plan_label(const remat_trace *t, const remat_model *m, const char *fallback, char *buf, size_t len) {
    if (!t->plan_text || !t->plan_text[0]) {
        snprintf(buf, len, "%s", REMAT_PLAN_NOTATION_NONE);
        return;
    }
    remat_plan p;
    remat_error err = {0};
    if (!m || m->n_blocks <= 0 ||
        remat_plan_parse(t->plan_text, strlen(t->plan_text), "<trace>", m, &p, &err) != REMAT_OK) {
        snprintf(buf, len, "%s", fallback && *fallback ? fallback : "plan");
        return;
    }
    remat_plan_notation(&p, m, buf, len < 61 ? len : 61); /* 60 characters at most in a legend */
    remat_plan_free(&p);
}
