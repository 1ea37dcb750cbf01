"""Checked runs of users' compiled reductions through C ABI version 2 (docs/reductions.md, "Your
own compiled reduction"): the judge runs a `ShapedKernel` in the checked worker, x on read-only
guard-paged pages at its own strides, out and the error buffer fenced, so each hostile kernel
of tests/hostile_reductions.c (built here with cc) is named and the judging process lives on;
the example's honest sum passes the judge without ever being called in this process."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _cbuild import build_c
from _extras import ROOT, TESTS

import fueltensor as ft
from fueltensor.core.errors import KernelStatusError
from fueltensor.kernels.shaped import ShapedCompiledKernel
from fueltensor.tools import checked
from fueltensor.tools.checked import KernelFault

EXAMPLE = ROOT / "examples" / "c_reduction"
PROVIDER = "checked-shaped"
KERNELS = (
    "my_sum_f32",
    "segv_sum",
    "overrun_sum",
    "scribble_sum",
    "hang_sum",
    "exit_sum",
    "ftz_sum",
    "late_segv_sum",
    "refuse_sum",
    "error_overrun_sum",
)
"""The honest example's symbol (included whole by the hostile file), then the hostile ones."""


def _document(names: tuple[str, ...]) -> str:
    """The example's document declaring each of `names` as it declares my_sum_f32."""
    text = (EXAMPLE / "my-sum.md").read_text(encoding="utf-8")
    head, section = text.split("\n## my_sum_f32", 1)
    section = "\n## my_sum_f32" + section
    body = "".join(section.replace("my_sum_f32", name) for name in names)
    own = (head + body).replace("example-c-reduction", PROVIDER)
    return own.replace("example_c_reduction", "checked_shaped")


@pytest.fixture(scope="module")
def reg(tmp_path_factory: pytest.TempPathFactory) -> ft.Registry:
    """The hostile library, built with cc, and a document declaring each of its symbols as the
    example's document declares my_sum_f32 (`abi: 2`)."""
    into = tmp_path_factory.mktemp("checked_shaped")
    library = build_c(
        TESTS / "hostile_reductions.c", into / "libhostile_reductions.so", "-I", str(EXAMPLE)
    )
    (into / "hostile.md").write_text(_document(KERNELS))
    symbols = {f"checked_shaped::{name}": name for name in KERNELS}
    ft.register_provider(PROVIDER, ft.load_library(library, symbols))
    return ft.Registry.from_paths([into / "hostile.md"])


def _x() -> np.ndarray:
    """A strided, offset x (every other column of a larger buffer, from its second row)."""
    rng = np.random.default_rng(3)
    return rng.random((9, 14), dtype=np.float32)[1:, ::2]


def _run(reg: ft.Registry, name: str, timeout: float = checked.TIMEOUT) -> np.ndarray:
    """`name` summing _x() over axis 1, checked."""
    kernel = reg.kernel(name)
    assert isinstance(kernel, ShapedCompiledKernel) and checked.applies(kernel)
    x = _x()
    return checked.call(
        kernel, reg[name], (x,), (8,), np.dtype(np.float32), "a test", timeout, ((1,),)
    )


def _honest(reg: ft.Registry) -> None:
    """The honest sum, checked (in a fresh worker after a crash), equals its in-process call."""
    x = _x()
    want = np.empty(8, np.float32)
    reg.kernel("my_sum_f32")(x, (1,), out=want)
    assert _run(reg, "my_sum_f32").tobytes() == want.tobytes()


def test_an_honest_v2_kernel_runs_checked_to_its_own_bits(reg: ft.Registry) -> None:
    _honest(reg)


@pytest.mark.parametrize(
    ("name", "kind", "buffer", "offsets", "words"),
    [
        ("segv_sum", "crash", None, None, "died of SIGSEGV"),
        ("overrun_sum", "overrun", "out", (32, 32 + 63), "wrote past its end"),
        ("scribble_sum", "crash", "x", (0, 3), "with writable inputs it wrote into an input"),
        ("exit_sum", "exit", None, None, "ended the worker process with exit status 0"),
        ("ftz_sum", "fp environment", None, None, "MXCSR"),
        ("error_overrun_sum", "overrun", "error", (257, 264), "wrote past its end"),
    ],
)
def test_each_v2_fault_is_named_and_the_asker_lives_on(
    reg: ft.Registry,
    name: str,
    kind: str,
    buffer: str | None,
    offsets: tuple[int, int] | None,
    words: str,
) -> None:
    with pytest.raises(KernelFault) as info:
        _run(reg, name)
    f = info.value.finding
    source = reg[name].source
    assert (f.kind, f.kernel, f.source) == (kind, name, f"{source.path}:{source.line}"), str(f)
    assert f.buffer == buffer, str(f)
    if offsets is not None:
        assert f.offsets == offsets, str(f)
    assert words in str(f), str(f)
    assert "x float32[8, 7]" in f.inputs
    _honest(reg)  # a fresh worker where the last one died


def test_a_v2_hang_is_killed_at_the_time_bound(reg: ft.Registry) -> None:
    with pytest.raises(KernelFault, match=r"hang: no answer within 2 s; the worker was killed"):
        _run(reg, "hang_sum", timeout=2)
    _honest(reg)


def test_a_v2_refusal_is_a_status_error_with_the_kernels_message(reg: ft.Registry) -> None:
    with pytest.raises(KernelStatusError, match=r"status -1 \(my_sum_f32: refuse_sum: no call"):
        _run(reg, "refuse_sum")


def test_a_late_v2_crash_is_named_for_the_kernel_that_left_it(reg: ft.Registry) -> None:
    _run(reg, "late_segv_sum")
    checked.finish()  # lingers for the thread's crash
    fault = checked.late(reg.kernel("late_segv_sum"), reg["late_segv_sum"])
    assert fault is not None and "SIGSEGV" in str(fault), fault
    assert "after its call returned" in str(fault)


def test_the_judge_runs_v2_kernels_checked_and_survives_each(
    reg: ft.Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("an ABI v2 kernel was called in the judging process")

    monkeypatch.setattr(ShapedCompiledKernel, "__call__", never)
    hostile = ["segv_sum", "overrun_sum", "scribble_sum", "exit_sum", "ftz_sum"]
    report = ft.judge(reg, kernels=["my_sum_f32", *hostile], quick=True, progress=False)
    rows = {row.kernel: row for row in report.rows}
    assert not rows["my_sum_f32"].failures, rows["my_sum_f32"].failures
    words = ["crash", "overrun", "input", "exit", "fp environment"]
    for name, word in zip(hostile, words, strict=True):
        failures = " ".join(rows[name].failures)
        assert "KernelFault" in failures and word in failures, (name, failures)


def _alone(name: str, into: Path) -> ft.Registry:
    """The registry of `name`'s contract alone, so it is the default sum."""
    (into / f"{name}.md").write_text(_document((name,)))
    return ft.Registry.from_paths([into / f"{name}.md"])


def test_compare_backends_runs_a_v2_kernel_checked(reg: ft.Registry, tmp_path: Path) -> None:
    x = ft.asarray(_x())
    with ft.use_registry(_alone("my_sum_f32", tmp_path)), ft.compare_backends():
        got = np.asarray(ft.sum(x, axis=1))
    assert got.tobytes() == _run(reg, "my_sum_f32").tobytes()
    with (
        ft.use_registry(_alone("overrun_sum", tmp_path)),
        ft.compare_backends(),
        pytest.raises(KernelFault, match=r"overrun_sum .*buffer out, bytes 32\.\.95") as info,
    ):
        ft.sum(x, axis=1)
    assert "in compare_backends" in info.value.finding.inputs
