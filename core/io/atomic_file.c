/* atomic_file.c - unique temporary, fsync, rename; devices and FIFOs written as
 * they are; temporaries removed on error and on SIGINT/SIGTERM/SIGHUP.
 *
 * Assumptions:
 * - rename(2) within one folder is atomic (POSIX), so the temporary lives next to
 *   the file it replaces; fsync of the folder after the rename makes the new name
 *   durable (best effort: a folder that cannot be fsynced is not an error, the data
 *   itself was already fsynced).
 * - Streams write through fopencookie, so the first failing write(2) keeps its
 *   errno for the message instead of a bare ferror().
 * - The signal handler only calls unlink, signal and raise (async-signal-safe) on
 *   paths registered before the temporary was created; it is installed for a
 *   signal only where the disposition was the default (a SIG_IGN from nohup, or a
 *   handler of the embedding program, is left alone).
 */
#define _GNU_SOURCE
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/base/clock.h"

/* ---- the registry of live temporaries ------------------------------------- */

enum { SLOT_FREE = 0, SLOT_CLAIMED = 1, SLOT_LIVE = 2 };
static int slot_state[REMAT_AFILE_MAX_LIVE];
static char slot_path[REMAT_AFILE_MAX_LIVE][REMAT_AFILE_PATH_LEN];
/* the signals that end the process: a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
 * too, so that no temporary outlives it (a sanitizer's own handler is left in place) */
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static mode_t process_umask;

static void on_signal(int sig) {
    for (int i = 0; i < REMAT_AFILE_MAX_LIVE; i++)
        if (__atomic_load_n(&slot_state[i], __ATOMIC_SEQ_CST) == SLOT_LIVE) unlink(slot_path[i]);
    signal(sig, SIG_DFL);
    raise(sig); /* delivered with the default action once this handler returns */
}

static void setup(void) {
    process_umask = umask(0);
    umask(process_umask);
    for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++) {
        struct sigaction old;
        if (sigaction(cleanup_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof cleanup_signals / sizeof cleanup_signals[0]; k++)
            sigaddset(&sa.sa_mask, cleanup_signals[k]);
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

/* Claims a slot and copies the template into it; the caller creates the file from
 * slot_path[slot] and then marks it live. -1 when all slots are taken. */
static int slot_claim(const char *templ) {
    for (int i = 0; i < REMAT_AFILE_MAX_LIVE; i++) {
        int want = SLOT_FREE;
        if (__atomic_compare_exchange_n(&slot_state[i], &want, SLOT_CLAIMED, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            snprintf(slot_path[i], sizeof slot_path[i], "%s", templ);
            return i;
        }
    }
    return -1;
}

static void slot_release(int slot) {
    if (slot >= 0) __atomic_store_n(&slot_state[slot], SLOT_FREE, __ATOMIC_SEQ_CST);
}

int remat_afile_live_count(void) {
    int n = 0;
    for (int i = 0; i < REMAT_AFILE_MAX_LIVE; i++)
        if (__atomic_load_n(&slot_state[i], __ATOMIC_SEQ_CST) == SLOT_LIVE) n++;
    return n;
}

/* mkstemp on templ ("...XXXXXX") through a registry slot, with the cleanup
 * signals blocked: a signal that arrives meanwhile is delivered once the file is
 * registered as live, so the handler removes it. */
static int make_temp(remat_afile *a, const char *templ) {
    sigset_t block, old;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++) sigaddset(&block, cleanup_signals[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int slot = slot_claim(templ);
    int fd = -1, e = EMFILE;
    if (slot >= 0) {
        fd = mkostemp(slot_path[slot], O_CLOEXEC);
        e = errno;
        if (fd >= 0) __atomic_store_n(&slot_state[slot], SLOT_LIVE, __ATOMIC_SEQ_CST);
        else slot_release(slot);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        errno = e;
        return -1;
    }
    snprintf(a->tmp, sizeof a->tmp, "%s", slot_path[slot]);
    a->slot = slot;
    return fd;
}

static void drop_temp(remat_afile *a) {
    if (a->tmp[0]) unlink(a->tmp);
    slot_release(a->slot);
    a->slot = -1;
    a->tmp[0] = 0;
}

/* ---- what the destination is ------------------------------------------------ */

static remat_status fail_io(remat_afile *a, remat_error *err, const char *what, int e) {
    return remat_error_set(err, REMAT_ERR_IO, "%s: cannot write: %s%s%s", a->path, what ? what : "", what ? ": " : "",
                           strerror(e ? e : EIO));
}

/* Fills a->target, a->direct and a->mode; refuses what must not be written. */
static remat_status resolve(remat_afile *a, const char *path, remat_error *err) {
    memset(a, 0, sizeof *a);
    a->fd = -1;
    a->slot = -1;
    a->std_fd = -1;
    pthread_once(&setup_once, setup);
    if (!path || !path[0])
        return remat_error_set(err, REMAT_ERR_INPUT, "(empty path): output: expected a file name, got an empty path");
    if (strlen(path) >= sizeof a->path - 16)
        return remat_error_set(err, REMAT_ERR_INPUT, "%.64s...: output: expected a path under %d characters", path,
                               (int)sizeof a->path - 16);
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->target, sizeof a->target, "%s", path);
    a->mode = 0666u & ~(unsigned)process_umask;
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) {
            size_t n = strlen(path);
            if (path[n - 1] == '/')
                return remat_error_set(err, REMAT_ERR_INPUT, "%s: output: expected a file name, got a folder name",
                                       path);
            return REMAT_OK; /* a new file; the folder is checked by mkstemp */
        }
        return fail_io(a, err, NULL, errno);
    }
    if (S_ISLNK(st.st_mode)) {
        if (stat(path, &st) != 0)
            return remat_error_set(err, REMAT_ERR_INPUT,
                                   "%s: output: a symbolic link to a missing file (expected a file or a link to one; "
                                   "the link is left as it is)",
                                   path);
        /* a link to a device or FIFO (/dev/stdout -> /proc/self/fd/1 -> pipe:[...]) is
         * opened through the link; only a regular target is replaced, beside itself */
        char real[PATH_MAX];
        if (S_ISREG(st.st_mode)) {
            if (!realpath(path, real)) return fail_io(a, err, "cannot resolve the symbolic link", errno);
            if (strlen(real) >= sizeof a->target - 16)
                return remat_error_set(err, REMAT_ERR_INPUT, "%s: output: the link's target path is too long", path);
            snprintf(a->target, sizeof a->target, "%s", real);
        }
    }
    if (S_ISDIR(st.st_mode))
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: output: is a directory (expected a file name)", path);
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        a->direct = 1;
        return REMAT_OK;
    }
    if (!S_ISREG(st.st_mode))
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: output: is a %s (expected a regular file, a character device or a FIFO)", path,
                               S_ISBLK(st.st_mode) ? "block device" : S_ISSOCK(st.st_mode) ? "socket" : "special file");
    /* our own stdout or stderr (--out /dev/stdout > file): written through that
     * descriptor, in order with what the command prints, never renamed away */
    for (int fd = 1; fd <= 2; fd++) {
        struct stat o;
        if (fstat(fd, &o) == 0 && o.st_dev == st.st_dev && o.st_ino == st.st_ino) {
            a->direct = 1;
            a->std_fd = fd;
            return REMAT_OK;
        }
    }
    if (access(a->target, W_OK) != 0 || (st.st_mode & 0222) == 0)
        return remat_error_set(err, REMAT_ERR_INPUT,
                               "%s: output: the file is read-only (expected a writable file; it is left as it is)",
                               path);
    a->mode = (unsigned)(st.st_mode & 07777);
    return REMAT_OK;
}

/* Opens a device or FIFO for writing without blocking forever on a FIFO that has
 * no reader: O_NONBLOCK (ENXIO while there is none), polled, then cleared. */
static int open_direct(remat_afile *a, remat_error *err) {
    if (a->std_fd >= 0) {
        fflush(a->std_fd == 1 ? stdout : stderr);
        int fd = fcntl(a->std_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0) fail_io(a, err, NULL, errno);
        return fd;
    }
    double limit = remat_fifo_wait_s();
    struct timespec nap = {0, 20 * 1000 * 1000};
    const double t0 = remat_now_s();
    for (;;) {
        int fd = open(a->target, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            int fl = fcntl(fd, F_GETFL);
            if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
            return fd;
        }
        if (errno == EINTR) continue;
        if (errno != ENXIO) {
            fail_io(a, err, NULL, errno);
            return -1;
        }
        if (remat_now_s() - t0 >= limit) {
            remat_error_set(err, REMAT_ERR_IO, "%s: cannot write: a FIFO with no reader after %g s (limit: REMAT_FIFO_WAIT_S)", a->path, limit);
            return -1;
        }
        nanosleep(&nap, NULL);
    }
}

static remat_status open_temp_beside(remat_afile *a, remat_error *err) {
    char templ[REMAT_AFILE_PATH_LEN + 16]; /* resolve keeps target 16 under the limit */
    snprintf(templ, sizeof templ, "%s.remat-XXXXXX", a->target);
    int fd = make_temp(a, templ);
    if (fd < 0) return fail_io(a, err, "cannot create a temporary file beside it", errno);
    if (fchmod(fd, (mode_t)a->mode) != 0) {
        int e = errno;
        close(fd);
        drop_temp(a);
        return fail_io(a, err, "cannot set the temporary file's mode", e);
    }
    a->fd = fd;
    return REMAT_OK;
}

remat_status remat_afile_check(const char *path, remat_error *err) {
    remat_afile a;
    remat_status st = resolve(&a, path, err);
    if (st != REMAT_OK || a.direct) return st; /* a device or FIFO is written as it is: not opened here */
    if ((st = open_temp_beside(&a, err)) != REMAT_OK) return st; /* the folder takes a new file */
    close(a.fd);
    drop_temp(&a);
    return REMAT_OK;
}

/* ---- stream mode -------------------------------------------------------------- */

static ssize_t cookie_write(void *c, const char *buf, size_t n) {
    remat_afile *a = c;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(a->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (!a->err_no) a->err_no = w < 0 ? errno : EIO;
            return -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int cookie_close(void *c) {
    (void)c;
    return 0; /* the descriptor is closed by commit/abort */
}

remat_status remat_afile_open(remat_afile *a, const char *path, remat_error *err) {
    remat_status st = resolve(a, path, err);
    if (st != REMAT_OK) return st;
    if (a->direct) {
        a->fd = open_direct(a, err);
        if (a->fd < 0) return err && err->status != REMAT_OK ? err->status : REMAT_ERR_IO;
    } else if ((st = open_temp_beside(a, err)) != REMAT_OK) {
        return st;
    }
    cookie_io_functions_t io = {NULL, cookie_write, NULL, cookie_close};
    a->live = 1;
    a->fp = fopencookie(a, "w", io);
    if (!a->fp) {
        int e = errno;
        remat_afile_abort(a);
        return fail_io(a, err, NULL, e);
    }
    return REMAT_OK;
}

remat_status remat_afile_open_path(remat_afile *a, const char *path, remat_error *err) {
    remat_status st = resolve(a, path, err);
    if (st != REMAT_OK) return st;
    a->by_path = 1;
    if (a->direct) {
        const char *dir = getenv("TMPDIR");
        char templ[REMAT_AFILE_PATH_LEN];
        if (!dir || !*dir || strlen(dir) > sizeof templ - 16) dir = "/tmp";
        snprintf(templ, sizeof templ, "%s/remat-XXXXXX", dir);
        int fd = make_temp(a, templ);
        if (fd < 0) return fail_io(a, err, "cannot create a temporary file in $TMPDIR", errno);
        close(fd);
        a->live = 1;
        return REMAT_OK;
    }
    if ((st = open_temp_beside(a, err)) != REMAT_OK) return st;
    close(a->fd);
    a->fd = -1;
    a->live = 1;
    return REMAT_OK;
}

/* ---- commit ---------------------------------------------------------------------- */

static void fsync_folder(const char *target) {
    char dir[REMAT_AFILE_PATH_LEN];
    const char *slash = strrchr(target, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == target) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - target), target);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* Path mode on a device or FIFO: the finished temporary, copied in order. */
static remat_status copy_to_direct(remat_afile *a, remat_error *err) {
    int in = open(a->tmp, O_RDONLY | O_CLOEXEC);
    if (in < 0) return fail_io(a, err, "cannot read back the temporary file", errno);
    int out = open_direct(a, err);
    if (out < 0) {
        close(in);
        return err && err->status != REMAT_OK ? err->status : REMAT_ERR_IO;
    }
    char buf[65536];
    int e = 0;
    for (;;) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { e = errno; break; }
        if (r == 0) break;
        for (ssize_t done = 0; done < r && !e;) {
            ssize_t w = write(out, buf + done, (size_t)(r - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) e = w < 0 ? errno : EIO;
            else done += w;
        }
        if (e) break;
    }
    close(in);
    if (close(out) != 0 && !e && errno != EINTR) e = errno;
    return e ? fail_io(a, err, NULL, e) : REMAT_OK;
}

remat_status remat_afile_commit(remat_afile *a, remat_error *err) {
    if (!a->live) return remat_error_set(err, REMAT_ERR_INTERNAL, "%s: cannot write: not open", a->path);
    a->live = 0;
    int e = 0;
    if (a->fp) {
        if (fflush(a->fp) != 0 && !a->err_no) a->err_no = errno ? errno : EIO;
        if (ferror(a->fp) && !a->err_no) a->err_no = EIO;
        fclose(a->fp);
        a->fp = NULL;
        e = a->err_no;
    }
    if (a->direct && !a->by_path) {
        if (a->fd >= 0 && a->std_fd >= 0 && !e && fsync(a->fd) != 0 && errno != EINVAL && errno != EROFS) e = errno;
        if (a->fd >= 0 && close(a->fd) != 0 && !e && errno != EINTR) e = errno;
        a->fd = -1;
        return e ? fail_io(a, err, NULL, e) : REMAT_OK;
    }
    if (a->direct) {
        remat_status st = copy_to_direct(a, err);
        drop_temp(a);
        return st;
    }
    if (!e && a->fd < 0) {
        a->fd = open(a->tmp, O_RDONLY | O_CLOEXEC);
        if (a->fd < 0) e = errno;
    }
    if (!e && fsync(a->fd) != 0) e = errno;
    if (a->fd >= 0 && close(a->fd) != 0 && !e && errno != EINTR) e = errno;
    a->fd = -1;
    if (e) {
        drop_temp(a);
        return fail_io(a, err, NULL, e);
    }
    if (rename(a->tmp, a->target) != 0) {
        e = errno;
        drop_temp(a);
        return fail_io(a, err, "cannot rename the temporary file into place", e);
    }
    slot_release(a->slot);
    a->slot = -1;
    a->tmp[0] = 0;
    fsync_folder(a->target);
    return REMAT_OK;
}

void remat_afile_abort(remat_afile *a) {
    if (!a->live) return;
    a->live = 0;
    if (a->fp) {
        fclose(a->fp);
        a->fp = NULL;
    }
    if (a->fd >= 0) {
        close(a->fd);
        a->fd = -1;
    }
    if (a->slot >= 0) drop_temp(a);
}

remat_status remat_afile_write_all(const char *path, const void *data, size_t n, remat_error *err) {
    remat_afile a;
    remat_status st = remat_afile_open(&a, path, err);
    if (st != REMAT_OK) return st;
    if (n > 0 && fwrite(data, 1, n, a.fp) != n && !a.err_no) a.err_no = EIO;
    return remat_afile_commit(&a, err);
}
