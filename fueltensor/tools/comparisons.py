"""What `compare_backends` saw: one `Comparison` per operation and other kernel, and the
`ComparisonReport` that holds them, counts what was and was not compared, groups repeated calls
and prints them (text, HTML, a figure, a dict).

Every operation that ran in the block has a row: a compared one with its figures, the others
(host operations, operations no second kernel admits) as "not compared" with the reason. Rows
of the same operation on the same dtypes, shape and kernels are one group in the printed table
(`ComparisonReport.grouped`): its call count, summed elements and worst lane.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from html import escape
from typing import TYPE_CHECKING, Any, Final

from fueltensor.core.errors import plural
from fueltensor.fingerprint import machine
from fueltensor.testing import summarize
from fueltensor.tools.differences import by_class, class_html, class_text
from fueltensor.tools.display import html_table, machine_html
from fueltensor.tools.textwidth import fit_lines, fit_table
from fueltensor.tools.timing import HARNESS

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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


LANES: Final = 1 << 16
"""How many differing lanes a comparison names (`Comparison.lanes`); `count - equal` counts all."""


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
    position: int = 0
    """Which operation of the block this row is of (0 for the first that ran): the rows of one
    call share it."""
    repeats: int = 1
    """How many calls a grouped row stands for (`ComparisonReport.grouped`); 1 for one call."""
    lanes: tuple[tuple[int, ...], ...] = ()
    """The index of every element whose bits differ, in order (the first `LANES` of them)."""

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


HOST_NOTE: Final = "a host operation (NumPy): no contract covers it"
"""Why a host operation of the block was not compared."""

COLUMNS = (
    "op",
    "dtypes",
    "shape",
    "calls",
    "kernels",
    "bit-equal",
    "differences",
    "max ULP",
    "max abs",
    "max rel",
    "NaN patterns",
    "µs per call",
)
"""The comparison table's columns: `calls` is how many calls of the block a row groups;
`bit-equal` is "equal/elements" over them; `differences` counts the
elements that differ by class (`tools.differences`: NaN payload, signed zero, remainder sign,
infinity, subnormal, rounding ...); `µs per call` gives the kernels' median times in the order
of `kernels`, slash-separated."""


def _microseconds(times: Sequence[float]) -> str:
    """Seconds as microseconds, in order, one unbreakable cell: `11.2/32.1` (no decimal from
    100 µs up)."""
    return "/".join(f"{t * 1e6:,.{1 if t < 1e-4 else 0}f}" for t in times)


def comparison_row(c: Comparison) -> tuple[str, ...]:
    """One table row of a comparison (shared by the text table and the HTML table)."""
    head = (
        c.op,
        ", ".join(dict.fromkeys(c.dtypes)),
        "x".join(map(str, c.shape)) or "()",
        f"{c.repeats:,}",
    )
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
    "calls",
    "NaN patterns",
    "µs per call",
    "dtypes",
    "max ULP",
)
"""Comparison columns a narrow terminal may leave out, first to last: the figures derived from
the worst element (relative and absolute error) and the context (shape, calls, NaN positions, which
`differences` counts too) first, then the timing, then the dtypes (most kernel names carry
theirs); whether and how the bits differ (`kernels`, `bit-equal`, `differences`) is never left
out, and the reason an operation was not compared is printed under the table, at any width."""
WHOLE: Final = ("kernels", "bit-equal")
"""Columns whose cells break only between words (a kernel name, `not compared`)."""


def _group_key(c: Comparison) -> tuple[object, ...]:
    """What the calls grouped into one printed row share."""
    return (c.op, c.dtypes, c.shape, c.kernels, c.compared, c.note)


def merged(rows: Sequence[Comparison]) -> Comparison:
    """One row for the calls `rows` (of one group): elements and classes summed, the worst
    lane of the worst call, the first call's timing."""
    worst = max(rows, key=lambda c: (c.mismatches > c.nan_payloads, c.max_ulp, c.mismatches))
    timed = next((c for c in rows if c.times), rows[0])
    classes: Counter[str] = Counter()
    for c in rows:
        classes.update(c.classes)
    return replace(
        worst,
        count=sum(c.count for c in rows),
        equal=sum(c.equal for c in rows),
        max_abs=max(c.max_abs for c in rows),
        max_rel=max(c.max_rel for c in rows),
        nan_patterns_agree=all(c.nan_patterns_agree for c in rows),
        nan_payloads=sum(c.nan_payloads for c in rows),
        classes=dict(classes),
        times=timed.times,
        calls=timed.calls,
        position=rows[0].position,
        repeats=len(rows),
    )


class ComparisonReport:
    """What `compare_backends` saw: one `Comparison` per (operation, other kernel) in the order
    the operations ran, and a not-compared row for every other operation of the block."""

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

    def grouped(self) -> list[Comparison]:
        """The rows with the calls of one operation on the same dtypes, shape and kernels
        merged (`merged`), in the order each group first ran."""
        groups: dict[tuple[object, ...], list[Comparison]] = {}
        for c in sorted(self, key=lambda c: c.position):
            groups.setdefault(_group_key(c), []).append(c)
        return [merged(rows) for rows in groups.values()]

    @property
    def operations(self) -> int:
        """The operations that ran in the block (each has one row or more)."""
        return len({c.position for c in self.comparisons})

    @property
    def compared(self) -> int:
        """The operations of the block compared with at least one other kernel."""
        return len({c.position for c in self.comparisons if c.compared})

    @property
    def mismatches(self) -> int:
        """Mismatched elements over every compared operation."""
        return sum(c.mismatches for c in self.comparisons if c.compared)

    def summary(self) -> str:
        """How many operations ran, were compared and were not (host operations apart), and
        how many compared elements differ."""
        host = len({c.position for c in self.comparisons if c.kernels == ("host",)})
        others = self.operations - self.compared - host
        missed = [
            f"{host:,} host" if host else "",
            f"{others:,} with no second kernel" if others else "",
        ]
        why = f" ({', '.join(m for m in missed if m)})" if host or others else ""
        total = sum(c.count for c in self.comparisons if c.compared)
        return (
            f"{self.operations:,} operation{'s' * (self.operations != 1)} ran: "
            f"{self.compared:,} compared, "
            f"{self.operations - self.compared:,} not compared{why}; "
            f"{self.mismatches:,} of {total:,} compared element{'s' * (total != 1)} differ"
            f"{self.nan_note()}"
        )

    def text(self, per_call: bool = False) -> str:
        """The report as text: the table (a row per group of calls, or per call with
        `per_call`), why the rest was not compared, the summary, the differences by class, how
        the times were taken and the machine."""
        if not self.comparisons:
            return "compare_backends: no operation ran inside the block"
        shown = list(self) if per_call else self.grouped()
        rows = [COLUMNS, *(comparison_row(c) for c in shown)]
        lines = [text_table(rows, NARROW_DROPS, whole=WHOLE), *self.reasons(), self.summary()]
        lines += [class_text(self.comparisons), self.timing_note(), f"measured on: {self.machine}"]
        return "\n".join(fit_lines(line) if "\n" not in line else line for line in lines if line)

    def __str__(self) -> str:
        return self.text()

    def reasons(self) -> list[str]:
        """One line per reason some operations were not compared, naming each of them (with
        its dtypes) once, in the order they ran."""
        by_reason: dict[str, dict[str, None]] = {}
        for c in sorted(self.comparisons, key=lambda c: c.position):
            if c.note:  # a compared row's note: its kernel declares another rule (a cast's)
                why = c.note if c.compared else f"not compared, {c.note}"
                by_reason.setdefault(why, {})[f"{c.op}({', '.join(c.dtypes)})"] = None
        return [f"{why}: {', '.join(ops)}" for why, ops in by_reason.items()]

    def timing_note(self) -> str:
        """How the times were taken: the harness and the calls timed per kernel."""
        calls = [n for c in self.comparisons for n in c.calls.values()]
        if not calls:
            return ""
        return (
            f"µs per call: the median of interleaved batches after {HARNESS.warmup} warm-up "
            f"calls, {min(calls):,} to {max(calls):,} calls timed per kernel, the first call "
            "of each row (tools.timing)"
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
        """JSON-ready form: the machine, the counts, and each call's comparison figures."""
        return {
            "machine": self.machine.to_dict(),
            "operations": self.operations,
            "compared": self.compared,
            "mismatches": self.mismatches,
            "by_class": by_class(self.comparisons),
            "comparisons": [
                {k: v for k, v in asdict(c).items() if k != "worst"} | {"worst": str(c.worst or "")}
                for c in self.comparisons
            ],
        }

    def __repr__(self) -> str:
        return (
            f"<ComparisonReport: {plural(self.operations, 'operation')}, "
            f"{self.compared} compared, {plural(self.mismatches, 'mismatch', 'mismatches')}>"
        )

    def _repr_html_(self) -> str:
        """The differing elements by class and provider, then the comparison table (a row per
        group of calls, mismatching ones shaded), the worst elements, why an operation was not
        compared, the summary and how the times were taken."""
        rows = self.grouped()
        table = html_table(
            COLUMNS,
            [comparison_row(c) for c in rows],
            caption=f"compare_backends: {plural(self.mismatches, 'mismatched element')}"
            f"{self.nan_note()}",
            marks=[c.compared and c.mismatches > c.nan_payloads for c in rows],
        )
        worst = [(c.op, " vs ".join(c.kernels), str(c.worst)) for c in rows if c.worst is not None]
        extra = html_table(("op", "kernels", "worst element"), worst) if worst else ""
        lines = [*self.reasons(), self.summary(), self.timing_note()]
        notes = "".join(f"<p>{escape(line)}</p>" for line in lines if line)
        return f"<div>{class_html(rows)}{table}{extra}{notes}{machine_html(self.machine)}</div>"

    def plot(self) -> Figure:
        """A titled matplotlib Figure: the differing elements as a class x provider matrix
        (the `plot` extra; `tools.plots`)."""
        from fueltensor.tools.plots import comparison_figure

        return comparison_figure(self)

    def assert_equal(self, max_ulp: float = 0, nan_payloads: bool = True) -> None:
        """Raise AssertionError naming the worst element of every comparison beyond `max_ulp`
        ULPs (max_ulp=0: bit-equal, NaN payloads included unless `nan_payloads=False`), and
        when no operation of the block was compared at all (nothing was checked)."""
        if not self.compared:
            raise AssertionError(
                f"nothing was compared: {plural(self.operations, 'operation')} ran in the block "
                "and none had a second kernel to compare with"
                + "".join(f"\n  {line}" for line in self.reasons())
            )
        bad = [c for c in self.grouped() if not c.within(max_ulp, nan_payloads)]
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
