"""The package's shape: no import cycle even counting imports inside functions, a core layer
that reaches nothing above it, a compiled floor (the C extensions) below core that imports no
Python of ours, and the size limits (functions, modules, C files and C functions) of the style
rules; and the test tree's shape: folders that mirror the package, the helpers in one place."""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _extras import OUTSIDE, ROOT, TESTS

import fueltensor as ft
from fueltensor.core.hooks import HookNotInstalled, Hooks, present

PACKAGE = Path(ft.__file__).parent
C_SOURCES = ROOT / "fueltensor" / "ext" / "src"
"""The extensions' sources, read from the checkout (an installed wheel holds no C)."""
ABOVE_CORE = (
    "fueltensor.engine",
    "fueltensor.array_api",
    "fueltensor.tools",
    "fueltensor.kernels",
    "fueltensor.fkc",
    "fueltensor.registry",
)
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500
MAX_C_FILE_LINES = 600
FLOOR = "fueltensor.ext"
NUMPY_PRIVATE_CALLS = {"_resolve_dtypes_and_context", "_get_strided_loop"}
"""NumPy's documented low-level ufunc calls: the only underscored names the C may read."""
MIRRORS = ("core", "fkc", "engine", "kernels", "array_api", "tools", "testing")
"""The test folders named after the subpackage whose subject their files test."""
ACROSS = ("clients", "reliability", "repo")
"""The test folders whose subject crosses the subpackages: real array-API and Dask clients, the
reliability tests (hostile inputs, faults, fuzzing), and the files about the whole repository
(CI, the README, the notebooks, this file, the wheel, the environment)."""
TEST_DATA = ("seeds",)
"""The folders of tests/ that hold no tests: the seed documents' copies."""


def _extensions() -> dict[str, Path]:
    """Each compiled extension by dotted name, with the folder of its sources
    (`src/<name>/_<name>.c` builds `fueltensor.ext._<name>`)."""
    return {
        f"{FLOOR}._{folder.name}": folder
        for folder in sorted(C_SOURCES.iterdir())
        if (folder / f"_{folder.name}.c").is_file()
    }


_C_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\])*"', re.S)


def _c_strings(folder: Path) -> set[str]:
    """The string literals of the C files in `folder` and of the shared header."""
    found = set()
    for path in [*sorted(folder.glob("*.[ch]")), C_SOURCES / "abi.h"]:
        for token in _C_TOKENS.findall(path.read_text("utf-8")):
            if token.startswith('"'):
                found.add(token[1:-1])
    return found


def _c_imports(folder: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The package modules extension `name`'s C names as a string (what it may import: the
    module names it passes to PyImport or builds capsule and type names from)."""
    named = {s if s in modules else s.rpartition(".")[0] for s in _c_strings(folder)}
    return {m for m in named if m in modules and m != name}


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name), the compiled
    extensions included (by the folder of their sources)."""
    modules = _extensions()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:` (never run, so no import at run time)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """The package modules `path` imports anywhere (module level or inside functions);
    `from pkg import mod` counts as importing `mod` when it is a module, else `pkg`."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text("utf-8"))
    skipped = _type_checking_only(tree)
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), here)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: _c_imports(path, name, modules) if path.is_dir() else _imports(path, name, modules)
        for name, path in modules.items()
    }


def test_function_level_imports_are_counted() -> None:
    # The package root teaches dispatch Dask's collections with an import inside a function.
    assert "fueltensor.dask" in _graph()["fueltensor"]


def test_the_module_import_graph_has_no_cycle() -> None:
    graph = _graph()
    # The package itself re-exports its modules; none of them may import it back.
    assert not [n for n, deps in graph.items() if "fueltensor" in deps]
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph[name]):
            assert state.get(dep) != 1, f"import cycle: {' -> '.join([*trail, name, dep])}"
            if dep not in state:
                visit(dep, [*trail, name])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [])


def test_core_reaches_nothing_above_it() -> None:
    graph = _graph()
    core = [n for n in graph if n == "fueltensor.core" or n.startswith("fueltensor.core.")]
    reached, todo = set(core), list(core)
    while todo:
        for dep in graph[todo.pop()] - reached:
            reached.add(dep)
            todo.append(dep)
    above = sorted(m for m in reached if m == "fueltensor" or m.startswith(ABOVE_CORE))
    assert not above, f"fueltensor.core reaches {above}"


def test_the_compiled_floor_sits_below_core_and_imports_no_python_of_ours() -> None:
    """The extensions are modules of the graph: core imports `_fast` (it builds tensors with
    it), and the extensions name no module of fueltensor's but each other."""
    graph = _graph()
    extensions = set(_extensions())
    assert extensions == {f"{FLOOR}._fast", f"{FLOOR}._native", f"{FLOOR}._certify"}
    assert f"{FLOOR}._fast" in graph["fueltensor.core.shared"]
    assert graph[f"{FLOOR}._fast"] == {f"{FLOOR}._native"}
    for name in extensions:
        assert graph[name] <= extensions, f"{name} imports {sorted(graph[name] - extensions)}"
    assert not graph[FLOOR], "the floor's package imports nothing"


def test_the_c_reads_no_private_name_of_ours() -> None:
    """Every underscored name the C could look up is NumPy's documented low-level ufunc API:
    fueltensor's Python reaches the C only through `bind_core` and `configure`."""
    for name, folder in _extensions().items():
        private = {
            s
            for s in _c_strings(folder)
            if re.fullmatch(r"_[A-Za-z]\w*", s) and not s.startswith("__")
        }
        assert private <= NUMPY_PRIVATE_CALLS, f"{name} names {sorted(private)}"


def _blank(match: re.Match[str]) -> str:
    """The matched text as spaces, its line breaks kept (so line numbers stay right)."""
    return re.sub(r"[^\n]", " ", match.group(0))


_PREPROCESSOR = re.compile(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*")


def _c_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, lines) of each function defined in C `text`: a top-level brace block
    whose head ends in a parameter list (comments, strings and preprocessor lines skipped)."""
    text = _PREPROCESSOR.sub(_blank, _C_TOKENS.sub(_blank, text))
    found: list[tuple[str, int, int]] = []
    depth = head_start = 0
    opened: tuple[str, int] | None = None  # the function whose body is open
    for i, ch in enumerate(text):
        if ch == "{":
            head = text[head_start:i]
            if depth == 0 and re.search(r"\)\s*$", head) and "=" not in head.split("(")[0]:
                first = text.count("\n", 0, i - len(head.lstrip())) + 1
                opened = (re.findall(r"(\w+)\s*\(", head)[0], first)
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0 and opened is not None:
                found.append((*opened, text.count("\n", 0, i) + 2 - opened[1]))
                opened = None
            head_start = i + 1 if depth == 0 else head_start
        elif ch == ";" and depth == 0:
            head_start = i + 1
    return found


def test_c_files_and_functions_stay_small() -> None:
    too_long = []
    for path in sorted(C_SOURCES.rglob("*.[ch]")):
        text = path.read_text("utf-8")
        where = path.relative_to(C_SOURCES.parent.parent.parent)
        if len(text.splitlines()) > MAX_C_FILE_LINES:
            too_long.append(f"{where}: {len(text.splitlines())} lines")
        for name, line, lines in _c_functions(text):
            if lines > MAX_FUNCTION_LINES:
                too_long.append(f"{where}:{line} {name}(): {lines} lines")
    assert not too_long, "over the limits: " + "; ".join(too_long)


def test_the_c_function_counter_sees_functions() -> None:
    text = "static int f(int a) {\n    if (a) {\n        return 1;\n    }\n    return 0;\n}\n"
    text += "static T t = {\n 1, 2 };\n#define M(x) { x }\nvoid g(void)\n{\n}\n"
    assert _c_functions(text) == [("f", 1, 6), ("g", 10, 3)]
    assert len(_c_functions((C_SOURCES / "fast" / "views.c").read_text("utf-8"))) > 10


def _abi_constants() -> dict[str, int]:
    """The integer constants abi.h defines (`#define NAME value`, `(1 << k)` evaluated)."""
    found = {}
    for name, value in re.findall(
        r"(?m)^#define (\w+) (\(?\d[\d <]*\)?)\s*$", (C_SOURCES / "abi.h").read_text("utf-8")
    ):
        a, _, b = value.strip("()").partition("<<")
        found[name] = int(a) << int(b) if b else int(a)
    return found


def test_each_abi_constant_is_defined_once_and_its_twins_agree() -> None:
    """abi.h defines each constant once; the extensions export it from there, and the Python
    twins the pure build needs (core.layout.MAX_DIMS, core.storage's alignment) equal it."""
    from fueltensor.core import layout, storage

    abi = _abi_constants()
    assert {"MAX_DIMS", "ALIGNMENT", "GIL_FREE_FROM", "PARALLEL_FROM"} <= set(abi)
    assert abi["MAX_DIMS"] == layout.MAX_DIMS
    assert abi["ALIGNMENT"] == storage.DEFAULT_ALIGNMENT
    for folder in _extensions().values():
        for path in folder.glob("*.[ch]"):
            redefined = set(re.findall(r"(?m)^#define (\w+)", path.read_text("utf-8"))) & set(abi)
            assert not redefined, f"{path.name} redefines {sorted(redefined)}"
    try:
        from fueltensor.ext import _fast, _native
    except ImportError:
        return
    for name in ("MAX_DIMS", "GIL_FREE_FROM", "PARALLEL_FROM", "STREAM_FROM", "MAX_THREADS"):
        assert getattr(_native, name) == abi[name], name
    assert abi["ALIGNMENT"] == _fast.ALIGNMENT


def test_functions_and_modules_stay_small() -> None:
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text("utf-8")
        where = path.relative_to(PACKAGE.parent)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{where}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{where}:{node.lineno} {node.name}(): {lines} lines")
    assert not too_long, "over the limits: " + "; ".join(too_long)


def test_a_hook_used_before_it_is_installed_says_so() -> None:
    fresh = Hooks()
    with pytest.raises(HookNotInstalled, match="'namespace' hook is not installed"):
        fresh.namespace.sum  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        fresh.nonsense  # noqa: B018


def test_a_model_without_a_presentation_says_so() -> None:
    class Unshown:
        pass

    with pytest.raises(HookNotInstalled, match="no html presentation is registered for Unshown"):
        present(Unshown(), "html")


def test_the_package_root_installs_every_hook() -> None:
    from fueltensor.core.hooks import HOOKS

    assert HOOKS.namespace is ft
    for slot in Hooks.__slots__:
        getattr(HOOKS, slot)


def test_every_subpackage_is_in_the_wheel() -> None:
    """pyproject.toml lists packages by hand: a new subpackage left out installs without its
    files, which an editable install never shows (the installed wheel then fails to import)."""
    tomllib = pytest.importorskip("tomllib")
    root = ROOT
    listed = set(
        tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(root).parts)
        for init in (root / "fueltensor").rglob("__init__.py")
    }
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"


def test_the_test_tree_mirrors_the_package() -> None:
    """Every test file sits in a folder of MIRRORS, each a subpackage of fueltensor, or of ACROSS;
    tests/ itself holds no test file, and the shared helpers (conftest.py, the `_*.py` modules,
    the C sources, the seed copies) only it: a subfolder holds test files and nothing else. Their
    names stay unique across folders, which pytest's default import mode needs (no
    __init__.py)."""
    assert [m for m in MIRRORS if not (PACKAGE / m / "__init__.py").is_file()] == []
    # Tools' caches (__pycache__, .pytest_cache, .hypothesis when pytest runs from tests/) aside.
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name[0] not in "._"}
    assert folders == {*MIRRORS, *ACROSS, *TEST_DATA}
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []
    tests, others = [], []
    for folder in (TESTS / name for name in (*MIRRORS, *ACROSS)):
        for path in folder.rglob("*"):
            if "__pycache__" not in path.parts:
                named = path.is_file() and re.fullmatch(r"test_\w+\.py", path.name)
                (tests if named and path.parent == folder else others).append(path)
    assert others == [], f"only test files belong in the test folders: {others}"
    names = [p.name for p in tests]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def _child_lines(code: str) -> list[str]:
    """What `code` prints in a fresh interpreter started outside the checkout, line by line."""
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=OUTSIDE, check=True
    )
    return run.stdout.splitlines()


def test_import_fueltensor_leaves_the_tools_for_their_first_use() -> None:
    """`import fueltensor` (every CLI call pays it) loads neither the judge, certify, the
    comparison, the checked runs nor `fueltensor.testing`; each arrives on first use."""
    code = (
        "import sys, fueltensor as ft\n"
        "heavy = ('fueltensor.testing', 'fueltensor.tools.judge', 'fueltensor.tools.certify',"
        " 'fueltensor.tools.compare', 'fueltensor.tools.checked', 'fueltensor.tools.semantics')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "ft.judge, ft.certify, ft.compare_backends, ft.semantics_table, ft.testing.bits\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "print('certify' in dir(ft), ft.certify is ft.tools.certify.certify)\n"
    )
    before, after, named = _child_lines(code)
    assert before == "[]"
    assert after.count("fueltensor.") == 6 and named == "True True"
    with pytest.raises(AttributeError, match="has no attribute 'nonesuch'"):
        ft.nonesuch  # noqa: B018


def test_import_fueltensor_leaves_the_contract_schema_for_the_first_registry() -> None:
    """`import fueltensor` builds no contract class (`fkc.schema`'s dataclasses) and loads no
    document machinery (the cache, the validator), nor the libraries only a compiled provider
    or a display needs (html, tempfile): the first operation, which loads the registry, does
    (issue 44: the import back under 0.15 s)."""
    code = (
        "import sys, fueltensor as ft\n"
        "lazy = ('fueltensor.fkc.schema', 'fueltensor.fkc.cache', 'fueltensor.fkc.validate',"
        " 'html', 'tempfile')\n"
        "print(sorted(m for m in lazy if m in sys.modules))\n"
        "ft.asarray([1.0]) + 1.0\n"
        "print(sorted(m for m in lazy[:3] if m in sys.modules))\n"
        "print(ft.registry()['add_f32'].op_kind)\n"
    )
    before, after, kind = _child_lines(code)
    assert before == "[]"
    assert after == str(
        sorted(["fueltensor.fkc.schema", "fueltensor.fkc.cache", "fueltensor.fkc.validate"])
    )
    assert kind == "AddElementwise"
