"""The contract operations as data: one row per operation the kernel contracts can serve.

Everything that names these operations is derived from `CONTRACT_OPS`: the namespace functions
(`fueltensor.add` ...) and FuelTensor's operators (`fueltensor.core.operators`), dispatch's
op_kind and host fallback, the judge's references, and the kernels' op lists (the chassis, and
the compiled module's `OPS`, checked against this table at import). What an operation computes
is the contracts' business: read it from the FKC documents, never from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

import numpy as np

if TYPE_CHECKING:
    from fueltensor.fkc.schema import KernelContract


class StrEnum(str, Enum):
    """A closed vocabulary whose members are their strings: `str()`, equality and hashing are
    the string's, so a member and its string find the same dict entry (enum.StrEnum is 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)

    def __hash__(self) -> int:
        return str.__hash__(self)


class OpKind(StrEnum):
    """The op kinds the library dispatches: the `op_kind` its contracts declare."""

    ADD = "AddElementwise"
    SUB = "SubElementwise"
    MUL = "MulElementwise"
    DIV = "DivElementwise"
    REM = "RemElementwise"
    POW = "PowElementwise"
    POWI = "PowIElementwise"
    MAXIMUM = "MaximumElementwise"
    MINIMUM = "MinimumElementwise"


@dataclass(frozen=True, slots=True)
class ScalarForm:
    """What an operation plans when its second operand is an integer scalar (a Python int or
    a NumPy integer): contracts of another op kind that take that scalar as their one typed
    parameter (`accept.params`), over the first operand alone."""

    op_kind: OpKind
    """The op_kind of those contracts, e.g. "PowIElementwise"."""
    kernel_op: str
    """Their kernels' op id: the thunk-name stem in entry points (`powi_f32`)."""


@dataclass(frozen=True, slots=True)
class ContractOp:
    """One contract operation: its names in the namespace, the contracts and the kernels."""

    name: str
    """The array-API namespace function, e.g. "subtract"."""
    op_kind: OpKind
    """The op_kind its contracts declare, e.g. "SubElementwise"."""
    dunder: str | None
    """Operator method stem ("sub": `__sub__`, `__rsub__`, `__isub__`), None without one."""
    host: np.ufunc
    """The NumPy ufunc that serves dtypes no contract admits (a labelled host operation)."""
    kernel_op: str
    """The kernels' op id: the thunk-name stem in entry points (`sub_f32`), the C module's name."""
    summary: str
    """What the operation is, for its docstring (its numerics are in the contracts)."""
    integer_scalar: ScalarForm | None = None
    """The form planned first when x2 is an integer scalar (x ** 2), None without one; when
    no contract of it admits the call, the operation is planned as usual."""


CONTRACT_OPS: Final[tuple[ContractOp, ...]] = (
    ContractOp("add", OpKind.ADD, "add", np.add, "add", "x1 + x2"),
    ContractOp("subtract", OpKind.SUB, "sub", np.subtract, "sub", "x1 - x2"),
    ContractOp("multiply", OpKind.MUL, "mul", np.multiply, "mul", "x1 * x2"),
    ContractOp("divide", OpKind.DIV, "truediv", np.divide, "div", "x1 / x2"),
    ContractOp("remainder", OpKind.REM, "mod", np.remainder, "rem", "x1 % x2"),
    ContractOp(
        "pow", OpKind.POW, "pow", np.power, "pow", "x1 ** x2", ScalarForm(OpKind.POWI, "powi")
    ),
    ContractOp("maximum", OpKind.MAXIMUM, None, np.maximum, "maximum", "the larger of x1 and x2"),
    ContractOp("minimum", OpKind.MINIMUM, None, np.minimum, "minimum", "the smaller of x1 and x2"),
)
"""The operator surface. Adding a contract operation: its FKC documents, its kernels, one row."""

BY_NAME: Final = MappingProxyType({op.name: op for op in CONTRACT_OPS})
"""The rows by namespace name ("add")."""

BY_KIND: Final[Mapping[str, ContractOp]] = MappingProxyType(
    {op.op_kind.value: op for op in CONTRACT_OPS}
)
"""The rows by op kind ("AddElementwise", or `OpKind.ADD`, which equals it)."""

KERNEL_OPS: Final[tuple[str, ...]] = tuple(op.kernel_op for op in CONTRACT_OPS)
"""The kernels' op ids, in table order."""

SCALAR_FORMS: Final[tuple[ScalarForm, ...]] = tuple(
    op.integer_scalar for op in CONTRACT_OPS if op.integer_scalar is not None
)
"""The integer-scalar forms (their op kinds are dispatched too), in table order."""


SPELLINGS: Final[Mapping[str, ContractOp]] = MappingProxyType(
    {
        spelling.lower(): op
        for op in CONTRACT_OPS
        for spelling in (op.name, op.op_kind.value, op.kernel_op)
    }
)
"""Every spelling of an operation the command line accepts, lower-cased: its namespace name
("subtract"), its op kind ("SubElementwise") and its kernels' op id ("sub")."""


def spelled(text: str) -> ContractOp | None:
    """The operation `text` names in any of its `SPELLINGS` (any case), None if none."""
    return SPELLINGS.get(text.strip().lower())


def _host_power(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """`np.power` for dtypes no contract admits, its refusal of a negative integer exponent for
    an integer base said in fueltensor's words."""
    try:
        out: np.ndarray = np.power(x1, x2)
    except ValueError:
        if x1.dtype.kind in "iub" and x2.dtype.kind in "iub":
            raise ValueError(
                f"an integer ({x1.dtype}) raised to a negative integer ({x2.dtype}) power has no "
                "integer result; make the base a float first, e.g. x.astype(ft.float64) ** y"
            ) from None
        raise
    return out


HOST_CALLS: Final[Mapping[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = MappingProxyType(
    {op.name: op.host for op in CONTRACT_OPS} | {"pow": _host_power}
)
"""What runs each operation on the host (dtypes no contract admits): its ufunc, with NumPy's
refusals translated where NumPy's words would puzzle a fueltensor user."""


def known_op_kinds() -> tuple[str, ...]:
    """The op kinds the engine dispatches to contracts: the table's and its scalar forms'."""
    return tuple(op.op_kind.value for op in CONTRACT_OPS) + tuple(
        form.op_kind.value for form in SCALAR_FORMS
    )


def op_kind_problems(contracts: Iterable[KernelContract]) -> list[str]:
    """One message per registrable contract whose op_kind no operation dispatches to."""
    known = known_op_kinds()
    out = []
    for c in contracts:
        if c.registrable and c.op_kind not in known:
            import difflib  # only for the message

            close = difflib.get_close_matches(c.op_kind, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            line = c.source.lines.get("op_kind", c.source.line)
            out.append(
                f"{c.source.path}:{line}: op_kind {c.op_kind!r} of {c.name} is not an op kind "
                f"fueltensor dispatches{hint}, so it is never chosen; known: {', '.join(known)}"
            )
    return out
