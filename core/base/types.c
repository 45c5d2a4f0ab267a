/* types.c - names of the shared enums (layer types: their traits, core/model/layers.c). */
#include "core/base/types.h"

#include <string.h>

static const char *const phase_names[] = {"init", "forward", "recompute", "loss", "backward", "optimizer"};
static const char *const role_names[] = {"parameter", "gradient", "optimizer", "batch", "saved",
                                         "transient", "compressed", "neuron_state", "act_grad", "workspace"};
static const char *const comp_names[] = {"none", "bool", "uint8", "bit", "sparse"};
_Static_assert(sizeof comp_names / sizeof comp_names[0] == REMAT_COMP_COUNT, "a name for every compressor");
static const char *const enc_names[] = {"f32", "u8", "bit", "sparse", "i32", "bf16"};
_Static_assert(sizeof enc_names / sizeof enc_names[0] == REMAT_ENC_COUNT, "a name for every encoding");
static const char *const precision_names[] = {"fp32", "bf16"};
_Static_assert(sizeof precision_names / sizeof precision_names[0] == REMAT_PRECISION_COUNT, "a name for every precision");

#define NAME_AT(tab, i) ((i) >= 0 && (size_t)(i) < sizeof(tab) / sizeof(tab[0]) ? tab[i] : "?")

const char *remat_phase_name(remat_phase p) { return NAME_AT(phase_names, (int)p); }
const char *remat_role_name(remat_role r) { return NAME_AT(role_names, (int)r); }
const char *remat_compressor_name(remat_compressor c) { return NAME_AT(comp_names, (int)c); }
const char *remat_encoding_name(remat_encoding e) { return NAME_AT(enc_names, (int)e); }
const char *remat_precision_name(remat_precision p) { return NAME_AT(precision_names, (int)p); }

static int lookup(const char *const *tab, int n, const char *s) {
    if (!s) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(tab[i], s) == 0) return i;
    return -1;
}
#define LOOKUP(tab, s) lookup(tab, (int)(sizeof(tab) / sizeof(tab[0])), s)

int remat_compressor_from_name(const char *s) { return LOOKUP(comp_names, s); }
int remat_role_from_name(const char *s) { return LOOKUP(role_names, s); }
int remat_phase_from_name(const char *s) { return LOOKUP(phase_names, s); }
int remat_precision_from_name(const char *s) { return LOOKUP(precision_names, s); }
