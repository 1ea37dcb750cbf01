"""The FP8 binary sweep: every one of the 256 x 256 operand pairs of an FP8 binary contract
(float8_e4m3fn, float8_e5m2) through its kernel, as a certificate in the binary layout.

The compiled core (`fueltensor.ext._certify`) takes 16-bit formats with an infinity only; 65,536
pairs need no compiled code. The reference is never the kernel's code: the operands widened
exactly and the row's NumPy operation computed in f64 (every sum, difference and product of two
8-bit values is exact there; a quotient is rounded once to 53 bits, more than 2p + 2, so the
second rounding cannot move it), then rounded once into the format by the judge's cast
reference (`judge.casts.expected`: Python integers, nearest even) under the contract's declared
rule (`judge.casts.declared_rule`: its `op_params` overflow, its NaN form, its subnormals). The
formula's bits are the same operation computed in f32 and narrowed by the same rule. The tally
is NumPy's, into the core's layout (`certify.tally`: histogram, first pairs, difference
classes, specials, operand-class table, NaN form masks), so `certificate.build`, the text and
the judge's verdict read it unchanged.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.families import Family
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.libm import libm_pow
from fueltensor.ops import BY_KIND, OpKind
from fueltensor.registry import Registry
from fueltensor.testing import FloatFormat, difference_classes, float_format
from fueltensor.tools.certify.binary import binary_identity
from fueltensor.tools.certify.casts import class_index as _class_index
from fueltensor.tools.certify.certificate import Certificate, build, pair
from fueltensor.tools.certify.sweep import BlockResult, Span, Sweep
from fueltensor.tools.certify.tally import FIXED_NAMES, FORM_NAMES, core, fresh
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.calls import call, plan_for
from fueltensor.tools.judge.references import REFERENCES

FP8: Final = ("F8_E4M3FN", "F8_E5M2")
"""The FKC dtypes swept here, every pair (2**16 each)."""
WIDTH: Final = 8
"""Their patterns' bits."""
_LIBM: Final = frozenset({OpKind.POW})
"""The rows the kernels compute with the C library (pow: `powf`), as the reference does."""


def is_fp8(contract: KernelContract) -> bool:
    """Whether `contract` is a binary-family contract whose operands are FP8 (swept here)."""
    row = BY_KIND.get(contract.op_kind)
    if row is None or row.family is not Family.BINARY or len(contract.inputs) != 2:
        return False
    return any(d in FP8 for d in contract.inputs[0].dtypes)


@cache
def _widening(dtype: np.dtype, working: np.dtype, form: str) -> np.ndarray:
    """Every pattern of the 8-bit `dtype` (by index) as a `working` value, widened exactly by
    the judge's cast reference (a NaN in the declared `form`)."""
    patterns = np.arange(1 << WIDTH).astype(np.uint8).view(dtype)
    out: np.ndarray = casts.expected(patterns, working, False, form, False)
    return out


@dataclass(frozen=True)
class Fp8Job:
    """One FP8 binary contract at one FP8 dtype, its kernel, and the span of pairs."""

    contract: KernelContract
    kernel: KernelFn
    dtype: DType
    span: Span
    binary: dict[str, Any]

    @property
    def fmt(self) -> FloatFormat:
        """The format's bit fields."""
        return float_format(self.dtype.np)

    def operands(self, rows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """The block's lhs and rhs patterns (uint8), pair by pair (lhs, then rhs)."""
        lhs = np.arange(*rows).astype(np.uint8)
        rhs = np.arange(*self.span.rhs).astype(np.uint8)
        return np.repeat(lhs, rhs.size), np.tile(rhs, lhs.size)

    def run(self, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """The kernel's output patterns (uint8) for the pairs, called as dispatch calls it."""
        dt = self.dtype.np
        plan = plan_for(self.contract, self.dtype, [(lhs.size,), (rhs.size,)])
        out = call(self.kernel, plan, [lhs.view(dt), rhs.view(dt)])
        got: np.ndarray = np.ascontiguousarray(out).reshape(-1).view(np.uint8)
        return got

    def reference(self, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """The declared rule's results (uint8) of the pairs: exact in f64, narrowed once by the
        judge's cast reference (module docstring)."""
        return self.narrowed(lhs, rhs, np.dtype(np.float64))

    def formula(self, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """The seeds' formula's results (uint8): the row's NumPy operation in f32, narrowed
        once by the judge's cast reference."""
        return self.narrowed(lhs, rhs, np.dtype(np.float32))

    def narrowed(self, lhs: np.ndarray, rhs: np.ndarray, working: np.dtype) -> np.ndarray:
        """The row's NumPy operation on the operands widened exactly into `working`, its
        results cast into the format by the contract's declared rule (`judge.casts`)."""
        saturate, form, flush = casts.declared_rule(self.contract)
        table = _widening(self.dtype.np, working, form)
        operation, nan_first = _operation(self.contract.op_kind)
        with np.errstate(all="ignore"):
            wide = operation(table[lhs], table[rhs])
            made = casts.expected(np.asarray(wide, working), self.dtype.np, saturate, form, flush)
        out: np.ndarray = np.ascontiguousarray(made).view(np.uint8).copy()
        if not nan_first:
            return out
        return _nan_operand_first(out, lhs, rhs, self.fmt, self._narrow_nan(table, form))

    def _narrow_nan(self, table: np.ndarray, form: str) -> np.ndarray:
        """Each pattern's own value narrowed back by the declared rule (a NaN: quieted)."""
        back = casts.expected(table, self.dtype.np, False, form, False)
        return np.ascontiguousarray(back).view(np.uint8)

    def block(self, index: int, rows: tuple[int, int]) -> BlockResult:
        """Sweep one block: operands, the kernel, the reference, the tally, the digest."""
        lhs, rhs = self.operands(rows)
        got = self.run(lhs, rhs)
        want, formula = self.reference(lhs, rhs), self.formula(lhs, rhs)
        flushed = self.reference(*(_flush(v, self.fmt) for v in (lhs, rhs)))
        stats = tally(self.fmt, (lhs, rhs), (got, want, formula), _flush(flushed, self.fmt))
        return BlockResult(index, stats, hashlib.sha256(got.tobytes()).hexdigest(), 0)


def _operation(kind: str) -> tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], bool]:
    """The row's operation on the widened operands, and whether a NaN result of a NaN operand
    is made that operand's (lhs first): NumPy's ufunc; a selection's own reference (the
    judge's: an operand, lhs on a ±0 tie, as the documents say; NumPy's maximum gives rhs's
    zero); pow the C library's, as the kernels call it, its NaNs its own (`sign: any`)."""
    if kind in _LIBM:
        return _libm_pow, False
    ref = REFERENCES[kind]
    return (ref.fn if ref.zero_signs else BY_KIND[kind].host), True


def _libm_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The C library's powf (f32 operands) or pow (f64), element by element."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape), a.dtype)
    libm_pow(np.ascontiguousarray(a), np.ascontiguousarray(b), out=out)
    return out


def _magnitude(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """The patterns `v` (int64) without their sign bit."""
    out: np.ndarray = v & (f.sign_bit - 1)
    return out


def _inf(f: FloatFormat) -> int:
    """The all-ones exponent field (the core's `f->inf`: infinity's pattern where there is one)."""
    return f.pattern(0, f.exponent_max, 0)


def _nan_operand_first(
    out: np.ndarray, lhs: np.ndarray, rhs: np.ndarray, f: FloatFormat, back: np.ndarray
) -> np.ndarray:
    """`out` with each NaN result of a pair that has a NaN operand given that operand's NaN,
    lhs's first, as the f32 kernels return it (`operand: either` allows it; the documents'
    notes say lhs): NumPy's own choice of two NaNs differs between releases (2.2 gives rhs's).
    A number made from a NaN (pow(NaN, 0) = 1) stays."""
    first = np.where(_is_nan(lhs, f), lhs, rhs)
    pick = (_is_nan(lhs, f) | _is_nan(rhs, f)) & _is_nan(out.astype(np.int64), f)
    out[pick] = back[first[pick]]
    return out


def _is_nan(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """Where the patterns `v` are NaNs of `f` (E4M3FN: its one NaN a sign)."""
    m = _magnitude(v, f)
    out: np.ndarray = m > _inf(f) if f.has_inf else m == _inf(f) | f.mantissa_mask
    return out


def _is_subnormal(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """Where the patterns `v` are subnormals of `f`."""
    m = _magnitude(v, f)
    out: np.ndarray = (m != 0) & (m < (1 << f.mantissa))
    return out


def _flush(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """The patterns `v` with subnormals read as zeros of their sign (what a flushing kernel
    sees, and returns)."""
    out: np.ndarray = np.where(_is_subnormal(v, f), v & f.sign_bit, v).astype(v.dtype)
    return out


def _distance(got: np.ndarray, want: np.ndarray, f: FloatFormat) -> np.ndarray:
    """ULPs between each result and the reference in value order (-0 and +0 meet); two NaNs
    are 0 apart, a NaN and a number the core's `NAN_DISTANCE`."""
    ordered = [np.where(v & f.sign_bit, -_magnitude(v, f), _magnitude(v, f)) for v in (got, want)]
    gn, wn = _is_nan(got, f), _is_nan(want, f)
    far = np.where(gn & wn, 0, core().NAN_DISTANCE)
    out: np.ndarray = np.where(gn | wn, far, np.abs(ordered[0] - ordered[1]))
    return out


def _forms(f: FloatFormat, got: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each NaN result's form mask (`tally.form_bits`: the bits in its names' order)."""
    quiet, sign, inf = f.quiet_bit, f.sign_bit, _inf(f)
    flipped = got ^ sign
    bits: list[np.ndarray] = []
    for p in (a, b):
        nan = _is_nan(p, f)
        for form in (got == p, got == p | quiet, got == (p & sign) | inf | quiet):
            bits.append(nan & form)
        bits += [nan & (flipped == p), nan & (flipped == p | quiet)]
    assert len(bits) == 2 * len(FORM_NAMES)
    fixed = (inf | quiet, sign | inf | quiet, sign | inf | f.mantissa_mask)
    bits += [got == pattern for pattern in fixed] + [_is_nan(a, f), _is_nan(b, f)]
    assert len(bits) == 2 * len(FORM_NAMES) + len(FIXED_NAMES) + 2
    mask: np.ndarray = sum((bit.astype(np.int64) << k for k, bit in enumerate(bits)), np.int64(0))
    return mask


def _count(stats: np.ndarray, name: str, lanes: np.ndarray) -> None:
    """Add the lanes where `lanes` holds to the tally's counter `name`."""
    stats[core().STATS.index(name)] += int(np.count_nonzero(lanes))


def _specials(
    stats: np.ndarray,
    f: FloatFormat,
    operands: tuple[np.ndarray, ...],
    results: tuple[np.ndarray, ...],
) -> None:
    """The special-value outcomes of the pairs, as the core counts them (tally.c): a NaN
    reference's NaN form, or its loss; a zero, infinite or subnormal reference's outcome; a
    subnormal operand's (the reference's bits, or those of its operands flushed)."""
    (a, b), (got, want, flushed) = operands, results
    wn, gn, exact = _is_nan(want, f), _is_nan(got, f), got == want
    masks = _forms(f, got[wn & gn], a[wn & gn], b[wn & gn])
    stats[core().NAN_FORMS :] += np.bincount(masks, minlength=stats.size - core().NAN_FORMS)
    propagated = _is_nan(a, f) | _is_nan(b, f)
    _count(stats, "nan_lost", wn & ~gn & propagated)
    _count(stats, "invalid_lost", wn & ~gn & ~propagated)
    wm, gm, d = _magnitude(want, f), _magnitude(got, f), _distance(got, want, f)
    zero, sub, inf = ~wn & (wm == 0), ~wn & _is_subnormal(want, f), ~wn & (wm == _inf(f))
    inf &= f.has_inf
    for name, lanes in (
        ("zero_kept", zero & exact),
        ("zero_sign", zero & ~exact & (gm == 0)),
        ("zero_lost", zero & (gm != 0)),
        ("inf_kept", inf & exact),
        ("inf_lost", inf & ~exact),
        ("subnormal_out_kept", sub & exact),
        ("subnormal_out_flushed", sub & (got == want & f.sign_bit) & (d > 1)),
        ("subnormal_out_other", sub & ~exact & ~((got == want & f.sign_bit) & (d > 1))),
    ):
        _count(stats, name, lanes)
    into = ~wn & (_is_subnormal(a, f) | _is_subnormal(b, f))
    as_flushed = ~exact & (got == flushed) & (_distance(got, want, f) > 1)
    _count(stats, "subnormal_in_exact", into & exact)
    _count(stats, "subnormal_in_flushed", into & as_flushed)
    _count(stats, "subnormal_in_other", into & ~exact & ~as_flushed)


def _mark(
    stats: np.ndarray, names: tuple[str, str], at: int, pairs: tuple[np.ndarray, ...]
) -> None:
    """Set a first-pair mark (its lhs and rhs entries `names`) to lane `at`'s pair."""
    for name, side in zip(names, pairs, strict=True):
        stats[core().STATS.index(name)] = int(side[at])


def tally(
    f: FloatFormat,
    operands: tuple[np.ndarray, np.ndarray],
    results: tuple[np.ndarray, np.ndarray, np.ndarray],
    flushed: np.ndarray,
) -> np.ndarray:
    """The tally of one block's pairs (in pair order) in the compiled core's layout: `results`
    the kernel's, the reference's and the formula's patterns; `flushed` the reference with
    subnormal operands and result read as zeros (module docstring)."""
    c, stats = core(), fresh()
    a, b = (v.astype(np.int64) for v in operands)
    got, want, formula = (v.astype(np.int64) for v in results)
    exact, d = got == want, _distance(got, want, f)
    at = c.STATS.index
    stats[at("exact")] = int(exact.sum())
    for k in range(c.HIST_ULPS + 1):
        stats[at(f"ulp{k}")] = int((~exact & (d == k)).sum())
    stats[at("beyond")] = int((~exact & (d > c.HIST_ULPS)).sum())
    if a.size:
        worst = int(np.argmax(d))
        stats[at("max_ulp")] = int(d[worst])
        _mark(stats, ("max_lhs", "max_rhs"), worst, (a, b))
    same = got == formula
    stats[at("formula_equal")] = int(same.sum())
    if not same.all():
        _mark(stats, ("formula_lhs", "formula_rhs"), int(np.argmin(same)), (a, b))
    g, w = (v.astype(np.uint8).view(f.dtype) for v in (got, want))
    names, counts = np.unique(difference_classes(g, w), return_counts=True)
    for name, n in zip(names.tolist(), counts.tolist(), strict=True):
        stats[at(name)] += n
    _specials(stats, f, (a, b), (got, want, flushed.astype(np.int64)))
    table = stats[c.CLASS_TABLE : c.NAN_FORMS].reshape(c.MAX_CLASSES, c.MAX_CLASSES, 3)
    cells = _class_index(a, f) * c.MAX_CLASSES + _class_index(b, f)
    for k, lanes in enumerate((np.ones_like(exact), exact, same)):
        table[..., k] += np.bincount(cells[lanes], minlength=c.MAX_CLASSES**2).reshape(
            c.MAX_CLASSES, c.MAX_CLASSES
        )
    return stats


def fp8_jobs(reg: Registry, names: set[str], wanted: set[str] | None, span: Span) -> list[Fp8Job]:
    """A job per (contract, FP8 dtype) of the providers `names`' registrable FP8 binary
    contracts (or the `wanted` ones), over `span` (8-bit patterns)."""
    from fueltensor.core import dtypes as _dtypes

    found = []
    for c in reg:
        if not c.registrable or c.provider.name not in names or not is_fp8(c):
            continue
        if wanted is not None and c.name not in wanted:
            continue
        for code in dict.fromkeys(d for d in c.inputs[0].dtypes if d in FP8):
            dtype = _dtypes.BY_FKC[code]
            found.append(Fp8Job(c, reg.kernel(c.name), dtype, span, binary_identity(c, reg)))
    return found


def fp8_certificate(
    job: Fp8Job, result: Sweep, identity: dict[str, Any], extras: dict[str, Any]
) -> Certificate:
    """The certificate of a finished FP8 sweep; `identity` the contract as certificates name it,
    `extras` the machine, versions and binary."""
    s = {n: int(v) for n, v in zip(core().STATS, result.stats, strict=False)}
    span = {"lhs": list(job.span.lhs), "rhs": list(job.span.rhs), "pairs": job.span.pairs}
    span["exhaustive"] = job.span.exhaustive
    more = {
        "max_pair": _pair(job, s["max_lhs"], s["max_rhs"]),
        "digest": result.digest,
        "block_digests": [d[:16] for d in result.block_digests],
        "seconds": result.seconds,
        "threads": result.threads,
        **extras,
    }
    cert = build(identity, job.dtype.name, span, result.stats, more)
    cert.data["formula"]["first"] = _pair(job, s["formula_lhs"], s["formula_rhs"])
    saturate, form, flush = casts.declared_rule(job.contract)
    libm = job.contract.op_kind in _LIBM
    cert.data["reference"]["exact"] = (
        ("the C library's pow in f64 (within an f64 ULP)" if libm else "exact in f64")
        + ", rounded once by the judge's cast reference (Python integers): nearest "
        f"even, overflow {'saturated' if saturate else 'to inf or NaN'}, a NaN {form}"
        + (", subnormals flushed" if flush else ", subnormals kept")
    )
    cert.data["reference"]["formula"] += " (the judge's cast reference)"
    cert.data["reference"]["decided_by_mpfr"] = 0
    return cert


def _pair(job: Fp8Job, lhs: int, rhs: int) -> dict[str, Any] | None:
    """A marked pair with the kernel's result (from a call over its whole row, as the sweep
    made it) and the reference's (None: no pair)."""
    if lhs < 0:
        return None
    a, b = job.operands((lhs, lhs + 1))
    got = int(job.run(a, b)[rhs - job.span.rhs[0]])
    one = (np.array([lhs], np.uint8), np.array([rhs], np.uint8))
    return pair(job.dtype.name, lhs, rhs, got, int(job.reference(*one)[0]))
