"""The oracle's casts between the float formats, computed on the bit fields with NumPy integer
arithmetic: never through NumPy's, ml_dtypes' or the CPU's own conversions (those are providers
compared against this).

The rule (docs/casts.md): a source pattern's exact value, sign * significand * 2^exponent, is
rounded once to nearest, ties to even, at the target's precision, with gradual underflow (a
subnormal result keeps what the target can hold; nothing is flushed). A result beyond the
target's largest finite value overflows to the infinity of its sign, or (float8_e4m3fn, which
has none) to its NaN of that sign; `saturate` sends every magnitude beyond the largest finite,
infinities included, to the largest finite of its sign. A NaN keeps its sign and comes out
quiet with the high bits of its payload; float8_e4m3fn has one NaN per sign.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

Array = NDArray[Any]


@dataclass(frozen=True, slots=True)
class Bits:
    """A float format's bit fields, read from NumPy's or ml_dtypes' finfo."""

    width: int
    mantissa: int
    exponent: int
    min_exp: int
    """The unbiased exponent of the smallest normal number."""
    has_inf: bool
    """False for float8_e4m3fn: its all-ones exponent holds numbers, but for one NaN a sign."""
    max_bits: int
    """The magnitude bits of the largest finite value."""

    @property
    def bias(self) -> int:
        return 1 - self.min_exp

    @property
    def top(self) -> int:
        """The all-ones exponent field."""
        return (1 << self.exponent) - 1

    @property
    def inf_bits(self) -> int:
        """The magnitude bits of the infinity (the all-ones exponent, fraction 0)."""
        return self.top << self.mantissa

    @property
    def nan_bits(self) -> int:
        """The magnitude bits of the only NaN of a format without infinities."""
        return (1 << (self.width - 1)) - 1


FORMATS: Final = tuple(
    np.dtype(t)
    for t in (
        np.float32,
        np.float64,
        ml_dtypes.bfloat16,
        np.float16,
        ml_dtypes.float8_e4m3fn,
        ml_dtypes.float8_e5m2,
    )
)
"""The formats a cast connects, in the compiled kernels' code order (`_native.CAST_DTYPES`)."""


@cache
def bits_of(dtype: np.dtype[Any]) -> Bits:
    """The `Bits` of one of `FORMATS`."""
    info: Any = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    width = 8 * dtype.itemsize
    biggest = np.array([info.max], dtype).view(f"u{dtype.itemsize}")
    return Bits(
        width,
        int(info.nmant),
        int(info.nexp),
        int(info.minexp),
        dtype != np.dtype(ml_dtypes.float8_e4m3fn),
        int(biggest[0]),
    )


def can_overflow(src: np.dtype[Any], dst: np.dtype[Any]) -> bool:
    """Whether some value of `src` (an infinity included) is beyond `dst`'s largest finite:
    only then does the overflow rule (`saturate`) decide anything."""
    finfo: Any = ml_dtypes.finfo  # untyped
    return bool(finfo(src).max > finfo(dst).max)


def _fields(x: Array, f: Bits) -> tuple[Array, Array, Array]:
    """(sign bit, biased exponent, fraction) of every pattern, as int64 (the sign as 0 or 1)."""
    u = np.ascontiguousarray(x).reshape(-1).view(f"u{f.width // 8}").astype(np.uint64)
    sign = (u >> np.uint64(f.width - 1)).astype(np.int64)
    exp = ((u >> np.uint64(f.mantissa)) & np.uint64(f.top)).astype(np.int64)
    frac = u & np.uint64((1 << f.mantissa) - 1)
    return sign, exp, frac.astype(np.int64) if f.width < 64 else frac.view(np.int64)


def _rounded(sig: Array, e: Array, t: Bits) -> Array:
    """The magnitude bits of sig * 2^e (sig > 0, below 2^53) rounded to nearest even into `t`,
    with gradual underflow; an overflow gives bits above `t.max_bits`."""
    top = np.frexp(sig.astype(np.float64))[1] - 1  # exact: sig < 2^53
    x = e + top  # the value lies in [2^x, 2^(x+1))
    q_exp = np.maximum(x, t.min_exp) - t.mantissa  # the target's quantum there
    drop = q_exp - e
    s = np.clip(drop, 0, 62).astype(np.uint64)
    usig = sig.astype(np.uint64)
    q = usig >> s
    rest = usig & ((np.uint64(1) << s) - np.uint64(1))
    half = (np.uint64(1) << s) >> np.uint64(1)  # 0 where nothing is dropped
    up = (s > 0) & ((rest > half) | ((rest == half) & ((q & np.uint64(1)) == 1)))
    q = (q + up.astype(np.uint64)).astype(np.int64)
    q = np.where(drop < 0, sig << np.clip(-drop, 0, 62), q)  # exact: a widening
    # The exponent field below q's leading bit, plus q (its implicit bit carries in, a
    # rounding up into the next binade included; a subnormal's field is 0 and q its fraction).
    return np.where(q == 0, 0, ((q_exp + t.mantissa + t.bias - 1) << t.mantissa) + q)


def _nan_bits(frac: Array, s: Bits, t: Bits) -> Array:
    """The magnitude bits of a NaN: its payload's high bits, quiet; e4m3fn's one NaN."""
    if not t.has_inf:
        return np.full(frac.shape, t.nan_bits, np.int64)
    shift = t.mantissa - s.mantissa
    payload = frac << shift if shift >= 0 else frac >> -shift
    return t.inf_bits | payload | (1 << (t.mantissa - 1))


def cast_bits(x: Array, dst: np.dtype[Any], saturate: bool) -> Array:
    """`x` (one of `FORMATS`) cast to `dst` by this module's rule, as `dst`'s unsigned bit
    patterns of x's shape."""
    s, t = bits_of(x.dtype), bits_of(dst)
    sign, exp, frac = _fields(x, s)
    mag = (exp << s.mantissa) | frac
    nan = (mag > s.inf_bits) if s.has_inf else (mag == s.nan_bits)
    inf = (mag == s.inf_bits) if s.has_inf else np.zeros(mag.shape, bool)
    sig = np.where(exp > 0, frac | (1 << s.mantissa), frac)
    e = np.maximum(exp, 1) - s.bias - s.mantissa
    finite = ~(nan | inf) & (sig != 0)
    out = np.zeros(mag.shape, np.int64)
    out[finite] = _rounded(sig[finite], e[finite], t)
    beyond = t.max_bits if saturate else (t.inf_bits if t.has_inf else t.nan_bits)
    out = np.where(inf | (out > t.max_bits), beyond, out)
    out = np.where(nan, _nan_bits(frac, s, t), out)
    out |= sign << (t.width - 1)
    return out.astype(f"u{t.width // 8}").reshape(x.shape)


def short(dtype: np.dtype[Any]) -> str:
    """A format's short name in kernel names: f64, f32, bf16, f16, e4m3, e5m2."""
    from fueltensor.core.dtypes import from_numpy

    return from_numpy(np.dtype(dtype)).fkc.lower().removeprefix("f8_").removesuffix("fn")


def kernel_name(src: np.dtype[Any], dst: np.dtype[Any], saturate: bool) -> str:
    """The cast kernels' name stem for a source, a target and an overflow rule
    (`cast_f32_bf16`, `cast_f32_e4m3_sat`): the contracts' names and entry points end with it."""
    from fueltensor.ops import CAST_OP

    return f"{CAST_OP.kernel_op}_{short(src)}_{short(dst)}{'_sat' * saturate}"


CASTS: Final = tuple(
    (src, dst, saturate)
    for src in FORMATS
    for dst in FORMATS
    if src != dst
    for saturate in (False, True)
    if not saturate or can_overflow(src, dst)
)
"""Every (source, target, saturate) a cast kernel serves: saturating only where a value of
the source can overflow the target."""


Convert = Callable[[Array, Array], None]
"""A cast body: converts the dense `x` into the dense `out` of the target dtype."""


def thunk(
    name: str, src: np.dtype[Any], dst: np.dtype[Any], convert: Convert
) -> Callable[..., None]:
    """The kernel `name(x, *, out)` casting `src` to `dst`: checks the dtypes, shapes and layouts
    its contract admits (dense buffers of one shape), then runs `convert`."""

    def kernel(x: Array, *, out: Array) -> None:
        if x.dtype != src or out.dtype != dst:
            raise TypeError(
                f"{name}: x must be {src} and out {dst}; got x {x.dtype}, out {out.dtype}"
            )
        if x.shape != out.shape:
            raise ValueError(f"{name}: out has shape {out.shape}, x has {x.shape}")
        if not (x.flags.c_contiguous and out.flags.c_contiguous):
            raise ValueError(
                f"{name}: x and out must be C-contiguous (the contract admits dense buffers "
                "only; make a strided operand dense first)"
            )
        convert(x, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"{name}: x ({src}) cast to {dst}, rounded once to nearest even."
    return kernel


ORACLE_PREFIX: Final = "ref_"
"""The oracle's cast kernels' names: `ref_` and the stem (`ref_cast_f32_bf16`)."""


def oracle_entries(prefix: str) -> dict[str, Callable[..., None]]:
    """The oracle's cast kernels by entry point (`prefix` + `ref_` + kernel name)."""
    made = {}
    for src, dst, saturate in CASTS:
        name = ORACLE_PREFIX + kernel_name(src, dst, saturate)

        def convert(x: Array, out: Array, dst: np.dtype[Any] = dst, s: bool = saturate) -> None:
            out.view(f"u{dst.itemsize}")[...] = cast_bits(x, dst, s)

        made[prefix + name] = thunk(name, src, dst, convert)
    return made
