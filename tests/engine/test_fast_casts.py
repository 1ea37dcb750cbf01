"""Plans with a Cast step (mixed dtypes) on the compiled fast path: the operand cast by the
`astype` call `execute.prepare` makes, then the kernel, with the Python path's bits, dtype,
shape, warnings and errors.

The Python path is what runs inside `ft.trace()` (the fast path stands aside while a trace
watches), so each case is computed both ways and compared bit for bit."""

from __future__ import annotations

import warnings
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _modes import NATIVE_FAST_PATH
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.engine import dispatch

pytestmark = pytest.mark.skipif(
    dispatch._FAST is None, reason="the compiled fast path is not built here"
)

OPS = ["add", "subtract", "multiply", "divide", "remainder", "pow", "maximum", "minimum"]
FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16]
OTHERS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.bool_]
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-30, 7.25, 70000.0, 1e300]


def values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values with special values mixed in (out-of-range ones for the narrow dtypes,
    whose casts overflow), in `dtype`."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    mixed = np.where(rng.random(n) < 0.3, rng.choice(SPECIALS, n), rng.standard_normal(n) * 50)
    if not np.issubdtype(np.dtype(dtype), np.inexact) and dtype is not ml_dtypes.bfloat16:
        info = np.iinfo(dtype) if dtype is not np.bool_ else None
        lo, hi = (0, 1) if info is None else (info.min, info.max)
        mixed = np.clip(np.nan_to_num(mixed), lo, hi)
    with np.errstate(all="ignore"):
        return mixed.astype(dtype).reshape(shape)


def outcome(fn: Any) -> tuple[str, Any]:
    """What `fn()` gives: ("ok", (dtype, shape, bytes)) or ("error", (type, message))."""
    try:
        got = fn()
    except Exception as e:  # the Python path's errors, warnings made errors among them
        return "error", (type(e), str(e))
    return "ok", (got.dtype, got.shape, np.asarray(got).tobytes())


def check(op: str, a: Any, b: Any) -> None:
    """The fast path serves `op(a, b)` once its plan is cached, as the Python path computes it."""

    def slow() -> ft.FuelTensor:
        with ft.trace() as plans:
            result: ft.FuelTensor = getattr(ft, op)(a, b)
        assert any(s.kind.value == "Cast" for s in plans[0].steps), plans[0]
        return result

    def fast() -> ft.FuelTensor:
        served = dispatch._FAST(op, a, b)
        assert served is not None, (op, a.dtype, b.dtype)
        return served

    want = outcome(slow)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        getattr(ft, op)(a, b)  # caches the plan
    assert outcome(fast) == want


LAYOUTS = {
    "dense": lambda t: t,
    "strided": lambda t: t[:, ::2],
    "offset": lambda t: t[1:, 2:],
    "flipped": lambda t: ft.flip(t, axis=1),
    "transposed": lambda t: t.T,
    "row": lambda t: t[1],
    "0-d": lambda t: t[2, 3],
    "empty": lambda t: t[:, :0],
    "broadcast": lambda t: ft.broadcast_to(t[0], (3, 6)),
}
"""Views of a 4×6 tensor, on either side of a mixed-dtype operation."""


@st.composite
def cases(draw: st.DrawFn) -> tuple[str, Any, Any]:
    """An op on a float tensor and a tensor of another dtype (either side), in any layouts."""
    op = draw(st.sampled_from(OPS))
    first = draw(st.sampled_from(FLOATS))
    second = draw(st.sampled_from([d for d in FLOATS + OTHERS if d is not first]))
    a = LAYOUTS[draw(st.sampled_from(sorted(LAYOUTS)))]
    b = LAYOUTS[draw(st.sampled_from(sorted(LAYOUTS)))]
    x = a(ft.asarray(values(first, (4, 6), draw(st.integers(0, 2**32 - 1)))))
    base = ft.asarray(values(second, (4, 6), draw(st.integers(0, 2**32 - 1))))
    y = b(base)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        y = base[3, 1]
    return (op, x, y) if draw(st.booleans()) else (op, y, x)


@NATIVE_FAST_PATH
@settings(max_examples=300, deadline=None)
@given(cases())
def test_mixed_dtypes_are_the_python_path_bit_for_bit(case: tuple[str, Any, Any]) -> None:
    check(*case)


@NATIVE_FAST_PATH
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("first", FLOATS)
def test_every_dtype_pair(op: str, first: Any) -> None:
    for second in FLOATS + OTHERS:
        if second is first:
            continue
        x = ft.asarray(values(first, (4, 6), 1))
        y = ft.asarray(values(second, (4, 6), 2))
        check(op, x, y)
        check(op, y.T, x.T)


@NATIVE_FAST_PATH
def test_cast_warnings_are_the_python_paths() -> None:
    big = ft.asarray(np.array([70000, -3, 1], np.int32))  # over float16's range
    half = ft.asarray(np.ones(3, np.float16))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check("add", big, half)
    with np.errstate(all="raise"):
        check("multiply", half, big)
    wide = ft.asarray(np.array([1e300, 1.0, -0.0]))
    check("maximum", wide, half)


@NATIVE_FAST_PATH
def test_an_inplace_cast_is_the_python_path() -> None:
    for target_dtype, other in ((np.float64, np.float32), (np.float32, np.float16)):
        runs = []
        for traced in (True, False):
            x = ft.asarray(values(target_dtype, (4, 6), 3))
            y = ft.asarray(values(other, (4, 6), 4))
            x[::2] - y[1::2]
            if traced:
                with ft.trace():
                    x[::2] -= y[1::2]
            else:
                assert dispatch._FAST_INPLACE("subtract", x[::2], y[1::2]) is not None
            runs.append(np.asarray(x).tobytes())
        assert runs[0] == runs[1]
