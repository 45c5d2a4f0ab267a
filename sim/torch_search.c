/* torch_search.c - the plan search on a recorded PyTorch step (torch_sim.h). */
#include <string.h>

#include "sim/torch_sim.h"

/* Block b in p: 0 stored, 1 checkpointed, 2 checkpointed with the bit compressor. 0 when
 * that is not a valid option for the block (bit on a block whose input is not spikes). */
static int set_block(remat_plan *p, const remat_model *m, int b, int how) {
    remat_block_plan *bp = &p->blocks[b];
    memset(bp, 0, sizeof *bp);
    bp->k = 1;
    if (!how) return 1;
    bp->checkpoint = 1;
    bp->compressor = how == 2 ? REMAT_COMP_BIT : REMAT_COMP_NONE;
    return how == 1 || m->blocks[b].in_values == REMAT_VALUES_BINARY;
}

typedef struct best {
    int have, fits;
    int64_t peak, cost;
    unsigned char *on;
    remat_torch_pred pred;
} best;

/* Evaluates the plan with blocks on[]; keeps it in *b when better. 0 on error. */
static remat_status evaluate(const remat_ext_trace *t, const remat_model *m, remat_plan *p, const unsigned char *on,
                             int64_t budget, remat_torch_exec how, const char *origin, best *b, remat_torch_pred *pr,
                             int64_t *evaluated,
                             remat_error *err) {
    for (int i = 0; i < m->n_blocks; i++)
        if (!set_block(p, m, i, on[i])) return REMAT_OK; /* not an option: skipped */
    remat_error e = {REMAT_OK, {0}};
    if (remat_plan_validate(p, m, origin, &e) != REMAT_OK) return REMAT_OK; /* not a plan: skipped */
    remat_torch_pred r;
    remat_status st = remat_torch_sim_run(t, m, p, how, origin, &r, &e);
    if (st == REMAT_ERR_NOMEM) return remat_error_set(err, st, "%s", e.msg);
    if (st != REMAT_OK) return REMAT_OK; /* a unit this recording cannot predict: skipped */
    (*evaluated)++;
    if (pr) *pr = r;
    int fits = r.peak_live_bytes <= budget;
    int better = !b->have || (fits && !b->fits) ||
                 (fits == b->fits && (fits ? (r.replayed_bytes < b->cost ||
                                              (r.replayed_bytes == b->cost && r.peak_live_bytes < b->peak))
                                           : r.peak_live_bytes < b->peak));
    if (better) {
        b->have = 1;
        b->fits = fits;
        b->peak = r.peak_live_bytes;
        b->cost = r.replayed_bytes;
        b->pred = r;
        memcpy(b->on, on, (size_t)m->n_blocks);
    }
    return REMAT_OK;
}

remat_status remat_torch_search(const remat_ext_trace *t, const remat_model *m, int64_t budget, remat_torch_exec how,
                                const char *origin, remat_torch_search_result *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_status st = remat_plan_init_empty(m, &out->plan, err);
    if (st != REMAT_OK) return st;
    st = remat_torch_sim_run(t, m, NULL, how, origin, &out->plain, err);
    if (st != REMAT_OK) return st;
    const int nb = m->n_blocks;
    unsigned char *on = remat_xcalloc((size_t)nb + 1, 1, err), *keep = remat_xcalloc((size_t)nb + 1, 1, err);
    best b = {0};
    b.on = keep;
    if (!on || !keep) {
        remat_xfree(on);
        remat_xfree(keep);
        return REMAT_ERR_NOMEM;
    }
    if (nb <= REMAT_TORCH_SEARCH_EXHAUSTIVE) { /* every block: stored, checkpointed, checkpointed with bit */
        int64_t total = 1;
        for (int i = 0; i < nb; i++) total *= 3;
        for (int64_t code = 0; code < total && st == REMAT_OK; code++) {
            int64_t c = code;
            for (int i = 0; i < nb; i++, c /= 3) on[i] = (unsigned char)(c % 3);
            st = evaluate(t, m, &out->plan, on, budget, how, origin, &b, NULL, &out->evaluated, err);
        }
    } else { /* greedy: add the block that lowers the peak most per replayed byte, until it fits */
        /* from every block stored: the answer when the plain step fits already */
        st = evaluate(t, m, &out->plan, on, budget, how, origin, &b, NULL, &out->evaluated, err);
        int64_t cur_peak = out->plain.peak_live_bytes, cur_cost = 0;
        for (int round = 0; round < nb && st == REMAT_OK && cur_peak > budget; round++) {
            int pick = -1;
            double pick_gain = 0;
            int64_t pick_peak = 0, pick_cost = 0;
            for (int cand = 0; cand < 2 * nb && st == REMAT_OK; cand++) {
                int i = cand / 2;
                if (on[i]) continue;
                on[i] = (unsigned char)(1 + cand % 2);
                remat_torch_pred r;
                memset(&r, 0, sizeof r);
                int64_t before = out->evaluated;
                st = evaluate(t, m, &out->plan, on, budget, how, origin, &b, &r, &out->evaluated, err);
                on[i] = 0;
                if (st != REMAT_OK || out->evaluated == before) continue;
                double gain = (double)(cur_peak - r.peak_live_bytes) / (double)(r.replayed_bytes - cur_cost + 1);
                if (r.peak_live_bytes < cur_peak && (pick < 0 || gain > pick_gain)) {
                    pick = cand, pick_gain = gain, pick_peak = r.peak_live_bytes, pick_cost = r.replayed_bytes;
                }
            }
            if (pick < 0) break;
            on[pick / 2] = (unsigned char)(1 + pick % 2);
            cur_peak = pick_peak;
            cur_cost = pick_cost;
        }
    }
    if (st == REMAT_OK) {
        for (int i = 0; i < nb; i++) (void)set_block(&out->plan, m, i, b.have ? keep[i] : 0);
        out->found = b.have && b.fits;
        out->pred = b.have ? b.pred : out->plain;
        if (!b.have) out->pred = out->plain;
    }
    remat_xfree(on);
    remat_xfree(keep);
    return st;
}
