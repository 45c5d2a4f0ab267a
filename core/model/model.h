/* model.h - a network as the model file (JSON) describes it, after validation.
 *
 * Model file, documented in docs/model-and-plan-files.md:
 *
 *   {
 *     "name": "mlp-lif", "T": 64, "N": 128,
 *     "input": {"shape": [128], "kind": "analog"},   // [features], [C, L] or [C, H, W]; analog (U[0,1)) | spikes | counts (+ "max")
 *     "classes": 10, "loss": "rate_mse",
 *     "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
 *     "init_gain": 4.0,     // linear init U(-g/sqrt(in), g/sqrt(in)); default 1 (PyTorch)
 *     "precision": "bf16",  // fp32 (default) | bf16: activations stored bf16 (docs/precision.md)
 *     "layers": [
 *       {"name": "fc1", "type": "linear", "out": 512, "bias": true},
 *       {"name": "sn1", "type": "lif", "tau": 2.0, "surrogate": "sigmoid", "alpha": 4.0}, ...
 *     ],
 *     "blocks": [{"name": "b1", "layers": ["fc1", "sn1"]}, ...]
 *   }
 *
 * Blocks are named runs of consecutive layers; together they cover every layer
 * once, in order. The last layer's output must have `classes` features. A layer
 * reads the previous layer's output unless it names another with "input" (an
 * earlier layer of its block, its block's input, or "input" for the network input);
 * `add` sums its input with "from" (default: its block's input). Per-type fields,
 * shapes and parameters: core/model/layers.h.
 */
#ifndef REMAT_MODEL_H
#define REMAT_MODEL_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/base/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_NAME_LEN 64

typedef struct remat_neuron_opts {
    float v_threshold;  /* default 1.0 */
    float v_reset;      /* default 0.0; ignored when soft_reset */
    int soft_reset;     /* 1 when the file says "v_reset": null */
    int detach_reset;   /* default 0 */
    remat_surrogate surrogate; /* default sigmoid */
    float alpha;        /* default 4 (sigmoid) or 2 (atan) */
    float tau;          /* LIF: default 2.0, must be > 1; PLIF: init_tau (w starts at -log(tau - 1)) */
    int decay_input;    /* LIF and PLIF, default 1 */
} remat_neuron_opts;

/* Batch norm's running statistics and normaliser (PyTorch's BatchNorm fields). */
typedef struct remat_bn_opts {
    float momentum;     /* default 0.1: running = (1 - momentum) * running + momentum * batch statistic */
    double eps;         /* default 1e-5: rstd = 1 / sqrt(var + eps), in double */
} remat_bn_opts;

/* Per-sample shape of an activation: [C, H, W] (nd 3), or [C] features (nd 1, h = w = 1). */
typedef struct remat_shape {
    int64_t c, h, w;
    int nd;
} remat_shape;

/* The window of a convolution or pooling layer (each an int or [h, w] in the file). */
typedef struct remat_window {
    int64_t kh, kw;   /* kernel */
    int64_t sh, sw;   /* stride (conv default 1, pooling default = kernel) */
    int64_t ph, pw;   /* zero padding (default 0) */
    int64_t dh, dw;   /* conv dilation (default 1) */
    int64_t groups;   /* conv groups (default 1): in and out channels in that many slices */
} remat_window;

/* The geometry of a conv2d or pooling layer over one sample, as the kernels take it
 * (pooling: c_out = c_in). remat_layer_geom (core/model/layers.h) fills it. */
typedef struct remat_conv_geom {
    int64_t c_in, h_in, w_in;
    int64_t c_out, h_out, w_out;
    int64_t kh, kw, sh, sw, ph, pw;
    int64_t dh, dw;   /* conv dilation: kernel tap (ky, kx) reads offset (ky*dh, kx*dw); 0 or 1: none */
    int64_t groups;   /* conv groups: output channel o reads input channels of slice o / (c_out / groups)
                       * only, weight [c_out, c_in / groups, kh, kw]; 0 or 1: none */
} remat_conv_geom;

/* The dilation of a geometry along H and W (a zero field, as a geometry built
 * without it has, is 1). */
static inline int64_t remat_conv_dil_h(const remat_conv_geom *g) { return g->dh > 1 ? g->dh : 1; }
static inline int64_t remat_conv_dil_w(const remat_conv_geom *g) { return g->dw > 1 ? g->dw : 1; }
/* The groups of a geometry (a zero field is 1). */
static inline int64_t remat_conv_groups(const remat_conv_geom *g) { return g->groups > 1 ? g->groups : 1; }

/* Where a layer reads an operand: a layer index, or REMAT_SRC_INPUT (the network input). */
#define REMAT_SRC_INPUT (-1)
#define REMAT_SRC_NONE (-2) /* src2 of a layer with one operand */

typedef struct remat_layer {
    char name[REMAT_NAME_LEN];
    remat_layer_type type;
    remat_shape in, out;   /* per time step and sample */
    int64_t in_features;   /* in.c * in.h * in.w */
    int64_t out_features;  /* out.c * out.h * out.w */
    int src;               /* the layer whose output this one reads ("input"; default the previous one) */
    int src2;              /* add: the other operand ("from"; default the block's input); REMAT_SRC_NONE otherwise */
    int has_bias;          /* linear, conv2d */
    remat_window win;      /* conv2d, maxpool2d, avgpool2d */
    float p;               /* dropout probability, 0 <= p < 1 */
    remat_neuron_opts neuron; /* if / lif */
    remat_bn_opts bn;      /* batchnorm */
    int block;             /* index of the block holding this layer */
    remat_value_class out_values; /* what the output can hold */
} remat_layer;

typedef struct remat_block {
    char name[REMAT_NAME_LEN];
    int first_layer;      /* index into layers */
    int n_layers;
    remat_value_class in_values; /* what the block input can hold */
    int has_batchnorm;
    int has_add;
} remat_block;

typedef struct remat_optimizer {
    remat_optimizer_type type;
    float lr;
    float momentum;              /* sgd */
    float beta1, beta2, eps;     /* adam */
} remat_optimizer;

typedef struct remat_model {
    char name[REMAT_NAME_LEN];
    int64_t T, N;
    int64_t in_features;     /* product of input.shape */
    int in_ndim;
    int64_t in_shape[4];
    remat_shape in;          /* the input's per-sample shape */
    int input_spikes;        /* 1: Bernoulli(input_rate) spikes, 0: analog U[0,1) or counts */
    int32_t input_counts_max; /* kind "counts": integer event counts drawn in 0..max; 0 otherwise */
    float input_rate;
    int64_t classes;
    remat_loss_type loss;
    remat_optimizer optimizer;
    float init_gain;         /* linear weights and biases ~ U(-g/sqrt(in), g/sqrt(in)); default 1 */
    remat_precision precision; /* "precision"; default fp32 (docs/precision.md) */
    int n_layers;
    remat_layer *layers;     /* owned */
    int n_blocks;
    remat_block *blocks;     /* owned */
    char *text;              /* the file's text, owned (stored in traces and dumps) */
    char *path;              /* where it was read from, owned (for messages) */
} remat_model;

/* Reads and validates a model file. On success *out owns its arrays; free with
 * remat_model_free. On failure returns REMAT_ERR_INPUT or REMAT_ERR_IO with a
 * message "<path>: <field>: <what was expected>", and *out is left empty. */
remat_status remat_model_load(const char *path, remat_model *out, remat_error *err);
/* Same, from text in memory; `origin` names it in messages (a path or "<trace>"). */
remat_status remat_model_parse(const char *text, size_t len, const char *origin, remat_model *out,
                               remat_error *err);
/* A copy of `m` with other T and/or N (0 keeps the value): used for rescaling. */
remat_status remat_model_rescale(const remat_model *m, int64_t T, int64_t N, remat_model *out,
                                 remat_error *err);
void remat_model_free(remat_model *m);

/* The encoding of m's stored activations (layer outputs, the network input):
 * REMAT_ENC_BF16 in a bf16 model, else REMAT_ENC_F32 (docs/precision.md). */
remat_encoding remat_model_act_encoding(const remat_model *m);

/* What the network input can hold: BINARY (spikes), INTEGER (counts up to 255, which
 * uint8 stores), else REAL. */
remat_value_class remat_model_input_values(const remat_model *m);

/* Index of the layer / block with that name, or -1. */
int remat_model_find_layer(const remat_model *m, const char *name);
int remat_model_find_block(const remat_model *m, const char *name);
/* The block names, "b1, b2, b3", into buf (cut at len): what a message naming a wrong block lists. */
void remat_model_block_list(const remat_model *m, char *buf, size_t len);

/* Number of parameter tensors of layer l and their names/sizes (the traits table,
 * core/model/layers.c): linear weight [out,in], bias [out]; conv2d weight
 * [out,in,kh,kw], bias [out]; batchnorm weight, bias, running_mean, running_var [C]. */
int remat_layer_n_params(const remat_layer *l);
const char *remat_layer_param_name(const remat_layer *l, int i);
int64_t remat_layer_param_elems(const remat_layer *l, int i);
/* 1 for parameters that get a gradient (not the running statistics). */
int remat_layer_param_trainable(const remat_layer *l, int i);

#ifdef __cplusplus
}
#endif
#endif
