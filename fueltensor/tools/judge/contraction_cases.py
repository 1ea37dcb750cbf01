"""The contraction audit's inputs (`judge.contractions`; docs/matmul.md, The judge): pairs of
operands a (..., M, K) and b (..., K, N), each named, that a dot product's accumulation shows in:

* random matrices, and shapes that are no multiple of any tile (1 x 1 x 1, 17 x 13 x 11);
* cancellation: each row's products cancel in pairs to a small remainder;
* dynamic range: products spanning the format's exponent range (its largest values times its
  smallest), and pairs whose exact dot product overflows; products beyond float32's range
  (bf16's 2^64 * 2^64, 2^-75 * 2^-75), where a rounded product and an unrounded one differ;
* a long K of constant-sign products (a narrow accumulator's collapse);
* NaN and infinities at the first, last and block-boundary positions of K, and inf times 0;
* subnormal operands and products, and normal products whose partial sums are subnormal
  (a flush to zero at any step shows); signed zeros;
* K = 0 and K = 1; a stack broadcast against one matrix.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from fueltensor.tools.judge.orders import Declared
from fueltensor.tools.judge.references import Array


@dataclass(frozen=True)
class Pair:
    """One input of the audit: its name and its two operands."""

    name: str
    a: Array
    b: Array


def _specials(dtype: np.dtype[Any], block: int, rng: np.random.Generator) -> Pair:
    """Rows of a holding NaN, +inf, -inf at K's first, last and block-boundary positions,
    columns of b holding a zero, an infinity of the other sign or NaN there."""
    k = 2 * block + 3
    a = rng.uniform(-1, 1, (6, k)).astype(dtype)
    b = rng.uniform(-1, 1, (k, 5)).astype(dtype)
    for row, (value, at) in enumerate(
        [(np.nan, 0), (np.inf, k - 1), (-np.inf, block), (np.inf, block - 1), (np.nan, k - 1)]
    ):
        a[row, at] = value
    b[block, 1] = 0.0  # -inf * 0 in output (2, 1)
    b[k - 1, 2] = -np.inf  # inf * -inf in (1, 2); +inf and -inf meet in (3, 2)
    b[0, 3] = np.nan  # a NaN column
    return Pair("NaN and infinities", a, b)


def contraction_cases(
    dtype: np.dtype[Any], d: Declared, rng: np.random.Generator
) -> Iterator[Pair]:
    """The audit's inputs (the module docstring's list), each named."""
    info: Any = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    block = d.block if d.order is not None else 64

    def uniform(shape: tuple[int, ...], low: float = -1.0) -> Array:
        return rng.uniform(low, 1.0, shape).astype(dtype)

    yield Pair("random", uniform((7, 3 * block + 5)), uniform((3 * block + 5, 6)))
    yield Pair("1 x 1 x 1", uniform((1, 1)), uniform((1, 1)))
    yield Pair("17 x 13 x 11", uniform((17, 13)), uniform((13, 11)))
    half = rng.uniform(1, 2, (4, block + 7)) * np.exp2(rng.integers(-4, 5, (4, block + 7)))
    a = np.concatenate([half, half], axis=1).astype(dtype)
    column = rng.uniform(1, 2, (block + 7, 3))
    b = np.concatenate([column, -column], axis=0)
    b[::16] += rng.uniform(0, 1, b[::16].shape) * 2.0**-8
    yield Pair("cancellation", a, b.astype(dtype))
    big, small = float(info.max) / 4, float(info.tiny) * 4
    wide = np.array([[big, 1.0, small, -big], [small, big, -1.0, 0.5]])
    yield Pair(
        "dynamic range", wide.astype(dtype), np.array([[0.5], [2.0], [big], [0.5]]).astype(dtype)
    )
    yield Pair("overflow", np.full((2, 3), float(info.max), dtype), np.full((3, 2), 2.0, dtype))
    if float(info.max) >= 1.5 * 2.0**127 and float(info.tiny) <= 2.0**-75:
        # BF16 (and F32) products past float32's range: 2^64 * 2^64 overflows it (an unrounded
        # product gives 2^126 where one rounded to float32 first gives inf); 2^-74 * 2^-75 and
        # 2^-75 * 2^-75 fall below it (2^-148 against 2^-149: seen in an F32 output only)
        edge = np.array([[-1.5 * 2.0**127, 2.0**64], [2.0**-74, 2.0**-75]])
        column = np.array([[1.0, 2.0**-75], [2.0**64, 2.0**-75]])
        yield Pair("products past float32", edge.astype(dtype), column.astype(dtype))
    yield Pair("constant sign, K = 4096", uniform((2, 4096), 0.5), uniform((4096, 3), 0.5))
    yield _specials(dtype, block, rng)
    subnormal = float(info.smallest_subnormal)
    tiny = np.array([[subnormal, -subnormal * 3, small], [small, small, small]], dtype)
    yield Pair("subnormals", tiny, np.array([[1.0], [1.0], [2.0**-4]], dtype))
    if float(info.tiny) <= 2.0**-126:
        # normal products near float32's smallest normal whose neighbours cancel to subnormal
        # partial sums (2^-125 - (1 - 2^-7) 2^-125 = 2^-132), in K order and in pairs alike:
        # kept, the output is (1 + 2^-6) 2^-125; flushed at each step, 2^-125
        near = np.array([1.0, -(1 - 2.0**-7), 1.0, -(1 - 2.0**-7), 1.0]) * 2.0**-63
        rows = np.full((2, 5), 2.0**-62) * np.array([[1.0], [-1.0]])
        yield Pair("subnormal partial sums", rows.astype(dtype), near[:, None].astype(dtype))
    zeros = np.array([[-0.0, 0.0], [-1.0, 1.0], [-0.0, -0.0]], dtype)
    yield Pair("signed zeros", zeros, np.array([[0.0, -0.0], [-0.0, -0.0]], dtype))
    yield Pair("K = 0", uniform((3, 0)), uniform((0, 4)))
    yield Pair("K = 1", uniform((5, 1)), uniform((1, 3)))
    yield Pair("stacks (2, 3) broadcast", uniform((2, 1, 4, 9)), uniform((3, 9, 5)))
