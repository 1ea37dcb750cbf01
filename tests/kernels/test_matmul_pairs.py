"""fuel-cpu-backend's BF16 matmul in VDPBF16PS's order (`matmul_bf16_pairs`, abi.h's
ORDER_PAIRS_ODD_FIRST; issue 46, item 2), bit for bit against references written from the
Intel SDM, never from the core: `sdm` (tests/_pairs.py: Fractions step by step) for small
products, and tests/matmul_cheats.c's emulation (round to odd in double, checked against the
instruction and against `sdm` by tests/tools/test_matmul_cheats.py) for large ones. On every
body (each instruction set, and on AVX-512 the instruction and its emulation), 1, 2, 3 and 7
threads, odd K, K = 0, K past a panel (512), tiles not whole; subnormal operands and partial
sums, x86's tininess after rounding, specials, cancellation (the judge's cases); every layout
through `ft.matmul` under `use_backend("matmul_bf16_pairs")`; the pure-NumPy body; refusals;
and `matmul_bf16` stays the default."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _cbuild import build_c
from _extras import TESTS
from _matmul import over_stacks, views
from _pairs import random_pairs, same, sdm

import fueltensor as ft
from fueltensor import ops
from fueltensor.kernels import contractions, threads
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE
from fueltensor.tools.judge.contraction_cases import Pair, contraction_cases
from fueltensor.tools.judge.orders import Declared

_native: Any = NATIVE
Array = np.ndarray[Any, Any]
BF16 = np.dtype(ml_dtypes.bfloat16)
KERNEL = "matmul_bf16_pairs"
OP = tuple(NATIVE.CONTRACTION_OPS).index(ops.CONTRACTION_OPS[0].kernel_op) if NATIVE else 0
F32_CODE = 0
"""float32's dtype code, the accumulator."""
compiled = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="the matmul core is compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)
INSTRUCTION = NATIVE is not None and _native.pairs_instruction(None) is not None
"""Whether this CPU runs VDPBF16PS (the core reports None where it lacks AVX512_BF16; the
default, the faster body as measured, set again here)."""
SHAPES = [(300, 200, 150), (14, 1025, 33), (1, 513, 70), (33, 600, 65), (9, 1, 33), (15, 3, 31)]
"""(M, K, N): tiles not whole, K past one and two panels of 512, K odd and 1."""


def run(a: Array, b: Array) -> Array:
    """`_native.contract` in the pairs order into a fresh (NaN-filled) dense output."""
    out = np.full((*a.shape[:-1], b.shape[-1]), np.nan, BF16)
    order, exact = _native.ORDER_PAIRS_ODD_FIRST, _native.PRODUCTS_EXACT
    _native.contract(OP, a, b, out, F32_CODE, order, exact)
    return out


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """tests/matmul_cheats.c's scalar VDPBF16PS emulation as `emulated(a, b)` (2-D bf16)."""
    folder = tmp_path_factory.mktemp("matmul_pairs")
    library = ctypes.CDLL(
        str(build_c(TESTS / "matmul_cheats.c", folder / "lib.so", "-ffp-contract=off", "-lm"))
    )
    fn = library.vdp_matmul_bf16_emulated
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3
    fn.restype = ctypes.c_int32

    def call(a: Array, b: Array) -> Array:
        x, y = np.ascontiguousarray(a).view(np.uint16), np.ascontiguousarray(b).view(np.uint16)
        (m, k), n = a.shape, b.shape[1]
        z = np.empty((m, n), np.uint16)
        assert fn(x.ctypes.data, y.ctypes.data, z.ctypes.data, m, k, n) == 0
        return z.view(BF16)

    return call


def bodies() -> list[str]:
    """Every body of the pairs order here: each instruction set's (emulations: scalar, and on
    AVX-512 FMAs under FTZ and DAZ), and on AVX-512 the instruction too where the CPU has it."""
    if NATIVE is None:
        return []
    names = [f"{isa}" for isa in _native.ISAS]
    return [*names, "avx512+vdpbf16ps"] if INSTRUCTION else names


@pytest.fixture(params=bodies())
def body(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each body in turn (`select_isa`, `pairs_instruction`), the previous ones after."""
    isa, _, instruction = request.param.partition("+")
    previous = _native.select_isa(isa)
    was = _native.pairs_instruction(bool(instruction))
    yield request.param
    _native.select_isa(previous)
    if was is not None:
        _native.pairs_instruction(None)


def sample(rng: np.random.Generator, shape: tuple[int, int], scale: float = 1.0) -> Array:
    """Mixed signs and scales, a tenth of the elements bfloat16 subnormals or signed zeros."""
    x = rng.standard_normal(shape) * scale * 2.0 ** rng.integers(-4, 5, shape)
    x[rng.random(shape) < 0.1] = rng.choice([2.0**-130, -(2.0**-127), -0.0, 0.0])
    return x.astype(BF16)


def small_pairs() -> list[Pair]:
    """The cheat test's random and edge pairs, the judge's contraction cases for the
    declaration (2-D ones), specials at K's ends and its pairs' halves, and K = 0."""
    declared = Declared(
        "F32", "sequential", 128, products="exact", pairs="odd_first", contraction=True,
        subnormals="flushed",
    )  # fmt: skip
    cases = contraction_cases(BF16, declared, np.random.default_rng(3))
    found = [p for p in cases if p.a.ndim == 2 and p.b.ndim == 2]
    x, y = np.ones((4, 5)), np.ones((5, 3))
    x[0, 0], x[1, 4], x[2, 3], y[1, 1], y[4, 2] = np.nan, np.inf, -np.inf, np.inf, 0.0
    found.append(Pair("specials", x.astype(BF16), y.astype(BF16)))
    found.append(Pair("K = 0", np.ones((3, 0), BF16), np.ones((0, 4), BF16)))
    # every product -0 over an odd K: -0, which the padding (-0 · +0) keeps and +0 · +0 would not
    zeros = np.full((2, 3), -0.0, BF16), np.zeros((3, 17), BF16)
    found.append(Pair("-0 products, odd K", *zeros))
    return [*random_pairs(np.random.default_rng(11)), *found]


@compiled
def test_the_core_is_the_sdm_formula_on_every_body(body: str) -> None:
    for pair in small_pairs():
        got = run(pair.a, pair.b)
        same(got, sdm(pair.a, pair.b))
    zeros = small_pairs()[-1]
    assert np.signbit(run(zeros.a, zeros.b).astype(np.float32)).all()  # -0 kept
    assert run(np.ones((2, 0), BF16), np.ones((0, 3), BF16)).view(np.uint16).tolist() == [
        [0, 0, 0],
        [0, 0, 0],
    ]  # K = 0: +0


@compiled
def test_large_and_tiled_shapes_match_the_c_emulation(body: str, emulated: Any) -> None:
    """Tiles not whole, K past the panels, at scales where sums cross 2^-126 (flushed)."""
    rng = np.random.default_rng(5)
    for m, k, n in SHAPES:
        for scale in (1.0, 2.0**-63):
            a, b = sample(rng, (m, k), scale), sample(rng, (k, n), scale)
            same(run(a, b), emulated(a, b))


@compiled
@pytest.mark.parametrize("count", [2, 3, 7])
def test_300_by_200_by_150_is_one_result_on_1_2_3_and_7_threads(count: int, body: str) -> None:
    pretended = threads.pretend_cores(count)
    try:
        rng = np.random.default_rng(count)
        a, b = sample(rng, (300, 200), 2.0**-62), sample(rng, (200, 150), 2.0**-62)
        with threads.running_on(1):
            one = run(a, b)
        with threads.running_on(count):
            many = run(a, b)
        assert one.tobytes() == many.tobytes(), (body, count)
    finally:
        threads.pretend_cores(pretended)


@compiled
@pytest.mark.skipif(not INSTRUCTION, reason="this CPU lacks AVX512_BF16 (VDPBF16PS)")
def test_the_instruction_is_its_emulation_bit_for_bit() -> None:
    """Every pair and shape above, with NaN payloads: the same bytes."""
    rng = np.random.default_rng(6)
    pairs = [(p.a, p.b) for p in small_pairs()]
    pairs += [(sample(rng, (m, k)), sample(rng, (k, n))) for m, k, n in SHAPES]
    previous = _native.select_isa("avx512")
    try:
        for a, b in pairs:
            _native.pairs_instruction(True)
            fast = run(a, b)
            _native.pairs_instruction(None)  # the default: the faster as measured
            chosen = run(a, b)
            _native.pairs_instruction(False)
            assert fast.tobytes() == run(a, b).tobytes() == chosen.tobytes(), a.shape
    finally:
        _native.pairs_instruction(None)
        _native.select_isa(previous)


def test_the_pure_body_is_the_sdm_formula() -> None:
    for pair in small_pairs():
        out = np.full((pair.a.shape[0], pair.b.shape[1]), np.nan, BF16)
        contractions.pairs(pair.a, pair.b, out)
        same(out, sdm(pair.a, pair.b))


def test_ft_matmul_runs_it_where_named_on_every_layout() -> None:
    """Views, 1-D operands and broadcast stacks through ft.matmul under
    use_backend("matmul_bf16_pairs"), against the SDM per stack entry; the default stays
    matmul_bf16 (its bits keep subnormals)."""
    rng = np.random.default_rng(7)
    for x, y in views(rng, BF16):
        x, y = x * np.asarray(2.0**-63, BF16), y * np.asarray(2.0**-63, BF16)  # sums near 2^-126
        with ft.use_backend(KERNEL), ft.trace() as plans:
            got = np.asarray(ft.matmul(ft.asarray(x), ft.asarray(y)))
        assert [p.kernel.name if p.kernel else "host" for p in plans] == [KERNEL]
        same(got, over_stacks(sdm, x, y))
    a, b = ft.asarray(np.ones((3, 4), BF16)), ft.asarray(np.ones((4, 2), BF16))
    kernel = ft.explain(ft.matmul, a, b).kernel
    assert kernel is not None and kernel.name == "matmul_bf16"


def test_a_300_by_200_by_150_product_through_ft_matmul(emulated: Any) -> None:
    """Both modes (the core, or the pure-NumPy body) against the C emulation."""
    rng = np.random.default_rng(8)
    a, b = sample(rng, (300, 200), 2.0**-62), sample(rng, (200, 150), 2.0**-62)
    with ft.use_backend(KERNEL):
        got = np.asarray(ft.matmul(ft.asarray(a), ft.asarray(b)))
    same(got, emulated(a, b))


@compiled
def test_refusals() -> None:
    pairs, exact, fused = (
        _native.ORDER_PAIRS_ODD_FIRST,
        _native.PRODUCTS_EXACT,
        _native.PRODUCTS_FUSED,
    )
    h = np.ones((2, 2), np.float16)
    with pytest.raises(ValueError, match="ORDER_PAIRS_ODD_FIRST takes bfloat16"):
        _native.contract(OP, h, h, np.empty_like(h), F32_CODE, pairs, exact)
    x = np.ones((2, 2), BF16)
    with pytest.raises(ValueError, match="ORDER_PAIRS_ODD_FIRST takes bfloat16"):
        _native.contract(OP, x, x, np.empty_like(x), F32_CODE, pairs, fused)
