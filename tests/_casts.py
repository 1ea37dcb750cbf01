"""Casts between the six float formats, written here from the formats' bit fields and MPFR,
independently of fueltensor's kernels and oracle (and never through ml_dtypes' or NumPy's
conversions): the reference the cast tests hold every cast kernel to.

The rule (docs/casts.md): the source pattern's exact value, rounded once to nearest, ties to
even, into the target with gradual underflow (subnormals kept, nothing flushed). A result beyond
the target's largest finite value overflows: to the infinity of its sign where the target has
one, else (float8_e4m3fn) to its NaN of that sign; with `saturate`, every magnitude beyond the
largest finite, infinities included, gives the largest finite of its sign. A NaN keeps its sign
and comes out quiet with the high bits of its payload (the fraction shifted to the target's
width, then the quiet bit set); float8_e4m3fn has one NaN per sign (S.1111.111).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import gmpy2
import ml_dtypes
import numpy as np

from fueltensor.core import dtypes as _dtypes


@dataclass(frozen=True)
class Format:
    """A float format's fields as ml_dtypes' and NumPy's finfo give them."""

    name: str
    dtype: np.dtype
    mantissa: int
    exponent: int
    min_exp: int
    """The unbiased exponent of the smallest normal number."""
    max: float
    has_inf: bool

    @property
    def width(self) -> int:
        return 8 * self.dtype.itemsize

    @property
    def uint(self) -> np.dtype:
        return np.dtype(f"u{self.dtype.itemsize}")

    @property
    def bias(self) -> int:
        return 1 - self.min_exp

    @property
    def top(self) -> int:
        """The all-ones biased exponent."""
        return (1 << self.exponent) - 1

    def decode(self, pattern: int) -> float | str:
        """The exact value of `pattern` as a Python float, or "nan"."""
        sign = -1.0 if pattern >> (self.width - 1) else 1.0
        exp = (pattern >> self.mantissa) & self.top
        frac = pattern & ((1 << self.mantissa) - 1)
        if self.has_inf and exp == self.top:
            return sign * math.inf if frac == 0 else "nan"
        if not self.has_inf and exp == self.top and frac == (1 << self.mantissa) - 1:
            return "nan"
        if exp == 0:
            return sign * math.ldexp(frac, self.min_exp - self.mantissa)
        return sign * math.ldexp(frac | (1 << self.mantissa), exp - self.bias - self.mantissa)

    def encode(self, value: float) -> int:
        """The pattern of a finite value the format holds exactly."""
        sign = (1 << (self.width - 1)) if math.copysign(1.0, value) < 0 else 0
        mag = abs(value)
        if mag == 0:
            return sign
        m, e = math.frexp(mag)  # mag = m * 2**e, 0.5 <= m < 1
        exp = e - 1 + self.bias
        if exp <= 0:
            return sign | int(math.ldexp(mag, self.mantissa - self.min_exp))
        frac = int(math.ldexp(m, self.mantissa + 1)) - (1 << self.mantissa)
        return sign | (exp << self.mantissa) | frac


@cache
def fmt(dtype: object) -> Format:
    """The `Format` of a float dtype (fueltensor's, NumPy's or ml_dtypes')."""
    np_dtype = _dtypes.as_dtype(dtype).np
    info = ml_dtypes.finfo(np_dtype)
    has_inf = np_dtype != np.dtype(ml_dtypes.float8_e4m3fn)
    return Format(
        str(np_dtype),
        np_dtype,
        int(info.nmant),
        int(info.nexp),
        int(info.minexp),
        float(info.max),
        has_inf,
    )


def _rounded(value: float, to: Format) -> float:
    """`value` rounded to nearest even at `to`'s precision, subnormals kept, with no upper
    exponent limit (overflow is decided after, against the largest finite value)."""
    precision = to.mantissa + 1
    ctx = gmpy2.context(
        precision=precision,
        emax=4096,
        emin=to.min_exp - to.mantissa + 1,  # MPFR's exponents count 0.5 <= m < 1
        subnormalize=True,
        round=gmpy2.RoundToNearest,
    )
    with gmpy2.context(precision=64):  # exact: a source value has at most 53 bits
        exact = gmpy2.mpfr(value)
    return float(ctx.plus(exact))  # one rounding (an mpfr made inside `ctx` rounds twice)


def cast_pattern(pattern: int, src: Format, to: Format, saturate: bool) -> int:
    """The target pattern of one source pattern, by the rule of this module's docstring."""
    sign = (pattern >> (src.width - 1)) << (to.width - 1)
    value = src.decode(pattern)
    if value == "nan":
        if not to.has_inf:
            return sign | (1 << (to.width - 1)) - 1
        frac = pattern & ((1 << src.mantissa) - 1)
        shift = to.mantissa - src.mantissa
        frac = frac << shift if shift >= 0 else frac >> -shift
        return sign | (to.top << to.mantissa) | frac | (1 << (to.mantissa - 1))
    assert isinstance(value, float)
    rounded = value if math.isinf(value) else _rounded(value, to)
    if abs(rounded) > to.max:
        if saturate:
            return to.encode(math.copysign(to.max, rounded))
        if to.has_inf:
            return sign | (to.top << to.mantissa)
        return sign | (1 << (to.width - 1)) - 1
    return to.encode(rounded)


def cast(x: np.ndarray, to: object, saturate: bool = False) -> np.ndarray:
    """Every element of `x` cast to `to`, as the target's bit patterns."""
    src, dst = fmt(x.dtype), fmt(to)
    patterns = np.ascontiguousarray(x).reshape(-1).view(src.uint).tolist()
    out = [cast_pattern(p, src, dst, saturate) for p in patterns]
    return np.array(out, dst.uint).reshape(x.shape)


FLOATS = ("float64", "float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
"""The six formats the casts connect."""


def can_overflow(src: object, to: object) -> bool:
    """Whether some finite or infinite source value exceeds the target's largest finite."""
    return fmt(src).max > fmt(to).max
