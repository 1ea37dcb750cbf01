"""A per-user cache of validated contracts, stored as JSON data, so a process skips YAML + checks.

Reading and validating the bundled documents costs tens of milliseconds, most of the first
operation's budget. A document's validated contracts are written once as plain JSON (never
pickle) under a name derived from the sha256 of the document's bytes and of the code that reads
documents, so an edited document or a changed reader never meets an old entry; an entry that
is unreadable, corrupt or mismatched is ignored and rewritten. Validation errors never come
from here: a document that fails is not cached, so it fails with its file and line every time.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import sys
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from .formula import Formula
from .schema import (
    LAYOUT_FLAGS,
    Caps,
    Cost,
    InputSpec,
    KernelContract,
    OutputSpec,
    Precision,
    Provider,
    Rule,
    ShapeConstraint,
    Source,
)

FORMAT: Final = 1
"""Layout of the JSON entries; bumped when `encode` changes shape."""
ENV_VAR: Final = "FUELTENSOR_CACHE_DIR"
"""Overrides the cache directory; set it to the empty string to turn the cache off."""
Loaded = tuple[Provider, tuple[KernelContract, ...]]


def cache_dir() -> Path | None:
    """Where entries live: $FUELTENSOR_CACHE_DIR, else the user's cache directory; None = off."""
    chosen = os.environ.get(ENV_VAR)
    if chosen is not None:
        return Path(chosen) if chosen else None
    base = os.environ.get("XDG_CACHE_HOME") or os.environ.get("LOCALAPPDATA")
    root = Path(base) if base else Path.home() / ".cache"
    return root / "fueltensor" / "contracts"


@cache
def reader_fingerprint() -> str | None:
    """sha256 of the package version's reader code (None when the sources cannot be read).

    Stricter than fueltensor's version string: a release or a local edit that changes how
    documents are read changes this, and one that does not keeps the entries valid.
    """
    digest = hashlib.sha256()
    try:
        for name, path in reader_modules().items():
            digest.update(name.encode() + b"\0" + path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


_FROM_IMPORT: Final = re.compile(
    r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|.*)$", re.M
)
"""`from <module> import <names>` statements (names possibly parenthesised over lines)."""


def reader_modules() -> dict[str, Path]:
    """The modules whose code decides what a document means, by name, with their files: every
    module of the fkc package and, transitively, the fueltensor modules they import from.
    Found by reading their import statements, importing nothing (a hit skips the YAML reader)."""
    package = __name__.rpartition(".")[0]
    root = package.partition(".")[0]
    found = pkgutil.iter_modules(sys.modules[package].__path__)
    todo = [package, *(f"{package}.{m.name}" for m in found)]
    files: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        spec = importlib.util.find_spec(name)
        if name in files or spec is None or spec.origin is None:
            continue
        files[name] = Path(spec.origin)
        is_package = spec.submodule_search_locations is not None
        here = name if is_package else name.rpartition(".")[0]
        for source, imported in _FROM_IMPORT.findall(files[name].read_text("utf-8")):
            base = importlib.util.resolve_name(source, here)
            if base.partition(".")[0] == root:
                todo += [base, *_submodules(base, re.findall(r"\w+", imported))]
    return dict(sorted(files.items()))


def _submodules(package: str, names: list[str]) -> list[str]:
    """Those of `names` imported from `package` that are modules of it (`from .. import x`)."""
    spec = importlib.util.find_spec(package)
    where = spec.submodule_search_locations if spec is not None else None
    if not where:
        return []
    modules = {m.name for m in pkgutil.iter_modules(where)}
    return [f"{package}.{n}" for n in names if n in modules]


def _entry(data: bytes) -> Path | None:
    directory = cache_dir()
    code = reader_fingerprint()
    if directory is None or code is None:
        return None
    key = hashlib.sha256(code.encode() + hashlib.sha256(data).digest()).hexdigest()
    return directory / f"{key}.json"


def load(path: str, data: bytes) -> Loaded | None:
    """The cached contracts of the document `data` read from `path`, or None (miss or bad)."""
    entry = _entry(data)
    if entry is None:
        return None
    try:
        obj = json.loads(entry.read_bytes())
        if obj["format"] != FORMAT:
            return None
        return decode(obj, path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent, unreadable or corrupt: rebuilt and rewritten by the caller


def store(data: bytes, provider: Provider, contracts: tuple[KernelContract, ...]) -> None:
    """Write the entry for document `data`; failure to write only costs the next process time."""
    entry = _entry(data)
    if entry is None:
        return
    import tempfile  # only a miss writes; importing it costs the import budget ~5 ms

    text = json.dumps(encode(provider, contracts), separators=(",", ":"))
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, entry)  # atomic: readers see the old entry or the whole new one
    except OSError:
        return


def encode(provider: Provider, contracts: tuple[KernelContract, ...]) -> dict[str, Any]:
    """A document's provider and contracts as JSON data: each contract's `to_dict()` facts plus
    its prose and the lines it was declared on (the path is the reader's, not stored)."""
    return {
        "format": FORMAT,
        "front_matter": provider.to_dict(),
        "contracts": [
            {
                "facts": c.to_dict(),
                "blurb": c.blurb,
                "description": c.description,
                "line": c.source.line,
                "lines": dict(c.source.lines),
            }
            for c in contracts
        ],
    }


def decode(obj: dict[str, Any], path: str) -> Loaded:
    """The inverse of `encode`, for the document at `path`."""
    front = obj["front_matter"]
    provider = Provider(**front["provider"], fkc_version=front["fkc_version"], path=path)
    return provider, tuple(_contract(c, provider, path) for c in obj["contracts"])


def _rule(text: str) -> Rule:
    """`str(Rule)` read back: "kind(a, b)" (validated rules always name at least one input)."""
    kind, _, rest = text.partition("(")
    return Rule(kind, tuple(rest.removesuffix(")").split(", ")))


def _contract(entry: dict[str, Any], provider: Provider, path: str) -> KernelContract:
    f = entry["facts"]
    accept, caps, cost, precision = f["accept"], f["caps"], f["cost"], f["precision"]
    inputs = tuple(
        InputSpec(
            s["name"],
            tuple(s["dtypes"]),
            tuple((flag, s["layout"][flag]) for flag in LAYOUT_FLAGS),
            None if s["rank"] == "any" else s["rank"],
            None
            if s["shape_constraint"] is None
            else ShapeConstraint(*s["shape_constraint"].split("=", 1)),
        )
        for s in accept["inputs"]
    )
    outputs = tuple(
        OutputSpec(
            o["name"],
            _rule(o["dtype_rule"]),
            _rule(o["shape_rule"]),
            o["layout_guarantee"],
            o["aliasing"],
        )
        for o in f["return"]["outputs"]
    )
    return KernelContract(
        name=f["kernel"],
        op_kind=f["op_kind"],
        blurb=entry["blurb"],
        backend=f["backend"],
        kernel_source=f["kernel_source"],
        entry_point=f["entry_point"],
        kernel_revision_hash=f["kernel_revision_hash"],
        registrable=f["registrable"],
        inputs=inputs,
        op_params=MappingProxyType(accept["op_params"]),
        outputs=outputs,
        caps=Caps(
            caps["awkward_layout_strategy"],
            tuple(MappingProxyType(p) for p in caps["fast_paths"]),
            caps["in_place"],
            caps["alignment_bytes"],
            caps["access_granularity_bits"],
        ),
        cost=Cost(
            cost["provenance"],
            cost["class"],
            Formula(cost["flops"]),
            Formula(cost["bytes_moved"]),
            cost["overhead_ns"],
            MappingProxyType({k: Formula(v) for k, v in cost["memory"].items()}),
        ),
        precision=Precision(
            precision["bit_stable_on_same_hardware"],
            precision["max_ulp"],
            precision["max_relative"],
            precision["max_absolute"],
            precision["audited"],
            precision["notes"],
        ),
        determinism=f["determinism"],
        description=entry["description"],
        provider=provider,
        source=Source(path, entry["line"], entry["lines"]),
    )
