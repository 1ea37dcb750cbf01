"""Compiled providers: byte kernels in a shared library, called through the FKC byte-kernel C ABI.

    int32_t NAME(const uint8_t *lhs, size_t lhs_bytes, const uint8_t *rhs, size_t rhs_bytes,
                 uint8_t *out, size_t out_bytes);

is the seeds' thunk over three byte slices: 0 is `Ok`, any other status an `Err`. `load_library`
resolves every symbol when it loads, through ctypes (a missing library or symbol fails there,
not at the first call), and returns the `entry_point -> kernel` map that `register_provider`
takes. Each kernel holds its function's address, which C calls: the fast path from a cached
plan's entry, the Python path through `_fast.byte_call`. Both release the GIL from
`GIL_FREE_FROM` output elements and hand over an input of at most 16 bytes (a scalar) as a
private copy. A build without `_fast` calls through ctypes (the GIL always released, no copy).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fueltensor.core.errors import KernelStatusError, LibraryError
from fueltensor.kernels import KernelFn

_ARGTYPES = (ctypes.c_void_p, ctypes.c_size_t) * 3
"""lhs, lhs_bytes, rhs, rhs_bytes, out, out_bytes."""

_byte_call: Callable[[int, NDArray[Any], NDArray[Any], NDArray[Any]], int] | None
try:
    from fueltensor.ext._fast import byte_call as _byte_call
except ImportError:  # a build without the compiled floor: ctypes calls the kernels
    _byte_call = None


class CompiledKernel:
    """One byte kernel of a loaded library, as a `kernel(lhs, rhs, *, out)` callable."""

    __slots__ = ("__name__", "_fn", "address", "library", "symbol")

    def __init__(self, fn: Any, library: Path, symbol: str) -> None:
        self._fn = fn
        self.address: int = ctypes.cast(fn, ctypes.c_void_p).value or 0
        """The C function's address: what the fast path's entry and `_fast.byte_call` call."""
        self.library = library
        self.symbol = symbol
        self.__name__ = symbol

    def __repr__(self) -> str:
        return f"<compiled kernel {self.symbol} from {self.library}>"

    def __call__(self, lhs: NDArray[Any], rhs: NDArray[Any], *, out: NDArray[Any]) -> None:
        """Hand the three dense buffers to the C function; KernelStatusError on a nonzero status."""
        for label, array in (("lhs", lhs), ("rhs", rhs), ("out", out)):
            if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
                raise ValueError(
                    f"{self.symbol}: {label} must be a C-contiguous ndarray; the C ABI takes "
                    "dense buffers only (declare contiguous: required and rejected for every "
                    "other layout flag, so the planner makes operands dense first)"
                )
        if not out.flags.writeable:
            raise ValueError(f"{self.symbol}: out must be writable")
        if _byte_call is not None:
            status = _byte_call(self.address, lhs, rhs, out)
        else:
            data = (lhs.ctypes.data, lhs.nbytes, rhs.ctypes.data, rhs.nbytes)
            status = self._fn(*data, out.ctypes.data, out.nbytes)
        if status:
            raise self.status_error(status, lhs.nbytes, rhs.nbytes, out.nbytes)

    def status_error(
        self, status: int, lhs_bytes: int, rhs_bytes: int, out_bytes: int
    ) -> KernelStatusError:
        """The error of a nonzero `status` returned for buffers of these byte lengths (both
        paths word it here)."""
        return KernelStatusError(
            f"{self.symbol} ({self.library}) returned status {status} for byte lengths "
            f"lhs {lhs_bytes}, rhs {rhs_bytes}, out {out_bytes}",
            status=status,
            symbol=self.symbol,
        )


def _open(path: str | os.PathLike[str]) -> tuple[Path, ctypes.CDLL]:
    """The library file at `path` (absolute, so dlopen never searches), loaded."""
    where = Path(path).expanduser().resolve()
    if not where.is_file():
        raise LibraryError(f"no compiled kernel library at {where} (given {os.fspath(path)!r})")
    try:
        return where, ctypes.CDLL(str(where))
    except OSError as e:
        raise LibraryError(
            f"{where} is not a loadable shared library ({e}); build one with "
            "`cc -shared -fPIC` or a Cargo crate of crate-type cdylib"
        ) from None


def load_library(
    path: str | os.PathLike[str], symbols: Mapping[str, str]
) -> Mapping[str, KernelFn]:
    """Load the shared library at `path` and map each `entry_point` to its C symbol's kernel.

    `symbols` is `{entry_point: symbol}`; the result is the map `register_provider(name, map)`
    takes. Every symbol must be there: LibraryError names the library and each missing one.
    """
    if not isinstance(symbols, Mapping) or not symbols:
        raise TypeError("symbols must be a non-empty mapping of entry_point -> C symbol name")
    bad = [(k, v) for k, v in symbols.items() if not (isinstance(k, str) and isinstance(v, str))]
    if bad:
        raise TypeError(f"symbols must map strings to strings; got {bad[0]!r}")
    where, library = _open(path)
    found = {}
    for symbol in dict.fromkeys(symbols.values()):
        try:
            fn = library[symbol]
        except AttributeError:
            continue
        fn.argtypes = _ARGTYPES
        fn.restype = ctypes.c_int32
        found[symbol] = CompiledKernel(fn, where, symbol)
    missing = [repr(s) for s in symbols.values() if s not in found]
    if missing:
        raise LibraryError(f"{where} has no symbol {', '.join(dict.fromkeys(missing))}")
    return MappingProxyType({ep: found[symbol] for ep, symbol in symbols.items()})
