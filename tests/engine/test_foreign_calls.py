"""A normal call of a provider's kernel (issue 35, items 1 and 5): nothing fueltensor shares
reaches it (cached scalars, read-only memory, the scratch buffer, kept blocks), its inputs
cannot be set writable, and a write just past `out` is caught and named."""

from __future__ import annotations

import ctypes
import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from _cheats import build, register

import fueltensor as ft
from fueltensor.engine import dispatch, execute, foreign
from fueltensor.registry import bundled_contracts_dir

PROVIDER = "foreign-calls"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/hostile_kernels.c, built."""
    return build("hostile_kernels.c", tmp_path_factory.mktemp("hostile") / "libhostile.so")


@pytest.fixture
def only(hostile: Path, tmp_path: Path) -> Callable[[str], ft.Registry]:
    """The registry of the bundled contracts and one hostile kernel, by its name: dispatch
    under `use_backend(PROVIDER)` can pick nothing else."""

    def make(name: str) -> ft.Registry:
        doc = tmp_path / f"{name}.md"
        register(hostile, PROVIDER, [(name, "AddElementwise", "F32", 0)], doc)
        return ft.Registry.from_paths([bundled_contracts_dir(), doc])

    return make


def test_a_kernel_writing_its_input_leaves_the_cached_scalar_alone(
    only: Callable[[str], ft.Registry],
) -> None:
    t = ft.asarray(1.0, dtype=ft.float32)
    assert np.asarray(ft.zeros(3, dtype=ft.float32) + 2.5).tolist() == [2.5] * 3  # cached
    with ft.use_registry(only("scribble_f32")), ft.use_backend(PROVIDER):
        assert float(2.5 + t) == 12345.0
        assert float(t + 2.5) == 12345.0
        assert float(t + t) == 12345.0
    with ft.use_backend("cpu"):
        assert np.asarray(ft.zeros(3, dtype=ft.float32) + 2.5).tolist() == [2.5] * 3
    assert np.asarray(ft.zeros(3, dtype=ft.float32) + 2.5).tolist() == [2.5] * 3
    assert float(2.5 + ft.zeros((), dtype=ft.float32)) == 2.5


def test_read_only_memory_reaches_a_foreign_kernel_as_a_copy(
    only: Callable[[str], ft.Registry],
) -> None:
    frozen = bytes(np.arange(8, dtype=np.float32).tobytes())  # immutable; over 16 bytes
    t = ft.asarray(np.frombuffer(frozen, np.float32))
    source = ft.asarray([7.0], dtype=ft.float32)
    view = ft.broadcast_to(source, (1,))  # read-only, over source's writable memory
    with ft.use_registry(only("scribble_f32")), ft.use_backend(PROVIDER):
        for _ in range(3):  # the first call plans (the Python path), the next take the fast path
            assert np.asarray(t + t).tolist() == [12345.0] * 8
            assert np.asarray(view + view).tolist() == [12345.0]
    assert np.frombuffer(frozen, np.float32).tolist() == list(range(8))
    assert np.asarray(source).tolist() == [7.0]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("overrun_f32", r"wrote outside `out` \(12 bytes\): bytes 0\.\.63 past its end"),
        ("underrun_f32", r"wrote outside `out` \(12 bytes\): 8 bytes before its start"),
    ],
)
def test_a_write_just_outside_out_is_named(
    only: Callable[[str], ft.Registry], name: str, says: str
) -> None:
    x = ft.asarray([1.0, 2.0, 3.0], dtype=ft.float32)
    reg = only(name)
    source = reg[name].source
    with ft.use_registry(reg), ft.use_backend(PROVIDER):
        for _ in range(200):  # no heap damage accumulates: the zones are fueltensor's own
            with pytest.raises(ft.ContractViolation, match=says) as info:
                x + x
    assert f"kernel {name} ({source.path}:{source.line})" in str(info.value)
    assert np.asarray(x + x).tolist() == [2.0, 4.0, 6.0]


def _python_provider(tmp_path: Path, kernel: object) -> ft.Registry:
    """A provider `py-foreign` whose one F32 add kernel is the Python function `kernel`."""
    from _cheats import contract

    doc = tmp_path / "py.md"
    doc.write_text(
        "---\nfkc_version: 1\nprovider: {name: py-foreign, backend: Cpu, kernel_source: "
        '"py-foreign", link_registry: t, revision_base: "t:1"}\n---\n# py-foreign\n'
        + contract("py_add_f32", "AddElementwise", "F32", 0, "py-foreign")
    )
    ft.register_provider("py-foreign", {"py-foreign::py_add_f32": kernel})  # type: ignore[dict-item]
    return ft.Registry.from_paths([doc])


def _unlock(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    lhs.flags.writeable = True
    lhs[...] = -1.0
    np.add(lhs, rhs, out=out)


def _copy_over(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    np.copyto(lhs, rhs)
    np.add(lhs, rhs, out=out)


def _through_base(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
    base = lhs.base if isinstance(lhs.base, np.ndarray) else lhs
    base.flags.writeable = True
    base[...] = -1.0
    np.add(lhs, rhs, out=out)


@pytest.mark.parametrize("kernel", [_unlock, _copy_over, _through_base])
def test_a_python_kernel_cannot_make_its_inputs_writable(tmp_path: Path, kernel: object) -> None:
    x = ft.asarray([1.0, 2.0], dtype=ft.float32)
    y = ft.asarray([3.0, 4.0], dtype=ft.float32)
    reg = _python_provider(tmp_path, kernel)
    with ft.use_registry(reg), pytest.raises(ft.ContractViolation, match="wrote into one of"):
        x + y
    assert np.asarray(x).tolist() == [1.0, 2.0]


def test_foreign_kernels_get_memory_of_their_own(tmp_path: Path) -> None:
    seen: list[tuple[bool, bool]] = []
    n = 512 * 1024  # 2 MiB of f32 in, the sizes the scratch buffer and kept blocks serve

    def watch(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        scratch = execute._scratch.buffer
        shared = scratch is not None and any(np.shares_memory(x, scratch) for x in (lhs, rhs))
        owners = [type(b).__name__ for b in _bases(out)]
        seen.append((shared, "Block" in owners))
        np.add(lhs, rhs, out=out)

    strided = ft.reshape(ft.arange(2 * n, dtype=ft.float32), (n, 2))[:, 0]
    strided + strided  # the built-in kernels' Contiguize takes the scratch buffer
    assert execute._scratch.buffer is not None
    with ft.use_registry(_python_provider(tmp_path, watch)):
        got = strided + strided
    assert np.array_equal(np.asarray(got), 2 * np.asarray(strided))
    assert seen == [(False, False)]


def _bases(array: np.ndarray) -> list[object]:
    """`array.base`, its base, and so on."""
    chain: list[object] = []
    base = array.base
    while base is not None:
        chain.append(base)
        base = getattr(base, "base", None)
    return chain


def test_an_array_a_foreign_kernel_returns_is_copied(tmp_path: Path) -> None:
    kept = np.zeros(2, np.float32)

    def hoard(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> np.ndarray:
        np.add(lhs, rhs, out=kept)
        return kept

    x = ft.asarray([1.0, 2.0], dtype=ft.float32)
    with ft.use_registry(_python_provider(tmp_path, hoard)):
        got = x + x
    kept[...] = -1.0  # what the kernel does with its array later
    assert np.asarray(got).tolist() == [2.0, 4.0]


def test_the_fast_path_guards_as_many_bytes_as_the_python_path() -> None:
    fast = pytest.importorskip("fueltensor.ext._fast")
    assert fast.GUARD_BYTES == foreign.GUARD_BYTES


def test_the_fast_path_hands_a_foreign_kernel_nothing_shared(
    only: Callable[[str], ft.Registry],
) -> None:
    # The cached plan's FOREIGN entry (`_fast.foreign_entry`) serves these calls: read-only
    # memory over 16 bytes reaches the kernel as a copy, its `out` is never a kept block (which
    # later outputs reuse) and a write past it is named, as on the Python path.
    if dispatch._FAST_MODULE is None:
        pytest.skip("the compiled fast path is not built here")
    frozen = bytes(np.arange(8, dtype=np.float32).tobytes())
    t = ft.asarray(np.frombuffer(frozen, np.float32))
    large = ft.asarray(np.ones(1 << 17, np.float32))  # 512 KiB: kept blocks serve this size
    fast = dispatch._FAST
    with ft.use_registry(only("scribble_f32")), ft.use_backend(PROVIDER):
        t + t  # plans the call
        got = fast("add", t, t)
        assert got is not None and np.asarray(got).tolist() == [12345.0] * 8
        large + large
        made = fast("add", large, large)
        assert made is not None
        owners = [type(b).__name__ for b in _bases(made._array)]
        assert "Block" not in owners, owners
    assert np.frombuffer(frozen, np.float32).tolist() == list(range(8))
    assert float(large[0]) == 12345.0  # the caller's writable tensor: a normal call cannot stop it
    x = ft.asarray([1.0, 2.0, 3.0], dtype=ft.float32)
    reg = only("overrun_f32")
    source = reg["overrun_f32"].source
    with ft.use_registry(reg), ft.use_backend(PROVIDER):
        with pytest.raises(ft.ContractViolation):
            x + x  # plans the call
        for _ in range(50):
            with pytest.raises(ft.ContractViolation, match=r"bytes 0\.\.63 past its end") as info:
                fast("add", x, x)
    assert f"kernel overrun_f32 ({source.path}:{source.line})" in str(info.value)


@pytest.fixture(scope="module")
def x87_rounds_up(tmp_path_factory: pytest.TempPathFactory) -> Callable[[], int]:
    """tests/compiled_probes.c's probe_long_double_rounds_up: 1 when the x87 unit rounds
    1 + 2**-70 up (its control word's rounding is upward), 0 under round to nearest."""
    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the probe reads the x87 unit's rounding")
    library = ctypes.CDLL(str(build("compiled_probes.c", tmp_path_factory.mktemp("p") / "p.so")))
    probe: Callable[[], int] = library.probe_long_double_rounds_up
    return probe


def test_a_kernel_setting_the_rounding_mode_leaves_the_callers_alone(
    only: Callable[[str], ft.Registry], x87_rounds_up: Callable[[], int]
) -> None:
    libm = ctypes.CDLL(None)
    one, tiny = 1.0, 2.0**-60
    assert x87_rounds_up() == 0 and one + tiny == one
    try:  # the probes see an upward rounding mode: the x87 control word, and MXCSR
        libm.fesetround(0x800)  # FE_UPWARD
        assert x87_rounds_up() == 1 and one + tiny > one
    finally:
        libm.fesetround(0)  # FE_TONEAREST
    x = ft.asarray([1.0, 2.0, 3.0], dtype=ft.float32)
    with ft.use_registry(only("upward_f32")), ft.use_backend(PROVIDER):
        for _ in range(3):  # the first call plans (byte_call), the next take the fast path
            assert np.asarray(x + x).tolist() == [2.0, 4.0, 6.0]
            assert x87_rounds_up() == 0, "the kernel's x87 rounding mode reached the caller"
            assert one + tiny == one, "the kernel's MXCSR rounding mode reached the caller"
