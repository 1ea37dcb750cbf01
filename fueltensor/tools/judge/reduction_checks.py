"""What the judge's reduction audits find in one case's outputs (`judge.reductions` for sums,
maxima and minima, `judge.products` for products): the findings per check, each output named
by its index in the case's output shape with its row summarised, and the checks the families
share (a special value's bits, the declared order's bits).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import numpy as np

from fueltensor.kernels.casting import bits_of
from fueltensor.testing import bits, format_value
from fueltensor.tools.judge.orders import Declared, simulate
from fueltensor.tools.judge.reduction_cases import Case
from fueltensor.tools.judge.references import Array


class Named(Protocol):
    """An audit case: anything with a name (a reduction's `Case`, a contraction's `Pair`)."""

    @property
    def name(self) -> str: ...


@dataclass
class Findings:
    """What the cases found, folded into the `Audit` at the end: per check (`bound`,
    `specials`, `order`), the failing cases' names and their first failure each."""

    found: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    worst_use: Fraction = Fraction(0)
    worst_where: str = ""
    outputs: int = 0
    unbounded: int = 0
    """Outputs of rows too long for the declared accumulator to bound (k·u >= 1)."""
    out_of_range: int = 0
    """A contraction's outputs whose rounded products leave the accumulator's normal range,
    where the bound does not hold (`contractions.leave_range`)."""

    def add(self, check: str, case: Named, failure: str) -> None:
        """Record a case's first failure of `check` (a reduction's `Case`, a contraction's
        `Pair`)."""
        self.found.setdefault(check, []).append((case.name, f"{check}: {failure}"))

    def failures(self) -> list[str]:
        """One failure per check: its first case's, then the other cases that fail it."""
        out = []
        for failing in self.found.values():
            (_, first), others = failing[0], [name for name, _ in failing[1:]]
            shown = ", ".join(f"'{n}'" for n in others[:6]) + (", ..." if len(others) > 6 else "")
            out.append(first + (f"; also in {len(others)} other cases: {shown}" if others else ""))
        return out


def index(case: Case, r: int | np.integer[Any]) -> tuple[int, ...]:
    """Output r's index in the case's output shape."""
    shape = tuple(n for i, n in enumerate(case.x.shape) if i not in case.axes)
    return tuple(int(i) for i in np.unravel_index(r, shape)) if shape else ()


def summary(row: Array) -> str:
    """A reduced row in a few words: its length, extremes and first elements."""
    if not row.size:
        return "no elements"
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row of NaN has no extremes
        wide = row.astype(np.float64)
        low, high = np.nanmin(wide), np.nanmax(wide)
    head = ", ".join(format_value(v) for v in row[:3])
    return f"{row.size} elements from {low:.4g} to {high:.4g}, first {head}"


def half_ulp(value: float, out: np.dtype[Any]) -> Fraction:
    """Half an ULP of the output format at `value` (its subnormal spacing at and near 0)."""
    info = bits_of(out)
    exponent = math.frexp(value)[1] - 1 if value else info.min_exp
    return Fraction(2) ** (max(exponent, info.min_exp) - info.mantissa - 1)


def special(got: Array, want: Array) -> Array:
    """Where a kernel's output is not the exact sum's special value (any NaN for a NaN)."""
    with np.errstate(invalid="ignore"):
        both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    differ: Array = ~both_nan & (bits(got) != bits(want))
    return differ


def order_bits(
    case: Case, table: Array, got: Array, d: Declared, f: Findings, product: bool = False
) -> None:
    """The declared order's bits of a sum (a `product`), output by output (a NaN against any
    NaN)."""
    want = simulate(table, d, got.dtype, product)
    differ = np.flatnonzero(special(got, want))
    if differ.size:
        r = int(differ[0])
        f.add(
            "order",
            case,
            f"output {index(case, r)} of case '{case.name}' is {format_value(got[r])}, "
            f"the declared order ({d.describe()}) gives {format_value(want[r])}; "
            f"{differ.size} of {got.size} outputs differ ({summary(table[r])})",
        )
