"""`fueltensor certify`: every BF16/F16 operand pair of a provider's contracts against the
correctly rounded result, written as certificates; `--compare A.json B.json` says whether two
certificates hold the same bits, and where not. docs/certificates.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from .cli_audit import DRAFT_ERRORS, KERNEL_FAULTS, add_draft_flags, draft, fail, faulted
from .core.errors import ProviderUnavailable
from .registry import registry

if TYPE_CHECKING:
    from distributed import Client


def _range(text: str, bits: int = 16) -> tuple[int, int]:
    """`START:STOP` of `bits`-bit patterns (hex with 0x, or decimal) as a half-open range;
    refused with the text as given when it is not one, or is empty or beyond 2**bits."""
    try:
        start, stop = (int(part, 0) for part in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a range is START:STOP of {bits}-bit patterns, e.g. 0x3f00:0x3f80"
        ) from None
    if not 0 <= start < stop <= 1 << bits:
        raise argparse.ArgumentTypeError(
            f"{text!r}: START:STOP must hold at least one pattern, START < STOP <= {1 << bits:#x}"
        )
    return start, stop


def _inputs(text: str) -> tuple[int, int]:
    """`--inputs`: `START:STOP` of a unary sweep's input patterns (of up to 32 bits)."""
    return _range(text, 32)


def _compare(paths: list[str]) -> int:
    """Print the comparison of two certificates; exit 0 when they hold the same bits, 1 when
    not, 2 when they certify different things (docs/certificates.md)."""
    from .tools.certify import Certificate, compare

    try:
        a, b = (Certificate.load(p) for p in paths)
    except ValueError as e:
        return fail("certify", e)
    result = compare(a, b)
    print(f"{paths[0]} against {paths[1]}: {result.text()}")
    return 0 if result.same_bits else 2 if result.comparable else 1


def _run(args: argparse.Namespace) -> int:
    """Certify, print each certificate's text, and exit 1 when the judge fails one."""
    if args.compare:
        return _compare(args.compare)
    if args.scheduler:
        return _on_cluster(args)
    return _report(args, None)


def _on_cluster(args: argparse.Namespace) -> int:
    """`--scheduler ADDRESS`: the blocks on the workers of a Dask cluster."""
    try:
        from distributed import Client
    except ImportError:
        return fail(
            "certify", ImportError("--scheduler needs Dask: pip install 'fueltensor[dask]'")
        )
    try:
        # distributed's Client.__init__ carries no annotations
        with Client(args.scheduler, timeout=args.timeout) as client:  # type: ignore[no-untyped-call]
            return _report(args, client)
    except (OSError, TimeoutError) as e:
        return fail("certify", e)


def _report(args: argparse.Namespace, client: Client | None) -> int:
    """Certify (on `client`'s cluster when given) `--provider`'s contracts (by default cpu's, or
    with a draft the provider of its first contract); print each certificate's text, exit 1 when
    the judge fails one, KERNEL_FAULT when a kernel faulted."""
    from .tools.certify import certify

    try:
        found = draft(args)
        reg = found.registry if found else registry()
        provider = args.provider or (reg[found.names[0]].provider.name if found else "cpu")
        certs = certify(
            provider,
            args.kernel,
            lhs=args.lhs,
            rhs=args.rhs,
            threads=args.threads,
            out_dir=args.out,
            state_dir=args.state,
            progress=None,
            reg=reg,
            client=client,
            sample=args.sample,
            seed=args.seed,
            timeout=args.timeout,
            inputs=args.inputs,
        )
    except KERNEL_FAULTS as e:
        return faulted("certify", e)
    except (*DRAFT_ERRORS, KeyError, ValueError, ImportError, ProviderUnavailable) as e:
        return fail("certify", e)
    for cert in certs:
        print(cert.text(), end="\n\n")
        if args.plot and args.out:
            cert.plot().savefig(Path(args.out) / f"{cert.stem}.png")
    return 1 if any(c.data["verdict"] for c in certs) else 0


def _span_flags(p: argparse.ArgumentParser) -> None:
    """`--lhs`, `--rhs` (a binary sweep's operand patterns) and `--inputs` (a unary one's)."""
    p.add_argument("--lhs", type=_range, default=(0, 1 << 16), metavar="START:STOP")
    p.add_argument(
        "--rhs",
        type=_range,
        default=(0, 1 << 16),
        metavar="START:STOP",
        help="restrict the operand patterns (default every one: 2**32 pairs)",
    )
    p.add_argument(
        "--inputs",
        type=_inputs,
        metavar="START:STOP",
        help="restrict a unary contract's input patterns (default every one: 2**16, or 2**32 "
        "for a float32 row the op table sweeps exhaustively)",
    )


def add_certify(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fueltensor certify`: the exhaustive 16-bit sweep, or `--compare`."""
    p = sub.add_parser(
        "certify",
        help="check every BF16/F16 operand pair (every unary input) of a provider against the "
        "correctly rounded result and write certificates (exit 1 if the judge fails one, 3 if "
        "a kernel faults)",
        description="Sweep every BF16/F16 operand pair (or --lhs/--rhs) of a provider's binary "
        "contracts and every input (or --inputs) of its unary ones: each 16-bit dtype's, and "
        "float32's where the op table says so; its casts from float64 on every edge of the "
        "target and a seeded sample; or a draft's with --contracts. Exit status: 0 "
        "the judge accepts every certificate, 1 it fails one, 2 a usage or document error, 3 "
        "if a kernel faults.",
    )
    p.add_argument(
        "--provider", help="the provider (default cpu, or the provider of --contracts' kernels)"
    )
    p.add_argument(
        "--kernel", action="append", metavar="NAME", help="only this contract (repeatable)"
    )
    _span_flags(p)
    p.add_argument("--threads", type=int, help="threads (default every core)")
    p.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="F32/F64 contracts too: every pair of their special values and N random pairs; "
        "a cast from float64 (always certified, on its target's edges): N of each kind its "
        "sample draws (default 65536)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --sample's random inputs")
    p.add_argument("--out", metavar="DIR", help="write each certificate (JSON and text) here")
    p.add_argument("--plot", action="store_true", help="with --out: a PNG per certificate too")
    p.add_argument(
        "--state", metavar="DIR", help="record finished blocks here: a stopped run resumes"
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the blocks on the workers of this Dask cluster (each over its own registry)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="with --scheduler: give up connecting, or waiting for a chunk, after this long",
    )
    p.add_argument(
        "--compare",
        nargs=2,
        metavar=("A.json", "B.json"),
        help="compare two certificates: the same bits, or which blocks differ",
    )
    add_draft_flags(p, "certify (their provider's contracts unless --provider names another)")
    p.set_defaults(run=_run)
