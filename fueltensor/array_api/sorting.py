"""The array API's sorting functions: argsort and sort, stable by default, NaNs last."""

from __future__ import annotations

from typing import Literal

import numpy as np

from fueltensor.array_api._host import axes, fresh, host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.tensor import FuelTensor


def _order(x: FuelTensor, axis: int, descending: bool, stable: bool) -> np.ndarray:
    """argsort indices; descending keeps equal elements in their original order."""
    (a,) = axes(axis, tensor(x).ndim)
    kind: Literal["stable"] | None = "stable" if stable else None
    if not descending:
        return np.argsort(x._array, axis=a, kind=kind)
    flipped = np.argsort(np.flip(x._array, axis=a), axis=a, kind=kind)
    return x.shape[a] - 1 - np.flip(flipped, axis=a)


@host
def argsort(
    x: FuelTensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True
) -> FuelTensor:
    """The indices that sort x along `axis` (int64)."""
    return fresh(_order(x, axis, descending, stable), _dtypes.int64)


@host
def sort(
    x: FuelTensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True
) -> FuelTensor:
    """x sorted along `axis`."""
    order = _order(x, axis, descending, stable)
    return fresh(np.take_along_axis(x._array, order, axis=axis))
