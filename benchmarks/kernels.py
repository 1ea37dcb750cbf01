"""Quick side-by-side timing of the kernels against NumPy/ml_dtypes ufuncs, printed as ratios.

Not a test: `python benchmarks/kernels.py [n]` prints, per (op, dtype), the median kernel time,
the median reference-ufunc time on the same operands, and their ratio (kernel / reference).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from fueltensor.kernels import cpu, reference

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


def median_time(fn: Callable[..., Any], lhs: Any, rhs: Any, out: Any, repeats: int) -> float:
    """Median wall time in seconds of `fn(lhs, rhs, out=out)` after one warm-up call."""
    fn(lhs, rhs, out=out)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(lhs, rhs, out=out)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def operands(n: int, dtype: Any) -> tuple[Any, Any, Any]:
    """Positive lhs (so pow stays real), signed rhs away from zero, and an output buffer."""
    rng = np.random.default_rng(0)
    lhs = (rng.random(n) * 10 + 0.5).astype(dtype)
    rhs = (rng.standard_normal(n) * 3 + 0.25).astype(dtype)
    return lhs, rhs, np.empty(n, dtype)


def main(n: int) -> None:
    """Print the ratio table for size `n` and for a 4-element call."""
    np.seterr(all="ignore")
    repeats = 7 if n >= 10**6 else 50
    print(f"n = {n}  (ratio = kernel / reference ufunc; median of {repeats})")
    print(f"{'kernel':<14}{'kernel ms':>11}{'ufunc ms':>11}{'ratio':>8}{'tiny µs':>10}{'Δ µs':>8}")
    for op, ufunc in UFUNCS.items():
        for suffix, dtype in DTYPES.items():
            fn = cpu.ENTRY_POINTS[f"fuel_cpu_backend::byte_kernels::{op}_{suffix}"]
            lhs, rhs, out = operands(n, dtype)
            k = median_time(fn, lhs, rhs, out, repeats)
            r = median_time(ufunc, lhs, rhs, out, repeats)
            tl, tr, to = operands(4, dtype)
            tk = median_time(fn, tl, tr, to, 2000)
            tu = median_time(ufunc, tl, tr, to, 2000)
            print(
                f"{op + '_' + suffix:<14}{k * 1e3:>11.2f}{r * 1e3:>11.2f}{k / r:>8.2f}"
                f"{tk * 1e6:>10.2f}{(tk - tu) * 1e6:>8.2f}"
            )
    rows = max(1, n // 10**4)
    a = np.ones((rows, 10**4), np.float32)
    b = np.ones(10**4, np.float32)
    out = np.empty_like(a)
    fn = reference.ENTRY_POINTS["fuel_reference_backend::ops::broadcast_add"]
    k = median_time(fn, a, b, out, repeats)
    r = median_time(np.add, a, b, out, repeats)
    print(f"broadcast_add f32 ({rows}×10^4 + 10^4): {k / r:.2f} × np.add")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**6)
