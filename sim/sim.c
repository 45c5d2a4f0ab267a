/* sim.c - the simulator: predicts the event stream, the peaks and the step time
 * of a checkpoint plan from one baseline trace (facade in sim/sim.h).
 *
 * Modelling assumptions (what the predictions rest on; each is checked or
 * measured where it can be):
 *
 *  1. One schedule. The predicted event stream is the one the executor produces:
 *     the simulator runs core/exec/executor.c itself on the dry backend (no memory, no
 *     data), so the scheduling rules exist once. Sizes of every tensor follow
 *     from the model and the plan, except sparse-compressed inputs (assumption 4).
 *  2. The baseline is reproducible. At load, the dry run of the empty plan must
 *     give the recorded event stream (kind, bytes, role, phase, block, layer of
 *     every event); otherwise the trace came from another version or was edited,
 *     and it is refused.
 *  3. Time. Each op lasts what the same op measured in the baseline (the least over
 *     its records of seconds per time step, times the op's time steps; rules in
 *     sim/op_cost.h); recomputation costs what the first forward cost; compress
 *     and decompress cost the trace's calibration per element. Ops run back to
 *     back on one compute stream: step time = sum of op durations, plus the host time
 *     between ops (a plain step's time minus its ops' time: the least of the recording's
 *     best warm step and the probe's plain steps at the recorded batch), plus, for every
 *     allocation event the predicted step has more (or fewer) than the recorded step of
 *     the same index, what an event more costs: the probe's checkpointed steps' least
 *     host gap less its plain steps', per event more (a checkpointed step's frees and
 *     re-allocations cost host time too, less than the average event: probe_host);
 *     without the probe's step times, the recorded step's host gap per event. The same
 *     at every size. The spike counting a
 *     recording run does for its trace is not modelled. With the copy stream (sim/des.h) compressions overlap compute.
 *  4. Data. The only data-dependent size is a sparse-compressed input: its non-zeros
 *     come from the baseline's counts for the same (step, producing layer); a
 *     rescaled tensor keeps the recorded density; a tensor the baseline did not
 *     count (a split point inside a block) takes the density of its block's output.
 *     Recomputation reproduces the first forward bit for bit (the determinism
 *     contract), so counts do not depend on the plan.
 *  5. Memory. Peaks come from replaying the predicted events in (time, seq)
 *     order through core/alloc/alloc_model.c, the allocator models the executor itself
 *     uses (exact live bytes; the CUDA caching allocator's rules), restarting at
 *     the executor's restart point of every step. With one stream the replay
 *     must agree with the dry run's own accounting; a disagreement is a bug and
 *     is reported as one. Expandable segments (a caching-model mode no real run
 *     uses here) are applied by the replay alone: placement does not change the
 *     event stream.
 *  6. Rescaling. Another T or N re-instantiates the model (remat_model_rescale)
 *     and re-runs the schedule: every size follows exactly; spike counts with
 *     density (assumption 4). Op costs at another batch follow the line through
 *     the recorded size and the trace's probe at another batch (a fixed part per op,
 *     e.g. packing a layer's weights, and a part per element: an N=2 step's ops cost
 *     far more per element than an N=32 step's); without a probe, and at another T,
 *     they scale with the elements they touch.
 */
#include "sim/sim.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/base/version.h"
#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "sim/des.h"
#include "sim/op_cost.h"

struct remat_sim {
    const remat_trace *base;
    remat_sim_opts o;
    char origin[256];
    remat_model base_model, model;
    remat_shard shard;
    int has_shard;
    remat_shard rec_shard; /* the recorded rank's world (a trace of mpirun -np R remat run --trace) */
    int has_rec_shard;
    remat_caching_config caching;
    remat_op_cost_model *cost;
    remat_nnz_table *nnz;
    remat_backend dry;
    remat_plan plan;
    int has_plan;
    const remat_plan *cur_plan; /* plan used by the hooks during a run */
    const remat_model *cur_model;
    remat_trace pred;
    int have_pred;
    remat_sim_summary res;
    remat_sim_iter *iters;
    remat_step_result *steps;
    int n_iters;
    double baseline_step;
    double host_gap; /* seconds of a recorded step outside its ops (assumption 3) */
    double host_per_event; /* host_gap per allocation event of that step (0: it had none) */
    int64_t unpriced, estimated, nnz_est;
    double *rates; /* [base_model.n_layers + 1] or NULL (remat_sim_set_rates) */
    char recorded_by_earlier[640]; /* remat_sim_summary.recorded_by_earlier */
};

remat_sim_opts remat_sim_opts_default(void) {
    remat_sim_opts o;
    memset(&o, 0, sizeof o);
    o.allocator = REMAT_ALLOC_EXACT;
    o.check_baseline = 1;
    return o;
}

/* ---- hooks ------------------------------------------------------------------- */

static double hook_op_cost(void *ctx, const remat_op_record *op) {
    remat_sim *s = ctx;
    remat_compressor c = REMAT_COMP_NONE;
    int ckpt = 0;
    if (s->cur_plan && op->block >= 0 && op->block < s->cur_plan->n_blocks) {
        c = s->cur_plan->blocks[op->block].compressor;
        ckpt = s->cur_plan->blocks[op->block].checkpoint;
    }
    remat_op_cost_rule rule;
    double d = remat_op_cost_predict_in(s->cost, op, c, ckpt, &rule);
    if (rule == REMAT_OP_COST_UNPRICED) s->unpriced++;
    else if (rule != REMAT_OP_COST_SAME_SHAPE && rule != REMAT_OP_COST_CALIBRATION) s->estimated++;
    return d;
}

static int64_t nnz_rule(const remat_sim *s, const remat_model *m, int iter, int layer, int64_t elems, int *exact) {
    if (s->rates && layer >= -1 && layer < s->base_model.n_layers && s->rates[layer + 1] >= 0) {
        *exact = 1; /* as the user expects it */
        return (int64_t)llround(s->rates[layer + 1] * (double)elems);
    }
    int found = 0;
    int64_t v = remat_nnz_table_lookup(s->nnz, iter, layer, elems, &found);
    *exact = found == 1;
    if (found == 0 && layer >= 0 && layer < m->n_layers) {
        /* not counted by the baseline: the density of the block's output */
        const remat_block *b = &m->blocks[m->layers[layer].block];
        v = remat_nnz_table_lookup(s->nnz, iter, b->first_layer + b->n_layers - 1, elems, &found);
    }
    return v;
}

static int64_t hook_nnz(void *ctx, int iter, int layer, int64_t elems) {
    remat_sim *s = ctx;
    int exact;
    int64_t v = nnz_rule(s, s->cur_model ? s->cur_model : &s->model, iter, layer, elems, &exact);
    if (!exact) s->nnz_est++;
    return v;
}

int64_t remat_sim_nnz(const remat_sim *s, int iter, int layer, int64_t elems) {
    int exact;
    return nnz_rule(s, &s->model, iter, layer, elems, &exact);
}

/* ---- helpers ------------------------------------------------------------------- */

static remat_status plan_copy(const remat_plan *src, remat_plan *dst, remat_error *err) {
    memset(dst, 0, sizeof *dst);
    dst->n_blocks = src->n_blocks;
    dst->blocks = remat_xmalloc((size_t)(src->n_blocks ? src->n_blocks : 1) * sizeof *dst->blocks, err);
    size_t lt = strlen(src->text ? src->text : ""), lp = strlen(src->path ? src->path : "");
    dst->text = remat_xmalloc(lt + 1, err);
    dst->path = remat_xmalloc(lp + 1, err);
    if (!dst->blocks || !dst->text || !dst->path) {
        remat_plan_free(dst);
        return REMAT_ERR_NOMEM;
    }
    if (src->n_blocks) memcpy(dst->blocks, src->blocks, (size_t)src->n_blocks * sizeof *dst->blocks);
    memcpy(dst->text, src->text ? src->text : "", lt + 1);
    memcpy(dst->path, src->path ? src->path : "", lp + 1);
    return REMAT_OK;
}

static const char *kind_name(int k) { return k == REMAT_EVENT_ALLOC ? "alloc" : k == REMAT_EVENT_FREE ? "free" : "?"; }

static void describe_event(const remat_event *e, char *buf, size_t len) {
    snprintf(buf, len, "%s %lld B [%lld, %lld, %lld, %lld]/%d enc %d role %s phase %s block %d layer %d",
             kind_name(e->kind), (long long)e->bytes, (long long)e->dims[0], (long long)e->dims[1],
             (long long)e->dims[2], (long long)e->dims[3], (int)e->ndim, (int)e->enc,
             remat_role_name((remat_role)e->role), remat_phase_name((remat_phase)e->phase), (int)e->block,
             (int)e->layer);
}

static int same_shape(const remat_event *x, const remat_event *y) {
    return x->enc == y->enc && x->ndim == y->ndim && x->time_dim == y->time_dim && x->batch_dim == y->batch_dim &&
           !memcmp(x->dims, y->dims, sizeof x->dims);
}

int64_t remat_sim_compare_events(const remat_trace *a, const remat_trace *b, char *what, size_t what_len) {
    int64_t n = a->n_events < b->n_events ? a->n_events : b->n_events;
    for (int64_t i = 0; i < n; i++) {
        const remat_event *x = &a->events[i], *y = &b->events[i];
        if (x->kind != y->kind || x->bytes != y->bytes || x->role != y->role || x->phase != y->phase ||
            x->block != y->block || x->layer != y->layer || !same_shape(x, y)) {
            if (what) {
                char dx[96], dy[96];
                describe_event(x, dx, sizeof dx);
                describe_event(y, dy, sizeof dy);
                snprintf(what, what_len, "event %lld: %s, not %s", (long long)i, dy, dx);
            }
            return i;
        }
    }
    if (a->n_events != b->n_events) {
        if (what)
            snprintf(what, what_len, "%lld events, not %lld", (long long)b->n_events, (long long)a->n_events);
        return n;
    }
    return -1;
}

static int blank(const char *s) {
    for (; s && *s; s++)
        if (!isspace((unsigned char)*s)) return 0;
    return 1;
}

/* ---- the dry run ----------------------------------------------------------------- */

static remat_status dry_run(remat_sim *s, const remat_model *m, const remat_plan *p, int iters, remat_trace *out,
                            remat_step_result *steps, remat_error *err) {
    remat_exec_opts eo = remat_exec_opts_default();
    eo.seed = s->base->seed;
    eo.no_input_grad = s->base->no_input_grad; /* the recorded run's choice */
    eo.caching = s->caching;
    /* A real segment cannot grow in place, and the executor refuses expandable
     * segments; the event stream does not depend on placement, so the executor
     * runs with fixed segments and the replay applies the expandable model. */
    eo.caching.expandable_segments = 0;
    eo.trace = out;
    eo.op_cost = hook_op_cost;
    eo.nnz_oracle = hook_nnz;
    eo.hook_ctx = s;
    eo.shard = s->has_shard && !s->o.ddp && m == &s->model ? &s->shard : NULL;
    if (m == &s->base_model && s->has_rec_shard) eo.shard = &s->rec_shard; /* the recorded rank, replayed as it ran */
    s->cur_plan = p;
    s->cur_model = m;
    s->unpriced = s->estimated = s->nnz_est = 0;
    remat_status st = remat_exec_run(m, p, &s->dry, &eo, iters, steps, err);
    s->cur_plan = NULL;
    s->cur_model = NULL;
    if (st != REMAT_OK) return st;
    snprintf(out->backend, sizeof out->backend, "sim");
    snprintf(out->allocator_config, sizeof out->allocator_config, "%s", s->base->allocator_config);
    out->threads = s->base->threads;
    snprintf(out->simd, sizeof out->simd, "%s", s->base->simd); /* the recording's path: its op times */
    memcpy(out->compress_s_per_elem, s->base->compress_s_per_elem, sizeof out->compress_s_per_elem);
    memcpy(out->decompress_s_per_elem, s->base->decompress_s_per_elem, sizeof out->decompress_s_per_elem);
    return REMAT_OK;
}

static remat_status check_baseline(remat_sim *s, remat_error *err) {
    const remat_trace *b = s->base;
    remat_plan empty;
    remat_status st = remat_plan_init_empty(&s->base_model, &empty, err);
    if (st != REMAT_OK) return st;
    remat_trace t;
    remat_trace_init(&t);
    remat_step_result *steps = remat_xcalloc((size_t)b->n_iters, sizeof *steps, err);
    if (!steps) {
        remat_plan_free(&empty);
        return REMAT_ERR_NOMEM;
    }
    remat_error e = {0};
    st = dry_run(s, &s->base_model, &empty, b->n_iters, &t, steps, &e);
    if (st != REMAT_OK) {
        st = remat_error_set(err, REMAT_ERR_INPUT, "%s: model: the executor cannot run the recorded model (%s)",
                             s->origin, e.msg);
    } else {
        char what[256];
        int64_t i = remat_sim_compare_events(b, &t, what, sizeof what);
        if (i >= 0 && b->remat_version[0] && strcmp(b->remat_version, REMAT_VERSION) != 0)
            /* an earlier release's executor: its stream is not this build's, and need not be;
             * what the simulator takes from the trace (model, op times, spike counts,
             * calibration) still holds. Said in the summary. */
            snprintf(s->recorded_by_earlier, sizeof s->recorded_by_earlier,
                     "recorded by remat %s, whose executor gave another event stream (%s): predictions are this "
                     "build's schedule priced with the recorded op times",
                     b->remat_version, what);
        else if (i >= 0)
            st = remat_error_set(err, REMAT_ERR_INPUT,
                                 "%s: events: expected the stream this build's executor gives for the recorded "
                                 "model (%s); recorded by another version or for another model",
                                 s->origin, what);
    }
    remat_xfree(steps);
    remat_trace_free(&t);
    remat_plan_free(&empty);
    return st;
}

/* The trace's own T, N and precision are those of the model text it carries. */
static remat_status check_recorded_model(const remat_sim *s, const remat_trace *b, remat_error *err) {
    const remat_model *m = &s->base_model;
    if (b->T != m->T || b->N != m->N)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: %s: expected the model text's %s = %lld, found %lld (the attribute and the model "
                               "disagree)",
                               s->origin, b->T != m->T ? "T" : "N", b->T != m->T ? "T" : "N",
                               (long long)(b->T != m->T ? m->T : m->N), (long long)(b->T != m->T ? b->T : b->N));
    if (b->precision != (int32_t)m->precision)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: precision: expected the model text's \"%s\", found \"%s\"", s->origin,
                               remat_precision_name(m->precision), remat_precision_name((remat_precision)b->precision));
    return REMAT_OK;
}

/* Step `it`'s time outside its ops (allocations, the batch, host work between ops);
 * the least over the steps when it < 0; 0 when a step's ops fill it. */
static double host_gap(const remat_trace *b, int32_t it) {
    double best = -1;
    for (int32_t i = it < 0 ? 0 : it; i < (it < 0 ? b->n_iters : it + 1); i++) {
        double ops = 0;
        for (int64_t k = 0; k < b->n_ops; k++)
            if (b->ops[k].iter == i) ops += b->ops[k].t_end - b->ops[k].t_start;
        double g = b->iters[i].step_time_s - ops;
        if (best < 0 || g < best) best = g;
    }
    return best > 0 ? best : 0;
}

/* The host time from the probe's warm steps (remat_trace.probe_steps) at the recorded
 * batch: *gap, the least host gap (step time minus its ops' time) of its plain steps
 * (a recording's two warm steps are few: the probe's later steps are warmer, and its op
 * times are those of its best step); *per_event, what an allocation event more adds: the
 * least host gap of its checkpointed steps less *gap, over their difference in events,
 * kept within [0, *gap per event of the plain step] (noise). A checkpointed step's extra
 * frees and re-allocations cost less than a step's average event, which carries the
 * batch and the host work between ops too (tiny-vgg-dvs and tiny-sew-resnet at N=2:
 * 0.36 us against 0.6 us, by CPU time). *found: 1 plain steps at the recorded batch, 2
 * and checkpointed ones too, 0 neither (a trace recorded before the probe kept its
 * steps' times). rec: the recorded step whose ops' elements the plain steps share. */
static remat_status probe_host(const remat_trace *b, int32_t rec, double *gap_out, double *per_event, int *found,
                               remat_error *err) {
    int64_t n = b->n_probe_steps;
    *found = 0;
    if (n <= 0 || !remat_trace_has_probe(b)) return REMAT_OK;
    double *ops = remat_xcalloc((size_t)n, sizeof *ops, err);
    int64_t *elems = remat_xcalloc((size_t)n, sizeof *elems, err);
    uint8_t *ck = remat_xcalloc((size_t)n, 1, err);
    if (!ops || !elems || !ck) {
        remat_xfree(ops);
        remat_xfree(elems);
        remat_xfree(ck);
        return REMAT_ERR_NOMEM;
    }
    for (int64_t k = 0; k < b->n_probe_ops; k++) {
        const remat_op_record *r = &b->probe_ops[k];
        if (r->iter < 0 || r->iter >= n) continue;
        ops[r->iter] += r->t_end - r->t_start;
        elems[r->iter] += r->elems;
        if (r->phase == REMAT_PHASE_RECOMPUTE) ck[r->iter] = 1;
    }
    int64_t rec_elems = 0;
    for (int64_t k = 0; k < b->n_ops; k++)
        if (b->ops[k].iter == rec) rec_elems += b->ops[k].elems;
    double gap[2] = {-1, -1}; /* least host gap: plain at the recorded batch, checkpointed */
    int64_t events[2] = {0, 0};
    for (int64_t i = 0; i < n; i++) {
        if (!ck[i] && elems[i] != rec_elems) continue;
        double g = b->probe_steps[i].step_time_s - ops[i];
        if (g < 0) g = 0;
        if (gap[ck[i]] < 0 || g < gap[ck[i]]) gap[ck[i]] = g, events[ck[i]] = b->probe_steps[i].n_events;
    }
    remat_xfree(ops);
    remat_xfree(elems);
    remat_xfree(ck);
    if (gap[0] < 0 || events[0] <= 0) return REMAT_OK;
    *gap_out = gap[0];
    *found = 1;
    if (gap[1] < 0 || events[1] == events[0]) return REMAT_OK;
    double v = (gap[1] - gap[0]) / (double)(events[1] - events[0]), avg = gap[0] / (double)events[0];
    *per_event = v < 0 ? 0 : v > avg ? avg : v;
    *found = 2;
    return REMAT_OK;
}

/* ---- facade ------------------------------------------------------------------------ */

/* The baseline trace: its schema, its steps, its model (T, N and precision its own) and no plan. */
static remat_status check_base(remat_sim *s, const remat_trace *base, remat_error *err) {
    char origin[300];
    if (base->schema_version > REMAT_TRACE_SCHEMA_VERSION)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: schema_version: expected <= %d, got %d", s->origin,
                               REMAT_TRACE_SCHEMA_VERSION, (int)base->schema_version);
    if (base->n_iters < 1)
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: iters: expected at least one recorded training step",
                               s->origin);
    snprintf(origin, sizeof origin, "%s: model_text", s->origin);
    remat_status st;
    if ((st = remat_model_parse(base->model_text ? base->model_text : "", strlen(base->model_text ? base->model_text : ""),
                                origin, &s->base_model, err)) != REMAT_OK)
        return st;
    if ((st = check_recorded_model(s, base, err)) != REMAT_OK) return st;
    if (!blank(base->plan_text)) { /* a plan file that checkpoints nothing is still plain backpropagation */
        remat_plan p;
        remat_error e = {0};
        snprintf(origin, sizeof origin, "%s: plan_text", s->origin);
        int ok = remat_plan_parse(base->plan_text, strlen(base->plan_text), origin, &s->base_model, &p, &e) == REMAT_OK;
        if (ok) {
            ok = remat_plan_is_empty(&p);
            remat_plan_free(&p);
        }
        if (!ok)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "%s: plan: expected a trace recorded without a plan (plain backpropagation); "
                                   "record the baseline with `remat run` without --plan",
                                   s->origin);
    }
    return REMAT_OK;
}

/* The allocator's settings: asked, else the recorded run's, else the defaults. */
static remat_status allocator_settings(remat_sim *s, const remat_trace *base, const remat_sim_opts *o,
                                       remat_error *err) {
    s->caching = remat_caching_config_default();
    if (o && o->allocator_config) return remat_caching_config_parse(o->allocator_config, &s->caching, err);
    if (!blank(base->allocator_config)) {
        remat_error e = {0};
        if (remat_caching_config_parse(base->allocator_config, &s->caching, &e) != REMAT_OK)
            return remat_error_set(err, REMAT_ERR_INPUT, "%s: allocator_config: %s", s->origin, e.msg);
    }
    return REMAT_OK;
}

/* rank 0's trace of a data-parallel run: its world's batch is ranks x N */
static remat_status recorded_world(remat_sim *s, const remat_trace *base, remat_error *err) {
    if (base->ranks <= 0) return REMAT_OK;
    s->rec_shard = (remat_shard){base->reduce_blocks, base->ranks, 0, base->N * base->ranks, NULL};
    remat_status st = remat_shard_check(&s->rec_shard, "simulate", err);
    if (st != REMAT_OK) return st;
    s->has_rec_shard = 1;
    if (s->o.ranks == 0 && s->o.reduce_blocks == 0 && !s->o.ddp) { /* no world asked: the recorded one */
        s->o.ranks = base->ranks;
        s->o.reduce_blocks = base->reduce_blocks;
    }
    return REMAT_OK;
}

/* The model to predict: rescaled to the asked T and batch, and to one rank's share. */
static remat_status predicted_model(remat_sim *s, const remat_trace *base, remat_error *err) {
    if (s->o.T < 0 || s->o.N < 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "rescale: T and N: expected positive values");
    /* the batch to predict: asked, else the recorded run's (a recorded rank's world's) */
    int64_t batch = s->o.N ? s->o.N : base->N * (base->ranks > 0 ? base->ranks : 1);
    remat_status st = remat_model_rescale(&s->base_model, s->o.T, batch, &s->model, err);
    if (st != REMAT_OK) return st;
    if (s->o.ranks > 1 || s->o.reduce_blocks > 1) { /* one rank of a data-parallel run: its share */
        int R = s->o.ranks > 0 ? s->o.ranks : 1;
        s->shard = (remat_shard){s->o.reduce_blocks > 0 ? s->o.reduce_blocks : R, R, 0, s->model.N, NULL};
        if (s->o.ddp) s->shard.blocks = R; /* DDP: whole shares, no blocks of remat's own */
        if ((st = remat_shard_check(&s->shard, "simulate", err)) != REMAT_OK) return st;
        remat_model share;
        if ((st = remat_model_rescale(&s->model, 0, remat_shard_local_n(&s->shard), &share, err)) != REMAT_OK)
            return st;
        remat_model_free(&s->model);
        s->model = share;
        s->has_shard = 1;
    }
    return REMAT_OK;
}

/* The steps to predict, and the baseline's warm step and host gap. */
static remat_status predicted_steps(remat_sim *s, const remat_trace *base, remat_error *err) {
    s->n_iters = s->o.iters > 0 ? s->o.iters : base->n_iters;
    if (s->o.iters <= 0 && s->o.steady && s->n_iters < REMAT_SIM_STEADY_ITERS) s->n_iters = REMAT_SIM_STEADY_ITERS;
    s->iters = remat_xcalloc((size_t)s->n_iters, sizeof *s->iters, err);
    s->steps = remat_xcalloc((size_t)s->n_iters, sizeof *s->steps, err);
    if (!s->iters || !s->steps) return REMAT_ERR_NOMEM;
    /* warm steps: every one after the first when there are several */
    int32_t first = base->n_iters > 1 ? 1 : 0;
    for (int32_t i = first; i < base->n_iters; i++) s->baseline_step += base->iters[i].step_time_s;
    s->baseline_step /= base->n_iters - first;
    int32_t best = remat_op_cost_best_step(base);
    s->host_gap = host_gap(base, best);
    int64_t ev = base->iters[best < 0 ? 0 : best].n_events;
    s->host_per_event = ev > 0 ? s->host_gap / (double)ev : 0;
    double gap = 0, per_event = 0;
    int found = 0;
    remat_status st = probe_host(base, best < 0 ? 0 : best, &gap, &per_event, &found, err);
    if (found >= 1 && gap < s->host_gap) s->host_gap = gap; /* the least: other work only ever adds time */
    if (found == 2) s->host_per_event = per_event;
    return st;
}

remat_sim *remat_sim_init(const remat_trace *base, const remat_sim_opts *o, remat_error *err) {
    remat_sim *s = remat_xcalloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->base = base;
    s->o = o ? *o : remat_sim_opts_default();
    snprintf(s->origin, sizeof s->origin, "%s", s->o.origin ? s->o.origin : "<trace>");
    s->o.origin = NULL;
    s->o.allocator_config = NULL;
    remat_trace_init(&s->pred);
    remat_status st;
    if ((st = check_base(s, base, err)) != REMAT_OK) goto fail;
    if ((st = allocator_settings(s, base, o, err)) != REMAT_OK) goto fail;
    if (!(s->cost = remat_op_cost_init(base, err)) || !(s->nnz = remat_nnz_table_init(base, err))) {
        st = err->status;
        goto fail;
    }
    if ((st = remat_backend_dry_init_like(&s->dry, base->backend, err)) != REMAT_OK) goto fail;
    if ((st = recorded_world(s, base, err)) != REMAT_OK) goto fail;
    if (s->o.check_baseline && (st = check_baseline(s, err)) != REMAT_OK) goto fail;
    if ((st = predicted_model(s, base, err)) != REMAT_OK) goto fail;
    if ((st = predicted_steps(s, base, err)) != REMAT_OK) goto fail;
    if ((st = remat_plan_init_empty(&s->model, &s->plan, err)) != REMAT_OK) goto fail;
    s->has_plan = 1;
    return s;
fail:
    if (err && err->status == REMAT_OK) remat_error_set(err, st ? st : REMAT_ERR_INTERNAL, "simulator: init failed");
    remat_sim_free(s);
    return NULL;
}

void remat_sim_free(remat_sim *s) {
    if (!s) return;
    if (s->has_plan) remat_plan_free(&s->plan);
    remat_trace_free(&s->pred);
    remat_op_cost_free(s->cost);
    remat_nnz_table_free(s->nnz);
    if (s->dry.ops) remat_backend_free(&s->dry);
    remat_model_free(&s->model);
    remat_model_free(&s->base_model);
    remat_xfree(s->iters);
    remat_xfree(s->steps);
    remat_xfree(s->rates);
    remat_xfree(s);
}

const remat_model *remat_sim_model(const remat_sim *s) { return &s->model; }
const remat_shard *remat_sim_shard(const remat_sim *s) { return s->has_shard ? &s->shard : NULL; }
const remat_model *remat_sim_base_model(const remat_sim *s) { return &s->base_model; }
const remat_plan *remat_sim_plan(const remat_sim *s) { return &s->plan; }
const remat_sim_summary *remat_sim_results(const remat_sim *s) { return &s->res; }
const remat_trace *remat_sim_trace(const remat_sim *s) { return &s->pred; }
double remat_sim_baseline_step_time(const remat_sim *s) { return s->baseline_step; }
int remat_sim_times_warm(const remat_sim *s) { return s->base->n_iters > 1; }
int remat_sim_has_probe(const remat_sim *s) { return remat_trace_has_probe(s->base); }
double remat_sim_host_gap(const remat_sim *s) { return s->host_gap; }
double remat_sim_host_per_event(const remat_sim *s) { return s->host_per_event; }
double remat_sim_host_time(const remat_sim *s, int iter, int64_t events) {
    const remat_trace *b = s->base;
    int32_t i = iter < 0 ? 0 : iter < b->n_iters ? iter : b->n_iters - 1;
    double v = s->host_gap + s->host_per_event * (double)(events - b->iters[i].n_events);
    return v > 0 ? v : 0;
}

remat_status remat_sim_set_rates(remat_sim *s, const double *rates, int n, remat_error *err) {
    remat_xfree(s->rates);
    s->rates = NULL;
    if (!rates) return REMAT_OK;
    if (n != s->base_model.n_layers + 1)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "sim: rates: expected %d entries, got %d",
                               s->base_model.n_layers + 1, n);
    for (int i = 0; i < n; i++)
        if (rates[i] > 1.0 || rates[i] != rates[i])
            return remat_error_set(err, REMAT_ERR_INPUT, "--rates: %s: expected a rate in [0, 1], got %g",
                                   i ? s->base_model.layers[i - 1].name : "input", rates[i]);
    if (!(s->rates = remat_xmalloc((size_t)n * sizeof *s->rates, err))) return REMAT_ERR_NOMEM;
    memcpy(s->rates, rates, (size_t)n * sizeof *s->rates);
    return REMAT_OK;
}

int64_t remat_sim_peak(const remat_sim *s) {
    return s->o.allocator == REMAT_ALLOC_CACHING ? s->res.peak_reserved_bytes : s->res.peak_live_bytes;
}

remat_status remat_sim_set_plan(remat_sim *s, const remat_plan *p, remat_error *err) {
    remat_plan np;
    remat_status st = p ? plan_copy(p, &np, err) : remat_plan_init_empty(&s->model, &np, err);
    if (st != REMAT_OK) return st;
    if ((st = remat_plan_validate(&np, &s->model, np.path && np.path[0] ? np.path : "<plan>", err)) != REMAT_OK) {
        remat_plan_free(&np);
        return st;
    }
    if (s->has_plan) remat_plan_free(&s->plan);
    s->plan = np;
    s->has_plan = 1;
    return REMAT_OK;
}

remat_status remat_sim_run(remat_sim *s, remat_error *err) {
    remat_trace_free(&s->pred);
    remat_trace_init(&s->pred);
    s->have_pred = 0;
    memset(&s->res, 0, sizeof s->res);
    memcpy(s->res.recorded_by_earlier, s->recorded_by_earlier, sizeof s->res.recorded_by_earlier);
    memset(s->steps, 0, (size_t)s->n_iters * sizeof *s->steps);
    remat_status st = dry_run(s, &s->model, &s->plan, s->n_iters, &s->pred, s->steps, err);
    if (st != REMAT_OK) return st;
    s->have_pred = 1;
    if (s->pred.n_iters != s->n_iters)
        return remat_error_set(err, REMAT_ERR_INTERNAL, "sim: dry run recorded %d steps, expected %d",
                               (int)s->pred.n_iters, s->n_iters);

    remat_des_schedule_result sched = {0}, flat = {0};
    if (s->o.copy_stream) {
        if ((st = remat_des_schedule(&s->pred, 1, &sched, err)) != REMAT_OK) return st;
        if ((st = remat_des_schedule(&s->pred, 0, &flat, err)) != REMAT_OK) {
            remat_des_schedule_free(&sched);
            return st;
        }
    }
    remat_des_replay_opts ro = remat_des_replay_opts_default();
    ro.caching = s->caching;
    remat_des_iter_peaks *pk = remat_xcalloc((size_t)s->n_iters, sizeof *pk, err);
    if (!pk) {
        remat_des_schedule_free(&sched);
        remat_des_schedule_free(&flat);
        return REMAT_ERR_NOMEM;
    }
    st = remat_des_replay(&s->pred, s->o.copy_stream ? sched.event_time : NULL, &ro, pk, s->n_iters, err);
    for (int i = 0; st == REMAT_OK && i < s->n_iters; i++) {
        const remat_step_result *r = &s->steps[i];
        remat_sim_iter *it = &s->iters[i];
        /* one stream: the replay must agree with the executor's own accounting (the
         * caching figures only when the executor ran the same caching model) */
        int same_caching = !s->caching.expandable_segments;
        if (!s->o.copy_stream &&
            (pk[i].peak_live_bytes != r->peak_live_bytes || pk[i].end_of_forward_live != r->end_of_forward_bytes ||
             (same_caching && (pk[i].peak_reserved_bytes != r->peak_reserved_bytes ||
                               pk[i].peak_allocated_bytes != r->peak_allocated_bytes ||
                               pk[i].end_of_forward_reserved != r->end_of_forward_reserved)))) {
            st = remat_error_set(err, REMAT_ERR_INTERNAL,
                                 "sim: step %d: replay gives peaks live/allocated/reserved %lld/%lld/%lld and end of "
                                 "forward %lld/%lld, the executor's accounting %lld/%lld/%lld and %lld/%lld",
                                 i, (long long)pk[i].peak_live_bytes, (long long)pk[i].peak_allocated_bytes,
                                 (long long)pk[i].peak_reserved_bytes, (long long)pk[i].end_of_forward_live,
                                 (long long)pk[i].end_of_forward_reserved, (long long)r->peak_live_bytes,
                                 (long long)r->peak_allocated_bytes, (long long)r->peak_reserved_bytes,
                                 (long long)r->end_of_forward_bytes, (long long)r->end_of_forward_reserved);
            break;
        }
        it->peak_live_bytes = pk[i].peak_live_bytes;
        it->peak_reserved_bytes = pk[i].peak_reserved_bytes;
        it->peak_allocated_bytes = pk[i].peak_allocated_bytes;
        it->end_of_forward_bytes = pk[i].end_of_forward_live;
        it->end_of_forward_reserved = pk[i].end_of_forward_reserved;
        it->step_time_s = r->step_time_s + remat_sim_host_time(s, i, r->events);
        if (s->o.copy_stream) it->step_time_s += sched.iter_time[i] - flat.iter_time[i];
        it->events = r->events;
        remat_sim_summary *R = &s->res;
        if (it->peak_live_bytes > R->peak_live_bytes) R->peak_live_bytes = it->peak_live_bytes;
        if (it->peak_reserved_bytes > R->peak_reserved_bytes) R->peak_reserved_bytes = it->peak_reserved_bytes;
        if (it->peak_allocated_bytes > R->peak_allocated_bytes) R->peak_allocated_bytes = it->peak_allocated_bytes;
        if (it->end_of_forward_bytes > R->end_of_forward_bytes) R->end_of_forward_bytes = it->end_of_forward_bytes;
        if (it->end_of_forward_reserved > R->end_of_forward_reserved)
            R->end_of_forward_reserved = it->end_of_forward_reserved;
        if (r->compressed_bytes > R->compressed_bytes) R->compressed_bytes = r->compressed_bytes;
        R->recomputed_layers = r->recomputed_layers;
        R->step_time_s += it->step_time_s / s->n_iters;
    }
    for (int i = 0; i < s->n_iters; i++) s->res.events += s->iters[i].events;
    s->res.trace_events = s->pred.n_events;
    s->res.unpriced_ops = s->unpriced;
    s->res.estimated_ops = s->estimated;
    s->res.nnz_estimated = s->nnz_est;
    s->res.delayed_frees = sched.delayed_frees;
    s->res.n_iters = s->n_iters;
    s->res.iters = s->iters;
    s->res.steady = s->n_iters >= REMAT_SIM_STEADY_ITERS;
    remat_xfree(pk);
    remat_des_schedule_free(&sched);
    remat_des_schedule_free(&flat);
    return st;
}

remat_status remat_sim_open(const char *path, const remat_sim_opts *o, remat_trace *trace, remat_sim **out,
                            remat_error *err) {
    *out = NULL;
    remat_trace_init(trace);
    remat_status st = remat_trace_read_h5(path, trace, err);
    if (st != REMAT_OK) return st;
    remat_sim_opts so = o ? *o : remat_sim_opts_default();
    if (!so.origin) so.origin = path;
    *out = remat_sim_init(trace, &so, err);
    return *out ? REMAT_OK : (err && err->status != REMAT_OK ? err->status : REMAT_ERR_INTERNAL);
}

int remat_sim_allocator_from_name(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "exact")) return REMAT_ALLOC_EXACT;
    if (!strcmp(s, "caching")) return REMAT_ALLOC_CACHING;
    return -1;
}

remat_status remat_sim_opts_from_flags(const char *alloc, const char *alloc_cfg, int64_t N, int64_t T, int iters,
                                       remat_sim_opts *out, remat_error *err) {
    *out = remat_sim_opts_default();
    int kind = remat_sim_allocator_from_name(alloc);
    if (kind < 0)
        return remat_error_set(err, REMAT_ERR_INPUT, "--allocator: expected exact or caching, got '%s'",
                               alloc ? alloc : "");
    if (N < 0 || T < 0 || iters < 0 || iters > 100000)
        return remat_error_set(err, REMAT_ERR_INPUT, "--N/--T/--iters: expected positive values (0 = as recorded)");
    out->allocator = (remat_alloc_kind)kind;
    out->allocator_config = alloc_cfg;
    out->N = N;
    out->T = T;
    out->iters = iters;
    out->steady = 1;
    return REMAT_OK;
}
