"""The README's code blocks run as written. The Python examples run in order, in a fresh
interpreter: pasted line by line into an interactive console (where a blank line ends an
indented block), and saved together as a script run with `python` (where a Dask cluster's
worker processes import the script: the example's main guard must keep them from starting
clusters of their own). They run in a folder where the `sh` blocks built the compiled example
with cc (skipped, saying so, where there is no cc); the `sh` blocks run line by line with the
installed `fueltensor` command; the `bash` test command is the one `.ci/run` runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _extras import ROOT, needs

README = ROOT / "README.md"
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


def blocks(language: str) -> list[str]:
    """The bodies of the README's fences of `language` (python, sh, bash), in order."""
    text = README.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)


def python_blocks() -> list[str]:
    """The bodies of the ```python fences, in order."""
    return blocks("python")


def shell_lines(first_word: str | None = None) -> list[str]:
    """The commands of the ```sh fences, in order (only those starting with `first_word`)."""
    lines = [line for b in blocks("sh") for line in b.splitlines() if line.strip()]
    return [line for line in lines if first_word is None or line.split()[0] == first_word]


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A folder holding the repository's examples/, where the README's `cc` lines built the
    compiled example; the test is skipped, saying so, where there is no cc."""
    if shutil.which("cc") is None:
        pytest.skip("cc not found on PATH: the README's compiled-provider example is built with it")
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    for line in shell_lines("cc"):
        subprocess.run(["bash", "-ec", line], cwd=tmp_path, check=True, timeout=WAIT)
    return tmp_path


def run(
    args: list[str], cwd: Path, stdin: str | None = None, shell: bool = False
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` (or, with `shell`, the bash command ARGS[0] with this Python's scripts first
    on PATH) in `cwd`; it must succeed without a traceback."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")])}
    done = subprocess.run(
        ["bash", "-ec", args[0]] if shell else [sys.executable, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    errors = without_closing_heartbeats(done.stderr)
    assert "Traceback" not in errors, errors[-3000:]
    return done


LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - ", re.M)
CLOSING_HEARTBEAT = (
    "distributed.worker - ERROR - Failed to communicate with scheduler during heartbeat"
)


def without_closing_heartbeats(stderr: str) -> str:
    """`stderr` less distributed's log records (with their tracebacks) of a worker whose
    heartbeat met the scheduler already closed: a starved machine's race at cluster close, not
    an error of the example. Every other record and line stays."""
    starts = [m.start() for m in LOG_RECORD.finditer(stderr)]
    ends = [*starts[1:], len(stderr)] if starts else []
    pieces = [stderr[: starts[0] if starts else len(stderr)]]
    for start, end in zip(starts, ends, strict=True):
        if CLOSING_HEARTBEAT not in stderr[start:end].split("\n", 1)[0]:
            pieces.append(stderr[start:end])
    return "".join(pieces)


def test_only_closing_heartbeat_records_are_forgiven() -> None:
    trace = "Traceback (most recent call last):\n  ...\nCommClosedError: Stream is closed\n"
    heartbeat = f"2026-12-02 05:07:31,658 - {CLOSING_HEARTBEAT}.\n{trace}"
    other = f"2026-12-02 05:07:32,001 - distributed.nanny - ERROR - Worker process died\n{trace}"
    assert without_closing_heartbeats("") == ""
    assert without_closing_heartbeats(trace) == trace
    assert without_closing_heartbeats("note\n" + heartbeat) == "note\n"
    assert without_closing_heartbeats(heartbeat + other) == other
    assert without_closing_heartbeats(trace + heartbeat) == trace


def test_readme_has_python_examples() -> None:
    found = python_blocks()
    assert len(found) >= 3 and "import fueltensor as ft" in found[0]
    assert any('if __name__ == "__main__":' in b and "LocalCluster" in b for b in found)
    assert any("ft.load_library(" in b for b in found)  # the compiled example runs too


@needs("distributed", "dask")  # the Dask example
@needs("torch", "torch")  # the frameworks example
@needs("jax", "jax")
def test_readme_examples_pasted_into_an_interpreter(examples: Path) -> None:
    done = run(["-c", CONSOLE], examples, "\0".join(python_blocks()))
    assert "via fuel-reference-backend" in done.stdout  # the first block's plan
    assert "via my-backend" in done.stdout  # the lever the tie names, pulled
    assert "add_f32 vs c_add_f32" in done.stdout  # the compiled example, compared
    assert "minimum_f32 vs" in done.stdout and "signed zero" in done.stdout  # the frameworks
    assert "['maximum_f32', 'add_f32'," in done.stdout  # the Dask block's kernels


@needs("distributed", "dask")  # the Dask example
@needs("torch", "torch")  # the frameworks example
@needs("jax", "jax")
def test_readme_examples_saved_as_a_script(examples: Path) -> None:
    script = examples / "readme_examples.py"
    script.write_text("\n".join(python_blocks()))
    done = run([str(script)], examples)
    assert "['maximum_f32', 'add_f32'," in done.stdout  # the Dask block ran, once
    assert done.stdout.count("judge across 1 machine") == 1


def test_readme_shell_lines_run(examples: Path) -> None:
    """Each `sh` line with the installed `fueltensor` command: the compiled example through
    the author's loop, every step succeeding."""
    lines = shell_lines("fueltensor")
    assert [line.split()[1] for line in lines] == ["contracts", "explain", "compare", "judge"]
    out = [run([line], examples, shell=True).stdout for line in lines]
    assert "4 contracts checked, 0 problems, 4 warnings" in out[0]
    assert "use_backend('example-c-kernels')" in out[1]
    assert "add_f32 vs c_add_f32" in out[2] and " 0 of " in out[2]
    assert "4 audits, 0 failing" in out[3]
