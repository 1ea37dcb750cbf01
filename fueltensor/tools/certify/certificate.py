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

from fueltensor.core.errors import plural
from fueltensor.testing import float_format, format_value
from fueltensor.tools.certify.binary import binary_identity as binary_identity
from fueltensor.tools.certify.binary import binary_text
from fueltensor.tools.certify.tally import class_cells, core, describe_forms, named, nan_forms

KIND: Final = "fueltensor certificate"
VERSION: Final = 1
HISTOGRAM: Final = ("exact", *(f"ulp{k}" for k in range(9)), "beyond")
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
        """Read a certificate's JSON; ValueError naming the file when it is not one."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: not a readable certificate: {e}") from e
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ValueError(f"{path}: not a fueltensor certificate (no kind: {KIND!r})")
        if data.get("version") != VERSION:
            raise ValueError(f"{path}: certificate version {data.get('version')}, not {VERSION}")
        return cls(data)

    def text(self) -> str:
        """The short text: what was swept, the histogram, the maximum and its pair, the formula,
        the special-value outcomes seen, the digest."""
        d = self.data
        c = d["contract"]
        lines = [
            f"{c['name']} ({c['provider']}, {d['dtype']}): {_span_text(d['span'])}",
            (
                "ULP from the correctly rounded result: "
                if "formula" in d
                else f"ULP from the judge's reference ({d['reference']['exact']}): "
            )
            + ", ".join(f"{k.removeprefix('ulp')}: {v:,}" for k, v in d["histogram"].items() if v),
            f"max {d['max_ulp']} ULP, first at {_pair_text(d['max_pair'])}",
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
        lines += [f"  NaN from {row['forms']}: {row['pairs']:,}" for row in d.get("nan_forms", ())]
        binary = d.get("binary")
        lines += [
            f"digest {d['digest']}",
            "binary: " + (binary_text(binary) if binary else "not bound to a binary"),
            f"{d['machine']['cpu'] if isinstance(d['machine'], dict) else 'several machines'}; "
            f"fueltensor {d['versions']['fueltensor']}; {d['seconds']:.1f} s on "
            f"{plural(d['threads'], 'thread')}",
        ]
        verdict = d.get("verdict")
        if verdict is not None:
            lines.append("judge: " + ("ACCEPTS" if not verdict else "FAILS: " + "; ".join(verdict)))
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
        fig.suptitle(f"{self.name} ({self.data['dtype']}): {self.data['span']['pairs']:,} pairs")
        plt.close(fig)
        return fig


def _span_text(span: dict[str, Any]) -> str:
    """What a certificate covered: a range of 16-bit patterns, or special pairs and a sample."""
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
