"""Every standard function and operator against array-api-strict on the same inputs.

Both namespaces get the same NumPy data; results must agree in dtype, shape and value bit for
bit (every NaN equal to every NaN, +0 apart from -0). Where array-api-strict refuses an input
(a dtype the standard does not define a function for) the case is skipped. The documented
deviations are compared to their contract formula instead: float `maximum`/`minimum` return a
NaN operand (left first) and the left operand on a tie, float `pow` is the C library's powf/pow
(array-api-strict's np.power runs NumPy's own SIMD loops on AVX-512 machines, with other last
bits). Float `remainder` is no deviation: it is NumPy's exact floored remainder, bit for bit.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from _exact import assert_within
from _extras import extra
from _oracle import FORMATS, bits_of, pow_, powi_expected
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fueltensor as ft
from fueltensor.ops import UNARY_OPS

xs = extra("array_api_strict", "test")
from array_api_strict._array_object import Array as StrictArray  # noqa: E402

FAST = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MANY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""For the eight contract operations, where fueltensor's own kernels run."""


def names(text: str) -> list[str]:
    return text.split()


STANDARD_DTYPES = names(
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64 complex128"
)
REAL = [d for d in STANDARD_DTYPES if not d.startswith("complex")]
NUMERIC = [d for d in REAL if d != "bool"]
FLOATS = ["float32", "float64"]


@pytest.fixture(autouse=True, scope="module")
def _strict_2024_12() -> Iterator[None]:
    """array-api-strict as the 2024.12 standard (its default is a later draft)."""
    before = xs.get_array_api_strict_flags()["api_version"]
    xs.set_array_api_strict_flags(api_version="2024.12")
    yield
    xs.set_array_api_strict_flags(api_version=before)


# -- building both sides and comparing them ---------------------------------------------------


def to_numpy(value: Any) -> np.ndarray:
    """A fueltensor or array-api-strict result as a NumPy array (scalars refused: the standard's
    results are arrays)."""
    if isinstance(value, ft.FuelTensor):
        return np.asarray(value)
    assert isinstance(value, StrictArray), f"expected an array, got {type(value).__name__}"
    return np.from_dlpack(value)


def bits(a: np.ndarray) -> np.ndarray:
    """`a` as unsigned integers of its width, every NaN mapped to one pattern."""
    if a.dtype.kind == "c":
        return bits(np.stack([a.real, a.imag], axis=-1))
    if a.dtype.kind == "f":
        a = np.where(np.isnan(a), np.array(np.nan, a.dtype), a)
        return a.view(f"u{a.itemsize}")
    return a


def assert_same(got: Any, want: Any, what: str = "") -> None:
    """Same dtype, shape and bits; tuples and lists compared item by item."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want), what
        for g, w in zip(got, want, strict=True):
            assert_same(g, w, what)
        return
    assert isinstance(got, ft.FuelTensor), f"{what}: got a {type(got).__name__}, not a tensor"
    g, w = to_numpy(got), to_numpy(want)
    assert g.dtype == w.dtype, f"{what}: dtype {g.dtype} != {w.dtype}"
    assert g.shape == w.shape, f"{what}: shape {g.shape} != {w.shape}"
    assert np.array_equal(bits(g), bits(w)), f"{what}:\n{g!r}\n!=\n{w!r}"


def both(*arrays: np.ndarray) -> tuple[list[ft.FuelTensor], list[StrictArray]]:
    return [ft.asarray(a) for a in arrays], [xs.asarray(a) for a in arrays]


def strict_or_skip(fn: Callable[[], Any]) -> Any:
    """array-api-strict's answer; the case is skipped where it refuses the input."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy under array-api-strict warns on IEEE results
            return fn()
    except (TypeError, ValueError, IndexError):
        assume(False)


def agree(name: str, ft_args: list[Any], xs_args: list[Any], **kwargs: Any) -> None:
    """`name(*args, **kwargs)` in both namespaces gives the same result (tensors and dtypes
    among the keyword arguments are given to array-api-strict as its own)."""
    xs_kwargs = {k: as_strict(v) for k, v in kwargs.items()}
    want = strict_or_skip(lambda: getattr(xs, name)(*xs_args, **xs_kwargs))
    assert_same(getattr(ft, name)(*ft_args, **kwargs), want, name)


def as_strict(value: Any) -> Any:
    if isinstance(value, ft.FuelTensor):
        return xs.asarray(np.asarray(value))
    if isinstance(value, type(ft.float32)):
        return getattr(xs, value.name)
    return value


def data(dtype: str, *, shape: Any = None, min_dims: int = 0) -> st.SearchStrategy[np.ndarray]:
    """NumPy arrays of `dtype` with every special value (NaN, ±inf, ±0, subnormals) allowed;
    complex parts are not subnormal (x / |x| underflows there, differently in every library)."""
    if shape is None:
        shape = hnp.array_shapes(min_dims=min_dims, min_side=0, max_side=4)
    subnormal = not dtype.startswith("complex")
    return hnp.arrays(
        dtype, shape, elements=hnp.from_dtype(np.dtype(dtype), allow_subnormal=subnormal)
    )


@st.composite
def smaller(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `shape`: some leading axes dropped, some extents made 1."""
    kept = shape[draw(st.integers(0, len(shape))) :]
    return tuple(1 if draw(st.booleans()) else n for n in kept)


@functools.cache
def accepted(name: str) -> tuple[str, ...]:
    """The standard dtypes array-api-strict's `name` accepts (probed on one element)."""
    params = inspect.signature(getattr(xs, name)).parameters.values()
    arity = sum(p.kind is p.POSITIONAL_ONLY and p.default is p.empty for p in params)
    ok = []
    for dtype in STANDARD_DTYPES:
        one = xs.asarray(np.ones(1, dtype))
        try:
            with np.errstate(all="ignore"):
                getattr(xs, name)(*[one] * (2 if name in BINARY else arity))
        except (TypeError, ValueError):
            continue
        ok.append(dtype)
    return tuple(ok)


SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.5, -2.5, 3.0, np.pi, -np.pi / 2]
SPECIAL += [np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1e300, -1e300]


def special(dtype: str) -> np.ndarray:
    """The special values of the standard's `Special Cases` sections, in `dtype`."""
    with np.errstate(over="ignore"):
        return np.array(SPECIAL, dtype=dtype)


# -- element-wise functions -------------------------------------------------------------------

UNARY = names(
    "abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp expm1 floor "
    "imag isfinite isinf isnan log log1p log2 log10 logical_not negative positive real "
    "reciprocal round sign signbit sin sinh sqrt square tan tanh trunc"
)
BINARY = names(
    "add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor "
    "copysign divide equal floor_divide greater greater_equal hypot less less_equal logaddexp "
    "logical_and logical_or logical_xor maximum minimum multiply nextafter not_equal pow "
    "remainder subtract"
)
CONTRACT_FORMULAS = {"floor_divide", "maximum", "minimum", "pow"}


def c_library_pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The contract's pow, element by element: the C library's powf/pow through ctypes (the
    scalar reference's). Not np.power, which array-api-strict calls: its AVX-512 loops differ."""
    fmt = FORMATS[{"float32": "f32", "float64": "f64"}[a.dtype.name]]
    out = [pow_(x, y, fmt) for x, y in zip(bits_of(a, fmt), bits_of(b, fmt), strict=True)]
    return np.array(out, fmt.uint).view(a.dtype).reshape(a.shape)


CONTRACT_OPS = set(names("add subtract multiply divide remainder pow maximum minimum"))
"""The eight operations planned from kernel contracts."""


def contract(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The documented deviation's contract formula, in the operands' (float) precision; for
    floor_divide, the standard's preferred `floor(x1 / x2)` (NumPy differs at infinities)."""
    if name == "pow":
        return c_library_pow(a, b)
    if name == "floor_divide":
        return np.asarray(np.where(np.isinf(a) | np.isinf(b), np.floor(a / b), a // b))
    if name == "maximum":
        pick = np.isnan(a) | (~np.isnan(b) & (a >= b))
    else:
        pick = np.isnan(a) | (~np.isnan(b) & (a <= b))
    return np.asarray(np.where(pick, a, b))


def expected(name: str, a: np.ndarray, b: np.ndarray, strict: Callable[[], Any]) -> Any:
    """What `name(a, b)` must give: the contract formula for a documented deviation on floats
    (in the promoted precision), else array-api-strict's answer (`strict()`)."""
    if name in CONTRACT_FORMULAS and a.dtype.kind == b.dtype.kind == "f":
        working = np.result_type(a, b)
        with np.errstate(all="ignore"):
            return xs.asarray(
                contract(name, *np.broadcast_arrays(a.astype(working), b.astype(working)))
            )
    return strict_or_skip(strict)


def scalar_expected(name: str, a: np.ndarray, scalar: Any, strict: Callable[[], Any]) -> Any:
    """What `name(a, scalar)` must give: a float tensor to a Python int power is the
    PowIElementwise contract's loop (`_oracle.powi_expected`), else `expected`."""
    if name == "pow" and a.dtype.kind == "f" and type(scalar) is int:
        fmt = next(f for f in FORMATS.values() if np.dtype(f.np_dtype) == a.dtype)
        got = powi_expected(np.array(a, order="C"), scalar, fmt)
        return xs.asarray(np.asarray(got).view(a.dtype))
    return expected(name, a, np.array(scalar, a.dtype), strict)


def binary_expected(name: str, a: np.ndarray, b: np.ndarray, strict: Callable[[], Any]) -> Any:
    """`expected`, but for a complex operand beside a 0-d one: array-api-strict makes the 0-d
    operand 1-d before calling NumPy, which selects another complex inner loop (other FMA
    contraction: (4097+1j) * [[1+4097j]] differs in the last bit); fueltensor calls NumPy on
    the operands as given, so NumPy's answer for those."""
    if "c" in (a.dtype.kind, b.dtype.kind) and (a.ndim == 0) != (b.ndim == 0):
        with np.errstate(all="ignore"):
            return xs.asarray(getattr(np, {"pow": "power"}.get(name, name))(a, b))
    return expected(name, a, b, strict)


def check_binary(name: str, a: np.ndarray, b: np.ndarray) -> None:
    (fa, fb), (sa, sb) = both(a, b)
    want = binary_expected(name, a, b, lambda: getattr(xs, name)(sa, sb))
    assert_same(getattr(ft, name)(fa, fb), want, name)


@pytest.mark.parametrize("name", UNARY)
@FAST
@given(st.data())
def test_unary(name: str, draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(accepted(name)))))
    (fa,), (sa,) = both(a)
    if name == "sign" and a.dtype.kind == "c":  # x / |x|: within an ulp, not bit for bit
        assume(bool(np.isfinite(a).all()))  # x / |x| of an infinite x is left to the library
        got, want = to_numpy(ft.sign(fa)), to_numpy(strict_or_skip(lambda: xs.sign(sa)))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(a.dtype).eps)
        return
    check_unary(name, a, fa, sa)


UNARY_CONTRACTS = {row.name: row for row in UNARY_OPS}
"""The unary functions planned from kernel contracts: their float results are the contracts'
(correctly rounded within the chosen kernel's max_ulp), not NumPy's float32 loops."""


def check_unary(name: str, a: np.ndarray, fa: ft.FuelTensor, sa: Any) -> None:
    """`name(a)` as the standard has it: array-api-strict's answer, or for a unary contract
    operation on floats its dtype and shape and the contract's numerics (`_exact`)."""
    row = UNARY_CONTRACTS.get(name)
    if row is None or a.dtype.kind != "f":
        agree(name, [fa], [sa])
        return
    want = to_numpy(strict_or_skip(lambda: getattr(xs, name)(sa)))
    got = getattr(ft, name)(fa)
    assert got.dtype.name == want.dtype.name and got.shape == want.shape, name
    kernel = ft.explain(getattr(ft, name), fa).kernel
    assert kernel is not None and kernel.precision.max_ulp is not None, name
    assert_within(row, a, to_numpy(got), kernel.precision.max_ulp)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_cases(name: str, dtype: str) -> None:
    a = special(dtype)
    (fa,), (sa,) = both(a)
    try:
        with np.errstate(all="ignore"):
            getattr(xs, name)(sa)
    except TypeError:
        pytest.skip(f"{name} is not defined for {dtype}")
    check_unary(name, a, fa, sa)


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_special_cases(name: str, dtype: str) -> None:
    values = special(dtype)
    a, b = (np.array(v, dtype) for v in zip(*itertools.product(values, values), strict=True))
    try:
        with np.errstate(all="ignore"):
            getattr(xs, name)(xs.asarray(a), xs.asarray(b))
    except (TypeError, ValueError):
        pytest.skip(f"{name} is not defined for {dtype}")
    check_binary(name, a, b)


@st.composite
def promotable(
    draw: st.DrawFn, dtypes: tuple[str, ...] = tuple(STANDARD_DTYPES), min_dims: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Two broadcast-compatible arrays of `dtypes` the standard promotes."""
    pairs = [(x, y) for x in dtypes for y in dtypes if _promotes(x, y)]
    d1, d2 = draw(st.sampled_from(pairs))
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=min_dims, max_side=3))
    return draw(data(d1, shape=shapes.input_shapes[0])), draw(
        data(d2, shape=shapes.input_shapes[1])
    )


def _promotes(d1: str, d2: str) -> bool:
    try:
        xs.result_type(getattr(xs, d1), getattr(xs, d2))
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("name", [n for n in BINARY if n not in CONTRACT_OPS])
@FAST
@given(st.data())
def test_binary(name: str, draw: st.DataObject) -> None:
    check_binary(name, *draw.draw(promotable(accepted(name))))


@pytest.mark.parametrize("name", sorted(CONTRACT_OPS))
@MANY
@given(st.data())
def test_binary_contract_op(name: str, draw: st.DataObject) -> None:
    """Four draws in five are float operands of at least one axis: what reaches the kernels.
    (Measured with --hypothesis-show-statistics under CI=1: float arrays of size > 1 in 34-67 %
    of each op's 60 examples, 20-40 per op; the generic draw of `test_binary`, 12 examples per
    op, gave them 3 examples over all eight ops.)"""
    floats = draw.draw(st.integers(0, 4)) > 0
    dtypes = tuple(d for d in accepted(name) if not floats or d in FLOATS)
    a, b = draw.draw(promotable(dtypes, min_dims=1 if floats else 0))
    if a.dtype.kind == b.dtype.kind == "f" and max(a.size, b.size) > 1:
        event("float arrays of size > 1")
    check_binary(name, a, b)


@pytest.mark.parametrize("name", BINARY)
@FAST
@given(st.data())
def test_binary_with_python_scalars(name: str, draw: st.DataObject) -> None:
    dtype = draw.draw(st.sampled_from([d for d in accepted(name) if d in REAL]))
    a = draw.draw(data(dtype))
    kind = np.dtype(dtype).kind
    if kind == "b":
        scalar: Any = draw.draw(st.booleans())
    elif kind == "f":
        scalar = draw.draw(st.floats(width=32) | st.integers(-100, 100))
    else:
        info = np.iinfo(dtype)
        scalar = draw.draw(st.integers(int(info.min), int(info.max)))
    (fa,), (sa,) = both(a)
    s = np.array(scalar, dtype)
    want = scalar_expected(name, a, scalar, lambda: getattr(xs, name)(sa, scalar))
    assert_same(getattr(ft, name)(fa, scalar), want, f"{name}(x, {scalar!r})")
    want = expected(name, s, a, lambda: getattr(xs, name)(scalar, sa))
    assert_same(getattr(ft, name)(scalar, fa), want, f"{name}({scalar!r}, x)")
    method = next((m for m, n in OPERATORS.items() if n == name), None)
    if method is not None and method not in COMPARISONS:
        target = ft.asarray(a, copy=True)
        getattr(target, "__i" + method[2:])(scalar)
        want = scalar_expected(name, a, scalar, lambda: getattr(xs, name)(sa, scalar))
        assert_same(target, want, f"x {method[2:-2]}= {scalar!r}")


@FAST
@given(st.data())
def test_clip_with_array_scalar_and_missing_bounds(draw: st.DataObject) -> None:
    dtype = draw.draw(st.sampled_from(NUMERIC))
    x = draw.draw(data(dtype, min_dims=1))
    lo = draw.draw(data(dtype, shape=smaller(x.shape)))
    hi = np.maximum(lo, draw.draw(data(dtype, shape=lo.shape)))
    (fx, flo, fhi), (sx, _, _) = both(x, lo, hi)
    agree("clip", [fx], [sx], min=flo, max=fhi)
    agree("clip", [fx], [sx], min=flo)
    agree("clip", [fx], [sx], max=fhi)
    agree("clip", [fx], [sx])
    agree("clip", [fx, 1, 2], [sx, 1, 2])
    agree("clip", [fx], [sx], max=0)


COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")

# -- operators --------------------------------------------------------------------------------

OPERATORS = {
    "__add__": "add",
    "__sub__": "subtract",
    "__mul__": "multiply",
    "__truediv__": "divide",
    "__floordiv__": "floor_divide",
    "__mod__": "remainder",
    "__pow__": "pow",
    "__and__": "bitwise_and",
    "__or__": "bitwise_or",
    "__xor__": "bitwise_xor",
    "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift",
    "__eq__": "equal",
    "__ne__": "not_equal",
    "__lt__": "less",
    "__le__": "less_equal",
    "__gt__": "greater",
    "__ge__": "greater_equal",
}


@pytest.mark.parametrize("method", sorted(OPERATORS))
@FAST
@given(st.data())
def test_binary_operators_and_their_reflected_and_in_place_forms(
    method: str, draw: st.DataObject
) -> None:
    # Only dtypes the operator's function accepts: drawing all and skipping the refused ones
    # made hypothesis give up on the filtering now and then (a flaky health check).
    a, b = draw.draw(promotable(accepted(OPERATORS[method])))
    (fa, fb), (sa, sb) = both(a, b)
    want = binary_expected(OPERATORS[method], a, b, lambda: getattr(sa, method)(sb))
    assert_same(getattr(fa, method)(fb), want, method)
    if method in COMPARISONS:
        return
    reflected = "__r" + method[2:]
    assert_same(getattr(fb, reflected)(fa), want, reflected)
    if want.shape == fa.shape and want.dtype == sa.dtype:
        target = ft.asarray(a, copy=True)
        getattr(target, "__i" + method[2:])(fb)
        assert_same(target, want, "__i" + method[2:])


UNARY_OPERATORS = {
    "__neg__": "negative",
    "__pos__": "positive",
    "__abs__": "abs",
    "__invert__": "bitwise_invert",
}


@pytest.mark.parametrize("method", sorted(UNARY_OPERATORS))
@FAST
@given(st.data())
def test_unary_operators(method: str, draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(accepted(UNARY_OPERATORS[method])))))
    (fa,), (sa,) = both(a)
    assert_same(getattr(fa, method)(), getattr(sa, method)(), method)


@FAST
@given(st.data())
def test_matmul_and_linear_algebra(draw: st.DataObject) -> None:
    dtype = draw.draw(st.sampled_from([*NUMERIC, "complex128"]))
    n, k, m = (draw.draw(st.integers(1, 3)) for _ in range(3))
    elems = st.integers(-8, 8)
    batch = draw.draw(hnp.array_shapes(min_dims=0, max_dims=2, max_side=2))
    if dtype.startswith("u"):
        elems = st.integers(0, 8)
    a = draw.draw(hnp.arrays(dtype, (*batch, n, k), elements=elems))
    b = draw.draw(hnp.arrays(dtype, (k, m), elements=elems))
    (fa, fb), (sa, sb) = both(a, b)
    assert_same(fa @ fb, sa @ sb, "@")
    agree("matmul", [fa, fb], [sa, sb])
    agree("matrix_transpose", [fa], [sa])
    agree("tensordot", [fa, fb], [sa, sb], axes=1)
    agree("vecdot", [fa, fa], [sa, sa])


# -- statistical, searching, sorting, set and utility functions -------------------------------


@st.composite
def axis_for(draw: st.DrawFn, ndim: int, *, tuples: bool = True) -> Any:
    if ndim == 0:
        return None
    single = st.integers(-ndim, ndim - 1)
    options = [st.none(), single]
    if tuples:
        options.append(st.lists(st.integers(0, ndim - 1), unique=True).map(tuple))
    return draw(st.one_of(options))


REDUCTIONS = ["max", "min", "mean", "prod", "sum", "std", "var", "all", "any", "count_nonzero"]


@pytest.mark.parametrize("name", REDUCTIONS)
@FAST
@given(st.data())
def test_reductions(name: str, draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(accepted(name)))))
    axis = draw.draw(axis_for(a.ndim))
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": draw.draw(st.booleans())}
    if name in ("std", "var"):
        kwargs["correction"] = draw.draw(st.sampled_from([0, 1, 0.5]))
    if name in ("sum", "prod") and draw.draw(st.booleans()):
        wider = {"b": "int64", "i": "int64", "u": "uint64", "f": "float64", "c": "complex128"}
        kwargs["dtype"] = getattr(ft, wider[a.dtype.kind])
    (fa,), (sa,) = both(a)
    if name == "prod" and a.dtype.kind == "f":  # bits: tests/engine/test_reduce_dispatch.py
        # its contract's order and NumPy's meet overflow and underflow in different places
        # (a partial product of 0 or inf in one, a number in the other): dtype and shape alone
        want = strict_or_skip(lambda: xs.prod(sa, **{k: as_strict(v) for k, v in kwargs.items()}))
        got = to_numpy(ft.prod(fa, **kwargs))
        assert (got.dtype, got.shape) == (to_numpy(want).dtype, to_numpy(want).shape)
        return
    if name in COMPOSED and a.dtype.kind == "f":
        xs_kwargs = {k: as_strict(v) for k, v in kwargs.items()}
        want = strict_or_skip(lambda: getattr(xs, name)(sa, **xs_kwargs))
        close_to_rounding(name, getattr(ft, name)(fa, **kwargs), want, a)
        return
    agree(name, [fa], [sa], **kwargs)


COMPOSED = ("sum", "mean", "var", "std")
"""fueltensor's sum adds in its contract's blocked order, from the first element (a row of -0
sums to -0, where NumPy seeds +0), and mean, var and std compose it with a divide in the input's
dtype (`array_api.compositions`); NumPy adds row after row down an outer axis and divides
float32 in float64: the same values to rounding, not the same bits."""


def close_to_rounding(name: str, got: Any, want: Any, x: np.ndarray) -> None:
    """`got` has `want`'s dtype, shape and special values, and its finite values within the
    rounding of two evaluations of the same steps: a mean to 2(n+1) eps of max|x|, a variance
    to 4(n+2) eps of itself and n eps² max|x|² (two-pass: the mean's error enters squared), a
    standard deviation to the square root of its variance's tolerance."""
    g, w = to_numpy(got), to_numpy(want)
    assert (g.dtype, g.shape) == (w.dtype, w.shape), name
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{name}: NaN where\n{g!r}\n{w!r}"
    infinite = np.isinf(w)
    assert np.array_equal(g[infinite], w[infinite]), f"{name}: {g!r} != {w!r}"
    n = x.size // max(w.size, 1)
    magnitudes = np.abs(x[np.isfinite(x)]).astype(np.float64)
    eps, top = float(np.finfo(w.dtype).eps), float(magnitudes.max(initial=0.0))
    finite = np.isfinite(w)
    if not finite.any():
        return
    wf, gf = w[finite].astype(np.float64), g[finite].astype(np.float64)
    if name in ("mean", "sum"):  # a sum's zero: NumPy seeds +0, the contract folds from x_0
        tol = 2 * (n + 1) * eps * top * (n if name == "sum" else 1) + 0 * wf
    else:
        var = wf * wf if name == "std" else wf
        tol = 4 * (n + 2) * eps * (var + n * eps * top * top)
        tol = np.sqrt(tol) if name == "std" else tol
    assert np.all(np.abs(gf - wf) <= tol), f"{name}:\n{g!r}\n!=\n{w!r} beyond {tol!r}"


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
@FAST
@given(st.data())
def test_cumulative(name: str, draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(STANDARD_DTYPES)), min_dims=1))
    axis = draw.draw(st.integers(-a.ndim, a.ndim - 1)) if a.ndim > 1 else None
    (fa,), (sa,) = both(a)
    agree(name, [fa], [sa], axis=axis, include_initial=draw.draw(st.booleans()))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@FAST
@given(st.data())
def test_argmax_argmin(name: str, draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(REAL))))
    assume(a.size > 0)
    axis = draw.draw(axis_for(a.ndim, tuples=False))
    (fa,), (sa,) = both(a)
    agree(name, [fa], [sa], axis=axis, keepdims=draw.draw(st.booleans()))


@pytest.mark.parametrize("name", ["sort", "argsort"])
@FAST
@given(st.data())
def test_sorting(name: str, draw: st.DataObject) -> None:
    dtype = draw.draw(st.sampled_from(NUMERIC))
    a = draw.draw(hnp.arrays(dtype, hnp.array_shapes(max_side=5)))
    if dtype.startswith("float"):  # ties and signed zeros, where stability shows
        a = np.where(np.abs(a) < 1, np.round(a), a).astype(dtype)
    (fa,), (sa,) = both(a)
    kwargs = {
        "axis": draw.draw(st.integers(-a.ndim, a.ndim - 1)),
        "descending": draw.draw(st.booleans()),
    }
    if name == "argsort":
        agree(name, [fa], [sa], **kwargs, stable=True)
    else:  # array-api-strict's descending sort flips an ascending one: equal elements reversed
        order = xs.argsort(sa, **kwargs, stable=True)
        want = xs.take_along_axis(sa, order, axis=kwargs["axis"])
        assert_same(ft.sort(fa, **kwargs, stable=True), want, "sort")
    unstable = getattr(ft, name)(fa, **kwargs, stable=False)
    if name == "sort":  # equal elements (like -0 and +0) may come in any order
        np.testing.assert_array_equal(to_numpy(unstable), to_numpy(xs.sort(sa, **kwargs)))


@pytest.mark.parametrize("name", ["unique_all", "unique_counts", "unique_inverse", "unique_values"])
@FAST
@given(st.data())
def test_set_functions(name: str, draw: st.DataObject) -> None:
    dtype = draw.draw(st.sampled_from(REAL))
    elements = st.sampled_from([0.0, -0.0, 1.0, np.nan, 2.0]) if dtype in FLOATS else None
    a = draw.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_side=4), elements=elements))
    (fa,), (sa,) = both(a)
    got, want = getattr(ft, name)(fa), getattr(xs, name)(sa)
    if name != "unique_values":
        assert type(got).__name__ == type(want).__name__ and got._fields == want._fields
    assert_same(got, want, name)


def test_nonzero_where_searchsorted() -> None:
    @FAST
    @given(promotable(tuple(NUMERIC)), st.booleans())
    def run(operands: tuple[np.ndarray, np.ndarray], right: bool) -> None:
        a, b = operands
        (fa, fb), (sa, sb) = both(a, b)
        agree("where", [fa != 0, fa, fb], [sa != 0, sa, sb])
        agree("where", [fa != 0, fa, 0], [sa != 0, sa, 0])
        if a.ndim:
            agree("nonzero", [fa], [sa])
        side = "right" if right else "left"
        s = np.sort(a.reshape(-1))
        (fs,), (ss,) = both(s)
        agree("searchsorted", [fs, fb], [ss, sb], side=side)
        order = np.argsort(a.reshape(-1), kind="stable")
        (fu, fo), (su, so) = both(a.reshape(-1), order)
        want = strict_or_skip(lambda: xs.searchsorted(su, sb, side=side, sorter=so))
        assert_same(ft.searchsorted(fu, fb, side=side, sorter=fo), want, "searchsorted sorter")

    run()


@FAST
@given(st.data())
def test_diff(draw: st.DataObject) -> None:
    dtype = draw.draw(st.sampled_from(NUMERIC))
    a = draw.draw(data(dtype, min_dims=1))
    axis = draw.draw(st.integers(-a.ndim, a.ndim - 1))
    n = draw.draw(st.integers(1, 3))
    (fa,), (sa,) = both(a)
    kwargs: dict[str, Any] = {"axis": axis, "n": n}
    agree("diff", [fa], [sa], **kwargs)
    edge = np.ones_like(np.moveaxis(a, axis, 0)[:1])
    edge = np.moveaxis(np.ones_like(a, shape=(1, *edge.shape[1:])), 0, axis)
    (fe,), (se,) = both(edge)
    assert_same(
        ft.diff(fa, **kwargs, prepend=fe, append=fe),
        strict_or_skip(lambda: xs.diff(sa, **kwargs, prepend=se, append=se)),
        "diff(prepend, append)",
    )


# -- manipulation, indexing and creation ------------------------------------------------------


@FAST
@given(st.data())
def test_manipulation(draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(STANDARD_DTYPES)), min_dims=1))
    nd = a.ndim
    (fa,), (sa,) = both(a)
    ax = draw.draw(st.integers(-nd, nd - 1))
    perm = tuple(draw.draw(st.permutations(range(nd))))
    agree("permute_dims", [fa], [sa], axes=perm)
    agree("flip", [fa], [sa], axis=draw.draw(axis_for(nd)))
    agree("expand_dims", [fa], [sa], axis=draw.draw(st.integers(-nd - 1, nd)))
    agree("squeeze", [ft.expand_dims(fa, axis=ax)], [xs.expand_dims(sa, axis=ax)], axis=ax)
    agree("moveaxis", [fa, ax, 0], [sa, ax, 0])
    agree("moveaxis", [fa, (ax,), (-1,)], [sa, (ax,), (-1,)])
    agree("unstack", [fa], [sa], axis=ax)
    agree("reshape", [fa, (-1,)], [sa, (-1,)])
    agree("reshape", [fa, (*a.shape[::-1], 1)], [sa, (*a.shape[::-1], 1)])
    agree("broadcast_to", [fa, (2, *a.shape)], [sa, (2, *a.shape)])
    (fc,), (sc,) = both(np.ones_like(a, shape=(*a.shape[:-1], 1)))
    agree("broadcast_arrays", [fa, fc], [sa, sc])
    agree("concat", [[fa, fa]], [[sa, sa]], axis=ax)
    agree("concat", [[fa, fa]], [[sa, sa]], axis=None)
    agree("stack", [[fa, fa]], [[sa, sa]], axis=draw.draw(st.integers(-nd - 1, nd)))
    shift = draw.draw(st.integers(-5, 5))
    agree("roll", [fa], [sa], shift=shift)
    agree("roll", [fa], [sa], shift=shift, axis=ax)
    agree("roll", [fa], [sa], shift=(shift, 1), axis=(ax, 0))
    reps = tuple(draw.draw(st.lists(st.integers(0, 2), min_size=0, max_size=nd + 1)))
    agree("tile", [fa, reps], [sa, reps])
    counts = draw.draw(st.integers(0, 3))
    agree("repeat", [fa, counts], [sa, counts], axis=ax)
    agree("repeat", [fa, counts], [sa, counts])
    per = np.array(
        draw.draw(st.lists(st.integers(0, 3), min_size=a.shape[ax], max_size=a.shape[ax])),
        dtype=np.int64,
    )
    (fc,), (sc,) = both(per)
    agree("repeat", [fa, fc], [sa, sc], axis=ax)


@FAST
@given(st.data())
def test_take_and_take_along_axis(draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(STANDARD_DTYPES)), min_dims=1))
    assume(a.size > 0)
    ax = draw.draw(st.integers(-a.ndim, a.ndim - 1))
    n = a.shape[ax]
    idx = np.array(draw.draw(st.lists(st.integers(-n, n - 1), max_size=5)), dtype=np.int64)
    (fa, fi), (sa, si) = both(a, idx)
    agree("take", [fa, fi], [sa, si], axis=ax)
    along_shape = tuple(3 if i == ax % a.ndim else m for i, m in enumerate(a.shape))
    along = draw.draw(hnp.arrays(np.int64, along_shape, elements=st.integers(-n, n - 1)))
    (fl,), (sl,) = both(along)
    agree("take_along_axis", [fa, fl], [sa, sl], axis=ax)


@st.composite
def index_keys(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A basic index for `shape`: in-range ints and slices, maybe one ellipsis and a None."""
    key: list[Any] = []
    for n in shape:
        if n and draw(st.booleans()):
            key.append(draw(st.integers(-n, n - 1)))
        else:
            bound = st.none() | st.integers(-n, n)
            step = draw(st.none() | st.sampled_from([1, 2, -1, -2]))
            key.append(slice(draw(bound), draw(bound), step))
    if key and draw(st.booleans()):
        at = draw(st.integers(0, len(key) - 1))
        key[at:] = [Ellipsis, *key[at + 1 :]]
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


@FAST
@given(st.data())
def test_getitem_and_setitem(draw: st.DataObject) -> None:
    a = draw.draw(data(draw.draw(st.sampled_from(REAL))))
    key = draw.draw(index_keys(a.shape))
    (fa,), (sa,) = both(a)
    target = strict_or_skip(lambda: sa[key])
    assert_same(fa[key], target, f"x[{key}]")
    assert_same(fa[...], sa[...], "x[...]")
    (fm,), (sm,) = both(np.asarray(a != 0))
    assert_same(fa[fm], sa[sm], "x[mask]")
    if a.ndim == 1 and a.shape[0]:
        (fr,), (sr,) = both(np.array([0, -1, 0], dtype=np.int64))
        assert_same(fa[fr], sa[sr], "x[int array]")
    value = np.array(draw.draw(hnp.from_dtype(a.dtype)), dtype=a.dtype).item()
    strict_or_skip(lambda: sa.__setitem__(key, value))
    fa[key] = value
    assert_same(fa, sa, f"x[{key}] = {value!r}")
    (fb,), (sb,) = both(draw.draw(data(str(a.dtype), shape=smaller(target.shape))))
    sa[key] = sb
    fa[key] = fb
    assert_same(fa, sa, f"x[{key}] = array")
    fa[fm] = value
    sa[sm] = value
    assert_same(fa, sa, "x[mask] = scalar")


def test_zero_d_results_are_tensors() -> None:
    x = ft.asarray([1.0, 2.0])
    results = [x[0], ft.sum(x), ft.max(x), x[0] + 1, ft.argmax(x), ft.all(x > 0), x[..., 0]]
    assert all(isinstance(r, ft.FuelTensor) and r.shape == () for r in results)


@FAST
@given(
    st.sampled_from(STANDARD_DTYPES),
    st.sampled_from(STANDARD_DTYPES),
    st.booleans(),
    hnp.array_shapes(min_dims=0, max_side=3),
)
def test_astype(src: str, dst: str, copy: bool, shape: tuple[int, ...]) -> None:
    assume(not (src.startswith("complex") and not dst.startswith("complex")))
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(src)
    (fa,), (sa,) = both(a)
    got = ft.astype(fa, getattr(ft, dst), copy=copy)
    assert_same(got, xs.astype(sa, getattr(xs, dst), copy=copy), "astype")
    if src == dst and not copy:
        assert got is fa
    if copy:
        assert not np.shares_memory(np.asarray(got), np.asarray(fa))


def test_creation_functions() -> None:
    cases: list[tuple[str, tuple[Any, ...], dict[str, str | Any]]] = [
        ("arange", (5,), {}),
        ("arange", (1, 7, 2), {}),
        ("arange", (0.0, 1.0, 0.25), {}),
        ("arange", (10, 0, -3), {"dtype": "int8"}),
        ("arange", (0, 3), {"dtype": "float32"}),
        ("eye", (3,), {}),
        ("eye", (2, 4), {"k": -1, "dtype": "int16"}),
        ("full", ((2, 1), 7), {}),
        ("full", ((2,), 1.5), {"dtype": "float32"}),
        ("full", ((), True), {}),
        ("full", ((3,), 2), {"dtype": "uint8"}),
        ("linspace", (0, 1, 5), {}),
        ("linspace", (2.0, -1.0, 4), {"endpoint": False, "dtype": "float32"}),
        ("linspace", (0, 1, 0), {}),
        ("ones", ((2, 0),), {}),
        ("ones", ((3,),), {"dtype": "bool"}),
        ("zeros", (4,), {"dtype": "complex64"}),
    ]
    for name, args, kwargs in cases:
        kw_ft = {k: getattr(ft, v) if k == "dtype" else v for k, v in kwargs.items()}
        kw_xs = {k: getattr(xs, v) if k == "dtype" else v for k, v in kwargs.items()}
        assert_same(getattr(ft, name)(*args, **kw_ft), getattr(xs, name)(*args, **kw_xs), name)
    for like in ("empty_like", "ones_like", "zeros_like"):
        (fa,), (sa,) = both(np.zeros((2, 3), np.int16))
        got, want = getattr(ft, like)(fa), getattr(xs, like)(sa)
        assert (got.shape, to_numpy(got).dtype) == (want.shape, to_numpy(want).dtype)
        if like != "empty_like":
            assert_same(got, want, like)
    (fa,), (sa,) = both(np.arange(12.0).reshape(3, 4))
    for k in (-1, 0, 2):
        agree("tril", [fa], [sa], k=k)
        agree("triu", [fa], [sa], k=k)
    assert_same(ft.full_like(fa, 3), xs.full_like(sa, 3), "full_like")
    assert_same(ft.full_like(fa, 1, dtype=ft.int32), xs.full_like(sa, 1, dtype=xs.int32), "")
    (f1, f2), (s1, s2) = both(np.arange(3.0), np.arange(2.0))
    for indexing in ("xy", "ij"):
        agree("meshgrid", [f1, f2], [s1, s2], indexing=indexing)


@pytest.mark.parametrize("d1", STANDARD_DTYPES)
def test_data_type_functions(d1: str) -> None:
    for d2 in STANDARD_DTYPES:
        f1, f2, s1, s2 = getattr(ft, d1), getattr(ft, d2), getattr(xs, d1), getattr(xs, d2)
        assert ft.can_cast(f1, f2) == xs.can_cast(s1, s2), (d1, d2)
        assert ft.isdtype(f1, f2) == xs.isdtype(s1, s2)
        if _promotes(d1, d2):
            assert ft.result_type(f1, f2).name == d2_name(xs.result_type(s1, s2))
    for kind in (
        "bool",
        "signed integer",
        "unsigned integer",
        "integral",
        "real floating",
        "complex floating",
        "numeric",
    ):
        assert ft.isdtype(getattr(ft, d1), kind) == xs.isdtype(getattr(xs, d1), kind), kind
    for scalar in (True, 1, -1, 1.5, 1j):
        try:
            want = d2_name(xs.result_type(getattr(xs, d1), scalar))
        except (TypeError, OverflowError):
            continue
        assert ft.result_type(getattr(ft, d1), scalar).name == want, (d1, scalar)
        assert ft.result_type(scalar, getattr(ft, d1)).name == want, (scalar, d1)
    info, want_info = (
        (ft.finfo, xs.finfo) if "float" in d1 or "complex" in d1 else (ft.iinfo, xs.iinfo)
    )
    if d1 != "bool":
        got, want = info(getattr(ft, d1)), want_info(getattr(xs, d1))
        for field in ("bits", "max", "min", "eps", "smallest_normal"):
            if hasattr(want, field):
                assert getattr(got, field) == getattr(want, field), field
        assert got.dtype.name == d2_name(want.dtype)


def d2_name(dtype: Any) -> str:
    return str(np.dtype(dtype._np_dtype))
