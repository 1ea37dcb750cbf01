"""The cheat catalogue (issue 35, item 3; issue 41, item 1): for each op and dtype, the judge
passes the honest kernel of tests/cheat_kernels.c and fails each of its eleven cheats for what
it does, none for what the one before it did in the same worker, and the process that ran the
judge exits normally afterwards."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _cheats import DTYPES, OP_KINDS, VARIANTS, build
from _extras import TESTS

JUDGE = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
import fueltensor as ft
from _cheats import catalogue, register
kernels = [k for op in {ops!r} for k in catalogue(op, {dtype!r})]
reg = register(Path({library!r}), "cheats", kernels, Path({doc!r}))
report = ft.judge(reg, quick=True, progress=False)
print(json.dumps({{row.kernel: row.failures for row in report.rows}}))
"""

CAUGHT_BY = {
    "zeros": "precision: ",
    "specials": "precision: ",
    "reduced": "precision: ",
    "tail": "precision: ",
    "cache": "precision: ",
    "overrun": "overrun: wrote past its end; buffer out, bytes ",
    "scribble": "read-only pages; with writable inputs it wrote into an input; buffer lhs",
    "exit": "exit: the kernel ended the worker process with exit status 0 (exit()",
    "late": "crash: the worker died of SIGSEGV",
    "ftz": "fp environment: left the floating-point controls changed (MXCSR 0x1f80 -> 0x9fc0)",
    "untouched": "unwritten: out bytes depend on what out held before the call",
}
"""What the judge says of each cheat: the check that fails it."""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/cheat_kernels.c, built."""
    return build("cheat_kernels.c", tmp_path_factory.mktemp("cheats") / "libcheats.so")


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_the_judge_fails_every_cheat_and_passes_the_honest_kernel(
    library: Path, tmp_path: Path, dtype: str
) -> None:
    code = JUDGE.format(
        tests=str(TESTS),
        ops=list(OP_KINDS),
        dtype=dtype,
        library=str(library),
        doc=str(tmp_path / "cheats.md"),
    )
    run = [sys.executable, "-c", textwrap.dedent(code)]
    done = subprocess.run(run, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(failures) == len(OP_KINDS) * len(VARIANTS)
    for op in OP_KINDS:
        assert failures[f"honest_{op}_{dtype}"] == [], (op, failures[f"honest_{op}_{dtype}"])
        for variant, words in CAUGHT_BY.items():
            if variant == "ftz" and platform.machine() not in ("x86_64", "AMD64"):
                continue  # the cheat sets MXCSR only
            said = failures[f"{variant}_{op}_{dtype}"]
            assert any(words in s for s in said), (variant, op, said)
