"""Reading a file the way every document and cache entry is read: regular files only, bounded.

A FIFO would block the reader forever and a device (`/dev/zero`, through a symlink or not)
never ends, so the file is opened without blocking and checked with `fstat` before anything
is read (no window between check and open); at most `limit + 1` bytes are ever read.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

MAX_FILE_BYTES: Final = 64 * 2**20
"""Largest document or cache entry read (the bundled documents are under 100 kB)."""


def read_regular(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at `path`; OSError (with a strerror saying why) for a
    FIFO, device, directory or socket, or a file larger than `limit` bytes."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, max(info.st_size + 1, 2**16)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
    return b"".join(chunks)
