"""Whether the planner can call a linked kernel as it will: `kernel(*inputs, *params, out=out)`
with the inputs its op kind's family has (`families.TRAITS`), checked when a contract is linked."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from fueltensor.core.errors import plural
from fueltensor.families import TRAITS
from fueltensor.kernels import KernelFn
from fueltensor.ops import BY_KIND

if TYPE_CHECKING:
    from fueltensor.fkc.schema import KernelContract


def calling_problem(c: KernelContract, fn: KernelFn) -> str | None:
    """Why the planner cannot call `c`'s kernel `fn` as `fn(*inputs, *params, out=out)`: the
    contract declares other inputs than its op kind's family has (`families.TRAITS`), or `fn`'s
    signature does not take them; None when it can (or `fn` shows no signature)."""
    row = BY_KIND.get(c.op_kind)
    names = [s.name for s in c.inputs] + [p.name for p in c.params]
    if row is not None and len(c.inputs) != len(TRAITS[row.family].operands):
        traits = TRAITS[row.family]
        return (
            f"{c.op_kind} is a {row.family} operation, whose kernels take "
            f"{plural(len(traits.operands), 'input')} ({', '.join(traits.operands)}), called as "
            f"{traits.thunk}; {c.name} declares {len(c.inputs)} ({', '.join(names)})"
        )
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without text signature: nothing to check
        return None
    try:
        signature.bind(*names, out=None)
    except TypeError as e:
        return (
            f"its kernel {getattr(fn, '__name__', fn)!s}{signature} cannot be called as the "
            f"planner calls {c.name}'s: kernel({', '.join(names)}, *, out) ({e})"
        )
    return None
