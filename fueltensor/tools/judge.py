"""The judge: audit every registrable contract against the kernel it is linked to.

For each contract, and each dtype it accepts, four checks:

* **determinism**: one probe run 16 times into freshly garbage-filled buffers must give
  byte-identical outputs (the seeds' own evidence standard);
* **precision**: the maximum ULP distance from a higher-precision reference over random bit
  patterns, random ordinary values and every pair of special values; a declared `max_ulp`
  (or `max_relative` / `max_absolute`) that is exceeded is a failure, an undeclared one is
  reported as measured;
* **conformance**: output dtype, shape, layout and aliasing per the `return` clause, inputs left
  untouched, and every output element written without reading `out`;
* **cost**: the call overhead on one-element inputs, then ns per element and GB/s at a large
  size, next to what the `bytes_moved` formula predicts at this machine's copy bandwidth.

The references (`REFERENCES`, one per row of the op table `fueltensor.ops`) compute what the
bundled contract documents of each op kind state, in higher precision, rounded once to the
dtype: exactly rounded arithmetic (F64 in exact rationals on a subsample), selection returning
an operand's own bits, the documented remainder formula step by step, and a wider `pow` (lanes
a contract leaves open, such as a signaling-NaN operand of pow, are left out). The numerics
themselves are the documents' (`fueltensor contracts --op OP_KIND`), not this module's.
"""

from __future__ import annotations

import hashlib
import json
import math
import operator
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast, overload

import ml_dtypes
import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, broadcast_shapes
from fueltensor.core.storage import aligned_empty
from fueltensor.engine.backends import current_policy
from fueltensor.engine.execute import returned_problems
from fueltensor.engine.planner import Operand, Plan, admit
from fueltensor.fingerprint import Fingerprint, machine
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.ops import BY_KIND, CONTRACT_OPS
from fueltensor.registry import Registry
from fueltensor.tools.compare import bits, errors, text_table

if TYPE_CHECKING:
    from distributed import Client

    from fueltensor.tools.cluster import ClusterJudgeReport

Array = np.ndarray
F64: Final = np.dtype(np.float64)
F32: Final = np.dtype(np.float32)
BF16: Final = np.dtype(ml_dtypes.bfloat16)
RUNS: Final = 16
"""Repeated invocations of one probe for the determinism check."""


@dataclass(frozen=True)
class Settings:
    """Probe sizes: `quick` keeps a full audit under a minute on two cores."""

    random: int
    exact: int
    large: int
    tiny_calls: int

    @classmethod
    def of(cls, quick: bool) -> Settings:
        """The quick probe sizes (`--quick`) or the full ones."""
        return cls(2048, 256, 1 << 16, 200) if quick else cls(32768, 2048, 1 << 20, 1000)


# -- references ---------------------------------------------------------------------------------


def round_to(x: Array, dtype: np.dtype) -> Array:
    """Round f64 (or long double) values once, to nearest even, into `dtype`.

    NumPy rounds f64 -> f32/f16 directly; bf16 goes through f32 rounded to odd, which makes the
    second rounding exact (a plain f64 -> f32 -> bf16 would round twice).
    """
    if dtype != BF16:
        with np.errstate(all="ignore"):
            return np.asarray(x).astype(dtype)
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = x.astype(np.float32)
        back = r.astype(np.float64)
    u = r.view(np.uint32).copy()
    inexact = np.isfinite(r) & (back != x)
    u[inexact & (np.abs(back) > np.abs(x))] -= 1
    u[inexact] |= 1
    rounded: Array = u.view(np.float32).astype(BF16)
    return rounded


def _exact(op: Callable[[Any, Any], Any], x: float, y: float) -> float:
    """`op(x, y)` in exact rational arithmetic, rounded once to f64. IEEE special cases
    (non-finite operands, division by zero, the sign of an exact zero) involve no rounding and
    come from f64 arithmetic."""
    ieee = float(op(np.float64(x), np.float64(y)))
    if not (math.isfinite(x) and math.isfinite(y)) or (op is operator.truediv and y == 0):
        return ieee
    exact = op(Fraction(x), Fraction(y))
    if exact == 0:
        return ieee
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _rational(op: Callable[[Any, Any], Any], a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.array(
            [_exact(op, float(x), float(y)) for x, y in zip(a, b, strict=True)], np.float64
        )


_UFUNC: Final = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.divide,
}


def _rounded_op(op: Callable[[Any, Any], Any], a: Array, b: Array, working: np.dtype) -> Array:
    """One arithmetic step exactly rounded once into `working` (via f64, F64 via Fraction)."""
    if working == F64:
        return _rational(op, a, b)
    with np.errstate(all="ignore"):
        return round_to(_UFUNC[op](a.astype(F64), b.astype(F64)), working)


def _arith(op: Callable[[Any, Any], Any]) -> Reference:
    """The reference of add/sub/mul/div: `op` exactly rounded once into the operands' dtype."""

    def ref(a: Array, b: Array) -> Array:
        return _rounded_op(op, a, b, a.dtype)

    return Reference("exact: f64 (F64: rational), rounded once", ref, exact_f64=True)


def _select(pick_lhs: Callable[[Array, Array], Array]) -> Reference:
    def ref(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            wa, wb = a.astype(F64), b.astype(F64)
            lhs = np.isnan(wa) | (pick_lhs(wa, wb) & ~np.isnan(wb))
        return np.where(lhs, a, b)

    return Reference("selection: NaN operand unchanged (lhs first), lhs on a ±0 tie", ref)


def _remainder(a: Array, b: Array) -> Array:
    working = F64 if a.dtype == F64 else F32
    wa, wb = a.astype(working), b.astype(working)
    q = _rounded_op(operator.truediv, wa, wb, working)
    with np.errstate(all="ignore"):
        q = np.floor(q)
    return round_to(
        _rounded_op(operator.sub, wa, _rounded_op(operator.mul, q, wb, working), working), a.dtype
    )


def _signaling(x: Array) -> Array:
    """Lanes holding a signaling NaN (quiet bit, the top fraction bit, clear)."""
    quiet = {2: 0x0040 if x.dtype == BF16 else 0x0200, 4: 0x00400000, 8: 1 << 51}
    with np.errstate(all="ignore"):
        found: Array = np.isnan(x.astype(F64)) & ((bits(x) & quiet[x.dtype.itemsize]) == 0)
    return found


def _pow(a: Array, b: Array) -> Array:
    wide = np.longdouble if a.dtype == F64 else np.float64
    with np.errstate(all="ignore"):
        return round_to(np.power(a.astype(wide), b.astype(wide)), a.dtype)


@dataclass(frozen=True)
class Reference:
    """How the judge computes what a kernel should return for one op kind."""

    describe: str
    fn: Callable[[Array, Array], Array]
    exact_f64: bool = False
    """F64 is computed in exact rational arithmetic: the probe is subsampled."""
    skip: Callable[[Array, Array], Array] | None = None
    """Lanes left out of the precision measure (the semantics leave them open)."""


_BY_KERNEL_OP: Final[dict[str, Reference]] = {
    "add": _arith(operator.add),
    "sub": _arith(operator.sub),
    "mul": _arith(operator.mul),
    "div": _arith(operator.truediv),
    "maximum": _select(np.greater_equal),
    "minimum": _select(np.less_equal),
    "rem": Reference(
        "a - floor(a/b)*b, each step rounded to the working precision", _remainder, exact_f64=True
    ),
    "pow": Reference(
        "pow in f64 (F64: long double), rounded once",
        _pow,
        skip=lambda a, b: _signaling(a) | _signaling(b),
    ),
}

REFERENCES: Final[dict[str, Reference]] = {
    op.op_kind.value: _BY_KERNEL_OP[op.kernel_op] for op in CONTRACT_OPS
}
"""The judge's model of each op kind's semantics (see the module docstring)."""


# -- probes -------------------------------------------------------------------------------------


def _specials(dtype: np.dtype) -> Array:
    """Zeros, infinities, NaN, ones, halves, subnormal and extreme values of `dtype`."""
    info: Any = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)  # type: ignore[no-untyped-call]
    base = [
        0.0,
        1.0,
        0.5,
        2.0,
        3.0,
        1.5,
        10.0,
        float(info.eps),
        float(info.tiny),
        float(info.smallest_subnormal),
        float(info.max),
        math.inf,
        math.nan,
    ]
    values = np.array([s * v for v in base for s in (1.0, -1.0)], np.float64)
    return round_to(values, dtype)


def probes(dtype: np.dtype, n: int, rng: np.random.Generator) -> tuple[Array, Array]:
    """Operand pairs: every pair of special values, random bit patterns and random values."""
    s = _specials(dtype)
    sa, sb = np.repeat(s, s.size), np.tile(s, s.size)
    u = np.dtype(f"u{dtype.itemsize}")
    patterns = rng.integers(0, np.iinfo(u).max, (2, n), dtype=u, endpoint=True).view(dtype)
    magnitude = np.exp2(rng.uniform(-12, 12, (2, n))) * rng.choice([-1.0, 1.0], (2, n))
    ordinary = round_to(magnitude, dtype)
    return (
        np.concatenate([sa, patterns[0], ordinary[0]]),
        np.concatenate([sb, patterns[1], ordinary[1]]),
    )


# -- one audit ----------------------------------------------------------------------------------


@dataclass
class Audit:
    """The judge's findings for one contract at one dtype."""

    kernel: str
    provider: str
    op_kind: str
    dtype: str
    label: str
    reference: str
    declared_ulp: float | None
    measured_ulp: float = 0.0
    max_relative: float = 0.0
    probes: int = 0
    nan_mismatches: int = 0
    worst: str = ""
    identical_runs: int = 0
    runs: int = RUNS
    digest: str = ""
    """SHA-256 of the determinism probe's output bytes (seeded probes: every machine computes
    the same inputs, so equal digests mean bit-identical results across machines)."""
    conformance: list[str] = field(default_factory=list)
    overhead_ns: float = 0.0
    ns_per_element: float = 0.0
    gb_per_s: float = 0.0
    formula_bytes_per_element: float = 0.0
    predicted_ns_per_element: float = 0.0
    large_n: int = 0
    implementations: dict[str, int] = field(default_factory=dict)
    """fuel-cpu-backend only: per other implementation built here (compiled or pure), the probe
    lanes whose bits differ from the linked kernel's (the result would depend on the build)."""
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.failures


def _fresh_out(plan: Plan, fill: int) -> Array:
    """An aligned output buffer of the plan's shape, every byte set to `fill` (garbage)."""
    assert plan.kernel is not None
    out = aligned_empty(plan.size, plan.out_dtype.np, plan.kernel.caps.alignment_bytes)
    out.view(np.uint8)[:] = fill
    return out.reshape(plan.out_shape)


def _call(fn: KernelFn, plan: Plan, inputs: Sequence[Array], fill: int = 0xA5) -> Array:
    """Run the kernel as the executor does; an array it returns instead of writing `out` wins."""
    out = _fresh_out(plan, fill)
    got = cast(Callable[..., object], fn)(*inputs, out=out)
    return got if isinstance(got, np.ndarray) else out


def _plan(contract: KernelContract, dtype: DType, shapes: Sequence[tuple[int, ...]]) -> Plan:
    """The contract's plan for dense operands of `shapes` (its dtype and shape rules applied)."""
    operands = tuple(Operand(dtype, Layout.dense(s)) for s in shapes)
    row = BY_KIND.get(contract.op_kind)
    op = row.name if row is not None else contract.op_kind
    verdict = admit(contract, op, operands, broadcast_shapes(*shapes))
    if isinstance(verdict, tuple):
        raise ValueError(
            f"{contract.name} does not admit its own probe {list(shapes)}: " + "; ".join(verdict)
        )
    return verdict


def _flat_shapes(contract: KernelContract, n: int) -> list[tuple[int, ...]]:
    """Shapes holding `n` elements in the last axis, at each input's declared rank (default 1)."""
    return [(*(1,) * ((s.rank or 1) - 1), n) for s in contract.inputs]


def _conformance_shapes(contract: KernelContract) -> list[tuple[int, ...]]:
    """Operand shapes exercising the accept clause: equal shapes for `same_as`, a stretched
    leading axis for `broadcast_to`."""
    full = (3, 5, 2, 2, 2, 2)
    shapes = []
    for i, spec in enumerate(contract.inputs):
        rank = spec.rank if spec.rank is not None else 2
        shape = full[:rank]
        sc = spec.shape_constraint
        if i and sc is not None and sc.kind == "broadcast_to" and rank:
            shape = (1, *shape[1:])
        shapes.append(shape)
    return shapes


def _watched(call: Callable[[], Array], inputs: Sequence[Array]) -> tuple[Array, bool]:
    """`call()`'s result, and whether the call changed a byte of `inputs`. Compared after every
    call: a compiled kernel ignores NumPy's read-only flag, and two writes can undo each other."""
    before = [x.tobytes() for x in inputs]
    got = call()
    return got, any(x.tobytes() != b for x, b in zip(inputs, before, strict=True))


def _conformance(
    contract: KernelContract, fn: KernelFn, dtype: DType, rng: np.random.Generator
) -> tuple[list[str], Array, tuple[Array, ...]]:
    """Problems with the kernel's output per the `return` clause; also its output and the
    inputs, which the precision check reuses."""
    plan = _plan(contract, dtype, _conformance_shapes(contract))
    inputs = tuple(
        round_to(rng.uniform(-4, 4, s), dtype.np) for s in (o.layout.shape for o in plan.operands)
    )
    first, wrote = _watched(lambda: _call(fn, plan, inputs, 0xA5), inputs)
    second, wrote_again = _watched(lambda: _call(fn, plan, inputs, 0x5A), inputs)
    problems = [f"returned {p}" for p in returned_problems(plan, first, inputs)]
    if wrote or wrote_again:
        problems.append("an input was written")
    if first.tobytes() != second.tobytes():
        problems.append(
            "the output depends on what `out` held before the call (an element "
            "was read or left unwritten)"
        )
    return problems, first, inputs


def _time(call: Callable[[], object], calls: int, repeats: int = 3) -> float:
    """Best seconds per call over `repeats` batches of `calls` calls."""
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def copy_bandwidth(n: int = 1 << 22) -> float:
    """This machine's memory copy speed in bytes per second (read + write of an f32 array of
    `n` elements: a working set of 8 n bytes)."""
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / _time(lambda: np.copyto(dst, src), 1, 5)


def cache_bytes() -> int | None:
    """The size of this CPU's largest cache (Linux sysfs), None where it cannot be read."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None


def _measure(a: Audit, got: Array, want: Array) -> None:
    """Fold one batch of kernel outputs vs reference values into the audit's precision."""
    measured = errors(got, want)
    ulp = measured.ulp
    a.probes += got.size
    a.nan_mismatches += int(measured.nan_mismatch.sum())
    a.max_relative = max(a.max_relative, float(measured.relative.max(initial=0.0)))
    worst = int(np.argmax(ulp)) if ulp.size else 0
    if ulp.size and ulp[worst] > a.measured_ulp:
        a.measured_ulp = float(ulp[worst])
        a.worst = f"got 0x{int(bits(got)[worst]):x}, reference 0x{int(bits(want)[worst]):x}"


def audit(
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
    seed: int = 0,
) -> Audit:
    """Audit one contract at one dtype."""
    ref = REFERENCES.get(contract.op_kind)
    many = len({d for s in contract.inputs for d in s.dtypes}) > 1
    a = Audit(
        contract.name,
        contract.provider.name,
        contract.op_kind,
        dtype.fkc,
        f"{contract.name}[{dtype.fkc}]" if many else contract.name,
        ref.describe if ref else "none",
        contract.precision.max_ulp,
    )
    try:
        _checks(a, contract, fn, dtype, settings, copy_bps, np.random.default_rng(seed))
    except Exception as e:  # a kernel may raise anything: the judge reports it as a failure
        a.failures.append(f"the kernel raised during the audit: {type(e).__name__}: {e}")
    return a


def _checks(
    a: Audit,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
    rng: np.random.Generator,
) -> None:
    """Conformance, determinism, precision and cost, in that order, recorded into `a`."""
    problems, out, inputs = _conformance(contract, fn, dtype, rng)
    a.conformance = problems
    a.failures += [f"conformance: {p}" for p in problems]

    lhs, rhs = probes(dtype.np, settings.random, rng)
    plan = _plan(contract, dtype, _flat_shapes(contract, lhs.size))
    operands = tuple(
        x.reshape(o.layout.shape)
        for x, o in zip((lhs, rhs)[: len(plan.operands)], plan.operands, strict=True)
    )
    outputs = [_call(fn, plan, operands, fill).reshape(-1) for fill in range(RUNS)]
    a.identical_runs = sum(o.tobytes() == outputs[0].tobytes() for o in outputs)
    a.digest = hashlib.sha256(outputs[0].tobytes()).hexdigest()
    bitwise = "bitwise" in contract.determinism or contract.precision.bit_stable_on_same_hardware
    if a.identical_runs != RUNS and bitwise:
        a.failures.append(
            f"determinism: only {a.identical_runs} of {RUNS} runs byte-identical, "
            f"declared {contract.determinism}"
        )

    _implementations(a, contract, operands, plan, outputs[0])
    ref = REFERENCES.get(contract.op_kind)
    if ref is not None and len(contract.inputs) == 2:
        _precision(a, ref, outputs[0], (lhs, rhs), settings, rng)
        wide = tuple(np.broadcast_to(x, out.shape) for x in inputs)
        _measure(a, out.reshape(-1), ref.fn(*(w.reshape(-1) for w in wide)))
        _check_bounds(a, contract)
    _cost(a, contract, fn, dtype, settings, copy_bps)


@cache
def _cpu_thunks() -> dict[str, dict[str, KernelFn]]:
    """fuel-cpu-backend's thunks of every implementation built here but the one linked."""
    from fueltensor.kernels import cpu
    from fueltensor.kernels._chassis import IMPLEMENTATION, IMPLEMENTATIONS

    return {name: cpu.thunks(name) for name in IMPLEMENTATIONS if name != IMPLEMENTATION}


def _implementations(
    a: Audit, contract: KernelContract, operands: Sequence[Array], plan: Plan, got: Array
) -> None:
    """Run the probes through the CPU kernel's other implementations (compiled vs pure) and
    record how many lanes differ: a bitwise contract must not depend on how it was built."""
    for name, thunks in _cpu_thunks().items():
        other = thunks.get(contract.entry_point)
        if other is None:
            continue
        differ = int((bits(_call(other, plan, operands).reshape(-1)) != bits(got)).sum())
        a.implementations[name] = differ
        if differ:
            a.failures.append(
                f"implementations: {name} differs from the linked kernel in {differ} of "
                f"{got.size} lanes (the bits depend on whether the compiled kernels are built)"
            )


def _precision(
    a: Audit,
    ref: Reference,
    got: Array,
    operands: tuple[Array, Array],
    settings: Settings,
    rng: np.random.Generator,
) -> None:
    lhs, rhs = operands
    keep = np.ones(lhs.size, bool)
    if ref.skip is not None:
        keep &= ~ref.skip(lhs, rhs)
    if ref.exact_f64 and lhs.dtype == F64:
        chosen = np.flatnonzero(keep)
        specials = _specials(F64).size ** 2
        rest = rng.choice(chosen[chosen >= specials], settings.exact, replace=False)
        keep = np.zeros(lhs.size, bool)
        keep[np.concatenate([chosen[chosen < specials], rest])] = True
    _measure(a, got[keep], ref.fn(lhs[keep], rhs[keep]))


def _check_bounds(a: Audit, contract: KernelContract) -> None:
    p = contract.precision
    if p.max_ulp is not None and a.measured_ulp > p.max_ulp:
        a.failures.append(
            f"precision: {a.measured_ulp:g} ULP from the reference, declared "
            f"max_ulp {p.max_ulp:g} ({a.worst})"
        )
    if p.max_relative is not None and a.max_relative > p.max_relative:
        a.failures.append(
            f"precision: relative error {a.max_relative:.3g}, declared "
            f"max_relative {p.max_relative:g}"
        )


def _cost(
    a: Audit,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
) -> None:
    tiny = _plan(contract, dtype, _flat_shapes(contract, 1))
    ones = tuple(round_to(np.ones(o.layout.shape), dtype.np) for o in tiny.operands)
    out = _fresh_out(tiny, 0)
    a.overhead_ns = 1e9 * _time(lambda: fn(*ones, out=out), settings.tiny_calls)
    n = settings.large
    big = _plan(contract, dtype, _flat_shapes(contract, n))
    rng = np.random.default_rng(1)
    xs = tuple(round_to(rng.uniform(0.5, 2.0, o.layout.shape), dtype.np) for o in big.operands)
    out = _fresh_out(big, 0)
    seconds = _time(lambda: fn(*xs, out=out), 1)
    predicted = float(big.steps[-1].bytes)
    a.large_n = n
    a.ns_per_element = 1e9 * seconds / n
    a.gb_per_s = predicted / seconds / 1e9
    a.formula_bytes_per_element = predicted / n
    a.predicted_ns_per_element = 1e9 * predicted / n / copy_bps


# -- the report ---------------------------------------------------------------------------------

COLUMNS: Final = (
    "kernel",
    "declared ULP",
    "measured ULP",
    "probes",
    "deterministic",
    "conformance",
    "overhead ns",
    "ns/elem",
    "GB/s",
    "formula B/elem",
    "copy-speed ns/elem",
    "other impl. differ",
    "verdict",
)


LEGEND: Final = (
    "~ = no bound declared (measured and reported, never a failure). measured ULP: the worst "
    "distance to an exactly rounded reference over `probes` input pairs (every pair of special "
    "values plus random ones; fewer for f64, whose exact reference is slow, and none where the "
    "reference is undefined). deterministic: byte-identical outputs / runs. ns/elem and GB/s: "
    "one call on a large input; copy-speed ns/elem: the formula's bytes at the copy bandwidth."
)
"""What the judge table's symbols and counts mean, printed under it."""

NARROW_DROPS: Final = ("overhead ns", "copy-speed ns/elem", "formula B/elem", "GB/s", "ns/elem")
"""Judge columns a narrow terminal may leave out, first to last."""


def judge_row(a: Audit) -> tuple[str, ...]:
    """One table row of an audit (shared by the text, Markdown and HTML tables)."""
    declared = "~" if a.declared_ulp is None else f"{a.declared_ulp:g}"
    return (
        a.label,
        declared,
        f"{a.measured_ulp:g}",
        str(a.probes),
        f"{a.identical_runs}/{a.runs}",
        "ok" if not a.conformance else f"{len(a.conformance)} problem(s)",
        f"{a.overhead_ns:,.0f}",
        f"{a.ns_per_element:.2f}",
        f"{a.gb_per_s:.2f}",
        f"{a.formula_bytes_per_element:g}",
        f"{a.predicted_ns_per_element:.2f}",
        ", ".join(f"{k}: {v}" for k, v in a.implementations.items()) or "-",
        "ok" if a.ok else "FAIL",
    )


@dataclass
class JudgeReport:
    """Every audit, the copy bandwidth the cost predictions use, and how long it all took."""

    rows: list[Audit]
    quick: bool
    copy_gb_per_s: float
    seconds: float
    machine: Fingerprint = field(default_factory=machine)
    """Where it was measured: bits and timings depend on the CPU, NumPy's SIMD and the libm."""
    copy_working_set: int = 0
    """Bytes the copy-bandwidth measurement touched: the largest kernel working set."""

    @property
    def failures(self) -> list[tuple[str, str]]:
        """Every failure as (audit label, why), in audit order."""
        return [(a.label, f) for a in self.rows for f in a.failures]

    @property
    def ok(self) -> bool:
        """True when every audit passed."""
        return not self.failures

    def _where(self) -> str:
        """Where the copy bandwidth was measured: in cache or not, and how much it touched."""
        if not self.copy_working_set:
            return ""
        cache = cache_bytes()
        size = f"{self.copy_working_set / 2**20:.1f} MiB"
        if cache is None:
            return f" (working set {size}, like the kernels')"
        where = "in cache" if self.copy_working_set <= cache else "beyond the cache"
        return f" ({where}: working set {size}, largest cache {cache / 2**20:.0f} MiB)"

    def summary(self) -> str:
        """One line: audits, failing audits, the copy bandwidth and the time taken."""
        bad = sum(not a.ok for a in self.rows)
        return (
            f"judge: {len(self.rows)} audits, {bad} failing, copy bandwidth "
            f"{self.copy_gb_per_s:.1f} GB/s{self._where()}, {self.seconds:.1f} s"
            + (" (--quick)" if self.quick else "")
        )

    def __str__(self) -> str:
        from fueltensor.tools.textwidth import fit_lines

        table = text_table([COLUMNS, *map(judge_row, self.rows)], NARROW_DROPS)
        lines = [table, fit_lines(LEGEND), fit_lines(self.summary())]
        lines.append(fit_lines(f"measured on: {self.machine}"))
        lines += [f"FAIL {label}: {why}" for label, why in self.failures]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<JudgeReport: {len(self.rows)} audits, {len(self.failures)} failures>"

    def _repr_html_(self) -> str:
        from fueltensor.tools.display import judge_html

        return judge_html(self)

    def to_dict(self) -> dict[str, Any]:
        """Everything measured, as JSON-ready data."""
        return {
            "quick": self.quick,
            "copy_gb_per_s": self.copy_gb_per_s,
            "seconds": self.seconds,
            "machine": self.machine.to_dict(),
            "ok": self.ok,
            "audits": [{**asdict(a), "ok": a.ok} for a in self.rows],
        }

    def to_markdown(self) -> str:
        """The table as GitHub Markdown, failures listed below it."""
        rows = [COLUMNS, *map(judge_row, self.rows)]
        out = ["| " + " | ".join(r) + " |" for r in rows]
        out.insert(1, "|" + "---|" * len(COLUMNS))
        out += ["", LEGEND, "", self.summary(), "", f"Measured on: {self.machine}"]
        out += ["", *(f"- **FAIL** `{k}`: {w}" for k, w in self.failures)]
        return "\n".join(out) + "\n"


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<24}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


@overload
def judge(
    reg: Registry | None = None,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    *,
    client: None = None,
    every_worker: bool = False,
    timeout: float | None = None,
) -> JudgeReport: ...


@overload
def judge(
    reg: None = None,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    *,
    client: Client,
    every_worker: bool = False,
    timeout: float | None = None,
) -> ClusterJudgeReport: ...


def judge(
    reg: Registry | None = None,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    *,
    client: Client | None = None,
    every_worker: bool = False,
    timeout: float | None = None,
) -> JudgeReport | ClusterJudgeReport:
    """Audit the registrable contracts of `reg` (default: the active `use_registry` registry,
    like `explain` and `compare_backends`), or only the named `kernels`; a progress bar goes to
    stderr when it is a terminal.

    With a Dask `client`, the audit runs on one worker per host (every worker when
    `every_worker`) over each worker's own registry, each tagged with its machine's fingerprint,
    and the machines are compared (see `fueltensor.tools.cluster`); `timeout` bounds the wait.
    """
    if client is not None:
        if reg is not None:
            raise ValueError(
                "a judge across a cluster audits each worker's own registry; pass "
                "kernels=[names] instead of a registry"
            )
        from fueltensor.tools.cluster import judge_cluster

        return judge_cluster(client, kernels, quick, seed, every_worker, timeout)
    reg = reg if reg is not None else current_policy().registry
    if kernels is None:
        chosen = [c for c in reg if c.registrable]
    else:
        chosen = [reg[name] for name in kernels]
        for c in chosen:
            if not c.registrable:
                raise ValueError(
                    f"{c.name} is describe-only (registrable: false); the judge "
                    "audits contracts that link a kernel"
                )
    jobs = [
        (c, _dtypes.BY_FKC[d])
        for c in chosen
        for d in dict.fromkeys(d for s in c.inputs[:1] for d in s.dtypes)
    ]
    show = sys.stderr.isatty() if progress is None else progress
    settings = Settings.of(quick)
    start = time.perf_counter()
    copy_n = 3 * settings.large  # f32 elements: the working set of an f64 kernel's cost probe
    copy_bps = copy_bandwidth(copy_n)
    rows = []
    for i, (contract, dtype) in enumerate(jobs):
        if show:
            _progress(i, len(jobs), contract.name)
        rows.append(audit(contract, reg.kernel(contract.name), dtype, settings, copy_bps, seed))
    if show:
        _progress(len(jobs), len(jobs), "done")
    return JudgeReport(
        rows,
        quick,
        copy_bps / 1e9,
        time.perf_counter() - start,
        copy_working_set=8 * copy_n,
    )


def write_outputs(
    report: JudgeReport | ClusterJudgeReport, json_path: str | None, markdown_path: str | None
) -> None:
    """Write the report as JSON and/or Markdown files."""
    if json_path:
        Path(json_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    if markdown_path:
        Path(markdown_path).write_text(report.to_markdown(), encoding="utf-8")
