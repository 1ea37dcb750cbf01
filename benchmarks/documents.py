"""Write generated contract documents, or show how the checked-in ones differ: the helper of
the scripts that write FKC documents from a template or from measurement (cast_contracts.py,
framework_casts.py --write), so each says only what its documents hold. (framework_comparisons.py
and framework_selections.py still write in place, probing a draft first: no diff mode yet.)"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The checkout: contracts/ sits under it."""


def contract_path(name: str) -> Path:
    """contracts/<name>.md."""
    return ROOT / "contracts" / f"{name}.md"


def settle(documents: Mapping[Path, str], write: bool) -> int:
    """Write each document (`write`), or print a unified diff of every checked-in one that
    differs from what was made; 1 when some differ and nothing was written, else 0."""
    stale = 0
    for at, made in documents.items():
        have = at.read_text(encoding="utf-8") if at.exists() else ""
        if write:
            if have != made:
                at.write_text(made, encoding="utf-8")
        elif have != made:
            stale += 1
            name = str(at.relative_to(ROOT))
            sys.stdout.writelines(
                difflib.unified_diff(
                    have.splitlines(True), made.splitlines(True), f"a/{name}", f"b/{name}"
                )
            )
    return 1 if stale else 0
