"""The compiled paths leave the caller's floating-point status flags as they were.

A kernel that divides by zero or overflows raises the C environment's sticky status flags; the
compiled fast path (`_fast.binary` / `_fast.inplace`) and `_native.binary` restore the caller's
flags after every call, so C code or a ctypes caller around fueltensor sees no flag fueltensor
raised, and keeps every flag it had raised itself. The flags are read and set through libm's
`feclearexcept` / `feraiseexcept` / `fetestexcept` (ctypes), never through NumPy, which clears
them around its own ufuncs.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import platform
from typing import Any

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.core.dtypes import DType
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

fast: Any = None
with contextlib.suppress(ImportError):
    from fueltensor.ext import _fast as fast

FLAGS = {  # <fenv.h>'s FE_* bits of the platforms this test knows
    "x86_64": {
        "invalid": 0x01,
        "divbyzero": 0x04,
        "overflow": 0x08,
        "underflow": 0x10,
        "inexact": 0x20,
    },
    "aarch64": {
        "invalid": 0x01,
        "divbyzero": 0x02,
        "overflow": 0x04,
        "underflow": 0x08,
        "inexact": 0x10,
    },
}.get(platform.machine())
pytestmark = [
    pytest.mark.skipif(fast is None, reason="the compiled fast path is not built here"),
    pytest.mark.skipif(FLAGS is None, reason=f"FE_* bits of {platform.machine()} not listed"),
]
ALL = sum((FLAGS or {}).values())
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))

HUGE, TINY = 3e38, 1e-30
"""f32 values whose products overflow and underflow."""


def operands(dtype: DType) -> tuple[ft.FuelTensor, ft.FuelTensor]:
    """Same-shape operands on which divide, multiply and pow raise flags (0 / 0, 1 / 0, huge
    results, tiny ones, inexact ones)."""
    info = ft.finfo(dtype)  # np.finfo knows bfloat16 only from ml_dtypes 0.7 on
    huge, tiny = float(info.max) / 2, float(info.smallest_normal)
    a = ft.asarray([1.0, 0.0, huge, tiny, -1.0, 3.0, huge, tiny], dtype=dtype)
    b = ft.asarray([0.0, 0.0, huge, tiny, 0.5, 7.0, tiny, huge], dtype=dtype)
    return a, b


def flags_after(before: int, call: Any) -> int:
    """The status flags after `call()`, with exactly `before` raised just ahead of it.

    The garbage collector is off meanwhile: a collection's callbacks are Python code, and their
    float arithmetic raises inexact in this thread, the interpreter's flag, not the kernel's.
    Hypothesis registers one (`gc_cumulative_time`) at its first test and keeps it for the run;
    distributed's GC diagnosis adds another while a scheduler lives."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        LIBM.feclearexcept(ALL)
        if before:
            LIBM.feraiseexcept(before)
        result = call()
        flags = int(LIBM.fetestexcept(ALL))
        LIBM.feclearexcept(ALL)
    finally:
        if collecting:
            gc.enable()
    assert result is not None, "the compiled path did not serve the call"
    return flags


def test_the_operands_do_raise_every_flag() -> None:
    """The C library itself raises every flag on these values (so the tests below see a
    restore, not kernels that never raised anything)."""
    LIBM.feclearexcept(ALL)
    LIBM.powf.restype = ctypes.c_float
    LIBM.powf.argtypes = [ctypes.c_float, ctypes.c_float]
    LIBM.powf(ctypes.c_float(0.0), ctypes.c_float(-1.0))  # divbyzero
    LIBM.powf(ctypes.c_float(-1.0), ctypes.c_float(0.5))  # invalid
    LIBM.powf(ctypes.c_float(HUGE), ctypes.c_float(2.0))  # overflow, inexact
    LIBM.powf(ctypes.c_float(TINY), ctypes.c_float(2.0))  # underflow
    raised = int(LIBM.fetestexcept(ALL))
    LIBM.feclearexcept(ALL)
    assert raised == ALL


@pytest.mark.skipif(IMPLEMENTATION != "native", reason="the fast path serves native kernels only")
@pytest.mark.parametrize("op", ["divide", "multiply", "pow", "subtract"])
@pytest.mark.parametrize("before", ["none", "all", "inexact"])
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.bfloat16, ft.float16])
def test_fast_binary_and_inplace_restore_the_flags(op: str, before: str, dtype: DType) -> None:
    """A fast call leaves exactly the flags the caller had: none raised by the kernel, none of
    the caller's cleared."""
    assert FLAGS is not None
    want = {"none": 0, "all": ALL, "inexact": FLAGS["inexact"]}[before]
    a, b = operands(dtype)
    getattr(ft, op)(a, b)  # plans the call (Python path), so the fast path serves the next
    assert flags_after(want, lambda: fast.binary(op, a, b)) == want
    target = ft.asarray(np.asarray(a), dtype=dtype)
    assert flags_after(want, lambda: fast.inplace(op, target, b)) == want


@pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")
@pytest.mark.parametrize("before", ["none", "all"])
def test_native_binary_restores_the_flags(before: str) -> None:
    """`_native.binary`, the kernels' entry of the Python path, restores them the same way."""
    want = ALL if before == "all" else 0
    a = np.array([1.0, 0.0, HUGE, TINY], np.float32)
    b = np.array([0.0, 0.0, HUGE, TINY], np.float32)
    out = np.empty_like(a)
    code = NATIVE.OPS.index("div"), NATIVE.DTYPES.index("float32")

    def divide() -> bool:
        NATIVE.binary(*code, a, b, out)
        return True

    assert flags_after(want, divide) == want


@pytest.mark.skipif(IMPLEMENTATION != "native", reason="the fast path serves native kernels only")
@pytest.mark.parametrize("k", [2, -1, 3, -2])
@pytest.mark.parametrize("before", ["none", "all", "inexact"])
@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.bfloat16, ft.float16])
def test_fast_integer_powers_restore_the_flags(k: int, before: str, dtype: DType) -> None:
    """`x ** k` on the compiled PowI body (1 / 0, overflowing and underflowing powers) leaves
    exactly the caller's flags, as `x op y` does."""
    assert FLAGS is not None
    want = {"none": 0, "all": ALL, "inexact": FLAGS["inexact"]}[before]
    a, _ = operands(dtype)
    a**k  # plans the call (Python path), so the fast path serves the next
    assert flags_after(want, lambda: fast.binary("pow", a, k)) == want
    target = ft.asarray(np.asarray(a), dtype=dtype)
    assert flags_after(want, lambda: fast.inplace("pow", target, k)) == want
