"""Cost formulas: a tiny arithmetic language parsed by hand, never by `eval` or `ast`.

A formula is a number or a string of numbers, variables, `+ - * /`, unary minus and
parentheses, e.g. ``"n * dtype_bytes + a_count * dtype_bytes"``. Anything else (calls,
attributes, subscripts, powers, lambdas, huge literals) is refused when the formula is
built, so a contract document can describe costs but can never run code.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from ..core.errors import ContractError

MAX_LENGTH: Final = 500
"""Longest formula text accepted, in characters."""
MAX_DEPTH: Final = 50
"""Deepest nesting of parentheses and unary minus accepted."""
MAX_MAGNITUDE: Final = 1e18
"""Largest absolute value a literal or a constant sub-expression may have."""

_TOKEN: Final = re.compile(
    r"\s*(?:(?P<num>(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+*/()]))"
)

Env = Mapping[str, float]
_Fn = Callable[[Env], float]


class FormulaError(ContractError):
    """A cost formula is not in the accepted language; the message says why."""


@dataclass(frozen=True)
class _Expr:
    """A parsed sub-expression: an evaluator, and its value when it is constant."""

    fn: _Fn
    const: float | None


def _tokenize(text: str) -> list[tuple[str, str]]:
    """Split `text` into (kind, text) tokens; FormulaError on any character outside the language."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        if m is None or m.lastgroup is None:
            bad = text[pos:].lstrip()[:1]
            what = {".": "attribute access", "[": "subscripts", "]": "subscripts"}.get(bad, "")
            hint = f" ({what} are not allowed)" if what else ""
            raise FormulaError(f"unexpected character {bad!r}{hint}")
        tokens.append((m.lastgroup, m.group(m.lastgroup)))
        pos = m.end()
    return tokens


def _constant(value: float, what: str) -> _Expr:
    """A constant node, refusing magnitudes no cost could have."""
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise FormulaError(f"{what} {value!r} is too large (limit {MAX_MAGNITUDE:g})")
    return _Expr(lambda env: value, value)


def _number(raw: str | int | float) -> float:
    """A literal as a float; FormulaError (not OverflowError) when no float can hold it."""
    try:
        return float(raw)
    except (OverflowError, ValueError):
        raise FormulaError(f"a literal is too large (limit {MAX_MAGNITUDE:g})") from None


def _variable(name: str) -> _Expr:
    def read(env: Env) -> float:
        return float(env[name])

    return _Expr(read, None)


def _negate(x: _Expr) -> _Expr:
    if x.const is not None:
        return _constant(-x.const, "constant")
    fn = x.fn
    return _Expr(lambda env: -fn(env), None)


def _binary(op: str, a: _Expr, b: _Expr) -> _Expr:
    if a.const is not None and b.const is not None:
        if op == "/" and b.const == 0:
            raise FormulaError("constant division by zero")
        return _constant(_APPLY[op](a.const, b.const), "constant sub-expression")
    fa, fb, apply = a.fn, b.fn, _APPLY[op]
    return _Expr(lambda env: apply(fa(env), fb(env)), None)


_APPLY: Final[dict[str, Callable[[float, float], float]]] = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
}


class _Parser:
    """Recursive descent over: expr := term (+|- term)*; term := unary (*|/ unary)*;
    unary := - unary | atom; atom := number | name | ( expr )."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0
        self.names: set[str] = set()

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.pos += 1
        return token

    def parse(self) -> _Expr:
        if not self.tokens:
            raise FormulaError("empty formula")
        expr = self.expr()
        kind, text = self.peek()
        if kind != "end":
            raise FormulaError(f"unexpected {text!r} after a complete expression")
        return expr

    def expr(self) -> _Expr:
        left = self.term()
        while self.peek() in (("op", "+"), ("op", "-")):
            left = _binary(self.take()[1], left, self.term())
        return left

    def term(self) -> _Expr:
        left = self.unary()
        while self.peek() in (("op", "*"), ("op", "/")):
            left = _binary(self.take()[1], left, self.unary())
        return left

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise FormulaError(f"nested deeper than {MAX_DEPTH} levels")

    def unary(self) -> _Expr:
        if self.peek() == ("op", "-"):
            self.take()
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return _negate(operand)
        return self.atom()

    def atom(self) -> _Expr:
        kind, text = self.take()
        if kind == "num":
            return _constant(_number(text), "literal")
        if kind == "name":
            if self.peek() == ("op", "("):
                raise FormulaError(f"calls are not allowed ({text}(...))")
            self.names.add(text)
            return _variable(text)
        if (kind, text) == ("op", "("):
            self.enter()
            inner = self.expr()
            if self.take() != ("op", ")"):
                raise FormulaError("missing ')'")
            self.depth -= 1
            return inner
        raise FormulaError(f"expected a number, a variable or '(' but found {text or 'the end'!r}")


@lru_cache(maxsize=1024)
def _compile(text: str) -> tuple[frozenset[str], _Fn]:
    """The variables and evaluator of formula `text` (documents repeat formulas: cached)."""
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"formula is {len(text)} characters long (limit {MAX_LENGTH})")
    if "**" in text:
        raise FormulaError("'**' (power) is not allowed")
    parser = _Parser(_tokenize(text))
    expr = parser.parse()
    return frozenset(parser.names), expr.fn


@dataclass(frozen=True)
class Formula:
    """A cost formula from a contract: its original text or number, its variables, its value."""

    raw: str | int | float
    variables: frozenset[str] = field(init=False, compare=False)
    _fn: _Fn = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        raw = self.raw
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise FormulaError(f"a formula is a number or a string, not {type(raw).__name__}")
        if isinstance(raw, str):
            names, fn = _compile(raw)
        else:
            names, fn = frozenset(), _constant(_number(raw), "literal").fn
        object.__setattr__(self, "variables", names)
        object.__setattr__(self, "_fn", fn)

    def __reduce__(self) -> tuple[type[Formula], tuple[str | int | float]]:
        """Pickled as its text (compiled again on load; the compiled closures do not pickle)."""
        return Formula, (self.raw,)

    def __str__(self) -> str:
        return str(self.raw)

    def evaluate(self, env: Env) -> float:
        """The formula's value for the variables in `env`; ContractError if it is not finite."""
        missing = self.variables - env.keys()
        if missing:
            raise ContractError(
                f"cost formula {self.raw!r} needs {', '.join(sorted(missing))}; "
                f"given {', '.join(sorted(env)) or 'nothing'}"
            )
        try:
            value = self._fn(env)
        except ArithmeticError:
            raise ContractError(
                f"cost formula {self.raw!r} divides by zero or overflows for {dict(env)}"
            ) from None
        if not math.isfinite(value):
            raise ContractError(
                f"cost formula {self.raw!r} is not finite ({value}) for {dict(env)}"
            )
        return value
