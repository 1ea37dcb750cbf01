"""`fueltensor semantics` and `ft.semantics_table`: every cell is what the provider's kernel
returned (checked here against the kernels' own calls), in text, Markdown and JSON."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.tools.judge.cases import cases
from fueltensor.tools.textwidth import table_width


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["semantics", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_json_cells_are_the_kernels_own_results(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = _run(
        capsys, "--provider", "cpu", "--provider", "numpy", "--op", "minimum", "--json"
    )
    assert status == 0
    data = json.loads(out)
    assert data["providers"] == ["cpu", "numpy"]
    rows = {r["case"]: r for r in data["rows"]}
    assert list(rows) == [c.label for c in cases("MinimumElementwise", np.dtype(np.float32))]
    tie = rows["minimum(+0, -0)"]["results"]
    assert [r["bits"] for r in tie["cpu"]] == ["0x0"]  # the seeds: lhs wins a ±0 tie
    numpy_bits = int(np.minimum(np.float32(0.0), np.float32(-0.0)).view(np.uint32))
    assert [r["bits"] for r in tie["numpy"]] == [hex(numpy_bits)]
    assert rows["minimum(+0, -0)"]["differs"] == (numpy_bits != 0)
    nan = rows["minimum(NaN·a, 1.5)"]["results"]["cpu"]
    assert nan == [{"what": "lhs", "bits": "0x7fc00001"}]


def test_the_text_and_markdown_tables(capsys: pytest.CaptureFixture[str]) -> None:
    with table_width(80):
        status, text, _ = _run(capsys, "--provider", "cpu", "--op", "rem")
    assert status == 0
    assert all(len(line) <= 80 for line in text.splitlines())
    assert "mod(5, inf)" in text and "never written by hand" in " ".join(text.split())
    status, markdown, _ = _run(
        capsys, "--provider", "cpu", "--provider", "reference", "--op", "add", "--markdown"
    )
    assert markdown.splitlines()[0] == "| case | cpu | reference |"
    table = ft.semantics_table(["cpu", "reference"], ["add"])
    same = [r for r in table.rows if not r.differs]
    assert same and all(r.case not in table.to_markdown(only_differences=True) for r in same)


def test_bad_arguments_say_what_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "--op", "modulo")
    assert status == 2 and "the operations: add" in err
    status, _, err = _run(capsys, "--provider", "cpu", "--sweep", "deep")
    assert status == 2 and "the depths: brief, quick, full" in err
    status, _, err = _run(capsys, "--provider", "nobody")
    assert status == 2 and "no provider is called 'nobody'" in err


def test_a_provider_that_cannot_run_is_left_out_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else find(name, *a)
    )
    table = ft.semantics_table(["cpu", "jax"], ["maximum"])
    assert table.providers == ("cpu",)
    assert "jax not run: provider jax runs JAX, which is not installed" in table.summary()
