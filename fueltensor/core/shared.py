"""The decisions FuelTensor shares with dispatch's compiled fast path, each defined once.

Where `ext._fast` is built, its functions are the definitions and both paths call them:
`new_tensor` builds every FuelTensor, `basic_view` is basic indexing (`x[key]`, `x[key] = v`),
and `refusal` is the in-place / writable rule that `tensor.check_inplace` and `check_writable`
word. The `python_*` functions stand in for them only where `_fast` is not built, and
`tests/engine/test_fast_interface.py` holds each equal to the compiled one (docs/interfaces.md, "One
dispatcher").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, Shape

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor


def _compiled() -> Any:
    """The compiled fast path (`ext._fast`), or None where it is not built."""
    try:
        from fueltensor.ext import _fast
    except ImportError:
        return None
    return _fast


FAST = _compiled()
"""`ext._fast`, or None where it is not built: core's one look for it (`core.operators`
makes its compiled operators with it too)."""


class CoreConfig(NamedTuple):
    """What `_fast.bind_core` reads, by field name (see `ext/_fast.pyi`): core's types, and the
    tensor's slots as their member descriptors, so the C names no attribute of ours."""

    tensor: type
    """FuelTensor: the type the fast path serves and builds."""
    slots: tuple[Any, Any, Any, Any]
    """FuelTensor's storage, layout, dtype and NumPy-view slots (member descriptors)."""
    layout: type
    """Layout (a tuple subclass), and its memoized `dense`."""
    dtype: type
    """DType."""
    dtype_np: Any
    """DType's slot holding its NumPy dtype (a member descriptor), the plan key's part."""
    array: Callable[[Any], np.ndarray]
    """The tensor's NumPy view of exactly its elements (`FuelTensor._array`'s getter)."""


def bind(config: CoreConfig) -> None:
    """Bind core's types to the compiled floor (`_fast.bind_core`); nothing where it is not
    built. `core.tensor` calls it once, right after FuelTensor is defined."""
    if FAST is not None:
        FAST.bind_core(config)


def python_new(
    cls: type[FuelTensor], storage: np.ndarray, layout: Layout, dtype: DType, np_: Any
) -> FuelTensor:
    """A `cls` with these four slots where `_fast` is not built (`_fast.new_tensor`'s twin)."""
    t = object.__new__(cls)
    t._storage = storage
    t._layout = layout
    t._dtype = dtype
    t._np = np_
    return t


def python_refusal(target: FuelTensor, dtype: DType | None, shape: Shape | None) -> str | None:
    """`_fast.inplace_refusal` where `_fast` is not built: why `target` cannot take an in-place
    result of `dtype` and `shape` (None: not compared), or None when it can."""
    if dtype is not None and dtype is not target._dtype:
        return "dtype"
    if shape is not None and shape != target._layout.shape:
        return "shape"
    if not target._storage.flags.writeable:
        return "read-only"
    dense = target._array
    if dense.size and dense.flags.c_contiguous:
        return None  # dense row-major: no stride 0, no overlap (NumPy's flag, without our five)
    flags = target.layout
    if flags.broadcast_stride0:
        return "stride0"
    if not flags.contiguous and target._layout.may_self_overlap:
        return "overlap"
    return None


def is_basic(key: Any) -> bool:
    """True for a basic index: ints, slices, `...` and None (alone or in a tuple)."""
    items = key if type(key) is tuple else (key,)
    return all(
        k is None
        or k is Ellipsis
        or type(k) is slice
        or (isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_))
        for k in items
    )


def python_basic_view(t: FuelTensor, key: Any) -> FuelTensor | None:
    """`_fast.getitem` where `_fast` is not built: the view `t[key]` for a basic index (ints,
    slices, `...`, None), else None."""
    return t._view(t._layout.select(key)) if is_basic(key) else None


new_tensor: Callable[[type[FuelTensor], np.ndarray, Layout, DType, Any], FuelTensor] = (
    python_new if FAST is None else FAST.new_tensor
)
"""The one FuelTensor constructor of this build (the compiled path builds with it too)."""
basic_view: Callable[[FuelTensor, Any], FuelTensor | None] = (
    python_basic_view if FAST is None else FAST.getitem
)
"""The view `t[key]` for a basic index, else None: basic indexing's one definition in this
build (`x[key]` and `x[key] = v` both ask it)."""
refusal: Callable[[FuelTensor, DType | None, Shape | None], str | None] = (
    python_refusal if FAST is None else FAST.inplace_refusal
)
"""The in-place rule's one definition in this build (the compiled path asks it too)."""
transpose: Callable[[FuelTensor], FuelTensor | None] | None = (
    None if FAST is None else FAST.transpose
)
"""The compiled `.T` (`_fast.transpose`), or None where not built."""
