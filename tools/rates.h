/* rates.h - the firing rate of every spike layer in one recorded step: the non-zeros
 * a recording run counts for each full-T spike tensor (the trace's alloc events with
 * nnz >= 0), over its elements. `remat run --trace` prints them and warns about a
 * layer that fired no spike (a silent network trains nothing: its surrogate
 * gradient still flows, but its outputs carry no signal).
 *
 *   remat_layer_rate r[64];
 *   int n = remat_trace_rates(&trace, trace.n_iters - 1, r, 64);
 */
#ifndef REMAT_TOOLS_RATES_H
#define REMAT_TOOLS_RATES_H

#include <stdint.h>
#include <stdio.h>

#include "core/io/trace.h"
#include "core/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct remat_layer_rate {
    int layer;            /* model layer index, -1: the network input */
    int64_t nnz, elems;
} remat_layer_rate;

/* The counted tensors of step iter, in the order the step produced them (one per
 * layer: the first count). Returns how many were written (at most max). */
int remat_trace_rates(const remat_trace *t, int iter, remat_layer_rate *out, int max);

/* "firing rates (step 2)  input 0.200  sn1 0.213  ...  sn_out 0.000 (silent)" on f,
 * and on stderr one line naming the silent layers ("remat <cmd>: warning: ...").
 * Nothing when the trace counted no spike tensor; f NULL: the warning alone. Returns
 * the number of silent layers. */
int remat_print_rates(FILE *f, const char *cmd, const remat_trace *t, const remat_model *m);

#ifdef __cplusplus
}
#endif
#endif
