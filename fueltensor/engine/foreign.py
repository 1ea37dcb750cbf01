"""A normal (unchecked) call of a kernel fueltensor does not ship: what it protects.

A provider's kernel, Python or compiled, runs in this process, so nothing stops compiled code
from writing anywhere. What a normal call guarantees is that such a kernel can damage no memory
but what its caller could write anyway, and that the commonest slips are caught and named:

* memory fueltensor shares is never handed to it: a read-only input (the fast path's cached 0-d
  scalars, a broadcast or `read_only` view, any tensor over memory the caller cannot write)
  arrives as a private copy, and a Contiguize temporary is its own allocation, never the
  per-thread scratch buffer that later operations reuse;
* its inputs arrive as read-only arrays that do not own their memory (over a read-only buffer),
  so a Python kernel cannot set them writable again: a NumPy write raises, and the call raises
  ContractViolation naming the kernel and its document's line;
* `out` is its own NumPy allocation, never one of the allocator's kept blocks, with
  `GUARD_BYTES` of a known pattern on each side: a write just past either end is reported as a
  ContractViolation naming the side and the byte offsets, before any result is returned.

It cannot stop compiled code that writes a writable input (the caller's own tensor), writes far
past `out`, crashes, hangs or keeps a pointer for later: the judge's and compare_backends'
checked runs do that, in a separate process (inside `checking`, `execute.run` hands such a plan
to the checked runner instead). An array a kernel returns instead of writing `out` is copied,
so the kernel keeps no handle on the result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from fueltensor.core.errors import ContractViolation, KernelStatusError
from fueltensor.engine.planner import Plan
from fueltensor.kernels import KernelFn

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor

GUARD_BYTES = 256
"""Bytes of pattern on each side of a foreign kernel's `out`."""
_PATTERN = 0xA5
_GUARD = bytes([_PATTERN]) * (GUARD_BYTES + 4096)
"""The pattern, as long as a guard zone can be (GUARD_BYTES plus the largest alignment)."""
_WRITE_WORDS = ("read-only", "WRITEABLE")
"""What NumPy's refusals of a write through a read-only array say."""


Runner = Callable[[Plan, tuple["FuelTensor", ...]], "FuelTensor"]
"""A checked run of a plan on its operands (`tools.checked`), as `execute.run` would give."""
_RUNNER: ContextVar[Runner | None] = ContextVar("fueltensor_checked_runner", default=None)


@contextmanager
def checking(runner: Runner | None) -> Iterator[None]:
    """Inside the block, every plan whose kernel fueltensor did not ship runs through `runner`
    instead of a normal call (compare_backends: the default plan too runs checked); None: a
    normal call again (the checked runner's own call of a Python kernel)."""
    token = _RUNNER.set(runner)
    try:
        yield
    finally:
        _RUNNER.reset(token)


def runner() -> Runner | None:
    """The checked runner of the enclosing `checking` block, or None."""
    return _RUNNER.get()


@cache
def bundled() -> frozenset[KernelFn]:
    """The kernels fueltensor ships: the only ones trusted with shared memory and kept blocks."""
    from fueltensor.kernels import blas, cpu, reference

    shipped = (cpu.ENTRY_POINTS, blas.ENTRY_POINTS, reference.ENTRY_POINTS)
    return frozenset(fn for table in shipped for fn in table.values())


def private(array: np.ndarray) -> np.ndarray:
    """A copy of `array`'s elements laid out as it is: its memory order kept, and a stride-0
    axis still one (the copy holds the broadcast element once), so a kernel that refuses a
    layout refuses the copy too."""
    pairs = zip(array.shape, array.strides, strict=True)
    one = tuple(slice(0, 1) if s == 0 and n > 1 else slice(None) for n, s in pairs)
    compact = np.array(array[one], order="K", copy=True)
    return compact if compact.shape == array.shape else np.broadcast_to(compact, array.shape)


def sealed(array: np.ndarray) -> np.ndarray:
    """A read-only view of `array` over a read-only buffer, which no one can set writable;
    a read-only `array` (memory fueltensor may share) is a `private` copy first."""
    if not array.flags.writeable:
        array = private(array)
    if array.flags.c_contiguous:  # through bytes: the buffer protocol has no bfloat16
        raw = array.reshape(-1).view(np.uint8).data.toreadonly()
        return np.frombuffer(raw, array.dtype).reshape(array.shape)
    same = array.view(f"u{array.itemsize}") if array.itemsize in (1, 2, 4, 8) else array
    return np.asarray(same.data.toreadonly()).view(array.dtype)


@dataclass(frozen=True)
class Guarded:
    """A foreign kernel's `out`, and the allocation around it whose ends hold the pattern."""

    raw: np.ndarray
    start: int
    out: np.ndarray

    def overrun(self) -> tuple[int, tuple[int, int] | None] | None:
        """Where the kernel wrote outside `out`: how far before its start the first changed
        byte lies (0: none) and the first and last changed bytes past its end; None if none."""
        end = self.start + self.out.nbytes
        head, tail = self.raw[: self.start], self.raw[end:]
        if head.tobytes() == _GUARD[: head.size] and tail.tobytes() == _GUARD[: tail.size]:
            return None
        before = np.flatnonzero(head != _PATTERN)
        after = np.flatnonzero(tail != _PATTERN)
        return (
            int(self.start - before[0]) if before.size else 0,
            (int(after[0]), int(after[-1])) if after.size else None,
        )


def outside(plan: Plan, before: int, after: tuple[int, int] | None) -> ContractViolation:
    """The error for a write outside a foreign kernel's `out` (`before`: how far before its
    start the first one lies, 0: none; `after`: the first and last bytes past its end)."""
    assert plan.kernel is not None
    source = plan.kernel.source
    said = [f"{before} bytes before its start"] if before else []
    said += [f"bytes {after[0]}..{after[1]} past its end"] if after is not None else []
    return ContractViolation(
        f"kernel {plan.kernel.name} ({source.path}:{source.line}) wrote outside `out` "
        f"({plan.size * plan.out_dtype.itemsize} bytes): {' and '.join(said)}; nothing it "
        "returned is used"
    )


def overrun_error(plan: Plan, before: int, after_first: int, after_last: int) -> NoReturn:
    """Raise `outside`'s error: what the fast path's entry of a compiled provider's plan calls
    when its guard zones changed (after_first -1: none past the end)."""
    raise outside(plan, before, None if after_first < 0 else (after_first, after_last))


def guarded(plan: Plan) -> Guarded:
    """A fresh `out` of the plan's shape and dtype, aligned to its contract, in an allocation of
    its own with GUARD_BYTES of pattern on each side."""
    nbytes = plan.size * plan.out_dtype.itemsize
    raw = np.empty(GUARD_BYTES + plan.alignment + nbytes + GUARD_BYTES, np.uint8)
    address = raw.__array_interface__["data"][0] + GUARD_BYTES
    start = GUARD_BYTES + (-address % plan.alignment)
    raw[:start] = _PATTERN
    raw[start + nbytes :] = _PATTERN
    out = raw[start : start + nbytes].view(plan.out_dtype.np).reshape(plan.out_shape)
    return Guarded(raw, start, out)


def failed(plan: Plan, error: KernelStatusError) -> KernelStatusError:
    """A compiled kernel's nonzero status, said with its contract's name and document line."""
    assert plan.kernel is not None
    source = plan.kernel.source
    return KernelStatusError(
        f"kernel {plan.kernel.name} ({source.path}:{source.line}) failed with status "
        f"{error.status}: {error}; no output was produced",
        status=error.status,
        symbol=error.symbol,
    )


def call(plan: Plan, fn: KernelFn, arrays: tuple[np.ndarray, ...]) -> tuple[object, np.ndarray]:
    """Call a provider's kernel on sealed inputs and a guarded `out`: (what it returned, out).
    ContractViolation for a write into an input or outside out; KernelStatusError said with the
    contract's name and line."""
    assert plan.kernel is not None
    source = plan.kernel.source
    kernel = f"kernel {plan.kernel.name} ({source.path}:{source.line})"
    box = guarded(plan)
    run: Callable[..., object] = fn  # a provider's kernel may return its own array
    try:
        got = run(*map(sealed, arrays), *plan.params, out=box.out)
    except KernelStatusError as e:
        raise failed(plan, e) from None
    except ValueError as e:
        if not any(w in str(e) for w in _WRITE_WORDS):
            raise
        raise ContractViolation(
            f"{kernel} wrote into one of its inputs; kernels write only `out` ({e})"
        ) from e
    where = box.overrun()
    if where is not None:
        raise outside(plan, *where)
    return got, box.out
