"""NumPy-compatible functions outside the array API standard: `pad`, `einsum`, `cumsum`,
`cumprod`, `transpose`, `gradient`, `quantile`.

Documented extensions with NumPy's signatures and meaning: xarray calls them on the namespace of
its data (`xp.pad`: shift with a fill value, pad, rolling windows, cumulative_integrate;
`xp.einsum`: weighted reductions, `xr.dot`; `xp.cumsum`: cumsum, cumulative_integrate;
`xp.transpose`, `xp.quantile`: quantile; `xp.gradient`: differentiate), and Dask's einsum calls
`einsum` on every block. `pad`, `einsum`, `gradient` and `quantile` are host operations (the
last two compute half types in float32); `cumsum`/`cumprod` are the standard's
`cumulative_sum`/`cumulative_prod` and `transpose` is `permute_dims` (traced as those).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from fueltensor.array_api._host import fresh, host, promoted, tensor
from fueltensor.array_api.manipulation import permute_dims
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor


def _numpy(value: Any) -> Any:
    """A tensor (also inside a tuple or list) as its NumPy array; anything else as is."""
    if isinstance(value, FuelTensor):
        return value._array
    if isinstance(value, tuple | list):
        return type(value)(_numpy(v) for v in value)
    return value


@host
def pad(x: FuelTensor, /, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> FuelTensor:
    """x padded by `pad_width` elements per axis (an int, a pair or a pair per axis), filled
    as `mode` says ('constant' with `constant_values`, 'edge', 'reflect', ...), as `np.pad`;
    the result keeps x's dtype."""
    x = tensor(x)
    options = {k: _numpy(v) for k, v in kwargs.items()}
    return fresh(np.pad(x._array, _numpy(pad_width), mode=mode, **options), x.dtype)


@host
def einsum(
    subscripts: str, /, *operands: FuelTensor, dtype: Any = None, optimize: Any = False
) -> FuelTensor:
    """The Einstein summation `subscripts` of the operands (`"ij,jk->ik"`), as `np.einsum`.

    The operands are promoted by fueltensor's rules (or cast to `dtype`); half types are
    multiplied and summed in float32 and rounded once, as `matmul` does."""
    if not operands:
        raise ValueError("einsum needs at least one operand after the subscripts")
    arrays, dt = (
        promoted(*operands)
        if len(operands) > 1
        else ([tensor(operands[0])._array], operands[0].dtype)
    )
    if dtype is not None:
        dt = _dtypes.as_dtype(dtype)
    work = np.float32 if dt.narrow else dt.np
    arrays = [a.astype(work, copy=False) for a in arrays]
    return fresh(np.einsum(subscripts, *arrays, optimize=optimize), dt)


def cumsum(x: FuelTensor, /, axis: int | None = None, dtype: Any = None) -> FuelTensor:
    """Running sums along `axis` (of the flattened x when None), as `np.cumsum`."""
    return tensor(x).cumsum(axis, dtype)


def cumprod(x: FuelTensor, /, axis: int | None = None, dtype: Any = None) -> FuelTensor:
    """Running products along `axis` (of the flattened x when None), as `np.cumprod`."""
    return tensor(x).cumprod(axis, dtype)


def transpose(x: FuelTensor, /, axes: Any = None) -> FuelTensor:
    """x with its axes reversed, or reordered as `axes` lists them (a view), as
    `np.transpose`."""
    order = tuple(range(tensor(x).ndim))[::-1] if axes is None else tuple(axes)
    return permute_dims(x, order)


def _work(dtype: DType) -> Any:
    """The NumPy dtype to compute in: float32 for the narrow formats, else the dtype's own."""
    return np.float32 if dtype.narrow else dtype.np


@host
def gradient(
    f: FuelTensor, /, *varargs: Any, axis: Any = None, edge_order: Literal[1, 2] = 1
) -> FuelTensor | tuple[FuelTensor, ...]:
    """Central differences of f in the interior and one-sided ones at the edges (spacings or
    coordinates in `varargs`), one tensor per axis asked for, as `np.gradient`."""
    f = tensor(f, "f")
    values = f._array.astype(_work(f.dtype), copy=False)
    out = np.gradient(values, *_numpy(varargs), axis=axis, edge_order=edge_order)
    keep = f.dtype if f.dtype.is_float else None
    if isinstance(out, tuple | list):
        return tuple(fresh(g, keep) for g in out)
    return fresh(out, keep)


@host
def quantile(
    x: FuelTensor,
    q: Any,
    /,
    axis: Any = None,
    *,
    method: Any = "linear",
    keepdims: bool = False,
) -> FuelTensor:
    """The `q`-th quantiles (q in [0, 1]) of x along `axis` (of all of x when None), as
    `np.quantile` with its `method`; a half type is computed in float32 and keeps its dtype."""
    x = tensor(x)
    values = x._array.astype(_work(x.dtype), copy=False)
    out = np.quantile(values, _numpy(q), axis=axis, method=method, keepdims=keepdims)
    return fresh(out, x.dtype if x.dtype.is_float else None)
