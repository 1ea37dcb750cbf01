"""All cores from mid sizes: a compiled body over its op class's threshold (`SPLIT_FROM`; every
one splits from `PARALLEL_FROM`) runs in parts on threads, and nothing the caller sees changes
but the time.

Every op and dtype gives one thread's bits on several threads (random bit patterns: NaN
payloads, subnormals, infinities), at odd sizes and at offsets; a flag raised only in the last
chunk reaches the caller's view of the run; the caller's rounding mode holds in every thread;
the setting is refused outside 1 to MAX_THREADS and capped by the process's affinity, or by the
cores a test pretends (as on machines of 1 to 64 cores); plans say
how many threads their kernel step runs on. One thread's bits are the reference here because
test_kernels_native holds them to the scalar contract reference.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _extras import OUTSIDE
from _oracle import FORMATS, Fmt

import fueltensor as ft
from fueltensor.kernels import cpu, threads
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

_native: Any = NATIVE
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")

FMT_OF = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}
BIG = (NATIVE.PARALLEL_FROM if NATIVE is not None else 0) + 4097
"""An odd size past every threshold: the last part is not a whole 512-element block."""
WAKING = (NATIVE.PARALLEL_FROM * NATIVE.WAKE_FACTOR if NATIVE is not None else 0) + 4097
"""An odd size whose call wakes a sleeping worker (a shorter one finding every worker asleep
runs alone): what a test of a worker's part needs."""
LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
FE = {"x86_64": (0x04, 0x800), "aarch64": (0x02, 0x400000)}.get(platform.machine())
"""<fenv.h>'s FE_DIVBYZERO and FE_UPWARD on the platforms this test knows."""
Bytes = np.ndarray[Any, np.dtype[np.uint8]]
TWO_CORES = pytest.mark.skipif(threads.cores() < 2, reason="one core: nothing to split over")


@pytest.fixture(autouse=True)
def keep_setting() -> Iterator[None]:
    """Every test leaves the thread setting as it found it."""
    before = ft.get_num_threads()
    yield
    ft.set_num_threads(before)


@pytest.fixture
def real_cores() -> Iterator[None]:
    """The test starts on the cores of its affinity mask, whatever the run pretends
    ($FUELTENSOR_TEST_CORES, `threads.pretend_cores`), and the run's pretence comes back."""
    pretended = threads.pretend_cores(0)
    yield
    threads.pretend_cores(pretended)


def split(n: int, op: str = "add", dtype: str = "float32") -> int:
    """How many threads the compiled body of `op` ("powi": the integer power) on `dtype` runs
    a call over n elements on now."""
    code = _native.POWI_OP if op == "powi" else _native.OPS.index(op)
    threads: int = _native.threads(n, code, _native.DTYPES.index(dtype))
    return threads


def bits(fmt: Fmt, n: int, seed: int) -> np.ndarray[Any, Any]:
    """n random bit patterns of `fmt` (every NaN payload, subnormal and infinity can occur),
    with the specials every 97th element."""
    rng = np.random.default_rng(seed)
    out = rng.integers(0, (1 << fmt.width) - 1, n, dtype=fmt.uint, endpoint=True)
    top = fmt.exp_mask
    specials = [0, 1, top, top | 1, top | (1 << (fmt.man_bits - 1)) | 5, fmt.sign, top - 1]
    out[::97] = np.resize(np.array(specials, dtype=fmt.uint), out[::97].size)
    return out


def run(op: str, dtype: str, lhs: Any, rhs: Any, fill: int, count: int) -> Bytes:
    """`_native.binary` of op on `count` threads into an output prefilled with byte `fill` (so a
    chunk no thread wrote shows), as its bytes."""
    out = np.full(lhs.nbytes, fill, np.uint8)
    ft.set_num_threads(count)
    _native.binary(
        _native.OPS.index(op), _native.DTYPES.index(dtype), lhs, rhs, out.view(lhs.dtype)
    )
    return out


def differing(got: Bytes, want: Bytes) -> str:
    """Where two outputs' bytes differ (a short message: pytest would diff megabytes)."""
    bad = np.flatnonzero(got != want)
    return f"{bad.size} of {want.size} bytes differ, the first at {bad[:1]}"


@TWO_CORES
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
@pytest.mark.parametrize(
    "op", ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod", "rem"]
)
def test_every_op_and_dtype_gives_one_threads_bits(op: str, dtype: str) -> None:
    """Split over two threads, at an odd size and at an odd element offset, the bytes are one
    thread's, whatever the output held before."""
    fmt = FORMATS[FMT_OF[dtype]]
    lhs, rhs = (bits(fmt, BIG + 3, seed).view(fmt.np_dtype) for seed in (1, 2))
    for a, b in ((lhs[:BIG], rhs[:BIG]), (lhs[3:], rhs[1:-2])):
        ft.set_num_threads(2)
        assert split(a.size, op, dtype) == 2
        one, two = run(op, dtype, a, b, 0x00, 1), run(op, dtype, a, b, 0xFF, 2)
        assert np.array_equal(two, one), differing(two, one)


@TWO_CORES
def test_pow_tiles_of_the_shortcut_exponents_give_one_threads_bits() -> None:
    """f32 pow by 2 and by 0.5 (the tiles the verified shortcut may take) split the same way."""
    x = bits(FORMATS["f32"], BIG, 3).view(np.float32)
    for y in (2.0, 0.5):
        rhs = np.full(BIG, y, np.float32)
        two, one = run("pow", "float32", x, rhs, 0xFF, 2), run("pow", "float32", x, rhs, 0, 1)
        assert np.array_equal(two, one), differing(two, one)


@TWO_CORES
@pytest.mark.skipif(FE is None, reason=f"FE_* bits of {platform.machine()} not listed")
@pytest.mark.parametrize("where", [0, -1])
def test_a_flag_raised_in_one_chunk_reaches_the_caller(where: int) -> None:
    """A division by zero in only the first or only the last element raises FE_DIVBYZERO in the
    run on two threads as on one, and the caller's own flags stay as they were."""
    assert FE is not None
    lhs = np.ones(WAKING, np.float32)
    rhs = np.ones(WAKING, np.float32)
    rhs[where] = 0.0
    div = _native.OPS.index("div"), _native.DTYPES.index("float32")
    for count in (1, 2):
        ft.set_num_threads(count)
        assert _native.raised(*div, lhs, rhs, np.empty_like(lhs)) == FE[0]
    rhs[where] = 1.0
    assert _native.raised(*div, lhs, rhs, np.empty_like(lhs)) == 0


@TWO_CORES
@pytest.mark.skipif(FE is None, reason=f"FE_* bits of {platform.machine()} not listed")
def test_a_flag_raised_only_in_a_workers_part_is_merged_into_the_callers() -> None:
    """The flags a worker's parts raised are merged into the caller's, so `raised` reports
    them as one thread's run would: a division by zero at the first element of the worker's
    own range (at n/2 where n is a power of two: the parts, four per thread of whole 512-element
    blocks, cut it in halves), which a worker already polling claims first, is reported by
    every call. The call is long enough to wake a parked worker, and repeated, so the worker
    takes the part in at least some; a lost merge drops the flag from those."""
    assert FE is not None
    n = 1 << WAKING.bit_length()  # past WAKING
    lhs, rhs = np.ones(n, np.float32), np.ones(n, np.float32)
    rhs[n // 2] = 0.0
    div = _native.OPS.index("div"), _native.DTYPES.index("float32")
    ft.set_num_threads(2)
    assert split(n, "div") == 2
    seen = [_native.raised(*div, lhs, rhs, np.empty_like(lhs)) for _ in range(40)]
    assert seen == [FE[0]] * len(seen)


@TWO_CORES
@pytest.mark.skipif(FE is None, reason=f"FE_* bits of {platform.machine()} not listed")
def test_every_thread_rounds_as_the_caller() -> None:
    """Under the caller's FE_UPWARD, two threads give one thread's sums, which differ from the
    sums rounded to nearest."""
    assert FE is not None
    a = np.full(WAKING, 1.0, np.float32)
    b = np.full(WAKING, 2.0**-30, np.float32)  # 1 + 2^-30 rounds up to the next float only upward
    nearest = run("add", "float32", a, b, 0, 2)
    LIBM.fesetround(FE[1])
    try:
        upward = run("add", "float32", a, b, 0xFF, 2), run("add", "float32", a, b, 0, 1)
    finally:
        LIBM.fesetround(0)
    assert np.array_equal(upward[0], upward[1]), differing(*upward)
    assert set(upward[0].view(np.float32)) == {np.nextafter(np.float32(1), 2)}
    assert set(nearest.view(np.float32)) == {1.0}


@pytest.mark.parametrize("bad", [0, -1, -64, 65, 10**6, True, 2.0, "2", None])
def test_set_num_threads_refuses_counts_outside_the_range(bad: Any) -> None:
    """0, negatives, more than MAX_THREADS and non-integers are refused naming the range, and
    the setting stays as it was."""
    before = ft.get_num_threads()
    with pytest.raises(ValueError, match=rf"from 1 to {threads.MAX_THREADS}, got"):
        ft.set_num_threads(bad)
    assert ft.get_num_threads() == before


def test_the_count_is_capped_by_the_cores_and_one_below_the_threshold() -> None:
    """Above the process's cores the setting is accepted and the cores are used; below its op
    class's SPLIT_FROM elements a body runs here alone; setting returns the previous value."""
    cores = min(threads.cores(), threads.MAX_THREADS)
    assert ft.set_num_threads(threads.MAX_THREADS) >= 1
    assert ft.set_num_threads(1) == threads.MAX_THREADS
    assert split(BIG) == 1
    ft.set_num_threads(threads.MAX_THREADS)
    assert ft.get_num_threads() == threads.MAX_THREADS
    assert split(BIG) == cores
    assert split(sys.maxsize) == cores  # no overflow in the part arithmetic
    for op, row in _native.SPLIT_FROM.items():
        for dtype, start in row.items():
            blocks = -(-start // 512)  # a thread takes one 512-element block at least
            want = (1, min(cores, blocks))
            assert (split(start - 1, op, dtype), split(start, op, dtype)) == want, (op, dtype)


@pytest.mark.parametrize("cores", [1, 3, 16, 64])
def test_the_split_on_a_machine_of_any_size(cores: int, real_cores: None) -> None:
    """As on a machine of 1, 3, 16 or 64 cores: the setting is capped by the cores, and by the
    512-element blocks a body makes; one thread below the threshold; and a body split over
    that many threads (the pool grown to them) gives one thread's bits."""
    threads.pretend_cores(cores)
    assert threads.cores() == cores
    ft.set_num_threads(threads.MAX_THREADS)
    assert split(BIG) == split(sys.maxsize) == cores
    assert split(_native.SPLIT_FROM["add"]["float32"] - 1) == 1
    ft.set_num_threads(3)
    assert split(BIG) == min(cores, 3)
    assert _native.set_parallel_from(512) == 0  # every body from one block
    try:  # two blocks and a bit: on three threads at most
        assert split(2 * 512 + 1) == min(cores, 3)
    finally:
        _native.set_parallel_from(0)
    fmt = FORMATS["f32"]
    lhs, rhs = (bits(fmt, WAKING, seed).view(np.float32) for seed in (7, 8))
    many = run("mul", "float32", lhs, rhs, 0xFF, threads.MAX_THREADS)
    one = run("mul", "float32", lhs, rhs, 0x00, 1)
    assert np.array_equal(many, one), differing(many, one)


@pytest.mark.parametrize("bad", [-1, 65, True])
def test_a_pretended_core_count_outside_the_range_is_refused(bad: Any, real_cores: None) -> None:
    """Only 1 to MAX_THREADS cores (or 0: the affinity mask) can be pretended, in Python and C;
    a refusal leaves the cores as they were."""
    with pytest.raises(ValueError, match=rf"from 1 to {threads.MAX_THREADS}, got"):
        threads.pretend_cores(bad)
    with pytest.raises(ValueError, match=rf"in \[1, {threads.MAX_THREADS}\] \(or 0"):
        _native.pretend_cores(-1 if bad is True else bad)
    assert threads.cores() == len(os.sched_getaffinity(0))


def test_every_op_and_dtype_has_a_threshold_of_whole_blocks_below_parallel_from() -> None:
    """SPLIT_FROM names every op (and the integer power) on every dtype, each threshold at least
    one 512-element block, and PARALLEL_FROM is the largest: every body splits from there."""
    assert list(_native.SPLIT_FROM) == [*_native.OPS, "powi"]
    starts = [start for row in _native.SPLIT_FROM.values() for start in row.values()]
    assert all(list(row) == list(_native.DTYPES) for row in _native.SPLIT_FROM.values())
    assert min(starts) >= 512 and max(starts) == _native.PARALLEL_FROM


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: nothing to split over")
def test_an_affinity_of_one_core_runs_one_thread(real_cores: None) -> None:
    """The cap follows the calling thread's affinity mask as the bodies run (read again once
    AFFINITY_NS have passed), not the machine's core count."""
    ft.set_num_threads(2)
    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(mask)})
    try:
        time.sleep(2 * _native.AFFINITY_NS / 1e9)
        assert split(BIG) == 1
    finally:
        os.sched_setaffinity(0, mask)
    time.sleep(2 * _native.AFFINITY_NS / 1e9)
    assert split(BIG) == 2


@pytest.mark.parametrize(("value", "want"), [("1", "1"), ("3", "3"), (" 2 ", "2")])
def test_the_environment_variable_sets_the_start(value: str, want: str) -> None:
    """FUELTENSOR_NUM_THREADS is the setting at import."""
    out = subprocess.run(
        [sys.executable, "-c", "import fueltensor as ft; print(ft.get_num_threads())"],
        cwd=OUTSIDE,
        env={**os.environ, threads.ENV_VAR: value},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == want


@pytest.mark.parametrize("value", ["0", "-2", "many", "65"])
def test_a_bad_environment_variable_is_refused_by_name(value: str) -> None:
    """A count outside the range stops the import with a message naming the variable."""
    out = subprocess.run(
        [sys.executable, "-c", "import fueltensor"],
        cwd=OUTSIDE,
        env={**os.environ, threads.ENV_VAR: value},
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert (
        f"${threads.ENV_VAR}={value!r} is not a count: set a whole number from 1 to" in out.stderr
    )


@TWO_CORES
def test_plans_say_how_many_threads_their_kernel_step_runs_on() -> None:
    """explain and trace show the Kernel step's threads: two past the threshold (on the
    compiled kernels), one below it, and one after set_num_threads(1) for a plan made before."""
    split = 2 if IMPLEMENTATION == "native" else 1
    big = ft.asarray(np.ones(BIG, np.float32))
    small = ft.asarray(np.ones(BIG // 2, np.float32))
    ft.set_num_threads(2)
    assert ft.explain(ft.add, big, big).steps[-1].threads == split
    assert ft.explain(ft.add, small, small).steps[-1].threads == 1
    with ft.trace() as plans:
        ft.multiply(big, big)
    assert plans[-1].steps[-1].threads == split
    assert ("on 2 threads" in str(plans[-1])) == (split == 2)
    ft.set_num_threads(1)
    assert ft.explain(ft.add, big, big).steps[-1].threads == 1


@TWO_CORES
@pytest.mark.skipif(IMPLEMENTATION != "native", reason="the fast path serves native kernels only")
@pytest.mark.parametrize("dtype", [ft.float32, ft.float16])
def test_the_fast_path_splits_to_one_threads_bits(dtype: Any) -> None:
    """Operations through the compiled fast path (offset views) give one thread's bits."""
    fmt = FORMATS[FMT_OF[dtype.name]]
    a = ft.asarray(bits(fmt, BIG + 5, 4).view(fmt.np_dtype))[5:]
    b = ft.asarray(bits(fmt, BIG + 5, 5).view(fmt.np_dtype))[:-5]
    results = []
    for count in (1, 2):
        ft.set_num_threads(count)
        ft.multiply(a, b)  # plans it, so the next call is the fast path's
        results.append(np.asarray(ft.multiply(a, b)).view(np.uint8))
    assert np.array_equal(results[1], results[0]), differing(results[1], results[0])


@TWO_CORES
@pytest.mark.skipif(IMPLEMENTATION != "native", reason="the fast path serves native kernels only")
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_integer_powers_split_to_one_threads_bits(dtype: str) -> None:
    """x ** 3 through the fast path (the compiled PowI body) on two threads, at an offset, gives
    one thread's bits; each planning call's result is kept alive, so no block holding a result
    is handed to the next call's output."""
    fmt = FORMATS[FMT_OF[dtype]]
    x = ft.asarray(bits(fmt, BIG + 3, 6).view(fmt.np_dtype))[3:]
    ft.set_num_threads(2)
    assert split(x.size, "powi", dtype) == 2
    results, planned = [], []
    for count in (2, 1):
        ft.set_num_threads(count)
        planned.append(x**3)  # plans it, so the next call is the fast path's
        results.append(np.asarray(x**3).view(np.uint8))
    assert np.array_equal(results[0], results[1]), differing(results[0], results[1])


def test_only_the_compiled_bodies_split() -> None:
    """The pure-NumPy thunks run on one thread at any size; the compiled bodies (the integer
    powers' among them, which the fast path runs) on every core past every threshold."""
    ft.set_num_threads(threads.MAX_THREADS)
    pure = cpu.thunks("pure")
    assert {threads.threads_for(fn, BIG) for fn in pure.values()} == {1}
    native = [fn for fn in cpu.thunks().values() if hasattr(fn, "__fueltensor_native__")]
    want = min(threads.cores(), threads.MAX_THREADS) if IMPLEMENTATION == "native" else 1
    assert {threads.threads_for(fn, BIG) for fn in native} <= {want}


@TWO_CORES
@pytest.mark.skipif(IMPLEMENTATION != "native", reason="only compiled bodies split")
def test_the_judge_times_one_thread_and_all_of_them() -> None:
    """The judge's cost audit records the threads its large call split over and the time on
    them beside the one-thread time, and shows both in its table."""
    ft.set_num_threads(2)
    (audit,) = ft.judge(kernels=["add_f32"]).rows
    assert audit.large_n >= _native.PARALLEL_FROM and audit.threads == 2
    assert audit.ns_per_element > 0 and audit.ns_per_element_all > 0
    ft.set_num_threads(1)
    report = ft.judge(kernels=["add_f32"])
    assert report.rows[0].threads == 1
    assert "all threads" in report.to_markdown() and "×1" in report.to_markdown()


def test_the_costlier_lanes_split_earlier() -> None:
    """pow and the exact remainder (a C library call per lane: pow, fmod) split before every
    other op on their dtype, and every op on the half types (widened and narrowed tile by tile)
    before the same op on f32: a lane of them costs more, so fewer elements repay a second
    thread. f32 and f64 split at the same output bytes."""
    table = _native.SPLIT_FROM
    libm = ("pow", "mod")
    for dtype in _native.DTYPES:
        assert table["mod"][dtype] == table["pow"][dtype]
        assert all(table["pow"][dtype] < table[op][dtype] for op in table if op not in libm)
    for op in _native.OPS:
        if op not in libm:
            assert max(table[op]["bfloat16"], table[op]["float16"]) < table[op]["float32"], op
            assert table[op]["float64"] * 8 == table[op]["float32"] * 4, f"{op}: not by bytes"


def test_set_parallel_from_splits_every_body_from_there_and_zero_restores_the_classes() -> None:
    """The threshold lowered to measure it (at least one 512-element block) holds for every op;
    0 puts back each op class's own; below 512 is refused and changes nothing."""
    ft.set_num_threads(2)
    cores = min(threads.cores(), 2)
    low = min(start for row in _native.SPLIT_FROM.values() for start in row.values())
    with pytest.raises(ValueError, match=r"at least 512 elements \(or 0.*, got 511"):
        _native.set_parallel_from(511)
    assert split(_native.PARALLEL_FROM - 1) == 1
    assert _native.set_parallel_from(low) == 0
    try:
        assert {split(low, op) for op in _native.SPLIT_FROM} == {cores}
        assert split(low - 1, "pow") == 1
    finally:
        assert _native.set_parallel_from(0) == low
    assert split(_native.SPLIT_FROM["add"]["float32"] - 1) == 1


THREADPOOLCTL_FIRST = """
import threadpoolctl, fueltensor as ft
from fueltensor.kernels._chassis import NATIVE
def ours():
    found = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "fueltensor"]
    assert [i["filepath"] for i in found] == [NATIVE.__file__], found
    return found[0]["num_threads"]
ft.set_num_threads(2)
seen = [ours()]
with threadpoolctl.threadpool_limits(limits=1):
    seen += [ours(), ft.get_num_threads(), NATIVE.threads({big}, 0, 0)]
with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
    seen.append(ft.get_num_threads())
with threadpoolctl.threadpool_limits(limits=1000):
    seen.append(ft.get_num_threads())
print(*seen, ft.get_num_threads(), NATIVE.threads({big}, 0, 0))
"""


def python_lines(code: str) -> list[str]:
    """The words a fresh interpreter running `code` prints (it must exit 0)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=OUTSIDE)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@TWO_CORES
def test_threadpoolctl_lists_and_limits_the_setting_when_imported_first() -> None:
    """Imported before fueltensor, threadpoolctl lists the compiled kernels' library with the
    setting, and `threadpool_limits` sets it (a BLAS-only limit leaves it; a limit past
    MAX_THREADS is MAX_THREADS) and puts it back."""
    pytest.importorskip("threadpoolctl", minversion="3.3")
    got = python_lines(THREADPOOLCTL_FIRST.format(big=BIG))
    assert got == ["2", "1", "1", "1", "2", str(threads.MAX_THREADS), "2", "2"]


def test_threadpoolctl_is_never_imported_for_fueltensor_and_registers_on_request() -> None:
    """`import fueltensor` alone does not import threadpoolctl; imported after fueltensor, it
    lists fueltensor once `fueltensor.engine.threadpool.register()` is called (once, however
    often)."""
    pytest.importorskip("threadpoolctl", minversion="3.3")
    got = python_lines(
        "import sys, fueltensor\n"
        "print('threadpoolctl' in sys.modules)\n"
        "import threadpoolctl\n"
        "def ours():\n"
        "    return [i for i in threadpoolctl.threadpool_info() if i['user_api'] == 'fueltensor']\n"
        "before = len(ours())\n"
        "from fueltensor.engine import threadpool\n"
        "print(before, threadpool.register(), threadpool.register(), len(ours()))\n"
    )
    assert got == ["False", "0", "True", "True", "1"]
