"""fuel-reference-backend's reductions (docs/reductions.md): `ref_sum_<dtype>` and
`ref_prod_<dtype>`, the exact sum and product rounded once (`kernels.exact_sums`,
`kernels.exact_products`), `ref_max_<dtype>` / `ref_min_<dtype>`, the selection, and
`ref_argmax_<dtype>` / `ref_argmin_<dtype>`, the first extreme's index.

Every thunk is `kernel(x, axes, *, out)`: x of any strides, `axes` sorted and distinct, `out`
dense of the reduced shape, of x's dtype (int64 for an index). The selection is the left fold of
the binary maximum (minimum) contract over the reduced elements in row-major order: the first NaN
as it is, else the extreme, a zero result the row's first zero (lhs ties). The index is that of
the first NaN, else of the first element equal to the extreme (-0 equal to +0), counted in
row-major order of the reduced axes. This module reads nothing of fuel-cpu-backend's (the oracle
loads none of it); `kernels.reductions` takes its selection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from fueltensor.core.dtypes import bfloat16, float16, float32, float64
from fueltensor.kernels import KernelFn
from fueltensor.kernels.exact_products import exact_prod
from fueltensor.kernels.exact_sums import exact_sum, rows
from fueltensor.ops import INDEX_REDUCTIONS, PLANNED_REDUCTIONS, ContractOp, OpKind

Array = NDArray[Any]
Body = Callable[[Array, tuple[int, ...], Array], None]
FLOATS: Final = tuple((d.fkc.lower(), d.np) for d in (float32, float64, bfloat16, float16))
"""(suffix, dtype) of the float formats the reduction contracts take, in the kernels' order."""


def selection(largest: bool) -> Body:
    """max (`largest`) or min as the left fold of the binary contract: the first NaN as it is,
    else the extreme, a zero result the row's first zero (lhs ties)."""

    def select(x: Array, axes: tuple[int, ...], out: Array) -> None:
        table = rows(x, axes)
        if table.shape[1] == 0:
            raise ValueError("the max or min of no elements has no value")
        with np.errstate(invalid="ignore"):  # a NaN is the result, said by value
            found = (np.max if largest else np.min)(table, axis=1)
        at = np.arange(table.shape[0])
        nan = np.isnan(table)
        first_nan = table[at, np.argmax(nan, axis=1)]
        first_zero = table[at, np.argmax(table == 0, axis=1)]
        picked = np.where(nan.any(axis=1), first_nan, np.where(found == 0, first_zero, found))
        out.reshape(-1)[...] = picked

    return select


def first_index(largest: bool) -> Body:
    """argmax (`largest`) or argmin: per output, the index in row-major order of the reduced
    axes of the first NaN, else of the first element equal to the extreme (-0 equal to +0),
    found by comparing the exact values (float64 holds every input format's)."""

    def index(x: Array, axes: tuple[int, ...], out: Array) -> None:
        table = rows(x, axes)
        if table.shape[1] == 0:
            raise ValueError("the argmax or argmin of no elements has no index")
        wide = table.astype(np.float64)
        nan = np.isnan(wide)
        finite = np.where(nan, -np.inf if largest else np.inf, wide)
        extreme = (np.max if largest else np.min)(finite, axis=1, keepdims=True)
        picked = np.where(nan.any(axis=1), np.argmax(nan, axis=1), np.argmax(wide == extreme, 1))
        out.reshape(-1)[...] = picked

    return index


def out_dtype(row: ContractOp, dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype of `row`'s result for x of `dtype`: int64 (the default index dtype) for an
    index, else x's own."""
    return np.dtype(np.int64) if row.op_kind in INDEX_REDUCTIONS else dtype


def thunk(name: str, dtype: np.dtype[Any], body: Body, provider: str, out_dtype: Any) -> KernelFn:
    """The thunk `name(x, axes, *, out)`: check the dtypes and the output's shape, run `body`."""

    def kernel(x: Array, axes: tuple[int, ...], *, out: Array) -> None:
        if x.dtype != dtype or out.dtype != out_dtype:
            raise TypeError(
                f"{name}: expected {dtype} x and {out_dtype} out, got {x.dtype}, {out.dtype}"
            )
        shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
        if out.shape != shape or not out.flags.c_contiguous:
            raise ValueError(f"{name}: out must be dense of shape {shape}, got {out.shape}")
        body(x, tuple(axes), out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"{provider} {name}: out = {name} of x over axes, in {dtype}."
    return kernel


def _oracle(row: ContractOp) -> Body:
    """The oracle's body of `row`: the exact sum or product rounded once, the selection, or
    the index."""
    if row.op_kind in INDEX_REDUCTIONS:
        return first_index(row.op_kind is OpKind.ARGMAX)
    exact = {OpKind.SUM: exact_sum, OpKind.PROD: exact_prod}
    return exact.get(row.op_kind) or selection(row.op_kind is OpKind.MAX)


def oracle_entries(prefix: str) -> dict[str, KernelFn]:
    """fuel-reference-backend's reduction thunks by entry point (`ref_<op>_<dtype>`)."""
    return {
        f"{prefix}ref_{row.kernel_op}_{suffix}": thunk(
            f"ref_{row.kernel_op}_{suffix}",
            dtype,
            _oracle(row),
            "fuel-reference-backend",
            out_dtype(row, dtype),
        )
        for row in PLANNED_REDUCTIONS
        for suffix, dtype in FLOATS
    }
