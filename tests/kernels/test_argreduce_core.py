"""argmax and argmin (issue 48): the compiled core (`_native.argreduce`, argreduce.c, and the
REDUCE capsule's dispatch to it) and fuel-cpu-backend's pure-NumPy body (np.argmax and np.argmin
over the reduced rows, `kernels.reductions.numpy_index`), each index for index against an
independent reference written from the contracts' rule (contracts/fuel-cpu-backend-argreduce.md):
in row-major order of the reduced axes, the index of the first NaN if there is one, else of the
first element equal to the extreme, -0 equal to +0. Inputs: NaNs of every payload (quiet,
signalling, negative) at the first, middle and last positions, ±0 ties, ±inf, subnormals,
all-equal rows, strided, offset, flipped, transposed and broadcast views, 0-d inputs, several
axes and none; the same indices on 1, 2, 3 and 7 threads; refusals; hypothesis over views."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor import ops
from fueltensor.kernels import reductions, threads
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

Array = np.ndarray[Any, Any]
CODE = {row.op_kind: i for i, row in enumerate(ops.REDUCTION_OPS)}
ARGMAX, ARGMIN = CODE[ops.OpKind.ARGMAX], CODE[ops.OpKind.ARGMIN]
DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(ml_dtypes.bfloat16),
          np.dtype(np.float16))  # fmt: skip
UNSIGNED = {2: np.uint16, 4: np.uint32, 8: np.uint64}
compiled = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="the argreduce core is compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)
_native: Any = NATIVE


def nans(dtype: np.dtype[Any]) -> list[Any]:
    """NaNs of `dtype` by their bits: quiet, signalling (payload 1), negative quiet, and one
    with the top payload bit clear and another set."""
    size = dtype.itemsize
    mantissa = {2: 7 if dtype == ml_dtypes.bfloat16 else 10, 4: 23, 8: 52}[size]
    exponent = ((1 << (8 * size - 1)) - 1) ^ ((1 << mantissa) - 1)
    quiet = 1 << (mantissa - 1)
    patterns = [exponent | quiet, exponent | 1, (1 << (8 * size - 1)) | exponent | quiet,
                exponent | quiet | 3]  # fmt: skip
    return [np.array(p, UNSIGNED[size]).view(dtype)[()] for p in patterns]


def adversarial(dtype: np.dtype[Any], rng: np.random.Generator, m: int = 37) -> Array:
    """Rows of m values: random; ties of the extreme; ±0 ties; ±inf; subnormals; all equal;
    NaNs at the first, middle and last positions and two NaNs of other payloads."""
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    out = [rng.uniform(-1, 1, m), np.full(m, 2.5), np.zeros(m), np.full(m, -0.0)]
    ties = rng.uniform(-1, 1, m)
    ties[[3, 9, 30]], ties[[5, 20]] = 7.0, -7.0
    zeros = rng.choice([0.0, -0.0], m)
    inf = rng.uniform(-1, 1, m)
    inf[[2, 11]], inf[[4, 17]] = np.inf, -np.inf
    subnormal = rng.choice([tiny, -tiny, 2 * tiny, 0.0, -0.0], m)
    out += [ties, zeros, np.concatenate([[-0.0, 0.0], zeros[2:]]), inf, subnormal]
    table = np.array(out).astype(dtype)
    nan_rows = []
    for where in ([0], [m // 2], [m - 1], [6, 29]):
        for nan in nans(dtype)[:2] if len(where) == 1 else nans(dtype)[2:]:
            row = table[0].copy()
            row[where] = nan
            nan_rows.append(row)
    return np.concatenate([table, np.array(nan_rows, dtype)])


def reference(values: Array, largest: bool) -> int:
    """The contracts' rule, from its words: the first NaN's index, else the first index of an
    element equal to the extreme (-0 == +0), every value compared exactly as a Python float."""
    wide = [float(v) for v in values]
    for i, v in enumerate(wide):
        if math.isnan(v):
            return i
    extreme = max(wide) if largest else min(wide)
    return next(i for i, v in enumerate(wide) if v == extreme)


def expected(x: Array, axes: tuple[int, ...], largest: bool) -> Array:
    """The reference per output, of the reduced shape (the rows in row-major order)."""
    kept = [k for k in range(x.ndim) if k not in axes]
    moved = np.transpose(x, [*kept, *axes])
    table = np.asarray(moved).reshape(math.prod(x.shape[k] for k in kept), -1)
    shape = tuple(x.shape[k] for k in kept)
    return np.array([reference(r, largest) for r in table], np.int64).reshape(shape)


def native(op: int, x: Array, axes: tuple[int, ...]) -> Array:
    """`_native.argreduce` into a fresh int64 output of the reduced shape (garbage-filled)."""
    out = np.full(tuple(n for k, n in enumerate(x.shape) if k not in axes), -7, np.int64)
    _native.argreduce(op, x, out, axes)
    return out


def pure(op: int, x: Array, axes: tuple[int, ...]) -> Array:
    """fuel-cpu-backend's pure-NumPy body into a fresh int64 output of the reduced shape."""
    out = np.full(tuple(n for k, n in enumerate(x.shape) if k not in axes), -7, np.int64)
    reductions.numpy_index(op == ARGMAX)(x, axes, out)
    return out


def views(x: Array) -> Iterator[tuple[str, Array]]:
    """x itself and the same values strided, offset, flipped and transposed twice."""
    yield "dense", x
    wide = np.zeros((x.shape[0] * 2 + 1, x.shape[1] * 3), x.dtype)
    wide[1::2, ::3] = x
    yield "strided, offset", wide[1::2, ::3]
    yield "flipped", np.ascontiguousarray(x[::-1, ::-1])[::-1, ::-1]
    yield "column-major", np.asfortranarray(x)


IMPLEMENTATIONS = [
    pytest.param(native, marks=compiled, id="compiled"),
    pytest.param(pure, id="pure"),
]


@pytest.mark.parametrize("find", IMPLEMENTATIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", [ARGMAX, ARGMIN], ids=["argmax", "argmin"])
def test_the_adversarial_rows_give_the_rules_index(find: Any, dtype: Any, op: int) -> None:
    """Every adversarial row, along the last axis and (transposed) the first, on every view."""
    x = adversarial(dtype, np.random.default_rng(op))
    largest = op == ARGMAX
    for name, view in views(x):
        assert np.array_equal(find(op, view, (1,)), expected(x, (1,), largest)), name
        assert np.array_equal(find(op, view.T, (0,)), expected(x, (1,), largest)), name
        assert np.array_equal(find(op, view, (0, 1)), expected(x, (0, 1), largest)), name
        assert np.array_equal(find(op, view, (0,)), expected(x, (0,), largest)), name


@pytest.mark.parametrize("find", IMPLEMENTATIONS)
def test_broadcast_zero_d_and_no_axes(find: Any) -> None:
    """A broadcast view indexes as its dense copy (all equal along the zero stride: index 0); a
    0-d input and axes () have index 0 everywhere; several axes count row-major."""
    row = np.array([1.0, -0.0, 9.0, 0.0, 9.0], np.float32)
    wide = np.broadcast_to(row, (4, 5))
    assert wide.strides[0] == 0
    for op in (ARGMAX, ARGMIN):
        for axes in ((0,), (1,), (0, 1)):
            assert np.array_equal(find(op, wide, axes), find(op, np.ascontiguousarray(wide), axes))
        assert find(op, np.float16(3.0).reshape(()), ()).tolist() == 0
        assert find(op, row, ()).tolist() == [0] * 5
    x = np.zeros((3, 4, 5), np.float64)
    x[1, 2, 3], x[2, 0, 1] = 5.0, -5.0
    assert find(ARGMAX, x, (0, 2)).tolist() == [0, 0, 1 * 5 + 3, 0]
    assert find(ARGMIN, x, (0, 1, 2)).tolist() == 2 * 20 + 0 * 5 + 1


@compiled
@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_indices_are_the_same_on_1_2_3_and_7_threads(count: int) -> None:
    """10^5 outputs of 12 and 300 outputs of 2000 (split from 1024 elements so they split at
    all), a NaN or a tie placed in some, on `count` threads as on a machine of that many cores:
    the reference's indices, so one thread's."""
    pretended = threads.pretend_cores(count)
    _native.set_parallel_from(1024)
    try:
        rng = np.random.default_rng(count)
        for shape in ((100_000, 12), (300, 2000)):
            x = rng.integers(-3, 4, shape).astype(np.float32)  # many ties
            x[::7, shape[1] // 2] = np.nan
            with threads.running_on(count):
                assert _native.threads(x.size, _native.REDUCE_OP, 0) == count
                for op in (ARGMAX, ARGMIN):
                    got = native(op, x, (1,))
                    assert np.array_equal(got[:400], expected(x[:400], (1,), op == ARGMAX))
                    assert np.array_equal(got, pure(op, x, (1,))), (shape, op)
    finally:
        _native.set_parallel_from(0)
        threads.pretend_cores(pretended)


@compiled
def test_refusals_name_what_is_wrong() -> None:
    """An empty reduction, an out not int64, an out overlapping x, an op not argmax or argmin,
    bad axes: each refused before anything is written."""
    x = np.ones((3, 4), np.float32)
    out = np.zeros(3, np.int64)
    wrong = [
        ((ARGMAX, np.ones((3, 0), np.float32), out, (1,)), ValueError, "empty set"),
        ((ARGMAX, x, np.zeros(3, np.float32), (1,)), TypeError, "int64"),
        ((CODE[ops.OpKind.SUM], x, out, (1,)), ValueError, "argmax"),
        ((ARGMIN, x, out, (1, 1)), ValueError, "sorted, distinct"),
        ((ARGMIN, x, out, (5,)), ValueError, "sorted, distinct"),
        ((ARGMIN, x, np.zeros(4, np.int64), (1,)), ValueError, "shape"),
        ((ARGMIN, np.ones((3, 4), np.int32), out, (1,)), TypeError, "float32"),
        ((ARGMIN, x, out), TypeError, "4 arguments"),
    ]
    for args, error, words in wrong:
        with pytest.raises(error, match=words):
            _native.argreduce(*args)
    with pytest.raises(ValueError, match="out must be int64"):  # the capsule hands it over
        _native.reduce(ARGMAX, x, np.zeros(3, np.float32), (1,), "float32", 0, 1)
    shared = np.zeros(8, np.int64)
    with pytest.raises(ValueError, match="overlaps"):
        _native.argreduce(ARGMAX, shared.view(np.float64), shared[:1].reshape(()), (0,))
    assert native(ARGMAX, np.ones((0, 4), np.float32), (1,)).shape == (0,)  # no output: no work


@st.composite
def drawn(draw: st.DrawFn) -> tuple[Array, tuple[int, ...]]:
    """A random view (shape, flips, steps, a transpose) of few distinct values (ties, ±0, NaN
    sometimes) and sorted axes of it, none empty."""
    ndim = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim))
    steps = draw(st.lists(st.sampled_from([1, 2, -1, -2]), min_size=ndim, max_size=ndim))
    dtype = draw(st.sampled_from(DTYPES))
    full = tuple(n * abs(s) for n, s in zip(shape, steps, strict=True))
    pool = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    base = rng.choice(pool[: draw(st.integers(2, 8))], full).astype(dtype)
    view = base[tuple(slice(None, None, s) for s in steps)]
    view = np.transpose(view, draw(st.permutations(range(ndim)))) if ndim else view
    axes = tuple(sorted(draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim))))
    return view, axes if ndim else ()


@settings(max_examples=80, deadline=None)
@given(case=drawn(), op=st.sampled_from([ARGMAX, ARGMIN]))
def test_any_view_and_axes_give_the_rules_index(
    case: tuple[Array, tuple[int, ...]], op: int
) -> None:
    """Both bodies (the compiled one where built), any layout over any axes: the reference's."""
    x, axes = case
    want = expected(x, axes, op == ARGMAX)
    assert np.array_equal(pure(op, x, axes), want)
    if IMPLEMENTATION == "native":
        assert np.array_equal(native(op, x, axes), want)
