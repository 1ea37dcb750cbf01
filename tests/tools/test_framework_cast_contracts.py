"""The frameworks as cast providers (contracts/numpy-cast.md, torch-cast.md, jax-cast.md): the
judge accepts each framework's cast contracts and fails one whose document claims the other
overflow rule; `ft.astype` under `use_backend("torch")` runs PyTorch's cast; and
`compare_backends("cpu", "torch", "numpy")` around a quantize step to float8_e4m3fn names
exactly the lanes where PyTorch saturates and ml_dtypes gives NaN, lanes this test finds from
the inputs and the format alone. The writer (benchmarks/framework_cast_contracts.py) declares
a measured rule and refuses a pair no declaration describes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from _extras import ROOT, extra

import fueltensor as ft
from fueltensor.core.errors import NoKernelError
from fueltensor.kernels._chassis import IMPLEMENTATION
from fueltensor.registry import bundled_contracts_dir, provider_environment
from fueltensor.tools.judge import JudgeReport, judge

torch = extra("torch", "torch")

CAST = "CastElementwise"
E4M3_MAX, E4M3_TIE = 448.0, 464.0
"""float8_e4m3fn's largest finite, and the midpoint between it and the 480 the format lacks
(a tie, to the even 448): anything above overflows."""


def _names(provider: str) -> list[str]:
    return [c.name for c in ft.registry().for_op(CAST) if c.provider.name == provider]


def _failures(report: JudgeReport) -> dict[str, list[str]]:
    """Each failing kernel's failures, and a measured fact the judge found broken where the
    document names another machine (`judge.semantics.remeasured` makes those notes)."""
    found = {a.kernel: list(a.failures) for a in report.rows if not a.ok}
    for a in report.rows:
        broken = [n for n in a.semantics if not n.endswith("every measured fact holds here")]
        if broken:
            found.setdefault(a.kernel, []).extend(broken)
    return found


@pytest.mark.parametrize("provider", ["numpy", "torch"])
def test_every_framework_cast_contract_passes_the_judge(provider: str) -> None:
    names = _names(provider)
    assert len(names) > 20  # every pair but the double-rounded ones
    report = judge(kernels=names, quick=True, progress=False, provider=provider)
    assert len(report.rows) == len(names) and not _failures(report)


def test_jax_cast_contracts_with_a_flush_and_a_free_nan_pass_the_judge() -> None:
    extra("jax", "jax")
    names = ["jax_cast_f32_f64", "jax_cast_bf16_e5m2"]  # subnormals flushed; NaN [any]
    assert set(names) <= set(_names("jax"))
    report = judge(kernels=names, quick=True, progress=False, provider="jax")
    assert len(report.rows) == 2 and not _failures(report)


def _claiming(tmp_path: Path, provider: str, kernel: str, overflow: str) -> ft.Registry:
    """`provider`'s cast document cut to `kernel`'s contract, its overflow rule changed."""
    text = (bundled_contracts_dir() / f"{provider}-cast.md").read_text(encoding="utf-8")
    front = text.split("\n---\n", 1)[0] + "\n---\n"
    here = provider_environment(provider)  # measured here: the judge's failures stay failures
    assert here is not None
    front = re.sub(
        r"measured_on: .*",
        f'measured_on: {{framework: "{here.framework}", isa: {here.isa}}}',
        front,
    )
    found = re.search(rf"```fkc\nkernel: {kernel}\n.*?```", text, re.S)
    assert found is not None
    fkc = re.sub(r"overflow: \w+}", f"overflow: {overflow}}}", found.group(0))
    assert fkc != found.group(0)
    path = tmp_path / f"{provider}-cast.md"
    path.write_text(f"{front}# mutated\n\n## {kernel}\n\n{fkc}\n", encoding="utf-8")
    return ft.Registry.from_paths([path]).joined(provider)


@pytest.mark.parametrize(
    ("provider", "kernel", "claim"),
    [
        ("torch", "torch_cast_f32_e4m3_sat", "inf_or_nan"),
        ("numpy", "numpy_cast_f32_e4m3", "saturate"),
    ],
)
def test_a_framework_cast_document_claiming_the_other_overflow_rule_fails(
    tmp_path: Path, provider: str, kernel: str, claim: str
) -> None:
    reg = _claiming(tmp_path, provider, kernel, claim)
    report = judge(reg, kernels=[kernel], quick=True, progress=False)
    found = _failures(report).get(kernel, [])
    assert any(f.startswith("precision:") for f in found), found
    assert any("0x7e" in f and "0x7f" in f for f in found), found  # 448 against NaN, named


def test_astype_under_use_backend_torch_runs_torchs_cast() -> None:
    values = np.array([1.0, 1 + 2**-11, 65520.0, -1e-7, 3.0e38, np.inf], np.float32)
    x = ft.asarray(values)
    with ft.use_backend("torch"), ft.trace() as plans:
        got = ft.astype(x, ft.float16)
        sat = ft.astype(x, ft.float8_e4m3fn, saturate=True)
    assert [p.kernel.name for p in plans if p.kernel] == [
        "torch_cast_f32_f16",
        "torch_cast_f32_e4m3_sat",
    ]
    theirs = torch.from_numpy(values).to(torch.float16).view(torch.int16).numpy()
    assert np.array_equal(np.asarray(got).view(np.int16), theirs)
    assert float(np.asarray(sat)[-1].astype(np.float32)) == E4M3_MAX  # inf saturates
    # PyTorch declares no inf-or-NaN cast to float8_e4m3fn: the call is refused, saying why.
    with ft.use_backend("torch"), pytest.raises(NoKernelError, match="overflow 'saturate'"):
        ft.astype(x, ft.float8_e4m3fn)


@pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="fuel-cpu-backend's casts are compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)
def test_compare_backends_names_every_lane_where_torch_saturates_and_ml_dtypes_does_not() -> None:
    rng = np.random.default_rng(45)
    edges = [0.0, 1.0, -1.0, 447.0, E4M3_MAX, 449.0, 463.0, E4M3_TIE, 464.00003, 465.0, 480.0]
    edges += [500.0, -500.0, 1e4, 3.4e38, np.inf, -np.inf, np.nan, 1e-9, -E4M3_TIE]
    values = np.concatenate([edges, rng.uniform(-1000, 1000, 200)]).astype(np.float32)
    x = ft.asarray(values.reshape(11, 20))
    with ft.compare_backends("cpu", "torch", "numpy") as report:
        ft.astype(x, ft.float8_e4m3fn)  # a quantize step, asking for inf or NaN beyond 448
    rows = {c.provider: c for c in report}
    # Beyond the tie at 464 (infinities included) the default rule gives NaN, saturation 448;
    # at or below it both round to a finite value. NaN inputs give NaN on both.
    with np.errstate(invalid="ignore"):
        beyond = np.abs(values.reshape(11, 20)) > E4M3_TIE
    expected = [tuple(int(i) for i in lane) for lane in np.argwhere(beyond)]
    assert len(expected) > 100
    assert rows["torch"].kernels == ("cast_f32_e4m3", "torch_cast_f32_e4m3_sat")
    assert list(rows["torch"].lanes) == expected
    assert rows["torch"].mismatches == len(expected)
    assert "declares overflow saturate where the call asks for inf_or_nan" in rows["torch"].note
    assert rows["numpy"].kernels == ("cast_f32_e4m3", "numpy_cast_f32_e4m3")
    assert rows["numpy"].lanes == () and rows["numpy"].mismatches == 0  # ml_dtypes: the rule
    assert "torch_cast_f32_e4m3_sat declares overflow saturate" in report.text()


def test_the_writer_declares_what_was_measured_and_refuses_what_no_contract_can_say(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its scripts import each other
    import framework_cast_contracts as w
    from framework_casts import RULE, Finding

    def found(**off: Finding) -> dict[str, Finding]:
        return {a: off.get(a, Finding(v)) for a, v in RULE.items()}

    pair = ("float32", "float8_e4m3fn")
    saturating = w.declare(*pair, found(overflow=Finding("saturate", 938, 944)))
    assert isinstance(saturating, w.Declared) and saturating.overflow == "saturate"
    assert saturating.forms == ("canonical",) and saturating.nan_bits
    twice = w.declare("float64", "bfloat16", found(rounding=Finding("double rounding via float32")))
    assert twice == "rounding: double rounding via float32 (0 of 0 lanes)"
    moved = w.declare(*pair, found(position=Finding("dependent", note="at length 1")))
    assert isinstance(moved, str) and moved.startswith("position: dependent")
    nan_only = w.declare("float16", "float32", found(position=Finding("nan_bits")))
    assert isinstance(nan_only, w.Declared) and nan_only.forms == ("any",)
    assert nan_only.sign == "any" and not nan_only.nan_bits
    shifted = w.declare("float32", "float16", found(nan=Finding("kept")))
    assert isinstance(shifted, w.Declared) and shifted.forms == ("any",)  # payload 1: no form
