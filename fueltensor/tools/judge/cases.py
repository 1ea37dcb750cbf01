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
from functools import cache
from typing import Any, Final

import ml_dtypes
import numpy as np

from fueltensor.tools.judge.references import BF16, round_to

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


@dataclass(frozen=True)
class Format:
    """A float dtype's bit fields, as the cases need them."""

    dtype: np.dtype
    mantissa: int
    exponent: int
    min_exponent: int

    @property
    def uint(self) -> np.dtype:
        """The unsigned dtype of the same width."""
        return np.dtype(f"u{self.dtype.itemsize}")

    @property
    def sign_bit(self) -> int:
        """The sign bit as a mask."""
        return 1 << (8 * self.dtype.itemsize - 1)

    @property
    def quiet_bit(self) -> int:
        """The top fraction bit (set in a quiet NaN)."""
        return 1 << (self.mantissa - 1)

    @property
    def exponent_bits(self) -> int:
        """The all-ones exponent field as a mask."""
        return ((1 << self.exponent) - 1) << self.mantissa

    def is_nan(self, pattern: int) -> bool:
        """Whether `pattern` is a NaN."""
        magnitude = pattern & ~self.sign_bit
        return magnitude & self.exponent_bits == self.exponent_bits and magnitude != (
            self.exponent_bits
        )

    def is_subnormal(self, pattern: int) -> bool:
        """Whether `pattern` is a nonzero number below the normal range."""
        magnitude = pattern & ~self.sign_bit
        return 0 < magnitude < (1 << self.mantissa)

    def value(self, x: float) -> int:
        """The bits of `x` rounded (once, to nearest) to this dtype."""
        rounded = round_to(np.array([x], np.float64), self.dtype)
        return int(rounded.view(self.uint)[0])

    def number(self, pattern: int) -> float:
        """The value of a bit pattern, as a Python float."""
        array = np.array([pattern], self.uint).view(self.dtype)
        return float(array.astype(np.float64)[0])


@cache
def float_format(dtype: np.dtype) -> Format:
    """The bit fields of one of the four float dtypes, from its `finfo`."""
    info: Any = ml_dtypes.finfo(dtype) if dtype == BF16 else np.finfo(dtype)  # type: ignore[no-untyped-call]
    return Format(np.dtype(dtype), int(info.nmant), int(info.nexp), int(info.minexp))


@cache
def special(dtype: np.dtype) -> dict[str, int]:
    """The special values the cases use, by name, as bit patterns of `dtype`."""
    f = float_format(dtype)
    nan, quiet = f.exponent_bits, f.quiet_bit
    alternating = (quiet - 1) // 3
    values = {
        "qNaN, lowest payload bit": nan | quiet | 1,
        "qNaN, alternating payload": nan | quiet | alternating,
        "sNaN, lowest payload bit": nan | 1,
        "sNaN, alternating payload": nan | alternating,
        "infinity": nan,
        "zero": 0,
        "smallest subnormal": 1,
        "min normal": 1 << f.mantissa,
        "1": f.value(1.0),
    }
    signed = {f"+{k}": v for k, v in values.items()}
    return signed | {f"-{k}": v | f.sign_bit for k, v in values.items()}


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
    def format(self) -> Format:
        """The bit fields of the case's dtype."""
        return float_format(self.dtype)

    def operands(self) -> str:
        """The operands' bit patterns, `0x7fc00001, 0x3fc00000`."""
        width = 2 * self.dtype.itemsize
        return f"0x{self.lhs:0{width}x}, 0x{self.rhs:0{width}x}"


def _name(f: Format, pattern: int) -> str:
    """A short name for an operand: its value, or `NaN·a` / `-sNaN·b` for a NaN (a, b: the
    two payloads of `special`, lowest payload bit and alternating; other payloads in hex)."""
    if f.is_nan(pattern):
        kind = "NaN" if pattern & f.quiet_bit else "sNaN"
        sign = "-" if pattern & f.sign_bit else ""
        payload = pattern & (f.quiet_bit - 1)
        tag = {1: "a", (f.quiet_bit - 1) // 3: "b"}.get(payload, f"{payload:#x}")
        return f"{sign}{kind}·{tag}"
    x = f.number(pattern)
    if x == 0:
        return "-0" if pattern & f.sign_bit else "+0"
    if f.is_subnormal(pattern):
        return f"{'-' if x < 0 else ''}subnormal"
    return f"{x:g}"


Builder = Callable[[Format, str], list[tuple[str, str, int, int]]]


def _nan_cases(f: Format, op: str) -> list[tuple[str, str, int, int]]:
    """A NaN operand on either side, signaling NaNs, two NaNs either way round."""
    s = special(f.dtype)
    a, b = s["+qNaN, lowest payload bit"], s["-qNaN, alternating payload"]
    sa, sb = s["+sNaN, lowest payload bit"], s["-sNaN, alternating payload"]
    x = f.value(1.5)
    return [
        ("nan", "a NaN operand", a, x),
        ("nan", "a NaN operand", x, b),
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


def _invalid_cases(f: Format, op: str) -> list[tuple[str, str, int, int]]:
    return [
        ("invalid", "NaN from numbers", f.value(x), f.value(y)) for x, y in _INVALID.get(op, ())
    ]


def _zero_tie_cases(f: Format, op: str) -> list[tuple[str, str, int, int]]:
    if op not in ("maximum", "minimum"):
        return []
    zero, minus = special(f.dtype)["+zero"], special(f.dtype)["-zero"]
    return [("zero_tie", "±0 tie", zero, minus), ("zero_tie", "±0 tie", minus, zero)]


def _remainder_cases(f: Format, op: str) -> list[tuple[str, str, int, int]]:
    if op != "rem":
        return []
    v = f.value
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


def _pow_cases(f: Format, op: str) -> list[tuple[str, str, int, int]]:
    if op != "pow":
        return []
    s, v = special(f.dtype), f.value
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


def _subnormal_cases(f: Format, op: str) -> list[tuple[str, str, int, int]]:
    s, v = special(f.dtype), f.value
    found = [("subnormals", "subnormal operand", s["+smallest subnormal"], v(_IDENTITY[op]))]
    if op in ("mul", "div"):
        found.append(
            ("subnormals", "subnormal result", s["+min normal"], v(0.5 if op == "mul" else 2.0))
        )
    if op == "pow":
        found.append(("subnormals", "subnormal result", v(2.0), v(float(f.min_exponent - 3))))
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
    if not f.is_nan(pattern):
        return _name(f, pattern)
    q, sign = f.quiet_bit, f.sign_bit
    for side, operand in (("lhs", case.lhs), ("rhs", case.rhs)):
        if not f.is_nan(operand):
            continue
        for form, bits in (("", operand), (" quieted", operand | q)):
            if pattern == bits:
                return side + form
            if pattern == bits ^ sign:
                return f"{side}{form}, sign flipped"
    if pattern & ~sign == f.exponent_bits | q:
        return "-qNaN" if pattern & sign else "+qNaN"
    return f"NaN 0x{pattern:0{2 * f.dtype.itemsize}x}"
