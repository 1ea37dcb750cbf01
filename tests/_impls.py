"""The CPU kernel implementations under test: pure NumPy, and the compiled one per instruction set.

An implementation id is "pure" or "native-<isa>" (one per kernel body the extension compiled for
this machine, e.g. "native-baseline" for the portable half-float code and "native-avx2" for
F16C). Where the extension is not built, a single "native" id skips with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import pytest

from fueltensor.kernels import cpu
from fueltensor.kernels._chassis import IMPLEMENTATIONS, NATIVE

IMPLS = ["pure", *(f"native-{isa}" for isa in NATIVE.ISAS)] if NATIVE else ["pure", "native"]


@cache
def thunks(impl: str) -> dict[str, Any]:
    """The 32 thunks of an implementation id (skips when the compiled kernels are not built)."""
    name = impl.partition("-")[0]
    if name not in IMPLEMENTATIONS:
        pytest.skip("the compiled kernels (fueltensor.ext._native) are not built here")
    return cpu.thunks(name)


def thunk(impl: str, op: str, fmt: str) -> Any:
    """The thunk `<op>_<fmt>` of an implementation id."""
    return thunks(impl)[f"fuel_cpu_backend::byte_kernels::{op}_{fmt}"]


def runnable_isas() -> list[str]:
    """The instruction sets whose compiled bodies this CPU runs, narrowest first (none where the
    extension is not built)."""
    if NATIVE is None:
        return []
    return list(NATIVE.ISAS[: NATIVE.ISAS.index(NATIVE.isa()) + 1])


@contextmanager
def using(impl: str) -> Iterator[None]:
    """Run the compiled kernels' body for the id's instruction set for the duration."""
    isa = impl.partition("-")[2]
    if not isa or NATIVE is None:
        yield
        return
    previous = NATIVE.select_isa(isa)
    try:
        yield
    finally:
        NATIVE.select_isa(previous)
