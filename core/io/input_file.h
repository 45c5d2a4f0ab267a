/* input_file.h - the one way remat opens and reads an input file (models, plans,
 * Pareto and scaling files, traces, dumps), so that every command returns.
 *
 *   regular file        read as it is
 *   FIFO, pipe (<(...)) read to its end; opening never blocks: a FIFO that gets no
 *                       writer (or no data) within REMAT_FIFO_WAIT_S seconds
 *                       (environment variable, default 60) is refused, and so is
 *                       a writer that sends part of the file, then nothing for
 *                       that long
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
#include <sys/types.h>

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

/* The FIFO wait limit in seconds: REMAT_FIFO_WAIT_S (0..86400), else
 * REMAT_INPUT_WAIT_S; also used by the output writer, and as the longest a read
 * waits for more data from a writer that stalls. */
double remat_fifo_wait_s(void);

/* Environment variable `name` as seconds (REMAT_FIFO_WAIT_S, REMAT_GNUPLOT_TIMEOUT_S):
 * unset or empty: def; a number in 0..REMAT_ENV_SECONDS_MAX (0 itself only with
 * zero_ok): that; anything else REMAT_ERR_INPUT "<name>: expected a number of seconds
 * in 0..86400, got '<value>'" (*out = def). */
#define REMAT_ENV_SECONDS_MAX 86400
remat_status remat_env_seconds(const char *name, int zero_ok, double def, double *out, remat_error *err);

/* read() that waits at most limit_s for data (poll first): the bytes read, 0 at the
 * end, -1 on error (errno), -2 when nothing came in time. */
ssize_t remat_input_read_timed(int fd, void *buf, size_t n, double limit_s);

#ifdef __cplusplus
}
#endif
#endif
