"""Text tables that fit the terminal: columns narrowed by wrapping text inside their cells.

The width is the terminal's when output goes to one (or `COLUMNS` is set), unlimited when it is
piped to a file or another program (as `ls` and `git` do), and unlimited inside `table_width(None)`
(the command line's `--wide`).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

GAP: Final = "  "

_UNSET: Final = -1
_WIDTH: ContextVar[int | None] = ContextVar("fueltensor_table_width", default=_UNSET)


def terminal_width() -> int | None:
    """Columns of the terminal (or `COLUMNS`), None when output is not a terminal."""
    if os.environ.get("COLUMNS", "").strip().isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def current_width() -> int | None:
    """The width tables are fitted to: `table_width`'s inside one, else `terminal_width()`."""
    width = _WIDTH.get()
    return terminal_width() if width == _UNSET else width


@contextmanager
def table_width(width: int | None) -> Iterator[None]:
    """Fit the tables made inside the block to `width` columns (None: never wrap)."""
    token = _WIDTH.set(width)
    try:
        yield
    finally:
        _WIDTH.reset(token)


KEYS: Final = frozenset(
    {"kernel", "kernels", "provider", "op", "op_kind", "dtype", "dtypes", "verdict"}
)
"""Headers of the columns that name things: their cells break only between names (after a space
or a comma), never inside one."""
FORMULAS: Final = frozenset({"bytes_moved", "flops", "formula"})
"""Headers of the columns that hold cost formulas: their cells break only before an operator."""
READABLE: Final = 20
"""The narrowest a wrapped text column goes: narrower, prose stands in stacks of one word."""

_SPLIT: Final = {
    "text": re.compile(r"(?<=[ ,_-])"),
    "key": re.compile(r"(?<=[ ,])"),
    "formula": re.compile(r"(?<= )(?=[-+*/] )"),
}
"""Where a cell may wrap: after a space, comma, underscore or hyphen (text); after a space
or a comma (names and headers); before a binary operator (formulas)."""


def _kind(header: str, whole: Sequence[str]) -> str:
    """How the cells under `header` may wrap: "key", "formula" or "text"."""
    if header in KEYS or header in whole:
        return "key"
    return "formula" if header in FORMULAS else "text"


def _chunks(text: str, kind: str = "text") -> list[str]:
    """`text` cut where a cell of `kind` may wrap."""
    return [c for c in _SPLIT[kind].split(text) if c]


def _floor(text: str, kind: str = "text") -> int:
    """The narrowest a cell goes without breaking a chunk."""
    return max((len(c.rstrip()) for c in _chunks(text, kind)), default=0)


def _wrap(text: str, width: int, kind: str = "text") -> list[str]:
    """`text` packed greedily into lines of `width`, chunks longer than that cut."""
    lines = [""]
    for chunk in _chunks(text, kind):
        if len((lines[-1] + chunk).rstrip()) > width and lines[-1]:
            lines.append("")
        lines[-1] += chunk
        while len(lines[-1].rstrip()) > width:
            lines[-1], rest = lines[-1][:width], lines[-1][width:]
            lines.append(rest)
    return [line.rstrip() for line in lines]


def _fit(natural: list[int], floors: list[int], width: int) -> list[int] | None:
    """Column widths that fit `width`, narrowing the widest first down to `floors`; None when
    even the floors do not fit."""
    budget = width - len(GAP) * (len(natural) - 1)
    if sum(floors) > budget:
        return None
    widths = list(natural)
    while sum(widths) > budget:
        i = max((j for j in range(len(widths)) if widths[j] > floors[j]), key=widths.__getitem__)
        widths[i] -= 1
    return widths


def _limits(rows: Sequence[Sequence[str]], i: int, kind: str) -> tuple[int, int]:
    """Column `i`'s natural width and the narrowest it may be wrapped to: its header's longest
    word, its names unbroken, and a text column no narrower than `READABLE` (or its cells)."""
    header, cells = rows[0][i], [r[i] for r in rows[1:]]
    longest = max(map(len, cells), default=0)
    natural = max(_floor(header, "key"), longest)
    floor = max([_floor(header, "key"), *(_floor(c, kind) for c in cells)])  # a header alone too
    if kind == "text":
        floor = max(floor, min(longest, READABLE))
    return natural, floor


def _layout(
    rows: Sequence[Sequence[str]], limit: int, kinds: list[str], drop: list[int]
) -> tuple[list[int], list[int]]:
    """The columns kept and their widths: the table as it is if it fits, else wrapped, else
    with the `drop` columns left out one by one in that order; only when nothing else fits are
    cells broken wherever they must."""
    everything = list(range(len(rows[0])))
    for dropped in range(len(drop) + 1):
        keep = [i for i in everything if i not in drop[:dropped]]
        limits = [_limits(rows, i, kinds[i]) for i in keep]
        fitted = _fit([n for n, _ in limits], [f for _, f in limits], limit)
        if fitted is not None:
            return keep, fitted
    natural = [n for n, _ in limits]
    return keep, _fit(natural, [1] * len(keep), limit) or natural


def fit_table(
    rows: Sequence[Sequence[str]],
    width: int | None = _UNSET,
    rule: bool = True,
    optional: Sequence[str] = (),
    whole: Sequence[str] = (),
) -> str:
    """Left-aligned columns two spaces apart, the first row the header (underlined with `rule`).

    When the table is wider than `width` (default: `current_width()`), the widest columns are
    narrowed and their cells wrapped: names (`KEYS` and `whole` columns) and headers only
    between words, formulas only before an operator, text after spaces, commas, underscores
    and hyphens. If that is not enough, the `optional` columns (header names) are left out in
    that order, then the others from the right, name columns last and the first never, and a
    last line names them; only when the first column alone is too wide are cells broken.
    """
    limit = current_width() if width == _UNSET else width
    header = list(rows[0])
    kinds = [_kind(h, whole) for h in header]
    keep = list(range(len(header)))
    widths = [max(len(r[i]) for r in rows) for i in keep]
    if limit is not None and sum(widths) + len(GAP) * (len(widths) - 1) > limit:
        drop = [header.index(name) for name in optional if name in header]
        for key in (False, True):  # name columns last, and never the first column
            drop += [i for i in reversed(keep[1:]) if i not in drop and (kinds[i] == "key") == key]
        keep, widths = _layout(rows, limit, kinds, drop)
    lines: list[str] = []
    for n, row in enumerate(rows):
        cells = [
            _wrap(row[i], w, "key" if n == 0 else kinds[i])
            for i, w in zip(keep, widths, strict=True)
        ]
        for k in range(max(map(len, cells))):
            parts = [
                (c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)
            ]
            lines.append(GAP.join(parts).rstrip())
        if n == 0 and rule:
            lines.append(GAP.join("-" * w for w in widths))
    hidden = [header[i] for i in range(len(header)) if i not in keep]
    if hidden:
        note = f"(not shown at {limit} columns: {', '.join(hidden)}; --wide shows every column)"
        lines += textwrap.wrap(note, limit, break_long_words=False) if limit else [note]
    return "\n".join(lines)


def fit_lines(text: str, width: int | None = _UNSET) -> str:
    """Wrap each line of `text` that is too long between words, continuing it with a hanging
    indent (four columns past the line's own)."""
    limit = current_width() if width == _UNSET else width
    if limit is None:
        return text
    out: list[str] = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        wrapped = textwrap.wrap(
            line,
            limit,
            subsequent_indent=indent,
            break_on_hyphens=False,
            break_long_words=False,
        )
        out.extend(wrapped or [line])
    return "\n".join(out)
