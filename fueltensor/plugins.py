"""Finding the installed provider plugins (the `fueltensor.providers` entry-point group)
without paying for importlib.metadata where no distribution mentions the group."""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder
from typing import TYPE_CHECKING, Final

from .fkc.files import read_regular

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

PROVIDER_GROUP: Final = "fueltensor.providers"
"""Entry-point group: each entry loads an object with PROVIDER, ENTRY_POINTS and DOCUMENTS
(ENTRY_POINTS may be an `ft.load_library` result: a compiled library's kernels)."""


def plugin_entry_points() -> list[EntryPoint]:
    """The `fueltensor.providers` entry points of the installed distributions.

    Same result as `entry_points(group=...)`, but only distributions whose entry_points.txt
    mentions the group are parsed, and importlib.metadata (~20 ms to import) is loaded only
    when some distribution on sys.path mentions the group at all.
    """
    if not group_mentioned():
        return []
    from importlib.metadata import distributions

    found: dict[str, EntryPoint] = {}
    seen: set[str] = set()
    for dist in distributions():
        text = dist.read_text("entry_points.txt")
        if not text or PROVIDER_GROUP not in text or dist.name in seen:
            continue
        seen.add(dist.name)
        for ep in dist.entry_points.select(group=PROVIDER_GROUP):
            found.setdefault(ep.name, ep)
    return list(found.values())


def group_mentioned() -> bool:
    """Whether a `*.dist-info`/`*.egg-info` entry_points.txt in a sys.path directory names the
    provider group. Conservatively True wherever importlib.metadata could see more than that:
    a sys.path entry that is a file (zip, egg), an `*.egg` directory, or another finder that
    lists distributions."""
    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    for entry in sys.path:
        base = entry or "."
        try:
            names = os.listdir(base)
        except NotADirectoryError:
            return True
        except OSError:
            continue
        for name in names:
            if name.endswith(".egg"):
                return True
            if name.endswith((".dist-info", ".egg-info")):
                try:
                    if PROVIDER_GROUP.encode() in read_regular(
                        os.path.join(base, name, "entry_points.txt")
                    ):
                        return True
                except OSError:
                    continue
    return False
