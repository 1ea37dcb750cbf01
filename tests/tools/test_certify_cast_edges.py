"""certify on casts from float64 (`certify.cast_edges`): the edge set holds every midpoint of
each 8- and 16-bit target and each binade's end midpoints of float32, with their float64
neighbours and the overflow and underflow boundaries (checked here from the formats' bit fields
in integers, not from the module); the reference is the tests' MPFR rule on the edges; a kernel
that rounds one midpoint the wrong way, or saturates at the overflow boundary where its document
says inf, is found, named and rejected; the certificate's file forms are read back and accepted;
`fueltensor certify` writes them."""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from _cast_kernels import oracle, registry_of
from _casts import Format, fmt
from _casts import cast as mpfr_cast
from _cli import command

import fueltensor as ft
from fueltensor.testing import float_format
from fueltensor.tools.certify import Certificate, certify, verdict
from fueltensor.tools.certify.cast_edges import EDGE_RUN, F64CastJob, edges, sampled
from fueltensor.tools.certify.histograms import read

SMALL = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")


def field_value(p: int, f: Format) -> Fraction:
    """The value of positive pattern `p`'s fields, whatever the all-ones exponent means."""
    exp, frac = p >> f.mantissa, p & ((1 << f.mantissa) - 1)
    significand = frac | (1 << f.mantissa) if exp else frac
    return significand * Fraction(2) ** (max(exp, 1) - f.bias - f.mantissa)


def largest(f: Format) -> int:
    """The largest finite positive pattern, from the fields: below the all-ones exponent, or
    (no infinity) the all-ones exponent with all but the last fraction bit."""
    top = (f.top << f.mantissa) | ((1 << f.mantissa) - 1)
    return top - 1 if not f.has_inf else top - (1 << f.mantissa)


def f64(values: list[Fraction]) -> np.ndarray:
    """Exact float64s of `values` (each holds in 53 bits), as patterns."""
    out = np.array([float(v) for v in values], np.float64)
    assert all(Fraction(float(v)) == v for v in values)
    return out.view(np.uint64)


def with_neighbours(x: np.ndarray) -> np.ndarray:
    """Patterns `x` of positive float64s, one ULP either side, both signs."""
    near = np.concatenate([x, x + np.uint64(1), x - np.uint64(1)])
    return np.concatenate([near, near | np.uint64(1 << 63)])


def missing(want: np.ndarray, have: np.ndarray) -> list[str]:
    """The float64 patterns of `want` not in `have`, as hex (the first few)."""
    return [hex(v) for v in want[~np.isin(want, have)][:5]]


@pytest.mark.parametrize("to", SMALL)
def test_the_edges_hold_every_midpoint_of_an_8_or_16_bit_target(to: str) -> None:
    f, top = fmt(to), largest(fmt(to))
    values = [field_value(p, f) for p in range(top + 2)]  # the one past: the next binade's
    mids = [(a + b) / 2 for a, b in itertools.pairwise(values)]  # the last: the threshold
    want = with_neighbours(f64(values + mids))
    assert missing(want, edges(float_format(to))) == []
    assert float(mids[-1]) == {"float16": 65520.0, "float8_e4m3fn": 464.0}.get(to, mids[-1])


def test_the_float32_edges_hold_each_binades_end_midpoints() -> None:
    f = fmt("float32")
    ends = [p for e in range(1, 255) for p in (e << 23, (e + 1) << 23)]
    ends += [1 << k for k in range(24)]
    pats = {q for p in ends for q in range(p - EDGE_RUN, p + EDGE_RUN) if q >= 0}
    pats = sorted(q for q in pats if q <= largest(f))
    values = [field_value(p, f) for p in pats]
    mids = [(field_value(p, f) + field_value(p + 1, f)) / 2 for p in pats]
    past = field_value(largest(f) + 1, f)  # 2**128
    want = with_neighbours(f64([*values, *mids, past, Fraction(2) ** -150]))
    assert missing(want, edges(float_format("float32"))) == []
    assert float(mids[-1]) == 2.0**128 - 2.0**103  # the rounding threshold past FLT_MAX


def test_the_specials_and_the_sample_are_there() -> None:
    have = edges(float_format("float8_e5m2"))
    nans = [0x7FF8000000000000, 0x7FF0000000000001, 0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF]
    specials = [0, 0x7FF0000000000000, *nans]
    want = np.array(specials + [v | 1 << 63 for v in specials], np.uint64)
    assert missing(want, have) == []
    a, b = sampled(float_format("float32"), 100, 7), sampled(float_format("float32"), 100, 7)
    assert a.size == 500 and np.array_equal(a, b)  # midpoints with neighbours, bits, values
    assert not np.array_equal(a, sampled(float_format("float32"), 100, 8))


@pytest.mark.parametrize("to", SMALL)
def test_the_reference_is_mpfrs_on_the_edges(to: str) -> None:
    x = edges(float_format(to))
    if x.size > 5000:
        x = x[:: x.size // 5000]
    short = {"bfloat16": "bf16", "float16": "f16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
    contract = ft.registry()[f"ref_cast_f64_{short[to]}"]
    job = F64CastJob(contract, lambda x, *, out: None, ft.float64, {})
    with np.errstate(invalid="ignore"):
        want = mpfr_cast(x.view(np.float64), fmt(to).dtype).astype(np.uint64)
    got = job.reference(x)
    nan = np.isnan(x.view(np.float64))
    bad = np.flatnonzero((got != want) & ~nan)  # NaNs: the rule's form, the judge's tests'
    assert bad.size == 0, [(hex(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


MIDPOINT = 0x3FF2000000000000  # 1.125: e5m2's tie between 1 (0x3c) and 1.25, to even
THRESHOLD = 61440.0  # past e5m2's 57344 (0x7b, odd): the tie goes up, to inf


def wrong_midpoint(x: np.ndarray, bits: np.ndarray) -> None:
    """Round the one midpoint up."""
    bits[x.view(np.uint64) == MIDPOINT] += 1


def saturated_boundary(x: np.ndarray, bits: np.ndarray) -> None:
    """Give the largest finite at the overflow threshold (the document says inf)."""
    bits[np.abs(x) == THRESHOLD] -= 1


@pytest.mark.parametrize(
    ("change", "x", "got", "want"),
    [(wrong_midpoint, MIDPOINT, 0x3D, 0x3C), (saturated_boundary, 0x40EE000000000000, 0x7B, 0x7C)],
    ids=["midpoint", "overflow"],
)
def test_a_wrong_float64_cast_is_found_and_named(
    tmp_path: Path, change: object, x: int, got: int, want: int
) -> None:
    assert np.array([THRESHOLD]).view(np.uint64)[0] == 0x40EE000000000000
    reg = registry_of(
        tmp_path, {"wrong": ("ref_cast_f64_e5m2", "inf_or_nan", oracle(False, change))}
    )  # type: ignore[arg-type]
    (cert,) = certify("cast-test", ["wrong"], reg=reg, sample=64, seed=5)
    d = cert.data
    assert d["span"]["sample"] == 128 and d["span"]["seed"] == 5
    assert d["histogram"]["ulp1"] == (1 if change is wrong_midpoint else 2)  # ±61440
    assert (d["max_input"]["x"], d["max_input"]["got"], d["max_input"]["want"]) == (x, got, want)
    said = " ".join(d["verdict"])
    assert "max_ulp 0 declared, but 1 ULP" in said and f"({x:#018x})" in said
    if change is saturated_boundary:
        assert d["specials"]["inf_lost"] == 2


def test_the_cpu_certificate_is_accepted_and_read_back(tmp_path: Path) -> None:
    contract = ft.registry()["cast_f64_bf16_sat"]
    if not contract.registrable:
        pytest.skip("the compiled cast kernels are not built here")
    (cert,) = certify("cpu", [contract.name], sample=256, seed=3, out_dir=tmp_path)
    assert (
        cert.data["verdict"] == []
        and cert.data["histogram"]["exact"] == cert.data["span"]["inputs"]
    )
    loaded = Certificate.load(tmp_path / "cast_f64_bf16_sat.json")
    assert verdict(loaded, contract) == []
    row = read(tmp_path / "cast_f64_bf16_sat.txt")
    assert (row.dtype, row.target, row.swept) == (
        "float64",
        "bfloat16",
        cert.data["span"]["inputs"],
    )
    assert (
        "sample of 512 (seed 3)" in cert.text() and "every target value and midpoint" in cert.text()
    )


def test_the_command_writes_the_float64_certificates(tmp_path: Path) -> None:
    if not ft.registry()["cast_f64_e4m3"].registrable:
        pytest.skip("the compiled cast kernels are not built here")
    names = ("cast_f64_e4m3", "cast_f64_e4m3_sat")
    flags = [a for n in names for a in ("--kernel", n)]
    done = command("certify", *flags, "--sample", "100", "--seed", "2", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    for name in names:
        data = json.loads((tmp_path / f"{name}.json").read_text())
        assert data["verdict"] == [] and data["span"]["seed"] == 2
        assert (tmp_path / f"{name}.txt").read_text().startswith(f"{name} (fuel-cpu-backend")
