"""The worker process of a checked run: it loads a compiled kernel library by its path and calls
its byte kernels on buffers fenced by guard pages, so the process that asked survives whatever
the kernel does. Run as a script by `fueltensor.tools.checked` (never imported by fueltensor,
and it imports no fueltensor package: only the standard library, and shaped_abi.py, which is
ctypes alone, run beside the kernel).

Every buffer is an anonymous mapping of its own: a PROT_NONE guard page at each end, and
between them the buffer with a zone of a known byte pattern on each side (at least one page
around `out`). Inputs sit as close to their upper guard page as 64-byte alignment allows and,
unless the request says otherwise, on read-only pages: a write into one is a SIGSEGV. `out`
starts at the requested alignment and is filled with the requested byte; after the call the
zones around every buffer are compared with the pattern and the changed byte ranges reported.

Messages both ways are `[u32 header length][JSON header][u64 payload length][payload]` on the
socket whose descriptor is argv[1]; nothing is pickled, so bytes a kernel writes on the socket
cannot run code in the asking process. A request is `load` (path, symbol, and `abi` 2 for a
`ShapedKernel`) or `call` (symbol, input lengths, out length, alignment, fill, which inputs are
writable, repeat, and for ABI v2 `shaped`: per operand its dtype code, shape, strides and the
offset of its element 0 in its bytes, out's dtype code, shape and dense strides, the op code,
the axes (a reduction's, else null) and parameters) with the inputs' bytes; a `call` reply
holds the status, the seconds per call of the `repeat` calls, the changed zone ranges and
changed input ranges, the floating-point controls the kernel left changed, the threads it left
running, and `out`'s bytes; for ABI v2 also the changed zone ranges around the (fenced) error
buffer and, after a nonzero status, the kernel's message (`said`). The ABI v2 arguments are
packed by fueltensor/kernels/shaped_abi.py (ctypes alone), which the worker loads by its path.

Every kernel call goes through `FpEnvironment.call`: the worker's floating-point environment
(MXCSR and the x87 control and status words) is set again after it, so a kernel that sets
flush-to-zero or a rounding mode changes no later kernel's result. A failure of the worker
itself (its channel broken) ends it with status FAILED, which no signal gives.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import json
import mmap
import os
import platform
import resource
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

PAGE = mmap.PAGESIZE
PATTERN = 0xA5
INPUT_ALIGNMENT = 64
MEMORY = 4 << 30
"""The address space the worker may take beyond what it holds at start: its buffers and room
for a kernel's own."""
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_LIBC.mprotect.restype = ctypes.c_int
_NONE, _READ, _READ_WRITE = 0, mmap.PROT_READ, mmap.PROT_READ | mmap.PROT_WRITE
FENV_BYTES = 1024
"""Room for a C `fenv_t` (opaque; 32 bytes on x86-64 glibc), allocated generously."""
_CONTROLS = (
    (("x87 control word", 0, 2, 0xFFFF), ("MXCSR", 28, 4, ~0x3F))
    if platform.machine() in ("x86_64", "AMD64")
    else ()
)
"""Where x86-64 glibc's fenv_t keeps the controls (name, offset, bytes, mask: MXCSR without its
six status flags); elsewhere none are compared, the environment is only restored."""
FAILED = 70
"""The worker's exit status when it fails itself (its channel broken), as sysexits' EX_SOFTWARE."""


def _protect(address: int, length: int, prot: int) -> None:
    """mprotect, or OSError."""
    if length and _LIBC.mprotect(address, length, prot) != 0:
        raise OSError(ctypes.get_errno(), f"mprotect({address:#x}, {length}) failed")


class FpEnvironment:
    """The floating-point environment every kernel call leaves behind: the worker's own at
    start (`fegetenv`'s whole fenv_t: MXCSR, the x87 control and status words), set again after
    each call whatever the kernel did to it."""

    def __init__(self) -> None:
        self.start = ctypes.create_string_buffer(FENV_BYTES)
        self.left = ctypes.create_string_buffer(FENV_BYTES)
        if _LIBC.fegetenv(self.start) != 0:
            raise OSError("fegetenv failed")

    def call(self, fn: Any, args: list[int], repeat: int) -> tuple[int, list[str]]:
        """The status of the last of `repeat` calls of `fn(*args)` (run back to back, as a
        timed batch), the environment restored after them; and each control they left changed,
        as "name 0xbefore -> 0xafter"."""
        status = 0
        try:
            for _ in range(repeat):
                status = fn(*args)
        finally:
            _LIBC.fegetenv(self.left)
            _LIBC.fesetenv(self.start)
        changed = []
        for name, at, size, mask in _CONTROLS:
            was, now = (
                int.from_bytes(b.raw[at : at + size], "little") & mask
                for b in (self.start, self.left)
            )
            if was != now:
                changed.append(f"{name} {was:#x} -> {now:#x}")
        return status, changed


class Fenced:
    """One buffer of `nbytes` between two zones of PATTERN and two guard pages."""

    def __init__(self, data: bytes | int, alignment: int, is_input: bool, fill: int) -> None:
        self.nbytes = data if isinstance(data, int) else len(data)
        zone = INPUT_ALIGNMENT if is_input else PAGE
        pages = -(-(self.nbytes + alignment + 2 * zone) // PAGE)
        self.map = mmap.mmap(-1, (pages + 2) * PAGE)
        self.view = (ctypes.c_char * len(self.map)).from_buffer(self.map)
        self.base = ctypes.addressof(self.view)
        low, high = PAGE, len(self.map) - PAGE
        if is_input:
            start = (high - self.nbytes) // INPUT_ALIGNMENT * INPUT_ALIGNMENT
        else:
            start = low + zone + (-(self.base + low + zone) % alignment)
        self.low, self.start, self.high = low, start, high
        self.map[low:high] = bytes([PATTERN]) * (high - low)
        self.map[start : start + self.nbytes] = (
            bytes([fill]) * self.nbytes if isinstance(data, int) else data
        )
        _protect(self.base, PAGE, _NONE)
        _protect(self.base + high, PAGE, _NONE)

    @property
    def address(self) -> int:
        """The buffer's first byte."""
        return self.base + self.start

    def seal(self) -> None:
        """Make the buffer and its zones read-only."""
        _protect(self.base + self.low, self.high - self.low, _READ)

    def contents(self) -> bytes:
        """The buffer's bytes now."""
        return self.map[self.start : self.start + self.nbytes]

    def spills(self) -> dict[str, list[int] | None]:
        """The changed bytes of each zone, as [first, last] byte offsets from the buffer's start
        (negative before it), or None where the zone is intact."""
        end = self.start + self.nbytes
        found: dict[str, list[int] | None] = {}
        for side, lo, hi in (("before", self.low, self.start), ("after", end, self.high)):
            changed = changed_range(bytes([PATTERN]) * (hi - lo), self.map[lo:hi])
            found[side] = None if changed is None else [lo + c - self.start for c in changed]
        return found

    def close(self) -> None:
        """Unmap the buffer."""
        _protect(self.base, len(self.map), _READ_WRITE)
        del self.view
        self.map.close()


def changed_range(before: bytes, after: bytes) -> list[int] | None:
    """[first, last] byte offsets where `after` differs from `before` (equal lengths), or
    None: compared a page at a time, then byte by byte inside the first and last pages found."""
    pages = range(0, len(before), PAGE)
    differ = [p for p in pages if before[p : p + PAGE] != after[p : p + PAGE]]
    if not differ:
        return None
    first, last = differ[0], differ[-1]
    lo = next(i for i in range(first, first + PAGE) if before[i] != after[i])
    top = min(last + PAGE, len(before))
    hi = next(i for i in range(top - 1, last - 1, -1) if before[i] != after[i])
    return [lo, hi]


class Worker:
    """The loaded symbols and the request loop."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel
        self.kernels: dict[str, Any] = {}
        self.environment = FpEnvironment()

    def load(self, header: dict[str, Any]) -> dict[str, Any]:
        """Load `path` and resolve `symbol` as a byte kernel (ABI v1), or as a `ShapedKernel`
        where the request says `abi` 2."""
        library = ctypes.CDLL(header["path"])
        if header.get("abi") == 2:
            fn = shaped_abi().PROTOTYPE((header["symbol"], library))
        else:
            fn = library[header["symbol"]]
            fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t) * (header["inputs"] + 1)
            fn.restype = ctypes.c_int32
        self.kernels[header["key"]] = fn
        return {"ok": True}

    def call(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        """Run the kernel `repeat` times on fenced copies of the inputs and a filled `out`."""
        fn = self.kernels[header["key"]]
        sizes: list[int] = header["inputs"]
        chunks, at = [], 0
        for n in sizes:
            chunks.append(payload[at : at + n])
            at += n
        inputs = [Fenced(c, INPUT_ALIGNMENT, True, 0) for c in chunks]
        for x, writable in zip(inputs, header["writable"], strict=True):
            if not writable:
                x.seal()
        out = Fenced(header["out"], header["alignment"], False, header["fill"])
        shaped = header.get("shaped")
        error = args = None
        if shaped is not None:  # ABI v2: the operands' layouts and the call's parameters
            error = Fenced(shaped_abi().ERROR_LEN + 1, 1, False, 0)  # and its NUL
            args = _shaped_arguments(shaped, inputs, out, error)
        threads = _threads()
        started = time.perf_counter()
        status, controls = self.environment.call(
            fn, list(args.call) if args else _byte_arguments(inputs, out), header["repeat"]
        )
        reply: dict[str, Any] = {
            "threads": len(_threads() - threads),
            "status": status,
            "seconds": (time.perf_counter() - started) / max(header["repeat"], 1),
            "controls": controls,
            "spills": {"out": out.spills(), **{str(i): x.spills() for i, x in enumerate(inputs)}},
            "inputs": [changed_range(c, x.contents()) for c, x in zip(chunks, inputs, strict=True)],
        }
        if error is not None:
            reply["spills"]["error"] = error.spills()
            reply["said"] = shaped_abi().message(error.contents()) if status else ""
        result = out.contents()
        for x in (*inputs, out, *([error] if error else [])):
            x.close()
        return reply, result

    def serve(self) -> None:
        """Answer requests until the asking process closes the socket."""
        while True:
            request = receive(self.channel)
            if request is None:
                return
            header, payload = request
            try:
                if header["op"] == "load":
                    send(self.channel, self.load(header), b"")
                else:
                    send(self.channel, *self.call(header, payload))
            except Exception as e:  # reported to the asking process, which words it
                send(self.channel, {"error": f"{type(e).__name__}: {e}"}, b"")


def _byte_arguments(inputs: list[Fenced], out: Fenced) -> list[int]:
    """An ABI v1 call's arguments: each input's address and bytes, then out's."""
    args: list[int] = []
    for x in (*inputs, out):
        args += [x.address, x.nbytes]
    return args


def _shaped_arguments(
    shaped: dict[str, Any], inputs: list[Fenced], out: Fenced, error: Fenced
) -> Any:
    """An ABI v2 call's arguments, packed by `shaped_abi.arguments` as fueltensor packs them:
    each operand of the request's shape and strides at its `offset` in its fenced buffer, out
    dense, the axes (a reduction's) and parameters, the fenced error buffer."""
    abi = shaped_abi()
    operands = [
        abi.Tensor(
            layout["dtype"], layout["shape"], layout["strides"], x.address + layout["offset"]
        )
        for layout, x in zip(shaped["inputs"], inputs, strict=True)
    ]
    out_arg = abi.Tensor(
        shaped["out_dtype"], shaped["out_shape"], shaped["out_strides"], out.address
    )
    params = [(name.encode(), kind, value) for name, kind, value in shaped["params"]]
    return abi.arguments(
        shaped["op"], operands, out_arg, shaped["axes"], params, ctypes.c_char_p(error.address)
    )


@functools.cache
def shaped_abi() -> Any:
    """fueltensor/kernels/shaped_abi.py (ctypes alone), loaded by its path: the worker
    imports nothing of fueltensor as a package."""
    path = Path(__file__).resolve().parents[1] / "kernels" / "shaped_abi.py"
    spec = importlib.util.spec_from_file_location("shaped_abi", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def exactly(channel: socket.socket, n: int) -> bytes | None:
    """`n` bytes from the socket, or None when it closes first."""
    parts, got = [], 0
    while got < n:
        part = channel.recv(min(n - got, 1 << 20))
        if not part:
            return None
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def receive(
    channel: socket.socket, max_header: int = 1 << 20, max_payload: int = 1 << 62
) -> tuple[dict[str, Any], bytes] | None:
    """One message, or None when the socket closes first; ValueError for a header or payload
    longer than allowed (the asking process bounds what the worker may send it)."""
    head = exactly(channel, 4)
    if head is None:
        return None
    size = struct.unpack("<I", head)[0]
    if size > max_header:
        raise ValueError(f"a header of {size} bytes, more than {max_header}")
    header = exactly(channel, size)
    length = exactly(channel, 8)
    if header is None or length is None:
        return None
    n = struct.unpack("<Q", length)[0]
    if n > max_payload:
        raise ValueError(f"a payload of {n} bytes, more than {max_payload}")
    payload = exactly(channel, n)
    decoded = json.loads(header)
    if payload is None or not isinstance(decoded, dict):
        return None
    return decoded, payload


def send(channel: socket.socket, header: dict[str, Any], payload: bytes) -> None:
    """One message."""
    text = json.dumps(header).encode()
    channel.sendall(struct.pack("<I", len(text)) + text + struct.pack("<Q", len(payload)))
    channel.sendall(payload)


def _threads() -> set[str]:
    """The ids of this process's threads (Linux's /proc/self/task; none where there is none):
    a kernel that leaves one running may act after its call returned."""
    try:
        return set(os.listdir("/proc/self/task"))
    except OSError:
        return set()


def _mapped() -> int:
    """The bytes of address space this process holds now (Linux's /proc/self/statm; 0 where
    there is none): a preloaded runtime such as ASan's reserves terabytes before any code runs."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _limit() -> None:
    """No core file from a crash (a kernel's crash is expected here, and a core file of a large
    process takes long to write), and at most MEMORY bytes of address space beyond what the
    worker holds at start, so a kernel that allocates without bound fails here rather than make
    the system kill another process."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    cap = _mapped() + MEMORY
    resource.setrlimit(
        resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard)
    )


if __name__ == "__main__":
    _limit()
    try:
        Worker(socket.socket(fileno=int(sys.argv[1]))).serve()
    except Exception as e:
        print(f"checked_worker: failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(FAILED)
