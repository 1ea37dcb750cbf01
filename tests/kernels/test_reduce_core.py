"""The compiled reduction core (`_native.reduce`, issue 48 items 1 and 3): sum and prod bit for
bit against an independent reference that performs the declared order from its definition
(below, in NumPy scalars of the accumulator's dtype), never from the C; the error against
math.fsum within Higham's bound; the same bits on 1, 2, 3 and 7 threads, row by row as alone,
and on every layout (strided, offset, flipped, broadcast) of the same values; 0-d and empty
inputs; NaNs and infinities; max and min as the left fold of the binary maximum and minimum
contracts (the first NaN, bits kept; the first of equal zeros); refusals; and hypothesis over
shapes, axes and layouts. The order: the reduced elements of an output in row-major order of
the reduced axes; sequential, one accumulator; or blocked: blocks of `block` elements, element p
of a block into lane p % 8 (each lane from -0, the additive identity, or 1), the lanes joined
((0+1)+(2+3))+((4+5)+(6+7)), the blocks by a pairwise tree (adjacent pairs a level, an odd
last one carried up)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from functools import reduce
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor import ops
from fueltensor.kernels import threads
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

pytestmark = pytest.mark.skipif(
    IMPLEMENTATION != "native",
    reason="the reduction core is compiled (not built, or FUELTENSOR_PURE_NUMPY=1)",
)
_native: Any = NATIVE
Array = np.ndarray[Any, Any]
CODE = {row.op_kind: i for i, row in enumerate(ops.REDUCTION_OPS)}
SUM, PROD = CODE[ops.OpKind.SUM], CODE[ops.OpKind.PROD]
MAX, MIN = CODE[ops.OpKind.MAX], CODE[ops.OpKind.MIN]
SEQUENTIAL = NATIVE.ORDER_SEQUENTIAL if NATIVE is not None else 0
BLOCKED = NATIVE.ORDER_BLOCKED if NATIVE is not None else 2
DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(ml_dtypes.bfloat16),
          np.dtype(np.float16))  # fmt: skip
LANES = 8


def accumulators(dtype: np.dtype[Any]) -> list[np.dtype[Any]]:
    """The accumulators the core takes for `dtype`."""
    if dtype == np.float64:
        return [dtype]
    return (
        [np.dtype(np.float32), np.dtype(np.float64)]
        if dtype == np.float32
        else [np.dtype(np.float32)]
    )


def run(
    op: int, x: Array, axes: tuple[int, ...], acc: np.dtype[Any], order: int, block: int = 128
) -> Array:
    """`_native.reduce` of x into a fresh output of the reduced shape (NaN-filled first)."""
    shape = tuple(n for k, n in enumerate(x.shape) if k not in axes)
    out = np.full(shape, np.nan, x.dtype)
    _native.reduce(op, x, out, axes, acc.name, order, block)
    return out


def rows(x: Array, axes: tuple[int, ...]) -> Array:
    """x as (outputs, reduced elements), each row in row-major order of the reduced axes."""
    kept = [k for k in range(x.ndim) if k not in axes]
    moved = np.transpose(x, [*kept, *axes])
    n_out = math.prod(x.shape[k] for k in kept)
    return np.asarray(moved).reshape(n_out, math.prod(x.shape[k] for k in axes))


def ordered(values: Sequence[Any], mul: bool, order: int, block: int, acc: type) -> Any:
    """The declared order, in scalars of the accumulator's type `acc`: one accumulator, or
    8-lane blocks joined by the pairwise tree; the empty sum +0, product 1."""
    join: Callable[[Any, Any], Any] = (lambda a, b: a * b) if mul else (lambda a, b: a + b)
    identity = acc(1.0) if mul else acc(-0.0)
    if not values:
        return acc(1.0) if mul else acc(0.0)
    if order == SEQUENTIAL:
        return reduce(join, (acc(v) for v in values), identity)
    sums = []
    for start in range(0, len(values), block):
        lane = [identity] * LANES
        for p, v in enumerate(values[start : start + block]):
            lane[p % LANES] = join(lane[p % LANES], acc(v))
        pairs = [join(lane[j], lane[j + 1]) for j in range(0, LANES, 2)]
        sums.append(join(join(pairs[0], pairs[1]), join(pairs[2], pairs[3])))
    while len(sums) > 1:
        sums = [join(*sums[i : i + 2]) if i + 1 < len(sums) else sums[i]
                for i in range(0, len(sums), 2)]  # fmt: skip
    return sums[0]


def expected(
    op: int, x: Array, axes: tuple[int, ...], acc: np.dtype[Any], order: int, block: int = 128
) -> Array:
    """The reference result of sum or prod: `ordered` per row, rounded once to x's dtype."""
    shape = tuple(n for k, n in enumerate(x.shape) if k not in axes)
    with np.errstate(all="ignore"):
        got = [ordered(list(r), op == PROD, order, block, acc.type) for r in rows(x, axes)]
        return np.array(got, acc).astype(x.dtype).reshape(shape)


def same_bits(a: Array, b: Array) -> bool:
    """Whether two arrays of one dtype hold the same bytes."""
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def sample(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype[Any], mul: bool = False
) -> Array:
    """Values of `dtype`: near 1 for a product (no overflow), mixed signs and scales for a sum."""
    if mul:
        return (1 + rng.uniform(-0.01, 0.01, shape)).astype(dtype)
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-4, 5, shape)).astype(dtype)


@pytest.fixture(autouse=True)
def every_isa(isa: str) -> str:
    """Every test on each instruction set's body this CPU runs (the conftest's `isa` fixture
    selects it): the vector bodies hold more lanes or outputs at once, never another order."""
    return isa


@pytest.fixture
def cores() -> Iterator[None]:
    """The test pretends a core count and a low split threshold: both come back after."""
    pretended = threads.pretend_cores(0)
    yield
    _native.set_parallel_from(0)
    threads.pretend_cores(pretended)


CASES = [((1000,), (0,)), ((40, 300), (0,)), ((70, 600), (1,)), ((600, 70), (0,)),
         ((5, 6, 70), (0, 2)), ((9, 4, 33), (1, 2)), ((3, 4), ())]  # fmt: skip
"""Shapes and axes: by blocks (few outputs) and by outputs, one at a time or in groups of
neighbours (a sum down columns: 300 columns, groups of 128, 128 and 44), many blocks an output,
several reduced axes, none."""


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("order", [SEQUENTIAL, BLOCKED], ids=["sequential", "blocked"])
@pytest.mark.parametrize("op", [SUM, PROD], ids=["sum", "prod"])
def test_sum_and_prod_follow_the_declared_order_bit_for_bit(
    dtype: Any, order: int, op: int
) -> None:
    """Every accumulator of each dtype, each case, blocks of 64 and 100 (a last one short)."""
    rng = np.random.default_rng(7)
    for shape, axes in CASES:
        x = sample(rng, shape, dtype, op == PROD)
        for acc in accumulators(dtype):
            for block in (64, 100):
                got = run(op, x, axes, acc, order, block)
                assert same_bits(got, expected(op, x, axes, acc, order, block)), (shape, acc)


def gamma(k: int, acc: np.dtype[Any]) -> float:
    """Higham's gamma_k = k u / (1 - k u) for the accumulator's unit roundoff u."""
    u = float(np.finfo(acc).eps) / 2
    return k * u / (1 - k * u)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("order", [SEQUENTIAL, BLOCKED], ids=["sequential", "blocked"])
def test_the_error_is_within_highams_bound(dtype: Any, order: int) -> None:
    """|s_hat - s| <= gamma_k sum|x_i| plus the final rounding's half ulp, s exact (fsum): k =
    n - 1 sequentially, block - 1 + ceil(log2(nblocks)) blocked (the lanes only shorten it)."""
    rng = np.random.default_rng(11)
    n, block = 20000, 128
    for x in (sample(rng, (n,), dtype), np.abs(sample(rng, (n,), dtype))):
        exact = [float(v) for v in x]
        s, magnitude = math.fsum(exact), math.fsum(abs(v) for v in exact)
        k = n - 1 if order == SEQUENTIAL else block - 1 + math.ceil(math.log2(-(-n // block)))
        for acc in accumulators(dtype):
            got = float(run(SUM, x, (0,), acc, order, block)[()])
            half_ulp = float(np.spacing(np.abs(x.dtype.type(s)))) / 2
            assert abs(got - s) <= gamma(k, acc) * magnitude + half_ulp, (acc, got, s)


@pytest.mark.parametrize("count", [2, 3, 7])
def test_the_bits_are_one_threads_on_2_3_and_7(count: int, cores: None) -> None:
    """A 10^6-element sum and a 300x200 sum along its last axis, and along its first (split from
    1024 elements so they split at all), each order, on `count` threads as on a machine of that
    many cores."""
    threads.pretend_cores(count)
    _native.set_parallel_from(1024)
    rng = np.random.default_rng(count)
    f32 = np.dtype(np.float32)
    matrix = sample(rng, (300, 200), f32)
    for x, axes in ((sample(rng, (10**6,), f32), (0,)), (matrix, (1,)), (matrix, (0,))):
        for order in (SEQUENTIAL, BLOCKED):
            with threads.running_on(1):
                one = run(SUM, x, axes, f32, order)
            with threads.running_on(count):
                assert _native.threads(x.size, _native.REDUCE_OP, 0) == count
                assert same_bits(run(SUM, x, axes, f32, order), one), (x.shape, order)


def test_each_row_has_the_bits_it_has_alone() -> None:
    """Batch invariance: a row of a 300x200 sum along the last axis, and a column along the
    first, as that row or column reduced alone."""
    x = sample(np.random.default_rng(3), (300, 200), np.dtype(np.float32))
    f32 = np.dtype(np.float32)
    for order in (SEQUENTIAL, BLOCKED):
        by_row, by_col = run(SUM, x, (1,), f32, order), run(SUM, x, (0,), f32, order)
        for i in range(0, 300, 37):
            assert same_bits(by_row[i], run(SUM, x[i], (0,), f32, order))
        for j in range(0, 200, 23):
            assert same_bits(by_col[j], run(SUM, x[:, j].copy(), (0,), f32, order))


def layouts(x: Array) -> Iterator[Array]:
    """Views of other layouts: strided, offset, flipped (negative strides), transposed twice."""
    wide = np.zeros((x.shape[0] * 2 + 1, x.shape[1] * 3), x.dtype)
    wide[1::2, ::3] = x
    yield wide[1::2, ::3]
    flipped = np.ascontiguousarray(x[::-1, ::-1])
    yield flipped[::-1, ::-1]
    yield np.asfortranarray(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_layout_of_the_same_values_gives_the_same_bits(dtype: Any) -> None:
    """The order is over logical elements: a view reduces as its dense copy; a broadcast (zero
    stride) as its materialised copy."""
    x = sample(np.random.default_rng(5), (40, 90), dtype)
    acc = accumulators(dtype)[0]
    for op in (SUM, PROD, MAX, MIN):
        for axes in ((0,), (1,), (0, 1)):
            dense = run(op, x, axes, acc, BLOCKED, 32)
            for view in layouts(x):
                assert same_bits(run(op, view, axes, acc, BLOCKED, 32), dense), (op, axes)
    row = x[0]
    wide = np.broadcast_to(row, (50, 90))
    assert wide.strides[0] == 0
    for axes in ((0,), (1,), (0, 1)):
        want = run(SUM, np.ascontiguousarray(wide), axes, acc, BLOCKED, 32)
        assert same_bits(run(SUM, wide, axes, acc, BLOCKED, 32), want)


def test_zero_d_and_empty_inputs() -> None:
    """A 0-d input (and axes ()) gives its element; an empty sum +0, an empty product 1; the max
    or min of nothing is refused; no output at all is no work."""
    f32 = np.dtype(np.float32)
    for v in (np.float32(-0.0), np.float32(3.5), np.float32(-np.inf)):
        for op in (SUM, PROD, MAX, MIN):
            assert same_bits(run(op, np.array(v), (), f32, BLOCKED), np.array(v))
    empty = np.zeros((3, 0), np.float32)
    assert same_bits(run(SUM, empty, (1,), f32, BLOCKED), np.zeros(3, np.float32))
    assert same_bits(run(PROD, empty, (1,), f32, SEQUENTIAL), np.ones(3, np.float32))
    for op in (MAX, MIN):
        with pytest.raises(ValueError, match="empty set"):
            run(op, empty, (1,), f32, BLOCKED)
        assert run(op, empty.T, (1,), f32, BLOCKED).shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nans_and_infinities_in_a_sum(dtype: Any) -> None:
    """A NaN anywhere, or +inf with -inf, gives a NaN; infinities of one sign, that infinity."""
    acc = accumulators(dtype)[0]
    for order in (SEQUENTIAL, BLOCKED):
        for at in (0, 1, 77, 299):
            x = np.ones(300, dtype)
            x[at] = np.nan
            assert np.isnan(run(SUM, x, (0,), acc, order, 64)[()].astype(np.float64))
            x[at] = np.inf
            assert run(SUM, x, (0,), acc, order, 64)[()] == np.inf
            x[299 - at] = -np.inf
            if at != 299 - at:
                assert np.isnan(run(SUM, x, (0,), acc, order, 64)[()].astype(np.float64))


def bits(x: Array) -> Array:
    """An array's elements as unsigned integers of their width."""
    return x.view(f"u{x.dtype.itemsize}")


def fold(op: int, values: Array) -> Any:
    """The left fold of the binary maximum (minimum) contract: a NaN operand as it is, lhs
    first; the larger (smaller); on a tie lhs."""

    def pick(lhs: Any, rhs: Any) -> Any:
        if np.isnan(lhs.astype(np.float64)) or np.isnan(rhs.astype(np.float64)):
            return lhs if np.isnan(lhs.astype(np.float64)) else rhs
        better = rhs > lhs if op == MAX else rhs < lhs
        return rhs if better else lhs

    return reduce(pick, values)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_max_and_min_fold_the_binary_contracts(dtype: Any) -> None:
    """The first NaN, its bits kept (payloads told apart); the first of -0 and +0; else the
    extreme value; checked against the fold on random rows with NaNs and zeros planted."""
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    nan_bits = bits(np.array([np.nan], dtype))[0]
    acc = accumulators(dtype)[0]
    rng = np.random.default_rng(9)
    for op in (MAX, MIN):
        for zeros in ([-0.0, 0.0], [0.0, -0.0]):
            got = run(op, np.array(zeros, dtype), (0,), acc, BLOCKED)
            assert same_bits(got, np.array(zeros[0], dtype))
        x = sample(rng, (64, 50), dtype)
        x[rng.random(x.shape) < 0.05] = 0.0
        x[rng.random(x.shape) < 0.05] = -0.0
        plant = rng.random(x.shape) < 0.03
        payload = rng.integers(1, 8, x.shape).astype(u)
        bits(x)[plant] = (nan_bits | payload)[plant]
        bits(x)[rng.random(x.shape) < 0.01] |= np.array(1 << (8 * u.itemsize - 1), u)
        got = run(op, x, (1,), acc, BLOCKED)
        want = np.array([fold(op, r) for r in x], dtype)
        assert same_bits(bits(got), bits(want))


def test_refusals_name_the_parameter() -> None:
    """Accumulators, orders, axes, out's shape, dtype and an overlap, each refused in words."""
    x = np.ones((4, 5), np.float32)
    out = np.empty(4, np.float32)
    wrong: list[tuple[tuple[Any, ...], type[Exception], str]] = [
        ((SUM, x.astype(np.float64), out.astype(np.float64), (1,), "float32", BLOCKED, 8),
         ValueError, "accumulator"),
        ((SUM, x, out, (1,), "float32", _native.ORDER_PAIRWISE, 8), ValueError, "order"),
        ((SUM, x, out, (1,), "float32", BLOCKED, 0), ValueError, "block size"),
        ((SUM, x, out, (1, 0), "float32", BLOCKED, 8), ValueError, "sorted"),
        ((SUM, x, out, (2,), "float32", BLOCKED, 8), ValueError, "axes"),
        ((SUM, x, np.empty(5, np.float32), (1,), "float32", BLOCKED, 8), ValueError, "shape"),
        ((SUM, x, out.astype(np.float64), (1,), "float32", BLOCKED, 8), TypeError, "out"),
        ((SUM, x.astype(np.int32), out, (1,), "float32", BLOCKED, 8), TypeError, "float32"),
        ((SUM, x, x[:, 0:1].reshape(4), (1,), "float32", BLOCKED, 8), ValueError, "out"),
        ((SUM, x, out, (1,), "int8", BLOCKED, 8), ValueError, "accumulator"),
        ((len(CODE), x, out, (1,), "float32", BLOCKED, 8), ValueError, "op"),
    ]  # fmt: skip
    for args, error, words in wrong:
        with pytest.raises(error, match=words):
            _native.reduce(*args)


@st.composite
def views(draw: st.DrawFn) -> tuple[Array, tuple[int, ...]]:
    """A random view (shape, flips, steps, a transpose) and sorted axes of it."""
    ndim = draw(st.integers(0, 4))
    shape = draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim))
    steps = draw(st.lists(st.sampled_from([1, 2, -1, -2]), min_size=ndim, max_size=ndim))
    full = tuple(n * abs(s) for n, s in zip(shape, steps, strict=True))
    base = sample(np.random.default_rng(draw(st.integers(0, 99))), full, np.dtype(np.float32))
    view = base[tuple(slice(None, None, s) for s in steps)]
    view = np.transpose(view, draw(st.permutations(range(ndim)))) if ndim else view
    axes = tuple(sorted(draw(st.sets(st.integers(0, max(ndim - 1, 0)), max_size=ndim))))
    return view, axes if ndim else ()


@settings(max_examples=60, deadline=None)
@given(case=views(), order=st.sampled_from([SEQUENTIAL, BLOCKED]), block=st.integers(1, 20),
       op=st.sampled_from([SUM, PROD]))  # fmt: skip
def test_any_view_and_axes_follow_the_declared_order(
    case: tuple[Array, tuple[int, ...]], order: int, block: int, op: int
) -> None:
    """Sum and prod of any layout over any axes, bit for bit the reference's."""
    x, axes = case
    f32 = np.dtype(np.float32)
    assert same_bits(run(op, x, axes, f32, order, block), expected(op, x, axes, f32, order, block))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_the_core_is_the_order_the_judge_simulates(dtype: np.dtype[Any]) -> None:
    """A contract declaring the core's order (`order: blocked`, `block`, `lanes: 8`) is held by
    the judge to `judge.orders.simulate`, written apart from this core and from this module's
    `ordered`: the two agree bit for bit, partial blocks and the tree's odd splits included."""
    from fueltensor.core.dtypes import from_numpy
    from fueltensor.tools.judge.orders import Declared, simulate

    rng = np.random.default_rng(11)
    acc = accumulators(dtype)[0]
    for shape, axes in [
        ((5, 1000), (1,)),
        ((3, 7, 300), (0, 2)),
        ((2, 17), (1,)),
        ((1, 70_001), (1,)),
    ]:
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, shape)).astype(dtype)
        for block in (64, 128, 256):
            got = run(SUM, x, axes, acc, BLOCKED, block)
            declared = Declared(from_numpy(acc).fkc, "blocked", block, LANES)
            want = simulate(rows(x, axes), declared, dtype)
            np.testing.assert_array_equal(
                got.reshape(-1).view(f"u{dtype.itemsize}"), want.view(f"u{dtype.itemsize}")
            )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_views_whose_stride_is_the_accumulator_width_read_their_own_dtype(
    dtype: np.dtype[Any],
) -> None:
    """A half-type column walk whose outputs lie 4 bytes apart ([:, ::2] of float16 down axis 0)
    reads halves, not floats: the walk read such a view as float32 (inf for 0..11), since its
    byte stride equals the accumulator's width. Every view equals its dense copy, bit for bit."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal((6, 12)).astype(dtype)
    for view in (base[:, ::2], base[:, ::4], base[::2, ::2], base[:, ::-2]):
        for axes in ((0,), (1,), (0, 1)):
            for order in (SEQUENTIAL, BLOCKED):
                acc = accumulators(dtype)[0]
                got = run(SUM, view, axes, acc, order, 4)
                want = run(SUM, np.ascontiguousarray(view), axes, acc, order, 4)
                np.testing.assert_array_equal(
                    got.view(f"u{dtype.itemsize}"), want.view(f"u{dtype.itemsize}")
                )


def selected(op: int, table: Array) -> Array:
    """The max (min) fold of each row by its definition: the first NaN, bits kept, if the row
    holds one; else the first element equal to the extreme (so the first zero of a -0/+0 tie)."""
    got = []
    for r in table:
        wide = r.astype(np.float64)
        nan = np.flatnonzero(np.isnan(wide))
        extreme = wide.max() if op == MAX else wide.min()
        got.append(r[nan[0]] if nan.size else r[np.flatnonzero(wide == extreme)[0]])
    return np.array(got, table.dtype)


def extremes_case(rng: np.random.Generator, shape: tuple[int, int], dtype: Any) -> Array:
    """Rows of random values; in row 1 two NaNs of other payloads, late; rows 2 and 3 of one
    sign with zeros of both signs planted (their max, their min, is a zero)."""
    u = np.dtype(f"u{np.dtype(dtype).itemsize}")
    x = sample(rng, shape, dtype)
    n = shape[1]
    nan = bits(np.array([np.nan], dtype))[0]
    bits(x)[1, (3 * n) // 4] = nan | np.array(3, u)
    bits(x)[1, n - 2] = nan | np.array(5, u)
    x[2] = -np.abs(x[2])
    x[3] = np.abs(x[3])
    for row in (2, 3):
        for at, zero in ((n // 3, -0.0), (n // 3 + 7, 0.0), (n - 1, -0.0)):
            x[row, at] = zero
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_max_and_min_of_long_rows_and_down_columns(count: int, dtype: Any, cores: None) -> None:
    """The vector paths and the split: rows longer than the core's chunks (split on `count`
    threads, their results folded in order), a column walk (outputs read together), and one
    long 1-d input; every NaN, zero tie and extreme the fold's, bit for bit."""
    threads.pretend_cores(count)
    _native.set_parallel_from(1024)
    rng = np.random.default_rng(count)
    acc = accumulators(dtype)[0]
    x = extremes_case(rng, (4, 150_001), dtype)
    columns = np.ascontiguousarray(extremes_case(rng, (130, 300), dtype).T)
    with threads.running_on(count):
        for op in (MAX, MIN):
            for case, axes in ((x, (1,)), (columns, (0,)), (x[2], (0,)), (x[1], (0,))):
                got = run(op, case, axes, acc, BLOCKED)
                want = selected(op, rows(case, axes)).reshape(got.shape)
                assert same_bits(bits(got), bits(want)), (op, case.shape, axes)
