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
Every failure names the counts and, for the bound, the first pair reaching the maximum. Where
the contract's `semantics.source` is its formula, every pair the certificate judged must give
the formula's bits.

Before any of that, `consistency` holds the certificate to itself and to the contract (op kind,
provider, entry point, dtype; the span against the histogram, the blocks and the class table;
the maximum against the histogram): a certificate edited by hand says something no sweep
could have found. `claims` says which of the contract's claims a certificate checked and which
it could not (no declared bound, no formula count): an acceptance is of those alone.
"""

from __future__ import annotations

from typing import Any, Final

from fueltensor.core.dtypes import DType, as_dtype
from fueltensor.core.errors import plural
from fueltensor.engine.backends import current_policy
from fueltensor.fkc.schema import KernelContract
from fueltensor.fkc.semantics import NanRule
from fueltensor.ops import BY_KIND, CONTRACT_OPS, OpKind
from fueltensor.tools.certify.binary import binary_identity, binary_text, effective_revision
from fueltensor.tools.certify.certificate import (
    HIST_ULPS,
    HISTOGRAM,
    Certificate,
    is_unary,
    lanes,
)
from fueltensor.tools.certify.sweep import Span
from fueltensor.tools.certify.tally import FIXED_NAMES, form_bits
from fueltensor.tools.certify.unary import UnarySpan
from fueltensor.tools.exact_unary import SIGN_BIT_RESULTS, nan_result
from fueltensor.tools.judge.declared import reference_for

BOUNDED_OPS: Final = tuple(op.kernel_op for op in CONTRACT_OPS if op.op_kind is not OpKind.REM)
"""Kernel ops whose declared max_ulp is measured from the correctly rounded result (every row
but the remainder: the binary ones, and every unary function); a remainder too where it is
declared `fmod` (the seeds' floor formula is its own reference)."""


def _correctly_rounded(contract: KernelContract) -> bool:
    """Whether the contract's result is the correctly rounded one up to its declared bound (the
    seeds' floor-formula remainder is not: its own rounding errors lose tiny results, which
    says nothing about flushing)."""
    sem = contract.semantics
    row = BY_KIND[contract.op_kind]
    fmod = sem is not None and sem.remainder is not None and sem.remainder.definition == "fmod"
    return row.kernel_op in BOUNDED_OPS or (row.op_kind is OpKind.REM and fmod)


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


def _fixed_bits(data: dict[str, Any], contract: KernelContract) -> list[str]:
    """A unary certificate's zeros of the other sign, and NaNs of other bits, where the
    reference fixes them (`judge.declared.reference_for`: Annex F's and the rounding's signed
    zeros; a NaN quieted, or the sign bit alone changed, where the contract says so)."""
    ref = reference_for(contract)
    if not is_unary(data) or ref is None:
        return []
    zeros = data["specials"].get("zero_sign", 0) if ref.zero_signs else 0
    nans = sum(data["differences"].get(k, 0) for k in ("NaN sign", "NaN payload"))
    return [
        f"{plural(n, 'input')} gave {what} than the correctly rounded result"
        for n, what in (
            (zeros, "a zero of the other sign"),
            (nans if ref.nan_bits else 0, "a NaN of other bits"),
        )
        if n
    ]


def _nan_failures(data: dict[str, Any], contract: KernelContract) -> list[str]:
    """The NaN results the `nan` declaration rules out, and lost NaNs (a sign-bit operation's
    NaNs are the table's, `_fixed_bits`)."""
    sem = contract.semantics
    rule = sem.nan if sem is not None else None
    specials = data["specials"]
    what = "inputs" if is_unary(data) else "pairs"
    found = [
        f"{specials[k]:,} {what} of a NaN reference gave a number ({k})"
        for k in ("nan_lost", "invalid_lost")
        if specials.get(k)
    ]
    row = BY_KIND[contract.op_kind]
    if rule is None or nan_result(row) in SIGN_BIT_RESULTS:
        return found
    declared = f"nan: {{operand: {rule.operand}, result: {list(rule.result)}, sign: {rule.sign}"
    declared += f", invalid: {list(rule.invalid)}}}" if rule.invalid is not None else "}"
    return found + [
        f"semantics: {declared}, but {form.get('pairs', form.get('inputs')):,} {what} gave NaN "
        f"from {form['forms']}"
        for form in data.get("nan_forms", ())
        if not nan_allowed(form["mask"], rule)
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


def _dtype(name: str) -> DType | None:
    """The dtype a certificate names (None: not one of fueltensor's)."""
    try:
        return as_dtype(name)
    except TypeError:
        return None


def _identity_failures(d: dict[str, Any], contract: KernelContract) -> list[str]:
    """Where the certificate names another contract than `contract`: another op kind,
    provider or entry point, or a dtype its first input does not take."""
    stated = d["contract"]
    found = [
        f"the certificate is of {key} {stated[key]!r}, the contract {contract.name}'s is {want!r}"
        for key, want in (
            ("name", contract.name),
            ("op_kind", contract.op_kind),
            ("provider", contract.provider.name),
            ("entry_point", contract.entry_point),
        )
        if stated[key] != want
    ]
    dtype = _dtype(d["dtype"])
    if dtype is None or dtype.fkc not in contract.inputs[0].dtypes:
        taken = ", ".join(dict.fromkeys(contract.inputs[0].dtypes))
        found.append(f"the certificate is of dtype {d['dtype']!r}, the contract takes {taken}")
    return found


def _span_failures(d: dict[str, Any]) -> list[str]:
    """The span's pairs against its ranges and blocks (or its special pairs and sample, or its
    edges and sample), and against the pairs the histogram and `open` count."""
    span, found = d["span"], []
    if "edges" in span:  # a float64 cast's edges and sample
        pairs, exhaustive = span["edges"] + span["sample"], False
    elif is_unary(d):
        lo, hi = span["x"]
        dtype = _dtype(d["dtype"])
        width = 8 * dtype.itemsize if dtype is not None else 32
        pairs, exhaustive = hi - lo, lo == 0 and hi == 1 << width
        blocks = len(UnarySpan(lo, hi, width).blocks()) if hi <= 1 << width else 0
        if len(d["block_digests"]) != blocks:
            found.append(f"span: {blocks:,} blocks, but {len(d['block_digests']):,} block digests")
    elif "lhs" in span:
        dtype = _dtype(d["dtype"])
        width = 8 * dtype.itemsize if dtype is not None and dtype.itemsize < 2 else 16
        ranges = Span(tuple(span["lhs"]), tuple(span["rhs"]), width)
        pairs, exhaustive, blocks = ranges.pairs, ranges.exhaustive, len(ranges.blocks())
        if len(d["block_digests"]) != blocks:
            found.append(f"span: {blocks:,} blocks, but {len(d['block_digests']):,} block digests")
    else:
        pairs, exhaustive = span["special_pairs"] + span["sample"], False
    said, what = lanes(d), "inputs" if is_unary(d) else "pairs"
    if said != pairs or span["exhaustive"] != exhaustive:
        found.append(
            f"span: its ranges hold {pairs:,} {what} (exhaustive: {exhaustive}), but it says "
            f"{said:,} (exhaustive: {span['exhaustive']})"
        )
    counted = sum(d["histogram"].values()) + d["specials"].get("open", 0)
    if counted != said:
        found.append(
            f"histogram: {counted:,} {what} with the open ones, but the span says {said:,}"
        )
    return found


def _fits(max_ulp: int | str, histogram: dict[str, int]) -> str | None:
    """The histogram's farthest non-empty bucket where `max_ulp` is not its distance (None:
    it is): 0 for `exact`, `ulp0` and an empty histogram, k for `ulpk`, above 8 or "inf" for
    `beyond`."""
    top = next((k for k in reversed(HISTOGRAM) if histogram[k]), "exact")
    if top == "beyond":
        above = max_ulp == "inf" or (isinstance(max_ulp, int) and max_ulp > HIST_ULPS)
        return None if above else top
    return None if max_ulp == (0 if top == "exact" else int(top.removeprefix("ulp"))) else top


def _tally_failures(d: dict[str, Any]) -> list[str]:
    """The maximum against the histogram's farthest bucket, and the histogram against the
    class table, the difference classes and the formula count."""
    hist, found = d["histogram"], []
    total, top = sum(hist.values()), _fits(d["max_ulp"], hist)
    if top is not None:
        found.append(f"max_ulp: {d['max_ulp']}, but the histogram's farthest pairs are in {top}")
    mark = "max_input" if is_unary(d) else "max_pair"
    if total and d[mark] is None:
        found.append(f"{mark}: none, but the histogram counts lanes")
    count = "inputs" if is_unary(d) else "pairs"
    sums = {k: sum(row.get(k, 0) for row in d["classes"]) for k in (count, "exact", "formula")}
    other = sum(v for k, v in d["differences"].items() if k != "equal")
    checks = [
        ("the class table", count, sums[count], total),
        ("the class table", "exact pairs", sums["exact"], hist["exact"]),
        ("the difference classes", "pairs off the exact bits", other, total - hist["exact"]),
    ]
    if "formula" in d:
        equal = d["formula"]["equal"]
        checks.append(("the class table", "formula pairs", sums["formula"], equal))
        if (equal < total) != (d["formula"]["first"] is not None):
            first = "none" if d["formula"]["first"] is None else "one"
            found.append(f"formula: {equal:,} of {total:,} pairs, but first other: {first}")
    found += [
        f"{where} counts {got:,} {what}, the histogram and formula count {want:,}"
        for where, what, got, want in checks
        if got != want
    ]
    return found


def consistency(cert: Certificate, contract: KernelContract) -> list[str]:
    """Where `cert` disagrees with `contract`'s identity or with itself (module docstring);
    `cert` has passed `certificate.check_shape`."""
    d: dict[str, Any] = cert.data
    found = _identity_failures(d, contract) + _span_failures(d) + _tally_failures(d)
    return [f"inconsistent certificate: {f}" for f in found]


def _formula_source(contract: KernelContract) -> bool:
    """Whether the contract's semantics come from its formula."""
    return contract.semantics is not None and contract.semantics.from_formula


def _formula_failures(d: dict[str, Any], contract: KernelContract) -> list[str]:
    """Pairs off the formula where the contract's semantics source is its formula."""
    if "formula" not in d or not _formula_source(contract):
        return []
    equal, judged = d["formula"]["equal"], sum(d["histogram"].values())
    if equal == judged:
        return []
    first = d["formula"]["first"]
    return [
        f"semantics: source formula, but {judged - equal:,} of {judged:,} pairs gave other "
        f"bits; first ({first['lhs_value']}, {first['rhs_value']}): got {first['got_value']}"
    ]


def claims(cert: Certificate, contract: KernelContract) -> tuple[list[str], list[str]]:
    """(checked, not checked): the contract's claims `verdict` reads from `cert`, and those it
    cannot (no bound declared, or one not measured from the correctly rounded result; a
    formula source without a formula count)."""
    d: dict[str, Any] = cert.data
    sem = contract.semantics
    declared = contract.precision.max_ulp
    checked, unchecked = ["binary", "revision", "lost NaNs"], []
    if declared is None:
        unchecked.append(f"max_ulp (none declared; {d['max_ulp']} ULP measured)")
    elif _bounded(contract):
        checked.append(f"max_ulp {declared:g}")
    else:
        unchecked.append(f"max_ulp {declared:g} (not from the correctly rounded result here)")
    if _formula_source(contract) and is_unary(d):  # a unary row's formula is its definition
        (checked if _bounded(contract) and declared is not None else unchecked).append(
            "formula (the definition correctly rounded, within max_ulp)"
        )
    elif _formula_source(contract):
        formula = "formula" if "formula" in d else "formula (a sampled certificate has no count)"
        (checked if "formula" in d else unchecked).append(formula)
    if sem is not None and sem.nan is not None:
        checked.append("nan")
    ref = reference_for(contract) if is_unary(d) else None
    if ref is not None:
        checked += ["signed zeros"] * ref.zero_signs + ["NaN bits"] * ref.nan_bits
    if sem is not None and sem.subnormals is not None:
        (checked if _correctly_rounded(contract) else unchecked).append("subnormals")
    return checked, unchecked


def verdict(
    cert: Certificate, contract: KernelContract, binary: dict[str, Any] | None = None
) -> list[str]:
    """The failures of `contract` that `cert` shows (empty: the judge accepts what `claims`
    says it checked). `binary`: what runs the contract now (`binary_identity`; default: in
    the current registry)."""
    d: dict[str, Any] = cert.data
    inconsistent = consistency(cert, contract)
    if inconsistent:
        return inconsistent
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
        p = d["max_input"] if is_unary(d) else d["max_pair"]
        at = f"x = {p['x_value']}" if is_unary(d) else f"({p['lhs_value']}, {p['rhs_value']})"
        found.append(
            f"max_ulp {declared:g} declared, but {d['max_ulp']} ULP from the correctly rounded "
            f"result at {at}: got {p['got_value']}, correctly rounded {p['want_value']}"
        )
    return (
        found
        + _fixed_bits(d, contract)
        + _formula_failures(d, contract)
        + _nan_failures(d, contract)
        + _subnormal_failures(d["specials"], contract)
    )


def record_verdict(
    cert: Certificate, contract: KernelContract, binary: dict[str, Any] | None = None
) -> None:
    """Write the judge's reading into `cert`: `verdict` (the failures; `binary` as there) and
    `claims` (checked, not checked)."""
    cert.data["verdict"] = verdict(cert, contract, binary)
    checked, unchecked = claims(cert, contract)
    cert.data["claims"] = {"checked": checked, "unchecked": unchecked}
