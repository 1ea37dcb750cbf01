"""FKC documents: parsing, the typed contract schema, and cost formulas.

`load_document(path)` turns one FKC markdown file into its `Provider` and `KernelContract`s,
validated but not yet linked to kernels (linking is `fueltensor.registry`'s job).
"""

from __future__ import annotations

import os

from .formula import Formula
from .parse import read_document
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
    build_contract,
    build_provider,
    check_unique,
)

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


def load_document(path: str | os.PathLike[str]) -> tuple[Provider, tuple[KernelContract, ...]]:
    """The provider and contracts one FKC document declares; ContractError on any fault."""
    doc = read_document(path)
    provider = build_provider(doc.front_matter, doc.path)
    contracts = tuple(build_contract(b.node, provider, b.description) for b in doc.blocks)
    check_unique(contracts)
    return provider, contracts
