"""The judge's reading of a certificate: does it contradict the contract it certifies?

A certificate contradicts its contract when it certifies another revision of the kernel, when
its maximum distance from the correctly rounded result exceeds a declared `max_ulp`, or when a
special-value outcome it counted is one the contract's `semantics` section rules out: a NaN
result of a form `nan.result` does not list, the other operand's NaN under `nan.operand: lhs`,
an invalid operation's NaN `nan.invalid` does not list, a lost NaN, or subnormals flushed
under `subnormals: kept` (kept under `flushed`) where the result is the correctly rounded one
up to a bound (not for the seeds' floor-formula remainder, whose own errors lose tiny results).
Every failure names the counts and, for the bound, the first pair reaching the maximum.
"""

from __future__ import annotations

from typing import Any, Final

from fueltensor.fkc.schema import KernelContract
from fueltensor.ops import BY_KIND
from fueltensor.tools.certify.certificate import Certificate

NAN_FORMS: Final[dict[str, tuple[str, ...]]] = {
    "nan_quiet_kept": ("kept", "quieted", "canonical", "any"),
    "nan_signaling_kept": ("kept", "any"),
    "nan_signaling_quieted": ("quieted", "any"),
    "nan_canonical": ("canonical", "any"),
    "nan_other": ("any", "all_ones", "positive_canonical", "negative_canonical"),
    "nan_lost": (),
}
"""Each NaN outcome of the tally, and the `nan.result` values that allow it (a quiet NaN passed
on unchanged is also what `canonical` gives a NaN without payload)."""
INVALID_FORMS: Final[dict[str, tuple[str, ...]]] = {
    "invalid_positive": ("positive_canonical", "any"),
    "invalid_negative": ("negative_canonical", "any"),
    "invalid_other": ("all_ones", "any"),
    "invalid_lost": (),
}
"""Each invalid-operation outcome, and the `nan.invalid` values that allow it."""
BOUNDED_OPS: Final = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
"""Kernel ops whose declared max_ulp is measured from the correctly rounded result; a remainder
too where it is declared `fmod` (the seeds' floor formula is its own reference)."""


def _correctly_rounded(contract: KernelContract) -> bool:
    """Whether the contract's result is the correctly rounded one up to its declared bound (the
    seeds' floor-formula remainder is not: its own rounding errors lose tiny results, which
    says nothing about flushing)."""
    sem = contract.semantics
    op = BY_KIND[contract.op_kind].kernel_op
    fmod = sem is not None and sem.remainder is not None and sem.remainder.definition == "fmod"
    return op in BOUNDED_OPS or (op == "rem" and fmod)


def _bounded(contract: KernelContract) -> bool:
    """Whether the contract's max_ulp is a distance from the correctly rounded result (not
    where it declares subnormals flushed: the judge's reference flushes them too)."""
    sem = contract.semantics
    flushed = sem is not None and sem.subnormals == "flushed"
    return _correctly_rounded(contract) and not flushed


def _nan_failures(specials: dict[str, int], contract: KernelContract) -> list[str]:
    """The NaN outcomes the `nan` declaration rules out."""
    sem = contract.semantics
    rule = sem.nan if sem is not None else None
    if rule is None:
        return []
    found = [
        f"semantics: nan.result {list(rule.result)}, but {count:,} pairs gave {outcome}"
        for outcome, allowed in NAN_FORMS.items()
        if (count := specials.get(outcome, 0)) and not set(allowed) & set(rule.result)
    ]
    if rule.operand == "lhs" and specials.get("nan_other_operand", 0):
        found.append(
            f"semantics: nan.operand lhs, but {specials['nan_other_operand']:,} pairs of two "
            "NaNs gave the rhs's"
        )
    if rule.invalid is not None:
        found += [
            f"semantics: nan.invalid {list(rule.invalid)}, but {count:,} invalid operations "
            f"gave {outcome}"
            for outcome, allowed in INVALID_FORMS.items()
            if (count := specials.get(outcome, 0)) and not set(allowed) & set(rule.invalid)
        ]
    return found


def _subnormal_failures(specials: dict[str, int], contract: KernelContract) -> list[str]:
    """Subnormals flushed under `subnormals: kept`, or kept under `flushed`."""
    sem = contract.semantics
    declared = sem.subnormals if sem is not None else None
    if not _correctly_rounded(contract):
        return []
    if declared == "kept":
        flushed = specials["subnormal_out_flushed"] + specials["subnormal_in_flushed"]
        return (
            [f"semantics: subnormals kept, but {flushed:,} pairs flushed them"] if flushed else []
        )
    if declared == "flushed" and specials["subnormal_out_kept"]:
        kept = specials["subnormal_out_kept"]
        return [f"semantics: subnormals flushed, but {kept:,} subnormal results were kept"]
    return []


def verdict(cert: Certificate, contract: KernelContract) -> list[str]:
    """The failures of `contract` that `cert` shows (empty: the judge accepts it)."""
    d: dict[str, Any] = cert.data
    stated = d["contract"]["kernel_revision_hash"]
    if stated != contract.kernel_revision_hash:
        return [
            f"the certificate is of revision {stated}, the contract {contract.name} is "
            f"{contract.kernel_revision_hash}: certify it again"
        ]
    found = []
    declared = contract.precision.max_ulp
    if declared is not None and _bounded(contract) and cert.max_ulp > declared:
        p = d["max_pair"]
        found.append(
            f"max_ulp {declared:g} declared, but {d['max_ulp']} ULP from the correctly rounded "
            f"result at ({p['lhs_value']}, {p['rhs_value']}): got {p['got_value']}, "
            f"correctly rounded {p['want_value']}"
        )
    return (
        found
        + _nan_failures(d["specials"], contract)
        + _subnormal_failures(d["specials"], contract)
    )
