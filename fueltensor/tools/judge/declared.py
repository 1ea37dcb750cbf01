"""The judge's precision references as a contract declares them: the op kind's reference
(`judge.references`) with the declared ±0 tie and NaN rule of a selection, the declared
remainder definition (`fmod` or the seeds' floor formula) and subnormals flushed where the
`semantics` section says so. `judge.audit` measures precision against `reference_for`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from fueltensor.families import Family
from fueltensor.fkc.schema import KernelContract
from fueltensor.fkc.semantics import Semantics
from fueltensor.ops import BY_KIND, OpKind
from fueltensor.testing import float_format
from fueltensor.tools import exact_unary
from fueltensor.tools.exact_unary import default_nan
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.cases import fixed_nan
from fueltensor.tools.judge.references import (
    F64,
    REFERENCES,
    Array,
    Reference,
    round_to,
)
from fueltensor.tools.judge.references import (
    _remainder as _floor_formula,
)


def _fmod_remainder(a: Array, b: Array) -> Array:
    """fmod(a, b) (exact), plus b when it is not zero and its sign is not b's, rounded once."""
    wide = np.longdouble if a.dtype == F64 else np.float64
    with np.errstate(all="ignore"):
        wa, wb = a.astype(wide), b.astype(wide)
        m = np.fmod(wa, wb)
        adjust = (m != 0) & (np.signbit(m) != np.signbit(wb))
        return round_to(np.where(adjust, m + wb, m), a.dtype)


def remainder_reference(definition: str) -> Callable[[Array, Array], Array]:
    """The reference of a remainder definition (`floor_formula` or `fmod`)."""
    return _fmod_remainder if definition == "fmod" else _floor_formula


def _flushing(fn: Callable[..., Array], exact: Callable[..., Array] | None) -> Callable[..., Array]:
    """`fn` with subnormal operands read as zeros of their sign, and results flushed to zeros
    of their sign where they are subnormal, or where the exact result (`exact` in a wider
    type) is below the normal range though it rounds up to it: the x86 flush, which judges
    tininess before rounding."""

    def flush(x: Array) -> Array:
        f = float_format(x.dtype)
        u = x.view(f.uint)
        tiny = (u & ~np.array(f.sign_bit, f.uint)) < (1 << f.mantissa)
        out: Array = np.where(tiny, u & np.array(f.sign_bit, f.uint), u).view(x.dtype)
        return out

    def ref(*args: Array) -> Array:
        operands = [flush(a) if isinstance(a, np.ndarray) else a for a in args]
        got = fn(*operands)
        if got.dtype == np.bool_:  # a comparison of the flushed operands: nothing to flush
            return got
        got = flush(got)
        if exact is None:
            return got
        f = float_format(got.dtype)
        wide = np.longdouble if got.dtype == F64 else np.float64
        normal = np.ldexp(wide(1), 1 - f.bias)
        with np.errstate(all="ignore"):
            value = exact(*(a.astype(wide) for a in operands))
            below = np.isfinite(value) & (np.abs(value) < normal)
        zero = np.where(np.signbit(value), got.dtype.type(-0.0), got.dtype.type(0.0))
        return np.where(below, zero.astype(got.dtype), got)

    return ref


def _tie_broken(fn: Callable[..., Array], tie: str, minimum: bool) -> Callable[..., Array]:
    """A selection reference `fn` with its ±0 ties broken as declared (rhs, or -0 below +0)."""

    def ref(a: Array, b: Array) -> Array:
        got = fn(a, b)
        with np.errstate(all="ignore"):
            tied = (a.astype(F64) == 0) & (b.astype(F64) == 0)
        if tie == "rhs":
            return np.where(tied, b, got)
        ordered = np.where(np.signbit(a) == minimum, a, b)  # minimum: the -0; maximum: the +0
        return np.where(tied, ordered, got)

    return ref


def _selection(ref: Reference, sem: Semantics, minimum: bool) -> Reference:
    """A maximum / minimum (`minimum`) reference as declared: the ±0 tie, and NaN bits held
    only where the section declares the reference's own rule (the lhs NaN first, unchanged)."""
    own = sem.nan is not None and (sem.nan.operand, sem.nan.result, sem.nan.sign) == (
        "lhs",
        ("kept",),
        "kept",
    )
    if sem.zero_tie in ("rhs", "ordered"):
        fn = _tie_broken(ref.fn, sem.zero_tie, minimum)
        ref = replace(ref, describe=f"{ref.describe}; {sem.zero_tie} on a ±0 tie", fn=fn)
    return replace(ref, nan_bits=ref.nan_bits and own, zero_signs=ref.zero_signs and own)


def _clamp(ref: Reference, sem: Semantics) -> Reference:
    """clip's reference as declared: the declared maximum of x and low, then the declared
    minimum of that and high (the section's NaN rule and ±0 tie at both steps)."""
    larger = _selection(REFERENCES[OpKind.MAXIMUM], sem, False)
    smaller = _selection(REFERENCES[OpKind.MINIMUM], sem, True)

    def fn(x: Array, low: Array, high: Array) -> Array:
        return smaller.fn(larger.fn(x, low), high)

    tie = f"; {sem.zero_tie} on a ±0 tie" if sem.zero_tie in ("rhs", "ordered") else ""
    return replace(
        ref,
        describe=f"{ref.describe}{tie}",
        fn=fn,
        nan_bits=larger.nan_bits,
        zero_signs=larger.zero_signs,
    )


def _unary_nan(ref: Reference, contract: KernelContract, sem: Semantics) -> Reference:
    """A unary function's reference with its NaN bits held only where the section declares the
    reference's own rule (a NaN input quieted, its sign kept; an invalid operation's NaN this
    machine's default), or none; a sign-bit operation's (`|x|`, `-x`) always: IEEE 754 fixes
    it."""
    rule, row = sem.nan, BY_KIND[contract.op_kind]
    if rule is None or exact_unary.nan_result(row) in exact_unary.SIGN_BIT_RESULTS:
        return ref
    own = rule.result == ("quieted",) and rule.sign == "kept"
    if rule.invalid is not None:
        f = float_format(F64)  # the forms are the same in every format; read F64's
        made = default_nan(F64)
        own &= any(fixed_nan(form, f) == made for form in rule.invalid)
    return replace(ref, nan_bits=own)


def reference_for(contract: KernelContract) -> Reference | None:
    """The judge's precision reference for `contract`: its op kind's, with the declared ±0 tie
    and NaN rule of a selection or a unary function, remainder definition and subnormal
    flushing."""
    if casts.is_cast(contract.op_kind):  # declared overflow, NaN and subnormals built in
        return casts.reference(contract)
    ref = REFERENCES.get(contract.op_kind)
    sem = contract.semantics
    if ref is None or sem is None:
        return ref
    row = BY_KIND.get(contract.op_kind)
    if row is not None and row.family is Family.UNARY:
        ref = _unary_nan(ref, contract, sem)
    elif ref.nan_bits and row is not None and row.family is Family.BINARY:
        ref = _selection(ref, sem, contract.op_kind == OpKind.MINIMUM)
    elif row is not None and row.family is Family.CLAMP:
        ref = _clamp(ref, sem)  # where: the formula's bits, always
    if sem.remainder is not None and sem.remainder.definition == "fmod":
        ref = replace(
            ref, describe="fmod(a, b), + b where the signs differ, rounded once", fn=_fmod_remainder
        )
    if sem.subnormals == "flushed":
        row = BY_KIND.get(contract.op_kind)
        exact = row.host if row is not None and not contract.params else None
        flushed = _flushing(ref.fn, exact)
        ref = replace(ref, describe=f"{ref.describe}; subnormals flushed", fn=flushed)
    return ref
