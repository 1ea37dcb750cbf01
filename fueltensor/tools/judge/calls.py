"""Calling a contract's kernel as dispatch does, for the judge's audits and the certifier: the
contract's plan for dense operands, a fresh aligned output filled with garbage, the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, broadcast_shapes
from fueltensor.core.storage import aligned_empty
from fueltensor.engine.planner import Operand, Plan, admit
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.ops import BY_KIND

Array = np.ndarray


def fresh_out(plan: Plan, fill: int) -> Array:
    """An aligned output buffer of the plan's shape, every byte set to `fill` (garbage)."""
    assert plan.kernel is not None
    out = aligned_empty(plan.size, plan.out_dtype.np, plan.kernel.caps.alignment_bytes)
    out.view(np.uint8)[:] = fill
    return out.reshape(plan.out_shape)


def call(fn: KernelFn, plan: Plan, inputs: Sequence[Array], fill: int = 0xA5) -> Array:
    """Run the kernel as the executor does; an array it returns instead of writing `out` wins."""
    out = fresh_out(plan, fill)
    got = cast(Callable[..., object], fn)(*inputs, *plan.params, out=out)
    return got if isinstance(got, np.ndarray) else out


def plan_for(
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


def flat_shapes(contract: KernelContract, n: int) -> list[tuple[int, ...]]:
    """Shapes holding `n` elements in the last axis, at each input's declared rank (default 1)."""
    return [(*(1,) * ((s.rank or 1) - 1), n) for s in contract.inputs]
