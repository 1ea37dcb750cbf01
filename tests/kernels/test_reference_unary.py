"""The oracle's unary kernels (fuel-reference-backend, `broadcast_<op>`) against the correctly
rounded value worked out here by MPFR from the op table's definition: within their declared
bound (1 ULP for F32, BF16 and F16, as the notes prove; the contracts' max_ulp, 2, for F64),
exact for sqrt's narrow dtypes, |x| and -x, with the NaN lanes bit for bit as declared (a NaN
input quieted with its payload, |x| and -x changing the sign bit alone, an invalid operation
this machine's default NaN), signed zeros and infinities exact."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from _exact import correctly_rounded, ulps

import fueltensor as ft
from fueltensor.kernels import reference
from fueltensor.ops import UNARY_OPS, ContractOp
from fueltensor.testing import float_format, random_bits, special_values

DTYPES = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)
EXACT = ("sqrt", "abs", "negative")
"""The functions whose oracle is exact in the narrow dtypes (sqrt: p' >= 2p + 2)."""


def inputs(dtype: np.dtype, seed: int) -> np.ndarray:
    """Every special value of the dtype in both signs, and random bit patterns (NaN payloads,
    subnormals and infinities turn up), and the region around 1 and each function's edges."""
    edges = [0.5, 0.75, 1 - 2**-9, 1 + 2**-9, 88.7, -103.9, -709.7827128933841, -720.5, -744.0]
    wide = np.concatenate([np.linspace(-12, 12, 97), edges])  # sigmoid(-720): a subnormal
    return np.concatenate(
        [
            special_values(dtype).array,
            np.asarray(random_bits(dtype, 384, rng=seed)),
            wide.astype(dtype),
        ]
    )


def oracle(row: ContractOp, x: np.ndarray) -> np.ndarray:
    """The oracle's kernel of `row` run on `x` directly (dense, as the planner hands it)."""
    out = np.empty_like(x)
    reference.ENTRY_POINTS[f"fuel_reference_backend::ops::broadcast_{row.kernel_op}"](x, out=out)
    return out


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("row", UNARY_OPS, ids=lambda r: r.name)
def test_the_oracle_is_within_its_bound_of_the_correctly_rounded_value(
    row: ContractOp, dtype: type
) -> None:
    f = float_format(dtype)
    x = inputs(np.dtype(dtype), seed=UNARY_OPS.index(row))
    got = oracle(row, x).view(f.uint)
    want = correctly_rounded(row, x)
    magnitude = want & ~f.uint.type(f.sign_bit)
    inf = f.exponent_max << f.mantissa
    nan = magnitude > inf
    np.testing.assert_array_equal(got[nan], want[nan])  # NaN bits as declared
    fixed = (magnitude == 0) | (magnitude == inf)  # signed zeros and infinities: exact
    np.testing.assert_array_equal(got[fixed], want[fixed])
    declared = ft.registry()[f"broadcast_{row.kernel_op}"].precision.max_ulp
    narrow = 0 if row.name in EXACT else 1  # the notes' bound for F32, BF16, F16
    bound = declared if f.width == 64 and row.name not in EXACT else narrow
    assert declared is not None and bound <= declared
    worst = int(ulps(got[~nan], want[~nan], f).max(initial=0))
    assert worst <= bound, f"{row.name} {f.dtype}: {worst} ULP from the correctly rounded value"


def test_the_oracle_rounds_to_bfloat16_once() -> None:
    # 1 + 2**-8 + 2**-30 lies just above the bf16 tie 1 + 2**-8 (between 1 and 1 + 2**-7):
    # rounded to f32 first it is that tie, which goes to even (1); rounded once, 1 + 2**-7.
    wide = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30)])
    assert np.asarray(wide.astype(ml_dtypes.bfloat16), np.float64).tolist() == [1.0, -1.0]
    once = reference.round_once(wide, np.dtype(ml_dtypes.bfloat16))
    assert np.asarray(once, np.float64).tolist() == [1 + 2**-7, -(1 + 2**-7)]


def test_the_oracle_checks_what_it_is_given() -> None:
    kernel = reference.ENTRY_POINTS[
        f"fuel_reference_backend::ops::broadcast_{UNARY_OPS[0].kernel_op}"
    ]
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="shape"):
        kernel(x, out=np.empty(3, np.float32))
    with pytest.raises(TypeError, match="float32, float64, bfloat16, float16"):
        kernel(x, out=np.empty(4, np.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        kernel(np.ones(8, np.float32)[::2], out=np.empty(4, np.float32))
