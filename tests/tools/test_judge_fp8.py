"""The judge on the FP8 arithmetic contracts: the bundled ones pass, and a kernel is held to what
its document declares: one that rounds one tie the wrong way, or saturates where the document
says NaN, fails with the pair named. The cheats are the CPU kernel with one thing changed,
registered as a provider of the test's own under a copy of its contract."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import _documents as documents
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE
from fueltensor.registry import bundled_contracts_dir
from fueltensor.tools.judge import JudgeReport, judge

pytestmark = pytest.mark.skipif(
    NATIVE is None or IMPLEMENTATION != "native",
    reason="fuel-cpu-backend's FP8 kernels are compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)
Kernel = Callable[..., None]


def fp8_names() -> list[str]:
    """fueltensor's own registrable two-operand contracts taking an FP8 dtype (the CPU and
    oracle FP8 documents'; the frameworks' join only when named)."""
    fp8 = {"F8_E4M3FN", "F8_E5M2"}
    return [
        c.name
        for c in ft.registry()
        if c.registrable and len(c.inputs) == 2 and fp8 & set(c.inputs[0].dtypes)
        if not c.provider.when_named
    ]


def registry_of(folder: Path, kernels: dict[str, Kernel]) -> ft.Registry:
    """Provider `fp8-test`: each kernel under a copy of fuel-cpu-backend's `add_e4m3` contract."""
    text = (bundled_contracts_dir() / "fuel-cpu-backend-fp8.md").read_text()
    found = re.search(r"```fkc\nkernel: add_e4m3\n.*?```", text, re.S)
    assert found is not None
    ft.register_provider("fp8-test", {f"fp8_test::{n}": fn for n, fn in kernels.items()})
    doc = documents.front("fp8-test", "fp8-test", "t", "v1", "fp8-test")
    for name in kernels:
        fkc = found.group(0).replace("kernel: add_e4m3", f"kernel: {name}")
        fkc = re.sub(r'entry_point: "[^"]*"', f'entry_point: "fp8_test::{name}"', fkc)
        fkc = fkc.replace('kernel_source: "portable-cpu"', 'kernel_source: "fp8-test"')
        doc += f"\n## {name}\n\n{fkc}\n"
    path = folder / "fp8.md"
    path.write_text(doc, encoding="utf-8")
    return ft.Registry.from_paths([path])


def failures(report: JudgeReport, name: str) -> list[str]:
    return [f for a in report.rows if a.kernel == name for f in a.failures]


def test_the_bundled_fp8_contracts_pass_the_judge() -> None:
    names = fp8_names()
    assert len(names) == 20, names
    report = judge(kernels=names, quick=True, progress=False)
    assert report.rows and all(a.ok for a in report.rows), [
        f for a in report.rows for f in a.failures
    ]


def test_ml_dtypes_fp8_contracts_pass_the_judge() -> None:
    """contracts/numpy-fp8.md, written from measurement, holds: ml_dtypes' + - * /, maximum,
    minimum, power and remainder on both formats (rhs on a ±0 tie, NaNs without payload)."""
    names = [
        c.name
        for c in ft.registry()
        if c.provider.name == "numpy" and len(c.inputs) == 2
        if {"F8_E4M3FN", "F8_E5M2"} & set(c.inputs[0].dtypes)
    ]
    assert len(names) == 8, names
    report = judge(kernels=names, quick=True, progress=False)
    assert len(report.rows) == 16 and all(a.ok for a in report.rows), [
        f for a in report.rows for f in a.failures
    ]


def test_a_tie_rounded_up_and_a_saturating_kernel_fail_naming_the_pair(tmp_path: Path) -> None:
    honest = ft.registry().kernel("add_e4m3")

    def tie_up(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        """1 + 2^-4, a tie, rounded up to 0x39 instead of to even, 0x38."""
        honest(lhs, rhs, out=out)
        pick = (lhs.view(np.uint8) == 0x38) & (rhs.view(np.uint8) == 0x18)
        out.view(np.uint8)[pick] = 0x39

    def saturates(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        """Finite sums beyond 464 made ±448 where the document says NaN."""
        honest(lhs, rhs, out=out)
        total = lhs.astype(np.float64) + rhs.astype(np.float64)
        bits = out.view(np.uint8)
        bits[np.isfinite(total) & (total > 464)] = 0x7E
        bits[np.isfinite(total) & (total < -464)] = 0xFE

    reg = registry_of(tmp_path, {"tie_up": tie_up, "saturates": saturates, "honest": honest})
    report = judge(reg, quick=True, progress=False)
    assert not failures(report, "honest")
    (tie,) = failures(report, "tie_up")
    assert "(0x38)" in tie and "(0x18)" in tie and "got 1.12 (0x39), expected 1 (0x38)" in tie
    (sat,) = failures(report, "saturates")
    assert "got 448 (0x7e), expected nan (0x7f)" in sat, sat
