"""pow correctly rounded into a float format, by MPFR (through gmpy2), for the lanes where a
double (or long double) `pow` rounded once is not proven right.

The C library's pow in a wider format is within a small bound of the true value (glibc
documents 1 ULP of double). Rounded once into a narrower format it is the correctly rounded
result, unless a rounding boundary of that format lies within the bound: those few lanes
(and the exact midpoints) are handed here. MPFR's pow is correctly rounded by specification,
and its context is set to the format's precision and exponent range, subnormals included, so
one call rounds once into the format. gmpy2 is the `certify` extra.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from fueltensor.testing import FloatFormat

BOUND_ULPS: Final = 1024.0
"""The wider pow's error bound taken, in its own ULPs: glibc's documented 1 ULP, times 1024."""
EXTRA: Final = "certify"


def gmpy2_module() -> Any:
    """gmpy2, or ImportError naming the extra that installs it."""
    try:
        import gmpy2
    except ImportError as e:
        raise ImportError(
            "the correctly rounded references (pow, the unary functions) need MPFR: "
            f"pip install 'fueltensor[{EXTRA}]' (or gmpy2)"
        ) from e
    return gmpy2


def available() -> bool:
    """Whether gmpy2 (MPFR) can be imported here."""
    try:
        gmpy2_module()
    except ImportError:
        return False
    return True


def unproven(wide: np.ndarray, rounded: Any) -> np.ndarray:
    """Lanes of a wide pow result (float64 or long double values) whose rounding into a
    narrower format may differ from the true value's: `rounded(values)` rounds into it, and
    the two ends of the error interval round differently. Non-finite and zero lanes are pow's
    exact special cases (or far out of the format's range): never."""
    m = np.abs(wide)
    with np.errstate(all="ignore"):
        delta = BOUND_ULPS * np.spacing(m)
        lo, hi = rounded(m - delta), rounded(m + delta)
    finite = np.isfinite(m) & (m != 0)
    found: np.ndarray = finite & (lo.view(_uint(lo)) != hi.view(_uint(hi)))
    return found


def _uint(a: np.ndarray) -> np.dtype[Any]:
    """The unsigned dtype of an array's width (to compare bits, NaN-safe)."""
    return np.dtype(f"u{a.dtype.itemsize}")


def format_context(fmt: FloatFormat) -> Any:
    """The MPFR context that rounds once, to nearest even, into `fmt`: its precision, its
    exponent range (MPFR's exponents are one above IEEE's) and its subnormals."""
    gmpy2 = gmpy2_module()
    p = fmt.precision
    return gmpy2.context(
        precision=p,
        emin=(1 - fmt.bias) - p + 2,
        emax=fmt.bias + 1,
        subnormalize=True,
        round=gmpy2.RoundToNearest,
    )


def correctly_rounded(x: np.ndarray, y: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """pow(x, y) for float64 operand values (exact in double), each rounded once into `fmt`
    by MPFR, as an array of `fmt`'s dtype."""
    gmpy2 = gmpy2_module()
    ctx = format_context(fmt)
    out = []
    for a, b in zip(x.tolist(), y.tolist(), strict=True):
        xa, yb = gmpy2.mpfr(a, 64), gmpy2.mpfr(b, 64)  # exact: 53 <= 64 bits
        with gmpy2.context(ctx):
            out.append(float(xa**yb))  # one rounding, into the format
    return np.array(out, np.float64).astype(fmt.dtype)
