"""`x op= y` on the compiled fast path (`ext._fast.inplace`): the plan's fresh output copied
into the target, with the Python path's bits, refusals and traces.

The Python path is what runs inside `ft.trace()` (the fast path stands aside while a trace or an
observer watches), so each case is run both ways, on two copies of the same storage, and the
whole storage compared bit for bit (a write outside the target would show)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _modes import NATIVE_FAST_PATH
from _oracle import FORMATS, cpu_expected
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.engine import dispatch, scalar_forms
from fueltensor.kernels._chassis import NATIVE

pytestmark = pytest.mark.skipif(
    dispatch._FAST_INPLACE is None, reason="the compiled fast path is not built here"
)

OPS = ["add", "subtract", "multiply", "divide", "remainder", "pow", "maximum", "minimum"]
DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, np.inf, -np.inf, np.nan, 1e-30, 7.25]

View = Callable[[ft.FuelTensor], ft.FuelTensor]
TARGETS: dict[str, View] = {
    "dense": lambda s: s,
    "row": lambda s: s[1],
    "strided": lambda s: s[:, ::2],
    "offset": lambda s: s[1:, 2:],
    "flipped": lambda s: ft.flip(s, axis=1),
    "transposed": lambda s: s.T,
    "0-d": lambda s: s[2, 3],
    "empty": lambda s: s[:, :0],
    "broadcast": lambda s: ft.broadcast_to(s[0], (3, 6)),
}
"""In-place targets over a 4×6 storage (the broadcast one is refused: read-only)."""
OTHERS: dict[str, View] = {
    "same": lambda s: s,
    "row": lambda s: s[0],
    "column": lambda s: s[:, :1],
    "element": lambda s: s[3, 5],
    "shifted": lambda s: s[::-1],
    "transposed": lambda s: s.T,
}
"""Tensor operands, as views of the target's own storage (overlapping it) or of another."""


def values(dtype: Any, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random values with special values mixed in, in `dtype`."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    mixed = np.where(rng.random(n) < 0.3, rng.choice(SPECIALS, n), rng.standard_normal(n) * 4)
    return mixed.astype(dtype).reshape(shape)


def storage_bits(t: ft.FuelTensor) -> np.ndarray:
    """Every byte of `t`'s storage (not only its view's)."""
    return np.array(t._storage).view(np.uint8)


def run_inplace(op: str, target: ft.FuelTensor, other: Any, fast: bool) -> ft.FuelTensor:
    """`target op= other` on the fast path (its plan cached first; it must serve the call) or,
    inside a trace, on the Python path."""
    if not fast:
        with ft.trace() as plans:
            result = dispatch.binary_inplace(op, target, other)
        assert len(plans) == 1
        return result
    with ft.trace() as plans:
        getattr(ft, op)(target, other)  # caches the plan binary_inplace plans (the same key)
    form = op in scalar_forms.FORMS and scalar_forms.integer_scalar(other) is not None
    if form and plans[0].op_kind != scalar_forms.FORMS[op].op_kind:
        # x **= 2**40 (an int no PowIElementwise contract admits) runs PowElementwise or the
        # host, planned in Python; the compiled call declines it: its scalar's 0-d tensor
        # would find x **= 2.0**40's plan in the cache
        assert dispatch._FAST_INPLACE(op, target, other) is None
        return dispatch.binary_inplace(op, target, other)
    served = dispatch._FAST_INPLACE(op, target, other)
    assert served is not None, (op, target, other)
    return served


def check_case(op: str, fmt: str, seed: int, target_of: View, other_of: Any, own: bool) -> None:
    """Run `target op= other` both ways on equal storages; the same storage bits afterwards, or
    the same error with the storage untouched. `other_of` makes a tensor from a storage (the
    target's when `own`, overlapping it) or is a Python scalar."""
    outcomes = []
    for fast in (False, True):
        storage = ft.asarray(values(DTYPES[fmt], (4, 6), seed))
        before = storage_bits(storage).copy()
        target = target_of(storage)
        if callable(other_of):
            source = storage if own else ft.asarray(values(DTYPES[fmt], (4, 6), seed + 1))
            other = other_of(source)
        else:
            other = other_of
        try:
            assert run_inplace(op, target, other, fast) is target
        except (TypeError, ValueError, OverflowError) as e:
            np.testing.assert_array_equal(storage_bits(storage), before)
            outcomes.append((type(e), str(e)))
            continue
        outcomes.append(storage_bits(storage))
    slow, fast_ = outcomes
    if isinstance(slow, tuple):
        assert slow == fast_
    else:
        np.testing.assert_array_equal(fast_, slow)


Case = tuple[str, str, int, View, Any, bool]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """An op, a dtype, a target view, and a tensor view (possibly of the target's storage) or a
    Python scalar of any bits."""
    op = draw(st.sampled_from(OPS))
    fmt = draw(st.sampled_from(sorted(DTYPES)))
    target = TARGETS[draw(st.sampled_from(sorted(TARGETS)))]
    scalars = st.floats() | st.sampled_from([-0.0, 0.0, 2, -3, True, 2**40])
    other = draw(st.sampled_from(sorted(OTHERS)).map(OTHERS.__getitem__) | scalars)
    return op, fmt, draw(st.integers(0, 2**32 - 1)), target, other, draw(st.booleans())


@NATIVE_FAST_PATH
@settings(max_examples=300, deadline=None)
@given(cases())
def test_inplace_is_the_python_path_bit_for_bit(case: Case) -> None:
    check_case(*case)


@NATIVE_FAST_PATH
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_inplace_on_every_target_and_operand(op: str, fmt: str) -> None:
    seed = OPS.index(op) * 10 + sorted(DTYPES).index(fmt)
    for target in TARGETS.values():
        for other in [*OTHERS.values(), 1.5, -0.0, float("nan"), 3]:
            for own in (False, True):
                check_case(op, fmt, seed, target, other, own)


def test_an_overlapping_operand_is_read_whole_before_the_write() -> None:
    base = np.arange(1, 9, dtype=np.float32)
    x = ft.asarray(base.copy())
    x[1:] + x[:-1]  # caches the plan: the next one runs on the fast path
    x[1:] += x[:-1]
    np.testing.assert_array_equal(np.asarray(x), np.concatenate([base[:1], base[1:] + base[:-1]]))
    y = ft.asarray(base.copy())
    y[::-1] * y
    y[::-1] *= y  # the target reversed over its own operand
    np.testing.assert_array_equal(np.asarray(y), base * base[::-1])


@NATIVE_FAST_PATH
def test_a_refused_result_leaves_the_target_untouched() -> None:
    x = ft.asarray(np.arange(4, dtype=np.float32))
    wide, tall = ft.asarray(np.ones(4, np.float64)), ft.asarray(np.ones((2, 4), np.float32))
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    broadcast, read_only = ft.broadcast_to(x[0], (4,)), ft.asarray(frozen)  # no copy made
    for target, other, error, match in [
        (x, wide, TypeError, "would store a float64 result in a float32 tensor"),
        (x, tall, ValueError, r"the result has shape \(2, 4\), the target \(4,\)"),
        (broadcast, 1.0, ValueError, "read-only"),
        (read_only, 1.0, ValueError, "read-only"),
    ]:
        target + other  # the plan is cached: the refusal comes from the fast path's check
        with pytest.raises(error, match=match):
            dispatch._FAST_INPLACE("add", target, other)
        with pytest.raises(error, match=match):
            target += other
    np.testing.assert_array_equal(np.asarray(x), [0.0, 1.0, 2.0, 3.0])
    np.testing.assert_array_equal(frozen, [0.0, 1.0, 2.0, 3.0])


def test_an_int_that_does_not_fit_raises_and_changes_nothing() -> None:
    x = ft.asarray(np.ones(3, np.float32))
    x += 1.0
    for value in (10**400, -(10**400)):
        with pytest.raises(OverflowError) as fast:
            dispatch._FAST_INPLACE("add", x, value)
        with pytest.raises(OverflowError) as slow, ft.trace():
            dispatch.binary_inplace("add", x, value)
        assert str(fast.value) == str(slow.value)
    np.testing.assert_array_equal(np.asarray(x), np.full(3, 2.0, np.float32))


@NATIVE_FAST_PATH
@pytest.mark.parametrize("n", [1, 4096 * 3 + 7, 300_001])
@pytest.mark.parametrize("fmt", sorted(DTYPES))
def test_large_and_repeated_scalar_operands(n: int, fmt: str) -> None:
    lhs, rhs = values(DTYPES[fmt], (n,), n), values(DTYPES[fmt], (n,), n + 1)
    for op in ("add", "pow", "maximum"):
        for other in (rhs, 0.5, -0.0):
            got, slow = ft.asarray(lhs.copy()), ft.asarray(lhs.copy())
            operand = ft.asarray(other) if isinstance(other, np.ndarray) else other
            assert run_inplace(op, got, operand, fast=True) is got
            run_inplace(op, slow, operand, fast=False)
            np.testing.assert_array_equal(storage_bits(got), storage_bits(slow))


@NATIVE_FAST_PATH
@pytest.mark.parametrize("fmt", sorted(DTYPES))
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("isa", getattr(NATIVE, "ISAS", ("baseline",)))
def test_a_target_that_is_its_own_operand_is_written_with_fresh_outputs_bits(
    fmt: str, threads: int, isa: str
) -> None:
    """The fast path writes straight into a dense target that is an operand (no fresh output):
    f32 and f64 through the body's in-place loops, pow and the halves over many in-place tiles,
    and split over two threads past PARALLEL_FROM, `x op= y`, `x op= x` and `x op= scalar` give
    the Python path's bits for every op, on every instruction set's body; f32 pow with its vector
    powf switched on (its powf lanes re-read their operands)."""
    native: Any = NATIVE
    n = native.PARALLEL_FROM + 4097 if threads == 2 else 3 * 4096 + 7
    base, other = values(DTYPES[fmt], (n,), n), ft.asarray(values(DTYPES[fmt], (n,), 1))
    previous = (ft.set_num_threads(threads), native.pow_vector(True))
    previous_isa = native.select_isa(isa)
    try:
        for op in OPS:
            for operand in (other, None, 2.0, 0.5):
                got, slow = ft.asarray(base.copy()), ft.asarray(base.copy())
                assert run_inplace(op, got, got if operand is None else operand, True) is got
                run_inplace(op, slow, slow if operand is None else operand, fast=False)
                np.testing.assert_array_equal(storage_bits(got), storage_bits(slow))
    finally:
        ft.set_num_threads(previous[0])
        native.pow_vector(previous[1])
        native.select_isa(previous_isa)


@NATIVE_FAST_PATH
@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_a_half_broadcast_in_place_keeps_the_operands_nan_payloads(fmt: str) -> None:
    """A half type's oracle call redoes its NaN lanes from its operands after the ufunc (whose
    own NaNs lose payloads), so it must not have overwritten the lhs it reads: NaN payloads of
    either operand come out as the Python path gives them."""
    f = FORMATS[fmt]
    nan = f.exp_mask | 0x25  # a signalling NaN with a payload
    lhs = np.array([[0x3C00, nan, 0x4000, f.exp_mask | f.quiet | 0x11]] * 3, f.uint)
    rhs = np.array([nan | f.sign, 0x4200, nan, 0x3C00], f.uint)
    for op in ("add", "subtract", "multiply", "divide"):
        got, slow = (ft.asarray(lhs.copy().view(f.np_dtype)) for _ in range(2))
        other = ft.asarray(rhs.view(f.np_dtype))
        assert run_inplace(op, got, other, fast=True) is got
        run_inplace(op, slow, other, fast=False)
        np.testing.assert_array_equal(storage_bits(got), storage_bits(slow))


@NATIVE_FAST_PATH
def test_small_results_are_the_kernels_bits() -> None:
    lhs, rhs = values(np.float32, (6,), 7), values(np.float32, (6,), 8)
    for op, name in (("add", "add"), ("pow", "pow"), ("remainder", "mod")):
        x, y = ft.asarray(lhs.copy()), ft.asarray(rhs)
        getattr(ft, op)(x, y)
        assert dispatch._FAST_INPLACE(op, x, y) is x
        want = cpu_expected(name, lhs, rhs, FORMATS["f32"])
        np.testing.assert_array_equal(np.asarray(x).view(np.uint32), want)


def test_inplace_operations_are_traced_and_observed() -> None:
    x = ft.asarray(np.linspace(-1, 1, 8, dtype=np.float32))
    y = ft.asarray(np.linspace(0, 1, 8, dtype=np.float32))
    x += 1.0
    x *= y
    with ft.trace() as plans:
        x += 1.0
        x *= y
    assert [p.op for p in plans] == ["add", "multiply"]
    assert plans[1] is ft.explain(ft.multiply, x, y)
    with ft.compare_backends() as report:
        x -= y
        x **= 2.0
    assert len(report.comparisons) == 2


def test_a_declined_inplace_operator_writes_its_target() -> None:
    """Where the compiled call declines (a trace is active), `x op= y` falls back to the Python
    in-place path, and where it serves `x **= 2` (PowIElementwise): either way the target
    itself is written, not rebound to a new tensor."""
    x = ft.asarray(np.arange(4, dtype=np.float32))
    same = x
    with ft.trace():
        x += 1.0
    x **= 2
    assert x is same
    np.testing.assert_array_equal(np.asarray(same), [1.0, 4.0, 9.0, 16.0])


def test_the_inplace_operators_stand_for_the_python_methods() -> None:
    x = ft.asarray(np.array([1.0, 2.0, 4.0], np.float32))
    method = ft.FuelTensor.__imul__
    assert method.__name__ == "__imul__" and method.__qualname__ == "FuelTensor.__imul__"
    assert pickle.loads(pickle.dumps(method)) is method
    assert x.__imul__(2) is x  # bound as a method
    np.testing.assert_array_equal(np.asarray(x), [2.0, 4.0, 8.0])
    with pytest.raises(TypeError, match="unsupported operand"):
        x += "a"


def test_large_targets_from_many_threads() -> None:
    import threading

    n = 40_000  # over the size from which the copy into the target runs without the GIL
    base = values(np.float32, (n,), 5)
    others = [ft.asarray(values(np.float32, (n,), 6 + k)) for k in range(4)]
    targets = [ft.asarray(base.copy()) for _ in range(4)]
    targets[0] + others[0]
    errors: list[int] = []

    def worker(k: int) -> None:
        for _ in range(20):
            targets[k] += others[k]
        want = base.copy()
        with np.errstate(all="ignore"):  # inf + -inf: NaN, as the kernel gives it
            for _ in range(20):
                want += np.asarray(others[k])
        if np.asarray(targets[k]).tobytes() != want.tobytes():
            errors.append(k)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and not any(t.is_alive() for t in threads)
