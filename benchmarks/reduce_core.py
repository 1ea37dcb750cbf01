"""Issue 48's numbers for the compiled reduction core: float32 sums by `_native.reduce` beside
`np.sum` in one run (so load cancels out of the ratios), at 10^7 elements and along each axis
of a 4096x4096 array, each order, on 1 thread and on this machine's cores; best of many repeats,
printed as milliseconds and ratios (NumPy's time / ours: above 1, the core is faster). Prints
only: nothing here is a test.

    PYTHONPATH=. python benchmarks/reduce_core.py [repeats]
"""

from __future__ import annotations

import os
import sys
import timeit
from collections.abc import Callable
from functools import partial

import numpy as np

from fueltensor import ops
from fueltensor.ext import _native

SUM = next(i for i, row in enumerate(ops.REDUCTION_OPS) if row.op_kind is ops.OpKind.SUM)
"""The sum's code in `_native.REDUCTION_OPS`, from the op table."""
BLOCK = 256
"""The blocked order's block size."""


def best(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` single calls, in milliseconds."""
    return min(timeit.repeat(fn, number=1, repeat=repeats)) * 1e3


def rows(repeats: int) -> list[str]:
    """One line per case, order and thread count: NumPy's time, ours, and their ratio."""
    rng = np.random.default_rng(0)
    flat = rng.standard_normal(10**7).astype(np.float32)
    square = rng.standard_normal((4096, 4096)).astype(np.float32)
    cases = [("10^7", flat, (0,)), ("4096^2 axis 0", square, (0,)),
             ("4096^2 axis 1", square, (1,))]  # fmt: skip
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    previous = _native.set_threads(1)
    lines = [f"isa {_native.isa()}, {cores} core(s), block {BLOCK}; ratio = NumPy / core"]
    try:
        for name, x, axes in cases:
            out = np.empty(tuple(n for k, n in enumerate(x.shape) if k not in axes), x.dtype)
            numpy_ms = best(partial(np.sum, x, axis=axes[0]), repeats)
            for order, label in ((_native.ORDER_BLOCKED, "blocked"),
                                 (_native.ORDER_SEQUENTIAL, "sequential")):  # fmt: skip
                for threads in sorted({1, cores}):
                    _native.set_threads(threads)
                    call = partial(_native.reduce, SUM, x, out, axes, "float32", order, BLOCK)
                    ours = best(call, repeats)
                    lines.append(
                        f"{name:14} {label:10} {threads} thread(s): NumPy {numpy_ms:7.3f} ms, "
                        f"core {ours:7.3f} ms, ratio {numpy_ms / ours:5.2f}"
                    )
                _native.set_threads(1)
    finally:
        _native.set_threads(previous)
    return lines


if __name__ == "__main__":
    print("\n".join(rows(int(sys.argv[1]) if len(sys.argv) > 1 else 15)))
