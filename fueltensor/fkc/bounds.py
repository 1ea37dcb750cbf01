"""The bounds every contract field is held to at load, so no value a document can hold fails
later, far from its file and line (an alignment of 2**62 would otherwise load and make every
call ask for exabytes). Cost formulas have theirs in `fkc.formula` (length, depth, literals)
and are priced per call: a formula that fails for one call rejects its contract for that call.

`fkc.validate` calls these while it builds a contract; each returns None when the value is
within its bound, else the words of the refusal (validate adds the file, line and field).
"""

from __future__ import annotations

import math
import re
from typing import Final

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


_CONTROL: Final = re.compile("[\x00-\x1f\x7f]")
"""An ASCII control character (a regex: the per-character scan in Python took a third of a
first operation's contract loading)."""
_CONTROL_TEXT: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""An ASCII control character but tab and newline, which free text may hold."""


def string_refusal(value: str, *, multiline: bool = False) -> str | None:
    """Why a string field is out of bounds (too long, or a control character that would
    garble a terminal or a table), or None."""
    limit = MAX_TEXT if multiline else MAX_STRING
    if len(value) > limit:
        return f"{len(value)} characters long; accepted: at most {limit}"
    bad = (_CONTROL_TEXT if multiline else _CONTROL).search(value)
    if bad is not None:
        return f"holds the control character {bad.group()!r}; accepted: printable text"
    return None


def number_refusal(value: float) -> str | None:
    """Why a declared number (a precision bound, an overhead) is out of bounds, or None."""
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        bits = int(value).bit_length()
        return f"an integer of {bits} bits is beyond a float; accepted: a finite number >= 0, or ~"
    if not finite:
        return f"{value!r} is not finite; accepted: a finite number >= 0, or ~ for none"
    return None
