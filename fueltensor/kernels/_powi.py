"""Integer powers `x ** k` (PowIElementwise) on the chassis: the pure-NumPy bodies.

The contracts (`contracts/fuel-cpu-backend-powi.md`) state the numerics: k = 1 is `x` bit for
bit; every other k is the square-and-multiply loop of LLVM's powi (`r = 1`; per bit of |k|
from the lowest: `r *= y` when the bit is set, then `y *= y`), reciprocated for negative k,
in the working precision (f32 for F32/BF16/F16, f64 for F64). That loop gives `x * x` for
k = 2, 1 for k = 0 and `1 / x` for k = -1, so those need no case of their own beyond speed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.core.errstate import restore, silence
from fueltensor.kernels._chassis import (
    BLOCK,
    F32,
    F64,
    Array,
    Scratch,
    give_scratch,
    narrow,
    take_scratch,
    widen,
)
from fueltensor.ops import SCALAR_FORMS, OpKind

ParamBody = Callable[[Array, Array, int], None]
"""`body(x, out, k)`: out[i] = x[i] ** k over C-contiguous arrays of equal size."""


def powi_loop(x: Array, k: int, r: Array, y: Array) -> None:
    """`r = x ** k` by LLVM's powi loop in x's precision; `y` is scratch of x's size and dtype.

    The loop walks the bits of |k| (C's truncating `b / 2` does the same for negative b), so
    k = -2**31 is one squaring chain, with no overflow of -k."""
    m = abs(k)
    r.fill(1)
    if m == 0:
        return
    np.copyto(y, x)
    while True:
        if m & 1:
            np.multiply(r, y, out=r)
        m >>= 1
        if m == 0:
            break
        np.multiply(y, y, out=y)
    if k < 0:
        np.divide(1, r, out=r)


def _native_block(x: Array, k: int, out: Array, s: Scratch) -> None:
    """One block of F32/F64: the loop straight into the output."""
    n = x.size
    powi_loop(x, k, out, s.temp(x.dtype, n))


def _half_block(x: Array, k: int, out: Array, s: Scratch) -> None:
    """One block of BF16/F16: widen, run the loop in f32, narrow once on store."""
    n = x.size
    a, _, c = s.work(F32, n)
    widen(x, a)
    powi_loop(a, k, c, s.temp(F32, n))
    narrow(c, out, s)


def _fast_native(x: Array, k: int, out: Array) -> bool:
    """k = 2 and k = -1 on F32/F64 as one ufunc call (the loop's own bits): True when done."""
    if k == 2:
        np.multiply(x, x, out=out)
    elif k == -1:
        np.divide(1, x, out=out)
    else:
        return False
    return True


def _blocks(
    block: Callable[[Array, int, Array, Scratch], None], x: Array, k: int, out: Array
) -> None:
    """Run `block` over cache-sized blocks of the flat input and output, with borrowed scratch."""
    s = take_scratch()
    try:
        for i in range(0, out.size, BLOCK):
            j = min(i + BLOCK, out.size)
            block(x[i:j], k, out[i:j], s)
    finally:
        give_scratch(s)


def powi_body(dtype: np.dtype[Any]) -> ParamBody:
    """The pure-NumPy PowI body on `dtype`, run with NumPy's warnings silenced."""
    native = dtype is F32 or dtype is F64
    block = _native_block if native else _half_block

    def body(x: Array, out: Array, k: int) -> None:
        xf, of = x.reshape(-1), out.reshape(-1)
        if k == 1:
            np.copyto(of, xf)  # x itself: same dtype, so its bits (signalling NaNs included)
            return
        token = silence()
        try:
            if not (native and _fast_native(xf, k, of)):
                _blocks(block, xf, k, of)
        finally:
            restore(token)

    body.__doc__ = f"Pure-NumPy powi on {dtype}."
    return body


_POWI: Final = next(form for form in SCALAR_FORMS if form.op_kind is OpKind.POWI)
"""The integer-power form of the op table (x ** k, k an integer scalar)."""

BODIES: Final[dict[str, Callable[[np.dtype[Any]], ParamBody]]] = {_POWI.kernel_op: powi_body}
"""Body makers by kernel op id (the op table's `integer_scalar` forms, checked in `cpu`)."""
