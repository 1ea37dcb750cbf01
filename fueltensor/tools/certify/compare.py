"""`fueltensor certify --compare A.json B.json`: did two machines or two versions give the same
bits, and where not.

Equal digests over the same op, dtype and span mean every output is bit-identical (two
providers, two machines or two versions). Else the block digests name the blocks (`sweep.ROWS`
lhs patterns each) whose outputs differ, and the tallies show how the distributions moved. Two
sampled (F32/F64) certificates of the same sample compare by digest and tallies: they have no
blocks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fueltensor.core.dtypes import as_dtype
from fueltensor.core.errors import plural
from fueltensor.tools.certify.certificate import Certificate, is_unary
from fueltensor.tools.certify.sweep import Span
from fueltensor.tools.certify.unary import UnarySpan

SHOWN_BLOCKS = 8
"""Differing blocks named in the text; the rest are counted."""


@dataclass
class Comparison:
    """The comparison of two certificates."""

    same_bits: bool
    comparable: list[str] = field(default_factory=list)
    """Why the two certify different things (contract, dtype, span), empty when they do not."""
    blocks: list[tuple[int, int]] = field(default_factory=list)
    """The lhs ranges of the blocks whose outputs differ."""
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    """Tally entries that differ: (A's, B's)."""
    side: str = "lhs"
    """What a block's range is of: lhs patterns, or a unary sweep's inputs (`x`)."""

    def text(self) -> str:
        """What a person reads."""
        if self.comparable:
            return "not comparable: " + "; ".join(self.comparable)
        if self.same_bits:
            return "same bits: the two digests are equal"
        shown = ", ".join(
            f"{self.side} {lo:#06x}..{hi:#06x}" for lo, hi in self.blocks[:SHOWN_BLOCKS]
        )
        more = len(self.blocks) - SHOWN_BLOCKS
        lines = [
            f"different bits in {plural(len(self.blocks), 'block')}: {shown}"
            + (f" and {more} more" if more > 0 else "")
            if self.blocks
            else "different bits (a sampled certificate has no blocks)"
        ]
        lines += [f"  {k}: {a} -> {b}" for k, (a, b) in self.changes.items()]
        return "\n".join(lines)


def _flat(cert: Certificate) -> dict[str, Any]:
    """The tally entries of a certificate, by one name each."""
    d = cert.data
    flat: dict[str, Any] = {"max_ulp": d["max_ulp"]}
    if "formula" in d:  # a sampled (F32/F64) certificate has no formula count
        flat["formula equal"] = d["formula"]["equal"]
    flat |= {f"histogram {k}": v for k, v in d["histogram"].items()}
    flat |= {f"difference {k}": v for k, v in d["differences"].items()}
    flat |= {f"special {k}": v for k, v in d["specials"].items()}
    return flat


def _ranges(cert: Certificate) -> list[tuple[int, int]]:
    """The lhs range (a unary sweep's input range) of each block of a swept certificate's span
    (none for a sampled one, a float64 cast's among them)."""
    span = cert.data["span"]
    if "x" in span:
        width = 8 * as_dtype(cert.data["dtype"]).itemsize
        lo, hi = span["x"]
        return UnarySpan(lo, hi, width).blocks()
    return Span(tuple(span["lhs"]), tuple(span["rhs"])).blocks() if "lhs" in span else []


def _broken(cert: Certificate, label: str) -> list[str]:
    """A certificate whose block digests do not match its span's blocks, one line."""
    digests = cert.data.get("block_digests", [])
    blocks = len(_ranges(cert))
    if len(digests) == blocks:
        return []
    return [f"{label} holds {len(digests)} block digests, its span has {blocks} blocks"]


def _blocks(a: Certificate, b: Certificate) -> list[tuple[int, int]]:
    """The lhs range of each block whose digests differ."""
    pairs = zip(a.data.get("block_digests", []), b.data.get("block_digests", []), strict=True)
    return [r for r, (x, y) in zip(_ranges(a), pairs, strict=True) if x != y]


def compare(a: Certificate, b: Certificate) -> Comparison:
    """Compare two certificates (see the module docstring)."""
    problems = [
        f"{what}: {a.data[key] if sub is None else a.data[key][sub]} against "
        f"{b.data[key] if sub is None else b.data[key][sub]}"
        for what, key, sub in (
            ("op", "contract", "op_kind"),
            ("dtype", "dtype", None),
            ("span", "span", None),
        )
        if (a.data[key] if sub is None else a.data[key][sub])
        != (b.data[key] if sub is None else b.data[key][sub])
    ]
    problems += _broken(a, "A") + _broken(b, "B")
    if problems:
        return Comparison(False, problems)
    if a.digest == b.digest:
        return Comparison(True)
    fa, fb = _flat(a), _flat(b)
    changes = {k: (fa.get(k, 0), fb.get(k, 0)) for k in dict.fromkeys([*fa, *fb])}
    changes = {k: v for k, v in changes.items() if v[0] != v[1]}
    return Comparison(False, [], _blocks(a, b), changes, "x" if is_unary(a.data) else "lhs")
