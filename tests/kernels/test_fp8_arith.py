"""FP8 arithmetic (contracts/fuel-cpu-backend-fp8.md, fuel-reference-backend-fp8.md): the CPU
kernels and the oracle bit for bit against the test's own reference (tests/_fp8.py: the bit
fields by hand, the exact result rounded once by hand) on every pair of patterns of each format
and op, NaNs, signed zeros, infinities and subnormals among them; through dispatch on strided,
offset, flipped, broadcast, empty and 0-d views; the planner picks them with no change of its
own; compare_backends finds the two providers agree. maximum, minimum, pow and % (CPU only)
the same way, against the contract's selection, MPFR's correctly rounded pow and the exact
floored remainder."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _fp8 import FORMATS, every_pair, powered, remainder, rounded, selected

import fueltensor as ft
from fueltensor.kernels._chassis import IMPLEMENTATION
from fueltensor.ops import BINARY_OPS

ROWS = [row for row in BINARY_OPS if row.ieee_rounded]
"""The op table's + - * / rows."""
OTHERS = [row for row in BINARY_OPS if not row.ieee_rounded]
"""maximum, minimum, pow and the remainder: CPU kernels, no oracle."""
SYMBOLS = {np.add: "+", np.subtract: "-", np.multiply: "*", np.divide: "/"}
SUFFIX = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
compiled = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="fuel-cpu-backend's FP8 kernels are compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)


def symbol(row: Any) -> str:
    """The operator of a row, by its NumPy ufunc."""
    return SYMBOLS[row.host]


def check(got: np.ndarray, want: np.ndarray, invalid: np.ndarray, a: Any, b: Any) -> None:
    """Equal bits everywhere but the invalid operations, which must be some NaN; on a mismatch
    name the first pair."""
    g = got.view(np.uint8).reshape(-1)
    nan = nan_mask(got.dtype.name, g)
    bad = np.nonzero(np.where(invalid, ~nan, g != want))[0]
    if bad.size:
        i, lhs, rhs = bad[0], np.ravel(a), np.ravel(b)
        pytest.fail(
            f"{bad.size} pairs differ; first: 0x{int(lhs[i]):02x}, 0x{int(rhs[i]):02x}"
            f" gave 0x{int(g[i]):02x}, the reference 0x{int(want[i]):02x}"
        )


def expected(name: str, row: Any, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(patterns, open lanes) of a row over pairs, by the tests' own reference: + - * / rounded
    once; maximum/minimum selected (no open lane); pow by MPFR (its NaNs open: the C
    library's sign); % exact (its invalid NaNs open)."""
    f = FORMATS[name]
    if row.host in SYMBOLS:
        return rounded(f, a, b, symbol(row))
    if row.host in (np.maximum, np.minimum):
        return selected(f, a, b, row.host is np.maximum), np.zeros(a.size, bool)
    return powered(f, a, b) if row.host is np.power else remainder(f, a, b)


def nan_mask(name: str, bits: np.ndarray) -> np.ndarray:
    """Which patterns are NaNs in format `name`."""
    f = FORMATS[name]
    return np.isnan(np.array([f.value(x) for x in range(256)]))[bits]


@compiled
@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.kernel_op)
@pytest.mark.parametrize("kernel", ["cpu", "oracle"])
def test_every_pair_bit_for_bit(name: str, row: Any, kernel: str) -> None:
    dtype = np.dtype(getattr(ml_dtypes, name))
    a, b = every_pair()
    want, invalid = rounded(FORMATS[name], a, b, symbol(row))
    reg = ft.registry()
    entry = (
        f"{row.kernel_op}_{SUFFIX[name]}" if kernel == "cpu" else f"broadcast_{row.kernel_op}_f8"
    )
    out = np.zeros(a.size, dtype)
    reg.kernel(entry)(a.view(dtype), b.view(dtype), out=out)
    check(out, want, invalid, a, b)


@compiled
@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_dispatch_plans_the_fp8_contracts_on_every_pair(name: str, backend: str) -> None:
    dtype = np.dtype(getattr(ml_dtypes, name))
    a, b = every_pair()
    x, y = ft.asarray(a.view(dtype)), ft.asarray(b.view(dtype))
    for row in ROWS:
        fn = getattr(ft, row.name)
        plan = ft.explain(fn, x, y)
        want_kernel = f"{row.kernel_op}_{SUFFIX[name]}"
        assert plan.kernel is not None and plan.kernel.name == want_kernel, plan
        with ft.use_backend(backend):
            got = np.asarray(fn(x, y))
        want, invalid = rounded(FORMATS[name], a, b, symbol(row))
        check(got, want, invalid, a, b)


def _views(dtype: np.dtype) -> list[tuple[str, Any, Any]]:
    """(label, lhs view, rhs view) pairs of awkward layouts over seeded random patterns."""
    rng = np.random.default_rng(8)
    base = ft.asarray(rng.integers(0, 256, (6, 8), dtype=np.uint8).view(dtype))
    other = ft.asarray(rng.integers(0, 256, (6, 8), dtype=np.uint8).view(dtype))
    row = ft.asarray(rng.integers(0, 256, (8,), dtype=np.uint8).view(dtype))
    empty = ft.asarray(np.zeros((0, 3), dtype))
    scalar = ft.asarray(np.array(0x3A, np.uint8).view(dtype))
    return [
        ("strided", base[::2, 1::2], other[1::2, ::2]),
        ("transposed", base.T, other.T),
        ("offset", base[1:, 2:], other[:-1, :-2]),
        ("flipped", ft.flip(base, axis=0), ft.flip(other, axis=1)),
        ("broadcast row", base, row),
        ("broadcast_to", ft.broadcast_to(row, (3, 8)), other[:3]),
        ("empty", empty, empty),
        ("0-d", scalar, scalar),
        ("0-d with array", scalar, base),
    ]


@compiled
@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("backend", ["cpu", "reference", None])
def test_awkward_views(name: str, backend: str | None) -> None:
    dtype = np.dtype(getattr(ml_dtypes, name))
    for label, x, y in _views(dtype):
        for row in ROWS:
            fn = getattr(ft, row.name)
            ax, ay = np.broadcast_arrays(np.asarray(x), np.asarray(y))
            a, b = ax.view(np.uint8).reshape(-1), ay.view(np.uint8).reshape(-1)
            want, invalid = rounded(FORMATS[name], a, b, symbol(row))
            if backend is None:
                got = fn(x, y)
            else:
                with ft.use_backend(backend):
                    got = fn(x, y)
            assert got.dtype == getattr(ft, name) and got.shape == ax.shape, label
            check(np.ascontiguousarray(np.asarray(got)), want, invalid, a, b)


@compiled
@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("row", OTHERS, ids=lambda r: r.kernel_op)
def test_maximum_minimum_pow_remainder_every_pair(name: str, row: Any) -> None:
    """The CPU kernel directly, and `fueltensor.<op>` planned to it, on all 2^16 pairs."""
    dtype = np.dtype(getattr(ml_dtypes, name))
    a, b = every_pair()
    want, open_ = expected(name, row, a, b)
    kernel = f"{row.kernel_op}_{SUFFIX[name]}"
    out = np.zeros(a.size, dtype)
    ft.registry().kernel(kernel)(a.view(dtype), b.view(dtype), out=out)
    check(out, want, open_, a, b)
    fn, x, y = getattr(ft, row.name), ft.asarray(a.view(dtype)), ft.asarray(b.view(dtype))
    plan = ft.explain(fn, x, y)
    assert plan.kernel is not None and plan.kernel.name == kernel, plan
    check(np.asarray(fn(x, y)), want, open_, a, b)


@compiled
@pytest.mark.parametrize("name", sorted(FORMATS))
def test_maximum_minimum_pow_remainder_awkward_views(name: str) -> None:
    dtype = np.dtype(getattr(ml_dtypes, name))
    for label, x, y in _views(dtype):
        ax, ay = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        a, b = ax.view(np.uint8).reshape(-1), ay.view(np.uint8).reshape(-1)
        for row in OTHERS:
            got = getattr(ft, row.name)(x, y)
            assert got.dtype == getattr(ft, name) and got.shape == ax.shape, label
            check(np.ascontiguousarray(np.asarray(got)), *expected(name, row, a, b), a, b)


@compiled
def test_selection_keeps_signed_zeros_and_nan_signs() -> None:
    """±0 ties give lhs; a NaN lhs wins, else a NaN rhs, quieted, its sign kept (e5m2's
    signaling 0xfd comes back 0xff); e4m3fn's pow overflow is its NaN, e5m2's inf."""
    e5 = ft.asarray(np.array([0x00, 0x80, 0xFD, 0x3C], np.uint8).view(ml_dtypes.float8_e5m2))
    f5 = ft.asarray(np.array([0x80, 0x00, 0x3C, 0x7D], np.uint8).view(ml_dtypes.float8_e5m2))
    assert np.asarray(ft.maximum(e5, f5)).view(np.uint8).tolist() == [0x00, 0x80, 0xFF, 0x7F]
    assert np.asarray(ft.minimum(e5, f5)).view(np.uint8).tolist() == [0x00, 0x80, 0xFF, 0x7F]
    e4 = ft.asarray(np.array([16.0, -16.0], ml_dtypes.float8_e4m3fn))
    three = ft.asarray(np.array([3.0, 3.0], ml_dtypes.float8_e4m3fn))
    assert np.asarray(e4**three).view(np.uint8).tolist() == [0x7F, 0xFF]
    f5 = ft.asarray(np.array([256.0, -256.0], ml_dtypes.float8_e5m2))
    two = ft.asarray(np.array([3.0, 3.0], ml_dtypes.float8_e5m2))
    assert np.asarray(f5**two).view(np.uint8).tolist() == [0x7C, 0xFC]


@compiled
def test_overflow_is_inf_or_nan_never_saturated() -> None:
    e4 = ft.asarray(np.array([448.0, -448.0, 1.0], ml_dtypes.float8_e4m3fn))
    e5 = ft.asarray(np.array([57344.0, -57344.0, 1.0], ml_dtypes.float8_e5m2))
    zero4 = ft.asarray(np.zeros(3, ml_dtypes.float8_e4m3fn))
    assert np.asarray(e4 + e4).view(np.uint8).tolist() == [0x7F, 0xFF, 0x40]
    assert np.asarray(e5 + e5).view(np.uint8).tolist() == [0x7C, 0xFC, 0x40]
    assert np.asarray(e4 / zero4).view(np.uint8).tolist() == [0x7F, 0xFF, 0x7F]


@compiled
def test_compare_backends_finds_cpu_and_oracle_agree() -> None:
    a, b = every_pair()
    for name in FORMATS:
        dtype = np.dtype(getattr(ml_dtypes, name))
        x, y = ft.asarray(a.view(dtype)), ft.asarray(b.view(dtype))
        with ft.compare_backends() as report:
            for row in ROWS:
                getattr(ft, row.name)(x, y)
        text = str(report)
        assert "0 of" in text and "compared elements differ" in text, text
        assert text.count(" vs broadcast_") == len(ROWS), text


@compiled
def test_compare_backends_sets_ml_dtypes_beside_them_nan_bits_alone_differ() -> None:
    pytest.importorskip("ml_dtypes")
    a, b = every_pair()
    for name in FORMATS:
        dtype = np.dtype(getattr(ml_dtypes, name))
        x, y = ft.asarray(a.view(dtype)), ft.asarray(b.view(dtype))
        with ft.compare_backends("numpy") as report:
            for row in ROWS:
                getattr(ft, row.name)(x, y)
        text = str(report)
        assert text.count(" vs numpy_") == len(ROWS), text
        assert "(all only in a NaN's payload or sign)" in text, text
