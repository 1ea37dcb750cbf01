"""mean, var, std and logsumexp as compositions of planned steps (docs/reductions.md, "The
compositions"): each is a short program of namespace calls (sum, max, subtract, multiply,
divide, add, exp, log, sqrt, clip, astype), every one planned through its own contract and
recorded by `ft.trace()` and `compare_backends` as a step of its own. None has an op table row
or a kernel: its numerics are its steps' contracts, its error the composition of their bounds.

The real floating formats and the integers compose; complex inputs take the host's NumPy
mean, var and std (`statistical.HOST_MEAN` ...). A narrow format (bfloat16, float16, the 8-bit
ones) is widened once to float32 (an exact cast), computed there, where its sum contracts
accumulate anyway, and rounded once to its own dtype at the end. Integers and bool are converted
to the default float (float64), where their result stays, as NumPy does and as the unary rows'
`Integers.TO_FLOAT` rule does (the array API leaves them unspecified).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

from fueltensor.array_api import statistical as _stat
from fueltensor.array_api._host import tensor
from fueltensor.array_api.data_type_functions import astype, finfo
from fueltensor.array_api.elementwise import clip
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine.dispatch import add, divide, multiply, subtract
from fueltensor.engine.reduce import Axis, normalised
from fueltensor.engine.unary import exp, log, sqrt

F = TypeVar("F", bound=Callable[..., FuelTensor])


def composition(fn: F) -> F:
    """Mark `fn` a composition of planned steps, which `explain` names as such (it plans one
    operation; `ft.trace()` shows each step of a composition)."""
    fn.__fueltensor_composition__ = True  # type: ignore[attr-defined]
    return fn


def _widened(x: FuelTensor) -> tuple[FuelTensor, DType]:
    """x in the dtype its composition computes in (a planned cast where that is not x's own:
    float32 for a narrow format, float64 for integers and bool) and the dtype its result is
    rounded to at the end."""
    d = x.dtype
    if d.narrow:
        return astype(x, _dtypes.float32), d
    if d.is_float:
        return x, d
    return astype(x, _dtypes.float64), _dtypes.float64


def _rounded(r: FuelTensor, out: DType) -> FuelTensor:
    """The composition's result `r` rounded once to `out` (a planned cast), or `r` itself."""
    return r if r.dtype is out else astype(r, out)


def _count(x: FuelTensor, over: tuple[int, ...]) -> int:
    """How many elements of x each output of a reduction over `over` reduces."""
    return math.prod(x.shape[i] for i in over)


def _mean(w: FuelTensor, over: tuple[int, ...], keepdims: bool) -> FuelTensor:
    """The sum (its contract) divided by the count (the divide contract, the count a scalar
    of w's dtype): NaN where the count is 0 (0 / 0)."""
    return divide(_stat.sum(w, axis=over, keepdims=keepdims), float(_count(w, over)))


def _var(w: FuelTensor, over: tuple[int, ...], correction: float, keepdims: bool) -> FuelTensor:
    """Two-pass: the mean, the deviations, their squares, their sum, divided by n - correction;
    a NaN divisor where n - correction <= 0, so that those outputs are NaN (the array API's
    special case) through the same divide step, with no warning."""
    deviations = subtract(w, _mean(w, over, keepdims=True))
    squares = _stat.sum(multiply(deviations, deviations), axis=over, keepdims=keepdims)
    dof = _count(w, over) - correction
    return divide(squares, float(dof) if dof > 0 else math.nan)


def _real(x: object, correction: int | float = 0) -> tuple[FuelTensor, float] | None:
    """x as a tensor and `correction` as a float, None for a complex x (the host's); ValueError
    for a negative or non-numeric correction, before anything runs."""
    if isinstance(correction, bool) or not isinstance(correction, int | float) or correction < 0:
        raise ValueError(f"correction must be a non-negative number, got {correction!r}")
    x = tensor(x)
    return None if x.dtype.category == "complex floating" else (x, float(correction))


@composition
def mean(x: FuelTensor, /, *, axis: Axis = None, keepdims: bool = False) -> FuelTensor:
    """The arithmetic mean of x (along `axis`); NaN for an empty reduction."""
    real = _real(x)
    if real is None:
        return _stat.HOST_MEAN(x, axis, keepdims)
    over = normalised(axis, x.ndim)
    w, out = _widened(real[0])
    return _rounded(_mean(w, over, keepdims), out)


@composition
def var(
    x: FuelTensor, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False
) -> FuelTensor:
    """The variance of x (along `axis`), dividing by N - correction (two-pass); NaN where
    N - correction <= 0."""
    real = _real(x, correction)
    if real is None:
        return _stat.HOST_VAR(x, axis, keepdims, ddof=correction)
    over = normalised(axis, x.ndim)
    w, out = _widened(real[0])
    return _rounded(_var(w, over, real[1], keepdims), out)


@composition
def std(
    x: FuelTensor, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False
) -> FuelTensor:
    """The standard deviation of x (along `axis`): var's composition, then the sqrt contract
    (a narrow format's root taken in float32, before its one rounding)."""
    real = _real(x, correction)
    if real is None:
        return _stat.HOST_STD(x, axis, keepdims, ddof=correction)
    over = normalised(axis, x.ndim)
    w, out = _widened(real[0])
    return _rounded(sqrt(_var(w, over, real[1], keepdims)), out)


@composition
def logsumexp(x: FuelTensor, /, *, axis: Axis = None, keepdims: bool = False) -> FuelTensor:
    """log(sum(exp(x))) along `axis`, a fueltensor extension (scipy.special.logsumexp's
    meaning): m + log(sum(exp(x - m))), m the maximum clipped to the finite range, so that a
    row of -inf gives -inf, a +inf +inf and a NaN NaN; an empty reduction gives -inf (the log of
    the empty sum). Complex tensors are refused."""
    real = _real(x)
    if real is None:
        raise TypeError(f"logsumexp takes real tensors, got {x.dtype.name}: take abs(x) first")
    over = normalised(axis, x.ndim)
    w, out = _widened(real[0])
    if _count(w, over) == 0:
        return _rounded(log(_stat.sum(w, axis=over, keepdims=keepdims)), out)
    top = finfo(w.dtype).max
    shift = clip(_stat.max(w, axis=over, keepdims=True), min=-top, max=top)
    total = _stat.sum(exp(subtract(w, shift)), axis=over, keepdims=True)
    kept = tuple(1 if i in over else n for i, n in enumerate(w.shape) if keepdims or i not in over)
    return _rounded(add(log(total), shift).reshape(kept), out)
