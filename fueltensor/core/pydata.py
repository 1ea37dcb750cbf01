"""Python data (nested sequences and scalars, or anything NumPy reads) as a fresh NumPy array.

`asarray` calls `from_python` for everything that is not a tensor or a NumPy array; the helpers
below word its refusals: ragged nesting (where the lengths first differ), integers beyond the
dtype, strings and objects.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType


def from_python(obj: Any, want: DType | None) -> np.ndarray:
    """Nested Python sequences and scalars (or anything NumPy reads) as a fresh dense array."""
    if hasattr(obj, "__dlpack__"):
        array = np.from_dlpack(obj)
        return np.array(array, dtype=None if want is None else want.np, copy=True)
    try:
        if want is not None:
            return python_values(obj, want)
        array = np.array(obj, copy=True)
    except ValueError as e:
        if "inhomogeneous" in str(e) or "sequence" in str(e):
            raise ValueError(
                f"cannot make a tensor from ragged {type(obj).__name__} data: nested sequences "
                f"must have equal lengths at each depth ({_ragged_where(obj)})"
            ) from None
        raise
    except OverflowError:
        if want is None:
            raise OverflowError(_too_big(obj, -(2**63), 2**64 - 1, "any integer dtype")) from None
        info = np.iinfo(want.np)
        raise OverflowError(_too_big(obj, int(info.min), int(info.max), want.name)) from None
    if array.dtype == np.float32 and not _holds_numpy_values(obj):
        array = array.astype(np.float64)
    if array.dtype.kind == "i" and array.dtype != np.int64:
        array = array.astype(np.int64)
    if array.dtype.kind == "O" and any(isinstance(v, int) for v in _leaves(obj)):
        raise OverflowError(_too_big(obj, -(2**63), 2**64 - 1, "any integer dtype"))
    if array.dtype.kind in "OUS":
        raise TypeError(
            f"cannot make a tensor from {type(obj).__name__} data "
            f"(NumPy reads it as {array.dtype}); pass numbers or tensors"
        )
    _dtypes.from_numpy(array.dtype)
    return array


def python_values(obj: Any, want: DType) -> np.ndarray:
    """Python numbers (nested or not) as a fresh array of `want`, converted as NumPy converts
    them to its own floats: an int through float64 (OverflowError beyond it), then cast. ml_dtypes'
    bfloat16 reads ints beyond int64 with a bare TypeError, so it takes that route explicitly."""
    if want.is_float and want.np.kind != "f":
        return np.array(obj, dtype=np.float64).astype(want.np)
    return np.array(obj, dtype=want.np, copy=True)


def _leaves(obj: Any) -> list[Any]:
    """The scalars of nested lists/tuples, in order."""
    if isinstance(obj, list | tuple):
        return [leaf for item in obj for leaf in _leaves(item)]
    return [obj]


def _too_big(obj: Any, low: int, high: int, what: str) -> str:
    """The message for Python ints of `obj` outside [low, high], naming the first one."""
    big = [v for v in _leaves(obj) if isinstance(v, int) and not low <= v <= high]
    value = f"the integer {big[0]}" if big else "an integer"
    return f"{value} does not fit {what} (range {low} to {high}); " + (
        "pass it as a float (e.g. 2.0**70)" if what.startswith("any") else "use a wider dtype"
    )


def _ragged_where(obj: Any, path: str = "data") -> str:
    """Where nested sequences first differ in length: `data[1] has 1 items, data[0] has 2`."""
    if not isinstance(obj, list | tuple) or not obj:
        return "the lengths differ"
    subs = [o for o in obj if isinstance(o, list | tuple)]
    if subs and len(subs) != len(obj):
        return f"{path} mixes sequences and scalars"
    lengths = [len(o) for o in subs]
    if lengths and len(set(lengths)) > 1:
        first = next(i for i, n in enumerate(lengths) if n != lengths[0])
        return f"{path}[{first}] has {lengths[first]} items, {path}[0] has {lengths[0]}"
    for i, o in enumerate(subs):
        found = _ragged_where(o, f"{path}[{i}]")
        if found != "the lengths differ":
            return found
    return "the lengths differ"


def _holds_numpy_values(obj: Any) -> bool:
    return isinstance(obj, np.generic | np.ndarray) or (
        isinstance(obj, list | tuple) and bool(obj) and _holds_numpy_values(obj[0])
    )
