"""Typed reading of a parsed document's values (`Node`s): each accessor returns the value or
raises ContractError naming the file, the line, the field and what is accepted."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NoReturn

from ..core.errors import ContractError
from . import bounds
from .formula import Formula, FormulaError
from .shapes import Node, Shape

_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Reader:
    """Typed accessors over `Node`s that raise ContractError with file, line and field."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, line: int, where: str, message: str) -> NoReturn:
        raise ContractError(message, path=self.path, line=line, field=where)

    def mapping(self, node: Node, shape: Shape, where: str) -> dict[str, Node]:
        """The entries of a mapping node, refusing unknown keys and missing required ones."""
        value = node.value
        if not isinstance(value, dict):
            self.fail(node.line, where, f"expected a mapping, got {kind(value)}")
        if shape.open:
            return value
        unknown = value.keys() - shape.keys
        if unknown:
            key = next(k for k in value if k in unknown)
            accepted = ", ".join(shape.keys)
            self.fail(value[key].line, join(where, key), f"unknown key; accepted here: {accepted}")
        if not shape.required <= value.keys():
            missing = next(k for k in shape.keys if k in shape.required and k not in value)
            self.fail(node.line, join(where, missing), "missing required key")
        return value

    def items(self, node: Node, where: str) -> list[Node]:
        if not isinstance(node.value, list):
            self.fail(node.line, where, f"expected a list, got {kind(node.value)}")
        return node.value

    def string(self, node: Node, where: str, choices: Iterable[str] = ()) -> str:
        value = node.value
        if not isinstance(value, str) or not value:
            self.fail(node.line, where, f"expected a non-empty string, got {kind(value)}")
        self.within(node, where, bounds.string_refusal(value))
        allowed = tuple(choices)
        if allowed and value not in allowed:
            self.fail(
                node.line, where, f"{value!r} is not accepted; accepted: {', '.join(allowed)}"
            )
        return value

    def text(self, node: Node | None, where: str) -> str:
        """A free text field (may be empty or absent)."""
        if node is None:
            return ""
        if not isinstance(node.value, str):
            self.fail(node.line, where, f"expected a string, got {kind(node.value)}")
        self.within(node, where, bounds.string_refusal(node.value, multiline=True))
        return node.value

    def identifier(self, node: Node, where: str) -> str:
        value = self.string(node, where)
        if not _IDENT.match(value):
            self.fail(
                node.line,
                where,
                f"{value!r} is not accepted; accepted: an identifier [A-Za-z_][A-Za-z0-9_]*",
            )
        return value

    def boolean(self, node: Node, where: str) -> bool:
        if not isinstance(node.value, bool):
            self.fail(node.line, where, f"expected true or false, got {kind(node.value)}")
        return node.value

    def within(self, node: Node, where: str, refusal: str | None) -> None:
        """Fail at `node` with `refusal`, the words of a bound it breaks (None: it holds)."""
        if refusal is not None:
            self.fail(node.line, where, refusal)

    def integer(self, node: Node, where: str, minimum: int = 0, maximum: int = 2**63 - 1) -> int:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.fail(
                node.line,
                where,
                f"expected an integer from {minimum} to {maximum}, got {kind(value)}",
            )
        return value

    def bound(self, node: Node | None, where: str) -> float | None:
        """A non-negative number, or None for `~` / absent (not declared)."""
        if node is None or node.value is None:
            return None
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            self.fail(node.line, where, f"expected a number >= 0 or ~, got {kind(value)}")
        self.within(node, where, bounds.number_refusal(value))
        return value

    def formula(self, node: Node, where: str, variables: frozenset[str]) -> Formula:
        accepted = ", ".join(sorted(variables))
        try:
            formula = Formula(node.value)  # type: ignore[arg-type]  # Formula checks the type
        except FormulaError as e:
            self.fail(
                node.line,
                where,
                f"{e}; accepted: numbers, + - * / ( ) and the variables {accepted}",
            )
        unknown = formula.variables - variables
        if unknown:
            self.fail(
                node.line,
                where,
                f"unknown variable {', '.join(sorted(unknown))}; accepted: {accepted}",
            )
        return formula


def kind(value: object) -> str:
    """How a refusal names a value it did not expect: its kind, and its text for a scalar."""
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return f"{type(value).__name__} {value!r}"


def join(where: str, key: str) -> str:
    """The dotted field name of `key` inside `where`."""
    return f"{where}.{key}" if where else key
