"""Python started in a source checkout imports the checkout's fueltensor/: where its compiled
kernels are not built, the import says so once, with how to build them, instead of running the
pure kernels 50x slower with no word."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _extras import ROOT

import fueltensor as ft

WORDS = "whose compiled kernels are not built"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package's sources beside a setup.py, as a clone is before its build."""
    root = tmp_path_factory.mktemp("clone")
    shutil.copytree(
        Path(ft.__file__).parent,
        root / "fueltensor",
        ignore=shutil.ignore_patterns("*.so", "__pycache__"),
    )
    if not (root / "fueltensor" / "ext" / "src").is_dir():  # an installed fueltensor has no C
        shutil.copytree(ROOT / "fueltensor" / "ext" / "src", root / "fueltensor" / "ext" / "src")
    shutil.copy(ROOT / "setup.py", root / "setup.py")
    return root


def _import(where: Path, **env: str) -> subprocess.CompletedProcess[str]:
    unset = ("PYTHONPATH", "PYTHONSAFEPATH", "FUELTENSOR_PURE_NUMPY")  # the suite's own modes
    clean = {k: v for k, v in os.environ.items() if k not in unset}
    return subprocess.run(
        [sys.executable, "-c", "import fueltensor, fueltensor as ft; print(ft.__file__)"],
        cwd=where,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )


def test_an_unbuilt_checkout_warns_once_with_how_to_build(checkout: Path) -> None:
    run = _import(checkout)
    assert run.stdout.strip() == str(checkout / "fueltensor" / "__init__.py")
    assert run.stderr.count(WORDS) == 1, run.stderr
    assert f"source checkout {checkout}" in run.stderr and "pip install -e ." in run.stderr


def test_pure_kernels_asked_for_or_an_installed_package_say_nothing(checkout: Path) -> None:
    assert WORDS not in _import(checkout, FUELTENSOR_PURE_NUMPY="1").stderr
    elsewhere = _import(checkout.parent)  # the installed fueltensor
    assert not elsewhere.stdout.startswith(str(checkout)) and WORDS not in elsewhere.stderr
