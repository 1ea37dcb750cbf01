"""Side-by-side timing of the CPU kernels, compiled and pure-NumPy, against NumPy's ufuncs.

Not a test: `python benchmarks/kernels.py [n]` prints, per (op, dtype), the median time of each
kernel implementation (`native` when the extension is built, `pure`) and of the reference ufunc
(NumPy's, or ml_dtypes' for bf16) on the same operands, their ratios (kernel / reference), and the
time of a 4-element call. The candidates run interleaved, one call each per round, so a noisy
machine slows them alike; medians are over the rounds.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np

from fueltensor.kernels import cpu, reference
from fueltensor.kernels._chassis import IMPLEMENTATIONS

UFUNCS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "pow": np.power,
    "rem": np.remainder,
}
DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
THUNKS = {name: cpu.thunks(name) for name in IMPLEMENTATIONS}


def interleaved_medians(
    fns: Sequence[Callable[..., Any]], lhs: Any, rhs: Any, out: Any, rounds: int
) -> list[float]:
    """Median wall time in seconds of each `fn(lhs, rhs, out=out)`, timed round-robin."""
    for fn in fns:
        fn(lhs, rhs, out=out)
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, row in zip(fns, times, strict=True):
            t = time.perf_counter()
            fn(lhs, rhs, out=out)
            row.append(time.perf_counter() - t)
    return [statistics.median(row) for row in times]


def tiny_medians(fns: Sequence[Callable[..., Any]], lhs: Any, rhs: Any, out: Any) -> list[float]:
    """Median per-call time in seconds of each fn on tiny operands (batches of 200 calls)."""
    batch = 200
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(25):
        for fn, row in zip(fns, times, strict=True):
            t = time.perf_counter()
            for _ in range(batch):
                fn(lhs, rhs, out=out)
            row.append((time.perf_counter() - t) / batch)
    return [statistics.median(row) for row in times]


def operands(n: int, dtype: Any) -> tuple[Any, Any, Any]:
    """Positive lhs (so pow stays real), signed rhs away from zero, and an output buffer."""
    rng = np.random.default_rng(0)
    lhs = (rng.random(n) * 10 + 0.5).astype(dtype)
    rhs = (rng.standard_normal(n) * 3 + 0.25).astype(dtype)
    return lhs, rhs, np.empty(n, dtype)


def main(n: int) -> None:
    """Print the ratio table for size `n` and for a 4-element call."""
    np.seterr(all="ignore")
    rounds = 9 if n >= 10**6 else 51
    names = list(THUNKS)
    print(f"n = {n}; ratio = kernel / reference ufunc; medians of {rounds} interleaved rounds")
    head = "".join(f"{k + ' ms':>11}" for k in [*names, "ufunc"])
    ratios = "".join(f"{k + ' ×':>10}" for k in names)
    tiny = "".join(f"{k + ' µs':>10}" for k in [*names, "ufunc"])
    print(f"{'kernel':<14}{head}{ratios}   4 elements:{tiny}")
    for op, ufunc in UFUNCS.items():
        for suffix, dtype in DTYPES.items():
            key = f"fuel_cpu_backend::byte_kernels::{op}_{suffix}"
            fns = [*(THUNKS[name][key] for name in names), ufunc]
            big = interleaved_medians(fns, *operands(n, dtype), rounds)
            small = tiny_medians(fns, *operands(4, dtype))
            print(
                f"{op + '_' + suffix:<14}"
                + "".join(f"{t * 1e3:>11.2f}" for t in big)
                + "".join(f"{t / big[-1]:>10.2f}" for t in big[:-1])
                + " " * 14
                + "".join(f"{t * 1e6:>10.2f}" for t in small)
            )
    rows = max(1, n // 10**4)
    a = np.ones((rows, 10**4), np.float32)
    b = np.ones(10**4, np.float32)
    out = np.empty_like(a)
    fn = reference.ENTRY_POINTS["fuel_reference_backend::ops::broadcast_add"]
    k, r = interleaved_medians([fn, np.add], a, b, out, rounds)
    print(f"broadcast_add f32 ({rows}×10^4 + 10^4): {k / r:.2f} × np.add")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**6)
