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


def _chunks(text: str) -> list[str]:
    """`text` cut after every space, comma, underscore or hyphen: where a cell may wrap."""
    return [c for c in re.split(r"(?<=[ ,_-])", text) if c]


def _floor(text: str) -> int:
    """The narrowest a cell goes without breaking a chunk."""
    return max((len(c.rstrip()) for c in _chunks(text)), default=0)


def _wrap(text: str, width: int) -> list[str]:
    """`text` packed greedily into lines of `width`, chunks longer than that cut."""
    lines = [""]
    for chunk in _chunks(text):
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


def fit_table(
    rows: Sequence[Sequence[str]],
    width: int | None = _UNSET,
    rule: bool = True,
    optional: Sequence[str] = (),
    whole: Sequence[str] = (),
) -> str:
    """Left-aligned columns two spaces apart, the first row the header (underlined with `rule`).

    When the table is wider than `width` (default: `current_width()`), the widest columns are
    narrowed (the first one last) and their cells wrapped after spaces, commas, underscores and
    hyphens; if that is not enough, the `optional` columns (header names) are left out in that
    order, and a last line names them. Cells of the `whole` columns are never broken.
    """
    limit = current_width() if width == _UNSET else width
    header = list(rows[0])
    keep = list(range(len(header)))
    widths = [max(len(r[i]) for r in rows) for i in keep]
    if limit is not None and sum(widths) + len(GAP) * (len(widths) - 1) > limit:
        drop = [header.index(name) for name in optional if name in header]
        fitted = None
        for whole_first in (True, False):  # break the first column only as a last resort
            for dropped in range(len(drop) + 1):
                keep = [i for i in range(len(header)) if i not in drop[:dropped]]
                natural = [max(_floor(header[i]), *(len(r[i]) for r in rows[1:])) for i in keep]
                floors = [max(_floor(r[i]) for r in rows) for i in keep]
                for k, i in enumerate(keep):
                    if header[i] in whole or (whole_first and k == 0):
                        floors[k] = natural[k]
                fitted = _fit(natural, floors, limit)
                if fitted is not None:
                    break
            if fitted is not None:
                break
        widths = fitted or _fit(natural, [1] * len(keep), limit) or natural
    lines: list[str] = []
    for n, row in enumerate(rows):
        cells = [_wrap(row[i], w) for i, w in zip(keep, widths, strict=True)]
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
        lines += textwrap.wrap(note, limit) if limit else [note]
    return "\n".join(lines)


def fit_lines(text: str, width: int | None = _UNSET) -> str:
    """Wrap each line of `text` that is too long, continuing it indented under its start."""
    limit = current_width() if width == _UNSET else width
    if limit is None:
        return text
    out: list[str] = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        out.extend(
            textwrap.wrap(line, limit, subsequent_indent=indent, break_on_hyphens=False) or [line]
        )
    return "\n".join(out)
