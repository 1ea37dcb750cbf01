"""fuel-cpu-backend's reductions (docs/reductions.md): sum, max and min in the order its
contracts declare (the oracle's are `kernels.exact_reductions`).

Every thunk is `kernel(x, axes, *, out)`: x of any strides, `axes` sorted and distinct, `out`
dense of the reduced shape and x's dtype. The CPU sum is blocked: blocks of `BLOCK` elements in
row-major order of the reduced axes, element p of a block into lane p % `LANES`, each lane added
in order, the lanes and then the blocks joined by the fixed pairwise tree, all in the
accumulator (float64 for float64, else float32), rounded once. The compiled core
(`_native.reduce`) runs it; in pure-NumPy mode a NumPy body of the same order gives the same
bits (a missing lane or a block's tail is -0, the additive identity, so padding changes
nothing). max and min are the left fold of the binary maximum and minimum contracts: the first
NaN as it is, else the extreme, a zero's sign the first zero's (lhs ties). argmax and argmin
(contracts/fuel-cpu-backend-argreduce.md) write that element's index, int64, in row-major order
of the reduced axes: the compiled `_native.argreduce`, or NumPy's argmax and argmin over the rows,
whose rule (the first NaN, else the first extreme, -0 equal to +0) is the contract's on every
float format, bfloat16 included (tests/kernels/test_argreduce_core.py holds them to it).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from fueltensor.kernels import KernelFn
from fueltensor.kernels._chassis import DTYPES, NATIVE, Array
from fueltensor.kernels.exact_reductions import Body, out_dtype, selection, thunk
from fueltensor.kernels.exact_sums import rows
from fueltensor.ops import INDEX_REDUCTIONS, PLANNED_REDUCTIONS, ContractOp, OpKind

BLOCK: Final = 256
"""The blocked order's block, as the CPU contracts declare (`benchmarks/reduce_core.py`)."""
LANES: Final = 8
"""The lanes of a block, as the CPU contracts declare (`_native.REDUCE_LANES`)."""


def accumulator(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The accumulator the CPU contracts declare for `dtype`: float64 for F64, else float32."""
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def _tree(parts: Array) -> Array:
    """The fixed pairwise tree over the last axis: the left part the largest power of two
    below the count, the left operand first."""
    count = parts.shape[-1]
    if count == 1:
        return np.asarray(parts[..., 0])
    half = 1 << (count - 1).bit_length() - 1
    joined: Array = _tree(parts[..., :half]) + _tree(parts[..., half:])
    return joined


def blocked_sum(x: Array, axes: tuple[int, ...], out: Array) -> None:
    """The CPU contracts' blocked sum in NumPy, bit for bit the compiled core's order."""
    table = rows(x, axes)
    outputs, m = table.shape
    if m == 0:
        out[...] = 0
        return
    blocks = -(-m // BLOCK)
    padded = np.full((outputs, blocks * BLOCK), -0.0, accumulator(x.dtype))
    padded[:, :m] = table
    steps = padded.reshape(outputs, blocks, BLOCK // LANES, LANES)
    with np.errstate(all="ignore"):  # inf - inf is NaN, as the order gives it
        lanes = steps[:, :, 0, :].copy()
        for j in range(1, BLOCK // LANES):  # each lane in order, one vector add a step
            lanes += steps[:, :, j, :]
        out.reshape(-1)[...] = _tree(_tree(lanes)).astype(x.dtype)


def _compiled(row: ContractOp) -> Body:
    """The compiled core's body of `row` (`_native.reduce`), in the CPU contracts' order."""
    native = NATIVE
    assert native is not None  # `cpu_entries` asks for it only where it is built
    code, order = tuple(native.REDUCTION_OPS).index(row.kernel_op), native.ORDER_BLOCKED
    names = {dtype: accumulator(dtype).name for _, dtype in DTYPES}  # a dtype's name costs 1 us

    def body(x: Array, axes: tuple[int, ...], out: Array) -> None:
        native.reduce(code, x, out, axes, names[x.dtype], order, BLOCK)

    def index(x: Array, axes: tuple[int, ...], out: Array) -> None:
        native.argreduce(code, x, out, axes)

    return index if row.op_kind in INDEX_REDUCTIONS else body


def numpy_index(largest: bool) -> Body:
    """argmax (`largest`) or argmin in NumPy: np.argmax or np.argmin over the rows."""
    find = np.argmax if largest else np.argmin

    def index(x: Array, axes: tuple[int, ...], out: Array) -> None:
        table = rows(x, axes)
        if table.shape[1] == 0:
            raise ValueError("the argmax or argmin of no elements has no index")
        out.reshape(-1)[...] = find(table, axis=1)

    return index


def _pure(row: ContractOp) -> Body:
    """The pure-NumPy body of `row`, the same bits as the compiled one."""
    if row.op_kind in INDEX_REDUCTIONS:
        return numpy_index(row.op_kind is OpKind.ARGMAX)
    return blocked_sum if row.op_kind is OpKind.SUM else selection(row.op_kind is OpKind.MAX)


def cpu_entries(prefix: str, implementation: str) -> dict[str, KernelFn]:
    """fuel-cpu-backend's reduction thunks by entry point: the compiled core's bodies, or the
    pure-NumPy ones of the same order where `implementation` is "pure"."""
    make = _pure if implementation == "pure" or NATIVE is None else _compiled
    return {
        f"{prefix}{row.kernel_op}_{suffix}": thunk(
            f"{row.kernel_op}_{suffix}",
            dtype,
            make(row),
            "fuel-cpu-backend",
            out_dtype(row, dtype),
        )
        for row in PLANNED_REDUCTIONS
        for suffix, dtype in DTYPES
    }
