"""Integer-scalar forms: `x ** 2` planned as the op table's `integer_scalar` op kind.

When an operation's row has an integer-scalar form (pow: PowIElementwise) and its second
operand is a Python int or a NumPy integer scalar, the contracts of that op kind are planned
first, over the tensor alone, with the integer passed as their typed parameter
(`accept.params`; the planner checks its type and range). When none admits the call (an
integer tensor, an exponent outside i32, a `use_backend` restriction), the operation is
planned as usual, so `x ** 2**40` is PowElementwise and an integer tensor runs on the host.
Which kernel takes which exponent is the contracts' business: nothing here names one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, cast

import numpy as np

from fueltensor.core.tensor import FuelTensor, asarray
from fueltensor.engine import fast
from fueltensor.engine.backends import Policy, notify
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, Planning, plan_contracts
from fueltensor.ops import BINARY_OPS, ScalarForm

FORMS: Final[dict[str, ScalarForm]] = {
    op.name: op.integer_scalar for op in BINARY_OPS if op.integer_scalar is not None
}
"""Operation name ("pow") -> its integer-scalar form, from the op table."""

_KEY: Final = fast.form_key_function(fast.compiled())
"""The plan-cache key of `op(x, k)` in this form: `_fast.form_key` where compiled (the fast
path looks the same parts up), else `fast.python_form_key`."""
_MISS: Final = object()
"""The plan cache's miss marker."""

EntryMaker = Callable[[Plan], object | None]
"""`dispatch._fast_entry`: the compiled fast path's entry for a plan, or None."""


def integer_scalar(value: Any) -> int | None:
    """`value` as an int when it is a Python int or a NumPy integer scalar (never a bool)."""
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, int | np.integer):
        return int(value)
    return None


def choose(
    op: str, x: FuelTensor, k: int, policy: Policy, entry: EntryMaker
) -> tuple[Plan, Planning] | None:
    """The plan of `op(x, k)` in its integer-scalar form under `policy` (cached by dtype,
    layout and k, with the fast path's `entry` for it), or None when no contract of the form
    admits it."""
    key = _KEY(op, x, k)
    cached = policy.plans.get(key, _MISS)
    if cached is not _MISS:
        return None if cached is None else cast("tuple[Plan, Planning, object]", cached)[:2]
    operands = (Operand(x._dtype, x._layout),)
    planning = plan_contracts(
        op, FORMS[op].op_kind, operands, policy.registry, policy.providers, (k,)
    )
    if not planning.viable:
        policy.remember(key, None)
        return None
    plan = planning.viable[0]
    policy.remember(key, (plan, planning, entry(plan)))
    return plan, planning


def _call(op: str, a: Any, b: Any) -> tuple[FuelTensor, int] | None:
    """`op(a, b)` as (tensor, integer) when its integer-scalar form applies (a NumPy array `a`
    adopted, as dispatch coerces it), else None."""
    k = integer_scalar(b) if op in FORMS else None
    if k is None:
        return None
    if isinstance(a, FuelTensor):
        return a, k
    return (asarray(a), k) if isinstance(a, np.ndarray) else None


def _planned(
    op: str, a: Any, b: Any, policy: Policy, entry: EntryMaker
) -> tuple[FuelTensor, Plan, Planning] | None:
    """The tensor, plan and planning of `op(a, b)` in its integer-scalar form, or None."""
    call = _call(op, a, b)
    chosen = choose(op, *call, policy, entry) if call is not None else None
    return None if call is None or chosen is None else (call[0], *chosen)


def planned(
    op: str, a: Any, b: Any, policy: Policy, entry: EntryMaker
) -> tuple[Plan, Planning] | None:
    """The integer-scalar plan of `op(a, b)` when the form applies and a contract admits it,
    else None (an integer tensor to a negative power then meets the host's refusal)."""
    found = _planned(op, a, b, policy, entry)
    return None if found is None else found[1:]


def run_form(op: str, a: Any, b: Any, policy: Policy, entry: EntryMaker) -> FuelTensor | None:
    """Run `op(a, b)` in its integer-scalar form, or return None when it does not apply."""
    found = _planned(op, a, b, policy, entry)
    if found is None:
        return None
    x, plan, planning = found
    result = run(plan, (x,))
    notify(planning, plan, (x,), result)
    return result
