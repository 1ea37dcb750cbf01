"""The README's Python examples run as written, in order, in a fresh interpreter: pasted line by
line into an interactive console (where a blank line ends an indented block), and saved
together as a script run with `python` (where a Dask cluster's worker processes import the
script: the example's main guard must keep them from starting clusters of their own). A block
whose first line is `# readme: skip` is shown but not run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from _extras import needs

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP = "# readme: skip"
WAIT = 600
"""Seconds before a hung example (a cluster that never starts or closes) fails the test."""

CONSOLE = """
import code, sys

class Console(code.InteractiveConsole):
    failed = False

    def showsyntaxerror(self, *args, **kwargs):
        Console.failed = True
        super().showsyntaxerror(*args, **kwargs)

    def showtraceback(self):
        Console.failed = True
        super().showtraceback()

console = Console({"__name__": "__main__"})  # as in the interactive interpreter
for block in sys.stdin.read().split("\\0"):
    more = False
    for line in block.splitlines():
        more = console.push(line)
    if more:
        more = console.push("")  # the blank line a reader types after an indented block
    if more:
        raise SystemExit("a README block is incomplete when pasted")
sys.exit(1 if Console.failed else 0)
"""
"""Feeds the README's blocks, separated by NUL, to an interactive console as typed input (a
blank line ends an indented block there, and a statement's error is printed, not raised); exits
1 when any statement failed."""


def python_blocks(text: str) -> list[str]:
    """The bodies of the ```python fences, in order, without the skipped ones."""
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)
    return [b for b in blocks if not b.startswith(SKIP)]


def run(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        check=False,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return done


def test_readme_has_python_examples() -> None:
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 3 and "import fueltensor as ft" in blocks[0]
    assert any('if __name__ == "__main__":' in b and "LocalCluster" in b for b in blocks)


@needs("distributed", "dask")  # the Dask example
def test_readme_examples_pasted_into_an_interpreter(tmp_path: Path) -> None:
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    done = run(["-c", CONSOLE], tmp_path, "\0".join(blocks))
    assert "via fuel-reference-backend" in done.stdout  # the first block's plan
    assert "['maximum_f32', 'add_f32'," in done.stdout  # the Dask block's kernels


@needs("distributed", "dask")  # the Dask example
def test_readme_examples_saved_as_a_script(tmp_path: Path) -> None:
    script = tmp_path / "readme_examples.py"
    script.write_text("\n".join(python_blocks(README.read_text(encoding="utf-8"))))
    done = run([str(script)], tmp_path)
    assert "['maximum_f32', 'add_f32'," in done.stdout  # the Dask block ran, once
    assert done.stdout.count("judge across 1 machine") == 1
