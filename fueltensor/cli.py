"""The `fueltensor` command line: one argparse subcommand per job.

Each subcommand registers itself in `build_parser` with an `add_*` function that sets
`run=<function(args) -> int>`; `main` parses and calls it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .fkc import KernelContract
from .registry import registry

CONTRACT_COLUMNS = (
    "kernel",
    "op_kind",
    "provider",
    "dtypes",
    "layout strategy",
    "bytes_moved",
    "max_ulp",
    "audited",
    "dispatch",
)


def _dtypes(c: KernelContract) -> str:
    """The FKC dtype codes any input accepts, in first-seen order."""
    return ",".join(dict.fromkeys(d for spec in c.inputs for d in spec.dtypes))


def _row(c: KernelContract) -> tuple[str, ...]:
    ulp = c.precision.max_ulp
    return (
        c.name,
        c.op_kind,
        c.provider.name,
        _dtypes(c),
        c.caps.awkward_layout_strategy,
        str(c.cost.bytes_moved),
        "~" if ulp is None else f"{ulp:g}",
        "yes" if c.precision.audited else "no",
        "yes" if c.registrable else "describe-only",
    )


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def _run_contracts(args: argparse.Namespace) -> int:
    reg = registry()
    contracts = list(reg)
    for value, attr, label in ((args.op, "op_kind", "op kind"), (args.provider, None, "provider")):
        if value is None:
            continue
        choices = sorted({c.op_kind for c in contracts} if attr else _provider_names(contracts))
        if value not in choices:
            print(
                f"fueltensor contracts: unknown {label} {value!r}; known: {', '.join(choices)}",
                file=sys.stderr,
            )
            return 2
    selected = [
        c
        for c in contracts
        if (args.op is None or c.op_kind == args.op)
        and (args.provider is None or args.provider in (c.provider.name, c.kernel_source))
    ]
    if args.json:
        payload = [{"provider": c.provider.name, "blurb": c.blurb, **c.to_dict()} for c in selected]
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(_table([CONTRACT_COLUMNS, *map(_row, selected)]))
    return 0


def _provider_names(contracts: Sequence[KernelContract]) -> set[str]:
    """Provider names and kernel_source tags: either selects a provider."""
    return {c.provider.name for c in contracts} | {c.kernel_source for c in contracts}


def add_contracts(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor contracts`: list the registered kernel contracts."""
    p = sub.add_parser("contracts", help="list the kernel contracts of the registry")
    p.add_argument(
        "--op", metavar="OP_KIND", help="only contracts at this op kind, e.g. AddElementwise"
    )
    p.add_argument("--provider", metavar="NAME", help="only this provider (name or kernel_source)")
    p.add_argument("--json", action="store_true", help="print the contracts' facts as JSON")
    p.set_defaults(run=_run_contracts)


def build_parser() -> argparse.ArgumentParser:
    """The `fueltensor` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="fueltensor", description="fueltensor: kernel contracts and how they are used"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_contracts(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `fueltensor` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.run(args)
    return status
