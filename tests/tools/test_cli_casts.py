"""`fueltensor explain astype` and `fueltensor compare astype` as a user types them: explain
takes the target with `--to` (and the rule with `--saturate`) and names the contract that
serves it; compare runs every cast contract at its own target and rule on each provider named."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _cli import command

import fueltensor as ft
from fueltensor.kernels.casting import CASTS, kernel_name
from fueltensor.ops import CAST_OP

BF16, E4M3, E5M2 = (
    np.dtype(ft.bfloat16.np),
    np.dtype(ft.float8_e4m3fn.np),
    np.dtype(ft.float8_e5m2.np),
)


def _linked(name: str) -> bool:
    """Whether fuel-cpu-backend's cast contract `name` runs here (not in the pure-NumPy mode)."""
    return name not in {c.name for c in ft.registry().unlinked(CAST_OP.op_kind)}


def test_explain_astype_names_the_contract_of_the_target_and_rule() -> None:
    cpu = kernel_name(BF16, E4M3, True)
    for backend, name in (("cpu", cpu), ("reference", "ref_" + cpu)):
        if backend == "cpu" and not _linked(cpu):
            continue
        done = command(
            "explain",
            "astype",
            "--dtypes",
            "bfloat16",
            "--to",
            "float8_e4m3fn",
            "--saturate",
            "--backend",
            backend,
        )
        assert done.returncode == 0, done.stderr
        head, first = done.stdout.splitlines()[:2]
        assert head.startswith("astype(bfloat16[3, 4]) -> float8_e4m3fn[3, 4]"), head
        assert first.strip().startswith(f"1. {name}(x)"), first
    plain = command("explain", "astype", "--dtypes", "bfloat16", "--to", "float8_e4m3fn")
    assert "_sat(" not in plain.stdout.splitlines()[1], plain.stdout


def test_explain_refuses_a_missing_or_meaningless_target() -> None:
    missing = command("explain", "astype", "--dtypes", "float32")
    assert missing.returncode == 2 and "astype needs --to DTYPE" in missing.stderr
    stray = command("explain", "add", "--to", "float16")
    assert stray.returncode == 2 and "add takes no --to or --saturate" in stray.stderr
    nothing = command("explain", "astype", "--dtypes", "float16", "--to", "float32", "--saturate")
    assert nothing.returncode == 2 and "saturate=True means nothing" in nothing.stderr


def test_compare_astype_runs_every_cast_of_a_source_on_both_providers() -> None:
    wanted = [kernel_name(s, d, sat) for s, d, sat in CASTS if s == E5M2]
    if not all(map(_linked, wanted)):
        pytest.skip("fuel-cpu-backend's casts are compiled kernels, not built or chosen here")
    done = command(
        "compare", "astype", "cpu", "reference", "--dtypes", "float8_e5m2", "--size", "64"
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("astype ")]
    assert len(rows) == len(wanted)
    for name in wanted:
        pair = f"{name} vs ref_{name}"
        assert any(pair in row for row in rows), name
    ran = re.search(r"(\d+) operations ran", done.stdout)
    assert ran is not None and int(ran.group(1)) == len(wanted)
