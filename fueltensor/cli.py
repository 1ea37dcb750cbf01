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
from collections.abc import Callable
from contextlib import nullcontext
from typing import TextIO

import numpy as np

from .array_api.manipulation import permute_dims
from .core.errors import ContractError, ContractWarning, plural
from .core.tensor import FuelTensor, asarray
from .engine.backends import use_backend
from .engine.dispatch import OPERATIONS, explain
from .fkc import KernelContract
from .kernels.pow_shortcut import Y_VALUES
from .ops import CONTRACT_OPS, spelled
from .registry import Registry, registry
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
        "yes" if c.registrable else "describe-only",
    )


def _run_contracts(args: argparse.Namespace) -> int:
    try:
        with warnings.catch_warnings():  # --check reports the same problems on stdout
            warnings.simplefilter("ignore" if args.check else "default", ContractWarning)
            reg = Registry.from_paths(args.contracts) if args.contracts else registry()
    except ContractError as e:
        print(f"fueltensor contracts: {e}", file=sys.stderr)
        return 1 if args.check else 2
    if args.check:
        problems = reg.problems()
        for problem in problems:
            print(problem)
        print(f"{plural(len(reg), 'contract')} checked, {plural(len(problems), 'problem')}")
        return 1 if problems else 0
    contracts = list(reg)
    providers = None
    try:
        op_kind = _op_kind(args.op, {c.op_kind for c in contracts})
        if args.provider is not None:
            providers = reg.provider_names(args.provider)
    except ValueError as e:
        print(f"fueltensor contracts: {e}", file=sys.stderr)
        return 2
    selected = [
        c
        for c in contracts
        if (op_kind is None or c.op_kind == op_kind)
        and (providers is None or c.provider.name in providers)
    ]
    if args.json:
        payload = [{"provider": c.provider.name, "blurb": c.blurb, **c.to_dict()} for c in selected]
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        rows = [CONTRACT_COLUMNS, *map(_row, selected)]
        optional = ("audited", "layout strategy", "dispatch", "bytes_moved")
        print(fit_table(rows, rule=False, optional=optional))
    return 0


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
    names = ", ".join(op.name for op in CONTRACT_OPS)
    raise ValueError(
        f"unknown operation {text!r}; name one as the namespace does ({names}) or by its op "
        f"kind ({', '.join(sorted(kinds))})"
    )


def _operation(text: str) -> str:
    """`explain`'s OP argument in any spelling, as the namespace names it."""
    op = spelled(text)
    if op is None:
        names = ", ".join(o.name for o in CONTRACT_OPS)
        raise argparse.ArgumentTypeError(f"unknown operation {text!r}; one of {names}")
    return op.name


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
        help="report contracts that load but cannot work (e.g. an unknown op_kind); exit 1 if any",
    )
    p.add_argument(
        "--contracts",
        nargs="+",
        metavar="PATH",
        help="read these FKC documents (files or directories) instead of the bundled registry",
    )
    p.add_argument("--json", action="store_true", help="print the contracts' facts as JSON")
    _add_wide(p)
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


def _run_explain(args: argparse.Namespace) -> int:
    shapes = args.shapes if len(args.shapes) == 2 else args.shapes * 2
    dtypes = args.dtypes if len(args.dtypes) == 2 else args.dtypes * 2
    if len(shapes) != 2 or len(dtypes) != 2:
        print(
            "fueltensor explain: give one or two --shapes and one or two --dtypes", file=sys.stderr
        )
        return 2
    try:
        lhs = _operand(shapes[0], dtypes[0], args.transpose_lhs)
        rhs = _operand(shapes[1], dtypes[1], args.transpose_rhs)
        with use_backend(args.backend) if args.backend else nullcontext():
            plan = explain(OPERATIONS[args.op], lhs, rhs)
    except (TypeError, ValueError) as e:
        print(f"fueltensor explain: {e}", file=sys.stderr)
        return 2
    print(fit_lines(str(plan)))
    return 0


def add_explain(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor explain OP`: the plan of one operation on operands you describe."""
    p = sub.add_parser(
        "explain",
        help="show which kernel an operation would run, the steps before it and its cost",
        description="Plan one operation without running it, e.g. "
        "`fueltensor explain add --shapes 3,4 4 --dtypes float32 float16 --transpose-lhs`.",
    )
    p.add_argument(
        "op",
        type=_operation,
        help="the operation: add, subtract, ... or its op kind (AddElementwise, ...)",
    )
    p.add_argument(
        "--shapes",
        nargs="+",
        type=_shape,
        default=[(3, 4)],
        metavar="SHAPE",
        help="operand shapes, e.g. 3,4 4 (one shape serves both; default 3,4)",
    )
    p.add_argument(
        "--dtypes",
        nargs="+",
        default=["float32"],
        metavar="DTYPE",
        help="operand dtypes, e.g. float32 float16 (one serves both; default float32)",
    )
    p.add_argument(
        "--transpose-lhs",
        action="store_true",
        help="make lhs a transposed (strided) view of the given shape",
    )
    p.add_argument(
        "--transpose-rhs",
        action="store_true",
        help="make rhs a transposed (strided) view of the given shape",
    )
    p.add_argument(
        "--backend",
        metavar="NAME",
        help="plan under use_backend(NAME): a provider or alias (cpu, reference), or contracts",
    )
    p.set_defaults(run=_run_explain)


def _run_tour(args: argparse.Namespace) -> int:
    from .tools.tour import tour

    print(tour())
    return 0


def add_tour(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor tour`: registry, dispatch and a backend comparison in a few seconds."""
    p = sub.add_parser("tour", help="a few-second tour: registry, dispatch, providers compared")
    _add_wide(p)
    p.set_defaults(run=_run_tour)


def _run_judge(args: argparse.Namespace) -> int:
    from .tools.judge import judge, write_outputs

    if args.scheduler:
        if args.contracts:
            print(
                "fueltensor judge: --scheduler audits each worker's own registry; "
                "--contracts is for a local audit",
                file=sys.stderr,
            )
            return 2
        return _judge_cluster(args)
    try:
        reg = Registry.from_paths(args.contracts) if args.contracts else registry()
        report = judge(reg, args.kernel, quick=args.quick)
    except (KeyError, ValueError, ContractError) as e:
        print(f"fueltensor judge: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2
    print(report)
    write_outputs(report, args.json, args.markdown)
    return 0 if report.ok else 1


def _judge_cluster(args: argparse.Namespace) -> int:
    """`fueltensor judge --scheduler ADDRESS`: the audit on one worker per host of a Dask
    cluster, the machines compared."""
    from .tools.judge import judge, write_outputs

    try:
        from distributed import Client
    except ImportError:
        print(
            "fueltensor judge: --scheduler needs Dask: pip install 'fueltensor[dask]'",
            file=sys.stderr,
        )
        return 2
    try:
        # distributed's Client.__init__ carries no annotations
        with Client(args.scheduler, timeout=args.timeout) as client:  # type: ignore[no-untyped-call]
            report = judge(
                kernels=args.kernel,
                quick=args.quick,
                client=client,
                every_worker=args.every_worker,
                timeout=args.timeout,
            )
    except (KeyError, ValueError, RuntimeError, OSError, TimeoutError) as e:
        print(f"fueltensor judge: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2
    print(report)
    write_outputs(report, args.json, args.markdown)
    return 0 if report.ok else 1


def add_judge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor judge`: audit determinism, precision, conformance and cost of the kernels."""
    p = sub.add_parser(
        "judge",
        help="audit every registrable contract against its kernel (exit 1 if a bound breaks)",
    )
    p.add_argument("--quick", action="store_true", help="smaller probes (well under a minute)")
    p.add_argument(
        "--kernel", action="append", metavar="NAME", help="audit only this contract (repeatable)"
    )
    p.add_argument(
        "--contracts",
        nargs="+",
        metavar="PATH",
        help="audit these FKC documents instead of the bundled registry",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the audit on one worker per host of this Dask cluster and compare the machines",
    )
    p.add_argument(
        "--every-worker",
        action="store_true",
        help="with --scheduler: audit on every worker, not one per host",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="with --scheduler: give up connecting or waiting after this long (default 600)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the findings as JSON")
    p.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    _add_wide(p)
    p.set_defaults(run=_run_judge)


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


def _add_wide(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wide",
        action="store_true",
        help="print every column at full width (tables otherwise fit the terminal)",
    )


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
    add_judge(sub)
    add_pow_shortcut(sub)
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
