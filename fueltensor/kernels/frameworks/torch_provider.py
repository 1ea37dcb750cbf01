"""PyTorch (CPU) as a contract provider: `torch.add` ... `torch.remainder`, `torch.exp` ...
`torch.negative` for the unary rows, and `x ** k` for an integer power, as a PyTorch user calls
them on CPU tensors (contracts/torch.md).

Operands reach PyTorch through DLPack as views of the caller's memory (read-only ones too,
with no copy and no warning): strided, offset and broadcast (stride-0) operands as they are.
PyTorch has no negative strides (`torch.from_numpy` and DLPack refuse them, the latter by
aborting the process), so the documents reject reversed operands and the planner makes them
dense first; a reversed operand handed to a kernel directly raises ValueError. bfloat16 and
the 8-bit floats go through their bits: NumPy's unsigned view, reinterpreted by
`Tensor.view(torch.bfloat16)` (`torch.float8_e4m3fn` ...).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, Final

import numpy as np

from fueltensor.fkc.schema import MeasuredOn
from fueltensor.kernels import KernelFn
from fueltensor.kernels.frameworks import NARROW, Framework, bits, deliver, measured
from fueltensor.ops import COMPARISON_OPS, CONTRACTION_OPS, TERNARY_OPS, UNARY_OPS

FRAMEWORK: Final = Framework(
    "torch", "torch", "PyTorch", "pip install torch==2.13.0 && pip install 'fueltensor[torch]'"
)
PROVIDER: Final = FRAMEWORK.provider

_CALLS: Final = (
    "torch.add",
    "torch.sub",
    "torch.mul",
    "torch.div",
    "torch.remainder",
    "torch.pow",
    "torch.maximum",
    "torch.minimum",
)
"""The binary operations' entry points (contracts/torch.md): each calls the `torch` function
it names (PyTorch's names, not the op table's: `torch.sub`, `torch.remainder`)."""

_REDUCE_CALLS: Final = ("torch.sum", "torch.amax", "torch.amin")
"""The reductions' entry points (contracts/torch-reduce.md): PyTorch's functions that take a
tuple of dims and return values alone (`torch.max` over a dim returns indices too)."""


def _tensor(torch: Any, array: np.ndarray) -> Any:
    """A CPU tensor viewing `array`'s memory (no copy); bfloat16 through its bits."""
    if any(s < 0 for s in array.strides):
        raise ValueError(
            "PyTorch has no negative strides: its contracts reject reversed operands, and a "
            "reversed view handed to the kernel directly is refused"
        )
    if array.dtype in THROUGH_BITS:
        return torch.from_dlpack(bits(array)).view(getattr(torch, array.dtype.name))
    return torch.from_dlpack(array)


def _numpy(torch: Any, tensor: Any, dtype: np.dtype) -> np.ndarray:
    """A NumPy view of a result tensor's memory; bfloat16 and the 8-bit floats through their
    bits."""
    if dtype in THROUGH_BITS:
        unsigned = {1: torch.uint8, 2: torch.uint16}[dtype.itemsize]
        return np.asarray(tensor.view(unsigned).numpy()).view(dtype)
    return np.asarray(tensor.numpy())


THROUGH_BITS: Final = NARROW
"""The dtypes NumPy holds through ml_dtypes (bfloat16, float8_e4m3fn, float8_e5m2): they reach
PyTorch as their bits, reinterpreted as PyTorch's dtype of the same name."""


@cache
def _torch() -> Any:
    """The torch module, imported on the first kernel call."""
    return FRAMEWORK.load()


def _binary(name: str) -> KernelFn:
    """A kernel calling `torch.<name>(lhs, rhs)` and copying the result's bits into `out`."""

    def kernel(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        torch = _torch()
        got = getattr(torch, name)(_tensor(torch, lhs), _tensor(torch, rhs))
        deliver(_numpy(torch, got, out.dtype), out)

    kernel.__qualname__ = kernel.__name__ = f"torch_{name}"
    return kernel


def _unary(name: str) -> KernelFn:
    """A kernel calling `torch.<name>(x)` and copying the result's bits into `out`."""

    def kernel(x: np.ndarray, *, out: np.ndarray) -> None:
        torch = _torch()
        deliver(_numpy(torch, getattr(torch, name)(_tensor(torch, x)), out.dtype), out)

    kernel.__qualname__ = kernel.__name__ = f"torch_{name}"
    return kernel


def _ternary(name: str) -> KernelFn:
    """A kernel calling `torch.<name>(a, b, c)` (torch.where, torch.clip: clamp's other name)
    and copying the result's bits into `out`."""

    def kernel(a: np.ndarray, b: np.ndarray, c: np.ndarray, *, out: np.ndarray) -> None:
        torch = _torch()
        got = getattr(torch, name)(*(_tensor(torch, x) for x in (a, b, c)))
        deliver(_numpy(torch, got, out.dtype), out)

    kernel.__qualname__ = kernel.__name__ = f"torch_{name}"
    return kernel


def _reduction(name: str) -> KernelFn:
    """A kernel calling `torch.<name>(x, dim=axes)` and copying the result's bits into `out`;
    no axes is x itself, since PyTorch reads `dim=()` as every dim."""

    def kernel(x: np.ndarray, axes: tuple[int, ...], *, out: np.ndarray) -> None:
        torch = _torch()
        tensor = _tensor(torch, x)
        got = getattr(torch, name)(tensor, dim=axes) if axes else tensor.clone()
        deliver(_numpy(torch, got, out.dtype), out)

    kernel.__qualname__ = kernel.__name__ = f"torch_{name}"
    return kernel


def _integer_power(x: np.ndarray, exponent: int, *, out: np.ndarray) -> None:
    """`x ** k` with k a Python int: `torch.pow(Tensor, Scalar)`, PyTorch's integer-exponent
    path (k = 2 and 3 multiply, -1 and -2 take reciprocals, other k `std::pow`)."""
    torch = _torch()
    got = torch.pow(_tensor(torch, x), int(exponent))
    deliver(_numpy(torch, got, out.dtype), out)


def _cast(x: np.ndarray, *, out: np.ndarray) -> None:
    """`Tensor.to(dtype)`: PyTorch's cast of `x` to out's dtype (contracts/torch-cast.md)."""
    torch = _torch()
    got = _tensor(torch, x).to(getattr(torch, out.dtype.name))
    deliver(_numpy(torch, got, out.dtype), out)


ENTRY_POINTS: Final[dict[str, Callable[..., None]]] = {
    **{entry: _binary(entry.removeprefix("torch.")) for entry in _CALLS},
    **{f"torch.{op.name}": _unary(op.name) for op in UNARY_OPS},
    **{f"torch.{op.dunder}": _binary(str(op.dunder)) for op in COMPARISON_OPS},
    **{f"torch.{op.name}": _ternary(op.name) for op in TERNARY_OPS},
    **{entry: _reduction(entry.removeprefix("torch.")) for entry in _REDUCE_CALLS},
    **{f"torch.{op.name}": _binary(op.name) for op in CONTRACTION_OPS},
    "torch.pow(Tensor, int)": _integer_power,
    "torch.Tensor.to": _cast,
}
"""Entry point -> kernel: PyTorch's names of the binary operations (`_CALLS`), `torch.<row>`
for every unary row (PyTorch names all eleven; `torch.negative` is `torch.neg`), each
comparison by its operator's name (`torch.lt` ...: `torch.equal` is not elementwise),
`torch.where`, `torch.clip`, the integer power, the cast (`torch.Tensor.to`), the
reductions (`_REDUCE_CALLS`) and `torch.matmul` (contracts/torch-matmul.md)."""


def environment() -> MeasuredOn:
    """PyTorch's version and the CPU capability its kernels dispatch to here (AVX512 ...)."""
    torch = _torch()
    return measured("torch", torch.__version__, torch.backends.cpu.get_cpu_capability())


CAPABILITIES: Final = ("DEFAULT", "AVX2", "AVX512")
"""PyTorch's CPU capabilities on x86, narrowest first (ATEN_CPU_CAPABILITY: lower-case)."""


def isa_switches() -> list[dict[str, str]]:
    """PyTorch on each CPU capability below the one it picks here, through ATEN_CPU_CAPABILITY."""
    here = _torch().backends.cpu.get_cpu_capability()
    below = CAPABILITIES[: CAPABILITIES.index(here)] if here in CAPABILITIES else ()
    return [{"ATEN_CPU_CAPABILITY": c.lower()} for c in below]


UNAVAILABLE: Final = FRAMEWORK.unavailable
ENVIRONMENT: Final = environment
ISA_SWITCHES: Final = isa_switches
