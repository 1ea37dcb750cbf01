"""The op table is the one source of the contract operations, and the package has no cycle."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.engine.dispatch import OPERATIONS
from fueltensor.kernels import _chassis
from fueltensor.ops import CONTRACT_OPS, ContractOp
from fueltensor.tools.judge import REFERENCES

PACKAGE = Path(ft.__file__).parent


@pytest.mark.parametrize("row", CONTRACT_OPS, ids=lambda r: r.name)
def test_every_row_is_a_namespace_function_an_operator_and_a_kernel_op(row: ContractOp) -> None:
    assert getattr(ft, row.name) is OPERATIONS[row.name]
    assert row.name in ft.__all__
    assert row.op_kind in REFERENCES
    assert row.kernel_op in {op.name for op in _chassis.OPS}
    if _chassis.NATIVE is not None:
        assert row.kernel_op in _chassis.NATIVE.OPS
    x = ft.asarray(np.array([3.0, -2.0], np.float32))
    y = ft.asarray(np.array([2.0, 5.0], np.float32))
    want = row.host(np.asarray(x), np.asarray(y))
    assert np.array_equal(np.asarray(OPERATIONS[row.name](x, y)), want)
    if row.dunder is not None:
        forward = getattr(ft.FuelTensor, f"__{row.dunder}__")
        reflected = getattr(ft.FuelTensor, f"__r{row.dunder}__")
        assert np.array_equal(np.asarray(forward(x, y)), want)
        assert np.array_equal(np.asarray(reflected(y, x)), want)


def test_out_of_range_axes_raise_one_exception_type() -> None:
    x = ft.ones((2, 3))
    raised = []
    for call in (
        lambda: ft.sum(x, axis=5),
        lambda: ft.flip(x, axis=5),
        lambda: ft.expand_dims(x, axis=5),
    ):
        with pytest.raises(IndexError) as info:
            call()
        raised.append(type(info.value))
    assert len(set(raised)) == 1 and issubclass(raised[0], ValueError)


def _top_level_imports(path: Path, name: str) -> set[str]:
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), here)
            found |= {base, *(f"{base}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_module_import_graph_has_no_cycle() -> None:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {
        name: {m for m in _top_level_imports(path, name) if m in modules and m != name}
        for name, path in modules.items()
    }
    # The package itself re-exports its modules; none of them may import it back.
    assert not [n for n, deps in graph.items() if "fueltensor" in deps]
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in graph[name]:
            assert state.get(dep) != 1, f"import cycle: {' -> '.join([*trail, name, dep])}"
            if dep not in state:
                visit(dep, [*trail, name])
        state[name] = 2

    for name in graph:
        if name not in state:
            visit(name, [])
