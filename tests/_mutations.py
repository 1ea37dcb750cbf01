"""Seeded mutations of FKC documents for the reliability tests.

Each mutation takes the original bytes and a `random.Random` and returns the mutated bytes, a
label saying what was done, and the 1-based line of the original it touched (0 when it touched
the whole file). `MUST_FAIL` mutations always break the document; the others may leave its facts
unchanged, change only the contract around the touched line, or break it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import NamedTuple

INSERTABLE = b"abcxyzFKC019_-:{}[],#&*!|>%@`'\" \t\n~?"
"""Characters a random insertion draws from: letters, digits and YAML's indicators."""

_KEY_LINE = re.compile(rb"^(\s*-?\s*)([A-Za-z_][A-Za-z0-9_]*):(\s.*)?$")


class Mutant(NamedTuple):
    data: bytes
    label: str
    line: int


Mutation = Callable[[bytes, random.Random], Mutant]


def line_of(data: bytes, pos: int) -> int:
    """The 1-based line of byte `pos`."""
    return data.count(b"\n", 0, pos) + 1


def block_lines(data: bytes) -> list[tuple[int, int]]:
    """(first, last) 1-based lines of each ```fkc block, fences included."""
    lines = data.split(b"\n")
    out: list[tuple[int, int]] = []
    start = None
    for k, line in enumerate(lines, 1):
        if line.rstrip() == b"```fkc":
            start = k
        elif line.rstrip() == b"```" and start is not None:
            out.append((start, k))
            start = None
    return out


def _block_key_lines(data: bytes) -> list[int]:
    """0-based indices of lines inside fkc blocks that hold a `key:`."""
    lines = data.split(b"\n")
    return [
        k
        for first, last in block_lines(data)
        for k in range(first, last - 1)
        if _KEY_LINE.match(lines[k])
    ]


def _replace_line(data: bytes, index: int, new: bytes | None) -> bytes:
    lines = data.split(b"\n")
    if new is None:
        del lines[index]
    else:
        lines[index] = new
    return b"\n".join(lines)


def delete_char(data: bytes, rng: random.Random) -> Mutant:
    pos = rng.randrange(len(data))
    return Mutant(data[:pos] + data[pos + 1 :], f"delete byte {pos}", line_of(data, pos))


def insert_char(data: bytes, rng: random.Random) -> Mutant:
    pos = rng.randrange(len(data) + 1)
    ch = bytes([rng.choice(INSERTABLE)])
    return Mutant(data[:pos] + ch + data[pos:], f"insert {ch!r} at {pos}", line_of(data, pos))


def remove_key(data: bytes, rng: random.Random) -> Mutant:
    index = rng.choice(_block_key_lines(data))
    line = data.split(b"\n")[index]
    return Mutant(_replace_line(data, index, None), f"remove line {line!r}", index + 1)


WRONG_VALUES = (
    b"[1, 2]",
    b"{a: 1}",
    b"-7",
    b"1.5e400",
    b'""',
    b"[]",
    b"{}",
    b"0x1F",
    b"no",
    b"7" * 5000,  # beyond Python's int conversion limit
    b"7" * 400,  # an int no float holds
    b"0x" + b"f" * 400,
)


def wrong_type(data: bytes, rng: random.Random) -> Mutant:
    index = rng.choice(_block_key_lines(data))
    line = data.split(b"\n")[index]
    m = _KEY_LINE.match(line)
    assert m is not None
    value = rng.choice(WRONG_VALUES)
    new = m.group(1) + m.group(2) + b": " + value
    return Mutant(_replace_line(data, index, new), f"{line!r} -> {new!r}", index + 1)


def _sub_random(data: bytes, rng: random.Random, pattern: bytes, new: bytes) -> Mutant:
    """Replace one random match of `pattern` by `new`."""
    hits = [m.start() for m in re.finditer(re.escape(pattern), data)]
    pos = rng.choice(hits)
    out = data[:pos] + new + data[pos + len(pattern) :]
    return Mutant(out, f"{pattern!r} -> {new!r} at line {line_of(data, pos)}", line_of(data, pos))


UNKNOWN_DTYPES = (b"F33", b"f32", b"I31", b"F32x", b"Float32", b"U12", b'""', b"~", b"1")


def unknown_dtype(data: bytes, rng: random.Random) -> Mutant:
    hits = [m for m in re.finditer(rb"dtypes: \[([^\]]*)\]", data)]
    m = rng.choice(hits)
    codes = m.group(1).split(b", ")
    codes[rng.randrange(len(codes))] = rng.choice(UNKNOWN_DTYPES)
    new = b"dtypes: [" + b", ".join(codes) + b"]"
    out = data[: m.start()] + new + data[m.end() :]
    return Mutant(out, f"dtypes -> {new!r}", line_of(data, m.start()))


BROKEN_FLOWS = (
    (b"}", b""),
    (b"{", b""),
    (b", ", b" "),
    (b", ", b",, "),
    (b": ", b" "),
    (b"}", b"}}"),
    (b"]", b""),
    (b"[", b""),
)


HUGE_LITERALS = (b"7" * 5000, b"7" * 400, b'"' + b"7" * 400 + b' * n"', b"0x" + b"f" * 400)


def huge_literal(data: bytes, rng: random.Random) -> Mutant:
    """A cost formula whose literal no float (or no Python int conversion) can hold."""
    hits = [m for m in re.finditer(rb"(bytes_moved|flops): [^\n]*", data)]
    m = rng.choice(hits)
    new = m.group(1) + b": " + rng.choice(HUGE_LITERALS)
    out = data[: m.start()] + new + data[m.end() :]
    return Mutant(out, f"{m.group(0)!r} -> {new[:40]!r}...", line_of(data, m.start()))


def broken_flow(data: bytes, rng: random.Random) -> Mutant:
    lines = data.split(b"\n")
    index = rng.choice([k for k in _block_key_lines(data) if b"{" in lines[k] or b"[" in lines[k]])
    old, new = rng.choice(BROKEN_FLOWS)
    line = lines[index]
    hits = [m.start() for m in re.finditer(re.escape(old), line)] or [0]
    pos = rng.choice(hits)
    changed = line[:pos] + new + line[pos + len(old) :] if old in line else line + b"}"
    return Mutant(_replace_line(data, index, changed), f"{line!r} -> {changed!r}", index + 1)


def truncate_in_block(data: bytes, rng: random.Random) -> Mutant:
    first, last = rng.choice(block_lines(data))
    lines = data.split(b"\n")
    cut = rng.randrange(first, last)  # keep the opening fence, drop the closing one
    out = b"\n".join(lines[:cut])
    return Mutant(out, f"truncate after line {cut}", cut)


FENCE_BREAKS = (b"``", b"`` `", b"````", b"```fkc", b"~~~", b"``` x")


def break_fence(data: bytes, rng: random.Random) -> Mutant:
    first, last = rng.choice(block_lines(data))
    index = rng.choice((first, last)) - 1
    line = data.split(b"\n")[index]
    new = (
        rng.choice(FENCE_BREAKS)
        if line.rstrip() == b"```"
        else rng.choice((b"``fkc", b"```fk", b"```kc", b"```fkcc", b"```FKC", b"``` fkc", b"```"))
    )
    return Mutant(_replace_line(data, index, new), f"fence {line!r} -> {new!r}", index + 1)


def duplicate_kernel(data: bytes, rng: random.Random) -> Mutant:
    first, last = rng.choice(block_lines(data))
    lines = data.split(b"\n")
    block = lines[first - 1 : last]
    out = b"\n".join([*lines, b"", b"## again", b"", *block, b""])
    return Mutant(out, f"block at line {first} repeated at the end", first)


def tabs(data: bytes, rng: random.Random) -> Mutant:
    index = rng.choice(_block_key_lines(data))
    line = data.split(b"\n")[index]
    stripped = line.lstrip(b" ")
    indent = len(line) - len(stripped)
    new = rng.choice(
        (b"\t" * max(indent // 2, 1) + stripped, line.replace(b": ", b":\t", 1), line + b"\t")
    )
    return Mutant(_replace_line(data, index, new), f"tabs: {line!r} -> {new!r}", index + 1)


def insert_non_utf8(data: bytes, rng: random.Random) -> Mutant:
    pos = rng.randrange(len(data) + 1)
    bad = rng.choice((b"\xff", b"\xc3", b"\xe2\x82", b"\x80", b"\xed\xa0\x80"))
    return Mutant(data[:pos] + bad + data[pos:], f"insert {bad!r} at {pos}", line_of(data, pos))


def insert_control(data: bytes, rng: random.Random) -> Mutant:
    """A NUL, a bare CR, a BOM or a Unicode line separator somewhere in the file."""
    pos = rng.randrange(len(data) + 1)
    ch = rng.choice(("\x00", "\r", "\ufeff", "\u2028", "\x85", "\x1b")).encode()
    return Mutant(data[:pos] + ch + data[pos:], f"insert {ch!r} at {pos}", line_of(data, pos))


def whole_file_encoding(data: bytes, rng: random.Random) -> Mutant:
    """Same text, other line ends or a BOM: must load to the same facts."""
    text = data
    choice = rng.randrange(4)
    if choice == 0:
        text = data.replace(b"\n", b"\r\n")
    elif choice == 1:
        text = data.replace(b"\n", b"\r")
    elif choice == 2:
        text = b"\xef\xbb\xbf" + data
    else:
        text = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    return Mutant(text, ("CRLF", "CR", "BOM", "BOM+CRLF")[choice], 0)


RANDOM: tuple[Mutation, ...] = (
    delete_char,
    insert_char,
    remove_key,
    wrong_type,
    broken_flow,
    tabs,
    insert_control,
    whole_file_encoding,
)
"""Mutations whose outcome depends on where they land."""
MUST_FAIL: tuple[Mutation, ...] = (
    unknown_dtype,
    truncate_in_block,
    duplicate_kernel,
    insert_non_utf8,
    huge_literal,
)
"""Mutations that always break a document."""
