"""The semantic cases: targeted probes of what a kernel does where IEEE 754 or the operation's
formula leaves a choice, one list per op kind and dtype.

Each `Case` belongs to an aspect of the FKC `semantics` section (`fueltensor.fkc.semantics`):
NaN propagation (a NaN operand, two NaNs, signaling NaNs), the NaN of an invalid operation,
maximum / minimum on a ±0 tie, the remainder's zero sign, infinite divisor and definition,
pow's special cases, subnormal inputs and outputs. The judge checks every observed result
against the declaration (`judge.semantics`); `fueltensor semantics` shows them side by side.
NaN payloads, zeros, infinities, subnormals and ±1 come from the special values (`special`);
the other operands are plain numbers rounded to the dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Final

import numpy as np

from fueltensor.families import TRAITS, Family
from fueltensor.fkc.semantics import SECTION, PowRule, RemainderRule
from fueltensor.ops import BINARY_OPS, BY_KIND, ContractOp, OpKind
from fueltensor.testing import FloatFormat, bits, float_format, special_values
from fueltensor.tools import exact_unary
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.hard import hard_values
from fueltensor.tools.judge.references import round_to

if TYPE_CHECKING:
    pass

OPERATORS: Final = {op.op_kind: op.kernel_op for op in BINARY_OPS}
"""Each binary op kind with the name its cases are written with ("maximum(+0, -0)")."""


def infinity(f: FloatFormat) -> int:
    """+inf's bits: the all-ones exponent field."""
    return f.pattern(0, f.exponent_max, 0)


def fixed_nan(form: str, f: FloatFormat) -> int | None:
    """The bits of a fixed NaN pattern (`positive_canonical` ...); None for `any` and for the
    forms made from an operand."""
    return {
        "positive_canonical": infinity(f) | f.quiet_bit,
        "negative_canonical": f.sign_bit | infinity(f) | f.quiet_bit,
        "all_ones": (1 << (8 * f.dtype.itemsize)) - 1,
    }.get(form)


def is_nan(f: FloatFormat, pattern: int) -> bool:
    """Whether `pattern` is a NaN of format `f`."""
    return f.is_nan(pattern)


def is_subnormal(f: FloatFormat, pattern: int) -> bool:
    """Whether `pattern` is a nonzero number of format `f` below its normal range."""
    _, exponent, fraction = f.fields(pattern)
    return exponent == 0 and fraction != 0


def value(f: FloatFormat, x: float) -> int:
    """The bits of `x` rounded (once, to nearest) to format `f`."""
    return int(bits(round_to(np.array([x], np.float64), f.dtype))[0])


def number(f: FloatFormat, pattern: int) -> float:
    """The value of a bit pattern of format `f`, as a Python float."""
    return float(np.float64(f.scalar(pattern)))


@cache
def special(dtype: np.dtype) -> dict[str, int]:
    """`testing.special_values` of `dtype` by name (`+qNaN, lowest payload bit` ...), as bits."""
    return {s.name: s.bits for s in special_values(dtype)}


@dataclass(frozen=True)
class Case:
    """One probe: an operation on one pair of bit patterns, and what it checks."""

    aspect: str
    """The `semantics` key it checks: nan, invalid, zero_tie, remainder, pow, subnormals."""
    rule: str
    """Which part of the aspect: "two NaNs", "zero_sign", "nan_zero" ..."""
    op_kind: str
    dtype: np.dtype
    lhs: int
    rhs: int
    label: str
    """How the table and the judge name it: `minimum(+0, -0)`, `exp(-inf)`."""
    arity: int = 2
    """The operation's operands: 2, lhs and rhs; 1, x alone (rhs unused); 3, lhs, rhs and
    `third`, named by the row's family (`condition`, `x1`, `x2`)."""
    third: int = 0
    """A three-operand row's third operand."""
    to: np.dtype | None = None
    """A cast's target dtype (its results are of it), None where results are the operands'."""

    @property
    def format(self) -> FloatFormat:
        """The bit fields of the case's dtype."""
        return float_format(self.dtype)

    @property
    def result_format(self) -> FloatFormat:
        """The bit fields of the case's results: the cast's target, else the operands'."""
        return float_format(self.dtype if self.to is None else self.to)

    def sides(self) -> tuple[tuple[str, int], ...]:
        """The operands by name: (("lhs", bits), ("rhs", bits)), or (("x", bits),), or a
        three-operand row's by its family's names."""
        if self.arity == 3:
            names = TRAITS[BY_KIND[self.op_kind].family].operands
            return tuple(zip(names, (self.lhs, self.rhs, self.third), strict=True))
        return (("lhs", self.lhs), ("rhs", self.rhs)) if self.arity == 2 else (("x", self.lhs),)

    def operands(self) -> str:
        """The operands' bit patterns, `0x7fc00001, 0x3fc00000`."""
        width = 2 * self.dtype.itemsize
        return ", ".join(f"0x{bits:0{width}x}" for _, bits in self.sides())


def _name(f: FloatFormat, pattern: int) -> str:
    """A short name for an operand: its value, or `NaN·a` / `-sNaN·b` for a NaN (a, b: the
    two payloads of `special`, lowest payload bit and alternating; other payloads in hex)."""
    if is_nan(f, pattern):
        kind = "NaN" if pattern & f.quiet_bit else "sNaN"
        sign = "-" if pattern & f.sign_bit else ""
        if not f.has_inf:  # e4m3fn: one NaN a sign
            return f"{sign}NaN"
        payload = pattern & (f.quiet_bit - 1)
        tag = {1: "a", (f.quiet_bit - 1) // 3: "b"}.get(payload, f"{payload:#x}")
        return f"{sign}{kind}·{tag}"
    x = number(f, pattern)
    if x == 0:
        return "-0" if pattern & f.sign_bit else "+0"
    if is_subnormal(f, pattern):
        return f"{'-' if x < 0 else ''}subnormal"
    return f"{x:g}"


Builder = Callable[[FloatFormat, OpKind], list[tuple[str, str, int, int]]]


def _two_nans(s: dict[str, int]) -> tuple[int, int]:
    """A positive and a negative quiet NaN of `special`'s: two payloads where the format has
    them; the 8-bit formats have fewer (e5m2 one payload bit, e4m3fn one NaN a sign)."""
    a = s.get("+qNaN, lowest payload bit", s.get("+NaN", 0))
    b = s.get("-qNaN, alternating payload", s.get("-qNaN, no payload", s.get("-NaN", 0)))
    return a, b


def _nan_cases(f: FloatFormat, op: OpKind) -> list[tuple[str, str, int, int]]:
    """A NaN operand on either side (beside a positive number and -inf: some kernels make the
    NaN's sign from the other operand's; a negative NaN beside an odd integer: the C library's
    pow negates x * x there), signaling NaNs, two NaNs either way round."""
    s = special(f.dtype)
    a, b = _two_nans(s)
    sa = s.get("+sNaN, lowest payload bit", a)
    sb = s.get("-sNaN, alternating payload", s.get("-sNaN, lowest payload bit", b))
    x, low = value(f, 1.5), s.get("-infinity", s["-largest finite"])
    return [
        ("nan", "a NaN operand", a, x),
        ("nan", "a NaN operand", x, b),
        ("nan", "a NaN operand", low, a),
        ("nan", "a NaN operand", a, low),
        ("nan", "a NaN operand", b, value(f, 3.0)),
        ("nan", "a signaling NaN operand", sa, x),
        ("nan", "a signaling NaN operand", x, sb),
        ("nan", "two NaNs", a, b),
        ("nan", "two NaNs", b, a),
        ("nan", "two NaNs", sa, b),
    ]


_INVALID: Final = {
    OpKind.ADD: ((math.inf, -math.inf),),
    OpKind.SUB: ((math.inf, math.inf),),
    OpKind.MUL: ((0.0, math.inf),),
    OpKind.DIV: ((0.0, 0.0), (math.inf, math.inf)),
    OpKind.REM: ((1.5, 0.0), (math.inf, 2.0)),
    OpKind.POW: ((-2.0, 0.5),),
}
"""Operands from which each operation makes a NaN out of numbers."""


def _invalid_cases(f: FloatFormat, op: OpKind) -> list[tuple[str, str, int, int]]:
    return [
        ("invalid", "NaN from numbers", value(f, x), value(f, y))
        for x, y in _INVALID.get(op, ())
        if f.has_inf or math.isfinite(x + y)  # e4m3fn has no infinity to make one from
    ]


def _zero_tie_cases(f: FloatFormat, op: OpKind) -> list[tuple[str, str, int, int]]:
    if op not in (OpKind.MAXIMUM, OpKind.MINIMUM):
        return []
    zero, minus = special(f.dtype)["+zero"], special(f.dtype)["-zero"]
    return [("zero_tie", "±0 tie", zero, minus), ("zero_tie", "±0 tie", minus, zero)]


def _remainder_cases(f: FloatFormat, op: OpKind) -> list[tuple[str, str, int, int]]:
    if op != OpKind.REM:
        return []
    v = partial(value, f)
    zeros = [(-4.0, 2.0), (4.0, -2.0), (0.0, -2.0), (-0.0, 2.0)]
    infinite = [(5.0, math.inf), (-5.0, math.inf), (5.0, -math.inf), (-5.0, -math.inf)]
    infinite = infinite if f.has_inf else []  # e4m3fn has no infinity to divide by
    large = {11: (1e30, 3.0), 8: (1e10, 3.0), 4: (448.0, 3.0)}.get(f.exponent, (60000.0, 0.001))
    overflow = {11: (1e300, 3e-10), 8: (1e30, 3e-10), 4: (448.0, 2.0**-9)}.get(
        f.exponent, (60000.0, 3e-7)
    )
    definition = [(-1.0, 3.0), large, overflow, (0.1, 0.01)]
    return (
        [(SECTION[RemainderRule], "zero_sign", v(x), v(y)) for x, y in zeros]
        + [(SECTION[RemainderRule], "infinite_divisor", v(x), v(y)) for x, y in infinite]
        + [(SECTION[RemainderRule], "definition", v(x), v(y)) for x, y in definition]
    )


def _pow_cases(f: FloatFormat, op: OpKind) -> list[tuple[str, str, int, int]]:
    if op != OpKind.POW:
        return []
    s, v = special(f.dtype), partial(value, f)
    (nan, minus_nan), one = _two_nans(s), s["+1"]
    pow_ = SECTION[PowRule]
    infinite = [(s["-1"], s[name]) for name in ("+infinity", "-infinity") if name in s]
    zeros = [(s["-zero"], v(-1.0)), (s["-zero"], v(-2.0)), (s["+zero"], v(-1.0))]
    zeros.append((s["-zero"], v(-0.5)))
    return [
        (pow_, "nan_zero", nan, s["+zero"]),
        (pow_, "nan_zero", minus_nan, s["-zero"]),
        (pow_, "one_nan", one, nan),
        (pow_, "one_nan", one, minus_nan),
        *((pow_, "minus_one_inf", x, y) for x, y in infinite),
        # e4m3fn has no infinity: there pow(±0, y < 0) is its NaN by the overflow rule
        *((pow_, "zero_negative", x, y) for x, y in (zeros if f.has_inf else [])),
        (pow_, "negative_fractional", v(-2.0), v(0.5)),
        (pow_, "negative_fractional", v(-8.0), v(1 / 3)),
    ]


_IDENTITY: Final = {
    OpKind.ADD: 0.0,
    OpKind.SUB: 0.0,
    OpKind.MUL: 1.0,
    OpKind.DIV: 1.0,
    OpKind.REM: 1.0,
    OpKind.POW: 1.0,
    OpKind.MAXIMUM: -math.inf,
    OpKind.MINIMUM: math.inf,
}
"""A right operand that gives back a subnormal left operand unchanged."""


def _subnormal_cases(f: FloatFormat, op: OpKind) -> list[tuple[str, str, int, int]]:
    s, v = special(f.dtype), partial(value, f)
    found = [("subnormals", "subnormal operand", s["+smallest subnormal"], v(_IDENTITY[op]))]
    if op in (OpKind.MUL, OpKind.DIV):
        found.append(
            (
                "subnormals",
                "subnormal result",
                s["+min normal"],
                v(0.5 if op == OpKind.MUL else 2.0),
            )
        )
    if op == OpKind.POW:
        found.append(("subnormals", "subnormal result", v(2.0), v(float(-f.bias - 2))))
    return found


_BUILDERS: Final[tuple[Builder, ...]] = (
    _nan_cases,
    _invalid_cases,
    _zero_tie_cases,
    _remainder_cases,
    _pow_cases,
    _subnormal_cases,
)


NAMED: Final = {"+0": 0.0, "-0": -0.0, "+inf": math.inf, "-inf": -math.inf, "+1": 1.0, "-1": -1.0}
"""The table's named special inputs and results (`ops.Special`) that are numbers; `0.5` too."""
UNARY_NANS: Final = (
    "+qNaN, lowest payload bit",
    "-qNaN, alternating payload",
    "+sNaN, lowest payload bit",
    "-sNaN, alternating payload",
)
"""The NaN inputs a unary function is probed with (`special`'s names)."""


def named(f: FloatFormat, name: str) -> int:
    """The bits of a number the table names (`NAMED`, or a decimal such as `0.5`)."""
    return value(f, NAMED[name] if name in NAMED else float(name))


def expected(f: FloatFormat, result: str, x: int) -> int:
    """The bits the table's special `result` of input `x` is: a named number, or `x` with its
    sign bit cleared (`|x|`) or flipped (`-x`)."""
    if result == "|x|":
        return x & ~f.sign_bit
    if result == "-x":
        return x ^ f.sign_bit
    return named(f, result)


def _subnormal_result(row: ContractOp, f: FloatFormat) -> list[int]:
    """The first of the hard inputs whose correctly rounded result is subnormal though the
    input is not (none where the function makes none from a normal number)."""
    xs = hard_values(f.dtype)
    found = exact_unary.correctly_rounded(row, xs).view(f.uint)
    hits = [
        int(x)
        for x, r in zip(xs.view(f.uint).tolist(), found.tolist(), strict=True)
        if is_subnormal(f, int(r)) and not is_subnormal(f, int(x))
    ]
    return hits[:1]


def unary_cases(row: ContractOp, f: FloatFormat) -> list[tuple[str, str, int]]:
    """(aspect, rule, input bits) of a unary row: its special cases (`row.special`, C99 Annex
    F), each where the table fixes it (`special`, ruled by the table itself), an invalid
    operation (`invalid`) or a NaN input quieted (`nan`, ruled by the section's declaration);
    then a subnormal input, and an input whose result is subnormal."""
    s = special(f.dtype)
    found = []
    for given, result in row.special:
        inputs = [s[n] for n in UNARY_NANS] if given == "NaN" else [named(f, given)]
        if result == "invalid":
            found += [("invalid", "NaN from numbers", x) for x in inputs]
        elif result == "NaN":
            found += [("nan", _nan_rule(f, x), x) for x in inputs]
        else:
            found += [("special", f"{given} -> {result}", x) for x in inputs]
    tiny = [s["+smallest subnormal"], s["-largest subnormal"]]
    found += [("subnormals", "subnormal operand", x) for x in tiny]
    found += [("subnormals", "subnormal result", x) for x in _subnormal_result(row, f)]
    return found


def _nan_rule(f: FloatFormat, x: int) -> str:
    """A NaN input's rule: "a NaN operand", or "a signaling NaN operand"."""
    return "a NaN operand" if x & f.quiet_bit else "a signaling NaN operand"


@cache
def comparison_cases(f: FloatFormat) -> list[tuple[str, str, int, int]]:
    """(aspect, rule, lhs, rhs) of a comparison: a NaN on either side and on both, quiet and
    signalling, the two zeros and the infinities (`relation`, ruled by the op table: its
    relation on the exact values, whatever the section declares); then subnormals against the
    zeros, each other and the smallest normal (`subnormals`: as numbers, or flushed)."""
    s, v = special(f.dtype), partial(value, f)
    qnan, snan = s["+qNaN, lowest payload bit"], s["-sNaN, alternating payload"]
    tiny, zero, minus = s["+smallest subnormal"], v(0.0), v(-0.0)
    pairs = [
        (qnan, v(1.0)), (v(1.0), qnan), (qnan, qnan), (snan, snan), (snan, v(-math.inf)),
        (minus, zero), (zero, minus), (v(math.inf), v(math.inf)), (v(-math.inf), v(math.inf)),
    ]  # fmt: skip
    found = [("relation", "IEEE 754", a, b) for a, b in pairs]
    largest = s["+min normal"] - 1  # the largest subnormal: one pattern below the least normal
    subnormal = [
        (tiny, zero), (zero, tiny), (tiny, tiny + 1), (minus, tiny | f.sign_bit), (tiny, tiny),
        (largest, s["+min normal"]),
    ]  # fmt: skip
    return found + [("subnormals", "subnormal operand", a, b) for a, b in subnormal]


@cache
def ternary_cases(row: ContractOp, f: FloatFormat) -> list[tuple[str, str, int, int, int]]:
    """(aspect, rule, operands...) of where or clip (a condition is true where its pattern's
    sign is clear: +1, false at -1). where: NaNs and zeros moved as they are (`select`, ruled by
    the formula whatever the section says). clip: low > high (`select`), a NaN in each operand
    and in two (`nan`: the section's rule, its operand the first NaN of x, low, high for `lhs`,
    the last for `rhs`), -0 against +0 both ways (`zero_tie`: the section's rule at both of
    clip's steps, maximum(x, low) then minimum of that and high). Then subnormals moved and
    compared as numbers (`subnormals`)."""
    s, v = special(f.dtype), partial(value, f)
    qnan, snan = s["+qNaN, lowest payload bit"], s["-sNaN, alternating payload"]
    tiny, one, zero, minus = s["+smallest subnormal"], v(1.0), v(0.0), v(-0.0)
    found: list[tuple[str, str, int, int, int]] = []
    if row.family is Family.SELECT:
        yes, no = v(1.0), v(-1.0)
        select = [(yes, snan, one), (no, one, qnan), (yes, minus, zero), (no, zero, minus)]
        tinies = [(yes, tiny, one), (no, one, tiny | f.sign_bit)]
    else:
        select = [(v(5.0), v(3.0), v(2.0)), (v(-1.0), v(-3.0), v(-2.0))]
        nans = [(snan, qnan, one), (one, qnan, v(2.0)), (one, zero, snan), (qnan, one, snan)]
        found += [("nan", _nan_rule(f, x if is_nan(f, x) else y), x, y, z) for x, y, z in nans]
        found += [
            ("zero_tie", "+0 against -0", *t) for t in ((minus, zero, one), (zero, minus, minus))
        ]
        tinies = [(tiny, zero, one), (tiny | f.sign_bit, zero, one), (zero, tiny, tiny + 1)]
    found += [("select", "the formula's operand, bit for bit", *t) for t in select]
    return found + [("subnormals", "subnormal operand", *t) for t in tinies]


def cases(op_kind: str, dtype: np.dtype, to: np.dtype | None = None) -> tuple[Case, ...]:
    """Every case of an op kind at `dtype`, aspect by aspect (none for an op kind without
    cases): a binary one's from the builders here, a unary one's from its row of the op
    table (`judge.unary_cases`), where's and clip's from `ternary_cases`, a cast's to `to`
    from `judge.casts`."""
    f = float_format(np.dtype(dtype))
    row = BY_KIND.get(op_kind)
    if row is not None and row.family is Family.CAST and to is not None:
        t = float_format(to)
        return tuple(
            Case(
                aspect,
                rule,
                op_kind,
                f.dtype,
                x,
                0,
                f"{row.name}({_name(f, x)}, {t.name})",
                1,
                to=t.dtype,
            )
            for aspect, rule, x in casts.cases(f, t)
        )
    if row is not None and row.family is Family.UNARY:
        return tuple(
            Case(aspect, rule, op_kind, f.dtype, x, 0, f"{row.name}({_name(f, x)})", arity=1)
            for aspect, rule, x in unary_cases(row, f)
        )
    if row is not None and row.family is Family.COMPARISON:
        return tuple(
            Case(aspect, rule, op_kind, f.dtype, a, b, f"{row.name}({_name(f, a)}, {_name(f, b)})")
            for aspect, rule, a, b in comparison_cases(f)
        )
    if row is not None and len(TRAITS[row.family].operands) == 3:
        return tuple(
            Case(aspect, rule, op_kind, f.dtype, a, b, _label(row, f, (a, b, c)), 3, c)
            for aspect, rule, a, b, c in ternary_cases(row, f)
        )
    if op_kind not in OPERATORS:
        return ()
    kind = OpKind(op_kind)
    op = OPERATORS[kind]
    return tuple(
        Case(aspect, rule, op_kind, f.dtype, a, b, f"{op}({_name(f, a)}, {_name(f, b)})")
        for build in _BUILDERS
        for aspect, rule, a, b in build(f, kind)
    )


def _label(row: ContractOp, f: FloatFormat, operands: tuple[int, ...]) -> str:
    """How a three-operand case is named: `where(true, sNaN·b, 1)`, `clip(-0, +0, 1)`."""
    fixed = {n for n, _ in TRAITS[row.family].fixed}
    names = TRAITS[row.family].operands
    shown = [
        ("false" if x & f.sign_bit else "true") if n in fixed else _name(f, x)
        for n, x in zip(names, operands, strict=True)
    ]
    return f"{row.name}({', '.join(shown)})"


def shown(case: Case, pattern: int) -> str:
    """A result as a finding shows it: a comparison's `true` or `false`; anything else as
    `describe` says with its bits, `-0 (0x8000)`."""
    row = BY_KIND.get(case.op_kind)
    if row is not None and row.relation is not None:
        return "true" if pattern else "false"
    return f"{describe(case, pattern)} (0x{pattern:0{2 * case.dtype.itemsize}x})"


def describe(case: Case, pattern: int) -> str:
    """What a result is, in terms of the case: a number's value (`-0`, `5`, `inf`), or where
    a NaN comes from (`lhs`, `rhs quieted`, `+qNaN` for a canonical one, else its bits)."""
    f = case.result_format
    if not is_nan(f, pattern) or case.to is not None:
        return _name(f, pattern)
    q, sign = f.quiet_bit, f.sign_bit
    for side, operand in case.sides():
        if not is_nan(f, operand):
            continue
        for form, candidate in (("", operand), (" quieted", operand | q)):
            if pattern == candidate:
                return side + form
            if pattern == candidate ^ sign:
                return f"{side}{form}, sign flipped"
    if pattern & ~sign == infinity(f) | q:
        return "-qNaN" if pattern & sign else "+qNaN"
    return f"NaN 0x{pattern:0{2 * f.dtype.itemsize}x}"
