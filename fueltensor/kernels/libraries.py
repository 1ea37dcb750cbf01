"""Shared libraries loaded by their content, so an author's rebuild at the same path is new code.

glibc's `dlopen` hands back the library already loaded under a path (or the same file): a
library rebuilt in place would keep running its first build, and a symbol the rebuild added
would be missing. `load` reads the file once, and loads a private copy named by the SHA-256 of
those bytes, in a directory of this process's own (mode 0700, removed when the process exits):
a changed file is a new name and so new code, the same bytes are the handle loaded before. The
copy stays while the process lives, so a checked run's worker process loads exactly these bytes.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Loaded:
    """A loaded library: the file it was read from, the private copy loaded, its bytes' digest."""

    source: Path
    copy: Path
    sha256: str
    handle: ctypes.CDLL


_LOCK = threading.Lock()
_BY_DIGEST: dict[str, Loaded] = {}
_DIRECTORY: list[tuple[int, Path]] = []
"""This process's directory of copies, with the id of the process that made it."""


def _directory() -> Path:
    """This process's private directory of library copies, made on first use."""
    import tempfile  # with shutil and hashlib below: loaded with a first library, not at import

    if _DIRECTORY and _DIRECTORY[0][0] == os.getpid():
        return _DIRECTORY[0][1]
    made = Path(tempfile.mkdtemp(prefix="fueltensor-libraries-"))
    _DIRECTORY[:] = [(os.getpid(), made)]
    atexit.register(_remove, os.getpid(), made)
    return made


def _remove(pid: int, directory: Path) -> None:
    """Remove `directory` at exit, in the process that made it only (not a forked child)."""
    if os.getpid() == pid:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


def load(source: Path) -> Loaded:
    """The library whose bytes are `source`'s now: loaded from a private copy named by their
    digest, or the one loaded before from the same bytes. OSError when dlopen refuses it."""
    import hashlib

    data = source.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    with _LOCK:
        known = _BY_DIGEST.get(digest)
        if known is not None:
            return Loaded(source, known.copy, digest, known.handle)
        copy = _directory() / f"{digest[:32]}-{source.name}"
        if not copy.exists():
            with open(copy, "xb") as f:
                f.write(data)
        handle = ctypes.CDLL(str(copy))
        loaded = Loaded(source, copy, digest, handle)
        _BY_DIGEST[digest] = loaded
        return loaded
