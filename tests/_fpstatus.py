"""The floating-point status flags read through libm (ctypes), never through NumPy, which clears
them: the FE_* bits of this machine, and the flags a call leaves."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import platform
from collections.abc import Callable
from typing import Any

FE = {
    "x86_64": {"invalid": 1, "divbyzero": 4, "overflow": 8, "underflow": 16, "inexact": 32},
    "aarch64": {"invalid": 1, "divbyzero": 2, "overflow": 4, "underflow": 8, "inexact": 16},
}.get(platform.machine(), {})
"""The FE_* bits of this machine (empty: not listed, the flag tests skip)."""
ALL = sum(FE.values())
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))


def flags_after(before: int, call: Callable[[], Any]) -> int:
    """The status flags after `call()`, with exactly `before` raised just ahead of it. The
    cyclic garbage collector is off meanwhile: a collection the call's allocations trigger runs
    finalizers of earlier tests' objects, whose float work would raise flags of its own."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        LIBM.feclearexcept(ALL)
        if before:
            LIBM.feraiseexcept(before)
        call()
        flags = int(LIBM.fetestexcept(ALL))
        LIBM.feclearexcept(ALL)
    finally:
        if enabled:
            gc.enable()
    return flags
