"""Linking and querying: entry points resolve only through registered maps; loading is atomic."""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import SEED_CPU, SEED_REFERENCE, as_seeded

import fueltensor as ft
from fueltensor import ContractError, ContractViolation
from fueltensor.fkc import KernelContract
from fueltensor.kernels._chassis import IMPLEMENTATION
from fueltensor.ops import UNARY_OPS

registry_module = importlib.import_module("fueltensor.registry")

OPS = ("Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "Pow", "Rem")


def twice(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """A test kernel: out = a + b."""
    np.add(a, b, out=out)


def provider_doc(
    contract_text: Callable[..., str], write: Callable[..., Path], name: str, kernel: str
) -> Path:
    return write(contract_text(provider=name, kernel=kernel), f"{name}.md")


OWN = ("fuel-blas-backend", "fuel-cpu-backend", "fuel-reference-backend")
FRAMEWORKS = ("jax", "numpy", "torch")


def own(contracts: Iterable[KernelContract]) -> list[KernelContract]:
    """fueltensor's own providers' contracts (the frameworks' join only when named)."""
    return [c for c in contracts if c.provider.name in OWN]


def test_bundled_registry() -> None:
    reg = ft.registry()
    assert reg is ft.registry()
    # binary: 32, the describe-only umbrella, 4 exact remainders, 4 integer powers, 4 oracle;
    # unary: 44 and 11 oracle; comparisons: 24 and 6 oracle; where and clip: 8 and 2 oracle;
    # casts: 45 and 45 oracle (a source, target and overflow rule each); FP8: + - * / 8 and 4
    # oracle, maximum, minimum, pow and % 8; reductions: sum, max, min 12 and 12 oracle;
    # matmul: BF16 and F16, BF16 in VDPBF16PS's pairs order (joins when named), F32 and F64
    # through the host BLAS, and 4 oracle
    assert len(own(reg)) == 307
    assert [c.name for c in own(reg.for_op("PowIElementwise"))] == [
        f"powi_{d}" for d in ("f32", "f64", "bf16", "f16")
    ]
    assert [p.name for p in reg.providers] == [*OWN, *FRAMEWORKS]
    assert [p.when_named for p in reg.providers] == [False, False, False, True, True, True]
    for op in OPS:
        names = [c.name for c in own(reg.for_op(f"{op}Elementwise"))]
        expected = [f"{op.lower()}_{d}" for d in ("f32", "f64", "bf16", "f16")]
        fp8 = [f"{op.lower()}_{d}" for d in ("e4m3", "e5m2") if IMPLEMENTATION == "native"]
        if op in ("Maximum", "Minimum", "Pow"):  # the FP8 document sorts before its siblings
            expected = [*fp8, *expected]
        if op == "Rem":  # the exact remainder first (its document sorts first), then the seeds'
            mods = [f"mod_{d}" for d in ("e4m3", "e5m2") if IMPLEMENTATION == "native"]
            expected = mods + [f"mod_{d}" for d in ("f32", "f64", "bf16", "f16")] + expected
            # and fuel-cpu-backend-matmul.md's VDPBF16PS order (its document sorts first)
            assert reg.named_contracts() == ("matmul_bf16_pairs", *expected[-4:])
        if op in ("Add", "Sub", "Mul", "Div"):  # the FP8 documents sort before their siblings
            expected = [*fp8, *expected, f"broadcast_{op.lower()}_f8", f"broadcast_{op.lower()}"]
        assert names == expected
    for row in UNARY_OPS:  # the CPU kernels are compiled only: registrable or not, listed
        names = [c.name for c in own(reg) if c.op_kind == row.op_kind]
        dtypes = ("f32", "f64", "bf16", "f16")
        assert names == [*(f"{row.kernel_op}_{d}" for d in dtypes), f"broadcast_{row.kernel_op}"]


def test_seeds_link_to_the_same_contracts_as_the_bundled_documents(seeds: Path) -> None:
    seeded = ft.Registry.from_paths([seeds / SEED_CPU, seeds / SEED_REFERENCE])
    # The integer powers are fueltensor's own document of the provider; the seeds predate it.
    bundled = ft.registry()
    # the seeds' own two documents (the integer powers' and the unary functions' postdate them)
    documents = ("fuel-cpu-backend.md", "fuel-reference-backend.md")
    ours = [c for c in own(bundled) if Path(c.source.path).name in documents]
    # the bundled documents add the semantics the seeds' formulas fix, the bound the
    # certificates prove (PROVEN_EXACT) and the remainders' `dispatch: when_named`; every other
    # fact agrees
    added = ("semantics", "dispatch")
    facts = {
        c.name: as_seeded({k: v for k, v in c.to_dict().items() if k not in added}) for c in ours
    }
    assert {c.name: as_seeded(c.to_dict()) for c in seeded} == facts
    assert all(seeded.kernel(c.name) is bundled.kernel(c.name) for c in ours if c.registrable)


def test_bundled_contracts_are_linked_to_the_kernel_modules() -> None:
    reg = ft.registry()
    cpu = importlib.import_module("fueltensor.kernels.cpu")
    reference = importlib.import_module("fueltensor.kernels.reference")
    assert reg.kernel("add_f32") is cpu.ENTRY_POINTS["fuel_cpu_backend::byte_kernels::add_f32"]
    assert (
        reg.kernel("broadcast_div")
        is reference.ENTRY_POINTS["fuel_reference_backend::ops::broadcast_div"]
    )


def test_describe_only_contract_is_listed_but_never_dispatched() -> None:
    reg = ft.registry()
    umbrella = reg["binary"]
    assert umbrella.registrable is False
    assert umbrella in list(reg)
    assert umbrella not in reg.for_op(umbrella.op_kind)
    with pytest.raises(KeyError, match="describe-only"):
        reg.kernel("binary")


def test_lookup_errors_suggest_close_names() -> None:
    reg = ft.registry()
    with pytest.raises(KeyError, match="add_f32"):
        reg["add_f3"]
    assert reg.for_op("NoSuchElementwise") == ()
    assert "add_f32" in reg and "add_f3" not in reg


def test_third_provider_from_a_document_and_test_kernels(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    ft.register_provider("third-party-test", {"tests::twice_third": twice})
    path = provider_doc(contract_text, write, "third-party-test", "twice_third")
    reg = ft.Registry.from_paths([registry_module.bundled_contracts_dir(), path])
    assert len(reg) == len(ft.registry()) + 1
    names = [c.name for c in reg.for_op("AddElementwise")]
    assert names[-1] == "twice_third"
    assert "add_f32" in names and "broadcast_add" in names
    assert reg.kernel("twice_third") is twice
    assert reg.providers[-1].name == "third-party-test"
    out = np.empty(3, np.float32)
    reg.kernel("twice_third")(np.ones(3, np.float32), np.ones(3, np.float32), out=out)
    assert out.tolist() == [2.0, 2.0, 2.0]


def test_unlinked_entry_point_names_file_line_and_entry_point(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    ft.register_provider("half-linked-test", {"tests::something_else": twice})
    path = provider_doc(contract_text, write, "half-linked-test", "lonely")
    text = path.read_text()
    with pytest.raises(ContractError) as info:
        ft.Registry.from_paths([path])
    error = info.value
    assert (error.path, error.field) == (str(path), "entry_point")
    assert error.line == text[: text.index("entry_point:")].count("\n") + 1
    assert "'tests::lonely'" in str(error)


def test_provider_without_any_map_is_refused(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    path = provider_doc(contract_text, write, "never-registered-test", "orphan")
    with pytest.raises(ContractError, match="no ENTRY_POINTS are registered"):
        ft.Registry.from_paths([path])


def test_a_document_name_is_never_imported(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text(provider="import-test", kernel="dumps").replace(
        '"tests::dumps"', '"json:dumps"'
    )
    with pytest.raises(ContractError, match="no ENTRY_POINTS are registered"):
        ft.Registry.from_paths([write(text)])


def test_describe_only_needs_no_link(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text(provider="describe-only-test", kernel="doc_only").replace(
        'blurb: "test kernel"', 'registrable: false\nblurb: "test kernel"'
    )
    reg = ft.Registry.from_paths([write(text)])
    assert [c.name for c in reg] == ["doc_only"]
    assert reg.for_op("AddElementwise") == ()


def test_duplicate_kernel_across_files(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    ft.register_provider("dup-test", {"tests::add_f32": twice})
    path = provider_doc(contract_text, write, "dup-test", "add_f32")
    bundled = registry_module.bundled_contracts_dir()
    with pytest.raises(ContractError) as info:
        ft.Registry.from_paths([bundled, path])
    assert (info.value.path, info.value.field) == (str(path), "kernel")
    assert "fuel-cpu-backend.md" in str(info.value)


def test_failed_load_leaves_the_bundled_registry_alone(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    before = ft.registry()
    good = provider_doc(contract_text, write, "atomic-test", "atomic_ok")
    ft.register_provider("atomic-test", {"tests::atomic_ok": twice})
    bad = write(contract_text(provider="atomic-test", kernel="atomic_bad").replace("F32]", "F8]"))
    with pytest.raises(ContractError):
        ft.Registry.from_paths([good, bad])
    assert ft.registry() is before
    assert "atomic_ok" not in before


def test_same_provider_declared_two_ways_is_refused(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    ft.register_provider("twice-declared", {"tests::one": twice, "tests::two": twice})
    first = write(contract_text(provider="twice-declared", kernel="one"), "one.md")
    second_text = contract_text(provider="twice-declared", kernel="two")
    second = write(second_text.replace('"test:1"', '"test:2"'), "two.md")
    with pytest.raises(ContractError, match="declared differently"):
        ft.Registry.from_paths([first, second])
    same = write(second_text, "same.md")
    assert [c.name for c in ft.Registry.from_paths([first, same])] == ["one", "two"]


def test_empty_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match=r"no \*\.md"):
        ft.Registry.from_paths([tmp_path])


def test_register_provider_checks_its_arguments() -> None:
    with pytest.raises(TypeError):
        ft.register_provider("", {})
    with pytest.raises(TypeError):
        ft.register_provider("bad-map", {"x": 3})  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        ft.register_provider("not-a-map", [twice])  # type: ignore[arg-type]


def test_installed_provider_plugin_ships_document_and_kernels(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = provider_doc(contract_text, write, "plugin-test", "plugin_add")
    (tmp_path / "fueltensor_plugin_test.py").write_text(
        "import numpy as np\n"
        "PROVIDER = 'plugin-test'\n"
        "def plugin_add(a, b, *, out):\n"
        "    np.add(a, b, out=out)\n"
        "ENTRY_POINTS = {'tests::plugin_add': plugin_add}\n"
        f"DOCUMENTS = [{str(doc)!r}]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = EntryPoint("plugin-test", "fueltensor_plugin_test", registry_module.PROVIDER_GROUP)
    monkeypatch.setattr(registry_module, "_plugin_entry_points", lambda: [plugin])
    monkeypatch.setattr(registry_module, "_discovered", None)
    monkeypatch.setattr(registry_module, "_bundled", None)
    try:
        reg = ft.registry()
        assert reg["plugin_add"].provider.name == "plugin-test"
        assert reg.for_op("AddElementwise")[-1].name == "plugin_add"
        assert reg.kernel("plugin_add") is sys.modules["fueltensor_plugin_test"].plugin_add
    finally:
        sys.modules.pop("fueltensor_plugin_test", None)


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, body: str) -> EntryPoint:
    """An installed-looking plugin: module `module` in its own directory, found by entry point."""
    home = tmp_path / "site"
    home.mkdir(exist_ok=True)
    (home / f"{module}.py").write_text(body)
    monkeypatch.syspath_prepend(str(home))
    return EntryPoint(module, module, registry_module.PROVIDER_GROUP)


@pytest.mark.parametrize(
    "body",
    [
        "raise ImportError('no such build')\n",
        "PROVIDER = 3\n",
        "1 / 0\n",
        "PROVIDER = 'p'\nENTRY_POINTS = {}\nDOCUMENTS = ['absent.md']\n",
    ],
)
def test_a_broken_plugin_is_skipped_with_a_warning_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str
) -> None:
    broken = _plugin(tmp_path, monkeypatch, "fueltensor_broken_plugin", body)
    missing = EntryPoint("gone", "fueltensor_no_such_module_xyz", registry_module.PROVIDER_GROUP)
    monkeypatch.setattr(registry_module, "_plugin_entry_points", lambda: [broken, missing])
    monkeypatch.setattr(registry_module, "_discovered", None)
    monkeypatch.setattr(registry_module, "_bundled", None)
    try:
        with pytest.warns(RuntimeWarning) as caught:
            reg = ft.registry()
        said = " ".join(str(w.message) for w in caught)
        assert "fueltensor_broken_plugin" in said and "fueltensor_no_such_module_xyz" in said
        x = ft.asarray([1.0, 2.0], dtype=ft.float32)
        with ft.use_registry(reg):
            assert np.asarray(x + x).tolist() == [2.0, 4.0]
    finally:
        sys.modules.pop("fueltensor_broken_plugin", None)


def test_a_plugins_relative_documents_resolve_against_its_module(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "site").mkdir()
    text = contract_text(provider="relative-test", kernel="relative_add")
    (tmp_path / "site" / "relative.md").write_text(text, encoding="utf-8")
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "relative.md").write_text("not a document", encoding="utf-8")
    monkeypatch.chdir(elsewhere)
    plugin = _plugin(
        tmp_path,
        monkeypatch,
        "fueltensor_relative_plugin",
        "import numpy as np\n"
        "PROVIDER = 'relative-test'\n"
        "def relative_add(a, b, *, out):\n"
        "    np.add(a, b, out=out)\n"
        "ENTRY_POINTS = {'tests::relative_add': relative_add}\n"
        "DOCUMENTS = ['relative.md']\n",
    )
    monkeypatch.setattr(registry_module, "_plugin_entry_points", lambda: [plugin])
    monkeypatch.setattr(registry_module, "_discovered", None)
    monkeypatch.setattr(registry_module, "_bundled", None)
    try:
        reg = ft.registry()
        assert reg["relative_add"].source.path == str(tmp_path / "site" / "relative.md")
    finally:
        sys.modules.pop("fueltensor_relative_plugin", None)


def _writes_through_out(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    np.add(a, b, out=a)
    np.add(a, b, out=out)


def _writes_an_element(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    a[0] = 99.0
    np.add(a, b, out=out)


def _fills(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    b.fill(0.0)
    np.add(a, b, out=out)


@pytest.mark.parametrize("vandal", [_writes_through_out, _writes_an_element, _fills])
def test_a_provider_kernel_writing_its_inputs_is_a_contract_violation(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    vandal: Callable[..., None],
) -> None:
    ft.register_provider("vandal-test", {"tests::vandal": vandal})
    doc = write(contract_text(provider="vandal-test", kernel="vandal"))
    reg = ft.Registry.from_paths([doc])
    x = ft.asarray([[1.0, 2.0, 3.0]], dtype=ft.float32)
    with ft.use_registry(reg):
        assert ft.explain(ft.add, x, x).kernel is reg["vandal"]
        with pytest.raises(ContractViolation) as info:
            x + x
    assert "vandal" in str(info.value) and str(doc) in str(info.value)
    assert np.asarray(x).tolist() == [[1.0, 2.0, 3.0]]


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_only_regular_files_are_read_from_a_directory(
    tmp_path: Path, contract_text: Callable[..., str], kind: str
) -> None:
    (tmp_path / "good.md").write_text(contract_text(), encoding="utf-8")
    odd = tmp_path / "odd.md"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to("/dev/zero")
    with pytest.raises(ContractError, match="not a regular file") as info:
        ft.Registry.from_paths([tmp_path])
    assert info.value.path == str(odd)
    with pytest.raises(ContractError, match="not a regular file"):
        ft.Registry.from_paths([odd], cached=True)


def test_registry_is_built_once_under_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_bundled", None)
    built: list[Any] = []
    original = ft.Registry.from_paths.__func__  # type: ignore[attr-defined]

    def counting(cls: type[ft.Registry], paths: Any, **options: Any) -> ft.Registry:
        built.append(paths)
        return original(cls, paths, **options)  # type: ignore[no-any-return]

    monkeypatch.setattr(ft.Registry, "from_paths", classmethod(counting))
    results: list[ft.Registry] = []
    threads = [threading.Thread(target=lambda: results.append(ft.registry())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert len({id(r) for r in results}) == 1
