"""Marks for tests whose subject exists only in one kernel mode."""

from __future__ import annotations

import pytest

from fueltensor.kernels._chassis import IMPLEMENTATION

NATIVE_FAST_PATH = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="FUELTENSOR_PURE_NUMPY=1 (or no compiled kernels): the CPU kernels are the pure-NumPy "
    "ones, which the compiled fast path never serves (it runs `_native`'s bodies and the oracle "
    "only), so there is no fast CPU-kernel call to hold to the Python path",
)
"""A test of the compiled fast path serving the compiled CPU kernels' plans."""
