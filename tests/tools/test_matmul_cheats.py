"""The matmul cheat catalogue's compiled kernel (tests/matmul_cheats.c; issue 46, item 3): a bf16
matmul by VDPBF16PS (`_mm512_dpbf16_ps`), or its scalar emulation where the CPU lacks
AVX512_BF16. The kernel is the Intel SDM's formula (per f32 lane: acc += a[2t+1]·b[2t+1], then
acc += a[2t]·b[2t], each product exact, each add rounded to nearest even, denormal inputs read as
zeros, denormal results flushed), held bit for bit to a rational step-by-step reference written
here; the emulation is the instruction bit for bit where the CPU has it; the judge's simulator
of `pairs: odd_first` with `subnormals: flushed` gives the kernel's bits; and the judge passes
the kernel declaring that, and fails it declaring `subnormals: kept`, naming the subnormal
cases."""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Callable, Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _cbuild import build_c
from _contractions import SEQUENTIAL, Kernel, failures, judged
from _extras import TESTS
from _pairs import random_pairs, same, sdm

from fueltensor.tools.judge.contraction_cases import Pair, contraction_cases
from fueltensor.tools.judge.contractions import products
from fueltensor.tools.judge.orders import Declared, flush_rounded, simulate

BF16 = np.dtype(ml_dtypes.bfloat16)
PAIRS = f"{SEQUENTIAL}, products: exact, pairs: odd_first"
DECLARED = Declared(
    "F32", "sequential", 128, products="exact", pairs="odd_first", contraction=True,
    subnormals="flushed",
)  # fmt: skip
"""What the kernel's honest contract declares, as the judge reads it."""


def _has_avx512_bf16() -> bool:
    """Whether this CPU runs VDPBF16PS (its /proc/cpuinfo flags say avx512_bf16)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(
        line.startswith("flags") and "avx512_bf16" in line.split() for line in text.splitlines()
    )


HAS_INSTRUCTION = _has_avx512_bf16()
SYMBOL = "vdp_matmul_bf16" if HAS_INSTRUCTION else "vdp_matmul_bf16_emulated"
"""The kernel the tests judge: the instruction's where the CPU has it, else the emulation."""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """tests/matmul_cheats.c, built and loaded."""
    into = tmp_path_factory.mktemp("matmul_cheats") / "libmatmul_cheats.so"
    return ctypes.CDLL(str(build_c(TESTS / "matmul_cheats.c", into, "-ffp-contract=off", "-lm")))


def kernel_of(library: ctypes.CDLL, symbol: str) -> Kernel:
    """The C function `symbol` as a Python matmul kernel `kernel(a, b, *, out)`: each stack's
    matrices copied dense and multiplied by one call."""
    fn = getattr(library, symbol)
    fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3
    fn.restype = ctypes.c_int32

    def kernel(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        stack = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        wide_a = np.broadcast_to(a, (*stack, *a.shape[-2:]))
        wide_b = np.broadcast_to(b, (*stack, *b.shape[-2:]))
        (m, k), n = a.shape[-2:], b.shape[-1]
        for index in np.ndindex(*stack):
            x = np.ascontiguousarray(wide_a[index]).view(np.uint16)
            y = np.ascontiguousarray(wide_b[index]).view(np.uint16)
            z = np.empty((m, n), np.uint16)
            assert fn(x.ctypes.data, y.ctypes.data, z.ctypes.data, m, k, n) == 0
            out[index] = z.view(out.dtype)

    return kernel


def run(kernel: Kernel, pair: Pair) -> np.ndarray:
    """The kernel's result for a pair."""
    shape = (*np.broadcast_shapes(pair.a.shape[:-2], pair.b.shape[:-2]), *pair.a.shape[-2:-1])
    out = np.empty((*shape, pair.b.shape[-1]), BF16)
    kernel(pair.a, pair.b, out=out)
    return out


def adversarial() -> Iterator[Pair]:
    """The judge's own contraction cases for the kernel's declaration, their stacks as 2-D."""
    for pair in contraction_cases(BF16, DECLARED, np.random.default_rng(3)):
        if pair.a.ndim == 2 and pair.b.ndim == 2:
            yield pair


def every_pair() -> list[Pair]:
    """The random pairs and the judge's cases."""
    return [*random_pairs(np.random.default_rng(11)), *adversarial()]


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_INSTRUCTION, reason="this CPU lacks AVX512_BF16 (VDPBF16PS)")
def test_the_emulation_is_the_instruction_bit_for_bit(library: ctypes.CDLL) -> None:
    instruction = kernel_of(library, "vdp_matmul_bf16")
    emulation = kernel_of(library, "vdp_matmul_bf16_emulated")
    stacked = Pair("stacks", *(p for p in (np.ones((2, 1, 3, 5), BF16), np.ones((3, 5, 2), BF16))))
    for pair in [*every_pair(), stacked]:
        got = run(instruction, pair)
        assert got.view(np.uint16).tobytes() == run(emulation, pair).view(np.uint16).tobytes()


def test_the_kernel_is_the_sdm_formula(library: ctypes.CDLL) -> None:
    kernel = kernel_of(library, SYMBOL)
    for pair in every_pair():
        same(run(kernel, pair), sdm(pair.a, pair.b))
    # the reference sees what it must: a flush, and the pairs' order, each change the bits
    edge = next(p for p in random_pairs(np.random.default_rng(0)) if p.name == "tininess")
    assert sdm(edge.a, edge.b).astype(np.float64).tolist() == [[0.0], [2.0**-126], [2.0**-126]]
    a, b = np.array([[1.0, 2.0**-25, -1.0, 2.0**-25]], BF16), np.ones((4, 1), BF16)
    assert float(sdm(a, b)[0, 0]) == 0.0  # ((2^-25 + 1) + 2^-25) - 1; in K order 2^-25


def test_the_judges_pairs_simulator_is_the_kernel(library: ctypes.CDLL) -> None:
    kernel = kernel_of(library, SYMBOL)
    for pair in every_pair():
        flushed = Pair(pair.name, *(flush_rounded(x, BF16) for x in (pair.a, pair.b)))
        simulated = simulate(products(flushed), DECLARED, BF16)
        same(run(kernel, pair).reshape(-1), simulated)
        kept = simulate(products(pair), Declared(**{**vars(DECLARED), "subnormals": None}), BF16)
        if pair.name.startswith(("subnormal", "tininess")):
            assert kept.tobytes() != simulated.tobytes(), pair.name  # the case tells them apart


def test_vdpbf16ps_passes_declaring_flushed_pairs_and_fails_declaring_kept(
    library: ctypes.CDLL, contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    kernel = kernel_of(library, SYMBOL)
    exact = f"{SEQUENTIAL}, products: exact"
    kernels: dict[str, tuple[Kernel, str, str]] = {
        "vdp_flushed": (kernel, PAIRS, "BF16"),
        "vdp_kept": (kernel, PAIRS, "BF16"),
        "vdp_undeclared": (kernel, PAIRS, "BF16"),  # kept, as the CPU contract's default
        "vdp_unpaired": (kernel, exact, "BF16"),
    }
    flushing = {"vdp_flushed": "flushed", "vdp_kept": "kept", "vdp_unpaired": "flushed"}
    report = judged(contract_text, write, kernels, flushing)
    assert failures(report, "vdp_flushed") == []
    (row,) = [a for a in report.rows if a.kernel == "vdp_flushed"]
    assert any("every output the declared order's bits" in s for s in row.semantics)
    for name in ("vdp_kept", "vdp_undeclared"):
        said = failures(report, name)
        cases = ("'subnormals'", "'subnormal partial sums'")
        for case in cases:
            assert any(f.startswith("order: ") and case in f for f in said), (name, case, said)
        assert all(any(c in f for c in cases) for f in said), said  # for flushing alone
    assert any("subnormals kept" in f for f in failures(report, "vdp_kept"))
    unpaired = failures(report, "vdp_unpaired")
    assert any(f.startswith("order: ") and "'cancellation'" in f for f in unpaired), unpaired
    # its p_1 = 2^64 · 2^64 added first overflows; in K order the sum is 2^126
    assert any(f.startswith("bound: ") and "products past" in f for f in unpaired), unpaired
