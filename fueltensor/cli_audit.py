"""The kernel author's loop on the command line: the flags that bring a draft provider in
(`--contracts`, `--library`, `--module`, taken by `contracts`, `explain`, `compare` and `judge`),
and the `compare` and `judge` subcommands.

A draft is FKC documents read after the installed ones, linked to the kernels of a shared library
or a Python module named here (`tools.drafts`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import numpy as np

from .core.dtypes import BY_FKC, DType, as_dtype
from .core.errors import (
    ContractError,
    ContractViolation,
    KernelStatusError,
    LibraryError,
    ProviderUnavailable,
)
from .core.tensor import asarray
from .engine.backends import use_registry
from .engine.dispatch import functions
from .families import TRAITS, Family
from .fkc import KernelContract
from .ops import BY_KIND, BY_NAME, ContractOp, OpKind, spelled
from .registry import Registry, registry
from .tools.drafts import Draft, DraftError, Source, load, sources
from .tools.textwidth import fit_lines

DRAFT_ERRORS = (ContractError, DraftError, LibraryError)
"""What a draft that cannot be read or linked raises: each names the file (and line) at fault."""
KERNEL_FAULTS = (ContractViolation, KernelStatusError)
"""What a kernel's fault raises (a checked run's KernelFault is a ContractViolation): each names
the kernel, its document's file:line and the inputs."""
KERNEL_FAULT: Final = 3
"""The exit status of `compare`, `judge` and `certify` when a kernel faulted (wrote outside its
buffers, returned a nonzero status, crashed or ended its process, raised): not "bits differ" (1)
nor a usage or document error (2)."""


def add_wide(p: argparse.ArgumentParser) -> None:
    """The `--wide` flag of the commands that print tables."""
    p.add_argument(
        "--wide",
        action="store_true",
        help="print every column at full width (tables otherwise fit the terminal)",
    )


def add_draft_flags(p: argparse.ArgumentParser, what: str) -> None:
    """`--contracts`, `--library` and `--module`: a draft provider, `what` the command does to
    its documents' contracts."""
    p.add_argument(
        "--contracts",
        nargs="+",
        metavar="PATH",
        help=f"FKC documents (files or directories) to {what}, read after the installed ones",
    )
    p.add_argument(
        "--library",
        action="append",
        default=[],
        metavar="PATH",
        help="a shared library (.so) holding their kernels: entry point NS::NAME is its C symbol "
        "NAME, loaded with ft.load_library (repeatable)",
    )
    p.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="FILE",
        help="a Python file or module holding their kernels: its ENTRY_POINTS map, else its "
        "function NAME for entry point NS::NAME (repeatable; imported because you name it here)",
    )


def draft_sources(args: argparse.Namespace) -> list[Source]:
    """The libraries and modules named; DraftError if one is missing or fails to import, or if
    they are named without documents to link."""
    if (args.library or args.module) and not args.contracts:
        raise DraftError("--library and --module link the documents of --contracts: name them")
    for word in args.contracts or ():
        if not Path(word).exists() and not Path(word).suffix:  # `--contracts doc.md maximum`
            raise DraftError(
                f"--contracts {word}: no such document; --contracts takes every word up to the "
                f"next option, so name operations and providers before it (fueltensor "
                f"{args.command} {word} --contracts ...)"
            )
    return sources(args.library, args.module)


def draft(args: argparse.Namespace) -> Draft | None:
    """The draft the flags name, linked beside the installed registry (None without
    `--contracts`); one of `DRAFT_ERRORS` at the first fault."""
    found = draft_sources(args)
    return load(args.contracts, found) if args.contracts else None


def fail(command: str, e: Exception) -> int:
    """Print `fueltensor COMMAND: why` on stderr; exit status 2 (a usage or document error)."""
    print(f"fueltensor {command}: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
    return 2


def faulted(command: str, e: Exception) -> int:
    """Print a kernel's fault on stderr in a few lines, `fueltensor COMMAND: kernel K (file:line)
    ...`, then the buffer and bytes and the inputs; exit status KERNEL_FAULT."""
    from .tools.checked import KernelFault

    if isinstance(e, KernelFault):
        f = e.finding
        lines = [f"kernel {f.kernel} ({f.source}): {f.kind}: {f.detail}"]
        if f.buffer is not None:
            span = "" if f.offsets is None else f", bytes {f.offsets[0]}..{f.offsets[1]}"
            lines.append(f"  buffer {f.buffer}{span}")
        lines.append(f"  inputs {f.inputs}")
    else:
        lines = [str(e)]
    print(fit_lines(f"fueltensor {command}: " + "\n".join(lines)), file=sys.stderr)
    return KERNEL_FAULT


Keyword = tuple[str, bool | int | None]
Case = tuple[str, DType, tuple[DType, ...], tuple[Keyword, ...]]
"""One comparison call: operation, operand dtype, the arguments after the operands (a cast's
target) and its keywords (a cast's `saturate`, a reduction's `axis`)."""
REDUCED: Final[tuple[int | None, ...]] = (None, -1)
"""The axes a reduction is compared over: every axis (one output of every element, the order's
whole tree) and the last (one output per row)."""


def _calls_of(c: KernelContract) -> list[tuple[tuple[DType, ...], tuple[Keyword, ...]]]:
    """What calls must pass after their operands to reach `c`: a cast's target dtype and its
    overflow rule (`saturate`); a reduction's axis, each of `REDUCED`; nothing for the other
    families."""
    from .tools.judge import casts  # the judge's reading of a cast contract

    if BY_KIND[c.op_kind].family is Family.REDUCTION:
        return [((), (("axis", axis),)) for axis in REDUCED]
    if not casts.is_cast(c.op_kind):
        return [((), ())]
    saturate = casts.declared_rule(c)[0]
    return [((BY_FKC[c.outputs[0].dtype_rule.args[0]],), (("saturate", True),) * saturate)]


def _cases(contracts: list[KernelContract], ops: list[str], dtypes: list[str]) -> Iterator[Case]:
    """Each call once, read from the contracts: every operation they serve at every dtype
    their first input takes (a cast at each target and rule too, a reduction over each of
    `REDUCED`), narrowed to `ops` and `dtypes` when given. A contract of other parameters
    (a power's integer exponent) is not compared here."""
    from .tools.judge.calls import audited_dtypes  # the judge's dtypes of a contract

    wanted = {as_dtype(d) for d in dtypes}
    seen: set[Case] = set()
    for c in contracts:
        op = BY_KIND.get(c.op_kind)
        if op is None or op.name not in functions() or (ops and op.name not in ops):
            continue
        if c.params and op.family is not Family.REDUCTION:
            continue
        for fkc in audited_dtypes(c):
            for more, keywords in _calls_of(c):
                case = (op.name, BY_FKC[fkc], more, keywords)
                if case not in seen and (not wanted or case[1] in wanted):
                    seen.add(case)
                    yield case


def reduced(row: ContractOp, size: int, rng: np.random.Generator) -> np.ndarray:
    """A reduction's input for `compare`, in float64: 8 rows of size/8 values (two and more of
    the CPU contracts' blocks each): of both signs and magnitudes 2^-4 .. 2^4, where sums
    cancel; for a product, within 2^-6 of ±1, so a row's product neither overflows nor
    underflows and its ULP differences show."""
    shape = (8, max(1, size // 8))
    sign = rng.choice([-1.0, 1.0], shape)
    if row.op_kind is OpKind.PROD:
        return sign * (1 + rng.uniform(-(2.0**-6), 2.0**-6, shape))
    return sign * np.exp2(rng.uniform(-4, 4, shape))


def contracted(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A matmul's operands for `compare`, in float64: (8, k) @ (k, 6) with k = size/48 (about
    `size` products), values of both signs and magnitudes 2^-4 .. 2^4, where the dot products
    cancel and an accumulation order shows in the bits."""
    k = max(1, size // 48)
    a, b = (rng.choice([-1.0, 1.0], s) * np.exp2(rng.uniform(-4, 4, s)) for s in ((8, k), (k, 6)))
    return a, b


def _split_names(reg: Registry, names: list[str]) -> tuple[list[str], list[str]]:
    """`compare`'s words sorted into operations (any spelling) and providers (a name or alias
    of `reg`); ValueError naming both kinds for a word that is neither."""
    ops, providers = [], []
    for name in names:
        op = spelled(name)
        if op is not None:
            ops.append(op.name)
            continue
        try:
            reg.provider_names(name)
        except ValueError as e:
            known = ", ".join(functions())
            raise ValueError(
                f"{name!r} is neither an operation ({known}) nor a provider: {e}"
            ) from None
        providers.append(name)
    return ops, providers


def _run_compare(args: argparse.Namespace) -> int:
    from .tools.compare import compare_backends
    from .tools.judge import probes
    from .tools.judge.calls import as_operands

    try:
        found = draft(args)
        reg = found.registry if found else registry()
        chosen = [reg[n] for n in found.names] if found else [c for c in reg if c.registrable]
        ops, providers = _split_names(reg, args.names)
        cases = list(_cases(chosen, ops, args.dtypes))
        if not cases:
            raise ValueError("no contract of an operation matched: nothing to compare")
        rng = np.random.default_rng(args.seed)
        with use_registry(reg), compare_backends(*providers, *args.provider) as report:
            for op, dtype, more, keywords in cases:
                row = BY_NAME[op]
                if row.family is Family.REDUCTION:
                    columns: tuple[np.ndarray, ...] = (reduced(row, args.size, rng),)
                elif row.family is Family.CONTRACTION:
                    columns = contracted(args.size, rng)
                else:
                    columns = probes(dtype.np, args.size, rng, len(TRAITS[row.family].operands))
                operands = map(asarray, as_operands(row.op_kind, columns, dtype.np))
                functions()[op](*operands, *more, **dict(keywords))
    except KERNEL_FAULTS as e:
        return faulted("compare", e)
    except (*DRAFT_ERRORS, KeyError, ValueError, TypeError, ProviderUnavailable) as e:
        return fail("compare", e)
    print(report)
    try:
        report.assert_equal(args.max_ulp)
    except AssertionError as e:  # the worst element of each pair of kernels that differ
        print(fit_lines(str(e)))
        return 1
    return 0


def add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor compare`: the kernels of several providers on the same inputs, bit for bit."""
    p = sub.add_parser(
        "compare",
        help="run operations on every provider that joins dispatch, and those named, and diff the "
        "bits (exit 1 if any differ, 3 if a kernel faults)",
        description="Run each operation the contracts serve (a draft's, with --contracts) on "
        "every pair of special values plus random bit patterns, under compare_backends, e.g. "
        "`fueltensor compare maximum cpu my-c-max --contracts my-max.md --library ./libmymax.so`. "
        "Providers whose documents say `dispatch: when_named` (the frameworks) join only when "
        "named. Exit status: 0 the "
        "bits agree, 1 they differ, 2 a usage or document error, 3 if a kernel faults (wrote "
        "outside its buffers, returned a nonzero status, crashed or ended its process).",
    )
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="only these operations (add, maximum, ...) and providers (cpu, my-provider, ...); "
        "default: every operation the contracts serve, on every provider that joins dispatch "
        "(not the frameworks, which join only when named)",
    )
    p.add_argument(
        "--provider",
        "--providers",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME",
        help="compare only these providers (a name or alias; default: every provider that "
        "joins dispatch; a `dispatch: when_named` one only when named)",
    )
    p.add_argument(
        "--dtypes", nargs="+", default=[], metavar="DTYPE", help="only these dtypes (float32 ...)"
    )
    p.add_argument(
        "--size", type=int, default=4096, help="random operand pairs besides the special values"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random bit patterns")
    p.add_argument(
        "--max-ulp",
        type=float,
        default=0.0,
        metavar="ULP",
        help="tolerated difference (default 0: bit for bit, NaN payloads included)",
    )
    add_draft_flags(p, "compare")
    add_wide(p)
    p.set_defaults(run=_run_compare)


def _judge_certificates(paths: list[str], reg: Registry) -> int:
    """`fueltensor judge --certificate PATH`: each certificate read against the contract of its
    name in `reg` (`certify.verdict`), its line saying the pairs it covers and the claims it
    checked; exit 1 when one contradicts its contract, 2 when one is malformed or names no
    contract of `reg`."""
    from .tools.certify import Certificate, binary_identity, claims, verdict
    from .tools.certify.certificate import coverage, scope

    failed = False
    for path in paths:
        try:
            cert = Certificate.load(path)
            contract = reg[cert.name]
        except (ValueError, KeyError) as e:
            return fail("judge", e)
        found = verdict(cert, contract, binary_identity(contract, reg))
        failed |= bool(found)
        print(
            f"{'FAIL' if found else 'ok'} {cert.name} ({cert.data['dtype']}) by {path}: "
            f"{coverage(cert.data)}; {scope(*claims(cert, contract))}"
            + "".join(f"\n  {f}" for f in found)
        )
    return 1 if failed else 0


def _run_judge(args: argparse.Namespace) -> int:
    from .tools.judge import judge, write_outputs

    if args.scheduler and not args.certificate:
        if args.contracts:
            return fail(
                "judge",
                ValueError(
                    "--scheduler audits each worker's own registry; --contracts is for a local "
                    "audit"
                ),
            )
        return _judge_cluster(args)
    try:
        found = draft(args)
        reg: Registry = found.registry if found else registry()
        if args.certificate:
            return _judge_certificates(args.certificate, reg)
        kernels = args.kernel or (list(found.names) if found else None)
        report = judge(reg, kernels, quick=args.quick, provider=args.provider)
    except (*DRAFT_ERRORS, KeyError, ValueError, ProviderUnavailable) as e:
        return fail("judge", e)
    print(report)
    write_outputs(report, args.json, args.markdown)
    if any(a.faulted for a in report.rows):
        return KERNEL_FAULT
    return 0 if report.ok else 1


def _judge_cluster(args: argparse.Namespace) -> int:
    """`fueltensor judge --scheduler ADDRESS`: the audit on one worker per host of a Dask
    cluster, the machines compared."""
    from .tools.judge import judge, write_outputs

    try:
        from distributed import Client
    except ImportError:
        return fail("judge", ImportError("--scheduler needs Dask: pip install 'fueltensor[dask]'"))
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
        return fail("judge", e)
    print(report)
    write_outputs(report, args.json, args.markdown)
    return 0 if report.ok else 1


def add_judge(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor judge`: audit determinism, precision, conformance and cost of the kernels."""
    p = sub.add_parser(
        "judge",
        help="audit every registrable contract against its kernel (exit 1 if a bound breaks, "
        "3 if a kernel faults)",
        description="Audit determinism, precision, conformance and cost. Exit status: 0 every "
        "audit passes, 1 a declared bound breaks, 2 a usage or document error, 3 if a kernel "
        "faults (raised, wrote outside its buffers, returned a nonzero status, crashed).",
    )
    p.add_argument("--quick", action="store_true", help="smaller probes (well under a minute)")
    p.add_argument(
        "--kernel", action="append", metavar="NAME", help="audit only this contract (repeatable)"
    )
    p.add_argument(
        "--provider", metavar="NAME", help="audit this provider's contracts (numpy, torch, jax)"
    )
    add_draft_flags(p, "audit (only theirs unless --kernel names others)")
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
    p.add_argument(
        "--certificate",
        action="append",
        metavar="PATH",
        help="read a certificate of `fueltensor certify` against its contract (repeatable)",
    )
    p.add_argument("--json", metavar="PATH", help="also write the findings as JSON")
    p.add_argument("--markdown", metavar="PATH", help="also write the table as Markdown")
    add_wide(p)
    p.set_defaults(run=_run_judge)
