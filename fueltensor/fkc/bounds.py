"""The bounds every contract field is held to at load, so no value a document can hold fails
later, far from its file and line (an alignment of 2**62 would otherwise load and make every
call ask for exabytes).

`fkc.validate` calls these while it builds a contract; each returns None when the value is
within its bound, else the words of the refusal (validate adds the file, line and field).
"""

from __future__ import annotations

import math
from typing import Final

from ..core.errors import ContractError
from .formula import Formula

MAX_ALIGNMENT_BYTES: Final = 4096
"""Largest `caps.alignment_bytes`: a page. An output is over-allocated by its alignment."""
MAX_ACCESS_GRANULARITY_BITS: Final = 8 * MAX_ALIGNMENT_BYTES
"""Largest `caps.access_granularity_bits`: one page's bits."""
MAX_RANK: Final = 64
"""Largest `rank` an input may require: NumPy's most dimensions."""
MAX_STRING: Final = 1024
"""Longest one-line string field (names, rules, providers, entry points), in characters."""
MAX_TEXT: Final = 20_000
"""Longest free-text field (blurb, notes), in characters."""
PROBE_SIZES: Final = (0, 1, 2**40)
"""Element counts a cost formula is evaluated at when it loads (empty, one element, a tebi)."""
PROBE_ITEMSIZES: Final = (1, 8)
"""Element sizes (`dtype_bytes`) a cost formula is evaluated at when it loads."""


def string_refusal(value: str, *, multiline: bool = False) -> str | None:
    """Why a string field is out of bounds (too long, or a control character that would
    garble a terminal or a table), or None."""
    limit = MAX_TEXT if multiline else MAX_STRING
    if len(value) > limit:
        return f"{len(value)} characters long; accepted: at most {limit}"
    allowed = "\n\t" if multiline else ""
    bad = next((c for c in value if (c < " " or c == "\x7f") and c not in allowed), None)
    if bad is not None:
        return f"holds the control character {bad!r}; accepted: printable text"
    return None


def number_refusal(value: float) -> str | None:
    """Why a declared number (a precision bound, an overhead) is out of bounds, or None."""
    if not math.isfinite(value):
        return f"{value!r} is not finite; accepted: a finite number >= 0, or ~ for none"
    return None


def formula_refusal(formula: Formula, variables: frozenset[str]) -> str | None:
    """Why a cost formula cannot price every call (it is negative, not finite or divides by
    zero at some probed size), or None; each variable takes its probe value, counts are n."""
    for n in PROBE_SIZES:
        for itemsize in PROBE_ITEMSIZES:
            env = {v: float(itemsize if v == "dtype_bytes" else n) for v in variables}
            try:
                value = formula.evaluate(env)
            except ContractError:
                return f"{formula.raw!r} divides by zero or overflows at n={n}"
            if value < 0:
                return f"{formula.raw!r} is {value:g} at n={n}; accepted: a cost >= 0 at every n"
    return None
