/* fuzz_model.c - libFuzzer target for the model reader (core/model/model_json.c).
 *
 * Every input either loads as a model that satisfies the invariants of model.h,
 * or is refused with one printable line "<origin>: <field>: <expected>" and status
 * REMAT_ERR_INPUT. Loaded models are also rescaled, given an empty plan and, when
 * small, their block options enumerated. Nothing may leak (checked through the
 * remat_xmalloc accounting as well as by LeakSanitizer). Build and run: fuzz/run.sh. */
#include <stdint.h>

#include "core/model/layers.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/model/plan_grid.h"
#include "fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_model(const remat_model *m) {
    FUZZ_CHECK(m->T >= 1 && m->N >= 1 && m->in_features >= 1 && m->classes >= 1);
    FUZZ_CHECK(m->n_layers >= 1 && m->n_blocks >= 1 && m->n_blocks <= m->n_layers);
    FUZZ_CHECK(m->layers[m->n_layers - 1].out_features == m->classes);
    FUZZ_CHECK(m->text && m->path && strcmp(m->path, "fuzz") == 0);
    int next = 0;
    for (int b = 0; b < m->n_blocks; b++) {
        const remat_block *blk = &m->blocks[b];
        FUZZ_CHECK(blk->first_layer == next && blk->n_layers >= 1);
        FUZZ_CHECK(remat_model_find_block(m, blk->name) == b);
        for (int i = blk->first_layer; i < blk->first_layer + blk->n_layers; i++) FUZZ_CHECK(m->layers[i].block == b);
        next += blk->n_layers;
    }
    FUZZ_CHECK(next == m->n_layers);
    for (int i = 0; i < m->n_layers; i++) {
        const remat_layer *l = &m->layers[i];
        /* a layer reads an earlier layer of its block, its block's input or the network input */
        FUZZ_CHECK(l->src >= REMAT_SRC_INPUT && l->src < i && l->src >= m->blocks[l->block].first_layer - 1);
        int64_t width = l->src == REMAT_SRC_INPUT ? m->in_features : m->layers[l->src].out_features;
        FUZZ_CHECK(l->in_features == width && l->out_features >= 1);
        FUZZ_CHECK(l->in_features == l->in.c * l->in.h * l->in.w && l->out_features == l->out.c * l->out.h * l->out.w);
        FUZZ_CHECK(l->out_features <= ((int64_t)1 << 31));
        if (l->type == REMAT_LAYER_ADD) {
            FUZZ_CHECK(l->src2 >= REMAT_SRC_INPUT && l->src2 < i);
            int64_t w2 = l->src2 == REMAT_SRC_INPUT ? m->in_features : m->layers[l->src2].out_features;
            FUZZ_CHECK(w2 == l->in_features);
        } else {
            FUZZ_CHECK(l->src2 == REMAT_SRC_NONE);
        }
        if (remat_layer_traits_of(l->type)->windowed)
            FUZZ_CHECK(l->in.nd >= 2 && l->win.kh >= 1 && l->win.sh >= 1 && l->out.h >= 1 && l->out.w >= 1 &&
                       l->win.kh <= l->in.h + 2 * l->win.ph && l->win.kw <= l->in.w + 2 * l->win.pw);
        FUZZ_CHECK(remat_model_find_layer(m, l->name) == i);
        FUZZ_CHECK((int)l->out_values >= REMAT_VALUES_BINARY && (int)l->out_values <= REMAT_VALUES_REAL);
        if (l->type == REMAT_LAYER_IF || l->type == REMAT_LAYER_LIF) FUZZ_CHECK(l->out_values == REMAT_VALUES_BINARY);
        if (l->type == REMAT_LAYER_LIF) FUZZ_CHECK(l->neuron.tau > 1.0f);
        if (l->type == REMAT_LAYER_DROPOUT) FUZZ_CHECK(l->p >= 0.0f && l->p < 1.0f);
        for (int p = 0; p < remat_layer_n_params(l); p++) {
            FUZZ_CHECK(remat_layer_param_name(l, p) != NULL);
            FUZZ_CHECK(remat_layer_param_elems(l, p) >= 1);
        }
        /* every activation stays under 1 TiB, so these products cannot overflow */
        FUZZ_CHECK(m->T * m->N * l->out_features <= ((int64_t)1 << 38));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t live0 = remat_xmem_live();
    remat_model m;
    remat_error err = {REMAT_OK, {0}};
    remat_status st = remat_model_parse((const char *)data, size, "fuzz", &m, &err);
    if (st != REMAT_OK) {
        fuzz_check_refusal(st, &err, "fuzz");
        FUZZ_CHECK(m.layers == NULL && m.blocks == NULL && m.text == NULL);
    } else {
        check_model(&m);
        /* The stored text reads back as the same model. */
        remat_model again;
        remat_error e2 = {REMAT_OK, {0}};
        FUZZ_CHECK(remat_model_parse(m.text, strlen(m.text), "fuzz", &again, &e2) == REMAT_OK);
        FUZZ_CHECK(again.n_layers == m.n_layers && again.n_blocks == m.n_blocks);
        remat_model_free(&again);
        /* Rescaling: doubling T may be refused (sizes), never crash. */
        remat_model r;
        remat_error e3 = {REMAT_OK, {0}};
        if (remat_model_rescale(&m, m.T * 2, 1, &r, &e3) == REMAT_OK) {
            FUZZ_CHECK(r.T == m.T * 2 && r.N == 1);
            check_model(&r);
            remat_model_free(&r);
        } else {
            fuzz_check_refusal(e3.status, &e3, "fuzz");
        }
        remat_plan p;
        remat_error e4 = {REMAT_OK, {0}};
        FUZZ_CHECK(remat_plan_init_empty(&m, &p, &e4) == REMAT_OK);
        FUZZ_CHECK(remat_plan_validate(&p, &m, "fuzz", &e4) == REMAT_OK);
        char *json = remat_plan_to_json(&p, &m, &e4);
        FUZZ_CHECK(json != NULL);
        remat_xfree(json);
        remat_plan_free(&p);
        if (m.n_blocks <= 8 && m.T <= 256) {
            for (int b = 0; b < m.n_blocks; b++) {
                remat_block_plan *opts = NULL;
                int n = 0;
                FUZZ_CHECK(remat_plan_grid_block_options(&m, b, &opts, &n, &e4) == REMAT_OK);
                FUZZ_CHECK(n >= 2 && !opts[0].checkpoint); /* stored, and checkpointed without compression */
                remat_xfree(opts);
            }
        }
        remat_model_free(&m);
    }
    FUZZ_CHECK(remat_xmem_live() == live0);
    return 0;
}
