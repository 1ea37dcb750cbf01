"""Large outputs are written through streaming stores (abi.h's STREAM_FROM): a body whose
output reaches it computes tile by tile and copies each tile out past the caches. Only the
stores differ, so its bytes must be those of the same kernel run on pieces below the threshold,
for every op and dtype, into aligned and unaligned outputs, and at lengths whose last tile is
not whole."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.kernels._chassis import NATIVE

_native: Any = NATIVE
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")
STREAM_FROM = NATIVE.STREAM_FROM if NATIVE is not None else 0
DTYPES = {"float32": np.uint32, "float64": np.uint64, "bfloat16": np.uint16, "float16": np.uint16}


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """One thread: a split body's chunks are each below the threshold at these sizes."""
    before = ft.get_num_threads()
    ft.set_num_threads(1)
    yield
    ft.set_num_threads(before)


def pieces(op: int, dtype: int, a: Any, b: Any, out: Any) -> None:
    """The kernel over a and b in pieces of half the threshold (no piece streams)."""
    step = STREAM_FROM // 2 // a.itemsize
    for at in range(0, a.size, step):
        _native.binary(op, dtype, a[at : at + step], b[at : at + step], out[at : at + step])


@pytest.fixture(params=_native.ISAS if NATIVE is not None else ())
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each instruction set's kernel body in turn (each has its own streaming copy)."""
    before = _native.select_isa(request.param)
    yield request.param
    _native.select_isa(before)


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize(
    "op", ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod", "rem"]
)
def test_a_streamed_output_holds_the_pieces_bytes(op: str, dtype: str, isa: str) -> None:
    """Random bit patterns (NaN payloads, subnormals, infinities) past the threshold, with a
    partial last tile, into an aligned output and into one 1 element off alignment: the same
    bytes as the kernel computing them in pieces, whatever the output held before."""
    uint = DTYPES[dtype]
    size = np.dtype(uint).itemsize
    n = STREAM_FROM // size + 4099
    rng = np.random.default_rng(zlib.crc32(f"{op} {dtype}".encode()))
    a, b = (rng.integers(0, np.iinfo(uint).max, n, dtype=uint, endpoint=True) for _ in "ab")
    code, kind = _native.OPS.index(op), _native.DTYPES.index(dtype)
    np_dtype = np.dtype(getattr(ft, dtype).np) if dtype == "bfloat16" else np.dtype(dtype)
    lhs, rhs = a.view(np_dtype), b.view(np_dtype)
    want = np.zeros(n, uint)
    pieces(code, kind, lhs, rhs, want.view(np_dtype))
    for offset in (0, 1):
        room = np.full(n + 1, 0xAB, uint)
        out = room[offset : offset + n]
        _native.binary(code, kind, lhs, rhs, out.view(np_dtype))
        bad = np.flatnonzero(out != want)
        assert bad.size == 0, f"offset {offset}: {bad.size} of {n} differ, the first at {bad[:1]}"
