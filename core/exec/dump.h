/* dump.h - the gradient dump of docs/interfaces.md (`remat run --dump OUT.h5`). */
#ifndef REMAT_DUMP_H
#define REMAT_DUMP_H

#include <stdint.h>

#include "core/exec/backend.h"
#include "core/exec/executor.h"
#include "core/model/model.h"
#include "core/model/plan.h"
#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs exactly one training step (forward, loss, backward; no optimiser update) of
 * model m under plan p from the seeded initial state and writes the dump to path
 * (through the atomic writer, core/io/atomic_file.h). opts supplies seed, fault and trace; its
 * seed is the one recorded. res (may be NULL) gets the step's result. */
remat_status remat_dump_run(const remat_model *m, const remat_plan *p, remat_backend *b, const remat_exec_opts *opts,
                            const char *path, remat_step_result *res, remat_error *err);

#ifdef __cplusplus
}
#endif
#endif
