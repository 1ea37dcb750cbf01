"""One audit: a contract at one dtype against the kernel it is linked to.

Four checks, recorded into an `Audit`:

* **determinism**: one probe run 16 times into freshly garbage-filled buffers must give
  byte-identical outputs (the seeds' own evidence standard);
* **precision**: the maximum ULP distance from a higher-precision reference over random bit
  patterns, random ordinary values and every pair of `fueltensor.testing`'s special values; a
  declared `max_ulp` (or `max_relative` / `max_absolute`) that is exceeded is a failure, an
  undeclared one is reported as measured (but a kernel whose semantics come from its formula
  is held to 0 ULP where the reference is that formula); where the reference fixes a NaN's or
  a zero's bits (a selection returns the operand), another payload or sign fails too. A
  failure names the worst lane: its inputs, the bits got and expected, and the class of the
  difference;
* **conformance**: output dtype, shape, layout and aliasing per the `return` clause, inputs left
  untouched, and every output element written without reading `out`;
* **cost**: the call overhead on one-element inputs, then ns per element and GB/s at a large
  size, next to what the `bytes_moved` formula predicts at this machine's copy bandwidth; every
  figure is a steady-state median of `tools.timing`'s harness, as `compare_backends` times.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.core.errors import plural
from fueltensor.engine.execute import returned_problems
from fueltensor.engine.planner import Plan
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.threads import threads_for
from fueltensor.testing import (
    bits,
    difference_classes,
    errors,
    lane_message,
    random_bits,
    special_pairs,
    special_values,
    summarize,
)
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.argreductions import audit_index, is_index
from fueltensor.tools.judge.calls import (
    as_operands,
    audited_dtypes,
    call,
    conformance_shapes,
    flat_shapes,
    fresh_out,
    param_values,
    plan_for,
    time_on_threads,
    timing,
)
from fueltensor.tools.judge.contractions import audit_contraction, is_contraction
from fueltensor.tools.judge.declared import reference_for
from fueltensor.tools.judge.hard import hard_values
from fueltensor.tools.judge.invariance import audit_invariance
from fueltensor.tools.judge.record import RUNS, Audit, Settings, record_runs
from fueltensor.tools.judge.reductions import audit_reduction, is_reduction
from fueltensor.tools.judge.references import F64, Array, Reference, round_to
from fueltensor.tools.judge.semantics import audit_semantics

# -- probes -------------------------------------------------------------------------------------


def probes(dtype: np.dtype, n: int, rng: np.random.Generator, arity: int = 2) -> tuple[Array, ...]:
    """Operands, one array per input: for two, every pair of `testing.special_values`, random
    bit patterns and random values (for three, a third special value beside each pair); for
    one, every special value, the hard regions (`judge.hard`), random bit patterns and random
    values."""
    patterns = np.asarray(random_bits(dtype, (arity, n), rng=rng))
    magnitude = np.exp2(rng.uniform(-12, 12, (arity, n))) * rng.choice([-1.0, 1.0], (arity, n))
    ordinary = round_to(magnitude, dtype)
    head: tuple[Array, ...] = tuple(s.array for s in special_pairs(dtype))
    if arity == 1:
        head = (np.concatenate([special_values(dtype).array, hard_values(dtype)]),)
    if arity == 3:  # every special pair, the special values cycled beside them (one more
        cycle = special_values(dtype).array  # lane than a row of pairs: each meets them all)
        head = (*head, np.resize(np.concatenate([cycle, cycle[:1]]), head[0].size))
    return tuple(np.concatenate([h, patterns[i], ordinary[i]]) for i, h in enumerate(head))


# -- one audit ----------------------------------------------------------------------------------


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
    plan = plan_for(contract, dtype, conformance_shapes(contract), param_values(contract)[0])
    inputs = as_operands(
        contract.op_kind, [rng.uniform(-4, 4, o.layout.shape) for o in plan.operands], dtype.np
    )
    first, wrote = _watched(lambda: call(fn, plan, inputs, 0xA5), inputs)
    second, wrote_again = _watched(lambda: call(fn, plan, inputs, 0x5A), inputs)
    problems = [f"returned {p}" for p in returned_problems(plan, first, inputs)]
    if wrote or wrote_again:
        problems.append("an input was written")
    if first.tobytes() != second.tobytes():
        problems.append(
            "the output depends on what `out` held before the call (an element "
            "was read or left unwritten)"
        )
    return problems, first, inputs


Inputs = Mapping[str, "Array | int"]
"""A batch's operands by the contract's names (arrays aligned with the batch) and its integer
parameters (one value for the whole batch)."""


def _lane(i: int, got: Array, want: Array, inputs: Inputs, lanes: Array | None) -> str:
    """`testing.lane_message` of lane `i` of a batch (numbered as the probe's lane)."""
    at = {k: v[i] if isinstance(v, np.ndarray) else v for k, v in inputs.items()}
    return lane_message((int(i if lanes is None else lanes[i]),), got[i], want[i], at)


def _measure(
    a: Audit, got: Array, want: Array, inputs: Inputs, ref: Reference, lanes: Array | None = None
) -> None:
    """Fold one batch of kernel outputs vs reference values into the audit's precision: the
    worst ULP distance, the NaN lanes whose bits the reference fixes, the differences by
    class; `lanes` numbers the batch's lanes in the probe (default: in order)."""
    measured = errors(got, want)
    ulp = measured.ulp
    a.probes += got.size
    a.nan_mismatches += int(measured.nan_mismatch.sum())
    a.max_relative = max(a.max_relative, float(measured.relative.max(initial=0.0)))
    with np.errstate(all="ignore"):
        both_nan = np.isnan(got.astype(F64)) & np.isnan(want.astype(F64))
        zeros = ref.zero_signs & (got.astype(F64) == 0) & (want.astype(F64) == 0)
    differ = (bits(got) != bits(want)) & (ref.nan_bits | ~both_nan)
    classes, counts = np.unique(difference_classes(got[differ], want[differ]), return_counts=True)
    for name, n in zip(classes.tolist(), counts.tolist(), strict=True):
        a.differences[name] = a.differences.get(name, 0) + n
    payload = np.flatnonzero(differ & (both_nan | zeros))
    a.nan_payloads += payload.size
    if payload.size and not a.nan_worst:
        a.nan_worst = _lane(int(payload[0]), got, want, inputs, lanes)
    worst = int(np.argmax(ulp)) if ulp.size else 0
    if ulp.size and ulp[worst] > a.measured_ulp:
        a.measured_ulp = float(ulp[worst])
        a.worst = _lane(worst, got, want, inputs, lanes)


def audit(
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
    seed: int = 0,
) -> Audit:
    """Audit one contract at one dtype."""
    ref = reference_for(contract)
    many = len(audited_dtypes(contract)) > 1
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
        a.faulted = True
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
    """Conformance, determinism, precision, semantics (`judge.semantics`) and cost, in that
    order, recorded into `a`; a reduction's own audit (`judge.reductions`; an index's,
    `judge.argreductions`) for a contract of a reduction row, a contraction's
    (`judge.contractions`) for one of a contraction row."""
    if is_reduction(contract.op_kind):
        audit = audit_index if is_index(contract.op_kind) else audit_reduction
        audit(a, contract, fn, dtype, settings, copy_bps, rng)
        return
    if is_contraction(contract.op_kind):
        audit_contraction(a, contract, fn, dtype, settings, copy_bps, rng)
        return
    problems, out, inputs = _conformance(contract, fn, dtype, rng)
    a.conformance = problems
    a.failures += [f"conformance: {p}" for p in problems]

    if casts.is_cast(contract.op_kind):
        columns: tuple[Array, ...] = (
            casts.probes(dtype.np, casts.target(contract), settings.random, rng),
        )
    else:
        columns = as_operands(
            contract.op_kind, probes(dtype.np, settings.random, rng, len(contract.inputs)), dtype.np
        )
    sweep = param_values(contract)
    plan = plan_for(contract, dtype, flat_shapes(contract, columns[0].size), sweep[0])
    operands = tuple(x.reshape(o.layout.shape) for x, o in zip(columns, plan.operands, strict=True))
    outputs = [call(fn, plan, operands, fill).reshape(-1) for fill in range(RUNS)]
    record_runs(a, contract, outputs)

    _implementations(a, contract, operands, plan, outputs[0])
    ref = reference_for(contract)
    if ref is not None and contract.params:
        _swept_precision(a, ref, contract, fn, dtype, columns[0], sweep, settings, rng)
        _check_bounds(a, contract, ref)
    elif ref is not None:
        names = tuple(spec.name for spec in contract.inputs)
        _precision(a, ref, outputs[0], dict(zip(names, columns, strict=True)), settings, rng)
        wide = [np.broadcast_to(x, out.shape).reshape(-1) for x in inputs]
        _measure(a, out.reshape(-1), ref.fn(*wide), dict(zip(names, wide, strict=True)), ref)
        _check_bounds(a, contract, ref)
        _fresh_values(a, ref, contract, (fn, plan), operands, settings, rng)
    invariance, notes = audit_invariance(contract, fn, dtype)
    failures = [*a.failures, *invariance]
    a.failures, a.semantics = audit_semantics(contract, fn, dtype.np, settings.quick, failures)
    a.semantics += notes
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
        differ = int((bits(call(other, plan, operands).reshape(-1)) != bits(got)).sum())
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
    operands: dict[str, Array],
    settings: Settings,
    rng: np.random.Generator,
) -> None:
    """Precision over the probe's lanes (for F64 with an exact reference: every special pair
    and a random subsample of the rest)."""
    columns = list(operands.values())
    keep = np.ones(columns[0].size, bool)
    if ref.skip is not None:
        keep &= ~ref.skip(*columns)
    if ref.exact_f64 and columns[0].dtype == F64:
        chosen = np.flatnonzero(keep)
        specials = len(special_values(F64)) ** len(columns)
        rest = rng.choice(chosen[chosen >= specials], settings.exact, replace=False)
        keep = np.zeros(columns[0].size, bool)
        keep[np.concatenate([chosen[chosen < specials], rest])] = True
    lanes = np.flatnonzero(keep)
    kept = {name: x[keep] for name, x in operands.items()}
    _measure(a, got[keep], ref.fn(*kept.values()), kept, ref, lanes)


def _fresh_values(
    a: Audit,
    ref: Reference,
    contract: KernelContract,
    linked: tuple[KernelFn, Plan],
    operands: Sequence[Array],
    settings: Settings,
    rng: np.random.Generator,
) -> None:
    """Precision on the probe's pairs rolled apart (the same shapes, other values), measured in
    an audit of its own: a kernel answering from a cache of earlier inputs passes the probe and
    fails here. Reported when the probe itself passed its bounds."""
    fn, plan = linked
    other = [np.roll(x, i + 1) for i, x in enumerate(operands)]
    again = call(fn, plan, other).reshape(-1)
    b = Audit(a.kernel, a.provider, a.op_kind, a.dtype, a.label, a.reference, a.declared_ulp)
    names = (spec.name for spec in contract.inputs)
    _precision(
        b, ref, again, dict(zip(names, (x.reshape(-1) for x in other), strict=True)), settings, rng
    )
    _check_bounds(b, contract, ref)
    if b.failures and not any(f.startswith("precision:") for f in a.failures):
        a.failures.append(
            f"fresh inputs: {b.failures[0]} (other values of the probe's shape: an answer "
            "from earlier inputs?)"
        )


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
        specials = special_values(F64).array
        x = np.concatenate([specials, rng.choice(x, settings.exact, replace=False)])
    for params in sweep:
        plan = plan_for(contract, dtype, flat_shapes(contract, x.size), params)
        got = call(fn, plan, (x.reshape(plan.operands[0].layout.shape),)).reshape(-1)
        keep = ~ref.skip(x, *params) if ref.skip is not None else np.ones(x.size, bool)
        inputs: dict[str, Array | int] = {contract.inputs[0].name: x[keep]}
        inputs.update((p.name, v) for p, v in zip(contract.params, params, strict=True))
        _measure(a, got[keep], ref.fn(x[keep], *params), inputs, ref)


def _check_bounds(a: Audit, contract: KernelContract, ref: Reference) -> None:
    """Fail the audit where the measured precision breaks a declared bound, or the formula
    the semantics come from where no bound is declared (the reference computes it: 0 ULP), or
    a NaN's bits differ where the reference fixes them; each failure names the lane that
    shows it."""
    p = contract.precision
    found = f" (lanes that differ: {summarize(a.differences)})" if a.differences else ""
    if p.max_ulp is not None and a.measured_ulp > p.max_ulp:
        a.failures.append(
            f"precision: {a.measured_ulp:g} ULP from the reference, declared "
            f"max_ulp {p.max_ulp:g}{found}; worst {a.worst}"
        )
    sem = contract.semantics
    formula = ref.formula and sem is not None and sem.from_formula
    if p.max_ulp is None and formula and a.measured_ulp > 0:
        a.failures.append(
            f"precision: {a.measured_ulp:g} ULP from the reference, which is the formula the "
            f"semantics come from (source: formula, no max_ulp declared){found}; worst {a.worst}"
        )
    if p.max_relative is not None and a.max_relative > p.max_relative:
        a.failures.append(
            f"precision: relative error {a.max_relative:.3g}, declared "
            f"max_relative {p.max_relative:g}; worst {a.worst}"
        )
    if a.nan_payloads:
        a.failures.append(
            f"precision: {plural(a.nan_payloads, 'lane')} not the reference's NaN or zero "
            f"(payload or sign differs; {a.reference}){found}; first {a.nan_worst}"
        )


def _cost(
    a: Audit,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
) -> None:
    params = param_values(contract)[0]
    tiny = plan_for(contract, dtype, flat_shapes(contract, 1), params)
    ones = as_operands(contract.op_kind, [np.ones(o.layout.shape) for o in tiny.operands], dtype.np)
    out = fresh_out(tiny, 0)
    overhead = timing(fn, tiny, ones, out)
    a.overhead_ns, a.overhead_calls = 1e9 * overhead.seconds, overhead.calls
    n = settings.large
    big = plan_for(contract, dtype, flat_shapes(contract, n), params)
    rng = np.random.default_rng(1)
    xs = as_operands(
        contract.op_kind, [rng.uniform(0.5, 2.0, o.layout.shape) for o in big.operands], dtype.np
    )
    out = fresh_out(big, 0)
    one, a.ns_per_element_all = time_on_threads(fn, big, xs, out)
    seconds, a.large_calls = one.seconds, one.calls
    a.threads = threads_for(fn, n)
    predicted = float(big.steps[-1].bytes)
    a.large_n = n
    a.ns_per_element = 1e9 * seconds / n
    a.gb_per_s = predicted / seconds / 1e9
    a.formula_bytes_per_element = predicted / n
    a.predicted_ns_per_element = 1e9 * predicted / n / copy_bps
