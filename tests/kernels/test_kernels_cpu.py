"""fuel-cpu-backend thunks, bit for bit against the scalar contract reference in `_oracle`.

Every check runs on each implementation (`_impls.IMPLS`): the pure-NumPy chassis and the compiled
kernels, the latter once per instruction set the extension has a body for on this machine.
"""

from __future__ import annotations

import itertools
import os
import platform
import zlib
from typing import Any

import numpy as np
import pytest
from _impls import IMPLS, thunk, using
from _oracle import (
    BF16,
    F16,
    F32,
    F64,
    FORMATS,
    Fmt,
    as_array,
    cpu_expected,
    encode,
    f64_bits,
    special_bits,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels import casting, cpu
from fueltensor.kernels._chassis import BLOCK, IMPLEMENTATION, IMPLEMENTATIONS, NATIVE
from fueltensor.ops import (
    BINARY_OPS,
    COMPARISON_OPS,
    CONTRACTION_OPS,
    PLANNED_REDUCTIONS,
    TERNARY_OPS,
    UNARY_OPS,
)

OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod", "rem")
KERNELS = [(op, fmt) for op in OPS for fmt in ("f32", "f64", "bf16", "f16")]

impls = pytest.mark.parametrize("impl", IMPLS)


def run(impl: str, op: str, fmt: Fmt, lhs: Any, rhs: Any) -> Any:
    """Run a thunk into a garbage-filled output; check inputs untouched; return the bits."""
    lhs_before, rhs_before = lhs.copy(), rhs.copy()
    out = np.full(lhs.shape, 0x5A5A, dtype=fmt.uint).view(fmt.np_dtype)
    with using(impl):
        thunk(impl, op, fmt.name)(lhs, rhs, out=out)
    assert lhs.view(fmt.uint).tobytes() == lhs_before.view(fmt.uint).tobytes()
    assert rhs.view(fmt.uint).tobytes() == rhs_before.view(fmt.uint).tobytes()
    return out.view(fmt.uint)


def assert_bits(impl: str, op: str, fmt: Fmt, lhs: Any, rhs: Any) -> None:
    """The kernel's bits equal the reference's, with a readable first mismatch."""
    got = run(impl, op, fmt, lhs, rhs)
    want = cpu_expected(op, lhs, rhs, fmt)
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    if bad.size:
        i = int(bad[0])
        a = int(lhs.reshape(-1).view(fmt.uint)[i])
        b = int(rhs.reshape(-1).view(fmt.uint)[i])
        pytest.fail(
            f"{impl} {op}_{fmt.name}: {bad.size} mismatches; first {a:#x} op {b:#x}: "
            f"got {int(got.reshape(-1)[i]):#x}, want {int(want.reshape(-1)[i]):#x}"
        )


def test_entry_points_are_the_documented_thunks() -> None:
    """The 36 binary thunks (the seeds' 32 and the exact remainder's 4), the 4 integer powers
    (`powi_<dtype>`), the 24 comparisons and the 8 of where and clip (exact: both
    implementations have them), the 24 reductions and the 3 matmuls (BF16, F16 and BF16 in the
    pairs order: the compiled cores, or pure-NumPy bodies of the same order) and, where the
    compiled kernels run, the 44 unary ones, the 45 casts and the 16 FP8 binary kernels
    (`UNLINKED` names them otherwise), nothing else."""
    assert cpu.PROVIDER == "fuel-cpu-backend"
    formats = ("f32", "f64", "bf16", "f16")
    unary = [(row.kernel_op, f) for row in UNARY_OPS for f in formats]
    comparisons = [(row.kernel_op, f) for row in (*COMPARISON_OPS, *TERNARY_OPS) for f in formats]
    compiled = IMPLEMENTATION == "native"
    casts = [casting.kernel_name(*cast) for cast in casting.CASTS]
    assert len(casts) == 45
    fp8 = [f"{row.kernel_op}_{f}" for row in BINARY_OPS for f in ("e4m3", "e5m2")]
    assert len(fp8) == 16
    reductions = [(row.kernel_op, f) for row in PLANNED_REDUCTIONS for f in formats]
    matmul = [(row.kernel_op, f) for row in CONTRACTION_OPS for f in ("bf16", "f16", "bf16_pairs")]
    assert len(cpu.ENTRY_POINTS) == 36 + 4 + 24 + 8 + 24 + 3 + (
        len(unary) + 45 + 16 if compiled else 0
    )
    listed = [f"{op}_{f}" for op, f in (*KERNELS, *(("powi", f) for f in formats), *comparisons)]
    listed += [f"{op}_{f}" for op, f in (*reductions, *matmul)]
    listed += [f"{op}_{f}" for op, f in unary] + casts + fp8 if compiled else []
    for name in listed:
        assert cpu.ENTRY_POINTS[f"fuel_cpu_backend::byte_kernels::{name}"].__name__ == name
    unlinked = {f"fuel_cpu_backend::byte_kernels::{op}_{fmt}" for op, fmt in unary}
    unlinked |= {f"fuel_cpu_backend::byte_kernels::{name}" for name in casts + fp8}
    assert set(cpu.UNLINKED()) == (set() if compiled else unlinked)


@impls
@pytest.mark.parametrize(("op", "fmt"), KERNELS)
def test_special_value_pairs(impl: str, op: str, fmt: str) -> None:
    f = FORMATS[fmt]
    pairs = list(itertools.product(special_bits(f), repeat=2))
    lhs = as_array([a for a, _ in pairs], f)
    rhs = as_array([b for _, b in pairs], f)
    assert_bits(impl, op, f, lhs, rhs)


@impls
@pytest.mark.parametrize(("op", "fmt"), KERNELS)
def test_random_bits_across_blocks(impl: str, op: str, fmt: str) -> None:
    f = FORMATS[fmt]
    rng = np.random.default_rng(zlib.crc32(f"{op}-{fmt}".encode()))  # stable across processes
    n = BLOCK + 37
    info = np.iinfo(f.uint)
    lhs = rng.integers(0, int(info.max), n, dtype=f.uint, endpoint=True).view(f.np_dtype)
    rhs = rng.integers(0, int(info.max), n, dtype=f.uint, endpoint=True).view(f.np_dtype)
    assert_bits(impl, op, f, lhs.reshape(1, n), rhs.reshape(1, n))


@impls
@pytest.mark.parametrize(("op", "fmt"), KERNELS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_random_bit_patterns(impl: str, op: str, fmt: str, data: st.DataObject) -> None:
    f = FORMATS[fmt]
    n = data.draw(st.integers(0, 40))
    word = st.integers(0, (1 << f.width) - 1)
    lhs = as_array(data.draw(st.lists(word, min_size=n, max_size=n)), f)
    rhs = as_array(data.draw(st.lists(word, min_size=n, max_size=n)), f)
    assert_bits(impl, op, f, lhs, rhs)


@impls
@pytest.mark.parametrize(("op", "fmt"), KERNELS)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (2, 3)])
def test_zero_d_and_empty(impl: str, op: str, fmt: str, shape: tuple[int, ...]) -> None:
    f = FORMATS[fmt]
    n = int(np.prod(shape))
    lhs = as_array([encode(7.25, f)] * n, f, shape)
    rhs = as_array([encode(-2.0, f)] * n, f, shape)
    assert_bits(impl, op, f, lhs, rhs)


@impls
@pytest.mark.parametrize(("op", "fmt"), KERNELS)
def test_mismatched_lengths_raise_naming_thunk_and_bytes(impl: str, op: str, fmt: str) -> None:
    f = FORMATS[fmt]
    size = f.width // 8
    lhs = np.zeros(3, f.np_dtype)
    rhs = np.zeros(4, f.np_dtype)
    out = np.zeros(3, f.np_dtype)
    with pytest.raises(ValueError, match=rf"{op}_{fmt}.*{3 * size}.*{4 * size}.*{3 * size}"):
        thunk(impl, op, fmt)(lhs, rhs, out=out)


@impls
def test_wrong_dtype_is_refused(impl: str) -> None:
    with pytest.raises(TypeError, match="add_f32"):
        thunk(impl, "add", "f32")(np.zeros(2), np.zeros(2), out=np.zeros(2))


@impls
@pytest.mark.parametrize("fmt", ["f32", "f64", "bf16", "f16"])
def test_no_warning_even_under_raise_errstate(impl: str, fmt: str) -> None:
    f = FORMATS[fmt]
    lhs = np.array([0.0, 1.0, -1.0, np.inf], f.np_dtype)
    rhs = np.array([0.0, 0.0, 0.5, np.inf], f.np_dtype)
    out = np.empty_like(lhs)
    with np.errstate(all="raise"), using(impl):
        for op in OPS:
            thunk(impl, op, fmt)(lhs, rhs, out=out)


@impls
@pytest.mark.parametrize(("fmt", "ftype"), [("f32", np.float32), ("f64", np.float64)])
def test_contract_traps_that_numpy_gets_differently(impl: str, fmt: str, ftype: Any) -> None:
    f = FORMATS[fmt]

    def one(op: str, a: float, b: float) -> int:
        return int(run(impl, op, f, np.array([a], ftype), np.array([b], ftype))[0])

    assert np.isnan(as_array([one("rem", 5.0, np.inf)], f)[0])  # np.remainder gives 5
    assert one("rem", 0.0, -2.0) == 0  # +0, where np.remainder gives -0
    assert one("maximum", 0.0, -0.0) == 0 and one("maximum", -0.0, 0.0) == f.sign
    assert one("minimum", 0.0, -0.0) == 0 and one("minimum", -0.0, 0.0) == f.sign
    assert np.isinf(as_array([one("div", 1.0, 0.0)], f)[0])
    assert np.isnan(as_array([one("pow", -2.0, 0.5)], f)[0])


@impls
def test_f32_remainder_differs_from_numpy_where_the_contract_says(impl: str) -> None:
    a, b = np.array([0.1], np.float32), np.array([0.01], np.float32)
    got = run(impl, "rem", F32, a, b)[0]
    assert got == cpu_expected("rem", a, b, F32)[0]
    assert got != np.remainder(a, b).view(np.uint32)[0]


@impls
@pytest.mark.parametrize("fmt", [BF16, F16])
def test_nan_payload_survives_the_narrow(impl: str, fmt: Fmt) -> None:
    nan = fmt.sign | fmt.exp_mask | fmt.quiet | 0b11
    lhs = as_array([nan, nan], fmt)
    rhs = as_array([encode(1.0, fmt), encode(1.0, fmt)], fmt)
    assert list(run(impl, "add", fmt, lhs, rhs)) == [nan, nan]
    assert list(run(impl, "maximum", fmt, lhs, rhs)) == [nan, nan]


@impls
@pytest.mark.parametrize("fmt", [BF16, F16])
def test_half_maximum_returns_a_signalling_nan_unchanged(impl: str, fmt: Fmt) -> None:
    snan = fmt.exp_mask | 1
    lhs = as_array([encode(1.0, fmt), snan], fmt)
    rhs = as_array([snan, encode(1.0, fmt)], fmt)
    assert list(run(impl, "maximum", fmt, lhs, rhs)) == [snan, snan]
    assert list(run(impl, "minimum", fmt, lhs, rhs)) == [snan, snan]


def test_oracle_rounding_agrees_with_numpy_casts_on_non_nan_values() -> None:
    rng = np.random.default_rng(7)
    words = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    values = words.view(np.float32)
    values = values[~np.isnan(values)]
    with np.errstate(all="ignore"):
        f16 = values.astype(np.float16).view(np.uint16)
    for v, h in zip(values.tolist(), f16.tolist(), strict=True):
        assert encode(v, F16) == h
    assert encode(1e300, F32) == F32.exp_mask
    assert encode(-1e-300, F64) == f64_bits(-1e-300)
    assert encode(2.0**-1074, F64) == 1 and encode(2.0**-1075, F64) == 0


@impls
@pytest.mark.parametrize(("op", "fmt"), KERNELS)
@pytest.mark.parametrize("n", [1, 5, 9, 12, 16, 17, 33, 40, 100, 1003, BLOCK + 37])
def test_two_nans_give_the_lhs_nan_in_every_lane(impl: str, op: str, fmt: str, n: int) -> None:
    f = FORMATS[fmt]
    lhs = as_array([f.exp_mask | 1] * n, f)
    rhs = as_array([f.sign | f.exp_mask | f.quiet | 2] * n, f)
    want = cpu_expected(op, lhs[:1], rhs[:1], f)[0]
    assert set(run(impl, op, f, lhs, rhs).tolist()) == {int(want)}


# Issue 10: lanes where NumPy's AVX-512 power loops differ from the C library; the kernels must
# give the C library's bits on every machine. (fmt, lhs bits, rhs bits, the C library's result as
# documented in the issue, NumPy's AVX-512 result).
POW_REGRESSIONS = [
    (F32, encode(0.79006815, F32), encode(7.0, F32), 0x3E44C44D, 0x3E44C44E),
    (F32, 0x00000001, 0xBDCCCCCD, 0x46EEDB42, 0x46EEDB43),
    (F64, 0x3F847AE147AE147B, 0x4008000000000000, 0x3EB0C6F7A0B5ED8E, None),
    (BF16, 0xFF81, 0x3F80, 0x7FC1, 0xFFC1),
    (F16, 0xFC01, 0x3C00, 0x7E01, 0xFE01),
]


@impls
@pytest.mark.parametrize(("fmt", "a", "b", "documented", "avx512"), POW_REGRESSIONS)
def test_pow_gives_the_c_librarys_bits_where_numpy_avx512_does_not(
    impl: str, fmt: Fmt, a: int, b: int, documented: int, avx512: int | None
) -> None:
    want = int(cpu_expected("pow", as_array([a], fmt), as_array([b], fmt), fmt)[0])
    got = int(run(impl, "pow", fmt, as_array([a] * 3, fmt), as_array([b] * 3, fmt))[1])
    assert got == want
    if platform.libc_ver()[0] != "glibc":
        pytest.skip(f"the documented results are glibc's; this C library is {platform.libc_ver()}")
    assert want == documented != avx512


def test_ci_tests_the_compiled_kernels_too() -> None:
    """Every test here runs on each implementation in IMPLS; on CI (CI set) the compiled one must
    have been built, or only the pure fallback would be tested while the suite stays green."""
    built = "native" in IMPLEMENTATIONS
    if not built and not os.environ.get("CI"):
        pytest.skip("the compiled kernels are not built here: only the pure implementation ran")
    assert built, "CI is set but fueltensor.ext._native was not built (is a C compiler there?)"
    assert NATIVE is not None
    assert ["pure", *(f"native-{isa}" for isa in NATIVE.ISAS)] == IMPLS


@impls
@pytest.mark.parametrize("fmt", [F32, BF16, F16])
def test_the_remainder_of_near_multiples_is_exact(impl: str, fmt: Fmt) -> None:
    """`mod` where the quotient sits a few ULP beside an integer up to 2^30: the compiled
    f32 body divides in double and steps back where the rounded quotient reached the next
    integer, and hands quotients from 2^29 to the C library's fmodf; every result is the
    rational reference's, rounded once."""
    rng = np.random.default_rng(29)
    n = 400
    top = 2**12 if fmt is F16 else 2**30  # float16's k * b stays below its 65504
    b = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 0, n)).astype(fmt.np_dtype)
    k = rng.integers(1, top, n).astype(np.float64) * rng.choice([-1.0, 1.0], n)
    a = (k * b.astype(np.float64)).astype(fmt.np_dtype).view(fmt.uint)
    for step in (-2, -1, 0, 1, 2):
        near = (a.astype(np.int64) + step).astype(fmt.uint).view(fmt.np_dtype)
        assert_bits(impl, "mod", fmt, near, b)
