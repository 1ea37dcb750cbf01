"""The cast sweep: every source pattern of a cast contract's 8-, 16- or 32-bit source through
its kernel, against the declared rule, as a certificate in the unary sweep's layout (the input
in the lhs place, results in the target's format).

The reference is never the kernel's own code. An 8- or 16-bit source is checked against the
judge's reference (`judge.casts`: Python integers, input by input); a float32 source's 2**32
inputs against the oracle's (`kernels.casting`: NumPy integer arithmetic on the bit fields),
which the tests hold to MPFR on every tie and boundary of every target. The oracle's own cast
contracts are certified on their 8- and 16-bit sources alone. A float64 source's 2**64 cannot
be swept: its certificate is of the target's edges and a sample (`certify.cast_edges`), tallied
here. The tally counts, beside the unary layout's histogram, differences and special outcomes,
each input's outcome under the rule (`OUTCOMES`: a NaN, an infinity, an overflow, an underflow
to a subnormal or to zero, a value held exactly or rounded), kept in the class table's unused
columns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.casting import cast_bits
from fueltensor.registry import Registry
from fueltensor.testing import VALUE_CLASSES, FloatFormat, difference_classes, float_format
from fueltensor.testing.values import _classes
from fueltensor.tools.certify.binary import binary_identity
from fueltensor.tools.certify.certificate import DIFFERENCES, HISTOGRAM, KIND, SPECIALS, VERSION
from fueltensor.tools.certify.sweep import BlockResult, Sweep
from fueltensor.tools.certify.tally import core, fresh, named
from fueltensor.tools.certify.unary import UnarySpan
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.calls import call, plan_for

ORACLE: Final = "reference-oracle"
OUTCOMES: Final = ("NaN", "infinity", "overflow", "subnormal", "zero", "exact", "rounded")
"""What the rule makes of an input: a NaN or an infinity in; an overflow (a finite value
beyond the target's range); an underflow to a subnormal or to zero; a value held exactly;
rounded."""


@dataclass(frozen=True)
class CastJob:
    """One cast contract at one source dtype, its kernel and the span of source patterns."""

    contract: KernelContract
    kernel: KernelFn
    dtype: DType
    span: UnarySpan
    binary: dict[str, Any]

    @property
    def target(self) -> FloatFormat:
        return float_format(casts.target(self.contract))

    def run(self, x: np.ndarray) -> np.ndarray:
        """The kernel's output patterns (uint64, of the target) for source patterns `x`
        (uint32), called as dispatch calls it."""
        return run_cast(self.contract, self.kernel, self.dtype, x)

    @property
    def compiled(self) -> bool:
        """Whether the compiled core's reference and tally serve this job (module docstring):
        a float32 source, a target of at most 16 bits, the rule `cast_bits` follows."""
        _, form, flush = casts.declared_rule(self.contract)
        t = self.target
        rule = not flush and (form == "quieted" or not t.has_inf)
        return self.dtype.itemsize == 4 and t.width <= 16 and rule and _has_cast_core()

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The declared rule's results (uint64) of source patterns `x` (module docstring)."""
        f, t = float_format(self.dtype.np), self.target
        values = x.astype(f.uint).view(f.dtype)
        saturate, form, flush = casts.declared_rule(self.contract)
        if self.compiled:
            return self.compiled_reference(x).astype(np.uint64)
        if f.width <= 16:
            want = casts.expected(values, t.dtype, saturate, form, flush)
        else:
            want = cast_bits(values, t.dtype, saturate).view(t.dtype)
        return np.ascontiguousarray(want).view(t.uint).astype(np.uint64)

    def compiled_reference(self, x: np.ndarray) -> np.ndarray:
        """The compiled core's results (uint32 target patterns) of float32 patterns `x`."""
        saturate = casts.declared_rule(self.contract)[0]
        t, want = self.target, np.empty(x.size, np.uint32)
        core().cast_reference(t.exponent, t.mantissa, t.has_inf, saturate, x, want)
        return want

    def block(self, index: int, rows: tuple[int, int]) -> BlockResult:
        """Sweep one block: the inputs, the kernel, the reference, the tally, the digest."""
        x = np.arange(*rows, dtype=np.uint32)
        got = self.run(x)
        if self.compiled:
            stats, t = fresh(), self.target
            patterns = got.astype(np.uint32)
            want = self.compiled_reference(x)
            core().cast_tally(t.exponent, t.mantissa, t.has_inf, x, patterns, want, stats)
        else:
            stats = tally(float_format(self.dtype.np), self.target, x, got, self.reference(x))
        digest = hashlib.sha256(got.astype(f"<u{self.target.dtype.itemsize}").tobytes())
        return BlockResult(index, stats, digest.hexdigest(), 0)


def run_cast(contract: KernelContract, kernel: KernelFn, dtype: DType, x: np.ndarray) -> np.ndarray:
    """A cast kernel's output patterns (uint64, of the contract's target) for source patterns
    `x` of `dtype` (unsigned), called as dispatch calls it."""
    f, t = float_format(dtype.np), float_format(casts.target(contract))
    plan = plan_for(contract, dtype, [(x.size,)])
    out = call(kernel, plan, [x.astype(f.uint).view(dtype.np)])
    return np.ascontiguousarray(out).reshape(-1).view(t.uint).astype(np.uint64)


def _has_cast_core() -> bool:
    """Whether the compiled core was built with its cast reference and tally."""
    try:
        return hasattr(core(), "cast_tally")
    except ImportError:
        return False


def _outcomes(f: FloatFormat, t: FloatFormat, x: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Each input's `OUTCOMES` index under the rule."""
    with np.errstate(all="ignore"):
        value = x.astype(f.uint).view(f.dtype).astype(np.float64)
        result = want.astype(t.uint).view(t.dtype).astype(np.float64)
    top = float(np.float64(t.scalar(t.max_pattern)))
    below = float(np.float64(t.scalar(t.max_pattern - 1)))
    edge = top + (top - below) / 2  # the tie past the largest finite: beyond it, overflow
    beyond = (np.abs(value) > edge) | ((np.abs(value) == edge) & bool(t.max_pattern & 1))
    tiny = np.abs(result) < np.ldexp(1.0, 1 - t.bias)
    choices = [
        np.isnan(value),
        np.isinf(value),
        beyond,
        tiny & (result != 0),
        (result == 0) & (value != 0),
        result == value,
    ]
    found: np.ndarray = np.select(choices, range(len(choices)), default=len(choices))
    return found


def _magnitude(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """The patterns `v` (uint64) without their sign bit."""
    out: np.ndarray = v & np.uint64(f.sign_bit - 1)
    return out


def _nans(v: np.ndarray, f: FloatFormat) -> np.ndarray:
    """Where the patterns `v` (uint64) are NaNs of `f`."""
    m, top = _magnitude(v, f), f.pattern(0, f.exponent_max, 0)
    out: np.ndarray = m > top if f.has_inf else m == top | f.mantissa_mask
    return out


def class_index(x: np.ndarray, f: FloatFormat) -> np.ndarray:
    """Each pattern's value class, as its index in `testing.VALUE_CLASSES`."""
    names, inverse = np.unique(_classes(x.astype(np.uint64), f), return_inverse=True)
    index = np.array([VALUE_CLASSES.index(str(n)) for n in names], np.intp)
    out: np.ndarray = index[inverse.reshape(-1)]
    return out


def _distance(got: np.ndarray, want: np.ndarray, t: FloatFormat) -> np.ndarray:
    """The ULP distance of each lane in `t` (-1 where the bits are equal; a NaN against a
    number: the core's NaN distance; two NaNs of other bits: 0)."""
    ordered = []
    for v in (got, want):
        m = _magnitude(v, t).astype(np.int64)
        ordered.append(np.where(v & np.uint64(t.sign_bit), -m, m))
    gn, wn = _nans(got, t), _nans(want, t)
    far = np.where(gn & wn, 0, core().UNARY_NAN_DISTANCE)
    distance = np.where(gn | wn, far, np.abs(ordered[0] - ordered[1]))
    out: np.ndarray = np.where(got == want, -1, distance)
    return out


def tally(
    f: FloatFormat,
    t: FloatFormat,
    x: np.ndarray,
    got: np.ndarray,
    want: np.ndarray,
    marks: np.ndarray | None = None,
) -> np.ndarray:
    """The tally of one block in the compiled core's layout (`certify.tally`): the histogram of
    ULP distances in the target's format, the first input at the largest, the difference
    classes, the special outcomes, and the class table: each input class's inputs and exact
    ones, and its `OUTCOMES` in the columns after. `marks`: what the maximum records of each
    lane (default its pattern `x`; a float64 source's lane index, its patterns being too wide
    for the tally's int64)."""
    c = core()
    stats, at = fresh(), c.STATS.index
    exact, distance = got == want, _distance(got, want, t)
    stats[at("exact")] = int(exact.sum())
    for k in range(9):
        stats[at(f"ulp{k}")] = int((distance == k).sum())
    stats[at("beyond")] = int((distance > 8).sum())
    if x.size:  # the first input at the largest distance (the first input when all are exact)
        worst = int(np.argmax(distance))
        far = max(int(distance[worst]), 0)
        mark = (x if marks is None else marks)[worst]
        stats[at("max_ulp")], stats[at("max_lhs")], stats[at("max_rhs")] = far, mark, 0
    g, w = (v[~exact].astype(t.uint).view(t.dtype) for v in (got, want))
    names, counts = np.unique(difference_classes(g, w), return_counts=True)
    for name, n in zip(names.tolist(), counts.tolist(), strict=True):
        stats[at(name)] += n
    _specials(stats, (f, t), x, got, want)
    table = stats[c.CLASS_TABLE : c.NAN_FORMS].reshape(c.MAX_CLASSES, c.MAX_CLASSES, 3)
    classes, n, k = class_index(x, f), c.MAX_CLASSES, len(OUTCOMES)
    table[:, 0, 0] += np.bincount(classes, minlength=n)
    table[:, 0, 1] += np.bincount(classes[exact], minlength=n)
    cells = np.bincount(classes * k + _outcomes(f, t, x, want), minlength=n * k)
    table[:, 1 : k + 1, 0] += cells.reshape(n, k)
    return stats


def _specials(
    stats: np.ndarray,
    formats: tuple[FloatFormat, FloatFormat],
    x: np.ndarray,
    got: np.ndarray,
    want: np.ndarray,
) -> None:
    """The special outcomes (`certificate.SPECIALS`) of a block, counted into `stats`."""
    f, t = formats
    exact, at = got == want, core().STATS.index
    wm, gm, xm = _magnitude(want, t), _magnitude(got, t), _magnitude(x, f)
    wz, gz = wm == 0, gm == 0
    wsub, xsub = ~wz & (wm < (1 << t.mantissa)), (xm != 0) & (xm < (1 << f.mantissa))
    winf = (wm == t.pattern(0, t.exponent_max, 0)) & t.has_inf
    flushed = xsub & ~exact & gz & ~wz
    counts = {
        "nan_lost": _nans(want, t) & ~_nans(got, t),
        "zero_kept": wz & exact,
        "zero_sign": wz & gz & ~exact,
        "zero_lost": wz & ~gz,
        "inf_kept": winf & exact,
        "inf_lost": winf & ~exact,
        "subnormal_out_kept": wsub & exact,
        "subnormal_out_flushed": wsub & gz,
        "subnormal_out_other": wsub & ~exact & ~gz,
        "subnormal_in_exact": xsub & exact,
        "subnormal_in_flushed": flushed,
        "subnormal_in_other": xsub & ~exact & ~flushed,
    }
    for name, lanes in counts.items():
        stats[at(name)] += int(np.count_nonzero(lanes))


def is_source(c: KernelContract, providers: set[str], wanted: set[str] | None) -> bool:
    """Whether `c` is a registrable cast contract of one of `providers` (and one of `wanted`,
    where given): one a cast certificate is made of."""
    chosen = wanted is None or c.name in wanted
    return casts.is_cast(c.op_kind) and c.registrable and c.provider.name in providers and chosen


def cast_jobs(
    reg: Registry, names: Iterable[str], wanted: set[str] | None, x: tuple[int, int] | None
) -> list[CastJob]:
    """A job per (contract, source dtype) of the providers `names`' registrable cast contracts
    (or the `wanted` ones): every 8- and 16-bit source, and float32 but for the oracle's own
    (module docstring); over the source patterns `x` (default all), where the source has them."""
    found = []
    providers = set(names)
    for c in reg:
        if not is_source(c, providers, wanted):
            continue
        for code in dict.fromkeys(c.inputs[0].dtypes):
            dtype = _dtypes.BY_FKC[code]
            width = 8 * dtype.itemsize
            if width > 32 or (width == 32 and c.kernel_source == ORACLE):
                continue
            if x is not None and x[1] > 1 << width:  # a range of wider patterns: not this one
                continue
            span = UnarySpan(*(x or (0, 1 << width)), width)
            found.append(CastJob(c, reg.kernel(c.name), dtype, span, binary_identity(c, reg)))
    return found


def _input(job: CastJob, x: int) -> dict[str, Any] | None:
    """The input `x` (a source pattern) with the kernel's result, read from a call over its
    whole block, and the rule's (None: no input)."""
    if x < 0:
        return None
    rows = next(r for r in job.span.blocks() if r[0] <= x < r[1])
    got = int(job.run(np.arange(*rows, dtype=np.uint32))[x - rows[0]])
    want = int(job.reference(np.array([x], np.uint32))[0])
    found: dict[str, Any] = {"x": x, "x_value": _text(float_format(job.dtype.np), x)}
    for name, bits in (("got", got), ("want", want)):
        found[name], found[f"{name}_value"] = bits, _text(job.target, bits)
    return found


def _text(f: FloatFormat, bits: int) -> str:
    from fueltensor.testing import format_value

    return format_value(f.scalar(bits))


def cast_data(job: CastJob, result: Sweep) -> dict[str, Any]:
    """The certificate fields a cast sweep established (the caller adds the contract, the
    binary, the machine and the versions)."""
    by = "the judge's (Python integers)" if job.span.width <= 16 else "the oracle's (NumPy)"
    by = "the certifier's compiled core (exact double steps)" if job.compiled else by
    return {
        **head(job.contract, job.dtype, by),
        "span": job.span.to_dict(),
        "max_input": _input(job, named(result.stats)["max_lhs"]),
        **tally_fields(result.stats),
        "digest": result.digest,
        "block_digests": [d[:16] for d in result.block_digests],
        "seconds": result.seconds,
        "threads": result.threads,
    }


def head(contract: KernelContract, dtype: DType, by: str) -> dict[str, Any]:
    """A cast certificate's first fields: its kind, source and target, and its reference (the
    declared rule, computed `by` what)."""
    saturate, form, flush = casts.declared_rule(contract)
    return {
        "kind": KIND,
        "version": VERSION,
        "dtype": dtype.name,
        "to": float_format(casts.target(contract)).name,
        "reference": {
            "exact": f"the declared rule, {by}: rounded once to nearest even, overflow "
            f"{'saturated' if saturate else 'to inf or NaN'}, a NaN {form}"
            + (", subnormals flushed" if flush else ", subnormals kept"),
            "decided_by_mpfr": 0,
        },
    }


def tally_fields(stats: np.ndarray) -> dict[str, Any]:
    """The certificate fields a cast tally holds: the histogram, the maximum, the difference
    classes, the special outcomes, the input classes and the outcomes."""
    s, c = named(stats), core()
    table = stats[c.CLASS_TABLE : c.NAN_FORMS].reshape(c.MAX_CLASSES, c.MAX_CLASSES, 3)
    return {
        "histogram": {k: s[k] for k in HISTOGRAM},
        "max_ulp": "inf" if s["max_ulp"] >= c.UNARY_NAN_DISTANCE else s["max_ulp"],
        "differences": {k: s[k] for k in DIFFERENCES if s[k]},
        "specials": {k: s[k] for k in SPECIALS},
        "nan_forms": [],
        "classes": [
            {"x": VALUE_CLASSES[i], "inputs": int(table[i, 0, 0]), "exact": int(table[i, 0, 1])}
            for i in range(len(VALUE_CLASSES))
            if table[i, 0, 0]
        ],
        "outcomes": {
            name: int(table[:, k + 1, 0].sum())
            for k, name in enumerate(OUTCOMES)
            if table[:, k + 1, 0].sum()
        },
    }
