"""Views stay inside their storage: chains of indexing, flip, permute, broadcast_to and reshape
over arbitrary strided views, and shapes/strides whose products overflow 64 bits.

The storage holds its own indices (`arange`), so a view's values are the storage indices it
reads; they are checked against an independent enumeration from shape, strides and offset, and
against NumPy applying the same operations to the same numbers. (tests/core/test_views.py checks
single operations on dense bases; this file chains them on awkward views.)
"""

from __future__ import annotations

import copy
import itertools
import math
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

import fueltensor as ft

STORAGE = 48
MAX_INDEX = 2**63 - 1


def enumerate_storage(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> list[int]:
    """Every storage index a view touches, one element at a time, in row-major order."""
    return [
        offset + sum(i * s for i, s in zip(idx, strides, strict=True))
        for idx in itertools.product(*(range(n) for n in shape))
    ]


def assert_inside(view: ft.FuelTensor, reference: np.ndarray) -> None:
    """`view` reads exactly `reference`'s numbers, each at a storage index inside its storage."""
    storage = view._storage.size
    touched = enumerate_storage(view.shape, view.strides, view.offset)
    assert all(0 <= k < storage for k in touched), (view.shape, view.strides, view.offset)
    assert view.size > 0 or 0 <= view.offset <= storage
    got = np.asarray(view)
    assert got.shape == reference.shape
    np.testing.assert_array_equal(got, reference)
    if np.shares_memory(got, view._storage):
        np.testing.assert_array_equal(got.ravel(), view._storage[touched])


@st.composite
def strided_view(draw: st.DrawFn) -> tuple[ft.FuelTensor, np.ndarray]:
    """A valid view with negative, zero and large strides and an offset, and NumPy's twin."""
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(-9, 9), min_size=ndim, max_size=ndim)))
    reach = [(n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0]
    lo, hi = sum(r for r in reach if r < 0), sum(r for r in reach if r > 0)
    if math.prod(shape) == 0:
        offset = draw(st.integers(0, STORAGE))
    else:
        assume(hi - lo < STORAGE)
        offset = draw(st.integers(-lo, STORAGE - 1 - hi))
    view = ft.as_strided(ft.asarray(np.arange(STORAGE, dtype=np.int64)), shape, strides, offset)
    twin = np.array(enumerate_storage(shape, strides, offset), dtype=np.int64).reshape(shape)
    return view, twin


def _key(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    items: list[Any] = []
    for n in shape[: draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "none"]))
        if kind == "int" and n:
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "none":
            items.append(None)
            items.append(draw(st.slices(max(n, 1))))
        else:
            items.append(draw(st.slices(max(n, 1))))
    if draw(st.booleans()):
        items.insert(draw(st.integers(0, len(items))), Ellipsis)
    return tuple(items)


@st.composite
def operation(
    draw: st.DrawFn, shape: tuple[int, ...]
) -> tuple[str, Callable[[ft.FuelTensor], ft.FuelTensor], Callable[[np.ndarray], np.ndarray]]:
    """One view operation, as (label, on a FuelTensor, on NumPy)."""
    kind = draw(st.sampled_from(["index", "flip", "permute", "broadcast", "reshape"]))
    nd = len(shape)
    if kind == "index":
        key = _key(draw, shape)
        return f"[{key}]", lambda t: t[key], lambda a: a[key]
    if kind == "flip":
        axes = tuple(draw(st.sets(st.integers(0, nd - 1)))) if nd else ()
        return f"flip{axes}", lambda t: ft.flip(t, axis=axes), lambda a: np.flip(a, axes)
    if kind == "permute":
        perm = tuple(draw(st.permutations(range(nd))))
        return f"permute{perm}", lambda t: ft.permute_dims(t, perm), lambda a: a.transpose(perm)
    if kind == "broadcast":
        lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
        target = lead + tuple(draw(st.sampled_from([n, 3])) if n == 1 else n for n in shape)
        return (
            f"broadcast_to{target}",
            lambda t: ft.broadcast_to(t, target),
            lambda a: np.broadcast_to(a, target),
        )
    size = math.prod(shape)
    factors = [d for d in range(1, size + 1) if size % d == 0] or [1]
    first = draw(st.sampled_from(factors)) if size else draw(st.integers(0, 3))
    target = (first, -1) if size else (first, 0, 2)
    return f"reshape{target}", lambda t: ft.reshape(t, target), lambda a: a.reshape(target)


@settings(max_examples=400, deadline=None)
@given(start=strided_view(), data=st.data())
def test_chained_views_read_only_their_storage(
    start: tuple[ft.FuelTensor, np.ndarray], data: st.DataObject
) -> None:
    view, twin = start
    assert_inside(view, twin)
    for _ in range(data.draw(st.integers(1, 4))):
        label, on_tensor, on_numpy = data.draw(operation(view.shape))
        note(label)
        try:
            expected = on_numpy(twin)
        except (ValueError, IndexError):
            with pytest.raises((ValueError, IndexError)):
                on_tensor(view)
            return
        view, twin = on_tensor(view), np.asarray(expected)
        assert_inside(view, twin)


HUGE_EXTENTS = st.sampled_from([0, 1, 2, 3, 2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64])
HUGE_STRIDES = st.sampled_from(
    [0, 1, -1, 2, -3, 2**31, -(2**31), 2**32, 2**62, -(2**62), 2**63 - 1, -(2**63), 2**64]
)


def _exact_span(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> tuple[int, int]:
    """Lowest and highest storage index, by Python integers (no overflow)."""
    reach = [(n - 1) * s for n, s in zip(shape, strides, strict=True)]
    return offset + sum(min(r, 0) for r in reach), offset + sum(max(r, 0) for r in reach)


def _numpy_can_hold(shape: tuple[int, ...], itemsize: int) -> bool:
    return math.prod(n for n in shape if n) * itemsize <= MAX_INDEX


@settings(max_examples=600, deadline=None)
@given(
    shape=st.lists(HUGE_EXTENTS, min_size=1, max_size=4).map(tuple),
    strides=st.lists(HUGE_STRIDES, min_size=4, max_size=4),
    offset=st.sampled_from([0, 1, 7, 2**31, 2**63 - 1, 2**64]),
)
def test_overflowing_shapes_and_strides_give_a_view_inside_storage_or_valueerror(
    shape: tuple[int, ...], strides: list[int], offset: int
) -> None:
    buffer = np.arange(8, dtype=np.float64)
    base = ft.asarray(buffer)
    st_ = tuple(strides[: len(shape)])
    size = math.prod(shape)
    lo, hi = _exact_span(shape, st_, offset)
    moving = [s for n, s in zip(shape, st_, strict=True) if n > 1]  # others never move
    fits_64 = all(abs(s) <= MAX_INDEX for s in moving) and offset <= MAX_INDEX
    live = size > 0 and lo >= 0 and hi < 8
    empty = size == 0 and offset <= 8
    if not (fits_64 and size <= MAX_INDEX and (live or empty) and _numpy_can_hold(shape, 8)):
        with pytest.raises(ValueError) as info:
            ft.as_strided(base, shape, st_, offset)
        assert any(w in str(info.value) for w in ("outside", "2**63", "64-bit", "past the end"))
        return
    view = ft.as_strided(base, shape, st_, offset)
    array = np.asarray(view)  # a view, never a copy: stride-0 axes stand for huge extents
    assert np.shares_memory(array, buffer) or size == 0
    assert array.shape == shape
    if size:
        corner_lo = tuple(n - 1 if s < 0 else 0 for n, s in zip(shape, st_, strict=True))
        corner_hi = tuple(n - 1 if s > 0 else 0 for n, s in zip(shape, st_, strict=True))
        assert array[corner_lo] == buffer[lo] and array[corner_hi] == buffer[hi]
    for derived in (lambda v: ft.flip(v), lambda v: v[..., ::-1], lambda v: v[None, ..., :1]):
        d = derived(view)
        d_lo, d_hi = _exact_span(d.shape, d.strides, d.offset)
        assert d.size == 0 or (d_lo >= 0 and d_hi < 8)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda t: ft.broadcast_to(t, (2**62, 2**62, 4)), "more than 2**63 - 1"),
        (lambda t: ft.broadcast_to(t, (2**40, 0, 2**40, 4)), "2**63 - 1 bytes"),
        (lambda t: ft.reshape(t[:0], (0, 2**62, 2**62)), "2**63 - 1"),
        (lambda t: ft.as_strided(t, (3,), (2**63,)), "exceed the 64-bit index range"),
        (lambda t: ft.as_strided(t, (2**32, 2**32), (1, 1)), "more than 2**63 - 1"),
        (lambda t: ft.as_strided(t, (2,), (4,), 1), "outside the storage's 0..3"),
        (lambda t: ft.as_strided(t, (2,), (-1,), 0), "touches storage elements -1..0"),
        (lambda t: ft.as_strided(t, (0,), (1,), 5), "past the end of a storage of 4 elements"),
        (lambda t: ft.broadcast_to(t, (2,)), "cannot broadcast shape (4,) to (2,)"),
    ],
)
def test_refused_views_say_why(make: Callable[[ft.FuelTensor], Any], says: str) -> None:
    t = ft.asarray(np.zeros(4, np.float64))
    with pytest.raises(ValueError) as info:
        make(t)
    assert says in str(info.value), str(info.value)


@pytest.mark.parametrize("key", [2**63, -(2**64), 4])
def test_out_of_range_integer_indices_are_refused(key: int) -> None:
    t = ft.asarray(np.zeros(4, np.float32))
    with pytest.raises(IndexError, match=f"index {key} is out of bounds for axis 0 with size 4"):
        t[key]


@pytest.mark.parametrize("step", [2**63 - 1, -(2**63), 2**64])
def test_huge_slice_steps_stay_inside(step: int) -> None:
    buffer = np.arange(4.0)
    view = ft.asarray(buffer)[::step]
    np.testing.assert_array_equal(np.asarray(view), buffer[::step])
    lo, hi = _exact_span(view.shape, view.strides, view.offset)
    assert 0 <= lo <= hi < 4


# -- copies and writes through aliasing views (issue 15) --------------------------------------


@settings(max_examples=200, deadline=None)
@given(start=strided_view(), how=st.sampled_from(["pickle", "deepcopy", "copy"]))
def test_copies_of_any_view_are_whole_and_independent(
    start: tuple[ft.FuelTensor, np.ndarray], how: str
) -> None:
    view, twin = start
    storage = np.array(view._storage)
    made = {
        "pickle": lambda t: pickle.loads(pickle.dumps(t)),
        "deepcopy": copy.deepcopy,
        "copy": copy.copy,
    }[how](view)
    np.testing.assert_array_equal(np.asarray(made), twin)
    assert made.shape == view.shape and made._storage.size == view.size
    if made.size:
        made += 1
        np.testing.assert_array_equal(np.asarray(made), twin + 1)
        assert int(ft.sum(made)) == int(twin.sum()) + made.size
    np.testing.assert_array_equal(view._storage, storage)


@settings(max_examples=300, deadline=None)
@given(start=strided_view())
def test_writes_through_a_view_are_refused_exactly_when_elements_may_repeat(
    start: tuple[ft.FuelTensor, np.ndarray],
) -> None:
    """A write either goes through (only for distinct elements, then exactly one increment
    each) or is refused with ValueError by the overlap or stride-0 rule, storage unchanged."""
    view, twin = start
    storage = view._storage
    before = storage.copy()
    distinct = len(set(twin.ravel().tolist())) == twin.size
    try:
        view += 1
    except ValueError:
        np.testing.assert_array_equal(storage, before)
        assert view._layout.may_self_overlap or view.layout.broadcast_stride0
        return
    assert distinct, "a write into a view whose elements repeat went through"
    expected = before.copy()
    expected[twin.ravel()] += 1
    np.testing.assert_array_equal(storage, expected)
