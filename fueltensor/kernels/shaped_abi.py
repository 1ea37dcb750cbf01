"""The C side of ABI version 2 (ext/src/abi.h) in ctypes alone: its structs, the `ShapedKernel`
prototype, and the packing of one call's arguments. Both callers share it: `kernels.shaped`,
which calls a user's kernel in fueltensor's process, and the checked worker
(`tools/checked_worker.py`), which loads this file by its path and imports nothing else of
fueltensor (only the standard library runs beside the kernel there).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any, Final, NamedTuple

PARAM_I64, PARAM_F64, PARAM_AXES, PARAM_CODE = range(4)
"""abi.h's `ParamType`."""
ERROR_LEN: Final = 256
"""The bytes of the error buffer a kernel may fill (one more, always NUL, follows them)."""


class TensorArg(ctypes.Structure):
    """abi.h's `TensorArg`: dtype code, rank, shape, byte strides, the element at index 0."""

    _fields_ = (
        ("dtype", ctypes.c_int),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("data", ctypes.c_void_p),
    )


class _Axes(ctypes.Structure):
    """The PARAM_AXES member of `ParamArg`'s value."""

    _fields_ = (("count", ctypes.c_int), ("axes", ctypes.POINTER(ctypes.c_int)))


class _Value(ctypes.Union):
    """`ParamArg`'s value."""

    _fields_ = (("i", ctypes.c_int64), ("f", ctypes.c_double), ("axes", _Axes))


class ParamArg(ctypes.Structure):
    """abi.h's `ParamArg`: the `accept.params` or `op_params` name, its type and value."""

    _fields_ = (("name", ctypes.c_char_p), ("type", ctypes.c_int), ("value", _Value))


PROTOTYPE: Final = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_int,
    ctypes.POINTER(TensorArg),
    ctypes.c_int,
    ctypes.POINTER(TensorArg),
    ctypes.POINTER(ParamArg),
    ctypes.c_int,
    ctypes.c_char_p,
    ctypes.c_size_t,
)
"""`ShapedKernel`; a CFUNCTYPE function releases the GIL while it runs."""


class Tensor(NamedTuple):
    """One tensor of a call as the C side sees it: dtype code, shape, byte strides, and the
    address of its element at index 0."""

    dtype: int
    shape: Sequence[int]
    strides: Sequence[int]
    address: int


Param = tuple[bytes, int, "int | float"]
"""One `op_params` entry: (name, ParamType, value)."""


class Arguments(NamedTuple):
    """A call's arguments, ready for `PROTOTYPE(...)(*arguments.call)`, holding every piece of
    memory they point into alive; `error` is the buffer the kernel's message goes in."""

    call: tuple[object, ...]
    keep: tuple[object, ...]
    error: Any


def arguments(
    op: int,
    inputs: Sequence[Tensor],
    out: Tensor,
    axes: Sequence[int] | None,
    params: Sequence[Param],
    error: Any = None,
) -> Arguments:
    """The arguments of `op` on `inputs` into out: `axes` as PARAM_AXES first where the family
    takes them (a reduction's; None for a contraction), then `params`; the error buffer `error`
    (room for ERROR_LEN bytes and a NUL: a c_char_p of its address, or a fresh string buffer
    when None)."""
    every = (*inputs, out)
    cells = [(ctypes.c_ssize_t * len(t.shape))(*t.shape) for t in every]
    steps = [(ctypes.c_ssize_t * len(t.strides))(*t.strides) for t in every]
    tensors = [
        TensorArg(t.dtype, len(t.shape), shape, stride, t.address)
        for t, shape, stride in zip(every, cells, steps, strict=True)
    ]
    given = (TensorArg * len(inputs))(*tensors[:-1])
    chosen = [] if axes is None else [int(a) for a in axes]
    picked = (ctypes.c_int * max(len(chosen), 1))(*chosen)
    first = 0 if axes is None else 1
    count = first + len(params)
    packed = (ParamArg * max(count, 1))()
    if axes is not None:
        packed[0] = ParamArg(b"axes", PARAM_AXES, _Value(axes=_Axes(len(chosen), picked)))
    for i, (name, kind, value) in enumerate(params, first):
        member = "f" if kind == PARAM_F64 else "i"
        packed[i] = ParamArg(name, kind, _Value(**{member: value}))
    error = ctypes.create_string_buffer(ERROR_LEN + 1) if error is None else error
    call = (op, given, len(inputs), tensors[-1], packed, count, error, ERROR_LEN)
    return Arguments(call, (cells, steps, tensors, given, picked, packed), error)


def message(error: bytes) -> str:
    """The kernel's message from its error buffer's bytes (up to the first NUL)."""
    return error.split(b"\0", 1)[0].decode("utf-8", "replace") or "(no message)"
