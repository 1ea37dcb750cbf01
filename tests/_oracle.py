"""Independent scalar reference for the kernel contracts, written from each contract formula.

Values are carried as raw bit patterns (ints) so NaN payloads and signs are exact. Arithmetic
uses Python floats (IEEE f64) with an explicit round-to-nearest-even into the target format;
f32 +, -, ×, ÷ through f64 is exact-then-rounded-once in effect (53 >= 2·24 + 2). `powf`/`pow`
come from the C library through ctypes, as the Rust kernels' `f32::powf` do. Nothing here calls
fueltensor or a NumPy ufunc: NumPy is only used to move bit patterns in and out of arrays.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np


@dataclass(frozen=True)
class Fmt:
    """An IEEE binary format: exponent and stored-mantissa widths, and its bits dtype."""

    name: str
    exp_bits: int
    man_bits: int
    np_dtype: Any
    uint: Any

    @property
    def width(self) -> int:
        """Total bit width."""
        return 1 + self.exp_bits + self.man_bits

    @property
    def bias(self) -> int:
        """Exponent bias."""
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def exp_mask(self) -> int:
        """The all-ones exponent field in place."""
        return ((1 << self.exp_bits) - 1) << self.man_bits

    @property
    def sign(self) -> int:
        """The sign bit."""
        return 1 << (self.width - 1)

    @property
    def quiet(self) -> int:
        """The quiet bit (top stored mantissa bit)."""
        return 1 << (self.man_bits - 1)

    @property
    def default_nan(self) -> int:
        """x86's invalid-operation result ("real indefinite"): negative quiet NaN, no payload."""
        return self.sign | self.exp_mask | self.quiet


F32 = Fmt("f32", 8, 23, np.float32, np.uint32)
F64 = Fmt("f64", 11, 52, np.float64, np.uint64)
BF16 = Fmt("bf16", 8, 7, ml_dtypes.bfloat16, np.uint16)
F16 = Fmt("f16", 5, 10, np.float16, np.uint16)
FORMATS = {f.name: f for f in (F32, F64, BF16, F16)}


def is_nan(bits: int, fmt: Fmt) -> bool:
    """True for a NaN bit pattern."""
    return (bits & fmt.exp_mask) == fmt.exp_mask and bits & ((1 << fmt.man_bits) - 1) != 0


def decode(bits: int, fmt: Fmt) -> float:
    """The exact value of a non-NaN bit pattern as a Python float."""
    sign = -1.0 if bits & fmt.sign else 1.0
    e = (bits >> fmt.man_bits) & ((1 << fmt.exp_bits) - 1)
    m = bits & ((1 << fmt.man_bits) - 1)
    if e == (1 << fmt.exp_bits) - 1:
        return sign * math.inf
    if e == 0:
        return sign * math.ldexp(m, 1 - fmt.bias - fmt.man_bits)
    return sign * math.ldexp(m | (1 << fmt.man_bits), e - fmt.bias - fmt.man_bits)


def encode(x: float, fmt: Fmt) -> int:
    """Round a non-NaN Python float to `fmt` with round-to-nearest-even; overflow goes to inf."""
    sign = fmt.sign if math.copysign(1.0, x) < 0 else 0
    a = abs(x)
    if math.isinf(a):
        return sign | fmt.exp_mask
    if a == 0:
        return sign
    m, e = math.frexp(a)
    big, big_e = int(m * (1 << 53)), e - 53
    emin = 1 - fmt.bias
    q = max(e - 1 - fmt.man_bits, emin - fmt.man_bits)
    shift = q - big_e
    if shift <= 0:
        k = big << -shift
    else:
        k, rest = big >> shift, big & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rest > half or (rest == half and k & 1):
            k += 1
    if k == 0:
        return sign
    if k == 1 << (fmt.man_bits + 1):
        k >>= 1
        q += 1
    if k < 1 << fmt.man_bits:
        return sign | k
    field = q + fmt.man_bits + fmt.bias
    if field >= (1 << fmt.exp_bits) - 1:
        return sign | fmt.exp_mask
    return sign | (field << fmt.man_bits) | (k - (1 << fmt.man_bits))


def f64_bits(x: float) -> int:
    """Bit pattern of a Python float."""
    return int(struct.unpack("<Q", struct.pack("<d", x))[0])


def narrow_from_f32(bits: int, fmt: Fmt) -> int:
    """The `half` crate's f32 -> bf16/f16: RNE; a NaN keeps sign and top payload, quiet bit set."""
    if is_nan(bits, F32):
        drop = F32.man_bits - fmt.man_bits
        payload = (bits & ((1 << F32.man_bits) - 1)) >> drop
        return ((bits >> 31) << (fmt.width - 1)) | fmt.exp_mask | fmt.quiet | payload
    return encode(decode(bits, F32), fmt)


def widen_to_f32(bits: int, fmt: Fmt) -> int:
    """Exact half -> f32 widening; a NaN keeps sign and payload (shifted up) unchanged."""
    if is_nan(bits, fmt):
        drop = F32.man_bits - fmt.man_bits
        sign = (bits >> (fmt.width - 1)) << 31
        return sign | F32.exp_mask | ((bits & ((1 << fmt.man_bits) - 1)) << drop)
    return encode(decode(bits, fmt), F32)


# ---------------------------------------------------------------------------------------------
# IEEE steps on bit patterns of the working format (f32 or f64): NaN operand -> the first NaN
# operand quieted; an invalid operation -> the default NaN; otherwise the exact result rounded.


def _ieee(op: Callable[[float, float], float]) -> Callable[[int, int, Fmt], int]:
    """Lift a Python-float operation to a rounded IEEE step on bit patterns."""

    def step(a: int, b: int, fmt: Fmt) -> int:
        if is_nan(a, fmt):
            return a | fmt.quiet
        if is_nan(b, fmt):
            return b | fmt.quiet
        r = op(decode(a, fmt), decode(b, fmt))
        if math.isnan(r):
            return fmt.default_nan
        return encode(r, fmt)

    return step


def _div(x: float, y: float) -> float:
    """IEEE division: x/±0 is ±inf, 0/0 is NaN."""
    if y == 0:
        if x == 0:
            return math.nan
        neg = (math.copysign(1.0, x) < 0) != (math.copysign(1.0, y) < 0)
        return -math.inf if neg else math.inf
    return x / y


add = _ieee(lambda x, y: x + y)
sub = _ieee(lambda x, y: x - y)
mul = _ieee(lambda x, y: x * y)
div = _ieee(_div)


def floor(a: int, fmt: Fmt) -> int:
    """IEEE floor: NaN quieted, ±0 and ±inf unchanged."""
    if is_nan(a, fmt):
        return a | fmt.quiet
    x = decode(a, fmt)
    if x == 0 or math.isinf(x):
        return a
    return encode(float(math.floor(x)), fmt)


def rem(a: int, b: int, fmt: Fmt) -> int:
    """The contract's remainder `a - floor(a / b) * b`, every step rounded in `fmt`."""
    return sub(a, mul(floor(div(a, b, fmt), fmt), b, fmt), fmt)


def round_rational(r: Fraction, fmt: Fmt) -> int:
    """A nonzero rational rounded once to `fmt` (nearest, ties to even; overflow to inf)."""
    sign, a = (fmt.sign if r < 0 else 0), abs(r)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2**(e-1) <= a < 2**(e+1)
    if a >= Fraction(2) ** e:
        e += 1  # now 2**(e-1) <= a < 2**e
    q = max(e - 1 - fmt.man_bits, 1 - fmt.bias - fmt.man_bits)  # the ulp's exponent
    scaled = a / Fraction(2) ** q
    k, rest = divmod(scaled.numerator, scaled.denominator)
    if 2 * rest > scaled.denominator or (2 * rest == scaled.denominator and k & 1):
        k += 1
    return (sign | encode(math.ldexp(k, q), fmt)) if k else sign


def mod(a: int, b: int, fmt: Fmt) -> int:
    """The exact floored remainder (Python's `%`) from its definition, in rationals: x - floor(x
    / y) * y rounded once into `fmt`; a zero takes y's sign; x % ±inf is x when x is zero or has
    y's sign, else y; x % 0 and ±inf % y are invalid; a NaN operand quieted, lhs's first."""
    if is_nan(a, fmt):
        return a | fmt.quiet
    if is_nan(b, fmt):
        return b | fmt.quiet
    x, y = decode(a, fmt), decode(b, fmt)
    if y == 0 or math.isinf(x):
        return fmt.default_nan
    negative_y = math.copysign(1.0, y) < 0
    if math.isinf(y):
        if x == 0:
            return fmt.sign if negative_y else 0
        return a if (x < 0) == negative_y else b
    fx, fy = Fraction(x), Fraction(y)
    r = fx - math.floor(fx / fy) * fy
    if r == 0:
        return fmt.sign if negative_y else 0
    return round_rational(r, fmt)


def maximum(a: int, b: int, fmt: Fmt) -> int:
    """NaN lhs, else NaN rhs, unchanged; else lhs if lhs >= rhs (lhs on a ±0 tie) else rhs."""
    if is_nan(a, fmt):
        return a
    if is_nan(b, fmt):
        return b
    return a if decode(a, fmt) >= decode(b, fmt) else b


def minimum(a: int, b: int, fmt: Fmt) -> int:
    """NaN lhs, else NaN rhs, unchanged; else lhs if lhs <= rhs (lhs on a ±0 tie) else rhs."""
    if is_nan(a, fmt):
        return a
    if is_nan(b, fmt):
        return b
    return a if decode(a, fmt) <= decode(b, fmt) else b


_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.powf.restype = ctypes.c_float
_LIBM.powf.argtypes = [ctypes.c_float, ctypes.c_float]
_LIBM.pow.restype = ctypes.c_double
_LIBM.pow.argtypes = [ctypes.c_double, ctypes.c_double]


def pow_(a: int, b: int, fmt: Fmt) -> int:
    """C `powf` (f32) / `pow` (f64), arguments passed as exact bit patterns."""
    if fmt is F64:
        x = ctypes.c_double.from_buffer_copy(struct.pack("<Q", a))
        y = ctypes.c_double.from_buffer_copy(struct.pack("<Q", b))
        return f64_bits(_LIBM.pow(x, y))
    xf = ctypes.c_float.from_buffer_copy(struct.pack("<I", a))
    yf = ctypes.c_float.from_buffer_copy(struct.pack("<I", b))
    r = _LIBM.powf(xf, yf)
    return int(struct.unpack("<I", struct.pack("<f", r))[0]) if not math.isnan(r) else _nan32(r)


def _nan32(r: float) -> int:
    """f32 bits of a NaN that came back through a double: sign and top payload, as cvtsd2ss."""
    bits = f64_bits(r)
    return ((bits >> 63) << 31) | F32.exp_mask | ((bits >> 29) & 0x7FFFFF)


OPS: dict[str, Callable[[int, int, Fmt], int]] = {
    "add": add,
    "sub": sub,
    "mul": mul,
    "div": div,
    "maximum": maximum,
    "minimum": minimum,
    "pow": pow_,
    "rem": rem,
    "mod": mod,
}
"""Scalar contract of each CPU op on the working format's bit patterns."""


def cpu_scalar(op: str, a: int, b: int, fmt: Fmt) -> int:
    """One element of `<op>_<fmt>`: native for f32/f64; halves widen, f32 op, one narrow."""
    if fmt in (F32, F64):
        return OPS[op](a, b, fmt)
    if op in ("maximum", "minimum"):
        # The f32 round-trip of an already-representable operand is lossless: pick the operand.
        return OPS[op](a, b, fmt)
    if op == "mod" and not (is_nan(a, fmt) or is_nan(b, fmt)):
        # Its contract: correctly rounded in the half type itself, rounded once, not via f32.
        return mod(a, b, fmt)
    wa, wb = widen_to_f32(a, fmt), widen_to_f32(b, fmt)
    if op == "pow":
        # The half crate's widening sets the quiet bit on NaN, which glibc powf can observe.
        wa |= F32.quiet if is_nan(wa, F32) else 0
        wb |= F32.quiet if is_nan(wb, F32) else 0
    return narrow_from_f32(OPS[op](wa, wb, F32), fmt)


def bits_of(arr: np.ndarray[Any, Any], fmt: Fmt) -> list[int]:
    """The flat list of bit patterns of an array in `fmt`."""
    return [int(v) for v in np.ascontiguousarray(arr).reshape(-1).view(fmt.uint)]


def special_bits(fmt: Fmt) -> list[int]:
    """±0, ±inf, NaNs (payloads, both signs, signalling), subnormals, extremes, ordinary values."""
    m = fmt.man_bits
    top = fmt.exp_mask
    base = [
        0,
        1,  # smallest subnormal
        (1 << m) - 1,  # largest subnormal
        1 << m,  # smallest normal
        top - 1,  # largest finite
        top - 2,
        top,  # inf
        top | fmt.quiet,  # canonical quiet NaN
        top | fmt.quiet | 0b101,  # quiet NaN with payload
        top | 1,  # signalling NaN
        top | (fmt.quiet >> 1) | 1,  # another signalling NaN
        encode(1.0, fmt),
        encode(0.5, fmt),
        encode(2.0, fmt),
        encode(3.0, fmt),
        encode(0.1, fmt),
        encode(0.01, fmt),
        encode(5.0, fmt),
        encode(1.5, fmt),
        encode(7.25, fmt),
    ]
    return sorted(set(base + [b | fmt.sign for b in base]))


def as_array(bits: list[int], fmt: Fmt, shape: tuple[int, ...] | None = None) -> Any:
    """An array of `fmt` holding the given bit patterns."""
    arr = np.array(bits, dtype=fmt.uint).view(fmt.np_dtype)
    return arr.reshape(shape) if shape is not None else arr


def cpu_expected(op: str, lhs: np.ndarray[Any, Any], rhs: np.ndarray[Any, Any], fmt: Fmt) -> Any:
    """Expected result bits (as a uint array of lhs's shape) of the CPU kernel `<op>_<fmt>`."""
    out = [
        cpu_scalar(op, a, b, fmt) for a, b in zip(bits_of(lhs, fmt), bits_of(rhs, fmt), strict=True)
    ]
    return np.array(out, dtype=fmt.uint).reshape(lhs.shape)


def powi(a: int, k: int, fmt: Fmt) -> int:
    """The PowIElementwise contract on bit patterns in the working format: `a` itself for
    k = 1; otherwise compiler-rt's `__powisf2` loop as written in C (`b & 1`, `b /= 2`
    truncating toward zero), each product rounded in `fmt`, and `1 / r` for negative k."""
    if k == 1:
        return a
    one = encode(1.0, fmt)
    r, y, b = one, a, k
    while True:
        if b & 1:
            r = mul(r, y, fmt)
        b = -(-b // 2) if b < 0 else b // 2
        if b == 0:
            break
        y = mul(y, y, fmt)
    return div(one, r, fmt) if k < 0 else r


def powi_expected(x: np.ndarray[Any, Any], k: int, fmt: Fmt) -> Any:
    """Expected result bits of `powi_<fmt>`: native for f32/f64; halves widen exactly, run in
    f32 and narrow once (k = 1 is the operand's own bits in every format)."""
    out = []
    for a in bits_of(x, fmt):
        if fmt in (F32, F64) or k == 1:
            out.append(powi(a, k, fmt))
        else:
            out.append(narrow_from_f32(powi(widen_to_f32(a, fmt), k, F32), fmt))
    return np.array(out, dtype=fmt.uint).reshape(x.shape)
