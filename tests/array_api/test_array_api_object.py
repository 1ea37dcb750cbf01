"""The array object: operators (host or contract, as the dispatch policy says), indexing and
assignment through strides, Python scalar conversion, DLPack and NumPy interchange."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fueltensor as ft


def host_ops(plans: list[ft.Plan]) -> list[str]:
    return [p.op for p in plans if p.kernel is None]


# -- operators --------------------------------------------------------------------------------

BINARY = [
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
    operator.floordiv,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.lshift,
    operator.rshift,
]


@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
def test_binary_operators_match_numpy_and_run_on_host(op: Callable[[Any, Any], Any]) -> None:
    a = np.array([[5, -3, 0], [7, 2, -8]], dtype=np.int32)
    b = np.array([1, 2, 3], dtype=np.int16)
    x, y = ft.asarray(a), ft.asarray(b)
    with ft.trace() as plans:
        got = op(x, y)
        reflected = op(2, x)
    with np.errstate(all="ignore"):
        want = op(a, b.astype(np.int32))
        np.testing.assert_array_equal(np.asarray(got), want)
        np.testing.assert_array_equal(np.asarray(reflected), op(np.int32(2), a))
    assert got.dtype.name == want.dtype.name
    assert len(host_ops(plans)) == 2 and all(p.kernel is None for p in plans)


def test_eight_operations_stay_on_contracts_for_floats() -> None:
    x = ft.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=ft.float32)
    with ft.trace() as plans:
        _ = x + x, x - 1.0, 2.0 * x, x / x, x % 3.0, x**2.0, ft.maximum(x, x), ft.minimum(x, 1.0)
    assert len(plans) == 8 and all(p.kernel is not None for p in plans)
    with ft.trace() as plans:
        _ = ft.asarray([1, 2]) + 1
    assert [p.kernel for p in plans] == [None]


def test_unary_operators_and_matmul() -> None:
    a = np.array([[1.0, -2.0], [3.0, -4.0]])
    x = ft.asarray(a)
    for op in (operator.neg, operator.pos, operator.abs):
        np.testing.assert_array_equal(np.asarray(op(x)), op(a))
    np.testing.assert_array_equal(np.asarray(~ft.asarray([0, 5], dtype=ft.uint8)), [255, 250])
    np.testing.assert_array_equal(np.asarray(x @ x), a @ a)
    assert (x @ x).dtype is ft.float64
    assert operator.pos(x) is not x


def test_comparison_with_foreign_objects() -> None:
    x = ft.asarray([1, 2])
    assert (x == "one") is False
    assert (x != None) is True  # noqa: E711 - Python falls back to identity for unknown types
    with pytest.raises(TypeError):
        _ = x < "one"


def test_inplace_operators_write_through_a_view() -> None:
    base = ft.asarray(np.arange(12, dtype=np.int64).reshape(3, 4))
    view = base[::2, 1::2]
    view &= 6
    view <<= 1
    view //= 3
    expected = np.arange(12).reshape(3, 4)
    expected[::2, 1::2] = ((expected[::2, 1::2] & 6) << 1) // 3
    np.testing.assert_array_equal(np.asarray(base), expected)
    with pytest.raises(TypeError, match="float64"):
        view //= 1.5
    m = ft.ones((2, 2))
    m @= ft.eye(2) * 2.0
    np.testing.assert_array_equal(np.asarray(m), np.full((2, 2), 2.0))


def test_inplace_into_broadcast_view_is_refused() -> None:
    row = ft.asarray([1, 2])
    b = ft.broadcast_to(row, (3, 2))
    with pytest.raises(ValueError, match="read-only"):
        b |= 1
    with pytest.raises(ValueError, match="read-only"):
        b[:, 0] = 5
    with pytest.raises(ValueError, match="read-only"):  # as NumPy: a row of it is read-only too
        b[0] = ft.asarray([7, 8])
    assert np.asarray(row).tolist() == [1, 2]
    s = ft.as_strided(row, (3, 2), (0, 1))
    with pytest.raises(ValueError, match="stride-0"):
        s |= 1
    with pytest.raises(ValueError, match="stride-0"):
        s[:, 0] = 5


def test_arrays_are_unhashable() -> None:
    with pytest.raises(TypeError):
        hash(ft.asarray([1.0]))


# -- indexing and assignment ------------------------------------------------------------------

index_items = st.one_of(
    st.integers(-3, 2),
    st.slices(3),
    st.just(Ellipsis),
    st.none(),
)


@settings(max_examples=200, deadline=None)
@given(key=st.tuples(index_items, index_items), value=st.integers(-50, 50), transpose=st.booleans())
def test_basic_assignment_writes_through_strides(
    key: tuple[Any, ...], value: int, transpose: bool
) -> None:
    base = np.arange(9, dtype=np.int64).reshape(3, 3)
    t = ft.asarray(base.copy())
    target_t, target_np = (t.T, base.T) if transpose else (t, base)
    try:
        target_np[key] = value
    except IndexError:
        with pytest.raises(IndexError):
            target_t[key] = value
        return
    target_t[key] = value
    np.testing.assert_array_equal(np.asarray(t), base)


@settings(max_examples=100, deadline=None)
@given(
    a=hnp.arrays(np.float64, (4, 3), elements=st.floats(-9, 9)),
    rows=hnp.arrays(np.int64, st.integers(0, 5), elements=st.integers(-4, 3)),
)
def test_advanced_indexing_matches_numpy(a: np.ndarray, rows: np.ndarray) -> None:
    x = ft.asarray(a)
    np.testing.assert_array_equal(np.asarray(x[ft.asarray(rows)]), a[rows])
    np.testing.assert_array_equal(np.asarray(x[ft.asarray(rows), 1:]), a[rows, 1:])
    mask = a > 0
    np.testing.assert_array_equal(np.asarray(x[ft.asarray(mask)]), a[mask])
    with ft.trace() as plans:
        x[ft.asarray(mask)] = -1.0
    b = a.copy()
    b[mask] = -1.0
    np.testing.assert_array_equal(np.asarray(x), b)
    assert host_ops(plans) == ["setitem"]


def test_advanced_index_is_a_copy_and_basic_a_view() -> None:
    x = ft.asarray(np.arange(6.0))
    basic, fancy = x[1:3], x[ft.asarray([1, 2])]
    x[1] = 100.0
    assert float(basic[0]) == 100.0 and float(fancy[0]) == 1.0
    with pytest.raises(IndexError):
        x[ft.asarray([0.5])]


def test_assignment_dtype_rules() -> None:
    f = ft.zeros(3, dtype=ft.float32)
    f[0] = 1  # an int fits a float tensor
    f[1:] = ft.asarray([2, 3], dtype=ft.int8)
    assert np.asarray(f).tolist() == [1.0, 2.0, 3.0]
    i = ft.zeros(2, dtype=ft.int8)
    with pytest.raises(TypeError):
        i[0] = 1.5
    with pytest.raises(OverflowError):
        i[0] = 128
    with pytest.raises(TypeError):
        f[0] = ft.asarray(1.0, dtype=ft.float64)


# -- Python scalars ---------------------------------------------------------------------------


def test_scalar_conversions() -> None:
    assert bool(ft.asarray(0.5)) is True and bool(ft.asarray(0)) is False
    assert int(ft.asarray(-7)) == -7 and int(ft.asarray(2.9)) == 2
    assert float(ft.asarray(3, dtype=ft.int8)) == 3.0
    assert float(ft.asarray(1.5, dtype=ft.bfloat16)) == 1.5
    assert complex(ft.asarray(1 + 2j)) == 1 + 2j
    assert [10, 20, 30][ft.asarray(2)] == 30
    for fn in (bool, int, float, complex):
        with pytest.raises(TypeError, match="0-d"):
            fn(ft.asarray([1, 2]))
    with pytest.raises(TypeError):
        operator.index(ft.asarray(1.0))
    with pytest.raises(TypeError):
        int(ft.asarray(1j))
    with pytest.raises(ValueError):
        int(ft.asarray(float("nan")))


# -- interchange ------------------------------------------------------------------------------


def test_numpy_interchange_is_zero_copy_for_contiguous() -> None:
    x = ft.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=ft.float32)
    assert np.shares_memory(np.asarray(x), x._storage)
    via_dlpack = np.from_dlpack(x)
    assert np.shares_memory(via_dlpack, x._storage)
    back = ft.from_dlpack(via_dlpack)
    assert np.shares_memory(back._array, x._storage)
    assert ft.from_dlpack(x) is x and x.__dlpack_device__() == (1, 0)
    assert not np.shares_memory(ft.from_dlpack(via_dlpack, copy=True)._array, x._storage)


@pytest.mark.parametrize(
    ("make", "same_on_numpy"),
    [
        (lambda x: x.T, lambda a: a.T),
        (lambda x: x[::-1, 1:], lambda a: a[::-1, 1:]),
        (lambda x: ft.flip(x), lambda a: a[::-1, ::-1]),
    ],
)
def test_dlpack_exports_strided_views(
    make: Callable[[ft.FuelTensor], ft.FuelTensor], same_on_numpy: Callable[[Any], Any]
) -> None:
    base = np.arange(12, dtype=np.int16).reshape(3, 4)
    exported = np.from_dlpack(make(ft.asarray(base)))
    want = same_on_numpy(base)
    assert exported.shape == want.shape
    np.testing.assert_array_equal(exported, want)


def test_bfloat16_dlpack_limitation_is_explained() -> None:
    x = ft.asarray([1.0], dtype=ft.bfloat16)
    with pytest.raises(BufferError, match="bfloat16"):
        np.from_dlpack(x)
    assert ft.from_dlpack(x) is x


def test_torch_round_trip() -> None:
    torch = pytest.importorskip("torch")
    x = ft.asarray([[1.0, 2.0], [3.0, 4.0]], dtype=ft.float32)
    t = torch.from_dlpack(x)
    back = ft.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))
    assert np.shares_memory(back._array, x._storage)


def test_to_device() -> None:
    x = ft.asarray([1.0])
    assert x.to_device("cpu") is x and x.device == "cpu"
    with pytest.raises(ValueError):
        x.to_device("cuda:0")
    with pytest.raises(ValueError):
        x.to_device("cpu", stream=1)


def test_host_operations_are_explained_and_traced() -> None:
    x = ft.asarray([[1.0, 2.0], [3.0, 4.0]])
    plan = ft.explain(ft.cumulative_sum, x, axis=0)  # a float sum plans its contract
    assert plan.kernel is None and "cumulative_sum" in str(plan)
    with ft.trace() as plans:
        ft.sort(x)
        ft.unique_all(x)
        ft.nonzero(x)
        _ = x.T  # a view: nothing runs
    assert host_ops(plans) == ["sort", "unique_all", "nonzero"]


@pytest.mark.parametrize("dtype", ["int8", "uint16", "bool", "complex64", "float32"])
def test_zero_d_operands_give_zero_d_results(dtype: str) -> None:
    x = ft.ones((), dtype=getattr(ft, dtype))
    for result in (x + x, x * x, x == x, -x if dtype != "bool" else ~x, ft.sum(x)):
        assert result.shape == ()
