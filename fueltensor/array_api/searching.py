"""The array API's searching functions: argmax, argmin, count_nonzero, nonzero, searchsorted,
where. Indices come back as int64, the default index dtype."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from fueltensor.array_api._host import axes, fresh, host, promoted, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.scalars import coerce
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import reduce as _reduce_engine
from fueltensor.engine import ternary
from fueltensor.ops import BY_KIND, OpKind

_INDEX = _dtypes.int64


def _arg(fn: Any, x: FuelTensor, axis: int | None, keepdims: bool) -> FuelTensor:
    """`fn` (np.argmax, np.argmin) over one axis of x, or its flattened index: the host's
    argmax or argmin, where no contract serves the call (the engine refused an empty one)."""
    if axis is None:
        out = fn(x._array.reshape(-1), axis=0)
        return fresh(np.reshape(out, (1,) * x.ndim if keepdims else ()), _INDEX)
    (a,) = axes(axis, x.ndim)
    return fresh(fn(x._array, axis=a, keepdims=keepdims), _INDEX)


def _host_arg(fn: Any, name: str) -> Callable[[FuelTensor, int | None, bool], FuelTensor]:
    """The host argmax or argmin (`fn`), labelled `name` in a trace."""

    def arg(x: FuelTensor, axis: int | None, keepdims: bool) -> FuelTensor:
        return _arg(fn, x, axis, keepdims)

    arg.__name__ = arg.__qualname__ = name
    return host(arg)


_ARGMAX, _ARGMIN = (BY_KIND[kind].name for kind in (OpKind.ARGMAX, OpKind.ARGMIN))
_HOST_ARGMAX, _HOST_ARGMIN = _host_arg(np.argmax, _ARGMAX), _host_arg(np.argmin, _ARGMIN)


def _one_axis(name: str, axis: object) -> int | None:
    """`axis` checked to be one int or None (the array API's argmax and argmin take no tuple)."""
    if axis is None:
        return None
    if isinstance(axis, int | np.integer) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError(f"{name} takes one axis (an int) or None, got axis={axis!r}")


def argmax(x: FuelTensor, /, *, axis: int | None = None, keepdims: bool = False) -> FuelTensor:
    """The index of the first maximum of x (over the flattened x when axis is None); a NaN is
    the maximum (the first NaN's index)."""
    t, over = tensor(x), _one_axis(_ARGMAX, axis)
    host_call = lambda: _HOST_ARGMAX(t, over, keepdims)  # noqa: E731
    return _reduce_engine.reduce(_ARGMAX, t, over, keepdims, host_call)


def argmin(x: FuelTensor, /, *, axis: int | None = None, keepdims: bool = False) -> FuelTensor:
    """The index of the first minimum of x (over the flattened x when axis is None); a NaN is
    the minimum (the first NaN's index)."""
    t, over = tensor(x), _one_axis(_ARGMIN, axis)
    host_call = lambda: _HOST_ARGMIN(t, over, keepdims)  # noqa: E731
    return _reduce_engine.reduce(_ARGMIN, t, over, keepdims, host_call)


_reduce_engine.OPERATIONS.update({_ARGMAX: argmax, _ARGMIN: argmin})
argmax.__fueltensor_op__ = _ARGMAX  # type: ignore[attr-defined]
argmin.__fueltensor_op__ = _ARGMIN  # type: ignore[attr-defined]


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
