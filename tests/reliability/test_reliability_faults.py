"""Nothing lost: operations never write their inputs, a failing in-place operation leaves its
target byte for byte as it was, and a kernel that breaks its contract is caught before its
result reaches the user (`ContractViolation`)."""

from __future__ import annotations

import hashlib
import importlib
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import fueltensor as ft

registry_module = importlib.import_module("fueltensor.registry")

OPS: dict[str, Callable[[Any, Any], ft.FuelTensor]] = {
    "add": ft.add,
    "subtract": ft.subtract,
    "multiply": ft.multiply,
    "divide": ft.divide,
    "remainder": ft.remainder,
    "pow": ft.pow,
    "maximum": ft.maximum,
    "minimum": ft.minimum,
}
INPLACE: dict[str, Callable[[ft.FuelTensor, Any], Any]] = {
    "add": lambda t, o: t.__iadd__(o),
    "subtract": lambda t, o: t.__isub__(o),
    "multiply": lambda t, o: t.__imul__(o),
    "divide": lambda t, o: t.__itruediv__(o),
    "remainder": lambda t, o: t.__imod__(o),
    "pow": lambda t, o: t.__ipow__(o),
}
DTYPES = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16, np.int32, np.uint8)
BACKENDS = (None, "cpu", "reference", "contracts")


def checksum(buffer: np.ndarray) -> str:
    return hashlib.sha256(buffer.tobytes()).hexdigest()


def backend(name: str | None) -> AbstractContextManager[object]:
    return nullcontext() if name is None else ft.use_backend(name)


def buffers(data: st.DataObject, dtype: Any, other_dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two 64-element buffers of random values of either sign (seeded from `data`)."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    first = (rng.standard_normal(64) * 8).astype(dtype)
    return first, (rng.standard_normal(64) * 8).astype(other_dtype)


@st.composite
def views(
    draw: st.DrawFn, buffer: np.ndarray, like: tuple[int, ...] | None = None
) -> ft.FuelTensor:
    """A random strided view (negative and zero strides, offsets) on `buffer`'s storage; with
    `like`, of a shape that broadcasts to `like` (some leading axes dropped, some extents 1)."""
    base = ft.asarray(buffer)
    if like is None:
        ndim = draw(st.integers(0, 3))
        shape = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    else:
        kept = like[draw(st.integers(0, len(like))) :]
        shape = tuple(1 if draw(st.booleans()) else n for n in kept)
    ndim = len(shape)
    strides = tuple(draw(st.lists(st.integers(-4, 4), min_size=ndim, max_size=ndim)))
    lo = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(shape, strides, strict=True) if s > 0)
    offset = draw(st.integers(-lo, buffer.size - 1 - hi))
    return ft.as_strided(base, shape, strides, offset)


def dense(x: Any) -> Any:
    """A fresh dense copy of a view (a Python scalar stays itself)."""
    return ft.asarray(np.asarray(x).copy()) if isinstance(x, ft.FuelTensor) else x


def same_bits(got: ft.FuelTensor, want: ft.FuelTensor) -> None:
    """Equal dtype, shape and bytes (NaN payloads included)."""
    g, w = np.asarray(got), np.asarray(want)
    assert (g.dtype, g.shape) == (w.dtype, w.shape)
    assert g.tobytes() == w.tobytes()


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    op=st.sampled_from(sorted(OPS)),
    dtype=st.sampled_from(DTYPES),
    other_dtype=st.sampled_from(DTYPES),
    where=st.sampled_from(BACKENDS),
    scalar=st.booleans(),
)
def test_operations_never_modify_their_inputs(
    data: st.DataObject, op: str, dtype: Any, other_dtype: Any, where: str | None, scalar: bool
) -> None:
    first, second = buffers(data, dtype, other_dtype)
    before = checksum(first), checksum(second)
    x = data.draw(views(first))
    y: Any = 2.5 if scalar else data.draw(views(second, like=x.shape))
    assert np.shares_memory(np.asarray(x), first)
    try:
        with backend(where):
            got = OPS[op](x, y)
    except ft.NoKernelError:
        assert where is not None  # only a restricted policy refuses instead of using the host
        event(f"refused under use_backend({where!r})")
    except ValueError as e:  # NumPy's rule for the host's integer pow, refused before writing
        assert op == "pow" and "raised to a negative integer" in str(e), e
        event("integer to a negative power refused")
    else:
        event("ran")
        # the result on views is the result on dense copies of them, bit for bit
        with backend(where):
            same_bits(got, OPS[op](dense(x), dense(y)))
    assert (checksum(first), checksum(second)) == before


@settings(max_examples=100, deadline=None)
@given(data=st.data(), op=st.sampled_from(sorted(INPLACE)), where=st.sampled_from(BACKENDS))
def test_inplace_operations_write_only_their_target(
    data: st.DataObject, op: str, where: str | None
) -> None:
    """`x op= y` changes exactly the elements of x's view, and never y's storage."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    target_buffer = rng.standard_normal(64).astype(np.float32) + 4
    other_buffer = rng.standard_normal(64).astype(np.float32) + 4
    other_sum = checksum(other_buffer)
    x = data.draw(views(target_buffer))
    y = data.draw(views(other_buffer, like=x.shape))
    marked = np.zeros(64, bool)
    index_view = ft.as_strided(ft.asarray(np.arange(64)), x.shape, x.strides, x.offset)
    indices = np.asarray(index_view).ravel()
    marked[indices] = True
    outside = target_buffer[~marked].copy()
    whole = target_buffer.copy()
    try:
        with backend(where):
            want = OPS[op](dense(x), dense(y))
            INPLACE[op](x, y)
    except ft.NoKernelError:
        assert where is not None
        event(f"refused under use_backend({where!r})")
        np.testing.assert_array_equal(target_buffer, whole)
    except ValueError as e:
        # one element of a stride-0 or self-overlapping target would be written many times
        assert x._layout.may_self_overlap, e  # the documented (conservative) refusal rule
        assert any(w in str(e) for w in ("stride-0", "stride 0", "read-only", "may overlap")), e
        event("refused: a target whose elements repeat")
        np.testing.assert_array_equal(target_buffer, whole)
    else:
        assert np.unique(indices).size == indices.size  # a repeating target is never written
        event("written")
        same_bits(dense(x), want)  # the view now holds op(x, y), bit for bit
    assert checksum(other_buffer) == other_sum
    np.testing.assert_array_equal(target_buffer[~marked], outside)


HOST_UNARY = (
    "abs",
    "sqrt",
    "exp",
    "negative",
    "sum",
    "mean",
    "max",
    "sort",
    "argsort",
    "cumulative_sum",
    "unique_values",
    "sin",
    "round",
    "isnan",
    "sign",
    "prod",
    "std",
)
HOST_BINARY = ("logaddexp", "atan2", "hypot", "equal", "less")
FLOAT_REDUCTIONS = frozenset({"sum", "mean", "cumulative_sum", "prod", "std"})
"""Their float summation order follows the memory layout (NumPy's pairwise and SIMD loops), so a
view and its dense copy agree to rounding, not bit for bit."""
LAYOUT_ROUNDED = frozenset({"exp", "sin", "logaddexp", "atan2", "hypot"})
"""NumPy runs these through its SIMD loops on contiguous operands and its scalar loops on strided
ones, which round differently (atan2 of a stride-0 float32 view and of its dense copy differ by
an ULP, in either kernel mode): a view and its dense copy agree within 2 ULP, not bit for bit."""


def order_tolerance(name: str, x: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) within which two summation orders of reduction `name` over `x` agree:
    each order of a sum of n terms is within (n - 1)u of Σ|x| (Higham's bound, u = eps / 2),
    so two within n·eps·Σ|x|; a mean is that over n, plus its own rounding; a product within
    2n·u relative (and a few subnormal steps where it underflows); a standard deviation within
    2n·u relative plus the two means' difference (≤ eps·Σ|x|, by the triangle inequality). A
    fixed rtol failed on a cancelling draw (result -0.158, Σ|x| ≈ 160: the orders differ by
    2.4e-5 relative)."""
    wide = x.astype(np.float64)
    info = np.finfo(x.dtype if x.dtype.kind == "f" else np.float64)
    n, eps, total = max(wide.size, 1), float(info.eps), float(np.abs(wide).sum())
    if name == "prod":
        return 2 * n * eps, n * float(info.smallest_subnormal)
    if name == "std":
        return 2 * n * eps, 2 * eps * total
    return 0.0, (2 * eps * total if name == "mean" else n * eps * total)


@settings(max_examples=120, deadline=None)
@given(
    data=st.data(),
    dtype=st.sampled_from((np.float32, np.float64, np.int32)),
    name=st.sampled_from(HOST_UNARY + HOST_BINARY),
)
def test_host_operations_never_modify_their_inputs(
    data: st.DataObject, dtype: Any, name: str
) -> None:
    first, second = buffers(data, dtype, dtype)
    before = checksum(first), checksum(second)
    x = data.draw(views(first))
    args = (x,) if name in HOST_UNARY else (x, data.draw(views(second, like=x.shape)))
    try:
        got = getattr(ft, name)(*args)
    except (TypeError, ValueError, IndexError) as e:  # a dtype, rank or axis it refuses
        event(f"{name} refused: {type(e).__name__}")
    else:
        event("ran")
        # the result on views is the result on dense copies of them (bit for bit but for the
        # summation order of float reductions)
        want = getattr(ft, name)(*(dense(a) for a in args))
        if name in FLOAT_REDUCTIONS and np.asarray(want).dtype.kind == "f":  # std of ints too
            rtol, atol = order_tolerance(name, np.asarray(dense(x)))
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)
        elif name in LAYOUT_ROUNDED and np.asarray(want).dtype.kind == "f":
            np.testing.assert_array_max_ulp(np.asarray(got), np.asarray(want), maxulp=2)
        else:
            same_bits(got, want)
    assert (checksum(first), checksum(second)) == before


# -- failing in-place operations --------------------------------------------------------------


def _target() -> tuple[np.ndarray, ft.FuelTensor]:
    buffer = np.arange(1.0, 13.0, dtype=np.float32)
    return buffer, ft.reshape(ft.asarray(buffer), (3, 4))


@pytest.mark.parametrize(
    ("make", "where", "error", "says"),
    [
        (
            lambda t: (t, ft.asarray(np.ones(4, np.float64))),
            None,
            TypeError,
            ["would store a float64 result in a float32 tensor", "use the out-of-place form"],
        ),
        (
            lambda t: (t, ft.asarray(np.ones((2, 3, 4), np.float32))),
            None,
            ValueError,
            [
                "the result has shape (2, 3, 4), the target (3, 4)",
                "must broadcast to the target's shape",
            ],
        ),
        (
            lambda t: (ft.as_strided(t, (3, 4), (0, 1)), t),
            None,
            ValueError,
            ["stride-0 (broadcast) view", "copy the target first"],
        ),
        (
            lambda t: (ft.broadcast_to(t[0], (3, 4)), t),
            None,
            ValueError,
            ["assignment destination is read-only", "copy the target first"],
        ),
        (
            lambda t: (ft.as_strided(t, (3, 3), (1, 1)), ft.ones((3, 3), dtype=ft.float32)),
            None,
            ValueError,
            ["elements may overlap", "copy the target first"],
        ),
        (
            lambda t: (t[:, :2], ft.asarray(np.ones(3, np.float32))),
            None,
            ValueError,
            ["cannot be broadcast"],
        ),
        (
            lambda t: (t, t),
            "reference-pow",
            ft.NoKernelError,
            [
                "no kernel contract admits pow(float32[3, 4], float32[3, 4])",
                "use_backend('reference')",
                "candidates:",
            ],
        ),
    ],
    ids=["dtype", "shape", "stride0", "read-only", "overlap", "no-broadcast", "nokernel"],
)
def test_a_failing_inplace_operation_leaves_the_target_as_it_was(
    make: Callable[[ft.FuelTensor], tuple[ft.FuelTensor, Any]],
    where: str | None,
    error: type[Exception],
    says: list[str],
) -> None:
    buffer, t = _target()
    target, other = make(t)
    before = checksum(buffer)
    op = "pow" if where == "reference-pow" else "add"
    name = where.split("-")[0] if where else None
    with backend(name), pytest.raises(error) as info:
        INPLACE[op](target, other)
    assert checksum(buffer) == before
    assert all(s in str(info.value) for s in says), str(info.value)


def test_nokernel_under_a_restriction_leaves_the_target() -> None:
    buffer = np.linspace(0.5, 2, 12, dtype=np.float32)
    t = ft.asarray(buffer)
    before = checksum(buffer)
    with ft.use_backend("reference"), pytest.raises(ft.NoKernelError) as info:
        t **= t
    assert checksum(buffer) == before
    message = str(info.value)
    assert "no kernel contract admits pow(float32[12], float32[12])" in message
    assert re.search(r"pow_f32: provider fuel-cpu-backend is excluded by use_backend", message)


# -- kernels that break their contracts -------------------------------------------------------

PROVIDER = "reliability-broken-backend"


def _wrong_dtype(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    return np.zeros(out.shape, np.float64)


def _wrong_shape(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    return np.zeros((*out.shape, 2), out.dtype)


def _strided(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    return np.zeros((out.shape[0], out.shape[1] * 2), out.dtype)[:, ::2]


def _aliasing(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    return a


def _aliasing_view(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> np.ndarray:
    return b.reshape(out.shape)


def _not_an_array(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> object:
    return a.tolist()


def _raises(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    out[...] = 7
    raise RuntimeError("kernel failed half way")


BROKEN: dict[str, tuple[Callable[..., object], type[Exception], list[str]]] = {
    "wrong_dtype_f32": (
        _wrong_dtype,
        ft.ContractViolation,
        ["dtype float64, its dtype_rule gives float32"],
    ),
    "wrong_shape_f32": (
        _wrong_shape,
        ft.ContractViolation,
        ["shape (3, 4, 2), its shape_rule gives (3, 4)"],
    ),
    "strided_f32": (
        _strided,
        ft.ContractViolation,
        ["a non-contiguous buffer, its layout_guarantee is contiguous"],
    ),
    "aliasing_f32": (
        _aliasing,
        ft.ContractViolation,
        ["a buffer that aliases an input, its aliasing is none"],
    ),
    "aliasing_view_f32": (
        _aliasing_view,
        ft.ContractViolation,
        ["a buffer that aliases an input, its aliasing is none"],
    ),
    "not_an_array_f32": (
        _not_an_array,
        ft.ContractViolation,
        ["returned a list", "return None, or return an ndarray"],
    ),
    "raises_f32": (_raises, RuntimeError, ["kernel failed half way"]),
}


@pytest.fixture
def broken_registry(
    contract_text: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], AbstractContextManager[ft.Registry]]:
    """`use(kernel)`: dispatch through a registry holding only that broken kernel, loaded from
    a test document and linked through `register_provider` (undone after the test)."""
    monkeypatch.setattr(registry_module, "_links", dict(registry_module._links))
    ft.register_provider(PROVIDER, {f"tests::{k}": fn for k, (fn, _, _) in BROKEN.items()})

    def use(kernel: str) -> AbstractContextManager[ft.Registry]:
        path = tmp_path / f"{kernel}.md"
        path.write_text(contract_text(provider=PROVIDER, kernel=kernel), encoding="utf-8")
        return ft.use_registry(ft.Registry.from_paths([path]))

    return use


@pytest.mark.parametrize("kernel", sorted(BROKEN))
@pytest.mark.parametrize("inplace", [False, True], ids=["fresh", "inplace"])
def test_a_kernel_breaking_its_contract_is_caught_and_the_target_kept(
    kernel: str,
    inplace: bool,
    broken_registry: Callable[[str], AbstractContextManager[ft.Registry]],
) -> None:
    _fn, error, says = BROKEN[kernel]
    buffer, x = _target()
    other = np.full(12, 0.5, np.float32)
    y = ft.reshape(ft.asarray(other), (3, 4))
    before = checksum(buffer), checksum(other)
    with broken_registry(kernel) as reg, ft.trace() as plans, pytest.raises(error) as info:
        if inplace:
            x += y
        else:
            x + y
    assert [p.kernel.name for p in plans if p.kernel] == []  # nothing that failed is recorded
    assert (checksum(buffer), checksum(other)) == before
    message = str(info.value)
    assert all(s in message for s in says), message
    if error is ft.ContractViolation:
        source = reg[kernel].source
        assert f"kernel {kernel} ({source.path}:{source.line})" in message


def test_the_broken_kernels_really_run_under_the_test_registry(
    broken_registry: Callable[[str], AbstractContextManager[ft.Registry]],
) -> None:
    """The plan that fails is the broken kernel's (not a host fallback that would hide it)."""
    _, x = _target()
    with broken_registry("wrong_dtype_f32"):
        plan = ft.explain(ft.add, x, x)
    assert plan.kernel is not None and plan.kernel.name == "wrong_dtype_f32"
    assert plan.kernel.provider.name == PROVIDER


@pytest.fixture(autouse=True)
def no_leaked_policy() -> Iterator[None]:
    """Every test leaves dispatch on the bundled registry."""
    yield
    kernel = ft.explain(ft.add, ft.asarray([1.0]), ft.asarray([1.0])).kernel
    assert kernel is not None and ft.registry()[kernel.name] is kernel
