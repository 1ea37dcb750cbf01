"""The inputs of the judge's reduction audit (`judge.reductions`, docs/reductions.md): random
rows; cancellation (x and -x interleaved, a small residue every 16th element); a huge dynamic
range (1e30 beside values near 1; 1e300 for F64, 4096 for F16, so nothing overflows); a long
constant-sign run (10^4 values ~U(0, 1), where a narrow accumulator drifts); NaN and infinities
at the first, last and block-boundary positions; lengths 0, 1, B - 1, B, B + 1 and around the
tree's splits (2, 3, 4, 5, 7, 8, 9, 16, 17 blocks); several axes, inner and outer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from fueltensor.tools.judge.orders import Declared
from fueltensor.tools.judge.references import Array


@dataclass(frozen=True)
class Case:
    """One input of the audit: its name (in failures), x and the axes reduced."""

    name: str
    x: Array
    axes: tuple[int, ...]


def _specials(dtype: np.dtype[Any], block: int, rng: np.random.Generator) -> Array:
    """Rows of 2B + 3 values with NaN and infinities at the first, last and block-boundary
    positions: one NaN; +inf beside -inf; one infinity; two of one sign."""
    m = 2 * block + 3
    x = rng.uniform(-1, 1, (9, m))
    nan, inf = np.nan, np.inf
    for r, placed in enumerate(
        [
            {0: nan}, {m - 1: nan}, {block: nan}, {block - 1: inf, block: -inf},
            {0: -inf}, {m - 1: inf}, {block: inf, m - 1: inf}, {0: nan, block: inf},
            {0: -inf, m - 1: inf},
        ]
    ):  # fmt: skip
        for j, v in placed.items():
            x[r, j] = v
    return x.astype(dtype)


def _lengths(block: int, lanes: int) -> list[int]:
    """Reduced lengths: empty, one, around a block and around the tree's splits."""
    found = {0, 1, 2, 3, block - 1, block, block + 1, lanes - 1, lanes, lanes + 1}
    found |= {n * block + e for n in (2, 3, 4, 5, 7, 8, 9, 16, 17) for e in (-1, 0, 1)}
    return sorted(n for n in found if n >= 0)


def shaped(
    d: Declared, values: Callable[[tuple[int, ...]], Array], empty: bool = True
) -> Iterator[Case]:
    """The cases of every reduction: lengths (without the empty one where not `empty`: a maximum
    or minimum of nothing is refused before any kernel runs) and axes, of `values` (a shape's
    values)."""
    b = d.block
    for m in _lengths(b, d.lanes)[0 if empty else 1 :]:
        yield Case(f"length {m}", values((3, m)), (1,))
    yield Case("axes (0, 2) of (4, 6, 37)", values((4, 6, 37)), (0, 2))
    yield Case("axes (1,) of (4, 3 B, 5)", values((4, 3 * b, 5)), (1,))
    yield Case("every axis of (3, 4, 5)", values((3, 4, 5)), (0, 1, 2))
    yield Case("no axes of (5, 7)", values((5, 7)), ())
    yield Case("a length-1 axis of (4, 1, 3)", values((4, 1, 3)), (1,))


def cases(
    dtype: np.dtype[Any], d: Declared, rng: np.random.Generator, empty: bool = True
) -> Iterator[Case]:
    """A sum's, maximum's or minimum's inputs (the module docstring's list), each named; without
    empty rows where not `empty`."""
    b = d.block

    def uniform(shape: tuple[int, ...], low: float = -1.0) -> Array:
        return rng.uniform(low, 1.0, shape).astype(dtype)

    yield Case("random rows", uniform((8, 3 * b + 5)), (1,))
    half = (rng.uniform(1, 2, (4, b + 7)) * np.exp2(rng.integers(-4, 5, (4, b + 7)))).astype(dtype)
    pairs = np.stack([half, -half], axis=-1).reshape(4, -1)
    pairs[:, ::16] = (rng.uniform(0, 1, pairs[:, ::16].shape) * 2.0**-10).astype(dtype)
    yield Case("cancellation", pairs, (1,))
    huge = 4096.0 if dtype == np.float16 else 1e300 if dtype == np.float64 else 1e30
    big = (huge * rng.uniform(1, 2, (4, b + 3))).astype(dtype)
    wide = np.stack([big, uniform((4, b + 3), 0.5), -big, uniform((4, b + 3), 0.5)], -1)
    yield Case("dynamic range", wide.reshape(4, -1), (1,))
    yield Case("constant sign, 10^4 values ~U(0, 1)", uniform((1, 10_000), 0.0), (1,))
    yield Case("NaN and infinities", _specials(dtype, b, rng), (1,))
    zeros = [[-1, -0.0, 0, -2], [-2, 0, -0.0, -1], [1, 0, -0.0, 2], [2, -0.0, 0, 1]]
    yield Case("signed zeros", np.array(zeros, dtype), (1,))
    yield from shaped(d, uniform, empty)
