"""fuel-cpu-backend's reductions (docs/reductions.md): sum, prod, max and min in the order its
contracts declare (the oracle's are `kernels.exact_reductions`).

Every thunk is `kernel(x, axes, *, out)`: x of any strides, `axes` sorted and distinct, `out`
dense of the reduced shape and x's dtype. The CPU sum is blocked: blocks of `BLOCK` elements in
row-major order of the reduced axes, element p of a block into lane p % `LANES`, each lane added
in order, the lanes and then the blocks joined by the fixed pairwise tree, all in the
accumulator (float64 for float64, else float32), rounded once; prod the same order with
multiplication. The compiled core (`_native.reduce`) runs them; in pure-NumPy mode a NumPy body
of the same order gives the same bits (a missing lane or a block's tail is the identity, -0 for
a sum and +1 for a product, whose operation gives the other operand's bits, so padding changes
nothing: -0 + -0 is -0, where +0 would make it +0). max and min are the left fold of the binary
maximum and minimum contracts: the first NaN as it is, else the extreme, a zero's sign the first
zero's (lhs ties). argmax and argmin (contracts/fuel-cpu-backend-argreduce.md) write that
element's index, int64, in row-major order of the reduced axes: the compiled
`_native.argreduce`, or NumPy's argmax and argmin over the rows, whose rule (the first NaN, else
the first extreme, -0 equal to +0) is the contract's on every float format, bfloat16 included
(tests/kernels/test_argreduce_core.py holds them to it).
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


def _tree(parts: Array, join: np.ufunc) -> Array:
    """The fixed pairwise tree over the last axis by `join` (np.add, np.multiply): the left
    part the largest power of two below the count, the left operand first."""
    count = parts.shape[-1]
    if count == 1:
        return np.asarray(parts[..., 0])
    half = 1 << (count - 1).bit_length() - 1
    joined: Array = join(_tree(parts[..., :half], join), _tree(parts[..., half:], join))
    return joined


def blocked(join: np.ufunc, identity: float, empty: float) -> Body:
    """The CPU contracts' blocked order by `join` in NumPy, bit for bit the compiled core's:
    missing lanes and a block's tail padded with `identity`, an empty row `empty`."""

    def body(x: Array, axes: tuple[int, ...], out: Array) -> None:
        table = rows(x, axes)
        outputs, m = table.shape
        if m == 0:
            out[...] = empty
            return
        blocks = -(-m // BLOCK)
        padded = np.full((outputs, blocks * BLOCK), identity, accumulator(x.dtype))
        padded[:, :m] = table
        steps = padded.reshape(outputs, blocks, BLOCK // LANES, LANES)
        with np.errstate(all="ignore"):  # inf - inf is NaN, as the order gives it
            lanes = steps[:, :, 0, :].copy()
            for j in range(1, BLOCK // LANES):  # each lane in order, one vector step a row
                join(lanes, steps[:, :, j, :], out=lanes)
            out.reshape(-1)[...] = _tree(_tree(lanes, join), join).astype(x.dtype)

    return body


blocked_sum: Final = blocked(np.add, -0.0, 0.0)
"""The blocked sum: -0 pads (the additive identity), an empty sum +0."""
blocked_prod: Final = blocked(np.multiply, 1.0, 1.0)
"""The blocked product: +1 pads, an empty product +1."""


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
    folds = {OpKind.SUM: blocked_sum, OpKind.PROD: blocked_prod}
    return folds.get(row.op_kind) or selection(row.op_kind is OpKind.MAX)


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
