"""The namespace's functions against the standard's text: names, signatures (positional-only and
keyword-only markers, compared with array-api-strict), result dtypes and shapes, promotion and
Python-scalar rules, special cases, and the documented deviations."""

from __future__ import annotations

import inspect
import itertools
import math

import numpy as np
import pytest
from _extras import extra

import fueltensor as ft

array_api_strict = extra("array_api_strict", "test")

array_api_strict.set_array_api_strict_flags(api_version="2024.12")

# The 2024.12 standard's functions outside the linalg and fft extensions, chapter by chapter.
STANDARD = {
    "creation": "arange asarray empty empty_like eye from_dlpack full full_like linspace "
    "meshgrid ones ones_like tril triu zeros zeros_like",
    "data types": "astype can_cast finfo iinfo isdtype result_type",
    "element-wise": "abs acos acosh add asin asinh atan atan2 atanh bitwise_and "
    "bitwise_left_shift bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip "
    "conj copysign cos cosh divide equal exp expm1 floor floor_divide greater greater_equal "
    "hypot imag isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp "
    "logical_and logical_not logical_or logical_xor maximum minimum multiply negative "
    "nextafter not_equal positive pow real reciprocal remainder round sign signbit sin sinh "
    "square sqrt subtract tan tanh trunc",
    "indexing": "take take_along_axis",
    "linear algebra": "matmul matrix_transpose tensordot vecdot",
    "manipulation": "broadcast_arrays broadcast_to concat expand_dims flip moveaxis "
    "permute_dims repeat reshape roll squeeze stack tile unstack",
    "searching": "argmax argmin count_nonzero nonzero searchsorted where",
    "set": "unique_all unique_counts unique_inverse unique_values",
    "sorting": "argsort sort",
    "statistical": "cumulative_prod cumulative_sum max mean min prod std sum var",
    "utility": "all any diff",
}
FUNCTIONS = sorted(n for names in STANDARD.values() for n in names.split())
DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def test_every_standard_name_and_constant_is_exported() -> None:
    missing = [n for n in FUNCTIONS + DTYPES if not hasattr(ft, n)]
    assert not missing
    assert (ft.e, ft.pi) == (math.e, math.pi)
    assert math.isinf(ft.inf) and ft.inf > 0 and math.isnan(ft.nan) and ft.newaxis is None
    assert set(FUNCTIONS) <= set(ft.__all__)


def _shape(fn: object) -> list[tuple[str, inspect._ParameterKind]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values()]  # type: ignore[arg-type]


# array-api-strict's expand_dims follows the 2025.12 draft (axis required); 2024.12 writes
# `expand_dims(x, /, *, axis=0)` and we accept axis by keyword or position. `diff` also takes
# `n` by position, as NumPy does and scikit-learn's roc_curve calls it; `round` takes NumPy's
# keyword `decimals` (for `x.round(2)`), both in docs/deviations.md; `astype` takes the
# keyword-only `saturate=False` after the standard's (docs/casts.md).
SIGNATURE_EXCEPTIONS = {"expand_dims", "diff", "round", "astype"}


def test_astype_is_the_references_with_a_keyword_only_saturate() -> None:
    ours = inspect.signature(ft.astype).parameters
    assert _shape(ft.astype) == [
        *_shape(array_api_strict.astype),
        ("saturate", inspect.Parameter.KEYWORD_ONLY),
    ]
    assert ours["saturate"].default is False


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - SIGNATURE_EXCEPTIONS))
def test_signature_matches_the_reference(name: str) -> None:
    assert _shape(getattr(ft, name)) == _shape(getattr(array_api_strict, name))


def test_diff_takes_n_by_position_or_keyword() -> None:
    x = ft.asarray([1.0, 4.0, 9.0, 16.0, 25.0])
    expected = np.diff(np.asarray([1.0, 4.0, 9.0, 16.0, 25.0]), 2)
    assert np.array_equal(np.asarray(ft.diff(x, 2)), expected)
    assert np.array_equal(np.asarray(ft.diff(x, n=2)), expected)
    with pytest.raises(TypeError):
        ft.diff(x, 2, -1)  # type: ignore[misc]


def test_expand_dims_signature() -> None:
    params = inspect.signature(ft.expand_dims).parameters
    assert params["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert params["axis"].default == 0
    x = ft.ones((2, 3))
    assert ft.expand_dims(x, axis=-1).shape == (2, 3, 1)
    assert ft.expand_dims(x).shape == (1, 2, 3)
    with pytest.raises(IndexError):
        ft.expand_dims(x, axis=3 + 1)


ARRAY_METHODS = [
    "__abs__",
    "__add__",
    "__and__",
    "__array_namespace__",
    "__bool__",
    "__complex__",
    "__dlpack__",
    "__dlpack_device__",
    "__eq__",
    "__float__",
    "__floordiv__",
    "__ge__",
    "__getitem__",
    "__gt__",
    "__index__",
    "__int__",
    "__invert__",
    "__le__",
    "__lshift__",
    "__lt__",
    "__matmul__",
    "__mod__",
    "__mul__",
    "__ne__",
    "__neg__",
    "__or__",
    "__pos__",
    "__pow__",
    "__rshift__",
    "__setitem__",
    "__sub__",
    "__truediv__",
    "__xor__",
    "to_device",
]


KEYWORD_ONLY = {"api_version", "stream", "max_version", "dl_device", "copy"}


@pytest.mark.parametrize("name", ARRAY_METHODS)
def test_array_method_positional_markers(name: str) -> None:
    """The standard's array methods: operands positional-only, options keyword-only."""
    ours = inspect.signature(getattr(ft.FuelTensor, name)).parameters
    ref = inspect.signature(getattr(type(array_api_strict.asarray(1)), name)).parameters
    assert list(ours) == list(ref)
    for p in list(ours.values())[1:]:
        want = "KEYWORD_ONLY" if p.name in KEYWORD_ONLY else "POSITIONAL_ONLY"
        assert p.kind is getattr(inspect.Parameter, want), (name, p.name)


# -- promotion --------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b", list(itertools.product(DTYPES, repeat=2)))
def test_promotion_follows_the_standard_lattice(a: str, b: str) -> None:
    try:
        want = array_api_strict.result_type(
            getattr(array_api_strict, a), getattr(array_api_strict, b)
        )
    except TypeError:
        pytest.skip(f"{a} with {b} is not promoted by the standard")
    got = ft.result_type(getattr(ft, a), getattr(ft, b))
    assert got.name == str(want).rsplit(".", 1)[-1]
    x, y = ft.ones((2,), dtype=getattr(ft, a)), ft.ones((2,), dtype=getattr(ft, b))
    assert ft.equal(x, y).dtype is ft.bool
    if got is not ft.bool:
        assert ft.where(ft.asarray([True, False]), x, y).dtype is got
    assert ft.can_cast(getattr(ft, a), got)


def test_mixed_kind_promotion_is_the_documented_extension() -> None:
    """Outside the standard: an integer or bool meeting a float takes the float (PyTorch)."""
    assert ft.result_type(ft.int64, ft.float32) is ft.float32
    assert ft.result_type(ft.bool, ft.int8) is ft.int8
    assert ft.result_type(ft.bfloat16, ft.float16) is ft.float32
    assert ft.result_type(ft.bfloat16, ft.float64) is ft.float64
    assert not ft.can_cast(ft.int8, ft.float32)  # can_cast keeps to the standard's lattice
    assert not ft.can_cast(ft.float64, ft.float32)


def test_python_scalars_are_weak() -> None:
    i8, f32 = ft.asarray([1, 2], dtype=ft.int8), ft.asarray([1.0, 2.0], dtype=ft.float32)
    assert (i8 + 1).dtype is ft.int8
    assert (f32 * 2.0).dtype is ft.float32
    assert (f32 < 1).dtype is ft.bool
    assert (i8 & 3).dtype is ft.int8
    assert ft.result_type(f32, 1.0, 2) is ft.float32
    assert ft.result_type(ft.int16, True) is ft.int16
    assert ft.where(i8 > 1, i8, 0).dtype is ft.int8
    with pytest.raises(OverflowError):
        i8 + 1000
    with pytest.raises(ValueError, match="at least one"):
        ft.result_type(1, 2.0)


# -- result dtypes and shapes -----------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, want",
    [
        ("bool", "int64"),
        ("int8", "int64"),
        ("uint8", "uint64"),
        ("int64", "int64"),
        ("float32", "float32"),
        ("complex64", "complex64"),
    ],
)
def test_sum_and_prod_accumulate_as_the_standard_says(dtype: str, want: str) -> None:
    x = ft.ones((3, 2), dtype=getattr(ft, dtype))
    for fn in (ft.sum, ft.prod, ft.cumulative_sum):
        kwargs = {"axis": 0} if fn is ft.cumulative_sum else {}
        assert fn(x, **kwargs).dtype is getattr(ft, want), fn.__name__
    assert ft.sum(x, dtype=ft.float64).dtype is ft.float64


def test_reduction_shapes() -> None:
    x = ft.reshape(ft.arange(24.0), (2, 3, 4))
    assert ft.sum(x, axis=(0, 2)).shape == (3,)
    assert ft.mean(x, axis=1, keepdims=True).shape == (2, 1, 4)
    assert ft.max(x).shape == ()
    assert ft.argmax(x, axis=-1).dtype is ft.int64
    assert ft.argmax(x, keepdims=True).shape == (1, 1, 1)
    assert ft.count_nonzero(x, axis=0).shape == (3, 4)
    assert ft.cumulative_sum(x, axis=1, include_initial=True).shape == (2, 4, 4)
    assert ft.std(x, axis=(), correction=0).shape == (2, 3, 4)
    assert float(ft.sum(x)) == sum(range(24))


def test_empty_reductions() -> None:
    e = ft.zeros((0, 3))
    assert float(ft.sum(e)) == 0.0 and float(ft.prod(e)) == 1.0
    assert math.isnan(float(ft.mean(e)))
    assert bool(ft.all(e)) and not bool(ft.any(e))
    with pytest.raises(ValueError):
        ft.argmax(e)


def test_half_types_reduce_in_float32() -> None:
    """1 + 256 * 2**-8 ones: a bfloat16 accumulator stalls at 256, float32 does not."""
    x = ft.ones((1024,), dtype=ft.bfloat16)
    total = ft.sum(x)
    assert total.dtype is ft.bfloat16
    assert float(total) == 1024.0
    assert float(ft.mean(ft.asarray([1.0, 2.0, 4.0], dtype=ft.float16))) == pytest.approx(
        7 / 3, rel=1e-3
    )


def test_creation_defaults() -> None:
    assert ft.arange(5).dtype is ft.int64 and ft.arange(0.0, 1.0, 0.25).shape == (4,)
    assert ft.full((2,), True).dtype is ft.bool
    assert ft.full((2,), 1).dtype is ft.int64
    assert ft.full((2,), 1.0).dtype is ft.float64
    assert ft.full((2,), 1j).dtype is ft.complex128
    assert ft.linspace(0, 1, 5).dtype is ft.float64
    assert ft.zeros(3).dtype is ft.float64 and ft.empty((2, 0)).shape == (2, 0)
    assert ft.eye(2, 3, k=1).shape == (2, 3)
    assert ft.full_like(ft.ones(2, dtype=ft.int8), 7).dtype is ft.int8
    g = ft.meshgrid(ft.arange(3), ft.arange(2))
    assert [t.shape for t in g] == [(2, 3), (2, 3)]
    with pytest.raises(ValueError, match="device"):
        ft.zeros(2, device="gpu")


def test_info() -> None:
    info = ft.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_device() == "cpu" and info.devices() == ["cpu"]
    assert info.default_dtypes() == {
        "real floating": ft.float64,
        "complex floating": ft.complex128,
        "integral": ft.int64,
        "indexing": ft.int64,
    }
    assert set(info.dtypes()) == set(DTYPES)
    assert set(info.dtypes(kind="integral")) == {d for d in DTYPES if "int" in d}
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {
        "bool",
        "complex64",
        "complex128",
    }
    assert ft.isdtype(ft.bfloat16, "real floating") and ft.isdtype(ft.int8, ("bool", "integral"))
    assert ft.isdtype(ft.int8, "numeric") and not ft.isdtype(ft.bool, "numeric")


def test_finfo_iinfo() -> None:
    f = ft.finfo(ft.float32)
    assert (f.bits, f.eps, f.max) == (32, 2.0**-23, float(np.finfo(np.float32).max))
    assert ft.finfo(ft.complex128).dtype is ft.float64
    assert ft.finfo(ft.bfloat16).eps == 2.0**-7
    i = ft.iinfo(ft.int8)
    assert (i.bits, i.min, i.max) == (8, -128, 127)
    with pytest.raises(TypeError):
        ft.finfo(ft.int8)


# -- special cases from the standard's text ---------------------------------------------------


def _values(t: ft.FuelTensor) -> list[float]:
    return [float(v) for v in np.asarray(t)]


def test_floor_divide_infinities() -> None:
    """The standard: +inf // positive finite = +inf; finite // +inf = +0 or -0 by sign."""
    got = ft.floor_divide(
        ft.asarray([math.inf, -math.inf, 1.0, -1.0]), ft.asarray([2.0, 2.0, math.inf, math.inf])
    )
    v = _values(got)
    assert v[:2] == [math.inf, -math.inf]
    assert v[2] == 0.0 and math.copysign(1, v[2]) == 1
    assert v[3] == 0.0 and math.copysign(1, v[3]) == -1
    assert _values(ft.asarray([7.0, -7.0]) // 2) == [3.0, -4.0]


def test_rounding_and_signs() -> None:
    assert _values(ft.round(ft.asarray([0.5, 1.5, 2.5, -0.5]))) == [0.0, 2.0, 2.0, -0.0]
    assert np.asarray(ft.signbit(ft.asarray([-0.0, 0.0, -1.0]))).tolist() == [True, False, True]
    assert ft.round(ft.asarray([3], dtype=ft.int8)).dtype is ft.int8
    assert _values(ft.abs(ft.asarray([3 + 4j]))) == [5.0]


def test_nan_handling() -> None:
    x = ft.asarray([3.0, math.nan, 1.0, math.nan])
    assert math.isnan(float(ft.max(x)))
    assert ft.unique_values(x).shape == (4,)  # each NaN is its own unique value
    s = _values(ft.sort(x))
    assert s[:2] == [1.0, 3.0] and all(math.isnan(v) for v in s[2:])
    c = _values(ft.clip(ft.asarray([-2.0, 0.5, math.nan]), min=0.0, max=1.0))
    assert c[:2] == [0.0, 0.5] and math.isnan(c[2])


def test_stable_descending_sort_keeps_ties_in_order() -> None:
    x = ft.asarray([1, 3, 1, 3, 2])
    assert np.asarray(ft.argsort(x, descending=True)).tolist() == [1, 3, 4, 0, 2]
    assert np.asarray(ft.sort(x, descending=True)).tolist() == [3, 3, 2, 1, 1]


def test_clip_keeps_dtype_and_handles_out_of_range_bounds() -> None:
    x = ft.asarray([-100, 0, 100], dtype=ft.int8)
    got = ft.clip(x, min=-1000, max=50)
    assert got.dtype is ft.int8 and np.asarray(got).tolist() == [-100, 0, 50]
    with pytest.raises(TypeError):
        ft.clip(x, min=0.5)


def test_unique_all_fields() -> None:
    x = ft.asarray([[2, 1], [2, 3]])
    r = ft.unique_all(x)
    assert np.asarray(r.values).tolist() == [1, 2, 3]
    assert np.asarray(r.indices).tolist() == [1, 0, 3]
    assert r.inverse_indices.shape == (2, 2)
    assert np.asarray(r.counts).tolist() == [1, 2, 1]
    assert np.asarray(ft.unique_inverse(x).inverse_indices).tolist() == [[1, 0], [1, 2]]


def test_manipulation_views_and_copies() -> None:
    x = ft.reshape(ft.arange(6), (2, 3))
    assert ft.moveaxis(x, 0, -1).shape == (3, 2) and ft.squeeze(x[None], axis=0).shape == (2, 3)
    assert [t.shape for t in ft.unstack(x, axis=1)] == [(2,), (2,), (2,)]
    assert ft.concat([x, x], axis=None).shape == (12,)
    assert ft.stack([x, x], axis=-1).shape == (2, 3, 2)
    assert ft.concat([x, ft.ones((1, 3), dtype=ft.int8)]).dtype is ft.int64
    with pytest.raises(ValueError):
        ft.squeeze(x, axis=0)
    b = ft.broadcast_arrays(ft.ones((2, 1)), ft.ones(3))
    assert [t.shape for t in b] == [(2, 3), (2, 3)]


def test_linear_algebra() -> None:
    a = ft.reshape(ft.arange(6.0), (2, 3))
    np.testing.assert_array_equal(np.asarray(a @ a.mT), np.asarray(a) @ np.asarray(a).T)
    assert ft.tensordot(a, a, axes=([1], [1])).shape == (2, 2)
    assert _values(ft.vecdot(a, a)) == [5.0, 50.0]
    assert (
        ft.matmul(ft.ones((3, 3), dtype=ft.bfloat16), ft.ones(3, dtype=ft.bfloat16)).dtype
        is ft.bfloat16
    )
    with pytest.raises(ValueError):
        ft.matmul(ft.asarray(1.0), a)


# -- deviations, as docs/deviations.md's table lists them --------------------------------------


def test_remainder_is_the_exact_floored_remainder() -> None:
    """`%` is Python's and NumPy's remainder (issue 44): 5 % inf is 5, -1 % 1e-30 is NumPy's
    9.78e-31 (the seeds' formula gave NaN and 0), and 10^5 random float32 pairs of every
    magnitude give np.remainder's bits (NaNs compared as NaNs: their payloads are the
    contract's rule, not NumPy's)."""
    assert _values(ft.asarray([5.0]) % ft.asarray([math.inf])) == [5.0]
    assert _values(ft.remainder(ft.asarray([-1.0]), ft.asarray([1e-30]))) == [
        float(np.remainder(-1.0, 1e-30))
    ]
    assert _values(ft.asarray([-0.0]) % ft.asarray([2.0])) == [0.0]
    assert math.copysign(1, _values(ft.asarray([0.0]) % ft.asarray([-2.0]))[0]) == -1
    rng = np.random.default_rng(44)
    a, b = (
        (rng.standard_normal(10**5) * 10.0 ** rng.uniform(-40, 38, 10**5)).astype(np.float32)
        for _ in range(2)
    )
    b[:100] = 0
    got = np.asarray(ft.asarray(a) % ft.asarray(b))
    with np.errstate(all="ignore"):
        want = np.remainder(a, b)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def test_the_seeds_formula_remainder_runs_where_named() -> None:
    """The seeds' `rem_*` contracts (a - floor(a / b) * b, each step rounded) stay registered
    and run where their kernel name is named, never by default."""
    reg = ft.registry()
    assert {"rem_f32", "rem_f64", "rem_bf16", "rem_f16"} <= set(reg.named_contracts())
    x, y = ft.asarray([5.0, 1e10], dtype=ft.float32), ft.asarray([math.inf, 3.0], dtype=ft.float32)
    with ft.use_backend("rem_f32"), ft.trace() as plans:
        formula = _values(x % y)
    assert plans[0].kernel is not None and plans[0].kernel.name == "rem_f32"
    assert math.isnan(formula[0]) and formula[1] == 0.0  # the formula's, where NumPy gives 5, 1
    outside = ft.explain(ft.remainder, x, y).rejected["rem_f32"]
    assert "joins only where it is named" in outside[0]
    with ft.use_registry(reg.joined("rem_f32")):  # joined: it competes, and is outranked
        assert "outranked" in ft.explain(ft.remainder, x, y).rejected["rem_f32"][0]
    with ft.trace() as plans:
        assert _values(x % y) == [5.0, 1.0]
    assert plans[0].kernel is not None and plans[0].kernel.name == "mod_f32"


def test_maximum_minimum_tie_keeps_the_left_operand() -> None:
    mx = _values(ft.maximum(ft.asarray([-0.0]), ft.asarray([0.0])))[0]
    mn = _values(ft.minimum(ft.asarray([0.0]), ft.asarray([-0.0])))[0]
    assert math.copysign(1, mx) == -1 and math.copysign(1, mn) == 1


def test_complex_to_real_astype_is_refused() -> None:
    with pytest.raises(TypeError, match="imaginary"):
        ft.astype(ft.asarray([1j]), ft.float64)
    x = ft.asarray([1.0])
    assert ft.astype(x, ft.float64, copy=False) is x
    assert ft.astype(x, ft.float64) is not x
