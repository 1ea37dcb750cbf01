"""Issue 6's benchmark: every case timed side by side with its reference in one run, as ratios.

`python benchmarks/run.py [--quick] [--repeats N] [--clock cpu] [--only sweep,scalars,...]`
(n = 10^7, or 10^6 with --quick; `--only` runs some sections). For each case the fueltensor
call and its reference (and PyTorch on one thread, when importable) are timed in rotation,
repeat after repeat, and each side's median is kept; the ratio is fueltensor ÷ reference and
is held to the issue's target. Then (issue 12) a size sweep from 4 elements up, Python-scalar
operands (at 10^6, and the common ones at 4 and 4,096), pow, views, the RSS of many small live
results and three clients (scikit-learn under array_api_dispatch, scipy.stats.skew; skipped
when not installed); then dispatch cost on tiny operands (against NumPy and PyTorch one-thread,
and with 1,000 extra registered contracts), a compiled provider's call at 16 elements against
the built-in kernel's (examples/c_provider, built with cc), tracemalloc peaks, and import /
first-op times in fresh subprocesses. Prints Markdown tables. Not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import operator
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from cast_rows import cast_rows
from comparison_rows import comparison_rows
from libraries import library_rows  # benchmarks/ is the script's directory, first on sys.path
from pricing_rows import pricing_rows
from selection_rows import selection_rows
from thread_rows import split_rows, thread_rows
from unary_rows import unary_rows

import fueltensor as ft
from fueltensor.fingerprint import machine as fingerprint
from fueltensor.fkc import load_document
from fueltensor.registry import bundled_contracts_dir

try:
    import torch  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    torch = None

Thunk = Callable[[], object]

OPS: dict[str, tuple[Callable[[Any, Any], Any], np.ufunc, str]] = {
    "add": (ft.add, np.add, "add"),
    "sub": (ft.subtract, np.subtract, "sub"),
    "mul": (ft.multiply, np.multiply, "mul"),
    "div": (ft.divide, np.divide, "div"),
    "maximum": (ft.maximum, np.maximum, "maximum"),
    "minimum": (ft.minimum, np.minimum, "minimum"),
    "pow": (ft.pow, np.power, "pow"),
    "remainder": (ft.remainder, np.remainder, "remainder"),
}
"""Case name -> (fueltensor operation, reference ufunc, torch function name)."""
DTYPES: dict[str, Any] = {
    "f32": np.float32,
    "f64": np.float64,
    "bf16": ml_dtypes.bfloat16,
    "f16": np.float16,
}
TORCH_DTYPES = {"f32": "float32", "f64": "float64", "bf16": "bfloat16", "f16": "float16"}

NATIVE_TARGET = 1.10
REMAINDER_TARGET = 1.0
"""`%` is the exact floored remainder (issue 44): fmod per lane, as NumPy's; no slower than it.
(The seeds' formula, vectorised, was held to 0.5; it now runs only where named.)"""
HALF_TARGET = 0.7
BROADCAST_TARGET = 1.5
TRANSPOSED_TARGET = 0.5
TINY_TARGET_US = 3.0
TINY_REFERENCE_NUMPY_US = 0.3
"""The issue's dispatch budget and NumPy's 4-element add on the issue's machine: the budget is
held here as a ratio to NumPy (10×), since this machine's speed is not the issue's."""
EXTRA_TARGET = 1.10
EXTRA_CONTRACTS = 1000
MEMORY_SLACK = 64 * 1024
IMPORT_TARGET_S = 0.15
"""Issue 44: `import fueltensor` back under 0.15 s (it was 0.10 a wave before)."""
FIRST_OP_TARGET_MS = 50.0

SWEEP_SIZES = (4, 256, 4096, 65536, 10**6, 10**7)
SWEEP_TARGETS = {4: 0.8 / 0.32, 4096: 1.5, 65536: 1.15, 10**6: 1.10, 10**7: 1.10}
HOST_TARGET = 1.5
"""Issue 24: a host function (unary ufuncs, comparisons, where, reductions, astype, matmul) at
4 elements costs at most 1.5x NumPy's call."""
"""Issue 12's ratio to NumPy per size (none at 256); at 4 elements its 0.8 µs against NumPy's
0.32 µs on the issue's machine, held as a ratio since this machine's speed is not that one's."""
SWEEP_HALF_TARGET = 1.0
"""The half types stay ahead of NumPy / ml_dtypes at every size."""
SCALAR_N = 10**6
SCALAR_SMALL_SIZES = (4, 4096)
"""Sizes at which the common scalar operands are also timed, held to the sweep's targets there
(dispatch cost, where the issue's 10^6 rows measure bandwidth)."""
SCALAR_TARGET = 1.3
SCALAR_POW_TARGET = 2.0
VIEW_TARGET_US = 1.0
SMALL_TRANSPOSED_TARGET = 1.5
LIVE_RESULTS = 10_000
LIVE_RESULTS_BUDGET = 5 * 2**20
CLIENT_TARGET = 1.3
"""Issue 24: each client call at most 1.3x NumPy (issue 12 had 1.5, without skew)."""
SAMPLE_SECONDS = 2e-3
"""Each timed sample repeats a call until it lasts about this long (timer resolution)."""


@dataclass(frozen=True)
class Case:
    """One timed comparison: fueltensor vs a reference (and PyTorch if installed)."""

    name: str
    reference: str
    fuel: Thunk
    ref: Thunk
    torch_fn: Thunk | None
    target: float


CLOCK: Callable[[], float] = time.perf_counter
"""The timer: wall time by default; `--clock cpu` takes this thread's CPU time instead, which a
loaded shared machine's scheduling does not inflate (every case here runs on one thread)."""


def interleaved(fns: list[Thunk], repeats: int, inner: int = 1) -> list[float]:
    """Median seconds per call of each function, timed in rotation (order flips each repeat)
    after one warm-up call, so load drifting on a shared machine hits every side alike."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for r in range(repeats):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            fn = fns[i]
            start = CLOCK()
            for _ in range(inner):
                fn()
            samples[i].append((CLOCK() - start) / inner)
    return [statistics.median(s) for s in samples]


def inner_for(fn: Thunk) -> int:
    """How many calls one timed sample of `fn` makes so it lasts about SAMPLE_SECONDS."""
    fn()
    start = CLOCK()
    fn()
    once = CLOCK() - start
    return max(1, min(100_000, int(SAMPLE_SECONDS / max(once, 1e-8))))


def operands(n: int | tuple[int, ...], dtype: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Positive lhs (so pow stays real) and a signed rhs kept away from zero."""
    rng = np.random.default_rng(seed)
    lhs = (rng.random(n, np.float32) * 10 + 0.5).astype(dtype)
    rhs = (rng.standard_normal(n, np.float32) * 3 + 0.25).astype(dtype)
    return lhs, rhs


def torch_tensor(array: np.ndarray, dtype_name: str) -> Any:
    """`array` as a torch tensor of `dtype_name` (bfloat16 goes through float32)."""
    assert torch is not None
    if dtype_name == "bfloat16":
        return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(array))


def elementwise_cases(n: int) -> Iterator[Case]:
    """Same-shape contiguous operations: every op on F32/F64, and on BF16/F16."""
    for suffix, dtype in DTYPES.items():
        lhs, rhs = operands(n, dtype)
        x, y = ft.asarray(lhs), ft.asarray(rhs)
        half = suffix in ("bf16", "f16")
        tx = ty = None
        if torch is not None:
            tx, ty = (
                torch_tensor(lhs, TORCH_DTYPES[suffix]),
                torch_tensor(rhs, TORCH_DTYPES[suffix]),
            )
        for name, (fuel, ufunc, tfn) in OPS.items():
            if name == "remainder":
                target = REMAINDER_TARGET
            elif half:
                target = HALF_TARGET
            else:
                target = NATIVE_TARGET
            yield Case(
                f"{name} {suffix}",
                f"np.{ufunc.__name__}" + (" (ml_dtypes)" if suffix == "bf16" else ""),
                partial(fuel, x, y),
                partial(ufunc, lhs, rhs),
                None if torch is None else partial(getattr(torch, tfn), tx, ty),
                target,
            )


def layout_cases(n: int) -> Iterator[Case]:
    """Broadcast add through the oracle, and an op on a transposed square F32 operand."""
    rows = max(1, n // 10**4)
    a, _ = operands((rows, 10**4), np.float32)
    _, b = operands(10**4, np.float32, seed=1)
    x, y = ft.asarray(a), ft.asarray(b)
    ta = tb = None
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    yield Case(
        f"broadcast add f32 ({rows}×10^4 + 10^4)",
        "np.add broadcasting",
        lambda: x + y,
        lambda: np.add(a, b),
        None if ta is None else (lambda: ta + tb),
        BROADCAST_TARGET,
    )
    side = round(n**0.5)
    s, t = operands((side, side), np.float32)
    xs, xt = ft.asarray(s), ft.asarray(t)
    ts = tt = None
    if torch is not None:
        ts, tt = torch.from_numpy(s), torch.from_numpy(t)
    yield Case(
        f"add f32, transposed lhs ({side}²)",
        "np.add on the same .T view",
        lambda: xs.T + xt,
        lambda: np.add(s.T, t),
        None if ts is None else (lambda: ts.t() + tt),
        TRANSPOSED_TARGET,
    )


def sweep_cases(max_n: int) -> Iterator[Case]:
    """Issue 12's size sweep: every op on F32/F64 from 4 elements up; BF16/F16 add, multiply
    and maximum from 4096 (where their tile loops start to tell)."""
    for n in (size for size in SWEEP_SIZES if size <= max_n):
        for suffix, dtype in DTYPES.items():
            half = suffix in ("bf16", "f16")
            if half and n < 4096:
                continue
            lhs, rhs = operands(n, dtype)
            x, y = ft.asarray(lhs), ft.asarray(rhs)
            tx = ty = None
            if torch is not None:
                tx = torch_tensor(lhs, TORCH_DTYPES[suffix])
                ty = torch_tensor(rhs, TORCH_DTYPES[suffix])
            for name, (fuel, ufunc, tfn) in OPS.items():
                if half and name not in ("add", "mul", "maximum"):
                    continue
                target = SWEEP_HALF_TARGET if half else SWEEP_TARGETS.get(n, math.inf)
                yield Case(
                    f"{name} {suffix} n={n:,}",
                    f"np.{ufunc.__name__}",
                    partial(fuel, x, y),
                    partial(ufunc, lhs, rhs),
                    None if tx is None else partial(getattr(torch, tfn), tx, ty),
                    target,
                )


SCALAR_EXPRS: list[tuple[str, Callable[[Any], Any]]] = [
    ("x + 1.0", lambda a: a + 1.0),
    ("x * 2", lambda a: a * 2),
    ("maximum(x, 0.0)", lambda a: _namespace(a).maximum(a, 0.0)),
]
"""The scalar operands client code writes most, timed at every size of SCALAR_SMALL_SIZES."""


def _expr_cases(
    n: int, exprs: list[tuple[str, Callable[[Any], Any], float]], suffix: str = "f32"
) -> Iterator[Case]:
    """Each `expr` on the same n elements of DTYPES[suffix] as a fueltensor tensor, a NumPy
    array and (when installed) a torch tensor, held to its target."""
    lhs, _ = operands(n, DTYPES[suffix])
    x = ft.asarray(lhs)
    tx = None if torch is None else torch.from_numpy(lhs)
    for label, expr, target in exprs:
        yield Case(
            f"{label} {suffix} n={n:,}",
            f"NumPy {label}",
            partial(expr, x),
            partial(expr, lhs),
            None if tx is None else partial(expr, tx),
            target,
        )


def small_scalar_cases() -> Iterator[Case]:
    """The common scalar operands on 4 and 4,096 F32 elements (dispatch and the scalar's 0-d
    tensor, not bandwidth)."""
    for n in SCALAR_SMALL_SIZES:
        yield from _expr_cases(n, [(label, e, SWEEP_TARGETS[n]) for label, e in SCALAR_EXPRS])


def scalar_cases() -> Iterator[Case]:
    """Python-scalar operands on 10^6 F32 elements, pow by 2 and 0.5 among them, and the common
    ones on F64 (whose oracle NaN scan once ran 4x NumPy unseen)."""
    common = [(label, e, SCALAR_TARGET) for label, e in SCALAR_EXPRS]
    exprs: list[tuple[str, Callable[[Any], Any], float]] = [
        *common,
        ("x % 3.0", lambda a: a % 3.0, SCALAR_TARGET),
        ("x ** 2.0", lambda a: a**2.0, SCALAR_POW_TARGET),
        ("x ** 0.5", lambda a: a**0.5, SCALAR_POW_TARGET),
    ]
    yield from _expr_cases(SCALAR_N, exprs)
    yield from _expr_cases(SCALAR_N, common, "f64")


def _namespace(a: Any) -> Any:
    """The namespace whose maximum takes a Python scalar: fueltensor, NumPy or torch."""
    if isinstance(a, ft.FuelTensor):
        return ft
    if isinstance(a, np.ndarray):
        return np
    assert torch is not None
    return _TorchScalar


class _TorchScalar:
    """torch.maximum takes tensors only; clamp_min is its maximum with a scalar."""

    @staticmethod
    def maximum(a: Any, b: float) -> Any:
        return a.clamp_min(b)


def _iadd(a: Any, b: Any) -> Any:
    """`a += b`, as client code writes it (the same object back)."""
    a += b
    return a


def small_call_cases() -> Iterator[Case]:
    """4-element F32 calls beyond a same-dtype `x op y`: in place, mixed dtypes, `x ** 2`
    (PowIElementwise), host functions (dispatch and call overhead; the contract ops held to the
    4-element sweep target, the host functions to issue 24's 1.5x)."""
    lhs, _ = operands(4, np.float32)
    other = np.ones(4, np.float32)
    wide = np.ones(4, np.float64)
    x, y, d = ft.asarray(lhs.copy()), ft.asarray(other), ft.asarray(wide)
    a, xa = lhs.copy(), ft.asarray(lhs.copy())  # the in-place rows' own operands: they grow
    mask = lhs > 0
    m = ft.asarray(mask)
    contract: list[tuple[str, Thunk, Thunk]] = [
        ("x += 1.0", partial(_iadd, xa, 1.0), partial(_iadd, a, 1.0)),
        ("x += y", partial(_iadd, xa, y), partial(_iadd, a, other)),
        ("x + d (f64)", partial(operator.add, x, d), partial(operator.add, lhs, wide)),
        ("x ** 2", partial(operator.pow, y, 2), partial(operator.pow, other, 2)),
    ]
    host: list[tuple[str, Thunk, Thunk]] = [
        ("sqrt(x)", partial(ft.sqrt, x), partial(np.sqrt, lhs)),
        ("exp(x)", partial(ft.exp, x), partial(np.exp, lhs)),
        ("abs(x)", partial(ft.abs, x), partial(np.abs, lhs)),
        ("negative(x)", partial(ft.negative, x), partial(np.negative, lhs)),
        ("greater(x, 0)", partial(ft.greater, x, 0), partial(np.greater, lhs, 0)),
        ("x > 0", partial(operator.gt, x, 0), partial(operator.gt, lhs, 0)),
        ("x == y", partial(operator.eq, x, y), partial(operator.eq, lhs, other)),
        ("where(m, x, y)", partial(ft.where, m, x, y), partial(np.where, mask, lhs, other)),
        ("sum(x)", partial(ft.sum, x), partial(np.sum, lhs)),
        ("mean(x)", partial(ft.mean, x), partial(np.mean, lhs)),
        ("max(x)", partial(ft.max, x), partial(np.max, lhs)),
        ("min(x)", partial(ft.min, x), partial(np.min, lhs)),
        ("astype(x, f64)", partial(ft.astype, x, ft.float64), partial(lhs.astype, np.float64)),
        ("matmul(x, y)", partial(ft.matmul, x, y), partial(np.matmul, lhs, other)),
        ("any(x)", partial(ft.any, x), partial(np.any, lhs)),
        ("x.sum()", x.sum, lhs.sum),
        ("x.mean()", x.mean, lhs.mean),
        ("x.max()", x.max, lhs.max),
        ("x.astype(f64)", partial(x.astype, ft.float64), partial(lhs.astype, np.float64)),
        ("x @ y", partial(operator.matmul, x, y), partial(operator.matmul, lhs, other)),
    ]
    for rows, target in ((contract, SWEEP_TARGETS[4]), (host, HOST_TARGET)):
        for label, fuel, ref in rows:
            yield Case(f"{label} f32 n=4", f"NumPy {label}", fuel, ref, None, target)


def scalar_rows(repeats: int) -> None:
    """Scalar operands at 10^6, then at 4 and 4,096 elements, then the small transposed op and
    the small calls beyond `x op y`."""
    run_cases(scalar_cases(), repeats)
    run_cases(small_scalar_cases(), max(repeats, 31))
    run_cases(small_layout_cases(), max(repeats, 31))
    run_cases(small_call_cases(), max(repeats, 31))


def small_layout_cases() -> Iterator[Case]:
    """An op on a transposed 64×64 F32 operand (dispatch and the copy, not bandwidth)."""
    s, t = operands((64, 64), np.float32)
    xs, xt = ft.asarray(s), ft.asarray(t)
    ts = tt = None
    if torch is not None:
        ts, tt = torch.from_numpy(s), torch.from_numpy(t)
    yield Case(
        "add f32, transposed lhs (64²)",
        "np.add on the same .T view",
        lambda: xs.T + xt,
        lambda: np.add(s.T, t),
        None if ts is None else (lambda: ts.t() + tt),
        SMALL_TRANSPOSED_TARGET,
    )


def view_rows(repeats: int) -> None:
    """Views of a 64×64 F32 tensor and a scalar element read, in µs against ≤ 1 µs."""
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    x = ft.asarray(a)
    cases: list[tuple[str, Thunk, Thunk]] = [
        ("x.T", lambda: x.T, lambda: a.T),
        ("x[1:]", lambda: x[1:], lambda: a[1:]),
        ("x[::2]", lambda: x[::2], lambda: a[::2]),
        ("x[i]", lambda: x[3], lambda: a[3]),
        ("x[i, j] (a 0-d view; NumPy returns a scalar)", lambda: x[3, 4], lambda: a[3, 4]),
    ]
    print("| view (64×64 f32) | fueltensor µs | NumPy µs | ratio | target | |")
    print("|---|---:|---:|---:|---:|---|")
    for label, fuel, ref in cases:
        t_fuel, t_ref = interleaved([fuel, ref], repeats, inner_for(fuel))
        print(
            f"| {label} | {t_fuel * 1e6:.2f} | {t_ref * 1e6:.2f} | {t_fuel / t_ref:.1f} | "
            f"≤ {VIEW_TARGET_US:.0f} µs | {verdict(t_fuel * 1e6, VIEW_TARGET_US)} |"
        )


_LIVE_CHILD = """
import gc, json, os, sys
import numpy as np
import fueltensor as ft

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def live(x, y):
    # Each kept one-element result is followed by 32 dying 1 KB temporaries, as in a loop.
    kept = []
    for _ in range(int(sys.argv[1])):
        kept.append(x + x)
        for _ in range(32):
            y + y
    return kept

x, y = ft.asarray(np.ones(1, np.float32)), ft.asarray(np.ones(250, np.float32))
a, b = np.ones(1, np.float32), np.ones(250, np.float32)
live(x, y)
gc.collect()
before = rss()
kept = live(x, y)
ft_bytes = rss() - before
gc.collect()
before = rss()
kept_np = live(a, b)
print(json.dumps({"fueltensor": ft_bytes, "numpy": rss() - before}))
"""


def live_results_rows() -> None:
    """RSS growth while 10,000 one-element results stay alive, in a fresh process (Linux)."""
    if not os.path.exists("/proc/self/statm"):
        print("(live-results RSS: needs /proc; skipped)")
        return
    done = subprocess.run(
        [sys.executable, "-c", _LIVE_CHILD, str(LIVE_RESULTS)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(done.stdout)
    mib = 2**20
    print("| memory case | fueltensor MiB | NumPy MiB | budget MiB | |")
    print("|---|---:|---:|---:|---|")
    print(
        f"| RSS above baseline, {LIVE_RESULTS:,} live one-element f32 results "
        "(each among 32 dying 1 KB temporaries) | "
        f"{got['fueltensor'] / mib:.2f} | {got['numpy'] / mib:.2f} | "
        f"{LIVE_RESULTS_BUDGET / mib:.0f} | "
        f"{'pass' if got['fueltensor'] <= LIVE_RESULTS_BUDGET else 'MISS'} |"
    )


def client_rows(repeats: int) -> None:
    """scikit-learn (array_api_dispatch=True) and SciPy on fueltensor against the same call on
    NumPy, each held to CLIENT_TARGET."""
    os.environ.setdefault("SCIPY_ARRAY_API", "1")  # sklearn's array API mode requires it
    try:
        import scipy.stats
        import sklearn
        from sklearn.metrics import r2_score
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        print("(scikit-learn or SciPy is not installed: client cases skipped)")
        return
    rng = np.random.default_rng(0)
    data = rng.standard_normal((20000, 50), np.float32) * 3 + 1
    truth = rng.standard_normal(10**5)
    guess = truth + rng.standard_normal(10**5) * 0.1
    fdata, ftruth, fguess = ft.asarray(data), ft.asarray(truth), ft.asarray(guess)
    cases: list[tuple[str, Thunk, Thunk, float | None]] = [
        (
            "StandardScaler().fit_transform, 20000×50 f32",
            lambda: StandardScaler().fit_transform(fdata),
            lambda: StandardScaler().fit_transform(data),
            CLIENT_TARGET,
        ),
        (
            "r2_score, n=10^5 f64",
            lambda: r2_score(ftruth, fguess),
            lambda: r2_score(truth, guess),
            CLIENT_TARGET,
        ),
        (
            f"scipy.stats.skew (SciPy {scipy.__version__}), n=10^5 f64",
            lambda: scipy.stats.skew(ftruth),
            lambda: scipy.stats.skew(truth),
            CLIENT_TARGET,
        ),
    ]
    print(
        f"| client (scikit-learn {sklearn.__version__}, array_api_dispatch=True) | "
        "fueltensor ms | NumPy ms | ratio | target | |"
    )
    print("|---|---:|---:|---:|---:|---|")
    with sklearn.config_context(array_api_dispatch=True):
        for label, fuel, ref, target in cases:
            t_fuel, t_ref = interleaved([fuel, ref], repeats)
            ratio = t_fuel / t_ref
            held = "—" if target is None else f"≤ {target:.2f}"
            result = "" if target is None else verdict(ratio, target)
            print(
                f"| {label} | {fmt_ms(t_fuel)} | {fmt_ms(t_ref)} | {ratio:.2f} | {held} | "
                f"{result} |"
            )


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g}"


def verdict(ratio: float, target: float) -> str:
    return "pass" if ratio <= target else "MISS"


def target_cells(ratio: float, target: float) -> str:
    """A row's target and pass/MISS cells; a row without a target (inf) has a dash."""
    return "— | " if math.isinf(target) else f"≤ {target:.2f} | {verdict(ratio, target)}"


def run_cases(cases: Iterator[Case], repeats: int) -> None:
    """Time and print each case as one Markdown table row."""
    head = "| case | reference | fueltensor ms | reference ms | ratio | target | |"
    rule = "|---|---|---:|---:|---:|---:|---|"
    if torch is not None:
        head += " torch ms | ft ÷ torch |"
        rule += "---:|---:|"
    print(head)
    print(rule)
    for case in cases:
        fns = [case.fuel, case.ref] + ([case.torch_fn] if case.torch_fn else [])
        times = interleaved(fns, repeats, inner_for(case.ref))
        ratio = times[0] / times[1]
        row = (
            f"| {case.name} | {case.reference} | {fmt_ms(times[0])} | {fmt_ms(times[1])} | "
            f"{ratio:.2f} | {target_cells(ratio, case.target)} |"
        )
        if torch is not None:
            row += f" {fmt_ms(times[2])} | {times[0] / times[2]:.2f} |" if case.torch_fn else " | |"
        print(row, flush=True)


# -- dispatch -----------------------------------------------------------------------------------


def extra_contracts_documents(
    directory: Path, count: int, per_document: int = 100
) -> tuple[list[Path], str, dict[str, Any]]:
    """FKC documents declaring `count` copies of the bundled add_f32 contract under a made-up
    provider (`per_document` to a file, under the parser's per-document size limit), each priced
    above add_f32 so it is admissible but never chosen; with that provider's name and its
    entry-point map (every entry a trivial add kernel)."""
    text = (bundled_contracts_dir() / "fuel-cpu-backend.md").read_text(encoding="utf-8")
    front = text[: text.index("---", 4) + 3].replace("fuel-cpu-backend", "bench-extra-backend")
    block = re.search(r"```fkc\n(kernel: add_f32\n.*?)```", text, re.S)
    assert block is not None, "the bundled add_f32 contract was not found"
    body = block.group(1).replace('bytes_moved: "3 * n * 4"', 'bytes_moved: "30 * n * 4"')

    def kernel(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        np.add(lhs, rhs, out=out)

    table: dict[str, Any] = {}
    paths: list[Path] = []
    for first in range(0, count, per_document):
        blocks = []
        for i in range(first, min(first + per_document, count)):
            entry = f"bench_extra::add_{i}"
            renamed = body.replace("kernel: add_f32", f"kernel: extra_add_{i}")
            renamed = renamed.replace('"fuel_cpu_backend::byte_kernels::add_f32"', f'"{entry}"')
            blocks.append(f"## extra_add_{i}\n\n```fkc\n{renamed}```\n")
            table[entry] = kernel
        path = directory / f"bench-extra-{first:04d}.md"
        path.write_text(
            f"{front}\n# Extra contracts for the dispatch benchmark\n\n" + "\n".join(blocks)
        )
        paths.append(path)
    return paths, "bench-extra-backend", table


def dispatch_rows(repeats: int) -> None:
    """4-element F32 add: fueltensor vs NumPy, then with 1,000 extra contracts registered."""
    small = np.arange(4, dtype=np.float32) + 1
    x = ft.asarray(small)
    inner = 2000
    sides: list[Thunk] = [lambda: x + x, lambda: small + small]
    if torch is not None:
        tiny = torch.from_numpy(small)
        sides.append(lambda: tiny + tiny)
    fuel, ref, *torch_time = interleaved(sides, repeats, inner)
    with tempfile.TemporaryDirectory() as tmp:
        docs, provider, table = extra_contracts_documents(Path(tmp), EXTRA_CONTRACTS)
        ft.register_provider(provider, table)
        start = time.perf_counter()
        big = ft.Registry.from_paths([bundled_contracts_dir(), *docs])
        load_s = time.perf_counter() - start
    with ft.use_registry(big):
        plan = ft.explain(ft.add, x, x)
    assert plan.kernel is not None and plan.kernel.name == "add_f32", plan
    assert len(plan.rejected) >= EXTRA_CONTRACTS

    def crowded() -> None:
        with ft.use_registry(big):
            for _ in range(inner):
                x + x

    def plain() -> None:
        for _ in range(inner):
            x + x

    base, extra = (t / inner for t in interleaved([plain, crowded], repeats))
    limit = TINY_TARGET_US / TINY_REFERENCE_NUMPY_US
    print("| dispatch case | fueltensor µs | NumPy µs | ratio | target | |")
    print("|---|---:|---:|---:|---:|---|")
    print(
        f"| 4-element f32 add (`x + x` vs `a + a`) | {fuel * 1e6:.2f} | {ref * 1e6:.2f} | "
        f"{fuel / ref:.1f} | ≤ {limit:.0f} (3 µs at NumPy's 0.3 µs) | "
        f"{verdict(fuel / ref, limit)} |"
    )
    if torch_time:
        print(
            f"| same vs PyTorch one thread (`t + t`) | {fuel * 1e6:.2f} | "
            f"torch {torch_time[0] * 1e6:.2f} | {fuel / torch_time[0]:.2f} | < 1 (faster) | "
            f"{'pass' if fuel < torch_time[0] else 'MISS'} |"
        )
    print(
        f"| same, {len(big) - len(ft.registry()):,} extra AddElementwise contracts | "
        f"{extra * 1e6:.2f} | "
        f"{base * 1e6:.2f} (without) | {extra / base:.2f} | ≤ {EXTRA_TARGET:.2f} | "
        f"{verdict(extra / base, EXTRA_TARGET)} |"
    )
    print(f"\n(loading the {len(big)}-contract registry took {load_s:.2f} s, once)")


# -- compiled providers --------------------------------------------------------------------------


COMPILED_TARGET = 2.0
"""Issue 32: a compiled provider's call at 16 elements within 2x of a built-in kernel's."""
EXAMPLE_C = Path(__file__).resolve().parents[1] / "examples" / "c_provider"


def compiled_provider(directory: Path) -> tuple[str, ft.Registry] | None:
    """examples/c_provider built with cc into `directory` and registered: its provider name and
    a registry with the bundled contracts; None without a C compiler."""
    cc = shutil.which("cc")
    if cc is None:
        return None
    library = directory / "libc_kernels.so"
    source = EXAMPLE_C / "kernels.c"
    subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    document = EXAMPLE_C / "c-kernels.md"
    provider, contracts = load_document(document)
    table = {c.entry_point: c.entry_point.rsplit("::", 1)[-1] for c in contracts}
    ft.register_provider(provider.name, ft.load_library(library, table))
    return provider.name, ft.Registry.from_paths([bundled_contracts_dir(), document])


def compiled_rows(repeats: int) -> None:
    """16-element F32 add through a compiled provider (examples/c_provider's `c_add_f32`,
    called from C) against the built-in kernel, interleaved, each inside its `use_backend`."""
    with tempfile.TemporaryDirectory() as tmp:
        built = compiled_provider(Path(tmp))
    if built is None:
        print("(no C compiler on PATH: the compiled-provider row is not measured)")
        return
    provider, reg = built
    x = ft.asarray(np.arange(16, dtype=np.float32) + 1)
    inner = 2000

    def on(backend: str) -> Thunk:
        def calls() -> None:
            with ft.use_registry(reg), ft.use_backend(backend):
                for _ in range(inner):
                    x + x

        return calls

    with ft.use_registry(reg), ft.use_backend(provider):
        plan = ft.explain(ft.add, x, x)
    assert plan.kernel is not None and plan.kernel.name == "c_add_f32", plan
    compiled, builtin = (t / inner for t in interleaved([on(provider), on("cpu")], repeats))
    print("| compiled provider case | provider µs | built-in µs | ratio | target | |")
    print("|---|---:|---:|---:|---:|---|")
    print(
        f"| 16-element f32 add (`x + x`), c_add_f32 vs add_f32 | {compiled * 1e6:.2f} | "
        f"{builtin * 1e6:.2f} | {compiled / builtin:.2f} | ≤ {COMPILED_TARGET:.0f} | "
        f"{verdict(compiled / builtin, COMPILED_TARGET)} |"
    )


# -- memory ------------------------------------------------------------------------------------


def prepared_bytes(plan: ft.Plan) -> int:
    """Bytes of the dense buffers the plan's Cast and Contiguize steps make (BroadcastTo: none)."""
    total = 0
    for operand, steps in zip(plan.operands, plan.prep, strict=True):
        shape, itemsize = operand.layout.shape, operand.dtype.itemsize
        for step in steps:
            if step.kind == "Cast":
                assert step.dtype is not None
                itemsize = step.dtype.itemsize
            elif step.kind == "BroadcastTo":
                assert step.shape is not None
                shape = step.shape
                continue
            total += int(np.prod(shape)) * itemsize
    return total


def peak_bytes(fn: Thunk) -> int:
    """tracemalloc's peak above the starting point while `fn` runs (its result is dropped)."""
    fn()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def memory_rows(n: int) -> None:
    """Peak allocation of a same-shape op (output only) and of a strided one (its plan's copies)."""
    lhs, rhs = operands(n, np.float32)
    x, y = ft.asarray(lhs), ft.asarray(rhs)
    side = round(n**0.5)
    s, t = operands((side, side), np.float32)
    xs, xt = ft.asarray(s), ft.asarray(t)
    every = ft.asarray(operands(2 * n, np.float32)[0])
    rows = [
        ("same-shape f32 add", lambda: x + y, ft.explain(ft.add, x, y)),
        (f"f32 add, transposed lhs ({side}²)", lambda: xs.T + xt, ft.explain(ft.add, xs.T, xt)),
        (
            "f32 maximum, lhs every 2nd element",
            lambda: ft.maximum(every[::2], y),
            ft.explain(ft.maximum, every[::2], y),
        ),
    ]
    print("| memory case | plan's copies KiB | output KiB | peak KiB | budget KiB | |")
    print("|---|---:|---:|---:|---:|---|")
    for name, fn, plan in rows:
        copies = prepared_bytes(plan)
        output = plan.size * plan.out_dtype.itemsize
        peak = peak_bytes(fn)
        budget = copies + output + MEMORY_SLACK
        print(
            f"| {name} | {copies / 1024:,.0f} | {output / 1024:,.0f} | {peak / 1024:,.0f} | "
            f"{budget / 1024:,.0f} | {'pass' if peak <= budget else 'MISS'} |"
        )


# -- start-up ----------------------------------------------------------------------------------

_CHILD = """
import json, time
t0 = time.perf_counter()
import numpy, ml_dtypes
t1 = time.perf_counter()
import fueltensor as ft
t2 = time.perf_counter()
x = ft.asarray(numpy.ones(4, numpy.float32))
t3 = time.perf_counter()
x + x
t4 = time.perf_counter()
print(json.dumps({"deps": t1 - t0, "import": t2 - t0, "own": t2 - t1, "first": t4 - t3}))
"""


def child_times(runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Start-up figures from `runs` fresh interpreters (NumPy and ml_dtypes imported first, so
    fueltensor's own share is visible; `import` counts both)."""
    out: dict[str, list[float]] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True
        )
        for key, value in json.loads(done.stdout).items():
            out.setdefault(key, []).append(value)
    return out


def command_seconds(runs: int, env: dict[str, str], code: str) -> list[float]:
    """Wall seconds of `python -c code` in `runs` fresh processes, as a user's shell sees it."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
        out.append(time.perf_counter() - start)
    return out


def startup_rows(runs: int) -> None:
    """import fueltensor and the first operation, in fresh subprocesses, median of `runs`."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as pyc:
        compiled = {**env, "PYTHONPYCACHEPREFIX": pyc}
        compiled.pop("PYTHONDONTWRITEBYTECODE", None)
        child_times(1, compiled)  # writes the bytecode (and the contract cache)
        settings = [
            ("as this environment runs it", child_times(runs, env)),
            ("with bytecode cached (an installed wheel)", child_times(runs, compiled)),
        ]
    cold = child_times(runs, {**env, "FUELTENSOR_CACHE_DIR": ""})
    whole = command_seconds(runs, env, "import fueltensor")
    bare = command_seconds(runs, env, "pass")

    def cell(values: list[float], scale: float) -> str:
        return f"{statistics.median(values) * scale:.0f}"

    print("| start-up (median of", runs, "fresh processes) | ms | range ms | target | |")
    print("|---|---:|---|---:|---|")
    for label, t in settings:
        imp = statistics.median(t["import"])
        print(
            f"| import fueltensor, {label} | {imp * 1e3:.0f} | "
            f"{min(t['import']) * 1e3:.0f}–{max(t['import']) * 1e3:.0f} (NumPy + ml_dtypes alone "
            f"{cell(t['deps'], 1e3)}) | ≤ {IMPORT_TARGET_S * 1e3:.0f} | "
            f"{verdict(imp, IMPORT_TARGET_S)} |"
        )
        first = statistics.median(t["first"]) * 1e3
        print(
            f"| first operation after import, {label} | {first:.1f} | "
            f"{min(t['first']) * 1e3:.1f}–{max(t['first']) * 1e3:.1f} | "
            f"≤ {FIRST_OP_TARGET_MS:.0f} | {verdict(first, FIRST_OP_TARGET_MS)} |"
        )
    print(
        f'| `python -c "import fueltensor"` wall, interpreter start included (ml_dtypes '
        f"{ml_dtypes.__version__}) | {cell(whole, 1e3)} | {min(whole) * 1e3:.0f}–"
        f"{max(whole) * 1e3:.0f} (`python -c pass` {cell(bare, 1e3)}) | "
        f"≤ {IMPORT_TARGET_S * 1e3:.0f} | {verdict(statistics.median(whole), IMPORT_TARGET_S)} |"
    )
    first = statistics.median(cold["first"]) * 1e3
    print(
        f"| first operation, contract cache off (parse + validate; not a target) | {first:.1f} | "
        f"{min(cold['first']) * 1e3:.1f}–{max(cold['first']) * 1e3:.1f} | | |"
    )


# -- main --------------------------------------------------------------------------------------


def machine() -> str:
    """The machine's fingerprint (CPU, NumPy SIMD, libm, kernels, versions), cores, load and
    date, for the results file."""
    load = ", ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    versions = f"torch {torch.__version__} (1 thread)" if torch is not None else "no torch"
    return (
        f"{fingerprint()}; {os.cpu_count()} cores; {versions}; "
        f"load average {load}; {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}"
    )


@contextmanager
def timed(label: str) -> Iterator[None]:
    start = time.perf_counter()
    yield
    print(f"\n({label}: {time.perf_counter() - start:.0f} s)\n", flush=True)


SECTIONS = (
    "elementwise",
    "layouts",
    "sweep",
    "threads",
    "split",
    "libraries",
    "scalars",
    "pricing",
    "unary",
    "comparisons",
    "selections",
    "casts",
    "views",
    "live",
    "clients",
    "dispatch",
    "compiled",
    "memory",
    "startup",
)
"""The benchmark's sections, in the order they run (`--only` picks some)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10^6 instead of 10^7")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per side")
    parser.add_argument("--startup-runs", type=int, default=20, help="fresh processes per figure")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run, of {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall time, or this thread's CPU time (steadier on a loaded machine)",
    )
    parser.add_argument(
        "--plot",
        type=Path,
        default=Path(__file__).with_name("libraries.png"),
        help="where the libraries section saves its plot of ratios against size",
    )
    args = parser.parse_args()
    only = set(args.only.split(","))
    if only - set(SECTIONS):
        parser.error(f"unknown sections {sorted(only - set(SECTIONS))}; known: {SECTIONS}")
    global CLOCK
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    n = 10**6 if args.quick else 10**7
    repeats = args.repeats or (15 if args.quick else 9)
    np.seterr(all="ignore")
    if torch is not None:
        torch.set_num_threads(1)
    print(
        f"n = {n:,}; median of {repeats} interleaved repeats ({args.clock} clock); "
        "ratio = fueltensor ÷ reference"
    )
    print(f"machine: {machine()}\n")
    sections: dict[str, Callable[[], None]] = {
        "elementwise": lambda: run_cases(elementwise_cases(n), repeats),
        "layouts": lambda: run_cases(layout_cases(n), repeats),
        "sweep": lambda: run_cases(sweep_cases(n), repeats),
        "threads": lambda: thread_rows(repeats),
        "split": lambda: split_rows(repeats),
        "libraries": lambda: library_rows(repeats, n, args.plot),
        "scalars": lambda: scalar_rows(repeats),
        "pricing": lambda: pricing_rows(repeats),
        "unary": lambda: unary_rows(repeats),
        "comparisons": lambda: comparison_rows(repeats),
        "selections": lambda: selection_rows(repeats),
        "casts": lambda: cast_rows(repeats),
        "views": lambda: view_rows(max(repeats, 31)),
        "live": live_results_rows,
        "clients": lambda: client_rows(max(5, repeats // 2)),
        "dispatch": lambda: dispatch_rows(max(repeats, 31)),
        "compiled": lambda: compiled_rows(max(repeats, 31)),
        "memory": lambda: memory_rows(n),
        "startup": lambda: startup_rows(args.startup_runs),
    }
    for name in SECTIONS:
        if name in only:
            with timed(name):
                sections[name]()
    print(f"end load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
