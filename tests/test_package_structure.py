"""The package's shape: no import cycle even counting imports inside functions, a core layer
that reaches nothing above it, and the size limits (functions, modules) of the style rules."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import fueltensor as ft
from fueltensor.core.hooks import HookNotInstalled, Hooks, present

PACKAGE = Path(ft.__file__).parent
ABOVE_CORE = ("fueltensor.engine", "fueltensor.array_api", "fueltensor.tools")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    modules = {}
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
    return {name: _imports(path, name, modules) for name, path in modules.items()}


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


def test_every_subpackage_is_installed() -> None:
    """pyproject.toml lists every package under fueltensor/ (a non-editable install, such as
    the sanitizer pass's, leaves out one it does not list, and `import fueltensor` fails)."""
    import tomllib

    pyproject = PACKAGE.parent / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("fueltensor is installed, not run from its checkout")
    listed = set(tomllib.loads(pyproject.read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")
    }
    assert found - listed == set()
