"""All cores from mid sizes: how many threads the compiled kernels split a body over.

A compiled body over its op class's threshold (`SPLIT_FROM`, per op and dtype, from
`ext/src/abi.h`, set by measurement in benchmarks/run.py's "split" rows; every body splits from
`PARALLEL_FROM`) runs in parts on up to `setting()` threads, never more than the cores the
calling thread may run on (`os.sched_getaffinity`, read again every millisecond): a larger
setting is accepted and capped there, so one script serves machines of any size. The caller and
a pool of workers (started by the first split call, reused by later ones) claim the parts; a
short call that finds every worker asleep runs alone rather than wake one. Every op is lane by
lane, so the bits are one thread's; each part runs under the caller's floating-point
environment and the status flags the caller sees are one thread's too. The setting starts at
$FUELTENSOR_NUM_THREADS, else the process's cores. The pure-NumPy implementation
(FUELTENSOR_PURE_NUMPY=1) keeps the setting and runs on one thread. For tests only,
$FUELTENSOR_TEST_CORES (or `pretend_cores`) stands for the cores, so the split is tested as on a
machine of another size.
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import numpy as np

from fueltensor.core import settings
from fueltensor.kernels import KernelFn
from fueltensor.kernels._chassis import NATIVE

ENV_VAR: Final = "FUELTENSOR_NUM_THREADS"
TEST_CORES_VAR: Final = "FUELTENSOR_TEST_CORES"
"""For tests only: the core count `pretend_cores` takes at import (the suite run as on a machine
of that many cores)."""
MAX_THREADS: Final[int] = NATIVE.MAX_THREADS if NATIVE is not None else 64
"""The largest setting (the compiled kernels' own bound; the same where they are not built)."""
PARALLEL_FROM: Final[int | None] = NATIVE.PARALLEL_FROM if NATIVE is not None else None
"""Elements from which every compiled body splits (None: no compiled kernels here)."""
SPLIT_FROM: Final[dict[str, dict[str, int]]] = NATIVE.SPLIT_FROM if NATIVE is not None else {}
"""Per op name (and "powi") and dtype name, the elements from which its compiled body splits
(empty: no compiled kernels here)."""


_PRETEND: list[int] = [0]


def cores() -> int:
    """The cores this process may run on now (the count a test pretends, while it does)."""
    if _PRETEND[0]:
        return _PRETEND[0]
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def checked(n: object, source: str) -> int:
    """`n` as a thread count, or ValueError naming `source` and the accepted range."""
    try:  # an int or any integer that says so (np.int64), never a bool (np.bool_ too)
        count = None if isinstance(n, (bool, np.bool_)) else operator.index(n)  # type: ignore[arg-type]
    except TypeError:
        count = None
    if count is None or not 1 <= count <= MAX_THREADS:
        raise ValueError(
            f"{source} must be a thread count from 1 to {MAX_THREADS}, got {n!r} (a count above "
            f"the {cores()} core(s) this process may run on is accepted and capped to them)"
        )
    return count


def pretend_cores(n: int) -> int:
    """For tests only: split as if this process could run on `n` cores (1 to MAX_THREADS; 0: the
    affinity mask again), where the compiled kernels and `cores()` read it. Returns the previous
    pretence (0: none)."""
    if n != 0:
        checked(n, "pretend_cores(n)")
    previous, _PRETEND[0] = _PRETEND[0], n
    if NATIVE is not None:
        NATIVE.pretend_cores(n)
    return previous


def _initial() -> int:
    """The setting at import: $FUELTENSOR_NUM_THREADS when set, else every core."""
    chosen = settings.count(ENV_VAR, MAX_THREADS)
    return min(cores(), MAX_THREADS) if chosen is None else chosen


_TEST_CORES = settings.count(TEST_CORES_VAR, MAX_THREADS)
if _TEST_CORES is not None:
    pretend_cores(_TEST_CORES)
_SETTING: list[int] = [_initial()]


def setting() -> int:
    """The thread count large bodies may use (before the cap by cores)."""
    return _SETTING[0]


def apply(n: int) -> int:
    """Make `n` (checked already) the setting; returns the previous one."""
    previous, _SETTING[0] = _SETTING[0], n
    if NATIVE is not None:
        NATIVE.set_threads(n)
    return previous


@contextmanager
def running_on(n: int) -> Iterator[None]:
    """Run the compiled kernels on at most `n` threads inside the block (plans keep the count
    they recorded: for timing a kernel called directly, as the judge does)."""
    previous = NATIVE.set_threads(n) if NATIVE is not None else None
    try:
        yield
    finally:
        if NATIVE is not None and previous is not None:
            NATIVE.set_threads(previous)


def compiled_body(fn: KernelFn | None) -> str | None:
    """The instruction set of the compiled body kernel `fn` runs ("avx512", "avx2",
    "baseline"), or None for every kernel but the compiled fuel-cpu-backend bodies."""
    if NATIVE is None or getattr(fn, "__fueltensor_native__", None) is None:
        return None
    isa: str = NATIVE.isa()
    return isa


def threads_for(fn: KernelFn | None, count: int) -> int:
    """How many threads kernel `fn` runs on over `count` output elements now (one for every
    kernel but the compiled fuel-cpu-backend bodies)."""
    code = getattr(fn, "__fueltensor_native__", None)
    if NATIVE is None or code is None:
        return 1
    threads: int = NATIVE.threads(min(count, sys.maxsize), *code)  # a plan may outsize any buffer
    return threads


apply(_SETTING[0])
