"""A per-user cache of validated contracts, stored as JSON data, so a process skips YAML + checks.

Reading and validating the bundled documents costs tens of milliseconds, most of the first
operation's budget. A document's validated contracts are written once as plain JSON (never
pickle) under a name derived from the sha256 of the document's bytes and of the code that reads
documents, so an edited document or a changed reader never meets an old entry.

An entry can only speed up loading the facts the document holds, never change them: it names
the sha256 of its document's bytes and of its own payload, and its facts go through the same
schema validation as a parsed document's. An entry that is unreadable, not a regular file,
too large, corrupt, edited, copied from another document's key or invalid is ignored and
rewritten. Validation errors never come from here: a document that fails is not cached, so it
fails with its file and line every time.
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
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, Final

from ..core.errors import ContractError
from .files import read_regular
from .schema import KernelContract, Provider, Source
from .shapes import Node
from .validate import build_contract, build_provider, check_unique

FORMAT: Final = 2
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


_FROM_IMPORT: Final = re.compile(r"^from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|.*)$", re.M)
"""Module-level `from <module> import <names>` statements (names possibly parenthesised over
lines); imports inside functions (displays, lazy helpers) do not decide what a document means."""


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
        if name in files or spec is None or spec.origin is None or not spec.origin.endswith(".py"):
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
        obj = json.loads(read_regular(entry))
        if (
            obj["format"] != FORMAT
            or obj["document_sha256"] != hashlib.sha256(data).hexdigest()
            or obj["facts_sha256"] != _facts_hash(obj)
        ):
            return None  # another format, another document's entry, or edited facts
        return decode(obj, path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        # Absent, unreadable, corrupt or invalid (ContractError is a ValueError): the caller
        # rebuilds it from the document and rewrites it.
        return None


def store(data: bytes, provider: Provider, contracts: tuple[KernelContract, ...]) -> None:
    """Write the entry for document `data`; failure to write only costs the next process time."""
    entry = _entry(data)
    if entry is None:
        return
    import tempfile  # only a miss writes; importing it costs the import budget ~5 ms

    obj = encode(provider, contracts)
    obj["document_sha256"] = hashlib.sha256(data).hexdigest()
    obj["facts_sha256"] = _facts_hash(obj)
    text = json.dumps(obj, separators=(",", ":"))
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


def _facts_hash(obj: dict[str, Any]) -> str:
    """sha256 of an entry's provider and contracts in canonical JSON: an entry whose facts were
    edited after it was written no longer matches the hash written with it."""
    text = json.dumps(
        [obj["front_matter"], obj["contracts"]], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(text.encode()).hexdigest()


def decode(obj: dict[str, Any], path: str) -> Loaded:
    """The inverse of `encode`, for the document at `path`: the facts are validated as a parsed
    document's are (`build_provider`, `build_contract`, `check_unique`); ContractError,
    KeyError or TypeError when the entry does not hold valid contracts."""
    provider = build_provider(_node(obj["front_matter"], 1), path)
    contracts = tuple(_contract(c, provider, path) for c in obj["contracts"])
    if not contracts:
        raise ContractError("a cache entry without contracts", path=path)
    check_unique(contracts)
    return provider, contracts


def _node(value: Any, line: int) -> Node:
    """JSON data as the parser's line-annotated `Node`s, every one on `line`."""
    kind = type(value)
    if kind is dict:
        return Node({k: _node(v, line) for k, v in value.items()}, line)
    if kind is list:
        return Node([_node(v, line) for v in value], line)
    return Node(value, line)


def _contract(entry: dict[str, Any], provider: Provider, path: str) -> KernelContract:
    line, lines, description = entry["line"], entry["lines"], entry["description"]
    if not (
        type(line) is int
        and isinstance(lines, dict)
        and all(type(v) is int for v in lines.values())
        and isinstance(description, str)
    ):
        raise TypeError("a cache entry's line, lines or description has the wrong type")
    facts = {**entry["facts"], "blurb": entry["blurb"]}
    contract = build_contract(_node(facts, line), provider, description)
    return replace(contract, source=Source(path, line, lines))
