"""Reductions over every axis, astype and matmul as one compiled call (`_fast.ruled`), and the
methods `x.sum()`, `x.astype(dtype)`, ... and `x @ y` through it: the Python host path's result
bit for bit (dtype, layout, bytes), its errors, its silenced error state and its trace record;
each result also checked against NumPy called on the operands' arrays by this test's own rules
(the array API's accumulation dtypes, half types computed in float32)."""

from __future__ import annotations

import inspect
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _fastpath import outcome, python_calls, traced
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core.dtypes import from_numpy
from fueltensor.core.errstate import ERRSTATE
from fueltensor.engine import dispatch
from fueltensor.kernels.exact_sums import rows
from fueltensor.ops import PLANNED_REDUCTIONS
from fueltensor.tools.judge.orders import declared, selected, simulate

pytestmark = pytest.mark.skipif(
    dispatch._FAST_MODULE is None or ERRSTATE is None, reason="no compiled host calls here"
)

BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = (np.dtype(np.float16), BF16)
DTYPES = [
    np.float32,
    np.float64,
    np.float16,
    ml_dtypes.bfloat16,
    np.int8,
    np.int32,
    np.int64,
    np.uint8,
    np.uint64,
    np.bool_,
    np.complex64,
]
NAN_PAYLOAD = np.array([0x7FC12345], np.uint32).view(np.float32)[0]
"""A quiet NaN with a payload: a result that is this NaN must keep its bits."""
VALUES = [0.0, -0.0, 1.5, -2.25, 3.0, np.inf, -np.inf, np.nan, 1e-3, 7.0, -1.0, 100.0, 3e38]


def sample(dtype: Any, seed: int, shape: tuple[int, ...] = (3, 4), specials: bool = True) -> Any:
    """Values of `dtype` (the float specials among them when `specials`), silently cast."""
    rng = np.random.default_rng(seed)
    pool = [*VALUES, NAN_PAYLOAD] if specials else [0.0, -0.0, 1.5, -2.25, 3.0, 7.0, -1.0]
    with np.errstate(all="ignore"):
        return rng.choice(np.array(pool, np.float32), shape).astype(dtype)


def views(base: np.ndarray) -> list[ft.FuelTensor]:
    """A dense tensor and views of it: a row, strided, offset, flipped and transposed (views get
    their NumPy array on the first call, which the compiled call then reads)."""
    x = ft.asarray(base)
    if x.ndim < 2:
        return [x, x[::-1], x[1:]]
    return [x, x[1], x[:, ::2], x[1:, 1:], ft.flip(x, axis=1), x.T]


PLANNED = {row.name for row in PLANNED_REDUCTIONS}
"""sum, max and min: over the four float formats they plan their contracts (`engine.reduce`),
not the compiled host call, which keeps the other dtypes."""
FLOATS = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16), BF16)


class Contract(np.ndarray):
    """A planned reduction's expected result: the CPU contract's declared order (or selection),
    bit for bit but a NaN's payload (the core's NaN follows its adds, not NumPy's)."""


def planned(name: str, dtype: Any) -> bool:
    """Whether `name` of a `dtype` tensor plans a reduction contract instead of the host call."""
    return name in PLANNED and np.dtype(dtype) in FLOATS


def contract(name: str, a: np.ndarray, axis: int | None, keepdims: bool) -> Contract:
    """What the chosen contract gives for `name` of `a` along `axis`: the declared order
    (`judge.orders.simulate`, the declaration read from the plan's contract) for a sum, the
    selection with the declared zero tie for max and min."""
    axes = tuple(range(a.ndim)) if axis is None else (axis % a.ndim,)
    d = declared(ft.explain(getattr(ft, name), ft.asarray(a), axis=axis).kernel)
    assert not isinstance(d, str) or name != "sum", d
    kept = [1 if i in axes else n for i, n in enumerate(a.shape)]
    shape = kept if keepdims else [n for i, n in enumerate(a.shape) if i not in axes]
    table = rows(a, axes)
    if name == "sum":
        assert not isinstance(d, str)
        bits = simulate(table, d, a.dtype)
    else:
        bits = selected(table, a.dtype, name == "max", "lhs")
    return np.asarray(bits).reshape(shape).view(Contract)


def check(call: Callable[[], Any], want: Any = None) -> None:
    """The compiled call (twice: the second reads what the first remembered) and the Python path
    agree; `want`, NumPy's array by the test's rules (a planned reduction's: `Contract`), is the
    result when given."""
    slow = outcome(lambda: traced(call))
    for _ in range(2):
        assert outcome(call) == slow
    if want is not None:
        assert slow[0] == "ok", slow
        loose = isinstance(want, Contract)
        want = np.asarray(want)
        assert (slow[1][0].np, slow[1][1]) == (want.dtype, want.shape)
        if not loose:
            assert slow[1][3] == want.tobytes()
            return
        got = np.frombuffer(slow[1][3], want.dtype)
        bits = f"u{want.dtype.itemsize}"
        same = got.view(bits) == want.reshape(-1).view(bits)
        nan = np.isnan(got.astype(np.float64)) & np.isnan(want.reshape(-1).astype(np.float64))
        assert np.all(same | nan), (got, want)


def _f32(a: np.ndarray) -> np.ndarray:
    """The array a reduction or product computes on: float32 for the half types."""
    return a.astype(np.float32) if a.dtype in HALVES else a


def _back(result: Any, dtype: np.dtype) -> np.ndarray:
    """A float32 result of a half-type computation rounded to that half type."""
    r = np.asarray(result)
    return r.astype(dtype) if dtype in HALVES else r


def expected(name: str, a: np.ndarray) -> np.ndarray | None:
    """NumPy's result of reduction `name` over every axis of `a` (None: an error is expected),
    by the array API's rules as this test states them."""
    if a.dtype.kind == "c" or (a.size == 0 and name in ("max", "min")):
        return None
    if planned(name, a.dtype):
        return contract(name, a, None, False)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if name == "sum":
            acc = {"b": np.int64, "i": np.int64, "u": np.uint64}.get(a.dtype.kind, np.float32)
            acc = a.dtype if a.dtype.kind == "f" and a.dtype not in HALVES else acc
            return _back(np.add.reduce(_f32(a), axis=None, dtype=acc), a.dtype)
        if name in ("max", "min"):
            return _back(getattr(np, name)(_f32(a)), a.dtype).astype(a.dtype)
        return np.asarray(getattr(np, name)(a))


REDUCTIONS = ["sum", "max", "min", "any", "all"]
"""The ruled reductions (mean, var and std compose planned steps: test_reduce_compositions.py)."""


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reductions_are_the_python_path(name: str, dtype: Any) -> None:
    for specials in (True, False):
        for x in views(sample(dtype, hash((name, str(dtype))) % 2**32, specials=specials)):
            want = expected(name, np.asarray(x))
            check(lambda x=x: getattr(ft, name)(x), want)
            check(lambda x=x: getattr(x, name)(), want)


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.bool_])
def test_zero_d_and_empty_reductions_are_the_python_path(name: str, dtype: Any) -> None:
    """A 0-d tensor reduces over no axis; an empty one gives the identity or the Python path's
    error (max, min)."""
    for shape in ((), (1,), (0,), (2, 0)):
        x = ft.asarray(sample(dtype, 7, shape))
        check(lambda x=x: getattr(ft, name)(x), expected(name, np.asarray(x)))
        check(lambda x=x: getattr(x, name)())


def test_empty_and_nan_reductions_warn_nothing() -> None:
    """A mean of nothing is NaN said by value, with no "Mean of empty slice" warning (its
    composition's divide step gives 0 / 0 quietly), nor an overflowing sum one."""
    calls = [lambda: ft.mean(ft.asarray(np.zeros((0, 2), np.float32)))]
    calls.append(lambda: ft.asarray(np.zeros(0, np.float64)).mean())
    calls.append(lambda: ft.sum(ft.asarray(np.array([np.inf, -np.inf], np.float32))))
    for call in calls:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                call()
        assert caught == []


def test_extrema_of_signed_zeros_and_nans_are_the_contracts() -> None:
    """max/min of the float formats are their contracts' (the left fold of the binary maximum
    and minimum): a NaN anywhere is the result; of ±0 the first zero."""
    payload = np.array([0x7FC00001, 0x7FC00002], np.uint32).view(np.float32)
    cases = [
        np.array([-0.0, 0.0], np.float32),
        np.array([0.0, -0.0], np.float32),
        np.array([1.0, payload[0], payload[1], 5.0], np.float32),
        np.array([payload[1], -np.inf], np.float32),
    ]
    for a in cases:
        for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
            with np.errstate(all="ignore"):
                x = ft.asarray(a.astype(dtype))
            for name in ("max", "min"):
                check(lambda x=x, n=name: getattr(ft, n)(x), expected(name, np.asarray(x)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_sums_round_as_their_contracts_order(dtype: Any) -> None:
    """A sum long enough for several blocks, of values whose order matters, is the contract's
    blocked order bit for bit, no longer NumPy's pairwise add.reduce (the float sums plan
    their contracts now); a half type's is accumulated in float32 and rounded once."""
    rng = np.random.default_rng(11)
    scale = 10.0 ** rng.integers(-3, 3, 1001)
    a = (rng.standard_normal(1001) * scale + 1.0).astype(np.float32).astype(dtype)
    for x in views(a.reshape(7, 143)):
        b = np.asarray(x)
        check(lambda x=x: ft.sum(x), expected("sum", b))


CASTS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint16, np.int64]
CASTS += [np.bool_, np.complex128]


@pytest.mark.parametrize("source", DTYPES, ids=lambda d: np.dtype(d).name)
def test_astype_is_the_python_path(source: Any) -> None:
    for x in views(sample(source, 3)):
        for target in CASTS:
            dt = from_numpy(np.dtype(target))
            a = np.asarray(x)
            real = a.dtype.kind == "c" and np.dtype(target).kind != "c"
            with np.errstate(all="ignore"):
                want = None if real else np.ascontiguousarray(a.astype(target))
            check(lambda x=x, d=dt: ft.astype(x, d), want)
            check(lambda x=x, d=dt: x.astype(d), want)


def test_astype_by_name_and_keywords_take_the_python_path() -> None:
    x = ft.asarray(sample(np.float32, 4))
    for call in (
        lambda: ft.astype(x, "float64"),
        lambda: ft.astype(x, ft.float32, copy=False),
        lambda: x.astype(np.float64),
        lambda: x.astype(ft.float16, "C"),
        lambda: x.astype(ft.int8, casting="same_kind"),
        lambda: ft.astype(x, ft.float64, device="gpu"),
    ):
        check(call)
    assert ft.astype(x, ft.float32, copy=False) is x


MATMUL_SHAPES = [
    ((4,), (4,)),
    ((3, 4), (4, 2)),
    ((4,), (4, 3)),
    ((2, 4), (4,)),
    ((2, 3, 4), (4, 2)),
]
MATMUL_SHAPES += [((3,), (4,)), ((2, 3), (2, 3)), ((0,), (0,)), ((2, 0), (0, 3))]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_matmul_is_the_python_path(dtype: Any) -> None:
    for s1, s2 in MATMUL_SHAPES:
        a, b = sample(dtype, 5, s1, specials=False), sample(dtype, 6, s2, specials=False)
        x, y = ft.asarray(a), ft.asarray(b)
        chains = s1[-1] == (s2[0] if len(s2) == 1 else s2[-2])
        want = None if not chains else _back(np.matmul(_f32(a), _f32(b)), np.dtype(dtype))
        check(lambda x=x, y=y: ft.matmul(x, y), want)
        check(lambda x=x, y=y: x @ y, want)
    base = sample(dtype, 8, (4, 4))
    for v in views(base):
        for w in views(base.T.copy()):
            if v.ndim == w.ndim == 2:
                check(lambda v=v, w=w: ft.matmul(v, w))


def test_mixed_dtypes_scalars_and_0d_take_the_python_path() -> None:
    x = ft.asarray(sample(np.float32, 1, (4,)))
    d = ft.asarray(sample(np.float64, 2, (4,)))
    s = ft.asarray(np.float32(2))
    for call in (lambda: ft.matmul(x, d), lambda: x @ 2.0, lambda: ft.matmul(s, s)):
        check(call)


def test_errors_are_the_python_paths() -> None:
    empty = ft.asarray(np.zeros((0, 3), np.float32))
    c = ft.asarray(np.ones(3, np.complex64))
    x = ft.asarray(np.ones((2, 3), np.float32))
    for call in (
        lambda: ft.max(empty),
        lambda: empty.min(),
        lambda: ft.astype(c, ft.float32),
        lambda: ft.matmul(x, x),
        lambda: x @ x,
        lambda: ft.sum("a"),
        lambda: ft.matmul(x, "a"),
        lambda: ft.astype(x, "no such dtype"),
    ):
        slow = outcome(lambda c=call: traced(c))
        assert slow[0] == "error" and outcome(call) == slow
    with pytest.raises(TypeError):
        ft.sum(x, x)  # the Python function's own arity error
    for call in (lambda: ft.max(empty), lambda: empty.min(axis=0), lambda: ft.max(empty.T, axis=1)):
        with pytest.raises(ValueError, match=r"of no elements has no value: x of shape \(") as e:
            call()
        assert "zero-size" not in str(e.value)
    assert ft.max(empty, axis=1).shape == (0,)  # nothing reduced over no element


AXES: list[dict[str, Any]] = [
    {"axis": 0},
    {"axis": -1},
    {"axis": 1, "keepdims": True},
    {"keepdims": True},
    {"axis": None, "keepdims": False},
    {"axis": 2},
    {"axis": -3},
]
"""Keywords a compiled reduction takes (an axis out of range: the Python path's AxisError)."""


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reductions_along_an_axis_are_the_python_path(name: str, dtype: Any) -> None:
    base = sample(dtype, hash((name, str(dtype), 1)) % 2**32)
    for x in [*views(base), ft.asarray(base[:, :0]), ft.asarray(base[:0])]:
        for kw in AXES:
            a = np.asarray(x)
            over = kw.get("axis")
            want = None
            if (over is None or -a.ndim <= over < a.ndim) and a.dtype.kind != "c":
                extent = a.size if over is None else a.shape[over]
                if extent or name not in ("max", "min"):
                    keep = kw.get("keepdims", False)
                    want = (
                        contract(name, a, over, keep)
                        if planned(name, a.dtype)
                        else _along(name, a, over, keep)
                    )
            check(lambda x=x, kw=kw: getattr(ft, name)(x, **kw), want)
            check(lambda x=x, kw=kw: getattr(x, name)(**kw), want)


def _along(name: str, a: np.ndarray, axis: int | None, keepdims: bool) -> np.ndarray:
    """NumPy's reduction `name` of `a` along `axis` by the test's rules (as `expected`)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if name == "sum":
            acc = {"b": np.int64, "i": np.int64, "u": np.uint64}.get(a.dtype.kind, np.float32)
            acc = a.dtype if a.dtype.kind == "f" and a.dtype not in HALVES else acc
            r = np.add.reduce(_f32(a), axis=axis, dtype=acc, keepdims=keepdims)
        elif name in ("any", "all"):
            return np.asarray(getattr(np, name)(a, axis=axis, keepdims=keepdims))
        else:
            fn = {"max": np.max, "min": np.min}[name]
            r = np.asarray(fn(_f32(a), axis=axis, keepdims=keepdims))
            r = r if a.dtype in HALVES else r.astype(a.dtype)
        return _back(r, a.dtype)


def test_other_keywords_take_the_python_path() -> None:
    x = ft.asarray(sample(np.float32, 9))
    out = ft.asarray(np.zeros((), np.float32))
    for call in (
        lambda: ft.sum(x, axis=(0, 1)),
        lambda: ft.sum(x, axis=np.int64(0)),
        lambda: ft.sum(x, dtype=ft.float64),
        lambda: ft.sum(x, dtype=None),
        lambda: ft.max(x, keepdims=1),
        lambda: ft.mean(x, axis=True),
        lambda: ft.max(x, axis=2**70),
        lambda: ft.any(x, out=out),
        lambda: ft.astype(x, ft.float64, copy=True),
        lambda: x.sum(0),
        lambda: x.mean(None, ft.float64),
        lambda: x.max(out=out),
        lambda: x.sum(axis=1, dtype=ft.float64),
    ):
        check(call)


@pytest.mark.parametrize("state", ["raise", "warn"])
def test_the_callers_error_state_is_silenced_and_kept(state: str) -> None:
    """NumPy's warnings are not raised (overflowing sums, an sNaN cast, a 0 * inf product), and
    the caller's error state comes back unchanged. Under "warn" a warning is recorded, where a
    raise would be caught by the compiled call's fallback to the Python path."""
    huge = ft.asarray(np.array([3e38, 3e38], np.float32))
    snan = ft.asarray(np.array([0x7F800001], np.uint32).view(np.float32))
    big = ft.asarray(np.array([1e300], np.float64))
    with np.errstate(all=state), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            assert np.asarray(ft.sum(huge)) == np.inf and np.asarray(huge.mean()) == np.inf
            assert np.asarray(huge.sum(axis=0, keepdims=True)) == np.inf
            assert np.isnan(np.asarray(ft.astype(snan, ft.float64))[0])
            assert np.asarray(big.astype(ft.float32))[0] == np.inf
            assert np.asarray(ft.matmul(huge, huge)) == np.inf
        assert np.geterr()["over"] == state
    assert caught == []


SIGNALING = {
    np.float16: np.array([0x7C01], np.uint16).view(np.float16),
    np.float32: np.array([0x7F800001], np.uint32).view(np.float32),
    np.float64: np.array([0x7FF0000000000001], np.uint64).view(np.float64),
}
"""A signaling NaN of each IEEE type: converting it raises the invalid-operation flag."""


@pytest.mark.parametrize("source", list(SIGNALING), ids=lambda d: np.dtype(d).name)
def test_casts_that_signal_are_silenced_at_any_size_and_layout(source: Any) -> None:
    """A cast skips NumPy's error state only where IEEE 754 says it raises nothing NumPy
    reports (to float32 / float64, from an integer, or from a float no wider with no signaling
    NaN among at most 64 dense elements): a signaling NaN first, last (of 64 and of 65),
    in a strided view, and an integer overflowing float16, warn nothing under
    errstate(all="warn") (a raise would be caught by the compiled call's fallback to the Python
    path: only a warning shows that the error state was not set), and give the Python path's
    bits."""
    snan = SIGNALING[source]
    arrays = [np.concatenate([snan, np.ones(n - 1, source)]) for n in (1, 64, 65)]
    arrays += [np.concatenate([np.ones(n - 1, source), snan]) for n in (64, 65)]
    tensors = [ft.asarray(a) for a in arrays] + [ft.asarray(arrays[-1])[::-2]]
    tensors += [ft.asarray(np.array([70000, -70000, 1], np.int32))]
    tensors += [ft.asarray(np.array([1e300, 1.0], np.float64))]
    with np.errstate(all="warn"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in tensors:
            for target in (ft.float16, ft.float32, ft.float64):
                for _ in range(2):
                    fast = outcome(lambda x=x, t=target: ft.astype(x, t))
                    assert fast == outcome(lambda x=x, t=target: traced(lambda: x.astype(t)))
                    assert fast[0] == "ok"
    assert caught == []


def test_results_are_fresh_tensors_that_alias_nothing() -> None:
    base = np.array([1.0, 2.0, 3.0], np.float32)
    x = ft.asarray(base)
    for r in (ft.astype(x, ft.float32), x.astype(ft.float32), ft.sum(x), ft.matmul(x, x)):
        a = np.asarray(r)
        assert not np.shares_memory(a, base) and a.flags.writeable and a.flags.c_contiguous


def test_a_trace_records_the_host_call() -> None:
    """A float matmul plans its contract (fuel-blas-backend's): the host matmul is an integer's."""
    x = ft.asarray(np.array([1.0, 4.0], np.float32))
    n = ft.asarray(np.array([1, 4], np.int32))
    calls = [lambda: ft.sum(x), lambda: x.max(), lambda: x.astype(ft.int32), lambda: n @ n]
    for call in calls:
        call()
    with ft.trace() as plans:
        for call in calls:
            call()
    assert [p.op for p in plans] == ["sum", "max", "astype", "matmul"]
    # a float sum and max plan their contracts (engine.reduce); the other two are host calls
    assert [p.kernel is None for p in plans] == [False, False, True, True]
    assert all(p.steps[0].kind.name == "HOST" for p in plans[2:])
    assert ft.explain(ft.any, x).op == "any"


def test_the_compiled_functions_look_like_the_python_ones() -> None:
    for fn in (ft.sum, ft.any, ft.astype, ft.matmul, ft.FuelTensor.sum):
        assert fn.__doc__ and "compiled" in repr(fn)
        assert pickle.loads(pickle.dumps(fn)) is fn
    assert ft.any.__fueltensor_host__ and ft.sum.__fueltensor_op__ == "sum"
    assert list(inspect.signature(ft.sum).parameters) == [
        "x",
        "axis",
        "dtype",
        "keepdims",
    ]
    assert list(inspect.signature(ft.FuelTensor.astype).parameters)[:2] == ["self", "dtype"]
    assert ft.FuelTensor.max.__name__ == "max"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.int8, np.bool_])
def test_a_repeated_call_runs_no_python(dtype: Any) -> None:
    """Once a call's result dtype was seen, each of these is one C call: no Python frame of
    fueltensor's (the Python function runs only where the compiled call declines: a cast from
    a float format, which plans a cast contract, `engine.cast`)."""
    x, y = ft.asarray(sample(dtype, 3, (4,))), ft.asarray(sample(dtype, 4, (4,)))
    hosted = [n for n in REDUCTIONS if not planned(n, dtype)]  # planned ones run Python
    calls: list[Callable[[], Any]] = [lambda n=n: getattr(ft, n)(x) for n in hosted]
    calls += [lambda n=n: getattr(x, n)() for n in hosted]
    # a float matmul plans its contracts (`engine.contract`): the Python path
    calls += [] if np.dtype(dtype) in FLOATS else [lambda: ft.matmul(x, y), lambda: x @ y]
    calls += [lambda: ft.any(x, axis=0, keepdims=True)]
    calls += [] if planned("max", dtype) else [lambda: x.max(axis=-1)]
    for call in calls:
        call()
        assert python_calls(call) == []
    with ft.trace():
        assert "sum" in python_calls(lambda: x.sum())


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from([*REDUCTIONS, "astype", "matmul"]),
    dtype=st.sampled_from(DTYPES),
    shape=st.sampled_from([(), (1,), (4,), (2, 3), (0, 2), (2, 1, 3), (5, 7)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_shape_is_the_python_path(name: str, dtype: Any, shape: Any, seed: int) -> None:
    x = ft.asarray(sample(dtype, seed, shape))
    if name == "astype":
        check(lambda: ft.astype(x, ft.float32))
    elif name == "matmul":
        y = ft.asarray(sample(dtype, seed + 1, shape[::-1]))
        check(lambda: ft.matmul(x, y))
    else:
        check(lambda: getattr(ft, name)(x), expected(name, np.asarray(x)))
