"""Stride-0 operands made dense block by block (issue 44 item 2): the same bits as the dense
path for every contract operation and dtype, on every layout a broadcast operand can carry, and
a peak memory of the output plus a small constant (a broadcast is never densified at the
output's size)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import OUTSIDE
from hypothesis import given
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.engine import dispatch, execute
from fueltensor.kernels._chassis import IMPLEMENTATION
from fueltensor.ops import BINARY_OPS

DTYPES = {
    "float32": (np.float32, np.uint32),
    "float64": (np.float64, np.uint64),
    "bfloat16": (ml_dtypes.bfloat16, np.uint16),
    "float16": (np.float16, np.uint16),
}
OPS = [pytest.param(dispatch.OPERATIONS[row.name], id=row.name) for row in BINARY_OPS]
SMALL_BLOCKS = 96
"""Bytes of a tile in these tests: many blocks, a partial last one, boxes over several axes."""


@pytest.fixture(autouse=True)
def small_tiles(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Tiles of SMALL_BLOCKS bytes, so small tensors take many blocks."""
    monkeypatch.setattr(execute, "TILE_BYTES", SMALL_BLOCKS)
    yield


def bits(shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Random bit patterns of `dtype` (NaN payloads, signed zeros, infinities, subnormals),
    with every special value of the type among them."""
    kind, uint = DTYPES[dtype]
    rng = np.random.default_rng(seed)
    info = np.iinfo(uint)
    raw = rng.integers(0, int(info.max), size=shape, dtype=uint, endpoint=True)
    flat = raw.reshape(-1)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0], kind).view(uint)
    flat[: min(flat.size, specials.size)] = specials[: flat.size]
    return raw.view(kind)


def dense(view: Any, shape: tuple[int, ...], like: np.dtype[Any]) -> ft.FuelTensor:
    """A C-contiguous tensor of `view`'s elements broadcast to `shape` (no stride 0 left); a
    Python float as an element of the other operand's dtype `like` (it is weak)."""
    values = np.asarray(view, like) if isinstance(view, float) else np.asarray(view)
    return ft.asarray(np.array(np.broadcast_to(values, shape), order="C", copy=True))


def assert_same_bits(got: ft.FuelTensor, want: ft.FuelTensor, a: Any, b: Any) -> None:
    """Bit for bit; in the pure-NumPy build, where the contracts let NumPy's loops pick either
    NaN of a pair by position (`semantics.position: nan_bits`), such lanes only NaN."""
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape and g.dtype == w.dtype
    kind = DTYPES[g.dtype.name][1]
    same = g.view(kind) == w.view(kind)
    if IMPLEMENTATION == "pure":
        with np.errstate(invalid="ignore"):  # a signalling NaN's test raises invalid
            pair = np.isnan(np.asarray(a)) & np.isnan(np.asarray(b))
            same |= pair & np.isnan(g)
    assert same.all(), (g[~same][:4], w[~same][:4])


def check(op: Callable[..., Any], x: Any, y: Any) -> None:
    """`op(x, y)` on both dispatch paths (traced: the Python path's blocks; untraced: the
    compiled path's where it is built, asked directly) equals `op` on the dense copies of its
    operands."""
    shape = np.broadcast_shapes(np.shape(np.asarray(x)), np.shape(np.asarray(y)))
    like = next(np.asarray(v).dtype for v in (x, y) if not isinstance(v, float))
    dx, dy = dense(x, shape, like), dense(y, shape, like)
    want = op(dx, dy)
    with ft.trace() as plans:
        got = op(x, y)
    assert plans[-1].provider == "fuel-cpu-backend", plans[-1]
    assert_same_bits(got, want, dx, dy)
    for _ in range(2):
        assert_same_bits(op(x, y), want, dx, dy)
    if IMPLEMENTATION == "native":  # the compiled path served those calls: it serves this one
        assert dispatch._FAST is not None
        fast = dispatch._FAST(op.__fueltensor_op__, x, y)
        assert fast is not None
        assert_same_bits(fast, want, dx, dy)


def layouts(dtype: str) -> Iterator[tuple[str, Any, Any]]:
    """Pairs of operands where one or both carry stride-0 axes after broadcasting, on every
    layout a broadcast operand can carry (strided, offset, flipped, a view itself broadcast)."""
    big = ft.asarray(bits((7, 13), dtype, 1))
    row = ft.asarray(bits((13,), dtype, 2))
    col = ft.asarray(bits((7, 1), dtype, 3))
    wide = ft.asarray(bits((3, 27), dtype, 4))
    yield "row", big, row
    yield "row first", row, big
    yield "column", big, col
    yield "outer", col, row
    yield "strided row", big, wide[1, :26:2]
    yield "offset row", big, wide[2, 1:14]
    yield "flipped row", big, ft.flip(row, axis=0)
    yield "strided big", wide[:, ::2], wide[0, :14:1]
    yield "broadcast view", ft.broadcast_to(row, (7, 13)), ft.broadcast_to(row, (7, 13))
    yield "view of a column", ft.broadcast_to(col, (7, 13)), big
    yield "3-d", ft.asarray(bits((2, 5, 4), dtype, 5)), ft.asarray(bits((5, 1), dtype, 6))
    yield "python scalar", big, 0.5
    yield "0-d tensor", big, ft.asarray(bits((), dtype, 7))
    yield "both 0-d", ft.asarray(bits((), dtype, 8)), ft.asarray(bits((), dtype, 9))
    yield "empty", ft.asarray(bits((0, 13), dtype, 10)), row


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("op", OPS)
def test_blocks_give_the_dense_paths_bits(op: Callable[..., Any], dtype: str) -> None:
    for name, x, y in layouts(dtype):
        try:
            check(op, x, y)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from e


@pytest.mark.skipif(IMPLEMENTATION != "native", reason="the compiled path's blocks")
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("op", [ft.add, ft.maximum, ft.divide], ids=str)
def test_blocks_of_the_compiled_path_give_the_dense_paths_bits(
    op: Callable[..., Any], dtype: str
) -> None:
    """Outputs of several of the compiled path's 256 KiB blocks (and a partial last one): a
    row (made dense once), a column and a flipped column (made dense per block), an outer
    broadcast, a Python scalar (a repeated element beside a tiled operand), a 3-d view."""
    big = ft.asarray(bits((70, 4100), dtype, 13))
    row = ft.asarray(bits((4100,), dtype, 14))
    col = ft.asarray(bits((70, 1), dtype, 15))
    cube = ft.asarray(bits((3, 70, 1), dtype, 16))
    for name, x, y in [
        ("row", big, row),
        ("column", col, big),
        ("flipped column", big, ft.flip(col, axis=0)),
        ("outer", col, row),
        ("scalar beside a view", ft.broadcast_to(row, (70, 4100)), 0.5),
        ("3-d", cube, ft.flip(row, axis=0)),
    ]:
        try:
            check(op, x, y)
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from e


def test_a_broadcast_operand_is_made_dense_block_by_block_in_the_plan() -> None:
    big, row = ft.asarray(bits((7, 13), "float32", 1)), ft.asarray(bits((13,), "float32", 2))
    plan = ft.explain(ft.maximum, big, row)
    (contiguize,) = [s for s in plan.steps if s.kind == "Contiguize"]
    assert contiguize.tiled and contiguize.operand == 1
    assert contiguize.bytes == 13 * 4  # the row's elements, read once
    assert str(contiguize).startswith("Contiguize(rhs, block by block)")


@given(
    out=st.lists(st.integers(0, 6), min_size=1, max_size=4),
    keep=st.lists(st.booleans(), min_size=4, max_size=4),
    blocks=st.integers(2, 64),
    dtype=st.sampled_from(sorted(DTYPES)),
)
def test_any_broadcast_shape_and_block_size(
    out: list[int], keep: list[bool], blocks: int, dtype: str
) -> None:
    """A dense operand beside one broadcast over any subset of its axes, any block size."""
    shape = tuple(out)
    small = tuple(n if k else 1 for n, k in zip(shape, keep, strict=False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(execute, "TILE_BYTES", blocks * np.dtype(DTYPES[dtype][0]).itemsize)
        x, y = ft.asarray(bits(shape, dtype, 11)), ft.asarray(bits(small, dtype, 12))
        check(ft.add, x, y)
        check(ft.multiply, y, x)


_CHILD = """
import json, resource, sys
import numpy as np
import fueltensor as ft
n = int(sys.argv[1]) // 4
row = ft.asarray(np.arange(1024, dtype=np.float32))
x = ft.broadcast_to(row, (n // 1024, 1024))
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = peak()
y = x + x  # planned and run on the Python path
del y
y = x + x  # the cached plan: the compiled path where it is built
del y
z = ft.maximum(x, row)
print(json.dumps({"growth": peak() - before}))
"""
OUTPUT_BYTES = 64 << 20
SLACK_BYTES = 16 << 20
"""The small constant above the output: blocks, kept buffers, the allocator's slack."""


@pytest.mark.skipif(
    "asan" in os.environ.get("LD_PRELOAD", ""),
    reason="under AddressSanitizer (.ci/sanitize) peak RSS measures its quarantine and shadow",
)
def test_a_broadcast_views_peak_memory_is_its_output_plus_a_small_constant() -> None:
    """`x + x` on a stride-0 view making a 64 MiB output grows the process's peak RSS by the
    output and a few MiB (densified, each operand took another 64 MiB)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(OUTPUT_BYTES)],
        capture_output=True,
        text=True,
        cwd=OUTSIDE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    growth = json.loads(done.stdout)["growth"]
    assert growth <= OUTPUT_BYTES + SLACK_BYTES, f"{growth / 2**20:.1f} MiB"


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_in_place_with_a_broadcast_of_the_target_itself_reads_it_before_writing(
    dtype: str,
) -> None:
    """`x += flip(x[:, :1])`: the broadcast column comes from rows written by later blocks, so
    the compiled path computes into a fresh output and copies it in (a block-by-block operand
    reads its source as `out` fills); both paths give the dense computation's bits."""
    values = bits((70, 4100), dtype, 17)
    expected = ft.asarray(values) + dense(
        np.flip(values[:, :1], axis=0), values.shape, values.dtype
    )
    for traced in (True, False, False):
        x = ft.asarray(values.copy())
        with ft.trace() if traced else contextlib.nullcontext():
            x += ft.flip(x[:, :1], axis=0)
        assert_same_bits(x, expected, np.asarray(expected), np.asarray(expected))
