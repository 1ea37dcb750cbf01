"""The array API's manipulation functions.

Rearrangements are views that copy nothing (permute_dims, flip, broadcast_to, broadcast_arrays,
expand_dims, squeeze, moveaxis, unstack, and reshape when the strides allow it); the functions
that must build new data (concat, stack, repeat, roll, tile) are host operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fueltensor.array_api._host import axes, fresh, host, promoted, tensor
from fueltensor.core.layout import Layout, as_shape, broadcast_shapes, normalize_axis
from fueltensor.core.tensor import FuelTensor, copy_tensor, read_only


def permute_dims(x: FuelTensor, /, axes: tuple[int, ...]) -> FuelTensor:
    """The axes of `x` reordered (a view)."""
    return x._rearranged(x._layout.permute(axes))


def flip(x: FuelTensor, /, *, axis: int | tuple[int, ...] | None = None) -> FuelTensor:
    """`x` with the given axes (all by default) reversed: a view with negative strides."""
    axes = (axis,) if isinstance(axis, int) else axis
    return x._view(x._layout.flip(axes))


def broadcast_to(x: FuelTensor, /, shape: Any) -> FuelTensor:
    """`x` stretched to `shape` by NumPy's rules: a read-only view (as NumPy's) with stride 0
    on the new axes, so no write through it can reach `x` or write one element many times."""
    return read_only(x._view(x._layout.broadcast_to(as_shape(shape))))


def reshape(x: FuelTensor, /, shape: Any, *, copy: bool | None = None) -> FuelTensor:
    """`x`'s elements in row-major order under `shape`: a view when the strides allow it, else a
    copy (copy=False refuses the copy, copy=True always copies)."""
    target = _resolve_shape(as_shape_with_infer(shape), tensor(x).size)
    if copy:
        return copy_tensor(x)._view(Layout.dense(target))
    dense = x._dense_reshape(target)
    if dense is not None:
        return dense
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
    plain = type(shape) is tuple and all(type(n) is int for n in shape)
    dims = shape if plain else tuple(int(n) for n in shape)
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


def broadcast_arrays(*arrays: FuelTensor) -> list[FuelTensor]:
    """The tensors stretched to their common broadcast shape: as NumPy, the tensors themselves
    when all have that shape already, else read-only (stride-0) views."""
    shape = broadcast_shapes(*(tensor(a).shape for a in arrays))
    if all(a.shape == shape for a in arrays):
        return list(arrays)
    return [broadcast_to(a, shape) for a in arrays]


def expand_dims(x: FuelTensor, /, axis: int = 0) -> FuelTensor:
    """x with a new axis of extent 1 at position `axis` (in [-x.ndim - 1, x.ndim]); a view."""
    at = normalize_axis(axis, tensor(x).ndim + 1)
    return x[(slice(None),) * at + (None, ...)]


def squeeze(x: FuelTensor, /, axis: int | tuple[int, ...]) -> FuelTensor:
    """x without the given axes, which must have extent 1; a view."""
    drop = axes(axis, tensor(x).ndim)
    lay = x._layout
    shape, strides = lay.shape, lay.strides
    for a in drop:  # a loop, not any() over a generator: scipy squeezes on every statistic
        if shape[a] != 1:
            raise ValueError(f"squeeze: axes {axis} of shape {x.shape} do not all have extent 1")
    keep = [a for a in range(len(shape)) if a not in drop]
    kept = Layout(tuple([shape[a] for a in keep]), tuple([strides[a] for a in keep]), lay.offset)
    return x._rearranged(kept)


def moveaxis(
    x: FuelTensor, source: int | tuple[int, ...], destination: int | tuple[int, ...], /
) -> FuelTensor:
    """x with the `source` axes moved to `destination` positions, the rest in order; a view."""
    src, dst = axes(source, tensor(x).ndim), axes(destination, x.ndim)
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis needs as many destinations as sources, got {source} and {destination}"
        )
    rest = iter(a for a in range(x.ndim) if a not in src)
    placed = dict(zip(dst, src, strict=True))
    order = [placed[i] if i in placed else next(rest) for i in range(x.ndim)]
    lay = x._layout  # order is a permutation of the axes already: no check again
    shape, strides = tuple(lay.shape[a] for a in order), tuple(lay.strides[a] for a in order)
    return x._rearranged(Layout(shape, strides, lay.offset))


def unstack(x: FuelTensor, /, *, axis: int = 0) -> tuple[FuelTensor, ...]:
    """The slices of x along `axis`, as views."""
    (a,) = axes(axis, tensor(x).ndim)
    return tuple(x[_at(a, i)] for i in range(x.shape[a]))


@host
def concat(
    arrays: tuple[FuelTensor, ...] | list[FuelTensor], /, *, axis: int | None = 0
) -> FuelTensor:
    """The tensors joined along an existing axis (flattened first when axis is None), in their
    promoted dtype."""
    parts, dt = promoted(*_sequence(arrays))
    if axis is None:
        return fresh(np.concatenate([p.reshape(-1) for p in parts]), dt)
    return fresh(np.concatenate(parts, axis=axes(axis, parts[0].ndim)[0]), dt)


@host
def stack(arrays: tuple[FuelTensor, ...] | list[FuelTensor], /, *, axis: int = 0) -> FuelTensor:
    """The same-shape tensors joined along a new axis, in their promoted dtype."""
    parts, dt = promoted(*_sequence(arrays))
    return fresh(np.stack(parts, axis=axes(axis, parts[0].ndim + 1)[0]), dt)


@host
def repeat(x: FuelTensor, repeats: int | FuelTensor, /, *, axis: int | None = None) -> FuelTensor:
    """Each element of x repeated (along `axis`, or over x flattened when None)."""
    counts = repeats._array if isinstance(repeats, FuelTensor) else repeats
    return fresh(np.repeat(tensor(x)._array, counts, axis=axis))


@host
def roll(
    x: FuelTensor, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None
) -> FuelTensor:
    """x with its elements shifted cyclically along `axis` (over x flattened when None)."""
    return fresh(np.roll(tensor(x)._array, shift, axis=axis))


@host
def tile(x: FuelTensor, repetitions: tuple[int, ...], /) -> FuelTensor:
    """x repeated `repetitions[i]` times along axis i."""
    return fresh(np.tile(tensor(x)._array, repetitions))


def _at(axis: int, i: int) -> tuple[slice | int, ...]:
    """The basic index that selects position i along `axis`."""
    return (*(slice(None),) * axis, i)


def _sequence(arrays: Sequence[FuelTensor]) -> tuple[FuelTensor, ...]:
    if not isinstance(arrays, tuple | list) or not arrays:
        raise TypeError("expected a non-empty tuple or list of tensors")
    return tuple(tensor(a, "each element") for a in arrays)
