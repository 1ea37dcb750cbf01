"""The array API's linear algebra functions of the main namespace: matmul, matrix_transpose,
tensordot, vecdot (the `linalg` extension is not provided). Operands are promoted first; half
types are multiplied in float32 and rounded once on the host. matmul of the float formats is
planned through its contracts (`engine.contract`, docs/matmul.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fueltensor.array_api._host import Rule, fresh, host, promoted, ruled_host, tensor
from fueltensor.array_api.statistical import _PLANNED
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.layout import broadcast_shapes
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import contract as _contract_engine


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


def _unplanned(dtype: _dtypes.DType) -> Rule | None:
    """The product's rule for the dtypes no matmul contract takes (the compiled host call);
    None for those `engine.contract` plans (they take the Python path)."""
    return None if dtype in _PLANNED else _product(dtype)


@ruled_host("MATMUL", np.matmul, _unplanned)
def matmul(x1: FuelTensor, x2: FuelTensor, /) -> FuelTensor:
    """The matrix product (stacks broadcast; a 1-D operand is a vector), planned from the
    MatmulContract kernel contracts where one serves (docs/matmul.md), else on the host."""
    a, b = tensor(x1, "x1"), tensor(x2, "x2")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul needs operands of at least 1 dimension; use multiply for scalars")
    _check_matmul_shapes(a.shape, b.shape)
    return _contract_engine.matmul(a, b, lambda: _host_matmul(a, b))


def _host_matmul(x1: FuelTensor, x2: FuelTensor) -> FuelTensor:
    """The host's matmul (NumPy's; half types in float32, rounded once), labelled matmul."""
    a, b, dt = _operands(x1, x2)
    return fresh(np.matmul(a, b), dt)


_host_matmul.__name__ = _host_matmul.__qualname__ = matmul.__name__
_host_matmul = host(_host_matmul)
_contract_engine.OPERATIONS[matmul.__name__] = matmul
matmul.__fueltensor_op__ = matmul.__name__  # type: ignore[attr-defined]


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
