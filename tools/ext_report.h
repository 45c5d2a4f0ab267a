/* ext_report.h - the allocator check of an imported allocation stream, as `remat
 * import-torch --check-allocator` and `remat simulate --trace IMPORTED.h5` print it:
 * per device the placement agreement (overall and per pool, the first disagreement
 * with the free blocks the model saw), reserved bytes predicted and recorded, the
 * segment events matched, what is not modelled; then a what-if table of peak
 * reserved and fragmentation under other allocator configurations. Or the same as
 * one JSON object (interfaces.md: a `devices` list with `device`, `allocations`,
 * `placed_at_recorded_address`, `reserved_end_predicted`, `reserved_end_recorded`). */
#ifndef REMAT_TOOLS_EXT_REPORT_H
#define REMAT_TOOLS_EXT_REPORT_H

#include "core/io/ext_replay.h"
#include "core/io/ext_trace.h"
#include "tools/cli.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Replays every device with events (device < 0) or device `device` under the
 * recorded settings, and the first of them under each configuration of `what_if`
 * (text form of alloc_model.h, each applied over the recorded settings); then, when
 * every replay ran, calls before_print(ctx) (NULL: none; import-torch writes its
 * file there, so that a check refused as bad input leaves no file) and, when that
 * returns 0, prints the report (JSON when json) on stdout. Returns the exit code: 0,
 * or 1 when strict and some allocation was not placed at its recorded address or the
 * reserved bytes at the end differ; 2 on bad input (one line on stderr, "remat <cmd>:
 * <origin>: <entry or setting>: ..."); before_print's own non-zero code. */
int remat_ext_report(const char *cmd, const char *origin, const remat_ext_trace *t, int device,
                     const cli_list *what_if, int json, int strict, int (*before_print)(void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif
#endif
