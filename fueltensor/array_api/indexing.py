"""Indexing: take, take_along_axis, and the host side of `x[key]` / `x[key] = value`.

Basic indices (ints, slices, `...`, None) select a view and writes go through its strides;
integer-array and boolean-mask indices are host operations that NumPy resolves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fueltensor.array_api._host import axes, fresh, host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.errors import with_article
from fueltensor.core.scalars import coerce
from fueltensor.core.shared import basic_view
from fueltensor.core.tensor import FuelTensor, check_writable


@host
def take(x: FuelTensor, indices: FuelTensor, /, *, axis: int | None = None) -> FuelTensor:
    """The elements of x at integer `indices` along `axis` (optional for a 1-D x)."""
    if axis is None:
        if tensor(x).ndim != 1:
            raise ValueError(f"take needs an axis for a tensor of {x.ndim} dimensions")
        axis = 0
    (a,) = axes(axis, tensor(x).ndim)
    return fresh(np.take(x._array, _integers(indices, "indices"), axis=a))


@host
def take_along_axis(x: FuelTensor, indices: FuelTensor, /, *, axis: int = -1) -> FuelTensor:
    """The elements of x at `indices` (x's rank, broadcast on the other axes) along `axis`."""
    (a,) = axes(axis, tensor(x).ndim)
    return fresh(np.take_along_axis(x._array, _integers(indices, "indices"), axis=a))


def _integers(indices: Any, what: str) -> np.ndarray:
    arr = tensor(indices, what)._array
    if indices.dtype.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"{what} must be an integer tensor, got {indices.dtype.name}")
    return arr


def _numpy_key(key: Any) -> Any:
    """An index with every tensor replaced by its NumPy array (integer or bool only)."""
    items = key if type(key) is tuple else (key,)
    out = []
    for k in items:
        if isinstance(k, FuelTensor):
            if k.dtype.category not in ("signed integer", "unsigned integer", "bool"):
                raise IndexError(
                    f"{with_article(k.dtype.name)} tensor cannot index; use integer or bool"
                )
            k = k._array
        out.append(k)
    return tuple(out)


@host
def getitem(x: FuelTensor, key: Any) -> FuelTensor:
    """x[key] for an integer-array or boolean-mask key: a fresh tensor."""
    return fresh(x._array[_numpy_key(key)], x.dtype)


@host
def setitem(x: FuelTensor, key: Any, value: Any) -> FuelTensor:
    """x[key] = value, written through x's strides; `value` must promote to x's dtype (a
    Python scalar must fit it). Returns x."""
    value = _value(x, value)
    target = basic_view(x, key)
    if target is not None:
        check_writable(target, "assignment")
        target._array[...] = value
    else:
        check_writable(x, "assignment")
        x._array[_numpy_key(key)] = value
    return x


def _value(x: FuelTensor, value: Any) -> np.ndarray:
    """`value` as a NumPy array of x's dtype, refused when promotion would change x's dtype."""
    if not isinstance(value, FuelTensor | np.ndarray | np.generic | bool | int | float | complex):
        missing = (
            " (float('nan') marks a missing float)" if value is None and x.dtype.is_float else ""
        )
        raise TypeError(
            f"cannot store {type(value).__name__} in {with_article(x.dtype.name)} tensor; "
            f"assign a FuelTensor, a NumPy array or a Python bool, int, float or complex{missing}"
        )
    _, v = coerce(x, value)
    if _dtypes.result_type(x.dtype, v.dtype) is not x.dtype:
        raise TypeError(
            f"cannot store {with_article(v.dtype.name)} value in "
            f"{with_article(x.dtype.name)} tensor "
            "without changing its dtype; cast it with astype first"
        )
    return v._array if v.dtype is x.dtype else v._array.astype(x.dtype.np)
