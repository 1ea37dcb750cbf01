"""Odd sizes: 0-d and size-0 operands, 32 dimensions, size-1 axes with arbitrary strides, and
shape arithmetic past 2**31 elements (planned and priced exactly, never allocated)."""

from __future__ import annotations

import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _oracle import FORMATS, cpu_expected
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft

OPS = ("add", "subtract", "multiply", "divide", "remainder", "pow", "maximum", "minimum")
FLOATS = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)


def values(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3 + 0.5).astype(dtype)


ORACLE_OP = dict(
    zip(OPS, ("add", "sub", "mul", "div", "mod", "pow", "maximum", "minimum"), strict=True)
)
ORACLE_FMT = {np.dtype(f.np_dtype): f for f in FORMATS.values()}


def expected(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`op(a, b)` with NumPy broadcasting, element by element from the independent scalar
    reference in tests/_oracle.py (the contract formulas; + - * / of the broadcasting oracle
    give the same bits as the CPU kernels, design.md)."""
    fmt = ORACLE_FMT[np.result_type(a, b)]
    wa, wb = (x.astype(fmt.np_dtype).reshape(-1) for x in np.broadcast_arrays(a, b))
    out = np.asarray(cpu_expected(ORACLE_OP[op], wa, wb, fmt)).view(fmt.np_dtype)
    return out.reshape(np.broadcast_shapes(a.shape, b.shape))


def same_bits(a: ft.FuelTensor, b: np.ndarray) -> None:
    got = np.asarray(a)
    assert got.dtype == b.dtype and got.shape == b.shape
    assert got.tobytes() == np.ascontiguousarray(b).tobytes()


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
def test_zero_d_operands_compute_what_one_element_arrays_do(op: str, dtype: Any) -> None:
    a, b = values((), dtype, 1), values((), dtype, 2)
    fn = getattr(ft, op)
    got = fn(ft.asarray(a), ft.asarray(b))
    assert got.shape == () and got.ndim == 0 and got.size == 1
    same_bits(got, expected(op, a, b))
    row = values((3,), dtype, 3)
    wide = fn(ft.asarray(a), ft.asarray(row))
    same_bits(wide, expected(op, a, row))


def test_zero_d_inplace_and_scalars() -> None:
    t = ft.asarray(np.float32(2.0))
    t += 3.0
    t *= ft.asarray(np.float32(2.0))
    assert t.shape == () and float(np.asarray(t)) == 10.0


@pytest.mark.parametrize(
    ("left", "right", "out"),
    [
        ((0,), (0,), (0,)),
        ((0, 3), (3,), (0, 3)),
        ((2, 0), (1, 0), (2, 0)),
        ((0,), (), (0,)),
        ((4, 0, 2), (4, 1, 2), (4, 0, 2)),
    ],
)
@pytest.mark.parametrize("op", OPS)
def test_size_zero_operands_give_empty_results(
    op: str, left: tuple[int, ...], right: tuple[int, ...], out: tuple[int, ...]
) -> None:
    a = ft.asarray(np.zeros(left, np.float32))
    b = ft.asarray(np.zeros(right, np.float32))
    with ft.trace() as plans:
        got = getattr(ft, op)(a, b)
    assert got.shape == out and got.size == 0 and got.dtype == ft.float32
    assert np.asarray(got).shape == out
    assert plans and plans[0].size == 0


def test_size_zero_shapes_that_do_not_broadcast_say_so() -> None:
    with pytest.raises(ValueError, match=r"cannot be broadcast together \(axis -1: 0 vs 2\)"):
        ft.asarray(np.zeros(0, np.float32)) + ft.asarray(np.zeros(2, np.float32))


def test_empty_inplace_leaves_the_storage() -> None:
    buffer = np.arange(6, dtype=np.float32)
    t = ft.asarray(buffer)[3:3]
    t += ft.asarray(np.ones(0, np.float32))
    np.testing.assert_array_equal(buffer, np.arange(6, dtype=np.float32))


@pytest.mark.parametrize("op", OPS)
def test_thirty_two_dimensions_compute_like_two(op: str) -> None:
    a, b = values((2, 3), np.float32, 4), values((3,), np.float32, 5)
    fn = getattr(ft, op)
    flat = expected(op, a, b)
    deep_a = ft.reshape(ft.asarray(a), (1,) * 30 + (2, 3))
    got = fn(deep_a, ft.asarray(b))
    assert got.ndim == 32
    same_bits(got, flat.reshape((1,) * 30 + (2, 3)))
    flipped = fn(ft.flip(deep_a), ft.asarray(b[::-1].copy()))
    same_bits(flipped, flat[::-1, ::-1].reshape((1,) * 30 + (2, 3)))


def test_more_dimensions_than_numpy_allows_are_refused() -> None:
    t = ft.asarray(np.zeros(1, np.float32))
    with pytest.raises(ValueError, match="65 dimensions requested; at most 64 are supported"):
        ft.reshape(t, (1,) * 65)


@settings(max_examples=100, deadline=None)
@given(
    strides=st.lists(st.integers(-(2**62), 2**62), min_size=3, max_size=3),
    op=st.sampled_from(OPS),
)
def test_size_one_axes_take_any_stride(strides: list[int], op: str) -> None:
    """(1, 4, 1) with arbitrary strides on its size-1 axes is as dense as (4,): the planner adds
    no Contiguize, and the results are the dense ones bit for bit."""
    buffer = values((4,), np.float32, 6)
    other = values((1, 4, 1), np.float32, 7)
    view = ft.as_strided(ft.asarray(buffer), (1, 4, 1), (strides[0], 1, strides[2]), 0)
    assert view.layout.contiguous and not view.layout.strided
    fn = getattr(ft, op)
    plan = ft.explain(fn, view, ft.asarray(other))
    assert "Contiguize" not in [s.kind for s in plan.steps], str(plan)
    same_bits(fn(view, ft.asarray(other)), expected(op, buffer.reshape(1, 4, 1), other))
    v = ft.flip(view)
    same_bits(v, buffer[::-1].reshape(1, 4, 1))


BIG = 2**31 + 1


@pytest.mark.parametrize(("op", "counts"), [("add", (BIG, 1)), ("maximum", (BIG, BIG))])
def test_plans_past_two_to_the_31_are_sized_and_priced_exactly_without_allocating(
    op: str, counts: tuple[int, int]
) -> None:
    x = ft.broadcast_to(ft.asarray(np.ones(1, np.float32)), (BIG,))
    y = ft.asarray(np.ones(1, np.float32))
    tracemalloc.start()
    try:
        plan = ft.explain(getattr(ft, op), x, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    assert plan.out_shape == (BIG,) and plan.size == BIG
    assert plan.kernel is not None
    with ft.use_backend("reference"):
        oracle = ft.explain(getattr(ft, op), x, y) if op == "add" else None
    # worked by hand from the documents: broadcast_add charges n*4 + a_count*4 + b_count*4,
    # add_f32 and maximum_f32 3 * n * 4 (after BroadcastTo + Contiguize of both operands, each
    # made dense block by block and charged its one element read)
    formulas = {
        "broadcast_add": "n * dtype_bytes + a_count * dtype_bytes + b_count * dtype_bytes",
        "add_f32": "3 * n * 4",
        "maximum_f32": "3 * n * 4",
    }
    by_hand = {
        "broadcast_add": BIG * 4 + counts[0] * 4 + counts[1] * 4,
        "add_f32": 3 * BIG * 4,
        "maximum_f32": 3 * BIG * 4,
    }
    for priced in (plan, oracle):
        if priced is None:
            continue
        assert priced.kernel is not None
        assert str(priced.kernel.cost.bytes_moved) == formulas[priced.kernel.name]
        (kernel_step,) = [s for s in priced.steps if s.kind == "Kernel"]
        assert kernel_step.bytes == by_hand[priced.kernel.name]
        assert kernel_step.bytes > 2**33  # no 32-bit wrap-around anywhere on the way
    assert plan.cost == 3 * BIG * 4 + 2 * 4  # each operand's one element, read once


def test_huge_views_index_and_flip_exactly() -> None:
    buffer = np.arange(3, dtype=np.float64)
    big = ft.broadcast_to(ft.asarray(buffer), (BIG, 2**20, 3))
    assert big.size == BIG * 2**20 * 3
    corner = big[BIG - 1, 2**20 - 1]
    np.testing.assert_array_equal(np.asarray(corner), buffer)
    flipped = ft.flip(big)
    assert flipped.strides == (0, 0, -1) and flipped.offset == 2
    np.testing.assert_array_equal(np.asarray(flipped[BIG - 1, 0]), buffer[::-1])
    with pytest.raises(ValueError, match="more than 2\\*\\*63 - 1"):
        ft.broadcast_to(ft.asarray(buffer), (2**62, 2**2, 3))
