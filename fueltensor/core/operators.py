"""FuelTensor's operators, defined with the class (a mixin it inherits).

The contract operations' operators (`x + y`, `y + x`, `x += y`, from the op table's `dunder`
column) are compiled callables where `ext._fast` is built, so `x + y` runs the fast path
with no Python frame in between; when the fast path declines, or where it is not built, they
call dispatch through `HOOKS.binary` / `HOOKS.binary_inplace`. `-x` and `abs(x)` (the unary
rows' `dunder`) call `HOOKS.unary`; `x < y` (the comparisons' `dunder`) their namespace
function, as a host operator does. Every other operator is the
array-API function of the same meaning, looked up in `HOOKS.namespace`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from fueltensor.core.hooks import HOOKS
from fueltensor.core.shared import FAST
from fueltensor.ops import BY_KIND, OpKind

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor

Method = Callable[[Any, Any], "FuelTensor"]


def _python_binary(op: str, a: Any, b: Any) -> FuelTensor:
    """dispatch's `binary`, the compiled operators' fallback."""
    return HOOKS.binary(op, a, b)


def _python_inplace(op: str, a: Any, b: Any) -> FuelTensor:
    """dispatch's `binary_inplace`, the compiled in-place operators' fallback."""
    return HOOKS.binary_inplace(op, a, b)


def _operator(kind: OpKind) -> tuple[str, str]:
    """The namespace name and operator stem ("subtract", "sub") of op kind `kind`'s row."""
    row = BY_KIND[kind]
    if row.dunder is None:
        raise LookupError(f"the op table gives {kind} no operator (its `dunder` is None)")
    return row.name, row.dunder


def _contract_forms(kind: OpKind) -> tuple[Method, Method, Method]:
    """`__stem__`, `__rstem__` and `__istem__` of the binary contract operation of op kind
    `kind`, its stem the op table's `dunder` ("sub")."""
    op, stem = _operator(kind)

    def forward(self: FuelTensor, other: Any, /) -> FuelTensor:
        return HOOKS.binary(op, self, other)

    def reflected(self: FuelTensor, other: Any, /) -> FuelTensor:
        return HOOKS.binary(op, other, self)

    def inplace(self: FuelTensor, other: Any, /) -> FuelTensor:
        return HOOKS.binary_inplace(op, self, other)

    forms = (
        ("", forward, "FORWARD", _python_binary),
        ("r", reflected, "REFLECTED", _python_binary),
        ("i", inplace, "INPLACE", _python_inplace),
    )
    made = []
    for prefix, fn, form, fallback in forms:
        _name(fn, f"__{prefix}{stem}__", op)
        made.append(fn if FAST is None else compiled(fn, op, form, fallback))
    return made[0], made[1], made[2]


def compiled(
    fn: Callable[..., FuelTensor],
    op: str,
    form: str,
    fallback: Callable[..., FuelTensor],
    *hooks: object,
) -> Callable[..., FuelTensor]:
    """`fn` as one compiled callable (`_fast` must be built): the fast path, else
    `fallback(op, a, b)`; `form` names `_fast`'s constant ("FORWARD", "REFLECTED" or "INPLACE").
    Form "HOST" (with `hooks`, `HOOKS`): `hooks.namespace.<op>(a, b)` for a tensor and a
    tensor or Python float / int / bool, else `fallback(a, b)`. Form "METHOD" (with `hooks`):
    the method `x.<op>(...)`, the compiled call of `hooks.namespace.<op>` (`_fast.ruled`) for
    positional arguments it takes, else `fallback(x, ...)`. It carries `fn`'s name, docstring
    and signature and binds as a method as `fn` does."""
    made: Callable[..., FuelTensor] = FAST.operator(op, getattr(FAST, form), fallback, *hooks)
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(made, attr, getattr(fn, attr))
    made.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
    return made


def _name(fn: Callable[..., Any], name: str, what: str) -> None:
    """Name `fn` as FuelTensor's operator method `name`, where pickle finds it (the class, in
    `core.tensor`, inherits it)."""
    fn.__name__ = name
    fn.__qualname__ = f"FuelTensor.{name}"
    fn.__module__ = "fueltensor.core.tensor"
    fn.__doc__ = f"The array API's {what} as an operator."


_OPERANDS: Final = (bool, int, float, complex, np.ndarray, np.generic)
"""Operands the host operators take beside a tensor (others get NotImplemented)."""


def _host_forms(function: str, stem: str | None = None) -> tuple[Method, Method, Method]:
    """`x op y`, `y op x` and `x op= y` of the namespace function `function` (NotImplemented
    for operands it does not take, so Python can try the other operand); `stem` the operator's
    (default: the standard's, `_STEM`)."""
    refused: FuelTensor = NotImplemented

    def forward(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, (Operators, *_OPERANDS)):
            return refused
        result: FuelTensor = getattr(HOOKS.namespace, function)(self, other)
        return result

    def reflected(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, (Operators, *_OPERANDS)):
            return refused
        result: FuelTensor = getattr(HOOKS.namespace, function)(other, self)
        return result

    def inplace(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, (Operators, *_OPERANDS)):
            return refused
        return self._assign(getattr(HOOKS.namespace, function)(self, other), function)

    for prefix, fn in zip(("", "r", "i"), (forward, reflected, inplace), strict=True):
        _name(fn, f"__{prefix}{stem or _STEM[function]}__", function)
    if FAST is not None:  # `x > 0` straight to the (compiled) namespace function
        return compiled(forward, function, "HOST", forward, HOOKS), reflected, inplace
    return forward, reflected, inplace


def _unary(function: str) -> Callable[[Any], FuelTensor]:
    """The unary operator of the namespace function `function`."""

    def method(self: FuelTensor, /) -> FuelTensor:
        result: FuelTensor = getattr(HOOKS.namespace, function)(self)
        return result

    _name(method, f"__{_STEM[function]}__", function)
    return method


def _comparison(kind: OpKind) -> Method:
    """`__stem__` of the comparison of op kind `kind` (`x < y`), its stem the op table's
    `dunder`: its namespace function, through the host form's compiled call where built (`x > 0`
    straight to the compiled contract operation). Python reflects a comparison itself (`2 < x`
    is `x > 2`), so it has no other form."""
    op, stem = _operator(kind)
    return _host_forms(op, stem)[0]


def _contract_unary(kind: OpKind) -> Callable[[Any], FuelTensor]:
    """`__stem__` of the unary contract operation of op kind `kind` (`-x`, `abs(x)`), its stem
    the op table's `dunder`."""
    op, stem = _operator(kind)

    def method(self: FuelTensor, /) -> FuelTensor:
        return HOOKS.unary(op, self)

    _name(method, f"__{stem}__", op)
    return method


_STEM: Final = {
    "floor_divide": "floordiv",
    "bitwise_and": "and",
    "bitwise_or": "or",
    "bitwise_xor": "xor",
    "bitwise_left_shift": "lshift",
    "bitwise_right_shift": "rshift",
    "positive": "pos",
    "bitwise_invert": "invert",
}
"""Array-API function -> the operator stem the standard gives it (the host operators)."""


class Operators:
    """Every operator of the array API's array object, as FuelTensor inherits them."""

    __slots__ = ()

    __add__, __radd__, __iadd__ = _contract_forms(OpKind.ADD)
    __sub__, __rsub__, __isub__ = _contract_forms(OpKind.SUB)
    __mul__, __rmul__, __imul__ = _contract_forms(OpKind.MUL)
    __truediv__, __rtruediv__, __itruediv__ = _contract_forms(OpKind.DIV)
    __mod__, __rmod__, __imod__ = _contract_forms(OpKind.REM)
    __pow__, __rpow__, __ipow__ = _contract_forms(OpKind.POW)

    __floordiv__, __rfloordiv__, __ifloordiv__ = _host_forms("floor_divide")
    __matmul__, __rmatmul__, __imatmul__ = _host_forms(*_operator(OpKind.MATMUL))
    __and__, __rand__, __iand__ = _host_forms("bitwise_and")
    __or__, __ror__, __ior__ = _host_forms("bitwise_or")
    __xor__, __rxor__, __ixor__ = _host_forms("bitwise_xor")
    __lshift__, __rlshift__, __ilshift__ = _host_forms("bitwise_left_shift")
    __rshift__, __rrshift__, __irshift__ = _host_forms("bitwise_right_shift")

    __eq__ = _comparison(OpKind.EQUAL)  # type: ignore[assignment]
    __ne__ = _comparison(OpKind.NOT_EQUAL)  # type: ignore[assignment]
    __lt__ = _comparison(OpKind.LESS)
    __le__ = _comparison(OpKind.LESS_EQUAL)
    __gt__ = _comparison(OpKind.GREATER)
    __ge__ = _comparison(OpKind.GREATER_EQUAL)

    __neg__ = _contract_unary(OpKind.NEG)
    __pos__ = _unary("positive")
    __abs__ = _contract_unary(OpKind.ABS)
    __invert__ = _unary("bitwise_invert")
