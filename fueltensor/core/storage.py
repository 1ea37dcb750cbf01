"""Allocation of storage buffers aligned to what a kernel contract asks (`caps.alignment_bytes`).

Each buffer is its own allocation, so a live result holds only its own bytes (no shared arena
block). The compiled `_fast.empty` makes a small one as a NumPy buffer over-allocated and viewed
at its first aligned byte, and a large one (256 KiB to 64 MiB) as an aligned block that is kept,
when it dies, for the next buffer of its size; the NumPy fallback over-allocates and reads the
address from `__array_interface__`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

DEFAULT_ALIGNMENT = 64


def _compiled() -> tuple[Callable[[int, Any], np.ndarray], int] | None:
    """The compiled aligned allocator and its alignment, or None where it is not built."""
    try:
        from fueltensor.kernels import _fast
    except ImportError:
        return None
    return _fast.empty, _fast.ALIGNMENT


_COMPILED = _compiled()


def aligned_empty(count: int, dtype: np.dtype, alignment: int = DEFAULT_ALIGNMENT) -> np.ndarray:
    """An uninitialized 1-D array of `count` elements whose first byte is `alignment`-aligned."""
    if _COMPILED is not None and _COMPILED[1] % alignment == 0:
        out: np.ndarray = _COMPILED[0](count, dtype)
        return out
    nbytes = count * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.__array_interface__["data"][0] % alignment
    return raw[start : start + nbytes].view(dtype)
