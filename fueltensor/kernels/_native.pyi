"""Type stub of the compiled kernels built from `_native.c`."""

from typing import Any

OPS: tuple[str, ...]
"""The op names, in the order `binary` numbers them."""
DTYPES: tuple[str, ...]
"""The NumPy dtype names, in the order `binary` numbers them."""
ISAS: tuple[str, ...]
"""The instruction sets this machine has a kernel body for, the one used by default last."""

def binary(op: int, dtype: int, lhs: Any, rhs: Any, out: Any, /) -> None:
    """out[i] = OPS[op](lhs[i], rhs[i]) over C-contiguous buffers of DTYPES[dtype]."""

def select_isa(name: str, /) -> str:
    """Run the kernel body compiled for `name` (one of ISAS); returns the previous one."""

def copy_strided(src: Any, dst: Any, /) -> None:
    """Copy any strided `src` into the C-contiguous `dst` of its size, in row-major order."""
