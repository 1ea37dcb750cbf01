"""One audit: a contract at one dtype against the kernel it is linked to.

Four checks, recorded into an `Audit`:

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
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final, cast

import ml_dtypes
import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, broadcast_shapes
from fueltensor.core.storage import aligned_empty
from fueltensor.engine.execute import returned_problems
from fueltensor.engine.planner import Operand, Plan, admit
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.kernels.threads import running_on, threads_for
from fueltensor.ops import BY_KIND
from fueltensor.tools import checked
from fueltensor.tools.compare import bits, errors
from fueltensor.tools.judge.references import BF16, F64, REFERENCES, Array, Reference, round_to

RUNS: Final = 16
"""Repeated invocations of one probe for the determinism check."""

PARAM_SWEEP: Final = (3, -1, 0, 1, 2, -2, -3, 7, -7, 31, -31, 32, -32)
"""The values the judge gives a contract's integer parameters (`accept.params`), each where
the parameter's type admits it: the first for conformance, determinism and cost, every one of
them for precision."""


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
    """One call on `large_n` elements, on one thread."""
    ns_per_element_all: float = 0.0
    """The same call on every thread the kernel splits it over (`threads`)."""
    threads: int = 1
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
    """Run the kernel as the executor does; an array it returns instead of writing `out` wins.
    A compiled kernel runs checked, in a worker process (`tools.checked`: its faults are raised
    as KernelFault, which the audit reports)."""
    if checked.applies(fn):
        assert plan.kernel is not None
        shape, dtype = plan.out_shape, plan.out_dtype.np
        return checked.call(cast(CompiledKernel, fn), plan.kernel, inputs, shape, dtype)
    out = _fresh_out(plan, fill)
    got = cast(Callable[..., object], fn)(*inputs, *plan.params, out=out)
    return got if isinstance(got, np.ndarray) else out


def _param_values(contract: KernelContract) -> list[tuple[int, ...]]:
    """The parameter tuples the audit runs the contract with (`[()]` without parameters)."""
    if not contract.params:
        return [()]
    specs = contract.params
    return [(v,) * len(specs) for v in PARAM_SWEEP if all(p.refusal(v) is None for p in specs)]


def _plan(
    contract: KernelContract,
    dtype: DType,
    shapes: Sequence[tuple[int, ...]],
    params: tuple[int, ...] = (),
) -> Plan:
    """The contract's plan for dense operands of `shapes` and the parameter values `params`
    (its dtype and shape rules applied)."""
    operands = tuple(Operand(dtype, Layout.dense(s)) for s in shapes)
    row = BY_KIND.get(contract.op_kind)
    op = row.name if row is not None else contract.op_kind
    verdict = admit(contract, op, operands, broadcast_shapes(*shapes), params)
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
    plan = _plan(contract, dtype, _conformance_shapes(contract), _param_values(contract)[0])
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


def _timed(fn: KernelFn, plan: Plan, inputs: Sequence[Array], out: Array, calls: int) -> float:
    """Best seconds per call of `fn` on `inputs` over three batches of `calls` calls (in the
    checked worker for a compiled kernel)."""
    if checked.applies(fn):
        assert plan.kernel is not None
        kernel, shape, dtype = cast(CompiledKernel, fn), plan.out_shape, plan.out_dtype.np
        return checked.seconds_per_call(kernel, plan.kernel, inputs, shape, dtype, calls)
    return _time(lambda: fn(*inputs, *plan.params, out=out), calls)


def _time_on_threads(call: Callable[[], object], n: int) -> tuple[float, float]:
    """Seconds per call on one thread, and ns per element on every thread the setting gives."""
    with running_on(1):
        one = _time(call, 1)
    return one, 1e9 * _time(call, 1) / n


def copy_bandwidth(n: int = 1 << 22) -> float:
    """This machine's memory copy speed in bytes per second (read + write of an f32 array of
    `n` elements: a working set of 8 n bytes)."""
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / _time(lambda: np.copyto(dst, src), 1, 5)


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
    except (Exception, SystemExit) as e:  # a kernel may raise anything, sys.exit included
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
    sweep = _param_values(contract)
    plan = _plan(contract, dtype, _flat_shapes(contract, lhs.size), sweep[0])
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
    if ref is not None and contract.params:
        _swept_precision(a, ref, contract, fn, dtype, lhs, sweep, settings, rng)
        _check_bounds(a, contract)
    elif ref is not None and len(contract.inputs) == 2:
        _precision(a, ref, outputs[0], (lhs, rhs), settings, rng)
        other = tuple(np.roll(x, i + 1) for i, x in enumerate(operands))  # same shape, new pairs
        again = _call(fn, plan, other).reshape(-1)
        _precision(a, ref, again, (other[0].reshape(-1), other[1].reshape(-1)), settings, rng)
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


def _swept_precision(
    a: Audit,
    ref: Reference,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    probe: Array,
    sweep: list[tuple[int, ...]],
    settings: Settings,
    rng: np.random.Generator,
) -> None:
    """Precision of a one-input contract with parameters: the probe's distinct values at every
    parameter tuple of the sweep (a subsample where F64's reference is exact and slow)."""
    x = np.unique(probe.view(f"u{probe.itemsize}")).view(probe.dtype)
    if ref.exact_f64 and x.dtype == F64 and x.size > settings.exact:
        specials = _specials(F64)
        x = np.concatenate([specials, rng.choice(x, settings.exact, replace=False)])
    for params in sweep:
        plan = _plan(contract, dtype, _flat_shapes(contract, x.size), params)
        got = _call(fn, plan, (x.reshape(plan.operands[0].layout.shape),)).reshape(-1)
        keep = ~ref.skip(x, *params) if ref.skip is not None else np.ones(x.size, bool)
        _measure(a, got[keep], ref.fn(x[keep], *params))


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
    params = _param_values(contract)[0]
    tiny = _plan(contract, dtype, _flat_shapes(contract, 1), params)
    ones = tuple(round_to(np.ones(o.layout.shape), dtype.np) for o in tiny.operands)
    out = _fresh_out(tiny, 0)
    a.overhead_ns = 1e9 * _timed(fn, tiny, ones, out, settings.tiny_calls)
    n = settings.large
    big = _plan(contract, dtype, _flat_shapes(contract, n), params)
    rng = np.random.default_rng(1)
    xs = tuple(round_to(rng.uniform(0.5, 2.0, o.layout.shape), dtype.np) for o in big.operands)
    out = _fresh_out(big, 0)
    if checked.applies(fn):  # one thread: a compiled provider's kernel does not split
        seconds = _timed(fn, big, xs, out, 1)
        a.ns_per_element_all = 1e9 * seconds / n
    else:
        seconds, a.ns_per_element_all = _time_on_threads(lambda: fn(*xs, *params, out=out), n)
    a.threads = threads_for(fn, n)
    predicted = float(big.steps[-1].bytes)
    a.large_n = n
    a.ns_per_element = 1e9 * seconds / n
    a.gb_per_s = predicted / seconds / 1e9
    a.formula_bytes_per_element = predicted / n
    a.predicted_ns_per_element = 1e9 * predicted / n / copy_bps
