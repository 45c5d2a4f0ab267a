/* input_file.h - the one way remat opens and reads an input file (models, plans,
 * Pareto and scaling files, traces, dumps), so that every command returns.
 *
 *   regular file        read as it is
 *   FIFO, pipe (<(...)) read to its end; opening never blocks: a FIFO that gets no
 *                       writer (or no data) within REMAT_FIFO_WAIT_S seconds
 *                       (environment variable, default 60) is refused
 *   character device    read (opened without blocking, then read normally)
 *   directory, socket,
 *   block device        refused: REMAT_ERR_IO "<path>: file: is a directory
 *                       (expected a file)" and the like (exit code 2)
 *   empty path          refused
 * Messages: "<path>: file: <what>", one line.
 */
#ifndef REMAT_INPUT_FILE_H
#define REMAT_INPUT_FILE_H

#include <stddef.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_INPUT_WAIT_S 60

/* Opens path read-only as above; *fd is a blocking descriptor, *regular is 1 for a
 * regular file (then the caller may also open it by name). REMAT_ERR_IO "<path>:
 * file: cannot open (<errno text>)", or one of the refusals above. */
remat_status remat_input_open(const char *path, int *fd, int *regular, remat_error *err);

/* The whole input, NUL-terminated (*data allocated with remat_xmalloc; *len
 * excludes the NUL). REMAT_ERR_INPUT "<path>: file: expected at most <max> bytes,
 * got more" past max_bytes (memory stays proportional to max_bytes), REMAT_ERR_IO
 * "<path>: file: read error (<errno text>)". */
remat_status remat_input_read_all(const char *path, size_t max_bytes, char **data, size_t *len, remat_error *err);

/* Same, from a descriptor of remat_input_open (closed on return); path for messages. */
remat_status remat_input_read_fd(int fd, const char *path, size_t max_bytes, char **data, size_t *len,
                                 remat_error *err);

/* The FIFO wait limit in seconds: REMAT_FIFO_WAIT_S when it is a number in
 * 0..86400, else REMAT_INPUT_WAIT_S (also used by the output writer). */
double remat_fifo_wait_s(void);

#ifdef __cplusplus
}
#endif
#endif
