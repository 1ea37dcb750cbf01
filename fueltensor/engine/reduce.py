"""The reductions planned from contracts (`ops.PLANNED_REDUCTIONS`: sum, prod, max, min, argmax,
argmin; issue 48): `ft.sum(x, axis=..., keepdims=...)` and its kin, as docs/reductions.md
designs them.

The call's axes are normalised (None: every axis; negatives counted from the end; an axis out of
range or repeated refused naming x's rank) and a max, min, argmax or argmin over no element
refused, before
anything is allocated. The planner admits the contracts that take x's dtype and layout and the
axes (`accept.params` `axes`) and computes the reduced shape (`shape_rule: reduce(x)`); the
kernel writes it dense and `keepdims` is a reshape here. Where no contract of any provider
takes the call (integers, bool, complex, FP8, a `dtype=` other than x's), the array API module's
host function runs it, labelled host; one some contract takes but a `use_backend` restriction
refuses raises `NoKernelError` with every candidate. These calls take the Python path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fueltensor.core.dtypes import as_dtype
from fueltensor.core.errors import NoKernelError
from fueltensor.core.layout import normalize_axis
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine.backends import Policy, current_policy, notify
from fueltensor.engine.choice import covered
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, Planning, plan_contracts
from fueltensor.ops import BY_NAME, INDEX_REDUCTIONS, ContractOp, OpKind

Axis = int | tuple[int, ...] | None
Host = Callable[[], FuelTensor]

OPERATIONS: dict[str, Callable[..., FuelTensor]] = {}
"""The namespace's sum, prod, max, min, argmax and argmin by name, added where the array API
modules define them: `dispatch.functions()` reads it with the others."""


def normalised(axis: Axis, ndim: int) -> tuple[int, ...]:
    """`axis` as the sorted, distinct, non-negative axes of a rank-`ndim` input (None: all of
    them); an axis out of range raises AxisError (a ValueError and an IndexError, naming
    `ndim`, as every axis argument does: `normalize_axis`), one given twice ValueError."""
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    over = sorted(normalize_axis(a, ndim) for a in items)
    if len(set(over)) != len(over):
        raise ValueError(f"axis {axis} names one axis twice (an input of {ndim} dimensions)")
    return tuple(over)


def refuse_empty(row: ContractOp, x: FuelTensor, axis: Axis, over: tuple[int, ...]) -> None:
    """ValueError for a max, min, argmax or argmin over no element (it has no value, no index),
    naming the axis."""
    selects = row.op_kind in (OpKind.MAX, OpKind.MIN) or row.op_kind in INDEX_REDUCTIONS
    if selects and any(x.shape[i] == 0 for i in over):
        raise ValueError(
            f"{row.name} of no elements has no value: x of shape {x.shape} has none along "
            f"axis={axis}; check the size first (the array API leaves this undefined)"
        )


def choose(
    row: ContractOp, x: FuelTensor, over: tuple[int, ...], policy: Policy
) -> tuple[Plan, Planning] | None:
    """The contract plan `row` over `over` of x runs under `policy` (cached by row, dtype,
    layout and axes) and its planning; None where the host runs it (no contract takes it)."""
    key = (row.name, x._dtype.np, x._layout, over)
    if key in policy.plans:
        return policy.plans[key]  # type: ignore[return-value]
    operands = (Operand(x._dtype, x._layout),)
    shape = tuple(n for i, n in enumerate(x.shape) if i not in over)
    planning = plan_contracts(
        row.name, row.op_kind, operands, policy.registry, policy.providers, (over,), out_shape=shape
    )
    chosen: tuple[Plan, Planning] | None = None
    if planning.viable:
        chosen = (planning.viable[0], planning)
    elif not policy.allow_host and covered(row, operands, policy.registry, None):
        lines = [f"{k}: {'; '.join(v)}" for k, v in planning.rejected.items()]
        raise NoKernelError(
            f"no kernel contract admits {row.name}({x._dtype.name}{list(x.shape)}, axes={over}) "
            f"under use_backend({policy.label!r}) [{row.op_kind}]; candidates:\n  "
            + "\n  ".join(lines)
        )
    policy.remember(key, chosen)
    return chosen


def _own(x: FuelTensor, dtype: Any) -> bool:
    """Whether a `dtype=` argument leaves x's dtype (None, or x's own): only then may a
    contract, which returns x's dtype, serve the call."""
    return dtype is None or as_dtype(dtype) is x._dtype


def reduce(
    name: str, x: FuelTensor, axis: Axis, keepdims: bool, host: Host, dtype: Any = None
) -> FuelTensor:
    """The reduction `name` of x over `axis`: planned (cached) and run through its contracts,
    trace and observers notified, reshaped for `keepdims`; `host()` where no contract serves."""
    row = BY_NAME[name]
    over = normalised(axis, x.ndim)
    refuse_empty(row, x, axis, over)
    chosen = choose(row, x, over, current_policy()) if _own(x, dtype) else None
    if chosen is None:
        return host()
    plan, planning = chosen
    result = run(plan, (x,))
    notify(planning, plan, (x,), result)
    if keepdims:
        kept = tuple(1 if i in over else n for i, n in enumerate(x.shape))
        return result.reshape(kept)
    return result


def explained(policy: Policy, name: str, x: object, /, **kwargs: Any) -> Plan | None:
    """The contract plan `name(x, **kwargs)` runs under `policy`, None where the host runs it
    (`explain` then runs it and records the host plan)."""
    if not isinstance(x, FuelTensor) or not _own(x, kwargs.get("dtype")):
        return None
    row, over = BY_NAME[name], normalised(kwargs.get("axis"), x.ndim)
    refuse_empty(row, x, kwargs.get("axis"), over)
    chosen = choose(row, x, over, policy)
    return None if chosen is None else chosen[0]
