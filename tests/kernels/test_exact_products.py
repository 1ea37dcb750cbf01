"""The oracle's exact products (`kernels.exact_products`) bit for bit against products of
Fractions rounded to the nearest value of the format (`_nearest`, written from IEEE 754's
definition, sharing nothing with the module's integer significands or its rounding): NaN
payloads (the first NaN quieted, sign and payload kept), inf·0, signed zeros, infinities,
subnormal elements and results, overflow and underflow of the result only, a tie broken far
below; empty and 0-d inputs; views of every layout; rows of any bit pattern by hypothesis."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _nearest import product_bits
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels import exact_products
from fueltensor.kernels.exact_products import exact_prod
from fueltensor.kernels.exact_sums import rows
from fueltensor.testing import bits, float_format, from_bits

DTYPES = [
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
]


def multiplied(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """exact_prod's result, as bits."""
    out = np.empty(tuple(n for i, n in enumerate(x.shape) if i not in axes), x.dtype)
    exact_prod(x, axes, out)
    return bits(out)


def reference(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Each output's product from the formula, as bits of the output's shape."""
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    found = [product_bits(row) for row in rows(np.ascontiguousarray(x), axes)]
    return np.array(found, f"u{x.dtype.itemsize}").reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_special_values_follow_ieee_multiplication(dtype: np.dtype[Any]) -> None:
    f = float_format(dtype)
    signaling = f.pattern(0, f.exponent_max, 1)
    negative_quiet = f.pattern(1, f.exponent_max, f.quiet_bit | 2)
    nan_a, nan_b = from_bits(np.array([signaling, negative_quiet], f.uint), dtype)
    table = [
        [2.0, nan_a, nan_b, np.inf],  # the first NaN, quieted, payload kept
        [nan_b, 0.0, nan_a, np.inf],
        [np.inf, 1.0, -0.0, 3.0],  # inf·0: the default NaN
        [-np.inf, 5.0, -2.0, 1.0],
        [-0.0, 2.0, -3.0, 1.0],  # (-)(-): +0
        [-0.0, -0.0, -0.0, 1.0],
    ]
    got = multiplied(np.array(table, dtype), (1,))
    assert got[0] == signaling | f.quiet_bit and got[1] == negative_quiet
    assert got[2] == f.pattern(0, f.exponent_max, f.quiet_bit)
    assert got[3] == f.pattern(0, f.exponent_max, 0) and got[4] == 0
    assert got[5] == 1 << (f.width - 1)
    np.testing.assert_array_equal(got, reference(np.array(table, dtype), (1,)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_range_is_the_results_alone(dtype: np.dtype[Any]) -> None:
    """Partial products that would overflow or underflow do not, the result rounds once: to a
    subnormal, to zero, to the infinity; a tie broken far below rounds up."""
    f = float_format(dtype)
    top, least = float(f.scalar(f.max_pattern)), float(f.scalar(1))
    half = 2.0 ** -(f.mantissa + 1)
    table = [
        [top, 4.0, 0.25, 1.0],  # top exactly, though top·4 overflows
        [top, top, -1.0, 1.0],  # -inf
        [least, 2.0**-1, 1.0, 1.0],  # a tie at half the least subnormal: +0 (even)
        [least, 3.0 * 2.0**-1, 1.0, 1.0],  # 1.5 least: 2 least (the tie to even)
        [least, 2.0**4, 2.0**-3, -1.0],  # a subnormal times numbers, exact
        [1.0 + 2.0 * half, 1.0 + 2.0 * half, 1.0, 1.0],  # (1 + u)^2 = 1 + 2u + u^2: 1 + 2u
    ]
    x = np.array(table).astype(dtype)
    got = multiplied(x, (1,))
    np.testing.assert_array_equal(got, reference(x, (1,)))
    values = from_bits(got, dtype).astype(np.float64)
    assert values[0] == top and values[1] == -np.inf and values[2] == 0 and values[3] == 2 * least


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_zero_dimensional_and_views(dtype: np.dtype[Any]) -> None:
    one = int(bits(np.array(1.0, dtype))[()])
    assert multiplied(np.zeros((3, 0), dtype), (1,)).tolist() == [one] * 3  # the empty product
    scalar = np.array(-2.5, dtype)
    assert multiplied(scalar, ()) == bits(scalar)
    rng = np.random.default_rng(3)
    base = (1 + rng.uniform(-0.1, 0.1, (9, 12)) * rng.choice([-1, 1], (9, 12))).astype(dtype)
    views = [base[::-2, 1::3], base.T, base[2:, ::-1], np.broadcast_to(base[0], (4, 12))]
    for view in views:
        for axes in [(0,), (1,), (0, 1)]:
            np.testing.assert_array_equal(multiplied(view, axes), reference(view, axes))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(DTYPES), m=st.integers(0, 6))
def test_rows_of_any_bit_patterns(data: st.DataObject, dtype: np.dtype[Any], m: int) -> None:
    f = float_format(dtype)
    patterns = data.draw(
        st.lists(st.integers(0, (1 << f.width) - 1), min_size=3 * m, max_size=3 * m)
    )
    x = from_bits(np.array(patterns, f.uint), dtype).reshape(3, m)
    np.testing.assert_array_equal(multiplied(x, (1,)), reference(x, (1,)))


@contextmanager
def _cut(kept: int) -> Iterator[None]:
    """Partial products cut to `kept` leading bits (the module keeps KEPT, 192, which short rows
    never reach), the rows that fall back to every bit counted in FELL_BACK."""
    whole = exact_products._product

    def counted(row: list[int]) -> int:
        FELL_BACK.append(len(row))
        return whole(row)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exact_products, "KEPT", kept)
        patch.setattr(exact_products, "_product", counted)
        yield


FELL_BACK: list[int] = []


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(), dtype=st.sampled_from(DTYPES), m=st.integers(0, 300), kept=st.integers(16, 80)
)
def test_long_rows_from_their_leading_bits(
    data: st.DataObject, dtype: np.dtype[Any], m: int, kept: int
) -> None:
    """Rows whose partial products are cut to their leading bits, and those whose cut product's
    interval straddles a rounding boundary (then multiplied in full), round as the formula does."""
    values = data.draw(st.lists(st.floats(0.5, 2.0), min_size=2 * m, max_size=2 * m))
    signs = data.draw(st.lists(st.booleans(), min_size=2 * m, max_size=2 * m))
    x = np.array([-v if s else v for v, s in zip(values, signs, strict=True)]).astype(dtype)
    with _cut(kept):
        got = multiplied(x.reshape(2, m), (1,))
    np.testing.assert_array_equal(got, reference(x.reshape(2, m), (1,)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_cut_product_near_a_boundary_is_multiplied_in_full(dtype: np.dtype[Any]) -> None:
    """With 16 bits kept, 64 rows of 200 values cannot all round from their leading bits: some
    fall back, and every row still rounds as the formula does."""
    x = (2.0 ** np.random.default_rng(7).uniform(-1, 1, (64, 200))).astype(dtype)  # in range
    FELL_BACK.clear()
    with _cut(16):
        got = multiplied(x, (1,))
    assert FELL_BACK, "no row fell back to its full product"
    np.testing.assert_array_equal(got, reference(x, (1,)))
