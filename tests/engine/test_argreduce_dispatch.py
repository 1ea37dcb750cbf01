"""ft.argmax and ft.argmin planned through their contracts (issue 48; engine/reduce.py,
contracts/fuel-*-argreduce.md): over F32, F64, BF16 and F16 a provider's kernel runs, never the
host, and every index is the one an independent reference written from the decided rule gives
(the first NaN, else the first element equal to the extreme, -0 equal to +0, counted along the
axis or over the flattened x): on every view (strided, flipped, offset, broadcast, transposed),
one axis (negative too) or None, with and without keepdims, a 0-d input, NaN payloads, ±0 and
±inf ties; the result int64. An empty reduction is refused naming the axis before any work;
integers and bool stay on the host with NumPy's indices; a tuple axis is refused."""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor import ops

FLOATS = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)
ARGMAX, ARGMIN = (ops.BY_KIND[k] for k in (ops.OpKind.ARGMAX, ops.OpKind.ARGMIN))
FUNCTIONS = {ARGMAX.name: ft.argmax, ARGMIN.name: ft.argmin}
OWN = ("fuel-cpu-backend", "fuel-reference-backend")


def first_extreme(values: list[float], largest: bool) -> int:
    """The rule, from its words: the first NaN's index, else the first index of an element
    equal to the extreme (Python floats compare -0 == +0)."""
    for i, v in enumerate(values):
        if math.isnan(v):
            return i
    extreme = max(values) if largest else min(values)
    return values.index(extreme)


def reference(x: np.ndarray, axis: int | None, keepdims: bool, largest: bool) -> np.ndarray:
    """The rule per output: along `axis`, or over the flattened x (row-major) for None."""
    if axis is None:
        flat = [float(v) for v in x.reshape(-1)]
        found = np.array(first_extreme(flat, largest), np.int64)
        return found.reshape((1,) * x.ndim) if keepdims else found
    moved = np.moveaxis(x, axis, -1)
    table = moved.reshape(-1, x.shape[axis])
    found = np.array([first_extreme([float(v) for v in r], largest) for r in table], np.int64)
    found = found.reshape(moved.shape[:-1])
    return np.expand_dims(found, axis) if keepdims else found


def check(name: str, view: np.ndarray, axis: int | None, keepdims: bool) -> None:
    """`name` of the tensor of `view` runs a contract (explain and the trace say which) and gives
    the reference's indices, int64, reshaped for keepdims."""
    fn, x = FUNCTIONS[name], ft.asarray(view)
    plan = ft.explain(fn, x, axis=axis, keepdims=keepdims)
    assert plan.kernel is not None and plan.kernel.op_kind == ops.BY_NAME[name].op_kind, plan
    with ft.trace() as plans:
        got = np.asarray(fn(x, axis=axis, keepdims=keepdims))
    assert [p.kernel.name for p in plans if p.kernel] == [plan.kernel.name]
    want = reference(np.asarray(view), axis, keepdims, name == ARGMAX.name)
    assert got.dtype == np.int64 and got.shape == want.shape, (got.shape, want.shape)
    assert np.array_equal(got, want), (name, axis, got, want)


def sample(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Few distinct values, so ties are common: ±0, ±1, ±inf, a subnormal, a NaN now and then
    (quiet and negative), of `dtype`."""
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, 1e-40, 2.0, -2.0])
    x = rng.choice(pool, shape).astype(dtype)
    x[rng.random(shape) < 0.02] = np.nan
    x[rng.random(shape) < 0.01] = -np.array(np.nan, dtype)
    return x


@pytest.mark.parametrize("backend", OWN)
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_axis_and_view_runs_a_contract_with_the_rules_index(
    backend: str, name: str, dtype: Any
) -> None:
    base = sample(dtype, (6, 5, 40), 1)
    clean = np.where(np.isnan(base.astype(np.float64)), np.array(0.5, dtype), base)
    views = [base, clean, clean[::2, :, ::3], clean[::-1, :, ::-1], clean[1:, 1:, 5:], clean.T]
    views.append(np.broadcast_to(clean[:1], (4, 5, 40)))
    with ft.use_backend(backend):
        for view in views:
            for axis in (None, 0, 1, 2, -1):
                for keepdims in (False, True):
                    check(name, view, axis, keepdims)
        scalar = np.asarray(base[0, 0, 0])
        check(name, scalar, None, False)
        check(name, scalar, None, True)


def test_nan_payloads_and_zero_ties_take_the_first() -> None:
    """A signalling NaN, a negative NaN: the first NaN whatever its payload; of -0 and +0 the
    first; of two infinities the first."""
    nan = np.array([0x7F800001, 0xFFC00000], np.uint32).view(np.float32)
    x = np.array([[1.0, 0, 3.0, 0], [-0.0, 0.0, -0.0, 0.0], [np.inf, 1, np.inf, -1]], np.float32)
    x[0, [1, 3]] = nan  # as bits: a cast would quiet the signalling one
    t = ft.asarray(x)
    assert np.asarray(t).view(np.uint32)[0, 1] == 0x7F800001
    assert np.asarray(ft.argmax(t, axis=1)).tolist() == [1, 0, 0]
    assert np.asarray(ft.argmin(t, axis=1)).tolist() == [1, 0, 3]
    assert np.asarray(ft.argmax(t)).tolist() == 1


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_an_empty_reduction_is_refused_naming_the_axis_before_any_work(dtype: Any) -> None:
    x = ft.asarray(np.zeros((0, 3), dtype))
    for fn in FUNCTIONS.values():
        with ft.trace() as plans, pytest.raises(ValueError, match="axis=0"):
            fn(x, axis=0)
        with pytest.raises(ValueError, match="axis=None"):
            fn(x)
        assert plans == []
        got = np.asarray(fn(x, axis=1))  # no output: nothing to refuse
        assert got.shape == (0,) and got.dtype == np.int64


@pytest.mark.parametrize(
    "x",
    [np.array([[3, 1, 3], [0, 7, 7]], np.int32), np.array([[True, False], [True, True]])],
    ids=["int32", "bool"],
)
def test_integers_and_bool_stay_on_the_host_with_numpys_indices(x: np.ndarray) -> None:
    t = ft.asarray(x)
    for name, fn in FUNCTIONS.items():
        numpy = getattr(np, name)
        assert ft.explain(fn, t, axis=1).kernel is None
        assert np.array_equal(np.asarray(fn(t, axis=1)), numpy(x, axis=1))
        assert np.array_equal(np.asarray(fn(t)), numpy(x))
        assert np.asarray(fn(t, axis=-1, keepdims=True)).shape == (2, 1)


def test_a_tuple_axis_is_refused() -> None:
    t = ft.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError, match="one axis"):
        ft.argmax(t, axis=(0, 1))  # type: ignore[arg-type]
    with pytest.raises(IndexError, match="2 dimensions"):
        ft.argmin(t, axis=2)


@settings(max_examples=50, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=0, max_size=3),
    data=st.data(),
    name=st.sampled_from(list(FUNCTIONS)),
    dtype=st.sampled_from(FLOATS),
)
def test_hypothesis_shapes_axes_and_steps(
    shape: list[int], data: st.DataObject, name: str, dtype: Any
) -> None:
    base = sample(dtype, tuple(n * 2 for n in shape), data.draw(st.integers(0, 99)))
    steps = data.draw(
        st.lists(st.sampled_from([1, 2, -1, -2]), min_size=len(shape), max_size=len(shape))
    )
    view = base[tuple(slice(None, None, s) for s in steps)]
    if shape and data.draw(st.booleans()):
        view = np.transpose(view, data.draw(st.permutations(range(len(shape)))))
    axis = (
        data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1))) if shape else None
    )
    check(name, view, axis, data.draw(st.booleans()))


def test_compare_backends_compares_the_indices() -> None:
    """compare_backends around argmax and argmin (along an axis, and over everything: a 0-d
    result) compares the CPU and the oracle index for index: int64 results are exact or wrong,
    as a comparison's bools are (fueltensor.testing's EXACT_KINDS)."""
    x = ft.asarray(sample(np.float32, (4, 50), 7))
    with ft.compare_backends() as reports:
        ft.argmax(x, axis=1)
        ft.argmin(x, axis=0, keepdims=True)
        ft.argmax(x)
    assert [(r.op, r.shape) for r in reports] == [
        (f"{ARGMAX.name} over axes (1,)", (4,)),
        (f"{ARGMIN.name} over axes (0,)", (50,)),
        (f"{ARGMAX.name} over axes (0, 1)", ()),
    ]
    assert all(r.compared and r.equal == r.count and r.max_ulp == 0 for r in reports)
    got, want = np.array([3, 1, 4], np.int64), np.array([3, 2, 4], np.int64)
    assert ft.testing.bits(got).tolist() == [3, 1, 4]
    measured = ft.testing.errors(got, want)
    assert measured.ulp.tolist() == [0.0, np.inf, 0.0]
