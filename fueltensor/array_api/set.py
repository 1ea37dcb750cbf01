"""The array API's set functions. Every NaN is its own unique value, as the standard says."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from fueltensor.array_api._host import fresh, host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.tensor import FuelTensor


class UniqueAllResult(NamedTuple):
    """What `unique_all` returns: the values, first indices, inverse indices and counts."""

    values: FuelTensor
    indices: FuelTensor
    inverse_indices: FuelTensor
    counts: FuelTensor


class UniqueCountsResult(NamedTuple):
    """What `unique_counts` returns: the values and how often each occurs."""

    values: FuelTensor
    counts: FuelTensor


class UniqueInverseResult(NamedTuple):
    """What `unique_inverse` returns: the values and each element's index among them."""

    values: FuelTensor
    inverse_indices: FuelTensor


_INDEX = _dtypes.int64


def _unique(x: FuelTensor, *, index: bool, inverse: bool, counts: bool) -> list[FuelTensor]:
    """np.unique with NaNs kept apart: values, then the requested index arrays (int64)."""
    a = tensor(x)._array
    unique: Callable[..., Any] = np.unique  # the flags are runtime booleans, not literals
    parts = unique(
        a, return_index=index, return_inverse=inverse, return_counts=counts, equal_nan=False
    )
    if not (index or inverse or counts):
        return [fresh(parts)]
    values, *rest = parts
    if inverse:
        at = 1 if index else 0
        rest[at] = rest[at].reshape(a.shape)
    return [fresh(values), *(fresh(r, _INDEX) for r in rest)]


@host
def unique_all(x: FuelTensor, /) -> UniqueAllResult:
    """x's unique values (sorted), the first index of each, x's inverse indices and counts."""
    return UniqueAllResult(*_unique(x, index=True, inverse=True, counts=True))


@host
def unique_counts(x: FuelTensor, /) -> UniqueCountsResult:
    """x's unique values (sorted) and how often each occurs."""
    return UniqueCountsResult(*_unique(x, index=False, inverse=False, counts=True))


@host
def unique_inverse(x: FuelTensor, /) -> UniqueInverseResult:
    """x's unique values (sorted) and, for each element of x, the index of its value."""
    return UniqueInverseResult(*_unique(x, index=False, inverse=True, counts=False))


@host
def unique_values(x: FuelTensor, /) -> FuelTensor:
    """x's unique values, sorted."""
    return _unique(x, index=False, inverse=False, counts=False)[0]
