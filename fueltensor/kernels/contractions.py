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

`matmul_bf16_pairs` (the same document) is AVX-512 BF16's VDPBF16PS order, abi.h's
ORDER_PAIRS_ODD_FIRST: per pair of K the odd product added first, then the even one, each add
rounded to float32 with an unbounded exponent, subnormal operands read as zeros and sums below
2^-126 flushed to zeros (`pairs`, its NumPy body, by the same float64 argument; the tiny sums
scaled by 2^100 so that float32's subnormals do not round them).

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

_BF16: Final = np.dtype(ml_dtypes.bfloat16)
HALVES: Final = (("bf16", _BF16), ("f16", np.dtype(np.float16)))
"""The dtypes the core's `products: exact` takes, by entry-point suffix."""
PAIRS: Final = ("bf16_pairs", _BF16)
"""The pairs order's one dtype, by entry-point suffix (VDPBF16PS takes bfloat16 alone)."""
_TINY, _SCALE = 2.0**-126, 2.0**100
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


def _daz(x: Array) -> Array:
    """x in float64, its subnormals zeros of their sign (VDPBF16PS reads them so)."""
    x64 = x.astype(_F64)
    return np.where(np.abs(x64) < _TINY, np.copysign(0.0, x64), x64)


def _pair_step(acc: Array, x: Array, y: Array) -> Array:
    """fl32(acc + x * y) with an unbounded exponent, flushed below 2^-126 to a zero of the sum's
    sign: the float64 sum rounded once to float32, a tiny one scaled into float32's normals."""
    s = acc.astype(_F64) + x * y
    tiny = np.abs(s) < 2.0**-100
    scaled = np.where(tiny, s * _SCALE, 0.0).astype(_F32).astype(_F64) / _SCALE
    v = np.where(tiny, scaled, s)  # rounded to 24 bits; flushed by it, never by float32's range
    r = v.astype(_F32)
    return np.where(np.abs(v) < _TINY, np.copysign(np.float32(0.0), r), r)


def pairs(a: Array, b: Array, out: Array) -> None:
    """The pairs order in NumPy, vectorised over every output: per pair (t, t + 1) of K the odd
    step first (an odd K's missing one, -0 * +0, changes nothing and is skipped)."""
    a64, b64, k = _daz(a), _daz(b), a.shape[-1]
    acc = np.full(out.shape, -0.0, _F32)
    with np.errstate(all="ignore"):
        for t in range(0, k, 2):
            if t + 1 < k:
                acc = _pair_step(acc, a64[..., :, t + 1 : t + 2], b64[..., t + 1 : t + 2, :])
            acc = _pair_step(acc, a64[..., :, t : t + 1], b64[..., t : t + 1, :])
        out[...] = acc.astype(out.dtype) if k else 0


def _compiled(paired: bool = False) -> Body:
    """The core's call with the CPU contracts' declarations (`_native.contract`): K order, or
    (`paired`) the pairs order of `matmul_bf16_pairs`."""
    native = NATIVE
    assert native is not None  # `cpu_entries` asks for it only where it is built
    (row,) = CONTRACTION_OPS
    code = tuple(native.CONTRACTION_OPS).index(row.kernel_op)
    f32 = tuple(native.DTYPES).index(_F32.name)
    order = native.ORDER_PAIRS_ODD_FIRST if paired else native.ORDER_SEQUENTIAL
    exact = native.PRODUCTS_EXACT

    def body(a: Array, b: Array, out: Array) -> None:
        native.contract(code, a, b, out, f32, order, exact)

    return body


def cpu_entries(prefix: str, implementation: str) -> dict[str, KernelFn]:
    """fuel-cpu-backend's contraction thunks by entry point: the compiled core, or the NumPy
    body of the same bits where `implementation` is "pure"."""
    pure = implementation == "pure" or NATIVE is None
    body, paired = (sequential, pairs) if pure else (_compiled(), _compiled(paired=True))
    in_order = "in K order, products unrounded, rounded once."
    in_pairs = "over K in pairs, the odd product first, subnormals flushed (VDPBF16PS's order)."
    kinds = [(s, d, body, in_order) for s, d in HALVES] + [(*PAIRS, paired, in_pairs)]
    return {
        f"{prefix}{row.kernel_op}_{suffix}": thunk(
            f"{row.kernel_op}_{suffix}",
            dtype,
            fn,
            f"fuel-cpu-backend {row.kernel_op}_{suffix}: out = a @ b in {dtype}, float32 sums "
            + what,
        )
        for row in CONTRACTION_OPS
        for suffix, dtype, fn, what in kinds
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
