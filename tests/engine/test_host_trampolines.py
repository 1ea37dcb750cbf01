"""Host element-wise functions as one compiled call (`_fast.host`): the Python host path's
result bit for bit (and NumPy's ufunc on the same arrays), its errors, its silenced error state,
and its trace record (while a trace is active the Python function runs and records itself)."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _fastpath import outcome, python_calls
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core.errstate import ERRSTATE
from fueltensor.engine import dispatch
from fueltensor.kernels._chassis import IMPLEMENTATION

pytestmark = pytest.mark.skipif(
    dispatch._FAST_MODULE is None or ERRSTATE is None, reason="no compiled host calls here"
)

UFUNCS: dict[str, np.ufunc] = {
    "log2": np.log2,
    "expm1": np.expm1,
    "log10": np.log10,
    "abs": np.absolute,
    "negative": np.negative,
    "tan": np.tan,
    "floor": np.floor,
    "isnan": np.isnan,
    "signbit": np.signbit,
    "square": np.square,
    "greater": np.greater,
    "equal": np.equal,
    "less_equal": np.less_equal,
    "not_equal": np.not_equal,
    "logaddexp": np.logaddexp,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "copysign": np.copysign,
}
"""The functions checked, and the NumPy ufunc the array API names for each."""
UNARY = [name for name, u in UFUNCS.items() if u.nin == 1]
BINARY = [name for name, u in UFUNCS.items() if u.nin == 2]
DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8, np.bool_]
SCALARS = [0, -3, 2**70, True, 0.5, -0.0, float("nan"), float("inf"), 1e300]
"""Python scalars beside a tensor: weak (the tensor's dtype), or out of its range."""
VALUES = [0.0, -0.0, 1.5, -2.25, 3.0, np.inf, -np.inf, np.nan, 1e-3, 7.0, -1.0, 100.0]


def sample(dtype: Any, seed: int, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    """Values of `dtype` (specials among them for float dtypes), silently cast."""
    rng = np.random.default_rng(seed)
    with np.errstate(all="ignore"):
        return rng.choice(VALUES, shape).astype(dtype)


def views(base: np.ndarray) -> list[ft.FuelTensor]:
    """A dense tensor, its row, a strided view and a transposed view (views get their NumPy
    array from the Python path's first call, then run compiled)."""
    x = ft.asarray(base)
    return [x, x[1], x[:, ::2], x.T]


def python_path(name: str, *args: Any) -> Any:
    """The namespace function on the Python path (a trace keeps the trampoline aside), and
    what the trace recorded."""
    with ft.trace() as plans:
        result = getattr(ft, name)(*args)
    return result, plans


def check(name: str, *args: Any) -> None:
    """The compiled call and the Python path agree (result bits, dtype, layout, or the error);
    a result is NumPy's ufunc on the operands' arrays."""
    slow = outcome(lambda: python_path(name, *args)[0])
    fast = outcome(lambda: getattr(ft, name)(*args))
    assert fast == slow, (name, args)
    if fast[0] == "ok" and all(isinstance(a, ft.FuelTensor) for a in args):
        arrays = [np.asarray(a) for a in args]
        if len({a.dtype for a in arrays}) == 1:
            with np.errstate(all="ignore"):
                want = {**UFUNCS, "where": np.where}[name](*arrays)
            assert np.asarray(want).tobytes() == fast[1][3]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unary_functions_are_the_python_path(name: str, dtype: Any) -> None:
    for x in views(sample(dtype, hash((name, str(dtype))) % 2**32)):
        for _ in range(2):  # the second call reads the view's array the first made
            check(name, x)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_binary_functions_are_the_python_path(name: str, dtype: Any) -> None:
    a, b = sample(dtype, 1), sample(dtype, 2)
    for x, y in zip(views(a), views(b), strict=True):
        for other in (y, 0, 2.5, True, -1, 300):
            check(name, x, other)
    check(name, ft.asarray(a), ft.asarray(b.astype(np.float64)))  # mixed dtypes: promoted


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(UNARY + BINARY),
    dtype=st.sampled_from(DTYPES),
    shape=st.sampled_from([(), (1,), (4,), (2, 3), (0, 2), (2, 1, 3)]),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_shape_is_the_python_path(name: str, dtype: Any, shape: Any, seed: int) -> None:
    x = ft.asarray(sample(dtype, seed, shape))
    args = (x,) if name in UNARY else (x, ft.asarray(sample(dtype, seed + 1, shape)))
    check(name, *args)
    check(name, *args)


def test_a_trace_records_the_host_call() -> None:
    x = ft.asarray(np.array([1.0, 4.0], np.float32))
    ft.log2(x)
    ft.hypot(x, 0)
    with ft.trace() as plans:
        ft.log2(x)
        ft.hypot(x, 0)
    assert [p.op for p in plans] == ["log2", "hypot"]
    assert all(p.kernel is None and p.steps[0].kind.name == "HOST" for p in plans)
    assert ft.explain(ft.log2, x).op == "log2"


def test_the_callers_error_state_is_silenced_and_kept() -> None:
    """NumPy warnings are not raised (results are IEEE values, as on the Python path), and the
    caller's error state comes back unchanged: on dense operands (NumPy's trivial loop, run in
    C) and on a strided view (the ufunc call, under the all-ignore error state)."""
    x = ft.asarray(np.array([-1.0, 0.0], np.float64))
    strided = ft.asarray(np.array([-1.0, 5.0, 0.0], np.float64))[::2]
    with np.errstate(all="raise"):
        for _ in range(2):
            for t in (x, strided):
                assert np.isnan(np.asarray(ft.log2(t))[0])
                assert np.asarray(ft.log10(t))[1] == -np.inf
                assert np.geterr()["invalid"] == "raise"
    with pytest.raises(FloatingPointError), np.errstate(all="raise"):
        np.log2(np.asarray(x))


def test_results_are_fresh_tensors_that_alias_nothing() -> None:
    base = np.array([1.0, 2.0, 3.0], np.float32)
    x = ft.asarray(base)
    for r in (ft.positive(x), ft.positive(x)):
        assert not np.shares_memory(np.asarray(r), base)
        assert np.asarray(r).flags.writeable and r._layout == ft.asarray(base)._layout


def test_errors_are_the_python_paths() -> None:
    i8 = ft.asarray(np.array([1, 2, 3], np.int8))
    for call in (lambda: ft.greater(i8, 300), lambda: ft.log2("a"), lambda: ft.equal(i8, "a")):
        slow = outcome(lambda c=call: python_path_of(c))
        assert outcome(call) == slow and slow[0] == "error"
    with pytest.raises(TypeError):
        ft.log2(i8, i8)  # the Python function's own arity error


def python_path_of(call: Any) -> Any:
    with ft.trace():
        return call()


def test_the_compiled_functions_look_like_the_python_ones() -> None:
    for name in ("log2", "hypot"):
        fn = getattr(ft, name)
        assert fn.__name__ == name and fn.__doc__ and fn.__fueltensor_host__
        assert list(inspect.signature(fn).parameters) == (["x"] if name == "log2" else ["x1", "x2"])
        assert pickle.loads(pickle.dumps(fn)) is fn


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.int64])
def test_a_repeated_call_runs_no_python(dtype: Any) -> None:
    """Once a call's result dtype and shape were seen, a host call is one C call: no Python
    frame (the host function runs only where the trampoline declines). The comparisons too,
    where a compiled contract kernel serves them (the float dtypes: the fast path runs their
    cached plans; the pure-NumPy kernels run on the Python path)."""
    x, y = ft.asarray(sample(dtype, 3)), ft.asarray(sample(dtype, 4))
    calls: tuple[Any, ...] = (
        lambda: ft.log2(x),
        lambda: ft.hypot(x, y),
        lambda: ft.copysign(x, 1),
    )
    if np.dtype(dtype) != np.int64 and IMPLEMENTATION == "native":  # the compiled comparisons
        calls += (lambda: ft.greater(x, y), lambda: ft.equal(x, 1), lambda: x > y, lambda: x == 1)
    for call in calls:
        call()
        assert python_calls(call) == []
    with ft.trace():
        assert "operation" in python_calls(lambda: ft.log2(x))


OPERATORS: dict[str, Any] = {
    "greater": lambda a, b: a > b,
    "less_equal": lambda a, b: a <= b,
    "equal": lambda a, b: a == b,
    "not_equal": lambda a, b: a != b,
    "bitwise_and": lambda a, b: a & b,
    "floor_divide": lambda a, b: a // b,
}
"""Host operators `x op y` and the namespace function each stands for."""


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int16, np.bool_, ml_dtypes.bfloat16])
def test_host_operators_are_their_namespace_functions(name: str, dtype: Any) -> None:
    """`x op y` gives the namespace function's result (or error), on the Python path (traced)
    and compiled, for tensors, Python scalars and NumPy operands."""
    op = OPERATORS[name]
    for x, y in zip(views(sample(dtype, 5)), views(sample(dtype, 6)), strict=True):
        for other in (y, 0, 2.5, True, np.asarray(y), np.float32(2)):
            want = outcome(lambda o=other, x=x: getattr(ft, name)(x, o))
            assert outcome(lambda o=other, x=x: op(x, o)) == want, (name, other)
            with ft.trace() as plans:
                traced = outcome(lambda o=other, x=x: op(x, o))
            assert traced == want
            assert want[0] == "error" or [p.op for p in plans] == [name]


def test_host_operators_keep_python_operator_semantics() -> None:
    """Operands the operator does not take still get NotImplemented (Python's own fallback)."""
    x = ft.asarray(np.array([1.0, 2.0], np.float32))
    assert (x == "a") is False and (x != "a") is True
    with pytest.raises(TypeError, match="'>' not supported between instances of 'FuelTensor'"):
        x > "a"  # noqa: B015
    assert (x == None) is False  # noqa: E711


def test_host_operators_call_the_namespace_function_bound_now(monkeypatch: Any) -> None:
    """`x == y` calls whatever `fueltensor.equal` is at the time of the call (as the Python
    operator method's attribute lookup does), not the function bound at import."""
    x = ft.asarray(np.array([1.0, 2.0], np.float32))
    calls: list[tuple[Any, Any]] = []
    real = ft.equal

    def spy(a: Any, b: Any) -> Any:
        calls.append((a, b))
        return real(a, b)

    x == x  # noqa: B015
    monkeypatch.setattr(ft, "equal", spy)
    assert np.asarray(x == 2.0).tolist() == [False, True]
    assert calls == [(x, 2.0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_where_is_the_same_traced_or_not(dtype: Any) -> None:
    """`where(c, x1, x2)` (a bool tensor and two tensors of one dtype, broadcast, or a tensor
    and a Python scalar; a contract operation for the floats, a host one for the rest) traced
    and not: the same result, NumPy's where's bits, or the same error (a condition that is not
    bool, an int no dtype holds, two scalars)."""
    cond = ft.asarray(sample(np.float32, 7) > 1.0)
    a, b = sample(dtype, 8), sample(dtype, 9)
    for c, x, y in zip(views(np.asarray(cond)), views(a), views(b), strict=True):
        for args in ((c, x, y), (c, x, ft.asarray(b)[0]), (x, x, y), (c, x, y[..., :1])):
            for _ in range(2):
                check("where", *args)
        for scalar in SCALARS:  # a weak Python scalar in either place, beside a tensor
            for args in (
                (c, x, scalar),
                (c, scalar, y),
                (c, scalar, ft.asarray(b)[0, 0]),
                (c, scalar, 1.5),
            ):
                for _ in range(2):
                    check("where", *args)
        want = np.where(np.asarray(c), np.asarray(x), np.asarray(y))
        assert np.asarray(ft.where(c, x, y)).tobytes() == want.tobytes()
    mixed = (cond, ft.asarray(a), ft.asarray(b.astype(np.float64)))
    check("where", *mixed)


@pytest.mark.parametrize("name", ["log2", "any"])
def test_a_fresh_views_call_makes_its_array_and_runs_compiled(name: str) -> None:
    """A basic-index view made in C has no NumPy array yet (its slot holds None): a host call
    (sqrt) or a ruled one (any: scipy's is_lazy_array calls any(x[0]); a float sum plans
    its contract now, `engine.reduce`, and a mean composes planned steps) makes it through
    `_array`, which keeps it, and runs compiled (no host function frame), with the Python
    path's result."""
    x = ft.asarray(sample(np.float64, 5))
    getattr(ft, name)(x[0])  # the result's DType and shape seen once
    view = x[1]
    entered = python_calls(lambda: getattr(ft, name)(view))
    assert entered[0] == "_array" and "operation" not in entered, entered
    assert view._np is not None
    for row in (x[2], x[:, 1], x.T[3]):
        assert outcome(lambda row=row: getattr(ft, name)(row)) == outcome(
            lambda row=row: python_path(name, row)[0]
        )
