"""FKC documents: parsing, the typed contract schema, and cost formulas.

`load_document(path)` turns one FKC markdown file into its `Provider` and `KernelContract`s,
validated but not yet linked to kernels (linking is `fueltensor.registry`'s job).
"""

from __future__ import annotations

import os

from . import cache
from .files import read_regular
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
from .validate import build_contract, build_provider, check_unique

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
