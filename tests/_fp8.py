"""The tests' own reference for FP8 arithmetic (contracts/fuel-cpu-backend-fp8.md): the formats'
bit fields decoded by hand, the exact result of + - * / (float64 holds every sum, difference
and product of two 8-bit values exactly; a quotient is placed by exact cross-multiplication),
rounded once by hand to nearest even into the format, overflow `inf_or_nan`. Never the
kernels' code, the oracle's, NumPy's or ml_dtypes' conversions."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

Patterns = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Fmt:
    """An OCP 8-bit format's fields: exponent and fraction widths, bias, and whether the
    all-ones exponent is inf/NaN (E5M2) or numbers but for one NaN a sign (E4M3FN)."""

    name: str
    exponent: int
    mantissa: int
    ieee: bool

    @property
    def bias(self) -> int:
        return (1 << (self.exponent - 1)) - 1

    def value(self, bits: int) -> float:
        """The exact value of the pattern `bits` (NaN, ±inf included), by hand."""
        sign = -1.0 if bits & 0x80 else 1.0
        exp, frac = (
            (bits >> self.mantissa) & ((1 << self.exponent) - 1),
            bits & ((1 << self.mantissa) - 1),
        )
        top = (1 << self.exponent) - 1
        if self.ieee and exp == top:
            return sign * float("inf") if frac == 0 else float("nan")
        if not self.ieee and bits & 0x7F == 0x7F:
            return float("nan")
        if exp == 0:
            return sign * frac * 2.0 ** (1 - self.bias - self.mantissa)
        return sign * ((1 << self.mantissa) + frac) * 2.0 ** (exp - self.bias - self.mantissa)

    @property
    def overflow_bits(self) -> int:
        """What a magnitude beyond the largest finite value becomes: inf, or E4M3FN's NaN."""
        return 0x7C if self.ieee else 0x7F

    def quiet(self, bits: Patterns) -> Patterns:
        """NaN patterns quieted: E5M2's fraction top bit set; E4M3FN's one NaN is itself."""
        return bits | (1 << (self.mantissa - 1)) if self.ieee else bits


E4M3 = Fmt("float8_e4m3fn", 4, 3, ieee=False)
E5M2 = Fmt("float8_e5m2", 5, 2, ieee=True)
FORMATS = {f.name: f for f in (E4M3, E5M2)}


@cache
def ladder(f: Fmt) -> tuple[Patterns, Patterns]:
    """The finite non-negative values in order and their patterns, plus one more step past the
    largest (the next pattern, as if the exponent went on): rounding there is overflow."""
    finite = [b for b in range(0x80) if np.isfinite(f.value(b))]
    values = [f.value(b) for b in finite]
    step = values[-1] - values[-2]
    return np.array([*values, values[-1] + step]), np.array([*finite, finite[-1] + 1])


def rounded(f: Fmt, a: Patterns, b: Patterns, op: str) -> tuple[Patterns, Patterns]:
    """(patterns, any_nan) of `a op b` (op one of + - * /) for every pair of patterns a[i], b[i]:
    the exact result rounded once to nearest even; `any_nan` marks invalid operations, whose
    NaN the contract leaves to the CPU (any NaN passes there)."""
    table = np.array([f.value(x) for x in range(256)])
    x, y = table[a], table[b]
    with np.errstate(all="ignore"):
        q = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
    values, bits = ladder(f)
    mag = np.abs(q)
    lo = np.clip(np.searchsorted(values, mag, side="right") - 1, 0, len(values) - 2)
    mid = (values[lo] + values[lo + 1]) / 2
    with np.errstate(all="ignore"):  # exact: mid * |y| has at most 2p + 1 bits
        side = np.sign(np.abs(x) - mid * np.abs(y)) if op == "/" else np.sign(mag - mid)
    even_hi = bits[lo + 1] % 2 == 0
    pick = np.where((side > 0) | ((side == 0) & even_hi), lo + 1, lo)
    out = np.where(pick == len(values) - 1, f.overflow_bits, bits[pick])
    out = np.where(np.isinf(q), f.overflow_bits, out)
    out = out | np.where(np.signbit(q), 0x80, 0)
    a_nan, b_nan = np.isnan(x), np.isnan(y)
    invalid = np.isnan(q) & ~a_nan & ~b_nan
    out = np.where(b_nan, f.quiet(b), out)
    out = np.where(a_nan, f.quiet(a), out)
    return out.astype(np.uint8), invalid


def every_pair() -> tuple[Patterns, Patterns]:
    """Every (lhs, rhs) pair of 8-bit patterns, lhs-major: 2^16 of each."""
    p = np.arange(256, dtype=np.uint8)
    return np.repeat(p, 256), np.tile(p, 256)
