"""The compiled fast path's interface with dispatch: every decision both paths share is defined
once (issue 25). The plan-cache key is one function (`_fast.key`; `engine.fast.python_key` only
where `_fast` is not built, tested equal here), the mode and form codes are `_fast`'s constants
with no Python copy, the kernel numbers are `_native`'s, and `configure` reads named fields."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _modes import NATIVE_FAST_PATH
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core import scalars, shared
from fueltensor.core.layout import Layout
from fueltensor.core.tensor import check_inplace, read_only
from fueltensor.engine import dispatch, fast
from fueltensor.engine.backends import current_policy
from fueltensor.kernels import cpu
from fueltensor.kernels._chassis import NATIVE

pytestmark = pytest.mark.skipif(
    dispatch._FAST_MODULE is None, reason="the compiled fast path is not built here"
)
FAST: Any = dispatch._FAST_MODULE
DTYPES = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16, np.int32, np.bool_)


def _view(dtype: Any, shape: tuple[int, ...], how: str) -> ft.FuelTensor:
    """A tensor of `shape` made dense, offset, flipped, transposed or broadcast."""
    base = ft.asarray(np.arange(1, 2 + 2 * int(np.prod(shape))).astype(dtype))
    n = int(np.prod(shape))
    if how == "offset":
        return ft.reshape(base[1 : 1 + n], shape)
    if how == "flipped":
        return ft.flip(ft.reshape(base[:n], shape), axis=0) if shape else base[0]
    if how == "transposed" and len(shape) == 2:
        return ft.reshape(base[:n], shape[::-1]).T
    if how == "broadcast" and shape:
        return ft.broadcast_to(base[:1], shape)
    return ft.reshape(base[:n], shape)


operand = st.builds(
    _view,
    st.sampled_from(DTYPES),
    st.sampled_from([(), (1,), (4,), (2, 3), (3, 1)]),
    st.sampled_from(["dense", "offset", "flipped", "transposed", "broadcast"]),
)
scalar = st.sampled_from([1.0, -0.0, float("nan"), 3, -2, True, False])


@settings(max_examples=80, deadline=None)
@given(a=operand, b=st.one_of(operand, scalar), op=st.sampled_from(sorted(dispatch.OPERATIONS)))
def test_one_key_for_both_paths(a: ft.FuelTensor, b: Any, op: str) -> None:
    """The compiled key equals the pure build's for the same operands, and it is the key the
    Python path caches the plan under (views, weak scalars and mixed dtypes alike)."""
    tensors = scalars.coerce(a, b)
    key = FAST.key(op, *tensors)
    assert key == fast.python_key(op, *tensors)
    assert key[0] == op and (key[1], key[3]) == (tensors[0].dtype.np, tensors[1].dtype.np)
    assert (key[2], key[4]) == (tensors[0]._layout, tensors[1]._layout)
    assert fast.key_function(FAST) is FAST.key
    try:
        dispatch.choose(op, tensors, current_policy())
    except (TypeError, ValueError):  # no plan (e.g. shapes that do not broadcast)
        return
    assert key in current_policy().plans


def test_key_distinguishes_what_the_plan_depends_on() -> None:
    """Operands differing only in dtype, or only in offset, get different keys."""
    x = ft.asarray(np.ones(5, np.float32))
    d = ft.asarray(np.ones(5, np.float64))
    assert FAST.key("add", x, x) != FAST.key("add", d, d)
    assert FAST.key("add", x[1:], x[1:]) != FAST.key("add", x[:4], x[:4])
    assert FAST.key("add", x, x) != FAST.key("subtract", x, x)


def test_inplace_caches_under_the_same_key() -> None:
    """`x += y` and `x + y` share one plan-cache entry, the compiled key's."""
    x = ft.asarray(np.ones((3, 7), np.float32))
    y = ft.asarray(np.arange(7, dtype=np.float32))
    current_policy().plans.clear()
    x += y
    assert list(current_policy().plans) == [FAST.key("add", x, y)]
    _ = x + y
    assert len(current_policy().plans) == 1


def test_key_refuses_what_is_not_a_tensor() -> None:
    x = ft.asarray(np.ones(2, np.float32))
    with pytest.raises(TypeError, match="both operands must be FuelTensors"):
        FAST.key("add", x, 1.0)


def test_mode_and_form_codes_live_in_the_compiled_module() -> None:
    """Dispatch keeps no copy of the codes: it reads `_fast`'s, which are distinct."""
    modes = (FAST.AS_IS, FAST.DENSIFY, FAST.REPEAT)
    forms = (FAST.FORWARD, FAST.REFLECTED, FAST.INPLACE)
    assert len(set(modes)) == 3 and len(set(forms)) == 3
    for name in ("AS_IS", "DENSIFY", "REPEAT", "FORWARD", "REFLECTED", "INPLACE"):
        assert not hasattr(dispatch, name)


def test_forms_mean_what_they_are_named() -> None:
    """REFLECTED swaps the operands and INPLACE writes the first one."""
    x = ft.asarray(np.array([8.0, 6.0], np.float32))
    y = ft.asarray(np.array([2.0, 3.0], np.float32))
    fallback = dispatch._python_binary
    assert np.array_equal(FAST.operator("subtract", FAST.FORWARD, fallback)(x, y), [6.0, 3.0])
    assert np.array_equal(FAST.operator("subtract", FAST.REFLECTED, fallback)(x, y), [-6, -3])
    inplace = FAST.operator("subtract", FAST.INPLACE, dispatch._python_binary_inplace)
    assert inplace(x, y) is x and np.array_equal(x, [6.0, 3.0])
    with pytest.raises(ValueError, match="FORWARD"):
        FAST.operator("add", 7, fallback)


SUFFIXES = {"f32": "float32", "f64": "float64", "bf16": "bfloat16", "f16": "float16"}
"""The contracts' dtype suffixes, as NumPy / ml_dtypes name the dtypes."""


@NATIVE_FAST_PATH
def test_kernel_numbers_are_the_compiled_kernels_own() -> None:
    """A compiled kernel's (op, dtype) numbers name its own op and dtype in `_native`'s
    tables, the one place they are defined: the 36 binary kernels (the seeds' 32 and the exact
    remainder's 4) by `OPS`, the four integer powers (`powi_*`) by `POWI_OP`, the number past
    them."""
    numbered = {
        name.rpartition("::")[2]: fn.__fueltensor_native__
        for name, fn in cpu.thunks("native").items()  # FUELTENSOR_PURE_NUMPY=1 runs others
        if hasattr(fn, "__fueltensor_native__")
    }
    assert len(numbered) == 40
    assert not any(hasattr(fn, "__fueltensor_native__") for fn in cpu.thunks("pure").values())
    assert len(NATIVE.OPS) == NATIVE.POWI_OP
    for name, (op, dtype) in numbered.items():
        kernel, _, suffix = name.rpartition("_")
        assert (NATIVE.OPS[op] if op < len(NATIVE.OPS) else "powi") == kernel
        assert kernel != "powi" or op == NATIVE.POWI_OP
        assert NATIVE.DTYPES[dtype] == SUFFIXES[suffix]


def test_configure_names_a_wrong_field_and_changes_nothing() -> None:
    config = dispatch._CONFIG
    x = ft.asarray(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"config\.trace_var must be a ContextVar"):
        FAST.configure(config._replace(trace_var=None))
    with pytest.raises(TypeError, match=r"config\.default_policy must be callable"):
        FAST.configure(config._replace(default_policy=None))
    with pytest.raises(AttributeError):
        FAST.configure(object())
    with ft.trace() as plans:
        assert np.array_equal(x + x, [2.0, 2.0, 2.0])
    assert len(plans) == 1  # the trace var is still the one configured: the fast path stood aside


def test_one_constructor_for_both_paths() -> None:
    """The Python path builds tensors with `_fast.new_tensor`, the constructor the compiled path
    uses; the pure build's `python_new` makes the same object from the same slots."""
    assert shared.new_tensor is FAST.new_tensor
    storage = np.arange(6, dtype=np.float32)
    layout = Layout((2, 2), (2, 1), 1)
    made = [
        new(ft.FuelTensor, storage, layout, ft.float32, None)
        for new in (FAST.new_tensor, shared.python_new)
    ]
    for t in made:
        assert type(t) is ft.FuelTensor
        assert t._storage is storage and t._layout is layout and t.dtype is ft.float32
        assert np.array_equal(t, [[1.0, 2.0], [3.0, 4.0]])

    class Sub(ft.FuelTensor):
        __slots__ = ()

    assert type(FAST.new_tensor(Sub, storage, layout, ft.float32, None)) is Sub


@pytest.mark.parametrize("cls", [int, float, dict, type, object, Layout, ft.FuelTensor.__base__])
def test_new_tensor_refuses_a_type_without_the_slots(cls: type) -> None:
    """A type that is not FuelTensor or a subclass has not its slots: refused, on every Python
    (built-in static types have no `tp_dict` since 3.12, where reading one crashed)."""
    with pytest.raises(TypeError, match=r"has no slot of FuelTensor's; cls must be FuelTensor"):
        FAST.new_tensor(cls, np.zeros(1, np.float32), Layout((1,), (1,), 0), ft.float32, None)


def test_the_interface_names_one_set_of_fields_on_both_sides() -> None:
    """`bind_core` and `configure` read the fields the C lists once (CORE_FIELDS,
    CONFIG_FIELDS): the Python NamedTuples and the stub's Protocols name the same ones, so a
    rename on either side fails here rather than at run time."""
    import ast
    from pathlib import Path

    import fueltensor.ext

    stub = ast.parse((Path(fueltensor.ext.__file__).parent / "_fast.pyi").read_text("utf-8"))
    protocols = {
        node.name: tuple(f.name for f in node.body if isinstance(f, ast.FunctionDef))
        for node in stub.body
        if isinstance(node, ast.ClassDef)
    }
    assert FAST.CORE_FIELDS == shared.CoreConfig._fields == protocols["CoreConfig"]
    assert FAST.CONFIG_FIELDS == fast.FastConfig._fields == protocols["Config"]


def test_bind_core_names_a_wrong_field_and_changes_nothing() -> None:
    from fueltensor.core.tensor import CORE

    x = ft.asarray(np.ones(3, np.float32))
    wrong_owner = (CORE.slots[0], CORE.slots[1], CORE.dtype_np, CORE.slots[3])
    with pytest.raises(TypeError, match=r"slot .*np.* belongs to DType, not to FuelTensor"):
        FAST.bind_core(CORE._replace(slots=wrong_owner))
    with pytest.raises(TypeError, match=r"config\.slots must be a tuple of its 4 object slots"):
        FAST.bind_core(CORE._replace(slots=("_storage", "_layout", "_dtype", "_np")))
    with pytest.raises(TypeError, match=r"config\.dtype_np must be an object slot"):
        FAST.bind_core(CORE._replace(dtype_np=ft.FuelTensor.shape))
    assert np.array_equal(x + x, [2.0, 2.0, 2.0])
    assert np.array_equal(x[1:] * 2.5, [2.5, 2.5])


basic_item = st.one_of(
    st.none(),
    st.just(...),
    st.integers(-6, 6),
    st.integers(-6, 6).map(np.int64),
    st.builds(
        slice,
        st.none() | st.integers(-8, 8),
        st.none() | st.integers(-8, 8),
        st.none() | st.integers(-3, 3) | st.sampled_from([2**62, -(2**70), 2**70]),
    ),
    st.sampled_from([True, np.bool_(True), [0], 1.0]),
)


@settings(max_examples=400, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
    how=st.sampled_from(["dense", "offset", "flipped", "transposed", "broadcast"]),
    items=st.lists(basic_item, max_size=4),
    alone=st.booleans(),
)
def test_one_basic_indexing_for_both_paths(
    shape: tuple[int, ...], how: str, items: list[Any], alone: bool
) -> None:
    """The compiled `getitem` and the pure build's `python_basic_view` select the same view, or
    raise the same error, or both leave the key to the host's indexing (not a basic index)."""
    x = _view(np.float32, shape, how)
    key = items[0] if alone and items else tuple(items)
    outcomes = []
    for basic_view in (FAST.getitem, shared.python_basic_view):
        try:
            view = basic_view(x, key)
        except (IndexError, ValueError) as e:
            outcomes.append((type(e), str(e)))
        else:
            outcomes.append(None if view is None else (view._layout, view._storage is x._storage))
    assert outcomes[0] == outcomes[1]
    assert shared.basic_view is FAST.getitem


@pytest.mark.parametrize(
    "key", [(..., slice(None, None, -1)), (None, ..., slice(0, 1)), (0, slice(None)), (0, 0)]
)
def test_basic_indexing_keeps_strides_beyond_the_index_range(key: Any) -> None:
    """A stride past 2**63 on an axis of extent 0 or 1 is kept exactly by both paths."""
    x = ft.as_strided(ft.asarray(np.ones(2, np.float32)), (1, 1), (2**64, 2**70), 1)
    fast, pure = FAST.getitem(x, key), shared.python_basic_view(x, key)
    assert fast._layout == pure._layout and fast._storage is pure._storage


SAYS = {
    "dtype": "would store a float",
    "shape": "the result has shape",
    "read-only": "destination is read-only",
    "stride0": "stride-0",
    "overlap": "may overlap",
}
"""What the error of each refusal says (a reason worded as another one would pass unseen)."""


def _target(shape: tuple[int, ...], how: str) -> ft.FuelTensor:
    """An in-place target: `_view`'s kinds, read-only, or an `as_strided` view whose elements
    overlap."""
    if how == "read-only":
        return read_only(_view(np.float32, shape, "dense"))
    if how == "stride0":
        strides = (0, *(1,) * (len(shape) - 1)) if shape else ()
        return ft.as_strided(ft.asarray(np.ones(8, np.float32)), shape, strides, 0)
    if how == "overlapping":
        n = max(1, int(np.prod(shape)))
        return ft.as_strided(ft.asarray(np.ones(n + 4, np.float32)), shape, (1,) * len(shape), 0)
    return _view(np.float32, shape, how)


@settings(max_examples=300, deadline=None)
@given(
    shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
    how=st.sampled_from(
        [
            "dense",
            "offset",
            "flipped",
            "transposed",
            "broadcast",
            "read-only",
            "stride0",
            "overlapping",
        ]
    ),
    dtype=st.sampled_from([None, ft.float32, ft.float64]),
    other_shape=st.booleans(),
)
def test_one_inplace_rule_for_both_paths(
    shape: tuple[int, ...], how: str, dtype: Any, other_shape: bool
) -> None:
    """The compiled rule and the pure build's refuse the same targets for the same reason;
    both paths' errors come from `check_inplace`, which asks the compiled one."""
    target = _target(shape, how)
    want = None if dtype is None else ((*target.shape, 2) if other_shape else target.shape)
    reason = FAST.inplace_refusal(target, dtype, want)
    assert reason == shared.python_refusal(target, dtype, want)
    assert shared.refusal is FAST.inplace_refusal
    if dtype is not None:
        if reason is None:
            check_inplace(target, dtype, want, "add")
        else:
            with pytest.raises((TypeError, ValueError), match=SAYS[reason]):
                check_inplace(target, dtype, want, "add")


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(
        st.floats(allow_nan=True, allow_infinity=True, width=64),
        st.integers(-(2**70), 2**70),
        st.booleans(),
        st.integers(0, 2**64 - 1).map(
            lambda bits: float(np.frombuffer(np.uint64(bits).tobytes(), np.float64)[0])
        ),
    ),
    dtype=st.sampled_from(DTYPES),
)
def test_one_weak_scalar_rule_for_both_paths(value: Any, dtype: Any) -> None:
    """The fast path's cached 0-d tensor of a Python scalar (`_fast.scalar`) is the one the
    rule's home makes (`core.scalars.scalar_tensor`): same dtype, same bits (NaN payloads and
    -0.0 kept), the same refusal of an int the dtype cannot hold. A kept one is read-only (an
    int beyond int64 is made afresh, not kept)."""
    from fueltensor.core import scalars

    like = ft.asarray(np.zeros(2, dtype))
    try:
        made = scalars.scalar_tensor(value, like)
    except (OverflowError, TypeError) as refused:
        with pytest.raises(type(refused)):
            FAST.scalar(value, like)
        return
    cached = FAST.scalar(value, like)
    assert cached.dtype is made.dtype and cached.shape == made.shape == ()
    assert cached._array.tobytes() == made._array.tobytes()
    kept = not isinstance(value, int) or -(2**63) <= value < 2**63
    assert cached._storage.flags.writeable is not kept
