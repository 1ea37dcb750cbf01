"""Certificates' ULP histograms side by side, read back from their short texts (the form
benchmarks/certificates/ keeps, `Certificate.text()`): a table (text and HTML) and a bar chart
(`Histograms.plot()`), so that fueltensor's exp and NumPy's can be set beside each other from
files, with no framework installed."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_BUCKETS = re.compile(r"(exact|beyond|\d+): ([\d,]+)")
_HEAD = re.compile(r"^(\S+) \(([^,]+), (\w+)(?: to (\w+))?\): ([\d,]+) (?:pairs|inputs)")
"""A certificate's first line: kernel (provider, dtype[ to target]): N pairs|inputs (a cast's
names its target)."""


@dataclass(frozen=True)
class Histogram:
    """One certificate's histogram and what it says of its run."""

    kernel: str
    provider: str
    dtype: str
    swept: int
    """Inputs (or pairs) swept."""
    counts: Mapping[str, int]
    """Bucket -> count: `exact`, `0` (0 ULP, other bits: another NaN, the other zero),
    `1` .. `8`, `beyond`; only the buckets the certificate counted."""
    worst: str
    """Its `max ... ULP, first at ...` line."""
    run: str
    """Its machine and time line."""
    target: str = ""
    """A cast's target dtype ("" for any other kernel)."""


def read(path: str | Path) -> Histogram:
    """The histogram of the certificate text at `path`; ValueError naming the file and the
    line it could not read."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    head = _HEAD.match(lines[0]) if lines else None
    if head is None or len(lines) < 3 or not lines[1].startswith("ULP from"):
        raise ValueError(
            f"{path}:1: not a certificate's text (fueltensor certify --out writes one)"
        )
    counts = {k: int(n.replace(",", "")) for k, n in _BUCKETS.findall(lines[1].split("): ")[-1])}
    run = next((t for t in lines if " s on " in t), "")
    kernel, provider, dtype, target, swept = head.groups()
    swept_n = int(swept.replace(",", ""))
    return Histogram(kernel, provider, dtype, swept_n, counts, lines[2], run, target or "")


def label(bucket: str) -> str:
    """A bucket's column title."""
    return {"exact": "exact", "0": "0 ULP, other bits", "beyond": "> 8 ULP"}.get(
        bucket, f"{bucket} ULP"
    )


@dataclass(frozen=True)
class Histograms:
    """Several certificates' histograms, a row each, a column per bucket any of them counted."""

    rows: tuple[Histogram, ...]

    def __iter__(self) -> Iterator[Histogram]:
        return iter(self.rows)

    def __repr__(self) -> str:
        return "<Histograms: " + ", ".join(f"{r.kernel} ({r.provider})" for r in self.rows) + ">"

    @property
    def buckets(self) -> list[str]:
        """The buckets any row counted, in the certificates' order."""
        order = ["exact", *(str(k) for k in range(9)), "beyond"]
        seen = {b for row in self.rows for b in row.counts}
        return [b for b in order if b in seen]

    def __str__(self) -> str:
        names = [f"{r.kernel} ({r.provider})" for r in self.rows]
        width = max(map(len, names), default=0)
        cells = [[label(b) for b in self.buckets]]
        cells += [[f"{r.counts.get(b, 0):,}" for b in self.buckets] for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.buckets))]
        lines = [
            f"{name:<{width}}  " + "  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True))
            for name, row in zip(["", *names], cells, strict=True)
        ]
        return "\n".join([*lines, *(f"{r.kernel}: {r.worst}" for r in self.rows)])

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{html.escape(label(b))}</th>" for b in self.buckets)
        body = "".join(
            f"<tr><td>{html.escape(r.kernel)}</td><td>{html.escape(r.provider)}</td>"
            + "".join(f"<td>{r.counts.get(b, 0):,}</td>" for b in self.buckets)
            + f"<td>{html.escape(r.worst)}</td><td>{html.escape(r.run)}</td></tr>"
            for r in self.rows
        )
        return (
            f"<table><tr><th>kernel</th><th>provider</th>{head}<th>worst</th><th>run</th></tr>"
            f"{body}</table>"
        )

    def plot(self) -> Figure:
        """A bar per certificate and bucket, log scale (`tools.plots`); the `0` bucket (0 ULP,
        other bits) is the table's only."""
        from fueltensor.tools.plots import histograms_figure

        shown = [b for b in self.buckets if b != "0"]
        bars = [(r.kernel, [r.counts.get(b, 0) for b in shown]) for r in self.rows]
        swept = self.rows[0].swept if self.rows else 0
        return histograms_figure(bars, [label(b) for b in shown], swept)


def histograms(paths: Iterable[str | Path]) -> Histograms:
    """The histograms of the certificate texts at `paths`, in that order."""
    return Histograms(tuple(read(p) for p in paths))
