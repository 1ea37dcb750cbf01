"""NumPy calls on FuelTensors stay on fueltensor: the eight contract ufuncs go through the
contracts, everything else runs on the host and comes back as FuelTensors (issue 13)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fueltensor as ft

A = np.array([[1.5, -2.0, 3.25], [0.5, 4.0, -1.0]])
B = np.array([[2.0, 0.5, -1.5], [3.0, -2.5, 1.0]])


@pytest.mark.parametrize(
    "ufunc",
    [np.add, np.subtract, np.multiply, np.divide, np.remainder, np.power, np.maximum, np.minimum],
)
def test_contract_ufuncs_run_the_kernel(ufunc: np.ufunc) -> None:
    x, y = ft.asarray(A), ft.asarray(B)
    with ft.trace() as plans:
        got = ufunc(x, y)
        mixed = ufunc(A, y)  # ndarray first: FuelTensor still wins
    assert isinstance(got, ft.FuelTensor) and isinstance(mixed, ft.FuelTensor)
    assert all(p.backend != "host" for p in plans), plans
    with np.errstate(all="ignore"):
        want = ufunc(A, B)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(mixed), want, rtol=1e-12)


def test_ndarray_operator_with_a_tensor_gives_a_tensor() -> None:
    y = ft.asarray(B)
    for got, want in ((A + y, A + B), (A * y, A * B), (A - y, A - B)):
        assert isinstance(got, ft.FuelTensor)
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize(
    ("call", "label"),
    [
        (lambda x: np.tan(x), "numpy.tan"),  # not a contract operation (np.sin is)
        (lambda x: np.add.reduce(x, axis=0), "numpy.add.reduce"),
        (lambda x: np.multiply.accumulate(x, axis=1), "numpy.multiply.accumulate"),
        (lambda x: np.isnan(x), "numpy.isnan"),
        (lambda x: np.mean(x, axis=1), "numpy.mean"),
        (lambda x: np.median(x), "numpy.median"),
        (lambda x: np.cumsum(x), "numpy.cumsum"),
        (lambda x: np.nanmax(x, axis=0), "numpy.nanmax"),
    ],
)
def test_other_numpy_calls_run_on_the_host_and_return_tensors(call: Any, label: str) -> None:
    with ft.trace() as plans:
        got = call(ft.asarray(A))
    assert isinstance(got, ft.FuelTensor)
    np.testing.assert_allclose(np.asarray(got), call(A))
    assert plans and plans[-1].backend == "host" and plans[-1].op == label


def test_out_writes_into_the_tensor_given() -> None:
    x, y = ft.asarray(A), ft.asarray(B)
    out = ft.zeros(A.shape)
    assert np.add(x, y, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), A + B)
    with pytest.raises(ValueError, match=r"stride-0|read-only"):  # broadcast views are read-only
        np.add(x, y, out=ft.broadcast_to(ft.zeros(3), A.shape))


def test_numpy_functions_map_to_fueltensors_own() -> None:
    x, y = ft.asarray(A), ft.asarray(B)
    with ft.trace() as plans:
        cat = np.concatenate([x, y], axis=0)
        st = np.stack([x, y])
        tr = np.transpose(x)
        wh = np.where(x > y, x, y)
    assert [p.op for p in plans if p.op in ("concat", "stack", "where")] == [
        "concat",
        "stack",
        "where",
    ]
    for got, want in (
        (cat, np.concatenate([A, B])),
        (st, np.stack([A, B])),
        (tr, A.T),
        (wh, np.where(A > B, A, B)),
    ):
        assert isinstance(got, ft.FuelTensor)
        np.testing.assert_array_equal(np.asarray(got), want)


def test_asking_for_numpy_still_gives_numpy() -> None:
    x = ft.asarray(A)
    assert type(np.asarray(x)) is np.ndarray and type(np.array(x)) is np.ndarray
    assert np.asarray(x).shape == A.shape
