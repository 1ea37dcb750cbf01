"""powi_<dtype> thunks (PowIElementwise), bit for bit against the contract's loop in `_oracle`,
and the declared max_ulp against `x ** k` computed exactly and rounded once."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from _oracle import BF16, F16, FORMATS, Fmt, as_array, is_nan, powi_expected, special_bits
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.kernels import cpu

I32 = (-(2**31), 2**31 - 1)
EXPONENTS = (-3, -2, -1, 0, 1, 2, 3, 7, 31, -31, 32, -32, *I32, I32[0] + 1, I32[1] - 1)
FMTS = ("f32", "f64", "bf16", "f16")


def kernel(fmt: str) -> Any:
    """The linked thunk of `powi_<fmt>`, as the registry holds it."""
    return ft.registry().kernel(f"powi_{fmt}")


def run(fmt: Fmt, x: Any, k: int) -> Any:
    """Run the thunk into a garbage-filled output; check the input untouched; return the bits."""
    before = x.copy()
    out = np.full(x.shape, 0x5A, dtype=fmt.uint).view(fmt.np_dtype)
    kernel(fmt.name)(x, k, out=out)
    assert x.view(fmt.uint).tobytes() == before.view(fmt.uint).tobytes()
    return out.view(fmt.uint)


def ordinary(fmt: Fmt, n: int, seed: int) -> Any:
    """Random values spread over magnitudes 2**-8 .. 2**8, both signs, exactly representable."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.5, 1.0, n) * 2.0 ** rng.integers(-8, 9, n) * rng.choice([-1, 1], n)
    return np.array(values, dtype=np.float64).astype(fmt.np_dtype)


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("k", EXPONENTS)
def test_special_and_ordinary_values_bit_for_bit(fmt: str, k: int) -> None:
    f = FORMATS[fmt]
    x = np.concatenate([as_array(special_bits(f), f), ordinary(f, 300, k & 0xFFFF)])
    got = run(f, x, k)
    want = powi_expected(x, k, f)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (
        f"powi_{fmt} k={k}: x bits {int(x.view(f.uint)[bad[0]]):#x} gave "
        f"{int(got[bad[0]]):#x}, contract {int(want[bad[0]]):#x} ({bad.size} lanes differ)"
    )


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("shape", [(0,), (), (1,), (3, 0, 2), (5000, 3)])
def test_empty_zero_d_and_blocked_sizes(fmt: str, shape: tuple[int, ...]) -> None:
    f = FORMATS[fmt]
    x = ordinary(f, int(np.prod(shape)), 7).reshape(shape)
    for k in (3, -2, 2, -1):
        assert np.array_equal(run(f, x, k), powi_expected(x, k, f))


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("k", [-1, 0, 1, 2])
def test_small_exponents_are_numpys_bits(fmt: str, k: int) -> None:
    """1/x, 1, x and x*x equal NumPy's `x ** k` (NaN lanes aside for the half types, whose
    NumPy/ml_dtypes arithmetic does not keep payloads as the contracts do)."""
    f = FORMATS[fmt]
    x = np.concatenate([as_array(special_bits(f), f), ordinary(f, 200, 3)])
    if f in (BF16, F16):
        x = x[[not is_nan(int(b), f) for b in x.view(f.uint)]]
    with np.errstate(all="ignore"):
        want = np.asarray(x**k, dtype=f.np_dtype)
    assert np.array_equal(run(f, x, k), want.view(f.uint))


def _ulps(got: float, exact: Fraction, fmt: Fmt) -> Fraction:
    """|got - exact| in units in the last place of `fmt` at the exact (nonzero) value."""
    magnitude = abs(exact)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** e > magnitude:
        e -= 1
    emin = 2 - 2 ** (fmt.exp_bits - 1)
    return abs(Fraction(got) - exact) / Fraction(2) ** (max(e, emin) - fmt.man_bits)


RANGE_LOG2 = {"f32": 120, "f64": 1000, "bf16": 120, "f16": 14}
"""|log2| of the largest power the max_ulp audit lets any intermediate of the loop reach."""


@pytest.mark.parametrize("fmt", FMTS)
def test_declared_max_ulp_holds_against_the_exact_power(fmt: str) -> None:
    """Within the contract's stated domain (|k| <= 32, no intermediate overflow or underflow)
    the result is within max_ulp of x**k computed in exact rationals."""
    f = FORMATS[fmt]
    bound = ft.registry()[f"powi_{fmt}"].precision.max_ulp
    assert bound is not None
    rng = np.random.default_rng(11)
    worst = Fraction(0)
    for k in (-32, -31, -7, -3, 3, 5, 7, 13, 31, 32):
        limit = 2.0 ** (RANGE_LOG2[fmt] / abs(k))
        x = (rng.uniform(1 / limit, limit, 80) * rng.choice([-1.0, 1.0], 80)).astype(f.np_dtype)
        got = run(f, x, k).view(f.np_dtype)
        for xi, gi in zip(x.tolist(), got.tolist(), strict=True):
            worst = max(worst, _ulps(gi, Fraction(xi) ** k, f))
    assert worst <= bound, f"powi_{fmt}: {float(worst):.2f} ulp > declared max_ulp {bound}"
    assert worst > 0 or f in (BF16, F16)  # the audit does reach rounding error in f32/f64


@settings(max_examples=60, deadline=None)
@given(
    fmt=st.sampled_from(FMTS),
    k=st.integers(I32[0], I32[1]),
    values=st.lists(st.floats(allow_nan=True, width=32), min_size=0, max_size=40),
)
def test_any_i32_exponent_any_values(fmt: str, k: int, values: list[float]) -> None:
    f = FORMATS[fmt]
    with np.errstate(over="ignore"):  # f32 values beyond a half type's range become inf
        x = np.array(values, dtype=np.float32).astype(f.np_dtype)
    assert np.array_equal(run(f, x, k), powi_expected(x, k, f))


def test_the_thunk_checks_sizes_and_dtypes() -> None:
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="byte lengths differ"):
        kernel("f32")(x, 2, out=np.empty(3, np.float32))
    with pytest.raises(TypeError, match="expected float32"):
        kernel("f32")(x.astype(np.float64), 2, out=np.empty(8, np.float32))


def test_every_dtype_has_a_linked_thunk() -> None:
    for fmt in FMTS:
        assert f"fuel_cpu_backend::byte_kernels::powi_{fmt}" in cpu.ENTRY_POINTS
