"""The judge's references: what a kernel should return for each op kind, in higher precision.

One reference per row of the op table `fueltensor.ops` computes what the bundled contract
documents of that op kind state, rounded once to the dtype: exactly rounded arithmetic (F64 in
exact rationals on a subsample), selection returning an operand's own bits, the documented
remainder formula step by step, pow correctly rounded: the C library's `pow` one precision
up where its error bound proves the rounding, MPFR on the lanes near a rounding boundary (lanes
a contract leaves open, such as a signaling-NaN operand of pow, are left out); and each unary
row's own definition (`ContractOp.reference`) correctly rounded by MPFR (`exact_unary`). The
numerics themselves are the documents' (`fueltensor contracts --op OP_KIND`), not this module's.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import Any, Final

import ml_dtypes
import numpy as np

from fueltensor.kernels.libm import libm_pow
from fueltensor.ops import (
    BINARY_OPS,
    COMPARISON_OPS,
    SCALAR_FORMS,
    TERNARY_OPS,
    UNARY_OPS,
    ContractOp,
    OpKind,
)
from fueltensor.testing import SIGNALING_NAN, classify, float_format
from fueltensor.tools import exact_pow, exact_unary

Array = np.ndarray
F64: Final = np.dtype(np.float64)
F32: Final = np.dtype(np.float32)
BF16: Final = np.dtype(ml_dtypes.bfloat16)


def round_to(x: Array, dtype: np.dtype) -> Array:
    """Round f64 (or long double) values once, to nearest even, into `dtype`.

    NumPy rounds f64 -> f32/f16 directly; bf16 goes through f32 rounded to odd, which makes the
    second rounding exact (a plain f64 -> f32 -> bf16 would round twice).
    """
    if dtype != BF16:
        with np.errstate(all="ignore"):
            return np.asarray(x).astype(dtype)
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        r = x.astype(np.float32)
        back = r.astype(np.float64)
    u = r.view(np.uint32).copy()
    inexact = np.isfinite(r) & (back != x)
    u[inexact & (np.abs(back) > np.abs(x))] -= 1
    u[inexact] |= 1
    rounded: Array = u.view(np.float32).astype(BF16)
    return rounded


def _exact(op: Callable[[Any, Any], Any], x: float, y: float) -> float:
    """`op(x, y)` in exact rational arithmetic, rounded once to f64. IEEE special cases
    (non-finite operands, division by zero, the sign of an exact zero) involve no rounding and
    come from f64 arithmetic."""
    ieee = float(op(np.float64(x), np.float64(y)))
    if not (math.isfinite(x) and math.isfinite(y)) or (op is operator.truediv and y == 0):
        return ieee
    exact = op(Fraction(x), Fraction(y))
    if exact == 0:
        return ieee
    try:
        return float(exact)
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def _rational(op: Callable[[Any, Any], Any], a: Array, b: Array) -> Array:
    with np.errstate(all="ignore"):
        return np.array(
            [_exact(op, float(x), float(y)) for x, y in zip(a, b, strict=True)], np.float64
        )


_UFUNC: Final = {
    operator.add: np.add,
    operator.sub: np.subtract,
    operator.mul: np.multiply,
    operator.truediv: np.divide,
}


def _rounded_op(op: Callable[[Any, Any], Any], a: Array, b: Array, working: np.dtype) -> Array:
    """One arithmetic step exactly rounded once into `working` (via f64, F64 via Fraction)."""
    if working == F64:
        return _rational(op, a, b)
    with np.errstate(all="ignore"):
        return round_to(_UFUNC[op](a.astype(F64), b.astype(F64)), working)


def _arith(op: Callable[[Any, Any], Any]) -> Reference:
    """The reference of add/sub/mul/div: `op` exactly rounded once into the operands' dtype."""

    def ref(a: Array, b: Array) -> Array:
        return _rounded_op(op, a, b, a.dtype)

    return Reference("exact: f64 (F64: rational), rounded once", ref, exact_f64=True, formula=True)


def _select(pick_lhs: Callable[[Array, Array], Array]) -> Reference:
    def ref(a: Array, b: Array) -> Array:
        with np.errstate(all="ignore"):
            wa, wb = a.astype(F64), b.astype(F64)
            lhs = np.isnan(wa) | (pick_lhs(wa, wb) & ~np.isnan(wb))
        return np.where(lhs, a, b)

    return Reference(
        "selection: NaN operand unchanged (lhs first), lhs on a ±0 tie",
        ref,
        nan_bits=True,
        zero_signs=True,
        formula=True,
    )


def _where(condition: Array, x1: Array, x2: Array) -> Array:
    """x1's bit patterns where the condition holds, else x2's."""
    width = f"u{x1.dtype.itemsize}"
    out: Array = np.where(condition, x1.view(width), x2.view(width)).view(x1.dtype)
    return out


def _clamp(x: Array, low: Array, high: Array) -> Array:
    """minimum(maximum(x, low), high) by the maximum and minimum references (selections)."""
    return _BY_KIND[OpKind.MINIMUM].fn(_BY_KIND[OpKind.MAXIMUM].fn(x, low), high)


def _remainder(a: Array, b: Array) -> Array:
    working = F64 if a.dtype == F64 else F32
    wa, wb = a.astype(working), b.astype(working)
    q = _rounded_op(operator.truediv, wa, wb, working)
    with np.errstate(all="ignore"):
        q = np.floor(q)
    return round_to(
        _rounded_op(operator.sub, wa, _rounded_op(operator.mul, q, wb, working), working), a.dtype
    )


def _signaling(x: Array) -> Array:
    """Lanes holding a signaling NaN (quiet bit, the top fraction bit, clear)."""
    found: Array = classify(x) == SIGNALING_NAN
    return found


def _wide_pow(a: Array, b: Array) -> Array:
    """pow one precision up: the C library's `pow` (double) for F32 and the half types, as the
    kernels' `powf` is; for F64 NumPy's long double power, which calls the C library's `powl`
    (NumPy's own vector loops serve float32/float64 only). NumPy's float64 `np.power` is not
    used: on AVX-512 machines it runs its own loops, other last bits."""
    if a.dtype == F64:
        with np.errstate(all="ignore"):
            wide: Array = np.power(a.astype(np.longdouble), b.astype(np.longdouble))
        return wide
    wide = np.empty(a.shape, F64)
    with np.errstate(all="ignore"):  # a signaling NaN widens quietly
        libm_pow(a.astype(F64), b.astype(F64), out=wide)
    return wide


def _pow_unproven(a: Array, b: Array) -> Array:
    """Lanes where the wider pow rounded once is not proven to be the correctly rounded result
    (a rounding boundary of the dtype within the error bound, `exact_pow.unproven`)."""
    return exact_pow.unproven(_wide_pow(a, b), lambda v: round_to(v, a.dtype))


def _pow(a: Array, b: Array) -> Array:
    """pow correctly rounded into the dtype: the wider pow rounded once (`_wide_pow`) where that
    is proven, and MPFR's pow (`exact_pow`, the certify extra) on the lanes near a rounding
    boundary; without gmpy2 those lanes are left out of the measure (`_pow_skip`)."""
    wide = _wide_pow(a, b)
    out = round_to(wide, a.dtype)
    doubt = exact_pow.unproven(wide, lambda v: round_to(v, a.dtype))
    if doubt.any() and exact_pow.available():
        with np.errstate(all="ignore"):
            x, y = a[doubt].astype(F64), b[doubt].astype(F64)
        out[doubt] = exact_pow.correctly_rounded(x, y, float_format(a.dtype))
    return out


def _pow_skip(a: Array, b: Array) -> Array:
    """pow's lanes left out: a signaling NaN operand (C99 leaves it open), and the unproven
    lanes where MPFR is not installed."""
    skip: Array = _signaling(a) | _signaling(b)
    return skip if exact_pow.available() else skip | _pow_unproven(a, b)


POWI_SWEEP: Final = 32
"""The largest |k| the judge runs PowI at: the contracts declare max_ulp up to there."""


def _odd_f64(exact: Fraction) -> float:
    """`exact` rounded to f64 to odd (an inexact result gets an odd last bit), so rounding it
    once more to nearest, into a format of at most 51 significant bits, rounds `exact` once."""
    f = float(exact)
    if Fraction(f) != exact and not int(np.float64(f).view(np.uint64)) & 1:
        f = math.nextafter(f, math.inf if exact > Fraction(f) else -math.inf)
    return f


def _powi_value(x: float, k: int, nearest: bool) -> float:
    """x**k as IEEE `pown` says for zeros, infinities and NaN; else exactly (rational), rounded
    to f64 to nearest when `nearest`, else to odd (for one more rounding into the dtype)."""
    if k == 0:
        return 1.0
    if math.isnan(x):
        return x
    if x == 0 or math.isinf(x):
        big = (x == 0) == (k < 0)
        return math.copysign(math.inf if big else 0.0, x if k % 2 else 1.0)
    exact = Fraction(x) ** k
    return float(exact) if nearest else _odd_f64(exact)


def _powi(a: Array, k: int) -> Array:
    with np.errstate(all="ignore"):
        values = [_powi_value(x, k, a.dtype == F64) for x in a.astype(F64).tolist()]
        return round_to(np.array(values, F64), a.dtype)


def _powi_outside(a: Array, k: int) -> Array:
    """Lanes outside the domain the PowI contracts bound: |k| above the sweep, or a finite
    nonzero x whose powers |x|**1 .. |x|**|k| leave the working precision's normal range."""
    info = np.finfo(F64 if a.dtype == F64 else F32)
    with np.errstate(all="ignore"):
        m = np.abs(a.astype(F64 if a.dtype == F64 else np.longdouble))
        top = m ** abs(k)
        ends = np.minimum(m, top), np.maximum(m, top)
        finite = np.isfinite(m) & (m != 0)
    out: Array = finite & ((ends[0] < info.tiny) | (ends[1] > info.max))
    return out | (abs(k) > POWI_SWEEP)


@dataclass(frozen=True)
class Reference:
    """How the judge computes what a kernel should return for one op kind."""

    describe: str
    fn: Callable[..., Array]
    """`fn(*inputs, *params)`: the expected values in the inputs' dtype."""
    exact_f64: bool = False
    """F64 is computed in exact rational arithmetic: the probe is subsampled."""
    skip: Callable[..., Array] | None = None
    """Lanes left out of the precision measure (the semantics leave them open)."""
    nan_bits: bool = False
    """The reference's NaNs are the contract's bit for bit (a selection returns an operand
    unchanged; a unary function quiets its NaN input, keeping the payload, or changes only its
    sign bit): a NaN of another payload or sign is a failure. Elsewhere the contracts say only
    that the result is NaN, and any NaN meets any NaN."""
    zero_signs: bool = False
    """The reference's zeros are the contract's bit for bit (the ±0 tie of a selection, the
    signed zeros of a correctly rounded function: exp(-inf) = +0, sin(-0) = -0): a zero of
    the other sign is a failure."""
    formula: bool = False
    """The reference computes the operation's formula itself (IEEE + - * / rounded once, a
    selection, the remainder's definition), so a contract whose semantics come from the
    formula is held to 0 ULP from it even without a declared max_ulp (pow's correctly rounded
    reference is not the C library's formula)."""


def _unary(row: ContractOp) -> Reference:
    """A unary row's reference: its definition correctly rounded by MPFR (`exact_unary`); every
    lane left out where MPFR is not installed (`_unmeasured`)."""
    return Reference(
        f"correctly rounded {row.summary} (MPFR at {exact_unary.PRECISION} bits, rounded once); "
        f"a NaN input gives {exact_unary.NAN_RESULTS[exact_unary.nan_result(row)]}",
        partial(exact_unary.correctly_rounded, row),
        skip=None if exact_pow.available() else _unmeasured,
        nan_bits=True,
        zero_signs=True,
    )


def _relation(row: ContractOp) -> Reference:
    """A comparison row's reference: its relation (Python's operator, IEEE 754's comparison) on
    the operands' exact values, element by element."""
    assert row.relation is not None
    relation: Any = np.frompyfunc(row.relation, 2, 1)

    def fn(a: Array, b: Array) -> Array:
        with np.errstate(invalid="ignore"):  # a signalling NaN widened: still a NaN
            out: Array = np.asarray(relation(a.astype(F64), b.astype(F64)), bool)
        return out

    return Reference(
        f"{row.summary} of the exact values (Python's float comparison: IEEE 754's)",
        fn,
        formula=True,
    )


def _unmeasured(x: Array) -> Array:
    """Every lane: without MPFR a unary function has no reference here."""
    return np.ones(x.shape, bool)


_BY_KIND: Final[dict[OpKind, Reference]] = {
    OpKind.ADD: _arith(operator.add),
    OpKind.SUB: _arith(operator.sub),
    OpKind.MUL: _arith(operator.mul),
    OpKind.DIV: _arith(operator.truediv),
    OpKind.MAXIMUM: _select(np.greater_equal),
    OpKind.MINIMUM: _select(np.less_equal),
    OpKind.REM: Reference(
        "a - floor(a/b)*b, each step rounded to the working precision",
        _remainder,
        exact_f64=True,
        formula=True,
    ),
    OpKind.POW: Reference(
        "correctly rounded: the C library's pow in f64 (F64: powl in long double) rounded once "
        "where a 1024-ULP error bound proves it, MPFR elsewhere",
        _pow,
        skip=_pow_skip,
    ),
    OpKind.POWI: Reference(
        f"x**k exact (rational), rounded once; |k| <= {POWI_SWEEP}, no intermediate "
        "overflow or underflow",
        _powi,
        exact_f64=True,
        skip=_powi_outside,
    ),
    OpKind.WHERE: Reference(
        "selection: x1's bits where the condition holds, else x2's",
        _where,
        nan_bits=True,
        zero_signs=True,
        formula=True,
    ),
    OpKind.CLIP: Reference(
        "selection: minimum(maximum(x, low), high), a NaN operand unchanged (x, low, high "
        "first), the left on a ±0 tie",
        _clamp,
        nan_bits=True,
        zero_signs=True,
        formula=True,
    ),
}
"""The binary rows', the scalar forms' and the three-operand rows' references: formulas of
their own, by op kind."""

REFERENCES: Final[dict[str, Reference]] = {
    **{op.op_kind.value: _BY_KIND[op.op_kind] for op in BINARY_OPS},
    **{form.op_kind.value: _BY_KIND[form.op_kind] for form in SCALAR_FORMS},
    **{op.op_kind.value: _unary(op) for op in UNARY_OPS},
    **{op.op_kind.value: _relation(op) for op in COMPARISON_OPS},
    **{op.op_kind.value: _BY_KIND[op.op_kind] for op in TERNARY_OPS},
}
"""The judge's model of each op kind's semantics (see the module docstring)."""
