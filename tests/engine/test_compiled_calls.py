"""A compiled provider's kernel is called from C, never through ctypes: the fast path runs a
cached plan's FOREIGN entry (`_fast.foreign_entry`), the Python path calls `_fast.byte_call`.

Both give the bits a direct ctypes call of the same C function gives on NumPy's dense copies of
the operands (dense, 0-d, empty, strided, offset, transposed, broadcast, cast, Python scalars,
in place); a nonzero status raises the same error on both; a large call lets another Python
thread run while the kernel waits for it; an input of at most 16 bytes (a cached scalar)
reaches the kernel as a private copy; the caller's floating-point flags are kept."""

from __future__ import annotations

import ctypes
import operator
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cbuild import build_c
from _extras import ROOT, TESTS
from _fpstatus import ALL, FE, flags_after

import fueltensor as ft
from fueltensor.core.layout import Layout
from fueltensor.engine import dispatch
from fueltensor.engine.steps import StepKind
from fueltensor.fkc import load_document
from fueltensor.kernels import compiled
from fueltensor.kernels._chassis import NATIVE
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.registry import bundled_contracts_dir

pytestmark = pytest.mark.skipif(
    dispatch._FAST_MODULE is None, reason="the compiled fast path is not built here"
)

EXAMPLE = ROOT / "examples" / "c_provider"
DOCUMENT = EXAMPLE / "c-kernels.md"
GIL_FREE_FROM = NATIVE.GIL_FREE_FROM if NATIVE is not None else 1
BYTE_KERNEL = ctypes.CFUNCTYPE(ctypes.c_int32, *(ctypes.c_void_p, ctypes.c_size_t) * 3)
"""The FKC byte-kernel C ABI, as the reference's ctypes call spells it."""


@dataclass(frozen=True)
class Example:
    """The C example provider, built and registered: its name, registry, library (its path and
    as ctypes opened it) and kernels by symbol."""

    name: str
    registry: ft.Registry
    path: Path
    library: ctypes.CDLL
    kernels: Mapping[str, CompiledKernel]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Example:
    """examples/c_provider built with cc, loaded with load_library and registered."""
    library = build_c(EXAMPLE / "kernels.c", tmp_path_factory.mktemp("c") / "libc.so")
    provider, contracts = load_document(DOCUMENT)
    table = {c.entry_point: c.entry_point.rsplit("::", 1)[-1] for c in contracts}
    linked = ft.load_library(library, table)
    ft.register_provider(provider.name, linked)
    registry = ft.Registry.from_paths([bundled_contracts_dir(), DOCUMENT])
    kernels = {table[ep]: k for ep, k in linked.items() if isinstance(k, CompiledKernel)}
    return Example(provider.name, registry, library, ctypes.CDLL(str(library)), kernels)


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/compiled_probes.c (kernels that misbehave on purpose), built."""
    return build_c(TESTS / "compiled_probes.c", tmp_path_factory.mktemp("probes") / "probes.so")


def reference(library: ctypes.CDLL, symbol: str, lhs: Any, rhs: Any, dtype: Any) -> np.ndarray:
    """The kernel called directly through ctypes on NumPy's dense copies of the operands in
    `dtype`, broadcast to the result's shape (the contracts' same_as): the reference bits."""
    shape = np.broadcast_shapes(np.shape(lhs), np.shape(rhs))
    a, b = (np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtype), shape)) for v in (lhs, rhs))
    out = np.empty(shape, dtype)
    kernel = BYTE_KERNEL((symbol, library))
    status = kernel(a.ctypes.data, a.nbytes, b.ctypes.data, b.nbytes, out.ctypes.data, out.nbytes)
    assert status == 0
    return out


def random_bits(dtype: ft.DType, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Random bit patterns of `dtype` (NaN payloads of both signs, infinities, subnormals)."""
    rng = np.random.default_rng(seed)
    width = np.dtype(f"u{dtype.itemsize}")
    raw = rng.integers(0, np.iinfo(width).max, size=shape, dtype=width, endpoint=True)
    return raw.view(dtype.np)


KERNELS = {
    "c_add_f32": ("add", ft.float32),
    "c_mul_f64": ("multiply", ft.float64),
    "c_sub_bf16": ("subtract", ft.bfloat16),
    "c_div_bf16": ("divide", ft.bfloat16),
}
"""The example's kernels: the operation each serves and its dtype (c-kernels.md)."""


def _cases(dt: ft.DType) -> Iterator[tuple[str, Any, Any, tuple[tuple[StepKind, ...], ...]]]:
    """(label, lhs, rhs, each operand's preparation in the plan) of one dtype: tensors, views,
    Python scalars and (for F32) an F16 operand the plan casts."""
    base = ft.asarray(random_bits(dt, (32,), 1))
    grid = ft.reshape(ft.asarray(random_bits(dt, (48,), 2)), (6, 8))
    x, y = (ft.asarray(random_bits(dt, (16,), 3 + i)) for i in range(2))
    s, t = (ft.asarray(random_bits(dt, (), 5 + i)) for i in range(2))
    big, large = (ft.asarray(random_bits(dt, (GIL_FREE_FROM + 3,), 7 + i)) for i in range(2))
    yield "dense", x, y, ((), ())
    yield "0-d", s, t, ((), ())
    yield "0-d and a Python float", s, 2.5, ((), ())
    yield "a Python float and a vector", -0.0, y, ((B, C), ())
    yield "empty", base[:0], base[:0], ((), ())
    yield "empty broadcast", ft.reshape(base[:0], (0, 1)), grid[:1], ((B, C), (B,))
    yield "strided", base[::2], base[1::2], ((C,), (C,))
    yield "offset", x, base[16:], ((), (C,))
    yield "transposed", grid.T, grid.T[::-1], ((C,), (C,))
    yield "broadcast both", grid[:, :1], grid[:1, :], ((B, C), (B, C))
    yield "large", big, large, ((), ())
    if dt is ft.float32:
        yield "cast", ft.asarray(random_bits(ft.float16, (16,), 11)), y, ((CAST,), ())


B, C, CAST = StepKind.BROADCAST_TO, StepKind.CONTIGUIZE, StepKind.CAST
OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "multiply": operator.mul,
    "subtract": operator.sub,
    "divide": operator.truediv,
}


def _numpy(v: Any) -> Any:
    """A tensor's elements as NumPy holds them; a Python scalar as it is."""
    return np.asarray(v) if isinstance(v, ft.FuelTensor) else v


def _bits(t: ft.FuelTensor) -> tuple[tuple[int, ...], bytes]:
    """A result's shape and bytes."""
    return t.shape, np.asarray(t).tobytes()


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_both_paths_give_the_bits_of_a_direct_ctypes_call(example: Example, kernel: str) -> None:
    op, dt = KERNELS[kernel]
    for label, x, y, prep in _cases(dt):
        want = reference(example.library, kernel, _numpy(x), _numpy(y), dt.np)
        with ft.use_registry(example.registry), ft.use_backend(example.name):
            plan = ft.explain(getattr(ft, op), x, y)
            with ft.trace() as traced:  # the Python path: CompiledKernel.__call__, byte_call
                slow = OPERATORS[op](x, y)
            fast = dispatch._FAST(op, x, y)  # the plan is cached: the fast path's entry runs
        assert plan.kernel is not None and plan.kernel.name == kernel, label
        assert [tuple(s.kind for s in p) for p in plan.prep] == list(prep), label
        assert [(p.kernel, p.steps) for p in traced] == [(plan.kernel, plan.steps)], label
        assert fast is not None, f"{label}: the fast path did not serve the call"
        assert _bits(slow) == _bits(fast) == (want.shape, want.tobytes()), label


def test_a_copy_over_a_mib_leaves_the_call_to_the_python_path(example: Example) -> None:
    # The fast path makes dense copies up to 1 MiB; a larger broadcast takes the Python path,
    # which reuses a per-thread buffer: the same bits either way.
    wide = (1 << 20) // 4 // 512 + 1
    x = ft.asarray(random_bits(ft.float32, (wide, 1), 12))
    y = ft.asarray(random_bits(ft.float32, (1, 512), 13))
    with ft.use_registry(example.registry), ft.use_backend(example.name):
        got = x + y
        assert dispatch._FAST("add", x, y) is None
    want = reference(example.library, "c_add_f32", np.asarray(x), np.asarray(y), np.float32)
    assert _bits(got) == (want.shape, want.tobytes())


def _target(values: np.ndarray, strided: bool) -> tuple[ft.FuelTensor, ft.FuelTensor]:
    """A tensor holding `values` (every other element of a zeroed one when `strided`), and the
    tensor it views."""
    if not strided:
        whole = ft.asarray(values.copy())
        return whole, whole
    spread = np.zeros(2 * values.size, values.dtype)
    spread[::2] = values
    whole = ft.asarray(spread)
    return whole[::2], whole


@pytest.mark.parametrize("strided", [False, True])
def test_in_place_calls_write_the_bits_of_a_fresh_output(example: Example, strided: bool) -> None:
    for kernel, (op, dt) in KERNELS.items():
        x, y = (random_bits(dt, (16,), 20 + i) for i in range(2))
        want = reference(example.library, kernel, x, y, dt.np)
        other = ft.asarray(y)
        (slow, slow_whole), (fast, fast_whole) = _target(x, strided), _target(x, strided)
        with ft.use_registry(example.registry), ft.use_backend(example.name):
            with ft.trace():
                dispatch.binary_inplace(op, slow, other)  # the Python path (plans the call)
            assert dispatch._FAST_INPLACE(op, fast, other) is fast
        for target, whole in ((slow, slow_whole), (fast, fast_whole)):
            assert np.asarray(target).tobytes() == want.tobytes(), kernel
            if strided:  # the elements between the target's are untouched
                assert np.asarray(whole)[1::2].tobytes() == bytes(16 * dt.itemsize)


def _probe_registry(
    write: Callable[..., Path],
    contract_text: Callable[..., str],
    probes: Path,
    provider: str,
    symbol: str,
) -> ft.Registry:
    """A registry of one F32 AddElementwise contract (any rank) linked to probe `symbol`."""
    text = contract_text(provider=provider, kernel=symbol).replace("rank: 2", "rank: any")
    doc = write(text, f"{provider}.md")
    ft.register_provider(provider, ft.load_library(probes, {f"tests::{symbol}": symbol}))
    return ft.Registry.from_paths([doc])


def test_a_nonzero_status_raises_the_same_error_on_both_paths(
    example: Example, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    text = contract_text(provider="odd-bytes", kernel="c_add_f32_as_f16")
    doc = write(text.replace("dtypes: [F32]", "dtypes: [F16]").replace("rank: 2", "rank: any"))
    table = {"tests::c_add_f32_as_f16": "c_add_f32"}
    ft.register_provider("odd-bytes", ft.load_library(example.path, table))
    x = ft.asarray([1.0, 2.0, 3.0], dtype=ft.float16)  # 6 bytes: not whole f32 elements
    target = ft.asarray([4.0, 5.0, 6.0], dtype=ft.float16)
    errors = []
    with ft.use_registry(ft.Registry.from_paths([doc])), ft.use_backend("odd-bytes"):
        for call in (
            lambda: x + x,  # the Python path (plans the call)
            lambda: dispatch._FAST("add", x, x),
            lambda: dispatch._FAST_INPLACE("add", target, x),
        ):
            with pytest.raises(ft.KernelStatusError) as info:
                call()
            errors.append(info.value)
    line = doc.read_text().splitlines().index("kernel: c_add_f32_as_f16") + 1
    said = {str(e) for e in errors}
    assert len(said) == 1, said
    assert {(e.status, e.symbol) for e in errors} == {(1, "c_add_f32")}
    assert said.pop() == (
        f"kernel c_add_f32_as_f16 ({doc}:{line}) failed with status 1: c_add_f32 "
        f"({example.path}) returned status 1 for byte lengths lhs 6, rhs 6, out 6; no output "
        "was produced"
    )
    assert np.asarray(target).tolist() == [4.0, 5.0, 6.0]


def test_a_large_call_lets_another_python_thread_run(
    probes: Path, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    # probe_wait returns 0 once probe_signal is called while it waits, 2 after about 30 s: a
    # Python thread signals it (its ctypes call needs the GIL) only if the call released it.
    registry = _probe_registry(write, contract_text, probes, "gil-probe", "probe_wait")
    kernel = ft.load_library(probes, {"x::wait": "probe_wait"})["x::wait"]
    library = kernel.loaded.handle  # type: ignore[attr-defined]  # the instance it runs in
    x = ft.asarray(np.ones((1, GIL_FREE_FROM), np.float32))

    def signal(done: threading.Event) -> None:
        while not done.is_set():
            if library.probe_waiting():
                library.probe_signal()
                return
            done.wait(0.001)

    def while_signalled(call: Callable[[], object]) -> object:
        done = threading.Event()
        thread = threading.Thread(target=signal, args=(done,))
        thread.start()
        try:
            return call()  # KernelStatusError (status 2) if the thread never ran
        finally:
            done.set()
            thread.join()

    with ft.use_registry(registry), ft.use_backend("gil-probe"):
        with ft.trace():
            while_signalled(lambda: x + x)  # the Python path: byte_call
        assert while_signalled(lambda: dispatch._FAST("add", x, x)) is not None
    array = np.asarray(x)
    while_signalled(lambda: kernel(array, array, out=np.empty_like(array)))


def test_a_kernel_that_writes_its_input_never_changes_a_cached_scalar(
    probes: Path, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    # probe_vandal_f32 flips the sign of its lhs's first element. An input of at most 16 bytes
    # (a 0-d tensor: the cached 2.0 here, or the user's own) reaches it as a private copy. The
    # state is checked after every call: a second flip would undo the first.
    registry = _probe_registry(write, contract_text, probes, "vandal-scalar", "probe_vandal_f32")
    x = ft.asarray(np.float32(1.5))

    def unchanged() -> bool:
        cached = np.asarray(dispatch._FAST_MODULE.scalar(2.0, x)).tobytes()
        want = (np.float32(2.0).tobytes(), np.float32(1.5).tobytes())
        return (cached, np.asarray(x).tobytes()) == want

    assert unchanged()
    with ft.use_registry(registry), ft.use_backend("vandal-scalar"):
        with ft.trace():
            2.0 + x  # the Python path (plans the call): the cached 2.0 is the lhs
        assert unchanged()
        assert dispatch._FAST("add", 2.0, x) is not None
        assert unchanged()
        with ft.trace():
            x + x
        assert unchanged()
        assert dispatch._FAST("add", x, x) is not None
        assert unchanged()


def test_in_place_never_hands_the_kernel_its_own_input_as_out(
    probes: Path, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    # probe_add_zero_first zeroes `out` before it reads its inputs: `x += y` written straight
    # into x would give y.
    registry = _probe_registry(write, contract_text, probes, "zero-first", "probe_add_zero_first")
    x, y = np.arange(1, 17, dtype=np.float32), np.full(16, 0.5, np.float32)
    target, other = ft.asarray(x.copy()), ft.asarray(y)
    with ft.use_registry(registry), ft.use_backend("zero-first"):
        ft.add(target, other)  # plans the call
        assert dispatch._FAST_INPLACE("add", target, other) is target
    assert np.asarray(target).tolist() == (x + y).tolist()  # exact: small binary fractions


@pytest.mark.skipif(not FE, reason="the FE_* bits of this machine are not listed")
def test_the_callers_floating_point_flags_are_kept(example: Example) -> None:
    x = ft.asarray([1e308, 1e-308, 0.0, 3.0], dtype=ft.float64)  # overflow, underflow, inexact
    array = np.asarray(x)
    raised = flags_after(
        0, lambda: reference(example.library, "c_mul_f64", array, array, np.float64)
    )
    assert raised & FE["overflow"] and raised & FE["underflow"]  # the kernel raises them
    kernel = example.kernels["c_mul_f64"]
    with ft.use_registry(example.registry), ft.use_backend(example.name):
        x * x  # plans the call
        for before in (0, ALL, FE["inexact"]):
            assert flags_after(before, lambda: dispatch._FAST("multiply", x, x)) == before
            call = partial(kernel, array, array, out=np.empty_like(array))
            assert flags_after(before, call) == before


def test_byte_call_refuses_what_it_cannot_hand_to_c(example: Example) -> None:
    fast = dispatch._FAST_MODULE
    address = example.kernels["c_add_f32"].address
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(4, np.float32)
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    refused: list[tuple[tuple[Any, ...], type[Exception], str]] = [
        ((0, a[:4], a[4:], out), TypeError, "nonzero address"),
        (("1", a[:4], a[4:], out), TypeError, "nonzero address"),
        ((address, a[::2], a[4:], out), ValueError, "lhs must be a C-contiguous ndarray"),
        ((address, a[:4], [1.0] * 4, out), ValueError, "rhs must be a C-contiguous ndarray"),
        ((address, a[:4], a[4:], np.zeros(4, object)), ValueError, "out must be .* plain bytes"),
        ((address, a[:4], a[4:], frozen), ValueError, "out must be writable"),
        ((address, a[:4], a[4:]), TypeError, "takes 4 arguments"),
    ]
    for args, error, words in refused:
        with pytest.raises(error, match=words):
            fast.byte_call(*args)
    assert not out.any()
    assert fast.byte_call(address, a[:4], a[4:], out) == 0
    assert out.tolist() == [4.0, 6.0, 8.0, 10.0]


def test_foreign_entry_refuses_what_it_does_not_run(example: Example) -> None:
    fast = dispatch._FAST_MODULE
    address = example.kernels["c_add_f32"].address
    dt = ft.float32
    out = (dt, Layout.dense((4,)), dt.np, (4,))

    def made(address: Any, failure: Any, modes: Any, needs: Any, overrun: Any = print) -> object:
        return fast.foreign_entry(
            address, failure, overrun, *out, modes, (0, 0), needs, (None, None)
        )

    plain = (fast.AS_IS, fast.DENSIFY)
    refused: list[tuple[tuple[Any, ...], str]] = [
        ((0, print, plain, (4, 4)), "nonzero address"),
        ((address, None, plain, (4, 4)), "failure and overrun must be callable"),
        ((address, print, plain, (4, 4), None), "failure and overrun must be callable"),
        ((address, print, (fast.REPEAT, fast.AS_IS), (1, 4)), "AS_IS or DENSIFY"),
        ((address, print, plain, (-1, 4)), "at least 0"),
    ]
    for args, words in refused:
        with pytest.raises(TypeError, match=words):
            made(*args)
    assert type(made(address, print, plain, (4, 4))).__name__ == "Entry"


def test_a_subclass_of_compiled_kernel_is_called_through_its_own_call(
    example: Example, write: Callable[..., Path]
) -> None:
    # The fast path calls a CompiledKernel's function itself; a subclass may call differently,
    # so its every call goes through its __call__.
    calls = []

    class Counted(CompiledKernel):
        def __call__(self, lhs: Any, rhs: Any, *, out: Any) -> None:
            calls.append(self.symbol)
            super().__call__(lhs, rhs, out=out)

    doc = write(DOCUMENT.read_text().replace(example.name, "counted-c"), "counted.md")
    _, contracts = load_document(doc)
    table = {
        c.entry_point: Counted(k._fn, k.loaded, k.symbol)
        for c in contracts
        for k in [example.kernels[c.entry_point.rsplit("::", 1)[-1]]]
    }
    ft.register_provider("counted-c", table)
    x = ft.asarray(np.arange(4, dtype=np.float32))
    with ft.use_registry(ft.Registry.from_paths([doc])), ft.use_backend("counted-c"):
        x + x
        assert dispatch._FAST("add", x, x) is None
        x + x
    assert calls == ["c_add_f32", "c_add_f32"]


def test_a_layout_the_kernel_refuses_is_refused_on_the_fast_path_too(
    example: Example, write: Callable[..., Path], contract_text: Callable[..., str]
) -> None:
    # A contract allowing stride-0 operands links a kernel that takes dense buffers only: the
    # plan broadcasts x's one row without a copy, which the kernel refuses on every call (the
    # fast path never reads a broadcast view as the dense elements of its storage).
    text = contract_text(provider="lax", kernel="c_add_f32_lax").replace("rank: 2", "rank: any")
    for flag in ("contiguous: required", "strided: rejected", "broadcast_stride0: rejected"):
        text = text.replace(flag, flag.split(":")[0] + ": allowed", 1)  # input a's flags
    doc = write(text, "lax.md")
    ft.register_provider(
        "lax", ft.load_library(example.path, {"tests::c_add_f32_lax": "c_add_f32"})
    )
    base = ft.reshape(ft.asarray(np.arange(64, dtype=np.float32)), (4, 16))
    x, y = base[:1], ft.asarray(np.ones((4, 16), np.float32))
    with ft.use_registry(ft.Registry.from_paths([doc])), ft.use_backend("lax"):
        plan = ft.explain(ft.add, x, y)
        assert [tuple(s.kind for s in p) for p in plan.prep] == [(B,), ()]
        for _ in range(2):  # planned, then cached
            with pytest.raises(ValueError, match="lhs must be a C-contiguous ndarray"):
                x + y


def test_without_the_compiled_floor_ctypes_calls_the_kernel(
    example: Example, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A build without `_fast` (no byte_call) calls through ctypes: the same bits and errors.
    kernel = example.kernels["c_mul_f64"]
    a, b = (random_bits(ft.float64, (16,), 30 + i) for i in range(2))
    want = reference(example.library, "c_mul_f64", a, b, np.float64)
    monkeypatch.setattr(compiled, "_byte_call", None)
    out = np.empty_like(a)
    kernel(a, b, out=out)
    assert out.tobytes() == want.tobytes()
    with pytest.raises(ft.KernelStatusError, match=r"byte lengths lhs 16, rhs 8, out 16$"):
        kernel(a[:2], b[:1], out=out[:2])
