"""Figures of the reports: `ComparisonReport.plot()`, `JudgeReport.plot()` and
`Histograms.plot()` (certificates side by side) call these.

matplotlib is the `plot` extra (`pip install "fueltensor[plot]"`), imported on the first call:
`import fueltensor` never pays for it. Each function returns a titled matplotlib `Figure`, laid
out by matplotlib's constrained layout so that labels neither overlap nor leave the figure. The
figure is closed in pyplot (it is not shown twice in Jupyter, nor kept alive by pyplot); it
displays as a cell's value and saves with `fig.savefig(...)`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from fueltensor.ops import CONTRACTION_BY_KIND

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from fueltensor.tools.comparisons import ComparisonReport
    from fueltensor.tools.judge import Audit, JudgeReport

EXTRA = "plot"
"""The optional dependency group that brings matplotlib."""
OUTLIER = 4.0
"""A kernel this many times slower per element than the median is named on the cost chart."""


def _pyplot() -> Any:
    """matplotlib.pyplot, or an ImportError naming the extra that installs it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError(
            f"plotting needs matplotlib: pip install 'fueltensor[{EXTRA}]' (or matplotlib)"
        ) from e
    return plt


@cache
def _report_figure() -> type[Figure]:
    """A Figure that shows itself as a PNG wherever IPython displays it, whatever matplotlib
    backend is active (a plain Figure needs the inline backend's formatter for that)."""
    from matplotlib.figure import Figure

    class ReportFigure(Figure):
        def _repr_png_(self) -> bytes:
            buffer = io.BytesIO()
            self.savefig(buffer, format="png")
            return buffer.getvalue()

    return ReportFigure


def _figure(width: float, height: float, rows: int = 1) -> tuple[Figure, list[Axes]]:
    """A new figure of `rows` stacked axes, laid out by constrained layout, closed in pyplot."""
    plt = _pyplot()
    fig, axes = plt.subplots(
        rows,
        1,
        figsize=(width, height),
        layout="constrained",
        squeeze=False,
        FigureClass=_report_figure(),
    )
    plt.close(fig)
    return fig, list(axes[:, 0])


def comparison_figure(report: ComparisonReport) -> Figure:
    """The differing elements as a class x provider matrix: a row per difference class some
    provider shows (`tools.differences`), a column per provider compared with the default
    kernel, each cell its count, shaded by it (log scale)."""
    import numpy as np

    from fueltensor.tools.differences import CLASSES, by_class

    matrix = by_class(report)
    providers = list(matrix) or ["none compared"]
    classes = [c for c in CLASSES if any(matrix[p].get(c, 0) for p in matrix)] or ["none"]
    counts = np.array([[matrix.get(p, {}).get(c, 0) for p in providers] for c in classes])
    fig, (ax,) = _figure(2.4 + 1.4 * len(providers), 1.6 + 0.45 * len(classes))
    ax.imshow(np.log1p(counts), cmap="Reds", aspect="auto", vmin=0)
    dark = np.log1p(counts.max(initial=1)) * 0.6
    for (i, j), n in np.ndenumerate(counts):
        if n:
            color = "white" if np.log1p(n) > dark else "black"
            ax.text(j, i, f"{n:,}", ha="center", va="center", fontsize=8, color=color)
    ax.set_xticks(range(len(providers)), providers)
    ax.set_yticks(range(len(classes)), classes)
    ax.tick_params(length=0)
    compared = sum(c.count for c in report if c.compared)
    ax.set_title(
        f"compare_backends: {report.mismatches:,} of {compared:,} elements differ\n"
        "by class and provider, each against the default kernel",
        fontsize=10,
    )
    return fig


def _by_provider(rows: Sequence[Audit]) -> dict[str, list[Audit]]:
    providers: dict[str, list[Audit]] = {}
    for r in rows:
        providers.setdefault(r.provider, []).append(r)
    return providers


def _cost_axes(ax: Axes, report: JudgeReport, measured: Sequence[Audit]) -> None:
    """Measured ns per element of the `measured` audits against the `bytes_moved` formula's
    bytes per element, log-log, with those bytes at the measured copy bandwidth as a dashed
    line; outliers named."""
    from matplotlib.scale import LogScale

    from fueltensor.fingerprint import cache_bytes

    for i, (provider, rows) in enumerate(_by_provider(measured).items()):
        shift = 1 + 0.05 * (i - 0.5)  # providers side by side at the same formula, not on top
        xs = [r.formula_bytes_per_element * shift for r in rows]
        ax.scatter(xs, [r.ns_per_element for r in rows], label=provider, alpha=0.75)
    xs = sorted({r.formula_bytes_per_element for r in measured})
    cache = cache_bytes()
    fits = cache is not None and report.copy_working_set <= cache
    where = "in cache" if fits else "beyond the cache" if cache else "cache size unknown"
    ax.plot(
        xs,
        [x / report.copy_gb_per_s for x in xs],
        "k--",
        label=f"the formula's bytes at the copy bandwidth, {report.copy_gb_per_s:.0f} GB/s "
        f"({where})",
    )
    ax.set_xscale(LogScale.name)  # matplotlib's name of its logarithmic scale
    ax.set_yscale(LogScale.name)
    ax.margins(x=0.3, y=0.15)
    median = sorted(r.ns_per_element for r in measured)[len(measured) // 2]
    _name_outliers(ax, [r for r in measured if r.ns_per_element > OUTLIER * median])
    ax.set_xticks(xs, _spaced(ax, xs))
    ax.minorticks_off()
    ax.set_xlabel("bytes_moved formula (bytes per element)")
    ax.set_ylabel("measured ns per element")
    sizes = " or ".join(f"{n:,}" for n in sorted({r.large_n for r in measured})) or "0"
    products = any(r.op_kind in CONTRACTION_BY_KIND for r in measured)
    ax.set_title(
        f"Measured time against declared bytes moved (n = {sizes} elements"
        + ("; a matmul's are its multiply-adds)" if products else ")"),
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=3)


def _x_fraction(ax: Axes) -> Callable[[float], float]:
    """Where a value of `ax`'s log x axis lies in the axes' width (0 left edge, 1 right)."""
    import math

    left, right = (math.log10(v) for v in ax.get_xlim())
    return lambda x: (math.log10(x) - left) / (right - left)


def _char_width(ax: Axes, points: float) -> float:
    """A character of `points`-point text in the axes' width: 0.6 em, and half as much again
    for the layout's shrinking the axes after this."""
    return points / 72 * ax.figure.dpi / ax.bbox.width * 0.6 * 1.5


def _spaced(ax: Axes, xs: Sequence[float]) -> list[str]:
    """Tick labels of the sorted formula values `xs` on `ax`'s log x axis, to three digits
    (4.00006 bytes, a formula's 4 plus a fixed size over n, is 4), a value whose label would
    start before the last shown one ends left blank (9 beside 10 meet on a narrow figure)."""
    import math

    from matplotlib import rcParams
    from matplotlib.font_manager import FontProperties

    at = _x_fraction(ax)
    em = _char_width(ax, FontProperties(size=rcParams["xtick.labelsize"]).get_size_in_points())
    labels, end = [], -math.inf
    for x in xs:
        text = f"{x:.3g}"
        half = len(text) * em / 2
        shown = at(x) - half > end
        labels.append(text if shown else "")
        end = at(x) + half if shown else end
    return labels


def _name_outliers(ax: Axes, slow: Sequence[Audit]) -> None:
    """Label each point of `slow` to its right, the labels of one formula column (and of the
    columns within 1.5x of it or before its widest label ends, whose labels would meet) stacked
    evenly in the axes beside the group's left-most column (ordered as their points are), so
    that none overlaps another and a group's labels end before the next group's begin."""
    import math

    from matplotlib.transforms import blended_transform_factory

    data_x_axes_y = blended_transform_factory(ax.transData, ax.transAxes)
    low, high = (math.log10(v) for v in ax.get_ylim())
    # A column whose labels (7-point) would start before the group's widest ends joins the
    # group's stack.
    at, em = _x_fraction(ax), _char_width(ax, 7)
    columns: dict[float, list[Audit]] = {}
    for r in sorted(slow, key=lambda r: r.formula_bytes_per_element):
        x = r.formula_bytes_per_element
        last = max(columns, default=None)
        if last is not None:
            widest = max(len(q.label) for q in columns[last]) * em
            if at(x) - at(last) < widest or x < 1.5 * last:
                columns[last].append(r)
                continue
        columns[x] = [r]
    # A label's line in the axes' height (7-point text, 1.4 lines: the layout may shrink the
    # axes a little after this): the stack's step is never less, so no two labels meet.
    line = 7 * 1.4 / 72 * ax.figure.dpi / ax.bbox.height
    room = max(1, int(0.94 / line))
    for x, rows in columns.items():
        rows.sort(key=lambda r: -r.ns_per_element)
        more = len(rows) - room + 1 if len(rows) > room else 0
        rows = rows[: room - 1] if more else rows  # the slowest named, the rest counted last
        lines = len(rows) + bool(more)
        step = max(line, min(0.05, 0.94 / lines))
        heights = [(math.log10(r.ns_per_element) - low) / (high - low) for r in rows]
        centred = sum(heights) / len(heights) + step * (lines - 1) / 2
        top = min(0.97, max(centred, 0.03 + step * (lines - 1)))  # the stack stays inside
        if more:
            where = (x * 1.12, top - step * len(rows))
            ax.annotate(f"+{more} more", where, xycoords=data_x_axes_y, fontsize=7, va="center")
        for k, r in enumerate(rows):
            ax.annotate(
                r.label,
                (r.formula_bytes_per_element, r.ns_per_element),
                xytext=(x * 1.12, top - step * k),
                textcoords=data_x_axes_y,
                fontsize=7,
                va="center",
                arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.6"},
            )


def _overhead_axes(ax: Axes, measured: Sequence[Audit]) -> None:
    """Call overhead per kernel on one-element inputs, on a log axis (sub-microsecond and
    ten-microsecond calls side by side), one colour per provider."""
    from matplotlib.patches import Patch
    from matplotlib.scale import LogScale
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    colors = {p: f"C{i}" for i, p in enumerate(_by_provider(measured))}
    times = [r.overhead_ns for r in measured]
    ax.bar([r.label for r in measured], times, color=[colors[r.provider] for r in measured])
    ax.legend(
        handles=[Patch(color=c, label=p) for p, c in colors.items()], fontsize=7, loc="upper left"
    )
    ax.set_yscale(LogScale.name)
    ax.set_ylim(min(times) / 4, max(times) * 4)  # bars rise from well below the shortest
    ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("ns per call (log scale)")
    ax.set_title("Call overhead: one kernel call on one-element inputs", fontsize=10)
    ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    ax.margins(x=0.01)
    ax.grid(True, axis="y", alpha=0.3)


def judge_figure(report: JudgeReport) -> Figure:
    """The judge's cost findings: measured time against the `bytes_moved` formula, and the
    call overhead of every kernel on a log axis, wide enough for one upright label per kernel
    (audits whose cost was not measured, such as the contractions', left out and counted)."""
    measured = [r for r in report.rows if r.overhead_calls]
    fig, (cost, overhead) = _figure(max(10.0, 0.14 * len(measured)), 10.0, rows=2)
    _cost_axes(cost, report, measured)
    _overhead_axes(overhead, measured)
    bad = sum(not a.ok for a in report.rows)
    unmeasured = len(report.rows) - len(measured)
    fig.suptitle(
        f"judge{' --quick' if report.quick else ''}: {len(report.rows)} audits, {bad} failing "
        f"(measured on {report.machine.cpu}"
        + (f"; {unmeasured} whose cost is not measured left out)" if unmeasured else ")"),
        fontsize=11,
    )
    return fig


def histograms_figure(
    bars: Sequence[tuple[str, Sequence[int]]], buckets: Sequence[str], swept: int
) -> Figure:
    """Certificates' histograms as bars (`Histograms.plot()`): a group per bucket (`buckets`,
    their titles), a bar per certificate (`bars`: its name and its count in each bucket), log
    scale: how many inputs each kernel got exactly right, and how far off the rest were."""
    from matplotlib.scale import LogScale

    fig, (ax,) = _figure(2.6 + 1.1 * len(buckets), 3.0)
    width = 0.8 / max(len(bars), 1)
    for i, (name, counts) in enumerate(bars):
        xs = [j + width * (i - (len(bars) - 1) / 2) for j in range(len(buckets))]
        ax.bar(xs, counts, width, label=name)
    ax.set_yscale(LogScale.name)
    ax.set_xticks(range(len(buckets)), buckets)
    ax.set_ylabel(f"inputs (of {swept:,})")
    ax.set_xlabel("distance from the correctly rounded result")
    ax.legend(fontsize=8)
    ax.set_title("certificates: every input, by its distance in ULP", fontsize=10)
    return fig
