"""FuelTensor's operators, attached here so that the tensor (core) never imports the engine.

The contract operations' operators come from the op table (`fueltensor.ops`): `x + y` calls
dispatch directly, with no namespace lookup in between (it is the hot path of small arrays);
where the fast path is built, `x + y` and `y + x` are compiled callables (`dispatch.compiled`).
Every other operator is the array-API host function of the same meaning.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.array_api import elementwise as _ew
from fueltensor.array_api.linear_algebra import matmul
from fueltensor.core.tensor import FuelTensor, check_inplace
from fueltensor.engine.dispatch import binary, binary_inplace, compiled
from fueltensor.ops import CONTRACT_OPS

Method = Callable[..., Any]
_OPERANDS: Final = (FuelTensor, bool, int, float, complex, np.ndarray, np.generic)


def _contract_methods(name: str) -> tuple[Method, Method, Method]:
    """`x op y`, `y op x` and `x op= y` of contract operation `name`, straight to dispatch
    (compiled where the fast path is built)."""

    def forward(self: FuelTensor, other: Any, /) -> FuelTensor:
        return binary(name, self, other)

    def reflected(self: FuelTensor, other: Any, /) -> FuelTensor:
        return binary(name, other, self)

    def inplace(self: FuelTensor, other: Any, /) -> FuelTensor:
        return binary_inplace(name, self, other)

    return (
        compiled(forward, name, "forward"),
        compiled(reflected, name, "reflected"),
        compiled(inplace, name, "inplace"),
    )


def _host_methods(fn: Method) -> tuple[Method, Method, Method]:
    """`x op y`, `y op x` and `x op= y` of the host function `fn` (NotImplemented for operands
    it does not take, so Python can try the other operand)."""

    refused: FuelTensor = NotImplemented

    def forward(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, _OPERANDS):
            return refused
        result: FuelTensor = fn(self, other)
        return result

    def reflected(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, _OPERANDS):
            return refused
        result: FuelTensor = fn(other, self)
        return result

    def inplace(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, _OPERANDS):
            return refused
        result: FuelTensor = fn(self, other)
        check_inplace(self, result.dtype, result.shape, fn.__name__)
        self._array[...] = result._array
        return self

    return forward, reflected, inplace


HOST_BINARY: Final[dict[str, Method]] = {
    "floordiv": _ew.floor_divide,
    "matmul": matmul,
    "and": _ew.bitwise_and,
    "or": _ew.bitwise_or,
    "xor": _ew.bitwise_xor,
    "lshift": _ew.bitwise_left_shift,
    "rshift": _ew.bitwise_right_shift,
}
"""Operator stem -> host function, for the binary operators with reflected and in-place forms."""

COMPARISONS: Final[dict[str, Method]] = {
    "eq": _ew.equal,
    "ne": _ew.not_equal,
    "lt": _ew.less,
    "le": _ew.less_equal,
    "gt": _ew.greater,
    "ge": _ew.greater_equal,
}
"""Operator stem -> host function, for the comparisons (no reflected or in-place form)."""

UNARY: Final[dict[str, Method]] = {
    "neg": _ew.negative,
    "pos": _ew.positive,
    "abs": _ew.abs,
    "invert": _ew.bitwise_invert,
}
"""Operator stem -> host function, for the unary operators."""


def _unary_method(fn: Method) -> Method:
    def method(self: FuelTensor, /) -> FuelTensor:
        result: FuelTensor = fn(self)
        return result

    return method


def _attach(stem: str, methods: tuple[Method, ...], what: str) -> None:
    """Set `__stem__`, `__rstem__`, `__istem__` (as many as given) on FuelTensor."""
    for prefix, method in zip(("", "r", "i"), methods, strict=False):
        name = f"__{prefix}{stem}__"
        method.__name__ = name
        method.__qualname__ = f"FuelTensor.{name}"
        method.__doc__ = f"The array API's {what} as an operator."
        setattr(FuelTensor, name, method)


def attach_operators() -> None:
    """Give FuelTensor every operator: the contract operations' from the op table, the rest
    from the host functions above."""
    for op in CONTRACT_OPS:
        if op.dunder is not None:
            _attach(op.dunder, _contract_methods(op.name), op.name)
    for stem, fn in HOST_BINARY.items():
        _attach(stem, _host_methods(fn), fn.__name__)
    for stem, fn in COMPARISONS.items():
        _attach(stem, _host_methods(fn)[:1], fn.__name__)
    for stem, fn in UNARY.items():
        _attach(stem, (_unary_method(fn),), fn.__name__)
