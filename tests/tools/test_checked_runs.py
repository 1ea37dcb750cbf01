"""Checked runs (issue 35, item 2): a compiled kernel run in the worker process, on guard-paged
copies of the inputs, is caught and named whatever it does (a write past out or into an input,
a crash, an abort, a hang, an exit, an output left unwritten), and the asking process lives on
with its arrays unchanged."""

from __future__ import annotations

import ctypes
import json
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from _cheats import build, contract, register
from _extras import TESTS

import fueltensor as ft
from fueltensor.core.errors import KernelStatusError
from fueltensor.registry import bundled_contracts_dir
from fueltensor.tools import checked
from fueltensor.tools.checked import KernelFault

HOSTILE = (
    "honest_f32",
    "chatty_f32",
    "overrun_f32",
    "underrun_f32",
    "scribble_f32",
    "rewrite_f32",
    "wild_f32",
    "segv_f32",
    "abort_f32",
    "exit_f32",
    "hang_f32",
    "closefds_f32",
    "overread_f32",
    "untouched_f32",
    "status_f32",
    "hog_f32",
    "ftz_f32",
    "late_segv_f32",
    "doomed_f32",
    "fork_f32",
    "fork_hang_f32",
)
N = 1000


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build("hostile_kernels.c", tmp_path_factory.mktemp("checked") / "libhostile.so")


@pytest.fixture(scope="module")
def reg(library: Path, tmp_path_factory: pytest.TempPathFactory) -> ft.Registry:
    doc = tmp_path_factory.mktemp("doc") / "hostile.md"
    return register(
        library, "checked-hostile", [(n, "AddElementwise", "F32", 0) for n in HOSTILE], doc
    )


def _inputs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    return rng.random(N, dtype=np.float32), rng.random(N, dtype=np.float32)


def _run(reg: ft.Registry, name: str, timeout: float = checked.TIMEOUT) -> np.ndarray:
    lhs, rhs = _inputs()
    kernel = reg.kernel(name)
    assert checked.applies(kernel)
    return checked.call(
        kernel,
        reg[name],
        (lhs, rhs),
        (N,),
        np.dtype(np.float32),
        "a test",
        timeout,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", ["honest_f32", "chatty_f32"])
def test_an_honest_kernel_runs_checked_to_its_own_bits(reg: ft.Registry, name: str) -> None:
    lhs, rhs = _inputs()
    assert _run(reg, name).tobytes() == (lhs + rhs).tobytes()


@pytest.mark.parametrize(
    ("name", "kind", "buffer", "offsets", "words"),
    [
        ("overrun_f32", "overrun", "out", (4 * N, 4 * N + 63), "wrote past its end"),
        ("underrun_f32", "overrun", "out", (-8, -1), "wrote before its start"),
        ("scribble_f32", "crash", "lhs", (0, 4 * N - 1), "inputs on read-only pages; with"),
        ("rewrite_f32", "crash", "lhs", None, "wrote into an input (the bytes it held)"),
        ("wild_f32", "crash", None, None, "outside every buffer and its zones"),
        ("segv_f32", "crash", None, None, "died of SIGSEGV"),
        ("abort_f32", "crash", None, None, "SIGABRT (it printed: hostile_kernels: abort_f32"),
        ("exit_f32", "exit", None, None, "ended the worker process with exit status 0 (exit()"),
        ("closefds_f32", "crash", None, None, "the worker failed after the call (the kernel broke"),
        ("overread_f32", "crash", None, None, "SIGSEGV"),
    ],
)
def test_each_fault_is_named_and_the_asker_lives_on(
    reg: ft.Registry,
    name: str,
    kind: str,
    buffer: str | None,
    offsets: tuple[int, int] | None,
    words: str,
) -> None:
    lhs, rhs = _inputs()
    with pytest.raises(KernelFault) as info:
        _run(reg, name)
    f = info.value.finding
    source = reg[name].source
    assert (f.kind, f.kernel, f.source) == (kind, name, f"{source.path}:{source.line}")
    assert (f.buffer, f.offsets) == (buffer, offsets), str(f)
    assert words in str(f), str(f)
    assert f"lhs float32[{N}]" in f.inputs and f"rhs float32[{N}]" in f.inputs
    assert isinstance(info.value, ft.ContractViolation)
    assert _run(reg, "honest_f32").tobytes() == (lhs + rhs).tobytes()  # a fresh worker


def test_a_hang_is_killed_at_the_time_bound(reg: ft.Registry) -> None:
    with pytest.raises(KernelFault, match=r"hang: no answer within 2 s; the worker was killed"):
        _run(reg, "hang_f32", timeout=2)
    lhs, rhs = _inputs()
    assert _run(reg, "honest_f32").tobytes() == (lhs + rhs).tobytes()


def test_a_nonzero_status_is_a_status_error(reg: ft.Registry) -> None:
    with pytest.raises(KernelStatusError, match="failed with status 7 in a checked run") as info:
        _run(reg, "status_f32")
    assert info.value.status == 7 and info.value.symbol == "status_f32"


def test_the_worker_has_an_address_space_limit(reg: ft.Registry) -> None:
    with pytest.raises(KernelStatusError, match="status 9"):  # malloc refused before 64 GiB
        _run(reg, "hog_f32")


def test_an_output_left_unwritten_is_named_with_its_element(reg: ft.Registry) -> None:
    lhs, _ = _inputs()
    with pytest.raises(KernelFault) as info:
        _run(reg, "untouched_f32")
    f = info.value.finding
    assert (f.kind, f.buffer, f.offsets) == ("unwritten", "out", (0, 4 * N - 1))
    assert f"lhs float32[{N}] = {float(lhs[0])!r} at element 0" in f.inputs


def test_the_callers_arrays_are_only_read(reg: ft.Registry) -> None:
    lhs, rhs = _inputs()
    kept = lhs.copy(), rhs.copy()
    for name in ("scribble_f32", "overrun_f32"):
        with pytest.raises(KernelFault):
            checked.call(reg.kernel(name), reg[name], (lhs, rhs), (N,), np.dtype(np.float32))  # type: ignore[arg-type]
    assert lhs.tobytes() == kept[0].tobytes() and rhs.tobytes() == kept[1].tobytes()


JUDGE = """
import json, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
import fueltensor as ft
from _cheats import register
reg = register(Path({library!r}), "judged-hostile",
               [(n, "AddElementwise", "F32", 0) for n in {names!r}], Path({doc!r}))
report = ft.judge(reg, quick=True, progress=False)
print(json.dumps({{row.kernel: row.failures for row in report.rows}}))
"""


def test_the_judge_survives_every_hostile_kernel_and_names_each(
    library: Path, tmp_path: Path
) -> None:
    late = ("late_segv_f32", "doomed_f32")  # their own test: their crash hits a later call
    names = [
        n for n in HOSTILE if n not in ("hang_f32", "status_f32", "hog_f32", "fork_hang_f32", *late)
    ]
    code = JUDGE.format(
        tests=str(TESTS),
        library=str(library),
        names=names,
        doc=str(tmp_path / "d.md"),
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    for fine in ("honest_f32", "chatty_f32", "fork_f32"):  # fork_f32's children end with the judge
        assert failures.pop(fine) == [], fine
    for name, said in failures.items():
        assert said, f"{name} passed the judge"
        assert any(f"kernel {name} (" in s and "KernelFault" in s for s in said), said


@pytest.fixture
def beside_cpu(library: Path, tmp_path: Path) -> Callable[[str], ft.Registry]:
    """The bundled contracts and one hostile kernel named `name`, which costs more than the
    CPU kernel (so the CPU kernel runs by default and the hostile one only when compared)."""

    def make(name: str) -> ft.Registry:
        doc = tmp_path / f"{name}.md"
        register(library, "compared-hostile", [(name, "AddElementwise", "F32", 0)], doc)
        doc.write_text(doc.read_text().replace('"3 * n * 4"', '"30 * n"'))
        return ft.Registry.from_paths([bundled_contracts_dir(), doc])

    return make


def test_compare_backends_runs_a_compiled_kernel_checked(
    beside_cpu: Callable[[str], ft.Registry],
) -> None:
    x = ft.asarray(np.arange(8, dtype=np.float32))
    y = ft.asarray(np.full(8, 0.5, dtype=np.float32))
    with ft.use_registry(beside_cpu("honest_f32")):
        with ft.compare_backends("cpu", "compared-hostile") as report:
            x + y
        report.assert_equal()
        assert [c.kernels for c in report] == [("add_f32", "honest_f32")]
    for name, says in [
        ("scribble_f32", "buffer lhs, bytes 1..31"),  # 12345.0f and 0.0f share byte 0
        ("overrun_f32", "overrun: wrote past its end; buffer out, bytes 32..95"),
        ("abort_f32", "SIGABRT"),
    ]:
        with (
            ft.use_registry(beside_cpu(name)),
            ft.compare_backends("cpu", "compared-hostile"),
            pytest.raises(KernelFault, match=f"kernel {name} .*{re.escape(says)}") as info,
        ):
            x + y
        assert "add in compare_backends" in info.value.finding.inputs
    assert np.asarray(x).tolist() == list(range(8)) and np.asarray(y).tolist() == [0.5] * 8


def test_compare_backends_gives_a_python_kernel_private_copies(tmp_path: Path) -> None:
    def sneaky(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        ctypes.memset(lhs.ctypes.data, 0, lhs.nbytes)  # past NumPy's read-only flag
        np.add(lhs, rhs, out=out)

    doc = tmp_path / "py.md"
    doc.write_text(
        "---\nfkc_version: 1\nprovider: {name: py-sneaky, backend: Cpu, kernel_source: "
        '"py-sneaky", link_registry: t, revision_base: "t:1"}\n---\n# py-sneaky\n'
        + contract("sneaky_add_f32", "AddElementwise", "F32", 0, "py-sneaky").replace(
            '"3 * n * 4"', '"30 * n"'
        )
    )
    ft.register_provider("py-sneaky", {"py-sneaky::sneaky_add_f32": sneaky})
    x = ft.asarray([1.0, 2.0], dtype=ft.float32)
    reg = ft.Registry.from_paths([bundled_contracts_dir(), doc])
    with (
        ft.use_registry(reg),
        ft.compare_backends("cpu", "py-sneaky"),
        pytest.raises(KernelFault, match=r"input write: wrote into an input .*buffer lhs"),
    ):
        x + x
    assert np.asarray(x).tolist() == [1.0, 2.0]


def test_the_judge_survives_a_python_kernel_that_calls_sys_exit(tmp_path: Path) -> None:
    def leaves(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        sys.exit(3)

    doc = tmp_path / "py.md"
    doc.write_text(
        "---\nfkc_version: 1\nprovider: {name: py-exit, backend: Cpu, kernel_source: "
        '"py-exit", link_registry: t, revision_base: "t:1"}\n---\n# py-exit\n'
        + contract("exit_add_f32", "AddElementwise", "F32", 0, "py-exit")
    )
    ft.register_provider("py-exit", {"py-exit::exit_add_f32": leaves})
    [row] = ft.judge(ft.Registry.from_paths([doc]), quick=True, progress=False).rows
    assert row.failures == ["the kernel raised during the audit: SystemExit: 3"]


def test_compare_backends_names_a_default_kernel_that_writes_its_input(
    library: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "cheap.md"
    register(library, "cheap-hostile", [("scribble_f32", "AddElementwise", "F32", 0)], doc)
    doc.write_text(doc.read_text().replace('"3 * n * 4"', '"n"'))  # cheaper: the default
    x = ft.asarray(np.arange(1.0, 9.0, dtype=np.float32))  # 32 bytes: no scalar's private copy
    y = ft.asarray(np.full(8, 0.5, dtype=np.float32))
    reg = ft.Registry.from_paths([bundled_contracts_dir(), doc])
    with (
        ft.use_registry(reg),
        ft.compare_backends("cpu", "cheap-hostile"),
        pytest.raises(KernelFault, match=r"wrote into an input; buffer lhs, bytes 1..31"),
    ):
        x + y
    assert np.asarray(x).tolist() == list(range(1, 9))  # the default run was checked too
    with ft.use_registry(reg):
        x + y  # a normal call: writes what it is given
    assert np.asarray(x).tolist() == [12345.0] * 8


def _same_worker(reg: ft.Registry, name: str, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`name` run checked on (lhs, rhs), in the worker the previous checked call used."""
    kernel = reg.kernel(name)
    return checked.call(kernel, reg[name], (lhs, rhs), lhs.shape, lhs.dtype)  # type: ignore[arg-type]


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (no longer exists, or a zombie left for init to reap)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _ended(pid: int) -> bool:
    """Whether process `pid` ends within a bounded wait (polled; no timing is asserted)."""
    for _ in range(1000):
        if _gone(pid):
            return True
        time.sleep(0.01)
    return False


def test_a_kernel_setting_flush_to_zero_is_named_and_the_next_one_is_not_judged_under_it(
    reg: ft.Registry,
) -> None:
    lhs = np.full(N, np.float32(2.35e-38), dtype=np.float32)  # subnormal sums: FTZ gives 0
    rhs = np.full(N, np.float32(-1e-45), dtype=np.float32)
    with pytest.raises(KernelFault) as info:
        _same_worker(reg, "ftz_f32", lhs, rhs)
    f = info.value.finding
    assert (f.kind, f.kernel) == ("fp environment", "ftz_f32"), str(f)
    assert "MXCSR 0x1f80 -> 0x9fc0" in str(f) and "the worker restored them" in str(f)
    process = checked.POOL.process
    assert _same_worker(reg, "honest_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    assert checked.POOL.process is process  # the same worker judged both


def test_a_late_crash_is_the_kernel_that_left_it_and_not_the_next_one(reg: ft.Registry) -> None:
    lhs, rhs = _inputs()
    checked.finish()
    assert _same_worker(reg, "late_segv_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    process = checked.POOL.process
    assert process is not None and process.exited(10)  # its thread segfaulted after the calls
    assert _same_worker(reg, "honest_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    with pytest.raises(KernelFault) as info:
        _same_worker(reg, "late_segv_f32", lhs, rhs)
    f = info.value.finding
    assert (f.kind, f.kernel) == ("crash", "late_segv_f32"), str(f)
    assert "died of SIGSEGV, after its call returned" in str(f), str(f)
    assert checked.late(reg.kernel("honest_f32"), reg["honest_f32"]) is None


def test_a_crash_during_the_next_call_that_does_not_repeat_is_the_previous_kernels(
    reg: ft.Registry,
) -> None:
    lhs, rhs = _inputs()
    checked.finish()
    assert _same_worker(reg, "doomed_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    with pytest.raises(KernelFault, match="unwritten"):  # called since, but left no thread
        _same_worker(reg, "untouched_f32", lhs, rhs)
    # honest_f32's call wakes the thread doomed_f32 left, which segfaults the worker during it
    assert _same_worker(reg, "honest_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    fault = checked.late(reg.kernel("doomed_f32"), reg["doomed_f32"])
    assert fault is not None and fault.finding.kernel == "doomed_f32"
    assert "died of SIGSEGV, after its call returned" in str(fault), str(fault)


def test_a_worker_found_dead_before_a_request_died_of_the_last_call(reg: ft.Registry) -> None:
    lhs, rhs = _inputs()
    checked.finish()
    assert _same_worker(reg, "late_segv_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    process = checked.POOL.process
    assert process is not None and process.exited(10)
    with pytest.raises(KernelFault) as info:  # its own next call: found before the request
        _same_worker(reg, "late_segv_f32", lhs, rhs)
    assert "died of SIGSEGV, after its call returned" in str(info.value), str(info.value)
    checked.finish()
    checked.POOL.late.clear()


def test_a_crash_the_last_call_left_is_found_when_the_run_finishes(reg: ft.Registry) -> None:
    """No call follows the kernel's: `finish` keeps the worker its thread is running in long
    enough for the death to surface (closed at once, the worker ended cleanly before the thread
    fired, and the judge's last kernel passed)."""
    lhs, rhs = _inputs()
    checked.finish()
    assert _same_worker(reg, "late_segv_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    checked.finish()
    fault = checked.late(reg.kernel("late_segv_f32"), reg["late_segv_f32"])
    assert fault is not None and fault.finding.kernel == "late_segv_f32"
    assert "died of SIGSEGV, after its call returned" in str(fault), str(fault)


def test_a_crash_that_does_not_repeat_is_said_not_reproduced(
    reg: ft.Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    lhs, rhs = _inputs()
    checked.finish()
    assert _same_worker(reg, "late_segv_f32", lhs, rhs).tobytes() == (lhs + rhs).tobytes()
    process = checked.POOL.process
    assert process is not None and process.exited(10)
    # as if it died just after the check before the request: the request finds it dead
    monkeypatch.setattr(process, "exited", lambda timeout: False)
    with pytest.raises(KernelFault) as info:
        _same_worker(reg, "late_segv_f32", lhs, rhs)
    f = info.value.finding
    assert (f.kind, f.kernel) == ("crash", "late_segv_f32"), str(f)
    assert "died of SIGSEGV; crashed once, not reproduced" in str(f), str(f)
    checked.finish()
    checked.POOL.late.clear()


def test_the_judge_names_a_kernel_whose_crash_came_in_the_next_kernels_call(
    library: Path, tmp_path: Path
) -> None:
    code = JUDGE.format(
        tests=str(TESTS),
        library=str(library),
        names=["doomed_f32", "honest_f32"],
        doc=str(tmp_path / "d.md"),
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    failures = json.loads(done.stdout.strip().splitlines()[-1])
    assert failures["honest_f32"] == []
    assert any(
        "kernel doomed_f32 (" in s and "after its call returned" in s
        for s in failures["doomed_f32"]
    ), failures


def test_no_process_a_forking_kernel_left_outlives_the_checked_run(
    reg: ft.Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PIDS", str(pids))
    checked.finish()  # the next worker starts with HOSTILE_PIDS set
    lhs, rhs = _inputs()
    assert _run(reg, "fork_f32").tobytes() == (lhs + rhs).tobytes()
    children = [int(line) for line in pids.read_text().split()]
    assert len(children) == 2 and not any(map(_gone, children))  # one per fill
    checked.finish()  # as the judge and compare_backends do when they return
    assert all(map(_ended, children))
    pids.unlink()
    with pytest.raises(KernelFault, match="hang: no answer within 2 s"):
        _run(reg, "fork_hang_f32", timeout=2)
    children = [int(line) for line in pids.read_text().split()]
    assert len(children) == 1 and _ended(children[0])


def test_compare_backends_leaves_no_process_a_kernel_forked(
    beside_cpu: Callable[[str], ft.Registry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pids = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PIDS", str(pids))
    checked.finish()
    x = ft.asarray(np.arange(8, dtype=np.float32))
    with ft.use_registry(beside_cpu("fork_f32")), ft.compare_backends("cpu", "compared-hostile"):
        x + x
        children = [int(line) for line in pids.read_text().split()]
        assert children and not any(map(_gone, children))
    assert all(map(_ended, children))
