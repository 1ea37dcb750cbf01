"""The judge's contraction audit (issue 46; fueltensor/tools/judge/contractions.py): an honest
Python sequential matmul (a NumPy loop over K in float32) passes, bit for bit against the
declared order; the cheats of docs/matmul.md fail, each naming the check, the case and the
output: bf16 accumulation declared F32, K split by the thread count, the last K element
skipped; the oracle's document passes; the declarations are read and refused at their line
(products exact where a product cannot be exact, unknown products or pairs); the FMA simulator
is the correctly rounded fused sum, against Fractions."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from itertools import pairwise
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _contractions import PROVIDER, SEQUENTIAL, Kernel, document, failures, judged
from _extras import ROOT

import fueltensor as ft
from fueltensor.kernels import threads
from fueltensor.tools.drafts import lint
from fueltensor.tools.judge import judge
from fueltensor.tools.judge.orders import fused_fold

# -- kernels, written apart from the judge's simulator ------------------------------------------


def sequential(
    acc: Any = np.float32, skip_last: bool = False, split: bool = False, exact: bool = False
) -> Kernel:
    """out = a @ b, each output's K products added in K order in `acc`, each product computed
    in `acc` (exact for half-type inputs inside float32's range) or, where `exact`, in float64
    and each step's sum rounded once from float64 (exact for BF16 and F16 inputs everywhere:
    their products and such sums fit float64's 53 bits); `skip_last` leaves out the last
    product, `split` sums K in as many consecutive parts as kernels.threads' setting and joins
    them."""
    wide = np.float64 if exact else acc

    def kernel(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        x, y = a.astype(wide), b.astype(wide)
        k = x.shape[-1] - int(skip_last and x.shape[-1] > 1)
        parts = max(1, threads.setting()) if split else 1
        bounds = np.linspace(0, k, parts + 1).astype(int)
        shape = (*np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), x.shape[-2], y.shape[-1])
        total = np.zeros(shape, acc)
        with np.errstate(all="ignore"):
            for lo, hi in pairwise(bounds):
                part = np.zeros(shape, acc)
                for t in range(lo, hi):
                    term = x[..., :, t : t + 1] * y[..., t : t + 1, :]
                    part = (term if t == lo else part.astype(wide) + term).astype(acc)
                total = part if lo == 0 else total + part
            out[...] = total.astype(out.dtype)

    return kernel


def follows(reverse_when: Callable[[np.ndarray, np.ndarray], bool]) -> Kernel:
    """The sequential kernel, but over K backwards where `reverse_when(a, b)`: an order that
    follows the layout or the batch."""
    forward = sequential(exact=True)

    def kernel(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        if reverse_when(a, b):
            forward(a[..., ::-1], b[..., ::-1, :], out=out)
        else:
            forward(a, b, out=out)

    return kernel


def test_an_honest_sequential_kernel_passes_bit_for_bit(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    report = judged(
        contract_text,
        write,
        {
            "seq_f32": (sequential(), f"{SEQUENTIAL}, products: rounded", "F32"),
            "seq_bf16": (sequential(exact=True), f"{SEQUENTIAL}, products: exact", "BF16"),
            "seq_f16": (sequential(exact=True), f"{SEQUENTIAL}, products: exact", "F16"),
            # a bf16 product is exact, so an FMA adds it as the exact sum rounded once does
            "seq_bf16_fused": (sequential(exact=True), f"{SEQUENTIAL}, products: fused", "BF16"),
        },
    )
    names = ("seq_f32", "seq_bf16", "seq_f16", "seq_bf16_fused")
    assert {a.kernel: a.failures for a in report.rows} == {n: [] for n in names}
    for a in report.rows:
        assert any("every output the declared order's bits" in s for s in a.semantics), a.semantics


def test_the_contraction_cheat_catalogue_fails(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    report = judged(
        contract_text,
        write,
        {
            "bf16_accumulator": (
                sequential(acc=ml_dtypes.bfloat16),
                f"{SEQUENTIAL}, products: exact",
                "BF16",
            ),
            "thread_split": (sequential(split=True), f"{SEQUENTIAL}, products: exact", "BF16"),
            "skipped_last": (sequential(skip_last=True), f"{SEQUENTIAL}, products: exact", "BF16"),
            "rounded_as_fused": (sequential(), f"{SEQUENTIAL}, products: fused", "F32"),
            # bf16 products rounded to float32 first: right inside its range, not past it
            "rounded_as_exact": (sequential(), f"{SEQUENTIAL}, products: exact", "BF16"),
        },
    )
    bf16 = failures(report, "bf16_accumulator")
    assert any(f.startswith("bound: ") and "constant sign, K = 4096" in f for f in bf16), bf16
    assert any(f.startswith("order: ") for f in bf16), bf16
    split = failures(report, "thread_split")
    assert any(f.startswith("invariance threads: ") for f in split), split
    rounded = failures(report, "rounded_as_fused")  # f32 products rounded, declared fused
    assert any(f.startswith("order: ") for f in rounded), rounded
    past = failures(report, "rounded_as_exact")
    assert any(f.startswith("order: ") and "products past float32" in f for f in past), past
    assert not any("random" in f or "cancellation" in f for f in past), past
    skipped = failures(report, "skipped_last")
    assert any(f.startswith("bound: ") for f in skipped) and any("order: " in f for f in skipped)
    for row in report.rows:  # a note never says what a failure denies
        (note,) = (s for s in row.semantics if s.startswith("contraction: "))
        order_failed = any(f.startswith("order: ") for f in row.failures)
        assert order_failed != ("every output the declared order's bits" in note), row.kernel
        assert any(f.startswith("bound: ") for f in row.failures) != ("within the bound" in note)


def test_orders_that_follow_the_layout_or_the_batch_fail_their_claims(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    exact = f"{SEQUENTIAL}, products: exact"
    report = judged(
        contract_text,
        write,
        {
            "layout_order": (follows(lambda a, b: not a.flags.c_contiguous), exact, "BF16"),
            "batch_order": (follows(lambda a, b: a.shape[-2] == 1), exact, "BF16"),
        },
    )
    layout = failures(report, "layout_order")
    assert any(f.startswith("invariance layout: ") and "vs dense" in f for f in layout), layout
    batch = failures(report, "batch_order")
    assert any(f.startswith("invariance batch: ") and " alone" in f for f in batch), batch


def test_the_oracle_document_passes_the_judge() -> None:
    reg = ft.Registry.from_paths([ROOT / "contracts" / "fuel-reference-backend-matmul.md"])
    rows = judge(reg, quick=True, progress=False).rows
    assert len(rows) == 4
    assert {row.kernel: row.failures for row in rows if row.failures} == {}
    assert all(row.measured_ulp <= 0.5 for row in rows)


@pytest.mark.parametrize(
    ("op_params", "dtypes", "says"),
    [
        (f"{SEQUENTIAL}, products: exact", "F32", "a F32 x F32 product has up to 48"),
        ("accumulator: F64, order: sequential, products: exact", "F64", "up to 106"),
        (f"{SEQUENTIAL}, products: approximate", "F32", "op_params.products 'approximate'"),
        (f"{SEQUENTIAL}, products: exact, pairs: even_first", "BF16", "op_params.pairs"),
    ],
)
def test_declarations_are_refused_at_their_line(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    op_params: str,
    dtypes: str,
    says: str,
) -> None:
    text = document(contract_text, "declared", op_params, dtypes)
    path = write(text)
    line = text[: text.index("kernel: declared")].count("\n") + 1  # the contract's line
    ft.register_provider(PROVIDER, {"tests::declared": sequential()})
    (row,) = judge(ft.Registry.from_paths([path]), quick=True, progress=False).rows
    assert any(f"{path}:{line}: " in f and says in f for f in row.failures), row.failures
    _, findings = lint([path])
    assert any(says in str(f) and f"{path}:{line}" in str(f) for f in findings), findings


def test_the_fused_simulator_rounds_each_fma_once() -> None:
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((64, 9)) * 2.0 ** rng.integers(-30, 30, (64, 9))).astype(np.float32)
    b = rng.standard_normal((64, 9)).astype(np.float32)
    products = a.astype(np.float64) * b.astype(np.float64)  # exact
    got = fused_fold(np.dtype(np.float32))(products)
    for r in range(64):
        total = np.float32(products[r, 0])
        for t in range(1, 9):
            exact = Fraction(float(total)) + Fraction(float(products[r, t]))
            total = _round_f32(exact)
        assert got[r].tobytes() == total.tobytes()


def _round_f32(q: Fraction) -> np.float32:
    """q rounded to float32, nearest even, through float64's neighbours: exact where q is."""
    near = np.float32(float(q))
    below, above = (
        (np.nextafter(near, -np.inf), near)
        if Fraction(float(near)) > q
        else (near, np.nextafter(near, np.inf))
    )
    low, high = Fraction(float(below)), Fraction(float(above))
    if q - low != high - q:
        return below if q - low < high - q else above
    return below if below.view(np.uint32) % 2 == 0 else above


def test_the_cost_columns_are_measured_per_multiply_add() -> None:
    """A contraction's cost row: the overhead of a 1 x 1 product and ns per multiply-add of a
    square product, with the formula's bytes per multiply-add as the document states them
    (a_count * a_bytes + b_count * b_bytes + n * dtype_bytes over n x n operands: 6 / n for
    BF16)."""
    reg = ft.Registry.from_paths([ROOT / "contracts" / "fuel-cpu-backend-matmul.md"])
    (row,) = judge(reg, kernels=["matmul_bf16"], quick=True, progress=False).rows
    (note,) = [s for s in row.semantics if s.startswith("cost:")]
    n = int(note.split(" a ")[1].split(" x ")[0])
    assert note == f"cost: per multiply-add of a {n} x {n} @ {n} x {n} product"
    assert row.large_n == n**3 and row.overhead_ns > 0 and row.ns_per_element > 0
    assert row.formula_bytes_per_element == pytest.approx(3 * n * n * 2 / n**3)
    assert row.gb_per_s == pytest.approx(6 / n / row.ns_per_element, rel=1e-9)
