"""`ComparisonReport.plot()` and `JudgeReport.plot()`: titled matplotlib Figures whose text
neither overlaps nor leaves the figure, overhead on a log axis; matplotlib imported only on
call, and its absence an ImportError naming the extra."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.tools.differences import by_class
from fueltensor.tools.judge import JudgeReport
from fueltensor.tools.tour import half_comparison

pytest.importorskip("matplotlib")
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox


@pytest.fixture(scope="module")
def judged() -> JudgeReport:
    """The quick judge of fueltensor's own float32 kernels, every family's (53 audits in 6 s on
    session 26's machine, compiled; all 379 took 33 s, once in each test worker)."""
    own = ("fuel-cpu-backend", "fuel-reference-backend", "fuel-blas-backend")
    names = [
        c.name
        for c in ft.registry()
        if c.provider.name in own and c.name.endswith("_f32") and c.registrable
    ]  # registrable: pure-NumPy mode describes its compiled-only casts (cast_f64_f32) alone
    return ft.judge(quick=True, kernels=names, progress=False)


def shown(fig: Figure) -> Iterator[Text]:
    """The figure's texts a reader sees: titles, axis labels, tick labels inside the view,
    annotations and legends."""
    yield from (t for t in (fig.get_suptitle() and fig._suptitle,) if t)
    for legend in fig.legends:
        yield from legend.get_texts()
    for ax in fig.axes:
        yield from (ax.title, ax.xaxis.label, ax.yaxis.label, *ax.texts)
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            ticks = axis.get_major_ticks() + axis.get_minor_ticks()
            yield from (t.label1 for t in ticks if lo <= t.get_loc() <= hi)
        if ax.get_legend() is not None:
            yield from ax.get_legend().get_texts()


def texts(fig: Figure) -> Iterator[tuple[str, Bbox]]:
    """Every visible, non-empty text of the drawn figure with its extent in pixels."""
    canvas = FigureCanvasAgg(fig)  # the figure is closed in pyplot: draw it as savefig would
    canvas.draw()
    renderer = canvas.get_renderer()
    for text in shown(fig):
        if text.get_visible() and text.get_text().strip():
            yield text.get_text(), Text.get_window_extent(text, renderer)  # an arrow not counted


def assert_readable(fig: Figure) -> None:
    """No text leaves the figure; no two texts of one kind overlap (labels, titles, notes)."""
    page = fig.bbox
    placed = list(texts(fig))
    for label, box in placed:
        assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, label
        assert page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, label
    for i, (a, box_a) in enumerate(placed):
        for b, box_b in placed[i + 1 :]:
            assert not box_a.overlaps(box_b), (a, b)


def test_a_comparison_plot_is_a_class_by_provider_matrix() -> None:
    x = ft.asarray(np.float32([0.0, 4.0, 5.0, np.nan, 1.5] * 4))
    y = ft.asarray(np.float32([-0.0, -2.0, np.inf, 1.0, 2.0] * 4))
    with ft.compare_backends("cpu", "numpy", "reference") as report:
        ft.minimum(x, y)
        ft.remainder(x, y)
        ft.add(x, y)
    fig = report.plot()
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_title().startswith("compare_backends: ")
    matrix = by_class(report)
    providers = [t.get_text() for t in ax.get_xticklabels()]
    classes = [t.get_text() for t in ax.get_yticklabels()]
    assert providers == list(matrix) and set(classes) == {c for r in matrix.values() for c in r}
    written = {
        (round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts
    }
    for (i, j), text in written.items():
        assert int(text.replace(",", "")) == matrix[providers[j]][classes[i]]
    assert len(written) == sum(len(r) for r in matrix.values())
    assert_readable(fig)


def test_a_judge_plot_puts_overhead_on_a_log_axis(judged: JudgeReport) -> None:
    fig = judged.plot()
    assert isinstance(fig, Figure) and fig.get_suptitle().startswith("judge --quick: ")
    cost, overhead = fig.axes
    assert cost.get_xscale() == cost.get_yscale() == "log"
    assert overhead.get_yscale() == "log"
    heights = [p.get_height() for p in overhead.patches]
    measured = [r for r in judged.rows if r.overhead_calls]
    assert np.allclose(heights, [r.overhead_ns for r in measured])
    assert measured == judged.rows  # every audit measures its cost, contractions' too
    sizes = " or ".join(f"{n:,}" for n in sorted({r.large_n for r in measured}))
    assert cost.get_title().endswith(f"(n = {sizes} elements; a matmul's are its multiply-adds)")
    assert "not measured" not in fig.get_suptitle()
    assert overhead.get_ylim()[0] < min(heights)  # every bar visible above the axis
    assert_readable(fig)
    unmeasured = [replace(r, overhead_calls=0) if i < 2 else r for i, r in enumerate(judged.rows)]
    fewer = replace(judged, rows=unmeasured).plot()  # an audit whose cost could not be timed
    assert "2 whose cost is not measured" in fewer.get_suptitle()
    assert len(fewer.axes[1].patches) == len(judged.rows) - 2


def test_many_slow_kernels_in_one_column_never_overlap(judged: JudgeReport) -> None:
    """A third of the kernels made slow at one formula column (a loaded machine's judge): the
    labels are stacked a line apart, and those past the axes' room are counted, not drawn on top
    of one another (CI once drew two a fraction of a pixel apart)."""
    many = [replace(r, kernel=f"{r.kernel}_{k}") for k in range(6) for r in judged.rows]
    rows = [
        replace(r, formula_bytes_per_element=12.0, ns_per_element=1e3 * (1 + i / 100))
        if i % 3 == 0
        else r
        for i, r in enumerate(many)
    ]
    fig = replace(judged, rows=rows).plot()
    assert_readable(fig)
    cost = fig.axes[0]
    notes = [t.get_text() for t in cost.texts if t.get_text().endswith(" more")]
    named = [t for t in cost.texts if not t.get_text().endswith(" more")]
    assert notes and len(named) + sum(int(n.split()[0][1:]) for n in notes) >= len(rows) // 3


def test_without_matplotlib_plot_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'fueltensor\[plot\]'"):
        half_comparison().plot()


def test_import_fueltensor_does_not_import_matplotlib() -> None:
    code = "import sys, fueltensor; print('matplotlib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
