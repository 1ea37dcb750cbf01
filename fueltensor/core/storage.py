"""Allocation of storage buffers aligned to what a kernel contract asks (`caps.alignment_bytes`).

Finding a NumPy buffer's address costs ~3 µs here, more than a tiny operation itself, so small
buffers are carved from a per-thread arena whose base address is known; large ones over-allocate
and slice. A live small tensor keeps its (32 KiB) arena alive: the price of fast tiny operations.
"""

from __future__ import annotations

import threading

import numpy as np

DEFAULT_ALIGNMENT = 64
_ARENA_BYTES = 32 * 1024
_SMALL_BYTES = 1024


class _Arena(threading.local):
    """A per-thread bump allocator over one 64-byte-aligned block (refilled on first use)."""

    def __init__(self) -> None:
        self.block = np.empty(0, np.uint8)
        self.pos = _ARENA_BYTES

    def refill(self) -> None:
        raw = np.empty(_ARENA_BYTES + DEFAULT_ALIGNMENT, np.uint8)
        start = -raw.ctypes.data % DEFAULT_ALIGNMENT
        self.block = raw[start : start + _ARENA_BYTES]
        self.pos = 0


_arena = _Arena()


def aligned_empty(count: int, dtype: np.dtype, alignment: int = DEFAULT_ALIGNMENT) -> np.ndarray:
    """An uninitialized 1-D array of `count` elements whose first byte is `alignment`-aligned."""
    nbytes = count * dtype.itemsize
    if nbytes <= _SMALL_BYTES and DEFAULT_ALIGNMENT % alignment == 0:
        arena = _arena
        pos = arena.pos
        if pos + nbytes >= _ARENA_BYTES:
            arena.refill()
            pos = 0
        # The next buffer starts at the next 64-byte boundary strictly past this one's start.
        arena.pos = pos + (nbytes // DEFAULT_ALIGNMENT + 1) * DEFAULT_ALIGNMENT
        # np.ndarray over the block (its base, no buffer export): ~0.8 µs cheaper than frombuffer.
        out: np.ndarray = np.ndarray((count,), dtype, arena.block, pos)
        return out
    raw = np.empty(nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + nbytes].view(dtype)
