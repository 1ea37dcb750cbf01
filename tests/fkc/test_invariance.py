"""Invariance claims (`semantics.invariance`): read from a document and refused when malformed
or at odds with `position`; audited by the judge on this machine: fuel-cpu-backend's claims hold,
and a kernel whose bits depend on the thread count, the instruction-set body or an element's
position fails the claim it makes, naming the element, its inputs and both results."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _documents import one_off
from _extras import needs

import fueltensor as ft
from fueltensor.kernels import threads
from fueltensor.kernels._chassis import NATIVE
from fueltensor.kernels.threads import threads_for
from fueltensor.registry import bundled_contracts_dir, provider_isa_switches
from fueltensor.tools.judge.invariance import SPLIT_SIZE, audit_invariance

REAL = ft.registry().kernel("add_bf16")


def _registry(tmp_path: Path, kernel: Callable[..., Any], semantics: str) -> ft.Registry:
    """Provider `one-off` (one BF16 addition, max_ulp 0) with the given semantics, linked to
    `kernel`."""
    path = tmp_path / "one-off.md"
    path.write_text(one_off("0", semantics), encoding="utf-8")
    ft.register_provider("one-off", {"one_off::add_bf16": kernel})
    return ft.Registry.from_paths([bundled_contracts_dir(), path])


def _claims(*claims: str, position: str = "") -> str:
    line = f"\n  position: {position}" if position else ""
    return f"semantics:\n  source: [measurement]{line}\n  invariance: [{', '.join(claims)}]"


def test_claims_are_read_and_bad_ones_refused(tmp_path: Path) -> None:
    reg = _registry(tmp_path, REAL, _claims("threads", "isa", "position"))
    sem = reg["add_one_off_bf16"].semantics
    assert sem is not None and sem.invariance == ("threads", "isa", "position")
    assert sem.effective_position == "invariant" and sem.to_dict()["invariance"][0] == "threads"
    with pytest.raises(ft.ContractError, match=r"semantics\.invariance.*speed"):
        _registry(tmp_path, REAL, _claims("speed"))
    with pytest.raises(ft.ContractError, match="claims position, but position is declared"):
        _registry(tmp_path, REAL, _claims("position", position="dependent"))


def test_the_cpu_kernels_claims_hold_here() -> None:
    """fuel-cpu-backend claims threads and isa for every kernel; a quick judge of some holds."""
    reg = ft.registry()
    assert all(reg[n].semantics.invariance == ("threads", "isa") for n in ("add_bf16", "pow_f32"))
    report = ft.judge(kernels=["add_bf16", "div_f16", "pow_f32", "rem_bf16"], quick=True)
    assert report.ok, [r.failures for r in report.rows]


def _flip_first(out: np.ndarray) -> None:
    out.reshape(-1).view(np.uint16)[0] ^= 1


@pytest.mark.skipif(
    not hasattr(REAL, "__fueltensor_native__") or len(NATIVE.ISAS) < 2,
    reason="the compiled kernels are not linked (pure NumPy), or one instruction-set body",
)
def test_a_kernel_that_depends_on_the_body_fails_isa(tmp_path: Path) -> None:
    def by_isa(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        REAL(lhs, rhs, out=out)
        current = NATIVE.select_isa(NATIVE.ISAS[0])
        NATIVE.select_isa(current)
        if current == NATIVE.ISAS[0]:
            _flip_first(out)

    by_isa.__fueltensor_native__ = REAL.__fueltensor_native__  # type: ignore[attr-defined]
    reg = _registry(tmp_path, by_isa, _claims("isa"))
    [row] = ft.judge(reg, ["add_one_off_bf16"], quick=True).rows
    failures = [f for f in row.failures if f.startswith("invariance isa")]
    assert len(failures) == len(NATIVE.ISAS) - 1  # the first body against each other one
    for failure, other in zip(failures, NATIVE.ISAS[1:], strict=True):
        assert f"{NATIVE.ISAS[0]} against {other}: 1 of" in failure
        assert "first element 0 (" in failure


@pytest.mark.skipif(
    not hasattr(REAL, "__fueltensor_native__") or threads.cores() < 2,
    reason="the compiled kernels are not linked (pure NumPy), or one core here",
)
def test_a_kernel_that_depends_on_the_thread_count_fails_threads(tmp_path: Path) -> None:
    def by_threads(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        REAL(lhs, rhs, out=out)
        if threads_for(REAL, lhs.size) > 1:
            _flip_first(out)

    by_threads.__fueltensor_native__ = REAL.__fueltensor_native__  # type: ignore[attr-defined]
    reg = _registry(tmp_path, by_threads, _claims("threads"))
    [row] = ft.judge(reg, ["add_one_off_bf16"], quick=True).rows
    [failure] = [f for f in row.failures if f.startswith("invariance threads")]
    every = min(threads.cores(), threads.MAX_THREADS)  # SPLIT_SIZE makes more blocks than that
    want = f"1 thread against {every}: 1 of {SPLIT_SIZE} elements differ, first element 0"
    assert want in failure


def test_a_python_kernel_is_not_audited_and_says_so(tmp_path: Path) -> None:
    """A kernel that follows neither fueltensor's threads nor its bodies: notes, no failure."""

    def plain(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        REAL(lhs, rhs, out=out)

    reg = _registry(tmp_path, plain, _claims("threads", "isa"))
    [row] = ft.judge(reg, ["add_one_off_bf16"], quick=True).rows
    assert row.ok
    assert any("invariance threads" in n and "not audited" in n for n in row.semantics)
    assert any("invariance isa" in n and "not audited" in n for n in row.semantics)


def test_a_reductions_claims_on_an_elementwise_contract_are_noted(tmp_path: Path) -> None:
    """layout and batch are a reduction's claims (judge.reductions): an elementwise contract
    may make them, and the judge says it did not audit them."""
    reg = _registry(tmp_path, REAL, _claims("layout", "batch"))
    [row] = ft.judge(reg, ["add_one_off_bf16"], quick=True).rows
    assert row.ok
    for claim in ("layout", "batch"):
        assert f"invariance {claim}: a reduction's claim (judge.reductions), not audited here" in (
            row.semantics
        )


def test_a_position_claim_is_audited_by_the_position_sweep(tmp_path: Path) -> None:
    def by_position(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        REAL(lhs, rhs, out=out)
        if out.size > 3:
            out.reshape(-1).view(np.uint16)[3] ^= 1

    reg = _registry(tmp_path, by_position, _claims("position"))
    [row] = ft.judge(reg, ["add_one_off_bf16"], quick=True).rows
    assert any("position declared invariant, but" in f for f in row.failures), row.failures


def _claiming_isa(name: str) -> tuple[Any, Any]:
    """Framework contract `name` as if it claimed `isa`, and its kernel."""
    reg = ft.registry()
    c = reg[name]
    assert c.semantics is not None
    sem = dataclasses.replace(c.semantics, invariance=("isa",))
    return dataclasses.replace(c, semantics=sem), reg.kernel(name)


@pytest.mark.skipif(not provider_isa_switches("numpy"), reason="NumPy dispatches no SIMD here")
def test_numpy_under_its_cpu_feature_switch_in_a_fresh_process() -> None:
    """NumPy's float16 division with every dispatched SIMD target disabled (a fresh process
    under NPY_DISABLE_CPU_FEATURES) gives its default bits: an isa claim would hold."""
    contract, kernel = _claiming_isa("numpy_div")
    assert audit_invariance(contract, kernel, ft.float16) == ([], [])


@needs("torch", "torch")
def test_torch_nan_bits_depend_on_its_cpu_capability() -> None:
    """PyTorch's bf16 multiplication under ATEN_CPU_CAPABILITY=default (a fresh process) makes
    other NaNs than its vector kernels here: an isa claim would fail, naming the element."""
    if not provider_isa_switches("torch"):
        pytest.skip("PyTorch runs its default capability here: nothing to switch")
    contract, kernel = _claiming_isa("torch_mul_bf16")
    failures, _ = audit_invariance(contract, kernel, ft.bfloat16)
    assert failures and "default against ATEN_CPU_CAPABILITY=default" in failures[0]
    assert "first element" in failures[0] and "nan (0x" in failures[0]
