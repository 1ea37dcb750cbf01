"""ft.sum, ft.prod, ft.max and ft.min planned through the reduction contracts (issue 48;
engine/reduce.py): over F32, F64, BF16 and F16 a provider's kernel runs, never the host, and its
bits are the declared order's (judge.orders.simulate, read from the chosen contract's
declaration) or, for the oracle, the exact sum rounded once (kernels.exact_sums) and the exact
product rounded once (`exact_product` here, from the formula: Fractions, the nearest of the
format's neighbours, ties to even), and max/min the selection with the first zero of a tie;
on every view of the input (strided, flipped, offset, broadcast, 0-d, empty), with and without
keepdims, over every axis combination; a product's special values (NaN, inf·0, signed zeros,
overflow and underflow, subnormals). Integers, bool, complex and a `dtype=` other than x's stay
on the host with NumPy's results; axes are checked before any work."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _nearest import product_bits
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor import ops
from fueltensor.kernels.exact_sums import exact_sum, rows
from fueltensor.tools.judge.orders import declared, selected, simulate

FLOATS = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)
SUM, PROD, MAX, MIN = (
    ops.BY_KIND[k] for k in (ops.OpKind.SUM, ops.OpKind.PROD, ops.OpKind.MAX, ops.OpKind.MIN)
)
OWN = ("fuel-cpu-backend", "fuel-reference-backend")
FUNCTIONS = {SUM.name: ft.sum, PROD.name: ft.prod, MAX.name: ft.max, MIN.name: ft.min}


def exact_product(table: np.ndarray) -> np.ndarray:
    """Each row's product from the formula (`_nearest.product_bits`), in the table's dtype."""
    found = np.array([product_bits(row) for row in table], f"u{table.dtype.itemsize}")
    return found.view(table.dtype)


def expected(name: str, x: np.ndarray, axes: tuple[int, ...], plan: Any) -> np.ndarray:
    """What the chosen contract promises for `name` of x over `axes`, bit for bit, in the
    reduced shape: the declared order (or the exact sum where it declares `exact`), else the
    selection with the declared zero tie."""
    d = declared(plan.kernel)
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    out = np.empty(shape, x.dtype)
    if name in (MAX.name, MIN.name):
        tie = "lhs" if isinstance(d, str) else d.zero_tie  # max/min declare no accumulator
        table = rows(x, axes)
        out.reshape(-1)[...] = selected(table, x.dtype, name == MAX.name, tie)
    elif not isinstance(d, str) and d.fixes_bits:
        out.reshape(-1)[...] = simulate(rows(x, axes), d, x.dtype, product=name == PROD.name)
    elif name == PROD.name:
        out.reshape(-1)[...] = exact_product(rows(x, axes))
    else:
        exact_sum(x, axes, out)
    return out


def check(name: str, base: np.ndarray, view: np.ndarray, axis: Any, keepdims: bool) -> None:
    """`name` of the tensor of `view` runs a contract (explain and the trace say which) and
    gives the expected bits, reshaped for keepdims."""
    fn = FUNCTIONS[name]
    x = ft.asarray(base)
    if view is not base:
        x = ft.asarray(view)
    plan = ft.explain(fn, x, axis=axis, keepdims=keepdims)
    assert plan.kernel is not None, plan
    with ft.trace() as plans:
        got = np.asarray(fn(x, axis=axis, keepdims=keepdims))
    assert [p.kernel.name for p in plans if p.kernel] == [plan.kernel.name]
    axes = (
        tuple(range(view.ndim))
        if axis is None
        else tuple(sorted(np.atleast_1d(axis) % max(view.ndim, 1)))
    )
    want = expected(name, np.asarray(view), axes, plan)
    if keepdims:
        want = want.reshape([1 if i in axes else n for i, n in enumerate(view.shape)])
    assert got.dtype == view.dtype and got.shape == want.shape
    bits = f"u{got.dtype.itemsize}"
    same = np.atleast_1d(got).view(bits) == np.atleast_1d(want).view(bits)
    nan = np.isnan(np.atleast_1d(got).astype(np.float64)) & np.isnan(
        np.atleast_1d(want).astype(np.float64)
    )
    assert np.all(same | nan), (name, got, want)


def sample(dtype: Any, shape: tuple[int, ...], seed: int, name: str = "") -> np.ndarray:
    """Values of every sign and a spread of magnitudes, zeros of both signs among them; for a
    product, values near 1 of both signs (long rows neither overflow nor underflow), one in
    twenty scaled by 2^±12 (some rows leave a narrow format), a few zeros of both signs."""
    rng = np.random.default_rng(seed)
    if name == PROD.name:
        x = np.array((1 + rng.uniform(-1 / 64, 1 / 64, shape)) * rng.choice([-1.0, 1.0], shape))
        x *= np.where(rng.random(shape) < 0.05, 2.0 ** rng.choice([-12, 12], shape), 1.0)
        x[rng.random(shape) < 0.002] = -0.0
        x[rng.random(shape) < 0.002] = 0.0
        return x.astype(dtype)
    x = np.asarray(rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, shape))
    x[rng.random(shape) < 0.05] = -0.0
    return x.astype(dtype)


@pytest.mark.parametrize("backend", OWN)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_axis_combination_runs_a_contract_with_its_bits(
    backend: str, name: str, dtype: Any
) -> None:
    base = sample(dtype, (3, 4, 300), 1, name)
    with ft.use_backend(backend):
        for r in range(4):
            for axes in combinations(range(3), r):
                for keepdims in (False, True):
                    check(name, base, base, axes, keepdims)
        check(name, base, base, None, False)
        check(name, base, base, -1, True)


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_view_gives_the_contract_bits(name: str, dtype: Any) -> None:
    base = sample(dtype, (6, 520), 2, name)
    views = [
        base[::2, ::3],  # strided
        base[::-1, ::-1],  # flipped
        base[1:, 5:],  # offset
        np.broadcast_to(base[:1], (4, 520)),  # broadcast
        base.T,  # transposed
    ]
    for view in views:
        for axis in (None, 0, 1):
            check(name, base, view, axis, False)
    scalar = np.asarray(base[0, 0])
    check(name, scalar, scalar, None, False)
    check(name, scalar, scalar, (), True)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_empty_sums_are_zero_and_empty_extrema_are_refused_naming_the_axis(dtype: Any) -> None:
    x = ft.asarray(np.zeros((0, 3), dtype))
    got = np.asarray(ft.sum(x, axis=0))
    assert got.dtype == np.dtype(dtype) and not np.signbit(got).any() and (got == 0).all()
    assert ft.explain(ft.sum, x, axis=0).kernel is not None
    for fn in (ft.max, ft.min):
        with pytest.raises(ValueError, match="axis=0"):
            fn(x, axis=0)
    assert np.asarray(ft.max(x, axis=1)).shape == (0,)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
    data=st.data(),
    name=st.sampled_from(list(FUNCTIONS)),
    dtype=st.sampled_from(FLOATS),
)
def test_hypothesis_shapes_axes_and_steps(
    shape: list[int], data: st.DataObject, name: str, dtype: Any
) -> None:
    base = sample(dtype, tuple(n * 2 for n in shape), 3, name)
    steps = data.draw(
        st.lists(st.sampled_from([1, 2, -1, -2]), min_size=len(shape), max_size=len(shape))
    )
    view = base[tuple(slice(None, None, s) for s in steps)]
    axes = data.draw(st.sets(st.integers(0, max(len(shape) - 1, 0)), max_size=len(shape)))
    axis = tuple(sorted(axes)) if shape else None
    if name in (MAX.name, MIN.name) and any(view.shape[i] == 0 for i in (axis or range(view.ndim))):
        return  # refused: tested above
    check(name, base, view, axis, data.draw(st.booleans()))


@pytest.mark.parametrize(
    "x",
    [
        np.arange(12, dtype=np.int32).reshape(3, 4),
        np.array([[True, False], [True, True]]),
        np.array([1 + 2j, 3 - 1j], np.complex64),
        np.arange(6, dtype=np.uint8),
    ],
    ids=["int32", "bool", "complex64", "uint8"],
)
def test_integers_bool_and_complex_stay_on_the_host_with_numpys_results(x: np.ndarray) -> None:
    t = ft.asarray(x)
    assert ft.explain(ft.sum, t).kernel is None
    np.testing.assert_array_equal(np.asarray(ft.sum(t, axis=0)), np.sum(x, axis=0))
    if x.dtype.kind != "c":
        np.testing.assert_array_equal(np.asarray(ft.max(t)), np.max(x))
        assert ft.explain(ft.max, t).kernel is None


def test_a_dtype_other_than_xs_runs_on_the_host() -> None:
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    t = ft.asarray(x)
    assert ft.explain(ft.sum, t, dtype=ft.float64).kernel is None
    np.testing.assert_array_equal(
        np.asarray(ft.sum(t, dtype=ft.float64)), np.sum(x, dtype=np.float64)
    )
    assert ft.explain(ft.sum, t, dtype=ft.float32).kernel is not None


def test_bad_axes_are_refused_naming_the_rank_before_any_work() -> None:
    t = ft.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(IndexError, match="2 dimensions") as info:
        ft.sum(t, axis=2)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match="twice"):
        ft.max(t, axis=(1, -1))
    with ft.trace() as plans, pytest.raises(ValueError):
        ft.min(t, axis=(0, 0))
    assert plans == []


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_a_column_step_of_two_gives_the_contract_bits(dtype: Any) -> None:
    """Every other column of a half type summed down its rows: the compiled core once misread
    this view of a 2-byte format (1.0 + -1.0 ... came out 3.296e4 for float16); the bits are the
    declared order's."""
    base = np.array([[1e2, 1e2, -1, 7], [-np.inf, 1.5, np.inf, -1], [-np.inf, -np.inf, 1e-3, 0]])
    base = base.astype(dtype)
    check(SUM.name, base, base[:, ::2], 0, False)
    rng = np.random.default_rng(5)
    wide = (rng.standard_normal((10, 8)) * 100).astype(dtype)
    check(SUM.name, wide, wide[::-1, ::2], 0, False)


@pytest.mark.parametrize("backend", OWN)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_products_of_special_values_give_the_contract_bits(backend: str, dtype: Any) -> None:
    """NaN, inf·0, infinities and zeros of both signs, an overflow (of the result, and of a
    partial product only), an underflow to a subnormal and to zero, subnormal elements; and the
    empty product, +1."""
    f = ml_dtypes.finfo(dtype)
    big, tiny, least = float(f.max), float(f.smallest_normal), float(f.smallest_subnormal)
    nan, inf = np.nan, np.inf
    table = [
        [nan, 1, 2, 3], [2, inf, 0, 1], [-inf, 2, 3, 1], [2, -inf, -0.0, 1], [-0.0, 2, -3, 1],
        [-0.0, -0.0, -0.0, 1], [0.0, -0.0, 1, 1], [big, big, 0.5, 0.25], [big, 2, 0.5, 0.5],
        [least, 0.5, 3, 1], [least, least, 1, 1], [tiny, 0.75, 1, -1], [tiny, 2**-3, 2**3, 1],
    ]  # fmt: skip
    base = np.array(table).astype(dtype)
    with ft.use_backend(backend):
        for view in (base, base[::-1, ::-1], base.T):
            check(PROD.name, base, view, 1 if view is not base.T else 0, False)
        empty = ft.asarray(np.zeros((0, 3), dtype))
        got = np.asarray(ft.prod(empty, axis=0))
        assert ft.explain(ft.prod, empty, axis=0).kernel is not None
    assert got.dtype == np.dtype(dtype) and (got.astype(np.float64) == 1).all()
    assert not np.signbit(got.astype(np.float64)).any()


def test_integer_products_stay_on_the_host_wrapping_as_numpy() -> None:
    x = np.array([[2**40, 2**40], [3, -5]], np.int64)
    t = ft.asarray(x)
    assert ft.explain(ft.prod, t).kernel is None
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(np.asarray(ft.prod(t, axis=1)), np.prod(x, axis=1))
