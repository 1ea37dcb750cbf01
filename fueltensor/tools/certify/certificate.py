"""A certificate: what one sweep of one contract at one 16-bit dtype established, as JSON, as a
short text, and as a plot; and the comparison of two certificates.

The JSON document (`Certificate.data`) holds the contract's identity (name, provider, entry
point, revision hash, declared bound and semantics), the operand span, the ULP histogram
against the correctly rounded result (exact bits, 0 ULP with other bits, 1 .. 8, beyond), the
maximum with the first pair reaching it, agreement with the contract's formula, the difference
classes and special-value outcomes, the operand-class table, the digest of every output (and
a short digest per block, so two certificates can say where they differ), the machine
fingerprint, the versions, and the binary that ran the kernel (`binary.binary_identity`).
docs/certificates.md describes every field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import as_dtype
from fueltensor.core.errors import plural
from fueltensor.testing import float_format, format_value
from fueltensor.tools.certify.binary import binary_identity as binary_identity
from fueltensor.tools.certify.binary import binary_text
from fueltensor.tools.certify.tally import class_cells, core, describe_forms, named, nan_forms

KIND: Final = "fueltensor certificate"
VERSION: Final = 1
HIST_ULPS: Final = 8
"""The histogram's last bucket of its own: farther pairs are `beyond`."""
HISTOGRAM: Final = ("exact", *(f"ulp{k}" for k in range(HIST_ULPS + 1)), "beyond")
"""The histogram's buckets, as the tally names them."""
DIFFERENCES: Final = (
    "equal",
    "NaN sign",
    "NaN payload",
    "NaN vs number",
    "signed zero",
    "infinity",
    "subnormal",
    "sign",
    "rounding",
    "value",
)
SPECIALS: Final = (
    "open",
    "nan_lost",
    "invalid_lost",
    "zero_kept",
    "zero_sign",
    "zero_lost",
    "inf_kept",
    "inf_lost",
    "subnormal_out_kept",
    "subnormal_out_flushed",
    "subnormal_out_other",
    "subnormal_in_exact",
    "subnormal_in_flushed",
    "subnormal_in_other",
)
"""Special-value outcomes, as the tally names them (docs/certificates.md)."""


class CertificateError(ValueError):
    """A certificate whose JSON lacks a field or holds one of the wrong kind: the message
    names the field (`span.pairs`, `histogram.exact`, ...)."""


_INT: Final = "a whole number >= 0"
_PAIR_SIDES: Final = ("lhs", "rhs", "got", "want")
"""The patterns of a pair field, each with its value's text (`lhs_value`, ...)."""


def _field(data: dict[str, Any], path: str, kind: type | tuple[type, ...], what: str) -> Any:
    """`data`'s field at dotted `path`, CertificateError naming it when it is absent or not a
    `kind` (a bool is not a number)."""
    value: Any = data
    keys = path.split(".")
    for depth, key in enumerate(keys):
        if not isinstance(value, dict):
            above = ".".join(keys[:depth])
            raise CertificateError(f"field {above}: an object, not {value!r}"[:200])
        if key not in value:
            raise CertificateError(f"field {path}: missing")
        value = value[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise CertificateError(f"field {path}: {what}, not {value!r}"[:200])
    return value


def _count(data: dict[str, Any], path: str) -> int:
    """A count field: an int >= 0."""
    value: int = _field(data, path, int, _INT)
    if value < 0:
        raise CertificateError(f"field {path}: {_INT}, not {value}")
    return value


UNARY_SIDES: Final = ("x", "got", "want")
"""The patterns of a unary certificate's `max_input`, each with its value's text."""


def is_unary(data: dict[str, Any]) -> bool:
    """Whether a certificate is of one input a lane: a unary sweep (its span a range of inputs
    `x`), or a float64 cast's edges and sample (`edges`: `certify.cast_edges`)."""
    span = data.get("span")
    return isinstance(span, dict) and ("x" in span or "edges" in span)


def lanes(data: dict[str, Any]) -> int:
    """The lanes a certificate's span holds: operand pairs, or a unary sweep's inputs."""
    return int(data["span"]["inputs" if is_unary(data) else "pairs"])


def _pair_shape(data: dict[str, Any], path: str, sides: tuple[str, ...] = _PAIR_SIDES) -> None:
    """A pair field (`max_pair`, `formula.first`; a unary `max_input`): null, or its patterns
    and their values."""
    if _field(data, path, (dict, type(None)), "an operand pair or null") is not None:
        for side in sides:
            _count(data, f"{path}.{side}")
            _field(data, f"{path}.{side}_value", str, "a value's text")


def _span_shape(data: dict[str, Any]) -> None:
    """`span`: a 16-bit range (lhs, rhs: [start, stop) within 0..65536), special pairs and a
    sample, a unary range (x) or a float64 cast's edges and sample; the count and exhaustive
    every way."""
    span = _field(data, "span", dict, "an object")
    _count(data, "span.inputs" if is_unary(data) else "span.pairs")
    _field(data, "span.exhaustive", bool, "true or false")
    if "edges" in span:  # a float64 cast's: the target's edges and a seeded sample
        for key in ("edges", "sample", "seed"):
            _count(data, f"span.{key}")
        _field(data, "span.scheme", str, "which edges, in words")
        return
    if is_unary(data):
        bounds = _field(data, "span.x", list, "[start, stop]")
        if len(bounds) != 2 or not all(type(b) is int for b in bounds):
            raise CertificateError(f"field span.x: [start, stop], not {bounds!r}")
        if not 0 <= bounds[0] < bounds[1] <= 1 << 32:
            raise CertificateError(f"field span.x: {bounds} is not a range of input patterns")
        _field(data, "block_digests", list, "a list of block digests")
        return
    if "lhs" not in span:
        for key in ("special_pairs", "sample", "seed"):
            _count(data, f"span.{key}")
        return
    for side in ("lhs", "rhs"):
        bounds = _field(data, f"span.{side}", list, "[start, stop]")
        if len(bounds) != 2 or not all(type(b) is int for b in bounds):
            raise CertificateError(f"field span.{side}: [start, stop], not {bounds!r}")
        if not 0 <= bounds[0] < bounds[1] <= 1 << 16:
            raise CertificateError(
                f"field span.{side}: {bounds} is not a range of 16-bit patterns (0..65536)"
            )
    _field(data, "block_digests", list, "a list of block digests")


def _counts(data: dict[str, Any], path: str, keys: tuple[str, ...] | None) -> None:
    """An object of counts: every one of `keys` (None: whichever it holds)."""
    found = _field(data, path, dict, "an object of counts")
    for key in keys if keys is not None else tuple(found):
        _count(data, f"{path}.{key}")


def _rows(data: dict[str, Any], path: str, counts: tuple[str, ...], texts: tuple[str, ...]) -> None:
    """A list of objects (`classes`, `nan_forms`), each with these counts and texts."""
    for i, row in enumerate(_field(data, path, list, "a list")):
        where = f"{path}[{i}]"
        if not isinstance(row, dict):
            raise CertificateError(f"field {where}: an object, not {row!r}"[:200])
        for key in counts:
            _count({where: row}, f"{where}.{key}")
        for key in texts:
            _field({where: row}, f"{where}.{key}", str, "a text")


def check_shape(data: object) -> None:
    """Refuse a certificate document that lacks a field the judge, the text or `--compare`
    reads, or holds one of the wrong kind: CertificateError naming the field. Fields it does
    not know (a `binary` record, say) are left alone."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise CertificateError(f"not a fueltensor certificate (no kind: {KIND!r})")
    if data.get("version") != VERSION:
        raise CertificateError(f"field version: {data.get('version')!r}, not {VERSION}")
    for key in ("name", "provider", "op_kind", "entry_point", "kernel_revision_hash"):
        _field(data, f"contract.{key}", str, "a text")
    _field(data, "contract.dtypes", list, "a list of dtypes")
    _field(data, "dtype", str, "a dtype's name")
    _span_shape(data)
    _counts(data, "histogram", HISTOGRAM)
    max_ulp = _field(data, "max_ulp", (int, str), 'a whole number or "inf"')
    if max_ulp != "inf" and (not isinstance(max_ulp, int) or max_ulp < 0):
        raise CertificateError(f'field max_ulp: a whole number >= 0 or "inf", not {max_ulp!r}')
    unary = is_unary(data)
    if unary:
        _pair_shape(data, "max_input", UNARY_SIDES)
    else:
        _pair_shape(data, "max_pair")
    if "formula" in data:
        _count(data, "formula.equal")
        _pair_shape(data, "formula.first")
    _counts(data, "differences", None)
    _counts(data, "specials", None)
    if "nan_forms" in data:  # the 16-bit core's; not a sampled certificate's
        _rows(data, "nan_forms", ("mask", "inputs" if unary else "pairs"), ("forms",))
    formula = ("formula",) if "formula" in data else ()
    count, sides = ("inputs", ("x",)) if unary else ("pairs", ("lhs", "rhs"))
    _rows(data, "classes", (count, "exact", *formula), sides)
    _field(data, "digest", str, "a SHA-256 in hex")
    _field(data, "reference.exact", str, "what the reference is")
    if "formula" in data:
        _field(data, "reference.formula", str, "what the formula is")
    if isinstance(_field(data, "machine", (dict, list), "a machine or a list of them"), dict):
        _field(data, "machine.cpu", str, "the CPU's name")
    _field(data, "versions.fueltensor", str, "a version")
    _field(data, "seconds", (int, float), "a number of seconds")
    _count(data, "threads")
    for path in ("verdict", "claims.checked", "claims.unchecked"):
        if path.split(".")[0] in data:
            texts = _field(data, path, list, "a list of texts")
            if not all(isinstance(v, str) for v in texts):
                raise CertificateError(f"field {path}: a list of texts")


def pair(dtype: str, lhs: int, rhs: int, got: int | None, want: int | None) -> dict[str, Any]:
    """One operand pair as the certificate shows it: patterns and values (with the kernel's
    result and the reference's where known)."""
    fmt = float_format(dtype)
    row: dict[str, Any] = {"lhs": lhs, "rhs": rhs}
    for name, bits in (("lhs", lhs), ("rhs", rhs), ("got", got), ("want", want)):
        if bits is not None:
            row[name] = bits
            row[f"{name}_value"] = format_value(fmt.scalar(bits))
    return row


@dataclass
class Certificate:
    """A certificate's JSON document, with its text, plot and file forms."""

    data: dict[str, Any]

    @property
    def name(self) -> str:
        """The contract certified."""
        return str(self.data["contract"]["name"])

    @property
    def stem(self) -> str:
        """Its file name less `.json`: the contract's name, with the dtype where the contract
        spans several (the oracle's broadcast_add certifies BF16 and F16)."""
        several = len(self.data["contract"].get("dtypes", [])) > 1
        return f"{self.name}_{self.data['dtype']}" if several else self.name

    @property
    def max_ulp(self) -> float:
        """The largest ULP distance from the correctly rounded result (inf: a NaN against a
        number)."""
        m = self.data["max_ulp"]
        return float("inf") if m == "inf" else float(m)

    @property
    def digest(self) -> str:
        """SHA-256 over every output (see `fueltensor.tools.certify.sweep`)."""
        return str(self.data["digest"])

    def save(self, path: str | Path) -> Path:
        """Write the JSON to `path` and the text beside it (`.txt`); returns the JSON's path."""
        target = Path(path)
        target.write_text(json.dumps(self.data, indent=1) + "\n", encoding="utf-8")
        target.with_suffix(".txt").write_text(self.text() + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> Certificate:
        """Read a certificate's JSON; CertificateError naming the file (and the field) when it
        is not one (`check_shape`)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise CertificateError(f"{path}: not a readable certificate: {e}") from e
        try:
            check_shape(data)
        except CertificateError as e:
            raise CertificateError(f"{path}: {e}") from None
        return cls(data)

    def text(self) -> str:
        """The short text: what was swept, the histogram, the maximum and its pair, the formula,
        the special-value outcomes seen, the digest."""
        d = self.data
        c = d["contract"]
        source = "the reference" if is_unary(d) else "the judge's reference"
        to = f" to {d['to']}" if "to" in d else ""  # a cast's target
        lines = [
            f"{c['name']} ({c['provider']}, {d['dtype']}{to}): {_span_text(d['span'])}",
            (
                "ULP from the correctly rounded result: "
                if "formula" in d
                else f"ULP from {source} ({d['reference']['exact']}): "
            )
            + ", ".join(f"{k.removeprefix('ulp')}: {v:,}" for k, v in d["histogram"].items() if v),
            f"max {d['max_ulp']} ULP, first at "
            + (_input_text(d["max_input"]) if is_unary(d) else _pair_text(d["max_pair"])),
        ]
        if "formula" in d:
            first = d["formula"]["first"]
            lines.append(
                f"contract formula ({d['reference']['formula']}): {d['formula']['equal']:,} of "
                f"{d['span']['pairs']:,} pairs"
                + (f"; first other: {_pair_text(first)}" if first else "")
            )
        seen = ", ".join(f"{k} {v:,}" for k, v in d["specials"].items() if v)
        lines.append(f"special values: {seen or 'none'}")
        if "outcomes" in d:  # a cast's inputs by what the rule makes of them
            lines.append("inputs: " + ", ".join(f"{k} {v:,}" for k, v in d["outcomes"].items()))
        lines += [
            f"  NaN from {row['forms']}: {row.get('inputs', row.get('pairs')):,}"
            for row in d.get("nan_forms", ())
        ]
        binary = d.get("binary")
        lines += [
            f"digest {d['digest']}",
            "binary: " + (binary_text(binary) if binary else "not bound to a binary"),
            f"{d['machine']['cpu'] if isinstance(d['machine'], dict) else 'several machines'}; "
            f"fueltensor {d['versions']['fueltensor']}; {d['seconds']:.1f} s on "
            f"{plural(d['threads'], 'thread')}",
        ]
        if "verdict" in d:
            claims = d.get("claims", {})
            lines.append(
                "judge: "
                + judgement(d["verdict"], claims.get("checked", []), claims.get("unchecked", []))
            )
        return "\n".join(lines)

    def plot(self) -> Any:
        """The ULP histogram (log scale) with the special-value outcomes, as a matplotlib Figure."""
        from fueltensor.tools.plots import _pyplot

        plt = _pyplot()
        fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
        hist = self.data["histogram"]
        left.bar([k.removeprefix("ulp") for k in hist], [max(v, 0) for v in hist.values()])
        left.set_yscale("symlog")
        left.set_title("ULP from the correctly rounded result")
        seen = {k: v for k, v in self.data["specials"].items() if v}
        right.barh(list(seen), list(seen.values()))
        right.set_xscale("symlog")
        right.set_title("special-value outcomes")
        what = "inputs" if is_unary(self.data) else "pairs"
        fig.suptitle(f"{self.name} ({self.data['dtype']}): {lanes(self.data):,} {what}")
        plt.close(fig)
        return fig


def scope(checked: list[str], unchecked: list[str]) -> str:
    """`checked: ...; not checked: ...`: the contract's claims a verdict read, and those it
    could not."""
    said = [f"checked: {', '.join(checked)}"] if checked else []
    return "; ".join(said + ([f"not checked: {', '.join(unchecked)}"] if unchecked else []))


def judgement(failures: list[str], checked: list[str], unchecked: list[str]) -> str:
    """The verdict in words: FAILS with the failures, or ACCEPTS with its `scope` (an
    acceptance is of the checked claims alone)."""
    if failures:
        return "FAILS: " + "; ".join(failures)
    said = scope(checked, unchecked)
    return f"ACCEPTS ({said})" if said else "ACCEPTS"


def coverage(data: dict[str, Any]) -> str:
    """`coverage N of M pairs`: the pairs (a unary sweep's inputs) a certificate ran, of every
    pair (input) of its dtype."""
    unary = is_unary(data)
    try:
        every = f" of {1 << (8 if unary else 16) * as_dtype(data['dtype']).itemsize:,}"
    except TypeError:
        every = ""
    return f"coverage {lanes(data):,}{every} {'inputs' if unary else 'pairs'}"


def _span_text(span: dict[str, Any]) -> str:
    """What a certificate covered: a range of 16-bit patterns (a unary sweep's range of
    inputs), special pairs and a sample, or a float64 cast's edges and sample."""
    if "edges" in span:
        return (
            f"{span['inputs']:,} inputs, not exhaustive: {span['edges']:,} edges of the target "
            f"({span['scheme']}; the overflow and underflow boundaries; each with its float64 "
            f"neighbours; float64's special values) and a sample of {span['sample']:,} (seed "
            f"{span['seed']})"
        )
    if "x" in span:
        kind = "every input" if span["exhaustive"] else "a restricted range"
        return f"{span['inputs']:,} inputs, {kind} (x {span['x'][0]:#x}..{span['x'][1]:#x})"
    if "lhs" not in span:
        return (
            f"{span['pairs']:,} pairs: every pair of the special values "
            f"({span['special_pairs']:,}) and a sample of {span['sample']:,} (seed "
            f"{span['seed']}); not exhaustive"
        )
    kind = "every pair" if span["exhaustive"] else "a restricted range"
    return (
        f"{span['pairs']:,} pairs, {kind} (lhs {span['lhs'][0]:#06x}..{span['lhs'][1]:#06x}, "
        f"rhs {span['rhs'][0]:#06x}..{span['rhs'][1]:#06x})"
    )


def _pair_text(p: dict[str, Any] | None) -> str:
    """`lhs op rhs -> got (want)` for the text."""
    if not p:
        return "-"
    got = f" gave {p['got_value']}" if "got_value" in p else ""
    want = f", correctly rounded {p['want_value']}" if "want_value" in p else ""
    return f"({p['lhs_value']}, {p['rhs_value']}){got}{want}"


def _input_text(p: dict[str, Any] | None) -> str:
    """`x gave got, correctly rounded want` for the text of a unary certificate."""
    if not p:
        return "-"
    return f"x = {p['x_value']} gave {p['got_value']}, correctly rounded {p['want_value']}"


def build(
    contract: dict[str, Any],
    dtype: str,
    span: dict[str, Any],
    stats: np.ndarray,
    extras: dict[str, Any],
) -> Certificate:
    """The certificate of a merged tally; `extras` holds the digest, block digests, the
    first pairs' results, the machine, versions, seconds and threads."""
    s = named(stats)
    nan_distance = core().NAN_DISTANCE
    data: dict[str, Any] = {
        "kind": KIND,
        "version": VERSION,
        "contract": contract,
        "dtype": dtype,
        "span": span,
        "reference": {
            "exact": "the correctly rounded result (docs/certificates.md, per op)",
            "formula": "the seeds' formula: widen to f32, compute, narrow once",
        },
        "histogram": {k: s[k] for k in HISTOGRAM},
        "max_ulp": "inf" if s["max_ulp"] >= nan_distance else s["max_ulp"],
        "formula": {"equal": s["formula_equal"]},
        "differences": {k: s[k] for k in DIFFERENCES if s[k]},
        "specials": {k: s[k] for k in SPECIALS},
        "nan_forms": [
            {"mask": m, "forms": describe_forms(m), "pairs": n}
            for m, n in sorted(nan_forms(stats).items())
        ],
        "classes": class_cells(stats),
        **extras,
    }
    return Certificate(data)
