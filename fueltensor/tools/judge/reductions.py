"""The judge's audit of a reduction contract (docs/reductions.md; issue 48): a contract whose op
kind is one of `ops.REDUCTION_OPS`' rows, entered from `judge.audit`. Built for sums, and for
maxima and minima (exact: each output the selection, `orders.selected`, bit for bit, a NaN
against any NaN; no empty rows), and for products (their own cases, `judge.product_cases`, and
checks, `judge.products`: the bound only where no partial product leaves the normal range).

Per audited dtype, recorded into the judge's `Audit` (failures; notes in `semantics`; the worst
ULP from the exact sum rounded once in `measured_ulp`, the outputs checked in `probes`):

* **conformance and determinism**: two calls into `out` buffers filled with other garbage give
  the same bytes, the inputs are untouched, the output's dtype and shape are the contract's;
  16 runs byte-identical where the contract says bitwise.
* **the order's bits**, where the declared order fixes them (`orders.BITWISE`): every output of
  every case against `orders.simulate`, bit for bit (a NaN against any NaN).
* **the bound**, every order: |s^ - s| <= γ_k Σ|x| + ½ ulp_out(s^) per output, s and Σ|x| exact
  (`kernels.exact_sums.exact_rows`), evaluated in rationals; a row holding a NaN or an infinity
  must give the exact sum's special (NaN in, NaN out; +inf and -inf, NaN; one infinity's sign,
  that infinity); an empty row +0.
* **the cases** (`judge.reduction_cases`): random rows; cancellation; a huge dynamic range; a
  long constant-sign run; NaN and infinities at the first, last and block-boundary positions;
  lengths around a block and the tree's splits; several axes, inner and outer.
* **invariance claims** (`semantics.invariance`): `threads` (the same bits on 1, 2, 3 and 7
  threads: `kernels.threads`' setting and cores set to each, so a Python kernel that reads the
  setting sees it too), `layout` (the same values transposed, flipped, offset, broadcast or with
  the reduced axis leading, each where the contract accepts that layout), `batch` (each row
  reduced alone equals its row in the batch, and in a batch of 512). Each failure names the case
  and the first differing output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import Final, TypeVar

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, Shape
from fueltensor.engine.execute import returned_problems
from fueltensor.engine.planner import Operand, Plan, admit
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn, threads
from fueltensor.kernels.exact_sums import exact_rows, exact_sum, rows
from fueltensor.ops import REDUCTION_BY_KIND, OpKind
from fueltensor.testing import bits, errors, format_value
from fueltensor.tools.judge import products
from fueltensor.tools.judge.calls import call, result_dtype, time_on_threads, timing
from fueltensor.tools.judge.orders import Declared, declared, selected, tie
from fueltensor.tools.judge.product_cases import product_cases
from fueltensor.tools.judge.record import RUNS, Audit, Settings, record_runs
from fueltensor.tools.judge.reduction_cases import Case, cases
from fueltensor.tools.judge.reduction_checks import (
    Findings,
    Named,
    half_ulp,
    index,
    order_bits,
    special,
    summary,
)
from fueltensor.tools.judge.references import Array

T = TypeVar("T", bound=Named)
THREADS: Final = (1, 2, 3, 7)
"""The thread counts the `threads` claim is audited on (the first is the reference)."""
REFERENCES: Final = {
    OpKind.SUM: "the exact sum rounded once (kernels.exact_sums), the order's bits, its bound",
    OpKind.PROD: "the exact product rounded once (kernels.exact_products), the order's bits, "
    "its bound in range",
    OpKind.MAX: "the selection, exact",
    OpKind.MIN: "the selection, exact",
}
"""The reference each reduction is audited against, for the `Audit`'s reference column."""


def is_reduction(op_kind: str) -> bool:
    """Whether `op_kind` is a reduction row's (so the judge audits it here)."""
    return op_kind in REDUCTION_BY_KIND


# -- calling ------------------------------------------------------------------------------------


def plan_for(contract: KernelContract, dtype: DType, shape: Shape, axes: tuple[int, ...]) -> Plan:
    """The contract's plan for a dense x of `shape` reduced over `axes` (ValueError if the
    contract does not admit it)."""
    reduced = tuple(n for i, n in enumerate(shape) if i not in axes)
    operands = (Operand(dtype, Layout.dense(shape)),)
    verdict = admit(contract, REDUCTION_BY_KIND[contract.op_kind].name, operands, reduced, (axes,))
    if isinstance(verdict, tuple):
        raise ValueError(
            f"{contract.name} does not admit {shape} over {axes}: " + "; ".join(verdict)
        )
    return verdict


def run(
    fn: KernelFn, contract: KernelContract, dtype: DType, case: Case, fill: int = 0xA5
) -> Array:
    """The kernel on the case, as the executor calls it (a plan for its shape and axes)."""
    plan = plan_for(contract, dtype, case.x.shape, case.axes)
    return call(fn, plan, (case.x,), fill)


# -- the checks of one case ---------------------------------------------------------------------


def _bound(case: Case, table: Array, got: Array, want: Array, d: Declared, f: Findings) -> None:
    """The bound per output (finite rows), the exact sum's specials elsewhere."""
    finite = np.isfinite(table.astype(np.float64)).all(axis=1) & (table.shape[1] > 0)
    gamma = d.gamma(table.shape[1])
    sums, magnitudes = exact_rows(table)
    for r in np.flatnonzero(~finite & special(got, want)):
        f.add(
            "specials",
            case,
            f"output {index(case, r)} of case '{case.name}' is "
            f"{format_value(got[r])}, the exact sum is {format_value(want[r])} "
            f"({summary(table[r])})",
        )
        break
    if gamma is None:  # no bound: any finite or overflowed result of finite elements holds
        f.unbounded += int(finite.sum())
        return
    for r in np.flatnonzero(finite):
        value = float(got[r])
        if not math.isfinite(value):
            if bits(got[r : r + 1]) != bits(want[r : r + 1]):
                f.add(
                    "bound",
                    case,
                    f"output {index(case, r)} of case '{case.name}' is "
                    f"{format_value(got[r])} from finite elements, the exact sum rounds to "
                    f"{format_value(want[r])} ({summary(table[r])})",
                )
            continue
        error = abs(Fraction(value) - sums[r])
        limit = gamma * magnitudes[r] + half_ulp(value, got.dtype)
        use = error / limit
        if use > f.worst_use:
            f.worst_use, f.worst_where = use, f"output {index(case, r)} of case '{case.name}'"
        if error > limit:
            f.add(
                "bound",
                case,
                f"output {index(case, r)} of case '{case.name}' is "
                f"{format_value(got[r])}, the exact sum {float(sums[r]):.9g}: |error| "
                f"{float(error):.4g} > γ_{d.k(table.shape[1])}·Σ|x| + ½ ulp = {float(limit):.4g} "
                f"(Σ|x| {float(magnitudes[r]):.4g}; {d.describe()}; {summary(table[r])})",
            )
            return
    f.outputs += table.shape[0]


def check(
    case: Case, got: Array, d: Declared, f: Findings, a: Audit, largest: bool | None = None,
    product: bool = False,
) -> None:  # fmt: skip
    """A sum's bound, specials and, where the order fixes them, bits; a `product`'s
    (`judge.products`); a maximum's or minimum's (`largest` True or False) exact selection; the
    worst ULP from the exact result into `a`."""
    got = np.ascontiguousarray(got).reshape(-1)
    table = rows(case.x, case.axes)
    want = np.empty_like(got)
    if product:
        want = products.exact(case, got.dtype)
    elif largest is None:
        exact_sum(case.x, case.axes, want)
    else:
        want = selected(table, got.dtype, largest, d.zero_tie)
        if d.zero_tie == "either":  # either zero is the selection
            want = np.where((want == 0) & (got == 0), got, want)
    a.probes += got.size
    a.measured_ulp = max(a.measured_ulp, float(errors(got, want).ulp.max(initial=0.0)))
    if product:
        products.check(case, got, want, d, f)
        return
    if largest is not None:
        differ = np.flatnonzero(special(got, want))
        if differ.size:
            r, which = int(differ[0]), "largest" if largest else "smallest"
            f.add(
                "value",
                case,
                f"output {index(case, r)} of case '{case.name}' is {format_value(got[r])}, "
                f"the {which} element is {format_value(want[r])}; {differ.size} of {got.size} "
                f"outputs differ ({summary(table[r])})",
            )
        f.outputs += 0 if differ.size else got.size
        return
    _bound(case, table, got, want, d, f)
    if d.fixes_bits:
        order_bits(case, table, got, d, f)


# -- conformance, determinism -------------------------------------------------------------------


def conformance(fn: KernelFn, contract: KernelContract, dtype: DType, case: Case) -> list[str]:
    """Problems with the kernel's output per the `return` clause, inputs, and `out` garbage."""
    plan = plan_for(contract, dtype, case.x.shape, case.axes)
    before = case.x.tobytes()
    first = call(fn, plan, (case.x,), 0xA5)
    second = call(fn, plan, (case.x,), 0x5A)
    problems = [f"returned {p}" for p in returned_problems(plan, first, (case.x,))]
    if case.x.tobytes() != before:
        problems.append("an input was written")
    if first.tobytes() != second.tobytes():
        problems.append(
            "the output depends on what `out` held before the call (an element was read or "
            "left unwritten)"
        )
    return problems


def determinism(a: Audit, contract: KernelContract, run_case: Callable[[int], Array]) -> None:
    """RUNS calls into differently filled buffers: byte-identical where declared bitwise."""
    outputs = [run_case(fill) for fill in range(RUNS)]
    record_runs(a, contract, outputs)


# -- invariance ---------------------------------------------------------------------------------


@contextmanager
def on_threads(n: int) -> Iterator[None]:
    """`kernels.threads`' setting and cores both `n` inside the block (the compiled kernels
    split over n threads, whatever this machine's cores; a Python kernel reads the setting)."""
    pretended = threads.pretend_cores(n)
    previous = threads.apply(n)
    try:
        yield
    finally:
        threads.apply(previous)
        threads.pretend_cores(pretended)


def raw(x: Array) -> Array:
    """x's elements as unsigned integers of their width: a float's bits, an index as itself."""
    patterns: Array = np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}")
    return patterns


def differs(name: str, case: T, got: Array, want: Array, what: str) -> str | None:
    """The first output whose bits differ between two results of a case (a reduction's or a
    contraction's), described by its index in `got`."""
    differ = np.flatnonzero(raw(got.reshape(-1)) != raw(want.reshape(-1)))
    if not differ.size:
        return None
    r = int(differ[0])
    at = tuple(int(i) for i in np.unravel_index(r, got.shape)) if got.ndim else ()
    return (
        f"invariance {name}: case '{case.name}': output {at} {what} is "
        f"{format_value(got.reshape(-1)[r])}, against {format_value(want.reshape(-1)[r])}; "
        f"{differ.size} of {got.size} outputs differ"
    )


def audit_threads(call_case: Callable[[T], Array], base: Sequence[T]) -> list[str]:
    """The `threads` claim: each case on THREADS' counts against the first; one failure per
    case, naming the first count that differs and the others."""
    found = []
    for case in base:
        with on_threads(THREADS[0]):
            one = call_case(case)
        differ = []
        for n in THREADS[1:]:
            with on_threads(n):
                got = differs("threads", case, call_case(case), one, f"on {n} threads")
            differ += [(n, got)] if got else []
        if differ:
            counts = ", ".join(str(n) for n, _ in differ)
            found.append(f"{differ[0][1]}; it differs from 1 thread's on {counts} threads")
    return found


def layouts(x: Array, layout: dict[str, str]) -> Iterator[tuple[str, Case]]:
    """The same values of a 2-D x (reduced over axis 1) in every layout the contract accepts,
    each with its case; `reduced axis leading` (dense, axes (0,)) always."""
    yield "reduced axis leading", Case("reduced axis leading", np.ascontiguousarray(x.T), (0,))
    if layout.get("strided") == "allowed":
        yield "transposed", Case("transposed", np.ascontiguousarray(x.T).T, (1,))
    if layout.get("reverse_strides") == "allowed":
        yield "flipped", Case("flipped", np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1], (1,))
    if layout.get("start_offset") == "allowed":
        buffer = np.empty(x.size + 1, x.dtype)
        buffer[1:] = x.reshape(-1)
        yield "offset", Case("offset", buffer[1:].reshape(x.shape), (1,))


def audit_layout(
    call_case: Callable[[Case], Array], x: Array, layout: dict[str, str]
) -> tuple[list[str], list[str]]:
    """The `layout` claim: (failures, the layouts audited)."""
    dense = call_case(Case("dense", np.ascontiguousarray(x), (1,)))
    failures, seen = [], []
    for name, case in layouts(x, layout):
        seen.append(name)
        failures.append(differs("layout", case, call_case(case), dense, f"{name} vs dense"))
    if layout.get("broadcast_stride0") == "allowed":
        seen.append("broadcast")
        row = np.broadcast_to(x[:1], x.shape)
        want = call_case(Case("dense copy", np.ascontiguousarray(row), (1,)))
        case = Case("broadcast", row, (1,))
        failures.append(differs("layout", case, call_case(case), want, "broadcast vs dense"))
    return [f for f in failures if f], seen


def audit_batch(call_case: Callable[[Case], Array], x: Array) -> list[str]:
    """The `batch` claim: each row of x alone, and x's rows inside a batch of 512."""
    case = Case("batch", x, (1,))
    batch = call_case(case).reshape(-1)
    alone = np.concatenate(
        [call_case(Case("alone", x[r : r + 1], (1,))).reshape(-1) for r in range(x.shape[0])]
    )
    failures = [differs("batch", case, alone, batch, "reduced alone vs in the batch")]
    big = np.resize(x, (512, x.shape[1]))
    at = np.linspace(0, 511, x.shape[0]).astype(int)
    big[at] = x
    among = call_case(Case("in 512", big, (1,))).reshape(-1)[at]
    failures.append(differs("batch", case, among, batch, "among 512 rows vs among its own"))
    return [f for f in failures if f]


# -- the audit ----------------------------------------------------------------------------------


def audit_reduction(
    a: Audit,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
    rng: np.random.Generator,
) -> None:
    """The reduction audit of one contract at one dtype, recorded into `a` (see the module)."""
    row = REDUCTION_BY_KIND[contract.op_kind]
    largest = {OpKind.MAX: True, OpKind.MIN: False}.get(row.op_kind)
    product = row.op_kind is OpKind.PROD
    a.reference = REFERENCES[row.op_kind]
    d = declared(contract) if largest is None else Declared(dtype.fkc, None, 128, 1, tie(contract))
    if isinstance(d, str):
        a.failures.append(f"declaration: {d}")
        return

    def call_case(case: Case, fill: int = 0xA5) -> Array:
        return run(fn, contract, dtype, case, fill)

    empty = largest is None  # a maximum or minimum of nothing is refused before a kernel
    inputs = product_cases(dtype.np, d, rng) if product else cases(dtype.np, d, rng, empty)
    every = admitted(a, contract, fn, dtype, inputs, call_case)
    if not every:
        return
    f = Findings()
    for case in every:
        check(case, call_case(case), d, f, a, largest, product)
    a.failures += f.failures()
    audit_claims(a, contract, call_case, every, d.block)
    use = f"{float(f.worst_use):.3g} of the bound at {f.worst_where}" if f.worst_where else "none"
    a.semantics.append(
        f"reduction: {row.name}, exact: {f.outputs} outputs of {len(every)} cases the selection"
        if largest is not None
        else f"reduction: {d.describe()}; {f.outputs} outputs of {len(every)} cases within the "
        f"bound (worst use {use})"
        + ("; every output the declared order's bits" * d.fixes_bits)
        + (f"; {f.unbounded} outputs of rows too long to bound (k·u >= 1)" * bool(f.unbounded))
    )
    audit_cost(a, contract, fn, dtype, settings, copy_bps)


def admitted_cases(a: Audit, inputs: Iterable[T], plan: Callable[[T], object]) -> list[T]:
    """The cases of `inputs` that `plan` admits (it raises ValueError for a rank or shape the
    contract does not accept: not its business), the others noted in `a` as skipped; a
    reduction's `Case`s or a contraction's `Pair`s."""
    every, refused = [], []
    for case in inputs:
        try:
            plan(case)
            every.append(case)
        except ValueError:
            refused.append(case.name)
    if refused:
        a.semantics.append(f"cases the contract does not admit, skipped: {', '.join(refused)}")
    return every


def admitted(
    a: Audit, contract: KernelContract, fn: KernelFn, dtype: DType, inputs: Iterable[Case],
    call_case: Callable[..., Array],
) -> list[Case]:  # fmt: skip
    """The cases of `inputs` the contract admits (the others noted as skipped), with the
    conformance and determinism audits run on them, recorded into `a`; none (a failure
    recorded) when it admits none."""
    every = admitted_cases(a, inputs, lambda c: plan_for(contract, dtype, c.x.shape, c.axes))
    if not every:
        a.failures.append("cases: the contract admits none of the judge's (rank 2 and 3) inputs")
        return every
    shaped = next((c for c in every if len(c.axes) > 1), every[0])  # outer and inner axes
    a.conformance = conformance(fn, contract, dtype, shaped)
    a.failures += [f"conformance: {p}" for p in a.conformance]
    determinism(a, contract, lambda fill: call_case(every[0], fill))
    return every


def audit_claims(
    a: Audit, contract: KernelContract, call_case: Callable[[Case], Array], every: list[Case],
    block: int, probe: str = "cancellation",
) -> None:  # fmt: skip
    """The invariance claims the contract declares, each audited (or noted as not here), on the
    case named `probe` (a sum's cancellation, where the order shows in its bits; an index's
    ties) and one long output of 8 blocks."""
    claims = contract.semantics.invariance if contract.semantics is not None else None
    if not claims:
        return
    cancelling = next((c for c in every if c.name == probe), every[0])
    x = cancelling.x
    if "threads" in claims:
        long = Case("one long output", np.resize(every[0].x, (1, 8 * block + 5)), (1,))
        a.failures += audit_threads(call_case, [every[0], cancelling, long])
    if "layout" in claims:
        failures, seen = audit_layout(call_case, x, dict(contract.inputs[0].layout))
        a.failures += failures
        a.semantics.append(f"invariance layout: audited {', '.join(seen)}")
    if "batch" in claims:
        a.failures += audit_batch(call_case, x)
    if "isa" in claims:
        a.semantics.append(
            "invariance isa: a reduction's instruction-set bodies are not switched here yet: "
            "not audited"
        )


def audit_cost(
    a: Audit, contract: KernelContract, fn: KernelFn, dtype: DType, settings: Settings,
    copy_bps: float,
) -> None:  # fmt: skip
    """The call overhead on one element, and ns per element summing `settings.large` elements
    into one output (on one thread, and on the setting's threads), next to the formula's; noted
    as not measured where the contract does not admit those shapes."""
    cost_or_note(a, lambda: _cost(a, contract, fn, dtype, settings, copy_bps))


def cost_or_note(a: Audit, measure: Callable[[], None]) -> None:
    """Run an audit's cost `measure`; where the contract does not admit its timed shapes
    (ValueError), note the cost as not measured instead (reductions' and contractions')."""
    try:
        measure()
    except ValueError as e:
        a.semantics.append(f"cost: not measured ({e})")


def _cost(
    a: Audit, contract: KernelContract, fn: KernelFn, dtype: DType, settings: Settings,
    copy_bps: float,
) -> None:  # fmt: skip
    """`audit_cost`'s measurements (ValueError where a timed shape is not admitted)."""
    tiny = plan_for(contract, dtype, (1, 1), (1,))
    one = np.ones((1, 1), dtype.np)
    out = result_dtype(contract, dtype.np)
    overhead = timing(fn, tiny, (one,), np.empty(1, out))
    a.overhead_ns, a.overhead_calls = 1e9 * overhead.seconds, overhead.calls
    n = settings.large
    big = plan_for(contract, dtype, (1, n), (1,))
    x = np.random.default_rng(1).uniform(0.5, 2.0, (1, n)).astype(dtype.np)
    measured, every = time_on_threads(fn, big, (x,), np.empty(1, out))
    a.ns_per_element_all = every * big.size / n  # per output there: per element here
    a.large_n, a.large_calls = n, measured.calls
    a.ns_per_element = 1e9 * measured.seconds / n
    predicted = float(big.steps[-1].bytes)
    a.gb_per_s = predicted / measured.seconds / 1e9
    a.formula_bytes_per_element = predicted / n
    a.predicted_ns_per_element = 1e9 * predicted / n / copy_bps
