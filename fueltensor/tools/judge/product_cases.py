"""The inputs of the judge's audit of a product (`judge.products`, docs/reductions.md): rows
near 1 (1 + k ulp, k in -4..4, so long rows neither overflow nor underflow); a long run of 10^4
values 1 + k ulp, k >= 0 (where a narrow accumulator rounds every factor back to 1); a dynamic
range of 2^-2 .. 2^2 that stays in range; huge beside tiny (a pair's product near 1, but a
lane's partial products overflow); products that underflow to a subnormal or a zero, subnormal
elements, products that overflow; zeros of both signs among numbers and alone; NaN, infinities
and zeros at the first, last and block-boundary positions (inf·0 among them); then the lengths
and axes every reduction's audit takes (`reduction_cases.shaped`), the empty length included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from fueltensor.kernels.casting import bits_of
from fueltensor.tools.judge.orders import Declared
from fueltensor.tools.judge.reduction_cases import Case, shaped
from fueltensor.tools.judge.references import Array


def _placed(near: Array, block: int) -> Array:
    """`near` (rows of 2B + 3) with NaN, infinities and zeros placed at the first, last and
    block-boundary positions: a NaN; an infinity with a zero (inf·0); one infinity; zeros."""
    x: Array = near[:9].copy()
    m, nan, inf = x.shape[1], np.nan, np.inf
    for r, placed in enumerate(
        [
            {0: nan}, {m - 1: nan}, {block: nan}, {0: inf, m - 1: 0.0}, {block - 1: -inf},
            {block: -0.0, m - 1: -inf}, {0: -0.0, block: nan, m - 1: inf}, {m - 1: -0.0},
            {0: inf, block: -inf},
        ]
    ):  # fmt: skip
        for j, v in placed.items():
            x[r, j] = v
    return x


def _ranges(dtype: np.dtype[Any], rng: np.random.Generator) -> Iterator[Case]:
    """Products that leave the range: underflow (to a subnormal, to zero), subnormal elements,
    overflow, and huge beside tiny."""
    f = bits_of(dtype)
    low, top = f.min_exp, f.bias
    halves = [[1.5 * 2.0 ** (low // 2), 1.25 * 2.0 ** (low - low // 2 - 5)]] * 3
    yield Case("a product just below the normal range", np.array(halves).astype(dtype), (1,))
    tiny = np.full((3, 40), 2.0 ** (low // 8)) * rng.uniform(1, 2, (3, 40))
    yield Case("a product that underflows to zero", tiny.astype(dtype), (1,))
    least = 2.0 ** (low - f.mantissa)
    sub = np.array([[3 * least, 2.0**4, 1.5], [least, 0.5, 4.0], [-7 * least, 2.0**6, 3.0]])
    yield Case("subnormal elements", sub.astype(dtype), (1,))
    big = np.full((3, 40), 2.0 ** (top // 8)) * rng.uniform(1, 2, (3, 40))
    big[1] *= -1
    yield Case("a product that overflows", big.astype(dtype), (1,))
    huge = 2.0 ** (top * 3 // 4) * rng.uniform(1, 2, (4, 70))
    pairs = np.stack([huge, rng.uniform(0.5, 2, (4, 70)) / huge], -1).reshape(4, -1)
    yield Case("huge beside tiny", pairs.astype(dtype), (1,))


def product_cases(dtype: np.dtype[Any], d: Declared, rng: np.random.Generator) -> Iterator[Case]:
    """A product's inputs (the module docstring's list), each named."""
    b, ulp = d.block, 2.0 ** -bits_of(dtype).mantissa

    def near_one(shape: tuple[int, ...]) -> Array:
        return (1 + ulp * rng.integers(-4, 5, shape)).astype(dtype)

    yield Case("near 1 (1 + k ulp, |k| <= 4)", near_one((8, 3 * b + 5)), (1,))
    most = 3 if bits_of(dtype).mantissa > 10 else 1  # (1 + 2^-10)^10^4 overflows F16
    run = 1 + ulp * rng.integers(0, most + 1, (1, 10_000))
    yield Case(f"10^4 values 1 + k ulp, k in 0..{most}", run.astype(dtype), (1,))
    spread = rng.uniform(1, 2, (4, b + 7)) * np.exp2(rng.integers(-2, 3, (4, b + 7)))
    yield Case("a dynamic range of 2^-2 .. 2^2", (spread * rng.choice([-1, 1], spread.shape))
               .astype(dtype), (1,))  # fmt: skip
    yield from _ranges(dtype, rng)
    zeros = [[-1, -0.0, 2, 3], [-0.0, -0.0, 1, 1], [-0.0, -0.0, -0.0, 1], [0.0, -2, -3, -4]]
    yield Case("signed zeros", np.array(zeros, dtype), (1,))
    yield Case("NaN, infinities and zeros", _placed(near_one((9, 2 * b + 3)), b), (1,))
    yield from shaped(d, near_one)
