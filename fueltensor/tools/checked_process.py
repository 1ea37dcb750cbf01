"""The worker process of checked runs, seen from the process that asks (`tools.checked`): its
start (`python -I -S checked_worker.py FD`, its output collected in a file), one request at a
time under a time bound, and its end, with the exit status and the last lines it printed. One
worker per process (`POOL`), started on first use and again after it dies, finished at exit.

The worker leads a process group of its own, and its end ends the whole group: a process a
kernel forked (and did not move to a group of its own) does not outlive it. A worker found
dead before a request died after the last call it answered: the death is kept in `Pool.late`
under the key of the kernel most likely to blame (`Process.suspects`: the last one called
that left a thread running, else the last one called), for the checked run to name it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any, Final

from fueltensor.tools import checked_worker as wire

WORKER: Final = Path(wire.__file__)


class Died(Exception):
    """The worker process ended during a request; `ran`: the kernels called in the same worker
    before it (`Process.suspects`)."""

    def __init__(self, code: int | None, said: str, ran: tuple[str, ...] = ()) -> None:
        super().__init__(code, said)
        self.code, self.said, self.ran = code, said, ran


class Hung(Exception):
    """The worker gave no answer in time (it has been killed)."""


class Process:
    """One worker process, its socket and the file that collects what it prints."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by finish)
        self.popen = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER), str(theirs.fileno())],
            # The kernel runs in a plain process, whatever runs the asking one: a sanitizer's
            # runtime preloaded there (.ci/sanitize) would turn the kernel's SIGSEGV into its
            # own report and an abort, which no longer says "a memory access".
            env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"},
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,  # a process group of its own, led by the worker
        )
        theirs.close()
        self.channel = ours
        self.loaded: set[str] = set()
        self.mark = 0
        self.ran: dict[str, None] = {}
        """The keys of the kernels called here, each once, the most recent last."""
        self.threaded: set[str] = set()
        """The keys of the kernels whose call left a thread running here."""
        self.finished: tuple[int | None, str] | None = None

    def request(
        self, header: dict[str, Any], payload: bytes, timeout: float, most: int
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request and take its answer (at most `most` payload bytes); Hung or Died
        (the process is then finished)."""
        self.mark = self.log.seek(0, 2)
        self.channel.settimeout(timeout)
        ran = self.suspects()
        if header["op"] == "call":
            self.ran.pop(header["key"], None)
            self.ran[header["key"]] = None
        try:
            wire.send(self.channel, header, payload)
            answer = wire.receive(self.channel, max_payload=most)
        except TimeoutError:
            self.end_group()
            self.finish()
            raise Hung from None
        except (OSError, ValueError):
            answer = None
        if answer is None:
            raise Died(*self.finish(), ran)
        return answer

    def suspects(self) -> tuple[str, ...]:
        """The keys of the kernels called here, each once, the most recent last, but those that
        left a thread running after all others (the likelier cause of a later death)."""
        return tuple(sorted(self.ran, key=lambda k: k in self.threaded))  # a stable sort

    def end_group(self) -> None:
        """SIGKILL to the worker's process group: the worker and whatever it forked. Sent while
        the worker is not yet reaped, so its id still names this group and no other."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signal.SIGKILL)

    def exited(self, timeout: float) -> bool:
        """Whether the worker has ended (waiting up to `timeout` seconds), without reaping it."""
        waited, step = 0.0, 0.01
        while True:
            if self.popen.returncode is not None or os.waitid(
                os.P_PID, self.popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT
            ):
                return True
            if waited >= timeout:
                return False
            time.sleep(step)
            waited += step

    def finish(self) -> tuple[int | None, str]:
        """End the process (killed if it does not end by itself once its socket closes): its
        exit status and the last lines it printed during the last request."""
        if self.finished is not None:
            return self.finished
        self.channel.close()
        if self.popen.returncode is None:
            self.exited(5)
            self.end_group()
        code = self.popen.wait()
        self.log.seek(self.mark)
        lines = self.log.read()[-2000:].decode(errors="replace").strip().splitlines()
        self.log.close()
        self.finished = code, " / ".join(lines[-4:])
        return self.finished


class Pool:
    """The worker of this process: started on first use, started again after it dies, finished
    when the process exits; `late` holds the deaths found before a request, by the key of the
    request that ran last (its exit status and what it printed)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: Process | None = None
        self.late: dict[str, tuple[int | None, str]] = {}
        atexit.register(self.drop)

    def settle(self, grace: float = 0.0) -> None:
        """Finish a worker found dead, its death kept in `late` under its last call's key; a
        worker where a call left a thread running is given `grace` seconds to die first."""
        process = self.process
        if process is not None and process.exited(grace if process.threaded else 0.0):
            self.drop()
            suspects = process.suspects()
            if suspects:
                self.late[suspects[-1]] = process.finish()

    def take(self) -> Process:
        """A live worker (one found dead is settled first)."""
        self.settle()
        if self.process is None:
            self.process = Process()
        return self.process

    def drop(self) -> None:
        """Finish the worker, if there is one (after it died or hung, or at exit)."""
        if self.process is not None:
            self.process.finish()
        self.process = None


POOL = Pool()
