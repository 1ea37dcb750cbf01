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
from typing import Final

import numpy as np

from fueltensor.testing import FloatFormat, bits, float_format, special_values
from fueltensor.tools.judge.references import round_to

OPERATORS: Final = {
    "AddElementwise": "add",
    "SubElementwise": "sub",
    "MulElementwise": "mul",
    "DivElementwise": "div",
    "RemElementwise": "rem",
    "PowElementwise": "pow",
    "MaximumElementwise": "maximum",
    "MinimumElementwise": "minimum",
}
"""Each binary op kind with the name its cases are written with ("maximum(+0, -0)")."""


def infinity(f: FloatFormat) -> int:
    """+inf's bits: the all-ones exponent field."""
    return f.pattern(0, f.exponent_max, 0)


def is_nan(f: FloatFormat, pattern: int) -> bool:
    """Whether `pattern` is a NaN of format `f`."""
    _, exponent, fraction = f.fields(pattern)
    return exponent == f.exponent_max and fraction != 0


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
    """How the table and the judge name it: `minimum(+0, -0)`."""

    @property
    def format(self) -> FloatFormat:
        """The bit fields of the case's dtype."""
        return float_format(self.dtype)

    def operands(self) -> str:
        """The operands' bit patterns, `0x7fc00001, 0x3fc00000`."""
        width = 2 * self.dtype.itemsize
        return f"0x{self.lhs:0{width}x}, 0x{self.rhs:0{width}x}"


def _name(f: FloatFormat, pattern: int) -> str:
    """A short name for an operand: its value, or `NaN·a` / `-sNaN·b` for a NaN (a, b: the
    two payloads of `special`, lowest payload bit and alternating; other payloads in hex)."""
    if is_nan(f, pattern):
        kind = "NaN" if pattern & f.quiet_bit else "sNaN"
        sign = "-" if pattern & f.sign_bit else ""
        payload = pattern & (f.quiet_bit - 1)
        tag = {1: "a", (f.quiet_bit - 1) // 3: "b"}.get(payload, f"{payload:#x}")
        return f"{sign}{kind}·{tag}"
    x = number(f, pattern)
    if x == 0:
        return "-0" if pattern & f.sign_bit else "+0"
    if is_subnormal(f, pattern):
        return f"{'-' if x < 0 else ''}subnormal"
    return f"{x:g}"


Builder = Callable[[FloatFormat, str], list[tuple[str, str, int, int]]]


def _nan_cases(f: FloatFormat, op: str) -> list[tuple[str, str, int, int]]:
    """A NaN operand on either side (beside a positive number and -inf: some kernels make the
    NaN's sign from the other operand's; a negative NaN beside an odd integer: the C library's
    pow negates x * x there), signaling NaNs, two NaNs either way round."""
    s = special(f.dtype)
    a, b = s["+qNaN, lowest payload bit"], s["-qNaN, alternating payload"]
    sa, sb = s["+sNaN, lowest payload bit"], s["-sNaN, alternating payload"]
    x = value(f, 1.5)
    return [
        ("nan", "a NaN operand", a, x),
        ("nan", "a NaN operand", x, b),
        ("nan", "a NaN operand", s["-infinity"], a),
        ("nan", "a NaN operand", a, s["-infinity"]),
        ("nan", "a NaN operand", b, value(f, 3.0)),
        ("nan", "a signaling NaN operand", sa, x),
        ("nan", "a signaling NaN operand", x, sb),
        ("nan", "two NaNs", a, b),
        ("nan", "two NaNs", b, a),
        ("nan", "two NaNs", sa, b),
    ]


_INVALID: Final = {
    "add": ((math.inf, -math.inf),),
    "sub": ((math.inf, math.inf),),
    "mul": ((0.0, math.inf),),
    "div": ((0.0, 0.0), (math.inf, math.inf)),
    "rem": ((1.5, 0.0), (math.inf, 2.0)),
    "pow": ((-2.0, 0.5),),
}
"""Operands from which each operation makes a NaN out of numbers."""


def _invalid_cases(f: FloatFormat, op: str) -> list[tuple[str, str, int, int]]:
    return [
        ("invalid", "NaN from numbers", value(f, x), value(f, y)) for x, y in _INVALID.get(op, ())
    ]


def _zero_tie_cases(f: FloatFormat, op: str) -> list[tuple[str, str, int, int]]:
    if op not in ("maximum", "minimum"):
        return []
    zero, minus = special(f.dtype)["+zero"], special(f.dtype)["-zero"]
    return [("zero_tie", "±0 tie", zero, minus), ("zero_tie", "±0 tie", minus, zero)]


def _remainder_cases(f: FloatFormat, op: str) -> list[tuple[str, str, int, int]]:
    if op != "rem":
        return []
    v = partial(value, f)
    zeros = [(-4.0, 2.0), (4.0, -2.0), (0.0, -2.0), (-0.0, 2.0)]
    infinite = [(5.0, math.inf), (-5.0, math.inf), (5.0, -math.inf), (-5.0, -math.inf)]
    large = {11: (1e30, 3.0), 8: (1e10, 3.0)}.get(f.exponent, (60000.0, 0.001))
    overflow = {11: (1e300, 3e-10), 8: (1e30, 3e-10)}.get(f.exponent, (60000.0, 3e-7))
    definition = [(-1.0, 3.0), large, overflow, (0.1, 0.01)]
    return (
        [("remainder", "zero_sign", v(x), v(y)) for x, y in zeros]
        + [("remainder", "infinite_divisor", v(x), v(y)) for x, y in infinite]
        + [("remainder", "definition", v(x), v(y)) for x, y in definition]
    )


def _pow_cases(f: FloatFormat, op: str) -> list[tuple[str, str, int, int]]:
    if op != "pow":
        return []
    s, v = special(f.dtype), partial(value, f)
    nan, one = s["+qNaN, lowest payload bit"], s["+1"]
    return [
        ("pow", "nan_zero", nan, s["+zero"]),
        ("pow", "nan_zero", s["-qNaN, alternating payload"], s["-zero"]),
        ("pow", "one_nan", one, nan),
        ("pow", "one_nan", one, s["-qNaN, alternating payload"]),
        ("pow", "minus_one_inf", s["-1"], s["+infinity"]),
        ("pow", "minus_one_inf", s["-1"], s["-infinity"]),
        ("pow", "zero_negative", s["-zero"], v(-1.0)),
        ("pow", "zero_negative", s["-zero"], v(-2.0)),
        ("pow", "zero_negative", s["+zero"], v(-1.0)),
        ("pow", "zero_negative", s["-zero"], v(-0.5)),
        ("pow", "negative_fractional", v(-2.0), v(0.5)),
        ("pow", "negative_fractional", v(-8.0), v(1 / 3)),
    ]


_IDENTITY: Final = {
    "add": 0.0,
    "sub": 0.0,
    "mul": 1.0,
    "div": 1.0,
    "rem": 1.0,
    "pow": 1.0,
    "maximum": -math.inf,
    "minimum": math.inf,
}
"""A right operand that gives back a subnormal left operand unchanged."""


def _subnormal_cases(f: FloatFormat, op: str) -> list[tuple[str, str, int, int]]:
    s, v = special(f.dtype), partial(value, f)
    found = [("subnormals", "subnormal operand", s["+smallest subnormal"], v(_IDENTITY[op]))]
    if op in ("mul", "div"):
        found.append(
            ("subnormals", "subnormal result", s["+min normal"], v(0.5 if op == "mul" else 2.0))
        )
    if op == "pow":
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


@cache
def cases(op_kind: str, dtype: np.dtype) -> tuple[Case, ...]:
    """Every case of a binary op kind at `dtype`, aspect by aspect (none for an op kind
    without cases)."""
    op = OPERATORS.get(op_kind)
    if op is None:
        return ()
    f = float_format(np.dtype(dtype))
    return tuple(
        Case(aspect, rule, op_kind, f.dtype, a, b, f"{op}({_name(f, a)}, {_name(f, b)})")
        for build in _BUILDERS
        for aspect, rule, a, b in build(f, op)
    )


def describe(case: Case, pattern: int) -> str:
    """What a result is, in terms of the case: a number's value (`-0`, `5`, `inf`), or where
    a NaN comes from (`lhs`, `rhs quieted`, `+qNaN` for a canonical one, else its bits)."""
    f = case.format
    if not is_nan(f, pattern):
        return _name(f, pattern)
    q, sign = f.quiet_bit, f.sign_bit
    for side, operand in (("lhs", case.lhs), ("rhs", case.rhs)):
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
