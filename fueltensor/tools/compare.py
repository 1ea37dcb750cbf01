"""`compare_backends`: run every operation on every admissible kernel and diff the results.

Inside the block the code gets the default plan's result as usual; after each contract
operation every other admissible kernel of the chosen providers (or the kernels named) runs on
the same operands, and each output is compared with the default one bit for bit (ULP distance
on the ordered integer bit patterns, so -0 and +0 are 0 apart and NaNs are compared by
pattern, not by value). The first call of each operation on the same dtypes, shape and
kernels is then timed, all kernels together, by `tools.timing`'s harness (`timing=False`: none).
Every other operation of the block (host operations, operations no second kernel admits) is
reported as not compared, with the reason (`tools.comparisons`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

import numpy as np

from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import execute, foreign
from fueltensor.engine.backends import current_policy, observe, trace
from fueltensor.engine.named import with_named
from fueltensor.engine.planner import Plan, Planning
from fueltensor.kernels.exact_sums import rows
from fueltensor.ops import CONTRACTION_BY_KIND, REDUCTION_BY_KIND
from fueltensor.registry import require
from fueltensor.testing import NAN_PAYLOAD, bits, errors, format_value, lane_message
from fueltensor.tools import checked
from fueltensor.tools.comparisons import (
    HOST_NOTE,
    LANES,
    Comparison,
    ComparisonReport,
    Worst,
    text_table,
)
from fueltensor.tools.differences import difference_counts
from fueltensor.tools.judge.reduction_checks import summary
from fueltensor.tools.selection import Selection, alternatives, other_rules, rule_note, select
from fueltensor.tools.timing import Timing, race

__all__ = ["Comparison", "ComparisonReport", "Worst", "compare_backends", "diff", "text_table"]

Observer = Callable[[Planning, Plan, tuple[FuelTensor, ...], FuelTensor], None]


def diff(
    op: str,
    tensors: tuple[FuelTensor, ...],
    baseline: Plan,
    base: np.ndarray,
    other: Plan,
    out: np.ndarray,
    timings: dict[str, Timing],
) -> Comparison:
    """Compare two kernels' outputs of one operation element by element."""
    assert baseline.kernel is not None and other.kernel is not None
    names = (baseline.kernel.name, other.kernel.name)
    a, b = base.reshape(-1), out.reshape(-1)
    equal = bits(a) == bits(b)
    classes = difference_counts(baseline.op_kind, b, a)
    measured = errors(b, a)
    worst = None
    if not equal.all():
        # Rank by ULP, then let a payload-only NaN difference count once nothing else differs.
        score = np.where(equal, -1.0, measured.ulp)
        flat = int(np.argmax(score))
        index = tuple(int(i) for i in np.unravel_index(flat, base.shape))
        operands = _operands_at(baseline, tensors, index, base.shape)
        specs = baseline.kernel.inputs
        named = dict(zip((s.name for s in specs), operands, strict=True))
        worst = Worst(
            index,
            tuple(map(format_value, operands)),
            format_value(base[index]),
            format_value(out[index]),
            float(measured.ulp[flat]),
            lane_message(
                index,
                out[index],
                base[index],
                named if len(specs) == len(operands) else operands,
                (names[1], names[0]),
            ),
        )
    return Comparison(
        op,
        baseline.op_kind,
        tuple(t.dtype.name for t in tensors),
        baseline.out_shape,
        names,
        True,
        int(a.size),
        int(equal.sum()),
        float(measured.ulp.max(initial=0.0)),
        float(measured.absolute.max(initial=0.0)),
        float(measured.relative.max(initial=0.0)),
        not measured.nan_mismatch.any(),
        {k: timings[k].seconds for k in names if k in timings},
        worst,
        lanes=_lanes(~equal, base.shape),
        nan_payloads=classes.get(NAN_PAYLOAD, 0),  # both NaN, another payload or sign
        calls={k: timings[k].calls for k in names if k in timings},
        classes=classes,
        provider=other.provider,
    )


def label(plan: Plan) -> str:
    """The operation as a comparison's row names it: a reduction with its axes (`sum over axes
    (1,)`, every axis of a rank-2 input `(0, 1)`), the others by name."""
    if plan.op_kind in REDUCTION_BY_KIND and plan.params:
        return f"{plan.op} over axes {plan.params[0]}"
    return plan.op


def _operands_at(
    plan: Plan, tensors: tuple[FuelTensor, ...], index: tuple[int, ...], shape: tuple[int, ...]
) -> list[object]:
    """The operands of output `index`: each tensor's element there (broadcast), for a
    reduction its reduced row of x, for a contraction a's row and b's column of it (a (..., M,
    K) and b (..., K, N), their stacks broadcast), each summarised (length, extremes, first
    elements)."""
    if plan.op_kind in REDUCTION_BY_KIND and plan.params:
        table = rows(tensors[0]._array, plan.params[0])  # type: ignore[arg-type]
        return [summary(table[int(np.ravel_multi_index(index, shape)) if shape else 0])]
    if plan.op_kind in CONTRACTION_BY_KIND:
        *stack, i, j = index
        a, b = (np.asarray(t._array)[tuple(stack)] for t in tensors)  # (M, K) and (K, N)
        return [summary(a[i]), summary(b[:, j])]
    return [np.broadcast_to(t._array, shape)[index] for t in tensors]


def _lanes(differ: np.ndarray, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The index of each of the first `LANES` differing elements (`differ`, flat), in order."""
    flat = np.flatnonzero(differ)[:LANES]
    if not shape:  # a 0-d result (a full reduction): its one element's index is ()
        return ((),) * flat.size
    return tuple(map(tuple, np.stack(np.unravel_index(flat, shape), axis=-1).tolist()))


def _not_compared(plan: Plan, selection: Selection, dtypes: tuple[str, ...]) -> Comparison:
    """The row of an operation no other selected kernel admits, saying why."""
    if plan.kernel is None:
        kernel, note = "host", "no contract admits it"
    else:
        kernel = plan.kernel.name
        scope = "allowed" if selection.kernels is None else "selected"
        note = f"no other {scope} kernel admits it (only {kernel}, of {plan.provider})"
    return Comparison(
        label(plan),
        plan.op_kind,
        dtypes,
        plan.out_shape,
        (kernel,),
        False,
        count=plan.size,
        note=note,
    )


def _timings(plans: list[Plan], tensors: tuple[FuelTensor, ...]) -> dict[str, Timing]:
    """Each plan's kernel timed by `tools.timing`: fueltensor's own raced together, a kernel it
    did not ship timed checked, the same way."""
    ours = {p.kernel.name: p for p in plans if p.fn in foreign.bundled()}  # type: ignore[union-attr]
    timings = race({k: partial(execute.run, p, tensors) for k, p in ours.items()}) if ours else {}
    for p in plans:
        if p.kernel is not None and p.kernel.name not in ours:
            timings[p.kernel.name] = checked.timing(p, tensors)
    return timings


def _observer(
    report: ComparisonReport, selection: Selection, ran: list[Plan], timing: bool
) -> Observer:
    """The observer of one block: compares each contract operation (`ran` is the block's trace,
    which already holds the operation) and times the first call of each row."""
    timed: set[tuple[object, ...]] = set()

    def seen(
        planning: Planning, plan: Plan, tensors: tuple[FuelTensor, ...], result: FuelTensor
    ) -> None:
        dtypes = tuple(t.dtype.name for t in tensors)
        position = len(ran) - 1
        reg = current_policy().registry
        named = with_named(planning, plan, reg, selection.named(reg))
        others = alternatives(named, plan, selection) if plan.kernel else []
        others += other_rules(named, plan, selection, reg) if plan.kernel else []
        if not others:
            report.add(replace(_not_compared(plan, selection, dtypes), position=position))
            return
        outputs = [execute.run(other, tensors)._array for other in others]  # foreign: checked
        plans = [p for p in (plan, *others) if p.kernel is not None]
        key = (plan.op, dtypes, plan.out_shape, tuple(p.kernel.name for p in plans))  # type: ignore[union-attr]
        timings = _timings(plans, tensors) if timing and key not in timed else {}
        timed.add(key)
        for other, out in zip(others, outputs, strict=True):
            row = diff(label(plan), tensors, plan, result._array, other, out, timings)
            report.add(replace(row, position=position, note=rule_note(named, other)))

    return seen


def _host_rows(report: ComparisonReport, ran: list[Plan]) -> None:
    """A not-compared row for every operation of the block no observer saw (host operations)."""
    seen = {c.position for c in report}
    for position, plan in enumerate(ran):
        if position not in seen:
            dtypes = tuple(o.dtype.name for o in plan.operands)
            shape = plan.out_shape
            host = Comparison(plan.op, plan.op_kind, dtypes, shape, ("host",), False)
            report.add(replace(host, count=plan.size, note=HOST_NOTE, position=position))


@contextmanager
def compare_backends(
    *names: str, kernels: Iterable[str] | None = None, timing: bool = True
) -> Iterator[ComparisonReport]:
    """Run every contract operation in the block on every other admissible kernel of the
    providers `names` (names or aliases) and on the kernels named in `kernels` (contract
    names); with neither, on every admissible kernel. Record how each result differs from the
    default one, bit for bit, and how long each kernel's plan takes per call (all timed alike:
    `tools.timing`, on the first call of each operation, dtypes and shape; `timing=False`:
    never). Every other operation of the block is reported as not compared, saying why.

    The block's code gets the default plan's result. Inside `use_backend`, only the providers
    that policy allows are candidates. A kernel fueltensor did not ship, the default one
    included, runs checked (`tools.checked`): a fault is raised as KernelFault from the
    operation, and the operands are only read.
    """
    reg = current_policy().registry
    selection = select(reg, names, kernels)
    require(selection.named(reg) or ())
    report = ComparisonReport(selection.providers)
    try:
        with (
            trace() as ran,
            observe(_observer(report, selection, ran, timing)),
            foreign.checking(checked.output),
        ):
            yield report
    finally:
        checked.finish()  # nothing a compared kernel started outlives the block
    _host_rows(report, ran)
