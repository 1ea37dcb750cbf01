"""Errors in fueltensor's words, not NumPy's: ragged lists, `x @ y` shapes, integers too big
for any dtype, "an int64", shapes too big to allocate, integers to negative integer powers and
assigning None."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
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


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: ft.zeros((2**40,) * 2), "zeros: a float64 tensor of shape (1099511627776, "),
        (lambda: ft.ones((2**62,), dtype=ft.float32), "ones: a float32 tensor of shape"),
        (lambda: ft.full((2**31,) * 3, 1.0), "full: a float64 tensor of shape"),
        (lambda: ft.eye(2**33), "eye: a float64 tensor of shape (8589934592, 8589934592)"),
    ],
)
def test_a_shape_beyond_the_address_space_is_refused_before_allocating(
    make: Callable[[], ft.FuelTensor], words: str
) -> None:
    with pytest.raises(MemoryError) as info:
        make()
    assert words in str(info.value) and "EiB, more than a 64-bit address space" in str(info.value)
    assert "too big" not in str(info.value)


def test_a_failed_allocation_says_how_many_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 8.00 MiB for an array")

    monkeypatch.setattr(np, "zeros", refuse)
    with pytest.raises(
        MemoryError,
        match=r"zeros: a float64 tensor of shape \(1024, 1024\) needs "
        r"8 MiB, more than this machine could allocate",
    ):
        ft.zeros((1024, 1024))


def test_an_integer_to_a_negative_integer_power() -> None:
    x = ft.asarray([1, 2, 3])
    for exponent in (-1, ft.asarray([2, -1, 0])):
        with pytest.raises(ValueError, match=r"an integer \(int64\) raised to a negative integer"):
            x**exponent
    assert (x ** ft.asarray([2, 1, 0])).tolist() == [1, 2, 1]


def test_assigning_none_names_what_can_be_assigned() -> None:
    x = ft.asarray([1.0, 2.0])
    with pytest.raises(TypeError) as info:
        x[0] = None
    assert str(info.value).startswith("cannot store NoneType in a float64 tensor; assign a ")
    assert "float('nan')" in str(info.value)
    assert x.tolist() == [1.0, 2.0]
