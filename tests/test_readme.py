"""The README's Python examples run, in order, in one fresh interpreter (as a reader pastes
them); a block whose first line is `# readme: skip` is shown but not run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP = "# readme: skip"


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```python fences, in order."""
    return re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)


def test_readme_has_python_examples() -> None:
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 3 and "import fueltensor as ft" in blocks[0]


def test_readme_python_examples_run_in_order(tmp_path: Path) -> None:
    blocks = [
        b for b in python_blocks(README.read_text(encoding="utf-8")) if not b.startswith(SKIP)
    ]
    # Passed with -c, as pasted into an interpreter: a cluster example's worker processes
    # (spawned) then do not re-run the examples as their main module, as from a script file.
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
