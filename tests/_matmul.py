"""Independent references for matmul tests, written from the formulas: `reference`, each
output's dot product in Fractions rounded once to nearest even (`round_fraction`), specials as
IEEE 754 arithmetic gives them in any order; `in_order`, fuel-cpu-backend's declared order (a
float32 sum from -0, each exact product added and rounded in K order, rounded once to the
output) in Fractions step by step; `same`, bit for bit with a NaN against any NaN; `views`,
operand pairs in every layout; and `over_stacks`, a 2-D reference applied as np.matmul would."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

import fueltensor as ft


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


def _step(acc: np.float32, x: float, y: float) -> np.float32:
    """fl32(acc + x·y) with the product exact: in Fractions where every term is finite (a zero
    sum is -0 only where both terms are -0: acc and a product of unlike signs), else IEEE 754
    arithmetic on the specials (inf·0 and inf + -inf give NaN)."""
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(acc)):
        with np.errstate(all="ignore"):
            return np.float32(float(acc) + x * y)
    term = Fraction(x) * Fraction(y)
    total = Fraction(float(acc)) + term
    if total == 0:
        unlike = math.copysign(1, x) != math.copysign(1, y)
        return np.float32(-0.0 if np.signbit(acc) and term == 0 and unlike else 0.0)
    return np.float32(round_fraction(total, np.float32))


def in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (M, K) @ b (K, N) in the declared order: per output acc = -0, acc = fl32(acc + a_il ·
    b_lj) for l in K order (the product unrounded), rounded once to a's dtype; K = 0 gives +0."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    out = np.zeros((m, n), np.float32)
    for i in range(m):
        for j in range(n):
            acc = np.float32(-0.0)
            for t in range(k):
                acc = _step(acc, float(a[i, t]), float(b[t, j]))
            out[i, j] = acc if k else np.float32(0.0)
    with np.errstate(over="ignore"):  # a sum past the output's range: its infinity
        return out.astype(a.dtype)


def views(rng: np.random.Generator, dtype: Any) -> list[tuple[np.ndarray, np.ndarray]]:
    """Operand pairs: 1-D either side, stacks broadcast, transposed, strided, flipped, offset."""
    m = rng.standard_normal((6, 8)).astype(dtype)
    s = rng.standard_normal((2, 1, 3, 4)).astype(dtype)
    t = rng.standard_normal((5, 4, 2)).astype(dtype)
    return [
        (m[0], m[1:, :].T[:8, :3]),  # 1-D x1
        (m[:3, :5], m[1, :5]),  # 1-D x2
        (m[0], m[1]),  # both 1-D: a 0-d result
        (s, t),  # stacks broadcast
        (m[::2, ::-1][:, :5], m[::-1, 1:6][:5].T),  # strided, flipped, transposed
        (np.broadcast_to(m[:1, :4], (3, 4)), m[:4, :2]),  # a stride-0 operand
    ]


def over_stacks(ref: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The 2-D reference `ref` applied as x @ y is: a 1-D x as (1, K), a 1-D y as (K, 1), the
    stacks broadcast, the unit axes dropped again (np.matmul's result shape)."""
    a2 = x[None, :] if x.ndim == 1 else x
    b2 = y[:, None] if y.ndim == 1 else y
    stack = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a3 = np.broadcast_to(a2, (*stack, *a2.shape[-2:]))
    b3 = np.broadcast_to(b2, (*stack, *b2.shape[-2:]))
    want = np.empty((*stack, a2.shape[-2], b2.shape[-1]), x.dtype)
    for index in np.ndindex(*stack):
        want[index] = ref(np.ascontiguousarray(a3[index]), np.ascontiguousarray(b3[index]))
    shape = np.matmul(x.astype(np.float64), y.astype(np.float64)).shape
    return want.reshape(shape)


def product(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """ft.matmul(x, y) as NumPy, and the kernels the trace names (host where none)."""
    with ft.trace() as plans:
        got = np.asarray(ft.matmul(ft.asarray(x), ft.asarray(y)))
    return got, [p.kernel.name if p.kernel else "host" for p in plans]
