"""Errors in fueltensor's words, not NumPy's: ragged lists, `x @ y` shapes, integers too big
for any dtype, and "an int64"."""

from __future__ import annotations

import pytest

import fueltensor as ft


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ([[1, 2], [3]], "data[1] has 1 items, data[0] has 2"),
        ([[1, 2], 3], "mixes sequences and scalars"),
        ([[[1], [2]], [[1], [2, 3]]], "data[1][1] has 2 items, data[1][0] has 1"),
    ],
)
def test_ragged_lists(data: list[object], where: str) -> None:
    with pytest.raises(ValueError, match="ragged") as info:
        ft.asarray(data)
    assert where in str(info.value) and "inhomogeneous" not in str(info.value)


@pytest.mark.parametrize(
    ("s1", "s2", "words"),
    [
        ((2, 3), (2, 3), "x1's last axis has 3 elements, the second-to-last axis of x2 has 2"),
        ((3,), (4,), "the only axis of x2 has 4"),
        ((2, 2, 3), (3, 3, 4), "stacked dimensions do not broadcast"),
    ],
)
def test_matmul_shape_mismatch(s1: tuple[int, ...], s2: tuple[int, ...], words: str) -> None:
    with pytest.raises(ValueError) as info:
        ft.ones(s1) @ ft.ones(s2)
    assert words in str(info.value) and "gufunc" not in str(info.value)


def test_integers_too_big() -> None:
    with pytest.raises(OverflowError, match=f"the integer {2**70} does not fit any integer dtype"):
        ft.asarray([1, 2**70])
    with pytest.raises(OverflowError, match="the integer 300 does not fit uint8"):
        ft.asarray([300], dtype=ft.uint8)
    assert ft.asarray(2**64 - 1).dtype == ft.uint64  # the widest still fits


def test_articles_before_dtype_names() -> None:
    x = ft.ones((2,), dtype=ft.int64)
    with pytest.raises(TypeError, match="in an int64 tensor"):
        x += ft.ones((2,))
    with pytest.raises(TypeError, match="of a complex128 tensor"):
        int(ft.asarray(1 + 2j))
