"""How the judge and the certifier call a kernel: plans for its probe shapes, garbage-filled
outputs, the call (in a checked run's worker for a compiled kernel, `tools.checked`, so nothing
it does reaches the judge's process) and the timings (`tools.timing`'s harness, in the worker
for a compiled kernel too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, cast

import numpy as np

from fueltensor.core.dtypes import BY_FKC, DType
from fueltensor.core.layout import Layout, broadcast_shapes
from fueltensor.core.storage import aligned_empty
from fueltensor.engine.planner import Operand, Plan, admit
from fueltensor.families import TRAITS
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.threads import running_on
from fueltensor.ops import BY_KIND
from fueltensor.tools import checked
from fueltensor.tools.judge.references import Array, round_to
from fueltensor.tools.timing import Timing, time_one

PARAM_SWEEP: Final = (3, -1, 0, 1, 2, -2, -3, 7, -7, 31, -31, 32, -32)
"""The values the judge gives a contract's integer parameters (`accept.params`), each where
the parameter's type admits it: the first for conformance, determinism and cost, every one of
them for precision."""


def fixed_inputs(op_kind: str) -> dict[int, DType]:
    """The inputs whose dtype the op kind's family fixes (a selection's bool condition, `ops.
    Traits.fixed`), by position, with that dtype: the judge never sweeps them over a dtype."""
    row = BY_KIND.get(op_kind)
    if row is None:
        return {}
    traits = TRAITS[row.family]
    fixed = dict(traits.fixed)
    return {i: BY_FKC[fixed[n]] for i, n in enumerate(traits.operands) if n in fixed}


def audited_dtypes(contract: KernelContract) -> list[str]:
    """The FKC dtypes the judge audits `contract` at: its first swept input's, in order."""
    fixed = fixed_inputs(contract.op_kind)
    first = next(s for i, s in enumerate(contract.inputs) if i not in fixed)
    return list(dict.fromkeys(first.dtypes))


def as_operands(op_kind: str, columns: Sequence[Array], dtype: np.dtype) -> tuple[Array, ...]:
    """Float64 (or `dtype`) columns as an op kind's operands: rounded once to `dtype`, and a
    fixed bool input true where its column's sign bit is clear (a mix of both on every probe)."""
    fixed = fixed_inputs(op_kind)
    return tuple(
        _sign_clear(x) if i in fixed else x if x.dtype == dtype else round_to(x, dtype)
        for i, x in enumerate(columns)
    )


def _sign_clear(x: Array) -> Array:
    """Where `x`'s sign bit is clear, read from its bits (a NaN's too)."""
    width = 8 * x.dtype.itemsize
    out: Array = (np.ascontiguousarray(x).view(f"u{x.dtype.itemsize}") >> (width - 1)) == 0
    return out


def result_dtype(contract: KernelContract, dtype: np.dtype) -> np.dtype:
    """The dtype of `contract`'s output for operands of `dtype`: its `fixed(...)` rule's (a
    comparison's bool), else the operands' own (`passthrough`)."""
    rule = contract.outputs[0].dtype_rule
    return BY_FKC[rule.args[0]].np if rule.kind == "fixed" else dtype


def fresh_out(plan: Plan, fill: int) -> Array:
    """An aligned output buffer of the plan's shape, every byte set to `fill` (garbage)."""
    assert plan.kernel is not None
    out = aligned_empty(plan.size, plan.out_dtype.np, plan.kernel.caps.alignment_bytes)
    out.view(np.uint8)[:] = fill
    return out.reshape(plan.out_shape)


def call(fn: KernelFn, plan: Plan, inputs: Sequence[Array], fill: int = 0xA5) -> Array:
    """Run the kernel as the executor does; an array it returns instead of writing `out` wins.
    A compiled kernel runs checked, in a worker process (`tools.checked`: its faults are raised
    as KernelFault, which the audit reports)."""
    if checked.applies(fn):
        assert plan.kernel is not None
        shape, dtype = plan.out_shape, plan.out_dtype.np
        kernel = cast(checked.Compiled, fn)
        return checked.call(kernel, plan.kernel, inputs, shape, dtype, params=plan.params)
    out = fresh_out(plan, fill)
    got = cast(Callable[..., object], fn)(*inputs, *plan.params, out=out)
    return got if isinstance(got, np.ndarray) else out


def param_values(contract: KernelContract) -> list[tuple[int, ...]]:
    """The parameter tuples the audit runs the contract with (`[()]` without parameters)."""
    if not contract.params:
        return [()]
    specs = contract.params
    return [(v,) * len(specs) for v in PARAM_SWEEP if all(p.refusal(v) is None for p in specs)]


def plan_for(
    contract: KernelContract,
    dtype: DType,
    shapes: Sequence[tuple[int, ...]],
    params: tuple[int, ...] = (),
) -> Plan:
    """The contract's plan for dense operands of `shapes` and the parameter values `params`
    (its dtype and shape rules applied)."""
    fixed = fixed_inputs(contract.op_kind)
    operands = tuple(Operand(fixed.get(i, dtype), Layout.dense(s)) for i, s in enumerate(shapes))
    row = BY_KIND.get(contract.op_kind)
    op = row.name if row is not None else contract.op_kind
    verdict = admit(contract, op, operands, broadcast_shapes(*shapes), params)
    if isinstance(verdict, tuple):
        raise ValueError(
            f"{contract.name} does not admit its own probe {list(shapes)}: " + "; ".join(verdict)
        )
    return verdict


def flat_shapes(contract: KernelContract, n: int) -> list[tuple[int, ...]]:
    """Shapes holding `n` elements in the last axis, at each input's declared rank (default 1)."""
    return [(*(1,) * ((s.rank or 1) - 1), n) for s in contract.inputs]


def conformance_shapes(contract: KernelContract) -> list[tuple[int, ...]]:
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


def timing(fn: KernelFn, plan: Plan, inputs: Sequence[Array], out: Array) -> Timing:
    """`time_one`'s timing of `fn` on `inputs` (in the checked worker, the same way, for a
    compiled kernel: it never runs in the judge's process)."""
    if checked.applies(fn):
        assert plan.kernel is not None
        kernel, shape, dtype = cast(checked.Compiled, fn), plan.out_shape, plan.out_dtype.np
        return checked.timing_of(kernel, plan.kernel, inputs, shape, dtype, params=plan.params)
    return time_one(lambda: fn(*inputs, *plan.params, out=out))


def time_on_threads(
    fn: KernelFn, plan: Plan, inputs: Sequence[Array], out: Array
) -> tuple[Timing, float]:
    """The timing of `fn` on `inputs` on one thread, and its ns per element on every thread the
    setting gives (the same figure for a compiled provider's kernel, which does not split)."""
    if checked.applies(fn):
        one = timing(fn, plan, inputs, out)
        return one, 1e9 * one.seconds / plan.size
    with running_on(1):
        one = timing(fn, plan, inputs, out)
    return one, 1e9 * timing(fn, plan, inputs, out).seconds / plan.size
