"""`sliding_window_view`: NumPy's moving windows as a read-only strided view (no copy)."""

from __future__ import annotations

from typing import Any

from fueltensor.array_api._host import axes, tensor
from fueltensor.core.tensor import FuelTensor, as_strided, read_only


def sliding_window_view(
    x: FuelTensor, window_shape: int | tuple[int, ...], axis: int | tuple[int, ...] | None = None
) -> FuelTensor:
    """Every window of `window_shape` over `axis` (all axes when None), as NumPy's: the window
    axes come last, each windowed axis keeps its extent minus the window's plus one. A
    read-only view, as NumPy's default: its windows overlap, so one write would reach many."""
    x = tensor(x)
    window = (window_shape,) if isinstance(window_shape, int) else tuple(window_shape)
    over = tuple(range(x.ndim)) if axis is None else _listed(axis, x.ndim)
    if len(window) != len(over):
        raise ValueError(
            f"sliding_window_view: {len(window)} window extents for {len(over)} axes; "
            "give one per axis"
        )
    shape = list(x.shape)
    for a, w in zip(over, window, strict=True):
        if not 0 <= w <= shape[a]:
            raise ValueError(
                f"sliding_window_view: a window of {w} does not fit axis {a} of extent {shape[a]}"
            )
        shape[a] -= w - 1
    strides = (*x.strides, *(x.strides[a] for a in over))
    return read_only(as_strided(x, (*shape, *window), strides, x.offset))


def _listed(axis: Any, ndim: int) -> tuple[int, ...]:
    """`axis` as non-negative axes, repeats allowed (NumPy windows one axis twice that way)."""
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(axes(a, ndim)[0] for a in items)
