"""The reduction call cache (`engine.reduce.Call`): a call met before under a policy runs the
plan the registry chose for it, recorded in the trace each time; another policy, layout, axis
or keepdims is its own call; an axis that only equals a cached one (1.0, a list) is still
refused or planned as the first time."""

from __future__ import annotations

import numpy as np
import pytest

import fueltensor as ft

REFERENCE = "fuel-reference-backend"


def test_a_repeated_call_runs_and_records_the_registrys_plan_each_time() -> None:
    x = ft.asarray(np.array([1.0, 2.0, 3.0], np.float32))
    for fn in (ft.sum, ft.prod, ft.max, ft.min):
        chosen = ft.explain(fn, x)
        with ft.trace() as plans:
            got = [np.asarray(fn(x)) for _ in range(3)]
        assert [p.kernel_name for p in plans] == [chosen.kernel_name] * 3
        assert all(g.shape == () and g == got[0] for g in got)


def test_a_policy_entered_after_a_cached_call_is_respected() -> None:
    x = ft.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    ft.sum(x, axis=1)
    with ft.use_backend(REFERENCE), ft.trace() as plans:
        ft.sum(x, axis=1)
        ft.sum(x, axis=1)
    assert [p.provider for p in plans] == [REFERENCE, REFERENCE]
    with ft.trace() as plans:
        ft.sum(x, axis=1)
    assert plans[0].provider == ft.explain(ft.sum, x, axis=1).provider


def test_keepdims_axes_and_layouts_are_calls_of_their_own() -> None:
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    x = ft.asarray(a)
    for _ in range(2):
        assert np.asarray(ft.sum(x, axis=0, keepdims=True)).shape == (1, 4)
        assert np.asarray(ft.sum(x, axis=0)).shape == (4,)
        np.testing.assert_array_equal(np.asarray(ft.max(x, axis=(1,))), a.max(axis=1))
        np.testing.assert_array_equal(np.asarray(ft.max(x[:, ::2], axis=1)), a[:, ::2].max(1))


def test_an_axis_equal_to_a_cached_one_is_still_checked() -> None:
    x = ft.asarray(np.ones((2, 3), np.float32))
    ft.sum(x, axis=1)
    ft.sum(x, axis=(1,))
    with pytest.raises(TypeError):
        ft.sum(x, axis=1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ft.sum(x, axis=(1.0,))  # type: ignore[arg-type]
    np.testing.assert_array_equal(np.asarray(ft.sum(x, axis=[1])), [3.0, 3.0])  # type: ignore[arg-type]
    for _ in range(2):
        with pytest.raises(IndexError, match="2 dimensions"):
            ft.sum(x, axis=2)
        with ft.trace() as plans, pytest.raises(ValueError, match="axis=0"):
            ft.max(ft.asarray(np.ones((0, 3), np.float32)), axis=0)
        assert plans == []
