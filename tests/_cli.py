"""The `fueltensor` command run as a user runs it: a subprocess on this checkout (its script, or
`python -m fueltensor`), with the environment given."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fueltensor

CHECKOUT = Path(fueltensor.__file__).parent.parent
SCRIPT = Path(sys.executable).parent / "fueltensor"
"""The console script installed beside this interpreter (absent in some environments)."""


def command(
    *args: str, env: dict[str, str] | None = None, script: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python -m fueltensor ARGS...` (the installed script with `script`) importing this
    checkout, under the current environment plus `env`."""
    if script and not SCRIPT.exists():
        pytest.skip(f"no fueltensor script beside {sys.executable}")
    launcher = [str(SCRIPT)] if script else [sys.executable, "-m", "fueltensor"]
    return subprocess.run(
        [*launcher, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(CHECKOUT), **(env or {})},
        check=False,
    )
