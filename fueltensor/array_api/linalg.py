"""The array API's `linalg` extension (2024.12), as `fueltensor.linalg`: host operations on NumPy.

Dtype rules are the standard's: decompositions, inverses, solves and norms take floating-point
tensors only (TypeError otherwise); `cross`, `diagonal`, `outer`, `trace` and the main-namespace
products take any numeric dtype. Results keep the input's dtype, except those the standard
makes real (eigenvalues, singular values, norms, `logabsdet`: the real dtype of a complex input)
and `matrix_rank` (int64). The narrow formats (bfloat16, float16, the 8-bit ones) are computed in
float32 and rounded once to their own, as sums and matrix products are.
"""

from __future__ import annotations

import math
from typing import Any, Literal, NamedTuple

import numpy as np

from fueltensor.array_api._host import axes, fresh, host, promoted, tensor
from fueltensor.array_api.linear_algebra import matmul as matmul
from fueltensor.array_api.linear_algebra import matrix_transpose, tensordot, vecdot
from fueltensor.array_api.statistical import _accumulated, _work
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor
from fueltensor.ops import CONTRACTION_OPS

_FLOATING = ("real floating", "complex floating")


class EighResult(NamedTuple):
    eigenvalues: FuelTensor
    eigenvectors: FuelTensor


class QRResult(NamedTuple):
    Q: FuelTensor
    R: FuelTensor


class SlogdetResult(NamedTuple):
    sign: FuelTensor
    logabsdet: FuelTensor


class SVDResult(NamedTuple):
    U: FuelTensor
    S: FuelTensor
    Vh: FuelTensor


def _real(dt: DType) -> DType:
    """The real dtype of `dt`'s components (dt itself when real)."""
    return {_dtypes.complex64: _dtypes.float32, _dtypes.complex128: _dtypes.float64}.get(dt, dt)


def _floating(x: FuelTensor, fn: str, *, matrix: bool = True) -> tuple[np.ndarray, DType]:
    """x's array (the narrow formats widened to float32) and dtype; TypeError unless floating-point,
    ValueError if `matrix` and x has fewer than two dimensions."""
    dt = tensor(x).dtype
    if dt.category not in _FLOATING:
        raise TypeError(
            f"linalg.{fn} needs a floating-point tensor, got {dt.name}; cast it with astype first"
        )
    if matrix and x.ndim < 2:
        raise ValueError(
            f"linalg.{fn} needs a (stack of) matrices of at least 2 dimensions, got shape {x.shape}"
        )
    a = x._array
    return (a.astype(np.float32) if dt.narrow else a), dt


def _numeric(*xs: FuelTensor, fn: str) -> tuple[list[np.ndarray], DType]:
    """The operands promoted (the narrow formats widened to float32) and their dtype; TypeError for
    bool."""
    for i, x in enumerate(xs):
        if tensor(x, f"x{i + 1}").dtype.category == "bool":
            raise TypeError(f"linalg.{fn} needs numeric tensors, got bool")
    arrays, dt = promoted(*xs) if len(xs) > 1 else ([xs[0]._array], xs[0].dtype)
    if dt.narrow:
        arrays = [a.astype(np.float32) for a in arrays]
    return arrays, dt


@host
def cholesky(x: FuelTensor, /, *, upper: bool = False) -> FuelTensor:
    """The Cholesky factor of a symmetric (Hermitian) positive-definite matrix: lower L with
    x = L L^H, or upper U with x = U^H U."""
    a, dt = _floating(x, "cholesky")
    return fresh(np.linalg.cholesky(a, upper=upper), dt)


@host
def cross(x1: FuelTensor, x2: FuelTensor, /, *, axis: int = -1) -> FuelTensor:
    """The cross product of 3-element vectors along `axis` (broadcast over the rest)."""
    (a, b), dt = _numeric(x1, x2, fn="cross")
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        raise ValueError(f"linalg.cross: shapes {a.shape} and {b.shape} do not broadcast") from None
    if not -a.ndim <= axis < a.ndim or a.shape[axis] != 3:
        raise ValueError(
            f"linalg.cross needs size 3 along axis {axis}, got shapes {x1.shape} and {x2.shape}"
        )
    return fresh(np.cross(a, b, axis=axis), dt)


@host
def det(x: FuelTensor, /) -> FuelTensor:
    """The determinant of each matrix."""
    a, dt = _floating(x, "det")
    return fresh(np.linalg.det(a), dt)


@host
def diagonal(x: FuelTensor, /, *, offset: int = 0) -> FuelTensor:
    """The `offset`-th diagonal of each matrix (above the main one if positive)."""
    if tensor(x).ndim < 2:
        raise ValueError(f"linalg.diagonal needs at least 2 dimensions, got shape {x.shape}")
    return fresh(np.diagonal(x._array, offset=offset, axis1=-2, axis2=-1), x.dtype)


@host
def eigh(x: FuelTensor, /) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors of symmetric (Hermitian) matrices."""
    a, dt = _floating(x, "eigh")
    w, v = np.linalg.eigh(a)
    return EighResult(fresh(w, _real(dt)), fresh(v, dt))


@host
def eigvalsh(x: FuelTensor, /) -> FuelTensor:
    """Eigenvalues (ascending, real) of symmetric (Hermitian) matrices."""
    a, dt = _floating(x, "eigvalsh")
    return fresh(np.linalg.eigvalsh(a), _real(dt))


@host
def inv(x: FuelTensor, /) -> FuelTensor:
    """The inverse of each square matrix."""
    a, dt = _floating(x, "inv")
    return fresh(np.linalg.inv(a), dt)


@host
def matrix_norm(
    x: FuelTensor,
    /,
    *,
    keepdims: bool = False,
    ord: int | float | Literal["fro", "nuc"] | None = "fro",
) -> FuelTensor:
    """The matrix norm of each matrix ('fro', 'nuc', 1, -1, 2, -2, inf, -inf), real-valued."""
    a, dt = _floating(x, "matrix_norm")
    return fresh(np.linalg.norm(a, ord=ord, axis=(-2, -1), keepdims=keepdims), _real(dt))


@host
def matrix_power(x: FuelTensor, n: int, /) -> FuelTensor:
    """Each square matrix raised to the integer power n (n < 0 inverts first)."""
    a, dt = _floating(x, "matrix_power")
    return fresh(np.linalg.matrix_power(a, n), dt)


@host
def matrix_rank(x: FuelTensor, /, *, rtol: float | FuelTensor | None = None) -> FuelTensor:
    """The number of singular values above rtol times the largest one (default rtol:
    max(M, N) times the dtype's eps), as int64. Integer matrices are ranked in float64 (as
    array-api-strict and NumPy do)."""
    if tensor(x).dtype.category in ("bool", "signed integer", "unsigned integer"):
        x = FuelTensor._from_dense(x._array.astype(np.float64), _dtypes.float64)
    a, _ = _floating(x, "matrix_rank")
    s = np.linalg.svd(a, compute_uv=False)
    if rtol is None:
        tol = np.asarray(max(a.shape[-2:]) * np.finfo(s.dtype).eps)
    else:
        tol = rtol._array if isinstance(rtol, FuelTensor) else np.asarray(rtol)
    big = s.max(axis=-1, keepdims=True, initial=0.0) * tol[..., np.newaxis]
    return fresh(np.count_nonzero(s > big, axis=-1), _dtypes.int64)


@host
def outer(x1: FuelTensor, x2: FuelTensor, /) -> FuelTensor:
    """The outer product of two vectors."""
    if tensor(x1, "x1").ndim != 1 or tensor(x2, "x2").ndim != 1:
        raise ValueError(f"linalg.outer needs two vectors, got shapes {x1.shape} and {x2.shape}")
    (a, b), dt = _numeric(x1, x2, fn="outer")
    return fresh(np.outer(a, b), dt)


@host
def pinv(x: FuelTensor, /, *, rtol: float | FuelTensor | None = None) -> FuelTensor:
    """The Moore-Penrose pseudo-inverse; singular values at most rtol times the largest are
    dropped (default rtol: max(M, N) times the dtype's eps)."""
    a, dt = _floating(x, "pinv")
    if rtol is None:
        tol: Any = max(a.shape[-2:]) * np.finfo(a.dtype).eps
    else:
        tol = rtol._array if isinstance(rtol, FuelTensor) else rtol
    return fresh(np.linalg.pinv(a, rtol=tol), dt)


@host
def qr(x: FuelTensor, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition of each matrix: Q with orthonormal columns, R upper triangular."""
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr mode must be 'reduced' or 'complete', got {mode!r}")
    a, dt = _floating(x, "qr")
    q, r = np.linalg.qr(a, mode=mode)
    return QRResult(fresh(q, dt), fresh(r, dt))


@host
def slogdet(x: FuelTensor, /) -> SlogdetResult:
    """The sign and the natural log of the absolute value of each determinant."""
    a, dt = _floating(x, "slogdet")
    sign, logabs = np.linalg.slogdet(a)
    return SlogdetResult(fresh(sign, dt), fresh(logabs, _real(dt)))


@host
def solve(x1: FuelTensor, x2: FuelTensor, /) -> FuelTensor:
    """The solution X of x1 X = x2 for square x1; a 1-D x2 is one vector, otherwise a (stack
    of) matrices, broadcast against x1."""
    _floating(x1, "solve")
    _floating(x2, "solve", matrix=False)
    (a, b), dt = _numeric(x1, x2, fn="solve")
    return fresh(np.linalg.solve(a, b), dt)


@host
def svd(x: FuelTensor, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition x = U diag(S) Vh, singular values descending."""
    a, dt = _floating(x, "svd")
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return SVDResult(fresh(u, dt), fresh(s, _real(dt)), fresh(vh, dt))


@host
def svdvals(x: FuelTensor, /) -> FuelTensor:
    """The singular values of each matrix, descending."""
    a, dt = _floating(x, "svdvals")
    return fresh(np.linalg.svd(a, compute_uv=False), _real(dt))


@host
def trace(x: FuelTensor, /, *, offset: int = 0, dtype: Any = None) -> FuelTensor:
    """The sum of the `offset`-th diagonal of each matrix, accumulated as `sum` does (integers
    in 64 bits unless `dtype` says otherwise)."""
    if tensor(x).ndim < 2:
        raise ValueError(f"linalg.trace needs at least 2 dimensions, got shape {x.shape}")
    if x.dtype.category == "bool":
        raise TypeError("linalg.trace needs a numeric tensor, got bool")
    out = _accumulated(x.dtype, dtype)
    return fresh(np.trace(x._array, offset=offset, axis1=-2, axis2=-1, dtype=_work(out)), out)


@host
def vector_norm(
    x: FuelTensor,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    ord: int | float = 2,
) -> FuelTensor:
    """The vector norm over `axis` (all axes by default, flattened), real-valued."""
    a, dt = _floating(x, "vector_norm", matrix=False)
    over = axes(axis, a.ndim)
    rest = tuple(i for i in range(a.ndim) if i not in over)
    kept = tuple(a.shape[i] for i in rest)
    flat = np.transpose(a, over + rest).reshape((math.prod(a.shape[i] for i in over), *kept))
    if ord == math.inf:  # the largest |x|, 0 over no elements (NumPy < 2.3's norm raises there)
        norm = np.max(np.abs(flat), axis=0, initial=0)
    else:
        norm = np.linalg.norm(flat, ord=ord, axis=0)
    if keepdims:
        norm = norm.reshape(tuple(1 if i in over else n for i, n in enumerate(a.shape)))
    return fresh(norm, _real(dt))


__all__ = [
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
] + [row.name for row in CONTRACTION_OPS]  # matmul: the op table spells it
