"""Checked runs: a compiled kernel that is not fueltensor's own, run in a worker process so the
process that asks survives whatever it does, and every fault is named.

The worker (`checked_worker.py`, a script of the standard library alone, spawned with
`python -I -S`) loads the library from the private copy `load_library` loaded (the same bytes),
and calls the kernel (C ABI v1, or v2's `ShapedKernel` with x at its own strides, its axes and
parameters packed by `kernels.shaped_abi`, and a fenced error buffer) on copies of the inputs
fenced by guard pages: inputs on read-only pages, `out` between zones of a known pattern, filled
first with 0xA5 and, in a second call, 0x5A. What it reports becomes a `Finding`, raised as
`KernelFault` (a ContractViolation):

* a write past either end of `out` (a changed zone byte) or into an input (a SIGSEGV on its
  read-only pages; a second run on writable pages then says which input and which bytes);
* a crash or abort (the signal, and the tail of what the process printed);
* an output byte the two fills leave different (an element never written, or read);
* a hang (no answer within `timeout` seconds: the worker is killed);
* a kernel that ends the worker process itself.

Each finding names the kernel, its contract's file:line, the buffer, the byte offsets and the
inputs (names, dtypes, shapes and a digest; the values at the element for an output element).
The requests and what their answers say are `checked_request`'s; here is the public call.
The caller's arrays are only read. Python kernels cannot cross into the worker: the judge hands
them its own copies and compares their bytes after each call.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from fueltensor.core.errors import KernelStatusError
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import execute, foreign
from fueltensor.engine.planner import Plan
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.kernels.shaped import ShapedCompiledKernel
from fueltensor.tools import checked_request
from fueltensor.tools import checked_worker as wire
from fueltensor.tools.checked_process import POOL
from fueltensor.tools.checked_request import Call, Finding
from fueltensor.tools.checked_request import KernelFault as KernelFault  # the public API
from fueltensor.tools.checked_request import finish as finish  # the public API
from fueltensor.tools.timing import HARNESS, Timing, batch_size, rounds_for, time_one

TIMEOUT: Final = 60.0
"""Seconds a call may take before the kernel is declared hung (a judge's largest probe takes
milliseconds; the bound is for a kernel that never returns)."""
FILLS: Final = (0xA5, 0x5A)
"""The two patterns `out` is filled with before the two calls of a checked call."""


Compiled = CompiledKernel | ShapedCompiledKernel
"""A kernel that runs checked: a symbol of a loaded library, called through ABI v1 or v2."""


def applies(fn: object) -> bool:
    """Whether `fn` runs checked: a compiled kernel of a loaded library (either ABI)."""
    return isinstance(fn, (CompiledKernel, ShapedCompiledKernel))


def late(kernel: KernelFn, contract: KernelContract) -> KernelFault | None:
    """The finding for a worker's death after a compiled kernel's last checked call returned,
    found in a later call or as the run finished (the judge adds it to the kernel's row), once."""
    if not applies(kernel):
        return None
    with POOL.lock:
        return checked_request.late(
            Call(kernel, contract, (), (), np.dtype(np.uint8), "after its last call")
        )


def _checked_answer(c: Call, fill: int, timeout: float) -> bytes:
    """`out`'s bytes from one call filled with `fill`; KernelFault for any fault."""
    reply, out = checked_request.answer(c, fill, 1, timeout)
    status = reply["status"]
    if status:
        source = c.contract.source
        said = f" ({reply['said']})" if c.shaped else ""  # ABI v2: the kernel's message
        raise KernelStatusError(
            f"kernel {c.contract.name} ({source.path}:{source.line}) failed with status "
            f"{status}{said} in a checked run; inputs {c.described()}",
            status=status,
            symbol=c.compiled.symbol,
        )
    if len(out) != c.out_bytes:
        raise c.finding("worker", f"the worker sent {len(out)} bytes of out, not {c.out_bytes}")
    return out


def call(
    kernel: Compiled,
    contract: KernelContract,
    inputs: Sequence[np.ndarray],
    out_shape: tuple[int, ...],
    out_dtype: np.dtype[Any],
    probe: str = "",
    timeout: float = TIMEOUT,
    params: Sequence[Any] = (),
) -> np.ndarray:
    """The kernel's output for `inputs` (and the plan's `params`: an ABI v2 reduction's axes),
    from two checked calls with `out` filled with each of FILLS; KernelFault for any fault, or
    for output bytes the two fills leave different."""
    form = (tuple(inputs), tuple(out_shape), np.dtype(out_dtype), probe, tuple(params))
    c = Call(kernel, contract, *form)
    first, second = (_checked_answer(c, fill, timeout) for fill in FILLS)
    if first != second:
        span = wire.changed_range(first, second)
        assert span is not None
        element = span[0] // c.out_dtype.itemsize
        raise KernelFault(
            Finding(
                "unwritten",
                contract.name,
                f"{contract.source.path}:{contract.source.line}",
                c.names()[-1],
                (span[0], span[1]),
                c.described(element),
                f"out bytes depend on what out held before the call (element {element} "
                "was left unwritten or read)",
            )
        )
    result: np.ndarray = np.frombuffer(first, c.out_dtype).reshape(c.out_shape).copy()
    return result


def _batch_seconds(c: Call, calls: int, timeout: float) -> float:
    """Seconds per call of one batch of `calls` calls in the worker; KernelFault as `call`."""
    return float(checked_request.answer(c, FILLS[0], calls, timeout)[0]["seconds"])


def timing_of(
    kernel: Compiled,
    contract: KernelContract,
    inputs: Sequence[np.ndarray],
    out_shape: tuple[int, ...],
    out_dtype: np.dtype[Any],
    timeout: float = TIMEOUT,
    params: Sequence[Any] = (),
) -> Timing:
    """The kernel timed as `tools.timing` times every candidate (a warm-up batch, batches
    lasting `sample_seconds`, rounds within the budget, the median), in the worker on fenced
    buffers; KernelFault as `call`."""
    form = (tuple(inputs), tuple(out_shape), np.dtype(out_dtype), "timing", tuple(params))
    c = Call(kernel, contract, *form)
    once = _batch_seconds(c, HARNESS.warmup, timeout)
    batch = batch_size(once)
    rounds = rounds_for(batch * once)
    samples = [_batch_seconds(c, batch, timeout) for _ in range(rounds)]
    return Timing(statistics.median(samples), batch * rounds, rounds, batch, HARNESS.warmup)


def _prepared(plan: Plan, tensors: tuple[FuelTensor, ...]) -> list[np.ndarray]:
    """The buffers `execute.run` would hand the plan's kernel (fresh temporaries, never the
    scratch buffer)."""
    return [
        execute.prepare(t._array, steps, scratch=False) if steps else t._array
        for t, steps in zip(tensors, plan.prep, strict=True)
    ]


def _on_copies(plan: Plan, tensors: tuple[FuelTensor, ...]) -> FuelTensor:
    """A normal call of a Python kernel on private copies of `tensors`, whose bytes are then
    compared with the originals: KernelFault (`input write`) for a changed one."""
    fn, contract = plan.fn, plan.kernel
    assert fn is not None and contract is not None
    copies = tuple(FuelTensor._from_dense(np.array(t._array, order="C")) for t in tensors)
    with foreign.checking(None):  # a normal call, on the copies
        result = execute.run(plan, copies)
    c = Call(
        fn,
        contract,
        tuple(t._array for t in tensors),
        plan.out_shape,
        plan.out_dtype.np,
        f"{plan.op} in compare_backends",
    )
    for name, mine, theirs in zip(c.names(), copies, tensors, strict=False):
        span = wire.changed_range(theirs._array.tobytes(), mine._array.tobytes())
        if span is not None:
            raise c.finding("input write", "wrote into an input (a private copy)", name, span)
    return result


def output(plan: Plan, tensors: tuple[FuelTensor, ...]) -> FuelTensor:
    """compare_backends' run of a plan whose kernel fueltensor did not ship (the runner it
    installs with `foreign.checking`): a compiled kernel in the worker (`call`), a Python one
    on private copies compared after the call. KernelFault for any fault; `tensors` are only
    read."""
    fn, contract = plan.fn, plan.kernel
    assert fn is not None and contract is not None
    if not isinstance(fn, (CompiledKernel, ShapedCompiledKernel)):
        return _on_copies(plan, tensors)
    probe = f"{plan.op} in compare_backends"
    arrays = _prepared(plan, tensors)
    form = (arrays, plan.out_shape, plan.out_dtype.np, probe, TIMEOUT, plan.params)
    out = call(fn, contract, *form)
    return FuelTensor._from_dense(out, plan.out_dtype)


def timing(plan: Plan, tensors: tuple[FuelTensor, ...]) -> Timing:
    """compare_backends' timing of such a plan, as `tools.timing` times the others: a compiled
    kernel in the worker (`timing_of`), a Python one on private copies."""
    fn, contract = plan.fn, plan.kernel
    assert fn is not None and contract is not None
    if isinstance(fn, (CompiledKernel, ShapedCompiledKernel)):
        arrays = _prepared(plan, tensors)
        form = (arrays, plan.out_shape, plan.out_dtype.np, TIMEOUT, plan.params)
        return timing_of(fn, contract, *form)
    copies = tuple(FuelTensor._from_dense(np.array(t._array, order="C")) for t in tensors)
    with foreign.checking(None):
        return time_one(lambda: execute.run(plan, copies))
