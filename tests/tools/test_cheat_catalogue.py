"""The cheat catalogue (issue 35, item 3): for each op and dtype, the judge passes the honest
kernel of tests/cheat_kernels.c and fails each of its eight cheats for what it does, and the
process that ran the judge exits normally afterwards; the bf16 "add" that subtracts (issue 41)
fails the quick judge and its certificate."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _cheats import DTYPES, OP_KINDS, SUBTRACTING_ADD, VARIANTS, build, register
from _extras import TESTS

import fueltensor as ft
from fueltensor.cli import main

JUDGE = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
import fueltensor as ft
from _cheats import catalogue, register
kernels = [k for op in {ops!r} for k in catalogue(op, {dtype!r})]
reg = register(Path({library!r}), "cheats", kernels, Path({doc!r}))
report = ft.judge(reg, quick=True, progress=False)
print(json.dumps({{row.kernel: row.failures for row in report.rows}}))
"""

CAUGHT_BY = {
    "zeros": "precision: ",
    "specials": "precision: ",
    "reduced": "precision: ",
    "tail": "precision: ",
    "cache": "precision: ",
    "overrun": "overrun: wrote past its end; buffer out, bytes ",
    "scribble": "read-only pages; with writable inputs it wrote into an input; buffer lhs",
    "untouched": "unwritten: out bytes depend on what out held before the call",
}
"""What the judge says of each cheat: the check that fails it."""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/cheat_kernels.c, built."""
    return build("cheat_kernels.c", tmp_path_factory.mktemp("cheats") / "libcheats.so")


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_judge_fails_every_cheat_and_passes_the_honest_kernel(
    library: Path, tmp_path: Path, dtype: str
) -> None:
    code = JUDGE.format(
        tests=str(TESTS),
        ops=list(OP_KINDS),
        dtype=dtype,
        library=str(library),
        doc=str(tmp_path / "cheats.md"),
    )
    run = [sys.executable, "-c", textwrap.dedent(code)]
    done = subprocess.run(run, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(failures) == len(OP_KINDS) * len(VARIANTS)
    for op in OP_KINDS:
        assert failures[f"honest_{op}_{dtype}"] == [], (op, failures[f"honest_{op}_{dtype}"])
        for variant, words in CAUGHT_BY.items():
            said = failures[f"{variant}_{op}_{dtype}"]
            assert any(words in s for s in said), (variant, op, said)


def test_a_subtracting_add_fails_the_quick_judge_its_certificate_and_judge_certificate(
    library: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: a bf16 "add" that subtracts, under a contract with no max_ulp whose semantics
    come from the formula, was accepted by `judge --quick` and by its certificate (formula:
    0 of all pairs). Both read the formula now, and so does `judge --certificate` with the
    draft named by --contracts and --library."""
    doc = tmp_path / "subtracting.md"
    reg = register(library, "subtracting", [SUBTRACTING_ADD], doc)
    [row] = ft.judge(reg, quick=True, progress=False).rows
    assert any("the formula the semantics come from" in f for f in row.failures), row.failures
    span = {"lhs": (0x3F80, 0x3F90), "rhs": (0x3F80, 0x3FC0)}
    [cert] = ft.certify("subtracting", reg=reg, progress=False, **span)
    assert cert.data["formula"]["equal"] == 0
    assert any("source formula, but 1,024 of 1,024 pairs" in f for f in cert.data["verdict"])
    assert "judge: FAILS: " in cert.text()
    path = cert.save(tmp_path / "subtracting_add_bf16.json")
    args = ["judge", "--certificate", str(path), "--contracts", str(doc), "--library", str(library)]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL subtracting_add_bf16 (bfloat16)") and "1,024 of 1,024" in out
