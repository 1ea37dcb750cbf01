"""The unary contract operations (`fueltensor.ops.UNARY_OPS`): `ft.exp(x)` planned from the
contracts of its op kind, like the binary ones in `dispatch`, over one operand.

A float input of a dtype some contract takes is planned through the contracts (a dense copy in
front of a kernel that needs one, as for the binary operations); the cheapest admissible wins,
a tie going to the production provider over the oracle. Integer and bool inputs follow the
row's `integers` rule: `Integers.TO_FLOAT` casts them to float64 first (a Cast step the trace
shows) and plans that; `Integers.HOST` (abs, negative) leaves them to the row's host function,
with an integer result. A complex input, or a dtype no contract takes, runs on the host,
labelled so. These calls take the Python path: the compiled fast path (`ext._fast`) serves
the binary operations only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.tensor import FuelTensor, asarray
from fueltensor.engine.backends import Policy, current_policy, notify
from fueltensor.engine.choice import decide
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, Planning, Target
from fueltensor.ops import BY_NAME, HOST_CALLS, UNARY_OPS, ContractOp, Integers

TO_FLOAT: Final = Target(
    _dtypes.float64,
    "an integer or bool input of a float function is computed in the default float dtype "
    "(float64; the array API leaves the result dtype to the implementation)",
)
"""Where `Integers.TO_FLOAT` rows send integer and bool inputs, and what the Cast says."""


def operand(x: Any) -> FuelTensor:
    """`x` as the operation's tensor: a FuelTensor as it is, a NumPy array or scalar adopted;
    TypeError naming what to do with anything else."""
    if isinstance(x, FuelTensor):
        return x
    if isinstance(x, np.ndarray | np.generic):
        return asarray(x)
    raise TypeError(
        f"x must be a FuelTensor or a NumPy array, got {type(x).__name__}; "
        "convert it with fueltensor.asarray"
    )


def _target(row: ContractOp, x: FuelTensor) -> Target | None:
    """The dtype `x` is cast to before planning `row`: float64 for an integer or bool input of
    a `TO_FLOAT` row, else None (planned as it is)."""
    integral = x._dtype.np.kind in "iub"
    return TO_FLOAT if integral and row.integers is Integers.TO_FLOAT else None


def choose(op: str, x: FuelTensor, policy: Policy) -> tuple[Plan, Planning]:
    """The plan `op(x)` runs under `policy` (cached by x's dtype and layout), and the planning
    it came from."""
    key = (op, x._dtype.np, x._layout)
    cached: tuple[Plan, Planning, None] | None = policy.plans.get(key)  # type: ignore[assignment]
    if cached is not None:
        return cached[0], cached[1]
    row = BY_NAME[op]
    chosen = decide(row, (Operand(x._dtype, x._layout),), policy, _target(row, x))
    policy.remember(key, (*chosen, None))  # no fast-path entry: the Python path runs it
    return chosen


def unary(op: str, x: Any) -> FuelTensor:
    """Run the unary contract operation `op` ("exp" ...) on `x` and return a fresh tensor:
    plan (cached), run, notify the trace and the observers (`compare_backends`)."""
    tensor = operand(x)
    plan, planning = choose(op, tensor, current_policy())
    result = run(plan, (tensor,), HOST_CALLS[op])
    notify(planning, plan, (tensor,), result)
    return result


def _operation(row: ContractOp) -> Callable[[Any], FuelTensor]:
    """The namespace function of a unary contract operation."""
    name = row.name

    def operation(x: Any, /) -> FuelTensor:
        return unary(name, x)

    operation.__name__ = operation.__qualname__ = name
    extension = "" if row.array_api else " A fueltensor extension, not an array API function."
    operation.__doc__ = (
        f"{row.summary.capitalize()}, element-wise, planned from the {row.op_kind} kernel "
        f"contracts; their documents state its numerics (`fueltensor contracts --op "
        f"{row.op_kind}`). Integer and bool inputs: {row.integers.value}.{extension}"
    )
    operation.__fueltensor_op__ = name  # type: ignore[attr-defined]
    return operation


OPERATIONS: dict[str, Callable[[Any], FuelTensor]] = {
    row.name: _operation(row) for row in UNARY_OPS
}
"""The namespace functions of the unary contract operations, by name ("exp" ...)."""

# Named so that type checkers and `fueltensor.__all__` see them, in table order (a row added
# to the table without its name here fails at import; tests check each name is its row's).
exp, log, tanh, sigmoid, erf, sqrt, rsqrt, sin, cos, abs, negative = OPERATIONS.values()
