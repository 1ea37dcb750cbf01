"""The host functions of the op table's rows where NumPy has no ufunc (sigmoid, rsqrt, erf) or
where its refusal needs fueltensor's words (pow of integers): what runs the dtypes no contract
admits, labelled `host` in every plan (`fueltensor.ops`, each row's `host`)."""

from __future__ import annotations

import math

import numpy as np


def host_astype(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """`x.astype(dtype)` on the host: the casts no contract serves (integers, bools, complex)."""
    return x.astype(dtype)


def host_power(x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """`np.power` for dtypes no contract admits, its refusal of a negative integer exponent for
    an integer base said in fueltensor's words."""
    try:
        out: np.ndarray = np.power(x1, x2)
    except ValueError:
        if x1.dtype.kind in "iub" and x2.dtype.kind in "iub":
            raise ValueError(
                f"an integer ({x1.dtype}) raised to a negative integer ({x2.dtype}) power has no "
                "integer result; make the base a float first, e.g. x.astype(ft.float64) ** y"
            ) from None
        raise
    return out


def host_sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) on the host (NumPy has no sigmoid ufunc), as exp(x) / (1 + exp(x))
    for negative x: the same value, where exp(-x) would overflow to inf and give 0 for a result
    that is a subnormal (x in [-745.1, -709.8] in double)."""
    e = np.exp(-np.abs(x))  # at most 1: never overflows
    out: np.ndarray = np.where(x < 0, e / (1 + e), 1 / (1 + e))
    return out


def host_rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x) on the host (NumPy has no rsqrt ufunc)."""
    out: np.ndarray = 1 / np.sqrt(x)
    return out


def host_erf(x: np.ndarray) -> np.ndarray:
    """The C library's erf (Python's `math.erf`) lane by lane, on the host (NumPy has none)."""
    if x.dtype.kind not in "fiub":
        raise TypeError(f"erf takes real numbers, got {x.dtype}")
    out: np.ndarray = np.vectorize(math.erf, otypes=[x.dtype if x.dtype.kind == "f" else "f8"])(x)
    return out


def host_clip(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """x bounded to [low, high] by the clamp contracts' rule, minimum(maximum(x, low), high)
    with the binary maximum and minimum's: a NaN operand returned as it is (x's first, then
    low's, then high's), the left operand kept on a tie (-0 stays -0 against +0)."""
    x, low, high = np.broadcast_arrays(x, low, high)
    out = np.array(x, copy=True)
    with np.errstate(invalid="ignore"):
        np.copyto(out, low, where=(low > out) | (np.isnan(low) & ~np.isnan(out)))
        np.copyto(out, high, where=(high < out) | (np.isnan(high) & ~np.isnan(out)))
    return out
