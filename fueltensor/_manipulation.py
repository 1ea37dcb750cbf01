"""Views that rearrange a tensor without copying: permute, flip, broadcast, reshape."""

from __future__ import annotations

from typing import Any

from fueltensor._layout import Layout, as_shape
from fueltensor._tensor import FuelTensor, copy_tensor


def permute_dims(x: FuelTensor, /, axes: tuple[int, ...]) -> FuelTensor:
    """The axes of `x` reordered (a view)."""
    return x._view(x._layout.permute(axes))


def flip(x: FuelTensor, /, *, axis: int | tuple[int, ...] | None = None) -> FuelTensor:
    """`x` with the given axes (all by default) reversed: a view with negative strides."""
    axes = (axis,) if isinstance(axis, int) else axis
    return x._view(x._layout.flip(axes))


def broadcast_to(x: FuelTensor, /, shape: Any) -> FuelTensor:
    """`x` stretched to `shape` by NumPy's rules: a view with stride 0 on the new axes."""
    return x._view(x._layout.broadcast_to(as_shape(shape)))


def reshape(x: FuelTensor, /, shape: Any, *, copy: bool | None = None) -> FuelTensor:
    """`x`'s elements in row-major order under `shape`: a view when the strides allow it, else a
    copy (copy=False refuses the copy, copy=True always copies)."""
    target = _resolve_shape(as_shape_with_infer(shape), x.size)
    if copy:
        return copy_tensor(x)._view(Layout.dense(target))
    layout = x._layout.reshape(target)
    if layout is not None:
        return x._view(layout)
    if copy is False:
        raise ValueError(
            f"reshaping a tensor with strides {x.strides} to {target} needs a copy, "
            "but copy=False was given"
        )
    return copy_tensor(x)._view(Layout.dense(target))


def as_shape_with_infer(shape: Any) -> tuple[int, ...]:
    """A shape that may hold one -1 (to be inferred)."""
    if isinstance(shape, int):
        shape = (shape,)
    dims = tuple(int(n) for n in shape)
    if sum(1 for n in dims if n == -1) > 1:
        raise ValueError(f"shape {dims} has more than one -1; only one extent can be inferred")
    if any(n < -1 for n in dims):
        raise ValueError(f"negative extent in shape {dims}")
    return dims


def _resolve_shape(dims: tuple[int, ...], size: int) -> tuple[int, ...]:
    if -1 not in dims:
        return as_shape(dims)
    known = 1
    for n in dims:
        if n != -1:
            known *= n
    if known == 0 or size % known:
        raise ValueError(f"cannot infer the -1 in shape {dims} for {size} elements")
    return tuple(size // known if n == -1 else n for n in dims)
