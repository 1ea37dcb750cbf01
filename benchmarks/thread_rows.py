"""Issue 24 item 3's rows for benchmarks/run.py: f32 add and multiply at large sizes, results
dropped each call, fueltensor on one thread and on every core the process may use, beside NumPy
and numexpr on two threads (when importable; not a dependency of fueltensor); and issue 34's
"split" rows, which measure per op class where splitting starts to pay (abi.h's SPLIT_FROM).

"split" runs the compiled body split from any size (the threshold lowered for that call only),
back to back, so the pool's worker is still polling for its next chunk; "parked" times one split
call after the worker has gone to sleep (a pause longer than its spin), the cost of the first
large call after idle. The rows below the threshold show where splitting starts to pay: the
shipped threshold (`default`) is f32 add's and multiply's `SPLIT_FROM`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import ml_dtypes
import numpy as np

import fueltensor as ft
from fueltensor.kernels import threads
from fueltensor.kernels._chassis import NATIVE

try:
    import numexpr  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    numexpr = None

SIZES = (2**15, 2**16, 2**17, 2**18, 2**19, 2**20, 10**6, 2**21, 2**22, 10**7)
TARGETS = {10**6: 0.8, 10**7: 0.6}
"""Issue 24: fueltensor on every core at most this many times NumPy's time."""
OPS: dict[str, tuple[Callable[[Any, Any], Any], np.ufunc, str]] = {
    "add": (ft.add, np.add, "a + b"),
    "mul": (ft.multiply, np.multiply, "a * b"),
}


@contextmanager
def setting(count: int, parallel_from: int | None = None) -> Iterator[None]:
    """Run with `count` threads (and, when given, a lowered splitting threshold), set in the
    compiled kernels alone: `ft.set_num_threads` would also forget every plan."""
    assert NATIVE is not None
    before = NATIVE.set_threads(count)
    old = NATIVE.set_parallel_from(parallel_from) if parallel_from else None
    try:
        yield
    finally:
        NATIVE.set_threads(before)
        if old is not None:
            NATIVE.set_parallel_from(old)


def timed(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median wall seconds per call of each, in rotation (each sample about 2 ms of calls)."""
    inner = [max(1, int(2e-3 / max(_once(fn), 1e-7))) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        for i in range(len(fns)) if r % 2 == 0 else reversed(range(len(fns))):
            start = time.perf_counter()
            for _ in range(inner[i]):
                fns[i]()
            samples[i].append((time.perf_counter() - start) / inner[i])
    return [statistics.median(s) for s in samples]


def parked(fn: Callable[[], object], repeats: int) -> float:
    """Median wall seconds of one call made after a pause of 2 ms (the pool's workers parked)."""
    samples = []
    for _ in range(repeats):
        time.sleep(2e-3)
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _once(fn: Callable[[], object]) -> float:
    fn()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _variants(fuel: Callable[[Any, Any], Any], x: Any, y: Any) -> list[Callable[[], object]]:
    """fueltensor on one thread, split from any size, and as shipped (every core)."""
    cores = threads.cores()

    def one() -> object:
        with setting(1):
            return fuel(x, y)

    def split() -> object:
        with setting(cores, 512):
            return fuel(x, y)

    def default() -> object:
        with setting(cores):
            return fuel(x, y)

    return [one, split, default]


def thread_rows(repeats: int) -> None:
    """Print the rows as a Markdown table (ms per call; ratios against NumPy)."""
    if numexpr is not None:
        numexpr.set_num_threads(2)
    start = threads.SPLIT_FROM["add"]["float32"]
    print(f"cores this process may use: {threads.cores()}; f32 add and mul split from {start:,}")
    head = "| case | NumPy | ft 1 thr | ft split | split parked | ft default | default ÷ NumPy |"
    print(head + " target | | numexpr 2 thr | numexpr ÷ NumPy |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    rng = np.random.default_rng(0)
    for n in SIZES:
        a, b = rng.random(n, np.float32) + 0.5, rng.random(n, np.float32) - 0.5
        x, y = ft.asarray(a), ft.asarray(b)
        for name, (fuel, ufunc, expr) in OPS.items():
            fns: list[Callable[[], object]] = [partial(ufunc, a, b), *_variants(fuel, x, y)]
            if numexpr is not None:
                fns.append(partial(numexpr.evaluate, expr, local_dict={"a": a, "b": b}))
            t = [s * 1e3 for s in timed(fns, repeats)]
            t.insert(3, parked(fns[2], repeats) * 1e3)
            ratio, target = t[4] / t[0], TARGETS.get(n)
            verdict = "" if target is None else ("pass" if ratio <= target else "MISS")
            cells = [f"{name} f32 n={n:,}", *(f"{v:.4g}" for v in t[:5]), f"{ratio:.2f}"]
            cells += [f"≤ {target}" if target else "—", verdict]
            cells += [f"{t[5]:.4g}", f"{t[5] / t[0]:.2f}"] if numexpr is not None else ["", ""]
            print("| " + " | ".join(cells) + " |", flush=True)


SPLIT_SIZES = tuple(2**k for k in range(10, 21))
SPLIT_CASES: dict[str, list[tuple[str, str, Callable[[Any, Any], Any]]]] = {
    "arith": [("add", "float32", ft.add), ("mul", "float64", ft.multiply)],
    "select": [("maximum", "float32", ft.maximum), ("maximum", "float64", ft.maximum)],
    "divide": [("div", "float32", ft.divide), ("rem", "float64", ft.remainder)],
    "half": [("add", "bfloat16", ft.add), ("maximum", "float16", ft.maximum)],
    "pow": [("pow", "float32", ft.pow), ("pow", "float64", ft.pow)],
    "powi": [("powi", "float32", lambda x, _: x**3), ("powi", "float64", lambda x, _: x**3)],
}
"""abi.h's op classes, each by the ops that bound it (its cheapest): (op, dtype, call)."""
PAYS = 0.9
"""Splitting pays at a size when two threads take at most this share of one thread's time."""


def split_rows(repeats: int) -> None:
    """Per op class and size, fueltensor's call (result dropped) split over every core from any
    size, back to back, as a share of its time on one thread; "pays from" is the smallest
    size from which every larger one is at most PAYS; abi.h's threshold beside it."""
    assert NATIVE is not None
    cores = threads.cores()
    print(f"cores {cores}; split ÷ one thread, back to back (wall clock); pays at ≤ {PAYS}")
    sizes = " | ".join(f"2^{n.bit_length() - 1}" for n in SPLIT_SIZES)
    print(f"| class | case | {sizes} | pays from | SPLIT_FROM |")
    print("|---|---|" + "---:|" * (len(SPLIT_SIZES) + 2))
    rng = np.random.default_rng(0)
    for kind, cases in SPLIT_CASES.items():
        for op, dtype, call in cases:
            np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
            shares = []
            for n in SPLIT_SIZES:
                a = (rng.random(n, np.float32) * 4 + 0.5).astype(np_dtype)
                b = (rng.random(n, np.float32) * 4 - 2).astype(np_dtype)
                x, y = ft.asarray(a), ft.asarray(b)
                one, split = _variants(call, x, y)[:2]
                t_one, t_split = timed([one, split], repeats)
                shares.append(t_split / t_one)
            pays = next(
                (n for k, n in enumerate(SPLIT_SIZES) if all(r <= PAYS for r in shares[k:])), None
            )
            cells = [kind, f"{op} {dtype}", *(f"{r:.2f}" for r in shares)]
            cells += [f"{pays:,}" if pays else "—", f"{threads.SPLIT_FROM[op][dtype]:,}"]
            print("| " + " | ".join(cells) + " |", flush=True)
