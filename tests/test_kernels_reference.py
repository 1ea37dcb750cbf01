"""fuel-reference-backend oracle: broadcast index math and bit-exact arithmetic.

Both implementations (the pure-NumPy oracle and the compiled walk, where built) are held to the
scalar reference, and to each other bit for bit on random layouts and bit patterns.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from _impls import IMPLS, using
from _oracle import FORMATS, Fmt, bits_of, cpu_scalar
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels import cpu, reference
from fueltensor.kernels._chassis import IMPLEMENTATIONS
from fueltensor.kernels.reference import broadcast_shape, broadcast_src_flat

OPS = ("add", "sub", "mul", "div")
FMTS = ("f32", "f64", "bf16", "f16")
SHAPE_PAIRS = [
    ((), ()),
    ((3,), ()),
    ((), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1), (1, 5)),
    ((2, 1, 3), (4, 1)),
    ((0,), (1,)),
    ((2, 0, 3), (1, 3)),
    ((5, 1, 1), (1, 0)),
    ((1, 1, 2, 1), (3, 1, 4)),
    ((3000,), (3000,)),
    ((70, 300), (300,)),
]


NATIVE_IMPLS = [impl for impl in IMPLS if impl != "pure"]


@cache
def kernels(impl: str) -> dict[str, Any]:
    """The four oracle kernels of an implementation id (skips where it is not built)."""
    name = impl.partition("-")[0]
    if name not in IMPLEMENTATIONS:
        pytest.skip("the compiled kernels (fueltensor.kernels._native) are not built here")
    return reference.kernels(name)


def oracle(op: str, impl: str | None = None) -> Any:
    """The kernel `broadcast_<op>`: the linked one, or that of an implementation id."""
    table = reference.ENTRY_POINTS if impl is None else kernels(impl)
    return table[f"fuel_reference_backend::ops::broadcast_{op}"]


def random_array(rng: np.random.Generator, shape: tuple[int, ...], fmt: Fmt) -> Any:
    """Random bit patterns of `fmt`, so NaN payloads, infinities and subnormals all turn up."""
    info = np.iinfo(fmt.uint)
    words = rng.integers(0, int(info.max), shape, dtype=fmt.uint, endpoint=True)
    return words.view(fmt.np_dtype)


def test_provider_and_entry_points() -> None:
    assert reference.PROVIDER == "fuel-reference-backend"
    assert sorted(reference.ENTRY_POINTS) == [
        f"fuel_reference_backend::ops::broadcast_{op}" for op in ("add", "div", "mul", "sub")
    ]


@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS)
def test_broadcast_shape_matches_numpy(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    assert broadcast_shape(a, b) == np.broadcast_shapes(a, b)


@pytest.mark.parametrize(("a", "b"), [((2, 3), (4, 3)), ((3,), (4,)), ((2, 1), (3, 0, 3))])
def test_broadcast_shape_names_both_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=rf"{a!r}.*{b!r}".replace("(", r"\(").replace(")", r"\)")):
        broadcast_shape(a, b)


@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS[:10])
def test_broadcast_src_flat_matches_numpy_indexing(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    out = broadcast_shape(a, b)
    for src in (a, b):
        index = np.broadcast_to(np.arange(int(np.prod(src))).reshape(src), out).reshape(-1)
        for k in range(index.size):
            assert broadcast_src_flat(k, src, out) == index[k]


@pytest.mark.parametrize("impl", ["pure", "native"])
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPE_PAIRS)
def test_elementwise_against_scalar_reference(
    op: str, fmt: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], impl: str
) -> None:
    f = FORMATS[fmt]
    rng = np.random.default_rng(len(a_shape) * 31 + len(b_shape))
    a, b = random_array(rng, a_shape, f), random_array(rng, b_shape, f)
    a_before, b_before = a.copy(), b.copy()
    shape = broadcast_shape(a_shape, b_shape)
    out = np.full(shape, 0x5A5A, f.uint).view(f.np_dtype)
    oracle(op, impl)(a, b, out=out)
    assert a.tobytes() == a_before.tobytes() and b.tobytes() == b_before.tobytes()
    a_bits, b_bits, got = bits_of(a, f), bits_of(b, f), bits_of(out, f)
    for k, g in enumerate(got):
        ia = broadcast_src_flat(k, a_shape, shape)
        ib = broadcast_src_flat(k, b_shape, shape)
        assert g == cpu_scalar(op, a_bits[ia], b_bits[ib], f), (k, hex(a_bits[ia]), hex(b_bits[ib]))


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
@pytest.mark.parametrize("op", OPS)
def test_half_oracle_agrees_bit_for_bit_with_cpu_kernels(op: str, fmt: str) -> None:
    f = FORMATS[fmt]
    rng = np.random.default_rng(3)
    a, b = random_array(rng, (20000,), f), random_array(rng, (20000,), f)
    want = np.empty_like(a)
    got = np.empty_like(a)
    cpu.ENTRY_POINTS[f"fuel_cpu_backend::byte_kernels::{op}_{fmt}"](a, b, out=want)
    oracle(op)(a, b, out=got)
    assert got.view(f.uint).tobytes() == want.view(f.uint).tobytes()


def broadcast_pair(
    data: st.DataObject, shape: list[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast to `shape`, in either order: one of any lower rank, each dim
    either the full size or 1 (so size-1 dims stretch, rank differences and 0-size dims occur)."""
    rank = data.draw(st.integers(0, len(shape)))
    short = tuple(d if data.draw(st.booleans()) else 1 for d in shape[len(shape) - rank :])
    full = tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    return (short, full) if data.draw(st.booleans()) else (full, short)


@pytest.mark.parametrize("impl", ["pure", "native"])
@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    op=st.sampled_from(OPS),
    fmt=st.sampled_from(FMTS),
    shape=st.lists(st.integers(0, 4), max_size=4),
)
def test_random_broadcast_pairs(
    op: str, fmt: str, shape: list[int], data: st.DataObject, impl: str
) -> None:
    f = FORMATS[fmt]
    a_shape, b_shape = broadcast_pair(data, shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = random_array(rng, a_shape, f), random_array(rng, b_shape, f)
    out_shape = broadcast_shape(a_shape, b_shape)
    out = np.empty(out_shape, f.np_dtype)
    oracle(op, impl)(a, b, out=out)
    a_bits, b_bits, got = bits_of(a, f), bits_of(b, f), bits_of(out, f)
    for k, g in enumerate(got):
        want = cpu_scalar(
            op,
            a_bits[broadcast_src_flat(k, a_shape, out_shape)],
            b_bits[broadcast_src_flat(k, b_shape, out_shape)],
            f,
        )
        assert g == want


def test_wrong_output_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="broadcast_add"):
        oracle("add")(np.ones((2, 1)), np.ones(3), out=np.empty((2, 2)))


def test_division_is_silent_even_under_raise_errstate() -> None:
    out = np.empty((2, 2), np.float16)
    a = np.array([[0.0], [1.0]], np.float16)
    b = np.array([0.0, -0.0], np.float16)
    with np.errstate(all="raise"):
        oracle("div")(a, b, out=out)
    assert np.isnan(out[0]).all() and list(out[1]) == [np.inf, -np.inf]


@pytest.mark.parametrize("impl", ["pure", "native"])
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [((40,), (40,)), ((3, 37), (37,)), ((5, 1), (1, 35))]
)
def test_two_nans_give_the_lhs_nan_in_every_lane(
    op: str, fmt: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], impl: str
) -> None:
    f = FORMATS[fmt]
    a = np.full(a_shape, f.exp_mask | 1, f.uint).view(f.np_dtype)
    b = np.full(b_shape, f.sign | f.exp_mask | f.quiet | 2, f.uint).view(f.np_dtype)
    out = np.empty(broadcast_shape(a_shape, b_shape), f.np_dtype)
    oracle(op, impl)(a, b, out=out)
    want = cpu_scalar(op, f.exp_mask | 1, f.sign | f.exp_mask | f.quiet | 2, f)
    assert set(bits_of(out, f)) == {want}


def mixed_bits(rng: np.random.Generator, shape: tuple[int, ...], fmt: Fmt) -> Any:
    """Random bit patterns with about a third replaced by NaNs (signalling and quiet, with
    payloads and signs), infinities, ±0 and ±1, so NaN pairs turn up in every few dozen lanes."""
    words = random_array(rng, shape, fmt).view(fmt.uint)
    nan, quiet, sign = fmt.exp_mask, fmt.quiet, fmt.sign
    pool = [nan | 1, nan | quiet | 5, sign | nan | 3, sign | nan | quiet, nan, sign | nan, 0, sign]
    one = fmt.bias << fmt.man_bits
    pick = rng.random(shape) < 1 / 3
    words[pick] = rng.choice(np.array([*pool, one, sign | one], fmt.uint), int(pick.sum()))
    return words.view(fmt.np_dtype)


def assert_native_matches_pure(
    impl: str, op: str, fmt: Fmt, a_shape: tuple[int, ...], b_shape: tuple[int, ...], seed: int
) -> None:
    """One compiled instruction set's oracle writes the pure oracle's bits, inputs untouched."""
    rng = np.random.default_rng(seed)
    a, b = mixed_bits(rng, a_shape, fmt), mixed_bits(rng, b_shape, fmt)
    a_before, b_before = a.tobytes(), b.tobytes()
    shape = broadcast_shape(a_shape, b_shape)
    want = np.full(shape, 0x5A5A, fmt.uint).view(fmt.np_dtype)
    got = np.full(shape, 0xA5A5, fmt.uint).view(fmt.np_dtype)
    oracle(op, "pure")(a, b, out=want)
    with using(impl):
        oracle(op, impl)(a, b, out=got)
    assert a.tobytes() == a_before and b.tobytes() == b_before
    bad = np.flatnonzero(got.view(fmt.uint) != want.view(fmt.uint))
    assert not bad.size, (
        f"{impl} broadcast_{op} {fmt.name} {a_shape} with {b_shape}: {bad.size} lanes differ, "
        f"first flat index {bad[0]}"
    )


@pytest.mark.parametrize("impl", NATIVE_IMPLS)
@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    op=st.sampled_from(OPS),
    fmt=st.sampled_from(FMTS),
    shape=st.lists(st.integers(0, 9), max_size=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_native_oracle_agrees_with_pure_bit_for_bit(
    impl: str, op: str, fmt: str, shape: list[int], seed: int, data: st.DataObject
) -> None:
    a_shape, b_shape = broadcast_pair(data, shape)
    assert_native_matches_pure(impl, op, FORMATS[fmt], a_shape, b_shape, seed)


@pytest.mark.parametrize("impl", NATIVE_IMPLS)
@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [  # rows longer than the compiled walk's 512-element tile, repeated along the row or not
        ((3, 1), (1, 1500)),
        ((1500,), ()),
        ((), (2, 1100)),
        ((2, 1, 1300), (1, 3, 1)),
        ((40, 1200), (1200,)),
        ((7, 1, 1), (1, 1, 1)),
    ],
)
def test_native_oracle_long_rows(
    impl: str, op: str, fmt: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    assert_native_matches_pure(impl, op, FORMATS[fmt], a_shape, b_shape, len(a_shape))


def test_native_oracle_refuses_what_it_cannot_walk() -> None:
    add = oracle("add", "native")
    with pytest.raises(TypeError, match="broadcast_add: a, b and out must share one of"):
        add(np.ones(3, np.int32), np.ones(3, np.int32), out=np.empty(3, np.int32))
    with pytest.raises(ValueError, match="lhs must be a C-contiguous array"):
        add(np.ones(6, np.float32)[::2], np.ones(3, np.float32), out=np.empty(3, np.float32))
