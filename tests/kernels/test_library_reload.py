"""`ft.load_library` on a library rebuilt at the same path loads the new code (issue 35, item 4):
edit, rebuild, reload is a kernel author's loop, and glibc's dlopen alone would hand back the
first build."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.kernels import libraries

SOURCE = """
#include <stdint.h>
#include <stddef.h>
#include <string.h>
int32_t fill(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out, size_t n) {
    (void)a, (void)na, (void)b, (void)nb;
    float v = VALUE;
    for (size_t i = 0; i + 4 <= n; i += 4) memcpy(out + i, &v, 4);
    return 0;
}
"""
ADDED = """
int32_t added(const uint8_t *a, size_t na, const uint8_t *b, size_t nb, uint8_t *out, size_t n) {
    return fill(a, na, b, nb, out, n);
}
"""


def _build(directory: Path, value: str, extra: str = "") -> Path:
    """The library `libfill.so` in `directory`, its `fill` writing `value`, built with cc."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("cc not found on PATH: the test builds shared libraries")
    source = directory / "fill.c"
    source.write_text(SOURCE.replace("VALUE", value) + extra)
    library = directory / "libfill.so"
    built = directory / "libfill.so.new"
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-o", str(built), str(source)], check=True)
    built.replace(library)  # as a build system does: the path now names a new file
    return library


def _run(kernels: object, entry: str = "t::fill") -> float:
    out = np.empty(3, np.float32)
    lhs = np.zeros(3, np.float32)
    kernels[entry](lhs, lhs, out=out)  # type: ignore[index]
    assert len(set(out.tolist())) == 1
    return float(out[0])


def test_a_rebuild_at_the_same_path_runs_its_new_code(tmp_path: Path) -> None:
    library = _build(tmp_path, "1.0f")
    first = ft.load_library(library, {"t::fill": "fill"})
    assert _run(first) == 1.0
    library = _build(tmp_path, "2.0f", ADDED)
    second = ft.load_library(library, {"t::fill": "fill", "t::added": "added"})
    assert _run(second) == 2.0
    assert _run(second, "t::added") == 2.0
    assert _run(first) == 1.0  # a map loaded before keeps the code it was loaded with


def test_a_rebuild_written_over_the_same_file_runs_its_new_code(tmp_path: Path) -> None:
    library = _build(tmp_path, "3.0f")
    assert _run(ft.load_library(library, {"t::fill": "fill"})) == 3.0
    (tmp_path / "next").mkdir()
    inode = library.stat().st_ino
    library.write_bytes(_build(tmp_path / "next", "4.0f").read_bytes())  # cc -o onto the file
    assert library.stat().st_ino == inode
    assert _run(ft.load_library(library, {"t::fill": "fill"})) == 4.0


def test_the_same_bytes_are_loaded_once(tmp_path: Path) -> None:
    library = _build(tmp_path, "5.0f")
    elsewhere = tmp_path / "elsewhere.so"
    shutil.copyfile(library, elsewhere)
    a, b = libraries.load(library), libraries.load(elsewhere)
    assert a.copy == b.copy and a.handle is b.handle and a.sha256 == b.sha256
    assert (a.source, b.source) == (library, elsewhere)
    assert stat.S_IMODE(a.copy.parent.stat().st_mode) == 0o700
    assert a.copy.read_bytes() == library.read_bytes()


def test_the_private_copies_go_when_the_process_exits_and_not_with_a_forked_child(
    tmp_path: Path,
) -> None:
    library = _build(tmp_path, "6.0f")
    code = (
        "import os, sys, fueltensor as ft\n"
        "from fueltensor.kernels import libraries\n"
        f"ft.load_library({str(library)!r}, {{'t::fill': 'fill'}})\n"
        f"copy = libraries.load(__import__('pathlib').Path({str(library)!r})).copy\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"
        "os.waitpid(pid, 0)\n"
        "assert copy.exists(), 'a forked child removed its parent copies'\n"
        "print(copy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    copy = Path(done.stdout.strip())
    assert copy.name.endswith("-libfill.so")
    assert not copy.exists() and not copy.parent.exists()
