"""A tensor rebuilt from pickle state is checked like any view: its state names a known dtype, a
1-D storage array of that dtype, and a layout inside that storage.

`FuelTensor.__reduce__` pickles a tensor as its dtype, shape and bytes (`tensor._unpickle` checks
those). A pickle can also build a tensor through the generic opcodes (a class, then BUILD with a
slot state: `copyreg._reconstructor`, NEWOBJ), naming any storage and layout; `__setstate__`
hands that state here, so no pickle makes a tensor that reads or writes outside its buffer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, as_shape, as_shape_like

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor

SLOTS = ("_storage", "_layout", "_dtype", "_np")
"""The slots a pickle's state may name (`_np`, the cached NumPy view, is made again)."""


def restore(t: FuelTensor, state: Any) -> None:
    """Give `t`, made without slots by a pickle, the checked storage, layout and dtype of
    `state`; refused for a built tensor, whose storage and layout never change."""
    if getattr(t, "_layout", None) is not None:
        raise TypeError("a FuelTensor's storage and layout are set once, when it is built")
    t._storage, t._layout, t._dtype = checked_state(state)
    t._np = None


def checked_state(state: Any) -> tuple[np.ndarray, Layout, DType]:
    """The storage, layout and dtype of a pickled slot state, each checked (ValueError or
    TypeError naming what is wrong); the state is `(None, slots)` or `slots`."""
    slots = state[1] if isinstance(state, tuple) and len(state) == 2 else state
    if not isinstance(slots, dict) or not {"_storage", "_layout", "_dtype"} <= slots.keys():
        raise TypeError(
            "a pickled FuelTensor state is a dict of _storage, _layout and _dtype; "
            f"got {type(slots).__name__}"
        )
    unknown = sorted(str(k) for k in slots.keys() - set(SLOTS))
    if unknown:
        raise TypeError(f"a pickled FuelTensor state holds unknown slots {unknown}")
    dtype = slots["_dtype"]
    if not any(dtype is d for d in _dtypes.ALL):
        raise TypeError(f"a pickled FuelTensor's dtype is not a fueltensor dtype: {dtype!r}")
    storage = slots["_storage"]
    if type(storage) is not np.ndarray or storage.ndim != 1 or storage.dtype != dtype.np:
        raise TypeError(
            f"a pickled FuelTensor's storage must be a 1-D ndarray of {dtype.name}; got "
            f"{type(storage).__name__} {getattr(storage, 'dtype', '')}"
        )
    if storage.size > 1 and storage.strides[0] != storage.itemsize:
        raise ValueError("a pickled FuelTensor's storage must be one contiguous run of elements")
    layout = _layout(slots["_layout"])
    layout.check(storage.shape[0], storage.itemsize)
    return storage, layout, dtype


def _layout(value: Any) -> Layout:
    """A pickled layout as a Layout of Python ints (its bounds are checked by the caller)."""
    if not isinstance(value, tuple) or len(value) != 3:
        raise TypeError(f"a pickled FuelTensor's layout is (shape, strides, offset); got {value!r}")
    shape, strides, offset = value
    (start,) = as_shape_like([offset], "offset")
    return Layout(as_shape(shape), as_shape_like(list(strides), "strides"), start)
