"""Rich display for Jupyter: `_repr_html_` bodies for tensors, plans, registries and reports.

The model classes do not import this module: `register()` (run when `fueltensor` is imported)
installs these as their presentations in `fueltensor.core.hooks`.

Every function returns a plain HTML string built from escaped text: small tables with a caption,
so a notebook shows what a `print` shows, only easier to scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fueltensor.core.errors import plural
from fueltensor.core.hooks import HOOKS, Form
from fueltensor.tools.textwidth import KEYS, fit_table

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor
    from fueltensor.engine.planner import Plan
    from fueltensor.fingerprint import Fingerprint
    from fueltensor.fkc.schema import InputSpec, KernelContract
    from fueltensor.registry import Contracts, Registry


def escape(text: str) -> str:
    """`text` with HTML's special characters escaped (html.escape, imported on first display:
    it loads html.entities' table, which `import fueltensor` need not)."""
    import html

    return html.escape(text)


_STYLE = "border-collapse:collapse;font-family:monospace;font-size:12px;text-align:left"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top"


def html_table(
    header: Sequence[str],
    rows: Iterable[Sequence[object]],
    caption: str = "",
    marks: Sequence[bool] | None = None,
) -> str:
    """An HTML table of escaped cells; rows whose entry in `marks` is True are shaded red. The
    cells of name columns (kernel, provider, op, dtypes: `textwidth.KEYS`) never wrap inside a
    name."""
    cap = f"<caption style='text-align:left'><b>{escape(caption)}</b></caption>" if caption else ""
    head = "".join(f"<th style='{_CELL}'>{escape(h)}</th>" for h in header)
    styles = [_CELL + (";white-space:nowrap" if h in KEYS else "") for h in header]
    body = []
    for i, row in enumerate(rows):
        bg = " style='background:#fdd'" if marks is not None and marks[i] else ""
        cells = "".join(
            f"<td style='{style}'>{escape(str(v))}</td>"
            for style, v in zip(styles, row, strict=False)
        )
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
        + f"<pre style='margin:4px 0;font-family:monospace'>{escape(values)}</pre></div>"
    )


def _bound(value: float | None) -> str:
    """A declared precision bound, or `~` (the FKC spelling of "not declared")."""
    return "~" if value is None else f"{value:g}"


def input_text(spec: InputSpec) -> str:
    """One accepted operand in a line: dtypes, rank, shape relation, layout flags grouped by
    requirement (`contiguous: required; strided, start_offset: rejected`)."""
    rank = "any rank" if spec.rank is None else f"rank {spec.rank}"
    shape = f", {spec.shape_constraint}" if spec.shape_constraint else ""
    groups: dict[str, list[str]] = {}
    for flag, need in spec.layout:
        groups.setdefault(need, []).append(flag)
    layout = "; ".join(f"{', '.join(flags)}: {need}" for need, flags in groups.items())
    return f"{', '.join(spec.dtypes)}; {rank}{shape}; {layout}"


def contract_summary(c: KernelContract) -> str:
    """The contract in one line: op kind, provider, dtypes, layout strategy, cost and ULP bound."""
    dtypes = ",".join(dict.fromkeys(d for s in c.inputs for d in s.dtypes))
    role = "" if c.registrable else ", not registrable here" if c.unlinked else ", describe-only"
    return (
        f"{c.op_kind} by {c.provider.name}{role}, {dtypes}, {c.caps.awkward_layout_strategy}, "
        f"bytes_moved {c.cost.bytes_moved}, max_ulp {_bound(c.precision.max_ulp)}"
    )


def _unregistrable(c: KernelContract) -> str:
    """Why a contract is never dispatched: describe-only, or not linkable here (and why)."""
    return (
        f"not registrable here: {c.unlinked}" if c.unlinked else "describe-only: never dispatched"
    )


def contract_facts(c: KernelContract) -> list[tuple[str, str]]:
    """The facts a reader looks for first, as (label, text) pairs, read from the contract."""
    p = c.precision
    cost = c.cost
    overhead = "" if cost.overhead_ns is None else f", overhead {cost.overhead_ns:g} ns"
    out = c.outputs[0] if c.outputs else None
    return [
        ("kernel", c.name + ("" if c.registrable else f" ({_unregistrable(c)})")),
        ("op", c.op_kind),
        ("provider", f"{c.provider.name} (kernel_source {c.kernel_source})"),
        ("what", c.blurb),
        *((f"input {s.name}", input_text(s)) for s in c.inputs),
        *((f"param {p.name}", f"{p.type} scalar, passed with each call") for p in c.params),
        (
            "output",
            "none"
            if out is None
            else f"{out.name}: dtype {out.dtype_rule}, shape {out.shape_rule}, "
            f"{out.layout_guarantee}, aliasing {out.aliasing}",
        ),
        (
            "layout",
            f"{c.caps.awkward_layout_strategy}, {c.caps.alignment_bytes}-byte aligned output",
        ),
        ("bytes_moved", f"{cost.bytes_moved} ({cost.class_}, {cost.provenance}){overhead}"),
        ("flops", str(cost.flops)),
        (
            "precision",
            f"max_ulp {_bound(p.max_ulp)}, max_relative {_bound(p.max_relative)}, "
            f"max_absolute {_bound(p.max_absolute)}; "
            + ("audited" if p.audited else "not audited"),
        ),
        ("determinism", c.determinism),
        ("notes", p.notes or "none"),
        ("semantics", semantics_text(c)),
        ("declared in", f"{c.source.path}:{c.source.line}"),
    ]


def semantics_text(c: KernelContract) -> str:
    """The declared semantics in one line (`nan lhs kept; zero_tie lhs; ...`, its sources)."""
    sem = c.semantics
    if sem is None:
        return "not declared"
    parts = []
    for name, value in sem.to_dict().items():
        if name in ("source", "notes"):
            continue
        if isinstance(value, dict):
            shown = ", ".join(
                f"{k} {'/'.join(v) if isinstance(v, list) else v}" for k, v in value.items()
            )
            value = f"({shown})"
        parts.append(f"{name} {value}")
    return "; ".join(parts) + f" (from {', '.join(sem.source)})"


def contract_html(c: KernelContract) -> str:
    """A card: the contract's facts as a two-column table under its name."""
    return f"<div><b>KernelContract</b> {escape(c.name)}{_facts(contract_facts(c))}</div>"


CONTRACT_LIST_COLUMNS = ("kernel", "provider", "dtypes", "shapes", "bytes_moved", "max_ulp")


def contract_list_row(c: KernelContract) -> tuple[str, ...]:
    """One row of a list of contracts: the facts that tell the contracts of one op apart."""
    return (
        c.name,
        c.provider.name,
        ",".join(dict.fromkeys(d for s in c.inputs for d in s.dtypes)),
        ", ".join(f"{s.name}: {s.shape_constraint or 'any'}" for s in c.inputs),
        str(c.cost.bytes_moved),
        _bound(c.precision.max_ulp),
    )


def _registry_row(c: KernelContract) -> tuple[str, ...]:
    """A contract's row in the registry's table: the list row with its op kind and whether
    dispatch may pick it."""
    name, *facts = contract_list_row(c)
    return (name, c.op_kind, *facts, "yes" if c.registrable else _unregistrable(c))


def contracts_html(contracts: Sequence[KernelContract], caption: str) -> str:
    """A table of contracts, one row each."""
    return html_table(CONTRACT_LIST_COLUMNS, map(contract_list_row, contracts), caption=caption)


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
        [_registry_row(c) for c in reg],
        caption="contracts",
    )
    return f"<div>{providers}{contracts}</div>"


def machine_html(fingerprint: Fingerprint) -> str:
    """The 'measured on' line under a report."""
    return f"<p><small>measured on: {escape(str(fingerprint))}</small></p>"


def contract_card(c: KernelContract) -> str:
    """`str(contract)`: its facts, one per line, names aligned."""
    facts = contract_facts(c)
    width = max(len(k) for k, _ in facts)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in facts)


def contract_repr(c: KernelContract) -> str:
    """`repr(contract)`: its name and a one-line summary."""
    return f"<KernelContract {c.name}: {contract_summary(c)}>"


def contract_list_text(contracts: Contracts) -> str:
    """`repr(registry.for_op(...))`: a table of the contracts, fitted to the terminal."""
    if not contracts:
        return "Contracts()"
    return fit_table([CONTRACT_LIST_COLUMNS, *map(contract_list_row, contracts)])


def register() -> None:
    """Make these the presentations of the model classes (`fueltensor.core.hooks.present`:
    their `_repr_html_`, and a contract's `str` and `repr`), so no model class imports tools."""
    presenters: dict[tuple[str, Form], Callable[[Any], str]] = {
        ("FuelTensor", "html"): tensor_html,
        ("Plan", "html"): plan_html,
        ("KernelContract", "html"): contract_html,
        ("KernelContract", "str"): contract_card,
        ("KernelContract", "repr"): contract_repr,
        ("Contracts", "html"): lambda c: contracts_html(c, plural(len(c), "contract")),
        ("Contracts", "repr"): contract_list_text,
        ("Registry", "html"): registry_html,
    }
    HOOKS.presenters.update(presenters)
