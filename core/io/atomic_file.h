/* atomic_file.h - the one way remat writes an output file (traces, dumps,
 * predictions, plans, Pareto fronts, figure data, scripts and images).
 *
 * A regular destination is never written in place. The bytes go to a new
 * temporary file in the destination's folder, "<path>.remat-XXXXXX", created with
 * O_EXCL (mkstemp: unique, never a user's file, two writers never share one); on
 * commit the temporary is flushed (fsync), renamed over the destination, and the
 * folder is flushed too. On any error, and on SIGINT, SIGTERM, SIGHUP and a crash
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) while it is open, the temporary is removed, so the destination is either the old file or
 * the whole new one; a kill -9 leaves at most the uniquely named temporary.
 *
 * What each kind of destination becomes (docs/outputs.md):
 *   missing or regular file  replaced as above; an existing file keeps its mode,
 *                            a new one gets 0666 minus the umask. A file without
 *                            write permission (or with no write bit at all, for
 *                            root) is refused, not replaced.
 *   symbolic link            the file it points to is replaced (the temporary goes
 *                            in the target's folder); the link stays a link. A link
 *                            to nothing is refused.
 *   character device, FIFO   written directly, in order (/dev/null discards, a FIFO's
 *                            reader gets the bytes); nothing to rename. Opening a
 *                            FIFO waits at most REMAT_AFILE_FIFO_WAIT_S for a reader.
 *   this process's stdout    (--out /dev/stdout > f.json: the same file as fd 1 or 2)
 *   or stderr                written through that descriptor, in order with what the
 *                            command prints (never renamed away from under it).
 *   directory, block device,
 *   socket, empty path       refused (REMAT_ERR_INPUT).
 * Every write error names its reason (errno text, "No space left on device").
 *
 *   remat_afile a;                      // must stay at one address until commit/abort
 *   if (remat_afile_open(&a, path, &err) != REMAT_OK) return err.status;
 *   fprintf(a.fp, ...);
 *   return remat_afile_commit(&a, &err);   // or remat_afile_abort(&a) on failure
 *
 * Libraries that write by path (HDF5) use remat_afile_open_path: they write the
 * file named a.tmp, then commit through the same function (for a device or FIFO
 * the temporary sits in $TMPDIR and commit copies it to the destination).
 *
 * Not thread-safe per object; different objects may be used from different threads.
 * At most REMAT_AFILE_MAX_LIVE files may be open at once in a process.
 */
#ifndef REMAT_ATOMIC_FILE_H
#define REMAT_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "core/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REMAT_AFILE_PATH_LEN 4096
#define REMAT_AFILE_MAX_LIVE 16
#define REMAT_AFILE_FIFO_WAIT_S 60

typedef struct remat_afile {
    FILE *fp;        /* stream mode: where to write; NULL in path mode */
    int fd;          /* the open temporary or destination, -1 when closed */
    int direct;      /* 1: the destination is a device or FIFO, written as it is */
    int by_path;     /* 1: opened with remat_afile_open_path */
    int slot;        /* signal-cleanup registry slot of tmp, -1 for none */
    int err_no;      /* first write error (errno), 0 when none */
    int live;        /* 1 between a successful open and commit/abort */
    int std_fd;      /* 1 or 2: the destination is this process's stdout/stderr; else -1 */
    unsigned mode;   /* permission bits the committed file gets */
    char path[REMAT_AFILE_PATH_LEN];    /* the destination as given (messages) */
    char target[REMAT_AFILE_PATH_LEN];  /* the file replaced: path, or a symlink's target */
    char tmp[REMAT_AFILE_PATH_LEN];     /* the temporary ("" when direct in stream mode) */
} remat_afile;

/* Whether path can be written, before any work: the refusals of remat_afile_open
 * (empty path, directory, read-only file, dangling link, block device, socket) and,
 * for a file, a temporary created and removed in its folder (a missing or read-only
 * folder). Writes nothing; a device or FIFO is not opened. */
remat_status remat_afile_check(const char *path, remat_error *err);

/* Opens path for writing through a temporary (stream mode: write to a->fp).
 * REMAT_ERR_INPUT "<path>: ..." for a destination refused above (empty path,
 * directory, read-only file, dangling link, block device, socket);
 * REMAT_ERR_IO "<path>: cannot write: <errno text>" when the temporary (or the
 * device/FIFO) cannot be opened (missing or read-only folder, no FIFO reader). */
remat_status remat_afile_open(remat_afile *a, const char *path, remat_error *err);

/* Same checks, for a library that writes by name: creates the temporary a->tmp
 * (empty) and closes it; the caller writes a->tmp by path, closes it, then calls
 * remat_afile_commit or remat_afile_abort. a->fp is NULL. */
remat_status remat_afile_open_path(remat_afile *a, const char *path, remat_error *err);

/* Flushes and closes; fsyncs the temporary, renames it over the target, fsyncs the
 * folder (direct: copies the temporary of path mode to the destination). On any
 * error removes the temporary and returns REMAT_ERR_IO "<path>: cannot write:
 * <errno text>" (the destination is unchanged). Always leaves a closed. */
remat_status remat_afile_commit(remat_afile *a, remat_error *err);

/* Closes and removes the temporary (after a failure elsewhere). Idempotent; safe
 * on a zeroed or already committed object. */
void remat_afile_abort(remat_afile *a);

/* Writes n bytes of data to path through open + commit. */
remat_status remat_afile_write_all(const char *path, const void *data, size_t n, remat_error *err);

/* Temporaries currently registered for removal on a signal (tests). */
int remat_afile_live_count(void);

#ifdef __cplusplus
}
#endif
#endif
