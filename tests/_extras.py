"""Skips for the tests that need one of fueltensor's optional extras: each names the module that
is missing and the extra that installs it, so a run without the extra says what it left out; and
where a fresh interpreter starts to import the installed package; where the shared test files
and the checkout are (whichever folder a test file sits in); a bounded local Dask cluster."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def needs(module: str, extra: str) -> pytest.MarkDecorator:
    """Skip unless `module` can be imported, naming it and the extra that brings it."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"needs {module}, which the {extra} extra installs (pip install '.[{extra}]')",
    )


def extra(module: str, extra: str) -> Any:
    """`module` imported, or the whole test file skipped naming it and the extra that brings it
    (at a file's top, before the imports that need it)."""
    return pytest.importorskip(module, reason=f"needs {module}, which the {extra} extra installs")


OUTSIDE = os.path.dirname(sys.executable)
"""Where a test's fresh interpreter starts: not the checkout, whose unbuilt sources would shadow
the installed package (with its compiled kernels) from the current directory."""

TESTS = Path(__file__).resolve().parent
"""tests/: the shared helpers, conftest.py, the C sources the tests build and the seed copies; the
test files themselves sit in its subfolders, which mirror the package."""
ROOT = TESTS.parent
"""The checkout: its README, docs, notebooks, contracts and examples."""


def child_pytest_env(env: dict[str, str]) -> dict[str, str]:
    """`env` for a nested pytest run: no plugin loaded but pytest's own (the parent's may be any:
    pytest-benchmark, seeing an xdist worker's variables, fails the run at start), and none of
    the parent's xdist worker variables or added options."""
    kept = {k: v for k, v in env.items() if not k.startswith(("PYTEST_XDIST_", "PYTEST_ADDOPTS"))}
    kept.pop("PYTEST_PLUGINS", None)
    return {**kept, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@contextlib.contextmanager
def local_client(wait: float) -> Iterator[Any]:
    """A Dask client of two single-threaded worker processes: every wait bounded by `wait`
    seconds, the client and the cluster always closed."""
    import distributed

    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",  # any free port: None still binds 8787, which another run may hold
        timeout=wait,
    )
    try:
        client = distributed.Client(cluster, timeout=wait)
        try:
            client.wait_for_workers(2, timeout=wait)
            yield client
        finally:
            client.close(timeout=wait)
    finally:
        cluster.close(timeout=wait)
