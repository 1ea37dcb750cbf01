"""Users' compiled matmuls through C ABI version 2 (docs/matmul.md, "Your own compiled matmul"):
the C example (examples/c_matmul/), built here with cc, loaded with `ft.load_library`, linked by
its document's `abi: 2`, dispatched by `ft.matmul` and `@` on every layout, its bits held to an
independent reference of its declared order (tests/_matmul.py, in Fractions); compared with the
host BLAS and the oracle and judged, both running it checked, never in this process; cheating
and hostile builds of it fail the judge, each for what it did; and the call's refusals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from _cbuild import SANITIZED, build_c
from _extras import ROOT, TESTS
from _matmul import in_order, over_stacks, same, views

import fueltensor as ft
from fueltensor.core.errors import ContractError, KernelStatusError
from fueltensor.kernels.shaped import ShapedCompiledKernel
from fueltensor.registry import bundled_contracts_dir, document_paths

EXAMPLE = ROOT / "examples" / "c_matmul"
SOURCE, DOCUMENT = EXAMPLE / "my_matmul.c", EXAMPLE / "my-matmul.md"
PROVIDER, ENTRY, NAME = "example-c-matmul", "example_c_matmul::my_matmul_f32", "my_matmul_f32"
CHEATS = {
    # every partial sum cut to bfloat16 (its low 16 bits dropped), F32 still declared
    "bf16 accumulator": (
        "acc = fmaf(load(a + t * sa), load(b + t * sb), acc);",
        "{\n        acc = fmaf(load(a + t * sa), load(b + t * sb), acc);\n"
        "        uint32_t w;\n        memcpy(&w, &acc, 4);\n        w &= 0xffff0000u;\n"
        "        memcpy(&acc, &w, 4);\n    }",
    ),
    # K taken from its end: another order than the declared one, the same bound
    "reversed K": (
        "float acc = load(a) * load(b);\n"
        "    for (ssize t = 1; t < k; t++) acc = fmaf(load(a + t * sa), load(b + t * sb), acc);",
        "float acc = load(a + (k - 1) * sa) * load(b + (k - 1) * sb);\n"
        "    for (ssize t = k - 2; t >= 0; t--)\n"
        "        acc = fmaf(load(a + t * sa), load(b + t * sb), acc);",
    ),
    "drops the last product": (
        "for (ssize t = 1; t < k; t++)",
        "for (ssize t = 1; t + 1 < k; t++)",
    ),
}
"""A cheat: the example's source with one passage replaced (before, after)."""
HOSTILE = {
    "overrun_matmul": "overrun",
    "scribble_b_matmul": "input",
    "unwritten_matmul": "unwritten",
}
"""tests/hostile_matmul.c's kernels and a word of the fault the judge must name."""


@dataclass(frozen=True)
class Built:
    """A build of the example (or of a cheat), loaded and registered beside the bundled
    contracts."""

    registry: ft.Registry
    kernel: ShapedCompiledKernel


def _build(source: str, into: Path, flags: tuple[str, ...] = SANITIZED) -> Built:
    """`source` built with cc into `into` (warnings are errors; with `flags`: sanitized in the
    sanitizer pass, for calls in this process: the checked worker, a plain process, takes a
    build with none), loaded, registered as the example's provider, and the registry of the
    bundled contracts and the example's document."""
    (into / "my_matmul.c").write_text(source, encoding="utf-8")
    library = build_c(
        into / "my_matmul.c", into / "libmy_matmul.so", "-Wall", "-Werror", *flags, "-lm"
    )
    ft.register_provider(PROVIDER, ft.load_library(library, {ENTRY: NAME}))
    reg = ft.Registry.from_paths([*document_paths(bundled_contracts_dir()), DOCUMENT])
    kernel = reg.kernel(NAME)
    assert isinstance(kernel, ShapedCompiledKernel)
    return Built(reg, kernel)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The example, built and registered."""
    return _build(SOURCE.read_text(encoding="utf-8"), tmp_path_factory.mktemp("c_matmul"))


def _specials() -> list[tuple[np.ndarray, np.ndarray]]:
    """Operand pairs whose outputs meet NaN, the infinities, signed zeros, subnormals and a sum
    past float32's range (K = 0 plans no kernel: the host's zeros; the judge calls the kernel
    with it)."""
    tiny, big = np.float32(2.0**-140), np.float32(2.0**100)
    a = np.array(
        [[1, np.nan, 0], [np.inf, 1, 1], [-0.0, -0.0, -0.0], [tiny, tiny, 1], [big, big, 0]],
        np.float32,
    )
    b = np.array([[1, -0.0], [0, 0.0], [np.inf, -np.inf]], np.float32)
    b2 = np.array([[0.5, -0.0], [3, -0.0], [0, -0.0]], np.float32)
    return [(a, b), (a, b2)]


def test_ft_matmul_dispatches_the_c_kernel_in_its_declared_order(built: Built) -> None:
    rng = np.random.default_rng(46)
    contract = built.registry[NAME]
    for i, (x, y) in enumerate([*views(rng, np.float32), *_specials()]):
        with ft.use_registry(built.registry), ft.use_backend(PROVIDER), ft.trace() as ran:
            plan = ft.explain(ft.matmul, ft.asarray(x), ft.asarray(y))
            got = np.asarray(ft.asarray(x) @ ft.asarray(y))
        assert plan.kernel is contract and NAME in str(plan), i
        assert [p.kernel for p in ran] == [contract], i
        with np.errstate(all="ignore"):
            want = over_stacks(in_order, x, y)
        assert got.shape == want.shape, i
        same(got, want)  # the declared order's bits: products fused, K in order


def test_a_refusal_of_the_kernel_raises_its_message(
    built: Built, write: Callable[..., Path]
) -> None:
    text = DOCUMENT.read_text(encoding="utf-8").replace("products: fused", "products: rounded")
    kernel = ft.Registry.from_paths([write(text, "rounded.md")]).kernel(NAME)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    with pytest.raises(KernelStatusError, match="my_matmul_f32: needs accumulator F32, order"):
        kernel(a, b, out=np.empty((2, 4), np.float32))


def test_a_call_is_refused_before_c_sees_it(built: Built) -> None:
    a, b = np.zeros((2, 3), np.float32), np.zeros((3, 4), np.float32)
    past = np.lib.stride_tricks.as_strided(b, shape=(3, 4), strides=(16, 8))
    refusals = [
        ((a, past), (2, 4), "b names elements outside its buffer"),
        ((a, b.T), (2, 3), r"must be \(\.\.\., M, K\) and \(\.\.\., K, N\)"),
        ((np.zeros((2, 2, 3), np.float32), np.zeros((3, 3, 4), np.float32)), (2, 2, 4), "do not"),
        ((a, b), (4, 2), r"out must be a dense, writable array of shape \(2, 4\)"),
        ((a, b, (1,)), (2, 4), r"takes kernel\(a, b, \*, out\)"),
    ]
    for args, shape, match in refusals:
        with pytest.raises(ValueError, match=match):
            built.kernel(*args, out=np.empty(shape, np.float32))
    with pytest.raises(ValueError, match="out overlaps an operand"):
        built.kernel(a, b, out=b[:2])


def test_compare_backends_runs_it_checked_beside_the_blas_and_the_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("a user's ABI v2 matmul was called in the comparing process")

    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((16, 40), np.float32), rng.standard_normal((40, 8), np.float32)
    plain = _build(SOURCE.read_text(encoding="utf-8"), tmp_path, flags=())  # the worker's
    monkeypatch.setattr(ShapedCompiledKernel, "__call__", never)
    with (
        ft.use_registry(plain.registry),
        ft.compare_backends(kernels=[NAME, "ref_matmul_f32"], timing=False) as report,
    ):
        got = np.asarray(ft.matmul(ft.asarray(x), ft.asarray(y)))  # the default kernel's
    rows = {row.kernels[-1]: row for row in report}
    assert set(rows) == {NAME, "ref_matmul_f32"}, rows
    # the worker's result, counted against the default one, is the declared order's
    agree = int((got.view(np.uint32) == in_order(x, y).view(np.uint32)).sum())
    assert (rows[NAME].count, rows[NAME].equal) == (got.size, agree), rows[NAME]


def test_the_judge_passes_it_and_fails_each_cheat(tmp_path: Path) -> None:
    source = SOURCE.read_text(encoding="utf-8")
    (tmp_path / "honest").mkdir()
    honest = _build(source, tmp_path / "honest", flags=())  # run by the judge's worker
    report = ft.judge(honest.registry, kernels=[NAME], quick=True, progress=False)
    assert report.ok, str(report)
    (row,) = report.rows
    assert any("every output the declared order's bits" in s for s in row.semantics)
    for cheat, (before, after) in CHEATS.items():
        assert source.count(before) == 1, f"the example changed: update the cheat {cheat!r}"
        into = tmp_path / cheat.replace(" ", "_")
        into.mkdir()
        cheating = _build(source.replace(before, after), into, ())
        report = ft.judge(cheating.registry, kernels=[NAME], quick=True, progress=False)
        (row,) = report.rows
        assert not report.ok, cheat
        assert any(f.startswith(("order:", "bound:")) for f in row.failures), (cheat, row)


def test_the_judge_names_each_hostile_build_and_lives_on(tmp_path: Path) -> None:
    library = build_c(
        TESTS / "hostile_matmul.c", tmp_path / "libhostile.so", "-I", str(EXAMPLE), "-lm"
    )
    text = DOCUMENT.read_text(encoding="utf-8")
    head, section = text.split(f"\n## {NAME}", 1)
    body = "".join(("\n## " + NAME + section).replace(NAME, name) for name in HOSTILE)
    (tmp_path / "hostile.md").write_text((head + body).replace(PROVIDER, "hostile-matmul"))
    symbols = {ENTRY.replace(NAME, name): name for name in HOSTILE}
    ft.register_provider("hostile-matmul", ft.load_library(library, symbols))
    reg = ft.Registry.from_paths([tmp_path / "hostile.md"])
    report = ft.judge(reg, kernels=list(HOSTILE), quick=True, progress=False)
    rows = {row.kernel: row for row in report.rows}
    for name, word in HOSTILE.items():
        failures = " ".join(rows[name].failures)
        assert "KernelFault" in failures and word in failures, (name, failures)


def test_pairs_link_only_as_the_instructions_order(
    built: Built, write: Callable[..., Path]
) -> None:
    text = DOCUMENT.read_text(encoding="utf-8").replace(
        "products: fused}", "products: fused, pairs: odd_first}"
    )
    with pytest.raises(ContractError, match=r"pairs 'odd_first' has an ABI v2 form only as "):
        ft.Registry.from_paths([write(text, "pairs.md")])  # subnormals kept: not VDPBF16PS
