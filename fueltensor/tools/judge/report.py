"""The judge's report: every audit as a table (text, Markdown, HTML) and as JSON-ready data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from fueltensor.core.errors import plural
from fueltensor.fingerprint import Fingerprint, cache_bytes, machine
from fueltensor.tools.comparisons import text_table
from fueltensor.tools.display import html_table, machine_html
from fueltensor.tools.judge.record import Audit
from fueltensor.tools.textwidth import fit_lines

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from fueltensor.tools.cluster import ClusterJudgeReport

COLUMNS: Final = (
    "kernel",
    "ULP bound",
    "worst ULP",
    "probes",
    "same bits",
    "conformance",
    "overhead ns",
    "ns/elem",
    "all threads",
    "GB/s",
    "formula B/elem",
    "copy-speed ns/elem",
    "other impl. differ",
    "verdict",
)

EXPLAINED: Final = {
    "ULP bound": "ULP bound: the declared max_ulp (~: none declared; measured and reported, a "
    "failure only off a reference that is the formula the semantics come from).",
    "worst ULP": "worst ULP: the worst distance to an exactly rounded reference over every pair "
    "of special values and random pairs (fewer for f64, whose exact reference is slow; none "
    "where the reference is undefined).",
    "probes": "probes: the input pairs measured.",
    "same bits": "same bits: runs with byte-identical outputs / runs.",
    "conformance": "conformance: the return clause (dtype, shape, layout, aliasing), inputs "
    "untouched, every output element written.",
    "overhead ns": "overhead ns: a one-element call.",
    "ns/elem": "ns/elem: one call on a large input, on one thread.",
    "all threads": "all threads: that call's ns/elem ×threads it split over.",
    "GB/s": "GB/s: the formula's bytes over that call's time.",
    "formula B/elem": "formula B/elem: bytes_moved per element.",
    "copy-speed ns/elem": "copy-speed ns/elem: the formula's bytes at the copy bandwidth.",
    "other impl. differ": "other impl. differ: lanes where the kernel's other build (compiled or "
    "pure) gives other bits.",
}
"""What each judge column means, printed under the table for the columns it shows."""
TIMED: Final = ("overhead ns", "ns/elem", "all threads", "GB/s")
TIMING: Final = (
    "Times: medians of tools.timing's harness (warm-up, then interleaved batches), as "
    "compare_backends times."
)


def legend(shown: Sequence[str] = COLUMNS) -> str:
    """The legend of the columns `shown` (all of them by default), in table order."""
    parts = [EXPLAINED[c] for c in shown if c in EXPLAINED]
    if any(c in TIMED for c in shown):
        parts.append(TIMING)
    return " ".join(parts)


LEGEND: Final = legend()
"""The legend of every column (the Markdown and HTML tables show them all)."""

NARROW_DROPS: Final = (
    "formula B/elem",
    "copy-speed ns/elem",
    "GB/s",
    "all threads",
    "other impl. differ",
    "probes",
    "overhead ns",
    "ns/elem",
    "same bits",
    "ULP bound",
)
"""Judge columns a narrow terminal may leave out, first to last: the figures derived from
ns/elem (the formula's bytes, its copy-speed prediction, GB/s), the all-threads time, the other
build's lane count (a difference also fails the audit, printed below), the probe count, the
measured times; below 80 columns the run count and the declared bound (a broken one fails the
audit). The kernel, its worst ULP, conformance and the verdict stay."""


def shown_columns(table: str, columns: Sequence[str] = COLUMNS) -> list[str]:
    """The columns a fitted table kept: those whose header words all stand above its rule
    (a header never breaks inside a word, and each column has a word of its own)."""
    lines = table.splitlines()
    rule = next((i for i, line in enumerate(lines) if line.startswith("---")), len(lines))
    words = set(" ".join(lines[:rule]).split())
    return [c for c in columns if all(w in words for w in c.split())]


def ulps(value: float) -> str:
    """A ULP count for the table: whole below a million, three digits above (a framework's
    function that loses subnormal results is 1.13e+15 ULP off), so the column stays narrow."""
    return f"{value:g}" if value < 1e6 else f"{value:.3g}"


def judge_row(a: Audit) -> tuple[str, ...]:
    """One table row of an audit (shared by the text, Markdown and HTML tables)."""
    declared = "~" if a.declared_ulp is None else ulps(a.declared_ulp)
    return (
        a.label,
        declared,
        ulps(a.measured_ulp),
        str(a.probes),
        f"{a.identical_runs}/{a.runs}",
        "ok" if not a.conformance else plural(len(a.conformance), "problem"),
        f"{a.overhead_ns:,.0f}",
        f"{a.ns_per_element:.2f}",
        f"{a.ns_per_element_all:.2f} ×{a.threads}",
        f"{a.gb_per_s:.2f}",
        f"{a.formula_bytes_per_element:g}",
        f"{a.predicted_ns_per_element:.2f}",
        ", ".join(f"{k}: {v}" for k, v in a.implementations.items()) or "-",
        "ok" if a.ok else "FAIL",
    )


@dataclass
class JudgeReport:
    """Every audit, the copy bandwidth the cost predictions use, and how long it all took."""

    rows: list[Audit]
    quick: bool
    copy_gb_per_s: float
    seconds: float
    machine: Fingerprint = field(default_factory=machine)
    """Where it was measured: bits and timings depend on the CPU, NumPy's SIMD and the libm."""
    copy_working_set: int = 0
    """Bytes the copy-bandwidth measurement touched: the largest kernel working set."""

    @property
    def failures(self) -> list[tuple[str, str]]:
        """Every failure as (audit label, why), in audit order."""
        return [(a.label, f) for a in self.rows for f in a.failures]

    @property
    def ok(self) -> bool:
        """True when every audit passed."""
        return not self.failures

    def _where(self) -> str:
        """Where the copy bandwidth was measured: in cache or not, and how much it touched."""
        if not self.copy_working_set:
            return ""
        cache = cache_bytes()
        size = f"{self.copy_working_set / 2**20:.1f} MiB"
        if cache is None:
            return f" (working set {size}, like the kernels')"
        where = "in cache" if self.copy_working_set <= cache else "beyond the cache"
        return f" ({where}: working set {size}, largest cache {cache / 2**20:.0f} MiB)"

    def summary(self) -> str:
        """One line: audits, failing audits, the copy bandwidth and the time taken."""
        bad = sum(not a.ok for a in self.rows)
        return (
            f"judge: {plural(len(self.rows), 'audit')}, {bad} failing, copy bandwidth "
            f"{self.copy_gb_per_s:.1f} GB/s{self._where()}, {self.seconds:.1f} s"
            + (" (--quick)" if self.quick else "")
        )

    def __str__(self) -> str:
        table = text_table([COLUMNS, *map(judge_row, self.rows)], NARROW_DROPS)
        lines = [table, fit_lines(legend(shown_columns(table))), fit_lines(self.summary())]
        lines.append(fit_lines(f"measured on: {self.machine}"))
        lines += [fit_lines(f"FAIL {label}: {why}") for label, why in self.failures]
        lines += [fit_lines(f"note {a.label}: {n}") for a in self.rows for n in a.semantics]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<JudgeReport: {plural(len(self.rows), 'audit')}, "
            f"{plural(len(self.failures), 'failure')}>"
        )

    def _repr_html_(self) -> str:
        """The judge's table, failing rows shaded, then every failure spelled out."""
        table = html_table(
            COLUMNS,
            [judge_row(r) for r in self.rows],
            caption=self.summary(),
            marks=[bool(r.failures) for r in self.rows],
        )
        fails = [(r.label, f) for r in self.rows for f in r.failures]
        extra = html_table(("kernel", "failure"), fails, caption="failures") if fails else ""
        note = f"<p style='font-size:12px;max-width:60em'>{escape(LEGEND)}</p>"
        return f"<div>{table}{note}{extra}{machine_html(self.machine)}</div>"

    def plot(self) -> Figure:
        """A titled matplotlib Figure of the cost findings (the `plot` extra; `tools.plots`)."""
        from fueltensor.tools.plots import judge_figure

        return judge_figure(self)

    def to_dict(self) -> dict[str, Any]:
        """Everything measured, as JSON-ready data."""
        return {
            "quick": self.quick,
            "copy_gb_per_s": self.copy_gb_per_s,
            "seconds": self.seconds,
            "machine": self.machine.to_dict(),
            "ok": self.ok,
            "audits": [{**asdict(a), "ok": a.ok} for a in self.rows],
        }

    def to_markdown(self) -> str:
        """The table as GitHub Markdown, failures listed below it."""
        rows = [COLUMNS, *map(judge_row, self.rows)]
        out = ["| " + " | ".join(r) + " |" for r in rows]
        out.insert(1, "|" + "---|" * len(COLUMNS))
        out += ["", LEGEND, "", self.summary(), "", f"Measured on: {self.machine}"]
        out += ["", *(f"- **FAIL** `{k}`: {w}" for k, w in self.failures)]
        out += [f"- note `{a.label}`: {n}" for a in self.rows for n in a.semantics]
        return "\n".join(out) + "\n"


def write_outputs(
    report: JudgeReport | ClusterJudgeReport, json_path: str | None, markdown_path: str | None
) -> None:
    """Write the report as JSON and/or Markdown files."""
    if json_path:
        Path(json_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    if markdown_path:
        Path(markdown_path).write_text(report.to_markdown(), encoding="utf-8")
