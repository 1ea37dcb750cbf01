"""The unary sweep: every input of a unary contract's dtype through its kernel, against the
correctly rounded result, tallied by the compiled core, as a certificate.

A 16-bit dtype has 2**16 inputs, each checked against MPFR (`tools.exact_unary`, the judge's
reference). A float32 contract of a row the op table marks `exhaustive_f32` has 2**32: each is
checked against the C library's double function of the row rounded once, in `_certify`
(`unary_reference`), trusted where the double value lies farther than `UNARY_BOUND_ULPS` from
a float rounding boundary; the few lanes nearer are decided by MPFR here. Blocks of `BLOCK`
inputs run on every core through the kernel as dispatch calls it, and the compiled tally
(`unary_tally`) counts them in the binary tally's layout with the input in the lhs place, so
the state file, the merging and the digests are the binary sweep's (`certify.sweep`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.families import Family
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.ops import BY_KIND, ContractOp
from fueltensor.registry import Registry
from fueltensor.testing import VALUE_CLASSES, float_format, format_value
from fueltensor.tools import exact_unary
from fueltensor.tools.certify.binary import binary_identity
from fueltensor.tools.certify.certificate import (
    DIFFERENCES,
    HISTOGRAM,
    KIND,
    SPECIALS,
    VERSION,
    Certificate,
)
from fueltensor.tools.certify.sweep import HALVES, BlockResult, Sweep
from fueltensor.tools.certify.tally import core, describe_forms, fresh, named, nan_forms
from fueltensor.tools.judge.calls import call, plan_for

EXHAUSTIVE_F32: Final = "F32"
"""The dtype swept on every input where the row says so (`ContractOp.exhaustive_f32`)."""
BLOCK: Final = {8: 1 << 8, 16: 1 << 12, 32: 1 << 22}
"""Inputs per block, by the format's width: 16 blocks of a 16-bit sweep, 1024 of a float32 one."""


@dataclass(frozen=True)
class UnarySpan:
    """The input patterns of a unary sweep: [lo, hi) of a `width`-bit format."""

    lo: int
    hi: int
    width: int

    def __post_init__(self) -> None:
        """Refuse a range outside the format's patterns, or an empty one."""
        if not 0 <= self.lo < self.hi <= 1 << self.width:
            raise ValueError(
                f"input range {self.lo:#x}..{self.hi:#x} is not within 0..{1 << self.width:#x} "
                "and not empty"
            )

    @property
    def inputs(self) -> int:
        """Inputs in the span."""
        return self.hi - self.lo

    @property
    def exhaustive(self) -> bool:
        """Whether the span holds every pattern of the format."""
        return self.lo == 0 and self.hi == 1 << self.width

    def bounds(self) -> list[tuple[int, int]]:
        """The range as a state file's header names it."""
        return [(self.lo, self.hi)]

    def blocks(self) -> list[tuple[int, int]]:
        """The input range of each block, in order (aligned to `BLOCK`)."""
        size = BLOCK[self.width]
        starts = range(self.lo - self.lo % size, self.hi, size)
        return [(max(self.lo, s), min(self.hi, s + size)) for s in starts]

    def to_dict(self) -> dict[str, Any]:
        """The span as a certificate writes it."""
        return {"x": [self.lo, self.hi], "inputs": self.inputs, "exhaustive": self.exhaustive}


@dataclass(frozen=True)
class UnaryJob:
    """One unary contract at one dtype, its kernel, its row and the span to sweep."""

    contract: KernelContract
    kernel: KernelFn
    dtype: DType
    row: ContractOp
    span: UnarySpan
    binary: dict[str, Any]

    def run(self, x: np.ndarray) -> np.ndarray:
        """The kernel's output patterns for input patterns `x` (uint32), as uint32, called as
        dispatch calls it."""
        f = float_format(self.dtype.np)
        plan = plan_for(self.contract, self.dtype, [(x.size,)])
        out = call(self.kernel, plan, [x.astype(f.uint).view(self.dtype.np)])
        got: np.ndarray = np.ascontiguousarray(out).reshape(-1).view(f.uint).astype(np.uint32)
        return got

    def reference(self, x: np.ndarray) -> tuple[np.ndarray, int]:
        """The correctly rounded results of input patterns `x` (uint32) and how many MPFR
        decided: all of them for a 16-bit format, the unproven ones for float32."""
        f = float_format(self.dtype.np)
        if f.width == 16:
            values = x.astype(f.uint).view(f.dtype)
            want = exact_unary.correctly_rounded(self.row, values).view(f.uint)
            return want.astype(np.uint32), x.size
        want = np.empty_like(x)
        op = core().UNARY_OPS.index(self.row.kernel_op)
        doubt = np.array(core().unary_reference(op, f.exponent, f.mantissa, x, want), np.intp)
        if doubt.size:
            decided = exact_unary.correctly_rounded(self.row, x[doubt].view(f.dtype))
            want[doubt] = decided.view(f.uint)
        return want, int(doubt.size)

    def zeros(self) -> np.ndarray:
        """The references of +0 and -0 (what a kernel flushing subnormal inputs gives)."""
        sign = float_format(self.dtype.np).sign_bit
        return self.reference(np.array([0, sign], np.uint32))[0]

    def block(self, index: int, rows: tuple[int, int]) -> BlockResult:
        """Sweep one block: the inputs, the kernel, the reference, the compiled tally, the
        digest of the outputs (little-endian, of the dtype's width)."""
        f = float_format(self.dtype.np)
        x = np.arange(*rows, dtype=np.uint32)
        got = self.run(x)
        want, decided = self.reference(x)
        stats = fresh()
        core().unary_tally(f.exponent, f.mantissa, x, got, want, self.zeros(), stats)
        digest = hashlib.sha256(got.astype(f"<u{f.dtype.itemsize}").tobytes()).hexdigest()
        return BlockResult(index, stats, digest, decided)


def unary_jobs(
    reg: Registry, names: Iterable[str], wanted: set[str] | None, x: tuple[int, int] | None
) -> list[UnaryJob]:
    """A job per (contract, dtype) of the providers `names`' registrable unary contracts (or
    the `wanted` ones): every 16-bit dtype, and float32 where the row sweeps it exhaustively;
    over the inputs `x` (default all of the format's)."""
    found = []
    providers = set(names)
    for c in reg:
        row = BY_KIND.get(c.op_kind)
        if row is None or row.family is not Family.UNARY or not c.registrable:
            continue
        if c.provider.name not in providers or (wanted is not None and c.name not in wanted):
            continue
        codes = HALVES + ((EXHAUSTIVE_F32,) if row.exhaustive_f32 else ())
        for code in dict.fromkeys(d for d in c.inputs[0].dtypes if d in codes):
            dtype = _dtypes.BY_FKC[code]
            width = 8 * dtype.itemsize
            span = UnarySpan(*(x or (0, 1 << width)), width)
            found.append(UnaryJob(c, reg.kernel(c.name), dtype, row, span, binary_identity(c, reg)))
    return found


def _input(job: UnaryJob, x: int) -> dict[str, Any] | None:
    """The input `x` with the kernel's result (read from a call over its whole block, as the
    sweep made it) and the correctly rounded one (None: no input)."""
    if x < 0:
        return None
    rows = next(r for r in job.span.blocks() if r[0] <= x < r[1])
    got = int(job.run(np.arange(*rows, dtype=np.uint32))[x - rows[0]])
    want = int(job.reference(np.array([x], np.uint32))[0][0])
    fmt = float_format(job.dtype.np)
    found: dict[str, Any] = {}
    for name, bits in (("x", x), ("got", got), ("want", want)):
        found[name] = bits
        found[f"{name}_value"] = format_value(fmt.scalar(bits))
    return found


def unary_data(job: UnaryJob, result: Sweep) -> dict[str, Any]:
    """The certificate fields a unary sweep established (the caller adds the contract, the
    binary, the machine and the versions)."""
    s = named(result.stats)
    c = core()
    table = result.stats[c.CLASS_TABLE : c.NAN_FORMS].reshape(c.MAX_CLASSES, c.MAX_CLASSES, 3)
    ref = f"correctly rounded {job.row.summary}"
    how = (
        "MPFR at 200 bits, rounded once"
        if job.span.width == 16
        else f"the C library's double function rounded once, MPFR within "
        f"{c.UNARY_BOUND_ULPS} ULPs of double of a rounding boundary"
    )
    return {
        "kind": KIND,
        "version": VERSION,
        "dtype": job.dtype.name,
        "span": job.span.to_dict(),
        "reference": {"exact": f"{ref} ({how})", "decided_by_mpfr": result.decided},
        "histogram": {k: s[k] for k in HISTOGRAM},
        "max_ulp": "inf" if s["max_ulp"] >= c.UNARY_NAN_DISTANCE else s["max_ulp"],
        "max_input": _input(job, s["max_lhs"]),
        "differences": {k: s[k] for k in DIFFERENCES if s[k]},
        "specials": {k: s[k] for k in SPECIALS},
        "nan_forms": [
            {"mask": m, "forms": describe_forms(m).replace("lhs", "x"), "inputs": n}
            for m, n in sorted(nan_forms(result.stats).items())
        ],
        "classes": [
            {"x": VALUE_CLASSES[i], "inputs": int(table[i, 0, 0]), "exact": int(table[i, 0, 1])}
            for i in range(len(VALUE_CLASSES))
            if table[i, 0, 0]
        ],
        "digest": result.digest,
        "block_digests": [d[:16] for d in result.block_digests],
        "seconds": result.seconds,
        "threads": result.threads,
    }


def unary_certificate(job: UnaryJob, result: Sweep, extras: dict[str, Any]) -> Certificate:
    """The certificate of a finished unary sweep; `extras`: the contract's identity, the
    binary, the machine and the versions."""
    return Certificate({**unary_data(job, result), **extras})
