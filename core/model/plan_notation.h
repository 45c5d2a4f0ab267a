/* plan_notation.h - the one short notation of a checkpoint plan: every command
 * prints plans in it, and every --plan accepts it in place of a plan file
 * (docs/model-and-plan-files.md, "Plan notation").
 *
 *   plan    := "no checkpointing" | entry ("," entry)*
 *   entry   := BLOCK [":" COMPRESSOR] option*
 *   option  := "/k" INT          time chunks (k > 1)
 *            | "/span" INT       this block and the next INT-1 as one unit (INT > 1)
 *            | "/split@" LAYER   a segment starts at LAYER (repeatable)
 *
 * Each entry names a checkpointed block; blocks not named are stored (plain
 * backpropagation keeps their activations), so the plan that names none, the
 * baseline, is written "no checkpointing". COMPRESSOR is none (the default, left
 * out when printing), bool, uint8, bit or sparse. Examples: "b1:bit/k4,b2",
 * "b1/k8/span2", "b2:bit/split@lif2". Names are model names (A-Z a-z 0-9 _ . -),
 * so ',', ':', '/', '@' and blanks never occur in them. The printer writes
 * entries in model order, options in the order compressor, k, span, splits; the
 * parser accepts options in any order (each once, splits repeatable) and the
 * plan must then pass remat_plan_validate, as a plan file must.
 */
#ifndef REMAT_PLAN_NOTATION_H
#define REMAT_PLAN_NOTATION_H

#include <stddef.h>

#include "core/base/status.h"
#include "core/model/model.h"
#include "core/model/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_PLAN_NOTATION_NONE "no checkpointing"

/* p in the notation into buf (snprintf-like: at most len-1 characters and a NUL when
 * len > 0; a label cut short ends in "..."). Returns the full length. */
size_t remat_plan_notation(const remat_plan *p, const remat_model *m, char *buf, size_t len);

/* One block's entry ("b1:bit/k4/split@lif1"; "" when block b is stored). */
size_t remat_plan_notation_block(const remat_model *m, int b, const remat_block_plan *bp, char *buf, size_t len);

/* Parses text in the notation into *out for m and validates it. origin names the
 * text in errors ("--plan"): "<origin>: '<entry>': expected ...". out->path is the
 * notation as printed; out->text the plan as a plan file (JSON; "" for the baseline),
 * as traces and dumps record it. */
remat_status remat_plan_parse_notation(const char *text, const char *origin, const remat_model *m, remat_plan *out,
                                       remat_error *err);

/* A --plan argument: a plan file when arg ends in ".json" or names an existing file,
 * else a plan in the notation (errors then say both what the file would have been
 * and what the notation expects). */
remat_status remat_plan_load_arg(const char *arg, const remat_model *m, remat_plan *out, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
