/* session.h - the executor's session, shared by executor.c (the schedule: segments,
 * chunks, recomputation, the loss and the optimiser) and layer_steps.c (what one
 * layer does over one time chunk). Internal to core/exec; callers use executor.h.
 *
 * Every helper records into the session's allocator models and trace: a tensor is
 * described (shape, encoding, role), allocated with remat_ex_alloc, freed with
 * remat_ex_free; a kernel call is bracketed by remat_ex_op_begin / remat_ex_op_end,
 * which time it (or ask the simulator's cost hook) and append the op record.
 */
#ifndef REMAT_SESSION_H
#define REMAT_SESSION_H

#include <stdint.h>

#include "core/exec/executor.h"
#include "core/exec/mem.h"
#include "core/exec/schedule.h"
#include "core/model/layers.h"

#define MAXP REMAT_MAX_LAYER_PARAMS /* parameter slots per layer (core/model/layers.h) */

/* Per-layer tensors of the segment chunk being run (forward keeps, backward frees). */
typedef struct layer_state {
    remat_tensor out;     /* internal output (input of the next layer) */
    remat_tensor h;       /* neuron: potential saved for backward */
    remat_tensor mean, rstd;
    remat_tensor v;       /* neuron: membrane state */
    remat_tensor gv;      /* neuron: dL/dv carried between chunks */
    remat_tensor grad;    /* gradient of `out` */
    const void *in_ptr;   /* input rows of the chunk (activations: float or bf16, act_enc) */
    void *out_ptr;        /* output rows of the chunk */
} layer_state;

struct remat_session {
    const remat_model *m;
    const remat_plan *p;
    remat_backend *be;
    const remat_backend_ops *ops;
    remat_exec_opts o;
    remat_schedule sch;
    remat_mem mem;
    remat_tensor *param, *grad, *opt1, *opt2; /* [n_layers * MAXP] */
    int bf16;                /* the model's precision is bf16 (docs/precision.md) */
    remat_tensor *wcast;     /* [n_layers * 2] bf16: the step's bf16 copies of linear/conv weight and bias */
    int opt_steps;
    remat_tensor input, labels, input_grad;
    remat_tensor *act;       /* [n_segs + 1] segment inputs; act[0] aliases input */
    remat_tensor *comp;      /* [n_segs] compressed inputs */
    remat_tensor *bound;     /* [n_layers * max_k] neuron states at chunk boundaries */
    int max_k;
    layer_state *ls;         /* [n_layers] */
    int iter;
    double t0, vclock;
    remat_step_result *res;
    remat_error *err;
    /* data parallelism (o.shard; shard_steps.c): blocks held here, samples per block,
     * the global batch, this rank's first sample; gacc[j * 2 + i]: the per-block
     * accumulators of layer j's weight (i = 0) and bias (1) during its segment's
     * backward (layers whose step has sample_sum_grads) */
    const remat_shard *shard;
    int nbl;
    int64_t bsz, n_total, sample0;
    remat_tensor *gacc;
};

typedef struct {
    remat_op_record r;
} op_t;

/* An op of `kind` by layer/block over t_steps steps touching elems elements. */
void remat_ex_op_begin(remat_session *s, op_t *op, remat_op_kind kind, int layer, int block, int64_t t_steps,
                       int64_t elems);
remat_status remat_ex_op_end(remat_session *s, op_t *op);

remat_status remat_ex_alloc(remat_session *s, remat_tensor *t);
remat_status remat_ex_free(remat_session *s, remat_tensor *t); /* no-op on an unallocated handle */
remat_status remat_ex_zero(remat_session *s, remat_tensor *t); /* an op of its own (REMAT_OP_ZERO) */

/* [t, N, F] fp32 (gradients, the neuron potential h); [t, N, F] in the activation
 * encoding (layer outputs, the input, their gradients); [N, F] fp32 state; [n] fp32. */
void remat_ex_describe_act(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t t_steps,
                           int64_t feats);
void remat_ex_describe_out(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t t_steps,
                           int64_t feats);
void remat_ex_describe_state(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t feats);
void remat_ex_describe_vec(remat_session *s, remat_tensor *t, remat_role role, int layer, int64_t n);

static inline float *fptr(const remat_tensor *t) { return (float *)t->ptr; }
/* The encoding of stored activations: layer outputs, the network input. */
static inline remat_encoding act_enc(const remat_session *s) { return remat_model_act_encoding(s->m); }
/* Bytes per element of a stored activation (a layer output, the input, their gradients). */
static inline int64_t act_bytes(const remat_session *s) { return remat_encoding_bytes(act_enc(s), 1, 0); }

/* A kernel on activations: the bf16-storage twin in a bf16 model (backend.h), else the
 * float kernel. Activation pointers are void *, so either signature takes them. */
#define ACT_KERNEL(s, name, ...) ((s)->bf16 ? (s)->ops->name##_bf16(__VA_ARGS__) : (s)->ops->name(__VA_ARGS__))

#define TRY(x)                                  \
    do {                                        \
        remat_status st_ = (x);                 \
        if (st_ != REMAT_OK) return st_;        \
    } while (0)

/* ---- layer steps (layer_steps.c): one entry per layer type ------------------------ */

/* Forward of one layer over a chunk of tc steps. */
typedef struct remat_fwd_args {
    int j;              /* the layer */
    int64_t tc;         /* time steps of the chunk */
    const void *in;     /* its input rows (its source's) */
    void *out;          /* its output rows */
    const void *in2;    /* add's other operand */
    int keep;           /* save what backward needs */
    int recompute;      /* phase RECOMPUTE (no running-statistics update) */
} remat_fwd_args;

/* Backward of one layer over a chunk of tc steps; dinp and dinp2 accumulate. */
typedef struct remat_bwd_args {
    int j;
    int64_t tc;
    void *dinp;         /* gradient of its input (NULL when skipped: input_grad_optional) */
    const void *dout;   /* gradient of its output */
    void *dinp2;        /* gradient of add's other operand */
    int chunked;        /* the segment runs in k > 1 chunks */
} remat_bwd_args;

typedef struct remat_layer_step {
    remat_status (*forward)(remat_session *s, const remat_fwd_args *a);
    remat_status (*backward)(remat_session *s, const remat_bwd_args *a);
    /* 1 when the backend has the kernels the step calls (a backend may lack newer layers). */
    int (*has_kernels)(const remat_backend_ops *ops);
    /* 1: on a shard, its parameter gradients are sums over samples that backward adds
     * into per-block accumulators (s->gacc), combined after the segment's backward
     * (linear, conv2d); 0: the step makes them global itself (batch norm) or has none. */
    int sample_sum_grads;
} remat_layer_step;

/* The step of a layer type (every type has one: a _Static_assert in layer_steps.c). */
const remat_layer_step *remat_layer_step_of(remat_layer_type t);

/* ---- data parallelism (shard_steps.c; docs/determinism.md "Data parallelism") ----- */

/* Session fields from o->shard (NULL: one process, unblocked); checks the shard
 * against the model and backend. */
remat_status remat_ex_shard_init(remat_session *s, remat_error *err);
/* A workspace of n doubles (traced as 2n floats). */
remat_status remat_ex_alloc_f64(remat_session *s, remat_tensor *t, int layer, int64_t n);
static inline double *dptr(const remat_tensor *t) { return (double *)t->ptr; }
/* *total (n doubles, allocated here) = the combination of the [nbl][n] partials in local. */
remat_status remat_ex_fold_f64(remat_session *s, int layer, const remat_tensor *local, int64_t n,
                               remat_tensor *total);
/* The shard's input and labels: the global batch's draws, this rank's samples. */
remat_status remat_ex_shard_input(remat_session *s);
remat_status remat_ex_shard_labels(remat_session *s);
/* The loss over a shard: per-block partials, combined, averaged over the global batch.
 * Its three buffers stay allocated in bufs: the caller frees them after the network
 * output, so that the first free of the loss phase is still that output (where the
 * simulator measures the end of forward, sim/des.h). */
remat_status remat_ex_shard_loss(remat_session *s, remat_tensor *rate, const void *out, float *loss,
                                 remat_tensor bufs[3]);
/* The blocked kernels (backend.h's REMAT_SHARD_KERNELS, the shard's blocks) on the
 * session's backend: its own entries, or the reference kernels over host copies on a
 * backend without them (the CUDA backend). Activation pointers in the model's encoding. */
remat_status remat_ex_k_dropout_at(remat_session *s, int backward, void *dst, const void *src, uint64_t iter, int layer,
                                   float p, int64_t t_steps, int64_t nf, int64_t c0);
remat_status remat_ex_k_bn_block_sums(remat_session *s, double *sum, const void *inp, const double *mu_total,
                                      int64_t n, int64_t T, int64_t N, int64_t C, int64_t hw);
remat_status remat_ex_k_bn_block_apply(remat_session *s, void *out, float *mean, float *rstd, float *rm, float *rv,
                                       const void *inp, const float *w, const float *bias, const double *sum,
                                       const double *sq, int64_t n, int64_t rows, int64_t C, int64_t hw, float momentum,
                                       double eps);
remat_status remat_ex_k_bn_block_backward_sums(remat_session *s, double *sdy, double *sdyx, const void *dout,
                                               const void *inp, const float *mean, const float *rstd, int64_t T,
                                               int64_t N, int64_t C, int64_t hw);
remat_status remat_ex_k_bn_block_backward_apply(remat_session *s, void *dinp, float *dw, float *db, const void *dout,
                                                const void *inp, const float *w, const float *mean, const float *rstd,
                                                const double *sdy, const double *sdyx, int64_t n, int64_t rows,
                                                int64_t C, int64_t hw);
remat_status remat_ex_k_loss_backward_n(remat_session *s, void *dout, const float *rate);
/* Around a segment's backward: the zeroed accumulators, then their combination into
 * the gradients. No-ops without a shard. */
remat_status remat_ex_shard_grads_begin(remat_session *s, int first, int n);
remat_status remat_ex_shard_grads_end(remat_session *s, int first, int n);

#endif
