"""The judge's audit of a contract's `semantics` section, and what a declaration means in bits.

`allows(semantics, case, pattern)` says whether a result pattern of a case is what the section
declares (None when it declares nothing about the case). `observe` runs the cases (`judge.cases`)
and random probes through the position sweep (`judge.positions`); `findings` names every rule
an observed result breaks, with the case, its operands' and result's bits and where in the sweep
it came; `infer` gives the strictest section the observations support; `reference_for` is the
precision reference that follows the declared remainder definition and subnormal handling.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Final, cast

import numpy as np

from fueltensor.core.storage import aligned_empty
from fueltensor.families import Family
from fueltensor.fkc.schema import KernelContract, MeasuredOn
from fueltensor.fkc.semantics import (
    NAN_FROM_OPERAND,
    NAN_PATTERNS,
    NAN_RESULTS,
    RULES,
    SECTION,
    NanRule,
    PowRule,
    RemainderRule,
    Semantics,
)
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.ops import BY_KIND, OpKind
from fueltensor.registry import provider_environment
from fueltensor.testing import FloatFormat
from fueltensor.tools import checked, exact_unary
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.calls import as_operands, result_dtype
from fueltensor.tools.judge.cases import (
    Case,
    cases,
    expected,
    fixed_nan,
    infinity,
    is_nan,
    is_subnormal,
    number,
    shown,
    value,
)
from fueltensor.tools.judge.declared import remainder_reference
from fueltensor.tools.judge.positions import POWI_EXPONENT, Sweep, random_probes, sweep
from fueltensor.tools.judge.references import (
    F64,
    REFERENCES,
    round_to,
)

# -- what a declaration allows --------------------------------------------------------------


def _from_operand(form: str, source: int, f: FloatFormat) -> int | None:
    """The NaN a form makes from the propagated NaN `source` (None for a fixed pattern)."""
    if form == "kept":
        return source
    if form == "quieted":
        return source | f.quiet_bit
    if form == "canonical":
        return (source & f.sign_bit) | infinity(f) | f.quiet_bit
    return None


def _nan(rule: NanRule, case: Case, pattern: int) -> bool:
    """A NaN case's result against the declared rule: a NaN of a declared form, made from a
    NaN operand the rule lets win (its sign ignored under `sign: any`); a cast's, the source
    NaN made a NaN of the target by a declared form (`judge.casts`)."""
    f = case.format
    if case.to is not None:
        return casts.allows_nan(rule.result, rule.sign, case.lhs, f, case.result_format, pattern)
    if not is_nan(f, pattern):
        return False
    nans = [x for _, x in case.sides() if is_nan(f, x)]  # in order: clip's x, low, high
    if len(nans) > 1 and rule.operand != "either":
        nans = [nans[0] if rule.operand == "lhs" else nans[-1]]
    sign = f.sign_bit if rule.sign == "any" else 0
    for form in rule.result:
        if form == "any" or fixed_nan(form, f) == pattern:
            return True
        made = (_from_operand(form, x, f) for x in nans)
        if any(m is not None and m | sign == pattern | sign for m in made):
            return True
    return False


def _invalid(rule: NanRule, case: Case, pattern: int) -> bool | None:
    f = case.format
    if rule.invalid is None:
        return None
    return is_nan(f, pattern) and any(
        form == "any" or fixed_nan(form, f) == pattern for form in rule.invalid
    )


def _tie_step(declared: str, a: int, b: int, f: FloatFormat, larger: bool) -> tuple[int, ...]:
    """maximum (`larger`) or minimum of the patterns a and b (numbers) under the declared tie:
    the operands each may return."""
    x, y = number(f, a), number(f, b)
    if x != y:
        return (a if (x > y) == larger else b,)
    if declared == "ordered":
        return (0 if larger else f.sign_bit,) if x == 0 else (a,)
    return {"lhs": (a,), "rhs": (b,), "either": (a, b)}[declared]


def _zero_tie(declared: str, case: Case, pattern: int) -> bool:
    if case.arity == 3:  # clip: the tie rule at maximum(x, low), then at minimum(that, high)
        f = case.format
        first = _tie_step(declared, case.lhs, case.rhs, f, True)
        return any(pattern in _tie_step(declared, m, case.third, f, False) for m in first)
    if declared == "ordered":
        minimum = case.op_kind == OpKind.MINIMUM
        return pattern == (case.format.sign_bit if minimum else 0)
    allowed = {"lhs": (case.lhs,), "rhs": (case.rhs,), "either": (case.lhs, case.rhs)}
    return pattern in allowed[declared]


def _remainder_rule(rule: RemainderRule, case: Case, pattern: int) -> bool | None:
    declared = getattr(rule, case.rule)
    if declared is None:
        return None
    f = case.format
    a, b = number(f, case.lhs), number(f, case.rhs)
    if case.rule == "zero_sign":
        sign = {"positive": 0.0, "divisor": b, "dividend": a}[declared]
        return pattern == (f.sign_bit if np.signbit(sign) else 0)
    if case.rule == "infinite_divisor":
        if declared == "nan":
            return is_nan(f, pattern)
        same = a == 0 or np.signbit(a) == np.signbit(b)
        return pattern == (case.lhs if same else case.rhs)
    lhs, rhs = (np.array([x], f.uint).view(f.dtype) for x in (case.lhs, case.rhs))
    return pattern == int(remainder_reference(declared)(lhs, rhs).view(f.uint)[0])


def _pow(rule: PowRule, case: Case, pattern: int) -> bool | None:
    f = case.format
    declared = getattr(rule, case.rule)
    if declared is None:
        return None
    if declared == "nan":
        return is_nan(f, pattern)
    if declared == "one":
        return pattern == value(f, 1.0)
    if declared == "positive_infinity":
        return pattern == infinity(f)
    y = number(f, case.rhs)
    odd = y.is_integer() and int(y) % 2 == 1
    return pattern == infinity(f) | (case.lhs & f.sign_bit if odd else 0)


def _exact(case: Case) -> int:
    """The case's operation in f64 (exact for the binary subnormal cases), rounded to the
    dtype; a unary function's correctly rounded (`exact_unary`)."""
    f, row = case.format, BY_KIND[case.op_kind]
    if row.relation is not None:  # a comparison: its relation on the exact values, a bool
        return int(row.relation(number(f, case.lhs), number(f, case.rhs)))
    if row.family is Family.UNARY:
        x = np.array([case.lhs], f.uint).view(f.dtype)
        return int(exact_unary.correctly_rounded(row, x).view(f.uint)[0])
    if case.arity == 3:  # where, clip: the judge's reference, a selection
        columns = [np.array([x], f.uint).view(f.dtype) for x in (case.lhs, case.rhs, case.third)]
        operands = as_operands(case.op_kind, columns, f.dtype)
        return int(REFERENCES[case.op_kind].fn(*operands).view(f.uint)[0])
    with np.errstate(all="ignore"):
        wide = row.host(number(f, case.lhs), number(f, case.rhs))
    return int(round_to(np.array([wide], F64), f.dtype).view(f.uint)[0])


def _subnormals(declared: str, case: Case, pattern: int) -> bool:
    """Kept: the exact (correctly rounded) result. Flushed: a binary case's result is a zero;
    a unary function's is its correctly rounded value at the input read as a zero of its sign
    (log of a flushed subnormal is -inf, exp of one is 1), a subnormal result flushed too. A
    cast's: its exact value rounded once to the target, read and written flushed or kept."""
    if case.to is not None:
        return pattern == casts.subnormal_case(case.lhs, case.format, case.result_format, declared)
    if declared != "flushed":
        return pattern == _exact(case)
    f = case.format
    if BY_KIND[case.op_kind].relation is not None:  # a comparison of the flushed operands
        zeros = (x & f.sign_bit if is_subnormal(f, x) else x for x in (case.lhs, case.rhs))
        return pattern == _exact(replace(case, lhs=next(zeros), rhs=next(zeros)))
    if case.arity == 3:  # a selection of the flushed operands, its result flushed
        flush = [
            x & f.sign_bit if is_subnormal(f, x) else x for x in (case.lhs, case.rhs, case.third)
        ]
        want = _exact(replace(case, lhs=flush[0], rhs=flush[1], third=flush[2]))
        return pattern == (want & f.sign_bit if is_subnormal(f, want) else want)
    if case.arity == 2:
        return pattern & ~f.sign_bit == 0
    zero = case.lhs & f.sign_bit if is_subnormal(f, case.lhs) else case.lhs
    want = _exact(replace(case, lhs=zero))
    return pattern == (want & f.sign_bit if is_subnormal(f, want) else want)


def _special(_: object, case: Case, pattern: int) -> bool:
    """A unary function's special case: the table's result (`ops.Special`), bit for bit."""
    result = case.rule.split(" -> ")[1]
    return pattern == expected(case.format, result, case.lhs)


def _relation(_: object, case: Case, pattern: int) -> bool:
    """A comparison's case: the op table's relation on the exact values (1 true, 0 false); a
    where's or clip's: the operand the formula picks, bit for bit."""
    return pattern == _exact(case)


_CHECKS: Final[dict[str, tuple[str, Callable[[Any, Case, int], bool | None]]]] = {
    "special": ("", _special),
    "relation": ("", _relation),
    "select": ("", _relation),
    "nan": ("nan", _nan),
    "invalid": ("nan", _invalid),
    "zero_tie": ("zero_tie", _zero_tie),
    SECTION[RemainderRule]: (SECTION[RemainderRule], _remainder_rule),
    SECTION[PowRule]: (SECTION[PowRule], _pow),
    "subnormals": ("subnormals", _subnormals),
}
"""Case aspect -> the section's attribute that rules it ("": the op table rules it, whatever
the section declares), and the check of a result pattern."""


def allows(semantics: Semantics, case: Case, pattern: int) -> bool | None:
    """Whether `pattern`, a result of `case`, is what `semantics` declares (a unary special
    case: what the op table fixes); None when the section declares nothing about the case's
    aspect."""
    entry = _CHECKS.get(case.aspect)
    if entry is None:
        return None
    declared = getattr(semantics, entry[0]) if entry[0] else "table"
    return None if declared is None else entry[1](declared, case, pattern)


# -- observing a kernel ---------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """The probes of one contract at one dtype (its cases, then random operands) and every
    result pattern the position sweep saw for each."""

    probes: tuple[Case, ...]
    sweep: Sweep

    def seen(self) -> Iterator[tuple[Case, int, str]]:
        """(probe, result pattern, where it was first seen) for every distinct result."""
        for probe, found in zip(self.probes, self.sweep.seen, strict=True):
            for pattern, where in found.items():
                yield probe, pattern, str(where)


def observe(
    contract: KernelContract, fn: KernelFn, dtype: np.dtype, depth: str = "full", seed: int = 0
) -> Observed:
    """Run `contract`'s kernel over its cases and random probes through a position sweep of
    `depth` (`positions.DEPTHS`). A compiled kernel runs checked, in a worker process, as the
    rest of the audit runs it (its faults raise KernelFault): the lengths are swept, and the
    worker places the operands (against a guard page), not the sweep's byte offsets."""
    dtype = np.dtype(dtype)
    to = casts.target(contract) if casts.is_cast(contract.op_kind) else None
    probes = (*cases(contract.op_kind, dtype, to), *random_probes(contract, dtype, seed))
    arity = len(contract.inputs)
    params = (POWI_EXPONENT,) * len(contract.params)
    alignment, result = contract.caps.alignment_bytes, result_dtype(contract, dtype)

    def call(operands: tuple[np.ndarray, ...]) -> np.ndarray:
        operands = as_operands(contract.op_kind, operands, dtype)  # a where's condition: bools
        if checked.applies(fn):
            kernel = cast(CompiledKernel, fn)
            return checked.call(kernel, contract, operands, operands[0].shape, result)
        out = aligned_empty(operands[0].size, result, alignment)
        got = fn(*operands, *params, out=out)  # type: ignore[func-returns-value]
        return got if isinstance(got, np.ndarray) else out

    table = [(p.lhs, p.rhs, p.third)[:arity] for p in probes]
    return Observed(probes, sweep(call, dtype, table, depth))


# -- what a declaration is broken by, and what the observations support ----------------------


def declared(semantics: Semantics, aspect: str) -> str:
    """How the section words the rule of a case aspect, for a finding."""
    if aspect == "special":
        return "the op table's special case (C99 Annex F, IEEE 754)"
    if aspect == "relation":
        return "the op table's relation of the exact values (IEEE 754's comparison)"
    if aspect == "select":
        return "the formula's operand, bit for bit (where's and clip's rows)"
    if aspect in ("nan", "invalid") and semantics.nan is not None:
        n = semantics.nan
        if aspect == "invalid":
            return f"nan.invalid [{', '.join(n.invalid or ())}]"
        return f"nan operand {n.operand}, result [{', '.join(n.result)}], sign {n.sign}"
    value = getattr(semantics, _CHECKS[aspect][0])
    if isinstance(value, (RemainderRule, PowRule)):
        return f"{aspect} { ({k: v for k, v in vars(value).items() if v is not None}) }"
    return f"{aspect} {value}"


def _position(semantics: Semantics, observed: Observed) -> list[str]:
    """Findings against the declared `position`: a probe that gave more than one result where
    the section says it may not (`nan_bits`: only NaN results may differ)."""
    position = semantics.effective_position
    if position in (None, "dependent"):
        return []
    found = []
    for probe, results in zip(observed.probes, observed.sweep.seen, strict=True):
        patterns = list(results)
        if len(patterns) < 2:
            continue
        f = probe.result_format
        if position == "nan_bits" and all(is_nan(f, p) for p in patterns):
            continue
        seen = "; ".join(f"{shown(probe, p)} at {results[p]}" for p in patterns[:3])
        found.append(
            f"position declared {position}, but {probe.label} ({probe.operands()}) gave {seen}"
        )
    return found


def findings(semantics: Semantics, observed: Observed) -> list[str]:
    """Every declared rule an observed result breaks: the case, its operands' bits, the
    result's bits and where it was seen (one finding per case and rule)."""
    found: list[str] = []
    reported: set[tuple[str, str]] = set()
    for probe, pattern, where in observed.seen():
        key = (probe.label, probe.aspect)
        if allows(semantics, probe, pattern) is not False or key in reported:
            continue
        reported.add(key)
        found.append(
            f"{declared(semantics, probe.aspect)}, but {probe.label} ({probe.operands()}) gave "
            f"{shown(probe, pattern)} at {where}"
        )
    aspects = {p.aspect for p in observed.probes} | {"position", "invariance"}
    for name in semantics.declared():
        if name not in aspects and not (name == "nan" and "invalid" in aspects):
            found.append(f"{name} is declared, but {observed.probes[0].op_kind} has no case of it")
    return found + _position(semantics, observed)


def _fits(semantics: Semantics, observed: Observed, aspects: tuple[str, ...]) -> bool:
    """Whether every observed result of the given case aspects is what `semantics` allows."""
    return all(
        allows(semantics, p, pattern) is not False
        for p, pattern, _ in observed.seen()
        if p.aspect in aspects
    )


def _first(
    options: Iterator[Semantics], observed: Observed, aspects: tuple[str, ...]
) -> Semantics | None:
    """The first of `options` every observed result of `aspects` fits."""
    return next((s for s in options if _fits(s, observed, aspects)), None)


def _nan_rules(base: Semantics) -> Iterator[Semantics]:
    """`base` with every NaN rule, strictest first: fewest result forms (`any` last), then
    the sign kept, then a named operand. A rule of fixed patterns alone names no operand and
    no sign (neither says anything there)."""
    named = [r for r in NAN_RESULTS if r != "any"]
    for size in range(1, 4):
        for sign, result in itertools.product(("kept", "any"), itertools.combinations(named, size)):
            if not set(result) & set(NAN_FROM_OPERAND):
                if sign == "kept":
                    yield replace(base, nan=NanRule("either", result, "any"))
                continue
            for operand in ("lhs", "rhs", "either"):
                yield replace(base, nan=NanRule(operand, result, sign))
    yield replace(base, nan=NanRule("either", ("any",), "any"))


def _invalid_rules(base: Semantics) -> Iterator[Semantics]:
    """`base` with every set of invalid-operation NaN patterns, fewest first (`any` last)."""
    assert base.nan is not None
    named = [p for p in NAN_PATTERNS if p != "any"]
    sets = [c for n in range(1, len(named) + 1) for c in itertools.combinations(named, n)]
    for invalid in [*sets, ("any",)]:
        yield replace(base, nan=replace(base.nan, invalid=invalid))


def _keywise(
    sem: Semantics, observed: Observed, attr: str, cls: type, choices: dict[str, tuple[str, ...]]
) -> Semantics:
    """`sem` with the aspect `attr` declared key by key: each key the first of its values
    that every observed result of its cases fits (a key none fits stays undeclared)."""
    found: dict[str, str] = {}
    for key, values in choices.items():
        cases = [(p, r) for p, r, _ in observed.seen() if p.aspect == attr and p.rule == key]
        fitting = (
            v
            for v in values
            if all(allows(_with(sem, attr, cls(**{key: v})), p, r) is not False for p, r in cases)
        )
        value = next(fitting, None) if cases else None
        if value is not None:
            found[key] = value
    return _with(sem, attr, cls(**found)) if found else sem


def _with(base: Semantics, attr: str, value: object) -> Semantics:
    """`base` with one aspect set."""
    return replace(base, **{attr: value})  # type: ignore[arg-type]


def infer(observed: Observed) -> Semantics:
    """The strictest `semantics` section every observation fits: what was measured, for an
    author to declare (an aspect no value of the vocabulary fits is left undeclared)."""
    sem = Semantics(source=("measurement",))
    aspects = {p.aspect for p in observed.probes}
    if aspects & {"nan", "invalid"}:
        sem = _first(_nan_rules(sem), observed, ("nan",)) or sem
        if sem.nan is not None and "invalid" in aspects:
            sem = _first(_invalid_rules(sem), observed, ("invalid",)) or sem
    singles = {"zero_tie": ("lhs", "rhs", "ordered", "either"), "subnormals": ("kept", "flushed")}
    for attr, values in singles.items():
        if attr in aspects:
            options = (_with(sem, attr, v) for v in values)
            sem = _first(options, observed, (attr,)) or sem
    for attr, (cls, _, choices) in RULES.items():
        if attr in aspects:
            sem = _keywise(sem, observed, attr, cls, choices)
    return replace(sem, position=_measured_position(observed))


def _measured_position(observed: Observed) -> str:
    """`invariant` when no probe gave two results, `nan_bits` when only NaN results varied."""
    varied = [
        (p, list(r))
        for p, r in zip(observed.probes, observed.sweep.seen, strict=True)
        if len(r) > 1
    ]
    if not varied:
        return "invariant"
    if all(all(is_nan(p.format, x) for x in patterns) for p, patterns in varied):
        return "nan_bits"
    return "dependent"


# -- the audit ------------------------------------------------------------------------------


@cache
def _environment(provider: str) -> MeasuredOn | None:
    """What `provider` runs with here (framework version, instruction set), asked once."""
    return provider_environment(provider)


def audit_semantics(
    contract: KernelContract,
    fn: KernelFn,
    dtype: np.dtype,
    quick: bool = False,
    failures: Sequence[str] = (),
) -> tuple[list[str], list[str]]:
    """The judge's audit's `failures` plus every rule of `contract`'s declared semantics an
    observed result breaks at `dtype` (the cases through the position sweep, `quick` or
    full), then `remeasured`: (failures, notes)."""
    found = list(failures)
    if contract.semantics is not None:
        observed = observe(contract, fn, dtype, "quick" if quick else "full")
        found += [f"semantics: {f}" for f in findings(contract.semantics, observed)]
    return remeasured(contract, found)


MEASURED: Final = ("semantics: ", "precision: ")
"""The failures that judge a document's measured facts (not its contract with the planner)."""


def remeasured(contract: KernelContract, failures: list[str]) -> tuple[list[str], list[str]]:
    """(failures, notes): where the document names the framework version and instruction set
    it was measured with (`measured_on`) and this machine runs others, the judge measures
    again rather than trusting the document, and what breaks a measured fact (semantics,
    precision) becomes a note saying what differs here; elsewhere failures stay failures."""
    there = contract.provider.measured_on
    here = _environment(contract.provider.name) if there is not None else None
    if there is None or here is None or here == there:
        return failures, []
    head = (
        f"re-measured on {here.framework}, {here.isa} (the document was measured on "
        f"{there.framework}, {there.isa})"
    )
    moved = [f for f in failures if f.startswith(MEASURED)]
    notes = [f"{head}: {f}" for f in moved] or [f"{head}: every measured fact holds here"]
    return [f for f in failures if f not in moved], notes
