"""Float formats as bit fields, and arrays as their bit patterns.

Every helper of `fueltensor.testing` reasons on bit patterns: `float_format` turns any accepted
spelling of a float dtype into a `FloatFormat` (which bits are the sign, the exponent, the
quiet bit and the payload), `bits` turns an array into its unsigned patterns and `from_bits`
back, and `ulp_distance` counts the floats between two patterns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import ml_dtypes
import numpy as np

from fueltensor.core import dtypes as _dtypes

_UNSIGNED: Final[dict[int, np.dtype]] = {
    1: np.dtype(np.uint8),
    2: np.dtype(np.uint16),
    4: np.dtype(np.uint32),
    8: np.dtype(np.uint64),
}


@dataclass(frozen=True)
class FloatFormat:
    """One IEEE-style binary float format: its names, storage and bit fields.

    `mantissa` counts the stored fraction bits (23 for float32), `exponent` the exponent bits;
    both come from NumPy's and ml_dtypes' `finfo`, so nothing here restates a format by hand.
    """

    name: str
    """The fueltensor name: "float32", "float64", "bfloat16", "float16"."""
    fkc: str
    """The FKC code: "F32", "F64", "BF16", "F16"."""
    dtype: np.dtype
    """The NumPy (or ml_dtypes) dtype that stores it."""
    mantissa: int
    exponent: int
    has_inf: bool = True
    """False for float8_e4m3fn (OCP's E4M3): its all-ones exponent holds numbers, but for one
    NaN a sign (S.1111.111), and it has no infinity, no quiet bit and no payload."""

    @property
    def width(self) -> int:
        """Bits per element."""
        return 8 * self.dtype.itemsize

    @property
    def uint(self) -> np.dtype:
        """The unsigned integer dtype of the same width (what `bits` returns)."""
        return _UNSIGNED[self.dtype.itemsize]

    @property
    def sign_bit(self) -> int:
        """The sign bit, as a mask."""
        return 1 << (self.width - 1)

    @property
    def exponent_max(self) -> int:
        """The all-ones biased exponent (infinities and NaNs)."""
        return (1 << self.exponent) - 1

    @property
    def bias(self) -> int:
        """The exponent bias: the biased exponent of 1.0."""
        return self.exponent_max >> 1

    @property
    def mantissa_mask(self) -> int:
        """The stored fraction bits, as a mask."""
        return (1 << self.mantissa) - 1

    @property
    def quiet_bit(self) -> int:
        """The top fraction bit: set in a quiet NaN, clear in a signaling one (IEEE 754-2008)."""
        return 1 << (self.mantissa - 1)

    @property
    def precision(self) -> int:
        """Significant bits, the implicit leading one included (24 for float32)."""
        return self.mantissa + 1

    @property
    def digits(self) -> int:
        """Decimal digits that tell every two values of the format apart (9 for float32)."""
        return math.ceil(1 + self.precision * math.log10(2))

    @property
    def max_pattern(self) -> int:
        """The largest finite value's bits (e4m3fn: the all-ones exponent, fraction 110)."""
        if self.has_inf:
            return self.pattern(0, self.exponent_max - 1, self.mantissa_mask)
        return self.pattern(0, self.exponent_max, self.mantissa_mask - 1)

    def is_nan(self, pattern: int) -> bool:
        """Whether `pattern` is a NaN of this format."""
        _, exponent, fraction = self.fields(pattern)
        if not self.has_inf:
            return exponent == self.exponent_max and fraction == self.mantissa_mask
        return exponent == self.exponent_max and fraction != 0

    def pattern(self, sign: int, exponent: int, mantissa: int) -> int:
        """The bit pattern of the given fields (sign 0 or 1, biased exponent, fraction bits)."""
        return (sign << (self.width - 1)) | (exponent << self.mantissa) | mantissa

    def fields(self, pattern: int) -> tuple[int, int, int]:
        """(sign, biased exponent, fraction bits) of one bit pattern."""
        return (
            pattern >> (self.width - 1),
            (pattern >> self.mantissa) & self.exponent_max,
            pattern & self.mantissa_mask,
        )

    def scalar(self, pattern: int) -> Any:
        """The NumPy scalar of this format holding exactly `pattern`."""
        return np.array(pattern, self.uint).view(self.dtype)[()]


@cache
def _formats() -> dict[np.dtype, FloatFormat]:
    """The float formats by NumPy dtype, their fields read from `finfo` (ml_dtypes' for its own:
    bfloat16 and the OCP 8-bit formats)."""
    found = {}
    for dt in (
        _dtypes.float32,
        _dtypes.float64,
        _dtypes.bfloat16,
        _dtypes.float16,
        _dtypes.float8_e4m3fn,
        _dtypes.float8_e5m2,
    ):
        info: Any = ml_dtypes.finfo(dt.np) if not dt.numpy_own else np.finfo(dt.np)  # type: ignore[no-untyped-call]
        has_inf = dt is not _dtypes.float8_e4m3fn
        found[dt.np] = FloatFormat(dt.name, dt.fkc, dt.np, int(info.nmant), int(info.nexp), has_inf)
    return found


def float_format(dtype: object) -> FloatFormat:
    """The `FloatFormat` of a float dtype given as a fueltensor dtype, a NumPy or ml_dtypes
    dtype or scalar type, a name ("float32", "bfloat16") or an FKC code ("F32"); TypeError
    for anything else, naming the four it takes."""
    if isinstance(dtype, FloatFormat):
        return dtype
    if isinstance(dtype, str) and dtype in _dtypes.BY_FKC:
        dtype = _dtypes.BY_FKC[dtype]
    try:
        found = _formats().get(_dtypes.as_dtype(dtype).np)
    except TypeError:
        found = None
    if found is None:
        names = ", ".join(f"{f.name} ({f.fkc})" for f in _formats().values())
        raise TypeError(f"{dtype!r} is not a float dtype fueltensor.testing knows: {names}")
    return found


def format_of(x: np.ndarray) -> FloatFormat:
    """The float format of an array's dtype (TypeError for a non-float array)."""
    return float_format(x.dtype)


EXACT_KINDS: Final = "biu"
"""The NumPy kinds of exact results (a comparison's bool, an index's int64): equal or wrong."""


def bits(x: object) -> np.ndarray:
    """The bit patterns of a float array (or FuelTensor, or scalar) as unsigned integers of the
    same width and shape; a bool or integer array's (a comparison's result, an index) as its
    bytes, unsigned of its width."""
    a = np.asarray(x)
    if a.dtype.kind in EXACT_KINDS:
        return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}").reshape(a.shape)
    fmt = format_of(a)
    patterns: np.ndarray = np.ascontiguousarray(a).view(fmt.uint).reshape(a.shape)
    return patterns


def from_bits(patterns: object, dtype: object) -> np.ndarray:
    """The float array of `dtype` holding exactly the given bit patterns (ints or an unsigned
    array), NaN payloads and signaling NaNs included."""
    fmt = float_format(dtype)
    raw = np.asarray(patterns)
    if raw.dtype.kind not in "ui":
        raise TypeError(f"bit patterns must be integers, not {raw.dtype}")
    limit = (1 << fmt.width) - 1
    if raw.size and (int(raw.min()) < 0 or int(raw.max()) > limit):
        raise ValueError(f"a {fmt.name} bit pattern lies in 0 .. {limit:#x}")
    values: np.ndarray = (
        np.ascontiguousarray(raw.astype(fmt.uint)).view(fmt.dtype).reshape(raw.shape)
    )
    return values


def _ordered(u: np.ndarray, width: int) -> np.ndarray:
    """Bit patterns mapped to integers in value order (wrapping uint64): negative patterns to
    -magnitude, so -0 and +0 meet at 0 and neighbours across zero are 1 apart."""
    sign = np.uint64(1) << np.uint64(width - 1)
    wide = u.astype(np.uint64)
    magnitude = wide & (sign - np.uint64(1))
    with np.errstate(over="ignore"):  # the wrap is the point (a 0-d operand would warn)
        ordered: np.ndarray = np.where((wide & sign) != 0, np.uint64(0) - magnitude, magnitude)
    return ordered


def ulp_distance(a: object, b: object) -> np.ndarray:
    """|ord(a) - ord(b)| as uint64, where ord maps bit patterns to integers in value order (so
    -0 and +0 are 0 apart, and adjacent floats are 1 apart across zero). NaNs are measured by
    their patterns too: callers decide what a NaN lane means."""
    x, y = np.asarray(a), np.asarray(b)
    width = format_of(x).width
    oa, ob = _ordered(bits(x), width), _ordered(bits(y), width)
    # The true difference fits in 64 bits; compare as signed to pick the non-wrapping order.
    sa, sb = oa.view(np.int64), ob.view(np.int64)
    with np.errstate(over="ignore"):
        distance: np.ndarray = np.where(sa >= sb, oa - ob, ob - oa)
    return distance
