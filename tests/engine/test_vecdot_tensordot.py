"""vecdot and tensordot through the matmul row (issue 46; docs/matmul.md): the real floats run
one matmul of views (vecdot: (..., 1, K) @ (..., K, 1) after moving the axis; tensordot: the
contracted axes permuted and flattened row-major in the pairs' listed order), so their bits are
the matmul contract's: fuel-cpu-backend's declared order for BF16 and F16 (against `in_order`,
tests/_matmul.py, per output from the definition: NumPy broadcasts and moves the axes, never
fueltensor), the oracle's exact result where it is named; shapes as NumPy's on hypothesis'
shapes, axes and views; the errors of bad axes as before; integers, bool and complex on the
host; the trace and explain name the contract kernel."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _matmul import in_order, reference, same
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft

HALVES = (np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16))
FLOATS = (np.dtype(np.float32), np.dtype(np.float64), *HALVES)
SUFFIX = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64"}


def ran(fn: Any, *args: Any, **kwargs: Any) -> tuple[np.ndarray, list[str]]:
    """fn(*args) as NumPy, and the kernels the trace names ('host' where none)."""
    with ft.trace() as plans:
        got = np.asarray(fn(*args, **kwargs))
    return got, [p.kernel.name if p.kernel else "host" for p in plans]


def dot(u: np.ndarray, v: np.ndarray, ref: Any) -> Any:
    """One output: the vectors u and v (K each) as (1, K) @ (K, 1) under the 2-D `ref`."""
    return ref(np.ascontiguousarray(u)[None, :], np.ascontiguousarray(v)[:, None])[0, 0]


def vecdot_reference(x: np.ndarray, y: np.ndarray, axis: int, ref: Any) -> np.ndarray:
    """Each output's dot product along `axis`, the stacks broadcast by NumPy."""
    nd = np.broadcast_shapes(x.shape, y.shape)
    xs = np.moveaxis(np.broadcast_to(x, nd), axis % len(nd), -1)
    ys = np.moveaxis(np.broadcast_to(y, nd), axis % len(nd), -1)
    out = np.empty(xs.shape[:-1], x.dtype)
    for index in np.ndindex(*out.shape):
        out[index] = dot(xs[index], ys[index], ref)
    return out


def tensordot_reference(
    x: np.ndarray, y: np.ndarray, axes_a: list[int], axes_b: list[int], ref: Any
) -> np.ndarray:
    """Each output's K products taken from the definition, the contracted index tuples in
    row-major order over the pairs as listed (the documented order), summed by `ref`."""
    keep_a = [k for k in range(x.ndim) if k not in axes_a]
    keep_b = [k for k in range(y.ndim) if k not in axes_b]
    out = np.empty([x.shape[k] for k in keep_a] + [y.shape[k] for k in keep_b], x.dtype)
    inner = [x.shape[k] for k in axes_a]
    for index in np.ndindex(*out.shape):
        i, j = index[: len(keep_a)], index[len(keep_a) :]
        u, v = [], []
        for c in np.ndindex(*inner):
            at_a, at_b = dict(zip(keep_a, i, strict=True)), dict(zip(keep_b, j, strict=True))
            at_a.update(zip(axes_a, c, strict=True))
            at_b.update(zip(axes_b, c, strict=True))
            u.append(x[tuple(at_a[k] for k in range(x.ndim))])
            v.append(y[tuple(at_b[k] for k in range(y.ndim))])
        out[index] = dot(np.array(u, x.dtype), np.array(v, y.dtype), ref)
    return out


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_vecdot_adds_in_k_order(dtype: np.dtype[Any]) -> None:
    """2^24 + 1 - 2^24 is 0 in K order (the 1 lost), exactly 1; 2^24 - 2^24 + ... + 1 is 1 in
    K order, where NumPy's pairwise float32 sum (today's host) loses the 1 against 2^24."""
    lost = np.zeros((2, 16))
    lost[0, :3] = [2.0**12, 1.0, -(2.0**12)]
    lost[1, [0, 1, 8]] = [2.0**12, -(2.0**12), 1.0]
    x = lost.astype(dtype)
    y = np.abs(lost).astype(dtype)
    got, kernels = ran(ft.vecdot, ft.asarray(x), ft.asarray(y))
    assert kernels == [f"matmul_{SUFFIX[dtype.name]}"]
    assert got.tolist() == [0.0, 1.0] and got.dtype == dtype
    same(got, vecdot_reference(x, y, -1, in_order))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_tensordot_takes_k_row_major_over_the_listed_pairs(dtype: np.dtype[Any]) -> None:
    """Products 2^24, 1, -2^24, 0 at a[0,0], a[0,1], a[1,0], a[1,1]: listed (0, 1) K runs
    a[0,0], a[0,1], ... and loses the 1; listed (1, 0) it runs a[0,0], a[1,0], ... and keeps it."""
    x = np.array([[2.0**12, 1.0], [-(2.0**12), 0.0]], dtype)
    y = np.array([[2.0**12, 1.0], [2.0**12, 0.0]], dtype)
    a, b = ft.asarray(x), ft.asarray(y)
    rows, kernels = ran(ft.tensordot, a, b, axes=([0, 1], [0, 1]))
    cols, _ = ran(ft.tensordot, a, b, axes=([1, 0], [1, 0]))
    assert kernels == [f"matmul_{SUFFIX[dtype.name]}"]
    assert (float(rows), float(cols)) == (0.0, 1.0) and rows.shape == ()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_the_oracle_where_named_gives_the_exact_result(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 1, 6)) * 2.0 ** rng.integers(-6, 6, (3, 1, 6))).astype(dtype)
    y = rng.standard_normal((4, 6)).astype(dtype)
    t = rng.standard_normal((6, 1, 3)).astype(dtype)
    with ft.use_backend("reference"):
        got, kernels = ran(ft.vecdot, ft.asarray(x), ft.asarray(y))
        dots, more = ran(ft.tensordot, ft.asarray(x), ft.asarray(t), axes=([2, 1], [0, 1]))
        plan = ft.explain(ft.vecdot, ft.asarray(x), ft.asarray(y))
    assert kernels == more == [f"ref_matmul_{SUFFIX[dtype.name]}"]
    assert plan.kernel is not None and plan.kernel.name == kernels[0]
    same(got, vecdot_reference(x, y, -1, reference))
    same(dots, tensordot_reference(x, t, [2, 1], [0, 1], reference))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_explain_names_the_contract_kernel(dtype: np.dtype[Any]) -> None:
    a = ft.asarray(np.ones((2, 5), dtype))
    assert ft.explain(ft.vecdot, a, a).kernel.name == f"matmul_{SUFFIX[dtype.name]}"
    assert ft.explain(ft.tensordot, a, a.mT, axes=1).kernel.name == f"matmul_{SUFFIX[dtype.name]}"
    f32 = ft.asarray(np.ones((2, 5), np.float32))  # fuel-blas-backend's, traced as matmuls
    with ft.trace() as plans:
        ft.vecdot(f32, f32)
        ft.tensordot(f32, f32.mT, axes=1)
    assert [(p.op, p.kernel and p.kernel.name) for p in plans] == [
        ("matmul", "blas_matmul_f32")
    ] * 2


def test_no_products_give_plus_zero_and_empty_stacks_work() -> None:
    h = np.float16
    with ft.trace() as plans:
        zeros = np.asarray(
            ft.vecdot(ft.ones((2, 0), dtype=ft.float16), ft.ones(0, dtype=ft.float16))
        )
        empty = ft.vecdot(ft.ones((0, 3), dtype=ft.float16), ft.ones(3, dtype=ft.float16))
        flat = np.asarray(ft.tensordot(ft.ones((2, 0)), ft.ones((0, 3)), axes=1))
    assert zeros.tolist() == [0.0, 0.0] and not np.signbit(zeros).any() and zeros.dtype == h
    assert empty.shape == (0,) and flat.tolist() == [[0.0] * 3] * 2 and not np.signbit(flat).any()
    assert all(p.kernel is None for p in plans)
    one = ft.vecdot(ft.asarray(np.array([-0.0, 2.0], h)), ft.asarray(np.array([1.0, 3.0], h)))
    assert one.shape == () and float(one) == 6.0


@pytest.mark.parametrize("dtype", [np.int64, np.bool_, np.complex64], ids=str)
def test_other_dtypes_keep_the_host(dtype: Any) -> None:
    """Integers wrap as NumPy's do, bool and complex as before; vecdot conjugates x1."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((3, 4)) * 4).astype(dtype)
    y = (rng.standard_normal((3, 4)) * 4).astype(dtype)
    if dtype is np.complex64:
        x = x + 1j * y
    if dtype is np.int64:
        x = np.full((3, 4), 2**62, dtype)
    got, kernels = ran(ft.vecdot, ft.asarray(x), ft.asarray(y))
    np.testing.assert_array_equal(got, np.sum(np.conj(x) * y, axis=-1).astype(dtype))
    dots, more = ran(ft.tensordot, ft.asarray(x), ft.asarray(y), axes=([1], [1]))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(dots, np.tensordot(x, y, axes=([1], [1])).astype(dtype))
    assert kernels == more == ["host"]


BAD_TENSORDOT_AXES: list[Any] = [
    3,
    ([0], [0, 1]),
    ([0, 0], [0, 1]),
    ([1], [1]),
    ([5], [0]),
    ([0], [-4]),
    ([0, -2], [0, 1]),
    ([0], [0], [0]),
    2.0,
]


@pytest.mark.parametrize("axes", BAD_TENSORDOT_AXES, ids=repr)
def test_bad_tensordot_axes_fail_as_numpys(axes: Any) -> None:
    x, y = np.ones((2, 3)), np.ones((2, 4))
    with pytest.raises(Exception) as want:
        np.tensordot(x, y, axes=axes)
    for dtype in (np.float16, np.int32):
        with pytest.raises(type(want.value)) as got:
            ft.tensordot(ft.asarray(x.astype(dtype)), ft.asarray(y.astype(dtype)), axes=axes)
        if isinstance(want.value, ValueError):
            assert str(got.value) == str(want.value)


SIZES = "must exist in both operands with one size"
BROADCAST = "objects cannot be broadcast to a single shape"


@pytest.mark.parametrize(
    ("s1", "s2", "axis", "error", "words"),
    [
        ((2, 3), (2, 4), -1, ValueError, BROADCAST),
        ((2, 3), (3, 3), -2, ValueError, BROADCAST),
        ((3,), (3,), 1, ValueError, SIZES),
        ((3,), (3,), -2, ValueError, SIZES),
        ((2, 3), (4, 3), -1, ValueError, BROADCAST),
        ((1, 3), (2, 3), -2, ValueError, SIZES),
        ((3,), (2, 3), -2, IndexError, "index out of range"),
        ((), (), -1, ValueError, SIZES),
    ],
)
def test_bad_vecdot_axes_fail_as_before(
    s1: tuple[int, ...], s2: tuple[int, ...], axis: int, error: type[Exception], words: str
) -> None:
    """The errors of the host implementation before issue 46's routing, nothing run."""
    for dtype in (ft.float16, ft.int32):
        x1, x2 = ft.ones(s1, dtype=dtype), ft.ones(s2, dtype=dtype)
        with ft.trace() as plans, pytest.raises(error, match=words):
            ft.vecdot(x1, x2, axis=axis)
        assert plans == []


@st.composite
def laid(draw: st.DrawFn, shape: tuple[int, ...], dtype: np.dtype[Any]) -> tuple[Any, Any]:
    """A NumPy array of `shape` and the same elements as a fueltensor view of a larger tensor:
    dense, strided, flipped, offset, or broadcast along some axis (stride 0)."""
    how = draw(st.sampled_from(["dense", "strided", "flipped", "offset", "broadcast"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base_shape = [2 * n + 1 if how in ("strided", "offset") else n for n in shape]
    if how == "broadcast":
        base_shape = [1 if draw(st.booleans()) else n for n in shape]
    base = (rng.standard_normal(base_shape) * 2.0 ** rng.integers(-6, 6, base_shape)).astype(dtype)
    key: tuple[slice, ...] = tuple(slice(None) for _ in shape)
    if how == "strided":
        key = tuple(slice(None, 2 * n, 2) for n in shape)
    elif how == "flipped":
        key = tuple(slice(None, None, -1) for _ in shape)
    elif how == "offset":
        key = tuple(slice(1, 1 + n) for n in shape)
    view, tensor = base[key], ft.asarray(base)[key]
    if how == "broadcast":
        view, tensor = np.broadcast_to(view, shape), ft.broadcast_to(tensor, shape)
    assert view.shape == tensor.shape == tuple(shape)
    return view, tensor


shapes = st.lists(st.integers(0, 3), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(HALVES), shape=shapes)
def test_vecdot_shapes_and_bits_on_any_broadcast_and_view(
    data: Any, dtype: np.dtype[Any], shape: list[int]
) -> None:
    """x2 drops leading axes and sets others to 1 (not the contracted one), axis in [-N, -1]."""
    cut = data.draw(st.integers(0, len(shape) - 1))
    axis = data.draw(st.integers(-(len(shape) - cut), -1))
    other = [
        n if i == len(shape) + axis or data.draw(st.booleans()) else 1 for i, n in enumerate(shape)
    ][cut:]
    if data.draw(st.booleans()):
        shape, other = other, shape  # either side may be the broadcast one
    (x, a), (y, b) = data.draw(laid(tuple(shape), dtype)), data.draw(laid(tuple(other), dtype))
    got, kernels = ran(ft.vecdot, a, b, axis=axis)
    want = np.vecdot(x.astype(np.float64), y.astype(np.float64), axis=axis)
    assert got.shape == want.shape and got.dtype == dtype
    if got.size and x.shape[axis]:
        assert kernels == [f"matmul_{SUFFIX[dtype.name]}"]
    same(got, vecdot_reference(x, y, axis, in_order))


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dtype=st.sampled_from(HALVES), s1=shapes, s2=shapes)
def test_tensordot_shapes_and_bits_on_any_axes_and_view(
    data: Any, dtype: np.dtype[Any], s1: list[int], s2: list[int]
) -> None:
    """Some axes of x2 paired with as many of x1 (their extents made equal), listed in any
    order, negative or not, or the int form."""
    pairs = data.draw(st.integers(0, min(len(s1), len(s2))))
    axes_a = data.draw(st.permutations(range(len(s1))))[:pairs]
    axes_b = data.draw(st.permutations(range(len(s2))))[:pairs]
    for i, j in zip(axes_a, axes_b, strict=True):
        s2[j] = s1[i]
    (x, a), (y, b) = data.draw(laid(tuple(s1), dtype)), data.draw(laid(tuple(s2), dtype))
    axes: Any = (
        [i - len(s1) if data.draw(st.booleans()) else i for i in axes_a],
        [j - len(s2) if data.draw(st.booleans()) else j for j in axes_b],
    )
    if data.draw(st.booleans()):
        axes = pairs
        axes_a, axes_b = list(range(len(s1) - pairs, len(s1))), list(range(pairs))
        for i, j in zip(axes_a, axes_b, strict=True):
            if x.shape[i] != y.shape[j]:
                return  # the int form pairs other axes: drawn again next example
    got, kernels = ran(ft.tensordot, a, b, axes=axes)
    want = np.tensordot(x.astype(np.float64), y.astype(np.float64), axes=axes)
    assert got.shape == want.shape and got.dtype == dtype
    if got.size and all(x.shape[i] for i in axes_a):
        assert kernels == [f"matmul_{SUFFIX[dtype.name]}"]
    same(got, tensordot_reference(x, y, axes_a, axes_b, in_order))
