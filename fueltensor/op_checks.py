"""What a registrable contract declares that the op table (`fueltensor.ops`) cannot serve: an
op_kind no operation dispatches to, or a cast contract whose rule is not one of `CAST_RULES`.
The registry warns of each when it loads; `fueltensor contracts --check` lists them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from fueltensor.families import CAST_RULES
from fueltensor.ops import CAST_OP, CONTRACT_OPS, SCALAR_FORMS

if TYPE_CHECKING:
    from fueltensor.fkc.schema import KernelContract


def known_op_kinds() -> tuple[str, ...]:
    """The op kinds the engine dispatches to contracts: the table's and its scalar forms'."""
    return tuple(op.op_kind.value for op in CONTRACT_OPS) + tuple(
        form.op_kind.value for form in SCALAR_FORMS
    )


def _cast_problems(c: KernelContract) -> list[str]:
    """Why a cast contract's declaration cannot be planned: its rule keys and values (each
    from `CAST_RULES`) and its target (a `fixed(<dtype>)` rule: a cast's result is the dtype
    the call asks for)."""
    where = f"{c.source.path}:{c.source.lines.get('op_params', c.source.line)}"
    out = [
        f"{where}: {c.name} declares op_params.{key} {c.op_params.get(key)!r}; a cast declares "
        f"one of {', '.join(values)}, or no call asks for it"
        for key, values in CAST_RULES.items()
        if c.op_params.get(key) not in values
    ]
    rule = c.outputs[0].dtype_rule if len(c.outputs) == 1 else None
    if rule is None or rule.kind != "fixed":
        out.append(
            f"{c.source.path}:{c.source.line}: {c.name} is a cast whose output dtype_rule is not "
            "fixed(<target dtype>): no call can ask for its result"
        )
    return out


def op_kind_problems(contracts: Iterable[KernelContract]) -> list[str]:
    """One message per registrable contract whose op_kind no operation dispatches to, and per
    fault of a cast contract's rule."""
    known = known_op_kinds()
    out = []
    for c in contracts:
        if not c.registrable:
            continue
        if c.op_kind == CAST_OP.op_kind:
            out += _cast_problems(c)
        elif c.op_kind not in known:
            close = difflib.get_close_matches(c.op_kind, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            line = c.source.lines.get("op_kind", c.source.line)
            out.append(
                f"{c.source.path}:{line}: op_kind {c.op_kind!r} of {c.name} is not an op kind "
                f"fueltensor dispatches{hint}, so it is never chosen; known: {', '.join(known)}"
            )
    return out
