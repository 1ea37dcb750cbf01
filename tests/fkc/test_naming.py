"""One name per provider with aliases accepted everywhere, an unknown op_kind reported at load
and by `fueltensor contracts --check`, and `Registry.from_paths` taking one path."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from _cli import table_lines

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.core.errors import ContractWarning, ProviderUnavailable
from fueltensor.registry import provider_aliases, provider_unavailable


def _twice(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    np.add(a, b, out=out)


@pytest.mark.parametrize("provider", ft.registry().providers, ids=lambda p: p.name)
def test_every_alias_selects_its_provider_in_use_backend_and_the_cli(
    provider: ft.fkc.Provider, capsys: pytest.CaptureFixture[str]
) -> None:
    names = [provider.name, *provider_aliases(provider)]
    # a short name, unless the name is short already (numpy), and the kernel_source
    assert provider.kernel_source in names and len(names) == len(set(names)) >= 2
    expected = [c.name for c in ft.registry() if c.provider.name == provider.name]
    missing = provider_unavailable(provider.name)  # a framework this environment lacks
    for name in names:
        if missing is None:
            with ft.use_backend(name) as policy:
                assert policy.providers == {provider.name}
        else:
            with pytest.raises(ProviderUnavailable, match=r"install it with: pip install"):
                ft.use_backend(name).__enter__()
        assert main(["contracts", "--provider", name]) == 0
        rows = table_lines(capsys.readouterr().out)[1:]
        assert [r.split()[0] for r in rows] == expected


def test_an_unknown_provider_error_lists_each_provider_once_with_its_aliases() -> None:
    with pytest.raises(ValueError) as info:
        ft.use_backend("nobody").__enter__()
    words = re.split(r"[\s,();:']+", str(info.value))
    for p in ft.registry().providers:
        assert all(words.count(n) == 1 for n in (p.name, *provider_aliases(p)))


def test_plans_name_the_provider_not_its_kernel_source() -> None:
    x = ft.ones((3,), dtype=ft.float32)
    plan = ft.explain(ft.add, x, x)
    assert f"via {plan.kernel.provider.name}" in str(plan) and "portable-cpu" not in str(plan)


def test_a_misspelled_op_kind_is_reported_at_load_and_by_check(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    ft.register_provider("test-provider", {"tests::typo_f32": _twice})
    doc = write(contract_text(kernel="typo_f32", op_kind="AddElementwize"))
    with pytest.warns(ContractWarning) as seen:
        reg = ft.Registry.from_paths(str(doc))  # a plain string is one path
    (message,) = [str(w.message) for w in seen]
    assert "AddElementwize" in message and "did you mean AddElementwise" in message
    assert "MaximumElementwise" in message and str(doc) in message
    assert reg.problems() == [message]
    assert main(["contracts", "--check", "--contracts", str(doc)]) == 1
    assert main(["contracts", "--check"]) == 0


def test_from_paths_takes_a_single_path(
    write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    ft.register_provider("test-provider", {"tests::twice_f32": _twice})
    doc = write(contract_text())
    for path in (doc, str(doc)):
        assert [c.name for c in ft.Registry.from_paths(path)] == ["twice_f32"]


def test_errors_echo_the_alias_that_was_used() -> None:
    x = ft.ones((2,), dtype=ft.float32)
    for name in ("fuel-reference-backend", "reference", "reference-oracle"):
        with (
            ft.use_backend(name),
            pytest.raises(ft.NoKernelError, match=f"use_backend\\('{name}'\\)"),
        ):
            ft.pow(x, x)
