"""The tally of a sweep, in Python: the compiled core's int64 array read by name, and merged.

`_certify.tally` adds pairs to one int64 array (`_certify.STATS` names its scalars, the operand
class table follows). Two tallies of disjoint pair sets merge into the tally of their union,
whatever the order (`merge`): counters add, and each "first pair" mark keeps the earliest pair
in the sweep's order (lhs pattern, then rhs pattern). So blocks may be computed on any thread,
machine or day and the certificate comes out the same.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from fueltensor.testing import VALUE_CLASSES, float_format
from fueltensor.testing.values import _classes


def core() -> Any:
    """The compiled core, or ImportError saying how to build it."""
    try:
        from fueltensor.ext import _certify
    except ImportError as e:
        raise ImportError(
            "fueltensor certify needs its compiled core (fueltensor.ext._certify), which was "
            "not built here: install a C compiler and reinstall fueltensor (see the build's "
            "message); a NumPy sweep of 2**32 pairs would take hours"
        ) from e
    return _certify


FIRSTS: Final = (("max_lhs", "max_rhs"), ("formula_lhs", "formula_rhs"))
"""The (lhs, rhs) entries that mark a first pair (-1: none)."""


def fresh() -> np.ndarray:
    """An empty tally: zero counts, no first pairs."""
    c = core()
    stats = np.zeros(c.N_STATS, np.int64)
    for lhs, rhs in FIRSTS:
        stats[c.STATS.index(lhs)] = stats[c.STATS.index(rhs)] = -1
    return stats


def class_table(dtype: object) -> np.ndarray:
    """Each 16-bit pattern's value class as its index in `testing.VALUE_CLASSES` (uint8)."""
    fmt = float_format(dtype)
    names = _classes(np.arange(1 << 16, dtype=np.uint32), fmt)
    index = {name: i for i, name in enumerate(VALUE_CLASSES)}
    return np.array([index[str(n)] for n in names], np.uint8)


def _earlier(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether pair a comes before pair b in the sweep (a mark of -1 comes never)."""
    if a[0] < 0:
        return False
    return b[0] < 0 or a < b


def merge(total: np.ndarray, part: np.ndarray) -> None:
    """Add the tally `part` into `total` in place (see the module docstring)."""
    c = core()
    at = c.STATS.index
    mx, ml, mr = at("max_ulp"), at("max_lhs"), at("max_rhs")
    fl, fr = at("formula_lhs"), at("formula_rhs")
    marks = total[[mx, ml, mr, fl, fr]].copy()
    t_max, p_max = (
        (int(total[mx]), (int(total[ml]), int(total[mr]))),
        (
            int(part[mx]),
            (int(part[ml]), int(part[mr])),
        ),
    )
    total += part
    total[[mx, ml, mr, fl, fr]] = marks
    if p_max[1][0] >= 0 and (
        t_max[1][0] < 0 or p_max[0] > t_max[0] or (p_max[0] == t_max[0] and p_max[1] < t_max[1])
    ):
        total[[mx, ml, mr]] = [p_max[0], *p_max[1]]
    if _earlier((int(part[fl]), int(part[fr])), (int(total[fl]), int(total[fr]))):
        total[[fl, fr]] = part[[fl, fr]]


def named(stats: np.ndarray) -> dict[str, int]:
    """The scalar entries of a tally by name."""
    return {name: int(v) for name, v in zip(core().STATS, stats, strict=False)}


def class_cells(stats: np.ndarray) -> list[dict[str, object]]:
    """The operand-class table's non-empty cells: lhs class, rhs class, pairs, pairs giving the
    correctly rounded bits, pairs giving the formula's bits."""
    c = core()
    table = stats[c.CLASS_TABLE : c.NAN_FORMS].reshape(c.MAX_CLASSES, c.MAX_CLASSES, 3)
    return [
        {
            "lhs": VALUE_CLASSES[i],
            "rhs": VALUE_CLASSES[j],
            "pairs": int(table[i, j, 0]),
            "exact": int(table[i, j, 1]),
            "formula": int(table[i, j, 2]),
        }
        for i in range(len(VALUE_CLASSES))
        for j in range(len(VALUE_CLASSES))
        if table[i, j, 0]
    ]


FORM_NAMES: Final = ("kept", "quieted", "canonical", "kept, sign flipped", "quieted, sign flipped")
"""The forms of a NaN result made from one NaN operand, in the core's bit order (certify.h)."""
FIXED_NAMES: Final = ("positive_canonical", "negative_canonical", "all_ones")
"""The fixed NaN patterns, in the core's bit order after both operands' forms."""


def nan_forms(stats: np.ndarray) -> dict[int, int]:
    """The NaN results of NaN references by form mask (certify.h): mask -> pairs, nonzero ones."""
    table = stats[core().NAN_FORMS :]
    return {int(m): int(table[m]) for m in np.flatnonzero(table)}


def form_bits(mask: int) -> dict[str, bool]:
    """A form mask spelled out: "lhs kept", ..., "rhs quieted, sign flipped", the fixed
    patterns, "lhs NaN", "rhs NaN"."""
    names = [f"{side} {form}" for side in ("lhs", "rhs") for form in FORM_NAMES]
    names += [*FIXED_NAMES, "lhs NaN", "rhs NaN"]
    if len(FORM_NAMES) != core().FORMS_PER_OPERAND:
        raise ImportError("fueltensor.ext._certify's NaN forms are not FORM_NAMES: rebuild it")
    return {name: bool(mask >> bit & 1) for bit, name in enumerate(names)}


def describe_forms(mask: int) -> str:
    """One line for a form mask: which operands were NaN, and the forms the result matches."""
    bits = form_bits(mask)
    operands = [side for side in ("lhs", "rhs") if bits[f"{side} NaN"]]
    source = " and ".join(operands) + " NaN" if operands else "invalid operation"
    forms = [n for n, on in bits.items() if on and not n.endswith(" NaN")]
    return f"{source}: {', '.join(forms) or 'another NaN'}"


def sparse(stats: np.ndarray) -> dict[str, int]:
    """A tally as its nonzero entries (index -> value), for the state file."""
    return {str(int(i)): int(stats[i]) for i in np.flatnonzero(stats)}


def dense(entries: dict[str, int]) -> np.ndarray:
    """The tally `sparse` wrote."""
    stats = np.zeros(core().N_STATS, np.int64)
    for i, v in entries.items():
        stats[int(i)] = v
    return stats
