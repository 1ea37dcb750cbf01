"""Exact sums: the reference oracle's reduction (docs/reductions.md) and the judge's reference.

Each output element is the exact sum of its reduced elements, rounded once to the output's
format, nearest even: no order, no accumulator, so no bound but the final half ULP. Every value
of the float formats is an integer times a power of two; the integers are added per exponent in
int64 (each 53-bit significand cut into 27- and 26-bit halves, so 2^36 terms cannot overflow),
then the exponents' sums combined as Python integers. The exact sum N * 2**E is rounded to
float64 by Python's correctly rounded integer division, and to a narrower format by rounding it
first to odd at 53 bits (exact in float64, and innocuous: 53 >= p + 2 for every narrower p, as
Boldo and Melquiond show) then by the oracle's bit-field cast (`casting.cast_bits`).

Special values, as IEEE 754 addition gives them in any order: a NaN among the terms gives a NaN
(the first in row-major order of the reduced axes, quieted, its payload and sign kept); +inf and
-inf together give the quiet NaN of no payload and a clear sign (IEEE 754 leaves the sign
of an invalid operation's NaN open); one infinity, that infinity; an exact zero sum, -0 where
every term is -0 (an empty sum included: +0) and +0 otherwise; a finite sum beyond the format's
range, the infinity of its sign.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from fueltensor.kernels.casting import bits_of, cast_bits

Array = NDArray[Any]

_HALF: Final = 26
"""Bits of a significand's low half (the high half has at most 27)."""
_SHIFT: Final = 53
"""frexp's fraction in [0.5, 1) times 2**53: a 53-bit integer significand."""
_F64: Final = np.dtype(np.float64)


def rows(x: Array, axes: tuple[int, ...]) -> Array:
    """x as (outputs, reduced elements): the kept axes in order, then the reduced ones in
    row-major order (the order the first NaN is taken in)."""
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, kept + list(axes))
    outputs, reduced = (int(np.prod([x.shape[i] for i in a], dtype=np.int64)) for a in (kept, axes))
    return moved.reshape(outputs, reduced)


def _exact(wide: Array) -> tuple[list[int], int]:
    """Each row's exact finite sum as N_r * 2**exponent (one exponent for every row)."""
    fraction, power = np.frexp(wide)
    return exact_terms(np.ldexp(fraction, _SHIFT).astype(np.int64), power)  # exact: |f| < 1


def exact_terms(significand: Array, power: Array) -> tuple[list[int], int]:
    """Each row's exact sum of the terms significand * 2**(power - 53) (two int64 tables of
    (rows, terms), every |significand| < 2**53) as N_r * 2**exponent, one exponent for every
    row: the exact sums of `exact_sum` and of the oracle's dot products (`kernels.exact_matmul`),
    whose products' exponents lie beyond float64's.

    The powers are gathered into windows of `width` consecutive ones, each half shifted to its
    window's lowest power: a half under 2**27 shifted by less than `width` bits, summed over
    fewer than 2**b terms (b the count's bit length), stays under 2**62 when width <= 36 - b;
    so the halves add in int64 per window, and only the windows' sums become Python integers."""
    terms = significand.shape[1] if significand.ndim == 2 else 0
    if significand.size == 0:
        return [0] * significand.shape[0], 0
    width = max(1, 36 - terms.bit_length())
    lowest = int(power.min())
    window, shift = np.divmod(power - lowest, width)
    high = (significand >> _HALF) << shift  # floor: high * 2^26 + low, both shifted alike
    low = (significand & ((1 << _HALF) - 1)) << shift
    windows = int(window.max()) + 1
    at = (np.arange(significand.shape[0])[:, None] * windows + window).ravel()
    sums = []
    for half in (high, low):
        window_sums = np.zeros(significand.shape[0] * windows, np.int64)
        np.add.at(window_sums, at, half.ravel())
        sums.append(window_sums.reshape(-1, windows))
    used = np.flatnonzero((sums[0] != 0).any(axis=0) | (sums[1] != 0).any(axis=0))
    base = lowest - _SHIFT
    totals: list[int] = []
    for h, lo in zip(sums[0][:, used].tolist(), sums[1][:, used].tolist(), strict=True):
        total = 0
        for k, w in enumerate(used.tolist()):
            total += ((h[k] << _HALF) + lo[k]) << (w * width)
        totals.append(total)
    return totals, base


def exact_rows(table: Array) -> tuple[list[Fraction], list[Fraction]]:
    """Each row of `table` (outputs, reduced elements)'s exact sum and exact sum of magnitudes,
    as Fractions, its non-finite elements left out: the judge's bound (|s^ - s| against the sum
    of |x|) needs both before any rounding."""
    with np.errstate(invalid="ignore"):
        wide = table.astype(_F64)
    wide = np.where(np.isfinite(wide), wide, 0.0)
    found = []
    for values in (wide, np.abs(wide)):
        totals, exponent = _exact(values)
        scale = Fraction(2) ** exponent
        found.append([n * scale for n in totals])
    return found[0], found[1]


def _to_odd(n: int, exponent: int) -> float:
    """n * 2**exponent rounded to odd at 53 bits, as a float64 (exact)."""
    drop = n.bit_length() - _SHIFT
    if drop > 0:
        n = (n >> drop) | (n & ((1 << drop) - 1) != 0)
        exponent += drop
    return float(np.ldexp(np.float64(n), exponent))


def rounded(totals: list[int], exponent: int, dtype: np.dtype[Any]) -> Array:
    """The exact sums N_r * 2**exponent rounded once to `dtype` (nearest even)."""
    if dtype == _F64:
        scale = 1 << -exponent if exponent < 0 else 1
        grown = [n << exponent if exponent >= 0 else n for n in totals]
        return np.array([_f64(n, scale) for n in grown], _F64)
    odd = np.array([_to_odd(abs(n), exponent) * (1 if n >= 0 else -1) for n in totals], _F64)
    return cast_bits(odd, dtype, False).view(dtype)


def _f64(n: int, scale: int) -> float:
    """n / scale correctly rounded to float64, the infinity of its sign past the range."""
    try:
        return n / scale
    except OverflowError:
        return float("inf") if n > 0 else float("-inf")


def exact_sum(x: Array, axes: tuple[int, ...], out: Array) -> None:
    """Write into the dense `out` (x's dtype, x's shape without `axes`) the exact sum of x over
    `axes`, each element rounded once; special values as the module docstring says."""
    table = rows(x, axes)
    with np.errstate(invalid="ignore"):  # a signaling NaN widened: its row is a special's
        wide = table.astype(_F64)
    finite = np.isfinite(wide)
    flat = out.reshape(-1)
    totals, exponent = _exact(np.where(finite, wide, 0.0))
    flat[...] = rounded(totals, exponent, x.dtype)
    zero = np.array([n == 0 for n in totals], bool)
    if zero.any():
        negative = np.all(np.signbit(table) & (wide == 0), axis=1) & (table.shape[1] > 0)
        flat[zero] = np.where(negative[zero], -0.0, 0.0).astype(x.dtype)
    _specials(table, wide, finite, flat)


def _specials(table: Array, wide: Array, finite: Array, flat: Array) -> None:
    """Overwrite the outputs of rows with a NaN or an infinity (the module docstring's rules)."""
    special = ~finite.all(axis=1)
    for r in np.flatnonzero(special):
        row, values = table[r], wide[r]
        nan = np.isnan(values)
        if nan.any():
            flat[r] = quieted(row[int(np.argmax(nan))])
        elif (values == np.inf).any() and (values == -np.inf).any():
            flat[r] = np.array(np.nan, flat.dtype)
        else:
            flat[r] = values[~finite[r]][0]


def quieted(value: Any) -> Any:
    """A NaN with its quiet bit (the fraction's top bit) set, sign and payload kept: IEEE 754's
    result for an operation's NaN operand."""
    nan = np.asarray(value)
    unsigned = np.dtype(f"u{nan.dtype.itemsize}")
    quiet = 1 << (bits_of(nan.dtype).mantissa - 1)
    return (nan.view(unsigned) | np.array(quiet, unsigned)).view(nan.dtype)
