"""The three-operand contract operations (`fueltensor.ops.TERNARY_OPS`): `ft.where(c, x1, x2)`,
a selection, and `ft.clip(x, min, max)`, a clamp, planned from their op kinds' contracts as the
unary ones are in `engine.unary`.

Each namespace function is made here from the array API module's function that checks and
coerces its arguments (`operation`): that function returns the row's three tensors and the
dtype they are cast to (None: promoted, the family's `fixed` operands left as they are), and
this module plans (cached), runs and notifies. Dtypes no contract takes (integers, bools, the
8-bit floats) run on the row's host function, labelled so. These calls take the Python path.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fueltensor.core.tensor import FuelTensor
from fueltensor.engine.backends import Policy, current_policy, notify
from fueltensor.engine.choice import decide
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, Planning, Target
from fueltensor.ops import BY_KIND, BY_NAME, HOST_CALLS, OpKind

OPERATIONS: dict[str, Callable[..., FuelTensor]] = {}
"""The namespace functions of the three-operand rows by name, each added as its array API
module defines it (`operation`): `dispatch.functions()` reads them with the others."""

Tensors = tuple[FuelTensor, FuelTensor, FuelTensor]
Operands = tuple[Tensors, Target | None]
"""A ternary row's tensors, and the dtype they are cast to first (None: promoted)."""


def choose(op: str, tensors: Tensors, to: Target | None, policy: Policy) -> tuple[Plan, Planning]:
    """The plan `op(*tensors)` runs under `policy` (cached by the operands' dtypes and layouts:
    a row's `to` is a function of them, x's dtype for clip), and the planning it came from."""
    key = (op, *(v for t in tensors for v in (t._dtype.np, t._layout)))
    cached: tuple[Plan, Planning, None] | None = policy.plans.get(key)  # type: ignore[assignment]
    if cached is not None:
        return cached[0], cached[1]
    operands = tuple(Operand(t._dtype, t._layout) for t in tensors)
    chosen = decide(BY_NAME[op], operands, policy, to)
    policy.remember(key, (*chosen, None))  # no fast-path entry: the Python path runs it
    return chosen


def operation(kind: OpKind) -> Callable[[Callable[..., Operands]], Callable[..., FuelTensor]]:
    """Make a ternary row's namespace function from `make`, the function that checks and
    coerces its arguments into the row's operands: plan, run, notify the trace and observers.
    `explain` plans the same operands (`__fueltensor_operands__`)."""
    row = BY_KIND[kind]

    def wrap(make: Callable[..., Operands]) -> Callable[..., FuelTensor]:
        @functools.wraps(make)
        def function(*args: Any, **kwargs: Any) -> FuelTensor:
            tensors, to = make(*args, **kwargs)
            plan, planning = choose(row.name, tensors, to, current_policy())
            result = run(plan, tensors, HOST_CALLS[row.name])
            notify(planning, plan, tensors, result)
            return result

        function.__fueltensor_op__ = row.name  # type: ignore[attr-defined]
        function.__fueltensor_operands__ = make  # type: ignore[attr-defined]
        OPERATIONS[row.name] = function
        return function

    return wrap
