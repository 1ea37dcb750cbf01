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


def probes(src: object, to: object, seed: int = 0, random: int = 2000) -> np.ndarray:
    """Source values of a float32 or float64 `src` that decide a cast to `to`: every finite
    target value (a sample of them for a float32 target), each midpoint between neighbours and
    the source's neighbours of both (one source ulp either side), both signs; the overflow
    boundary; the smallest subnormals of both formats; zeros, infinities, signalling and quiet
    NaNs with payloads; then `random` seeded random patterns."""
    s, t = fmt(src), fmt(to)
    rng = np.random.default_rng(seed)
    if t.width <= 16:
        targets = np.arange(1 << t.width, dtype=t.uint).view(t.dtype)
    else:
        targets = rng.integers(0, 1 << t.width, 4000, dtype=t.uint, endpoint=False).view(t.dtype)
    with np.errstate(all="ignore"):
        wide = targets.astype(np.float64)  # exact: a widening
        wide = np.unique(np.abs(wide[np.isfinite(wide)]))
        mids = (wide[:-1] + wide[1:]) / 2  # exact for a narrower target: at most 24 bits
        edges = [t.max, t.max * (1 + 2.0 ** -(t.mantissa + 1)), s.max, math.ldexp(1, t.min_exp)]
        edges += [math.ldexp(1, t.min_exp - t.mantissa), math.ldexp(1, t.min_exp - t.mantissa - 1)]
        values = np.concatenate([wide, mids, np.array(edges)])
        values = values[values <= s.max].astype(s.dtype)
        up = np.nextafter(values, s.dtype.type(np.inf))
        down = np.nextafter(values, s.dtype.type(0))
    found = np.concatenate([values, up, down])
    found = np.concatenate([found, -found]).view(s.uint)
    w = s.width
    exp_ones = ((1 << s.exponent) - 1) << s.mantissa
    specials = [0, 1 << (w - 1), exp_ones, exp_ones | 1, exp_ones | 1 << (s.mantissa - 1)]
    specials += [exp_ones | (1 << s.mantissa) - 1, exp_ones | 5 << (s.mantissa - 4), 1, 2, 3]
    specials += [p | 1 << (w - 1) for p in specials]
    noise = rng.integers(0, 1 << w, random, dtype=s.uint, endpoint=False)
    return np.concatenate([found, np.array(specials, s.uint), noise]).view(s.dtype)


def inputs(src: object, to: object) -> np.ndarray:
    """What a cast test feeds a cast of `src` to `to`: every pattern of an 8- or 16-bit source,
    else `probes`."""
    f = fmt(src)
    if f.width <= 16:
        return np.arange(1 << f.width, dtype=f.uint).view(f.dtype)
    return probes(src, to)


@cache
def expected(src: str, to: str, saturate: bool) -> tuple[np.ndarray, np.ndarray]:
    """(`inputs(src, to)`, their reference casts), computed once per process: the MPFR loop
    takes a few seconds for a 16-bit source."""
    x = inputs(src, to)
    return x, cast(x, to, saturate)


CASES = [
    (s, d, sat)
    for s in FLOATS
    for d in FLOATS
    if s != d
    for sat in (False, True)
    if not sat or can_overflow(s, d)
]
"""Every (source, target, saturate) a cast serves: saturate only where a value can overflow."""
CASE_IDS = [f"{s}-{d}-{'saturate' if sat else 'inf_or_nan'}" for s, d, sat in CASES]
