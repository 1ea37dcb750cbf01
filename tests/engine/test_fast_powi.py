"""The compiled fast path serves `x ** k` (an int k) from its PowIElementwise plan: the
Python path's bits (and the contract's, from the independent `_oracle.powi_expected`) for every
float dtype, layout, in place, and for NumPy integer exponents."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _impls import IMPLS, using
from _modes import NATIVE_FAST_PATH
from _oracle import FORMATS, powi_expected, special_bits
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core import scalars
from fueltensor.engine import dispatch, fast, scalar_forms

pytestmark = [
    pytest.mark.skipif(dispatch._FAST_MODULE is None, reason="the fast path is not built here"),
    NATIVE_FAST_PATH,
]

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
EXPONENTS = [0, 1, 2, 3, -1, -2, 5, -7, 31, 2**31 - 1, -(2**31)]
"""Exponents across the loop's cases: none, x's own bits, the squarings, reciprocals, i32's ends."""
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, np.inf, -np.inf, np.nan, 1e-30, 7.25, 6e4]
VIEWS: dict[str, Callable[[ft.FuelTensor], ft.FuelTensor]] = {
    "dense": lambda x: x,
    "row": lambda x: x[1],
    "strided": lambda x: x[:, ::2],
    "offset": lambda x: x[1:, 2:],
    "flipped": lambda x: ft.flip(x, axis=1),
    "transposed": lambda x: x.T,
    "broadcast": lambda x: ft.broadcast_to(x[0], (3, 6)),
    "0-d": lambda x: x[2, 3],
    "empty": lambda x: x[:, :0],
}
"""Layouts of a 4x6 tensor: dense ones read as they are, the rest densified first."""


def values(fmt: str, seed: int) -> np.ndarray:
    """A 4x6 array of `fmt` with special values (a signalling NaN among them) mixed in."""
    rng = np.random.default_rng(seed)
    mixed = np.where(rng.random(24) < 0.4, rng.choice(SPECIALS, 24), rng.standard_normal(24) * 3)
    a = mixed.astype(DTYPES[fmt])
    u = a.view(FORMATS[fmt].uint)
    u[0] = {"f32": 0x7FA00001, "f64": 0x7FF4000000000001, "bf16": 0x7FA1, "f16": 0x7D01}[fmt]
    return a.reshape(4, 6)


def bits(t: Any, fmt: str) -> np.ndarray:
    return np.array(np.asarray(t)).view(FORMATS[fmt].uint)


def python_path(x: ft.FuelTensor, k: Any) -> ft.FuelTensor:
    """`x ** k` on the Python path (a trace keeps the fast path aside): PowIElementwise."""
    with ft.trace() as plans:
        result: ft.FuelTensor = x**k
    assert [p.op_kind for p in plans] == ["PowIElementwise"]
    return result


def check(fmt: str, view: str, k: Any, seed: int) -> None:
    """The fast path serves `x ** k` once the Python path cached its plan: the same dtype,
    layout and bits, which are the contract's."""
    x = VIEWS[view](ft.asarray(values(fmt, seed)))
    slow = python_path(x, k)
    served = dispatch._FAST("pow", x, k)
    assert served is not None, (fmt, view, k)
    assert served.dtype is slow.dtype and served._layout == slow._layout
    np.testing.assert_array_equal(bits(served, fmt), bits(slow, fmt))
    want = powi_expected(np.array(np.asarray(x), order="C"), int(k), FORMATS[fmt])
    np.testing.assert_array_equal(bits(served, fmt), want)
    np.testing.assert_array_equal(bits(x**k, fmt), want)  # the operator, untraced


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("k", EXPONENTS)
def test_the_fast_path_serves_integer_powers_bit_for_bit(fmt: str, view: str, k: int) -> None:
    check(fmt, view, k, hash((fmt, view, k)) % 2**32)


LONG = 700
"""Longer than two half-float tiles (256 lanes) and dozens of compiled vector blocks (8 to 64
lanes), so special values meet every lane position of a block and of the padded last block."""
LENGTHS = [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 511, 513, LONG - 1]
"""Prefix lengths: tails of every block width an instruction set's body uses, and whole blocks."""


def long_values(fmt: str, seed: int) -> np.ndarray:
    """LONG + 1 values of `fmt`: a third random bit patterns (every exponent, NaN payloads,
    signalling NaNs, subnormals), a third near 1 (high powers stay finite), a third specials."""
    f = FORMATS[fmt]
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 2 ** (8 * f.uint().itemsize), LONG + 1, dtype=np.uint64).astype(f.uint)
    near = (rng.uniform(0.5, 2.0, LONG + 1) * rng.choice([-1.0, 1.0], LONG + 1)).astype(f.np_dtype)
    special = rng.choice(np.array(special_bits(f), dtype=f.uint), LONG + 1)
    pick = rng.integers(0, 3, LONG + 1)
    mixed = np.where(pick == 0, raw, np.where(pick == 1, near.view(f.uint), special))
    return mixed.view(f.np_dtype)


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("k", [0, 2, 3, -1, -2, 4, 5, -7, 2**31 - 1, 1 - 2**31, -(2**31)])
def test_long_tensors_every_block_and_tail_bit_for_bit(fmt: str, k: int) -> None:
    """Every instruction set's compiled body gives the contract's bits (the oracle's, and the
    Python path's) over whole vector blocks and every tail length, from an aligned start and
    from one element past it, and in place (`x **= k` over the whole tensor)."""
    a = long_values(fmt, k & 0xFFFF)
    want = powi_expected(a, k, FORMATS[fmt])
    np.testing.assert_array_equal(bits(python_path(ft.asarray(a), k), fmt), want)
    for impl in IMPLS[1:]:
        with using(impl):
            for start in (0, 1):
                whole = ft.asarray(a)
                for n in LENGTHS:
                    x = whole[start : start + n]
                    python_path(x, k)
                    served = dispatch._FAST("pow", x, k)
                    assert served is not None, (impl, n)
                    np.testing.assert_array_equal(bits(served, fmt), want[start : start + n])
            target = ft.asarray(a.copy())
            target**k
            assert dispatch._FAST_INPLACE("pow", target, k) is target
            np.testing.assert_array_equal(bits(target, fmt), want)


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("k", [np.int8(-3), np.uint8(2), np.int32(7), np.int64(-(2**31))])
def test_numpy_integer_exponents_are_served(fmt: str, k: Any) -> None:
    check(fmt, "dense", k, 7)
    check(fmt, "strided", k, 8)


@settings(max_examples=80, deadline=None)
@given(
    fmt=st.sampled_from(sorted(DTYPES)),
    view=st.sampled_from(sorted(VIEWS)),
    k=st.integers(-(2**31), 2**31 - 1) | st.integers(-40, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_i32_exponent_and_layout_is_the_python_path(
    fmt: str, view: str, k: int, seed: int
) -> None:
    check(fmt, view, k, seed)


@pytest.mark.parametrize("fmt", DTYPES)
@pytest.mark.parametrize("view", ["dense", "row", "strided", "flipped", "transposed", "0-d"])
@pytest.mark.parametrize("k", [3, -1, 1, np.int16(2)])
def test_inplace_integer_powers_are_served_through_the_targets_strides(
    fmt: str, view: str, k: Any
) -> None:
    """`x **= k` on the fast path writes the same storage bits as on the Python path (every
    byte of the storage, so nothing outside the view moves)."""
    storages = []
    for served in (False, True):
        storage = ft.asarray(values(fmt, 11))
        target = VIEWS[view](storage)
        if served:
            target**k  # caches the plan `x **= k` runs
            assert dispatch._FAST_INPLACE("pow", target, k) is target
        else:
            with ft.trace() as plans:
                assert dispatch.binary_inplace("pow", target, k) is target
            assert [p.op_kind for p in plans] == ["PowIElementwise"]
        storages.append(bits(storage, fmt))
    np.testing.assert_array_equal(storages[1], storages[0])


def test_the_operator_spelling_is_served_in_place() -> None:
    x = ft.asarray(np.array([1.5, -2.0, 3.0, 0.5], np.float32))
    same = x
    x**3
    x **= 3
    assert x is same
    assert np.asarray(x).tolist() == [3.375, -8.0, 27.0, 0.125]


def test_an_inplace_power_the_target_cannot_hold_is_refused_untouched() -> None:
    """A read-only target: the fast path raises the Python path's error, target unchanged."""
    base = np.array([1.5, 2.0, 3.0], np.float32)
    base.flags.writeable = False
    x = ft.asarray(base)
    x**2
    with pytest.raises(ValueError) as slow, ft.trace():
        dispatch.binary_inplace("pow", x, 2)
    with pytest.raises(ValueError) as served:
        dispatch._FAST_INPLACE("pow", x, 2)
    assert str(served.value) == str(slow.value)
    assert base.tolist() == [1.5, 2.0, 3.0]


def test_the_form_key_is_one_definition_apart_from_float_exponents() -> None:
    """`_fast.form_key` packs what `fast.python_form_key` does; `x ** 3` and `x ** 3.0` are
    cached under different keys and served different plans (powf's bits differ from the
    PowI loop's in some lanes)."""
    module = dispatch._FAST_MODULE
    x = ft.asarray(np.random.default_rng(5).uniform(-4, 4, 4096).astype(np.float32))
    assert module.form_key("pow", x, 3) == fast.python_form_key("pow", x, 3)
    three = scalars.scalar_tensor(3.0, x)
    assert module.form_key("pow", x, 3) != module.key("pow", x, three)
    x**3.0
    x**3
    powf, powi = dispatch._FAST("pow", x, 3.0), dispatch._FAST("pow", x, 3)
    assert powf is not None and powi is not None
    want = powi_expected(np.asarray(x), 3, FORMATS["f32"])
    np.testing.assert_array_equal(bits(powi, "f32"), want)
    assert not np.array_equal(bits(powf, "f32"), want)
    policy = dispatch.current_policy()
    cached = policy.plans[module.form_key("pow", x, 3)]
    assert cached[0].op_kind == "PowIElementwise" and cached[0].params == (3,)


def test_tracing_and_observing_still_see_the_integer_power() -> None:
    """With the plan cached, a trace records PowIElementwise (the fast path stands aside)."""
    x = ft.asarray(np.array([1.0, 2.0], np.float64))
    x**2
    with ft.trace() as plans:
        assert dispatch._FAST("pow", x, 2) is None
        x**2
    assert [(p.op_kind, p.params) for p in plans] == [("PowIElementwise", (2,))]


@pytest.mark.parametrize("k", [2**31, -(2**31) - 1, 2**40])
def test_exponents_outside_i32_are_declined_and_run_pow(k: int) -> None:
    """No PowI contract admits them: the compiled call declines and the Python path plans
    PowElementwise, as untraced as traced."""
    x = ft.asarray(np.array([1.0, -1.0, 0.5], np.float64))
    x**k
    assert dispatch._FAST("pow", x, k) is None
    with ft.trace() as plans:
        traced = x**k
    assert [p.op_kind for p in plans] == ["PowElementwise"]
    np.testing.assert_array_equal(np.asarray(x**k), np.asarray(traced))


def test_an_integer_tensor_keeps_the_hosts_refusal() -> None:
    i = ft.asarray(np.array([1, 2, 3], np.int32))
    with pytest.raises(ValueError):
        i**-2
    assert dispatch._FAST("pow", i, -2) is None
    assert np.asarray(i**2).tolist() == [1, 4, 9]


def test_entry_refuses_params_that_are_not_an_i32_exponent() -> None:
    """`_fast.entry` takes a POWI kernel's (k,), k in i32, and no params for any other."""
    module = dispatch._FAST_MODULE
    x = ft.asarray(np.ones(4, np.float32))
    x**2
    plan = scalar_forms.planned("pow", x, 2, dispatch.current_policy(), dispatch._fast_entry)
    assert plan is not None and dispatch._fast_entry(plan[0]) is not None
    codes = plan[0].fn.__fueltensor_native__
    out = (ft.float32, x._layout, np.dtype(np.float32), (4,))
    common = (*codes, *out, (0, 0), (0, 0), (4, 0), None, None, (None, None))
    for params in [(), (2**31,), (2.0,), (2, 3), None]:
        with pytest.raises(TypeError, match="powi kernel's params"):
            module.entry(*common, params)
    add = (0, codes[1], *out, (0, 0), (0, 0), (4, 4), None, None, (None, None))
    with pytest.raises(TypeError, match="only a powi kernel takes params"):
        module.entry(*add, (2,))
