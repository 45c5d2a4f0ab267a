/* torch_rescale.h - a recorded PyTorch step (core/io/ext_record.h) at another batch
 * size N, from two recordings of the same step at two batch sizes, only where exact.
 *
 *   remat_ext_trace a, b;  (read with remat_ext_trace_read_h5: N = 1 and N = 2, say)
 *   remat_torch_linear L;  remat_torch_linear_check(&a, "a.h5", &b, "b.h5", &L, &err);
 *   remat_torch_linear_apply(&L, 8, &a, &err);   // a now holds the step at N = 8
 *   ... remat_torch_sim_run(&a, ...) ...;  remat_torch_linear_free(&L);
 *
 * The check: the two recordings ran the same allocations and frees in the same order
 * (the same events, storages, modules, phases, marks and model apart from N), and every
 * allocation's bytes are either the same in both (parameters, their gradients, optimiser
 * state, batch-norm statistics) or proportional to N (s_a / N_a = s_b / N_b: activations,
 * saved tensors, pooling indices). Anything else (an allocation of 100 B at N = 1 and
 * 150 B at N = 2) is refused, naming the first one. The elements counted at each module's
 * input are checked the same way. The input's spike counts (the sparse compressor's
 * bytes) are dropped: they are the data's, not sizes, and even a batch of one sample
 * repeated spikes a little differently at another N (batch-norm statistics summed in
 * another order), so the sparse compressor is refused at a rescaled N. The storages that
 * existed before recording began are one sum (live_before_bytes): taken as a constant
 * part plus a part proportional to N (the batch), the only split two sums allow.
 *
 * Two recordings can refute linearity, not prove it: an allocation that is the same at
 * both batch sizes is taken as the same at every N. The prediction at a third N is
 * exact when the step at that N allocates as the two did (tests/torch_record_test
 * checks N = 4 from N = 1 and N = 2 against a real recording at N = 4).
 */
#ifndef REMAT_SIM_TORCH_RESCALE_H
#define REMAT_SIM_TORCH_RESCALE_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/io/ext_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_torch_linear {
    int64_t N_a;             /* the batch size of the trace the sizes come from */
    int64_t n_events, n_marks;
    int64_t *bytes;          /* event i's bytes at N_a */
    uint8_t *per_sample;     /* 1: event i's bytes proportional to N, 0: the same at every N */
    int64_t *numel;          /* mark m's element count at N_a (-1: none) */
    uint8_t *numel_ps;       /* 1: proportional to N, 0: the same */
    int64_t live_const, live_per_n; /* live_before_bytes = live_const + live_per_n * N */
    char *model_text;        /* the model file text of trace a (owned) */
    char origin_a[256], origin_b[256];
    char execution[256];     /* the recordings' execution ("PyTorch 1.13.0 on CPU, recorded") */
    int64_t N_b;
    int64_t proportional, constant; /* how many allocations of each kind */
} remat_torch_linear;

/* Checks that a and b (both with a /record) are the same step at two batch sizes with
 * every allocation constant or proportional to N, and fills *out. REMAT_ERR_INPUT with
 * one line naming the files, the field and the first event that differs or is not
 * linear. */
remat_status remat_torch_linear_check(const remat_ext_trace *a, const char *origin_a, const remat_ext_trace *b,
                                      const char *origin_b, remat_torch_linear *out, remat_error *err);

/* Rewrites t (trace a of the check, or a copy read from the same file: the same events)
 * as the step at batch size N: event sizes, the marks' element counts, live_before_bytes,
 * the record's N and its model text, and its execution to say so ("PyTorch 1.13.0 on CPU,
 * recorded at N = 1 and N = 2, rescaled to N = 8"). May be called again with another N. REMAT_ERR_INPUT
 * when N is out of range or a proportional size is not a whole number of bytes at N. */
remat_status remat_torch_linear_apply(const remat_torch_linear *L, int64_t N, remat_ext_trace *t, remat_error *err);

void remat_torch_linear_free(remat_torch_linear *L);

#ifdef __cplusplus
}
#endif
#endif
