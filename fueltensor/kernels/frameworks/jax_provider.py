"""JAX (CPU) as a contract provider: `jax.numpy.add` ... `jax.numpy.remainder`, the unary
functions where JAX keeps them (`jax.numpy.exp`, `jax.nn.sigmoid`, `jax.scipy.special.erf`,
`jax.lax.rsqrt` ...), and `jnp.power(x, k)` for an integer power (JAX's `lax.integer_pow`), as
a JAX user calls them on NumPy operands (contracts/jax.md).

JAX copies every NumPy operand into a buffer of its own whatever its layout, so the documents
admit strided, offset, reversed and broadcast operands and the planner adds no Contiguize (the
copy is JAX's, in its measured cost). Calls run on JAX's CPU device (`jax.default_device`).
F64: JAX computes in float32 unless its x64 switch is on. The kernels never flip the global
switch; an F64 call runs inside `jax.enable_x64(True)`, JAX's scoped (thread-local) form of
the switch, which ends with the call.
"""

from __future__ import annotations

import importlib
from contextlib import nullcontext
from functools import cache
from typing import Any, Final

import numpy as np

from fueltensor.fkc.schema import MeasuredOn
from fueltensor.kernels import KernelFn
from fueltensor.kernels.frameworks import Framework, deliver, isa_here, measured
from fueltensor.ops import (
    BINARY_OPS,
    COMPARISON_OPS,
    CONTRACTION_OPS,
    TERNARY_OPS,
    VALUE_REDUCTIONS,
)

FRAMEWORK: Final = Framework("jax", "jax", "JAX", "pip install 'fueltensor[jax]'")
PROVIDER: Final = FRAMEWORK.provider

_FUNCTIONS: Final = tuple(op.host.__name__ for op in BINARY_OPS)
"""The `jax.numpy` functions of the binary operations: jax.numpy spells NumPy's, so they are
the op table's ufuncs' names (`add` ... `power`, `remainder`)."""

_UNARY_CALLS: Final = (
    "jax.numpy.exp",
    "jax.numpy.log",
    "jax.numpy.tanh",
    "jax.nn.sigmoid",
    "jax.scipy.special.erf",
    "jax.numpy.sqrt",
    "jax.lax.rsqrt",
    "jax.numpy.sin",
    "jax.numpy.cos",
    "jax.numpy.abs",
    "jax.numpy.negative",
)
"""The unary rows' entry points: JAX's own function of each, in the module JAX keeps it in
(each name ends with the row's name)."""

_F64: Final = np.dtype(np.float64)


@cache
def _jax() -> tuple[Any, Any]:
    """jax and its CPU device, imported on the first kernel call (each function's module by
    `_call`)."""
    jax = FRAMEWORK.load()
    return jax, jax.devices("cpu")[0]


def _call(name: str, dtype: np.dtype, *args: Any, module: str = "jax.numpy") -> np.ndarray:
    """`<module>.<name>(*args)` on the CPU device, under the scoped x64 switch where `dtype` (the
    operands') is F64; the result as a NumPy array."""
    jax, cpu = _jax()
    x64 = jax.enable_x64(True) if dtype == _F64 else nullcontext()
    with x64, jax.default_device(cpu):
        return np.asarray(getattr(importlib.import_module(module), name)(*args))


def _binary(name: str) -> KernelFn:
    """A kernel calling `jax.numpy.<name>(lhs, rhs)` and copying the result's bits into `out`."""

    def kernel(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        deliver(_call(name, lhs.dtype, lhs, rhs), out)  # F64 operands: x64 (a bool out too)

    kernel.__qualname__ = kernel.__name__ = f"jax_{name}"
    return kernel


def _unary(entry: str) -> KernelFn:
    """A kernel calling JAX's function `entry` ("jax.nn.sigmoid") on `x` and copying the
    result's bits into `out`."""
    module, name = entry.rsplit(".", 1)

    def kernel(x: np.ndarray, *, out: np.ndarray) -> None:
        deliver(_call(name, out.dtype, x, module=module), out)

    kernel.__qualname__ = kernel.__name__ = f"jax_{name}"
    return kernel


def _ternary(name: str) -> KernelFn:
    """A kernel calling `jax.numpy.<name>(a, b, c)` (jnp.where, jnp.clip) and copying the
    result's bits into `out` (x64 by the output's dtype: a where's condition is bool)."""

    def kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, out: np.ndarray) -> None:
        deliver(_call(name, out.dtype, a, b, c), out)

    kernel.__qualname__ = kernel.__name__ = f"jax_{name}"
    return kernel


def _reduction(name: str) -> KernelFn:
    """A kernel calling `jax.numpy.<name>(x, axes)` (jnp.sum, jnp.max ...) and copying the
    result's bits into `out`."""

    def kernel(x: np.ndarray, axes: tuple[int, ...], *, out: np.ndarray) -> None:
        deliver(_call(name, x.dtype, x, axes), out)

    kernel.__qualname__ = kernel.__name__ = f"jax_{name}"
    return kernel


def _integer_power(x: np.ndarray, exponent: int, *, out: np.ndarray) -> None:
    """`jnp.power(x, k)` with k a Python int, which JAX runs as `lax.integer_pow` (repeated
    squaring, compiled for each k)."""
    deliver(_call("power", out.dtype, x, int(exponent)), out)


def _cast(x: np.ndarray, *, out: np.ndarray) -> None:
    """`jax.numpy.astype(x, dtype)`: JAX's cast to out's dtype (contracts/jax-cast.md), under
    the scoped x64 switch where either side is F64."""
    wide = _F64 if _F64 in (x.dtype, out.dtype) else out.dtype
    deliver(_call("astype", wide, x, out.dtype), out)


ENTRY_POINTS: Final[dict[str, KernelFn]] = {
    **{f"jax.numpy.{name}": _binary(name) for name in _FUNCTIONS},
    **{entry: _unary(entry) for entry in _UNARY_CALLS},
    **{f"jax.numpy.{op.name}": _binary(op.name) for op in COMPARISON_OPS},
    **{f"jax.numpy.{op.name}": _ternary(op.name) for op in TERNARY_OPS},
    **{f"jax.numpy.{op.name}": _reduction(op.name) for op in VALUE_REDUCTIONS},
    **{f"jax.numpy.{op.name}": _binary(op.name) for op in CONTRACTION_OPS},  # jnp.matmul
    "jax.numpy.power(x, int)": _integer_power,
    "jax.numpy.astype": _cast,
}


def environment() -> MeasuredOn:
    """JAX's and jaxlib's versions, and the SIMD level of this CPU (XLA compiles for it)."""
    jax = _jax()[0]
    from importlib.metadata import version  # ~20 ms to import: only once JAX is used

    jaxlib = version("jaxlib")
    return measured("jax", f"{jax.__version__} (jaxlib {jaxlib})", isa_here())


UNAVAILABLE: Final = FRAMEWORK.unavailable
ENVIRONMENT: Final = environment
