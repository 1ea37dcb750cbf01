"""Views: indexing, permute, flip, broadcast_to, reshape and as_strided against NumPy, and the
guarantee that no view reaches outside its storage."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import fueltensor as ft

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


def storage_indices(shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> list[int]:
    """Every storage index a view touches, enumerated one element at a time."""
    return [
        offset + sum(i * s for i, s in zip(idx, strides, strict=True))
        for idx in itertools.product(*(range(n) for n in shape))
    ]


@settings(max_examples=300, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), max_size=4).map(tuple),
    strides=st.lists(st.integers(-7, 7), min_size=4, max_size=4),
    offset=st.integers(-3, 40),
    storage=st.integers(0, 40),
)
def test_as_strided_stays_inside_storage_or_raises(
    shape: tuple[int, ...], strides: list[int], offset: int, storage: int
) -> None:
    base = ft.asarray(np.arange(storage, dtype=np.float64))
    st_ = tuple(strides[: len(shape)])
    touched = storage_indices(shape, st_, offset)
    inside = (
        offset >= 0 and all(0 <= k < storage for k in touched) and (touched or offset <= storage)
    )
    if not inside:
        bounds = (
            r"outside the storage's 0\.\.|lies past the end of a storage|offset -?\d+ is negative"
        )
        with pytest.raises(ValueError, match=bounds):
            ft.as_strided(base, shape, st_, offset)
        return
    v = ft.as_strided(base, shape, st_, offset)
    expected = np.array([float(k) for k in touched]).reshape(shape)
    np.testing.assert_array_equal(np.asarray(v), expected)


@pytest.mark.parametrize(
    "shape, strides",
    [
        ((2**32, 2**32), (1, 1)),
        ((2**62, 4), (1, 2**62)),
        ((3,), (2**63,)),
        ((2**40,) * 2, (0, 0)),
    ],
)
def test_overflowing_shapes_and_strides_are_refused_without_allocating(
    shape: tuple[int, ...], strides: tuple[int, ...]
) -> None:
    base = ft.asarray(np.zeros(8, np.float32))
    # fueltensor's own refusal (NumPy's "array is too big" would mean it tried to allocate)
    with pytest.raises(ValueError, match=r"more than 2\*\*63 - 1|up to 2\*\*63 - 1"):
        ft.as_strided(base, shape, strides, 0)


def test_negative_offset_is_refused() -> None:
    base = ft.asarray(np.zeros(8, np.float32))
    with pytest.raises(ValueError, match="negative"):
        ft.as_strided(base, (2,), (1,), -1)


def test_broadcast_view_of_huge_shape_is_a_view_not_an_allocation() -> None:
    x = ft.asarray(np.ones(3, np.float32))
    v = ft.broadcast_to(x, (2**31, 3))
    assert v.shape == (2**31, 3) and v.strides == (0, 1) and v.layout.broadcast_stride0


basic_keys = st.one_of(
    st.integers(-4, 3),
    st.slices(5),
    st.just(Ellipsis),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(key=st.lists(basic_keys, max_size=4).map(tuple))
def test_basic_indexing_matches_numpy(key: tuple[object, ...]) -> None:
    a = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
    try:
        expected = a[key]
    except IndexError:
        with pytest.raises(IndexError):
            ft.asarray(a)[key]
        return
    got = ft.asarray(a)[key]
    assert got.shape == expected.shape
    np.testing.assert_array_equal(np.asarray(got), expected)
    assert np.shares_memory(np.asarray(got), a) or expected.size <= 1


@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), data=st.data())
def test_permute_flip_reshape_match_numpy(shape: tuple[int, ...], data: st.DataObject) -> None:
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = ft.asarray(a)
    axes = tuple(data.draw(st.permutations(range(len(shape)))))
    p = ft.permute_dims(t, axes)
    np.testing.assert_array_equal(np.asarray(p), np.transpose(a, axes))
    flip_axes = tuple(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    f = ft.flip(p, axis=flip_axes)
    ref = np.flip(np.transpose(a, axes), axis=flip_axes)
    np.testing.assert_array_equal(np.asarray(f), ref)
    assert f.layout.reverse_strides == any(ref.shape[k] > 1 for k in flip_axes)
    r = ft.reshape(f, (-1,))
    np.testing.assert_array_equal(np.asarray(r), ref.reshape(-1))


def test_reshape_is_a_view_when_strides_allow_and_a_copy_otherwise() -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ft.asarray(a)
    v = ft.reshape(t[:, :, ::2], (6, 2))
    assert np.shares_memory(np.asarray(v), a)
    c = ft.reshape(t.mT, (24,))
    assert not np.shares_memory(np.asarray(c), a)
    np.testing.assert_array_equal(np.asarray(c), a.transpose(0, 2, 1).reshape(24))
    with pytest.raises(ValueError, match="copy"):
        ft.reshape(t.mT, (24,), copy=False)


@pytest.mark.parametrize(
    "make, flags",
    [
        (lambda t: t, dict(contiguous=True)),
        (lambda t: t[1:], dict(contiguous=True, start_offset=True)),
        (lambda t: t.T, dict(strided=True)),
        (lambda t: t[:, ::2], dict(strided=True)),
        (lambda t: ft.flip(t, axis=0), dict(reverse_strides=True, start_offset=True)),
        (lambda t: ft.broadcast_to(t[0], (3, 4)), dict(broadcast_stride0=True)),
        (lambda t: t[None, 1:2, :], dict(contiguous=True, start_offset=True)),
    ],
)
def test_layout_flags(make: object, flags: dict[str, bool]) -> None:
    t = ft.asarray(np.zeros((3, 4), np.float32))
    view = make(t)  # type: ignore[operator]
    expected = {f: flags.get(f, False) for f in ft.LayoutFlags._fields}
    assert view.layout._asdict() == expected


def test_zero_d_and_empty_views() -> None:
    z = ft.asarray(np.float32(3.0))
    assert z.shape == () and z.ndim == 0 and z.size == 1 and z.layout.contiguous
    e = ft.asarray(np.zeros((0, 3), np.float32))
    assert e.size == 0 and ft.flip(e, axis=0).shape == (0, 3)
    assert e[5:, ::-1].shape == (0, 3)


def test_thirty_two_dimensions() -> None:
    t = ft.reshape(ft.asarray(np.arange(2.0)), (1,) * 31 + (2,))
    assert t.ndim == 32
    np.testing.assert_array_equal(np.asarray(ft.flip(t)).ravel(), [1.0, 0.0])


def test_numpy_arrays_share_memory_with_any_element_strides() -> None:
    a = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)[::-1, :, ::2]
    t = ft.asarray(a)
    assert np.shares_memory(np.asarray(t), a)
    np.testing.assert_array_equal(np.asarray(t), a)


@given(shape=shapes)
def test_shape_arithmetic_past_2_31_without_allocating(shape: tuple[int, ...]) -> None:
    assume(len(shape) >= 1)
    base = ft.asarray(np.zeros(1, np.float32))
    big = (2**31 + 1, *shape)
    view = ft.as_strided(base, big, (0,) * len(big), 0)
    assert view.size == int(np.prod(big, dtype=object))
