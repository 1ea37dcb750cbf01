"""The requests of a checked run (`tools.checked`) and what their answers say: one call of a
compiled kernel in the worker (`checked_process.POOL`), the answer checked for its form, the
zones around every buffer, the inputs and the floating-point controls, and a worker that dies
or hangs diagnosed; each fault becomes a `Finding`, raised as `KernelFault`.
"""

from __future__ import annotations

import hashlib
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np

from fueltensor.core.errors import ContractViolation
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.kernels.shaped import ShapedCompiledKernel
from fueltensor.tools import checked_worker as wire
from fueltensor.tools.checked_process import POOL, Died, Hung


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


@dataclass(frozen=True)
class Call:
    """One checked call's parts: the kernel, its contract, the inputs and the output's form."""

    kernel: KernelFn
    contract: KernelContract
    inputs: tuple[np.ndarray, ...]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype[Any]
    probe: str
    params: tuple[Any, ...] = ()
    """The plan's parameters, passed after the inputs (an ABI v2 reduction's: its axes)."""

    @property
    def shaped(self) -> ShapedCompiledKernel | None:
        """The kernel when it is called through ABI v2, else None."""
        return self.kernel if isinstance(self.kernel, ShapedCompiledKernel) else None

    @property
    def compiled(self) -> CompiledKernel:
        """The loaded symbol the worker calls."""
        shaped = self.shaped
        return shaped.compiled if shaped is not None else cast(CompiledKernel, self.kernel)

    @property
    def key(self) -> str:
        """The worker's name for the kernel: its library's digest, its symbol, its ABI."""
        kernel = self.compiled
        return f"{kernel.loaded.sha256}:{kernel.symbol}" + (":abi2" if self.shaped else "")

    def form(self) -> tuple[dict[str, Any], bytes]:
        """The request's description of the inputs, and their bytes: each dense (ABI v1), or
        each operand's span with its layout, and the call's parameters (ABI v2,
        `shaped.request`)."""
        shaped = self.shaped
        if shaped is None:
            payload = b"".join(np.ascontiguousarray(x).tobytes() for x in self.inputs)
            return {"inputs": [x.nbytes for x in self.inputs]}, payload
        args = (*self.inputs, *self.params)
        form, spans = shaped.request(args, self.out_shape, self.out_dtype)
        return {"inputs": [len(s) for s in spans], "shaped": form}, b"".join(spans)

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
            if element is not None and x.size and self.shaped is None:
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
    c: Call, fill: int, writable: Sequence[bool], repeat: int, timeout: float
) -> tuple[dict[str, Any], bytes]:
    """One request to the worker (the library loaded there first; `writable`: which inputs are
    on writable pages); Died or Hung."""
    with POOL.lock:
        process = POOL.take()
        kernel = c.compiled
        key = c.key
        fault = late(c)
        if fault is not None:
            raise fault
        try:
            if key not in process.loaded:
                load = {"op": "load", "key": key, "inputs": len(c.inputs)}
                load |= {"path": str(kernel.loaded.copy), "symbol": kernel.symbol}
                load |= {"abi": 2} if c.shaped else {}
                answer, _ = process.request(load, b"", timeout, 0)
                if "error" in answer:
                    raise c.finding("worker", f"the worker could not load it: {answer['error']}")
                process.loaded.add(key)
            form, payload = c.form()
            header = form | {
                "op": "call",
                "key": key,
                "out": c.out_bytes,
                "alignment": max(c.contract.caps.alignment_bytes, 1),
                "fill": fill,
                "writable": list(writable),
                "repeat": repeat,
            }
            answer, out = process.request(header, payload, timeout, c.out_bytes)
            if answer.get("threads"):
                process.threaded.add(key)
        except (Died, Hung):
            POOL.drop()
            raise
        if "error" not in answer and not _well_formed(c, answer):
            POOL.drop()
            raise c.finding("worker", "the worker's answer is malformed (written by the kernel?)")
    return answer, out


def _span(value: object) -> bool:
    """Whether `value` is None or a [first, last] pair of ints, as the worker reports bytes."""
    return value is None or (
        isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
    )


def _zones(c: Call) -> list[tuple[str, str]]:
    """The fenced buffers a call's answer reports zones of: (the worker's key, the name)."""
    names = c.names()
    error = [("error", "error")] if c.shaped else []  # ABI v2's error buffer
    return [("out", names[-1]), *((str(i), n) for i, n in enumerate(names[:-1])), *error]


def _well_formed(c: Call, answer: dict[str, Any]) -> bool:
    """Whether a call's answer has the worker's fields and types (anything else was forged)."""
    spills, changed, controls = answer.get("spills"), answer.get("inputs"), answer.get("controls")
    zones = [spills.get(k) for k, _ in _zones(c)] if isinstance(spills, dict) else [None]
    inputs = len(c.inputs)
    return (
        (c.shaped is None or type(answer.get("said")) is str)
        and type(answer.get("status")) is int
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


def _spills(c: Call, answer: dict[str, Any]) -> None:
    """Raise for a changed zone byte around any buffer, or a changed input byte."""
    names = c.names()
    spills = answer["spills"]
    for key, buffer in _zones(c):
        for side in ("before", "after"):
            span = spills[key][side]
            if span is not None:
                where = "before its start" if side == "before" else "past its end"
                raise c.finding("overrun", f"wrote {where}", buffer, span)
    for name, span in zip(names, answer["inputs"], strict=False):
        if span is not None:
            raise c.finding("input write", "wrote into an input", name, span)


def late(c: Call) -> KernelFault | None:
    """The finding for a death of the worker after `c`'s kernel's last call returned (found
    before the next request, or in the next call when run again it did not repeat), once."""
    late = POOL.late.pop(c.key, None)
    if late is None:
        return None
    how = _how(Died(*late))
    detail = "after its call returned (a thread or process it left behind?), in the next request"
    return c.finding("crash", f"{how}, {detail}")


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


def answer(c: Call, fill: int, repeat: int, timeout: float) -> tuple[dict[str, Any], bytes]:
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


_FAULTS: Final = (-signal.SIGSEGV, -signal.SIGBUS)
"""The deaths of a memory access, which runs on writable inputs can place."""


def _diagnosed(c: Call, died: Died, fill: int, timeout: float) -> KernelFault:
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
