"""The sweep: every operand pair of a range, in blocks, through a provider's kernel and the
compiled tally, on every core, resumable, in bounded memory.

Pairs are ordered by lhs pattern, then rhs pattern. A block is `ROWS` consecutive lhs patterns
(aligned: block k holds lhs 16k .. 16k + 15 of the range) against every rhs pattern of the
range: 2**20 pairs for a full sweep, 4096 blocks. The block is the unit of work, of resuming
and of the digest: the sweep's digest is the SHA-256 of the blocks' SHA-256 digests (each over
the block's output patterns, little-endian, in pair order), in block order, so it does not
depend on which thread or machine computed which block.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final, Protocol, TextIO

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.families import Family
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.ops import BY_KIND, ContractOp
from fueltensor.registry import Registry, require
from fueltensor.testing import float_format
from fueltensor.tools import exact_pow
from fueltensor.tools.certify.binary import binary_identity, binary_text
from fueltensor.tools.certify.tally import class_table, core, dense, fresh, merge, sparse
from fueltensor.tools.judge.calls import call, plan_for

HALVES: Final = ("BF16", "F16")
"""The FKC dtypes a certificate covers exhaustively (2**32 pairs each)."""
ROWS: Final = 16
"""lhs patterns per block."""
FULL: Final = (0, 1 << 16)
"""Every 16-bit pattern."""


@dataclass(frozen=True)
class Span:
    """The operand patterns of a sweep: lhs in [lhs[0], lhs[1]), rhs in [rhs[0], rhs[1]), of a
    format `width` bits wide (16; an FP8 sweep's 8)."""

    lhs: tuple[int, int] = FULL
    rhs: tuple[int, int] = FULL
    width: int = 16

    def __post_init__(self) -> None:
        """Refuse a range outside the format's patterns, or an empty one."""
        top = 1 << self.width
        for name, (lo, hi) in (("lhs", self.lhs), ("rhs", self.rhs)):
            if not 0 <= lo < hi <= top:
                raise ValueError(
                    f"{name} range {lo:#06x}..{hi:#06x} is not within 0x0000..{top:#06x} and not "
                    "empty"
                )

    @property
    def pairs(self) -> int:
        """Operand pairs in the span."""
        return (self.lhs[1] - self.lhs[0]) * (self.rhs[1] - self.rhs[0])

    @property
    def exhaustive(self) -> bool:
        """Whether the span holds every pair of the format (2**32; an FP8 format's 2**16)."""
        return self.lhs == self.rhs == (0, 1 << self.width)

    def bounds(self) -> list[tuple[int, int]]:
        """The ranges as a state file's header names them."""
        return [self.lhs, self.rhs]

    def blocks(self) -> list[tuple[int, int]]:
        """The lhs range of each block, in order."""
        lo, hi = self.lhs
        starts = range(lo - lo % ROWS, hi, ROWS)
        return [(max(lo, s), min(hi, s + ROWS)) for s in starts]


@dataclass(frozen=True)
class Job:
    """One contract at one 16-bit dtype, its kernel, and the span to sweep."""

    contract: KernelContract
    kernel: KernelFn
    dtype: DType
    op: int
    """The op's number in `_certify.OPS`."""
    span: Span
    binary: dict[str, Any]
    """The binary that runs the kernel (`binary.binary_identity`): bound into the state file
    and the certificate."""

    def operands(self, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """The block's lhs and rhs patterns (uint16), pair by pair."""
        lhs = np.arange(*rows, dtype=np.uint16)
        rhs = np.arange(*self.span.rhs, dtype=np.uint16)
        return np.repeat(lhs, rhs.size), np.tile(rhs, lhs.size)

    def block(self, index: int, rows: tuple[int, int]) -> BlockResult:
        """Block `index` (lhs patterns `rows`) swept (`run_block`)."""
        return run_block(self, index, rows, _classes(self.dtype.name))

    def run(self, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """The kernel's output patterns for the pairs (unsigned patterns of the dtype's width,
        as `lhs`), called as dispatch calls it."""
        dt = self.dtype.np
        plan = plan_for(self.contract, self.dtype, [(lhs.size,), (rhs.size,)])
        out = call(self.kernel, plan, [lhs.view(dt), rhs.view(dt)])
        got: np.ndarray = np.ascontiguousarray(out).reshape(-1).view(lhs.dtype)
        return got


@cache
def _classes(dtype: str) -> np.ndarray:
    """`tally.class_table` of a dtype, made once."""
    return class_table(dtype)


class Sweepable(Protocol):
    """What `sweep` runs: a contract at a dtype over a span of blocks (`Job`, a binary pair
    sweep; `certify.unary.UnaryJob`, one input per lane)."""

    @property
    def contract(self) -> KernelContract: ...

    @property
    def dtype(self) -> DType: ...

    @property
    def binary(self) -> dict[str, Any]: ...

    @property
    def span(self) -> SpanLike: ...

    def block(self, index: int, rows: tuple[int, int]) -> BlockResult: ...


class SpanLike(Protocol):
    """A sweep's span: its blocks' ranges, and its bounds for the state file's header."""

    def bounds(self) -> list[tuple[int, int]]: ...

    def blocks(self) -> list[tuple[int, int]]: ...


@dataclass
class BlockResult:
    """One block's tally and digest, and how many of its pairs MPFR decided."""

    index: int
    stats: np.ndarray
    digest: str
    decided: int = 0


def _decide(
    job: Job, lhs: np.ndarray, rhs: np.ndarray, got: np.ndarray, classes: np.ndarray
) -> np.ndarray:
    """The tally of the pairs the core left out (pow near a rounding boundary of the format),
    their correctly rounded results decided by MPFR."""
    fmt = float_format(job.dtype)
    x, y = (v.view(job.dtype.np).astype(np.float64) for v in (lhs, rhs))
    want = exact_pow.correctly_rounded(x, y, fmt).view(np.uint16)
    stats = fresh()
    skipped = core().tally(job.op, fmt.exponent, fmt.mantissa, lhs, rhs, got, classes, stats, want)
    assert not skipped  # with `want`, the core proves nothing itself
    return stats


def run_block(job: Job, index: int, rows: tuple[int, int], classes: np.ndarray) -> BlockResult:
    """Sweep one block: operands, the kernel, the compiled tally (with MPFR's decision for the
    pairs the core cannot prove), the digest of the outputs."""
    fmt = float_format(job.dtype)
    lhs, rhs = job.operands(rows)
    got = job.run(lhs, rhs)
    stats = fresh()
    skipped = core().tally(job.op, fmt.exponent, fmt.mantissa, lhs, rhs, got, classes, stats)
    if skipped:
        at = np.array(skipped, np.intp)
        merge(stats, _decide(job, lhs[at], rhs[at], got[at], classes))
    digest = hashlib.sha256(got.astype("<u2").tobytes()).hexdigest()
    return BlockResult(index, stats, digest, len(skipped))


@dataclass
class Progress:
    """Progress with the time left, on one line of a stream (None: silent)."""

    total: int
    stream: TextIO | None
    label: str
    start: float = field(default_factory=time.perf_counter)
    done: int = 0
    resumed: int = 0

    def step(self) -> None:
        """One more block done."""
        self.done += 1
        if self.stream is None:
            return
        run = self.done - self.resumed
        elapsed = time.perf_counter() - self.start
        left = (self.total - self.done) * elapsed / max(run, 1)
        self.stream.write(
            f"\r{self.label}: {self.done}/{self.total} blocks, "
            f"{elapsed:.0f} s, about {left:.0f} s left  "
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _swept_op(contract: KernelContract, row: ContractOp) -> str:
    """The kernel op whose formula the C core checks `contract` against: the row's formula
    kernels' (`formula_op`) where the contract declares the seeds' floor-formula remainder,
    as the judge's reference does (`judge.declared`), else the row's own."""
    sem = contract.semantics
    declared = sem.remainder.definition if sem is not None and sem.remainder else None
    if row.formula_op is not None and declared == "floor_formula":
        return row.formula_op
    return row.kernel_op


def jobs(
    reg: Registry,
    provider: str,
    kernels: Iterable[str] | None,
    span: Span,
    codes: tuple[str, ...] = HALVES,
) -> list[Job]:
    """A job per (contract, dtype of `codes`) of `provider`'s registrable binary contracts whose
    op the compiled core knows (or of the named `kernels`)."""
    names = reg.provider_names(provider)
    require(names)
    wanted = set(kernels) if kernels is not None else None
    found = []
    for c in reg:
        if not c.registrable or c.provider.name not in names or len(c.inputs) != 2:
            continue
        if wanted is not None and c.name not in wanted:
            continue
        row = BY_KIND.get(c.op_kind)
        if row is None or row.kernel_op not in core().OPS:
            continue
        for code in dict.fromkeys(d for d in c.inputs[0].dtypes if d in codes):
            dtype = _dtypes.BY_FKC[code]
            op = core().OPS.index(_swept_op(c, row))
            found.append(Job(c, reg.kernel(c.name), dtype, op, span, binary_identity(c, reg)))
    missing = sorted(wanted - {j.contract.name for j in found}) if wanted is not None else []
    if missing:
        raise ValueError(
            f"no {'/'.join(codes)} binary contract of {provider} named {missing}"
            + _not_swept(reg, missing)
        )
    return found


def _not_swept(reg: Registry, names: Iterable[str]) -> str:
    """Why named contracts of a family certify has no sweep for (the comparisons, where,
    clip: exact, checked by the judge) are not certified; "" for none."""
    families = {
        name: row.family
        for name in names
        if name in reg
        for row in (BY_KIND.get(reg[name].op_kind),)
        if row is not None and row.family not in (Family.BINARY, Family.UNARY, Family.CAST)
    }
    if not families:
        return ""
    said = ", ".join(f"{name} is a {family} contract" for name, family in families.items())
    return (
        f"; {said}: certify sweeps the binary, unary and cast families, and the judge checks these "
        "exact ones bit for bit (fueltensor judge --kernel NAME)"
    )


def _refusal(state: Path, first: object, header: dict[str, Any]) -> str:
    """Why the state file `state`, whose header is `first`, is not this sweep's: another binary
    (naming both) or none named, or another sweep."""
    if isinstance(first, dict) and {**first, "binary": header["binary"]} == header:
        theirs = first.get("binary")
        written = (
            f"another binary ({binary_text(theirs)})"
            if isinstance(theirs, dict)
            else "a fueltensor that named no binary"
        )
        return (
            f"{state} was written by {written}; this run's is {binary_text(header['binary'])}: "
            "its blocks are not this binary's; remove the file or pass another --state"
        )
    return f"{state} is the state of another sweep ({first}); remove it or pass another"


def _row(state: Path, number: int, line: str) -> BlockResult:
    """One block line of a state file; ValueError naming the file and line when it is not one."""
    try:
        row = json.loads(line)
        return BlockResult(row["block"], dense(row["stats"]), row["digest"], row["decided"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"{state}:{number}: not a block of a state file ({e}); remove the file to start over"
        ) from None


def _resumed(state: Path | None, header: dict[str, Any]) -> Iterator[BlockResult]:
    """The blocks a state file already holds (none without one); ValueError naming the file
    when it is another sweep's or a line is not a block. A last line cut by a stop (no newline)
    is not read: its block runs again, and `_reopen` cuts it before appending."""
    if state is None or not state.exists():
        return
    with state.open(encoding="utf-8") as f:
        line = f.readline()
        if not line.endswith("\n"):  # empty, or the header itself was cut: no block yet
            return
        try:
            first = json.loads(line)
        except ValueError as e:
            raise ValueError(f"{state}:1: not the header of a state file ({e})") from None
        if first != header:
            raise ValueError(_refusal(state, first, header))
        for number, line in enumerate(f, start=2):
            if line.endswith("\n"):
                yield _row(state, number, line)


def _reopen(state: Path, header: dict[str, Any]) -> TextIO:
    """The state file opened for appending blocks, less a last line cut by a stop (so the next
    block starts a line of its own); an empty one gets the header first."""
    if state.exists():
        with state.open("rb+") as f:
            data = f.read()
            if not data.endswith(b"\n"):
                f.truncate(data.rfind(b"\n") + 1)
    out = state.open("a", encoding="utf-8")
    if out.tell() == 0:
        out.write(json.dumps(header) + "\n")
    return out


def _record(stream: TextIO | None, result: BlockResult) -> None:
    """Append a finished block to the state file."""
    if stream is not None:
        row = {
            "block": result.index,
            "digest": result.digest,
            "decided": result.decided,
            "stats": sparse(result.stats),
        }
        stream.write(json.dumps(row, separators=(",", ":")) + "\n")
        stream.flush()


@dataclass
class Sweep:
    """A sweep's outcome: the merged tally, the digest, the seconds and threads it took."""

    stats: np.ndarray
    digest: str
    seconds: float
    threads: int
    resumed_blocks: int
    block_digests: list[str]
    """Each block's SHA-256, in block order."""
    decided: int = 0
    """Pairs whose correctly rounded result MPFR decided (pow near a rounding boundary)."""


def sweep(
    job: Sweepable,
    threads: int,
    state: Path | None = None,
    progress: TextIO | None = None,
    blocks: Callable[[list[tuple[int, int]]], list[int]] | None = None,
) -> Sweep:
    """Sweep `job`'s span over `threads` threads; `state` (a file) records every finished block
    so a stopped sweep resumes where it was; `progress` gets a line with the time left;
    `blocks` picks the block indices to run here (default all: a cluster splits them)."""
    all_rows = job.span.blocks()
    wanted = blocks(all_rows) if blocks is not None else list(range(len(all_rows)))
    header = {
        "contract": job.contract.name,
        "dtype": job.dtype.name,
        "span": job.span.bounds(),
        "binary": job.binary,
    }
    header = json.loads(json.dumps(header))
    results = {r.index: r for r in _resumed(state, header)}
    label = f"{job.contract.name} ({job.dtype.name})"
    bar = Progress(len(wanted), progress, label)
    bar.resumed = bar.done = sum(1 for i in wanted if i in results)
    start = time.perf_counter()
    todo = iter([i for i in wanted if i not in results])
    out = None
    if state is not None:
        out = _reopen(state, header)
    try:
        with ThreadPoolExecutor(threads) as pool:
            running: set[Future[BlockResult]] = set()
            while True:
                for i in todo:
                    running.add(pool.submit(job.block, i, all_rows[i]))
                    if len(running) >= 2 * threads:
                        break
                if not running:
                    break
                finished, running = wait(running, return_when=FIRST_COMPLETED)
                for f in finished:
                    result = f.result()
                    results[result.index] = result
                    _record(out, result)
                    bar.step()
    finally:
        if out is not None:
            out.close()
    return _finish(results, wanted, time.perf_counter() - start, threads, bar.resumed)


def _finish(
    results: dict[int, BlockResult], wanted: list[int], seconds: float, threads: int, resumed: int
) -> Sweep:
    """Merge the blocks' tallies and chain their digests in block order."""
    total = fresh()
    chain = hashlib.sha256()
    for i in wanted:
        merge(total, results[i].stats)
        chain.update(bytes.fromhex(results[i].digest))
    digests = [results[i].digest for i in wanted]
    decided = sum(results[i].decided for i in wanted)
    return Sweep(total, chain.hexdigest(), seconds, threads, resumed, digests, decided)
