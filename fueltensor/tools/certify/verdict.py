"""The judge's reading of a certificate: does it contradict the contract it certifies?

A certificate contradicts its contract when it is of another binary than the one that runs the
contract now (or names none: it cannot say what code it proved), when it certifies another
revision of the kernel, when its maximum distance from the correctly rounded result exceeds a
declared `max_ulp`, or when a
special-value outcome it counted is one the contract's `semantics` section rules out: a NaN
result that no declared form of the declared operand's NaN matches (`nan_allowed`, on the form
masks the core counts: a result matching several forms is allowed by any of them), an invalid
operation's NaN `nan.invalid` does not list, a lost NaN, or subnormals flushed
under `subnormals: kept` (kept under `flushed`) where the result is the correctly rounded one
up to a bound (not for the seeds' floor-formula remainder, whose own errors lose tiny results).
Every failure names the counts and, for the bound, the first pair reaching the maximum.
"""

from __future__ import annotations

from typing import Any, Final

from fueltensor.engine.backends import current_policy
from fueltensor.fkc.schema import KernelContract
from fueltensor.fkc.semantics import NanRule
from fueltensor.ops import BY_KIND
from fueltensor.tools.certify.binary import binary_identity, binary_text, effective_revision
from fueltensor.tools.certify.certificate import Certificate
from fueltensor.tools.certify.tally import FIXED_NAMES, form_bits

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


def _source_allows(bits: dict[str, bool], side: str, rule: NanRule) -> bool:
    """Whether the NaN of operand `side` ("lhs"/"rhs"), in a form `rule.result` lists (its
    sign flipped too where `rule.sign` is any), is what came out."""
    flip = rule.sign == "any"
    for form in rule.result:
        if form in ("kept", "quieted"):
            if bits[f"{side} {form}"] or (flip and bits[f"{side} {form}, sign flipped"]):
                return True
        elif form == "canonical":
            either = bits["positive_canonical"] or bits["negative_canonical"]
            if bits[f"{side} canonical"] or (flip and either):
                return True
    return False


def nan_allowed(mask: int, rule: NanRule) -> bool:
    """Whether a NaN result of form mask `mask` (`tally.form_bits`) is one `rule` allows: from
    the operand `rule.operand` names (or any NaN operand, `either`), in a declared form; an
    invalid operation's NaN, one of `rule.invalid` (undeclared: any)."""
    bits = form_bits(mask)
    fixed = [f for f in FIXED_NAMES if bits[f]]
    nans = [side for side in ("lhs", "rhs") if bits[f"{side} NaN"]]
    if not nans:
        return rule.invalid is None or "any" in rule.invalid or bool(set(fixed) & set(rule.invalid))
    if "any" in rule.result or set(fixed) & set(rule.result):
        return True
    first = {"lhs": "lhs", "rhs": "rhs"}.get(rule.operand)
    sources = nans if first is None or first not in nans else [first]
    return any(_source_allows(bits, side, rule) for side in sources)


def _nan_failures(data: dict[str, Any], contract: KernelContract) -> list[str]:
    """The NaN results the `nan` declaration rules out, and lost NaNs."""
    sem = contract.semantics
    rule = sem.nan if sem is not None else None
    specials = data["specials"]
    found = [
        f"{specials[k]:,} pairs of a NaN reference gave a number ({k})"
        for k in ("nan_lost", "invalid_lost")
        if specials.get(k)
    ]
    if rule is None:
        return found
    declared = f"nan: {{operand: {rule.operand}, result: {list(rule.result)}, sign: {rule.sign}"
    declared += f", invalid: {list(rule.invalid)}}}" if rule.invalid is not None else "}"
    return found + [
        f"semantics: {declared}, but {row['pairs']:,} pairs gave NaN from {row['forms']}"
        for row in data.get("nan_forms", ())
        if not nan_allowed(row["mask"], rule)
    ]


def _subnormal_failures(specials: dict[str, int], contract: KernelContract) -> list[str]:
    """Subnormals flushed under `subnormals: kept`, or kept under `flushed`."""
    sem = contract.semantics
    declared = sem.subnormals if sem is not None else None
    if not _correctly_rounded(contract):
        return []
    if declared == "kept":
        flushed = specials.get("subnormal_out_flushed", 0) + specials.get("subnormal_in_flushed", 0)
        return (
            [f"semantics: subnormals kept, but {flushed:,} pairs flushed them"] if flushed else []
        )
    if declared == "flushed" and specials.get("subnormal_out_kept", 0):
        kept = specials["subnormal_out_kept"]
        return [f"semantics: subnormals flushed, but {kept:,} subnormal results were kept"]
    return []


def _binary_failure(d: dict[str, Any], binary: dict[str, Any]) -> list[str]:
    """A certificate not of the binary that runs the contract now (naming both), or bound to
    none (a certificate older than binaries in certificates)."""
    stated = d.get("binary")
    if not isinstance(stated, dict):
        return [
            "the certificate is not bound to a binary (written before certificates named "
            f"one), the contract runs {binary_text(binary)}: certify it again"
        ]
    if stated.get("sha256") != binary["sha256"] or stated.get("how") != binary["how"]:
        return [
            f"the certificate is of {binary_text(stated)}, the contract runs "
            f"{binary_text(binary)}: certify it again"
        ]
    return []


def verdict(
    cert: Certificate, contract: KernelContract, binary: dict[str, Any] | None = None
) -> list[str]:
    """The failures of `contract` that `cert` shows (empty: the judge accepts it). `binary`:
    what runs the contract now (`binary_identity`; default: in the current registry)."""
    d: dict[str, Any] = cert.data
    if binary is None:
        binary = binary_identity(contract, current_policy().registry)
    unbound = _binary_failure(d, binary)
    if unbound:
        return unbound
    stated = d["contract"]["kernel_revision_hash"]
    revision = effective_revision(contract, binary)
    if stated != revision:
        return [
            f"the certificate is of revision {stated}, the contract {contract.name} is "
            f"{revision}: certify it again"
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
    return found + _nan_failures(d, contract) + _subnormal_failures(d["specials"], contract)
