"""How a tensor reads: str like NumPy's, repr with dtype and (for views) the layout, format()
of 0-d tensors, tolist() and item() with NumPy's semantics, monospace values in HTML."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fueltensor as ft


@st.composite
def views(draw: st.DrawFn) -> tuple[np.ndarray, ft.FuelTensor]:
    """A NumPy array and the same values as a fueltensor view (maybe transposed or stepped)."""
    shape = draw(st.lists(st.integers(1, 4), min_size=0, max_size=3))
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) / 4
    t = ft.asarray(base)
    if shape and draw(st.booleans()):
        base, t = base.transpose(), ft.permute_dims(t, tuple(reversed(range(t.ndim))))
    if shape and draw(st.booleans()):
        base, t = base[..., ::-1], ft.flip(t, axis=-1)
    return base, t


@given(views())
def test_str_is_numpys_and_repr_shows_layout_only_for_views(
    case: tuple[np.ndarray, ft.FuelTensor],
) -> None:
    want, t = case
    assert str(t) == str(want)
    assert t.tolist() == want.tolist()
    text = repr(t)
    assert f"dtype={t.dtype.name}" in text and f"shape={t.shape}" in text
    row_major = tuple(int(np.prod(t.shape[i + 1 :])) for i in range(t.ndim))
    assert ("strides=" in text) is ((t.strides, t.offset) != (row_major, 0))


def test_format_of_a_0d_tensor_and_refusal_on_nd() -> None:
    t = ft.asarray(np.float32(3.14159))
    assert f"{t:.2f}" == "3.14" and f"{t}" == str(np.float32(3.14159))
    with pytest.raises(TypeError, match="shape"):
        f"{ft.ones((2,)):.2f}"
    assert f"{ft.ones((2,))}" == str(np.ones(2))


def test_item_needs_exactly_one_element() -> None:
    assert ft.asarray([[7]]).item() == 7 and type(ft.asarray([[7]]).item()) is int
    assert type(ft.asarray(np.ones(1, ft.bfloat16.np)).item()) is float
    for bad in (ft.ones((2,)), ft.ones((0,))):
        with pytest.raises(ValueError, match="one element"):
            bad.item()


def test_html_values_are_monospace() -> None:
    html = ft.ones((2, 3))._repr_html_()
    pre = html[html.index("<pre") : html.index(">", html.index("<pre"))]
    assert "monospace" in pre
