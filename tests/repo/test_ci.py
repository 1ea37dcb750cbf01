"""What the project declares and what CI runs stay one: the README's test command is the one
.ci/run runs; the lowest-dependency constraints pin every direct dependency at the floor
pyproject.toml declares; the matrix's Pythons are the ends of the declared ones; and
`fueltensor.__version__` is the installed metadata's version."""

from __future__ import annotations

import importlib
import re
import sys
from importlib.metadata import version
from typing import Any

from _extras import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import fueltensor as ft

CI = ROOT / ".ci"


def pyproject() -> dict[str, Any]:
    """pyproject.toml, read with tomllib (tomli before Python 3.11, which pytest brings)."""
    toml = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    return toml.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


FRAMEWORK_EXTRAS = ("torch", "jax")
"""The extras the matrix does not install: CI's main environment runs the framework providers
with torch pinned exactly (a range fetches CUDA builds) and JAX's newest release."""


def declared() -> list[Requirement]:
    """Every requirement pyproject.toml states that the matrix installs: the package's, and each
    extra's but the frameworks'."""
    project = pyproject()["project"]
    extras = [r for e, r in project["optional-dependencies"].items() if e not in FRAMEWORK_EXTRAS]
    return [Requirement(r) for r in [*project["dependencies"], *(r for e in extras for r in e)]]


def constraints() -> dict[str, str]:
    """.ci/constraints-lowest.txt: canonical name -> pinned version."""
    pins = {}
    for line in (CI / "constraints-lowest.txt").read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            name, _, pinned = text.partition("==")
            assert pinned, f"not an exact pin: {line!r}"
            pins[canonicalize_name(name)] = pinned.strip()
    return pins


def test_the_readme_test_command_is_what_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```$", readme, re.M | re.S)
    (command,) = [b.strip() for b in blocks if "pytest" in b]
    lines = [line.strip() for line in (CI / "run").read_text(encoding="utf-8").splitlines()]
    assert command in lines


def test_the_lowest_constraints_pin_every_declared_floor() -> None:
    """Each direct dependency with a floor is pinned at exactly it (one floor per package,
    whichever extras name it); a dependency without one (a stub package) is left to the
    resolver; and nothing else is pinned but the packages a pinned one's extras bring, in its
    own release (dask[distributed] -> distributed)."""
    pins = {n: Version(v) for n, v in constraints().items()}
    floors: dict[str, set[Version]] = {}
    for req in declared():
        lows = {Version(s.version) for s in req.specifier if s.operator == ">="}
        floors.setdefault(canonicalize_name(req.name), set()).update(lows)
    floors = {n: lows for n, lows in floors.items() if lows}
    assert {n: {pins.get(n)} for n in floors} == floors
    extra = {n: v for n, v in pins.items() if n not in floors}
    assert extra == {"distributed": pins["dask"]}


def test_the_matrix_runs_the_ends_of_the_declared_pythons() -> None:
    project = pyproject()["project"]
    minors = [
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert minors == sorted(minors, key=lambda v: tuple(map(int, v.split("."))))
    assert project["requires-python"] == f">={minors[0]}"
    matrix = (CI / "matrix").read_text(encoding="utf-8")
    assert f"\nOLDEST={minors[0]}\n" in matrix and f"\nNEWEST={minors[-1]}\n" in matrix
    first, last = (tuple(map(int, v.split("."))) for v in (minors[0], minors[-1]))
    assert minors == [f"3.{m}" for m in range(first[1], last[1] + 1)]


def test_every_declared_python_runs_in_ci() -> None:
    """The matrix's cells and the main environment's Python (MAIN) are every declared Python:
    the oldest with the lowest dependencies, the others with the newest."""
    project = pyproject()["project"]
    minors = [
        c.rsplit(" :: ", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    matrix = (CI / "matrix").read_text(encoding="utf-8")
    names = dict(re.findall(r"^(OLDEST|NEWEST|MAIN)=(\S+)$", matrix, re.M))
    (cells,) = re.findall(r"^CELLS=\((.*)\)$", matrix, re.M)
    specs = [
        s.replace("$OLDEST", names["OLDEST"]).replace("$NEWEST", names["NEWEST"])
        for s in re.findall(r'"([^"]+)"', cells)
    ]
    pairs = {tuple(spec.split()[:2]) for spec in specs}
    newest = {(v, "newest") for v in minors[1:] if v != names["MAIN"]}
    assert pairs == {(minors[0], "lowest")} | newest
    kernels = sorted(spec.split()[2] for spec in specs)
    assert kernels.count("pure") == 1 and set(kernels) == {"compiled", "pure"}
    assert names["MAIN"] in minors


def test_the_version_is_the_installed_metadatas() -> None:
    assert ft.__version__ == version("fueltensor")
