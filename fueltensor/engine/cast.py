"""The cast operation (`fueltensor.ops.CAST_OP`): `ft.astype(x, ft.bfloat16)` between two float
formats, planned from the contracts of its op kind like the unary functions in `engine.unary`.

A call asks for a result dtype and a rule (`families.CAST_RULES`: rounding to nearest even; overflow
to inf or NaN, or `saturate=True`'s largest finite) and the planner admits only the contracts
that return that dtype and declare that rule (`planner.Request`). A pair no contract of any
provider serves runs on the host (`x.astype`), labelled so; one some contract serves but the
`use_backend` restriction refuses raises `NoKernelError` with every candidate. These calls take
the Python path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np

from fueltensor.core.dtypes import DType, as_dtype
from fueltensor.core.errors import NoKernelError
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine.backends import Policy, current_policy, notify
from fueltensor.engine.choice import covered, host_plan
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, Planning, Request, plan_contracts
from fueltensor.families import CAST_RULES
from fueltensor.kernels.casting import can_overflow
from fueltensor.ops import CAST_OP

ROUNDING: Final = CAST_RULES["rounding"][0]
"""The rounding every cast asks for (the only one the contracts declare yet)."""
INF_OR_NAN, SATURATE = CAST_RULES["overflow"]

OPERATIONS: dict[str, Callable[..., FuelTensor]] = {}
"""The namespace's astype by name, added where its array API module defines it:
`dispatch.functions()` reads it with the others."""


def request(src: DType, dst: DType, saturate: bool) -> Request:
    """What a cast of `src` to `dst` asks of its contract; ValueError for `saturate` where no
    value of `src` can overflow `dst` (the flag would mean nothing)."""
    if saturate and not can_overflow(src.np, dst.np):
        raise ValueError(
            f"saturate=True means nothing for a cast of {src.name} to {dst.name}: every "
            f"{src.name} value, infinities included, is within {dst.name}'s range, so none can "
            "overflow; leave saturate out"
        )
    overflow = SATURATE if saturate else INF_OR_NAN
    return Request(dst, (("rounding", ROUNDING), ("overflow", overflow)))


def _host(dst: DType) -> Callable[[np.ndarray], np.ndarray]:
    """The host cast to `dst` (`x.astype`), named for the plan's Host step."""

    def astype(x: np.ndarray) -> np.ndarray:
        return x.astype(dst.np)

    return astype


def choose(x: FuelTensor, dst: DType, saturate: bool, policy: Policy) -> tuple[Plan, Planning]:
    """The plan `astype(x, dst)` runs under `policy` (cached by x's dtype and layout, the target
    and the rule), and the planning it came from."""
    key = (CAST_OP.name, x._dtype.np, x._layout, dst, saturate)
    cached: tuple[Plan, Planning, None] | None = policy.plans.get(key)  # type: ignore[assignment]
    if cached is not None:
        return cached[0], cached[1]
    operands = (Operand(x._dtype, x._layout),)
    planning = plan_contracts(
        CAST_OP.name,
        CAST_OP.op_kind,
        operands,
        policy.registry,
        policy.providers,
        request=request(x._dtype, dst, saturate),
    )
    if planning.viable:
        plan = planning.viable[0]
    elif policy.allow_host or not covered(CAST_OP, operands, policy.registry, None, dst):
        plan = host_plan(CAST_OP, operands, planning, None, _host(dst))
    else:
        lines = [f"{k}: {'; '.join(v)}" for k, v in planning.rejected.items()]
        raise NoKernelError(
            f"no kernel contract admits astype({x._dtype.name}{list(x.shape)}, {dst.name}"
            f"{', saturate=True' * saturate}) under use_backend({policy.label!r}) "
            f"[{CAST_OP.op_kind}]; candidates:\n  " + "\n  ".join(lines)
        )
    policy.remember(key, (plan, planning, None))  # no fast-path entry: the Python path runs it
    return plan, planning


def cast(x: FuelTensor, dst: DType, saturate: bool = False) -> FuelTensor:
    """`x` cast to the float dtype `dst` by the contracts' rule: plan (cached), run, notify the
    trace and the observers (`compare_backends`)."""
    plan, planning = choose(x, dst, saturate, current_policy())
    result = run(plan, (x,), _host(dst))
    notify(planning, plan, (x,), result)
    return result


def explained(policy: Policy, x: object, dtype: object, /, **kwargs: object) -> Plan | None:
    """The plan `astype(x, dtype, **kwargs)` runs under `policy` when it is a cast between two
    float formats (None otherwise: the host runs it, and `explain` records that)."""
    src = x if isinstance(x, FuelTensor) else None
    dst = as_dtype(dtype)
    if src is None or not (src._dtype.is_float and dst.is_float) or dst is src._dtype:
        return None
    return choose(src, dst, bool(kwargs.get("saturate", False)), policy)[0]
