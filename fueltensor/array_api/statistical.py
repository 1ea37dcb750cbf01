"""The array API's statistical functions: reductions and cumulative sums/products.

Sums and products of integers accumulate in the 64-bit integer of their signedness, bool in
int64, floats in their own dtype, as the standard says. The narrow formats (bfloat16, float16,
the 8-bit ones) accumulate in float32 and round once at the end (NumPy would accumulate in the
narrow format). mean, var and std of real tensors are compositions of planned steps
(`compositions`); their complex forms are NumPy's here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from fueltensor.array_api._host import Rule, axes, fresh, host, ruled_host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import reduce as _reduce_engine
from fueltensor.ops import BY_KIND, OpKind

Axis = int | tuple[int, ...] | None
_F32 = np.dtype(np.float32)
_SUM, _PROD, _MAX, _MIN = (
    BY_KIND[kind].name for kind in (OpKind.SUM, OpKind.PROD, OpKind.MAX, OpKind.MIN)
)
_COMPLEX = Rule(None, None, None)
"""A complex mean's, variance's or standard deviation's rule: NumPy's, as it is."""
_PLANNED = (_dtypes.float32, _dtypes.float64, _dtypes.bfloat16, _dtypes.float16)
"""The dtypes the reduction contracts take (contracts/fuel-*-reduce.md)."""


def _accumulated(have: DType, dtype: Any) -> DType:
    """The dtype a sum or product of a `have` tensor returns: `dtype`, else the standard's
    default."""
    if dtype is not None:
        return _dtypes.as_dtype(dtype)
    if have.category in ("bool", "signed integer"):
        return _dtypes.int64
    if have.category == "unsigned integer":
        return _dtypes.uint64
    return have


def _pre(dtype: DType) -> np.dtype | None:
    """What a reduction casts a `dtype` tensor to first: float32 for the narrow formats."""
    return _F32 if dtype.narrow else None


def _total(dtype: DType, given: Any = None) -> Rule:
    """A sum's or product's rule: accumulated in `given` or the standard's default."""
    out = _accumulated(dtype, given)
    return Rule(_pre(dtype), _work(out), out)


def _extreme(dtype: DType) -> Rule:
    """A maximum's or minimum's rule: the tensor's own dtype."""
    return Rule(_pre(dtype), None, dtype)


def _served(rule: Callable[[DType], Rule]) -> Callable[[DType], Rule | None]:
    """`rule` for the dtypes a compiled reduction serves: no complex ones (their Python path
    silences NumPy's warnings, see `_reduce`)."""
    return lambda d: None if d.category == "complex floating" else rule(d)


def _unplanned(rule: Callable[[DType], Rule]) -> Callable[[DType], Rule | None]:
    """`_served(rule)` but for the dtypes the reduction contracts take (`engine.reduce` plans
    them): the compiled host call only for those no contract serves."""
    served = _served(rule)
    return lambda d: None if d in _PLANNED else served(d)


def _reduce(
    fn: Callable[..., Any], x: FuelTensor, axis: Axis, keepdims: bool, rule: Rule, **kwargs: Any
) -> FuelTensor:
    """`fn` over the given axes of x as `rule` says (the narrow formats computed in float32). Sums,
    products and extrema call the ufunc's reduce directly (what np.sum & co. call after a
    Python layer of their own).

    A mean, var or std over fewer than 1 + ddof elements is NaN, said by value, and a complex
    sum into a real dtype drops the imaginary part as asked: NumPy's warnings are silenced
    there (only there: catching warnings costs more than a small reduction)."""
    over = axes(axis, tensor(x).ndim)
    a = x._array if rule.pre is None else x._array.astype(rule.pre)
    if rule.work is not None:
        kwargs["dtype"] = rule.work
    count = math.prod([a.shape[i] for i in over])
    if count > kwargs.get("ddof", 0) and a.dtype.kind != "c":
        return fresh(fn(a, axis=over, keepdims=keepdims, **kwargs), rule.out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fresh(fn(a, axis=over, keepdims=keepdims, **kwargs), rule.out)


def _work(dtype: DType) -> np.dtype:
    """The NumPy dtype to accumulate a `dtype` result in (float32 for the narrow formats)."""
    return _F32 if dtype.narrow else dtype.np


def _host_extreme(ufunc: np.ufunc, name: str) -> Callable[[FuelTensor, Axis, bool], FuelTensor]:
    """The host max or min (`ufunc` np.maximum or np.minimum), labelled `name` in a trace: where
    no contract serves the call (the engine refused an empty one first)."""

    def extreme(x: FuelTensor, axis: Axis, keepdims: bool) -> FuelTensor:
        return _reduce(ufunc.reduce, x, axis, keepdims, _extreme(x.dtype))

    extreme.__name__ = extreme.__qualname__ = name
    return host(extreme)


_HOST_MAX, _HOST_MIN = _host_extreme(np.maximum, _MAX), _host_extreme(np.minimum, _MIN)


@ruled_host("REDUCE", np.maximum.reduce, _unplanned(_extreme))
def max(x: FuelTensor, /, *, axis: Axis = None, keepdims: bool = False) -> FuelTensor:
    """The largest element of x (along `axis`); NaN if any element is NaN."""
    return _reduce_engine.reduce(
        _MAX, tensor(x), axis, keepdims, lambda: _HOST_MAX(x, axis, keepdims)
    )


@ruled_host("REDUCE", np.minimum.reduce, _unplanned(_extreme))
def min(x: FuelTensor, /, *, axis: Axis = None, keepdims: bool = False) -> FuelTensor:
    """The smallest element of x (along `axis`); NaN if any element is NaN."""
    return _reduce_engine.reduce(
        _MIN, tensor(x), axis, keepdims, lambda: _HOST_MIN(x, axis, keepdims)
    )


@ruled_host("REDUCE", np.add.reduce, _unplanned(_total))
def sum(
    x: FuelTensor,
    /,
    *,
    axis: Axis = None,
    dtype: DType | None = None,
    keepdims: bool = False,
) -> FuelTensor:
    """The sum of x's elements (along `axis`); 0 for an empty reduction."""
    return _reduce_engine.reduce(
        _SUM, tensor(x), axis, keepdims, lambda: _HOST_SUM(x, axis, dtype, keepdims), dtype
    )


def _host_total(ufunc: np.ufunc, name: str) -> Callable[[FuelTensor, Axis, Any, bool], FuelTensor]:
    """The host sum or product (`ufunc` np.add or np.multiply: NumPy's order), labelled `name`
    in a trace: where no contract serves the call."""

    def total(x: FuelTensor, axis: Axis, dtype: DType | None, keepdims: bool) -> FuelTensor:
        return _reduce(ufunc.reduce, x, axis, keepdims, _total(tensor(x).dtype, dtype))

    total.__name__ = total.__qualname__ = name
    return host(total)


_HOST_SUM, _HOST_PROD = _host_total(np.add, _SUM), _host_total(np.multiply, _PROD)


@ruled_host("REDUCE", np.multiply.reduce, _unplanned(_total))
def prod(
    x: FuelTensor, /, *, axis: Axis = None, dtype: DType | None = None, keepdims: bool = False
) -> FuelTensor:
    """The product of x's elements (along `axis`); 1 for an empty reduction."""
    return _reduce_engine.reduce(
        _PROD, tensor(x), axis, keepdims, lambda: _HOST_PROD(x, axis, dtype, keepdims), dtype
    )


def _host_statistic(fn: Callable[..., Any], name: str) -> Callable[..., FuelTensor]:
    """The host mean, var or std (`fn` np.mean, np.var or np.std), labelled `name` in a trace:
    for the complex dtypes, which no contract takes (`compositions` composes the real ones)."""

    def statistic(x: FuelTensor, axis: Axis, keepdims: bool, **ddof: Any) -> FuelTensor:
        return _reduce(fn, x, axis, keepdims, _COMPLEX, **ddof)

    statistic.__name__ = statistic.__qualname__ = name
    return host(statistic)


HOST_MEAN, HOST_VAR, HOST_STD = (
    _host_statistic(np.mean, "mean"),
    _host_statistic(np.var, "var"),
    _host_statistic(np.std, "std"),
)


def _cumulative(
    fn: Callable[..., Any], x: FuelTensor, axis: int | None, dtype: Any, include_initial: bool
) -> FuelTensor:
    """Running `fn` along `axis`; with include_initial the identity comes first and every later
    element is computed from it (0 + -0 is +0, where NumPy would copy x[0] unchanged)."""
    if axis is None:
        if tensor(x).ndim > 1:
            raise ValueError(f"a cumulative reduction of a {x.ndim}-D tensor needs an axis")
        axis = 0
    (a,) = axes(axis, tensor(x).ndim)
    out = _accumulated(tensor(x).dtype, dtype)
    values = x._array.astype(_work(out))
    if include_initial:
        shape = tuple(1 if i == a else n for i, n in enumerate(values.shape))
        identity = np.full(shape, 1 if fn is np.cumulative_prod else 0, values.dtype)
        values = np.concatenate([identity, values], axis=a)
    return fresh(fn(values, axis=a), out)


@host
def cumulative_sum(
    x: FuelTensor,
    /,
    *,
    axis: int | None = None,
    dtype: DType | None = None,
    include_initial: bool = False,
) -> FuelTensor:
    """Running sums of x along `axis` (starting with 0 when include_initial)."""
    return _cumulative(np.cumulative_sum, x, axis, dtype, include_initial)


@host
def cumulative_prod(
    x: FuelTensor,
    /,
    *,
    axis: int | None = None,
    dtype: DType | None = None,
    include_initial: bool = False,
) -> FuelTensor:
    """Running products of x along `axis` (starting with 1 when include_initial)."""
    return _cumulative(np.cumulative_prod, x, axis, dtype, include_initial)


_reduce_engine.OPERATIONS.update({_SUM: sum, _PROD: prod, _MAX: max, _MIN: min})
for _name, _fn in _reduce_engine.OPERATIONS.items():
    _fn.__fueltensor_op__ = _name  # type: ignore[attr-defined]
