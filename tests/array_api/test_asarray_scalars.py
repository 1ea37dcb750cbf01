"""`asarray` of a Python bool, int or float (the 0-d tensors scipy makes of `n > 1` on every
statistic) takes a short path: it gives what the general path (`from_python`) gives, which is
NumPy's own 0-d array, bit for bit, and the same errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.pydata import from_python
from fueltensor.core.tensor import FuelTensor

SCALARS = st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
EDGES = [True, False, 0, -1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**64, 0.0, -0.0, 1e308]


class Subclassed(float):
    """A float subclass: not the exact type the short path takes."""


def general(value: Any) -> tuple[str, Any]:
    """The general path's outcome: ("ok", (dtype, shape, bytes)) or ("error", (type, text))."""
    try:
        array = from_python(value, None)
        t = FuelTensor._from_dense(array, _dtypes.from_numpy(array.dtype))
    except Exception as e:
        return "error", (type(e), str(e))
    return "ok", (t.dtype, t.shape, np.asarray(t).tobytes())


def outcome(value: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        t = ft.asarray(value, **kwargs)
    except Exception as e:
        return "error", (type(e), str(e))
    return "ok", (t.dtype, t.shape, np.asarray(t).tobytes())


@given(SCALARS)
def test_a_python_scalar_is_the_general_paths_tensor(value: Any) -> None:
    want = general(value)
    for kwargs in ({}, {"copy": True}, {"device": "cpu"}):
        assert outcome(value, **kwargs) == want
    if want[0] == "ok":  # and NumPy's 0-d array
        ref = np.asarray(value)
        assert want[1] == (_dtypes.from_numpy(ref.dtype), (), ref.tobytes())


@pytest.mark.parametrize("value", [*EDGES, float("nan"), Subclassed(1.5)], ids=repr)
def test_edges_and_subclasses_are_the_general_paths(value: Any) -> None:
    assert outcome(value) == general(value)


def test_the_refusals_come_first() -> None:
    with pytest.raises(ValueError, match="needs a copy, but copy=False"):
        ft.asarray(1.5, copy=False)
    with pytest.raises(ValueError, match="device 'gpu' is not available"):
        ft.asarray(True, device="gpu")
    assert ft.asarray(2, dtype=ft.float32).dtype is ft.float32  # a dtype: the general path
    first, second = ft.asarray(2.5), ft.asarray(2.5)
    first[()] = 1.0  # a fresh tensor each call, never a shared one
    assert float(second) == 2.5
