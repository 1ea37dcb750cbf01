"""The kernel author's loop in Python, walked end to end (issue 32): a maximum kernel that loses
the lhs NaN payload and its FKC document are loaded and linked, explained, compared with the
built-in kernels (a second kernel of the same provider too), checked with fueltensor.testing,
judged (the failure names the lane, its inputs and the bits), fixed, and seen to pass. Every
step must keep working: if one breaks, this test says which."""

from __future__ import annotations

from pathlib import Path

import _documents as documents
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.registry import bundled_contracts_dir
from fueltensor.testing import assert_bits_equal, random_bits, special_pairs
from fueltensor.tools.textwidth import table_width


def section(kernel: str, entry: str) -> str:
    """One kernel's section of the author's document: F32 maximum, bit-exact."""
    return documents.section(
        kernel,
        "MaximumElementwise",
        "F32",
        source="my-max-source",
        entry_point=f"my_max::{entry}",
        blurb="F32 maximum; NaN-propagating (lhs NaN first), lhs wins a ±0 tie.",
        max_ulp=0,
        notes="returns an operand's bits",
        prose="Maximum of two same-shape F32 tensors: a NaN operand is returned unchanged (lhs "
        "first), and the lhs wins a tie of +0 and -0.",
    )


DOCUMENT = (
    documents.front("my-max", "my-max-source", "my_max", "v1", "my-max")
    + section("my_max_f32", "max_f32")
    + section("my_max_f32_where", "max_f32_where")
)


def lossy_max(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    """The bug: every NaN result is NumPy's canonical NaN, the operand's payload and sign lost."""
    nan = np.isnan(lhs) | np.isnan(rhs)
    np.copyto(out, np.where(nan, np.float32(np.nan), np.where(lhs >= rhs, lhs, rhs)))


def fixed_max(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    """The fix: pick an operand, never make a value (lhs when it is NaN, or >= a non-NaN rhs)."""
    np.copyto(out, np.where(np.isnan(lhs) | ((lhs >= rhs) & ~np.isnan(rhs)), lhs, rhs))


def link(kernel: object, document: Path) -> ft.Registry:
    """Register the provider's kernels (the fixed one always second) and load its document."""
    ft.register_provider("my-max", {"my_max::max_f32": kernel, "my_max::max_f32_where": fixed_max})
    return ft.Registry.from_paths([bundled_contracts_dir(), document])


def compare(reg: ft.Registry) -> ft.ComparisonReport:
    """maximum on every pair of special values and on random bit patterns, compared."""
    lhs, rhs = (s.tensor() for s in special_pairs("float32"))
    with ft.use_registry(reg), ft.compare_backends("cpu", "my-max") as report:
        ft.maximum(lhs, rhs)
        ft.maximum(random_bits("float32", 4096, rng=1), random_bits("float32", 4096, rng=2))
    return report


def test_the_author_loop_in_python(tmp_path: Path) -> None:
    document = tmp_path / "my-max.md"
    document.write_text(DOCUMENT, encoding="utf-8")

    # 1. The document loads and links; the contract reads back.
    reg = link(lossy_max, document)
    assert reg["my_max_f32"].provider.name == "my-max"
    assert "MaximumElementwise" in str(reg["my_max_f32"])

    # 2. The planner sees both kernels and says why the built-in one runs.
    lhs, rhs = (s.tensor() for s in special_pairs("float32"))
    with ft.use_registry(reg):
        plan = ft.explain(ft.maximum, lhs, rhs)
    assert plan.kernel_name == "maximum_f32"
    for mine in ("my_max_f32", "my_max_f32_where"):
        assert "admissible but outranked" in plan.rejected[mine][0]

    # 3. Compared with the built-in kernel: both of my kernels ran, the bug shows as NaN bits.
    report = compare(reg)
    rows = {c.kernels: c for c in report.comparisons[:2]}
    lossy = rows["maximum_f32", "my_max_f32"]
    where = rows["maximum_f32", "my_max_f32_where"]
    assert lossy.nan_payloads > 0 and lossy.mismatches == lossy.nan_payloads  # values right
    assert where.mismatches == 0
    with table_width(80):
        table = str(report)
    assert "bit-equal" in table and max(map(len, table.splitlines())) <= 80
    with pytest.raises(AssertionError, match=r"my_max_f32: .*-> my_max_f32 nan \(0x7fc00000\)"):
        report.assert_equal()

    # 4. The same check with fueltensor.testing, on my kernel alone.
    with ft.use_registry(reg):
        builtin = ft.maximum(lhs, rhs)
        with ft.use_backend("my-max"):
            got = ft.maximum(lhs, rhs)
    with pytest.raises(AssertionError) as raised:
        assert_bits_equal(got, builtin, inputs={"lhs": lhs, "rhs": rhs})
    message = str(raised.value)
    assert "NaN sign" in message and "NaN payload" in message
    assert "inputs (lhs nan (0xffc00000), rhs nan (0x7fc00000)) -> got nan (0x7fc00000)" in message

    # 5. The judge's verdict names the lane, its inputs, the bits got and expected.
    verdict = ft.judge(reg, kernels=["my_max_f32", "my_max_f32_where"], quick=True, progress=False)
    assert [a.ok for a in verdict.rows] == [False, True]
    (label, why), *_ = verdict.failures
    assert label == "my_max_f32" and "lanes not the reference's NaN or zero" in why
    assert "inputs (lhs nan (0x" in why and "-> got nan (0x7fc00000), expected nan (0x" in why
    with table_width(80):
        text = str(verdict)
    assert "conformance" in text and "FAIL my_max_f32: precision" in text

    # 6. Fixed, linked again: the comparison, the assertion and the judge all pass.
    reg = link(fixed_max, document)
    again = compare(reg)
    assert all(c.compared and c.mismatches == 0 for c in again)
    again.assert_equal()
    with ft.use_registry(reg):
        with ft.use_backend("my-max"):
            got = ft.maximum(lhs, rhs)
        assert_bits_equal(got, ft.maximum(lhs, rhs), inputs={"lhs": lhs, "rhs": rhs})
    assert ft.judge(reg, kernels=["my_max_f32"], quick=True, progress=False).ok
