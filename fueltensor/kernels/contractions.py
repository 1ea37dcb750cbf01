"""fuel-cpu-backend's matmul thunks (contracts/fuel-cpu-backend-matmul.md; docs/matmul.md):
`matmul_<dtype>(a, b, *, out)` over BF16 and F16, the declared order

    acc = -0;  acc = fl32(acc + a[i,l] * b[l,j]) for l = 0 .. K-1, the product unrounded;
    out[i,j] = fl(acc) in the operands' dtype

run by the compiled core (`_native.contract`, native/matmul.c: one FMA per product on every
body, the same bits on any thread count), or, with the pure-NumPy kernels, by a NumPy body of
the same bits: a BF16 or F16 product is exact in float64 and so is its sum with a float32
accumulator whenever the two are within 29 binades of each other, and where they are further
apart the float64 sum lies strictly inside the float32 rounding interval of the larger, so one
rounding of the float64 sum to float32 is the step's single rounding.

fuel-blas-backend's thunks (contracts/fuel-blas-backend-matmul.md), `blas_matmul_f32` and
`blas_matmul_f64`, are the same checked call around NumPy's matmul (the host BLAS): no order.
"""

from __future__ import annotations

from typing import Any, Final

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

from fueltensor.kernels import KernelFn
from fueltensor.kernels._chassis import NATIVE
from fueltensor.kernels.contraction_thunk import Body, thunk
from fueltensor.ops import CONTRACTION_OPS

Array = NDArray[Any]

HALVES: Final = (("bf16", np.dtype(ml_dtypes.bfloat16)), ("f16", np.dtype(np.float16)))
"""The dtypes the core's `products: exact` takes, by entry-point suffix."""
_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def sequential(a: Array, b: Array, out: Array) -> None:
    """The declared order in NumPy (the module's docstring says why float64 steps give the
    core's bits), vectorised over every output: K steps of one rounding each."""
    a64, b64 = a.astype(_F64), b.astype(_F64)
    acc = np.full(out.shape, -0.0, _F32)
    with np.errstate(all="ignore"):
        for k in range(a.shape[-1]):
            step = acc.astype(_F64) + a64[..., :, k : k + 1] * b64[..., k : k + 1, :]
            acc = step.astype(_F32)
        out[...] = acc.astype(out.dtype) if a.shape[-1] else 0


def _compiled() -> Body:
    """The core's call with the CPU contracts' declarations (`_native.contract`)."""
    native = NATIVE
    assert native is not None  # `cpu_entries` asks for it only where it is built
    (row,) = CONTRACTION_OPS
    code = tuple(native.CONTRACTION_OPS).index(row.kernel_op)
    f32 = tuple(native.DTYPES).index(_F32.name)
    order, exact = native.ORDER_SEQUENTIAL, native.PRODUCTS_EXACT

    def body(a: Array, b: Array, out: Array) -> None:
        native.contract(code, a, b, out, f32, order, exact)

    return body


def cpu_entries(prefix: str, implementation: str) -> dict[str, KernelFn]:
    """fuel-cpu-backend's contraction thunks by entry point: the compiled core, or the NumPy
    body of the same bits where `implementation` is "pure"."""
    body = sequential if implementation == "pure" or NATIVE is None else _compiled()
    return {
        f"{prefix}{row.kernel_op}_{suffix}": thunk(
            f"{row.kernel_op}_{suffix}",
            dtype,
            body,
            f"fuel-cpu-backend {row.kernel_op}_{suffix}: out = a @ b in {dtype}, float32 sums "
            "in K order, products unrounded, rounded once.",
        )
        for row in CONTRACTION_OPS
        for suffix, dtype in HALVES
    }


BLAS_DTYPES: Final = (("f32", _F32), ("f64", _F64))
"""The dtypes fuel-blas-backend's matmul takes (the host BLAS's sgemm and dgemm), by suffix."""


def host_blas(a: Array, b: Array, out: Array) -> None:
    """NumPy's matmul into `out`, which calls the BLAS its wheel ships for float32 and float64
    (its own loop for strides the BLAS cannot take): no order is fixed, nothing is promised
    beyond the accumulator's precision (contracts/fuel-blas-backend-matmul.md)."""
    with np.errstate(all="ignore"):
        np.matmul(a, b, out=out)


def blas_entries(prefix: str) -> dict[str, KernelFn]:
    """fuel-blas-backend's contraction thunks by entry point (`blas_matmul_f32`, ...): the host
    BLAS through NumPy."""
    names = {
        f"blas_{row.kernel_op}_{suffix}": dtype
        for row in CONTRACTION_OPS
        for suffix, dtype in BLAS_DTYPES
    }
    return {
        f"{prefix}{name}": thunk(
            name,
            dtype,
            host_blas,
            f"fuel-blas-backend {name}: out = a @ b in {dtype} by NumPy's matmul over the host "
            f"BLAS: {dtype} accumulation, no order, no thread invariance.",
        )
        for name, dtype in names.items()
    }
