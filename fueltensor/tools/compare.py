"""`compare_backends`: run every operation on every admissible provider and diff the results.

Inside the block the code gets the default plan's result as usual; after each contract
operation the best viable plan of every other allowed provider runs on the same operands, and
the two outputs are compared bit for bit (ULP distance on the ordered integer bit patterns, so
-0 and +0 are 0 apart and NaNs are compared by pattern, not by value).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from fueltensor.core.errors import plural
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import execute, foreign
from fueltensor.engine.backends import _resolve, current_policy, observe
from fueltensor.engine.planner import Plan, Planning
from fueltensor.fingerprint import machine
from fueltensor.tools import checked
from fueltensor.tools.display import html_table, machine_html
from fueltensor.tools.textwidth import fit_lines, fit_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Observer = Callable[[Planning, Plan, tuple[FuelTensor, ...], FuelTensor], None]
_UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def bits(array: np.ndarray) -> np.ndarray:
    """The raw bit patterns of a float array as unsigned integers of the same width."""
    return np.ascontiguousarray(array).view(_UNSIGNED[array.dtype.itemsize])


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|ord(a) - ord(b)| as uint64, where ord maps bit patterns to integers in value order
    (so -0 and +0 are 0 apart, and adjacent floats are 1 apart across zero)."""
    width = a.dtype.itemsize
    sign = np.uint64(1) << np.uint64(8 * width - 1)

    def ordered(x: np.ndarray) -> np.ndarray:
        u = bits(x).astype(np.uint64)
        negative = (u & sign) != 0
        magnitude = u & (sign - np.uint64(1))
        wrapped: np.ndarray = np.where(negative, np.uint64(0) - magnitude, magnitude)
        return wrapped  # negative patterns wrap to -magnitude

    oa, ob = ordered(a), ordered(b)
    # The true difference fits in 64 bits; compare as signed to pick the non-wrapping order.
    sa, sb = oa.view(np.int64), ob.view(np.int64)
    distance: np.ndarray = np.where(sa >= sb, oa - ob, ob - oa)
    return distance


@dataclass(frozen=True)
class Errors:
    """Per-lane differences of `got` from `want` (float64 arrays).

    The NaN-lane rule: a lane NaN on both sides agrees (0 ULP, no error); a lane NaN on one
    side only is `nan_mismatch` and infinitely many ULPs apart; neither counts towards the
    absolute or relative error, which measure the lanes that hold numbers.
    """

    ulp: np.ndarray
    absolute: np.ndarray
    relative: np.ndarray
    nan_mismatch: np.ndarray


def errors(got: np.ndarray, want: np.ndarray) -> Errors:
    """ULP distance, absolute and relative error of `got` from `want` by the NaN-lane rule."""
    with np.errstate(all="ignore"):
        wg, ww = got.astype(np.float64), want.astype(np.float64)
        nan_got, nan_want = np.isnan(wg), np.isnan(ww)
        numbers = ~(nan_got | nan_want)
        ulp = ulp_distance(got, want).astype(np.float64)
        ulp[~numbers] = 0.0
        ulp[nan_got != nan_want] = np.inf
        same = (wg == ww) | ~numbers
        absolute = np.where(same, 0.0, np.abs(wg - ww))
        relative = np.where(same, 0.0, np.nan_to_num(absolute / np.abs(ww), nan=np.inf))
    return Errors(ulp, absolute, relative, nan_got != nan_want)


def format_value(value: Any) -> str:
    """A scalar as its shortest repr plus its bit pattern, e.g. `1.0 (0x3f800000)`."""
    array = np.asarray(value)
    if array.dtype.kind in "biuc" or array.dtype.itemsize not in _UNSIGNED:
        return str(array.item())
    pattern = int(bits(array.reshape(1))[0])
    return f"{float(array):.9g} (0x{pattern:0{2 * array.dtype.itemsize}x})"


@dataclass(frozen=True)
class Worst:
    """The element where two kernels differ most: its index, the operands and both outputs."""

    index: tuple[int, ...]
    inputs: tuple[str, ...]
    baseline: str
    other: str
    ulp: float

    def __str__(self) -> str:
        args = ", ".join(self.inputs)
        return f"at {self.index}: inputs ({args}) -> {self.baseline} vs {self.other}"


@dataclass(frozen=True)
class Comparison:
    """One operation run by the default kernel and one other kernel, compared element by element.

    `compared` is False when no other allowed provider admits the operation (`note` says why);
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
    worst: Worst | None = None
    note: str = ""
    nan_payloads: int = 0
    """Mismatches where both outputs are NaN: only the payload or sign differs."""

    @property
    def mismatches(self) -> int:
        """Elements whose bit patterns differ (NaNs with different payloads included)."""
        return self.count - self.equal

    def within(self, max_ulp: float, nan_payloads: bool = True) -> bool:
        """True if every element is bit-equal, or (for max_ulp > 0) within `max_ulp` ULPs with
        the same NaN positions. `nan_payloads=False` lets a NaN meet any NaN (payload and sign
        are then not compared)."""
        ignored = 0 if nan_payloads else self.nan_payloads
        if not self.compared or self.mismatches == ignored:
            return True
        return max_ulp > 0 and self.nan_patterns_agree and self.max_ulp <= max_ulp


COLUMNS = (
    "op",
    "dtypes",
    "shape",
    "kernels",
    "elements",
    "bit-equal",
    "value mismatches",
    "NaN payload/sign",
    "max ULP",
    "max abs",
    "max rel",
    "NaN patterns",
    "time per kernel",
)


def _seconds(t: float) -> str:
    return f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms"


def comparison_row(c: Comparison) -> tuple[str, ...]:
    """One table row of a comparison (shared by the text table and the HTML table)."""
    times = ", ".join(f"{k} {_seconds(v)}" for k, v in c.times.items())
    head = (c.op, ", ".join(c.dtypes), "x".join(map(str, c.shape)) or "()")
    if not c.compared:
        return (*head, c.kernels[0], str(c.count), "not compared", *[""] * 6, c.note)
    return (
        *head,
        " vs ".join(c.kernels),
        str(c.count),
        str(c.equal),
        str(c.mismatches - c.nan_payloads),
        str(c.nan_payloads),
        f"{c.max_ulp:g}",
        f"{c.max_abs:.3g}",
        f"{c.max_rel:.3g}",
        "agree" if c.nan_patterns_agree else "DIFFER",
        times,
    )


def text_table(
    rows: Sequence[Sequence[str]], optional: Sequence[str] = (), whole: Sequence[str] = ()
) -> str:
    """Left-aligned columns separated by two spaces, the first row being the header, fitted to
    the terminal's width, leaving out `optional` columns if need be and never breaking the
    cells of `whole` ones (`tools.textwidth`)."""
    return fit_table(rows, optional=optional, whole=whole)


NARROW_DROPS: Final = (
    "time per kernel",
    "shape",
    "elements",
    "bit-equal",
    "NaN patterns",
    "max rel",
    "max abs",
)
"""Comparison columns a narrow terminal may leave out, first to last: prose before numbers."""


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
        table = text_table(rows, NARROW_DROPS, whole=("kernels",))
        return f"{table}\n{summary}\n{fit_lines(f'measured on: {self.machine}')}"

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
        """The comparison table, mismatching operations shaded, worst elements listed below."""
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
        return f"<div>{table}{extra}{machine_html(self.machine)}</div>"

    def plot(self) -> Figure:
        """A titled matplotlib Figure of the elements that differ, per operation (the `plot`
        extra; `tools.plots`)."""
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
            "payload or sign"
        )
    return "; ".join(parts)


def _timed(
    plan: Plan, tensors: tuple[FuelTensor, ...], repeats: int = 3
) -> tuple[FuelTensor, float]:
    """The first run's output and the best of `repeats` run times (the first run pays for
    cold caches). A kernel fueltensor did not ship runs checked (`tools.checked.run`)."""
    if plan.fn is not None and plan.fn not in foreign.bundled():
        return checked.run(plan, tensors, repeats)
    best = float("inf")
    out = None
    for _ in range(repeats):
        start = time.perf_counter()
        got = execute.run(plan, tensors)
        best = min(best, time.perf_counter() - start)
        out = got if out is None else out
    assert out is not None
    return out, best


def diff(
    op: str,
    tensors: tuple[FuelTensor, ...],
    baseline: Plan,
    base: np.ndarray,
    other: Plan,
    out: np.ndarray,
    times: dict[str, float],
) -> Comparison:
    """Compare two kernels' outputs of one operation element by element."""
    assert baseline.kernel is not None and other.kernel is not None
    a, b = base.reshape(-1), out.reshape(-1)
    equal = bits(a) == bits(b)
    measured = errors(b, a)
    ulp = measured.ulp
    worst = None
    if not equal.all():
        # Rank by ULP, then let a payload-only NaN difference count once nothing else differs.
        score = np.where(equal, -1.0, ulp)
        flat = int(np.argmax(score))
        index = tuple(int(i) for i in np.unravel_index(flat, base.shape))
        inputs = tuple(format_value(np.broadcast_to(t._array, base.shape)[index]) for t in tensors)
        worst = Worst(
            index, inputs, format_value(base[index]), format_value(out[index]), float(ulp[flat])
        )
    return Comparison(
        op,
        baseline.op_kind,
        tuple(t.dtype.name for t in tensors),
        baseline.out_shape,
        (baseline.kernel.name, other.kernel.name),
        True,
        int(a.size),
        int(equal.sum()),
        float(ulp.max(initial=0.0)),
        float(measured.absolute.max(initial=0.0)),
        float(measured.relative.max(initial=0.0)),
        not measured.nan_mismatch.any(),
        times,
        worst,
        nan_payloads=int((np.isnan(a) & np.isnan(b) & ~equal).sum()),
    )


def _alternatives(planning: Planning, plan: Plan, allowed: frozenset[str] | None) -> list[Plan]:
    """The best viable plan of every allowed provider other than the one that ran."""
    best: dict[str, Plan] = {}
    for p in planning.viable:
        name = p.provider
        if name != plan.provider and (allowed is None or name in allowed):
            best.setdefault(name, p)
    return list(best.values())


def _observer(report: ComparisonReport) -> Observer:
    def seen(
        planning: Planning, plan: Plan, tensors: tuple[FuelTensor, ...], result: FuelTensor
    ) -> None:
        dtypes = tuple(t.dtype.name for t in tensors)
        label = plan.kernel.name if plan.kernel else "host"
        others = _alternatives(planning, plan, report.providers) if plan.kernel else []
        if not others:
            allowed = (
                "no contract admits it"
                if plan.kernel is None
                else (f"no other allowed provider admits it (only {plan.provider})")
            )
            report.add(
                Comparison(
                    plan.op,
                    plan.op_kind,
                    dtypes,
                    plan.out_shape,
                    (label,),
                    False,
                    count=plan.size,
                    note=allowed,
                )
            )
            return
        _, base_time = _timed(plan, tensors)
        for other in others:
            assert other.kernel is not None
            out, t = _timed(other, tensors)
            times = {label: base_time, other.kernel.name: t}
            report.add(diff(plan.op, tensors, plan, result._array, other, out._array, times))

    return seen


@contextmanager
def compare_backends(*names: str) -> Iterator[ComparisonReport]:
    """Run every contract operation in the block on each admissible provider among `names`
    (default: all contract providers) and record how their results differ.

    The block's code gets the default plan's result. Inside `use_backend`, only the providers
    that policy allows are candidates. A kernel fueltensor did not ship, the default one
    included, runs checked (`tools.checked`): a fault is raised as KernelFault from the
    operation, and the operands are only read.
    """
    reg = current_policy().registry
    allowed = frozenset().union(*(_resolve(reg, n) for n in names)) if names else None
    report = ComparisonReport(allowed)
    with observe(_observer(report)), foreign.checking(checked.output):
        yield report
