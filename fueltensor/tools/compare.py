"""`compare_backends`: run every operation on every admissible kernel and diff the results.

Inside the block the code gets the default plan's result as usual; after each contract
operation every other admissible kernel of the chosen providers (or the kernels named) runs on
the same operands, and each output is compared with the default one bit for bit (ULP distance
on the ordered integer bit patterns, so -0 and +0 are 0 apart and NaNs are compared by
pattern, not by value). All of them are then timed together by `tools.timing`'s harness.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from html import escape
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from fueltensor.core.errors import plural
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import execute, foreign
from fueltensor.engine.backends import current_policy, observe
from fueltensor.engine.named import with_named
from fueltensor.engine.planner import Plan, Planning
from fueltensor.fingerprint import machine
from fueltensor.registry import require
from fueltensor.testing import NAN_PAYLOAD, bits, errors, format_value, lane_message, summarize
from fueltensor.tools import checked
from fueltensor.tools.differences import by_class, class_html, class_text, difference_counts
from fueltensor.tools.display import html_table, machine_html
from fueltensor.tools.selection import Selection, alternatives, select
from fueltensor.tools.textwidth import fit_lines, fit_table
from fueltensor.tools.timing import HARNESS, Timing, race

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Observer = Callable[[Planning, Plan, tuple[FuelTensor, ...], FuelTensor], None]


@dataclass(frozen=True)
class Worst:
    """The element where two kernels differ most: its index, the operands and both outputs
    (each formatted as its value and bits), and `testing.lane_message`'s description of it."""

    index: tuple[int, ...]
    inputs: tuple[str, ...]
    baseline: str
    other: str
    ulp: float
    message: str = ""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Comparison:
    """One operation run by the default kernel and one other kernel, compared element by element.

    `compared` is False when no other allowed kernel admits the operation (`note` says why);
    then the figures cover the default kernel alone.
    """

    op: str
    op_kind: str | None
    dtypes: tuple[str, ...]
    shape: tuple[int, ...]
    kernels: tuple[str, ...]
    compared: bool
    count: int = 0
    equal: int = 0
    max_ulp: float = 0.0
    max_abs: float = 0.0
    max_rel: float = 0.0
    nan_patterns_agree: bool = True
    times: dict[str, float] = field(default_factory=dict)
    """Median seconds per call of each kernel's plan (`tools.timing`), by kernel name."""
    worst: Worst | None = None
    note: str = ""
    nan_payloads: int = 0
    """Mismatches where both outputs are NaN: only the payload or sign differs."""
    calls: dict[str, int] = field(default_factory=dict)
    """Calls timed per kernel (warm-up excluded), by kernel name."""
    classes: dict[str, int] = field(default_factory=dict)
    """The differing elements by class (`tools.differences.CLASSES`: NaN payload, signed
    zero, remainder sign, rounding ...)."""
    provider: str = ""
    """The provider of the kernel compared with the default one."""

    @property
    def mismatches(self) -> int:
        """Elements whose bit patterns differ (NaNs with different payloads included)."""
        return self.count - self.equal

    def within(self, max_ulp: float, nan_payloads: bool = True) -> bool:
        """True if every element is bit-equal, or (for max_ulp > 0) within `max_ulp` ULPs with
        the same NaN positions. A NaN meets a NaN of another payload or sign only with
        `nan_payloads=False` (as `testing.assert_bits_equal` rules)."""
        ignored = 0 if nan_payloads else self.nan_payloads
        if not self.compared or self.mismatches == ignored:
            return True
        payloads_ok = not nan_payloads or self.nan_payloads == 0
        return max_ulp > 0 and self.nan_patterns_agree and payloads_ok and self.max_ulp <= max_ulp


COLUMNS = (
    "op",
    "dtypes",
    "shape",
    "kernels",
    "bit-equal",
    "differences",
    "max ULP",
    "max abs",
    "max rel",
    "NaN patterns",
    "µs per call",
)
"""The comparison table's columns: `bit-equal` is "equal/elements"; `differences` counts the
elements that differ by class (`tools.differences`: NaN payload, signed zero, remainder sign,
infinity, subnormal, rounding ...); `µs per call` gives the kernels' median times in the order
of `kernels`, slash-separated."""


def _microseconds(times: Sequence[float]) -> str:
    """Seconds as microseconds, in order, one unbreakable cell: `11.2/32.1` (no decimal from
    100 µs up)."""
    return "/".join(f"{t * 1e6:,.{1 if t < 1e-4 else 0}f}" for t in times)


def comparison_row(c: Comparison) -> tuple[str, ...]:
    """One table row of a comparison (shared by the text table and the HTML table)."""
    head = (c.op, ", ".join(dict.fromkeys(c.dtypes)), "x".join(map(str, c.shape)) or "()")
    if not c.compared:
        return (*head, c.kernels[0], "not compared", *[""] * 6)
    return (
        *head,
        " vs ".join(c.kernels),
        f"{c.equal}/{c.count}",
        summarize(c.classes) or "none",
        f"{c.max_ulp:g}",
        f"{c.max_abs:.3g}",
        f"{c.max_rel:.3g}",
        "agree" if c.nan_patterns_agree else "DIFFER",
        _microseconds([c.times[k] for k in c.kernels]) if c.times else "",
    )


def text_table(
    rows: Sequence[Sequence[str]], optional: Sequence[str] = (), whole: Sequence[str] = ()
) -> str:
    """Left-aligned columns separated by two spaces, the first row being the header, fitted to
    the terminal's width, leaving out `optional` columns if need be and never breaking the
    cells of `whole` ones (`tools.textwidth`)."""
    return fit_table(rows, optional=optional, whole=whole)


NARROW_DROPS: Final = (
    "max rel",
    "max abs",
    "shape",
    "NaN patterns",
    "µs per call",
    "dtypes",
    "max ULP",
)
"""Comparison columns a narrow terminal may leave out, first to last: the figures derived from
the worst element (relative and absolute error) and the context (shape, NaN positions, which
`differences` counts too) first, then the timing, then the dtypes (most kernel names carry
theirs); whether and how the bits differ (`kernels`, `bit-equal`, `differences`) is never left
out, and the reason an operation was not compared is printed under the table, at any width."""
WHOLE: Final = ("kernels", "bit-equal")
"""Columns whose cells break only between words (a kernel name, `not compared`)."""


class ComparisonReport:
    """What `compare_backends` saw: one `Comparison` per (operation, other kernel), in order."""

    def __init__(self, providers: frozenset[str] | None) -> None:
        self.providers = providers
        self.machine = machine()
        """Where the comparison ran: kernels' bits can depend on the CPU, NumPy and the libm."""
        self.comparisons: list[Comparison] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the lock (locks do not pickle), e.g. to come back from a worker."""
        return {"providers": self.providers, "comparisons": list(self.comparisons)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.providers = state["providers"]
        self.comparisons = state["comparisons"]
        self._lock = threading.Lock()

    def add(self, comparison: Comparison) -> None:
        """Append one comparison (observers on several threads may report at once)."""
        with self._lock:
            self.comparisons.append(comparison)

    def __iter__(self) -> Iterator[Comparison]:
        return iter(list(self.comparisons))

    def __len__(self) -> int:
        return len(self.comparisons)

    @property
    def mismatches(self) -> int:
        """Mismatched elements over every compared operation."""
        return sum(c.mismatches for c in self.comparisons if c.compared)

    def __str__(self) -> str:
        if not self.comparisons:
            return "compare_backends: no contract operation ran inside the block"
        rows = [COLUMNS, *(comparison_row(c) for c in self.comparisons)]
        compared = [c for c in self.comparisons if c.compared]
        total = sum(c.count for c in compared)
        summary = (
            f"{len(compared)} of {plural(len(self.comparisons), 'operation')} compared; "
            f"{self.mismatches} of {plural(total, 'element')} differ{self.nan_note()}"
        )
        lines = [text_table(rows, NARROW_DROPS, whole=WHOLE), *self.reasons(), summary]
        lines += [class_text(self.comparisons), self.timing_note(), f"measured on: {self.machine}"]
        return "\n".join(fit_lines(line) if "\n" not in line else line for line in lines if line)

    def reasons(self) -> list[str]:
        """One line per operation (and dtypes) that was not compared, saying why."""
        seen = {
            f"not compared: {c.op}({', '.join(c.dtypes)}): {c.note}": None
            for c in self.comparisons
            if not c.compared
        }
        return list(seen)

    def timing_note(self) -> str:
        """How the times were taken: the harness and the calls timed per kernel."""
        calls = [n for c in self.comparisons for n in c.calls.values()]
        if not calls:
            return ""
        return (
            f"µs per call: the median of interleaved batches after {HARNESS.warmup} warm-up "
            f"calls, {min(calls):,} to {max(calls):,} calls timed per kernel (tools.timing)"
        )

    def nan_note(self) -> str:
        """' (N of them only in a NaN's payload or sign)' when there are such mismatches."""
        n = sum(c.nan_payloads for c in self.comparisons if c.compared)
        if not n:
            return ""
        return (
            " (all only in a NaN's payload or sign)"
            if n == self.mismatches
            else (f" ({n} of them only in a NaN's payload or sign)")
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the machine, and each comparison's figures."""
        return {
            "machine": self.machine.to_dict(),
            "mismatches": self.mismatches,
            "by_class": by_class(self.comparisons),
            "comparisons": [
                {k: v for k, v in asdict(c).items() if k != "worst"} | {"worst": str(c.worst or "")}
                for c in self.comparisons
            ],
        }

    def __repr__(self) -> str:
        return (
            f"<ComparisonReport: {plural(len(self), 'operation')}, "
            f"{plural(self.mismatches, 'mismatch', 'mismatches')}>"
        )

    def _repr_html_(self) -> str:
        """The differing elements by class and provider, then the comparison table (mismatching
        operations shaded), the worst elements, why an operation was not compared, and how the
        times were taken."""
        rows = list(self)
        table = html_table(
            COLUMNS,
            [comparison_row(c) for c in rows],
            caption=f"compare_backends: {plural(self.mismatches, 'mismatched element')}"
            f"{self.nan_note()}",
            marks=[c.compared and c.mismatches > c.nan_payloads for c in rows],
        )
        worst = [(c.op, " vs ".join(c.kernels), str(c.worst)) for c in rows if c.worst is not None]
        extra = html_table(("op", "kernels", "worst element"), worst) if worst else ""
        lines = [*self.reasons(), self.timing_note()]
        notes = "".join(f"<p>{escape(line)}</p>" for line in lines if line)
        return f"<div>{class_html(rows)}{table}{extra}{notes}{machine_html(self.machine)}</div>"

    def plot(self) -> Figure:
        """A titled matplotlib Figure: the differing elements as a class x provider matrix
        (the `plot` extra; `tools.plots`)."""
        from fueltensor.tools.plots import comparison_figure

        return comparison_figure(self)

    def assert_equal(self, max_ulp: float = 0, nan_payloads: bool = True) -> None:
        """Raise AssertionError naming the worst element of every comparison beyond `max_ulp`
        ULPs (max_ulp=0: bit-equal, NaN payloads included unless `nan_payloads=False`)."""
        bad = [c for c in self.comparisons if not c.within(max_ulp, nan_payloads)]
        if not bad:
            return
        lines = [f"{c.op}({', '.join(c.dtypes)}) {' vs '.join(c.kernels)}: {_how(c)}" for c in bad]
        if all(c.mismatches == c.nan_payloads for c in bad):
            head = (
                "kernels agree on every value, but some NaNs differ in payload or sign "
                "(nan_payloads=False lets a NaN meet any NaN)"
            )
        else:
            head = f"kernels disagree beyond {max_ulp:g} ULP"
        raise AssertionError(f"{head}:\n  " + "\n  ".join(lines))


def _how(c: Comparison) -> str:
    """How a comparison's kernels differ: values, NaN positions and NaN payloads apart."""
    values, nans = c.mismatches - c.nan_payloads, c.nan_payloads
    parts = []
    if values:
        nan = "" if c.nan_patterns_agree else ", NaN positions differ"
        parts.append(
            f"{values} of {plural(c.count, 'element')} differ{'s' * (values == 1)} in value, "
            f"max {c.max_ulp:g} ULP{nan}; worst {c.worst}"
        )
    if nans:
        parts.append(
            f"{nans} of {plural(c.count, 'element')} "
            f"{'is a NaN that differs' if nans == 1 else 'are NaNs that differ'} only in "
            "payload or sign" + ("" if values else f"; first {c.worst}")
        )
    return "; ".join(parts)


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
    ulp = measured.ulp
    worst = None
    if not equal.all():
        # Rank by ULP, then let a payload-only NaN difference count once nothing else differs.
        score = np.where(equal, -1.0, ulp)
        flat = int(np.argmax(score))
        index = tuple(int(i) for i in np.unravel_index(flat, base.shape))
        operands = [np.broadcast_to(t._array, base.shape)[index] for t in tensors]
        specs = baseline.kernel.inputs
        named = dict(zip((s.name for s in specs), operands, strict=True))
        worst = Worst(
            index,
            tuple(map(format_value, operands)),
            format_value(base[index]),
            format_value(out[index]),
            float(ulp[flat]),
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
        float(ulp.max(initial=0.0)),
        float(measured.absolute.max(initial=0.0)),
        float(measured.relative.max(initial=0.0)),
        not measured.nan_mismatch.any(),
        {k: timings[k].seconds for k in names},
        worst,
        nan_payloads=classes.get(NAN_PAYLOAD, 0),  # both NaN, another payload or sign
        calls={k: timings[k].calls for k in names},
        classes=classes,
        provider=other.provider,
    )


def _not_compared(plan: Plan, selection: Selection, dtypes: tuple[str, ...]) -> Comparison:
    """The row of an operation no other selected kernel admits, saying why."""
    if plan.kernel is None:
        label, note = "host", "no contract admits it"
    else:
        label = plan.kernel.name
        scope = "allowed" if selection.kernels is None else "selected"
        note = f"no other {scope} kernel admits it (only {label}, of {plan.provider})"
    return Comparison(
        plan.op, plan.op_kind, dtypes, plan.out_shape, (label,), False, count=plan.size, note=note
    )


def _observer(report: ComparisonReport, selection: Selection) -> Observer:
    def seen(
        planning: Planning, plan: Plan, tensors: tuple[FuelTensor, ...], result: FuelTensor
    ) -> None:
        dtypes = tuple(t.dtype.name for t in tensors)
        reg = current_policy().registry
        named = with_named(planning, plan, reg, selection.named(reg))
        others = alternatives(named, plan, selection) if plan.kernel else []
        if not others:
            report.add(_not_compared(plan, selection, dtypes))
            return
        outputs = [execute.run(other, tensors)._array for other in others]  # foreign: checked
        plans = [p for p in (plan, *others) if p.kernel is not None]
        ours = {p.kernel.name: p for p in plans if p.fn in foreign.bundled()}  # type: ignore[union-attr]
        timings = (
            race({k: partial(execute.run, p, tensors) for k, p in ours.items()}) if ours else {}
        )
        for p in plans:  # a kernel fueltensor did not ship is timed checked, the same way
            if p.kernel is not None and p.kernel.name not in ours:
                timings[p.kernel.name] = checked.timing(p, tensors)
        for other, out in zip(others, outputs, strict=True):
            report.add(diff(plan.op, tensors, plan, result._array, other, out, timings))

    return seen


@contextmanager
def compare_backends(
    *names: str, kernels: Iterable[str] | None = None
) -> Iterator[ComparisonReport]:
    """Run every contract operation in the block on every other admissible kernel of the
    providers `names` (names or aliases) and on the kernels named in `kernels` (contract
    names); with neither, on every admissible kernel. Record how each result differs from the
    default one, bit for bit, and how long each kernel's plan takes per call (all timed alike:
    `tools.timing`).

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
        with observe(_observer(report, selection)), foreign.checking(checked.output):
            yield report
    finally:
        checked.finish()  # nothing a compared kernel started outlives the block
