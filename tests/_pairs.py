"""The VDPBF16PS order's independent reference (docs/matmul.md, `pairs: odd_first` with
`subnormals: flushed`), written from the Intel SDM, never from a kernel: `sdm`, per output in
Fractions step by step (acc += a[2t+1]·b[2t+1], then acc += a[2t]·b[2t], each product exact,
each add rounded to 24 bits with an unbounded exponent, denormal operands read as zeros,
sums below 2^-126 flushed); `same`, bit for bit with a NaN against any NaN; `random_pairs`,
inputs whose products and partial sums cross float32's smallest normal and largest value.
Shared by tests/tools/test_matmul_cheats.py and tests/kernels/test_matmul_pairs.py."""

from __future__ import annotations

import math
from collections.abc import Iterator
from fractions import Fraction

import ml_dtypes
import numpy as np

from fueltensor.tools.judge.contraction_cases import Pair

BF16 = np.dtype(ml_dtypes.bfloat16)
TINY = Fraction(2) ** -126
"""float32's (and bfloat16's) smallest normal."""


def _round(q: Fraction, bits: int) -> float:
    """q (nonzero) rounded to `bits` significant bits, nearest even, with an unbounded exponent;
    then below 2^-126 a zero of its sign (flushed), from 2^128 on an infinity of its sign."""
    sign, q = (-1.0 if q < 0 else 1.0), abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()  # 2^e <= q < 2^(e+1) after:
    e += 1 if Fraction(2) ** (e + 1) <= q else 0
    e -= 1 if Fraction(2) ** e > q else 0
    ulp = Fraction(2) ** (e - bits + 1)
    n, rest = divmod(q, ulp)
    n += rest > ulp / 2 or (rest == ulp / 2 and n % 2 == 1)
    value = n * ulp
    if value < TINY:
        return math.copysign(0.0, sign)
    return sign * math.inf if value >= 2**128 else sign * float(value)


def _daz(x: float) -> float:
    """A bf16 operand as the instruction reads it: a denormal is a zero of its sign."""
    return math.copysign(0.0, x) if x != 0 and abs(x) < TINY else x


def _step(acc: float, x: float, y: float) -> float:
    """acc + x·y as VDPBF16PS adds one product: DAZ, the product exact, one rounding to 24 bits
    (nearest even), FTZ; IEEE 754's specials where anything is not finite (inf·0: NaN)."""
    x, y = _daz(x), _daz(y)
    if not (math.isfinite(acc) and math.isfinite(x) and math.isfinite(y)):
        return acc + x * y
    term = Fraction(x) * Fraction(y)
    total = Fraction(acc) + term
    if total == 0:  # -0 only where both are -0 (a product of unlike signs)
        negative = math.copysign(1, acc) < 0 and math.copysign(1, x) != math.copysign(1, y)
        return -0.0 if acc == 0 and term == 0 and negative else 0.0
    return _round(total, 24)


def sdm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (M, K) @ b (K, N) by the SDM's VDPBF16PS per output: acc = -0 (+0 for K = 0); for each
    pair of K, the odd product added first (an odd K's missing one -0 · +0); out = acc rounded
    to bf16, nearest even."""
    (m, k), n = a.shape, b.shape[1]
    x, y = a.astype(np.float64).tolist(), b.astype(np.float64).tolist()  # Python floats
    out = np.empty((m, n), BF16)
    for i in range(m):
        for j in range(n):
            acc = -0.0 if k else 0.0
            for t in range(0, k, 2):
                odd = (x[i][t + 1], y[t + 1][j]) if t + 1 < k else (-0.0, 0.0)
                acc = _step(_step(acc, *odd), x[i][t], y[t][j])
            finite = math.isfinite(acc) and acc != 0
            out[i, j] = _round(Fraction(acc), 8) if finite else acc
    return out


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, a NaN against any NaN."""
    both = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    differ = ~both & (got.view(np.uint16) != want.view(np.uint16))
    where = np.argwhere(differ)[:3]
    assert not differ.any(), (where, got[differ][:3], want[differ][:3])


# -- the inputs ---------------------------------------------------------------------------------


def random_pairs(rng: np.random.Generator) -> Iterator[Pair]:
    """Random bf16 matrices at scales where partial sums and products cross float32's smallest
    normal and its largest value, some elements subnormal, zeros of both signs, a few specials;
    shapes with odd K and N no multiple of 16."""
    for scale in (1.0, 2.0**-60, 2.0**-63, 2.0**-66, 2.0**62):
        for m, k, n in ((5, 37, 33), (3, 1, 17), (2, 2, 16), (4, 9, 3)):
            x = rng.standard_normal((m, k)) * scale * np.exp2(rng.integers(-4, 5, (m, k)))
            y = rng.standard_normal((k, n)) * scale * np.exp2(rng.integers(-4, 5, (k, n)))
            x[rng.random((m, k)) < 0.1] = rng.choice([2.0**-130, -(2.0**-127), -0.0, 0.0])
            y[rng.random((k, n)) < 0.1] = rng.choice([2.0**-133, -(2.0**-128), -0.0])
            yield Pair(f"random, scale {scale}, {m}x{k}x{n}", x.astype(BF16), y.astype(BF16))
    x, y = rng.standard_normal((6, 11)), rng.standard_normal((11, 7))
    x[0, 3], x[1, 0], x[2, 10], y[5, 2], y[0, 4] = np.inf, np.nan, -np.inf, 0.0, -np.inf
    yield Pair("specials", x.astype(BF16), y.astype(BF16))
    # x86's tininess after rounding: 2^-126 - 1.5·2^-151 rounds (unbounded) below 2^-126, so is
    # flushed, where gradual underflow would round it up to 2^-126; 2^-126 - 2^-151 (a tie)
    # and 2^-126 - 2^-152 round to 2^-126
    edge = np.array([[-3 * 2.0**-81, 2.0**-63], [-(2.0**-80), 2.0**-63], [-(2.0**-81), 2.0**-63]])
    yield Pair("tininess", edge.astype(BF16), np.array([[2.0**-71], [2.0**-63]]).astype(BF16))
