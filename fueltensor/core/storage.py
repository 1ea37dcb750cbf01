"""Allocation of storage buffers aligned to what a kernel contract asks (`caps.alignment_bytes`).

Each buffer is its own allocation, so a live result holds only its own bytes (no shared arena
block). The compiled `_fast.empty` makes a small one as a NumPy buffer over-allocated and viewed
at its first aligned byte, and a large one (256 KiB to 256 MiB) as an aligned block that is kept,
when it dies, for the next buffer of its size; the NumPy fallback over-allocates and reads the
address from `__array_interface__`.

Before anything is allocated for an operation, `refuse_output` checks that its output can exist
at all (its bytes within a 64-bit index and this machine's memory), so an impossible output
fails at once, in the same words on every path, with nothing densified or allocated first.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

DEFAULT_ALIGNMENT = 64


def _compiled() -> tuple[Callable[[int, Any], np.ndarray], int] | None:
    """The compiled aligned allocator and its alignment, or None where it is not built."""
    try:
        from fueltensor.ext import _fast
    except ImportError:
        return None
    return _fast.empty, _fast.ALIGNMENT


_COMPILED = _compiled()


MAX_BYTES = 2**63 - 1
"""The largest buffer a 64-bit signed index addresses (NumPy's limit as well)."""


def _machine_bytes() -> int:
    """This machine's memory, RAM plus swap, in bytes (at most MAX_BYTES): an output larger than
    it cannot be written. MAX_BYTES where the platform does not say."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return MAX_BYTES
    swap = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("SwapTotal:"):
                    swap = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        swap = 0
    return min(MAX_BYTES, ram + swap)


MACHINE_BYTES = _machine_bytes()
"""The most bytes an output may take: read once, at import."""


def output_fits(shape: tuple[int, ...], itemsize: int) -> bool:
    """Whether an output of `shape` with `itemsize`-byte elements can exist on this machine."""
    return math.prod(shape) * itemsize <= MACHINE_BYTES


def refuse_output(
    shape: tuple[int, ...], itemsize: int, dtype_name: str, what: str = "the output"
) -> None:
    """Raise MemoryError, naming `what`, its shape and its bytes, when an output of `shape`
    cannot exist (as NumPy raises MemoryError for an allocation that fails); else nothing."""
    nbytes = math.prod(shape) * itemsize
    if nbytes <= MACHINE_BYTES:
        return
    limit = (
        f"the largest buffer a 64-bit index reaches ({MAX_BYTES:,} bytes)"
        if nbytes > MAX_BYTES
        else f"this machine's memory, RAM plus swap ({MACHINE_BYTES:,} bytes)"
    )
    raise MemoryError(
        f"{what}, shape {shape} of {dtype_name}, would take {nbytes:,} bytes, more than "
        f"{limit}; nothing was allocated"
    )


def aligned_empty(count: int, dtype: np.dtype, alignment: int = DEFAULT_ALIGNMENT) -> np.ndarray:
    """An uninitialized 1-D array of `count` elements whose first byte is `alignment`-aligned
    (MemoryError from `refuse_output` when it cannot exist)."""
    if count * dtype.itemsize > MACHINE_BYTES:  # the name only when refusing: it costs µs
        refuse_output((count,), dtype.itemsize, dtype.name, "a buffer")
    if _COMPILED is not None and _COMPILED[1] % alignment == 0:
        out: np.ndarray = _COMPILED[0](count, dtype)
        return out
    nbytes = count * dtype.itemsize
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.__array_interface__["data"][0] % alignment
    return raw[start : start + nbytes].view(dtype)


def allocator(
    count: int, dtype: np.dtype, alignment: int = DEFAULT_ALIGNMENT
) -> Callable[[], np.ndarray]:
    """`aligned_empty(count, dtype, alignment)` as a call without arguments, what it decides
    from them decided once (for a caller that allocates one output size again and again): the
    compiled allocator bound to them where it serves, else `aligned_empty` itself."""
    fits = count * dtype.itemsize <= MACHINE_BYTES  # else `aligned_empty` refuses it, named
    if fits and _COMPILED is not None and _COMPILED[1] % alignment == 0:
        return partial(_COMPILED[0], count, dtype)
    return partial(aligned_empty, count, dtype, alignment)
