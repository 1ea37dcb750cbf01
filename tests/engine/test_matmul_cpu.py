"""fuel-cpu-backend's matmul of BF16 and F16 (contracts/fuel-cpu-backend-matmul.md; issue 46):
`ft.matmul` and `@` plan `matmul_<dtype>` by default, bit for bit the declared order (a float32
sum from -0, each product unrounded, K in order, rounded once), against `in_order`
(tests/_matmul.py: rationals per step, written from the contract, not from the kernel): on every
layout and on hypothesis' shapes and views; specials (NaN, infinities, signed zeros,
subnormals, a BF16 product past float32's range); the compiled core and the pure-NumPy body
give the same bits; 300x200 @ 200x150 is the same on 1, 2, 3 and 7 threads on every body
(issue 46's done-when); the document passes the judge, every output the order's bits (its
`matmul_bf16_pairs` too: tests/kernels/test_matmul_pairs.py)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT
from _matmul import in_order, over_stacks, product, same, views
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.kernels import contractions, cpu, threads
from fueltensor.kernels._chassis import NATIVE
from fueltensor.tools.judge import judge

HALVES = (np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16))
SUFFIX = {"bfloat16": "bf16", "float16": "f16"}
DOCUMENT = ROOT / "contracts" / "fuel-cpu-backend-matmul.md"


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_views_plan_the_cpu_kernel_and_keep_the_declared_order(dtype: np.dtype[Any]) -> None:
    for x, y in views(np.random.default_rng(2), dtype):
        got, ran = product(x, y)
        assert ran == [f"matmul_{SUFFIX[dtype.name]}"]
        want = over_stacks(in_order, x, y)
        assert got.shape == want.shape and got.dtype == dtype
        same(got, want)


def specials(dtype: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Rows meeting NaN, infinities of one and both signs, inf * 0, signed zeros, subnormals,
    and (BF16) products beyond float32's range both ways."""
    info: Any = ml_dtypes.finfo(dtype)
    sub, big = float(info.smallest_subnormal), float(info.max)
    a = [
        [np.nan, 1.0, 2.0],
        [np.inf, 1.0, -1.0],
        [np.inf, -np.inf, 1.0],
        [np.inf, 0.0, 1.0],
        [-0.0, -0.0, -0.0],
        [sub, -sub, sub * 3],
        [big, big, -big],
    ]
    b = [[1.0, 0.0, -0.0], [2.0, -0.0, 1.0], [0.5, 0.0, -1.0]]
    if dtype.name == "bfloat16":
        a += [[-1.5 * 2.0**127, 2.0**64, 0.0], [2.0**-74, 2.0**-75, 0.0]]
        b = [[1.0, 2.0**-75, -0.0], [2.0**64, 2.0**-75, 1.0], [0.5, 0.0, -1.0]]
    return np.array(a, dtype), np.array(b, dtype)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_specials_keep_the_declared_order(dtype: np.dtype[Any]) -> None:
    x, y = specials(dtype)
    got, _ = product(x, y)
    want = in_order(x, y)
    same(got, want)
    if dtype.name == "bfloat16":  # an unrounded 2^64 * 2^64: 2^126, where a rounded one is inf
        assert float(got[7, 0]) == 2.0**126


@pytest.mark.skipif(NATIVE is None, reason="the compiled core is not built")
@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_the_pure_body_gives_the_cores_bits(dtype: np.dtype[Any]) -> None:
    compiled, pure = cpu.thunks("native"), cpu.thunks("pure")
    entry = f"fuel_cpu_backend::byte_kernels::matmul_{SUFFIX[dtype.name]}"
    rng = np.random.default_rng(3)
    pairs = [specials(dtype), *views(rng, dtype)[3:]]
    reach = 60 if dtype.name == "bfloat16" else 12  # products far apart in scale
    scaled = rng.standard_normal((9, 70)) * 2.0 ** rng.integers(-reach, reach, (9, 70))
    pairs.append((scaled.astype(dtype), rng.standard_normal((70, 5)).astype(dtype)))
    for x, y in pairs:
        shape = (*np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), x.shape[-2], y.shape[-1])
        outs = [np.full(shape, np.nan, dtype) for _ in range(2)]
        for table, out in zip((compiled, pure), outs, strict=True):
            table[entry](x, y, out=out)
        same(outs[0], outs[1])


@st.composite
def operands(draw: st.DrawFn, dtype: np.dtype[Any]) -> tuple[np.ndarray, np.ndarray]:
    """x (M, K) and y (K, N) of small shapes, each maybe transposed, flipped or strided."""
    m, k, n = (draw(st.integers(1, 7)) for _ in range(3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)

    def laid(shape: tuple[int, int]) -> np.ndarray:
        side = 2 * max(shape)
        base = rng.standard_normal((side, side)) * 2.0 ** rng.integers(-8, 8)
        dense = base.astype(dtype)
        how = draw(st.sampled_from(["dense", "transposed", "flipped", "strided"]))
        if how == "transposed":
            return np.ascontiguousarray(dense[: shape[1], : shape[0]]).T
        if how == "flipped":
            return dense[: shape[0], : shape[1]][::-1, ::-1]
        if how == "strided":
            return dense[: 2 * shape[0] : 2, : 2 * shape[1] : 2]
        return dense[: shape[0], : shape[1]]

    return laid((m, k)), laid((k, n))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(HALVES))
def test_any_shape_and_layout_keeps_the_declared_order(data: Any, dtype: np.dtype[Any]) -> None:
    x, y = data.draw(operands(dtype))
    got, ran = product(x, y)
    assert ran == [f"matmul_{SUFFIX[dtype.name]}"]
    same(got, in_order(x, y))


@pytest.fixture
def cores() -> Any:
    """A pretended core count for the test, the real ones after."""
    pretended = threads.pretend_cores(0)
    yield
    threads.pretend_cores(pretended)


@pytest.mark.parametrize("count", [2, 3, 7])
def test_300_by_200_by_150_is_one_result_on_1_2_3_and_7_threads(
    count: int, cores: None, isa: str
) -> None:
    """Issue 46's done-when, through ft.matmul: as on a machine of `count` cores, each body."""
    threads.pretend_cores(count)
    rng = np.random.default_rng(count)
    for dtype in HALVES:
        x = ft.asarray(rng.standard_normal((300, 200)).astype(dtype))
        y = ft.asarray(rng.standard_normal((200, 150)).astype(dtype))
        with threads.running_on(1):
            one = np.asarray(x @ y)
        with threads.running_on(count):
            many = np.asarray(x @ y)
        assert one.tobytes() == many.tobytes(), (isa, dtype, count)


def test_the_document_passes_the_judge_bit_for_bit() -> None:
    reg = ft.Registry.from_paths([DOCUMENT])
    rows = judge(reg, quick=True, progress=False).rows
    assert {row.kernel for row in rows} == {"matmul_bf16", "matmul_f16", "matmul_bf16_pairs"}
    assert {row.kernel: row.failures for row in rows if row.failures} == {}
    for row in rows:
        assert any("every output the declared order's bits" in s for s in row.semantics)


def test_the_thunk_refuses_what_it_cannot_run() -> None:
    kernel = contractions.cpu_entries("", "pure")["matmul_bf16"]
    a = np.ones((2, 3), ml_dtypes.bfloat16)
    with pytest.raises(TypeError, match="expected bfloat16"):
        kernel(a.astype(np.float16), a.T.astype(np.float16), out=np.empty((2, 2), np.float16))
    with pytest.raises(ValueError, match="not"):
        kernel(a, a, out=np.empty((2, 2), ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match="out must be dense"):
        kernel(a, a.T, out=np.empty((2, 4), ml_dtypes.bfloat16)[:, ::2])
