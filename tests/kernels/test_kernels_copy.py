"""Contiguize's copies: the compiled strided gather and NumPy's tiled fallback give the same bytes.

Every view here is checked against `np.ascontiguousarray` on random bit patterns (so NaN payloads
would show a copy that went through arithmetic): flipped, offset, stepped, permuted, stride-0,
0-size, 0-d and many-dimensional views of every itemsize the tensors use.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.engine import execute
from fueltensor.kernels._chassis import NATIVE

DTYPES = [
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
    np.dtype(np.uint32),
    np.dtype(np.bool_),
    np.dtype(np.complex64),
    np.dtype(np.complex128),
]

native = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")


def random_base(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Any:
    """An array of `shape` holding random bytes (booleans kept to 0/1)."""
    raw = rng.integers(0, 256, (*shape, dtype.itemsize), dtype=np.uint8)
    if dtype == np.bool_:
        raw &= 1
    return raw.view(dtype).reshape(shape)


def native_copy(array: Any) -> Any:
    """The compiled copy into a fresh buffer."""
    assert NATIVE is not None
    out = np.empty(array.shape, array.dtype)
    NATIVE.copy_strided(array, out)
    return out


def assert_copies(view: Any) -> None:
    """Both copies (and contiguize) are fresh C-contiguous arrays with the view's bytes."""
    want = np.ascontiguousarray(view)
    tiled = np.empty(view.shape, view.dtype)
    execute.tiled_copy(view, tiled)
    copies = [tiled, execute.contiguize(view)]
    if NATIVE is not None:
        copies.append(native_copy(view))
    for got in copies:
        assert got.shape == view.shape and got.dtype == view.dtype
        assert got.flags.c_contiguous and not np.shares_memory(got, view)
        assert got.tobytes() == want.tobytes()


@st.composite
def views(draw: st.DrawFn) -> Any:
    """A random view: slices with any step (negative too), a permutation, inserted stride-0 axes."""
    dtype = draw(st.sampled_from(DTYPES))
    base_shape = tuple(draw(st.lists(st.integers(0, 9), max_size=5)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    view = random_base(rng, base_shape, dtype)
    index = tuple(
        slice(draw(st.integers(0, n)), None, draw(st.sampled_from([1, 2, 3, -1, -2, -3])))
        for n in base_shape
    )
    view = view[index]
    view = view.transpose(draw(st.permutations(range(view.ndim))))
    for _ in range(draw(st.integers(0, 2))):
        axis = draw(st.integers(0, view.ndim))
        shape = list(view.shape)
        shape.insert(axis, draw(st.integers(0, 4)))
        view = np.broadcast_to(np.expand_dims(view, axis), shape)
    if view.ndim and view.shape[0] and draw(st.booleans()):
        view = view[draw(st.integers(-1, 0))]  # an integer index: an offset, maybe 0-d
    return view


@settings(max_examples=300, deadline=None)
@given(view=views())
def test_random_views_copy_to_the_same_bytes(view: Any) -> None:
    assert_copies(view)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a.T[::-1],
        lambda a: a[::-1, 1:].T,
        lambda a: a[:, ::2].T,
        lambda a: a.reshape(30, 10, 301)[:, ::-1].transpose(2, 0, 1),
        lambda a: a.reshape(30, 10, 301).transpose(1, 2, 0)[1:, :-3],
    ],
    ids=["transpose", "flipped", "offset", "stepped", "permute3", "permute3-sliced"],
)
def test_tiled_layouts_past_the_tile_sizes(dtype: np.dtype[Any], make: Any) -> None:
    base = random_base(np.random.default_rng(dtype.itemsize), (300, 301), dtype)
    assert_copies(make(base))


def test_many_dimensions() -> None:
    base = random_base(np.random.default_rng(1), (2, 3, 2, 5) + (1,) * 55 + (3, 2, 1, 2), DTYPES[0])
    order = list(range(base.ndim))[::-1]
    assert_copies(base.transpose(order)[..., ::-1, :])
    assert_copies(base[::-1, :, ::2])


@native
def test_native_copy_refuses_a_wrong_destination() -> None:
    assert NATIVE is not None
    src = np.arange(12, dtype=np.float32).reshape(3, 4).T
    with pytest.raises(ValueError, match="as many elements of the same size"):
        NATIVE.copy_strided(src, np.empty(11, np.float32))
    with pytest.raises(ValueError, match="as many elements of the same size"):
        NATIVE.copy_strided(src, np.empty(12, np.int16))
    with pytest.raises(ValueError, match="dst must be a C-contiguous, writable array"):
        NATIVE.copy_strided(src, np.empty((4, 6), np.float32)[:, ::2])
    storage = np.arange(24, dtype=np.float32)
    with pytest.raises(ValueError, match="dst overlaps src"):
        NATIVE.copy_strided(storage[::2], storage[6:18])


@native
def test_threads_copy_concurrently_with_the_same_bytes() -> None:
    base = random_base(np.random.default_rng(7), (300, 301), np.dtype(np.float32))
    want = np.ascontiguousarray(base.T).tobytes()  # large enough that the copy releases the GIL
    with ThreadPoolExecutor(2) as pool:
        copies = list(pool.map(lambda _: native_copy(base.T).tobytes(), range(6)))
    assert copies == [want] * 6


def test_contiguize_uses_the_compiled_copy_when_it_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the extension built and the pure path not forced, a Contiguize step runs the
    extension's own copy_strided (watched through a spy), and gives the right values."""
    if NATIVE is None or os.environ.get("FUELTENSOR_PURE_NUMPY") == "1":
        assert execute._COPY_STRIDED is None
        return
    assert execute._COPY_STRIDED is NATIVE.copy_strided
    seen: list[tuple[int, ...]] = []

    def spy(array: np.ndarray, out: np.ndarray) -> None:
        seen.append(array.shape)
        NATIVE.copy_strided(array, out)

    monkeypatch.setattr(execute, "_COPY_STRIDED", spy)
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ft.asarray(base)
    got = np.asarray(ft.maximum(x.T, ft.asarray(base.T.copy())))
    assert seen == [(4, 3)]
    np.testing.assert_array_equal(got, base.T)
