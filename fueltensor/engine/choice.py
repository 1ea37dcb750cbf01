"""Choosing how a contract operation runs, whatever its family: the cheapest admissible
contract, else the row's host function (a labelled host plan), else, under a `use_backend`
restriction that refuses dtypes some contract takes, `NoKernelError` listing every candidate.
`dispatch` (binary) and `unary` plan through `decide`; neither caches here (they key their
plan caches by their own operands)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.errors import NoKernelError
from fueltensor.core.layout import broadcast_shapes
from fueltensor.engine.backends import Policy
from fueltensor.engine.planner import (
    Operand,
    Plan,
    Planning,
    Step,
    StepKind,
    Target,
    plan_contracts,
    promote,
)
from fueltensor.families import TRAITS
from fueltensor.ops import ContractOp

if TYPE_CHECKING:
    from fueltensor.registry import Registry


def fixed_operands(op: ContractOp) -> frozenset[int]:
    """The positions of the operands whose dtype `op`'s family fixes (`Traits.fixed`): never
    promoted with the others."""
    traits = TRAITS[op.family]
    named = {name for name, _ in traits.fixed}
    return frozenset(i for i, name in enumerate(traits.operands) if name in named)


def host_plan(
    op: ContractOp,
    operands: tuple[Operand, ...],
    rejected: Planning | None,
    to: Target | None,
    fn: Callable[..., np.ndarray] | None = None,
) -> Plan:
    """The operation as its host function (the row's, or `fn`: a cast's to its target) on
    the promoted operands (cast to `to` first when given), with the contracts it could not
    use."""
    fn = fn or op.host
    cast, casts = promote(operands, to, fixed_operands(op))
    probe = fn(*(np.empty((0,), o.dtype.np) for o in cast))
    out_dtype = _dtypes.from_numpy(probe.dtype)
    shape = broadcast_shapes(*(o.layout.shape for o in operands))
    moved = sum(o.count * o.dtype.itemsize for o in cast) + math.prod(shape) * out_dtype.itemsize
    names = TRAITS[op.family].operands
    host = Step(
        kind=StepKind.HOST,
        operand=None,
        label=f"numpy.{fn.__name__}({', '.join(names[: len(operands)])}) -> "
        f"{out_dtype.name}{list(shape)}",
        bytes=moved,
    )
    steps = (*(s for c in casts for s in c), host)
    return Plan(
        op=op.name,
        op_kind=op.op_kind,
        kernel=None,
        steps=steps,
        cost=sum(s.bytes for s in steps),
        rejected=rejected.rejected if rejected else {},
        out_shape=shape,
        out_dtype=out_dtype,
        operands=operands,
        prep=casts,
    )


def covered(
    row: ContractOp,
    operands: tuple[Operand, ...],
    reg: Registry,
    to: Target | None,
    returns: _dtypes.DType | None = None,
) -> bool:
    """Whether a contract of `reg`, of any provider, takes the operation's promoted dtypes (and
    returns `returns` where given: a cast's target): only then can a `use_backend` restriction
    refuse it (dtypes none takes, integers and bools, run on the host under every policy, as
    they do with none)."""
    dtypes = [o.dtype.fkc for o in promote(operands, to, fixed_operands(row))[0]]
    return any(
        all(fkc in spec.dtypes for fkc, spec in zip(dtypes, c.inputs, strict=False))
        and (returns is None or str(c.outputs[0].dtype_rule) == f"fixed({returns.fkc})")
        for c in reg.for_op(row.op_kind)
    )


def decide(
    row: ContractOp, operands: tuple[Operand, ...], policy: Policy, to: Target | None = None
) -> tuple[Plan, Planning]:
    """The plan `row` runs on `operands` under `policy` (cast to `to` first when given), and
    the planning it came from; NoKernelError where the policy refuses every candidate."""
    planning = plan_contracts(
        row.name,
        row.op_kind,
        operands,
        policy.registry,
        policy.providers,
        to=to,
        fixed=fixed_operands(row),
    )
    if planning.viable:
        return planning.viable[0], planning
    if policy.allow_host or not covered(row, operands, policy.registry, to):
        return host_plan(row, operands, planning, to), planning
    args = ", ".join(f"{o.dtype.name}{list(o.layout.shape)}" for o in operands)
    lines = [f"{k}: {'; '.join(v)}" for k, v in planning.rejected.items()]
    raise NoKernelError(
        f"no kernel contract admits {row.name}({args}) under use_backend({policy.label!r}) "
        f"[{row.op_kind}]; candidates:\n  " + ("\n  ".join(lines) or "none registered")
    )
