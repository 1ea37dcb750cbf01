"""The command line's tables at 80 and 120 columns: no line wider than the terminal, every row
still there; `--wide` keeps one line per row; `--version`."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import fueltensor as ft
from fueltensor.tools.textwidth import fit_table

COMMANDS = (["contracts"], ["judge", "--quick"], ["tour"])


def run(args: list[str], columns: int | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "fueltensor", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=300,
    )


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_no_line_is_wider_than_the_terminal(args: list[str], columns: int) -> None:
    done = run(args, columns)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= columns, max(lines, key=len)
    if args == ["contracts"]:  # every contract still has its row, its name unbroken
        starts = {line.split()[0] for line in lines if line and not line.startswith(" ")}
        assert {c.name for c in ft.registry()} <= starts


def test_wide_prints_one_line_per_row() -> None:
    done = run(["contracts", "--wide"], 80)
    lines = done.stdout.splitlines()
    assert len(lines) == 1 + len(ft.registry())
    assert max(map(len, lines)) > 120


def test_version() -> None:
    from importlib.metadata import version

    done = run(["--version"], None)
    assert done.returncode == 0
    assert done.stdout.split() == ["fueltensor", version("fueltensor")]


def test_fit_table_wraps_inside_cells_and_names_left_out_columns() -> None:
    rows = [("name", "text", "extra"), ("a", "one two three four five six", "x" * 30)]
    out = fit_table(rows, width=20, rule=False, optional=("extra",))
    lines = out.splitlines()
    assert max(map(len, lines)) <= 20 and "x" * 30 not in out
    assert "extra" in out  # named in the note, since its column is left out
    body = [line for line in lines[1:] if not line.startswith("(") and line[:1] in ("a", " ")]
    assert " ".join(line[3:].strip() for line in body) == rows[1][1]
    wide = fit_table(rows, width=None).splitlines()
    assert wide[2].split() == ["a", *rows[1][1].split(), rows[1][2]]
