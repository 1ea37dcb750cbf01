"""The platform C library's pow for the pure-NumPy kernels and the judge: `powf` (F32) and
`pow` (F64) called per element through ctypes, as the compiled kernels call them."""

from __future__ import annotations

import ctypes
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[Any]
F32 = np.dtype(np.float32)


@cache
def _libm() -> ctypes.CDLL:
    """The platform C library's maths (libm on Unix, the UCRT on Windows), its powf/pow typed:
    found on the first pure-NumPy pow, since finding it runs the platform's tools (ldconfig),
    which `import fueltensor` should not wait for."""
    import ctypes.util

    for name in ("m", "ucrtbase", "c"):
        path = ctypes.util.find_library(name)
        if path is not None:
            lib = ctypes.CDLL(path)
            lib.powf.restype, lib.powf.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
            lib.pow.restype, lib.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
            return lib
    raise RuntimeError(  # pragma: no cover - every supported platform has one of the three
        "fueltensor.kernels: no C maths library found (looked for libm, ucrtbase and libc); "
        "pow needs the platform's powf/pow, which the compiled kernels call too"
    )


def libm_pow(lhs: Array, rhs: Array, *, out: Array) -> None:
    """Contract pow: the C library's `powf` (F32) / `pow` (F64), one call per element.

    This is what the compiled kernels call and what Rust's `f32::powf` calls; `np.power` is not
    (on AVX-512 machines NumPy runs its own vector loops, with other last bits and NaN signs).
    Operands and `out` are C-contiguous arrays of one shape; Python floats carry the values.
    """
    fn = _libm().powf if out.dtype == F32 else _libm().pow
    lf, rf, of = lhs.reshape(-1), rhs.reshape(-1), out.reshape(-1)
    of[...] = np.fromiter(map(fn, lf.tolist(), rf.tolist()), out.dtype, of.size)
    if out.dtype == F32:
        _redo_signalling_f32(lf, rf, of)


def _redo_signalling_f32(lhs: Array, rhs: Array, out: Array) -> None:
    """Redo the lanes with a signalling-NaN f32 operand from its exact bits: `tolist` widens
    to a Python float, which quiets it, and powf can tell (powf(1, sNaN) is NaN, of qNaN 1)."""
    lb, rb = lhs.view(np.uint32), rhs.view(np.uint32)
    quiet = np.uint32(0x00400000)
    signalling = (np.isnan(lhs) & ((lb & quiet) == 0)) | (np.isnan(rhs) & ((rb & quiet) == 0))
    for i in np.flatnonzero(signalling).tolist():
        x = ctypes.c_float.from_buffer_copy(lhs[i : i + 1].tobytes())
        y = ctypes.c_float.from_buffer_copy(rhs[i : i + 1].tobytes())
        out[i] = _libm().powf(x, y)
