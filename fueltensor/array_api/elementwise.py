"""The array API's element-wise functions other than the contract operations.

All of them are host operations on NumPy ufuncs. Binary ones promote their operands by the
standard's rules first (Python scalars are weak), so the ufunc sees one dtype; the result keeps
the dtype the standard names. A ufunc keeps NumPy's default output order (a transposed input
gives a transposed result, which `fresh` then copies row-major): asking for `order="C"` would
save that copy but can change NumPy's inner loop, and with it the last bit of complex and
transcendental results (and of out-of-range float-to-integer casts in `astype`). The contract
operations, the op table's rows, are planned from the kernel contracts: the binary ones (add,
subtract, multiply, divide, remainder, pow, maximum, minimum) and the comparisons (less, equal
...) in `engine.dispatch`, the unary ones (exp, log, sqrt, abs, negative ...) in `engine.unary`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from fueltensor.array_api._host import fresh, host, promoted, tensor, ufunc_host
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.errors import with_article
from fueltensor.core.pydata import python_values
from fueltensor.core.scalars import coerce
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import ternary
from fueltensor.engine.planner import Target
from fueltensor.ops import OpKind

Unary = Callable[[FuelTensor], FuelTensor]
Binary = Callable[[Any, Any], FuelTensor]


def _unary(name: str, ufunc: np.ufunc, doc: str) -> Unary:
    def function(x: FuelTensor, /) -> FuelTensor:
        return fresh(ufunc(tensor(x)._array))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return ufunc_host(host(function), ufunc, 1)


def _binary(name: str, ufunc: np.ufunc, doc: str) -> Binary:
    def function(x1: Any, x2: Any, /) -> FuelTensor:
        arrays, _ = promoted(x1, x2)
        return fresh(ufunc(*arrays))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return ufunc_host(host(function), ufunc, 2)


acos = _unary("acos", np.arccos, "Inverse cosine, element-wise.")
acosh = _unary("acosh", np.arccosh, "Inverse hyperbolic cosine, element-wise.")
asin = _unary("asin", np.arcsin, "Inverse sine, element-wise.")
asinh = _unary("asinh", np.arcsinh, "Inverse hyperbolic sine, element-wise.")
atan = _unary("atan", np.arctan, "Inverse tangent, element-wise.")
atanh = _unary("atanh", np.arctanh, "Inverse hyperbolic tangent, element-wise.")
bitwise_invert = _unary("bitwise_invert", np.invert, "~x for integer or bool x, element-wise.")
ceil = _unary("ceil", np.ceil, "Smallest integer-valued number >= x, element-wise.")
conj = _unary("conj", np.conjugate, "The complex conjugate of x (a copy of x when x is real).")
cosh = _unary("cosh", np.cosh, "Hyperbolic cosine, element-wise.")
expm1 = _unary("expm1", np.expm1, "e**x - 1, accurate near 0, element-wise.")
floor = _unary("floor", np.floor, "Largest integer-valued number <= x, element-wise.")
isfinite = _unary("isfinite", np.isfinite, "True where x is finite (not NaN, not infinite).")
isinf = _unary("isinf", np.isinf, "True where x is +inf or -inf.")
isnan = _unary("isnan", np.isnan, "True where x is NaN.")
log1p = _unary("log1p", np.log1p, "log(1 + x), accurate near 0, element-wise.")
log2 = _unary("log2", np.log2, "Base-2 logarithm, element-wise.")
log10 = _unary("log10", np.log10, "Base-10 logarithm, element-wise.")
logical_not = _unary("logical_not", np.logical_not, "not x, element-wise (a bool result).")
positive = _unary("positive", np.positive, "+x, element-wise (a fresh copy).")
reciprocal = _unary("reciprocal", np.reciprocal, "1 / x, element-wise.")
sign = _unary("sign", np.sign, "-1, 0 or 1 by the sign of x (x / |x| for complex x).")
signbit = _unary("signbit", np.signbit, "True where x's sign bit is set (also -0 and -NaN).")
sinh = _unary("sinh", np.sinh, "Hyperbolic sine, element-wise.")
square = _unary("square", np.square, "x * x, element-wise.")
tan = _unary("tan", np.tan, "Tangent, element-wise.")
trunc = _unary("trunc", np.trunc, "x rounded toward zero, element-wise.")

atan2 = _binary("atan2", np.arctan2, "The angle of the point (x2, x1), quadrant-aware.")
bitwise_and = _binary("bitwise_and", np.bitwise_and, "x1 & x2, element-wise.")
bitwise_left_shift = _binary("bitwise_left_shift", np.left_shift, "x1 << x2, element-wise.")
bitwise_or = _binary("bitwise_or", np.bitwise_or, "x1 | x2, element-wise.")
bitwise_right_shift = _binary("bitwise_right_shift", np.right_shift, "x1 >> x2, element-wise.")
bitwise_xor = _binary("bitwise_xor", np.bitwise_xor, "x1 ^ x2, element-wise.")
copysign = _binary("copysign", np.copysign, "|x1| with the sign of x2, element-wise.")
hypot = _binary("hypot", np.hypot, "sqrt(x1**2 + x2**2) without undue overflow, element-wise.")
logaddexp = _binary("logaddexp", np.logaddexp, "log(exp(x1) + exp(x2)), without overflow.")
logical_and = _binary("logical_and", np.logical_and, "x1 and x2, element-wise (bool result).")
logical_or = _binary("logical_or", np.logical_or, "x1 or x2, element-wise (bool result).")
logical_xor = _binary("logical_xor", np.logical_xor, "x1 xor x2, element-wise (bool result).")
nextafter = _binary("nextafter", np.nextafter, "The next representable x1 toward x2.")


@host
def floor_divide(x1: Any, x2: Any, /) -> FuelTensor:
    """floor(x1 / x2), element-wise; an infinite operand follows the standard's special cases
    (NumPy's divmod-based result is NaN or -1 there)."""
    (a, b), dt = promoted(x1, x2)
    out = np.floor_divide(a, b)
    if dt.is_float:
        inf = np.isinf(a) | np.isinf(b)
        if inf.any():
            out = np.where(inf, np.floor(np.divide(a, b)), out)
    return fresh(out, dt)


@host
def round(x: FuelTensor, /, *, decimals: int = 0) -> FuelTensor:
    """x rounded to the nearest integer-valued number, ties to even (integers unchanged).

    `decimals` (an extension, NumPy's meaning) rounds to that many decimal places instead
    (negative: to tens, hundreds...), as `np.round` computes it in x's dtype."""
    return fresh(np.round(tensor(x)._array, operator.index(decimals)))


@host
def real(x: FuelTensor, /) -> FuelTensor:
    """The real part of x (a copy of x when x is real)."""
    return fresh(np.array(np.real(tensor(x)._array), copy=True))


@host
def imag(x: FuelTensor, /) -> FuelTensor:
    """The imaginary part of x (zeros of x's dtype when x is real)."""
    return fresh(np.array(np.imag(tensor(x)._array), copy=True))


@ternary.operation(OpKind.CLIP)
def clip(x: FuelTensor, /, min: Any = None, max: Any = None) -> ternary.Operands:
    """x limited to [min, max] element-wise (a bound None: none on that side); the result keeps
    x's dtype and has the broadcast shape. Float x is planned through the clamp contracts, which
    state it as minimum(maximum(x, min), max) (a NaN operand is returned as it is: x's first);
    other dtypes run on the host by the same rule. A bool x with a number bound is first
    promoted with it, as NumPy does (`clip([True, False], -1, 2)` is `[1, 0]`, not bools)."""
    x = tensor(x)
    if x.dtype.category == "bool":
        x = _promoted_bool(x, min, max)
    low, high = (_bound_tensor(bound, x, upper) for upper, bound in enumerate((min, max)))
    return (x, low, high), Target(x.dtype, "clip keeps x's dtype (the array API): a bound is cast")


def _promoted_bool(x: FuelTensor, *bounds: Any) -> FuelTensor:
    """Bool x cast to its promotion with the bounds (Python numbers weak, tensors not), so a
    bound of another kind is never squeezed into a bool."""
    dt = x.dtype
    for b in bounds:
        if isinstance(b, FuelTensor):
            dt = _dtypes.result_type(dt, b.dtype)
        elif isinstance(b, bool | int | float):
            dt = _dtypes.result_type(dt, _dtypes.scalar_dtype(b, dt))
    return x if dt is x.dtype else fresh(x._array.astype(dt.np), dt)


def _bound_tensor(bound: Any, x: FuelTensor, upper: int) -> FuelTensor:
    """A clip bound as a tensor: a tensor as it is (the plan casts it to x's dtype); a Python
    number or None (the dtype's extreme on its side) beside a float x a weak scalar of x's
    dtype (cached, as an operator's); else `_bound`'s array."""
    if isinstance(bound, FuelTensor):
        return bound
    if x.dtype.is_float and (bound is None or isinstance(bound, int | float)):
        return coerce(x, _extreme(x.dtype, upper) if bound is None else bound)[1]
    return fresh(_bound(bound, x, upper), x.dtype)


def _bound(bound: Any, x: FuelTensor, upper: int) -> np.ndarray:
    """A clip bound (not a tensor) as an array of x's dtype: None the dtype's extreme on its
    side (`upper`: 1 for max), so that it bounds nothing; a Python int outside x's range is
    clamped to it."""
    if bound is None:
        return np.asarray(_extreme(x.dtype, upper), x.dtype.np)
    if isinstance(bound, bool | int) and x.dtype.category in ("signed integer", "unsigned integer"):
        info = np.iinfo(x.dtype.np)
        bound = int(bound)
        if bound < info.min or bound > info.max:
            return np.asarray(min(max(bound, info.min), info.max), x.dtype.np)
    if not isinstance(bound, bool | int | float):
        raise TypeError(
            f"clip bounds are None, Python numbers or tensors, got {type(bound).__name__}"
        )
    if isinstance(bound, float) and not x.dtype.is_float:
        raise TypeError(f"a float bound {bound!r} cannot clip {with_article(x.dtype.name)} tensor")
    return python_values(bound, x.dtype)


def _extreme(dt: _dtypes.DType, upper: int) -> bool | int | float:
    """The value of `dt` no other exceeds on its side: +-inf, an integer type's limit, a bool."""
    if dt.is_float:
        return math.inf if upper else -math.inf
    if dt.category == "bool":
        return bool(upper)
    info = np.iinfo(dt.np)
    return int(info.max if upper else info.min)
