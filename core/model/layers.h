/* layers.h - the layer registry: one traits entry per layer type, the only place
 * that knows a type's metadata (its JSON name and fields, how its output shape
 * follows from its input, its parameters and their shapes, what its backward needs
 * saved, what values its output can hold, whether it may be chunked along time).
 *
 *   const remat_layer_traits *tr = remat_layer_traits_of(l->type);
 *   if (tr->saves_input) ...;               // backward reads the layer's input
 *   for (int i = 0; i < remat_layer_n_params(l); i++)
 *       printf("%s %lld\n", remat_layer_param_name(l, i), (long long)remat_layer_param_elems(l, i));
 *
 * Adding a layer type touches: a value in remat_layer_type (core/base/types.h); its
 * traits entry in layers.c (the _Static_assert there fails until it exists); its
 * executor step in core/exec/layer_steps.c (the op kinds it records, the kernels it
 * calls, what it allocates; a _Static_assert there too); its reference kernels
 * (core/ref/<layer>.c, contract in ref_kernels.h) and their entries in backend.h's
 * kernel list (every backend table, fp32 and bf16, is generated from that list); its
 * CUDA twin (cuda/<layer>.cu); tests and docs. Nothing else names the type: the
 * executor, trace, dump, verifier and simulator ask these traits and the step table.
 */
#ifndef REMAT_LAYERS_H
#define REMAT_LAYERS_H

#include <stdint.h>

#include "core/base/status.h"
#include "core/base/types.h"
#include "core/model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_ctx;
struct cJSON;

#define REMAT_MAX_LAYER_PARAMS 4 /* parameter tensors of one layer, at most */

typedef struct remat_layer_traits {
    const char *name;              /* the JSON "type", also its name in messages and plots */
    const char *const *fields;     /* JSON fields it accepts besides name, type, input */
    /* Reads the type's own fields from the layer object `j` (field prefix `p`, e.g.
     * "layers[3]") into l; l->in is already set. Fills l->out and the options.
     * Returns REMAT_ERR_INPUT with a one-line message on a bad field or shape. */
    remat_status (*parse)(const struct json_ctx *c, const struct cJSON *j, const char *p, remat_layer *l);
    const char *const *param_names; /* in order: the trainable ones first; the rest are state that
                                    * forward updates (running statistics), dumped again after the step */
    const float *param_init;       /* constant initial values (NULL: uniform, see remat_layer_fan_in) */
    /* Initial value of parameter i where it depends on the layer's fields (plif's w);
     * NULL: param_init's. */
    float (*init_value)(const remat_layer *l, int i);
    /* Shape of parameter i (< remat_layer_n_params): fills dims, returns their count. */
    int (*param_dims)(const remat_layer *l, int i, int64_t dims[4]);
    /* Fan-in of the uniform initialisation; NULL: constant values from param_init. */
    int64_t (*fan_in)(const remat_layer *l);
    /* Value class of the output from those of the operands; NULL: REMAT_VALUES_REAL. */
    remat_value_class (*out_values)(const remat_layer *l, remat_value_class in, remat_value_class in2);
    int max_params;                /* entries in param_names, at most REMAT_MAX_LAYER_PARAMS */
    int n_trainable;               /* the first n_trainable parameters get a gradient */
    int optional_bias;             /* the last parameter exists only with "bias": true */
    int saves_input;               /* backward reads the layer's input (linear, conv, batchnorm, maxpool) */
    int neuron;                    /* if / lif / plif: state carried across time steps */
    int time_chunkable;            /* 0: the layer's reduction spans all T (batch norm) */
    int two_inputs;                /* add: sums its input and `from` */
    int has_mask;                  /* dropout: a mask that dumps and verify record (/masks/<layer>) */
    int windowed;                  /* a kernel window over [C, H, W]: remat_layer_geom describes it */
    int input_grad_optional;       /* backward may skip the input's gradient (the network input's) */
} remat_layer_traits;

/* The traits of a type; NULL for a value outside the enum. */
const remat_layer_traits *remat_layer_traits_of(remat_layer_type t);

/* The JSON name of a type ("?" outside the enum) and back (-1 for an unknown name). */
const char *remat_layer_type_name(remat_layer_type t);
int remat_layer_type_from_name(const char *s);

/* Shape of parameter i of layer l: fills dims (at most 4) and returns the number
 * of dimensions, 0 when l has no parameter i. linear weight [out, in], conv weight
 * [out, in, kh, kw], biases and batch-norm vectors [C]. */
int remat_layer_param_dims(const remat_layer *l, int i, int64_t dims[4]);

/* Fan-in of a linear or conv2d layer (in, or in*kh*kw): its parameters start
 * U(-g/sqrt(fan_in), g/sqrt(fan_in)) with the model's init_gain g, as PyTorch's
 * default with g = 1. 0 for other types, whose parameters start at
 * remat_layer_param_init_value (batch norm: weight 1, bias 0, mean 0, var 1). */
int64_t remat_layer_fan_in(const remat_layer *l);
float remat_layer_param_init_value(const remat_layer *l, int i);

/* The value class of layer l's output given the classes of its input(s) (in2: the
 * second operand of add, ignored otherwise). */
remat_value_class remat_layer_out_values(const remat_layer *l, remat_value_class in, remat_value_class in2);

/* The kernel geometry of a conv2d or pooling layer (zeros for other types). */
remat_conv_geom remat_layer_geom(const remat_layer *l);

/* Shape of parameter i as dumps and verify store it: its real shape (remat_layer_param_dims:
 * a conv weight [out, in, kh, kw], a linear weight [out, in], vectors [C]), so a dump lines
 * up with a PyTorch state dict; returns the number of dimensions, 0 when l has no parameter i. */
int remat_layer_param_dump_dims(const remat_layer *l, int i, int64_t dims[4]);

/* The traits' flags of l's type: backward needs the input; a neuron (if / lif); a
 * dropout mask; backward may skip the input gradient. */
int remat_layer_saves_input(const remat_layer *l);
int remat_layer_is_neuron(const remat_layer *l);
int remat_layer_has_mask(const remat_layer *l);
int remat_layer_input_grad_optional(const remat_layer *l);

#ifdef __cplusplus
}
#endif
#endif
