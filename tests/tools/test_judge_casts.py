"""The judge on cast contracts: the bundled ones pass, and a cast kernel is held to what its
document declares: one that saturates where its document says inf or NaN fails, and the
reverse; one input rounded the wrong way is found and named; a NaN whose payload is dropped
under `result: [quieted]` fails the semantics audit. The cheats are the oracle's cast with one
thing changed, registered as a provider of the test's own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _cast_kernels import oracle, registry_of
from _casts import FLOATS, probes
from _casts import cast as reference_cast

import fueltensor as ft
from fueltensor.testing import float_format
from fueltensor.tools.judge import JudgeReport, judge
from fueltensor.tools.judge.casts import cases as cast_cases
from fueltensor.tools.judge.casts import expected


def failures(report: JudgeReport, name: str) -> list[str]:
    return [f for a in report.rows if a.kernel == name for f in a.failures]


def test_the_bundled_cast_contracts_pass_the_judge() -> None:
    # fueltensor's own; the frameworks' (`dispatch: when_named`): test_framework_cast_contracts
    reg = ft.registry()
    names = [
        c.name for c in reg.for_op("CastElementwise") if c.registrable and reg.joins(c.provider)
    ]
    report = judge(kernels=names, quick=True, progress=False)
    assert len(report.rows) == len(names) and all(a.ok for a in report.rows), [
        f for a in report.rows for f in a.failures
    ]


def test_a_saturating_kernel_declaring_inf_or_nan_fails_and_the_reverse(tmp_path: Path) -> None:
    reg = registry_of(
        tmp_path,
        {
            "honest": ("ref_cast_f32_e4m3", "inf_or_nan", oracle(False)),
            "saturates": ("ref_cast_f32_e4m3", "inf_or_nan", oracle(True)),
            "overflows": ("ref_cast_f32_e4m3_sat", "saturate", oracle(False)),
        },
    )
    report = judge(reg, quick=True, progress=False)
    assert not failures(report, "honest")
    for name in ("saturates", "overflows"):
        found = failures(report, name)
        assert any(f.startswith("precision:") for f in found), (name, found)
    # The lane named: 1e9 (or inf) is +448 (0x7e) one way and NaN (0x7f) the other.
    assert any("0x7e" in f and "0x7f" in f for f in failures(report, "saturates"))


def test_one_input_rounded_the_wrong_way_is_found_and_named(tmp_path: Path) -> None:
    tie = 0x3F808000  # 1 + 2^-8: a bfloat16 tie, to even: 0x3f80

    def wrong(x: np.ndarray, bits: np.ndarray) -> None:
        if x.dtype == np.float32:
            bits[x.view(np.uint32) == tie] = 0x3F81

    reg = registry_of(
        tmp_path, {"one_off": ("ref_cast_f32_bf16", "inf_or_nan", oracle(False, wrong))}
    )
    report = judge(reg, progress=False)  # a full audit: every tie of the target
    (audit,) = report.rows
    assert audit.measured_ulp == 1 and "0x3f81" in audit.worst and "0x3f80" in audit.worst
    assert not audit.ok


def test_a_nan_payload_dropped_under_quieted_fails(tmp_path: Path) -> None:
    def canonical(x: np.ndarray, bits: np.ndarray) -> None:
        """Every float16 NaN made +-0x7e00: the sign kept, the payload dropped."""
        nan = ((bits & 0x7C00) == 0x7C00) & ((bits & 0x3FF) != 0)
        bits[nan] = (bits[nan] & 0x8000) | 0x7E00

    reg = registry_of(
        tmp_path, {"drops": ("ref_cast_f32_f16", "inf_or_nan", oracle(False, canonical))}
    )
    report = judge(reg, quick=True, progress=False)
    (audit,) = report.rows
    assert any(
        f.startswith("semantics: nan operand either, result [quieted]") for f in audit.failures
    )


def flushed(x: np.ndarray) -> np.ndarray:
    """`x` with every subnormal a zero of its sign (DAZ)."""
    f = float_format(x.dtype)
    p = x.view(f.uint)
    tiny = (p & ~np.array(f.sign_bit, f.uint)) < (1 << f.mantissa)
    out: np.ndarray = np.where(tiny, p & np.array(f.sign_bit, f.uint), p).view(x.dtype)
    return out


@pytest.mark.parametrize("src", FLOATS)
def test_the_judges_reference_is_the_independent_one(src: str) -> None:
    """tests/_casts.py (MPFR) and the judge's (integers) agree from every source format to
    every other: every pattern of an 8-bit source, else 6000 of its probes (`_casts.probes`:
    the target's values, midpoints and their neighbours, specials, random patterns; 16-bit
    sources: every pattern's sample), both overflow rules; with `flush`, MPFR's cast of the
    inputs read as zeros with its subnormal results written as zeros; NaNs `canonical` too."""
    rng = np.random.default_rng(1)
    s = float_format(getattr(ft, src))
    for dst in (d for d in FLOATS if d != src):
        t, to = float_format(getattr(ft, dst)), np.dtype(getattr(ft, dst).np)
        x = probes(src, dst) if s.width > 16 else np.arange(1 << s.width, dtype=s.uint)
        x = x.view(s.dtype) if s.width == 8 else rng.choice(x.view(s.dtype), 6000)
        form = "canonical" if dst == "float8_e4m3fn" else "quieted"
        for saturate in (False, True):
            got = expected(x, to, saturate, form, False).view(t.uint)
            np.testing.assert_array_equal(got, reference_cast(x, dst, saturate), (dst, saturate))
        want = reference_cast(flushed(x), dst, False).view(to)
        got = expected(x, to, False, form, True)
        np.testing.assert_array_equal(got.view(t.uint), flushed(want).view(t.uint), (dst, "flush"))
        if t.has_inf:  # `canonical`: a NaN's sign and the quiet bit alone, no payload
            quieted = reference_cast(x, dst, False)
            bare = t.sign_bit | t.pattern(0, t.exponent_max, 0) | t.quiet_bit
            with np.errstate(invalid="ignore"):  # signaling NaNs
                nan = np.isnan(x.astype(np.float64))
            want = np.where(nan, quieted & np.array(bare, t.uint), quieted)
            got = expected(x, to, False, "canonical", False).view(t.uint)
            np.testing.assert_array_equal(got, want, (dst, "canonical"))


@pytest.mark.parametrize("src", ["float32", "float8_e4m3fn"])
def test_the_cast_cases_cover_nans_and_subnormals(src: str) -> None:
    s, t = float_format(getattr(ft, src)), float_format(ft.float16)
    found = cast_cases(s, t)
    aspects = {a for a, _, _ in found}
    assert aspects == {"nan", "subnormals"}
    nans = [x for a, _, x in found if a == "nan"]
    assert nans and all(s.is_nan(x) for x in nans)
