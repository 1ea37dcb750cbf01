"""The tests' own reference for FP8 arithmetic (contracts/fuel-cpu-backend-fp8.md): the formats'
bit fields decoded by hand, the exact result of + - * / (float64 holds every sum, difference
and product of two 8-bit values exactly; a quotient is placed by exact cross-multiplication),
rounded once by hand to nearest even into the format, overflow `inf_or_nan`. Never the
kernels' code, the oracle's, NumPy's or ml_dtypes' conversions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import pytest

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


def _table(f: Fmt) -> np.ndarray[Any, Any]:
    """Every pattern's exact value, by hand."""
    return np.array([f.value(x) for x in range(256)])


def _pattern(f: Fmt, exact: float) -> int:
    """The pattern of a value already rounded into the format's precision (or, past the largest
    finite, of its overflow), by hand."""
    if math.isinf(exact) or abs(exact) > ladder(f)[0][-2]:
        return f.overflow_bits | (0x80 if exact < 0 else 0)
    values, bits = ladder(f)
    hit = np.flatnonzero(values == abs(exact))
    assert hit.size == 1, exact
    return int(bits[hit[0]]) | (0x80 if math.copysign(1.0, exact) < 0 else 0)


def selected(f: Fmt, a: Patterns, b: Patterns, larger: bool) -> Patterns:
    """maximum (`larger`) or minimum of every pair as the contract's formula says: a NaN lhs,
    else a NaN rhs, quieted; else the larger (smaller) operand's own pattern, lhs on a ±0
    tie."""
    table = _table(f)
    x, y = table[a], table[b]
    pick_lhs = (x >= y) if larger else (x <= y)
    out = np.where(pick_lhs, a, b)
    out = np.where(np.isnan(y), f.quiet(b), out)
    return np.where(np.isnan(x), f.quiet(a), out).astype(np.uint8)


def _floored(x: float, y: float) -> float:
    """The floored remainder of two numbers as the contract defines it: fmod (exact), plus y
    where it is nonzero and of the other sign (exact in double for two 8-bit values); a zero
    takes y's sign (0 % -inf too); x % ±inf is x when x has y's sign, else y."""
    if math.isinf(y) and x != 0:
        return x if (x > 0) == (y > 0) else y
    m = math.fmod(x, y)
    if m == 0:
        return math.copysign(0.0, y)
    return m + y if (m < 0) != (y < 0) else m


def remainder(f: Fmt, a: Patterns, b: Patterns) -> tuple[Patterns, Patterns]:
    """(patterns, invalid) of the floored remainder of every pair, rounded once by hand: a NaN
    operand quieted, lhs's first; x % 0 and ±inf % y invalid (any NaN passes there)."""
    table = _table(f)
    x, y = table[a], table[b]
    pairs = zip(x.tolist(), y.tolist(), strict=True)
    wide = np.array([_floored(p, q) if math.isfinite(p) and q != 0 else math.nan for p, q in pairs])
    out = _round_values(f, wide)
    invalid = np.isnan(wide) & ~np.isnan(x) & ~np.isnan(y)
    out = np.where(np.isnan(y), f.quiet(b), out)
    return np.where(np.isnan(x), f.quiet(a), out).astype(np.uint8), invalid


def _round_values(f: Fmt, wide: np.ndarray[Any, Any]) -> Patterns:
    """Doubles rounded once to nearest even into the format by hand (a NaN: 0)."""
    values, bits = ladder(f)
    mag = np.abs(np.nan_to_num(wide))
    lo = np.clip(np.searchsorted(values, mag, side="right") - 1, 0, len(values) - 2)
    mid = (values[lo] + values[lo + 1]) / 2
    up = (mag > mid) | ((mag == mid) & (bits[lo + 1] % 2 == 0))
    pick = np.where(up, lo + 1, lo)
    out = np.where((pick == len(values) - 1) | np.isinf(wide), f.overflow_bits, bits[pick])
    return out | np.where(np.signbit(wide), 0x80, 0)


def powered(f: Fmt, a: Patterns, b: Patterns) -> tuple[Patterns, Patterns]:
    """(patterns, nan) of pow over every pair, correctly rounded by MPFR (gmpy2) into the
    format's precision and exponent range, its overflow by hand; `nan` marks NaN results,
    whose sign and payload the contract leaves to the C library (any NaN passes there)."""
    gmpy2 = pytest.importorskip("gmpy2")
    p, top = f.mantissa + 1, ladder(f)[0][-2]
    table = _table(f)
    out, nan = np.zeros(a.size, np.uint8), np.zeros(a.size, bool)
    with gmpy2.context(
        precision=p,
        emin=(1 - f.bias) - p + 2,
        emax=f.bias + 3,
        subnormalize=True,
        round=gmpy2.RoundToNearest,
    ):
        for i, (x, y) in enumerate(zip(table[a].tolist(), table[b].tolist(), strict=True)):
            r = gmpy2.mpfr(x) ** gmpy2.mpfr(y)  # MPFR's pow: C99 Annex F's special cases
            if gmpy2.is_nan(r):
                nan[i] = True
                continue
            v = float(r)
            out[i] = _pattern(f, v if abs(v) <= top else math.copysign(math.inf, v))
    return out, nan
