"""The judge holds unary kernels to their contracts: its reference is the op table's definition
correctly rounded by MPFR (checked here against values worked out by hand and against the C
library's double functions where those are proven), its cases come from the table's special
values, and it fails an exp two ULPs off and an exp(-inf) of -0, naming the input."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import gmpy2
import ml_dtypes
import numpy as np
import pytest
from _unary import (
    SEMANTICS,
    flushing_exp,
    honest_exp,
    negative_zero_exp,
    registry_of,
    two_ulp_exp,
)

from fueltensor.ops import BY_KIND, UNARY_OPS, ContractOp, OpKind
from fueltensor.testing import float_format
from fueltensor.tools.exact_pow import format_context
from fueltensor.tools.exact_unary import correctly_rounded, default_nan
from fueltensor.tools.judge import judge, round_to
from fueltensor.tools.judge.cases import cases
from fueltensor.tools.semantics import semantics_table

F32 = np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
EXP = BY_KIND[OpKind.EXP]


def u(x: np.ndarray) -> list[int]:
    """The bit patterns of `x`."""
    return x.view(f"u{x.itemsize}").tolist()


def nearest(exact: Fraction, dtype: np.dtype) -> int:
    """`exact` rounded to nearest even into `dtype` by hand (normal range), as bits."""
    f = float_format(dtype)
    e = math.floor(math.log2(abs(exact)))
    scaled = abs(exact) / Fraction(2) ** (e - f.mantissa)
    k = round(scaled)  # Python rounds a Fraction's tie to even
    value = float(Fraction(k) * Fraction(2) ** (e - f.mantissa))
    return u(np.array([math.copysign(value, exact)]).astype(dtype))[0]


def test_the_reference_rounds_once_into_the_subnormal_range() -> None:
    # 1.5 - 2**-60 smallest subnormals: rounded to 24 bits first it would be the tie 1.5,
    # which goes to even (2 subnormals); rounded once it is 1 subnormal.
    fmt = float_format(F32)
    with gmpy2.context(precision=200):
        v = gmpy2.mpfr(2) ** -149 * (gmpy2.mpfr(1.5) - gmpy2.mpfr(2) ** -60)
        half = gmpy2.mpfr(2) ** -150
    with gmpy2.context(format_context(fmt)):
        assert float(+v) == 2.0**-149
        assert float(+half) == 0.0  # the tie between 0 and the smallest goes to even: 0


def test_the_reference_matches_values_worked_out_by_hand() -> None:
    x = np.array([0.0, -0.0, 1.0, 4.0, 2.0, 0.25, 1e-45], F32)
    sqrt = correctly_rounded(BY_KIND[OpKind.SQRT], x)
    assert u(sqrt[:4]) == u(np.array([0.0, -0.0, 1.0, 2.0], F32))
    assert u(sqrt[4:5]) == [nearest(Fraction(14142135623730950488, 10**19), F32)]
    rsqrt = correctly_rounded(BY_KIND[OpKind.RSQRT], x)
    assert rsqrt[0] == np.inf and rsqrt[1] == -np.inf and rsqrt[5] == 2.0
    tanh = correctly_rounded(BY_KIND[OpKind.TANH], x)
    assert u(tanh)[6] == 1  # tanh of the smallest subnormal: itself, not a flushed zero
    exp = correctly_rounded(EXP, np.array([1.0, -np.inf, -200.0], F32))
    e = Fraction(27182818284590452353602874713527, 10**31)  # e to 31 digits
    assert u(exp) == [nearest(e, F32), 0, 0]  # exp(-inf) and an underflow are +0


def test_nan_inputs_follow_the_table_and_invalid_ones_give_the_machines_default_nan() -> None:
    nans = np.array([0x7F800001, 0xFFC00005, 0xBF800000], np.uint32).view(F32)  # sNaN, -qNaN, -1
    with np.errstate(invalid="ignore"):
        made = int((np.array([np.inf]) - np.array([np.inf])).view(np.uint64)[0])
    default = 0xFF800000 & 0xFFFFFFFF | (made >> 63 << 31) | 0x7FC00000 | (made >> 29 & 0x3FFFFF)
    assert default_nan(F32) == default
    got = {row.name: u(correctly_rounded(row, nans)) for row in UNARY_OPS}
    assert got["log"] == [0x7FC00001, 0xFFC00005, default]  # quieted, payload kept; log(-1)
    assert got["abs"] == [0x7F800001, 0x7FC00005, 0x3F800000]  # the sign bit alone
    assert got["negative"] == [0xFF800001, 0x7FC00005, 0x3F800000]


@pytest.mark.parametrize("dtype", [BF16, np.dtype(np.float16)], ids=str)
def test_every_16_bit_exp_is_the_c_librarys_double_exp_rounded_once_where_that_is_proven(
    dtype: np.dtype,
) -> None:
    f = float_format(dtype)
    x = np.arange(1 << 16, dtype=np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):  # a signaling NaN widens quietly
        wide = x.astype(np.float64)
    numbers = ~np.isnan(wide)
    libm = np.array([math.exp(v) if v < 709 else math.inf for v in wide[numbers].tolist()])
    # glibc's exp is within 1 ULP of double: a lane is proven where both ends of a 2-ULP
    # interval round alike (every lane is; the test would not pass an open one over silently)
    lo, hi = (round_to(libm * (1 + s * 2.0**-51), dtype) for s in (-1, 1))
    assert u(lo) == u(hi)
    got = correctly_rounded(EXP, x)
    assert u(got[numbers]) == u(round_to(libm, dtype))
    assert u(got[~numbers]) == [p | f.quiet_bit for p in u(x[~numbers])]


def test_an_honest_exp_passes_its_bounds(tmp_path: Path) -> None:
    reg = registry_of(
        tmp_path, ("exp_f32", "F32", 1, honest_exp), ("exp_bf16", "BF16", 0, honest_exp)
    )
    report = judge(reg, quick=True, progress=False)
    assert report.ok, report.failures
    f32, bf16 = report.rows
    assert f32.probes > 2000 and f32.measured_ulp <= 1
    assert bf16.measured_ulp == 0 and "MPFR" in bf16.reference


def test_an_exp_two_ulps_off_fails_naming_its_input(tmp_path: Path) -> None:
    reg = registry_of(tmp_path, ("exp_f32", "F32", 1, two_ulp_exp))
    report = judge(reg, quick=True, progress=False)
    (row,) = report.rows
    assert row.measured_ulp == 2
    (failure,) = [f for f in row.failures if "declared max_ulp 1" in f]
    assert "2 ULP from the reference" in failure
    assert "inputs (x 0 (0x00000000)) -> got 1.00000024 (0x3f800002), expected 1" in failure


def test_an_exp_of_minus_infinity_giving_minus_zero_fails_naming_it(tmp_path: Path) -> None:
    reg = registry_of(tmp_path, ("exp_bf16", "BF16", 0, negative_zero_exp))
    report = judge(reg, quick=True, progress=False)
    (row,) = report.rows
    assert row.measured_ulp == 0  # -0 and +0 are no ULP apart: the sign is what fails
    zero = [f for f in row.failures if f.startswith("precision:") and "zero" in f]
    assert zero and "inputs (x -inf (0xff80)) -> got -0 (0x8000), expected 0 (0x0000)" in zero[0]
    special = [f for f in row.failures if "exp(-inf)" in f]
    assert special and "gave -0 (0x8000)" in special[0]


def test_a_flushing_exp_passes_as_flushed_and_fails_as_kept(tmp_path: Path) -> None:
    # Flushed, for a unary function, is f of the input read as a zero of its sign, its result
    # flushed: exp of a subnormal is 1, not 0 (as JAX's XLA CPU computes).
    flushed = SEMANTICS.replace("subnormals: kept", "subnormals: flushed")
    kernels = [("exp_f32", "F32", 1, flushing_exp), ("exp_bf16", "BF16", 0, flushing_exp)]
    report = judge(registry_of(tmp_path, *kernels, semantics=flushed), quick=True, progress=False)
    assert report.ok, report.failures
    report = judge(registry_of(tmp_path, *kernels), quick=True, progress=False)
    for row in report.rows:  # exp(subnormal) is 1 either way: the flushed results fail
        found = [f for f in row.failures if f.startswith("semantics: subnormals kept, but exp(")]
        assert found and all("gave +0 (" in f for f in found), row.failures
        assert any(f.startswith("precision:") and "subnormal" in f for f in row.failures)


@pytest.mark.parametrize("row", UNARY_OPS, ids=lambda r: r.name)
def test_the_cases_of_every_unary_row_are_its_special_values_on_every_dtype(
    row: ContractOp,
) -> None:
    numbers = [g for g, _ in row.special if g != "NaN"]
    for dtype in (F32, np.dtype(np.float64), BF16, np.dtype(np.float16)):
        found = cases(row.op_kind.value, dtype)
        specials = [c for c in found if c.aspect in ("special", "nan", "invalid")]
        assert len(specials) == len(numbers) + 4 * (len(row.special) - len(numbers))
        assert all(c.arity == 1 and c.label.startswith(f"{row.name}(") for c in found)
        assert "subnormal operand" in {c.rule for c in found if c.aspect == "subnormals"}


def test_the_semantics_table_shows_a_unary_providers_special_cases(tmp_path: Path) -> None:
    reg = registry_of(tmp_path, ("exp_bf16", "BF16", 0, negative_zero_exp))
    table = semantics_table(["unary-test"], ["exp"], ["bfloat16"], reg=reg)
    cells = {row.case: row.cells for row in table.rows}
    assert cells["exp(-inf)"] == {"unary-test": ("-0",)}  # the cheat's, as it ran
    assert cells["exp(+0)"] == {"unary-test": ("1",)}
    assert cells["exp(sNaN·a)"] == {"unary-test": ("x quieted",)}
