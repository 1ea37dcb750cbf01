"""`fueltensor tour`: a few seconds on built-in data that show what fueltensor is for.

Three parts: the registry (who provides which kernels), the dispatch of four typical operations
(same shape, strided, broadcast, mixed dtype: kernel, steps, cost, rejected candidates), and a
comparison of two providers on random bit patterns of the half types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from fueltensor.core.errors import plural
from fueltensor.core.tensor import FuelTensor, asarray
from fueltensor.engine.backends import use_backend
from fueltensor.engine.dispatch import add, divide, explain, maximum, multiply, subtract
from fueltensor.registry import Registry, registry
from fueltensor.testing import random_bits
from fueltensor.tools.compare import Comparison, ComparisonReport, compare_backends, text_table
from fueltensor.tools.textwidth import current_width, fit_lines


def _heading(title: str) -> str:
    """`title` underlined, the rule no wider than the terminal (the title wraps there)."""
    return f"\n{title}\n{'=' * min(len(title), current_width() or len(title))}"


def registry_summary(reg: Registry) -> str:
    """Providers and, per op kind, how many registrable contracts each provider offers."""
    providers = [p.name for p in reg.providers]
    ops = list(dict.fromkeys(c.op_kind for c in reg if c.registrable))
    rows = [("op_kind", *providers)]
    for op in ops:
        rows.append(
            (op, *(str(sum(c.provider.name == p for c in reg.for_op(op))) for p in providers))
        )
    describe = sum(not c.registrable for c in reg)
    return f"{reg!r}: {len(reg) - describe} registrable, {describe} describe-only\n" + text_table(
        rows
    )


HALF_OPS: tuple[Callable[[Any, Any], FuelTensor], ...] = (add, subtract, multiply, divide, maximum)


def half_comparison(n: int = 4096, seed: int = 0) -> ComparisonReport:
    """Every half-type operation of `HALF_OPS` on random bit patterns, compared across providers."""
    rng = np.random.default_rng(seed)
    with compare_backends() as report:
        for dtype in ("bfloat16", "float16"):
            x, y = random_bits(dtype, n, rng=rng), random_bits(dtype, n, rng=rng)
            for op in HALF_OPS:
                op(x, y)
    return report


def _half_verdict(compared: list[Comparison]) -> str:
    """What the measured mismatches say about the two providers' half-type arithmetic."""
    if not any(c.mismatches for c in compared):
        return (
            " The CPU kernels widen to f32 and round once, the oracle computes in the half "
            "type: for + - * / the two agree bit for bit, NaN payloads included."
        )
    if all(c.mismatches == c.nan_payloads for c in compared):
        return (
            " None differs in value: every one is a NaN whose payload or sign differs (every "
            "other element is bit-equal): the two providers' NaN rules differ on this machine, "
            "a payload difference, not a failure."
        )
    return ""


def examples() -> Iterator[tuple[str, Any]]:
    """(title, plan) for a same-shape, a strided, a broadcast and a mixed-dtype operation."""
    x = asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = asarray(np.ones((3, 4), np.float32))
    row = asarray(np.arange(4, dtype=np.float32))
    h = asarray(np.ones((3, 4), np.float16))
    yield "same shape: x + y (float32[3, 4])", explain(add, x, y)
    yield (
        "strided: x.T[::2] * z (a transposed, stepped view)",
        explain(multiply, x.T[::2], asarray(np.ones((2, 3), np.float32))),
    )
    yield (
        "broadcast: x + row (float32[3, 4] + float32[4]), the row dense block by block",
        (explain(add, x, row)),
    )
    with use_backend("reference"):  # the oracle runs where nothing else does, or named
        oracle = explain(add, x, row)
    yield "broadcast on the oracle, named: use_backend('reference'), x + row", oracle
    yield "maximum(x, row)", explain(maximum, x, row)
    yield "mixed dtypes: h + x (float16 + float32)", explain(add, h, x)


def tour() -> str:
    """The whole tour as text, its lines fitted to the terminal."""
    reg = registry()
    parts = [
        _heading("1. The registry: kernel contracts read from FKC documents"),
        registry_summary(reg),
        _heading("2. Dispatch: which kernel runs, what is done first, what it costs"),
    ]
    for title, plan in examples():
        parts += [f"\n-- {title}", str(plan)]
    report = half_comparison()
    compared = [c for c in report if c.compared]
    total = sum(c.count for c in compared)
    parts += [
        _heading("3. Providers side by side: half types on random bit patterns"),
        str(report),
        f"\n{plural(len(compared), 'comparison')}, {total} elements of random bfloat16/float16 "
        f"bit patterns (NaNs and infinities included): "
        f"{plural(report.mismatches, 'element')} differ." + _half_verdict(compared),
        "Not compared (a single provider admits them): "
        + ", ".join(dict.fromkeys(c.op for c in report if not c.compared)),
        "\nNext: `fueltensor explain add --shapes 3,4 4`, `fueltensor contracts`, "
        "`fueltensor judge --quick`, and the notebooks in notebooks/.",
    ]
    return fit_lines("\n".join(parts))
