"""The oracle's exact sums (`kernels.exact_sums`) against sums of Fractions, each rounded to the
output's format by choosing, among the candidates around it, the nearest value (ties to the
even pattern): a reference that shares nothing with the module's integer accumulation or its
round-to-odd. Special values by IEEE 754's addition; views of every layout; shapes and axes
drawn by hypothesis."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _nearest import nearest
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels.exact_sums import exact_sum
from fueltensor.testing import bits, float_format, from_bits

DTYPES = [
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
]


def reference(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The exact sum over `axes` of the finite x, rounded once; bits, of the output's shape."""
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, kept + list(axes))
    shape = tuple(x.shape[i] for i in kept)
    out = np.empty(shape, np.dtype(f"u{x.dtype.itemsize}"))
    for index in np.ndindex(*shape):
        terms = moved[index].reshape(-1)
        total = sum((Fraction(float(v)) for v in terms), Fraction(0))
        if total == 0:
            negative = terms.size > 0 and all(np.signbit(v) for v in terms)
            out[index] = bits(np.array(-0.0 if negative else 0.0, x.dtype))[()]
        else:
            out[index] = nearest(total, x.dtype)
    return out


def summed(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """exact_sum's result, as bits."""
    out = np.empty(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)
    exact_sum(x, axes, out)
    return bits(out)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_random_sums_round_once(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(7)
    scale = 10.0 ** rng.integers(-4, 4, (6, 5, 40))
    x = (rng.standard_normal((6, 5, 40)) * scale).astype(dtype)
    for axes in [(2,), (0, 2), (0, 1, 2), ()]:
        np.testing.assert_array_equal(summed(x, axes), reference(x, axes), err_msg=str(axes))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cancellation_and_dynamic_range(dtype: np.dtype[Any]) -> None:
    f = float_format(dtype)
    top, tiny = float(f.scalar(f.max_pattern)), float(f.scalar(1))
    rows = [
        [top / 2, 1.0, -top / 2, 2.0**-10],  # the big terms cancel exactly
        [1.0, tiny, -1.0, tiny],  # subnormals survive the cancellation
        [top, top, -top],  # exact: top, though a left-to-right sum overflows
        [tiny] * 4,
        [3.0, -3.0, 0.5, -0.5],  # an exact zero: +0
    ]
    x = np.array([r + [0.0] * (4 - len(r)) for r in rows], np.float64).astype(dtype)
    np.testing.assert_array_equal(summed(x, (1,)), reference(x, (1,)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_tie_broken_far_below_rounds_up_once(dtype: np.dtype[Any]) -> None:
    """1 + half an ULP + a term far below: the exact sum is past the tie, so it rounds up; a sum
    rounded to float64 first lands on the tie and then to even, down (double rounding)."""
    f = float_format(dtype)
    half, far = 2.0 ** -(f.mantissa + 1), 2.0 ** -(f.mantissa + 60)
    if float(np.array(far, dtype)) != far:  # float16 holds no such term: no double rounding
        far = float(f.scalar(1))
    x = np.array([[1.0, half, far], [1.0, half, 0.0]], np.float64).astype(dtype)
    got = summed(x, (1,))
    np.testing.assert_array_equal(got, reference(x, (1,)))
    assert got[0] == bits(np.array(1.0, dtype)) + 1 and got[1] == bits(np.array(1.0, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_overflow_gives_the_infinity_of_its_sign(dtype: np.dtype[Any]) -> None:
    f = float_format(dtype)
    top = f.scalar(f.max_pattern)
    x = np.array([[top, top], [-top, -top]], dtype)
    got = from_bits(summed(x, (1,)), dtype)
    assert got[0] == np.inf and got[1] == -np.inf


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_special_values_follow_ieee_addition(dtype: np.dtype[Any]) -> None:
    f = float_format(dtype)
    width, quiet = f.width, f.quiet_bit
    signaling = f.pattern(0, f.exponent_max, 1)
    negative_quiet = f.pattern(1, f.exponent_max, quiet | 2)
    nan_a, nan_b = from_bits(np.array([signaling, negative_quiet], f.uint), dtype)
    x = np.array(
        [
            [1.0, nan_a, nan_b, np.inf],  # the first NaN, quieted, payload kept
            [nan_b, 1.0, nan_a, 0.0],
            [np.inf, 1.0, -np.inf, 0.0],  # inf - inf: a NaN
            [-np.inf, 5.0, -np.inf, 0.0],
            [-0.0, -0.0, -0.0, -0.0],  # all -0: -0
            [-0.0, 0.0, -0.0, -0.0],
        ],
        dtype,
    )
    got = summed(x, (1,))
    assert got[0] == signaling | quiet
    assert got[1] == negative_quiet
    assert np.isnan(from_bits(got[2:3], dtype)[0])
    assert from_bits(got[3:4], dtype)[0] == -np.inf
    assert got[4] == 1 << (width - 1) and got[5] == 0


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_and_zero_dimensional(dtype: np.dtype[Any]) -> None:
    assert summed(np.zeros((3, 0), dtype), (1,)).tolist() == [0, 0, 0]  # the empty sum: +0
    assert summed(np.zeros((0, 3), dtype), (1,)).shape == (0,)
    scalar = np.array(-2.5, dtype)
    assert summed(scalar, ()) == bits(scalar)
    assert summed(np.array([-0.0], dtype), (0,)) == bits(np.array(-0.0, dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_views_sum_their_own_elements(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(3)
    base = rng.standard_normal((9, 12)).astype(dtype)
    views = [base[::-2, 1::3], base.T, base[2:, ::-1], np.broadcast_to(base[0], (4, 12))]
    for view in views:
        for axes in [(0,), (1,), (0, 1)]:
            want = reference(np.ascontiguousarray(view), axes)
            np.testing.assert_array_equal(summed(view, axes), want)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
    data=st.data(),
    dtype=st.sampled_from(DTYPES),
)
def test_every_shape_and_axes(shape: list[int], data: st.DataObject, dtype: np.dtype[Any]) -> None:
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0))))))
    axes = tuple(a for a in axes if a < len(shape))
    values = data.draw(
        st.lists(
            st.floats(-1e4, 1e4, width=16),
            min_size=int(np.prod(shape)),
            max_size=int(np.prod(shape)),
        )
    )
    x = np.array(values, np.float64).astype(dtype).reshape(shape)
    np.testing.assert_array_equal(summed(x, axes), reference(x, axes))
