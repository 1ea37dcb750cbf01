"""The array API's linear algebra functions of the main namespace: matmul, matrix_transpose,
tensordot, vecdot (the `linalg` extension is not provided). Operands are promoted first; half
types are multiplied in float32 and rounded once on the host. matmul of the float formats is
planned through its contracts (`engine.contract`, docs/matmul.md), and so are vecdot and
tensordot of them: each is one matmul of views (or an exact copy) of its operands."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fueltensor.array_api._host import Rule, fresh, host, promoted, ruled_host, tensor
from fueltensor.array_api.manipulation import reshape
from fueltensor.array_api.statistical import _PLANNED
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.layout import Layout, broadcast_shapes
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import contract as _contract_engine
from fueltensor.engine.dispatch import host_operation


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


def tensordot(
    x1: FuelTensor, x2: FuelTensor, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2
) -> FuelTensor:
    """Sum of products over the last `axes` axes of x1 and the first of x2 (or the listed axes
    pairs): one matmul of the operands permuted and reshaped to (M, K) @ (K, N), K the
    contracted axes flattened row-major in the pairs' listed order (docs/matmul.md)."""
    a, b = tensor(x1, "x1"), tensor(x2, "x2")
    if _dtypes.result_type(a._dtype, b._dtype) not in _PLANNED:
        return _host_tensordot(a, b, axes)  # integers, bool, complex: no contract takes them
    try:
        axes_a, axes_b = _tensordot_axes(axes, a.shape, b.shape)
    except (TypeError, ValueError, IndexError):  # NumPy's refusal, in the installed one's words
        return _host_tensordot(a, b, axes)  # (NumPy 2.2 said "shape-mismatch" of duplicates)
    keep_a = [k for k in range(a.ndim) if k not in axes_a]
    keep_b = [k for k in range(b.ndim) if k not in axes_b]
    m, n = math.prod(a.shape[k] for k in keep_a), math.prod(b.shape[k] for k in keep_b)
    k = math.prod(a.shape[k] for k in axes_a)
    u = reshape(_permuted(a, keep_a + axes_a), (m, k))  # a copy where no view serves: exact
    v = reshape(_permuted(b, axes_b + keep_b), (k, n))
    out = _contract_engine.matmul(u, v, lambda: _host_tensordot(a, b, axes))
    return _shaped(out, tuple(a.shape[i] for i in keep_a) + tuple(b.shape[i] for i in keep_b))


def _tensordot_axes(
    axes: Any, s1: tuple[int, ...], s2: tuple[int, ...]
) -> tuple[list[int], list[int]]:
    """The contracted axes of x1 and x2, non-negative, from `axes` as np.tensordot reads it,
    refused as it refuses them (the same exception types and words)."""
    try:
        iter(axes)
    except Exception:
        pairs: tuple[Any, Any] = (list(range(-axes, 0)), list(range(axes)))
    else:
        pairs = axes
    axes_a, axes_b = (list(p) if hasattr(p, "__len__") else [p] for p in pairs)
    for listed in (axes_a, axes_b):
        if len(set(listed)) != len(listed):
            raise ValueError("duplicate axes are not allowed in tensordot")
    same = len(axes_a) == len(axes_b) and all(
        s1[i] == s2[j] for i, j in zip(axes_a, axes_b, strict=True)
    )
    if not same:
        raise ValueError("shape-mismatch for sum")
    axes_a = [i + len(s1) if i < 0 else i for i in axes_a]
    axes_b = [j + len(s2) if j < 0 else j for j in axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("axes don't match array")
    return axes_a, axes_b


def _permuted(x: FuelTensor, order: list[int]) -> FuelTensor:
    """x with its axes in `order` (a view)."""
    return x._view(x._layout.permute(order))


def _shaped(result: FuelTensor, shape: tuple[int, ...]) -> FuelTensor:
    """A contraction's result under the namespace's `shape` (the host's already has it; the
    matmul's dense (..., M, N) is viewed so)."""
    return result if result.shape == shape else reshape(result, shape)


def _host_tensordot(
    x1: FuelTensor, x2: FuelTensor, axes: int | tuple[Sequence[int], Sequence[int]]
) -> FuelTensor:
    """The host's tensordot (NumPy's; half types in float32, rounded once)."""
    a, b, dt = _operands(x1, x2)
    return fresh(np.tensordot(a, b, axes=axes), dt)


def vecdot(x1: FuelTensor, x2: FuelTensor, /, *, axis: int = -1) -> FuelTensor:
    """The dot product of vectors along `axis` (x1 conjugated), broadcast over the rest: for
    the real floats one matmul of (..., 1, K) @ (..., K, 1) views (docs/matmul.md)."""
    a, b = tensor(x1, "x1"), tensor(x2, "x2")
    real = _dtypes.result_type(a._dtype, b._dtype) in _PLANNED
    nd = _vecdot_shape(a.shape, b.shape, axis)
    if not real:  # complex (conjugated), integers, bool: no contract takes them
        return _host_vecdot(a, b, axis)
    last = axis % len(nd)
    u, v = _vector(a, nd, last, True), _vector(b, nd, last, False)
    out = _contract_engine.matmul(u, v, lambda: _host_vecdot(a, b, axis))
    return _shaped(out, nd[:last] + nd[last + 1 :])


def _vecdot_shape(s1: tuple[int, ...], s2: tuple[int, ...], axis: int) -> tuple[int, ...]:
    """The operands' broadcast shape; ValueError unless `axis` exists in both with one size."""
    nd = np.broadcast_shapes(s1, s2)
    if not -len(nd) <= axis < len(nd) or s1[axis] != s2[axis]:
        raise ValueError(
            f"vecdot: axis {axis} must exist in both operands with one size, "
            f"got shapes {s1} and {s2}"
        )
    return nd


def _vector(x: FuelTensor, nd: tuple[int, ...], axis: int, row: bool) -> FuelTensor:
    """x broadcast to `nd`, `axis` moved last, as the (..., 1, K) view (`row`) or (..., K, 1)."""
    lay = x._layout.broadcast_to(nd).permute([*(i for i in range(len(nd)) if i != axis), axis])
    *batch, k = lay.shape
    *strides, s = lay.strides
    shape, unit = (
        ((*batch, 1, k), (*strides, k * s, s)) if row else ((*batch, k, 1), (*strides, s, s))
    )
    return x._view(Layout(shape, unit, lay.offset))


def _host_vecdot(x1: FuelTensor, x2: FuelTensor, axis: int) -> FuelTensor:
    """The host's vecdot (NumPy's; x1 conjugated; half types in float32, rounded once)."""
    a, b, dt = _operands(x1, x2)
    return fresh(np.sum(np.conj(a) * b, axis=axis), dt)


for _fn, _public in ((_host_tensordot, tensordot), (_host_vecdot, vecdot)):
    _fn.__name__ = _fn.__qualname__ = _public.__name__  # a trace names the host call so
_host_tensordot, _host_vecdot = host(_host_tensordot), host(_host_vecdot)
tensordot, vecdot = host_operation(tensordot), host_operation(vecdot)  # explain runs them
