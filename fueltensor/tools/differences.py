"""How two providers' results differ, by class: what `compare_backends` reports instead of raw
mismatch counts, and what its plot draws (a class x provider matrix).

Each differing element gets the class `testing.difference_classes` gives its pair of bit
patterns, read for the operation: a NaN's sign and payload are one class, `NaN payload`; on a
remainder a signed zero or a flipped sign is the `remainder sign` (the sign convention of a
zero or an infinite-divisor remainder, not an error of magnitude).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

import numpy as np

from fueltensor.ops import OpKind
from fueltensor.testing import (
    EQUAL,
    INFINITE,
    NAN_PAYLOAD,
    NAN_SIGN,
    NAN_VS_NUMBER,
    ROUNDING,
    SIGN,
    SIGNED_ZERO,
    SUBNORMAL_DIFFERENCE,
    VALUE,
    difference_classes,
)
from fueltensor.tools.display import html_table
from fueltensor.tools.textwidth import fit_lines, fit_table

if TYPE_CHECKING:
    from fueltensor.tools.comparisons import Comparison

REMAINDER_SIGN: Final = "remainder sign"
CLASSES: Final = (
    NAN_PAYLOAD,
    NAN_VS_NUMBER,
    SIGNED_ZERO,
    REMAINDER_SIGN,
    INFINITE,
    SUBNORMAL_DIFFERENCE,
    SIGN,
    ROUNDING,
    VALUE,
)
"""The classes of a comparison's differences, in the order reports list them."""
_SIGNS: Final = (SIGNED_ZERO, SIGN)


def difference_counts(op_kind: str | None, got: np.ndarray, want: np.ndarray) -> dict[str, int]:
    """How many elements of `got` differ from `want` in each class (`CLASSES`, in that order;
    classes no element falls in left out)."""
    found = difference_classes(got, want).reshape(-1)
    found = np.where(found == NAN_SIGN, NAN_PAYLOAD, found)
    if op_kind == OpKind.REM:
        found = np.where(np.isin(found, _SIGNS), REMAINDER_SIGN, found)
    names, counts = np.unique(found[found != EQUAL], return_counts=True)
    by_name = dict(zip(names.tolist(), counts.tolist(), strict=True))
    return {c: by_name[c] for c in CLASSES if c in by_name}


def by_class(comparisons: Iterable[Comparison]) -> dict[str, dict[str, int]]:
    """Provider (of the kernel compared with the default one) -> class -> differing elements,
    summed over the comparisons; providers in the order they first appear."""
    matrix: dict[str, dict[str, int]] = {}
    for c in comparisons:
        if not c.compared:
            continue
        row = matrix.setdefault(c.provider, {})
        for name, n in c.classes.items():
            row[name] = row.get(name, 0) + n
    return matrix


def class_rows(matrix: Mapping[str, Mapping[str, int]]) -> list[tuple[str, ...]]:
    """The class x provider table: a header (`difference`, the providers), then one row per
    class some provider differs in, the counts of differing elements (blank for none)."""
    providers = list(matrix)
    rows: list[tuple[str, ...]] = [("difference", *providers)]
    for name in CLASSES:
        counts = [matrix[p].get(name, 0) for p in providers]
        if any(counts):
            rows.append((name, *(f"{n:,}" if n else "" for n in counts)))
    return rows


CAPTION: Final = "differing elements by class and provider, each against the default kernel"


def class_text(comparisons: Iterable[Comparison]) -> str:
    """The class x provider table as text fitted to the terminal, under its caption ("" when
    no element differs)."""
    rows = class_rows(by_class(comparisons))
    return "" if len(rows) == 1 else f"{fit_lines(CAPTION + ':')}\n{fit_table(rows)}"


def class_html(comparisons: Iterable[Comparison]) -> str:
    """The class x provider table as HTML ("" when no element differs)."""
    head, *rows = class_rows(by_class(comparisons))
    return html_table(head, rows, caption=CAPTION) if rows else ""
