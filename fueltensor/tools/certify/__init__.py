"""`fueltensor certify` / `ft.certify(...)`: every operand pair of every BF16/F16 contract of a
provider, checked against the correctly rounded result, written down as a certificate.

For a 16-bit dtype there are 2**32 operand pairs per binary op: few enough to run them all, so
a provider's kernel is proven on every input rather than sampled. `sweep` runs the pairs in
blocks through the kernel (as dispatch calls it) and the compiled tally (`fueltensor.ext.
_certify`), on every core, resumable from a state file; `certificate` writes what the sweep
established (histogram, maximum and its first pair, agreement with the contract's formula,
special-value outcomes, digest, machine) and compares two certificates; `verdict` is the
judge's reading of a certificate against the contract it certifies. docs/certificates.md.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

import ml_dtypes
import numpy as np

from fueltensor.engine.backends import current_policy
from fueltensor.families import Family
from fueltensor.fingerprint import machine
from fueltensor.fkc.schema import KernelContract
from fueltensor.ops import BY_KIND
from fueltensor.registry import Registry, provider_environment, require
from fueltensor.testing import float_format
from fueltensor.tools import exact_pow
from fueltensor.tools.certify.binary import binary_identity, effective_revision
from fueltensor.tools.certify.cast_edges import F64CastJob, f64_cast_data, f64_cast_jobs
from fueltensor.tools.certify.casts import CastJob, cast_data, cast_jobs
from fueltensor.tools.certify.certificate import KIND, VERSION, Certificate, build, pair
from fueltensor.tools.certify.cluster import sweep_cluster
from fueltensor.tools.certify.compare import compare
from fueltensor.tools.certify.fp8 import WIDTH, fp8_certificate, fp8_jobs, is_fp8
from fueltensor.tools.certify.sampled import WIDE, sampled_data
from fueltensor.tools.certify.sweep import FULL, HALVES, Job, Span, Sweep, Sweepable, jobs, sweep
from fueltensor.tools.certify.tally import core
from fueltensor.tools.certify.unary import UnaryJob, unary_certificate, unary_jobs
from fueltensor.tools.certify.verdict import claims, record_verdict, verdict

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "Certificate",
    "Span",
    "binary_identity",
    "certify",
    "claims",
    "compare",
    "jobs",
    "verdict",
]


def _identity(c: KernelContract, binary: dict[str, Any]) -> dict[str, object]:
    """The contract as a certificate names it (its revision the effective one, which folds in
    a loaded library's SHA-256)."""
    return {
        "name": c.name,
        "dtypes": list(dict.fromkeys(c.inputs[0].dtypes)),
        "provider": c.provider.name,
        "op_kind": c.op_kind,
        "entry_point": c.entry_point,
        "kernel_revision_hash": effective_revision(c, binary),
        "declared_max_ulp": c.precision.max_ulp,
        "semantics": c.semantics.to_dict() if c.semantics is not None else None,
    }


def _versions(c: KernelContract) -> dict[str, str]:
    """The library versions the bits may depend on (the provider's framework too)."""
    found = {
        "fueltensor": importlib.metadata.version("fueltensor"),
        "numpy": np.__version__,
        "ml_dtypes": ml_dtypes.__version__,
    }
    env = provider_environment(c.provider.name)
    if env is not None:
        found[c.provider.name] = str(env)
    return found


def _first(job: Job, stats_pair: tuple[int, int]) -> dict[str, object] | None:
    """A first pair with the kernel's result and the correctly rounded one (None: no pair).
    The result is read from a call over the pair's whole row of the span, as the sweep made
    it: a framework may take another path for one element (PyTorch's bf16 remainder gives 0
    alone where its vector loop gave NaN)."""
    lhs, rhs = stats_pair
    if lhs < 0:
        return None
    row = job.operands((lhs, lhs + 1))
    got = int(job.run(*row)[rhs - job.span.rhs[0]])
    a, b = np.array([lhs], np.uint16), np.array([rhs], np.uint16)
    exact, formula = np.empty(1, np.uint16), np.empty(1, np.uint16)
    fmt = float_format(job.dtype)
    if core().references(job.op, fmt.exponent, fmt.mantissa, a, b, exact, formula):
        x, y = (v.view(job.dtype.np).astype(np.float64) for v in (a, b))
        exact = exact_pow.correctly_rounded(x, y, fmt).view(np.uint16)
    return pair(job.dtype.name, lhs, rhs, got, int(exact[0]))


def certificate(job: Job, result: Sweep) -> Certificate:
    """The certificate of a finished sweep."""
    s = {n: int(v) for n, v in zip(core().STATS, result.stats, strict=False)}
    span = {
        "lhs": list(job.span.lhs),
        "rhs": list(job.span.rhs),
        "pairs": job.span.pairs,
        "exhaustive": job.span.exhaustive,
    }
    extras = {
        "max_pair": _first(job, (s["max_lhs"], s["max_rhs"])),
        "digest": result.digest,
        "block_digests": [d[:16] for d in result.block_digests],
        "machine": machine().to_dict(),
        "versions": _versions(job.contract),
        "seconds": result.seconds,
        "threads": result.threads,
    }
    cert = build(_identity(job.contract, job.binary), job.dtype.name, span, result.stats, extras)
    cert.data["binary"] = job.binary
    cert.data["formula"]["first"] = _first(job, (s["formula_lhs"], s["formula_rhs"]))
    cert.data["reference"]["decided_by_mpfr"] = result.decided
    row = BY_KIND[job.contract.op_kind]
    if row.formula_op is not None and core().OPS[job.op] == row.kernel_op:
        # swept as the row's own kernels, not the seeds' formula: its formula is the exact value
        cert.data["reference"]["formula"] = f"{row.summary} exactly, rounded once"
    record_verdict(cert, job.contract, job.binary)
    return cert


def certify(
    provider: str = "cpu",
    kernels: Iterable[str] | None = None,
    *,
    lhs: tuple[int, int] = FULL,
    rhs: tuple[int, int] = FULL,
    threads: int | None = None,
    out_dir: str | Path | None = None,
    state_dir: str | Path | None = None,
    progress: bool | TextIO | None = None,
    reg: Registry | None = None,
    client: Client | None = None,
    timeout: float | None = None,
    sample: int = 0,
    seed: int = 0,
    inputs: tuple[int, int] | None = None,
) -> list[Certificate]:
    """Certify every BF16/F16 binary contract of `provider` (or the named `kernels`) over the
    operand patterns lhs x rhs (default every pair, 2**32), on `threads` threads (default all
    cores); each certificate is written to `out_dir` when given (JSON and text), and each
    sweep's finished blocks to `state_dir`, so a stopped run resumes. `progress`: True, a
    stream, or None (stderr when it is a terminal). With a Dask `client`, the blocks run on
    the cluster's workers, over each worker's own registry (`certify.cluster`); `timeout`
    bounds the wait for each chunk. With `sample` > 0, the F32/F64 contracts too: every pair of
    their special values and `sample` seeded random pairs (`certify.sampled`). The unary
    contracts are swept on every input (`certify.unary`): each 16-bit dtype's, and float32's
    where the op table says so (2**32), or the input patterns `inputs` alone; a cast from
    float64 on its target's edges and a sample of `sample` (0: `cast_edges.SAMPLE`) from `seed`
    (`certify.cast_edges`), where no `inputs` are asked. The FP8 binary
    contracts are swept on every one of their 2**16 pairs (`certify.fp8`), here, not on a
    cluster: their lhs x rhs within 0..256 (the 16-bit default: all)."""
    reg = reg if reg is not None else current_policy().registry
    stream, n = _stream(progress), threads or os.cpu_count() or 1
    named = list(kernels) if kernels is not None else None
    chosen = {f: [k for k in named or () if _family(reg, k) is f] for f in ONE_INPUT}
    binary = [k for k in named or () if all(k not in c for c in chosen.values())]
    fp8 = [k for k in binary if k in reg and is_fp8(reg[k])]
    binary = [k for k in binary if k not in fp8]
    found = []
    at = _fp8_span(lhs, rhs, required=bool(fp8))
    if (named is None and at is not None) or fp8:
        assert at is not None
        found += _fp8(reg, provider, fp8 if named else None, at, n, (out_dir, state_dir), stream)
    if named is None or binary:
        sweep_at = (Span(lhs, rhs), n, sample, seed)
        found += _binary(
            reg, provider, binary if named else None, sweep_at, (out_dir, state_dir), stream,
            client, timeout,
        )  # fmt: skip
    for family, these in chosen.items():
        if named is None or these:
            found += _every_input(
                family, reg, provider, these if named else None, inputs, n, (out_dir, state_dir),
                stream, (sample, seed),
            )  # fmt: skip
    return found


ONE_INPUT: Final = (Family.UNARY, Family.CAST)
"""The families swept input by input (`_every_input`)."""


def _family(reg: Registry, name: str) -> Family | None:
    """The family of contract `name` of `reg` (None: an op kind outside the table)."""
    row = BY_KIND.get(reg[name].op_kind)
    return row.family if row is not None else None


def _every_input(
    family: Family,
    reg: Registry,
    provider: str,
    kernels: list[str] | None,
    inputs: tuple[int, int] | None,
    threads: int,
    dirs: tuple[str | Path | None, str | Path | None],
    stream: TextIO | None,
    sampled: tuple[int, int],
) -> list[Certificate]:
    """The certificates of `provider`'s contracts of a one-input family (or the named ones),
    every input: the unary functions' (`certify.unary`), the casts' (`certify.casts`); a cast
    from float64, its target's edges and a sample of (size, seed) `sampled`
    (`certify.cast_edges`), where no range of `inputs` is asked. `dirs`: where certificates and
    sweep states go (None: not written)."""
    out_dir, state_dir = dirs
    names = reg.provider_names(provider)
    require(names)
    wanted = set(kernels) if kernels is not None else None
    todo: list[UnaryJob] | list[CastJob]
    edged: list[F64CastJob] = []
    if family is Family.UNARY:
        todo = unary_jobs(reg, names, wanted, inputs)
    else:
        todo = cast_jobs(reg, names, wanted, inputs)
        edged = f64_cast_jobs(reg, names, wanted) if inputs is None else []
    missing = sorted((wanted or set()) - {j.contract.name for j in [*todo, *edged]})
    if missing:
        what = "16-bit or exhaustive F32 unary" if family is Family.UNARY else str(family)
        raise ValueError(f"no {what} contract of {provider} named {missing}")
    found = []
    for job in todo:
        result = sweep(job, threads, _state(state_dir, job), stream)
        if isinstance(job, CastJob):
            cert = Certificate({**cast_data(job, result), **_extras(job)})
        else:
            cert = unary_certificate(job, result, _extras(job))
        found.append(_judged(cert, job, out_dir))
    for edge_job in edged:
        data = f64_cast_data(edge_job, *sampled)
        found.append(_judged(Certificate({**data, **_extras(edge_job)}), edge_job, out_dir))
    return found


def _extras(job: UnaryJob | CastJob | F64CastJob) -> dict[str, Any]:
    """A one-input certificate's fields of where it ran: the contract, the binary, the machine
    and the versions."""
    return {
        "contract": _identity(job.contract, job.binary),
        "binary": job.binary,
        "machine": machine().to_dict(),
        "versions": _versions(job.contract),
    }


def _judged(
    cert: Certificate, job: UnaryJob | CastJob | F64CastJob, out_dir: str | Path | None
) -> Certificate:
    """`cert` with the judge's verdict against its job's contract, written to `out_dir`."""
    record_verdict(cert, job.contract, job.binary)
    _save(cert, out_dir)
    return cert


def _fp8_span(lhs: tuple[int, int], rhs: tuple[int, int], required: bool) -> Span | None:
    """The span of an FP8 sweep: every 8-bit pair where the 16-bit default was asked for, else
    the ranges given; beyond the 8-bit patterns, None (ValueError where FP8 kernels were named:
    `required`)."""
    every = (0, 1 << WIDTH)
    try:
        return Span(every if lhs == FULL else lhs, every if rhs == FULL else rhs, WIDTH)
    except ValueError:
        if required:
            raise
        return None


def _fp8(
    reg: Registry,
    provider: str,
    kernels: list[str] | None,
    span: Span,
    threads: int,
    dirs: tuple[str | Path | None, str | Path | None],
    stream: TextIO | None,
) -> list[Certificate]:
    """The certificates of `provider`'s FP8 binary contracts (or the named ones): every pair of
    `span` against the judge's reference (`certify.fp8`)."""
    out_dir, state_dir = dirs
    names = reg.provider_names(provider)
    require(names)
    todo = fp8_jobs(reg, set(names), set(kernels) if kernels is not None else None, span)
    missing = sorted(set(kernels or ()) - {j.contract.name for j in todo})
    if missing:
        raise ValueError(f"no FP8 binary contract of {provider} named {missing}")
    found = []
    for job in todo:
        result = sweep(job, threads, _state(state_dir, job), stream)
        extras = {"binary": job.binary, "machine": machine().to_dict()}
        extras["versions"] = _versions(job.contract)
        cert = fp8_certificate(job, result, _identity(job.contract, job.binary), extras)
        record_verdict(cert, job.contract, job.binary)
        _save(cert, out_dir)
        found.append(cert)
    return found


def _save(cert: Certificate, out_dir: str | Path | None) -> None:
    """Write `cert` (JSON and text) to `out_dir`, when given."""
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        cert.save(Path(out_dir) / f"{cert.stem}.json")


def _binary(
    reg: Registry,
    provider: str,
    kernels: list[str] | None,
    sweep_at: tuple[Span, int, int, int],
    dirs: tuple[str | Path | None, str | Path | None],
    stream: TextIO | None,
    client: Client | None,
    timeout: float | None,
) -> list[Certificate]:
    """The certificates of `provider`'s binary contracts (or the named ones): `certify`'s.
    `sweep_at`: the span, threads, sample and seed; `dirs`: certificates' and states' folders."""
    span, n, sample, seed = sweep_at
    out_dir, state_dir = dirs
    found = []
    for job in jobs(reg, provider, kernels, span, HALVES + (WIDE if sample else ())):
        if job.dtype.fkc in WIDE:
            found.append(_sampled(job, sample, seed, out_dir))
            continue
        if client is not None:
            result, machines = sweep_cluster(client, job, timeout)
        else:
            result, machines = sweep(job, n, _state(state_dir, job), stream), []
        cert = certificate(job, result)
        if machines:
            cert.data["machine"] = machines[0] if len(machines) == 1 else machines
        _save(cert, out_dir)
        found.append(cert)
    return found


def _sampled(job: Job, sample: int, seed: int, out_dir: str | Path | None) -> Certificate:
    """The certificate of an F32/F64 job: special classes exhaustively, the rest sampled."""
    start = time.perf_counter()
    data = {
        "kind": KIND,
        "version": VERSION,
        "contract": _identity(job.contract, job.binary),
        "binary": job.binary,
        "dtype": job.dtype.name,
        **sampled_data(job, sample, seed),
        "machine": machine().to_dict(),
        "versions": _versions(job.contract),
        "threads": 1,
    }
    data["seconds"] = time.perf_counter() - start
    cert = Certificate(data)
    record_verdict(cert, job.contract, job.binary)
    _save(cert, out_dir)
    return cert


def _stream(progress: bool | TextIO | None) -> TextIO | None:
    """Where the progress line goes."""
    if progress is None:
        return sys.stderr if sys.stderr.isatty() else None
    if isinstance(progress, bool):
        return sys.stderr if progress else None
    return progress


def _state(state_dir: str | Path | None, job: Sweepable) -> Path | None:
    """The state file of a job's sweep (None: not kept)."""
    if state_dir is None:
        return None
    try:
        Path(state_dir).mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ValueError(f"--state {state_dir}: not a directory (it names a file)") from None
    return Path(state_dir) / f"{job.contract.name}.{job.dtype.name}.state"
