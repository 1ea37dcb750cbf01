"""The compiled matmul core (`_native.contract`, the MATMUL capsule; issue 46, item 2): out =
a @ b for bfloat16, float16 (products exact) and float32 (products fused), bit for bit against
independent references written from the declared order, never from the C. The order, per
output: acc = a[i,0]*b[0,j] (the exact product rounded to float32), then acc = fl32(acc +
a[i,l]*b[l,j]) for l = 1 .. K-1 in order, the product unrounded, rounded once to the output
dtype; K = 0 gives +0. Two references: `simulated`, a NumPy loop over K of float32 adds (the
products of bfloat16 and float16 are exact in float32 away from the range's ends), and
`in_order` (tests/_matmul.py), in rationals per step (float32 products, and bfloat16 ones that
over- or underflow float32).
Then the same bits on 1, 2, 3 and 7 threads and on every instruction set's body (the `isa`
fixture), on every layout (transposed, strided, offset, flipped, broadcast stacks), for each
row and column alone; NaN, infinities, -0 and subnormals; refusals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _matmul import in_order

from fueltensor import ops
from fueltensor.kernels import threads
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

pytestmark = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="the matmul core is compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)
_native: Any = NATIVE
Array = np.ndarray[Any, Any]
BF16, F16, F32 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16), np.dtype(np.float32)
HALVES = (BF16, F16)
OP = tuple(NATIVE.CONTRACTION_OPS).index(ops.CONTRACTION_OPS[0].kernel_op) if NATIVE else 0
"""The contraction family's one op, matmul, as the core numbers it."""
SEQUENTIAL = NATIVE.ORDER_SEQUENTIAL if NATIVE is not None else 0
EXACT = NATIVE.PRODUCTS_EXACT if NATIVE is not None else 0
FUSED = NATIVE.PRODUCTS_FUSED if NATIVE is not None else 1
F32_CODE = 0
"""float32's dtype code, the accumulator."""
SHAPES = [(300, 200, 150), (1, 257, 70), (70, 257, 1), (5, 0, 3), (9, 1, 33), (33, 600, 65),
          (14, 513, 32)]  # fmt: skip
"""(M, K, N): tiles not whole, a row, a column, K = 0 and 1, K over two and three panels."""


def run(a: Array, b: Array, products: int | None = None) -> Array:
    """`_native.contract` of a and b into a fresh (NaN-filled) dense output of their dtype."""
    shape = (*a.shape[:-1], b.shape[-1])
    out = np.full(shape, np.nan, a.dtype)
    fused = products if products is not None else FUSED if a.dtype == F32 else EXACT
    _native.contract(OP, a, b, out, F32_CODE, SEQUENTIAL, fused)
    return out


def simulated(a: Array, b: Array) -> Array:
    """The declared order in float32 NumPy arithmetic, vectorised over every output (stacks
    broadcast): the product of two bfloat16 or float16 values is exact in float32 unless it
    over- or underflows float32's range, so each step is fl32(acc + a*b)."""
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    if a.shape[-1] == 0:
        return np.zeros(shape, a.dtype)
    with np.errstate(all="ignore"):
        acc = a32[..., :, 0:1] * b32[..., 0:1, :]
        for k in range(1, a.shape[-1]):
            acc = acc + a32[..., :, k : k + 1] * b32[..., k : k + 1, :]
        return np.broadcast_to(acc, shape).astype(a.dtype)


def same_bits(x: Array, y: Array) -> bool:
    """Whether two arrays of one dtype and shape hold the same bytes."""
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def same_or_nan(x: Array, y: Array) -> bool:
    """The same bits where y is a number, a NaN (any payload) where y is one."""
    nan = np.isnan(np.asarray(y, np.float32))
    if not np.array_equal(nan, np.isnan(np.asarray(x, np.float32))):
        return False
    return same_bits(np.where(nan, 0, x).astype(x.dtype), np.where(nan, 0, y).astype(y.dtype))


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """Mixed signs and scales (2^-4 to 2^4): the sums round at many positions."""
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-4, 5, shape)).astype(dtype)


@pytest.fixture
def cores() -> Iterator[None]:
    """The test pretends a core count and a low split threshold: both come back after."""
    pretended = threads.pretend_cores(0)
    yield
    _native.set_parallel_from(0)
    threads.pretend_cores(pretended)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_the_halves_follow_the_declared_order_bit_for_bit(dtype: np.dtype[Any], isa: str) -> None:
    """Every shape, on each instruction set's body, against the float32 simulation."""
    rng = np.random.default_rng(1)
    for m, k, n in SHAPES:
        a, b = sample(rng, (m, k), dtype), sample(rng, (k, n), dtype)
        assert same_bits(run(a, b), simulated(a, b)), (isa, m, k, n)


@pytest.mark.parametrize("dtype", [*HALVES, F32], ids=str)
def test_small_products_match_the_exact_reference(dtype: np.dtype[Any], isa: str) -> None:
    """A 7x40 @ 40x5 product (and K = 1) against the rationals: for float32 the fused steps."""
    rng = np.random.default_rng(2)
    for k in (40, 1):
        a, b = sample(rng, (7, k), dtype), sample(rng, (k, 5), dtype)
        assert same_bits(run(a, b), in_order(a, b)), (isa, k)


def test_bfloat16_products_beyond_float32_are_added_unrounded(isa: str) -> None:
    """A bfloat16 product that overflows float32 (2^64 * 2^64) added to a sum of -1.5 * 2^127:
    2^126, where a rounded product would give inf; products that underflow float32 (2^-100 *
    2^-60) beside the smallest subnormals; all against the exact reference."""
    rng = np.random.default_rng(3)
    scale = 2.0 ** rng.choice([-100, -60, -20, 0, 20, 60], (6, 24))
    a = (rng.standard_normal((6, 24)) * scale).astype(BF16)
    b = (rng.standard_normal((24, 4)) * 2.0 ** rng.choice([-60, -40, 0, 40], (24, 4))).astype(BF16)
    a[0, :] = 0
    a[0, :2], b[:2, 0] = [-1.5 * 2.0**63, 2.0**64], [2.0**64, 2.0**64]
    a[1, :3], b[:3, 1] = [2.0**-100, 2.0**-133, 2.0**-100], [2.0**-60, 2.0**-20, 1.5 * 2**-50]
    got = run(a, b)
    assert same_bits(got, in_order(a, b)), isa
    assert float(got[0, 0]) == 2.0**126


@pytest.mark.parametrize("count", [2, 3, 7])
def test_the_bits_are_one_threads_on_2_3_and_7(count: int, cores: None, isa: str) -> None:
    """300x200 @ 200x150 and a stack of 3 (split from 1024 products so they split at all), on
    `count` threads as on a machine of that many cores (each count tiles the outputs its own
    way), as on one, on each body."""
    threads.pretend_cores(count)
    _native.set_parallel_from(1024)
    rng = np.random.default_rng(count)
    for dtype in (*HALVES, F32):
        for a, b in (
            (sample(rng, (300, 200), dtype), sample(rng, (200, 150), dtype)),
            (sample(rng, (3, 40, 70), dtype), sample(rng, (3, 70, 90), dtype)),
        ):
            with threads.running_on(1):
                one = run(a, b)
            with threads.running_on(count):
                work = a.shape[-2] * a.shape[-1] * b.shape[-1]
                assert _native.threads(work, _native.MATMUL_POOL_OP, 0) == count
                assert same_bits(run(a, b), one), (isa, dtype, a.shape)


def layouts(rng: np.random.Generator, x: Array) -> Iterator[Array]:
    """x's values in other layouts: transposed storage, strided, at an offset, flipped, dense
    at an odd address."""
    yield np.ascontiguousarray(x.T).T
    big = np.zeros((x.shape[0] * 2 + 1, x.shape[1] * 3 + 2), x.dtype)
    big[1::2, 2::3] = x
    yield big[1::2, 2::3]
    flat = np.zeros(x.size + 3, x.dtype)
    flat[3:] = x.ravel()
    yield flat[3:].reshape(x.shape)
    flipped = np.ascontiguousarray(x[::-1, ::-1])
    yield flipped[::-1, ::-1]
    raw = np.zeros(x.nbytes + 1, np.uint8)  # dense at an odd address
    odd = raw[1:].view(x.dtype).reshape(x.shape)
    odd[...] = x
    yield odd
    del rng


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_every_layout_gives_the_dense_bits(dtype: np.dtype[Any], isa: str) -> None:
    """a and b transposed, strided, offset and flipped: the bits of their dense copies."""
    rng = np.random.default_rng(4)
    a, b = sample(rng, (45, 300), dtype), sample(rng, (300, 37), dtype)
    want = run(a, b)
    assert same_bits(want, simulated(a, b))
    for x in layouts(rng, a):
        assert same_bits(run(x, b), want), (isa, x.strides)
    for y in layouts(rng, b):
        assert same_bits(run(a, y), want), (isa, y.strides)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_stacks_and_broadcast_stacks(dtype: np.dtype[Any], isa: str) -> None:
    """(2, 3, M, K) @ (2, 3, K, N), and b of one matrix broadcast over the stack (stride 0):
    each entry as that matrix product alone."""
    rng = np.random.default_rng(5)
    a, b = sample(rng, (2, 3, 17, 50), dtype), sample(rng, (2, 3, 50, 40), dtype)
    got = run(a, b)
    assert same_bits(got, simulated(a, b)), isa
    shared = sample(rng, (50, 40), dtype)
    spread = np.broadcast_to(shared, (2, 3, 50, 40))
    assert spread.strides[:2] == (0, 0)
    got = run(a, spread)
    for i in range(2):
        for j in range(3):
            assert same_bits(got[i, j], run(np.ascontiguousarray(a[i, j]), shared)), (i, j)


def test_each_row_and_column_has_the_bits_it_has_alone() -> None:
    """Batch invariance: a row of 300x200 @ 200x150 as that row's 1x200 product, a column as
    the 300x1 product with its column of b."""
    rng = np.random.default_rng(6)
    for dtype in HALVES:
        a, b = sample(rng, (300, 200), dtype), sample(rng, (200, 150), dtype)
        got = run(a, b)
        for i in (0, 13, 111, 299):
            assert same_bits(got[i : i + 1], run(a[i : i + 1], b)), (dtype, i)
        for j in (0, 31, 32, 149):
            assert same_bits(got[:, j : j + 1], run(a, b[:, j : j + 1])), (dtype, j)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_nans_infinities_signed_zeros_and_subnormals(dtype: np.dtype[Any], isa: str) -> None:
    """NaN in a row or column, inf times 0, infinities of both signs in one sum, a row of -0
    (its sums -0), subnormal operands: as the simulation (NaN for NaN), the same bits on every
    body and thread count."""
    rng = np.random.default_rng(8)
    info = ml_dtypes.finfo(dtype)  # type: ignore[no-untyped-call]
    a, b = sample(rng, (20, 300), dtype), sample(rng, (300, 40), dtype)
    a[0, 0], a[1, 299], a[2, 256] = np.nan, np.inf, -np.inf
    b[5, 1], b[7, 3] = np.nan, np.inf
    a[3, 7], b[7, 4] = np.inf, 0
    a[4, 9], a[4, 10], b[9, 5], b[10, 5] = np.inf, np.inf, 1, -1
    a[5, :], b[:, 0] = -0.0, np.abs(b[:, 0])
    a[6, :], b[:, 6] = float(info.smallest_subnormal), float(info.smallest_normal)
    a[7, ::3] = float(info.smallest_subnormal) * 3
    got = run(a, b)
    assert same_or_nan(got, simulated(a, b)), isa
    assert np.isnan(np.float32(got[0, 0])) and np.isnan(np.float32(got[7, 1]))
    assert np.isnan(np.float32(got[3, 4])) and np.isnan(np.float32(got[4, 5]))
    zeros = np.asarray(got[5], np.float32)
    assert np.signbit(zeros[0]) and np.all(zeros[np.isfinite(zeros)] == 0)
    assert not np.signbit(np.float32(got[5, 1])) or np.all(np.asarray(b[:, 1], np.float32) >= 0)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_special_values_have_the_same_bits_on_every_body(dtype: np.dtype[Any]) -> None:
    """The special values above, and a signalling NaN, on each body in turn: one set of bits,
    NaNs' included."""
    rng = np.random.default_rng(9)
    a, b = sample(rng, (20, 300), dtype), sample(rng, (300, 40), dtype)
    a[0, 0], a[1, 299], b[7, 3], a[3, 7], b[7, 4] = np.nan, np.inf, np.inf, np.inf, 0
    a.view(np.uint16)[2, 5] = 0x7F81 if dtype == BF16 else 0x7C01
    previous = _native.isa()
    try:
        results = []
        for isa in _native.ISAS:
            _native.select_isa(isa)
            results.append(run(a, b))
    finally:
        _native.select_isa(previous)
    assert np.isnan(np.asarray(results[0][2], np.float32)).all()
    assert all(same_bits(r, results[0]) for r in results)


def test_empty_products_and_k_zero() -> None:
    """K = 0: +0 everywhere (over a NaN-filled out); M = 0 or N = 0: nothing is written."""
    for dtype in (*HALVES, F32):
        got = run(np.ones((4, 0), dtype), np.ones((0, 6), dtype))
        assert same_bits(got, np.zeros((4, 6), dtype))
        assert run(np.ones((0, 3), dtype), np.ones((3, 6), dtype)).shape == (0, 6)
        assert run(np.ones((2, 0, 3), dtype), np.ones((2, 3, 6), dtype)).shape == (2, 0, 6)


def refusal(a: Any, b: Any, out: Any, *codes: int) -> str:
    """The message of the error `_native.contract` raises for these arguments."""
    op, acc, order, products = codes if codes else (OP, F32_CODE, SEQUENTIAL, EXACT)
    with pytest.raises((ValueError, TypeError)) as caught:
        _native.contract(op, a, b, out, acc, order, products)
    return str(caught.value)


def test_refusals() -> None:
    """Parameters other than the declaration's, mixed dtypes, float64, shapes that do not
    chain, stacks not broadcast, overlapping out, another op: refused with a reason."""
    a, b, out = np.ones((4, 5), BF16), np.ones((5, 6), BF16), np.zeros((4, 6), BF16)
    assert "accumulator" in refusal(a, b, out, OP, 1, SEQUENTIAL, EXACT)
    assert "order" in refusal(a, b, out, OP, F32_CODE, _native.ORDER_BLOCKED, EXACT)
    assert "products" in refusal(a, b, out, OP, F32_CODE, SEQUENTIAL, _native.PRODUCTS_ROUNDED)
    f32 = np.ones((4, 5), F32)
    assert "products" in refusal(f32, b.astype(F32), out.astype(F32), OP, F32_CODE, SEQUENTIAL,
                                 EXACT)  # fmt: skip
    assert "op" in refusal(a, b, out, 1, F32_CODE, SEQUENTIAL, EXACT)
    assert "one dtype" in refusal(a, b.astype(F16), out)
    assert "float32" in refusal(a.astype(np.float64), b.astype(np.float64), out.astype(np.float64))
    assert "(..., M, K)" in refusal(a, np.ones((4, 6), BF16), out)
    assert "(..., M, K)" in refusal(a, b, np.zeros((4, 5), BF16))
    assert "rank" in refusal(np.ones(5, BF16), b, out)
    assert "stack" in refusal(np.ones((2, 4, 5), BF16), np.ones((1, 5, 6), BF16),
                              np.zeros((2, 4, 6), BF16))  # fmt: skip
    square = np.ones((6, 6), BF16)
    assert "overlaps" in refusal(square, square[:, :6], square)


def test_the_capsule_is_exported() -> None:
    """The MATMUL capsule, named as abi.h's CAPSULE_MATMUL, beside REDUCE."""
    assert type(_native.MATMUL).__name__ == "PyCapsule"
    assert "fueltensor.ext._native.MATMUL" in repr(_native.MATMUL)
