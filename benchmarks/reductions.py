"""Issue 48's speed rows: `ft.sum` and `ft.max` of float32 through the public namespace (plan
cache, contract thunk, compiled core) and the raw core (`_native.reduce`) beside `np.sum` /
`np.max` and PyTorch's `torch.sum` / `torch.amax` where it is installed, at 10^7 elements and
along each axis of a 4096x4096 array, and a 3-element sum (the call's overhead). Every
function of a row is timed in rotation within one run, so the machine's load falls on all of
them alike; each figure is the fastest of `repeats` rounds (PyTorch's OpenMP threads told to
sleep when idle, so that they take no core from the next function timed). fueltensor and
PyTorch run on `threads` threads (NumPy's reductions run on one). Prints a Markdown table: times
in ms (µs for the small call) and ratios of our time to NumPy's (below 1, ours is faster).
Nothing here is a test.

    PYTHONPATH=. python benchmarks/reductions.py [repeats] [threads]
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # PyTorch's idle threads sleep, not spin

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import fueltensor as ft
from fueltensor import ops
from fueltensor.ext import _native

CODES = {row.op_kind: i for i, row in enumerate(ops.REDUCTION_OPS)}
"""The reductions' codes in `_native.REDUCTION_OPS`, from the op table."""
BLOCK = 256
"""The blocked order's block, as the CPU contracts declare it."""


def _torch() -> Any:
    """PyTorch, or None where it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def fastest(fns: list[Callable[[], object]], repeats: int, number: int) -> list[float]:
    """Seconds per call of each fn: `number` calls a sample, the functions in rotation (the
    order reversed every other round), the fastest of `repeats` samples each."""
    best = [float("inf")] * len(fns)
    for fn in fns:
        fn()  # warm: plan cache, pool workers, first-touch pages
    for r in range(repeats):
        order = list(range(len(fns)))[:: -1 if r % 2 else 1]
        for i in order:
            start = time.perf_counter()
            for _ in range(number):
                fns[i]()
            best[i] = min(best[i], (time.perf_counter() - start) / number)
    return best


def cases() -> list[tuple[str, str, np.ndarray[Any, Any], int | None]]:
    """(label, op, input, axis): the rows of issue 48's "done when", and the small call."""
    rng = np.random.default_rng(0)
    flat = rng.standard_normal(10**7).astype(np.float32)
    square = rng.standard_normal((4096, 4096)).astype(np.float32)
    small = np.array([1.0, 2.0, 3.0], np.float32)
    rows = []
    for op in ("sum", "max"):
        rows += [(f"{op} 10^7", op, flat, None), (f"{op} 4096² axis 0", op, square, 0),
                 (f"{op} 4096² axis 1", op, square, 1)]  # fmt: skip
    rows.append(("sum of 3", "sum", small, None))
    return rows


def functions(op: str, a: np.ndarray[Any, Any], axis: int | None) -> list[Callable[[], object]]:
    """ft's namespace call, the raw core into a preallocated output, NumPy's, PyTorch's."""
    x = ft.asarray(a)
    axes = tuple(range(a.ndim)) if axis is None else (axis,)
    out = np.empty(tuple(n for k, n in enumerate(a.shape) if k not in axes), a.dtype)
    code = CODES[ops.OpKind.SUM if op == "sum" else ops.OpKind.MAX]
    fns: list[Callable[[], object]] = [
        partial(getattr(ft, op), x, axis=axis),
        partial(_native.reduce, code, a, out, axes, "float32", _native.ORDER_BLOCKED, BLOCK),
        partial(np.sum if op == "sum" else np.max, a, axis=axis),
    ]
    torch = _torch()
    if torch is not None:
        t = torch.from_numpy(a)
        reduce = torch.sum if op == "sum" else torch.amax
        fns.append(partial(reduce, t) if axis is None else partial(reduce, t, dim=axis))
    return fns


def rows(repeats: int, threads: int) -> list[str]:
    """The table's lines, fueltensor and PyTorch on `threads` threads."""
    torch = _torch()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    lines = [
        f"isa {_native.isa()}, {cores} core(s), {threads} thread(s), best of {repeats}",
        "| f32 | kernel | ft | core | NumPy | ft ÷ NumPy | core ÷ NumPy | PyTorch |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    before = ft.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        for label, op, a, axis in cases():
            small = a.size < 1000
            scale, unit = (1e6, "µs") if small else (1e3, "ms")
            fns = functions(op, a, axis)
            times = fastest(fns, repeats, 2000 if small else 1)
            ours, core, numpy_s = times[:3]
            kernel = ft.explain(getattr(ft, op), ft.asarray(a), axis=axis).kernel_name
            torch_text = f"{times[3] * scale:.3f} {unit}" if len(times) > 3 else "—"
            lines.append(
                f"| {label} | {kernel} | {ours * scale:.3f} {unit} | {core * scale:.3f} {unit} | "
                f"{numpy_s * scale:.3f} {unit} | {ours / numpy_s:.2f} | {core / numpy_s:.2f} | "
                f"{torch_text} |"
            )
    finally:
        ft.set_num_threads(before)
    return lines


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print("\n".join(rows(args[0] if args else 15, args[1] if len(args) > 1 else 2)))
