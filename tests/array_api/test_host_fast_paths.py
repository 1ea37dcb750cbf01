"""The host functions' fast paths (issue 12) keep NumPy's answer on every layout.

Each host function hands NumPy the tensor's own strided view, so its reference here is NumPy on
an independent twin: `as_strided` over the same storage values with the same shape, strides and
offset (strided, offset, flipped and stride-0 views, 0-d and empty ones included). Results must
agree in dtype, shape and bits, come back dense and row-major, and let no warning escape
(pytest turns warnings into errors); `trace` still records each call as a host operation.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fueltensor as ft
from fueltensor.core.layout import as_shape
from fueltensor.engine.reduce import normalised
from fueltensor.kernels.exact_sums import rows
from fueltensor.ops import PLANNED_REDUCTIONS
from fueltensor.tools.judge.orders import declared, selected, simulate

VIEWS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DTYPES = ["bool", "int32", "uint8", "float16", "bfloat16", "float32", "float64", "complex64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


@st.composite
def views(draw: st.DrawFn, dtypes: list[str]) -> tuple[ft.FuelTensor, np.ndarray]:
    """A tensor view (any strides, negative and zero too, any offset) and its NumPy twin."""
    dtype = draw(st.sampled_from(dtypes))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    strides = tuple(draw(st.lists(st.integers(-5, 5), min_size=ndim, max_size=ndim)))
    reach = [(n - 1) * s for n, s in zip(shape, strides, strict=True) if n > 0]
    lo = sum(r for r in reach if r < 0)
    hi = sum(r for r in reach if r > 0)
    offset = -lo + draw(st.integers(0, 3))
    size = offset + hi + 1 + draw(st.integers(0, 3))
    drawn = "float32" if dtype == "bfloat16" else dtype
    storage = draw(hnp.arrays(drawn, size, elements=hnp.from_dtype(np.dtype(drawn))))
    storage = storage.astype(ml_dtypes.bfloat16) if dtype == "bfloat16" else storage
    view = ft.as_strided(ft.asarray(storage), shape, strides, offset)
    if math.prod(shape) == 0:
        twin = np.empty(shape, storage.dtype)
    else:
        # An axis of extent 1 never moves, and fueltensor hands NumPy stride 0 there; the twin
        # does the same, since NumPy picks its complex loops by stride (abs of a 1-element
        # complex64 view differs in the last bit between strides -8 and 0).
        itemsize = storage.itemsize
        steps = [0 if n == 1 else s * itemsize for n, s in zip(shape, strides, strict=True)]
        twin = np.lib.stride_tricks.as_strided(storage[offset:], shape, steps, writeable=False)
    return view, twin


def assert_same(got: ft.FuelTensor, want: Any) -> None:
    """Same dtype, shape and bits (NaNs by payload-free pattern), as a dense row-major tensor."""
    want = np.asarray(want)
    g = np.asarray(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert g.shape == want.shape
    assert got.layout.contiguous and got.offset == 0, (got.strides, got.offset)
    if want.dtype.kind in "fc" or want.dtype == ml_dtypes.bfloat16:
        g, want = _canonical_nan(g), _canonical_nan(want)
    assert g.tobytes() == want.tobytes(), (g, want)


def _canonical_nan(a: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "c":
        return np.stack([_canonical_nan(a.real.copy()), _canonical_nan(a.imag.copy())])
    wide = a.astype(np.float64)
    return np.where(np.isnan(wide), np.nan, wide)


def numpy_quietly(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """NumPy's answer with its warnings silenced (fueltensor says the same things by value)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def reduced_axes(draw: st.DataObject, ndim: int) -> int | tuple[int, ...] | None:
    if not ndim or draw.draw(st.booleans()):
        return None
    chosen = draw.draw(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim))
    unique = tuple(dict.fromkeys(a % ndim for a in chosen))
    return unique[0] if len(unique) == 1 and draw.draw(st.booleans()) else unique


ACCUMULATE = {"b": np.int64, "i": np.int64, "u": np.uint64}
"""The standard's sum/prod dtypes for bool and integers (floats keep theirs)."""


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "var", "std", "max", "min"])
@VIEWS
@given(pair=views(DTYPES), draw=st.data())
def test_reductions_on_views_are_numpy_on_the_same_view(
    name: str, pair: tuple[ft.FuelTensor, np.ndarray], draw: st.DataObject
) -> None:
    view, twin = pair
    kind = twin.dtype.kind
    half = twin.dtype in (np.float16, ml_dtypes.bfloat16)
    if name in ("mean", "var", "std") and (kind in "biuf" or half):
        return  # floats compose planned steps (test_reduce_compositions.py); ints unspecified
    axis = reduced_axes(draw, view.ndim)
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": draw.draw(st.booleans())}
    work = twin.astype(np.float32) if half else twin
    numpy_kwargs = dict(kwargs)
    if name in ("var", "std"):
        kwargs["correction"] = numpy_kwargs["ddof"] = draw.draw(st.sampled_from([0, 1, 2.5]))
    if name in ("sum", "prod"):
        numpy_kwargs["dtype"] = ACCUMULATE.get(kind, work.dtype)
    try:
        want = numpy_quietly(getattr(np, name), work, **numpy_kwargs)
    except ValueError:  # an extremum over an empty axis has no answer
        with pytest.raises(ValueError):
            getattr(ft, name)(view, **kwargs)
        return
    if half:  # rounded once to the half type, as the host does: overflow gives inf
        with np.errstate(over="ignore"):
            want = np.asarray(want).astype(twin.dtype)
    got = getattr(ft, name)(view, **kwargs)
    if name in PLANNED and (kind == "f" or half):  # its contract's bits, not NumPy's pairwise ones
        assert_contract(name, got, twin, kwargs)
        return
    assert_same(got, want)


PLANNED = {row.name for row in PLANNED_REDUCTIONS}
"""sum, prod, max and min: the float formats plan their contracts (`engine.reduce`)."""


def assert_contract(name: str, got: ft.FuelTensor, twin: np.ndarray, kwargs: Any) -> None:
    """`got` is the CPU contract's result for `name` of `twin`: the declared order's bits for a
    sum or product (`judge.orders.simulate`: a row of -0 sums to -0, where NumPy seeds +0), the
    selection with the first zero of a tie for max and min; a NaN matches any NaN."""
    axes = normalised(kwargs["axis"], twin.ndim)
    table = rows(twin, axes)
    if name in ("sum", "prod"):
        d = declared(ft.explain(getattr(ft, name), ft.asarray(twin), axis=axes).kernel)
        assert not isinstance(d, str), d
        want = simulate(table, d, twin.dtype, product=name == "prod")
    else:
        want = selected(table, twin.dtype, name == "max", "lhs")
    shape = [n for i, n in enumerate(twin.shape) if i not in axes]
    if kwargs["keepdims"]:
        shape = [1 if i in axes else n for i, n in enumerate(twin.shape)]
    g = np.asarray(got)
    assert g.dtype == twin.dtype and g.shape == tuple(shape)
    bits = f"u{twin.dtype.itemsize}"
    flat = np.atleast_1d(g).reshape(-1)
    same = flat.view(bits) == np.asarray(want).reshape(-1).view(bits)
    nan = np.isnan(flat.astype(np.float64)) & np.isnan(np.asarray(want).astype(np.float64))
    assert np.all(same | nan), (g, want)


@pytest.mark.parametrize("name", ["mean", "var", "std"])
@pytest.mark.parametrize("shape", [(0,), (0, 3), (1,), (2,)])
def test_too_few_elements_say_nan_by_value_without_a_warning(
    name: str, shape: tuple[int, ...]
) -> None:
    x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    kwargs = {"correction": 2} if name != "mean" else {}
    got = getattr(ft, name)(ft.asarray(x), axis=0, **kwargs)
    ddof = {"ddof": 2} if name != "mean" else {}
    want = np.asarray(numpy_quietly(getattr(np, name), x, axis=0, **ddof))
    if ddof:  # N - correction <= 0 is NaN by the array API, where NumPy divides by 0 (inf)
        want = np.full_like(want, np.nan)
    assert_same(got, want)


def test_a_complex_sum_into_a_real_dtype_drops_the_imaginary_part_quietly() -> None:
    x = ft.asarray(np.array([1 + 2j, 3 - 1j], np.complex64))
    assert_same(ft.sum(x, dtype=ft.float64), np.float64(4.0))


UNARY = ["floor", "expm1", "log1p", "isnan", "isfinite", "positive", "logical_not", "square"]
"""Host unary functions (the op table's unary rows are contract operations: tests/engine)."""


@pytest.mark.parametrize("name", UNARY)
@VIEWS
@given(pair=views(["bool", "int32", "float32", "float64", "complex64"]))
def test_unary_on_views_is_the_ufunc_on_the_same_view(
    name: str, pair: tuple[ft.FuelTensor, np.ndarray]
) -> None:
    view, twin = pair
    fn = getattr(ft, name)
    try:
        want = numpy_quietly(getattr(np, name), twin)
    except TypeError:
        with pytest.raises(TypeError):
            fn(view)
        return
    assert_same(fn(view), want)


@VIEWS
@given(pair=views(["int32", "float32", "float64"]), scalar=st.sampled_from([0, 1, 2.5, -0.0]))
def test_comparisons_with_views_and_scalars(
    pair: tuple[ft.FuelTensor, np.ndarray], scalar: int | float
) -> None:
    view, twin = pair
    if isinstance(scalar, float) and twin.dtype.kind == "i":
        return  # an int tensor takes a float scalar as float64: covered by the differential test
    for fn, ufunc in ((ft.less, np.less), (ft.not_equal, np.not_equal), (ft.equal, np.equal)):
        assert_same(fn(view, scalar), ufunc(twin, np.asarray(scalar, twin.dtype)))
        assert_same(fn(view, view), ufunc(twin, twin))


@VIEWS
@given(pair=views(DTYPES), to=st.sampled_from(DTYPES), copy=st.booleans())
def test_astype_on_views(pair: tuple[ft.FuelTensor, np.ndarray], to: str, copy: bool) -> None:
    view, twin = pair
    if twin.dtype.kind == "c" and to != "complex64":
        return  # refused: covered by the differential test
    got = ft.astype(view, getattr(ft, to), copy=copy)
    if to == view.dtype.name and not copy:
        assert got is view
        return
    target = ml_dtypes.bfloat16 if to == "bfloat16" else np.dtype(to)
    assert_same(got, numpy_quietly(twin.astype, target))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_finfo_is_the_libraries_finfo_every_time(name: str) -> None:
    dt = getattr(ft, name)
    info = ml_dtypes.finfo(dt.np) if name == "bfloat16" else np.finfo(dt.np)
    for _ in range(2):
        got = ft.finfo(dt)
        assert (got.bits, got.eps, got.max, got.min, got.smallest_normal) == (
            info.bits,
            float(info.eps),
            float(info.max),
            float(info.min),
            float(info.smallest_normal),
        )
        assert got.dtype == np.dtype(info.dtype)
    assert ft.finfo(ft.ones(1, dtype=dt)) == ft.finfo(dt)


@pytest.mark.parametrize(
    "shape",
    [3, np.int64(3), np.array(2), (), (2, 3), [2, 3], (np.int32(2), 3), range(3)],
)
def test_as_shape_reads_what_numpy_reads(shape: Any) -> None:
    assert as_shape(shape) == np.empty(shape).shape


@pytest.mark.parametrize(
    ("shape", "error"),
    [
        (2.0, TypeError),
        ((2.0,), TypeError),
        ("ab", TypeError),
        ((-1,), ValueError),
        (-2, ValueError),
    ],
)
def test_as_shape_refuses_what_numpy_refuses(shape: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        np.empty(shape)
    with pytest.raises(error):
        as_shape(shape)


@given(pair=views(FLOATS))
@VIEWS
def test_host_calls_are_still_traced(pair: tuple[ft.FuelTensor, np.ndarray]) -> None:
    view, _ = pair
    with ft.trace() as plans:
        ft.round(view)  # a host call
        ft.expm1(view)
        ft.astype(view, ft.int64)
    assert [(p.op, p.kernel_name) for p in plans] == [
        ("round", "host"),
        ("expm1", "host"),
        ("astype", "host"),
    ]


@VIEWS
@given(pair=views(DTYPES), draw=st.data())
def test_reshape_is_numpys_reshape_and_the_general_layout(
    pair: tuple[ft.FuelTensor, np.ndarray], draw: st.DataObject
) -> None:
    """A dense tensor's reshape skips the general path; both give NumPy's elements, and a view
    the general path could make is exactly that view (same storage, strides and offset)."""
    view, twin = pair
    n = view.size
    shapes = [(n,), (-1,), (1, n), (n, 1), (-1, 1, 1)] + ([(2, -1)] if n % 2 == 0 else [])
    target = draw.draw(st.sampled_from(shapes + ([()] if n == 1 else [])))
    got = ft.reshape(view, target)
    want = twin.reshape(target)
    assert got.shape == want.shape
    assert np.asarray(got).tobytes() == want.tobytes()
    general = view._layout.reshape(got.shape)
    if general is not None:
        assert got._storage is view._storage
        assert got._layout == general
    with pytest.raises(ValueError, match="cannot reshape"):
        ft.reshape(view, (n + 1,))


@pytest.mark.parametrize(
    ("shape", "says"),
    [((1,) * 64 + (4,), "at most 64"), ((-1,) + (1,) * 64, "at most 64"), ((3,), "cannot reshape")],
)
def test_reshape_of_a_dense_tensor_refuses_as_the_general_path_does(
    shape: tuple[int, ...], says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        ft.reshape(ft.ones(4), shape)


@VIEWS
@given(pair=views(["float32"]))
def test_assignment_through_views_is_refused_exactly_as_before(
    pair: tuple[ft.FuelTensor, np.ndarray],
) -> None:
    """Where NumPy calls a non-empty view C-contiguous (the early return), the five layout
    flags say dense and stride-0 free too, so the fast check refuses nothing the full one
    accepts; every other view still meets the full check, and a write lands as NumPy's."""
    view, twin = pair
    flags = view.layout
    if view.size and np.asarray(view).flags.c_contiguous:
        assert flags.contiguous and not flags.broadcast_stride0
    refused = flags.broadcast_stride0 or (not flags.contiguous and view._layout.may_self_overlap)
    if refused:
        with pytest.raises(ValueError, match="copy the target first"):
            view[...] = 1.5
        return
    view[...] = 1.5
    assert np.all(twin == np.float32(1.5))  # NumPy's own view of the shared storage


@pytest.mark.parametrize("name", ["any", "all"])
@VIEWS
@given(pair=views(DTYPES), draw=st.data())
def test_any_and_all_on_views_are_numpys(
    name: str, pair: tuple[ft.FuelTensor, np.ndarray], draw: st.DataObject
) -> None:
    view, twin = pair
    axis = reduced_axes(draw, view.ndim)
    keepdims = draw.draw(st.booleans())
    want = getattr(np, name)(twin, axis=axis, keepdims=keepdims)
    assert_same(getattr(ft, name)(view, axis=axis, keepdims=keepdims), want)
