"""The position sweep: does an element's result depend on where it sits?

A vectorized kernel runs a vector body and a scalar tail, and may take an aligned and an
unaligned path; where they disagree, one element's bits depend on the length of the call, its
offset and its lane. The sweep runs a kernel at every length from 1 to four times the widest
vector (64 bytes: AVX-512) and at every byte offset of an element inside 64 bytes, on buffers
holding the probes cycled through the lanes (the cycle shifted from call to call, so each
probe lands in body and tail lanes), and records every result pattern each probe gave, with
the first place it was seen. Shallower sweeps (`DEPTHS`) keep fewer lengths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from fueltensor.core.storage import aligned_empty
from fueltensor.fkc.schema import KernelContract
from fueltensor.testing import float_format
from fueltensor.tools.judge import casts
from fueltensor.tools.judge.cases import Case
from fueltensor.tools.judge.references import round_to

WIDEST_VECTOR: Final = 64
"""Bytes in the widest vector register a CPU here may have (AVX-512's zmm)."""

Call = Callable[[tuple[np.ndarray, ...]], np.ndarray]
"""Runs the kernel on dense 1-D operands of one length; returns its 1-D result."""


@dataclass(frozen=True)
class Where:
    """A place in the sweep: the call's length, its operands' byte offset from a 64-byte
    boundary, and the lane."""

    length: int
    offset: int
    lane: int

    def __str__(self) -> str:
        return f"length {self.length}, byte offset {self.offset}, element {self.lane}"


@dataclass
class Sweep:
    """What each probe gave: result pattern -> the first place it was seen."""

    probes: tuple[tuple[int, ...], ...]
    seen: list[dict[int, Where]] = field(default_factory=list)
    calls: int = 0

    def results(self, probe: int) -> tuple[int, ...]:
        """Every result pattern probe `probe` gave, in the order first seen."""
        return tuple(self.seen[probe])

    def varies(self, probe: int) -> bool:
        """Whether probe `probe` gave more than one result pattern."""
        return len(self.seen[probe]) > 1


DEPTHS: Final = ("brief", "quick", "full")
"""How thorough a sweep is: `full` every length and offset; `quick` the lengths up to one
vector plus one and around two, three and four vectors at offset 0, every offset at two
lengths; `brief` four lengths (1, one vector plus one, two plus one, four minus one) at
offset 0 and every offset at one vector plus one."""


def layouts(itemsize: int, depth: str = "full") -> list[tuple[int, int]]:
    """The (length, byte offset) of every call of a sweep of `depth` (`DEPTHS`) for elements
    of `itemsize` bytes. A framework that compiles for each shape (JAX) compiles once per
    length, so the shallower depths keep the lengths few."""
    if depth not in DEPTHS:
        raise ValueError(f"no sweep depth {depth!r}; the depths: {', '.join(DEPTHS)}")
    lanes = WIDEST_VECTOR // itemsize
    offsets = range(0, WIDEST_VECTOR, itemsize)
    if depth == "full":
        return [(n, b) for n in range(1, 4 * lanes + 1) for b in offsets]
    again: tuple[int, ...]
    if depth == "quick":
        edges = {*range(1, lanes + 2), *(k * lanes + d for k in (2, 3, 4) for d in (-1, 0, 1))}
        lengths = sorted(n for n in edges if n <= 4 * lanes)
        again = (lanes + 1, 4 * lanes - 1)
    else:
        lengths, again = [1, lanes + 1, 2 * lanes + 1, 4 * lanes - 1], (lanes + 1,)
    return [(n, 0) for n in lengths] + [(n, b) for n in again for b in offsets if b]


def _operand(patterns: np.ndarray, dtype: np.dtype, offset: int) -> np.ndarray:
    """`patterns` as an array of `dtype` whose first element sits `offset` bytes past a
    64-byte boundary."""
    nbytes = patterns.size * dtype.itemsize
    raw = aligned_empty(nbytes + WIDEST_VECTOR, np.dtype(np.uint8), WIDEST_VECTOR)
    array = raw[offset : offset + nbytes].view(dtype)
    array.view(patterns.dtype)[:] = patterns
    return array


def sweep(
    call: Call, dtype: np.dtype, probes: Sequence[tuple[int, ...]], depth: str = "full"
) -> Sweep:
    """Run `call` over the sweep's layouts with `probes` (one bit pattern per operand each)
    cycled through the lanes; what every probe gave, and where."""
    found = Sweep(tuple(probes), [{} for _ in probes])
    if not probes:
        return found
    uint = np.dtype(f"u{dtype.itemsize}")
    table = np.array(probes, np.uint64).astype(uint).T  # operand -> probe -> pattern
    count = len(probes)
    places = layouts(dtype.itemsize, depth)
    lanes, results = [], []
    for length, offset in places:
        shift = (length + offset // dtype.itemsize) % count
        which = (np.arange(length) + shift) % count
        operands = tuple(_operand(row[which], dtype, offset) for row in table)
        got = np.ascontiguousarray(call(operands))  # bools (a comparison's) or the dtype's
        got = got.view(f"u{got.itemsize}").reshape(-1)
        lanes.append(which)
        results.append(got.astype(np.uint64))
    found.calls = len(places)
    _record(found, places, lanes, results)
    return found


def _record(
    found: Sweep,
    places: list[tuple[int, int]],
    lanes: list[np.ndarray],
    results: list[np.ndarray],
) -> None:
    """Fill `found.seen` from every call's probe-per-lane and result arrays: each distinct
    (probe, result) pair with the place it first occurred."""
    keys = np.stack([np.concatenate(lanes).astype(np.uint64), np.concatenate(results)], axis=1)
    pairs, first = np.unique(keys, axis=0, return_index=True)
    starts = np.cumsum([0] + [w.size for w in lanes])
    for (probe, pattern), at in sorted(
        zip(pairs.tolist(), first.tolist(), strict=True), key=lambda x: x[1]
    ):
        call = int(np.searchsorted(starts, at, side="right")) - 1
        length, offset = places[call]
        found.seen[probe][pattern] = Where(length, offset, at - int(starts[call]))


RANDOM_PROBES: Final = 24
"""Random operand pairs (bit patterns and ordinary values) swept beside the cases, so the
position check covers plain numbers too."""
POWI_EXPONENT: Final = 3
"""The exponent an integer-power contract is swept with."""


def random_probes(contract: KernelContract, dtype: np.dtype, seed: int) -> list[Case]:
    """Random operands for the position check: bit patterns and ordinary values."""
    f = float_format(np.dtype(dtype))
    rng = np.random.default_rng(seed)
    half = RANDOM_PROBES // 2
    patterns = rng.integers(0, 1 << (8 * f.dtype.itemsize), (2, half), dtype=np.uint64)
    values = np.exp2(rng.uniform(-8, 8, (2, half))) * rng.choice([-1.0, 1.0], (2, half))
    ordinary = round_to(values, f.dtype).view(f.uint).astype(np.uint64)
    third = rng.permutation(np.concatenate([patterns, ordinary], axis=1).reshape(-1))[: 2 * half]
    columns = np.concatenate([patterns, ordinary], axis=1)
    triples = np.vstack([columns, third]).T.tolist()  # a third operand for where and clip
    powi, arity = bool(contract.params), len(contract.inputs)
    to = casts.target(contract) if casts.is_cast(contract.op_kind) else None
    return [
        Case(
            "position",
            "random operands",
            contract.op_kind,
            f.dtype,
            a,
            0 if powi else b,
            f"x ** {POWI_EXPONENT}" if powi else "random operands",
            arity=arity,
            third=c if arity == 3 else 0,
            to=to,
        )
        for a, b, c in triples
    ]
