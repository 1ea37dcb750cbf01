"""The `fueltensor` command run as a user runs it: a subprocess (its script, or `python -m
fueltensor`) importing the fueltensor under test, with the environment given; CHECKOUT is where
the README and docs are."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest
from _extras import OUTSIDE, ROOT

import fueltensor

CHECKOUT = ROOT
"""The checkout: its README and docs (an installed fueltensor has neither)."""
PACKAGE_DIR = Path(fueltensor.__file__).parent.parent
"""The folder that holds the fueltensor under test (the checkout, or site-packages)."""
SCRIPT = Path(sys.executable).parent / "fueltensor"
"""The console script installed beside this interpreter (absent in some environments)."""


def command(
    *args: str, env: dict[str, str] | None = None, script: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python -m fueltensor ARGS...` (the installed script with `script`) importing the
    fueltensor under test, under the current environment plus `env` (started outside the
    checkout, whose unbuilt sources would otherwise shadow it)."""
    if script and not SCRIPT.exists():
        pytest.skip(f"no fueltensor script beside {sys.executable}")
    launcher = [str(SCRIPT)] if script else [sys.executable, "-m", "fueltensor"]
    return subprocess.run(
        [*launcher, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(PACKAGE_DIR), **(env or {})},
        cwd=OUTSIDE,
        check=False,
    )


UNLINKED_NOTE: Final = re.compile(r"^\d+ contracts? not registrable here")
"""The note `fueltensor contracts` prints under its table when some contracts cannot run in this
installation (the unary CPU contracts without the compiled kernels): not a row."""


def table_lines(out: str) -> list[str]:
    """The lines of a `fueltensor contracts` table: its header and one per contract."""
    return [line for line in out.strip().split("\n") if not UNLINKED_NOTE.match(line)]
