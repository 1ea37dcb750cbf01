"""The array API's searching functions: argmax, argmin, count_nonzero, nonzero, searchsorted,
where. Indices come back as int64, the default index dtype."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from fueltensor.array_api._host import axes, fresh, host, promoted, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.scalars import coerce
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import ternary
from fueltensor.ops import OpKind

_INDEX = _dtypes.int64


def _arg(fn: Any, x: FuelTensor, axis: int | None, keepdims: bool) -> FuelTensor:
    if tensor(x).size == 0:
        raise ValueError("argmax/argmin of an empty tensor has no answer")
    if axis is None:
        out = fn(x._array.reshape(-1), axis=0)
        return fresh(np.reshape(out, (1,) * x.ndim if keepdims else ()), _INDEX)
    (a,) = axes(axis, x.ndim)
    return fresh(fn(x._array, axis=a, keepdims=keepdims), _INDEX)


@host
def argmax(x: FuelTensor, /, *, axis: int | None = None, keepdims: bool = False) -> FuelTensor:
    """The index of the first maximum of x (over the flattened x when axis is None)."""
    return _arg(np.argmax, x, axis, keepdims)


@host
def argmin(x: FuelTensor, /, *, axis: int | None = None, keepdims: bool = False) -> FuelTensor:
    """The index of the first minimum of x (over the flattened x when axis is None)."""
    return _arg(np.argmin, x, axis, keepdims)


@host
def count_nonzero(
    x: FuelTensor, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False
) -> FuelTensor:
    """How many elements of x are nonzero (along `axis`)."""
    over = axes(axis, tensor(x).ndim)
    return fresh(np.count_nonzero(x._array, axis=over, keepdims=keepdims), _INDEX)


@host
def nonzero(x: FuelTensor, /) -> tuple[FuelTensor, ...]:
    """The indices of x's nonzero elements, one int64 tensor per axis (x must not be 0-d)."""
    if tensor(x).ndim == 0:
        raise ValueError("nonzero of a 0-d tensor; reshape it to 1-D first")
    return tuple(fresh(i, _INDEX) for i in np.nonzero(x._array))


@host
def searchsorted(
    x1: FuelTensor,
    x2: FuelTensor | int | float,
    /,
    *,
    side: Literal["left", "right"] = "left",
    sorter: FuelTensor | None = None,
) -> FuelTensor:
    """Where each element of x2 would be inserted into the sorted 1-D x1 to keep it sorted."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    if tensor(x1, "x1").ndim != 1:
        raise ValueError(f"searchsorted needs a 1-D x1, got shape {x1.shape}")
    (a, v), _ = promoted(x1, x2)
    order = None if sorter is None else tensor(sorter, "sorter")._array
    return fresh(np.searchsorted(a, v, side=side, sorter=order), _INDEX)


@ternary.operation(OpKind.WHERE)
def where(condition: FuelTensor, x1: Any, x2: Any, /) -> ternary.Operands:
    """x1 where `condition` is true, else x2, bit for bit (broadcast; x1 and x2 promoted,
    scalars weak), planned through the selection contracts where they take the dtype."""
    if tensor(condition, "condition").dtype is not _dtypes.bool_:
        raise TypeError(f"where needs a bool condition, got {condition.dtype.name}")
    return (condition, *coerce(x1, x2)), None
