"""fuel-reference-backend oracle: broadcast index math and bit-exact arithmetic."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _oracle import FORMATS, Fmt, bits_of, cpu_scalar
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels import cpu, reference
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


def oracle(op: str) -> Any:
    """The linked kernel `broadcast_<op>`."""
    return reference.ENTRY_POINTS[f"fuel_reference_backend::ops::broadcast_{op}"]


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


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPE_PAIRS)
def test_elementwise_against_scalar_reference(
    op: str, fmt: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    f = FORMATS[fmt]
    rng = np.random.default_rng(len(a_shape) * 31 + len(b_shape))
    a, b = random_array(rng, a_shape, f), random_array(rng, b_shape, f)
    a_before, b_before = a.copy(), b.copy()
    shape = broadcast_shape(a_shape, b_shape)
    out = np.full(shape, 0x5A5A, f.uint).view(f.np_dtype)
    oracle(op)(a, b, out=out)
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


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    op=st.sampled_from(OPS),
    fmt=st.sampled_from(FMTS),
    shape=st.lists(st.integers(0, 4), max_size=4),
)
def test_random_broadcast_pairs(op: str, fmt: str, shape: list[int], data: st.DataObject) -> None:
    f = FORMATS[fmt]
    rank_a = data.draw(st.integers(0, len(shape)))
    a_shape = tuple(d if data.draw(st.booleans()) else 1 for d in shape[len(shape) - rank_a :])
    b_shape = tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a, b = random_array(rng, a_shape, f), random_array(rng, b_shape, f)
    out_shape = broadcast_shape(a_shape, b_shape)
    out = np.empty(out_shape, f.np_dtype)
    oracle(op)(a, b, out=out)
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


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [((40,), (40,)), ((3, 37), (37,)), ((5, 1), (1, 35))]
)
def test_two_nans_give_the_lhs_nan_in_every_lane(
    op: str, fmt: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    f = FORMATS[fmt]
    a = np.full(a_shape, f.exp_mask | 1, f.uint).view(f.np_dtype)
    b = np.full(b_shape, f.sign | f.exp_mask | f.quiet | 2, f.uint).view(f.np_dtype)
    out = np.empty(broadcast_shape(a_shape, b_shape), f.np_dtype)
    oracle(op)(a, b, out=out)
    want = cpu_scalar(op, f.exp_mask | 1, f.sign | f.exp_mask | f.quiet | 2, f)
    assert set(bits_of(out, f)) == {want}
