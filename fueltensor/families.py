"""The op families: what every operation of a family shares (its kernels' Python and C
signatures, its typed parameters, the judge's reference and the certificate's sweep), apart
from the op table (`fueltensor.ops`) whose rows each name one. No op kind is spelled here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Final


class StrEnum(str, Enum):
    """A closed vocabulary whose members are their strings: `str()`, equality and hashing are
    the string's, so a member and its string find the same dict entry (enum.StrEnum is 3.11+)."""

    def __str__(self) -> str:
        return str(self.value)

    def __hash__(self) -> int:
        return str.__hash__(self)


class Family(StrEnum):
    """An op family: what its kernels take and return, once for all its rows (`TRAITS`)."""

    BINARY = "binary elementwise"
    UNARY = "unary elementwise"
    COMPARISON = "comparison"
    SELECT = "selection"
    CLAMP = "clamp"
    CAST = "cast"
    REDUCTION = "reduction"
    CONTRACTION = "contraction"


@dataclass(frozen=True, slots=True)
class Traits:
    """What a family fixes for every op of it: the kernels' signatures (Python thunk and C body,
    ext/src/abi.h), its typed parameters, the judge's reference and the certificate's sweep."""

    operands: tuple[str, ...]
    """The tensor operands' names, in the kernel's order (`lhs`, `rhs`; `x`; `a`, `b`)."""
    thunk: str
    """The Python kernel's signature (what a contract's entry point must accept)."""
    abi: int
    """The C ABI version of its compiled bodies: 1, dense buffers of n elements; 2, shaped
    operands (`TensorArg`: dtype, shape, byte strides) with typed parameters (`ParamArg`)."""
    c_body: str
    """The abi.h type of its compiled bodies."""
    params: tuple[str, ...]
    """The typed parameters every kernel of the family takes (`accept.params` adds others)."""
    reference: str
    """What the judge compares against."""
    certificate: str
    """What `fueltensor certify` sweeps."""
    fixed: tuple[tuple[str, str], ...] = ()
    """(operand, FKC dtype) of the operands whose dtype the family fixes (a selection's
    `condition` is BOOL): never promoted with the others, refused by name when of another."""


TRAITS: Final[Mapping[Family, Traits]] = MappingProxyType(
    {
        Family.BINARY: Traits(
            ("lhs", "rhs"),
            "kernel(lhs, rhs, *, out)",
            1,
            "Body",
            (),
            "the correctly rounded value (MPFR where the C library's error leaves it open) "
            "and the contract's formula",
            "every pair of 16-bit inputs (2^32); sampled pairs for f32 and f64",
        ),
        Family.UNARY: Traits(
            ("x",),
            "kernel(x, *, out)",
            1,
            "UnaryBody",
            (),
            "the correctly rounded value (MPFR at 200 bits), never NumPy's",
            "every 16-bit input (2^16); every f32 input (2^32) where the row says so",
        ),
        Family.COMPARISON: Traits(
            ("lhs", "rhs"),
            "kernel(lhs, rhs, *, out)",
            1,
            "Body",
            (),
            "the IEEE 754 comparison of the operands' exact values (a NaN is unordered)",
            "every pair of 16-bit inputs (2^32); sampled pairs for f32 and f64",
        ),
        Family.SELECT: Traits(
            ("condition", "x1", "x2"),
            "kernel(condition, x1, x2, *, out)",
            1,
            "TernaryBody",
            (),
            "the operand the condition picks, bit for bit",
            "none: a selection computes nothing (the judge checks every lane's bits)",
            (("condition", "BOOL"),),
        ),
        Family.CLAMP: Traits(
            ("x", "low", "high"),
            "kernel(x, low, high, *, out)",
            1,
            "TernaryBody",
            (),
            "minimum(maximum(x, low), high) by the binary maximum and minimum contracts' rules",
            "none: a clamp selects one of its operands (the judge checks every lane's bits)",
        ),
        Family.CAST: Traits(
            ("x",),
            "kernel(x, *, out)",
            1,
            "CastBody",
            (),
            "the exact source value rounded by the declared rule (`CAST_RULES`)",
            "every pattern of a 32-bit or narrower source; f64 at the target's boundaries",
        ),
        Family.REDUCTION: Traits(
            ("x",),
            "kernel(x, axes, *, out)",
            2,
            "ShapedKernel",
            ("axes",),
            "exact accumulation (fsum, rationals) and the declared bound",
            "the bound on adversarial inputs; bitwise equality across thread counts",
        ),
        Family.CONTRACTION: Traits(
            ("a", "b"),
            "kernel(a, b, *, out)",
            2,
            "ShapedKernel",
            (),
            "exactly accumulated dot products and the declared bound",
            "the bound, and invariance across layouts and thread counts",
        ),
    }
)
"""Each family's traits; REDUCTION's rows are `REDUCTION_OPS`, CONTRACTION's `CONTRACTION_OPS`
(matmul, issue 46)."""

CONTRACTED: Final = "k"
"""The cost formulas' variable of a contraction's dot-product length (K), beside `n`: a contract
whose shape rule is a contraction's (`matmul(a, b)`) may name it; the planner sets it to a's
last extent."""

ABI_VERSIONS: Final[Mapping[int, str]] = MappingProxyType(
    {
        1: "a byte kernel NAME(lhs, lhs_bytes, rhs, rhs_bytes, out, out_bytes) over dense buffers",
        2: "a ShapedKernel (ext/src/abi.h): shaped operands (TensorArg) and typed parameters",
    }
)
"""The C ABI versions a compiled kernel's contract may declare (`abi:` beside its entry point),
each as a user writes it; a family takes the one its `Traits.abi` names. Version 2 is abi.h's
`ABI_VERSION` (tests/kernels/test_shaped_kernels.py holds them equal)."""

CAST_RULES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {"rounding": ("nearest_even",), "overflow": ("inf_or_nan", "saturate")}
)
"""What a cast contract declares in `accept.op_params`, each from its list, the default first
(docs/casts.md): `overflow` `inf_or_nan` (beyond the largest finite: inf, or e4m3fn's NaN) or
`saturate` (that largest finite). A call asks for one rule; only contracts declaring it run."""
