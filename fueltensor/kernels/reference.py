"""fuel-reference-backend: the NumPy-broadcasting oracle kernels broadcast_add/sub/mul/div.

Inputs are contiguous buffers of their own shapes; the output has the broadcast shape. The
broadcast is the oracle's index math (`broadcast_shape`, `broadcast_src_flat`, which are the
Rust `ops.rs` functions transcribed); the bulk loop lets NumPy broadcasting walk those same
indices over the contiguous buffers instead of one Python step per element. Arithmetic is in
the operand type; for BF16/F16 that is the `half` crate's arithmetic: widen to f32, one f32
operation, one round-to-nearest-even narrow (which is why it agrees with fuel-cpu-backend).
Where the compiled kernels are built, the same walk runs in C (`_native.broadcast`: one pass,
no NaN repair pass), bit for bit this pure path, which stays the fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from fueltensor.kernels import KernelFn
from fueltensor.kernels._chassis import (
    BF16,
    BLOCK,
    DTYPES,
    F16,
    IMPLEMENTATION,
    IMPLEMENTATIONS,
    NATIVE,
    Array,
    give_scratch,
    keep_lhs_nan,
    narrow,
    restore,
    silence,
    take_scratch,
    widen,
)

PROVIDER: Final = "fuel-reference-backend"
_PREFIX: Final = "fuel_reference_backend::ops::"


def broadcast_shape(a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[int, ...]:
    """NumPy's broadcast of two shapes (right-aligned, size-1 dims stretch); ValueError if none."""
    rank = max(len(a_shape), len(b_shape))
    a = (1,) * (rank - len(a_shape)) + tuple(a_shape)
    b = (1,) * (rank - len(b_shape)) + tuple(b_shape)
    dims = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            dims.append(x)
        elif x == 1:
            dims.append(y)
        else:
            raise ValueError(
                f"shapes {tuple(a_shape)} and {tuple(b_shape)} do not broadcast "
                f"(dimension {x} against {y})"
            )
    return tuple(dims)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a contiguous row-major buffer of `shape`."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    return tuple(strides)


def broadcast_src_flat(out_index: int, src_shape: Sequence[int], out_shape: Sequence[int]) -> int:
    """Flat index in a `src_shape` buffer read for flat output index `out_index`."""
    offset = len(out_shape) - len(src_shape)
    src_strides = row_major_strides(src_shape)
    flat = 0
    rem = out_index
    for k in range(len(out_shape) - 1, -1, -1):
        coord = rem % out_shape[k] if out_shape[k] else 0
        rem = rem // out_shape[k] if out_shape[k] else 0
        j = k - offset
        if j >= 0 and src_shape[j] != 1:
            flat += coord * src_strides[j]
    return flat


def _has_nan(x: Array) -> bool:
    """True when a non-empty array holds a NaN (one reduction pass)."""
    return bool(x.size) and bool(np.isnan(np.maximum.reduce(x, axis=None)))


def _half(ufunc: np.ufunc, a: Array, b: Array, out: Array) -> None:
    """Half arithmetic as the `half` crate does it, chunked along the output's first axis."""
    wa = np.empty(a.shape, np.float32)
    wb = np.empty(b.shape, np.float32)
    widen(a, wa)
    widen(b, wb)
    shape = out.shape
    va = np.broadcast_to(wa, shape)
    vb = np.broadcast_to(wb, shape)
    fix = ufunc in _COMMUTATIVE and _has_nan(wa) and _has_nan(wb)
    row = int(np.prod(shape[1:], dtype=np.int64))
    step = max(1, BLOCK // max(1, row))
    s = take_scratch()
    try:
        for i in range(0, shape[0], step):
            j = min(i + step, shape[0])
            res = ufunc(va[i:j], vb[i:j])
            if fix:
                keep_lhs_nan(va[i:j], vb[i:j], res)
            narrow(res.reshape(-1), out[i:j].reshape(-1), s)
    finally:
        give_scratch(s)


_DTYPES: Final = tuple(dtype for _, dtype in DTYPES)

Fill = Callable[[Array, Array, Array], None]
"""Fills `out` (the broadcast shape) with `a op b`, after the kernel has checked its arguments."""


def _pure_fill(ufunc: np.ufunc) -> Fill:
    """The pure-NumPy oracle: NumPy broadcasting, then the NaN-pair repair where it is needed."""

    def fill(a: Array, b: Array, out: Array) -> None:
        token = silence()
        try:
            if out.dtype == BF16 or out.dtype == F16:
                if out.ndim == 0:
                    _half(ufunc, a.reshape(1), b.reshape(1), out.reshape(1))
                elif out.size:
                    _half(ufunc, a, b, out)
            else:
                ufunc(a, b, out=out)
                if ufunc in _COMMUTATIVE and _has_nan(a) and _has_nan(b):
                    keep_lhs_nan(a, b, out)
        finally:
            restore(token)

    return fill


def _native_fill(op: str) -> Fill:
    """The compiled oracle: one C walk over the output, the CPU kernels' loops on each row."""
    assert NATIVE is not None
    broadcast, code = NATIVE.broadcast, NATIVE.OPS.index(op)
    dtypes = {dtype: NATIVE.DTYPES.index(dtype.name) for dtype in _DTYPES}

    def fill(a: Array, b: Array, out: Array) -> None:
        broadcast(code, dtypes[out.dtype], a, b, out)

    return fill


def _kernel(op: str, fill: Fill) -> KernelFn:
    """Build `broadcast_<op>`: check the output shape and the dtypes, then `fill`."""
    name = f"broadcast_{op}"

    def kernel(a: Array, b: Array, *, out: Array) -> None:
        shape = broadcast_shape(a.shape, b.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if not (a.dtype == b.dtype == out.dtype) or out.dtype not in _DTYPES:
            raise TypeError(
                f"{name}: a, b and out must share one of float32, float64, bfloat16, float16; "
                f"got a {a.dtype}, b {b.dtype}, out {out.dtype}"
            )
        fill(a, b, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-reference-backend {name}: out = a {op} b with NumPy broadcasting."
    return kernel


_COMMUTATIVE: Final = (np.add, np.multiply)
"""The ufuncs whose NumPy loops return the rhs NaN in some lanes where both operands are NaN."""

_OPS: Final[tuple[tuple[str, np.ufunc], ...]] = (
    ("add", np.add),
    ("sub", np.subtract),
    ("mul", np.multiply),
    ("div", np.divide),
)


def kernels(implementation: str = IMPLEMENTATION) -> dict[str, KernelFn]:
    """The four oracle kernels by full `entry_point` string, run by one chassis implementation."""
    if implementation not in IMPLEMENTATIONS:
        raise ValueError(
            f"no kernel implementation {implementation!r} here: {list(IMPLEMENTATIONS)}"
        )
    native = implementation == "native"
    return {
        f"{_PREFIX}broadcast_{op}": _kernel(op, _native_fill(op) if native else _pure_fill(ufunc))
        for op, ufunc in _OPS
    }


ENTRY_POINTS: Final[dict[str, KernelFn]] = kernels()
"""The provider's link registry: full `entry_point` string -> oracle kernel."""

__all__ = [
    "ENTRY_POINTS",
    "PROVIDER",
    "broadcast_shape",
    "broadcast_src_flat",
    "kernels",
    "row_major_strides",
]
