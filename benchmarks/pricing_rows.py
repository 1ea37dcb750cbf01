"""Issue 44 item 2's rows for benchmarks/run.py (`--only pricing`): what the planner's choice
costs where it matters: a broadcast view's peak memory, the half types' broadcast and scalar
operands against float32's, and the float32 scalar rows against NumPy.

- broadcast-view memory: `x + x`, x a stride-0 view whose output is `--memory-mib` MiB, in a
  fresh process: its `ru_maxrss` growth over the output's size (target: the output plus a small
  constant; NumPy's own growth beside it).
- half rows: float16 and bfloat16 `a + row` and `a * 0.5` at 10^6 elements as a multiple of the
  float32 time of the same expression (target 1.5x), NumPy's half time beside it.
- scalar rows: `x + 1.0` and `x * 2.0` on 10^6 float32 elements against NumPy (target 1.3x).
Each row names the plan's provider, the thing the planner decided.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import ml_dtypes
import numpy as np

import fueltensor as ft

HALF_TARGET = 1.5
"""Issue 44: the half types' broadcast and scalar rows at most 1.5x the float32 time."""
SCALAR_TARGET = 1.3
"""Issue 44 (since wave 2): `x + 1.0` / `x * 2.0` on 10^6 float32 at most 1.3x NumPy."""
MEMORY_SLACK_MIB = 16
"""The 'small constant' above the output a broadcast view's `x + x` may grow peak memory by."""
N = 10**6

_MEMORY_CHILD = """
import json, resource, sys
import numpy as np
mib = int(sys.argv[1]) << 20
n = mib // 4
row = np.arange(1024, dtype=np.float32)
if sys.argv[2] == "numpy":
    x = np.broadcast_to(row, (n // 1024, 1024))
else:
    import fueltensor as ft
    x = ft.broadcast_to(ft.asarray(row), (n // 1024, 1024))
    (ft.broadcast_to(ft.asarray(row[:16]), (4, 16)) + ft.asarray(row[:16]))  # warm the planner
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
y = x + x
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"growth_kib": after - before}))
"""


def maxrss_growth_mib(mib: int, side: str) -> float:
    """ru_maxrss growth (MiB) of `x + x` in a fresh process, x a stride-0 f32 view making a
    `mib`-MiB output, on `side` ("fueltensor" or "numpy")."""
    done = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD, str(mib), side],
        capture_output=True,
        text=True,
        check=True,
    )
    growth_kib: int = json.loads(done.stdout)["growth_kib"]
    return growth_kib / 1024


def memory_rows(mib: int, runs: int = 3) -> None:
    """Peak-memory growth of a broadcast view's `x + x`, fueltensor beside NumPy."""
    ours = statistics.median(maxrss_growth_mib(mib, "fueltensor") for _ in range(runs))
    theirs = statistics.median(maxrss_growth_mib(mib, "numpy") for _ in range(runs))
    budget = mib + MEMORY_SLACK_MIB
    print("| memory case | fueltensor MiB | NumPy MiB | budget MiB | |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| ru_maxrss growth, `x + x` on a stride-0 f32 view, {mib} MiB output | {ours:,.0f} | "
        f"{theirs:,.0f} | {budget:,} | {'pass' if ours <= budget else 'MISS'} |"
    )


def _median_seconds(fns: list[Callable[[], object]], repeats: int) -> list[float]:
    """Median seconds per call of each, timed in rotation (order flipping), each sample about
    2 ms of calls, after a warm-up call."""
    inner = []
    for fn in fns:
        fn()
        start = time.perf_counter()
        fn()
        inner.append(max(1, int(2e-3 / max(time.perf_counter() - start, 1e-7))))
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        for i in range(len(fns)) if r % 2 == 0 else reversed(range(len(fns))):
            start = time.perf_counter()
            for _ in range(inner[i]):
                fns[i]()
            samples[i].append((time.perf_counter() - start) / inner[i])
    return [statistics.median(s) for s in samples]


EXPRS: dict[str, tuple[Callable[[Any, Any], Any], Callable[..., Any]]] = {
    "a + row": (lambda a, row: a + row, ft.add),
    "a * 0.5": (lambda a, row: a * 0.5, ft.multiply),
}


def half_rows(repeats: int) -> None:
    """bf16 / f16 `a + row` and `a * 0.5` at 10^6 as a multiple of the f32 time, in one run."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((1000, 1000))
    row = rng.standard_normal(1000)
    types = {"f32": np.float32, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
    print("| case | plan | fueltensor ms | ÷ f32 time | NumPy ms | target | |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, (expr, fn) in EXPRS.items():
        arrays = {k: (base.astype(t), row.astype(t)) for k, t in types.items()}
        tensors = {k: (ft.asarray(a), ft.asarray(r)) for k, (a, r) in arrays.items()}
        fns = [partial(expr, *tensors[k]) for k in types]
        fns += [partial(expr, *arrays[k]) for k in types]
        names = [*types, *(f"np {k}" for k in types)]
        times = dict(zip(names, _median_seconds(fns, repeats), strict=True))
        for k in types:
            x, r = tensors[k]
            other = r if label == "a + row" else 0.5
            ratio = times[k] / times["f32"]
            cells = "—" if k == "f32" else f"{ratio:.2f}"
            target = "—" if k == "f32" else f"≤ {HALF_TARGET}"
            mark = "" if k == "f32" else ("pass" if ratio <= HALF_TARGET else "MISS")
            print(
                f"| {label} {k} n=10^6 | {ft.explain(fn, x, other).provider} | "
                f"{times[k] * 1e3:.3f} | {cells} | {times['np ' + k] * 1e3:.3f} | {target} | "
                f"{mark} |"
            )


def scalar_rows(repeats: int) -> None:
    """`x + 1.0` and `x * 2.0` on 10^6 f32 against NumPy, in one run."""
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    x = ft.asarray(a)
    print("| case | plan | fueltensor ms | NumPy ms | ratio | target | |")
    print("|---|---|---:|---:|---:|---:|---|")
    for label, expr, fn, k in (
        ("x + 1.0", lambda v: v + 1.0, ft.add, 1.0),
        ("x * 2.0", lambda v: v * 2.0, ft.multiply, 2.0),
    ):
        t_ft, t_np = _median_seconds([partial(expr, x), partial(expr, a)], repeats)
        ratio = t_ft / t_np
        print(
            f"| {label} f32 n=10^6 | {ft.explain(fn, x, k).provider} | {t_ft * 1e3:.3f} | "
            f"{t_np * 1e3:.3f} | {ratio:.2f} | ≤ {SCALAR_TARGET} | "
            f"{'pass' if ratio <= SCALAR_TARGET else 'MISS'} |"
        )


def pricing_rows(repeats: int, memory_mib: int = 512) -> None:
    """Issue 44 item 2's three tables."""
    memory_rows(memory_mib)
    print()
    half_rows(repeats)
    print()
    scalar_rows(repeats)


if __name__ == "__main__":
    pricing_rows(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
