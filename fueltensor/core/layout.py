"""Strided layouts: shape, strides and offset in elements, the five FKC layout flags, and views.

A `Layout` maps a multi-index `i` to the storage element `offset + sum(i[k] * strides[k])`. Every
layout is checked against the size of the storage it indexes before it is used, so no view can
reach outside its buffer; all arithmetic is in Python integers, so nothing overflows silently.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple, SupportsIndex

from numpy.exceptions import AxisError

MAX_DIMS = 64
"""NumPy's limit on dimensions; a layout is turned into a NumPy view, so we share it."""
MAX_INDEX = 2**63 - 1
"""Element counts, strides and offsets must fit a signed 64-bit integer (NumPy's `intp`)."""

Shape = tuple[int, ...]


class LayoutFlags(NamedTuple):
    """The five layout facts an FKC `accept` clause constrains, named as the documents name them."""

    contiguous: bool
    """Row-major dense: element `k` of the row-major walk is at `offset + k`."""
    strided: bool
    """Not dense even after ignoring stride-0 axes and the sign of the strides (gaps, permutes)."""
    broadcast_stride0: bool
    """Some axis of extent > 1 has stride 0 (one element stands for many)."""
    start_offset: bool
    """The first element is not at storage index 0."""
    reverse_strides: bool
    """Some axis of extent > 1 walks storage backwards (a negative stride)."""


def row_major_strides(shape: Shape) -> Shape:
    """Dense C-order strides, in elements, for `shape`."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _index(value: object, what: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None


def as_shape(shape: object) -> Shape:
    """Normalize an int or a sequence of ints into a shape tuple, refusing negative extents.

    An int is anything with `__index__`: what `isinstance(shape, SupportsIndex)` asks, without
    that protocol check's 9 µs (every creation function, reshape and broadcast_to comes here).
    A tuple of non-negative Python ints, the common case, is returned as it is.
    """
    if type(shape) is tuple and len(shape) <= MAX_DIMS and all(type(n) is int for n in shape):
        if any(n < 0 for n in shape):
            raise ValueError(f"negative dimension in shape {shape}; extents must be >= 0")
        return shape
    if hasattr(shape, "__index__"):
        shape = (shape,)
    if not isinstance(shape, Sequence):
        raise TypeError(f"a shape is an int or a sequence of ints, got {type(shape).__name__}")
    out = tuple(_index(n, "a shape entry") for n in shape)
    if any(n < 0 for n in out):
        raise ValueError(f"negative dimension in shape {out}; extents must be >= 0")
    if len(out) > MAX_DIMS:
        raise ValueError(f"{len(out)} dimensions requested; at most {MAX_DIMS} are supported")
    return out


def broadcast_shapes(*shapes: Shape) -> Shape:
    """The NumPy broadcast of `shapes` (right-aligned; an extent of 1 stretches)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for k, n in enumerate(s, start=ndim - len(s)):
            if n != 1:
                if out[k] not in (1, n):
                    listed = " ".join(str(x) for x in shapes)
                    raise ValueError(
                        f"shapes {listed} cannot be broadcast together "
                        f"(axis {k - ndim}: {out[k]} vs {n})"
                    )
                out[k] = n
    return tuple(out)


class Layout(NamedTuple):
    """Shape, strides and offset, in elements, of a view on a 1-D storage buffer.

    A NamedTuple so that hashing and comparing it (the plan-cache key) runs at C speed.
    """

    shape: Shape
    strides: Shape
    offset: int

    @staticmethod
    def dense(shape: Shape) -> Layout:
        """The row-major, zero-offset layout of a fresh buffer (memoized: outputs reuse it)."""
        return _dense(shape)

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements the view means (the product of the shape)."""
        return math.prod(self.shape)

    @property
    def flags(self) -> LayoutFlags:
        """The five FKC layout flags of this view."""
        live = [(n, s) for n, s in zip(self.shape, self.strides, strict=True) if n > 1]
        reverse = any(s < 0 for _, s in live)
        stride0 = any(s == 0 for _, s in live)
        contiguous = self.size == 0 or _is_dense(live)
        strided = not contiguous and not _is_dense([(n, abs(s)) for n, s in live if s != 0])
        return LayoutFlags(contiguous, strided, stride0, self.offset != 0, reverse)

    @property
    def may_self_overlap(self) -> bool:
        """True unless the view's elements provably sit at distinct storage indices.

        A sufficient test for no overlap: with the axes of extent > 1 sorted by |stride|, each
        stride exceeds the farthest reach of all faster axes (sum of (n - 1) * |stride|). Views
        that fail it may still be distinct (strides 2 and 3 over 3 x 2 elements): refused too.
        """
        if self.size == 0:
            return False
        reach = 0
        for n, s in sorted(
            ((n, abs(s)) for n, s in zip(self.shape, self.strides, strict=True) if n > 1),
            key=lambda p: p[1],
        ):
            if s <= reach:
                return True
            reach += (n - 1) * s
        return False

    def span(self) -> tuple[int, int]:
        """The lowest and highest storage index the view touches (empty views touch none)."""
        lo = hi = self.offset
        for n, s in zip(self.shape, self.strides, strict=True):
            reach = (n - 1) * s
            if reach < 0:
                lo += reach
            else:
                hi += reach
        return lo, hi

    def check(self, storage_size: int, itemsize: int = 1) -> Layout:
        """Return self if every element lies in a storage of `storage_size` elements of
        `itemsize` bytes and NumPy can describe the view; ValueError if not."""
        if len(self.shape) != len(self.strides):
            raise ValueError(
                f"shape {self.shape} has {len(self.shape)} dimensions but strides "
                f"{self.strides} has {len(self.strides)}; give one stride per axis"
            )
        if len(self.shape) > MAX_DIMS:
            raise ValueError(f"{len(self.shape)} dimensions; at most {MAX_DIMS} are supported")
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative extent in shape {self.shape}")
        if self.offset < 0:
            raise ValueError(f"offset {self.offset} is negative; offsets index the storage from 0")
        pairs = zip(self.shape, self.strides, strict=True)
        if any(abs(s) > MAX_INDEX for n, s in pairs if n > 1) or self.offset > MAX_INDEX:
            raise ValueError(
                f"strides {self.strides} / offset {self.offset} exceed the 64-bit index range; "
                "accepted: offsets and strides (of axes longer than 1) up to 2**63 - 1"
            )
        size = self.size
        if size > MAX_INDEX:
            raise ValueError(f"shape {self.shape} has {size} elements, more than 2**63 - 1")
        extent = math.prod(n for n in self.shape if n)  # NumPy bounds this even when size is 0
        if extent * itemsize > MAX_INDEX:
            raise ValueError(
                f"shape {self.shape} spans {extent} elements of {itemsize} bytes (zero extents "
                "aside), more than 2**63 - 1 bytes; accepted: shapes whose nonzero extents "
                "multiply to at most that"
            )
        if size == 0:
            if self.offset > storage_size:
                raise ValueError(
                    f"offset {self.offset} lies past the end of a storage of "
                    f"{storage_size} elements"
                )
            return self
        lo, hi = self.span()
        if lo < 0 or hi >= storage_size:
            raise ValueError(
                f"view shape={self.shape} strides={self.strides} offset={self.offset} touches "
                f"storage elements {lo}..{hi}, outside the storage's 0..{storage_size - 1}"
            )
        return self

    def permute(self, axes: Sequence[int]) -> Layout:
        """Reorder the axes: axis k of the result is axis `axes[k]` of this layout."""
        nd = self.ndim
        norm = tuple(normalize_axis(a, nd) for a in axes)
        if sorted(norm) != list(range(nd)):
            raise ValueError(f"axes {tuple(axes)} are not a permutation of the {nd} axes")
        return Layout(
            tuple(self.shape[a] for a in norm), tuple(self.strides[a] for a in norm), self.offset
        )

    def flip(self, axes: Sequence[int] | None = None) -> Layout:
        """Reverse the given axes (all when None): negative strides, offset at the old end."""
        nd = self.ndim
        flip = set(range(nd)) if axes is None else {normalize_axis(a, nd) for a in axes}
        offset = self.offset
        strides = list(self.strides)
        for k in flip:
            if self.shape[k] > 0:
                offset += (self.shape[k] - 1) * strides[k]
            strides[k] = -strides[k]
        return Layout(self.shape, tuple(strides), offset)

    def broadcast_to(self, shape: Shape) -> Layout:
        """A stride-0 view of this layout stretched to `shape` (NumPy rules; no copy)."""
        if len(shape) < self.ndim:
            raise ValueError(f"cannot broadcast shape {self.shape} to fewer dimensions {shape}")
        lead = len(shape) - self.ndim
        strides = [0] * lead
        for k, (n, s) in enumerate(zip(self.shape, self.strides, strict=True)):
            target = shape[lead + k]
            if n == target:
                strides.append(s)
            elif n == 1:
                strides.append(0)
            else:
                raise ValueError(
                    f"cannot broadcast shape {self.shape} to {shape} "
                    f"(axis {lead + k}: {n} vs {target})"
                )
        return Layout(shape, tuple(strides), self.offset)

    def reshape(self, shape: Shape) -> Layout | None:
        """The same elements in row-major order under `shape`, or None when a copy is needed."""
        if math.prod(shape) != self.size:
            raise ValueError(
                f"cannot reshape {self.size} elements of shape {self.shape} into shape {shape} "
                f"of {math.prod(shape)} elements; the sizes must be equal"
            )
        if self.size == 0 or self.flags.contiguous:
            return Layout(shape, row_major_strides(shape), self.offset)
        strides = _nocopy_strides(
            [(n, s) for n, s in zip(self.shape, self.strides, strict=True) if n != 1], shape
        )
        return None if strides is None else Layout(shape, strides, self.offset)

    def select(self, key: object) -> Layout:
        """The view selected by a basic index: ints, slices, `...` and `None`."""
        items = key if isinstance(key, tuple) else (key,)
        if sum(1 for k in items if k is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
        if consumed > self.ndim:
            raise IndexError(f"too many indices: {consumed} given for {self.ndim} dimensions")
        if Ellipsis not in items:
            items = (*items, Ellipsis)
        shape: list[int] = []
        strides: list[int] = []
        offset = self.offset
        axis = 0
        for k in items:
            if k is None:
                shape.append(1)
                strides.append(0)
            elif k is Ellipsis:
                for _ in range(self.ndim - consumed):
                    shape.append(self.shape[axis])
                    strides.append(self.strides[axis])
                    axis += 1
            elif isinstance(k, slice):
                start, stop, step = k.indices(self.shape[axis])
                n = len(range(start, stop, step))
                shape.append(n)
                strides.append(self.strides[axis] * step)
                if n:
                    offset += start * self.strides[axis]
                axis += 1
            elif isinstance(k, SupportsIndex) and not isinstance(k, bool):
                i = operator.index(k)
                n = self.shape[axis]
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
                offset += (i % n) * self.strides[axis]
                axis += 1
            else:
                raise IndexError(
                    f"only integers, slices, '...' and None are valid basic indices, got "
                    f"{type(k).__name__}"
                )
        return Layout(tuple(shape), tuple(strides), offset)


@lru_cache(maxsize=4096)
def _dense(shape: Shape) -> Layout:
    return Layout(shape, row_major_strides(shape), 0)


def _is_dense(live: list[tuple[int, int]]) -> bool:
    """True if the (extent, stride) pairs of the axes with extent > 1 walk storage row-major."""
    step = 1
    for n, s in reversed(live):
        if s != step:
            return False
        step *= n
    return True


def _nocopy_strides(old: list[tuple[int, int]], shape: Shape) -> Shape | None:
    """Strides that give `shape` over the (extent, stride) axes `old` without a copy, or None.

    NumPy's `_attempt_nocopy_reshape`: match groups of old and new axes with equal products; the
    old axes of a group must be row-major among themselves, and the new ones inherit that walk.
    """
    new = list(shape)
    strides = [1] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(old):
        np_, op = new[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        strides[nj - 1] = old[oj - 1][1]
        for k in range(nj - 1, ni, -1):
            strides[k - 1] = strides[k] * new[k]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    return tuple(strides)


def normalize_axis(axis: int, ndim: int) -> int:
    """`axis` as a non-negative axis of `ndim`; out of range raises NumPy's AxisError (both an
    IndexError and a ValueError), as array-api-strict does."""
    a = _index(axis, "an axis")
    if not -ndim <= a < ndim:
        raise AxisError(f"axis {a} is out of bounds for a tensor of {ndim} dimensions")
    return a % ndim


def byte_strides(layout: Layout, itemsize: int) -> list[int]:
    """Strides in bytes for NumPy; 0 where a stride never moves (extent <= 1, or no elements),
    so an arbitrary stride there cannot overflow NumPy's byte arithmetic."""
    empty = layout.size == 0
    pairs = zip(layout.shape, layout.strides, strict=True)
    return [0 if n <= 1 or empty else s * itemsize for n, s in pairs]


def as_shape_like(values: Any, what: str) -> tuple[int, ...]:
    """A tuple of ints (negative allowed) from an int or a sequence; TypeError names `what`."""
    if isinstance(values, int):
        return (values,)
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers, got {values!r}") from None
