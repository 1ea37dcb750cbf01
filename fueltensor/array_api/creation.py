"""The array API's creation functions (asarray lives with the tensor in `_tensor`).

Each builds a fresh dense tensor with NumPy; a shape too big to allocate is a MemoryError that
says how many bytes it would need. Without a dtype, Python ints give int64, floats
float64 and complex numbers complex128, as the standard's default dtypes say.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from fueltensor.array_api._host import fresh, host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.layout import as_shape
from fueltensor.core.pydata import python_values
from fueltensor.core.tensor import FuelTensor, _check_device, asarray

Scalar = bool | int | float | complex


def _default(dtype: Any, *values: Any) -> DType:
    """`dtype`, else the default dtype of the widest kind among the Python `values`."""
    _check_scalars(values)
    if dtype is not None:
        return _dtypes.as_dtype(dtype)
    if any(isinstance(v, complex) for v in values):
        return _dtypes.complex128
    if any(isinstance(v, float) for v in values):
        return _dtypes.default_float
    if all(isinstance(v, bool) for v in values):
        return _dtypes.bool_
    return _dtypes.default_int


def _check_scalars(values: tuple[Any, ...]) -> None:
    for v in values:
        if not isinstance(v, bool | int | float | complex):
            raise TypeError(
                f"expected a Python bool, int, float or complex, got {type(v).__name__}"
            )


def _bytes(n: int) -> str:
    """`n` bytes in the largest binary unit that keeps it at least 1, e.g. `8.0 TiB`."""
    units = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    power = min(max((n.bit_length() - 1) // 10, 0), len(units) - 1)
    return f"{n:,} bytes" if power == 0 else f"{n / 1024**power:.3g} {units[power]}"


def _allocate(
    name: str, shape: tuple[int, ...], dt: DType, make: Callable[[], np.ndarray]
) -> FuelTensor:
    """`make()`, a new `shape` tensor of `dt` that function `name` creates, as a tensor; a
    MemoryError naming the bytes it would need when no address space holds it (checked before
    asking NumPy) or the allocation fails."""
    if any(d > sys.maxsize for d in shape):
        raise ValueError(f"{name}: shape {shape} has an extent beyond 2**63 - 1")
    need = math.prod(shape) * dt.itemsize

    def where() -> str:
        return f"{name}: a {dt.name} tensor of shape {shape} needs {_bytes(need)}"

    if need > sys.maxsize:
        raise MemoryError(
            f"{where()}, more than a {sys.maxsize.bit_length() + 1}-bit address space"
        )
    try:
        return fresh(make(), dt)
    except MemoryError:
        raise MemoryError(f"{where()}, more than this machine could allocate") from None


def _filled(
    name: str, make: Callable[..., np.ndarray], shape: Any, dtype: Any, device: Any
) -> FuelTensor:
    """`make(shape, dtype)` as a tensor (float64 unless `dtype` says): empty, ones, zeros."""
    _check_device(device)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.default_float
    dims = as_shape(shape)
    return _allocate(name, dims, dt, lambda: make(dims, dt.np))


def _filled_like(
    make: Callable[..., np.ndarray], x: FuelTensor, dtype: Any, device: Any
) -> FuelTensor:
    """`make(x.shape, dtype)` as a tensor (x's dtype unless `dtype` says): the *_like functions."""
    _check_device(device)
    dt = tensor(x).dtype if dtype is None else _dtypes.as_dtype(dtype)
    return fresh(make(x.shape, dt.np), dt)


@host
def arange(
    start: int | float,
    /,
    stop: int | float | None = None,
    step: int | float = 1,
    *,
    dtype: DType | None = None,
    device: Any = None,
) -> FuelTensor:
    """Evenly spaced values in [start, stop) (start defaults to 0 when stop is omitted)."""
    _check_device(device)
    if stop is None:
        start, stop = 0, start
    dt = _default(dtype, start, stop, step)
    if dt is _dtypes.bool_:
        dt = _dtypes.default_int
    if step == 0:
        raise ValueError("arange step must not be 0")
    return fresh(np.arange(start, stop, step, dtype=dt.np), dt)


@host
def empty(
    shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Any = None
) -> FuelTensor:
    """An uninitialized tensor of `shape` (float64 by default)."""
    return _filled("empty", np.empty, shape, dtype, device)


@host
def empty_like(x: FuelTensor, /, *, dtype: DType | None = None, device: Any = None) -> FuelTensor:
    """An uninitialized tensor of x's shape (and dtype, unless given)."""
    return _filled_like(np.empty, x, dtype, device)


@host
def eye(
    n_rows: int,
    n_cols: int | None = None,
    /,
    *,
    k: int = 0,
    dtype: DType | None = None,
    device: Any = None,
) -> FuelTensor:
    """A 2-D tensor with ones on the k-th diagonal and zeros elsewhere."""
    _check_device(device)
    dt = _dtypes.as_dtype(dtype) if dtype is not None else _dtypes.default_float
    dims = (n_rows, n_rows if n_cols is None else n_cols)
    return _allocate("eye", dims, dt, lambda: np.eye(n_rows, n_cols, k=k, dtype=dt.np))


@host
def full(
    shape: int | tuple[int, ...],
    fill_value: Scalar,
    *,
    dtype: DType | None = None,
    device: Any = None,
) -> FuelTensor:
    """A tensor of `shape` filled with `fill_value` (its dtype inferred from the value)."""
    _check_device(device)
    dt = _default(dtype, fill_value)
    dims = as_shape(shape)
    return _allocate("full", dims, dt, lambda: np.full(dims, python_values(fill_value, dt)))


@host
def full_like(
    x: FuelTensor, /, fill_value: Scalar, *, dtype: DType | None = None, device: Any = None
) -> FuelTensor:
    """A tensor of x's shape (and dtype, unless given) filled with `fill_value`."""
    _check_device(device)
    _check_scalars((fill_value,))
    dt = tensor(x).dtype if dtype is None else _dtypes.as_dtype(dtype)
    return fresh(np.full(x.shape, python_values(fill_value, dt)), dt)


@host
def linspace(
    start: int | float | complex,
    stop: int | float | complex,
    /,
    num: int,
    *,
    dtype: DType | None = None,
    device: Any = None,
    endpoint: bool = True,
) -> FuelTensor:
    """`num` evenly spaced values from start to stop (stop included when endpoint)."""
    _check_device(device)
    dt = _default(dtype, 0.0, start, stop)
    return fresh(np.linspace(start, stop, num, endpoint=endpoint, dtype=dt.np), dt)


@host
def meshgrid(*arrays: FuelTensor, indexing: Literal["xy", "ij"] = "xy") -> list[FuelTensor]:
    """Coordinate grids from 1-D tensors ('xy': Cartesian, 'ij': matrix indexing)."""
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', got {indexing!r}")
    if len({tensor(a).dtype for a in arrays}) > 1:
        raise TypeError("meshgrid needs tensors of one dtype; cast them with astype")
    grids = np.meshgrid(*[a._array for a in arrays], indexing=indexing)
    return [fresh(g) for g in grids]


@host
def ones(
    shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Any = None
) -> FuelTensor:
    """A tensor of `shape` filled with ones (float64 by default)."""
    return _filled("ones", np.ones, shape, dtype, device)


@host
def ones_like(x: FuelTensor, /, *, dtype: DType | None = None, device: Any = None) -> FuelTensor:
    """A tensor of x's shape (and dtype, unless given) filled with ones."""
    return _filled_like(np.ones, x, dtype, device)


@host
def zeros(
    shape: int | tuple[int, ...], *, dtype: DType | None = None, device: Any = None
) -> FuelTensor:
    """A tensor of `shape` filled with zeros (float64 by default)."""
    return _filled("zeros", np.zeros, shape, dtype, device)


@host
def zeros_like(x: FuelTensor, /, *, dtype: DType | None = None, device: Any = None) -> FuelTensor:
    """A tensor of x's shape (and dtype, unless given) filled with zeros."""
    return _filled_like(np.zeros, x, dtype, device)


@host
def tril(x: FuelTensor, /, *, k: int = 0) -> FuelTensor:
    """x with the elements above the k-th diagonal of its last two axes zeroed."""
    if tensor(x).ndim < 2:
        raise ValueError(f"tril needs at least 2 dimensions, x has {x.ndim}")
    return fresh(np.tril(x._array, k))


@host
def triu(x: FuelTensor, /, *, k: int = 0) -> FuelTensor:
    """x with the elements below the k-th diagonal of its last two axes zeroed."""
    if tensor(x).ndim < 2:
        raise ValueError(f"triu needs at least 2 dimensions, x has {x.ndim}")
    return fresh(np.triu(x._array, k))


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> FuelTensor:
    """A tensor sharing the memory of a DLPack producer (a copy when copy=True)."""
    _check_device(device)
    if isinstance(x, FuelTensor):
        return asarray(x, copy=copy)
    return asarray(np.from_dlpack(x, copy=copy))
