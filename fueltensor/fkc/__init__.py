"""FKC documents: parsing, the typed contract schema, and cost formulas.

`load_document(path)` turns one FKC markdown file into its `Provider` and `KernelContract`s,
validated but not yet linked to kernels (linking is `fueltensor.registry`'s job).
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .formula import Formula
    from .schema import (
        LAYOUT_FLAGS,
        LAYOUT_VALUES,
        PROSE_KEYS,
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

_HOMES = {"Formula": "formula"}
"""Where each public name lives (the rest in `schema`): imported on first access (PEP 562),
so that `import fueltensor` does not build the schema's classes before a registry is loaded."""


def __getattr__(name: str) -> Any:
    """The public names, from their modules on first access."""
    if name not in __all__ or name == "load_document":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f".{_HOMES.get(name, 'schema')}", __name__)
    return getattr(module, name)


__all__ = [
    "LAYOUT_FLAGS",
    "LAYOUT_VALUES",
    "PROSE_KEYS",
    "Caps",
    "Cost",
    "Formula",
    "InputSpec",
    "KernelContract",
    "OutputSpec",
    "Precision",
    "Provider",
    "Rule",
    "ShapeConstraint",
    "Source",
    "load_document",
]


def load_document(
    path: str | os.PathLike[str], *, cached: bool = False
) -> tuple[Provider, tuple[KernelContract, ...]]:
    """The provider and contracts one FKC document declares; ContractError on any fault.

    With `cached`, a document validated before (same bytes, same reader code) is taken from the
    per-user JSON cache (`fkc.cache`) instead of being parsed and validated again.
    """
    from . import cache
    from .files import read_regular
    from .validate import build_contract, build_provider, check_unique

    name = os.fspath(path)
    try:
        data = read_regular(name)
    except OSError:
        data = None  # read_document below raises the ContractError that says why
    if cached and data is not None:
        hit = cache.load(name, data)
        if hit is not None:
            return hit
    # Imported here: the YAML reader is needed only when a document is actually parsed.
    from .parse import parse_document, read_document

    doc = read_document(name) if data is None else parse_document(data, name)
    provider = build_provider(doc.front_matter, doc.path)
    contracts = tuple(build_contract(b.node, provider, b.description) for b in doc.blocks)
    check_unique(contracts)
    if cached and data is not None:
        cache.store(data, provider, contracts)
    return provider, contracts
