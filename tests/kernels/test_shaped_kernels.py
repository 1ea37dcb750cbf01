"""Users' compiled reductions through C ABI version 2 (docs/reductions.md, "Your own compiled
reduction"): the C example (examples/c_reduction/), built here with cc, loaded with
`ft.load_library`, linked by its document's `abi: 2`, dispatched by `ft.sum`, compared with
fuel-cpu-backend and the oracle, and judged; two cheating builds of it fail the judge; and the
registry's refusals of an ABI version a document cannot use, before it links anything."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from _cbuild import SANITIZED, build_c
from _extras import ROOT, TESTS

import fueltensor as ft
from fueltensor.core.errors import ContractError, KernelStatusError
from fueltensor.families import ABI_VERSIONS
from fueltensor.kernels.exact_sums import rows
from fueltensor.kernels.shaped import ABI_DTYPES, ABI_ORDERS, ShapedCompiledKernel
from fueltensor.registry import bundled_contracts_dir, document_paths
from fueltensor.tools.drafts import lint
from fueltensor.tools.judge.orders import declared, simulate

EXAMPLE = ROOT / "examples" / "c_reduction"
SOURCE, DOCUMENT = EXAMPLE / "my_sum.c", EXAMPLE / "my-sum.md"
PROVIDER, ENTRY = "example-c-reduction", "example_c_reduction::my_sum_f32"
ABI_H = ROOT / "fueltensor" / "ext" / "src" / "abi.h"
CHEATS = {
    # every partial sum cut to bfloat16 (its low 16 bits dropped), F32 still declared
    "bf16 accumulator": (
        "            else sum += v;\n",
        "            else sum += v;\n            uint32_t b;\n            memcpy(&b, &sum, 4);\n"
        "            b &= 0xffff0000u;\n            memcpy(&sum, &b, 4);\n",
    ),
    "skips the last element": ("else sum += v;", "else if (j + 1 < m) sum += v;"),
}
"""A cheat: the example's source with one passage replaced (before, after)."""


@dataclass(frozen=True)
class Built:
    """A build of the example (or of a cheat), loaded and registered beside the bundled
    contracts."""

    registry: ft.Registry
    kernel: ShapedCompiledKernel


def _build(
    source: str, into: Path, document: Path = DOCUMENT, flags: tuple[str, ...] = SANITIZED
) -> Built:
    """`source` built with cc into `into` (warnings are errors; with `flags`: sanitized in the
    sanitizer pass), loaded, registered as the example's provider, and the registry of the
    bundled contracts and `document`."""
    (into / "my_sum.c").write_text(source, encoding="utf-8")
    library = build_c(into / "my_sum.c", into / "libmy_sum.so", "-Wall", "-Werror", *flags)
    ft.register_provider(PROVIDER, ft.load_library(library, {ENTRY: "my_sum_f32"}))
    reg = ft.Registry.from_paths([*document_paths(bundled_contracts_dir()), document])
    kernel = reg.kernel("my_sum_f32")
    assert isinstance(kernel, ShapedCompiledKernel)
    return Built(reg, kernel)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The example, built and registered."""
    return _build(SOURCE.read_text(encoding="utf-8"), tmp_path_factory.mktemp("c_reduction"))


def test_the_python_twins_of_abi_h_match_it() -> None:
    text = ABI_H.read_text(encoding="utf-8")
    first = re.search(r"enum \{ (F32, [^}]*), N_DTYPES \}", text)
    rest = re.search(r"enum \{ (F8_E4M3FN = N_DTYPES, [^}]*), N_DTYPES_V2 \}", text)
    orders = re.search(r"enum \{ (ORDER_[^}]*), N_ORDERS \}", text)
    version = re.search(r"#define ABI_VERSION (\d+)", text)
    assert first and rest and orders and version
    names = (first[1] + ", " + rest[1].replace(" = N_DTYPES", "")).split(", ")
    assert tuple(names) == ABI_DTYPES
    assert tuple(o.removeprefix("ORDER_").lower() for o in orders[1].split(", ")) == ABI_ORDERS
    assert max(ABI_VERSIONS) == int(version[1])


def _bound_ok(got: np.ndarray, x: np.ndarray, axes: tuple[int, ...]) -> bool:
    """Whether every output is within the sequential order's bound of the exact sum (in
    float64, which holds the float32 inputs' sums closely enough for this check)."""
    table = rows(x, axes).astype(np.float64)
    k, u = table.shape[1] - 1, 2.0**-24
    gamma = k * u / (1 - k * u)
    exact = table.sum(axis=1)
    slack = gamma * np.abs(table).sum(axis=1) + np.spacing(np.abs(got.reshape(-1)))
    return bool(np.all(np.abs(got.reshape(-1) - exact) <= slack))


def test_ft_sum_dispatches_the_c_kernel_in_its_declared_order(built: Built) -> None:
    rng = np.random.default_rng(48)
    base = rng.standard_normal((6, 300, 5)).astype(np.float32)
    contract = built.registry["my_sum_f32"]
    d = declared(contract)
    assert not isinstance(d, str)
    views = {"dense": base, "flipped": base[::-1, ::-2], "transposed": base.transpose(2, 1, 0)}
    views["broadcast"] = np.broadcast_to(base[:1], base.shape)
    for name, x in views.items():
        for axis in (1, (0, 2), None):
            t = ft.asarray(x)
            with ft.use_registry(built.registry), ft.use_backend(PROVIDER), ft.trace() as ran:
                plan = ft.explain(ft.sum, t, axis=axis)
                got = np.asarray(ft.sum(t, axis=axis))
            assert [p.kernel for p in ran] == [contract], name
            with ft.use_registry(built.registry), ft.use_backend("cpu"):
                cpu = np.asarray(ft.sum(t, axis=axis))
            with ft.use_registry(built.registry), ft.use_backend("reference"):
                oracle = np.asarray(ft.sum(t, axis=axis))
            assert plan.kernel is contract and "my_sum_f32" in str(plan), name
            axes = tuple(range(x.ndim)) if axis is None else np.atleast_1d(axis).tolist()
            axes = tuple(int(a) for a in axes)
            want = simulate(rows(x, axes), d, np.dtype(np.float32)).reshape(got.shape)
            assert got.tobytes() == want.tobytes(), (name, axis)  # the order's bits
            assert _bound_ok(got, x, axes) and _bound_ok(cpu, x, axes), (name, axis)
            assert np.allclose(got, oracle, rtol=1e-4, atol=1e-4), (name, axis)


def _judged(source: str, into: Path) -> Built:
    """`source` built for the judge, which calls it in its checked worker: a plain process, no
    sanitizer runtime there to load a sanitized build (the calls in this process check it)."""
    return _build(source, into, flags=())


def test_the_judge_runs_the_c_kernel_and_passes_it(tmp_path: Path) -> None:
    plain = _judged(SOURCE.read_text(encoding="utf-8"), tmp_path)
    report = ft.judge(plain.registry, kernels=["my_sum_f32"], quick=True, progress=False)
    assert report.ok, str(report)
    (row,) = report.rows
    assert row.probes > 0
    assert any("every output the declared order's bits" in s for s in row.semantics)


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_cheating_build_fails_the_judge(cheat: str, tmp_path: Path) -> None:
    before, after = CHEATS[cheat]
    source = SOURCE.read_text(encoding="utf-8")
    assert source.count(before) == 1, "the example changed: update the cheat"
    cheating = _judged(source.replace(before, after), tmp_path)
    report = ft.judge(cheating.registry, kernels=["my_sum_f32"], quick=True, progress=False)
    (row,) = report.rows
    assert not report.ok, cheat
    assert any(f.startswith(("order:", "bound:")) for f in row.failures), row.failures


def test_a_refusal_of_the_kernel_raises_its_message(
    built: Built, tmp_path: Path, write: Callable[..., Path]
) -> None:
    text = DOCUMENT.read_text(encoding="utf-8").replace(
        "order: sequential}", "order: blocked, block: 256}"
    )
    reg = ft.Registry.from_paths([write(text, "blocked.md")])
    x = np.ones((3, 4), np.float32)
    with pytest.raises(KernelStatusError, match="my_sum_f32: needs axes, accumulator F32"):
        reg.kernel("my_sum_f32")(x, (1,), out=np.empty(3, np.float32))


def test_a_call_releases_the_gil(tmp_path: Path, write: Callable[..., Path]) -> None:
    # probe_shaped_rendezvous returns 0 only once a second call is inside it at the same time.
    probes = build_c(TESTS / "compiled_probes.c", tmp_path / "probes.so", *SANITIZED)
    ft.register_provider("gil-probe", ft.load_library(probes, {ENTRY: "probe_shaped_rendezvous"}))
    reg = ft.Registry.from_paths([write(DOCUMENT.read_text().replace(PROVIDER, "gil-probe"))])
    kernel, x = reg.kernel("my_sum_f32"), np.ones((2, 3), np.float32)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            kernel(x, (1,), out=np.empty(2, np.float32))
        except BaseException as e:  # collected for the main thread's assertion
            errors.append(e)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_an_element_outside_its_buffer_is_refused_before_the_call(built: Built) -> None:
    x = np.zeros(4, np.float32)
    past = np.lib.stride_tricks.as_strided(x, shape=(2, 4), strides=(16, 4))
    with pytest.raises(ValueError, match="outside its buffer"):
        built.kernel(past, (1,), out=np.empty(2, np.float32))
    with pytest.raises(ValueError, match="sorted, distinct axes"):
        built.kernel(x.reshape(2, 2), (1, 0), out=np.empty((), np.float32))


def _document(line: str, *, drop: str = "abi: 2\n") -> str:
    """The example's document with its `abi: 2` line replaced by `line`."""
    return DOCUMENT.read_text(encoding="utf-8").replace(drop, line)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("abi: 3\n", r"3 is not a C ABI version fueltensor knows; accepted: 1, .*; 2, "),
        ("abi: 1\n", r"declares abi: 1, but SumReduce is a reduction operation, whose compiled "),
        ("", r"declares no abi \(version 1\), but SumReduce is a reduction .*abi: 2"),
    ],
)
def test_an_abi_the_op_cannot_take_is_refused_at_its_line(
    built: Built, write: Callable[..., Path], line: str, match: str
) -> None:
    path = write(_document(line), "abi.md")
    with pytest.raises(ContractError, match=match) as caught:
        ft.Registry.from_paths([path])
    assert str(path) in str(caught.value)
    if line:  # the abi line itself; the linter says the same without a library
        number = _document(line).splitlines().index(line.strip()) + 1
        assert f":{number}" in str(caught.value)
        _, findings = lint([path])
        assert [str(f) for f in findings if f.fatal] == [str(caught.value)]


def test_an_abi_is_checked_before_anything_is_linked(write: Callable[..., Path]) -> None:
    text = _document("abi: 3\n").replace(PROVIDER, "nobody-registered-this")
    with pytest.raises(ContractError, match="not a C ABI version"):
        ft.Registry.from_paths([write(text)])  # no ENTRY_POINTS: the abi fails first
    binary = (ROOT / "examples" / "c_provider" / "c-kernels.md").read_text(encoding="utf-8")
    entry = 'entry_point: "example_c::c_add_f32"\n'
    binary = binary.replace(entry, entry + "abi: 2\n")
    with pytest.raises(ContractError, match="binary elementwise operation, whose compiled kernels"):
        ft.Registry.from_paths([write(binary, "binary.md")])


def test_a_python_kernel_cannot_declare_an_abi(write: Callable[..., Path]) -> None:
    def kernel(x: np.ndarray, axes: tuple[int, ...], *, out: np.ndarray) -> None:
        out[...] = x.sum(axis=axes)

    ft.register_provider("python-declares-abi", {ENTRY: kernel})
    text = DOCUMENT.read_text(encoding="utf-8").replace(PROVIDER, "python-declares-abi")
    with pytest.raises(ContractError, match="maps to a Python callable"):
        ft.Registry.from_paths([write(text)])


def test_an_op_param_with_no_abi_v2_form_is_refused_at_link(
    built: Built, write: Callable[..., Path]
) -> None:
    text = DOCUMENT.read_text(encoding="utf-8").replace("accumulator: F32", "accumulator: exact")
    with pytest.raises(ContractError, match=r"op_params\.accumulator 'exact' has no ABI v2 form"):
        ft.Registry.from_paths([write(text)])
