"""The judge's checks of a product contract's outputs (docs/reductions.md, "The judge"), called
by the reduction audit (`judge.reductions`) for each case of `judge.product_cases`.

Per output, against the exact product rounded once (`kernels.exact_products`):

* **the order's bits**, where the declared order fixes them (`orders.BITWISE`): every output
  against `orders.simulate` with multiplication, bit for bit (a NaN against any NaN), whatever
  its partial products do: an overflow, an underflow, inf·0 are the order's.
* **in range**, where no partial product of the row's finite nonzero elements leaves the
  accumulator's normal range (`orders.leaves_range`: the declared order's own partial products
  where it fixes them; for any other order, the product of the magnitudes above 1 and that of
  those below 1), and always for an exact accumulator: a row with a NaN, an infinity or a zero,
  and an empty row, gives the exact product's special bits (any NaN for a NaN; a zero's and an
  infinity's sign the product of the signs); any other row is within the bound, |p^ - p| <=
  γ_(m-1)·|p| + ½ ulp_out(p^), in rationals (an infinite p^ only where p rounds to it).
* **out of range**, where the order does not fix the bits: a row holding a NaN gives a NaN, and
  an output that is not a NaN has the sign of the product of the signs; nothing more is promised
  there (partial products overflow or underflow in an order the judge does not know).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from fueltensor.kernels.exact_products import exact_prod, magnitudes
from fueltensor.kernels.exact_sums import rows
from fueltensor.testing import bits, format_value
from fueltensor.tools.judge.orders import Declared, leaves_range
from fueltensor.tools.judge.reduction_cases import Case
from fueltensor.tools.judge.reduction_checks import (
    Findings,
    half_ulp,
    index,
    order_bits,
    special,
    summary,
)
from fueltensor.tools.judge.references import Array


def check(case: Case, got: Array, want: Array, d: Declared, f: Findings) -> None:
    """A product's checks of one case (the module docstring's): `got` the kernel's outputs and
    `want` the exact product's, both flat."""
    table = rows(case.x, case.axes)
    if d.fixes_bits:
        order_bits(case, table, got, d, f, product=True)
    left = leaves_range(table, d)
    with np.errstate(invalid="ignore"):
        wide = table.astype(np.float64)
    plain = (np.isfinite(wide) & (wide != 0)).all(axis=1) & (table.shape[1] > 0)
    for r in np.flatnonzero(~left & ~plain & special(got, want)):
        f.add("specials", case, _said(case, table, got, want, int(r), "the exact product is"))
        break
    _bound(case, table, got, want, d, f, np.flatnonzero(~left & plain))
    if not d.fixes_bits:
        _signs(case, table, got, wide, f, np.flatnonzero(left))


def exact(case: Case, dtype: np.dtype[np.generic]) -> Array:
    """The exact product of the case rounded once to `dtype`, flat."""
    want = np.empty(tuple(n for i, n in enumerate(case.x.shape) if i not in case.axes), dtype)
    exact_prod(case.x, case.axes, want)
    return want.reshape(-1)


def _said(case: Case, table: Array, got: Array, want: Array, r: int, what: str) -> str:
    """Output r of the case, got against `what` `want[r]`, its row summarised."""
    return (
        f"output {index(case, r)} of case '{case.name}' is {format_value(got[r])}, {what} "
        f"{format_value(want[r])} ({summary(table[r])})"
    )


def _bound(
    case: Case, table: Array, got: Array, want: Array, d: Declared, f: Findings, where: Array
) -> None:
    """|p^ - p| <= γ_(m-1)·|p| + ½ ulp_out(p^) on the rows `where` (in range, every element a
    finite nonzero number); an infinite output only where the exact product rounds to it."""
    m = table.shape[1]
    negative = np.signbit(table.astype(np.float64)).sum(axis=1) % 2 == 1
    for r, (n, e) in zip(where, magnitudes(table[where]) if where.size else [], strict=True):
        value = float(got[r])
        if not math.isfinite(value):
            if bits(got[r : r + 1]) != bits(want[r : r + 1]):
                rounds = _said(case, table, got, want, r, "the exact product rounds to")
                f.add("bound", case, rounds)
                return
            continue
        error, limit = _sides(value, -n if negative[r] else n, e, d, m, half_ulp(value, got.dtype))
        if error * f.worst_use.denominator > limit * f.worst_use.numerator:
            f.worst_use = Fraction(error / limit)  # a float's ratio: the note's figure
            f.worst_where = f"output {index(case, r)} of '{case.name}'"
        if error > limit:
            f.add(
                "bound",
                case,
                f"output {index(case, r)} of case '{case.name}' is {format_value(got[r])}, the "
                f"exact product (rounded: {format_value(want[r])}) is farther than "
                f"γ_{d.k(m, True)}·|p| + ½ ulp: |error| is {error / limit:.4g} times the bound "
                f"({d.describe()}; {summary(table[r])})",
            )
            return
    f.outputs += where.size


def _sides(value: float, n: int, e: int, d: Declared, m: int, half: Fraction) -> tuple[int, int]:
    """(|p^ - p|, γ_k·|p| + ½ ulp) for p^ = `value` and p = n·2^e, both times 2^-b (2^p - k) for
    the least exponent b among them, so each side an integer: exact, without a Fraction's gcd
    of numbers of m·p bits (γ_k = k / (2^p - k), k = m - 1 or 0 for an exact accumulator)."""
    k = d.k(m, product=True)
    scale = (1 << d.unit_roundoff_bits) - k if k else 1
    top, bottom = value.as_integer_ratio()  # bottom a power of two
    f_exp = 1 - bottom.bit_length()
    h_exp = half.numerator.bit_length() - half.denominator.bit_length()  # half: a power of two
    base = min(e, f_exp, h_exp)
    p, v, h = n << (e - base), top << (f_exp - base), 1 << (h_exp - base)
    return scale * abs(v - p), k * abs(p) + scale * h


def _signs(case: Case, table: Array, got: Array, wide: Array, f: Findings, where: Array) -> None:
    """Out of range, in an order the judge cannot simulate: a NaN where the row holds one, else
    (an output not a NaN) the sign of the product of the signs."""
    outputs = got.astype(np.float64)
    for r in where:
        holds_nan, negative = np.isnan(wide[r]).any(), bool(np.signbit(wide[r]).sum() % 2)
        nan = math.isnan(outputs[r])
        if (holds_nan and not nan) or (not nan and bool(np.signbit(outputs[r])) != negative):
            sign = "a NaN" if holds_nan else "negative" if negative else "positive"
            f.add(
                "sign",
                case,
                f"output {index(case, r)} of case '{case.name}' is {format_value(got[r])}, "
                f"the product of its elements is {sign} ({summary(table[r])})",
            )
            return
