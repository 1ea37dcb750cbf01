"""`fueltensor compare` of the reductions as a user types it (issue 48): each reduction contract
is compared over every axis and over the last, the axes named in the operation's column, the
CPU kernel against the oracle with their ULP differences, read from the command's real output;
the differing ones exit 1, naming the worst output and its reduced row."""

from __future__ import annotations

import re

from _cli import command

from fueltensor.ops import VALUE_REDUCTIONS

SUM, PROD, MAX, MIN = VALUE_REDUCTIONS


def _rows(stdout: str) -> dict[tuple[str, str], list[str]]:
    """The table's rows by (operation with its axes, dtype): their other columns."""
    found = {}
    for line in stdout.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) > 4 and " over axes " in cells[0]:
            found[cells[0], cells[1]] = cells[2:]
    return found


def test_compare_runs_every_reduction_over_all_axes_and_the_last_against_the_oracle() -> None:
    names = [row.name for row in VALUE_REDUCTIONS]
    done = command("compare", *names, "--dtypes", "float32", "float16", "--size", "1024", "--wide")
    assert done.returncode in (0, 1), done.stderr
    rows = _rows(done.stdout)
    for row in VALUE_REDUCTIONS:
        for dtype, suffix in (("float32", "f32"), ("float16", "f16")):
            every, last = (
                rows[f"{row.name} over axes (0, 1)", dtype],
                rows[f"{row.name} over axes (1,)", dtype],
            )
            pair = f"{row.kernel_op}_{suffix} vs ref_{row.kernel_op}_{suffix}"
            assert every[0] == "()" and every[2] == pair, every  # shape, then calls, kernels
            assert last[0] == "8" and last[2] == pair, last  # 8 rows of 128
    for row in (MAX, MIN):  # exact on both sides
        assert rows[f"{row.name} over axes (1,)", "float32"][3] == "8/8"
    assert f"{len(names) * 4} operations ran: {len(names) * 4} compared" in done.stdout


def test_a_float32_product_differs_from_the_exact_one_by_its_ulp_and_exits_1() -> None:
    done = command("compare", PROD.name, "--dtypes", "float32", "--size", "2048", "--wide")
    assert done.returncode == 1, done.stderr
    every = _rows(done.stdout)[f"{PROD.name} over axes (0, 1)", "float32"]
    ulp = float(every[5])  # shape, calls, kernels, bit-equal, differences, max ULP
    assert every[3] == "0/1" and 0 < ulp < 2048, every  # within γ_2047 of the exact product
    worst = [line for line in done.stdout.splitlines() if "worst at ()" in line]
    assert worst and "inputs (x 2048 elements from " in worst[0], done.stdout
    assert f"ref_{PROD.kernel_op}_f32" in worst[0] and "ULP" in worst[0]
    agreed = command("compare", PROD.name, "--dtypes", "float32", "--max-ulp", "4096")
    assert agreed.returncode == 0, agreed.stdout
