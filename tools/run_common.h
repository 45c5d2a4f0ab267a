/* run_common.h - what `run`, `verify`, `tune --confirm` and `demo` share: opening
 * a backend by name, loading a model and an optional plan, writing a trace. */
#ifndef REMAT_TOOLS_RUN_COMMON_H
#define REMAT_TOOLS_RUN_COMMON_H

#include "core/alloc/alloc_model.h"
#include "core/exec/backend.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"
#include "core/io/trace.h"
#include "core/model/weights.h"

#ifdef __cplusplus
extern "C" {
#endif

/* name: "ref" or "cuda" (NULL = ref). threads for ref. REMAT_ERR_INPUT for another name. */
remat_status remat_tools_backend_open(const char *name, int threads, remat_backend *out, remat_error *err);
/* remat_model_load; when the file is another kind of remat file (a plan, a Pareto
 * front, a scaling file, an HDF5 trace), the error says which ("expected a model
 * file, got a plan file ..."). */
remat_status remat_tools_model_load(const char *path, remat_model *m, remat_error *err);
/* Loads the model, and the plan if plan_path is not NULL (else the empty plan). */
remat_status remat_tools_load(const char *model_path, const char *plan_path, remat_model *m, remat_plan *p,
                              remat_error *err);
/* As remat_tools_load, with the model rescaled to T time steps and batch size N
 * first (0 keeps the model file's value; remat_model_rescale), so one model file
 * serves every size: `--T`/`--N` of run, verify, tune --confirm, demo. The plan is
 * read against the rescaled model (k must divide the new T). */
remat_status remat_tools_load_sized(const char *model_path, const char *plan_path, int64_t T, int64_t N,
                                    remat_model *m, remat_plan *p, remat_error *err);
/* Checks --T/--N values (0: as in the file, else positive): one line on stderr and 2,
 * or 0. */
int remat_tools_size_flags(const char *cmd, int T, int N);
/* The host's part of what a trace records about the run: the threads, and on the
 * reference backend ("ref" or NULL) the SIMD path its kernels use now (core/ref/simd.h;
 * "" on other backends). */
void remat_tools_trace_host(remat_trace *t, const char *backend, int threads);
/* --init: loads the initial parameters of m from path into w (core/model/weights.h). 0, or
 * 2 after printing every mismatch on stderr, one line each ("remat run: w.h5: ..."). */
int remat_tools_init_weights(const char *cmd, const char *path, const remat_model *m, remat_weights *w);
/* The SIMD path the reference backend's kernels use now ("scalar", "avx2", "avx512"). */
const char *remat_tools_simd_path(void);
/* "round_bytes=512,...": the configuration text a trace records. */
void remat_tools_caching_config_text(const remat_caching_config *c, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
