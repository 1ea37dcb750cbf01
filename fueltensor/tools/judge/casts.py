"""The judge's model of a cast contract (CastElementwise): its reference, its probes and its
semantic cases, from the contract's own declarations (`accept.op_params.overflow`, `semantics.
nan` and `subnormals`).

The reference is exact and the judge's own, shared with no kernel: each source pattern's value
as an integer significand and exponent, rounded to nearest (ties to even) at the target's
quantum there in Python integers, element by element; overflow, NaN and subnormals as
declared. The rounded value is then held exactly by the target, so any conversion writes its
bits. Probes (`probes`): every source pattern where they are few, else the target's ties and
values the source holds, one source ulp either side, and random patterns. The exhaustive check
is certify's (`certify.casts`).
"""

from __future__ import annotations

import math
from functools import cache, lru_cache

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


def _value(f: FloatFormat, pattern: int) -> tuple[int, int] | float | None:
    """A pattern's exact magnitude as (significand, exponent): significand * 2**exponent;
    inf as a float; None for a NaN."""
    _, exponent, fraction = f.fields(pattern)
    if f.is_nan(pattern):
        return None
    if f.has_inf and exponent == f.exponent_max:
        return math.inf
    significand = fraction if exponent == 0 else fraction | (1 << f.mantissa)
    return significand, max(exponent, 1) - f.bias - f.mantissa


def _nearest_even(significand: int, exponent: int, t: FloatFormat) -> tuple[int, int]:
    """significand * 2**exponent (> 0) rounded to nearest, ties to even, at `t`'s precision
    with gradual underflow and no upper exponent limit, as (n, quantum exponent)."""
    top = exponent + significand.bit_length() - 1  # the value lies in [2**top, 2**(top + 1))
    quantum = max(top, 1 - t.bias) - t.mantissa
    drop = quantum - exponent
    if drop <= 0:
        return significand << -drop, quantum
    n, rest, half = significand >> drop, significand & ((1 << drop) - 1), 1 << (drop - 1)
    return n + (rest > half or (rest == half and n & 1)), quantum


@cache
def _max_finite(t: FloatFormat) -> float:
    return float(np.float64(t.scalar(t.max_pattern)))


def _nan(pattern: int, s: FloatFormat, t: FloatFormat, form: str) -> int:
    """The target NaN of a source NaN by the declared form, its sign kept: `quieted`, the
    payload's high bits with the quiet bit set; `kept`, those bits alone (the quiet bit where
    none is left); `canonical`, the quiet bit alone. e4m3fn's one NaN, whatever the form."""
    sign = t.sign_bit if pattern & s.sign_bit else 0
    if not t.has_inf:
        return sign | t.pattern(0, t.exponent_max, t.mantissa_mask)
    shift = t.mantissa - s.mantissa
    fraction = pattern & s.mantissa_mask
    payload = fraction << shift if shift >= 0 else fraction >> -shift
    made = {"quieted": payload | t.quiet_bit, "kept": payload or t.quiet_bit}
    return sign | t.pattern(0, t.exponent_max, made.get(form, t.quiet_bit))


@lru_cache(maxsize=1 << 20)
def cast_pattern(
    pattern: int, s: FloatFormat, t: FloatFormat, saturate: bool, form: str, flush: bool
) -> int | float:
    """One source pattern cast as declared: `saturate` (overflow), the NaN `form`, `flush`
    (subnormal inputs read as zeros, subnormal results written as zeros, both of their sign).
    A pattern of `t`, or a float `t` holds exactly (signed: -0.0 for a negative zero), whose
    bits any conversion writes (`expected` converts them all at once). Cached: every contract of
    a pair sees the same probes, rolled for the fresh-values pass."""
    value = _value(s, pattern)
    negative = bool(pattern & s.sign_bit)
    if value is None:
        return _nan(pattern, s, t, form)
    if flush and pattern & ~s.sign_bit < (1 << s.mantissa):
        value = (0, 0)
    rounded = math.inf
    if isinstance(value, tuple) and value[0]:
        n, quantum = _nearest_even(*value, t)
        if n.bit_length() + quantum <= 1024:  # else beyond every format's range: inf
            rounded = math.ldexp(n, quantum)  # exact: at most 54 bits
    elif isinstance(value, tuple):
        rounded = 0.0
    if rounded > _max_finite(t):
        sign = t.sign_bit if negative else 0
        if saturate:
            return t.max_pattern | sign
        return t.pattern(0, t.exponent_max, 0 if t.has_inf else t.mantissa_mask) | sign
    if flush and 0 < rounded < math.ldexp(1, 1 - t.bias):
        rounded = 0.0
    return -rounded if negative else rounded


def declared_rule(contract: KernelContract) -> tuple[bool, str, bool]:
    """(saturate, NaN form, flush) as `contract` declares them: its overflow rule, the first
    NaN result form its semantics allow (quieted where none is declared), subnormals."""
    sem: Semantics | None = contract.semantics
    forms = sem.nan.result if sem is not None and sem.nan is not None else ("quieted",)
    form = next((f for f in forms if f in ("quieted", "kept", "canonical")), "quieted")
    flush = sem is not None and sem.subnormals == "flushed"
    return contract.op_params.get("overflow") == SATURATE, form, flush


def expected(x: Array, to: np.dtype, saturate: bool, form: str, flush: bool) -> Array:
    """Every element of `x` cast as declared, as an array of `to`."""
    s, t = float_format(x.dtype), float_format(to)
    patterns, where = np.unique(
        np.ascontiguousarray(x).reshape(-1).view(s.uint), return_inverse=True
    )
    made = [cast_pattern(p, s, t, saturate, form, flush) for p in patterns.tolist()]
    exact = [isinstance(m, float) for m in made]
    numbers = np.array([m if e else 0.0 for m, e in zip(made, exact, strict=True)], np.float64)
    held = numbers.astype(t.dtype).view(t.uint)  # exact: `t` holds every one of them
    bits = np.array([0 if e else m for m, e in zip(made, exact, strict=True)], t.uint)
    return np.where(exact, held, bits)[where].view(t.dtype).reshape(x.shape)


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


def bits_of(made: int | float, t: FloatFormat) -> int:
    """`cast_pattern`'s result as `t`'s bits."""
    if isinstance(made, float):
        return int(np.array([made], np.float64).astype(t.dtype).view(t.uint)[0])
    return made


def pattern_of(made: int | float, t: FloatFormat) -> int:
    """`cast_pattern`'s result as `t`'s bits, from its fields in Python integers: no conversion
    (NumPy's or ml_dtypes') writes them, so a certifier's reference holding a kernel to this
    rule shares none of their code. A float result is one `t` holds exactly."""
    if not isinstance(made, float):
        return made
    sign = t.sign_bit if math.copysign(1.0, made) < 0 else 0
    magnitude = abs(made)
    if magnitude == 0:
        return sign
    fraction, e = math.frexp(magnitude)  # magnitude = fraction * 2**e, 0.5 <= fraction < 1
    if e - 1 + t.bias <= 0:  # a subnormal: a count of the quantum 2**(1 - bias - mantissa)
        return sign | int(math.ldexp(magnitude, t.bias - 1 + t.mantissa))
    significand = int(math.ldexp(fraction, t.mantissa + 1))
    return sign | t.pattern(0, e - 1 + t.bias, significand & t.mantissa_mask)


def subnormal_case(x: int, s: FloatFormat, t: FloatFormat, declared: str) -> int:
    """The target bits of the source pattern `x` under `subnormals: declared` (kept or flushed)
    and the default overflow: a cast's subnormal case (`judge.semantics`)."""
    return bits_of(cast_pattern(x, s, t, False, "quieted", declared == "flushed"), t)


def allows_nan(
    forms: tuple[str, ...], sign: str, case_x: int, s: FloatFormat, t: FloatFormat, got: int
) -> bool:
    """Whether `got` is a NaN of a declared form (`nan.result`) made from the source NaN
    `case_x`, its sign kept (or either, for `sign: any`)."""
    made = {_nan(case_x, s, t, form) for form in forms if form in ("quieted", "kept", "canonical")}
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
