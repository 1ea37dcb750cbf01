"""Host element-wise functions' per-call machinery: NumPy's error state set through its
contextvar (as `np.errstate(all="ignore")` sets it), Python scalars as the fast path's cached
0-d tensors, and fresh results adopted in one C call, all giving NumPy's bits and dtypes and
leaving the caller's error state and warning filters as they were."""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.array_api._host import fresh
from fueltensor.core import scalars
from fueltensor.core.tensor import FuelTensor

UNARY = ["expm1", "log1p", "tan", "floor", "sign", "cosh", "isnan", "square"]
"""Host unary functions (the op table's unary rows are contract operations: tests/engine)."""
COMPARISONS = {"greater": ">", "less": "<", "equal": "==", "not_equal": "!=", "greater_equal": ">="}
DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.int8]
SPECIALS = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-30, 1e30, 700.0, -5.5]


def values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    mixed = np.where(rng.random(n) < 0.4, rng.choice(SPECIALS, n), rng.standard_normal(n) * 9)
    if np.issubdtype(np.dtype(dtype), np.integer):
        mixed = np.clip(np.nan_to_num(mixed), -100, 100)
    with np.errstate(all="ignore"):
        return mixed.astype(dtype).reshape(shape)


def numpy_result(name: str, *args: Any) -> np.ndarray:
    """NumPy's ufunc of the same meaning, silenced."""
    ufunc = getattr(np, name)
    with np.errstate(all="ignore"):
        return np.asarray(ufunc(*args))


def same(got: ft.FuelTensor, want: np.ndarray) -> None:
    assert got.dtype.np == want.dtype and got.shape == want.shape
    assert np.asarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


VIEWS = {
    "dense": lambda t: t,
    "strided": lambda t: t[:, ::2],
    "flipped": lambda t: ft.flip(t, axis=1),
    "transposed": lambda t: t.T,
    "offset": lambda t: t[1:, 3:],
    "0-d": lambda t: t[2, 1],
    "empty": lambda t: t[:0],
    "broadcast": lambda t: ft.broadcast_to(t[0], (3, 6)),
}


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(UNARY + sorted(COMPARISONS)),
    dtype=st.sampled_from(DTYPES),
    view=st.sampled_from(sorted(VIEWS)),
    scalar=st.floats() | st.integers(-100, 100) | st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_host_functions_are_numpys(
    name: str, dtype: Any, view: str, scalar: Any, seed: int
) -> None:
    x = VIEWS[view](ft.asarray(values(dtype, (4, 6), seed)))
    a = np.asarray(x)
    if name in UNARY:
        same(getattr(ft, name)(x), numpy_result(name, a))
        return
    if isinstance(scalar, float) and np.issubdtype(a.dtype, np.integer):
        scalar = int(scalar) if np.isfinite(scalar) and abs(scalar) < 100 else 3
    with np.errstate(all="ignore"):  # a weak scalar out of the dtype's range is inf
        weak = np.asarray(scalar, a.dtype)
    same(getattr(ft, name)(x, scalar), numpy_result(name, a, weak))
    same(getattr(ft, name)(scalar, x), numpy_result(name, weak, a))
    same(getattr(ft, name)(x, x), numpy_result(name, a, a))


def test_the_callers_error_state_and_warning_filters_hold_outside_only() -> None:
    x = ft.asarray(np.array([-1.0, 0.0, 1000.0, np.nan], np.float32))
    old = np.seterr(all="raise")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            same(ft.log1p(x), numpy_result("log1p", np.asarray(x)))
            same(ft.expm1(x), numpy_result("expm1", np.asarray(x)))
            same(ft.tan(x), numpy_result("tan", np.asarray(x)))
            same(x > 0, numpy_result("greater", np.asarray(x), np.float32(0)))
            with pytest.raises(TypeError, match="must be a FuelTensor"):
                ft.expm1("x")  # type: ignore[arg-type]
            assert np.geterr() == {
                "divide": "raise",
                "over": "raise",
                "under": "raise",
                "invalid": "raise",
            }
            with pytest.raises(FloatingPointError):
                np.sqrt(np.float32(-1.0))  # the caller's state is back after each call
    finally:
        np.seterr(**old)
    with np.errstate(divide="warn"), pytest.warns(RuntimeWarning):
        ft.log1p(x)
        np.log(np.float32(0.0))


def test_a_scalar_that_does_not_fit_is_refused_as_before() -> None:
    i8 = ft.asarray(np.array([1, -2, 3], np.int8))
    with pytest.raises(OverflowError) as slow:
        scalars.scalar_tensor(300, i8)
    for call in (lambda: i8 > 300, lambda: ft.less(300, i8), lambda: ft.bitwise_and(i8, 300)):
        with pytest.raises(OverflowError) as got:
            call()
        assert str(got.value) == str(slow.value)


def test_results_beside_cached_scalars_are_fresh_and_writable() -> None:
    ints = ft.asarray(np.array([1, 2, 3], np.int32))
    for _ in range(2):  # the second round reads the cached scalar
        result = ft.bitwise_or(ints, 4)
        assert result._storage.flags.writeable
        result[0] = 100
        assert np.asarray(ints + 4).tolist() == [5, 6, 7]  # a host plan beside the scalar
        assert np.asarray(ft.bitwise_or(ints, 4)).tolist() == [5, 6, 7]


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(6, dtype=np.float32),
        lambda: np.arange(6, dtype=np.float32).reshape(2, 3),
        lambda: np.array(2.5),
        lambda: np.arange(6.0)[::2],
        lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        lambda: np.frombuffer(b"\0" * 16, np.float32),
        lambda: np.zeros((2, 0), np.int16),
        lambda: np.float64(3.0),
    ],
)
def test_fresh_adopts_exactly_what_it_may(make: Any) -> None:
    result = make()
    got = fresh(result)
    want = FuelTensor._from_dense(np.array(result, order="C", copy=True))
    assert got.dtype is want.dtype and got._layout == want._layout
    assert np.asarray(got).tobytes() == np.asarray(want).tobytes()
    owned = isinstance(result, np.ndarray) and result.flags.owndata and result.flags.carray
    assert np.shares_memory(got._storage, result) == bool(owned and result.size)
    assert got._storage.ndim == 1 and got._storage.flags.writeable
    wide = fresh(make(), ft.float64)
    assert wide.dtype is ft.float64 and np.asarray(wide).tolist() == np.asarray(result).tolist()


def test_host_calls_are_still_traced() -> None:
    x = ft.asarray(np.linspace(0, 1, 5, dtype=np.float32))
    with ft.trace() as plans:
        ft.expm1(x)
        _ = x // 0.5
    assert [p.op for p in plans] == ["expm1", "floor_divide"]
    assert all(p.kernel_name == "host" for p in plans)
