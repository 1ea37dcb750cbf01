"""The `semantics` section of a contract: what a kernel does where IEEE 754 or the operation's
formula leaves a choice, declared so the judge can check it with targeted probes.

A section declares any of these aspects (an aspect left out is not declared, and not audited):

* `nan`: which operand's NaN a result carries when both are NaN (`operand`), the forms a NaN
  result may take (`result`: the propagated NaN `kept` bit for bit, `quieted`, made
  `canonical` with its sign, or a fixed pattern), whether its sign survives (`sign`), and the
  NaN an invalid operation on numbers makes (`invalid`, fixed patterns only);
* `zero_tie`: what maximum / minimum return for +0 against -0;
* `remainder`: the definition, the sign of a zero remainder, the result for an infinite divisor;
* `pow`: pow(NaN, 0), pow(1, NaN), pow(-1, ±inf), pow(±0, negative), negative base with a
  non-integer exponent;
* `subnormals`: kept or flushed to zero (inputs and outputs alike);
* `position`: whether an element's bits depend on where it sits (length, offset, alignment);
* `invariance`: claims, each audited by the judge: `threads` (the same bits at one thread and
  at all), `isa` (on every instruction-set body here), `position` (`position: invariant`); a
  reduction's `layout` (the same bits whatever the input's strides and offset) and `batch` (a
  row reduced alone as in a batch).

`source` says where the declarations come from (the formula, the framework's documentation,
measurement) and `notes` which is which. docs/semantics.md describes every value.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Final

from .shapes import Node, Shape, shape_of

if TYPE_CHECKING:
    from .reader import Reader

NAN_OPERANDS: Final = ("lhs", "rhs", "either")
"""Whose NaN a result carries when both operands are NaN."""
NAN_FROM_OPERAND: Final = ("kept", "quieted", "canonical")
"""NaN results made from a propagated NaN: its bits, its bits with the quiet bit set, or the
quiet NaN with a zero payload and the propagated NaN's sign."""
NAN_PATTERNS: Final = ("positive_canonical", "negative_canonical", "all_ones", "any")
"""NaN results whatever the operands: +qNaN and -qNaN with a zero payload, every bit set, or
any NaN at all."""
NAN_RESULTS: Final = NAN_FROM_OPERAND + NAN_PATTERNS
NAN_SIGNS: Final = ("kept", "any")
ZERO_TIES: Final = ("lhs", "rhs", "either", "ordered")
"""`ordered`: -0 is below +0 (IEEE 754-2019 minimum / maximum), `either`: lhs or rhs."""
REMAINDER_DEFINITIONS: Final = ("floor_formula", "fmod")
"""`floor_formula`: a - floor(a / b) * b, each step rounded in the working precision;
`fmod`: fmod(a, b), plus b when that is not zero and its sign is not b's, rounded once."""
ZERO_SIGNS: Final = ("positive", "divisor", "dividend")
INFINITE_DIVISORS: Final = ("nan", "dividend_or_divisor")
"""`dividend_or_divisor`: x % ±inf is x when x has the divisor's sign (or is zero), else the
divisor itself, as Python's `%` has it."""
POW_ONE_OR_NAN: Final = ("one", "nan")
POW_ZERO_NEGATIVE: Final = ("ieee", "positive_infinity")
"""`ieee`: pow(±0, y < 0) is ±inf for an odd integer y (the zero's sign), else +inf."""
POW_NEGATIVE_FRACTIONAL: Final = ("nan",)
SUBNORMALS: Final = ("kept", "flushed")
POSITIONS: Final = ("invariant", "nan_bits", "dependent")
"""`nan_bits`: only the bits of a NaN result (within what `nan` declares) vary with position."""
SOURCES: Final = ("formula", "documentation", "measurement")
INVARIANCE: Final = ("threads", "isa", "position", "layout", "batch")
"""Invariance claims, each audited by the judge: the same bits at one thread and at all threads
(sizes that split), on every instruction-set body the provider may pick here, and whatever an
element's position (`position: invariant`); for a reduction (docs/reductions.md), whatever the
input's layout (the same values transposed, flipped, offset or broadcast) and whether a row is
reduced alone or in a batch (`judge.reductions`)."""

NAN_SHAPE: Final = shape_of("operand result sign invalid?")
REMAINDER_SHAPE: Final = shape_of("definition? zero_sign? infinite_divisor?")
POW_SHAPE: Final = shape_of("nan_zero? one_nan? minus_one_inf? zero_negative? negative_fractional?")
SEMANTICS_SHAPE: Final = shape_of(
    "source nan? zero_tie? remainder? pow? subnormals? position? invariance? notes?",
    nan=NAN_SHAPE,
    remainder=REMAINDER_SHAPE,
    pow=POW_SHAPE,
)

POW_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "nan_zero": POW_ONE_OR_NAN,
    "one_nan": POW_ONE_OR_NAN,
    "minus_one_inf": POW_ONE_OR_NAN,
    "zero_negative": POW_ZERO_NEGATIVE,
    "negative_fractional": POW_NEGATIVE_FRACTIONAL,
}
REMAINDER_CHOICES: Final[dict[str, tuple[str, ...]]] = {
    "definition": REMAINDER_DEFINITIONS,
    "zero_sign": ZERO_SIGNS,
    "infinite_divisor": INFINITE_DIVISORS,
}


@dataclass(frozen=True)
class NanRule:
    """How NaN results are made (see the module docstring)."""

    operand: str
    result: tuple[str, ...]
    sign: str
    invalid: tuple[str, ...] | None = None
    """The NaN an invalid operation on numbers makes (None: not declared, e.g. for maximum,
    which makes no NaN from numbers)."""


@dataclass(frozen=True)
class RemainderRule:
    """The remainder's definition, the sign of a zero remainder, x % ±inf (None: a part not
    declared, e.g. a definition neither value fits)."""

    definition: str | None = None
    zero_sign: str | None = None
    infinite_divisor: str | None = None


@dataclass(frozen=True)
class PowRule:
    """pow's special cases, each `one`, `nan` or the key's own values (None: not declared)."""

    nan_zero: str | None = None
    one_nan: str | None = None
    minus_one_inf: str | None = None
    zero_negative: str | None = None
    negative_fractional: str | None = None


RULES: Final[dict[str, tuple[type[RemainderRule | PowRule], Shape, dict[str, tuple[str, ...]]]]] = (
    dict(
        remainder=(RemainderRule, REMAINDER_SHAPE, REMAINDER_CHOICES),
        pow=(PowRule, POW_SHAPE, POW_CHOICES),
    )
)
"""The sections of fixed keys with a class of their own, by their `Semantics` field: each
one's class, shape and choices. The names are the schema's fields, written as keywords (the
`pow` section is a field of the document, not the op table's op id)."""
SECTION: Final[dict[type[RemainderRule | PowRule], str]] = {
    cls: name for name, (cls, _, _) in RULES.items()
}
"""Each rule class's section (its `Semantics` field), for the judge's cases that probe it."""


@dataclass(frozen=True)
class Semantics:
    """A contract's declared semantics; None for an aspect it does not declare."""

    source: tuple[str, ...]
    nan: NanRule | None = None
    zero_tie: str | None = None
    remainder: RemainderRule | None = None
    pow: PowRule | None = None
    subnormals: str | None = None
    position: str | None = None
    invariance: tuple[str, ...] | None = None
    notes: str = ""

    @property
    def from_formula(self) -> bool:
        """Whether the declarations come from the operation's formula (`source: formula`): a
        claim that the kernel gives the formula's bits, which the judge and a certificate's
        verdict hold it to."""
        return "formula" in self.source

    @property
    def effective_position(self) -> str | None:
        """`position`, or `invariant` where only the `position` invariance claim says so."""
        claimed = "position" in (self.invariance or ())
        return self.position or ("invariant" if claimed else None)

    def declared(self) -> tuple[str, ...]:
        """The aspects this section declares, in document order."""
        return tuple(
            f.name
            for f in fields(self)
            if f.name not in ("source", "notes") and getattr(self, f.name) is not None
        )

    def to_dict(self) -> dict[str, Any]:
        """The section as its document writes it (declared aspects only)."""
        out: dict[str, Any] = {"source": list(self.source)}
        for name in self.declared():
            value = getattr(self, name)
            if isinstance(value, (NanRule, RemainderRule, PowRule)):
                value = {
                    f.name: list(v) if isinstance(v := getattr(value, f.name), tuple) else v
                    for f in fields(value)
                    if getattr(value, f.name) is not None
                }
            out[name] = list(value) if isinstance(value, tuple) else value
        if self.notes:
            out["notes"] = self.notes
        return out


def _choices(r: Reader, node: Node, where: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A non-empty list of distinct values of `allowed` (one value alone is a list of one)."""
    items = r.items(node, where) if isinstance(node.value, list) else [node]
    if not items:
        r.fail(node.line, where, f"expected at least one of {', '.join(allowed)}")
    values: list[str] = []
    for item in items:
        value = r.string(item, where, allowed)
        if value in values:
            r.fail(item.line, where, f"{value!r} is listed twice")
        values.append(value)
    return tuple(values)


def _nan(r: Reader, node: Node) -> NanRule:
    n = r.mapping(node, NAN_SHAPE, "semantics.nan")
    invalid = (
        _choices(r, n["invalid"], "semantics.nan.invalid", NAN_PATTERNS) if "invalid" in n else None
    )
    return NanRule(
        operand=r.string(n["operand"], "semantics.nan.operand", NAN_OPERANDS),
        result=_choices(r, n["result"], "semantics.nan.result", NAN_RESULTS),
        sign=r.string(n["sign"], "semantics.nan.sign", NAN_SIGNS),
        invalid=invalid,
    )


def _fixed(
    r: Reader, node: Node, where: str, shape: Shape, choices: dict[str, tuple[str, ...]]
) -> dict[str, str]:
    """A mapping of some of the keys of `choices` (one at least), each taking one of its own
    values."""
    entries = r.mapping(node, shape, where)
    if not entries:
        r.fail(node.line, where, f"expected at least one of {', '.join(choices)}")
    return {k: r.string(entries[k], f"{where}.{k}", choices[k]) for k in choices if k in entries}


def _rules(r: Reader, top: dict[str, Node]) -> dict[str, Any]:
    """The `RULES` sections `top` declares, as `Semantics` keywords."""
    return {
        key: rule(**_fixed(r, top[key], f"semantics.{key}", shape, choices))
        for key, (rule, shape, choices) in RULES.items()
        if key in top
    }


def build_semantics(r: Reader, node: Node) -> Semantics:
    """The Semantics a contract's `semantics` mapping declares; ContractError with file, line
    and field for anything else."""
    top = r.mapping(node, SEMANTICS_SHAPE, "semantics")
    one = {
        key: r.string(top[key], f"semantics.{key}", allowed)
        for key, allowed in (
            ("zero_tie", ZERO_TIES),
            ("subnormals", SUBNORMALS),
            ("position", POSITIONS),
        )
        if key in top
    }
    invariance = (
        _choices(r, top["invariance"], "semantics.invariance", INVARIANCE)
        if "invariance" in top
        else None
    )
    if invariance and "position" in invariance and one.get("position", "invariant") != "invariant":
        r.fail(
            top["invariance"].line,
            "semantics.invariance",
            f"claims position, but position is declared {one['position']}",
        )
    return Semantics(
        source=_choices(r, top["source"], "semantics.source", SOURCES),
        invariance=invariance,
        nan=_nan(r, top["nan"]) if "nan" in top else None,
        **one | _rules(r, top),
        notes=r.text(top.get("notes"), "semantics.notes"),
    )
