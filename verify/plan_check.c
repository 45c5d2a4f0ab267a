/* plan_check.c - baseline against plan: tensors, savings, recomputation, losslessness.
 *
 * Both runs use remat_exec_opts_default() with only the seed and the initial
 * parameters (and, for the plan, the fault) changed, so that the two runs differ in nothing but the plan.
 */
#define _POSIX_C_SOURCE 200809L
#include "verify/plan_check.h"

#include <string.h>
#include <time.h>

#include "core/base/clock.h"
#include "verify/capture.h"


remat_verify_opts remat_verify_opts_default(void) {
    remat_verify_opts o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    o.fault = REMAT_FAULT_NONE;
    o.check_compress = 1;
    return o;
}

remat_status remat_verify_baseline_run(const remat_model *m, remat_backend *b, const remat_verify_opts *o,
                                       remat_verify_baseline *out, remat_error *err) {
    memset(out, 0, sizeof *out);
    remat_plan empty;
    memset(&empty, 0, sizeof empty);
    remat_status st = remat_plan_init_empty(m, &empty, err);
    if (st != REMAT_OK) return st;
    remat_exec_opts eo = remat_exec_opts_default();
    eo.seed = o->seed;
    eo.init_values = o->init_values;
    double t0 = remat_now_s();
    st = remat_verify_capture_run(m, &empty, b, &eo, &out->tensors, &out->res, err);
    out->wall_s = remat_now_s() - t0;
    out->seed = o->seed;
    remat_plan_free(&empty);
    if (st != REMAT_OK) remat_verify_baseline_free(out);
    return st;
}

void remat_verify_baseline_free(remat_verify_baseline *bl) {
    remat_verify_set_free(&bl->tensors);
    memset(bl, 0, sizeof *bl);
}

double remat_verify_saving(int64_t base, int64_t plan) {
    if (base <= 0) return 0.0;
    return 1.0 - (double)plan / (double)base;
}

remat_status remat_verify_plan_against(const remat_verify_baseline *bl, const remat_model *m, const remat_plan *p,
                                       remat_backend *b, const remat_verify_opts *o, remat_verify_result *out,
                                       remat_error *err) {
    memset(out, 0, sizeof *out);
    out->base = bl->res;
    out->base_wall_s = bl->wall_s;
    out->expect = remat_verify_expect_plan(m, p);

    remat_exec_opts eo = remat_exec_opts_default();
    eo.seed = bl->seed;
    eo.fault = o->fault;
    eo.check_compression = o->check_compress;
    eo.init_values = o->init_values;

    remat_backend chk = {0};
    remat_backend *run_on = b;
    if (o->check_compress) {
        remat_status st = remat_verify_check_backend_init(&chk, b, err);
        if (st != REMAT_OK) return st;
        run_on = &chk;
        out->compress_checked = 1;
    }
    remat_verify_set got = {0};
    double t0 = remat_now_s();
    remat_status st = remat_verify_capture_run(m, p, run_on, &eo, &got, &out->plan, err);
    out->plan_wall_s = remat_now_s() - t0;
    if (o->check_compress) {
        remat_verify_check_backend_stats(&chk, &out->compress);
        chk.ops->destroy(chk.ctx);
    }
    if (st == REMAT_OK) st = remat_verify_compare(&bl->tensors, &got, &out->cmp, err);
    remat_verify_set_free(&got);
    if (st != REMAT_OK) return st;

    out->failures = remat_verify_judge(out, o->check_compress);
    return REMAT_OK;
}

unsigned remat_verify_judge(const remat_verify_result *r, int check_compress) {
    unsigned f = 0;
    if (r->cmp.n_different) f |= REMAT_VERIFY_FAIL_TENSORS;
    if (r->compress.format_bad || r->compress.roundtrip_bad) f |= REMAT_VERIFY_FAIL_LOSSY;
    if (check_compress &&
        (r->plan.compression_mismatches != 0 || r->plan.compressions_checked != r->plan.compressions))
        f |= REMAT_VERIFY_FAIL_LOSSY;
    if (r->plan.recomputed_layers != r->expect.recomputed_layers ||
        r->plan.recomputed_layer_set != r->expect.recomputed_layer_set ||
        r->plan.compressions != r->expect.compressed_segments)
        f |= REMAT_VERIFY_FAIL_RECOMPUTE;
    int eof_lower = r->plan.end_of_forward_bytes < r->base.end_of_forward_bytes;
    int peak_lower = r->plan.peak_live_bytes < r->base.peak_live_bytes;
    if (!eof_lower && !peak_lower)
        f |= REMAT_VERIFY_FAIL_NO_SAVING;
    else if (!peak_lower)
        f |= REMAT_VERIFY_FAIL_PEAK;
    if (r->plan.peak_reserved_bytes > r->base.peak_reserved_bytes) f |= REMAT_VERIFY_FAIL_RESERVED;
    return f;
}

remat_status remat_verify_plan_run(const remat_model *m, const remat_plan *p, remat_backend *b,
                                   const remat_verify_opts *o, remat_verify_result *out, remat_error *err) {
    remat_verify_baseline bl;
    remat_status st = remat_verify_baseline_run(m, b, o, &bl, err);
    if (st != REMAT_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    st = remat_verify_plan_against(&bl, m, p, b, o, out, err);
    remat_verify_baseline_free(&bl);
    return st;
}

void remat_verify_result_free(remat_verify_result *r) {
    remat_verify_cmp_free(&r->cmp);
    memset(r, 0, sizeof *r);
}

unsigned remat_verify_counted(unsigned failures, int equivalence_only) {
    return equivalence_only ? failures & REMAT_VERIFY_FAIL_EQUIVALENCE : failures;
}

const char *remat_verify_verdict(unsigned f) {
    if (f & REMAT_VERIFY_FAIL_TENSORS) return "mismatch";
    if (f & REMAT_VERIFY_FAIL_LOSSY) return "lossy";
    if (f & REMAT_VERIFY_FAIL_RECOMPUTE) return "recompute-mismatch";
    if (f & REMAT_VERIFY_FAIL_NO_SAVING) return "saves-nothing";
    if (f & REMAT_VERIFY_FAIL_PEAK) return "peak-not-reduced";
    if (f & REMAT_VERIFY_FAIL_RESERVED) return "reserved-higher";
    return "identical";
}
