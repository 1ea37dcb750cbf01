"""What the ruled host calls (`_fast.ruled`) run themselves rather than through NumPy's call:
the matmul loop, and a cast's copy of a number type to itself.

For operands of one or two dimensions, aligned, of one dtype computed as it is (no cast first),
the compiled `matmul` makes the one loop call NumPy's gufunc call would make (the loop NumPy
resolves, its core sizes and strides), and sets no error state. A cast of a row-major tensor
to its own built-in number type copies its bytes, as NumPy's cast does. Each must still be the
Python path in every way a caller can see: the bits (NaN payloads and signaling NaNs, signed
zeros, infinities, overflowing and subnormal products; NumPy's matmul loop picks BLAS or its own
sums from the strides, so views matter), dtype, shape and layout; no warning and no exception
under any error state, which it leaves unchanged; the same floating-point status flags (NumPy
clears the four it checks before its matmul loop and, silenced, leaves what the loop raised; its
copy clears nothing).
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _fastpath import outcome, traced
from _fpstatus import ALL, FE, flags_after

import fueltensor as ft
from fueltensor.array_api._host import ruled_host
from fueltensor.array_api.linear_algebra import _product
from fueltensor.core.errstate import ERRSTATE
from fueltensor.engine import dispatch

pytestmark = pytest.mark.skipif(
    dispatch._FAST_MODULE is None or ERRSTATE is None, reason="no compiled host calls here"
)

FLOATS = [np.float32, np.float64]
HALVES = [np.float16, ml_dtypes.bfloat16]


def pool(dtype: Any) -> np.ndarray:
    """Values whose products are special: both zeros and infinities, a quiet NaN with a payload
    and a negative signaling one, the smallest and largest subnormals, the largest finite
    value."""
    info = ml_dtypes.finfo(dtype)
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nans = np.array([math.inf, -math.inf], dtype).view(bits)
    nans |= np.array([(1 << (info.nmant - 1)) | 0x15, 3], bits)
    subnormal = float(info.smallest_subnormal)
    plain = [0.0, -0.0, math.inf, -math.inf, subnormal, float(info.smallest_normal) - subnormal]
    return np.concatenate([np.array([*plain, float(info.max)], dtype), nans.view(dtype)])


def values(dtype: Any, seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """Random values of `dtype` whose products range from underflowing to overflowing, about
    one in seven replaced by a special value (`pool`)."""
    rng = np.random.default_rng(seed)
    info = ml_dtypes.finfo(dtype)
    low = math.log10(float(info.smallest_subnormal)) / 2 - 1
    high = math.log10(float(info.max)) / 2 + 1
    a = rng.standard_normal(shape) * 10.0 ** rng.uniform(low, high, shape)
    with np.errstate(all="ignore"):
        a = a.astype(dtype)
    special = pool(dtype)
    where = rng.random(shape) < 0.15
    a[where] = special[rng.integers(0, len(special), int(where.sum()))]
    return a


VIEWS: dict[str, tuple[Callable[[tuple[int, ...]], tuple[int, ...]], Callable[[Any], Any]]] = {
    "dense": (lambda s: s, lambda t: t),
    "transposed": (lambda s: s[::-1], lambda t: t.T),
    "strided": (lambda s: (*s[:-1], 2 * s[-1]), lambda t: t[..., ::2]),
    "flipped": (lambda s: s, lambda t: t[::-1]),
    "offset": (lambda s: tuple(n + 1 for n in s), lambda t: t[(slice(1, None),) * t.ndim]),
}
"""A view kind: the base shape that gives a view of shape s, and the view (the same indexing
on a NumPy array and on a tensor)."""


def operand(dtype: Any, seed: int, shape: tuple[int, ...], kind: str) -> tuple[Any, Any]:
    """A NumPy view of random values of `shape` and the same view of a tensor of them."""
    base_shape, view = VIEWS[kind]
    base = values(dtype, seed, base_shape(shape))
    return view(base), view(ft.asarray(base))


def numpys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy's matmul of the arrays, silenced (half types multiplied in float32, rounded
    once), as a dense array."""
    half = a.dtype in (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
    with np.errstate(all="ignore"):
        r = np.matmul(a.astype(np.float32), b.astype(np.float32)) if half else np.matmul(a, b)
        return np.array(np.asarray(r).astype(a.dtype), order="C")


def check(a: np.ndarray, b: np.ndarray, x: ft.FuelTensor, y: ft.FuelTensor) -> None:
    """ft.matmul and `x @ y` (twice each: the second reads the kept loop) are the Python path,
    and its result is NumPy's on the same views, bit for bit, dense."""
    slow = outcome(lambda: traced(lambda: ft.matmul(x, y)))
    for call in (lambda: ft.matmul(x, y), lambda: x @ y) * 2:
        assert outcome(call) == slow
    want = numpys(a, b)
    assert slow[0] == "ok" and slow[1][0].np == want.dtype and slow[1][1] == want.shape
    assert slow[1][3] == want.tobytes() and slow[1][2] == ft.asarray(want)._layout


SHAPES = [((4,), (4,)), ((1,), (1,)), ((7,), (7, 5)), ((6, 7), (7,)), ((3, 4), (4, 2))]
SHAPES += [((1, 4), (4, 1)), ((4, 1), (1, 3)), ((1, 1), (1, 1)), ((1, 9), (9, 6))]
SHAPES += [((5, 9), (9, 1)), ((33, 17), (17, 9)), ((300,), (300,)), ((5, 70), (70,))]
"""Vectors, matrices and their mixes, with extents of 1 (the special cases of NumPy's loop), and
sizes that take BLAS (dot, gemv, gemm) where the strides allow."""


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("s1", "s2"), SHAPES, ids=str)
def test_random_and_special_values_are_numpys_matmul(s1: Any, s2: Any, dtype: Any) -> None:
    for i, k1 in enumerate(VIEWS):
        for j, k2 in enumerate(VIEWS):
            a, x = operand(dtype, 100 * i + j, s1, k1)
            b, y = operand(dtype, 100 * j + i + 7, s2, k2)
            check(a, b, x, y)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint64, np.bool_, np.complex64])
def test_other_dtypes_are_numpys_matmul(dtype: Any) -> None:
    """Integers (wrapping on overflow), bool and complex take the same call with their loop."""
    rng = np.random.default_rng(3)
    imag = 1j if np.dtype(dtype).kind == "c" else 0
    for s1, s2 in SHAPES:
        a = (rng.integers(-300, 300, s1) + imag * rng.integers(-5, 5, s1)).astype(dtype)
        b = (rng.integers(-300, 300, s2) - imag * rng.integers(-5, 5, s2)).astype(dtype)
        check(a, b, ft.asarray(a), ft.asarray(b))


def test_numpys_loop_runs_here_for_one_and_two_dimensions() -> None:
    """A signature is kept once; operands of one or two dimensions run NumPy's loop here; a
    stack, a 0-d operand, operands that do not chain or are empty, mixed dtypes and the half
    types (computed in float32) never look one up."""
    matmul = ruled_host("MATMUL", np.matmul, _product)(ft.matmul)
    f32 = ft.asarray(np.ones((2, 3), np.float32))
    f16 = ft.asarray(np.ones((2, 3), np.float16))
    stack, empty = ft.asarray(np.ones((2, 2, 3), np.float32)), ft.asarray(np.ones((0, 2)))
    for x, y in ((stack, f32.T), (f32, f32), (empty, empty.T), (f16, f16.T), (f32, f32.T.mT)):
        outcome(lambda x=x, y=y: matmul(x, y))
    outcome(lambda: matmul(f32, ft.asarray(np.ones(3))))
    assert matmul.inner_loops == ()
    i8 = ft.asarray(np.ones(3, np.int8))
    matmul(f32, f32.T), matmul(f32[0], f32[1]), matmul(i8, i8)
    kept = ((np.dtype(np.float32),) * 2, (False, False), True)
    assert matmul.inner_loops == (kept, ((np.dtype(np.int8),) * 2, (False, False), True))


@pytest.mark.skipif(not FE, reason="FE_* bits of this machine not listed")
@pytest.mark.parametrize("before", ["none", "all", "inexact"])
@pytest.mark.parametrize("dtype", [*FLOATS, np.int32], ids=lambda d: np.dtype(d).name)
def test_the_status_flags_are_the_python_paths(dtype: Any, before: str) -> None:
    """After a compiled matmul the flags are the Python path's and NumPy's (silenced): the four
    NumPy checks cleared, then what the loop raised (overflowing, invalid, underflowing and
    inexact products)."""
    want = {"none": 0, "all": ALL, "inexact": FE["inexact"]}[before]
    raised = 0
    for seed, (s1, s2) in enumerate(SHAPES):
        a = values(dtype, seed, s1) if dtype in FLOATS else np.full(s1, 2**30, dtype)
        b = values(dtype, seed + 1, s2) if dtype in FLOATS else np.full(s2, 3, dtype)
        x, y = ft.asarray(a), ft.asarray(b)
        fast = flags_after(want, lambda x=x, y=y: ft.matmul(x, y))
        assert fast == flags_after(want, lambda x=x, y=y: x @ y)
        assert fast == flags_after(want, lambda x=x, y=y: traced(lambda: ft.matmul(x, y)))
        with np.errstate(all="ignore"):
            assert fast == flags_after(want, lambda a=a, b=b: np.matmul(a, b))
        raised |= flags_after(0, lambda x=x, y=y: ft.matmul(x, y))
    assert raised == (ALL & ~FE["divbyzero"] if dtype in FLOATS else 0)  # the values do raise


def test_no_error_state_reaches_numpys_loop() -> None:
    """Under `raise` and `call` error states, no exception and no call for products that
    overflow and are invalid: the Python path's silence; the caller's state is unchanged."""
    huge = np.array([3e38, np.inf, 2.0], np.float32)
    zero = np.array([3e38, 0.0, 1e-30], np.float32)
    x, y = ft.asarray(huge), ft.asarray(zero)
    grid = ft.asarray(np.stack([huge, zero]))
    called: list[Any] = []
    for state in ({"all": "raise"}, {"all": "call", "call": lambda *a: called.append(a)}):
        with np.errstate(**state):
            before = np.geterr(), np.geterrcall()
            for call in (lambda: ft.matmul(x, y), lambda: grid @ grid.T, lambda: x @ grid.T):
                got = outcome(call)
                assert got == outcome(lambda c=call: traced(c)) and got[0] == "ok"
            assert (np.geterr(), np.geterrcall()) == before
    assert called == []
    with pytest.raises(FloatingPointError), np.errstate(all="raise"):
        np.matmul(huge, zero)  # the values do raise outside fueltensor


def test_threads_run_numpys_loop_without_the_gil() -> None:
    """Four threads multiplying matrices large enough that NumPy's loop runs without the GIL
    (its threshold), over several signatures at once, each result NumPy's."""
    arrays = [values(np.float32, 0, (40, 30)), values(np.float64, 1, (40, 30))]
    with np.errstate(all="ignore"):
        arrays += [np.arange(1200, dtype=np.int16).reshape(40, 30) % 7, arrays[1] * (1 - 1j)]
    cases = [(ft.asarray(a), numpys(a, a.T).tobytes()) for a in arrays]
    wrong: list[int] = []

    def work(seed: int) -> None:
        for i in np.random.default_rng(seed).permutation(len(cases) * 8) % len(cases):
            x, want = cases[i]
            if np.asarray(x @ x.T).tobytes() != want:
                wrong.append(int(i))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


COPIES = [*FLOATS, *HALVES, np.int8, np.uint64, np.bool_, np.complex64]


def copy_operands(dtype: Any) -> list[ft.FuelTensor]:
    """Tensors of `dtype` (the special values of a float type, signaling NaN included) dense,
    0-d, empty, and as views NumPy's cast walks by their strides."""
    a = pool(dtype) if np.dtype(dtype).kind == "f" else np.arange(-4, 5).astype(dtype)
    x = ft.asarray(np.concatenate([a, a[::-1]]))
    grid = ft.reshape(x, (2, -1))
    return [x, grid, x[3], x[:0], x[::2], x[::-1], grid.T, grid[1]]


@pytest.mark.parametrize("dtype", COPIES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("state", ["raise", "warn", "ignore"])
def test_a_copy_to_its_own_type_is_its_bytes(dtype: Any, state: str) -> None:
    """`astype` to the operand's own dtype (function and method) is the Python path and the
    operand's bytes (a signaling NaN kept as it is), silently under any error state."""
    dt = ft.asarray(np.zeros(1, dtype)).dtype
    with np.errstate(all=state), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in copy_operands(dtype):
            slow = outcome(lambda x=x: traced(lambda: ft.astype(x, dt)))
            for call in (lambda x=x: ft.astype(x, dt), lambda x=x: x.astype(dt)) * 2:
                assert outcome(call) == slow
            assert slow[0] == "ok" and slow[1][3] == np.asarray(x).tobytes()
            assert not np.shares_memory(np.asarray(ft.astype(x, dt)), np.asarray(x))
    assert caught == []


@pytest.mark.skipif(not FE, reason="FE_* bits of this machine not listed")
@pytest.mark.parametrize("dtype", COPIES, ids=lambda d: np.dtype(d).name)
def test_a_copy_leaves_the_status_flags(dtype: Any) -> None:
    """The flags after a copy to the operand's own type are the Python path's and NumPy's
    astype's: as they were for NumPy's own number types (their copy clears none); bfloat16's
    copy is ml_dtypes' cast, which NumPy runs as any cast (flags cleared, then its own)."""
    for before in (0, ALL, FE["invalid"]):
        for x in copy_operands(dtype):
            dt, a = x.dtype, np.asarray(x)
            fast = flags_after(before, lambda x=x, dt=dt: x.astype(dt))
            assert fast == flags_after(before, lambda x=x, dt=dt: ft.astype(x, dt))
            assert fast == flags_after(before, lambda x=x, dt=dt: traced(lambda: x.astype(dt)))
            assert fast == flags_after(before, lambda a=a: a.astype(a.dtype))
            assert fast == before or dtype is ml_dtypes.bfloat16
