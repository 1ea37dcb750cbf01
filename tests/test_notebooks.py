"""The notebooks: stored exactly as notebooks/build.py writes them (no outputs), and each runs
top to bottom in a real IPython kernel started from this interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = (
    "01_tour.ipynb",
    "02_contracts.ipynb",
    "03_backends.ipynb",
    "04_judge.ipynb",
    "05_dask.ipynb",
)


def test_stored_notebooks_are_what_build_writes_without_outputs() -> None:
    done = subprocess.run(
        [sys.executable, str(NOTEBOOKS / "build.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A kernelspec that launches ipykernel with this interpreter (so this fueltensor)."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / "fueltensor-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "fueltensor test", "language": "python"})
    )
    return str(root)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_top_to_bottom(
    name: str, kernel_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbclient import NotebookClient

    monkeypatch.setenv("JUPYTER_PATH", kernel_name)
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="fueltensor-test",
        timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
    html = [o for c in code for o in c.outputs if "text/html" in o.get("data", {})]
    assert html, f"{name} shows no rich (HTML) output"
