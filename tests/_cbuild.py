"""Building the tests' C: a build tool found on PATH (or the test skips, naming it), and a C
source compiled into a shared library with cc."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def tool(name: str, what: str) -> str:
    """The path of build tool `name`, or skip the test saying it is missing."""
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} not found on PATH: building the {what} example needs it")
    return found


def tool_env() -> dict[str, str]:
    """The environment a build tool runs in: this one without LD_PRELOAD (the sanitizer pass,
    .ci/sanitize, preloads its runtimes into the tests, under which rustc faults)."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


SANITIZED: tuple[str, ...] = (
    ("-fsanitize=address,undefined", "-fno-sanitize-recover=all")
    if "libasan" in os.environ.get("LD_PRELOAD", "")
    else ()
)
"""The flags that build a library the sanitizer pass (.ci/sanitize, which preloads ASan and
UBSan into the tests) checks too: none in every other run."""


def build_c(source: Path, into: Path, *flags: str) -> Path:
    """`source` compiled with cc into the shared library `into`, with `flags` added."""
    cc = tool("cc", "C")
    command = [cc, "-O2", "-shared", "-fPIC", *flags, "-o", str(into), str(source)]
    subprocess.run(command, check=True, env=tool_env())
    return into
