"""The suite's verdict does not depend on the shell it runs in: a user's own fueltensor settings
(FUELTENSOR_* variables that configure the library) are cleared by tests/conftest.py, and what
needs an absent extra skips, naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _extras import TESTS, child_pytest_env

USER_SETTINGS = {"FUELTENSOR_POW_SHORTCUT": "0", "FUELTENSOR_NUM_THREADS": "1"}
"""Settings a user may have exported, each of which fails tests it reaches unless cleared."""
SENSITIVE = [
    "kernels/test_pow_shortcut.py::test_a_fresh_process_runs_the_vector_powf",
    "kernels/test_threads.py::test_every_op_and_dtype_gives_one_threads_bits[add-float32]",
]
"""Tests that fail under USER_SETTINGS when they reach them (tried before conftest cleared them)."""


def test_a_users_fueltensor_settings_do_not_reach_the_tests() -> None:
    """A nested run under the user's settings passes the tests those settings would break."""
    from fueltensor.kernels._chassis import NATIVE

    if NATIVE is None:
        pytest.skip("the settings under test reach the compiled kernels, not built here")
    # As on two cores (a run setting the conftest keeps): on one core (`taskset -c 0`) the
    # split test would skip, and the setting it is sensitive to would go untested.
    env = child_pytest_env({**os.environ, **USER_SETTINGS, "FUELTENSOR_TEST_CORES": "2"})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SENSITIVE],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(SENSITIVE)} passed" in done.stdout, done.stdout[-3000:]


def test_the_run_settings_are_kept() -> None:
    """FUELTENSOR_PURE_NUMPY chooses the implementation a run tests: CI's pure run sets it."""
    code = "import os; print(os.environ.get('FUELTENSOR_PURE_NUMPY'))"
    env = {**os.environ, "FUELTENSOR_PURE_NUMPY": "1"}
    probe = TESTS / "conftest.py"
    done = subprocess.run(
        [sys.executable, "-c", f"import runpy; runpy.run_path({str(probe)!r}); {code}"],
        cwd=TESTS,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "1"
