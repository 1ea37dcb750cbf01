"""The array API's linear algebra functions of the main namespace: matmul, matrix_transpose,
tensordot, vecdot (the `linalg` extension is not provided). Operands are promoted first; half
types are multiplied in float32 and rounded once."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fueltensor.array_api._host import Rule, fresh, host, promoted, ruled_host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.layout import broadcast_shapes
from fueltensor.core.tensor import FuelTensor


def _operands(x1: FuelTensor, x2: FuelTensor) -> tuple[np.ndarray, np.ndarray, _dtypes.DType]:
    """The operands' arrays promoted, as the rule of their DType says, and that DType."""
    (a, b), dt = promoted(tensor(x1, "x1"), tensor(x2, "x2"))
    pre = _product(dt).pre
    if pre is not None:
        a, b = a.astype(pre), b.astype(pre)
    return a, b, dt


def _product(dtype: _dtypes.DType) -> Rule:
    """The rule of a product of `dtype` operands: the narrow formats multiplied in float32 and
    rounded once to their own dtype."""
    return Rule(np.dtype(np.float32), None, dtype) if dtype.narrow else Rule(None, None, dtype)


@ruled_host("MATMUL", np.matmul, _product)
@host
def matmul(x1: FuelTensor, x2: FuelTensor, /) -> FuelTensor:
    """The matrix product (stacks broadcast; a 1-D operand is a vector)."""
    if tensor(x1, "x1").ndim == 0 or tensor(x2, "x2").ndim == 0:
        raise ValueError("matmul needs operands of at least 1 dimension; use multiply for scalars")
    a, b, dt = _operands(x1, x2)
    _check_matmul_shapes(a.shape, b.shape)
    return fresh(np.matmul(a, b), dt)


def _check_matmul_shapes(s1: tuple[int, ...], s2: tuple[int, ...]) -> None:
    """ValueError in our words when the inner dimensions or the stacks do not match."""
    inner = "the only" if len(s2) == 1 else "the second-to-last"
    k2 = s2[0] if len(s2) == 1 else s2[-2]
    if s1[-1] != k2:
        raise ValueError(
            f"matmul (x1 @ x2): x1 of shape {s1} and x2 of shape {s2} do not chain: x1's last "
            f"axis has {s1[-1]} elements, {inner} axis of x2 has {k2}; they must be equal"
        )
    try:
        broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError as e:
        raise ValueError(
            f"matmul (x1 @ x2): the stacked dimensions do not broadcast: {e}"
        ) from None


def matrix_transpose(x: FuelTensor, /) -> FuelTensor:
    """The transpose of the last two axes (a view)."""
    return tensor(x).mT


@host
def tensordot(
    x1: FuelTensor, x2: FuelTensor, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2
) -> FuelTensor:
    """Sum of products over the last `axes` axes of x1 and the first of x2 (or the listed
    axes pairs)."""
    a, b, dt = _operands(x1, x2)
    return fresh(np.tensordot(a, b, axes=axes), dt)


@host
def vecdot(x1: FuelTensor, x2: FuelTensor, /, *, axis: int = -1) -> FuelTensor:
    """The dot product of vectors along `axis` (x1 conjugated), broadcast over the rest."""
    a, b, dt = _operands(x1, x2)
    nd = np.broadcast_shapes(a.shape, b.shape)
    if not -len(nd) <= axis < len(nd) or a.shape[axis] != b.shape[axis]:
        raise ValueError(
            f"vecdot: axis {axis} must exist in both operands with one size, "
            f"got shapes {a.shape} and {b.shape}"
        )
    return fresh(np.sum(np.conj(a) * b, axis=axis), dt)
