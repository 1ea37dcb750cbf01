"""The `fueltensor` command line: one argparse subcommand per job.

Each subcommand registers itself in `build_parser` with an `add_*` function that sets
`run=<function(args) -> int>`; `main` parses and calls it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from contextlib import nullcontext
from typing import TextIO

import numpy as np

from .array_api.manipulation import permute_dims
from .cli_audit import (
    DRAFT_ERRORS,
    add_compare,
    add_draft_flags,
    add_judge,
    add_wide,
    draft,
    draft_sources,
    fail,
)
from .cli_certify import add_certify
from .core.dtypes import BY_FKC
from .core.errors import ContractError, ContractWarning, ProviderUnavailable, plural
from .core.tensor import FuelTensor, asarray
from .engine.backends import use_backend, use_registry
from .engine.dispatch import explain, functions
from .families import TRAITS, Family
from .fkc import KernelContract
from .kernels.pow_shortcut import Y_VALUES
from .ops import BINARY_OPS, ContractOp, spelled
from .registry import Registry, registry
from .tools.drafts import Finding, lint
from .tools.semantics import add_semantics
from .tools.textwidth import fit_lines, fit_table, table_width

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
        _dispatch(c),
    )


def _dispatch(c: KernelContract) -> str:
    """Whether `c` takes part in dispatch: yes, only where named (it or its provider), not
    here (this installation cannot link it), or never (describe-only)."""
    if not c.registrable:
        return "not here" if c.unlinked else "describe-only"
    return "when_named" if "when_named" in (c.dispatch, c.provider.dispatch) else "yes"


def _loaded(args: argparse.Namespace) -> tuple[list[KernelContract], list[Finding]]:
    """The contracts `contracts` shows and what is wrong with them: the draft's (`--contracts`,
    linted and linked through `--library`/`--module`) or the installed registry's."""
    with warnings.catch_warnings():  # the findings say the same, on the right stream
        warnings.simplefilter("ignore", ContractWarning)
        if args.contracts:
            return lint(args.contracts, draft_sources(args))
        draft_sources(args)  # refuses --library and --module without documents
        reg = registry()
        return list(reg), [Finding(ContractError(p), "problem") for p in reg.problems()]


def _check(contracts: list[KernelContract], findings: list[Finding]) -> int:
    """`contracts --check`: every finding, then the counts; exit 1 if any is not a warning."""
    for finding in findings:
        print(finding)
    problems = sum(f.fatal for f in findings)
    warned = len(findings) - problems
    tail = f", {plural(warned, 'warning')}" if warned else ""
    print(f"{plural(len(contracts), 'contract')} checked, {plural(problems, 'problem')}{tail}")
    return 1 if problems else 0


def _run_contracts(args: argparse.Namespace) -> int:
    try:
        contracts, findings = _loaded(args)
    except DRAFT_ERRORS as e:
        return fail("contracts", e)
    if args.check:
        return _check(contracts, findings)
    for finding in findings:  # an entry point not linked yet does not matter to a listing
        if finding.fatal:
            print(f"fueltensor contracts: {finding}", file=sys.stderr)
    if any(f.level == "error" for f in findings):
        return 2
    reg = Registry(contracts, {})  # for its provider names and aliases; nothing is called
    try:
        op_kind = _op_kind(args.op, {c.op_kind for c in contracts})
        providers = None if args.provider is None else reg.provider_names(args.provider)
    except ValueError as e:
        return fail("contracts", e)
    selected = [
        c
        for c in contracts
        if (op_kind is None or c.op_kind == op_kind)
        and (providers is None or c.provider.name in providers)
    ]
    if args.json:
        payload = [{"provider": c.provider.name, "blurb": c.blurb, **c.to_dict()} for c in selected]
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    elif not selected:
        print(_nothing_matched(args, op_kind, providers, contracts))
    else:
        rows = [CONTRACT_COLUMNS, *map(_row, selected)]
        optional = ("audited", "layout strategy", "dispatch", "bytes_moved")
        print(fit_table(rows, rule=False, optional=optional))
        unlinked = Counter(c.unlinked for c in selected if c.unlinked)
        for why, count in unlinked.items():
            print(
                fit_lines(
                    f"{plural(count, 'contract')} not registrable here (dispatch: not here): {why}"
                )
            )
    return 0


def _nothing_matched(
    args: argparse.Namespace,
    op_kind: str | None,
    providers: frozenset[str] | None,
    contracts: list[KernelContract],
) -> str:
    """What was asked that nothing matched, and which providers serve that op kind."""
    asked = []
    for flag, given, meant in (("op", args.op, op_kind), ("provider", args.provider, providers)):
        if given is not None:
            named = meant if isinstance(meant, str) or meant is None else ", ".join(sorted(meant))
            asked.append(f"--{flag} {given}" + (f" ({named})" if named != given else ""))
    serving = dict.fromkeys(c.provider.name for c in contracts if c.op_kind == op_kind)
    where = (
        f"{op_kind} contracts come from {', '.join(serving)}"
        if serving
        else f"no contract is at {op_kind}"
    )
    return fit_lines(f"nothing matched: no contract has {' and '.join(asked)}; {where}")


def _op_kind(text: str | None, kinds: set[str]) -> str | None:
    """The op kind `text` names: an operation in any spelling (`add`, `AddElementwise`, `sub`),
    or another op kind the registry's contracts declare; ValueError listing both otherwise."""
    if text is None:
        return None
    op = spelled(text)
    if op is not None:
        return op.op_kind.value
    if text in kinds:
        return text
    names = ", ".join(op.name for op in BINARY_OPS)
    raise ValueError(
        f"unknown operation {text!r}; name one as the namespace does ({names}) or by its op "
        f"kind ({', '.join(sorted(kinds))})"
    )


def _operation(text: str) -> ContractOp:
    """`explain`'s OP argument in any spelling: its row of the op table."""
    op = spelled(text)
    if op is None or op.name not in functions():
        names = ", ".join(functions())
        raise argparse.ArgumentTypeError(f"unknown operation {text!r}; one of {names}")
    return op


def add_contracts(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor contracts`: list the registered kernel contracts."""
    p = sub.add_parser("contracts", help="list the kernel contracts of the registry")
    p.add_argument(
        "--op", metavar="OP", help="only contracts of this operation: add, AddElementwise, ..."
    )
    p.add_argument(
        "--provider", metavar="NAME", help="only this provider (its name or an alias: cpu, ...)"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="lint: report what does not load, cannot work as written (an unknown op_kind) or "
        "is not linked (a warning), each with file:line; exit 1 unless only warnings",
    )
    add_draft_flags(p, "list or --check instead of the installed registry")
    p.add_argument("--json", action="store_true", help="print the contracts' facts as JSON")
    add_wide(p)
    p.set_defaults(run=_run_contracts)


def _shape(text: str) -> tuple[int, ...]:
    """`3,4` -> (3, 4); `()` or an empty string -> a 0-d shape."""
    text = text.strip().strip("()[]")
    try:
        return tuple(int(d) for d in text.split(",") if d.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a shape; write dimensions separated by commas, e.g. 3,4"
        ) from None


def _operand(shape: tuple[int, ...], dtype: str, transpose: bool) -> FuelTensor:
    """A tensor of `shape` (values 1..n); with `transpose`, a transposed view of that shape."""
    if not transpose:
        return asarray(np.arange(1, math.prod(shape) + 1).reshape(shape), dtype=dtype)
    base = _operand(shape[::-1], dtype, False)
    return permute_dims(base, tuple(reversed(range(len(shape)))))


def _target(row: ContractOp, args: argparse.Namespace) -> tuple[tuple[str, ...], dict[str, bool]]:
    """The call's arguments after its operands: a cast's `--to` (and `--saturate`), none for
    the rest; ValueError where they are missing or mean nothing."""
    if row.family is not Family.CAST:
        if args.to or args.saturate:
            raise ValueError(f"{row.name} takes no --to or --saturate (only astype does)")
        return (), {}
    if not args.to:
        raise ValueError(f"{row.name} needs --to DTYPE: the target, e.g. --to float8_e4m3fn")
    return (args.to,), {"saturate": True} if args.saturate else {}


def _run_explain(args: argparse.Namespace) -> int:
    row: ContractOp = args.op
    traits = TRAITS[row.family]
    count = len(traits.operands)
    shapes, dtypes = (
        given if len(given) == count else given * count for given in (args.shapes, args.dtypes)
    )
    if row.family is Family.CONTRACTION and len(args.shapes) == 1:  # a @ its transpose's shape
        shapes = [args.shapes[0], args.shapes[0][::-1]]
    transposed = (args.transpose_lhs, args.transpose_rhs, *(False,) * (count - 2))
    if len(shapes) != count or len(dtypes) != count or any(transposed[count:]):
        print(
            f"fueltensor explain: {row.name} takes {plural(count, 'operand')}: give "
            f"{'one' if count == 1 else f'one or {count}'} --shapes and --dtypes"
            + ("" if count > 1 else ", and no --transpose-rhs"),
            file=sys.stderr,
        )
        return 2
    fixed = dict(traits.fixed)  # a where's condition: bools whatever --dtypes says
    pairs = zip(traits.operands, dtypes, strict=True)
    dtypes = [BY_FKC[fixed[n]].name if n in fixed else d for n, d in pairs]
    try:
        found = draft(args)
        given = zip(shapes, dtypes, transposed[:count], strict=True)
        operands = [_operand(*one) for one in given]
        more, keywords = _target(row, args)
        with (
            use_registry(found.registry) if found else nullcontext(),
            use_backend(args.backend) if args.backend else nullcontext(),
        ):
            plan = explain(functions()[row.name], *operands, *more, **keywords)
    except (*DRAFT_ERRORS, TypeError, ValueError, ProviderUnavailable) as e:
        return fail("explain", e)
    print(fit_lines(str(plan)))
    return 0


def add_explain(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor explain OP`: the plan of one operation on operands you describe."""
    p = sub.add_parser(
        "explain",
        help="show which kernel an operation would run, the steps before it and its cost",
        description="Plan one operation without running it, e.g. "
        "`fueltensor explain add --shapes 3,4 4 --dtypes float32 float16 --transpose-lhs`, "
        "`fueltensor explain astype --dtypes bfloat16 --to float8_e4m3fn --saturate`.",
    )
    p.add_argument(
        "op",
        type=_operation,
        help="the operation: add, subtract, exp, astype, ... or its op kind (AddElementwise, ...)",
    )
    p.add_argument("--to", metavar="DTYPE", help="astype's target dtype, e.g. --to float8_e4m3fn")
    p.add_argument(
        "--saturate",
        action="store_true",
        help="astype's saturating rule: a value beyond the target's range gives its largest "
        "finite value",
    )
    p.add_argument(
        "--shapes",
        nargs="+",
        type=_shape,
        default=[(3, 4)],
        metavar="SHAPE",
        help="operand shapes, e.g. 3,4 4 (one shape serves every operand, a matmul's second its "
        "reverse; default 3,4)",
    )
    p.add_argument(
        "--dtypes",
        nargs="+",
        default=["float32"],
        metavar="DTYPE",
        help="operand dtypes, e.g. float32 float16 (one serves every operand; default float32)",
    )
    p.add_argument(
        "--transpose-lhs",
        action="store_true",
        help="make the first operand a transposed (strided) view of the given shape",
    )
    p.add_argument(
        "--transpose-rhs",
        action="store_true",
        help="make the second operand (of a binary op) a transposed view of the given shape",
    )
    p.add_argument(
        "--backend",
        "--provider",
        dest="backend",
        metavar="NAME",
        help="plan under use_backend(NAME): a provider or alias (cpu, reference), or contracts",
    )
    add_draft_flags(p, "plan with")
    p.set_defaults(run=_run_explain)


def _run_tour(args: argparse.Namespace) -> int:
    from .tools.tour import tour

    print(tour())
    return 0


def add_tour(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor tour`: registry, dispatch and a backend comparison in a few seconds."""
    p = sub.add_parser("tour", help="a few-second tour: registry, dispatch, providers compared")
    add_wide(p)
    p.set_defaults(run=_run_tour)


def _check_progress(stream: TextIO) -> Callable[[float, int, int], None]:
    """A `pow_shortcut.Progress` that draws a bar with the time left on a terminal `stream`,
    and otherwise prints one line per exponent when its check is done."""
    began = time.monotonic()

    def report(y: float, done: int, total: int) -> None:
        if not stream.isatty():
            if done == total:
                print(f"  y={y:g}: all {total} inputs compared", file=stream, flush=True)
            return
        part = (Y_VALUES.index(y) + done / total) / len(Y_VALUES)
        elapsed = time.monotonic() - began
        left = elapsed * (1 - part) / part if part else 0.0
        bar = "#" * round(30 * part)
        end = "\n" if part >= 1 else ""
        print(
            f"\r  [{bar:<30}] {part:4.0%}  y={y:g}  {elapsed:.0f} s, about {left:.0f} s left ",
            end=end,
            file=stream,
            flush=True,
        )

    return report


def _run_pow_shortcut(args: argparse.Namespace) -> int:
    from .kernels import pow_shortcut
    from .kernels._chassis import NATIVE

    on, text = pow_shortcut.status()
    print(fit_lines(f"pow shortcut: {'on' if on else 'off'}: {text}"))
    if not args.check:
        return 0
    if NATIVE is None or not on:
        print("pow shortcut: nothing to check (the vector powf does not run here)", file=sys.stderr)
        return 1
    print(
        "checking every vector pass against this machine's powf for every f32 x, y = "
        f"{' and '.join(f'{y:g}' for y in pow_shortcut.Y_VALUES)} (minutes of CPU)...",
        file=sys.stderr,
    )
    checks = pow_shortcut.check(NATIVE, progress=_check_progress(sys.stderr))
    for c in checks:
        verdict = "equal to powf" if c.proven else f"{c.mismatches} lanes differ from powf"
        first = "" if c.first is None else f", first x bits 0x{c.first:08x}"
        print(
            fit_lines(
                f"pow shortcut y={c.y:g}: {c.inputs} inputs on the {', '.join(c.passes)} "
                f"pass(es): {verdict}{first} ({c.seconds:g} s)"
            )
        )
    return 0 if all(c.proven for c in checks) else 1


def add_pow_shortcut(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor pow-shortcut`: whether f32 pow takes the vector powf here, and its proof."""
    p = sub.add_parser(
        "pow-shortcut",
        help="show whether f32 pow takes the vector powf here (and why), or prove it",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="compare the vector powf with this machine's powf over all 2^32 x for y = 2 and "
        "y = 0.5 now (minutes of CPU; nothing depends on it: a proof to see)",
    )
    p.set_defaults(run=_run_pow_shortcut)


def _version() -> str:
    """The installed distribution's version (pyproject.toml's `version`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fueltensor")
    except PackageNotFoundError:
        return "(not installed: run from a source checkout)"


def build_parser() -> argparse.ArgumentParser:
    """The `fueltensor` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="fueltensor", description="fueltensor: kernel contracts and how they are used"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_contracts(sub)
    add_explain(sub)
    add_tour(sub)
    add_compare(sub)
    add_judge(sub)
    add_pow_shortcut(sub)
    add_semantics(sub)
    add_certify(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the `fueltensor` command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        with table_width(None) if getattr(args, "wide", False) else nullcontext():
            status: int = args.run(args)
    except BrokenPipeError:  # `fueltensor ... | head` closed the pipe: nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return status
