"""float64 to bfloat16 rounds once, never through float32: on float64 values just either side of
a bfloat16 midpoint (the midpoint float32 rounds them to, whose tie then goes to even), rounding
twice and rounding once differ, and fuel-cpu-backend's kernel, the oracle and the judge's
reference all give the once-rounded bits of the tests' MPFR reference (tests/_casts.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from _casts import cast as mpfr_cast

import fueltensor as ft
from fueltensor.kernels.casting import cast_bits
from fueltensor.tools.judge.casts import expected as judge_expected

BF16 = np.dtype(ml_dtypes.bfloat16)


def near_midpoints() -> np.ndarray:
    """float64 values a relative 2^-30 either side of bfloat16 midpoints (subnormal, normal and
    the top binade, both signs): float32 rounds each to the midpoint itself."""
    low = np.arange(1, 0x7F7F, 7, dtype=np.uint16)  # every seventh finite positive pattern
    a = low.view(BF16).astype(np.float64)
    b = (low + 1).view(BF16).astype(np.float64)
    mid = (a + b) / 2  # exact: bfloat16 values have 8 significant bits
    x = np.concatenate([mid * (1 + 2.0**-30), mid * (1 - 2.0**-30)])
    return np.concatenate([x, -x])


def test_float64_to_bfloat16_is_not_through_float32() -> None:
    if not ft.registry()["cast_f64_bf16"].registrable:
        pytest.skip("the compiled cast kernels are not built here")
    x = near_midpoints()
    once = mpfr_cast(x, BF16)
    twice = mpfr_cast(x.astype(np.float32), BF16)  # NumPy's float64 -> float32 rounds to nearest
    assert np.all(x.astype(np.float32).astype(np.float64) != x)  # each a float32 tie, not x
    differ = once != twice
    assert differ.sum() > x.size // 8  # the ties whose even neighbour is not x's side
    kernel = ft.astype(ft.asarray(x), ft.bfloat16)
    assert "cast_f64_bf16 via fuel-cpu-backend" in repr(
        ft.explain(ft.astype, ft.asarray(x), ft.bfloat16)
    )
    got = np.asarray(kernel).view(np.uint16)
    oracle = cast_bits(x, BF16, False)
    judge = judge_expected(x, BF16, False, "quieted", False).view(np.uint16)
    for name, bits in (("cpu kernel", got), ("oracle", oracle), ("judge", judge)):
        wrong = np.flatnonzero(bits != once)
        assert wrong.size == 0, (
            name,
            [(float(x[i]), hex(bits[i]), hex(once[i])) for i in wrong[:3]],
        )
    one = np.array([1 + 2.0**-8 + 2.0**-30])  # docs/casts.md's example: up once, to 1 twice
    assert np.asarray(ft.astype(ft.asarray(one), ft.bfloat16)).astype(np.float64)[0] == 1 + 2.0**-7
