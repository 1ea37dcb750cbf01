"""The command line at 60, 80, 100 and 200 columns: no line wider than the terminal, every row
still there, names (kernel, provider, op, dtype) and header words never broken, formulas
wrapped only before an operator, prose wrapped with a hanging indent, columns left out in
their order and named (bit equality, conformance and a time kept at 80 columns, the judge's
legend explaining only what it shows, an uncompared operation's reason printed at any width);
`--wide` keeps one line per row; `--version`."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys

import pytest
from _cli import table_lines

import fueltensor as ft
from fueltensor.cli import CONTRACT_COLUMNS
from fueltensor.core.errors import plural
from fueltensor.tools.comparisons import COLUMNS as COMPARE_COLUMNS
from fueltensor.tools.comparisons import NARROW_DROPS as COMPARE_DROPS
from fueltensor.tools.judge import COLUMNS as JUDGE_COLUMNS
from fueltensor.tools.judge import NARROW_DROPS as JUDGE_DROPS
from fueltensor.tools.textwidth import fit_lines, fit_table

WIDTHS = (60, 80, 100, 200)
_REG = ft.registry()
JUDGED = sorted(
    {"broadcast_div", *sorted((c.name for c in _REG if _REG.joins(c.provider)), key=len)[-3:]}
)
"""The judge's rows here: broadcast_div and the three longest names of the contracts that join
by default (the labels that set the kernel column's width; the frameworks' need their framework
installed); the whole registry's judge took 30 s at each width."""
JUDGE = ["judge", "--quick", *(arg for name in JUDGED for arg in ("--kernel", name))]
COMMANDS = (
    ["contracts"],
    JUDGE,
    ["tour"],
    ["explain", "add", "--shapes", "3,4", "4"],
    ["pow-shortcut"],
)


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


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize("columns", WIDTHS)
@pytest.mark.parametrize("args", COMMANDS, ids=lambda args: " ".join(args[:2]))
def test_no_line_is_wider_than_the_terminal_and_no_word_is_lost(
    args: list[str], columns: int
) -> None:
    done = run(args, columns)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= columns, max(lines, key=len)
    if args[0] in ("explain", "pow-shortcut"):  # prose: wrapped between words, indented
        wide = run(args, None).stdout
        assert words(done.stdout) == words(wide)
        for line in lines:
            if line not in wide:  # a continuation: indented past the line it continues
                assert line.startswith("    ") or line.startswith("pow shortcut"), line


def names_unbroken(out: str, names: set[str]) -> None:
    """Every name is on some line whole: none was split across lines."""
    found = set(re.findall(r"[\w\[\]\-]+", out))
    assert names <= found, sorted(names - found)


@pytest.mark.parametrize("columns", WIDTHS)
def test_contracts_keep_names_whole_and_every_row(columns: int) -> None:
    out = run(["contracts"], columns).stdout
    reg = ft.registry()
    header = " ".join(
        line
        for line in out.splitlines()[
            : out.splitlines().index(
                next(line for line in out.splitlines() if line.startswith("powi_f32"))
            )
        ]
    )
    shown = [h for h in CONTRACT_COLUMNS if all(w in words(header) for w in h.split())]
    left_out = [h for h in CONTRACT_COLUMNS if h not in shown]
    assert all(h in " ".join(out.split()) for h in left_out)  # named in the note
    providers = {c.provider.name for c in reg} if "provider" in shown else set()
    names_unbroken(out, {c.name for c in reg} | providers)
    starts = [line.split()[0] for line in out.splitlines() if line and not line[0].isspace()]
    assert {c.name for c in reg} <= set(starts)


def header_and_note(out: str, first: int = 0) -> tuple[list[str], str]:
    """The header words of the table starting at line `first` (above its rule), and the text
    of the note naming the columns it leaves out ("" when there is none)."""
    lines = out.splitlines()[first:]
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    text = " ".join(out.split())
    note = re.search(r"\(not shown at \d+ columns: (.*?); --wide", text)
    return words(" ".join(lines[:rule])), note.group(1) if note else ""


def check_columns(
    header: list[str], note: str, columns: tuple[str, ...], drops: tuple[str, ...]
) -> list[str]:
    """Every column is shown (all its header words above the rule) or named as left out; the
    narrow drops go in their order (one shown means every later one is). The shown ones."""
    shown = [c for c in columns if all(w in header for w in c.split())]
    for column in columns:
        assert column in shown or column in note, column
    for early, late in itertools.pairwise(drops):
        assert early not in shown or late in shown, (early, late)
    return shown


@pytest.mark.parametrize("columns", WIDTHS)
def test_judge_keeps_kernel_names_conformance_and_times(columns: int) -> None:
    done = run(JUDGE, columns)
    out = done.stdout
    labels = {
        line.split()[0]
        for line in run([*JUDGE, "--wide"], None).stdout.splitlines()
        if re.match(r"\w+(\[\w+\])?\s", line)
    }
    assert "broadcast_div[F32]" in labels
    names_unbroken(out, labels)
    assert [line for line in out.splitlines() if "broadcast_div" in line]  # | grep finds it
    header, note = header_and_note(out)
    shown = check_columns(header, note, JUDGE_COLUMNS, JUDGE_DROPS)
    assert {"kernel", "worst ULP", "conformance", "verdict"} <= set(shown)
    if columns >= 80:  # a time stays beside the correctness columns
        assert {"ULP bound", "same bits", "ns/elem"} <= set(shown)
    if columns >= 200:
        assert shown == list(JUDGE_COLUMNS)
    legend = " ".join(out.split())
    for column in JUDGE_COLUMNS[1:-1]:  # the legend explains exactly the columns shown
        assert (f"{column}:" in legend) == (column in shown), column


@pytest.mark.parametrize("columns", WIDTHS)
def test_the_tour_comparison_keeps_bit_equality_and_the_reasons(columns: int) -> None:
    out = run(["tour"], columns).stdout
    section = out[out.index("3. Providers") :]
    header, note = header_and_note(section, 2)
    shown = check_columns(header, note, COMPARE_COLUMNS, COMPARE_DROPS)
    assert {"op", "kernels", "bit-equal", "differences"} <= set(shown)
    if columns >= 80:
        assert {"max ULP", "dtypes", "µs per call"} <= set(shown)
    if columns >= 200:
        assert shown == list(COMPARE_COLUMNS)
    names_unbroken(section, {"add_bf16", "broadcast_add", "bfloat16", "float16"})
    text = " ".join(section.split())
    for dtype, kernel in (("bfloat16", "bf16"), ("float16", "f16")):  # each keeps its reason
        reason = f"not compared, no other allowed kernel admits it (only maximum_{kernel}, "
        assert f"{reason}of fuel-cpu-backend): maximum({dtype}, {dtype})" in text
    assert "calls timed per kernel" in text


def test_formulas_wrap_only_before_an_operator() -> None:
    rows = [("kernel", "bytes_moved"), ("k_with_a_long_name", "(n_lhs + n_rhs + n_out) * 4")]
    out = fit_table(rows, width=40, rule=False)
    cell = [line[20:].strip() for line in out.splitlines()[1:]]
    assert len(cell) > 1 and all(part[0] in "+-*/" for part in cell[1:]), cell
    assert " ".join(cell) == rows[1][1]


def test_headers_and_names_never_break_and_left_out_columns_are_named() -> None:
    rows = [
        ("kernel", "deterministic", "notes"),
        ("broadcast_div[F32]", "16/16", "one two three four five six seven eight nine"),
    ]
    out = fit_table(rows, width=40, rule=False)
    assert max(map(len, out.splitlines())) <= 40
    assert "broadcast_div[F32]" in out and "deterministic" in out
    assert "not shown at 40 columns: notes" in " ".join(out.split())
    wide = fit_table(rows, width=None, rule=False).splitlines()
    assert wide[1].split() == [rows[1][0], rows[1][1], *rows[1][2].split()]


def test_fit_lines_hangs_continuations() -> None:
    text = "  rejected add_f32: admissible but outranked: 240 bytes moved vs 112 for broadcast_add"
    lines = fit_lines(text, 40).splitlines()
    assert len(lines) > 1 and all(line.startswith("      ") for line in lines[1:])
    assert words(" ".join(lines)) == words(text)


def test_plural() -> None:
    assert [plural(n, "audit") for n in (0, 1, 2)] == ["0 audits", "1 audit", "2 audits"]
    assert plural(1, "mismatch", "mismatches") == "1 mismatch"
    assert plural(3, "mismatch", "mismatches") == "3 mismatches"


def test_compare_columns_are_known() -> None:
    assert "max abs" in COMPARE_COLUMNS and "max rel" in COMPARE_COLUMNS


def test_wide_prints_one_line_per_row() -> None:
    done = run(["contracts", "--wide"], 80)
    lines = table_lines(done.stdout)
    assert len(lines) == 1 + len(ft.registry())
    assert max(map(len, lines)) > 120


def test_version() -> None:
    from importlib.metadata import version

    done = run(["--version"], None)
    assert done.returncode == 0
    assert done.stdout.split() == ["fueltensor", version("fueltensor")]
