"""NumPy as a contract provider: each operation's ufunc (`np.add` ... `np.remainder`; `np.exp`
... `np.negative` for the unary rows NumPy has a ufunc of), and `x ** k` for an integer power,
as a NumPy user calls them (contracts/numpy.md), and its reductions (`np.sum`, `np.max` ...).

NumPy takes strided, offset, reversed and broadcast (stride-0) operands as they are, so its
contracts admit every layout and the planner adds no Contiguize in front of them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.core.errstate import silenced
from fueltensor.fkc.schema import MeasuredOn
from fueltensor.kernels import KernelFn
from fueltensor.kernels.frameworks import Framework, deliver, isa_here, measured
from fueltensor.ops import (
    BINARY_OPS,
    COMPARISON_OPS,
    CONTRACTION_OPS,
    TERNARY_OPS,
    UNARY_OPS,
    VALUE_REDUCTIONS,
)

FRAMEWORK: Final = Framework("numpy", "numpy", "NumPy", "pip install numpy")
PROVIDER: Final = FRAMEWORK.provider


def _binary(fn: Callable[..., Any]) -> KernelFn:
    """A kernel running `fn(lhs, rhs)` under NumPy's all-ignore error state, its result's bits
    copied into `out`."""

    def kernel(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        with silenced():
            deliver(np.asarray(fn(lhs, rhs)), out)

    kernel.__qualname__ = kernel.__name__ = f"numpy_{getattr(fn, '__name__', 'power')}"
    return kernel


def _unary(fn: np.ufunc) -> KernelFn:
    """A kernel running the ufunc `fn(x)` under NumPy's all-ignore error state, its result's
    bits copied into `out`."""

    def kernel(x: np.ndarray, *, out: np.ndarray) -> None:
        with silenced():
            deliver(np.asarray(fn(x)), out)

    kernel.__qualname__ = kernel.__name__ = f"numpy_{fn.__name__}"
    return kernel


def _ternary(fn: Callable[..., Any]) -> KernelFn:
    """A kernel running `fn(a, b, c)` (np.where, np.clip) under NumPy's all-ignore error state,
    its result's bits copied into `out`."""

    def kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, out: np.ndarray) -> None:
        with silenced():
            deliver(np.asarray(fn(a, b, c)), out)

    kernel.__qualname__ = kernel.__name__ = f"numpy_{fn.__name__}"
    return kernel


def _reduction(fn: Callable[..., Any]) -> KernelFn:
    """A kernel running `fn(x, axis=axes)` (np.sum, np.max ...) under NumPy's all-ignore error
    state, its result's bits copied into `out`: NumPy's own loops, in the order its memory
    layout gives them (contracts/numpy-reduce.md)."""

    def kernel(x: np.ndarray, axes: tuple[int, ...], *, out: np.ndarray) -> None:
        with silenced():
            deliver(np.asarray(fn(x, axis=axes)), out)

    kernel.__qualname__ = kernel.__name__ = f"numpy_{fn.__name__}"
    return kernel


def _integer_power(x: np.ndarray, exponent: int, *, out: np.ndarray) -> None:
    """`x ** k` with k a Python int: NumPy's own integer-power path (k = 2 is `np.square`,
    -1 `np.reciprocal`, 1 a copy, 0.5 `np.sqrt`; other k `np.power`)."""
    with silenced():
        deliver(np.asarray(operator.pow(x, int(exponent))), out)


def _cast(x: np.ndarray, *, out: np.ndarray) -> None:
    """`x.astype(dtype)`: NumPy's cast, ml_dtypes' for its formats (contracts/numpy-cast.md),
    under NumPy's all-ignore error state."""
    with silenced():
        deliver(np.asarray(x.astype(out.dtype)), out)


ENTRY_POINTS: Final[dict[str, KernelFn]] = {
    **{f"numpy.{op.host.__name__}": _binary(op.host) for op in (*BINARY_OPS, *COMPARISON_OPS)},
    **{
        f"numpy.{op.name}": _unary(getattr(np, op.name))
        for op in UNARY_OPS
        if isinstance(getattr(np, op.name, None), np.ufunc)
    },
    **{f"numpy.{op.name}": _ternary(getattr(np, op.name)) for op in TERNARY_OPS},
    **{f"numpy.{op.name}": _reduction(op.host) for op in VALUE_REDUCTIONS},
    **{f"numpy.{op.host.__name__}": _binary(op.host) for op in CONTRACTION_OPS},
    "numpy.ndarray.__pow__(int)": _integer_power,
    "numpy.ndarray.astype": _cast,
}
"""Entry point -> kernel: `numpy.<ufunc>` for the eight binary operations and the comparisons
(the op table's ufuncs: `numpy.less` ...), for each unary row NumPy names by the row's own
name (`numpy.exp`, `numpy.abs`; NumPy has no sigmoid, erf or rsqrt), `numpy.where` and
`numpy.clip`, the cast (`numpy.ndarray.astype`) and the planned reductions (`numpy.sum` ...:
the op table's host functions, NumPy's own) and the matrix product (`numpy.matmul`, the
stacks already broadcast as stride-0 views: contracts/numpy-matmul.md)."""


def environment() -> MeasuredOn:
    """NumPy's version and the SIMD level its loops dispatch to on this CPU."""
    return measured("numpy", np.__version__, isa_here())


def isa_switches() -> list[dict[str, str]]:
    """NumPy with every dispatched SIMD target it would use here disabled (its baseline loops),
    through NPY_DISABLE_CPU_FEATURES; none where it dispatches to none."""
    from fueltensor.fingerprint import machine

    dispatched = machine().numpy_dispatch
    return [{"NPY_DISABLE_CPU_FEATURES": " ".join(dispatched)}] if dispatched else []


UNAVAILABLE: Final = FRAMEWORK.unavailable
ENVIRONMENT: Final = environment
ISA_SWITCHES: Final = isa_switches
