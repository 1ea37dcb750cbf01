"""FP8 arithmetic (float8_e4m3fn, float8_e5m2): the op table's IEEE-rounded binary ops widened
to float32, computed, and narrowed once by the cast rule (nearest even, overflow `inf_or_nan`).

Two independent implementations, as for the half types: the CPU provider's bodies chain the
compiled extension's exact cast to float32, its float32 binary body and its cast back (one
rounding); the oracle decodes the bit fields itself (`casting.cast_bits`, never ml_dtypes),
computes exactly enough in float64 and rounds once. For + - * / the two agree bit for bit:
float32 and float64 both carry more than 2p+2 bits of an 8-bit format's p (docs/casts.md).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

from fueltensor.kernels import KernelFn
from fueltensor.kernels.casting import FORMATS, cast_bits
from fueltensor.ops import BINARY_OPS

Array = NDArray[Any]

DTYPES: Final[tuple[tuple[str, np.dtype[Any]], ...]] = (
    ("e4m3", np.dtype(ml_dtypes.float8_e4m3fn)),
    ("e5m2", np.dtype(ml_dtypes.float8_e5m2)),
)
"""The 8-bit formats with arithmetic kernels: the kernel-name suffix and the storage dtype."""

OPS: Final[tuple[tuple[str, np.ufunc], ...]] = tuple(
    (row.kernel_op, row.host)
    for row in BINARY_OPS
    if row.ieee_rounded and isinstance(row.host, np.ufunc)
)
"""The binary ops IEEE 754 rounds once (the op table's `ieee_rounded`), with their ufuncs: the
kernel op ids of the FP8 kernels (`<op>_e4m3`, `broadcast_<op>_f8`)."""

BLOCK: Final = 1 << 14
"""Elements a CPU body widens at a time: three float32 blocks stay in the L1/L2 caches."""

_F32: Final = np.dtype(np.float32)
_F64: Final = np.dtype(np.float64)


def cpu_body(
    native: ModuleType, op: str, dtype: np.dtype[Any]
) -> Callable[[Array, Array, Array], None]:
    """The CPU provider's `body(lhs, rhs, out)` for `op` on dense `dtype` buffers: the compiled
    cast to float32 (exact), the float32 body, the compiled cast back (nearest even, overflow
    to inf or e4m3fn's NaN), block by block."""
    codes = {np.dtype(d): i for i, d in enumerate(FORMATS)}
    wide, narrow = codes[_F32], codes[np.dtype(dtype)]
    number, f32 = native.OPS.index(op), native.DTYPES.index(_F32.name)

    def body(lhs: Array, rhs: Array, out: Array) -> None:
        lf, rf, of = lhs.reshape(-1), rhs.reshape(-1), out.reshape(-1)
        work = np.empty((3, min(BLOCK, of.size)), _F32)
        for i in range(0, of.size, BLOCK):
            j = min(i + BLOCK, of.size)
            x, y, z = work[:, : j - i]
            native.convert(narrow, wide, 0, lf[i:j], x)
            native.convert(narrow, wide, 0, rf[i:j], y)
            native.binary(number, f32, x, y, z)
            native.convert(wide, narrow, 0, z, of[i:j])

    return body


def oracle_bits(ufunc: np.ufunc, lhs: Array, rhs: Array, dtype: np.dtype[Any]) -> Array:
    """The oracle's result patterns of `ufunc` on FP8 `lhs`, `rhs` (one shape): each decoded
    from its bit fields to float64 (exact), the op there, rounded once to `dtype` by the cast
    rule. A NaN operand gives itself quieted, lhs's first; two numbers' invalid operation the
    CPU's default NaN, narrowed."""
    x = cast_bits(lhs, _F64, False).view(_F64)
    y = cast_bits(rhs, _F64, False).view(_F64)
    with np.errstate(all="ignore"):  # IEEE results (x/0, inf-inf) are the contract, silent
        z = ufunc(x, y)
    got = cast_bits(z, dtype, False)
    # A NaN operand's own quieted pattern: the round trip through float64 by the cast rule.
    got = np.where(np.isnan(y), cast_bits(y, dtype, False), got)
    return np.where(np.isnan(x), cast_bits(x, dtype, False), got)


def oracle_kernel(
    op: str, ufunc: np.ufunc, broadcast: Callable[[Array, tuple[int, ...]], Array]
) -> KernelFn:
    """The oracle's `broadcast_<op>_f8(a, b, *, out)`: NumPy broadcasting over dense operands of
    one FP8 dtype (`broadcast` maps an operand to a view of the output's shape)."""
    name = f"broadcast_{op}_f8"
    allowed = tuple(d for _, d in DTYPES)

    def kernel(a: Array, b: Array, *, out: Array) -> None:
        shape = np.broadcast_shapes(a.shape, b.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if not (a.dtype == b.dtype == out.dtype) or out.dtype not in allowed:
            raise TypeError(
                f"{name}: a, b and out must share float8_e4m3fn or float8_e5m2; "
                f"got a {a.dtype}, b {b.dtype}, out {out.dtype}"
            )
        for label, arr in (("a", a), ("b", b), ("out", out)):
            if not arr.flags.c_contiguous:
                raise ValueError(f"{name}: {label} must be a C-contiguous array")
        lhs, rhs = broadcast(a, shape), broadcast(b, shape)
        out.view(np.uint8)[...] = oracle_bits(ufunc, lhs, rhs, out.dtype)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-reference-backend {name}: out = a {op} b in FP8, rounded once."
    return kernel
