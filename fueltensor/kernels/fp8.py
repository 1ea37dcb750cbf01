"""fuel-cpu-backend's FP8 arithmetic (float8_e4m3fn, float8_e5m2): the op table's binary ops
(+ - * /, maximum, minimum, pow, the floored remainder) widened to float32, computed, and
narrowed once by the cast rule (nearest even, overflow `inf_or_nan`;
contracts/fuel-cpu-backend-fp8.md).

The bodies chain the compiled extension's exact cast to float32, its float32 binary body and its
cast back (one rounding). The oracle's FP8 kernels are its own (`kernels.reference`: the bit
fields decoded, float64, rounded once); for + - * / the two agree bit for bit, float32 carrying
more than 2p+2 bits of an 8-bit format's p (docs/casts.md).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any, Final

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

from fueltensor.kernels.casting import FORMATS
from fueltensor.ops import BINARY_OPS

Array = NDArray[Any]

DTYPES: Final[tuple[tuple[str, np.dtype[Any]], ...]] = (
    ("e4m3", np.dtype(ml_dtypes.float8_e4m3fn)),
    ("e5m2", np.dtype(ml_dtypes.float8_e5m2)),
)
"""The 8-bit formats with arithmetic kernels: the kernel-name suffix and the storage dtype."""

OPS: Final[tuple[str, ...]] = tuple(row.kernel_op for row in BINARY_OPS)
"""The kernel op ids of the FP8 kernels (`<op>_e4m3`): every binary row's own (not the seeds'
formula kernels, `formula_op`), each computed in float32 and narrowed once."""

BLOCK: Final = 1 << 14
"""Elements a CPU body widens at a time: three float32 blocks stay in the L1/L2 caches."""

_F32: Final = np.dtype(np.float32)


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
