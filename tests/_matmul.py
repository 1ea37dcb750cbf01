"""An independent reference for matmul tests, written from the formula: each output's dot
product in Fractions, rounded once to nearest even (`round_fraction`), specials as IEEE 754
arithmetic gives them in any order; and `same`, bit for bit with a NaN against any NaN."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np


def round_fraction(q: Fraction, dtype: Any) -> Any:
    """q rounded once to `dtype`, nearest even, past the largest finite value the infinity."""
    info = ml_dtypes.finfo(dtype)
    if q == 0:
        return np.array(0.0, dtype)
    sign, q = (-1 if q < 0 else 1), abs(q)
    p, emin = info.nmant + 1, info.minexp
    e = q.numerator.bit_length() - q.denominator.bit_length()
    e += 1 if Fraction(2) ** e * 2 <= q else 0
    e -= 1 if Fraction(2) ** e > q else 0
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    n, rest = divmod(q, ulp)
    n += rest > ulp / 2 or (rest == ulp / 2 and n % 2 == 1)
    value = n * ulp
    if value > Fraction(float(info.max)):
        return np.array(sign * math.inf, dtype)
    return np.array(sign * float(value), np.float64).astype(dtype)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (M, K) @ b (K, N) from the formula, output by output."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    out = np.empty((m, n), a.dtype)
    for i in range(m):
        for j in range(n):
            x, y = a[i].astype(np.float64), b[:, j].astype(np.float64)
            nan = np.isnan(x).any() or np.isnan(y).any()
            zero_inf = ((np.isinf(x) & (y == 0)) | ((x == 0) & np.isinf(y))).any()
            infinite = [
                np.sign(x[t]) * np.sign(y[t]) for t in range(k) if np.isinf(x[t]) or np.isinf(y[t])
            ]
            if nan or zero_inf or (1.0 in infinite and -1.0 in infinite):
                out[i, j] = np.nan
            elif infinite:
                out[i, j] = infinite[0] * math.inf
            else:
                total = sum((Fraction(x[t]) * Fraction(y[t]) for t in range(k)), Fraction(0))
                negative = k > 0 and all(
                    x[t] * y[t] == 0 and np.signbit(x[t]) != np.signbit(y[t]) for t in range(k)
                )
                out[i, j] = -0.0 if total == 0 and negative else round_fraction(total, a.dtype)
    return out


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, a NaN against any NaN."""
    g, w = got.astype(np.float64), want.astype(np.float64)
    both = np.isnan(g) & np.isnan(w)
    bits = f"u{got.dtype.itemsize}"
    differ = ~both & (got.view(bits) != want.view(bits))
    assert not differ.any(), (np.argwhere(differ)[:3], got[differ][:3], want[differ][:3])
