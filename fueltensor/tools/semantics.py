"""`fueltensor semantics`: what each provider does where IEEE 754 or the formula leaves a choice.

Rows are the semantic cases (`tools.judge.cases`: NaN operands, ±0 ties, remainder signs,
pow's special cases, subnormals), columns the providers, and each cell what that provider's
kernel returned: a number, or where a NaN came from (`lhs`, `rhs quieted`, `+qNaN`). Nothing
is written by hand: every cell comes from running the provider's kernel through a position
sweep, and `a | b` means the result depends on where the element sits.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fueltensor.core import dtypes as _dtypes
from fueltensor.engine.backends import current_policy
from fueltensor.engine.planner import ORACLE_SOURCES
from fueltensor.families import TRAITS
from fueltensor.fingerprint import Fingerprint, machine
from fueltensor.fkc.schema import KernelContract
from fueltensor.ops import BINARY_OPS, BY_KIND, spelled
from fueltensor.registry import Registry, provider_aliases, provider_unavailable
from fueltensor.tools.display import html_table, machine_html
from fueltensor.tools.textwidth import fit_lines, fit_table

LEGEND = (
    "Each cell: what the provider's kernel returned, from running it (never written by hand). "
    "lhs / rhs: that operand's NaN, bit for bit; quieted: with its quiet bit set; +qNaN / "
    "-qNaN: a NaN with no payload; NaN 0x...: other bits. a | b: the result depends on where "
    "the element sits (length, offset, lane of the call). -: the provider has no kernel for it."
)


@dataclass(frozen=True)
class Row:
    """One case: its operation, dtype and label, and what each provider returned."""

    op_kind: str
    dtype: str
    aspect: str
    case: str
    operands: str
    cells: dict[str, tuple[str, ...]]
    """Provider column -> the descriptions of the results seen (several: by position)."""
    bits: dict[str, tuple[int, ...]]
    """Provider column -> the result bit patterns seen, in the same order."""

    @property
    def differs(self) -> bool:
        """Whether the providers that ran it did not all return the same bits."""
        return len({frozenset(b) for b in self.bits.values()}) > 1


@dataclass(repr=False)
class SemanticsTable:
    """What `semantics_table` measured: the providers' columns, one row per case."""

    providers: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    """Provider -> why it did not run (its framework is not installed here)."""
    depth: str = "brief"
    machine: Fingerprint = field(default_factory=machine)

    def _table(self, only_differences: bool = False) -> list[tuple[str, ...]]:
        """Header and rows; a provider with no kernel for any row shown gets no column."""
        rows = [r for r in self.rows if r.differs or not only_differences]
        providers = [p for p in self.providers if any(p in r.cells for r in rows)]
        many = len({r.dtype for r in rows}) > 1
        head = ("case", *(("dtype",) if many else ()), *providers)
        body = [
            (
                r.case,
                *((r.dtype,) if many else ()),
                *(" | ".join(r.cells.get(p, ("-",))) for p in providers),
            )
            for r in rows
        ]
        return [head, *body]

    def summary(self) -> str:
        """How many cases, how many the providers disagree on, and who was left out."""
        differ = sum(r.differs for r in self.rows)
        text = f"{len(self.rows)} cases, the providers differ on {differ} (sweep: {self.depth})"
        text += "".join(f"; {p} not run: {why}" for p, why in self.skipped.items())
        return text

    def text(self, only_differences: bool = False) -> str:
        """The table fitted to the terminal, its legend and where it was measured."""
        table = fit_table(self._table(only_differences), whole=("case", *self.providers))
        lines = [table, fit_lines(self.summary()), fit_lines(LEGEND)]
        return "\n".join([*lines, fit_lines(f"measured on: {self.machine}")])

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        differ = sum(r.differs for r in self.rows)
        return (
            f"<SemanticsTable: {len(self.rows)} cases x {', '.join(self.providers)}; "
            f"they differ on {differ}>"
        )

    def to_markdown(self, only_differences: bool = False) -> str:
        """The table as GitHub Markdown, with its legend."""
        rows = self._table(only_differences)
        out = ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
        out.insert(1, "|" + "---|" * len(rows[0]))
        return "\n".join([*out, "", self.summary(), "", LEGEND]) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every row with each provider's result descriptions and bit patterns."""
        return {
            "providers": list(self.providers),
            "skipped": self.skipped,
            "depth": self.depth,
            "machine": self.machine.to_dict(),
            "rows": [
                {
                    "op_kind": r.op_kind,
                    "dtype": r.dtype,
                    "aspect": r.aspect,
                    "case": r.case,
                    "operands": r.operands,
                    "results": {
                        p: [
                            {"what": w, "bits": f"{b:#x}"}
                            for w, b in zip(c, r.bits[p], strict=True)
                        ]
                        for p, c in r.cells.items()
                    },
                    "differs": r.differs,
                }
                for r in self.rows
            ],
        }

    def _repr_html_(self) -> str:
        """The table, the rows where the providers differ shaded."""
        rows = self._table()
        table = html_table(
            rows[0], rows[1:], caption=self.summary(), marks=[r.differs for r in self.rows]
        )
        legend = f"<p style='font-size:12px;max-width:60em'>{LEGEND}</p>"
        return f"<div>{table}{legend}{machine_html(self.machine)}</div>"


def column(provider: str, reg: Registry) -> str:
    """A provider's column title: the shortest of its name and aliases (`cpu`, `torch`)."""
    found = next(p for p in reg.providers if p.name == provider)
    return min((provider, *provider_aliases(found)), key=len)


def _contract(reg: Registry, provider: str, op_kind: str, fkc: str) -> KernelContract | None:
    """The provider's contract at `op_kind` that takes dtype `fkc` in each of the operands its
    family has (two for a binary op, one for a unary one), if any."""
    operands = len(TRAITS[BY_KIND[op_kind].family].operands)
    for c in reg.for_op(op_kind):
        taken = fkc in c.inputs[0].dtypes
        if c.provider.name == provider and len(c.inputs) == operands and taken:
            return c
    return None


def semantics_table(
    providers: Iterable[str] | None = None,
    ops: Iterable[str] | None = None,
    dtypes: Iterable[str] = ("float32",),
    depth: str = "brief",
    reg: Registry | None = None,
) -> SemanticsTable:
    """Run every semantic case of `ops` (default: the eight operations) at `dtypes` on each of
    `providers` (names or aliases; default: every provider of the registry, production ones
    first, the frameworks next, the oracles last) and tabulate what each returned. A provider
    whose framework is not installed is left out, and said so."""
    reg = reg if reg is not None else current_policy().registry
    if providers is None:  # production first, then the frameworks, the oracles last
        ranked = sorted(
            reg.providers, key=lambda p: (p.kernel_source in ORACLE_SOURCES, p.when_named)
        )
        names = [p.name for p in ranked]
    else:
        names = [n for p in providers for n in sorted(reg.provider_names(p))]
    skipped = {n: why for n in names if (why := provider_unavailable(n)) is not None}
    running = [n for n in names if n not in skipped]
    table = SemanticsTable(tuple(column(n, reg) for n in running), skipped=skipped, depth=depth)
    kinds = [op.op_kind.value for op in BINARY_OPS] if ops is None else [_op_kind(o) for o in ops]
    for name in dtypes:
        dtype = _dtypes.as_dtype(name)
        for kind in kinds:
            table.rows += _rows(reg, running, kind, dtype, depth)
    return table


def _op_kind(text: str) -> str:
    """The op kind an operation's spelling names (`minimum`, `MinimumElementwise`, `rem`)."""
    op = spelled(text)
    if op is None:
        raise ValueError(
            f"no operation is called {text!r}; the operations: "
            + ", ".join(o.name for o in BINARY_OPS)
        )
    return op.op_kind.value


def _rows(
    reg: Registry, providers: Sequence[str], op_kind: str, dtype: _dtypes.DType, depth: str
) -> list[Row]:
    """One row per case of `op_kind` at `dtype`, each provider's results filled in."""
    from fueltensor.tools.judge.cases import cases, describe  # the judge loads on first use
    from fueltensor.tools.judge.semantics import observe

    found = cases(op_kind, dtype.np)
    cells: list[dict[str, tuple[str, ...]]] = [{} for _ in found]
    bits: list[dict[str, tuple[int, ...]]] = [{} for _ in found]
    for name in providers:
        contract = _contract(reg, name, op_kind, dtype.fkc)
        if contract is None:
            continue
        seen = observe(contract, reg.kernel(contract.name), dtype.np, depth).sweep.seen
        for i, case in enumerate(found):
            patterns = tuple(seen[i])
            cells[i][column(name, reg)] = tuple(describe(case, p) for p in patterns)
            bits[i][column(name, reg)] = patterns
    return [
        Row(op_kind, dtype.name, c.aspect, c.label, c.operands(), cells[i], bits[i])
        for i, c in enumerate(found)
    ]


def _run(args: argparse.Namespace) -> int:
    """`fueltensor semantics`: print (or write as JSON / Markdown) the table."""
    try:
        table = semantics_table(args.provider, args.op, args.dtype or ("float32",), args.sweep)
    except (ValueError, TypeError) as e:
        print(f"fueltensor semantics: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(table.to_dict(), indent=1))
    elif args.markdown:
        print(table.to_markdown(args.differences), end="")
    else:
        print(table.text(args.differences))
    return 0


def add_semantics(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor semantics`: the providers side by side on the semantic cases."""
    p = sub.add_parser(
        "semantics",
        help="run every provider on NaN, ±0, remainder, pow and subnormal cases, side by side",
    )
    p.add_argument(
        "--provider", action="append", metavar="NAME", help="only these providers (repeatable)"
    )
    p.add_argument("--op", action="append", metavar="OP", help="only these operations (repeatable)")
    p.add_argument(
        "--dtype",
        action="append",
        metavar="DTYPE",
        help="float32 (default), float64, bfloat16, float16",
    )
    p.add_argument(
        "--sweep",
        default="brief",
        metavar="DEPTH",
        help="brief (default), quick or full: how many lengths and offsets each kernel runs at",
    )
    p.add_argument(
        "--differences", action="store_true", help="only the cases the providers differ on"
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print every result and its bits as JSON")
    out.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.set_defaults(run=_run)
