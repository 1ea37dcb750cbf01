"""Generic array-API code, written only against `xp`, gives the same results on NumPy (through
array-api-compat), array-api-strict and fueltensor."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from _extras import extra
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fueltensor as ft

array_api_compat = extra("array_api_compat", "test")
array_api_strict = extra("array_api_strict", "test")
compat_numpy = extra("array_api_compat.numpy", "test")

array_api_strict.set_array_api_strict_flags(api_version="2024.12")

NAMESPACES = {"numpy": compat_numpy, "array_api_strict": array_api_strict, "fueltensor": ft}


def to_numpy(x: Any) -> np.ndarray:
    """Any of the three namespaces' arrays as a NumPy array (through DLPack, no __array__)."""
    return np.asarray(x) if isinstance(x, np.ndarray | np.generic) else np.from_dlpack(x)


# -- realistic generic functions: only `xp` calls, no library names ------------------------------


def standardize_columns(x: Any) -> Any:
    xp = array_api_compat.array_namespace(x)
    return (x - xp.mean(x, axis=0)) / xp.std(x, axis=0, correction=1)


def softmax(x: Any) -> Any:
    xp = array_api_compat.array_namespace(x)
    shifted = x - xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(shifted)
    return e / xp.sum(e, axis=-1, keepdims=True)


def piecewise_polynomial(x: Any) -> Any:
    """x**2 left of 0, a clipped line right of it."""
    xp = array_api_compat.array_namespace(x)
    return xp.where(x < 0, x * x, xp.clip(3 * x - 1, min=-1.0, max=5.0))


def rank_and_count(labels: Any) -> tuple[Any, ...]:
    """Unique labels with counts, the order that sorts labels descending (stable), top value."""
    xp = array_api_compat.array_namespace(labels)
    values, counts = xp.unique_counts(labels)
    order = xp.argsort(labels, descending=True)
    top = xp.sort(labels)[-1]
    return values, counts, order, xp.take(labels, order), top


def one_hot_and_pairwise(labels: Any, points: Any) -> tuple[Any, ...]:
    """One-hot encoding by broadcast equality, and squared pairwise distances."""
    xp = array_api_compat.array_namespace(labels, points)
    k = int(xp.max(labels)) + 1
    one_hot = xp.astype(labels[:, None] == xp.arange(k)[None, :], xp.float64)
    diff = points[:, None, :] - points[None, :, :]
    d2 = xp.sum(diff * diff, axis=-1)
    return one_hot, d2, xp.argmin(d2 + xp.eye(d2.shape[0]) * 1e9, axis=1)


def relu_in_place(x: Any) -> Any:
    """A copy of x with negatives zeroed by boolean-mask assignment, and its running sum."""
    xp = array_api_compat.array_namespace(x)
    y = xp.asarray(x, copy=True)
    y[y < 0] = 0.0
    return y, xp.cumulative_sum(xp.reshape(y, (-1,)), include_initial=True)


def polynomial_horner(x: Any) -> Any:
    """2x^3 - x + 0.5 by Horner's rule, then counted where above 1 per row."""
    xp = array_api_compat.array_namespace(x)
    p = ((2.0 * x + 0.0) * x - 1.0) * x + 0.5
    return p, xp.count_nonzero(p > 1.0, axis=-1), xp.any(p > 1.0, axis=0), xp.all(p < 10.0)


finite = st.floats(-50, 50, allow_nan=False, allow_subnormal=False)
matrices = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=2, max_dims=2, min_side=2, max_side=6), elements=finite
)


def run_everywhere(fn: Callable[..., Any], *arrays: np.ndarray) -> dict[str, list[np.ndarray]]:
    out = {}
    for name, xp in NAMESPACES.items():
        with np.errstate(all="ignore"):  # NumPy warns on 0/0; fueltensor answers NaN silently
            got = fn(*(xp.asarray(a) for a in arrays))
        got = got if isinstance(got, tuple | list) else (got,)
        out[name] = [to_numpy(g) for g in got]
    return out


def assert_same(results: dict[str, list[np.ndarray]], ulps: int = 0, rtol: float = 0) -> None:
    """Every namespace's results have NumPy's dtypes and shapes, and its values: bit for bit,
    within `ulps` where a transcendental function is in the chain, or to `rtol` where a sum is
    (each library adds in its own order)."""
    reference = results["numpy"]
    for name, got in results.items():
        assert len(got) == len(reference), name
        for g, r in zip(got, reference, strict=True):
            assert g.dtype == r.dtype, (name, g.dtype, r.dtype)
            assert g.shape == r.shape, (name, g.shape, r.shape)
            if ulps:
                np.testing.assert_array_max_ulp(g, r, maxulp=ulps)
            elif rtol:
                np.testing.assert_allclose(g, r, rtol=rtol, atol=rtol, err_msg=name)
            else:
                np.testing.assert_array_equal(g, r, err_msg=name)


@pytest.mark.parametrize(
    "fn", [standardize_columns, softmax, piecewise_polynomial, relu_in_place, polynomial_horner]
)
@settings(max_examples=25, deadline=None)
@given(x=matrices)
def test_float_functions_agree(fn: Callable[..., Any], x: np.ndarray) -> None:
    # softmax's exp is the C library's in fueltensor and NumPy's own loop in NumPy (on AVX-512
    # its SIMD exp): neither is correctly rounded, and they differ by an ULP on some inputs.
    # standardize_columns' mean and std sum in each library's order (fueltensor's the contract's
    # blocked one, NumPy's row after row): the same values to rounding, held where the columns
    # are not near-constant (there x - mean is all rounding, in any library).
    if fn is standardize_columns:
        assume(bool(np.all(np.std(x, axis=0) > 1e-6 * (1 + np.abs(x).max()))))
        assert_same(run_everywhere(fn, x), rtol=1e-9)
        return
    assert_same(run_everywhere(fn, x), ulps=4 if fn is softmax else 0)


@settings(max_examples=25, deadline=None)
@given(labels=hnp.arrays(np.int64, st.integers(1, 12), elements=st.integers(0, 4)))
def test_sorting_and_unique_agree(labels: np.ndarray) -> None:
    assert_same(run_everywhere(rank_and_count, labels))


@settings(max_examples=25, deadline=None)
@given(
    labels=hnp.arrays(np.int64, 5, elements=st.integers(0, 3)),
    points=hnp.arrays(np.float64, (5, 3), elements=finite),
)
def test_encoding_and_distances_agree(labels: np.ndarray, points: np.ndarray) -> None:
    assert_same(run_everywhere(one_hot_and_pairwise, labels, points))


def test_namespace_resolution() -> None:
    x = ft.asarray([1.0, 2.0])
    assert array_api_compat.array_namespace(x) is ft
    assert x.__array_namespace__() is ft
    assert x.__array_namespace__(api_version="2024.12") is ft
    assert ft.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="not supported"):
        x.__array_namespace__(api_version="1999.01")


def test_generic_code_on_float32_keeps_float32() -> None:
    x = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], dtype=np.float32)
    for fn in (standardize_columns, softmax, piecewise_polynomial):
        results = run_everywhere(fn, x)
        assert all(r[0].dtype == np.float32 for r in results.values()), fn.__name__
        if fn is softmax:  # exp is a contract operation: within an ULP, not NumPy's f32 loop
            ours = results.pop("fueltensor")[0]
            eps = np.finfo(np.float32).eps
            np.testing.assert_allclose(ours, results["numpy"][0], rtol=4 * eps, atol=0)
        assert_same(results)


def test_generic_code_finds_each_namespace_from_its_arrays() -> None:
    """What generic code does first: `array_namespace(x)` must lead back to x's library."""
    for xp in NAMESPACES.values():
        found = array_api_compat.array_namespace(xp.asarray([1.0, 2.0]))
        assert isinstance(found, ModuleType) and found is xp, (found, xp)
