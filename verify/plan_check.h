/* plan_check.h - `remat verify --model M --plan P`: proves a plan changes when
 * tensors live, never what they hold, and that it did something.
 *
 * From the same seed, the plan that checkpoints nothing (the baseline) and the plan
 * each run one training step without the optimiser, on the same backend. Then:
 *  - every tensor of the step (verify/capture.h) must be equal bit for bit;
 *  - the plan must hold fewer bytes at the end of forward AND have a lower peak of
 *    live bytes than the baseline (otherwise "saves nothing" / "peak not reduced"),
 *    and its peak reserved bytes (the caching allocator model: what runs out on a
 *    GPU) must not be above the baseline's ("reserved-higher"); the verdict gives
 *    both savings, live and reserved;
 *  - the executor's count of recomputed layer forwards (and of distinct layers)
 *    must equal what the plan implies (verify/expect.h);
 *  - every compression of the plan run must be lossless: the executor's own check
 *    (remat_exec_opts.check_compression: each compressed input decompressed right
 *    away and compared) must have compared every compression and found no
 *    difference, and verify/check_backend.h, between the executor and the backend,
 *    must have seen every compressed buffer decode (host reference decoder) and
 *    every decompression restore the original bit for bit;
 *  - the number of compressions must be the number of compressed segments the plan
 *    implies (reported with the recomputation check).
 *
 *   remat_verify_opts o = remat_verify_opts_default(); o.seed = 7;
 *   remat_verify_result r;
 *   remat_verify_plan_run(&model, &plan, &be, &o, &r, &err);
 *   if (r.failures) ... remat_verify_verdict(r.failures) ...
 *   remat_verify_result_free(&r);
 */
#ifndef REMAT_VERIFY_PLAN_CHECK_H
#define REMAT_VERIFY_PLAN_CHECK_H

#include <stdint.h>

#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"
#include "verify/check_backend.h"
#include "verify/compare.h"
#include "verify/expect.h"
#include "verify/tensor_set.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Failure bits of a verification (0: the plan passes). */
enum {
    REMAT_VERIFY_FAIL_TENSORS = 1 << 0,   /* some tensor differs in at least one bit */
    REMAT_VERIFY_FAIL_LOSSY = 1 << 1,     /* a compression did not round-trip bit for bit */
    REMAT_VERIFY_FAIL_RECOMPUTE = 1 << 2, /* recomputed layers (or compressions) differ from the plan */
    REMAT_VERIFY_FAIL_NO_SAVING = 1 << 3, /* neither end-of-forward bytes nor peak are lower */
    REMAT_VERIFY_FAIL_PEAK = 1 << 4,      /* end-of-forward bytes lower, peak not lower */
    REMAT_VERIFY_FAIL_RESERVED = 1 << 5,  /* peak reserved bytes above the baseline's */
};
#define REMAT_VERIFY_FAIL_BITS 6

typedef struct remat_verify_opts {
    uint64_t seed;
    remat_fault fault;       /* applied to the plan run only (tests) */
    int check_compress;      /* 1 (default): executor's check_compression + the checking backend */
    const float *const *init_values; /* NULL, or initial parameters for both runs (remat_exec_opts) */
} remat_verify_opts;

remat_verify_opts remat_verify_opts_default(void);

/* The baseline run, kept to verify many plans against it (the grid). */
typedef struct remat_verify_baseline {
    remat_verify_set tensors;
    remat_step_result res;
    double wall_s;           /* wall time of init + step + capture */
    uint64_t seed;
} remat_verify_baseline;

remat_status remat_verify_baseline_run(const remat_model *m, remat_backend *b, const remat_verify_opts *o,
                                       remat_verify_baseline *out, remat_error *err);
void remat_verify_baseline_free(remat_verify_baseline *bl);

typedef struct remat_verify_result {
    remat_verify_cmp cmp;            /* baseline (a) against plan (b) */
    remat_step_result base, plan;
    double base_wall_s, plan_wall_s;
    remat_verify_expect expect;
    remat_verify_check_stats compress; /* zero when check_compress was 0 */
    int compress_checked;            /* 1 when the checking backend was used */
    unsigned failures;               /* REMAT_VERIFY_FAIL_* bits */
} remat_verify_result;

/* Runs the plan and compares it with bl (which must come from the same model,
 * backend and seed). Returns REMAT_OK when the verification ran, whatever it found
 * (read out->failures); an error only when something could not run. */
remat_status remat_verify_plan_against(const remat_verify_baseline *bl, const remat_model *m, const remat_plan *p,
                                       remat_backend *b, const remat_verify_opts *o, remat_verify_result *out,
                                       remat_error *err);
/* The failure bits of a filled result (cmp, base, plan, expect, compress): what
 * remat_verify_plan_against stores in failures. check_compress as in the options. */
unsigned remat_verify_judge(const remat_verify_result *r, int check_compress);
/* Baseline, then remat_verify_plan_against. */
remat_status remat_verify_plan_run(const remat_model *m, const remat_plan *p, remat_backend *b,
                                   const remat_verify_opts *o, remat_verify_result *out, remat_error *err);
void remat_verify_result_free(remat_verify_result *r);

/* The equivalence failures (the determinism contract) and the memory ones. */
#define REMAT_VERIFY_FAIL_EQUIVALENCE (REMAT_VERIFY_FAIL_TENSORS | REMAT_VERIFY_FAIL_LOSSY | REMAT_VERIFY_FAIL_RECOMPUTE)
#define REMAT_VERIFY_FAIL_MEMORY (REMAT_VERIFY_FAIL_NO_SAVING | REMAT_VERIFY_FAIL_PEAK | REMAT_VERIFY_FAIL_RESERVED)

/* The failures that decide the verdict and the exit code: all of them (one plan and
 * a grid alike), or with equivalence_only (`verify --equivalence-only`) the
 * equivalence ones alone. */
unsigned remat_verify_counted(unsigned failures, int equivalence_only);

/* One word for the most serious failure: "identical", "mismatch", "lossy",
 * "recompute-mismatch", "saves-nothing", "peak-not-reduced", "reserved-higher". */
const char *remat_verify_verdict(unsigned failures);
/* Fraction saved, 1 - plan/base (0 when base <= 0). */
double remat_verify_saving(int64_t base, int64_t plan);

#ifdef __cplusplus
}
#endif
#endif
