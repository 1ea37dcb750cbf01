"""Write the frameworks' cast contracts from what benchmarks/framework_casts.py measures:
contracts/numpy-cast.md (NumPy and ml_dtypes' `astype`), torch-cast.md (`Tensor.to`) and
jax-cast.md (`jax.numpy.astype`), one contract per pair the framework casts whose behaviour
a cast contract can declare, each declaring the rule as found (overflow `inf_or_nan` or
`saturate`, the NaN forms and sign, subnormals kept or flushed, position invariant or only
NaN bits moving).

A pair gets no contract, and the document says why, where no declaration is true: a rounding
other than once to nearest even (the frameworks' float64 to the narrow formats go through
float32: double rounding, which the schema has no word for), an overflow that is neither rule,
results that depend on position beyond NaN bits. Each declaration is then confirmed against
the judge's own reference (`tools.judge.casts.expected`) on the measured lanes before it is
written: a pair it does not confirm gets no contract either, with the first lane that differs.

    PYTHONPATH=. python benchmarks/framework_casts.py --write   # or --diff
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from cast_contracts import INF_OR_NAN, SATURATE, section
from documents import contract_path
from framework_casts import Finding, caster, fmt, hexed, reference

from fueltensor.core.dtypes import DType, as_dtype
from fueltensor.kernels.casting import kernel_name
from fueltensor.registry import provider_environment
from fueltensor.testing import float_format
from fueltensor.tools.judge.casts import allows_nan, expected

ENTRIES = {"numpy": "numpy.ndarray.astype", "torch": "torch.Tensor.to", "jax": "jax.numpy.astype"}
"""Each framework's cast, as its provider module links it (`kernels/frameworks`)."""
FORMS = {"quiet_payload": "quieted", "canonical": "canonical", "kept": "kept"}
"""framework_casts' NaN findings -> the FKC NaN result forms that say the same."""

Found = dict[str, Finding]


@dataclass(frozen=True)
class Declared:
    """What a framework cast's contract declares: its overflow rule and semantics."""

    overflow: str
    forms: tuple[str, ...]
    sign: str
    subnormals: str
    position: str

    @property
    def nan_bits(self) -> bool:
        """Whether the judge holds NaN results bit for bit (one form, its sign kept)."""
        return len(self.forms) == 1 and self.forms[0] in FORMS.values() and self.sign == "kept"


def _nan_forms(src: str, dst: str, found: Found) -> tuple[tuple[str, ...], str]:
    """The NaN forms and sign a pair's findings support (`any` where no one form says it)."""
    nan, position = found["nan"], found["position"]
    sign = "kept" if nan.sign in ("", "kept") else "any"
    if position.value == "nan_bits":
        return ("any",), "any"
    if not fmt(dst).has_inf:
        return ("canonical",), sign  # float8_e4m3fn: one NaN a sign
    form = FORMS.get(nan.value, "any")
    if form == "kept" and fmt(dst).mantissa < fmt(src).mantissa:
        form = "any"  # a payload that shifts out: payload 1, not a form the schema names
    return ((form,) if nan.value != "n/a" else ("quieted",)), sign


def declare(src: str, dst: str, found: Found) -> Declared | str:
    """The declaration of a pair's measured behaviour, or why no contract can say it."""
    rounding, overflow, subnormals = found["rounding"], found["overflow"], found["subnormals"]
    if rounding.value == "unsupported":
        return f"no such cast ({rounding.note})"
    if rounding.value not in ("nearest_even", "n/a"):
        return f"rounding: {rounding.value} ({rounding.count} of {rounding.lanes} lanes)"
    rules = {"inf_or_nan": INF_OR_NAN, "n/a": INF_OR_NAN, "saturate": SATURATE}
    if overflow.value not in rules:
        return f"overflow: {overflow.value}"
    if subnormals.value not in ("kept", "flushed", "n/a"):
        return f"subnormals: {subnormals.value}"
    if found["position"].value not in ("invariant", "nan_bits"):
        return f"position: {found['position'].value} ({found['position'].note})"
    forms, sign = _nan_forms(src, dst, found)
    subnormal = "flushed" if subnormals.value == "flushed" else "kept"
    position = found["position"].value
    return Declared(rules[overflow.value], forms, sign, subnormal, position)


def confirm(provider: str, src: str, dst: str, declared: Declared) -> str:
    """ "" where the judge's reference under `declared` gives the framework's bits on every
    measured lane (a NaN: one the declared forms allow), else the first lane that differs."""
    ref = reference(src, dst)
    got = np.asarray(caster(provider)(ref.x.copy(), src, dst))
    s, t = float_format(src), float_format(dst)
    form = next((f for f in declared.forms if f in FORMS.values()), "quieted")
    flush = declared.subnormals == "flushed"
    x = ref.x.view(s.dtype)
    want = expected(x, t.dtype, declared.overflow == SATURATE, form, flush).view(t.uint)
    nan_in = np.array([s.is_nan(int(p)) for p in ref.x.tolist()])
    for i in np.flatnonzero(got != want).tolist():
        p, g = int(ref.x[i]), int(got[i])
        if nan_in[i] and allows_nan(declared.forms, declared.sign, p, s, t, g):
            continue
        said = hexed(int(want[i]), fmt(dst))
        return f"{hexed(p, fmt(src))} gives {hexed(g, fmt(dst))}, the declaration {said}"
    return ""


def _aspects(found: Found) -> str:
    """The measured aspects that differ from fueltensor's rule, briefly."""
    parts = []
    for aspect, f in found.items():
        if not f.follows_rule(aspect) and f.value != "n/a":
            sign = f", sign {f.sign}" if f.sign not in ("", "kept") else ""
            note = f" [{f.note}]" if f.note else ""
            parts.append(f"{aspect} {f.value}{sign} ({f.count} of {f.lanes} lanes){note}")
    return "; ".join(parts) or "fueltensor's rule on every measured lane"


def contract(provider: str, src: DType, dst: DType, d: Declared, found: Found, where: str) -> str:
    """One framework cast contract's section."""
    name = f"{provider}_{kernel_name(src.np, dst.np, d.overflow == SATURATE)}"
    beyond = "the largest finite" if d.overflow == SATURATE else "inf (F8_E4M3FN: NaN)"
    blurb = (
        f"{ENTRIES[provider]} {src.fkc} to {dst.fkc}: rounded once to nearest even, beyond the "
        f"range {beyond}, subnormals {d.subnormals}, as measured."
    )
    source = _front_field(provider, "kernel_source")
    semantics = (
        "  source: [measurement]\n"
        f"  nan: {{operand: either, result: [{', '.join(d.forms)}], sign: {d.sign}}}\n"
        f"  subnormals: {d.subnormals}\n"
        f"  position: {d.position}\n"
        f'  notes: "Measured on {where} (benchmarks/framework_casts.py): {_aspects(found)}."'
    )
    return section(
        name,
        src,
        dst,
        d.overflow,
        head=f"{source}\n{blurb}",
        entry=ENTRIES[provider],
        precision=f"rounded once to nearest, ties to even, as measured on {where}.",
        semantics=semantics,
    )


def _front(provider: str) -> str:
    """The front matter of the provider's main document (one provider, one front matter)."""
    text = contract_path(provider).read_text(encoding="utf-8")
    return text.split("\n---\n", 1)[0] + "\n---\n"


def _front_field(provider: str, field: str) -> str:
    line = next(x for x in _front(provider).splitlines() if x.strip().startswith(f"{field}:"))
    return line.split(":", 1)[1].strip().strip('"')


INTRO = """# {provider}: casts between the float formats

The framework's own cast (`{entry}`) between F64, F32, BF16, F16, F8_E4M3FN and F8_E5M2 as
contracts of the same provider as [`{provider}.md`](./{provider}.md) (its front matter), one per
pair, written by `benchmarks/framework_casts.py --write` from what it measured on {where}: each
declares the framework's overflow rule (`op_params.overflow`), NaN forms and sign, subnormals
and position as found, and is confirmed against the judge's reference on every measured lane.
Exact (`max_ulp: 0`): a pair that does not round once to nearest even has no contract. The
pairs left out, and why:

{left_out}
"""


def document(provider: str, found: dict[tuple[str, str], Found]) -> str:
    """contracts/<provider>-cast.md from `provider`'s findings."""
    env = provider_environment(provider)
    where = f"{env.framework}, {env.isa}" if env else provider
    sections, left_out = [], []
    for (src, dst), aspects in found.items():
        declared = declare(src, dst, aspects)
        if isinstance(declared, Declared):
            off = confirm(provider, src, dst, declared)
            if not off:
                sections.append(
                    contract(provider, as_dtype(src), as_dtype(dst), declared, aspects, where)
                )
                continue
            declared = f"the judge's reference differs: {off}"
        left_out.append(f"- {as_dtype(src).fkc} to {as_dtype(dst).fkc}: {declared}")
    intro = INTRO.format(
        provider=provider,
        entry=ENTRIES[provider],
        where=where,
        left_out="\n".join(left_out) or "- none",
    )
    return _front(provider) + intro + "".join(sections)


def documents(found: dict[str, dict[tuple[str, str], Found]]) -> dict[Path, str]:
    """Each measured provider's cast document by path."""
    return {contract_path(f"{p}-cast"): document(p, pairs) for p, pairs in found.items()}
