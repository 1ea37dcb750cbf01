"""Copies are whole and independent; a NumPy view handed out cannot change the tensor; views
that alias are read-only or refused for writes, as NumPy's are (issue 15, points 1, 3, 4)."""

from __future__ import annotations

import copy
import itertools
import pickle
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core.layout import Layout

COPIES: dict[str, Callable[[ft.FuelTensor], ft.FuelTensor]] = {
    "pickle": lambda t: pickle.loads(pickle.dumps(t)),
    "pickle5": lambda t: pickle.loads(pickle.dumps(t, protocol=5)),
    "deepcopy": copy.deepcopy,
    "copy": copy.copy,
}


def _tensors() -> dict[str, tuple[ft.FuelTensor, ft.FuelTensor]]:
    """(tensor, its storage owner) pairs: dense 2-D, 3-D, a transposed, an offset strided and a
    flipped view."""
    base = ft.asarray(np.arange(60.0).reshape(6, 10))
    return {
        "2d": (ft.ones((2, 2)) + 0, base),
        "3d": (ft.asarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)), base),
        "transposed": (base.T, base),
        "offset-view": (base[2:5, 3:9:2], base),
        "flipped": (ft.flip(base[1:, 1:], axis=0), base),
    }


@pytest.mark.parametrize("how", COPIES)
@pytest.mark.parametrize("which", list(_tensors()))
def test_copies_are_whole_and_independent(how: str, which: str) -> None:
    x, owner = _tensors()[which]
    before_x, before_owner = np.array(x), np.array(owner)
    y = COPIES[how](x)
    assert y.dtype is x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(np.asarray(y), before_x)
    index = (0,) * y.ndim
    y[index] = 1234.0
    y += 1  # an operator, a reduction and NumPy all see the same elements as indexing
    expected = before_x + 1
    expected[index] = 1235.0
    assert float(y[index]) == 1235.0
    np.testing.assert_array_equal(np.asarray(y), expected)
    assert float(ft.sum(y)) == expected.sum()
    np.testing.assert_array_equal(np.asarray(y[0]), expected[0])
    np.testing.assert_array_equal(np.asarray(x), before_x)  # the original is untouched
    np.testing.assert_array_equal(np.asarray(owner), before_owner)


def test_a_pickled_view_holds_only_its_elements() -> None:
    big = ft.asarray(np.zeros((100, 100), np.float32))
    view = big[10:20, 30:40]
    size = len(pickle.dumps(view))
    assert 400 <= size < 1000  # 100 float32 elements and a small header, not 40,000 bytes
    assert len(pickle.dumps(big)) > 40_000


def test_unpickling_refuses_a_length_mismatch() -> None:
    fn, (dtype, shape, data) = ft.ones((2, 2)).__reduce__()
    with pytest.raises(ValueError, match="holds 31 bytes"):
        fn(dtype, shape, data[:-1])


def test_asarray_hands_out_a_fresh_view() -> None:
    t = ft.asarray(np.arange(1, 7))
    a = np.asarray(t)
    # Its flags are the one part of a view its holder may still change (NumPy 2.4 and 2.5
    # deprecate setting strides, shape and dtype): changing them leaves the tensor alone.
    a.flags.writeable = False
    t += 1  # the tensor is still writable
    assert np.asarray(t).flags.writeable  # and so is the next view handed out
    assert int(ft.sum(t)) == 27
    assert np.asarray(t).dtype == np.int64
    assert np.asarray(t) is not np.asarray(t)


def test_array_protocol_copy_semantics() -> None:
    t = ft.asarray(np.ones(3, np.float32))
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, dtype=np.float64, copy=False)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    shared = np.asarray(t, copy=False)
    assert np.shares_memory(shared, t._storage)
    fresh = np.asarray(t, copy=True)
    fresh[0] = 9.0
    assert float(t[0]) == 1.0


def test_broadcast_to_is_read_only_like_numpy() -> None:
    row = ft.asarray([1.0, 2.0, 3.0, 4.0])
    b = ft.broadcast_to(row, (3, 4))
    nb = np.broadcast_to(np.asarray(row), (3, 4))
    with pytest.raises(ValueError, match="read-only"):
        nb[0] = 7.0
    for write in (
        lambda: b.__setitem__(0, 7.0),
        lambda: b.__setitem__((slice(None), 1), 7.0),
        lambda: b[1].__iadd__(1.0),
        lambda: b.__imul__(2.0),
    ):
        with pytest.raises(ValueError, match="read-only"):
            write()
    handed = np.asarray(b)
    assert not handed.flags.writeable
    with pytest.raises(ValueError):
        handed.flags.writeable = True
    np.testing.assert_array_equal(np.asarray(row), [1.0, 2.0, 3.0, 4.0])
    row[0] = 0.0  # the source stays writable, and the broadcast view sees the write
    assert float(b[2, 0]) == 0.0


def test_broadcast_arrays_matches_numpy() -> None:
    a, b = ft.ones((2, 3)), ft.zeros((2, 3))
    same = ft.broadcast_arrays(a, b)
    assert same[0] is a and same[1] is b  # nothing to stretch: the tensors themselves
    wide = ft.broadcast_arrays(ft.ones((1, 3)), ft.zeros((2, 1)))
    for t in wide:
        with pytest.raises(ValueError, match="read-only"):
            t[0, 0] = 5.0


def test_self_overlapping_targets_are_refused() -> None:
    x = ft.asarray(np.arange(9.0))
    v = ft.as_strided(x, (3, 3), (1, 1))
    for write in (
        lambda: v.__iadd__(ft.ones((3, 3))),
        lambda: v.__setitem__(..., ft.asarray(np.arange(9.0).reshape(3, 3))),
        lambda: v.__imul__(2.0),
    ):
        with pytest.raises(ValueError, match="overlap"):
            write()
    np.testing.assert_array_equal(np.asarray(x), np.arange(9.0))
    reads = v + 0  # reading an overlapping view is fine
    np.testing.assert_array_equal(np.asarray(reads)[1], [1.0, 2.0, 3.0])
    disjoint = ft.as_strided(x, (2, 2), (4, 1))  # distinct elements: written normally
    disjoint += 100.0
    assert np.asarray(x).tolist()[:6] == [100.0, 101.0, 2.0, 3.0, 104.0, 105.0]


def _distinct(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    ranges = [range(n) for n in shape]
    seen = [
        sum(i * s for i, s in zip(idx, strides, strict=True)) for idx in itertools.product(*ranges)
    ]
    return len(seen) == len(set(seen))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.integers(-7, 7)), min_size=0, max_size=4),
)
def test_overlap_rule_is_sound(axes: list[tuple[int, int]]) -> None:
    """Never says "no overlap" for a layout whose elements repeat; exact for dense layouts."""
    shape = tuple(n for n, _ in axes)
    strides = tuple(s for _, s in axes)
    layout = Layout(shape, strides, 0)
    if not layout.may_self_overlap:
        assert _distinct(shape, strides)
    if not _distinct(shape, strides):
        assert layout.may_self_overlap
    if layout.flags.contiguous:
        assert not layout.may_self_overlap
