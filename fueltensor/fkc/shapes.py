"""The shape of a document's mappings: which keys each holds and how they nest.

`Node` is a parsed YAML value with its line; `Shape` lists the keys of one mapping (canonical
order, required ones, nested maps and lists). `fkc.schema` and `fkc.semantics` build the tree
of a contract from these; the parser re-nests flattened blocks with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

Scalar: TypeAlias = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Node:
    """A parsed YAML value and its 1-based line in the file (the key's line for a mapping entry)."""

    value: Scalar | dict[str, Node] | list[Node]
    line: int


@dataclass(frozen=True)
class Shape:
    """The keys one mapping of a document may hold (canonical order) and how they nest."""

    keys: tuple[str, ...]
    required: frozenset[str]
    maps: Mapping[str, Shape]
    lists: Mapping[str, Shape]
    open: bool = False


def shape_of(spec: str, **nested: Shape | list[Shape]) -> Shape:
    """A Shape from `"key key? ..."` (`?` marks optional keys) and the nested shapes by key."""
    names = spec.split()
    return Shape(
        keys=tuple(n.rstrip("?") for n in names),
        required=frozenset(n for n in names if not n.endswith("?")),
        maps={k: v for k, v in nested.items() if isinstance(v, Shape)},
        lists={k: v[0] for k, v in nested.items() if isinstance(v, list)},
    )


OPEN: Final = Shape((), frozenset(), {}, {}, open=True)
