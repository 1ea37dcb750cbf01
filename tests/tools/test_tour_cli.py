"""`fueltensor tour` and `fueltensor explain` as a new user runs them."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from _extras import OUTSIDE

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.ops import UNARY_OPS, ContractOp


def test_tour_shows_registry_dispatch_and_comparison() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "fueltensor", "tour", "--wide"],
        capture_output=True,
        text=True,
        cwd=OUTSIDE,  # not the checkout, whose unbuilt sources would shadow the package
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for provider in (p.name for p in ft.registry().providers):
        assert provider in out
    for step in ("Contiguize", "BroadcastTo", "Cast(lhs: float16 -> float32)"):
        assert step in out
    assert "broadcast_add(a, b)" in out and "rejected add_f64" in out
    assert "add_bf16 vs broadcast_add" in out and "div_f16 vs broadcast_div" in out
    # The oracle computes in the half type and makes its NaNs as the seeds' `half` arithmetic
    # does: for + - * / it agrees with the CPU kernels bit for bit, NaN payloads included.
    prose = " ".join(out.split())  # the tour wraps its prose to the terminal
    assert ": 0 elements differ. " in prose and "NaN payloads included" in prose
    lines = out.splitlines()
    header = re.split(r"\s{2,}", next(line for line in lines if line.startswith("op  ")))
    cells = [re.split(r"\s{2,}", line) for line in lines if " vs broadcast_" in line]
    rows = [dict(zip(header, row, strict=True)) for row in cells if row[0]]
    assert len(rows) == 8 and all(row["differences"] == "none" for row in rows)
    assert all(row["bit-equal"] == "4096/4096" for row in rows)
    assert done.stderr == ""


def test_explain_prints_the_plan_explain_returns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "add", "--shapes", "3,4", "4", "--dtypes", "float32", "float16"]) == 0
    x = ft.asarray(np.ones((3, 4)), dtype="float32")
    y = ft.asarray(np.ones(4), dtype="float16")
    assert capsys.readouterr().out == str(ft.explain(ft.add, x, y)) + "\n"


def test_explain_transposed_lhs_is_contiguized(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "maximum", "--shapes", "2,3", "--transpose-lhs"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("maximum(float32[2, 3], float32[2, 3])")
    assert "1. Contiguize(lhs)" in out and "maximum_f32" in out


@pytest.mark.parametrize("row", UNARY_OPS, ids=lambda row: row.name)
def test_explain_plans_a_unary_function_on_its_one_operand(
    row: ContractOp, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["explain", row.op_kind.value, "--shapes", "2,3", "--dtypes", "float16"]
    assert main([*args, "--transpose-lhs"]) == 0
    x = ft.permute_dims(ft.asarray(np.arange(1, 7).reshape(3, 2), dtype="float16"), (1, 0))
    assert capsys.readouterr().out == str(ft.explain(getattr(ft, row.name), x)) + "\n"
    assert main([*args, "--transpose-rhs"]) == 2
    assert f"{row.name} takes 1 operand" in capsys.readouterr().err
    assert main(["explain", row.name, "--shapes", "3,4", "4"]) == 2


def test_explain_under_a_backend_and_its_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "add", "--shapes", "3,4", "4", "--backend", "cpu"]) == 0
    assert "excluded by use_backend" in capsys.readouterr().out
    assert main(["explain", "maximum", "--shapes", "3,4", "4", "--backend", "reference"]) == 2
    assert "no kernel contract admits" in capsys.readouterr().err
    assert main(["explain", "add", "--shapes", "3,4", "5"]) == 2
    assert "broadcast" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["explain", "add", "--shapes", "three"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        main(["explain", "floor_divide"])  # a host operation: no contract to plan
