"""Compiled providers: the example C and Rust libraries (examples/), built here with cc and
cargo, loaded with `ft.load_library`, dispatched, compared bit for bit with fuel-cpu-backend and
judged; and what goes wrong: a nonzero status, a library or symbol that is not there, a kernel
that writes its input. Without a compiler the tests that need it skip, saying which one."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pytest
from _cbuild import build_c as _build_c
from _cbuild import tool as _tool
from _cbuild import tool_env
from _extras import ROOT, TESTS

import fueltensor as ft
from fueltensor.core.dtypes import BY_FKC, DType
from fueltensor.fkc import KernelContract, load_document
from fueltensor.kernels._chassis import NATIVE
from fueltensor.ops import BY_KIND
from fueltensor.registry import bundled_contracts_dir

registry_module = importlib.import_module("fueltensor.registry")

EXAMPLES = ROOT / "examples"
LANES = 20_000
GIL_FREE_FROM = NATIVE.GIL_FREE_FROM if NATIVE is not None else 1
"""Output elements from which a compiled call releases the GIL (any, through ctypes)."""


def _build_rust(crate: Path, into: Path) -> Path:
    """The example crate, copied into `into` (cargo writes Cargo.lock beside it) and built."""
    cargo = _tool("cargo", "Rust")
    shutil.copytree(crate, into, ignore=shutil.ignore_patterns("target", "*.md"))
    command = [cargo, "build", "--release", "--offline", "--quiet"]
    subprocess.run(command, cwd=into, check=True, env=tool_env())
    release = into / "target" / "release"
    shared = (".so", ".dylib", ".dll")
    return next(p for p in release.iterdir() if "rust_kernels" in p.stem and p.suffix in shared)


@dataclass(frozen=True)
class Built:
    """A compiled example provider, loaded and registered: its document, library and contracts."""

    name: str
    document: Path
    library: Path
    contracts: tuple[KernelContract, ...]
    registry: ft.Registry


def symbols(document: Path) -> dict[str, str]:
    """Each contract's entry point -> its C symbol (the examples' entry points end in it)."""
    _, contracts = load_document(document)
    return {c.entry_point: c.entry_point.rsplit("::", 1)[-1] for c in contracts}


def _register(document: Path, library: Path) -> Built:
    provider, contracts = load_document(document)
    ft.register_provider(provider.name, ft.load_library(library, symbols(document)))
    reg = ft.Registry.from_paths([bundled_contracts_dir(), document])
    return Built(provider.name, document, library, tuple(reg[c.name] for c in contracts), reg)


@pytest.fixture(scope="module", params=["c", "rust"])
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Each example provider, built into a temporary folder and registered."""
    where = tmp_path_factory.mktemp(request.param)
    if request.param == "c":
        home = EXAMPLES / "c_provider"
        return _register(home / "c-kernels.md", _build_c(home / "kernels.c", where / "libc.so"))
    home = EXAMPLES / "rust_provider"
    return _register(home / "rust-kernels.md", _build_rust(home, where / "crate"))


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/compiled_probes.c (kernels that misbehave on purpose), built."""
    return _build_c(TESTS / "compiled_probes.c", tmp_path_factory.mktemp("probes") / "probes.so")


def random_bits(dtype: DType, n: int, rng: np.random.Generator) -> ft.FuelTensor:
    """`n` random bit patterns of `dtype`: NaNs (payloads, both signs), infinities, subnormals."""
    width = np.dtype(f"u{dtype.itemsize}")
    raw = rng.integers(0, 1 << 63, n, dtype=np.uint64, endpoint=True)
    return ft.asarray(raw.astype(width).view(dtype.np))


def _case(c: KernelContract) -> tuple[Callable[..., ft.FuelTensor], DType]:
    """The namespace function and the dtype a contract declares (read from the contract)."""
    return getattr(ft, BY_KIND[c.op_kind].name), BY_FKC[c.inputs[0].dtypes[0]]


def test_compiled_kernels_run_and_match_the_cpu_backend_bit_for_bit(built: Built) -> None:
    rng = np.random.default_rng(23)
    for contract in built.contracts:
        fn, dtype = _case(contract)
        x, y = random_bits(dtype, LANES, rng), random_bits(dtype, LANES, rng)
        with ft.use_registry(built.registry):
            with ft.use_backend(built.name):
                assert ft.explain(fn, x, y).kernel is contract
                got = fn(x, y)
            with ft.use_backend("cpu"):
                want = fn(x, y)
            with ft.compare_backends("cpu", built.name) as report:
                fn(x, y)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), contract.name
        [c] = list(report)
        assert c.compared and c.kernels[1] == contract.name and c.count == LANES
        report.assert_equal(max_ulp=0)  # NaN payloads and signs counted


def test_compiled_kernels_get_dense_copies_of_strided_and_broadcast_operands(built: Built) -> None:
    contract = built.contracts[0]
    fn, dtype = _case(contract)
    rng = np.random.default_rng(5)
    base = random_bits(dtype, 6 * 8, rng)
    grid = ft.reshape(base, (6, 8))
    cases = [
        (grid.T, grid.T),
        (grid[::2, ::-3], grid[1::2, :3]),
        (grid[:, :1], grid[:1, :]),
        (grid[:0], grid[:0]),  # empty: zero byte lengths
    ]
    for x, y in cases:
        with ft.use_registry(built.registry):
            with ft.use_backend(built.name):
                plan = ft.explain(fn, x, y)
                got = fn(x, y)
            with ft.use_backend("cpu"):
                want = fn(x, y)
        assert plan.kernel is contract and (len(plan.steps) > 1 or x.size == 0)
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes()


def test_the_judge_passes_the_compiled_kernels(built: Built) -> None:
    report = ft.judge(built.registry, kernels=[c.name for c in built.contracts], quick=True)
    assert report.ok, str(report)
    assert {a.kernel for a in report.rows} == {c.name for c in built.contracts}
    assert all(a.probes > 0 and a.measured_ulp == 0 for a in report.rows)


def _mislabelled(write: Callable[..., Path], contract_text: Callable[..., str], fkc: str) -> Path:
    """A test document declaring the C example's f32 addition for `fkc` operands."""
    text = contract_text(provider=f"mislabelled-{fkc.lower()}", kernel="c_add_f32_as_other")
    return write(text.replace("dtypes: [F32]", f"dtypes: [{fkc}]"), f"mislabelled-{fkc}.md")


def test_a_nonzero_status_names_the_kernel_its_line_and_the_status(
    tmp_path: Path, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    library = _build_c(EXAMPLES / "c_provider" / "kernels.c", tmp_path / "libc.so")
    doc = _mislabelled(write, contract_text, "F16")
    ft.register_provider(
        "mislabelled-f16", ft.load_library(library, {"tests::c_add_f32_as_other": "c_add_f32"})
    )
    reg = ft.Registry.from_paths([doc])
    line = doc.read_text().splitlines().index("kernel: c_add_f32_as_other") + 1
    x = ft.asarray([[1.0, 2.0, 3.0]], dtype=ft.float16)  # 6 bytes: not whole f32 elements
    target = ft.asarray([[4.0, 5.0, 6.0]], dtype=ft.float16)
    with ft.use_registry(reg), ft.use_backend("mislabelled-f16"):
        with pytest.raises(ft.KernelStatusError) as info:
            x + x
        with pytest.raises(ft.KernelStatusError):
            target += x
    error = info.value
    assert (error.status, error.symbol) == (1, "c_add_f32")
    said = str(error)
    assert "c_add_f32_as_other" in said and f"{doc}:{line}" in said and "status 1" in said
    assert "lhs 6, rhs 6, out 6" in said  # the byte lengths the kernel saw
    assert np.asarray(x).tolist() == [[1.0, 2.0, 3.0]]
    assert np.asarray(target).tolist() == [[4.0, 5.0, 6.0]]


def test_a_missing_library_or_symbol_fails_at_load_time_naming_it(tmp_path: Path) -> None:
    library = _build_c(EXAMPLES / "c_provider" / "kernels.c", tmp_path / "libc.so")
    with pytest.raises(ft.LibraryError, match=r"no compiled kernel library at .*absent\.so"):
        ft.load_library(tmp_path / "absent.so", {"x::add": "c_add_f32"})
    with pytest.raises(ft.LibraryError) as info:
        ft.load_library(library, {"x::a": "c_add_f32", "x::b": "c_nope", "x::c": "c_nothing"})
    assert str(library) in str(info.value)
    assert "'c_nope'" in str(info.value) and "'c_nothing'" in str(info.value)
    assert "'c_add_f32'" not in str(info.value)


@pytest.mark.parametrize("content", [b"", b"not a library\n", b"\x7fELF\x02\x01\x01garbage"])
def test_a_file_that_is_not_a_shared_library_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "fake.so"
    path.write_bytes(content)
    with pytest.raises(ft.LibraryError, match=r"fake\.so is not a loadable shared library"):
        ft.load_library(path, {"x::add": "add"})


@pytest.mark.parametrize("symbols", [{}, {"x::add": 3}, [("x::add", "add")]])
def test_load_library_checks_its_symbol_map(tmp_path: Path, symbols: object) -> None:
    with pytest.raises(TypeError, match="symbols must"):
        ft.load_library(tmp_path / "any.so", symbols)  # type: ignore[arg-type]


def test_a_compiled_kernel_refuses_a_buffer_that_is_not_dense(tmp_path: Path) -> None:
    library = _build_c(EXAMPLES / "c_provider" / "kernels.c", tmp_path / "libc.so")
    kernel = ft.load_library(library, {"x::add": "c_add_f32"})["x::add"]
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="lhs must be a C-contiguous ndarray"):
        kernel(a[::2], a[:4], out=out)
    assert not out.any()
    kernel(a[:4], a[4:], out=out)
    assert out.tolist() == [4.0, 6.0, 8.0, 10.0]


def test_large_compiled_calls_release_the_gil(probes: Path) -> None:
    # probe_rendezvous returns 0 only once a second call is inside it at the same time; an
    # output of GIL_FREE_FROM elements is large enough for a call to release the GIL.
    kernel = ft.load_library(probes, {"x::meet": "probe_rendezvous"})["x::meet"]
    large = np.zeros(GIL_FREE_FROM, np.uint8)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            kernel(large, large, out=np.empty_like(large))
        except BaseException as e:  # collected for the main thread's assertion
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_the_judge_sees_a_compiled_kernel_write_its_input(
    probes: Path, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    doc = write(contract_text(provider="vandal-compiled", kernel="probe_vandal_f32"))
    ft.register_provider(
        "vandal-compiled", ft.load_library(probes, {"tests::probe_vandal_f32": "probe_vandal_f32"})
    )
    report = ft.judge(ft.Registry.from_paths([doc]), quick=True)
    [audit] = report.rows
    said = "wrote into an input; buffer a, bytes 3..3"  # the sign bit of a[0], in the worker
    assert any(said in f for f in audit.failures), audit.failures


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path whose module `fueltensor_compiled_plugin` is the one installed
    provider plugin; the registry is rebuilt from it and restored afterwards."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    plugin = EntryPoint("compiled", "fueltensor_compiled_plugin", registry_module.PROVIDER_GROUP)
    monkeypatch.setattr(registry_module, "_plugin_entry_points", lambda: [plugin])
    monkeypatch.setattr(registry_module, "_discovered", None)
    monkeypatch.setattr(registry_module, "_bundled", None)
    yield site
    sys.modules.pop("fueltensor_compiled_plugin", None)


def _plugin_module(library: str, table: Mapping[str, str]) -> str:
    """A plugin module shipping the C example: its ENTRY_POINTS are a load_library result."""
    return (
        "from pathlib import Path\n"
        "import fueltensor as ft\n"
        "PROVIDER = 'example-c-kernels'\n"
        f"ENTRY_POINTS = ft.load_library(Path(__file__).parent / {library!r}, {dict(table)!r})\n"
        "DOCUMENTS = ['c-kernels.md']\n"
    )


def test_an_installed_plugin_ships_a_compiled_library(plugin_site: Path) -> None:
    home = EXAMPLES / "c_provider"
    _build_c(home / "kernels.c", plugin_site / "libc_kernels.so")
    shutil.copy(home / "c-kernels.md", plugin_site)
    table = symbols(home / "c-kernels.md")
    (plugin_site / "fueltensor_compiled_plugin.py").write_text(
        _plugin_module("libc_kernels.so", table)
    )
    reg = ft.registry()
    assert reg["c_add_f32"].provider.name == "example-c-kernels"
    x = ft.asarray([1.0, 2.5], dtype=ft.float32)
    with ft.use_registry(reg), ft.use_backend("example-c-kernels"):
        assert np.asarray(x + x).tolist() == [2.0, 5.0]


def test_a_plugin_whose_library_is_missing_is_skipped_naming_it(plugin_site: Path) -> None:
    (plugin_site / "fueltensor_compiled_plugin.py").write_text(
        _plugin_module("libgone.so", {"example_c::c_add_f32": "c_add_f32"})
    )
    with pytest.warns(RuntimeWarning, match=r"fueltensor_compiled_plugin.*libgone\.so"):
        reg = ft.registry()
    assert "c_add_f32" not in reg
