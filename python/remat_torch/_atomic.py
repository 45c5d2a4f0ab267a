"""_atomic.py - the package's one file writer: nothing is ever written half.

Every file the bridge writes (model files, weights, gradient dumps) goes to a unique
temporary file in the destination's folder, is flushed and fsynced, then renamed over
the destination, as remat's own writer (core/io/atomic_file.h) does.
"""
import contextlib
import os
import tempfile
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yields a temporary path to write; on success it replaces ``path``, on an exception it is removed.

    Example::

        >>> with atomic_path("w.h5") as tmp:
        ...     with h5py.File(tmp, "w") as f:
        ...         f["x"] = 1
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".tmp", dir=folder)
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str, text: str) -> None:
    """Writes ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        with open(tmp, "w") as f:
            f.write(text)
