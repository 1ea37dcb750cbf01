"""Rich display for Jupyter: `_repr_html_` bodies for tensors, plans, registries and reports.

Every function returns a plain HTML string built from escaped text: small tables with a caption,
so a notebook shows what a `print` shows, only easier to scan.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor
    from fueltensor.engine.planner import Plan
    from fueltensor.registry import Registry
    from fueltensor.tools.compare import ComparisonReport
    from fueltensor.tools.judge import JudgeReport

_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px;text-align:left"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top"


def html_table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    caption: str = "",
    marks: Sequence[bool] | None = None,
) -> str:
    """An HTML table of escaped cells; rows whose entry in `marks` is True are shaded red."""
    cap = f"<caption style='text-align:left'><b>{escape(caption)}</b></caption>" if caption else ""
    head = "".join(f"<th style='{_CELL}'>{escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        bg = " style='background:#fdd'" if marks is not None and marks[i] else ""
        cells = "".join(f"<td style='{_CELL}'>{escape(str(v))}</td>" for v in row)
        body.append(f"<tr{bg}>{cells}</tr>")
    return (
        f"<table style='{_STYLE}'>{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _facts(pairs: Iterable[tuple[str, object]]) -> str:
    """A two-column key/value table without a header."""
    rows = "".join(
        f"<tr><th style='{_CELL}'>{escape(k)}</th><td style='{_CELL}'>{escape(str(v))}</td></tr>"
        for k, v in pairs
    )
    return f"<table style='{_STYLE}'>{rows}</table>"


def tensor_html(t: FuelTensor) -> str:
    """dtype, shape, strides, offset and the five layout flags, then the values."""
    flags = t.layout
    names = ("contiguous", "strided", "broadcast_stride0", "start_offset", "reverse_strides")
    layout = ", ".join(n for n in names if getattr(flags, n)) or "none"
    values = np.array2string(t._array, separator=", ", threshold=200, edgeitems=3)
    return (
        f"<div><b>FuelTensor</b> {escape(t.dtype.name)}{escape(str(list(t.shape)))}"
        + _facts(
            [
                ("dtype", f"{t.dtype.name} (FKC {t.dtype.fkc})"),
                ("shape", t.shape),
                ("strides (elements)", t.strides),
                ("offset (elements)", t.offset),
                ("layout flags", layout),
            ]
        )
        + f"<pre style='margin:4px 0'>{escape(values)}</pre></div>"
    )


def plan_html(p: Plan) -> str:
    """The plan's headline, its steps with their bytes and reasons, and the rejected kernels."""
    args = ", ".join(f"{o.dtype.name}{list(o.layout.shape)}" for o in p.operands)
    head = f"{p.op}({args}) -> {p.out_dtype.name}{list(p.out_shape)} via {p.provider}" + (
        f" [{p.op_kind}]" if p.op_kind else ""
    )
    steps = html_table(
        ("#", "step", "what", "bytes", "why"),
        [
            (i, s.kind, str(s).split("  [")[0], f"{s.bytes:,}", "; ".join(s.why))
            for i, s in enumerate(p.steps, 1)
        ],
        caption=f"steps (cost: {p.cost:,} bytes moved)",
    )
    rejected = (
        html_table(
            ("kernel", "why not"),
            [(k, "; ".join(v)) for k, v in p.rejected.items()],
            caption="other candidates",
        )
        if p.rejected
        else ""
    )
    return f"<div><b>Plan</b> {escape(head)}{steps}{rejected}</div>"


def registry_html(reg: Registry) -> str:
    """One row per provider, then one row per contract with its facts at a glance."""
    providers = html_table(
        ("provider", "kernel_source", "contracts", "registrable", "op kinds"),
        [
            (
                p.name,
                p.kernel_source,
                sum(c.provider.name == p.name for c in reg),
                sum(c.provider.name == p.name and c.registrable for c in reg),
                len({c.op_kind for c in reg if c.provider.name == p.name and c.registrable}),
            )
            for p in reg.providers
        ],
        caption=repr(reg),
    )
    contracts = html_table(
        ("kernel", "op_kind", "provider", "dtypes", "shapes", "bytes_moved", "max_ulp", "dispatch"),
        [
            (
                c.name,
                c.op_kind,
                c.provider.name,
                ",".join(dict.fromkeys(d for s in c.inputs for d in s.dtypes)),
                ", ".join(f"{s.name}: {s.shape_constraint}" for s in c.inputs),
                str(c.cost.bytes_moved),
                "~" if c.precision.max_ulp is None else f"{c.precision.max_ulp:g}",
                "yes" if c.registrable else "describe-only",
            )
            for c in reg
        ],
        caption="contracts",
    )
    return f"<div>{providers}{contracts}</div>"


def comparison_html(report: ComparisonReport) -> str:
    """The comparison table, mismatching operations shaded, worst elements listed below."""
    from fueltensor.tools.compare import COLUMNS, comparison_row

    rows = list(report)
    table = html_table(
        COLUMNS,
        [comparison_row(c) for c in rows],
        caption=f"compare_backends: {report.mismatches} mismatched elements",
        marks=[c.compared and c.mismatches > 0 for c in rows],
    )
    worst = [(c.op, " vs ".join(c.kernels), str(c.worst)) for c in rows if c.worst is not None]
    extra = html_table(("op", "kernels", "worst element"), worst) if worst else ""
    return f"<div>{table}{extra}</div>"


def judge_html(report: JudgeReport) -> str:
    """The judge's table, failing rows shaded, then every failure spelled out."""
    from fueltensor.tools.judge import COLUMNS, judge_row

    table = html_table(
        COLUMNS,
        [judge_row(r) for r in report.rows],
        caption=report.summary(),
        marks=[bool(r.failures) for r in report.rows],
    )
    fails = [(r.label, f) for r in report.rows for f in r.failures]
    extra = html_table(("kernel", "failure"), fails, caption="failures") if fails else ""
    return f"<div>{table}{extra}</div>"
