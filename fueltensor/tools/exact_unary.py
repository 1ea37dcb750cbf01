"""A unary row's correctly rounded result in a float format, by MPFR (through gmpy2): the
judge's and certify's reference for the unary family, never NumPy's.

Each input (widened exactly to an MPFR number) goes through the row's own definition,
`row.reference(gmpy2, x)`, at `PRECISION` bits, and the result is rounded once into the format
by an MPFR context of the format's precision and exponent range with subnormals (so a value in
the subnormal range is rounded once, not to p bits and then again). 200 bits leave no doubt:
a float32 input's hardest case needs about 24 + 40 bits, and the definitions' few 200-bit steps
(sigmoid's three) err by about 2^-198. NaNs follow the table's special cases (`ContractOp.
special`): a NaN input gives that NaN quieted, its payload kept (narrowing keeps the high
payload bits, as the kernels' half types do), or, for the sign-bit operations (`|x|`, `-x`),
the input with only its sign bit changed; a NaN the definition makes from a number (log(-1),
sin(inf)) is this machine's default NaN, what `inf - inf` gives in double, narrowed.
"""

from __future__ import annotations

from functools import cache
from typing import Final

import numpy as np

from fueltensor.ops import ContractOp
from fueltensor.testing import FloatFormat, float_format
from fueltensor.tools.exact_pow import format_context, gmpy2_module

PRECISION: Final = 200
"""Bits the row's definition is evaluated with before the one rounding into the format."""
SIGN_BIT_RESULTS: Final = {"|x|": "clear", "-x": "flip"}
"""The table's NaN results that change only the sign bit (`ops.Special`)."""


@cache
def default_nan(dtype: np.dtype) -> int:
    """This machine's default NaN (`inf - inf` in double) narrowed to `dtype`'s bits."""
    with np.errstate(all="ignore"):
        made = np.array([np.inf]) - np.array([np.inf])
    return narrow_nan(int(made.view(np.uint64)[0]), float_format(dtype))


def narrow_nan(double_bits: int, fmt: FloatFormat) -> int:
    """A double NaN's bits narrowed to `fmt`: its sign, quieted, the high payload bits kept."""
    sign = fmt.sign_bit if double_bits >> 63 else 0
    payload = (double_bits & ((1 << 52) - 1)) >> (52 - fmt.mantissa)
    return sign | (fmt.exponent_max << fmt.mantissa) | fmt.quiet_bit | payload


NAN_RESULTS: Final = {
    "NaN": "that NaN quieted, its payload kept",
    "|x|": "that NaN with its sign bit cleared",
    "-x": "that NaN with its sign bit flipped",
}
"""What each of the table's NaN results means (`ops.Special`)."""


def nan_result(row: ContractOp) -> str:
    """What the row makes of a NaN input: "NaN" (quieted, payload kept), "|x|" or "-x"."""
    return next((result for given, result in row.special if given == "NaN"), "NaN")


def _nan_lanes(row: ContractOp, u: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The NaN inputs' results, by the row's NaN rule, as unsigned patterns."""
    rule = SIGN_BIT_RESULTS.get(nan_result(row))
    sign = u.dtype.type(fmt.sign_bit)
    found: np.ndarray
    if rule == "clear":
        found = u & ~sign
    elif rule == "flip":
        found = u ^ sign
    else:
        found = u | u.dtype.type(fmt.quiet_bit)
    return found


def _values(row: ContractOp, xs: list[float], fmt: FloatFormat) -> list[float]:
    """`row.reference` of each (non-NaN) value at PRECISION bits, rounded once into `fmt` (NaN
    where the definition makes one from a number)."""
    gmpy2 = gmpy2_module()
    wide, narrow = gmpy2.context(precision=PRECISION), format_context(fmt)
    assert row.reference is not None
    with gmpy2.context(wide):  # each context entered once: entering one per value was half
        exact = [row.reference(gmpy2, gmpy2.mpfr(x)) for x in xs]  # the quick judge's time here
    with gmpy2.context(narrow):
        return [float(+v) for v in exact]


def correctly_rounded(row: ContractOp, x: np.ndarray) -> np.ndarray:
    """The correctly rounded `row` of every element of `x` (a float array of F32, F64, BF16 or
    F16), with the NaN rules of the module docstring, as an array of `x`'s dtype. Each distinct
    input is evaluated once."""
    if row.reference is None:
        raise ValueError(f"{row.name} has no reference(m, x) in the op table")
    fmt = float_format(x.dtype)
    flat = np.ascontiguousarray(x).reshape(-1)
    patterns, where = np.unique(flat.view(fmt.uint), return_inverse=True)
    values = patterns.view(fmt.dtype)
    with np.errstate(all="ignore"):
        wide = values.astype(np.float64)
    nan_in = np.isnan(wide)
    got = np.array(_values(row, wide[~nan_in].tolist(), fmt), np.float64)
    out = np.empty(patterns.size, fmt.uint)
    with np.errstate(all="ignore"):
        numbers = got.astype(fmt.dtype).view(fmt.uint)
    numbers[np.isnan(got)] = default_nan(fmt.dtype)
    out[~nan_in] = numbers
    out[nan_in] = _nan_lanes(row, patterns[nan_in], fmt)
    found: np.ndarray = out[where].view(fmt.dtype).reshape(x.shape)
    return found
