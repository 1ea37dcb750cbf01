"""The contract operations as data: one row per operation the kernel contracts can serve.

Every operation belongs to a `Family` (binary and unary elementwise, comparisons, selections,
casts, reductions, contractions), whose traits (`fueltensor.families.TRAITS`) fix its
kernels' C signature, its operands, the judge's kind of reference and the certificate's sweep.
Everything that names an operation is derived from this table: the namespace functions
(`fueltensor.add`, `fueltensor.exp` ...) and FuelTensor's operators (`fueltensor.core.operators`),
dispatch's op_kind and host fallback, the judge's references and special cases, certify's sweeps,
and the kernels' op lists (the chassis, the compiled module's `OPS` and `UNARY_OPS`, and the C
header `ext/src/ops.h`, generated from this module by `python -m fueltensor.ops_header` and checked
against it by tests/repo/test_op_table.py). No other module spells an op kind or a kernel op id.
What an operation computes is the contracts' business: read it from the FKC documents, never from
here. docs/ops.md says how to add a row.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from fueltensor.families import Family, StrEnum
from fueltensor.hostmath import (
    host_astype,
    host_clip,
    host_erf,
    host_power,
    host_rsqrt,
    host_sigmoid,
)


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
    EXP = "ExpElementwise"
    LOG = "LogElementwise"
    TANH = "TanhElementwise"
    SIGMOID = "SigmoidElementwise"
    ERF = "ErfElementwise"
    SQRT = "SqrtElementwise"
    RSQRT = "RsqrtElementwise"
    SIN = "SinElementwise"
    COS = "CosElementwise"
    ABS = "AbsElementwise"
    NEG = "NegElementwise"
    LESS = "LessElementwise"
    LESS_EQUAL = "LessEqualElementwise"
    EQUAL = "EqualElementwise"
    NOT_EQUAL = "NotEqualElementwise"
    GREATER = "GreaterElementwise"
    GREATER_EQUAL = "GreaterEqualElementwise"
    WHERE = "WhereElementwise"
    CLIP = "ClipElementwise"
    CAST = "CastElementwise"
    SUM = "SumReduce"
    PROD = "ProdReduce"
    MAX = "MaxReduce"
    MIN = "MinReduce"
    ARGMAX = "ArgMaxReduce"
    ARGMIN = "ArgMinReduce"
    MATMUL = "MatmulContract"


class Integers(StrEnum):
    """What a unary row does with integer and bool inputs (the array API leaves the float-only
    functions' result dtype to the implementation)."""

    HOST = "host"
    """An exact integer result of the input's dtype, on the host (abs, negative)."""
    TO_FLOAT = "to default float"
    """Converted to the default floating dtype (float64) and planned through its contracts:
    one rule for every width, where NumPy picks float16, float32 or float64 by the width."""


@dataclass(frozen=True, slots=True)
class ScalarForm:
    """What an operation plans when its second operand is an integer scalar (a Python int or
    a NumPy integer): contracts of another op kind that take that scalar as their one typed
    parameter (`accept.params`), over the first operand alone."""

    op_kind: OpKind
    """The op_kind of those contracts, e.g. "PowIElementwise"."""
    kernel_op: str
    """Their kernels' op id: the thunk-name stem in entry points (`powi_f32`)."""


Reference = Callable[[Any, Any], Any]
"""A function as `reference(m, x)` over a math module `m`: gmpy2 (MPFR, at the precision the
judge sets) for the correctly rounded value; Python's `math` for a quick double sketch."""

Special = tuple[str, str]
"""One special case of a unary function, as C99 Annex F and IEEE 754 state it: (input, result),
each a named value: `+0`, `-0`, `+inf`, `-inf`, `+1`, `-1`, `0.5`, `NaN` (an input NaN; as a
result, that NaN quieted with its payload kept), `invalid` (this machine's default NaN), `|x|`
and `-x` (only the sign bit changed: a NaN's payload and signalling bit kept)."""


@dataclass(frozen=True, slots=True)
class ContractOp:
    """One contract operation: its family, its names in the namespace, the contracts and the
    kernels, and what the judge and certify check it against."""

    name: str
    """The array-API namespace function, e.g. "subtract"."""
    op_kind: OpKind
    """The op_kind its contracts declare, e.g. "SubElementwise"."""
    family: Family
    """Its family: the kernels' signature, the reference's kind, the certificate's sweep."""
    dunder: str | None
    """Operator method stem ("sub": `__sub__`, `__rsub__`, `__isub__`; "neg": `__neg__`; a
    comparison's "lt": `__lt__` alone, which Python reflects itself), None without one."""
    host: Callable[..., Any]
    """What serves dtypes no contract admits (a labelled host operation): a NumPy ufunc, or a
    function of NumPy arrays where NumPy has none."""
    kernel_op: str
    """The kernels' op id: the thunk-name stem in entry points (`sub_f32`), the C enum's name."""
    summary: str
    """What the operation is, for its docstring (its numerics are in the contracts)."""
    integer_scalar: ScalarForm | None = None
    """The form planned first when x2 is an integer scalar (x ** 2), None without one; when
    no contract of it admits the call, the operation is planned as usual."""
    reference: Reference | None = None
    """A unary function's mathematical definition (`reference(m, x)`), which the judge and
    certify evaluate correctly rounded; None for the binary rows (their references are the
    formulas of `tools.judge.references`)."""
    special: tuple[Special, ...] = ()
    """A unary function's special cases (C99 Annex F), which the semantics audit probes."""
    integers: Integers = Integers.TO_FLOAT
    """Where a unary function's integer and bool inputs go."""
    exhaustive_f32: bool = False
    """Whether its float32 certificate sweeps every one of the 2^32 inputs."""
    array_api: bool = True
    """Whether `name` is an array API function; False for a fueltensor extension (sigmoid)."""
    ieee_rounded: bool = False
    """Whether IEEE 754 rounds it correctly in the operands' own format (its 5.4.1 arithmetic:
    + - * /), so that the oracle computes it there, with its in-type NumPy ufunc."""
    relation: Callable[[float, float], bool] | None = None
    """A comparison's relation (`operator.lt` ...), which the judge and certify apply to the
    operands' exact values: Python's float comparisons are IEEE 754's (a NaN is unordered:
    only != holds; -0 == +0)."""
    formula_op: str | None = None
    """The kernel op id of the seeds' formula kernels where their numerics are not the row's
    (the remainder's `rem`: a - floor(a / b) * b, each step rounded, beside the exact `mod`):
    bodies of their own in every implementation and in the C enum, right after the row's."""

    @property
    def kernel_ops(self) -> tuple[str, ...]:
        """The row's kernel op ids: its own, then its formula kernels' (`formula_op`)."""
        return (self.kernel_op,) if self.formula_op is None else (self.kernel_op, self.formula_op)


_B, _U, _C = Family.BINARY, Family.UNARY, Family.COMPARISON
_S, _K, _X = Family.SELECT, Family.CLAMP, Family.CAST
_ZEROS: Final[tuple[Special, ...]] = (("+0", "+0"), ("-0", "-0"))
_NAN: Final[tuple[Special, ...]] = (("NaN", "NaN"),)

_R = Family.REDUCTION
REDUCTION_OPS: Final[tuple[ContractOp, ...]] = (
    ContractOp("sum", OpKind.SUM, _R, None, np.sum, "sum", "the sum of x over axes"),
    ContractOp("prod", OpKind.PROD, _R, None, np.prod, "prod", "the product of x over axes"),
    ContractOp("max", OpKind.MAX, _R, None, np.max, "max", "the largest element over axes"),
    ContractOp("min", OpKind.MIN, _R, None, np.min, "min", "the smallest element over axes"),
    ContractOp(
        "argmax", OpKind.ARGMAX, _R, None, np.argmax, "argmax",
        "the index of the first largest element over axes",
    ),
    ContractOp(
        "argmin", OpKind.ARGMIN, _R, None, np.argmin, "argmin",
        "the index of the first smallest element over axes",
    ),
)  # fmt: skip
"""The reduction rows (issue 48) in the C enum's order (`_native.REDUCTION_OPS`), each planned
through its contracts (`engine.reduce`)."""
PLANNED_REDUCTIONS: Final = REDUCTION_OPS
"""The reduction rows with contracts (sum, prod, max, min, argmax, argmin), which `CONTRACT_OPS`
holds."""
INDEX_REDUCTIONS: Final = frozenset({OpKind.ARGMAX, OpKind.ARGMIN})
"""The reductions whose result is an index (int64, the default index dtype: the contracts'
`fixed(I64)` rule), not an element: argmax and argmin, exact, refused over no element."""
VALUE_REDUCTIONS: Final = tuple(
    op for op in PLANNED_REDUCTIONS if op.op_kind not in INDEX_REDUCTIONS
)
"""The planned reductions whose result is of x's dtype (sum, prod, max, min): the frameworks'
reduction contracts cover these."""

_M = Family.CONTRACTION
CONTRACTION_OPS: Final[tuple[ContractOp, ...]] = (
    ContractOp("matmul", OpKind.MATMUL, _M, "matmul", np.matmul, "matmul", "the matrix product"),
)
"""The contraction rows (issue 46; docs/matmul.md) in the C enum's order: matmul, one row;
vecdot and tensordot are compositions of it. Planned by `engine.contract`."""
CONTRACTING_RULES: Final = tuple(op.kernel_op for op in CONTRACTION_OPS)
"""The FKC shape rules of the contractions, each named for its row's kernel op id
(`shape_rule: matmul(a, b)`)."""
CONTRACTION_PRODUCTS: Final = ("exact", "fused", "rounded")
"""How a contraction contract's products enter its sums (`accept.op_params.products`,
docs/matmul.md): exact in the accumulator, added by an FMA, or rounded to it first."""
CONTRACTION_PAIRS: Final = ("odd_first",)
"""A contraction's optional `accept.op_params.pairs` (VDPBF16PS: two products at a time, the
odd-indexed one added first)."""

CONTRACT_OPS: Final[tuple[ContractOp, ...]] = (
    ContractOp("add", OpKind.ADD, _B, "add", np.add, "add", "x1 + x2", ieee_rounded=True),
    ContractOp("subtract", OpKind.SUB, _B, "sub", np.subtract, "sub", "x1 - x2", ieee_rounded=True),
    ContractOp("multiply", OpKind.MUL, _B, "mul", np.multiply, "mul", "x1 * x2", ieee_rounded=True),
    ContractOp("divide", OpKind.DIV, _B, "truediv", np.divide, "div", "x1 / x2", ieee_rounded=True),
    ContractOp("maximum", OpKind.MAXIMUM, _B, None, np.maximum, "maximum", "the larger of x1, x2"),
    ContractOp("minimum", OpKind.MINIMUM, _B, None, np.minimum, "minimum", "the smaller of x1, x2"),
    ContractOp(
        "pow", OpKind.POW, _B, "pow", np.power, "pow", "x1 ** x2",
        ScalarForm(OpKind.POWI, "powi"),
    ),
    ContractOp(
        "remainder", OpKind.REM, _B, "mod", np.remainder, "mod", "x1 % x2", formula_op="rem",
    ),
    ContractOp(
        "exp", OpKind.EXP, _U, None, np.exp, "exp", "e raised to x",
        reference=lambda m, x: m.exp(x),
        special=(("+0", "+1"), ("-0", "+1"), ("-inf", "+0"), ("+inf", "+inf"), *_NAN),
        exhaustive_f32=True,
    ),
    ContractOp(
        "log", OpKind.LOG, _U, None, np.log, "log", "the natural logarithm of x",
        reference=lambda m, x: m.log(x),
        special=(
            ("+0", "-inf"), ("-0", "-inf"), ("+1", "+0"), ("-1", "invalid"), ("-inf", "invalid"),
            ("+inf", "+inf"), *_NAN,
        ),
        exhaustive_f32=True,
    ),
    ContractOp(
        "tanh", OpKind.TANH, _U, None, np.tanh, "tanh", "the hyperbolic tangent of x",
        reference=lambda m, x: m.tanh(x),
        special=(*_ZEROS, ("+inf", "+1"), ("-inf", "-1"), *_NAN),
        exhaustive_f32=True,
    ),
    ContractOp(
        "sigmoid", OpKind.SIGMOID, _U, None, host_sigmoid, "sigmoid", "1 / (1 + exp(-x))",
        reference=lambda m, x: 1 / (1 + m.exp(-x)),
        special=(("+0", "0.5"), ("-0", "0.5"), ("-inf", "+0"), ("+inf", "+1"), *_NAN),
        array_api=False,
    ),
    ContractOp(
        "erf", OpKind.ERF, _U, None, host_erf, "erf", "the error function of x",
        reference=lambda m, x: m.erf(x),
        special=(*_ZEROS, ("+inf", "+1"), ("-inf", "-1"), *_NAN),
        array_api=False,
    ),
    ContractOp(
        "sqrt", OpKind.SQRT, _U, None, np.sqrt, "sqrt", "the square root of x",
        reference=lambda m, x: m.sqrt(x),
        special=(*_ZEROS, ("-1", "invalid"), ("-inf", "invalid"), ("+inf", "+inf"), *_NAN),
    ),
    ContractOp(
        "rsqrt", OpKind.RSQRT, _U, None, host_rsqrt, "rsqrt", "1 / sqrt(x)",
        reference=lambda m, x: 1 / m.sqrt(x),
        special=(
            ("+0", "+inf"), ("-0", "-inf"), ("-1", "invalid"), ("-inf", "invalid"),
            ("+inf", "+0"), *_NAN,
        ),
        array_api=False,
    ),
    ContractOp(
        "sin", OpKind.SIN, _U, None, np.sin, "sin", "the sine of x (radians)",
        reference=lambda m, x: m.sin(x),
        special=(*_ZEROS, ("+inf", "invalid"), ("-inf", "invalid"), *_NAN),
        exhaustive_f32=True,
    ),
    ContractOp(
        "cos", OpKind.COS, _U, None, np.cos, "cos", "the cosine of x (radians)",
        reference=lambda m, x: m.cos(x),
        special=(("+0", "+1"), ("-0", "+1"), ("+inf", "invalid"), ("-inf", "invalid"), *_NAN),
        exhaustive_f32=True,
    ),
    ContractOp(
        "abs", OpKind.ABS, _U, "abs", np.absolute, "abs", "|x|",
        reference=lambda m, x: abs(x),
        special=(("-0", "+0"), ("-inf", "+inf"), ("NaN", "|x|")),
        integers=Integers.HOST,
    ),
    ContractOp(
        "negative", OpKind.NEG, _U, "neg", np.negative, "neg", "-x",
        reference=lambda m, x: -x,
        special=(("+0", "-0"), ("-0", "+0"), ("+inf", "-inf"), ("NaN", "-x")),
        integers=Integers.HOST,
    ),
    ContractOp("less", OpKind.LESS, _C, "lt", np.less, "lt", "x1 < x2", relation=operator.lt),
    ContractOp(
        "less_equal", OpKind.LESS_EQUAL, _C, "le", np.less_equal, "le", "x1 <= x2",
        relation=operator.le,
    ),
    ContractOp("equal", OpKind.EQUAL, _C, "eq", np.equal, "eq", "x1 == x2", relation=operator.eq),
    ContractOp(
        "not_equal", OpKind.NOT_EQUAL, _C, "ne", np.not_equal, "ne", "x1 != x2",
        relation=operator.ne,
    ),
    ContractOp(
        "greater", OpKind.GREATER, _C, "gt", np.greater, "gt", "x1 > x2", relation=operator.gt,
    ),
    ContractOp(
        "greater_equal", OpKind.GREATER_EQUAL, _C, "ge", np.greater_equal, "ge", "x1 >= x2",
        relation=operator.ge,
    ),
    ContractOp("where", OpKind.WHERE, _S, None, np.where, "where", "x1 where condition, else x2"),
    ContractOp("clip", OpKind.CLIP, _K, None, host_clip, "clamp", "x bounded to [low, high]"),
    ContractOp("astype", OpKind.CAST, _X, None, host_astype, "cast", "x converted to a dtype"),
    *PLANNED_REDUCTIONS,
    *CONTRACTION_OPS,
)  # fmt: skip
"""The operator surface, family by family. Adding a contract operation: its FKC documents, its
kernels, one row (docs/ops.md). Within a family, the rows' order is the C enum's (ext/src/ops.h)."""


def of_family(family: Family) -> tuple[ContractOp, ...]:
    """The rows of one family, in table order (the C enum's order within it)."""
    return tuple(op for op in CONTRACT_OPS if op.family is family)


BINARY_OPS: Final = of_family(Family.BINARY)
"""The binary elementwise rows (two tensor operands: `binary(op, a, b)`)."""
UNARY_OPS: Final = of_family(Family.UNARY)
"""The unary elementwise rows (one tensor operand: `unary(op, x)`)."""
COMPARISON_OPS: Final = of_family(Family.COMPARISON)
"""The comparison rows (two tensor operands, a bool result: `binary(op, a, b)`)."""
SELECT_OPS: Final = of_family(Family.SELECT)
"""The selection rows (where: a bool condition, two operands)."""
TERNARY_OPS: Final = SELECT_OPS + of_family(Family.CLAMP)
"""The three-operand rows, a selection and a clamp (`engine.ternary`)."""
(CAST_OP,) = of_family(Family.CAST)  # astype between float formats: `engine.cast`

REDUCTION_BY_KIND: Final[Mapping[str, ContractOp]] = MappingProxyType(
    {op.op_kind.value: op for op in REDUCTION_OPS}
)
"""The reduction rows by op kind ("SumReduce", or `OpKind.SUM`): how the judge knows a contract
for its reduction audit (`tools.judge.reductions`), prod's included."""

CONTRACTION_BY_KIND: Final[Mapping[str, ContractOp]] = MappingProxyType(
    {op.op_kind.value: op for op in CONTRACTION_OPS}
)
"""The contraction rows by op kind ("MatmulContract"): how the judge knows a contract for its
contraction audit (`tools.judge.contractions`)."""

REDUCTION_ORDERS: Final = ("sequential", "blocked", "pairwise")
"""The orders a reduction contract may declare in `accept.op_params.order` (docs/reductions.md,
the C enum's `ORDER_*`); one that declares none promises no order (any order's bound)."""

BY_NAME: Final = MappingProxyType({op.name: op for op in CONTRACT_OPS})
"""The rows by namespace name ("add")."""

BY_KIND: Final[Mapping[str, ContractOp]] = MappingProxyType(
    {op.op_kind.value: op for op in CONTRACT_OPS}
)
"""The rows by op kind ("AddElementwise", or `OpKind.ADD`, which equals it)."""

KERNEL_OPS: Final[tuple[str, ...]] = tuple(k for op in BINARY_OPS for k in op.kernel_ops)
"""The binary kernels' op ids, in table order (the C enum's), formula kernels included."""
UNARY_KERNEL_OPS: Final[tuple[str, ...]] = tuple(op.kernel_op for op in UNARY_OPS)
"""The unary kernels' op ids, in table order (the C enum's)."""
COMPARISON_KERNEL_OPS: Final[tuple[str, ...]] = tuple(op.kernel_op for op in COMPARISON_OPS)
"""The comparison kernels' op ids, in table order (the C enum's)."""

SCALAR_FORMS: Final[tuple[ScalarForm, ...]] = tuple(
    op.integer_scalar for op in CONTRACT_OPS if op.integer_scalar is not None
)
"""The integer-scalar forms (their op kinds are dispatched too), in table order."""


SPELLINGS: Final[Mapping[str, ContractOp]] = MappingProxyType(
    {
        spelling.lower(): op
        for op in CONTRACT_OPS
        for spelling in (op.name, op.op_kind.value, *op.kernel_ops)
    }
)
"""Every spelling of an operation the command line accepts, lower-cased: its namespace name
("subtract"), its op kind ("SubElementwise") and its kernels' op ids ("sub"; "mod", "rem")."""


def spelled(text: str) -> ContractOp | None:
    """The operation `text` names in any of its `SPELLINGS` (any case), None if none."""
    return SPELLINGS.get(text.strip().lower())


HOST_CALLS: Final[Mapping[str, Callable[..., np.ndarray]]] = MappingProxyType(
    {op.name: op.host for op in CONTRACT_OPS} | {"pow": host_power}
)
"""What runs each operation on the host (dtypes no contract admits): its ufunc, with NumPy's
refusals translated where NumPy's words would puzzle a fueltensor user."""
