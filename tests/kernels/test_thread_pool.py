"""The compiled kernels' worker pool: started by the first body that splits, kept between calls,
safe for concurrent callers and across fork, and running every chunk under the caller's
floating-point environment.

Thread counts come from /proc/self/task (Linux), in a fresh interpreter where the pool's start
matters; results are compared bit for bit with one thread's (test_threads and
test_kernels_native hold one thread to the scalar reference). Every wait is bounded: a pool that
loses a wake-up or a forked child waiting on its parent's workers fails here instead of hanging.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _extras import OUTSIDE
from _modes import NATIVE_FAST_PATH

import fueltensor as ft
from fueltensor.kernels import threads
from fueltensor.kernels._chassis import NATIVE

_native: Any = NATIVE
pytestmark = [
    pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here"),
    pytest.mark.skipif(threads.cores() < 2, reason="one core: nothing to split over"),
    pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="no /proc/self/task here"),
]
BIG = (NATIVE.PARALLEL_FROM if NATIVE is not None else 0) + 4097
WAKING = (NATIVE.PARALLEL_FROM * NATIVE.WAKE_FACTOR if NATIVE is not None else 0) + 4097
"""A size whose call wakes the workers asleep rather than run alone (a call of BIG elements
that finds them all asleep, on a loaded machine, runs alone and starts none)."""
SECONDS = 60
"""The bound on every wait below (a hang fails the test; no test is timed)."""
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))

PRELUDE = """
import os, numpy as np
from fueltensor.kernels._chassis import NATIVE as N
MUL, F32 = N.OPS.index("mul"), N.DTYPES.index("float32")
def tasks():
    return len(os.listdir("/proc/self/task"))
def ticks(tid):
    with open(f"/proc/self/task/{tid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks
def mul(n, threads):
    N.set_threads(threads)
    a = (np.arange(n, dtype=np.float32) % 1000) * np.float32(0.37)
    out = np.full(n, np.nan, np.float32)
    N.binary(MUL, F32, a, a[::-1].copy(), out)
    return out.tobytes()
"""


@pytest.fixture(autouse=True)
def keep_setting() -> Iterator[None]:
    """Every test leaves the thread setting as it found it."""
    before = ft.get_num_threads()
    yield
    ft.set_num_threads(before)


def script(body: str) -> list[str]:
    """The stdout lines of a fresh interpreter running PRELUDE and `body` (which must exit 0)."""
    done = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", PRELUDE + textwrap.dedent(body)],
        cwd=OUTSIDE,
        capture_output=True,
        text=True,
        timeout=SECONDS,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_no_worker_until_a_body_splits_then_one_pool_for_the_process() -> None:
    """Small bodies and one-thread large ones start no thread; the first body that splits
    starts the workers it needs (the cores but this one), and later calls reuse them."""
    start, small, single, split, again = map(
        int,
        script(f"""
            start = tasks()
            mul(N.SPLIT_FROM["mul"]["float32"] - 1, 64)
            small = tasks()
            mul({BIG}, 1)
            single = tasks()
            mul({BIG}, 2)
            split = tasks()
            for _ in range(5):
                mul({WAKING}, 64)
            print(start, small, single, split, tasks())
        """),
    )
    assert small == single == start
    assert split == start + 1
    assert again == start + min(threads.cores(), threads.MAX_THREADS) - 1


@NATIVE_FAST_PATH
def test_a_long_call_with_a_python_scalar_splits() -> None:
    """`x ** 0.5` on the fast path reads its scalar from a repeated block; a long call's block is
    long enough that the pool splits each body call over it, so a worker runs parts (its CPU
    time grows). 8 KiB blocks never reached pow's threshold: the calls ran on one core, 2.4x
    NumPy's time at 10^6."""
    lines = script(f"""
        import time
        import fueltensor as ft
        from fueltensor.engine import dispatch
        x = ft.asarray(np.linspace(0.5, 2.0, 1 << 20, dtype=np.float32))
        before = set(os.listdir("/proc/self/task"))
        mul({BIG}, 2)
        (worker,) = set(os.listdir("/proc/self/task")) - before
        N.set_threads(2)
        x ** 0.5  # planned on the Python path; the calls below take the fast path
        start, deadline = ticks(worker), time.monotonic() + {SECONDS // 2}
        while ticks(worker) - start < 5 and time.monotonic() < deadline:
            assert dispatch._FAST("pow", x, 0.5) is not None
        print(ticks(worker) - start >= 5)
    """)
    assert lines == ["True"]


def test_a_parked_worker_is_woken_to_take_parts_of_the_next_split_call() -> None:
    """After a pause longer than its poll the worker sleeps; the next split calls wake it and it
    runs parts of them (its CPU time, from /proc, grows), though no call waits for it to wake
    (the caller claims parts meanwhile). A worker left asleep would leave it unchanged."""
    lines = script(f"""
        import time
        before = set(os.listdir("/proc/self/task"))
        mul({BIG}, 2)
        (worker,) = set(os.listdir("/proc/self/task")) - before
        time.sleep(0.3)  # far past POOL_SPIN_NS: the worker is parked
        start, deadline = ticks(worker), time.monotonic() + {SECONDS // 2}
        a = np.linspace(0.5, 2.0, 1 << 20)
        out = np.empty_like(a)
        N.set_threads(2)
        while ticks(worker) - start < 5 and time.monotonic() < deadline:
            N.binary(N.OPS.index("pow"), N.DTYPES.index("float64"), a, a, out)
        print(ticks(worker) - start >= 5)
    """)
    assert lines == ["True"]


def test_mid_size_calls_after_idle_bring_a_parked_worker_back() -> None:
    """A split call too short to repay waking a sleeping worker runs alone and posts no part,
    but leaves a mark: the worker, waking by itself, sees it and polls again, so a run of such
    calls splits from then on (its CPU time grows). Without the mark it would sleep through
    them all: the calls are spaced wider than the worker polls, so none follows a streak."""
    lines = script(f"""
        import time
        def ticks(tid):
            with open(f"/proc/self/task/{{tid}}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])
        before = set(os.listdir("/proc/self/task"))
        mul({BIG}, 2)
        (worker,) = set(os.listdir("/proc/self/task")) - before
        time.sleep(0.3)
        n = 2 * N.SPLIT_FROM["mul"]["float32"]
        assert 2 < N.WAKE_FACTOR  # n is too short to wake the worker itself
        a = np.linspace(0.5, 2.0, n, dtype=np.float32)
        out = np.empty_like(a)
        start, deadline = ticks(worker), time.monotonic() + {SECONDS // 2}
        while ticks(worker) - start < 5 and time.monotonic() < deadline:
            N.binary(MUL, F32, a, a, out)
            time.sleep(N.POOL_SPIN_NS * 1.5e-9)
        print(ticks(worker) - start >= 5)
    """)
    assert lines == ["True"]


def test_a_run_of_mid_size_calls_wakes_a_long_parked_worker_at_once() -> None:
    """After ALONE_STREAK mid-size calls in a row ran alone, the next one wakes the parked
    worker itself (its voluntary context switches grow within milliseconds), instead of the
    loop running alone until the worker's own nap, grown to a quarter second, ends."""
    lines = script(f"""
        import time
        def switches(tid):
            with open(f"/proc/self/task/{{tid}}/status") as f:
                return [line for line in f if line.startswith("voluntary_ctxt_switches")]
        before = set(os.listdir("/proc/self/task"))
        mul({BIG}, 2)
        (worker,) = set(os.listdir("/proc/self/task")) - before
        time.sleep(0.6)  # its naps double from 1 ms: the one it sleeps now lasts 256 ms or more
        n = 2 * N.SPLIT_FROM["mul"]["float32"]
        a = np.linspace(0.5, 2.0, n, dtype=np.float32)
        out = np.empty_like(a)
        start = switches(worker)
        for _ in range(N.ALONE_STREAK + 1):
            N.binary(MUL, F32, a, a, out)
        time.sleep(0.005)
        print(switches(worker) != start)
    """)
    assert lines == ["True"]


def test_the_process_exits_with_the_pool_running_and_a_thread_inside_it() -> None:
    """Workers are never joined: the interpreter exits while they are parked and while a daemon
    thread is still running split bodies."""
    lines = script(f"""
        import threading
        mul({BIG}, 2)
        def forever():
            while True:
                mul({BIG}, 2)
        threading.Thread(target=forever, daemon=True).start()
        mul({BIG}, 2)
        print("exiting")
    """)
    assert lines == ["exiting"]


def test_a_forked_child_starts_its_own_workers_and_computes_right() -> None:
    """After the parent's pool has run, a forked child's split body gives one thread's bytes on
    workers of its own (the parent's do not exist in the child; SIGALRM ends a child that
    waits for them), and the parent's pool still serves the parent."""
    lines = script(f"""
        import signal
        want = mul({BIG}, 1)
        assert mul({BIG}, 2) == want
        pid = os.fork()
        if pid == 0:
            signal.alarm({SECONDS // 2})
            born = tasks()
            ok = mul({BIG}, 2) == want and mul({BIG}, 2) == want
            os._exit(0 if ok and born == 1 and tasks() == 2 else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), mul({BIG}, 2) == want)
    """)
    assert lines == ["0", "True"]


def test_concurrent_callers_each_get_one_threads_bits() -> None:
    """Four Python threads running large bodies at once (the GIL is released in them): one owns
    the pool, the others run alone; every result is one thread's. The bodies are 16 times the
    size that splits, long enough for the callers' calls to overlap in the pool."""
    rng = np.random.default_rng(11)
    n = 16 * BIG
    pairs = [(rng.random(n, np.float32), rng.random(n, np.float32) - 0.5) for _ in range(4)]
    ops = [_native.OPS.index(op) for op in ("add", "mul", "div", "sub")]
    f32 = _native.DTYPES.index("float32")
    ft.set_num_threads(1)
    want = []
    for op, (a, b) in zip(ops, pairs, strict=True):
        want.append(np.empty_like(a))
        _native.binary(op, f32, a, b, want[-1])
    ft.set_num_threads(2)
    barrier = threading.Barrier(len(pairs), timeout=SECONDS)
    failures: list[str] = []

    def caller(k: int) -> None:
        try:
            barrier.wait()
            for r in range(25):
                out = np.full_like(want[k], np.nan)
                _native.binary(ops[k], f32, *pairs[k], out)
                if out.tobytes() != want[k].tobytes():
                    failures.append(f"caller {k}, round {r}")
        except Exception as e:  # reported below: a thread must not die silently
            failures.append(f"caller {k}: {type(e).__name__}: {e}")

    callers = [threading.Thread(target=caller, args=(k,), daemon=True) for k in range(len(pairs))]
    for t in callers:
        t.start()
    deadline = time.monotonic() + SECONDS
    for t in callers:
        t.join(max(0.0, deadline - time.monotonic()))
    assert not any(t.is_alive() for t in callers), "a caller did not finish: deadlock?"
    assert failures == []


@pytest.mark.skipif(platform.machine() != "x86_64", reason="MXCSR's FTZ/DAZ bits are x86's")
def test_workers_run_under_the_callers_flush_to_zero_and_denormals_are_zero() -> None:
    """With FTZ and DAZ set in the caller's MXCSR (through fesetenv), both halves of a split body
    flush subnormals as one thread does: the workers were started earlier, under the default
    environment, so only the environment handed to them per call can make them."""
    f32 = _native.DTYPES.index("float32")
    tiny = np.full(BIG, np.float32(1e-39))  # a subnormal
    zero = np.zeros(BIG, np.float32)
    ft.set_num_threads(2)
    plain = np.empty_like(tiny)
    _native.binary(_native.OPS.index("add"), f32, tiny, zero, plain)  # the pool runs from here
    env, saved = (ctypes.create_string_buffer(64) for _ in range(2))  # fenv_t is 32 bytes here
    assert LIBM.fegetenv(saved) == 0 and LIBM.fegetenv(env) == 0
    mxcsr = ctypes.c_uint32.from_buffer(env, 28)
    mxcsr.value |= 0x8040  # FTZ (bit 15) and DAZ (bit 6)
    outs = {count: np.full_like(tiny, np.nan) for count in (1, 2)}
    try:
        assert LIBM.fesetenv(env) == 0
        for count, out in outs.items():
            _native.set_threads(count)
            _native.binary(_native.OPS.index("add"), f32, tiny, zero, out)
    finally:
        LIBM.fesetenv(saved)
        _native.set_threads(ft.get_num_threads())
    assert set(plain.tolist()) == {float(np.float32(1e-39))}
    for count, out in outs.items():  # counts, not the arrays: pytest would diff megabytes
        assert np.count_nonzero(out.view(np.uint32)) == 0, f"{count} thread(s) kept subnormals"
