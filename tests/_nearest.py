"""The value of a float format nearest a rational, written from IEEE 754's definition (the
candidates around a guess, the nearest chosen, ties to the even pattern, the infinity from the
largest finite value plus half its ULP): the reference the exact sums' and products' tests hold
the oracle to, sharing nothing with its integer arithmetic or its rounding."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from fueltensor.testing import bits, float_format, from_bits


def nearest(value: Fraction, dtype: np.dtype[Any]) -> int:
    """The bits of `value` rounded to nearest, ties to even, in `dtype` (inf past the range, as
    IEEE 754's overflow rule: beyond the largest finite plus half its ULP)."""
    width = dtype.itemsize * 8
    f = float_format(dtype)
    top = float(f.scalar(f.max_pattern))
    ulp = top - float(f.scalar(f.max_pattern - 1))
    if abs(value) >= Fraction(top) + Fraction(ulp) / 2:
        return int(bits(np.array(np.inf if value > 0 else -np.inf, dtype))[()])
    clamped = float(max(-Fraction(top), min(Fraction(top), value)))  # float() of more overflows
    guess = int(bits(np.array(clamped, np.float64).astype(dtype))[()])
    sign = guess >> (width - 1)
    candidates = {guess}
    for step in (-1, 1):
        other = guess + step
        if 0 <= other < (1 << width) and (other >> (width - 1)) == sign:
            candidates.add(other)
    finite = [c for c in candidates if np.isfinite(from_bits(np.array([c]), dtype)[0])]

    def distance(c: int) -> tuple[Fraction, int]:
        return abs(Fraction(float(from_bits(np.array([c]), dtype)[0])) - value), c & 1

    return min(finite, key=distance)


def product_bits(row: np.ndarray) -> int:
    """The bits of the product of the 1-D `row` as IEEE 754's multiplication gives it in any
    order: its first NaN quieted (sign and payload kept); an infinity with a zero the quiet NaN
    of no payload and a clear sign; else the sign the product of the signs, and an infinity or
    a zero where the row holds one, otherwise the exact product (Fractions) rounded once; an
    empty row +1."""
    f = float_format(row.dtype)
    patterns = bits(np.ascontiguousarray(row)).reshape(-1)
    with np.errstate(invalid="ignore"):  # a signaling NaN widened
        wide = row.astype(np.float64)
    nan = np.isnan(wide)
    if nan.any():
        return int(patterns[int(np.argmax(nan))]) | f.quiet_bit
    if np.isinf(wide).any() and (wide == 0).any():
        return f.pattern(0, f.exponent_max, f.quiet_bit)
    sign = int(np.signbit(wide).sum() % 2) << (f.width - 1)
    if np.isinf(wide).any():
        return sign | f.pattern(0, f.exponent_max, 0)
    if (wide == 0).any():
        return sign
    total = Fraction(1)
    for value in np.abs(wide):
        total *= Fraction(float(value))
    return sign | nearest(total, row.dtype)
