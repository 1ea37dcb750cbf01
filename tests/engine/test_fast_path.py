"""Dispatch's compiled fast path (`ext._fast`): the same plan, bits, trace and observers as
the Python path, and every output 64-byte aligned and holding only its own bytes.

The Python path is what runs inside `ft.trace()` (the fast path stands aside while a trace or an
observer watches), so each case is computed both ways and compared bit for bit."""

from __future__ import annotations

import contextlib
import struct
import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _modes import NATIVE_FAST_PATH
from _oracle import FORMATS, cpu_expected
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core.storage import aligned_empty
from fueltensor.engine import dispatch, scalar_forms
from fueltensor.kernels import reference
from fueltensor.registry import bundled_contracts_dir

native: Any = None
with contextlib.suppress(ImportError):
    from fueltensor.ext import _native as native

pytestmark = pytest.mark.skipif(
    dispatch._FAST is None, reason="the compiled fast path is not built here"
)

OPS = {
    "add": "add",
    "subtract": "sub",
    "multiply": "mul",
    "divide": "div",
    "remainder": "mod",
    "pow": "pow",
    "maximum": "maximum",
    "minimum": "minimum",
}
"""dispatch's op name -> the oracle's."""
DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, np.inf, -np.inf, np.nan, 1e-30, 7.25]


def operands(dtype: Any, shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random values with special values mixed in, in `dtype`."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    pool = np.array(SPECIALS)
    a = np.where(rng.random(n) < 0.3, rng.choice(pool, n), rng.standard_normal(n) * 4)
    b = np.where(rng.random(n) < 0.3, rng.choice(pool, n), rng.standard_normal(n) * 4)
    return a.astype(dtype).reshape(shape), b.astype(dtype).reshape(shape)


def bits(x: ft.FuelTensor, fmt: str) -> np.ndarray:
    return np.asarray(x).view(FORMATS[fmt].uint)


@NATIVE_FAST_PATH
@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(sorted(OPS)),
    fmt=st.sampled_from(sorted(DTYPES)),
    shape=st.lists(st.integers(0, 7), min_size=1, max_size=3).map(tuple),
    seed=st.integers(0, 2**32 - 1),
)
def test_fast_path_is_the_python_path_bit_for_bit(
    op: str, fmt: str, shape: tuple[int, ...], seed: int
) -> None:
    lhs, rhs = operands(DTYPES[fmt], shape, seed)
    a, b = ft.asarray(lhs), ft.asarray(rhs)
    fn = getattr(ft, op)
    with ft.trace() as plans:  # a trace keeps the call on the Python path
        slow = fn(a, b)
    fn(a, b)  # the plan is cached now
    fast = dispatch._FAST(op, a, b)
    assert fast is not None and len(plans) == 1
    assert fast.dtype is slow.dtype and fast.shape == slow.shape
    assert fast.strides == slow.strides and fast.offset == 0
    np.testing.assert_array_equal(bits(fast, fmt), bits(slow, fmt))
    np.testing.assert_array_equal(bits(fast, fmt), cpu_expected(OPS[op], lhs, rhs, FORMATS[fmt]))


LAYOUTS = {
    "transposed": lambda a, b: (a.T, b),
    "flipped": lambda a, b: (a, ft.flip(b, axis=0)),
    "offset": lambda a, b: (a[1:, :3], b[:5, 2:5]),
    "strided": lambda a, b: (a[::2], b[1::2]),
    "row": lambda a, b: (a, b[2]),
    "column": lambda a, b: (a[:, :1], b),
    "outer": lambda a, b: (a[:, :1], b[:1, :]),
    "scalar": lambda a, b: (a, b[0, 0]),
    "stride0": lambda a, b: (ft.broadcast_to(a[0], (6, 6)), b),
}
"""Operand pairs whose plans broadcast and/or contiguize one or both operands."""


@NATIVE_FAST_PATH
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_densified_operands_are_the_python_path_bit_for_bit(layout: str, op: str, fmt: str) -> None:
    lhs, rhs = operands(DTYPES[fmt], (6, 6), hash((layout, op, fmt)) % 2**32)
    a, b = LAYOUTS[layout](ft.asarray(lhs), ft.asarray(rhs))
    fn = getattr(ft, op)
    with ft.trace() as plans:
        slow = fn(a, b)
    fn(a, b)
    fast = dispatch._FAST(op, a, b)
    assert fast is not None and fast.shape == slow.shape and fast.dtype is slow.dtype
    np.testing.assert_array_equal(bits(fast, fmt), bits(slow, fmt))
    if plans[0].backend != "portable-cpu":
        return  # the oracle's broadcast: the same ufunc call as the Python path's
    la, lb = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(bits(fast, fmt), cpu_expected(OPS[op], la, lb, FORMATS[fmt]))


@NATIVE_FAST_PATH
@pytest.mark.parametrize("n", [1, 3, 64, 16384, 40000])
def test_fast_outputs_are_aligned_and_own_their_bytes(n: int) -> None:
    x = ft.asarray(np.arange(n, dtype=np.float32))
    x + x
    y = dispatch._FAST("add", x, x)
    assert y is not None
    storage = y._storage
    assert storage.ctypes.data % 64 == 0 and storage.flags.c_contiguous
    assert storage.base.nbytes <= n * 4 + 64  # no arena block behind a small result
    assert not np.shares_memory(storage, x._storage)
    np.testing.assert_array_equal(np.asarray(y), np.arange(n, dtype=np.float32) * 2)


@NATIVE_FAST_PATH
def test_an_n_d_result_is_what_from_dense_builds() -> None:
    m = ft.asarray(np.arange(12.0).reshape(3, 4))
    m * m
    y = dispatch._FAST("multiply", m, m)
    assert y is not None and y.shape == (3, 4) and y._storage.ndim == 1
    assert y._array.shape == (3, 4) and np.shares_memory(y._array, y._storage)
    np.testing.assert_array_equal(np.asarray(y), np.arange(12.0).reshape(3, 4) ** 2)


def test_a_cached_operation_is_still_traced_and_observed() -> None:
    x = ft.asarray(np.linspace(-1, 1, 8, dtype=np.float32))
    x + x
    x + x
    with ft.trace() as plans:
        x + x
    assert len(plans) == 1 and plans[0] is ft.explain(ft.add, x, x)
    assert plans[0].kernel is not None and plans[0].kernel.name == "add_f32"
    with ft.compare_backends() as report:
        ft.maximum(x, x)
    assert len(report.comparisons) == 1


def test_what_the_fast_path_leaves_to_python() -> None:
    x = ft.asarray(np.ones(6, np.float32))
    with ft.use_registry(ft.Registry.from_paths([bundled_contracts_dir()])):  # an empty cache
        assert dispatch._FAST("add", x, x) is None  # no cached plan yet
    x + x
    x + 1j
    assert dispatch._FAST("add", x, 1j) is None  # a complex scalar (a host plan)
    x + np.float64(1.0)
    assert dispatch._FAST("add", x, np.float64(1.0)) is None  # a NumPy scalar: Python's path
    with ft.trace():
        assert dispatch._FAST("add", x, x) is None
    ints = ft.asarray(np.ones(6, np.int32))
    ints + ints
    assert dispatch._FAST("add", ints, ints) is None  # a host plan
    big = ft.asarray(np.ones((600, 600), np.float32))  # 1.4 MiB
    big.T + 1.0
    assert dispatch._FAST("add", big.T, 1.0) is None  # a Contiguize over 1 MiB


@NATIVE_FAST_PATH
def test_a_user_registry_runs_its_own_plans() -> None:
    x = ft.asarray(np.ones(4, np.float32))
    x + x
    with ft.use_backend("cpu") as policy:
        assert dispatch._FAST("add", x, x) is None  # this policy has not cached the plan
        x + x
        assert ("add", x.dtype, x._layout, x.dtype, x._layout) in policy.plans
        assert dispatch._FAST("add", x, x) is not None


@pytest.mark.parametrize("alignment", [1, 16, 64, 128])
@pytest.mark.parametrize("count", [0, 1, 5, 300, 5000])
def test_aligned_empty(alignment: int, count: int) -> None:
    out = aligned_empty(count, np.dtype(np.float64), alignment)
    assert out.shape == (count,) and out.dtype == np.float64
    assert out.flags.writeable and out.flags.c_contiguous
    assert count == 0 or out.ctypes.data % alignment == 0  # an empty array has no first byte


def _index(draw: st.DrawFn, n: int) -> int | slice:
    """An int index inside an axis of `n`, or any slice (steps of either sign)."""
    if n and draw(st.booleans()):
        return draw(st.integers(-n, n - 1))
    bound = st.none() | st.integers(-n - 3, n + 3)
    step = st.none() | st.integers(-4, 4).filter(bool)
    return slice(draw(bound), draw(bound), draw(step))


@st.composite
def views(draw: st.DrawFn) -> tuple[ft.FuelTensor, Any]:
    """A (possibly strided, offset, flipped) view and a key of ints and slices for it."""
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=3)))
    base = ft.asarray(np.arange(int(np.prod(shape)) * 2, dtype=np.float32)[::2].reshape(shape))
    if len(shape) == 2 and draw(st.booleans()):
        base = ft.flip(base, axis=1).T
    keys = tuple(_index(draw, n) for n in base.shape[: draw(st.integers(0, len(shape)))])
    return base, keys[0] if len(keys) == 1 and draw(st.booleans()) else keys


@settings(max_examples=300, deadline=None)
@given(views())
def test_compiled_views_are_the_python_views(case: tuple[ft.FuelTensor, Any]) -> None:
    from fueltensor.ext import _fast

    x, key = case
    fast = _fast.getitem(x, key)
    slow = x._view(x._layout.select(key))
    assert fast is not None and fast._layout == slow._layout
    assert fast._storage is x._storage and fast.dtype is x.dtype
    np.testing.assert_array_equal(np.asarray(fast), np.asarray(x)[key])
    if x.ndim <= 2:
        t = _fast.transpose(x)
        reversed_axes = tuple(reversed(range(x.ndim)))
        assert t is not None and t._layout == x._view(x._layout.permute(reversed_axes))._layout
        np.testing.assert_array_equal(np.asarray(t), np.asarray(x).T)


def test_keys_the_compiled_views_leave_to_python() -> None:
    """Only keys that are not basic indices (bools, lists, arrays) go to the host's indexing;
    the compiled views raise basic indexing's errors themselves."""
    from fueltensor.ext import _fast

    x = ft.asarray(np.arange(6.0).reshape(2, 3))
    for key in (True, np.bool_(False), [0], np.array([0, 1]), (0, [1]), 1.0):
        assert _fast.getitem(x, key) is None, key
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(ValueError):
        x[::0]
    np.testing.assert_array_equal(np.asarray(x[None, 1]), [[3.0, 4.0, 5.0]])


POWF_IS_NOT_SQUARING = [(0x1AC00000, 2.0), (0x5F7FC313, 2.0), (0x0000072F, 0.5), (0x7F7FC896, 0.5)]
"""f32 inputs where glibc 2.36's powf(x, y) differs from x * x (y = 2) or sqrtf(x) (y = 0.5),
found by benchmarks/pow_shortcut_check.c's exhaustive scan: why pow has no such shortcut."""


@pytest.mark.parametrize(("bits_in", "y"), POWF_IS_NOT_SQUARING)
def test_pow_by_a_scalar_is_the_c_librarys_powf(bits_in: int, y: float) -> None:
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.powf.restype = ctypes.c_float
    libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
    x = np.array([bits_in] * 3, np.uint32).view(np.float32)
    want = np.float32(libm.powf(float(x[0]), y)).view(np.uint32)
    t = ft.asarray(x)
    t**y
    assert (np.asarray(t**y).view(np.uint32) == want).all()


def _nan(bits64: int) -> float:
    """The Python float with these IEEE f64 bits (a NaN with a payload)."""
    value: float = struct.unpack("<d", struct.pack("<Q", bits64))[0]
    return value


SCALARS: list[Any] = [
    0.0,
    -0.0,
    1.5,
    -3.25,
    np.inf,
    1e300,  # overflows every float dtype but f64: inf
    _nan(0x7FF8_0200_0000_0000),
    _nan(0xFFF4_0400_0000_0000),  # a negative signalling NaN
    2,
    -3,
    0,
    2**40,
    2**63,  # beyond int64: made by scalars.scalar_tensor, not cached
    True,
    False,
]
"""Python scalars whose 0-d tensors must all stay apart: ±0, NaN payloads, ints, bools."""


def _views(base: np.ndarray) -> dict[str, ft.FuelTensor]:
    """Tensors of several layouts over (views of) `base`, a 4×6 array."""
    x = ft.asarray(base)
    return {
        "dense": x,
        "row": x[1],
        "strided": x[:, ::2],
        "offset": x[1:, 2:],
        "flipped": ft.flip(x, axis=1),
        "transposed": x.T,
        "broadcast": ft.broadcast_to(x[0], (3, 6)),
        "0-d": x[2, 3],
        "ones": x[1:2, 4:5],
        "empty": x[:, :0],
    }


def python_path(op: str, a: Any, b: Any) -> ft.FuelTensor:
    """`op(a, b)` on dispatch's Python path (a trace keeps the fast path aside)."""
    with ft.trace() as plans:
        result: ft.FuelTensor = getattr(ft, op)(a, b)
    assert len(plans) == 1
    return result


def check_scalar_case(op: str, fmt: str, a: Any, b: Any) -> None:
    """The fast path serves `op(a, b)` once its plan is cached, with the Python path's bits; a
    scalar the Python path refuses (an int too large for the dtype) it refuses alike. `x ** 3`
    (an int exponent) it serves from the integer-scalar form's plan when the Python path ran
    that form (PowIElementwise); when it did not (an exponent outside i32: PowElementwise; no
    contract: the host), the compiled call declines, as it would find x ** 3.0's plan under the
    scalar's 0-d tensor."""
    form = op in scalar_forms.FORMS and scalar_forms.integer_scalar(b) is not None
    try:
        with ft.trace() as plans:
            slow = getattr(ft, op)(a, b)
    except (OverflowError, TypeError) as e:
        if form:
            assert dispatch._FAST(op, a, b) is None
            return
        with pytest.raises(type(e)) as refused:
            dispatch._FAST(op, a, b)
        assert str(refused.value) == str(e)
        return
    assert len(plans) == 1
    if form and plans[0].op_kind != scalar_forms.FORMS[op].op_kind:
        assert dispatch._FAST(op, a, b) is None
        np.testing.assert_array_equal(bits(dispatch.binary(op, a, b), fmt), bits(slow, fmt))
        return
    getattr(ft, op)(a, b)
    fast = dispatch._FAST(op, a, b)
    assert fast is not None, (op, fmt, a, b)
    assert fast.dtype is slow.dtype and fast._layout == slow._layout
    np.testing.assert_array_equal(bits(fast, fmt), bits(slow, fmt))


@NATIVE_FAST_PATH
@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_scalar_operands_are_the_python_path_bit_for_bit(op: str, fmt: str) -> None:
    base, _ = operands(DTYPES[fmt], (4, 6), hash((op, fmt)) % 2**32)
    base[0, :3] = [-0.0, 0.0, np.nan]
    for view in _views(base).values():
        for value in SCALARS:
            check_scalar_case(op, fmt, view, value)
            check_scalar_case(op, fmt, value, view)


def test_signed_zeros_and_nan_payloads_stay_apart() -> None:
    values = np.array([-0.0, 0.0, 1.0], np.float32)
    x = ft.asarray(values)
    quiet, other = _nan(0x7FF8_0200_0000_0000), _nan(0x7FF8_0400_0000_0000)
    for _ in range(2):  # the second round reads the cached scalars
        for value in (0.0, -0.0, quiet, other, 0, False):
            lhs = np.full(3, value, np.float32)
            want = cpu_expected("maximum", lhs, values, FORMATS["f32"])
            np.testing.assert_array_equal(bits(ft.maximum(value, x), "f32"), want)
        assert np.asarray(x + -0.0).view(np.uint32).tolist() == [0x80000000, 0, 0x3F800000]
        assert np.asarray(x + 0.0).view(np.uint32).tolist() == [0, 0, 0x3F800000]


def test_an_int_that_does_not_fit_raises_and_changes_nothing() -> None:
    i8 = ft.asarray(np.array([1, 2, 3], np.int8))
    with pytest.raises(OverflowError, match="does not fit int8"):
        dispatch._FAST("add", i8, 300)
    with pytest.raises(OverflowError, match="does not fit int8"):
        i8 + 300
    with pytest.raises(OverflowError, match="does not fit int8"):
        300 - i8
    assert np.asarray(i8).tolist() == [1, 2, 3]
    x = ft.asarray(np.ones(3, np.float32))
    x + 1.0
    with pytest.raises(OverflowError) as fast:
        dispatch._FAST("add", x, 10**400)
    with pytest.raises(OverflowError) as slow:
        python_path("add", x, 10**400)
    assert str(fast.value) == str(slow.value)
    np.testing.assert_array_equal(np.asarray(x), np.ones(3, np.float32))


def test_scalar_operations_are_traced_and_observed() -> None:
    x = ft.asarray(np.linspace(-1, 1, 8, dtype=np.float32))
    x + 1.0
    ft.maximum(x, 0.0)
    with ft.trace() as plans:
        x + 1.0
        ft.maximum(x, 0.0)
        2**x
    assert [p.op for p in plans] == ["add", "maximum", "pow"]
    assert plans[0] is ft.explain(ft.add, x, 1.0)
    with ft.compare_backends() as report:
        x * 2
        1.0 - x
    assert len(report.comparisons) == 2


@NATIVE_FAST_PATH
@pytest.mark.parametrize("n", [1, 5, 4096, 4096 * 3 + 7, 300_001])
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_a_repeated_scalar_runs_block_by_block(n: int, fmt: str) -> None:
    lhs, _ = operands(DTYPES[fmt], (n,), n)
    x = ft.asarray(lhs)
    for op in ("maximum", "pow", "remainder", "minimum"):
        for value in (0.5, -0.0, _nan(0x7FF8_0200_0000_0000)):
            check_scalar_case(op, fmt, x, value)
            check_scalar_case(op, fmt, value, x)


@NATIVE_FAST_PATH
@pytest.mark.parametrize(
    ("op", "scalar_first"), [("maximum", False), ("pow", False), ("pow", True)]
)
def test_a_repeated_scalar_allocates_only_the_output(op: str, scalar_first: bool) -> None:
    """A Python scalar is read from a repeated block (on the heap for a long call, so that the
    pool splits each body call over it), never a full copy; the bits are the Python path's."""
    n = 3_000_001  # 12 MB: over the 1 MiB up to which a full copy would be made here
    x = ft.asarray(np.linspace(0.25, 5, n, dtype=np.float32))
    args = (0.5, x) if scalar_first else (x, 0.5)
    plan = ft.explain(getattr(ft, op), *args)
    assert [s.kind.value for s in plan.prep[0 if scalar_first else 1]] == [
        "BroadcastTo",
        "Contiguize",
    ]
    getattr(ft, op)(*args)
    tracemalloc.start()
    try:
        fast = dispatch._FAST(op, *args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert fast is not None
    assert n * 4 <= peak <= n * 4 + dispatch._FAST_MODULE.REPEAT_HEAP_BYTES + 64 * 1024
    np.testing.assert_array_equal(bits(fast, "f32"), bits(python_path(op, *args), "f32"))


def _scalar_values() -> st.SearchStrategy[Any]:
    """Python floats of any bits (NaN payloads, ±0, ±inf), small ints and bools."""
    floats = st.integers(0, 2**64 - 1).map(_nan)
    return floats | st.floats() | st.integers(-(2**70), 2**70) | st.booleans()


@st.composite
def scalar_cases(draw: st.DrawFn) -> tuple[str, str, Any, Any]:
    """An op, a dtype, and a (strided, offset, flipped, transposed) view beside a scalar."""
    op = draw(st.sampled_from(sorted(OPS)))
    fmt = draw(st.sampled_from(sorted(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=0, max_size=3)))
    base, _ = operands(DTYPES[fmt], shape, draw(st.integers(0, 2**32 - 1)))
    x = ft.asarray(base)
    key = tuple(
        slice(draw(st.integers(0, 2)), None, draw(st.sampled_from([1, 2, -1]))) for _ in shape
    )
    x = x[key]
    if x.ndim == 2 and draw(st.booleans()):
        x = x.T
    value = draw(_scalar_values())
    return (op, fmt, x, value) if draw(st.booleans()) else (op, fmt, value, x)


@NATIVE_FAST_PATH
@settings(max_examples=150, deadline=None)
@given(scalar_cases())
def test_scalars_beside_any_layout(case: tuple[str, str, Any, Any]) -> None:
    check_scalar_case(*case)


def test_compiled_operations_stand_for_the_python_functions() -> None:
    import inspect
    import pickle

    x = ft.asarray(np.array([1.0, 2.0, 4.0], np.float32))
    positional = inspect.Parameter.POSITIONAL_ONLY
    for fn, names in ((ft.subtract, ["x1", "x2"]), (ft.FuelTensor.__rsub__, ["self", "other"])):
        params = inspect.signature(fn).parameters.values()
        assert [(p.name, p.kind) for p in params] == [(n, positional) for n in names]
    assert ft.subtract.__name__ == "subtract" and "SubElementwise" in (ft.subtract.__doc__ or "")
    assert ft.FuelTensor.__rsub__.__qualname__ == "FuelTensor.__rsub__"
    assert pickle.loads(pickle.dumps(ft.subtract)) is ft.subtract
    assert pickle.loads(pickle.dumps(ft.FuelTensor.__rsub__)) is ft.FuelTensor.__rsub__
    np.testing.assert_array_equal(np.asarray(x.__rsub__(10)), [9.0, 8.0, 6.0])  # bound
    np.testing.assert_array_equal(np.asarray(ft.FuelTensor.__sub__(x, 1)), [0.0, 1.0, 3.0])
    np.testing.assert_array_equal(np.asarray(1 - x), [0.0, -1.0, -3.0])
    np.testing.assert_array_equal(np.asarray(ft.subtract(x, x)), [0.0, 0.0, 0.0])
    ints = ft.asarray(np.array([5, 7], np.int16))
    np.testing.assert_array_equal(np.asarray(ints - 1), [4, 6])  # the Python path (host)
    with pytest.raises(TypeError, match="subtract"):
        ft.subtract(x)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="subtract"):
        ft.subtract(x, x2=x)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unsupported operand"):
        ft.subtract(x, "a")


def test_scalars_from_many_threads_each_get_their_own_value() -> None:
    import threading

    x = ft.asarray(np.linspace(-3, 3, 5000, dtype=np.float32))
    want = {k: np.asarray(python_path("maximum", x, float(k))) for k in range(-3, 4)}
    errors: list[str] = []

    def worker(seed: int) -> None:
        for i in range(300):
            k = (seed + i) % 7 - 3
            got = np.asarray(ft.maximum(x, float(k)) if i % 2 else ft.maximum(float(k), x))
            if not np.array_equal(got, want[k]):
                errors.append(f"maximum with {k} in thread {seed}")

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    old = threading.stack_size(256 * 1024)  # the repeat blocks live on the thread's stack
    try:
        for t in threads:
            t.start()  # the OS thread, with its stack, is made here
    finally:
        threading.stack_size(old)
    for t in threads:
        t.join(60)
    assert errors == [] and not any(t.is_alive() for t in threads)


@NATIVE_FAST_PATH
def test_a_contract_admitting_layouts_its_kernel_refuses_stays_on_the_python_path(
    contract_text: Any, write: Any
) -> None:
    from fueltensor.kernels import cpu

    add_f32 = cpu.ENTRY_POINTS["fuel_cpu_backend::byte_kernels::add_f32"]
    ft.register_provider("test-provider", {"tests::loose_f32": add_f32})
    text = contract_text(kernel="loose_f32")
    for flag in ("contiguous: required", "strided: rejected"):
        text = text.replace(flag, flag.split(":")[0] + ": allowed")
    loose = ft.Registry.from_paths([bundled_contracts_dir(), write(text)])
    x = ft.asarray(np.arange(24, dtype=np.float32).reshape(4, 6))[:, ::2]
    with ft.use_registry(loose), ft.use_backend("test-provider"):
        plan = ft.explain(ft.add, x, x)
        assert plan.kernel is not None and plan.kernel.name == "loose_f32" and not plan.prepared
        with pytest.raises((ValueError, BufferError)):  # the kernel refuses a strided buffer
            x + x
        assert dispatch._FAST("add", x, x) is None  # never reads it as dense memory


@NATIVE_FAST_PATH
def test_a_cleared_plan_cache_is_not_served_from_remembered_lookups() -> None:
    x = ft.asarray(np.arange(5, dtype=np.float32))
    fresh = ft.Registry.from_paths([bundled_contracts_dir()])
    with ft.use_registry(fresh), ft.use_backend("cpu") as policy:
        for _ in range(3):  # the later calls hit the remembered lookup
            x * 2
            assert dispatch._FAST("multiply", x, 2) is not None
        policy.plans.clear()
        assert dispatch._FAST("multiply", x, 2) is None  # the Python path plans again
        x * 2
        assert dispatch._FAST("multiply", x, 2) is not None


def test_a_large_output_reuses_the_block_its_predecessor_left_and_is_traced() -> None:
    """A large output is a block of its own, kept when it dies for the next output of its size
    (no fresh pages to fault in), and traced by tracemalloc only while an array holds it."""
    if dispatch._FAST is None:
        pytest.skip("the compiled fast path is not built here")
    n = 1 << 18  # 1 MiB of f32: a kept block
    x = ft.asarray(np.arange(n, dtype=np.float32))
    first = x + x
    address = np.asarray(first).__array_interface__["data"][0]
    assert address % 64 == 0
    del first
    blocker = np.ones(n * 4 - 4096, np.uint8)  # would take the freed memory, were it freed
    tracemalloc.start()
    try:
        second = x * x
        held, _ = tracemalloc.get_traced_memory()
        assert np.asarray(second).__array_interface__["data"][0] == address
        del second
        released, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held >= n * 4 > released
    assert blocker.all()
    other = ft.asarray(np.arange(n + 16, dtype=np.float32))  # another size: a new block
    third = other + other
    np.testing.assert_array_equal(np.asarray(third), np.arange(n + 16, dtype=np.float32) * 2)


NAN_LANES = [
    *((n, p) for n in (2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129) for p in range(n)),
    *((100_003, p) for p in (0, 1, 50_000, 99_999, 100_002)),
]
"""(length, lane): every lane of lengths around 8-, 16-, 32- and 64-lane vectors, and a long
output's ends and middle (one element is not the oracle's: `x + 1.0` ties, and the byte
kernel wins)."""


@pytest.mark.parametrize("isa", native.ISAS if native is not None else ())
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_the_oracle_redoes_nans_exactly_when_a_lane_holds_one(
    isa: str, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiled oracle entry scans its output (`_native`'s NAN_SCAN, the selected
    instruction set's code) and runs the oracle's NaN rule when, and only when, some lane holds
    a NaN of either sign: in every lane of a vector body or its tail, for every element width;
    an infinity, whose bits lie just below every NaN's magnitude, is not one."""
    calls: list[int] = []
    rule = reference.nans

    def counted(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
        calls.append(out.size)
        rule(lhs, rhs, out)

    monkeypatch.setattr(reference, "nans", counted)  # read when an oracle entry is made
    fresh = ft.Registry.from_paths([bundled_contracts_dir()])
    form = FORMATS[fmt]
    previous = native.select_isa(isa)
    try:
        with ft.use_registry(fresh), ft.use_backend("reference"):
            for n, p in NAN_LANES:
                values = np.ones(n, DTYPES[fmt])
                values[p] = np.inf if p % 2 else -np.inf
                x = ft.asarray(values)
                assert ft.explain(ft.add, x, 1.0).kernel_name == "broadcast_add"
                x + 1.0  # the Python path plans the call; the fast path serves the next
                calls.clear()
                assert dispatch._FAST("add", x, 1.0) is not None
                assert calls == [], f"no NaN in {n} lanes, yet the rule ran"
                values.view(form.uint)[p] = form.exp_mask | form.quiet | (form.sign if p % 2 else 0)
                assert dispatch._FAST("add", ft.asarray(values), 1.0) is not None
                assert calls == [n], f"the NaN in lane {p} of {n} went unseen"
                calls.clear()
    finally:
        native.select_isa(previous)
