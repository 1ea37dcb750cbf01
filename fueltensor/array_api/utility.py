"""The array API's utility functions: all, any, diff.

`all` and `any` call the logical ufunc's reduce into bool directly: np.all / np.any are a Python
layer over exactly that call for an ndarray. Over every axis each is one compiled call where
`_fast` is built (`ruled_host`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.array_api._host import Rule, axes, fresh, host, promoted, ruled_host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor

Axis = int | tuple[int, ...] | None


def _truth(reduce: Callable[..., Any], x: FuelTensor, axis: Axis, keepdims: bool) -> FuelTensor:
    """`reduce` (logical_and's or logical_or's) into bool over the given axes of x."""
    rule = _bool(tensor(x).dtype)
    over = axes(axis, x.ndim)
    return fresh(reduce(x._array, axis=over, keepdims=keepdims, dtype=rule.work), rule.out)


def _bool(dtype: DType) -> Rule:
    """`all`'s and `any`'s rule: reduced into bool, whatever the tensor's dtype."""
    return Rule(None, _BOOL, _dtypes.bool_)


_BOOL: Final = np.dtype(np.bool_)


@ruled_host("REDUCE", np.logical_and.reduce, _bool)
@host
def all(x: FuelTensor, /, *, axis: Axis = None, keepdims: bool = False) -> FuelTensor:
    """True where every element of x (along `axis`) is nonzero; True for an empty reduction."""
    return _truth(np.logical_and.reduce, x, axis, keepdims)


@ruled_host("REDUCE", np.logical_or.reduce, _bool)
@host
def any(x: FuelTensor, /, *, axis: Axis = None, keepdims: bool = False) -> FuelTensor:
    """True where some element of x (along `axis`) is nonzero; False for an empty reduction."""
    return _truth(np.logical_or.reduce, x, axis, keepdims)


@host
def diff(
    x: FuelTensor,
    /,
    n: int = 1,
    *,
    axis: int = -1,
    prepend: FuelTensor | None = None,
    append: FuelTensor | None = None,
) -> FuelTensor:
    """The n-th forward difference of x along `axis`, after joining prepend and append.

    `n` may also be passed positionally (`diff(x, 2)`, as NumPy and scikit-learn call it)."""
    (a,) = axes(axis, tensor(x).ndim)
    if n < 0:
        raise ValueError(f"diff order n must be >= 0, got {n}")
    parts = [p for p in (prepend, x, append) if p is not None]
    arrays, dt = promoted(*parts) if len(parts) > 1 else ([x._array], x.dtype)
    joined = np.concatenate(arrays, axis=a) if len(arrays) > 1 else arrays[0]
    return fresh(np.diff(joined, n=n, axis=a), dt)
