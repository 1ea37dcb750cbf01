"""fuel-cpu-backend: the 32 same-shape byte kernels, generated from one chassis.

Every thunk is `kernel(lhs, rhs, *, out) -> None` over C-contiguous arrays of equal element
count (the contract's `same_as` shapes): it checks the three byte lengths as the Rust chassis
does, then writes `out[i] = op(lhs[i], rhs[i])` in place. F32/F64 compute natively; BF16/F16
widen to f32, compute, and round once to nearest-even on store (see `_chassis`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.kernels._chassis import BF16, F16, F32, F64, OPS, Array, Op, restore, silence
from fueltensor.kernels._chassis import run_half as _run_half
from fueltensor.kernels._chassis import run_native as _run_native

PROVIDER: Final = "fuel-cpu-backend"
_PREFIX: Final = "fuel_cpu_backend::byte_kernels::"

KernelFn = Callable[..., None]
Runner = Callable[[Op, Array, Array, Array], None]

DTYPES: Final[tuple[tuple[str, np.dtype[Any], Runner], ...]] = (
    ("f32", F32, _run_native),
    ("f64", F64, _run_native),
    ("bf16", BF16, _run_half),
    ("f16", F16, _run_half),
)
"""The dtype table: thunk suffix, storage dtype, and the chassis path that computes it."""


def _thunk(op: Op, suffix: str, dtype: np.dtype[Any], run: Runner) -> KernelFn:
    """Build the thunk `<op>_<suffix>`: validate like the Rust chassis, then run silently."""
    name = f"{op.name}_{suffix}"
    # Native dtypes whose op NumPy already computes exactly per the contract skip the chassis.
    direct = op.whole if run is _run_native else None

    def kernel(lhs: Array, rhs: Array, *, out: Array) -> None:
        if not (lhs.nbytes == rhs.nbytes == out.nbytes):
            raise ValueError(
                f"{name}: byte lengths differ: lhs {lhs.nbytes}, rhs {rhs.nbytes}, out {out.nbytes}"
            )
        if lhs.dtype != dtype or rhs.dtype != dtype or out.dtype != dtype:
            raise TypeError(
                f"{name}: expected {dtype} operands and output, got "
                f"lhs {lhs.dtype}, rhs {rhs.dtype}, out {out.dtype}"
            )
        token = silence()
        try:
            if direct is not None and lhs.shape == rhs.shape == out.shape:
                direct(lhs, rhs, out=out)
            else:
                run(op, lhs, rhs.reshape(lhs.shape), out)
        finally:
            restore(token)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-cpu-backend {name}: out[i] = {op.name}(lhs[i], rhs[i]) in {dtype}."
    return kernel


ENTRY_POINTS: Final[dict[str, KernelFn]] = {
    f"{_PREFIX}{op.name}_{suffix}": _thunk(op, suffix, dtype, run)
    for op in OPS
    for suffix, dtype, run in DTYPES
}
"""The provider's link registry: full `entry_point` string -> thunk (the 32 registrable ones)."""
