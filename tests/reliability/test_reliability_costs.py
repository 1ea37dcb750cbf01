"""Costs that fail for one call reject that contract for that call, with the reason; numbers no
float holds are refused at load time with file and line (issue 15, point 5)."""

from __future__ import annotations

import importlib
import random
import re
from pathlib import Path

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.core.errors import ContractError

registry_module = importlib.import_module("fueltensor.registry")
ORIGINAL = re.compile(r'bytes_moved: "3 \* n \* (?:dtype_bytes|[248])"')


def _documents(tmp_path: Path, replacement: str) -> list[Path]:
    """The bundled documents, with every cpu contract's `bytes_moved` replaced."""
    out = []
    for doc in sorted(registry_module.bundled_contracts_dir().glob("*.md")):
        text = doc.read_text()
        if doc.name == "fuel-cpu-backend.md":
            text, count = ORIGINAL.subn(lambda _: replacement, text)
            assert count == 33
        path = tmp_path / doc.name
        path.write_text(text)
        out.append(path)
    return out


@pytest.mark.parametrize(
    ("formula", "n", "reason"),
    [
        ("3 * n * dtype_bytes / (n - 1)", 1, "divides by zero"),
        ("0 - n * 1000000", 4, "negative"),
        ("n" + " * 100000000000000000" * 19, 4, "not finite"),
    ],
)
def test_an_unpriceable_cost_rejects_the_contract_for_that_call(
    tmp_path: Path, formula: str, n: int, reason: str
) -> None:
    reg = ft.Registry.from_paths(_documents(tmp_path, f'bytes_moved: "{formula}"'))
    x = ft.asarray(np.arange(1.0, n + 1, dtype=np.float32))
    with ft.use_registry(reg):
        plan = ft.explain(ft.add, x, x)
        result = x + x
    assert plan.kernel is not None and plan.kernel.provider.name != "fuel-cpu-backend"
    assert plan.cost >= 0
    rejected = [r for name, rs in plan.rejected.items() if "f32" in name for r in rs]
    assert any(reason in r and "cost.bytes_moved" in r for r in rejected), rejected
    np.testing.assert_array_equal(np.asarray(result), 2 * np.arange(1.0, n + 1))


def test_a_cost_failing_only_for_some_calls_still_serves_the_others(tmp_path: Path) -> None:
    reg = ft.Registry.from_paths(
        _documents(tmp_path, 'bytes_moved: "3 * n * dtype_bytes / (n - 1)"')
    )
    x = ft.asarray(np.ones(8, np.float32))
    with ft.use_registry(reg):
        assert ft.explain(ft.add, x, x).provider == "fuel-cpu-backend"
        assert ft.explain(ft.add, x[:1], x[:1]).provider != "fuel-cpu-backend"


@pytest.mark.parametrize(
    ("replacement", "field"),
    [
        ("bytes_moved: " + "7" * 5000, "7777"),
        ("bytes_moved: " + "7" * 400, "cost.bytes_moved"),
        ('bytes_moved: "' + "7" * 400 + ' * n"', "cost.bytes_moved"),
        ("bytes_moved: 0x" + "f" * 400, "cost.bytes_moved"),
        ("bytes_moved: !!int " + "7" * 5000, "7777"),
    ],
)
def test_huge_literals_are_contract_errors_with_file_and_line(
    tmp_path: Path, replacement: str, field: str
) -> None:
    docs = _documents(tmp_path, replacement)
    cpu = next(p for p in docs if p.name == "fuel-cpu-backend.md")
    line = cpu.read_text().split("\n").index("  " + replacement) + 1  # the first contract
    with pytest.raises(ContractError) as info:
        ft.Registry.from_paths([cpu])
    assert info.value.path == str(cpu)
    assert info.value.line == line
    assert field in str(info.value) and "too large" in str(info.value)


HOSTILE = (
    "n / (n - 1)",
    "n / (n - n)",
    "dtype_bytes / (n - 4)",
    "0 - n",
    "n - 5",
    "n" + " * 100000000000000000" * 19,
    "(0 - n) * (0 - n) * (0 - n)",
)


def test_seeded_hostile_costs_never_break_dispatch(tmp_path: Path) -> None:
    """Random contracts given formulas that fail, go negative or overflow for some sizes: every
    operation still runs (another contract or the host) with the right values, its plan cost is
    >= 0, and a contract skipped for its cost says so."""
    rng = random.Random(15)
    documents = _documents(tmp_path, 'bytes_moved: "COST"')
    cpu = tmp_path / "fuel-cpu-backend.md"
    base = cpu.read_text()
    for _ in range(6):
        chosen = [rng.choice(HOSTILE) for _ in range(base.count('"COST"'))]
        parts = base.split('"COST"')
        cpu.write_text(
            "".join(p + f'"{f}"' for p, f in zip(parts, chosen, strict=False)) + parts[-1]
        )
        reg = ft.Registry.from_paths(documents)
        with ft.use_registry(reg):
            for n in (0, 1, 4, 5, 9):
                for dtype in (np.float32, np.float64, np.float16):
                    x = ft.asarray(np.arange(n, dtype=dtype))
                    plan = ft.explain(ft.multiply, x, x)
                    assert plan.cost >= 0
                    reasons = [r for rs in plan.rejected.values() for r in rs]
                    if plan.provider != "fuel-cpu-backend":
                        assert any("cost.bytes_moved" in r or "dtype" in r for r in reasons)
                    want = np.arange(n, dtype=dtype) ** 2
                    np.testing.assert_array_equal(np.asarray(x * x), want)
