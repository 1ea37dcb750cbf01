"""The oracle's matmul (docs/matmul.md): each output the exact dot product of its row of a and
column of b, rounded once to the output's format, nearest even (`accumulator: exact`), and the
judge's exact dot products for its bound.

Every product is made exact as integers times powers of two: each operand is split by frexp into
a fraction f in [0.5, 1) and an exponent, and the fractions' product by Dekker's TwoProduct
(Veltkamp's split, no FMA: Python before 3.13 has no math.fma, NumPy none) into p + e = f_a·f_b
exactly, neither near float64's range limits since |f_a·f_b| >= 1/4; the exponents are added as
integers, so no product of F64 operands overflows or underflows on the way. For BF16, F16 and
F32 operands (at most 24 significant bits each) e is zero and left out. The 2K (or K) terms of
each output are summed exactly by `kernels.exact_sums.exact_terms` and rounded once
(`exact_sums.rounded`): a finite row and column whose exact dot product is beyond the format give
the infinity of its sign.

Special values, as IEEE 754 arithmetic gives them in any order: a NaN operand among an output's
products gives that NaN quieted (the first in K order, a's before b's at one position, payload
and sign kept); otherwise inf · 0, or infinite products of both signs, the quiet NaN of no
payload; infinite products of one sign, that infinity; an exact zero, -0 where every product is
a -0 (K = 0: +0) and +0 otherwise.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from fueltensor.kernels import KernelFn
from fueltensor.kernels.contraction_thunk import thunk
from fueltensor.kernels.exact_reductions import FLOATS
from fueltensor.kernels.exact_sums import exact_terms, quieted, rounded
from fueltensor.ops import CONTRACTION_OPS

Array = NDArray[Any]

_F64: Final = np.dtype(np.float64)
_SPLIT: Final = 134217729.0
"""2^27 + 1: Veltkamp's splitter for float64 (two halves of 26 and 27 bits)."""
_SHIFT: Final = 53
"""frexp's fraction in [0.5, 1) times 2**53: a 53-bit integer significand."""
_CHUNK: Final = 1 << 20
"""Products made at once (outputs x K): the terms' tables stay within tens of megabytes."""


def _halves(x: Array) -> tuple[Array, Array]:
    """Veltkamp's split of float64 `x` (|x| < 1) into hi + lo, each of at most 27 bits."""
    c = _SPLIT * x
    hi = c - (c - x)
    return hi, x - hi


def _operand(x: Array) -> tuple[Array, Array, Array, Array]:
    """A float operand's fractions (non-finite ones as 0), their halves, and its exponents."""
    with np.errstate(invalid="ignore"):
        wide = x.astype(_F64)
    fraction, power = np.frexp(np.where(np.isfinite(wide), wide, 0.0))
    hi, lo = _halves(fraction)
    return fraction, hi, lo, power.astype(np.int64)


def _terms(a: Array, b: Array, wide: bool) -> tuple[Array, Array]:
    """The exact products of rows of `a` (r, K) and columns of `b` (K, N), as (significands,
    powers) tables of (r * N, terms): p and, for F64 operands (`wide`), TwoProduct's e."""
    fa, ha, la, pa = (t[:, None, :] for t in _operand(a))
    fb, hb, lb, pb = (t.T[None, :, :] for t in _operand(b))
    p = fa * fb
    parts = [p]
    if wide:
        parts.append(((ha * hb - p) + ha * lb + la * hb) + la * lb)
    significands, powers = [], []
    for part in parts:
        fraction, power = np.frexp(part)
        significands.append(np.ldexp(fraction, _SHIFT).astype(np.int64))
        powers.append(power.astype(np.int64) + pa + pb)
    rows = p.shape[0] * p.shape[1]
    return (
        np.concatenate([s.reshape(rows, p.shape[2]) for s in significands], axis=1),
        np.concatenate([q.reshape(rows, p.shape[2]) for q in powers], axis=1),
    )


def _classes(a: Array, b: Array) -> Array:
    """Each product's class (r * N, K): ±1 for a finite nonzero product, its signed zero,
    ±inf, or NaN (a NaN operand, inf · 0), as float64 multiplication of the operands' signs
    gives it."""
    with np.errstate(invalid="ignore"):
        ca, cb = (np.where(np.isfinite(x) & (x != 0), np.sign(x), x) for x in (a, b))
        products: Array = ca.astype(_F64)[:, None, :] * cb.astype(_F64).T[None, :, :]
    return products.reshape(a.shape[0] * b.shape[1], a.shape[1])


def _special(a_row: Array, b_col: Array, classes: Array) -> Any:
    """The value of an output whose products hold a NaN or an infinity (module docstring)."""
    nan = np.isnan(classes)
    with np.errstate(invalid="ignore"):  # ml_dtypes' isnan of a signaling NaN raises invalid
        in_a = np.isnan(a_row)
        operand = in_a | np.isnan(b_col)
    if operand.any():
        at = int(np.argmax(operand))
        return quieted(a_row[at] if in_a[at] else b_col[at])
    infinite = np.isinf(classes)
    if nan.any() or ((classes[infinite] > 0).any() and (classes[infinite] < 0).any()):
        return np.array(np.nan, a_row.dtype)
    return np.array(classes[infinite][0], a_row.dtype)


def _block(a: Array, b: Array, out: Array) -> None:
    """out (r, N) = a (r, K) @ b (K, N), each output exact and rounded once."""
    k = a.shape[1]
    significands, powers = _terms(a, b, a.dtype == _F64)
    totals, exponent = exact_terms(significands, powers)
    flat = out.reshape(-1)
    flat[...] = rounded(totals, exponent, out.dtype)
    classes = _classes(a, b)
    zero = np.array([n == 0 for n in totals], bool)
    negative = np.all((classes == 0) & np.signbit(classes), axis=1) & (k > 0)
    flat[zero] = np.where(negative[zero], -0.0, 0.0).astype(out.dtype)
    for r in np.flatnonzero(~np.isfinite(classes).all(axis=1)):
        i, j = divmod(int(r), b.shape[1])
        flat[r] = _special(a[i], b[:, j], classes[r])


def _stacks(a: Array, b: Array) -> tuple[Array, Array, tuple[int, ...]]:
    """a and b as (S, M, K) and (S, K, N), their stacks broadcast, and the stacks' shape."""
    stack = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    count = int(np.prod(stack, dtype=np.int64))
    wide_a = np.broadcast_to(a, (*stack, *a.shape[-2:])).reshape(count, *a.shape[-2:])
    wide_b = np.broadcast_to(b, (*stack, *b.shape[-2:])).reshape(count, *b.shape[-2:])
    return wide_a, wide_b, stack


def exact_matmul(a: Array, b: Array, out: Array) -> None:
    """Write into the dense `out` (..., M, N) the exact a (..., M, K) @ b (..., K, N), stacks
    broadcast, each output rounded once to out's dtype; specials as the module says."""
    if out.size == 0:
        return
    sa, sb, _ = _stacks(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    flat = out.reshape(sa.shape[0], m, n)
    rows = max(1, _CHUNK // max(1, k * n))
    for s in range(sa.shape[0]):
        for i in range(0, m, rows):
            _block(sa[s, i : i + rows], sb[s], flat[s, i : i + rows])


def exact_dots(a: Array, b: Array) -> tuple[list[Fraction], list[Fraction]]:
    """Each output's exact dot product and exact Σ|a_il||b_lj| as Fractions (row-major over the
    broadcast stacks, then M, then N), the non-finite operands' products left out: the judge's
    bound needs both before any rounding."""
    sa, sb, _ = _stacks(a, b)
    found: tuple[list[Fraction], list[Fraction]] = ([], [])
    for s in range(sa.shape[0]):
        significands, powers = _terms(sa[s], sb[s], a.dtype == _F64)
        for into, terms in zip(found, (significands, np.abs(significands)), strict=True):
            totals, exponent = exact_terms(terms, powers)
            scale = Fraction(2) ** exponent
            into.extend(t * scale for t in totals)
    return found


def oracle_entries(prefix: str) -> dict[str, KernelFn]:
    """fuel-reference-backend's contraction thunks by entry point (`ref_<op>_<dtype>`)."""
    return {
        f"{prefix}ref_{row.kernel_op}_{suffix}": thunk(
            f"ref_{row.kernel_op}_{suffix}",
            dtype,
            exact_matmul,
            f"fuel-reference-backend ref_{row.kernel_op}_{suffix}: out = a @ b in {dtype}, "
            "exact, rounded once.",
        )
        for row in CONTRACTION_OPS
        for suffix, dtype in FLOATS
    }
