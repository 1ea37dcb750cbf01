"""Reading FKC markdown: front matter, `## ` sections (prose), and ```fkc YAML blocks.

YAML is composed with PyYAML's safe loader into nodes, so every value keeps its line; only the
plain YAML types (strings, numbers, booleans, null, lists, mappings) are accepted, and anchors,
aliases and tags are refused. Blocks whose indentation was stripped ("flattened") are re-nested
from the schema's `Shape` tree before composing; only leading whitespace changes, so line
numbers stay those of the original file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import yaml

from ..core.errors import ContractError
from .files import read_regular
from .schema import CONTRACT_SHAPE, FRONT_MATTER_SHAPE
from .shapes import Node, Scalar, Shape

_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CONSTRUCTOR: Final = yaml.constructor.SafeConstructor()
_RESOLVER: Final = yaml.resolver.Resolver()
_TAG: Final = "tag:yaml.org,2002:"
_STR: Final = _TAG + "str"
_MAP: Final = _TAG + "map"
_SEQ: Final = _TAG + "seq"
MAX_DEPTH: Final = 32
"""Deepest YAML nesting accepted (a contract needs five levels)."""
MAX_EVENTS: Final = 50_000
"""Most YAML values (scalars, collection starts and ends) one document may hold, so a huge
document is refused in bounded time; the bundled 33-contract document holds about 4,000."""
_SCALAR_TAGS: Final = {
    _TAG + "null": _CONSTRUCTOR.construct_yaml_null,
    _TAG + "bool": _CONSTRUCTOR.construct_yaml_bool,
    _TAG + "int": _CONSTRUCTOR.construct_yaml_int,
    _TAG + "float": _CONSTRUCTOR.construct_yaml_float,
}
_KEY: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*:(?:[ \t]+(.*))?$")
_YAML_LINE_BREAKS: Final = ("\x85", "\u2028", "\u2029")
FENCE: Final = "```"
_CONTRACT_KEY: Final = re.compile(r"kernel[ \t]*:")


@dataclass(frozen=True)
class Block:
    """One ```fkc block: its YAML mapping and the prose of the section it sits in."""

    node: Node
    description: str


@dataclass(frozen=True)
class Document:
    """A parsed FKC document: its front matter and its blocks, in document order."""

    path: str
    front_matter: Node
    blocks: tuple[Block, ...]


def read_document(path: str | os.PathLike[str]) -> Document:
    """Read and parse the FKC document at `path`; ContractError if it cannot be read."""
    name = os.fspath(path)
    try:
        data = read_regular(name)
    except OSError as e:
        raise ContractError(f"cannot read the document ({e.strerror})", path=name) from None
    return parse_document(data, name)


def decode(data: bytes, path: str) -> list[str]:
    """The document's lines: UTF-8 with or without BOM, LF, CRLF or CR line ends."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ContractError(
            f"byte 0x{data[e.start]:02x} is not UTF-8; accepted: UTF-8 text", path=path, line=line
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_document(data: bytes, path: str) -> Document:
    """Split a document into front matter, prose sections and ```fkc blocks; compose the YAML.

    All YAML of the document is composed as one stream: a copy of the file in which the front
    matter and every block keep their lines, each starts with `---`, and every other line is
    blank. So each YAML line number is the file's line number.
    """
    lines = decode(data, path)
    if lines[0].rstrip() != "---":
        raise ContractError(
            "a FKC document starts with YAML front matter between two '---' lines",
            path=path,
            line=1,
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() == "---"), None)
    if end is None:
        raise ContractError("front matter is not closed by a '---' line", path=path, line=1)
    stream = [""] * len(lines)
    _place(stream, lines, 0, end, FRONT_MATTER_SHAPE, path)
    descriptions: list[str] = []
    section: list[str] = []
    pending = 0
    i = end + 1
    while i < len(lines):
        line = lines[i]
        if line.startswith(("# ", "## ")):
            descriptions += [_prose(section)] * pending
            section, pending = [], 0
        elif line.startswith(FENCE):
            close = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == FENCE), None)
            if close is None:
                raise ContractError("code block is not closed by a ``` line", path=path, line=i + 1)
            is_fkc = line[len(FENCE) :].strip() == "fkc"
            _check_code_block(lines, i, close, is_fkc, path)
            if is_fkc:
                _place(stream, lines, i, close, CONTRACT_SHAPE, path)
                pending += 1
            else:
                section.extend(lines[i : close + 1])
            i = close + 1
            continue
        else:
            section.append(line)
        i += 1
    descriptions += [_prose(section)] * pending
    if not descriptions:
        raise ContractError("the document declares no ```fkc block", path=path, line=end + 2)
    text = "\n".join(stream)
    for ch in _YAML_LINE_BREAKS:
        if ch in text:
            raise ContractError(
                "a Unicode line or paragraph separator is not accepted inside YAML; accepted: "
                "one logical line per file line",
                path=path,
                line=text.count("\n", 0, text.index(ch)) + 1,
            )
    front, *roots = _Composer(path).documents(text)
    return Document(path, front, tuple(map(Block, roots, descriptions)))


def _check_code_block(lines: list[str], start: int, stop: int, is_fkc: bool, path: str) -> None:
    """Refuse a code block that would silently swallow or drop a contract: a fence line inside
    it (a mistyped closing fence), or a `kernel:` key in a block not fenced as ```fkc."""
    for k in range(start + 1, stop):
        line = lines[k]
        if line.startswith(FENCE):
            raise ContractError(
                f"{line.strip()!r} inside the code block opened at line {start + 1}; accepted: "
                "close a code block with a bare ``` line before opening another",
                path=path,
                line=k + 1,
            )
        if not is_fkc and _CONTRACT_KEY.match(line):
            raise ContractError(
                f"a code block fenced as {lines[start].strip()!r} declares a contract "
                f"(`kernel:` at line {k + 1}); accepted: ```fkc to open a contract block",
                path=path,
                line=start + 1,
            )


def _place(
    stream: list[str], lines: list[str], start: int, stop: int, shape: Shape, path: str
) -> None:
    """Copy the YAML between fence lines `start` and `stop` into `stream` as one document,
    re-nesting it first if it was flattened."""
    body = lines[start + 1 : stop]
    for k, line in enumerate(body, start + 2):
        if line.rstrip() in ("---", "..."):
            raise ContractError(
                "a YAML document marker is not accepted inside a block; accepted: one mapping",
                path=path,
                line=k,
            )
    stream[start] = "---"
    stream[start + 1 : stop] = renest(body, shape) if is_flattened(body) else body


def _prose(lines: list[str]) -> str:
    """A section's text without thematic breaks, trimmed."""
    return "\n".join(line for line in lines if line.strip() != "---").strip()


def is_flattened(lines: list[str]) -> bool:
    """True when no line of the block is indented: its nesting was stripped."""
    return not any(line[:1].isspace() for line in lines if line.strip())


def renest(lines: list[str], shape: Shape) -> list[str]:
    """Re-indent flattened YAML lines from `shape`: each key goes under the innermost open
    mapping that declares it (unknown keys under the innermost one), `- ` items under the
    innermost list. Line count and order are unchanged."""
    stack: list[tuple[Shape, int, bool]] = [(shape, 0, False)]  # (shape, indent, is a list)
    out: list[str] = []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            out.append(line)
            continue
        if line.startswith("- ") or line == "-":
            while len(stack) > 1 and not stack[-1][2]:
                stack.pop()
            item_shape, indent, is_list = stack[-1]
            out.append(" " * indent + line)
            if is_list:
                stack.append((item_shape, indent + 2, False))
            continue
        m = _KEY.match(line)
        if m is None:
            out.append(" " * (stack[-1][1] + 2) + line)
            continue
        key = m.group(1)
        depth = next((d for d in range(len(stack) - 1, -1, -1) if key in stack[d][0].keys), None)
        if depth is None:
            depth = next(d for d in range(len(stack) - 1, -1, -1) if not stack[d][2])
        del stack[depth + 1 :]
        owner, indent, _ = stack[depth]
        out.append(" " * indent + line)
        if (m.group(2) or "#").startswith("#"):
            if key in owner.maps:
                stack.append((owner.maps[key], indent + 2, False))
            elif key in owner.lists:
                stack.append((owner.lists[key], indent + 2, True))
            elif owner.open:
                stack.append((owner, indent + 2, False))
    return out


class _Tree:
    """The values a YAML event stream builds: finished documents and the open collections."""

    __slots__ = ("composer", "docs", "in_dict", "key", "key_line", "outer", "top")

    def __init__(self, composer: _Composer) -> None:
        self.composer = composer
        self.docs: list[Node] = []
        self.outer: list[tuple[Any, bool, str | None, int]] = []  # enclosing collections
        self.top: Any = None  # the innermost open collection: a dict or a list
        self.in_dict = False
        self.key: str | None = None  # in a dict: the key awaiting its value, and its line
        self.key_line = 0

    def scalar(self, value: Scalar, line: int) -> None:
        """A mapping key (a plain string, once per mapping), a value, an item or a document."""
        if self.in_dict and self.key is None:
            if value.__class__ is not str:
                self.composer.fail("mapping keys must be plain strings", line)
            if value in self.top:
                self.composer.fail("key appears twice in one mapping", line, str(value))
            self.key, self.key_line = value, line
        else:
            self._place(value, line)

    def open(self, container: dict[str, Node] | list[Node], is_map: bool, line: int) -> None:
        """Place a new collection and make it the innermost open one (at most MAX_DEPTH)."""
        if self.in_dict and self.key is None:
            self.composer.fail("mapping keys must be plain strings", line)
        self._place(container, line)
        if len(self.outer) >= MAX_DEPTH:
            self.composer.fail(f"YAML nested deeper than {MAX_DEPTH} levels", line)
        self.outer.append((self.top, self.in_dict, None, self.key_line))
        self.top, self.in_dict, self.key, self.key_line = container, is_map, None, 0

    def close(self) -> None:
        """The innermost collection is complete: its parent is open again."""
        self.top, self.in_dict, self.key, self.key_line = self.outer.pop()

    def _place(self, value: Any, line: int) -> None:
        """`value` as the awaited key's value, the open list's next item, or a document."""
        if self.in_dict:
            self.top[self.key] = Node(value, self.key_line)
            self.key = None
        elif self.top is not None:
            self.top.append(Node(value, line))
        else:
            self.docs.append(Node(value, line))


class _Composer:
    """Builds Nodes from PyYAML's safe event stream (libyaml when available): one pass, no
    intermediate YAML nodes, refusing anchors, aliases, tags and non-string keys."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, message: str, line: int, field: str | None = None) -> NoReturn:
        raise ContractError(message, path=self.path, line=line, field=field)

    def documents(self, text: str) -> list[Node]:
        """The root Node of every document in the YAML stream `text`."""
        try:
            return self._documents(text)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line = mark.line + 1 if mark is not None else None
            raise ContractError(
                f"invalid YAML: {e.problem or e.context}; accepted: YAML mappings, lists and "
                "scalars, block-indented or in flow style {a: 1, b: [x, y]}",
                path=self.path,
                line=line,
            ) from None
        except yaml.reader.ReaderError as e:
            at = text.find(chr(e.character))  # the reader stops at the first one
            raise ContractError(
                f"character #x{e.character:04x} is not accepted in YAML; accepted: printable "
                "Unicode text (no control characters other than tab and line ends)",
                path=self.path,
                line=text.count("\n", 0, at) + 1 if at >= 0 else None,
            ) from None
        except yaml.YAMLError as e:
            raise ContractError(f"invalid YAML: {e}", path=self.path) from None

    def _documents(self, text: str) -> list[Node]:
        tree = _Tree(self)
        loader = _LOADER(text)
        try:
            for count, ev in enumerate(iter(loader.get_event, None)):
                if count > MAX_EVENTS:
                    self.fail(
                        f"the document holds more than {MAX_EVENTS} YAML values; accepted: at "
                        f"most {MAX_EVENTS} (a contract needs about a hundred)",
                        ev.start_mark.line + 1,
                    )
                cls = ev.__class__
                if cls is yaml.ScalarEvent:
                    tree.scalar(self._scalar(ev), ev.start_mark.line + 1)
                elif cls is yaml.MappingStartEvent or cls is yaml.SequenceStartEvent:
                    is_map = cls is yaml.MappingStartEvent
                    tree.open(self._collection(ev, is_map), is_map, ev.start_mark.line + 1)
                elif cls is yaml.MappingEndEvent or cls is yaml.SequenceEndEvent:
                    tree.close()
                elif cls is yaml.AliasEvent:
                    self.fail(
                        f"YAML alias *{ev.anchor} is not accepted; write values out",
                        ev.start_mark.line + 1,
                    )
        finally:
            loader.dispose()
        return tree.docs

    def _refuse_anchor(self, ev: Any) -> None:
        if ev.anchor is not None:
            self.fail(
                f"YAML anchor &{ev.anchor} is not accepted; write values out",
                ev.start_mark.line + 1,
            )

    def _scalar(self, ev: Any) -> Scalar:
        """A scalar event's value: tagged, plain (typed as YAML 1.2 core) or quoted (a str)."""
        self._refuse_anchor(ev)
        if ev.tag is not None:
            return self.tagged(ev)
        if ev.implicit[0]:
            return _plain(ev.value, ev.start_mark.line + 1, self)
        value: str = ev.value  # quoted: always a string
        return value

    def _collection(self, ev: Any, is_map: bool) -> dict[str, Node] | list[Node]:
        """An empty mapping or list for a collection-start event (no anchor, no foreign tag)."""
        self._refuse_anchor(ev)
        if ev.tag is not None and ev.tag != (_MAP if is_map else _SEQ):
            self.refuse_tag(ev.tag, ev.start_mark.line + 1)
        return {} if is_map else []

    def tagged(self, ev: Any) -> Scalar:
        """The value of an explicitly tagged scalar; only the standard scalar tags are accepted."""
        text: str = ev.value
        if ev.tag == _STR:
            return text
        construct = _SCALAR_TAGS.get(ev.tag)
        if construct is None:
            self.refuse_tag(ev.tag, ev.start_mark.line + 1)
        return _construct(construct, ev.tag, text, ev.start_mark.line + 1, self)

    def refuse_tag(self, tag: str, line: int) -> NoReturn:
        self.fail(
            f"YAML tag {tag.replace(_TAG, '!!')!r} is not accepted; accepted: plain strings, "
            "numbers, true/false, ~, lists and mappings",
            line,
        )


def _construct(
    construct: Callable[[yaml.ScalarNode], Scalar],
    tag: str,
    text: str,
    line: int,
    composer: _Composer,
) -> Scalar:
    """A scalar's value; ContractError with the line when Python cannot hold it (an integer
    beyond Python's 4300-digit conversion limit)."""
    try:
        return construct(yaml.ScalarNode(tag, text))
    except (ValueError, OverflowError):
        composer.fail(
            f"the number {text[:20]}... ({len(text)} characters) is too large to read; "
            "accepted: numbers of ordinary size",
            line,
        )


_PLAIN_CACHE: Final[dict[str, Scalar]] = {}
_PLAIN_CACHE_SIZE: Final = 4096


def _plain(text: str, line: int, composer: _Composer) -> Scalar:
    """The value of a plain (unquoted) scalar under YAML 1.1 resolution, cached by text."""
    try:
        return _PLAIN_CACHE[text]
    except KeyError:
        pass
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    if tag == _STR:
        value: Scalar = text
    else:
        construct = _SCALAR_TAGS.get(tag)
        if construct is None:
            composer.refuse_tag(tag, line)
        value = _construct(construct, tag, text, line, composer)
    if len(_PLAIN_CACHE) < _PLAIN_CACHE_SIZE:
        _PLAIN_CACHE[text] = value
    return value
