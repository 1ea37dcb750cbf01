"""The unary functions' correctly rounded values, written here from the op table's definitions
(`row.reference`) with MPFR through gmpy2, independently of fueltensor's judge and kernels:
the reference the dispatch and oracle tests hold the unary contracts to."""

from __future__ import annotations

import gmpy2
import numpy as np

from fueltensor.ops import ContractOp
from fueltensor.testing import FloatFormat, float_format

BITS = 200
"""Precision of the evaluation before the one rounding into the format."""


def context(f: FloatFormat) -> gmpy2.context:
    """MPFR's context of the IEEE format `f`: its precision and exponent range, subnormals
    included (MPFR's exponents count 0.5 <= m < 1, so emax is bias + 1)."""
    return gmpy2.context(
        precision=f.precision,
        emax=f.bias + 1,
        emin=3 - f.bias - f.precision,
        subnormalize=True,
    )


def default_nan(f: FloatFormat) -> int:
    """This machine's default NaN (double `inf - inf`) narrowed to `f`: sign, quiet bit, the
    high payload bits."""
    with np.errstate(invalid="ignore"):
        made = int((np.array([np.inf]) - np.array([np.inf])).view(np.uint64)[0])
    payload = (made & ((1 << 52) - 1)) >> (52 - f.mantissa)
    return (f.sign_bit if made >> 63 else 0) | (f.exponent_max << f.mantissa) | payload


def correctly_rounded(row: ContractOp, x: np.ndarray) -> np.ndarray:
    """`row` of every element of `x` correctly rounded into x's dtype, as bit patterns: a NaN
    input quieted with its payload (|x|: its sign bit cleared, -x: flipped, nothing else), a
    NaN made from a number this machine's default NaN."""
    assert row.reference is not None
    f = float_format(x.dtype)
    rule = dict(row.special)["NaN"]
    out = []
    with np.errstate(invalid="ignore"):  # a signaling NaN widened
        values = x.astype(np.float64).tolist()
    for pattern, value in zip(x.view(f.uint).tolist(), values, strict=True):
        if value != value:
            sign_bit = {"|x|": pattern & ~f.sign_bit, "-x": pattern ^ f.sign_bit}
            out.append(sign_bit.get(rule, pattern | f.quiet_bit))
            continue
        with gmpy2.context(precision=BITS):
            exact = row.reference(gmpy2, gmpy2.mpfr(value))
        with context(f):
            rounded = float(+exact)
        if rounded != rounded:
            out.append(default_nan(f))
        else:
            out.append(int(np.array([rounded]).astype(f.dtype).view(f.uint)[0]))
    return np.array(out, f.uint)


def ulps(a: np.ndarray, b: np.ndarray, f: FloatFormat) -> np.ndarray:
    """How many representable values lie between the (non-NaN) patterns `a` and `b`."""

    def ordered(p: np.ndarray) -> np.ndarray:
        sign = f.uint.type(f.sign_bit)
        magnitude = (p & ~sign).astype(np.int64)
        return np.where(p & sign, -magnitude, magnitude)

    return np.abs(ordered(a) - ordered(b))


def assert_within(row: ContractOp, x: np.ndarray, got: np.ndarray, bound: float) -> None:
    """`got` is `row` of `x` as a unary contract says: NaN bits by the table's NaN rules,
    signed zeros and infinities exact (C99 Annex F), every other value within `bound` ULPs of
    the correctly rounded one."""
    f = float_format(x.dtype)
    want = correctly_rounded(row, np.ascontiguousarray(x).reshape(-1))
    got_bits = np.ascontiguousarray(got).reshape(-1).view(f.uint)
    magnitude = want & ~f.uint.type(f.sign_bit)
    inf = f.exponent_max << f.mantissa
    fixed = (magnitude > inf) | (magnitude == inf) | (magnitude == 0)
    np.testing.assert_array_equal(got_bits[fixed], want[fixed], err_msg=f"{row.name} {f.dtype}")
    worst = int(ulps(got_bits[~fixed], want[~fixed], f).max(initial=0))
    assert worst <= bound, f"{row.name} {f.dtype}: {worst} ULP from the correctly rounded value"
