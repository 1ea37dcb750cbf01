"""The judge's pow reference is pow correctly rounded into the dtype: MPFR's pow (computed here
directly, on every finite lane) wherever the wider C library pow rounded once is not proven;
without MPFR those lanes are left out of the measure, never guessed."""

from __future__ import annotations

import numpy as np
import pytest

from fueltensor.testing import float_format, random_bits, special_pairs
from fueltensor.tools import exact_pow
from fueltensor.tools.judge.references import REFERENCES

pytest.importorskip("gmpy2")

POW = REFERENCES["PowElementwise"]


def _operands(dtype: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every special pair, random patterns, and integer powers near 1 (exact midpoints)."""
    fmt = float_format(dtype)
    sa, sb = (s.array for s in special_pairs(dtype))
    ra, rb = (np.asarray(random_bits(dtype, n, rng=seed)) for seed in (1, 2))
    near_one = (1 + np.arange(1, 64) * 2.0 ** -(fmt.mantissa // 2 + 1)).astype(fmt.dtype)
    twos = np.full(near_one.size, 2, fmt.dtype)
    return np.concatenate([sa, ra, near_one]), np.concatenate([sb, rb, twos])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_pow_reference_is_correctly_rounded(dtype: str) -> None:
    fmt = float_format(dtype)
    a, b = _operands(dtype, 3000)
    got = POW.fn(a, b)
    with np.errstate(all="ignore"):
        x, y = a.astype(np.float64), b.astype(np.float64)
        wide = np.power(x.astype(np.longdouble), y.astype(np.longdouble))
    lanes = np.isfinite(wide) & (wide != 0) & np.isfinite(x) & np.isfinite(y)
    want = _mpfr_pow(x[lanes], y[lanes], fmt.precision, fmt.bias)
    assert (got[lanes].astype(np.float64) == want).all()


def _mpfr_pow(x: np.ndarray, y: np.ndarray, precision: int, bias: int) -> np.ndarray:
    """MPFR's pow rounded once to `precision` bits with the IEEE exponent range of a format of
    that `bias` (subnormals too), written here from MPFR's conventions: values m * 2**e with m
    in [1/2, 1), so IEEE's smallest normal 2**(1 - bias) has e = 2 - bias and the smallest
    subnormal e = 2 - bias - (precision - 1); the largest finite e = bias + 1."""
    import gmpy2

    ctx = gmpy2.context(
        precision=precision,
        emin=2 - bias - (precision - 1),
        emax=bias + 1,
        subnormalize=True,
    )
    out = []
    for a, b in zip(x.tolist(), y.tolist(), strict=True):
        xa, yb = gmpy2.mpfr(a, 64), gmpy2.mpfr(b, 64)
        with gmpy2.context(ctx):
            out.append(float(xa**yb))
    return np.array(out)


def test_without_mpfr_the_unproven_lanes_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """1.0625**2 = 1 + 2**-3 + 2**-8 is a bf16 tie: unproven, so skipped without MPFR."""
    a = np.array([1.0625, 1.5], float_format("bfloat16").dtype)
    b = np.array([2.0, 0.75], float_format("bfloat16").dtype)
    assert POW.skip is not None
    assert POW.skip(a, b).tolist() == [False, False]
    monkeypatch.setattr(exact_pow, "available", lambda: False)
    assert POW.skip(a, b).tolist() == [True, False]
