"""fuel-cpu-backend's unary bodies (`_native.unary`), every instruction set this CPU runs, bit
for bit against MPFR (`tools.exact_unary.correctly_rounded`: the op table's definition at 200
bits, rounded once; never NumPy): every input of BF16 and F16 correctly rounded, F32 within one
ULP on random patterns and the hard regions, F64 within the bound measured for the C library's
double functions, the op table's Annex F cases, the NaN rules and the buffer refusals."""

from __future__ import annotations

from functools import cache

import ml_dtypes
import numpy as np
import pytest

from fueltensor.kernels._chassis import NATIVE
from fueltensor.ops import BY_KIND, UNARY_OPS, ContractOp, OpKind
from fueltensor.testing import float_format

gmpy2 = pytest.importorskip("gmpy2", reason="the unary references need MPFR: the test extra")
from fueltensor.tools.exact_unary import correctly_rounded, nan_result  # noqa: E402

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built")

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
BF16, F16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)
HALVES = (BF16, F16)
MATH = [row for row in UNARY_OPS if nan_result(row) == "NaN"]
"""The rows computed in double: every one but the sign-bit operations (abs, negative)."""
F64_BOUND = {OpKind.TANH: 2, OpKind.SIGMOID: 2, OpKind.RSQRT: 2}
"""F64's bound in ULPs where it is not 1: glibc's tanh is documented within 2; sigmoid and
rsqrt round twice more in double (1 + e, then the division)."""


def run(row: ContractOp, x: np.ndarray) -> np.ndarray:
    """`_native.unary` of `row` on `x` into a fresh array."""
    assert NATIVE is not None
    out = np.empty_like(x)
    NATIVE.unary(NATIVE.UNARY_OPS.index(row.kernel_op), NATIVE.DTYPES.index(x.dtype.name), x, out)
    return out


def bits(x: np.ndarray) -> np.ndarray:
    """The unsigned bit patterns of `x`."""
    return x.view(f"u{x.dtype.itemsize}")


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """ULP distance between two arrays of one float dtype, lane by lane (0 for equal bits, for
    two NaNs compared elsewhere)."""
    fmt = float_format(got.dtype)
    width = 8 * got.dtype.itemsize

    def ordered(u: np.ndarray) -> np.ndarray:
        v = u.astype(np.int64)
        negative = (v >> (width - 1)) & 1
        return np.where(negative == 1, -(v & ((1 << (width - 1)) - 1)), v)

    g, w = bits(got), bits(want)
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    if width == 64:  # int64 holds the ordered patterns exactly; differences stay small
        d = np.abs(ordered(g) - ordered(w))
    else:
        d = np.abs(ordered(g.astype(np.uint64)) - ordered(w.astype(np.uint64)))
    del fmt
    return np.where(both_nan, 0, d)


@cache
def every_input(dtype: np.dtype) -> np.ndarray:
    """All 2^16 bit patterns of a 16-bit dtype."""
    return np.arange(1 << 16, dtype=np.uint16).view(dtype)


@cache
def expected_halves(row: ContractOp, dtype: np.dtype) -> np.ndarray:
    """MPFR's correctly rounded row on every input of `dtype` (computed once a session)."""
    return correctly_rounded(row, every_input(dtype))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("row", MATH, ids=lambda r: r.name)
def test_half_types_are_correctly_rounded_on_every_input(
    row: ContractOp, dtype: np.dtype, isa: str
) -> None:
    x = every_input(dtype)
    got, want = run(row, x), expected_halves(row, dtype)
    differ = np.flatnonzero(bits(got) != bits(want))
    assert differ.size == 0, (
        f"{row.name} {dtype} on {isa}: {differ.size} inputs differ from the correctly rounded "
        f"result, first x={bits(x)[differ[0]]:#06x}: got {bits(got)[differ[0]]:#06x}, "
        f"want {bits(want)[differ[0]]:#06x}"
    )


def hard_f32() -> np.ndarray:
    """Random patterns of every exponent, and the hard regions: exp's overflow and underflow
    edges, log near 1, tiny and huge arguments of the trigonometric functions, subnormals."""
    rng = np.random.default_rng(43)
    random = rng.integers(0, 1 << 32, 20_000, dtype=np.uint64).astype(np.uint32).view(F32)
    edges = [88.72, -87.33, -103.97, -103.28, 1.0, 0.5, 1e-6, 1e-30, 3.1415927, 1e5, 1e30]
    # the vector bodies' switch points: log's sqrt(2) and sqrt(2)/2, tanh's 0.55, the quadrants
    # of sin and cos near multiples of pi/2 up to the three-part reduction's bound (1e5)
    edges += [1.4142135, 0.70710677, 0.55, 1.5707964, 4.712389, 7853.9814, 99999.99, 2.0**-20]
    near = np.concatenate(
        [np.float32(e) + np.arange(-200, 200, dtype=np.float32) * np.spacing(np.float32(e))
         for e in edges]
    )  # fmt: skip
    subnormals = np.arange(1, 2000, dtype=np.uint32).view(F32)
    return np.concatenate([random, near, -near, subnormals, -subnormals]).astype(F32)


@pytest.mark.parametrize("row", MATH, ids=lambda r: r.name)
def test_float32_is_within_one_ulp(row: ContractOp, isa: str) -> None:
    x = hard_f32()
    got, want = run(row, x), correctly_rounded(row, x)
    d = ulps(got, want)
    worst = int(np.argmax(d))
    assert d[worst] <= 1, (
        f"{row.name} f32 on {isa}: {d[worst]} ULP at x={x[worst]!r} ({bits(x)[worst]:#010x}): "
        f"got {got[worst]!r}, want {want[worst]!r}"
    )
    nan = np.isnan(want)
    assert np.array_equal(bits(got)[nan], bits(want)[nan])  # NaN bits by the rules, exactly


@pytest.mark.parametrize("row", MATH, ids=lambda r: r.name)
def test_float64_is_within_its_bound(row: ContractOp, isa: str) -> None:
    rng = np.random.default_rng(64)
    x = np.concatenate(
        [
            rng.integers(0, 1 << 63, 3000, dtype=np.uint64).view(F64),
            rng.normal(0, 30, 3000),
            np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 5e-324, 709.78, -745.1, 720.5, 740.0]),
        ]
    )
    x = np.concatenate([x, -x])
    got, want = run(row, x), correctly_rounded(row, x)
    d = ulps(got, want)
    worst = int(np.argmax(d))
    assert d[worst] <= F64_BOUND.get(row.op_kind, 1), (
        f"{row.name} f64: {d[worst]} ULP at x={x[worst]!r}: got {got[worst]!r}, "
        f"want {want[worst]!r}"
    )


NAMED: dict[str, float] = {
    "+0": 0.0,
    "-0": -0.0,
    "+inf": np.inf,
    "-inf": -np.inf,
    "+1": 1.0,
    "-1": -1.0,
    "0.5": 0.5,
}


@pytest.mark.parametrize("dtype", [F32, F64, BF16, F16], ids=str)
@pytest.mark.parametrize("row", UNARY_OPS, ids=lambda r: r.name)
def test_the_annex_f_cases_and_nan_rules(row: ContractOp, dtype: np.dtype, isa: str) -> None:
    fmt = float_format(dtype)
    for given, result in row.special:
        if given == "NaN":  # a quiet and a signalling NaN, both signs, two payloads
            u = np.array(
                [
                    fmt.pattern(s, fmt.exponent_max, q | p)
                    for s in (0, 1)
                    for q in (0, fmt.quiet_bit)
                    for p in (1, (fmt.quiet_bit - 1) // 3)
                ],
                fmt.uint,
            )
            got = bits(run(row, u.view(dtype)))
            if result == "|x|":
                want = u & ~fmt.uint.type(fmt.sign_bit)
            elif result == "-x":
                want = u ^ fmt.uint.type(fmt.sign_bit)
            else:
                want = u | fmt.uint.type(fmt.quiet_bit)
            assert np.array_equal(got, want), (row.name, dtype, [hex(v) for v in got])
            continue
        x = np.array([NAMED[given]], dtype)
        got = run(row, x)
        if result == "invalid":
            assert np.isnan(got[0]), (row.name, given)
            assert bits(got)[0] == bits(correctly_rounded(row, x))[0]  # the default NaN
        else:
            want = np.array([NAMED[result]], dtype)
            assert bits(got)[0] == bits(want)[0], (row.name, dtype, given, got[0])


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 255, 256, 257, 4099, (1 << 16) + 5])
@pytest.mark.parametrize("dtype", [F32, F64, BF16, F16], ids=str)
def test_every_length_gives_each_lane_its_own_result(n: int, dtype: np.dtype) -> None:
    """Tails, tiles and thread splits: a lane's bits do not depend on where it lies."""
    row = BY_KIND[OpKind.EXP]
    rng = np.random.default_rng(n)
    x = rng.normal(0, 20, n).astype(dtype)
    whole = run(row, x)
    alone = np.concatenate([run(row, x[i : i + 1]) for i in range(min(n, 300))] or [x[:0]])
    assert np.array_equal(bits(whole)[: alone.size], bits(alone))
    assert np.array_equal(bits(whole), bits(run(row, x[::-1].copy()))[::-1])


def test_refusals_name_the_problem() -> None:
    assert NATIVE is not None
    exp = NATIVE.UNARY_OPS.index("exp")
    x = np.ones(4, F32)
    with pytest.raises(ValueError, match="byte lengths must be equal"):
        NATIVE.unary(exp, 0, x, np.empty(3, F32))
    with pytest.raises(TypeError, match="must hold float32"):
        NATIVE.unary(exp, 0, x.astype(F64), np.empty(4, F32))
    with pytest.raises(ValueError, match=r"op must be in \[0, 11\)"):
        NATIVE.unary(len(NATIVE.UNARY_OPS), 0, x, np.empty(4, F32))
    frozen = np.empty(4, F32)
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match="writable"):
        NATIVE.unary(exp, 0, x, frozen)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        NATIVE.unary(exp, 0, x)


def test_the_extension_lists_the_tables_unary_ops() -> None:
    assert NATIVE is not None
    assert tuple(NATIVE.UNARY_OPS) == tuple(row.kernel_op for row in UNARY_OPS)
