"""Type stub of the certifier's compiled core, built from `src/certify/` (one translation unit)."""

from typing import Any

OPS: tuple[str, ...]
"""The op names, in the order `tally` and `references` number them (abi.h's, as `_native.OPS`)."""
STATS: tuple[str, ...]
"""The names of the tally's scalar entries, in order; the operand-class table follows them."""
N_STATS: int
"""The tally's length (int64 entries)."""
CLASS_TABLE: int
"""Where the operand-class table starts: MAX_CLASSES x MAX_CLASSES x (pairs, exact, formula)."""
MAX_CLASSES: int
HIST_ULPS: int
"""Finite ULP distances with a histogram bucket of their own (1 .. HIST_ULPS)."""
NAN_DISTANCE: int
"""The distance a NaN against a number counts as (above every finite 16-bit distance)."""

def tally(
    op: int, exponent: int, mantissa: int, lhs: Any, rhs: Any, got: Any, classes: Any, stats: Any, /
) -> None:
    """Add the pairs (lhs[i], rhs[i]) -> got[i] (2-byte patterns of the format with those
    exponent and fraction bits) to the int64 tally `stats`; `classes`: each pattern's class."""

def references(
    op: int, exponent: int, mantissa: int, lhs: Any, rhs: Any, exact: Any, formula: Any, /
) -> None:
    """Write each pair's correctly rounded result into `exact` and the seeds' formula's bits
    into `formula`."""
