"""`x ** k` with an integer k plans PowIElementwise; float exponents keep PowElementwise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _oracle import FORMATS, powi_expected
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft

DTYPES = {"f32": ft.float32, "f64": ft.float64, "bf16": ft.bfloat16, "f16": ft.float16}
SPELLINGS: dict[str, Callable[[Any, Any], Any]] = {
    "x ** k": lambda x, k: x**k,
    "ft.pow": ft.pow,
    "np.power": np.power,
}


def kinds(run: Callable[[], object]) -> list[str | None]:
    """The op kinds of the plans that ran."""
    with ft.trace() as plans:
        run()
    return [p.op_kind for p in plans]


def tensor(fmt: str, values: Any = (1.5, -2.0, 3.0, 0.25)) -> ft.FuelTensor:
    return ft.asarray(np.asarray(values, dtype=np.float64)).astype(DTYPES[fmt])


def assert_contract_bits(got: ft.FuelTensor, x: np.ndarray, k: int, fmt: str) -> None:
    f = FORMATS[fmt]
    want = powi_expected(np.array(x, order="C"), k, f)
    assert np.array_equal(np.asarray(got).view(f.uint), want)


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("k", [2, -1, 0, 3, np.int8(7), np.int32(-3), np.int64(31), np.uint8(2)])
def test_integer_exponents_plan_powi(fmt: str, spelling: str, k: Any) -> None:
    x = tensor(fmt)
    call = SPELLINGS[spelling]
    assert kinds(lambda: call(x, k)) == ["PowIElementwise"]
    assert_contract_bits(call(x, k), np.asarray(x), int(k), fmt)
    plan = ft.explain(ft.pow, x, k)
    assert plan.kernel is not None and plan.kernel.name == f"powi_{fmt}"
    assert f"exponent={int(k)}" in str(plan)


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("k", [2.0, -1.0, np.float32(2), True, np.bool_(True)])
def test_float_and_bool_exponents_keep_pow(fmt: str, k: Any) -> None:
    x = tensor(fmt)
    assert kinds(lambda: x**k) == ["PowElementwise"]
    assert ft.explain(ft.pow, x, k).op_kind == "PowElementwise"


@pytest.mark.parametrize("fmt", DTYPES)
def test_untraced_integer_powers_are_not_served_a_float_exponents_plan(fmt: str) -> None:
    """With `x ** 3.0`'s plan cached and nothing tracing, `x ** 3` and `x **= 3` still give the
    PowI loop's bits (powf's differ in some lanes): the compiled path serves them from their
    own integer-scalar form's plan."""
    values = np.random.default_rng(5).uniform(-4, 4, 4096)
    x = tensor(fmt, values)
    x**3.0
    assert_contract_bits(x**3, np.asarray(x), 3, fmt)
    y = tensor(fmt, values)
    y **= 3.0
    y = tensor(fmt, values)
    y **= 3
    assert_contract_bits(y, np.asarray(x), 3, fmt)


def test_a_numpy_array_base_is_adopted_and_planned_as_powi() -> None:
    x = np.array([1.5, -2.0, 3.0], np.float32)
    assert kinds(lambda: ft.pow(x, 3)) == ["PowIElementwise"]
    assert_contract_bits(ft.pow(x, 3), x, 3, "f32")


def test_a_tensor_exponent_and_a_scalar_base_keep_pow() -> None:
    x = tensor("f32")
    assert kinds(lambda: x ** ft.asarray(np.float32(2))) == ["PowElementwise"]
    assert kinds(lambda: 2**x) == ["PowElementwise"]


@pytest.mark.parametrize("k", [2**31, -(2**31) - 1, 2**40])
def test_exponents_outside_i32_plan_pow(k: int) -> None:
    """The contracts' i32 parameter refuses them, so the usual plan (powf) runs."""
    x = tensor("f64", (1.0, -1.0, 0.5, 2.0))
    assert kinds(lambda: x**k) == ["PowElementwise"]
    assert ft.explain(ft.pow, x, k).op_kind == "PowElementwise"
    tiny, huge = (0.0, np.inf) if k > 0 else (np.inf, 0.0)  # 0.5**k and 2**k, |k| > 2**31
    want = np.array([1.0, 1.0 if k % 2 == 0 else -1.0, tiny, huge])
    assert np.array_equal(np.asarray(x**k), want)


@pytest.mark.parametrize("k", [-(2**31), 2**31 - 1])
def test_i32_extremes_plan_powi(k: int) -> None:
    x = tensor("f32", (1.0, -1.0, 0.5, 1.0000001))
    assert kinds(lambda: x**k) == ["PowIElementwise"]
    assert_contract_bits(x**k, np.asarray(x), k, "f32")


def test_in_place_integer_power() -> None:
    x = tensor("f32")
    before = np.asarray(x).copy()
    assert kinds(lambda: x.__ipow__(3)) == ["PowIElementwise"]
    assert_contract_bits(x, before, 3, "f32")
    x **= 2.0
    assert np.array_equal(np.asarray(x), np.asarray(tensor("f32")) ** 6)


def test_integer_tensors() -> None:
    x = ft.asarray(np.array([1, 2, -3], np.int64))
    assert kinds(lambda: x**2) == ["PowElementwise"]
    assert ft.explain(ft.pow, x, 2).backend == "host"  # no PowI contract admits an integer
    assert np.array_equal(np.asarray(x**2), [1, 4, 9])
    with pytest.raises(ValueError, match="negative integer"):
        x**-1
    assert np.array_equal(np.asarray(x), [1, 2, -3])


def test_restricting_to_the_cpu_provider_keeps_powi() -> None:
    x = tensor("f16")
    with ft.use_backend("cpu"):
        assert kinds(lambda: x**3) == ["PowIElementwise"]


def test_compare_backends_reports_the_powi_kernel() -> None:
    x = tensor("f32")
    with ft.compare_backends() as report:
        x**3
    assert "powi_f32" in str(report)


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (1,)])
def test_zero_d_and_empty(fmt: str, shape: tuple[int, ...]) -> None:
    x = ft.asarray(np.full(shape, 1.5)).astype(DTYPES[fmt])
    got = x**3
    assert got.shape == shape and got.dtype == DTYPES[fmt]
    assert_contract_bits(got, np.asarray(x), 3, fmt)


VIEWS: dict[str, Callable[[ft.FuelTensor], ft.FuelTensor]] = {
    "strided": lambda t: t[::2],
    "offset": lambda t: t[1:],
    "flipped": lambda t: ft.flip(t, axis=0),
    "transposed": lambda t: t.T,
    "broadcast": lambda t: ft.broadcast_to(t[:1], (3, *t.shape[1:])),
}


@settings(max_examples=40, deadline=None)
@given(
    fmt=st.sampled_from(sorted(DTYPES)),
    view=st.sampled_from(sorted(VIEWS)),
    rows=st.integers(2, 6),
    cols=st.integers(1, 5),
    k=st.integers(-40, 40),
    seed=st.integers(0, 2**16),
)
def test_views_are_made_dense_then_powered(
    fmt: str, view: str, rows: int, cols: int, k: int, seed: int
) -> None:
    values = np.random.default_rng(seed).uniform(-3, 3, (rows, cols))
    x = VIEWS[view](tensor(fmt, values))
    plan = ft.explain(ft.pow, x, k)
    assert plan.op_kind == "PowIElementwise"
    dense = x.layout.contiguous and x.offset == 0
    assert any(s.kind == "Contiguize" for s in plan.steps) != dense
    assert_contract_bits(x**k, np.asarray(x), k, fmt)
