"""The worker process of checked runs, seen from the process that asks (`tools.checked`): its
start (`python -I -S checked_worker.py FD`, its output collected in a file), one request at a
time under a time bound, and its end, with the exit status and the last lines it printed. One
worker per process (`POOL`), started on first use and again after it dies, finished at exit.
"""

from __future__ import annotations

import atexit
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any, Final

from fueltensor.tools import checked_worker as wire

WORKER: Final = Path(wire.__file__)


class Died(Exception):
    """The worker process ended during a request."""

    def __init__(self, code: int | None, said: str) -> None:
        super().__init__(code, said)
        self.code, self.said = code, said


class Hung(Exception):
    """The worker gave no answer in time (it has been killed)."""


class Process:
    """One worker process, its socket and the file that collects what it prints."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed by finish)
        self.popen = subprocess.Popen(
            [sys.executable, "-I", "-S", str(WORKER), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
        )
        theirs.close()
        self.channel = ours
        self.loaded: set[str] = set()
        self.mark = 0
        self.finished: tuple[int | None, str] | None = None

    def request(
        self, header: dict[str, Any], payload: bytes, timeout: float, most: int
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request and take its answer (at most `most` payload bytes); Hung or Died
        (the process is then finished)."""
        self.mark = self.log.seek(0, 2)
        self.channel.settimeout(timeout)
        try:
            wire.send(self.channel, header, payload)
            answer = wire.receive(self.channel, max_payload=most)
        except TimeoutError:
            self.popen.kill()
            self.finish()
            raise Hung from None
        except (OSError, ValueError):
            answer = None
        if answer is None:
            raise Died(*self.finish())
        return answer

    def finish(self) -> tuple[int | None, str]:
        """End the process (killed if it does not end by itself once its socket closes): its
        exit status and the last lines it printed during the last request."""
        if self.finished is not None:
            return self.finished
        self.channel.close()
        try:
            code = self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            code = self.popen.wait()
        self.log.seek(self.mark)
        lines = self.log.read()[-2000:].decode(errors="replace").strip().splitlines()
        self.log.close()
        self.finished = code, " / ".join(lines[-4:])
        return self.finished


class Pool:
    """The worker of this process: started on first use, started again after it dies, finished
    when the process exits."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process: Process | None = None
        atexit.register(self.drop)

    def take(self) -> Process:
        """A live worker."""
        if self.process is None or self.process.popen.poll() is not None:
            self.drop()
            self.process = Process()
        return self.process

    def drop(self) -> None:
        """Finish the worker, if there is one (after it died or hung, or at exit)."""
        if self.process is not None:
            self.process.finish()
        self.process = None


POOL = Pool()
