"""NumPy-compatible functions outside the array API standard: `pad`, `einsum`, `cumsum`,
`cumprod`.

Documented extensions with NumPy's signatures and meaning: xarray calls `xp.pad` (shift with a
fill value, pad, rolling windows, cumulative_integrate), `xp.einsum` (weighted reductions,
`xr.dot`) and `xp.cumsum` (cumulative_integrate, cumsum) on the namespace of its data, and
Dask's einsum calls `einsum` on every block. `pad` and `einsum` are host operations;
`cumsum`/`cumprod` are the standard's `cumulative_sum`/`cumulative_prod` (traced as those).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fueltensor.array_api._host import fresh, host, promoted, tensor
from fueltensor.core import dtypes as _dtypes
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
    work = np.float32 if dt is _dtypes.float16 or dt is _dtypes.bfloat16 else dt.np
    arrays = [a.astype(work, copy=False) for a in arrays]
    return fresh(np.einsum(subscripts, *arrays, optimize=optimize), dt)


def cumsum(x: FuelTensor, /, axis: int | None = None, dtype: Any = None) -> FuelTensor:
    """Running sums along `axis` (of the flattened x when None), as `np.cumsum`."""
    return tensor(x).cumsum(axis, dtype)


def cumprod(x: FuelTensor, /, axis: int | None = None, dtype: Any = None) -> FuelTensor:
    """Running products along `axis` (of the flattened x when None), as `np.cumprod`."""
    return tensor(x).cumprod(axis, dtype)
