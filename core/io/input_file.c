/* input_file.c - inputs opened without blocking forever (contract in input_file.h).
 *
 * Assumptions: on Linux a FIFO opened O_RDONLY|O_NONBLOCK succeeds at once, and
 * poll() reports neither POLLIN nor POLLHUP until a writer has come (POLLHUP only
 * once a writer that came has gone), so polling with a timeout distinguishes "no
 * writer yet" from "end of data". Pipes from process substitution (/dev/fd/N)
 * already have their writer.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/io/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

remat_status remat_env_seconds(const char *name, int zero_ok, double def, double *out, remat_error *err) {
    *out = def;
    const char *e = getenv(name);
    if (!e || !*e) return REMAT_OK;
    char *end = NULL;
    errno = 0;
    double v = strtod(e, &end);
    if (end == e || *end != 0 || errno != 0 || !(v >= 0 && v <= REMAT_ENV_SECONDS_MAX) || (!zero_ok && v == 0))
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: expected a number of seconds in 0..%d%s, got '%.64s'", name,
                               REMAT_ENV_SECONDS_MAX, zero_ok ? "" : ", above 0", e);
    *out = v;
    return REMAT_OK;
}

double remat_fifo_wait_s(void) {
    double v;
    remat_error err = {REMAT_OK, {0}};
    remat_env_seconds("REMAT_FIFO_WAIT_S", 1, REMAT_INPUT_WAIT_S, &v, &err);
    return v; /* the command line refused a bad value before any work (remat_env_check) */
}

ssize_t remat_input_read_timed(int fd, void *buf, size_t n, double limit_s) {
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(limit_s * 1000.0));
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return -2;
        ssize_t got = read(fd, buf, n);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        return got;
    }
}

static const char *kind_name(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISBLK(m)) return "a block device";
    return NULL;
}

remat_status remat_input_open(const char *path, int *fd, int *regular, remat_error *err) {
    *fd = -1;
    *regular = 0;
    if (!path || !path[0])
        return remat_error_set(err, REMAT_ERR_IO, "(no path): file: expected a file name, got an empty path");
    struct stat st;
    if (stat(path, &st) != 0)
        return remat_error_set(err, REMAT_ERR_IO, "%s: file: cannot open (%s)", path, strerror(errno));
    const char *kind = kind_name(st.st_mode);
    if (kind) return remat_error_set(err, REMAT_ERR_IO, "%s: file: is %s (expected a file)", path, kind);
    int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0) return remat_error_set(err, REMAT_ERR_IO, "%s: file: cannot open (%s)", path, strerror(errno));
    if (fstat(f, &st) != 0 || kind_name(st.st_mode)) { /* replaced between stat and open */
        close(f);
        return remat_error_set(err, REMAT_ERR_IO, "%s: file: expected a file", path);
    }
    if (S_ISFIFO(st.st_mode)) {
        double limit = remat_fifo_wait_s();
        struct pollfd p = {f, POLLIN, 0};
        int r;
        do r = poll(&p, 1, (int)(limit * 1000.0));
        while (r < 0 && errno == EINTR);
        if (r == 0) {
            close(f);
            return remat_error_set(err, REMAT_ERR_IO,
                                   "%s: file: a FIFO with no writer (or no data) after %g s (limit: REMAT_FIFO_WAIT_S)",
                                   path, limit);
        }
    }
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0) fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    *fd = f;
    *regular = S_ISREG(st.st_mode) ? 1 : 0;
    return REMAT_OK;
}

remat_status remat_input_read_all(const char *path, size_t max_bytes, char **data, size_t *len, remat_error *err) {
    *data = NULL;
    *len = 0;
    int fd, regular;
    remat_status st = remat_input_open(path, &fd, &regular, err);
    if (st != REMAT_OK) return st;
    return remat_input_read_fd(fd, path, max_bytes, data, len, err);
}

remat_status remat_input_read_fd(int fd, const char *path, size_t max_bytes, char **data, size_t *len,
                                 remat_error *err) {
    *data = NULL;
    *len = 0;
    size_t cap = 4096, n = 0;
    double limit = remat_fifo_wait_s(); /* a writer that stalls is given up on */
    char *buf = remat_xmalloc(cap + 1, err);
    if (!buf) {
        close(fd);
        return REMAT_ERR_NOMEM;
    }
    for (;;) {
        if (n == cap) {
            if (cap > max_bytes) {
                remat_xfree(buf);
                close(fd);
                return remat_error_set(err, REMAT_ERR_INPUT, "%s: file: expected at most %zu bytes, got more", path,
                                       max_bytes);
            }
            size_t ncap = cap * 2 > max_bytes + 1 ? max_bytes + 1 : cap * 2;
            char *nb = remat_xrealloc(buf, ncap + 1, err);
            if (!nb) {
                remat_xfree(buf);
                close(fd);
                return REMAT_ERR_NOMEM;
            }
            buf = nb;
            cap = ncap;
        }
        ssize_t r = remat_input_read_timed(fd, buf + n, cap - n, limit);
        if (r == -2) {
            remat_xfree(buf);
            close(fd);
            return remat_error_set(err, REMAT_ERR_IO,
                                   "%s: file: the writer sent %zu bytes, then nothing for %g s (limit: REMAT_FIFO_WAIT_S)",
                                   path, n, limit);
        }
        if (r < 0) {
            int e = errno;
            remat_xfree(buf);
            close(fd);
            return remat_error_set(err, REMAT_ERR_IO, "%s: file: read error (%s)", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (n > max_bytes) {
        remat_xfree(buf);
        return remat_error_set(err, REMAT_ERR_INPUT, "%s: file: expected at most %zu bytes, got more", path, max_bytes);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return REMAT_OK;
}
