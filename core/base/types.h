/* types.h - the vocabulary shared by the executor, the trace, the simulator
 * and the plots: phases, roles, encodings, layer kinds. Values are stored in
 * trace files, so existing numbers never change; new ones are appended. */
#ifndef REMAT_TYPES_H
#define REMAT_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Part of the training step an event belongs to. */
typedef enum remat_phase {
    REMAT_PHASE_INIT = 0,      /* parameters, gradients allocated once */
    REMAT_PHASE_FORWARD = 1,   /* first forward pass */
    REMAT_PHASE_RECOMPUTE = 2, /* forward re-run during backward (checkpointed segments) */
    REMAT_PHASE_LOSS = 3,      /* loss forward and its gradient */
    REMAT_PHASE_BACKWARD = 4,
    REMAT_PHASE_OPTIMIZER = 5,
    REMAT_PHASE_COUNT
} remat_phase;

/* What an allocation holds (the breakdown plots group by this). */
typedef enum remat_role {
    REMAT_ROLE_PARAMETER = 0,   /* weights, biases, batch-norm running statistics */
    REMAT_ROLE_GRADIENT = 1,    /* parameter gradients */
    REMAT_ROLE_OPTIMIZER = 2,   /* optimiser state (momentum, Adam moments) */
    REMAT_ROLE_BATCH = 3,       /* network input and labels */
    REMAT_ROLE_SAVED = 4,       /* activation kept for backward */
    REMAT_ROLE_TRANSIENT = 5,   /* activation freed before backward needs anything from it */
    REMAT_ROLE_COMPRESSED = 6,  /* compressed checkpoint input */
    REMAT_ROLE_NEURON_STATE = 7,/* membrane potential v / its gradient carried across time chunks */
    REMAT_ROLE_ACT_GRAD = 8,    /* gradient of an activation */
    REMAT_ROLE_WORKSPACE = 9,   /* scratch of one op (partial sums, statistics) */
    REMAT_ROLE_COUNT
} remat_role;

/* How a tensor's elements are stored; decides its byte size (see remat_encoding_bytes). */
typedef enum remat_encoding {
    REMAT_ENC_F32 = 0,    /* 4 bytes per element */
    REMAT_ENC_U8 = 1,     /* 1 byte per element (bool and uint8 compressors) */
    REMAT_ENC_BIT = 2,    /* 1 bit per element, ceil(n/8) bytes */
    REMAT_ENC_SPARSE = 3, /* 4 bytes per non-zero element (uint32 positions) */
    REMAT_ENC_I32 = 4,    /* 4 bytes per element (labels) */
    REMAT_ENC_BF16 = 5,   /* 2 bytes per element (activations of a bf16 model, docs/precision.md) */
    REMAT_ENC_COUNT
} remat_encoding;

/* a*b when a, b >= 0 and the product is at most `limit`, else -1; never overflows.
 * The one checked product of sizes: every product of sizes read from a file
 * (model dims, trace dims and nnz, imported byte counts) goes through it. */
static inline int64_t remat_mul_capped(int64_t a, int64_t b, int64_t limit) {
    if (a < 0 || b < 0) return -1;
    if (a == 0 || b == 0) return 0;
    if (a > limit / b) return -1;
    return a * b;
}

/* Byte size of a tensor of `elems` elements with `nnz` non-zeros; -1 for a
 * negative count or a size above INT64_MAX. */
static inline int64_t remat_encoding_bytes(remat_encoding enc, int64_t elems, int64_t nnz) {
    switch (enc) {
    case REMAT_ENC_F32: case REMAT_ENC_I32: return remat_mul_capped(elems, 4, INT64_MAX);
    case REMAT_ENC_BF16: return remat_mul_capped(elems, 2, INT64_MAX);
    case REMAT_ENC_U8: return elems < 0 ? -1 : elems;
    case REMAT_ENC_BIT: return elems < 0 ? -1 : elems / 8 + (elems % 8 != 0);
    case REMAT_ENC_SPARSE: return remat_mul_capped(nnz, 4, INT64_MAX);
    default: return -1;
    }
}

/* A layer's type; everything about it is in its traits (core/model/layers.h). */
typedef enum remat_layer_type {
    REMAT_LAYER_LINEAR = 0,
    REMAT_LAYER_IF = 1,
    REMAT_LAYER_LIF = 2,
    REMAT_LAYER_BATCHNORM = 3,
    REMAT_LAYER_ADD = 4,
    REMAT_LAYER_DROPOUT = 5,
    REMAT_LAYER_CONV2D = 6,
    REMAT_LAYER_MAXPOOL2D = 7,
    REMAT_LAYER_AVGPOOL2D = 8,
    REMAT_LAYER_FLATTEN = 9,
    REMAT_LAYER_ADAPTIVEAVGPOOL2D = 10,
    REMAT_LAYER_CONV1D = 11,
    REMAT_LAYER_MAXPOOL1D = 12,
    REMAT_LAYER_AVGPOOL1D = 13,
    REMAT_LAYER_PLIF = 14,
    REMAT_LAYER_COUNT
} remat_layer_type;

/* The compressor a plan puts on a checkpointed segment's saved input. */
typedef enum remat_compressor {
    REMAT_COMP_NONE = 0,
    REMAT_COMP_BOOL = 1,   /* one byte per spike (0 or 1) */
    REMAT_COMP_UINT8 = 2,  /* one byte per integer value 0..255 */
    REMAT_COMP_BIT = 3,    /* 8 spikes per byte, element i in byte i/8, bit i%8, LSB first */
    REMAT_COMP_SPARSE = 4, /* uint32 positions of the ones */
    REMAT_COMP_COUNT
} remat_compressor;

/* What values a tensor can hold, decided statically from the layers (validation
 * uses it to refuse a compressor that could not represent the tensor). */
typedef enum remat_value_class {
    REMAT_VALUES_BINARY = 0,  /* only 0 and 1 (spikes) */
    REMAT_VALUES_INTEGER = 1, /* small non-negative integers (sum of spikes) */
    REMAT_VALUES_REAL = 2,
} remat_value_class;

/* A model's numeric precision (its "precision" field; docs/precision.md). */
typedef enum remat_precision {
    REMAT_PRECISION_FP32 = 0, /* every tensor fp32 (the default) */
    REMAT_PRECISION_BF16 = 1, /* activations stored bf16, accumulation and state fp32 */
    REMAT_PRECISION_COUNT
} remat_precision;

typedef enum remat_loss_type { REMAT_LOSS_RATE_MSE = 0, REMAT_LOSS_RATE_CE = 1 } remat_loss_type;
typedef enum remat_optimizer_type { REMAT_OPT_SGD = 0, REMAT_OPT_ADAM = 1 } remat_optimizer_type;
typedef enum remat_surrogate { REMAT_SURROGATE_SIGMOID = 0, REMAT_SURROGATE_ATAN = 1 } remat_surrogate;

/* Names as they appear in JSON, traces and plots (lower case). */
const char *remat_phase_name(remat_phase p);
const char *remat_role_name(remat_role r);
const char *remat_compressor_name(remat_compressor c);
const char *remat_encoding_name(remat_encoding e);
const char *remat_precision_name(remat_precision p); /* "fp32", "bf16" */
/* Reverse look-ups; return -1 for an unknown name. */
int remat_compressor_from_name(const char *s);
int remat_role_from_name(const char *s);
int remat_phase_from_name(const char *s);
int remat_precision_from_name(const char *s);

#ifdef __cplusplus
}
#endif
#endif
