"""The judge's audit of a contraction contract (docs/matmul.md; issue 46): a contract whose op
kind is one of `ops.CONTRACTION_OPS`' rows (matmul), entered from `judge.audit`, with the
reduction audit's machinery (`judge.orders`' declaration and simulator, `judge.record`, the
reduction audit's findings, thread switch and determinism check).

Per audited dtype, recorded into the judge's `Audit`:

* **conformance and determinism**: two calls into `out` buffers filled with other garbage give
  the same bytes, the inputs are untouched, the output's dtype and shape are the contract's;
  16 runs byte-identical where the contract says bitwise.
* **the bound**, every declaration: |ĉ - c| <= γ_k Σ_l |a_il||b_lj| + ½ ulp_out(ĉ) per output,
  c and the magnitudes exact (`kernels.exact_matmul.exact_dots`), evaluated in rationals, k
  from the order over K (one more for `fused` or `rounded` products: `orders.Declared.k`); an
  output whose row or column holds a NaN or an infinity must be the exact result's special
  (NaN for NaN, inf · 0 or infinities of both signs; else that infinity).
* **the order's bits**, where the declaration fixes them (`Declared.fixes_bits`: `sequential`
  or `blocked` with `products` declared, `pairs` applied): every output against
  `orders.simulate` over its exact products, bit for bit (a NaN against any NaN); an output
  whose order's partial sums overflow is held to these bits, not the bound.
* **`semantics.subnormals: flushed`** (VDPBF16PS's DAZ and FTZ): the reference is the exact
  product of the operands with their subnormals read as zeros, each step of the simulated order
  flushed, and the bound widened by what K flushed steps may lose (`Declared.flush_slack`).
* **the cases** (`judge.contraction_cases`).
* **invariance claims**, on cancelling products (the order shows in their bits): `threads` (the
  same bits on 1, 2, 3 and 7 threads), `layout` (a and b transposed, flipped, strided, and a
  stack broadcast with stride 0, each against its dense copy, where the contract accepts that
  layout), `batch` (rows and columns of a 300 x 200 @ 200 x 150 product multiplied alone
  against their place in it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout
from fueltensor.engine.execute import returned_problems
from fueltensor.engine.planner import Operand, Plan, admit
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.casting import bits_of
from fueltensor.kernels.exact_matmul import exact_dots, exact_matmul
from fueltensor.ops import CONTRACTION_BY_KIND
from fueltensor.testing import bits, errors, format_value
from fueltensor.tools.judge.calls import call, time_on_threads, timing
from fueltensor.tools.judge.contraction_cases import Pair, contraction_cases
from fueltensor.tools.judge.orders import (
    EXACT,
    EXACT_PRODUCTS,
    FUSED,
    Declared,
    declared,
    flush_rounded,
    simulate,
)
from fueltensor.tools.judge.record import Audit, Settings
from fueltensor.tools.judge.reduction_checks import Findings, half_ulp, special
from fueltensor.tools.judge.reductions import (
    admitted_cases,
    audit_threads,
    cost_or_note,
    determinism,
    differs,
)
from fueltensor.tools.judge.references import Array

REFERENCE: Final = (
    "exact dot products rounded once (kernels.exact_matmul), the order's bits, its bound"
)
BATCH: Final = ((300, 200), (200, 150))
"""The batch claim's product: its rows and columns are multiplied alone against it."""


def is_contraction(op_kind: str) -> bool:
    """Whether `op_kind` is a contraction row's (so the judge audits it here)."""
    return op_kind in CONTRACTION_BY_KIND


def declaration_problems(contracts: Iterable[KernelContract]) -> list[str]:
    """Each contraction contract's declaration the judge cannot read (`orders.declared`: an
    unknown products or pairs, products exact where a product cannot be), as file:line: what
    `fueltensor lint` reports before any kernel runs."""
    found = (declared(c) for c in contracts if is_contraction(c.op_kind))
    return [d for d in found if isinstance(d, str)]


def plan_for(
    contract: KernelContract, dtype: DType, a: tuple[int, ...], b: tuple[int, ...]
) -> Plan:
    """The contract's plan for dense operands of shapes `a` and `b` (ValueError if the
    contract does not admit them)."""
    out = (*np.broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])
    operands = tuple(Operand(dtype, Layout.dense(s)) for s in (a, b))
    verdict = admit(contract, CONTRACTION_BY_KIND[contract.op_kind].name, operands, out)
    if isinstance(verdict, tuple):
        raise ValueError(f"{contract.name} does not admit {a} @ {b}: " + "; ".join(verdict))
    return verdict


def _outputs(pair: Pair) -> tuple[int, ...]:
    """The pair's result shape."""
    a, b = pair.a.shape, pair.b.shape
    return (*np.broadcast_shapes(a[:-2], b[:-2]), a[-2], b[-1])


def _index(pair: Pair, r: int | np.integer[Any]) -> tuple[int, ...]:
    """Output r's index in the pair's result."""
    return tuple(int(i) for i in np.unravel_index(r, _outputs(pair)))


def products(pair: Pair) -> Array:
    """Each output's K products in float64 (outputs, K): exact for operands of 24 bits or fewer,
    each rounded to float64 for F64 operands (what `rounded` products into F64 are)."""
    a, b = (x.astype(np.float64) for x in (pair.a, pair.b))
    stack = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, (*stack, *a.shape[-2:]))
    b = np.broadcast_to(b, (*stack, *b.shape[-2:]))
    with np.errstate(all="ignore"):
        table: Array = a[..., :, None, :] * np.swapaxes(b, -1, -2)[..., None, :, :]
    return table.reshape(math.prod(_outputs(pair)), pair.a.shape[-1])


def leave_range(table: Array, d: Declared) -> Array:
    """Per output (a row of `table`, its exact products: `products`), whether a product rounded
    to the accumulator leaves its normal range (an infinity from finite operands, or a nonzero
    product below the smallest normal): Higham's bound assumes none does. Products declared
    `exact` or `fused` are never rounded."""
    if d.products in (EXACT_PRODUCTS, FUSED) or d.accumulator == EXACT or table.shape[1] == 0:
        return np.zeros(table.shape[0], bool)
    tiny = 2.0 ** bits_of(d.dtype).min_exp
    with np.errstate(all="ignore"):
        rounded = np.abs(table.astype(d.dtype)).astype(np.float64)
        out = np.isinf(rounded) | ((table != 0) & (rounded < tiny))
    return np.asarray(out.any(axis=1))


def _bound(
    pair: Pair, table: Array, got: Array, want: Array, d: Declared, f: Findings, left: Array
) -> None:
    """The bound per output of finite rows and columns whose rounded products stay in the
    accumulator's range (`leave_range`) and whose order's partial sums do not overflow (`left`
    marks those: the others are held to the order's bits where it fixes them, counted
    otherwise), the exact result's specials elsewhere; a flushing declaration's bound widened
    by what flushing may lose (`Declared.flush_slack`)."""
    k = pair.a.shape[-1]
    with np.errstate(invalid="ignore"):
        rows_ok = np.asarray(np.isfinite(pair.a.astype(np.float64)).all(axis=-1))
        cols_ok = np.asarray(np.isfinite(pair.b.astype(np.float64)).all(axis=-2))
    both = rows_ok[..., :, None] & cols_ok[..., None, :]
    finite = np.broadcast_to(both, _outputs(pair)).reshape(-1)
    for r in np.flatnonzero(~finite & special(got, want))[:1]:
        f.add("specials", pair, f"output {_index(pair, r)} of case '{pair.name}' is "
              f"{format_value(got[r])}, the exact product is {format_value(want[r])}")  # fmt: skip
    gamma = d.gamma(k)
    if gamma is None:
        f.unbounded += int(finite.sum())
        return
    left = finite & (leave_range(table, d) | left)
    f.out_of_range += int(left.sum())
    slack = d.flush_slack(k)
    sums, magnitudes = exact_dots(pair.a, pair.b)
    for r in np.flatnonzero(finite & ~left):
        value = float(got[r])
        if not math.isfinite(value):
            if bits(got[r : r + 1]) != bits(want[r : r + 1]):
                f.add("bound", pair, f"output {_index(pair, r)} of case '{pair.name}' is "
                      f"{format_value(got[r])} from finite operands, the exact product "
                      f"rounds to {format_value(want[r])}")  # fmt: skip
                return
            continue
        error = abs(Fraction(value) - sums[r])
        limit = gamma * magnitudes[r] + half_ulp(value, got.dtype) + slack
        if error / limit > f.worst_use:
            f.worst_use, f.worst_where = error / limit, f"output {_index(pair, r)} of '{pair.name}'"
        if error > limit:
            f.add("bound", pair, f"output {_index(pair, r)} of case '{pair.name}' is "
                  f"{format_value(got[r])}, the exact product {float(sums[r]):.9g}: |error| "
                  f"{float(error):.4g} > γ_{d.k(k)}·Σ|a||b| + ½ ulp = {float(limit):.4g} "
                  f"(Σ|a||b| {float(magnitudes[r]):.4g}; {d.describe()}; K = {k})")  # fmt: skip
            return
    f.outputs += got.size - int(left.sum())


def check(pair: Pair, got: Array, d: Declared, f: Findings, a: Audit) -> None:
    """The pair's bound, specials and, where the declaration fixes them, bits, against the
    exact product of its operands (their subnormals read as zeros where the declaration
    flushes them); the worst ULP from that exact result into `a`."""
    got = np.ascontiguousarray(got).reshape(-1)
    if d.flushed:
        pair = Pair(pair.name, *(flush_rounded(x, x.dtype) for x in (pair.a, pair.b)))
    want = np.empty(_outputs(pair), got.dtype)
    exact_matmul(pair.a, pair.b, want)
    want = want.reshape(-1)
    a.probes += got.size
    a.measured_ulp = max(a.measured_ulp, float(errors(got, want).ulp.max(initial=0.0)))
    table = products(pair)
    simulated = simulate(table, d, got.dtype) if d.fixes_bits else None
    with np.errstate(invalid="ignore"):  # the order's partial sums overflow: its bits hold
        ordered = np.zeros(got.size) if simulated is None else simulated.astype(np.float64)
        left = ~np.isfinite(ordered) & np.isfinite(want.astype(np.float64))
    _bound(pair, table, got, want, d, f, left)
    if simulated is not None:
        differ = np.flatnonzero(special(got, simulated))
        if differ.size:
            r = int(differ[0])
            f.add("order", pair, f"output {_index(pair, r)} of case '{pair.name}' is "
                  f"{format_value(got[r])}, the declared order ({d.describe()}) gives "
                  f"{format_value(simulated[r])}; {differ.size} of {got.size} outputs "
                  "differ")  # fmt: skip


Call = Callable[[Pair], Array]


def views(pair: Pair, layout: dict[str, str]) -> Iterator[tuple[str, Pair]]:
    """The pair's operands in every layout the contract accepts, each with the same values."""
    a, b = pair.a, pair.b
    if layout.get("strided") == "allowed":
        yield "a transposed", Pair(pair.name, np.ascontiguousarray(a.T).T, b)
        yield "b transposed", Pair(pair.name, a, np.ascontiguousarray(b.T).T)
        spaced = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
        spaced[:, ::2] = a
        yield "a strided", Pair(pair.name, spaced[:, ::2], b)
    if layout.get("reverse_strides") == "allowed":
        flipped = np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]
        yield "a, b flipped", Pair(pair.name, flipped, np.ascontiguousarray(b[::-1])[::-1])
    if layout.get("broadcast_stride0") == "allowed":
        yield "a broadcast over a stack of 3", Pair(pair.name, np.broadcast_to(a, (3, *a.shape)), b)


def audit_layout(
    call_pair: Call, pair: Pair, layout: dict[str, str]
) -> tuple[list[str], list[str]]:
    """The `layout` claim: each view against the dense operands (failures, layouts audited)."""
    dense = call_pair(Pair(pair.name, np.ascontiguousarray(pair.a), np.ascontiguousarray(pair.b)))
    failures, seen = [], []
    for name, view in views(pair, layout):
        seen.append(name)
        got = call_pair(view)
        want = np.broadcast_to(dense, got.shape)
        failures.append(differs("layout", view, got, want, f"{name} vs dense"))
    return [f for f in failures if f], seen


def audit_batch(call_pair: Call, dtype: np.dtype[Any], rng: np.random.Generator) -> list[str]:
    """The `batch` claim: rows and columns of the BATCH product multiplied alone, its products
    cancelling in pairs (the order shows in the bits, even rounded to a half type)."""
    (m, k), (_, n) = BATCH
    x, y = rng.uniform(-1, 1, (m, k // 2)), rng.uniform(-1, 1, (k // 2, n))
    noise = rng.uniform(0, 2.0**-8, (k // 2, n))
    big = Pair(
        "batch",
        np.concatenate([x, x], axis=1).astype(dtype),
        np.concatenate([y, noise - y], axis=0).astype(dtype),
    )
    whole = call_pair(big)
    failures = []
    for i in (0, 1, m // 2, m - 1):
        alone = call_pair(Pair("batch", big.a[i : i + 1], big.b))
        failures.append(differs("batch", big, alone, whole[i : i + 1], f"row {i} alone vs in it"))
    for j in (0, n // 3, n - 1):
        alone = call_pair(Pair("batch", big.a, big.b[:, j : j + 1]))
        failures.append(differs("batch", big, alone, whole[:, j : j + 1], f"column {j} alone"))
    return [f for f in failures if f]


def audit_contraction(
    a: Audit,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
    rng: np.random.Generator,
) -> None:
    """The contraction audit of one contract at one dtype, recorded into `a` (the module's)."""
    a.reference = REFERENCE
    d = declared(contract)
    if isinstance(d, str):
        a.failures.append(f"declaration: {d}")
        return

    def call_pair(pair: Pair, fill: int = 0xA5) -> Array:
        return call(
            fn, plan_for(contract, dtype, pair.a.shape, pair.b.shape), (pair.a, pair.b), fill
        )

    cases = contraction_cases(dtype.np, d, rng)
    every = admitted_cases(a, cases, lambda p: plan_for(contract, dtype, p.a.shape, p.b.shape))
    if not every:
        a.failures.append("cases: the contract admits none of the judge's inputs")
        return
    a.conformance = conformance(call_pair, contract, dtype, every[0])
    a.failures += [f"conformance: {p}" for p in a.conformance]
    determinism(a, contract, lambda fill: call_pair(every[0], fill))
    f = Findings()
    for pair in every:
        check(pair, call_pair(pair), d, f, a)
    a.failures += f.failures()
    _claims(a, contract, call_pair, every, rng)
    use = f"{float(f.worst_use):.3g} of the bound at {f.worst_where}" if f.worst_where else "none"
    bounded = "within the bound" if "bound" not in f.found else "checked against the bound"
    a.semantics.append(
        f"contraction: {d.describe()}; {f.outputs} outputs of {len(every)} cases {bounded} "
        f"(worst use {use})"
        + ("; every output the declared order's bits" * (d.fixes_bits and "order" not in f.found))
        + (f"; {f.unbounded} outputs of rows too long to bound (k·u >= 1)" * bool(f.unbounded))
        + (
            f"; {f.out_of_range} outputs whose rounded products leave the accumulator's range, "
            + ("held to the order's bits" if d.fixes_bits else "not bounded")
        )
        * bool(f.out_of_range)
    )
    cost_or_note(a, lambda: _cost(a, contract, fn, dtype, settings, copy_bps))


def _cost(
    a: Audit, contract: KernelContract, fn: KernelFn, dtype: DType, settings: Settings,
    copy_bps: float,
) -> None:  # fmt: skip
    """The overhead of a 1 x 1 @ 1 x 1 call, and ns per multiply-add of an n x n @ n x n
    product of about `settings.large` of them, on one thread and on the setting's, next to the
    cost formula's bytes (ValueError where the contract does not admit those shapes)."""
    tiny = plan_for(contract, dtype, (1, 1), (1, 1))
    one = np.ones((1, 1), dtype.np)
    overhead = timing(fn, tiny, (one, one), np.empty((1, 1), tiny.out_dtype.np))
    a.overhead_ns, a.overhead_calls = 1e9 * overhead.seconds, overhead.calls
    n = max(2, round(settings.large ** (1 / 3)))
    big = plan_for(contract, dtype, (n, n), (n, n))
    rng = np.random.default_rng(1)
    x, y = (rng.uniform(0.5, 2.0, (n, n)).astype(dtype.np) for _ in range(2))
    measured, every = time_on_threads(fn, big, (x, y), np.empty((n, n), big.out_dtype.np))
    products = n**3
    a.ns_per_element_all = every * big.size / products  # per output there: per product here
    a.large_n, a.large_calls = products, measured.calls
    a.ns_per_element = 1e9 * measured.seconds / products
    predicted = float(big.steps[-1].bytes)
    a.gb_per_s = predicted / measured.seconds / 1e9
    a.formula_bytes_per_element = predicted / products
    a.predicted_ns_per_element = 1e9 * predicted / products / copy_bps
    a.semantics.append(f"cost: per multiply-add of a {n} x {n} @ {n} x {n} product")


def conformance(
    call_pair: Callable[[Pair, int], Array], contract: KernelContract, dtype: DType, pair: Pair
) -> list[str]:
    """Problems with the kernel's output per the `return` clause, inputs, and `out` garbage."""
    before = pair.a.tobytes() + pair.b.tobytes()
    first, second = call_pair(pair, 0xA5), call_pair(pair, 0x5A)
    plan = plan_for(contract, dtype, pair.a.shape, pair.b.shape)
    problems = [f"returned {p}" for p in returned_problems(plan, first, (pair.a, pair.b))]
    if pair.a.tobytes() + pair.b.tobytes() != before:
        problems.append("an input was written")
    if first.tobytes() != second.tobytes():
        problems.append(
            "the output depends on what `out` held before the call (an element was read or "
            "left unwritten)"
        )
    return problems


def _claims(
    a: Audit, contract: KernelContract, call_pair: Call, every: list[Pair], rng: np.random.Generator
) -> None:
    """The invariance claims the contract declares, each audited (or noted as not here)."""
    claims = contract.semantics.invariance if contract.semantics is not None else None
    if not claims:
        return
    named = {p.name: p for p in every}
    base = [named.get(n) for n in ("cancellation", "random", "constant sign, K = 4096")]
    pairs = [p for p in base if p is not None] or every[:1]
    if "threads" in claims:
        a.failures += audit_threads(call_pair, pairs)
    if "layout" in claims:
        other = dict(contract.inputs[1].layout)  # a layout both operands accept
        layout = {k: v for k, v in contract.inputs[0].layout if other.get(k) == v}
        failures, seen = audit_layout(call_pair, pairs[0], layout)
        a.failures += failures
        a.semantics.append(f"invariance layout: audited {', '.join(seen)}")
    if "batch" in claims:
        a.failures += audit_batch(call_pair, pairs[0].a.dtype, rng)
    if "isa" in claims:
        a.semantics.append(
            "invariance isa: a contraction's instruction-set bodies are not switched here "
            "yet: not audited"
        )
