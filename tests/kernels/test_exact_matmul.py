"""The oracle's matmul (`kernels.exact_matmul`, contracts/fuel-reference-backend-matmul.md) bit
for bit against an independent reference written from the formula: each output's dot product in
Fractions, rounded once to nearest even by `round_fraction` below (not the oracle's rounding);
NaN, infinities, signed zeros, subnormals, overflow, K = 0 and 1, 1-D operands through the
namespace, stacks broadcast, transposed, strided and flipped views; hypothesis for shapes."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _matmul import reference, same
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels.exact_matmul import exact_dots, exact_matmul
from fueltensor.kernels.reference import ENTRY_POINTS

DTYPES = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)


def oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    out = np.full(shape, 7, a.dtype)
    exact_matmul(a, b, out)
    return out


def values(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, spread: int) -> np.ndarray:
    """Normal values times powers of two in +-spread (the format's range permitting)."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-spread, spread + 1, shape)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_random_and_wide_range_products_are_exact_rounded_once(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    spread = {2: 6, 4: 40, 8: 500}[np.dtype(dtype).itemsize]
    for m, k, n in ((3, 7, 4), (1, 1, 1), (5, 33, 2), (2, 0, 3)):
        a, b = values(rng, (m, k), dtype, spread), values(rng, (k, n), dtype, spread)
        same(oracle(a, b), reference(a, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_cancellation_overflow_subnormals_and_zeros(dtype: Any) -> None:
    info = ml_dtypes.finfo(dtype)
    big, tiny = float(info.max), float(info.smallest_subnormal)
    x = np.array([[1.0, 1e-3, -1.0], [big, big, -big], [tiny, tiny, 0.0], [-0.0, 0.0, -0.0]], dtype)
    y = np.array([[1.0, 0.5, -0.0], [3.0, 2.0, 0.0], [1.0, 1.0, -0.0]], dtype)
    same(oracle(x, y), reference(x, y))
    same(oracle(-x, y), reference(-x, y))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_nan_and_infinities_at_the_first_and_last_positions(dtype: Any) -> None:
    rng = np.random.default_rng(2)
    for special in (np.nan, np.inf, -np.inf):
        for at in (0, 4):
            a, b = values(rng, (3, 5), dtype, 3), values(rng, (5, 4), dtype, 3)
            a[1, at] = special
            b[at, 2] = 0.0 if special != special else special
            b[4 - at, 3] = -np.inf
            same(oracle(a, b), reference(a, b))


def test_a_nan_operand_is_returned_quieted_with_its_payload() -> None:
    a = np.array([[1.0, 2.0]], np.float32)
    b = np.array([[1.0], [1.0]], np.float32)
    a.view(np.uint32)[0, 1] = 0x7F800123  # a signaling NaN with a payload
    got = oracle(a, b)
    assert got.view(np.uint32)[0, 0] == 0x7FC00123
    # bfloat16's too, with no warning (ml_dtypes' isnan of a signaling NaN raises `invalid`;
    # warnings are errors in the suite)
    h = np.array([[1.0, 2.0]], ml_dtypes.bfloat16)
    h.view(np.uint16)[0, 0] = 0x7F81
    half = oracle(h, np.ones((2, 1), ml_dtypes.bfloat16))
    assert half.view(np.uint16)[0, 0] == 0x7FC1


def test_f64_products_beyond_the_range_are_exact() -> None:
    """Products of F64 operands past float64's range (2^1000 * 2^1000) or below its smallest
    subnormal cancel exactly: TwoProduct works on frexp's fractions."""
    big, small = 2.0**1000, 2.0**-1000
    a = np.array([[big, -big, 1.0], [small, small, 2.0**-1074]])
    b = np.array([[big], [big], [3.0]])
    same(oracle(a, b), np.array([[3.0], [2.0]]))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_views_and_broadcast_stacks_equal_their_dense_copies(dtype: Any) -> None:
    rng = np.random.default_rng(3)
    a = values(rng, (2, 1, 4, 6), dtype, 4)
    b = values(rng, (3, 5, 6), dtype, 4)[:, ::-1, :].transpose(0, 2, 1)  # flipped, transposed
    got = oracle(a[..., ::-1][..., ::-1], b)
    dense = oracle(np.ascontiguousarray(np.broadcast_to(a, (2, 3, 4, 6))), np.ascontiguousarray(b))
    same(got, dense)
    for s in range(2):
        for t in range(3):
            same(got[s, t], reference(a[s, 0], b[t]))
    strided = values(rng, (8, 12), dtype, 4)[::2, ::3]
    same(oracle(strided, strided.T), reference(strided, np.ascontiguousarray(strided.T)))


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 4), k=st.integers(0, 6), n=st.integers(0, 4),
    stack=st.sampled_from([(), (1,), (2,), (3, 1)]), dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**16),
)  # fmt: skip
def test_shapes(m: int, k: int, n: int, stack: tuple[int, ...], dtype: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = values(rng, (*stack, m, k), dtype, 3), values(rng, (k, n), dtype, 3)
    got = oracle(a, b)
    assert got.shape == (*stack, m, n)
    for index in np.ndindex(*stack):
        same(got[index], reference(a[index], b))


def test_exact_dots_give_the_sums_and_magnitudes() -> None:
    a = np.array([[1.0, -(2.0**-60), 3.0]])
    b = np.array([[2.0**-60], [1.0], [0.5]])
    sums, magnitudes = exact_dots(a, b)
    assert sums == [Fraction(3, 2)] and magnitudes == [Fraction(3, 2) + 2 * Fraction(2) ** -60]


def test_the_thunks_check_dtypes_and_shapes_first() -> None:
    fn = ENTRY_POINTS["fuel_reference_backend::ops::ref_matmul_f32"]
    a = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="expected float32"):
        fn(a, a.T.astype(np.float64), out=np.empty((2, 2), np.float32))
    with pytest.raises(ValueError, match=r"not \(\.\.\., M, K\)"):
        fn(a, a, out=np.empty((2, 3), np.float32))
    with pytest.raises(ValueError, match="dense of shape"):
        fn(a, a.T, out=np.empty((3, 3), np.float32))
    out = np.empty((2, 2), np.float32)
    fn(a, a.T, out=out)
    assert (out == 3).all()
