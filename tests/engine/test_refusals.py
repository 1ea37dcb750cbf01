"""An output that cannot exist is refused before anything is allocated, in the same words on
the compiled and Python paths.

Broadcasting makes an output from operands far smaller than it: `(2**26, 1) + (1, 2**26)` reads
two 256 MiB operands (stride-0 views of one element here) and would write 16 PiB. The refusal
(MemoryError, as NumPy's failed allocation is, naming the output's shape and bytes) comes
before any operand is cast or densified; tracemalloc sees every buffer NumPy and fueltensor
allocate, so these tests measure that nothing was, without ever allocating much themselves.
"""

from __future__ import annotations

import operator
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import fueltensor as ft
from fueltensor.core import storage
from fueltensor.core.dtypes import DType
from fueltensor.engine import dispatch
from fueltensor.kernels._chassis import NATIVE

Op = Callable[[Any, Any], Any]
OPS: dict[str, Op] = {
    "add (oracle: densifies each operand)": operator.add,
    "maximum (cpu: broadcasts to the output)": ft.maximum,
    "pow": operator.pow,
}
QUIET_BYTES = 1 << 20
"""More than a refusal allocates (its message and traceback), far less than any operand."""


def refusals(op: Op, a: ft.FuelTensor, b: ft.FuelTensor) -> tuple[list[str], int]:
    """The messages of three calls of `op(a, b)` that must each raise MemoryError (the first
    plans on the Python path; the later ones find the plan cached, where the compiled path
    serves what it can), and the peak bytes traced meanwhile."""
    messages = []
    tracemalloc.start()
    try:
        for _ in range(3):
            with pytest.raises(MemoryError) as info:
                op(a, b)
            messages.append(str(info.value))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return messages, peak


@pytest.mark.parametrize("dtype", [ft.float32, ft.float64, ft.bfloat16, ft.int32])
@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
def test_an_output_larger_than_the_machine_is_refused_first(op: Op, dtype: DType) -> None:
    """Fails before the fix: the Python path densified the 256 MiB operands first, then NumPy
    raised its own MemoryError; the compiled path raised NumPy's words too."""
    one = ft.ones((1, 1), dtype=dtype)
    n = 1 << 26
    messages, peak = refusals(op, ft.broadcast_to(one, (n, 1)), ft.broadcast_to(one, (1, n)))
    assert peak < QUIET_BYTES
    assert len(set(messages)) == 1, messages
    nbytes = n * n * dtype.itemsize
    assert f"shape ({n}, {n}) of {dtype.name}" in messages[0]
    assert f"would take {nbytes:,} bytes" in messages[0]
    assert "this machine's memory" in messages[0]


def test_an_output_beyond_a_64_bit_index_is_refused_first() -> None:
    """The issue's case: 2**64 elements, whose count wraps to 0 in 64-bit arithmetic."""
    one = ft.ones((1, 1), dtype=ft.float32)
    a, b = ft.broadcast_to(one, (2**32, 1)), ft.broadcast_to(one, (1, 2**32))
    messages, peak = refusals(operator.add, a, b)
    assert peak < QUIET_BYTES
    assert len(set(messages)) == 1, messages
    assert f"would take {2**66:,} bytes" in messages[0]
    assert "a 64-bit index" in messages[0]


@pytest.mark.skipif(NATIVE is None, reason="the compiled fast path is not built here")
def test_the_fast_path_builds_no_entry_for_an_overflowing_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_fast.entry` checks its own count: with dispatch's check bypassed it still refuses an
    output of 2**64 + 2**32 elements (fails before the fix: the count wrapped to 2**32 and the
    entry would have allocated 16 GiB for it)."""
    one = ft.ones((1, 1), dtype=ft.float32)
    a, b = ft.broadcast_to(one, (2**32 + 1, 1)), ft.broadcast_to(one, (1, 2**32))
    monkeypatch.setattr(dispatch, "output_fits", lambda shape, itemsize: True, raising=False)
    for fn in (ft.add, ft.maximum):
        assert dispatch._fast_entry(ft.explain(fn, a, b)) is None


def test_aligned_empty_refuses_in_fueltensor_words() -> None:
    """The allocator both paths share names the count and its bytes (before the fix the
    compiled one said "negative dimensions are not allowed")."""
    count = 2**62
    with pytest.raises(MemoryError, match=rf"shape \({count},\) of float32.*{4 * count:,} bytes"):
        storage.aligned_empty(count, np.dtype(np.float32))


@pytest.mark.skipif(NATIVE is None, reason="the compiled allocator is not built here")
@pytest.mark.parametrize("count", [2**62, 2**63 // 4 - 8])
def test_the_compiled_allocator_checks_size_and_alignment(count: int) -> None:
    """`_fast.empty` itself: count times itemsize, and that plus the 64 alignment bytes,
    overflow a 64-bit index (the second only with the alignment added)."""
    from fueltensor.ext import _fast

    with pytest.raises(MemoryError, match=f"cannot allocate {count} elements of 4 bytes"):
        _fast.empty(count, np.dtype(np.float32))


def test_outputs_that_fit_are_not_refused() -> None:
    """The check is no wider than it must be: the largest shape the machine holds passes."""
    assert storage.output_fits((storage.MACHINE_BYTES // 8,), 8)
    assert not storage.output_fits((storage.MACHINE_BYTES // 8 + 1,), 8)
    assert storage.MACHINE_BYTES <= storage.MAX_BYTES


@pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")
def test_the_compiled_copy_refuses_strides_whose_reach_overflows() -> None:
    """`_native.copy_strided` checks the byte range its source spans: (3 - 1) * 2**62 bytes
    overflows a 64-bit index (before the fix the range wrapped and the copy read wild memory).
    NumPy's as_strided makes such a view without checking it; nothing is read from it here."""
    src = as_strided(np.zeros(1, np.float32), shape=(3,), strides=(2**62,))
    with pytest.raises(ValueError, match="strides reach past any buffer"):
        NATIVE.copy_strided(src, np.empty(3, np.float32))
