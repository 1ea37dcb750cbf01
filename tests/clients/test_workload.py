"""examples/workload.py, the workload the op-family issues measure themselves on: it runs as a
script, and its block (layer norm, MLP, masked softmax) agrees with a float64 NumPy
transcription written from the formulas, not from fueltensor's code."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from types import ModuleType

import numpy as np
import pytest
from _extras import OUTSIDE, ROOT

import fueltensor as ft
from fueltensor.ops import BY_KIND, PLANNED_REDUCTIONS, UNARY_OPS, OpKind
from fueltensor.tools.compare import label

SUM, MAX = (BY_KIND[kind.value] for kind in (OpKind.SUM, OpKind.MAX))

SCRIPT = ROOT / "examples" / "workload.py"


@pytest.fixture(scope="module")
def workload() -> ModuleType:
    spec = importlib.util.spec_from_file_location("workload", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reference(x: np.ndarray, p: dict[str, np.ndarray], eps: float) -> np.ndarray:
    """The block in float64, from its definition: layer norm (biased variance), a GELU (tanh
    form) MLP with a residual connection, softmax over the valid columns (0 elsewhere)."""
    h = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    h = h * p["gamma"] + p["beta"]
    u = h @ p["w1"] + p["b1"]
    g = 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u**3)))
    y = h + g @ p["w2"] + p["b2"]
    keep = p["valid"] > 0.5
    e = np.where(keep, np.exp(np.where(keep, y, -np.inf) - y[:, keep].max(-1, keepdims=True)), 0)
    return e / e.sum(-1, keepdims=True)


def test_the_block_agrees_with_a_float64_transcription(workload: ModuleType) -> None:
    x, params = workload.inputs()
    got = np.asarray(workload.block(x, params))
    wide = {k: np.asarray(v).astype(np.float64) for k, v in params._asdict().items()}
    want = _reference(np.asarray(x).astype(np.float64), wide, workload.EPS)
    assert got.dtype == np.float32 and got.shape == (workload.BATCH, workload.FEATURES)
    padding = np.asarray(params.valid) == 0
    assert padding.any() and (got[:, padding] == 0).all()  # exp(-inf) is +0 exactly
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, rtol=1e-5)


def test_the_same_seed_gives_the_same_bits(workload: ModuleType) -> None:
    first = np.asarray(workload.block(*workload.inputs()))
    again = np.asarray(workload.block(*workload.inputs()))
    other = np.asarray(workload.block(*workload.inputs(seed=1)))
    assert first.tobytes() == again.tobytes() and first.tobytes() != other.tobytes()


def test_the_script_prints_the_trace_and_a_comparison_naming_every_operation() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, cwd=OUTSIDE, check=False
    )
    assert run.returncode == 0, run.stderr
    head, _, rest = run.stdout.partition(" operations ran:\n")
    listed = rest.split("\nop ")[0].splitlines()
    assert int(head) == len(listed) > 20
    assert f"{int(head)} operations ran: " in rest  # the comparison's summary counts them all
    ops = {line.split()[0] for line in listed}
    assert {"exp", "matmul", "tanh", "add", "divide"} <= ops
    for op in ops:
        assert f"\n{op} " in run.stdout.split(" operations ran:")[1]  # a row of the table


def test_compare_backends_reports_every_operation_the_trace_saw(workload: ModuleType) -> None:
    x, params = workload.inputs()
    with ft.trace() as plans:
        workload.block(x, params)
    with ft.compare_backends("cpu", "numpy", timing=False) as report:
        workload.block(x, params)
    rows = sorted(report, key=lambda c: c.position)
    assert report.operations == len(plans)
    assert [label(plan) for plan in plans] == list({c.position: c.op for c in rows}.values())
    host = [plan.op for plan in plans if plan.kernel is None]
    products = [c.kernels for c in rows if c.op == "matmul"]
    # no host operation is left (the float matmuls plan fuel-blas-backend's contract), and
    # "numpy" names a float32 matmul of its own: every operation is compared, the matmuls too
    assert host == [] and products == [("blas_matmul_f32", "numpy_matmul_f32")] * 2
    assert report.compared == report.operations
    assert report.summary().startswith(
        f"{len(plans)} operations ran: {len(plans)} compared, 0 not compared"
    )


def test_with_the_oracle_named_every_operation_is_compared_the_matmuls_with_it(
    workload: ModuleType,
) -> None:
    """The example's comparison ("cpu", "numpy", "reference"): every operation is compared, the
    two matmuls (fuel-blas-backend's, the host BLAS) with numpy's and with the oracle's exact
    product, each output within the bound of any order of float32 sums (gamma_(K+1) sum|a||b|
    plus half an ULP, the document's declaration)."""
    x, params = workload.inputs()
    with ft.compare_backends("cpu", "numpy", "reference", timing=False) as report:
        workload.block(x, params)
    assert report.compared == report.operations
    rows = [c for c in report if c.op == "matmul" and "ref_matmul_f32" in c.kernels]
    assert [c.kernels for c in rows] == [("blas_matmul_f32", "ref_matmul_f32")] * 2
    a = workload.layer_norm(x, params.gamma, params.beta)  # the first matmul's operands
    b = ft.astype(params.w1, ft.float32)
    u = np.asarray(a @ b).astype(np.float64)
    with ft.use_backend("reference"):  # the exact product rounded once
        exact = np.asarray(a @ b).astype(np.float64)
    k = b.shape[0] + 1  # any order of K float32 sums, products not declared: gamma_(K+1)
    gamma = k * 2.0**-24 / (1 - k * 2.0**-24)
    wide = (np.abs(np.asarray(a).astype(np.float64)), np.abs(np.asarray(b).astype(np.float64)))
    slack = gamma * (wide[0] @ wide[1]) + np.spacing(np.abs(exact).astype(np.float32))
    assert (np.abs(u - exact) <= slack).all()


def test_the_layer_norms_and_softmaxs_reductions_are_compared_with_the_oracle(
    workload: ModuleType,
) -> None:
    """The layer norm's mean and var are compositions of planned steps (sums, divides, a
    subtract, a multiply) and the softmax's max and sum are planned: with the oracle named, every
    reduction among those steps is compared, bit for bit, with the oracle's kernel, and no row
    is a host mean or var."""
    with ft.compare_backends("cpu", "reference", timing=False) as report:
        workload.block(*workload.inputs())
    reductions = {row.name for row in PLANNED_REDUCTIONS}
    rows = [c for c in report if c.op.split(" over axes ")[0] in reductions]  # "sum over axes (1,)"
    assert {c.op.split(" over axes ")[0] for c in rows} == {SUM.name, MAX.name}
    assert len(rows) == 5  # the layer norm's 3 sums, the softmax's max and sum
    assert all(c.compared and c.kernels[1].startswith("ref_") for c in rows)
    assert not {c.op for c in report} & {ft.mean.__name__, ft.var.__name__}  # no host rows


def test_exp_tanh_and_sqrt_are_contract_operations(workload: ModuleType) -> None:
    """The block's unary functions run a provider's kernel of their op kind, not the host."""
    with ft.trace() as plans:
        workload.block(*workload.inputs())
    unary = {row.name: row for row in UNARY_OPS}
    ran = [plan for plan in plans if plan.op in unary]
    assert sorted({plan.op for plan in ran}) == ["exp", "sqrt", "tanh"]
    for plan in ran:
        assert plan.kernel is not None and plan.op_kind == unary[plan.op].op_kind
