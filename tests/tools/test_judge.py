"""The judge: its references model the contracts (not NumPy), it passes the bundled kernels,
and it fails deliberately wrong kernels registered from a temporary document."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import json
import math
import re
from collections.abc import Callable
from html import escape
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.fingerprint import machine
from fueltensor.kernels._chassis import IMPLEMENTATION, IMPLEMENTATIONS
from fueltensor.registry import bundled_contracts_dir
from fueltensor.testing import special_pairs
from fueltensor.tools.judge import REFERENCES, judge, round_to
from fueltensor.tools.textwidth import table_width

F32 = np.float32
BF16 = np.dtype(ml_dtypes.bfloat16)


def u32(x: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(x, F32).view(np.uint32)]


def test_maximum_and_minimum_references_keep_lhs_on_ties_and_nan_operands() -> None:
    nan_a = np.array([0x7FC00001], np.uint32).view(F32)[0]
    nan_b = np.array([0x7FC00002], np.uint32).view(F32)[0]
    a = np.array([0.0, -0.0, nan_a, 1.0, nan_a], F32)
    b = np.array([-0.0, 0.0, 1.0, nan_b, nan_b], F32)
    for kind in ("MaximumElementwise", "MinimumElementwise"):
        got = REFERENCES[kind].fn(a, b)
        assert u32(got) == [0x00000000, 0x80000000, 0x7FC00001, 0x7FC00002, 0x7FC00001]
    assert u32(np.maximum(a[:2], b[:2])) != u32(a[:2])  # NumPy's is not the contract


def test_remainder_reference_is_the_formula_in_working_precision() -> None:
    rem = REFERENCES["RemElementwise"].fn
    got = rem(np.array([5.0, 0.0, -7.0], np.float64), np.array([np.inf, -2.0, 2.0]))
    assert math.isnan(got[0])  # 5 - floor(5/inf)*inf = 5 - 0*inf = NaN (np.remainder: 5)
    assert got[1] == 0.0 and math.copysign(1.0, got[1]) == 1.0
    assert got[2] == 1.0
    a, b = F32(0.1), F32(0.01)
    q = np.floor(np.float64(a) / np.float64(b))  # f32 division rounds 10.000000149 to 10
    by_hand = F32(np.float64(a) - np.float64(F32(F32(q) * b)))
    assert u32(rem(np.array([a]), np.array([b]))) == u32(np.array([by_hand]))


def test_round_to_bfloat16_rounds_once() -> None:
    x = np.array([1.0 + 2.0**-8 + 2.0**-30, 1.0 + 2.0**-8, -(1.0 + 3 * 2.0**-8)])
    got = round_to(x, BF16).view(np.uint16)
    # above the halfway point rounds up; an exact tie goes to even (1.0); -1.01171875 -> even
    assert [hex(v) for v in got] == ["0x3f81", "0x3f80", "0xbf82"]


def test_f64_arithmetic_reference_is_exact_rational() -> None:
    add = REFERENCES["AddElementwise"].fn
    div = REFERENCES["DivElementwise"].fn
    assert add(np.array([0.1]), np.array([0.2]))[0] == 0.30000000000000004
    assert add(np.array([-0.0]), np.array([-0.0]))[0] == 0.0
    assert math.copysign(1.0, add(np.array([-0.0]), np.array([-0.0]))[0]) == -1.0
    big = np.finfo(np.float64).max
    assert div(np.array([big]), np.array([0.5]))[0] == math.inf
    assert div(np.array([1.0]), np.array([-0.0]))[0] == -math.inf
    assert div(np.array([1.0]), np.array([3.0]))[0] == 1 / 3


def test_bundled_kernels_pass_with_their_measured_figures() -> None:
    report = judge(
        kernels=["add_f32", "maximum_bf16", "rem_f64", "pow_f32", "broadcast_div"],
        quick=True,
        progress=False,
    )
    assert report.ok, report.failures
    labels = [a.label for a in report.rows]
    assert labels[:4] == ["add_f32", "maximum_bf16", "rem_f64", "pow_f32"]
    assert labels[4:] == [f"broadcast_div[{d}]" for d in ("F32", "F64", "BF16", "F16")]
    for a in report.rows:
        assert a.identical_runs == a.runs == 16
        assert a.conformance == []
        assert a.probes > 900 and a.overhead_ns > 0 and a.gb_per_s > 0
    add = report.rows[0]
    assert add.declared_ulp == 0 and add.measured_ulp == 0
    assert add.formula_bytes_per_element == 12  # "3 * n * 4" per element
    assert "add_f32" in str(report) and "<table" in report._repr_html_()


def _off_by_one_ulp(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        np.add(a, b, out=out)
        np.nextafter(out, F32(np.inf), out=out)


def _aliasing(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        np.add(a, b, out=a)
    return a


def _noisy(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        np.add(a, b, out=out)
    out.reshape(-1)[0] = np.random.default_rng().uniform()


@pytest.fixture
def wrong_doc(contract_text: Callable[..., str], write: Callable[..., Path]) -> Callable[..., Path]:
    """A temporary document declaring `max_ulp: 0` for kernel `wrong_f32`, linked to `fn`."""

    def make(fn: Callable[..., object]) -> Path:
        ft.register_provider("test-provider", {"tests::wrong_f32": fn})
        return write(contract_text(kernel="wrong_f32"))

    return make


def test_a_kernel_off_by_one_ulp_fails_its_declared_bound(
    wrong_doc: Callable[..., Path], tmp_path: Path
) -> None:
    doc = wrong_doc(_off_by_one_ulp)
    report = judge(ft.Registry.from_paths([doc]), quick=True, progress=False)
    (row,) = report.rows
    assert not report.ok and row.measured_ulp >= 1
    assert any("declared max_ulp 0" in f for f in row.failures)
    out_json, out_md = tmp_path / "j.json", tmp_path / "j.md"
    status = main(
        [
            "judge",
            "--quick",
            "--contracts",
            str(doc),
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ]
    )
    assert status == 1
    data = json.loads(out_json.read_text())
    assert data["ok"] is False and data["audits"][0]["kernel"] == "wrong_f32"
    assert "| wrong_f32 |" in out_md.read_text() and "**FAIL**" in out_md.read_text()


def _nan_in_the_first_lane(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    with np.errstate(all="ignore"):
        np.add(a, b, out=out)
    out.reshape(-1)[0] = np.nan


def test_a_nan_where_the_reference_has_a_number_is_infinitely_far(
    wrong_doc: Callable[..., Path],
) -> None:
    report = judge(
        ft.Registry.from_paths([wrong_doc(_nan_in_the_first_lane)]), quick=True, progress=False
    )
    (row,) = report.rows
    assert row.measured_ulp == math.inf and row.nan_mismatches >= 1
    (failure,) = row.failures
    # The failure names the lane as testing.lane_message does: inputs, bits got and expected.
    number = r"-?[\d.e+-]+ \(0x[0-9a-f]{8}\)"
    assert re.search(
        rf"declared max_ulp 0 \(lanes that differ: 1 NaN vs number\); worst at \(0,\): inputs "
        rf"\(a {number}, b {number}\) -> got nan \(0x7fc00000\), expected {number}: NaN vs number",
        failure,
    ), failure
    with table_width(80):
        text = str(report)
    assert max(map(len, text.splitlines())) <= 80 and "FAIL wrong_f32: precision" in text


def test_conformance_and_determinism_failures(wrong_doc: Callable[..., Path]) -> None:
    aliasing = judge(ft.Registry.from_paths([wrong_doc(_aliasing)]), quick=True, progress=False)
    problems = aliasing.rows[0].conformance
    assert any("aliasing" in p for p in problems) and any(
        "input was written" in p for p in problems
    )
    assert not aliasing.ok
    assert [f"conformance: {p}" for p in problems] == [
        f for f in aliasing.rows[0].failures if f.startswith("conformance")
    ]
    noisy = judge(ft.Registry.from_paths([wrong_doc(_noisy)]), quick=True, progress=False)
    assert any(f.startswith("determinism") for f in noisy.rows[0].failures)


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "--quick", "--kernel", "add_f64"]) == 0
    assert "add_f64" in capsys.readouterr().out
    assert main(["judge", "--quick", "--kernel", "no_such_kernel"]) == 2
    assert "no contract named" in capsys.readouterr().err
    assert main(["judge", "--kernel", "binary"]) == 2


JUDGE = importlib.import_module("fueltensor.tools.judge.audit")  # where _cpu_thunks is looked up


def test_reports_name_the_machine_in_every_form(tmp_path: Path) -> None:
    report = judge(kernels=["add_f32"], quick=True, progress=False)
    explained = ("worst ULP:", "conformance:", "ns/elem:", "GB/s:", "copy-speed ns/elem:")
    with table_width(60):  # the legend explains the columns shown, and only those
        narrow = " ".join(str(report).split())
    assert [e in narrow for e in explained] == [True, True, True, False, False]
    with table_width(None):
        wide = str(report)
    assert all(e in wide for e in explained) and "Times: medians" in wide
    where = str(machine())
    assert report.machine == machine()
    assert f"measured on: {where}" in str(report)
    assert f"Measured on: {where}" in report.to_markdown()
    assert escape(where) in report._repr_html_()
    data = json.loads(json.dumps(report.to_dict()))
    assert data["machine"] == machine().to_dict()


def test_cpu_kernels_are_measured_against_their_other_implementation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if "native" not in IMPLEMENTATIONS:
        pytest.skip("one implementation here: the compiled kernels are not built")
    (row,) = judge(kernels=["pow_f32"], quick=True, progress=False).rows
    assert row.implementations == {"pure" if IMPLEMENTATION == "native" else "native": 0}
    entry = "fuel_cpu_backend::byte_kernels::add_f32"
    monkeypatch.setattr(JUDGE, "_cpu_thunks", lambda: {"planted": {entry: _off_by_one_ulp}})
    (row,) = judge(kernels=["add_f32"], quick=True, progress=False).rows
    assert row.implementations["planted"] > 0
    assert any(f.startswith("implementations: planted differs") for f in row.failures)


def test_judge_audits_the_registry_of_use_registry(wrong_doc: Callable[..., Path]) -> None:
    # One bundled document beside the wrong one: the whole registry's judge took 12 s a run.
    bundled = bundled_contracts_dir() / "fuel-cpu-backend.md"
    reg = ft.Registry.from_paths([bundled, wrong_doc(_off_by_one_ulp)])
    with ft.use_registry(reg):
        report = ft.judge(quick=True, progress=False)
    assert not report.ok
    assert [name for name, _ in report.failures] == ["wrong_f32"]
    alone = judge(ft.Registry.from_paths([bundled]), quick=True, progress=False)
    assert len(report.rows) == len(alone.rows) + 1


def _max_canonical_nan(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """maximum, lhs on ties, but every NaN result the canonical quiet NaN (payload lost)."""
    with np.errstate(all="ignore"):
        nan = np.isnan(a) | np.isnan(b)
        np.copyto(out, np.where(nan, F32(np.nan), np.where(a >= b, a, b)))


def test_a_maximum_that_loses_nan_payloads_fails_naming_the_lane(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    ft.register_provider("test-provider", {"tests::lossy_max_f32": _max_canonical_nan})
    doc = write(contract_text(kernel="lossy_max_f32", op_kind="MaximumElementwise"))
    (row,) = judge(ft.Registry.from_paths([doc]), quick=True, progress=False).rows
    assert row.measured_ulp == 0  # every value is right: only NaN bits differ
    assert row.nan_payloads > 0 and not row.ok
    (failure,) = row.failures
    expected = f"precision: {row.nan_payloads} lanes not the reference's NaN or zero"
    assert failure.startswith(expected)
    # The probe starts with every pair of special values: the first lane whose right answer
    # is a NaN other than the canonical one is the one named.
    lhs, rhs = (s.array for s in special_pairs("float32"))
    lb, rb = lhs.view(np.uint32), rhs.view(np.uint32)
    want = np.where(np.isnan(lhs) | ~np.isnan(rhs), lb, rb)  # a NaN operand, lhs first
    lane = int(np.flatnonzero(np.isnan(want.view(F32)) & (want != 0x7FC00000))[0])
    kind = "NaN sign" if want[lane] ^ 0x7FC00000 == 0x80000000 else "NaN payload"
    assert failure.endswith(
        f"first at ({lane},): inputs (a nan (0x{lb[lane]:08x}), b {rhs[lane]:.9g} "
        f"(0x{rb[lane]:08x})) -> got nan (0x7fc00000), expected nan (0x{want[lane]:08x}): {kind}"
    ), failure
    assert set(row.differences) <= {"NaN payload", "NaN sign"}


def test_the_pow_reference_is_the_c_librarys_pow_rounded_once() -> None:
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.pow.restype, libm.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
    rng = np.random.default_rng(5)
    a = rng.uniform(0, 8, 2000).astype(F32)
    b = rng.uniform(-6, 6, 2000).astype(F32)
    want = np.array([libm.pow(float(x), float(y)) for x, y in zip(a, b, strict=True)])
    got = REFERENCES["PowElementwise"].fn(a, b)
    assert u32(got) == u32(want.astype(F32))  # f64 -> f32 in NumPy rounds once, to nearest
