"""Python scalars beside tensors: the weak-scalar rule's one home.

A Python bool, int, float or complex next to a tensor takes the tensor's dtype kind (the array
API's weak scalars): `scalar_dtype` says which dtype, `scalar_tensor` makes the 0-d tensor (an
int the dtype cannot hold raises OverflowError), and `coerce` makes both operands of a binary
operation tensors. The compiled fast path keeps `scalar_tensor`'s results in a cache keyed by the
scalar's exact bits (`_fast.scalar`, configured with `scalar_tensor` by dispatch; it declines
until then): tests/engine/test_fast_interface.py holds the two equal. Dispatch and the host
functions both coerce here, so one argument of `floor_divide` is read by this module only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import scalar_dtype
from fueltensor.core.errstate import restore, silence
from fueltensor.core.pydata import python_values
from fueltensor.core.shared import FAST
from fueltensor.core.tensor import FuelTensor, asarray

Scalar = bool | int | float | complex
"""A Python scalar operand."""

_CACHED: Final[Callable[[Scalar, FuelTensor], FuelTensor | None] | None] = (
    FAST.scalar if FAST is not None else None
)
"""`ext._fast.scalar` (`scalar_tensor`'s result, cached and read-only; None until dispatch has
configured it), or None where it is not built."""


def scalar_tensor(value: Scalar, like: FuelTensor) -> FuelTensor:
    """A Python scalar as a 0-d tensor of the dtype it takes next to `like` (scalars are weak):
    the rule's one definition, which the compiled fast path caches (`_fast.scalar`)."""
    dt = scalar_dtype(value, like.dtype)
    if dt.category in ("signed integer", "unsigned integer") and not isinstance(value, bool):
        info = np.iinfo(dt.np)
        if not info.min <= value <= info.max:  # type: ignore[operator]
            raise OverflowError(
                f"Python int {value} does not fit {dt.name} ({info.min}..{info.max})"
            )
    token = silence()  # 1e300 as float32 is inf, as the weak scalar rule means (not a warning)
    try:
        return FuelTensor._from_dense(python_values(value, dt), dt)
    finally:
        restore(token)


def coerce(a: Any, b: Any) -> tuple[FuelTensor, FuelTensor]:
    """Both operands as tensors: Python scalars take the other operand's dtype kind, NumPy
    arrays keep their dtype."""
    if type(a) is FuelTensor and type(b) is FuelTensor:
        return a, b
    if not isinstance(a, FuelTensor) and not isinstance(b, FuelTensor):
        a = asarray(a) if isinstance(a, np.ndarray | np.generic) else a
        b = asarray(b) if isinstance(b, np.ndarray | np.generic) else b
    if isinstance(a, FuelTensor) and isinstance(b, FuelTensor):
        return a, b
    if isinstance(a, FuelTensor):
        return a, _operand(b, a)
    if isinstance(b, FuelTensor):
        return _operand(a, b), b
    raise TypeError(
        f"unsupported operand types {type(a).__name__} and {type(b).__name__}; "
        "an operation needs at least one FuelTensor or NumPy array"
    )


def _operand(value: Any, like: FuelTensor) -> FuelTensor:
    """The non-tensor operand next to tensor `like`: a weak scalar (the fast path's cached,
    read-only 0-d tensor where it is built: operands are only read), or a NumPy array
    adopted."""
    if isinstance(value, bool | int | float | complex):
        cached = _CACHED(value, like) if _CACHED is not None else None
        return cached if cached is not None else scalar_tensor(value, like)
    if isinstance(value, np.ndarray | np.generic):
        return asarray(value)
    raise TypeError(
        f"unsupported operand type {type(value).__name__}; use a FuelTensor, a "
        "NumPy array or a Python bool, int, float or complex"
    )
