"""The code blocks of the README and of every docs/ page run as written, each page on its own.
A page's Python examples run in order, in a fresh interpreter: pasted line by line into an
interactive console (where a blank line ends an indented block), and saved together as a script
run with `python` (where a Dask cluster's worker processes import the script: the example's main
guard must keep them from starting clusters of their own). They run in a folder where the
page's `sh` blocks built its compiled example with cc (skipped, saying so, where there is no
cc); the other `sh` lines run one by one with the installed `fueltensor` command. Blocks shown
for reading (an FKC document, C, a listing of signatures, the `bash` set-up commands) use
another fence language and are not run; the README's `bash` test command is the one `.ci/run`
runs (tests/repo/test_ci.py). The README stays a front door: at most 150 lines, and every relative
link in it and in docs/ resolves."""

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
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
"""The README and every docs page: each runs its own blocks."""
FRONT_DOOR_LINES = 150
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
        raise SystemExit("a block is incomplete when pasted")
sys.exit(1 if Console.failed else 0)
"""
"""Feeds a page's blocks, separated by NUL, to an interactive console as typed input (a
blank line ends an indented block there, and a statement's error is printed, not raised); exits
1 when any statement failed."""


def name(page: Path) -> str:
    """The page's path in the repository: README.md, docs/dask.md ..."""
    return page.relative_to(ROOT).as_posix()


def blocks(page: Path, language: str) -> list[str]:
    """The bodies of the page's fences of `language` (python, sh, bash), in order."""
    text = page.read_text(encoding="utf-8")
    return re.findall(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)


def shell_lines(page: Path) -> list[str]:
    """The commands of the page's ```sh fences, in order."""
    return [line for b in blocks(page, "sh") for line in b.splitlines() if line.strip()]


def builds(line: str) -> bool:
    """Whether an `sh` line compiles an example with cc (run before the page's other blocks)."""
    return line.split()[0] == "cc"


NEEDS = {
    "docs/casts.md": [("torch", "torch")],
    "docs/dask.md": [("distributed", "dask")],
    "docs/semantics.md": [("torch", "torch"), ("jax", "jax")],
}
"""The modules a page's Python examples import or name, and the extra that brings each."""

SHOWS = {
    "README.md": ["via fuel-reference-backend", "judge"],  # the first look's plan; the audit
    "docs/providers.md": ["via my-backend", "add_f32 vs c_add_f32"],  # the tie's lever, pulled
    "docs/semantics.md": ["minimum_f32 vs", "signed zero"],  # the frameworks, compared
    "docs/dask.md": ["['maximum_f32', 'add_f32',"],  # the Dask block's kernels
    "docs/certificates.md": ["8,388,608 pairs"],
    "docs/casts.md": ["torch_cast_f32_e4m3_sat declares overflow saturate where the call asks"],
    "docs/reductions.md": ["via example-c-reduction", "True"],  # a user's ABI v2 sum, judged
    "docs/matmul.md": ["via example-c-matmul", "blas_matmul_f32 vs my_matmul_f32", "True"],
}
"""What a page's Python examples print, pasted or saved; every page named has examples."""

SHOWN_ONCE = {"docs/dask.md": "judge across 1 machine"}
"""Printed exactly once by the saved script: the main guard kept the workers from running it."""

SHELL_SHOWS = {
    "docs/providers.md": [
        "4 contracts checked, 0 problems, 4 warnings",
        "use_backend('example-c-kernels')",
        "add_f32 vs c_add_f32",
        "4 audits, 0 failing",
        "c_div_bf16 (example-c-kernels, bfloat16): 256 pairs",
        "1 contract checked, 0 problems",
        "via my-exp",
        "my_exp_f32",  # beside exp_f32 and the oracle (the oracle alone in pure mode)
        "1 audit, 0 failing",
        "judge: ACCEPTS",
        "1 contract checked, 0 problems",
        "via my-where",
        "where_f32 vs my_where_f32",
        "1 audit, 0 failing",
    ],
    "docs/reductions.md": ["1 audit, 0 failing"],
    "docs/matmul.md": ["1 audit, 0 failing"],
}
"""What each `sh` line of a page (after its cc lines) prints, line by line."""


def pages(language: str) -> list[object]:
    """The pages with blocks of `language`, as test parameters named by path and skipped,
    saying why, where a module their examples need is missing."""
    return [
        pytest.param(page, marks=[needs(m, e) for m, e in NEEDS.get(name(page), [])], id=name(page))
        for page in PAGES
        if blocks(page, language)
    ]


def folder(page: Path, tmp_path: Path) -> Path:
    """A folder holding the repository's examples/, where the page's `cc` lines built its
    compiled example; the test is skipped, saying so, where the page needs cc and there is none."""
    built = [line for line in shell_lines(page) if builds(line)]
    if built and shutil.which("cc") is None:
        pytest.skip(f"cc not found on PATH: {name(page)}'s compiled example is built with it")
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    for line in built:
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


def test_the_examples_that_must_run_are_found() -> None:
    """A fence relabelled by mistake would stop running quietly: the pages that SHOWS names
    have Python examples, and the README's first one starts from the import."""
    python = {name(page) for page in PAGES if blocks(page, "python")}
    assert set(SHOWS) <= python
    assert "import fueltensor as ft" in blocks(README, "python")[0]
    assert any('if __name__ == "__main__":' in b for b in blocks(ROOT / "docs/dask.md", "python"))
    assert any("ft.load_library(" in b for b in blocks(ROOT / "docs/providers.md", "python"))


@pytest.mark.docs
@pytest.mark.parametrize("page", pages("python"))
def test_examples_pasted_into_an_interpreter(page: Path, tmp_path: Path) -> None:
    done = run(["-c", CONSOLE], folder(page, tmp_path), "\0".join(blocks(page, "python")))
    for shown in SHOWS.get(name(page), []):
        assert shown in done.stdout, shown


@pytest.mark.docs
@pytest.mark.parametrize("page", pages("python"))
def test_examples_saved_as_a_script(page: Path, tmp_path: Path) -> None:
    script = folder(page, tmp_path) / "examples.py"
    script.write_text("\n".join(blocks(page, "python")))
    done = run([str(script)], script.parent)
    for shown in SHOWS.get(name(page), []):
        assert shown in done.stdout, shown
    if name(page) in SHOWN_ONCE:
        assert done.stdout.count(SHOWN_ONCE[name(page)]) == 1


@pytest.mark.docs
@pytest.mark.parametrize("page", pages("sh"))
def test_shell_lines_run(page: Path, tmp_path: Path) -> None:
    """Each `sh` line but the cc ones (run first) with the installed `fueltensor` command: for
    docs/providers.md, the compiled example through the author's loop, every step succeeding."""
    where = folder(page, tmp_path)
    lines = [line for line in shell_lines(page) if not builds(line)]
    out = [run([line], where, shell=True).stdout for line in lines]
    expected = SHELL_SHOWS.get(name(page))
    if expected is not None:
        assert len(expected) == len(out)
        for shown, printed in zip(expected, out, strict=True):
            assert shown in printed, shown


def test_the_readme_is_a_front_door() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= FRONT_DOOR_LINES, f"README.md has {len(lines)} lines"


FENCE = re.compile(r"^```.*?^```$", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} +(.+?) *$", re.M)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings (outside code blocks): lower case, every
    character but letters, digits, `-`, `_` and spaces dropped, spaces made hyphens."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in HEADING.findall(text)}


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_every_relative_link_resolves(page: Path) -> None:
    """Each link to a file of the repository names one that exists, and a `#anchor` into a
    Markdown page names one of its headings."""
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, broken
