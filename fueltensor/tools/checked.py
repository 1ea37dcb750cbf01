"""Checked runs: a compiled kernel that is not fueltensor's own, run in a worker process so the
process that asks survives whatever it does, and every fault is named.

The worker (`checked_worker.py`, a script of the standard library alone, spawned with
`python -I -S`) loads the library from the private copy `load_library` loaded (the same bytes),
and calls the kernel on copies of the inputs fenced by guard pages: inputs on read-only pages,
`out` between zones of a known pattern, filled first with 0xA5 and, in a second call, 0x5A. What
it reports becomes a `Finding`, raised as `KernelFault` (a ContractViolation):

* a write past either end of `out` (a changed zone byte) or into an input (a SIGSEGV on its
  read-only pages; a second run on writable pages then says which input and which bytes);
* a crash or abort (the signal, and the tail of what the process printed);
* an output byte the two fills leave different (an element never written, or read);
* a hang (no answer within `timeout` seconds: the worker is killed);
* a kernel that ends the worker process itself.

Each finding names the kernel, its contract's file:line, the buffer, the byte offsets and the
inputs (names, dtypes, shapes and a digest; the values at the element for an output element).
The caller's arrays are only read. Python kernels cannot cross into the worker: the judge hands
them its own copies and compares their bytes after each call.
"""

from __future__ import annotations

import hashlib
import signal
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np

from fueltensor.core.errors import ContractViolation, KernelStatusError
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import execute, foreign
from fueltensor.engine.planner import Plan
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.tools import checked_worker as wire
from fueltensor.tools.checked_process import POOL, Died, Hung
from fueltensor.tools.timing import HARNESS, Timing, batch_size, rounds_for, time_one

TIMEOUT: Final = 60.0
"""Seconds a call may take before the kernel is declared hung (a judge's largest probe takes
milliseconds; the bound is for a kernel that never returns)."""
FILLS: Final = (0xA5, 0x5A)
"""The two patterns `out` is filled with before the two calls of a checked call."""


@dataclass(frozen=True)
class Finding:
    """One fault of a kernel in a checked run."""

    kind: str
    kernel: str
    source: str
    buffer: str | None
    offsets: tuple[int, int] | None
    inputs: str
    detail: str

    def __str__(self) -> str:
        where = ""
        if self.buffer is not None:
            where = f"; buffer {self.buffer}"
            if self.offsets is not None:
                where += f", bytes {self.offsets[0]}..{self.offsets[1]}"
        head = f"kernel {self.kernel} ({self.source}): {self.kind}: {self.detail}"
        return f"{head}{where}; inputs {self.inputs}"


class KernelFault(ContractViolation):
    """A checked run found a fault; `.finding` says which."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(str(finding))
        self.finding = finding


def applies(fn: object) -> bool:
    """Whether `fn` runs checked: a compiled kernel of a loaded library."""
    return isinstance(fn, CompiledKernel)


@dataclass(frozen=True)
class _Call:
    """One checked call's parts: the kernel, its contract, the inputs and the output's form."""

    kernel: KernelFn
    contract: KernelContract
    inputs: tuple[np.ndarray, ...]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype[Any]
    probe: str

    @property
    def key(self) -> str:
        """The worker's name for the kernel: its library's digest and its symbol."""
        kernel = cast(CompiledKernel, self.kernel)
        return f"{kernel.loaded.sha256}:{kernel.symbol}"

    @property
    def out_bytes(self) -> int:
        """The bytes of `out`."""
        return int(np.prod(self.out_shape, dtype=np.int64)) * self.out_dtype.itemsize

    def names(self) -> list[str]:
        """The buffers' names from the contract: its inputs', then its output's."""
        inputs = [s.name for s in self.contract.inputs][: len(self.inputs)]
        inputs += [f"input{i}" for i in range(len(inputs), len(self.inputs))]
        return [*inputs, self.contract.outputs[0].name]

    def described(self, element: int | None = None) -> str:
        """The inputs: name, dtype and shape, and the bytes' digest (or the values at
        `element` of the output, broadcast)."""
        parts = []
        for name, x in zip(self.names(), self.inputs, strict=False):
            text = f"{name} {x.dtype}{list(x.shape)}"
            if element is not None and x.size:
                wide = np.broadcast_to(x, self.out_shape).reshape(-1)
                text += f" = {wide[element].item()!r} at element {element}"
            else:
                text += f" sha256 {hashlib.sha256(x.tobytes()).hexdigest()[:12]}"
            parts.append(text)
        label = f" ({self.probe})" if self.probe else ""
        return ", ".join(parts) + label

    def finding(
        self, kind: str, detail: str, buffer: str | None = None, offsets: Any = None
    ) -> KernelFault:
        """A KernelFault naming this call."""
        source = self.contract.source
        span = None if offsets is None else (int(offsets[0]), int(offsets[1]))
        return KernelFault(
            Finding(
                kind,
                self.contract.name,
                f"{source.path}:{source.line}",
                buffer,
                span,
                self.described(),
                detail,
            )
        )


def _signal_name(code: int) -> str:
    """The name of the signal that ended a process with exit status `code` (negative)."""
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _ask(
    c: _Call, fill: int, writable: Sequence[bool], repeat: int, timeout: float
) -> tuple[dict[str, Any], bytes]:
    """One request to the worker (the library loaded there first; `writable`: which inputs are
    on writable pages); Died or Hung."""
    with POOL.lock:
        process = POOL.take()
        kernel = cast(CompiledKernel, c.kernel)
        key = c.key
        fault = _late(c)
        if fault is not None:
            raise fault
        try:
            if key not in process.loaded:
                load = {"op": "load", "key": key, "inputs": len(c.inputs)}
                load |= {"path": str(kernel.loaded.copy), "symbol": kernel.symbol}
                answer, _ = process.request(load, b"", timeout, 0)
                if "error" in answer:
                    raise c.finding("worker", f"the worker could not load it: {answer['error']}")
                process.loaded.add(key)
            header = {
                "op": "call",
                "key": key,
                "inputs": [x.nbytes for x in c.inputs],
                "out": c.out_bytes,
                "alignment": max(c.contract.caps.alignment_bytes, 1),
                "fill": fill,
                "writable": list(writable),
                "repeat": repeat,
            }
            payload = b"".join(np.ascontiguousarray(x).tobytes() for x in c.inputs)
            answer, out = process.request(header, payload, timeout, c.out_bytes)
            if answer.get("threads"):
                process.threaded.add(key)
        except (Died, Hung):
            POOL.drop()
            raise
        if "error" not in answer and not _well_formed(answer, len(c.inputs)):
            POOL.drop()
            raise c.finding("worker", "the worker's answer is malformed (written by the kernel?)")
    return answer, out


def _span(value: object) -> bool:
    """Whether `value` is None or a [first, last] pair of ints, as the worker reports bytes."""
    return value is None or (
        isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
    )


def _well_formed(answer: dict[str, Any], inputs: int) -> bool:
    """Whether a call's answer has the worker's fields and types (anything else was forged)."""
    spills, changed, controls = answer.get("spills"), answer.get("inputs"), answer.get("controls")
    zones = (
        [spills.get(k) for k in ("out", *map(str, range(inputs)))]
        if isinstance(spills, dict)
        else [None]
    )
    return (
        type(answer.get("status")) is int
        and type(answer.get("threads")) is int
        and type(answer.get("seconds")) in (int, float)
        and all(
            isinstance(z, dict) and all(_span(z.get(s)) for s in ("before", "after")) for z in zones
        )
        and isinstance(changed, list)
        and len(changed) == inputs
        and all(map(_span, changed))
        and isinstance(controls, list)
        and all(isinstance(x, str) for x in controls)
    )


def _spills(c: _Call, answer: dict[str, Any]) -> None:
    """Raise for a changed zone byte around any buffer, or a changed input byte."""
    names = c.names()
    spills = answer["spills"]
    for key, buffer in [("out", names[-1]), *((str(i), n) for i, n in enumerate(names[:-1]))]:
        for side in ("before", "after"):
            span = spills[key][side]
            if span is not None:
                where = "before its start" if side == "before" else "past its end"
                raise c.finding("overrun", f"wrote {where}", buffer, span)
    for name, span in zip(names, answer["inputs"], strict=False):
        if span is not None:
            raise c.finding("input write", "wrote into an input", name, span)


def _late(c: _Call) -> KernelFault | None:
    """The finding for a death of the worker after `c`'s kernel's last call returned (found
    before the next request, or in the next call when run again it did not repeat), once."""
    late = POOL.late.pop(c.key, None)
    if late is None:
        return None
    how = _how(Died(*late))
    detail = "after its call returned (a thread or process it left behind?), in the next request"
    return c.finding("crash", f"{how}, {detail}")


def late(kernel: KernelFn, contract: KernelContract) -> KernelFault | None:
    """The finding for a worker's death after a compiled kernel's last checked call returned,
    found in a later call or as the run finished (the judge adds it to the kernel's row), once."""
    if not applies(kernel):
        return None
    with POOL.lock:
        return _late(_Call(kernel, contract, (), (), np.dtype(np.uint8), "after its last call"))


def _how(died: Died) -> str:
    """What ended the worker: a signal, the kernel's exit, or the worker's own failure (its
    channel broken); and the last lines it printed."""
    code = died.code
    if code is not None and code < 0:
        how = f"the worker died of {_signal_name(code)}"
    elif code == wire.FAILED:
        how = "the worker failed after the call (the kernel broke its channel)"
    else:
        how = f"the kernel ended the worker process with exit status {code} (exit() or _exit())"
    return how + (f" (it printed: {died.said})" if died.said else "")


def _answer(c: _Call, fill: int, repeat: int, timeout: float) -> tuple[dict[str, Any], bytes]:
    """One request on read-only inputs and its answer, checked (zones, inputs, controls).
    A death is judged only from what repeats: the request runs again in a fresh worker; a second
    death is diagnosed (`_diagnosed`); a first one alone is the most recent other kernel's that
    ran in that worker, one that left a thread running first (kept in `POOL.late`: this
    answer stands), or, when no other kernel ran there, this kernel's "crashed once, not
    reproduced". A kernel found to kill its worker leaves none behind (the runs again may
    have left its damage in a fresh one)."""
    readonly = [False] * len(c.inputs)
    try:
        try:
            answer, out = _ask(c, fill, readonly, repeat, timeout)
        except Died as died:
            try:
                answer, out = _ask(c, fill, readonly, repeat, timeout)
            except Died as again:
                fault = _diagnosed(c, again, fill, timeout)
                finish()
                raise fault from None
            others = [k for k in died.ran if k != c.key]
            if not others:
                finish()
                detail = "crashed once, not reproduced (run again in a fresh worker, it ran)"
                raise c.finding("crash", f"{_how(died)}; {detail}") from None
            POOL.late[others[-1]] = (died.code, died.said)
    except Hung:
        raise c.finding("hang", f"no answer within {timeout:g} s; the worker was killed") from None
    if "error" in answer:
        raise c.finding("worker", f"the call failed in the worker: {answer['error']}")
    _spills(c, answer)
    if answer["controls"]:
        changed = "; ".join(answer["controls"])
        raise c.finding(
            "fp environment",
            f"left the floating-point controls changed ({changed}); the worker restored them",
        )
    return answer, out


def _checked_answer(c: _Call, fill: int, timeout: float) -> bytes:
    """`out`'s bytes from one call filled with `fill`; KernelFault for any fault."""
    answer, out = _answer(c, fill, 1, timeout)
    status = answer["status"]
    if status:
        source = c.contract.source
        raise KernelStatusError(
            f"kernel {c.contract.name} ({source.path}:{source.line}) failed with status "
            f"{status} in a checked run; inputs {c.described()}",
            status=status,
            symbol=cast(CompiledKernel, c.kernel).symbol,
        )
    if len(out) != c.out_bytes:
        raise c.finding("worker", f"the worker sent {len(out)} bytes of out, not {c.out_bytes}")
    return out


_FAULTS: Final = (-signal.SIGSEGV, -signal.SIGBUS)
"""The deaths of a memory access, which runs on writable inputs can place."""


def _diagnosed(c: _Call, died: Died, fill: int, timeout: float) -> KernelFault:
    """The finding for a worker that died twice on the same call: an exit (the kernel ended
    the process), or the signal, what it printed, and, for a memory access, what runs with
    writable inputs show (all of them: the bytes it wrote; one at a time: which input it wrote
    when it wrote back the bytes an input held)."""
    how = _how(died)
    if died.code is not None and died.code >= 0 and died.code != wire.FAILED:
        return c.finding("exit", f"{how}, in both of two calls")
    if died.code not in _FAULTS:
        return c.finding("crash", f"{how}, in both of two calls")
    everything = [True] * len(c.inputs)
    try:
        answer, _ = _ask(c, fill, everything, 1, timeout)
    except (Died, Hung):
        detail = "with writable inputs it dies again: an access outside every buffer and its zones"
        return c.finding("crash", f"{how}; {detail}")
    if "error" in answer:
        return c.finding("crash", f"{how}; with writable inputs it failed: {answer['error']}")
    try:
        _spills(c, answer)
    except KernelFault as fault:
        f = fault.finding
        detail = f"{how}, inputs on read-only pages; with writable inputs it {f.detail}"
        return c.finding("crash", detail, f.buffer, f.offsets)
    for i, name in enumerate(c.names()[:-1]):
        try:
            _ask(c, fill, [k == i for k in range(len(c.inputs))], 1, timeout)
        except (Died, Hung):
            continue
        detail = f"{how}, inputs on read-only pages; it wrote into an input (the bytes it held)"
        return c.finding("crash", detail, name)
    return c.finding("crash", f"{how}; with writable inputs it ran without a fault")


def call(
    kernel: CompiledKernel,
    contract: KernelContract,
    inputs: Sequence[np.ndarray],
    out_shape: tuple[int, ...],
    out_dtype: np.dtype[Any],
    probe: str = "",
    timeout: float = TIMEOUT,
) -> np.ndarray:
    """The kernel's output for `inputs`, from two checked calls with `out` filled with each of
    FILLS; KernelFault for any fault, or for output bytes the two fills leave different."""
    c = _Call(kernel, contract, tuple(inputs), tuple(out_shape), np.dtype(out_dtype), probe)
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


def _batch_seconds(c: _Call, calls: int, timeout: float) -> float:
    """Seconds per call of one batch of `calls` calls in the worker; KernelFault as `call`."""
    return float(_answer(c, FILLS[0], calls, timeout)[0]["seconds"])


def timing_of(
    kernel: CompiledKernel,
    contract: KernelContract,
    inputs: Sequence[np.ndarray],
    out_shape: tuple[int, ...],
    out_dtype: np.dtype[Any],
    timeout: float = TIMEOUT,
) -> Timing:
    """The kernel timed as `tools.timing` times every candidate (a warm-up batch, batches
    lasting `sample_seconds`, rounds within the budget, the median), in the worker on fenced
    buffers; KernelFault as `call`."""
    c = _Call(kernel, contract, tuple(inputs), tuple(out_shape), np.dtype(out_dtype), "timing")
    once = _batch_seconds(c, HARNESS.warmup, timeout)
    batch = batch_size(once)
    rounds = rounds_for(batch * once)
    samples = [_batch_seconds(c, batch, timeout) for _ in range(rounds)]
    return Timing(statistics.median(samples), batch * rounds, rounds, batch, HARNESS.warmup)


LINGER = 2.0
"""Seconds a worker where a call left a thread running is kept at the end of a run: closed at
once, it would end the thread, and a death the thread was about to cause would go unseen."""


def finish() -> None:
    """End the worker and its process group, so no process a kernel forked outlives the run:
    the judge and compare_backends call it as they return (the next checked call starts a
    fresh worker)."""
    with POOL.lock:
        POOL.settle(LINGER)
        POOL.drop()


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
    c = _Call(
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
    if not isinstance(fn, CompiledKernel):
        return _on_copies(plan, tensors)
    probe = f"{plan.op} in compare_backends"
    arrays = _prepared(plan, tensors)
    out = call(fn, contract, arrays, plan.out_shape, plan.out_dtype.np, probe)
    return FuelTensor._from_dense(out, plan.out_dtype)


def timing(plan: Plan, tensors: tuple[FuelTensor, ...]) -> Timing:
    """compare_backends' timing of such a plan, as `tools.timing` times the others: a compiled
    kernel in the worker (`timing_of`), a Python one on private copies."""
    fn, contract = plan.fn, plan.kernel
    assert fn is not None and contract is not None
    if isinstance(fn, CompiledKernel):
        arrays = _prepared(plan, tensors)
        return timing_of(fn, contract, arrays, plan.out_shape, plan.out_dtype.np)
    copies = tuple(FuelTensor._from_dense(np.array(t._array, order="C")) for t in tensors)
    with foreign.checking(None):
        return time_one(lambda: execute.run(plan, copies))
