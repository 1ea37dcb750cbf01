"""The judge's model of a cast contract (CastElementwise): its reference, its probes and its
semantic cases, from the contract's own declarations (`accept.op_params.overflow`, `semantics.
nan` and `subnormals`).

The reference is exact and the judge's own, shared with no kernel (`cast_bits`): each source
pattern's value as an integer significand and exponent, rounded to nearest (ties to even) at
the target's quantum there in integers (NumPy's int64, every element at once: a significand
has at most 53 bits), overflow, NaN and subnormals as declared, and the target's bits composed
from their fields, so no conversion writes them. Probes (`probes`): every source pattern where
they are few, else the target's ties and values the source holds, one source ulp either side,
and random patterns. The exhaustive check is certify's (`certify.casts`).
"""

from __future__ import annotations

import numpy as np

from fueltensor.core.dtypes import BY_FKC
from fueltensor.families import CAST_RULES, Family
from fueltensor.fkc.schema import KernelContract
from fueltensor.fkc.semantics import Semantics
from fueltensor.ops import BY_KIND
from fueltensor.testing import FloatFormat, float_format, special_values
from fueltensor.tools.judge.references import Array, Reference

SATURATE = CAST_RULES["overflow"][1]


def is_cast(op_kind: str) -> bool:
    """Whether contracts of `op_kind` are casts (the op table's cast family)."""
    row = BY_KIND.get(op_kind)
    return row is not None and row.family is Family.CAST


def target(contract: KernelContract) -> np.dtype:
    """The dtype a cast contract returns (its `fixed(<dtype>)` rule)."""
    return BY_FKC[contract.outputs[0].dtype_rule.args[0]].np


def _nans(p: Array, s: FloatFormat, t: FloatFormat, form: str) -> Array:
    """The target NaNs (uint64 bits) of source NaN patterns `p` by the declared form, each sign
    kept: `quieted`, the payload's high bits with the quiet bit set; `kept`, those bits alone
    (the quiet bit where none is left); `canonical`, the quiet bit alone. e4m3fn's one NaN,
    whatever the form."""
    sign = np.where(p >> (s.width - 1) != 0, np.uint64(t.sign_bit), np.uint64(0))
    out: Array
    if not t.has_inf:
        out = sign | np.uint64(t.pattern(0, t.exponent_max, t.mantissa_mask))
        return out
    shift = t.mantissa - s.mantissa
    fraction = p & np.uint64(s.mantissa_mask)
    payload = fraction << np.uint64(shift) if shift >= 0 else fraction >> np.uint64(-shift)
    quiet = np.uint64(t.quiet_bit)
    made = {"quieted": payload | quiet, "kept": np.where(payload != 0, payload, quiet)}
    out = sign | np.uint64(t.pattern(0, t.exponent_max, 0)) | made.get(form, quiet)
    return out


def _nearest_even(significand: Array, exponent: Array, t: FloatFormat) -> tuple[Array, Array]:
    """significand * 2**exponent (int64, significands below 2**53) rounded to nearest, ties to
    even, at `t`'s precision with gradual underflow and no upper exponent limit, as (n, quantum
    exponent): n * 2**quantum, n at most 2**(t.mantissa + 1)."""
    length = np.frexp(significand.astype(np.float64))[1]  # the bit length: exact below 2**53
    quantum = np.maximum(exponent + length - 1, 1 - t.bias) - t.mantissa
    drop = quantum - exponent  # past 62 dropped bits every significand rounds to 0 alike
    shifted = significand << np.clip(-drop, 0, 62)
    down = np.clip(drop, 0, 62)
    n, rest = shifted >> down, shifted & ((1 << down) - 1)
    half = (1 << down) >> 1
    up = (down > 0) & ((rest > half) | ((rest == half) & (n & 1 == 1)))
    return n + up, quantum


def cast_bits(
    patterns: Array, s: FloatFormat, t: FloatFormat, saturate: bool, form: str, flush: bool
) -> Array:
    """Source bit patterns cast as declared, as `t`'s bit patterns (uint64): `saturate`
    (overflow), the NaN `form`, `flush` (subnormal inputs read as zeros, subnormal results
    written as zeros, both of their sign). Integer arithmetic on the fields throughout, every
    element at once: the target's bits are composed, so no conversion (NumPy's or ml_dtypes')
    writes them."""
    p = np.asarray(patterns).astype(np.uint64).reshape(-1)
    biased = ((p >> np.uint64(s.mantissa)) & np.uint64(s.exponent_max)).astype(np.int64)
    fraction = (p & np.uint64(s.mantissa_mask)).astype(np.int64)
    top = biased == s.exponent_max
    nan = top & ((fraction != 0) if s.has_inf else (fraction == s.mantissa_mask))
    inf = top & (fraction == 0) if s.has_inf else np.zeros_like(top)
    significand = np.where(biased > 0, fraction | (1 << s.mantissa), 0 if flush else fraction)
    exponent = np.maximum(biased, 1) - s.bias - s.mantissa
    n, quantum = _nearest_even(significand, exponent, t)
    carried = n >> (t.mantissa + 1) != 0  # rounded up to the next binade: 2**(mantissa + 1)
    n, quantum = np.where(carried, n >> 1, n), quantum + carried
    subnormal = n >> t.mantissa == 0  # at the least quantum (or zero)
    field = np.where(subnormal, 0, np.minimum(quantum + t.mantissa + t.bias, t.exponent_max + 1))
    if flush:
        n = np.where(subnormal, 0, n)
    magnitude = (field.astype(np.uint64) << np.uint64(t.mantissa)) | (
        n.astype(np.uint64) & np.uint64(t.mantissa_mask)
    )
    beyond = (
        t.max_pattern
        if saturate
        else t.pattern(0, t.exponent_max, 0 if t.has_inf else t.mantissa_mask)
    )
    magnitude = np.where(inf | (magnitude > np.uint64(t.max_pattern)), np.uint64(beyond), magnitude)
    signed = np.where(
        p >> np.uint64(s.width - 1) != 0, magnitude | np.uint64(t.sign_bit), magnitude
    )
    out: Array = np.where(nan, _nans(p, s, t, form), signed)
    return out.reshape(np.shape(patterns))


def declared_rule(contract: KernelContract) -> tuple[bool, str, bool]:
    """(saturate, NaN form, flush) as `contract` declares them: its overflow rule, the first
    NaN result form its semantics allow (quieted where none is declared), subnormals."""
    sem: Semantics | None = contract.semantics
    forms = sem.nan.result if sem is not None and sem.nan is not None else ("quieted",)
    form = next((f for f in forms if f in ("quieted", "kept", "canonical")), "quieted")
    flush = sem is not None and sem.subnormals == "flushed"
    return contract.op_params.get("overflow") == SATURATE, form, flush


def expected(x: Array, to: np.dtype, saturate: bool, form: str, flush: bool) -> Array:
    """Every element of `x` cast as declared, as an array of `to` (`cast_bits`)."""
    s, t = float_format(x.dtype), float_format(to)
    made = cast_bits(np.ascontiguousarray(x).view(s.uint), s, t, saturate, form, flush)
    out: Array = made.astype(t.uint).view(t.dtype).reshape(x.shape)
    return out


def reference(contract: KernelContract) -> Reference:
    """The precision reference of a cast contract: `expected` under its declarations; NaN bits
    held only where it declares one NaN form and the sign kept (the semantics audit checks the
    rest: `allows_nan`)."""
    saturate, form, flush = declared_rule(contract)
    to = target(contract)
    beyond = "the largest finite" if saturate else "inf (e4m3fn: NaN)"
    sem = contract.semantics
    rule = sem.nan if sem is not None else None
    exact = rule is None or (rule.result == (form,) and rule.sign == "kept")
    return Reference(
        f"exact value rounded once to nearest even (Python integers), beyond the range {beyond}, "
        f"a NaN {form if exact else 'as declared'}" + (", subnormals flushed" if flush else ""),
        lambda x: expected(x, to, saturate, form, flush),
        nan_bits=exact,  # NaN bits held where one form and the sign are declared
        zero_signs=True,
        formula=True,
    )


def _held(values: Array, s: FloatFormat) -> Array:
    """The float64 `values` the source format holds exactly, as source values."""
    with np.errstate(all="ignore"):
        there = values.astype(s.dtype)
        back = there.astype(np.float64)
    out: Array = there[(back == values) & np.isfinite(back)]
    return out


def probes(src: np.dtype, to: np.dtype, n: int, rng: np.random.Generator) -> Array:
    """The inputs a cast is measured on: the source's special values; every source pattern
    where there are at most 8n (an 8-bit source; a 16-bit one in a full audit); else the
    target's ties and values the source holds, with one source ulp either side (at most 4n
    ties and 8n others), and n random patterns; both signs."""
    s, t = float_format(src), float_format(to)
    head = special_values(s.dtype).array
    if 1 << s.width <= 8 * n:
        every = np.arange(1 << s.width, dtype=s.uint).view(s.dtype)
        return np.concatenate([head, every])
    finite = np.arange(t.max_pattern + 1, dtype=np.uint64) if t.width <= 16 else None
    if finite is None:  # a float32 target: a sample of its values
        finite = rng.integers(0, t.max_pattern + 1, 4096, dtype=np.uint64)
    with np.errstate(all="ignore"):
        values = np.unique(finite.astype(t.uint).view(t.dtype).astype(np.float64))
        ties, points = _held((values[:-1] + values[1:]) / 2, s), _held(values, s)
        points = np.concatenate([points, ties])
        up, down = np.nextafter(points, s.dtype.type(np.inf)), np.nextafter(points, s.dtype.type(0))
    near = np.concatenate([points, up, down])
    ties = ties if ties.size <= 4 * n else rng.choice(ties, 4 * n, replace=False)
    near = near if near.size <= 8 * n else rng.choice(near, 8 * n, replace=False)
    boundaries = np.concatenate([ties, near])  # ties: where a rounding rule shows
    noise = rng.integers(0, 1 << s.width, n, dtype=s.uint, endpoint=False).view(s.dtype)
    return np.concatenate([head, boundaries, -boundaries, noise])


def subnormal_case(x: int, s: FloatFormat, t: FloatFormat, declared: str) -> int:
    """The target bits of the source pattern `x` under `subnormals: declared` (kept or flushed)
    and the default overflow: a cast's subnormal case (`judge.semantics`)."""
    return int(
        cast_bits(np.array([x], np.uint64), s, t, False, "quieted", declared == "flushed")[0]
    )


def allows_nan(
    forms: tuple[str, ...], sign: str, case_x: int, s: FloatFormat, t: FloatFormat, got: int
) -> bool:
    """Whether `got` is a NaN of a declared form (`nan.result`) made from the source NaN
    `case_x`, its sign kept (or either, for `sign: any`)."""
    forms_made = [f for f in forms if f in ("quieted", "kept", "canonical")]
    made = {int(_nans(np.array([case_x], np.uint64), s, t, f)[0]) for f in forms_made}
    if sign == "any":
        made |= {m ^ t.sign_bit for m in made}
    return got in made or ("any" in forms and t.is_nan(got))


def cases(s: FloatFormat, t: FloatFormat) -> list[tuple[str, str, int]]:
    """(aspect, rule, source bits) of a cast's semantic cases: every NaN of the source's special
    values (`nan`); a subnormal source both ways, and the target's smallest and largest
    subnormals where the source holds them (`subnormals`)."""
    found = [
        ("nan", "a NaN operand" if "quiet" in v.class_ else "a signaling NaN operand", v.bits)
        for v in special_values(s.dtype)
        if "NaN" in v.class_
    ]
    found += [("subnormals", "subnormal operand", p) for p in (1, s.sign_bit | s.mantissa_mask)]
    for p in (1, t.mantissa_mask):
        value = float(np.float64(t.scalar(p)))
        held = np.array([value], np.float64).astype(s.dtype)
        if float(held[0]) == value and not s.is_nan(int(held.view(s.uint)[0])):
            found.append(("subnormals", "subnormal result", int(held.view(s.uint)[0])))
    return found
